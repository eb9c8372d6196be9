//! `agent serve --config agentgraph.toml`: the operator's settings in one file — where the
//! server listens and keeps its data, who may call it (keys, tokens), which web origins and
//! host names it answers, its limits, the models runs may pick, semantic search in its
//! store, and the assistants it serves (a flow with operator settings each, so one flow can
//! be served twice: two forms, two profile stores). Command-line flags override the file.
//! Unknown keys are errors that name the key; relative paths are read from the file's
//! directory.
//!
//! Secrets stay out of the file: it names the environment variables that hold them
//! (`api_key_env`, `jwt_secret_env`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::error::FlowError;
use crate::registry::Access;

/// The whole file.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServeConfig {
    /// Where and how the server runs.
    #[serde(default)]
    pub server: ServerSection,
    /// Who may call it.
    #[serde(default)]
    pub auth: AuthSection,
    /// What one request, user, thread or run may ask of it.
    #[serde(default)]
    pub limits: agent_server::Limits,
    /// The long-term memory store's semantic search.
    #[serde(default)]
    pub store: StoreSection,
    /// Flow options for every served flow that takes them (as `--set`).
    #[serde(default)]
    pub settings: BTreeMap<String, Setting>,
    /// The assistants to serve; none: every flow under its own name.
    #[serde(default, rename = "assistant")]
    pub assistants: Vec<AssistantSection>,
}

/// `[server]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerSection {
    /// The address to listen on.
    pub host: Option<String>,
    /// The port.
    pub port: Option<u16>,
    /// A SQLite file or a postgres:// URL.
    pub db: Option<String>,
    /// Runs executed at once by this instance.
    pub workers: Option<usize>,
    /// The model of runs whose context names none.
    pub model: Option<String>,
    /// The models a run's context may pick.
    pub models: Option<Vec<String>>,
    /// Webhooks may reach loopback and private addresses.
    pub allow_private_webhooks: Option<bool>,
    /// Web origins whose pages may call the API (replacing Studio and loopback; `*`: any).
    pub cors_allow_origins: Option<Vec<String>>,
    /// Host names a server without auth answers to besides loopback ones.
    pub allowed_hosts: Option<Vec<String>>,
    /// How long a run may take, in seconds (none: no limit).
    pub run_timeout_seconds: Option<f64>,
    /// The ttl of threads created without one, in minutes (none: kept until deleted).
    pub thread_ttl_minutes: Option<f64>,
    /// What an expired thread's sweep does: `delete` (the default) or `keep_latest`.
    pub thread_ttl_strategy: Option<String>,
}

/// `[auth]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuthSection {
    /// The environment variable holding the operator's key (all access).
    pub api_key_env: Option<String>,
    /// A keys file: keys (or their SHA-256) with identities and permissions.
    pub api_keys: Option<PathBuf>,
    /// The environment variable holding the HS256 secret of JWT bearer tokens.
    pub jwt_secret_env: Option<String>,
    /// A JWKS file of public keys for RS256/ES256 tokens.
    pub jwks: Option<PathBuf>,
    /// The `iss` tokens must carry.
    pub jwt_issuer: Option<String>,
    /// The `aud` tokens must carry.
    pub jwt_audience: Option<String>,
}

/// `[store]`: semantic search in the long-term memory store (`/store/items/search` with a
/// `query`, the graphs' `ctx.store()`). Without an index a query is ignored.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoreSection {
    /// The embeddings items are indexed with: `offline` (the built-in lexical embedding, no
    /// model or network; `offline:DIMS`), `openai:MODEL` or `ollama:MODEL` (their keys and
    /// base URLs from the environment: OPENAI_API_KEY, OPENAI_BASE_URL, OLLAMA_HOST).
    pub index: Option<String>,
    /// The JSON paths of an item's value that are embedded (default: the whole value, `$`).
    pub fields: Option<Vec<String>>,
    /// The vectors' length, for a model that does not say it (otherwise asked once at start).
    pub dims: Option<usize>,
}

/// One `[[assistant]]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AssistantSection {
    /// Its graph id (what clients name as `assistant_id`).
    pub id: String,
    /// The flow it serves (`agent list`).
    pub flow: String,
    /// What clients show beside its name.
    pub description: Option<String>,
    /// The flow's options, as the operator sets them.
    #[serde(default)]
    pub settings: BTreeMap<String, Setting>,
    /// How long its runs may take, in seconds (over the server's `run_timeout_seconds`).
    pub run_timeout_seconds: Option<f64>,
}

/// A flow option's value: written as TOML writes it, passed on as text.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum Setting {
    /// Text.
    Text(String),
    /// A whole number.
    Integer(i64),
    /// A number.
    Float(f64),
    /// Yes or no.
    Bool(bool),
}

impl Setting {
    /// The value as a flow option takes it.
    pub fn text(&self) -> String {
        match self {
            Setting::Text(s) => s.clone(),
            Setting::Integer(n) => n.to_string(),
            Setting::Float(x) => x.to_string(),
            Setting::Bool(b) => (if *b { "1" } else { "0" }).to_owned(),
        }
    }
}

fn config_error(path: &Path, message: impl std::fmt::Display) -> FlowError {
    FlowError::Input(format!("config file {}: {message}", path.display()))
}

impl ServeConfig {
    /// Reads and checks the file at `path`; relative paths in it are resolved against its
    /// directory.
    pub fn load(path: &Path) -> Result<ServeConfig, FlowError> {
        let text = std::fs::read_to_string(path).map_err(|e| config_error(path, e))?;
        let mut config = ServeConfig::parse(&text).map_err(|e| config_error(path, e))?;
        config.resolve(path.parent().unwrap_or(Path::new(".")));
        Ok(config)
    }

    /// Parses and checks a file's text.
    pub fn parse(text: &str) -> Result<ServeConfig, String> {
        let config: ServeConfig = toml::from_str(text).map_err(|e| e.to_string())?;
        config.check()?;
        Ok(config)
    }

    /// Assistants name served flows, under ids of their own; the store's paths parse.
    fn check(&self) -> Result<(), String> {
        for (i, path) in self.store.fields.iter().flatten().enumerate() {
            agent_core::store::validate_path(path)
                .map_err(|e| format!("[store] fields: path {} does not parse: {e}", i + 1))?;
        }
        if self.store.dims == Some(0) {
            return Err("[store] dims: a vector has at least one dimension".to_owned());
        }
        let mut ids = std::collections::BTreeSet::new();
        for a in &self.assistants {
            crate::find(&a.flow).map_err(|e| format!("[[assistant]] `{}`: {e}", a.id))?;
            let valid = !a.id.is_empty()
                && a.id
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
            if !valid {
                return Err(format!(
                    "[[assistant]] id `{}`: use letters, digits, `-`, `_` and `.`",
                    a.id
                ));
            }
            if !ids.insert(a.id.as_str()) {
                return Err(format!("[[assistant]] id `{}` is used twice", a.id));
            }
        }
        Ok(())
    }

    /// Makes the file's relative paths relative to `dir`: the database file, the keys and
    /// JWKS files, and flow options that name files (operator options, and catalog options
    /// whose value is not one of the catalog's names).
    fn resolve(&mut self, dir: &Path) {
        let join = |p: &str| -> String {
            let path = Path::new(p);
            if path.is_absolute() {
                p.to_owned()
            } else {
                dir.join(path).display().to_string()
            }
        };
        if let Some(db) = &self.server.db
            && !db.starts_with("postgres://")
            && !db.starts_with("postgresql://")
        {
            self.server.db = Some(join(db));
        }
        for file in [&mut self.auth.api_keys, &mut self.auth.jwks]
            .into_iter()
            .flatten()
        {
            *file = PathBuf::from(join(&file.display().to_string()));
        }
        let names_a_file = |flow: Option<&str>, key: &str, value: &str| {
            crate::FLOWS
                .iter()
                .filter(|f| flow.is_none_or(|name| f.info().name == name))
                .flat_map(|f| f.info().options.iter())
                .any(|o| {
                    o.key == key
                        && match o.access {
                            Access::Operator => true,
                            Access::Catalog(names) => !names.contains(&value),
                            _ => false,
                        }
                })
        };
        let fix = |flow: Option<&str>, settings: &mut BTreeMap<String, Setting>| {
            for (key, value) in settings.iter_mut() {
                if let Setting::Text(text) = value
                    && names_a_file(flow, key, text)
                {
                    *text = join(text);
                }
            }
        };
        fix(None, &mut self.settings);
        for a in &mut self.assistants {
            fix(Some(a.flow.as_str()), &mut a.settings);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_keys_are_named() {
        for (text, key) in [
            ("[server]\nhots = \"0.0.0.0\"\n", "hots"),
            ("[limits]\npage = 5\n", "page"),
            ("[auth]\napi_key = \"x\"\n", "api_key"),
            ("colour = 1\n", "colour"),
            (
                "[[assistant]]\nid = \"a\"\nflow = \"form\"\nform = \"x\"\n",
                "form",
            ),
        ] {
            let e = ServeConfig::parse(text).unwrap_err();
            assert!(e.contains(&format!("`{key}`")), "{text}: {e}");
        }
    }

    #[test]
    fn assistants_name_flows_under_ids_of_their_own() {
        let e = ServeConfig::parse("[[assistant]]\nid = \"x\"\nflow = \"nope\"\n").unwrap_err();
        assert!(e.contains("nope"), "{e}");
        let twice = "[[assistant]]\nid = \"x\"\nflow = \"form\"\n[[assistant]]\nid = \"x\"\nflow = \"data\"\n";
        assert!(ServeConfig::parse(twice).unwrap_err().contains("twice"));
        let bad = "[[assistant]]\nid = \"a b\"\nflow = \"form\"\n";
        assert!(ServeConfig::parse(bad).is_err());
    }

    #[test]
    fn relative_paths_are_read_from_the_files_directory() {
        let mut c = ServeConfig::parse(
            "[server]\ndb = \"data/agent.db\"\n[auth]\napi_keys = \"keys.toml\"\n\
             [settings]\nprofiles = \"profiles.db\"\nuser = \"maria\"\nmax_retries = 1\n\
             [[assistant]]\nid = \"signup\"\nflow = \"form\"\nsettings = { form = \"forms/signup.toml\" }\n\
             [[assistant]]\nid = \"contact\"\nflow = \"form\"\nsettings = { form = \"contact\" }\n",
        )
        .unwrap();
        c.resolve(Path::new("/etc/agentgraph"));
        assert_eq!(
            c.server.db.as_deref(),
            Some("/etc/agentgraph/data/agent.db")
        );
        assert_eq!(
            c.auth.api_keys,
            Some(PathBuf::from("/etc/agentgraph/keys.toml"))
        );
        assert_eq!(c.settings["profiles"].text(), "/etc/agentgraph/profiles.db");
        assert_eq!(c.settings["user"].text(), "maria");
        assert_eq!(c.settings["max_retries"].text(), "1");
        assert_eq!(
            c.assistants[0].settings["form"].text(),
            "/etc/agentgraph/forms/signup.toml"
        );
        assert_eq!(c.assistants[1].settings["form"].text(), "contact");
    }

    /// The complete example of the guide's "Deploying safely" page parses, and serves what
    /// it says.
    #[test]
    fn the_guide_example_parses() {
        let page = include_str!("../../docs/guide/src/deploying.md");
        let after = page
            .split("<!-- serve-config-example -->")
            .nth(1)
            .expect("docs/guide/src/deploying.md marks its config example");
        let block = after
            .split("```toml\n")
            .nth(1)
            .and_then(|b| b.split("```").next())
            .expect("a toml block follows the marker");
        let c = ServeConfig::parse(block).unwrap();
        assert_eq!(c.server.port, Some(2024));
        assert_eq!(c.limits.page_size, 500);
        assert_eq!(c.assistants.len(), 4);
        assert!(c.auth.api_keys.is_some());
        assert_eq!(c.settings["max_input_chars"].text(), "2000");
        assert_eq!(c.store.index.as_deref(), Some("offline"));
        assert_eq!(c.store.fields, Some(vec!["text".to_owned()]));
        // How runs end and what retention deletes (issue 57).
        assert_eq!(c.server.run_timeout_seconds, Some(600.0));
        assert_eq!(c.server.thread_ttl_minutes, Some(43200.0));
        assert_eq!(c.server.thread_ttl_strategy.as_deref(), Some("delete"));
        let analyst = c.assistants.iter().find(|a| a.id == "analyst").unwrap();
        assert_eq!(analyst.run_timeout_seconds, Some(120.0));
    }

    #[test]
    fn the_store_section_is_checked() {
        let c = ServeConfig::parse("[store]\nindex = \"ollama:nomic-embed-text\"\ndims = 768\n")
            .unwrap();
        assert_eq!(c.store.dims, Some(768));
        assert!(c.store.fields.is_none());
        let e = ServeConfig::parse("[store]\nfields = [\"a[\"]\n").unwrap_err();
        assert!(e.contains("[store] fields"), "{e}");
        assert!(ServeConfig::parse("[store]\ndims = 0\n").is_err());
        let e = ServeConfig::parse("[store]\nembed = \"x\"\n").unwrap_err();
        assert!(e.contains("`embed`"), "{e}");
    }
}
