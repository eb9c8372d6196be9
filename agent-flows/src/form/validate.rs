//! The validators of the seed's table, one per field type, plus a field's custom pattern.
//! Each failure says what is wrong in terms the user can act on ([`Invalid::explain`]), in
//! Spanish or English.
//!
//! | type | valid when |
//! | --- | --- |
//! | `email` | simplified RFC 5322: a dot-atom local part (letters, digits, ``!#$%&'*+/=?^_`{|}~-``, single dots inside, at most 64 characters), one `@`, a domain of at least two labels (letters, digits, inner hyphens, at most 63 characters each) ending in an alphabetic top-level domain; no quoted local parts, no IP literals; at most 254 characters |
//! | `phone` | only digits, spaces and `+ - . ( )`; `+` only first; balanced parentheses; 7 to 15 digits (E.164's maximum) |
//! | `url` | `http://` or `https://`, a host (domain, `localhost` or IPv4), an optional port up to 65535, no spaces |
//! | `number` | parses as a finite float (`42`, `-3.5`, `1e3`; not `NaN` or `inf`) |
//! | `text` | not empty once trimmed |
//!
//! Values are trimmed first; the trimmed value is what the form stores.

use super::spec::{FieldSpec, FieldType};
use crate::lang::Lang;

/// Why a value was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Invalid {
    /// The message held no value for the field.
    Missing,
    /// The value is empty.
    Empty,
    /// Not a valid email address.
    Email(EmailProblem),
    /// Not a valid phone number.
    Phone(PhoneProblem),
    /// Not a valid URL.
    Url(UrlProblem),
    /// Not a number (or not a finite one).
    Number,
    /// It does not match the field's custom pattern.
    Pattern,
}

/// What is wrong with an email address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EmailProblem {
    /// No `@`.
    NoAt,
    /// More than one `@`.
    SeveralAt,
    /// Nothing before the `@`.
    NoLocalPart,
    /// A character not allowed before the `@`.
    LocalCharacter(char),
    /// A dot first, last or doubled before the `@`.
    LocalDots,
    /// Nothing after the `@`.
    NoDomain,
    /// The domain has no dot (`juan@ejemplo`).
    NoDot,
    /// A bad label in the domain (empty, bad character, hyphen at an end, too long).
    DomainLabel(String),
    /// The top-level domain is not alphabetic or shorter than two letters.
    TopLevel(String),
    /// Too long (local part over 64, whole address over 254).
    TooLong,
    /// It has spaces.
    Spaces,
}

/// What is wrong with a phone number.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PhoneProblem {
    /// A character that is not a digit, a space or `+ - . ( )`.
    Character(char),
    /// `+` somewhere else than first.
    Plus,
    /// Unbalanced parentheses.
    Parentheses,
    /// Fewer than 7 digits (how many there are).
    TooFewDigits(usize),
    /// More than 15 digits (how many there are).
    TooManyDigits(usize),
}

/// What is wrong with a URL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UrlProblem {
    /// No `http://` or `https://`.
    Scheme,
    /// No host, or a malformed one.
    Host,
    /// A port that is not a number up to 65535.
    Port,
    /// It has spaces.
    Spaces,
}

/// The value `value` for `field`, trimmed, or why it is refused.
pub fn validate(field: &FieldSpec, value: Option<&str>) -> Result<String, Invalid> {
    let Some(value) = value else {
        return Err(Invalid::Missing);
    };
    let value = value.trim();
    if value.is_empty() {
        return Err(Invalid::Empty);
    }
    match field.kind {
        FieldType::Email => email(value).map_err(Invalid::Email)?,
        FieldType::Phone => phone(value).map_err(Invalid::Phone)?,
        FieldType::Url => url(value).map_err(Invalid::Url)?,
        FieldType::Number => number(value).ok_or(Invalid::Number).map(|_| ())?,
        FieldType::Text => {}
    }
    if let Some(pattern) = &field.pattern
        && !pattern.is_match(value)
    {
        return Err(Invalid::Pattern);
    }
    Ok(value.to_owned())
}

const LOCAL_SPECIALS: &str = "!#$%&'*+/=?^_`{|}~-";

/// Checks an email address (simplified RFC 5322; see the module docs).
pub fn email(value: &str) -> Result<(), EmailProblem> {
    if value.chars().any(char::is_whitespace) {
        return Err(EmailProblem::Spaces);
    }
    let (local, domain) = match value.split_once('@') {
        None => return Err(EmailProblem::NoAt),
        Some((_, rest)) if rest.contains('@') => return Err(EmailProblem::SeveralAt),
        Some(parts) => parts,
    };
    if local.is_empty() {
        return Err(EmailProblem::NoLocalPart);
    }
    if let Some(c) = local
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '.' || LOCAL_SPECIALS.contains(*c)))
    {
        return Err(EmailProblem::LocalCharacter(c));
    }
    if local.starts_with('.') || local.ends_with('.') || local.contains("..") {
        return Err(EmailProblem::LocalDots);
    }
    if domain.is_empty() {
        return Err(EmailProblem::NoDomain);
    }
    if local.len() > 64 || value.len() > 254 {
        return Err(EmailProblem::TooLong);
    }
    if !domain.contains('.') {
        return Err(EmailProblem::NoDot);
    }
    let labels: Vec<&str> = domain.split('.').collect();
    for label in &labels {
        if !host_label(label) {
            return Err(EmailProblem::DomainLabel((*label).to_owned()));
        }
    }
    let tld = labels.last().copied().unwrap_or_default();
    if tld.len() < 2 || !tld.chars().all(|c| c.is_ascii_alphabetic()) {
        return Err(EmailProblem::TopLevel(tld.to_owned()));
    }
    Ok(())
}

/// A DNS label: 1-63 letters, digits or inner hyphens.
fn host_label(label: &str) -> bool {
    !label.is_empty()
        && label.len() <= 63
        && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        && !label.starts_with('-')
        && !label.ends_with('-')
}

/// Checks a phone number (see the module docs).
pub fn phone(value: &str) -> Result<(), PhoneProblem> {
    let mut depth = 0i32;
    for (i, c) in value.chars().enumerate() {
        match c {
            '0'..='9' | ' ' | '-' | '.' => {}
            '+' if i == 0 => {}
            '+' => return Err(PhoneProblem::Plus),
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth < 0 {
                    return Err(PhoneProblem::Parentheses);
                }
            }
            other => return Err(PhoneProblem::Character(other)),
        }
    }
    if depth != 0 {
        return Err(PhoneProblem::Parentheses);
    }
    let digits = value.chars().filter(char::is_ascii_digit).count();
    if digits < 7 {
        return Err(PhoneProblem::TooFewDigits(digits));
    }
    if digits > 15 {
        return Err(PhoneProblem::TooManyDigits(digits));
    }
    Ok(())
}

/// Checks a URL (see the module docs).
pub fn url(value: &str) -> Result<(), UrlProblem> {
    if value.chars().any(char::is_whitespace) {
        return Err(UrlProblem::Spaces);
    }
    let lower = value.to_ascii_lowercase();
    let rest = if let Some(rest) = lower.strip_prefix("https://") {
        rest
    } else if let Some(rest) = lower.strip_prefix("http://") {
        rest
    } else {
        return Err(UrlProblem::Scheme);
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    // Credentials (`user:pass@`) are allowed by the URL syntax; the host follows them.
    let host_port = authority.rsplit('@').next().unwrap_or_default();
    let (host, port) = match host_port.rsplit_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (host_port, None),
    };
    if let Some(port) = port
        && (port.is_empty() || port.parse::<u16>().is_err())
    {
        return Err(UrlProblem::Port);
    }
    let ipv4 = host.split('.').count() == 4 && host.split('.').all(|p| p.parse::<u8>().is_ok());
    let domain = host.contains('.')
        && host.split('.').all(host_label)
        && host
            .rsplit('.')
            .next()
            .is_some_and(|tld| tld.len() >= 2 && tld.chars().all(|c| c.is_ascii_alphabetic()));
    if !(ipv4 || domain || host == "localhost") {
        return Err(UrlProblem::Host);
    }
    Ok(())
}

/// The value as a finite float, if it is one.
pub fn number(value: &str) -> Option<f64> {
    value.trim().parse::<f64>().ok().filter(|n| n.is_finite())
}

impl Invalid {
    /// What is wrong and what is expected, for the user, in `lang`.
    pub fn explain(&self, field: &FieldSpec, lang: Lang) -> String {
        let label = field.label(lang);
        let es = lang == Lang::Es;
        let text = |en: String, es_text: String| if es { es_text } else { en };
        match self {
            Invalid::Missing => text(
                format!("I couldn't find your {label} in that message."),
                format!("No encontré tu {label} en ese mensaje."),
            ),
            Invalid::Empty => text(
                format!("Your {label} can't be empty."),
                format!("Tu {label} no puede estar vacío."),
            ),
            Invalid::Email(problem) => {
                let why = match problem {
                    EmailProblem::NoAt => text("it has no @".into(), "le falta la @".into()),
                    EmailProblem::SeveralAt => {
                        text("it has more than one @".into(), "tiene más de una @".into())
                    }
                    EmailProblem::NoLocalPart => text(
                        "nothing comes before the @".into(),
                        "no hay nada antes de la @".into(),
                    ),
                    EmailProblem::LocalCharacter(c) => text(
                        format!("“{c}” is not allowed before the @"),
                        format!("«{c}» no se permite antes de la @"),
                    ),
                    EmailProblem::LocalDots => text(
                        "a dot can't start, end or repeat before the @".into(),
                        "un punto no puede ir al principio, al final ni repetido antes de la @"
                            .into(),
                    ),
                    EmailProblem::NoDomain => text(
                        "nothing comes after the @".into(),
                        "no hay nada después de la @".into(),
                    ),
                    EmailProblem::NoDot => text(
                        "the domain after the @ needs a dot, like example.com".into(),
                        "al dominio después de la @ le falta un punto, como ejemplo.com".into(),
                    ),
                    EmailProblem::DomainLabel(label) => text(
                        format!("“{label}” is not a valid part of a domain"),
                        format!("«{label}» no es una parte válida de un dominio"),
                    ),
                    EmailProblem::TopLevel(tld) => text(
                        format!("“{tld}” is not a valid ending; it should be like .com or .es"),
                        format!(
                            "«{tld}» no es una terminación válida; debería ser como .com o .es"
                        ),
                    ),
                    EmailProblem::TooLong => {
                        text("it is too long".into(), "es demasiado largo".into())
                    }
                    EmailProblem::Spaces => text("it has spaces".into(), "tiene espacios".into()),
                };
                text(
                    format!(
                        "That doesn't look like a valid email: {why}. Write it like name@example.com."
                    ),
                    format!(
                        "Eso no parece un email válido: {why}. Escríbelo así: nombre@ejemplo.com."
                    ),
                )
            }
            Invalid::Phone(problem) => {
                let why = match problem {
                    PhoneProblem::Character(c) => text(
                        format!("“{c}” is not allowed"),
                        format!("«{c}» no se permite"),
                    ),
                    PhoneProblem::Plus => text(
                        "the + can only go first".into(),
                        "el + solo puede ir al principio".into(),
                    ),
                    PhoneProblem::Parentheses => text(
                        "the parentheses don't match".into(),
                        "los paréntesis no cuadran".into(),
                    ),
                    PhoneProblem::TooFewDigits(n) => text(
                        format!("it has {n} digits and needs at least 7"),
                        format!("tiene {n} dígitos y necesita al menos 7"),
                    ),
                    PhoneProblem::TooManyDigits(n) => text(
                        format!("it has {n} digits, more than the 15 a phone number can have"),
                        format!("tiene {n} dígitos, más de los 15 que puede tener un teléfono"),
                    ),
                };
                text(
                    format!(
                        "That doesn't look like a valid {label}: {why}. Use digits, spaces and + - ( ), like +34 600 123 456."
                    ),
                    format!(
                        "Eso no parece un {label} válido: {why}. Usa dígitos, espacios y + - ( ), como +34 600 123 456."
                    ),
                )
            }
            Invalid::Url(problem) => {
                let why = match problem {
                    UrlProblem::Scheme => text(
                        "it must start with http:// or https://".into(),
                        "debe empezar por http:// o https://".into(),
                    ),
                    UrlProblem::Host => text(
                        "the site's name is missing or malformed".into(),
                        "falta el nombre del sitio o está mal escrito".into(),
                    ),
                    UrlProblem::Port => text(
                        "the port is not a number up to 65535".into(),
                        "el puerto no es un número hasta 65535".into(),
                    ),
                    UrlProblem::Spaces => text("it has spaces".into(), "tiene espacios".into()),
                };
                text(
                    format!(
                        "That doesn't look like a valid {label}: {why}. Write it like https://example.com."
                    ),
                    format!(
                        "Eso no parece una {label} válida: {why}. Escríbela así: https://ejemplo.com."
                    ),
                )
            }
            Invalid::Number => text(
                format!("Your {label} must be a number, like 42 or 3.5."),
                format!("Tu {label} debe ser un número, como 42 o 3.5."),
            ),
            Invalid::Pattern => match field.hint.get(lang) {
                Some(hint) => text(
                    format!("That {label} doesn't have the expected format: {hint}."),
                    format!("Ese {label} no tiene el formato esperado: {hint}."),
                ),
                None => text(
                    format!("That {label} doesn't have the expected format."),
                    format!("Ese {label} no tiene el formato esperado."),
                ),
            },
        }
    }

    /// A short code for the state's metadata (`email:no_at`, `missing`...).
    pub fn code(&self) -> String {
        match self {
            Invalid::Missing => "missing".into(),
            Invalid::Empty => "empty".into(),
            Invalid::Email(p) => format!("email:{}", snake(&format!("{p:?}"))),
            Invalid::Phone(p) => format!("phone:{}", snake(&format!("{p:?}"))),
            Invalid::Url(p) => format!("url:{}", snake(&format!("{p:?}"))),
            Invalid::Number => "number".into(),
            Invalid::Pattern => "pattern".into(),
        }
    }
}

/// `LocalCharacter(' ')` -> `local_character`.
fn snake(debug: &str) -> String {
    let name = debug.split('(').next().unwrap_or(debug);
    let mut out = String::new();
    for (i, c) in name.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::form::spec::Texts;

    fn field(kind: FieldType) -> FieldSpec {
        FieldSpec::new("f", kind, Texts::new("value", "valor"), Texts::default())
    }

    #[test]
    fn emails() {
        use EmailProblem::*;
        let cases: &[(&str, Result<(), EmailProblem>)] = &[
            ("juan@ejemplo.com", Ok(())),
            ("juan.nuevo@ejemplo.com", Ok(())),
            ("j+tag@sub.example.co.uk", Ok(())),
            ("o'brien@example.ie", Ok(())),
            ("x@a-b.io", Ok(())),
            ("juan", Err(NoAt)),
            ("a@b@c.com", Err(SeveralAt)),
            ("@ejemplo.com", Err(NoLocalPart)),
            ("ju an@ejemplo.com", Err(Spaces)),
            ("juan,@ejemplo.com", Err(LocalCharacter(','))),
            ("josé@ejemplo.com", Err(LocalCharacter('é'))),
            (".juan@ejemplo.com", Err(LocalDots)),
            ("juan.@ejemplo.com", Err(LocalDots)),
            ("ju..an@ejemplo.com", Err(LocalDots)),
            ("juan@", Err(NoDomain)),
            ("juan@ejemplo", Err(NoDot)),
            ("juan@ejemplo..com", Err(DomainLabel(String::new()))),
            ("juan@-ejemplo.com", Err(DomainLabel("-ejemplo".into()))),
            ("juan@ejemplo.c", Err(TopLevel("c".into()))),
            ("juan@ejemplo.c0m", Err(TopLevel("c0m".into()))),
            ("juan@192.168.0.1", Err(TopLevel("1".into()))),
        ];
        for (value, expected) in cases {
            assert_eq!(&email(value), expected, "{value}");
        }
        assert_eq!(email(&format!("{}@x.com", "a".repeat(65))), Err(TooLong));
        assert_eq!(email(&format!("{}@x.com", "a".repeat(64))), Ok(()));
    }

    #[test]
    fn phones() {
        use PhoneProblem::*;
        let cases: &[(&str, Result<(), PhoneProblem>)] = &[
            ("+34 600 123 456", Ok(())),
            ("600123456", Ok(())),
            ("(555) 123-4567", Ok(())),
            ("555.123.4567", Ok(())),
            ("1234567", Ok(())),
            ("123456", Err(TooFewDigits(6))),
            ("+1 234 567 890 123 456", Err(TooManyDigits(16))),
            ("600-12a-456", Err(Character('a'))),
            ("600 123 456 ext 2", Err(Character('e'))),
            ("34+600123456", Err(Plus)),
            ("(555 123 4567", Err(Parentheses)),
            ("555) 123 (4567", Err(Parentheses)),
        ];
        for (value, expected) in cases {
            assert_eq!(&phone(value), expected, "{value}");
        }
    }

    #[test]
    fn urls() {
        use UrlProblem::*;
        let cases: &[(&str, Result<(), UrlProblem>)] = &[
            ("https://ejemplo.com", Ok(())),
            ("http://ejemplo.com/a/b?c=d#e", Ok(())),
            ("HTTPS://Example.COM", Ok(())),
            ("http://localhost:8080/x", Ok(())),
            ("http://192.168.0.1", Ok(())),
            ("https://user:pw@example.com/", Ok(())),
            ("www.ejemplo.com", Err(Scheme)),
            ("ftp://ejemplo.com", Err(Scheme)),
            ("https://", Err(Host)),
            ("https://ejemplo", Err(Host)),
            ("https://-x.com", Err(Host)),
            ("https://ejemplo.com:99999", Err(Port)),
            ("https://ejemplo.com:", Err(Port)),
            ("https://ejemplo .com", Err(Spaces)),
        ];
        for (value, expected) in cases {
            assert_eq!(&url(value), expected, "{value}");
        }
    }

    #[test]
    fn numbers() {
        for ok in ["42", "-3.5", "1e3", " 7 ", "0.001", "+2"] {
            assert!(number(ok).is_some(), "{ok}");
        }
        for bad in [
            "",
            "abc",
            "NaN",
            "inf",
            "-infinity",
            "1,5",
            "3.5.1",
            "12 34",
        ] {
            assert!(number(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn the_table_by_field_type() {
        let text = field(FieldType::Text);
        assert_eq!(validate(&text, Some("  Juan  ")), Ok("Juan".into()));
        assert_eq!(validate(&text, Some("   ")), Err(Invalid::Empty));
        assert_eq!(validate(&text, None), Err(Invalid::Missing));
        assert_eq!(
            validate(&field(FieldType::Number), Some("tres")),
            Err(Invalid::Number)
        );
        assert_eq!(
            validate(&field(FieldType::Number), Some("3")),
            Ok("3".into())
        );
        assert!(validate(&field(FieldType::Email), Some("juan@ejemplo.com")).is_ok());
        assert!(validate(&field(FieldType::Phone), Some("+34 600 123 456")).is_ok());
        assert!(validate(&field(FieldType::Url), Some("https://x.org")).is_ok());
    }

    #[test]
    fn the_custom_pattern_applies_after_the_type() {
        let mut code = field(FieldType::Text);
        code.pattern = Some(regex::Regex::new("^(?:[A-Z]{2}-[0-9]{4})$").unwrap());
        code.hint = Texts::new(
            "two capitals, a hyphen, four digits",
            "dos mayúsculas, guion, cuatro cifras",
        );
        assert_eq!(validate(&code, Some("AB-1234")), Ok("AB-1234".into()));
        assert_eq!(validate(&code, Some("ab-1234")), Err(Invalid::Pattern));
        assert_eq!(
            Invalid::Pattern.explain(&code, Lang::En),
            "That value doesn't have the expected format: two capitals, a hyphen, four digits."
        );
        let mut company = field(FieldType::Email);
        company.pattern = Some(regex::Regex::new("^(?:.+@empresa\\.es)$").unwrap());
        assert_eq!(
            validate(&company, Some("a@empresa.es")),
            Ok("a@empresa.es".into())
        );
        assert_eq!(validate(&company, Some("a@otra.es")), Err(Invalid::Pattern));
        assert_eq!(
            validate(&company, Some("a@empresa")),
            Err(Invalid::Email(EmailProblem::NoDot)),
            "the type's validator first"
        );
    }

    #[test]
    fn explanations_say_what_to_do_in_both_languages() {
        let email_field = field(FieldType::Email);
        let problem = Invalid::Email(EmailProblem::NoDot);
        assert_eq!(
            problem.explain(&email_field, Lang::Es),
            "Eso no parece un email válido: al dominio después de la @ le falta un punto, como ejemplo.com. Escríbelo así: nombre@ejemplo.com."
        );
        assert!(problem.explain(&email_field, Lang::En).starts_with(
            "That doesn't look like a valid email: the domain after the @ needs a dot"
        ));
        assert_eq!(problem.code(), "email:no_dot");
        assert_eq!(
            Invalid::Phone(PhoneProblem::TooFewDigits(5)).code(),
            "phone:too_few_digits"
        );
        assert!(
            Invalid::Phone(PhoneProblem::TooFewDigits(5))
                .explain(&field(FieldType::Phone), Lang::Es)
                .contains("tiene 5 dígitos y necesita al menos 7")
        );
        assert_eq!(
            Invalid::Missing.explain(&email_field, Lang::En),
            "I couldn't find your value in that message."
        );
    }
}
