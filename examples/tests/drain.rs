//! The `all-protocols` binary drains on SIGTERM: an A2A `SendStreamingMessage` and an MCP
//! `tools/call` answered over SSE, both in flight when the signal comes, write their results
//! before their streams end, and the process exits with status 0.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use protocols_testkit::{ACCEPT_EITHER, SseReader, json_rpc_post};
use serde_json::json;

#[tokio::test]
async fn streaming_answers_in_flight_at_sigterm_carry_their_results_and_the_process_exits_0() {
    let address = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap()
        .local_addr()
        .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_all-protocols"))
        .args(["--listen", &address.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    if !protocols_testkit::listening_within(address, Duration::from_secs(20)).await {
        let _ = child.kill();
        let _ = child.wait();
        panic!("all-protocols never listened");
    }
    let base = format!("http://{address}");
    let client = reqwest::Client::new();

    let message =
        json!({"messageId": "m-drain", "role": "ROLE_USER", "parts": [{"text": "slow hello"}]});
    let streaming = json!({"jsonrpc": "2.0", "id": 7, "method": "SendStreamingMessage", "params": {"message": message}});
    let a2a = json_rpc_post(
        &client,
        &format!("{base}/a2a"),
        ACCEPT_EITHER,
        [("A2A-Version", "1.0")],
        &streaming,
    )
    .send()
    .await
    .unwrap();
    let mut a2a = SseReader::new(a2a);
    assert!(a2a.next_json().await.is_some(), "the task's first event");

    let mcp_url = format!("{base}/mcp");
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "drain-test", "version": "1"}}});
    let opened = json_rpc_post(&client, &mcp_url, ACCEPT_EITHER, [], &initialize)
        .send()
        .await
        .unwrap();
    let session = opened.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let headers = [
        ("mcp-session-id", session.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    json_rpc_post(&client, &mcp_url, ACCEPT_EITHER, headers, &initialized)
        .send()
        .await
        .unwrap();
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "demo", "arguments": {"text": "slow hello"}, "_meta": {"progressToken": "p"}}});
    let mcp = json_rpc_post(&client, &mcp_url, ACCEPT_EITHER, headers, &call)
        .send()
        .await
        .unwrap();
    let mut mcp = SseReader::new(mcp);
    let (_, progress) = mcp
        .next_json()
        .await
        .expect("a first progress notification");
    assert_eq!(progress["method"], "notifications/progress");

    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let a2a = a2a.drain().await;
    let completed = a2a.messages.iter().any(|event| {
        let result = &event["result"];
        result["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
            || result["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    });
    assert!(
        completed,
        "the A2A stream carried the task's completion: {a2a:?}"
    );
    let mcp = mcp.drain().await;
    let answer = mcp.messages.last().expect("the tool's answer");
    assert_eq!(answer["id"], 2, "{mcp:?}");
    assert!(answer["result"]["content"].is_array(), "{answer}");

    let exited = Instant::now();
    let code = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status.code();
        }
        if exited.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the process did not exit");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(code, Some(0));
}
