//! What ACP declares to the runtime: its HTTP headers (after upstream's draft Streamable HTTP
//! RFD: `Acp-Connection-Id` names the connection `initialize` opens, `Acp-Session-Id` the ACP
//! session a request is about, `Acp-Protocol-Version` the negotiated version) and how requests
//! in flight are cancelled (`$/cancel_request`, answered with -32800).

use http::{HeaderMap, HeaderName};
use protocols_runtime::handler::Profile;
use protocols_runtime::jsonrpc::{ErrorObject, Message};
use protocols_runtime::peer::{CancelConvention, CancelReply};
use serde_json::Value;

/// The transport-level connection, opened by `initialize` (the runtime's session).
pub const CONNECTION_HEADER: HeaderName = HeaderName::from_static("acp-connection-id");
/// The ACP session a request concerns; when sent it must agree with the params.
pub const SESSION_HEADER: HeaderName = HeaderName::from_static("acp-session-id");
/// The protocol version the client negotiated.
pub const PROTOCOL_VERSION_HEADER: HeaderName = HeaderName::from_static("acp-protocol-version");

/// ACP's JSON-RPC error for a request the peer cancelled.
pub const REQUEST_CANCELLED: i64 = -32800;

/// `$/cancel_request { requestId }`, both ways.
pub const CANCEL_REQUEST: CancelConvention = CancelConvention {
    method: "$/cancel_request",
    id_field: "requestId",
    reply: CancelReply::Error(REQUEST_CANCELLED),
};

/// The profile both sides of an ACP connection are served with.
pub fn acp_profile() -> Profile {
    Profile::new()
        .with_session_header(CONNECTION_HEADER)
        .with_version_header(PROTOCOL_VERSION_HEADER)
        .with_cancellation(CANCEL_REQUEST)
}

/// A refusal when the `Acp-Session-Id` header names another session than a message's params.
pub fn session_header_conflict(messages: &[Message], headers: &HeaderMap) -> Option<ErrorObject> {
    let header = headers.get(&SESSION_HEADER)?.to_str().ok()?;
    let conflicts = messages.iter().any(|message| {
        let params = match message {
            Message::Request(request) => request.params.as_deref(),
            Message::Notification(notification) => notification.params.as_deref(),
            Message::Response(_) => None,
        };
        params
            .and_then(|raw| serde_json::from_str::<Value>(raw.get()).ok())
            .and_then(|params| {
                params
                    .get("sessionId")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            })
            .is_some_and(|session_id| session_id != header)
    });
    conflicts.then(|| ErrorObject::invalid_request("Acp-Session-Id disagrees with the params"))
}
