//! The graph's runtime context (LangGraph's `context_schema` / `Runtime[Context]`) and the
//! clock nodes read the time from.
//!
//! A graph built with `StateGraph::<S, C>::with_context_type()` hands every run a shared `C`
//! (models, tool registries, settings, a [`Clock`]...): a node asks for it by taking
//! `&Runtime<C>` instead of `&NodeContext`. The type is checked when the graph is built: a node
//! asking for a context the graph was not built with does not compile, and one whose type was
//! erased (`NodeSpec`) is caught by `compile()`. The value is given once with
//! [`CompiledGraph::with_context`](crate::CompiledGraph::with_context); a second handle with
//! another value (a scripted model in a test, another user's settings) costs one `Arc` clone.
//!
//! ```
//! use std::sync::Arc;
//! use agent_core::{node, Clock, GraphState, ManualClock, RunConfig, Runtime, StateGraph, END, START};
//!
//! struct Services {
//!     greeting: String,
//!     clock: Arc<dyn Clock>,
//! }
//!
//! #[derive(GraphState, Clone, Default, Debug)]
//! struct Chat {
//!     reply: String,
//! }
//!
//! #[node]
//! async fn greet(_state: &Chat, rt: &Runtime<Services>) -> ChatUpdate {
//!     let services = rt.context();
//!     let secs = services.clock.unix_seconds();
//!     ChatUpdate::default().reply(format!("{} (t={secs}, step {})", services.greeting, rt.step()))
//! }
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), agent_core::GraphError> {
//! let graph = StateGraph::<Chat, Services>::with_context_type()
//!     .add_named(greet)
//!     .add_edge(START, "greet")
//!     .add_edge("greet", END)
//!     .compile()?
//!     .with_context(Services {
//!         greeting: "hola".into(),
//!         clock: Arc::new(ManualClock::at_unix_seconds(1_700_000_000)),
//!     });
//! let out = graph.invoke(Chat::default(), RunConfig::default()).await?;
//! assert_eq!(out.reply, "hola (t=1700000000, step 1)");
//! # Ok(()) }
//! ```

use std::any::{Any, TypeId};
use std::fmt;
use std::ops::Deref;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::context::NodeContext;

/// What a node that asks for the graph's context gets beside the state: the context `C`, and
/// everything a [`NodeContext`] offers (it derefs to one: `rt.step()`, `rt.interrupt(..)`,
/// `rt.write_custom(..)`, and `&rt` wherever a `&NodeContext` is expected).
pub struct Runtime<C> {
    context: Arc<C>,
    node: NodeContext,
}

impl<C> Clone for Runtime<C> {
    fn clone(&self) -> Self {
        Runtime {
            context: self.context.clone(),
            node: self.node.clone(),
        }
    }
}

impl<C> fmt::Debug for Runtime<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Runtime")
            .field("context", &std::any::type_name::<C>())
            .field("node", &self.node)
            .finish()
    }
}

impl<C: Send + Sync + 'static> Runtime<C> {
    /// A runtime from a context and a node context: for calling a node's body directly in a
    /// unit test (`my_node::call(&state, &Runtime::new(ctx, NodeContext::detached("my_node")))`).
    pub fn new(context: impl Into<Arc<C>>, node: NodeContext) -> Self {
        Runtime {
            context: context.into(),
            node,
        }
    }

    /// The runtime of a task whose run carries a context of type `C`.
    pub(crate) fn from_node_context(node: NodeContext) -> Result<Self, crate::node::NodeError> {
        match node.context_any().and_then(|c| c.downcast::<C>().ok()) {
            Some(context) => Ok(Runtime { context, node }),
            None => Err(crate::node::NodeError::Failed(
                format!(
                    "node `{}` needs the runtime context `{}`, but this run has none; give the compiled graph one with `.with_context(..)`",
                    node.node(),
                    std::any::type_name::<C>()
                )
                .into(),
            )),
        }
    }

    /// The graph's context.
    pub fn context(&self) -> &C {
        &self.context
    }

    /// The context as a shared handle (to move into a spawned task).
    pub fn context_arc(&self) -> Arc<C> {
        self.context.clone()
    }

    /// The task's [`NodeContext`] (also reachable through `Deref`).
    pub fn node_context(&self) -> &NodeContext {
        &self.node
    }
}

impl<C> Deref for Runtime<C> {
    type Target = NodeContext;

    fn deref(&self) -> &NodeContext {
        &self.node
    }
}

/// A context type as the graph records it: for `compile()`'s check and its error message.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ContextType {
    pub(crate) id: TypeId,
    pub(crate) name: &'static str,
}

impl ContextType {
    pub(crate) fn of<C: 'static>() -> Self {
        ContextType {
            id: TypeId::of::<C>(),
            name: std::any::type_name::<C>(),
        }
    }

    pub(crate) fn is_unit(&self) -> bool {
        self.id == TypeId::of::<()>()
    }
}

impl PartialEq for ContextType {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
    }
}

/// A context value, type-erased for the run (the typed API in front of it guarantees its type).
pub(crate) type AnyContext = Arc<dyn Any + Send + Sync>;

/// Whether a node (through the marker its `IntoNode` impl picked) may join a graph whose
/// context is `C`. Every node shape that does not ask for a context fits any graph; a node
/// taking `&Runtime<X>` fits only a graph built with context `X`.
///
/// Implement it for the marker of your own `IntoNode` impl: `impl<C> CompatibleContext<C> for
/// MyMarker {}`.
#[diagnostic::on_unimplemented(
    message = "this node does not fit a graph whose runtime context is `{C}`",
    label = "the node's marker `{Self}` is not compatible with context `{C}`",
    note = "a node taking `&Runtime<X>` fits only a graph built with `StateGraph::<State, X>::with_context_type()`: build the graph with the context the node reads, or make the node take `&Runtime<{C}>`",
    note = "the marker of a hand-written `IntoNode` impl needs `impl<C> CompatibleContext<C> for Marker {{}}`"
)]
pub trait CompatibleContext<C> {}

impl<C> CompatibleContext<C> for () {}

/// Where nodes read the time: the system clock in production, a [`ManualClock`] in tests so
/// that flows which read the time give the same answer on every run.
pub trait Clock: Send + Sync + fmt::Debug {
    /// The current time.
    fn now(&self) -> SystemTime;

    /// The current time as whole seconds since the Unix epoch (negative before it).
    fn unix_seconds(&self) -> i64 {
        match self.now().duration_since(UNIX_EPOCH) {
            Ok(d) => d.as_secs() as i64,
            Err(before) => -(before.duration().as_secs() as i64),
        }
    }
}

/// The operating system's clock.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> SystemTime {
        SystemTime::now()
    }
}

/// A clock that stands still until told to move: for tests and reproducible runs.
///
/// ```
/// use std::time::Duration;
/// use agent_core::{Clock, ManualClock};
///
/// let clock = ManualClock::at_unix_seconds(1_000);
/// clock.advance(Duration::from_secs(90));
/// assert_eq!(clock.unix_seconds(), 1_090);
/// ```
#[derive(Debug, Default)]
pub struct ManualClock {
    /// Milliseconds since the Unix epoch.
    millis: AtomicI64,
}

impl ManualClock {
    /// A clock showing `seconds` since the Unix epoch.
    pub fn at_unix_seconds(seconds: i64) -> Self {
        ManualClock {
            millis: AtomicI64::new(seconds.saturating_mul(1_000)),
        }
    }

    /// A clock showing `time`.
    pub fn at(time: SystemTime) -> Self {
        let clock = ManualClock::default();
        clock.set(time);
        clock
    }

    /// Moves the clock forward.
    pub fn advance(&self, by: Duration) {
        let by = i64::try_from(by.as_millis()).unwrap_or(i64::MAX);
        self.millis.fetch_add(by, Ordering::SeqCst);
    }

    /// Sets the clock.
    pub fn set(&self, time: SystemTime) {
        let millis = match time.duration_since(UNIX_EPOCH) {
            Ok(d) => i64::try_from(d.as_millis()).unwrap_or(i64::MAX),
            Err(before) => -i64::try_from(before.duration().as_millis()).unwrap_or(i64::MAX),
        };
        self.millis.store(millis, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> SystemTime {
        let millis = self.millis.load(Ordering::SeqCst);
        let magnitude = Duration::from_millis(millis.unsigned_abs());
        if millis >= 0 {
            UNIX_EPOCH + magnitude
        } else {
            UNIX_EPOCH - magnitude
        }
    }
}

impl<T: Clock + ?Sized> Clock for Arc<T> {
    fn now(&self) -> SystemTime {
        (**self).now()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_moves_only_when_told() {
        let clock = ManualClock::at_unix_seconds(-5);
        assert_eq!(clock.unix_seconds(), -5);
        clock.advance(Duration::from_secs(10));
        assert_eq!(clock.unix_seconds(), 5);
        clock.set(UNIX_EPOCH + Duration::from_secs(42));
        assert_eq!(clock.now(), UNIX_EPOCH + Duration::from_secs(42));
    }

    #[test]
    fn context_types_compare_by_type() {
        assert_eq!(ContextType::of::<String>(), ContextType::of::<String>());
        assert_ne!(ContextType::of::<String>(), ContextType::of::<u8>());
        assert!(ContextType::of::<()>().is_unit());
    }
}
