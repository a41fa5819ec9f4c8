//! The `echo` tool every MCP benchmark serves (the same one the rmcp comparator serves), so the
//! load and memory benches measure one server.

use protocols_mcp::{McpServer, ToolDefinition, content};
use schemars::JsonSchema;

#[derive(serde::Deserialize, JsonSchema)]
struct EchoArguments {
    message: String,
}

/// An MCP server named `server_name` with the one `echo` tool.
pub fn echo_server(server_name: &str) -> Result<McpServer, String> {
    let echo = ToolDefinition::new(
        "echo",
        "Echoes the message",
        |arguments: EchoArguments, _cx| async move {
            Ok(content::tool_result(vec![content::text(arguments.message)]))
        },
    );
    McpServer::builder(server_name, "1.0.0")
        .tool(echo)
        .build()
        .map_err(|error| error.to_string())
}
