//! `#[derive(GraphState)]`: the partial update type, per-field reducers, field sets and
//! per-field serde for checkpoints.

use proc_macro2::TokenStream;
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Data, DeriveInput, Fields, GenericParam, Ident, Path};

use crate::util::{Errors, edit_distance};

const BUILTINS: [&str; 4] = ["replace", "append", "merge", "add"];
const MAX_FIELDS: usize = 128;

enum Reducer {
    Replace,
    Builtin(Ident),
    Custom(Path),
}

struct Field {
    ident: Ident,
    ty: syn::Type,
    reducer: Reducer,
}

#[derive(Default)]
struct Options {
    update: Option<Ident>,
    derives: Vec<Path>,
}

/// Expands the derive.
///
/// Mistakes in the shape of the struct (not a struct with named fields, lifetimes, unbounded
/// generics, too many fields, field names that would shadow) stop the expansion. Mistakes in
/// `#[reducer(..)]` and `#[graph_state(..)]` do not: the state and its update type are still
/// generated (a bad reducer as `replace`, a bad option as absent) next to the error, so the
/// code that uses them compiles and the one mistake is the one error.
pub(crate) fn expand(input: &DeriveInput) -> syn::Result<TokenStream> {
    let mut errors = Errors::default();
    let mut recoverable = Errors::default();
    let name = &input.ident;

    let named = match &input.data {
        Data::Struct(data) => match &data.fields {
            Fields::Named(fields) => Some(&fields.named),
            Fields::Unnamed(fields) => {
                errors.spanned(
                    fields,
                    "GraphState needs named fields, one per state channel: write `struct State { field: Type, .. }` instead of a tuple struct",
                );
                None
            }
            Fields::Unit => {
                errors.spanned(
                    name,
                    "GraphState needs named fields, one per state channel: add fields like `struct State { messages: Vec<String> }`",
                );
                None
            }
        },
        Data::Enum(data) => {
            errors.spanned(
                data.enum_token,
                "GraphState can only be derived for a struct with named fields; wrap the enum in a struct field: `struct State { phase: Phase }`",
            );
            None
        }
        Data::Union(data) => {
            errors.spanned(
                data.union_token,
                "GraphState can only be derived for a struct with named fields, not a union",
            );
            None
        }
    };

    check_generics(&input.generics, &mut errors);
    let options = parse_options(&input.attrs, &mut recoverable);

    let mut fields = Vec::new();
    if let Some(named) = named {
        if named.len() > MAX_FIELDS {
            errors.spanned(
                name,
                format!(
                    "GraphState supports at most {MAX_FIELDS} fields (this struct has {}); group related fields into a nested struct",
                    named.len()
                ),
            );
        }
        for field in named {
            let Some(ident) = field.ident.clone() else {
                continue;
            };
            // The update's setters are named after the fields; these would shadow trait
            // methods every update has.
            if [
                "default",
                "clone",
                "into",
                "from",
                "fmt",
                "eq",
                "serialize",
                "deserialize",
            ]
            .contains(&ident.to_string().as_str())
            {
                errors.spanned(
                    &ident,
                    format!(
                        "a state field cannot be named `{ident}`: its setter on the update type would shadow `{ident}()` of a trait the update implements; rename the field (e.g. `{ident}_value`)"
                    ),
                );
            }
            let reducer = parse_reducer(&field.attrs, &mut recoverable);
            fields.push(Field {
                ident,
                ty: field.ty.clone(),
                reducer,
            });
        }
    }
    errors.finish()?;

    let generated = generate(input, &options, &fields);
    Ok(match recoverable.finish() {
        Ok(()) => generated,
        Err(error) => {
            let error = error.into_compile_error();
            quote!(#error #generated)
        }
    })
}

fn check_generics(generics: &syn::Generics, errors: &mut Errors) {
    let where_bounded: Vec<String> = generics
        .where_clause
        .iter()
        .flat_map(|w| w.predicates.iter())
        .filter_map(|p| match p {
            syn::WherePredicate::Type(t) => Some(t.bounded_ty.to_token_stream().to_string()),
            _ => None,
        })
        .collect();
    for param in &generics.params {
        match param {
            GenericParam::Lifetime(l) => errors.spanned(
                l,
                "graph state must own its data (it lives across awaits and in checkpoints): remove the lifetime and use owned types such as `String` or `Arc<T>`",
            ),
            GenericParam::Type(t) => {
                if t.bounds.is_empty() && !where_bounded.contains(&t.ident.to_string()) {
                    errors.spanned(
                        &t.ident,
                        format!(
                            "generic parameter `{0}` of a graph state needs bounds: write `{0}: Clone + Default + Send + Sync + serde::Serialize + serde::de::DeserializeOwned + 'static`",
                            t.ident
                        ),
                    );
                }
            }
            GenericParam::Const(_) => {}
        }
    }
}

fn parse_options(attrs: &[syn::Attribute], errors: &mut Errors) -> Options {
    let mut options = Options::default();
    for attr in attrs.iter().filter(|a| a.path().is_ident("graph_state")) {
        let result = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("update") {
                let value = meta.value()?;
                let ident: Ident = if value.peek(syn::LitStr) {
                    let lit: syn::LitStr = value.parse()?;
                    lit.parse()?
                } else {
                    value.parse()?
                };
                options.update = Some(ident);
                Ok(())
            } else if meta.path.is_ident("derive") {
                meta.parse_nested_meta(|inner| {
                    options.derives.push(inner.path);
                    Ok(())
                })
            } else {
                Err(meta.error(
                    "unknown graph_state option; expected `update = Name` or `derive(Trait, ..)`",
                ))
            }
        });
        if let Err(error) = result {
            errors.push(error);
        }
    }
    options
}

fn parse_reducer(attrs: &[syn::Attribute], errors: &mut Errors) -> Reducer {
    let mut reducer = Reducer::Replace;
    let mut seen = false;
    for attr in attrs.iter().filter(|a| a.path().is_ident("reducer")) {
        if seen {
            errors.spanned(
                attr,
                "a field takes one `#[reducer(...)]`; remove the extra one",
            );
            continue;
        }
        seen = true;
        let list = match &attr.meta {
            syn::Meta::List(list) => list,
            syn::Meta::Path(_) => {
                errors.spanned(
                    attr,
                    format!("`#[reducer]` needs the reducer in parentheses: {REDUCER_FORMS}"),
                );
                continue;
            }
            syn::Meta::NameValue(pair) => {
                errors.spanned(attr, malformed_message(&pair.value));
                continue;
            }
        };
        let path: Path = match list.parse_args() {
            Ok(path) => path,
            Err(_) => {
                errors.push(malformed_list(list));
                continue;
            }
        };
        reducer = match path.get_ident() {
            Some(ident) if ident == "replace" => Reducer::Replace,
            Some(ident) if BUILTINS.contains(&ident.to_string().as_str()) => {
                Reducer::Builtin(ident.clone())
            }
            Some(ident) => {
                let text = ident.to_string();
                let near = BUILTINS
                    .iter()
                    .find(|b| edit_distance(b, &text) <= 2 && text.len() > 2);
                match near {
                    Some(builtin) => {
                        errors.spanned(
                            ident,
                            format!(
                                "unknown reducer `{text}`; did you mean `{builtin}`? built-ins are append, merge, add and replace (for a custom reducer fn with this name, write `self::{text}`)"
                            ),
                        );
                        Reducer::Replace
                    }
                    None => Reducer::Custom(path),
                }
            }
            None => Reducer::Custom(path),
        };
    }
    reducer
}

/// The accepted forms, for messages.
const REDUCER_FORMS: &str = "`#[reducer(append)]`, `#[reducer(merge)]`, `#[reducer(add)]`, `#[reducer(replace)]` or `#[reducer(path::to::fn)]` for a `fn(&mut T, T)`";

/// The error for `#[reducer = value]`: the list form, with the value in it when it names a
/// reducer (`#[reducer = "append"]` -> `#[reducer(append)]`).
fn malformed_message(value: &syn::Expr) -> String {
    let named = match value {
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Str(text),
            ..
        }) => text.parse::<Path>().ok(),
        syn::Expr::Path(path) => Some(path.path.clone()),
        _ => None,
    };
    match named {
        Some(path) => format!(
            "write the reducer in parentheses: `#[reducer({})]`",
            path.to_token_stream().to_string().replace(' ', "")
        ),
        None => format!("write the reducer in parentheses: {REDUCER_FORMS}"),
    }
}

/// The error for `#[reducer(...)]` whose contents are not one path: several reducers, a
/// string, or anything else — spanned at the contents.
fn malformed_list(list: &syn::MetaList) -> syn::Error {
    let parsed = list.parse_args_with(
        syn::punctuated::Punctuated::<syn::Expr, syn::Token![,]>::parse_terminated,
    );
    let message = match parsed
        .as_ref()
        .map(|items| items.iter().collect::<Vec<_>>())
    {
        Ok(items) if items.len() > 1 => {
            let names: Vec<String> = items
                .iter()
                .map(|item| item.to_token_stream().to_string().replace(' ', ""))
                .collect();
            format!(
                "a field takes one reducer, not {}: keep one of {}, or write a `fn(&mut T, T)` that does both and name it here",
                names.len(),
                names
                    .iter()
                    .map(|n| format!("`{n}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        }
        Ok(items) => match items.first() {
            Some(syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(text),
                ..
            })) => format!(
                "write the reducer without quotes: `#[reducer({})]`",
                text.value()
            ),
            _ => format!("expected one reducer: {REDUCER_FORMS}"),
        },
        Err(_) => format!("expected one reducer: {REDUCER_FORMS}"),
    };
    syn::Error::new_spanned(&list.tokens, message)
}

fn generate(input: &DeriveInput, options: &Options, fields: &[Field]) -> TokenStream {
    let name = &input.ident;
    let vis = &input.vis;
    let update = options
        .update
        .clone()
        .unwrap_or_else(|| format_ident!("{}Update", name));
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    let private = quote!(::agent_core::__private);
    let serde_path = "::agent_core::__private::serde";
    // Debug is always implemented (below), so a requested `derive(Debug)` is dropped.
    let derives: Vec<&Path> = options
        .derives
        .iter()
        .filter(|p| !p.is_ident("Debug"))
        .collect();
    let update_name = update.to_string();

    let idents: Vec<&Ident> = fields.iter().map(|f| &f.ident).collect();
    let names: Vec<String> = idents.iter().map(|i| i.to_string()).collect();
    let tys: Vec<&syn::Type> = fields.iter().map(|f| &f.ty).collect();
    let indices: Vec<usize> = (0..fields.len()).collect();

    let field_infos = fields.iter().map(|f| {
        let name = f.ident.to_string();
        let (kind, reducer_name) = match &f.reducer {
            Reducer::Replace => (quote!(Replace), "replace".to_owned()),
            Reducer::Builtin(ident) => {
                let kind = match ident.to_string().as_str() {
                    "append" => quote!(Append),
                    "merge" => quote!(Merge),
                    _ => quote!(Add),
                };
                (kind, ident.to_string())
            }
            Reducer::Custom(path) => (
                quote!(Custom),
                path.to_token_stream().to_string().replace(' ', ""),
            ),
        };
        quote! {
            #private::FieldInfo {
                name: #name,
                reducer: #private::ReducerKind::#kind,
                reducer_name: #reducer_name,
            }
        }
    });

    let applies = fields.iter().map(|f| {
        let ident = &f.ident;
        let name = ident.to_string();
        match &f.reducer {
            Reducer::Replace => quote! {
                if let ::core::option::Option::Some(__value) = __update.#ident {
                    self.#ident = __value;
                }
            },
            Reducer::Builtin(reducer) => {
                let reducer_name = reducer.to_string();
                // Every token of the call carries the span of the user's `append` (or merge,
                // add), so a type the reducer cannot handle is reported there, with the
                // reducer trait's message.
                let call = quote_spanned!(reducer.span()=>
                    ::agent_core::__private::reducers::#reducer(&mut self.#ident, __value)
                );
                quote! {
                    if let ::core::option::Option::Some(__value) = __update.#ident {
                        #private::reduce(#call, #name, #reducer_name)?;
                    }
                }
            }
            Reducer::Custom(path) => {
                let reducer_name = path.to_token_stream().to_string().replace(' ', "");
                let call = quote_spanned!(path.span()=> #path(&mut self.#ident, __value));
                quote! {
                    if let ::core::option::Option::Some(__value) = __update.#ident {
                        #private::reduce(#call, #name, #reducer_name)?;
                    }
                }
            }
        }
    });

    // A state without `Default` fails here, once, at the struct's name; `GraphState` needs
    // `StateDefault`, not `Default`, so nothing else that names the state fails with it.
    let default_call = quote_spanned!(name.span()=> <Self as ::core::default::Default>::default());

    let update_doc = format!(
        "Partial update of [`{name}`]: every field optional, only the fields set are written (each through its reducer). Build it with the setters: `{update}::default().field(value)`."
    );
    let field_docs = fields.iter().map(|f| {
        let reducer = match &f.reducer {
            Reducer::Replace => "replace (last value; one write per step)".to_owned(),
            Reducer::Builtin(i) => i.to_string(),
            Reducer::Custom(p) => p.to_token_stream().to_string().replace(' ', ""),
        };
        format!("Write to `{}` (reducer: {reducer}).", f.ident)
    });
    let setter_docs = fields.iter().map(|f| format!("Sets `{}`.", f.ident));
    // Numbers and bools are taken as they are, so literals infer (`.count(1)`); anything else
    // through `Into` (`.name("x")` for a `String`).
    let setter_tys = fields.iter().map(|f| {
        let ty = &f.ty;
        if is_plain_scalar(ty) {
            quote!(#ty)
        } else {
            quote!(impl ::core::convert::Into<#ty>)
        }
    });

    quote! {
        #[doc = #update_doc]
        #[derive(::core::clone::Clone, ::core::default::Default, #private::serde::Serialize, #private::serde::Deserialize #(, #derives)*)]
        #[serde(crate = #serde_path, bound = "")]
        #vis struct #update #impl_generics #where_clause {
            #(
                #[doc = #field_docs]
                #[serde(default, skip_serializing_if = "::core::option::Option::is_none")]
                #vis #idents: ::core::option::Option<#tys>,
            )*
        }

        impl #impl_generics #update #ty_generics #where_clause {
            #(
                #[doc = #setter_docs]
                #[must_use]
                #vis fn #idents(mut self, __value: #setter_tys) -> Self {
                    self.#idents = ::core::option::Option::Some(__value.into());
                    self
                }
            )*
        }

        const _: () = {
            impl #impl_generics ::core::fmt::Debug for #update #ty_generics #where_clause {
                fn fmt(&self, __f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                    #[allow(unused_imports)]
                    use #private::{ViaDebug as _, ViaOpaque as _};
                    let mut __out = __f.debug_struct(#update_name);
                    #(
                        if let ::core::option::Option::Some(__value) = &self.#idents {
                            __out.field(
                                #names,
                                &#private::FmtWith(|__f: &mut ::core::fmt::Formatter<'_>| {
                                    (&&#private::DebugField(__value)).agent_fmt(__f)
                                }),
                            );
                        }
                    )*
                    __out.finish()
                }
            }

            impl #impl_generics #private::StateDefault for #name #ty_generics #where_clause {
                fn default() -> Self {
                    #default_call
                }
            }

            impl #impl_generics #private::GraphState for #name #ty_generics #where_clause {
                type Update = #update #ty_generics;

                fn fields() -> &'static [#private::FieldInfo] {
                    &[#(#field_infos),*]
                }

                fn writes(__update: &Self::Update) -> #private::FieldSet {
                    let mut __set = #private::FieldSet::EMPTY;
                    #(
                        if __update.#idents.is_some() {
                            __set.insert(#indices);
                        }
                    )*
                    __set
                }

                #[allow(clippy::unit_arg)]
                fn apply(&mut self, __update: Self::Update) -> ::core::result::Result<(), #private::ReducerError> {
                    // Fields are moved out one by one (`__update.field`), never destructured
                    // by name: a pattern `field` would mean a unit struct of that name, such
                    // as the one `#[node] async fn field(..)` defines.
                    #(#applies)*
                    ::core::result::Result::Ok(())
                }

                fn into_update(self) -> Self::Update {
                    #update {
                        #(#idents: ::core::option::Option::Some(self.#idents)),*
                    }
                }

                fn serialize_field<__S: #private::serde::Serializer>(
                    &self,
                    __index: usize,
                    __serializer: __S,
                ) -> ::core::result::Result<__S::Ok, __S::Error> {
                    match __index {
                        #(#indices => #private::serde::Serialize::serialize(&self.#idents, __serializer),)*
                        _ => ::core::result::Result::Err(#private::no_such_field(__index)),
                    }
                }

                fn deserialize_field<'__de, __D: #private::serde::Deserializer<'__de>>(
                    &mut self,
                    __index: usize,
                    __deserializer: __D,
                ) -> ::core::result::Result<(), __D::Error> {
                    match __index {
                        #(#indices => {
                            self.#idents = <#tys as #private::serde::Deserialize>::deserialize(__deserializer)?;
                            ::core::result::Result::Ok(())
                        })*
                        _ => ::core::result::Result::Err(#private::no_such_field_de(__index)),
                    }
                }
            }

            impl #impl_generics ::core::convert::From<#name #ty_generics> for #update #ty_generics #where_clause {
                fn from(__state: #name #ty_generics) -> Self {
                    #private::GraphState::into_update(__state)
                }
            }

            impl #impl_generics ::core::convert::From<#update #ty_generics> for #private::Input<#name #ty_generics> #where_clause {
                fn from(__update: #update #ty_generics) -> Self {
                    #private::Input::Update(__update)
                }
            }

            impl #impl_generics ::core::convert::From<#name #ty_generics> for #private::Input<#name #ty_generics> #where_clause {
                fn from(__state: #name #ty_generics) -> Self {
                    #private::Input::Update(#private::GraphState::into_update(__state))
                }
            }

            impl #impl_generics #private::IntoNodeOutput<#name #ty_generics> for #update #ty_generics #where_clause {
                fn into_node_output(self) -> ::core::result::Result<#private::NodeOutput<#name #ty_generics>, #private::NodeError> {
                    ::core::result::Result::Ok(#private::NodeOutput::Update(self))
                }
            }
        };
    }
}

fn is_plain_scalar(ty: &syn::Type) -> bool {
    const SCALARS: [&str; 15] = [
        "u8", "u16", "u32", "u64", "u128", "usize", "i8", "i16", "i32", "i64", "i128", "isize",
        "f32", "f64", "bool",
    ];
    match ty {
        syn::Type::Path(p) if p.qself.is_none() => p
            .path
            .get_ident()
            .is_some_and(|i| SCALARS.contains(&i.to_string().as_str())),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expand_str(src: &str) -> String {
        let input: DeriveInput = syn::parse_str(src).expect("parse");
        match expand(&input) {
            Ok(tokens) => tokens.to_string(),
            Err(error) => format!("error: {error}"),
        }
    }

    #[test]
    fn suggests_builtin_for_typo() {
        let out = expand_str("struct S { #[reducer(appnd)] a: Vec<u8> }");
        assert!(out.contains("did you mean `append`"), "{out}");
    }

    #[test]
    fn each_malformed_reducer_gets_its_own_fix() {
        for (attr, fix) in [
            (
                "#[reducer]",
                "`#[reducer]` needs the reducer in parentheses",
            ),
            (
                "#[reducer = \"append\"]",
                "write the reducer in parentheses: `#[reducer(append)]`",
            ),
            (
                "#[reducer = crate::keep]",
                "write the reducer in parentheses: `#[reducer(crate::keep)]`",
            ),
            (
                "#[reducer(append, merge)]",
                "a field takes one reducer, not 2: keep one of `append`, `merge`",
            ),
            (
                "#[reducer(\"append\")]",
                "write the reducer without quotes: `#[reducer(append)]`",
            ),
            (
                "#[reducer(1 + 2)]",
                "expected one reducer: `#[reducer(append)]`",
            ),
        ] {
            let out = expand_str(&format!("struct S {{ {attr} a: Vec<u8> }}"));
            assert!(out.contains("compile_error"), "{attr}: {out}");
            assert!(out.contains(fix), "{attr}: {out}");
        }
    }

    #[test]
    fn custom_reducer_path_is_kept() {
        let out = expand_str("struct S { #[reducer(my::keep_max)] a: u8 }");
        assert!(out.contains("my :: keep_max"), "{out}");
    }
}
