//! MCP method table: every definition whose `method` is a fixed string is a method; its
//! direction is its membership in the `Client*`/`Server*` unions; params are its `params`
//! property; the result is `<X>Result` for `<X>Request`, except where the revision names an
//! explicit `<X>ResultResponse` (2026-07-28) or answers with `EmptyResult`.

use crate::error::{CodegenError, Result};
use crate::model::{Direction, MethodKind, MethodRow, Streaming};
use serde_json::Value;

use crate::normalize::{Definitions, fixed_method};

use super::{MethodInput, is_required, property_ref, union_members};

pub fn methods(input: &MethodInput<'_>) -> Result<Vec<MethodRow>> {
    let defs = input.normalized;
    let client = members_of(defs, CLIENT_UNIONS);
    let server = members_of(defs, SERVER_UNIONS);
    let mut rows = Vec::new();
    for (name, schema) in defs {
        let Some(method) = schema.as_object().and_then(fixed_method) else {
            continue;
        };
        if CLIENT_UNIONS.contains(&name.as_str()) || SERVER_UNIONS.contains(&name.as_str()) {
            continue;
        }
        let kind = if name.ends_with("Notification") {
            MethodKind::Notification
        } else {
            MethodKind::Request
        };
        let direction = match (client.contains(name), server.contains(name)) {
            (true, true) => Direction::Both,
            (true, false) => Direction::ClientToServer,
            (false, true) => Direction::ServerToClient,
            (false, false) => {
                return Err(CodegenError::schema(
                    &input.doc.file,
                    &input.doc.pointer(name),
                    format!("method `{method}` is in no Client*/Server* union"),
                ));
            }
        };
        let result = match kind {
            MethodKind::Request => Some(result_of(input, name, method)?),
            MethodKind::Notification => None,
        };
        rows.push(MethodRow {
            name: method.to_string(),
            direction,
            kind,
            params: property_ref(defs, name, "params").map(str::to_string),
            params_optional: !is_required(defs, name, "params"),
            result,
            streaming: Streaming::Unary,
            http: Vec::new(),
        });
    }
    rows.sort_by(|a, b| (a.kind, &a.name).cmp(&(b.kind, &b.name)));
    Ok(rows)
}

/// The unions naming what the client sends.
const CLIENT_UNIONS: &[&str] = &["ClientRequest", "ClientNotification"];
/// The unions naming what the server sends; 2026-07-28 carries its server-to-client requests
/// inside results, listed by `InputRequest`.
const SERVER_UNIONS: &[&str] = &["ServerRequest", "ServerNotification", "InputRequest"];

/// Definitions the unions list. A union of one member is flattened upstream into a copy of that
/// member (2026-07-28 `ClientNotification`), so such a "union" stands for every definition
/// sharing its fixed method.
fn members_of(defs: &Definitions, unions: &[&str]) -> Vec<String> {
    let mut members = Vec::new();
    for union in unions {
        let flattened = defs
            .get(*union)
            .and_then(Value::as_object)
            .and_then(fixed_method);
        match flattened {
            Some(method) => members.extend(
                defs.iter()
                    .filter(|(name, schema)| {
                        !unions.contains(&name.as_str())
                            && schema.as_object().and_then(fixed_method) == Some(method)
                    })
                    .map(|(name, _)| name.clone()),
            ),
            None => members.extend(union_members(defs, union)),
        }
    }
    members
}

fn result_of(input: &MethodInput<'_>, request: &str, method: &str) -> Result<String> {
    let defs = input.normalized;
    let base = request.strip_suffix("Request").unwrap_or(request);
    let response = format!("{base}ResultResponse");
    if let Some(result) = property_ref(defs, &response, "result") {
        return Ok(result.to_string());
    }
    [format!("{base}Result"), "EmptyResult".to_string()]
        .into_iter()
        .find(|candidate| defs.contains_key(candidate))
        .ok_or_else(|| {
            CodegenError::schema(
                &input.doc.file,
                &input.doc.pointer(request),
                format!("no result definition for `{method}`"),
            )
        })
}
