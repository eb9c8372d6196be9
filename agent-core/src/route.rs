//! Conditional edges: what a router returns ([`Route`]) and how keys map to nodes ([`PathMap`]).
//!
//! A router reads the state and names where to go: one key, several keys (fan-out), `END`, or
//! [`Send`] tasks. With a path map, every key must be in it — a missing key is an error, never a
//! silent stop. Without one, keys are node names.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use crate::command::{Goto, Send};

/// Where a router sends the run: keys (node names or path-map keys, `END` included) and `Send`s.
#[derive(Debug, Clone, PartialEq)]
pub struct Route<S> {
    /// The destinations, in order.
    pub goto: Vec<Goto<S>>,
}

impl<S> Default for Route<S> {
    fn default() -> Self {
        Route { goto: Vec::new() }
    }
}

impl<S> Route<S> {
    /// Route to one key.
    pub fn to(key: impl Into<String>) -> Self {
        Route {
            goto: vec![Goto::Node(key.into())],
        }
    }

    /// Adds a key.
    pub fn and(mut self, key: impl Into<String>) -> Self {
        self.goto.push(Goto::Node(key.into()));
        self
    }

    /// Adds a `Send` of a whole state, to a node that takes the state.
    pub fn send(mut self, node: impl Into<String>, input: S) -> Self {
        self.goto.push(Goto::Send(Send::new(node, input)));
        self
    }

    /// Adds a `Send` of a node's own input (see [`Send::input`]).
    pub fn send_input<I: crate::node_input::NodeInput>(
        mut self,
        node: impl Into<String>,
        input: I,
    ) -> Self {
        self.goto.push(Goto::Send(Send::input(node, input)));
        self
    }
}

/// Values a router may return. Implemented for names (`&str`, `String`), collections of names,
/// `Send`s, `Vec<Send>`, [`Goto`] and [`Route`].
#[diagnostic::on_unimplemented(
    message = "a router cannot return `{Self}`",
    note = "return a node name (`&'static str`, `String`), a Vec of names, `END`, `Send`s, or a `Route`"
)]
pub trait IntoRoute<S> {
    /// Converts to a route.
    fn into_route(self) -> Route<S>;
}

impl<S> IntoRoute<S> for Route<S> {
    fn into_route(self) -> Route<S> {
        self
    }
}

impl<S> IntoRoute<S> for &str {
    fn into_route(self) -> Route<S> {
        Route::to(self)
    }
}

impl<S> IntoRoute<S> for String {
    fn into_route(self) -> Route<S> {
        Route::to(self)
    }
}

impl<S> IntoRoute<S> for Send<S> {
    fn into_route(self) -> Route<S> {
        Route {
            goto: vec![Goto::Send(self)],
        }
    }
}

impl<S> IntoRoute<S> for Goto<S> {
    fn into_route(self) -> Route<S> {
        Route { goto: vec![self] }
    }
}

impl<S, T: Into<Goto<S>>> IntoRoute<S> for Vec<T> {
    fn into_route(self) -> Route<S> {
        Route {
            goto: self.into_iter().map(Into::into).collect(),
        }
    }
}

impl<S, T: Into<Goto<S>>, const N: usize> IntoRoute<S> for [T; N] {
    fn into_route(self) -> Route<S> {
        Route {
            goto: self.into_iter().map(Into::into).collect(),
        }
    }
}

/// Maps router keys to node names. Build it from a list of names (each key maps to itself) or
/// from `(key, node)` pairs; [`PathMap::any`] accepts any node name (no validation at compile
/// time, and diagrams show an edge to every node).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PathMap {
    pub(crate) entries: Option<Vec<(String, String)>>,
}

impl PathMap {
    /// Keys are node names; any node may be named.
    pub fn any() -> Self {
        PathMap { entries: None }
    }

    /// A map from `(key, node)` pairs.
    pub fn from_pairs<K: Into<String>, V: Into<String>>(
        pairs: impl IntoIterator<Item = (K, V)>,
    ) -> Self {
        PathMap {
            entries: Some(
                pairs
                    .into_iter()
                    .map(|(k, v)| (k.into(), v.into()))
                    .collect(),
            ),
        }
    }

    /// A map where each name is its own key.
    pub fn from_names<N: Into<String>>(names: impl IntoIterator<Item = N>) -> Self {
        PathMap {
            entries: Some(
                names
                    .into_iter()
                    .map(|n| {
                        let n = n.into();
                        (n.clone(), n)
                    })
                    .collect(),
            ),
        }
    }

    /// The `(key, node)` entries, or `None` for [`PathMap::any`].
    pub fn entries(&self) -> Option<&[(String, String)]> {
        self.entries.as_deref()
    }
}

impl<const N: usize> From<[&str; N]> for PathMap {
    fn from(names: [&str; N]) -> Self {
        PathMap::from_names(names)
    }
}

impl From<Vec<&str>> for PathMap {
    fn from(names: Vec<&str>) -> Self {
        PathMap::from_names(names)
    }
}

impl From<Vec<String>> for PathMap {
    fn from(names: Vec<String>) -> Self {
        PathMap::from_names(names)
    }
}

impl<const N: usize> From<[(&str, &str); N]> for PathMap {
    fn from(pairs: [(&str, &str); N]) -> Self {
        PathMap::from_pairs(pairs)
    }
}

impl From<Vec<(&str, &str)>> for PathMap {
    fn from(pairs: Vec<(&str, &str)>) -> Self {
        PathMap::from_pairs(pairs)
    }
}

impl<K: Into<String> + Ord, V: Into<String>> From<BTreeMap<K, V>> for PathMap {
    fn from(map: BTreeMap<K, V>) -> Self {
        PathMap::from_pairs(map)
    }
}

impl<K: Into<String> + Ord, V: Into<String>> From<HashMap<K, V>> for PathMap {
    fn from(map: HashMap<K, V>) -> Self {
        // Sorted so diagrams and error messages are stable.
        let mut pairs: Vec<(String, String)> =
            map.into_iter().map(|(k, v)| (k.into(), v.into())).collect();
        pairs.sort();
        PathMap::from_pairs(pairs)
    }
}

thread_local! {
    /// The run whose routers this thread is calling (see [`routing_run_id`]).
    static ROUTING_RUN: RefCell<Option<Arc<str>>> = const { RefCell::new(None) };
}

/// The id of the run whose router is being called on this thread, if one is.
///
/// Why: a router is a plain synchronous call on the state, without the run's context. A
/// router that needs what its caller registered for the run (a binding's event loop to await
/// an async router on, the run's config) finds it by this id. Outside a router call: `None`.
pub fn routing_run_id() -> Option<Arc<str>> {
    ROUTING_RUN.with(|run| run.borrow().clone())
}

/// Runs `f` (which calls routers) with [`routing_run_id`] giving `run_id`; the previous value
/// comes back afterwards, also when `f` panics.
pub(crate) fn routing<R>(run_id: &Arc<str>, f: impl FnOnce() -> R) -> R {
    struct Restore(Option<Arc<str>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let previous = self.0.take();
            ROUTING_RUN.with(|run| *run.borrow_mut() = previous);
        }
    }
    let _restore = Restore(ROUTING_RUN.with(|run| run.replace(Some(run_id.clone()))));
    f()
}

#[cfg(test)]
mod routing_tests {
    use super::*;

    #[test]
    fn routing_run_id_is_set_only_inside_and_nests() {
        assert_eq!(routing_run_id(), None);
        let outer: Arc<str> = Arc::from("outer");
        let inner: Arc<str> = Arc::from("inner");
        routing(&outer, || {
            assert_eq!(routing_run_id().as_deref(), Some("outer"));
            routing(&inner, || {
                assert_eq!(routing_run_id().as_deref(), Some("inner"))
            });
            assert_eq!(routing_run_id().as_deref(), Some("outer"));
        });
        assert_eq!(routing_run_id(), None);
        let caught = std::panic::catch_unwind(|| routing(&outer, || panic!("router panicked")));
        assert!(caught.is_err());
        assert_eq!(routing_run_id(), None);
    }
}
