//! The A2A errors a server answers with, and the one mapping from each to its JSON-RPC code, its
//! HTTP status on either binding and the `google.rpc` details (`ErrorInfo` with its reason, and
//! `RetryInfo` when retrying later may succeed) both bindings carry.
//!
//! A variant's text is the whole message a caller reads, built once by the constructors below,
//! which quote any value the caller sent through [`protocols_runtime::quote`] and name it once;
//! an error read back from the wire keeps the message it came with, so relaying an error never
//! wraps its message in a second one.

use std::time::Duration;

#[cfg(feature = "server")]
use axum::response::{IntoResponse, Response};
use http::StatusCode;
#[cfg(feature = "server")]
use http::{HeaderValue, header};
use protocols_runtime::ErrorObject;
use protocols_runtime::hardening::Refusal;
use protocols_runtime::quote;
use serde_json::{Value, json};

/// Every failure an A2A operation reports to its caller.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum A2aError {
    /// No task with that id (for this caller).
    #[error("{0}")]
    TaskNotFound(String),
    /// The task is in a state that cannot be cancelled.
    #[error("{0}")]
    TaskNotCancelable(String),
    /// The agent does not send push notifications.
    #[error("push notifications are not supported")]
    PushNotificationNotSupported,
    /// The agent does not support the operation.
    #[error("{0}")]
    UnsupportedOperation(String),
    /// A part's media type is not one the agent accepts.
    #[error("{0}")]
    ContentTypeNotSupported(String),
    /// The agent produced a response that is not valid A2A.
    #[error("the agent produced an invalid response")]
    InvalidAgentResponse,
    /// An extended card was asked for and none is configured.
    #[error("no extended agent card is configured")]
    ExtendedAgentCardNotConfigured,
    /// The request needs an extension the client did not declare.
    #[error("{0}")]
    ExtensionSupportRequired(String),
    /// The requested protocol version is not served.
    #[error("{0}")]
    VersionNotSupported(String),
    /// The params do not fit the method.
    #[error("{0}")]
    InvalidParams(String),
    /// The request is not a valid A2A request.
    #[error("{0}")]
    InvalidRequest(String),
    /// No such method.
    #[error("method not found")]
    MethodNotFound,
    /// The operation needs an authenticated caller.
    #[error("authentication required")]
    Unauthenticated,
    /// A bound on what one caller (or one task) may keep is reached; retrying after the given
    /// wait may succeed, once some of it has finished or expired.
    #[error("{message}")]
    ResourceExhausted {
        /// What is exhausted, for the caller.
        message: String,
        /// Seconds after which a retry may succeed.
        retry_after: u64,
    },
    /// The agent as a whole is at capacity.
    #[error("{message}")]
    Unavailable {
        /// Why the agent is unavailable, for the caller.
        message: String,
        /// Seconds after which a retry may succeed.
        retry_after: u64,
    },
    /// The transport refused the request before any operation ran (a wrong HTTP method or
    /// media type, a body that is no JSON); answered in the binding's own error shape.
    #[error("{}", .0.message())]
    Refused(Refusal),
    /// The agent failed; details go to the log, not to the caller.
    #[error("internal error")]
    Internal,
}

/// A task store that failed or could not be reached: the agent is unavailable for now (a
/// `503`, with a JSON-RPC body on that binding), never "task not found", since the task may
/// well exist.
impl From<protocols_runtime::store::StoreError> for A2aError {
    fn from(error: protocols_runtime::store::StoreError) -> Self {
        tracing::warn!(%error, "the task store failed");
        Self::unavailable("the task store cannot be reached", Duration::from_secs(1))
    }
}

/// The `domain` of every `ErrorInfo` this server emits.
const ERROR_DOMAIN: &str = "a2a-protocol.org";
const ERROR_INFO_TYPE: &str = "type.googleapis.com/google.rpc.ErrorInfo";
const RETRY_INFO_TYPE: &str = "type.googleapis.com/google.rpc.RetryInfo";

impl A2aError {
    /// No task `id` exists (or is visible to the caller).
    pub fn task_not_found(id: &str) -> Self {
        Self::TaskNotFound(format!("task {} not found", quote(id)))
    }

    /// Task `id` is in `state` (a state name, not a caller's value) and cannot be canceled.
    pub fn task_not_cancelable(id: &str, state: &str) -> Self {
        Self::TaskNotCancelable(format!(
            "task {} is {state} and cannot be canceled",
            quote(id)
        ))
    }

    /// The A2A version the caller named is not one this agent speaks.
    pub fn version_not_supported(version: &str) -> Self {
        Self::VersionNotSupported(format!("A2A version {} is not supported", quote(version)))
    }

    /// The params are not acceptable; `why` is this server's own text.
    pub fn invalid_params(why: impl Into<String>) -> Self {
        Self::InvalidParams(why.into())
    }

    /// A REQUIRED field is absent (or empty).
    pub fn missing(field: &str) -> Self {
        Self::InvalidParams(format!("{field} is required"))
    }

    /// A bound on one caller's (or one task's) share is reached.
    pub fn exhausted(what: &str, retry_after: Duration) -> Self {
        Self::ResourceExhausted {
            message: format!("{what}; retry later"),
            retry_after: retry_after.as_secs().max(1),
        }
    }

    /// The agent's own capacity is reached.
    pub fn unavailable(what: &str, retry_after: Duration) -> Self {
        Self::Unavailable {
            message: format!("{what}; retry later"),
            retry_after: retry_after.as_secs().max(1),
        }
    }

    /// The JSON-RPC error code (A2A's -32001…-32009, or JSON-RPC's own).
    pub const fn code(&self) -> i64 {
        match self {
            Self::TaskNotFound(_) => -32001,
            Self::TaskNotCancelable(_) => -32002,
            Self::PushNotificationNotSupported => -32003,
            Self::UnsupportedOperation(_) => -32004,
            Self::ContentTypeNotSupported(_) => -32005,
            Self::InvalidAgentResponse => -32006,
            Self::ExtendedAgentCardNotConfigured => -32007,
            Self::ExtensionSupportRequired(_) => -32008,
            Self::VersionNotSupported(_) => -32009,
            Self::InvalidParams(_) => -32602,
            Self::InvalidRequest(_) | Self::Unauthenticated => -32600,
            Self::MethodNotFound => -32601,
            // A system error (spec §3.3.2): JSON-RPC has no code of its own for "later".
            Self::ResourceExhausted { .. } | Self::Unavailable { .. } | Self::Internal => -32603,
            Self::Refused(refusal) => refusal_code(refusal),
        }
    }

    /// The HTTP status on the HTTP+JSON binding.
    pub const fn status(&self) -> StatusCode {
        match self {
            Self::TaskNotFound(_) | Self::MethodNotFound => StatusCode::NOT_FOUND,
            Self::Unauthenticated => StatusCode::UNAUTHORIZED,
            Self::ResourceExhausted { .. } => StatusCode::TOO_MANY_REQUESTS,
            Self::Unavailable { .. } => StatusCode::SERVICE_UNAVAILABLE,
            Self::InvalidAgentResponse | Self::Internal => StatusCode::INTERNAL_SERVER_ERROR,
            Self::Refused(refusal) => refusal.status(),
            _ => StatusCode::BAD_REQUEST,
        }
    }

    /// The HTTP status of a JSON-RPC answer carrying this error: a protocol error is a `200`
    /// there (as the official SDKs answer), but a bound reached is the `429` or `503` a client's
    /// HTTP stack knows to back off from.
    pub const fn json_rpc_status(&self) -> Option<StatusCode> {
        match self {
            Self::ResourceExhausted { .. } | Self::Unavailable { .. } => Some(self.status()),
            _ => None,
        }
    }

    /// Seconds after which retrying may succeed, for the errors that say so.
    pub const fn retry_after(&self) -> Option<u64> {
        match self {
            Self::ResourceExhausted { retry_after, .. } | Self::Unavailable { retry_after, .. } => {
                Some(*retry_after)
            }
            Self::Refused(Refusal::RateLimited { retry_after_secs }) => Some(*retry_after_secs),
            _ => None,
        }
    }

    /// The `google.rpc.Code` name matching [`Self::status`].
    const fn rpc_status(&self) -> &'static str {
        match self {
            Self::TaskNotFound(_) | Self::MethodNotFound => "NOT_FOUND",
            Self::Unauthenticated => "UNAUTHENTICATED",
            Self::ResourceExhausted { .. } => "RESOURCE_EXHAUSTED",
            Self::Unavailable { .. } => "UNAVAILABLE",
            Self::InvalidAgentResponse | Self::Internal => "INTERNAL",
            Self::InvalidParams(_) | Self::InvalidRequest(_) | Self::ContentTypeNotSupported(_) => {
                "INVALID_ARGUMENT"
            }
            Self::Refused(refusal) => match refusal.status().as_u16() {
                404 => "NOT_FOUND",
                405 => "UNIMPLEMENTED",
                401 => "UNAUTHENTICATED",
                403 => "PERMISSION_DENIED",
                429 => "RESOURCE_EXHAUSTED",
                503 => "UNAVAILABLE",
                500..=599 => "INTERNAL",
                _ => "INVALID_ARGUMENT",
            },
            _ => "FAILED_PRECONDITION",
        }
    }

    /// The `ErrorInfo.reason` a client maps back to the typed error.
    pub const fn reason(&self) -> &'static str {
        match self {
            Self::TaskNotFound(_) => "TASK_NOT_FOUND",
            Self::TaskNotCancelable(_) => "TASK_NOT_CANCELABLE",
            Self::PushNotificationNotSupported => "PUSH_NOTIFICATION_NOT_SUPPORTED",
            Self::UnsupportedOperation(_) => "UNSUPPORTED_OPERATION",
            Self::ContentTypeNotSupported(_) => "CONTENT_TYPE_NOT_SUPPORTED",
            Self::InvalidAgentResponse => "INVALID_AGENT_RESPONSE",
            Self::ExtendedAgentCardNotConfigured => "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
            Self::ExtensionSupportRequired(_) => "EXTENSION_SUPPORT_REQUIRED",
            Self::VersionNotSupported(_) => "VERSION_NOT_SUPPORTED",
            Self::InvalidParams(_) => "INVALID_PARAMS",
            Self::InvalidRequest(_) => "INVALID_REQUEST",
            Self::MethodNotFound => "METHOD_NOT_FOUND",
            Self::Unauthenticated => "UNAUTHENTICATED",
            Self::ResourceExhausted { .. } => "RESOURCE_EXHAUSTED",
            Self::Unavailable { .. } => "UNAVAILABLE",
            Self::Internal => "INTERNAL_ERROR",
            Self::Refused(refusal) => match refusal_code(refusal) {
                -32601 => "METHOD_NOT_FOUND",
                -32603 => "INTERNAL_ERROR",
                _ => "INVALID_REQUEST",
            },
        }
    }

    /// The typed detail objects (spec §3.3.2, §9.5): an `ErrorInfo` naming the reason, then a
    /// `RetryInfo` when the error says when to retry.
    pub fn details(&self) -> Value {
        let mut details = vec![json!({
            "@type": ERROR_INFO_TYPE,
            "reason": self.reason(),
            "domain": ERROR_DOMAIN,
        })];
        if let Some(seconds) = self.retry_after() {
            details.push(json!({"@type": RETRY_INFO_TYPE, "retryDelay": format!("{seconds}s")}));
        }
        Value::Array(details)
    }

    /// The JSON-RPC error object; its `data` is [`Self::details`], so the typed error survives.
    pub fn to_error_object(&self) -> ErrorObject {
        ErrorObject::new(self.code(), self.to_string()).with_data(self.details())
    }

    /// The HTTP+JSON error body: a `google.rpc.Status` carrying [`Self::details`].
    pub fn to_rest_body(&self) -> Value {
        json!({
            "error": {
                "code": self.status().as_u16(),
                "status": self.rpc_status(),
                "message": self.to_string(),
                "details": self.details(),
            }
        })
    }

    /// The 0.3 HTTP+JSON error body: the JSON-RPC error object itself, as 0.3 clients read it.
    pub fn to_legacy_rest_body(&self) -> Value {
        json!({"code": self.code(), "message": self.to_string(), "data": self.details()})
    }

    /// Reads an error back from a JSON-RPC error object (the client side, and a relayed
    /// error); its message is kept as it came.
    pub fn from_error_object(error: &ErrorObject) -> Self {
        let message = error.message.to_string();
        let details = error.data.as_ref();
        Self::from_details(details, &message).unwrap_or(match error.code {
            -32001 => Self::TaskNotFound(message),
            -32002 => Self::TaskNotCancelable(message),
            -32003 => Self::PushNotificationNotSupported,
            -32004 => Self::UnsupportedOperation(message),
            -32005 => Self::ContentTypeNotSupported(message),
            -32006 => Self::InvalidAgentResponse,
            -32007 => Self::ExtendedAgentCardNotConfigured,
            -32008 => Self::ExtensionSupportRequired(message),
            -32009 => Self::VersionNotSupported(message),
            -32602 => Self::InvalidParams(message),
            -32601 => Self::MethodNotFound,
            -32600 => Self::InvalidRequest(message),
            _ => Self::Internal,
        })
    }

    /// Reads an error back from an HTTP+JSON error body by its `ErrorInfo.reason`.
    pub fn from_rest_body(status: StatusCode, body: &Value) -> Self {
        let error = body.get("error").unwrap_or(&Value::Null);
        let message = error
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or_default();
        Self::from_details(error.get("details"), message).unwrap_or(match status {
            StatusCode::UNAUTHORIZED => Self::Unauthenticated,
            StatusCode::NOT_FOUND => Self::MethodNotFound,
            _ => Self::Internal,
        })
    }

    /// The error the details name: the first `ErrorInfo.reason` (also read from the object
    /// form earlier servers sent), with any `RetryInfo` wait.
    fn from_details(details: Option<&Value>, message: &str) -> Option<Self> {
        let details = details?;
        let listed = details.as_array().map(Vec::as_slice).unwrap_or_default();
        let reason = listed
            .iter()
            .chain(std::iter::once(details))
            .find_map(|detail| detail.get("reason")?.as_str())?;
        let retry_after = listed
            .iter()
            .find_map(|detail| detail.get("retryDelay")?.as_str())
            .and_then(|delay| delay.trim_end_matches('s').parse::<f64>().ok())
            .map_or(1, |seconds| seconds.ceil() as u64);
        Self::from_reason(reason, message, retry_after)
    }

    /// The error an `ErrorInfo.reason` names.
    fn from_reason(reason: &str, message: &str, retry_after: u64) -> Option<Self> {
        let message = message.to_owned();
        Some(match reason {
            "TASK_NOT_FOUND" => Self::TaskNotFound(message),
            "TASK_NOT_CANCELABLE" => Self::TaskNotCancelable(message),
            "PUSH_NOTIFICATION_NOT_SUPPORTED" => Self::PushNotificationNotSupported,
            "UNSUPPORTED_OPERATION" => Self::UnsupportedOperation(message),
            "CONTENT_TYPE_NOT_SUPPORTED" => Self::ContentTypeNotSupported(message),
            "INVALID_AGENT_RESPONSE" => Self::InvalidAgentResponse,
            "EXTENDED_AGENT_CARD_NOT_CONFIGURED" => Self::ExtendedAgentCardNotConfigured,
            "EXTENSION_SUPPORT_REQUIRED" => Self::ExtensionSupportRequired(message),
            "VERSION_NOT_SUPPORTED" => Self::VersionNotSupported(message),
            "INVALID_PARAMS" => Self::InvalidParams(message),
            "INVALID_REQUEST" => Self::InvalidRequest(message),
            "METHOD_NOT_FOUND" => Self::MethodNotFound,
            "UNAUTHENTICATED" => Self::Unauthenticated,
            "RESOURCE_EXHAUSTED" => Self::ResourceExhausted {
                message,
                retry_after,
            },
            "UNAVAILABLE" => Self::Unavailable {
                message,
                retry_after,
            },
            "INTERNAL_ERROR" | "INTERNAL" => Self::Internal,
            _ => return None,
        })
    }

    /// The response of the HTTP+JSON binding in `revision`'s error shape.
    #[cfg(feature = "server")]
    pub fn into_rest_response(self, revision: crate::compat::Revision) -> Response {
        let (body, media_type) = match revision {
            crate::compat::Revision::V1 => (self.to_rest_body(), crate::A2A_JSON_MEDIA_TYPE),
            crate::compat::Revision::V0_3 => (self.to_legacy_rest_body(), "application/json"),
        };
        let mut response = Response::new(axum::body::Body::from(body.to_string()));
        *response.status_mut() = self.status();
        let headers = response.headers_mut();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(media_type));
        if let Some(seconds) = self.retry_after() {
            headers.insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        if let Self::Refused(Refusal::MethodNotAllowed(Some(allow))) = &self {
            headers.insert(header::ALLOW, allow.clone());
        }
        response
    }
}

/// The JSON-RPC code of a transport refusal: JSON-RPC's own for what it is (A2A gives the
/// server range, -32001…-32099, meanings of its own).
const fn refusal_code(refusal: &Refusal) -> i64 {
    match refusal {
        Refusal::ParseError => -32700,
        Refusal::NotFound | Refusal::MethodNotAllowed(_) => -32601,
        Refusal::InvalidRequest
        | Refusal::UnsupportedMediaType
        | Refusal::NotAcceptable
        | Refusal::BodyTooLarge
        | Refusal::MalformedHeader(_)
        | Refusal::MissingSession
        | Refusal::MalformedSessionId
        | Refusal::MalformedLastEventId => -32600,
        _ => -32603,
    }
}

#[cfg(feature = "server")]
impl IntoResponse for A2aError {
    fn into_response(self) -> Response {
        self.into_rest_response(crate::compat::Revision::V1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_a2a_error_survives_the_json_rpc_round_trip_with_its_message() {
        let errors = [
            A2aError::task_not_found("t"),
            A2aError::PushNotificationNotSupported,
            A2aError::UnsupportedOperation("x".into()),
            A2aError::ExtendedAgentCardNotConfigured,
            A2aError::version_not_supported("9"),
            A2aError::invalid_params("p"),
            A2aError::MethodNotFound,
            A2aError::exhausted("too many tasks", Duration::from_secs(7)),
            A2aError::unavailable("full", Duration::from_secs(3)),
            A2aError::Internal,
        ];
        for error in errors {
            let back = A2aError::from_error_object(&error.to_error_object());
            assert_eq!(back, error, "{error}");
        }
    }

    #[test]
    fn a_relayed_task_not_found_names_its_task_once() {
        let id = "z".repeat(100);
        let error = A2aError::task_not_found(&id);
        let relayed = A2aError::from_error_object(&error.to_error_object()).to_string();
        assert_eq!(relayed.matches("task").count(), 1, "{relayed}");
        assert_eq!(relayed.matches("not found").count(), 1, "{relayed}");
        assert!(relayed.len() < 90, "{relayed}");
    }

    #[test]
    fn json_rpc_data_is_an_array_of_typed_details() {
        let data = A2aError::task_not_found("t")
            .to_error_object()
            .data
            .unwrap();
        assert_eq!(
            data,
            json!([{"@type": ERROR_INFO_TYPE, "reason": "TASK_NOT_FOUND", "domain": ERROR_DOMAIN}])
        );
        let exhausted = A2aError::exhausted("x", Duration::from_secs(5)).details();
        assert_eq!(exhausted[1]["retryDelay"], "5s");
    }

    #[test]
    fn rest_body_carries_the_reason_a_client_maps_back() {
        let error = A2aError::task_not_cancelable("t", "TASK_STATE_COMPLETED");
        let back = A2aError::from_rest_body(error.status(), &error.to_rest_body());
        assert_eq!(back.reason(), "TASK_NOT_CANCELABLE");
        assert_eq!(error.status(), StatusCode::BAD_REQUEST);
    }
}
