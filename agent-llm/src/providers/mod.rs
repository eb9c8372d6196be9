//! Chat models over HTTP: OpenAI-compatible chat completions, Anthropic Messages, Ollama.
//!
//! Each provider module holds its wire format (request body, response and stream parsing);
//! `http` holds what they share (retries, timeouts, error mapping, SSE and NDJSON framing).

pub mod anthropic;
pub mod http;
pub mod ollama;
pub mod openai;
