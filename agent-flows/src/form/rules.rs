//! The form's language rules, Spanish and English: which language a message is in, which
//! fields it names, whether it corrects a value, whether it is off topic, the values it holds,
//! and whether it asks for a person. Plain functions over folded words and a few patterns; the
//! nodes use them for the clear cases and the offline model for the ones the seed gives to an
//! LLM.

use std::sync::LazyLock;

use regex::Regex;

use super::spec::{FieldSpec, FieldType, FormSpec};
use crate::lang::{Lang, contains_phrase, fold, words};

// ---------------------------------------------------------------------------------------------
// Language

/// Spanish cue words (folded).
const ES_CUES: &[&str] = &[
    "mi", "es", "llamo", "nombre", "soy", "el", "la", "los", "las", "un", "una", "de", "del",
    "que", "y", "en", "por", "para", "con", "hola", "gracias", "como", "cual", "donde", "quiero",
    "necesito", "hablar", "correo", "telefono", "esta", "estoy", "eso", "esto", "si", "tengo",
    "pregunta", "otra", "tiempo", "clima", "realidad", "deberia", "ser", "dejame", "corregir",
    "mal", "buenos", "buenas", "dias", "tu", "su", "perdon", "vale", "bueno", "pero", "muy",
    "humano", "persona", "agente", "ayuda", "favor", "ahora", "nada", "todo", "numero", "gusto",
];

/// English cue words.
const EN_CUES: &[&str] = &[
    "my", "is", "name", "i", "i'm", "im", "the", "a", "an", "and", "of", "to", "in", "for", "with",
    "hi", "hello", "hey", "thanks", "thank", "what", "how", "where", "who", "why", "which", "need",
    "want", "talk", "speak", "please", "yes", "it's", "its", "it", "you", "your", "this", "that",
    "actually", "should", "be", "phone", "number", "human", "person", "help", "wrong", "good",
    "morning", "weather", "like", "am", "are", "was", "have", "has", "do", "does", "can", "could",
    "would", "sorry", "mistake", "correct", "question", "another", "call",
];

/// The language of `text` when it shows (Spanish or English), `None` when it does not (a bare
/// email, a number, "ok"). Emails and URLs are left out: their parts are not words.
pub fn language(text: &str) -> Option<Lang> {
    let plain: String = text
        .split_whitespace()
        .filter(|t| !t.contains('@') && !t.contains("://") && !t.starts_with("www."))
        .collect::<Vec<_>>()
        .join(" ");
    let ws = words(&plain);
    let marks = plain
        .chars()
        .filter(|c| matches!(c, '¿' | '¡' | 'ñ' | 'Ñ'))
        .count();
    let es = ws.iter().filter(|w| ES_CUES.contains(&w.as_str())).count() + 2 * marks;
    let en = ws.iter().filter(|w| EN_CUES.contains(&w.as_str())).count();
    match es.cmp(&en) {
        std::cmp::Ordering::Greater => Some(Lang::Es),
        std::cmp::Ordering::Less => Some(Lang::En),
        std::cmp::Ordering::Equal => None,
    }
}

// ---------------------------------------------------------------------------------------------
// Clauses, phrases, negation

/// Words that negate what follows within three words.
const NEGATORS: &[&str] = &[
    "no", "nunca", "jamas", "ni", "not", "never", "don't", "dont", "doesn't", "didn't", "won't",
    "without", "sin",
];

/// The clauses of `text` (split at punctuation), each as folded words.
fn clauses(text: &str) -> Vec<Vec<String>> {
    text.split([',', '.', ';', '!', '?', '¿', '¡', ':', '\n'])
        .map(words)
        .filter(|w| !w.is_empty())
        .collect()
}

/// Whether a negator comes within the three words before position `at`.
fn negated(words: &[String], at: usize) -> bool {
    (at.saturating_sub(3)..at).any(|i| NEGATORS.contains(&words[i].as_str()))
}

/// Positions where `phrase` (folded words) starts in `words`.
fn phrase_positions(words: &[String], phrase: &[String]) -> Vec<usize> {
    if phrase.is_empty() || phrase.len() > words.len() {
        return Vec::new();
    }
    (0..=words.len() - phrase.len())
        .filter(|&i| words[i..i + phrase.len()] == *phrase)
        .collect()
}

/// The first of `phrases` (longest first) that occurs in `text` without a negation before it
/// in its clause; words inside a longer phrase are not matched again on their own (so "no
/// quiero hablar con un humano" does not fire through "humano").
pub fn find_phrase(text: &str, phrases: &[String]) -> Option<String> {
    let mut sorted: Vec<(Vec<String>, &String)> = phrases.iter().map(|p| (words(p), p)).collect();
    sorted.sort_by_key(|p| std::cmp::Reverse(p.0.len()));
    for clause in clauses(text) {
        let mut covered = vec![false; clause.len()];
        for (phrase, original) in &sorted {
            for at in phrase_positions(&clause, phrase) {
                if covered[at..at + phrase.len()].iter().any(|c| *c) {
                    continue;
                }
                covered[at..at + phrase.len()]
                    .iter_mut()
                    .for_each(|c| *c = true);
                if !negated(&clause, at) {
                    return Some((*original).clone());
                }
            }
        }
    }
    None
}

// ---------------------------------------------------------------------------------------------
// Fields named in a message

/// The folded phrases that name `field`: its name, labels, aliases and the usual names of
/// its type.
pub fn aliases(field: &FieldSpec) -> Vec<String> {
    let mut out: Vec<String> = vec![field.name.replace('_', " ")];
    out.extend(field.label.all().map(str::to_owned));
    out.extend(field.aliases.iter().cloned());
    let usual: &[&str] = match field.kind {
        FieldType::Email => &[
            "email",
            "e-mail",
            "mail",
            "correo",
            "correo electrónico",
            "email address",
        ],
        FieldType::Phone => &[
            "teléfono",
            "móvil",
            "celular",
            "phone",
            "phone number",
            "mobile",
            "cell",
            "número de teléfono",
        ],
        FieldType::Url => &[
            "url",
            "web",
            "sitio web",
            "página web",
            "website",
            "site",
            "link",
            "enlace",
        ],
        FieldType::Number | FieldType::Text => &[],
    };
    out.extend(usual.iter().map(|s| (*s).to_owned()));
    if field.is_person_name() {
        out.extend(
            [
                "nombre",
                "name",
                "me llamo",
                "call me",
                "nombre completo",
                "full name",
            ]
            .iter()
            .map(|s| (*s).to_owned()),
        );
    }
    let mut folded: Vec<String> = out.iter().map(|a| words(a).join(" ")).collect();
    folded.retain(|a| !a.is_empty());
    folded.sort();
    folded.dedup();
    folded
}

/// Whether `text` names `field`.
pub fn mentions(text: &str, field: &FieldSpec) -> bool {
    let ws = words(text);
    aliases(field).iter().any(|a| contains_phrase(&ws, a))
}

/// The fields of `form` that `text` names, in form order.
pub fn mentioned_fields<'a>(text: &str, form: &'a FormSpec) -> Vec<&'a FieldSpec> {
    form.fields.iter().filter(|f| mentions(text, f)).collect()
}

// ---------------------------------------------------------------------------------------------
// Values in a message

static EMAIL_LIKE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"[^\s<>(),;:"'¿?¡!]*@[^\s<>(),;:"'¿?¡!]*"#).unwrap() // tidy: allow(unwrap): a constant pattern, checked by the tests
});
static SPOKEN_EMAIL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)([\w.+-]+)\s+(?:arroba|at)\s+([\w-]+(?:\s+(?:punto|dot)\s+[\w-]+)+)").unwrap() // tidy: allow(unwrap): a constant pattern, checked by the tests
});
static URL_LIKE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?i)\b(?:[a-z][a-z0-9+.-]*://|www\.)[^\s<>"']+"#).unwrap() // tidy: allow(unwrap): a constant pattern, checked by the tests
});
static DOMAIN_LIKE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b[a-z0-9-]+(?:\.[a-z0-9-]+)*\.[a-z]{2,}(?:/\S*)?").unwrap() // tidy: allow(unwrap): a constant pattern, checked by the tests
});
static PHONE_LIKE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\+?\(?\d[\d\s().-]*\d").unwrap() // tidy: allow(unwrap): a constant pattern, checked by the tests
});
static NUMBER_LIKE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"[-+]?\d+(?:[.,]\d+)*(?:[eE][-+]?\d+)?").unwrap() // tidy: allow(unwrap): a constant pattern, checked by the tests
});

/// Trailing punctuation that ends a sentence rather than a value.
fn trim_value(value: &str) -> &str {
    value
        .trim()
        .trim_end_matches(['.', ',', ';', ':', '!', '?', ')', '"', '\'', '»', '”'])
        .trim_start_matches(['(', '"', '\'', '«', '“'])
}

/// An email-looking token (something with an `@`), or one spelled out ("juan arroba ejemplo
/// punto com").
pub fn find_email(text: &str) -> Option<String> {
    if let Some(m) = EMAIL_LIKE
        .find_iter(text)
        .map(|m| trim_value(m.as_str()))
        .find(|m| m.len() > 1)
    {
        return Some(m.to_owned());
    }
    SPOKEN_EMAIL.captures(text).map(|c| {
        let domain = Regex::new(r"(?i)\s+(?:punto|dot)\s+")
            .map(|dot| dot.replace_all(&c[2], ".").into_owned())
            .unwrap_or_else(|_| c[2].to_owned());
        format!("{}@{}", &c[1], domain).to_lowercase()
    })
}

/// A URL-looking token: with a scheme, `www.`, or a bare domain (`ejemplo.com/x`).
pub fn find_url(text: &str) -> Option<String> {
    if let Some(m) = URL_LIKE.find(text) {
        return Some(trim_value(m.as_str()).to_owned());
    }
    text.split_whitespace()
        .filter(|t| !t.contains('@'))
        .find_map(|t| {
            DOMAIN_LIKE
                .find(t)
                .map(|m| trim_value(m.as_str()).to_owned())
        })
}

/// A phone-looking run of digits (the longest; with 7 or more digits when there is one).
pub fn find_phone(text: &str) -> Option<String> {
    let candidates: Vec<&str> = PHONE_LIKE
        .find_iter(text)
        .map(|m| m.as_str().trim())
        .filter(|m| !m.contains('@'))
        .collect();
    let digits = |s: &str| s.chars().filter(char::is_ascii_digit).count();
    candidates
        .iter()
        .max_by_key(|c| digits(c))
        .map(|c| (*c).to_owned())
        .or_else(|| {
            text.split_whitespace()
                .find(|t| t.chars().all(|c| c.is_ascii_digit()))
                .map(str::to_owned)
        })
}

/// Number words, Spanish and English (folded), to 20 and the tens.
const NUMBER_WORDS: &[(&str, i64)] = &[
    ("cero", 0),
    ("uno", 1),
    ("una", 1),
    ("dos", 2),
    ("tres", 3),
    ("cuatro", 4),
    ("cinco", 5),
    ("seis", 6),
    ("siete", 7),
    ("ocho", 8),
    ("nueve", 9),
    ("diez", 10),
    ("once", 11),
    ("doce", 12),
    ("trece", 13),
    ("catorce", 14),
    ("quince", 15),
    ("dieciseis", 16),
    ("diecisiete", 17),
    ("dieciocho", 18),
    ("diecinueve", 19),
    ("veinte", 20),
    ("treinta", 30),
    ("cuarenta", 40),
    ("cincuenta", 50),
    ("sesenta", 60),
    ("setenta", 70),
    ("ochenta", 80),
    ("noventa", 90),
    ("cien", 100),
    ("zero", 0),
    ("one", 1),
    ("two", 2),
    ("three", 3),
    ("four", 4),
    ("five", 5),
    ("six", 6),
    ("seven", 7),
    ("eight", 8),
    ("nine", 9),
    ("ten", 10),
    ("eleven", 11),
    ("twelve", 12),
    ("thirteen", 13),
    ("fourteen", 14),
    ("fifteen", 15),
    ("sixteen", 16),
    ("seventeen", 17),
    ("eighteen", 18),
    ("nineteen", 19),
    ("twenty", 20),
    ("thirty", 30),
    ("forty", 40),
    ("fifty", 50),
    ("sixty", 60),
    ("seventy", 70),
    ("eighty", 80),
    ("ninety", 90),
    ("hundred", 100),
];

/// A number in the message, as a float literal: digits ("1.234,5" and "1,234.5" both read
/// as 1234.5; a lone comma before other than three digits is a decimal comma) or words
/// ("treinta y cinco", "forty-two").
pub fn find_number(text: &str) -> Option<String> {
    if let Some(m) = NUMBER_LIKE.find(text) {
        return Some(normalise_number(m.as_str()));
    }
    let ws = words(&text.replace('-', " "));
    let mut total: Option<i64> = None;
    let mut previous_tens = false;
    for w in &ws {
        match NUMBER_WORDS.iter().find(|(n, _)| n == w).map(|(_, v)| *v) {
            Some(100) => total = Some(total.unwrap_or(1).max(1) * 100),
            Some(v) if previous_tens && v < 10 => {
                total = total.map(|t| t + v);
                previous_tens = false;
            }
            Some(v) if total.is_none() => {
                total = Some(v);
                previous_tens = v >= 20 && v % 10 == 0;
            }
            Some(_) => break,
            None if (w == "y" || w == "and") && previous_tens => {}
            None if total.is_some() => break,
            None => {}
        }
    }
    total.map(|t| t.to_string())
}

fn normalise_number(raw: &str) -> String {
    let commas = raw.matches(',').count();
    let dots = raw.matches('.').count();
    let (mantissa, exponent) = match raw.find(['e', 'E']) {
        Some(at) => (&raw[..at], &raw[at..]),
        None => (raw, ""),
    };
    let mantissa = match (commas, dots) {
        (0, 0) | (0, 1) => mantissa.to_owned(),
        (0, _) => mantissa.replace('.', ""),
        (_, 0) if commas == 1 => {
            let after = mantissa.rsplit(',').next().map_or(0, str::len);
            if after == 3 {
                mantissa.replace(',', "")
            } else {
                mantissa.replace(',', ".")
            }
        }
        (_, 0) => mantissa.replace(',', ""),
        _ => {
            let last_comma = mantissa.rfind(',').unwrap_or(0);
            let last_dot = mantissa.rfind('.').unwrap_or(0);
            if last_comma > last_dot {
                mantissa.replace('.', "").replace(',', ".")
            } else {
                mantissa.replace(',', "")
            }
        }
    };
    format!("{mantissa}{exponent}")
}

// ---------------------------------------------------------------------------------------------
// Extraction (the offline extractor)

/// Fillers that open a message before the value: greetings, "no,", "actually"...
const OPENERS: &[&str] = &[
    "no",
    "si",
    "sí",
    "hola",
    "hey",
    "hi",
    "hello",
    "bueno",
    "vale",
    "ok",
    "okay",
    "well",
    "pues",
    "oh",
    "ah",
    "perdon",
    "perdón",
    "perdona",
    "disculpa",
    "sorry",
    "oops",
    "vaya",
    "en realidad",
    "actually",
    "realmente",
    "mira",
    "look",
    "yes",
    "claro",
    "sure",
    "de acuerdo",
];

/// Drops leading fillers ("No, ", "Hola, ", "En realidad, ").
fn strip_openers(text: &str) -> &str {
    let mut rest = text.trim();
    'outer: loop {
        for opener in OPENERS {
            let head: String = rest.chars().take(opener.chars().count()).collect();
            if fold(&head) != fold(opener) {
                continue;
            }
            let after = &rest[head.len()..];
            if after
                .chars()
                .next()
                .is_some_and(|c| matches!(c, ',' | '.' | '!' | ' ' | ';' | ':'))
            {
                let next = after.trim_start_matches([',', '.', '!', ' ', ';', ':']);
                if next.is_empty() {
                    return rest;
                }
                rest = next;
                continue 'outer;
            }
        }
        return rest;
    }
}

static NAME_MARKER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:mi nombre(?: completo)? es|me llamo|my (?:full )?name is|my name's|i am|i'm|im|call me|soy|this is|name is)\s+(.+)").unwrap() // tidy: allow(unwrap): a constant pattern, checked by the tests
});
static CORRECTED_TO: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:deber[ií]a ser|debe ser|es|era|sería|should be|it should be|it's|it is|is|was|quise decir|i meant)\s+(.+)").unwrap() // tidy: allow(unwrap): a constant pattern, checked by the tests
});

/// Words that belong in names ("María de la Cruz", "Van der Berg").
const NAME_PARTICLES: &[&str] = &[
    "de", "del", "la", "las", "los", "y", "da", "do", "dos", "van", "von", "der", "di", "le", "el",
];

/// Words that end a value inside a sentence.
const STOPS: &[&str] = &[
    "y", "pero", "porque", "aunque", "gracias", "and", "but", "because", "thanks", "please",
    "from", "desde", "vivo", "live", "tengo", "have",
];

/// The value a text field gets from the start of `tail`: up to a clause break or a stop word,
/// at most six words.
fn text_value(tail: &str, person: bool) -> Option<String> {
    let clause = tail
        .split(|c: char| {
            matches!(
                c,
                ',' | '.' | ';' | '!' | '?' | '¿' | '¡' | '\n' | '(' | ')'
            )
        })
        .next()
        .unwrap_or_default();
    let mut kept: Vec<&str> = Vec::new();
    for (i, word) in clause.split_whitespace().enumerate() {
        let folded = fold(word);
        // A stop word ends a name after its first word, other text after its second.
        if i > 0 && STOPS.contains(&folded.as_str()) && (person || kept.len() >= 2) {
            break;
        }
        kept.push(word);
        if kept.len() == 6 {
            break;
        }
    }
    let value = trim_value(&kept.join(" ")).to_owned();
    if value.is_empty() {
        return None;
    }
    if person
        && (value.contains('@')
            || value.chars().any(|c| c.is_ascii_digit())
            || value.contains("://"))
    {
        return None;
    }
    Some(value)
}

/// The value for `field` in `message`, as the offline extractor reads it; `None` when the
/// message does not give one (the seed's `NOT_PROVIDED`). A value of the wrong shape is still
/// returned (validation explains what is wrong with it): "juan@ejemplo" for an email,
/// "12345" for a phone.
pub fn extract(message: &str, field: &FieldSpec) -> Option<String> {
    let message = message.trim();
    let single_token = !message.contains(char::is_whitespace);
    let after_copula = || {
        let body = strip_openers(message);
        CORRECTED_TO
            .captures(body)
            .and_then(|c| c.get(1))
            .and_then(|m| m.as_str().split_whitespace().next())
            .map(|t| trim_value(t).to_owned())
            .filter(|t| !t.is_empty())
    };
    match field.kind {
        FieldType::Email => find_email(message)
            .or_else(|| single_token.then(|| trim_value(message).to_owned()))
            .or_else(|| {
                if mentions(message, field) {
                    after_copula()
                } else {
                    None
                }
            }),
        FieldType::Url => find_url(message)
            .or_else(|| single_token.then(|| trim_value(message).to_owned()))
            .or_else(|| {
                if mentions(message, field) {
                    after_copula()
                } else {
                    None
                }
            }),
        FieldType::Phone => find_phone(message),
        FieldType::Number => find_number(message),
        FieldType::Text => {
            let body = strip_openers(message);
            let person = field.is_person_name();
            // "my name is wrong, it's X": what follows the field is a verdict, not its value.
            let stated = |value: Option<String>| value.filter(|v| !is_verdict(v));
            if person
                && let Some(c) = NAME_MARKER.captures(body)
                && let Some(value) = stated(text_value(&c[1], true))
            {
                return Some(value);
            }
            if is_greeting(body) {
                return None;
            }
            // "mi <label> es X", "my <label> is X", "<label>: X".
            let folded = fold(body);
            for alias in aliases(field) {
                let pattern = format!(
                    r"(?i)\b(?:(?:mi|my|el|la|the)\s+)?{}(?:\s+(?:es|is|son|are)\s+|\s*[:=]\s*)(.+)",
                    alias
                        .split(' ')
                        .map(regex::escape)
                        .collect::<Vec<_>>()
                        .join(r"\s+")
                );
                if let Some(c) = Regex::new(&pattern).ok().and_then(|r| r.captures(&folded)) {
                    // Matched on the folded text: take the same span of the original.
                    let start = c.get(1).map_or(0, |m| m.start());
                    if let Some(value) =
                        stated(text_value(&char_tail(body, &folded, start), person))
                    {
                        return Some(value);
                    }
                }
            }
            if let Some(value) = corrected_to(message, body, person) {
                return Some(value);
            }
            let n = body.split_whitespace().count();
            let question = body.contains('?') || body.contains('¿');
            if n == 0 || n > 6 || question {
                return None;
            }
            if person && (find_email(body).is_some() || find_url(body).is_some()) {
                return None;
            }
            // Without "me llamo" / "my name is", a name has no function words ("necesito
            // hablar con un humano" is not one); particles of names are fine.
            if person
                && words(body).iter().any(|w| {
                    (ES_CUES.contains(&w.as_str()) || EN_CUES.contains(&w.as_str()))
                        && !NAME_PARTICLES.contains(&w.as_str())
                })
            {
                return None;
            }
            text_value(body, person)
        }
    }
}

/// The original text's tail from the char position `folded_byte` of its folded form (folding
/// maps one character to one character).
fn char_tail(original: &str, folded: &str, folded_byte: usize) -> String {
    let chars = folded[..folded_byte.min(folded.len())].chars().count();
    original.chars().skip(chars).collect()
}

fn is_correction_lead(lead: &str) -> bool {
    let ws = words(lead);
    CORRECTION_MARKERS.iter().any(|m| contains_phrase(&ws, m))
}

/// Words that open a verdict on a value rather than a value ("está mal", "is wrong", "not
/// John").
const VERDICTS: &[&str] = &[
    "mal",
    "incorrecto",
    "incorrecta",
    "equivocado",
    "equivocada",
    "erroneo",
    "erronea",
    "error",
    "wrong",
    "incorrect",
    "mistaken",
    "not",
    "no",
    "typo",
];

/// Whether `value` is a verdict on the value rather than one ("wrong", "no Juan").
fn is_verdict(value: &str) -> bool {
    words(value)
        .first()
        .is_some_and(|w| VERDICTS.contains(&w.as_str()))
}

/// The value after the first copula that states one ("debería ser Pedro", "it's Ann"), at the
/// start of `body` (`message` without its openers) or after a correction marker; a copula
/// negated in its clause ("no es Juan, es Ana") or before a verdict ("is wrong, it's Ann") is
/// skipped for the next one.
fn corrected_to(message: &str, body: &str, person: bool) -> Option<String> {
    // `body` is a tail of the trimmed message (`strip_openers`): what precedes it in
    // `message` is the openers and leading space.
    let skipped = message.trim_end().len().saturating_sub(body.len());
    let mut from = 0;
    while let Some(c) = CORRECTED_TO.captures_at(body, from) {
        let (whole, value) = (c.get(0)?, c.get(1)?);
        let before = message.get(..skipped + whole.start()).unwrap_or_default();
        let clause = before
            .rsplit([',', '.', ';', ':', '!', '?', '¿', '¡'])
            .next()
            .unwrap_or_default();
        let negated = words(clause)
            .last()
            .is_some_and(|w| NEGATORS.contains(&w.as_str()));
        let opens = body[..whole.start()].trim().is_empty() || is_correction_lead(before);
        if opens && !negated && !is_verdict(value.as_str()) {
            return text_value(value.as_str(), person);
        }
        // On to the next copula (after this one's first word).
        from = body[whole.start()..]
            .char_indices()
            .find(|(_, ch)| ch.is_whitespace())
            .map_or(body.len(), |(at, _)| whole.start() + at);
    }
    None
}

// ---------------------------------------------------------------------------------------------
// Corrections

/// Phrases that mark a correction, Spanish and English.
pub const CORRECTION_MARKERS: &[&str] = &[
    "en realidad",
    "realmente",
    "deberia ser",
    "debe ser",
    "dejame corregir",
    "dejeme corregir",
    "quiero corregir",
    "quisiera corregir",
    "corrijo",
    "correccion",
    "corrige",
    "corregir",
    "eso esta mal",
    "esta mal",
    "estaba mal",
    "es incorrecto",
    "me equivoque",
    "me confundi",
    "quise decir",
    "queria decir",
    "perdon",
    "perdona",
    "disculpa",
    "cambia",
    "cambialo",
    "cambiar",
    "cambiemos",
    "actualiza",
    "actualizar",
    "el correcto es",
    "la correcta es",
    "lo correcto es",
    "mejor dicho",
    "no es",
    "error",
    "actually",
    "should be",
    "let me correct",
    "i want to correct",
    "correction",
    "correct that",
    "i meant",
    "i mean",
    "that's wrong",
    "that is wrong",
    "thats wrong",
    "wrong",
    "not right",
    "incorrect",
    "i made a mistake",
    "my mistake",
    "mistake",
    "typo",
    "sorry",
    "change",
    "update",
    "fix",
    "instead",
    "it's not",
    "it isn't",
];

/// The correction marker in `text`, if any: one of [`CORRECTION_MARKERS`], or a leading "no"
/// followed by more ("No, mi email es...").
pub fn correction_marker(text: &str) -> Option<String> {
    let ws = words(text);
    if ws.len() > 1 && ws[0] == "no" {
        return Some("no".to_owned());
    }
    CORRECTION_MARKERS
        .iter()
        .find(|m| contains_phrase(&ws, m))
        .map(|m| (*m).to_owned())
}

/// The typed value in `text` for a field of `kind` (email, URL, phone; numbers and text are
/// too common to tell a field by).
pub fn typed_value(text: &str, kind: FieldType) -> Option<String> {
    match kind {
        FieldType::Email => find_email(text).filter(|e| e.contains('@')),
        FieldType::Url => URL_LIKE
            .find(text)
            .map(|m| trim_value(m.as_str()).to_owned()),
        FieldType::Phone => {
            find_phone(text).filter(|p| p.chars().filter(char::is_ascii_digit).count() >= 7)
        }
        FieldType::Number | FieldType::Text => None,
    }
}

/// Which of `candidates` (field names) a correction in `text` is about: a field it names, else
/// the one field of the value's type ("juan@nuevo.com" corrects the email). `None` when it
/// cannot tell.
pub fn correction_target(text: &str, form: &FormSpec, candidates: &[String]) -> Option<String> {
    if let Some(named) = mentioned_fields(text, form)
        .into_iter()
        .find(|f| candidates.contains(&f.name))
    {
        return Some(named.name.clone());
    }
    let mut typed = form
        .fields
        .iter()
        .filter(|f| candidates.contains(&f.name) && typed_value(text, f.kind).is_some());
    match (typed.next(), typed.next()) {
        (Some(one), None) => Some(one.name.clone()),
        _ => None,
    }
}

/// A collected field (not the one being asked) that `text` gives a new value for without a
/// correction marker: named with a value ("mi email es otro@x.com"), or by a value only that
/// field's type takes.
pub fn restated_field(
    text: &str,
    form: &FormSpec,
    collected: &[String],
    asking: Option<&str>,
) -> Option<String> {
    let asking_kind = asking.and_then(|a| form.field(a)).map(|f| f.kind);
    form.fields
        .iter()
        .filter(|f| collected.contains(&f.name) && Some(f.name.as_str()) != asking)
        .find(|f| {
            let named = mentions(text, f) && extract(text, f).is_some();
            let typed = typed_value(text, f.kind).is_some() && asking_kind != Some(f.kind);
            (named && (f.kind != FieldType::Text || gives_value_for(text, f))) || typed
        })
        .map(|f| f.name.clone())
}

/// Whether `text` states a value for a text field in so many words ("mi nombre es X",
/// "me llamo X", "my city is X").
fn gives_value_for(text: &str, field: &FieldSpec) -> bool {
    let body = strip_openers(text);
    if field.is_person_name() && NAME_MARKER.is_match(body) {
        return true;
    }
    let folded = fold(body);
    aliases(field).iter().any(|a| {
        folded.contains(&format!("{a} es "))
            || folded.contains(&format!("{a} is "))
            || folded.contains(&format!("{a}:"))
    })
}

// ---------------------------------------------------------------------------------------------
// Off topic

/// Why a message is off topic.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OffTopic {
    /// Only a greeting ("Hola", "Good morning").
    Greeting,
    /// A question about something else ("¿Cómo está el clima?").
    Question,
    /// A change of subject ("Tengo otra pregunta").
    TopicChange,
    /// Talk about something unrelated.
    Unrelated,
}

impl OffTopic {
    /// Its name in the state's metadata.
    pub fn as_str(self) -> &'static str {
        match self {
            OffTopic::Greeting => "greeting",
            OffTopic::Question => "question",
            OffTopic::TopicChange => "topic_change",
            OffTopic::Unrelated => "unrelated",
        }
    }
}

/// What the rules make of a message for the field being asked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Topic {
    /// It answers the field (why).
    OnTopic(&'static str),
    /// It does not.
    OffTopic(OffTopic),
    /// The rules cannot tell: the model decides.
    Ambiguous,
}

const GREETINGS: &[&str] = &[
    "hola",
    "hey",
    "hi",
    "hello",
    "buenas",
    "buenos dias",
    "buenas tardes",
    "buenas noches",
    "buen dia",
    "good morning",
    "good afternoon",
    "good evening",
    "saludos",
    "que tal",
    "como estas",
    "como esta",
    "how are you",
    "holi",
    "hallo",
    "ola",
    "hey there",
    "hiya",
    "howdy",
    "ey",
];

const GREETING_FILLER: &[&str] = &[
    "hola",
    "hey",
    "hi",
    "hello",
    "buenas",
    "buenos",
    "buen",
    "dia",
    "dias",
    "tardes",
    "noches",
    "good",
    "morning",
    "afternoon",
    "evening",
    "saludos",
    "que",
    "tal",
    "como",
    "estas",
    "esta",
    "how",
    "are",
    "you",
    "holi",
    "hallo",
    "ola",
    "there",
    "hiya",
    "howdy",
    "ey",
    "doing",
    "todo",
    "bien",
    "y",
    "tu",
    "usted",
    "and",
    "senor",
    "senora",
    "amigo",
    "again",
    "otra",
    "vez",
];

const TOPIC_CHANGES: &[&str] = &[
    "tengo otra pregunta",
    "otra pregunta",
    "tengo una pregunta",
    "una pregunta",
    "otra cosa",
    "cambiando de tema",
    "cambiemos de tema",
    "por cierto",
    "pregunta rapida",
    "te puedo preguntar",
    "puedo preguntarte",
    "puedo preguntar",
    "quiero preguntar",
    "by the way",
    "btw",
    "another question",
    "other question",
    "i have a question",
    "quick question",
    "unrelated",
    "different topic",
    "change the subject",
    "can i ask",
    "something else",
    "off topic",
    "one more thing",
    "a question",
];

const UNRELATED: &[&str] = &[
    "clima",
    "lluvia",
    "llueve",
    "llover",
    "temperatura",
    "nieve",
    "weather",
    "rain",
    "raining",
    "snow",
    "sunny",
    "temperature",
    "forecast",
    "futbol",
    "partido",
    "deporte",
    "deportes",
    "football",
    "soccer",
    "basketball",
    "sports",
    "noticias",
    "news",
    "politica",
    "politics",
    "presidente",
    "president",
    "elecciones",
    "election",
    "chiste",
    "joke",
    "receta",
    "recipe",
    "cocinar",
    "cook",
    "pelicula",
    "movie",
    "film",
    "musica",
    "music",
    "cancion",
    "song",
    "restaurante",
    "restaurant",
    "comida",
    "food",
    "bitcoin",
    "bolsa",
    "stock",
    "stocks",
    "precio",
    "price",
    "viaje",
    "travel",
    "vacaciones",
    "vacation",
    "horoscopo",
    "horoscope",
    "historia",
    "history",
    "matematicas",
    "math",
    "hora",
    "time",
    "dia",
    "day",
];

const INTERROGATIVES: &[&str] = &[
    "que", "como", "cuando", "donde", "quien", "cual", "cuanto", "cuanta", "por", "what", "how",
    "when", "where", "who", "why", "which", "can", "could", "do", "does", "is", "are", "will",
    "would", "whats", "what's",
];

/// Whether `text` is a question.
pub fn is_question(text: &str) -> bool {
    text.contains('?')
        || text.contains('¿')
        || words(text)
            .first()
            .is_some_and(|w| INTERROGATIVES.contains(&w.as_str()))
}

/// Whether `text` is only a greeting.
pub fn is_greeting(text: &str) -> bool {
    let ws = words(text);
    !ws.is_empty()
        && GREETINGS.iter().any(|g| contains_phrase(&ws, g))
        && ws.iter().all(|w| GREETING_FILLER.contains(&w.as_str()))
}

/// Off topic, on topic, or for the model to decide; see the module docs of [`super`].
pub fn classify_topic(text: &str, field: &FieldSpec) -> Topic {
    let ws = words(text);
    if typed_value(text, field.kind).is_some()
        || (field.kind == FieldType::Number && find_number(text).is_some() && ws.len() <= 6)
    {
        return Topic::OnTopic("a value of the field's type");
    }
    if gives_value_for(text, field) {
        return Topic::OnTopic("states the field");
    }
    if is_greeting(text) {
        return Topic::OffTopic(OffTopic::Greeting);
    }
    if TOPIC_CHANGES.iter().any(|p| contains_phrase(&ws, p)) {
        return Topic::OffTopic(OffTopic::TopicChange);
    }
    if is_question(text) {
        return Topic::OffTopic(OffTopic::Question);
    }
    if ws.len() >= 2 && ws.iter().any(|w| UNRELATED.contains(&w.as_str())) {
        return Topic::OffTopic(OffTopic::Unrelated);
    }
    if field.kind == FieldType::Text && ws.len() <= 6 && extract(text, field).is_some() {
        return Topic::OnTopic("a short answer");
    }
    if mentions(text, field) {
        return Topic::OnTopic("names the field");
    }
    Topic::Ambiguous
}

/// The offline model's call on an ambiguous message: an attempt at the field (one token,
/// digits, an `@`, a short phrase, the field named) is on topic; longer talk is not.
pub fn looks_off_topic(text: &str, field: &FieldSpec) -> bool {
    let ws = words(text);
    let attempt = !text.trim().contains(char::is_whitespace)
        || text.chars().any(|c| c.is_ascii_digit() || c == '@')
        || mentions(text, field)
        || (field.kind == FieldType::Text && extract(text, field).is_some());
    !attempt && ws.len() > 3
}

// ---------------------------------------------------------------------------------------------
// Wanting a person (the offline `llm_intent`)

const ASK_VERBS: &[&str] = &[
    "hablar",
    "habla",
    "hable",
    "comunicar",
    "comunicarme",
    "pasar",
    "pasame",
    "paseme",
    "pasarme",
    "pase",
    "transferir",
    "transfiere",
    "transfiereme",
    "atender",
    "atienda",
    "atiende",
    "atendido",
    "atendida",
    "contactar",
    "llamar",
    "llame",
    "ayude",
    "ayudar",
    "conectar",
    "conectame",
    "poner",
    "ponme",
    "pongame",
    "quiero",
    "queria",
    "quisiera",
    "necesito",
    "prefiero",
    "preferiria",
    "busco",
    "dame",
    "deme",
    "talk",
    "speak",
    "chat",
    "connect",
    "transfer",
    "put",
    "get",
    "reach",
    "contact",
    "call",
    "deal",
    "help",
    "see",
    "want",
    "need",
    "prefer",
    "rather",
    "give",
    "escalate",
    "through",
];

const PEOPLE: &[&str] = &[
    "humano",
    "humana",
    "humanos",
    "persona",
    "personas",
    "alguien",
    "agente",
    "agentes",
    "operador",
    "operadora",
    "asesor",
    "asesora",
    "representante",
    "supervisor",
    "supervisora",
    "encargado",
    "encargada",
    "gerente",
    "empleado",
    "empleada",
    "responsable",
    "human",
    "humans",
    "person",
    "people",
    "someone",
    "somebody",
    "anyone",
    "agent",
    "operator",
    "representative",
    "rep",
    "manager",
    "staff",
    "employee",
    "individual",
];

const MACHINES: &[&str] = &[
    "bot",
    "robot",
    "maquina",
    "ia",
    "ai",
    "chatbot",
    "programa",
    "computer",
    "machine",
    "automatico",
    "automated",
    "contestador",
];

const REJECTIONS: &[&str] = &[
    "no", "not", "don't", "dont", "stop", "basta", "enough", "odio", "hate", "harto", "harta",
    "tired", "sick", "dejar", "deja", "quit",
];

const SOMEONE_ELSE: &[&str] = &[
    "otra persona",
    "another person",
    "someone else",
    "alguien mas",
    "other people",
    "otras personas",
];

/// Whether `text` asks for a person in other words than the keywords: a request verb near a
/// word for a person ("¿me puede atender alguien?", "put me through to someone real"), or a
/// rejection of the machine ("no quiero hablar con un robot"). A question about what the
/// assistant is ("¿eres un robot?") is not a request.
pub fn wants_human(text: &str) -> bool {
    let all = words(text);
    if SOMEONE_ELSE.iter().any(|p| contains_phrase(&all, p)) {
        return false;
    }
    for clause in clauses(text) {
        let identity = clause
            .first()
            .is_some_and(|w| matches!(w.as_str(), "eres" | "are" | "es" | "is"));
        if identity && clause.len() <= 5 {
            continue;
        }
        for (j, w) in clause.iter().enumerate() {
            if PEOPLE.contains(&w.as_str()) {
                let lo = j.saturating_sub(6);
                let hi = (j + 4).min(clause.len());
                let verb = (lo..hi).find(|&i| i != j && ASK_VERBS.contains(&clause[i].as_str()));
                if let Some(i) = verb
                    && !negated(&clause, i.min(j))
                {
                    return true;
                }
            }
            if MACHINES.contains(&w.as_str())
                && (j.saturating_sub(5)..j).any(|i| REJECTIONS.contains(&clause[i].as_str()))
            {
                return true;
            }
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::form::spec::{FormSpec, Texts};

    fn contact() -> FormSpec {
        FormSpec::builtin("contact").unwrap()
    }

    fn field(form: &FormSpec, name: &str) -> FieldSpec {
        form.field(name).unwrap().clone()
    }

    #[test]
    fn language_shows_or_not() {
        for (text, lang) in [
            ("Mi nombre es Juan", Some(Lang::Es)),
            ("I'm Ana García", Some(Lang::En)),
            ("No, mi email es juan.nuevo@ejemplo.com", Some(Lang::Es)),
            ("No, my email is john.new@example.com", Some(Lang::En)),
            ("¿Cómo está el clima?", Some(Lang::Es)),
            ("What's the weather like?", Some(Lang::En)),
            ("Hola", Some(Lang::Es)),
            ("juan@ejemplo.com", None),
            ("a@b.com", None),
            ("+34 600 123 456", None),
            ("No", None),
            ("Juan", None),
        ] {
            assert_eq!(language(text), lang, "{text}");
        }
    }

    #[test]
    fn phrases_respect_negation_and_clauses() {
        let phrases: Vec<String> = ["hablar con un humano", "humano", "agent"]
            .iter()
            .map(|s| (*s).to_owned())
            .collect();
        assert_eq!(
            find_phrase("Necesito hablar con un humano", &phrases).as_deref(),
            Some("hablar con un humano")
        );
        assert_eq!(
            find_phrase("No quiero hablar con un humano", &phrases),
            None
        );
        assert_eq!(
            find_phrase("No. Quiero hablar con un humano", &phrases).as_deref(),
            Some("hablar con un humano")
        );
        assert_eq!(find_phrase("not an agent, thanks", &phrases), None);
        assert_eq!(
            find_phrase("agent please", &phrases).as_deref(),
            Some("agent")
        );
    }

    #[test]
    fn extracts_the_seeds_phrasings() {
        let form = contact();
        let name = field(&form, "name");
        let email = field(&form, "email");
        let phone = field(&form, "phone");
        for (text, expected) in [
            ("Mi nombre es Juan", Some("Juan")),
            ("Me llamo Juan Pérez, encantado", Some("Juan Pérez")),
            ("My name is John", Some("John")),
            ("I'm Ana García", Some("Ana García")),
            ("Hola, soy María y vivo en Madrid", Some("María")),
            ("Juan", Some("Juan")),
            ("juan carlos", Some("juan carlos")),
            ("No, mi nombre es Pedro", Some("Pedro")),
            ("En realidad, debería ser Pedro", Some("Pedro")),
            ("Actually, it should be Peter", Some("Peter")),
            ("juan@ejemplo.com", None),
            ("¿Para qué quieren mi nombre?", None),
            ("Hola", None),
            ("Necesito hablar con un humano", None),
            ("María de la Cruz", Some("María de la Cruz")),
        ] {
            assert_eq!(extract(text, &name).as_deref(), expected, "name: {text}");
        }
        for (text, expected) in [
            ("juan@ejemplo.com", Some("juan@ejemplo.com")),
            (
                "No, mi email es juan.nuevo@ejemplo.com",
                Some("juan.nuevo@ejemplo.com"),
            ),
            ("my email is <john@example.com>.", Some("john@example.com")),
            ("juan arroba ejemplo punto com", Some("juan@ejemplo.com")),
            ("john at example dot co dot uk", Some("john@example.co.uk")),
            ("juan@ejemplo", Some("juan@ejemplo")),
            ("mi email es juanejemplo.com", Some("juanejemplo.com")),
            ("juanejemplo.com", Some("juanejemplo.com")),
            ("no tengo email", None),
            ("Mi nombre es Juan", None),
        ] {
            assert_eq!(extract(text, &email).as_deref(), expected, "email: {text}");
        }
        for (text, expected) in [
            ("my phone is +34 600 123 456", Some("+34 600 123 456")),
            ("Mi teléfono es (555) 123-4567.", Some("(555) 123-4567")),
            ("600123456", Some("600123456")),
            ("es el 12345", Some("12345")),
            ("no tengo", None),
        ] {
            assert_eq!(extract(text, &phone).as_deref(), expected, "phone: {text}");
        }
    }

    #[test]
    fn extracts_urls_numbers_and_labelled_text() {
        let url = FieldSpec::new(
            "website",
            FieldType::Url,
            Texts::new("website", "web"),
            Texts::default(),
        );
        assert_eq!(
            extract("mi web es https://ejemplo.com/tienda.", &url).as_deref(),
            Some("https://ejemplo.com/tienda")
        );
        assert_eq!(
            extract("www.ejemplo.com", &url).as_deref(),
            Some("www.ejemplo.com")
        );
        assert_eq!(
            extract("it's example.org/about", &url).as_deref(),
            Some("example.org/about")
        );
        assert_eq!(extract("no tengo", &url), None);
        let age = FieldSpec::new(
            "age",
            FieldType::Number,
            Texts::new("age", "edad"),
            Texts::default(),
        );
        for (text, expected) in [
            ("tengo 35 años", Some("35")),
            ("1.234,5", Some("1234.5")),
            ("1,234.5", Some("1234.5")),
            ("3,5", Some("3.5")),
            ("10,000", Some("10000")),
            ("-2.5e3", Some("-2.5e3")),
            ("treinta y cinco", Some("35")),
            ("forty-two", Some("42")),
            ("muchos", None),
        ] {
            assert_eq!(extract(text, &age).as_deref(), expected, "number: {text}");
        }
        let city = FieldSpec::new(
            "city",
            FieldType::Text,
            Texts::new("city", "ciudad"),
            Texts::default(),
        );
        assert_eq!(
            extract("Mi ciudad es Buenos Aires, gracias", &city).as_deref(),
            Some("Buenos Aires")
        );
        assert_eq!(
            extract("my city is São Paulo", &city).as_deref(),
            Some("São Paulo")
        );
        assert_eq!(extract("Lima", &city).as_deref(), Some("Lima"));
    }

    #[test]
    fn a_corrected_value_is_the_one_after_the_verdict_whatever_the_spacing() {
        let name = FieldSpec::new(
            "name",
            FieldType::Text,
            Texts::new("name", "nombre"),
            Texts::default(),
        );
        for pad in ["", " ", "  \n"] {
            for (text, expected) in [
                ("No es Juan Pérez, es Ana Gómez", "Ana Gómez"),
                ("Mi nombre está mal, es Ana Gómez", "Ana Gómez"),
                ("My name is wrong, it's Ann Smith", "Ann Smith"),
                ("Sorry, it's not John, it's Ann", "Ann"),
            ] {
                let padded = format!("{text}{pad}");
                assert_eq!(
                    extract(&padded, &name).as_deref(),
                    Some(expected),
                    "{padded:?}"
                );
                // The copula rule itself (not a later fallback) finds it.
                assert_eq!(
                    corrected_to(&padded, strip_openers(&padded), true).as_deref(),
                    Some(expected),
                    "{padded:?}"
                );
            }
        }
    }

    #[test]
    fn corrections_are_marked_and_targeted() {
        let form = contact();
        for text in [
            "No, mi email es juan.nuevo@ejemplo.com",
            "En realidad, debería ser Pedro",
            "Déjame corregir el teléfono",
            "Eso está mal",
            "Actually, my name is Peter",
            "That's wrong, it should be john@new.com",
            "I made a mistake in my email",
        ] {
            assert!(correction_marker(text).is_some(), "{text}");
        }
        for text in [
            "Mi nombre es Juan",
            "juan@ejemplo.com",
            "No",
            "Nothing else",
        ] {
            assert_eq!(correction_marker(text), None, "{text}");
        }
        let collected = vec!["name".to_owned(), "email".to_owned()];
        assert_eq!(
            correction_target("No, mi email es x@y.com", &form, &collected).as_deref(),
            Some("email")
        );
        assert_eq!(
            correction_target("No, es juan2@ejemplo.com", &form, &collected).as_deref(),
            Some("email")
        );
        assert_eq!(
            correction_target("Actually my name is Peter", &form, &collected).as_deref(),
            Some("name")
        );
        assert_eq!(
            correction_target("En realidad, debería ser Pedro", &form, &collected),
            None
        );
        assert_eq!(
            correction_target("No, mi teléfono es 600123456", &form, &collected),
            None,
            "not collected"
        );
        // Restating a collected field without a marker.
        assert_eq!(
            restated_field("mi email es otro@x.com", &form, &collected, Some("phone")).as_deref(),
            Some("email")
        );
        assert_eq!(
            restated_field("otro@x.com", &form, &collected, Some("phone")).as_deref(),
            Some("email")
        );
        assert_eq!(
            restated_field("me llamo Pedro", &form, &collected, Some("phone")).as_deref(),
            Some("name")
        );
        assert_eq!(
            restated_field("600 123 456", &form, &collected, Some("phone")),
            None
        );
        assert_eq!(
            restated_field("juan@x.com", &form, &["name".to_owned()], Some("email")),
            None
        );
    }

    #[test]
    fn off_topic_in_both_languages() {
        let form = contact();
        let name = field(&form, "name");
        let email = field(&form, "email");
        let off = |kind| Topic::OffTopic(kind);
        for (text, f, expected) in [
            ("¿Cómo está el clima?", &name, off(OffTopic::Question)),
            ("What's the weather like?", &name, off(OffTopic::Question)),
            ("Hola", &name, off(OffTopic::Greeting)),
            ("Buenos días!", &email, off(OffTopic::Greeting)),
            ("Hi there", &name, off(OffTopic::Greeting)),
            ("Tengo otra pregunta", &email, off(OffTopic::TopicChange)),
            (
                "By the way, I have a question",
                &name,
                off(OffTopic::TopicChange),
            ),
            (
                "Ayer vi un partido de fútbol buenísimo",
                &name,
                off(OffTopic::Unrelated),
            ),
            (
                "Mi nombre es Juan",
                &name,
                Topic::OnTopic("states the field"),
            ),
            ("Hola, soy Juan", &name, Topic::OnTopic("states the field")),
            ("Juan", &name, Topic::OnTopic("a short answer")),
            (
                "juan@ejemplo.com",
                &email,
                Topic::OnTopic("a value of the field's type"),
            ),
            (
                "Hola, mi correo es juan@ejemplo.com",
                &email,
                Topic::OnTopic("a value of the field's type"),
            ),
            ("no tengo email", &email, Topic::OnTopic("names the field")),
            ("juanejemplo.com", &email, Topic::Ambiguous),
        ] {
            assert_eq!(classify_topic(text, f), expected, "{text}");
        }
        assert!(!looks_off_topic("juanejemplo.com", &email));
        assert!(looks_off_topic(
            "me gustan mucho los perros grandes",
            &email
        ));
    }

    #[test]
    fn wanting_a_person_in_other_words() {
        for text in [
            "¿Me puede atender alguien de carne y hueso?",
            "Quiero que me atienda una persona",
            "pásame con alguien, por favor",
            "Put me through to someone real",
            "I'd rather deal with a person",
            "Can someone help me?",
            "No quiero hablar con un robot",
            "stop, I'm tired of this bot",
        ] {
            assert!(wants_human(text), "{text}");
        }
        for text in [
            "Mi nombre es Juan",
            "Me llamo Juan",
            "¿Eres un robot?",
            "Are you a bot?",
            "Quiero registrar a otra persona",
            "I need help with my email",
            "No necesito a nadie, gracias",
            "juan@ejemplo.com",
        ] {
            assert!(!wants_human(text), "{text}");
        }
    }
}
