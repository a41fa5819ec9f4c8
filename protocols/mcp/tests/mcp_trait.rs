//! The generated 2025-11-25 `Server` trait is the API: a hand-written implementation (one
//! revision's types, no builder) is served at one endpoint to every revision from 2024-11-05
//! to the stateless 2026-07-28, with the same negotiation and wire conversion, and every
//! message it causes conforms to the peer's pinned schema. Its typed tool listing carries JSON
//! Schema 2020-12 keywords (`$defs`) the schema leaves open.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod mcp_common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use mcp_common::{Client, Schemas, call, spawn};
use protocols_mcp::content::{text, tool_result};
use protocols_mcp::generated::v2025_11_25::Server;
use protocols_mcp::{McpServer, RequestContext, Revision, types};
use protocols_runtime::ErrorObject;
use serde_json::{Value, json};

/// Serves one tool, `lookup`, whose input schema refers to a `$defs` entry.
#[derive(Debug, Default)]
struct Lookup {
    initialized: Arc<AtomicUsize>,
}

fn lookup_schema() -> Value {
    json!({
        "type": "object",
        "$defs": {"key": {"type": "string", "minLength": 1}},
        "properties": {"key": {"$ref": "#/$defs/key"}},
        "required": ["key"]
    })
}

impl Server for Lookup {
    type Context = RequestContext;

    async fn initialize(
        &self,
        params: types::InitializeRequestParams,
        _cx: &RequestContext,
    ) -> Result<types::InitializeResult, ErrorObject> {
        serde_json::from_value(json!({
            "protocolVersion": params.protocol_version,
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "lookup", "version": "1.0.0"},
        }))
        .map_err(|_| ErrorObject::internal_error())
    }

    async fn tools_list(
        &self,
        _params: Option<types::PaginatedRequestParams>,
        _cx: &RequestContext,
    ) -> Result<types::ListToolsResult, ErrorObject> {
        let tool: types::Tool = serde_json::from_value(json!({
            "name": "lookup",
            "description": "Looks a key up",
            "inputSchema": lookup_schema(),
        }))
        .map_err(|_| ErrorObject::internal_error())?;
        Ok(types::ListToolsResult {
            meta: None,
            next_cursor: None,
            tools: vec![tool],
        })
    }

    async fn tools_call(
        &self,
        params: types::CallToolRequestParams,
        cx: &RequestContext,
    ) -> Result<types::CallToolResult, ErrorObject> {
        let key = params
            .arguments
            .as_ref()
            .and_then(|arguments| arguments.get("key"))
            .and_then(Value::as_str)
            .ok_or_else(|| ErrorObject::invalid_params("key is required"))?;
        Ok(tool_result(vec![text(format!(
            "{key} looked up over MCP {}",
            cx.revision()
        ))]))
    }

    async fn notifications_initialized(
        &self,
        _params: Option<types::NotificationParams>,
        _cx: &RequestContext,
    ) {
        self.initialized.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn the_typed_tool_keeps_the_defs_of_its_input_schema() {
    let tool: types::Tool = serde_json::from_value(json!({
        "name": "lookup",
        "inputSchema": lookup_schema(),
    }))
    .unwrap();
    assert!(tool.input_schema.extra.contains_key("$defs"));
    assert_eq!(
        serde_json::to_value(&tool).unwrap()["inputSchema"],
        lookup_schema()
    );
}

/// `initialize`, `tools/list`, `tools/call` and a method the trait leaves unimplemented, on
/// one session revision.
async fn session_tour(url: String, revision: Revision) {
    let mut client = Client::new(url);
    let init = client.initialize(revision.as_str()).await;
    assert_eq!(
        init.answer(0)["result"]["protocolVersion"],
        revision.as_str()
    );
    let listed = client.post(call(1, "tools/list", json!({}))).await;
    assert_eq!(
        listed.answer(1)["result"]["tools"][0]["inputSchema"],
        lookup_schema(),
        "{revision}"
    );
    let called = client
        .post(call(
            2,
            "tools/call",
            json!({"name": "lookup", "arguments": {"key": "k"}}),
        ))
        .await;
    assert_eq!(
        called.answer(2)["result"]["content"][0]["text"],
        format!("k looked up over MCP {revision}")
    );
    let unimplemented = client.post(call(3, "prompts/list", json!({}))).await;
    assert_eq!(unimplemented.answer(3)["error"]["code"], -32601);
    let bad = client
        .post(call(4, "tools/call", json!({"name": "lookup"})))
        .await;
    assert_eq!(bad.answer(4)["error"]["code"], -32602);
    assert!(client.check_all(&Schemas::new(revision)) >= 5);
}

fn stateless(id: i64, method: &str, params: Value) -> Value {
    stateless_at(Revision::V2026_07_28, id, method, params)
}

fn stateless_at(revision: Revision, id: i64, method: &str, mut params: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": revision.as_str(),
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    call(id, method, params)
}

fn stateless_client(url: String, method: &str, name: Option<&str>) -> Client {
    stateless_client_at(Revision::V2026_07_28, url, method, name)
}

fn stateless_client_at(
    revision: Revision,
    url: String,
    method: &str,
    name: Option<&str>,
) -> Client {
    let mut client = Client::new(url);
    client.version_header = Some(revision.as_str().to_owned());
    client
        .extra_headers
        .push(("mcp-method".to_owned(), method.to_owned()));
    if let Some(name) = name {
        client
            .extra_headers
            .push(("mcp-name".to_owned(), name.to_owned()));
    }
    client
}

#[tokio::test]
async fn a_hand_written_trait_implementation_is_served_to_every_revision_and_conforms() {
    let handler = Lookup::default();
    let initialized = Arc::clone(&handler.initialized);
    let running = spawn(McpServer::new(handler)).await;
    let session_revisions: Vec<Revision> = Revision::ALL
        .into_iter()
        .filter(|revision| revision.has_initialize())
        .collect();
    for revision in &session_revisions {
        session_tour(running.url("/mcp"), *revision).await;
    }
    assert_eq!(initialized.load(Ordering::SeqCst), session_revisions.len());

    let schemas = Schemas::new(Revision::V2026_07_28);
    let discover = stateless_client(running.url("/mcp"), "server/discover", None);
    let found = discover
        .post(stateless(1, "server/discover", json!({})))
        .await;
    let capabilities = &found.answer(1)["result"]["capabilities"];
    assert!(capabilities.get("tools").is_some(), "{capabilities}");
    let list = stateless_client(running.url("/mcp"), "tools/list", None);
    let listed = list.post(stateless(2, "tools/list", json!({}))).await;
    assert_eq!(
        listed.answer(2)["result"]["tools"][0]["inputSchema"],
        lookup_schema()
    );
    let invoke = stateless_client(running.url("/mcp"), "tools/call", Some("lookup"));
    let called = invoke
        .post(stateless(
            3,
            "tools/call",
            json!({"name": "lookup", "arguments": {"key": "k"}}),
        ))
        .await;
    let result = &called.answer(3)["result"];
    assert_eq!(result["resultType"], "complete");
    assert_eq!(
        result["content"][0]["text"],
        "k looked up over MCP 2026-07-28"
    );
    for client in [&discover, &list, &invoke] {
        client.check_all(&schemas);
    }
}

/// A newly pinned stateless revision is served with no test code: every one `Revision::ALL`
/// lists answers a `tools/call` written as it defines one (`scripts/new-revision.sh` runs this).
#[tokio::test]
async fn every_listed_stateless_revision_answers_a_tool_call_as_it_defines_one() {
    let running = spawn(McpServer::new(Lookup::default())).await;
    let stateless_revisions: Vec<Revision> = Revision::ALL
        .into_iter()
        .filter(|revision| revision.is_stateless())
        .collect();
    assert!(!stateless_revisions.is_empty());
    for revision in stateless_revisions {
        let invoke =
            stateless_client_at(revision, running.url("/mcp"), "tools/call", Some("lookup"));
        let called = invoke
            .post(stateless_at(
                revision,
                1,
                "tools/call",
                json!({"name": "lookup", "arguments": {"key": "k"}}),
            ))
            .await;
        let result = &called.answer(1)["result"];
        assert_eq!(result["resultType"], "complete", "{revision}");
        assert_eq!(
            result["content"][0]["text"],
            format!("k looked up over MCP {revision}")
        );
        assert!(invoke.check_all(&Schemas::new(revision)) >= 1, "{revision}");
    }
}
