//! The caller reaches MCP's handlers: a tool, a resource reader and a prompt read the principal
//! the hardening authenticated and the request's headers from their `RequestContext`, over a
//! real socket with two subjects; over stdio there is neither.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod mcp_common;

use mcp_common::{Client, call};
use protocols_mcp::content::{
    prompt, prompt_result, read_result, resource, text, text_contents, tool_result, user_message,
};
use protocols_mcp::{McpServer, NoArguments, RequestContext, ToolDefinition};
use protocols_runtime::hardening::{AuthPolicy, BearerAuthenticator, HardeningConfig, Principal};
use protocols_runtime::http::HttpConfig;
use protocols_runtime::server::Server;
use protocols_runtime::stdio::{StdioConfig, serve_lines};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// Who `cx` says is calling, and the `x-tenant` header it came with.
fn caller(cx: &RequestContext) -> String {
    let subject = cx.principal().map_or("anonymous".to_owned(), |principal| {
        principal.subject.to_string()
    });
    let tenant = cx
        .headers()
        .get("x-tenant")
        .and_then(|value| value.to_str().ok())
        .unwrap_or("none");
    format!("{subject} of {tenant}")
}

fn caller_server() -> McpServer {
    let whoami = ToolDefinition::new("whoami", "Names its caller", |_: NoArguments, cx| {
        let answer = caller(&cx);
        async move { Ok(tool_result(vec![text(answer)])) }
    });
    McpServer::builder("caller", "1.0.0")
        .tool(whoami)
        .resource(
            resource("caller://me", "me", "Names its reader", "text/plain"),
            |uri, cx| {
                let answer = caller(&cx);
                async move { Ok(read_result(vec![text_contents(uri, "text/plain", answer)])) }
            },
        )
        .prompt(prompt("greet", "Greets its caller", &[]), |_, cx| {
            let answer = format!("hello, {}", caller(&cx));
            async move { Ok(prompt_result(vec![user_message(text(answer))])) }
        })
        .build()
        .expect("the caller server's definitions are valid")
}

struct Running {
    url: String,
    stop: CancellationToken,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

async fn serve_protected() -> Running {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let hardening = HardeningConfig::new()
        .authenticator(
            BearerAuthenticator::new()
                .with_token("alice-token", Principal::new("alice", Vec::new()))
                .with_token("bob-token", Principal::new("bob", Vec::new())),
        )
        .auth_policy(AuthPolicy::RequireScopes(Vec::new()));
    let built = Server::builder()
        .hardening(hardening)
        .streamable_http("/mcp", caller_server(), HttpConfig::default())
        .build()
        .unwrap();
    let stop = CancellationToken::new();
    let stopped = stop.clone();
    tokio::spawn(built.serve_until(listener, async move { stopped.cancelled().await }));
    Running {
        url: format!("http://{address}/mcp"),
        stop,
    }
}

async fn client_of(running: &Running, token: &str, tenant: &str) -> Client {
    let mut client = Client::new(running.url.clone());
    client.extra_headers = vec![
        ("authorization".to_owned(), format!("Bearer {token}")),
        ("x-tenant".to_owned(), tenant.to_owned()),
    ];
    client.initialize("2025-11-25").await;
    client
}

async fn first_text(client: &Client, method: &str, params: Value, at: &str) -> String {
    let exchange = client.post(call(7, method, params)).await;
    let result = &exchange.answer(7)["result"];
    result
        .pointer(at)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test]
async fn tools_resources_and_prompts_read_their_callers_principal_and_headers() {
    let running = serve_protected().await;
    for (token, tenant, expected) in [
        ("alice-token", "acme", "alice of acme"),
        ("bob-token", "globex", "bob of globex"),
    ] {
        let client = client_of(&running, token, tenant).await;
        let tool = first_text(
            &client,
            "tools/call",
            json!({"name": "whoami"}),
            "/content/0/text",
        );
        assert_eq!(tool.await, expected);
        let read = json!({"uri": "caller://me"});
        let resource = first_text(&client, "resources/read", read, "/contents/0/text").await;
        assert_eq!(resource, expected);
        let greet = json!({"name": "greet"});
        let prompt = first_text(&client, "prompts/get", greet, "/messages/0/content/text").await;
        assert_eq!(prompt, format!("hello, {expected}"));
    }
}

#[tokio::test]
async fn over_stdio_a_handler_sees_no_principal_and_no_headers() {
    let server = caller_server();
    let (ours, theirs) = tokio::io::duplex(64 * 1024);
    let (reader, writer) = tokio::io::split(theirs);
    let serving =
        tokio::spawn(
            async move { serve_lines(&server, reader, writer, StdioConfig::default()).await },
        );
    let (output, mut input) = tokio::io::split(ours);
    let mut lines = BufReader::new(output).lines();
    let messages = [
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "stdio-test", "version": "1.0.0"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        call(1, "tools/call", json!({"name": "whoami"})),
    ];
    for message in messages {
        input
            .write_all(format!("{message}\n").as_bytes())
            .await
            .unwrap();
    }
    let answer = loop {
        let line = lines
            .next_line()
            .await
            .unwrap()
            .expect("an answer before EOF");
        let message: Value = serde_json::from_str(&line).unwrap();
        if message["id"] == 1 {
            break message;
        }
    };
    assert_eq!(answer["result"]["content"][0]["text"], "anonymous of none");
    // Both halves of our end must go for the server to read end of input.
    drop(input);
    drop(lines);
    serving.await.unwrap().unwrap();
}
