//! Memory per idle MCP session, counted rather than guessed: the echo server of the MCP
//! benchmark under a counting global allocator, driven in-process (requests go straight into
//! the router, so no socket or client buffer is counted). It opens `SESSIONS` sessions the way
//! a client does (`initialize` answered as an SSE stream, then `notifications/initialized`),
//! reports the live heap each one holds, lets them all expire on a hand-moved clock, and
//! reports what is left against the baseline; twice, so a second cycle shows nothing builds
//! up. One JSON line per cycle:
//!
//! ```text
//! cargo bench -p protocols-mcp --bench mcp_session_memory [-- SESSIONS]   # 10,000 by default
//! ```

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use http::{HeaderValue, Request, StatusCode, header};
use http_body_util::BodyExt as _;
use protocols_runtime::http::{HttpConfig, ResponseMode, StreamableHttp};
use protocols_runtime::session::{Clock, ManualClock, SessionLimits, SessionStore};
use tower::ServiceExt as _;

#[path = "../../../runtime/benches/counting_allocator/mod.rs"]
mod counting_allocator;

#[path = "mcp_echo/echo_tool.rs"]
mod echo_tool;

use counting_allocator::CountingAllocator;
use echo_tool::echo_server;

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

const DEFAULT_SESSIONS: usize = 10_000;
/// Sessions opened and expired before the baseline, so lazily built tables and the runtime's
/// own buffers are already there.
const WARM_UP_SESSIONS: usize = 100;
const IDLE: Duration = Duration::from_secs(60);

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"roots":{"listChanged":true},"sampling":{}},"clientInfo":{"name":"mcp-memory-bench","version":"1.0.0"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

/// The name the bench's server gives in its initialize answer.
const BENCH_SERVER_NAME: &str = "mcp-memory-bench";

fn main() -> ExitCode {
    // `cargo bench` passes `--bench`; the only argument of ours is a number.
    let sessions = std::env::args()
        .skip(1)
        .find_map(|word| word.parse().ok())
        .unwrap_or(DEFAULT_SESSIONS);
    match measure(sessions) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("mcp_session_memory: {message}");
            ExitCode::FAILURE
        }
    }
}

/// The transport under test, its session store and the clock its sessions expire by.
struct Served {
    app: Router,
    store: Arc<dyn SessionStore<protocols_mcp::McpSession>>,
    clock: Arc<ManualClock>,
}

fn served() -> Result<Served, String> {
    let clock = Arc::new(ManualClock::new());
    let config = HttpConfig::default()
        .response_mode(ResponseMode::Sse)
        .sessions(
            SessionLimits::default()
                .idle(IDLE)
                .absolute(Duration::from_secs(24 * 60 * 60))
                .max_live(1_000_000),
        )
        .reap_every(Duration::from_millis(5))
        .clock(Arc::clone(&clock) as Arc<dyn Clock>);
    let transport = StreamableHttp::new(echo_server(BENCH_SERVER_NAME)?, config);
    let store = transport.store();
    Ok(Served {
        app: transport.into_routes("/mcp"),
        store,
        clock,
    })
}

fn measure(sessions: usize) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .map_err(|error| error.to_string())?;
    runtime.block_on(async move {
        let served = served()?;
        open_sessions(&served.app, WARM_UP_SESSIONS).await?;
        expire_all(&served).await?;
        let baseline = counting_allocator::live_bytes();
        for cycle in 1..=2 {
            open_sessions(&served.app, sessions).await?;
            let opened = counting_allocator::live_bytes();
            expire_all(&served).await?;
            let expired = counting_allocator::live_bytes();
            let per_session = (opened - baseline) / isize::try_from(sessions).unwrap_or(1);
            println!(
                "{{\"cycle\":{cycle},\"sessions\":{sessions},\"baseline_bytes\":{baseline},\"opened_bytes\":{opened},\"bytes_per_session\":{per_session},\"after_expiry_bytes\":{expired},\"after_expiry_minus_baseline\":{}}}",
                expired - baseline
            );
        }
        Ok(())
    })
}

/// Opens `count` sessions, each `initialize` then `notifications/initialized`, and leaves them
/// idle.
async fn open_sessions(app: &Router, count: usize) -> Result<(), String> {
    for _ in 0..count {
        let (status, session) = post(app, INITIALIZE, None).await?;
        let session =
            session.ok_or_else(|| format!("initialize answered {status} without a session"))?;
        let (status, _) = post(app, INITIALIZED, Some(session)).await?;
        if status != StatusCode::ACCEPTED {
            return Err(format!("notifications/initialized answered {status}"));
        }
    }
    Ok(())
}

/// Moves the clock past the idle limit and waits until the reaper has emptied the store.
async fn expire_all(served: &Served) -> Result<(), String> {
    served.clock.advance(IDLE + Duration::from_secs(1));
    for _ in 0..2_000 {
        if served.store.is_empty() {
            // Let the streams' tasks see their session end and finish.
            tokio::time::sleep(Duration::from_millis(50)).await;
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    Err(format!("{} sessions never expired", served.store.len()))
}

/// POSTs `body` (in `session`, if given) and reads the whole answer; returns its status and
/// session header.
async fn post(
    app: &Router,
    body: &'static str,
    session: Option<HeaderValue>,
) -> Result<(StatusCode, Option<HeaderValue>), String> {
    let mut request = Request::post("/mcp")
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::ACCEPT, "application/json, text/event-stream");
    if let Some(session) = session {
        request = request
            .header("mcp-session-id", session)
            .header("mcp-protocol-version", "2025-11-25");
    }
    let request = request
        .body(Body::from(body))
        .map_err(|error| error.to_string())?;
    let response = app
        .clone()
        .oneshot(request)
        .await
        .map_err(|error| error.to_string())?;
    let status = response.status();
    let session = response.headers().get("mcp-session-id").cloned();
    response
        .into_body()
        .collect()
        .await
        .map_err(|error| error.to_string())?;
    Ok((status, session))
}
