//! Benchmark-only comparator: rmcp (the official Rust SDK) serving one `echo` tool over its
//! Streamable HTTP server, in the two modes `scripts/bench-mcp.sh` compares against
//! protocols-mcp. Not part of the workspace or of CI; built only when the script is asked to.
//!
//! ```text
//! rmcp-echo <stateless|session> <port-file>
//! ```
//!
//! `stateless`: no sessions, JSON answers (`legacy_session_mode = false`, `json_response =
//! true`). `session`: rmcp's default session mode, whose answers are SSE streams.

use std::process::ExitCode;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock, ServerCapabilities, ServerConfig};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, ServerHandler, schemars, tool, tool_handler, tool_router};

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct EchoArguments {
    message: String,
}

#[derive(Debug, Clone)]
struct EchoServer {
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl EchoServer {
    fn new() -> Self {
        Self {
            tool_router: Self::tool_router(),
        }
    }

    #[tool(description = "Echoes the message")]
    async fn echo(
        &self,
        Parameters(arguments): Parameters<EchoArguments>,
    ) -> Result<CallToolResult, ErrorData> {
        Ok(CallToolResult::success(vec![ContentBlock::text(
            arguments.message,
        )]))
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for EchoServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}

fn config(mode: &str) -> Result<StreamableHttpServerConfig, String> {
    let defaults = StreamableHttpServerConfig::default();
    match mode {
        "stateless" => Ok(defaults
            .with_legacy_session_mode(false)
            .with_json_response(true)),
        "session" => Ok(defaults),
        other => Err(format!("unknown mode {other}; use stateless or session")),
    }
}

fn serve(mode: &str, port_file: &str) -> Result<(), String> {
    let config = config(mode)?;
    // One worker, like the server it is compared with; both are pinned to one core.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .map_err(|error| error.to_string())?;
    runtime.block_on(async move {
        let service: StreamableHttpService<EchoServer, LocalSessionManager> =
            StreamableHttpService::new(|| Ok(EchoServer::new()), Default::default(), config);
        let app = axum::Router::new().nest_service("/mcp", service);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(|error| error.to_string())?;
        let port = listener
            .local_addr()
            .map_err(|error| error.to_string())?
            .port();
        std::fs::write(port_file, port.to_string()).map_err(|error| error.to_string())?;
        // TCP_NODELAY on every accepted socket, as the server it is compared with does.
        let listener = axum::serve::ListenerExt::tap_io(listener, |stream| {
            let _ = stream.set_nodelay(true);
        });
        axum::serve(listener, app)
            .await
            .map_err(|error| error.to_string())
    })
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let outcome = match args.as_slice() {
        [mode, port_file] => serve(mode, port_file),
        _ => Err("usage: rmcp-echo <stateless|session> <port-file>".to_owned()),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("rmcp-echo: {message}");
            ExitCode::FAILURE
        }
    }
}
