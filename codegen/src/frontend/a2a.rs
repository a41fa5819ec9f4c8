//! A2A 0.3 method table: every request definition with a fixed `method` is a client-to-agent
//! method; its result is the `result` of `<X>SuccessResponse`.

use crate::error::{CodegenError, Result};
use crate::model::{Direction, MethodKind, MethodRow, Streaming};
use crate::normalize::fixed_method;

use super::{MethodInput, is_required, property_ref};

/// Methods whose answer is a stream of `SendStreamingMessageSuccessResponse` events: the 0.3
/// schema has no keyword for it, the specification's method list does.
const STREAMING: &[&str] = &["message/stream", "tasks/resubscribe"];
const STREAMING_RESPONSE: &str = "SendStreamingMessageSuccessResponse";

pub fn methods(input: &MethodInput<'_>) -> Result<Vec<MethodRow>> {
    let defs = input.normalized;
    let mut rows = Vec::new();
    for (name, schema) in defs {
        let Some(method) = schema.as_object().and_then(fixed_method) else {
            continue;
        };
        let streaming = STREAMING.contains(&method);
        let base = name.strip_suffix("Request").unwrap_or(name);
        let own_response = format!("{base}SuccessResponse");
        let response = if defs.contains_key(&own_response) {
            own_response
        } else if streaming {
            STREAMING_RESPONSE.to_string()
        } else {
            own_response
        };
        let result = property_ref(defs, &response, "result").ok_or_else(|| {
            CodegenError::schema(
                &input.doc.file,
                &input.doc.pointer(name),
                format!("no `{response}` result for `{method}`"),
            )
        })?;
        rows.push(MethodRow {
            name: method.to_string(),
            direction: Direction::ClientToServer,
            kind: MethodKind::Request,
            params: property_ref(defs, name, "params").map(str::to_string),
            params_optional: !is_required(defs, name, "params"),
            result: Some(result.to_string()),
            streaming: if streaming {
                Streaming::Results
            } else {
                Streaming::Unary
            },
            http: Vec::new(),
        });
    }
    rows.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(rows)
}
