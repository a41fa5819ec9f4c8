//! MCP's error rules, one table each: the JSON-RPC codes MCP defines, the HTTP status a JSON
//! answer carrying each code goes out with on each revision, the code each revision gives a
//! resource that does not exist, and the errors that repeat what a caller sent (each quotes it
//! through `protocols_runtime::quote::quote`, and says it once).

use http::StatusCode;
use protocols_runtime::quote::quote;
use protocols_runtime::{ErrorObject, jsonrpc};
use serde_json::{Value, json};

use crate::revision::Revision;

/// JSON-RPC error codes MCP defines beyond JSON-RPC's own.
pub mod codes {
    /// Headers disagree with the body, or a required header is missing (2026-07-28).
    pub const HEADER_MISMATCH: i64 = -32020;
    /// The request needs a client capability the client did not declare (2026-07-28).
    pub const MISSING_CLIENT_CAPABILITY: i64 = -32021;
    /// The request's protocol version is not served here (2026-07-28).
    pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;
    /// A resource that does not exist, up to 2025-11-25 (2026-07-28 uses invalid params).
    pub const RESOURCE_NOT_FOUND: i64 = -32002;
}

/// What a bound on the server's state answers with when the whole server is full: the code the
/// runtime sheds load with (`Refusal::Overloaded`), so a client reads one meaning for it
/// whichever layer refused (a test holds the two equal).
pub const SERVER_FULL: i64 = -32013;
/// What a bound answers with when one caller holds its whole share: the code of a caller over
/// its rate (`Refusal::RateLimited`).
pub const CALLER_FULL: i64 = -32012;
/// What a request answers when a store it needs (shared task records) failed or could not be
/// reached: the code the runtime refuses with when its session or event store does
/// (`Refusal::StoreUnavailable`), a `503`, never "no such task".
pub const STORE_UNAVAILABLE: i64 = -32017;

/// The session revisions (2024-11-05 to 2025-11-25) answer every protocol error with `200`: on
/// their transport a `404` means the session is gone and a `400` a broken request, and their
/// SDKs read anything but `2xx` as a transport failure. Only the bounds on the server's state and an unavailable store
/// carry a status, so a client backs off.
const SESSION_STATUSES: &[(i64, StatusCode)] = &[
    (SERVER_FULL, StatusCode::SERVICE_UNAVAILABLE),
    (CALLER_FULL, StatusCode::TOO_MANY_REQUESTS),
    (STORE_UNAVAILABLE, StatusCode::SERVICE_UNAVAILABLE),
];

/// 2026-07-28 (Streamable HTTP, "Request Metadata"; basic, "Per-request protocol fields"): a
/// malformed request (a missing `_meta` field among them), a header that disagrees with the
/// body, a missing client capability and an unsupported version are `400`; a method the server
/// does not implement is `404`.
const STATELESS_STATUSES: &[(i64, StatusCode)] = &[
    (codes::HEADER_MISMATCH, StatusCode::BAD_REQUEST),
    (codes::MISSING_CLIENT_CAPABILITY, StatusCode::BAD_REQUEST),
    (codes::UNSUPPORTED_PROTOCOL_VERSION, StatusCode::BAD_REQUEST),
    (jsonrpc::codes::INVALID_PARAMS, StatusCode::BAD_REQUEST),
    (jsonrpc::codes::METHOD_NOT_FOUND, StatusCode::NOT_FOUND),
    (SERVER_FULL, StatusCode::SERVICE_UNAVAILABLE),
    (CALLER_FULL, StatusCode::TOO_MANY_REQUESTS),
    (STORE_UNAVAILABLE, StatusCode::SERVICE_UNAVAILABLE),
];

/// The HTTP status each error code carries on `revision`'s JSON answers (codes not listed go
/// out with `200`).
pub const fn error_statuses(revision: Revision) -> &'static [(i64, StatusCode)] {
    if revision.is_stateless() {
        STATELESS_STATUSES
    } else {
        SESSION_STATUSES
    }
}

/// The status `code` carries on `revision` (`None`: `200`).
pub fn error_status(revision: Revision, code: i64) -> Option<StatusCode> {
    error_statuses(revision)
        .iter()
        .find(|(listed, _)| *listed == code)
        .map(|(_, status)| *status)
}

/// The code `revision` gives a resource that does not exist: `-32002` through 2025-11-25, invalid
/// params (`-32602`) from 2026-07-28 on (SEP-2164), which also forbids `-32002`.
pub const fn resource_not_found_code(revision: Revision) -> i64 {
    if revision.is_stateless() {
        jsonrpc::codes::INVALID_PARAMS
    } else {
        codes::RESOURCE_NOT_FOUND
    }
}

/// `error` (as the 2025-11-25 handler wrote it) in `revision`'s codes.
pub fn error_for(revision: Revision, mut error: ErrorObject) -> ErrorObject {
    if error.code == codes::RESOURCE_NOT_FOUND {
        error.code = resource_not_found_code(revision);
    }
    error
}

/// `value` as `data` may carry it: verbatim when quoting would leave it as it is (short, no
/// control characters), so a client can match it; `None` when the rule would change it.
pub fn verbatim(value: &str) -> Option<Value> {
    let rendered = quote(value).to_string();
    let inner = rendered.strip_prefix('`')?.strip_suffix('`')?;
    (inner == value).then(|| Value::from(value))
}

/// A `tools/call` naming a tool the server does not have.
pub fn unknown_tool(name: &str) -> ErrorObject {
    ErrorObject::invalid_params(format!("unknown tool {}", quote(name)))
}

/// A `prompts/get` naming a prompt the server does not have.
pub fn unknown_prompt(name: &str) -> ErrorObject {
    ErrorObject::invalid_params(format!("unknown prompt {}", quote(name)))
}

/// A URI no resource or template answers (2025-11-25's code; [`error_for`] gives each revision
/// its own). `data.uri` repeats the URI when it can be repeated exactly.
pub fn resource_not_found(uri: &str) -> ErrorObject {
    let error = ErrorObject::new(
        codes::RESOURCE_NOT_FOUND,
        format!("no resource at {}", quote(uri)),
    );
    match verbatim(uri) {
        Some(uri) => error.with_data(json!({ "uri": uri })),
        None => error,
    }
}

/// Params that do not decode as `method`'s; the decoder's message can repeat the caller's text,
/// so it is quoted too.
pub fn invalid_params(method: &str, why: impl std::fmt::Display) -> ErrorObject {
    ErrorObject::invalid_params(format!("invalid {method} params: {}", quote(why)))
}

/// `-32021`: the request needs `required` (a `ClientCapabilities` object) and the client did not
/// declare it.
pub fn missing_capability(what: &str, required: Value) -> ErrorObject {
    ErrorObject::new(
        codes::MISSING_CLIENT_CAPABILITY,
        format!("this request needs the client capability {what}"),
    )
    .with_data(json!({ "requiredCapabilities": required }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocols_runtime::hardening::Refusal;

    #[test]
    fn every_session_revision_answers_a_protocol_error_with_200() {
        for revision in Revision::ALL.into_iter().filter(|r| !r.is_stateless()) {
            for code in [-32601, -32602, -32600, -32603, codes::RESOURCE_NOT_FOUND] {
                assert_eq!(error_status(revision, code), None, "{revision} {code}");
            }
        }
    }

    #[test]
    fn on_2026_07_28_a_method_not_found_is_404_and_malformed_requests_are_400() {
        let revision = Revision::V2026_07_28;
        assert_eq!(error_status(revision, -32601), Some(StatusCode::NOT_FOUND));
        for code in [-32602, -32020, -32021, -32022] {
            assert_eq!(
                error_status(revision, code),
                Some(StatusCode::BAD_REQUEST),
                "{code}"
            );
        }
    }

    #[test]
    fn the_bound_codes_are_the_runtimes_own() {
        assert_eq!(SERVER_FULL, Refusal::Overloaded.code());
        assert_eq!(STORE_UNAVAILABLE, Refusal::StoreUnavailable.code());
        assert_eq!(
            CALLER_FULL,
            Refusal::RateLimited {
                retry_after_secs: 1
            }
            .code()
        );
    }

    #[test]
    fn a_full_or_unavailable_store_is_503_and_a_caller_over_its_share_429_on_every_revision() {
        for revision in Revision::ALL {
            assert_eq!(
                error_status(revision, SERVER_FULL),
                Some(StatusCode::SERVICE_UNAVAILABLE)
            );
            assert_eq!(
                error_status(revision, CALLER_FULL),
                Some(StatusCode::TOO_MANY_REQUESTS)
            );
            assert_eq!(
                error_status(revision, STORE_UNAVAILABLE),
                Some(StatusCode::SERVICE_UNAVAILABLE)
            );
        }
    }

    #[test]
    fn resource_not_found_is_32002_until_2025_11_25_and_invalid_params_after() {
        let error = resource_not_found("test://nothing");
        assert_eq!(error_for(Revision::V2025_11_25, error.clone()).code, -32002);
        assert_eq!(error_for(Revision::V2026_07_28, error).code, -32602);
    }

    #[test]
    fn an_error_quotes_a_long_name_once_and_bounded() {
        let name = "n".repeat(100);
        let message = unknown_tool(&name).message.to_string();
        assert!(message.len() < 100, "{message}");
        assert_eq!(message.matches("unknown tool").count(), 1);
        let uri = format!("test://{}\n", "u".repeat(100));
        let error = resource_not_found(&uri);
        assert!(!error.message.contains('\n'));
        assert_eq!(
            error.data, None,
            "a URI the rule would change is not repeated"
        );
        assert_eq!(
            resource_not_found("test://x").data,
            Some(json!({"uri": "test://x"}))
        );
    }
}
