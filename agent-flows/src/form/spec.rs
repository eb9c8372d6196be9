//! The form is data: its fields (name, type, optional custom pattern, label, prompt and the
//! language they are written in), the language it answers in when the user's does not show,
//! and its escalation settings. Built-in forms (`signup`: name then email, the seed's traces;
//! `contact`: name, email, phone), a TOML / JSON file (`--form FILE`), or the same JSON given
//! inline (a served run's `context.form` object), checked when loaded with errors that name
//! the bad field.
//!
//! ```toml
//! name = "newsletter"
//! language = "es"                 # replies when the user's language does not show (es, en)
//!
//! [[fields]]
//! name = "name"
//! type = "text"                   # email, phone, url, number, text
//! label = { es = "nombre", en = "name" }
//! prompt = { es = "¿Cómo te llamas?", en = "What is your name?" }
//!
//! [[fields]]
//! name = "code"
//! type = "text"
//! prompt = "¿Cuál es tu código de socio?"   # a plain string is in `language` (or the field's)
//! pattern = "[A-Z]{2}-[0-9]{4}"   # must match the whole value
//! hint = "dos letras mayúsculas, un guion y cuatro cifras (AB-1234)"
//!
//! [escalation]                    # every key optional; see EscalationConfig
//! policies = ["keyword", "timeout", "sentiment", "llm_intent", "completion"]
//! max_failed_attempts = 3
//! ```

use std::path::Path;

use regex::Regex;
use serde::{Deserialize, Serialize};

use super::escalation::{EscalationConfig, RawEscalation};
use crate::error::FlowError;
use crate::lang::Lang;

/// The built-in forms, by name ([`FormSpec::builtin`]): `signup` asks a name, then an email
/// (the seed's traces; the default); `contact` a name, an email, then a phone number.
pub const BUILTIN_FORMS: &[&str] = &["signup", "contact"];

/// The name of a form given as JSON that names itself not.
pub const INLINE_FORM: &str = "inline";

/// The form used when none is given.
pub const DEFAULT_FORM: &str = "signup";

/// What a field holds; each type has its validator ([`super::validate`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FieldType {
    /// An email address (simplified RFC 5322).
    Email,
    /// A phone number: at least 7 digits, only digits, spaces, `+ - . ( )`.
    Phone,
    /// An http or https URL.
    Url,
    /// A number (parseable as a float).
    Number,
    /// Any non-empty text.
    Text,
}

impl FieldType {
    /// Its name in form files.
    pub fn as_str(self) -> &'static str {
        match self {
            FieldType::Email => "email",
            FieldType::Phone => "phone",
            FieldType::Url => "url",
            FieldType::Number => "number",
            FieldType::Text => "text",
        }
    }
}

/// A text in the languages the flow answers in (Spanish, English).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Texts {
    /// English.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub en: Option<String>,
    /// Spanish.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub es: Option<String>,
}

impl Texts {
    /// The same text in both languages... given separately.
    pub fn new(en: &str, es: &str) -> Self {
        Texts {
            en: Some(en.to_owned()),
            es: Some(es.to_owned()),
        }
    }

    /// The text in `lang`, else in the other language, else `None`.
    pub fn get(&self, lang: Lang) -> Option<&str> {
        let (first, second) = match lang {
            Lang::Es => (&self.es, &self.en),
            Lang::En | Lang::Ru => (&self.en, &self.es),
        };
        first.as_deref().or(second.as_deref())
    }

    /// Whether no language has a text.
    pub fn is_empty(&self) -> bool {
        self.en.is_none() && self.es.is_none()
    }

    /// Every text given.
    pub fn all(&self) -> impl Iterator<Item = &str> {
        self.en.iter().chain(self.es.iter()).map(String::as_str)
    }
}

/// One field of a form.
#[derive(Clone, Debug)]
pub struct FieldSpec {
    /// Its name (the key of the collected value): lower case letters, digits, `_`.
    pub name: String,
    /// Its type.
    pub kind: FieldType,
    /// How the flow names it to the user ("correo electrónico").
    pub label: Texts,
    /// The question that asks for it.
    pub prompt: Texts,
    /// A custom pattern the whole value must match, beside the type's validator.
    pub pattern: Option<Regex>,
    /// What the custom pattern expects, told to the user when a value does not match it.
    pub hint: Texts,
    /// Words that name the field in a message, beside its label and the type's usual names.
    pub aliases: Vec<String>,
}

impl FieldSpec {
    /// A field of `kind` with bilingual label and prompt.
    pub fn new(name: &str, kind: FieldType, label: Texts, prompt: Texts) -> Self {
        FieldSpec {
            name: name.to_owned(),
            kind,
            label,
            prompt,
            pattern: None,
            hint: Texts::default(),
            aliases: Vec::new(),
        }
    }

    /// The label in `lang`; without one, the usual name of its type (a phone field is a
    /// "teléfono"), else its name.
    pub fn label(&self, lang: Lang) -> String {
        if let Some(label) = self.label.get(lang) {
            return label.to_owned();
        }
        let es = lang == Lang::Es;
        match self.kind {
            FieldType::Phone => if es { "teléfono" } else { "phone number" }.to_owned(),
            FieldType::Email => "email".to_owned(),
            FieldType::Url => if es { "web" } else { "website" }.to_owned(),
            FieldType::Number | FieldType::Text => self.name.replace('_', " "),
        }
    }

    /// The prompt in `lang`.
    pub fn prompt(&self, lang: Lang) -> String {
        match self.prompt.get(lang) {
            Some(prompt) => prompt.to_owned(),
            None => match lang {
                Lang::Es => format!("¿Cuál es tu {}?", self.label(lang)),
                Lang::En | Lang::Ru => format!("What is your {}?", self.label(lang)),
            },
        }
    }

    /// Whether the field holds a person's name (its name says so): the extractor then knows
    /// "me llamo X" / "I'm X" answer it.
    pub fn is_person_name(&self) -> bool {
        self.kind == FieldType::Text
            && matches!(
                self.name.as_str(),
                "name" | "full_name" | "first_name" | "nombre" | "fullname" | "your_name"
            )
    }
}

/// A form: fields in the order they are asked, its language, its escalation settings.
#[derive(Clone, Debug)]
pub struct FormSpec {
    /// Its name (recorded in the conversation, so a thread is not continued on another form).
    pub name: String,
    /// The language of replies until the user's language shows.
    pub language: Lang,
    /// The fields, asked in this order.
    pub fields: Vec<FieldSpec>,
    /// The escalation policies and their settings.
    pub escalation: EscalationConfig,
}

impl FormSpec {
    /// The field called `name`.
    pub fn field(&self, name: &str) -> Option<&FieldSpec> {
        self.fields.iter().find(|f| f.name == name)
    }

    /// The field names, in order.
    pub fn field_names(&self) -> Vec<String> {
        self.fields.iter().map(|f| f.name.clone()).collect()
    }

    /// A built-in form by name.
    pub fn builtin(name: &str) -> Option<FormSpec> {
        let name_field = FieldSpec::new(
            "name",
            FieldType::Text,
            Texts::new("name", "nombre"),
            Texts::new("What is your name?", "¿Cuál es tu nombre?"),
        );
        let email = FieldSpec::new(
            "email",
            FieldType::Email,
            Texts::new("email", "email"),
            Texts::new("What is your email?", "¿Cuál es tu email?"),
        );
        let phone = FieldSpec::new(
            "phone",
            FieldType::Phone,
            Texts::new("phone number", "teléfono"),
            Texts::new(
                "What is your phone number?",
                "¿Cuál es tu número de teléfono?",
            ),
        );
        let fields = match name {
            "signup" => vec![name_field, email],
            "contact" => vec![name_field, email, phone],
            _ => return None,
        };
        Some(FormSpec {
            name: name.to_owned(),
            language: Lang::En,
            fields,
            escalation: EscalationConfig::default(),
        })
    }

    /// The form `spec` names: a built-in form's name, a form given as JSON (the text of a
    /// JSON form file, starting with `{`: see [`FormSpec::inline`]), or the path of a
    /// `.toml` / `.json` file.
    pub fn load(spec: &str) -> Result<FormSpec, FlowError> {
        let spec = spec.trim();
        if let Some(form) = FormSpec::builtin(spec) {
            return Ok(form);
        }
        if spec.starts_with('{') {
            return FormSpec::inline(spec);
        }
        let file = FormFile::read(spec)?;
        file.parse()
    }

    /// A form given as JSON in a form file's shape (`--set form='{"fields": [...]}'`, a served
    /// run's `context.form` object), checked as a file is: an error names the field and is
    /// an error of the option `form`. Named [`INLINE_FORM`] unless it names itself.
    pub fn inline(json: &str) -> Result<FormSpec, FlowError> {
        FormSpec::parse(json, true, INLINE_FORM).map_err(|message| FlowError::Option {
            flow: super::FLOW,
            key: "form".to_owned(),
            message: format!("the form given as JSON: {message}"),
        })
    }

    /// The form `spec` names made self-contained, as [`FormSpec::load`] takes it: a form
    /// file is read and checked now and becomes its form as JSON (named after the file when
    /// it names itself not), so that loading it later reads no file; a built-in form's name
    /// or a form already given as JSON stays as it is.
    pub fn resolve(spec: &str) -> Result<String, FlowError> {
        let spec = spec.trim();
        if FormSpec::builtin(spec).is_some() || spec.starts_with('{') {
            return Ok(spec.to_owned());
        }
        let file = FormFile::read(spec)?;
        file.parse()?;
        let not_valid = |message: String| setup(format!("form file {spec}: {message}"));
        let mut value: serde_json::Value = if file.json {
            serde_json::from_str(&file.text).map_err(|e| not_valid(e.to_string()))?
        } else {
            toml::from_str(&file.text).map_err(|e| not_valid(e.to_string()))?
        };
        if let Some(form) = value.as_object_mut() {
            let named = form
                .get("name")
                .and_then(serde_json::Value::as_str)
                .is_some_and(|n| !n.trim().is_empty());
            if !named {
                form.insert("name".to_owned(), file.stem.into());
            }
        }
        Ok(value.to_string())
    }

    /// A form from the text of a file (`json`: JSON, else TOML); `default_name` names it when
    /// the file does not. Errors say where and what to do.
    pub fn parse(text: &str, json: bool, default_name: &str) -> Result<FormSpec, String> {
        let raw: RawForm = if json {
            serde_json::from_str(text).map_err(|e| format!("not a valid form: {e}"))?
        } else {
            toml::from_str(text)
                .map_err(|e| format!("not a valid form: {}", e.to_string().trim()))?
        };
        raw.check(default_name)
    }
}

/// A form file's text, read.
struct FormFile {
    /// The path as given.
    spec: String,
    text: String,
    /// JSON (else TOML).
    json: bool,
    /// The file's name without extension: the form's name unless it names itself.
    stem: String,
}

impl FormFile {
    fn read(spec: &str) -> Result<FormFile, FlowError> {
        let path = Path::new(spec);
        let text = std::fs::read_to_string(path).map_err(|e| {
            setup(format!(
                "cannot read the form file {spec}: {e}; pass a TOML or JSON file, or a built-in form ({})",
                BUILTIN_FORMS.join(", ")
            ))
        })?;
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "form".to_owned());
        let json = match path.extension().and_then(|e| e.to_str()) {
            Some(ext) if ext.eq_ignore_ascii_case("json") => true,
            Some(ext) if ext.eq_ignore_ascii_case("toml") => false,
            _ => text.trim_start().starts_with('{'),
        };
        Ok(FormFile {
            spec: spec.to_owned(),
            text,
            json,
            stem,
        })
    }

    fn parse(&self) -> Result<FormSpec, FlowError> {
        FormSpec::parse(&self.text, self.json, &self.stem)
            .map_err(|message| setup(format!("form file {}: {message}", self.spec)))
    }
}

fn setup(message: String) -> FlowError {
    FlowError::Setup {
        flow: super::FLOW,
        message,
    }
}

/// A text as a file writes it: one string (in the field's or the form's language) or one per
/// language code.
#[derive(Clone, Debug, Deserialize)]
#[serde(untagged)]
enum RawText {
    Plain(String),
    ByLang(std::collections::BTreeMap<String, String>),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawForm {
    name: Option<String>,
    language: Option<String>,
    #[serde(default)]
    fields: Vec<RawField>,
    #[serde(default)]
    escalation: Option<RawEscalation>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawField {
    name: Option<String>,
    #[serde(rename = "type")]
    kind: Option<String>,
    label: Option<RawText>,
    prompt: Option<RawText>,
    language: Option<String>,
    pattern: Option<String>,
    hint: Option<RawText>,
    #[serde(default)]
    aliases: Vec<String>,
}

/// The language with this code, if the flow answers in it.
fn language(code: &str) -> Result<Lang, String> {
    match Lang::from_code(code) {
        Some(lang @ (Lang::Es | Lang::En)) => Ok(lang),
        _ => Err(format!(
            "language `{code}` is not one the form flow answers in; use `es` or `en`"
        )),
    }
}

fn texts(raw: Option<RawText>, lang: Lang, what: &str) -> Result<Texts, String> {
    let mut out = Texts::default();
    match raw {
        None => {}
        Some(RawText::Plain(text)) => {
            let text = text.trim().to_owned();
            if text.is_empty() {
                return Err(format!("`{what}` is empty"));
            }
            match lang {
                Lang::Es => out.es = Some(text),
                Lang::En | Lang::Ru => out.en = Some(text),
            }
        }
        Some(RawText::ByLang(map)) => {
            for (code, text) in map {
                let text = text.trim().to_owned();
                if text.is_empty() {
                    return Err(format!("`{what}.{code}` is empty"));
                }
                match language(&code).map_err(|e| format!("`{what}`: {e}"))? {
                    Lang::Es => out.es = Some(text),
                    Lang::En | Lang::Ru => out.en = Some(text),
                }
            }
        }
    }
    Ok(out)
}

impl RawForm {
    fn check(self, default_name: &str) -> Result<FormSpec, String> {
        let form_lang = match &self.language {
            Some(code) => language(code)?,
            None => Lang::En,
        };
        if self.fields.is_empty() {
            return Err(
                "the form has no fields; add at least one [[fields]] entry with a name and a type"
                    .to_owned(),
            );
        }
        let mut fields: Vec<FieldSpec> = Vec::with_capacity(self.fields.len());
        for (index, raw) in self.fields.into_iter().enumerate() {
            let position = index + 1;
            let Some(name) = raw
                .name
                .map(|n| n.trim().to_owned())
                .filter(|n| !n.is_empty())
            else {
                return Err(format!(
                    "field {position}: it has no `name`; give it one (for example name = \"email\")"
                ));
            };
            let at = format!("field {position} (`{name}`)");
            if !name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
                || name.starts_with(|c: char| c.is_ascii_digit())
            {
                return Err(format!(
                    "{at}: the name may only hold lower case letters, digits and `_`, and not start with a digit"
                ));
            }
            if fields.iter().any(|f| f.name == name) {
                return Err(format!("{at}: another field already has this name"));
            }
            let kind = match raw.kind.as_deref().map(str::trim) {
                None => {
                    return Err(format!(
                        "{at}: it has no `type`; use email, phone, url, number or text"
                    ));
                }
                Some("email") => FieldType::Email,
                Some("phone") => FieldType::Phone,
                Some("url") => FieldType::Url,
                Some("number") => FieldType::Number,
                Some("text") => FieldType::Text,
                Some(other) => {
                    return Err(format!(
                        "{at}: unknown type `{other}`; use email, phone, url, number or text"
                    ));
                }
            };
            let lang = match &raw.language {
                Some(code) => language(code).map_err(|e| format!("{at}: {e}"))?,
                None => form_lang,
            };
            let label = texts(raw.label, lang, "label").map_err(|e| format!("{at}: {e}"))?;
            let prompt = texts(raw.prompt, lang, "prompt").map_err(|e| format!("{at}: {e}"))?;
            let hint = texts(raw.hint, lang, "hint").map_err(|e| format!("{at}: {e}"))?;
            let pattern = match raw.pattern {
                None => None,
                Some(pattern) => Some(Regex::new(&format!("^(?:{pattern})$")).map_err(|e| {
                    format!("{at}: the pattern `{pattern}` is not a valid regular expression: {e}")
                })?),
            };
            let aliases = raw
                .aliases
                .into_iter()
                .map(|a| a.trim().to_owned())
                .filter(|a| !a.is_empty())
                .collect();
            fields.push(FieldSpec {
                name,
                kind,
                label,
                prompt,
                pattern,
                hint,
                aliases,
            });
        }
        let escalation = match self.escalation {
            Some(raw) => raw.check().map_err(|e| format!("[escalation]: {e}"))?,
            None => EscalationConfig::default(),
        };
        Ok(FormSpec {
            name: self
                .name
                .map(|n| n.trim().to_owned())
                .filter(|n| !n.is_empty())
                .unwrap_or_else(|| default_name.to_owned()),
            language: form_lang,
            fields,
            escalation,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_forms_ask_in_order() {
        let signup = FormSpec::builtin("signup").unwrap();
        assert_eq!(signup.field_names(), ["name", "email"]);
        assert_eq!(signup.fields[1].prompt(Lang::Es), "¿Cuál es tu email?");
        assert_eq!(signup.fields[0].prompt(Lang::En), "What is your name?");
        let contact = FormSpec::builtin("contact").unwrap();
        assert_eq!(contact.field_names(), ["name", "email", "phone"]);
        assert!(FormSpec::builtin("nope").is_none());
    }

    #[test]
    fn a_toml_form_with_every_feature() {
        let form = FormSpec::parse(
            r#"
            name = "club"
            language = "es"
            [[fields]]
            name = "code"
            type = "text"
            prompt = "¿Cuál es tu código?"
            pattern = "[A-Z]{2}-[0-9]{4}"
            hint = "AB-1234"
            aliases = ["código de socio"]
            [[fields]]
            name = "site"
            type = "url"
            label = { es = "web", en = "website" }
            [escalation]
            policies = ["keyword"]
            max_failed_attempts = 5
            "#,
            false,
            "x",
        )
        .unwrap();
        assert_eq!(form.name, "club");
        assert_eq!(form.language, Lang::Es);
        let code = &form.fields[0];
        assert_eq!(code.prompt.es.as_deref(), Some("¿Cuál es tu código?"));
        assert_eq!(
            code.prompt(Lang::En),
            "¿Cuál es tu código?",
            "falls back to the other language"
        );
        assert!(code.pattern.as_ref().unwrap().is_match("AB-1234"));
        assert!(
            !code.pattern.as_ref().unwrap().is_match("xAB-1234"),
            "anchored"
        );
        assert_eq!(form.fields[1].prompt(Lang::En), "What is your website?");
        assert_eq!(form.escalation.max_failed_attempts, 5);
    }

    #[test]
    fn a_json_form() {
        let form = FormSpec::parse(
            r#"{"fields": [{"name": "age", "type": "number", "prompt": {"en": "How old are you?"}}]}"#,
            true,
            "ages",
        )
        .unwrap();
        assert_eq!(form.name, "ages");
        assert_eq!(form.fields[0].kind, FieldType::Number);
    }

    #[test]
    fn errors_name_the_bad_field() {
        let cases = [
            (
                "[[fields]]\nname = \"email\"\ntype = \"mail\"",
                "field 1 (`email`): unknown type `mail`; use email, phone, url, number or text",
            ),
            (
                "[[fields]]\nname = \"a\"\ntype = \"text\"\n[[fields]]\nname = \"a\"\ntype = \"text\"",
                "field 2 (`a`): another field already has this name",
            ),
            ("[[fields]]\ntype = \"text\"", "field 1: it has no `name`"),
            (
                "[[fields]]\nname = \"age\"",
                "field 1 (`age`): it has no `type`",
            ),
            (
                "[[fields]]\nname = \"Bad Name\"\ntype = \"text\"",
                "field 1 (`Bad Name`): the name may only hold",
            ),
            (
                "[[fields]]\nname = \"code\"\ntype = \"text\"\npattern = \"[a-\"",
                "field 1 (`code`): the pattern `[a-` is not a valid regular expression",
            ),
            (
                "[[fields]]\nname = \"x\"\ntype = \"text\"\nprompt = { fr = \"Quel?\" }",
                "field 1 (`x`): `prompt`: language `fr` is not one the form flow answers in",
            ),
            (
                "[[fields]]\nname = \"x\"\ntype = \"text\"\ncolour = \"red\"",
                "unknown field `colour`",
            ),
            ("name = \"empty\"", "the form has no fields"),
            (
                "language = \"ru\"\n[[fields]]\nname = \"x\"\ntype = \"text\"",
                "language `ru` is not one the form flow answers in",
            ),
            (
                "[[fields]]\nname = \"x\"\ntype = \"text\"\n[escalation]\npolicies = [\"psychic\"]",
                "[escalation]: unknown policy `psychic`",
            ),
        ];
        for (text, expected) in cases {
            let error = FormSpec::parse(text, false, "f").unwrap_err();
            assert!(
                error.contains(expected),
                "{text}\n=> {error}\nexpected: {expected}"
            );
        }
        let error = FormSpec::parse("{\"fields\": [{\"name\": \"x\", \"type\": 3}]}", true, "f")
            .unwrap_err();
        assert!(error.contains("not a valid form"), "{error}");
    }

    #[test]
    fn load_reads_files_and_says_what_to_pass() {
        let dir = std::env::temp_dir().join(format!("form-spec-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("shop.toml");
        std::fs::write(&file, "[[fields]]\nname = \"web\"\ntype = \"url\"\n").unwrap();
        let form = FormSpec::load(file.to_str().unwrap()).unwrap();
        assert_eq!(form.name, "shop");
        let bad = dir.join("bad.json");
        std::fs::write(
            &bad,
            "{\"fields\": [{\"name\": \"web\", \"type\": \"link\"}]}",
        )
        .unwrap();
        let error = FormSpec::load(bad.to_str().unwrap())
            .unwrap_err()
            .to_string();
        assert!(error.starts_with("flow `form`: form file"), "{error}");
        assert!(
            error.contains("field 1 (`web`): unknown type `link`"),
            "{error}"
        );
        let missing = FormSpec::load("/nonexistent/form.toml")
            .unwrap_err()
            .to_string();
        assert!(
            missing.contains("built-in form (signup, contact)"),
            "{missing}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
