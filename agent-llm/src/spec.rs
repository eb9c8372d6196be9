//! [`init_chat_model`]: a model from a `provider:model` string, configured from the
//! environment (LangChain's `init_chat_model("openai:gpt-4o")`). Command-line programs and
//! settings files name models this way.

use std::sync::Arc;

use crate::error::LlmError;
use crate::model::ChatModel;
use crate::providers::anthropic::Anthropic;
use crate::providers::gemini::Gemini;
use crate::providers::ollama::Ollama;
use crate::providers::openai::OpenAiCompatible;

/// The providers [`init_chat_model`] knows, with what configures them.
pub const PROVIDERS: &[(&str, &str)] = &[
    (
        "openai",
        "OpenAI or any OpenAI-compatible server (llama-server, vLLM...): OPENAI_API_KEY, OPENAI_BASE_URL",
    ),
    (
        "anthropic",
        "Anthropic Messages: ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL",
    ),
    ("ollama", "a local Ollama server: OLLAMA_HOST"),
    (
        "gemini",
        "Google Gemini (generateContent): GEMINI_API_KEY, GEMINI_BASE_URL",
    ),
];

/// A chat model from `provider:model`, e.g. `openai:gpt-4o-mini`, `anthropic:claude-sonnet-4-5`,
/// `ollama:llama3.2`, `gemini:gemini-2.5-flash`. Keys and base URLs come from each provider's environment variables
/// (see [`PROVIDERS`]); the model name after the colon wins over the `*_MODEL` variable.
///
/// ```
/// let unknown = agent_llm::init_chat_model("mistral:large");
/// assert!(unknown.is_err_and(|e| e.to_string().contains("known providers: openai")));
/// let model = agent_llm::init_chat_model("ollama:llama3.2").unwrap();
/// assert_eq!(model.model_name(), "llama3.2");
/// ```
pub fn init_chat_model(spec: &str) -> Result<Arc<dyn ChatModel>, LlmError> {
    let spec = spec.trim();
    let Some((provider, model)) = spec.split_once(':') else {
        return Err(bad_spec(
            spec,
            "expected `provider:model`, e.g. `openai:gpt-4o-mini`",
        ));
    };
    let model = model.trim();
    if model.is_empty() {
        return Err(bad_spec(spec, "the model name after the colon is empty"));
    }
    Ok(match provider.trim() {
        "openai" => Arc::new(OpenAiCompatible::builder_from_env().model(model).build()?),
        "anthropic" => Arc::new(Anthropic::builder_from_env().model(model).build()?),
        "ollama" => Arc::new(Ollama::builder_from_env().model(model).build()?),
        "gemini" => Arc::new(Gemini::builder_from_env().model(model).build()?),
        other => {
            let known: Vec<&str> = PROVIDERS.iter().map(|(name, _)| *name).collect();
            return Err(bad_spec(
                spec,
                &format!(
                    "unknown provider `{other}`; known providers: {}",
                    known.join(", ")
                ),
            ));
        }
    })
}

fn bad_spec(spec: &str, why: &str) -> LlmError {
    LlmError::Config {
        provider: "init_chat_model",
        message: format!("model `{spec}`: {why}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_name_provider_and_model() {
        let model = init_chat_model("ollama:qwen2.5:0.5b").expect("ollama needs no key");
        assert_eq!(model.provider(), "ollama");
        assert_eq!(model.model_name(), "qwen2.5:0.5b");
        let model = init_chat_model("gemini:gemini-2.5-flash").expect("a key is not checked here");
        assert_eq!(model.provider(), "gemini");
        assert_eq!(model.model_name(), "gemini-2.5-flash");
        for (name, _) in PROVIDERS {
            let model = init_chat_model(&format!("{name}:some-model"))
                .unwrap_or_else(|e| panic!("PROVIDERS lists `{name}` but: {e}"));
            assert_eq!(model.provider(), *name);
        }
        for bad in ["gpt-4o", "openai:", "  :x", "mistral:large"] {
            let Err(error) = init_chat_model(bad) else {
                panic!("`{bad}` should be refused");
            };
            let error = error.to_string();
            assert!(error.contains(&format!("`{}`", bad.trim())), "{error}");
        }
    }
}
