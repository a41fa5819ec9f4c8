//! The fixtures of the tasks scenarios (the 2026-07-28 tasks extension, SEP-2663): a tool that
//! never runs as a task, tools that may or must, tools that fail in either way a task can, and
//! tools that wait on the user inside their task — one request at a time or two at once — or
//! gather input in a round before they become one.

use std::time::Duration;

use protocols_mcp::content::{text, tool_result};
use protocols_mcp::{
    InputRequests, McpServerBuilder, NoArguments, RequestContext, TaskSupport, ToolDefinition,
    ToolError, types,
};
use protocols_runtime::ErrorObject;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

/// How long the failing tools work before they fail, so that they become tasks.
const WORK: Duration = Duration::from_millis(500);

#[derive(Debug, Deserialize, JsonSchema)]
struct GreetArguments {
    /// Whom to greet.
    name: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct ComputeArguments {
    /// How long the computation takes, in seconds (0 answers at once).
    seconds: f64,
    /// What the computation is called in its answer.
    #[serde(default)]
    label: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct DeleteArguments {
    /// The file to delete once the user confirms.
    filename: String,
}

fn done(message: String) -> Result<types::CallToolResult, ToolError> {
    Ok(tool_result(vec![text(message)]))
}

/// Asks the user to confirm (inside a task: the task waits in `input_required`).
async fn confirm(cx: &RequestContext, message: String) -> Result<bool, ToolError> {
    let answer = cx
        .elicit(&json!({
            "mode": "form",
            "message": message,
            "requestedSchema": {
                "type": "object",
                "properties": { "confirm": { "type": "boolean" } },
                "required": ["confirm"]
            }
        }))
        .await?;
    Ok(serde_json::to_value(answer.action).ok() == Some(json!("accept")))
}

fn tools() -> Vec<ToolDefinition> {
    vec![
        ToolDefinition::new(
            "greet",
            "Greets at once, never as a task",
            |arguments: GreetArguments, _| async move { done(format!("Hello, {}!", arguments.name)) },
        ),
        ToolDefinition::new(
            "slow_compute",
            "Computes for `seconds` seconds (a task when it takes any time)",
            |arguments: ComputeArguments, _| async move {
                let seconds = arguments.seconds.clamp(0.0, 3600.0);
                if seconds > 0.0 {
                    tokio::time::sleep(Duration::from_secs_f64(seconds)).await;
                }
                let label = arguments.label.unwrap_or_else(|| "computation".to_owned());
                done(format!("{label} took {seconds}s"))
            },
        )
        .task_support(TaskSupport::Optional),
        ToolDefinition::new(
            "failing_job",
            "Works a moment, then reports that it failed (a tool error; runs only as a task)",
            |_: NoArguments, _| async move {
                tokio::time::sleep(WORK).await;
                Err(ToolError::failed("the job failed"))
            },
        )
        .task_support(TaskSupport::Required),
        ToolDefinition::new(
            "protocol_error_job",
            "Works a moment, then fails with a protocol error",
            |_: NoArguments, _| async move {
                tokio::time::sleep(WORK).await;
                Err(ToolError::Protocol(ErrorObject::new(
                    -32603,
                    "the job's backend is unreachable",
                )))
            },
        )
        .task_support(TaskSupport::Optional),
        ToolDefinition::new(
            "confirm_delete",
            "Deletes a file once the user confirms",
            |arguments: DeleteArguments, cx| async move {
                if confirm(&cx, format!("Delete {}?", arguments.filename)).await? {
                    done(format!("Deleted {}", arguments.filename))
                } else {
                    done(format!("Kept {}", arguments.filename))
                }
            },
        )
        .task_support(TaskSupport::Optional),
        ToolDefinition::new(
            "multi_input",
            "Asks the user two things at once",
            |_: NoArguments, cx| async move {
                let (first, second) = tokio::join!(
                    confirm(&cx, "First question?".to_owned()),
                    confirm(&cx, "Second question?".to_owned())
                );
                done(format!("answers: {}, {}", first?, second?))
            },
        )
        .task_support(TaskSupport::Optional),
        ToolDefinition::new(
            "test_tool_with_task",
            "Asks the user's name in a round, then works on it as a task",
            |_: NoArguments, cx| async move {
                let name = cx.elicitation_response("user_name")?.and_then(|answer| {
                    answer
                        .content
                        .and_then(|content| serde_json::to_value(content).ok())
                        .and_then(|content| {
                            content
                                .get("name")
                                .and_then(Value::as_str)
                                .map(str::to_owned)
                        })
                });
                let Some(name) = name else {
                    return Err(ToolError::InputRequired(InputRequests::new().elicit(
                        "user_name",
                        json!({
                            "mode": "form",
                            "message": "What is your name?",
                            "requestedSchema": {
                                "type": "object",
                                "properties": { "name": { "type": "string" } },
                                "required": ["name"]
                            }
                        }),
                    )));
                };
                tokio::time::sleep(Duration::from_millis(100)).await;
                done(format!("Hello, {name}, from a task"))
            },
        )
        .task_support(TaskSupport::Required),
    ]
}

pub(super) fn register(builder: McpServerBuilder) -> McpServerBuilder {
    tools().into_iter().fold(builder, McpServerBuilder::tool)
}
