//! The back end: one revision model in, one formatted Rust module out — typify's types (each
//! documented by a link to its definition upstream), the method table, a marker type per method,
//! the handler traits, dispatchers and clients (`service`), and the method-dispatched enums of the
//! peers the front end asks for. Every Rust type a method names comes from typify's names
//! ([`TypeNames`]); the model carries definition keys only.

use std::collections::{BTreeMap, BTreeSet};

use heck::{ToPascalCase, ToShoutySnakeCase, ToSnakeCase};
use proc_macro2::{Ident, TokenStream};
use quote::quote;

use crate::error::{CodegenError, Result};
use crate::model::{Direction, MethodKind, MethodRow, Peer, RevisionModel, UnionKind};
use crate::schema_doc::referenced_names;
use crate::tag_dispatch::{TagDispatch, discriminators, dispatch_on_tags};
use crate::types_emit::{
    Stands, TypeNames, TypesRequest, add_field_aliases, redocument, typify_definitions,
};

/// A formatted module plus its counts, for the per-revision line.
#[derive(Debug, Clone)]
pub struct EmittedRevision {
    pub source: String,
    pub definitions: usize,
    pub methods: usize,
    /// Upstream unions of messages the method table replaces.
    pub replaced: Vec<String>,
    /// Untagged enums decoded by their tag instead (`tag_dispatch`).
    pub tag_dispatched: Vec<TagDispatch>,
}

/// A method-table row with the Rust names and types every emitter uses.
#[derive(Debug, Clone)]
pub struct TypedRow<'a> {
    pub row: &'a MethodRow,
    /// typify's identifier of the params type, if the method has params.
    pub params: Option<Ident>,
    /// typify's identifier of the result type, for requests.
    pub result: Option<Ident>,
    /// `TOOLS_CALL`.
    pub konst: Ident,
    /// `ToolsCall`.
    pub marker: Ident,
    /// `tools_call`.
    pub handler: Ident,
}

impl TypedRow<'_> {
    /// The params type as the revision module names it (`types::X`).
    pub fn params_type(&self) -> Option<TokenStream> {
        self.params.as_ref().map(|ident| quote! { types::#ident })
    }

    /// The params as a handler receives them: `Option<T>` when they may be omitted.
    pub fn params_arg_type(&self) -> Option<TokenStream> {
        let ty = self.params_type()?;
        Some(if self.row.params_optional {
            quote! { ::std::option::Option<#ty> }
        } else {
            ty
        })
    }

    /// The result type, `serde_json::Value` when the row names none.
    pub fn result_type(&self) -> TokenStream {
        match &self.result {
            Some(ident) => quote! { types::#ident },
            None => quote! { ::serde_json::Value },
        }
    }
}

/// Everything the emitters of one revision share.
#[derive(Debug)]
pub struct Revision<'a> {
    pub model: &'a RevisionModel,
    pub names: TypeNames,
    pub rows: Vec<TypedRow<'a>>,
    /// `MCP 2025-06-18`.
    pub label: String,
}

impl<'a> Revision<'a> {
    /// Resolves every row's types through typify's names.
    pub fn new(model: &'a RevisionModel, names: TypeNames) -> Result<Self> {
        let label = revision_label(model);
        let rows = model
            .methods
            .iter()
            .map(|row| typed_row(model, &names, row))
            .collect::<Result<Vec<_>>>()?;
        Ok(Self {
            model,
            names,
            rows,
            label,
        })
    }

    /// The rows some binding serves: only these get markers, handler methods and client calls.
    pub fn bound_rows(&self) -> impl Iterator<Item = &TypedRow<'a>> {
        self.rows.iter().filter(|rpc| rpc.row.is_bound())
    }
}

fn typed_row<'a>(
    model: &RevisionModel,
    names: &TypeNames,
    row: &'a MethodRow,
) -> Result<TypedRow<'a>> {
    let resolve = |definition: &Option<String>| -> Result<Option<Ident>> {
        let Some(definition) = definition else {
            return Ok(None);
        };
        let ident = names
            .ident(definition)
            .ok_or_else(|| CodegenError::Definition {
                at: model.origins.locate(definition),
                message: format!(
                    "method `{}` names a definition typify has no type for",
                    row.name
                ),
            })?;
        Ok(Some(ident.clone()))
    };
    let params = resolve(&row.params)?;
    let result = resolve(&row.result)?;
    let words = method_words(&row.name);
    let failed = |what: &str, name: String| CodegenError::Revision {
        protocol: model.protocol.clone(),
        revision: model.revision.clone(),
        message: format!("method `{}` gives no Rust {what} (`{name}`)", row.name),
    };
    let ident =
        |what: &str, name: String| syn::parse_str::<Ident>(&name).map_err(|_| failed(what, name));
    Ok(TypedRow {
        row,
        params,
        result,
        konst: ident("constant", words.to_shouty_snake_case())?,
        marker: ident("marker type", words.to_pascal_case())?,
        handler: ident("handler method", words.to_snake_case())?,
    })
}

/// A method name as words (`tools/call` → `tools call`, `$/cancel_request` → `cancel request`),
/// from which its constant, marker and handler method are cased.
fn method_words(method: &str) -> String {
    method
        .chars()
        .map(|c| if c.is_alphanumeric() { c } else { ' ' })
        .collect()
}

/// The constant naming a method (`tools/call` → `TOOLS_CALL`).
pub fn method_const_name(method: &str) -> String {
    method_words(method).to_shouty_snake_case()
}

/// The handler method name of a wire method (`tools/call` → `tools_call`,
/// `session/request_permission` → `session_request_permission`, `SendMessage` → `send_message`).
pub fn handler_method_name(method: &str) -> String {
    method_words(method).to_snake_case()
}

/// What a peer's method-dispatched enums are emitted for, which decides what they carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum EnumUse {
    /// The front end asks for them to re-express what the peer sends: each is decoded by method
    /// name and its params or result encoded again, and nothing else is emitted for it.
    Reexpress,
    /// A definition refers to the peer's upstream union, so they are types in their own right
    /// and read and write whole messages (`{"method", "params"}`) too.
    Type,
}

/// The peers whose method-dispatched enums are emitted, with what for: those the front end
/// asks for, and those whose upstream union another definition refers to (it must then be a
/// type).
fn dispatched_peers(model: &RevisionModel) -> BTreeMap<Peer, EnumUse> {
    let unions: BTreeSet<&str> = model
        .message_unions
        .iter()
        .map(|union| union.definition.as_str())
        .collect();
    let referenced: BTreeSet<String> = model
        .definitions
        .iter()
        .filter(|(name, _)| !unions.contains(name.as_str()))
        .flat_map(|(_, schema)| referenced_names(schema))
        .collect();
    let mut peers: BTreeMap<Peer, EnumUse> = model
        .dispatched_enums
        .iter()
        .map(|peer| (*peer, EnumUse::Reexpress))
        .collect();
    for union in &model.message_unions {
        if referenced.contains(&union.definition) {
            peers.insert(union.sender, EnumUse::Type);
        }
    }
    peers
}

/// The name of a peer's dispatched enum of one kind (`ServerRequest`, `AgentResult`).
fn enum_name(model: &RevisionModel, peer: Peer, kind: UnionKind) -> String {
    let suffix = match kind {
        UnionKind::Request => "Request",
        UnionKind::Notification => "Notification",
        UnionKind::Result => "Result",
    };
    format!("{}{suffix}", model.peers.name(peer))
}

/// Renders one revision module.
pub fn emit_revision(model: &RevisionModel) -> Result<EmittedRevision> {
    let peers = dispatched_peers(model);
    let mut replacements: BTreeMap<String, TokenStream> = BTreeMap::new();
    let mut dropped = BTreeSet::new();
    for union in &model.message_unions {
        if peers.contains_key(&union.sender) {
            let ident = checked_ident(model, &enum_name(model, union.sender, union.kind))?;
            replacements.insert(union.definition.clone(), quote! { super::#ident });
        } else {
            dropped.insert(union.definition.clone());
        }
    }
    let definitions: BTreeMap<String, serde_json::Value> = model
        .definitions
        .iter()
        .filter(|(name, _)| !dropped.contains(*name))
        .map(|(name, schema)| (name.clone(), schema.clone()))
        .collect();
    let names = type_names(model, &definitions)?;
    for name in model.custom_types.keys() {
        if let Some(ident) = names.ident(name) {
            replacements.insert(name.clone(), quote! { #ident });
        }
    }
    let types = typify_definitions(&TypesRequest {
        definitions: &definitions,
        replacements: &replacements,
        names: &names,
    })
    .map_err(|failure| CodegenError::Definition {
        at: failure
            .definition
            .as_deref()
            .map_or_else(|| model.origins.file.clone(), |d| model.origins.locate(d)),
        message: format!(
            "typify 0.8 cannot generate this definition: {}",
            failure.reason
        ),
    })?;
    let (types, tag_dispatched) = documented_types(model, &definitions, &names, types)?;
    let revision = Revision::new(model, names)?;
    // A replaced union's definition name stays a type in `types`: the dispatched enum.
    let reexports: Vec<Ident> = model
        .message_unions
        .iter()
        .filter(|union| peers.contains_key(&union.sender))
        .map(|union| checked_ident(model, &enum_name(model, union.sender, union.kind)))
        .collect::<Result<BTreeSet<_>>>()?
        .into_iter()
        .collect();
    let reexports = (!reexports.is_empty()).then(|| quote! { pub use super::{#(#reexports),*}; });
    let methods_mod = methods_module(&revision);
    let table = method_table(&revision);
    let enums = dispatched_enums(&revision, &peers)?;
    let service = crate::service::emit_service(&revision)?;
    let file_link = match &model.origins.browse_url {
        Some(url) => format!("[`{}`]({url})", model.origins.file),
        None => format!("`{}`", model.origins.file),
    };
    let module_doc = format!(
        " {} revision `{}`: every definition of {file_link} as a Rust type, the method table, \
         and the handler traits, dispatchers and clients of each peer.",
        model.protocol.to_uppercase(),
        model.revision,
    );
    let revision_text = &model.revision;
    let tokens = quote! {
        #![doc = #module_doc]
        /// The revision string this module was generated from.
        pub const REVISION: &str = #revision_text;
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
            #reexports
        }
        #methods_mod
        #table
        #enums
        #service
    };
    let file: syn::File = syn::parse2(tokens).map_err(|e| CodegenError::Definition {
        at: model.origins.file.clone(),
        message: format!("generated code does not parse: {e}"),
    })?;
    let body = prettyplease::unparse(&file);
    Ok(EmittedRevision {
        source: format!("{}{body}", header(model)),
        definitions: model.definitions.len(),
        methods: model.methods.len(),
        replaced: model
            .message_unions
            .iter()
            .map(|union| union.definition.clone())
            .collect(),
        tag_dispatched,
    })
}

/// typify's names for `definitions`, refusing two definitions typify would give one name (it
/// would silently keep only one of the types).
pub fn type_names(
    model: &RevisionModel,
    definitions: &BTreeMap<String, serde_json::Value>,
) -> Result<TypeNames> {
    let names = TypeNames::of(definitions.keys().map(String::as_str)).map_err(|message| {
        CodegenError::Definition {
            at: model.origins.file.clone(),
            message: format!("typify cannot name the definitions: {message}"),
        }
    })?;
    let mut owners: BTreeMap<String, &str> = BTreeMap::new();
    for (definition, ident) in names.iter() {
        if let Some(first) = owners.insert(ident.to_string(), definition) {
            return Err(CodegenError::Definition {
                at: model.origins.locate(definition),
                message: format!(
                    "typify names both `{first}` and `{definition}` `{ident}`; one type would \
                     be lost"
                ),
            });
        }
    }
    Ok(names)
}

fn checked_ident(model: &RevisionModel, name: &str) -> Result<Ident> {
    syn::parse_str::<Ident>(name).map_err(|_| CodegenError::Revision {
        protocol: model.protocol.clone(),
        revision: model.revision.clone(),
        message: format!("`{name}` is not a Rust identifier"),
    })
}

pub fn revision_label(model: &RevisionModel) -> String {
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

/// typify's output with codegen's docs and aliases, the custom types in their place, and unions
/// with a shared tag decoded by that tag.
fn documented_types(
    model: &RevisionModel,
    definitions: &BTreeMap<String, serde_json::Value>,
    names: &TypeNames,
    tokens: TokenStream,
) -> Result<(TokenStream, Vec<TagDispatch>)> {
    let unparsable = |what: &str, error: syn::Error| CodegenError::Definition {
        at: model.origins.file.clone(),
        message: format!("{what} does not parse: {error}"),
    };
    let mut parsed: syn::File =
        syn::parse2(tokens).map_err(|error| unparsable("typify output", error))?;
    let label = revision_label(model);
    redocument(&mut parsed, names, &|stands| {
        let (definition, part) = match stands {
            Stands::For(definition) => (definition, ""),
            Stands::InsideOf(definition) => (definition, "Part of "),
        };
        Some(
            match (
                model.origins.link(definition),
                model.origins.elements.get(definition),
            ) {
                (Some(link), _) => format!(" {part}[`{definition}`]({link}) of {label}."),
                (None, Some(element)) => format!(" {part}`{element}`, which {label} imports."),
                (None, None) => {
                    format!(
                        " {part}`{definition}` of {label} (`{}`).",
                        model.origins.file
                    )
                }
            },
        )
    });
    let unplaced = add_field_aliases(&mut parsed, names, &model.field_aliases);
    if let Some(field) = unplaced.first() {
        return Err(CodegenError::Definition {
            at: model.origins.file.clone(),
            message: format!("an accepted name for `{field}` found no field"),
        });
    }
    let tag_dispatched = dispatch_on_tags(&mut parsed, &discriminators(definitions, names));
    let typify_items: BTreeSet<String> = parsed.items.iter().filter_map(item_name).collect();
    for (definition, custom) in &model.custom_types {
        let at = || model.origins.locate(definition);
        let custom_tokens = custom
            .emit(names)
            .map_err(|message| CodegenError::Definition { at: at(), message })?;
        let custom_file: syn::File =
            syn::parse2(custom_tokens).map_err(|error| unparsable("a codegen type", error))?;
        for item in &custom_file.items {
            if let Some(name) = item_name(item).filter(|name| typify_items.contains(name)) {
                return Err(CodegenError::Definition {
                    at: at(),
                    message: format!("its type `{name}` is already a type of another definition"),
                });
            }
        }
        parsed.items.extend(custom_file.items);
    }
    Ok((quote! { #parsed }, tag_dispatched))
}

fn item_name(item: &syn::Item) -> Option<String> {
    match item {
        syn::Item::Struct(item) => Some(item.ident.to_string()),
        syn::Item::Enum(item) => Some(item.ident.to_string()),
        syn::Item::Type(item) => Some(item.ident.to_string()),
        _ => None,
    }
}

fn methods_module(revision: &Revision<'_>) -> TokenStream {
    let door = crate::door::path();
    let mut seen = BTreeSet::new();
    let mut items = Vec::new();
    for rpc in &revision.rows {
        if !seen.insert(rpc.konst.to_string()) {
            continue;
        }
        let konst = &rpc.konst;
        let ident = &rpc.marker;
        let name = &rpc.row.name;
        let doc = format!(" `{name}` ({})", revision.label);
        items.push(quote! {
            #[doc = #doc]
            pub const #konst: &str = #name;
        });
        if !rpc.row.is_bound() {
            continue;
        }
        let doc = marker_doc(revision, rpc, doc);
        let params = rpc.params_arg_type().unwrap_or_else(|| quote! { () });
        let marker = match rpc.row.kind {
            MethodKind::Request => {
                let result = rpc
                    .result
                    .as_ref()
                    .map_or_else(|| quote! { () }, |_| rpc.result_type());
                quote! {
                    impl #door::RpcMethod for #ident {
                        const NAME: &'static str = #konst;
                        type Params = #params;
                        type Result = #result;
                    }
                }
            }
            MethodKind::Notification => quote! {
                impl #door::RpcNotification for #ident {
                    const NAME: &'static str = #konst;
                    type Params = #params;
                }
            },
        };
        items.push(quote! {
            #[doc = #doc]
            #[derive(Debug, Clone, Copy, PartialEq, Eq)]
            pub struct #ident;
            #marker
        });
    }
    quote! {
        /// Wire names of every method, and a marker type per method a binding serves, carrying
        /// its params and result types.
        pub mod methods {
            use super::types;
            #(#items)*
        }
    }
}

/// A marker's doc: the method, and a link to the definition of its params and of its result
/// upstream, which is where the method is written down.
fn marker_doc(revision: &Revision<'_>, rpc: &TypedRow<'_>, method_doc: String) -> String {
    let links: Vec<String> = [("params", &rpc.row.params), ("result", &rpc.row.result)]
        .into_iter()
        .filter_map(|(what, definition)| {
            let definition = definition.as_ref()?;
            let link = revision.model.origins.link(definition)?;
            Some(format!("{what} [`{definition}`]({link})"))
        })
        .collect();
    if links.is_empty() {
        return method_doc;
    }
    format!("{method_doc}: {}.", links.join(", "))
}

fn direction_tokens(direction: Direction) -> TokenStream {
    match direction {
        Direction::ClientToServer => quote! { ClientToServer },
        Direction::ServerToClient => quote! { ServerToClient },
        Direction::Both => quote! { Both },
    }
}

fn method_table(revision: &Revision<'_>) -> TokenStream {
    let door = crate::door::path();
    let rows = revision.rows.iter().map(|rpc| {
        let row = rpc.row;
        let name = &row.name;
        let direction = direction_tokens(row.direction);
        let kind = match row.kind {
            MethodKind::Request => quote! { Request },
            MethodKind::Notification => quote! { Notification },
        };
        // The table names each type as the module spells it, for messages and diagnostics.
        let named = |ident: &Option<Ident>| match ident {
            Some(ident) => {
                let text = format!("types::{ident}");
                quote! { Some(#text) }
            }
            None => quote! { None },
        };
        let params = named(&rpc.params);
        let result = named(&rpc.result);
        let optional = row.params_optional;
        let streaming = row.streaming.results();
        let client_streaming = row.streaming.params();
        let json_rpc = row.on_json_rpc();
        let http = row.http.iter().map(|route| {
            let (verb, path, body) = (&route.verb, &route.path, &route.body);
            quote! { #door::HttpRoute { verb: #verb, path: #path, body: #body } }
        });
        quote! {
            #door::MethodSpec {
                name: #name,
                direction: #door::Direction::#direction,
                kind: #door::MethodKind::#kind,
                params_type: #params,
                params_optional: #optional,
                result_type: #result,
                streaming: #streaming,
                client_streaming: #client_streaming,
                json_rpc: #json_rpc,
                http: &[#(#http),*],
            }
        }
    });
    quote! {
        /// The method table: one row per wire method, derived from the source, saying which
        /// bindings serve it (`json_rpc`, and REST through `http`).
        pub static METHODS: &[#door::MethodSpec] = &[#(#rows),*];
    }
}

/// ` It stands for [`X`](link) upstream.` when the front end names the upstream union of what
/// `peer` sends of `kind` and the pinned file declares it; empty otherwise.
fn union_link(model: &RevisionModel, peer: Peer, kind: UnionKind) -> String {
    model
        .message_unions
        .iter()
        .find(|union| union.sender == peer && union.kind == kind)
        .and_then(|union| {
            let link = model.origins.link(&union.definition)?;
            Some(format!(
                " It stands for [`{}`]({link}) upstream.",
                union.definition
            ))
        })
        .unwrap_or_default()
}

/// Which helpers the dispatch code calls, so none is emitted unused.
#[derive(Debug, Default)]
struct HelperUse {
    envelope: bool,
    required: bool,
    optional: bool,
    result: bool,
}

/// Per peer asked for: the requests and notifications it sends and the results it answers with,
/// each an enum decoded by method name (never by shape).
fn dispatched_enums(
    revision: &Revision<'_>,
    peers: &BTreeMap<Peer, EnumUse>,
) -> Result<TokenStream> {
    let model = revision.model;
    let mut helpers = HelperUse::default();
    let mut out = Vec::new();
    for (peer, used) in peers {
        let other = match peer {
            Peer::Client => Peer::Server,
            Peer::Server => Peer::Client,
        };
        let side = model.peers.name(*peer);
        let sent = |kind: MethodKind, by: Peer| -> Vec<&TypedRow<'_>> {
            revision
                .bound_rows()
                .filter(|rpc| rpc.row.kind == kind && rpc.row.direction.sent_by(by))
                .collect()
        };
        let label = &revision.label;
        let lower = side.to_string().to_lowercase();
        out.push(message_enum(
            &checked_ident(model, &enum_name(model, *peer, UnionKind::Request))?,
            &format!(
                "Requests the {lower} sends ({label}), dispatched by method name.{}",
                union_link(model, *peer, UnionKind::Request)
            ),
            &sent(MethodKind::Request, *peer),
            *used,
            &mut helpers,
        ));
        out.push(message_enum(
            &checked_ident(model, &enum_name(model, *peer, UnionKind::Notification))?,
            &format!(
                "Notifications the {lower} sends ({label}), dispatched by method name.{}",
                union_link(model, *peer, UnionKind::Notification)
            ),
            &sent(MethodKind::Notification, *peer),
            *used,
            &mut helpers,
        ));
        out.push(result_enum(
            &checked_ident(model, &enum_name(model, *peer, UnionKind::Result))?,
            &format!(
                "Results the {lower} sends ({label}), decoded by the method they answer.{}",
                union_link(model, *peer, UnionKind::Result)
            ),
            &sent(MethodKind::Request, other),
            &mut helpers,
        ));
    }
    if out.is_empty() {
        return Ok(TokenStream::new());
    }
    let helper_fns = helper_functions(&helpers);
    Ok(quote! {
        #(#out)*
        #helper_fns
    })
}

fn message_enum(
    ident: &Ident,
    doc: &str,
    rows: &[&TypedRow<'_>],
    used: EnumUse,
    helpers: &mut HelperUse,
) -> TokenStream {
    let door = crate::door::path();
    let doc = format!(" {doc}");
    let mut variants = Vec::new();
    let mut decode_arms = Vec::new();
    let mut method_arms = Vec::new();
    let mut params_arms = Vec::new();
    for rpc in rows {
        let variant = &rpc.marker;
        let konst = &rpc.konst;
        let method_doc = format!(" `{}`", rpc.row.name);
        match rpc.params_arg_type() {
            Some(ty) => {
                variants.push(quote! { #[doc = #method_doc] #variant(#ty) });
                let helper = if rpc.row.params_optional {
                    helpers.optional = true;
                    quote! { optional_params }
                } else {
                    helpers.required = true;
                    quote! { required_params }
                };
                decode_arms.push(quote! { methods::#konst => #helper(methods::#konst, params).map(Self::#variant) });
                method_arms.push(quote! { Self::#variant(_) => methods::#konst });
                params_arms.push(if rpc.row.params_optional {
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
            quote! { let _ = (method, params); Err(#door::DispatchError::UnknownMethod) },
            quote! { match *self {} },
            quote! { match *self {} },
        )
    } else {
        (
            quote! { match method { #(#decode_arms,)* _ => Err(#door::DispatchError::UnknownMethod) } },
            quote! { match self { #(#method_arms,)* } },
            quote! { match self { #(#params_arms,)* } },
        )
    };
    let whole_messages = match used {
        EnumUse::Reexpress => TokenStream::new(),
        EnumUse::Type => {
            helpers.envelope = true;
            whole_message_impls(ident, &method_body)
        }
    };
    quote! {
        #[doc = #doc]
        #[derive(Debug, Clone)]
        #[allow(clippy::large_enum_variant)] // a decoded message is moved once, to its handler
        pub enum #ident { #(#variants,)* }

        impl #ident {
            /// Decodes `params` as the params type of `method`; an unknown method and params
            /// that do not fit are distinct errors (-32601, -32602).
            pub fn from_method(method: &str, params: ::std::option::Option<::serde_json::Value>) -> ::std::result::Result<Self, #door::DispatchError> {
                #decode_body
            }

            /// The params as JSON, `None` when the message carries none.
            pub fn params(&self) -> ::std::result::Result<::std::option::Option<::serde_json::Value>, ::serde_json::Error> {
                #params_body
            }
        }

        #whole_messages
    }
}

/// What a message enum that is a type adds: its method's name, and reading and writing it as a
/// whole `{"method", "params"}` message.
fn whole_message_impls(ident: &Ident, method_body: &TokenStream) -> TokenStream {
    quote! {
        impl #ident {
            /// The wire name of this message's method.
            pub fn method(&self) -> &'static str {
                #method_body
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

fn result_enum(
    ident: &Ident,
    doc: &str,
    rows: &[&TypedRow<'_>],
    helpers: &mut HelperUse,
) -> TokenStream {
    let door = crate::door::path();
    let doc = format!(" {doc}");
    let mut variants = Vec::new();
    let mut decode_arms = Vec::new();
    let mut method_arms = Vec::new();
    let mut serialize_arms = Vec::new();
    for rpc in rows {
        let variant = &rpc.marker;
        let konst = &rpc.konst;
        let method_doc = format!(" Result of `{}`", rpc.row.name);
        let ty = rpc.result_type();
        helpers.result = true;
        variants.push(quote! { #[doc = #method_doc] #variant(#ty) });
        decode_arms.push(quote! { methods::#konst => decode_result_as(methods::#konst, result).map(Self::#variant) });
        method_arms.push(quote! { Self::#variant(_) => methods::#konst });
        serialize_arms.push(quote! { Self::#variant(result) => result.serialize(serializer) });
    }
    let (decode_body, method_body, serialize_body) = if rows.is_empty() {
        (
            quote! { let _ = (method, result); Err(#door::DispatchError::UnknownMethod) },
            quote! { match *self {} },
            quote! { let _ = serializer; match *self {} },
        )
    } else {
        (
            quote! { match method { #(#decode_arms,)* _ => Err(#door::DispatchError::UnknownMethod) } },
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
            pub fn decode_result(method: &str, result: ::serde_json::Value) -> ::std::result::Result<Self, #door::DispatchError> {
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
    let door = crate::door::path();
    let required = helpers.required.then(|| quote! {
        fn required_params<T: ::serde::de::DeserializeOwned>(method: &'static str, params: ::std::option::Option<::serde_json::Value>) -> ::std::result::Result<T, #door::DispatchError> {
            ::serde_json::from_value(params.unwrap_or(::serde_json::Value::Null))
                .map_err(|source| #door::DispatchError::InvalidParams { method, source })
        }
    });
    let optional = helpers.optional.then(|| quote! {
        fn optional_params<T: ::serde::de::DeserializeOwned>(method: &'static str, params: ::std::option::Option<::serde_json::Value>) -> ::std::result::Result<::std::option::Option<T>, #door::DispatchError> {
            match params {
                None | Some(::serde_json::Value::Null) => Ok(None),
                Some(params) => ::serde_json::from_value(params)
                    .map(Some)
                    .map_err(|source| #door::DispatchError::InvalidParams { method, source }),
            }
        }
    });
    let result = helpers.result.then(|| quote! {
        fn decode_result_as<T: ::serde::de::DeserializeOwned>(method: &'static str, result: ::serde_json::Value) -> ::std::result::Result<T, #door::DispatchError> {
            ::serde_json::from_value(result)
                .map_err(|source| #door::DispatchError::InvalidParams { method, source })
        }
    });
    let envelope = helpers.envelope.then(|| {
        quote! {
            /// The `{"method", "params"}` part of a message, before dispatch.
            #[derive(::serde::Deserialize)]
            struct MethodEnvelope {
                method: ::std::string::String,
                #[serde(default)]
                params: ::std::option::Option<::serde_json::Value>,
            }
        }
    });
    quote! {
        #envelope
        #required
        #optional
        #result
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{MessageUnion, Origins, Peers, Streaming};

    /// A revision whose server sends one request, `ping`, listed by the union `ServerRequest`;
    /// `holder` adds a definition referring to that union.
    fn model(dispatched_enums: Vec<Peer>, holder: bool) -> RevisionModel {
        let mut definitions: BTreeMap<String, serde_json::Value> =
            serde_json::from_value(serde_json::json!({
                "PingParams": {"type": "object"},
                "PingResult": {"type": "object"},
                "ServerRequest": {"type": "object"}
            }))
            .unwrap();
        if holder {
            definitions.insert(
                "Holder".into(),
                serde_json::json!({"type": "object", "properties": {
                    "request": {"$ref": "#/definitions/ServerRequest"}
                }}),
            );
        }
        RevisionModel {
            protocol: "test".into(),
            revision: "1".into(),
            module: "v1".into(),
            sources: Vec::new(),
            definitions,
            origins: Origins::default(),
            custom_types: BTreeMap::new(),
            methods: vec![MethodRow {
                name: "ping".into(),
                direction: Direction::ServerToClient,
                kind: MethodKind::Request,
                params: Some("PingParams".into()),
                params_optional: false,
                result: Some("PingResult".into()),
                streaming: Streaming::Unary,
                http: Vec::new(),
            }],
            peers: Peers::new("Client", "Server"),
            message_unions: vec![MessageUnion {
                definition: "ServerRequest".into(),
                sender: Peer::Server,
                kind: UnionKind::Request,
            }],
            dispatched_enums,
            field_aliases: BTreeMap::new(),
            feature: None,
        }
    }

    #[test]
    fn an_enum_asked_for_to_re_express_messages_decodes_and_re_encodes_params_and_nothing_more() {
        let source = emit_revision(&model(vec![Peer::Server], false))
            .unwrap()
            .source;
        assert!(source.contains("pub enum ServerRequest"), "{source}");
        assert!(source.contains("pub fn from_method("), "{source}");
        assert!(source.contains("pub fn params("), "{source}");
        assert!(
            !source.contains("for ServerRequest"),
            "no serde impl: {source}"
        );
        assert!(!source.contains("MethodEnvelope"), "{source}");
    }

    #[test]
    fn an_enum_standing_for_a_union_another_definition_refers_to_reads_and_writes_whole_messages() {
        let source = emit_revision(&model(Vec::new(), true)).unwrap().source;
        assert!(
            source.contains("impl ::serde::Serialize for ServerRequest"),
            "{source}"
        );
        assert!(
            source.contains("impl<'de> ::serde::Deserialize<'de> for ServerRequest"),
            "{source}"
        );
        assert!(source.contains("struct MethodEnvelope"), "{source}");
    }
}
