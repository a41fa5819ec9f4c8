//! The client (editor) side: [`AcpClient`] connects to an agent over stdio (a spawned child, or
//! any line-oriented pair) or over HTTP, calls it with typed methods, and serves the agent's
//! calls back (`session/update`, `session/request_permission`, `fs/*`, …) to an [`AcpService`]
//! of the caller's, through the same runtime dispatch the agent side uses.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Instant;

use futures::StreamExt;
use futures::future::BoxFuture;
use http::{HeaderValue, header};
use protocols_runtime::connect::{LinesConnection, connect_lines, serve_detached};
use protocols_runtime::handler::{Context, Profile, Reply, RequestHandler};
use protocols_runtime::jsonrpc::{
    DecodeLimits, ErrorObject, Message, Notification, Request, RequestId, Response, decode_message,
    to_raw,
};
use protocols_runtime::method::{ClientError, RpcClient, RpcMethod, RpcNotification};
use protocols_runtime::session::{Session, SessionId};
use protocols_runtime::sse::SseDecoder;
use protocols_runtime::stdio::StdioConfig;
use serde::Serialize;
use serde_json::value::RawValue;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::Mutex;

use crate::agent::AcpService;
use crate::client_handle::CallError;
use crate::connection::AcpConnection;
use crate::generated::v1;
use crate::profile::{CONNECTION_HEADER, PROTOCOL_VERSION_HEADER, SESSION_HEADER, acp_profile};

/// Sees every message as it crosses the wire, as its exact bytes (for logging, or the schema
/// checks of the tests).
pub type WireObserver = Arc<dyn Fn(WireDirection, &[u8]) + Send + Sync>;

/// Which way a message travelled, seen from the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireDirection {
    ToAgent,
    FromAgent,
}

/// Serves the agent's calls to the client's service, under ACP's profile.
struct ClientSide<S> {
    service: S,
    profile: Profile,
}

impl<S: AcpService> RequestHandler for ClientSide<S> {
    type Session = AcpConnection;

    fn profile(&self) -> &Profile {
        &self.profile
    }

    async fn handle(&self, request: Request, cx: Context<AcpConnection>) -> Reply {
        self.service.handle(request, cx).await
    }

    async fn notify(&self, notification: Notification, cx: Context<AcpConnection>) {
        self.service.notify(notification, cx).await;
    }
}

/// A connection to an agent.
pub struct AcpClient {
    link: Link,
}

impl std::fmt::Debug for AcpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AcpClient").finish_non_exhaustive()
    }
}

enum Link {
    Lines(LinesConnection),
    Http(HttpLink),
}

impl AcpClient {
    /// Connects over a line-oriented pair: `reader` carries the agent's output, `writer` its
    /// input (a child's stdout and stdin).
    ///
    /// # Errors
    /// The conversation ended before it started.
    pub async fn connect_lines<S, R, W>(service: S, reader: R, writer: W) -> Result<Self, CallError>
    where
        S: AcpService,
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let side = ClientSide {
            service,
            profile: acp_profile(),
        };
        let connection = connect_lines(side, reader, writer, StdioConfig::default()).await?;
        Ok(Self {
            link: Link::Lines(connection),
        })
    }

    /// Connects over ACP's HTTP transport to the endpoint at `url` (e.g. `http://host/acp`).
    pub fn connect_http<S: AcpService>(service: S, url: impl Into<String>) -> Self {
        Self::connect_http_observed(service, url, None)
    }

    /// [`Self::connect_http`], showing every message to `observer`.
    pub fn connect_http_observed<S: AcpService>(
        service: S,
        url: impl Into<String>,
        observer: Option<WireObserver>,
    ) -> Self {
        let side = Arc::new(ClientSide {
            service,
            profile: acp_profile(),
        });
        let session = Arc::new(Session::new(
            SessionId::random(),
            AcpConnection::default(),
            Instant::now(),
            1,
        ));
        let inbound: Inbound = Arc::new(move |message| {
            let side = Arc::clone(&side);
            let session = Arc::clone(&session);
            Box::pin(async move { serve_detached(side.as_ref(), message, &session).await })
        });
        Self {
            link: Link::Http(HttpLink {
                http: reqwest::Client::new(),
                url: url.into(),
                connection: Mutex::new(None),
                next_id: AtomicI64::new(1),
                inbound,
                observer,
            }),
        }
    }

    /// Calls `M` on the agent and waits for its typed answer.
    ///
    /// # Errors
    /// The agent's refusal, or a transport failure.
    pub async fn call<M: RpcMethod>(&self, params: &M::Params) -> Result<M::Result, CallError> {
        let raw = self.call_raw(M::NAME, params).await?;
        serde_json::from_str(raw.get()).map_err(|source| CallError::InvalidResult {
            method: M::NAME,
            source,
        })
    }

    /// Calls any method (an extension method, say) with untyped params and answer.
    ///
    /// # Errors
    /// The agent's refusal, or a transport failure.
    pub async fn call_raw<P: Serialize + ?Sized>(
        &self,
        method: &str,
        params: &P,
    ) -> Result<Box<RawValue>, CallError> {
        match &self.link {
            Link::Lines(connection) => Ok(connection.peer().request(method, params).await?),
            Link::Http(link) => link.call(method, params).await,
        }
    }

    /// Sends the notification `N` to the agent.
    ///
    /// # Errors
    /// The message could not be sent.
    pub async fn notify<N: RpcNotification>(&self, params: &N::Params) -> Result<(), CallError> {
        self.notify_raw(N::NAME, params).await
    }

    /// Sends any notification.
    ///
    /// # Errors
    /// The message could not be sent.
    pub async fn notify_raw<P: Serialize + ?Sized>(
        &self,
        method: &str,
        params: &P,
    ) -> Result<(), CallError> {
        match &self.link {
            Link::Lines(connection) => Ok(connection.peer().notify(method, params)?),
            Link::Http(link) => link.notify(method, params).await,
        }
    }

    /// The agent's v1 methods, typed (the generated proxy over this connection).
    pub fn v1(&self) -> v1::RemoteAgent<&Self> {
        v1::RemoteAgent::new(self)
    }

    /// `session/cancel` (v1): stops the turn running in `session_id`.
    ///
    /// # Errors
    /// The message could not be sent.
    pub async fn cancel(&self, session_id: &str) -> Result<(), CallError> {
        let params = v1::types::CancelNotification {
            meta: None,
            session_id: v1::types::SessionId(session_id.to_owned()),
        };
        self.notify::<v1::methods::SessionCancel>(&params).await
    }

    /// Ends the connection: over stdio the agent sees end of input; over HTTP the connection
    /// is deleted at the agent.
    ///
    /// # Errors
    /// The transport failed while closing.
    pub async fn close(self) -> Result<(), CallError> {
        match self.link {
            Link::Lines(connection) => connection
                .close()
                .await
                .map_err(|error| CallError::Transport(transport(&error))),
            Link::Http(link) => link.delete().await,
        }
    }
}

impl RpcClient for AcpClient {
    async fn call(
        &self,
        method: &'static str,
        params: Option<Box<RawValue>>,
    ) -> Result<Box<RawValue>, ClientError> {
        self.call_raw(method, &params)
            .await
            .map_err(into_client_error)
    }

    async fn notify(
        &self,
        method: &'static str,
        params: Option<Box<RawValue>>,
    ) -> Result<(), ClientError> {
        self.notify_raw(method, &params)
            .await
            .map_err(into_client_error)
    }
}

fn into_client_error(error: CallError) -> ClientError {
    match error {
        CallError::Rejected(error) => ClientError::Rejected(error),
        other => ClientError::Transport(Box::new(other)),
    }
}

fn transport(error: &dyn std::fmt::Display) -> protocols_runtime::peer::PeerError {
    tracing::debug!(%error, "transport failure");
    protocols_runtime::peer::PeerError::Closed
}

/// Serves one message from the agent; returns the answer owed.
type Inbound = Arc<dyn Fn(Message) -> BoxFuture<'static, Option<Response>> + Send + Sync>;

/// ACP over HTTP, client side: each message is a `POST`; an answer arrives as JSON or on the
/// request's SSE stream, interleaved with the agent's notifications and calls, which are served
/// as they arrive and answered with `POST`s of their own.
struct HttpLink {
    http: reqwest::Client,
    url: String,
    /// `Acp-Connection-Id` and the negotiated version, once `initialize` answered.
    connection: Mutex<Option<(HeaderValue, Option<HeaderValue>)>>,
    next_id: AtomicI64,
    inbound: Inbound,
    observer: Option<WireObserver>,
}

impl HttpLink {
    async fn call<P: Serialize + ?Sized>(
        &self,
        method: &str,
        params: &P,
    ) -> Result<Box<RawValue>, CallError> {
        let id = RequestId::Number(self.next_id.fetch_add(1, Ordering::Relaxed));
        let params = structured(params)?;
        let session = session_id(params.as_deref());
        let body = Message::Request(Request {
            id: id.clone(),
            method: method.to_owned(),
            params,
        })
        .to_bytes();
        let response = self.post(body, session.as_deref()).await?;
        let connection = response.headers().get(&CONNECTION_HEADER).cloned();
        let answer = self.read_answer(response, &id).await?;
        if method == "initialize" {
            self.remember_connection(connection, &answer).await;
        }
        Ok(answer)
    }

    async fn notify<P: Serialize + ?Sized>(
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
        let response = self.post(body, session.as_deref()).await?;
        refuse_on_error(response).await.map(|_| ())
    }

    async fn post(
        &self,
        body: bytes::Bytes,
        session: Option<&str>,
    ) -> Result<reqwest::Response, CallError> {
        self.observe(WireDirection::ToAgent, &body);
        let mut request = self
            .http
            .post(&self.url)
            .header(header::CONTENT_TYPE, "application/json")
            .header(header::ACCEPT, "application/json, text/event-stream")
            .body(body);
        if let Some((connection, version)) = self.connection.lock().await.clone() {
            request = request.header(CONNECTION_HEADER, connection);
            if let Some(version) = version {
                request = request.header(PROTOCOL_VERSION_HEADER, version);
            }
        }
        if let Some(session) = session.and_then(|session| HeaderValue::from_str(session).ok()) {
            request = request.header(SESSION_HEADER, session);
        }
        request
            .send()
            .await
            .map_err(|error| CallError::Transport(transport(&error)))
    }

    /// Keeps the connection `initialize` opened and the version it negotiated, sent on every
    /// later request.
    async fn remember_connection(&self, connection: Option<HeaderValue>, answer: &RawValue) {
        let Some(connection) = connection else { return };
        let version = serde_json::from_str::<serde_json::Value>(answer.get())
            .ok()
            .and_then(|answer| answer.get("protocolVersion").map(ToString::to_string))
            .and_then(|version| HeaderValue::from_str(&version).ok());
        *self.connection.lock().await = Some((connection, version));
    }

    /// Reads the answer to `id`: plain JSON, or an SSE stream carrying it after whatever the
    /// agent sends first.
    async fn read_answer(
        &self,
        response: reqwest::Response,
        id: &RequestId,
    ) -> Result<Box<RawValue>, CallError> {
        let response = refuse_on_error(response).await?;
        let is_stream = response
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .is_some_and(|value| value.starts_with("text/event-stream"));
        if !is_stream {
            let body = response
                .bytes()
                .await
                .map_err(|error| CallError::Transport(transport(&error)))?;
            return self
                .answer_in(&body, id)
                .await
                .unwrap_or_else(|| Err(closed()));
        }
        let mut decoder = SseDecoder::new(DecodeLimits::default().max_bytes);
        let mut chunks = response.bytes_stream();
        while let Some(chunk) = chunks.next().await {
            let chunk = chunk.map_err(|error| CallError::Transport(transport(&error)))?;
            decoder.push(&chunk);
            while let Some(event) = decoder.next_event() {
                let Ok(event) = event else { continue };
                if let Some(answer) = self.answer_in(event.data().as_bytes(), id).await {
                    return answer;
                }
            }
        }
        Err(closed())
    }

    /// Takes one message from the agent: the answer to `id` ends the call; anything else is
    /// served (a request's answer is posted back) and the call goes on.
    async fn answer_in(
        &self,
        bytes: &[u8],
        id: &RequestId,
    ) -> Option<Result<Box<RawValue>, CallError>> {
        self.observe(WireDirection::FromAgent, bytes);
        let message = decode_message(bytes, &DecodeLimits::default()).ok()?;
        match message {
            Message::Response(response) if response.id() == Some(id) => {
                Some(response.into_outcome().map_err(CallError::Rejected))
            }
            Message::Response(_) => None,
            Message::Notification(_) => {
                (self.inbound)(message).await;
                None
            }
            Message::Request(_) => {
                if let Some(answer) = (self.inbound)(message).await {
                    let body = Message::Response(answer).to_bytes();
                    if let Err(error) = self.post(body, None).await {
                        tracing::debug!(%error, "could not post an answer to the agent");
                    }
                }
                None
            }
        }
    }

    async fn delete(&self) -> Result<(), CallError> {
        let Some((connection, _)) = self.connection.lock().await.take() else {
            return Ok(());
        };
        self.http
            .delete(&self.url)
            .header(CONNECTION_HEADER, connection)
            .send()
            .await
            .map(|_| ())
            .map_err(|error| CallError::Transport(transport(&error)))
    }

    fn observe(&self, direction: WireDirection, bytes: &[u8]) {
        if let Some(observer) = &self.observer {
            observer(direction, bytes);
        }
    }
}

fn closed() -> CallError {
    CallError::Transport(protocols_runtime::peer::PeerError::Closed)
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
    let raw = to_raw(params)
        .map_err(|_| CallError::Transport(protocols_runtime::peer::PeerError::Unserializable))?;
    Ok((raw.get() != "null").then_some(raw))
}

/// The ACP session a message's params name, sent as `Acp-Session-Id`.
fn session_id(params: Option<&RawValue>) -> Option<String> {
    let params: serde_json::Value = serde_json::from_str(params?.get()).ok()?;
    params.get("sessionId")?.as_str().map(str::to_owned)
}
