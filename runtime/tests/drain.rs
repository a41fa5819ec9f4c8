//! The drain, with a real process and real signals: the server runs as a child (this test
//! binary again, running the ignored `child_server` entry), is sent SIGTERM or SIGINT with the
//! `kill` command, and must answer every request in flight, write every SSE answer's result,
//! end a session's own stream at once and what is left at the deadline with a `retry`, refuse
//! new connections meanwhile, and exit with status 0.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

mod common;

use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{SESSION_HEADER, TestProtocol, test_hardening};
use protocols_runtime::http::HttpConfig;
use protocols_runtime::server::{ListenerConfig, ServerBuilder};
use protocols_testkit::{ACCEPT_EITHER, SseReader, event_stream_get, json_rpc_post, request};
use serde_json::{Value, json};

const PORT: &str = "DRAIN_CHILD_PORT";
const DEADLINE: &str = "DRAIN_CHILD_DEADLINE_MS";

/// Not a test: the server a drain test runs as its child process, serving until a signal.
#[tokio::test]
#[ignore = "the child process of the drain tests, run by them"]
async fn child_server() {
    let port: u16 = std::env::var(PORT).unwrap().parse().unwrap();
    let deadline: u64 = std::env::var(DEADLINE).unwrap().parse().unwrap();
    let server = ServerBuilder::new()
        .hardening(test_hardening())
        .listener(ListenerConfig::default().drain_deadline(Duration::from_millis(deadline)))
        .streamable_http("/rpc", TestProtocol::new(), HttpConfig::default())
        .build()
        .unwrap();
    // An error fails this entry, so the child's exit status tells it apart from a clean drain.
    server
        .serve(SocketAddr::from(([127, 0, 0, 1], port)))
        .await
        .unwrap();
}

/// The server as a child process.
struct ChildServer {
    child: Child,
    address: SocketAddr,
}

impl ChildServer {
    async fn start(drain_deadline: Duration) -> Self {
        let address = free_port().await;
        let child = Command::new(std::env::current_exe().unwrap())
            .args(["child_server", "--exact", "--ignored", "--nocapture", "-q"])
            .env(PORT, address.port().to_string())
            .env(DEADLINE, drain_deadline.as_millis().to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let mut child = child;
        if protocols_testkit::listening_within(address, Duration::from_secs(5)).await {
            return Self { child, address };
        }
        let _ = child.kill();
        let _ = child.wait();
        panic!("the child server never listened");
    }

    fn url(&self) -> String {
        format!("http://{}/rpc", self.address)
    }

    fn signal(&self, name: &str) {
        let status = Command::new("kill")
            .args([format!("-{name}"), self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
    }

    /// Waits for the child to exit and returns its status code.
    async fn exit_code(mut self) -> Option<i32> {
        for _ in 0..800 {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status.code();
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        panic!("the child did not exit");
    }
}

/// A port nothing listens on (taken and let go of again).
async fn free_port() -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    listener.local_addr().unwrap()
}

async fn post(
    client: &reqwest::Client,
    url: &str,
    accept: &str,
    body: &Value,
) -> reqwest::Response {
    json_rpc_post(client, url, accept, [], body)
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn fifty_calls_in_flight_at_sigterm_are_all_answered_and_the_process_exits_0() {
    let server = ChildServer::start(Duration::from_secs(30)).await;
    let client = reqwest::Client::new();
    let calls: Vec<_> = (0..50)
        .map(|id| {
            let (client, url) = (client.clone(), server.url());
            tokio::spawn(async move {
                let body = request(id, "stateless/sleep", json!({"ms": 1500}));
                let answer = post(&client, &url, "application/json", &body).await;
                (answer.status(), answer.json::<Value>().await.unwrap())
            })
        })
        .collect();
    // Every call has reached the server well before this.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let signalled = Instant::now();
    server.signal("TERM");
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(
        tokio::net::TcpStream::connect(server.address)
            .await
            .is_err(),
        "no new connection is accepted while draining"
    );
    for (id, call) in calls.into_iter().enumerate() {
        let (status, body) = call.await.unwrap();
        assert_eq!(status, 200, "call {id}");
        assert_eq!(body["id"], id);
        assert_eq!(body["result"]["slept_ms"], 1500);
    }
    assert_eq!(server.exit_code().await, Some(0));
    eprintln!(
        "drained 50 in-flight calls in {:?} after SIGTERM",
        signalled.elapsed()
    );
}

#[tokio::test]
async fn sse_answers_in_flight_at_sigint_carry_their_result_and_the_process_exits_0() {
    let server = ChildServer::start(Duration::from_secs(30)).await;
    let client = reqwest::Client::new();
    let mut streams = Vec::new();
    for id in 0..25 {
        let body = request(id, "stateless/stream-slowly", json!({"ms": 1000}));
        let mut events = SseReader::new(post(&client, &server.url(), ACCEPT_EITHER, &body).await);
        let (_, first) = events.next_json().await.expect("the partial result");
        assert_eq!(first["result"]["part"], "first");
        streams.push(events);
    }
    server.signal("INT");
    for (id, events) in streams.into_iter().enumerate() {
        let drained = events.drain().await;
        let last = drained.messages.last().expect("the answer");
        assert_eq!(last["id"], id, "{drained:?}");
        assert_eq!(last["result"]["part"], "final", "{drained:?}");
    }
    assert_eq!(server.exit_code().await, Some(0));
}

#[tokio::test]
async fn at_sigterm_a_session_stream_ends_at_once_and_an_answer_at_the_deadline_both_with_a_retry()
{
    let deadline = Duration::from_millis(600);
    let server = ChildServer::start(deadline).await;
    let client = reqwest::Client::new();
    let opened = post(
        &client,
        &server.url(),
        "application/json",
        &request(0, "open", json!({})),
    )
    .await;
    let session = opened.headers()[SESSION_HEADER]
        .to_str()
        .unwrap()
        .to_owned();
    let stream = event_stream_get(&client, &server.url(), [(SESSION_HEADER, session.as_str())])
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), 200);
    let body = request(1, "stream-slowly", json!({"ms": 60_000}));
    let answer = json_rpc_post(
        &client,
        &server.url(),
        ACCEPT_EITHER,
        [(SESSION_HEADER, session.as_str())],
        &body,
    )
    .send()
    .await
    .unwrap();
    let mut answer = SseReader::new(answer);
    let (_, first) = answer.next_json().await.expect("the partial result");
    assert_eq!(first["result"]["part"], "first");

    let signalled = Instant::now();
    server.signal("TERM");
    let own = SseReader::new(stream).drain().await;
    let own_ended = signalled.elapsed();
    assert!(
        own.retry.is_some(),
        "the session's stream tells the client to retry"
    );
    assert!(
        own_ended < deadline,
        "it ends when the drain begins: {own_ended:?}"
    );
    let rest = answer.drain().await;
    let answer_ended = signalled.elapsed();
    assert!(
        rest.retry.is_some(),
        "the cut answer tells the client to retry"
    );
    assert!(rest.messages.is_empty(), "the answer never came: {rest:?}");
    assert!(
        answer_ended >= deadline,
        "it lasts until the deadline: {answer_ended:?}"
    );
    assert_eq!(server.exit_code().await, Some(0));
}
