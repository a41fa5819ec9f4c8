//! The 2026-07-28 rules over real HTTP, each test named as the rule it proves: how a malformed
//! stateless request is refused and with which status, which methods are not found (404) there
//! while a session keeps answering 200, the codes that changed (resource not found), what
//! `server/discover` says of the server, input-required rounds with named requests and a sealed
//! `requestState`, parameters mirrored into `Mcp-Param-*` headers, logging only when asked, and
//! errors that quote what a caller sent, bounded and once. Every answer the core schema
//! defines is validated against the pinned 2026-07-28 schema.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod mcp_common;

use mcp_common::{
    Client, Observed, Schemas, call, fixture_server, spawn, stateless_call,
    stateless_call_declaring, stateless_client,
};
use protocols_mcp::content::{
    prompt, prompt_result, read_result, resource, text, text_contents, tool_result, user_message,
};
use protocols_mcp::{
    InputRequests, Level, McpServer, NoArguments, Revision, ToolDefinition, ToolError,
};
use serde_json::{Value, json};

/// A server with what the 2026-07-28 rules are shown on.
fn stateless_server() -> McpServer {
    McpServer::builder("stateless", "2.0.0")
        .tool(ToolDefinition::new("needs_sampling", "Samples", |_: NoArguments, cx| async move {
            let answer = cx
                .sample(&json!({"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}], "maxTokens": 5}))
                .await?;
            Ok(tool_result(vec![text(answer.model)]))
        }))
        .tool(ToolDefinition::new("two_rounds", "Asks a name, then a colour", |_: NoArguments, cx| async move {
            let name_of = |key: &str, field: &str| -> Result<Option<String>, ToolError> {
                Ok(cx.elicitation_response(key)?.and_then(|answer| {
                    serde_json::to_value(answer.content?).ok()?.get(field)?.as_str().map(str::to_owned)
                }))
            };
            let ask = |key: &str, field: &str| json!({"mode": "form", "message": key, "requestedSchema": {"type": "object", "properties": {field: {"type": "string"}}}});
            match cx.request_state().and_then(|state| state.get("name")).and_then(Value::as_str) {
                None => match name_of("name", "name")? {
                    Some(name) => Err(ToolError::InputRequired(
                        InputRequests::new().elicit("colour", ask("colour", "colour")).with_state(json!({"name": name})),
                    )),
                    None => Err(ToolError::InputRequired(InputRequests::new().elicit("name", ask("name", "name")))),
                },
                Some(name) => match name_of("colour", "colour")? {
                    Some(colour) => Ok(tool_result(vec![text(format!("{name} likes {colour}"))])),
                    None => Err(ToolError::InputRequired(InputRequests::new().elicit("colour", ask("colour", "colour")).with_state(json!({"name": name})))),
                },
            }
        }))
        .tool(ToolDefinition::new("ask_everything", "Asks for roots and a sample at once", |_: NoArguments, cx| async move {
            if cx.roots_response("roots")?.is_some() {
                return Ok(tool_result(vec![text("answered")]));
            }
            Err(ToolError::InputRequired(
                InputRequests::new().list_roots("roots").sample("model", json!({"messages": [], "maxTokens": 1})),
            ))
        }))
        .tool(ToolDefinition::raw(
            "regional",
            "Runs in a region",
            json!({"type": "object", "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "rows": {"type": "integer", "x-mcp-header": "Rows"}
            }}),
            |arguments, _| async move { Ok(tool_result(vec![text(Value::Object(arguments).to_string())])) },
        ))
        .tool(ToolDefinition::new("chatty", "Logs at info", |_: NoArguments, cx| async move {
            cx.log(Level::Info, None, json!("working")).map_err(|error| ToolError::failed(error.to_string()))?;
            Ok(tool_result(vec![text("done")]))
        }))
        .resource(resource("test://known", "known", "A resource", "text/plain"), |uri, _| async move {
            Ok(read_result(vec![text_contents(uri, "text/plain", "known")]))
        })
        .prompt(prompt("contextual", "Asks what context to use", &[]), |_, cx| async move {
            match cx.elicitation_response("context").map_err(|_| protocols_runtime::ErrorObject::invalid_params("bad answer"))? {
                Some(_) => Ok(prompt_result(vec![user_message(text("with context"))])),
                None => Err(cx.require_input(InputRequests::new().elicit("context", json!({"mode": "form", "message": "context?", "requestedSchema": {"type": "object", "properties": {}}})))),
            }
        })
        .build()
        .unwrap()
}

fn tool_call(id: i64, name: &str, params: Value) -> Value {
    let mut params = params;
    params["name"] = json!(name);
    stateless_call(id, "tools/call", params)
}

#[tokio::test]
async fn a_stateless_request_missing_a_required_meta_field_is_invalid_params_with_400() {
    let running = spawn(fixture_server(&Observed::default())).await;
    let client = stateless_client(running.url("/mcp"), "server/discover", None);
    let meta = |fields: Value| json!({"_meta": fields});
    for (id, params) in [
        (1, json!({})),
        (
            2,
            meta(json!({"io.modelcontextprotocol/clientCapabilities": {}})),
        ),
        (
            3,
            meta(json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28"})),
        ),
    ] {
        let refused = client.post(call(id, "server/discover", params)).await;
        assert_eq!(refused.status, 400, "{id}");
        assert_eq!(refused.answer(id)["error"]["code"], -32602, "{id}");
    }
    // clientInfo is only a SHOULD: a request without it is served.
    let without_info = client
        .post(call(
            4,
            "server/discover",
            meta(json!({
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {}
            })),
        ))
        .await;
    assert_eq!(without_info.status, 200);
}

#[tokio::test]
async fn a_meta_version_the_header_does_not_name_is_a_header_mismatch_before_it_is_unsupported() {
    let running = spawn(fixture_server(&Observed::default())).await;
    let mut request = stateless_call(1, "server/discover", json!({}));
    request["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("v999.0.0");
    let client = stateless_client(running.url("/mcp"), "server/discover", None);
    let mismatch = client.post(request.clone()).await;
    assert_eq!(
        (mismatch.status, mismatch.answer(1)["error"]["code"].clone()),
        (400, json!(-32020))
    );
    let mut both = client;
    both.version_header = Some("v999.0.0".to_owned());
    let unsupported = both.post(request).await;
    assert_eq!(unsupported.status, 400);
    let error = &unsupported.answer(1)["error"];
    assert_eq!(error["code"], -32022);
    assert_eq!(error["data"]["requested"], "v999.0.0");
    assert!(
        error["data"]["supported"]
            .as_array()
            .unwrap()
            .contains(&json!("2026-07-28"))
    );
}

#[tokio::test]
async fn a_method_the_stateless_revision_does_not_have_is_404_with_32601_and_a_session_keeps_200() {
    let running = spawn(fixture_server(&Observed::default())).await;
    for method in [
        "initialize",
        "ping",
        "logging/setLevel",
        "resources/subscribe",
        "unknown/method",
    ] {
        let client = stateless_client(running.url("/mcp"), method, None);
        let answered = client.post(stateless_call(7, method, json!({}))).await;
        assert_eq!(answered.status, 404, "{method}");
        assert_eq!(answered.answer(7)["error"]["code"], -32601, "{method}");
        assert!(answered.session.is_none(), "{method} opened a session");
    }
    let mut session = Client::new(running.url("/mcp"));
    session.initialize("2025-11-25").await;
    let unknown = session.post(call(8, "unknown/method", json!({}))).await;
    assert_eq!(
        (unknown.status, unknown.answer(8)["error"]["code"].clone()),
        (200, json!(-32601))
    );
}

#[tokio::test]
async fn a_meta_naming_a_session_revision_is_that_sessions_request_not_an_unsupported_version() {
    let running = spawn(fixture_server(&Observed::default())).await;
    let mut request = stateless_call(1, "tools/list", json!({}));
    request["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("2025-11-25");
    let sessionless = Client::new(running.url("/mcp"));
    let refused = sessionless.post(request.clone()).await;
    assert_eq!(refused.status, 400);
    assert_ne!(
        refused.answer(1)["error"]["code"],
        -32022,
        "2025-11-25 is served, in a session"
    );
    let mut session = Client::new(running.url("/mcp"));
    session.initialize("2025-11-25").await;
    let served = session.post(request).await;
    assert!(served.answer(1)["result"]["tools"].is_array());
}

#[tokio::test]
async fn a_request_needing_a_capability_the_client_did_not_declare_is_32021_with_400() {
    let running = spawn(stateless_server()).await;
    let client = stateless_client(running.url("/mcp"), "tools/call", Some("needs_sampling"));
    let refused = client
        .post(stateless_call_declaring(
            1,
            "tools/call",
            json!({"name": "needs_sampling"}),
            json!({}),
        ))
        .await;
    assert_eq!(refused.status, 400);
    let error = &refused.answer(1)["error"];
    assert_eq!(error["code"], -32021);
    assert_eq!(
        error["data"]["requiredCapabilities"],
        json!({"sampling": {}})
    );
}

#[tokio::test]
async fn a_resource_that_does_not_exist_is_invalid_params_on_2026_07_28_and_32002_in_a_session() {
    let running = spawn(stateless_server()).await;
    let uri = "test://missing";
    let client = stateless_client(running.url("/mcp"), "resources/read", Some(uri));
    let missing = client
        .post(stateless_call(1, "resources/read", json!({"uri": uri})))
        .await;
    let error = &missing.answer(1)["error"];
    assert_eq!(
        (missing.status, error["code"].clone()),
        (400, json!(-32602))
    );
    assert_eq!(error["data"]["uri"], uri);
    let mut session = Client::new(running.url("/mcp"));
    session.initialize("2025-11-25").await;
    let old = session
        .post(call(2, "resources/read", json!({"uri": uri})))
        .await;
    assert_eq!(old.answer(2)["error"]["code"], -32002);
}

#[tokio::test]
async fn discover_names_the_server_in_its_result_meta() {
    let running = spawn(stateless_server()).await;
    let schemas = Schemas::new(Revision::V2026_07_28);
    let client = stateless_client(running.url("/mcp"), "server/discover", None);
    let found = client
        .post(stateless_call(1, "server/discover", json!({})))
        .await;
    let info = &found.answer(1)["result"]["_meta"]["io.modelcontextprotocol/serverInfo"];
    assert_eq!(
        (info["name"].clone(), info["version"].clone()),
        (json!("stateless"), json!("2.0.0"))
    );
    client.check_all(&schemas);
}

#[tokio::test]
async fn an_input_required_round_names_its_requests_and_its_sealed_state_carries_to_the_next() {
    let running = spawn(stateless_server()).await;
    let schemas = Schemas::new(Revision::V2026_07_28);
    let client = stateless_client(running.url("/mcp"), "tools/call", Some("two_rounds"));
    let first = client.post(tool_call(1, "two_rounds", json!({}))).await;
    let round = &first.answer(1)["result"];
    assert_eq!(round["resultType"], "input_required");
    assert!(round["inputRequests"]["name"].is_object());
    assert!(
        round.get("requestState").is_none(),
        "the first round has no state"
    );
    let second = client
        .post(tool_call(
            2,
            "two_rounds",
            json!({"inputResponses": {"name": {"action": "accept", "content": {"name": "Ada"}}}}),
        ))
        .await;
    let round = &second.answer(2)["result"];
    assert!(round["inputRequests"]["colour"].is_object());
    let state = round["requestState"].as_str().unwrap().to_owned();
    assert!(
        !state.contains("Ada"),
        "the state is not readable text: {state}"
    );
    let third = client
        .post(tool_call(
            3,
            "two_rounds",
            json!({
                "inputResponses": {"colour": {"action": "accept", "content": {"colour": "blue"}}},
                "requestState": state
            }),
        ))
        .await;
    assert_eq!(
        third.answer(3)["result"]["content"][0]["text"],
        "Ada likes blue"
    );
    assert_eq!(third.answer(3)["result"]["resultType"], "complete");
    client.check_all(&schemas);
}

#[tokio::test]
async fn a_request_state_that_was_changed_or_issued_for_another_call_is_refused_with_32602() {
    let running = spawn(stateless_server()).await;
    let client = stateless_client(running.url("/mcp"), "tools/call", Some("two_rounds"));
    let round = client
        .post(tool_call(
            1,
            "two_rounds",
            json!({"inputResponses": {"name": {"action": "accept", "content": {"name": "Ada"}}}}),
        ))
        .await;
    let state = round.answer(1)["result"]["requestState"]
        .as_str()
        .unwrap()
        .to_owned();
    let tampered = client
        .post(tool_call(
            2,
            "two_rounds",
            json!({"requestState": format!("{state}-TAMPERED")}),
        ))
        .await;
    assert_eq!(tampered.answer(2)["error"]["code"], -32602);
    // The same state brought to another tool is not that tool's.
    let other = stateless_client(running.url("/mcp"), "tools/call", Some("ask_everything"));
    let moved = other
        .post(tool_call(
            3,
            "ask_everything",
            json!({"requestState": state}),
        ))
        .await;
    assert_eq!(
        (moved.status, moved.answer(3)["error"]["code"].clone()),
        (400, json!(-32602))
    );
}

#[tokio::test]
async fn an_input_request_for_a_capability_the_client_did_not_declare_is_32021() {
    let running = spawn(stateless_server()).await;
    let client = stateless_client(running.url("/mcp"), "tools/call", Some("ask_everything"));
    let refused = client
        .post(stateless_call_declaring(
            1,
            "tools/call",
            json!({"name": "ask_everything"}),
            json!({"sampling": {}}),
        ))
        .await;
    assert_eq!(refused.answer(1)["error"]["code"], -32021);
    assert_eq!(
        refused.answer(1)["error"]["data"]["requiredCapabilities"],
        json!({"roots": {}})
    );
    let asked = client
        .post(stateless_call_declaring(
            2,
            "tools/call",
            json!({"name": "ask_everything"}),
            json!({"sampling": {}, "roots": {}}),
        ))
        .await;
    let requests = asked.answer(2)["result"]["inputRequests"]
        .as_object()
        .unwrap();
    assert_eq!(requests.len(), 2);
}

#[tokio::test]
async fn input_responses_that_are_not_an_object_are_invalid_params_and_a_prompt_can_ask_too() {
    let running = spawn(stateless_server()).await;
    let client = stateless_client(running.url("/mcp"), "tools/call", Some("two_rounds"));
    let refused = client
        .post(tool_call(1, "two_rounds", json!({"inputResponses": null})))
        .await;
    assert_eq!(refused.answer(1)["error"]["code"], -32602);
    let wrong = client
        .post(tool_call(
            2,
            "two_rounds",
            json!({"inputResponses": {"name": 12345}}),
        ))
        .await;
    assert_eq!(wrong.answer(2)["error"]["code"], -32602);
    let prompt = stateless_client(running.url("/mcp"), "prompts/get", Some("contextual"));
    let asked = prompt
        .post(stateless_call(
            3,
            "prompts/get",
            json!({"name": "contextual"}),
        ))
        .await;
    assert_eq!(asked.answer(3)["result"]["resultType"], "input_required");
    let answered = prompt
        .post(stateless_call(4, "prompts/get", json!({"name": "contextual", "inputResponses": {"context": {"action": "accept", "content": {}}}})))
        .await;
    assert!(answered.answer(4)["result"]["messages"].is_array());
}

#[tokio::test]
async fn a_mirrored_parameter_must_come_in_its_header_decoded_equal_to_the_body() {
    let running = spawn(stateless_server()).await;
    let with = |headers: &[(&str, &str)]| {
        let mut client = stateless_client(running.url("/mcp"), "tools/call", Some("regional"));
        for (name, value) in headers {
            client
                .extra_headers
                .push(((*name).to_owned(), (*value).to_owned()));
        }
        client
    };
    let body = || {
        tool_call(
            1,
            "regional",
            json!({"arguments": {"region": "Hello", "rows": 42}}),
        )
    };
    for headers in [
        vec![
            ("mcp-param-region", "=?base64?SGVsbG8=?="),
            ("mcp-param-rows", "42"),
        ],
        vec![("mcp-param-region", "Hello"), ("mcp-param-rows", "42.0")],
    ] {
        let served = with(&headers).post(body()).await;
        assert_eq!(served.status, 200, "{headers:?}");
        assert!(served.answer(1).get("result").is_some());
    }
    for headers in [
        vec![("mcp-param-rows", "42")],
        vec![
            ("mcp-param-region", "=?base64?SGVsbG8?="),
            ("mcp-param-rows", "42"),
        ],
        vec![("mcp-param-region", "SGVsbG8="), ("mcp-param-rows", "42")],
        vec![("mcp-param-region", "Hello"), ("mcp-param-rows", "41")],
    ] {
        let refused = with(&headers).post(body()).await;
        assert_eq!(refused.status, 400, "{headers:?}");
        assert_eq!(refused.answer(1)["error"]["code"], -32020, "{headers:?}");
    }
    let absent = with(&[])
        .post(tool_call(2, "regional", json!({"arguments": {}})))
        .await;
    assert_eq!(absent.status, 200, "no value, no header expected");
}

#[tokio::test]
async fn a_stateless_call_that_asked_for_no_log_level_hears_no_log_messages() {
    let running = spawn(stateless_server()).await;
    let client = stateless_client(running.url("/mcp"), "tools/call", Some("chatty"));
    let quiet = client.post(tool_call(1, "chatty", json!({}))).await;
    assert!(quiet.notifications("notifications/message").is_empty());
    let mut asked = tool_call(2, "chatty", json!({}));
    asked["params"]["_meta"]["io.modelcontextprotocol/logLevel"] = json!("info");
    let told = client.post(asked).await;
    assert_eq!(told.notifications("notifications/message").len(), 1);
}

#[tokio::test]
async fn an_error_repeating_a_callers_name_quotes_it_bounded_and_says_it_once() {
    let running = spawn(stateless_server()).await;
    let long = format!("marker\n{}", "n".repeat(200));
    let mut session = Client::new(running.url("/mcp"));
    session.initialize("2025-11-25").await;
    for (id, method, params) in [
        (1, "tools/call", json!({"name": long})),
        (2, "prompts/get", json!({"name": long})),
        (3, "resources/read", json!({"uri": long})),
    ] {
        let refused = session.post(call(id, method, params)).await;
        let message = refused.answer(id)["error"]["message"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(message.len() < 120, "{method}: {message}");
        assert!(!message.contains('\n'), "{method}: {message}");
        assert_eq!(message.matches("marker").count(), 1, "{method}: {message}");
    }
    let fresh = Client::new(running.url("/mcp"));
    let mistyped = fresh
        .post(
            json!({"jsonrpc": "2.0", "id": 4, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {"sampling": long},
                "clientInfo": {"name": "c", "version": "1"}
            }}),
        )
        .await;
    let message = mistyped.answer(4)["error"]["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(mistyped.answer(4)["error"]["code"], -32602);
    assert!(message.len() < 160 && !message.contains('\n'), "{message}");
}
