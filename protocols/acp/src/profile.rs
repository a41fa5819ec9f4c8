//! What ACP declares to the runtime: its HTTP headers (after upstream's draft Streamable HTTP
//! RFD: `Acp-Connection-Id` names the connection `initialize` opens, `Acp-Session-Id` the ACP
//! session a request is about, `Acp-Protocol-Version` the negotiated version), how requests
//! in flight are cancelled (`$/cancel_request`, answered with -32800), and ACP's own error for a
//! session it does not know (-32002, Resource not found), and its framing of a message as one
//! line, which the serving and the client transports share.

use http::{HeaderMap, HeaderName};
use protocols_runtime::handler::Profile;
use protocols_runtime::jsonrpc::{ErrorObject, Message};
use protocols_runtime::peer::{CancelConvention, CancelReply};
use protocols_runtime::quote::quote;
use serde_json::Value;

/// The transport-level connection, opened by `initialize` (the runtime's session).
pub const CONNECTION_HEADER: HeaderName = HeaderName::from_static("acp-connection-id");
/// The ACP session a request concerns; when sent it must agree with the params.
pub const SESSION_HEADER: HeaderName = HeaderName::from_static("acp-session-id");
/// The protocol version the client negotiated.
pub const PROTOCOL_VERSION_HEADER: HeaderName = HeaderName::from_static("acp-protocol-version");

/// ACP's JSON-RPC error for a request the peer cancelled.
pub const REQUEST_CANCELLED: i64 = -32800;
/// ACP's JSON-RPC error for a resource (a session, a file) that does not exist.
pub const RESOURCE_NOT_FOUND: i64 = -32002;

/// The refusal of a request naming a session the agent does not know (never opened, or
/// forgotten), as ACP's error docs answer it: -32002, the id quoted by the one rule.
pub fn session_not_found(session_id: &str) -> ErrorObject {
    ErrorObject::new(
        RESOURCE_NOT_FOUND,
        format!("Resource not found: session {}", quote(session_id)),
    )
}

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

/// `text` as one newline-terminated line.
pub(crate) fn one_line(text: &str) -> Vec<u8> {
    text.bytes()
        .map(|byte| {
            if matches!(byte, b'\n' | b'\r') {
                b' '
            } else {
                byte
            }
        })
        .chain(std::iter::once(b'\n'))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocols_runtime::jsonrpc::{DecodeLimits, decode_message};

    fn prompt(session_id: &str) -> Vec<Message> {
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{{"sessionId":"{session_id}","prompt":[]}}}}"#
        );
        decode_message(body.as_bytes(), &DecodeLimits::default())
            .map(|message| vec![message])
            .unwrap_or_default()
    }

    fn headers(session: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        if let Ok(value) = session.parse() {
            headers.insert(SESSION_HEADER, value);
        }
        headers
    }

    #[test]
    fn a_session_header_naming_another_session_than_the_params_is_refused() {
        assert!(session_header_conflict(&prompt("a"), &headers("b")).is_some());
    }

    #[test]
    fn an_unknown_session_is_resource_not_found_quoting_its_id_once_and_bounded() {
        let error = session_not_found("s-1");
        assert_eq!(error.code, RESOURCE_NOT_FOUND);
        assert_eq!(error.message, "Resource not found: session `s-1`");
        let long = format!("{}\n", "x".repeat(10_000));
        let message = session_not_found(&long).message;
        assert!(message.len() < 100, "the id is quoted bounded: {message}");
        assert!(!message.contains('\n'), "control characters are escaped");
        assert_eq!(message.matches("session").count(), 1);
    }

    #[test]
    fn a_matching_or_absent_session_header_is_admitted() {
        assert!(session_header_conflict(&prompt("a"), &headers("a")).is_none());
        assert!(session_header_conflict(&prompt("a"), &HeaderMap::new()).is_none());
    }
}
