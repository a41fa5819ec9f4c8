//! The contract between generated protocol crates and the runtime: a method table entry per
//! wire method, typed marker traits a client calls through, the error a method-keyed decode
//! reports, and what generated services stand on — the params/result codec rules their
//! dispatchers and clients share, the streaming answer types, and [`RpcClient`], the transport a
//! generated typed client calls through (implemented here for [`Peer`]). Generated code fills
//! these in; the runtime only reads them.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use futures::{Stream, StreamExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;

use crate::handler::Reply;
use crate::jsonrpc::ErrorObject;
use crate::peer::{Peer, PeerError};

/// Which peer sends a method. "Client" is the side that opened the connection (an MCP client,
/// an ACP editor, an A2A client); "server" is the side that answers it (MCP server, ACP agent,
/// A2A agent).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Direction {
    ClientToServer,
    ServerToClient,
    Both,
}

impl Direction {
    /// Whether a message in this direction may be sent by the client.
    pub const fn from_client(self) -> bool {
        matches!(self, Self::ClientToServer | Self::Both)
    }

    /// Whether a message in this direction may be sent by the server.
    pub const fn from_server(self) -> bool {
        matches!(self, Self::ServerToClient | Self::Both)
    }
}

/// Whether a method expects an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MethodKind {
    Request,
    Notification,
}

/// One HTTP binding of an RPC (A2A's `google.api.http` annotations).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HttpRoute {
    /// `GET`, `POST`, `PUT`, `PATCH` or `DELETE`.
    pub verb: &'static str,
    /// The path template, e.g. `/tasks/{id=*}` as written in the annotation.
    pub path: &'static str,
    /// The request field bound to the body: `"*"` for the whole message, empty for none.
    pub body: &'static str,
}

/// One row of a revision's method table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MethodSpec {
    /// The name on the wire (`tools/call`, `session/prompt`, `SendMessage`).
    pub name: &'static str,
    pub direction: Direction,
    pub kind: MethodKind,
    /// The Rust type of the params, as a path relative to the revision module; `None` when the
    /// method takes no params at all.
    pub params_type: Option<&'static str>,
    /// Whether params may be omitted.
    pub params_optional: bool,
    /// The Rust type of the result; `None` for notifications.
    pub result_type: Option<&'static str>,
    /// Whether the answer is a stream of results rather than one (A2A streaming RPCs).
    pub streaming: bool,
    /// Whether the params arrive as a stream of messages (a client-streaming or bidirectional
    /// rpc). Neither JSON-RPC nor REST can carry such a method today: its row has `json_rpc`
    /// false and no `http` routes, and no generated handler answers it.
    pub client_streaming: bool,
    /// Whether JSON-RPC carries the method.
    pub json_rpc: bool,
    /// HTTP bindings; the first is the primary one. Empty for protocols without REST.
    pub http: &'static [HttpRoute],
}

/// A request method known at compile time: its wire name and the types on each side.
pub trait RpcMethod {
    const NAME: &'static str;
    type Params: Serialize + DeserializeOwned + Send + 'static;
    type Result: Serialize + DeserializeOwned + Send + 'static;
}

/// A notification method known at compile time.
pub trait RpcNotification {
    const NAME: &'static str;
    type Params: Serialize + DeserializeOwned + Send + 'static;
}

/// Why a method-keyed decode failed. The two cases answer differently on the wire: an unknown
/// method is JSON-RPC -32601, params that do not fit the method are -32602.
#[derive(Debug, thiserror::Error)]
pub enum DispatchError {
    #[error("method not found")]
    UnknownMethod,
    /// The decoder's reason repeats the caller's input, so it is quoted.
    #[error("invalid params for {method}: {}", crate::quote::quote(source))]
    InvalidParams {
        method: &'static str,
        #[source]
        source: serde_json::Error,
    },
}

impl DispatchError {
    /// The JSON-RPC error code this failure answers with.
    pub const fn code(&self) -> i64 {
        match self {
            Self::UnknownMethod => -32601,
            Self::InvalidParams { .. } => -32602,
        }
    }
}

impl DispatchError {
    /// The JSON-RPC error this failure answers with. The message names the method, never the
    /// input, so a bad request cannot make the server echo attacker-chosen text.
    pub fn to_error_object(&self) -> ErrorObject {
        match self {
            Self::UnknownMethod => ErrorObject::method_not_found(),
            Self::InvalidParams { method, .. } => {
                ErrorObject::invalid_params(format!("invalid params for {method}"))
            }
        }
    }
}

impl From<DispatchError> for ErrorObject {
    fn from(error: DispatchError) -> Self {
        error.to_error_object()
    }
}

/// Decodes the params of `method`; absent params decode as `null`, so a method whose params are
/// required refuses them with -32602.
pub fn decode_params<T: DeserializeOwned>(
    method: &'static str,
    params: Option<&RawValue>,
) -> Result<T, DispatchError> {
    let text = params.map_or("null", RawValue::get);
    serde_json::from_str(text).map_err(|source| DispatchError::InvalidParams { method, source })
}

/// Decodes the params of a method whose params may be omitted: absent and `null` are `None`.
pub fn decode_optional_params<T: DeserializeOwned>(
    method: &'static str,
    params: Option<&RawValue>,
) -> Result<Option<T>, DispatchError> {
    match params {
        Some(raw) if raw.get() != "null" => decode_params(method, Some(raw)).map(Some),
        _ => Ok(None),
    }
}

/// Serializes a handler's typed answer into the runtime's [`Reply`]. A result that cannot be
/// serialized is the server's fault: -32603, logged, its content never sent.
pub fn reply<T: Serialize>(result: Result<T, ErrorObject>) -> Reply {
    let value = result?;
    serde_json::value::to_raw_value(&value).map_err(|error| {
        tracing::error!(%error, "a handler result could not be serialized");
        ErrorObject::internal_error()
    })
}

/// A typed stream a streaming method answers with (A2A's streaming RPCs). An `Err` item is
/// sent as the stream's error; the binding decides whether the stream ends there.
pub type ResultStream<T> = Pin<Box<dyn Stream<Item = Result<T, ErrorObject>> + Send + 'static>>;

/// A [`ResultStream`] serialized for the wire, one [`Reply`] per item.
pub type ReplyStream = Pin<Box<dyn Stream<Item = Reply> + Send + 'static>>;

/// Serializes each item of a typed answer stream, like [`reply`] does for one answer.
pub fn reply_stream<T: Serialize + 'static>(stream: ResultStream<T>) -> ReplyStream {
    Box::pin(stream.map(reply))
}

/// What a generated dispatcher whose side has streaming methods answers: one reply, or a stream
/// of them for the binding to carry (SSE events, or [`crate::Context::send_partial_result`] per
/// item).
pub enum Answer {
    Reply(Reply),
    Stream(ReplyStream),
}

impl Answer {
    /// The answer of a unary method.
    pub fn single<T: Serialize>(result: Result<T, ErrorObject>) -> Self {
        Self::Reply(reply(result))
    }

    /// The answer of a streaming method: its stream, or the error that refused it up front.
    pub fn streaming<T: Serialize + 'static>(result: Result<ResultStream<T>, ErrorObject>) -> Self {
        match result {
            Ok(stream) => Self::Stream(reply_stream(stream)),
            Err(error) => Self::Reply(Err(error)),
        }
    }
}

impl std::fmt::Debug for Answer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Reply(reply) => f.debug_tuple("Reply").field(reply).finish(),
            Self::Stream(_) => f.write_str("Stream(..)"),
        }
    }
}

/// Why a typed client call failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("the params of {method} could not be serialized")]
    Unserializable {
        method: &'static str,
        #[source]
        source: serde_json::Error,
    },
    #[error("the peer answered with an error: {0}")]
    Rejected(ErrorObject),
    #[error("the result of {method} does not fit its type")]
    InvalidResult {
        method: &'static str,
        #[source]
        source: serde_json::Error,
    },
    #[error("this transport cannot carry streaming calls")]
    StreamingUnsupported,
    #[error("the transport failed: {0}")]
    Transport(#[source] Box<dyn std::error::Error + Send + Sync>),
}

impl From<PeerError> for ClientError {
    fn from(error: PeerError) -> Self {
        match error {
            PeerError::Rejected(error) => Self::Rejected(error),
            other => Self::Transport(Box::new(other)),
        }
    }
}

/// The raw answers of a streaming call, as a transport yields them.
pub type RawResultStream =
    Pin<Box<dyn Stream<Item = Result<Box<RawValue>, ClientError>> + Send + 'static>>;

/// A typed stream of a streaming call's answers, as a generated client yields them.
pub type ClientStream<T> = Pin<Box<dyn Stream<Item = Result<T, ClientError>> + Send + 'static>>;

/// What a generated typed client calls through: one JSON-RPC exchange per call, params and
/// results raw. Implemented for [`Peer`] (calls back to the peer from inside a handler); the
/// protocol crates implement it over HTTP and stdio.
pub trait RpcClient: Send + Sync {
    /// Sends a request and waits for its result.
    fn call(
        &self,
        method: &'static str,
        params: Option<Box<RawValue>>,
    ) -> impl Future<Output = Result<Box<RawValue>, ClientError>> + Send;

    /// Sends a notification.
    fn notify(
        &self,
        method: &'static str,
        params: Option<Box<RawValue>>,
    ) -> impl Future<Output = Result<(), ClientError>> + Send;

    /// Sends a request answered by a stream of results; transports without streaming refuse.
    fn call_streaming(
        &self,
        method: &'static str,
        params: Option<Box<RawValue>>,
    ) -> impl Future<Output = Result<RawResultStream, ClientError>> + Send {
        let _ = (method, params);
        std::future::ready(Err(ClientError::StreamingUnsupported))
    }
}

impl<T: RpcClient + ?Sized> RpcClient for &T {
    fn call(
        &self,
        method: &'static str,
        params: Option<Box<RawValue>>,
    ) -> impl Future<Output = Result<Box<RawValue>, ClientError>> + Send {
        (**self).call(method, params)
    }

    fn notify(
        &self,
        method: &'static str,
        params: Option<Box<RawValue>>,
    ) -> impl Future<Output = Result<(), ClientError>> + Send {
        (**self).notify(method, params)
    }

    fn call_streaming(
        &self,
        method: &'static str,
        params: Option<Box<RawValue>>,
    ) -> impl Future<Output = Result<RawResultStream, ClientError>> + Send {
        (**self).call_streaming(method, params)
    }
}

impl<T: RpcClient + ?Sized> RpcClient for Arc<T> {
    fn call(
        &self,
        method: &'static str,
        params: Option<Box<RawValue>>,
    ) -> impl Future<Output = Result<Box<RawValue>, ClientError>> + Send {
        (**self).call(method, params)
    }

    fn notify(
        &self,
        method: &'static str,
        params: Option<Box<RawValue>>,
    ) -> impl Future<Output = Result<(), ClientError>> + Send {
        (**self).notify(method, params)
    }

    fn call_streaming(
        &self,
        method: &'static str,
        params: Option<Box<RawValue>>,
    ) -> impl Future<Output = Result<RawResultStream, ClientError>> + Send {
        (**self).call_streaming(method, params)
    }
}

/// Calls back to the peer on the current request's stream (or the session's), so the same
/// generated client serves server→client calls from inside a handler.
impl RpcClient for Peer {
    async fn call(
        &self,
        method: &'static str,
        params: Option<Box<RawValue>>,
    ) -> Result<Box<RawValue>, ClientError> {
        Ok(self.request(method, &params).await?)
    }

    async fn notify(
        &self,
        method: &'static str,
        params: Option<Box<RawValue>>,
    ) -> Result<(), ClientError> {
        Ok(Peer::notify(self, method, &params)?)
    }
}

/// Serializes a call's params; `None` and values serializing to `null` send no params.
pub fn encode_params<P: Serialize>(
    method: &'static str,
    params: &P,
) -> Result<Option<Box<RawValue>>, ClientError> {
    let raw = serde_json::value::to_raw_value(params)
        .map_err(|source| ClientError::Unserializable { method, source })?;
    Ok((raw.get() != "null").then_some(raw))
}

/// Decodes the result of the request `method` it answers.
pub fn decode_result<T: DeserializeOwned>(
    method: &'static str,
    result: &RawValue,
) -> Result<T, ClientError> {
    serde_json::from_str(result.get())
        .map_err(|source| ClientError::InvalidResult { method, source })
}

/// Decodes each raw answer of a streaming call as the result type of `method`.
pub fn decode_stream<T: DeserializeOwned + 'static>(
    method: &'static str,
    stream: RawResultStream,
) -> ClientStream<T> {
    Box::pin(stream.map(move |item| item.and_then(|raw| decode_result(method, &raw))))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use bytes::Bytes;
    use tokio::sync::mpsc;

    use super::*;

    #[test]
    fn invalid_params_quote_the_decoders_reason_bounded_and_name_the_method_once() {
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        enum Kind {
            Small,
        }
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct Params {
            kind: Kind,
        }
        let value = "v".repeat(100);
        let params = raw(&format!(r#"{{"kind":"{value}"}}"#));
        let error = decode_params::<Params>("tools/call", Some(&params)).unwrap_err();
        let text = error.to_string();
        assert!(!text.contains(&value), "{text}");
        assert_eq!(text.matches("tools/call").count(), 1, "{text}");
        let quoted = text
            .strip_prefix("invalid params for tools/call: `")
            .and_then(|rest| rest.strip_suffix('`'))
            .unwrap_or_else(|| panic!("not quoted: {text}"));
        assert!(quoted.len() <= crate::quote::MAX_QUOTED_BYTES, "{quoted}");
        assert_eq!(
            error.to_error_object().message,
            "invalid params for tools/call"
        );
    }
    use crate::jsonrpc::{DecodeLimits, Message, Response, decode_message};
    use crate::peer::{Conversation, Route};

    fn raw(json: &str) -> Box<RawValue> {
        RawValue::from_string(json.to_owned()).unwrap()
    }

    #[derive(Debug, PartialEq, serde::Deserialize, Serialize)]
    struct Named {
        name: String,
    }

    #[test]
    fn absent_required_params_are_invalid_params_naming_the_method_not_the_input() {
        let absent = decode_params::<Named>("tools/call", None).map_err(ErrorObject::from);
        let hostile = decode_params::<Named>("tools/call", Some(&raw(r#"{"nom":"<script>"}"#)))
            .map_err(ErrorObject::from);
        assert_eq!(absent.map_err(|e| e.code), Err(-32602));
        let error = hostile.err().unwrap();
        assert_eq!(error.code, -32602);
        assert_eq!(error.message, "invalid params for tools/call");
        assert!(error.data.is_none());
    }

    #[test]
    fn optional_params_read_absent_and_null_as_none() {
        assert_eq!(decode_optional_params::<Named>("m", None).ok(), Some(None));
        assert_eq!(
            decode_optional_params::<Named>("m", Some(&raw("null"))).ok(),
            Some(None)
        );
        let present = decode_optional_params::<Named>("m", Some(&raw(r#"{"name":"a"}"#)));
        assert_eq!(present.ok(), Some(Some(Named { name: "a".into() })));
        assert!(decode_optional_params::<Named>("m", Some(&raw("[]"))).is_err());
    }

    #[test]
    fn a_reply_is_the_serialized_result_or_the_handlers_error() {
        let ok = reply(Ok(Named { name: "a".into() })).map(|raw| raw.get().to_owned());
        assert_eq!(ok.as_deref(), Ok(r#"{"name":"a"}"#));
        let refused = reply::<Named>(Err(ErrorObject::method_not_found()));
        assert_eq!(refused.map(|_| ()), Err(ErrorObject::method_not_found()));
    }

    #[test]
    fn params_serializing_to_null_are_sent_as_no_params() {
        assert!(encode_params("m", &None::<Named>).unwrap().is_none());
        let some = encode_params("m", &Named { name: "a".into() }).unwrap();
        assert_eq!(
            some.map(|raw| raw.get().to_owned()).as_deref(),
            Some(r#"{"name":"a"}"#)
        );
    }

    fn read(bytes: &Bytes) -> Message {
        decode_message(bytes, &DecodeLimits::default()).unwrap()
    }

    #[tokio::test]
    async fn a_peer_carries_a_client_call_and_its_answer_and_a_rejection_stays_typed() {
        let (sender, mut sent) = mpsc::channel(16);
        let conversation = Arc::new(Conversation::new());
        let peer = Peer::new(
            Route::Lines(sender),
            Some(Arc::clone(&conversation)),
            Duration::from_secs(5),
            None,
        );
        let client = Arc::new(peer);
        let calling = Arc::clone(&client);
        let call = tokio::spawn(async move {
            RpcClient::call(
                &calling,
                "roots/list",
                encode_params("roots/list", &None::<Named>)?,
            )
            .await
        });
        let Message::Request(request) = read(&sent.recv().await.unwrap()) else {
            panic!("no request was sent");
        };
        assert_eq!(request.method, "roots/list");
        assert!(request.params.is_none());
        conversation.answer(Response::success(request.id, raw(r#"{"name":"r"}"#)));
        let answer = call.await.unwrap().unwrap();
        assert_eq!(
            decode_result::<Named>("roots/list", &answer).unwrap().name,
            "r"
        );

        let rejected = tokio::spawn(async move { client.call("ping", None).await });
        let Message::Request(request) = read(&sent.recv().await.unwrap()) else {
            panic!("no request was sent");
        };
        conversation.answer(Response::error(
            Some(request.id),
            ErrorObject::method_not_found(),
        ));
        let outcome = rejected.await.unwrap();
        assert!(matches!(outcome, Err(ClientError::Rejected(e)) if e.code == -32601));
    }

    #[tokio::test]
    async fn a_peer_sends_a_client_notification_on_its_stream() {
        let (sender, mut sent) = mpsc::channel(16);
        let peer = Peer::new(Route::Lines(sender), None, Duration::from_secs(1), None);
        let params = encode_params("n", &Named { name: "a".into() }).unwrap();
        RpcClient::notify(&peer, "notifications/message", params)
            .await
            .unwrap();
        let Message::Notification(notification) = read(&sent.recv().await.unwrap()) else {
            panic!("no notification was sent");
        };
        assert_eq!(notification.method, "notifications/message");
        assert_eq!(
            notification.params.map(|p| p.get().to_owned()).as_deref(),
            Some(r#"{"name":"a"}"#)
        );
    }

    #[test]
    fn a_result_that_does_not_fit_its_method_is_an_invalid_result() {
        let outcome = decode_result::<Named>("tools/call", &raw("[1]"));
        assert!(matches!(
            outcome,
            Err(ClientError::InvalidResult {
                method: "tools/call",
                ..
            })
        ));
    }
}
