//! Shared by the A2A integration tests: a test agent (echo; `slow` works in ticks until
//! cancelled; `ask` waits for input), a server on a real socket with the options the tests vary,
//! raw JSON-RPC and REST calls that keep status and headers, and the wire validators — the
//! pinned 1.0.1 proto's definitions (strict: a field the proto does not name is an error, as a
//! ProtoJSON parser reads it) and the pinned 0.3.0 JSON Schema.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::Duration;

use http::{HeaderMap, StatusCode};
use protocols_a2a::card::{AgentCards, Endpoints};
use protocols_a2a::executor::{AgentExecutor, TaskUpdater, message_text, text_part};
use protocols_a2a::push::{PrivateTargets, PushPolicy, PushSender};
use protocols_a2a::server::A2aServer;
use protocols_a2a::service::A2aService;
use protocols_a2a::store::{MemoryTaskStore, TaskLimits};
use protocols_a2a::v1::types::*;
use protocols_runtime::hardening::{AuthPolicy, BearerAuthenticator, HardeningConfig, Principal};
use protocols_runtime::server::Server;
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

/// Echoes; text starting with `slow` works in ticks until cancelled or done; text starting with
/// `ask` asks a question and completes once answered.
pub struct TestExecutor;

impl AgentExecutor for TestExecutor {
    async fn execute(&self, message: Message, updater: TaskUpdater) {
        if let Err(error) = run(&message_text(&message), &updater).await {
            eprintln!("test agent failed: {error}");
            let _ = updater.fail(None).await;
        }
    }
}

async fn run(text: &str, updater: &TaskUpdater) -> Result<(), protocols_a2a::error::A2aError> {
    let continued = updater.task().history.len() > 1;
    if text.starts_with("ask") && !continued {
        return updater
            .require_input(updater.agent_message("what else?"))
            .await;
    }
    if text.starts_with("slow") {
        for n in 0..40 {
            updater
                .working(Some(updater.agent_message(format!("tick {n}"))))
                .await?;
            tokio::select! {
                () = updater.cancellation().cancelled() => return Ok(()),
                () = tokio::time::sleep(Duration::from_millis(100)) => {}
            }
        }
    } else {
        updater.working(None).await?;
    }
    updater
        .text_artifact("echo", format!("echo: {text}"))
        .await?;
    updater.complete(None).await
}

pub struct Running {
    pub base: String,
    pub stop: CancellationToken,
    pub http: reqwest::Client,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// What a test server differs in.
#[derive(Default)]
pub struct Options {
    /// Refuse webhooks to private addresses (the production default).
    pub strict_webhooks: bool,
    /// Serve an extended card to callers holding this bearer token.
    pub extended_card_token: Option<&'static str>,
    /// The task store's bounds (the defaults when `None`).
    pub limits: Option<TaskLimits>,
    /// Require one of these bearer tokens, each naming its subject.
    pub tokens: Vec<(&'static str, &'static str)>,
    /// No push-notification support at all.
    pub without_push: bool,
}

pub fn test_card(name: &str) -> AgentCard {
    AgentCard {
        capabilities: AgentCapabilities {
            streaming: Some(true),
            push_notifications: Some(true),
            ..AgentCapabilities::default()
        },
        default_input_modes: vec!["text/plain".into()],
        default_output_modes: vec!["text/plain".into()],
        description: "test".into(),
        documentation_url: None,
        icon_url: None,
        name: name.into(),
        provider: None,
        security_requirements: Vec::new(),
        security_schemes: Default::default(),
        signatures: Vec::new(),
        skills: vec![AgentSkill {
            description: "echoes".into(),
            examples: vec!["hi".into()],
            id: "echo".into(),
            input_modes: Vec::new(),
            name: "echo".into(),
            output_modes: Vec::new(),
            security_requirements: Vec::new(),
            tags: vec!["test".into()],
        }],
        supported_interfaces: Vec::new(),
        version: "1".into(),
    }
}

pub async fn start() -> Running {
    start_with(Options::default()).await
}

pub async fn start_with(options: Options) -> Running {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let extended = options
        .extended_card_token
        .map(|_| test_card("test agent, extended"));
    let cards = AgentCards::new(
        test_card("test agent"),
        extended,
        Endpoints::at(&base, "/a2a", "/a2a/v1"),
    );
    let private_targets = if options.strict_webhooks {
        PrivateTargets::Refuse
    } else {
        PrivateTargets::Allow
    };
    let push = (!options.without_push).then(|| {
        PushSender::new(
            PushPolicy::default()
                .private_targets(private_targets)
                .first_backoff(Duration::from_millis(20)),
        )
    });
    let store = MemoryTaskStore::with_limits(options.limits.unwrap_or_default());
    let service = A2aService::new(TestExecutor, Arc::new(store), push, cards);
    let mut agent = A2aServer::new(service);
    if let Some(token) = options.extended_card_token {
        agent = agent.with_authenticator(
            BearerAuthenticator::new().with_token(token, Principal::new("tester", Vec::new())),
        );
    }
    let mut builder = Server::builder();
    if !options.tokens.is_empty() {
        let authenticator = options
            .tokens
            .iter()
            .fold(BearerAuthenticator::new(), |auth, (token, subject)| {
                auth.with_token(token, Principal::new(*subject, Vec::new()))
            });
        builder = builder.hardening(
            HardeningConfig::new()
                .authenticator(authenticator)
                .auth_policy(AuthPolicy::RequireScopes(Vec::new())),
        );
    }
    let server = builder
        .routes(agent.routes("/a2a", "/a2a/v1"))
        .build()
        .unwrap();
    let stop = CancellationToken::new();
    let signal = stop.clone();
    tokio::spawn(server.serve_until(listener, async move { signal.cancelled().await }));
    Running {
        base,
        stop,
        http: reqwest::Client::new(),
    }
}

/// An answer as the wire carried it.
#[derive(Debug)]
pub struct Answer {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Value,
}

impl Answer {
    async fn read(response: reqwest::Response) -> Self {
        let status = response.status();
        let headers = response.headers().clone();
        let text = response.text().await.unwrap();
        let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
        Self {
            status,
            headers,
            body,
        }
    }

    /// The JSON-RPC error code, if the body is an error answer.
    pub fn code(&self) -> Option<i64> {
        self.body.pointer("/error/code").and_then(Value::as_i64)
    }
}

/// POSTs `body` to the JSON-RPC endpoint with `version` as `A2A-Version` (none: 0.3).
pub async fn post_rpc(running: &Running, body: &str, version: Option<&str>) -> Answer {
    post_rpc_as(running, body, version, None).await
}

/// [`post_rpc`] with a bearer token.
pub async fn post_rpc_as(
    running: &Running,
    body: &str,
    version: Option<&str>,
    token: Option<&str>,
) -> Answer {
    let mut request = running
        .http
        .post(format!("{}/a2a", running.base))
        .header("content-type", "application/json")
        .body(body.to_owned());
    if let Some(version) = version {
        request = request.header("A2A-Version", version);
    }
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    Answer::read(request.send().await.unwrap()).await
}

/// A JSON-RPC request body.
pub fn rpc(id: i64, method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

/// A REST call under `/a2a/v1` with an optional JSON body and `version` (none: 0.3).
pub async fn rest(
    running: &Running,
    method: http::Method,
    path: &str,
    body: Option<Value>,
    version: Option<&str>,
) -> Answer {
    let mut request = running
        .http
        .request(method, format!("{}/a2a/v1{path}", running.base));
    if let Some(version) = version {
        request = request.header("A2A-Version", version);
    }
    if let Some(body) = body {
        request = request
            .header("content-type", "application/json")
            .body(body.to_string());
    }
    Answer::read(request.send().await.unwrap()).await
}

/// A 1.0 message with one text part, as JSON.
pub fn user_message(text: &str) -> Value {
    json!({"messageId": uuid::Uuid::new_v4().to_string(), "role": "ROLE_USER",
           "parts": [{"text": text}]})
}

/// A 1.0 typed message with one text part.
pub fn typed_message(text: &str) -> Message {
    Message {
        message_id: uuid::Uuid::new_v4().to_string(),
        parts: vec![text_part(text)],
        role: Role::RoleUser,
        ..Message::default()
    }
}

/// Validates A2A 1.0 JSON against the pinned proto's definitions, strictly: every object
/// definition is closed to the properties the proto names.
pub struct V1Wire {
    definitions: Map<String, Value>,
}

impl V1Wire {
    pub fn new() -> Self {
        let model = codegen::samples::revision_model("a2a", "1.0.1").expect("synced cache");
        let mut definitions = Map::new();
        for (name, mut schema) in model.definitions {
            close(&mut schema);
            definitions.insert(name, schema);
        }
        Self { definitions }
    }

    /// Fails the test unless `value` is a valid `definition`.
    pub fn assert_valid(&self, definition: &str, value: &Value) {
        let errors = self.errors(definition, value);
        assert!(errors.is_empty(), "{definition}: {value}\n{errors:#?}");
    }

    /// What is wrong with `value` as a `definition`.
    pub fn errors(&self, definition: &str, value: &Value) -> Vec<String> {
        assert!(
            self.definitions.contains_key(definition),
            "no definition {definition}"
        );
        let schema = json!({
            "$ref": format!("#/definitions/{definition}"),
            "definitions": self.definitions,
        });
        let validator = jsonschema::validator_for(&schema).unwrap();
        validator
            .iter_errors(value)
            .map(|error| format!("{} at {}", error, error.instance_path))
            .collect()
    }

    /// The definition a method's result is, per the generated method table.
    pub fn result_definition(method: &str) -> String {
        let spec = protocols_a2a::v1::METHODS
            .iter()
            .find(|spec| spec.name == method)
            .unwrap();
        let path = spec.result_type.unwrap();
        path.trim_start_matches("types::").to_owned()
    }
}

/// Closes every object schema with properties to those properties (recursively).
fn close(schema: &mut Value) {
    match schema {
        Value::Object(fields) => {
            let closable = fields.get("type") == Some(&json!("object"))
                && fields.contains_key("properties")
                && !fields.contains_key("additionalProperties");
            if closable {
                fields.insert("additionalProperties".into(), Value::Bool(false));
            }
            for value in fields.values_mut() {
                close(value);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(close),
        _ => {}
    }
}

/// Validates A2A 0.3 JSON-RPC answers against the pinned 0.3.0 schema.
pub fn legacy_validator() -> jsonschema::Validator {
    let bytes = codegen::samples::read_cache_file("a2a/0.3.0/a2a.json").expect("synced cache");
    let mut schema: Value = serde_json::from_slice(&bytes).unwrap();
    // Validate a response envelope of the pinned schema's own definitions.
    schema["$ref"] = json!("#/definitions/JSONRPCResponse");
    jsonschema::validator_for(&schema).unwrap()
}

/// Validates a 0.3 definition of the pinned schema.
pub fn legacy_definition_validator(definition: &str) -> jsonschema::Validator {
    let bytes = codegen::samples::read_cache_file("a2a/0.3.0/a2a.json").expect("synced cache");
    let mut schema: Value = serde_json::from_slice(&bytes).unwrap();
    schema["$ref"] = json!(format!("#/definitions/{definition}"));
    jsonschema::validator_for(&schema).unwrap()
}

pub fn assert_valid(validator: &jsonschema::Validator, message: &Value) {
    let errors: Vec<String> = validator
        .iter_errors(message)
        .map(|error| error.to_string())
        .collect();
    assert!(errors.is_empty(), "{message}\n{errors:#?}");
}
