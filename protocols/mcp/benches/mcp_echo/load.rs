//! The closed-loop MCP load generator: `concurrency` keep-alive connections, each sending the
//! next `tools/call` as soon as the previous answer is read and checked (JSON or SSE, the id
//! and the echoed text must match). In session mode each connection first opens its own
//! session. One warm-up second is discarded; the server's CPU time is read from
//! `/proc/<pid>/stat` at the start and end of the measured window.

use std::borrow::Cow;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{HeaderName, HeaderValue, Request, StatusCode, header};
use http_body_util::{BodyExt as _, Full};
use hyper_util::rt::TokioIo;
use serde::Deserialize;
use tokio::net::TcpStream;

use crate::Mode;

const SESSION_HEADER: HeaderName = HeaderName::from_static("mcp-session-id");
const VERSION_HEADER: HeaderName = HeaderName::from_static("mcp-protocol-version");
const METHOD_HEADER: HeaderName = HeaderName::from_static("mcp-method");
const NAME_HEADER: HeaderName = HeaderName::from_static("mcp-name");

/// The revision session mode negotiates; stateless mode speaks 2026-07-28.
const SESSION_REVISION: &str = "2025-11-25";
const STATELESS_REVISION: &str = "2026-07-28";

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"mcp-echo-load","version":"1.0.0"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

/// The `_meta` a stateless request carries in place of a session.
const STATELESS_META: &str = r#","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"mcp-echo-load","version":"1.0.0"}}"#;

/// The kernel's fixed unit for the CPU times in `/proc/<pid>/stat` (USER_HZ).
const TICKS_PER_SECOND: u64 = 100;

type Sender = hyper::client::conn::http1::SendRequest<Full<Bytes>>;

fn parse<T: std::str::FromStr>(text: &str, what: &str) -> Result<T, String> {
    text.parse().map_err(|_| format!("{what}: {text}"))
}

/// One keep-alive connection speaking MCP to `/mcp`, with the session it opened, if any.
struct Connection {
    sender: Sender,
    host: HeaderValue,
    session: Option<HeaderValue>,
}

impl Connection {
    async fn open(port: u16) -> Result<Self, String> {
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
        let host = HeaderValue::from_str(&format!("127.0.0.1:{port}"))
            .map_err(|error| error.to_string())?;
        Ok(Self {
            sender,
            host,
            session: None,
        })
    }

    /// POSTs `body` with the headers every MCP request carries plus `extra`; returns the
    /// status, whether the answer is an SSE stream, the session header and the whole body.
    async fn post(
        &mut self,
        body: Bytes,
        extra: &[(HeaderName, HeaderValue)],
    ) -> Result<Posted, String> {
        let mut request = Request::post("/mcp")
            .header(header::HOST, self.host.clone())
            .header(header::CONTENT_TYPE, "application/json")
            .header(header::ACCEPT, "application/json, text/event-stream");
        for (name, value) in extra {
            request = request.header(name, value);
        }
        let request = request
            .body(Full::new(body))
            .map_err(|error| error.to_string())?;
        let response = self
            .sender
            .send_request(request)
            .await
            .map_err(|error| error.to_string())?;
        let status = response.status();
        let is_sse = response
            .headers()
            .get(header::CONTENT_TYPE)
            .is_some_and(|value| value.as_bytes().starts_with(b"text/event-stream"));
        let session = response.headers().get(SESSION_HEADER).cloned();
        let body = response
            .into_body()
            .collect()
            .await
            .map_err(|error| error.to_string())?
            .to_bytes();
        Ok(Posted {
            status,
            is_sse,
            session,
            body,
        })
    }

    /// `initialize` then `notifications/initialized`; the connection then speaks in that
    /// session.
    async fn initialize(&mut self) -> Result<HeaderValue, String> {
        let answered = self
            .post(Bytes::from_static(INITIALIZE.as_bytes()), &[])
            .await?;
        let session = answered
            .session
            .clone()
            .ok_or_else(|| format!("initialize answered {} without a session", answered.status))?;
        if !answered.status.is_success() || answer_json(&answered, 0).is_none() {
            return Err(format!("initialize answered {}", answered.status));
        }
        let headers = [
            (SESSION_HEADER, session.clone()),
            (VERSION_HEADER, HeaderValue::from_static(SESSION_REVISION)),
        ];
        let notified = self
            .post(Bytes::from_static(INITIALIZED.as_bytes()), &headers)
            .await?;
        if notified.status != StatusCode::ACCEPTED {
            return Err(format!(
                "notifications/initialized answered {}",
                notified.status
            ));
        }
        self.session = Some(session.clone());
        Ok(session)
    }

    /// One `tools/call` of `echo`; `Ok(false)` when the answer is not the echo it should be.
    async fn call_echo(&mut self, id: u64, message: &str) -> Result<bool, String> {
        let (meta, headers) = match &self.session {
            Some(session) => (
                "",
                vec![
                    (SESSION_HEADER, session.clone()),
                    (VERSION_HEADER, HeaderValue::from_static(SESSION_REVISION)),
                ],
            ),
            None => (
                STATELESS_META,
                vec![
                    (VERSION_HEADER, HeaderValue::from_static(STATELESS_REVISION)),
                    (METHOD_HEADER, HeaderValue::from_static("tools/call")),
                    (NAME_HEADER, HeaderValue::from_static("echo")),
                ],
            ),
        };
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{"message":"{message}"}}{meta}}}}}"#
        );
        let answered = self.post(Bytes::from(body), &headers).await?;
        Ok(answered.status == StatusCode::OK && echoes(&answered, id, message))
    }
}

struct Posted {
    status: StatusCode,
    is_sse: bool,
    session: Option<HeaderValue>,
    body: Bytes,
}

/// The parts of a JSON-RPC answer the check reads.
#[derive(Deserialize)]
struct Answer<'a> {
    id: Option<u64>,
    #[serde(borrow)]
    result: Option<CallResult<'a>>,
}

#[derive(Deserialize)]
struct CallResult<'a> {
    #[serde(borrow, default)]
    content: Vec<ContentItem<'a>>,
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
fn answer_json(posted: &Posted, id: u64) -> Option<&str> {
    let body = std::str::from_utf8(&posted.body).ok()?;
    if !posted.is_sse {
        return Some(body);
    }
    sse_data(body).find(|data| {
        serde_json::from_str::<Answer<'_>>(data).is_ok_and(|answer| answer.id == Some(id))
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

/// Whether `posted` answers `id` with exactly one text content holding `message`.
fn echoes(posted: &Posted, id: u64, message: &str) -> bool {
    let Some(json) = answer_json(posted, id) else {
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
        && matches!(result.content.as_slice(), [item] if item.kind == "text" && item.text.as_deref() == Some(message))
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
    worker: usize,
    measure_from: Instant,
    stop_at: Instant,
) -> Result<Tally, String> {
    let mut connection = Connection::open(port).await?;
    if mode == Mode::Session {
        connection.initialize().await?;
    }
    let mut tally = Tally {
        latencies_us: Vec::with_capacity(1 << 16),
        errors: 0,
    };
    for id in 1_u64.. {
        let sent = Instant::now();
        if sent >= stop_at {
            break;
        }
        let message = format!("hello {worker}-{id}");
        let correct = connection.call_echo(id, &message).await?;
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
    let concurrency: usize = parse(concurrency, "concurrency")?;
    let measured = Duration::from_secs(parse(seconds, "seconds")?);
    let pid: u32 = parse(pid, "pid")?;
    crate::runtime()?.block_on(async move {
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

fn report(
    concurrency: usize,
    measured: Duration,
    latencies: &mut [u32],
    errors: u64,
    cpu: CpuTime,
) {
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
    crate::runtime()?.block_on(async move {
        let workers: Vec<_> = (0..concurrency)
            .map(|worker| {
                let share = count / concurrency + u64::from(worker < count % concurrency);
                tokio::spawn(async move {
                    let mut connection = Connection::open(port).await?;
                    if mode == Mode::Session {
                        connection.initialize().await?;
                    }
                    let mut wrong = 0_u64;
                    for id in 1..=share {
                        let message = format!("hello {worker}-{id}");
                        wrong += u64::from(!connection.call_echo(id, &message).await?);
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
    crate::runtime()?.block_on(async move {
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
        println!("{}", first.to_str().map_err(|error| error.to_string())?);
        Ok(())
    })
}
