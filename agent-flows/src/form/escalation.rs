//! The `EscalationEngine`: when a conversation should go to a human agent, by five policies
//! evaluated in the seed's priority order — `keyword`, `timeout`, `sentiment`, `llm_intent`,
//! `completion` — the first that fires decides, with a reason for the operator.
//!
//! - `keyword`: a phrase asking for a person ("hablar con un humano", "agente", "talk to a
//!   human"...), matched on folded words; a phrase negated in its clause ("no quiero hablar con
//!   un agente") does not count.
//! - `timeout`: the conversation started more than `conversation_timeout_secs` ago, or the
//!   previous message came more than `idle_timeout_secs` before this one; times come from the
//!   flow's clock.
//! - `sentiment`: the message's compound score ([`super::sentiment`]) is below
//!   `sentiment_threshold`.
//! - `llm_intent`: the model, asked for a structured `HumanIntent`, says the user wants a
//!   human (the node supplies the call; the engine only decides when to make it: after the
//!   cheaper policies, never when one of them fired).
//! - `completion`: the form cannot complete: the field being asked failed validation
//!   `max_failed_attempts` times in a row, or `max_turns` messages went by without completing.
//!
//! Each policy is configurable in the form file's `[escalation]` table; `policies` lists the
//! ones that run (all five by default).

use std::future::Future;

use serde::{Deserialize, Serialize};

use super::rules;
use super::sentiment;
use super::state::ConversationState;

/// An escalation policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Policy {
    /// A phrase asking for a person.
    Keyword,
    /// Too long since the start or since the last message.
    Timeout,
    /// A negative message.
    Sentiment,
    /// The model judges that the user wants a human.
    LlmIntent,
    /// The form cannot complete.
    Completion,
}

impl Policy {
    /// Every policy, in the seed's priority order.
    pub const PRIORITY: [Policy; 5] = [
        Policy::Keyword,
        Policy::Timeout,
        Policy::Sentiment,
        Policy::LlmIntent,
        Policy::Completion,
    ];

    /// Its name in form files and in the state.
    pub fn as_str(self) -> &'static str {
        match self {
            Policy::Keyword => "keyword",
            Policy::Timeout => "timeout",
            Policy::Sentiment => "sentiment",
            Policy::LlmIntent => "llm_intent",
            Policy::Completion => "completion",
        }
    }
}

/// Phrases that ask for a person, Spanish and English (folded when matched).
pub const DEFAULT_KEYWORDS: &[&str] = &[
    "hablar con un humano",
    "hablar con una persona",
    "hablar con alguien",
    "hablar con un agente",
    "hablar con un operador",
    "hablar con un asesor",
    "agente humano",
    "persona real",
    "ser humano",
    "atención al cliente",
    "servicio al cliente",
    "pásame con",
    "páseme con",
    "comunícame con",
    "humano",
    "agente",
    "operador",
    "asesor",
    "representante",
    "talk to a human",
    "speak to a human",
    "talk to a person",
    "speak to a person",
    "talk to someone",
    "speak to someone",
    "talk to an agent",
    "speak to an agent",
    "real person",
    "human agent",
    "live agent",
    "customer service",
    "customer support",
    "transfer me",
    "human",
    "agent",
    "operator",
    "representative",
];

/// The policies' settings.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct EscalationConfig {
    /// The policies that run (evaluated in [`Policy::PRIORITY`] order whatever the order here).
    pub policies: Vec<Policy>,
    /// `keyword`: the phrases.
    pub keywords: Vec<String>,
    /// `timeout`: the longest a conversation may last, in seconds (0: no limit).
    pub conversation_timeout_secs: u64,
    /// `timeout`: the longest wait between two messages, in seconds (0: no limit).
    pub idle_timeout_secs: u64,
    /// `sentiment`: escalate below this compound score (-1 to 1).
    pub sentiment_threshold: f64,
    /// `completion`: failed validations of one field in a row before escalating.
    pub max_failed_attempts: u32,
    /// `completion`: messages without completing the form before escalating (0: no limit).
    pub max_turns: u32,
}

impl Default for EscalationConfig {
    fn default() -> Self {
        EscalationConfig {
            policies: Policy::PRIORITY.to_vec(),
            keywords: DEFAULT_KEYWORDS.iter().map(|k| (*k).to_owned()).collect(),
            conversation_timeout_secs: 3600,
            idle_timeout_secs: 900,
            sentiment_threshold: -0.5,
            max_failed_attempts: 3,
            max_turns: 30,
        }
    }
}

/// The `[escalation]` table of a form file; every key optional.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawEscalation {
    policies: Option<Vec<String>>,
    keywords: Option<Vec<String>>,
    conversation_timeout_secs: Option<u64>,
    idle_timeout_secs: Option<u64>,
    sentiment_threshold: Option<f64>,
    max_failed_attempts: Option<u32>,
    max_turns: Option<u32>,
}

impl RawEscalation {
    pub(crate) fn check(self) -> Result<EscalationConfig, String> {
        let mut config = EscalationConfig::default();
        if let Some(names) = self.policies {
            let mut policies = Vec::new();
            for name in names {
                let policy = Policy::PRIORITY
                    .into_iter()
                    .find(|p| p.as_str() == name.trim())
                    .ok_or_else(|| {
                        format!(
                            "unknown policy `{name}`; use keyword, timeout, sentiment, llm_intent or completion"
                        )
                    })?;
                if !policies.contains(&policy) {
                    policies.push(policy);
                }
            }
            config.policies = policies;
        }
        if let Some(keywords) = self.keywords {
            let keywords: Vec<String> = keywords
                .into_iter()
                .map(|k| k.trim().to_owned())
                .filter(|k| !k.is_empty())
                .collect();
            if keywords.is_empty() {
                return Err(
                    "`keywords` is empty; list phrases, or leave the policy out of `policies`"
                        .to_owned(),
                );
            }
            config.keywords = keywords;
        }
        if let Some(secs) = self.conversation_timeout_secs {
            config.conversation_timeout_secs = secs;
        }
        if let Some(secs) = self.idle_timeout_secs {
            config.idle_timeout_secs = secs;
        }
        if let Some(threshold) = self.sentiment_threshold {
            if !(-1.0..=1.0).contains(&threshold) {
                return Err(format!(
                    "`sentiment_threshold` is {threshold}; it is a compound score between -1 and 1 (-0.5 by default)"
                ));
            }
            config.sentiment_threshold = threshold;
        }
        if let Some(max) = self.max_failed_attempts {
            if max == 0 {
                return Err("`max_failed_attempts` must be at least 1".to_owned());
            }
            config.max_failed_attempts = max;
        }
        if let Some(max) = self.max_turns {
            config.max_turns = max;
        }
        Ok(config)
    }
}

/// A policy that fired, and why.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Escalation {
    /// The policy.
    pub policy: Policy,
    /// Why, for the operator who takes over.
    pub reason: String,
}

/// Decides escalations; see the module docs.
#[derive(Clone, Debug, Default)]
pub struct EscalationEngine {
    config: EscalationConfig,
}

impl EscalationEngine {
    /// An engine with `config`.
    pub fn new(config: EscalationConfig) -> Self {
        EscalationEngine { config }
    }

    /// Its settings.
    pub fn config(&self) -> &EscalationConfig {
        &self.config
    }

    /// Whether `policy` runs.
    pub fn is_enabled(&self, policy: Policy) -> bool {
        self.config.policies.contains(&policy)
    }

    /// The first policy that fires for `message` in `conversation` at `now` (Unix seconds),
    /// in priority order. `llm_intent` is called only when its turn comes: it answers
    /// `Some(reason)` when the model says the user wants a human.
    pub async fn evaluate<F, Fut, E>(
        &self,
        message: &str,
        conversation: &ConversationState,
        now: i64,
        llm_intent: F,
    ) -> Result<Option<Escalation>, E>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<Option<String>, E>>,
    {
        let mut llm_intent = Some(llm_intent);
        for policy in Policy::PRIORITY {
            if !self.is_enabled(policy) {
                continue;
            }
            let fired = match policy {
                Policy::Keyword => self.keyword(message),
                Policy::Timeout => self.timeout(conversation, now),
                Policy::Sentiment => self.sentiment(message),
                Policy::Completion => self.completion(conversation),
                Policy::LlmIntent => match llm_intent.take() {
                    Some(ask) => ask().await?.map(|reason| Escalation {
                        policy: Policy::LlmIntent,
                        reason,
                    }),
                    None => None,
                },
            };
            if fired.is_some() {
                return Ok(fired);
            }
        }
        Ok(None)
    }

    /// `keyword`: a configured phrase, not negated in its clause.
    pub fn keyword(&self, message: &str) -> Option<Escalation> {
        rules::find_phrase(message, &self.config.keywords).map(|phrase| Escalation {
            policy: Policy::Keyword,
            reason: format!("the user asked for a person: \u{201c}{phrase}\u{201d}"),
        })
    }

    /// `timeout`: too long since the start, or since the previous message.
    pub fn timeout(&self, conversation: &ConversationState, now: i64) -> Option<Escalation> {
        let limit = self.config.conversation_timeout_secs;
        if let Some(started) = conversation.started_at {
            let elapsed = now.saturating_sub(started);
            if limit > 0 && elapsed > limit as i64 {
                return Some(Escalation {
                    policy: Policy::Timeout,
                    reason: format!(
                        "the conversation has lasted {}, over the {} limit",
                        duration(elapsed as u64),
                        duration(limit)
                    ),
                });
            }
        }
        let idle = self.config.idle_timeout_secs;
        if let Some(last) = conversation.last_message_at {
            let waited = now.saturating_sub(last);
            if idle > 0 && waited > idle as i64 {
                return Some(Escalation {
                    policy: Policy::Timeout,
                    reason: format!(
                        "{} without a message, over the {} limit",
                        duration(waited as u64),
                        duration(idle)
                    ),
                });
            }
        }
        None
    }

    /// `sentiment`: the message's score below the threshold.
    pub fn sentiment(&self, message: &str) -> Option<Escalation> {
        let score = sentiment::score(message);
        (score < self.config.sentiment_threshold).then(|| Escalation {
            policy: Policy::Sentiment,
            reason: format!(
                "negative sentiment: score {score:.2}, below the threshold {:.2}",
                self.config.sentiment_threshold
            ),
        })
    }

    /// `completion`: the field being asked failed too often, or too many messages went by.
    pub fn completion(&self, conversation: &ConversationState) -> Option<Escalation> {
        if let Some(field) = &conversation.current_field {
            let failed = conversation
                .failed_attempts
                .get(field)
                .copied()
                .unwrap_or(0);
            if failed >= self.config.max_failed_attempts {
                return Some(Escalation {
                    policy: Policy::Completion,
                    reason: format!(
                        "the field `{field}` failed validation {failed} times in a row (limit {})",
                        self.config.max_failed_attempts
                    ),
                });
            }
        }
        let max = self.config.max_turns;
        if max > 0 && conversation.turns >= max && !conversation.all_fields_collected() {
            return Some(Escalation {
                policy: Policy::Completion,
                reason: format!(
                    "{} messages without completing the form (limit {max})",
                    conversation.turns
                ),
            });
        }
        None
    }
}

/// "1 h 5 min", "12 min", "40 s".
fn duration(secs: u64) -> String {
    match secs {
        s if s >= 3600 && (s % 3600) / 60 > 0 => format!("{} h {} min", s / 3600, (s % 3600) / 60),
        s if s >= 3600 => format!("{} h", s / 3600),
        s if s >= 60 => format!("{} min", s / 60),
        s => format!("{s} s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::convert::Infallible;

    fn engine(policies: &[Policy]) -> EscalationEngine {
        EscalationEngine::new(EscalationConfig {
            policies: policies.to_vec(),
            ..EscalationConfig::default()
        })
    }

    fn conversation() -> ConversationState {
        ConversationState {
            fields: vec!["name".into(), "email".into()],
            current_field: Some("name".into()),
            started_at: Some(1_000),
            last_message_at: Some(1_000),
            ..ConversationState::default()
        }
    }

    async fn decide(
        engine: &EscalationEngine,
        message: &str,
        conversation: &ConversationState,
        now: i64,
        model_says: Option<&str>,
    ) -> Option<Escalation> {
        let answer = model_says.map(str::to_owned);
        engine
            .evaluate(message, conversation, now, || async move {
                Ok::<_, Infallible>(answer)
            })
            .await
            .unwrap()
    }

    #[test]
    fn keyword_in_both_languages_and_not_when_negated() {
        let e = engine(&[Policy::Keyword]);
        for (text, phrase) in [
            ("Necesito hablar con un humano", "hablar con un humano"),
            ("Quiero un agente, por favor", "agente"),
            ("¿Me pasas con atención al cliente?", "atención al cliente"),
            ("I need to talk to a human", "talk to a human"),
            ("Can I get a REAL PERSON?", "real person"),
            ("No, quiero hablar con un humano", "hablar con un humano"),
        ] {
            let fired = e.keyword(text).unwrap_or_else(|| panic!("{text}"));
            assert_eq!(fired.policy, Policy::Keyword);
            assert!(fired.reason.contains(phrase), "{text}: {}", fired.reason);
        }
        for text in [
            "Mi nombre es Juan",
            "No quiero hablar con un humano",
            "I don't need an agent",
            "juan@ejemplo.com",
            "humanidad",
        ] {
            assert_eq!(e.keyword(text), None, "{text}");
        }
    }

    #[test]
    fn keyword_phrases_are_configurable() {
        let form = super::super::spec::FormSpec::parse(
            "[[fields]]\nname = \"x\"\ntype = \"text\"\n[escalation]\nkeywords = [\"socorro\"]",
            false,
            "f",
        )
        .unwrap();
        let e = EscalationEngine::new(form.escalation);
        assert!(e.keyword("¡Socorro!").is_some());
        assert!(e.keyword("quiero hablar con un humano").is_none());
    }

    #[test]
    fn timeout_from_the_start_and_since_the_last_message() {
        let e = engine(&[Policy::Timeout]);
        let mut c = conversation();
        c.started_at = Some(0);
        c.last_message_at = Some(3_500);
        assert_eq!(e.timeout(&c, 3_600), None, "exactly at the limit");
        let fired = e.timeout(&c, 3_601).unwrap();
        assert_eq!(
            fired.reason,
            "the conversation has lasted 1 h, over the 1 h limit"
        );
        c.started_at = Some(3_000);
        c.last_message_at = Some(3_000);
        assert_eq!(e.timeout(&c, 3_900), None);
        let fired = e.timeout(&c, 4_000).unwrap();
        assert_eq!(
            fired.reason,
            "16 min without a message, over the 15 min limit"
        );
        // A first message: nothing to measure.
        assert_eq!(e.timeout(&ConversationState::default(), 1_000_000), None);
        let off = EscalationEngine::new(EscalationConfig {
            conversation_timeout_secs: 0,
            idle_timeout_secs: 0,
            ..EscalationConfig::default()
        });
        assert_eq!(off.timeout(&c, 1_000_000), None);
    }

    #[test]
    fn sentiment_below_the_threshold() {
        let e = engine(&[Policy::Sentiment]);
        let fired = e.sentiment("Esto es horrible, estoy harto").unwrap();
        assert!(
            fired.reason.starts_with("negative sentiment: score -0."),
            "{}",
            fired.reason
        );
        assert!(fired.reason.ends_with("below the threshold -0.50"));
        assert!(e.sentiment("Mi nombre es Juan").is_none());
        assert!(e.sentiment("That's wrong, it should be John").is_none());
        let strict = EscalationEngine::new(EscalationConfig {
            sentiment_threshold: -0.2,
            ..EscalationConfig::default()
        });
        assert!(strict.sentiment("that's wrong").is_some());
    }

    #[test]
    fn completion_after_repeated_failures_or_too_many_messages() {
        let e = engine(&[Policy::Completion]);
        let mut c = conversation();
        c.current_field = Some("email".into());
        c.failed_attempts.insert("email".into(), 2);
        assert_eq!(e.completion(&c), None);
        c.failed_attempts.insert("email".into(), 3);
        assert_eq!(
            e.completion(&c).unwrap().reason,
            "the field `email` failed validation 3 times in a row (limit 3)"
        );
        let mut c = conversation();
        c.turns = 30;
        assert_eq!(
            e.completion(&c).unwrap().reason,
            "30 messages without completing the form (limit 30)"
        );
    }

    #[tokio::test]
    async fn policies_run_in_priority_order_and_the_model_only_when_needed() {
        let all = EscalationEngine::default();
        let mut c = conversation();
        c.started_at = Some(0);
        // keyword and timeout both hold: keyword wins.
        let fired = decide(&all, "talk to a human", &c, 10_000, None)
            .await
            .unwrap();
        assert_eq!(fired.policy, Policy::Keyword);
        let fired = decide(&all, "Esto es horrible", &c, 10_000, None)
            .await
            .unwrap();
        assert_eq!(fired.policy, Policy::Timeout);
        let c = conversation();
        let fired = decide(&all, "Esto es horrible", &c, 1_001, Some("x"))
            .await
            .unwrap();
        assert_eq!(fired.policy, Policy::Sentiment);
        let fired = decide(
            &all,
            "¿me atiende alguien?",
            &c,
            1_001,
            Some("the model says so"),
        )
        .await
        .unwrap();
        assert_eq!(
            fired,
            Escalation {
                policy: Policy::LlmIntent,
                reason: "the model says so".into()
            }
        );
        assert_eq!(decide(&all, "Juan", &c, 1_001, None).await, None);
        // The model is not asked when a cheaper policy fired, nor when it is disabled.
        let asked = std::sync::atomic::AtomicBool::new(false);
        let fired = all
            .evaluate("talk to a human", &c, 1_001, || async {
                asked.store(true, std::sync::atomic::Ordering::SeqCst);
                Ok::<_, Infallible>(None)
            })
            .await
            .unwrap();
        assert!(fired.is_some());
        assert!(!asked.load(std::sync::atomic::Ordering::SeqCst));
        let no_model = engine(&[Policy::Keyword, Policy::Completion]);
        assert_eq!(
            decide(&no_model, "¿me atiende alguien?", &c, 1_001, Some("yes")).await,
            None
        );
        // Errors of the model's call come through.
        let failed = all
            .evaluate("hmm", &c, 1_001, || async {
                Err::<Option<String>, _>("model down")
            })
            .await;
        assert_eq!(failed, Err("model down"));
    }

    #[test]
    fn file_settings_are_checked() {
        let raw = RawEscalation {
            sentiment_threshold: Some(-3.0),
            ..RawEscalation::default()
        };
        assert!(raw.check().unwrap_err().contains("between -1 and 1"));
        let raw = RawEscalation {
            max_failed_attempts: Some(0),
            ..RawEscalation::default()
        };
        assert!(raw.check().unwrap_err().contains("at least 1"));
        let raw = RawEscalation {
            policies: Some(vec!["completion".into(), "keyword".into()]),
            ..RawEscalation::default()
        };
        assert_eq!(
            raw.check().unwrap().policies,
            [Policy::Completion, Policy::Keyword]
        );
        assert_eq!(duration(3_900), "1 h 5 min");
        assert_eq!(duration(40), "40 s");
    }
}
