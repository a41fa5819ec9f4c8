//! The checks a request passes before it runs, per revision: the `MCP-Protocol-Version` header
//! (2025-06-18 on; a value we do not serve is refused with 400, an absent one means 2025-03-26)
//! and, for the stateless 2026-07-28 revision, the per-request `_meta` protocol version and the
//! `Mcp-Method`/`Mcp-Name` headers that must agree with the body (-32020, -32022, both 400);
//! and the HTTP status each 2026-07-28 error code carries however it arises.

use http::{HeaderMap, HeaderName, StatusCode};
use protocols_runtime::{ErrorObject, Message, Rejection, Request};
use serde_json::{Value, json};

use crate::context::codes;
use crate::revision::Revision;

pub const VERSION_HEADER: HeaderName = HeaderName::from_static("mcp-protocol-version");
pub const SESSION_HEADER: HeaderName = HeaderName::from_static("mcp-session-id");
pub const METHOD_HEADER: HeaderName = HeaderName::from_static("mcp-method");
pub const NAME_HEADER: HeaderName = HeaderName::from_static("mcp-name");

/// The status an answer with one of the 2026-07-28 error codes carries over HTTP: the schema
/// requires `400 Bad Request` for each, whether a check before the request or the handler
/// (e.g. a missing client capability) produced it.
pub const ERROR_STATUSES: &[(i64, StatusCode)] = &[
    (codes::HEADER_MISMATCH, StatusCode::BAD_REQUEST),
    (codes::MISSING_CLIENT_CAPABILITY, StatusCode::BAD_REQUEST),
    (codes::UNSUPPORTED_PROTOCOL_VERSION, StatusCode::BAD_REQUEST),
];

/// The `_meta` key carrying a stateless request's protocol version.
pub const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// The `_meta` key carrying a stateless request's client capabilities.
pub const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// The `_meta` key carrying a stateless request's log level.
pub const META_LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";

/// A request's params as JSON (`Null` when absent or unreadable).
pub(crate) fn params_of(request: &Request) -> Value {
    request
        .params
        .as_deref()
        .and_then(|raw| serde_json::from_str(raw.get()).ok())
        .unwrap_or(Value::Null)
}

/// The protocol version a request names in its `_meta`, if it names one.
pub(crate) fn meta_version(params: &Value) -> Option<&str> {
    params.get("_meta")?.get(META_PROTOCOL_VERSION)?.as_str()
}

fn header<'a>(headers: &'a HeaderMap, name: &HeaderName) -> Option<&'a str> {
    headers.get(name).and_then(|value| value.to_str().ok())
}

/// The revision the version header names: `Ok(None)` when absent, an error when not served.
pub(crate) fn header_revision(headers: &HeaderMap) -> Result<Option<Revision>, String> {
    header(headers, &VERSION_HEADER)
        .map(|text| text.parse::<Revision>().map_err(|_| text.to_owned()))
        .transpose()
}

/// Whether the request stands alone under the stateless revision.
pub(crate) fn is_stateless(request: &Request, headers: &HeaderMap) -> bool {
    request.method == "server/discover"
        || meta_version(&params_of(request)).is_some()
        || matches!(header_revision(headers), Ok(Some(revision)) if revision.is_stateless())
}

fn bad_request(error: ErrorObject) -> Rejection {
    Rejection::new(StatusCode::BAD_REQUEST, error)
}

pub(crate) fn unsupported_version(requested: &str) -> ErrorObject {
    ErrorObject::new(
        codes::UNSUPPORTED_PROTOCOL_VERSION,
        "unsupported protocol version",
    )
    .with_data(json!({ "requested": requested, "supported": Revision::supported() }))
}

fn mismatch(message: &'static str) -> Rejection {
    bad_request(ErrorObject::new(codes::HEADER_MISMATCH, message))
}

/// Checks every request of a body against the headers it came with.
pub(crate) fn admit(
    messages: &[Message],
    headers: &HeaderMap,
    in_session: bool,
) -> Result<(), Rejection> {
    let header_revision = match header_revision(headers) {
        Ok(revision) => revision,
        Err(requested) => return Err(bad_request(unsupported_version(&requested))),
    };
    for message in messages {
        let Message::Request(request) = message else {
            continue;
        };
        let params = params_of(request);
        match meta_version(&params) {
            Some(version) => admit_stateless(request, &params, version, headers)?,
            None if header_revision.is_some_and(Revision::is_stateless) && !in_session => {
                return Err(mismatch(
                    "MCP-Protocol-Version names the stateless revision but the request has no _meta protocol version",
                ));
            }
            None => {}
        }
    }
    Ok(())
}

fn admit_stateless(
    request: &Request,
    params: &Value,
    version: &str,
    headers: &HeaderMap,
) -> Result<(), Rejection> {
    match version.parse::<Revision>() {
        Ok(revision) if revision.is_stateless() => {}
        _ => return Err(bad_request(unsupported_version(version))),
    }
    if header(headers, &VERSION_HEADER).is_some_and(|named| named != version) {
        return Err(mismatch(
            "MCP-Protocol-Version disagrees with the request's _meta",
        ));
    }
    match header(headers, &METHOD_HEADER) {
        Some(method) if method == request.method => {}
        Some(_) => return Err(mismatch("Mcp-Method disagrees with the request's method")),
        None => return Err(mismatch("Mcp-Method is required")),
    }
    let Some(named) = named_target(&request.method, params) else {
        return Ok(());
    };
    match header(headers, &NAME_HEADER) {
        Some(name) if name == named => Ok(()),
        Some(_) => Err(mismatch("Mcp-Name disagrees with the request's target")),
        None => Err(mismatch("Mcp-Name is required for this method")),
    }
}

/// What `Mcp-Name` must repeat for methods that address one thing.
fn named_target<'a>(method: &str, params: &'a Value) -> Option<&'a str> {
    let field = match method {
        "tools/call" | "prompts/get" => "name",
        "resources/read" => "uri",
        _ => return None,
    };
    params.get(field).and_then(Value::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;
    use protocols_runtime::RequestId;
    use protocols_runtime::jsonrpc::to_raw;

    fn call(name: &str, version: &str) -> Message {
        let params = json!({"name": name, "_meta": {META_PROTOCOL_VERSION: version, META_CLIENT_CAPABILITIES: {}}});
        Message::Request(Request {
            id: RequestId::Number(1),
            method: "tools/call".to_owned(),
            params: to_raw(&params).ok(),
        })
    }

    fn headers(pairs: &[(&HeaderName, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert((*name).clone(), HeaderValue::from_static(value));
        }
        map
    }

    fn code(outcome: Result<(), Rejection>) -> Option<i64> {
        outcome.err().map(|rejection| rejection.error().code)
    }

    #[test]
    fn agreeing_headers_are_admitted() {
        let headers = headers(&[
            (&METHOD_HEADER, "tools/call"),
            (&NAME_HEADER, "echo"),
            (&VERSION_HEADER, "2026-07-28"),
        ]);
        assert_eq!(
            code(admit(&[call("echo", "2026-07-28")], &headers, false)),
            None
        );
    }

    #[test]
    fn a_name_header_naming_another_tool_is_a_header_mismatch() {
        let headers = headers(&[(&METHOD_HEADER, "tools/call"), (&NAME_HEADER, "other")]);
        assert_eq!(
            code(admit(&[call("echo", "2026-07-28")], &headers, false)),
            Some(codes::HEADER_MISMATCH)
        );
    }

    #[test]
    fn a_missing_method_header_is_a_header_mismatch() {
        let headers = headers(&[(&NAME_HEADER, "echo")]);
        assert_eq!(
            code(admit(&[call("echo", "2026-07-28")], &headers, false)),
            Some(codes::HEADER_MISMATCH)
        );
    }

    #[test]
    fn an_unknown_meta_version_is_unsupported_with_the_supported_list() {
        let headers = headers(&[(&METHOD_HEADER, "tools/call"), (&NAME_HEADER, "echo")]);
        let outcome = admit(&[call("echo", "2031-01-01")], &headers, false);
        let error = outcome.err().map(|rejection| rejection.error().clone());
        assert_eq!(
            error.as_ref().map(|error| error.code),
            Some(codes::UNSUPPORTED_PROTOCOL_VERSION)
        );
        assert_eq!(
            error
                .and_then(|error| error.data)
                .map(|data| data["requested"].clone()),
            Some(json!("2031-01-01"))
        );
    }

    #[test]
    fn an_unserved_version_header_is_refused_with_400() {
        let headers = headers(&[(&VERSION_HEADER, "1999-01-01")]);
        let outcome = admit(&[], &headers, true);
        assert_eq!(
            outcome.err().map(|rejection| rejection.status()),
            Some(StatusCode::BAD_REQUEST)
        );
    }
}
