//! ACP's remote transport, agent side, after upstream's "Streamable HTTP & WebSocket Transport"
//! RFD (its long-lived GET stream revision): one endpoint where `POST` carries the client's
//! messages (`initialize` answered `200` with JSON and `Acp-Connection-Id`, everything else
//! `202` at once), `GET` opens the connection-scoped SSE stream or, with `Acp-Session-Id`, a
//! session-scoped one, `GET` with `Upgrade: websocket` opens a full-duplex connection, and
//! `DELETE` ends a connection. A session-scoped `POST` (a message naming a session, an answer to
//! the agent's call on a session's stream, a `$/cancel_request` of a session's request) must
//! name that session in `Acp-Session-Id`; `Acp-Protocol-Version`, when sent, must name the
//! version the connection negotiated. Each connection runs the agent in a task of its own over
//! the runtime's line-oriented serving (so cancellation and agent→client calls work as over
//! stdio); this module only routes the agent's output to the stream each message belongs on.
//!
//! HTTP/1.1 is served beside HTTP/2: the RFD's HTTP/2 requirement concerns the client's hop,
//! which a reverse proxy usually ends (speaking HTTP/1.1 to us), and its WebSocket upgrade is an
//! HTTP/1.1 exchange on this same endpoint. A session's stream may be opened on any connection
//! once the agent has named that session, since the RFD's resume flow opens it on a new
//! connection before `session/load`; each connection's streams carry only its own agent's
//! output. Each connection's agent sees the principal and headers of the request that opened
//! it, and a connection belongs to that principal: to any other caller its id names nothing.

use std::collections::{HashMap, HashSet, VecDeque};
use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::ws::{CloseFrame, Message as WsMessage, WebSocket, WebSocketUpgrade};
use axum::extract::{FromRequestParts, Request as HttpRequest, State};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use http::{HeaderMap, HeaderValue, StatusCode, header};
use protocols_runtime::hardening::{BodyLimit, Principal, Refusal, read_body};
use protocols_runtime::jsonrpc::{DecodeError, Message, Payload, RequestId, decode};
use protocols_runtime::session::SessionId;
use protocols_runtime::sse::{SseEvent, keep_alive};
use protocols_runtime::stdio::{StdioConfig, serve_lines_as};
use protocols_runtime::{ErrorObject, RequestHandler, RequestMeta};
use serde_json::Value;
use tokio::io::{
    AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, ReadHalf, WriteHalf, duplex, split,
};
use tokio::sync::{OwnedMutexGuard, mpsc, oneshot};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::profile::{
    CANCEL_REQUEST, CONNECTION_HEADER, PROTOCOL_VERSION_HEADER, SESSION_HEADER, one_line,
};
use crate::version::Revision;

/// Methods that open or attach a session: answered on the connection-scoped stream, since the
/// client cannot be listening on the session's stream before it knows (or has attached) it.
const SESSION_OPENERS: [&str; 4] = [
    "session/new",
    "session/load",
    "session/resume",
    "session/fork",
];
const INITIALIZE: &str = "initialize";
/// Why a JSON array is refused: ACP defines no batches.
pub(crate) const NO_BATCHES: &str =
    "Invalid Request: ACP has no batches; send one message per request";
const EVENT_STREAM: &str = "text/event-stream";
/// Bytes buffered in each direction between the transport and a connection's agent task.
const PIPE_BYTES: usize = 1 << 16;
/// How long a new `GET` waits for the stream's previous reader to let go.
const HANDOVER: Duration = Duration::from_secs(5);

/// How the remote transport bounds what it holds.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RemoteConfig {
    /// Live connections (HTTP and WebSocket together); `initialize` or an upgrade beyond it is
    /// refused with 503.
    pub max_connections: usize,
    /// An HTTP connection with no open stream and no request for this long is ended.
    pub idle_timeout: Duration,
    /// Messages each stream holds while no client is reading it; beyond it they are dropped.
    pub stream_buffer: usize,
    /// Session streams one connection holds (its connection stream aside). A `GET` or a `POST`
    /// that would open one more is refused with 503 and `Retry-After`; streams last as long as
    /// their connection, so a client past it opens another connection.
    pub max_sessions_per_connection: usize,
    /// Requests one connection may have running (answers still owed); a `POST` of one more is
    /// refused with 503 and `Retry-After` until an answer goes out.
    pub max_requests_per_connection: usize,
    /// A comment is sent on an SSE stream after this long without a message.
    pub keep_alive: Option<Duration>,
    /// Session ids remembered across connections, so a new connection can reopen a session's
    /// stream before `session/load`.
    pub remembered_sessions: usize,
    /// Bounds on each message and how long the agent's calls wait for the client.
    pub agent: StdioConfig,
    /// Fired at server shutdown: every stream and connection ends cleanly.
    pub shutdown: CancellationToken,
}

protocols_runtime::config_setters!(RemoteConfig {
    max_connections: usize,
    idle_timeout: Duration,
    stream_buffer: usize,
    max_sessions_per_connection: usize,
    max_requests_per_connection: usize,
    keep_alive: Option<Duration>,
    remembered_sessions: usize,
    agent: StdioConfig,
    shutdown: CancellationToken,
});

impl Default for RemoteConfig {
    fn default() -> Self {
        Self {
            max_connections: 1024,
            idle_timeout: Duration::from_secs(30 * 60),
            stream_buffer: 1024,
            max_sessions_per_connection: 64,
            max_requests_per_connection: 256,
            keep_alive: Some(Duration::from_secs(15)),
            remembered_sessions: 65_536,
            agent: StdioConfig::default(),
            shutdown: CancellationToken::new(),
        }
    }
}

/// An ACP agent served at one endpoint over Streamable HTTP and WebSocket.
pub struct AcpEndpoint<H> {
    handler: H,
    config: RemoteConfig,
    live: Arc<AtomicUsize>,
}

impl<H> std::fmt::Debug for AcpEndpoint<H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AcpEndpoint")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl<H: RequestHandler> AcpEndpoint<H> {
    /// An endpoint serving `handler` to remote connections, bounded by `config`.
    pub fn new(handler: H, config: RemoteConfig) -> Self {
        Self {
            handler,
            config,
            live: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// Ends the endpoint's streams and connections when `shutdown` fires (pass the
    /// `ServerBuilder`'s `shutdown_token()`).
    #[must_use]
    pub fn with_shutdown(mut self, shutdown: CancellationToken) -> Self {
        self.config.shutdown = shutdown;
        self
    }

    /// Counts live connections (HTTP and WebSocket), also after the routes are taken.
    pub fn live_connections(&self) -> LiveConnections {
        LiveConnections(Arc::clone(&self.live))
    }

    /// The endpoint's routes at `path`, unhardened (mount them with `ServerBuilder::routes`).
    pub fn into_routes(self, path: &str) -> Router {
        let remembered = self.config.remembered_sessions;
        let endpoint = Arc::new(Endpoint {
            handler: Arc::new(self.handler),
            config: self.config,
            connections: Mutex::new(HashMap::new()),
            live: self.live,
            sessions: Mutex::new(KnownSessions::new(remembered)),
        });
        let methods = axum::routing::post(post::<H>)
            .get(get::<H>)
            .delete(delete::<H>);
        Router::new().route(path, methods).with_state(endpoint)
    }
}

/// How many connections an endpoint serves now.
#[derive(Debug, Clone)]
pub struct LiveConnections(Arc<AtomicUsize>);

impl LiveConnections {
    /// The number of connections served now.
    pub fn get(&self) -> usize {
        self.0.load(Ordering::Acquire)
    }
}

struct Endpoint<H> {
    handler: Arc<H>,
    config: RemoteConfig,
    connections: Mutex<HashMap<String, Arc<Connection>>>,
    live: Arc<AtomicUsize>,
    sessions: Mutex<KnownSessions>,
}

/// Session ids the agent has named, oldest forgotten first past the cap.
struct KnownSessions {
    ids: HashSet<String>,
    order: VecDeque<String>,
    cap: usize,
}

impl KnownSessions {
    fn new(cap: usize) -> Self {
        Self {
            ids: HashSet::new(),
            order: VecDeque::new(),
            cap,
        }
    }

    fn learn(&mut self, id: &str) {
        if self.ids.contains(id) {
            return;
        }
        self.ids.insert(id.to_owned());
        self.order.push_back(id.to_owned());
        while self.order.len() > self.cap {
            if let Some(oldest) = self.order.pop_front() {
                self.ids.remove(&oldest);
            }
        }
    }

    fn knows(&self, id: &str) -> bool {
        self.ids.contains(id)
    }
}

/// One slot of the live-connection count, released when the connection goes.
struct LiveSlot(Arc<AtomicUsize>);

impl LiveSlot {
    fn take(live: &Arc<AtomicUsize>, max: usize) -> Option<Self> {
        live.fetch_update(Ordering::AcqRel, Ordering::Acquire, |count| {
            (count < max).then_some(count + 1)
        })
        .ok()
        .map(|_| Self(Arc::clone(live)))
    }
}

impl Drop for LiveSlot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Which stream a message goes out on: the connection's (`None`) or a session's.
type StreamKey = Option<String>;

/// Where the answer to a client's request goes.
enum Destination {
    /// Back on the `POST` that carried it (`initialize`).
    Reply(oneshot::Sender<Bytes>),
    Stream(StreamKey),
}

/// One HTTP connection: the agent task's input, its output routed to streams, the client's
/// requests whose answers are still owed, and the agent's calls awaiting the client's answer.
struct Connection {
    id: String,
    /// The subject that opened the connection (`None`: opened anonymously).
    owner: Option<Arc<str>>,
    input: tokio::sync::Mutex<Option<WriteHalf<DuplexStream>>>,
    streams: Mutex<HashMap<StreamKey, Arc<Outbox>>>,
    pending: Mutex<HashMap<RequestId, Destination>>,
    /// The agent's calls to the client, by id, with the stream each went out on: the answer
    /// must name that stream's session, and a `$/cancel_request` follows its call there.
    agent_calls: Mutex<HashMap<RequestId, StreamKey>>,
    /// The protocol version `initialize` negotiated, which `Acp-Protocol-Version` must name.
    version: OnceLock<u64>,
    ended: CancellationToken,
    last_active: Mutex<Instant>,
    open_streams: AtomicUsize,
    stream_buffer: usize,
    max_session_streams: usize,
    max_pending: usize,
    _slot: LiveSlot,
}

/// Why a client's request could not be registered as running.
enum Unregistered {
    /// A request with its id is still running.
    Duplicate,
    /// The connection already runs as many requests as it may.
    Full,
}

impl Connection {
    fn touch(&self) {
        if let Ok(mut last) = self.last_active.lock() {
            *last = Instant::now();
        }
    }

    fn idle_for(&self) -> Duration {
        if self.open_streams.load(Ordering::Acquire) > 0 {
            return Duration::ZERO;
        }
        self.last_active
            .lock()
            .map(|last| last.elapsed())
            .unwrap_or_default()
    }

    /// Hands one message to the agent; `false` when the connection has ended.
    async fn send_to_agent(&self, message: &[u8]) -> bool {
        let mut input = self.input.lock().await;
        let Some(writer) = input.as_mut() else {
            return false;
        };
        let written = async {
            writer.write_all(message).await?;
            writer.write_all(b"\n").await?;
            writer.flush().await
        }
        .await;
        written.is_ok()
    }

    /// The stream `key` names, opened if need be; `None` when opening it would pass
    /// [`RemoteConfig::max_sessions_per_connection`].
    fn outbox(&self, key: &StreamKey) -> Option<Arc<Outbox>> {
        let mut streams = self.streams.lock().ok()?;
        if let Some(outbox) = streams.get(key) {
            return Some(Arc::clone(outbox));
        }
        if key.is_some() && Self::session_streams(&streams) >= self.max_session_streams {
            return None;
        }
        let outbox = Arc::new(Outbox::new(self.stream_buffer));
        streams.insert(key.clone(), Arc::clone(&outbox));
        Some(outbox)
    }

    /// Whether session `session` has a stream here or room for one.
    fn has_room_for(&self, session: &str) -> bool {
        self.streams.lock().is_ok_and(|streams| {
            streams.contains_key(&Some(session.to_owned()))
                || Self::session_streams(&streams) < self.max_session_streams
        })
    }

    fn session_streams(streams: &HashMap<StreamKey, Arc<Outbox>>) -> usize {
        streams.len() - usize::from(streams.contains_key(&None))
    }

    fn expect_answer(&self, id: RequestId, destination: Destination) -> Result<(), Unregistered> {
        let Ok(mut pending) = self.pending.lock() else {
            return Err(Unregistered::Full);
        };
        if pending.contains_key(&id) {
            return Err(Unregistered::Duplicate);
        }
        if pending.len() >= self.max_pending {
            return Err(Unregistered::Full);
        }
        pending.insert(id, destination);
        Ok(())
    }

    fn take_destination(&self, id: &RequestId) -> Option<Destination> {
        self.pending.lock().ok()?.remove(id)
    }

    /// The session of the client's request `id` still running at the agent, when its answer
    /// goes to that session's stream.
    fn running_request_session(&self, id: &RequestId) -> Option<String> {
        match self.pending.lock().ok()?.get(id)? {
            Destination::Stream(key) => key.clone(),
            Destination::Reply(_) => None,
        }
    }

    fn agent_called(&self, id: RequestId, key: StreamKey) {
        if let Ok(mut calls) = self.agent_calls.lock() {
            calls.insert(id, key);
        }
    }

    /// The session of the agent's call `id` still awaiting the client's answer.
    fn agent_call_session(&self, id: &RequestId) -> Option<String> {
        self.agent_calls.lock().ok()?.get(id)?.clone()
    }

    /// Forgets the agent's call `id` (answered or cancelled); the stream it went out on.
    fn settle_agent_call(&self, id: &RequestId) -> Option<StreamKey> {
        self.agent_calls.lock().ok()?.remove(id)
    }

    /// Ends the connection: streams close and the agent sees end of input.
    async fn end(&self) {
        self.ended.cancel();
        let Some(mut input) = self.input.lock().await.take() else {
            return;
        };
        // Dropping the write half alone would leave the pipe open while the output router holds
        // its read half: the agent would never see end of input, and the connection's task, its
        // router and its place under `max_connections` would live on.
        if let Err(error) = input.shutdown().await {
            tracing::debug!(%error, "could not close an ACP connection's input");
        }
    }
}

/// A stream's messages, held until a client reads them; one reader at a time, a newer `GET`
/// taking over from an older one.
struct Outbox {
    sender: mpsc::Sender<Bytes>,
    receiver: Arc<tokio::sync::Mutex<mpsc::Receiver<Bytes>>>,
    reader: Mutex<CancellationToken>,
}

impl Outbox {
    fn new(capacity: usize) -> Self {
        let (sender, receiver) = mpsc::channel(capacity.max(1));
        Self {
            sender,
            receiver: Arc::new(tokio::sync::Mutex::new(receiver)),
            reader: Mutex::new(CancellationToken::new()),
        }
    }

    fn push(&self, message: Bytes) {
        if self.sender.try_send(message).is_err() {
            tracing::warn!(
                "a stream's buffer is full and no client reads it; a message was dropped"
            );
        }
    }

    /// Becomes the stream's reader, ending the previous one.
    async fn attach(&self) -> Option<(OwnedMutexGuard<mpsc::Receiver<Bytes>>, CancellationToken)> {
        let token = CancellationToken::new();
        let previous = self
            .reader
            .lock()
            .ok()
            .map(|mut reader| std::mem::replace(&mut *reader, token.clone()));
        if let Some(previous) = previous {
            previous.cancel();
        }
        let receiver = Arc::clone(&self.receiver);
        let guard = tokio::time::timeout(HANDOVER, receiver.lock_owned())
            .await
            .ok()?;
        Some((guard, token))
    }
}

/// What one line of the agent's output is, as far as routing goes.
struct Routed {
    kind: AgentMessage,
    /// The session the message's params (or a response's result) name.
    session: Option<String>,
}

enum AgentMessage {
    /// The answer to the client's request with this id.
    Answer(RequestId),
    /// The agent's call to the client, with its id.
    Call(RequestId),
    /// `$/cancel_request` for the agent's call with this id.
    CancelCall(RequestId),
    Notification,
}

impl Routed {
    fn read(line: &[u8]) -> Option<Self> {
        let value: Value = serde_json::from_slice(line).ok()?;
        let id = value.get("id").and_then(RequestId::from_json);
        let method = value.get("method").and_then(Value::as_str);
        let carrier = if method.is_some() { "params" } else { "result" };
        let body = value.get(carrier);
        let kind = match (method, id) {
            (None, Some(id)) => AgentMessage::Answer(id),
            (None, None) => AgentMessage::Notification,
            (Some(_), Some(id)) => AgentMessage::Call(id),
            (Some(method), None) if method == CANCEL_REQUEST.method => body
                .and_then(cancelled_id)
                .map_or(AgentMessage::Notification, AgentMessage::CancelCall),
            (Some(_), None) => AgentMessage::Notification,
        };
        let session = body
            .and_then(|body| body.get("sessionId"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        Some(Self { kind, session })
    }
}

/// The id a `$/cancel_request`'s params name.
fn cancelled_id(params: &Value) -> Option<RequestId> {
    params
        .get(CANCEL_REQUEST.id_field)
        .and_then(RequestId::from_json)
}

impl<H: RequestHandler> Endpoint<H> {
    fn connection(&self, id: &str) -> Option<Arc<Connection>> {
        self.connections.lock().ok()?.get(id).cloned()
    }

    fn knows_session(&self, id: &str) -> bool {
        self.sessions
            .lock()
            .is_ok_and(|sessions| sessions.knows(id))
    }

    fn learn_session(&self, id: &str) {
        if let Ok(mut sessions) = self.sessions.lock() {
            sessions.learn(id);
        }
    }

    /// The request `headers` and `extensions` came on, as a connection's agent sees it.
    fn opening_request(
        &self,
        headers: HeaderMap,
        extensions: http::Extensions,
    ) -> Arc<RequestMeta> {
        Arc::new(RequestMeta::new(
            headers,
            extensions,
            self.handler.profile(),
        ))
    }

    /// Starts a connection's agent task, serving it as `request` opened it, and its output
    /// router; `None` at capacity.
    fn open_connection(self: &Arc<Self>, request: Arc<RequestMeta>) -> Option<Arc<Connection>> {
        let slot = LiveSlot::take(&self.live, self.config.max_connections)?;
        let (agent_end, transport_end) = duplex(PIPE_BYTES);
        let (output, input) = split(transport_end);
        let connection = Arc::new(Connection {
            id: SessionId::random().as_str().to_owned(),
            owner: request
                .principal()
                .map(|principal| Arc::clone(&principal.subject)),
            input: tokio::sync::Mutex::new(Some(input)),
            streams: Mutex::new(HashMap::new()),
            pending: Mutex::new(HashMap::new()),
            agent_calls: Mutex::new(HashMap::new()),
            version: OnceLock::new(),
            ended: CancellationToken::new(),
            last_active: Mutex::new(Instant::now()),
            open_streams: AtomicUsize::new(0),
            stream_buffer: self.config.stream_buffer,
            max_session_streams: self.config.max_sessions_per_connection,
            max_pending: self.config.max_requests_per_connection.max(1),
            _slot: slot,
        });
        if let Ok(mut connections) = self.connections.lock() {
            connections.insert(connection.id.clone(), Arc::clone(&connection));
        }
        self.spawn_agent(agent_end, request);
        tokio::spawn(Arc::clone(self).route_output(Arc::clone(&connection), output));
        tokio::spawn(Arc::clone(self).watch_idle(Arc::clone(&connection)));
        tracing::debug!(connection = %connection.id, "ACP connection opened");
        Some(connection)
    }

    fn spawn_agent(&self, agent_end: DuplexStream, request: Arc<RequestMeta>) {
        let handler = Arc::clone(&self.handler);
        let config = self.config.agent;
        tokio::spawn(async move {
            let (reader, writer) = split(agent_end);
            let served = serve_lines_as(handler.as_ref(), reader, writer, config, request);
            if let Err(error) = served.await {
                tracing::debug!(%error, "an ACP connection's agent stopped");
            }
        });
    }

    /// Reads the agent's output line by line and routes each message until the agent stops.
    async fn route_output(
        self: Arc<Self>,
        connection: Arc<Connection>,
        output: ReadHalf<DuplexStream>,
    ) {
        let mut lines = BufReader::new(output);
        let mut line = Vec::new();
        loop {
            line.clear();
            match lines.read_until(b'\n', &mut line).await {
                Ok(0) | Err(_) => break,
                Ok(_) => self.route(&connection, line.trim_ascii()),
            }
        }
        self.forget(&connection).await;
    }

    fn route(&self, connection: &Connection, line: &[u8]) {
        if line.is_empty() {
            return;
        }
        let Some(routed) = Routed::read(line) else {
            tracing::warn!("the agent wrote a line that is not JSON; dropped");
            return;
        };
        // The agent is the authority on its session ids: whatever it names is a session.
        if let Some(session) = &routed.session {
            self.learn_session(session);
        }
        let message = Bytes::copy_from_slice(line);
        let key = match routed.kind {
            AgentMessage::Answer(id) => match connection.take_destination(&id) {
                Some(Destination::Reply(reply)) => {
                    // The POST may have gone; then nobody is owed the answer.
                    let _ = reply.send(message);
                    return;
                }
                Some(Destination::Stream(key)) => key,
                None => None,
            },
            AgentMessage::Call(id) => {
                connection.agent_called(id, routed.session.clone());
                routed.session
            }
            // On the stream its call went out on, so the client reads the call first.
            AgentMessage::CancelCall(id) => connection.settle_agent_call(&id).flatten(),
            AgentMessage::Notification => routed.session,
        };
        match connection.outbox(&key) {
            Some(outbox) => outbox.push(message),
            None => tracing::warn!(
                connection = %connection.id,
                "the agent wrote for a session past max_sessions_per_connection; dropped"
            ),
        }
    }

    /// Ends `connection` after its idle timeout, or at shutdown.
    async fn watch_idle(self: Arc<Self>, connection: Arc<Connection>) {
        let period = (self.config.idle_timeout / 4).max(Duration::from_millis(10));
        loop {
            tokio::select! {
                () = connection.ended.cancelled() => return,
                () = self.config.shutdown.cancelled() => break,
                () = tokio::time::sleep(period) => {
                    if connection.idle_for() >= self.config.idle_timeout {
                        tracing::debug!(connection = %connection.id, "ACP connection idle; ended");
                        break;
                    }
                }
            }
        }
        self.forget(&connection).await;
    }

    async fn forget(&self, connection: &Connection) {
        if let Ok(mut connections) = self.connections.lock() {
            connections.remove(&connection.id);
        }
        connection.end().await;
    }

    /// `POST` with `initialize` and no connection: opens one and answers with JSON.
    async fn initialize(
        self: &Arc<Self>,
        message: &Message,
        opening: Arc<RequestMeta>,
    ) -> Response {
        let Message::Request(request) = message else {
            return refuse(Refusal::MissingSession);
        };
        let Some(connection) = self.open_connection(opening) else {
            return overloaded();
        };
        let (reply, answer) = oneshot::channel();
        // The connection is new, so nothing else is registered on it yet.
        let _ = connection.expect_answer(request.id.clone(), Destination::Reply(reply));
        if !connection.send_to_agent(&message.to_bytes()).await {
            return refuse(Refusal::Internal);
        }
        let answer = tokio::select! {
            answer = answer => answer.ok(),
            () = connection.ended.cancelled() => None,
            () = self.config.shutdown.cancelled() => None,
        };
        let Some(answer) = answer else {
            self.forget(&connection).await;
            return refuse(Refusal::Internal);
        };
        if let Some(version) = negotiated_version(&answer) {
            // Set once: this is the connection's first and only `initialize` answer so far.
            let _ = connection.version.set(version);
        }
        let Some(body) = with_connection_id(&answer, &connection.id) else {
            // A refused initialize leaves no connection behind.
            self.forget(&connection).await;
            return json_response(StatusCode::OK, answer);
        };
        let mut response = json_response(StatusCode::OK, body);
        if let Ok(value) = HeaderValue::from_str(&connection.id) {
            response.headers_mut().insert(CONNECTION_HEADER, value);
        }
        response
    }

    /// `POST` on a connection: the message goes to the agent and the answer, if one is owed,
    /// comes on a stream.
    async fn accept(
        &self,
        connection: &Connection,
        message: &Message,
        headers: &HeaderMap,
    ) -> Response {
        if let Some(refused) = version_refusal(connection, headers) {
            return refused;
        }
        let session = params_session(message);
        let scope = session
            .clone()
            .or_else(|| Self::linked_session(connection, message));
        if let Some(refused) = session_header_refusal(scope.as_deref(), headers) {
            return refused;
        }
        if let Some(session) = &session
            && self.knows_session(session)
            && !connection.has_room_for(session)
        {
            return overloaded();
        }
        if let Message::Response(response) = message
            && let Some(id) = response.id()
        {
            connection.settle_agent_call(id);
        }
        if let Message::Request(request) = message {
            let key = session.filter(|session| {
                !SESSION_OPENERS.contains(&request.method.as_str()) && self.knows_session(session)
            });
            match connection.expect_answer(request.id.clone(), Destination::Stream(key)) {
                Ok(()) => {}
                Err(Unregistered::Duplicate) => {
                    return bad_request("Invalid Request: a request with this id is still running");
                }
                Err(Unregistered::Full) => return overloaded(),
            }
        }
        connection.touch();
        if !connection.send_to_agent(&message.to_bytes()).await {
            return refuse(Refusal::UnknownSession);
        }
        StatusCode::ACCEPTED.into_response()
    }

    /// The session a client message without a `sessionId` of its own belongs to: for an answer,
    /// the session of the agent's call it answers; for `$/cancel_request`, the session of the
    /// request it cancels.
    fn linked_session(connection: &Connection, message: &Message) -> Option<String> {
        match message {
            Message::Response(response) => connection.agent_call_session(response.id()?),
            Message::Notification(notification) if notification.method == CANCEL_REQUEST.method => {
                let params: Value =
                    serde_json::from_str(notification.params.as_deref()?.get()).ok()?;
                connection.running_request_session(&cancelled_id(&params)?)
            }
            Message::Notification(_) | Message::Request(_) => None,
        }
    }

    /// `GET` without upgrade: the connection's stream, or one session's.
    async fn open_stream(&self, headers: &HeaderMap, caller: Option<&Principal>) -> Response {
        if !accepts_event_stream(headers) {
            return refuse(Refusal::NotAcceptable);
        }
        let connection = match self.named_connection(headers, caller) {
            Ok(connection) => connection,
            Err(refusal) => return refuse(refusal),
        };
        if let Some(refused) = version_refusal(&connection, headers) {
            return refused;
        }
        let key = match headers.get(SESSION_HEADER).map(HeaderValue::to_str) {
            None => None,
            Some(Ok(session)) if self.knows_session(session) => Some(session.to_owned()),
            Some(Ok(_)) => return refuse(Refusal::UnknownSession),
            Some(Err(_)) => return refuse(Refusal::MalformedHeader("Acp-Session-Id")),
        };
        let Some(outbox) = connection.outbox(&key) else {
            return overloaded();
        };
        let Some((receiver, reader)) = outbox.attach().await else {
            return rpc_error(
                StatusCode::CONFLICT,
                ErrorObject::invalid_request("another reader holds this stream"),
            );
        };
        connection.touch();
        let stops = [
            reader,
            connection.ended.clone(),
            self.config.shutdown.clone(),
        ];
        let open = OpenStream::new(&connection);
        sse_response(receiver, stops, open, self.config.keep_alive)
    }

    /// `DELETE`: ends the connection the header names.
    async fn end_connection(&self, headers: &HeaderMap, caller: Option<&Principal>) -> Response {
        match self.named_connection(headers, caller) {
            Ok(connection) => {
                if let Some(refused) = version_refusal(&connection, headers) {
                    return refused;
                }
                self.forget(&connection).await;
                tracing::debug!(connection = %connection.id, "ACP connection ended by the client");
                StatusCode::ACCEPTED.into_response()
            }
            Err(refusal) => refuse(refusal),
        }
    }

    /// The connection `headers` name, when it belongs to `caller`: another caller's
    /// connection is as unknown as one that never existed.
    fn named_connection(
        &self,
        headers: &HeaderMap,
        caller: Option<&Principal>,
    ) -> Result<Arc<Connection>, Refusal> {
        let id = headers
            .get(CONNECTION_HEADER)
            .ok_or(Refusal::MissingSession)?
            .to_str()
            .map_err(|_| Refusal::MalformedSessionId)?;
        self.connection(id)
            .filter(|connection| {
                connection.owner.as_deref() == caller.map(|principal| &*principal.subject)
            })
            .ok_or(Refusal::UnknownSession)
    }

    /// `GET` with `Upgrade: websocket`: a new connection whose messages are text frames, its
    /// agent serving them as `opening` opened it.
    fn upgrade(self: &Arc<Self>, upgrade: WebSocketUpgrade, opening: Arc<RequestMeta>) -> Response {
        let Some(slot) = LiveSlot::take(&self.live, self.config.max_connections) else {
            return overloaded();
        };
        let id = SessionId::random();
        let endpoint = Arc::clone(self);
        let mut response =
            upgrade.on_upgrade(move |socket| endpoint.serve_socket(socket, slot, opening));
        if let Ok(value) = HeaderValue::from_str(id.as_str()) {
            response.headers_mut().insert(CONNECTION_HEADER, value);
        }
        response
    }

    /// Serves one WebSocket connection until either side closes it or the server shuts down.
    async fn serve_socket(
        self: Arc<Self>,
        mut socket: WebSocket,
        _slot: LiveSlot,
        opening: Arc<RequestMeta>,
    ) {
        let (agent_end, transport_end) = duplex(PIPE_BYTES);
        self.spawn_agent(agent_end, opening);
        let (output, mut input) = split(transport_end);
        let mut output = BufReader::new(output).lines();
        loop {
            tokio::select! {
                frame = socket.recv() => match frame {
                    Some(Ok(WsMessage::Text(text))) => {
                        if !write_line(&mut input, text.as_str()).await {
                            break;
                        }
                    }
                    // Binary frames carry nothing ACP defines; pings are answered by axum.
                    Some(Ok(WsMessage::Binary(_) | WsMessage::Ping(_) | WsMessage::Pong(_))) => {}
                    Some(Ok(WsMessage::Close(_)) | Err(_)) | None => break,
                },
                line = output.next_line() => match line {
                    Ok(Some(line)) => {
                        if socket.send(WsMessage::Text(line.into())).await.is_err() {
                            break;
                        }
                    }
                    Ok(None) | Err(_) => break,
                },
                () = self.config.shutdown.cancelled() => {
                    let close = CloseFrame { code: GOING_AWAY, reason: "server shutting down".into() };
                    if let Err(error) = socket.send(WsMessage::Close(Some(close))).await {
                        tracing::debug!(%error, "could not send the closing frame");
                    }
                    break;
                }
            }
        }
        // The agent sees end of input and stops.
        drop(input);
    }
}

/// The WebSocket close code for a server going down.
const GOING_AWAY: u16 = 1001;

/// Writes one frame's JSON as one line; a line break inside JSON is whitespace, so it becomes a
/// space rather than splitting the message.
async fn write_line(input: &mut WriteHalf<DuplexStream>, text: &str) -> bool {
    let line = one_line(text);
    input.write_all(&line).await.is_ok() && input.flush().await.is_ok()
}

/// The session a client message's params name.
fn params_session(message: &Message) -> Option<String> {
    let params = match message {
        Message::Request(request) => request.params.as_deref(),
        Message::Notification(notification) => notification.params.as_deref(),
        Message::Response(_) => None,
    }?;
    let value: Value = serde_json::from_str(params.get()).ok()?;
    value.get("sessionId")?.as_str().map(str::to_owned)
}

/// The refusal of a request whose `Acp-Protocol-Version` is wrong. The RFD has clients send
/// it after `initialize` (a SHOULD, so its absence is accepted); when sent, it must name the
/// version this connection negotiated.
fn version_refusal(connection: &Connection, headers: &HeaderMap) -> Option<Response> {
    let value = headers.get(PROTOCOL_VERSION_HEADER)?;
    let named = value
        .to_str()
        .ok()
        .and_then(|text| text.trim().parse::<u64>().ok())
        .filter(|number| Revision::from_number(*number).is_some());
    let Some(named) = named else {
        return Some(bad_request(
            "Bad Request: Acp-Protocol-Version names no version served here",
        ));
    };
    match connection.version.get() {
        Some(negotiated) if *negotiated != named => Some(bad_request(
            "Bad Request: Acp-Protocol-Version is not the version this connection negotiated",
        )),
        _ => None,
    }
}

/// The refusal of a session-scoped message's `POST` that does not name its session in
/// `Acp-Session-Id`, as the RFD requires of every session-scoped `POST` (prompts, cancels,
/// answers to the agent's calls).
fn session_header_refusal(scope: Option<&str>, headers: &HeaderMap) -> Option<Response> {
    let scope = scope?;
    match headers.get(SESSION_HEADER).map(HeaderValue::to_str) {
        None => Some(refuse(Refusal::MissingSession)),
        Some(Err(_)) => Some(refuse(Refusal::MalformedHeader("Acp-Session-Id"))),
        Some(Ok(named)) if named == scope => None,
        Some(Ok(_)) => Some(bad_request(
            "Bad Request: Acp-Session-Id names another session than the message",
        )),
    }
}

fn bad_request(message: &'static str) -> Response {
    rpc_error(
        StatusCode::BAD_REQUEST,
        ErrorObject::new(Refusal::InvalidRequest.code(), message),
    )
}

/// The `protocolVersion` of an `initialize` answer.
fn negotiated_version(answer: &[u8]) -> Option<u64> {
    let value: Value = serde_json::from_slice(answer).ok()?;
    value.get("result")?.get("protocolVersion")?.as_u64()
}

/// `initialize`'s answer with `connectionId` added to its result; `None` for an error answer.
fn with_connection_id(answer: &[u8], connection: &str) -> Option<Bytes> {
    let mut value: Value = serde_json::from_slice(answer).ok()?;
    let result = value.get_mut("result")?.as_object_mut()?;
    result.insert("connectionId".to_owned(), Value::from(connection));
    serde_json::to_vec(&value).ok().map(Bytes::from)
}

fn accepts_event_stream(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .filter_map(|range| range.split(';').next())
        .map(str::trim)
        .any(|range| {
            range.eq_ignore_ascii_case(EVENT_STREAM) || range == "text/*" || range == "*/*"
        })
}

fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.split(';').next())
        .is_some_and(|value| value.trim().eq_ignore_ascii_case("application/json"))
}

fn is_websocket_upgrade(headers: &HeaderMap) -> bool {
    headers
        .get(header::UPGRADE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.eq_ignore_ascii_case("websocket"))
}

fn refuse(refusal: Refusal) -> Response {
    refusal.into_response_with_id(None)
}

/// How long a client refused at a bound is told to wait before trying again.
const RETRY_AFTER_SECS: u32 = 1;

/// The refusal at one of [`RemoteConfig`]'s bounds: 503, -32013, and when to retry.
fn overloaded() -> Response {
    let mut response = refuse(Refusal::Overloaded);
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from(RETRY_AFTER_SECS));
    response
}

fn rpc_error(status: StatusCode, error: ErrorObject) -> Response {
    let body = Message::Response(protocols_runtime::Response::error(None, error)).to_bytes();
    json_response(status, body)
}

fn json_response(status: StatusCode, body: Bytes) -> Response {
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

fn decode_refusal(error: &DecodeError) -> Refusal {
    match error {
        DecodeError::TooLarge { .. } => Refusal::BodyTooLarge,
        DecodeError::NotJson | DecodeError::InvalidUtf8 | DecodeError::TooDeep { .. } => {
            Refusal::ParseError
        }
        DecodeError::EmptyBatch | DecodeError::Invalid(_) => Refusal::InvalidRequest,
    }
}

async fn post<H: RequestHandler>(
    State(endpoint): State<Arc<Endpoint<H>>>,
    request: HttpRequest,
) -> Response {
    let (parts, body) = request.into_parts();
    if !is_json(&parts.headers) {
        return refuse(Refusal::UnsupportedMediaType);
    }
    let limits = endpoint.config.agent.limits;
    let limit = parts
        .extensions
        .get::<BodyLimit>()
        .map_or(limits.max_bytes, |limit| limit.0);
    let bytes = match read_body(body, limit).await {
        Ok(bytes) => bytes,
        Err(refusal) => return refuse(refusal),
    };
    let message = match decode(&bytes, &limits) {
        Ok(Payload::Single(message)) => message,
        // ACP has no batches, so an array is a malformed request, not an unsupported feature.
        Ok(Payload::Batch(_)) => return bad_request(NO_BATCHES),
        Err(error) => return refuse(decode_refusal(&error)),
    };
    let caller = parts.extensions.get::<Principal>();
    match endpoint.named_connection(&parts.headers, caller) {
        Ok(connection) => endpoint.accept(&connection, &message, &parts.headers).await,
        Err(Refusal::MissingSession) if is_initialize(&message) => {
            let opening = endpoint.opening_request(parts.headers, parts.extensions);
            endpoint.initialize(&message, opening).await
        }
        Err(refusal) => refuse(refusal),
    }
}

fn is_initialize(message: &Message) -> bool {
    matches!(message, Message::Request(request) if request.method == INITIALIZE)
}

async fn get<H: RequestHandler>(
    State(endpoint): State<Arc<Endpoint<H>>>,
    request: HttpRequest,
) -> Response {
    if !is_websocket_upgrade(request.headers()) {
        let caller = request.extensions().get::<Principal>();
        return endpoint.open_stream(request.headers(), caller).await;
    }
    let (mut parts, _body) = request.into_parts();
    match WebSocketUpgrade::from_request_parts(&mut parts, &()).await {
        Ok(upgrade) => {
            let opening = endpoint.opening_request(parts.headers, parts.extensions);
            endpoint.upgrade(upgrade, opening)
        }
        Err(rejection) => rejection.into_response(),
    }
}

async fn delete<H: RequestHandler>(
    State(endpoint): State<Arc<Endpoint<H>>>,
    request: HttpRequest,
) -> Response {
    let caller = request.extensions().get::<Principal>();
    endpoint.end_connection(request.headers(), caller).await
}

/// Counts a connection's open stream while it lives, so an open stream keeps it from idling out.
struct OpenStream(Arc<Connection>);

impl OpenStream {
    fn new(connection: &Arc<Connection>) -> Self {
        connection.open_streams.fetch_add(1, Ordering::AcqRel);
        Self(Arc::clone(connection))
    }
}

impl Drop for OpenStream {
    fn drop(&mut self) {
        self.0.touch();
        self.0.open_streams.fetch_sub(1, Ordering::AcqRel);
    }
}

struct StreamState {
    receiver: OwnedMutexGuard<mpsc::Receiver<Bytes>>,
    stops: [CancellationToken; 3],
    keep_alive: Option<Duration>,
    _open: OpenStream,
}

/// A `200 text/event-stream` response carrying each message as one unnamed event (no ids: the
/// RFD defers resumption), ending cleanly when any of `stops` fires.
fn sse_response(
    receiver: OwnedMutexGuard<mpsc::Receiver<Bytes>>,
    stops: [CancellationToken; 3],
    open: OpenStream,
    keep_alive: Option<Duration>,
) -> Response {
    let state = StreamState {
        receiver,
        stops,
        keep_alive,
        _open: open,
    };
    let stream = futures::stream::unfold(state, next_event);
    let mut response = Response::new(Body::from_stream(stream));
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(EVENT_STREAM));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    // Proxies that buffer (nginx) would hold events back without this.
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}

async fn next_event(mut state: StreamState) -> Option<(Result<Bytes, Infallible>, StreamState)> {
    let [reader, ended, shutdown] = state.stops.clone();
    let idle = async {
        match state.keep_alive {
            Some(every) => tokio::time::sleep(every).await,
            None => std::future::pending().await,
        }
    };
    let chunk = tokio::select! {
        biased;
        () = shutdown.cancelled() => return None,
        () = ended.cancelled() => return None,
        () = reader.cancelled() => return None,
        message = state.receiver.recv() => {
            let message = message?;
            SseEvent::without_id(String::from_utf8_lossy(&message)).to_bytes()
        }
        () = idle => keep_alive(),
    };
    Some((Ok(chunk), state))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agent_output_is_read_as_answer_call_cancel_or_notification_with_its_session() {
        let answer =
            Routed::read(br#"{"jsonrpc":"2.0","id":3,"result":{"sessionId":"s1"}}"#).unwrap();
        assert!(matches!(
            answer.kind,
            AgentMessage::Answer(RequestId::Number(3))
        ));
        assert_eq!(answer.session.as_deref(), Some("s1"));
        let update = Routed::read(
            br#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s2","update":{}}}"#,
        )
        .unwrap();
        assert!(matches!(update.kind, AgentMessage::Notification));
        assert_eq!(update.session.as_deref(), Some("s2"));
        let call = Routed::read(
            br#"{"jsonrpc":"2.0","id":"x","method":"fs/read_text_file","params":{"sessionId":"s3"}}"#,
        )
        .unwrap();
        assert!(matches!(call.kind, AgentMessage::Call(RequestId::String(ref id)) if &**id == "x"));
        assert_eq!(call.session.as_deref(), Some("s3"));
        let cancel = Routed::read(
            br#"{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":7}}"#,
        )
        .unwrap();
        assert!(matches!(
            cancel.kind,
            AgentMessage::CancelCall(RequestId::Number(7))
        ));
        assert_eq!(cancel.session, None);
    }

    #[test]
    fn remembered_sessions_forget_the_oldest_past_the_cap() {
        let mut known = KnownSessions::new(2);
        for id in ["a", "b", "a", "c"] {
            known.learn(id);
        }
        assert!(!known.knows("a"));
        assert!(known.knows("b") && known.knows("c"));
    }

    #[test]
    fn the_initialize_answer_names_the_connection_and_an_error_answer_is_left_alone() {
        let body = with_connection_id(
            br#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1}}"#,
            "c-1",
        )
        .unwrap();
        let value: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(value["result"]["connectionId"], "c-1");
        assert!(
            with_connection_id(
                br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"x"}}"#,
                "c"
            )
            .is_none()
        );
    }

    #[test]
    fn a_frame_with_line_breaks_stays_one_line() {
        let line = one_line("{\n  \"a\": \"x\\ny\"\r\n}");
        assert_eq!(line.iter().filter(|byte| **byte == b'\n').count(), 1);
        assert_eq!(line.last(), Some(&b'\n'));
        let value: Value = serde_json::from_slice(&line).unwrap();
        assert_eq!(value["a"], "x\ny");
    }
}
