//! The abuse load of issue 13, as a client: silent sockets (connect, send nothing) and
//! dribblers (a request head one byte a second), each reconnecting whenever the server closes
//! it, while one healthy client measures its latency — over one kept-alive connection, and over
//! a fresh connection per request (what a new client meets). `scripts/abuse.sh` runs it against
//! the runtime's own listener at a file limit of 1,024, unloaded and abused; run directly by
//! `cargo bench` it only prints how to.
//!
//! ```text
//! abuse <port> <silent> <dribblers> <seconds> <reconnect-ms> <healthy-ip>   # one JSON report
//! ```
//!
//! An attacker whose socket the server closed connects again after `reconnect-ms` (0: never,
//! each socket is opened once, as in the issue's run). The healthy client connects from
//! `healthy-ip` (any loopback address: `127.0.0.1` shares the attackers' address, and so their
//! per-peer cap; `127.0.0.2` is another peer).

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

const REQUEST: &str =
    r#"{"jsonrpc":"2.0","id":1,"method":"echo","params":{"text":"hello, world"}}"#;
/// How long a healthy request may take before it counts as failed.
const PATIENCE: Duration = Duration::from_secs(2);
/// How long the attackers get to take their places before the healthy client measures.
const WARM_UP: Duration = Duration::from_secs(3);

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let words: Vec<&str> = args.iter().map(String::as_str).collect();
    let outcome = match words.as_slice() {
        [port, silent, dribblers, seconds, reconnect, healthy_ip] => {
            run(port, silent, dribblers, seconds, reconnect, healthy_ip)
        }
        _ => {
            eprintln!(
                "run scripts/abuse.sh; usage: abuse <port> <silent> <dribblers> <seconds> \
                 <reconnect-ms> <healthy-ip>"
            );
            Ok(())
        }
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("abuse: {message}");
            ExitCode::FAILURE
        }
    }
}

/// What the attackers saw.
#[derive(Default)]
struct Attack {
    /// Sockets connected and not (yet) closed by the server.
    held: AtomicUsize,
    opened: AtomicU64,
    /// Closed by the server (EOF or reset).
    closed: AtomicU64,
    /// Answered `503` before being closed.
    refused: AtomicU64,
    /// Connects that failed outright.
    failed: AtomicU64,
}

fn run(
    port: &str,
    silent: &str,
    dribblers: &str,
    seconds: &str,
    reconnect: &str,
    healthy_ip: &str,
) -> Result<(), String> {
    let port: u16 = port.parse().map_err(|_| "port")?;
    let silent: usize = silent.parse().map_err(|_| "silent")?;
    let dribblers: usize = dribblers.parse().map_err(|_| "dribblers")?;
    let seconds: u64 = seconds.parse().map_err(|_| "seconds")?;
    let reconnect = match reconnect.parse().map_err(|_| "reconnect-ms")? {
        0 => None,
        ms => Some(Duration::from_millis(ms)),
    };
    let healthy_ip: std::net::IpAddr = healthy_ip.parse().map_err(|_| "healthy-ip")?;
    let address = SocketAddr::from(([127, 0, 0, 1], port));
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|error| error.to_string())?
        .block_on(async move {
            let attack = Arc::new(Attack::default());
            for _ in 0..silent {
                tokio::spawn(attacker(
                    address,
                    Arc::clone(&attack),
                    Kind::Silent,
                    reconnect,
                ));
            }
            for _ in 0..dribblers {
                tokio::spawn(attacker(
                    address,
                    Arc::clone(&attack),
                    Kind::Dribbler,
                    reconnect,
                ));
            }
            tokio::time::sleep(if silent + dribblers > 0 {
                WARM_UP
            } else {
                Duration::ZERO
            })
            .await;
            let held_at_start = attack.held.load(Ordering::Relaxed);
            let until = Instant::now() + Duration::from_secs(seconds);
            let (kept, fresh) = healthy(address, healthy_ip, until).await;
            println!(
                "{{\"silent\":{silent},\"dribblers\":{dribblers},\"kept_alive\":{},\"fresh\":{},\
                 \"attack\":{{\"held_at_start\":{held_at_start},\"held_at_end\":{},\"opened\":{},\
                 \"closed_by_server\":{},\"refused_503\":{},\"connect_failed\":{}}}}}",
                kept.report(),
                fresh.report(),
                attack.held.load(Ordering::Relaxed),
                attack.opened.load(Ordering::Relaxed),
                attack.closed.load(Ordering::Relaxed),
                attack.refused.load(Ordering::Relaxed),
                attack.failed.load(Ordering::Relaxed),
            );
            Ok(())
        })
}

#[derive(Clone, Copy)]
enum Kind {
    Silent,
    Dribbler,
}

/// One attacker: a socket held open (silent, or dribbling a head), connected again
/// `reconnect` after the server closes it (or never).
async fn attacker(
    address: SocketAddr,
    attack: Arc<Attack>,
    kind: Kind,
    reconnect: Option<Duration>,
) {
    loop {
        let Ok(mut stream) = TcpStream::connect(address).await else {
            attack.failed.fetch_add(1, Ordering::Relaxed);
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        attack.opened.fetch_add(1, Ordering::Relaxed);
        attack.held.fetch_add(1, Ordering::Relaxed);
        let refused = match kind {
            Kind::Silent => held_silent(&mut stream).await,
            Kind::Dribbler => dribbled(&mut stream, address).await,
        };
        attack.held.fetch_sub(1, Ordering::Relaxed);
        attack.closed.fetch_add(1, Ordering::Relaxed);
        if refused {
            attack.refused.fetch_add(1, Ordering::Relaxed);
        }
        match reconnect {
            Some(after) => tokio::time::sleep(after).await,
            None => return,
        }
    }
}

/// Waits until the server closes the socket; whether it said `503` first.
async fn held_silent(stream: &mut TcpStream) -> bool {
    let mut seen = Vec::new();
    let mut chunk = [0; 512];
    loop {
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return seen.starts_with(b"HTTP/1.1 503"),
            Ok(read) => seen.extend_from_slice(chunk.get(..read).unwrap_or_default()),
        }
    }
}

/// Sends a head one byte a second until the server closes the socket.
async fn dribbled(stream: &mut TcpStream, address: SocketAddr) -> bool {
    let head = format!("POST /mcp HTTP/1.1\r\nhost: {address}\r\nx-dribble: ");
    if stream.write_all(head.as_bytes()).await.is_err() {
        return false;
    }
    let (mut reader, mut writer) = stream.split();
    let mut seen = Vec::new();
    let mut chunk = [0; 512];
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    loop {
        tokio::select! {
            _ = tick.tick() => {
                if writer.write_all(b"a").await.is_err() {
                    return seen.starts_with(b"HTTP/1.1 503");
                }
            }
            read = reader.read(&mut chunk) => match read {
                Ok(0) | Err(_) => return seen.starts_with(b"HTTP/1.1 503"),
                Ok(read) => seen.extend_from_slice(chunk.get(..read).unwrap_or_default()),
            }
        }
    }
}

/// Latencies of one kind of healthy request, in microseconds, and how many failed.
#[derive(Default)]
struct Samples {
    micros: Vec<u64>,
    failed: u64,
}

impl Samples {
    fn report(mut self) -> String {
        self.micros.sort_unstable();
        let at = |p: f64| -> u64 {
            if self.micros.is_empty() {
                return 0;
            }
            let rank = ((self.micros.len() as f64) * p).ceil() as usize;
            self.micros
                .get(rank.clamp(1, self.micros.len()) - 1)
                .copied()
                .unwrap_or(0)
        };
        format!(
            "{{\"ok\":{},\"failed\":{},\"p50_us\":{},\"p90_us\":{},\"p99_us\":{}}}",
            self.micros.len(),
            self.failed,
            at(0.5),
            at(0.9),
            at(0.99)
        )
    }
}

/// The healthy client, until `until`: a request over its kept-alive connection, then one over a
/// fresh connection, in turn, each given [`PATIENCE`].
async fn healthy(
    address: SocketAddr,
    from: std::net::IpAddr,
    until: Instant,
) -> (Samples, Samples) {
    let (mut kept, mut fresh) = (Samples::default(), Samples::default());
    let mut connection: Option<TcpStream> = None;
    while Instant::now() < until {
        let started = Instant::now();
        let reused = match connection.take() {
            Some(stream) => Some(stream),
            None => tokio::time::timeout(PATIENCE, connect_from(from, address))
                .await
                .ok()
                .and_then(Result::ok),
        };
        match reused {
            Some(mut stream) => {
                match tokio::time::timeout(PATIENCE, echo(&mut stream, address)).await {
                    Ok(Ok(())) => {
                        kept.micros.push(elapsed_micros(started));
                        connection = Some(stream);
                    }
                    _ => kept.failed += 1,
                }
            }
            None => kept.failed += 1,
        }
        let started = Instant::now();
        let answered = tokio::time::timeout(PATIENCE, async {
            let mut stream = connect_from(from, address)
                .await
                .map_err(|error| error.to_string())?;
            echo(&mut stream, address).await
        })
        .await;
        match answered {
            Ok(Ok(())) => fresh.micros.push(elapsed_micros(started)),
            _ => fresh.failed += 1,
        }
    }
    (kept, fresh)
}

/// A connection from `ip`, a loopback address of the caller's choosing.
async fn connect_from(ip: std::net::IpAddr, address: SocketAddr) -> std::io::Result<TcpStream> {
    let socket = tokio::net::TcpSocket::new_v4()?;
    socket.bind(SocketAddr::new(ip, 0))?;
    socket.connect(address).await
}

fn elapsed_micros(started: Instant) -> u64 {
    u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX)
}

/// One echo call on `stream`, which must be answered `200`.
async fn echo(stream: &mut TcpStream, address: SocketAddr) -> Result<(), String> {
    stream
        .set_nodelay(true)
        .map_err(|error| error.to_string())?;
    let request = format!(
        "POST /mcp HTTP/1.1\r\nhost: {address}\r\ncontent-type: application/json\r\n\
         accept: application/json\r\ncontent-length: {}\r\n\r\n{REQUEST}",
        REQUEST.len()
    );
    stream
        .write_all(request.as_bytes())
        .await
        .map_err(|error| error.to_string())?;
    let mut buffer = Vec::with_capacity(1024);
    loop {
        let mut chunk = [0; 1024];
        let read = stream
            .read(&mut chunk)
            .await
            .map_err(|error| error.to_string())?;
        if read == 0 {
            return Err("closed before the answer".into());
        }
        buffer.extend_from_slice(chunk.get(..read).unwrap_or_default());
        if let Some(head_end) = buffer.windows(4).position(|window| window == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(buffer.get(..head_end).unwrap_or_default());
            let length: usize = head
                .split("\r\n")
                .find_map(|line| {
                    let (name, value) = line.split_once(':')?;
                    name.eq_ignore_ascii_case("content-length")
                        .then(|| value.trim().parse().ok())
                        .flatten()
                })
                .unwrap_or(0);
            if buffer.len() >= head_end + 4 + length {
                return if head.starts_with("HTTP/1.1 200") {
                    Ok(())
                } else {
                    Err(head.lines().next().unwrap_or_default().to_owned())
                };
            }
        }
    }
}
