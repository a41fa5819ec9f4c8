//! The A2A errors a server answers with, and the one mapping from each to its JSON-RPC code,
//! its HTTP status and the `google.rpc.ErrorInfo` reason the HTTP+JSON binding carries.

use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode, header};
use protocols_runtime::ErrorObject;
use serde_json::json;

/// Every failure an A2A operation reports to its caller.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum A2aError {
    #[error("task {0} not found")]
    TaskNotFound(String),
    #[error("task {id} is {state} and cannot be canceled")]
    TaskNotCancelable { id: String, state: String },
    #[error("push notifications are not supported")]
    PushNotificationNotSupported,
    #[error("unsupported operation: {0}")]
    UnsupportedOperation(String),
    #[error("content type not supported: {0}")]
    ContentTypeNotSupported(String),
    #[error("the agent produced an invalid response")]
    InvalidAgentResponse,
    #[error("no extended agent card is configured")]
    ExtendedAgentCardNotConfigured,
    #[error("extension support required: {0}")]
    ExtensionSupportRequired(String),
    #[error("A2A version {0} is not supported")]
    VersionNotSupported(String),
    #[error("invalid params: {0}")]
    InvalidParams(String),
    #[error("invalid request: {0}")]
    InvalidRequest(String),
    #[error("method not found")]
    MethodNotFound,
    #[error("authentication required")]
    Unauthenticated,
    #[error("internal error")]
    Internal,
}

/// The `domain` of every `ErrorInfo` this server emits.
const ERROR_DOMAIN: &str = "a2a-protocol.org";

impl A2aError {
    /// The JSON-RPC error code (A2A's -32001…-32009, or JSON-RPC's own).
    pub const fn code(&self) -> i64 {
        match self {
            Self::TaskNotFound(_) => -32001,
            Self::TaskNotCancelable { .. } => -32002,
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
            Self::Internal => -32603,
        }
    }

    /// The HTTP status on the HTTP+JSON binding (and for refusals on JSON-RPC).
    pub const fn status(&self) -> StatusCode {
        match self {
            Self::TaskNotFound(_) | Self::MethodNotFound => StatusCode::NOT_FOUND,
            Self::Unauthenticated => StatusCode::UNAUTHORIZED,
            Self::InvalidAgentResponse | Self::Internal => StatusCode::INTERNAL_SERVER_ERROR,
            _ => StatusCode::BAD_REQUEST,
        }
    }

    /// The `google.rpc.Code` name matching [`Self::status`].
    const fn rpc_status(&self) -> &'static str {
        match self {
            Self::TaskNotFound(_) | Self::MethodNotFound => "NOT_FOUND",
            Self::Unauthenticated => "UNAUTHENTICATED",
            Self::InvalidAgentResponse | Self::Internal => "INTERNAL",
            Self::InvalidParams(_) | Self::InvalidRequest(_) | Self::ContentTypeNotSupported(_) => {
                "INVALID_ARGUMENT"
            }
            _ => "FAILED_PRECONDITION",
        }
    }

    /// The `ErrorInfo.reason` a client maps back to the typed error.
    pub const fn reason(&self) -> &'static str {
        match self {
            Self::TaskNotFound(_) => "TASK_NOT_FOUND",
            Self::TaskNotCancelable { .. } => "TASK_NOT_CANCELABLE",
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
            Self::Internal => "INTERNAL",
        }
    }

    /// The JSON-RPC error object; its data names the reason, so the typed error survives.
    pub fn to_error_object(&self) -> ErrorObject {
        ErrorObject::new(self.code(), self.to_string())
            .with_data(json!({ "reason": self.reason() }))
    }

    /// The HTTP+JSON error body: a `google.rpc.Status` with one `ErrorInfo` detail.
    pub fn to_rest_body(&self) -> serde_json::Value {
        json!({
            "error": {
                "code": self.status().as_u16(),
                "status": self.rpc_status(),
                "message": self.to_string(),
                "details": [{
                    "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                    "reason": self.reason(),
                    "domain": ERROR_DOMAIN,
                }],
            }
        })
    }

    /// Reads an error back from a JSON-RPC error object (the client side).
    pub fn from_error_object(error: &ErrorObject) -> Self {
        let message = error.message.to_string();
        if let Some(known) = error
            .data
            .as_ref()
            .and_then(|data| data["reason"].as_str())
            .and_then(|reason| Self::from_reason(reason, &message))
        {
            return known;
        }
        match error.code {
            -32001 => Self::TaskNotFound(message),
            -32002 => Self::TaskNotCancelable {
                id: String::new(),
                state: message,
            },
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
        }
    }

    /// Reads an error back from an HTTP+JSON error body by its `ErrorInfo.reason`.
    pub fn from_rest_body(status: StatusCode, body: &serde_json::Value) -> Self {
        let error = &body["error"];
        let message = error["message"].as_str().unwrap_or_default().to_owned();
        let reason = error["details"]
            .as_array()
            .and_then(|details| details.iter().find_map(|detail| detail["reason"].as_str()))
            .unwrap_or_default();
        Self::from_reason(reason, &message).unwrap_or(match status {
            StatusCode::UNAUTHORIZED => Self::Unauthenticated,
            StatusCode::NOT_FOUND => Self::MethodNotFound,
            _ => Self::Internal,
        })
    }

    /// The error an `ErrorInfo.reason` names.
    fn from_reason(reason: &str, message: &str) -> Option<Self> {
        let message = message.to_owned();
        Some(match reason {
            "TASK_NOT_FOUND" => Self::TaskNotFound(message),
            "TASK_NOT_CANCELABLE" => Self::TaskNotCancelable {
                id: String::new(),
                state: message,
            },
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
            "INTERNAL" => Self::Internal,
            _ => return None,
        })
    }
}

impl IntoResponse for A2aError {
    fn into_response(self) -> Response {
        let body = self.to_rest_body().to_string();
        let mut response = Response::new(axum::body::Body::from(body));
        *response.status_mut() = self.status();
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static(crate::A2A_JSON_MEDIA_TYPE),
        );
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_a2a_error_survives_the_json_rpc_round_trip_by_code() {
        let errors = [
            A2aError::TaskNotFound("t".into()),
            A2aError::PushNotificationNotSupported,
            A2aError::UnsupportedOperation("x".into()),
            A2aError::ExtendedAgentCardNotConfigured,
            A2aError::VersionNotSupported("9".into()),
            A2aError::InvalidParams("p".into()),
            A2aError::MethodNotFound,
        ];
        for error in errors {
            let back = A2aError::from_error_object(&error.to_error_object());
            assert_eq!(back.code(), error.code(), "{error}");
        }
    }

    #[test]
    fn rest_body_carries_the_reason_a_client_maps_back() {
        let error = A2aError::TaskNotCancelable {
            id: "t".into(),
            state: "TASK_STATE_COMPLETED".into(),
        };
        let back = A2aError::from_rest_body(error.status(), &error.to_rest_body());
        assert_eq!(back.reason(), "TASK_NOT_CANCELABLE");
        assert_eq!(error.status(), StatusCode::BAD_REQUEST);
    }
}
