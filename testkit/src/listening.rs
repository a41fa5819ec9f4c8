//! Waiting for a spawned server to listen on the port it was handed. A connect to a free local
//! port can succeed without any listener: when the kernel picks the destination port as the
//! source port, TCP's simultaneous open connects the socket to itself, which both looks like a
//! listener and holds the very port the server is about to bind. Only a connection whose two
//! ends differ counts here; a server a client reconnects to in a loop (Redis through an outage)
//! is best given a port outside the ephemeral range, where no source port can land.

use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

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

/// Where [`free_port_below_ephemeral_range`] looks: above the well-known and most registered
/// ports' crowd, below Linux's default ephemeral range.
const QUIET_PORTS: std::ops::Range<u16> = 20_000..32_768;

/// A free loopback port below the kernel's ephemeral range, so no outgoing connection (ours or a
/// reconnecting client's) can be handed it as a source port and connect to itself. Falls back to
/// any free port when the range cannot be read or nothing there is free.
pub fn free_port_below_ephemeral_range() -> SocketAddr {
    let first_ephemeral = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|range| range.split_whitespace().next()?.parse::<u16>().ok())
        .unwrap_or(QUIET_PORTS.end);
    let end = first_ephemeral.min(QUIET_PORTS.end);
    let span = end.saturating_sub(QUIET_PORTS.start).max(1);
    // Start somewhere different in each process, so parallel test binaries rarely race.
    let seed = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.subsec_nanos())
        ^ std::process::id();
    (0..span.min(512))
        .map(|step| QUIET_PORTS.start + ((seed as u16).wrapping_add(step) % span))
        .find_map(|port| TcpListener::bind((Ipv4Addr::LOCALHOST, port)).ok())
        .or_else(|| TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).ok())
        .and_then(|listener| listener.local_addr().ok())
        .expect("a free loopback port")
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

    #[test]
    fn a_quiet_port_is_free_and_below_the_ephemeral_range() {
        let address = free_port_below_ephemeral_range();
        assert!(QUIET_PORTS.contains(&address.port()), "{address}");
        TcpListener::bind(address).unwrap();
    }
}
