//! Shared by the ACP integration tests: a test agent implementing every v1 agent method, a test
//! editor implementing the v1 client methods, harnesses that connect them over the stdio
//! transport (a duplex pipe, a child's stdio) and over HTTP ([`Link`] for any editor), and a
//! wire recorder that validates every message either side sent against a pinned ACP schema.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context as TaskContext, Poll};
use std::time::Duration;

use protocols_acp::client::{AcpClient, WireDirection, WireObserver};
use protocols_acp::generated::v1;
use protocols_acp::generated::v1::types as t;
use protocols_acp::remote::{AcpEndpoint, LiveConnections, RemoteConfig};
use protocols_acp::serve::{AcpCx, AgentV1, ClientV1};
use protocols_acp::updates::{
    ALLOW_ONCE, REJECT_ONCE, agent_text, allow_or_reject_once, chose, prompt_text,
};
use protocols_acp::{AcpAgentServer, AcpConnection, AcpContext, AcpService, CallError, Extensions};
use protocols_runtime::RequestHandler;
use protocols_runtime::handler::{Context, Reply};
use protocols_runtime::hardening::HardeningConfig;
use protocols_runtime::jsonrpc::{ErrorObject, to_raw};
use protocols_runtime::server::Server;
use protocols_runtime::stdio::{StdioConfig, serve_lines};
use serde_json::value::RawValue;
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// How often the test agent's slow turn streams.
const TICK: Duration = Duration::from_millis(20);

// ---------------------------------------------------------------------------------------------
// The test agent.

#[derive(Debug, Default)]
pub struct TestAgent {
    sessions: Mutex<HashSet<String>>,
    next: AtomicU64,
}

impl TestAgent {
    fn known(&self, id: &t::SessionId) -> Result<(), ErrorObject> {
        let known = self.sessions.lock().unwrap().contains(&id.0);
        known
            .then_some(())
            .ok_or_else(|| ErrorObject::invalid_params("unknown session"))
    }

    async fn read(
        &self,
        session: &t::SessionId,
        path: &str,
        cx: &AcpCx,
    ) -> Result<String, ErrorObject> {
        let client = cx.client();
        let call = t::ToolCallId("read".into());
        let answer = client
            .request_permission(&allow_or_reject_once(session, &call, path))
            .await
            .map_err(|_| ErrorObject::internal_error())?;
        if !chose(&answer.outcome, ALLOW_ONCE) {
            return Ok("permission denied".into());
        }
        let request = t::ReadTextFileRequest {
            limit: None,
            line: None,
            meta: None,
            path: path.into(),
            session_id: session.clone(),
        };
        Ok(match client.read_text_file(&request).await {
            Ok(file) => file.content,
            Err(CallError::NotAdvertised(capability)) => format!("not advertised: {capability}"),
            Err(other) => format!("failed: {other}"),
        })
    }
}

impl v1::Agent for TestAgent {
    type Context = AcpCx;

    async fn initialize(
        &self,
        _: t::InitializeRequest,
        _: &AcpCx,
    ) -> Result<t::InitializeResponse, ErrorObject> {
        Ok(t::InitializeResponse {
            agent_capabilities: Some(t::AgentCapabilities {
                load_session: Some(true),
                ..Default::default()
            }),
            agent_info: None,
            auth_methods: Some(vec![]),
            meta: None,
            protocol_version: t::ProtocolVersion(1),
        })
    }

    async fn authenticate(
        &self,
        _: t::AuthenticateRequest,
        _: &AcpCx,
    ) -> Result<t::AuthenticateResponse, ErrorObject> {
        Ok(t::AuthenticateResponse::default())
    }

    async fn logout(
        &self,
        _: t::LogoutRequest,
        _: &AcpCx,
    ) -> Result<t::LogoutResponse, ErrorObject> {
        Ok(t::LogoutResponse::default())
    }

    async fn session_new(
        &self,
        _: t::NewSessionRequest,
        _: &AcpCx,
    ) -> Result<t::NewSessionResponse, ErrorObject> {
        let id = format!("s-{}", self.next.fetch_add(1, Ordering::Relaxed));
        self.sessions.lock().unwrap().insert(id.clone());
        Ok(t::NewSessionResponse {
            config_options: None,
            meta: None,
            modes: None,
            session_id: t::SessionId(id),
        })
    }

    async fn session_load(
        &self,
        p: t::LoadSessionRequest,
        _: &AcpCx,
    ) -> Result<t::LoadSessionResponse, ErrorObject> {
        self.known(&p.session_id)?;
        Ok(t::LoadSessionResponse::default())
    }

    async fn session_list(
        &self,
        _: t::ListSessionsRequest,
        _: &AcpCx,
    ) -> Result<t::ListSessionsResponse, ErrorObject> {
        let mut ids: Vec<String> = self.sessions.lock().unwrap().iter().cloned().collect();
        ids.sort();
        let sessions = ids
            .into_iter()
            .map(|id| json!({"sessionId": id, "cwd": "/"}))
            .collect::<Vec<_>>();
        Ok(serde_json::from_value(json!({ "sessions": sessions })).unwrap())
    }

    async fn session_resume(
        &self,
        p: t::ResumeSessionRequest,
        _: &AcpCx,
    ) -> Result<t::ResumeSessionResponse, ErrorObject> {
        self.known(&p.session_id)?;
        Ok(t::ResumeSessionResponse::default())
    }

    async fn session_close(
        &self,
        p: t::CloseSessionRequest,
        _: &AcpCx,
    ) -> Result<t::CloseSessionResponse, ErrorObject> {
        self.known(&p.session_id)?;
        Ok(t::CloseSessionResponse::default())
    }

    async fn session_delete(
        &self,
        p: t::DeleteSessionRequest,
        _: &AcpCx,
    ) -> Result<t::DeleteSessionResponse, ErrorObject> {
        self.known(&p.session_id)?;
        self.sessions.lock().unwrap().remove(&p.session_id.0);
        Ok(t::DeleteSessionResponse::default())
    }

    async fn session_set_mode(
        &self,
        p: t::SetSessionModeRequest,
        _: &AcpCx,
    ) -> Result<t::SetSessionModeResponse, ErrorObject> {
        self.known(&p.session_id)?;
        Ok(t::SetSessionModeResponse::default())
    }

    async fn session_set_config_option(
        &self,
        _: t::SetSessionConfigOptionRequest,
        _: &AcpCx,
    ) -> Result<t::SetSessionConfigOptionResponse, ErrorObject> {
        Ok(serde_json::from_value(json!({ "configOptions": [] })).unwrap())
    }

    async fn session_prompt(
        &self,
        p: t::PromptRequest,
        cx: &AcpCx,
    ) -> Result<t::PromptResponse, ErrorObject> {
        self.known(&p.session_id)?;
        let text = prompt_text(&p.prompt);
        let client = cx.client();
        let stop_reason = if let Some(path) = text.strip_prefix("read ") {
            let said = self.read(&p.session_id, path, cx).await?;
            client
                .session_update(&agent_text(&p.session_id, said))
                .unwrap();
            t::StopReason::EndTurn
        } else if text.starts_with("slow") {
            let cancelled = cx.turn_cancelled(&p.session_id.0);
            tokio::pin!(cancelled);
            loop {
                tokio::select! {
                    () = &mut cancelled => break t::StopReason::Cancelled,
                    () = tokio::time::sleep(TICK) => {
                        client.session_update(&agent_text(&p.session_id, "tick")).unwrap();
                    }
                }
            }
        } else {
            client
                .session_update(&agent_text(&p.session_id, text))
                .unwrap();
            t::StopReason::EndTurn
        };
        Ok(t::PromptResponse {
            meta: None,
            stop_reason,
        })
    }
}

/// Answers `_test/echo` with its params; every other extension method is left to the default.
#[derive(Debug, Default)]
pub struct TestExtensions;

impl Extensions for TestExtensions {
    async fn ext_method(
        &self,
        method: &str,
        params: Option<&RawValue>,
        _: &Context<AcpConnection>,
    ) -> Reply {
        match method {
            "_test/echo" => {
                Ok(params.map_or_else(|| to_raw(&json!({})).unwrap(), |raw| raw.to_owned()))
            }
            _ => Err(ErrorObject::method_not_found()),
        }
    }
}

pub fn test_server() -> AcpAgentServer<AgentV1<TestAgent>, protocols_acp::NotServed, TestExtensions>
{
    AcpAgentServer::new(AgentV1(TestAgent::default())).with_extensions(TestExtensions)
}

// ---------------------------------------------------------------------------------------------
// The test editor.

#[derive(Debug, Default)]
pub struct EditorState {
    pub reject: AtomicBool,
    pub permission_questions: AtomicU64,
    pub reads: Mutex<Vec<String>>,
    pub updates: Mutex<Vec<t::SessionNotification>>,
}

impl EditorState {
    /// The text of every `agent_message_chunk` received, in order.
    pub fn texts(&self) -> Vec<String> {
        self.updates
            .lock()
            .unwrap()
            .iter()
            .filter_map(|update| match &update.update {
                t::SessionUpdate::AgentMessageChunk {
                    content: t::ContentBlock::Text { text, .. },
                    ..
                } => Some(text.clone()),
                _ => None,
            })
            .collect()
    }
}

#[derive(Debug, Clone, Default)]
pub struct TestEditor(pub Arc<EditorState>);

pub const FILE_TEXT: &str = "contents of the file";

impl v1::Client for TestEditor {
    type Context = AcpCx;

    async fn session_request_permission(
        &self,
        _: t::RequestPermissionRequest,
        _: &AcpCx,
    ) -> Result<t::RequestPermissionResponse, ErrorObject> {
        self.0.permission_questions.fetch_add(1, Ordering::Relaxed);
        let option = if self.0.reject.load(Ordering::Relaxed) {
            REJECT_ONCE
        } else {
            ALLOW_ONCE
        };
        Ok(t::RequestPermissionResponse {
            meta: None,
            outcome: t::RequestPermissionOutcome::Selected {
                meta: None,
                option_id: t::PermissionOptionId(option.into()),
            },
        })
    }

    async fn fs_read_text_file(
        &self,
        p: t::ReadTextFileRequest,
        _: &AcpCx,
    ) -> Result<t::ReadTextFileResponse, ErrorObject> {
        self.0.reads.lock().unwrap().push(p.path);
        Ok(t::ReadTextFileResponse {
            content: FILE_TEXT.into(),
            meta: None,
        })
    }

    async fn session_update(&self, p: t::SessionNotification, _: &AcpCx) {
        self.0.updates.lock().unwrap().push(p);
    }
}

// ---------------------------------------------------------------------------------------------
// The wire: what each side sent, checked against the pinned schema.

#[derive(Debug, Default)]
pub struct Wire {
    /// Bytes the client wrote (stdio) or each message it posted (HTTP), newline-separated.
    to_agent: Mutex<Vec<u8>>,
    from_agent: Mutex<Vec<u8>>,
}

impl Wire {
    fn record(&self, direction: WireDirection, bytes: &[u8]) {
        let log = match direction {
            WireDirection::ToAgent => &self.to_agent,
            WireDirection::FromAgent => &self.from_agent,
        };
        let mut log = log.lock().unwrap();
        log.extend_from_slice(bytes);
        if !bytes.ends_with(b"\n") {
            log.push(b'\n');
        }
    }

    pub fn observer(self: &Arc<Self>) -> WireObserver {
        let wire = Arc::clone(self);
        Arc::new(move |direction, bytes| wire.record(direction, bytes))
    }

    fn messages(log: &Mutex<Vec<u8>>) -> Vec<Value> {
        log.lock()
            .unwrap()
            .split(|byte| *byte == b'\n')
            .filter(|line| !line.iter().all(u8::is_ascii_whitespace))
            .map(|line| serde_json::from_slice(line).expect("every line on the wire is JSON"))
            .collect()
    }

    pub fn sent_by_client(&self) -> Vec<Value> {
        Self::messages(&self.to_agent)
    }

    pub fn sent_by_agent(&self) -> Vec<Value> {
        Self::messages(&self.from_agent)
    }

    /// Validates every message against the pinned ACP v1 schema; returns how many were checked.
    pub fn assert_valid(&self) -> usize {
        self.assert_valid_against("v1")
    }

    /// Validates every message against the pinned schema of `revision` (`v1`, `v2`: the cache
    /// folder); returns how many were checked.
    pub fn assert_valid_against(&self, revision: &str) -> usize {
        let schema = Schema::load(revision);
        let from_client = self.sent_by_client();
        let from_agent = self.sent_by_agent();
        let client_calls = requests_by_id(&from_client);
        let agent_calls = requests_by_id(&from_agent);
        for message in &from_client {
            schema.check(Side::Client, message, &agent_calls);
        }
        for message in &from_agent {
            schema.check(Side::Agent, message, &client_calls);
        }
        from_client.len() + from_agent.len()
    }
}

fn requests_by_id(messages: &[Value]) -> HashMap<String, String> {
    messages
        .iter()
        .filter_map(|message| {
            let method = message.get("method")?.as_str()?;
            let id = message.get("id")?;
            Some((id.to_string(), method.to_owned()))
        })
        .collect()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Agent,
    Client,
}

impl Side {
    fn name(self) -> &'static str {
        match self {
            Self::Agent => "agent",
            Self::Client => "client",
        }
    }

    fn envelope_title(self) -> &'static str {
        match self {
            Self::Agent => "Agent",
            Self::Client => "Client",
        }
    }

    fn other(self) -> Self {
        match self {
            Self::Agent => Self::Client,
            Self::Client => Self::Agent,
        }
    }
}

/// A pinned ACP schema, as validators.
pub struct Schema {
    root: Value,
}

pub fn schema_path(revision: &str) -> PathBuf {
    schema_file(revision, "schema.json")
}

/// A file of the pinned cache: `revision` is the folder (`v1`, `v2`), `file` e.g.
/// `schema.unstable.json`.
fn schema_file(revision: &str, file: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../schema/cache/acp")
        .join(revision)
        .join(file)
}

impl Schema {
    pub fn load(revision: &str) -> Self {
        Self::load_from(schema_path(revision))
    }

    /// The draft (`schema.unstable.json`) schema beside a revision's stable one.
    pub fn load_unstable(revision: &str) -> Self {
        Self::load_from(schema_file(revision, "schema.unstable.json"))
    }

    /// Fails unless `instance` is valid against the schema's definition named `definition`.
    pub fn assert_instance_of(&self, definition: &str, instance: &Value) {
        self.validate(
            json!({ "$ref": format!("#/$defs/{definition}") }),
            instance,
            definition,
        );
    }

    fn load_from(path: PathBuf) -> Self {
        let text = std::fs::read_to_string(&path).unwrap_or_else(|error| {
            panic!(
                "{}: {error}; fill the cache with `cargo run -p codegen -- sync`",
                path.display()
            )
        });
        Self {
            root: serde_json::from_str(&text).unwrap(),
        }
    }

    fn validate(&self, schema: Value, instance: &Value, what: &str) {
        let mut schema = schema;
        schema["$defs"] = self.root["$defs"].clone();
        schema["$schema"] = self.root["$schema"].clone();
        let validator = jsonschema::validator_for(&schema).unwrap();
        let errors: Vec<String> = validator
            .iter_errors(instance)
            .map(|error| error.to_string())
            .collect();
        assert!(
            errors.is_empty(),
            "{what} violates the schema: {errors:?}\n{instance}"
        );
    }

    /// The definition for `method` of `kind` (Request/Response/Notification) handled by `side`.
    fn definition(&self, method: &str, side: &str, suffix: &str) -> Option<String> {
        let defs = self.root["$defs"].as_object()?;
        defs.iter()
            .find(|(name, def)| {
                def.get("x-method").and_then(Value::as_str) == Some(method)
                    && (def.get("x-side").and_then(Value::as_str) == Some(side)
                        || def.get("x-side").and_then(Value::as_str) == Some("protocol"))
                    && name.ends_with(suffix)
            })
            .map(|(name, _)| name.clone())
    }

    /// Checks one message `sender` sent: its envelope, then its params or result against the
    /// definition of its method (`answered` maps the other side's request ids to methods).
    fn check(&self, sender: Side, message: &Value, answered: &HashMap<String, String>) {
        let branches: Vec<Value> = self.root["anyOf"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|branch| {
                let title = branch["title"].as_str().unwrap_or_default();
                title == sender.envelope_title() || title == "ProtocolLevel"
            })
            .cloned()
            .collect();
        self.validate(
            json!({ "anyOf": branches }),
            message,
            &format!("a message the {} sent", sender.name()),
        );
        let method = message.get("method").and_then(Value::as_str);
        if method.is_some_and(|method| method.starts_with('_')) {
            return;
        }
        let receiver = sender.other().name();
        let (definition, instance) = match (method, message.get("id"), message.get("result")) {
            (Some(method), Some(_), _) => (
                self.definition(method, receiver, "Request"),
                message.get("params"),
            ),
            (Some(method), None, _) => (
                self.definition(method, receiver, "Notification"),
                message.get("params"),
            ),
            (None, Some(id), Some(result)) => {
                let method = answered.get(&id.to_string()).cloned().unwrap_or_default();
                if method.starts_with('_') {
                    return;
                }
                (
                    self.definition(&method, sender.name(), "Response"),
                    Some(result),
                )
            }
            _ => return,
        };
        let definition = definition.unwrap_or_else(|| panic!("no schema definition for {message}"));
        self.validate(
            json!({ "$ref": format!("#/$defs/{definition}") }),
            instance.unwrap_or(&Value::Null),
            &definition,
        );
    }
}

/// Records bytes as they pass, into the wire log of one direction.
struct Tee<T> {
    inner: T,
    wire: Arc<Wire>,
    direction: WireDirection,
}

impl<T: AsyncRead + Unpin> AsyncRead for Tee<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = polled {
            let log = match self.direction {
                WireDirection::ToAgent => &self.wire.to_agent,
                WireDirection::FromAgent => &self.wire.from_agent,
            };
            log.lock()
                .unwrap()
                .extend_from_slice(&buf.filled()[before..]);
        }
        polled
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Tee<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
        data: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write(cx, data);
        if let Poll::Ready(Ok(written)) = polled {
            self.wire
                .to_agent
                .lock()
                .unwrap()
                .extend_from_slice(&data[..written]);
        }
        polled
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(
        mut self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

// ---------------------------------------------------------------------------------------------
// The demo agent binary.

/// The path of `all-protocols`, built once per test binary (a no-op when fresh). Built with the
/// `unstable` feature when these tests have it, so every test binary of one run builds it alike
/// and the demo serves v2 exactly when the v2 tests run.
pub fn built_all_protocols() -> String {
    static BUILT: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    BUILT.get_or_init(build_all_protocols).clone()
}

fn build_all_protocols() -> String {
    let workspace = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut build = std::process::Command::new(cargo);
    build.args([
        "build",
        "--quiet",
        "-p",
        "protocols-examples",
        "--bin",
        "all-protocols",
    ]);
    if cfg!(feature = "unstable") {
        build.args(["--features", "unstable"]);
    }
    let status = build.current_dir(&workspace).status().expect("cargo runs");
    assert!(status.success(), "building all-protocols failed");
    let target =
        std::env::var("CARGO_TARGET_DIR").map_or_else(|_| workspace.join("target"), PathBuf::from);
    target.join("debug/all-protocols").display().to_string()
}

// ---------------------------------------------------------------------------------------------
// Harnesses.

/// A typed client connected to an agent, with the recorded wire; generic over the editor side.
pub struct Link {
    pub client: AcpClient,
    pub wire: Arc<Wire>,
    pub stop: StopOnDrop,
}

/// Stops what a harness started (a server task) when the harness goes, or when fired earlier.
pub struct StopOnDrop(pub CancellationToken);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.cancel();
    }
}

impl Link {
    /// `editor` connected to `server` over the stdio transport, on a duplex pipe.
    pub async fn stdio<H: RequestHandler, S: AcpService>(server: H, editor: S) -> Self {
        let (client_end, agent_end) = tokio::io::duplex(1 << 16);
        let (agent_read, agent_write) = tokio::io::split(agent_end);
        let stop = CancellationToken::new();
        let stopped = stop.clone();
        tokio::spawn(async move {
            tokio::select! {
                _ = serve_lines(&server, agent_read, agent_write, StdioConfig::default()) => {}
                () = stopped.cancelled() => {}
            }
        });
        let (client_read, client_write) = tokio::io::split(client_end);
        let (client, wire) = Self::over_lines(editor, client_read, client_write).await;
        Self {
            client,
            wire,
            stop: StopOnDrop(stop),
        }
    }

    /// `editor` connected over the stdio of a spawned agent process.
    pub async fn child<S: AcpService>(
        command: &mut tokio::process::Command,
        editor: S,
    ) -> (Self, tokio::process::Child) {
        let mut child = command
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("the agent starts");
        let reader = child.stdout.take().unwrap();
        let writer = child.stdin.take().unwrap();
        let (client, wire) = Self::over_lines(editor, reader, writer).await;
        let link = Self {
            client,
            wire,
            stop: StopOnDrop(CancellationToken::new()),
        };
        (link, child)
    }

    async fn over_lines<S: AcpService>(
        editor: S,
        reader: impl AsyncRead + Unpin + Send + 'static,
        writer: impl AsyncWrite + Unpin + Send + 'static,
    ) -> (AcpClient, Arc<Wire>) {
        let wire = Arc::new(Wire::default());
        let reader = Tee {
            inner: reader,
            wire: Arc::clone(&wire),
            direction: WireDirection::FromAgent,
        };
        let writer = Tee {
            inner: writer,
            wire: Arc::clone(&wire),
            direction: WireDirection::ToAgent,
        };
        let client = AcpClient::connect_lines(editor, reader, writer)
            .await
            .unwrap();
        (client, wire)
    }

    /// `editor` connected to `server` over ACP's HTTP transport at `/acp`, hardened as a
    /// deployment would be.
    pub async fn http<H: RequestHandler, S: AcpService>(server: H, editor: S) -> Self {
        let served = serve_remote(server, RemoteConfig::default()).await;
        let link = Self::http_at(&served.url(), editor);
        Self {
            stop: served.stop,
            ..link
        }
    }

    /// `editor` connected over HTTP to an agent already serving at `url`.
    pub fn http_at<S: AcpService>(url: &str, editor: S) -> Self {
        let wire = Arc::new(Wire::default());
        let client = AcpClient::connect_http_observed(editor, url, Some(wire.observer()));
        Self {
            client,
            wire,
            stop: StopOnDrop(CancellationToken::new()),
        }
    }
}

/// An agent served at `/acp` (Streamable HTTP and WebSocket) on a loopback listener, hardened as
/// a deployment would be (without the rate limit); stopped when dropped.
pub struct Served {
    pub address: SocketAddr,
    pub live: LiveConnections,
    pub stop: StopOnDrop,
    pub serving: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Served {
    pub fn url(&self) -> String {
        format!("http://{}/acp", self.address)
    }

    pub fn ws_url(&self) -> String {
        format!("ws://{}/acp", self.address)
    }
}

pub async fn serve_remote<H: RequestHandler>(handler: H, config: RemoteConfig) -> Served {
    let builder = Server::builder().hardening(HardeningConfig::new().rate_limit(None));
    let endpoint = AcpEndpoint::new(handler, config).with_shutdown(builder.drain_token());
    let live = endpoint.live_connections();
    let server = builder
        .routes(endpoint.into_routes("/acp"))
        .build()
        .unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let stop = CancellationToken::new();
    let stopped = stop.clone();
    let serving =
        tokio::spawn(server.serve_until(listener, async move { stopped.cancelled().await }));
    Served {
        address,
        live,
        stop: StopOnDrop(stop),
        serving,
    }
}

/// The test agent's typed client, the test editor's state and the recorded wire.
pub struct Harness {
    pub client: AcpClient,
    pub editor: Arc<EditorState>,
    pub wire: Arc<Wire>,
    pub stop: StopOnDrop,
}

impl Harness {
    fn of(link: Link, editor: Arc<EditorState>) -> Self {
        let Link { client, wire, stop } = link;
        Self {
            client,
            editor,
            wire,
            stop,
        }
    }

    /// Over the stdio transport, on a duplex pipe.
    pub async fn stdio() -> Self {
        Self::stdio_with(test_server()).await
    }

    pub async fn stdio_with<H: RequestHandler>(server: H) -> Self {
        let editor = TestEditor::default();
        let state = Arc::clone(&editor.0);
        Self::of(Link::stdio(server, ClientV1(editor)).await, state)
    }

    /// Over the stdio of a spawned agent process.
    pub async fn child(command: &mut tokio::process::Command) -> (Self, tokio::process::Child) {
        let editor = TestEditor::default();
        let state = Arc::clone(&editor.0);
        let (link, child) = Link::child(command, ClientV1(editor)).await;
        (Self::of(link, state), child)
    }

    /// Over ACP's HTTP transport at `/acp`, hardened as a deployment would be.
    pub async fn http() -> Self {
        let editor = TestEditor::default();
        let state = Arc::clone(&editor.0);
        Self::of(Link::http(test_server(), ClientV1(editor)).await, state)
    }

    /// `initialize` advertising `fs.readTextFile` as told; returns the negotiated version.
    pub async fn initialize(&self, read_text_file: bool) -> u16 {
        let params: t::InitializeRequest = serde_json::from_value(json!({
            "protocolVersion": 1,
            "clientCapabilities": {"fs": {"readTextFile": read_text_file, "writeTextFile": false}},
            "clientInfo": {"name": "acp-tests", "version": "0"}
        }))
        .unwrap();
        self.client
            .v1()
            .initialize(params)
            .await
            .unwrap()
            .protocol_version
            .0
    }

    pub async fn new_session(&self) -> t::SessionId {
        let params: t::NewSessionRequest =
            serde_json::from_value(json!({"cwd": "/", "mcpServers": []})).unwrap();
        self.client
            .v1()
            .session_new(params)
            .await
            .unwrap()
            .session_id
    }

    pub async fn prompt(
        &self,
        session: &t::SessionId,
        text: &str,
    ) -> Result<t::PromptResponse, protocols_runtime::method::ClientError> {
        let params: t::PromptRequest = serde_json::from_value(json!({
            "sessionId": session.0,
            "prompt": [{"type": "text", "text": text}]
        }))
        .unwrap();
        self.client.v1().session_prompt(params).await
    }
}
