//! ACP method table: each definition carrying `x-method`/`x-side` is the params (`…Request`,
//! `…Notification`) or result (`…Response`) of that method; `x-side` names the peer that handles
//! it (`agent` = sent by the client). The table must list exactly the methods of `meta.json`.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::error::{CodegenError, Result};
use crate::model::{Direction, MethodKind, MethodRow, Streaming};

use super::MethodInput;

#[derive(Debug, Default)]
struct Parts {
    side: Option<String>,
    params: Option<String>,
    result: Option<String>,
    notification: bool,
    first_definition: String,
}

pub fn methods(input: &MethodInput<'_>) -> Result<Vec<MethodRow>> {
    let mut by_method: BTreeMap<String, Parts> = BTreeMap::new();
    for (name, schema) in input.raw {
        let Some(method) = schema.get("x-method").and_then(Value::as_str) else {
            continue;
        };
        let parts = by_method.entry(method.to_string()).or_default();
        if parts.first_definition.is_empty() {
            parts.first_definition = name.clone();
        }
        parts.side = schema
            .get("x-side")
            .and_then(Value::as_str)
            .map(str::to_string);
        if name.ends_with("Response") {
            parts.result = Some(name.clone());
        } else {
            parts.notification = name.ends_with("Notification");
            parts.params = Some(name.clone());
        }
    }
    check_against_meta(input, &by_method)?;
    by_method
        .into_iter()
        .map(|(method, parts)| row(input, method, parts))
        .collect()
}

fn row(input: &MethodInput<'_>, method: String, parts: Parts) -> Result<MethodRow> {
    let fail = |message: String| {
        CodegenError::schema(
            &input.doc.file,
            &input.doc.pointer(&parts.first_definition),
            message,
        )
    };
    let direction = match parts.side.as_deref() {
        Some("agent") => Direction::ClientToServer,
        Some("client") => Direction::ServerToClient,
        Some("protocol" | "both") => Direction::Both,
        other => return Err(fail(format!("`{method}` has x-side {other:?}"))),
    };
    let kind = if parts.notification {
        MethodKind::Notification
    } else {
        MethodKind::Request
    };
    if kind == MethodKind::Request && parts.result.is_none() {
        return Err(fail(format!(
            "request `{method}` has no …Response definition"
        )));
    }
    Ok(MethodRow {
        name: method,
        direction,
        kind,
        params: parts.params,
        params_optional: false,
        result: parts.result,
        streaming: Streaming::Unary,
        http: Vec::new(),
    })
}

/// meta.json's `agentMethods`, `clientMethods` and `protocolMethods` values must be exactly the
/// `x-method`s of the schema.
fn check_against_meta(input: &MethodInput<'_>, by_method: &BTreeMap<String, Parts>) -> Result<()> {
    let Some((meta_file, meta)) = input.extra.first() else {
        return Err(CodegenError::schema(
            &input.doc.file,
            "",
            "ACP needs its meta.json",
        ));
    };
    let listed: BTreeSet<String> = ["agentMethods", "clientMethods", "protocolMethods"]
        .iter()
        .filter_map(|group| meta.get(*group).and_then(Value::as_object))
        .flat_map(|group| group.values())
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect();
    let defined: BTreeSet<String> = by_method.keys().cloned().collect();
    if listed != defined {
        let missing: Vec<_> = listed.difference(&defined).collect();
        let extra: Vec<_> = defined.difference(&listed).collect();
        return Err(CodegenError::schema(
            meta_file,
            "",
            format!(
                "meta.json and x-method disagree: only in meta {missing:?}, only in schema {extra:?}"
            ),
        ));
    }
    Ok(())
}
