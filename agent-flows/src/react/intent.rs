//! What a message asks the ReAct flow for, read by rules in English, Spanish and Russian: text
//! to echo, arithmetic, and the time somewhere. The static `tool_selector`, the critic (what
//! the evidence must cover), `model_router` ("the prompt asks for `echo`") and the offline
//! model all read a message through [`analyze`], so they agree on what was asked.
//!
//! Echo requests have a small grammar of their own:
//!
//! - a trigger verb in the imperative — `echo`, `repeat`, `say back`, `repeat after me`;
//!   `repite`, `repíteme`, `haz eco de`, `devuélveme`; `повтори`, `повторите`, `скажи за мной` —
//!   or `say` / `di` / `скажи` when a quotation follows;
//! - at the start of a clause, after nothing but lead-in words (`please`, `can you`,
//!   `por favor`, `¿puedes`, `пожалуйста`, `можешь`...), so "what is an echo?" asks for
//!   nothing;
//! - then optional filler (`back`, `this`, `the following`, `lo siguiente`, `это`...), an
//!   optional colon, and the text: a quotation (`"..."`, `«...»`, `“...”`, `'...'`, `„...“`)
//!   taken exactly, or the rest of the clause, which ends at a sentence break or at a
//!   conjunction that starts another request ("echo hi and what time is it in Lima?").
//!
//! The echo clause is taken out before arithmetic and places are looked for, so "echo 2+2"
//! asks for an echo, not a sum. Arithmetic is found per clause with the tool router's grammar
//! (symbols or operator words), places with its gazetteer; the time is asked when a time word
//! shows (`time`, `hora`, `который час`, `date`, `fecha`, `дата`...), in UTC when no place is
//! named.

use crate::lang::{self, Lang, words};
use crate::tool_router::{arithmetic, places};

/// What a message asks for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Intents {
    /// The language of the request (the instruction, not the text to echo).
    pub lang: Lang,
    /// The text to echo, when the message asks for an echo (empty when the verb came without
    /// any text).
    pub echo: Option<String>,
    /// Arithmetic expressions, in the order asked, each once.
    pub expressions: Vec<String>,
    /// Times asked for, in the order asked.
    pub times: Vec<TimeAsk>,
    /// Place names after "in"/"en"/"в" that the gazetteer does not know.
    pub unknown_places: Vec<String>,
}

/// A time asked for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TimeAsk {
    /// The IANA zone (`UTC` when no place was named).
    pub zone: String,
    /// The place as written, when one was named.
    pub place: Option<String>,
}

/// One thing a tool can do for the message: what the critic checks the evidence against.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Need {
    /// Echo this text.
    Echo(String),
    /// Evaluate this expression.
    Calculate(String),
    /// The time in this zone (named place, if any).
    Time(TimeAsk),
}

impl Need {
    /// The tool that meets it.
    pub fn tool(&self) -> &'static str {
        match self {
            Need::Echo(_) => "echo",
            Need::Calculate(_) => "calculator",
            Need::Time(_) => "datetime",
        }
    }

    /// Its arguments for that tool.
    pub fn args(&self) -> serde_json::Value {
        match self {
            Need::Echo(text) => serde_json::json!({ "text": text }),
            Need::Calculate(expression) => serde_json::json!({ "expression": expression }),
            Need::Time(ask) => serde_json::json!({ "timezone": ask.zone }),
        }
    }

    /// A short label for reviews: `echo`, `calculate 2 + 2`, `time in Tokyo`.
    pub fn label(&self) -> String {
        match self {
            Need::Echo(_) => "echo".to_owned(),
            Need::Calculate(expression) => format!("calculate {expression}"),
            Need::Time(TimeAsk {
                place: Some(place), ..
            }) => format!("time in {place}"),
            Need::Time(TimeAsk { zone, .. }) => format!("time in {zone}"),
        }
    }
}

impl Intents {
    /// Everything a tool can do for the message, in order: the echo, the calculations, the
    /// times.
    pub fn needs(&self) -> Vec<Need> {
        let mut needs = Vec::new();
        if let Some(text) = &self.echo {
            needs.push(Need::Echo(text.clone()));
        }
        needs.extend(self.expressions.iter().cloned().map(Need::Calculate));
        needs.extend(self.times.iter().cloned().map(Need::Time));
        needs
    }

    /// Whether the message asks for an echo.
    pub fn asks_echo(&self) -> bool {
        self.echo.is_some()
    }
}

/// Reads `text`; see the module docs.
pub fn analyze(text: &str) -> Intents {
    let tokens = tokenize(text);
    let echo = find_echo(text, &tokens);
    let (rest, instruction, trigger_lang) = match &echo {
        Some(found) => (
            format!("{} {}", &text[..found.clause.0], &text[found.clause.1..]),
            format!("{} {}", &text[..found.payload.0], &text[found.payload.1..]),
            Some(found.lang),
        ),
        None => (text.to_owned(), text.to_owned(), None),
    };
    let detected = lang::detect(&instruction);
    let lang = match (detected, trigger_lang) {
        (Lang::En, Some(trigger)) if !has_english_words(&instruction) => trigger,
        (detected, _) => detected,
    };

    let mut expressions: Vec<String> = Vec::new();
    for clause in clauses(&rest) {
        if let Some(expression) = arithmetic::expression(clause)
            && !expressions.contains(&expression)
        {
            expressions.push(expression);
        }
    }

    let mut times = Vec::new();
    let mut unknown_places = Vec::new();
    if asks_time(&rest) {
        let found = places::extract(&rest);
        for place in &found.known {
            times.push(TimeAsk {
                zone: place.zone.clone(),
                place: Some(place.written.clone()),
            });
        }
        if found.known.is_empty() && found.unknown.is_empty() {
            times.push(TimeAsk {
                zone: "UTC".to_owned(),
                place: None,
            });
        }
        unknown_places = found.unknown;
    }

    Intents {
        lang,
        echo: echo.map(|found| found.text),
        expressions,
        times,
        unknown_places,
    }
}

/// A word of the text: where it is, and its folded form.
#[derive(Clone, Debug)]
struct Token {
    start: usize,
    end: usize,
    folded: String,
}

fn tokenize(text: &str) -> Vec<Token> {
    let mut tokens = Vec::new();
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let mut start: Option<usize> = None;
    for (k, &(at, c)) in chars.iter().enumerate() {
        let inner_apostrophe = matches!(c, '\'' | '’')
            && start.is_some()
            && chars.get(k + 1).is_some_and(|(_, n)| n.is_alphanumeric());
        if c.is_alphanumeric() || inner_apostrophe {
            start.get_or_insert(at);
        } else if let Some(s) = start.take() {
            tokens.push(token(text, s, at));
        }
    }
    if let Some(s) = start {
        tokens.push(token(text, s, text.len()));
    }
    tokens
}

fn token(text: &str, start: usize, end: usize) -> Token {
    Token {
        start,
        end,
        folded: lang::fold(&text[start..end]),
    }
}

/// Echo verbs (folded words), their language, and whether they need a quotation after them.
const TRIGGERS: &[(&str, Lang, bool)] = &[
    ("repeat after me", Lang::En, false),
    ("say after me", Lang::En, false),
    ("say back", Lang::En, false),
    ("echo back", Lang::En, false),
    ("repeat back", Lang::En, false),
    ("echo", Lang::En, false),
    ("repeat", Lang::En, false),
    ("parrot", Lang::En, false),
    ("say", Lang::En, true),
    ("haz eco de", Lang::Es, false),
    ("haz eco", Lang::Es, false),
    ("hazme eco de", Lang::Es, false),
    ("eco de", Lang::Es, false),
    ("eco", Lang::Es, false),
    ("repite", Lang::Es, false),
    ("repiteme", Lang::Es, false),
    ("repita", Lang::Es, false),
    ("repitame", Lang::Es, false),
    ("repetir", Lang::Es, false),
    ("devuelveme", Lang::Es, false),
    ("di", Lang::Es, true),
    ("dime", Lang::Es, true),
    ("повтори за мной", Lang::Ru, false),
    ("скажи за мной", Lang::Ru, false),
    ("повтори", Lang::Ru, false),
    ("повторите", Lang::Ru, false),
    ("повторить", Lang::Ru, false),
    ("эхо", Lang::Ru, false),
    ("скажи", Lang::Ru, true),
];

/// Words allowed before a trigger in its clause (politeness, modals, connectives).
const LEAD_IN: &[&str] = &[
    "please",
    "can",
    "could",
    "would",
    "will",
    "you",
    "kindly",
    "just",
    "now",
    "then",
    "and",
    "ok",
    "okay",
    "hey",
    "hi",
    "hello",
    "also",
    "simply",
    "por",
    "favor",
    "puedes",
    "podrias",
    "podria",
    "puede",
    "ahora",
    "y",
    "luego",
    "solo",
    "tambien",
    "hola",
    "vale",
    "oye",
    "me",
    "пожалуйста",
    "можешь",
    "можете",
    "ты",
    "вы",
    "и",
    "теперь",
    "затем",
    "просто",
    "привет",
    "также",
    "ну",
];

/// Modal lead-ins that make the request a question ("can you echo hi?"): a final `?` belongs
/// to the question, not to the text.
const MODALS: &[&str] = &[
    "can",
    "could",
    "would",
    "will",
    "puedes",
    "podrias",
    "podria",
    "puede",
    "можешь",
    "можете",
];

/// Words skipped between a trigger and its text. The demonstratives ("this", "esto", "это")
/// only when a colon or a quotation follows them ("echo this: hi"); otherwise they are the
/// text ("echo this sentence").
const FILLERS: &[(&str, bool)] = &[
    ("back", false),
    ("the following", false),
    ("following", false),
    ("the text", false),
    ("the phrase", false),
    ("the words", false),
    ("me", false),
    ("after me", false),
    ("please", false),
    ("lo siguiente", false),
    ("el texto", false),
    ("la frase", false),
    ("por favor", false),
    ("следующее", false),
    ("текст", false),
    ("фразу", false),
    ("пожалуйста", false),
    ("this", true),
    ("that", true),
    ("esto", true),
    ("eso", true),
    ("esta frase", true),
    ("это", true),
];

/// Conjunctions that may start another request inside an unquoted echo text.
const CONJUNCTIONS: &[&str] = &[
    "and",
    "then",
    "also",
    "plus",
    "y",
    "e",
    "luego",
    "despues",
    "tambien",
    "ademas",
    "и",
    "а",
    "затем",
    "потом",
    "также",
    "ещё",
    "еще",
];

/// Words that start another request after a conjunction ("... and what time is it?").
const REQUEST_STARTERS: &[&str] = &[
    "what",
    "what's",
    "whats",
    "how",
    "tell",
    "calculate",
    "compute",
    "give",
    "which",
    "when",
    "where",
    "is",
    "que",
    "cuanto",
    "cuanta",
    "cuantos",
    "cual",
    "calcula",
    "calcular",
    "dime",
    "dame",
    "como",
    "donde",
    "cuando",
    "который",
    "сколько",
    "какое",
    "какой",
    "посчитай",
    "вычисли",
    "скажи",
    "что",
    "где",
    "когда",
];

/// Polite endings dropped from an unquoted echo text.
const POLITE_ENDINGS: &[&str] = &["please", "por favor", "пожалуйста", "thanks", "gracias"];

/// The words of [`POLITE_ENDINGS`].
const POLITE_WORDS: &[&str] = &["please", "por", "favor", "пожалуйста", "thanks", "gracias"];

/// Opening quotation marks and their closing ones.
const QUOTES: &[(char, char)] = &[
    ('"', '"'),
    ('“', '”'),
    ('«', '»'),
    ('„', '“'),
    ('\'', '\''),
    ('‘', '’'),
    ('‹', '›'),
];

/// An echo request found in a text.
#[derive(Clone, Debug, PartialEq, Eq)]
struct EchoFound {
    /// The text to echo.
    text: String,
    /// Byte range of the whole request (trigger to end of text), to take out before other
    /// intents are looked for.
    clause: (usize, usize),
    /// Byte range of the text to echo (quotes included), to take out before the language is
    /// detected.
    payload: (usize, usize),
    /// The trigger's language.
    lang: Lang,
}

fn find_echo(text: &str, tokens: &[Token]) -> Option<EchoFound> {
    for i in 0..tokens.len() {
        for &(trigger, lang, needs_quote) in TRIGGERS {
            let Some(len) = matches_phrase(tokens, i, trigger) else {
                continue;
            };
            let Some(lead) = lead_in(text, tokens, i) else {
                continue;
            };
            if let Some(found) = payload(text, tokens, i, len, lang, needs_quote, lead) {
                return Some(found);
            }
        }
    }
    None
}

/// How many tokens `phrase` covers when it starts at `tokens[i]`.
fn matches_phrase(tokens: &[Token], i: usize, phrase: &str) -> Option<usize> {
    let phrase = words(phrase);
    let end = i + phrase.len();
    (end <= tokens.len()
        && tokens[i..end]
            .iter()
            .zip(&phrase)
            .all(|(t, p)| t.folded == *p))
    .then_some(phrase.len())
}

/// What stands before a trigger in its clause.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct LeadIn {
    /// Where the clause starts.
    clause_start: usize,
    /// Whether the lead-in makes a question of it ("can you...", "¿...").
    question: bool,
}

/// `Some` when only lead-in words stand between the start of the trigger's clause and the
/// trigger.
fn lead_in(text: &str, tokens: &[Token], i: usize) -> Option<LeadIn> {
    let mut question = false;
    let mut k = i;
    let mut clause_start = 0;
    while k > 0 {
        let previous = &tokens[k - 1];
        let between = &text[previous.end..tokens[k].start];
        if let Some(at) = between.rfind(['.', ';', ':', '!', '?', '¡', '¿', '\n', ',', '(']) {
            clause_start = previous.end + at;
            if between[at..].starts_with('¿') {
                question = true;
            }
            break;
        }
        if !LEAD_IN.contains(&previous.folded.as_str()) {
            return None;
        }
        if MODALS.contains(&previous.folded.as_str()) {
            question = true;
        }
        k -= 1;
    }
    if k == 0 && text[..tokens[i].start].contains('¿') {
        question = true;
    }
    Some(LeadIn {
        clause_start,
        question,
    })
}

/// The text of the echo request whose trigger covers `tokens[i..i + len]`.
fn payload(
    text: &str,
    tokens: &[Token],
    i: usize,
    len: usize,
    lang: Lang,
    needs_quote: bool,
    lead: LeadIn,
) -> Option<EchoFound> {
    // Skip fillers ("back", "lo siguiente"...), longest first, when text follows them.
    let mut next = i + len;
    loop {
        let filler = FILLERS
            .iter()
            .filter_map(|(f, before_mark)| {
                let n = matches_phrase(tokens, next, f)?;
                let end = tokens[next + n - 1].end;
                let marked = quote_after(text, end) || text[end..].trim_start().starts_with(':');
                let more = tokens[next + n..]
                    .iter()
                    .any(|t| !POLITE_WORDS.contains(&t.folded.as_str()));
                (marked || (!before_mark && more)).then_some(n)
            })
            .max();
        match filler {
            Some(n) => next += n,
            None => break,
        }
    }
    let mut at = tokens[next - 1].end;
    let after = &text[at..];
    let trimmed = after.trim_start();
    at += after.len() - trimmed.len();
    let mut rest = &text[at..];
    for mark in [':', '-', '—', '–'] {
        if let Some(stripped) = rest.strip_prefix(mark) {
            let stripped_trim = stripped.trim_start();
            at += rest.len() - stripped_trim.len();
            rest = stripped_trim;
            break;
        }
    }
    if let Some((open, close)) = QUOTES.iter().find(|(open, _)| rest.starts_with(*open)) {
        let inner = &rest[open.len_utf8()..];
        let end = inner.find(*close)?;
        let payload_end = at + open.len_utf8() + end + close.len_utf8();
        return Some(EchoFound {
            text: inner[..end].to_owned(),
            clause: (lead.clause_start, payload_end),
            payload: (at, payload_end),
            lang,
        });
    }
    if needs_quote {
        return None;
    }
    let end = at + unquoted_end(rest);
    let mut shown = text[at..end].trim_end();
    // Polite endings and the sentence's own final punctuation are not part of the text.
    let mut dropped = true;
    while dropped {
        dropped = false;
        for polite in POLITE_ENDINGS {
            if lang::fold(shown).ends_with(polite) {
                let head = &shown[..shown.len() - trailing_bytes(shown, polite.chars().count())];
                let kept = head.trim_end().trim_end_matches(',').trim_end();
                if !kept.is_empty() && head.ends_with(|c: char| c.is_whitespace() || c == ',') {
                    shown = kept;
                    dropped = true;
                }
            }
        }
        if let Some(stripped) = shown.strip_suffix(['.', '…']) {
            shown = stripped.trim_end();
            dropped = true;
        }
        if lead.question
            && let Some(stripped) = shown.strip_suffix('?')
        {
            shown = stripped.trim_end();
            dropped = true;
        }
    }
    Some(EchoFound {
        text: shown.to_owned(),
        clause: (lead.clause_start, end),
        payload: (at, end),
        lang,
    })
}

/// Whether a quotation mark comes after `at` (skipping spaces and a colon).
fn quote_after(text: &str, at: usize) -> bool {
    let rest = text[at..].trim_start();
    let rest = rest.strip_prefix(':').unwrap_or(rest).trim_start();
    QUOTES.iter().any(|(open, _)| rest.starts_with(*open))
}

/// How many bytes the last `chars` characters of `text` take.
fn trailing_bytes(text: &str, chars: usize) -> usize {
    text.char_indices()
        .rev()
        .nth(chars.saturating_sub(1))
        .map_or(text.len(), |(at, _)| text.len() - at)
}

/// Where an unquoted echo text ends in `rest`: at a sentence break (`.`, `;`, `!`, `?`
/// followed by a space), a new line, or a conjunction that starts another request.
fn unquoted_end(rest: &str) -> usize {
    let mut end = rest.len();
    let chars: Vec<(usize, char)> = rest.char_indices().collect();
    for (k, &(at, c)) in chars.iter().enumerate() {
        let next = chars.get(k + 1).map(|&(_, n)| n);
        if c == '\n'
            || (matches!(c, '.' | ';' | '!' | '?') && next.is_some_and(char::is_whitespace))
        {
            // `!` and `?` belong to the echoed sentence; `.` and `;` end it.
            end = if matches!(c, '!' | '?') {
                at + c.len_utf8()
            } else {
                at
            };
            break;
        }
    }
    let head = &rest[..end];
    let tokens = tokenize(head);
    for k in 1..tokens.len().saturating_sub(1) {
        let word = tokens[k].folded.as_str();
        let starts_request = REQUEST_STARTERS.contains(&tokens[k + 1].folded.as_str())
            || TRIGGERS
                .iter()
                .any(|(t, _, _)| matches_phrase(&tokens, k + 1, t).is_some());
        let comma_before = head[tokens[k - 1].end..tokens[k].start].contains(',');
        if CONJUNCTIONS.contains(&word) && starts_request {
            let cut = if comma_before {
                tokens[k - 1].end
            } else {
                tokens[k].start
            };
            return head[..cut].trim_end().len();
        }
    }
    end
}

fn has_english_words(text: &str) -> bool {
    const ENGLISH: &[&str] = &[
        "the", "a", "an", "and", "please", "can", "could", "you", "what", "is", "to", "me", "this",
        "of", "in", "it", "back", "after", "would", "now", "then",
    ];
    words(text).iter().any(|w| ENGLISH.contains(&w.as_str()))
}

/// Clauses to look for arithmetic in: split at `?`, `!`, `;`, new lines and ", ".
fn clauses(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let bytes: Vec<(usize, char)> = text.char_indices().collect();
    for (k, &(at, c)) in bytes.iter().enumerate() {
        let comma = c == ',' && bytes.get(k + 1).is_some_and(|&(_, n)| n == ' ');
        if matches!(c, '?' | '!' | ';' | '\n' | '¿' | '¡') || comma {
            out.push(&text[start..at]);
            start = at + c.len_utf8();
        }
    }
    out.push(&text[start..]);
    out.into_iter().filter(|c| !c.trim().is_empty()).collect()
}

/// Words that ask for the time or the date.
const TIME_WORDS: &[&str] = &[
    "time",
    "clock",
    "hour",
    "date",
    "hora",
    "horas",
    "fecha",
    "час",
    "время",
    "времени",
    "часов",
    "дата",
    "число",
];

/// Phrases that ask for the day.
const DAY_PHRASES: &[&str] = &[
    "what day",
    "which day",
    "que dia",
    "en que dia",
    "какой день",
    "какой сегодня день",
];

fn asks_time(text: &str) -> bool {
    let words = words(text);
    words.iter().any(|w| TIME_WORDS.contains(&w.as_str()))
        || DAY_PHRASES.iter().any(|p| lang::contains_phrase(&words, p))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn echo(text: &str) -> Option<String> {
        analyze(text).echo
    }

    #[test]
    fn echo_requests_in_three_languages() {
        for (text, expected) in [
            ("echo hola mundo", "hola mundo"),
            ("Echo: hello world.", "hello world"),
            ("please echo \"Hello, World!\"", "Hello, World!"),
            ("Can you echo hi there?", "hi there"),
            (
                "repeat after me: the quick brown fox",
                "the quick brown fox",
            ),
            ("Say back «ok computer»", "ok computer"),
            ("say 'exactly this'", "exactly this"),
            ("Repite: buenos días", "buenos días"),
            ("¿Puedes repetir «hola, ¿qué tal?»?", "hola, ¿qué tal?"),
            ("haz eco de esto por favor", "esto"),
            (
                "Por favor, repite lo siguiente: nos vemos mañana",
                "nos vemos mañana",
            ),
            ("di «adiós»", "adiós"),
            ("Повтори: привет, мир", "привет, мир"),
            ("пожалуйста, повтори «доброе утро»", "доброе утро"),
            ("скажи за мной: раз два три", "раз два три"),
            ("echo wow!", "wow!"),
            ("echo 2+2", "2+2"),
        ] {
            assert_eq!(echo(text).as_deref(), Some(expected), "{text}");
        }
    }

    #[test]
    fn echo_is_not_a_noun_nor_a_plain_say() {
        for text in [
            "What is an echo?",
            "the echo of the canyon",
            "say hello to Ana",
            "dime la hora en Lima",
            "скажи, который час",
            "I repeat myself a lot",
            "¿Qué hora es en Tokio?",
        ] {
            assert_eq!(echo(text), None, "{text}");
        }
    }

    #[test]
    fn an_echo_without_text_is_still_asked() {
        assert_eq!(echo("echo").as_deref(), Some(""));
        assert_eq!(echo("Repite.").as_deref(), Some(""));
    }

    #[test]
    fn the_echo_text_ends_where_another_request_starts() {
        let intents = analyze("echo hola mundo and what time is it in Tokyo?");
        assert_eq!(intents.echo.as_deref(), Some("hola mundo"));
        assert_eq!(intents.times.len(), 1);
        assert_eq!(intents.times[0].zone, "Asia/Tokyo");
        let intents = analyze("Repite «hola» y ¿cuánto es 12*(3+4)?");
        assert_eq!(intents.echo.as_deref(), Some("hola"));
        assert_eq!(intents.expressions, ["12 * (3 + 4)"]);
        assert_eq!(intents.lang, Lang::Es);
        let intents = analyze("echo this sentence. Then what is 2 plus 3?");
        assert_eq!(intents.echo.as_deref(), Some("this sentence"));
        assert_eq!(intents.expressions, ["2 + 3"]);
    }

    #[test]
    fn echoed_numbers_are_not_arithmetic() {
        let intents = analyze("echo 2+2");
        assert!(intents.expressions.is_empty());
        assert_eq!(intents.needs(), [Need::Echo("2+2".into())]);
    }

    #[test]
    fn the_language_is_the_instructions_not_the_echoed_texts() {
        assert_eq!(analyze("echo hola mundo, amigo").lang, Lang::En);
        assert_eq!(analyze("repite hello world").lang, Lang::Es);
        assert_eq!(analyze("повтори hello").lang, Lang::Ru);
        assert_eq!(analyze("Can you repeat 'hola'?").lang, Lang::En);
    }

    #[test]
    fn arithmetic_and_times_in_order() {
        let intents = analyze("How much is 12*(3+4), and what time is it in Sydney and Lima?");
        assert_eq!(intents.expressions, ["12 * (3 + 4)"]);
        let zones: Vec<&str> = intents.times.iter().map(|t| t.zone.as_str()).collect();
        assert_eq!(zones, ["Australia/Sydney", "America/Lima"]);
        let intents = analyze("¿Cuánto es 15 por 3? ¿Y 10 dividido entre 4?");
        assert_eq!(intents.expressions, ["15 * 3", "10 / 4"]);
        let intents = analyze("Который час в Москве?");
        assert_eq!(intents.times[0].zone, "Europe/Moscow");
        assert_eq!(intents.lang, Lang::Ru);
        let intents = analyze("what's the date today?");
        assert_eq!(
            intents.times,
            [TimeAsk {
                zone: "UTC".into(),
                place: None
            }]
        );
        let intents = analyze("¿Qué hora es en Atlantis?");
        assert!(intents.times.is_empty());
        assert_eq!(intents.unknown_places, ["Atlantis"]);
        assert!(analyze("I love Paris").needs().is_empty());
    }

    #[test]
    fn needs_name_their_tools() {
        let needs = analyze("echo hi; 2*3; time in Oslo").needs();
        let tools: Vec<&str> = needs.iter().map(Need::tool).collect();
        assert_eq!(tools, ["echo", "calculator", "datetime"]);
        assert_eq!(needs[2].label(), "time in Oslo");
        assert_eq!(needs[1].args(), serde_json::json!({"expression": "2 * 3"}));
    }
}
