//! `all-protocols`: one server hosting every protocol behind one hardening layer: MCP at `/mcp`
//! (Streamable HTTP) and `/sse` (legacy HTTP+SSE), A2A at its JSON-RPC and HTTP+JSON paths with
//! its agent card, ACP at `/acp` (Streamable HTTP and WebSocket).
//!
//! `--listen ADDR` picks the address (default 127.0.0.1:8080). `--stdio acp` instead serves the
//! ACP demo agent on stdin/stdout, as an editor spawns it. `--allow-private-webhooks` is for
//! tests only and unsafe anywhere else (see [`Options::allow_private_webhooks`]).

use std::net::SocketAddr;
use std::process::ExitCode;

use clap::Parser;
use examples::mcp_demo::everything_server;
use examples::{a2a_demo, acp_demo};
use protocols_a2a::push::{PrivateTargets, PushPolicy};
use protocols_mcp::builder::BuildError;
use protocols_runtime::hardening::HardeningConfig;
use protocols_runtime::http::HttpConfig;
use protocols_runtime::server::{Server, ServerBuilder};

/// Every protocol's demo on one server.
#[derive(Debug, Parser)]
#[command(name = "all-protocols")]
struct Options {
    /// The address to serve on.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8080")]
    listen: SocketAddr,
    /// Serve this protocol's demo on stdin/stdout instead (`acp`).
    #[arg(long, value_name = "PROTOCOL")]
    stdio: Option<String>,
    /// UNSAFE, for tests only: let A2A push-notification webhooks target loopback and private
    /// addresses. Off by default, because it lets any caller make this server send requests
    /// to its own host and private network (SSRF).
    #[arg(long)]
    allow_private_webhooks: bool,
}

fn mount_mcp(builder: ServerBuilder) -> Result<ServerBuilder, BuildError> {
    let server = everything_server()?;
    Ok(builder
        .streamable_http("/mcp", server.clone(), HttpConfig::default())
        .legacy_sse("/sse", "/message", server, HttpConfig::default()))
}

/// A2A's demo agent; its card names interfaces under `base_url`. Its streaming answers (both
/// bindings) finish during the drain and end at its deadline.
fn mount_a2a(builder: ServerBuilder, base_url: &str, push: PushPolicy) -> ServerBuilder {
    let routes = a2a_demo::router_with_push(base_url, builder.shutdown_token(), push);
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
    let options = Options::parse();
    if let Some(protocol) = &options.stdio {
        return serve_stdio(protocol).await;
    }
    let address = options.listen;
    let push = PushPolicy {
        private_targets: if options.allow_private_webhooks {
            tracing::warn!("A2A webhooks may target loopback and private addresses (unsafe)");
            PrivateTargets::Allow
        } else {
            PrivateTargets::Refuse
        },
        ..PushPolicy::default()
    };
    let builder = Server::builder().hardening(HardeningConfig::new().bind_address(address));
    let builder = match mount_mcp(builder) {
        Ok(builder) => builder,
        Err(error) => {
            eprintln!("all-protocols: {error}");
            return ExitCode::FAILURE;
        }
    };
    let builder = mount_acp(mount_a2a(builder, &format!("http://{address}"), push));
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
