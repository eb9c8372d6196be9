//! Semantic search's parts: the [`Embed`] trait a store calls (this crate knows nothing of
//! models: agent-llm's embeddings implement it), the [`IndexConfig`] that says which fields of
//! a value are embedded, the JSON paths that pick them, and cosine similarity.
//!
//! Paths are LangGraph's: `$` (the whole value as JSON), `a.b` (nested fields), `items[*].x`
//! (every element), `items[0]` / `items[-1]` (one element), `*` (every field) and
//! `{a,b.c}` (several fields). A string is embedded as it is; a number or boolean as its text;
//! an object or array as its JSON.
//!
//! Search is exact: a query is compared with every vector of every candidate item (one dot
//! product of `dims` floats per field embedded), which at 1,536 dims costs about a microsecond
//! per vector: fine for thousands of items, a linear scan for millions.

use std::fmt;
use std::sync::Arc;

use serde_json::{Map, Value};

use super::StoreError;
use crate::error::BoxError;

/// Turns texts into vectors, one per text, each of the index's `dims`.
#[async_trait::async_trait]
pub trait Embed: Send + Sync {
    /// The vectors of `texts`, in order.
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, BoxError>;
}

/// Which fields of the items a store embeds, and with what.
#[derive(Clone)]
pub struct IndexConfig {
    /// The vectors' length.
    pub dims: usize,
    /// The embedding function.
    pub embed: Arc<dyn Embed>,
    /// The paths embedded by default (`["$"]`: the whole value).
    pub fields: Vec<String>,
}

impl fmt::Debug for IndexConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IndexConfig")
            .field("dims", &self.dims)
            .field("fields", &self.fields)
            .finish_non_exhaustive()
    }
}

impl IndexConfig {
    /// An index of `dims` dimensions embedding whole values with `embed`.
    pub fn new(dims: usize, embed: Arc<dyn Embed>) -> Self {
        IndexConfig {
            dims,
            embed,
            fields: vec!["$".to_owned()],
        }
    }

    /// Embeds these paths instead of the whole value.
    pub fn fields<I: IntoIterator<Item = S>, S: Into<String>>(mut self, fields: I) -> Self {
        self.fields = fields.into_iter().map(Into::into).collect();
        self
    }

    /// Embeds `texts`, checking the answer's shape.
    pub(crate) async fn embed_texts(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, StoreError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let count = texts.len();
        let vectors = self
            .embed
            .embed(texts)
            .await
            .map_err(|source| StoreError::Embed { count, source })?;
        if vectors.len() != count {
            return Err(StoreError::Embed {
                count,
                source: format!("the embedder answered {} vectors", vectors.len()).into(),
            });
        }
        if let Some(bad) = vectors.iter().find(|v| v.len() != self.dims) {
            return Err(StoreError::Embed {
                count,
                source: format!(
                    "a vector has {} dimensions where the index has {}",
                    bad.len(),
                    self.dims
                )
                .into(),
            });
        }
        Ok(vectors)
    }
}

/// One step of a path.
#[derive(Debug, Clone, PartialEq)]
enum Token {
    Field(String),
    Index(i64),
    EveryElement,
    EveryField,
    Fields(Vec<String>),
}

/// Checks that a path parses (an index path given with a put).
pub fn validate_path(path: &str) -> Result<(), String> {
    tokenize(path).map(|_| ())
}

fn tokenize(path: &str) -> Result<Vec<Token>, String> {
    let mut tokens = Vec::new();
    let mut field = String::new();
    let mut chars = path.chars();
    let flush = |field: &mut String, tokens: &mut Vec<Token>| {
        if !field.is_empty() {
            let name = std::mem::take(field);
            tokens.push(if name == "*" {
                Token::EveryField
            } else {
                Token::Field(name)
            });
        }
    };
    while let Some(c) = chars.next() {
        match c {
            '.' => flush(&mut field, &mut tokens),
            '[' => {
                flush(&mut field, &mut tokens);
                let inner: String = chars.by_ref().take_while(|&c| c != ']').collect();
                tokens.push(match inner.trim() {
                    "*" => Token::EveryElement,
                    n => Token::Index(n.parse().map_err(|_| {
                        format!("path `{path}`: `[{inner}]` is not an index or `[*]`")
                    })?),
                });
            }
            '{' => {
                flush(&mut field, &mut tokens);
                let inner: String = chars.by_ref().take_while(|&c| c != '}').collect();
                let fields = inner
                    .split(',')
                    .map(|f| f.trim().to_owned())
                    .filter(|f| !f.is_empty());
                tokens.push(Token::Fields(fields.collect()));
            }
            ']' | '}' => return Err(format!("path `{path}`: unmatched `{c}`")),
            c => field.push(c),
        }
    }
    flush(&mut field, &mut tokens);
    Ok(tokens)
}

/// The texts at `path` in `value`, as LangGraph's `get_text_at_path` finds them.
pub fn texts_at_path(value: &Map<String, Value>, path: &str) -> Result<Vec<String>, String> {
    if path.is_empty() || path == "$" {
        return Ok(vec![json_text(&Value::Object(value.clone()))]);
    }
    let tokens = tokenize(path)?;
    let mut out = Vec::new();
    let root = Value::Object(value.clone());
    collect(&root, &tokens, &mut out);
    Ok(out)
}

fn collect(value: &Value, tokens: &[Token], out: &mut Vec<String>) {
    let Some((token, rest)) = tokens.split_first() else {
        if let Some(text) = leaf_text(value) {
            out.push(text);
        }
        return;
    };
    match (token, value) {
        (Token::Field(name), Value::Object(map)) => {
            if let Some(v) = map.get(name) {
                collect(v, rest, out);
            }
        }
        (Token::Index(i), Value::Array(items)) => {
            let len = items.len() as i64;
            let at = if *i < 0 { len + i } else { *i };
            if (0..len).contains(&at) {
                collect(&items[at as usize], rest, out);
            }
        }
        (Token::EveryElement, Value::Array(items)) => {
            items.iter().for_each(|v| collect(v, rest, out));
        }
        (Token::EveryField, Value::Object(map)) => map.values().for_each(|v| collect(v, rest, out)),
        (Token::EveryField, Value::Array(items)) => {
            items.iter().for_each(|v| collect(v, rest, out))
        }
        (Token::Fields(names), Value::Object(_)) => {
            for name in names {
                let mut current = Some(value);
                for part in name.split('.') {
                    current = current
                        .and_then(|v| v.as_object())
                        .and_then(|m| m.get(part));
                }
                if let Some(text) = current.and_then(leaf_text) {
                    out.push(text);
                }
            }
        }
        _ => {}
    }
}

fn leaf_text(value: &Value) -> Option<String> {
    match value {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        Value::Bool(_) | Value::Number(_) => Some(value.to_string()),
        Value::Array(_) | Value::Object(_) => Some(json_text(value)),
    }
}

/// JSON with sorted keys (serde_json's maps are sorted without `preserve_order`).
fn json_text(value: &Value) -> String {
    value.to_string()
}

/// The texts of a value to embed, each with the name its vector is stored under (the path,
/// or `path.i` when a path found several texts).
pub(crate) fn texts_to_embed(
    value: &Map<String, Value>,
    paths: &[String],
) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    for path in paths {
        let texts = texts_at_path(value, path)?;
        if texts.len() == 1 {
            out.extend(texts.into_iter().map(|t| (path.clone(), t)));
        } else {
            out.extend(
                texts
                    .into_iter()
                    .enumerate()
                    .map(|(i, t)| (format!("{path}.{i}"), t)),
            );
        }
    }
    Ok(out)
}

/// Cosine similarity (0 when either vector is zero).
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let (mut dot, mut na, mut nb) = (0.0f32, 0.0f32, 0.0f32);
    for (x, y) in a.iter().zip(b) {
        dot += x * y;
        na += x * x;
        nb += y * y;
    }
    if na == 0.0 || nb == 0.0 {
        0.0
    } else {
        dot / (na.sqrt() * nb.sqrt())
    }
}

/// A vector as little-endian bytes (the SQLite blob form).
#[cfg(feature = "sqlite")]
pub(crate) fn to_bytes(vector: &[f32]) -> Vec<u8> {
    vector.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// A vector from little-endian bytes.
#[cfg(feature = "sqlite")]
pub(crate) fn from_bytes(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn texts(v: Value, path: &str) -> Vec<String> {
        texts_at_path(v.as_object().unwrap_or(&Map::new()), path).unwrap_or_default()
    }

    #[test]
    fn paths_as_langgraph() {
        let v = json!({"text": "hi", "a": {"b": 2}, "items": [{"x": "p"}, {"x": "q"}], "n": null});
        assert_eq!(texts(v.clone(), "text"), ["hi"]);
        assert_eq!(texts(v.clone(), "a.b"), ["2"]);
        assert_eq!(texts(v.clone(), "items[*].x"), ["p", "q"]);
        assert_eq!(texts(v.clone(), "items[-1].x"), ["q"]);
        assert_eq!(texts(v.clone(), "{text,a.b}"), ["hi", "2"]);
        assert_eq!(texts(v.clone(), "a"), [r#"{"b":2}"#]);
        assert!(texts(v.clone(), "n").is_empty());
        assert!(texts(v.clone(), "missing.x").is_empty());
        assert_eq!(texts(json!({"b": 1, "a": 2}), "$"), [r#"{"a":2,"b":1}"#]);
        assert!(validate_path("items[x]").is_err());
    }

    #[test]
    fn several_texts_get_numbered_names() {
        let v = json!({"items": [{"x": "p"}, {"x": "q"}], "t": "s"});
        let got = texts_to_embed(
            v.as_object().unwrap_or(&Map::new()),
            &["items[*].x".into(), "t".into()],
        );
        assert_eq!(
            got.unwrap_or_default(),
            [
                ("items[*].x.0".to_owned(), "p".to_owned()),
                ("items[*].x.1".into(), "q".into()),
                ("t".into(), "s".into())
            ]
        );
    }

    #[test]
    fn cosine_of_parallel_and_orthogonal() {
        assert!((cosine(&[1.0, 2.0], &[2.0, 4.0]) - 1.0).abs() < 1e-6);
        assert_eq!(cosine(&[1.0, 0.0], &[0.0, 3.0]), 0.0);
        assert_eq!(cosine(&[0.0, 0.0], &[1.0, 1.0]), 0.0);
    }
}
