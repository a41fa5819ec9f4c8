//! MCP's one read of a request's params before it runs (`protocols_mcp::stateless`), and the
//! header checks built on it. Input: `Name: value` header lines, a blank line, then a JSON-RPC
//! body (input without a blank line is all body). Claims: nothing panics; each field the head
//! reads is what a JSON map reading the same params holds there (a field of another JSON type
//! reads as absent, a repeated key keeps its last value); the params the handler is given are
//! the params as sent, or, for a stateless request whose `_meta` holds only the server's own
//! keys, exactly the params without `_meta`; a refusal of the checks is a 400.

#![no_main]

use http::StatusCode;
use libfuzzer_sys::fuzz_target;
use protocols_fuzz::{header_map, split_head};
use protocols_mcp::stateless::fuzzing::{Head, admit, read_head};
use protocols_mcp::stateless::{
    META_CLIENT_CAPABILITIES, META_CLIENT_INFO, META_LOG_LEVEL, META_PROTOCOL_VERSION,
};
use protocols_runtime::jsonrpc::{DecodeLimits, Payload, decode};
use protocols_runtime::{Message, Request};
use serde_json::{Map, Value};

/// The `_meta` keys the server reads; a stateless `_meta` of these alone is not the handler's.
const SERVER_META_KEYS: &[&str] = &[
    META_PROTOCOL_VERSION,
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
    META_LOG_LEVEL,
];

fuzz_target!(|data: &[u8]| {
    let (lines, body) = split_head(data);
    let headers = header_map(&lines);
    let messages = match decode(body, &DecodeLimits::default()) {
        Ok(Payload::Single(message)) => vec![message],
        Ok(Payload::Batch(entries)) => entries.into_iter().filter_map(Result::ok).collect(),
        Err(_) => return,
    };
    for message in &messages {
        if let Message::Request(request) = message {
            head_reads_what_a_json_map_holds(request);
        }
    }
    if let Err(rejection) = admit(&messages, &headers) {
        assert_eq!(rejection.status(), StatusCode::BAD_REQUEST, "{rejection:?}");
    }
});

fn head_reads_what_a_json_map_holds(request: &Request) {
    let head = read_head(request);
    let Some(params) = request.params.as_deref() else {
        assert!(head.protocol_version.is_none() && head.handler_params.is_none());
        return;
    };
    // serde_json refuses some numbers (out of f64 range) in a map that the head skips over.
    let Ok(value) = serde_json::from_str::<Value>(params.get()) else {
        return;
    };
    let fields = value.as_object();
    let field = |key: &str| fields.and_then(|fields| fields.get(key));
    let meta = field("_meta").and_then(Value::as_object);
    let meta_field = |key: &str| meta.and_then(|meta| meta.get(key));
    let text = |found: Option<&Value>| found.and_then(Value::as_str).map(str::to_owned);
    assert_eq!(head.name, text(field("name")), "name");
    assert_eq!(head.uri, text(field("uri")), "uri");
    assert_eq!(
        head.protocol_version,
        text(meta_field(META_PROTOCOL_VERSION)),
        "version"
    );
    assert_eq!(
        head.log_level,
        text(meta_field(META_LOG_LEVEL)),
        "log level"
    );
    same_json(
        &head.client_capabilities,
        meta_field(META_CLIENT_CAPABILITIES),
        "capabilities",
    );
    same_json(
        &head.client_info,
        meta_field(META_CLIENT_INFO),
        "client info",
    );
    same_json(
        &head.progress_token,
        meta_field("progressToken"),
        "progress token",
    );
    same_json(
        &head.input_responses,
        field("inputResponses"),
        "input responses",
    );
    handler_params_are_cut_only_cleanly(&head, params.get(), fields, meta);
}

/// A raw value the head kept is the JSON the map holds under the same key.
fn same_json(kept: &Option<String>, held: Option<&Value>, what: &str) {
    let kept = kept
        .as_deref()
        .map(|text| serde_json::from_str::<Value>(text).expect("a kept raw value is JSON"));
    assert_eq!(kept.as_ref(), held, "{what}");
}

fn handler_params_are_cut_only_cleanly(
    head: &Head,
    params: &str,
    fields: Option<&Map<String, Value>>,
    meta: Option<&Map<String, Value>>,
) {
    let given = head.handler_params.as_deref().expect("params were sent");
    if given == params {
        return;
    }
    assert!(
        head.protocol_version.is_some(),
        "a session request's params were changed"
    );
    let meta = meta.expect("params were cut without a _meta object");
    assert!(
        meta.keys()
            .all(|key| SERVER_META_KEYS.contains(&key.as_str())),
        "a _meta holding keys for the handler was cut: {meta:?}"
    );
    let mut expected = fields
        .cloned()
        .expect("params were cut but are not an object");
    expected.remove("_meta");
    let given: Value = serde_json::from_str(given).expect("the handler's params are JSON");
    assert_eq!(
        given,
        Value::Object(expected),
        "cutting _meta changed other params"
    );
}
