//! Shared by the MCP integration tests: a fixture server with one of everything, a real
//! loopback listener, a raw JSON-RPC client that records every message the server emits (JSON
//! bodies and SSE events alike, answering server→client requests as it reads them), and the
//! per-revision JSON Schema validators every recorded message is checked against.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use protocols_mcp::content::{
    audio, prompt, prompt_result, read_result, resource, resource_template, text, text_contents,
    tool_result, user_message,
};
use protocols_mcp::{Level, McpServer, NoArguments, Revision, ToolDefinition, ToolError};
use protocols_runtime::hardening::HardeningConfig;
use protocols_runtime::http::HttpConfig;
use protocols_runtime::server::Server;
use protocols_testkit::{ACCEPT_EITHER, SseReader, json_rpc_post};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

#[derive(Deserialize, JsonSchema)]
pub struct Echo {
    pub message: String,
}

#[derive(Deserialize, JsonSchema)]
pub struct Add {
    pub a: f64,
    pub b: f64,
}

#[derive(Serialize, JsonSchema)]
pub struct Sum {
    pub sum: f64,
}

/// What the fixture's `wait_for_cancel` tool saw.
#[derive(Debug, Default, Clone)]
pub struct Observed {
    /// Whether `wait_for_cancel` ran to its end.
    pub finished: Arc<Mutex<bool>>,
}

/// A server with one of everything.
pub fn fixture_server(observed: &Observed) -> McpServer {
    let finished = Arc::clone(&observed.finished);
    McpServer::builder("fixture", "1.0.0")
        .page_size(2)
        .listen_window(Duration::from_millis(600))
        .tool(
            ToolDefinition::new("echo", "Echoes", |arguments: Echo, _| async move {
                Ok(tool_result(vec![text(arguments.message)]))
            })
            .title("Echo")
            .annotations(protocols_mcp::types::ToolAnnotations {
                read_only_hint: Some(true),
                destructive_hint: Some(false),
                idempotent_hint: Some(true),
                open_world_hint: Some(false),
                title: None,
            })
            .icons(vec![protocols_mcp::types::Icon {
                mime_type: Some("image/png".to_owned()),
                sizes: Some(vec!["48x48".to_owned()]),
                src: "https://example.com/echo.png".to_owned(),
                theme: None,
            }])
            .meta(json!({"com.example/owner": "tests"}).as_object().cloned().unwrap()),
        )
        .tool(ToolDefinition::structured("add", "Adds", |arguments: Add, _| async move {
            Ok(Sum { sum: arguments.a + arguments.b })
        }))
        .tool(ToolDefinition::new("sound", "Returns audio", |_: NoArguments, _| async {
            Ok(tool_result(vec![audio("AAAA", "audio/wav")]))
        }))
        .tool(ToolDefinition::new("fail", "Fails", |_: NoArguments, _| async {
            Err(ToolError::failed("it broke"))
        }))
        .tool(ToolDefinition::new("work", "Logs and reports progress", |_: NoArguments, cx| async move {
            cx.log(Level::Info, Some("work"), json!("started")).map_err(|e| ToolError::failed(e.to_string()))?;
            cx.log(Level::Debug, Some("work"), json!("detail")).map_err(|e| ToolError::failed(e.to_string()))?;
            cx.progress(1.0, Some(2.0), Some("half")).map_err(|e| ToolError::failed(e.to_string()))?;
            cx.progress(2.0, Some(2.0), None).map_err(|e| ToolError::failed(e.to_string()))?;
            Ok(tool_result(vec![text("done")]))
        }))
        .tool(ToolDefinition::new("ask_model", "Samples", |_: NoArguments, cx| async move {
            let answer = cx
                .sample(&json!({"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}], "maxTokens": 10}))
                .await?;
            Ok(tool_result(vec![text(format!("model said {}", answer.model))]))
        }))
        .tool(ToolDefinition::new("ask_user", "Elicits", |_: NoArguments, cx| async move {
            let answer = cx
                .elicit(&json!({"mode": "form", "message": "name?", "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}}))
                .await?;
            let name = answer
                .content
                .and_then(|content| serde_json::to_value(content).ok())
                .and_then(|content| content.get("name").and_then(Value::as_str).map(str::to_owned))
                .unwrap_or_default();
            Ok(tool_result(vec![text(format!("hello {name}"))]))
        }))
        .tool(ToolDefinition::new("wait_for_cancel", "Works until cancelled", move |_: NoArguments, _| {
            let finished = Arc::clone(&finished);
            async move {
                tokio::time::sleep(Duration::from_secs(30)).await;
                *finished.lock().unwrap() = true;
                Ok(tool_result(vec![text("finished")]))
            }
        }))
        .resource(resource("test://a", "a", "A", "text/plain"), |uri, _| async move {
            Ok(read_result(vec![text_contents(uri, "text/plain", "alpha")]))
        })
        .resource_template(
            resource_template("test://item/{id}", "item", "Items", "text/plain"),
            |uri, values: HashMap<String, String>, _| async move {
                Ok(read_result(vec![text_contents(uri, "text/plain", format!("item {}", values["id"]))]))
            },
        )
        .prompt(prompt("greet", "Greets", &[("who", "whom", true)]), |arguments: HashMap<String, String>, _| async move {
            Ok(prompt_result(vec![user_message(text(format!("hello {}", arguments["who"])))]))
        })
        .completion(|params| {
            ["alpha", "beta"].iter().filter(|v| v.starts_with(params.argument.value.as_str())).map(|v| (*v).to_owned()).collect()
        })
        .build()
        .unwrap()
}

/// A server listening on a loopback port until dropped.
pub struct Running {
    pub address: SocketAddr,
    shutdown: CancellationToken,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

impl Running {
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.address)
    }
}

pub async fn spawn<H>(server: McpServer<H>) -> Running
where
    H: protocols_mcp::generated::v2025_11_25::Server<Context = protocols_mcp::RequestContext>
        + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let built = Server::builder()
        .hardening(HardeningConfig::new().bind_address(address))
        .streamable_http("/mcp", server.clone(), HttpConfig::default())
        .legacy_sse("/sse", "/message", server, HttpConfig::default())
        .build()
        .unwrap();
    let shutdown = CancellationToken::new();
    let stop = shutdown.clone();
    tokio::spawn(async move {
        built
            .serve_until(listener, async move { stop.cancelled().await })
            .await
    });
    Running { address, shutdown }
}

/// The pinned schema of `revision`, as synced into the cache.
fn schema_document(revision: Revision) -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../schema/cache/mcp")
        .join(revision.as_str())
        .join("schema.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|error| {
        panic!(
            "{}: {error}; run `cargo run -p codegen -- sync`",
            path.display()
        )
    });
    serde_json::from_str(&text).unwrap()
}

/// Validators for one revision's definitions.
pub struct Schemas {
    revision: Revision,
    document: Value,
    validators: Mutex<HashMap<String, Arc<jsonschema::Validator>>>,
}

impl Schemas {
    pub fn new(revision: Revision) -> Self {
        Self {
            revision,
            document: schema_document(revision),
            validators: Mutex::new(HashMap::new()),
        }
    }

    fn definitions(&self) -> &serde_json::Map<String, Value> {
        self.document
            .get("$defs")
            .or_else(|| self.document.get("definitions"))
            .and_then(Value::as_object)
            .unwrap()
    }

    fn has(&self, name: &str) -> bool {
        self.definitions().contains_key(name)
    }

    fn validator(&self, name: &str) -> Arc<jsonschema::Validator> {
        let mut validators = self.validators.lock().unwrap();
        if let Some(validator) = validators.get(name) {
            return Arc::clone(validator);
        }
        let key = if self.document.get("$defs").is_some() {
            "$defs"
        } else {
            "definitions"
        };
        let mut root = self.document.clone();
        root["$ref"] = json!(format!("#/{key}/{name}"));
        let validator = Arc::new(jsonschema::validator_for(&root).unwrap());
        validators.insert(name.to_owned(), Arc::clone(&validator));
        validator
    }

    /// Panics with every violation when `instance` is not a valid `name`.
    pub fn assert_valid(&self, name: &str, instance: &Value) {
        let validator = self.validator(name);
        let errors: Vec<String> = validator
            .iter_errors(instance)
            .map(|error| format!("{error} at {}", error.instance_path))
            .collect();
        assert!(
            errors.is_empty(),
            "MCP {} {name} invalid: {errors:?}\n{instance:#}",
            self.revision
        );
    }

    /// The request (or notification) definition whose `method` is the constant `method`.
    fn message_definition(&self, method: &str, request: bool) -> Option<String> {
        let suffix = if request { "Request" } else { "Notification" };
        self.definitions()
            .iter()
            .find(|(name, definition)| {
                name.ends_with(suffix)
                    && definition
                        .pointer("/properties/method/const")
                        .and_then(Value::as_str)
                        == Some(method)
            })
            .map(|(name, _)| name.clone())
    }

    /// The definition a result of `method` must satisfy, from the revision's method table.
    fn result_definition(&self, method: &str, result: &Value) -> String {
        if result.get("resultType").and_then(Value::as_str) == Some("input_required") {
            return "InputRequiredResult".to_owned();
        }
        if method == "tools/call" && result.get("task").is_some() {
            return "CreateTaskResult".to_owned();
        }
        let table = self.revision.methods();
        let rust = table
            .iter()
            .find(|spec| spec.name == method)
            .and_then(|spec| spec.result_type)
            .unwrap_or_else(|| panic!("{method} has no result type in MCP {}", self.revision));
        let name = rust.rsplit("::").next().unwrap().to_owned();
        if self.has(&name) {
            return name;
        }
        // Codegen names a 2026-07-28 result reached through its `…ResultResponse` wrapper
        // `…ResultResponseResult`; the schema's own definition is `…Result`.
        let stripped = name.trim_end_matches("ResponseResult").to_owned();
        assert!(
            self.has(&stripped),
            "no definition for {name} in MCP {}",
            self.revision
        );
        stripped
    }

    /// Validates one message the server emitted; `asked` maps request ids to their methods.
    pub fn check_emitted(&self, message: &Value, asked: &HashMap<String, String>) {
        self.assert_valid("JSONRPCMessage", message);
        let method = message.get("method").and_then(Value::as_str);
        match (method, message.get("id")) {
            (Some(method), Some(_)) => {
                let definition = self
                    .message_definition(method, true)
                    .unwrap_or_else(|| panic!("no request {method}"));
                self.assert_valid(&definition, message);
            }
            (Some(method), None) => {
                let definition = self
                    .message_definition(method, false)
                    .unwrap_or_else(|| panic!("no notification {method}"));
                self.assert_valid(&definition, message);
            }
            (None, Some(id)) => {
                if let Some(result) = message.get("result") {
                    let method = asked
                        .get(&id.to_string())
                        .unwrap_or_else(|| panic!("answer to unknown id {id}"));
                    self.assert_valid(&self.result_definition(method, result), result);
                }
            }
            (None, None) => {}
        }
    }
}

/// How the client answers a server→client request.
pub type Responder = Arc<dyn Fn(&str, &Value) -> Value + Send + Sync>;

/// The answers a well-behaved client gives.
pub fn default_responder() -> Responder {
    Arc::new(|method, _params| match method {
        "sampling/createMessage" => {
            json!({"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "test-model", "stopReason": "endTurn"})
        }
        "elicitation/create" => json!({"action": "accept", "content": {"name": "Ada"}}),
        "roots/list" => json!({"roots": []}),
        _ => json!({}),
    })
}

/// One HTTP exchange's outcome.
#[derive(Debug)]
pub struct Exchange {
    pub status: u16,
    pub session: Option<String>,
    pub content_type: String,
    /// The `Retry-After` header, when there is one.
    pub retry_after: Option<String>,
    /// Every JSON-RPC message the server sent in the body (requests it sent were answered).
    pub messages: Vec<Value>,
}

impl Exchange {
    /// The answer to request `id`.
    pub fn answer(&self, id: i64) -> &Value {
        self.messages
            .iter()
            .find(|message| {
                message.get("id") == Some(&json!(id)) && message.get("method").is_none()
            })
            .unwrap_or_else(|| panic!("no answer to {id} in {:#?}", self.messages))
    }

    pub fn notifications(&self, method: &str) -> Vec<&Value> {
        self.messages
            .iter()
            .filter(|message| {
                message.get("method") == Some(&json!(method)) && message.get("id").is_none()
            })
            .collect()
    }
}

/// A raw Streamable HTTP client that records everything.
pub struct Client {
    pub http: reqwest::Client,
    pub url: String,
    pub session: Option<String>,
    pub version_header: Option<String>,
    pub extra_headers: Vec<(String, String)>,
    pub responder: Responder,
    /// Every message the server emitted, in order.
    pub emitted: Arc<Mutex<Vec<Value>>>,
    /// Request id → method, for validating answers.
    pub asked: Arc<Mutex<HashMap<String, String>>>,
}

impl Client {
    pub fn new(url: String) -> Self {
        Self {
            http: reqwest::Client::new(),
            url,
            session: None,
            version_header: None,
            extra_headers: Vec::new(),
            responder: default_responder(),
            emitted: Arc::default(),
            asked: Arc::default(),
        }
    }

    /// `body` POSTed with this client's session, version and extra headers, unsent (for a test
    /// that reads the raw answer).
    pub fn request(&self, body: &Value) -> reqwest::RequestBuilder {
        let session = self.session.as_deref().map(|id| ("mcp-session-id", id));
        let version = self.version_header.as_deref();
        let version = version.map(|version| ("mcp-protocol-version", version));
        let extra = self.extra_headers.iter();
        let extra = extra.map(|(name, value)| (name.as_str(), value.as_str()));
        let headers = session.into_iter().chain(version).chain(extra);
        json_rpc_post(&self.http, &self.url, ACCEPT_EITHER, headers, body)
    }

    fn remember(&self, body: &Value) {
        let mut asked = self.asked.lock().unwrap();
        for message in body
            .as_array()
            .cloned()
            .unwrap_or_else(|| vec![body.clone()])
        {
            if let (Some(id), Some(method)) = (
                message.get("id"),
                message.get("method").and_then(Value::as_str),
            ) {
                asked.insert(id.to_string(), method.to_owned());
            }
        }
    }

    /// POSTs `body` and reads the whole answer (JSON or an SSE stream to its end).
    pub async fn post(&self, body: Value) -> Exchange {
        self.remember(&body);
        let response = self.request(&body).send().await.unwrap();
        let status = response.status().as_u16();
        let session = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let content_type = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        let retry_after = response
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let messages = if content_type.starts_with("text/event-stream") {
            self.read_stream(response).await
        } else {
            let bytes = response.bytes().await.unwrap();
            match serde_json::from_slice::<Value>(&bytes) {
                Ok(Value::Array(items)) => items,
                Ok(single) => vec![single],
                Err(_) => Vec::new(),
            }
        };
        self.emitted
            .lock()
            .unwrap()
            .extend(messages.iter().cloned());
        Exchange {
            status,
            session,
            content_type,
            retry_after,
            messages,
        }
    }

    /// Reads SSE events until the stream ends, answering server→client requests on the way.
    async fn read_stream(&self, response: reqwest::Response) -> Vec<Value> {
        let mut messages = Vec::new();
        let mut events = SseReader::new(response);
        while let Some((_, message)) = events.next_json().await {
            if let (Some(id), Some(method)) = (
                message.get("id"),
                message.get("method").and_then(Value::as_str),
            ) {
                let result =
                    (self.responder)(method, message.get("params").unwrap_or(&Value::Null));
                let answer = json!({"jsonrpc": "2.0", "id": id, "result": result});
                let status = self
                    .request(&answer)
                    .send()
                    .await
                    .unwrap()
                    .status()
                    .as_u16();
                assert_eq!(status, 202, "answering {method}");
            }
            messages.push(message);
        }
        messages
    }

    /// `initialize` offering `offered`; keeps the session and (when the revision has one) the
    /// version header.
    pub async fn initialize(&mut self, offered: &str) -> Exchange {
        let exchange = self
            .post(
                json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                    "protocolVersion": offered,
                    "capabilities": {"sampling": {}, "elicitation": {}, "roots": {}},
                    "clientInfo": {"name": "test-client", "version": "1.0.0"}
                }}),
            )
            .await;
        self.session = exchange.session.clone();
        let negotiated = exchange.answer(0)["result"]["protocolVersion"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        if negotiated
            .parse::<Revision>()
            .is_ok_and(Revision::has_version_header)
        {
            self.version_header = Some(negotiated);
        }
        let initialized = self
            .post(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        assert_eq!(initialized.status, 202);
        exchange
    }

    /// Validates every message recorded so far against `schemas`.
    pub fn check_all(&self, schemas: &Schemas) -> usize {
        let asked = self.asked.lock().unwrap().clone();
        let emitted = self.emitted.lock().unwrap().clone();
        for message in &emitted {
            schemas.check_emitted(message, &asked);
        }
        emitted.len()
    }
}

pub fn call(id: i64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// The `_meta` a 2026-07-28 client sends with every request, declaring `capabilities`.
pub fn stateless_meta(capabilities: Value) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": capabilities,
        "io.modelcontextprotocol/clientInfo": {"name": "stateless-client", "version": "1.0.0"}
    })
}

/// A 2026-07-28 request declaring elicitation and sampling.
pub fn stateless_call(id: i64, method: &str, params: Value) -> Value {
    stateless_call_declaring(
        id,
        method,
        params,
        json!({"elicitation": {"form": {}}, "sampling": {}}),
    )
}

/// A 2026-07-28 request declaring `capabilities`.
pub fn stateless_call_declaring(
    id: i64,
    method: &str,
    mut params: Value,
    capabilities: Value,
) -> Value {
    params["_meta"] = stateless_meta(capabilities);
    call(id, method, params)
}

/// A client sending 2026-07-28's headers: the version, `Mcp-Method` and, when the method
/// addresses one thing, `Mcp-Name`.
pub fn stateless_client(url: String, method: &str, name: Option<&str>) -> Client {
    let mut client = Client::new(url);
    client.version_header = Some("2026-07-28".to_owned());
    client
        .extra_headers
        .push(("mcp-method".to_owned(), method.to_owned()));
    if let Some(name) = name {
        client
            .extra_headers
            .push(("mcp-name".to_owned(), name.to_owned()));
    }
    client
}
