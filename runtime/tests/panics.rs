//! The panic boundary over real sockets: a handler that panics answers its request with HTTP
//! 500 and a JSON-RPC -32603 body carrying every security header; the connection lives on (the
//! next request on the same keep-alive connection is served), the session too (its next call
//! works), and on an SSE answer the stream carries the -32603 error for that request id, then
//! ends cleanly. Over stdio see `tests/stdio.rs`; the log line is checked in
//! `tests/tracing_spans.rs`, the only file that installs a subscriber.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

mod common;

use std::net::SocketAddr;

use common::{Endpoint, serve_protocol};
use protocols_runtime::http::HttpConfig;
use protocols_testkit::{ACCEPT_EITHER, RawConnection, SseReader, raw_request, request};
use serde_json::{Value, json};

const SECURITY_HEADERS: [&str; 6] = [
    "content-security-policy",
    "strict-transport-security",
    "x-frame-options",
    "x-content-type-options",
    "cache-control",
    "referrer-policy",
];

fn call(address: SocketAddr, id: i64, method: &str) -> Vec<u8> {
    raw_request(
        "POST /rpc HTTP/1.1",
        &[
            &format!("host: {address}"),
            "content-type: application/json",
            "accept: application/json",
        ],
        &request(id, method, json!({"n": id})).to_string(),
    )
}

#[tokio::test]
async fn a_panicking_handler_answers_500_and_the_same_connection_serves_the_next_request() {
    let server = serve_protocol(HttpConfig::default()).await;
    let mut connection = RawConnection::open(server.address).await;
    let panicked = connection
        .exchange(&call(server.address, 1, "stateless/panic"))
        .await;
    assert_eq!(panicked.status, 500);
    for name in SECURITY_HEADERS {
        assert!(panicked.header(name).is_some(), "missing {name}");
    }
    let body = panicked.json();
    assert_eq!(body["id"], 1);
    assert_eq!(body["error"]["code"], -32603);
    let next = connection
        .exchange(&call(server.address, 2, "stateless/echo"))
        .await;
    assert_eq!(next.status, 200);
    assert_eq!(next.json()["result"]["n"], 2);
}

#[tokio::test]
async fn a_session_whose_handler_panicked_serves_its_next_call() {
    let server = serve_protocol(HttpConfig::default()).await;
    let rpc = Endpoint::of(&server);
    let session = rpc.open().await;
    let panicked = rpc
        .post(
            Some(&session),
            "application/json",
            &request(1, "panic", json!({})),
        )
        .await;
    assert_eq!(panicked.status(), 500);
    let body: Value = panicked.json().await.unwrap();
    assert_eq!(body["error"]["code"], -32603);
    let next = rpc
        .call(&session, 2, "echo", json!({"after": "panic"}))
        .await;
    assert_eq!(next.status(), 200);
    let body: Value = next.json().await.unwrap();
    assert_eq!(body["result"]["after"], "panic");
    // A notification whose handler panics is taken (202) and the session goes on too.
    let notification = json!({"jsonrpc": "2.0", "method": "panic"});
    let taken = rpc.post(Some(&session), ACCEPT_EITHER, &notification).await;
    assert_eq!(taken.status(), 202);
    let next = rpc.call(&session, 3, "echo", json!({"still": true})).await;
    assert_eq!(next.status(), 200);
    let stream = rpc.event_stream(&session, None).await;
    assert_eq!(stream.status(), 200, "the session's stream still opens");
}

#[tokio::test]
async fn an_sse_answer_whose_handler_panics_carries_the_internal_error_then_ends_cleanly() {
    let server = serve_protocol(HttpConfig::default()).await;
    let rpc = Endpoint::of(&server);
    let session = rpc.open().await;
    let response = rpc.call(&session, 7, "stream-then-panic", json!({})).await;
    assert_eq!(response.status(), 200);
    let drained = SseReader::new(response).drain().await;
    let [partial, error] = drained.messages.as_slice() else {
        panic!("a partial result, then the error: {drained:?}");
    };
    assert_eq!(partial["result"]["part"], "first");
    assert_eq!(error["id"], 7);
    assert_eq!(error["error"]["code"], -32603);
    let next = rpc.call(&session, 8, "echo", json!({"n": 8})).await;
    assert_eq!(next.status(), 200);
}
