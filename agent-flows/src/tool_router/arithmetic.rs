//! Arithmetic in a question, as an expression the `calculator` tool evaluates: symbols
//! (`12*(3+4)`) and words in English, Spanish and Russian ("2 plus 3", "15 por 3",
//! "10 разделить на 4").
//!
//! The offline router proposes the expression; the tool parses and evaluates it, so anything
//! odd here becomes a tool error the answer explains, never a wrong number.

use crate::lang::words;

/// Operator words, folded, longest phrases first: phrase -> operator symbol.
const OPERATOR_WORDS: &[(&str, &str)] = &[
    ("to the power of", "^"),
    ("multiplied by", "*"),
    ("multiplicado por", "*"),
    ("dividido por", "/"),
    ("dividido entre", "/"),
    ("divided by", "/"),
    ("elevado a", "^"),
    ("умножить на", "*"),
    ("умноженное на", "*"),
    ("разделить на", "/"),
    ("делить на", "/"),
    ("деленное на", "/"),
    ("в степени", "^"),
    ("plus", "+"),
    ("mas", "+"),
    ("плюс", "+"),
    ("minus", "-"),
    ("menos", "-"),
    ("минус", "-"),
    ("times", "*"),
    ("por", "*"),
    ("x", "*"),
    ("entre", "/"),
    ("over", "/"),
    ("mod", "%"),
    ("modulo", "%"),
];

#[derive(Clone, Debug, PartialEq)]
enum Token {
    Number(String),
    Op(&'static str),
    Open,
    Close,
    Other,
}

/// The arithmetic expression in `text`, if it has one: the longest run of numbers,
/// operators and parentheses with at least two numbers and one operator between them.
pub fn expression(text: &str) -> Option<String> {
    let tokens = tokenize(text);
    let mut best: Option<(usize, String)> = None;
    let mut i = 0;
    while i < tokens.len() {
        if tokens[i] == Token::Other {
            i += 1;
            continue;
        }
        let start = i;
        while i < tokens.len() && tokens[i] != Token::Other {
            i += 1;
        }
        let run = trim_run(&tokens[start..i]);
        let numbers = run.iter().filter(|t| matches!(t, Token::Number(_))).count();
        let binary = run
            .windows(2)
            .any(|w| matches!(w, [Token::Number(_) | Token::Close, Token::Op(_)]));
        if numbers >= 2 && binary {
            let text = render(run);
            if best.as_ref().is_none_or(|(n, _)| run.len() > *n) {
                best = Some((run.len(), text));
            }
        }
    }
    best.map(|(_, text)| text)
}

/// Drops leading binary operators and trailing operators/open parentheses, and unbalanced
/// parentheses at the edges.
fn trim_run(mut run: &[Token]) -> &[Token] {
    while let [Token::Op(op), rest @ ..] = run {
        if *op == "-" && matches!(rest.first(), Some(Token::Number(_) | Token::Open)) {
            break;
        }
        run = rest;
    }
    while let [rest @ .., Token::Op(_) | Token::Open] = run {
        run = rest;
    }
    let opens = run.iter().filter(|t| **t == Token::Open).count();
    let closes = run.iter().filter(|t| **t == Token::Close).count();
    if closes > opens {
        while let [rest @ .., Token::Close] = run {
            run = rest;
            if run.iter().filter(|t| **t == Token::Close).count() <= opens {
                break;
            }
        }
    }
    run
}

fn render(run: &[Token]) -> String {
    let mut out = String::new();
    let mut previous: Option<&Token> = None;
    for token in run {
        match token {
            Token::Number(n) => out.push_str(n),
            // A sign (at the start, after an operator or a parenthesis) sticks to its number.
            Token::Op(op) if matches!(previous, None | Some(Token::Op(_) | Token::Open)) => {
                out.push_str(op);
            }
            Token::Op(op) => {
                out.push(' ');
                out.push_str(op);
                out.push(' ');
            }
            Token::Open => out.push('('),
            Token::Close => out.push(')'),
            Token::Other => {}
        }
        previous = Some(token);
    }
    out.replace("( ", "(").replace(" )", ")").trim().to_owned()
}

/// A piece of text before operator words are recognised.
enum Lexeme {
    Token(Token),
    Word(String),
}

fn tokenize(text: &str) -> Vec<Token> {
    let lexemes = lex(text);
    let mut tokens = Vec::with_capacity(lexemes.len());
    let mut i = 0;
    while i < lexemes.len() {
        match &lexemes[i] {
            Lexeme::Token(token) => {
                tokens.push(token.clone());
                i += 1;
            }
            Lexeme::Word(_) => {
                let matched = OPERATOR_WORDS.iter().find_map(|(phrase, op)| {
                    let parts: Vec<&str> = phrase.split(' ').collect();
                    let fits = parts.iter().enumerate().all(|(k, part)| {
                        matches!(lexemes.get(i + k), Some(Lexeme::Word(w)) if w == part)
                    });
                    fits.then_some((parts.len(), *op))
                });
                match matched {
                    Some((len, op)) => {
                        tokens.push(Token::Op(op));
                        i += len;
                    }
                    None => {
                        tokens.push(Token::Other);
                        i += 1;
                    }
                }
            }
        }
    }
    tokens
}

/// Numbers, operator symbols, parentheses and folded words.
fn lex(text: &str) -> Vec<Lexeme> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let digit_after = |k: usize| chars.get(k).is_some_and(char::is_ascii_digit);
        if c.is_ascii_digit() || (c == '.' && digit_after(i + 1)) {
            let start = i;
            while i < chars.len()
                && (chars[i].is_ascii_digit()
                    || (matches!(chars[i], '.' | ',') && digit_after(i + 1)))
            {
                i += 1;
            }
            let raw: String = chars[start..i].iter().collect();
            out.push(Lexeme::Token(Token::Number(number(&raw))));
            continue;
        }
        if c.is_alphabetic() {
            let start = i;
            while i < chars.len() && chars[i].is_alphabetic() {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            out.push(Lexeme::Word(words(&word).concat()));
            continue;
        }
        let token = match c {
            '+' => Some(Token::Op("+")),
            '-' | '−' | '–' => Some(Token::Op("-")),
            '*' | '×' | '·' => Some(Token::Op("*")),
            '/' | '÷' | ':' => Some(Token::Op("/")),
            '^' => Some(Token::Op("^")),
            '%' => Some(Token::Op("%")),
            '(' => Some(Token::Open),
            ')' => Some(Token::Close),
            c if c.is_whitespace() || matches!(c, '?' | '¿' | '!' | '¡' | '=' | ',' | '.') => {
                None
            }
            _ => Some(Token::Other),
        };
        if let Some(token) = token {
            out.push(Lexeme::Token(token));
        }
        i += 1;
    }
    out
}

/// A number with a decimal comma made a point, and a thousands comma dropped (`1,000`).
fn number(raw: &str) -> String {
    match raw.split_once(',') {
        Some((_, after)) if after.len() == 3 && !after.contains(',') => raw.replace(',', ""),
        Some(_) => raw.replace(',', "."),
        None => raw.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symbols_and_words_in_three_languages() {
        for (text, expected) in [
            ("¿Cuánto es 12*(3+4)?", Some("12 * (3 + 4)")),
            ("what is 2 plus 3 times 4?", Some("2 + 3 * 4")),
            ("cuánto es 15 por 3", Some("15 * 3")),
            ("Сколько будет 10 разделить на 4?", Some("10 / 4")),
            ("what's 2 to the power of 10", Some("2 ^ 10")),
            ("calcula 3,5 + 1,25", Some("3.5 + 1.25")),
            ("1,000 - 1", Some("1000 - 1")),
            ("-3 + 5 please", Some("-3 + 5")),
            ("dividido: 9 dividido entre 3", Some("9 / 3")),
        ] {
            assert_eq!(expression(text).as_deref(), expected, "{text}");
        }
    }

    #[test]
    fn no_expression_without_two_numbers_and_an_operator() {
        for text in [
            "what time is it in Tokyo?",
            "I have 3 cats",
            "hola, por favor",
            "call 555",
            "2 3",
        ] {
            assert_eq!(expression(text), None, "{text}");
        }
    }
}
