//! The contract between generated protocol crates and the runtime: a method table entry per
//! wire method, typed marker traits a client calls through, and the error a method-keyed decode
//! reports. Generated code fills these in; the runtime only reads them.

use serde::Serialize;
use serde::de::DeserializeOwned;

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
    #[error("invalid params for {method}: {source}")]
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
