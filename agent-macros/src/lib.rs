//! Procedural macros for agent-core: `#[derive(GraphState)]` and `#[node]`.
//!
//! This crate only parses and dispatches; the `expand` functions in [`state`] and [`node`] do
//! the work and return `syn::Result`, so unit tests can call them on token streams. Generated
//! code names the runtime through `::agent_core::__private`, never through user imports.
//! Users depend on `agent-core`, which re-exports these macros.

use proc_macro::TokenStream;

#[cfg(test)]
mod expansions;
mod node;
mod state;
mod tool;
mod util;

/// Derives `agent_core::GraphState` for a struct with named fields, and writes its partial
/// update type `<Name>Update`.
///
/// Field attributes: `#[reducer(append | merge | add | replace | path::to::fn)]`.
/// Container attributes: `#[graph_state(update = NameOfUpdate, derive(Debug, PartialEq))]`.
#[proc_macro_derive(GraphState, attributes(reducer, graph_state))]
pub fn derive_graph_state(input: TokenStream) -> TokenStream {
    let input = syn::parse_macro_input!(input as syn::DeriveInput);
    state::expand(&input)
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// Turns `async fn name(state: &State[, ctx: &NodeContext]) -> Output` into a node named
/// `name`, with optional settings: `#[node(name = "other", retry(max_attempts = 3),
/// timeout = "30s", destinations("a", "b"))]`.
///
/// The fn becomes a unit struct of the same name (pass it to `add_named` or `add_node`); its
/// body stays callable as `name::call(&state, &ctx)`.
#[proc_macro_attribute]
pub fn node(args: TokenStream, item: TokenStream) -> TokenStream {
    node::expand(args.into(), item.into()).into()
}

/// Turns `async fn name(args...) -> Result<T, E>` into an `agent_tools::Tool` named `name`,
/// described by its doc comment (`# Arguments` entries describe the parameters). Options:
/// `#[tool(name = "other", description = "...")]`. Use it as `agent_tools::tool`.
#[proc_macro_attribute]
pub fn tool(args: TokenStream, item: TokenStream) -> TokenStream {
    tool::expand(args.into(), item.into()).into()
}
