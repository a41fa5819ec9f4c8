//! Streamable HTTP configured without sessions (`SessionMode::Sessionless`), over a real
//! loopback socket: nothing is issued or kept per client, every POST stands alone, GET and
//! DELETE are 405, and a call back from the handler rides its POST's own stream or fails at
//! once.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

mod common;

use std::time::{Duration, Instant};

use common::{Endpoint, SESSION_HEADER, TestProtocol, request};
use protocols_runtime::SessionStore;
use protocols_runtime::http::{HttpConfig, ResponseMode, SessionMode, StreamableHttp};
use protocols_runtime::server::ServerBuilder;
use protocols_testkit::{ACCEPT_EITHER, SseReader};
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::sync::Arc;

/// A sessionless endpoint whose calls back would wait a long time for an answer, so a call
/// that fails fast shows it did not wait.
fn sessionless() -> HttpConfig {
    HttpConfig::default()
        .session_mode(SessionMode::Sessionless)
        .peer_timeout(Duration::from_secs(30))
}

/// The test protocol at `/rpc` with `config`, and its session store to count.
async fn serve_counting(
    config: HttpConfig,
) -> (
    common::TestServer,
    Arc<dyn SessionStore<common::TestSession>>,
) {
    let transport = StreamableHttp::new(TestProtocol::new(), config);
    let store = transport.store();
    let server = ServerBuilder::new()
        .hardening(common::test_hardening())
        .routes(transport.into_routes("/rpc"))
        .build()
        .unwrap();
    (common::serve(server).await, store)
}

#[tokio::test]
async fn a_sessionless_initialize_issues_no_session_id() {
    let (server, store) = serve_counting(sessionless()).await;
    let rpc = Endpoint::of(&server);
    let response = rpc
        .post(None, ACCEPT_EITHER, &request(1, "open", json!({})))
        .await;
    assert_eq!(response.status(), StatusCode::OK);
    assert!(response.headers().get(SESSION_HEADER).is_none());
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["result"]["opened"], true);
    assert_eq!(store.len(), 0, "nothing was stored for the client");
}

#[tokio::test]
async fn every_sessionless_post_stands_alone() {
    let (server, store) = serve_counting(sessionless()).await;
    let rpc = Endpoint::of(&server);
    // With sessions each of these is refused: no session named (400), an id never issued
    // (404), a malformed id (400). Here the header is ignored and nothing is looked up.
    for named in [None, Some("0123456789abcdef0123456789abcdef"), Some("a,b")] {
        let response = rpc
            .post(named, ACCEPT_EITHER, &request(2, "opened-by", json!({})))
            .await;
        assert_eq!(response.status(), StatusCode::OK, "named {named:?}");
        assert!(response.headers().get(SESSION_HEADER).is_none());
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["result"]["openedBy"], Value::Null, "named {named:?}");
    }
    assert_eq!(store.len(), 0);
}

#[tokio::test]
async fn get_and_delete_are_405_without_sessions() {
    let (server, _store) = serve_counting(sessionless()).await;
    let rpc = Endpoint::of(&server);
    let get = rpc
        .client
        .get(&rpc.url)
        .header("accept", "text/event-stream")
        .header(SESSION_HEADER, "0123456789abcdef0123456789abcdef");
    let delete = rpc
        .client
        .delete(&rpc.url)
        .header(SESSION_HEADER, "0123456789abcdef0123456789abcdef");
    let put = rpc.client.put(&rpc.url);
    for refused in [get, delete, put] {
        let response = refused.send().await.unwrap();
        assert_eq!(response.status(), StatusCode::METHOD_NOT_ALLOWED);
        assert_eq!(response.headers()["allow"], "POST");
        assert_eq!(response.headers()["x-content-type-options"], "nosniff");
        assert!(
            response.headers()["content-type"]
                .to_str()
                .unwrap()
                .starts_with("application/json")
        );
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["jsonrpc"], "2.0");
        assert!(body["error"]["code"].is_i64(), "{body}");
    }
}

#[tokio::test]
async fn a_call_back_inside_a_sessionless_posts_stream_is_answered_by_another_post() {
    let (server, store) = serve_counting(sessionless()).await;
    let rpc = Endpoint::of(&server);
    let response = rpc
        .post(
            None,
            ACCEPT_EITHER,
            &request(11, "ask-client", json!({"q": "name?"})),
        )
        .await;
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let mut events = SseReader::new(response);
    let (_, asked) = events.next_json().await.expect("the server's request");
    assert_eq!(asked["method"], "client/ask");
    let id = asked["id"].as_str().expect("a string id");
    assert!(
        id.len() >= 32,
        "the id is unguessable, since any client may post answers: {id}"
    );
    // An answer to an id the client never saw reaches nobody.
    let guessed = json!({"jsonrpc": "2.0", "id": 0, "result": {"name": "intruder"}});
    let ack = rpc.post(None, ACCEPT_EITHER, &guessed).await;
    assert_eq!(ack.status(), StatusCode::ACCEPTED);
    let answer = json!({"jsonrpc": "2.0", "id": id, "result": {"name": "tester"}});
    let ack = rpc.post(None, ACCEPT_EITHER, &answer).await;
    assert_eq!(ack.status(), StatusCode::ACCEPTED);
    let (_, reply) = events.next_json().await.expect("the final answer");
    assert_eq!(reply["id"], 11);
    assert_eq!(reply["result"]["client_said"]["name"], "tester");
    assert_eq!(store.len(), 0);
}

/// The error a call `method` answers with on `config`'s endpoint, and how long it took.
async fn failed_call_back(config: HttpConfig, method: &str) -> (Value, Duration) {
    let (server, _store) = serve_counting(config).await;
    let rpc = Endpoint::of(&server);
    let started = Instant::now();
    let response = rpc
        .post(None, ACCEPT_EITHER, &request(12, method, json!({})))
        .await;
    let body = match response.headers()["content-type"].to_str().unwrap() {
        "text/event-stream" => SseReader::new(response).next_json().await.unwrap().1,
        _ => response.json().await.unwrap(),
    };
    (body["error"].clone(), started.elapsed())
}

#[tokio::test]
async fn a_call_back_with_no_post_stream_to_ride_fails_at_once_as_no_session() {
    // Off the POST's stream (the session-wide peer), and on a POST answered as plain JSON.
    let json_only = sessionless().response_mode(ResponseMode::Json);
    for (config, method, code) in [
        (sessionless(), "ask-session-wide", -32003),
        (json_only, "ask-client", -32001),
    ] {
        let (error, took) = failed_call_back(config, method).await;
        assert_eq!(error["code"], code, "{method}: {error}");
        assert!(
            error["message"]
                .as_str()
                .unwrap()
                .contains("without a session"),
            "{method}: {error}"
        );
        assert!(
            took < Duration::from_secs(5),
            "{method} failed after {took:?}"
        );
    }
}
