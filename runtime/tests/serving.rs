//! What a server that owns its listener adds over a bare router, over real sockets: the peer
//! address reaches the per-caller rate limit, the `Host`/`Origin` defaults follow the address
//! actually bound, and graceful shutdown ends an open stream with HTTP's final chunk.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

mod common;

use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

use common::{
    SESSION_HEADER, TestProtocol, TestServer, request, serve, serve_protocol, test_hardening,
};
use protocols_runtime::hardening::{HardeningConfig, RateLimit};
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
