//! MCP for the protocols runtime: typed messages of every pinned revision (under `generated`,
//! written by `cargo run -p codegen`) and the hand-written glue that serves them all at one
//! endpoint — revision negotiation, the stateless 2026-07-28 checks, the wire conversion to the
//! peer's revision, and the API a server author writes against (tools as async functions,
//! resources, prompts, completions, and calls back to the client).
//!
//! A server with one tool, serving every revision at `/mcp`:
//!
//! Features: `server` (default) serves MCP — the builder, the serving glue and the runtime's
//! HTTP stack; `client` (default) is the [`client`] module and its HTTP client. With neither,
//! the crate is the generated types and method tables of every revision, the [`wire`]
//! conversions and the shared [`conventions`].
//!
//! ```no_run
//! use protocols_mcp::{McpServer, ToolDefinition, content};
//! use schemars::JsonSchema;
//! use protocols_runtime::{hardening::HardeningConfig, http::HttpConfig, server::Server};
//!
//! #[derive(serde::Deserialize, JsonSchema)]
//! struct Echo { message: String }
//!
//! #[tokio::main]
//! async fn main() -> std::io::Result<()> {
//!     let echo = ToolDefinition::new("echo", "Echoes the message", |args: Echo, _cx| async move {
//!         Ok(content::tool_result(vec![content::text(args.message)]))
//!     });
//!     let mcp = McpServer::builder("echo-server", "1.0.0")
//!         .tool(echo)
//!         .build()
//!         .map_err(std::io::Error::other)?;
//!     let address = "127.0.0.1:8080".parse().map_err(std::io::Error::other)?;
//!     let server = Server::builder()
//!         .hardening(HardeningConfig::new().bind_address(address))
//!         .streamable_http("/mcp", mcp, HttpConfig::default())
//!         .build()
//!         .map_err(std::io::Error::other)?;
//!     server.serve(address).await
//! }
//! ```
//!
//! The builder is one implementation of the generated 2025-11-25 `Server` trait; a server can
//! implement that trait itself instead (every method it leaves out answers -32601, and its
//! `initialize` describes the server) and be served the same way, to every revision:
//!
//! ```no_run
//! use protocols_mcp::generated::v2025_11_25::Server;
//! use protocols_mcp::{McpServer, RequestContext, content, types};
//! use protocols_runtime::ErrorObject;
//!
//! struct Clock;
//!
//! impl Server for Clock {
//!     type Context = RequestContext;
//!
//!     async fn initialize(
//!         &self,
//!         params: types::InitializeRequestParams,
//!         _cx: &RequestContext,
//!     ) -> Result<types::InitializeResult, ErrorObject> {
//!         serde_json::from_value(serde_json::json!({
//!             "protocolVersion": params.protocol_version,
//!             "capabilities": { "tools": {} },
//!             "serverInfo": { "name": "clock", "version": "1.0.0" },
//!         }))
//!         .map_err(|_| ErrorObject::internal_error())
//!     }
//!
//!     async fn tools_call(
//!         &self,
//!         _params: types::CallToolRequestParams,
//!         _cx: &RequestContext,
//!     ) -> Result<types::CallToolResult, ErrorObject> {
//!         Ok(content::tool_result(vec![content::text("twelve o'clock")]))
//!     }
//! }
//!
//! let mcp = McpServer::new(Clock); // a `RequestHandler`, mounted like the builder's server
//! # let _ = mcp;
//! ```

#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]
// No index that can panic is reachable from input: code reads maps and slices with `get`.
// Unit tests may index (a panic there is a failed test).
#![cfg_attr(not(test), deny(clippy::indexing_slicing))]

#[cfg(feature = "server")]
pub mod builder;
#[cfg(feature = "server")]
pub mod catalog;
#[cfg(feature = "client")]
#[cfg_attr(docsrs, doc(cfg(feature = "client")))]
pub mod client;
pub mod content;
#[cfg(feature = "server")]
pub mod context;
pub mod conventions;
pub mod errors;
// Generated items carry the upstream schema's descriptions where it has them, and none where
// it has not; hand-written docs cannot be added there, so the lint stops at this module.
#[allow(missing_docs)]
#[rustfmt::skip] // prettyplease formats generated code; rustfmt must not restyle it.
pub mod generated;
pub mod logging;
#[cfg(feature = "server")]
pub mod param_headers;
#[cfg(feature = "server")]
pub mod request_state;
pub mod revision;
#[cfg(feature = "server")]
pub mod server;
#[cfg(feature = "server")]
mod serving;
#[cfg(feature = "server")]
pub mod session;
#[cfg(feature = "server")]
mod sessionless;
#[cfg(feature = "server")]
pub mod stateless;
#[cfg(feature = "server")]
pub mod tasks;
#[cfg(feature = "server")]
mod tool_index;
#[cfg(feature = "server")]
pub mod tools;
pub mod wire;

#[cfg(feature = "server")]
pub use builder::{McpServerBuilder, Registry};
#[cfg(feature = "server")]
pub use context::{InputRequests, RequestContext, ToolError};
pub use logging::Level;
pub use revision::Revision;
#[cfg(feature = "server")]
pub use server::{ListKind, McpServer, ServeOptions};
#[cfg(feature = "server")]
pub use session::McpSession;
#[cfg(feature = "server")]
pub use tasks::{TaskLimits, TaskStore};
#[cfg(feature = "server")]
pub use tools::{NoArguments, TaskSupport, ToolDefinition};

/// The 2025-11-25 types handlers read and return.
pub use generated::v2025_11_25::types;
/// The schemars (1.x) that tool argument and output types derive `JsonSchema` from: the same
/// crate as a server's own `schemars = "1"` dependency, so its derive needs no attribute.
#[cfg(feature = "server")]
pub use schemars;
