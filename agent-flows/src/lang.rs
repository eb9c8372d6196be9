//! The seeds' languages — Spanish, English, Russian — as the offline models need them: which
//! language a message is in, and text folded for matching (lower case, accents off, `ё` as `е`)
//! and cut into words.
//!
//! Detection is by script first (Cyrillic is Russian), then by counting each language's
//! function words and its marks (`¿`, `¡`, `ñ`, accented vowels). It decides between the
//! languages the flows answer in; it is not a general language identifier.

use serde::{Deserialize, Serialize};

/// A language the flows answer in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Lang {
    /// English (the default when nothing says otherwise).
    #[default]
    En,
    /// Spanish.
    Es,
    /// Russian.
    Ru,
}

impl Lang {
    /// The ISO 639-1 code.
    pub fn code(self) -> &'static str {
        match self {
            Lang::En => "en",
            Lang::Es => "es",
            Lang::Ru => "ru",
        }
    }

    /// The language with this ISO 639-1 code (case-insensitive).
    pub fn from_code(code: &str) -> Option<Lang> {
        match code.trim().to_ascii_lowercase().as_str() {
            "en" => Some(Lang::En),
            "es" => Some(Lang::Es),
            "ru" => Some(Lang::Ru),
            _ => None,
        }
    }

    /// Picks the text for this language.
    pub fn pick<'a>(self, en: &'a str, es: &'a str, ru: &'a str) -> &'a str {
        match self {
            Lang::En => en,
            Lang::Es => es,
            Lang::Ru => ru,
        }
    }
}

impl std::fmt::Display for Lang {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.code())
    }
}

/// Spanish function words and frequent short words (folded: no accents).
const SPANISH: &[&str] = &[
    "el", "la", "los", "las", "un", "una", "unos", "de", "del", "que", "y", "en", "es", "por",
    "para", "con", "sin", "mi", "mis", "tu", "su", "al", "lo", "se", "no", "si", "hola", "gracias",
    "hora", "horas", "cual", "como", "donde", "cuando", "quiero", "necesito", "puedo", "esta",
    "estoy", "son", "hay", "muy", "pero", "tambien", "ahora", "hoy", "dia", "buenos", "buenas",
    "nombre", "correo", "llamo", "telefono", "ayuda", "favor", "porque", "eso", "esto", "ese",
    "quien", "hablar", "humano", "persona", "agente", "tiempo", "clima", "dime", "cuanto",
    "cuantos", "nueva", "ciudad", "mal", "bien", "otra", "otro", "pregunta", "tengo", "sobre",
    "entre", "todo", "ya", "yo", "me", "te", "le", "nos", "usted", "ustedes", "fue", "ser", "hace",
    "hacer",
];

/// English function words and frequent short words.
const ENGLISH: &[&str] = &[
    "the", "a", "an", "of", "and", "in", "is", "are", "was", "to", "for", "with", "without", "my",
    "your", "his", "her", "it", "its", "what", "which", "who", "how", "where", "when", "why",
    "time", "please", "hello", "hi", "hey", "thanks", "thank", "i", "im", "me", "you", "we",
    "they", "do", "does", "did", "can", "could", "would", "should", "want", "need", "name",
    "email", "phone", "this", "that", "there", "here", "now", "today", "now", "is", "be", "not",
    "no", "yes", "at", "on", "by", "from", "about", "talk", "human", "agent", "person", "weather",
    "tell", "much", "many", "new", "city", "wrong", "other", "another", "question", "have", "has",
    "it's", "what's",
];

/// The language of `text`: Russian for Cyrillic script, else Spanish or English by their words
/// and marks (English when neither shows).
pub fn detect(text: &str) -> Lang {
    let mut cyrillic = 0usize;
    let mut latin = 0usize;
    let mut spanish_marks = 0usize;
    for c in text.chars() {
        match c {
            '\u{0400}'..='\u{04FF}' => cyrillic += 1,
            'a'..='z' | 'A'..='Z' => latin += 1,
            '¿' | '¡' | 'ñ' | 'Ñ' => spanish_marks += 2,
            'á' | 'é' | 'í' | 'ó' | 'ú' | 'Á' | 'É' | 'Í' | 'Ó' | 'Ú' | 'ü' => {
                latin += 1;
                spanish_marks += 1;
            }
            _ => {}
        }
    }
    if cyrillic > 0 && cyrillic >= latin / 2 {
        return Lang::Ru;
    }
    let words = words(text);
    let es = words
        .iter()
        .filter(|w| SPANISH.contains(&w.as_str()))
        .count()
        + spanish_marks;
    let en = words
        .iter()
        .filter(|w| ENGLISH.contains(&w.as_str()))
        .count();
    if es > en { Lang::Es } else { Lang::En }
}

/// `text` folded for matching: lower case, Latin accents removed (`á` -> `a`, `ñ` -> `n`,
/// `ü` -> `u`), `ё` -> `е`, typographic apostrophes made plain.
pub fn fold(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars().flat_map(char::to_lowercase) {
        out.push(match c {
            'á' | 'à' | 'ä' | 'â' | 'ã' => 'a',
            'é' | 'è' | 'ë' | 'ê' => 'e',
            'í' | 'ì' | 'ï' | 'î' => 'i',
            'ó' | 'ò' | 'ö' | 'ô' | 'õ' => 'o',
            'ú' | 'ù' | 'ü' | 'û' => 'u',
            'ñ' => 'n',
            'ç' => 'c',
            'ё' => 'е',
            '’' | '‘' | '`' => '\'',
            other => other,
        });
    }
    out
}

/// The words of `text`, folded: runs of letters and digits (apostrophes inside a word stay:
/// `what's`).
pub fn words(text: &str) -> Vec<String> {
    let folded = fold(text);
    let mut out = Vec::new();
    let mut current = String::new();
    let mut chars = folded.chars().peekable();
    while let Some(c) = chars.next() {
        let inner_apostrophe =
            c == '\'' && !current.is_empty() && chars.peek().is_some_and(|n| n.is_alphanumeric());
        if c.is_alphanumeric() || inner_apostrophe {
            current.push(c);
        } else if !current.is_empty() {
            out.push(std::mem::take(&mut current));
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// Whether `phrase` (folded words) occurs in `words` as consecutive words.
pub fn contains_phrase(words: &[String], phrase: &str) -> bool {
    let phrase = self::words(phrase);
    if phrase.is_empty() || phrase.len() > words.len() {
        return false;
    }
    words.windows(phrase.len()).any(|w| w == phrase.as_slice())
}

/// A rough token count for usage reports of offline models: about four characters a token,
/// at least one per word.
pub fn estimate_tokens(text: &str) -> u64 {
    let chars = text.chars().count() as u64;
    let words = text.split_whitespace().count() as u64;
    (chars / 4).max(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detects_the_seeds_languages() {
        for (text, lang) in [
            ("¿Qué hora es en Tokio y Londres?", Lang::Es),
            ("Mi nombre es Juan", Lang::Es),
            ("Necesito hablar con un humano", Lang::Es),
            ("juan@ejemplo.com", Lang::En),
            ("What time is it in New York?", Lang::En),
            ("my phone is +34 600 123 456", Lang::En),
            ("Какой был ВВП США в 2008 году?", Lang::Ru),
            ("Что такое инфляция?", Lang::Ru),
            ("hola", Lang::Es),
            ("hello", Lang::En),
        ] {
            assert_eq!(detect(text), lang, "{text}");
        }
    }

    #[test]
    fn folds_and_splits() {
        assert_eq!(fold("¿Qué HORA es, Ñandú?"), "¿que hora es, nandu?");
        assert_eq!(fold("Ёлка"), "елка");
        assert_eq!(
            words("What's the time in São Paulo?"),
            ["what's", "the", "time", "in", "sao", "paulo"]
        );
        assert_eq!(words("'quoted' words"), ["quoted", "words"]);
        let w = words("Necesito hablar con un humano, por favor");
        assert!(contains_phrase(&w, "hablar con un humano"));
        assert!(!contains_phrase(&w, "hablar con una persona"));
    }

    #[test]
    fn token_estimates_grow_with_text() {
        assert_eq!(estimate_tokens(""), 0);
        assert_eq!(estimate_tokens("a b c"), 3);
        assert!(estimate_tokens(&"word ".repeat(100)) >= 100);
    }
}
