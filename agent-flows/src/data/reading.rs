//! How the offline model reads a question, in English or Russian: a small grammar over the
//! tokens of [`tokens`](super::tokens) and the vocabulary of [`glossary`](super::glossary).
//!
//! [`read`] finds, in this order (each taking the tokens it uses, so a word means one thing):
//! relative periods (`last 5 years`, `за последние 10 лет`); comparisons (`above 8%`,
//! `выше 8 %`, `> 8`, `negative`); periods — quarters (`2008Q3`, `Q3 2008`, `third quarter of
//! 2008`, `в 3-м квартале 2008 года`), months (`March 2008`, `в марте 2008`), decades
//! (`the 1970s`, `'70s`, `70-е`, `семидесятые`), years, and ranges between them (`from .. to`,
//! `between .. and`, `с .. по`, `от .. до`, `1990-2000`, `since`, `after`, `before`, `после`,
//! `до`); measures, things the data set lacks and countries (longest phrase first); limits
//! (`top 5`, `5 highest`, `топ-5`, `5 самых`, `first 10`); then cue words for aggregation,
//! grouping, order, listing, counting, definitions and follow-ups. [`resolve`] fills what a
//! follow-up leaves out from the conversation's last data question; [`Reading::intent`],
//! [`Reading::steps`] and [`english`] turn a reading into the `intent` and `parser` answers.

use super::glossary::{COUNTRIES, Country, GLOSSARY, MISSING, Measure, Missing, Term};
use super::period::{Period, Quarter};
use super::query::{Aggregation, Atom, Comparison, Direction, FilterValue, Grouping, Intent, Step};
use super::tokens::{Hit, Token, find_all, match_at, span_text, tokenize};
use crate::lang::{self, Lang};

/// A measure the question names: one of the data set's, or one it does not have.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum MetricRef {
    /// A column of the data set.
    Known(Measure),
    /// An economic quantity the data set lacks.
    Missing(&'static Missing),
}

impl MetricRef {
    /// The name in a `metric` or `filter` atom: the column, or the English name.
    pub fn atom_name(self) -> String {
        match self {
            MetricRef::Known(m) => m.column().to_owned(),
            MetricRef::Missing(m) => m.en.to_owned(),
        }
    }

    /// The English name for `internal_query`.
    pub fn english(self) -> &'static str {
        match self {
            MetricRef::Known(m) => m.name(Lang::En),
            MetricRef::Missing(m) => m.en,
        }
    }
}

/// A period as the question wrote it: a real one, or one with a quarter that does not exist
/// (kept so the planner can say so).
#[derive(Clone, Debug, PartialEq)]
pub enum PeriodSpec {
    /// A period.
    Valid(Period),
    /// Bounds as written (`2008Q5`).
    Raw(String, String),
}

impl PeriodSpec {
    fn bounds(&self) -> (String, String) {
        match self {
            PeriodSpec::Valid(p) => p.atom_bounds(),
            PeriodSpec::Raw(a, b) => (a.clone(), b.clone()),
        }
    }
}

/// Something found at tokens `start..end`.
#[derive(Clone, Debug, PartialEq)]
pub struct Found<T> {
    /// First token (`usize::MAX` when taken from an earlier question).
    pub start: usize,
    /// One past the last token.
    pub end: usize,
    /// What it is.
    pub value: T,
}

/// A comparison found in the question.
#[derive(Clone, Debug, PartialEq)]
pub struct FilterSpec {
    /// The measure compared (the nearest one named), if any.
    pub column: Option<MetricRef>,
    /// How.
    pub op: Comparison,
    /// With what.
    pub value: FilterValue,
    /// Where the comparison word is.
    pub at: usize,
    /// Whether it compares the year (`year > 0`), not a measure.
    pub year: bool,
}

/// Everything the rules understood of one message.
#[derive(Clone, Debug, Default)]
pub struct Reading {
    /// The message's language (`ru` or `en`; anything else is answered in English).
    pub lang: Lang,
    /// Measures named, in order (filter columns included).
    pub metrics: Vec<Found<MetricRef>>,
    /// Periods named, in order.
    pub periods: Vec<Found<PeriodSpec>>,
    /// Comparisons.
    pub filters: Vec<FilterSpec>,
    /// What to compute, in the order asked.
    pub aggregations: Vec<Aggregation>,
    /// Grouping asked for.
    pub group: Option<Grouping>,
    /// Sorting asked for.
    pub order: Option<Direction>,
    /// How many rows.
    pub limit: Option<i64>,
    /// A listing was asked for (`show`, `by quarter`, `динамика`).
    pub series: bool,
    /// Countries other than the US.
    pub countries: Vec<&'static Country>,
    /// Glossary terms named (measures and general terms).
    pub terms: Vec<&'static Term>,
    /// A definition was asked for (`what is X`, `что такое X`).
    pub concept_cue: bool,
    /// The message is a question about amounts (`how much`, `what was`, `сколько`...).
    pub question: bool,
    /// The message continues the previous one (`and in 1990?`, `а инфляция?`).
    pub follow_up: bool,
    /// What the rules noticed, for `parser_thoughts`.
    pub notes: Vec<String>,
}

impl Reading {
    /// Whether the message asks for data shapes (a period, a computation, a filter...).
    pub fn structural(&self) -> bool {
        !self.periods.is_empty()
            || !self.aggregations.is_empty()
            || !self.filters.is_empty()
            || self.limit.is_some()
            || self.group.is_some()
            || self.order.is_some()
            || self.series
    }

    /// The seed's intent for this reading.
    pub fn intent(&self) -> Intent {
        let named = !self.metrics.is_empty() || !self.terms.is_empty();
        if self.concept_cue && !self.structural() && named {
            return Intent::Concept;
        }
        if !self.metrics.is_empty() {
            return Intent::Data;
        }
        if self.structural() && (self.question || !self.countries.is_empty()) {
            return Intent::Data;
        }
        if self.structural() && self.follow_up {
            return Intent::Data;
        }
        if self.concept_cue && named {
            return Intent::Concept;
        }
        Intent::Chitchat
    }

    /// The glossary term a concept question is about.
    pub fn concept_term(&self) -> Option<&'static Term> {
        self.terms.first().copied()
    }

    /// The measures asked about (not only compared): those not used as a filter's column,
    /// or the first one when every measure is a filter's.
    fn main_metrics(&self) -> Vec<&Found<MetricRef>> {
        let filtered = |m: &MetricRef| self.filters.iter().any(|f| f.column.as_ref() == Some(m));
        let main: Vec<&Found<MetricRef>> = self
            .metrics
            .iter()
            .filter(|m| !filtered(&m.value))
            .collect();
        if main.is_empty() {
            self.metrics.iter().take(1).collect()
        } else {
            main
        }
    }

    /// The parser's steps: one per measure and period asked (paired in order when the
    /// question alternates them, "GDP in 2008 and unemployment in 2009"), each with the
    /// question's filters, grouping, computation, order and limit.
    pub fn steps(&self) -> Vec<Step> {
        let main = self.main_metrics();
        let periods: Vec<Option<&Found<PeriodSpec>>> = if self.periods.is_empty() {
            vec![None]
        } else {
            self.periods.iter().map(Some).collect()
        };
        let mut distinct: Vec<MetricRef> = Vec::new();
        for m in &main {
            if !distinct.contains(&m.value) {
                distinct.push(m.value);
            }
        }
        let interleaved = main.len() == periods.len()
            && main.len() > 1
            && main
                .iter()
                .zip(&periods)
                .all(|(m, p)| p.is_some_and(|p| m.start == usize::MAX || m.start < p.start));
        let pairs: Vec<(Option<MetricRef>, Option<&Found<PeriodSpec>>)> = if interleaved {
            main.iter().map(|m| Some(m.value)).zip(periods).collect()
        } else if distinct.is_empty() {
            periods.into_iter().map(|p| (None, p)).collect()
        } else {
            distinct
                .iter()
                .flat_map(|m| periods.iter().map(move |p| (Some(*m), *p)))
                .collect()
        };
        pairs
            .into_iter()
            .take(super::query::MAX_STEPS)
            .map(|(metric, period)| self.step(metric, period.map(|p| &p.value)))
            .collect()
    }

    fn step(&self, metric: Option<MetricRef>, period: Option<&PeriodSpec>) -> Step {
        let mut atoms = Vec::new();
        if let Some(metric) = metric {
            atoms.push(Atom::Metric {
                name: metric.atom_name(),
            });
        }
        if let Some(period) = period {
            let (from, to) = period.bounds();
            atoms.push(Atom::TimeRange { from, to });
        }
        for filter in &self.filters {
            let column = match filter.column.or(metric) {
                _ if filter.year => "year".to_owned(),
                Some(c) => c.atom_name(),
                None => continue,
            };
            atoms.push(Atom::Filter {
                column,
                op: filter.op,
                value: filter.value.clone(),
            });
        }
        for country in &self.countries {
            atoms.push(Atom::Filter {
                column: "country".into(),
                op: Comparison::Eq,
                value: FilterValue::Text(country.en.to_owned()),
            });
        }
        let (aggregations, group, order) = self.computation(period);
        if let Some(by) = group {
            atoms.push(Atom::GroupBy { by });
        }
        for function in aggregations {
            atoms.push(Atom::Aggregate { function });
        }
        if let Some(direction) = order {
            atoms.push(Atom::Order { direction });
        }
        if let Some(count) = self.limit {
            atoms.push(Atom::Limit { count });
        }
        Step { atoms }
    }

    /// What to compute, with the defaults a user expects: a period with nothing else asked
    /// is averaged (one quarter is shown as is), no period at all means the latest value,
    /// a superlative with a grouping and a limit ranks the groups ("3 years with the
    /// highest inflation" = yearly averages, highest first).
    fn computation(
        &self,
        period: Option<&PeriodSpec>,
    ) -> (Vec<Aggregation>, Option<Grouping>, Option<Direction>) {
        let mut aggregations = self.aggregations.clone();
        let mut order = self.order;
        let group = self.group;
        if aggregations.contains(&Aggregation::Count) {
            aggregations = vec![Aggregation::Count];
        }
        if group.is_some() && self.limit.is_some() {
            let superlative = aggregations
                .iter()
                .find(|a| matches!(a, Aggregation::Max | Aggregation::Min))
                .copied();
            if let Some(superlative) = superlative {
                aggregations.retain(|a| !matches!(a, Aggregation::Max | Aggregation::Min));
                if order.is_none() {
                    order = Some(if superlative == Aggregation::Max {
                        Direction::Desc
                    } else {
                        Direction::Asc
                    });
                }
            }
        }
        let asked_shape = self.series || self.limit.is_some() || order.is_some();
        if aggregations.is_empty() {
            if group.is_some() {
                aggregations.push(Aggregation::Avg);
            } else if !asked_shape && self.filters.is_empty() {
                match period {
                    Some(PeriodSpec::Valid(p)) if p.len() == 1 => {}
                    Some(_) => aggregations.push(Aggregation::Avg),
                    None => aggregations.push(Aggregation::Last),
                }
            }
        }
        (aggregations, group, order)
    }

    /// How the question was read, for `parser_thoughts`.
    pub fn thoughts(&self) -> String {
        let mut out = self.notes.clone();
        let steps = self.steps();
        let defaults: Vec<&str> = steps
            .iter()
            .flat_map(|s| &s.atoms)
            .filter_map(|a| match a {
                Atom::Aggregate { function } if !self.aggregations.contains(function) => {
                    Some(function.name())
                }
                _ => None,
            })
            .collect();
        if let Some(first) = defaults.first() {
            out.push(match *first {
                "last" => "no period asked: the latest value".to_owned(),
                "avg" if self.group.is_some() && self.limit.is_some() => {
                    "groups ranked by their average".to_owned()
                }
                "avg" => "no computation asked: the average over the period".to_owned(),
                other => format!("computation {other} by default"),
            });
        }
        out.push(match steps.len() {
            1 => "1 step".to_owned(),
            n => format!("{n} steps"),
        });
        out.join("; ")
    }
}

/// Words after a year that say it is one (`2008 year`, `в 2008 году`, `2008 г.`).
const YEAR_WORDS: &[&str] = &[
    "year",
    "years",
    "yr",
    "год",
    "года",
    "году",
    "годом",
    "годе",
    "годы",
    "годов",
    "годах",
    "годам",
    "г",
    "гг",
];

/// Words for quarters.
const QUARTER_WORDS: &[&str] = &["quarter", "quarters", "qtr", "квартал*", "кв"];

/// Filler words a period or a comparison may have in front of its number.
const FILLER: &[&str] = &[
    "the",
    "a",
    "of",
    "in",
    "than",
    "level",
    "mark",
    "уровн*",
    "отметк*",
    "значени*",
    "чем",
];

/// Ordinals that name a quarter.
fn quarter_ordinal(tokens: &[Token], i: usize) -> Option<(u8, usize)> {
    let token = tokens.get(i)?;
    if let Some(n) = token.int() {
        let n = u8::try_from(n).ok()?;
        let mut end = i + 1;
        // 3rd, 3-й, 3-м, 3-го
        if tokens.get(end).is_some_and(|t| t.sym() == Some('-')) {
            end += 1;
        }
        if tokens.get(end).is_some_and(|t| {
            t.word().is_some_and(|w| {
                [
                    "st", "nd", "rd", "th", "й", "м", "го", "ий", "ем", "ом", "ого",
                ]
                .contains(&w)
            })
        }) {
            end += 1;
        } else if end > i + 1 {
            end -= 1;
        }
        return Some((n, end));
    }
    let word = token.word()?;
    let n = match word {
        "first" | "i" => 1,
        "second" | "ii" => 2,
        "third" | "iii" => 3,
        "fourth" | "iv" | "last" | "final" => 4,
        "fifth" | "v" => 5,
        w if w.starts_with("перв") => 1,
        w if w.starts_with("втор") => 2,
        w if w.starts_with("трет") => 3,
        w if w.starts_with("четверт") || w.starts_with("последн") => 4,
        w if w.starts_with("пят") => 5,
        _ => return None,
    };
    Some((n, i + 1))
}

/// A number written as a word (`five`, `пять`, `трёх`), up to twenty.
pub fn number_word(word: &str) -> Option<i64> {
    const EN: &[&str] = &[
        "zero",
        "one",
        "two",
        "three",
        "four",
        "five",
        "six",
        "seven",
        "eight",
        "nine",
        "ten",
        "eleven",
        "twelve",
        "thirteen",
        "fourteen",
        "fifteen",
        "sixteen",
        "seventeen",
        "eighteen",
        "nineteen",
        "twenty",
    ];
    if let Some(n) = EN.iter().position(|w| *w == word) {
        return Some(n as i64);
    }
    let n = match word {
        "один" | "одна" | "одно" | "одного" | "одной" | "одном" => 1,
        "два" | "две" | "двух" | "двум" => 2,
        "три" | "трех" | "трем" => 3,
        "четыре" | "четырех" | "четырем" => 4,
        "пять" | "пяти" => 5,
        "шесть" | "шести" => 6,
        "семь" | "семи" => 7,
        "восемь" | "восьми" => 8,
        "девять" | "девяти" => 9,
        "десять" | "десяти" => 10,
        "двенадцать" | "двенадцати" => 12,
        "пятнадцать" | "пятнадцати" => 15,
        "двадцать" | "двадцати" => 20,
        "dozen" | "дюжина" | "дюжину" => 12,
        _ => return None,
    };
    Some(n)
}

/// A count at `i`: digits or a number word.
fn count_at(tokens: &[Token], i: usize) -> Option<i64> {
    let token = tokens.get(i)?;
    if let Some(n) = token.int() {
        return Some(n);
    }
    if let Some(x) = token.num() {
        // Too long for an integer: saturate (the planner caps it).
        if x.is_infinite() || x > i64::MAX as f64 {
            return Some(i64::MAX);
        }
    }
    token.word().and_then(number_word)
}

/// What a unit word after a count means.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Unit {
    Quarters,
    Years,
    Decades,
}

fn unit_at(tokens: &[Token], i: usize) -> Option<Unit> {
    let word = tokens.get(i)?.word()?;
    if word.starts_with("quarter") || word.starts_with("квартал") {
        Some(Unit::Quarters)
    } else if word.starts_with("year") || word == "лет" || word.starts_with("год") {
        Some(Unit::Years)
    } else if word.starts_with("decade") || word.starts_with("десятилет") {
        Some(Unit::Decades)
    } else {
        None
    }
}

/// The reader's state over one message.
struct Reader {
    tokens: Vec<Token>,
    used: Vec<bool>,
    reading: Reading,
}

impl Reader {
    fn word(&self, i: usize) -> Option<&str> {
        if self.used.get(i).copied().unwrap_or(true) {
            return None;
        }
        self.tokens.get(i)?.word()
    }

    fn is_word(&self, i: usize, options: &[&str]) -> bool {
        self.word(i)
            .is_some_and(|w| options.iter().any(|o| super::tokens::word_matches(o, w)))
    }

    fn take(&mut self, start: usize, end: usize) {
        let end = end.min(self.used.len());
        self.used[start.min(end)..end]
            .iter_mut()
            .for_each(|u| *u = true);
    }

    fn free(&self, start: usize, end: usize) -> bool {
        end <= self.used.len() && self.used[start..end].iter().all(|u| !u)
    }

    /// Where `phrase` matches at `i` on free tokens.
    fn phrase_at(&self, i: usize, phrase: &str) -> Option<usize> {
        let end = match_at(&self.tokens, i, phrase)?;
        self.free(i, end).then_some(end)
    }

    /// The first free match of any of `phrases`: (start, end).
    fn find(&self, phrases: &[&str]) -> Option<(usize, usize)> {
        self.find_from(0, phrases)
    }

    /// The first free match of any of `phrases` at `from` or after. A phrase starts with a
    /// word or a number, so used tokens and symbols are skipped without trying each phrase.
    fn find_from(&self, from: usize, phrases: &[&str]) -> Option<(usize, usize)> {
        (from..self.tokens.len())
            .filter(|&i| !self.used[i] && self.tokens[i].sym().is_none())
            .find_map(|i| {
                phrases
                    .iter()
                    .filter_map(|p| self.phrase_at(i, p))
                    .max()
                    .map(|end| (i, end))
            })
    }

    /// Takes every free match of `phrases`; returns where they were. Taking tokens only
    /// removes matches, so the search goes on from the last match, not from the start (which
    /// made a question of many matches quadratic).
    fn take_all(&mut self, phrases: &[&str]) -> Vec<(usize, usize)> {
        let mut found = Vec::new();
        let mut from = 0;
        while let Some((start, end)) = self.find_from(from, phrases) {
            self.take(start, end);
            found.push((start, end));
            from = start;
        }
        found
    }

    fn note(&mut self, text: String) {
        self.reading.notes.push(text);
    }

    fn span(&self, start: usize, end: usize) -> String {
        span_text(&self.tokens, start, end)
    }
}

/// Reads one message; see the module docs.
pub fn read(text: &str) -> Reading {
    let tokens = tokenize(text);
    let mut reader = Reader {
        used: vec![false; tokens.len()],
        tokens,
        reading: Reading {
            lang: match lang::detect(text) {
                Lang::Ru => Lang::Ru,
                _ => Lang::En,
            },
            ..Reading::default()
        },
    };
    question(&mut reader);
    sql_noise(&mut reader);
    follow_up(&mut reader);
    relative_periods(&mut reader);
    comparisons(&mut reader);
    periods(&mut reader);
    vocabulary(&mut reader);
    attach_filters(&mut reader);
    limits(&mut reader);
    cues(&mut reader);
    reader.reading
}

/// Reads the last message of a conversation, filling what a follow-up leaves out from the
/// latest data question before it (`history`: earlier user messages, oldest first).
pub fn resolve(history: &[&str], message: &str) -> Reading {
    let mut context: Option<Reading> = None;
    for earlier in history {
        let reading = inherit(read(earlier), context.as_ref());
        if reading.intent() == Intent::Data && !reading.metrics.is_empty() {
            context = Some(reading);
        }
    }
    inherit(read(message), context.as_ref())
}

fn inherit(mut reading: Reading, context: Option<&Reading>) -> Reading {
    let Some(context) = context else {
        return reading;
    };
    let carried = |found: &[Found<MetricRef>]| -> Vec<Found<MetricRef>> {
        found
            .iter()
            .map(|m| Found {
                start: usize::MAX,
                end: usize::MAX,
                value: m.value,
            })
            .collect()
    };
    if reading.metrics.is_empty()
        && reading.countries.is_empty()
        && (reading.structural() || reading.follow_up)
        && !reading.concept_cue
    {
        reading.metrics = carried(&context.metrics);
        if reading.filters.is_empty() {
            reading.filters = context
                .filters
                .iter()
                .map(|f| FilterSpec {
                    at: usize::MAX,
                    ..f.clone()
                })
                .collect();
        }
        if reading.periods.is_empty() {
            reading.periods = context.periods.clone();
        }
        inherit_shape(&mut reading, context);
        let names: Vec<&str> = context.metrics.iter().map(|m| m.value.english()).collect();
        reading.notes.push(format!(
            "measure from the previous question: {}",
            names.join(", ")
        ));
    } else if reading.follow_up && reading.periods.is_empty() && !reading.metrics.is_empty() {
        reading.periods = context.periods.clone();
        inherit_shape(&mut reading, context);
        if !reading.periods.is_empty() {
            reading
                .notes
                .push("period from the previous question".to_owned());
        }
    }
    reading
}

fn inherit_shape(reading: &mut Reading, context: &Reading) {
    let shaped = !reading.aggregations.is_empty()
        || reading.group.is_some()
        || reading.series
        || reading.limit.is_some()
        || reading.order.is_some();
    if !shaped {
        reading.aggregations = context.aggregations.clone();
        reading.group = context.group;
        reading.series = context.series;
        reading.limit = context.limit;
        reading.order = context.order;
    }
}

/// SQL pasted into a question (`'; DROP TABLE macrodata; --`, `UNION SELECT`, `OR 1=1`) is
/// not part of it: its words are set aside, so `drop` is not read as a fall.
fn sql_noise(r: &mut Reader) {
    // SQL whatever comes before it.
    const ALWAYS: &[&str] = &[
        "drop table",
        "drop database",
        "drop view",
        "drop index",
        "delete from",
        "insert into",
        "union select",
        "union all select",
        "truncate table",
        "alter table",
        "create table",
        "attach database",
        "select from",
        "or 1",
        "and 1",
        "or true",
        "where 1",
    ];
    // SQL only right after a quote or a semicolon (`'; select ...`).
    const QUOTED: &[&str] = &[
        "select", "update", "delete", "exec", "execute", "sleep", "pragma",
    ];
    const SQL_WORDS: &[&str] = &[
        "table",
        "from",
        "where",
        "into",
        "values",
        "set",
        "all",
        "select",
        "null",
        "true",
        "false",
        "or",
        "and",
        "like",
        "union",
        "database",
        "macrodata",
        "sqlite",
        "master",
    ];
    let mut ignored = Vec::new();
    let mut i = 0;
    while i < r.tokens.len() {
        let after_quote = r.tokens[..i]
            .iter()
            .rev()
            .take(2)
            .any(|t| matches!(t.sym(), Some('\'' | ';' | '"')));
        let end = ALWAYS
            .iter()
            .chain(if after_quote { QUOTED } else { &[] })
            .filter_map(|p| r.phrase_at(i, p))
            .max();
        let Some(end) = end else {
            i += 1;
            continue;
        };
        let mut stop = end;
        // Its object (`drop table macrodata`) and what follows in SQL (`= 1`, `from x`).
        if r.tokens[end - 1]
            .word()
            .is_some_and(|w| matches!(w, "table" | "from" | "into" | "database" | "view" | "index"))
            && r.tokens.get(stop).and_then(Token::word).is_some()
        {
            stop += 1;
        }
        while stop < r.tokens.len() && stop < end + 8 {
            let t = &r.tokens[stop];
            let sqlish = t.sym().is_some_and(|c| c != ';' && c != '?' && c != '.')
                || t.num().is_some_and(|_| r.tokens[stop - 1].sym().is_some())
                || t.word().is_some_and(|w| SQL_WORDS.contains(&w));
            if !sqlish {
                break;
            }
            stop += 1;
        }
        ignored.push(r.span(i, stop));
        r.take(i, stop);
        i = stop;
    }
    if !ignored.is_empty() {
        r.note(format!("ignored SQL-like text «{}»", ignored.join("», «")));
    }
}

/// Whether the message asks about amounts (`how much`, `what was`, `сколько`, a `?`).
fn question(r: &mut Reader) {
    // Questions about amounts.
    const QUESTION: &[&str] = &[
        "how much",
        "how many",
        "how high",
        "how low",
        "how big",
        "what was",
        "what were",
        "what is the",
        "what s the",
        "what are the",
        "how did",
        "how has",
        "when",
        "which",
        "give",
        "tell",
        "compare",
        "сколько",
        "какой",
        "какая",
        "какое",
        "какие",
        "каким",
        "какой был",
        "какова",
        "каков*",
        "когда",
        "как",
        "сравни*",
        "дай",
        "скажи",
        "назови",
    ];
    r.reading.question = super::tokens::contains_any(&r.tokens, QUESTION)
        || r.tokens.iter().any(|t| t.sym() == Some('?'));
}

fn follow_up(r: &mut Reader) {
    const CUES: &[&str] = &[
        "and",
        "what about",
        "how about",
        "and what about",
        "same for",
        "also",
        "now",
        "а",
        "и",
        "а что",
        "а как",
        "как насчет",
        "то же",
        "тоже",
        "теперь",
        "а теперь",
        "также",
    ];
    if let Some(end) = CUES.iter().filter_map(|c| r.phrase_at(0, c)).max() {
        r.reading.follow_up = true;
        let text = r.span(0, end);
        r.take(0, end);
        r.note(format!("a follow-up («{text}»)"));
    }
}

/// `last 5 years`, `past 8 quarters`, `last decade`, `за последние 10 лет`.
fn relative_periods(r: &mut Reader) {
    let last = Quarter::last();
    for i in 0..r.tokens.len() {
        let lead = ["last", "past", "previous", "recent", "последн*", "прошл*"];
        if !r.is_word(i, &lead) {
            continue;
        }
        let (count, unit_at_i) = match count_at(&r.tokens, i + 1) {
            Some(n) if r.free(i + 1, i + 2) => (n, i + 2),
            _ => (1, i + 1),
        };
        let Some(unit) = unit_at(&r.tokens, unit_at_i).filter(|_| r.free(unit_at_i, unit_at_i + 1))
        else {
            continue;
        };
        // `the last quarter of 2008`, `в последнем квартале 2008 года`: a quarter, not a
        // relative period.
        if unit == Unit::Quarters && count_at(&r.tokens, i + 1).is_none() {
            let at = skip_joiners(r, unit_at_i + 1);
            if year_at(r, at).is_some() {
                continue;
            }
        }
        let count = count.clamp(1, 1000);
        let from = match unit {
            Unit::Quarters => Quarter::from_index(last.index() - count + 1),
            Unit::Years => Quarter {
                year: last.year - count as i32 + 1,
                q: 1,
            },
            Unit::Decades => Quarter {
                year: (last.year / 10 - count as i32 + 1) * 10,
                q: 1,
            },
        };
        let period = Period { from, to: last };
        let start = if i > 0 && r.is_word(i - 1, &["the", "за", "in", "over", "during", "в", "на"])
        {
            i - 1
        } else {
            i
        };
        let text = r.span(start, unit_at_i + 1);
        r.take(start, unit_at_i + 1);
        r.note(format!(
            "period {} ← «{text}» (counted back from the data's last quarter)",
            describe_bounds(&PeriodSpec::Valid(period))
        ));
        r.reading.periods.push(Found {
            start,
            end: unit_at_i + 1,
            value: PeriodSpec::Valid(period),
        });
    }
}

/// Comparison phrases and their operator.
const COMPARATORS: &[(&str, Comparison)] = &[
    ("above", Comparison::Gt),
    ("over", Comparison::Gt),
    ("more than", Comparison::Gt),
    ("greater than", Comparison::Gt),
    ("higher than", Comparison::Gt),
    ("bigger than", Comparison::Gt),
    ("larger than", Comparison::Gt),
    ("exceed*", Comparison::Gt),
    ("in excess of", Comparison::Gt),
    ("at least", Comparison::Ge),
    ("no less than", Comparison::Ge),
    ("not less than", Comparison::Ge),
    ("not below", Comparison::Ge),
    ("below", Comparison::Lt),
    ("under", Comparison::Lt),
    ("less than", Comparison::Lt),
    ("lower than", Comparison::Lt),
    ("smaller than", Comparison::Lt),
    ("at most", Comparison::Le),
    ("no more than", Comparison::Le),
    ("not more than", Comparison::Le),
    ("not above", Comparison::Le),
    ("equal to", Comparison::Eq),
    ("equals", Comparison::Eq),
    ("exactly", Comparison::Eq),
    ("выше", Comparison::Gt),
    ("больше", Comparison::Gt),
    ("более", Comparison::Gt),
    ("свыше", Comparison::Gt),
    ("превыш*", Comparison::Gt),
    ("превосход*", Comparison::Gt),
    ("не ниже", Comparison::Ge),
    ("не меньше", Comparison::Ge),
    ("не менее", Comparison::Ge),
    ("как минимум", Comparison::Ge),
    ("по крайней мере", Comparison::Ge),
    ("хотя бы", Comparison::Ge),
    ("ниже", Comparison::Lt),
    ("меньше", Comparison::Lt),
    ("менее", Comparison::Lt),
    ("не выше", Comparison::Le),
    ("не больше", Comparison::Le),
    ("не более", Comparison::Le),
    ("равн*", Comparison::Eq),
    ("ровно", Comparison::Eq),
];

fn comparisons(r: &mut Reader) {
    let mut i = 0;
    while i < r.tokens.len() {
        if r.used[i] {
            i += 1;
            continue;
        }
        // Symbols: >, >=, ≥, <, <=, ≤, =, !=, <>.
        let symbolic = symbol_comparison(&r.tokens, i);
        let worded = COMPARATORS
            .iter()
            .filter_map(|(phrase, op)| r.phrase_at(i, phrase).map(|end| (end, *op)))
            .max_by_key(|(end, _)| *end);
        let Some((after, op)) = symbolic.or(worded) else {
            // `negative`, `отрицательная`: below zero.
            if r.is_word(i, &["negative", "отрицательн*", "below zero", "ниже нуля"])
            {
                r.reading.filters.push(FilterSpec {
                    column: None,
                    op: Comparison::Lt,
                    value: FilterValue::Number(0.0),
                    at: i,
                    year: false,
                });
                let text = r.span(i, i + 1);
                r.take(i, i + 1);
                r.note(format!("filter < 0 ← «{text}»"));
            } else if r.is_word(i, &["positive", "положительн*"]) {
                r.reading.filters.push(FilterSpec {
                    column: None,
                    op: Comparison::Gt,
                    value: FilterValue::Number(0.0),
                    at: i,
                    year: false,
                });
                let text = r.span(i, i + 1);
                r.take(i, i + 1);
                r.note(format!("filter > 0 ← «{text}»"));
            }
            i += 1;
            continue;
        };
        let mut j = after;
        while r.is_word(j, FILLER) && !r.is_word(j, &["in", "в"]) {
            j += 1;
        }
        let negative = r
            .tokens
            .get(j)
            .and_then(Token::sym)
            .is_some_and(|c| matches!(c, '-' | '−'))
            && r.tokens.get(j + 1).is_some_and(|t| t.num().is_some());
        if negative {
            j += 1;
        }
        let number = r
            .tokens
            .get(j)
            .filter(|_| r.free(j, j + 1))
            .and_then(|t| {
                t.num()
                    .or_else(|| t.word().and_then(number_word).map(|n| n as f64))
            })
            .or_else(|| r.is_word(j, &["zero", "нул*", "ноль"]).then_some(0.0));
        match number {
            Some(value) => {
                // `over 2000-2005`, `больше 2000 года`: a period, not a value.
                let year = r.tokens[j].int().filter(|y| (1900..=2100).contains(y));
                let is_period = decade_at(r, j).is_some()
                    || (year.is_some()
                        && (r.is_word(j + 1, YEAR_WORDS)
                            || r.is_word(j + 1, &["to", "through", "по", "до"])
                            || r.tokens
                                .get(j + 1)
                                .and_then(Token::sym)
                                .is_some_and(|c| matches!(c, '-' | '–' | '—'))));
                if is_period {
                    i = j;
                    continue;
                }
                // `year > 2000`, `год больше 2000`: a period.
                if let Some(y) = year
                    && i > 0
                    && r.is_word(i - 1, &["year", "years", "год", "года", "годы"])
                {
                    let y = y as i32;
                    let (last, first) = (Quarter::last(), Quarter::first());
                    let period = match op {
                        Comparison::Gt => Some((y + 1, last.year)),
                        Comparison::Ge => Some((y, last.year)),
                        Comparison::Lt => Some((first.year, y - 1)),
                        Comparison::Le => Some((first.year, y)),
                        Comparison::Eq => Some((y, y)),
                        Comparison::Ne => None,
                    };
                    if let Some((a, b)) = period {
                        let spec = PeriodSpec::Valid(Period::years(a.min(b), b.max(a)));
                        let text = r.span(i - 1, j + 1);
                        r.take(i - 1, j + 1);
                        r.note(format!("period {} ← «{text}»", describe_bounds(&spec)));
                        r.reading.periods.push(Found {
                            start: i - 1,
                            end: j + 1,
                            value: spec,
                        });
                        i = j + 1;
                        continue;
                    }
                }
                let mut value = if negative { -value } else { value };
                let mut end = j + 1;
                // Units: %, percent, billion, trillion...
                loop {
                    if r.tokens
                        .get(end)
                        .and_then(Token::sym)
                        .is_some_and(|c| matches!(c, '%' | '$'))
                    {
                        end += 1;
                    } else if r.is_word(end, &["trillion*", "трлн", "триллион*", "tn"])
                    {
                        value *= 1000.0;
                        end += 1;
                    } else if r.is_word(
                        end,
                        &[
                            "percent*",
                            "per",
                            "cent",
                            "pct",
                            "процент*",
                            "пп",
                            "п",
                            "billion*",
                            "bn",
                            "млрд",
                            "миллиард*",
                            "million*",
                            "mn",
                            "млн",
                            "миллион*",
                            "dollar*",
                            "долл*",
                            "points",
                            "пункт*",
                        ],
                    ) {
                        end += 1;
                    } else {
                        break;
                    }
                }
                let year_column =
                    i > 0 && r.is_word(i - 1, &["year", "years", "год", "года", "годы"]);
                let (start, subject) = if year_column {
                    (i - 1, "year ")
                } else {
                    (i, "")
                };
                let text = r.span(start, end);
                r.take(start, end);
                r.note(format!(
                    "filter {subject}{} {} ← «{text}»",
                    op.sql(),
                    trim_number(value)
                ));
                r.reading.filters.push(FilterSpec {
                    column: None,
                    op,
                    value: FilterValue::Number(value),
                    at: i,
                    year: year_column,
                });
                i = end;
            }
            None if r.is_word(j, &["in", "в", "during", "во"])
                || (r.is_word(j, &["that", "то", "тот"])) =>
            {
                // "higher than in 1980": a comparison with another period's value.
                let mut end = j + 1;
                while end < r.tokens.len()
                    && end < j + 5
                    && r.tokens[end].sym().is_none_or(|c| c == '-')
                {
                    end += 1;
                }
                let text = r.span(j, end);
                r.take(i, end);
                r.note(format!("comparison with «{text}» (not a number)"));
                r.reading.filters.push(FilterSpec {
                    column: None,
                    op,
                    value: FilterValue::Text(text),
                    at: i,
                    year: false,
                });
                i = end;
            }
            None => i += 1,
        }
    }
}

fn symbol_comparison(tokens: &[Token], i: usize) -> Option<(usize, Comparison)> {
    let c = tokens.get(i)?.sym()?;
    let next = tokens.get(i + 1).filter(|t| t.glued).and_then(Token::sym);
    Some(match (c, next) {
        ('>', Some('=')) => (i + 2, Comparison::Ge),
        ('<', Some('=')) => (i + 2, Comparison::Le),
        ('<', Some('>')) | ('!', Some('=')) => (i + 2, Comparison::Ne),
        ('=', Some('=')) => (i + 2, Comparison::Eq),
        ('>', _) => (i + 1, Comparison::Gt),
        ('<', _) => (i + 1, Comparison::Lt),
        ('≥', _) => (i + 1, Comparison::Ge),
        ('≤', _) => (i + 1, Comparison::Le),
        ('≠', _) => (i + 1, Comparison::Ne),
        // `=` only right after a word (`unemp = 5`), not in `1=1`.
        ('=', _) if i > 0 && tokens[i - 1].word().is_some() => (i + 1, Comparison::Eq),
        _ => return None,
    })
}

/// A point in time the question names, before ranges are made of them.
#[derive(Clone, Copy, Debug)]
struct Point {
    start: usize,
    end: usize,
    /// (year, quarter) of the first and last quarter; a quarter may be out of 1..=4.
    first: (i32, u8),
    last: (i32, u8),
}

impl Point {
    fn spec(self, to: Point) -> PeriodSpec {
        match (
            Quarter::new(self.first.0, self.first.1),
            Quarter::new(to.last.0, to.last.1),
        ) {
            (Some(from), Some(to)) if from <= to => PeriodSpec::Valid(Period { from, to }),
            (Some(a), Some(b)) => PeriodSpec::Valid(Period { from: b, to: a }),
            _ => PeriodSpec::Raw(
                format!("{}Q{}", self.first.0, self.first.1),
                format!("{}Q{}", to.last.0, to.last.1),
            ),
        }
    }
}

/// A year at `i` (1900-2100, or any 3-4 digits followed by a year word), and the end of it
/// with its year word.
fn year_at(r: &Reader, i: usize) -> Option<(i32, usize)> {
    if !r.free(i, i + 1) {
        return None;
    }
    let token = r.tokens.get(i)?;
    let n = token.int()?;
    let raw_len = match &token.tok {
        super::tokens::Tok::Num(raw, _) => raw.len(),
        _ => 0,
    };
    let worded = r.is_word(i + 1, YEAR_WORDS);
    if !((1900..=2100).contains(&n) || (worded && (3..=4).contains(&raw_len))) {
        return None;
    }
    // Not a value: `8 %`, `2000 billion`.
    if r.tokens.get(i + 1).and_then(Token::sym) == Some('%') {
        return None;
    }
    let mut end = i + 1;
    if worded {
        end += 1;
        if r.tokens.get(end).and_then(Token::sym) == Some('.') {
            end += 1;
        }
    }
    Some((i32::try_from(n).ok()?, end))
}

/// Skips `of`, `the`, `,` between a quarter or month and its year.
fn skip_joiners(r: &Reader, mut i: usize) -> usize {
    loop {
        if r.is_word(i, &["of", "the", "in", "года"])
            || r.tokens.get(i).and_then(Token::sym) == Some(',')
        {
            i += 1;
        } else {
            return i;
        }
    }
}

fn month(word: &str) -> Option<u8> {
    const EN: &[&str] = &[
        "january",
        "february",
        "march",
        "april",
        "may",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
    ];
    const RU: &[&str] = &[
        "январ",
        "феврал",
        "март",
        "апрел",
        "ма",
        "июн",
        "июл",
        "август",
        "сентябр",
        "октябр",
        "ноябр",
        "декабр",
    ];
    if let Some(m) = EN.iter().position(|m| *m == word) {
        return Some(m as u8 + 1);
    }
    if matches!(word, "май" | "мая" | "мае") {
        return Some(5);
    }
    RU.iter()
        .position(|m| *m != "ма" && word.starts_with(m))
        .map(|m| m as u8 + 1)
}

/// Decades: `1970s`, `70s`, `'70s`, `1970-е`, `70-х`, `seventies`, `семидесятые`.
fn decade_at(r: &Reader, i: usize) -> Option<(i32, usize)> {
    if !r.free(i, i + 1) {
        return None;
    }
    let token = r.tokens.get(i)?;
    if let Some(word) = token.word() {
        const WORDS: &[(&str, i32)] = &[
            ("fifties", 1950),
            ("sixties", 1960),
            ("seventies", 1970),
            ("eighties", 1980),
            ("nineties", 1990),
            ("noughties", 2000),
            ("aughts", 2000),
            ("пятидесяты", 1950),
            ("шестидесяты", 1960),
            ("семидесяты", 1970),
            ("восьмидесяты", 1980),
            ("девяносты", 1990),
            ("двухтысячн", 2000),
        ];
        let decade = WORDS
            .iter()
            .find(|(stem, _)| word.starts_with(stem))
            .map(|(_, d)| *d)?;
        let mut end = i + 1;
        if r.is_word(end, YEAR_WORDS) {
            end += 1;
        }
        return Some((decade, end));
    }
    let n = token.int()?;
    let decade = match n {
        1900..=2090 if n % 10 == 0 => n as i32,
        0..=90 if n % 10 == 0 => {
            if n == 0 {
                2000
            } else {
                1900 + n as i32
            }
        }
        _ => return None,
    };
    // 1970s / 70s
    if r.tokens
        .get(i + 1)
        .is_some_and(|t| t.glued && t.word() == Some("s"))
    {
        return Some((decade, i + 2));
    }
    // 1970's
    if r.tokens.get(i + 1).and_then(Token::sym) == Some('\'')
        && r.tokens.get(i + 2).and_then(Token::word) == Some("s")
    {
        return Some((decade, i + 3));
    }
    // 1970-е, 70-х (годы)
    if r.tokens.get(i + 1).and_then(Token::sym) == Some('-')
        && r.tokens
            .get(i + 2)
            .and_then(Token::word)
            .is_some_and(|w| ["е", "х", "ые", "ых", "м", "ми", "ие", "их"].contains(&w))
    {
        let mut end = i + 3;
        if r.is_word(end, YEAR_WORDS) {
            end += 1;
        }
        return Some((decade, end));
    }
    None
}

/// One point at `i`: a quarter, a month, a decade or a year.
fn point_at(r: &Reader, i: usize) -> Option<Point> {
    // `the` before a point belongs to it.
    let start = i;
    let i = if r.is_word(i, &["the"]) { i + 1 } else { i };
    // Q3 2008, q3 of 2008
    if let Some(word) = r.word(i)
        && let Some(q) = word.strip_prefix('q').and_then(|d| d.parse::<u8>().ok())
    {
        if i > 0
            && let Some((year, _)) = year_at(r, i - 1)
            && r.tokens[i].glued
        {
            return Some(Point {
                start: i - 1,
                end: i + 1,
                first: (year, q),
                last: (year, q),
            });
        }
        let at = skip_joiners(r, i + 1);
        if let Some((year, end)) = year_at(r, at) {
            return Some(Point {
                start,
                end,
                first: (year, q),
                last: (year, q),
            });
        }
        return None;
    }
    // third quarter of 2008, 3-й квартал 2008 года, в 3 кв. 2008
    if let Some((q, after)) = quarter_ordinal(&r.tokens, i).filter(|(_, e)| r.free(i, *e))
        && r.is_word(after, QUARTER_WORDS)
    {
        let mut at = after + 1;
        if r.tokens.get(at).and_then(Token::sym) == Some('.') {
            at += 1;
        }
        let at = skip_joiners(r, at);
        if let Some((year, end)) = year_at(r, at) {
            return Some(Point {
                start,
                end,
                first: (year, q),
                last: (year, q),
            });
        }
        return None;
    }
    // 2008 Q3, 2008, third quarter
    if let Some((year, end)) = year_at(r, i) {
        if let Some(word) = r.word(end)
            && let Some(q) = word.strip_prefix('q').and_then(|d| d.parse::<u8>().ok())
        {
            return Some(Point {
                start,
                end: end + 1,
                first: (year, q),
                last: (year, q),
            });
        }
        if let Some((decade, dend)) = decade_at(r, i) {
            return Some(Point {
                start,
                end: dend,
                first: (decade, 1),
                last: (decade + 9, 4),
            });
        }
        return Some(Point {
            start,
            end,
            first: (year, 1),
            last: (year, 4),
        });
    }
    // March 2008, в марте 2008 года
    if let Some(m) = r.word(i).and_then(month) {
        let at = skip_joiners(r, i + 1);
        if let Some((year, end)) = year_at(r, at) {
            let q = (m - 1) / 3 + 1;
            return Some(Point {
                start,
                end,
                first: (year, q),
                last: (year, q),
            });
        }
        return None;
    }
    if let Some((decade, end)) = decade_at(r, i) {
        return Some(Point {
            start,
            end,
            first: (decade, 1),
            last: (decade + 9, 4),
        });
    }
    None
}

/// Periods: the points of the question and the ranges between them.
fn periods(r: &mut Reader) {
    let mut points: Vec<Point> = Vec::new();
    let mut i = 0;
    while i < r.tokens.len() {
        match point_at(r, i) {
            Some(p) if r.free(p.start, p.end) => {
                points.push(p);
                i = p.end;
            }
            _ => i += 1,
        }
    }
    let last = Quarter::last();
    let first = Quarter::first();
    let mut k = 0;
    while k < points.len() {
        let p = points[k];
        let before = |r: &Reader, options: &[&str]| {
            p.start > 0 && r.is_word(p.start - 1, options)
                || p.start > 1
                    && r.is_word(p.start - 2, options)
                    && r.is_word(p.start - 1, &["the", "year", "года"])
        };
        let opener_start = if p.start > 1 && r.is_word(p.start - 1, &["the"]) {
            p.start - 2
        } else {
            p.start.saturating_sub(1)
        };
        let ranged = points.get(k + 1).copied().filter(|q| {
            let gap: Vec<usize> = (p.end..q.start).collect();
            let joiner = |options: &[&str], symbols: bool| {
                gap.len() <= 2
                    && !gap.is_empty()
                    && gap.iter().all(|&g| {
                        r.is_word(g, options)
                            || r.is_word(g, &["the"])
                            || (symbols
                                && r.tokens[g]
                                    .sym()
                                    .is_some_and(|c| matches!(c, '-' | '–' | '—' | '/')))
                    })
            };
            let from = before(r, &["from", "с", "со", "от", "начиная"]);
            let between = before(r, &["between", "между"]);
            (from
                && joiner(
                    &["to", "through", "till", "until", "thru", "по", "до"],
                    true,
                ))
                || (between && joiner(&["and", "и"], false))
                || joiner(&["to", "through", "thru"], true)
        });
        let (spec, start, end, how) = if let Some(q) = ranged {
            let start = if before(r, &["from", "с", "со", "от", "between", "между", "начиная"])
            {
                opener_start
            } else {
                p.start
            };
            k += 1;
            (p.spec(q), start, q.end, "range")
        } else if before(r, &["since", "from", "с", "со", "начиная", "от"]) {
            let to = Point {
                last: (last.year, last.q),
                ..p
            };
            (p.spec(to), opener_start, p.end, "from")
        } else if before(r, &["after", "после"]) {
            let next = Quarter::from_index(
                Quarter::new(p.last.0, p.last.1.clamp(1, 4)).map_or(0, Quarter::index) + 1,
            );
            let spec = PeriodSpec::Valid(Period {
                from: next,
                to: last.max(next),
            });
            (spec, opener_start, p.end, "after")
        } else if before(r, &["before", "до", "prior"]) {
            let prev = Quarter::from_index(
                Quarter::new(p.first.0, p.first.1.clamp(1, 4)).map_or(0, Quarter::index) - 1,
            );
            let spec = PeriodSpec::Valid(Period {
                from: first.min(prev),
                to: prev,
            });
            (spec, opener_start, p.end, "before")
        } else if before(r, &["until", "till", "through", "по"]) {
            let from = Point {
                first: (first.year, first.q),
                ..p
            };
            (from.spec(p), opener_start, p.end, "until")
        } else {
            (p.spec(p), p.start, p.end, "")
        };
        let text = r.span(start, end);
        r.take(start, end);
        let how = if how.is_empty() {
            String::new()
        } else {
            format!(" ({how})")
        };
        r.note(format!("period {}{how} ← «{text}»", describe_bounds(&spec)));
        r.reading.periods.push(Found {
            start,
            end,
            value: spec,
        });
        k += 1;
    }
}

fn describe_bounds(spec: &PeriodSpec) -> String {
    let (a, b) = spec.bounds();
    if a == b { a } else { format!("{a}–{b}") }
}

/// What a vocabulary phrase stands for.
#[derive(Clone, Copy, Debug)]
enum Lex {
    Term(&'static Term),
    Missing(&'static Missing),
    Country(&'static Country),
    /// The United States: the data set's own country, nothing to do.
    Us,
}

fn vocabulary(r: &mut Reader) {
    let mut phrases: Vec<(&str, Lex)> = Vec::new();
    for term in GLOSSARY {
        phrases.extend(term.phrases().map(|p| (p, Lex::Term(term))));
    }
    for missing in MISSING {
        phrases.extend(missing.phrases.iter().map(|p| (*p, Lex::Missing(missing))));
    }
    for country in COUNTRIES {
        phrases.extend(country.phrases.iter().map(|p| (*p, Lex::Country(country))));
    }
    for us in [
        "us",
        "usa",
        "u s",
        "u s a",
        "united states",
        "america",
        "american",
        "the states",
        "сша",
        "америк*",
        "штат*",
        "соединенн* штат*",
    ] {
        phrases.push((us, Lex::Us));
    }
    let hits: Vec<Hit<Lex>> = find_all(&r.tokens, &mut r.used, &phrases);
    for hit in hits {
        let text = span_text(&r.tokens, hit.start, hit.end);
        let found = |value| Found {
            start: hit.start,
            end: hit.end,
            value,
        };
        match hit.value {
            Lex::Term(term) => {
                if !r.reading.terms.iter().any(|t| t.key == term.key) {
                    r.reading.terms.push(term);
                }
                if let Some(measure) = term.measure {
                    r.reading.notes.push(format!(
                        "measure {} ({}) ← «{text}»",
                        measure.name(Lang::En),
                        measure.column()
                    ));
                    r.reading.metrics.push(found(MetricRef::Known(measure)));
                } else {
                    r.reading
                        .notes
                        .push(format!("term {} ← «{text}»", term.en.name));
                }
            }
            Lex::Missing(missing) => {
                r.reading
                    .notes
                    .push(format!("{} ← «{text}»: not in the data set", missing.en));
                r.reading.metrics.push(found(MetricRef::Missing(missing)));
            }
            Lex::Country(country) => {
                if !r.reading.countries.contains(&country) {
                    r.reading.countries.push(country);
                }
                r.reading.notes.push(format!(
                    "place {} ← «{text}»: the data set covers the United States only",
                    country.en
                ));
            }
            Lex::Us => {}
        }
    }
}

/// Gives each comparison the measure it compares: the nearest one named before it, else the
/// nearest after.
fn attach_filters(r: &mut Reader) {
    let metrics = r.reading.metrics.clone();
    for filter in &mut r.reading.filters {
        if filter.column.is_some() || filter.year {
            continue;
        }
        let before = metrics
            .iter()
            .filter(|m| m.end <= filter.at)
            .max_by_key(|m| m.end);
        let after = metrics
            .iter()
            .filter(|m| m.start > filter.at)
            .min_by_key(|m| m.start);
        filter.column = before.or(after).map(|m| m.value);
    }
}

const MAX_WORDS: &[&str] = &[
    "highest",
    "maximum",
    "max",
    "peak*",
    "largest",
    "biggest",
    "greatest",
    "record",
    "most",
    "top",
    "максимальн*",
    "максимум*",
    "наибольш*",
    "наивысш*",
    "высш*",
    "пик*",
    "рекордн*",
    "сам* высок*",
    "сам* больш*",
    "сам* крупн*",
    "больше всего",
    "выше всего",
    "топ",
];

const MIN_WORDS: &[&str] = &[
    "lowest",
    "minimum",
    "min",
    "smallest",
    "least",
    "bottom",
    "trough",
    "минимальн*",
    "минимум*",
    "наименьш*",
    "низш*",
    "сам* низк*",
    "сам* маленьк*",
    "сам* мал*",
    "меньше всего",
    "ниже всего",
];

/// `top 5`, `топ-5`, `5 highest`, `5 самых`, `first 10`, `which 3 years`, `5 quarters with
/// the highest`: the limit, and the unit when one is named.
fn limits(r: &mut Reader) {
    let real_max: Vec<&str> = MAX_WORDS
        .iter()
        .copied()
        .filter(|w| !matches!(*w, "top" | "топ"))
        .collect();
    let superlative = r.find(&real_max).is_some() || r.find(MIN_WORDS).is_some();
    for i in 0..r.tokens.len() {
        if r.reading.limit.is_some() {
            break;
        }
        let mut at = None;
        let mut start = i;
        let mut first = false;
        if r.is_word(i, &["top", "топ"]) {
            let mut j = i + 1;
            if r.tokens.get(j).and_then(Token::sym) == Some('-') {
                j += 1;
            }
            at = Some(j);
        } else if r.is_word(i, &["first", "первы*", "первых"]) {
            at = Some(i + 1);
            first = true;
        } else if r.is_word(i, &["which", "what", "какие", "каких", "какой", "какая"])
        {
            at = Some(i + 1);
        } else if count_at(&r.tokens, i).is_some() && r.free(i, i + 1) {
            start = i;
            at = Some(i);
        }
        let Some(j) = at else { continue };
        let Some(n) = count_at(&r.tokens, j).filter(|_| r.free(j, j + 1)) else {
            continue;
        };
        let mut end = j + 1;
        let unit = unit_at(&r.tokens, end).filter(|_| r.free(end, end + 1));
        if unit.is_some() {
            end += 1;
        }
        // A bare number counts as a limit only with a unit and a superlative (`5 quarters
        // with the highest ...`), or right before one (`5 highest`, `5 самых`).
        let bare = at == Some(i) && !r.is_word(i, &["top", "топ"]);
        if bare {
            let next_superlative = r.is_word(
                end,
                &[
                    "highest",
                    "lowest",
                    "largest",
                    "smallest",
                    "biggest",
                    "сам*",
                    "наибольш*",
                    "наименьш*",
                    "максимальн*",
                    "минимальн*",
                    "best",
                    "worst",
                    "лучш*",
                    "худш*",
                ],
            );
            if !(next_superlative || (unit.is_some() && superlative)) {
                continue;
            }
        }
        if r.is_word(
            start,
            &["which", "what", "какие", "каких", "какой", "какая"],
        ) && unit.is_none()
        {
            continue;
        }
        let top = r.is_word(i, &["top", "топ"]);
        let text = r.span(start, end);
        r.take(start, end);
        r.reading.limit = Some(n);
        match unit {
            Some(Unit::Years) => r.reading.group = Some(Grouping::Year),
            Some(Unit::Decades) => r.reading.group = Some(Grouping::Decade),
            _ => {}
        }
        if first {
            r.reading.series = true;
        }
        if top && !superlative {
            r.reading.aggregations.push(Aggregation::Max);
        }
        r.note(format!("limit {n} ← «{text}»"));
    }
}

fn cues(r: &mut Reader) {
    // Definitions.
    const STRONG: &[&str] = &[
        "what does",
        "what do",
        "meaning",
        "define",
        "definition",
        "explain",
        "what is meant",
        "tell me about",
        "что такое",
        "что означает",
        "что значит",
        "означает",
        "объясни*",
        "определени*",
        "поясни*",
        "расскажи* о",
        "расскажи* об",
        "расскажи* про",
        "что это",
        "что подразумева*",
        "что понима*",
        "термин*",
    ];
    const WEAK: &[&str] = &["what is", "what s", "what are", "whats", "what's"];
    if r.find(STRONG).is_some() {
        r.reading.concept_cue = true;
        // "what does X mean": `mean` is not an average here.
        if r.find(&["what does", "what do", "что означает"]).is_some() {
            r.take_all(&["mean", "means", "meant"]);
        }
    } else if let Some((_, end)) = r.find(WEAK)
        && !r.is_word(
            end,
            &["the", "current", "latest", "our", "today", "todays", "now"],
        )
    {
        r.reading.concept_cue = true;
    }
    if r.reading.concept_cue {
        r.note("asks what something means".to_owned());
    }
    // Order (before superlatives: "from highest to lowest" is an order).
    const DESC: &[&str] = &[
        "descending",
        "from highest to lowest",
        "from largest to smallest",
        "highest first",
        "largest first",
        "sorted",
        "sort",
        "по убыванию",
        "от большего к меньшему",
        "от высок* к низк*",
        "отсортир*",
        "упорядоч*",
    ];
    const ASC: &[&str] = &[
        "ascending",
        "from lowest to highest",
        "from smallest to largest",
        "lowest first",
        "smallest first",
        "по возрастанию",
        "от меньшего к большему",
        "от низк* к высок*",
    ];
    if !r.take_all(ASC).is_empty() {
        r.reading.order = Some(Direction::Asc);
        r.note("order ascending".to_owned());
    }
    if !r.take_all(DESC).is_empty() && r.reading.order.is_none() {
        r.reading.order = Some(Direction::Desc);
        r.note("order descending".to_owned());
    }
    // Which year / decade / quarter.
    let which_year = r
        .take_all(&[
            "which year",
            "what year",
            "в каком году",
            "каком году",
            "какой год",
            "в какой год",
        ])
        .len();
    let which_decade = r
        .take_all(&[
            "which decade",
            "what decade",
            "в каком десятилетии",
            "какое десятилетие",
        ])
        .len();
    let which_quarter = r
        .take_all(&[
            "which quarter",
            "what quarter",
            "в каком квартале",
            "какой квартал",
        ])
        .len();
    // Counting.
    const COUNT: &[&str] = &[
        "how many quarters",
        "how many times",
        "how many years",
        "how many periods",
        "how often",
        "number of quarters",
        "number of times",
        "number of years",
        "count",
        "сколько раз",
        "сколько квартал*",
        "сколько лет",
        "сколько год*",
        "в скольких",
        "скольких",
        "как часто",
        "число квартал*",
        "количеств* квартал*",
        "количеств* раз",
        "количеств* лет",
    ];
    let mut aggregations: Vec<(usize, Aggregation)> = Vec::new();
    for (at, _) in r.take_all(COUNT) {
        aggregations.push((at, Aggregation::Count));
    }
    const FIRST: &[&str] = &[
        "first value",
        "starting value",
        "initial value",
        "at the start of",
        "at the beginning of",
        "start of",
        "beginning of",
        "первое значение",
        "начальн* значени*",
        "в начале",
        "на начало",
    ];
    const LAST: &[&str] = &[
        "latest",
        "most recent",
        "current",
        "currently",
        "now",
        "today",
        "nowadays",
        "last value",
        "final value",
        "at the end of",
        "end of",
        "последн* значени*",
        "последн* данн*",
        "текущ*",
        "сейчас",
        "на данный момент",
        "в конце",
        "на конец",
        "последн*",
        "last",
    ];
    for (at, _) in r.take_all(FIRST) {
        aggregations.push((at, Aggregation::First));
    }
    for (at, _) in r.take_all(LAST) {
        aggregations.push((at, Aggregation::Last));
    }
    // Grouping.
    const BY_YEAR: &[&str] = &[
        "by year",
        "per year",
        "each year",
        "every year",
        "for each year",
        "year by year",
        "annual*",
        "yearly",
        "по годам",
        "каждый год",
        "за каждый год",
        "для каждого года",
        "ежегодн*",
        "погодов*",
    ];
    const BY_DECADE: &[&str] = &[
        "by decade",
        "per decade",
        "each decade",
        "every decade",
        "по десятилетиям",
        "по декадам",
        "каждое десятилетие",
        "за каждое десятилетие",
    ];
    if !r.take_all(BY_DECADE).is_empty() || which_decade > 0 {
        r.reading.group = Some(Grouping::Decade);
        r.note("grouped by decade".to_owned());
    } else if !r.take_all(BY_YEAR).is_empty() || which_year > 0 {
        r.reading.group = Some(Grouping::Year);
        r.note("grouped by year".to_owned());
    }
    // Computations.
    const CHANGE: &[&str] = &[
        "change*",
        "grow*",
        "grew",
        "growth",
        "rise",
        "rose",
        "risen",
        "increase*",
        "fall",
        "fell",
        "fallen",
        "decline*",
        "drop*",
        "decrease*",
        "go up",
        "went up",
        "gone up",
        "go down",
        "went down",
        "gone down",
        "gain*",
        "измени*",
        "изменени*",
        "рост",
        "роста",
        "росту",
        "ростом",
        "вырос*",
        "вырасти",
        "увелич*",
        "сниз*",
        "снижени*",
        "упал*",
        "упасть",
        "падени*",
        "прирост*",
        "сократ*",
        "сокращени*",
    ];
    const AVG: &[&str] = &[
        "average*",
        "mean",
        "avg",
        "typical*",
        "средн*",
        "в среднем",
        "среднегодов*",
    ];
    const SUM: &[&str] = &[
        "total",
        "sum",
        "cumulative*",
        "combined",
        "altogether",
        "in total",
        "сумм*",
        "суммарн*",
        "совокупн*",
        "итого",
        "в сумме",
    ];
    for (phrases, aggregation) in [
        (MAX_WORDS, Aggregation::Max),
        (MIN_WORDS, Aggregation::Min),
        (CHANGE, Aggregation::Change),
        (AVG, Aggregation::Avg),
        (SUM, Aggregation::Sum),
    ] {
        for (at, _) in r.take_all(phrases) {
            aggregations.push((at, aggregation));
        }
    }
    aggregations.sort_by_key(|(at, _)| *at);
    for (_, aggregation) in aggregations {
        if !r.reading.aggregations.contains(&aggregation) {
            r.reading.aggregations.push(aggregation);
        }
    }
    if which_year + which_decade > 0 && r.reading.limit.is_none() {
        let superlative = r
            .reading
            .aggregations
            .iter()
            .any(|a| matches!(a, Aggregation::Max | Aggregation::Min));
        if superlative {
            r.reading.limit = Some(1);
        }
    }
    if which_quarter > 0 && r.reading.aggregations.is_empty() {
        r.reading.series = true;
    }
    if !r.reading.aggregations.is_empty() {
        let names: Vec<&str> = r.reading.aggregations.iter().map(|a| a.name()).collect();
        r.note(format!("compute {}", names.join(", ")));
    }
    // Listing.
    const SERIES: &[&str] = &[
        "show",
        "list",
        "display",
        "print",
        "series",
        "time series",
        "values",
        "dynamics",
        "trend*",
        "evolution",
        "history",
        "over time",
        "quarterly",
        "by quarter",
        "each quarter",
        "every quarter",
        "per quarter",
        "quarter by quarter",
        "table",
        "покаж*",
        "выведи*",
        "вывести",
        "отобрази*",
        "список",
        "перечисл*",
        "динамик*",
        "ряд",
        "значени*",
        "тренд*",
        "истори*",
        "по кварталам",
        "поквартальн*",
        "ежеквартальн*",
        "каждый квартал",
        "за каждый квартал",
        "таблиц*",
    ];
    if !r.take_all(SERIES).is_empty() {
        r.reading.series = true;
        r.note("a listing".to_owned());
    }
}

fn trim_number(x: f64) -> String {
    let text = format!("{x:.4}");
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// The English question for `internal_query`, written so the English rules read it back the
/// same way (see the tests).
pub fn english(reading: &Reading, message: &str) -> String {
    match reading.intent() {
        Intent::Data => {
            let steps = reading.steps();
            let parts: Vec<String> = steps.iter().map(english_step).collect();
            capitalise(&format!("{}.", parts.join("; ")))
        }
        Intent::Concept => match reading.concept_term() {
            Some(term) => format!("What is {}?", term.en.title),
            None => match reading.metrics.first().map(|m| m.value) {
                Some(metric) => format!("What is {}?", metric.english()),
                None => small_talk(message),
            },
        },
        Intent::Chitchat => small_talk(message),
    }
}

/// Small talk in English: the message itself, or its gist when it is Russian.
fn small_talk(message: &str) -> String {
    if lang::detect(message) != Lang::Ru {
        return message.trim().chars().take(300).collect();
    }
    let tokens = tokenize(message);
    let has = |phrases: &[&str]| super::tokens::contains_any(&tokens, phrases);
    let mut parts = Vec::new();
    if has(&[
        "привет*",
        "здравств*",
        "добр* день",
        "добр* утро",
        "добр* вечер",
        "хай",
    ]) {
        parts.push("Hello!");
    }
    if has(&["как дела", "как ты", "как поживаешь"]) {
        parts.push("How are you?");
    }
    if has(&["кто ты", "кто вы", "ты кто", "вы кто"]) {
        parts.push("Who are you?");
    }
    if has(&[
        "что ты умеешь",
        "что вы умеете",
        "что ты можешь",
        "что вы можете",
        "помо*",
        "умеешь",
    ]) {
        parts.push("What can you do?");
    }
    if has(&["спасибо", "благодар*"]) {
        parts.push("Thank you!");
    }
    if has(&["пока", "до свидания", "до встречи"]) {
        parts.push("Goodbye!");
    }
    if parts.is_empty() {
        "(small talk in Russian, not about the data)".to_owned()
    } else {
        parts.join(" ")
    }
}

fn capitalise(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(c) => c.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

fn english_step(step: &Step) -> String {
    let mut metric = None;
    let mut period = None;
    let mut filters = Vec::new();
    let mut countries = Vec::new();
    let mut group = None;
    let mut aggregations = Vec::new();
    let mut order = None;
    let mut limit = None;
    for atom in &step.atoms {
        match atom {
            Atom::Metric { name } => metric = Some(name.clone()),
            Atom::TimeRange { from, to } => period = Some((from.clone(), to.clone())),
            Atom::Filter {
                column,
                op,
                value: FilterValue::Text(text),
            } if column == "country" && *op == Comparison::Eq => countries.push(text.clone()),
            Atom::Filter { column, op, value } => {
                filters.push((column.clone(), *op, value.clone()))
            }
            Atom::GroupBy { by } => group = Some(*by),
            Atom::Aggregate { function } => aggregations.push(*function),
            Atom::Order { direction } => order = Some(*direction),
            Atom::Limit { count } => limit = Some(*count),
        }
    }
    let name = |column: &str| -> String {
        Measure::from_column(column)
            .map(|m| m.name(Lang::En).to_owned())
            .unwrap_or_else(|| column.to_owned())
    };
    let metric_name = metric.as_deref().map(name).unwrap_or_default();
    let function = aggregations.first().copied();
    let mut words: Vec<String> = Vec::new();
    let unit = |n: i64| match (group, n) {
        (Some(Grouping::Year), 1) => "year",
        (Some(Grouping::Year), _) => "years",
        (Some(Grouping::Decade), 1) => "decade",
        (Some(Grouping::Decade), _) => "decades",
        (None, 1) => "quarter",
        (None, _) => "quarters",
    };
    match (function, limit) {
        (Some(Aggregation::Count), _) => {
            let filtered = filters.iter().any(|(c, _, _)| Some(c) == metric.as_ref());
            if filtered || metric.is_none() {
                words.push("number of quarters".into());
            } else {
                words.push(format!("number of quarters of {metric_name}"));
            }
        }
        (Some(f @ (Aggregation::Max | Aggregation::Min)), Some(n)) if group.is_none() => {
            let which = if f == Aggregation::Max {
                "highest"
            } else {
                "lowest"
            };
            words.push(format!("{n} {} with the {which} {metric_name}", unit(n)));
        }
        (f, Some(n)) if group.is_some() && order.is_some() => {
            let which = if order == Some(Direction::Asc) {
                "lowest"
            } else {
                "highest"
            };
            let how = match f {
                Some(Aggregation::Sum) => "total",
                Some(Aggregation::Max) => "maximum",
                Some(Aggregation::Min) => "minimum",
                _ => "average",
            };
            words.push(format!(
                "{n} {} with the {which} {how} {metric_name}",
                unit(n)
            ));
            order = None;
        }
        (None, Some(n)) if order.is_none() => {
            words.push(format!("first {n} quarters of {metric_name}"));
        }
        (f, _) => {
            let lead = match f {
                Some(Aggregation::Avg) => "average ",
                Some(Aggregation::Sum) => "total ",
                Some(Aggregation::Max) => "highest ",
                Some(Aggregation::Min) => "lowest ",
                Some(Aggregation::Change) => "change in ",
                Some(Aggregation::First) => "first value of ",
                Some(Aggregation::Last) => "latest ",
                Some(Aggregation::Count) | None => "",
            };
            words.push(format!("{lead}{metric_name}"));
            let one_quarter = period
                .as_ref()
                .is_some_and(|(a, b)| a == b && a.to_ascii_lowercase().contains('q'));
            if f.is_none() && group.is_none() && !one_quarter {
                words.push("by quarter".into());
            }
            if let Some(n) = limit {
                words.push(format!("top {n}"));
            }
        }
    }
    for extra in aggregations.iter().skip(1) {
        words.push(format!("and {}", extra.name()));
    }
    for (column, op, value) in &filters {
        let how = match op {
            Comparison::Gt => "above",
            Comparison::Ge => "at least",
            Comparison::Lt => "below",
            Comparison::Le => "at most",
            Comparison::Eq => "equal to",
            Comparison::Ne => "not equal to",
        };
        let value = match value {
            FilterValue::Number(x) => trim_number(*x),
            FilterValue::Text(t) => t.clone(),
        };
        words.push(format!("where {} is {how} {value}", name(column)));
    }
    for country in countries {
        words.push(format!("in {country}"));
    }
    if let Some((from, to)) = period {
        let span = super::period::parse_bound(&from)
            .ok()
            .zip(super::period::parse_bound(&to).ok())
            .map(|((a, _), (_, b))| Period { from: a, to: b });
        match span {
            Some(p) if p.from <= p.to => words.push(p.describe(Lang::En)),
            _ if from == to => words.push(format!("in {from}")),
            _ => words.push(format!("from {from} to {to}")),
        }
    }
    match group {
        Some(Grouping::Year) if !words.iter().any(|w| w.contains(" with the ")) => {
            words.push("by year".into())
        }
        Some(Grouping::Decade) if !words.iter().any(|w| w.contains(" with the ")) => {
            words.push("by decade".into())
        }
        _ => {}
    }
    match order {
        Some(Direction::Desc) => words.push("sorted descending".into()),
        Some(Direction::Asc) => words.push("sorted ascending".into()),
        None => {}
    }
    words.join(" ")
}
