//! `#[node]`: an `async fn(&State[, &NodeContext]) -> Output` becomes a named node; an
//! `async fn(input: Input[, &NodeContext])` becomes a node with its own input, run by
//! `Send::input`.
//!
//! The fn turns into a unit struct of the same name that implements `IntoNode`; the body moves
//! to `name::call`, so tests can still call it directly. Settings (name, retry, timeout,
//! destinations) are checked here and applied as layers by agent-core.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{FnArg, ItemFn, LitStr, Type};

use crate::util::Errors;

#[derive(Default)]
struct Options {
    name: Option<LitStr>,
    retry: Option<Retry>,
    timeout: Option<TokenStream>,
    destinations: Vec<LitStr>,
}

#[derive(Default)]
struct Retry {
    settings: Vec<TokenStream>,
}

/// Expands the attribute; on error, re-emits the fn as written plus the errors so the IDE
/// keeps working (tokio-macros' idiom).
pub(crate) fn expand(args: TokenStream, item: TokenStream) -> TokenStream {
    let function: ItemFn = match syn::parse2(item.clone()) {
        Ok(function) => function,
        Err(_) => {
            let error = syn::Error::new_spanned(
                &item,
                "#[node] goes on an `async fn` that takes the state by reference: `async fn name(state: &State) -> StateUpdate`",
            );
            let error = error.into_compile_error();
            return quote!(#error #item);
        }
    };
    match expand_fn(args, &function) {
        Ok(tokens) => tokens,
        Err(error) => {
            let error = error.into_compile_error();
            quote!(#error #function)
        }
    }
}

fn parse_duration(lit: &LitStr) -> syn::Result<TokenStream> {
    let text = lit.value();
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: u64 = number.parse().map_err(|_| {
        syn::Error::new_spanned(
            lit,
            "expected a duration like \"500ms\", \"30s\", \"2m\" or \"1h\"",
        )
    })?;
    let millis = match unit.trim() {
        "ms" => number,
        "s" => number * 1_000,
        "m" => number * 60_000,
        "h" => number * 3_600_000,
        _ => {
            return Err(syn::Error::new_spanned(
                lit,
                "unknown duration unit; use ms, s, m or h, as in \"30s\"",
            ));
        }
    };
    Ok(quote!(::agent_core::__private::Duration::from_millis(#millis)))
}

fn parse_options(args: TokenStream) -> syn::Result<Options> {
    let mut options = Options::default();
    let parser = syn::meta::parser(|meta| {
        if meta.path.is_ident("name") {
            options.name = Some(meta.value()?.parse()?);
            Ok(())
        } else if meta.path.is_ident("timeout") {
            let lit: LitStr = meta.value()?.parse()?;
            options.timeout = Some(parse_duration(&lit)?);
            Ok(())
        } else if meta.path.is_ident("destinations") {
            let content;
            syn::parenthesized!(content in meta.input);
            let list =
                syn::punctuated::Punctuated::<LitStr, syn::Token![,]>::parse_terminated(&content)?;
            options.destinations.extend(list);
            Ok(())
        } else if meta.path.is_ident("retry") {
            let mut retry = Retry::default();
            if meta.input.peek(syn::token::Paren) {
                meta.parse_nested_meta(|inner| {
                    let key = inner
                        .path
                        .get_ident()
                        .map(ToString::to_string)
                        .unwrap_or_default();
                    let setting = match key.as_str() {
                        "max_attempts" => {
                            let n: syn::LitInt = inner.value()?.parse()?;
                            quote!(.max_attempts(#n))
                        }
                        "initial_interval" | "max_interval" => {
                            let lit: LitStr = inner.value()?.parse()?;
                            let d = parse_duration(&lit)?;
                            let method = syn::Ident::new(&key, inner.path.span());
                            quote!(.#method(#d))
                        }
                        "backoff_factor" => {
                            let f: syn::LitFloat = inner.value()?.parse()?;
                            quote!(.backoff_factor(#f))
                        }
                        "jitter" => {
                            let b: syn::LitBool = inner.value()?.parse()?;
                            quote!(.jitter(#b))
                        }
                        _ => {
                            return Err(inner.error(
                                "unknown retry setting; expected max_attempts = 3, initial_interval = \"500ms\", backoff_factor = 2.0, max_interval = \"128s\" or jitter = true",
                            ));
                        }
                    };
                    retry.settings.push(setting);
                    Ok(())
                })?;
            }
            options.retry = Some(retry);
            Ok(())
        } else {
            Err(meta.error(
                "unknown #[node] option; expected `name = \"..\"`, `retry` or `retry(..)`, `timeout = \"30s\"` or `destinations(\"a\", \"b\")`",
            ))
        }
    });
    syn::parse::Parser::parse2(parser, args)?;
    Ok(options)
}

fn expand_fn(args: TokenStream, function: &ItemFn) -> syn::Result<TokenStream> {
    let mut errors = Errors::default();
    let options = match parse_options(args) {
        Ok(options) => options,
        Err(error) => {
            errors.push(error);
            Options::default()
        }
    };
    let sig = &function.sig;
    if sig.asyncness.is_none() {
        errors.spanned(
            sig.fn_token,
            "#[node] needs an `async fn`: write `async fn` here",
        );
    }
    if !sig.generics.params.is_empty() {
        errors.spanned(
            &sig.generics,
            "#[node] fns cannot be generic: a node belongs to one state type; write a closure or implement `agent_core::Node` for generic nodes",
        );
    }

    let mut state_ty: Option<&Type> = None;
    // A first argument by value is the node's own input (what a `Send::input` carries).
    let mut input_ty: Option<&Type> = None;
    let mut has_ctx = false;
    let mut context_ty: Option<&Type> = None;
    for (position, arg) in sig.inputs.iter().enumerate() {
        match arg {
            FnArg::Receiver(receiver) => errors.spanned(
                receiver,
                "#[node] works on free functions; move the method out of the impl block, or use a closure that calls it",
            ),
            FnArg::Typed(pat) => match (&*pat.ty, position) {
                (Type::Reference(r), 0) if r.mutability.is_some() => errors.spanned(
                    &pat.ty,
                    "nodes never get `&mut` state: take `&State` and return an update with the changes",
                ),
                (Type::Reference(r), 0) => state_ty = Some(&r.elem),
                (ty, 0) if is_arc(ty) => errors.spanned(
                    &pat.ty,
                    "the first argument of a node is the state by reference: `state: &State`",
                ),
                (ty, 0) => input_ty = Some(ty),
                (Type::Reference(r), 1) if r.mutability.is_none() => {
                    has_ctx = true;
                    match runtime_context(&r.elem) {
                        Ok(context) => context_ty = context,
                        Err(error) => errors.push(error),
                    }
                }
                (_, 1) => errors.spanned(
                    &pat.ty,
                    "the second argument of a node is the run context by reference: `ctx: &agent_core::NodeContext`, or `rt: &agent_core::Runtime<Context>` for the graph's runtime context",
                ),
                _ => errors.spanned(
                    pat,
                    "a node takes at most two arguments: `state: &State` and `ctx: &agent_core::NodeContext` (or `rt: &agent_core::Runtime<Context>`)",
                ),
            },
        }
    }
    if sig.inputs.is_empty() {
        errors.spanned(
            &sig.ident,
            "a node takes the state: add `state: &State` as the first argument (or its own input by value, `input: Input`, for a node run by `Send::input`)",
        );
    }
    errors.finish()?;
    if let Some(input_ty) = input_ty {
        return Ok(expand_input_fn(
            function, &options, input_ty, has_ctx, context_ty,
        ));
    }
    let Some(state_ty) = state_ty else {
        return Err(syn::Error::new_spanned(
            &sig.ident,
            "a node takes the state first",
        ));
    };

    let ident = &sig.ident;
    let name = node_name(&options, ident);
    let output = &sig.output;
    let private = quote!(::agent_core::__private);

    // The closure's bindings are `__`-prefixed: a plain `state` pattern would mean a unit
    // struct of that name, such as the one `#[node] async fn state(..)` defines.
    let call = if has_ctx {
        quote!(#ident::call(&__state, &__ctx).await)
    } else {
        quote!(#ident::call(&__state).await)
    };
    // Errors about the output type point at the return type; about the future (not `Send`)
    // at the fn's name.
    let output_span = match output {
        syn::ReturnType::Type(_, ty) => ty.span(),
        syn::ReturnType::Default => sig.ident.span(),
    };
    let (closure, marker, node_spec) = match context_ty {
        None => (
            quote_spanned! {sig.ident.span()=>
                move |__state: #private::Arc<#state_ty>, __ctx: #private::NodeContext| async move {
                    let _ = &__ctx;
                    #call
                }
            },
            quote!(#private::NodeFnMarker),
            quote_spanned!(output_span=> #private::node_spec::<#state_ty, _, _, _>),
        ),
        Some(context_ty) => (
            quote_spanned! {sig.ident.span()=>
                move |__state: #private::Arc<#state_ty>, __ctx: #private::Runtime<#context_ty>| async move {
                    #call
                }
            },
            quote!(#private::RuntimeFnMarker<#context_ty>),
            quote_spanned!(output_span=> #private::node_spec_with_runtime::<#state_ty, #context_ty, _, _, _>),
        ),
    };
    let settings = settings(&options);
    let unit = unit_struct(function, &name);

    Ok(quote! {
        #unit

        impl #private::IntoNode<#state_ty, #marker> for #ident {
            fn into_node(self) -> #private::NodeSpec<#state_ty> {
                #node_spec(#closure)
                    .named(#name)
                    #settings
            }
        }
    })
}

/// The node's name: `name = ".."`, else the fn's.
fn node_name(options: &Options, ident: &syn::Ident) -> LitStr {
    options
        .name
        .clone()
        .unwrap_or_else(|| LitStr::new(&ident.to_string(), ident.span()))
}

/// What both expansions write: the fn becomes a unit struct of its name, with `NAME` and
/// the body at `call`.
fn unit_struct(function: &ItemFn, name: &LitStr) -> TokenStream {
    let vis = &function.vis;
    let attrs = &function.attrs;
    let ident = &function.sig.ident;
    let inputs = &function.sig.inputs;
    let output = &function.sig.output;
    let block = &function.block;
    let call_doc = format!(
        "The body of node `{}`; call it directly in tests.",
        name.value()
    );
    quote! {
        #(#attrs)*
        #[allow(non_camel_case_types)]
        #[derive(::core::clone::Clone, ::core::marker::Copy, ::core::fmt::Debug, ::core::default::Default)]
        #vis struct #ident;

        impl #ident {
            /// The node's name in a graph (used by `add_named`).
            #vis const NAME: &'static str = #name;

            #[doc = #call_doc]
            #vis async fn call(#inputs) #output #block
        }
    }
}

/// The settings of `options` as calls on a `NodeSpec`: retry, timeout, destinations.
fn settings(options: &Options) -> TokenStream {
    let private = quote!(::agent_core::__private);
    let retry = options.retry.as_ref().map(|r| {
        let settings = &r.settings;
        quote!(.with_retry(#private::RetryPolicy::new() #(#settings)*))
    });
    let timeout = options.timeout.as_ref().map(|t| quote!(.with_timeout(#t)));
    let destinations = (!options.destinations.is_empty()).then(|| {
        let d = &options.destinations;
        quote!(.with_destinations([#(#d),*]))
    });
    quote!(#retry #timeout #destinations)
}

/// A node with its own input (`async fn(input: Input[, ctx: &NodeContext | rt: &Runtime<C>])`):
/// it fits a graph over any state its output is an update of, so the `IntoNode` impl is generic
/// over the state and bounded by the output.
fn expand_input_fn(
    function: &ItemFn,
    options: &Options,
    input_ty: &Type,
    has_ctx: bool,
    context_ty: Option<&Type>,
) -> TokenStream {
    let sig = &function.sig;
    let ident = &sig.ident;
    let name = node_name(options, ident);
    let output = &sig.output;
    let private = quote!(::agent_core::__private);
    let output_ty = match output {
        syn::ReturnType::Type(_, ty) => quote!(#ty),
        syn::ReturnType::Default => quote!(()),
    };
    let call = if has_ctx {
        quote!(#ident::call(__input, &__ctx).await)
    } else {
        quote!(#ident::call(__input).await)
    };
    // An input type that cannot be one (not serde, not `Clone`) is reported at the type.
    let (closure, marker, node_spec) = match context_ty {
        None => (
            quote_spanned! {sig.ident.span()=>
                move |__input: #input_ty, __ctx: #private::NodeContext| async move {
                    let _ = &__ctx;
                    #call
                }
            },
            quote!(#private::NodeFnMarker),
            quote_spanned!(input_ty.span()=> #private::node_spec_with_input::<__S, #input_ty, _, _, _>),
        ),
        Some(context_ty) => (
            quote_spanned! {sig.ident.span()=>
                move |__input: #input_ty, __ctx: #private::Runtime<#context_ty>| async move {
                    #call
                }
            },
            quote!(#private::RuntimeFnMarker<#context_ty>),
            quote_spanned!(input_ty.span()=> #private::node_spec_with_input_runtime::<__S, #input_ty, #context_ty, _, _, _>),
        ),
    };
    let settings = settings(options);
    let unit = unit_struct(function, &name);
    quote! {
        #unit

        impl<__S: #private::GraphState> #private::IntoNode<__S, #marker> for #ident
        where
            #output_ty: #private::IntoNodeOutput<__S>,
        {
            fn into_node(self) -> #private::NodeSpec<__S> {
                #node_spec(#closure)
                    .named(#name)
                    #settings
            }
        }
    }
}

/// Whether `ty` is an `Arc<..>` (a state by `Arc` is a mistake, not an input).
fn is_arc(ty: &Type) -> bool {
    matches!(ty, Type::Path(path) if path.path.segments.last().is_some_and(|s| s.ident == "Arc"))
}

/// The context type of a `&Runtime<C>` argument; `None` for any other type (`&NodeContext`).
fn runtime_context(ty: &Type) -> syn::Result<Option<&Type>> {
    let Type::Path(path) = ty else {
        return Ok(None);
    };
    let Some(last) = path.path.segments.last() else {
        return Ok(None);
    };
    if last.ident != "Runtime" {
        return Ok(None);
    }
    let generic = match &last.arguments {
        syn::PathArguments::AngleBracketed(args) if args.args.len() == 1 => args.args.first(),
        _ => None,
    };
    match generic {
        Some(syn::GenericArgument::Type(context)) => Ok(Some(context)),
        _ => Err(syn::Error::new_spanned(
            last,
            "`Runtime` takes the graph's context type: write `&Runtime<MyContext>`",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        let lit = LitStr::new("30s", proc_macro2::Span::call_site());
        assert!(
            parse_duration(&lit)
                .expect("ok")
                .to_string()
                .contains("30000")
        );
        let bad = LitStr::new("3 weeks", proc_macro2::Span::call_site());
        assert!(parse_duration(&bad).is_err());
    }
}
