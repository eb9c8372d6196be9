//! [`Report`]: an error for `main` and tests that prints its whole cause chain.
//!
//! `fn main() -> Result<(), E>` prints `E`'s `Debug`, which for a derived error is a struct dump.
//! Returning a [`Report`] instead prints what a user wants to read: the error's `Display` and,
//! below it, each cause (`Error::source`) in turn. Any error converts into it with `?`.

use std::error::Error;
use std::fmt;

/// Any error, printed as its message and its causes (see the module docs).
///
/// ```
/// use agent_core::{Report, StateGraph, GraphState};
///
/// #[derive(GraphState, Clone, Default)]
/// struct S {
///     n: u32,
/// }
///
/// fn build() -> Result<(), Report> {
///     // A node with no edge out: `compile` refuses the graph.
///     StateGraph::<S>::new()
///         .add_node("a", |_s: std::sync::Arc<S>| async { SUpdate::default() })
///         .add_edge(agent_core::START, "a")
///         .compile()?;
///     Ok(())
/// }
///
/// let report = build().unwrap_err();
/// assert!(format!("{report:?}").starts_with("node `a` has no outgoing edge"));
/// ```
pub struct Report(Box<dyn Error + Send + Sync + 'static>);

impl Report {
    /// The error inside.
    pub fn error(&self) -> &(dyn Error + Send + Sync + 'static) {
        &*self.0
    }

    /// The error and each of its causes, outermost first.
    pub fn chain(&self) -> impl Iterator<Item = &(dyn Error + 'static)> {
        let first: &(dyn Error + 'static) = &*self.0;
        std::iter::successors(Some(first), |e: &&(dyn Error + 'static)| (*e).source())
    }
}

impl<E: Error + Send + Sync + 'static> From<E> for Report {
    fn from(error: E) -> Self {
        Report(Box::new(error))
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

/// The message, then `Caused by:` and one numbered line per cause (what `main` prints).
impl fmt::Debug for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)?;
        let causes: Vec<String> = self.chain().skip(1).map(ToString::to_string).collect();
        // Many errors repeat their source in their own message; show a cause only once.
        let mut shown = self.0.to_string();
        let mut first = true;
        for (i, cause) in causes.iter().enumerate() {
            if shown.contains(cause.as_str()) {
                continue;
            }
            if first {
                write!(f, "\n\nCaused by:")?;
                first = false;
            }
            write!(f, "\n    {i}: {cause}")?;
            shown.push_str(cause);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Outer(std::io::Error);

    impl fmt::Display for Outer {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(f, "could not load the thread")
        }
    }

    impl Error for Outer {
        fn source(&self) -> Option<&(dyn Error + 'static)> {
            Some(&self.0)
        }
    }

    #[test]
    fn debug_prints_the_message_and_each_cause() {
        let report = Report::from(Outer(std::io::Error::other("disk full")));
        assert_eq!(
            format!("{report:?}"),
            "could not load the thread\n\nCaused by:\n    0: disk full"
        );
        assert_eq!(report.to_string(), "could not load the thread");
        assert_eq!(report.chain().count(), 2);
    }

    #[test]
    fn a_cause_already_in_the_message_is_not_repeated() {
        let report = Report::from(std::io::Error::other("disk full"));
        assert_eq!(format!("{report:?}"), "disk full");
    }
}
