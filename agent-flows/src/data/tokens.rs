//! A question cut into tokens for the offline rules — folded words, numbers (with a decimal
//! point or a Russian decimal comma), and the symbols that carry meaning (`>`, `%`, `-`) —
//! and phrase matching over them: a phrase is folded words, a word ending in `*` matches any
//! word it starts, and longer matches win.

use crate::lang::fold;

/// What a token is.
#[derive(Clone, Debug, PartialEq)]
pub enum Tok {
    /// A run of letters (and digits after the first letter: `q3`, `m1`), folded.
    Word(String),
    /// A number as written, and its value.
    Num(String, f64),
    /// Any other visible character.
    Sym(char),
}

/// A token and whether a space came before it.
#[derive(Clone, Debug, PartialEq)]
pub struct Token {
    /// The token.
    pub tok: Tok,
    /// Whether it follows the previous token without a space (`1970s`: `s` is glued).
    pub glued: bool,
}

impl Token {
    /// The word, if it is one.
    pub fn word(&self) -> Option<&str> {
        match &self.tok {
            Tok::Word(w) => Some(w),
            _ => None,
        }
    }

    /// The number, if it is one.
    pub fn num(&self) -> Option<f64> {
        match &self.tok {
            Tok::Num(_, n) => Some(*n),
            _ => None,
        }
    }

    /// The number, if it is a whole number written without a decimal part.
    pub fn int(&self) -> Option<i64> {
        match &self.tok {
            Tok::Num(raw, n) if raw.chars().all(|c| c.is_ascii_digit()) && raw.len() <= 18 => {
                Some(*n as i64)
            }
            Tok::Num(raw, n)
                if raw.len() <= 24
                    && raw.contains(',')
                    && raw.split(',').skip(1).all(|g| g.len() == 3)
                    && raw.chars().all(|c| c.is_ascii_digit() || c == ',') =>
            {
                // `1,000`: a grouped whole number.
                Some(*n as i64)
            }
            _ => None,
        }
    }

    /// The symbol, if it is one.
    pub fn sym(&self) -> Option<char> {
        match &self.tok {
            Tok::Sym(c) => Some(*c),
            _ => None,
        }
    }

    /// The token as text (for the parser's notes).
    pub fn text(&self) -> String {
        match &self.tok {
            Tok::Word(w) => w.clone(),
            Tok::Num(raw, _) => raw.clone(),
            Tok::Sym(c) => c.to_string(),
        }
    }
}

/// The tokens of `text`.
pub fn tokenize(text: &str) -> Vec<Token> {
    let chars: Vec<char> = fold(text).chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    let mut space = true;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            space = true;
            i += 1;
            continue;
        }
        let glued = !space && !out.is_empty();
        space = false;
        if c.is_ascii_digit() {
            let digits = |from: usize| {
                let mut j = from;
                while j < chars.len() && chars[j].is_ascii_digit() {
                    j += 1;
                }
                j
            };
            let mut end = digits(i);
            let mut whole: String = chars[i..end].iter().collect();
            let mut raw = whole.clone();
            // English thousands groups: `12,990` (after at most three digits, then groups of
            // exactly three).
            let mut grouped = false;
            while chars.get(end) == Some(&',')
                && (grouped || whole.len() <= 3)
                && digits(end + 1) == end + 4
            {
                let group: String = chars[end + 1..end + 4].iter().collect();
                whole.push_str(&group);
                raw.push(',');
                raw.push_str(&group);
                end += 4;
                grouped = true;
            }
            // A decimal part: `8.5`, or the Russian `8,5`.
            let mut value = whole.clone();
            if let Some(&sep) = chars.get(end)
                && (sep == '.' || (sep == ',' && !grouped))
                && chars.get(end + 1).is_some_and(char::is_ascii_digit)
            {
                let stop = digits(end + 1);
                let frac: String = chars[end + 1..stop].iter().collect();
                raw.push(sep);
                raw.push_str(&frac);
                value = format!("{whole}.{frac}");
                end = stop;
            }
            i = end;
            out.push(Token {
                tok: Tok::Num(raw, value.parse().unwrap_or(f64::INFINITY)),
                glued,
            });
            continue;
        }
        if c.is_alphabetic() {
            let start = i;
            while i < chars.len() && (chars[i].is_alphabetic() || chars[i].is_ascii_digit()) {
                i += 1;
            }
            out.push(Token {
                tok: Tok::Word(chars[start..i].iter().collect()),
                glued,
            });
            continue;
        }
        out.push(Token {
            tok: Tok::Sym(c),
            glued,
        });
        i += 1;
    }
    out
}

/// Whether the pattern word `pattern` (`*` at the end: a prefix) matches `word`.
pub fn word_matches(pattern: &str, word: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => word.starts_with(prefix),
        None => word == pattern,
    }
}

/// Symbols a phrase may span (`t-bill`, `s&p`, `m-1`).
fn joins_words(c: char) -> bool {
    matches!(c, '-' | '&' | '\'' | '/' | '.')
}

/// The end (exclusive) of `phrase` matched at `start` of `tokens`, if it matches there.
pub fn match_at(tokens: &[Token], start: usize, phrase: &str) -> Option<usize> {
    let mut i = start;
    for (n, pattern) in phrase.split_whitespace().enumerate() {
        if n > 0 {
            while tokens.get(i).and_then(Token::sym).is_some_and(joins_words) {
                i += 1;
            }
        }
        let token = tokens.get(i)?;
        let ok = match &token.tok {
            Tok::Word(w) => word_matches(pattern, w),
            Tok::Num(raw, _) => raw == pattern,
            Tok::Sym(_) => false,
        };
        if !ok {
            return None;
        }
        i += 1;
    }
    (i > start).then_some(i)
}

/// A phrase found in the tokens.
#[derive(Clone, Debug, PartialEq)]
pub struct Hit<T> {
    /// First token.
    pub start: usize,
    /// One past the last token.
    pub end: usize,
    /// What the phrase stands for.
    pub value: T,
}

/// Every non-overlapping match of `phrases` in `tokens`, left to right, skipping tokens
/// marked in `used` and marking the ones it takes. At each position the longest phrase wins
/// (in tokens, then in pattern characters: `доходност*` beats `доход*`).
pub fn find_all<T: Clone>(
    tokens: &[Token],
    used: &mut [bool],
    phrases: &[(&str, T)],
) -> Vec<Hit<T>> {
    let mut hits = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        // A phrase starts with a word or a number: a symbol starts none.
        if used[i] || tokens[i].sym().is_some() {
            i += 1;
            continue;
        }
        let best = phrases
            .iter()
            .filter_map(|(phrase, value)| {
                let end = match_at(tokens, i, phrase)?;
                if used[i..end].iter().any(|u| *u) {
                    return None;
                }
                Some((end, phrase.len(), value))
            })
            .max_by_key(|(end, len, _)| (*end, *len));
        match best {
            Some((end, _, value)) => {
                used[i..end].iter_mut().for_each(|u| *u = true);
                hits.push(Hit {
                    start: i,
                    end,
                    value: value.clone(),
                });
                i = end;
            }
            None => i += 1,
        }
    }
    hits
}

/// Whether any of `phrases` occurs anywhere in `tokens`.
pub fn contains_any(tokens: &[Token], phrases: &[&str]) -> bool {
    (0..tokens.len())
        .filter(|&i| tokens[i].sym().is_none())
        .any(|i| phrases.iter().any(|p| match_at(tokens, i, p).is_some()))
}

/// The text of tokens `start..end`, as written (folded), for notes.
pub fn span_text(tokens: &[Token], start: usize, end: usize) -> String {
    let mut out = String::new();
    for (n, token) in tokens[start..end.min(tokens.len())].iter().enumerate() {
        if n > 0 && !token.glued {
            out.push(' ');
        }
        out.push_str(&token.text());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(text: &str) -> Vec<Tok> {
        tokenize(text).into_iter().map(|t| t.tok).collect()
    }

    #[test]
    fn numbers_words_and_symbols() {
        assert_eq!(
            kinds("Unemployment > 8,5% in 2008Q3"),
            [
                Tok::Word("unemployment".into()),
                Tok::Sym('>'),
                Tok::Num("8,5".into(), 8.5),
                Tok::Sym('%'),
                Tok::Word("in".into()),
                Tok::Num("2008".into(), 2008.0),
                Tok::Word("q3".into()),
            ]
        );
        assert_eq!(
            kinds("12,990.5 and 1,234,567 or 3,25"),
            [
                Tok::Num("12,990.5".into(), 12990.5),
                Tok::Word("and".into()),
                Tok::Num("1,234,567".into(), 1234567.0),
                Tok::Word("or".into()),
                Tok::Num("3,25".into(), 3.25),
            ]
        );
        let t = tokenize("the 1970s, Ёлка");
        assert!(t[2].glued && !t[1].glued);
        assert_eq!(t[4].word(), Some("елка"));
        assert_eq!(tokenize("99999999999999999999")[0].int(), None);
    }

    #[test]
    fn longest_phrase_wins_and_stems_match() {
        let tokens = tokenize("Реальная процентная ставка и процентные ставки по t-bill");
        let mut used = vec![false; tokens.len()];
        let phrases = [
            ("процентн* ставк*", 1),
            ("реальн* процентн* ставк*", 2),
            ("t bill*", 3),
        ];
        let hits: Vec<i32> = find_all(&tokens, &mut used, &phrases)
            .into_iter()
            .map(|h| h.value)
            .collect();
        assert_eq!(hits, [2, 1, 3]);
        assert!(contains_any(&tokenize("what's the CPI?"), &["cpi"]));
        assert_eq!(span_text(&tokenize("in 1970s"), 1, 3), "1970s");
    }
}
