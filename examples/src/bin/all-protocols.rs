//! `all-protocols`: one server hosting every protocol behind one hardening layer: MCP at `/mcp`
//! (Streamable HTTP) and `/sse` (legacy HTTP+SSE), A2A at its JSON-RPC and HTTP+JSON paths with
//! its agent card, ACP at `/acp` (Streamable HTTP and WebSocket).
//!
//! `--listen ADDR` picks the address (default 127.0.0.1:8080). `--stdio acp` instead serves the
//! ACP demo agent on stdin/stdout, as an editor spawns it.

use std::net::SocketAddr;
use std::process::ExitCode;

use examples::mcp_demo::everything_server;
use examples::{a2a_demo, acp_demo};
use protocols_runtime::hardening::HardeningConfig;
use protocols_runtime::http::HttpConfig;
use protocols_runtime::server::{Server, ServerBuilder};

const DEFAULT_ADDRESS: &str = "127.0.0.1:8080";

fn address(mut arguments: impl Iterator<Item = String>) -> Result<SocketAddr, String> {
    let text = match arguments.next().as_deref() {
        None => DEFAULT_ADDRESS.to_owned(),
        Some("--listen") => arguments.next().ok_or("--listen needs an address")?,
        Some(other) => {
            return Err(format!(
                "unknown argument {other}; usage: all-protocols [--listen ADDR]"
            ));
        }
    };
    text.parse()
        .map_err(|error| format!("bad address {text}: {error}"))
}

fn mount_mcp(builder: ServerBuilder) -> ServerBuilder {
    let server = everything_server();
    builder
        .streamable_http("/mcp", server.clone(), HttpConfig::default())
        .legacy_sse("/sse", "/message", server, HttpConfig::default())
}

/// A2A's demo agent; its card names interfaces under `base_url`. Its streaming answers (both
/// bindings) finish during the drain and end at its deadline.
fn mount_a2a(builder: ServerBuilder, base_url: &str) -> ServerBuilder {
    let routes = a2a_demo::router(base_url, builder.shutdown_token());
    builder.routes(routes)
}

/// ACP's demo agent over its remote transport (Streamable HTTP and WebSocket at one endpoint),
/// its streams and connections ended when the server starts draining.
fn mount_acp(builder: ServerBuilder) -> ServerBuilder {
    let routes = acp_demo::router(builder.drain_token());
    builder.routes(routes)
}

#[tokio::main]
async fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .init();
    let arguments: Vec<String> = std::env::args().skip(1).collect();
    if let [flag, protocol] = arguments.as_slice()
        && flag == "--stdio"
    {
        return serve_stdio(protocol).await;
    }
    let address = match address(arguments.into_iter()) {
        Ok(address) => address,
        Err(usage) => {
            eprintln!("{usage}");
            return ExitCode::from(2);
        }
    };
    let builder = Server::builder().hardening(HardeningConfig::new().bind_address(address));
    let builder = mount_acp(mount_a2a(mount_mcp(builder), &format!("http://{address}")));
    let server = match builder.build() {
        Ok(server) => server,
        Err(error) => {
            eprintln!("all-protocols: {error}");
            return ExitCode::FAILURE;
        }
    };
    eprintln!(
        "all-protocols listening on http://{address} (MCP at /mcp and /sse, A2A, ACP at /acp)"
    );
    match server.serve(address).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("all-protocols: {error}");
            ExitCode::FAILURE
        }
    }
}

/// `--stdio acp`: only ACP is spoken over stdio by the editors that spawn agents.
async fn serve_stdio(protocol: &str) -> ExitCode {
    if protocol != "acp" {
        eprintln!("--stdio serves: acp");
        return ExitCode::from(2);
    }
    match acp_demo::serve_stdio().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("all-protocols: {error}");
            ExitCode::FAILURE
        }
    }
}
