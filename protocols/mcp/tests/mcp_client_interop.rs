//! Our client against the official SDKs' servers (TypeScript `@modelcontextprotocol/sdk`,
//! Python `mcp`), over Streamable HTTP and stdio: every feature both sides support — tools,
//! progress, elicitation and sampling answered through our callbacks, resources, prompts — and
//! `connect`'s negotiation. The peers are installed at pinned versions by
//! `scripts/interop-client.sh`, which runs these tests with `MCP_INTEROP_REQUIRED=1`; without
//! the peers (a plain `cargo test`) each test says so and passes nothing off as interop.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::time::Duration;

use protocols_mcp::Revision;
use protocols_mcp::client::{Callbacks, HttpClient, StdioClient};
use protocols_runtime::ErrorObject;
use protocols_runtime::jsonrpc::to_raw;
use protocols_runtime::method::RpcClient;
use serde_json::{Value, json};
use tokio::process::{Child, Command};

/// How to start one peer: a program and the server script it runs.
struct Peer {
    name: &'static str,
    program: PathBuf,
    script: PathBuf,
}

fn scripts() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/interop")
}

/// The peer named by the environment, or `None` (and a note) when it is not installed.
fn peer(name: &'static str) -> Option<Peer> {
    let required = std::env::var_os("MCP_INTEROP_REQUIRED").is_some();
    let found = match name {
        // ES modules resolve the SDK from the script's own folder, so the script runs from a
        // copy beside the install (MCP_INTEROP_TS_SERVER).
        "typescript" => std::env::var("MCP_INTEROP_NODE").ok().map(|node| Peer {
            name,
            program: node.into(),
            script: std::env::var("MCP_INTEROP_TS_SERVER")
                .map_or_else(|_| scripts().join("ts_server.mjs"), PathBuf::from),
        }),
        _ => std::env::var("MCP_INTEROP_PYTHON").ok().map(|python| Peer {
            name,
            program: python.into(),
            script: scripts().join("python_server.py"),
        }),
    };
    if found.is_none() {
        assert!(
            !required,
            "MCP_INTEROP_REQUIRED is set but the {name} peer is not named"
        );
        eprintln!("the {name} SDK peer is not installed: run scripts/interop-client.sh");
    }
    found
}

impl Peer {
    fn command(&self, arguments: &[&str]) -> Command {
        let mut command = Command::new(&self.program);
        command.arg(&self.script).args(arguments).kill_on_drop(true);
        command
    }

    /// Starts the peer's HTTP server on a free port; returns it and its `/mcp` URL.
    async fn serve_http(&self) -> (Child, String) {
        let address = {
            let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            probe.local_addr().unwrap()
        };
        let mut child = self
            .command(&["--port", &address.port().to_string()])
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        // Node and Python start slowly on a loaded machine: up to a minute.
        let listening = protocols_testkit::listening_within(address, Duration::from_secs(60)).await;
        if let Ok(Some(status)) = child.try_wait() {
            panic!("the {} server exited ({status}) before serving", self.name);
        }
        assert!(
            listening,
            "the {} server did not listen on {address}",
            self.name
        );
        (child, format!("http://{address}/mcp"))
    }
}

fn callbacks() -> Callbacks {
    Callbacks::new(|method, _params| async move {
        match method.as_str() {
            "sampling/createMessage" => Ok(json!({
                "role": "assistant",
                "content": {"type": "text", "text": "ok"},
                "model": "typed-model"
            })),
            "elicitation/create" => Ok(json!({"action": "accept", "content": {"name": "Typed"}})),
            "roots/list" => Ok(json!({"roots": []})),
            _ => Err(ErrorObject::method_not_found()),
        }
    })
}

fn capabilities() -> Value {
    json!({"sampling": {}, "elicitation": {}, "roots": {}})
}

async fn call<C: RpcClient>(client: &C, method: &'static str, params: Value) -> Value {
    let raw = client
        .call(method, Some(to_raw(&params).unwrap()))
        .await
        .unwrap_or_else(|error| panic!("{method} {params}: {error}"));
    serde_json::from_str(raw.get()).unwrap()
}

fn text(result: &Value) -> String {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// Every feature both sides support, through any transport; `server_requests` is whether the
/// peer can ask the client for sampling and elicitation there.
async fn tour<C: RpcClient>(client: &C, callbacks: &Callbacks, label: &str, server_requests: bool) {
    let listed = call(client, "tools/list", json!({})).await;
    let names: Vec<&str> = listed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|tool| tool["name"].as_str())
        .collect();
    for expected in ["echo", "add", "work", "ask_user", "ask_model"] {
        assert!(
            names.contains(&expected),
            "{label}: {expected} not in {names:?}"
        );
    }
    let tool = |name: &str, arguments: Value| json!({"name": name, "arguments": arguments});
    assert_eq!(
        text(
            &call(
                client,
                "tools/call",
                tool("echo", json!({"message": "interop"}))
            )
            .await
        ),
        "interop",
        "{label}"
    );
    let sum = call(client, "tools/call", tool("add", json!({"a": 2, "b": 3}))).await;
    assert!(text(&sum).starts_with('5'), "{label}: {sum}");
    let mut work = tool("work", json!({}));
    work["_meta"] = json!({"progressToken": "interop"});
    assert_eq!(
        text(&call(client, "tools/call", work).await),
        "done",
        "{label}"
    );
    let progress = callbacks
        .take_notifications()
        .into_iter()
        .filter(|message| message["method"] == "notifications/progress")
        .count();
    assert_eq!(progress, 2, "{label}: progress notifications");
    if server_requests {
        server_requests_answered(client, label).await;
    }
    let read = call(client, "resources/read", json!({"uri": "test://a"})).await;
    assert_eq!(read["contents"][0]["text"], "alpha", "{label}");
    let prompt = call(
        client,
        "prompts/get",
        json!({"name": "greet", "arguments": {"who": "you"}}),
    )
    .await;
    assert_eq!(
        prompt["messages"][0]["content"]["text"], "hello you",
        "{label}"
    );
}

/// Elicitation and sampling, answered through our callbacks.
async fn server_requests_answered<C: RpcClient>(client: &C, label: &str) {
    let tool = |name: &str| json!({"name": name, "arguments": {}});
    assert_eq!(
        text(&call(client, "tools/call", tool("ask_user")).await),
        "hello Typed",
        "{label}"
    );
    assert_eq!(
        text(&call(client, "tools/call", tool("ask_model")).await),
        "model said typed-model",
        "{label}"
    );
    let read = call(client, "resources/read", json!({"uri": "test://a"})).await;
    assert_eq!(read["contents"][0]["text"], "alpha", "{label}");
    let prompt = call(
        client,
        "prompts/get",
        json!({"name": "greet", "arguments": {"who": "you"}}),
    )
    .await;
    assert_eq!(
        prompt["messages"][0]["content"]["text"], "hello you",
        "{label}"
    );
}

async fn over_http(name: &'static str) {
    let Some(peer) = peer(name) else { return };
    let (_server, url) = peer.serve_http().await;
    // A session, at the newest revision both speak with initialize.
    let callbacks = callbacks();
    let client = HttpClient::new(url.clone(), callbacks.clone());
    let opened = client
        .initialize(Revision::V2025_11_25, capabilities())
        .await
        .unwrap();
    assert_eq!(opened["protocolVersion"], "2025-11-25", "{name}");
    let label = format!("{name} over a 2025-11-25 session");
    tour(&client, &callbacks, &label, true).await;
    client.close().await.unwrap();
    // Whatever `connect` negotiates with it (server/discover first, initialize as the fallback).
    let callbacks = self::callbacks();
    let client = HttpClient::new(url, callbacks.clone());
    let connected = client.connect(capabilities()).await.unwrap();
    eprintln!("{name}: connect negotiated {}", connected.revision);
    // The Python SDK's stateless 2026-07-28 context has no way to ask the client (its tools'
    // elicit/sample raise); every session revision does.
    let server_requests = !connected.revision.is_stateless();
    let label = format!("{name} at the negotiated {}", connected.revision);
    tour(&client, &callbacks, &label, server_requests).await;
    client.close().await.unwrap();
}

async fn over_stdio(name: &'static str) {
    let Some(peer) = peer(name) else { return };
    let callbacks = callbacks();
    let client = StdioClient::spawn(peer.command(&["--stdio"]), callbacks.clone())
        .await
        .unwrap();
    let opened = client
        .initialize(Revision::V2025_11_25, capabilities())
        .await
        .unwrap();
    assert_eq!(opened["protocolVersion"], "2025-11-25", "{name}");
    tour(&client, &callbacks, &format!("{name} over stdio"), true).await;
    client.shutdown().await.unwrap();
}

#[tokio::test]
async fn our_client_speaks_to_the_typescript_sdk_server_over_streamable_http() {
    over_http("typescript").await;
}

#[tokio::test]
async fn our_client_speaks_to_the_typescript_sdk_server_over_stdio() {
    over_stdio("typescript").await;
}

#[tokio::test]
async fn our_client_speaks_to_the_python_sdk_server_over_streamable_http() {
    over_http("python").await;
}

#[tokio::test]
async fn our_client_speaks_to_the_python_sdk_server_over_stdio() {
    over_stdio("python").await;
}
