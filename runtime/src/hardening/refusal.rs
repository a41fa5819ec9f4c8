//! The one mapping from a refusal to an HTTP status and a JSON-RPC error body.
//!
//! Every path that declines a request — a layer in this module, the transport router, the
//! framework's own 404/405 — ends in a [`Refusal`], so no refusal can answer `200` and none can
//! carry a message built from the caller's bytes. Codes outside the JSON-RPC standard range sit in
//! the implementation-defined server-error range (-32000 to -32099), one per kind of refusal.
//!
//! | refusal | status | code |
//! |---|---|---|
//! | `ParseError` | 400 | -32700 |
//! | `InvalidRequest`, `MissingSession`, `MalformedSessionId`, `MalformedLastEventId`, `MalformedHeader` | 400 | -32600 |
//! | `Unauthenticated` | 401 | -32001 |
//! | `InsufficientScope` | 403 | -32002 |
//! | `ForbiddenOrigin` | 403 | -32003 |
//! | `MisdirectedHost` | 421 | -32004 |
//! | `UnknownSession` | 404 | -32005 |
//! | `NotFound` | 404 | -32006 |
//! | `MethodNotAllowed` | 405 | -32007 |
//! | `NotAcceptable` | 406 | -32008 |
//! | `ResumeGone` | 410 | -32009 |
//! | `BodyTooLarge` | 413 | -32010 |
//! | `UnsupportedMediaType` | 415 | -32011 |
//! | `RateLimited` | 429 | -32012 |
//! | `Internal` | 500 | -32603 |
//! | `Overloaded` | 503 | -32013 |
//! | `AuthUnavailable` | 503 | -32014 |
//! | `DeadlineExceeded` | 504 | -32015 |
//! | `TooManyConnections` | 503 | -32016 |
//! | `StoreUnavailable` | 503 | -32017 |
//!
//! Two choices the issue left open: a `Host` outside the allow-list is `421 Misdirected Request`
//! (this server is not the authority the request named, which is what a rebinding attack looks
//! like, and it stays distinguishable from a foreign `Origin`'s 403); a resume from an event id the
//! tail no longer holds (evicted, or never issued) is `410 Gone` (the history is gone for good, so
//! the client must open a fresh stream instead of retrying the same cursor).

#[cfg(feature = "server")]
use axum::body::Body;
#[cfg(feature = "server")]
use axum::response::{IntoResponse, Response};
#[cfg(feature = "server")]
use http::header;
use http::{HeaderValue, StatusCode};
use serde_json::Value;

/// The longest string id a refusal echoes. A longer id is answered as `null` so a refusal never
/// reflects an attacker-sized payload back.
const MAX_ECHOED_ID_LEN: usize = 256;

/// Why a request was declined. Messages are fixed text, never derived from the request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The body is not JSON.
    ParseError,
    /// The body is JSON but not an acceptable JSON-RPC message.
    InvalidRequest,
    /// The request belongs to a session and named none.
    MissingSession,
    /// The session header is present but is not a well-formed id.
    MalformedSessionId,
    /// `Last-Event-ID` is present but is not a cursor this server could have issued.
    MalformedLastEventId,
    /// A header the transport reads is present and unreadable; names the header, not its value.
    MalformedHeader(&'static str),
    /// No usable credential; carries the `WWW-Authenticate` challenge.
    Unauthenticated(Challenge),
    /// A valid credential without the scope this endpoint requires.
    InsufficientScope(Challenge),
    /// The authenticator could not reach its backing store; retrying later may succeed.
    AuthUnavailable,
    /// A browser `Origin` outside the allow-list.
    ForbiddenOrigin,
    /// A `Host` outside the allow-list (DNS rebinding).
    MisdirectedHost,
    /// A well-formed session id this server does not hold (expired, deleted or never issued).
    UnknownSession,
    /// No route at this path.
    NotFound,
    /// The path exists but not for this method; carries the `Allow` value the router computed.
    MethodNotAllowed(Option<HeaderValue>),
    /// The `Accept` header admits none of the media types this endpoint answers with.
    NotAcceptable,
    /// A resume from an event id the stream's tail no longer holds.
    ResumeGone,
    /// The body exceeded the configured limit while it was being read.
    BodyTooLarge,
    /// The `Content-Type` is not one this endpoint reads.
    UnsupportedMediaType,
    /// The caller's allowance is spent; retry after this many whole seconds.
    RateLimited {
        /// Whole seconds until the allowance has room again.
        retry_after_secs: u64,
    },
    /// The server failed; details go to the log, not to the caller.
    Internal,
    /// Too many requests in flight; shed rather than queued.
    Overloaded,
    /// The request did not produce a response within the configured deadline.
    DeadlineExceeded,
    /// A connection past the listener's connection caps; answered once, then closed.
    TooManyConnections,
    /// The session store could not answer; the session may exist, so this is never "unknown
    /// session", and retrying later may succeed.
    StoreUnavailable,
}

impl Refusal {
    /// The HTTP status this refusal answers with. Never a 2xx.
    pub const fn status(&self) -> StatusCode {
        match self {
            Self::ParseError
            | Self::InvalidRequest
            | Self::MissingSession
            | Self::MalformedSessionId
            | Self::MalformedLastEventId
            | Self::MalformedHeader(_) => StatusCode::BAD_REQUEST,
            Self::Unauthenticated(_) => StatusCode::UNAUTHORIZED,
            Self::InsufficientScope(_) | Self::ForbiddenOrigin => StatusCode::FORBIDDEN,
            Self::MisdirectedHost => StatusCode::MISDIRECTED_REQUEST,
            Self::UnknownSession | Self::NotFound => StatusCode::NOT_FOUND,
            Self::MethodNotAllowed(_) => StatusCode::METHOD_NOT_ALLOWED,
            Self::NotAcceptable => StatusCode::NOT_ACCEPTABLE,
            Self::ResumeGone => StatusCode::GONE,
            Self::BodyTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            Self::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Self::RateLimited { .. } => StatusCode::TOO_MANY_REQUESTS,
            Self::Internal => StatusCode::INTERNAL_SERVER_ERROR,
            Self::Overloaded
            | Self::AuthUnavailable
            | Self::TooManyConnections
            | Self::StoreUnavailable => StatusCode::SERVICE_UNAVAILABLE,
            Self::DeadlineExceeded => StatusCode::GATEWAY_TIMEOUT,
        }
    }

    /// The JSON-RPC error code carried in the body.
    pub const fn code(&self) -> i64 {
        match self {
            Self::ParseError => -32700,
            Self::InvalidRequest
            | Self::MissingSession
            | Self::MalformedSessionId
            | Self::MalformedLastEventId
            | Self::MalformedHeader(_) => -32600,
            Self::Unauthenticated(_) => -32001,
            Self::InsufficientScope(_) => -32002,
            Self::ForbiddenOrigin => -32003,
            Self::MisdirectedHost => -32004,
            Self::UnknownSession => -32005,
            Self::NotFound => -32006,
            Self::MethodNotAllowed(_) => -32007,
            Self::NotAcceptable => -32008,
            Self::ResumeGone => -32009,
            Self::BodyTooLarge => -32010,
            Self::UnsupportedMediaType => -32011,
            Self::RateLimited { .. } => -32012,
            Self::Internal => -32603,
            Self::Overloaded => -32013,
            Self::AuthUnavailable => -32014,
            Self::DeadlineExceeded => -32015,
            Self::TooManyConnections => -32016,
            Self::StoreUnavailable => -32017,
        }
    }

    /// The fixed, human-readable message. Never contains request bytes.
    pub const fn message(&self) -> &'static str {
        match self {
            Self::ParseError => "Parse error: the body is not valid JSON",
            Self::InvalidRequest => {
                "Invalid Request: the body is not an acceptable JSON-RPC message"
            }
            Self::MissingSession => "Bad Request: this request requires a session id header",
            Self::MalformedSessionId => "Bad Request: the session id header is malformed",
            Self::MalformedLastEventId => "Bad Request: the Last-Event-ID header is malformed",
            Self::MalformedHeader(_) => "Bad Request: a request header is malformed",
            Self::Unauthenticated(_) => "Unauthorized: a valid bearer token is required",
            Self::InsufficientScope(_) => "Forbidden: the token lacks a required scope",
            Self::AuthUnavailable => "Service Unavailable: credentials cannot be checked now",
            Self::ForbiddenOrigin => "Forbidden: the request origin is not allowed",
            Self::MisdirectedHost => "Misdirected Request: the Host header is not served here",
            Self::UnknownSession => "Not Found: no such session",
            Self::NotFound => "Not Found: no such endpoint",
            Self::MethodNotAllowed(_) => "Method Not Allowed",
            Self::NotAcceptable => "Not Acceptable: the Accept header admits no supported type",
            Self::ResumeGone => "Gone: the requested event is no longer available",
            Self::BodyTooLarge => "Payload Too Large: the body exceeds the configured limit",
            Self::UnsupportedMediaType => "Unsupported Media Type: expected application/json",
            Self::RateLimited { .. } => "Too Many Requests: rate limit exceeded",
            Self::Internal => "Internal error",
            Self::Overloaded => "Service Unavailable: the server is overloaded",
            Self::DeadlineExceeded => "Gateway Timeout: the request deadline was exceeded",
            Self::TooManyConnections => "Service Unavailable: too many open connections",
            Self::StoreUnavailable => "Service Unavailable: the session store cannot be reached",
        }
    }

    /// The refusal a bare framework response of `status` stands for, when there is one.
    ///
    /// Used to give axum's and tower's empty 404/405/413 responses a JSON-RPC body without a
    /// second mapping; statuses no refusal owns stay as they are.
    #[cfg(feature = "server")]
    pub(crate) fn for_bare_status(status: StatusCode, allow: Option<&HeaderValue>) -> Option<Self> {
        match status {
            StatusCode::NOT_FOUND => Some(Self::NotFound),
            StatusCode::METHOD_NOT_ALLOWED => Some(Self::MethodNotAllowed(allow.cloned())),
            StatusCode::PAYLOAD_TOO_LARGE => Some(Self::BodyTooLarge),
            StatusCode::REQUEST_TIMEOUT | StatusCode::GATEWAY_TIMEOUT => {
                Some(Self::DeadlineExceeded)
            }
            StatusCode::SERVICE_UNAVAILABLE => Some(Self::Overloaded),
            StatusCode::TOO_MANY_REQUESTS => Some(Self::RateLimited {
                retry_after_secs: 1,
            }),
            _ => None,
        }
    }

    /// The response answering a request whose JSON-RPC id is known (or `None` when it is not).
    /// It carries the refusal itself as an extension ([`Refused`]), so the transport can answer
    /// it as its protocol's binding does ([`RefusalAnswer`]).
    #[cfg(feature = "server")]
    pub fn into_response_with_id(self, id: Option<&EchoId>) -> Response {
        let (status, code) = (self.status(), self.code());
        let mut response = self.respond(status, code, id);
        let refused = Refused {
            refusal: self,
            id: id.cloned(),
        };
        response.extensions_mut().insert(refused);
        response
    }

    /// The response with `answer`'s code, and its status where the refusal lets a protocol
    /// choose one: a body that is no JSON-RPC message (parse error, invalid request) is the
    /// protocol's to answer; every other refusal keeps its status.
    #[cfg(feature = "server")]
    pub fn into_response_as(self, id: Option<&EchoId>, answer: RefusalAnswer) -> Response {
        let status = match (&self, answer.status) {
            (Self::ParseError | Self::InvalidRequest, Some(status)) => status,
            _ => self.status(),
        };
        self.respond(status, answer.code, id)
    }

    #[cfg(feature = "server")]
    fn respond(&self, status: StatusCode, code: i64, id: Option<&EchoId>) -> Response {
        let body = error_body(code, self.message(), id);
        let mut response = Response::new(Body::from(body));
        *response.status_mut() = status;
        let headers = response.headers_mut();
        // Sized for the security headers too, so stamping them does not grow the map.
        *headers = super::response_headers();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        match self {
            Self::Unauthenticated(challenge) | Self::InsufficientScope(challenge) => {
                headers.insert(header::WWW_AUTHENTICATE, challenge.0.clone());
            }
            Self::MethodNotAllowed(Some(allow)) => {
                headers.insert(header::ALLOW, allow.clone());
            }
            Self::RateLimited { retry_after_secs } => {
                headers.insert(header::RETRY_AFTER, HeaderValue::from(*retry_after_secs));
            }
            Self::TooManyConnections | Self::StoreUnavailable => {
                headers.insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            }
            _ => {}
        }
        response
    }

    /// The JSON-RPC error body, for an answer written without a response to carry it.
    #[cfg(feature = "server")]
    pub(crate) fn body_bytes(&self) -> Vec<u8> {
        error_body(self.code(), self.message(), None)
    }
}

/// The refusal a response answers, as its extension: what a transport re-answers in its
/// protocol's terms.
#[derive(Debug, Clone)]
pub struct Refused {
    /// What was refused.
    pub refusal: Refusal,
    /// The id of the request refused, when it was read.
    pub id: Option<EchoId>,
}

/// How a protocol's binding answers one of the transport's refusals: with this JSON-RPC code
/// and, for a body that is no JSON-RPC message, this status (see
/// [`Refusal::into_response_as`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RefusalAnswer {
    /// The JSON-RPC error code the refusal is answered with.
    pub code: i64,
    /// The HTTP status for a body that is no JSON-RPC message; `None` keeps the refusal's own.
    pub status: Option<StatusCode>,
}

#[cfg(feature = "server")]
impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        self.into_response_with_id(None)
    }
}

/// A refusal answering a request whose id is known; the refusal form handlers return after the
/// body has been read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdentifiedRefusal {
    /// What was refused.
    pub refusal: Refusal,
    /// The id of the request refused, when it was read.
    pub id: Option<EchoId>,
}

#[cfg(feature = "server")]
impl IntoResponse for IdentifiedRefusal {
    fn into_response(self) -> Response {
        self.refusal.into_response_with_id(self.id.as_ref())
    }
}

impl Refusal {
    /// Pairs this refusal with the id of the request it answers.
    pub fn answering(self, id: Option<EchoId>) -> IdentifiedRefusal {
        IdentifiedRefusal { refusal: self, id }
    }
}

/// A `WWW-Authenticate` value, built from configuration at start-up (see `auth`), so a refusal
/// carries a header that is already known to be valid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Challenge(pub(crate) HeaderValue);

impl Challenge {
    /// The header value, as sent (what the tests read).
    #[cfg(test)]
    pub(crate) fn as_header(&self) -> &HeaderValue {
        &self.0
    }
}

/// A JSON-RPC request id a refusal may echo: an integer or a bounded string, the only shapes
/// JSON-RPC 2.0 expects. Anything else is answered with `null`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EchoId {
    /// An integer id.
    Integer(i64),
    /// A string id, bounded in length.
    Text(Box<str>),
}

impl EchoId {
    /// The echoable id in a JSON value, if it is one.
    pub fn from_json(value: &Value) -> Option<Self> {
        match value {
            Value::Number(number) => number.as_i64().map(Self::Integer),
            Value::String(text) if text.len() <= MAX_ECHOED_ID_LEN => {
                Some(Self::Text(text.as_str().into()))
            }
            _ => None,
        }
    }

    /// The id of a single JSON-RPC message in `body`, if the body is one that parses.
    ///
    /// Total: a batch, a non-object, or bytes that are not JSON have no id. serde_json bounds
    /// nesting (128 levels), so a deeply nested body is an error here, not a stack overflow.
    pub fn peek(body: &[u8]) -> Option<Self> {
        #[derive(serde::Deserialize)]
        struct OnlyId {
            id: Option<Value>,
        }
        let parsed: OnlyId = serde_json::from_slice(body).ok()?;
        parsed.id.as_ref().and_then(Self::from_json)
    }

    #[cfg(feature = "server")]
    fn to_json(&self) -> Value {
        match self {
            Self::Integer(number) => Value::from(*number),
            Self::Text(text) => Value::from(&**text),
        }
    }
}

/// Serialises the JSON-RPC error object; a `Value` tree so escaping is serde_json's, not ours.
#[cfg(feature = "server")]
fn error_body(code: i64, message: &'static str, id: Option<&EchoId>) -> Vec<u8> {
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "id": id.map_or(Value::Null, EchoId::to_json),
        "error": { "code": code, "message": message },
    });
    // Serialising a `Value` built from integers and fixed strings cannot fail; an empty body
    // would still carry the refusal's status.
    serde_json::to_vec(&body).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    fn every_refusal() -> Vec<Refusal> {
        let challenge = Challenge(HeaderValue::from_static("Bearer"));
        vec![
            Refusal::ParseError,
            Refusal::InvalidRequest,
            Refusal::MissingSession,
            Refusal::MalformedSessionId,
            Refusal::MalformedLastEventId,
            Refusal::MalformedHeader("mcp-protocol-version"),
            Refusal::Unauthenticated(challenge.clone()),
            Refusal::InsufficientScope(challenge),
            Refusal::AuthUnavailable,
            Refusal::ForbiddenOrigin,
            Refusal::MisdirectedHost,
            Refusal::UnknownSession,
            Refusal::NotFound,
            Refusal::MethodNotAllowed(Some(HeaderValue::from_static("GET,POST"))),
            Refusal::NotAcceptable,
            Refusal::ResumeGone,
            Refusal::BodyTooLarge,
            Refusal::UnsupportedMediaType,
            Refusal::RateLimited {
                retry_after_secs: 3,
            },
            Refusal::Internal,
            Refusal::Overloaded,
            Refusal::DeadlineExceeded,
            Refusal::TooManyConnections,
            Refusal::StoreUnavailable,
        ]
    }

    async fn body_json(response: Response) -> Value {
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        serde_json::from_slice(&bytes).unwrap()
    }

    #[tokio::test]
    async fn no_refusal_is_a_success_status_and_each_carries_a_jsonrpc_error_body() {
        for refusal in every_refusal() {
            let (status, code) = (refusal.status(), refusal.code());
            assert!(
                status.is_client_error() || status.is_server_error(),
                "{refusal:?}"
            );
            let response = refusal.into_response();
            assert_eq!(response.status(), status);
            assert_eq!(response.headers()[header::CONTENT_TYPE], "application/json");
            let body = body_json(response).await;
            assert_eq!(body["jsonrpc"], "2.0");
            assert_eq!(body["id"], Value::Null);
            assert_eq!(body["error"]["code"], code);
            assert!(body["error"]["message"].is_string());
        }
    }

    #[test]
    fn server_defined_codes_are_distinct_per_kind_of_refusal() {
        let mut codes: Vec<i64> = every_refusal()
            .iter()
            .map(Refusal::code)
            .filter(|code| (-32099..=-32000).contains(code))
            .collect();
        let count = codes.len();
        codes.sort_unstable();
        codes.dedup();
        assert_eq!(codes.len(), count);
    }

    #[tokio::test]
    async fn a_refusal_answering_a_known_id_echoes_that_id() {
        let response = Refusal::UnknownSession
            .answering(Some(EchoId::Integer(7)))
            .into_response();
        assert_eq!(body_json(response).await["id"], 7);
        let response = Refusal::InvalidRequest
            .answering(EchoId::peek(
                br#"{"jsonrpc":"2.0","id":"abc","method":"x"}"#,
            ))
            .into_response();
        assert_eq!(body_json(response).await["id"], "abc");
    }

    #[test]
    fn ids_that_are_not_integers_or_short_strings_are_not_echoed() {
        assert_eq!(EchoId::peek(br#"{"id":{"nested":1}}"#), None);
        assert_eq!(EchoId::peek(br#"{"id":1.5}"#), None);
        assert_eq!(EchoId::peek(br#"[{"id":1}]"#), None);
        assert_eq!(EchoId::peek(b"\xff\xfe"), None);
        let long = format!(r#"{{"id":"{}"}}"#, "a".repeat(MAX_ECHOED_ID_LEN + 1));
        assert_eq!(EchoId::peek(long.as_bytes()), None);
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        assert_eq!(EchoId::peek(deep.as_bytes()), None);
    }

    #[test]
    fn refusal_headers_carry_challenge_allow_and_retry_after() {
        let response = Refusal::RateLimited {
            retry_after_secs: 3,
        }
        .into_response();
        assert_eq!(response.headers()[header::RETRY_AFTER], "3");
        let allow = HeaderValue::from_static("GET,POST");
        let response = Refusal::MethodNotAllowed(Some(allow)).into_response();
        assert_eq!(response.headers()[header::ALLOW], "GET,POST");
        let challenge = Challenge(HeaderValue::from_static("Bearer realm=\"x\""));
        let response = Refusal::Unauthenticated(challenge).into_response();
        assert_eq!(
            response.headers()[header::WWW_AUTHENTICATE],
            "Bearer realm=\"x\""
        );
    }
}
