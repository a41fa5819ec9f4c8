//! The MCP demo server: every fixture the official conformance suite's server scenarios call
//! (tools, resources, a template, prompts, completions, logging, progress, sampling and
//! elicitation, SSE polling; the 2026-07-28 input-required rounds and diagnostics in `rounds`,
//! the tasks extension's in `tasks`), plus `echo` (the benchmark tool), `add` (typed output),
//! `regional_query` (a parameter mirrored into a header), `demo` (the shared demo core, with
//! progress while it works) and `announce_list_changed` (tells every client a list changed, as
//! a server whose catalog changes would; the suite's `test_trigger_*_change` hooks do the same).

mod rounds;
mod tasks;

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use protocols_mcp::builder::BuildError;
use protocols_mcp::content::{
    audio, blob_contents, embedded_text, image, prompt, prompt_result, read_result, resource,
    resource_template, text, text_contents, tool_result, user_message,
};
use protocols_mcp::server::WeakMcpServer;
use protocols_mcp::{
    Level, ListKind, McpServer, NoArguments, RequestContext, TaskStore, ToolDefinition, ToolError,
    types,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::core::{DemoAction, WHOAMI, plan, whoami};

/// A 1×1 red PNG.
pub const RED_PIXEL_PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
/// A 1 ms silent 8 kHz mono WAV.
pub const SILENT_WAV: &str =
    "UklGRjQAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YRAAAAAAAAAAAAAAAAAAAAAAAAAA";

const STEP: Duration = Duration::from_millis(50);

/// How long `test_reconnection` tells the client to wait before resuming its stream.
const RECONNECT_AFTER: Duration = Duration::from_millis(200);

#[derive(Debug, Deserialize, JsonSchema)]
struct EchoArguments {
    /// The text to send back.
    message: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct AddArguments {
    a: f64,
    b: f64,
}

#[derive(Debug, Serialize, JsonSchema)]
struct Sum {
    sum: f64,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct SamplingArguments {
    /// The prompt to send to the client's model.
    prompt: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct ElicitationArguments {
    /// The message to show the user.
    message: String,
}

/// A list a client can be told has changed.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum ChangedList {
    Tools,
    Resources,
    Prompts,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct AnnounceArguments {
    /// Which list changed.
    list: ChangedList,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct DemoArguments {
    /// What to say to the demo agent; text starting with `slow` makes it take its time.
    text: String,
}

/// The server `mcp-everything` and `all-protocols` serve, its tasks in memory.
pub fn everything_server() -> Result<McpServer, BuildError> {
    everything_server_with_tasks(None)
}

/// The same server, its tasks in `tasks` when given (in memory otherwise).
pub fn everything_server_with_tasks(tasks: Option<TaskStore>) -> Result<McpServer, BuildError> {
    let this = Arc::new(OnceLock::new());
    let mut builder = McpServer::builder("mcp-everything", env!("CARGO_PKG_VERSION"))
        .instructions("A test server exposing every MCP feature.");
    if let Some(tasks) = tasks {
        builder = builder.task_store(tasks);
    }
    let builder = content_tools()
        .into_iter()
        .chain(interactive_tools())
        .chain(announce_tools(&this))
        .chain([whoami_tool()])
        .fold(builder, protocols_mcp::McpServerBuilder::tool);
    let builder = tasks::register(rounds::register(with_resources(builder)));
    let server = with_prompts(builder).completion(complete).build()?;
    // The announcing tools can reach their server only once the server exists.
    let _ = this.set(server.downgrade());
    Ok(server)
}

/// `announce_list_changed` and the suite's two trigger hooks.
fn announce_tools(server: &Arc<OnceLock<WeakMcpServer>>) -> Vec<ToolDefinition> {
    vec![
        announce_tool(Arc::clone(server)),
        trigger_tool(
            Arc::clone(server),
            "test_trigger_tool_change",
            ListKind::Tools,
        ),
        trigger_tool(
            Arc::clone(server),
            "test_trigger_prompt_change",
            ListKind::Prompts,
        ),
    ]
}

/// A hook that tells every client (sessions and `subscriptions/listen` streams) that `list`
/// changed.
fn trigger_tool(
    server: Arc<OnceLock<WeakMcpServer>>,
    name: &str,
    list: ListKind,
) -> ToolDefinition {
    ToolDefinition::new(
        name,
        "Tells every client that a list changed",
        move |_: NoArguments, _| {
            let server = server.get().and_then(WeakMcpServer::upgrade);
            async move {
                let server = server.ok_or_else(|| ToolError::failed("the server is gone"))?;
                let told = server.notify_list_changed(list);
                Ok(tool_result(vec![text(format!("told {told} client(s)"))]))
            }
        },
    )
}

/// `whoami`: one text item naming the subject the server authenticated for this call.
fn whoami_tool() -> ToolDefinition {
    ToolDefinition::new(
        WHOAMI,
        "Names the caller: the subject its access token was issued to",
        |_: NoArguments, cx| {
            let answer = whoami(cx.principal().map(|principal| &*principal.subject));
            async move { Ok(tool_result(vec![text(answer)])) }
        },
    )
}

/// `announce_list_changed`: tells every connected client (on every transport) that a list
/// changed, through the server it belongs to.
fn announce_tool(server: Arc<OnceLock<WeakMcpServer>>) -> ToolDefinition {
    ToolDefinition::new(
        "announce_list_changed",
        "Tells every client that the tools, resources or prompts list changed",
        move |arguments: AnnounceArguments, _| {
            let server = server.get().and_then(WeakMcpServer::upgrade);
            async move {
                let server = server.ok_or_else(|| ToolError::failed("the server is gone"))?;
                let list = match arguments.list {
                    ChangedList::Tools => ListKind::Tools,
                    ChangedList::Resources => ListKind::Resources,
                    ChangedList::Prompts => ListKind::Prompts,
                };
                let told = server.notify_list_changed(list);
                Ok(tool_result(vec![text(format!("told {told} client(s)"))]))
            }
        },
    )
}

fn fixed(name: &str, description: &str, content: Vec<types::ContentBlock>) -> ToolDefinition {
    ToolDefinition::new(name, description, move |_: NoArguments, _| {
        let content = content.clone();
        async move { Ok(tool_result(content)) }
    })
}

fn content_tools() -> Vec<ToolDefinition> {
    vec![
        fixed(
            "test_simple_text",
            "Returns simple text",
            vec![text("This is a simple text response for testing.")],
        ),
        fixed(
            "test_image_content",
            "Returns an image",
            vec![image(RED_PIXEL_PNG, "image/png")],
        ),
        fixed(
            "test_audio_content",
            "Returns audio",
            vec![audio(SILENT_WAV, "audio/wav")],
        ),
        fixed(
            "test_embedded_resource",
            "Returns an embedded resource",
            vec![embedded_text(
                "test://embedded-resource",
                "text/plain",
                "This is an embedded resource content.",
            )],
        ),
        fixed(
            "test_multiple_content_types",
            "Returns text, an image and a resource",
            vec![
                text("Multiple content types test:"),
                image(RED_PIXEL_PNG, "image/png"),
                embedded_text(
                    "test://mixed-content-resource",
                    "application/json",
                    r#"{"test":"data","value":123}"#,
                ),
            ],
        ),
        ToolDefinition::new(
            "test_error_handling",
            "Always fails",
            |_: NoArguments, _| async {
                Err(ToolError::failed(
                    "This tool intentionally returns an error for testing",
                ))
            },
        ),
        ToolDefinition::new(
            "echo",
            "Echoes the message",
            |arguments: EchoArguments, _| async move { Ok(tool_result(vec![text(arguments.message)])) },
        )
        .title("Echo")
        .annotations(types::ToolAnnotations {
            read_only_hint: Some(true),
            destructive_hint: Some(false),
            idempotent_hint: Some(true),
            open_world_hint: Some(false),
            title: None,
        }),
        ToolDefinition::raw(
            "regional_query",
            "Runs a query in a region (the region travels as the Mcp-Param-Region header too)",
            json!({
                "type": "object",
                "properties": {
                    "region": { "type": "string", "description": "Where to run", "x-mcp-header": "Region" },
                    "query": { "type": "string", "description": "What to run" }
                },
                "required": ["region"]
            }),
            |arguments, _| async move {
                let field = |name: &str| arguments.get(name).and_then(Value::as_str).unwrap_or_default().to_owned();
                Ok(tool_result(vec![text(format!("ran `{}` in {}", field("query"), field("region")))]))
            },
        ),
        ToolDefinition::structured(
            "add",
            "Adds two numbers",
            |arguments: AddArguments, _| async move {
                Ok(Sum {
                    sum: arguments.a + arguments.b,
                })
            },
        ),
        ToolDefinition::raw(
            "json_schema_2020_12_tool",
            "Tool with JSON Schema 2020-12 features",
            json!({
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "type": "object",
                "$defs": {
                    "address": {
                        "$anchor": "addressDef",
                        "type": "object",
                        "properties": { "street": { "type": "string" }, "city": { "type": "string" } }
                    }
                },
                "properties": {
                    "name": { "type": "string" },
                    "address": { "$ref": "#/$defs/address" },
                    "contactMethod": { "type": "string", "enum": ["phone", "email"] },
                    "phone": { "type": "string" },
                    "email": { "type": "string" }
                },
                "allOf": [{ "anyOf": [{ "required": ["phone"] }, { "required": ["email"] }] }],
                "if": { "properties": { "contactMethod": { "const": "phone" } }, "required": ["contactMethod"] },
                "then": { "required": ["phone"] },
                "else": { "required": ["email"] },
                "additionalProperties": false
            }),
            |arguments, _| async move {
                Ok(tool_result(vec![text(format!(
                    "Received: {}",
                    Value::Object(arguments)
                ))]))
            },
        ),
    ]
}

fn interactive_tools() -> Vec<ToolDefinition> {
    vec![
        ToolDefinition::new(
            "test_tool_with_logging",
            "Logs while it works",
            |_: NoArguments, cx| async move {
                for (index, message) in [
                    "Tool execution started",
                    "Tool processing data",
                    "Tool execution completed",
                ]
                .into_iter()
                .enumerate()
                {
                    if index > 0 {
                        tokio::time::sleep(STEP).await;
                    }
                    cx.log(Level::Info, Some("test_tool_with_logging"), json!(message))
                        .map_err(|error| ToolError::failed(error.to_string()))?;
                }
                Ok(tool_result(vec![text("Logging tool completed")]))
            },
        ),
        ToolDefinition::new(
            "test_tool_with_progress",
            "Reports progress",
            |_: NoArguments, cx| async move {
                for (index, done) in [0.0, 50.0, 100.0].into_iter().enumerate() {
                    if index > 0 {
                        tokio::time::sleep(STEP).await;
                    }
                    cx.progress(done, Some(100.0), None)
                        .map_err(|error| ToolError::failed(error.to_string()))?;
                }
                Ok(tool_result(vec![text("Progress tool completed")]))
            },
        ),
        ToolDefinition::new(
            "test_reconnection",
            "Closes its SSE stream mid-call and answers once the client resumes (SSE polling)",
            |_: NoArguments, cx| async move {
                // Without a resumable stream (stdio, a JSON answer) there is nothing to close,
                // and the answer simply follows on the same channel.
                let _ = cx.close_stream(RECONNECT_AFTER);
                tokio::time::sleep(STEP * 2).await;
                Ok(tool_result(vec![text("Reconnection test completed")]))
            },
        ),
        ToolDefinition::new(
            "test_sampling",
            "Asks the client's model",
            |arguments: SamplingArguments, cx| async move {
                let answer = cx
                .sample(&json!({
                    "messages": [{ "role": "user", "content": { "type": "text", "text": arguments.prompt } }],
                    "maxTokens": 100
                }))
                .await?;
                let reply = serde_json::to_value(&answer.content)
                    .ok()
                    .and_then(|content| {
                        content
                            .get("text")
                            .and_then(Value::as_str)
                            .map(str::to_owned)
                    })
                    .unwrap_or_default();
                Ok(tool_result(vec![text(format!("LLM response: {reply}"))]))
            },
        ),
        ToolDefinition::new(
            "test_elicitation",
            "Asks the user",
            |arguments: ElicitationArguments, cx| async move {
                let schema = json!({
                    "type": "object",
                    "properties": {
                        "username": { "type": "string", "description": "User's response" },
                        "email": { "type": "string", "description": "User's email address" }
                    },
                    "required": ["username", "email"]
                });
                elicitation(&cx, &arguments.message, schema, "User response").await
            },
        ),
        ToolDefinition::new(
            "test_elicitation_sep1034_defaults",
            "Asks the user with defaults",
            |_: NoArguments, cx| async move {
                let schema = json!({
                    "type": "object",
                    "properties": {
                        "name": { "type": "string", "default": "John Doe" },
                        "age": { "type": "integer", "default": 30 },
                        "score": { "type": "number", "default": 95.5 },
                        "status": { "type": "string", "enum": ["active", "inactive", "pending"], "default": "active" },
                        "verified": { "type": "boolean", "default": true }
                    }
                });
                elicitation(
                    &cx,
                    "Please review your details",
                    schema,
                    "Elicitation completed",
                )
                .await
            },
        ),
        ToolDefinition::new(
            "test_elicitation_sep1330_enums",
            "Asks the user to choose",
            |_: NoArguments, cx| async move {
                elicitation(&cx, "Please choose", enum_schema(), "Elicitation completed").await
            },
        ),
        ToolDefinition::new(
            "demo",
            "The shared demo agent",
            |arguments: DemoArguments, cx| async move {
                match plan(&arguments.text) {
                    DemoAction::Echo(reply) => Ok(tool_result(vec![text(reply)])),
                    DemoAction::Slow { reply, tick, total } => {
                        let steps = (total.as_millis() / tick.as_millis().max(1)).max(1);
                        for step in 0..steps {
                            tokio::time::sleep(tick).await;
                            let done = (step + 1) as f64;
                            cx.progress(done, Some(steps as f64), Some("working"))
                                .map_err(|error| ToolError::failed(error.to_string()))?;
                        }
                        Ok(tool_result(vec![text(reply)]))
                    }
                }
            },
        ),
    ]
}

/// SEP-1330's five enum shapes.
fn enum_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "untitledSingle": { "type": "string", "enum": ["option1", "option2", "option3"] },
            "titledSingle": { "type": "string", "oneOf": [
                { "const": "value1", "title": "First Option" },
                { "const": "value2", "title": "Second Option" },
                { "const": "value3", "title": "Third Option" }
            ] },
            "legacyEnum": { "type": "string", "enum": ["opt1", "opt2", "opt3"], "enumNames": ["Option One", "Option Two", "Option Three"] },
            "untitledMulti": { "type": "array", "items": { "type": "string", "enum": ["option1", "option2", "option3"] } },
            "titledMulti": { "type": "array", "items": { "anyOf": [
                { "const": "value1", "title": "First Choice" },
                { "const": "value2", "title": "Second Choice" },
                { "const": "value3", "title": "Third Choice" }
            ] } }
        }
    })
}

async fn elicitation(
    cx: &RequestContext,
    message: &str,
    schema: Value,
    label: &str,
) -> Result<types::CallToolResult, ToolError> {
    let answer = cx
        .elicit(&json!({ "mode": "form", "message": message, "requestedSchema": schema }))
        .await?;
    let action = serde_json::to_value(answer.action).unwrap_or_default();
    let content = serde_json::to_value(&answer.content).unwrap_or_default();
    Ok(tool_result(vec![text(format!(
        "{label}: action={}, content={content}",
        action.as_str().unwrap_or_default()
    ))]))
}

fn with_resources(builder: protocols_mcp::McpServerBuilder) -> protocols_mcp::McpServerBuilder {
    builder
        .resource(
            resource(
                "test://static-text",
                "static-text",
                "A static text resource",
                "text/plain",
            ),
            |uri, _| async move {
                Ok(read_result(vec![text_contents(
                    uri,
                    "text/plain",
                    "This is the content of the static text resource.",
                )]))
            },
        )
        .resource(
            resource(
                "test://static-binary",
                "static-binary",
                "A static binary resource",
                "image/png",
            ),
            |uri, _| async move {
                Ok(read_result(vec![blob_contents(
                    uri,
                    "image/png",
                    RED_PIXEL_PNG,
                )]))
            },
        )
        .resource(
            resource(
                "test://watched-resource",
                "watched-resource",
                "A resource to subscribe to",
                "text/plain",
            ),
            |uri, _| async move {
                Ok(read_result(vec![text_contents(
                    uri,
                    "text/plain",
                    "Watched resource content.",
                )]))
            },
        )
        .resource_template(
            resource_template(
                "test://template/{id}/data",
                "template-data",
                "Data by id",
                "application/json",
            ),
            |uri, values: HashMap<String, String>, _| async move {
                let id = values.get("id").cloned().unwrap_or_default();
                let body =
                    json!({ "id": id, "templateTest": true, "data": format!("Data for ID: {id}") });
                Ok(read_result(vec![text_contents(
                    uri,
                    "application/json",
                    body.to_string(),
                )]))
            },
        )
}

fn with_prompts(builder: protocols_mcp::McpServerBuilder) -> protocols_mcp::McpServerBuilder {
    builder
        .prompt(
            prompt("test_simple_prompt", "A prompt without arguments", &[]),
            |_, _| async {
                Ok(prompt_result(vec![user_message(text(
                    "This is a simple prompt for testing.",
                ))]))
            },
        )
        .prompt(
            prompt(
                "test_prompt_with_arguments",
                "A prompt with arguments",
                &[
                    ("arg1", "First test argument", true),
                    ("arg2", "Second test argument", true),
                ],
            ),
            |arguments: HashMap<String, String>, _| async move {
                let argument = |name: &str| arguments.get(name).cloned().unwrap_or_default();
                Ok(prompt_result(vec![user_message(text(format!(
                    "Prompt with arguments: arg1='{}', arg2='{}'",
                    argument("arg1"),
                    argument("arg2")
                )))]))
            },
        )
        .prompt(
            prompt(
                "test_prompt_with_embedded_resource",
                "A prompt embedding a resource",
                &[("resourceUri", "URI of the resource to embed", true)],
            ),
            |arguments: HashMap<String, String>, _| async move {
                let uri = arguments.get("resourceUri").cloned().unwrap_or_default();
                Ok(prompt_result(vec![
                    user_message(embedded_text(
                        uri,
                        "text/plain",
                        "Embedded resource content for testing.",
                    )),
                    user_message(text("Please process the embedded resource above.")),
                ]))
            },
        )
        .prompt(
            prompt("test_prompt_with_image", "A prompt with an image", &[]),
            |_, _| async {
                Ok(prompt_result(vec![
                    user_message(image(RED_PIXEL_PNG, "image/png")),
                    user_message(text("Please analyze the image above.")),
                ]))
            },
        )
}

/// Suggestions for `test_prompt_with_arguments`'s `arg1`, by prefix.
fn complete(params: &types::CompleteRequestParams) -> Vec<String> {
    const CANDIDATES: [&str; 3] = ["paris", "park", "party"];
    let reference = serde_json::to_value(&params.ref_).unwrap_or_default();
    if reference.get("name").and_then(Value::as_str) != Some("test_prompt_with_arguments")
        || params.argument.name != "arg1"
    {
        return Vec::new();
    }
    CANDIDATES
        .iter()
        .filter(|candidate| candidate.starts_with(params.argument.value.as_str()))
        .map(|candidate| (*candidate).to_owned())
        .collect()
}
