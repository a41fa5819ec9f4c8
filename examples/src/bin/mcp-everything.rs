//! `mcp-everything`: the MCP demo server with every conformance fixture.
//!
//! `--listen ADDR` serves Streamable HTTP at `/mcp` and legacy HTTP+SSE at `/sse` (messages
//! to `/message`); `--stdio` serves the same over stdin/stdout.

// No index that can panic is reachable from input: code reads maps and slices with `get`.
// Unit tests may index (a panic there is a failed test).
#![cfg_attr(not(test), deny(clippy::indexing_slicing))]

use std::net::SocketAddr;
use std::process::ExitCode;

use examples::mcp_demo::everything_server;
use protocols_runtime::hardening::HardeningConfig;
use protocols_runtime::http::HttpConfig;
use protocols_runtime::server::Server;
use protocols_runtime::stdio::{StdioConfig, serve_stdio};

/// How the server is reached.
enum Mode {
    Listen(SocketAddr),
    Stdio,
}

fn parse_mode(mut arguments: impl Iterator<Item = String>) -> Result<Mode, String> {
    match arguments.next().as_deref() {
        Some("--stdio") => Ok(Mode::Stdio),
        Some("--listen") => {
            let address = arguments.next().ok_or("--listen needs an address")?;
            address
                .parse()
                .map(Mode::Listen)
                .map_err(|error| format!("bad address {address}: {error}"))
        }
        _ => Err("usage: mcp-everything (--listen ADDR | --stdio)".to_owned()),
    }
}

async fn listen(address: SocketAddr) -> std::io::Result<()> {
    let server = everything_server().map_err(std::io::Error::other)?;
    let built = Server::builder()
        .hardening(HardeningConfig::new().bind_address(address))
        .streamable_http("/mcp", server.clone(), HttpConfig::default())
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
    let outcome = match parse_mode(std::env::args().skip(1)) {
        Ok(Mode::Listen(address)) => listen(address).await,
        Ok(Mode::Stdio) => match everything_server() {
            Ok(server) => serve_stdio(&server, StdioConfig::default()).await,
            Err(error) => Err(std::io::Error::other(error)),
        },
        Err(usage) => {
            eprintln!("{usage}");
            return ExitCode::from(2);
        }
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("mcp-everything: {error}");
            ExitCode::FAILURE
        }
    }
}
