//! The Streamable HTTP transport: `POST` carries messages and is answered with JSON or an SSE
//! stream, `GET` opens (or resumes) the session's server-initiated stream, `DELETE` ends a
//! session; configured [`SessionMode::Sessionless`], there are no sessions and every `POST`
//! stands alone. This module decides how a request is framed and which session it belongs to, and
//! nothing else: authentication, origin checks and limits are the hardening layer's (it runs
//! first, so no session is looked up for an unproven caller), and what a message means is the
//! handler's.
//!
//! This file owns the configuration, the transport and the mapping of a denial to a response;
//! each step of serving lives in its own module: [`negotiate`] (media types and framing),
//! [`session`] (which session a request belongs to), [`post`] (a `POST` read, admitted and
//! answered), [`answer_stream`] (a `POST` answered as a stream), [`stream`] (`GET`, `DELETE`)
//! and [`endpoint`] (the one service that routes by method).

mod answer_stream;
mod endpoint;
mod negotiate;
mod post;
mod session;
mod stream;

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::response::Response;
use http::{HeaderMap, HeaderName, HeaderValue, header};
use tokio_util::sync::CancellationToken;

pub(crate) use endpoint::{Endpoint, EndpointFuture};
pub(crate) use negotiate::content_type_is;
pub(crate) use post::decode_refusal;

pub use crate::handler::SessionMode;
use crate::handler::{DEFAULT_PEER_TIMEOUT, Rejection, RequestHandler, Served};
use crate::hardening::{EchoId, Hardening, Refusal, response_headers};
use crate::jsonrpc::{DecodeLimits, Message, RequestId, Response as RpcResponse};
use crate::peer::Conversation;
use crate::quote::quote;
use crate::relay::{Relay, RelayLink};
use crate::session::{
    Clock, LazyReaper, MemorySessionStore, Session, SessionId, SessionLimits, SessionStore,
    StoreError, SystemClock,
};
use crate::stream::StreamPolicy;
use crate::tail::{EventStore, MemoryEventStore};

/// How a `POST` with requests in it is answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResponseMode {
    /// Plain JSON; messages the handler sends meanwhile go to the session's own stream.
    Json,
    /// Always an SSE stream.
    Sse,
    /// JSON, unless the handler sends something before its answer; then an SSE stream.
    Auto,
}

/// The transport's configuration.
#[derive(Clone)]
#[non_exhaustive]
pub struct HttpConfig {
    /// Whether requests are answered with JSON, an SSE stream, or JSON unless the handler sends first.
    pub response_mode: ResponseMode,
    /// Whether each client gets a session, or every `POST` stands alone ([`SessionMode`]).
    /// Streamable HTTP only: the legacy HTTP+SSE transport always has sessions.
    pub session_mode: SessionMode,
    /// Bounds on each body's JSON; the byte bound applies when no hardening set one.
    pub limits: DecodeLimits,
    /// How long sessions live and how many may be open.
    pub sessions: SessionLimits,
    /// Events each stream keeps for resumption.
    pub tail_capacity: usize,
    /// How SSE answers keep alive, close and announce their reconnection delay.
    pub streams: StreamPolicy,
    /// How long a server→client request waits for its answer.
    pub peer_timeout: Duration,
    /// How often expired sessions are reaped.
    pub reap_every: Duration,
    /// The clock session expiry reads (a manual one in tests).
    pub clock: Arc<dyn Clock>,
    /// Fired when the server starts draining: a session's own (`GET`) stream, which owes no
    /// answer, ends with a `retry`.
    pub drain: CancellationToken,
    /// Fired at the drain deadline: every stream still open (answers included) ends with a
    /// `retry`, cleanly.
    pub shutdown: CancellationToken,
    /// How this replica reaches the others sharing its session store ([`Relay`]): with one,
    /// server→client request ids carry the replica's tag, an answer posted to another replica
    /// is relayed back, and a cancellation for a request running elsewhere reaches it. `None`
    /// (the default): one replica, nothing relayed.
    pub relay: Option<Arc<dyn Relay>>,
}

impl std::fmt::Debug for HttpConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpConfig")
            .field("response_mode", &self.response_mode)
            .field("session_mode", &self.session_mode)
            .field("limits", &self.limits)
            .field("sessions", &self.sessions)
            .field("tail_capacity", &self.tail_capacity)
            .field("streams", &self.streams)
            .field("relay", &self.relay.as_ref().map(|relay| relay.tag()))
            .finish_non_exhaustive()
    }
}

impl Default for HttpConfig {
    fn default() -> Self {
        Self {
            response_mode: ResponseMode::Auto,
            session_mode: SessionMode::PerClient,
            limits: DecodeLimits::default(),
            sessions: SessionLimits::default(),
            tail_capacity: 1024,
            streams: StreamPolicy {
                keep_alive: Some(Duration::from_secs(15)),
                ..StreamPolicy::default()
            },
            peer_timeout: DEFAULT_PEER_TIMEOUT,
            reap_every: Duration::from_secs(30),
            clock: Arc::new(SystemClock),
            drain: CancellationToken::new(),
            shutdown: CancellationToken::new(),
            relay: None,
        }
    }
}

impl HttpConfig {
    /// Sets [`relay`](Self::relay): this replica reaches the others through `relay`.
    #[must_use]
    pub fn relay(mut self, relay: Arc<dyn Relay>) -> Self {
        self.relay = Some(relay);
        self
    }
}

crate::config_setters!(HttpConfig {
    response_mode: ResponseMode,
    session_mode: SessionMode,
    limits: DecodeLimits,
    sessions: SessionLimits,
    tail_capacity: usize,
    streams: StreamPolicy,
    peer_timeout: Duration,
    reap_every: Duration,
    clock: Arc<dyn Clock>,
    drain: CancellationToken,
    shutdown: CancellationToken,
});

/// One protocol served over Streamable HTTP.
pub struct StreamableHttp<H: RequestHandler> {
    handler: H,
    config: HttpConfig,
    store: Arc<dyn SessionStore<H::Session>>,
    /// Whether the store saves state after a request ([`SessionStore::saves_state`]), asked
    /// once: a store holding live sessions costs a request nothing after its answer.
    saves_state: bool,
    /// Whether every store answer is ready at once ([`SessionStore::answers_at_once`]), asked
    /// once: admission then runs in place, without a box.
    answers_at_once: bool,
    /// Where sessions' event streams live.
    events: Arc<dyn EventStore>,
    /// Without sessions, the one conversation that correlates the answers to requests a
    /// handler sent on its `POST`'s stream (the answers come on other `POST`s).
    relay: Option<Arc<Conversation>>,
    /// With [`HttpConfig::relay`], the link to the other replicas.
    routing: Option<Arc<RelayLink>>,
    /// Whether the event store answers at once ([`EventStore::answers_at_once`]), asked once:
    /// a request answered as JSON then opens its session's stream in place, without a box.
    events_at_once: bool,
    reaper: LazyReaper,
    /// The profile's media type as a header value, parsed once.
    content_type: HeaderValue,
}

impl<H: RequestHandler> std::fmt::Debug for StreamableHttp<H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamableHttp")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl<H: RequestHandler> StreamableHttp<H> {
    /// Serves `handler` with an in-memory session store.
    pub fn new(handler: H, config: HttpConfig) -> Self {
        let store = Arc::new(MemorySessionStore::new(config.sessions));
        Self::with_store(handler, config, store)
    }

    /// Serves `handler` with a session store of the caller's; event streams stay in memory.
    pub fn with_store(
        handler: H,
        config: HttpConfig,
        store: Arc<dyn SessionStore<H::Session>>,
    ) -> Self {
        let events = Arc::new(MemoryEventStore::new(config.tail_capacity));
        Self::with_stores(handler, config, store, events)
    }

    /// Serves `handler` with a session store and an event store of the caller's: replicas that
    /// share both serve any session and resume any stream.
    pub fn with_stores(
        handler: H,
        config: HttpConfig,
        store: Arc<dyn SessionStore<H::Session>>,
        events: Arc<dyn EventStore>,
    ) -> Self {
        crate::panic_boundary::install();
        let content_type = HeaderValue::from_str(handler.profile().media_type())
            .unwrap_or_else(|_| HeaderValue::from_static("application/json"));
        let relay = match config.session_mode {
            SessionMode::PerClient => None,
            SessionMode::Sessionless => Some(Arc::new(Conversation::unguessable())),
        };
        let routing = config
            .relay
            .as_ref()
            .map(|relay| RelayLink::new(Arc::clone(relay), config.shutdown.clone()));
        Self {
            handler,
            config,
            relay,
            routing,
            saves_state: store.saves_state(),
            answers_at_once: store.answers_at_once(),
            store,
            events_at_once: events.answers_at_once(),
            events,
            reaper: LazyReaper::new(),
            content_type,
        }
    }

    /// The header naming a session here: the profile's, unless the endpoint keeps no sessions.
    /// The one place that decides it, so an endpoint without sessions issues none, looks none
    /// up and answers `GET` and `DELETE` as a protocol without sessions does.
    fn session_header(&self) -> Option<&HeaderName> {
        match self.config.session_mode {
            SessionMode::PerClient => self.handler.profile().session_header(),
            SessionMode::Sessionless => None,
        }
    }

    /// How a request with (or without) `session` was served, for the status of its answer;
    /// on an endpoint without sessions the protocol says, from the request's `headers`.
    fn served(&self, session: Option<&Arc<Session<H::Session>>>, headers: &HeaderMap) -> Served {
        match (session, self.config.session_mode) {
            (Some(_), _) => Served::InSession,
            (None, SessionMode::PerClient) => Served::Sessionless,
            (None, SessionMode::Sessionless) => self.handler.served_without_sessions(headers),
        }
    }

    /// The session store, e.g. to count live sessions.
    pub fn store(&self) -> Arc<dyn SessionStore<H::Session>> {
        Arc::clone(&self.store)
    }

    /// The transport as one service, for [`Hardening::harden`].
    pub(crate) fn into_endpoint(self) -> Endpoint<H> {
        Endpoint(Arc::new(self))
    }

    /// The route at `path`, without hardening (the composition applies it once to everything).
    /// It is the same [`Endpoint`] service a mount hardens, so it owns `path` outright.
    pub fn into_routes(self, path: &str) -> Router {
        Router::new().route_service(path, self.into_endpoint())
    }
}

/// The one-call server for tests and simple deployments: `handler` at `path`, hardened.
pub fn router<H: RequestHandler>(
    path: &str,
    handler: H,
    config: HttpConfig,
    hardening: &Hardening,
) -> Router {
    let endpoint = hardening.harden(StreamableHttp::new(handler, config).into_endpoint());
    hardening
        .wrap(Router::new())
        .merge(Router::new().route_service(path, endpoint))
}

/// A refusal echoing the request id when it is known. Out of line, as every refusal is: the
/// path a served request takes stays short.
#[cold]
#[inline(never)]
fn refuse(refusal: Refusal, id: Option<&RequestId>) -> Response {
    refusal.into_response_with_id(echo(id).as_ref())
}

/// The refusal a store's failure is owed (the session store's or the event store's): a full
/// store sheds the request, a failed one is unavailable (never "unknown session": the session
/// may well exist).
#[cold]
#[inline(never)]
fn store_refusal(error: StoreError) -> Refusal {
    match error {
        StoreError::LimitReached => Refusal::Overloaded,
        error => {
            tracing::warn!(error = %error, source = ?std::error::Error::source(&error), "a store failed");
            Refusal::StoreUnavailable
        }
    }
}

/// The id a refusal may echo; the hardening decides which ids are safe to reflect.
pub(crate) fn echo(id: Option<&RequestId>) -> Option<EchoId> {
    let value = match id? {
        RequestId::Number(number) => serde_json::Value::from(*number),
        RequestId::String(text) => serde_json::Value::from(text.as_ref()),
    };
    EchoId::from_json(&value)
}

/// The protocol's own refusal: its status and its JSON-RPC error.
#[cold]
#[inline(never)]
fn reject(rejection: &Rejection, id: Option<&RequestId>) -> Response {
    let body =
        Message::Response(RpcResponse::error(id.cloned(), rejection.error().clone())).to_bytes();
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = rejection.status();
    *response.headers_mut() = response_headers();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// Why an admitted caller's request is still not served: the transport's refusal or the
/// protocol's rejection.
enum Denial {
    Refused(Refusal),
    Rejected(Rejection),
}

impl Denial {
    fn into_response(self, id: Option<&RequestId>) -> Response {
        match self {
            Self::Refused(refusal) => refuse(refusal, id),
            Self::Rejected(rejection) => reject(&rejection, id),
        }
    }
}

/// Names the session in the current request's span (quoted: the caller named it).
#[inline(never)]
fn record_session(id: &SessionId) {
    tracing::Span::current().record("session", tracing::field::display(quote(id)));
}
