//! The fixtures of the 2026-07-28 stateless scenarios: tools (and a prompt) that gather what
//! they need from the client in input-required rounds (SEP-2322) under keys of their own, carry
//! a sealed `requestState` between rounds, and ask only for what the client declared; and the
//! diagnostic tools the suite probes the stateless rules with.

use protocols_mcp::content::{prompt, prompt_result, text, tool_result, user_message};
use protocols_mcp::{
    InputRequests, Level, McpServerBuilder, NoArguments, RequestContext, ToolDefinition, ToolError,
    types,
};
use serde_json::{Value, json};

/// An elicitation request for one string field.
fn ask_for(message: &str, field: &str) -> Value {
    json!({
        "mode": "form",
        "message": message,
        "requestedSchema": {
            "type": "object",
            "properties": { field: { "type": "string" } },
            "required": [field]
        }
    })
}

/// A one-message sampling request.
fn ask_model(prompt: &str, max_tokens: u32) -> Value {
    json!({
        "messages": [{ "role": "user", "content": { "type": "text", "text": prompt } }],
        "maxTokens": max_tokens
    })
}

/// The text field `field` of an accepted elicitation answered under `key`.
fn elicited(cx: &RequestContext, key: &str, field: &str) -> Result<Option<String>, ToolError> {
    Ok(cx.elicitation_response(key)?.map(|answer| {
        answer
            .content
            .and_then(|content| serde_json::to_value(content).ok())
            .and_then(|content| {
                content
                    .get(field)
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            })
            .unwrap_or_default()
    }))
}

fn done(message: String) -> Result<types::CallToolResult, ToolError> {
    Ok(tool_result(vec![text(message)]))
}

fn needs(requests: InputRequests) -> Result<types::CallToolResult, ToolError> {
    Err(ToolError::InputRequired(requests))
}

/// `user_name`: one elicitation, then a greeting.
fn elicitation_tool() -> ToolDefinition {
    ToolDefinition::new(
        "test_input_required_result_elicitation",
        "Asks the user's name in an input-required round, then greets them",
        |_: NoArguments, cx| async move {
            match elicited(&cx, "user_name", "name")? {
                Some(name) => done(format!("Hello, {name}!")),
                None => needs(
                    InputRequests::new().elicit("user_name", ask_for("What is your name?", "name")),
                ),
            }
        },
    )
}

/// `capital_question`: one sampling request, then the model's answer.
fn sampling_tool() -> ToolDefinition {
    ToolDefinition::new(
        "test_input_required_result_sampling",
        "Asks the client's model a question in an input-required round",
        |_: NoArguments, cx| async move {
            match cx.sampling_response("capital_question")? {
                Some(answer) => {
                    let reply = serde_json::to_value(&answer.content)
                        .ok()
                        .and_then(|content| {
                            content
                                .get("text")
                                .and_then(Value::as_str)
                                .map(str::to_owned)
                        })
                        .unwrap_or_default();
                    done(format!("The model said: {reply}"))
                }
                None => needs(InputRequests::new().sample(
                    "capital_question",
                    ask_model("What is the capital of France?", 100),
                )),
            }
        },
    )
}

/// `client_roots`: the client's roots, then what they are.
fn roots_tool() -> ToolDefinition {
    ToolDefinition::new(
        "test_input_required_result_list_roots",
        "Asks the client for its roots in an input-required round",
        |_: NoArguments, cx| async move {
            match cx.roots_response("client_roots")? {
                Some(listed) => {
                    let uris: Vec<&str> =
                        listed.roots.iter().map(|root| root.uri.as_str()).collect();
                    done(format!("The client's roots: {}", uris.join(", ")))
                }
                None => needs(InputRequests::new().list_roots("client_roots")),
            }
        },
    )
}

/// A confirmation that must come back with the state the first round sealed.
fn request_state_tool(name: &'static str, description: &'static str) -> ToolDefinition {
    ToolDefinition::new(name, description, |_: NoArguments, cx| async move {
        let confirmed = cx.elicitation_response("confirm")?;
        match (confirmed, cx.request_state()) {
            (Some(_), Some(state)) if state.get("awaiting") == Some(&json!("confirm")) => {
                done("Confirmed; state-ok".to_owned())
            }
            _ => needs(
                InputRequests::new()
                    .elicit(
                        "confirm",
                        json!({
                            "mode": "form",
                            "message": "Please confirm",
                            "requestedSchema": {
                                "type": "object",
                                "properties": { "ok": { "type": "boolean" } },
                                "required": ["ok"]
                            }
                        }),
                    )
                    .with_state(json!({ "awaiting": "confirm" })),
            ),
        }
    })
}

/// Elicitation, sampling and roots in one round.
fn multiple_inputs_tool() -> ToolDefinition {
    ToolDefinition::new(
        "test_input_required_result_multiple_inputs",
        "Asks for a name, a greeting and the roots in one input-required round",
        |_: NoArguments, cx| async move {
            let name = elicited(&cx, "user_name", "name")?;
            let greeting = cx.sampling_response("greeting")?;
            let roots = cx.roots_response("client_roots")?;
            match (name, greeting, roots, cx.request_state()) {
                (Some(name), Some(_), Some(roots), Some(_)) => {
                    done(format!("Hello, {name}; {} root(s)", roots.roots.len()))
                }
                _ => needs(
                    InputRequests::new()
                        .elicit("user_name", ask_for("What is your name?", "name"))
                        .sample("greeting", ask_model("Generate a greeting", 50))
                        .list_roots("client_roots")
                        .with_state(json!({ "round": 1 })),
                ),
            }
        },
    )
}

/// Two rounds, the second's state carrying what the first gathered.
fn multi_round_tool() -> ToolDefinition {
    ToolDefinition::new(
        "test_input_required_result_multi_round",
        "Asks a name, then a colour, carrying the name in its request state",
        |_: NoArguments, cx| async move {
            let step = cx
                .request_state()
                .and_then(|state| state.get("step"))
                .and_then(Value::as_u64);
            match step {
                Some(1) => match elicited(&cx, "step1", "name")? {
                    Some(name) => needs(
                        InputRequests::new()
                            .elicit(
                                "step2",
                                ask_for("Step 2: What is your favorite color?", "color"),
                            )
                            .with_state(json!({ "step": 2, "name": name })),
                    ),
                    None => needs(first_round()),
                },
                Some(2) => {
                    let name = cx
                        .request_state()
                        .and_then(|state| state.get("name"))
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned();
                    match elicited(&cx, "step2", "color")? {
                        Some(color) => done(format!("{name} likes {color}")),
                        None => needs(first_round()),
                    }
                }
                _ => needs(first_round()),
            }
        },
    )
}

fn first_round() -> InputRequests {
    InputRequests::new()
        .elicit("step1", ask_for("Step 1: What is your name?", "name"))
        .with_state(json!({ "step": 1 }))
}

/// Asks only for what the client declared it can answer.
fn capabilities_tool() -> ToolDefinition {
    ToolDefinition::new(
        "test_input_required_result_capabilities",
        "Asks the client only what its declared capabilities allow",
        |_: NoArguments, cx| async move {
            let answered =
                cx.input_response("question").is_some() || cx.input_response("name").is_some();
            let mut requests = InputRequests::new();
            if cx.client_supports("sampling") {
                requests = requests.sample("question", ask_model("Say hello", 20));
            }
            if cx.client_supports("elicitation") {
                requests = requests.elicit("name", ask_for("What is your name?", "name"));
            }
            if answered || requests.is_empty() {
                return done("Answered with what the client can give".to_owned());
            }
            needs(requests)
        },
    )
}

/// The suite's diagnostic tools for the stateless rules.
fn diagnostic_tools() -> Vec<ToolDefinition> {
    vec![
        ToolDefinition::new(
            "test_missing_capability",
            "Needs the client's sampling capability",
            |_: NoArguments, cx| async move {
                let answer = cx.sample(&ask_model("Say hello", 10)).await?;
                done(format!("The model ({}) answered", answer.model))
            },
        ),
        ToolDefinition::new(
            "test_streaming_elicitation",
            "Asks the user while the call is open (an input-required round on 2026-07-28)",
            |_: NoArguments, cx| async move {
                let answer = cx.elicit(&ask_for("What is your name?", "name")).await?;
                done(format!("action={:?}", answer.action))
            },
        ),
        ToolDefinition::new(
            "test_logging_tool",
            "Logs at info while it works (sent only to a client that asked for a level)",
            |_: NoArguments, cx| async move {
                cx.log(Level::Info, Some("test_logging_tool"), json!("working"))
                    .map_err(|error| ToolError::failed(error.to_string()))?;
                done("Logged".to_owned())
            },
        ),
    ]
}

/// Every fixture of the stateless scenarios.
pub(super) fn register(builder: McpServerBuilder) -> McpServerBuilder {
    let tools = [
        elicitation_tool(),
        sampling_tool(),
        roots_tool(),
        request_state_tool(
            "test_input_required_result_request_state",
            "Confirms, checking the state its first round sealed",
        ),
        request_state_tool(
            "test_input_required_result_tampered_state",
            "Confirms, refusing a state that is not the one it sealed",
        ),
        multiple_inputs_tool(),
        multi_round_tool(),
        capabilities_tool(),
    ]
    .into_iter()
    .chain(diagnostic_tools());
    tools.fold(builder, McpServerBuilder::tool).prompt(
        prompt(
            "test_input_required_result_prompt",
            "A prompt that asks what context to use",
            &[],
        ),
        |_, cx| async move {
            match elicited(&cx, "user_context", "context").map_err(protocol)? {
                Some(context) => Ok(prompt_result(vec![user_message(text(format!(
                    "Use this context: {context}"
                )))])),
                None => Err(cx.require_input(InputRequests::new().elicit(
                    "user_context",
                    ask_for("What context should the prompt use?", "context"),
                ))),
            }
        },
    )
}

/// A tool-side error as a protocol error (what a prompt answers with).
fn protocol(error: ToolError) -> protocols_runtime::ErrorObject {
    match error {
        ToolError::Protocol(error) => error,
        other => protocols_runtime::ErrorObject::invalid_params(other.to_string()),
    }
}
