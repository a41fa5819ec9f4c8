//! What a server that owns its listener adds over a bare router, over real sockets: the peer
//! address reaches the per-caller rate limit, the `Host`/`Origin` defaults follow the address
//! actually bound, graceful shutdown ends an open stream with HTTP's final chunk and lets a
//! request in flight finish, mounts it dispatches to directly are hardened as the router's
//! paths are, HTTP/2 is spoken as well as HTTP/1.1, and a handler learns its caller's address
//! whichever way its request came.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

mod common;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

use common::{
    SESSION_HEADER, TestProtocol, TestServer, request, serve, serve_protocol, test_hardening,
};
use protocols_runtime::hardening::{
    AuthPolicy, BearerAuthenticator, HardeningConfig, Principal, RateLimit,
};
use protocols_runtime::http::HttpConfig;
use protocols_runtime::server::ServerBuilder;
use reqwest::{Client, StatusCode};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

async fn serve_with(hardening: HardeningConfig) -> TestServer {
    let server = ServerBuilder::new()
        .hardening(hardening)
        .streamable_http("/rpc", TestProtocol::new(), HttpConfig::default())
        .build()
        .expect("server builds");
    serve(server).await
}

/// A client whose connections come from `source` (any 127/8 address is loopback on Linux).
fn client_from(source: Ipv4Addr) -> Client {
    Client::builder()
        .local_address(IpAddr::V4(source))
        .build()
        .expect("client")
}

async fn echo(client: &Client, server: &TestServer) -> reqwest::Response {
    client
        .post(server.url("/rpc"))
        .header("content-type", "application/json")
        .header("accept", "application/json")
        .body(request(1, "stateless/echo", json!({"n": 1})).to_string())
        .send()
        .await
        .expect("request sent")
}

#[tokio::test]
async fn an_anonymous_peer_that_spends_its_budget_gets_429_while_another_peer_is_still_served() {
    let server =
        serve_with(HardeningConfig::new().rate_limit(Some(RateLimit::new(0.001, 3)))).await;
    let noisy = client_from(Ipv4Addr::new(127, 0, 0, 1));
    let quiet = client_from(Ipv4Addr::new(127, 0, 0, 2));
    for attempt in 0..3 {
        assert_eq!(
            echo(&noisy, &server).await.status(),
            StatusCode::OK,
            "request {attempt}"
        );
    }
    let refused = echo(&noisy, &server).await;
    assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
    assert!(refused.headers().contains_key("retry-after"));
    assert_eq!(
        echo(&quiet, &server).await.status(),
        StatusCode::OK,
        "the limit is per peer, not per server"
    );
}

/// A POST of `method` to `url` from `client`, carrying a bearer token no authenticator accepts
/// (ignored where none is configured).
async fn call_at(client: &Client, url: String, method: &str) -> reqwest::Response {
    client
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json")
        .header("authorization", "Bearer not-a-token")
        .body(request(1, method, json!({})).to_string())
        .send()
        .await
        .expect("request sent")
}

/// The caller's address as the test protocol's handler saw it.
async fn seen_peer(answer: reqwest::Response) -> Option<IpAddr> {
    assert_eq!(answer.status(), StatusCode::OK);
    let body: serde_json::Value = answer.json().await.expect("a JSON answer");
    let peer = body["result"]["peer"].as_str()?;
    Some(peer.parse::<SocketAddr>().expect("a socket address").ip())
}

#[tokio::test]
async fn a_failed_login_on_a_served_mount_is_charged_to_its_peer_alone() {
    let hardening = test_hardening()
        .rate_limit(Some(RateLimit::new(0.001, 2)))
        .authenticator(
            BearerAuthenticator::new().with_token("s3cret", Principal::new("alice", Vec::new())),
        )
        .auth_policy(AuthPolicy::RequireScopes(Vec::new()));
    let server = serve_with(hardening).await;
    let guesser = client_from(Ipv4Addr::new(127, 0, 0, 4));
    let bystander = client_from(Ipv4Addr::new(127, 0, 0, 5));
    let url = || server.url("/rpc");
    for attempt in 0..2 {
        let refused = call_at(&guesser, url(), "stateless/echo").await;
        assert_eq!(
            refused.status(),
            StatusCode::UNAUTHORIZED,
            "guess {attempt}"
        );
    }
    let limited = call_at(&guesser, url(), "stateless/echo").await;
    assert_eq!(limited.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(
        call_at(&bystander, url(), "stateless/echo").await.status(),
        StatusCode::UNAUTHORIZED,
        "another peer's guesses are its own"
    );
}

#[tokio::test]
async fn a_handler_on_a_served_mount_sees_its_callers_address() {
    let server = serve_with(test_hardening()).await;
    let caller = client_from(Ipv4Addr::new(127, 0, 0, 6));
    let answer = call_at(&caller, server.url("/rpc"), "stateless/whereami").await;
    assert_eq!(
        seen_peer(answer).await,
        Some(IpAddr::V4(Ipv4Addr::new(127, 0, 0, 6)))
    );
}

#[tokio::test]
async fn a_handler_behind_a_served_servers_router_sees_its_callers_address() {
    let built = ServerBuilder::new()
        .hardening(test_hardening())
        .streamable_http(
            "/tenants/{tenant}/rpc",
            TestProtocol::new(),
            HttpConfig::default(),
        )
        .build()
        .expect("server builds");
    let server = serve(built).await;
    let caller = client_from(Ipv4Addr::new(127, 0, 0, 7));
    let answer = call_at(
        &caller,
        server.url("/tenants/acme/rpc"),
        "stateless/whereami",
    )
    .await;
    assert_eq!(
        seen_peer(answer).await,
        Some(IpAddr::V4(Ipv4Addr::new(127, 0, 0, 7)))
    );
}

#[tokio::test]
async fn a_handler_nested_in_an_app_served_with_connect_info_sees_its_callers_address() {
    let built = ServerBuilder::new()
        .hardening(test_hardening())
        .streamable_http("/rpc", TestProtocol::new(), HttpConfig::default())
        .build()
        .expect("server builds");
    let app = axum::Router::new().nest("/agent", built.router());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind loopback");
    let address = listener.local_addr().expect("local address");
    let service = app.into_make_service_with_connect_info::<SocketAddr>();
    let serving = tokio::spawn(async move { axum::serve(listener, service).await });
    let caller = client_from(Ipv4Addr::new(127, 0, 0, 8));
    let url = format!("http://{address}/agent/rpc");
    let answer = call_at(&caller, url, "stateless/whereami").await;
    let seen = seen_peer(answer).await;
    serving.abort();
    assert_eq!(seen, Some(IpAddr::V4(Ipv4Addr::new(127, 0, 0, 8))));
}

#[tokio::test]
async fn a_served_server_pins_the_loopback_host_and_origin_defaults_to_the_port_it_bound() {
    // No bind address is configured: the server learns it from its listener.
    let server = serve_with(test_hardening()).await;
    let port = server.address.port();
    let other_port = port.wrapping_add(1).max(1);
    let client = Client::new();
    let send = |host: String, origin: Option<String>| {
        let mut builder = client
            .post(server.url("/rpc"))
            .header("host", host)
            .header("content-type", "application/json")
            .header("accept", "application/json")
            .body(request(1, "stateless/echo", json!({})).to_string());
        if let Some(origin) = origin {
            builder = builder.header("origin", origin);
        }
        builder.send()
    };
    let served = send(
        format!("localhost:{port}"),
        Some(format!("http://localhost:{port}")),
    );
    assert_eq!(served.await.unwrap().status(), StatusCode::OK);
    let other_host = send(format!("localhost:{other_port}"), None);
    assert_eq!(
        other_host.await.unwrap().status(),
        StatusCode::MISDIRECTED_REQUEST
    );
    let other_origin = send(
        format!("127.0.0.1:{port}"),
        Some(format!("http://localhost:{other_port}")),
    );
    assert_eq!(other_origin.await.unwrap().status(), StatusCode::FORBIDDEN);
}

/// Reads until `needle` has arrived; returns everything read.
async fn read_until(socket: &mut TcpStream, needle: &[u8]) -> Vec<u8> {
    let mut seen = Vec::new();
    let mut buffer = [0_u8; 4096];
    while !seen.windows(needle.len()).any(|window| window == needle) {
        let read = socket.read(&mut buffer).await.expect("read");
        assert_ne!(
            read,
            0,
            "the connection closed early: {:?}",
            String::from_utf8_lossy(&seen)
        );
        seen.extend_from_slice(&buffer[..read]);
    }
    seen
}

#[tokio::test]
async fn graceful_shutdown_ends_an_open_get_stream_with_the_final_chunk_and_no_reset() {
    let server = serve_protocol(HttpConfig::default()).await;
    let session = {
        let response = Client::new()
            .post(server.url("/rpc"))
            .header("content-type", "application/json")
            .header("accept", "application/json")
            .body(request(0, "open", json!({})).to_string())
            .send()
            .await
            .unwrap();
        response.headers()[SESSION_HEADER]
            .to_str()
            .unwrap()
            .to_owned()
    };
    let mut socket = TcpStream::connect(server.address).await.unwrap();
    let head = format!(
        "GET /rpc HTTP/1.1\r\nhost: {}\r\naccept: text/event-stream\r\n{SESSION_HEADER}: {session}\r\n\r\n",
        server.address
    );
    socket.write_all(head.as_bytes()).await.unwrap();
    let response_head = read_until(&mut socket, b"\r\n\r\n").await;
    let response_head = String::from_utf8_lossy(&response_head).to_ascii_lowercase();
    assert!(response_head.starts_with("http/1.1 200"), "{response_head}");
    assert!(
        response_head.contains("transfer-encoding: chunked"),
        "{response_head}"
    );

    let stopping = tokio::spawn(server.stop());
    let mut rest = Vec::new();
    let ended = tokio::time::timeout(Duration::from_secs(5), socket.read_to_end(&mut rest)).await;
    let read = ended.expect("the stream ends at shutdown");
    assert!(
        read.is_ok(),
        "the connection closed cleanly, not reset: {read:?}"
    );
    assert!(
        rest.ends_with(b"0\r\n\r\n"),
        "the body ends with the final chunk: {:?}",
        String::from_utf8_lossy(&rest)
    );
    let stopped = tokio::time::timeout(Duration::from_secs(5), stopping).await;
    assert!(
        matches!(stopped, Ok(Ok(Ok(())))),
        "the server stopped gracefully"
    );
}

#[tokio::test]
async fn graceful_shutdown_lets_a_request_in_flight_finish_and_then_refuses_connections() {
    let server = serve_with(test_hardening()).await;
    let address = server.address;
    let url = server.url("/rpc");
    let in_flight = tokio::spawn(async move {
        Client::new()
            .post(url)
            .header("content-type", "application/json")
            .header("accept", "application/json")
            .body(request(7, "stateless/pause", json!({})).to_string())
            .send()
            .await
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    let stopped = tokio::time::timeout(Duration::from_secs(5), server.stop()).await;
    assert!(
        matches!(stopped, Ok(Ok(()))),
        "the server stopped gracefully"
    );
    let answer = in_flight
        .await
        .unwrap()
        .expect("the request in flight was answered");
    assert_eq!(answer.status(), StatusCode::OK);
    let body: serde_json::Value = answer.json().await.unwrap();
    assert_eq!(
        body,
        json!({"jsonrpc": "2.0", "id": 7, "result": "resumed"})
    );
    assert!(
        TcpStream::connect(address).await.is_err(),
        "a stopped server accepts no connection"
    );
}

/// The security headers every response of the runtime carries.
const SECURITY_HEADERS: [&str; 4] = [
    "content-security-policy",
    "strict-transport-security",
    "x-frame-options",
    "cache-control",
];

fn assert_hardened(response: &reqwest::Response, what: &str) {
    for name in SECURITY_HEADERS {
        assert!(response.headers().contains_key(name), "{what}: {name}");
    }
}

#[tokio::test]
async fn a_served_mount_and_the_paths_beside_it_are_hardened_alike() {
    let server = serve_with(test_hardening()).await;
    let client = Client::new();
    let served = echo(&client, &server).await;
    assert_eq!(served.status(), StatusCode::OK);
    assert_hardened(&served, "the mount");
    // Only the exact path is the mount's: a trailing slash is an unknown path.
    for path in ["/rpc/", "/rpc/extra", "/elsewhere"] {
        let refused = client
            .post(server.url(path))
            .header("content-type", "application/json")
            .body(request(1, "stateless/echo", json!({})).to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(refused.status(), StatusCode::NOT_FOUND, "{path}");
        assert_hardened(&refused, path);
        let body: serde_json::Value = refused.json().await.unwrap();
        assert_eq!(body["jsonrpc"], "2.0", "{path}: a JSON-RPC error body");
        assert!(body["error"]["code"].is_i64(), "{path}");
    }
    // A refused `Host` on the mount is refused before the transport runs, headers and all.
    let misdirected = client
        .post(server.url("/rpc"))
        .header("host", "example.com")
        .header("content-type", "application/json")
        .header("accept", "application/json")
        .body(request(1, "stateless/echo", json!({})).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(misdirected.status(), StatusCode::MISDIRECTED_REQUEST);
    assert_hardened(&misdirected, "a refused host");
}

#[tokio::test]
async fn a_mount_at_a_path_with_a_capture_is_served_through_the_router() {
    let built = ServerBuilder::new()
        .hardening(test_hardening())
        .streamable_http(
            "/tenants/{tenant}/rpc",
            TestProtocol::new(),
            HttpConfig::default(),
        )
        .build()
        .expect("server builds");
    let server = serve(built).await;
    let answer = Client::new()
        .post(server.url("/tenants/acme/rpc"))
        .header("content-type", "application/json")
        .header("accept", "application/json")
        .body(request(3, "stateless/echo", json!({"n": 3})).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), StatusCode::OK);
    assert_hardened(&answer, "a captured mount");
}

#[tokio::test]
async fn a_served_server_answers_http2_with_prior_knowledge() {
    use http_body_util::{BodyExt as _, Full};
    use hyper_util::rt::{TokioExecutor, TokioIo};

    let server = serve_with(test_hardening()).await;
    let stream = TcpStream::connect(server.address).await.unwrap();
    let (mut sender, connection) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(stream))
            .await
            .expect("an HTTP/2 handshake");
    tokio::spawn(connection);
    let call = http::Request::post(server.url("/rpc"))
        .header("content-type", "application/json")
        .header("accept", "application/json")
        .body(Full::new(bytes::Bytes::from(
            request(5, "stateless/echo", json!({"n": 5})).to_string(),
        )))
        .unwrap();
    let answer = sender.send_request(call).await.expect("an HTTP/2 answer");
    assert_eq!(answer.version(), http::Version::HTTP_2);
    assert_eq!(answer.status(), http::StatusCode::OK);
    assert!(answer.headers().contains_key("content-security-policy"));
    let body = answer.into_body().collect().await.unwrap().to_bytes();
    let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(body["id"], 5);
    assert_eq!(body["result"], json!({"n": 5}));
}
