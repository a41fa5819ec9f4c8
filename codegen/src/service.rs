//! The service emitter: from a revision's method table, per receiving side (MCP `Server` and
//! `Client`, ACP `Agent` and `Client`, A2A `Agent`) a handler trait, its dispatchers and a typed
//! proxy for calling that side — the shape of tonic-build's service trait and server wrapper.
//!
//! - **Trait.** One method per request the side receives (`tools/call` → `tools_call`), taking
//!   the typed params and answering `Result<TypedResult, ErrorObject>`; the default answers
//!   -32601. One per notification, defaulting to a no-op. Methods return
//!   `impl Future + Send`, so an implementor writes `async fn` and nothing is boxed.
//! - **Context.** The trait has an associated `type Context` that every method receives by
//!   reference. The hand-written protocol glue chooses it (a richer context with the negotiated
//!   revision, progress token, typed peer handle…) rather than the trait fixing the runtime's
//!   `Context<S>`; an associated type rather than a generic parameter because one handler is
//!   served in exactly one context, which keeps inference and bounds (`H: Server<Context = C>`)
//!   simple.
//! - **Dispatchers.** `dispatch_<side>_request(handler, method, params, cx)` decodes the raw
//!   params as the method's type, calls the trait method and serializes its answer into the
//!   runtime's `Reply`; an unknown method is -32601 and params that do not fit are -32602
//!   naming the method, never the input. `dispatch_<side>_notification` does the same for
//!   notifications and reports a failed decode to the caller, since nothing is answered. Both
//!   are plain `async fn`s over a generic handler: statically dispatched, no boxed future.
//! - **Streaming** (A2A): such a method returns `ResultStream<T>`, and when a side has any, its
//!   request dispatcher answers `Answer` (`Reply` or a `ReplyStream` of serialized items) so the
//!   binding decides how the items travel (SSE events, or `send_partial_result` per item).
//! - **Proxy.** `Remote<Side><T: RpcClient>` has one async method per request (typed params in,
//!   the result decoded as the type of the method it answers) and per notification. The
//!   runtime's `Peer` implements `RpcClient`, so the same proxy makes server→client calls from
//!   inside a handler; the protocol crates implement it over their client transports.
//! - **Features.** Every protocol crate has a `server` and a `client` feature, and each item is
//!   compiled with the one whose side uses it: a side's trait and dispatchers with that side's
//!   feature (`server` for the server or agent, `client` for the client), its proxy with the
//!   caller's. Types and method tables need neither.

use std::collections::BTreeSet;

use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote};

use crate::emit::{Revision, TypedRow};
use crate::error::{CodegenError, Result};
use crate::model::{Direction, MethodKind};

/// The protocol crates' feature that compiles the serving side (a server or an agent).
const SERVER_FEATURE: &str = "server";
/// The protocol crates' feature that compiles the client side.
const CLIENT_FEATURE: &str = "client";

/// `#[cfg(feature = "…")]` for one of the protocol crates' side features.
fn feature_gate(feature: &str) -> TokenStream {
    quote! { #[cfg(feature = #feature)] }
}

/// One side that receives calls: its trait name and the rows it answers.
struct ReceivingSide<'a> {
    /// `Server`, `Client` or `Agent`.
    name: &'a Ident,
    /// The other side, which sends these calls (for docs).
    sender: &'a Ident,
    /// The crate feature of the side that implements this trait (`server` or `client`).
    implementer: &'static str,
    /// The crate feature of the side that calls it through the proxy.
    caller: &'static str,
    requests: Vec<&'a TypedRow<'a>>,
    notifications: Vec<&'a TypedRow<'a>>,
}

/// A row's dispatch and proxy expressions.
trait Codec {
    /// `params: T, ` or nothing, for a signature.
    fn params_arg(&self) -> TokenStream;
    /// The expression decoding the raw params in a dispatcher (ending in `?`), or nothing.
    fn decode_expr(&self) -> TokenStream;
    /// The expression encoding the params in a proxy call.
    fn encode_expr(&self) -> TokenStream;
}

impl Codec for TypedRow<'_> {
    fn params_arg(&self) -> TokenStream {
        match self.params_arg_type() {
            Some(ty) => quote! { params: #ty, },
            None => TokenStream::new(),
        }
    }

    fn decode_expr(&self) -> TokenStream {
        let door = crate::door::path();
        let konst = &self.konst;
        match (&self.params, self.row.params_optional) {
            (None, _) => TokenStream::new(),
            (Some(_), true) => quote! {
                #door::decode_optional_params(methods::#konst, params)?,
            },
            (Some(_), false) => quote! {
                #door::decode_params(methods::#konst, params)?,
            },
        }
    }

    fn encode_expr(&self) -> TokenStream {
        let door = crate::door::path();
        let konst = &self.konst;
        match self.params {
            Some(_) => {
                quote! { #door::encode_params(methods::#konst, &params)? }
            }
            None => quote! { ::std::option::Option::None },
        }
    }
}

/// Everything this module emits for one revision, spliced into the revision module beside
/// `types` and `methods` (whose names it relies on). Only rows some binding serves get a handler
/// method: a client-streaming rpc has neither a JSON-RPC nor a REST form today.
pub fn emit_service(revision: &Revision<'_>) -> Result<TokenStream> {
    let mut out = Vec::new();
    for side in receiving_sides(revision)? {
        if side.requests.is_empty() && side.notifications.is_empty() {
            continue;
        }
        // Each of the three is one item, so one gate in front of it compiles it with its side.
        let serving = feature_gate(side.implementer);
        for item in [
            handler_trait(&side, &revision.label),
            request_dispatcher(&side),
            notification_dispatcher(&side),
        ] {
            out.push(quote! { #serving #item });
        }
        out.push(remote_proxy(&side, &revision.label));
    }
    Ok(quote! { #(#out)* })
}

/// The server (agent) side receives what the client sends and the other way round; a `Both`
/// row is received by each.
fn receiving_sides<'a>(revision: &'a Revision<'a>) -> Result<Vec<ReceivingSide<'a>>> {
    let peers = &revision.model.peers;
    [
        (&peers.server, &peers.client, Direction::ClientToServer),
        (&peers.client, &peers.server, Direction::ServerToClient),
    ]
    .into_iter()
    .map(|(name, sender, direction)| {
        let (implementer, caller) = match direction {
            Direction::ServerToClient => (CLIENT_FEATURE, SERVER_FEATURE),
            Direction::ClientToServer | Direction::Both => (SERVER_FEATURE, CLIENT_FEATURE),
        };
        let received: Vec<&TypedRow<'_>> = revision
            .bound_rows()
            .filter(|rpc| rpc.row.direction == direction || rpc.row.direction == Direction::Both)
            .collect();
        let rpcs = distinct_handlers(revision, name, received)?;
        let (requests, notifications) = rpcs
            .into_iter()
            .partition(|rpc| rpc.row.kind == MethodKind::Request);
        Ok(ReceivingSide {
            name,
            sender,
            implementer,
            caller,
            requests,
            notifications,
        })
    })
    .collect()
}

/// Keeps one row per wire method, refusing two rows that would share a handler method.
fn distinct_handlers<'a>(
    revision: &Revision<'_>,
    side: &Ident,
    rows: Vec<&'a TypedRow<'a>>,
) -> Result<Vec<&'a TypedRow<'a>>> {
    let mut seen_wire = BTreeSet::new();
    let mut seen_handler = BTreeSet::new();
    let mut rpcs = Vec::new();
    for rpc in rows {
        if !seen_wire.insert(rpc.row.name.as_str()) {
            continue;
        }
        let name = rpc.handler.to_string();
        if !seen_handler.insert(name.clone()) {
            return Err(CodegenError::Revision {
                protocol: revision.model.protocol.clone(),
                revision: revision.model.revision.clone(),
                message: format!(
                    "method `{}` needs handler method `{name}` on `{side}`, which is already taken",
                    rpc.row.name
                ),
            });
        }
        rpcs.push(rpc);
    }
    Ok(rpcs)
}

fn has_streaming(side: &ReceivingSide<'_>) -> bool {
    side.requests.iter().any(|rpc| rpc.row.streaming.results())
}

fn handler_trait(side: &ReceivingSide<'_>, label: &str) -> TokenStream {
    let door = crate::door::path();
    let name = side.name;
    let doc = format!(
        " The {} side of {label}: one method per request and notification the {} sends. \
         Unimplemented requests answer -32601 and unimplemented notifications are ignored; serve \
         it with [`{}`] and [`{}`].",
        side.name.to_string().to_lowercase(),
        side.sender.to_string().to_lowercase(),
        request_dispatcher_name(side),
        notification_dispatcher_name(side),
    );
    let requests = side.requests.iter().map(|rpc| {
        let method = &rpc.handler;
        let params = rpc.params_arg();
        let result = rpc.result_type();
        let output = if rpc.row.streaming.results() {
            quote! { #door::ResultStream<#result> }
        } else {
            result
        };
        let unused = unused_args(rpc);
        let doc = format!(" `{}`: answers -32601 unless implemented.", rpc.row.name);
        quote! {
            #[doc = #doc]
            fn #method(&self, #params cx: &Self::Context)
                -> impl ::std::future::Future<Output = ::std::result::Result<#output, #door::ErrorObject>> + ::std::marker::Send
            {
                let _ = #unused;
                ::std::future::ready(::std::result::Result::Err(#door::ErrorObject::method_not_found()))
            }
        }
    });
    let notifications = side.notifications.iter().map(|rpc| {
        let method = &rpc.handler;
        let params = rpc.params_arg();
        let unused = unused_args(rpc);
        let doc = format!(" `{}`: ignored unless implemented.", rpc.row.name);
        quote! {
            #[doc = #doc]
            fn #method(&self, #params cx: &Self::Context)
                -> impl ::std::future::Future<Output = ()> + ::std::marker::Send
            {
                let _ = #unused;
                ::std::future::ready(())
            }
        }
    });
    quote! {
        #[doc = #doc]
        pub trait #name: ::std::marker::Send + ::std::marker::Sync {
            /// What every method receives beside its params, chosen by the glue serving this
            /// trait.
            type Context: ::std::marker::Send + ::std::marker::Sync;
            #(#requests)*
            #(#notifications)*
        }
    }
}

/// The arguments a default method body ignores.
fn unused_args(rpc: &TypedRow<'_>) -> TokenStream {
    match rpc.params {
        Some(_) => quote! { (params, cx) },
        None => quote! { cx },
    }
}

fn request_dispatcher_name(side: &ReceivingSide<'_>) -> Ident {
    format_ident!("dispatch_{}_request", side.name.to_string().to_lowercase())
}

fn notification_dispatcher_name(side: &ReceivingSide<'_>) -> Ident {
    format_ident!(
        "dispatch_{}_notification",
        side.name.to_string().to_lowercase()
    )
}

fn request_dispatcher(side: &ReceivingSide<'_>) -> TokenStream {
    let door = crate::door::path();
    let trait_name = side.name;
    let function = request_dispatcher_name(side);
    let streaming = has_streaming(side);
    let arms = side.requests.iter().map(|rpc| {
        let konst = &rpc.konst;
        let method = &rpc.handler;
        let decode = rpc.decode_expr();
        let call = quote! { handler.#method(#decode cx).await };
        let answer = match (streaming, rpc.row.streaming.results()) {
            (false, _) => quote! { #door::reply(#call) },
            (true, false) => quote! { #door::Answer::single(#call) },
            (true, true) => quote! { #door::Answer::streaming(#call) },
        };
        quote! { methods::#konst => #answer, }
    });
    let signature_doc = format!(
        " Answers one request to a [`{}`]: decodes `params` as the type of `method`, calls the \
         handler and serializes its answer. Unknown methods answer -32601, params that do not \
         fit -32602.",
        side.name
    );
    let args = quote! {
        handler: &H,
        method: &str,
        params: ::std::option::Option<&::serde_json::value::RawValue>,
        cx: &H::Context,
    };
    if side.requests.is_empty() {
        return quote! {
            #[doc = #signature_doc]
            pub async fn #function<H: #trait_name>(#args) -> #door::Reply {
                let _ = (handler, method, params, cx);
                ::std::result::Result::Err(#door::ErrorObject::method_not_found())
            }
        };
    }
    if streaming {
        let doc = format!(
            "{signature_doc} Streaming methods answer `Answer::Stream`, one serialized item per \
             result, for the binding to carry."
        );
        quote! {
            #[doc = #doc]
            pub async fn #function<H: #trait_name>(#args) -> #door::Answer {
                let answer = async {
                    ::std::result::Result::Ok::<_, #door::ErrorObject>(match method {
                        #(#arms)*
                        _ => return ::std::result::Result::Err(#door::ErrorObject::method_not_found()),
                    })
                }
                .await;
                answer.unwrap_or_else(|error| #door::Answer::Reply(::std::result::Result::Err(error)))
            }
        }
    } else {
        quote! {
            #[doc = #signature_doc]
            pub async fn #function<H: #trait_name>(#args) -> #door::Reply {
                match method {
                    #(#arms)*
                    _ => ::std::result::Result::Err(#door::ErrorObject::method_not_found()),
                }
            }
        }
    }
}

fn notification_dispatcher(side: &ReceivingSide<'_>) -> TokenStream {
    let door = crate::door::path();
    let trait_name = side.name;
    let function = notification_dispatcher_name(side);
    let doc = format!(
        " Delivers one notification to a [`{}`]. Nothing is answered, so a notification that is \
         unknown or whose params do not fit is returned to the caller to log.",
        side.name
    );
    let args = quote! {
        handler: &H,
        method: &str,
        params: ::std::option::Option<&::serde_json::value::RawValue>,
        cx: &H::Context,
    };
    let output = quote! { ::std::result::Result<(), #door::DispatchError> };
    if side.notifications.is_empty() {
        return quote! {
            #[doc = #doc]
            pub async fn #function<H: #trait_name>(#args) -> #output {
                let _ = (handler, method, params, cx);
                ::std::result::Result::Err(#door::DispatchError::UnknownMethod)
            }
        };
    }
    let arms = side.notifications.iter().map(|rpc| {
        let konst = &rpc.konst;
        let method = &rpc.handler;
        let decode = rpc.decode_expr();
        quote! { methods::#konst => handler.#method(#decode cx).await, }
    });
    quote! {
        #[doc = #doc]
        pub async fn #function<H: #trait_name>(#args) -> #output {
            match method {
                #(#arms)*
                _ => return ::std::result::Result::Err(#door::DispatchError::UnknownMethod),
            }
            ::std::result::Result::Ok(())
        }
    }
}

fn remote_proxy(side: &ReceivingSide<'_>, label: &str) -> TokenStream {
    let door = crate::door::path();
    let name = format_ident!("Remote{}", side.name);
    let doc = format!(
        " Calls a remote {} of {label} through any `RpcClient` transport (the runtime's `Peer` \
         from inside a handler, or a protocol crate's client transport); each result is decoded \
         as the type of the method it answers.",
        side.name.to_string().to_lowercase()
    );
    let requests = side.requests.iter().map(|rpc| {
        let method = &rpc.handler;
        let konst = &rpc.konst;
        let params = rpc.params_arg();
        let encode = rpc.encode_expr();
        let result = rpc.result_type();
        let doc = format!(" Calls `{}`.", rpc.row.name);
        if rpc.row.streaming.results() {
            quote! {
                #[doc = #doc]
                pub async fn #method(&self, #params) -> ::std::result::Result<#door::ClientStream<#result>, #door::ClientError> {
                    let stream = self.transport.call_streaming(methods::#konst, #encode).await?;
                    ::std::result::Result::Ok(#door::decode_stream(methods::#konst, stream))
                }
            }
        } else {
            quote! {
                #[doc = #doc]
                pub async fn #method(&self, #params) -> ::std::result::Result<#result, #door::ClientError> {
                    let result = self.transport.call(methods::#konst, #encode).await?;
                    #door::decode_result(methods::#konst, &result)
                }
            }
        }
    });
    let notifications = side.notifications.iter().map(|rpc| {
        let method = &rpc.handler;
        let konst = &rpc.konst;
        let params = rpc.params_arg();
        let encode = rpc.encode_expr();
        let doc = format!(" Sends `{}`.", rpc.row.name);
        quote! {
            #[doc = #doc]
            pub async fn #method(&self, #params) -> ::std::result::Result<(), #door::ClientError> {
                self.transport.notify(methods::#konst, #encode).await
            }
        }
    });
    let calling = feature_gate(side.caller);
    quote! {
        #[doc = #doc]
        #calling
        #[derive(Debug, Clone)]
        pub struct #name<T> {
            transport: T,
        }

        #calling
        impl<T> #name<T> {
            /// A proxy calling through `transport`.
            pub fn new(transport: T) -> Self {
                Self { transport }
            }

            /// The transport calls go through.
            pub fn transport(&self) -> &T {
                &self.transport
            }
        }

        #calling
        impl<T: #door::RpcClient> #name<T> {
            #(#requests)*
            #(#notifications)*
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::emit::handler_method_name;
    use crate::model::{MethodRow, Origins, Peers, RevisionModel, Streaming};
    use crate::types_emit::TypeNames;

    fn row(name: &str, direction: Direction, kind: MethodKind) -> MethodRow {
        let stem = handler_method_name(name);
        MethodRow {
            name: name.into(),
            direction,
            kind,
            params: Some(format!("{stem}_params")),
            params_optional: false,
            result: (kind == MethodKind::Request).then(|| format!("{stem}_result")),
            streaming: Streaming::Unary,
            http: Vec::new(),
        }
    }

    fn model(server: &'static str, methods: Vec<MethodRow>) -> RevisionModel {
        RevisionModel {
            protocol: "test".into(),
            revision: "test".into(),
            module: "vtest".into(),
            sources: Vec::new(),
            definitions: BTreeMap::new(),
            origins: Origins::default(),
            custom_types: BTreeMap::new(),
            methods,
            peers: Peers::new("Client", server),
            message_unions: Vec::new(),
            dispatched_enums: Vec::new(),
            field_aliases: BTreeMap::new(),
            feature: None,
        }
    }

    /// A small table touching every shape: required, optional and absent params, a `Both`
    /// request, notifications each way.
    fn synthetic_table() -> Vec<MethodRow> {
        use Direction::*;
        use MethodKind::*;
        let mut optional = row("tools/list", ClientToServer, Request);
        optional.params_optional = true;
        let mut bare = row("agent/getCard", ClientToServer, Request);
        bare.params = None;
        vec![
            row("tools/call", ClientToServer, Request),
            optional,
            bare,
            row("ping", Both, Request),
            row("notifications/initialized", ClientToServer, Notification),
            row("notifications/cancelled", Both, Notification),
            row("roots/list", ServerToClient, Request),
            row("notifications/message", ServerToClient, Notification),
        ]
    }

    fn emitted(model: &RevisionModel) -> Result<syn::File> {
        let definitions: Vec<&str> = model
            .methods
            .iter()
            .flat_map(|row| [row.params.as_deref(), row.result.as_deref()])
            .flatten()
            .collect();
        let names = TypeNames::of(definitions).unwrap_or_else(|error| panic!("{error}"));
        let revision = Revision::new(model, names)?;
        let tokens = emit_service(&revision)?;
        Ok(syn::parse2(tokens).unwrap_or_else(|error| panic!("does not parse: {error}")))
    }

    fn trait_methods(file: &syn::File, name: &str) -> Vec<String> {
        file.items
            .iter()
            .find_map(|item| match item {
                syn::Item::Trait(t) if t.ident == name => Some(t),
                _ => None,
            })
            .unwrap_or_else(|| panic!("no trait {name}"))
            .items
            .iter()
            .filter_map(|item| match item {
                syn::TraitItem::Fn(f) => Some(f.sig.ident.to_string()),
                _ => None,
            })
            .collect()
    }

    fn impl_methods(file: &syn::File, self_type: &str) -> Vec<String> {
        file.items
            .iter()
            .filter_map(|item| match item {
                syn::Item::Impl(i) if i.trait_.is_none() => Some(i),
                _ => None,
            })
            .filter(|i| matches!(&*i.self_ty, syn::Type::Path(p) if p.path.segments.last().is_some_and(|s| s.ident == self_type)))
            .flat_map(|i| i.items.iter())
            .filter_map(|item| match item {
                syn::ImplItem::Fn(f) => Some(f.sig.ident.to_string()),
                _ => None,
            })
            .filter(|name| name != "new" && name != "transport")
            .collect()
    }

    /// The `methods::<CONST>` patterns of the `match method` a dispatcher starts with.
    fn routed_methods(file: &syn::File, function: &str) -> Vec<String> {
        let function = file
            .items
            .iter()
            .find_map(|item| match item {
                syn::Item::Fn(f) if f.sig.ident == function => Some(f),
                _ => None,
            })
            .unwrap_or_else(|| panic!("no function {function}"));
        let Some(syn::Stmt::Expr(syn::Expr::Match(dispatch), _)) = function.block.stmts.first()
        else {
            panic!("{} does not start with a match", function.sig.ident);
        };
        dispatch
            .arms
            .iter()
            .filter_map(|arm| match &arm.pat {
                syn::Pat::Path(path) => Some(
                    path.path
                        .segments
                        .iter()
                        .map(|s| s.ident.to_string())
                        .collect::<Vec<_>>()
                        .join("::"),
                ),
                _ => None,
            })
            .collect()
    }

    fn expected<'a>(
        table: &'a [MethodRow],
        receives: &[Direction],
        kind: MethodKind,
    ) -> Vec<&'a MethodRow> {
        table
            .iter()
            .filter(|r| r.kind == kind && receives.contains(&r.direction))
            .collect()
    }

    #[test]
    fn every_request_and_notification_row_becomes_one_trait_method_of_the_side_receiving_it() {
        let table = synthetic_table();
        let file = emitted(&model("Server", table.clone())).unwrap();
        for (side, receives) in [
            ("Server", [Direction::ClientToServer, Direction::Both]),
            ("Client", [Direction::ServerToClient, Direction::Both]),
        ] {
            let wanted: Vec<String> = expected(&table, &receives, MethodKind::Request)
                .into_iter()
                .chain(expected(&table, &receives, MethodKind::Notification))
                .map(|r| handler_method_name(&r.name))
                .collect();
            assert_eq!(trait_methods(&file, side), wanted, "trait {side}");
            assert_eq!(
                impl_methods(&file, &format!("Remote{side}")),
                wanted,
                "proxy of {side}"
            );
        }
    }

    #[test]
    fn each_dispatcher_routes_every_row_of_its_side_and_nothing_else() {
        let table = synthetic_table();
        let file = emitted(&model("Agent", table.clone())).unwrap();
        let receives = [Direction::ClientToServer, Direction::Both];
        for (function, kind) in [
            ("dispatch_agent_request", MethodKind::Request),
            ("dispatch_agent_notification", MethodKind::Notification),
        ] {
            let wanted: Vec<String> = expected(&table, &receives, kind)
                .into_iter()
                .map(|r| format!("methods::{}", crate::emit::method_const_name(&r.name)))
                .collect();
            assert_eq!(routed_methods(&file, function), wanted, "{function}");
        }
    }

    #[test]
    fn a_side_that_receives_nothing_gets_no_trait() {
        let table = vec![row(
            "SendMessage",
            Direction::ClientToServer,
            MethodKind::Request,
        )];
        let file = emitted(&model("Agent", table)).unwrap();
        let traits: Vec<String> = file
            .items
            .iter()
            .filter_map(|item| match item {
                syn::Item::Trait(t) => Some(t.ident.to_string()),
                _ => None,
            })
            .collect();
        assert_eq!(traits, ["Agent"]);
    }

    #[test]
    fn a_side_with_a_streaming_method_answers_through_answer_and_its_proxy_yields_a_stream() {
        let mut streaming = row(
            "SendStreamingMessage",
            Direction::ClientToServer,
            MethodKind::Request,
        );
        streaming.streaming = Streaming::Results;
        let table = vec![
            row("GetTask", Direction::ClientToServer, MethodKind::Request),
            streaming,
        ];
        let file = emitted(&model("Agent", table)).unwrap();
        let source = prettyplease::unparse(&file);
        let dispatcher = file
            .items
            .iter()
            .find_map(|item| match item {
                syn::Item::Fn(f) if f.sig.ident == "dispatch_agent_request" => Some(f),
                _ => None,
            })
            .unwrap_or_else(|| panic!("no request dispatcher"));
        let output = &dispatcher.sig.output;
        assert!(
            quote!(#output).to_string().ends_with("Answer"),
            "{}",
            quote!(#output)
        );
        assert!(source.contains("Answer::streaming"), "{source}");
        assert!(
            source.contains("ClientStream<types::SendStreamingMessageResult>"),
            "{source}"
        );
    }

    #[test]
    fn a_client_streaming_or_bidirectional_rpc_gets_no_handler_method_and_no_client_call() {
        let mut live = row(
            "SendLiveMessage",
            Direction::ClientToServer,
            MethodKind::Request,
        );
        live.streaming = Streaming::Both;
        let mut upload = row("Upload", Direction::ClientToServer, MethodKind::Request);
        upload.streaming = Streaming::Params;
        let table = vec![
            row("GetTask", Direction::ClientToServer, MethodKind::Request),
            live,
            upload,
        ];
        let file = emitted(&model("Agent", table)).unwrap();
        assert_eq!(trait_methods(&file, "Agent"), ["get_task"]);
        assert_eq!(impl_methods(&file, "RemoteAgent"), ["get_task"]);
        assert_eq!(
            routed_methods(&file, "dispatch_agent_request"),
            ["methods::GET_TASK"]
        );
    }

    #[test]
    fn handler_method_names_are_the_snake_case_of_the_wire_method() {
        for (wire, handler) in [
            ("tools/call", "tools_call"),
            ("session/request_permission", "session_request_permission"),
            ("SendMessage", "send_message"),
            ("logging/setLevel", "logging_set_level"),
            ("resources/templates/list", "resources_templates_list"),
            ("$/cancel_request", "cancel_request"),
        ] {
            assert_eq!(handler_method_name(wire), handler, "{wire}");
        }
    }

    #[test]
    fn two_wire_methods_sharing_a_handler_name_are_refused() {
        let table = vec![
            row("tools/call", Direction::ClientToServer, MethodKind::Request),
            row("tools_call", Direction::ClientToServer, MethodKind::Request),
        ];
        let outcome = emitted(&model("Server", table));
        assert!(
            matches!(&outcome, Err(CodegenError::Revision { message, .. }) if message.contains("tools_call")),
            "{outcome:?}"
        );
    }
}
