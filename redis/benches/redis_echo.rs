//! The server half of `scripts/bench-redis.sh`: one MCP `echo` tool over Streamable HTTP in
//! session mode (2025-11-25, SSE answers), its sessions in this process's memory or, given a
//! URL, in Redis through [`RedisSessionStore`], and with `events` after the URL its event
//! streams too, through [`RedisEventStore`] (what `--redis` deploys). One binary for all, so
//! the figures differ only by the stores. It is served exactly as `protocols-mcp`'s `mcp_echo` bench serves (one
//! worker thread, a rate limit that never refuses at benchmark load, room for 100,000 sessions),
//! and driven by that bench's load generator.
//!
//! ```text
//! redis_echo serve <port-file> [redis://HOST:PORT [events]]
//! ```
//!
//! With `events`, `<port-file>.sent` holds what the event store has sent Redis (`pipelines
//! steps`, [`RedisEventStore::sent`]), rewritten every [`SENT_EVERY`], so the script counts
//! round trips (a pipeline is one) beside Redis's own command counts.
//!
//! Run directly by `cargo bench` it only prints how to.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use protocols_mcp::{McpServer, ToolDefinition, content};
use protocols_redis::{RedisConfig, RedisEventStore, RedisSessionStore};
use protocols_runtime::hardening::{HardeningConfig, RateLimit};
use protocols_runtime::http::{HttpConfig, ResponseMode};
use protocols_runtime::server::Server;
use protocols_runtime::session::SessionLimits;
use protocols_runtime::tail::{EventStore, MemoryEventStore};
use schemars::JsonSchema;
use tokio::net::TcpListener;

/// How often `<port-file>.sent` is rewritten.
const SENT_EVERY: Duration = Duration::from_millis(100);

#[derive(serde::Deserialize, JsonSchema)]
struct EchoArguments {
    message: String,
}

/// The `echo` tool the MCP benches serve, answering its message as one text content.
fn echo_server() -> Result<McpServer, String> {
    let echo = ToolDefinition::new(
        "echo",
        "Echoes the message",
        |arguments: EchoArguments, _cx| async move {
            Ok(content::tool_result(vec![content::text(arguments.message)]))
        },
    );
    McpServer::builder("redis-echo-bench", "1.0.0")
        .tool(echo)
        .build()
        .map_err(|error| error.to_string())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let words: Vec<&str> = args.iter().map(String::as_str).collect();
    let outcome = match words.as_slice() {
        ["serve", port_file] => serve(port_file, None),
        ["serve", port_file, url] => serve(port_file, Some((url, Events::InMemory))),
        ["serve", port_file, url, "events"] => serve(port_file, Some((url, Events::InRedis))),
        _ => {
            eprintln!("run scripts/bench-redis.sh; usage in redis/benches/redis_echo.rs");
            Ok(())
        }
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("redis_echo: {message}");
            ExitCode::FAILURE
        }
    }
}

/// Where a replica on Redis keeps its event streams.
#[derive(Clone, Copy)]
enum Events {
    InMemory,
    InRedis,
}

/// Serves the echo tool at `/mcp`, its sessions in the Redis at `redis` (and its event streams,
/// as that says) or in memory.
fn serve(port_file: &str, redis: Option<(&str, Events)>) -> Result<(), String> {
    let port_file = PathBuf::from(port_file);
    // One worker: the process is pinned to one core, as the other benches' servers are.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .map_err(|error| error.to_string())?;
    runtime.block_on(async move {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(|error| error.to_string())?;
        let address = listener.local_addr().map_err(|error| error.to_string())?;
        let hardening = HardeningConfig::new()
            .bind_address(address)
            .rate_limit(Some(RateLimit::new(1e9, u32::MAX)));
        let config = HttpConfig::default()
            .response_mode(ResponseMode::Sse)
            .sessions(SessionLimits::default().max_live(100_000));
        let handler = echo_server()?;
        let builder = Server::builder().hardening(hardening);
        let builder = match redis {
            None => builder.streamable_http("/mcp", handler, config),
            Some((url, kept)) => {
                let store = RedisConfig::new(url)
                    .limits(config.sessions)
                    .clock(Arc::clone(&config.clock));
                let events: Arc<dyn EventStore> = match kept {
                    Events::InMemory => Arc::new(MemoryEventStore::new(config.tail_capacity)),
                    Events::InRedis => {
                        let events = Arc::new(
                            RedisEventStore::connect(store.clone(), config.tail_capacity)
                                .await
                                .map_err(|error| error.to_string())?,
                        );
                        tokio::spawn(write_sent(Arc::clone(&events), sent_file(&port_file)));
                        events
                    }
                };
                let sessions = RedisSessionStore::connect(store, Arc::clone(&events))
                    .await
                    .map_err(|error| error.to_string())?;
                builder.streamable_http_with_stores(
                    "/mcp",
                    handler,
                    config,
                    Arc::new(sessions),
                    events,
                )
            }
        };
        let server = builder.build().map_err(|error| error.to_string())?;
        std::fs::write(&port_file, address.port().to_string())
            .map_err(|error| error.to_string())?;
        server
            .serve_until(listener, std::future::pending())
            .await
            .map_err(|error| error.to_string())
    })
}

/// `<port-file>.sent`.
fn sent_file(port_file: &Path) -> PathBuf {
    let mut name = port_file.as_os_str().to_owned();
    name.push(".sent");
    PathBuf::from(name)
}

/// Rewrites `file` with what `events` has sent Redis, every [`SENT_EVERY`], while serving.
async fn write_sent(events: Arc<RedisEventStore>, file: PathBuf) {
    let mut every = tokio::time::interval(SENT_EVERY);
    loop {
        every.tick().await;
        let sent = events.sent();
        let _ = std::fs::write(&file, format!("{} {}\n", sent.pipelines, sent.steps));
    }
}
