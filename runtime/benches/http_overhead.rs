//! The HTTP overhead benchmark: one binary that is either a server (a bare axum handler, the
//! same handler behind the hardening layers, or a JSON-RPC echo through the runtime — served by
//! the runtime's own listener, or nested as a router into `axum::serve`) or the
//! closed-loop load generator that drives them. `scripts/bench-runtime.sh` runs the servers and
//! the generator as separate processes pinned to separate cores and reports the ratios; run
//! directly by `cargo bench` it only prints how to.
//!
//! ```text
//! http_overhead serve <bare|bare-headers|hardened|runtime|runtime-auto|runtime-nested|runtime-unstamped|sessions> <port-file>
//! http_overhead load <port> <concurrency> <seconds>
//! http_overhead exactly <port> <concurrency> <requests>  # a fixed count, for instruction counts
//! http_overhead open <port> <sessions>      # against `serve sessions`: prints one id opened
//! http_overhead probe <port> <session-id>   # prints the status a call on that session gets
//! http_overhead summarize <results-file>    # lines `<kind> <load output>`: medians and ratios
//! ```

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use axum::Router;
use axum::routing::post;
use bytes::Bytes;
use http::{Request, header};
use http_body_util::{BodyExt as _, Full};
use hyper_util::rt::TokioIo;
use protocols_runtime::hardening::{BoundedBody, SecurityHeaders};
use protocols_runtime::http::ResponseMode;
use tokio::net::{TcpListener, TcpStream};

mod bench_support;

/// The request every connection sends, and the answer both echo servers give.
const REQUEST: &str =
    r#"{"jsonrpc":"2.0","id":1,"method":"echo","params":{"text":"hello, world"}}"#;
const ANSWER: &str = r#"{"jsonrpc":"2.0","id":1,"result":{"text":"hello, world"}}"#;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let words: Vec<&str> = args.iter().map(String::as_str).collect();
    let outcome = match words.as_slice() {
        ["serve", kind, port_file] => serve(kind, PathBuf::from(port_file)),
        ["load", port, concurrency, seconds] => load(port, concurrency, seconds),
        ["exactly", port, concurrency, requests] => exactly(port, concurrency, requests),
        ["open", port, count] => open_sessions(port, count),
        ["probe", port, session] => probe(port, session),
        ["summarize", file] => summarize(file),
        _ => {
            eprintln!(
                "run scripts/bench-runtime.sh; usage: serve <kind> <port-file> | load <port> <conc> <secs>"
            );
            Ok(())
        }
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("http_overhead: {message}");
            ExitCode::FAILURE
        }
    }
}

fn runtime(threads: usize) -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .enable_all()
        .build()
        .map_err(|error| error.to_string())
}

fn serve(kind: &str, port_file: PathBuf) -> Result<(), String> {
    runtime(1)?.block_on(async move {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(|error| error.to_string())?;
        let address = listener.local_addr().map_err(|error| error.to_string())?;
        let write_port = || {
            std::fs::write(&port_file, address.port().to_string())
                .map_err(|error| error.to_string())
        };
        // The runtime serving its own listener, as a deployment does.
        let hardening = bench_support::bench_hardening(address);
        let owned = match kind {
            "runtime" => Some((hardening, ResponseMode::Json)),
            "runtime-auto" => Some((hardening, ResponseMode::Auto)),
            // What the runtime costs apart from the security headers it must send.
            "runtime-unstamped" => Some((
                hardening.security_headers(SecurityHeaders::none()),
                ResponseMode::Json,
            )),
            _ => None,
        };
        if let Some((hardening, mode)) = owned {
            let server = bench_support::runtime_echo_server(hardening, mode)?;
            write_port()?;
            return server
                .serve_until(listener, std::future::pending())
                .await
                .map_err(|error| error.to_string());
        }
        let app = app(kind, address)?;
        write_port()?;
        bench_support::serve_nodelay(listener, app).await
    })
}

fn app(kind: &str, address: SocketAddr) -> Result<Router, String> {
    match kind {
        "bare" => Ok(Router::new().route("/mcp", post(bare_echo))),
        "bare-headers" => Ok(Router::new().route("/mcp", post(bare_echo_with_security_headers))),
        "hardened" => {
            let hardening = bench_support::bench_hardening(address)
                .build()
                .map_err(|error| error.to_string())?;
            Ok(hardening.wrap(Router::new().route("/mcp", post(hardened_echo))))
        }
        "runtime-nested" => bench_support::runtime_echo(address, ResponseMode::Json),
        "sessions" => bench_support::runtime_sessions(address),
        other => Err(format!("unknown server kind {other}")),
    }
}

async fn bare_echo(body: Bytes) -> ([(header::HeaderName, &'static str); 1], &'static str) {
    let _ = body;
    ([(header::CONTENT_TYPE, "application/json")], ANSWER)
}

/// A second baseline: the bare handler answering with the security headers the hardening
/// stamps (the defaults), to show how much of the runtime's cost is those headers alone.
async fn bare_echo_with_security_headers(
    body: Bytes,
) -> ([(header::HeaderName, &'static str); 7], &'static str) {
    let _ = body;
    (
        [
            (header::CONTENT_TYPE, "application/json"),
            (
                header::CONTENT_SECURITY_POLICY,
                "default-src 'none'; frame-ancestors 'none'",
            ),
            (
                header::STRICT_TRANSPORT_SECURITY,
                "max-age=63072000; includeSubDomains",
            ),
            (header::X_FRAME_OPTIONS, "DENY"),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            (header::CACHE_CONTROL, "no-store"),
            (header::REFERRER_POLICY, "no-referrer"),
        ],
        ANSWER,
    )
}

async fn hardened_echo(
    BoundedBody(body): BoundedBody,
) -> ([(header::HeaderName, &'static str); 1], &'static str) {
    let _ = body;
    ([(header::CONTENT_TYPE, "application/json")], ANSWER)
}

/// Closed loop: `concurrency` keep-alive connections, each sending the next request as soon as
/// the previous answer is read. One warm-up second is discarded. The generator speaks HTTP/1.1
/// itself over raw sockets on a single-threaded runtime (see [`RawConnection`]), so on a
/// shared core it stays cheaper than the servers it measures.
fn load(port: &str, concurrency: &str, seconds: &str) -> Result<(), String> {
    let port: u16 = port.parse().map_err(|_| "port")?;
    let concurrency: usize = concurrency.parse().map_err(|_| "concurrency")?;
    let seconds: u64 = seconds.parse().map_err(|_| "seconds")?;
    generator_runtime()?.block_on(async move {
        let warmup = Duration::from_secs(1);
        let measured = Duration::from_secs(seconds);
        let start = Instant::now();
        let workers: Vec<_> = (0..concurrency)
            .map(|_| tokio::spawn(worker(port, start + warmup, start + warmup + measured)))
            .collect();
        let (mut latencies, mut total) = (Vec::new(), 0);
        for worker in workers {
            let (mut samples, sent) = worker.await.map_err(|error| error.to_string())??;
            latencies.append(&mut samples);
            total += sent;
        }
        report(concurrency, measured, &mut latencies, total);
        Ok(())
    })
}

/// The generator's runtime: one thread, no work stealing, nothing to wake across threads.
fn generator_runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|error| error.to_string())
}

/// Sends exactly `requests` echo calls over `concurrency` connections and prints nothing but
/// the count: the instruction-count runs (`scripts/bench-runtime.sh callgrind`) divide a
/// server's instructions by it, so the count must not depend on timing.
fn exactly(port: &str, concurrency: &str, requests: &str) -> Result<(), String> {
    let port: u16 = port.parse().map_err(|_| "port")?;
    let concurrency: usize = concurrency.parse().map_err(|_| "concurrency")?;
    let requests: usize = requests.parse().map_err(|_| "requests")?;
    generator_runtime()?.block_on(async move {
        let workers: Vec<_> = (0..concurrency)
            .map(|index| {
                let share = requests / concurrency + usize::from(index < requests % concurrency);
                tokio::spawn(async move {
                    let mut connection = RawConnection::open(port).await?;
                    for _ in 0..share {
                        connection.echo().await?;
                    }
                    Ok::<_, String>(())
                })
            })
            .collect();
        for worker in workers {
            worker.await.map_err(|error| error.to_string())??;
        }
        println!("{requests}");
        Ok(())
    })
}

/// Returns the measured latencies and how many requests were sent in all, warm-up included.
async fn worker(
    port: u16,
    measure_from: Instant,
    stop_at: Instant,
) -> Result<(Vec<u32>, u64), String> {
    let mut connection = RawConnection::open(port).await?;
    let mut samples = Vec::with_capacity(1 << 16);
    let mut total = 0;
    loop {
        let sent = Instant::now();
        if sent >= stop_at {
            return Ok((samples, total));
        }
        total += 1;
        connection.echo().await?;
        if sent >= measure_from {
            let micros = sent.elapsed().as_micros();
            samples.push(u32::try_from(micros).unwrap_or(u32::MAX));
        }
    }
}

/// A keep-alive HTTP/1.1 connection that sends the echo request as pre-encoded bytes and reads
/// each answer far enough to check it: status 200, a `Content-Length` body, and that body equal
/// to [`ANSWER`]. A general HTTP client (hyper's) cost as much CPU per request as the bare
/// server it drove, so on a shared machine it, not the server, could set the pace.
struct RawConnection {
    stream: TcpStream,
    request: Vec<u8>,
    buffer: Vec<u8>,
}

impl RawConnection {
    async fn open(port: u16) -> Result<Self, String> {
        let stream = TcpStream::connect(SocketAddr::from(([127, 0, 0, 1], port)))
            .await
            .map_err(|error| error.to_string())?;
        stream
            .set_nodelay(true)
            .map_err(|error| error.to_string())?;
        let request = format!(
            "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\ncontent-type: application/json\r\n\
             accept: application/json, text/event-stream\r\ncontent-length: {}\r\n\r\n{REQUEST}",
            REQUEST.len()
        );
        Ok(Self {
            stream,
            request: request.into_bytes(),
            buffer: Vec::with_capacity(4096),
        })
    }

    /// One echo call, answered with a success and the expected body.
    async fn echo(&mut self) -> Result<(), String> {
        use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
        self.stream
            .write_all(&self.request)
            .await
            .map_err(|error| error.to_string())?;
        self.buffer.clear();
        loop {
            if let Some((body_start, length)) = answer_length(&self.buffer)?
                && self.buffer.len() >= length
            {
                return check_answer(&self.buffer[..body_start], &self.buffer[body_start..length]);
            }
            if self.buffer.capacity() - self.buffer.len() < 1024 {
                self.buffer.reserve(4096);
            }
            let read = self
                .stream
                .read_buf(&mut self.buffer)
                .await
                .map_err(|error| error.to_string())?;
            if read == 0 {
                return Err("the server closed the connection".into());
            }
        }
    }
}

/// Where the answer's body starts and the whole answer's length, once its head is in `buffer`.
fn answer_length(buffer: &[u8]) -> Result<Option<(usize, usize)>, String> {
    let Some(head_end) = buffer.windows(4).position(|window| window == b"\r\n\r\n") else {
        return Ok(None);
    };
    let head = std::str::from_utf8(&buffer[..head_end]).map_err(|_| "answer head is not UTF-8")?;
    let length = head
        .split("\r\n")
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse::<usize>().ok())
                .flatten()
        })
        .ok_or("answer without a content-length")?;
    Ok(Some((head_end + 4, head_end + 4 + length)))
}

fn check_answer(head: &[u8], body: &[u8]) -> Result<(), String> {
    if !head.starts_with(b"HTTP/1.1 200 ") {
        let line = head.split(|&byte| byte == b'\r').next().unwrap_or_default();
        return Err(format!("server answered {}", String::from_utf8_lossy(line)));
    }
    if body != ANSWER.as_bytes() {
        return Err(format!("wrong answer: {}", String::from_utf8_lossy(body)));
    }
    Ok(())
}

fn report(concurrency: usize, measured: Duration, latencies: &mut [u32], total: u64) {
    latencies.sort_unstable();
    let percentile = |p: f64| -> u32 {
        if latencies.is_empty() {
            return 0;
        }
        let rank = ((latencies.len() as f64) * p).ceil() as usize;
        latencies[rank.clamp(1, latencies.len()) - 1]
    };
    let requests = latencies.len();
    println!(
        "{{\"concurrency\":{concurrency},\"requests\":{requests},\"total\":{total},\"rps\":{:.0},\"p50_us\":{},\"p99_us\":{}}}",
        requests as f64 / measured.as_secs_f64(),
        percentile(0.50),
        percentile(0.99),
    );
}

type Sender = hyper::client::conn::http1::SendRequest<Full<Bytes>>;

async fn connect(port: u16) -> Result<Sender, String> {
    let stream = TcpStream::connect(SocketAddr::from(([127, 0, 0, 1], port)))
        .await
        .map_err(|error| error.to_string())?;
    stream
        .set_nodelay(true)
        .map_err(|error| error.to_string())?;
    let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|error| error.to_string())?;
    tokio::spawn(connection);
    Ok(sender)
}

/// One POST; returns the status and the session header of the answer.
async fn post_once(
    sender: &mut Sender,
    port: u16,
    body: &'static str,
    session: Option<&str>,
) -> Result<(http::StatusCode, Option<String>), String> {
    let mut request = Request::post("/mcp")
        .header(header::HOST, format!("127.0.0.1:{port}"))
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::ACCEPT, "application/json, text/event-stream");
    if let Some(session) = session {
        request = request.header(bench_support::SESSION_HEADER, session);
    }
    let request = request
        .body(Full::new(Bytes::from_static(body.as_bytes())))
        .map_err(|error| error.to_string())?;
    let response = sender
        .send_request(request)
        .await
        .map_err(|error| error.to_string())?;
    let status = response.status();
    let session = response
        .headers()
        .get(bench_support::SESSION_HEADER)
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned);
    response
        .into_body()
        .collect()
        .await
        .map_err(|error| error.to_string())?;
    Ok((status, session))
}

const OPEN: &str = r#"{"jsonrpc":"2.0","id":1,"method":"open"}"#;

/// Opens `count` sessions over 16 connections and never closes them: they can only leave the
/// server by expiring.
fn open_sessions(port: &str, count: &str) -> Result<(), String> {
    let port: u16 = port.parse().map_err(|_| "port")?;
    let count: usize = count.parse().map_err(|_| "count")?;
    runtime(1)?.block_on(async move {
        let connections = 16;
        let mut openers = Vec::new();
        for index in 0..connections {
            let share = count / connections + usize::from(index < count % connections);
            openers.push(tokio::spawn(async move {
                let mut sender = connect(port).await?;
                let mut first = None;
                for _ in 0..share {
                    let (status, session) = post_once(&mut sender, port, OPEN, None).await?;
                    if !status.is_success() || session.is_none() {
                        return Err(format!("open answered {status}"));
                    }
                    first = first.or(session);
                }
                Ok::<_, String>(first)
            }));
        }
        let mut first = None;
        for opener in openers {
            let opened = opener.await.map_err(|error| error.to_string())??;
            first = first.or(opened);
        }
        println!("{}", first.ok_or("no session opened")?);
        Ok(())
    })
}

/// The status a call on `session` gets: 200 while it lives, 404 once it expired.
fn probe(port: &str, session: &str) -> Result<(), String> {
    let port: u16 = port.parse().map_err(|_| "port")?;
    let session = session.to_owned();
    runtime(1)?.block_on(async move {
        let mut sender = connect(port).await?;
        let (status, _) = post_once(&mut sender, port, REQUEST, Some(&session)).await?;
        println!("{}", status.as_u16());
        Ok(())
    })
}

/// Medians over rounds per (server kind, concurrency), and each kind's ratios to `bare` from
/// the same run: throughput (higher is better), p99 latency and server CPU time per request
/// (lower is better). Lines are `<kind> <server cpu ms> <load output>`; CPU per request is the
/// figure least disturbed by other work on a shared machine.
fn summarize(file: &str) -> Result<(), String> {
    use std::collections::BTreeMap;
    let text = std::fs::read_to_string(file).map_err(|error| error.to_string())?;
    let mut runs: BTreeMap<(u64, String), [Vec<f64>; 3]> = BTreeMap::new();
    for line in text.lines() {
        let mut fields = line.splitn(3, ' ');
        let (Some(kind), Some(cpu_ms), Some(json)) = (fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        let cpu_ms: f64 = cpu_ms.parse().map_err(|_| format!("cpu in {line}"))?;
        let value: serde_json::Value =
            serde_json::from_str(json).map_err(|error| format!("{error}: {line}"))?;
        let number = |key: &str| value[key].as_f64().ok_or(format!("no {key} in {line}"));
        let entry = runs
            .entry((number("concurrency")? as u64, kind.to_owned()))
            .or_default();
        entry[0].push(number("rps")?);
        entry[1].push(number("p99_us")?);
        entry[2].push(cpu_ms * 1000.0 / number("total")?);
    }
    let median = |values: &[f64]| -> f64 {
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        sorted.get(sorted.len() / 2).copied().unwrap_or(f64::NAN)
    };
    println!(
        "| concurrency | server | rounds | req/s | p99 µs | server CPU µs/req | \
         throughput ÷ bare | p99 ÷ bare | bare CPU ÷ server CPU |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for ((concurrency, kind), [rps, p99, cpu]) in &runs {
        let Some([bare_rps, bare_p99, bare_cpu]) = runs.get(&(*concurrency, "bare".to_owned()))
        else {
            continue;
        };
        println!(
            "| {concurrency} | {kind} | {} | {:.0} | {:.0} | {:.1} | {:.2} | {:.2} | {:.2} |",
            rps.len(),
            median(rps),
            median(p99),
            median(cpu),
            median(rps) / median(bare_rps),
            median(p99) / median(bare_p99),
            median(bare_cpu) / median(cpu),
        );
    }
    Ok(())
}
