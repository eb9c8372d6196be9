//! `datetime`: the current date and time in an IANA time zone (seed 000's tool).
//!
//! Zones come from the tz database bundled into the binary by jiff, so results do not depend on
//! the host's `/usr/share/zoneinfo` and daylight saving time is applied per the rules in
//! force at that instant. The clock is injectable ([`DateTime::with_clock`], [`DateTime::fixed`])
//! so flows that run on a graph's clock, and tests, are exact.

use std::sync::Arc;

use agent_core::{Clock, ManualClock};
use jiff::tz::TimeZone;
use jiff::{Timestamp, Zoned};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::error::ToolError;
use crate::tool::Tool;

/// The format of [`DateTimeOutput::local_time`] when none is asked for.
pub const DEFAULT_FORMAT: &str = "%Y-%m-%d %H:%M:%S";

/// The arguments of [`DateTime`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DateTimeArgs {
    /// IANA time zone name, such as `Asia/Tokyo`, `Europe/London` or `America/New_York`.
    #[serde(default = "utc")]
    pub timezone: String,
    /// Optional strftime format for `local_time`, such as `%H:%M` or `%A %d %B %Y`; default
    /// `%Y-%m-%d %H:%M:%S`.
    #[serde(default)]
    pub format: Option<String>,
}

fn utc() -> String {
    "UTC".to_owned()
}

/// What [`DateTime`] returns.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DateTimeOutput {
    /// The zone asked for.
    pub timezone: String,
    /// The local time, in the requested format.
    pub local_time: String,
    /// RFC 9557 timestamp with offset and zone, e.g. `2025-07-01T14:00:00+02:00[Europe/Madrid]`.
    pub iso8601: String,
    /// The offset from UTC in force, e.g. `+02:00`.
    pub utc_offset: String,
    /// The zone's abbreviation in force, e.g. `CEST` (some zones only have numeric ones).
    pub abbreviation: String,
    /// Whether daylight saving time is in force.
    pub is_dst: bool,
    /// The local day of the week, in English.
    pub weekday: String,
}

/// The `datetime` tool: the current time in a time zone.
#[derive(Debug, Clone, Default)]
pub struct DateTime {
    /// `None`: the system clock.
    clock: Option<Arc<dyn Clock>>,
}

impl DateTime {
    /// The tool on the system clock.
    pub fn new() -> Self {
        DateTime { clock: None }
    }

    /// The tool on `clock` (a graph's clock, so a flow and its tools agree on the time).
    pub fn with_clock(clock: Arc<dyn Clock>) -> Self {
        DateTime { clock: Some(clock) }
    }

    /// The tool on a clock stopped at `now` (tests, replays).
    pub fn fixed(now: Timestamp) -> Self {
        let clock = ManualClock::at_unix_seconds(now.as_second());
        clock.advance(std::time::Duration::from_nanos(
            u64::try_from(now.subsec_nanosecond()).unwrap_or_default(),
        ));
        DateTime::with_clock(Arc::new(clock))
    }

    /// The instant the tool reads.
    fn now(&self) -> Timestamp {
        match &self.clock {
            None => Timestamp::now(),
            Some(clock) => Timestamp::try_from(clock.now()).unwrap_or_else(|_| Timestamp::now()),
        }
    }

    /// The time in `timezone`, formatted with `format` (default [`DEFAULT_FORMAT`]).
    pub fn now_in(
        &self,
        timezone: &str,
        format: Option<&str>,
    ) -> Result<DateTimeOutput, ToolError> {
        let now = self.now();
        let tz = TimeZone::get(timezone).map_err(|error| ToolError::UnknownTimeZone {
            zone: timezone.to_owned(),
            message: error.to_string(),
        })?;
        let info = tz.to_offset_info(now);
        let abbreviation = info.abbreviation().to_owned();
        let is_dst = info.dst().is_dst();
        let zoned: Zoned = now.to_zoned(tz);
        let format = format.unwrap_or(DEFAULT_FORMAT);
        let local_time = jiff::fmt::strtime::format(format, &zoned).map_err(|error| {
            ToolError::InvalidFormat {
                format: format.to_owned(),
                message: error.to_string(),
            }
        })?;
        // These two formats are fixed and valid; should jiff ever reject them, the fields
        // degrade to empty strings rather than failing the call.
        let utc_offset = jiff::fmt::strtime::format("%:z", &zoned).unwrap_or_default();
        let weekday = jiff::fmt::strtime::format("%A", &zoned).unwrap_or_default();
        Ok(DateTimeOutput {
            timezone: timezone.to_owned(),
            local_time,
            iso8601: zoned.to_string(),
            utc_offset,
            abbreviation,
            is_dst,
            weekday,
        })
    }
}

impl Tool for DateTime {
    type Args = DateTimeArgs;
    type Output = DateTimeOutput;
    type Error = ToolError;

    fn name(&self) -> &str {
        "datetime"
    }

    fn description(&self) -> &str {
        "Gets the current date and time in an IANA time zone (daylight saving time included). \
         Returns the local time, the UTC offset, whether DST is in force and the weekday."
    }

    async fn call(&self, args: DateTimeArgs) -> Result<DateTimeOutput, ToolError> {
        self.now_in(&args.timezone, args.format.as_deref())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::tool::DynTool;

    fn at(rfc3339: &str) -> DateTime {
        DateTime::fixed(rfc3339.parse().unwrap())
    }

    #[test]
    fn summer_and_winter_in_madrid() {
        let summer = at("2025-07-01T12:00:00Z")
            .now_in("Europe/Madrid", None)
            .unwrap();
        assert_eq!(
            summer,
            DateTimeOutput {
                timezone: "Europe/Madrid".into(),
                local_time: "2025-07-01 14:00:00".into(),
                iso8601: "2025-07-01T14:00:00+02:00[Europe/Madrid]".into(),
                utc_offset: "+02:00".into(),
                abbreviation: "CEST".into(),
                is_dst: true,
                weekday: "Tuesday".into(),
            }
        );
        let winter = at("2025-01-15T12:00:00Z")
            .now_in("Europe/Madrid", None)
            .unwrap();
        assert_eq!(winter.local_time, "2025-01-15 13:00:00");
        assert_eq!(winter.utc_offset, "+01:00");
        assert_eq!(winter.abbreviation, "CET");
        assert!(!winter.is_dst);
    }

    #[test]
    fn dst_switch_in_new_york() {
        // 2025-03-09 02:00 local: clocks jump from EST (-05:00) to EDT (-04:00).
        let before = at("2025-03-09T06:59:59Z")
            .now_in("America/New_York", None)
            .unwrap();
        assert_eq!(before.local_time, "2025-03-09 01:59:59");
        assert_eq!(before.utc_offset, "-05:00");
        assert!(!before.is_dst);
        let after = at("2025-03-09T07:00:00Z")
            .now_in("America/New_York", None)
            .unwrap();
        assert_eq!(after.local_time, "2025-03-09 03:00:00");
        assert_eq!(after.utc_offset, "-04:00");
        assert_eq!(after.abbreviation, "EDT");
        assert!(after.is_dst);
    }

    #[test]
    fn tokyo_and_london_at_once() {
        let clock = at("2025-11-22T00:30:00Z");
        let tokyo = clock.now_in("Asia/Tokyo", Some("%H:%M")).unwrap();
        let london = clock.now_in("Europe/London", Some("%H:%M")).unwrap();
        assert_eq!(
            (tokyo.local_time.as_str(), tokyo.weekday.as_str()),
            ("09:30", "Saturday")
        );
        assert_eq!(
            (london.local_time.as_str(), london.abbreviation.as_str()),
            ("00:30", "GMT")
        );
    }

    #[tokio::test]
    async fn errors_name_the_problem() {
        let tool = at("2025-01-01T00:00:00Z");
        let error = DynTool::call(&tool, json!({"timezone": "Mars/Olympus_Mons"}))
            .await
            .unwrap_err();
        let text = error.to_string();
        assert!(
            text.starts_with("tool `datetime` failed: unknown time zone `Mars/Olympus_Mons`"),
            "{text}"
        );
        assert!(!error.is_transient());
        let error = DynTool::call(&tool, json!({"timezone": "UTC", "format": "%K"}))
            .await
            .unwrap_err();
        assert!(
            error.to_string().contains("invalid time format `%K`"),
            "{error}"
        );
    }

    #[tokio::test]
    async fn defaults_to_utc_through_json() {
        let out = DynTool::call(&at("2025-01-01T00:00:00Z"), json!({}))
            .await
            .unwrap();
        assert_eq!(out["timezone"], "UTC");
        assert_eq!(out["local_time"], "2025-01-01 00:00:00");
        assert_eq!(out["utc_offset"], "+00:00");
        let spec = DynTool::spec(&DateTime::new());
        assert_eq!(spec.parameters["properties"]["timezone"]["default"], "UTC");
        assert!(
            spec.parameters
                .get("required")
                .is_none_or(|r| r == &json!([])),
            "{}",
            spec.parameters
        );
    }

    #[test]
    fn system_clock_works() {
        let now = DateTime::new().now_in("UTC", Some("%Y")).unwrap();
        assert_eq!(now.local_time.len(), 4);
    }
}
