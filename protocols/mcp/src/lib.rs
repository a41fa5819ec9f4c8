//! MCP for the protocols runtime: typed messages of every pinned revision (under `generated`,
//! written by `cargo run -p codegen`) and the hand-written glue that serves them all at one
//! endpoint — revision negotiation, the stateless 2026-07-28 checks, the wire conversion to the
//! peer's revision, and the API a server author writes against (tools as async functions,
//! resources, prompts, completions, and calls back to the client).

pub mod catalog;
pub mod client;
pub mod content;
pub mod context;
pub mod generated;
pub mod logging;
pub mod revision;
pub mod server;
pub mod session;
pub mod stateless;
pub mod tools;
pub mod wire;

pub use context::{InputRequests, RequestContext, ToolError};
pub use logging::Level;
pub use revision::Revision;
pub use server::{ListKind, McpServer, McpServerBuilder};
pub use session::McpSession;
pub use tools::{NoArguments, ToolDefinition};

/// The 2025-11-25 types handlers read and return.
pub use generated::v2025_11_25::types;
/// The schemars (1.x) that tool argument and output types derive `JsonSchema` from; derive
/// with `#[schemars(crate = "protocols_mcp::schemars")]`.
pub use schemars1 as schemars;
