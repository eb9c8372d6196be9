//! `#[tool]`: an `async fn(args...) -> Result<T, E>` becomes an `agent_tools::Tool`.
//!
//! The fn turns into a unit struct of the same name; its parameters become the fields of a
//! generated arguments struct (serde + schemars derives, so the model gets a JSON schema;
//! generic over the field types, so that a type lacking a derive is one error), the
//! doc comment becomes the description, and an `# Arguments` section of it describes the
//! fields. The body moves to `name::call(args...)`. Generated code names the runtime through
//! `::agent_tools::__private`, and every check that can fail points at the user's tokens.

use proc_macro2::{Span, TokenStream, TokenTree};
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Attribute, FnArg, Ident, ItemFn, LitStr, Pat, ReturnType, Type};

use crate::util::{Errors, edit_distance};

/// `#[tool(...)]` options.
#[derive(Default)]
struct Options {
    name: Option<LitStr>,
    description: Option<LitStr>,
}

/// One parameter of the fn: a field of the arguments struct.
struct Arg<'a> {
    ident: &'a Ident,
    /// The name without `r#`: the JSON field and the name docs use.
    name: String,
    ty: &'a Type,
}

/// Expands the attribute; on error, re-emits the fn as written plus the errors so the IDE
/// keeps working (tokio-macros' idiom).
pub(crate) fn expand(args: TokenStream, item: TokenStream) -> TokenStream {
    let function: ItemFn = match syn::parse2(item.clone()) {
        Ok(function) => function,
        Err(_) => {
            let error = syn::Error::new_spanned(
                &item,
                "#[tool] goes on an `async fn` returning `Result<T, E>`, e.g. `async fn add(a: f64, b: f64) -> Result<f64, String>`",
            )
            .into_compile_error();
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

const OPTIONS: [&str; 2] = ["name", "description"];

fn parse_options(args: TokenStream) -> syn::Result<Options> {
    let mut options = Options::default();
    let parser = syn::meta::parser(|meta| {
        if meta.path.is_ident("name") {
            let name: LitStr = meta.value()?.parse()?;
            if !is_valid_tool_name(&name.value()) {
                return Err(syn::Error::new_spanned(
                    &name,
                    "a tool name is 1 to 64 ASCII letters, digits, `_` or `-` (what model providers accept), e.g. `get_weather`",
                ));
            }
            options.name = Some(name);
            Ok(())
        } else if meta.path.is_ident("description") {
            let description: LitStr = meta.value()?.parse()?;
            if description.value().trim().is_empty() {
                return Err(syn::Error::new_spanned(
                    &description,
                    "the description is what the model reads to decide when to call the tool; write one",
                ));
            }
            options.description = Some(description);
            Ok(())
        } else {
            let given = meta
                .path
                .get_ident()
                .map(ToString::to_string)
                .unwrap_or_default();
            let hint = OPTIONS
                .iter()
                .find(|known| edit_distance(&given, known) <= 2)
                .map(|known| format!(" (did you mean `{known}`?)"))
                .unwrap_or_default();
            Err(meta.error(format!(
                "unknown #[tool] option{hint}; expected `name = \"...\"` or `description = \"...\"`"
            )))
        }
    });
    syn::parse::Parser::parse2(parser, args)?;
    Ok(options)
}

/// What providers accept as a tool name: `^[a-zA-Z0-9_-]{1,64}$`.
fn is_valid_tool_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Whether a type mentions a lifetime other than `'static` (arguments are deserialized from
/// JSON, so they own their data).
fn borrows(tokens: TokenStream) -> bool {
    let mut tokens = tokens.into_iter().peekable();
    while let Some(token) = tokens.next() {
        match token {
            TokenTree::Punct(p) if p.as_char() == '\'' => {
                if let Some(TokenTree::Ident(ident)) = tokens.peek()
                    && ident != "static"
                {
                    return true;
                }
            }
            TokenTree::Group(group) if borrows(group.stream()) => return true,
            _ => {}
        }
    }
    false
}

/// Whether a return type is `Result<..>` or an alias named like one (`io::Result<T>`,
/// `anyhow::Result<T>`): anything else gets one clear error instead of several trait errors.
fn looks_like_result(ty: &Type) -> bool {
    match ty {
        Type::Path(path) if path.qself.is_none() => path
            .path
            .segments
            .last()
            .is_some_and(|segment| segment.ident.to_string().ends_with("Result")),
        Type::Group(group) => looks_like_result(&group.elem),
        Type::Paren(paren) => looks_like_result(&paren.elem),
        _ => false,
    }
}

/// The owned type to suggest for a reference type.
fn owned_suggestion(reference: &syn::TypeReference) -> String {
    let inner = reference.elem.to_token_stream().to_string();
    match &*reference.elem {
        Type::Path(path) if path.path.is_ident("str") => "String".to_owned(),
        Type::Slice(slice) => format!("Vec<{}>", slice.elem.to_token_stream()),
        _ => inner,
    }
}

fn check_args<'a>(function: &'a ItemFn, errors: &mut Errors) -> Vec<Arg<'a>> {
    let mut args = Vec::new();
    for input in &function.sig.inputs {
        let typed = match input {
            FnArg::Receiver(receiver) => {
                errors.spanned(
                    receiver,
                    "#[tool] works on free functions; move the fn out of the impl block, or implement `agent_tools::Tool` for the type",
                );
                continue;
            }
            FnArg::Typed(typed) => typed,
        };
        let ident = match &*typed.pat {
            Pat::Ident(pat) if pat.by_ref.is_none() && pat.subpat.is_none() => &pat.ident,
            other => {
                errors.spanned(
                    other,
                    "a #[tool] argument needs a plain name (it becomes the JSON field the model fills in): write `name: Type`",
                );
                continue;
            }
        };
        match &*typed.ty {
            Type::Reference(reference) => errors.spanned(
                &typed.ty,
                format!(
                    "#[tool] arguments are deserialized from the model's JSON, so they must be owned: use `{}` instead of `&{}{}`",
                    owned_suggestion(reference),
                    if reference.mutability.is_some() { "mut " } else { "" },
                    reference.elem.to_token_stream()
                ),
            ),
            Type::ImplTrait(_) => errors.spanned(
                &typed.ty,
                "`impl Trait` cannot be deserialized from JSON; use a concrete type such as `String`, `f64` or a struct deriving `Deserialize` and `JsonSchema`",
            ),
            ty if borrows(ty.to_token_stream()) => errors.spanned(
                ty,
                "#[tool] arguments are deserialized from the model's JSON, so they must be owned: remove the lifetime (e.g. `String` instead of `Cow<'_, str>`)",
            ),
            ty => args.push(Arg {
                ident,
                name: syn::ext::IdentExt::unraw(ident).to_string(),
                ty,
            }),
        }
    }
    args
}

/// The doc comment, split into the description and the `# Arguments` entries.
struct Docs {
    description: String,
    args: Vec<(String, String)>,
    span: Option<Span>,
}

fn doc_lines(attrs: &[Attribute]) -> (Vec<String>, Option<Span>) {
    let mut lines = Vec::new();
    let mut span = None;
    for attr in attrs {
        if !attr.path().is_ident("doc") {
            continue;
        }
        if let syn::Meta::NameValue(nv) = &attr.meta
            && let syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(text),
                ..
            }) = &nv.value
        {
            span.get_or_insert(attr.span());
            // `split`, not `lines`: an empty `///` line is a paragraph break and must stay.
            lines.extend(
                text.value()
                    .split('\n')
                    .map(|line| line.trim_end_matches('\r').to_owned()),
            );
        }
    }
    // Remove the indentation all non-blank lines share (`/// text` gives " text").
    let indent = lines
        .iter()
        .filter(|line| !line.trim().is_empty())
        .map(|line| line.len() - line.trim_start().len())
        .min()
        .unwrap_or(0);
    let lines = lines
        .into_iter()
        .map(|line| {
            if line.trim().is_empty() {
                String::new()
            } else {
                line[indent..].trim_end().to_owned()
            }
        })
        .collect();
    (lines, span)
}

fn parse_docs(attrs: &[Attribute]) -> Docs {
    let (lines, span) = doc_lines(attrs);
    let mut description = Vec::new();
    let mut args: Vec<(String, String)> = Vec::new();
    let mut in_args = false;
    for line in lines {
        let trimmed = line.trim();
        if trimmed.starts_with('#') {
            let heading = trimmed.trim_start_matches('#').trim().to_ascii_lowercase();
            in_args = matches!(heading.as_str(), "arguments" | "args" | "parameters");
            if in_args {
                continue;
            }
        }
        if !in_args {
            description.push(line);
            continue;
        }
        let bullet = trimmed
            .strip_prefix('*')
            .or_else(|| trimmed.strip_prefix('-'))
            .map(str::trim_start);
        match bullet.and_then(|rest| rest.strip_prefix('`')) {
            Some(rest) => {
                let (name, text) = rest.split_once('`').unwrap_or((rest, ""));
                let text = text
                    .trim_start_matches(|c: char| {
                        c.is_whitespace() || matches!(c, '-' | ':' | '–' | '—')
                    })
                    .to_owned();
                args.push((name.trim().to_owned(), text));
            }
            None if !trimmed.is_empty() => {
                // A continuation line of the previous entry.
                if let Some((_, text)) = args.last_mut() {
                    if !text.is_empty() {
                        text.push(' ');
                    }
                    text.push_str(trimmed);
                }
            }
            None => {}
        }
    }
    Docs {
        description: description.join("\n").trim().to_owned(),
        args,
        span,
    }
}

/// `get_weather` -> `GetWeatherArgs`.
fn args_struct_name(ident: &Ident) -> Ident {
    let name = syn::ext::IdentExt::unraw(ident).to_string();
    let mut camel = String::new();
    for part in name.split('_').filter(|p| !p.is_empty()) {
        let mut chars = part.chars();
        if let Some(first) = chars.next() {
            camel.extend(first.to_uppercase());
            camel.push_str(chars.as_str());
        }
    }
    format_ident!("{}Args", camel, span = ident.span())
}

fn expand_fn(options: TokenStream, function: &ItemFn) -> syn::Result<TokenStream> {
    let mut errors = Errors::default();
    let options = match parse_options(options) {
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
            "#[tool] needs an `async fn`: write `async fn` here",
        );
    }
    if let syn::Safety::Unsafe(token) = &sig.safety {
        errors.spanned(
            token,
            "a #[tool] fn cannot be `unsafe`: the model calls it with arbitrary arguments; make it safe and keep the `unsafe` block inside",
        );
    }
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        errors.spanned(
            &sig.generics,
            "#[tool] fns cannot be generic: the model sees one JSON schema per tool; use concrete types, or implement `agent_tools::Tool` for each",
        );
    }
    if let Some(variadic) = &sig.variadic {
        errors.spanned(variadic, "#[tool] fns cannot be variadic");
    }
    let args = check_args(function, &mut errors);
    let ret = match &sig.output {
        ReturnType::Type(_, ty) if !looks_like_result(ty) => {
            errors.spanned(
                ty,
                format!(
                    "a #[tool] fn returns `Result<T, E>` (or an alias named like `io::Result<T>`), not `{}`: return `Result<{}, String>` and wrap the value in `Ok(..)`",
                    ty.to_token_stream(),
                    ty.to_token_stream()
                ),
            );
            None
        }
        ReturnType::Type(_, ty) => Some(&**ty),
        ReturnType::Default => {
            errors.spanned(
                &sig.ident,
                "a #[tool] fn returns `Result<T, E>`: add a return type, e.g. `-> Result<String, String>`",
            );
            None
        }
    };

    let docs = parse_docs(&function.attrs);
    let tool_name = options.name.clone().unwrap_or_else(|| {
        LitStr::new(
            &syn::ext::IdentExt::unraw(&sig.ident).to_string(),
            sig.ident.span(),
        )
    });
    if options.name.is_none() && !is_valid_tool_name(&tool_name.value()) {
        errors.spanned(
            &sig.ident,
            "this fn's name is not a valid tool name (1 to 64 ASCII letters, digits, `_` or `-`); set one with #[tool(name = \"...\")]",
        );
    }
    let description = match &options.description {
        Some(description) => description.value(),
        None => docs.description.clone(),
    };
    if description.is_empty() {
        errors.spanned(
            &sig.ident,
            format!(
                "add a doc comment to `{}`: it becomes the tool's description, which the model reads to decide when to call it (or write #[tool(description = \"...\")])",
                sig.ident
            ),
        );
    }
    for (name, _) in &docs.args {
        if !args.iter().any(|arg| &arg.name == name) {
            let known: Vec<String> = args.iter().map(|arg| format!("`{}`", arg.name)).collect();
            let known = if known.is_empty() {
                "none".to_owned()
            } else {
                known.join(", ")
            };
            errors.push(syn::Error::new(
                docs.span.unwrap_or_else(|| sig.ident.span()),
                format!(
                    "the `# Arguments` section of the doc comment describes `{name}`, but `{}` has no such argument (arguments: {known}); fix the name or remove the entry",
                    sig.ident
                ),
            ));
        }
    }
    errors.finish()?;
    let Some(ret) = ret else {
        return Err(syn::Error::new_spanned(
            &sig.ident,
            "a #[tool] fn returns `Result<T, E>`",
        ));
    };

    let private = quote!(::agent_tools::__private);
    let vis = &function.vis;
    let ident = &sig.ident;
    let inputs = &sig.inputs;
    let output = &sig.output;
    let block = &function.block;
    let (doc_attrs, other_attrs): (Vec<&Attribute>, Vec<&Attribute>) = function
        .attrs
        .iter()
        .partition(|attr| attr.path().is_ident("doc"));
    // The struct is named `__ToolArgs` in Rust, so it cannot shadow a user type called
    // like the schema (`SearchArgs` for `search`), which the model sees as its title.
    let args_struct = format_ident!("__ToolArgs", span = Span::mixed_site());
    let schema_name = args_struct_name(ident).to_string();
    // The struct is generic over the argument types, instantiated with the user's in the
    // `Tool` impl: the serde and schemars derives then expand to generic impls that compile
    // whatever the types, and a type without `Deserialize` or `JsonSchema` is reported once,
    // by `assert_arg` at the user's token, not again from inside the derived code.
    let params: Vec<Ident> = (0..args.len())
        .map(|i| format_ident!("__ToolArg{}", i, span = Span::mixed_site()))
        .collect();
    let fields = args.iter().zip(&params).map(|(arg, param)| {
        let field = arg.ident;
        let doc = docs
            .args
            .iter()
            .find(|(name, _)| &arg.name == name)
            .map(|(_, text)| quote!(#[doc = #text]));
        quote!(#doc pub #field: #param)
    });
    let generics = if params.is_empty() {
        quote!()
    } else {
        quote!(<#(#params),*>)
    };
    let arg_types: Vec<&Type> = args.iter().map(|arg| arg.ty).collect();
    let args_type = if arg_types.is_empty() {
        quote!(#args_struct)
    } else {
        quote!(#args_struct<#(#arg_types),*>)
    };
    let field_names = args.iter().map(|arg| arg.ident);
    let arg_checks = args.iter().map(|arg| {
        let ty = arg.ty;
        quote_spanned!(ty.span()=> #private::assert_arg::<#ty>();)
    });
    let ret_span = ret.span();
    let result = quote_spanned!(ret_span=> <#ret as #private::ToolResult>);
    let output_check = quote_spanned!(ret_span=> #private::assert_output::<#result::Ok>(););
    let error_check = quote_spanned!(ret_span=> #private::assert_error::<#result::Err>(););
    let assoc_types = quote_spanned! {ret_span=>
        type Output = #result::Ok;
        type Error = #result::Err;
    };
    // `__args`, not `args`: a plain pattern would mean a unit struct of that name, such as the
    // one `#[tool] async fn args(..)` defines.
    let call_body = quote_spanned!(ident.span()=> #ident::call(#(__args.#field_names),*));
    let call_doc = format!(
        "The body of tool `{}`; call it directly in tests.",
        tool_name.value()
    );
    let serde_crate = "::agent_tools::__private::serde";
    let schemars_crate = "::agent_tools::__private::schemars";

    Ok(quote! {
        #(#doc_attrs)*
        #[allow(non_camel_case_types)]
        #[derive(::core::clone::Clone, ::core::marker::Copy, ::core::fmt::Debug, ::core::default::Default)]
        #vis struct #ident;

        impl #ident {
            /// The tool's name, as the model calls it.
            #vis const NAME: &'static str = #tool_name;

            #[doc = #call_doc]
            #(#other_attrs)*
            #vis async fn call(#inputs) #output #block
        }

        const _: () = {
            #[doc(hidden)]
            #[derive(#private::serde::Deserialize, #private::schemars::JsonSchema)]
            #[serde(crate = #serde_crate)]
            #[schemars(crate = #schemars_crate, rename = #schema_name)]
            pub struct #args_struct #generics {
                #(#fields,)*
            }

            // The bound under `for<'__a>` is not checked where the impl is written (a plain
            // one would be, and fail a second time next to `assert_arg`'s error): with an
            // argument type that cannot be one, the impl only does not apply.
            impl #private::Tool for #ident
            where
                for<'__a> #args_type: #private::serde::de::DeserializeOwned
                    + #private::schemars::JsonSchema
                    + ::core::marker::Send
                    + 'static,
            {
                type Args = #args_type;
                #assoc_types

                fn name(&self) -> &str {
                    #tool_name
                }

                fn description(&self) -> &str {
                    #description
                }

                fn call(
                    &self,
                    __args: Self::Args,
                ) -> impl ::core::future::Future<
                    Output = ::core::result::Result<Self::Output, Self::Error>,
                > + ::core::marker::Send {
                    #call_body
                }
            }

            #(#arg_checks)*
            #output_check
            #error_check
        };
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn docs_of(source: &str) -> Docs {
        let function: ItemFn = syn::parse_str(source).expect("parses");
        parse_docs(&function.attrs)
    }

    #[test]
    fn splits_description_and_arguments() {
        let docs = docs_of(
            r#"
            /// Looks up the weather.
            ///
            /// Uses a cache.
            ///
            /// # Arguments
            ///
            /// * `city` - The city,
            ///   in English.
            /// - `days`: How many days.
            ///
            /// # Errors
            ///
            /// When offline.
            async fn weather(city: String, days: u8) -> Result<String, String> { todo!() }
            "#,
        );
        assert_eq!(
            docs.description,
            "Looks up the weather.\n\nUses a cache.\n\n# Errors\n\nWhen offline."
        );
        assert_eq!(
            docs.args,
            vec![
                ("city".to_owned(), "The city, in English.".to_owned()),
                ("days".to_owned(), "How many days.".to_owned()),
            ]
        );
    }

    #[test]
    fn names() {
        let ident = Ident::new("get_weather", Span::call_site());
        assert_eq!(args_struct_name(&ident).to_string(), "GetWeatherArgs");
        assert!(is_valid_tool_name("get-weather_2"));
        assert!(!is_valid_tool_name("get weather"));
        let ty: Type = syn::parse_str("Cow<'a, str>").expect("parses");
        assert!(borrows(ty.to_token_stream()));
        let ty: Type = syn::parse_str("Cow<'static, str>").expect("parses");
        assert!(!borrows(ty.to_token_stream()));
    }

    #[test]
    fn expands_without_errors() {
        let item: TokenStream = syn::parse_str(
            "/// Adds.\nasync fn add(a: f64, mut b: f64) -> Result<f64, String> { b += a; Ok(b) }",
        )
        .expect("parses");
        let out = expand(TokenStream::new(), item).to_string();
        assert!(!out.contains("compile_error"), "{out}");
        assert!(out.contains("struct __ToolArgs"), "{out}");
        assert!(out.contains("rename = \"AddArgs\""), "{out}");
        assert!(
            out.contains(":: agent_tools :: __private :: Tool for add"),
            "{out}"
        );
    }
}
