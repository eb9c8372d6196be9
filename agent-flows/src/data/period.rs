//! Quarters and periods of the data set: [`Quarter`] (`2008Q3`), [`Period`] (a closed range of
//! quarters), how the parser writes them in a `time_range` atom (`2008`, `2008Q3`, `1970s`)
//! and how answers say them in English and Russian.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::dataset::COVERAGE;
use crate::lang::Lang;

/// One quarter of one year.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Quarter {
    /// The year.
    pub year: i32,
    /// The quarter, 1 to 4.
    pub q: u8,
}

impl Quarter {
    /// The quarter `q` (1-4) of `year`.
    pub fn new(year: i32, q: u8) -> Option<Quarter> {
        (1..=4).contains(&q).then_some(Quarter { year, q })
    }

    /// A running number: consecutive quarters have consecutive indices (`year * 4 + q - 1`),
    /// the form queries compare.
    pub fn index(self) -> i64 {
        i64::from(self.year) * 4 + i64::from(self.q) - 1
    }

    /// The quarter with running number `index`.
    pub fn from_index(index: i64) -> Quarter {
        Quarter {
            year: i32::try_from(index.div_euclid(4)).unwrap_or(i32::MAX),
            q: u8::try_from(index.rem_euclid(4) + 1).unwrap_or(1),
        }
    }

    /// The first quarter of the data.
    pub fn first() -> Quarter {
        Quarter {
            year: COVERAGE.0.0 as i32,
            q: COVERAGE.0.1 as u8,
        }
    }

    /// The last quarter of the data.
    pub fn last() -> Quarter {
        Quarter {
            year: COVERAGE.1.0 as i32,
            q: COVERAGE.1.1 as u8,
        }
    }

    /// "2008 Q3" / "3 кв. 2008".
    pub fn label(self, lang: Lang) -> String {
        match lang {
            Lang::Ru => format!("{} кв. {}", self.q, self.year),
            _ => format!("{} Q{}", self.year, self.q),
        }
    }
}

impl fmt::Display for Quarter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}Q{}", self.year, self.q)
    }
}

impl From<Quarter> for String {
    fn from(q: Quarter) -> String {
        q.to_string()
    }
}

impl TryFrom<String> for Quarter {
    type Error = String;
    fn try_from(text: String) -> Result<Quarter, String> {
        match parse_bound(&text)? {
            (from, to) if from == to => Ok(from),
            _ => Err(format!("`{text}` is not one quarter (write it as 2008Q3)")),
        }
    }
}

/// A closed range of quarters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Period {
    /// The first quarter.
    pub from: Quarter,
    /// The last quarter (inclusive).
    pub to: Quarter,
}

impl Period {
    /// The whole data set.
    pub fn coverage() -> Period {
        Period {
            from: Quarter::first(),
            to: Quarter::last(),
        }
    }

    /// The four quarters of `year`.
    pub fn year(year: i32) -> Period {
        Period {
            from: Quarter { year, q: 1 },
            to: Quarter { year, q: 4 },
        }
    }

    /// Years `from` to `to`, inclusive.
    pub fn years(from: i32, to: i32) -> Period {
        Period {
            from: Quarter { year: from, q: 1 },
            to: Quarter { year: to, q: 4 },
        }
    }

    /// One quarter.
    pub fn quarter(q: Quarter) -> Period {
        Period { from: q, to: q }
    }

    /// How many quarters it spans.
    pub fn len(self) -> i64 {
        self.to.index() - self.from.index() + 1
    }

    /// Whether it spans no quarter (never for a period built here).
    pub fn is_empty(self) -> bool {
        self.len() <= 0
    }

    /// The part of it the data covers, if any.
    pub fn within_coverage(self) -> Option<Period> {
        let all = Period::coverage();
        let from = self.from.max(all.from);
        let to = self.to.min(all.to);
        (from <= to).then_some(Period { from, to })
    }

    /// Whether it is whole calendar years.
    fn whole_years(self) -> bool {
        self.from.q == 1 && self.to.q == 4
    }

    /// How answers say it: "in 2008", "from 2000 to 2008", "in the 1970s", "in 2008 Q3"...;
    /// the whole data set says so.
    pub fn describe(self, lang: Lang) -> String {
        let ru = lang == Lang::Ru;
        if self == Period::coverage() {
            let span = format!("{} – {}", self.from.label(lang), self.to.label(lang));
            return if ru {
                format!("за весь период данных ({span})")
            } else {
                format!("over the whole data set ({span})")
            };
        }
        if self.from == self.to {
            return if ru {
                format!("в {} г.", self.from.label(lang))
            } else {
                format!("in {}", self.from.label(lang))
            };
        }
        if self.whole_years() {
            let (a, b) = (self.from.year, self.to.year);
            if a == b {
                return if ru {
                    format!("в {a} г.")
                } else {
                    format!("in {a}")
                };
            }
            if a % 10 == 0 && b == a + 9 {
                return if ru {
                    format!("в {a}-е гг.")
                } else {
                    format!("in the {a}s")
                };
            }
            return if ru {
                format!("в {a}–{b} гг.")
            } else {
                format!("from {a} to {b}")
            };
        }
        if ru {
            let from = if self.from.q == 2 { "со" } else { "с" };
            format!(
                "{from} {} по {} г.",
                self.from.label(lang),
                self.to.label(lang)
            )
        } else {
            format!("from {} to {}", self.from.label(lang), self.to.label(lang))
        }
    }

    /// How the parser writes it in a `time_range` atom: years when it is whole years
    /// (`2008`), quarters otherwise (`2008Q3`).
    pub fn atom_bounds(self) -> (String, String) {
        if self.whole_years() {
            (self.from.year.to_string(), self.to.year.to_string())
        } else {
            (self.from.to_string(), self.to.to_string())
        }
    }
}

/// The quarters a bound of a `time_range` atom names: `2008` (its four quarters), `2008Q3`,
/// `2008-Q3`, `2008 Q3`, `Q3 2008` (that quarter), `1970s` (the decade). A range's `from`
/// takes the first, its `to` the last.
pub fn parse_bound(text: &str) -> Result<(Quarter, Quarter), String> {
    let cleaned: String = text
        .trim()
        .chars()
        .filter(|c| !c.is_whitespace() && *c != '-' && *c != '_')
        .collect::<String>()
        .to_ascii_uppercase();
    let bad = || {
        format!(
            "`{text}` is not a period; write a year (2008), a quarter (2008Q3) or a decade (1970s)"
        )
    };
    if cleaned.is_empty() || cleaned.len() > 12 {
        return Err(bad());
    }
    let year = |digits: &str| -> Result<i32, String> {
        if digits.len() == 4 && digits.chars().all(|c| c.is_ascii_digit()) {
            digits.parse().map_err(|_| bad())
        } else {
            Err(bad())
        }
    };
    if let Some(decade) = cleaned.strip_suffix('S') {
        let y = year(decade)?;
        if y % 10 != 0 {
            return Err(bad());
        }
        return Ok((Quarter { year: y, q: 1 }, Quarter { year: y + 9, q: 4 }));
    }
    let (y, q) = if let Some(rest) = cleaned.strip_prefix('Q') {
        // Q3 2008
        // The quarter is one ASCII digit; anything else there (`Qé`) is not a period.
        let (q, y) = rest.split_at_checked(1).ok_or_else(bad)?;
        (year(y)?, q)
    } else if let Some((y, q)) = cleaned.split_once('Q') {
        (year(y)?, q)
    } else {
        let y = year(&cleaned)?;
        return Ok((Quarter { year: y, q: 1 }, Quarter { year: y, q: 4 }));
    };
    let q: u8 = q.parse().map_err(|_| bad())?;
    let quarter = Quarter::new(y, q)
        .ok_or_else(|| format!("`{text}`: a year has quarters 1 to 4, not {q}"))?;
    Ok((quarter, quarter))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quarters_count_and_print() {
        let q = Quarter::new(2008, 3).unwrap();
        assert_eq!(q.to_string(), "2008Q3");
        assert_eq!(Quarter::from_index(q.index()), q);
        assert_eq!(
            Quarter::from_index(q.index() + 2),
            Quarter::new(2009, 1).unwrap()
        );
        assert_eq!(Quarter::new(2008, 5), None);
        assert_eq!(Period::coverage().len(), 203);
        assert_eq!(serde_json::to_value(q).unwrap(), "2008Q3");
        assert_eq!(
            serde_json::from_value::<Quarter>("2008q3".into()).unwrap(),
            q
        );
    }

    #[test]
    fn bounds_parse() {
        let q = |y, n| Quarter::new(y, n).unwrap();
        assert_eq!(parse_bound("2008"), Ok((q(2008, 1), q(2008, 4))));
        assert_eq!(parse_bound("2008Q3"), Ok((q(2008, 3), q(2008, 3))));
        assert_eq!(parse_bound(" 2008-q3 "), Ok((q(2008, 3), q(2008, 3))));
        assert_eq!(parse_bound("Q3 2008"), Ok((q(2008, 3), q(2008, 3))));
        assert_eq!(parse_bound("1970s"), Ok((q(1970, 1), q(1979, 4))));
        assert!(
            parse_bound("2008Q5")
                .unwrap_err()
                .contains("quarters 1 to 4")
        );
        for bad in [
            "",
            "yesterday",
            "1975s",
            "20081",
            "2008Q",
            "'; drop table x",
        ] {
            assert!(parse_bound(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn periods_are_said_in_both_languages() {
        let cases = [
            (Period::year(2008), "in 2008", "в 2008 г."),
            (
                Period::years(2000, 2008),
                "from 2000 to 2008",
                "в 2000–2008 гг.",
            ),
            (Period::years(1970, 1979), "in the 1970s", "в 1970-е гг."),
            (
                Period::quarter(Quarter::new(2008, 3).unwrap()),
                "in 2008 Q3",
                "в 3 кв. 2008 г.",
            ),
            (
                Period {
                    from: Quarter::new(2000, 2).unwrap(),
                    to: Quarter::new(2001, 1).unwrap(),
                },
                "from 2000 Q2 to 2001 Q1",
                "со 2 кв. 2000 по 1 кв. 2001 г.",
            ),
        ];
        for (period, en, ru) in cases {
            assert_eq!(period.describe(Lang::En), en);
            assert_eq!(period.describe(Lang::Ru), ru);
        }
        assert!(
            Period::coverage()
                .describe(Lang::En)
                .starts_with("over the whole data set (1959 Q1 – 2009 Q3)")
        );
        assert_eq!(
            Period::years(2005, 2015).within_coverage().unwrap().to,
            Quarter::last()
        );
        assert_eq!(Period::years(2010, 2015).within_coverage(), None);
    }
}
