//! Scheduled runs (crons): parsing a schedule and telling when a cron fires next.
//!
//! A cron is kept as the document langgraph-api returns (`cron_id`, `schedule`, `timezone`,
//! `end_time`, `enabled`, `next_run_date`, the run `payload`...), and the store keeps its
//! next time as a number the scheduler claims by. A claim at *now* moves the next time to
//! the first tick after now: after downtime the missed ticks fire once, not once each.
//!
//! Schedules are the 5-field expressions croniter (LangGraph's parser) reads — minute,
//! hour, day of month, month, day of week; day of month and day of week match either, as in
//! Vixie cron — in UTC unless the cron names an IANA time zone.

use croner::Cron;
use croner::parser::{CronParser, Seconds, Year};
use jiff::Timestamp;
use jiff::tz::TimeZone;
use serde_json::Value;

use crate::time::{iso_ms, parse_ms};

/// A parsed schedule in its time zone.
#[derive(Debug, Clone)]
pub struct Schedule {
    cron: Cron,
    tz: TimeZone,
}

impl Schedule {
    /// Parses a 5-field `expr` (or an `@daily`-style nickname) in `timezone` (UTC when
    /// `None`); the error says what is wrong, for a 422.
    pub fn parse(expr: &str, timezone: Option<&str>) -> Result<Schedule, String> {
        let tz = match timezone {
            None | Some("UTC") => TimeZone::UTC,
            Some(name) => TimeZone::get(name).map_err(|_| {
                format!(
                    "Invalid timezone: '{name}'. Use IANA timezone format (e.g. 'America/New_York')."
                )
            })?,
        };
        let cron = CronParser::builder()
            .seconds(Seconds::Disallowed)
            .year(Year::Disallowed)
            .build()
            .parse(expr)
            .map_err(|e| {
                format!(
                    "Invalid cron schedule '{expr}': {e} (5 fields: minute hour day-of-month month day-of-week)"
                )
            })?;
        Ok(Schedule { cron, tz })
    }

    /// The first tick strictly after `ms` (milliseconds since the epoch).
    pub fn next_after(&self, ms: i64) -> Option<i64> {
        let at = Timestamp::from_millisecond(ms)
            .ok()?
            .to_zoned(self.tz.clone());
        self.cron
            .find_next_occurrence(&at, false)
            .ok()
            .map(|z| z.timestamp().as_millisecond())
    }
}

/// When the cron `doc` fires first after `after_ms`: `None` when it is disabled, its
/// schedule does not parse, or its next tick is past its `end_time`.
pub fn next_run(doc: &Value, after_ms: i64) -> Option<i64> {
    if doc["enabled"] == false {
        return None;
    }
    let schedule = Schedule::parse(doc["schedule"].as_str()?, doc["timezone"].as_str()).ok()?;
    let next = schedule.next_after(after_ms)?;
    match doc["end_time"].as_str().and_then(parse_ms) {
        Some(end) if next > end => None,
        _ => Some(next),
    }
}

/// A due cron claimed at `now_ms`: its document with `next_run_date` moved to the first
/// tick after now, and that time (`None`: it fires no more). Missed ticks are skipped.
pub fn advance(doc: &Value, now_ms: i64) -> (Value, Option<i64>) {
    let next = next_run(doc, now_ms);
    let mut moved = doc.clone();
    // An ended cron has no next run (as a PATCH that ends it says).
    moved["next_run_date"] = next.map_or(Value::Null, |n| iso_ms(n).into());
    (moved, next)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::*;
    use crate::store::{RunStore, SqliteStore};
    use crate::time::{Clock, ManualClock};

    fn at(text: &str) -> i64 {
        parse_ms(text).unwrap()
    }

    fn cron(id: &str, schedule: &str, end_time: Option<&str>) -> Value {
        json!({"cron_id": id, "thread_id": null, "schedule": schedule,
               "end_time": end_time, "enabled": true, "payload": {}})
    }

    #[test]
    fn next_times_follow_the_schedule_in_utc() {
        let every_15 = Schedule::parse("*/15 * * * *", None).unwrap();
        let from = at("2026-11-27T10:07:30Z");
        assert_eq!(
            every_15.next_after(from).map(iso_ms).unwrap(),
            "2026-11-27T10:15:00.000000+00:00"
        );
        // Strictly after: a tick exactly now is not next.
        assert_eq!(
            every_15.next_after(at("2026-11-27T10:15:00Z")).map(iso_ms),
            Some("2026-11-27T10:30:00.000000+00:00".to_owned())
        );
        let nine_weekdays = Schedule::parse("0 9 * * MON-FRI", None).unwrap();
        // 2026-11-27 is a Friday: next is Monday the 30th.
        assert_eq!(
            nine_weekdays
                .next_after(at("2026-11-27T09:00:00Z"))
                .map(iso_ms),
            Some("2026-11-30T09:00:00.000000+00:00".to_owned())
        );
        // Day of month OR day of week, as croniter and Vixie cron.
        let either = Schedule::parse("0 0 1 * MON", None).unwrap();
        assert_eq!(
            either.next_after(at("2026-11-27T00:00:00Z")).map(iso_ms),
            Some("2026-11-30T00:00:00.000000+00:00".to_owned())
        );
        let daily = Schedule::parse("@daily", None).unwrap();
        assert_eq!(
            daily.next_after(at("2026-11-27T10:00:00Z")).map(iso_ms),
            Some("2026-11-28T00:00:00.000000+00:00".to_owned())
        );
    }

    #[test]
    fn a_time_zone_moves_the_ticks() {
        let nine_ny = Schedule::parse("0 9 * * *", Some("America/New_York")).unwrap();
        // 09:00 in New York in November (EST, UTC-5) is 14:00 UTC.
        assert_eq!(
            nine_ny.next_after(at("2026-11-27T10:00:00Z")).map(iso_ms),
            Some("2026-11-27T14:00:00.000000+00:00".to_owned())
        );
        let e = Schedule::parse("0 9 * * *", Some("Mars/Olympus")).unwrap_err();
        assert!(e.contains("Invalid timezone: 'Mars/Olympus'"), "{e}");
    }

    #[test]
    fn bad_expressions_say_what_is_wrong() {
        for (expr, says) in [
            ("* * * *", "5 fields"),
            ("0 * * * * *", "5 fields"),
            ("61 * * * *", "Invalid cron schedule '61 * * * *'"),
            ("every day", "Invalid cron schedule"),
            ("", "Invalid cron schedule"),
        ] {
            let e = Schedule::parse(expr, None).unwrap_err();
            assert!(e.contains(says), "{expr:?}: {e}");
        }
    }

    #[test]
    fn end_time_and_enabled_stop_a_cron() {
        let now = at("2026-11-27T10:00:30Z");
        let open = cron("a", "* * * * *", None);
        assert_eq!(next_run(&open, now), Some(at("2026-11-27T10:01:00Z")));
        // A tick at end_time still fires; one after does not.
        let ends = cron("b", "* * * * *", Some("2026-11-27T10:01:00+00:00"));
        assert_eq!(next_run(&ends, now), Some(at("2026-11-27T10:01:00Z")));
        assert_eq!(next_run(&ends, at("2026-11-27T10:01:00Z")), None);
        // A naive end time (Python's isoformat() of a naive datetime) is UTC.
        let naive = cron("c", "* * * * *", Some("2026-11-27T10:00:45"));
        assert_eq!(next_run(&naive, now), None);
        let mut off = cron("d", "* * * * *", None);
        off["enabled"] = json!(false);
        assert_eq!(next_run(&off, now), None);
    }

    /// The store's claims with a clock moved by hand: a due cron fires once per claim,
    /// ticks missed while nothing claimed fire once, an ended or deleted cron never.
    /// The ids of the crons one claim at the clock's time fires.
    async fn claim(store: &SqliteStore, clock: &ManualClock) -> Vec<String> {
        let fired = store.claim_crons(clock.now_ms(), advance).await.unwrap();
        fired
            .iter()
            .map(|c| c["cron_id"].as_str().unwrap().to_owned())
            .collect()
    }

    async fn next_run_date(store: &SqliteStore, id: &str) -> Value {
        store.get_cron(id).await.unwrap().unwrap()["next_run_date"].clone()
    }

    #[tokio::test]
    async fn claims_fire_each_tick_once_and_missed_ticks_once() {
        let store = SqliteStore::in_memory().unwrap();
        let clock = Arc::new(ManualClock::new(at("2026-11-27T10:00:30Z")));
        for doc in [
            cron("every-minute", "* * * * *", Some("2026-11-27T10:10:00Z")),
            cron("ended", "* * * * *", Some("2026-11-27T09:00:00Z")),
        ] {
            store
                .put_cron(&doc, next_run(&doc, clock.now_ms()))
                .await
                .unwrap();
        }

        // Not due yet.
        assert!(claim(&store, &clock).await.is_empty());
        // 10:01:00 came: one claim takes it, a second claim at the same time finds nothing.
        clock.advance(std::time::Duration::from_secs(30));
        assert_eq!(claim(&store, &clock).await, ["every-minute"]);
        assert!(claim(&store, &clock).await.is_empty());
        assert_eq!(
            next_run_date(&store, "every-minute").await,
            "2026-11-27T10:02:00.000000+00:00"
        );

        // Down from 10:01 to 10:05:10: four ticks missed, one fire, next at 10:06.
        clock.set(at("2026-11-27T10:05:10Z"));
        assert_eq!(claim(&store, &clock).await, ["every-minute"]);
        assert!(claim(&store, &clock).await.is_empty());
        assert_eq!(
            next_run_date(&store, "every-minute").await,
            "2026-11-27T10:06:00.000000+00:00"
        );

        // Past its end time: the last tick (10:10) fires, then nothing more.
        clock.set(at("2026-11-27T10:10:00Z"));
        assert_eq!(claim(&store, &clock).await.len(), 1);
        clock.set(at("2026-11-27T12:00:00Z"));
        assert!(claim(&store, &clock).await.is_empty());

        // A deleted cron never fires.
        let hourly = cron("hourly", "0 * * * *", None);
        store
            .put_cron(&hourly, next_run(&hourly, clock.now_ms()))
            .await
            .unwrap();
        assert!(store.delete_cron("hourly").await.unwrap());
        assert!(!store.delete_cron("hourly").await.unwrap());
        clock.set(at("2026-11-27T15:00:00Z"));
        assert!(claim(&store, &clock).await.is_empty());
        assert_eq!(store.crons().await.unwrap().len(), 2);
    }
}
