//! Expansion snapshots: each case applies a macro of this crate to a representative input,
//! and the pretty-printed result is checked in as `agent-macros/expansions/<case>.rs`, so a
//! change in generated code shows up in review.
//!
//! Plain `cargo test` fails on a stale or missing snapshot (with a diff); `cargo xtask codegen`
//! runs the same test with `AGENTGRAPH_CODEGEN=write` and rewrites them. A new case is one
//! line in [`CASES`]; a new macro is one line in [`DERIVES`] or [`ATTRIBUTES`].

use std::path::Path;

use proc_macro2::TokenStream;
use quote::ToTokens;
use xtask::sourcegen::{RUST_HEADER, ensure_dir};

/// A derive's expansion function.
type Derive = fn(&syn::DeriveInput) -> syn::Result<TokenStream>;
/// An attribute macro's expansion function: arguments and item in, replacement out.
type Attribute = fn(TokenStream, TokenStream) -> TokenStream;

/// The derives of this crate, by the name users write in `#[derive(..)]`.
const DERIVES: &[(&str, Derive)] = &[("GraphState", crate::state::expand)];

/// The attribute macros of this crate, by the name users write in `#[name(..)]`.
const ATTRIBUTES: &[(&str, Attribute)] =
    &[("node", crate::node::expand), ("tool", crate::tool::expand)];

/// The cases: file name (without `.rs`) and the item as a user writes it, macro included.
const CASES: &[(&str, &str)] = &[
    (
        "state_plain",
        "#[derive(GraphState, Clone, Default, Debug)] pub struct Research { pub topic: String, pub count: u32, done: bool }",
    ),
    (
        "state_reducers",
        "#[derive(GraphState, Clone, Default)] struct Reducers { last: String, #[reducer(replace)] explicit: Option<String>, #[reducer(append)] notes: Vec<String>, #[reducer(merge)] results: BTreeMap<String, Value>, #[reducer(add)] tokens: u64, #[reducer(keep_max)] best: f64, #[reducer(crate::reducers::union)] tags: BTreeSet<String> }",
    ),
    (
        "state_update_name_and_derives",
        "#[derive(GraphState, Clone, Default)] #[graph_state(update = Patch, derive(Debug, PartialEq))] pub(crate) struct Options { pub(crate) name: String, #[reducer(append)] pub(crate) log: Vec<String> }",
    ),
    (
        "state_generics",
        "#[derive(GraphState, Clone, Default)] struct Generic<T: Clone + Default + Send + Sync + Serialize + DeserializeOwned + 'static, U> where U: Clone + Default + Send + Sync + Serialize + DeserializeOwned + 'static { value: T, #[reducer(append)] items: Vec<U> }",
    ),
    (
        "state_error_keeps_the_state",
        "#[derive(GraphState, Clone, Default)] struct Typo { #[reducer(apend)] notes: Vec<String> }",
    ),
    (
        "node_plain",
        "#[node] async fn plan(state: &Research) -> ResearchUpdate { ResearchUpdate::default().notes(vec![format!(\"plan: {}\", state.topic)]) }",
    ),
    (
        "node_with_ctx",
        "/// Searches the web.\n#[node] pub async fn search_web(state: &Research, ctx: &NodeContext) -> ResearchUpdate { ResearchUpdate::default().notes(vec![format!(\"{} (step {})\", ctx.node(), ctx.step())]) }",
    ),
    (
        "node_with_input",
        "/// Writes one section; run by `Send::input(\"write_section\", Section { .. })`.\n#[node(retry)] pub async fn write_section(section: Section, ctx: &NodeContext) -> Result<EssayUpdate, BoxError> { Ok(EssayUpdate::default().paragraphs(vec![format!(\"{} ({})\", section.title, ctx.node())])) }",
    ),
    (
        "node_with_input_and_runtime",
        "#[node] async fn summarize(doc: Doc, rt: &Runtime<Services>) -> Result<ChatUpdate, BoxError> { let summary = rt.context().model.reply(&doc.text).await?; Ok(ChatUpdate::default().summaries(vec![summary])) }",
    ),
    (
        "node_with_runtime",
        "/// Answers with the model of the graph's context.\n#[node] async fn answer(state: &Chat, rt: &Runtime<Services>) -> Result<ChatUpdate, BoxError> { let reply = rt.context().model.reply(&state.question).await?; Ok(ChatUpdate::default().answer(reply)) }",
    ),
    (
        "node_all_options",
        "#[node(name = \"fetch\", retry(max_attempts = 5, initial_interval = \"500ms\", backoff_factor = 2.0, max_interval = \"10s\", jitter = false), timeout = \"30s\", destinations(\"review\", \"__end__\"))] async fn fetch_page(state: &Research, ctx: &NodeContext) -> Result<Command<Research>, NodeError> { let _ = (state, ctx); Ok(Command::goto(\"review\")) }",
    ),
    (
        "node_default_retry",
        "#[node(retry, timeout = \"2m\")] pub(crate) async fn summarize(state: &Research) -> Result<ResearchUpdate, String> { Ok(ResearchUpdate::default().topic(state.topic.clone())) }",
    ),
    (
        "node_error_keeps_the_fn",
        "#[node] fn not_async(state: &Research) -> ResearchUpdate { ResearchUpdate::default() }",
    ),
    (
        "tool_doc_arguments",
        "/// Adds two numbers.\n///\n/// # Arguments\n///\n/// * `a` - The first number.\n/// * `b` - The second number.\n#[tool] async fn add(a: f64, b: f64) -> Result<f64, String> { Ok(a + b) }",
    ),
    (
        "tool_name_and_description",
        "#[tool(name = \"get_weather\", description = \"Current weather in a city.\")] pub async fn weather(city: String, days: Option<u8>) -> Result<String, ToolError> { Ok(format!(\"sunny in {city} for {} days\", days.unwrap_or(1))) }",
    ),
];

/// The snapshot of one case: header, the input as a comment, then the expansion.
fn snapshot(source: &str) -> Result<String, String> {
    let item: syn::Item = syn::parse_str(source).map_err(|e| format!("cannot parse: {e}"))?;
    let (macro_name, expansion) = expand(item.clone())?;
    let input = unparse(item.into_token_stream())?;
    let output = unparse(expansion)?;

    let mut out = String::from(RUST_HEADER);
    out.push_str("//\n");
    for line in input.lines() {
        out.push_str(if line.is_empty() { "//" } else { "// " });
        out.push_str(line);
        out.push('\n');
    }
    out.push_str(&format!("//\n// {macro_name}\n\n{output}"));
    Ok(out)
}

/// Applies the case's macro: the first attribute macro of [`ATTRIBUTES`] on the item (which
/// replaces the item), else every derive of [`DERIVES`] it names (which add to it).
fn expand(mut item: syn::Item) -> Result<(String, TokenStream), String> {
    let Some(attrs) = attrs_mut(&mut item) else {
        return Err("a case is a struct, enum, union or fn".to_owned());
    };
    let attribute = attrs.iter().enumerate().find_map(|(index, attr)| {
        let name = attr.path().get_ident()?.to_string();
        let (_, expand) = ATTRIBUTES.iter().find(|(n, _)| *n == name)?;
        Some((index, name, *expand))
    });
    if let Some((index, name, expand)) = attribute {
        let attr = attrs.remove(index);
        let args = match attr.meta {
            syn::Meta::Path(_) => TokenStream::new(),
            syn::Meta::List(list) => list.tokens,
            syn::Meta::NameValue(_) => return Err(format!("`#[{name} = ..]` is not a macro call")),
        };
        let output = expand(args, item.into_token_stream());
        return Ok((format!("`#[{name}]` expands to:"), output));
    }

    let mut derives = Vec::new();
    for attr in attrs.iter().filter(|a| a.path().is_ident("derive")) {
        let paths = attr
            .parse_args_with(
                syn::punctuated::Punctuated::<syn::Path, syn::Token![,]>::parse_terminated,
            )
            .map_err(|e| format!("bad derive: {e}"))?;
        for path in paths {
            let name = path.to_token_stream().to_string();
            if let Some((name, expand)) = DERIVES.iter().find(|(n, _)| *n == name) {
                derives.push((*name, *expand));
            }
        }
    }
    if derives.is_empty() {
        return Err("the case uses no macro listed in DERIVES or ATTRIBUTES".to_owned());
    }
    let input: syn::DeriveInput =
        syn::parse2(item.into_token_stream()).map_err(|e| format!("not a derive input: {e}"))?;
    let mut output = TokenStream::new();
    let mut names = Vec::new();
    for (name, expand) in derives {
        output.extend(expand(&input).unwrap_or_else(syn::Error::into_compile_error));
        names.push(format!("`#[derive({name})]`"));
    }
    Ok((format!("{} adds:", names.join(" and ")), output))
}

fn attrs_mut(item: &mut syn::Item) -> Option<&mut Vec<syn::Attribute>> {
    match item {
        syn::Item::Struct(s) => Some(&mut s.attrs),
        syn::Item::Enum(e) => Some(&mut e.attrs),
        syn::Item::Union(u) => Some(&mut u.attrs),
        syn::Item::Fn(f) => Some(&mut f.attrs),
        _ => None,
    }
}

fn unparse(tokens: TokenStream) -> Result<String, String> {
    let file: syn::File =
        syn::parse2(tokens).map_err(|e| format!("expansion is not a file: {e}"))?;
    Ok(prettyplease::unparse(&file))
}

#[test]
fn codegen_expansions() {
    let mut files = Vec::new();
    for (name, source) in CASES {
        match snapshot(source) {
            Ok(text) => files.push((format!("{name}.rs"), text)),
            Err(error) => panic!("expansion case `{name}`: {error}"),
        }
    }
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("expansions");
    if let Err(problems) = ensure_dir(&dir, "rs", &files) {
        panic!("{problems}");
    }
}

#[test]
fn case_names_are_unique() {
    let mut names: Vec<&str> = CASES.iter().map(|(name, _)| *name).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), CASES.len(), "two cases share a name");
}
