//! The client (editor) side of ACP's remote transport over Streamable HTTP, after upstream's
//! RFD: `initialize` is answered on its `POST` and names the connection; every later message is
//! a `POST` answered `202`, and what the agent sends (answers, `session/update`s, its calls to
//! the client) arrives on long-lived `GET` streams — the connection's, opened after
//! `initialize`, and one per session the client works in. The agent's calls are served to the
//! caller's service and answered with `POST`s; a call dropped before its answer sends
//! `$/cancel_request`. Over WebSocket the conversation is the stdio one, a text frame per
//! message: [`websocket_lines`] bridges a socket to a line-oriented pair.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use futures::{FutureExt, SinkExt, StreamExt};
use http::{HeaderValue, StatusCode, header};
use protocols_runtime::jsonrpc::{
    DecodeLimits, ErrorObject, Message, Notification, Request, RequestId, Response, decode_message,
    to_raw,
};
use protocols_runtime::peer::PeerError;
use protocols_runtime::sse::SseDecoder;
use serde::Serialize;
use serde_json::value::RawValue;
use tokio::io::{
    AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, ReadHalf, WriteHalf, duplex, split,
};
use tokio::sync::oneshot;
use tokio_tungstenite::tungstenite::Message as WsMessage;
use tokio_util::sync::CancellationToken;

use crate::client::{WireDirection, WireObserver};
use crate::client_handle::CallError;
use crate::profile::{CANCEL_REQUEST, CONNECTION_HEADER, PROTOCOL_VERSION_HEADER, SESSION_HEADER};

/// Serves one message from the agent; returns the answer owed.
pub(crate) type Inbound =
    Arc<dyn Fn(Message) -> BoxFuture<'static, Option<Response>> + Send + Sync>;

const INITIALIZE: &str = "initialize";
/// Methods the agent answers on the connection's stream (see the agent side's `remote`).
const SESSION_OPENERS: [&str; 4] = [
    "session/new",
    "session/load",
    "session/resume",
    "session/fork",
];

/// Which `GET` stream: the connection's (`None`) or a session's.
type StreamKey = Option<String>;

type Outcome = Result<Box<RawValue>, CallError>;

/// ACP over HTTP, client side.
pub(crate) struct HttpLink {
    shared: Arc<Shared>,
}

struct Shared {
    http: reqwest::Client,
    url: String,
    /// `Acp-Connection-Id` and the negotiated version, once `initialize` answered.
    connection: Mutex<Option<(HeaderValue, Option<HeaderValue>)>>,
    next_id: AtomicI64,
    /// Calls awaiting their answer on a stream.
    pending: Mutex<HashMap<RequestId, oneshot::Sender<Outcome>>>,
    /// Streams being read, each stoppable.
    streams: Mutex<HashMap<StreamKey, CancellationToken>>,
    inbound: Inbound,
    observer: Option<WireObserver>,
    /// Fired by `close`: every stream stops.
    closed: CancellationToken,
}

impl HttpLink {
    /// A link to the endpoint at `url`, over HTTP/2 as the RFD requires (cleartext by prior
    /// knowledge), keeping the cookies the agent sets for the connection's lifetime.
    pub(crate) fn new(url: String, inbound: Inbound, observer: Option<WireObserver>) -> Self {
        let http = reqwest::Client::builder()
            .http2_prior_knowledge()
            .cookie_store(true)
            .build()
            .unwrap_or_else(|error| {
                tracing::warn!(%error, "HTTP client setup failed; using the defaults");
                reqwest::Client::new()
            });
        Self {
            shared: Arc::new(Shared {
                http,
                url,
                connection: Mutex::new(None),
                next_id: AtomicI64::new(1),
                pending: Mutex::new(HashMap::new()),
                streams: Mutex::new(HashMap::new()),
                inbound,
                observer,
                closed: CancellationToken::new(),
            }),
        }
    }

    pub(crate) async fn call<P: Serialize + ?Sized>(
        &self,
        method: &str,
        params: &P,
    ) -> Result<Box<RawValue>, CallError> {
        let id = RequestId::Number(self.shared.next_id.fetch_add(1, Ordering::Relaxed));
        let params = structured(params)?;
        let session = session_id(params.as_deref());
        let body = Message::Request(Request {
            id: id.clone(),
            method: method.to_owned(),
            params,
        })
        .to_bytes();
        if method == INITIALIZE && !self.shared.is_connected() {
            return self.initialize(body).await;
        }
        if let Some(session) = &session
            && !SESSION_OPENERS.contains(&method)
        {
            self.shared.listen(Some(session.clone()));
        }
        let (reply, answer) = oneshot::channel();
        if let Ok(mut pending) = self.shared.pending.lock() {
            pending.insert(id.clone(), reply);
        }
        // Armed until the answer arrives: dropping the call cancels it at the agent.
        let mut in_flight = InFlight {
            shared: Arc::clone(&self.shared),
            id: Some(id),
            session: session.clone(),
        };
        let posted = match self.shared.post(body, session.as_deref()).await {
            Ok(response) => refuse_on_error(response).await.map(|_| ()),
            Err(error) => Err(error),
        };
        if let Err(error) = posted {
            // The agent never took the call: nothing to cancel.
            in_flight.disarm();
            return Err(error);
        }
        let outcome = tokio::select! {
            outcome = answer => outcome.unwrap_or_else(|_| Err(closed())),
            () = self.shared.closed.cancelled() => Err(closed()),
        };
        in_flight.id = None;
        outcome
    }

    /// `initialize`: answered on its own `POST`, which names the connection; the connection's
    /// stream is opened right after.
    async fn initialize(&self, body: bytes::Bytes) -> Result<Box<RawValue>, CallError> {
        let response = self.shared.post(body, None).await?;
        let connection = response.headers().get(&CONNECTION_HEADER).cloned();
        let response = refuse_on_error(response).await?;
        let bytes = response.bytes().await.map_err(transport)?;
        self.shared.observe(WireDirection::FromAgent, &bytes);
        let answer = match decode_message(&bytes, &DecodeLimits::default()) {
            Ok(Message::Response(response)) => response.into_outcome().map_err(CallError::Rejected),
            _ => Err(closed()),
        }?;
        if let Some(connection) = connection {
            self.shared.remember_connection(connection, &answer);
            self.shared.listen(None);
        }
        Ok(answer)
    }

    pub(crate) async fn notify<P: Serialize + ?Sized>(
        &self,
        method: &str,
        params: &P,
    ) -> Result<(), CallError> {
        let params = structured(params)?;
        let session = session_id(params.as_deref());
        let body = Message::Notification(Notification {
            method: method.to_owned(),
            params,
        })
        .to_bytes();
        let response = self.shared.post(body, session.as_deref()).await?;
        refuse_on_error(response).await.map(|_| ())
    }

    /// Ends the connection at the agent and stops reading its streams.
    pub(crate) async fn delete(&self) -> Result<(), CallError> {
        self.shared.closed.cancel();
        let Some((connection, version)) = self
            .shared
            .connection
            .lock()
            .ok()
            .and_then(|mut c| c.take())
        else {
            return Ok(());
        };
        let mut request = self
            .shared
            .http
            .delete(&self.shared.url)
            .header(CONNECTION_HEADER, connection);
        if let Some(version) = version {
            request = request.header(PROTOCOL_VERSION_HEADER, version);
        }
        let response = request.send().await.map_err(transport)?;
        refuse_on_error(response).await.map(|_| ())
    }
}

impl Drop for HttpLink {
    fn drop(&mut self) {
        self.shared.closed.cancel();
    }
}

/// A call awaiting its answer; dropped while armed, it tells the agent to stop.
struct InFlight {
    shared: Arc<Shared>,
    id: Option<RequestId>,
    /// The call's session: a cancel of a session-scoped call is session-scoped too.
    session: Option<String>,
}

impl InFlight {
    fn disarm(&mut self) {
        if let Some(id) = self.id.take()
            && let Ok(mut pending) = self.shared.pending.lock()
        {
            pending.remove(&id);
        }
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else { return };
        let still_pending = self
            .shared
            .pending
            .lock()
            .ok()
            .and_then(|mut pending| pending.remove(&id))
            .is_some();
        if !still_pending {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let shared = Arc::clone(&self.shared);
        let session = self.session.take();
        runtime.spawn(async move { shared.cancel_request(&id, session.as_deref()).await });
    }
}

impl Shared {
    fn is_connected(&self) -> bool {
        self.connection
            .lock()
            .is_ok_and(|connection| connection.is_some())
    }

    fn remember_connection(&self, connection: HeaderValue, answer: &RawValue) {
        let version = serde_json::from_str::<serde_json::Value>(answer.get())
            .ok()
            .and_then(|answer| answer.get("protocolVersion").map(ToString::to_string))
            .and_then(|version| HeaderValue::from_str(&version).ok());
        if let Ok(mut slot) = self.connection.lock() {
            *slot = Some((connection, version));
        }
    }

    async fn post(
        &self,
        body: bytes::Bytes,
        session: Option<&str>,
    ) -> Result<reqwest::Response, CallError> {
        self.observe(WireDirection::ToAgent, &body);
        let request = self
            .http
            .post(&self.url)
            .header(header::CONTENT_TYPE, "application/json")
            .header(header::ACCEPT, "application/json, text/event-stream")
            .body(body);
        self.with_identity(request, session)
            .send()
            .await
            .map_err(transport)
    }

    /// Adds the connection, version and session headers the agent routes by.
    fn with_identity(
        &self,
        mut request: reqwest::RequestBuilder,
        session: Option<&str>,
    ) -> reqwest::RequestBuilder {
        let connection = self.connection.lock().ok().and_then(|c| c.clone());
        if let Some((connection, version)) = connection {
            request = request.header(CONNECTION_HEADER, connection);
            if let Some(version) = version {
                request = request.header(PROTOCOL_VERSION_HEADER, version);
            }
        }
        if let Some(session) = session.and_then(|session| HeaderValue::from_str(session).ok()) {
            request = request.header(SESSION_HEADER, session);
        }
        request
    }

    async fn cancel_request(&self, id: &RequestId, session: Option<&str>) {
        let params = serde_json::json!({ CANCEL_REQUEST.id_field: id_json(id) });
        let body = Message::Notification(Notification {
            method: CANCEL_REQUEST.method.to_owned(),
            params: to_raw(&params).ok(),
        })
        .to_bytes();
        match self.post(body, session).await {
            Ok(response) => {
                if let Err(error) = refuse_on_error(response).await {
                    tracing::debug!(%error, "the agent refused $/cancel_request");
                }
            }
            Err(error) => tracing::debug!(%error, "could not send $/cancel_request"),
        }
    }

    /// Starts reading the stream `key` names, unless it is being read already.
    fn listen(self: &Arc<Self>, key: StreamKey) {
        let stop = {
            let Ok(mut streams) = self.streams.lock() else {
                return;
            };
            if streams.contains_key(&key) {
                return;
            }
            let stop = self.closed.child_token();
            streams.insert(key.clone(), stop.clone());
            stop
        };
        let shared = Arc::clone(self);
        tokio::spawn(async move {
            tokio::select! {
                () = stop.cancelled() => {}
                () = shared.read_stream(&key) => {}
            }
            if let Ok(mut streams) = shared.streams.lock() {
                streams.remove(&key);
            }
            if key.is_none() {
                // The connection's stream is where answers fall back to: without it none come.
                shared.fail_pending();
            }
        });
    }

    async fn read_stream(self: &Arc<Self>, key: &StreamKey) {
        let request = self
            .http
            .get(&self.url)
            .header(header::ACCEPT, "text/event-stream");
        let response = match self.with_identity(request, key.as_deref()).send().await {
            Ok(response) if response.status() == StatusCode::OK => response,
            Ok(response) => {
                tracing::debug!(status = %response.status(), ?key, "the agent refused a stream");
                return;
            }
            Err(error) => {
                tracing::debug!(%error, ?key, "could not open a stream");
                return;
            }
        };
        let mut decoder = SseDecoder::new(DecodeLimits::default().max_bytes);
        let mut chunks = response.bytes_stream();
        while let Some(Ok(chunk)) = chunks.next().await {
            decoder.push(&chunk);
            while let Some(event) = decoder.next_event() {
                let Ok(event) = event else { continue };
                if !event.data().is_empty() {
                    self.take(event.data().as_bytes(), key).await;
                }
            }
        }
    }

    /// One message from the agent: an answer completes its call; a notification is served in
    /// order; a call is served on its own task and answered with a `POST`.
    async fn take(self: &Arc<Self>, bytes: &[u8], key: &StreamKey) {
        self.observe(WireDirection::FromAgent, bytes);
        let Ok(message) = decode_message(bytes, &DecodeLimits::default()) else {
            return;
        };
        match message {
            Message::Response(response) => {
                let waiting = response.id().and_then(|id| {
                    self.pending
                        .lock()
                        .ok()
                        .and_then(|mut pending| pending.remove(id))
                });
                if let Some(waiting) = waiting {
                    let _ = waiting.send(response.into_outcome().map_err(CallError::Rejected));
                }
            }
            Message::Notification(_) => {
                (self.inbound)(message).await;
            }
            Message::Request(_) => {
                let mut serving = (self.inbound)(message);
                // The first poll registers the call as running, so a `$/cancel_request` read
                // next from this stream finds it; the rest runs on a task of its own.
                let answered = match futures::poll!(serving.as_mut()) {
                    std::task::Poll::Ready(answer) => futures::future::ready(answer).boxed(),
                    std::task::Poll::Pending => serving,
                };
                let shared = Arc::clone(self);
                let key = key.clone();
                tokio::spawn(async move {
                    if let Some(answer) = answered.await {
                        shared.answer(answer, key.as_deref()).await;
                    }
                });
            }
        }
    }

    /// Posts the answer to one of the agent's calls, naming the session it came from.
    async fn answer(&self, answer: Response, session: Option<&str>) {
        let body = Message::Response(answer).to_bytes();
        match self.post(body, session).await {
            Ok(response) => {
                if let Err(error) = refuse_on_error(response).await {
                    tracing::debug!(%error, "the agent refused an answer");
                }
            }
            Err(error) => tracing::debug!(%error, "could not post an answer"),
        }
    }

    fn fail_pending(&self) {
        let waiting: Vec<_> = self
            .pending
            .lock()
            .map(|mut pending| pending.drain().map(|(_, waiting)| waiting).collect())
            .unwrap_or_default();
        for waiting in waiting {
            let _ = waiting.send(Err(closed()));
        }
    }

    fn observe(&self, direction: WireDirection, bytes: &[u8]) {
        if let Some(observer) = &self.observer {
            observer(direction, bytes);
        }
    }
}

/// Upgrades to ACP's WebSocket transport at `url` (`ws://host/acp`) and returns a line-oriented
/// pair carrying the socket's text frames, one message a line, for the stdio-style client;
/// `observer` sees each frame's text.
pub(crate) async fn websocket_lines(
    url: &str,
    observer: Option<WireObserver>,
) -> Result<(ReadHalf<DuplexStream>, WriteHalf<DuplexStream>), CallError> {
    let (socket, _) = tokio_tungstenite::connect_async(url)
        .await
        .map_err(|error| {
            tracing::debug!(%error, "the WebSocket upgrade failed");
            closed()
        })?;
    let (client_end, bridge_end) = duplex(1 << 16);
    tokio::spawn(bridge(socket, bridge_end, observer));
    Ok(split(client_end))
}

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// Moves frames to lines and lines to frames until either side closes; the other side then
/// sees its end (a closing frame, or end of input).
async fn bridge(mut socket: Socket, end: DuplexStream, observer: Option<WireObserver>) {
    let observe = |direction, text: &str| {
        if let Some(observer) = &observer {
            observer(direction, text.as_bytes());
        }
    };
    let (read, mut write) = split(end);
    let mut lines = BufReader::new(read).lines();
    loop {
        tokio::select! {
            frame = socket.next() => match frame {
                Some(Ok(WsMessage::Text(text))) => {
                    observe(WireDirection::FromAgent, text.as_str());
                    let line = crate::profile::one_line(text.as_str());
                    if write.write_all(&line).await.is_err() || write.flush().await.is_err() {
                        break;
                    }
                }
                Some(Ok(WsMessage::Close(_)) | Err(_)) | None => break,
                Some(Ok(_)) => {}
            },
            line = lines.next_line() => match line {
                Ok(Some(line)) => {
                    observe(WireDirection::ToAgent, &line);
                    if socket.send(WsMessage::Text(line.into())).await.is_err() {
                        break;
                    }
                }
                Ok(None) | Err(_) => {
                    if let Err(error) = socket.close(None).await {
                        tracing::debug!(%error, "could not close the WebSocket");
                    }
                    break;
                }
            },
        }
    }
}

fn id_json(id: &RequestId) -> serde_json::Value {
    match id {
        RequestId::Number(number) => serde_json::Value::from(*number),
        RequestId::String(text) => serde_json::Value::from(text.as_ref()),
    }
}

fn transport(error: reqwest::Error) -> CallError {
    tracing::debug!(%error, "transport failure");
    closed()
}

fn closed() -> CallError {
    CallError::Transport(PeerError::Closed)
}

/// A refused HTTP request as the JSON-RPC error its body carries.
async fn refuse_on_error(response: reqwest::Response) -> Result<reqwest::Response, CallError> {
    if response.status().is_success() {
        return Ok(response);
    }
    let status = response.status();
    let body = response.bytes().await.unwrap_or_default();
    let error = decode_message(&body, &DecodeLimits::default())
        .ok()
        .and_then(|message| match message {
            Message::Response(response) => response.into_outcome().err(),
            _ => None,
        })
        .unwrap_or_else(|| ErrorObject::new(-32603, format!("HTTP {status}")));
    Err(CallError::Rejected(error))
}

fn structured<P: Serialize + ?Sized>(params: &P) -> Result<Option<Box<RawValue>>, CallError> {
    let raw = to_raw(params).map_err(|_| CallError::Transport(PeerError::Unserializable))?;
    Ok((raw.get() != "null").then_some(raw))
}

/// The ACP session a message's params name, sent as `Acp-Session-Id`.
fn session_id(params: Option<&RawValue>) -> Option<String> {
    let params: serde_json::Value = serde_json::from_str(params?.get()).ok()?;
    params.get("sessionId")?.as_str().map(str::to_owned)
}
