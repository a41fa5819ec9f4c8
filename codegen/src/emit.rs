//! The back end: one revision model in, one formatted Rust module out — typify's types, the
//! method table, a marker type per method, and per direction the method-dispatched request,
//! notification and result enums that replace upstream's shape-matched unions.

use std::collections::{BTreeMap, BTreeSet};

use heck::{ToPascalCase, ToShoutySnakeCase};
use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote};

use crate::error::{CodegenError, Result};
use crate::model::{Direction, MethodKind, MethodRow, RevisionModel};
use crate::tag_dispatch::{TagDispatch, discriminators, dispatch_on_tags};
use crate::types_emit::{TypesRequest, redocument, rust_type_name, typify_definitions};

/// How a protocol names its two peers in the generated enums.
#[derive(Debug, Clone, Copy)]
pub struct Sides {
    pub client: &'static str,
    pub server: &'static str,
}

/// The peer names of each protocol: MCP has a server, ACP and A2A an agent.
pub fn sides(protocol: &str) -> Sides {
    match protocol {
        "mcp" => Sides {
            client: "Client",
            server: "Server",
        },
        _ => Sides {
            client: "Client",
            server: "Agent",
        },
    }
}

/// Upstream union definitions replaced by a generated enum, mapped to that enum.
fn replaced_unions(model: &RevisionModel, sides: Sides) -> BTreeMap<String, String> {
    let mut replaced = BTreeMap::new();
    for side in [sides.client, sides.server] {
        for kind in ["Request", "Notification", "Result"] {
            replaced.insert(format!("{side}{kind}"), format!("{side}{kind}"));
        }
        replaced.insert(format!("{side}Response"), format!("{side}Result"));
    }
    replaced.insert("A2ARequest".into(), format!("{}Request", sides.client));
    replaced.retain(|definition, _| model.definitions.contains_key(definition));
    replaced
}

/// A formatted module plus its counts, for the per-revision line.
#[derive(Debug, Clone)]
pub struct EmittedRevision {
    pub source: String,
    pub definitions: usize,
    pub methods: usize,
    /// Upstream unions replaced by generated enums.
    pub replaced: Vec<String>,
    /// Untagged enums decoded by their tag instead (`tag_dispatch`).
    pub tag_dispatched: Vec<TagDispatch>,
}

/// Renders one revision module.
pub fn emit_revision(model: &RevisionModel) -> Result<EmittedRevision> {
    let sides = sides(&model.protocol);
    let main_file = model
        .sources
        .first()
        .map(|s| s.path.clone())
        .unwrap_or_default();
    let replaced = replaced_unions(model, sides);
    let mut replacements: BTreeMap<String, String> = replaced
        .iter()
        .map(|(definition, ty)| (definition.clone(), format!("super::{ty}")))
        .collect();
    for name in model.custom_types.keys() {
        replacements.insert(name.clone(), rust_type_name(name));
    }
    let types = typify_definitions(&TypesRequest {
        definitions: &model.definitions,
        replacements: &replacements,
    })
    .map_err(|failure| {
        let pointer = failure
            .definition
            .map(|d| format!("/definitions/{d}"))
            .unwrap_or_default();
        CodegenError::schema(&main_file, &pointer, failure.message)
    })?;
    let (types, tag_dispatched) = documented_types(model, types, &main_file)?;
    let custom = custom_items(model, &main_file)?;
    let reexports: Vec<Ident> = replaced
        .values()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .map(|ty| format_ident!("{}", ty))
        .collect();
    let aliases: Vec<TokenStream> = replaced
        .iter()
        .filter(|(definition, ty)| definition != ty)
        .map(|(definition, ty)| {
            let alias = format_ident!("{}", rust_type_name(definition));
            let ty = format_ident!("{}", ty);
            let doc = format!(
                "`{definition}` of {}: answered by the method-dispatched [`{ty}`].",
                revision_label(model)
            );
            quote! { #[doc = #doc] pub type #alias = super::#ty; }
        })
        .collect();
    let methods_mod = methods_module(model)?;
    let table = method_table(model);
    let enums = direction_enums(model, sides)?;
    let service = crate::service::emit_service(model, sides)?;
    let module_doc = format!(
        " {} revision `{}`: every definition of `{}` as a Rust type, the method table, and \
         method-dispatched enums per direction.",
        model.protocol.to_uppercase(),
        model.revision,
        main_file
    );
    let revision = &model.revision;
    let tokens = quote! {
        #![doc = #module_doc]
        /// The revision string this module was generated from.
        pub const REVISION: &str = #revision;
        /// Types of every schema definition (typify output after codegen's normalization pass).
        /// typify compiles each schema `pattern` into a lazily built regex with `unwrap`.
        #[allow(
            clippy::all,
            clippy::pedantic,
            clippy::unwrap_used,
            clippy::expect_used,
            clippy::panic,
            unused_imports,
            dead_code,
            irrefutable_let_patterns
        )]
        pub mod types {
            #types
            #(#custom)*
            pub use super::{#(#reexports),*};
            #(#aliases)*
        }
        #methods_mod
        #table
        #enums
        #service
    };
    let file: syn::File = syn::parse2(tokens).map_err(|e| {
        CodegenError::schema(
            &main_file,
            "",
            format!("generated code does not parse: {e}",),
        )
    })?;
    let body = prettyplease::unparse(&file);
    Ok(EmittedRevision {
        source: format!("{}{body}", header(model)),
        definitions: model.definitions.len(),
        methods: model.methods.len(),
        replaced: replaced.keys().cloned().collect(),
        tag_dispatched,
    })
}

fn revision_label(model: &RevisionModel) -> String {
    format!("{} {}", model.protocol.to_uppercase(), model.revision)
}

/// The `@generated` header naming every source file and its digest.
pub fn header(model: &RevisionModel) -> String {
    let mut out = String::from("// @generated by `cargo run -p codegen`; do not edit.\n");
    for source in &model.sources {
        out.push_str(&format!(
            "// source: schema/cache/{} sha256 {}\n",
            source.path, source.sha256
        ));
    }
    out.push('\n');
    out
}

/// typify's output with codegen's docs, and unions with a shared tag decoded by that tag.
fn documented_types(
    model: &RevisionModel,
    tokens: TokenStream,
    file: &str,
) -> Result<(TokenStream, Vec<TagDispatch>)> {
    let mut parsed: syn::File = syn::parse2(tokens).map_err(|e| {
        CodegenError::schema(file, "", format!("typify output does not parse: {e}"))
    })?;
    let by_rust_name: BTreeMap<String, String> = model
        .definitions
        .keys()
        .map(|name| (rust_type_name(name), name.clone()))
        .collect();
    let label = revision_label(model);
    redocument(&mut parsed, &|ident| {
        let definition = by_rust_name.get(ident)?;
        Some(format!(" Definition `{definition}` of {label} (`{file}`)."))
    });
    let tag_dispatched = dispatch_on_tags(&mut parsed, &discriminators(&model.definitions));
    Ok((quote! { #parsed }, tag_dispatched))
}

fn custom_items(model: &RevisionModel, file: &str) -> Result<Vec<TokenStream>> {
    model
        .custom_types
        .iter()
        .map(|(name, source)| {
            source.parse::<TokenStream>().map_err(|e| {
                CodegenError::schema(
                    file,
                    &format!("/definitions/{name}"),
                    format!("custom type: {e}"),
                )
            })
        })
        .collect()
}

/// The identifier a method's marker type and enum variants use (`tools/call` → `ToolsCall`).
pub fn method_ident(method: &str) -> Ident {
    let words: String = method
        .chars()
        .map(|c| if c.is_alphanumeric() { c } else { ' ' })
        .collect();
    format_ident!("{}", words.to_pascal_case())
}

/// The constant naming a method (`tools/call` → `TOOLS_CALL`).
pub fn method_const(method: &str) -> Ident {
    let words: String = method
        .chars()
        .map(|c| if c.is_alphanumeric() { c } else { ' ' })
        .collect();
    format_ident!("{}", words.to_shouty_snake_case())
}

fn type_path(definition: &str) -> TokenStream {
    let ident = format_ident!("{}", rust_type_name(definition));
    quote! { types::#ident }
}

/// The params type of a method as the enums and markers hold it.
fn params_type(row: &MethodRow) -> Option<TokenStream> {
    let ty = type_path(row.params_type.as_deref()?);
    Some(if row.params_optional {
        quote! { ::std::option::Option<#ty> }
    } else {
        ty
    })
}

fn methods_module(model: &RevisionModel) -> Result<TokenStream> {
    let mut seen = BTreeSet::new();
    let mut items = Vec::new();
    for row in &model.methods {
        let ident = method_ident(&row.name);
        if !seen.insert((ident.to_string(), row.kind)) {
            continue;
        }
        let konst = method_const(&row.name);
        let name = &row.name;
        let doc = format!(" `{name}` ({})", revision_label(model));
        let params = params_type(row).unwrap_or_else(|| quote! { () });
        let marker = match row.kind {
            MethodKind::Request => {
                let result = row
                    .result_type
                    .as_deref()
                    .map(type_path)
                    .unwrap_or_else(|| quote! { () });
                quote! {
                    impl ::protocols_runtime::method::RpcMethod for #ident {
                        const NAME: &'static str = #konst;
                        type Params = #params;
                        type Result = #result;
                    }
                }
            }
            MethodKind::Notification => quote! {
                impl ::protocols_runtime::method::RpcNotification for #ident {
                    const NAME: &'static str = #konst;
                    type Params = #params;
                }
            },
        };
        items.push(quote! {
            #[doc = #doc]
            pub const #konst: &str = #name;
            #[doc = #doc]
            #[derive(Debug, Clone, Copy, PartialEq, Eq)]
            pub struct #ident;
            #marker
        });
    }
    Ok(quote! {
        /// Wire names of every method, and a marker type per method carrying its params and
        /// result types.
        pub mod methods {
            use super::types;
            #(#items)*
        }
    })
}

fn direction_tokens(direction: Direction) -> TokenStream {
    match direction {
        Direction::ClientToServer => quote! { ClientToServer },
        Direction::ServerToClient => quote! { ServerToClient },
        Direction::Both => quote! { Both },
    }
}

fn method_table(model: &RevisionModel) -> TokenStream {
    let rows = model.methods.iter().map(|row| {
        let name = &row.name;
        let direction = direction_tokens(row.direction);
        let kind = match row.kind {
            MethodKind::Request => quote! { Request },
            MethodKind::Notification => quote! { Notification },
        };
        let path_of = |ty: &Option<String>| match ty {
            Some(ty) => {
                let path = format!("types::{}", rust_type_name(ty));
                quote! { Some(#path) }
            }
            None => quote! { None },
        };
        let params = path_of(&row.params_type);
        let result = path_of(&row.result_type);
        let optional = row.params_optional;
        let streaming = row.streaming;
        let http = row.http.iter().map(|route| {
            let (verb, path, body) = (&route.verb, &route.path, &route.body);
            quote! { ::protocols_runtime::method::HttpRoute { verb: #verb, path: #path, body: #body } }
        });
        quote! {
            ::protocols_runtime::method::MethodSpec {
                name: #name,
                direction: ::protocols_runtime::method::Direction::#direction,
                kind: ::protocols_runtime::method::MethodKind::#kind,
                params_type: #params,
                params_optional: #optional,
                result_type: #result,
                streaming: #streaming,
                http: &[#(#http),*],
            }
        }
    });
    quote! {
        /// The method table: one row per wire method, derived from the source.
        pub static METHODS: &[::protocols_runtime::method::MethodSpec] = &[#(#rows),*];
    }
}

/// Which helpers the dispatch code calls, so none is emitted unused.
#[derive(Debug, Default)]
struct HelperUse {
    required: bool,
    optional: bool,
    result: bool,
}

fn direction_enums(model: &RevisionModel, sides: Sides) -> Result<TokenStream> {
    let mut helpers = HelperUse::default();
    let mut out = Vec::new();
    for (side, other_sends) in [
        (sides.client, Direction::ServerToClient),
        (sides.server, Direction::ClientToServer),
    ] {
        let sent_by_side =
            |row: &&MethodRow| row.direction == Direction::Both || row.direction != other_sends;
        let sent_by_other =
            |row: &&MethodRow| row.direction == Direction::Both || row.direction == other_sends;
        let requests: Vec<&MethodRow> = model
            .methods
            .iter()
            .filter(|r| r.kind == MethodKind::Request)
            .filter(sent_by_side)
            .collect();
        let notifications: Vec<&MethodRow> = model
            .methods
            .iter()
            .filter(|r| r.kind == MethodKind::Notification)
            .filter(sent_by_side)
            .collect();
        let answered: Vec<&MethodRow> = model
            .methods
            .iter()
            .filter(|r| r.kind == MethodKind::Request)
            .filter(sent_by_other)
            .collect();
        let label = revision_label(model);
        out.push(message_enum(
            &format!("{side}Request"),
            &format!(
                "Requests the {} sends ({label}), dispatched by method name.",
                side.to_lowercase()
            ),
            &requests,
            &mut helpers,
        ));
        out.push(message_enum(
            &format!("{side}Notification"),
            &format!(
                "Notifications the {} sends ({label}), dispatched by method name.",
                side.to_lowercase()
            ),
            &notifications,
            &mut helpers,
        ));
        out.push(result_enum(
            &format!("{side}Result"),
            &format!(
                "Results the {} sends ({label}), decoded by the method they answer.",
                side.to_lowercase()
            ),
            &answered,
            &mut helpers,
        ));
    }
    let helper_fns = helper_functions(&helpers);
    Ok(quote! {
        #(#out)*
        #helper_fns
    })
}

fn message_enum(
    name: &str,
    doc: &str,
    rows: &[&MethodRow],
    helpers: &mut HelperUse,
) -> TokenStream {
    let ident = format_ident!("{}", name);
    let doc = format!(" {doc}");
    let mut variants = Vec::new();
    let mut decode_arms = Vec::new();
    let mut method_arms = Vec::new();
    let mut params_arms = Vec::new();
    for row in rows {
        let variant = method_ident(&row.name);
        let konst = method_const(&row.name);
        let method_doc = format!(" `{}`", row.name);
        match params_type(row) {
            Some(ty) => {
                variants.push(quote! { #[doc = #method_doc] #variant(#ty) });
                let helper = if row.params_optional {
                    helpers.optional = true;
                    quote! { optional_params }
                } else {
                    helpers.required = true;
                    quote! { required_params }
                };
                decode_arms.push(quote! { methods::#konst => #helper(methods::#konst, params).map(Self::#variant) });
                method_arms.push(quote! { Self::#variant(_) => methods::#konst });
                params_arms.push(if row.params_optional {
                    quote! { Self::#variant(params) => params.as_ref().map(::serde_json::to_value).transpose() }
                } else {
                    quote! { Self::#variant(params) => ::serde_json::to_value(params).map(Some) }
                });
            }
            None => {
                variants.push(quote! { #[doc = #method_doc] #variant });
                decode_arms.push(quote! { methods::#konst => Ok(Self::#variant) });
                method_arms.push(quote! { Self::#variant => methods::#konst });
                params_arms.push(quote! { Self::#variant => Ok(None) });
            }
        }
    }
    let (decode_body, method_body, params_body) = if rows.is_empty() {
        (
            quote! { let _ = (method, params); Err(::protocols_runtime::method::DispatchError::UnknownMethod) },
            quote! { match *self {} },
            quote! { match *self {} },
        )
    } else {
        (
            quote! { match method { #(#decode_arms,)* _ => Err(::protocols_runtime::method::DispatchError::UnknownMethod) } },
            quote! { match self { #(#method_arms,)* } },
            quote! { match self { #(#params_arms,)* } },
        )
    };
    quote! {
        #[doc = #doc]
        #[derive(Debug, Clone)]
        #[allow(clippy::large_enum_variant)] // a decoded message is moved once, to its handler
        pub enum #ident { #(#variants,)* }

        impl #ident {
            /// Decodes `params` as the params type of `method`; an unknown method and params
            /// that do not fit are distinct errors (-32601, -32602).
            pub fn from_method(method: &str, params: ::std::option::Option<::serde_json::Value>) -> ::std::result::Result<Self, ::protocols_runtime::method::DispatchError> {
                #decode_body
            }

            /// The wire name of this message's method.
            pub fn method(&self) -> &'static str {
                #method_body
            }

            /// The params as JSON, `None` when the message carries none.
            pub fn params(&self) -> ::std::result::Result<::std::option::Option<::serde_json::Value>, ::serde_json::Error> {
                #params_body
            }
        }

        impl ::serde::Serialize for #ident {
            fn serialize<S: ::serde::Serializer>(&self, serializer: S) -> ::std::result::Result<S::Ok, S::Error> {
                use ::serde::ser::{Error as _, SerializeMap as _};
                let params = self.params().map_err(S::Error::custom)?;
                let mut map = serializer.serialize_map(None)?;
                map.serialize_entry("method", self.method())?;
                if let Some(params) = params {
                    map.serialize_entry("params", &params)?;
                }
                map.end()
            }
        }

        impl<'de> ::serde::Deserialize<'de> for #ident {
            fn deserialize<D: ::serde::Deserializer<'de>>(deserializer: D) -> ::std::result::Result<Self, D::Error> {
                let envelope = MethodEnvelope::deserialize(deserializer)?;
                Self::from_method(&envelope.method, envelope.params).map_err(::serde::de::Error::custom)
            }
        }
    }
}

fn result_enum(name: &str, doc: &str, rows: &[&MethodRow], helpers: &mut HelperUse) -> TokenStream {
    let ident = format_ident!("{}", name);
    let doc = format!(" {doc}");
    let mut variants = Vec::new();
    let mut decode_arms = Vec::new();
    let mut method_arms = Vec::new();
    let mut serialize_arms = Vec::new();
    for row in rows {
        let variant = method_ident(&row.name);
        let konst = method_const(&row.name);
        let method_doc = format!(" Result of `{}`", row.name);
        let ty = row
            .result_type
            .as_deref()
            .map(type_path)
            .unwrap_or_else(|| quote! { ::serde_json::Value });
        helpers.result = true;
        variants.push(quote! { #[doc = #method_doc] #variant(#ty) });
        decode_arms.push(quote! { methods::#konst => decode_result_as(methods::#konst, result).map(Self::#variant) });
        method_arms.push(quote! { Self::#variant(_) => methods::#konst });
        serialize_arms.push(quote! { Self::#variant(result) => result.serialize(serializer) });
    }
    let (decode_body, method_body, serialize_body) = if rows.is_empty() {
        (
            quote! { let _ = (method, result); Err(::protocols_runtime::method::DispatchError::UnknownMethod) },
            quote! { match *self {} },
            quote! { let _ = serializer; match *self {} },
        )
    } else {
        (
            quote! { match method { #(#decode_arms,)* _ => Err(::protocols_runtime::method::DispatchError::UnknownMethod) } },
            quote! { match self { #(#method_arms,)* } },
            quote! { match self { #(#serialize_arms,)* } },
        )
    };
    quote! {
        #[doc = #doc]
        #[derive(Debug, Clone)]
        #[allow(clippy::large_enum_variant)] // a decoded result is moved once, to its caller
        pub enum #ident { #(#variants,)* }

        impl #ident {
            /// Decodes `result` as the result type of the request `method` it answers.
            pub fn decode_result(method: &str, result: ::serde_json::Value) -> ::std::result::Result<Self, ::protocols_runtime::method::DispatchError> {
                #decode_body
            }

            /// The method whose result this is.
            pub fn method(&self) -> &'static str {
                #method_body
            }
        }

        impl ::serde::Serialize for #ident {
            fn serialize<S: ::serde::Serializer>(&self, serializer: S) -> ::std::result::Result<S::Ok, S::Error> {
                #serialize_body
            }
        }
    }
}

fn helper_functions(helpers: &HelperUse) -> TokenStream {
    let required = helpers.required.then(|| quote! {
        fn required_params<T: ::serde::de::DeserializeOwned>(method: &'static str, params: ::std::option::Option<::serde_json::Value>) -> ::std::result::Result<T, ::protocols_runtime::method::DispatchError> {
            ::serde_json::from_value(params.unwrap_or(::serde_json::Value::Null))
                .map_err(|source| ::protocols_runtime::method::DispatchError::InvalidParams { method, source })
        }
    });
    let optional = helpers.optional.then(|| quote! {
        fn optional_params<T: ::serde::de::DeserializeOwned>(method: &'static str, params: ::std::option::Option<::serde_json::Value>) -> ::std::result::Result<::std::option::Option<T>, ::protocols_runtime::method::DispatchError> {
            match params {
                None | Some(::serde_json::Value::Null) => Ok(None),
                Some(params) => ::serde_json::from_value(params)
                    .map(Some)
                    .map_err(|source| ::protocols_runtime::method::DispatchError::InvalidParams { method, source }),
            }
        }
    });
    let result = helpers.result.then(|| quote! {
        fn decode_result_as<T: ::serde::de::DeserializeOwned>(method: &'static str, result: ::serde_json::Value) -> ::std::result::Result<T, ::protocols_runtime::method::DispatchError> {
            ::serde_json::from_value(result)
                .map_err(|source| ::protocols_runtime::method::DispatchError::InvalidParams { method, source })
        }
    });
    quote! {
        /// The `{"method", "params"}` part of a message, before dispatch.
        #[derive(::serde::Deserialize)]
        struct MethodEnvelope {
            method: ::std::string::String,
            #[serde(default)]
            params: ::std::option::Option<::serde_json::Value>,
        }
        #required
        #optional
        #result
    }
}

/// Test support for a revision with pinned example messages: a function that round-trips a JSON
/// value through the type a definition name denotes, so the example test can follow the folder
/// names instead of a hand-written list.
pub fn emit_definition_table(model: &RevisionModel) -> Result<String> {
    let sides = sides(&model.protocol);
    let replaced = replaced_unions(model, sides);
    let module = format_ident!("{}", model.module);
    let crate_name = format_ident!("protocols_{}", model.protocol);
    let arms = model
        .definitions
        .keys()
        .filter(|name| !replaced.contains_key(*name) && !model.custom_types.contains_key(*name))
        .map(|name| {
            let ty = format_ident!("{}", rust_type_name(name));
            quote! { #name => Some(round_trip_as::<types::#ty>(value)) }
        });
    let doc = format!(
        " Round-trips `value` through the `{}` type named `definition`; `None` for an unknown name.",
        model.revision
    );
    let tokens = quote! {
        use #crate_name::generated::#module::types;

        #[doc = #doc]
        pub fn round_trip(definition: &str, value: ::serde_json::Value) -> ::std::option::Option<::std::result::Result<::serde_json::Value, ::serde_json::Error>> {
            match definition {
                #(#arms,)*
                _ => None,
            }
        }

        fn round_trip_as<T: ::serde::Serialize + ::serde::de::DeserializeOwned>(value: ::serde_json::Value) -> ::std::result::Result<::serde_json::Value, ::serde_json::Error> {
            let typed: T = ::serde_json::from_value(value)?;
            ::serde_json::to_value(&typed)
        }
    };
    let file: syn::File = syn::parse2(tokens).map_err(|e| {
        CodegenError::schema("", "", format!("definition table does not parse: {e}"))
    })?;
    Ok(format!("{}{}", header(model), prettyplease::unparse(&file)))
}
