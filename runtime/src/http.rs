//! The Streamable HTTP transport: `POST` carries messages and is answered with JSON or an SSE
//! stream, `GET` opens (or resumes) the session's server-initiated stream, `DELETE` ends a
//! session. This module decides how a request is framed and which session it belongs to, and
//! nothing else: authentication, origin checks and limits are the hardening layer's (it runs
//! first, so no session is looked up for an unproven caller), and what a message means is the
//! handler's.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::Request as HttpRequest;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use futures::future::BoxFuture;
use http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, header};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::dispatch::{Outcome, Scope, answer_request, serve_message};
use crate::handler::{
    DEFAULT_PEER_TIMEOUT, Rejection, RequestHandler, RequestMeta, Served, Unsessioned,
};
use crate::hardening::{
    BodyLimit, EchoId, Hardening, Refusal, RefusalAnswer, Refused, read_body, response_headers,
};
use crate::header_scan::find_two;
use crate::jsonrpc::{
    DecodeError, DecodeLimits, InvalidMessage, Message, Payload, Request, RequestId,
    Response as RpcResponse, batch_to_bytes, decode,
};
use crate::peer::{Peer, Route};
use crate::quote::quote;
use crate::session::{
    Clock, LazyReaper, MemorySessionStore, Session, SessionId, SessionLimits, SessionStore,
    SystemClock,
};
use crate::sse::EventId;
use crate::stream::{Drain, Framing, Priming, Stops, StreamPolicy, sse_response};
use crate::tail::{
    EventCursor, EventReader, EventStore, EventStream, EventTail, MemoryEventStore, Start,
};

const EVENT_STREAM: &str = "text/event-stream";
const LAST_EVENT_ID: HeaderName = HeaderName::from_static("last-event-id");

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
    pub response_mode: ResponseMode,
    /// Bounds on each body's JSON; the byte bound applies when no hardening set one.
    pub limits: DecodeLimits,
    pub sessions: SessionLimits,
    /// Events each stream keeps for resumption.
    pub tail_capacity: usize,
    pub streams: StreamPolicy,
    /// How long a server→client request waits for its answer.
    pub peer_timeout: Duration,
    /// How often expired sessions are reaped.
    pub reap_every: Duration,
    pub clock: Arc<dyn Clock>,
    /// Fired when the server starts draining: a session's own (`GET`) stream, which owes no
    /// answer, ends with a `retry`.
    pub drain: CancellationToken,
    /// Fired at the drain deadline: every stream still open (answers included) ends with a
    /// `retry`, cleanly.
    pub shutdown: CancellationToken,
}

impl std::fmt::Debug for HttpConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpConfig")
            .field("response_mode", &self.response_mode)
            .field("limits", &self.limits)
            .field("sessions", &self.sessions)
            .field("tail_capacity", &self.tail_capacity)
            .field("streams", &self.streams)
            .finish_non_exhaustive()
    }
}

impl Default for HttpConfig {
    fn default() -> Self {
        Self {
            response_mode: ResponseMode::Auto,
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
        }
    }
}

crate::config_setters!(HttpConfig {
    response_mode: ResponseMode,
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
    /// Where sessions' event streams live.
    events: Arc<dyn EventStore>,
    reaper: LazyReaper,
    /// The profile's media type as a header value, parsed once.
    content_type: HeaderValue,
    /// The header map a plain JSON answer is built with, once a hardening serving this
    /// transport directly has offered one carrying its security headers: the guard then finds
    /// them in place. A transport hardened more than once keeps the first offer; the guard
    /// stamps any answer it does not recognise as usual.
    json_answer: OnceLock<HeaderMap>,
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
        Self {
            handler,
            config,
            store,
            events,
            reaper: LazyReaper::new(),
            content_type,
            json_answer: OnceLock::new(),
        }
    }

    /// The session store, e.g. to count live sessions.
    pub fn store(&self) -> Arc<dyn SessionStore<H::Session>> {
        Arc::clone(&self.store)
    }

    /// The transport as one service, for [`Hardening::endpoint`].
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
    let endpoint = hardening.endpoint(path, StreamableHttp::new(handler, config).into_endpoint());
    hardening.wrap(Router::new()).merge(endpoint)
}

/// A refusal echoing the request id when it is known. Out of line, as every refusal is: the
/// path a served request takes stays short.
#[cold]
#[inline(never)]
fn refuse(refusal: Refusal, id: Option<&RequestId>) -> Response {
    refusal.into_response_with_id(echo(id).as_ref())
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

/// How a request with (or without) `session` was served, for the status of its answer.
fn served<S>(session: Option<&Arc<Session<S>>>) -> Served {
    match session {
        Some(_) => Served::InSession,
        None => Served::Sessionless,
    }
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

/// What the client's `Accept` admits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Accepts {
    json: bool,
    sse: bool,
}

impl Accepts {
    const BOTH: Self = Self {
        json: true,
        sse: true,
    };

    /// An absent `Accept` admits anything.
    fn read(headers: &HeaderMap, json_type: &str) -> Self {
        let mut values = headers.get_all(header::ACCEPT).iter();
        let first = values.next();
        let several = values.next().is_some();
        Self::from_first(first, several, headers, json_type)
    }

    /// What `Accept` admits, given its first value and whether it has `several`: a single
    /// common value is recognised whole; anything else is parsed from `headers`.
    fn from_first(
        first: Option<&HeaderValue>,
        several: bool,
        headers: &HeaderMap,
        json_type: &str,
    ) -> Self {
        let Some(first) = first else {
            return Self::BOTH;
        };
        if !several && let Some(accepts) = Self::common(first.as_bytes(), json_type.as_bytes()) {
            return accepts;
        }
        Self::parse(headers.get_all(header::ACCEPT).iter(), json_type)
    }

    /// The general parse of every `Accept` value.
    fn parse<'a>(values: impl Iterator<Item = &'a HeaderValue>, json_type: &str) -> Self {
        let mut accepts = Self {
            json: false,
            sse: false,
        };
        // Split as bytes, without `str` pattern searchers: this runs on every POST. A value
        // that is not visible ASCII is skipped whole.
        for value in values.filter(|value| value.to_str().is_ok()) {
            for element in value.as_bytes().split(|&byte| byte == b',') {
                let range = bare_media_type(element);
                accepts.json |= media_range_admits(range, json_type.as_bytes());
                accepts.sse |= media_range_admits(range, EVENT_STREAM.as_bytes());
            }
        }
        accepts
    }

    /// The values clients send most (the media type alone, or with the event stream on either
    /// side), recognised whole before the general parse, which would give the same answer.
    fn common(value: &[u8], json_type: &[u8]) -> Option<Self> {
        const SSE_AFTER: &[u8] = b", text/event-stream";
        const SSE_BEFORE: &[u8] = b"text/event-stream, ";
        if value == json_type {
            return Some(Self {
                json: true,
                sse: false,
            });
        }
        let both = value
            .strip_prefix(json_type)
            .is_some_and(|rest| rest == SSE_AFTER)
            || value
                .strip_prefix(SSE_BEFORE)
                .is_some_and(|rest| rest == json_type);
        both.then_some(Self::BOTH)
    }
}

/// The media type of an `Accept` element or a `Content-Type`: parameters and the whitespace
/// around it dropped.
fn bare_media_type(text: &[u8]) -> &[u8] {
    text.split(|&byte| byte == b';')
        .next()
        .unwrap_or_default()
        .trim_ascii()
}

/// Whether the `Accept` media range `range` admits `media` (exactly, `type/*` or `*/*`).
fn media_range_admits(range: &[u8], media: &[u8]) -> bool {
    if range == b"*/*" || range.eq_ignore_ascii_case(media) {
        return true;
    }
    let Some(range_type) = range.strip_suffix(b"/*") else {
        return false;
    };
    media
        .iter()
        .position(|&byte| byte == b'/')
        .and_then(|slash| media.get(..slash))
        .is_some_and(|media_type| media_type.eq_ignore_ascii_case(range_type))
}

/// How this answer is framed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Framed {
    Json,
    Sse,
    Auto,
    /// For a client that accepts only SSE: a stream, unless the request is refused before
    /// anything is sent, which is answered as plain JSON (a refusal is not a stream).
    SseOrRefusal,
}

fn choose_framing(mode: ResponseMode, accepts: Accepts) -> Option<Framed> {
    match (mode, accepts.json, accepts.sse) {
        (_, false, false) => None,
        (ResponseMode::Json, true, _) | (_, true, false) => Some(Framed::Json),
        (ResponseMode::Auto, false, true) => Some(Framed::SseOrRefusal),
        (ResponseMode::Sse, _, true) | (_, false, true) => Some(Framed::Sse),
        (ResponseMode::Auto, true, true) => Some(Framed::Auto),
    }
}

/// Whether the request's `Content-Type` is `media_type` (parameters aside).
pub(crate) fn content_type_is(headers: &HeaderMap, media_type: &str) -> bool {
    is_media_type(headers.get(header::CONTENT_TYPE), media_type)
}

/// Whether a `Content-Type` value is `media_type` (parameters aside).
fn is_media_type(value: Option<&HeaderValue>, media_type: &str) -> bool {
    let Some(value) = value else {
        return false;
    };
    // The exact media type, as nearly every client sends it, needs no parsing.
    value.as_bytes() == media_type.as_bytes()
        || (value.to_str().is_ok()
            && bare_media_type(value.as_bytes()).eq_ignore_ascii_case(media_type.as_bytes()))
}

/// The session the header names, if it names one. A header naming more than one value (two
/// lines, or one line with a comma: no issued id has one) is ambiguous and refused.
fn session_id(headers: &HeaderMap, name: &HeaderName) -> Result<Option<SessionId>, Refusal> {
    let mut values = headers.get_all(name).iter();
    let Some(value) = values.next() else {
        return Ok(None);
    };
    if values.next().is_some() {
        return Err(Refusal::MalformedSessionId);
    }
    let text = value.to_str().map_err(|_| Refusal::MalformedSessionId)?;
    if text.contains(',') {
        return Err(Refusal::MalformedSessionId);
    }
    text.parse()
        .map(Some)
        .map_err(|_| Refusal::MalformedSessionId)
}

/// The session a request resolved to.
enum Resolved<S> {
    /// No session: stateless, or a protocol without sessions.
    None,
    /// A session this request opens; stored now, forgotten again if the opening fails.
    Opening(Arc<Session<S>>),
    Live(Arc<Session<S>>),
}

impl<S> Resolved<S> {
    fn session(&self) -> Option<&Arc<Session<S>>> {
        match self {
            Self::None => None,
            Self::Opening(session) | Self::Live(session) => Some(session),
        }
    }

    /// The session this request opens, if it opens one.
    fn opening(&self) -> Option<&Arc<Session<S>>> {
        match self {
            Self::Opening(session) => Some(session),
            Self::None | Self::Live(_) => None,
        }
    }

    fn into_opening(self) -> Option<Arc<Session<S>>> {
        match self {
            Self::Opening(session) => Some(session),
            Self::None | Self::Live(_) => None,
        }
    }
}

/// A decoded body: its valid messages, and the invalid entries of a batch.
struct Inbound {
    messages: Messages,
    invalid: Vec<InvalidMessage>,
    batch: bool,
}

/// A body's valid messages: a single message held inline (the common case, no allocation), or
/// a batch's.
enum Messages {
    One(Message),
    Many(Vec<Message>),
}

impl Messages {
    fn as_slice(&self) -> &[Message] {
        match self {
            Self::One(message) => std::slice::from_ref(message),
            Self::Many(messages) => messages,
        }
    }
}

impl IntoIterator for Messages {
    type Item = Message;
    type IntoIter = std::iter::Chain<std::option::IntoIter<Message>, std::vec::IntoIter<Message>>;

    fn into_iter(self) -> Self::IntoIter {
        let (one, many) = match self {
            Self::One(message) => (Some(message), Vec::new()),
            Self::Many(messages) => (None, messages),
        };
        one.into_iter().chain(many)
    }
}

impl Inbound {
    fn from_payload(payload: Payload) -> Self {
        match payload {
            Payload::Single(message) => Self {
                messages: Messages::One(message),
                invalid: Vec::new(),
                batch: false,
            },
            Payload::Batch(entries) => {
                let (mut messages, mut invalid) = (Vec::new(), Vec::new());
                for entry in entries {
                    match entry {
                        Ok(message) => messages.push(message),
                        Err(error) => invalid.push(error),
                    }
                }
                Self {
                    messages: Messages::Many(messages),
                    invalid,
                    batch: true,
                }
            }
        }
    }

    /// The body's request when it is a single request (not a batch); the body itself otherwise.
    fn into_single_request(self) -> Result<Request, Self> {
        match self {
            Self {
                messages: Messages::One(Message::Request(request)),
                batch: false,
                ..
            } => Ok(request),
            other => Err(other),
        }
    }

    fn has_requests(&self) -> bool {
        self.messages
            .as_slice()
            .iter()
            .any(|message| matches!(message, Message::Request(_)))
    }

    /// The id a refusal of the whole body echoes: the single request's.
    fn echo_id(&self) -> Option<&RequestId> {
        match (self.batch, self.messages.as_slice().first()) {
            (false, Some(Message::Request(request))) => Some(&request.id),
            _ => None,
        }
    }
}

/// The refusal a body that did not decode is owed.
pub(crate) fn decode_refusal(error: &DecodeError) -> Refusal {
    match error {
        DecodeError::TooLarge { .. } => Refusal::BodyTooLarge,
        DecodeError::NotJson | DecodeError::InvalidUtf8 | DecodeError::TooDeep { .. } => {
            Refusal::ParseError
        }
        DecodeError::EmptyBatch | DecodeError::Invalid(_) => Refusal::InvalidRequest,
    }
}

/// A `POST` whose head passed the transport's checks: what its body is read and answered with.
struct PostStart {
    body: Body,
    limit: usize,
    meta: Arc<RequestMeta>,
    framing: Framed,
}

/// A `POST`'s work once its head passed: read the body, then answer it. While reading it holds
/// only the transport, the request's metadata and the body (the head was taken apart before);
/// the single request's answer then takes the read's place, awaited here rather than through
/// further layers, so the state each request boxes is little more than its handler's own
/// future, built and moved once.
fn serve_post<H: RequestHandler>(
    transport: Arc<StreamableHttp<H>>,
    start: PostStart,
) -> impl Future<Output = Result<Response, Infallible>> + Send {
    let PostStart {
        body,
        limit,
        meta,
        framing,
    } = start;
    async move {
        let read = read_body(body, limit).await;
        // In a block of its own, so what was prepared is gone before the request's future is
        // awaited, and does not stay beside it in this future's state.
        let (request, scope, opening) = {
            let prepared = transport.prepare_post(read, limit, meta, framing);
            match prepared {
                Prepared::One {
                    request,
                    scope,
                    opening,
                } => (request, scope, opening),
                Prepared::Other(answer) => return Ok(answer.await),
            }
        };
        let served = served(scope.session.as_ref());
        let mut answering = std::pin::pin!(answer_request(&transport.handler, request, scope));
        let answer = answering.as_mut().await;
        let outcome = answering.outcome();
        Ok(transport.finish_one(answer, opening.as_ref(), outcome, served))
    }
}

/// What a `POST`'s read body comes to before anything runs.
// `One` is much the largest, and the common case: it lives only until its parts are moved
// into the request's future, and boxing it would cost the allocation this path avoids.
#[allow(clippy::large_enum_variant)]
enum Prepared<S> {
    /// A single request answered as plain JSON, run in the `POST`'s own future.
    One {
        request: Request,
        scope: Scope<S>,
        opening: Option<Arc<Session<S>>>,
    },
    /// Anything else, boxed: a refusal, or the future of a rarer body (one without requests, a
    /// batch, an answer that may stream), whose larger state stays out of the common
    /// request's.
    Other(BoxFuture<'static, Response>),
}

impl<S> Prepared<S> {
    #[cold]
    #[inline(never)]
    fn refused(refusal: Refusal, id: Option<&RequestId>) -> Self {
        Self::answered(refuse(refusal, id))
    }

    /// A body that did not decode.
    #[cold]
    #[inline(never)]
    fn undecoded(error: &DecodeError) -> Self {
        Self::refused(decode_refusal(error), error.request_id())
    }

    /// A request the transport or the protocol would not serve.
    #[cold]
    #[inline(never)]
    fn denied(denial: Denial, id: Option<&RequestId>) -> Self {
        Self::answered(denial.into_response(id))
    }

    fn answered(response: Response) -> Self {
        Self::Other(Box::pin(std::future::ready(response)))
    }
}

/// The methods the endpoint serves, as its `405` names them (`GET` answers `HEAD` too).
const ALLOWED_METHODS: &str = "POST,GET,HEAD,DELETE";

/// The transport as one tower service that routes by method itself, for
/// [`Hardening::endpoint`]: hardened that way it is a single boxed route, where a
/// `MethodRouter` behind `Router::layer` is three (a service box cloned and a future boxed at
/// each), and a `POST`'s work is boxed once here.
pub(crate) struct Endpoint<H: RequestHandler>(Arc<StreamableHttp<H>>);

impl<H: RequestHandler> Clone for Endpoint<H> {
    fn clone(&self) -> Self {
        Self(Arc::clone(&self.0))
    }
}

/// Boxed whatever the method: a `POST`'s work has to be, and a response held inline would make
/// every request's future as large as a response, copied at each layer it passes.
pub(crate) type EndpointFuture =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<Response, Infallible>> + Send>>;

impl<H: RequestHandler> tower::Service<HttpRequest> for Endpoint<H> {
    type Response = Response;
    type Error = Infallible;
    type Future = EndpointFuture;

    fn poll_ready(
        &mut self,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Infallible>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: HttpRequest) -> EndpointFuture {
        crate::hardening::SharedService::serve(self, request)
    }
}

impl<H: RequestHandler> crate::hardening::SharedService for Endpoint<H> {
    type Future = EndpointFuture;

    fn serve(&self, request: HttpRequest) -> EndpointFuture {
        self.answer(request, None)
    }

    fn serve_within(
        &self,
        request: HttpRequest,
        limit: BodyLimit,
        peer: SocketAddr,
    ) -> EndpointFuture {
        self.answer(request, Some(HandedDown { limit, peer }))
    }

    fn answer_json_with(&self, headers: &HeaderMap) {
        // Taken only when it labels an answer with this profile's media type.
        if headers.get(header::CONTENT_TYPE) == Some(&self.0.content_type) {
            let _first_offer_kept = self.0.json_answer.set(headers.clone());
        }
    }
}

impl<H: RequestHandler> Endpoint<H> {
    /// Answers by method, the transport's refusals in the protocol's terms when its profile
    /// has its own ([`crate::Profile::with_refusal_answers`]).
    fn answer(&self, request: HttpRequest, handed: Option<HandedDown>) -> EndpointFuture {
        let answer = self.answer_by_method(request, handed);
        match self.0.handler.profile().refusal_answers() {
            None => answer,
            Some(answers) => Box::pin(async move {
                answer
                    .await
                    .map(|response| reanswer_refusal(response, answers))
            }),
        }
    }

    /// A POST's body is read within the limit `handed` down with it, or else within the limit
    /// its [`BodyLimit`] extension names, or else the transport's own.
    fn answer_by_method(&self, request: HttpRequest, handed: Option<HandedDown>) -> EndpointFuture {
        if *request.method() != Method::POST {
            return self.answer_other(&request);
        }
        let span = tracing::debug_span!("post", session = tracing::field::Empty);
        let started = {
            let _entered = span.enter();
            self.0.start_post(request, handed)
        };
        match started {
            Ok(start) => Box::pin(serve_post(Arc::clone(&self.0), start).instrument(span)),
            Err(refusal) => answered(refuse(refusal, None)),
        }
    }

    /// Every method but `POST`, answered at once.
    #[inline(never)]
    fn answer_other(&self, request: &HttpRequest) -> EndpointFuture {
        let answer = match *request.method() {
            Method::GET => self.0.serve_get(request.headers()),
            // As axum answers `HEAD` on a `get` route: the `GET` answer's head alone.
            Method::HEAD => {
                let mut response = self.0.serve_get(request.headers());
                *response.body_mut() = Body::empty();
                response
            }
            Method::DELETE => self.0.serve_delete(request.headers()),
            _ => Refusal::MethodNotAllowed(Some(HeaderValue::from_static(ALLOWED_METHODS)))
                .into_response(),
        };
        answered(answer)
    }
}

/// A refusal answered again as the protocol's `answers` say; any other response as it is.
#[cold]
fn reanswer_refusal(
    response: Response,
    answers: fn(&Refusal) -> Option<RefusalAnswer>,
) -> Response {
    let Some(refused) = response.extensions().get::<Refused>() else {
        return response;
    };
    match answers(&refused.refusal) {
        Some(answer) => {
            let Refused { refusal, id } = refused.clone();
            refusal.into_response_as(id.as_ref(), answer)
        }
        None => response,
    }
}

/// What a server that owns its listener hands a directly mounted transport with each request,
/// rather than as request extensions.
#[derive(Debug, Clone, Copy)]
struct HandedDown {
    limit: BodyLimit,
    peer: SocketAddr,
}

/// A response ready at once, as an [`EndpointFuture`].
fn answered(response: Response) -> EndpointFuture {
    Box::pin(std::future::ready(Ok(response)))
}

/// Names the session in the current request's span (quoted: the caller named it).
#[inline(never)]
fn record_session(id: &SessionId) {
    tracing::Span::current().record("session", tracing::field::display(quote(id)));
}

impl<H: RequestHandler> StreamableHttp<H> {
    fn serve_get(&self, headers: &HeaderMap) -> Response {
        // The stream's body runs in this span too, for as long as the stream stays open.
        let span = tracing::debug_span!("get", session = tracing::field::Empty);
        span.in_scope(|| self.open_stream(headers))
    }

    fn serve_delete(&self, headers: &HeaderMap) -> Response {
        let span = tracing::debug_span!("delete", session = tracing::field::Empty);
        span.in_scope(|| self.end_session(headers))
    }

    /// The checks a `POST`'s head must pass before its body is read; the head is taken apart
    /// here, so what the body's reading holds on to is small.
    fn start_post(
        &self,
        request: HttpRequest,
        handed: Option<HandedDown>,
    ) -> Result<PostStart, Refusal> {
        self.reaper.ensure::<H::Session, _>(
            &self.store,
            &self.config.clock,
            self.config.reap_every,
        );
        let (parts, body) = request.into_parts();
        let profile = self.handler.profile();
        let [content_type, accept] =
            find_two(&parts.headers, [&header::CONTENT_TYPE, &header::ACCEPT]);
        if !is_media_type(content_type.first, profile.media_type()) {
            return Err(Refusal::UnsupportedMediaType);
        }
        let accepts = Accepts::from_first(
            accept.first,
            accept.repeated,
            &parts.headers,
            profile.media_type(),
        );
        let Some(framing) = choose_framing(self.config.response_mode, accepts) else {
            return Err(Refusal::NotAcceptable);
        };
        let limit = handed
            .map(|handed| handed.limit)
            .or_else(|| parts.extensions.get::<BodyLimit>().copied())
            .map_or(self.config.limits.max_bytes, |limit| limit.0);
        let meta = RequestMeta::new(parts.headers, parts.extensions, profile);
        let meta = match handed {
            Some(handed) => meta.with_peer_address(handed.peer),
            None => meta,
        };
        let meta = Arc::new(meta);
        Ok(PostStart {
            body,
            limit,
            meta,
            framing,
        })
    }

    /// Decodes a read body, resolves its session and admits it, before anything runs.
    fn prepare_post(
        self: &Arc<Self>,
        read: Result<Bytes, Refusal>,
        limit: usize,
        meta: Arc<RequestMeta>,
        framing: Framed,
    ) -> Prepared<H::Session> {
        let bytes = match read {
            Ok(bytes) => bytes,
            Err(refusal) => return Prepared::refused(refusal, None),
        };
        let body = match self.decode_inbound(&bytes, limit) {
            Ok(body) => body,
            Err(error) => return Prepared::undecoded(&error),
        };
        let resolved = match self.resolve_post_session(&meta.headers, &body) {
            Ok(resolved) => resolved,
            Err(refusal) => return Prepared::refused(refusal, body.echo_id()),
        };
        if let Some(session) = resolved.session() {
            record_session(session.id());
        }
        if let Err(denial) = self.admit_inbound(&meta.headers, &body, &resolved) {
            return Prepared::denied(denial, body.echo_id());
        }
        // Only an admitted opening is stored, so a refused one leaves nothing behind.
        if let Resolved::Opening(session) = &resolved
            && self.store.insert(Arc::clone(session)).is_err()
        {
            return Prepared::refused(Refusal::Overloaded, body.echo_id());
        }
        let body = match framing {
            Framed::Json => match body.into_single_request() {
                Ok(request) => {
                    let scope = self.scope(&resolved, meta, Self::side_route(&resolved));
                    let opening = resolved.into_opening();
                    return Prepared::One {
                        request,
                        scope,
                        opening,
                    };
                }
                Err(body) => body,
            },
            Framed::Sse | Framed::Auto | Framed::SseOrRefusal => body,
        };
        Arc::clone(self).prepare_rare(body, resolved, meta, framing)
    }

    /// The boxed future of a rarer body ([`Self::answer_rare`]), built out of line so the
    /// common path's code stays short.
    #[inline(never)]
    fn prepare_rare(
        self: Arc<Self>,
        body: Inbound,
        resolved: Resolved<H::Session>,
        meta: Arc<RequestMeta>,
        framing: Framed,
    ) -> Prepared<H::Session> {
        Prepared::Other(Box::pin(self.answer_rare(body, resolved, meta, framing)))
    }

    /// Decodes a read body within the body limit in force.
    fn decode_inbound(&self, bytes: &[u8], limit: usize) -> Result<Inbound, DecodeError> {
        let limits = DecodeLimits {
            max_bytes: limit,
            ..self.config.limits
        };
        decode(bytes, &limits).map(Inbound::from_payload)
    }

    /// A single request's answer as the whole JSON response (`202` when a cancelled request is
    /// owed none, `500` when its handler panicked); an opening that answered only errors is
    /// forgotten, one that succeeded named.
    fn finish_one(
        &self,
        answer: Option<RpcResponse>,
        opening: Option<&Arc<Session<H::Session>>>,
        outcome: Outcome,
        served: Served,
    ) -> Response {
        self.settle_opening(opening, answer.as_slice());
        let mut response = match answer {
            Some(answer) => self.single_answer(&answer, served),
            None => StatusCode::ACCEPTED.into_response(),
        };
        if outcome == Outcome::Panicked {
            *response.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
        }
        if let Some(session) = opening {
            self.name_opened_session(&mut response, session);
        }
        response
    }

    /// Every `POST` but a single request answered as JSON: bodies without requests, batches and
    /// answers that may stream.
    async fn answer_rare(
        self: Arc<Self>,
        body: Inbound,
        resolved: Resolved<H::Session>,
        meta: Arc<RequestMeta>,
        framing: Framed,
    ) -> Response {
        if !body.has_requests() && body.invalid.is_empty() {
            self.take_without_answer(body.messages, &resolved, meta)
                .await;
            return StatusCode::ACCEPTED.into_response();
        }
        let opening = resolved.opening().cloned();
        let mut response = match framing {
            Framed::Json => self.answer_batch(body, &resolved, meta).await,
            Framed::Sse | Framed::Auto | Framed::SseOrRefusal => {
                Arc::clone(&self)
                    .answer_streaming(body, resolved, meta, framing)
                    .await
            }
        };
        if let Some(session) = &opening {
            self.name_opened_session(&mut response, session);
        }
        response
    }

    /// The session an answered request opened is named in the response, unless the opening
    /// failed (answered only errors) and so already ended it.
    #[inline(never)]
    fn name_opened_session(&self, response: &mut Response, session: &Session<H::Session>) {
        if let Some(name) = self.handler.profile().session_header()
            && !session.ended().is_cancelled()
            && let Ok(value) = HeaderValue::from_str(session.id().as_str())
        {
            response.headers_mut().insert(name.clone(), value);
        }
    }

    /// The checks a resolved request passes before anything runs: the batch policy, a readable
    /// version header, and the protocol's own admission.
    fn admit_inbound(
        &self,
        headers: &HeaderMap,
        body: &Inbound,
        resolved: &Resolved<H::Session>,
    ) -> Result<(), Denial> {
        let state = resolved.session().map(|session| session.state());
        if body.batch && !self.handler.accepts_batch(headers, state) {
            return Err(Denial::Refused(Refusal::InvalidRequest));
        }
        if let Some(name) = self.handler.profile().version_header()
            && headers
                .get(name)
                .is_some_and(|value| value.to_str().is_err())
        {
            return Err(Denial::Refused(Refusal::MalformedHeader(
                "protocol version",
            )));
        }
        self.handler
            .admit(body.messages.as_slice(), headers, state)
            .map_err(Denial::Rejected)
    }

    /// Which session a POST belongs to. The store is consulted only when the header names a
    /// session; otherwise the handler says what the body means.
    fn resolve_post_session(
        &self,
        headers: &HeaderMap,
        body: &Inbound,
    ) -> Result<Resolved<H::Session>, Refusal> {
        match self.handler.profile().session_header() {
            Some(name) => self.resolve_named_session(name, headers, body),
            None => Ok(Resolved::None),
        }
    }

    /// [`Self::resolve_post_session`] for a protocol with sessions; out of line, so a
    /// sessionless protocol's path does not carry it.
    #[inline(never)]
    fn resolve_named_session(
        &self,
        name: &HeaderName,
        headers: &HeaderMap,
        body: &Inbound,
    ) -> Result<Resolved<H::Session>, Refusal> {
        if let Some(id) = session_id(headers, name)? {
            return self.live_session(&id).map(Resolved::Live);
        }
        if !body.has_requests() {
            return Ok(Resolved::None);
        }
        match self.handler.unsessioned(body.messages.as_slice(), headers) {
            Unsessioned::Stateless => Ok(Resolved::None),
            Unsessioned::NeedsSession => Err(Refusal::MissingSession),
            Unsessioned::Opens => self.open_session().map(Resolved::Opening),
        }
    }

    fn live_session(&self, id: &SessionId) -> Result<Arc<Session<H::Session>>, Refusal> {
        self.store
            .get(id, self.config.clock.now())
            .ok_or(Refusal::UnknownSession)
    }

    /// A new session, not yet stored: it is stored once the request is admitted.
    #[inline(never)]
    fn open_session(&self) -> Result<Arc<Session<H::Session>>, Refusal> {
        if !self.store.has_room() {
            return Err(Refusal::Overloaded);
        }
        let session = Arc::new(Session::with_events(
            SessionId::random(),
            H::Session::default(),
            self.config.clock.now(),
            Arc::clone(&self.events),
        ));
        tracing::debug!(session = %session.id(), "session opening");
        Ok(session)
    }

    fn scope(
        &self,
        resolved: &Resolved<H::Session>,
        meta: Arc<RequestMeta>,
        route: Route,
    ) -> Scope<H::Session> {
        let session = resolved.session().cloned();
        let conversation = session
            .as_ref()
            .map(|session| Arc::clone(session.conversation()));
        Scope {
            peer: Peer::new(
                route,
                conversation.clone(),
                self.config.peer_timeout,
                self.handler.profile().cancellation().copied(),
            )
            .with_session_route(Self::side_route(resolved)),
            session,
            conversation,
            meta,
        }
    }

    /// Where a handler's own messages go when the answer is plain JSON.
    fn side_route(resolved: &Resolved<H::Session>) -> Route {
        resolved.session().map_or(Route::Nowhere, |session| {
            Route::Tail(session.standalone_stream())
        })
    }

    async fn take_without_answer(
        &self,
        messages: Messages,
        resolved: &Resolved<H::Session>,
        meta: Arc<RequestMeta>,
    ) {
        let scope = self.scope(resolved, meta, Self::side_route(resolved));
        for message in messages {
            serve_message(&self.handler, message, scope.clone()).await;
        }
    }

    /// A batch answered as one JSON array (a single request is answered by [`serve_post`]).
    async fn answer_batch(
        &self,
        body: Inbound,
        resolved: &Resolved<H::Session>,
        meta: Arc<RequestMeta>,
    ) -> Response {
        let scope = self.scope(resolved, meta, Self::side_route(resolved));
        let answers = run_all(&self.handler, body, scope).await;
        self.settle_opening(resolved.opening(), &answers);
        self.json_response(batch_to_bytes(
            &answers
                .into_iter()
                .map(Message::Response)
                .collect::<Vec<_>>(),
        ))
    }

    /// One request's answer as the whole JSON response, with the head the profile declares
    /// for its error as served (200 otherwise).
    fn single_answer(&self, answer: &RpcResponse, served: Served) -> Response {
        let mut response = self.json_response(answer.to_bytes());
        if let Err(error) = answer.outcome()
            && let Some(head) = self.handler.profile().error_head(error, served)
        {
            *response.status_mut() = head.status;
            if let Some(seconds) = head.retry_after {
                response
                    .headers_mut()
                    .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
            }
        }
        response
    }

    fn json_response(&self, bytes: Bytes) -> Response {
        let mut response = Response::new(Body::from(bytes));
        *response.headers_mut() = match self.json_answer.get() {
            Some(prepared) => prepared.clone(),
            None => self.media_type_only(),
        };
        response
    }

    /// Room for the media type alone: the hardening stamps an answer carrying nothing else by
    /// replacing its map with a prepared copy.
    #[inline(never)]
    fn media_type_only(&self) -> HeaderMap {
        let mut headers = HeaderMap::with_capacity(1);
        headers.insert(header::CONTENT_TYPE, self.content_type.clone());
        headers
    }

    /// An opening session whose opening request failed is forgotten.
    fn settle_opening(&self, opening: Option<&Arc<Session<H::Session>>>, answers: &[RpcResponse]) {
        if let Some(session) = opening
            && !answers.iter().any(|answer| !answer.is_error())
        {
            self.store.remove(session.id());
        }
    }

    async fn answer_streaming(
        self: Arc<Self>,
        body: Inbound,
        resolved: Resolved<H::Session>,
        meta: Arc<RequestMeta>,
        framing: Framed,
    ) -> Response {
        let tail: Arc<dyn EventStream> = match resolved.session() {
            Some(session) => session.open_request_stream(),
            // Without a session nobody can resume it, so it stays out of the store.
            None => EventTail::new(1, self.config.tail_capacity),
        };
        // Only a session's stream can be resumed, so only it is primed.
        let priming = match resolved.session() {
            Some(session)
                if self
                    .handler
                    .primes_answer_streams(&meta.headers, session.state()) =>
            {
                Priming::Primed
            }
            _ => Priming::Unprimed,
        };
        let mut scope = self.scope(&resolved, meta, Route::Tail(Arc::clone(&tail)));
        // Only a session's stream can be resumed, so only then may the handler release it.
        if resolved.session().is_some() {
            scope.peer = scope.peer.with_request_stream(Arc::clone(&tail));
        }
        let batch = body.batch;
        let served = served(resolved.session());
        let transport = Arc::clone(&self);
        let work_tail = Arc::clone(&tail);
        let mut subscription = tail.subscribe(Start::Beginning);
        // Boxed once, here: the handler's future is large, and a task copies the future it is
        // given several times on the way in and again at each change of its stage.
        let mut work = Box::pin(async move {
            let answers = run_all(&transport.handler, body, scope).await;
            transport.settle_opening(resolved.opening(), &answers);
            answers
        });
        if matches!(framing, Framed::Auto | Framed::SseOrRefusal) {
            tokio::select! {
                biased;
                answers = &mut work => {
                    let refused = !answers.is_empty() && answers.iter().all(RpcResponse::is_error);
                    if tail.is_untouched() && (framing == Framed::Auto || refused) {
                        // Nothing was streamed: the stream closes unused and the answer is JSON.
                        drop(subscription);
                        tail.close();
                        return self.json_answers(batch, answers, served);
                    }
                    publish_answers(tail.as_ref(), answers);
                }
                () = subscription.changed() => {
                    spawn_stream_work(work_tail, work);
                }
            }
        } else {
            spawn_stream_work(work_tail, work);
        }
        sse_response(
            subscription,
            Vec::new(),
            Framing::Resumable,
            self.answer_stops(),
            &self.config.streams,
            priming,
        )
    }

    fn json_answers(&self, batch: bool, answers: Vec<RpcResponse>, served: Served) -> Response {
        match (batch, answers.as_slice()) {
            (false, [single]) => self.single_answer(single, served),
            (_, []) => StatusCode::ACCEPTED.into_response(),
            _ => self.json_response(batch_to_bytes(
                &answers
                    .into_iter()
                    .map(Message::Response)
                    .collect::<Vec<_>>(),
            )),
        }
    }

    /// An answer stream carries what a request is owed: it finishes during a drain, and ends
    /// only at the drain deadline.
    fn answer_stops(&self) -> Stops {
        Stops {
            session: None,
            drain: Drain::Finish,
            shutdown: Some(self.config.shutdown.clone()),
        }
    }

    /// A session's own stream owes no answer: it ends when the drain begins.
    fn session_stops(&self, session: &Session<H::Session>) -> Stops {
        Stops {
            session: Some(session.ended().clone()),
            drain: Drain::End(self.config.drain.clone()),
            shutdown: Some(self.config.shutdown.clone()),
        }
    }

    /// `GET`: the session's stream, fresh or resumed from `Last-Event-ID`.
    fn open_stream(&self, headers: &HeaderMap) -> Response {
        let Some(name) = self.handler.profile().session_header() else {
            return refuse(
                Refusal::MethodNotAllowed(Some(HeaderValue::from_static("POST"))),
                None,
            );
        };
        if !Accepts::read(headers, self.handler.profile().media_type()).sse {
            return refuse(Refusal::NotAcceptable, None);
        }
        let session = match session_id(headers, name) {
            Ok(Some(id)) => {
                record_session(&id);
                match self.live_session(&id) {
                    Ok(session) => session,
                    Err(refusal) => return refuse(refusal, None),
                }
            }
            Ok(None) => return refuse(Refusal::MissingSession, None),
            Err(refusal) => return refuse(refusal, None),
        };
        let subscription = match headers.get(LAST_EVENT_ID) {
            None => session.standalone_stream().subscribe(Start::Unread),
            Some(value) => match resume(&session, value) {
                Ok(subscription) => subscription,
                Err(refusal) => return refuse(refusal, None),
            },
        };
        tracing::debug!(stream = subscription.stream(), "stream opened");
        sse_response(
            subscription,
            Vec::new(),
            Framing::Resumable,
            self.session_stops(&session),
            &self.config.streams,
            Priming::Unprimed,
        )
    }

    /// `DELETE`: ends the session; its id is unknown afterwards.
    fn end_session(&self, headers: &HeaderMap) -> Response {
        let Some(name) = self.handler.profile().session_header() else {
            return refuse(
                Refusal::MethodNotAllowed(Some(HeaderValue::from_static("POST"))),
                None,
            );
        };
        match session_id(headers, name) {
            Ok(Some(id)) => match self.store.remove(&id) {
                Some(_) => {
                    record_session(&id);
                    tracing::debug!("session ended by the client");
                    StatusCode::OK.into_response()
                }
                None => refuse(Refusal::UnknownSession, None),
            },
            Ok(None) => refuse(Refusal::MissingSession, None),
            Err(refusal) => refuse(refusal, None),
        }
    }
}

/// Resumes one of the session's streams after the event `Last-Event-ID` names; the session's
/// event store decides whether it still can.
fn resume<S>(session: &Session<S>, value: &HeaderValue) -> Result<Box<dyn EventReader>, Refusal> {
    let id: EventId = value
        .to_str()
        .map_err(|_| Refusal::MalformedLastEventId)?
        .trim()
        .parse()
        .map_err(|_| Refusal::MalformedLastEventId)?;
    let cursor = EventCursor::from_event_id(id).ok_or(Refusal::MalformedLastEventId)?;
    session.resume(cursor).map_err(|_| Refusal::ResumeGone)
}

/// Runs every message of a body concurrently; returns the answers owed, invalid entries first.
async fn run_all<H: RequestHandler>(
    handler: &H,
    body: Inbound,
    scope: Scope<H::Session>,
) -> Vec<RpcResponse> {
    let mut answers: Vec<RpcResponse> = body
        .invalid
        .iter()
        .map(InvalidMessage::to_response)
        .collect();
    if body.batch {
        let served = futures::future::join_all(
            body.messages
                .into_iter()
                .map(|message| serve_message(handler, message, scope.clone())),
        )
        .await;
        answers.extend(served.into_iter().flatten());
    } else if let Some(message) = body.messages.into_iter().next() {
        // Not a batch: exactly one message, served with the scope itself rather than a clone.
        answers.extend(serve_message(handler, message, scope).await);
    }
    answers
}

fn publish_answers(tail: &dyn EventStream, answers: Vec<RpcResponse>) {
    for answer in answers {
        if tail.publish(Message::Response(answer).to_bytes()).is_err() {
            tracing::debug!("an answer's stream closed before the answer");
        }
    }
    tail.close();
}

/// Runs a request stream's work on its own task; the stream is closed however the work ends
/// (a panicking handler included), so no reader waits forever.
fn spawn_stream_work(
    tail: Arc<dyn EventStream>,
    work: impl Future<Output = Vec<RpcResponse>> + Send + 'static,
) {
    struct CloseOnDrop(Arc<dyn EventStream>);
    impl Drop for CloseOnDrop {
        fn drop(&mut self) {
            self.0.close();
        }
    }
    tokio::spawn(
        async move {
            let closer = CloseOnDrop(tail);
            publish_answers(closer.0.as_ref(), work.await);
        }
        .in_current_span(),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_common_accept_values_read_as_the_general_parse_reads_them() {
        let json = "application/json";
        for text in [
            "application/json",
            "application/json, text/event-stream",
            "text/event-stream, application/json",
        ] {
            let value = HeaderValue::from_static(text);
            let parsed = Accepts::parse(std::iter::once(&value), json);
            assert_eq!(
                Accepts::common(text.as_bytes(), json.as_bytes()),
                Some(parsed)
            );
        }
    }

    #[test]
    fn other_accept_values_are_left_to_the_general_parse() {
        let json = b"application/json";
        for text in [
            "Application/JSON, text/event-stream",
            "application/json,text/event-stream",
            "text/event-stream",
            "*/*",
            "application/json; q=0.5, text/event-stream",
        ] {
            assert_eq!(Accepts::common(text.as_bytes(), json), None, "{text}");
        }
    }

    /// A protocol answering `echo` with its params, as the overhead benchmark's does.
    struct Echo {
        profile: crate::handler::Profile,
    }

    impl RequestHandler for Echo {
        type Session = ();

        fn profile(&self) -> &crate::handler::Profile {
            &self.profile
        }

        async fn handle(
            &self,
            request: Request,
            _cx: crate::handler::Context<()>,
        ) -> crate::handler::Reply {
            request
                .params
                .ok_or_else(crate::jsonrpc::ErrorObject::method_not_found)
        }

        async fn notify(
            &self,
            _notification: crate::jsonrpc::Notification,
            _cx: crate::handler::Context<()>,
        ) {
        }
    }

    fn echo_endpoint(profile: crate::handler::Profile) -> Endpoint<Echo> {
        StreamableHttp::new(Echo { profile }, HttpConfig::default()).into_endpoint()
    }

    fn echo_post(media_type: &str) -> HttpRequest {
        http::Request::post("/rpc")
            .header(header::CONTENT_TYPE, media_type)
            .body(Body::from(
                r#"{"jsonrpc":"2.0","id":1,"method":"echo","params":{}}"#,
            ))
            .unwrap()
    }

    #[tokio::test]
    async fn a_json_answer_is_built_with_the_header_map_a_direct_hardening_offers() {
        use crate::hardening::SharedService as _;
        let endpoint = echo_endpoint(crate::handler::Profile::new());
        let security = crate::hardening::SecurityHeaders::default()
            .parse()
            .unwrap();
        endpoint.answer_json_with(security.json_answer());
        let Ok(answer) = endpoint.serve(echo_post("application/json")).await;
        assert_eq!(answer.status(), StatusCode::OK);
        assert_eq!(answer.headers(), security.json_answer());
    }

    #[tokio::test]
    async fn an_offered_header_map_labelling_another_media_type_is_not_taken() {
        use crate::hardening::SharedService as _;
        const MEDIA_TYPE: &str = "application/vnd.test+json";
        let endpoint = echo_endpoint(crate::handler::Profile::new().with_media_type(MEDIA_TYPE));
        let security = crate::hardening::SecurityHeaders::default()
            .parse()
            .unwrap();
        endpoint.answer_json_with(security.json_answer());
        let Ok(answer) = endpoint.serve(echo_post(MEDIA_TYPE)).await;
        assert_eq!(answer.status(), StatusCode::OK);
        let names: Vec<_> = answer.headers().keys().collect();
        assert_eq!(names, [header::CONTENT_TYPE]);
        assert_eq!(answer.headers()[header::CONTENT_TYPE], MEDIA_TYPE);
    }

    #[test]
    fn a_posts_boxed_future_fits_the_allocators_small_size_classes() {
        use crate::hardening::SharedService as _;
        let endpoint = echo_endpoint(crate::handler::Profile::new());
        let serving = endpoint.serve(echo_post("application/json"));
        // glibc serves blocks up to 1,032 bytes from its per-thread cache; a larger box takes
        // the slow path on every request.
        let size = std::mem::size_of_val(&*serving);
        assert!(size < 1024, "the boxed POST future is {size} bytes");
    }

    #[test]
    fn a_content_type_with_parameters_or_other_case_is_still_the_media_type() {
        let mut headers = HeaderMap::new();
        for (text, expected) in [
            ("application/json", true),
            ("Application/JSON; charset=utf-8", true),
            ("application/jsonx", false),
            ("text/plain", false),
        ] {
            headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(text));
            assert_eq!(
                content_type_is(&headers, "application/json"),
                expected,
                "{text}"
            );
        }
    }
}
