//! Waiting for a spawned server to listen on the port it was handed. A connect to a free local
//! port can succeed without any listener: when the kernel picks the destination port as the
//! source port, TCP's simultaneous open connects the socket to itself, which both looks like a
//! listener and holds the very port the server is about to bind. Only a connection whose two
//! ends differ counts here.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use tokio::net::TcpStream;

/// How often [`listening_within`] tries again.
const RETRY_EVERY: Duration = Duration::from_millis(25);

/// Whether something other than this very socket accepts a connection at `address`.
pub async fn accepts(address: SocketAddr) -> bool {
    match TcpStream::connect(address).await {
        Ok(stream) => reaches_another_socket(&stream),
        Err(_) => false,
    }
}

/// Whether a connected stream's far end is another socket, not the stream itself.
fn reaches_another_socket(stream: &TcpStream) -> bool {
    match (stream.local_addr(), stream.peer_addr()) {
        (Ok(local), Ok(peer)) => local != peer,
        _ => false,
    }
}

/// Waits until a listener [`accepts`] connections at `address`; `false` when none did within
/// `within`.
pub async fn listening_within(address: SocketAddr, within: Duration) -> bool {
    let started = Instant::now();
    loop {
        if accepts(address).await {
            return true;
        }
        if started.elapsed() >= within {
            return false;
        }
        tokio::time::sleep(RETRY_EVERY).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_bound_listener_is_accepted_and_a_closed_port_is_not() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        assert!(accepts(address).await);
        drop(listener);
        assert!(!listening_within(address, Duration::from_millis(100)).await);
    }

    #[tokio::test]
    async fn a_socket_connected_to_itself_is_not_a_listener() {
        // Bind the source port first, then connect it to its own address: the simultaneous
        // open a retry loop can stumble into, made on purpose.
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let address = socket.local_addr().unwrap();
        let stream = socket.connect(address).await.unwrap();
        assert!(!reaches_another_socket(&stream));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let real = TcpStream::connect(listener.local_addr().unwrap())
            .await
            .unwrap();
        assert!(reaches_another_socket(&real));
    }
}
