//! The MCP benchmark against rmcp: one binary that is either our server (protocols-mcp serving
//! one `echo` tool) or the closed-loop MCP load generator that drives it and the rmcp
//! comparator (`bench/rmcp-echo`) alike. `scripts/bench-mcp.sh` runs servers and generator as
//! separate processes pinned to separate cores and reports the ratios; run directly by
//! `cargo bench` it only prints how to.
//!
//! ```text
//! mcp_echo serve <stateless|session> <port-file> [boxed]
//! mcp_echo serve bare <port-file>        # the baseline: a bare axum echo of the same calls
//! mcp_echo load <port> <stateless|session> <concurrency> <seconds> <server-pid>
//! mcp_echo calls <port> <stateless|session> <concurrency> <count>   # for callgrind
//! mcp_echo open <port> <sessions>        # initializes that many sessions and leaves them idle
//! mcp_echo summarize <results-file>      # lines `<server> <mode> <load output>`: medians, ratios
//! ```
//!
//! Modes: `stateless` sends 2026-07-28 requests (per-request `_meta` version, `Mcp-Method`,
//! `Mcp-Name`) answered as JSON; `session` opens one session per connection (`initialize`, then
//! `notifications/initialized`) on 2025-11-25 and gets every answer as an SSE stream.
//!
//! `MESSAGE_BYTES=<n>` pads every echoed message with `n` bytes (the large-payload measurement:
//! `scripts/bench-mcp.sh large`); `serve bare` is what those figures are held against.
//!
//! `serve … boxed` is an experiment, not a comparison: the same server with each request's
//! handler future boxed, to show what moving that large future around costs.

use std::path::PathBuf;
use std::process::ExitCode;

mod bare;
mod boxed;
mod echo_tool;
mod load;
mod summary;

use echo_tool::echo_server;
use protocols_runtime::RequestHandler;
use protocols_runtime::hardening::{HardeningConfig, RateLimit};
use protocols_runtime::http::{HttpConfig, ResponseMode};
use protocols_runtime::server::Server;
use protocols_runtime::session::SessionLimits;
use tokio::net::TcpListener;

/// The name the bench's server gives in its initialize answer.
const BENCH_SERVER_NAME: &str = "mcp-echo-bench";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let words: Vec<&str> = args.iter().map(String::as_str).collect();
    let outcome = match words.as_slice() {
        ["serve", "bare", port_file] => bare::serve(port_file),
        ["serve", mode, port_file] => Mode::parse(mode)
            .and_then(|mode| serve(echo_server(BENCH_SERVER_NAME)?, mode, port_file)),
        ["serve", mode, port_file, "boxed"] => Mode::parse(mode).and_then(|mode| {
            serve(
                boxed::BoxedHandle(echo_server(BENCH_SERVER_NAME)?),
                mode,
                port_file,
            )
        }),
        ["load", port, mode, concurrency, seconds, pid] => {
            load::run(port, mode, concurrency, seconds, pid)
        }
        ["calls", port, mode, concurrency, count] => {
            load::fixed_calls(port, mode, concurrency, count)
        }
        ["open", port, count] => load::open_sessions(port, count),
        ["summarize", file] => summary::summarize(file),
        _ => {
            eprintln!("run scripts/bench-mcp.sh; usage in benches/mcp_echo.rs");
            Ok(())
        }
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("mcp_echo: {message}");
            ExitCode::FAILURE
        }
    }
}

/// How requests are served and sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// 2026-07-28 requests without a session, answered as JSON.
    Stateless,
    /// 2025-11-25 requests in a session, answered as SSE streams.
    Session,
}

impl Mode {
    pub fn parse(word: &str) -> Result<Self, String> {
        match word {
            "stateless" => Ok(Self::Stateless),
            "session" => Ok(Self::Session),
            other => Err(format!("unknown mode {other}; use stateless or session")),
        }
    }
}

/// A one-worker runtime: each process is pinned to one core.
pub fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .map_err(|error| error.to_string())
}

fn http_config(mode: Mode) -> HttpConfig {
    let response_mode = match mode {
        Mode::Stateless => ResponseMode::Json,
        Mode::Session => ResponseMode::Sse,
    };
    HttpConfig::default()
        .response_mode(response_mode)
        // Room for the idle-session measurement's 10,000 sessions plus its warm-up.
        .sessions(SessionLimits::default().max_live(100_000))
}

/// Serves the echo tool at `/mcp` with the default hardening, except a rate limit that is
/// charged on every request but never refuses one at benchmark load.
fn serve(handler: impl RequestHandler, mode: Mode, port_file: &str) -> Result<(), String> {
    let port_file = PathBuf::from(port_file);
    runtime()?.block_on(async move {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(|error| error.to_string())?;
        let address = listener.local_addr().map_err(|error| error.to_string())?;
        let hardening = HardeningConfig::new()
            .bind_address(address)
            .rate_limit(Some(RateLimit::new(1e9, u32::MAX)));
        let server = Server::builder()
            .hardening(hardening)
            .streamable_http("/mcp", handler, http_config(mode))
            .build()
            .map_err(|error| error.to_string())?;
        std::fs::write(&port_file, address.port().to_string())
            .map_err(|error| error.to_string())?;
        server
            .serve_until(listener, std::future::pending())
            .await
            .map_err(|error| error.to_string())
    })
}
