//! The headers a 2026-07-28 request repeats from its body (SEP-2243): `Mcp-Method`, `Mcp-Name`
//! (a tool's or prompt's name, a resource's URI) and one `Mcp-Param-{Name}` per argument a
//! tool's input schema marks with `x-mcp-header`. A tool whose marks break the rules (empty,
//! not a header token, on a non-primitive or `number` property, repeated ignoring case) is
//! excluded from what `tools/list` returns, so it is never called.

use std::collections::HashMap;

use base64::Engine as _;
use http::{HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;

use crate::conventions::{METHOD_HEADER, NAME_HEADER};
use crate::generated::{v2025_11_25, v2026_07_28};

/// The property keyword naming a header a tool argument is mirrored into.
const HEADER_KEYWORD: &str = "x-mcp-header";

/// Which arguments of one tool go into which `Mcp-Param-*` header.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolHeaders {
    /// (argument name, header suffix as the schema spells it)
    params: Vec<(String, String)>,
}

/// Why a tool's `x-mcp-header` marks are refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidToolHeader {
    /// The header name is empty.
    #[error("an x-mcp-header is empty")]
    Empty,
    /// The header name is not an HTTP token.
    #[error("an x-mcp-header is not an HTTP header token")]
    Charset,
    /// The annotated property is not a string, integer or boolean.
    #[error("an x-mcp-header is on a property that is not a string, integer or boolean")]
    NotPrimitive,
    /// Two properties name the same header.
    #[error("two properties name the same x-mcp-header")]
    Duplicate,
}

impl ToolHeaders {
    /// Reads the marks of one tool definition (`inputSchema.properties.*.x-mcp-header`).
    ///
    /// # Errors
    /// A mark breaks one of SEP-2243's rules.
    pub fn of_tool(tool: &Value) -> Result<Self, InvalidToolHeader> {
        let Some(properties) = tool
            .pointer("/inputSchema/properties")
            .and_then(Value::as_object)
        else {
            return Ok(Self::default());
        };
        let mut params = Vec::new();
        for (argument, property) in properties {
            let Some(mark) = property.get(HEADER_KEYWORD) else {
                continue;
            };
            let name = mark.as_str().ok_or(InvalidToolHeader::Charset)?;
            if name.is_empty() {
                return Err(InvalidToolHeader::Empty);
            }
            if !name.bytes().all(is_token_byte) {
                return Err(InvalidToolHeader::Charset);
            }
            let primitive = matches!(
                property.get("type").and_then(Value::as_str),
                Some("string" | "integer" | "boolean")
            );
            if !primitive {
                return Err(InvalidToolHeader::NotPrimitive);
            }
            if params
                .iter()
                .any(|(_, seen): &(String, String)| seen.eq_ignore_ascii_case(name))
            {
                return Err(InvalidToolHeader::Duplicate);
            }
            params.push((argument.clone(), name.to_owned()));
        }
        Ok(Self { params })
    }

    /// The `Mcp-Param-*` headers for one call's `arguments`: absent and `null` arguments are
    /// left out, the rest encoded as SEP-2243 says.
    pub fn headers_for(&self, arguments: Option<&Value>) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for (argument, suffix) in &self.params {
            let Some(value) = arguments.and_then(|arguments| arguments.get(argument)) else {
                continue;
            };
            let Some(text) = header_text(value) else {
                continue;
            };
            let name = HeaderName::try_from(format!("mcp-param-{suffix}"));
            let value = HeaderValue::from_str(&encode_value(&text));
            if let (Ok(name), Ok(value)) = (name, value) {
                headers.insert(name, value);
            }
        }
        headers
    }
}

/// RFC 9110 `tchar`.
fn is_token_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&byte)
}

/// A primitive argument as header text; `None` for null and non-primitives.
fn header_text(value: &Value) -> Option<String> {
    match value {
        Value::String(text) => Some(text.clone()),
        Value::Bool(flag) => Some(flag.to_string()),
        Value::Number(number) => Some(number.to_string()),
        _ => None,
    }
}

/// Plain when the text is visible ASCII without surrounding whitespace; otherwise
/// `=?base64?…?=` of its UTF-8 bytes.
pub(crate) fn encode_value(text: &str) -> String {
    let plain = text.bytes().all(|byte| (0x20..=0x7e).contains(&byte)) && text.trim() == text;
    if plain {
        text.to_owned()
    } else {
        format!(
            "=?base64?{}?=",
            base64::engine::general_purpose::STANDARD.encode(text.as_bytes())
        )
    }
}

/// What `Mcp-Name` repeats for a method: the tool's or prompt's name, the resource's URI.
fn name_of<'a>(method: &str, params: Option<&'a Value>) -> Option<&'a str> {
    let field = match method {
        v2026_07_28::methods::TOOLS_CALL | v2026_07_28::methods::PROMPTS_GET => "name",
        v2026_07_28::methods::RESOURCES_READ
        | v2025_11_25::methods::RESOURCES_SUBSCRIBE
        | v2025_11_25::methods::RESOURCES_UNSUBSCRIBE => "uri",
        _ => return None,
    };
    params?.get(field)?.as_str()
}

/// `Mcp-Method`, `Mcp-Name` and, for a `tools/call` of a known tool, its `Mcp-Param-*`.
pub(crate) fn request_headers(
    method: &str,
    params: Option<&Value>,
    tools: &HashMap<String, ToolHeaders>,
) -> HeaderMap {
    let mut headers = HeaderMap::new();
    if method.is_empty() {
        // An answer to the server, or a GET: no method to repeat.
        return headers;
    }
    if let Ok(value) = HeaderValue::from_str(method) {
        headers.insert(METHOD_HEADER, value);
    }
    if let Some(name) = name_of(method, params) {
        if let Ok(value) = HeaderValue::from_str(&encode_value(name)) {
            headers.insert(NAME_HEADER, value);
        }
        if method == v2026_07_28::methods::TOOLS_CALL
            && let Some(tool) = tools.get(name)
        {
            headers.extend(tool.headers_for(params.and_then(|params| params.get("arguments"))));
        }
    }
    headers
}

/// Drops from a `tools/list` result every tool whose marks are invalid, and returns the
/// header map of each tool kept.
pub(crate) fn screen_tools(result: &mut Value) -> HashMap<String, ToolHeaders> {
    let mut kept = HashMap::new();
    let Some(tools) = result.get_mut("tools").and_then(Value::as_array_mut) else {
        return kept;
    };
    tools.retain(|tool| {
        let name = tool.get("name").and_then(Value::as_str).unwrap_or_default();
        match ToolHeaders::of_tool(tool) {
            Ok(headers) => {
                kept.insert(name.to_owned(), headers);
                true
            }
            Err(reason) => {
                tracing::warn!(tool = %protocols_runtime::quote::quote(name), %reason, "tool excluded");
                false
            }
        }
    });
    kept
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn tool(properties: Value) -> Value {
        json!({"name": "t", "inputSchema": {"type": "object", "properties": properties}})
    }

    #[test]
    fn values_are_plain_ascii_or_base64() {
        assert_eq!(encode_value("us-west1"), "us-west1");
        assert_eq!(encode_value("us west 1"), "us west 1");
        assert_eq!(encode_value(""), "");
        assert_eq!(encode_value(" padded "), "=?base64?IHBhZGRlZCA=?=");
        assert_eq!(encode_value("\tindented"), "=?base64?CWluZGVudGVk?=");
        assert_eq!(
            encode_value("Hello, 世界"),
            "=?base64?SGVsbG8sIOS4lueVjA==?="
        );
        assert_eq!(encode_value("line1\nline2"), "=?base64?bGluZTEKbGluZTI=?=");
    }

    #[test]
    fn marked_arguments_become_param_headers_and_null_ones_are_left_out() {
        let headers = ToolHeaders::of_tool(&tool(json!({
            "region": {"type": "string", "x-mcp-header": "Region"},
            "priority": {"type": "integer", "x-mcp-header": "Priority"},
            "verbose": {"type": "boolean", "x-mcp-header": "Verbose"},
            "query": {"type": "string"}
        })))
        .unwrap();
        let sent = headers.headers_for(Some(&json!({
            "region": "eu", "priority": 42, "verbose": null, "query": "q"
        })));
        assert_eq!(sent.get("mcp-param-region").unwrap(), "eu");
        assert_eq!(sent.get("mcp-param-priority").unwrap(), "42");
        assert!(sent.get("mcp-param-verbose").is_none());
        assert_eq!(sent.len(), 2);
    }

    #[test]
    fn invalid_marks_are_refused() {
        for (properties, reason) in [
            (
                json!({"v": {"type": "string", "x-mcp-header": ""}}),
                InvalidToolHeader::Empty,
            ),
            (
                json!({"v": {"type": "string", "x-mcp-header": "My Region"}}),
                InvalidToolHeader::Charset,
            ),
            (
                json!({"v": {"type": "string", "x-mcp-header": "A:B"}}),
                InvalidToolHeader::Charset,
            ),
            (
                json!({"v": {"type": "string", "x-mcp-header": "Région"}}),
                InvalidToolHeader::Charset,
            ),
            (
                json!({"v": {"type": "string", "x-mcp-header": "A\t1"}}),
                InvalidToolHeader::Charset,
            ),
            (
                json!({"v": {"type": "number", "x-mcp-header": "Score"}}),
                InvalidToolHeader::NotPrimitive,
            ),
            (
                json!({"v": {"type": "object", "x-mcp-header": "Data"}}),
                InvalidToolHeader::NotPrimitive,
            ),
            (
                json!({"v": {"type": "null", "x-mcp-header": "Nil"}}),
                InvalidToolHeader::NotPrimitive,
            ),
            (
                json!({"a": {"type": "string", "x-mcp-header": "MyField"}, "b": {"type": "string", "x-mcp-header": "myfield"}}),
                InvalidToolHeader::Duplicate,
            ),
        ] {
            assert_eq!(
                ToolHeaders::of_tool(&tool(properties.clone())),
                Err(reason),
                "{properties}"
            );
        }
    }

    #[test]
    fn a_tools_list_keeps_only_the_valid_tools() {
        let mut result = json!({"tools": [
            tool(json!({"r": {"type": "string", "x-mcp-header": "Region"}})),
            {"name": "bad", "inputSchema": {"properties": {"r": {"type": "string", "x-mcp-header": ""}}}},
        ]});
        let kept = screen_tools(&mut result);
        assert_eq!(result["tools"].as_array().unwrap().len(), 1);
        assert!(kept.contains_key("t"));
    }

    #[test]
    fn method_and_name_headers_mirror_the_body() {
        let tools = HashMap::new();
        let sent = request_headers(
            "resources/read",
            Some(&json!({"uri": "file:///a%20b"})),
            &tools,
        );
        assert_eq!(sent.get(METHOD_HEADER).unwrap(), "resources/read");
        assert_eq!(sent.get(NAME_HEADER).unwrap(), "file:///a%20b");
        let sent = request_headers("tools/list", None, &tools);
        assert!(sent.get(NAME_HEADER).is_none());
    }
}
