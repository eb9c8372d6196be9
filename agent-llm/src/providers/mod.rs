//! Chat models over HTTP: one [`HttpChatModel`] generic over a [`Wire`] format, and the wires
//! of OpenAI-compatible chat completions, Anthropic Messages, Ollama and Gemini.
//!
//! Each wire module holds only its wire format (endpoint, auth headers, request body, response
//! and stream decoding); `model` holds the one `ChatModel` impl every wire shares (events,
//! usage, latency), `http` the transport (retries, timeouts, error mapping, size limits),
//! `framing` the SSE and NDJSON parsers, `origin` where an API key may be sent. A new
//! provider is a new wire module plus its alias in the crate root.

pub mod anthropic;
mod framing;
pub mod gemini;
pub mod http;
mod model;
pub mod ollama;
pub mod openai;
pub(crate) mod origin;
pub mod wire;

pub use model::{HttpChatModel, HttpChatModelBuilder};
pub use wire::{EnvVars, Framing, StreamDecoder, Wire, WireEvent};
