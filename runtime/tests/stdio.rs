//! The stdio transport over an in-memory duplex pipe: both directions, cancellation, bad input
//! and a clean end on EOF.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

mod common;

use std::time::Duration;

use common::{CANCEL_METHOD, TestProtocol, request};
use protocols_runtime::stdio::{StdioConfig, serve_lines};
use serde_json::{Value, json};
use tokio::io::{
    AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines, ReadHalf, WriteHalf,
};
use tokio::task::JoinHandle;

struct Peer {
    input: WriteHalf<DuplexStream>,
    output: Lines<BufReader<ReadHalf<DuplexStream>>>,
    server: JoinHandle<std::io::Result<()>>,
}

impl Peer {
    fn start(config: StdioConfig) -> Self {
        let (client, server) = tokio::io::duplex(1 << 16);
        let (server_read, server_write) = tokio::io::split(server);
        let (client_read, client_write) = tokio::io::split(client);
        let handler = TestProtocol::new();
        let server =
            tokio::spawn(
                async move { serve_lines(&handler, server_read, server_write, config).await },
            );
        Self {
            input: client_write,
            output: BufReader::new(client_read).lines(),
            server,
        }
    }

    async fn send(&mut self, line: &str) {
        self.input.write_all(line.as_bytes()).await.unwrap();
        self.input.write_all(b"\n").await.unwrap();
    }

    async fn send_json(&mut self, value: &Value) {
        self.send(&value.to_string()).await;
    }

    /// The next line the server wrote, parsed: every line must be JSON.
    async fn receive(&mut self) -> Value {
        let line = tokio::time::timeout(Duration::from_secs(5), self.output.next_line())
            .await
            .expect("a line within 5 s")
            .unwrap()
            .expect("the server is still writing");
        serde_json::from_str(&line).unwrap_or_else(|_| panic!("a line that is not JSON: {line:?}"))
    }
}

#[tokio::test]
async fn a_request_is_answered_on_one_line() {
    let mut peer = Peer::start(StdioConfig::default());
    peer.send_json(&request(1, "echo", json!({"text": "line\nbreak"})))
        .await;
    assert_eq!(
        peer.receive().await,
        json!({"jsonrpc": "2.0", "id": 1, "result": {"text": "line\nbreak"}})
    );
}

#[tokio::test]
async fn notifications_precede_the_answer_they_belong_to() {
    let mut peer = Peer::start(StdioConfig::default());
    peer.send_json(&request(2, "notify-then-answer", json!({"count": 3})))
        .await;
    for i in 0..3 {
        let message = peer.receive().await;
        assert_eq!(message["method"], "progress");
        assert_eq!(message["params"]["i"], i);
    }
    assert_eq!(peer.receive().await["result"]["sent"], 3);
}

#[tokio::test]
async fn a_server_to_client_request_round_trips_while_other_requests_run() {
    let mut peer = Peer::start(StdioConfig::default());
    peer.send_json(&request(3, "ask-client", json!({"q": "path?"})))
        .await;
    let asked = peer.receive().await;
    assert_eq!(asked["method"], "client/ask");
    // The server keeps serving while it waits on the client.
    peer.send_json(&request(4, "echo", json!({"meanwhile": true})))
        .await;
    assert_eq!(peer.receive().await["id"], 4);
    peer.send_json(&json!({"jsonrpc": "2.0", "id": asked["id"], "result": "/tmp"}))
        .await;
    let answer = peer.receive().await;
    assert_eq!(answer["id"], 3);
    assert_eq!(answer["result"]["client_said"], "/tmp");
}

#[tokio::test]
async fn a_cancelled_request_is_never_answered() {
    let mut peer = Peer::start(StdioConfig::default());
    peer.send_json(&request(5, "slow", json!({}))).await;
    peer.send_json(&json!({"jsonrpc": "2.0", "method": CANCEL_METHOD, "params": {"requestId": 5}}))
        .await;
    peer.send_json(&request(6, "echo", json!({}))).await;
    assert_eq!(peer.receive().await["id"], 6);
    peer.input.shutdown().await.unwrap();
    let next = tokio::time::timeout(Duration::from_secs(5), peer.output.next_line())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        next, None,
        "nothing more was written, the cancelled request included"
    );
}

#[tokio::test]
async fn unreadable_lines_are_answered_with_errors_and_the_server_goes_on() {
    let mut peer = Peer::start(StdioConfig::default());
    peer.send("this is not json").await;
    let parse = peer.receive().await;
    assert_eq!(parse["error"]["code"], -32700);
    assert_eq!(parse["id"], Value::Null);
    peer.send(r#"{"jsonrpc":"2.0","id":"x","method":7}"#).await;
    let invalid = peer.receive().await;
    assert_eq!(invalid["error"]["code"], -32600);
    assert_eq!(invalid["id"], "x");
    peer.send("").await;
    peer.send_json(&request(7, "echo", json!({}))).await;
    assert_eq!(peer.receive().await["id"], 7);
}

#[tokio::test]
async fn an_oversized_line_is_refused_and_the_next_one_served() {
    let config = StdioConfig {
        limits: protocols_runtime::jsonrpc::DecodeLimits {
            max_bytes: 256,
            max_depth: 16,
        },
        ..StdioConfig::default()
    };
    let mut peer = Peer::start(config);
    peer.send_json(&request(8, "echo", json!({"big": "x".repeat(1000)})))
        .await;
    assert_eq!(peer.receive().await["error"]["code"], -32600);
    peer.send_json(&request(9, "echo", json!({}))).await;
    assert_eq!(peer.receive().await["id"], 9);
}

#[tokio::test]
async fn end_of_input_ends_the_server_cleanly_even_with_work_in_flight() {
    let mut peer = Peer::start(StdioConfig::default());
    peer.send_json(&request(10, "slow", json!({}))).await;
    peer.send_json(&request(11, "echo", json!({}))).await;
    assert_eq!(peer.receive().await["id"], 11);
    peer.input.shutdown().await.unwrap();
    let outcome = tokio::time::timeout(Duration::from_secs(5), peer.server).await;
    assert!(
        matches!(outcome, Ok(Ok(Ok(())))),
        "the server returned Ok promptly"
    );
}

#[tokio::test]
async fn a_session_wide_peer_writes_to_the_same_line_stream() {
    let mut peer = Peer::start(StdioConfig::default());
    peer.send_json(&request(12, "notify-later", json!({})))
        .await;
    assert_eq!(peer.receive().await["result"], "scheduled");
    assert_eq!(peer.receive().await["method"], "later");
}

#[tokio::test]
async fn a_request_followed_at_once_by_end_of_input_is_still_answered() {
    let mut peer = Peer::start(StdioConfig::default());
    // `burst` sleeps between notifications, so it is still running when EOF arrives.
    peer.send_json(&request(13, "burst", json!({"count": 20})))
        .await;
    peer.input.shutdown().await.unwrap();
    let mut last = Value::Null;
    while let Ok(Ok(Some(line))) =
        tokio::time::timeout(Duration::from_secs(5), peer.output.next_line()).await
    {
        last = serde_json::from_str(&line).unwrap();
    }
    assert_eq!(last["id"], 13);
    assert_eq!(last["result"]["sent"], 20);
}

#[tokio::test]
async fn a_call_awaiting_the_client_fails_at_end_of_input_instead_of_hanging() {
    let mut peer = Peer::start(StdioConfig::default());
    peer.send_json(&request(14, "ask-client", json!({}))).await;
    assert_eq!(peer.receive().await["method"], "client/ask");
    peer.input.shutdown().await.unwrap();
    let answer = peer.receive().await;
    assert_eq!(answer["id"], 14);
    assert_eq!(answer["error"]["code"], -32001);
}
