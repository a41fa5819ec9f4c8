//! `all-protocols`: one server hosting every protocol behind one hardening layer. MCP is served
//! at `/mcp` (Streamable HTTP) and `/sse` (legacy HTTP+SSE).
//!
//! `--listen ADDR` picks the address (default 127.0.0.1:8080).

use std::net::SocketAddr;
use std::process::ExitCode;

use examples::mcp_demo::everything_server;
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

// The A2A and ACP demos (examples/src/a2a_demo.rs, acp_demo.rs) mount here the same way:
// one `fn mount_a2a(builder) -> builder` / `fn mount_acp(builder) -> builder` each, chained in
// `main` after `mount_mcp`.

#[tokio::main]
async fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .init();
    let address = match address(std::env::args().skip(1)) {
        Ok(address) => address,
        Err(usage) => {
            eprintln!("{usage}");
            return ExitCode::from(2);
        }
    };
    let builder = Server::builder().hardening(HardeningConfig::new().bind_address(address));
    let server = match mount_mcp(builder).build() {
        Ok(server) => server,
        Err(error) => {
            eprintln!("all-protocols: {error}");
            return ExitCode::FAILURE;
        }
    };
    eprintln!("all-protocols listening on http://{address} (MCP at /mcp and /sse)");
    match server.serve(address).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("all-protocols: {error}");
            ExitCode::FAILURE
        }
    }
}
