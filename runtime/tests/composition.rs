//! Several protocols in one server, nested into a user's own axum app, plus the legacy
//! HTTP+SSE transport's endpoint handshake.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

mod common;

use std::sync::Arc;

use axum::Router;
use axum::routing::get;
use common::{Endpoint, SESSION_HEADER, TestProtocol, request, serve, test_hardening};
use protocols_runtime::hardening::{AuthPolicy, BearerAuthenticator, HardeningError, Principal};
use protocols_runtime::http::HttpConfig;
use protocols_runtime::server::ServerBuilder;
use protocols_runtime::sse::EventName;
use protocols_testkit::{ACCEPT_EITHER, SseReader, json_rpc_post};
use reqwest::StatusCode;
use serde_json::{Value, json};
use tokio::net::TcpListener;

async fn post_json(client: &reqwest::Client, url: &str, body: &Value) -> reqwest::Response {
    json_rpc_post(client, url, ACCEPT_EITHER, [], body)
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn two_protocols_at_their_own_paths_serve_independent_sessions() {
    let server = ServerBuilder::new()
        .hardening(test_hardening())
        .streamable_http("/one", TestProtocol::new(), HttpConfig::default())
        .streamable_http("/two", TestProtocol::new(), HttpConfig::default())
        .build()
        .unwrap();
    let server = serve(server).await;
    let (one, two) = (
        Endpoint::at(server.url("/one")),
        Endpoint::at(server.url("/two")),
    );
    let session = one.open().await;
    let here = one.call(&session, 2, "echo", json!({})).await;
    assert_eq!(here.status(), StatusCode::OK);
    let elsewhere = two.call(&session, 3, "echo", json!({})).await;
    assert_eq!(
        elsewhere.status(),
        StatusCode::NOT_FOUND,
        "a session belongs to one mount"
    );
}

#[tokio::test]
async fn the_runtime_nests_into_a_users_app_beside_its_own_routes() {
    let server = ServerBuilder::new()
        .hardening(test_hardening())
        .streamable_http("/rpc", TestProtocol::new(), HttpConfig::default())
        .build()
        .unwrap();
    let app = Router::new()
        .route("/health", get(|| async { "ok" }))
        .nest("/agents", server.router());
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    let client = reqwest::Client::new();
    let health = client
        .get(format!("http://{address}/health"))
        .send()
        .await
        .unwrap();
    assert_eq!(health.text().await.unwrap(), "ok");
    let answer = post_json(
        &client,
        &format!("http://{address}/agents/rpc"),
        &request(1, "stateless/echo", json!({"n": 1})),
    )
    .await;
    assert_eq!(answer.status(), StatusCode::OK);
    let body: Value = answer.json().await.unwrap();
    assert_eq!(body["result"]["n"], 1);
    let missing = client
        .get(format!("http://{address}/agents/nowhere"))
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status(), StatusCode::NOT_FOUND);
    assert!(
        missing.headers().contains_key("x-frame-options"),
        "hardened 404 inside the nest"
    );
}

#[tokio::test]
async fn legacy_sse_announces_the_endpoint_first_and_answers_as_message_events() {
    let handler = TestProtocol::new();
    let notes = Arc::clone(&handler.notifications);
    let server = ServerBuilder::new()
        .hardening(test_hardening())
        .legacy_sse("/sse", "/messages", handler, HttpConfig::default())
        .build()
        .unwrap();
    let server = serve(server).await;
    let client = reqwest::Client::new();
    let stream = client
        .get(server.url("/sse"))
        .header("accept", "text/event-stream")
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), StatusCode::OK);
    let mut events = SseReader::new(stream);
    let endpoint = events.next().await.expect("the endpoint event");
    assert!(endpoint.is_named(&EventName::ENDPOINT));
    assert!(
        endpoint.data().starts_with("/messages?sessionId="),
        "{}",
        endpoint.data()
    );

    let url = server.url(endpoint.data());
    let accepted = post_json(
        &client,
        &url,
        &request(1, "notify-then-answer", json!({"count": 1})),
    )
    .await;
    assert_eq!(accepted.status(), StatusCode::ACCEPTED);
    let progress = events.next().await.expect("a message event");
    assert!(progress.is_named(&EventName::MESSAGE));
    let progress: Value = serde_json::from_str(progress.data()).unwrap();
    assert_eq!(progress["method"], "progress");
    let answer = events.next().await.expect("the answer");
    assert!(answer.is_named(&EventName::MESSAGE));
    let answer: Value = serde_json::from_str(answer.data()).unwrap();
    assert_eq!(answer["id"], 1);
    assert_eq!(answer["result"]["sent"], 1);

    let note = post_json(&client, &url, &json!({"jsonrpc": "2.0", "method": "ping"})).await;
    assert_eq!(note.status(), StatusCode::ACCEPTED);
    for _ in 0..100 {
        if notes.lock().unwrap().iter().any(|method| method == "ping") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert!(
        notes.lock().unwrap().iter().any(|method| method == "ping"),
        "the notification reached the handler"
    );
}

#[tokio::test]
async fn a_legacy_post_naming_an_unknown_session_is_404_and_a_missing_one_400() {
    let server = ServerBuilder::new()
        .hardening(test_hardening())
        .legacy_sse(
            "/sse",
            "/messages",
            TestProtocol::new(),
            HttpConfig::default(),
        )
        .build()
        .unwrap();
    let server = serve(server).await;
    let client = reqwest::Client::new();
    let unknown = post_json(
        &client,
        &server.url("/messages?sessionId=nope"),
        &request(1, "echo", json!({})),
    )
    .await;
    assert_eq!(unknown.status(), StatusCode::NOT_FOUND);
    let missing = post_json(
        &client,
        &server.url("/messages"),
        &request(1, "echo", json!({})),
    )
    .await;
    assert_eq!(missing.status(), StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn the_legacy_endpoint_names_the_nested_path() {
    let server = ServerBuilder::new()
        .hardening(test_hardening())
        .legacy_sse(
            "/sse",
            "/messages",
            TestProtocol::new(),
            HttpConfig::default(),
        )
        .build()
        .unwrap();
    let app = Router::new().nest("/mcp-legacy", server.router());
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    let stream = reqwest::Client::new()
        .get(format!("http://{address}/mcp-legacy/sse"))
        .header("accept", "text/event-stream")
        .send()
        .await
        .unwrap();
    let mut events = SseReader::new(stream);
    let endpoint = events.next().await.expect("the endpoint event");
    assert!(
        endpoint
            .data()
            .starts_with("/mcp-legacy/messages?sessionId="),
        "{}",
        endpoint.data()
    );
}

#[tokio::test]
async fn authentication_runs_before_any_session_lookup_and_the_principal_reaches_the_handler() {
    let authenticator = BearerAuthenticator::new()
        .with_token("s3cret", Principal::new("alice", vec!["rpc".to_owned()]));
    let server = ServerBuilder::new()
        .hardening(
            test_hardening()
                .authenticator(authenticator)
                .auth_policy(AuthPolicy::RequireScopes(vec!["rpc".to_owned()])),
        )
        .streamable_http("/rpc", TestProtocol::new(), HttpConfig::default())
        .build()
        .unwrap();
    let server = serve(server).await;
    let client = reqwest::Client::new();
    // An unknown session without a credential is a 401, not the 404 a lookup would give.
    let anonymous = client
        .post(server.url("/rpc"))
        .header("content-type", "application/json")
        .header(SESSION_HEADER, "some-session")
        .body(request(1, "echo", json!({})).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(anonymous.status(), StatusCode::UNAUTHORIZED);
    let opened = client
        .post(server.url("/rpc"))
        .header("content-type", "application/json")
        .bearer_auth("s3cret")
        .body(request(1, "open", json!({})).to_string())
        .send()
        .await
        .unwrap();
    let session = opened.headers()[SESSION_HEADER]
        .to_str()
        .unwrap()
        .to_owned();
    let whoami = client
        .post(server.url("/rpc"))
        .header("content-type", "application/json")
        .header(SESSION_HEADER, &session)
        .bearer_auth("s3cret")
        .body(request(2, "whoami", json!({})).to_string())
        .send()
        .await
        .unwrap();
    let body: Value = whoami.json().await.unwrap();
    assert_eq!(body["result"]["subject"], "alice");
}

#[test]
fn two_transports_mounted_at_one_path_fail_the_build_with_an_error() {
    let built = ServerBuilder::new()
        .hardening(test_hardening())
        .streamable_http("/rpc", TestProtocol::new(), HttpConfig::default())
        .streamable_http("/rpc", TestProtocol::new(), HttpConfig::default())
        .build();
    assert!(matches!(built, Err(HardeningError::RouteConflict(path)) if path == "/rpc"));
}

#[test]
fn a_callers_route_at_a_mounted_path_fails_the_build_instead_of_panicking() {
    let built = ServerBuilder::new()
        .hardening(test_hardening())
        .streamable_http("/rpc", TestProtocol::new(), HttpConfig::default())
        .routes(Router::new().route("/rpc", get(|| async { "mine" })))
        .build();
    assert!(matches!(built, Err(HardeningError::RouteConflict(_))));
}
