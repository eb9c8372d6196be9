//! What a question about the macro data asks, in English, Spanish and Russian: which series
//! (GDP, unemployment, inflation...), when (a year, a quarter, a range, a decade, the latest
//! quarter), what to compute (values, highest, lowest, average, change), and whether it asks
//! for an explanation rather than numbers.
//!
//! Matching is on folded words ([`crate::lang::words`]: lower case, no accents). A lexicon
//! entry is a phrase of such words; a word ending in `*` matches any word that starts with it,
//! which is how Russian inflections ("безработица", "безработицы", "безработицей") and
//! Spanish plurals match one entry. Where entries overlap, the longest phrase wins ("real
//! interest rate" is `realint`, not `tbilrate`).
//!
//! The offline planner builds its queries from a [`Question`]; the offline generator reads the
//! same analysis to phrase the answer; the summarizer and the document search use the series
//! lexicon and the stop words.

use crate::dataset::COVERAGE;
use crate::lang::words;

/// Whether `word` matches the pattern word `pattern` (`stem*` matches by prefix).
pub fn word_matches(word: &str, pattern: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(stem) => word.starts_with(stem) && word.chars().count() >= stem.chars().count(),
        None => word == pattern,
    }
}

/// How many words of `phrase` match `words` from position `at` (0 when it does not match).
pub fn match_at(words: &[String], at: usize, phrase: &str) -> usize {
    let parts: Vec<&str> = phrase.split(' ').collect();
    if at + parts.len() > words.len() {
        return 0;
    }
    if parts
        .iter()
        .zip(&words[at..])
        .all(|(p, w)| word_matches(w, p))
    {
        parts.len()
    } else {
        0
    }
}

/// A lexicon hit: where, how many words, what it means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hit<T> {
    /// The first word's index.
    pub at: usize,
    /// How many words matched.
    pub len: usize,
    /// The entry's value.
    pub value: T,
}

/// Every non-overlapping match of `entries` in `words`, left to right, longest first at each
/// position.
pub fn scan<T: Copy>(words: &[String], entries: &[(&str, T)]) -> Vec<Hit<T>> {
    let mut hits = Vec::new();
    let mut i = 0;
    while i < words.len() {
        let best = entries
            .iter()
            .map(|(phrase, value)| (match_at(words, i, phrase), *value))
            .filter(|(len, _)| *len > 0)
            .max_by_key(|(len, _)| *len);
        match best {
            Some((len, value)) => {
                hits.push(Hit { at: i, len, value });
                i += len;
            }
            None => i += 1,
        }
    }
    hits
}

/// Whether any entry of `phrases` occurs in `words`.
pub fn has_any(words: &[String], phrases: &[&str]) -> bool {
    (0..words.len()).any(|i| phrases.iter().any(|p| match_at(words, i, p) > 0))
}

/// The series of the data set by the names people use for them (folded).
pub const SERIES: &[(&str, &str)] = &[
    // Real GDP.
    ("gdp", "realgdp"),
    ("real gdp", "realgdp"),
    ("realgdp", "realgdp"),
    ("gross domestic product", "realgdp"),
    ("economic output", "realgdp"),
    ("output", "realgdp"),
    ("pib", "realgdp"),
    ("producto interior bruto", "realgdp"),
    ("producto interno bruto", "realgdp"),
    ("ввп", "realgdp"),
    ("валов* внутрен* продукт*", "realgdp"),
    // Consumption.
    ("consumption", "realcons"),
    ("realcons", "realcons"),
    ("consumer spending", "realcons"),
    ("household spending", "realcons"),
    ("personal consumption", "realcons"),
    ("consumo", "realcons"),
    ("gasto de los hogares", "realcons"),
    ("gasto en consumo", "realcons"),
    ("потреблени*", "realcons"),
    ("потребительск* расход*", "realcons"),
    // Investment.
    ("investment", "realinv"),
    ("realinv", "realinv"),
    ("private investment", "realinv"),
    ("business investment", "realinv"),
    ("inversion", "realinv"),
    ("inversiones", "realinv"),
    ("инвестиц*", "realinv"),
    ("капиталовложени*", "realinv"),
    // Federal government.
    ("government spending", "realgovt"),
    ("government", "realgovt"),
    ("realgovt", "realgovt"),
    ("federal spending", "realgovt"),
    ("public spending", "realgovt"),
    ("gasto publico", "realgovt"),
    ("gasto del gobierno", "realgovt"),
    ("gobierno", "realgovt"),
    ("государствен* расход*", "realgovt"),
    ("госрасход*", "realgovt"),
    ("правительств*", "realgovt"),
    // Disposable income.
    ("disposable income", "realdpi"),
    ("realdpi", "realdpi"),
    ("personal income", "realdpi"),
    ("income", "realdpi"),
    ("renta disponible", "realdpi"),
    ("ingreso disponible", "realdpi"),
    ("renta", "realdpi"),
    ("ingresos", "realdpi"),
    ("располагаем* доход*", "realdpi"),
    ("доход*", "realdpi"),
    // Prices.
    ("cpi", "cpi"),
    ("consumer price index", "cpi"),
    ("consumer prices", "cpi"),
    ("price index", "cpi"),
    ("price level", "cpi"),
    ("prices", "cpi"),
    ("ipc", "cpi"),
    ("indice de precios", "cpi"),
    ("indice de precios al consumo", "cpi"),
    ("precios", "cpi"),
    ("ипц", "cpi"),
    ("индекс* потребительск* цен", "cpi"),
    ("цен*", "cpi"),
    // Money.
    ("m1", "m1"),
    ("м1", "m1"),
    ("money supply", "m1"),
    ("money stock", "m1"),
    ("masa monetaria", "m1"),
    ("oferta monetaria", "m1"),
    ("денежн* масс*", "m1"),
    ("денежн* предложени*", "m1"),
    // Short-term interest rate.
    ("treasury bill", "tbilrate"),
    ("treasury bills", "tbilrate"),
    ("treasury bill rate", "tbilrate"),
    ("t bill", "tbilrate"),
    ("tbill", "tbilrate"),
    ("tbilrate", "tbilrate"),
    ("interest rate", "tbilrate"),
    ("interest rates", "tbilrate"),
    ("letras del tesoro", "tbilrate"),
    ("tipo de interes", "tbilrate"),
    ("tipos de interes", "tbilrate"),
    ("tasa de interes", "tbilrate"),
    ("tasas de interes", "tbilrate"),
    ("казначейск* вексел*", "tbilrate"),
    ("процентн* ставк*", "tbilrate"),
    ("ставк*", "tbilrate"),
    // Real interest rate.
    ("real interest rate", "realint"),
    ("real interest rates", "realint"),
    ("real rate", "realint"),
    ("realint", "realint"),
    ("tipo de interes real", "realint"),
    ("tasa de interes real", "realint"),
    ("реальн* процентн* ставк*", "realint"),
    ("реальн* ставк*", "realint"),
    // Unemployment.
    ("unemployment", "unemp"),
    ("unemployment rate", "unemp"),
    ("jobless rate", "unemp"),
    ("unemp", "unemp"),
    ("desempleo", "unemp"),
    ("paro", "unemp"),
    ("tasa de paro", "unemp"),
    ("tasa de desempleo", "unemp"),
    ("безработиц*", "unemp"),
    // Population.
    ("population", "pop"),
    ("poblacion", "pop"),
    ("habitantes", "pop"),
    ("населени*", "pop"),
    ("численност* населени*", "pop"),
    // Inflation.
    ("inflation", "infl"),
    ("inflation rate", "infl"),
    ("infl", "infl"),
    ("inflacion", "infl"),
    ("инфляци*", "infl"),
];

/// The series `words` mention, in order, each once.
pub fn series_in(words: &[String]) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    for hit in scan(words, SERIES) {
        if !out.contains(&hit.value) {
            out.push(hit.value);
        }
    }
    out
}

/// When a question asks about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum When {
    /// No time given.
    Unspecified,
    /// The latest quarter of the data.
    Latest,
    /// One quarter of one year.
    Quarter(i64, i64),
    /// Whole years, `from` to `to` inclusive.
    Years(i64, i64),
    /// Two years compared ("1975 or 1982", "2000 vs 2008"), earlier first.
    Pair(i64, i64),
}

impl When {
    /// The years it covers (inclusive), if any.
    pub fn years(self) -> Option<(i64, i64)> {
        match self {
            When::Quarter(y, _) => Some((y, y)),
            When::Years(a, b) | When::Pair(a, b) => Some((a, b)),
            When::Unspecified | When::Latest => None,
        }
    }

    /// Whether every year it names is outside the data's coverage.
    pub fn outside_coverage(self) -> bool {
        let ((first, first_q), (last, last_q)) = COVERAGE;
        match self {
            When::Quarter(y, q) => (y, q) < (first, first_q) || (y, q) > (last, last_q),
            When::Years(a, b) => b < first || a > last,
            When::Pair(a, b) => {
                let out = |y: i64| y < first || y > last;
                out(a) && out(b)
            }
            When::Unspecified | When::Latest => false,
        }
    }

    /// A short label: `2008`, `2008Q3`, `2000–2005`, `latest`.
    pub fn label(self) -> String {
        match self {
            When::Unspecified => String::new(),
            When::Latest => "latest".to_owned(),
            When::Quarter(y, q) => format!("{y}Q{q}"),
            When::Years(a, b) if a == b => a.to_string(),
            When::Years(a, b) => format!("{a}–{b}"),
            When::Pair(a, b) => format!("{a}, {b}"),
        }
    }
}

/// What to compute over the period.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Aggregate {
    /// The values themselves.
    #[default]
    Values,
    /// The highest value and when.
    Max,
    /// The lowest value and when.
    Min,
    /// The average.
    Avg,
    /// How much it changed.
    Change,
}

const AGGREGATES: &[(&str, Aggregate)] = &[
    ("highest", Aggregate::Max),
    ("maximum", Aggregate::Max),
    ("max", Aggregate::Max),
    ("peak", Aggregate::Max),
    ("peaked", Aggregate::Max),
    ("record", Aggregate::Max),
    ("top", Aggregate::Max),
    ("maximo", Aggregate::Max),
    ("maxima", Aggregate::Max),
    ("mas alto", Aggregate::Max),
    ("mas alta", Aggregate::Max),
    ("pico", Aggregate::Max),
    ("максимал*", Aggregate::Max),
    ("максимум", Aggregate::Max),
    ("наибольш*", Aggregate::Max),
    ("пик*", Aggregate::Max),
    ("самый высок*", Aggregate::Max),
    ("самая высок*", Aggregate::Max),
    ("lowest", Aggregate::Min),
    ("minimum", Aggregate::Min),
    ("min", Aggregate::Min),
    ("trough", Aggregate::Min),
    ("bottom", Aggregate::Min),
    ("minimo", Aggregate::Min),
    ("minima", Aggregate::Min),
    ("mas bajo", Aggregate::Min),
    ("mas baja", Aggregate::Min),
    ("минимал*", Aggregate::Min),
    ("минимум", Aggregate::Min),
    ("наименьш*", Aggregate::Min),
    ("самый низк*", Aggregate::Min),
    ("самая низк*", Aggregate::Min),
    ("average", Aggregate::Avg),
    ("avg", Aggregate::Avg),
    ("promedio", Aggregate::Avg),
    ("media", Aggregate::Avg),
    ("medio", Aggregate::Avg),
    ("средн*", Aggregate::Avg),
    ("change", Aggregate::Change),
    ("changed", Aggregate::Change),
    ("growth", Aggregate::Change),
    ("grow", Aggregate::Change),
    ("grew", Aggregate::Change),
    ("increase", Aggregate::Change),
    ("increased", Aggregate::Change),
    ("rise", Aggregate::Change),
    ("rose", Aggregate::Change),
    ("fall", Aggregate::Change),
    ("fell", Aggregate::Change),
    ("decline", Aggregate::Change),
    ("declined", Aggregate::Change),
    ("cambio", Aggregate::Change),
    ("cambiado", Aggregate::Change),
    ("crecimiento", Aggregate::Change),
    ("crecio", Aggregate::Change),
    ("aumento", Aggregate::Change),
    ("variacion", Aggregate::Change),
    ("cayo", Aggregate::Change),
    ("subio", Aggregate::Change),
    ("рост", Aggregate::Change),
    ("роста", Aggregate::Change),
    ("вырос*", Aggregate::Change),
    ("изменени*", Aggregate::Change),
    ("изменил*", Aggregate::Change),
    ("снизил*", Aggregate::Change),
    ("упал*", Aggregate::Change),
    ("увеличил*", Aggregate::Change),
];

/// What `words` ask to compute (the first cue wins).
pub fn aggregate_in(words: &[String]) -> Aggregate {
    scan(words, AGGREGATES)
        .first()
        .map_or(Aggregate::Values, |h| h.value)
}

const LATEST: &[&str] = &[
    "latest",
    "most recent",
    "last available",
    "last quarter",
    "current",
    "currently",
    "now",
    "today",
    "ultimo",
    "ultima",
    "ultimos datos",
    "mas reciente",
    "actual",
    "actualmente",
    "hoy",
    "ahora",
    "последн*",
    "текущ*",
    "сейчас",
    "сегодня",
];

/// Ordinal words of quarters: phrase -> quarter.
const QUARTER_ORDINALS: &[(&str, i64)] = &[
    ("first", 1),
    ("1st", 1),
    ("second", 2),
    ("2nd", 2),
    ("third", 3),
    ("3rd", 3),
    ("fourth", 4),
    ("4th", 4),
    ("last", 4),
    ("primer", 1),
    ("primero", 1),
    ("segundo", 2),
    ("tercer", 3),
    ("tercero", 3),
    ("cuarto", 4),
    ("перв*", 1),
    ("втор*", 2),
    ("трет*", 3),
    ("четверт*", 4),
];

const QUARTER_WORDS: &[&str] = &["quarter", "trimestre", "квартал*"];

/// Decade names without digits: phrase -> first year.
const DECADES: &[(&str, i64)] = &[
    ("sixties", 1960),
    ("seventies", 1970),
    ("eighties", 1980),
    ("nineties", 1990),
    ("sesenta", 1960),
    ("setenta", 1970),
    ("ochenta", 1980),
    ("noventa", 1990),
    ("шестидесят*", 1960),
    ("семидесят*", 1970),
    ("восьмидесят*", 1980),
    ("девяност*", 1990),
];

/// Words between two years that make them a range ("2000 to 2005", "de 2000 a 2005").
const RANGE_JOINERS: &[&str] = &[
    "to", "through", "until", "till", "thru", "a", "al", "hasta", "по", "до",
];

/// Words before the first of two years that make them a range ("from", "between"...).
const RANGE_OPENERS: &[&str] = &[
    "from",
    "between",
    "since",
    "de",
    "desde",
    "entre",
    "с",
    "между",
];

/// Words between two years that make them a comparison ("1975 or 1982", "2000 vs 2008").
const PAIR_JOINERS: &[&str] = &[
    "or",
    "vs",
    "versus",
    "and",
    "compared",
    "o",
    "y",
    "frente",
    "comparado",
    "или",
    "и",
    "против",
];

/// Two years compared, when the words around them say so (a range otherwise).
fn pair(words: &[String]) -> Option<When> {
    let at: Vec<(usize, i64)> = words
        .iter()
        .enumerate()
        .filter_map(|(i, w)| year_of(w).filter(|_| w.len() == 4).map(|y| (i, y)))
        .collect();
    let [(i, a), (j, b)] = at.as_slice() else {
        return None;
    };
    if a == b {
        return None;
    }
    let between = &words[i + 1..*j];
    let before = i
        .checked_sub(1)
        .and_then(|k| words.get(k))
        .map(String::as_str);
    let has = |list: &[&str]| between.iter().any(|w| list.contains(&w.as_str()));
    let opened = before.is_some_and(|w| RANGE_OPENERS.contains(&w));
    if has(RANGE_JOINERS) || opened || !has(PAIR_JOINERS) {
        return None;
    }
    Some(When::Pair(*a.min(b), *a.max(b)))
}

fn year_of(word: &str) -> Option<i64> {
    let digits: String = word.chars().take_while(char::is_ascii_digit).collect();
    if digits.len() != 4 {
        return None;
    }
    digits.parse().ok().filter(|y| (1800..=2100).contains(y))
}

/// `60`, `70s`, `'80s`: a two-digit decade, as its first year in the 1900s.
fn short_decade(word: &str) -> Option<i64> {
    let digits = word.strip_suffix('s').unwrap_or(word);
    if digits.len() == 2 && digits.ends_with('0') {
        digits.parse::<i64>().ok().map(|d| 1900 + d)
    } else {
        None
    }
}

/// When `words` ask about; see [`When`].
pub fn when_in(words: &[String]) -> When {
    let mut years: Vec<i64> = Vec::new();
    let mut decade: Option<i64> = None;
    let mut quarter: Option<i64> = None;
    for (i, word) in words.iter().enumerate() {
        let next = words.get(i + 1).map(String::as_str).unwrap_or("");
        // 2008q3, q3
        if let Some(year) = year_of(word) {
            let rest = &word[4..];
            if let Some(q) = rest.strip_prefix('q').and_then(|q| q.parse::<i64>().ok())
                && (1..=4).contains(&q)
            {
                quarter = Some(q);
            }
            // 1970s, 1970-х / 1970-е (Russian: the suffix is the next word)
            let decade_suffix = rest == "s"
                || (rest.is_empty() && matches!(next, "х" | "е" | "ых" | "ые") && year % 10 == 0);
            if decade_suffix && year % 10 == 0 {
                decade = Some(year);
            } else {
                years.push(year);
            }
            continue;
        }
        if let Some(q) = word
            .strip_prefix('q')
            .and_then(|q| q.parse::<i64>().ok())
            .filter(|q| (1..=4).contains(q))
        {
            quarter = Some(q);
            continue;
        }
        // 70s, 70-х, "los 70", "años 70", "the 80s"
        if let Some(d) = short_decade(word) {
            let prev = i
                .checked_sub(1)
                .and_then(|p| words.get(p))
                .map(String::as_str)
                .unwrap_or("");
            if word.ends_with('s')
                || matches!(next, "х" | "е" | "ых" | "ые")
                || matches!(prev, "los" | "anos" | "the" | "decada")
            {
                decade = Some(d);
            }
        }
    }
    for hit in scan(words, DECADES) {
        decade = Some(hit.value);
    }
    if quarter.is_none() {
        for i in 0..words.len() {
            for (phrase, q) in QUARTER_ORDINALS {
                let len = match_at(words, i, phrase);
                if len == 0 {
                    continue;
                }
                let after = i + len;
                let quarter_next = QUARTER_WORDS.iter().any(|w| match_at(words, after, w) > 0);
                let quarter_before =
                    i > 0 && QUARTER_WORDS.iter().any(|w| match_at(words, i - 1, w) > 0);
                if quarter_next || quarter_before {
                    quarter = Some(*q);
                }
            }
        }
    }
    years.sort_unstable();
    years.dedup();
    if let ([_, _], None, None) = (years.as_slice(), decade, quarter)
        && let Some(pair) = pair(words)
    {
        return pair;
    }
    match (years.as_slice(), decade, quarter) {
        ([year], None, Some(q)) => When::Quarter(*year, q),
        ([], Some(d), _) => When::Years(d, d + 9),
        ([year], None, None) => When::Years(*year, *year),
        ([first, .., last], _, _) => When::Years(*first, *last),
        ([year], Some(d), _) => When::Years((*year).min(d), (*year).max(d + 9)),
        ([], None, Some(_)) | ([], None, None) => {
            if has_any(words, LATEST) {
                When::Latest
            } else {
                When::Unspecified
            }
        }
    }
}

/// Words that ask for an explanation rather than numbers.
const EXPLAIN: &[&str] = &[
    "what is",
    "what's",
    "what are",
    "what does",
    "what do",
    "define",
    "definition",
    "explain",
    "meaning",
    "mean",
    "means",
    "tell me about",
    "describe",
    "documentation",
    "docs",
    "measured",
    "computed",
    "calculated",
    "que es",
    "que son",
    "que significa",
    "que dice",
    "que dicen",
    "definicion",
    "define",
    "explica",
    "explicame",
    "cuentame",
    "describe",
    "documentacion",
    "se mide",
    "se calcula",
    "что такое",
    "что означает",
    "что значит",
    "что говорит*",
    "объясни*",
    "определени*",
    "расскажи*",
    "опиши*",
    "документаци*",
    "измеряет*",
    "рассчитывает*",
    "считает*",
];

/// Topics only the documents answer (no series column holds them).
const DOC_TOPICS: &[&str] = &[
    "recession*",
    "downturn*",
    "slump*",
    "depression",
    "crisis",
    "oil shock",
    "volcker",
    "data set",
    "dataset",
    "source",
    "sources",
    "coverage",
    "chained",
    "seasonally",
    "saar",
    "glossary",
    "nber",
    "recesion*",
    "crisis",
    "fuente*",
    "datos",
    "рецесси*",
    "кризис*",
    "спад*",
    "источник*",
    "данн*",
];

/// Whether `words` ask for an explanation or a topic only the documents cover.
pub fn asks_explanation(words: &[String]) -> bool {
    has_any(words, EXPLAIN)
}

/// Whether `words` mention a topic only the documents cover.
pub fn mentions_doc_topic(words: &[String]) -> bool {
    has_any(words, DOC_TOPICS)
}

/// Words that carry no topic: question words, pronouns, articles, verbs of asking, in the
/// three languages (folded).
pub const STOP_WORDS: &[&str] = &[
    // English
    "a",
    "about",
    "an",
    "and",
    "any",
    "are",
    "as",
    "at",
    "be",
    "been",
    "by",
    "can",
    "could",
    "did",
    "do",
    "docs",
    "documentation",
    "does",
    "explain",
    "for",
    "from",
    "give",
    "had",
    "has",
    "have",
    "how",
    "i",
    "in",
    "is",
    "it",
    "its",
    "me",
    "mean",
    "means",
    "meaning",
    "my",
    "of",
    "on",
    "or",
    "please",
    "say",
    "says",
    "show",
    "tell",
    "that",
    "the",
    "their",
    "there",
    "this",
    "to",
    "us",
    "was",
    "were",
    "what",
    "what's",
    "when",
    "where",
    "which",
    "who",
    "why",
    "will",
    "with",
    "would",
    "you",
    "your",
    "describe",
    "define",
    "definition",
    "know",
    "find",
    "look",
    "up",
    "search",
    "documents",
    "document",
    "data",
    "set",
    "dataset",
    // Spanish
    "al",
    "como",
    "con",
    "cual",
    "cuales",
    "cuando",
    "de",
    "del",
    "dice",
    "dicen",
    "donde",
    "el",
    "en",
    "es",
    "esta",
    "este",
    "fue",
    "hay",
    "la",
    "las",
    "lo",
    "los",
    "me",
    "mi",
    "para",
    "por",
    "que",
    "se",
    "segun",
    "si",
    "sobre",
    "son",
    "su",
    "un",
    "una",
    "y",
    "explica",
    "explicame",
    "cuentame",
    "dime",
    "significa",
    "busca",
    "documentacion",
    "documentos",
    "datos",
    "vale",
    "bueno",
    "pues",
    "entonces",
    "ahora",
    "tambien",
    // Russian
    "а",
    "в",
    "во",
    "где",
    "говорит",
    "говорят",
    "для",
    "и",
    "из",
    "как",
    "какая",
    "какие",
    "какой",
    "каков",
    "ли",
    "мне",
    "на",
    "о",
    "об",
    "объясни",
    "по",
    "про",
    "расскажи",
    "с",
    "такое",
    "то",
    "что",
    "это",
    "документации",
    "документация",
    "данных",
    "данные",
    "был",
    "была",
    "было",
    "были",
    "ok",
    "okay",
    "so",
    "well",
    "then",
    "now",
    "also",
    "just",
    "still",
    "ладно",
    "хорошо",
    "ну",
    "теперь",
    "тоже",
    "также",
    "этот",
    "эта",
    "эти",
];

/// Whether `word` is a stop word.
pub fn is_stop_word(word: &str) -> bool {
    STOP_WORDS.contains(&word)
}

/// The content words of `text` (stop words and numbers out), in order.
pub fn key_terms(text: &str) -> Vec<String> {
    words(text)
        .into_iter()
        .filter(|w| !is_stop_word(w) && !w.chars().all(|c| c.is_ascii_digit()))
        .collect()
}

/// What a question asks, as far as the data and the documents go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Question {
    /// Series mentioned, in order.
    pub series: Vec<&'static str>,
    /// The period.
    pub when: When,
    /// What to compute.
    pub aggregate: Aggregate,
    /// Whether it asks for an explanation ("what is", "explain"...).
    pub explain: bool,
    /// Whether it mentions a topic only the documents cover (recessions, sources...).
    pub doc_topic: bool,
}

impl Question {
    /// The analysis of `text`.
    pub fn parse(text: &str) -> Question {
        let words = words(text);
        Question {
            series: series_in(&words),
            when: when_in(&words),
            aggregate: aggregate_in(&words),
            explain: asks_explanation(&words),
            doc_topic: mentions_doc_topic(&words),
        }
    }

    /// Whether it asks for numbers from the table (a series with a period or a computation,
    /// or a series without an explanation cue).
    pub fn wants_data(&self) -> bool {
        if self.series.is_empty() {
            return false;
        }
        let numbers = self.when != When::Unspecified || self.aggregate != Aggregate::Values;
        numbers || !(self.explain || self.doc_topic)
    }

    /// Whether it asks the documents.
    pub fn wants_docs(&self) -> bool {
        !self.wants_data() && (self.explain || self.doc_topic)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(text: &str) -> Vec<String> {
        words(text)
    }

    #[test]
    fn series_in_three_languages() {
        assert_eq!(series_in(&w("What was US GDP in 2008?")), ["realgdp"]);
        assert_eq!(
            series_in(&w("¿Cuál fue la tasa de paro en 1982?")),
            ["unemp"]
        );
        assert_eq!(
            series_in(&w("Какой была безработица в 1982 году?")),
            ["unemp"]
        );
        assert_eq!(series_in(&w("ВВП и инфляция в 2008")), ["realgdp", "infl"]);
        assert_eq!(
            series_in(&w("the real interest rate and the interest rate")),
            ["realint", "tbilrate"]
        );
        assert_eq!(series_in(&w("consumer price index")), ["cpi"]);
        assert_eq!(series_in(&w("денежной массы М1")), ["m1"]);
        assert!(series_in(&w("hello there")).is_empty());
    }

    #[test]
    fn periods() {
        assert_eq!(when_in(&w("GDP in 2008")), When::Years(2008, 2008));
        assert_eq!(when_in(&w("GDP in 2008Q3")), When::Quarter(2008, 3));
        assert_eq!(when_in(&w("GDP in Q3 2008")), When::Quarter(2008, 3));
        assert_eq!(when_in(&w("third quarter of 2008")), When::Quarter(2008, 3));
        assert_eq!(
            when_in(&w("tercer trimestre de 2008")),
            When::Quarter(2008, 3)
        );
        assert_eq!(
            when_in(&w("в третьем квартале 2008 года")),
            When::Quarter(2008, 3)
        );
        assert_eq!(when_in(&w("from 2000 to 2005")), When::Years(2000, 2005));
        assert_eq!(when_in(&w("entre 2005 y 2000")), When::Years(2000, 2005));
        assert_eq!(when_in(&w("in the 1970s")), When::Years(1970, 1979));
        assert_eq!(when_in(&w("in the 70s")), When::Years(1970, 1979));
        assert_eq!(when_in(&w("en los años 80")), When::Years(1980, 1989));
        assert_eq!(when_in(&w("в 1970-х")), When::Years(1970, 1979));
        assert_eq!(when_in(&w("в семидесятых")), When::Years(1970, 1979));
        assert_eq!(when_in(&w("the latest unemployment rate")), When::Latest);
        assert_eq!(when_in(&w("последний ВВП")), When::Latest);
        assert_eq!(when_in(&w("GDP")), When::Unspecified);
        assert_eq!(
            when_in(&w("higher in 1982 or 1975?")),
            When::Pair(1975, 1982)
        );
        assert_eq!(
            when_in(&w("unemployment 1982 vs 2009")),
            When::Pair(1982, 2009)
        );
        assert_eq!(when_in(&w("¿en 1990 o en 2000?")), When::Pair(1990, 2000));
        assert_eq!(
            when_in(&w("between 2000 and 2005")),
            When::Years(2000, 2005)
        );
        assert_eq!(when_in(&w("в 1990 и 2000 годах")), When::Pair(1990, 2000));
        assert_eq!(when_in(&w("de 2000 a 2005")), When::Years(2000, 2005));
        assert_eq!(when_in(&w("с 1990 по 2000")), When::Years(1990, 2000));
        assert_eq!(
            when_in(&w("¿Cuál fue la tasa de paro en 1990 o 2000?")),
            When::Pair(1990, 2000)
        );
    }

    #[test]
    fn coverage() {
        assert!(When::Years(2012, 2012).outside_coverage());
        assert!(When::Quarter(2009, 4).outside_coverage());
        assert!(!When::Quarter(2009, 3).outside_coverage());
        assert!(!When::Years(2005, 2012).outside_coverage());
        assert!(When::Years(1950, 1955).outside_coverage());
    }

    #[test]
    fn aggregates() {
        assert_eq!(aggregate_in(&w("highest unemployment")), Aggregate::Max);
        assert_eq!(
            aggregate_in(&w("¿Cuál fue el paro más alto?")),
            Aggregate::Max
        );
        assert_eq!(aggregate_in(&w("минимальная инфляция")), Aggregate::Min);
        assert_eq!(
            aggregate_in(&w("average inflation in the 1970s")),
            Aggregate::Avg
        );
        assert_eq!(aggregate_in(&w("inflación media")), Aggregate::Avg);
        assert_eq!(aggregate_in(&w("how much did GDP grow")), Aggregate::Change);
        assert_eq!(aggregate_in(&w("рост ВВП в 2008")), Aggregate::Change);
        assert_eq!(aggregate_in(&w("GDP in 2008")), Aggregate::Values);
    }

    #[test]
    fn data_or_documents() {
        assert!(Question::parse("What was GDP in 2008?").wants_data());
        assert!(Question::parse("What is the unemployment rate in 2009Q3?").wants_data());
        assert!(Question::parse("unemployment?").wants_data());
        assert!(Question::parse("What is M1?").wants_docs());
        assert!(Question::parse("¿Qué es el IPC?").wants_docs());
        assert!(Question::parse("Что такое ИПЦ?").wants_docs());
        assert!(Question::parse("When were the recessions?").wants_docs());
        assert!(!Question::parse("hello").wants_docs());
        assert!(!Question::parse("hello").wants_data());
    }

    #[test]
    fn key_terms_drop_question_words() {
        assert_eq!(
            key_terms("What do the docs say about joblessness?"),
            ["joblessness"]
        );
        assert_eq!(key_terms("¿Qué es el IPC?"), ["ipc"]);
        assert_eq!(key_terms("Что такое инфляция?"), ["инфляция"]);
    }
}
