//! The closed-loop MCP load generator: `concurrency` keep-alive connections, each sending the
//! next `tools/call` as soon as the previous answer is read and checked (JSON or SSE, the id
//! and the echoed text must match). In session mode each connection first opens its own
//! session. One warm-up second is discarded; the server's CPU time is read from
//! `/proc/<pid>/stat` at the start and end of the measured window.
//!
//! It speaks HTTP/1.1 itself over plain TCP streams on a single-threaded runtime, writing each
//! request into a reused buffer and reading the answer into another, so its own cost per call
//! (two syscalls and one small JSON parse) stays well below the servers' and the ratios it
//! reports are the servers', not the generator's.

use std::borrow::Cow;
use std::io::Write as _;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use serde::Deserialize;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

use crate::Mode;

/// The revision session mode negotiates; stateless mode speaks 2026-07-28.
const SESSION_REVISION: &str = "2025-11-25";
const STATELESS_REVISION: &str = "2026-07-28";

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"mcp-echo-load","version":"1.0.0"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

/// The `_meta` a stateless request carries in place of a session.
const STATELESS_META: &str = r#","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"mcp-echo-load","version":"1.0.0"}}"#;

/// The generator's runtime: one thread, so its connections never hand work across threads.
fn load_runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(io_error)
}

/// The kernel's fixed unit for the CPU times in `/proc/<pid>/stat` (USER_HZ).
const TICKS_PER_SECOND: u64 = 100;

/// The environment variable naming how many bytes of padding each echoed message carries (none
/// when unset): `MESSAGE_BYTES=102400` measures large payloads.
const MESSAGE_BYTES: &str = "MESSAGE_BYTES";

/// The padding every echoed message carries after its `hello <worker>-<id>`, from
/// [`MESSAGE_BYTES`]; plain ASCII, so no escape changes its length on the wire.
fn padding() -> String {
    let bytes = std::env::var(MESSAGE_BYTES)
        .ok()
        .and_then(|bytes| bytes.parse::<usize>().ok())
        .unwrap_or(0);
    "x".repeat(bytes)
}

/// A response head larger than this is not an MCP server's.
const MAX_HEAD: usize = 16 * 1024;

fn parse<T: std::str::FromStr>(text: &str, what: &str) -> Result<T, String> {
    text.parse().map_err(|_| format!("{what}: {text}"))
}

fn io_error(error: std::io::Error) -> String {
    error.to_string()
}

/// The status line and the headers of an answer the load generator reads.
#[derive(Debug, Default)]
struct Head {
    status: u16,
    is_sse: bool,
    session: Option<String>,
}

/// How an answer's body is delimited.
enum Framing {
    Length(usize),
    Chunked,
}

/// One keep-alive connection speaking MCP to `/mcp`, with the session it opened, if any.
struct Connection {
    stream: TcpStream,
    /// The header lines every request on this connection carries (host, types, mode's own).
    fixed_headers: String,
    session: Option<String>,
    /// The request being written, reused.
    out: Vec<u8>,
    /// The JSON body of the next request, reused.
    json: Vec<u8>,
    /// The text the next echo must carry back, reused.
    message: String,
    /// What every message carries after its distinct prefix (see [`MESSAGE_BYTES`]).
    padding: String,
    /// Bytes read and not yet consumed.
    input: Vec<u8>,
    /// The answer's body (de-chunked), reused.
    body: Vec<u8>,
}

impl Connection {
    async fn open(port: u16) -> Result<Self, String> {
        let stream = TcpStream::connect(SocketAddr::from(([127, 0, 0, 1], port)))
            .await
            .map_err(io_error)?;
        stream.set_nodelay(true).map_err(io_error)?;
        let mut connection = Self {
            stream,
            fixed_headers: String::new(),
            session: None,
            out: Vec::with_capacity(1024),
            json: Vec::with_capacity(512),
            message: String::with_capacity(32),
            padding: padding(),
            input: Vec::with_capacity(8192),
            body: Vec::with_capacity(4096),
        };
        connection.set_headers(port, "");
        Ok(connection)
    }

    fn set_headers(&mut self, port: u16, own: &str) {
        self.fixed_headers = format!(
            "host: 127.0.0.1:{port}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\n{own}"
        );
    }

    fn port(&self) -> Result<u16, String> {
        self.stream
            .peer_addr()
            .map(|address| address.port())
            .map_err(io_error)
    }

    /// POSTs `body` with the connection's headers plus `extra` (whole header lines); the
    /// answer's body is left in `self.body`.
    async fn post(&mut self, body: &[u8], extra: &str) -> Result<Head, String> {
        self.json.clear();
        self.json.extend_from_slice(body);
        self.post_json(extra).await
    }

    /// POSTs what `self.json` holds, as [`Self::post`] does.
    async fn post_json(&mut self, extra: &str) -> Result<Head, String> {
        self.out.clear();
        write!(
            self.out,
            "POST /mcp HTTP/1.1\r\n{}{extra}content-length: {}\r\n\r\n",
            self.fixed_headers,
            self.json.len()
        )
        .map_err(io_error)?;
        self.out.extend_from_slice(&self.json);
        self.stream.write_all(&self.out).await.map_err(io_error)?;
        self.read_answer().await
    }

    async fn fill(&mut self) -> Result<(), String> {
        self.input.reserve(8192);
        let read = self
            .stream
            .read_buf(&mut self.input)
            .await
            .map_err(io_error)?;
        if read == 0 {
            return Err("the server closed the connection".to_owned());
        }
        Ok(())
    }

    async fn read_answer(&mut self) -> Result<Head, String> {
        let head_end = loop {
            if let Some(end) = find(&self.input, b"\r\n\r\n") {
                break end + 4;
            }
            if self.input.len() > MAX_HEAD {
                return Err("response head too large".to_owned());
            }
            self.fill().await?;
        };
        let (head, framing) = parse_head(&self.input[..head_end])?;
        self.input.drain(..head_end);
        self.body.clear();
        match framing {
            Framing::Length(length) => {
                while self.input.len() < length {
                    self.fill().await?;
                }
                self.body.extend_from_slice(&self.input[..length]);
                self.input.drain(..length);
            }
            Framing::Chunked => self.read_chunks().await?,
        }
        Ok(head)
    }

    /// Reads a chunked body to its last chunk (an SSE answer ends when its stream does).
    async fn read_chunks(&mut self) -> Result<(), String> {
        loop {
            let Some(line_end) = find(&self.input, b"\r\n") else {
                self.fill().await?;
                continue;
            };
            let size_text = std::str::from_utf8(&self.input[..line_end])
                .map_err(|_| "unreadable chunk size")?;
            let size_text = size_text.split(';').next().unwrap_or_default().trim();
            let size = usize::from_str_radix(size_text, 16).map_err(|_| "unreadable chunk size")?;
            // The chunk's data and its CRLF; the last chunk is followed by an empty trailer.
            let needed = line_end + 2 + size + 2;
            while self.input.len() < needed {
                self.fill().await?;
            }
            self.body
                .extend_from_slice(&self.input[line_end + 2..line_end + 2 + size]);
            self.input.drain(..needed);
            if size == 0 {
                return Ok(());
            }
        }
    }

    /// `initialize` then `notifications/initialized`; the connection then speaks in that
    /// session.
    async fn initialize(&mut self) -> Result<String, String> {
        // A new session: the headers of one this connection may already speak in go.
        let port = self.port()?;
        self.set_headers(port, "");
        let answered = self.post(INITIALIZE.as_bytes(), "").await?;
        let session = answered
            .session
            .clone()
            .ok_or_else(|| format!("initialize answered {} without a session", answered.status))?;
        if answered.status != 200 || answer_json(&self.body, answered.is_sse, 0).is_none() {
            return Err(format!("initialize answered {}", answered.status));
        }
        let headers =
            format!("mcp-session-id: {session}\r\nmcp-protocol-version: {SESSION_REVISION}\r\n");
        let notified = self.post(INITIALIZED.as_bytes(), &headers).await?;
        if notified.status != 202 {
            return Err(format!(
                "notifications/initialized answered {}",
                notified.status
            ));
        }
        self.set_headers(port, &headers);
        self.session = Some(session.clone());
        Ok(session)
    }

    /// Prepares stateless calls: the headers a 2026-07-28 `tools/call` of `echo` carries.
    fn stateless(&mut self) -> Result<(), String> {
        let port = self.port()?;
        self.set_headers(
            port,
            &format!(
                "mcp-protocol-version: {STATELESS_REVISION}\r\nmcp-method: tools/call\r\nmcp-name: echo\r\n"
            ),
        );
        Ok(())
    }

    /// A connection ready for `mode`'s calls: in its own session, or with the stateless
    /// headers.
    async fn ready(port: u16, mode: Mode) -> Result<Self, String> {
        let mut connection = Self::open(port).await?;
        match mode {
            Mode::Session => connection.initialize().await.map(drop)?,
            Mode::Stateless => connection.stateless()?,
        }
        Ok(connection)
    }

    /// One `tools/call` of `echo` with message `hello <worker>-<id>`; `Ok(false)` when the
    /// answer is not the echo it should be.
    async fn call_echo(&mut self, worker: u64, id: u64) -> Result<bool, String> {
        use std::fmt::Write as _;
        let meta = if self.session.is_some() {
            ""
        } else {
            STATELESS_META
        };
        self.message.clear();
        write!(self.message, "hello {worker}-{id}").map_err(|error| error.to_string())?;
        self.message.push_str(&self.padding);
        self.json.clear();
        write!(
            self.json,
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{"message":"{}"}}{meta}}}}}"#,
            self.message
        )
        .map_err(io_error)?;
        let answered = self.post_json("").await?;
        Ok(answered.status == 200 && echoes(&self.body, answered.is_sse, id, &self.message))
    }
}

/// Where `needle` first occurs in `haystack`.
fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

/// The status, the headers the generator reads, and how the body is delimited.
fn parse_head(head: &[u8]) -> Result<(Head, Framing), String> {
    let text = std::str::from_utf8(head).map_err(|_| "unreadable response head")?;
    let mut lines = text.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    let status = status_line
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| format!("unreadable status line {status_line:?}"))?;
    let mut parsed = Head {
        status,
        ..Head::default()
    };
    let mut framing = None;
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        if name.eq_ignore_ascii_case("content-length") {
            framing = Some(Framing::Length(parse(value, "content-length")?));
        } else if name.eq_ignore_ascii_case("transfer-encoding")
            && value.eq_ignore_ascii_case("chunked")
        {
            framing = Some(Framing::Chunked);
        } else if name.eq_ignore_ascii_case("content-type") {
            parsed.is_sse = value.starts_with("text/event-stream");
        } else if name.eq_ignore_ascii_case("mcp-session-id") {
            parsed.session = Some(value.to_owned());
        }
    }
    // A keep-alive answer without a length or chunks has no body (e.g. 202).
    Ok((parsed, framing.unwrap_or(Framing::Length(0))))
}

/// The parts of a JSON-RPC answer the check reads.
#[derive(Deserialize)]
struct Answer<'a> {
    id: Option<u64>,
    #[serde(borrow)]
    result: Option<CallResult<'a>>,
}

/// Which request a JSON-RPC message answers.
#[derive(Deserialize)]
struct Answering {
    id: Option<u64>,
}

/// Exactly one content item: any other count fails to read, so the answer is wrong.
#[derive(Deserialize)]
struct CallResult<'a> {
    #[serde(borrow)]
    content: [ContentItem<'a>; 1],
    #[serde(rename = "isError", default)]
    is_error: bool,
}

#[derive(Deserialize)]
struct ContentItem<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(borrow)]
    text: Option<Cow<'a, str>>,
}

/// The text of the JSON-RPC message answering `id`: the body itself, or the `data` of the SSE
/// event carrying it (priming events and other messages on the stream are skipped).
fn answer_json(body: &[u8], is_sse: bool, id: u64) -> Option<&str> {
    let body = std::str::from_utf8(body).ok()?;
    if !is_sse {
        return Some(body);
    }
    sse_data(body).find(|data| {
        serde_json::from_str::<Answering>(data).is_ok_and(|answer| answer.id == Some(id))
    })
}

/// The `data` of each event of a stream whose events carry one line of data each (as both
/// servers write JSON-RPC messages); events without data are skipped.
fn sse_data(stream: &str) -> impl Iterator<Item = &str> {
    stream.lines().filter_map(|line| {
        let data = line.strip_prefix("data:")?;
        let data = data.strip_prefix(' ').unwrap_or(data);
        (!data.is_empty()).then_some(data)
    })
}

/// Whether `body` answers `id` with exactly one text content holding `message`.
fn echoes(body: &[u8], is_sse: bool, id: u64, message: &str) -> bool {
    let Some(json) = answer_json(body, is_sse, id) else {
        return false;
    };
    let Ok(answer) = serde_json::from_str::<Answer<'_>>(json) else {
        return false;
    };
    let Some(result) = answer.result else {
        return false;
    };
    answer.id == Some(id)
        && !result.is_error
        && matches!(&result.content, [item] if item.kind == "text" && item.text.as_deref() == Some(message))
}

/// What one connection measured.
#[derive(Default)]
struct Tally {
    latencies_us: Vec<u32>,
    errors: u64,
}

async fn drive(
    port: u16,
    mode: Mode,
    worker: u64,
    measure_from: Instant,
    stop_at: Instant,
) -> Result<Tally, String> {
    let mut connection = Connection::ready(port, mode).await?;
    let mut tally = Tally {
        latencies_us: Vec::with_capacity(1 << 16),
        errors: 0,
    };
    for id in 1_u64.. {
        let sent = Instant::now();
        if sent >= stop_at {
            break;
        }
        let correct = connection.call_echo(worker, id).await?;
        if sent >= measure_from {
            if !correct {
                tally.errors += 1;
            }
            let micros = sent.elapsed().as_micros();
            tally
                .latencies_us
                .push(u32::try_from(micros).unwrap_or(u32::MAX));
        }
    }
    Ok(tally)
}

/// The CPU time `pid` has used so far (every thread), in microseconds.
#[derive(Debug, Clone, Copy)]
struct CpuTime {
    user_us: u64,
    system_us: u64,
}

impl CpuTime {
    fn of(pid: u32) -> Result<Self, String> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map_err(|error| format!("/proc/{pid}/stat: {error}"))?;
        // Fields after the parenthesised command name, which may itself hold spaces.
        let after_name = stat
            .rsplit_once(')')
            .map(|(_, rest)| rest)
            .ok_or("unreadable stat")?;
        let fields: Vec<&str> = after_name.split_whitespace().collect();
        // utime and stime are fields 14 and 15 of the whole line: 12 and 13 after the name.
        let micros = |index: usize| -> Result<u64, String> {
            let ticks: u64 = fields
                .get(index)
                .ok_or("short stat")?
                .parse()
                .map_err(|_| "unreadable stat field")?;
            Ok(ticks * 1_000_000 / TICKS_PER_SECOND)
        };
        Ok(Self {
            user_us: micros(11)?,
            system_us: micros(12)?,
        })
    }

    fn since(self, earlier: Self) -> Self {
        Self {
            user_us: self.user_us.saturating_sub(earlier.user_us),
            system_us: self.system_us.saturating_sub(earlier.system_us),
        }
    }
}

/// `load <port> <mode> <concurrency> <seconds> <server-pid>`: prints one JSON line.
pub fn run(
    port: &str,
    mode: &str,
    concurrency: &str,
    seconds: &str,
    pid: &str,
) -> Result<(), String> {
    let port: u16 = parse(port, "port")?;
    let mode = Mode::parse(mode)?;
    let concurrency: u64 = parse(concurrency, "concurrency")?;
    let measured = Duration::from_secs(parse(seconds, "seconds")?);
    let pid: u32 = parse(pid, "pid")?;
    load_runtime()?.block_on(async move {
        let start = Instant::now();
        let measure_from = start + Duration::from_secs(1);
        let stop_at = measure_from + measured;
        let workers: Vec<_> = (0..concurrency)
            .map(|worker| tokio::spawn(drive(port, mode, worker, measure_from, stop_at)))
            .collect();
        tokio::time::sleep_until(measure_from.into()).await;
        let cpu_before = CpuTime::of(pid)?;
        tokio::time::sleep_until(stop_at.into()).await;
        let cpu_used = CpuTime::of(pid)?.since(cpu_before);
        let mut latencies = Vec::new();
        let mut errors = 0;
        for worker in workers {
            let mut tally = worker.await.map_err(|error| error.to_string())??;
            latencies.append(&mut tally.latencies_us);
            errors += tally.errors;
        }
        report(concurrency, measured, &mut latencies, errors, cpu_used);
        Ok(())
    })
}

fn report(concurrency: u64, measured: Duration, latencies: &mut [u32], errors: u64, cpu: CpuTime) {
    latencies.sort_unstable();
    let percentile = |p: f64| -> u32 {
        if latencies.is_empty() {
            return 0;
        }
        let rank = ((latencies.len() as f64) * p).ceil() as usize;
        latencies[rank.clamp(1, latencies.len()) - 1]
    };
    let requests = latencies.len();
    let per_request = |micros: u64| micros as f64 / requests.max(1) as f64;
    let (user, system) = (per_request(cpu.user_us), per_request(cpu.system_us));
    let cpu_per_request = user + system;
    println!(
        "{{\"concurrency\":{concurrency},\"requests\":{requests},\"errors\":{errors},\"rps\":{:.0},\"p50_us\":{},\"p99_us\":{},\"cpu_us_per_req\":{cpu_per_request:.1},\"user_us_per_req\":{user:.1},\"sys_us_per_req\":{system:.1}}}",
        requests as f64 / measured.as_secs_f64(),
        percentile(0.50),
        percentile(0.99),
    );
}

/// `calls <port> <mode> <concurrency> <count>`: exactly `count` calls of `echo` (shared out
/// over the connections), for instruction counts under callgrind; prints the wrong answers.
pub fn fixed_calls(port: &str, mode: &str, concurrency: &str, count: &str) -> Result<(), String> {
    let port: u16 = parse(port, "port")?;
    let mode = Mode::parse(mode)?;
    let concurrency: u64 = parse(concurrency, "concurrency")?;
    let count: u64 = parse(count, "count")?;
    load_runtime()?.block_on(async move {
        let workers: Vec<_> = (0..concurrency)
            .map(|worker| {
                let share = count / concurrency + u64::from(worker < count % concurrency);
                tokio::spawn(async move {
                    let mut connection = Connection::ready(port, mode).await?;
                    let mut wrong = 0_u64;
                    for id in 1..=share {
                        wrong += u64::from(!connection.call_echo(worker, id).await?);
                    }
                    Ok::<_, String>(wrong)
                })
            })
            .collect();
        let mut wrong = 0;
        for worker in workers {
            wrong += worker.await.map_err(|error| error.to_string())??;
        }
        println!("{wrong}");
        Ok(())
    })
}

/// `open <port> <count>`: initializes `count` sessions over 16 connections and leaves them
/// idle; prints one of their ids.
pub fn open_sessions(port: &str, count: &str) -> Result<(), String> {
    let port: u16 = parse(port, "port")?;
    let count: usize = parse(count, "count")?;
    load_runtime()?.block_on(async move {
        let connections = 16;
        let openers: Vec<_> = (0..connections)
            .map(|index| {
                let share = count / connections + usize::from(index < count % connections);
                tokio::spawn(async move {
                    let mut connection = Connection::open(port).await?;
                    let mut first = None;
                    for _ in 0..share {
                        let session = connection.initialize().await?;
                        first = first.or(Some(session));
                    }
                    Ok::<_, String>(first)
                })
            })
            .collect();
        let mut first = None;
        for opener in openers {
            let opened = opener.await.map_err(|error| error.to_string())??;
            first = first.or(opened);
        }
        let first = first.ok_or("no session opened")?;
        println!("{first}");
        Ok(())
    })
}
