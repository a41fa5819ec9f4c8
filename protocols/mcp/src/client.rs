//! The MCP client side: transports implementing the runtime's `RpcClient`, so every revision's
//! generated typed proxy (`vX::RemoteServer`) calls through them. [`HttpClient`] speaks
//! Streamable HTTP (session and version headers kept from `initialize`, SSE answers read to the
//! matching response, server→client requests answered as they arrive); [`StdioClient`] spawns a
//! server process and talks newline-delimited JSON-RPC to it; [`LegacySseClient`] speaks the
//! 2024-11-05 HTTP+SSE transport (one long `GET` stream carrying every answer, `POST`s to the
//! endpoint it names). What the client answers to the
//! server's own requests (sampling, elicitation, roots) is a [`Callbacks`] of the caller's.

use std::collections::HashMap;
use std::process::Stdio;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt as _;
use http::HeaderMap;
use protocols_runtime::handler::Context;
use protocols_runtime::jsonrpc::to_raw;
use protocols_runtime::method::{ClientError, RpcClient};
use protocols_runtime::sse::SseDecoder;
use protocols_runtime::stdio::StdioConfig;
use protocols_runtime::{ErrorObject, Notification, Profile, Reply, Request, RequestHandler};
use serde_json::value::RawValue;
use serde_json::{Value, json};
use tokio::process::{Child, Command};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::revision::Revision;
use crate::server::CANCELLATION;
use crate::stateless::{SESSION_HEADER, VERSION_HEADER};
use crate::tools::BoxFuture;

/// The largest SSE event the client accepts.
const MAX_EVENT_BYTES: usize = 4 * 1024 * 1024;

type AnswerFn = Arc<dyn Fn(String, Value) -> BoxFuture<Result<Value, ErrorObject>> + Send + Sync>;

/// How the client answers the server's requests, and where the server's notifications go.
#[derive(Clone)]
pub struct Callbacks {
    answer: AnswerFn,
    notifications: Arc<Mutex<Vec<Value>>>,
}

impl std::fmt::Debug for Callbacks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Callbacks").finish_non_exhaustive()
    }
}

impl Default for Callbacks {
    /// Declines every server request (-32601) and keeps notifications.
    fn default() -> Self {
        Self::new(|_, _| async { Err(ErrorObject::method_not_found()) })
    }
}

impl Callbacks {
    /// Answers the server's requests with `answer(method, params)`.
    pub fn new<F, Fut>(answer: F) -> Self
    where
        F: Fn(String, Value) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Value, ErrorObject>> + Send + 'static,
    {
        let answer = Arc::new(answer);
        Self {
            answer: Arc::new(move |method, params| Box::pin(answer(method, params))),
            notifications: Arc::default(),
        }
    }

    /// The notifications received so far (whole messages), leaving none behind.
    pub fn take_notifications(&self) -> Vec<Value> {
        self.notifications
            .lock()
            .map(|mut kept| std::mem::take(&mut *kept))
            .unwrap_or_default()
    }

    fn keep(&self, notification: Value) {
        if let Ok(mut kept) = self.notifications.lock() {
            kept.push(notification);
        }
    }
}

fn transport_error(error: impl std::error::Error + Send + Sync + 'static) -> ClientError {
    ClientError::Transport(Box::new(error))
}

/// A failure the transport describes in words.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct TransportFailure(String);

fn failure(message: impl Into<String>) -> ClientError {
    ClientError::Transport(Box::new(TransportFailure(message.into())))
}

/// A JSON-RPC response message as the outcome of a call.
fn outcome(message: &Value) -> Result<Box<RawValue>, ClientError> {
    if let Some(error) = message.get("error") {
        let error: ErrorObject = serde_json::from_value(error.clone())
            .map_err(|_| failure(format!("malformed error answer: {message}")))?;
        return Err(ClientError::Rejected(error));
    }
    let result = message.get("result").cloned().unwrap_or_else(|| json!({}));
    to_raw(&result).map_err(transport_error)
}

fn envelope(id: Option<i64>, method: &str, params: Option<&RawValue>) -> Value {
    let mut message = json!({ "jsonrpc": "2.0", "method": method });
    if let Some(id) = id {
        message["id"] = json!(id);
    }
    if let Some(params) = params.and_then(|raw| serde_json::from_str::<Value>(raw.get()).ok()) {
        message["params"] = params;
    }
    message
}

/// What the HTTP client remembers between calls.
#[derive(Debug, Default)]
struct HttpState {
    session: Option<String>,
    version: Option<String>,
}

/// An MCP client over Streamable HTTP.
#[derive(Debug)]
pub struct HttpClient {
    http: reqwest::Client,
    url: String,
    state: Mutex<HttpState>,
    next_id: AtomicI64,
    callbacks: Callbacks,
}

impl HttpClient {
    pub fn new(url: impl Into<String>, callbacks: Callbacks) -> Self {
        Self {
            http: reqwest::Client::new(),
            url: url.into(),
            state: Mutex::new(HttpState::default()),
            next_id: AtomicI64::new(1),
            callbacks,
        }
    }

    pub fn callbacks(&self) -> &Callbacks {
        &self.callbacks
    }

    /// The session the server assigned, once it has.
    pub fn session(&self) -> Option<String> {
        self.state
            .lock()
            .ok()
            .and_then(|state| state.session.clone())
    }

    /// Opens the session: `initialize` offering `revision` with `capabilities`, then
    /// `notifications/initialized`. Returns the server's `initialize` result.
    ///
    /// # Errors
    /// The server refused or could not be reached.
    pub async fn initialize(
        &self,
        revision: Revision,
        capabilities: Value,
    ) -> Result<Value, ClientError> {
        let params = json!({
            "protocolVersion": revision.as_str(),
            "capabilities": capabilities,
            "clientInfo": { "name": "protocols-mcp", "version": env!("CARGO_PKG_VERSION") }
        });
        let raw = self.call("initialize", to_raw(&params).ok()).await?;
        let result: Value = serde_json::from_str(raw.get()).map_err(transport_error)?;
        let negotiated = result
            .get("protocolVersion")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if negotiated
            .parse::<Revision>()
            .is_ok_and(Revision::has_version_header)
            && let Ok(mut state) = self.state.lock()
        {
            state.version = Some(negotiated.to_owned());
        }
        self.notify("notifications/initialized", None).await?;
        Ok(result)
    }

    /// Ends the session (`DELETE`).
    ///
    /// # Errors
    /// The server could not be reached.
    pub async fn close(&self) -> Result<u16, ClientError> {
        let Some(session) = self.session() else {
            return Ok(204);
        };
        let response = self
            .http
            .delete(&self.url)
            .header(SESSION_HEADER, session)
            .send()
            .await
            .map_err(transport_error)?;
        Ok(response.status().as_u16())
    }

    fn post(&self, message: &Value) -> reqwest::RequestBuilder {
        let mut request = self
            .http
            .post(&self.url)
            .header(http::header::CONTENT_TYPE, "application/json")
            .header(http::header::ACCEPT, "application/json, text/event-stream")
            .body(message.to_string());
        if let Ok(state) = self.state.lock() {
            if let Some(session) = &state.session {
                request = request.header(SESSION_HEADER, session);
            }
            if let Some(version) = &state.version {
                request = request.header(VERSION_HEADER, version);
            }
        }
        request
    }

    fn remember_session(&self, headers: &HeaderMap) {
        let session = headers
            .get(SESSION_HEADER)
            .and_then(|value| value.to_str().ok());
        if let (Some(session), Ok(mut state)) = (session, self.state.lock()) {
            state.session = Some(session.to_owned());
        }
    }

    /// Sends one message; for a request, reads until its answer arrives.
    async fn exchange(
        &self,
        message: &Value,
        id: Option<i64>,
    ) -> Result<Option<Value>, ClientError> {
        let response = self.post(message).send().await.map_err(transport_error)?;
        self.remember_session(response.headers());
        let status = response.status();
        let is_stream = response
            .headers()
            .get(http::header::CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .is_some_and(|value| value.starts_with("text/event-stream"));
        if is_stream {
            return self.read_stream(response, id).await.map(Some);
        }
        let bytes = response.bytes().await.map_err(transport_error)?;
        if bytes.is_empty() {
            return if status.is_success() {
                Ok(None)
            } else {
                Err(failure(format!("HTTP {status}")))
            };
        }
        let answer: Value = serde_json::from_slice(&bytes).map_err(|_| {
            failure(format!(
                "HTTP {status}: {}",
                String::from_utf8_lossy(&bytes)
            ))
        })?;
        Ok(Some(answer))
    }

    async fn read_stream(
        &self,
        response: reqwest::Response,
        id: Option<i64>,
    ) -> Result<Value, ClientError> {
        let mut chunks = response.bytes_stream();
        let mut decoder = SseDecoder::new(MAX_EVENT_BYTES);
        loop {
            while let Some(event) = decoder.next_event() {
                let event = event.map_err(|error| failure(error.to_string()))?;
                if event.data().trim().is_empty() {
                    continue;
                }
                let message: Value = serde_json::from_str(event.data()).map_err(transport_error)?;
                if let Some(answer) = self.take(message, id).await? {
                    return Ok(answer);
                }
            }
            let Some(chunk) = chunks.next().await else {
                return Err(failure("the stream ended before the answer"));
            };
            decoder.push(&chunk.map_err(transport_error)?);
        }
    }

    /// Posts an answer to a server request; the server acknowledges it with 202.
    async fn deliver(&self, answer: &Value) -> Result<(), ClientError> {
        let response = self.post(answer).send().await.map_err(transport_error)?;
        if response.status().is_success() {
            Ok(())
        } else {
            Err(failure(format!(
                "the server refused an answer: HTTP {}",
                response.status()
            )))
        }
    }

    /// Handles one message read from a stream; returns it when it is the awaited answer.
    async fn take(&self, message: Value, id: Option<i64>) -> Result<Option<Value>, ClientError> {
        let method = message
            .get("method")
            .and_then(Value::as_str)
            .map(str::to_owned);
        match (method, message.get("id").cloned()) {
            (Some(method), Some(request_id)) => {
                let params = message.get("params").cloned().unwrap_or(Value::Null);
                let answer = match (self.callbacks.answer)(method, params).await {
                    Ok(result) => json!({ "jsonrpc": "2.0", "id": request_id, "result": result }),
                    Err(error) => json!({ "jsonrpc": "2.0", "id": request_id, "error": error }),
                };
                self.deliver(&answer).await?;
                Ok(None)
            }
            (Some(_), None) => {
                self.callbacks.keep(message);
                Ok(None)
            }
            (None, Some(answered)) if id.is_some_and(|id| answered == json!(id)) => {
                Ok(Some(message))
            }
            (None, _) => Ok(None),
        }
    }
}

impl RpcClient for HttpClient {
    async fn call(
        &self,
        method: &'static str,
        params: Option<Box<RawValue>>,
    ) -> Result<Box<RawValue>, ClientError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let message = envelope(Some(id), method, params.as_deref());
        let answer = self
            .exchange(&message, Some(id))
            .await?
            .ok_or_else(|| failure(format!("no answer to {method}")))?;
        outcome(&answer)
    }

    async fn notify(
        &self,
        method: &'static str,
        params: Option<Box<RawValue>>,
    ) -> Result<(), ClientError> {
        let message = envelope(None, method, params.as_deref());
        self.exchange(&message, None).await.map(|_| ())
    }
}

/// The client's side of a line-oriented conversation: it answers the server's requests
/// through the callbacks and keeps its notifications.
struct ClientSide {
    callbacks: Callbacks,
    profile: Profile,
}

impl RequestHandler for ClientSide {
    type Session = ();

    fn profile(&self) -> &Profile {
        &self.profile
    }

    async fn handle(&self, request: Request, _cx: Context<()>) -> Reply {
        let params = request
            .params
            .as_deref()
            .and_then(|raw| serde_json::from_str(raw.get()).ok())
            .unwrap_or(Value::Null);
        let result = (self.callbacks.answer)(request.method, params).await?;
        to_raw(&result).map_err(|_| ErrorObject::internal_error())
    }

    async fn notify(&self, notification: Notification, _cx: Context<()>) {
        self.callbacks.keep(envelope(
            None,
            &notification.method,
            notification.params.as_deref(),
        ));
    }
}

/// An MCP client talking to a server process it spawned, over the process's stdin/stdout.
#[derive(Debug)]
pub struct StdioClient {
    connection: protocols_runtime::connect::LinesConnection,
    child: Child,
}

impl StdioClient {
    /// Spawns `command` (its stdin and stdout become the conversation; stderr is inherited).
    ///
    /// # Errors
    /// The process could not be started.
    pub async fn spawn(mut command: Command, callbacks: Callbacks) -> std::io::Result<Self> {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(std::io::Error::other("the child has no stdin/stdout"));
        };
        let side = ClientSide {
            callbacks,
            profile: Profile::new().with_cancellation(CANCELLATION),
        };
        let connection =
            protocols_runtime::connect::connect_lines(side, stdout, stdin, StdioConfig::default())
                .await
                .map_err(std::io::Error::other)?;
        Ok(Self { connection, child })
    }

    /// `initialize` offering `revision`, then `notifications/initialized`.
    ///
    /// # Errors
    /// The server refused or the process went away.
    pub async fn initialize(
        &self,
        revision: Revision,
        capabilities: Value,
    ) -> Result<Value, ClientError> {
        let params = json!({
            "protocolVersion": revision.as_str(),
            "capabilities": capabilities,
            "clientInfo": { "name": "protocols-mcp", "version": env!("CARGO_PKG_VERSION") }
        });
        let raw = self.call("initialize", to_raw(&params).ok()).await?;
        self.notify("notifications/initialized", None).await?;
        serde_json::from_str(raw.get()).map_err(transport_error)
    }

    /// Closes stdin (the server's end of input) and waits for the process to exit.
    ///
    /// # Errors
    /// Waiting for the process failed.
    pub async fn shutdown(mut self) -> std::io::Result<std::process::ExitStatus> {
        self.connection.close().await?;
        self.child.wait().await
    }
}

impl RpcClient for StdioClient {
    async fn call(
        &self,
        method: &'static str,
        params: Option<Box<RawValue>>,
    ) -> Result<Box<RawValue>, ClientError> {
        RpcClient::call(self.connection.peer(), method, params).await
    }

    async fn notify(
        &self,
        method: &'static str,
        params: Option<Box<RawValue>>,
    ) -> Result<(), ClientError> {
        RpcClient::notify(self.connection.peer(), method, params).await
    }
}

/// How long a legacy call waits for its answer on the stream.
const LEGACY_ANSWER_TIMEOUT: Duration = Duration::from_secs(60);

type Pending = Arc<Mutex<HashMap<i64, oneshot::Sender<Value>>>>;

/// An MCP client over the legacy HTTP+SSE transport (MCP 2024-11-05).
#[derive(Debug)]
pub struct LegacySseClient {
    http: reqwest::Client,
    post_url: String,
    next_id: AtomicI64,
    pending: Pending,
    reader: JoinHandle<()>,
}

impl Drop for LegacySseClient {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

/// What the stream reader needs to answer the server on its own.
#[derive(Clone)]
struct LegacyReader {
    http: reqwest::Client,
    post_url: String,
    pending: Pending,
    callbacks: Callbacks,
}

impl LegacyReader {
    async fn run(
        self,
        mut chunks: impl futures::Stream<Item = reqwest::Result<bytes::Bytes>> + Unpin,
        mut decoder: SseDecoder,
    ) {
        loop {
            while let Some(Ok(event)) = decoder.next_event() {
                if let Ok(message) = serde_json::from_str::<Value>(event.data()) {
                    self.take(message).await;
                }
            }
            match chunks.next().await {
                Some(Ok(chunk)) => decoder.push(&chunk),
                _ => break,
            }
        }
        // The stream is gone: every waiting call fails (its sender drops).
        if let Ok(mut pending) = self.pending.lock() {
            pending.clear();
        }
    }

    async fn take(&self, message: Value) {
        let method = message
            .get("method")
            .and_then(Value::as_str)
            .map(str::to_owned);
        match (method, message.get("id").cloned()) {
            (Some(method), Some(id)) => {
                let params = message.get("params").cloned().unwrap_or(Value::Null);
                let answer = match (self.callbacks.answer)(method, params).await {
                    Ok(result) => json!({ "jsonrpc": "2.0", "id": id, "result": result }),
                    Err(error) => json!({ "jsonrpc": "2.0", "id": id, "error": error }),
                };
                if let Err(error) = post_json(&self.http, &self.post_url, &answer).await {
                    tracing::debug!(%error, "could not answer the server");
                }
            }
            (Some(_), None) => self.callbacks.keep(message),
            (None, Some(id)) => {
                let waiter = id.as_i64().and_then(|id| {
                    self.pending
                        .lock()
                        .ok()
                        .and_then(|mut pending| pending.remove(&id))
                });
                if let Some(waiter) = waiter {
                    let _ = waiter.send(message);
                }
            }
            (None, None) => {}
        }
    }
}

async fn post_json(http: &reqwest::Client, url: &str, message: &Value) -> Result<(), ClientError> {
    let response = http
        .post(url)
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(message.to_string())
        .send()
        .await
        .map_err(transport_error)?;
    if response.status().is_success() {
        Ok(())
    } else {
        Err(failure(format!("HTTP {}", response.status())))
    }
}

impl LegacySseClient {
    /// Opens the stream at `base_url` + `stream_path` and waits for the `endpoint` event.
    ///
    /// # Errors
    /// The stream could not be opened or named no endpoint.
    pub async fn connect(
        base_url: &str,
        stream_path: &str,
        callbacks: Callbacks,
    ) -> Result<Self, ClientError> {
        let http = reqwest::Client::new();
        let base = base_url.trim_end_matches('/');
        let response = http
            .get(format!("{base}{stream_path}"))
            .header(http::header::ACCEPT, "text/event-stream")
            .send()
            .await
            .map_err(transport_error)?;
        if !response.status().is_success() {
            return Err(failure(format!(
                "HTTP {} opening the stream",
                response.status()
            )));
        }
        let mut chunks = response.bytes_stream();
        let mut decoder = SseDecoder::new(MAX_EVENT_BYTES);
        let endpoint = loop {
            if let Some(event) = decoder.next_event() {
                let event = event.map_err(|error| failure(error.to_string()))?;
                if event.name().is_some_and(|name| name.as_str() == "endpoint") {
                    break event.into_data();
                }
                continue;
            }
            let chunk = chunks
                .next()
                .await
                .ok_or_else(|| failure("the stream ended before naming its endpoint"))?;
            decoder.push(&chunk.map_err(transport_error)?);
        };
        let post_url = if endpoint.starts_with("http://") || endpoint.starts_with("https://") {
            endpoint
        } else {
            format!("{base}{endpoint}")
        };
        let pending: Pending = Arc::default();
        let reader = LegacyReader {
            http: http.clone(),
            post_url: post_url.clone(),
            pending: Arc::clone(&pending),
            callbacks,
        };
        let reader = tokio::spawn(reader.run(chunks, decoder));
        Ok(Self {
            http,
            post_url,
            next_id: AtomicI64::new(1),
            pending,
            reader,
        })
    }

    /// `initialize` offering `revision`, then `notifications/initialized`.
    ///
    /// # Errors
    /// The server refused or the stream ended.
    pub async fn initialize(
        &self,
        revision: Revision,
        capabilities: Value,
    ) -> Result<Value, ClientError> {
        let params = json!({
            "protocolVersion": revision.as_str(),
            "capabilities": capabilities,
            "clientInfo": { "name": "protocols-mcp", "version": env!("CARGO_PKG_VERSION") }
        });
        let raw = self.call("initialize", to_raw(&params).ok()).await?;
        self.notify("notifications/initialized", None).await?;
        serde_json::from_str(raw.get()).map_err(transport_error)
    }
}

impl RpcClient for LegacySseClient {
    async fn call(
        &self,
        method: &'static str,
        params: Option<Box<RawValue>>,
    ) -> Result<Box<RawValue>, ClientError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (sender, answer) = oneshot::channel();
        if let Ok(mut pending) = self.pending.lock() {
            pending.insert(id, sender);
        }
        let sent = post_json(
            &self.http,
            &self.post_url,
            &envelope(Some(id), method, params.as_deref()),
        )
        .await;
        if let Err(error) = sent {
            if let Ok(mut pending) = self.pending.lock() {
                pending.remove(&id);
            }
            return Err(error);
        }
        match tokio::time::timeout(LEGACY_ANSWER_TIMEOUT, answer).await {
            Ok(Ok(message)) => outcome(&message),
            Ok(Err(_)) => Err(failure("the stream ended before the answer")),
            Err(_) => {
                if let Ok(mut pending) = self.pending.lock() {
                    pending.remove(&id);
                }
                Err(failure(format!(
                    "no answer to {method} within {LEGACY_ANSWER_TIMEOUT:?}"
                )))
            }
        }
    }

    async fn notify(
        &self,
        method: &'static str,
        params: Option<Box<RawValue>>,
    ) -> Result<(), ClientError> {
        post_json(
            &self.http,
            &self.post_url,
            &envelope(None, method, params.as_deref()),
        )
        .await
    }
}
