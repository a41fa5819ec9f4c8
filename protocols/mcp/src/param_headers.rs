//! SEP-2243 (2026-07-28, Streamable HTTP): values a client mirrors from the body into headers,
//! and the server's check that they agree. A tool marks a parameter with `x-mcp-header: Name`
//! in its `inputSchema`, and a client sends the argument's value as `Mcp-Param-Name`; `Mcp-Name`
//! repeats the call's target. A value that cannot travel as plain ASCII comes Base64-encoded
//! between `=?base64?` and `?=`. This module owns which annotations are valid (a tool with an
//! invalid one is refused when it is registered), how a header value is decoded, and the check
//! of each `tools/call`'s headers against its arguments (a disagreement is `-32020`).

use std::collections::HashSet;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use http::{HeaderMap, HeaderName};
use protocols_runtime::ErrorObject;
use serde_json::{Map, Value};

use crate::errors::codes;

/// The schema keyword naming a parameter's header.
pub const ANNOTATION: &str = "x-mcp-header";
/// What every mirrored parameter's header name starts with.
pub const PREFIX: &str = "Mcp-Param-";
/// JavaScript's largest safe integer: integer parameters beyond it cannot be mirrored.
const MAX_SAFE_INTEGER: i64 = (1 << 53) - 1;
/// How deep an `inputSchema` is searched for annotations (deeper schemas are refused).
const MAX_SCHEMA_DEPTH: usize = 64;

/// The JSON type of a mirrored parameter (SEP-2243 allows no other).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Primitive {
    String,
    Integer,
    Boolean,
}

/// One parameter a tool mirrors into a header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HeaderParam {
    /// `Mcp-Param-{name}`, as a header name.
    header: HeaderName,
    /// The `x-mcp-header` value, for messages.
    name: Box<str>,
    /// The chain of `properties` keys from the arguments object to the value.
    path: Box<[Box<str>]>,
    kind: Primitive,
}

/// Why a tool's `x-mcp-header` annotations are not valid (what a client would refuse the tool
/// for).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidHeaderAnnotation {
    /// An `x-mcp-header` value is empty or not an HTTP token.
    #[error("an `x-mcp-header` value must be a non-empty HTTP token")]
    NotAToken,
    /// Two parameters are mirrored into the same header (named).
    #[error("two parameters are mirrored into the same header `{0}`")]
    Repeated(String),
    /// The header (named) is on a parameter that is not a string, integer or boolean.
    #[error("`x-mcp-header` `{0}` is on a parameter that is not a string, integer or boolean")]
    NotPrimitive(String),
    /// The header (named) is on a property not reachable through `properties` alone.
    #[error("`x-mcp-header` `{0}` is not on a property reachable through `properties` alone")]
    Unreachable(String),
    /// The input schema nests deeper than the annotations are looked for.
    #[error("the input schema nests deeper than {MAX_SCHEMA_DEPTH} levels")]
    TooDeep,
}

/// A schema still to visit: the schema, its path through `properties` from the root when it is
/// reachable so, and its depth.
type Pending<'a> = (&'a Value, Option<Vec<Box<str>>>, usize);

/// The parameters `input_schema` mirrors into headers, or why its annotations are invalid.
pub(crate) fn header_params(
    input_schema: &Value,
) -> Result<Vec<HeaderParam>, InvalidHeaderAnnotation> {
    let mut params = Vec::new();
    let mut seen = HashSet::new();
    let mut pending: Vec<Pending<'_>> = vec![(input_schema, Some(Vec::new()), 0)];
    while let Some((schema, reachable, depth)) = pending.pop() {
        if depth > MAX_SCHEMA_DEPTH {
            return Err(InvalidHeaderAnnotation::TooDeep);
        }
        match schema {
            Value::Object(fields) => {
                if let Some(annotation) = fields.get(ANNOTATION) {
                    params.push(annotated(
                        annotation,
                        fields,
                        reachable.as_deref(),
                        &mut seen,
                    )?);
                }
                for (key, value) in fields {
                    match (key.as_str(), value) {
                        // Instances, not schemas: nothing in them annotates anything.
                        ("const" | "enum" | "default" | "examples", _) => {}
                        ("properties", Value::Object(properties)) => {
                            for (property, schema) in properties {
                                let path = reachable.as_ref().map(|path| {
                                    let mut path = path.clone();
                                    path.push(property.as_str().into());
                                    path
                                });
                                pending.push((schema, path, depth + 1));
                            }
                        }
                        // Maps of schemas whose keys are names, not keywords.
                        (
                            "$defs" | "definitions" | "patternProperties" | "dependentSchemas",
                            Value::Object(schemas),
                        ) => {
                            pending.extend(schemas.values().map(|schema| (schema, None, depth + 1)))
                        }
                        _ => pending.push((value, None, depth + 1)),
                    }
                }
            }
            Value::Array(items) => {
                pending.extend(items.iter().map(|item| (item, None, depth + 1)));
            }
            _ => {}
        }
    }
    Ok(params)
}

/// The parameter one annotation describes.
fn annotated(
    annotation: &Value,
    schema: &Map<String, Value>,
    path: Option<&[Box<str>]>,
    seen: &mut HashSet<String>,
) -> Result<HeaderParam, InvalidHeaderAnnotation> {
    let name = annotation
        .as_str()
        .filter(|name| !name.is_empty() && name.bytes().all(is_tchar))
        .ok_or(InvalidHeaderAnnotation::NotAToken)?;
    let header = HeaderName::try_from(format!("{PREFIX}{name}"))
        .map_err(|_| InvalidHeaderAnnotation::NotAToken)?;
    if !seen.insert(name.to_ascii_lowercase()) {
        return Err(InvalidHeaderAnnotation::Repeated(name.to_owned()));
    }
    let kind = match schema.get("type").and_then(Value::as_str) {
        Some("string") => Primitive::String,
        Some("integer") => Primitive::Integer,
        Some("boolean") => Primitive::Boolean,
        _ => return Err(InvalidHeaderAnnotation::NotPrimitive(name.to_owned())),
    };
    // The root itself is the arguments object, not a parameter.
    let path = path
        .filter(|path| !path.is_empty())
        .ok_or_else(|| InvalidHeaderAnnotation::Unreachable(name.to_owned()))?;
    Ok(HeaderParam {
        header,
        name: name.into(),
        path: path.into(),
        kind,
    })
}

/// RFC 9110 `tchar`.
fn is_tchar(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&byte)
}

/// A header value as the body value it mirrors: Base64-decoded between the sentinels, verbatim
/// otherwise. `None` when it is not visible ASCII, or is sentinel-wrapped but not canonical
/// Base64 of UTF-8.
pub(crate) fn decode_value(raw: &http::HeaderValue) -> Option<String> {
    let text = raw.to_str().ok()?.trim();
    match text
        .strip_prefix("=?base64?")
        .and_then(|rest| rest.strip_suffix("?="))
    {
        Some(encoded) => String::from_utf8(STANDARD.decode(encoded).ok()?).ok(),
        None => Some(text.to_owned()),
    }
}

fn mismatch(message: String) -> ErrorObject {
    ErrorObject::new(codes::HEADER_MISMATCH, message)
}

/// The argument at `path`, when present and not `null`.
fn argument<'a>(arguments: Option<&'a Map<String, Value>>, path: &[Box<str>]) -> Option<&'a Value> {
    let (last, parents) = path.split_last()?;
    let mut object = arguments?;
    for key in parents {
        object = object.get(&**key)?.as_object()?;
    }
    object.get(&**last).filter(|value| !value.is_null())
}

/// Whether `header` (decoded) states `value` as a parameter of `kind`.
fn agrees(kind: Primitive, header: &str, value: &Value) -> bool {
    match kind {
        Primitive::String => value.as_str() == Some(header),
        Primitive::Boolean => {
            value.as_bool().map(|flag| flag.to_string()).as_deref() == Some(header)
        }
        // Compared as numbers (`42.0` states `42`), within JavaScript's safe range.
        Primitive::Integer => {
            let stated = header.parse::<f64>().ok();
            let sent = value.as_f64();
            matches!((stated, sent), (Some(stated), Some(sent))
                if stated == sent && sent.fract() == 0.0 && sent.abs() <= MAX_SAFE_INTEGER as f64)
        }
    }
}

/// Checks a `tools/call`'s `Mcp-Param-*` headers against its arguments: each mirrored value
/// present in the body must come in its header, decoded equal to it; a header without a value
/// in the body, a repeated one or one that does not decode is refused too.
pub(crate) fn check(
    params: &[HeaderParam],
    arguments: Option<&Map<String, Value>>,
    headers: &HeaderMap,
) -> Result<(), ErrorObject> {
    for param in params {
        let mut values = headers.get_all(&param.header).iter();
        let (sent, again) = (values.next(), values.next());
        if again.is_some() {
            return Err(mismatch(format!("{PREFIX}{} is repeated", param.name)));
        }
        match (argument(arguments, &param.path), sent) {
            (None, None) => {}
            (Some(_), None) => {
                return Err(mismatch(format!("{PREFIX}{} is required", param.name)));
            }
            (None, Some(_)) => {
                return Err(mismatch(format!(
                    "{PREFIX}{} mirrors a value the body does not have",
                    param.name
                )));
            }
            (Some(value), Some(raw)) => {
                let decoded = decode_value(raw).ok_or_else(|| {
                    mismatch(format!(
                        "{PREFIX}{} is not a valid header value",
                        param.name
                    ))
                })?;
                if !agrees(param.kind, &decoded, value) {
                    return Err(mismatch(format!(
                        "{PREFIX}{} disagrees with the body",
                        param.name
                    )));
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;
    use serde_json::json;

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "query": {"type": "string"},
                "limits": {"type": "object", "properties": {
                    "rows": {"type": "integer", "x-mcp-header": "Rows"},
                    "dry": {"type": "boolean", "x-mcp-header": "Dry-Run"}
                }}
            }
        })
    }

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(
                HeaderName::try_from(*name).unwrap(),
                HeaderValue::from_str(value).unwrap(),
            );
        }
        map
    }

    fn arguments(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn annotations_reachable_through_properties_are_read_with_their_paths() {
        let params = header_params(&schema()).unwrap();
        let mut names: Vec<&str> = params.iter().map(|param| &*param.name).collect();
        names.sort_unstable();
        assert_eq!(names, ["Dry-Run", "Region", "Rows"]);
    }

    #[test]
    fn an_annotation_that_is_not_a_token_repeated_not_primitive_or_unreachable_is_invalid() {
        for (schema, expected) in [
            (
                json!({"properties": {"a": {"type": "string", "x-mcp-header": "a b"}}}),
                InvalidHeaderAnnotation::NotAToken,
            ),
            (
                json!({"properties": {"a": {"type": "string", "x-mcp-header": ""}}}),
                InvalidHeaderAnnotation::NotAToken,
            ),
            (
                json!({"properties": {"a": {"type": "string", "x-mcp-header": "X"}, "b": {"type": "string", "x-mcp-header": "x"}}}),
                InvalidHeaderAnnotation::Repeated("x".to_owned()),
            ),
            (
                json!({"properties": {"a": {"type": "number", "x-mcp-header": "N"}}}),
                InvalidHeaderAnnotation::NotPrimitive("N".to_owned()),
            ),
            (
                json!({"anyOf": [{"properties": {"a": {"type": "string", "x-mcp-header": "A"}}}]}),
                InvalidHeaderAnnotation::Unreachable("A".to_owned()),
            ),
            (
                json!({"properties": {"a": {"type": "array", "items": {"type": "string", "x-mcp-header": "I"}}}}),
                InvalidHeaderAnnotation::Unreachable("I".to_owned()),
            ),
        ] {
            let found = header_params(&schema);
            assert!(
                found.as_ref().err() == Some(&expected)
                    || matches!(
                        (&found, &expected),
                        (
                            Err(InvalidHeaderAnnotation::Repeated(_)),
                            InvalidHeaderAnnotation::Repeated(_)
                        )
                    ),
                "{schema}: {found:?}"
            );
        }
    }

    #[test]
    fn base64_sentinel_values_are_decoded_and_other_values_taken_literally() {
        let decode = |text: &str| decode_value(&HeaderValue::from_str(text).unwrap());
        assert_eq!(decode("=?base64?SGVsbG8=?=").as_deref(), Some("Hello"));
        assert_eq!(decode("=?base64?SGVsbG8?="), None, "padding is required");
        assert_eq!(decode("=?base64?SGVs!!!bG8=?="), None);
        assert_eq!(decode("SGVsbG8=").as_deref(), Some("SGVsbG8="));
        assert_eq!(
            decode("=?base64?SGVsbG8=").as_deref(),
            Some("=?base64?SGVsbG8=")
        );
        assert_eq!(decode("  us-west1 ").as_deref(), Some("us-west1"));
    }

    #[test]
    fn mirrored_values_must_match_the_body_and_a_value_in_the_body_needs_its_header() {
        let params = header_params(&schema()).unwrap();
        let body = arguments(json!({"region": "Hello", "limits": {"rows": 42, "dry": false}}));
        let good = headers(&[
            ("mcp-param-region", "=?base64?SGVsbG8=?="),
            ("mcp-param-rows", "42.0"),
            ("mcp-param-dry-run", "false"),
        ]);
        assert_eq!(check(&params, Some(&body), &good), Ok(()));
        for bad in [
            headers(&[("mcp-param-rows", "42"), ("mcp-param-dry-run", "false")]),
            headers(&[
                ("mcp-param-region", "Hellx"),
                ("mcp-param-rows", "42"),
                ("mcp-param-dry-run", "false"),
            ]),
            headers(&[
                ("mcp-param-region", "Hello"),
                ("mcp-param-rows", "43"),
                ("mcp-param-dry-run", "false"),
            ]),
            headers(&[
                ("mcp-param-region", "Hello"),
                ("mcp-param-region", "Hello"),
                ("mcp-param-rows", "42"),
                ("mcp-param-dry-run", "false"),
            ]),
        ] {
            let refused = check(&params, Some(&body), &bad);
            assert_eq!(
                refused.map_err(|error| error.code),
                Err(codes::HEADER_MISMATCH),
                "{bad:?}"
            );
        }
        let absent = arguments(json!({"query": "q", "region": null}));
        assert_eq!(check(&params, Some(&absent), &HeaderMap::new()), Ok(()));
        assert!(
            check(
                &params,
                Some(&absent),
                &headers(&[("mcp-param-region", "x")])
            )
            .is_err()
        );
    }
}
