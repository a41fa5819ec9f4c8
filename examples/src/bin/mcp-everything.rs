//! `mcp-everything`: the MCP demo server with every conformance fixture.
//!
//! `--listen ADDR` serves Streamable HTTP at `/mcp` and legacy HTTP+SSE at `/sse` (messages
//! to `/message`); `--stdio` serves the same over stdin/stdout. `--sessionless` serves `/mcp`
//! without sessions: every `POST` stands alone, as the other SDKs' stateless modes. `--redis URL`
//! keeps the Streamable HTTP sessions, their event streams and the tasks in Redis, and relays
//! between replicas.

// No index that can panic is reachable from input: code reads maps and slices with `get`.
// Unit tests may index (a panic there is a failed test).
#![cfg_attr(not(test), deny(clippy::indexing_slicing))]

use std::net::SocketAddr;
use std::process::ExitCode;

use clap::{ArgGroup, Parser};
use examples::mcp_demo::{everything_server, everything_server_with_tasks};
use examples::redis_sessions::{REDIS_HELP, mount_mcp_streamable_http};
use protocols_runtime::hardening::HardeningConfig;
use protocols_runtime::http::{HttpConfig, SessionMode};
use protocols_runtime::server::Server;
use protocols_runtime::stdio::{StdioConfig, serve_stdio};

/// The MCP demo server with every conformance fixture (the conformance suite's server).
#[derive(Debug, Parser)]
#[command(version, about = "The MCP demo server with every conformance fixture")]
#[command(group(ArgGroup::new("mode").required(true).args(["listen", "stdio"])))]
struct Arguments {
    /// Serve Streamable HTTP at /mcp and legacy HTTP+SSE at /sse (messages to /message).
    #[arg(long, value_name = "ADDR")]
    listen: Option<SocketAddr>,
    /// Serve the same over stdin/stdout.
    #[arg(long)]
    stdio: bool,
    /// Serve /mcp without sessions: no Mcp-Session-Id, every POST on its own, GET and DELETE 405.
    #[arg(long, requires = "listen")]
    sessionless: bool,
    #[arg(
        long,
        value_name = "URL",
        requires = "listen",
        conflicts_with = "sessionless",
        help = REDIS_HELP
    )]
    redis: Option<String>,
}

impl Arguments {
    /// Whether `/mcp` keeps a session per client.
    fn session_mode(&self) -> SessionMode {
        if self.sessionless {
            SessionMode::Sessionless
        } else {
            SessionMode::PerClient
        }
    }
}

async fn listen(
    address: SocketAddr,
    sessions: SessionMode,
    redis: Option<&str>,
) -> std::io::Result<()> {
    let tasks = examples::redis_mcp::task_store(redis)
        .await
        .map_err(std::io::Error::other)?;
    let server = everything_server_with_tasks(tasks).map_err(std::io::Error::other)?;
    let builder = Server::builder().hardening(HardeningConfig::new().bind_address(address));
    let streamable = HttpConfig::default().session_mode(sessions);
    let built = mount_mcp_streamable_http(builder, "/mcp", server.clone(), streamable, redis)
        .await
        .map_err(std::io::Error::other)?
        .legacy_sse("/sse", "/message", server, HttpConfig::default())
        .build()
        .map_err(std::io::Error::other)?;
    eprintln!("mcp-everything listening on http://{address}/mcp (legacy SSE at /sse)");
    built.serve(address).await
}

#[tokio::main]
async fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .init();
    // clap answers --help and a bad command line itself (usage on stderr, exit status 2).
    let arguments = Arguments::parse();
    let outcome = match arguments.listen {
        Some(address) => {
            listen(
                address,
                arguments.session_mode(),
                arguments.redis.as_deref(),
            )
            .await
        }
        None => match everything_server() {
            Ok(server) => serve_stdio(&server, StdioConfig::default()).await,
            Err(error) => Err(std::io::Error::other(error)),
        },
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("mcp-everything: {error}");
            ExitCode::FAILURE
        }
    }
}
