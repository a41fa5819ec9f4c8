//! What goes on the wire for a negotiated revision. The handler speaks 2025-11-25; every
//! result, notification and server→client request it produces passes through here on its way
//! out and is re-expressed in the peer's revision: content kinds the revision lacks become text,
//! then the value is decoded into that revision's generated type and encoded again, which drops
//! every field the revision does not define. Tool schemas are JSON Schema documents the
//! generated types cannot hold verbatim, so they are carried across unchanged. A result whose
//! definition in the peer's revision takes every 2025-11-25 one as written (2026-07-28
//! `tools/call`) is not decoded at all: it gets `resultType` and goes as the handler wrote it.

use serde_json::value::{RawValue, to_raw_value};
use serde_json::{Map, Value, json};

use crate::generated::v2026_07_28;
use crate::revision::Revision;

/// Which kind of message a value is the payload of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Payload {
    Result,
    Notification,
    Request,
}

/// `result` (2025-11-25 shape) of `method`, as `revision` defines it.
pub fn result_for(revision: Revision, method: &str, result: Value) -> Value {
    let result = with_result_fields(revision, method, result);
    if shaped_as_newest_session(revision, method) {
        return result;
    }
    let schemas = tool_schemas(method, &result);
    let mut converted = convert(revision, Payload::Result, method, result);
    restore_tool_schemas(revision, &mut converted, schemas);
    converted
}

/// [`result_for`] from JSON text to JSON text, the way a handler's typed answer leaves: where
/// nothing needs rewriting as a tree (no tool schemas to carry, no content kinds to
/// downgrade) the value decoded into the revision's type is encoded straight to text, without
/// a copy kept for the rare answer that does not fit or a second tree built from the type; and
/// where the revision's result takes the 2025-11-25 one as written, without decoding at all.
pub fn encoded_result_for(
    revision: Revision,
    method: &str,
    result: &RawValue,
) -> Result<Box<RawValue>, serde_json::Error> {
    if revision == Revision::NEWEST_SESSION {
        return Ok(result.to_owned());
    }
    if shaped_as_newest_session(revision, method) {
        return match with_result_type(result) {
            Some(written) => Ok(written),
            None => result_for_text(revision, method, result),
        };
    }
    if method == v2026_07_28::methods::TOOLS_LIST || !revision.has_every_content_kind() {
        return result_for_text(revision, method, result);
    }
    let value: Value = serde_json::from_str(result.get())?;
    let value = with_result_fields(revision, method, value);
    match reencode_to_text(revision, method, value) {
        Some(encoded) => Ok(encoded),
        // Does not fit, or the revision has no such method: `result_for` sends it as
        // produced (and says why), from a fresh copy since the decode consumed this one.
        None => result_for_text(revision, method, result),
    }
}

/// Whether `revision`'s result of `method` takes every 2025-11-25 result of it as written, once
/// `resultType` is added: its definitions differ only where they accept more (a `_meta` of any
/// object, `structuredContent` of any value), which `tests/result_shapes.rs` checks against
/// the schemas. Such a result is written once, as the handler's type wrote it; this also keeps
/// the handler's own `_meta` keys, which the generated 2026-07-28 type (it names one reserved
/// key) would drop though the schema allows them.
fn shaped_as_newest_session(revision: Revision, method: &str) -> bool {
    revision == Revision::V2026_07_28 && method == v2026_07_28::methods::TOOLS_CALL
}

/// `result` (an object's text) with `"resultType":"complete"` as its first member; `None` when
/// it is not an object or already names a `resultType` somewhere.
fn with_result_type(result: &RawValue) -> Option<Box<RawValue>> {
    const MEMBER: &str = r#""resultType":"complete""#;
    let text = result.get();
    if text.contains(r#""resultType""#) {
        return None;
    }
    let members = text.strip_prefix('{')?;
    let separator = if members.trim_start().starts_with('}') {
        ""
    } else {
        ","
    };
    let mut written = String::with_capacity(text.len() + MEMBER.len() + 1);
    written.push('{');
    written.push_str(MEMBER);
    written.push_str(separator);
    written.push_str(members);
    RawValue::from_string(written).ok()
}

fn result_for_text(
    revision: Revision,
    method: &str,
    result: &RawValue,
) -> Result<Box<RawValue>, serde_json::Error> {
    let value = serde_json::from_str(result.get())?;
    to_raw_value(&result_for(revision, method, value))
}

/// The fields a revision adds to every result: 2026-07-28's `resultType`, and its cache hints
/// on the results a client may reuse.
fn with_result_fields(revision: Revision, method: &str, result: Value) -> Value {
    let mut result = result;
    if revision.has_result_type()
        && let Value::Object(fields) = &mut result
    {
        fields
            .entry("resultType")
            .or_insert_with(|| Value::from("complete"));
        if let Some(hint) = cache_hint(method) {
            fields
                .entry("cacheScope")
                .or_insert_with(|| Value::from(hint.scope));
            fields
                .entry("ttlMs")
                .or_insert_with(|| Value::from(hint.ttl_ms));
        }
    }
    result
}

/// How long a 2026-07-28 client may reuse a cacheable result, and with whom.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct CacheHint {
    scope: &'static str,
    ttl_ms: u64,
}

/// Lists may be reused for a minute by the same caller (what they show can depend on who
/// asks); a read is fresh every time, since a resource may change without notice.
fn cache_hint(method: &str) -> Option<CacheHint> {
    match method {
        v2026_07_28::methods::TOOLS_LIST
        | v2026_07_28::methods::PROMPTS_LIST
        | v2026_07_28::methods::RESOURCES_LIST
        | v2026_07_28::methods::RESOURCES_TEMPLATES_LIST => Some(CacheHint {
            scope: "private",
            ttl_ms: 60_000,
        }),
        v2026_07_28::methods::RESOURCES_READ => Some(CacheHint {
            scope: "private",
            ttl_ms: 0,
        }),
        _ => None,
    }
}

/// Notification `params` (2025-11-25 shape) of `method`, as `revision` defines them.
pub fn notification_for(revision: Revision, method: &str, params: Value) -> Value {
    convert(revision, Payload::Notification, method, params)
}

/// Server→client request `params` (2025-11-25 shape) of `method`, as `revision` defines them.
pub fn request_for(revision: Revision, method: &str, params: Value) -> Value {
    convert(revision, Payload::Request, method, params)
}

fn convert(revision: Revision, payload: Payload, method: &str, value: Value) -> Value {
    if revision == Revision::NEWEST_SESSION {
        return value;
    }
    // Rebuilding the whole tree only pays off where some content kind needs rewriting.
    let value = if revision.has_every_content_kind() {
        value
    } else {
        downgrade_content(revision, value)
    };
    match reencode(revision, payload, method, value.clone()) {
        Some(Ok(converted)) => converted,
        // The revision has no such method: nothing to re-express it as.
        None => value,
        Some(Err(error)) => {
            tracing::warn!(%revision, method, %error, "a message does not fit its revision; sent as produced");
            value
        }
    }
}

/// How one revision's messages are re-expressed: each function decodes a value into the
/// revision's generated type for `method` and encodes it again (`None`: the revision has no such
/// method, or for `result_text` the value does not fit it either).
#[derive(Clone, Copy)]
struct Codec {
    /// A result, encoded as text.
    result_text: fn(&str, Value) -> Option<Box<RawValue>>,
    /// A result, notification params or request params, encoded as a value.
    reencode: fn(Payload, &str, Value) -> Option<Result<Value, String>>,
}

/// The [`Codec`] of a revision whose generated module is `$module`.
macro_rules! through {
    ($module:ident) => {{
        use crate::generated::$module as module;
        Codec {
            result_text: |method, value| {
                module::ServerResult::decode_result(method, value)
                    .ok()
                    .and_then(|typed| to_raw_value(&typed).ok())
            },
            reencode: |payload, method, value| {
                let outcome = match payload {
                    Payload::Result => module::ServerResult::decode_result(method, value)
                        .map(|typed| serde_json::to_value(typed).map_err(|e| e.to_string())),
                    Payload::Notification => {
                        module::ServerNotification::from_method(method, Some(value))
                            .map(|typed| params_or_empty(typed.params()))
                    }
                    Payload::Request => module::ServerRequest::from_method(method, Some(value))
                        .map(|typed| params_or_empty(typed.params())),
                };
                match outcome {
                    Ok(converted) => Some(converted),
                    Err(protocols_runtime::method::DispatchError::UnknownMethod) => None,
                    Err(error) => Some(Err(error.to_string())),
                }
            },
        }
    }};
}

/// The one place a newly pinned revision must be named by hand: how its messages are written
/// (the compiler demands an arm). The handler's own revision writes them as they are.
fn codec(revision: Revision) -> Codec {
    match revision {
        Revision::V2024_11_05 => through!(v2024_11_05),
        Revision::V2025_03_26 => through!(v2025_03_26),
        Revision::V2025_06_18 => through!(v2025_06_18),
        Revision::V2025_11_25 => AS_WRITTEN,
        Revision::V2026_07_28 => through!(v2026_07_28),
    }
}

/// The handler's revision: its values are already what the wire carries.
const AS_WRITTEN: Codec = Codec {
    result_text: |_, value| to_raw_value(&value).ok(),
    reencode: |_, _, value| Some(Ok(value)),
};

/// A message's re-encoded params, `{}` where it has none.
fn params_or_empty(params: Result<Option<Value>, serde_json::Error>) -> Result<Value, String> {
    params
        .map(|params| params.unwrap_or_else(|| json!({})))
        .map_err(|e| e.to_string())
}

/// Decodes `value` into the revision's generated result type for `method` and encodes that
/// as text; `None` when the revision has no such method or the value does not fit it.
fn reencode_to_text(revision: Revision, method: &str, value: Value) -> Option<Box<RawValue>> {
    (codec(revision).result_text)(method, value)
}

/// Decodes `value` into the revision's generated type for `method` and encodes it again.
/// `None` when the revision has no such method.
fn reencode(
    revision: Revision,
    payload: Payload,
    method: &str,
    value: Value,
) -> Option<Result<Value, String>> {
    (codec(revision).reencode)(payload, method, value)
}

/// Content kinds a revision lacks, re-expressed as text so the message still says what it
/// carried: audio arrived in 2025-03-26, resource links in 2025-06-18.
fn downgrade_content(revision: Revision, value: Value) -> Value {
    match value {
        Value::Object(fields) => {
            if let Some(text) = unsupported_content_as_text(revision, &fields) {
                return text;
            }
            Value::Object(
                fields
                    .into_iter()
                    .map(|(key, inner)| (key, downgrade_content(revision, inner)))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(
            items
                .into_iter()
                .map(|inner| downgrade_content(revision, inner))
                .collect(),
        ),
        other => other,
    }
}

fn unsupported_content_as_text(revision: Revision, fields: &Map<String, Value>) -> Option<Value> {
    let kind = fields.get("type")?.as_str()?;
    let text = match kind {
        "audio" if !revision.has_audio_content() => format!(
            "[audio content ({}) is not expressible in MCP {revision}]",
            fields
                .get("mimeType")
                .and_then(Value::as_str)
                .unwrap_or("unknown type")
        ),
        "resource_link" if !revision.has_resource_links() => format!(
            "[resource link: {}]",
            fields
                .get("uri")
                .and_then(Value::as_str)
                .unwrap_or_default()
        ),
        _ => return None,
    };
    Some(json!({ "type": "text", "text": text }))
}

/// The `inputSchema`/`outputSchema` of each tool of a `tools/list` result, by position.
type ToolSchemas = Vec<(Option<Value>, Option<Value>)>;

fn tool_schemas(method: &str, result: &Value) -> ToolSchemas {
    if method != v2026_07_28::methods::TOOLS_LIST {
        return Vec::new();
    }
    result
        .get("tools")
        .and_then(Value::as_array)
        .map(|tools| {
            tools
                .iter()
                .map(|tool| {
                    (
                        tool.get("inputSchema").cloned(),
                        tool.get("outputSchema").cloned(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn restore_tool_schemas(revision: Revision, result: &mut Value, schemas: ToolSchemas) {
    let Some(tools) = result.get_mut("tools").and_then(Value::as_array_mut) else {
        return;
    };
    for (tool, (input, output)) in tools.iter_mut().zip(schemas) {
        let Value::Object(tool) = tool else { continue };
        if let Some(input) = input {
            tool.insert("inputSchema".to_owned(), input);
        }
        if let Some(output) = output
            && revision >= Revision::V2025_06_18
        {
            tool.insert("outputSchema".to_owned(), output);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn structured_content_is_dropped_before_2025_06_18_and_kept_after() {
        let result = json!({
            "content": [{"type": "text", "text": "7"}],
            "structuredContent": {"sum": 7}
        });
        let old = result_for(Revision::V2025_03_26, "tools/call", result.clone());
        assert!(old.get("structuredContent").is_none(), "{old}");
        let newer = result_for(Revision::V2025_06_18, "tools/call", result);
        assert_eq!(newer["structuredContent"], json!({"sum": 7}));
    }

    #[test]
    fn audio_becomes_text_for_2024_11_05() {
        let result =
            json!({"content": [{"type": "audio", "data": "AAAA", "mimeType": "audio/wav"}]});
        let old = result_for(Revision::V2024_11_05, "tools/call", result);
        assert_eq!(old["content"][0]["type"], "text");
    }

    #[test]
    fn a_resource_link_is_text_before_2025_06_18_and_a_link_from_then_on() {
        let result =
            json!({"content": [{"type": "resource_link", "uri": "file:///a", "name": "a"}]});
        for revision in Revision::ALL {
            let out = result_for(revision, "tools/call", result.clone());
            let expected = if revision >= Revision::V2025_06_18 {
                "resource_link"
            } else {
                "text"
            };
            assert_eq!(out["content"][0]["type"], expected, "{revision}");
        }
    }

    #[test]
    fn a_tool_schema_survives_every_revision_verbatim() {
        let schema = json!({"type": "object", "$defs": {"a": {"type": "string"}}, "additionalProperties": false});
        let result = json!({"tools": [{"name": "t", "inputSchema": schema}]});
        for revision in Revision::ALL {
            let out = result_for(revision, "tools/list", result.clone());
            assert_eq!(out["tools"][0]["inputSchema"], schema, "{revision}");
        }
    }

    #[test]
    fn results_on_2026_07_28_say_they_are_complete() {
        let out = result_for(Revision::V2026_07_28, "tools/list", json!({"tools": []}));
        assert_eq!(out["resultType"], "complete");
    }

    #[test]
    fn a_2026_07_28_tool_result_is_the_handlers_with_result_type_and_its_own_meta_keys() {
        let result = json!({"content": [{"type": "text", "text": "7"}], "isError": false, "_meta": {"app/k": 1}});
        let encoded = to_raw_value(&result)
            .ok()
            .and_then(|text| encoded_result_for(Revision::V2026_07_28, "tools/call", &text).ok())
            .and_then(|encoded| serde_json::from_str::<Value>(encoded.get()).ok());
        let mut expected = result;
        insert_result_type(&mut expected);
        assert_eq!(encoded, Some(expected));
    }

    #[test]
    fn an_empty_result_object_gets_result_type_as_its_only_member() {
        let empty = RawValue::from_string("{ }".to_owned()).ok();
        let written = empty.as_deref().and_then(with_result_type);
        assert_eq!(
            written.as_deref().map(RawValue::get),
            Some(r#"{"resultType":"complete" }"#)
        );
    }

    fn insert_result_type(value: &mut Value) {
        if let Value::Object(fields) = value {
            fields.insert("resultType".to_owned(), json!("complete"));
        }
    }

    #[test]
    fn the_text_path_gives_what_the_value_path_gives_on_every_revision() {
        let results = [
            (
                "tools/call",
                json!({"content": [{"type": "text", "text": "7"}], "structuredContent": {"sum": 7}, "_meta": {"k": 1}}),
            ),
            (
                "tools/call",
                json!({"content": [{"type": "audio", "data": "AAAA", "mimeType": "audio/wav"}, {"type": "resource_link", "uri": "file:///a", "name": "a"}]}),
            ),
            (
                "tools/list",
                json!({"tools": [{"name": "t", "inputSchema": {"type": "object", "$defs": {}}}]}),
            ),
            ("resources/read", json!({"contents": []})),
            // Names `resultType` itself (here in its `_meta`): the text is not spliced.
            (
                "tools/call",
                json!({"content": [], "_meta": {"resultType": "x"}}),
            ),
            // Does not fit its type: sent as produced.
            ("tools/call", json!({"content": "not a list"})),
            ("no/such/method", json!({"anything": [1, 2]})),
        ];
        for revision in Revision::ALL {
            for (method, result) in &results {
                let text = to_raw_value(result).ok();
                let encoded = text
                    .as_deref()
                    .and_then(|text| encoded_result_for(revision, method, text).ok())
                    .and_then(|encoded| serde_json::from_str::<Value>(encoded.get()).ok());
                let expected = result_for(revision, method, result.clone());
                assert_eq!(encoded, Some(expected), "{revision} {method}");
            }
        }
    }
}
