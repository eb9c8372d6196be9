//! Built-in tools: [`Echo`] (returns its input), [`DateTime`] (the time in an IANA zone) and
//! [`Calculator`] (arithmetic expressions). Each is a plain [`Tool`](crate::Tool);
//! [`ToolRegistry::builtins`](crate::ToolRegistry::builtins) registers all three.

use std::sync::Arc;

use crate::tool::DynTool;

mod calculator;
mod datetime;
mod echo;

pub use calculator::{Calculator, CalculatorArgs, evaluate};
pub use datetime::{DEFAULT_FORMAT, DateTime, DateTimeArgs, DateTimeOutput};
pub use echo::{Echo, EchoArgs};

/// The built-in tools, erased, in a fixed order: `echo`, `datetime`, `calculator`.
pub fn all() -> Vec<Arc<dyn DynTool>> {
    vec![
        Arc::new(Echo),
        Arc::new(DateTime::new()),
        Arc::new(Calculator),
    ]
}
