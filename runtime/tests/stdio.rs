//! The stdio transport over an in-memory duplex pipe: both directions, cancellation, bad input,
//! a clean end on EOF, the bounds on requests in flight and on lines queued for a peer that
//! does not read, and a handler's panic answered with -32603 — in process, and over the real
//! stdin/stdout of a child process that lives on.

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
        Self::start_piped(config, 1 << 16)
    }

    /// A peer whose pipe holds only `pipe` bytes: a peer that does not read soon blocks the
    /// server's writer.
    fn start_piped(config: StdioConfig, pipe: usize) -> Self {
        let (client, server) = tokio::io::duplex(pipe);
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
    let config = StdioConfig::default().limits(
        protocols_runtime::jsonrpc::DecodeLimits::default()
            .max_bytes(256)
            .max_depth(16),
    );
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

#[tokio::test]
async fn a_request_past_the_in_flight_bound_is_answered_as_overloaded_at_once() {
    let config = StdioConfig::default().max_in_flight(2);
    let mut peer = Peer::start(config);
    peer.send_json(&request(20, "slow", json!({}))).await;
    peer.send_json(&request(21, "slow", json!({}))).await;
    peer.send_json(&request(22, "echo", json!({}))).await;
    let refused = peer.receive().await;
    assert_eq!(refused["id"], 22);
    assert_eq!(refused["error"]["code"], -32013);
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("overloaded")
    );
    // Cancelling one frees its place: the next request runs.
    peer.send_json(
        &json!({"jsonrpc": "2.0", "method": CANCEL_METHOD, "params": {"requestId": 20}}),
    )
    .await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    peer.send_json(&request(23, "echo", json!({"ran": true})))
        .await;
    let answered = peer.receive().await;
    assert_eq!(answered["id"], 23);
    assert_eq!(answered["result"]["ran"], true);
}

#[tokio::test]
async fn a_peer_that_does_not_read_gets_a_bounded_queue_and_a_handler_a_backlogged_error() {
    let config = StdioConfig::default().outbound_capacity(4);
    // A pipe of a few hundred bytes: the writer blocks within a few lines.
    let mut peer = Peer::start_piped(config, 256);
    peer.send_json(&request(30, "notify-then-answer", json!({"count": 10_000})))
        .await;
    // Not reading, for long enough that every notification would have been queued.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut notifications = 0;
    let answer = loop {
        let message = peer.receive().await;
        if message.get("id").is_some() {
            break message;
        }
        notifications += 1;
    };
    assert_eq!(answer["id"], 30);
    assert_eq!(
        answer["error"]["code"], -32603,
        "the handler's notify failed once the queue was full"
    );
    assert!(
        notifications < 100,
        "{notifications} notifications were queued"
    );
    peer.send_json(&request(31, "echo", json!({}))).await;
    assert_eq!(peer.receive().await["id"], 31);
}

#[tokio::test]
async fn a_panicking_handler_answers_an_internal_error_and_the_next_line_is_served() {
    let mut peer = Peer::start(StdioConfig::default());
    peer.send_json(&request(40, "panic", json!({}))).await;
    let panicked = peer.receive().await;
    assert_eq!(panicked["id"], 40);
    assert_eq!(panicked["error"]["code"], -32603);
    peer.send_json(&json!({"jsonrpc": "2.0", "method": "panic"}))
        .await;
    peer.send_json(&request(41, "echo", json!({"n": 41}))).await;
    assert_eq!(peer.receive().await["result"]["n"], 41);
}

/// Not a test: the child of the stdio process test, serving its own stdin and stdout.
#[tokio::test]
#[ignore = "the child process of a stdio test, run by it"]
async fn child_stdio_server() {
    protocols_runtime::stdio::serve_stdio(&TestProtocol::new(), StdioConfig::default())
        .await
        .unwrap();
}

#[tokio::test]
async fn over_a_real_process_a_panic_is_answered_and_the_process_lives_then_exits_0() {
    use std::process::Stdio;
    let mut child = tokio::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "child_stdio_server",
            "--exact",
            "--ignored",
            "--nocapture",
            "-q",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    let mut output = BufReader::new(child.stdout.take().unwrap()).lines();
    // libtest writes its own lines to stdout too; the server's are the JSON ones.
    let mut next_json = async || loop {
        let line = tokio::time::timeout(Duration::from_secs(10), output.next_line())
            .await
            .expect("a line in time")
            .unwrap()
            .expect("the child still writes");
        if let Ok(value) = serde_json::from_str::<Value>(&line) {
            return value;
        }
    };
    for line in [
        request(1, "panic", json!({})),
        request(2, "echo", json!({"n": 2})),
    ] {
        input
            .write_all(format!("{line}\n").as_bytes())
            .await
            .unwrap();
    }
    let first = next_json().await;
    assert_eq!(first["id"], 1);
    assert_eq!(first["error"]["code"], -32603);
    assert_eq!(next_json().await["result"]["n"], 2);
    drop(input);
    let status = tokio::time::timeout(Duration::from_secs(10), child.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success(), "{status}");
}
