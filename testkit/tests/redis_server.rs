//! The throwaway `redis-server` really runs, stores, stops, comes back on its port, and is gone
//! once dropped.

use std::net::TcpStream;
use std::time::Duration;

use protocols_testkit::{RedisServer, Reply};

fn refuses_connections(server: &RedisServer) -> bool {
    TcpStream::connect_timeout(&server.address(), Duration::from_millis(500)).is_err()
}

fn status(text: &str) -> Reply {
    Reply::Status(text.into())
}

fn bulk(text: &str) -> Reply {
    Reply::Bulk(Some(text.into()))
}

#[test]
fn a_started_server_answers_and_keeps_what_it_is_given() {
    let server = RedisServer::start();
    assert!(server.url().starts_with("redis://127.0.0.1:"));
    assert_eq!(server.command(&["PING"]), status("PONG"));
    assert_eq!(server.key_count(), 0);
    assert_eq!(server.command(&["SET", "greeting", "hello"]), status("OK"));
    assert_eq!(server.command(&["GET", "greeting"]), bulk("hello"));
    assert_eq!(server.command(&["GET", "missing"]), Reply::Bulk(None));
    assert_eq!(server.key_count(), 1);
}

#[test]
fn persistence_is_off() {
    let server = RedisServer::start();
    let expected = |name: &str, value: &str| Reply::Array(vec![bulk(name), bulk(value)]);
    assert_eq!(
        server.command(&["CONFIG", "GET", "appendonly"]),
        expected("appendonly", "no")
    );
    assert_eq!(
        server.command(&["CONFIG", "GET", "save"]),
        expected("save", "")
    );
}

#[test]
fn a_stopped_server_refuses_and_comes_back_empty_on_the_same_port() {
    let mut server = RedisServer::start();
    server.command(&["SET", "k", "v"]);
    let address = server.address();
    server.stop();
    assert!(!server.is_running());
    assert!(refuses_connections(&server));
    server.resume();
    assert_eq!(server.address(), address);
    assert_eq!(server.command(&["PING"]), status("PONG"));
    assert_eq!(
        server.key_count(),
        0,
        "persistence is off, so nothing survives a kill"
    );
}

#[test]
fn a_dropped_server_is_gone() {
    let server = RedisServer::start();
    let address = server.address();
    drop(server);
    assert!(TcpStream::connect_timeout(&address, Duration::from_millis(500)).is_err());
}
