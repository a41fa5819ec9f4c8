//! The README's ten-line MCP server: one typed tool, served over Streamable HTTP at `/mcp`.

// No index that can panic is reachable from input: code reads maps and slices with `get`.
// Unit tests may index (a panic there is a failed test).
#![cfg_attr(not(test), deny(clippy::indexing_slicing))]

use protocols_mcp::content::{text, tool_result};
use protocols_mcp::{McpServer, ToolDefinition, types::ToolAnnotations};
use protocols_runtime::{http::HttpConfig, server::Server};
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Deserialize, JsonSchema)]
struct Echo {
    text: String,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let echo = ToolDefinition::new("echo", "Echoes its text", |args: Echo, _cx| async move {
        Ok(tool_result(vec![text(args.text)]))
    })
    .title("Echo")
    .annotations(ToolAnnotations {
        read_only_hint: Some(true),
        ..Default::default()
    });
    let mcp = McpServer::builder("hello", "1.0").tool(echo).build()?;
    let server = Server::builder()
        .streamable_http("/mcp", mcp, HttpConfig::default())
        .build()?;
    server.serve("127.0.0.1:8080".parse()?).await?;
    Ok(())
}
