//! The contract between generated protocol crates and the runtime: a method table entry per
//! wire method, typed marker traits a client calls through, the error a method-keyed decode
//! reports, the streaming answer types, and [`RpcClient`], the transport a generated typed
//! client calls through (implemented here for [`Peer`]). Generated code fills these in (through
//! the hidden `codegen` door, which also owns the params/result codec rules); the runtime and
//! protocol crates read them.

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
    /// Only the client sends it.
    ClientToServer,
    /// Only the server sends it.
    ServerToClient,
    /// Either side may send it.
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
    /// A request: the peer answers it.
    Request,
    /// A notification: nothing answers it.
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
    /// Which side sends the method.
    pub direction: Direction,
    /// Whether the method is answered.
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
    /// The method's name on the wire.
    const NAME: &'static str;
    /// The params the request carries.
    type Params: Serialize + DeserializeOwned + Send + 'static;
    /// The result that answers it.
    type Result: Serialize + DeserializeOwned + Send + 'static;
}

/// A notification method known at compile time.
pub trait RpcNotification {
    /// The notification's name on the wire.
    const NAME: &'static str;
    /// The params the notification carries.
    type Params: Serialize + DeserializeOwned + Send + 'static;
}

/// Why a method-keyed decode failed. The two cases answer differently on the wire: an unknown
/// method is JSON-RPC -32601, params that do not fit the method are -32602.
#[derive(Debug, thiserror::Error)]
pub enum DispatchError {
    /// No method of that name on this side (-32601).
    #[error("method not found")]
    UnknownMethod,
    /// The params do not fit the method's type (-32602). The decoder's reason repeats the
    /// caller's input, so it is quoted.
    #[error("invalid params for {method}: {}", crate::quote::quote(source))]
    InvalidParams {
        /// The method whose params these were.
        method: &'static str,
        /// The decoder's error.
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

/// A typed stream a streaming method answers with (A2A's streaming RPCs). An `Err` item is
/// sent as the stream's error; the binding decides whether the stream ends there.
pub type ResultStream<T> = Pin<Box<dyn Stream<Item = Result<T, ErrorObject>> + Send + 'static>>;

/// A [`ResultStream`] serialized for the wire, one [`Reply`] per item.
pub(crate) type ReplyStream = Pin<Box<dyn Stream<Item = Reply> + Send + 'static>>;

/// Serializes each item of a typed answer stream, like [`reply`] does for one answer.
fn reply_stream<T: Serialize + 'static>(stream: ResultStream<T>) -> ReplyStream {
    Box::pin(stream.map(crate::codegen::reply))
}

/// What a generated dispatcher whose side has streaming methods answers: one reply, or a stream
/// of them for the binding to carry (SSE events, or [`crate::Context::send_partial_result`] per
/// item).
pub enum Answer {
    /// One reply: the result or the error.
    Reply(Reply),
    /// A stream of replies, one per item of a streaming method's answer.
    Stream(ReplyStream),
}

impl Answer {
    /// The answer of a unary method.
    pub fn single<T: Serialize>(result: Result<T, ErrorObject>) -> Self {
        Self::Reply(crate::codegen::reply(result))
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
    /// The call's params could not be serialized.
    #[error("the params of {method} could not be serialized")]
    Unserializable {
        /// The method called.
        method: &'static str,
        /// The serializer's error.
        #[source]
        source: serde_json::Error,
    },
    /// The peer answered with this JSON-RPC error.
    #[error("the peer answered with an error: {0}")]
    Rejected(ErrorObject),
    /// The peer's result does not decode as the method's result type.
    #[error("the result of {method} does not fit its type")]
    InvalidResult {
        /// The method called.
        method: &'static str,
        /// The decoder's error.
        #[source]
        source: serde_json::Error,
    },
    /// The transport cannot carry a streaming call.
    #[error("this transport cannot carry streaming calls")]
    StreamingUnsupported,
    /// The transport failed (closed, timed out, unreachable); the source says how.
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

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use bytes::Bytes;
    use tokio::sync::mpsc;

    use super::*;
    use crate::codegen::{decode_result, encode_params};
    use crate::jsonrpc::{DecodeLimits, Message, Response, decode_message};
    use crate::peer::{Conversation, Route};

    fn raw(json: &str) -> Box<RawValue> {
        RawValue::from_string(json.to_owned()).unwrap()
    }

    #[derive(Debug, PartialEq, serde::Deserialize, Serialize)]
    struct Named {
        name: String,
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
}
