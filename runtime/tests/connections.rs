//! The owned listener's connection lifecycle over real sockets: a connection that sends no
//! request head in time is closed (silent or dribbling), an idle keep-alive connection is
//! closed, a stream the server keeps writing to is not idle, and past the connection caps the
//! oldest connection that never sent a request makes room — or, when there is none, the new one
//! is answered 503 and closed — so a healthy client is served throughout. Timeouts are short
//! here; the defaults are the documented ones.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

mod common;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use common::{Endpoint, SESSION_HEADER, TestProtocol, TestServer, serve_with_listener};
use protocols_runtime::http::HttpConfig;
use protocols_runtime::server::ListenerConfig;
use protocols_runtime::stream::StreamPolicy;
use protocols_testkit::{RawConnection, SseReader, raw_request};
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt as _;
use tokio::net::{TcpSocket, TcpStream};

const HEAD_TIMEOUT: Duration = Duration::from_millis(300);
const IDLE_TIMEOUT: Duration = Duration::from_millis(400);
/// What the watchdog may add to a timeout: a tenth of it, plus scheduling on a busy machine.
const SLACK: Duration = Duration::from_millis(700);

fn short_timeouts() -> ListenerConfig {
    ListenerConfig::default()
        .head_timeout(HEAD_TIMEOUT)
        .idle_timeout(IDLE_TIMEOUT)
}

async fn serve(listener: ListenerConfig) -> TestServer {
    serve_with_listener(TestProtocol::new(), HttpConfig::default(), listener).await
}

/// A stateless echo as raw HTTP/1.1 bytes.
fn echo_request(address: SocketAddr, id: i64) -> Vec<u8> {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "stateless/echo", "params": {"n": id}})
        .to_string();
    raw_request(
        "POST /rpc HTTP/1.1",
        &[
            &format!("host: {address}"),
            "content-type: application/json",
            "accept: application/json",
        ],
        &body,
    )
}

/// An echo over its own connection, which must be answered 200.
async fn served(address: SocketAddr) -> bool {
    let mut connection = RawConnection::open(address).await;
    connection.send(&echo_request(address, 1)).await;
    connection
        .answer()
        .await
        .is_some_and(|answer| answer.status == 200 && answer.json()["result"]["n"] == 1)
}

#[tokio::test]
async fn a_silent_socket_is_closed_after_the_head_timeout() {
    let server = serve(short_timeouts()).await;
    let opened = Instant::now();
    let mut silent = RawConnection::open(server.address).await;
    assert!(silent.closed_within(HEAD_TIMEOUT + SLACK).await);
    let lived = opened.elapsed();
    assert!(lived >= HEAD_TIMEOUT, "closed after {lived:?}");
}

#[tokio::test]
async fn a_head_dribbled_a_byte_at_a_time_is_closed_after_the_head_timeout() {
    let server = serve(short_timeouts()).await;
    let opened = Instant::now();
    let mut stream = TcpStream::connect(server.address).await.unwrap();
    let head = format!("POST /rpc HTTP/1.1\r\nhost: {}\r\nx-slow: ", server.address);
    stream.write_all(head.as_bytes()).await.unwrap();
    // One byte every 20 ms: the connection is never silent, and its head never ends.
    let closed = loop {
        tokio::time::sleep(Duration::from_millis(20)).await;
        if stream.write_all(b"a").await.is_err() {
            break opened.elapsed();
        }
        assert!(
            opened.elapsed() < HEAD_TIMEOUT + SLACK,
            "still open after {:?}",
            opened.elapsed()
        );
    };
    assert!(closed >= HEAD_TIMEOUT, "closed after {closed:?}");
}

#[tokio::test]
async fn an_idle_keep_alive_connection_is_served_until_the_idle_timeout_then_closed() {
    let server = serve(short_timeouts()).await;
    let mut connection = RawConnection::open(server.address).await;
    assert_eq!(
        connection
            .exchange(&echo_request(server.address, 1))
            .await
            .status,
        200
    );
    // Idle for less than the timeout (and longer than the head timeout): still served.
    tokio::time::sleep(IDLE_TIMEOUT / 2 + HEAD_TIMEOUT / 2).await;
    assert_eq!(
        connection
            .exchange(&echo_request(server.address, 2))
            .await
            .status,
        200
    );
    let answered = Instant::now();
    assert!(connection.closed_within(IDLE_TIMEOUT + SLACK).await);
    let idle = answered.elapsed();
    assert!(idle >= IDLE_TIMEOUT, "closed after {idle:?} idle");
}

#[tokio::test]
async fn a_stream_with_keep_alives_outlives_the_idle_timeout_and_a_silent_one_does_not() {
    let keep_alive =
        HttpConfig::default().streams(StreamPolicy::default().keep_alive(Some(IDLE_TIMEOUT / 4)));
    let server = serve_with_listener(TestProtocol::new(), keep_alive, short_timeouts()).await;
    let rpc = Endpoint::of(&server);
    let session = rpc.open().await;
    let stream = rpc.event_stream(&session, None).await;
    assert_eq!(stream.status(), 200);
    let mut events = SseReader::new(stream);
    tokio::time::sleep(IDLE_TIMEOUT * 3).await;
    let scheduled = rpc.call(&session, 5, "notify-later", json!({})).await;
    assert_eq!(scheduled.status(), 200);
    let (_, later) = events.next_json().await.expect("the stream is still open");
    assert_eq!(later["method"], "later");

    let silent = HttpConfig::default().streams(StreamPolicy::default());
    let server = serve_with_listener(TestProtocol::new(), silent, short_timeouts()).await;
    let rpc = Endpoint::of(&server);
    let session = rpc.open().await;
    let mut connection = RawConnection::open(server.address).await;
    let get = format!(
        "GET /rpc HTTP/1.1\r\nhost: {}\r\naccept: text/event-stream\r\n{SESSION_HEADER}: {session}\r\n\r\n",
        server.address
    );
    connection.send(get.as_bytes()).await;
    assert!(
        connection.closed_within(IDLE_TIMEOUT + SLACK * 2).await,
        "a stream the server writes nothing to is idle"
    );
}

/// A connection holding an open event stream: proven, busy, never evicted.
async fn busy_connection(server: &TestServer, session: &str) -> RawConnection {
    let mut connection = RawConnection::open(server.address).await;
    let get = format!(
        "GET /rpc HTTP/1.1\r\nhost: {}\r\naccept: text/event-stream\r\n{SESSION_HEADER}: {session}\r\n\r\n",
        server.address
    );
    connection.send(get.as_bytes()).await;
    connection
}

/// What a connection past the caps is answered before it is closed.
async fn assert_refused(mut connection: RawConnection) {
    let answer = connection
        .answer()
        .await
        .expect("a refusal before the close");
    assert_eq!(answer.status, 503);
    assert_eq!(answer.header("retry-after"), Some("1"));
    assert_eq!(answer.header("connection"), Some("close"));
    for name in [
        "content-security-policy",
        "strict-transport-security",
        "x-frame-options",
        "x-content-type-options",
        "cache-control",
        "referrer-policy",
    ] {
        assert!(answer.header(name).is_some(), "missing {name}");
    }
    let body: Value = answer.json();
    assert_eq!(body["error"]["code"], -32016);
    assert!(connection.closed_within(Duration::from_secs(2)).await);
}

/// A stateless call that sleeps for `ms`, as raw HTTP/1.1 bytes.
fn sleep_request(address: SocketAddr, ms: u64) -> Vec<u8> {
    let body =
        json!({"jsonrpc": "2.0", "id": 9, "method": "stateless/sleep", "params": {"ms": ms}})
            .to_string();
    raw_request(
        "POST /rpc HTTP/1.1",
        &[
            &format!("host: {address}"),
            "content-type: application/json",
            "accept: application/json",
        ],
        &body,
    )
}

#[tokio::test]
async fn past_the_connection_cap_a_new_connection_is_refused_until_one_closes() {
    let server = serve(ListenerConfig::default().max_connections(3)).await;
    // Three connections each with a call in flight: proven, busy, never made room with.
    let mut busy = Vec::new();
    for _ in 0..3 {
        let mut connection = RawConnection::open(server.address).await;
        connection.send(&sleep_request(server.address, 600)).await;
        busy.push(connection);
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_refused(RawConnection::open(server.address).await).await;
    for connection in &mut busy {
        assert_eq!(connection.answer().await.expect("answered").status, 200);
    }
    // Answered, the three stay open (kept alive) and still fill the cap.
    assert_refused(RawConnection::open(server.address).await).await;
    drop(busy.pop());
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(served(server.address).await, "served once a place is free");
}

/// A connection from `ip` (any address on the loopback network).
async fn connect_from(ip: [u8; 4], server: SocketAddr) -> RawConnection {
    let socket = TcpSocket::new_v4().unwrap();
    socket
        .bind(SocketAddr::from((ip, 0)))
        .expect("a loopback source address");
    RawConnection::over(socket.connect(server).await.unwrap())
}

#[tokio::test]
async fn a_peer_at_its_cap_is_refused_while_another_peer_is_served() {
    let server = serve(ListenerConfig::default().max_connections_per_peer(2)).await;
    let rpc = Endpoint::of(&server);
    let session = rpc.open().await;
    let _streams = [
        busy_connection(&server, &session).await,
        busy_connection(&server, &session).await,
    ];
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_refused(RawConnection::open(server.address).await).await;
    let mut other = connect_from([127, 0, 0, 2], server.address).await;
    let answer = other.exchange(&echo_request(server.address, 3)).await;
    assert_eq!(answer.status, 200);
}

#[tokio::test]
async fn a_healthy_client_is_served_while_the_cap_is_full_of_silent_sockets() {
    // The default head timeout (10 s) keeps the silent sockets open for the whole test.
    let server = serve(ListenerConfig::default().max_connections(8)).await;
    let mut silent = Vec::new();
    for _ in 0..8 {
        silent.push(RawConnection::open(server.address).await);
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    // Each healthy connection stays open, so each one needs a place made for it.
    let mut healthy = Vec::new();
    for round in 0..3 {
        let started = Instant::now();
        let mut connection = RawConnection::open(server.address).await;
        let answer = connection
            .exchange(&echo_request(server.address, round))
            .await;
        assert_eq!(answer.status, 200, "round {round}");
        assert!(started.elapsed() < Duration::from_secs(2));
        healthy.push(connection);
    }
    // Room was made by closing the oldest silent sockets, never a healthy client.
    let mut closed = Vec::new();
    for socket in &mut silent {
        closed.push(socket.closed_within(Duration::from_millis(50)).await);
    }
    assert_eq!(
        closed,
        [true, true, true, false, false, false, false, false],
        "the three oldest silent sockets were closed"
    );
    for (round, connection) in healthy.iter_mut().enumerate() {
        let answer = connection
            .exchange(&echo_request(server.address, 10 + round as i64))
            .await;
        assert_eq!(
            answer.status, 200,
            "healthy connection {round} still served"
        );
    }
}
