//! The seam between the runtime and a protocol: the [`RequestHandler`] trait a protocol crate
//! implements (statically dispatched, no boxed future per request), the [`Profile`] through which
//! it declares what differs between protocols, and the [`Context`] each call receives. The
//! runtime decides who is calling, how large the body is and which session this is; everything
//! a method means is the handler's.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

#[cfg(feature = "server")]
use axum::extract::ConnectInfo;
use http::{Extensions, HeaderMap, HeaderName, HeaderValue, StatusCode};
use serde_json::value::RawValue;
use tokio_util::sync::CancellationToken;

use crate::hardening::{Principal, Refusal, RefusalAnswer};
use crate::jsonrpc::{ErrorObject, Message, Notification, Request, RequestId, Response, to_raw};
use crate::peer::{CancelConvention, Peer, PeerError};
use crate::session::Session;

/// A handler's answer to one request: the raw result, or a JSON-RPC error.
pub type Reply = Result<Box<RawValue>, ErrorObject>;

/// Whether a protocol (revision) accepts JSON-RPC batches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchPolicy {
    /// A batch is served, each entry on its own.
    Accept,
    /// A batch is refused as an invalid request.
    Refuse,
}

/// What a body means when the request named no session. Asked only when the session header is
/// absent, so answering it can never consult the session store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unsessioned {
    /// The body opens a session (e.g. an initialize request).
    Opens,
    /// The body stands on its own and is served without a session.
    Stateless,
    /// The body belongs to a session and named none: refused with 400.
    NeedsSession,
}

/// Whether a Streamable HTTP endpoint keeps a session for each client. What a handler learns
/// of it through [`Context::session_mode`], so a protocol with sessions can serve its session
/// revisions on an endpoint that has none.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum SessionMode {
    /// A client's opening request is issued a session (the profile's session header), which
    /// its later requests name; stdio and the legacy transport are always this.
    #[default]
    PerClient,
    /// No sessions at all: nothing is issued, looked up or kept for a client, every `POST`
    /// stands alone (a session header it carries is ignored), and `GET` and `DELETE` are
    /// `405`. What needs a session (a server→client call outside a `POST`'s own stream,
    /// subscriptions) fails or is refused. Any replica serves any request; only the answer to a
    /// call made on a `POST`'s stream must come back to the replica that made it (its id is
    /// known nowhere else).
    Sessionless,
}

/// The HTTP head of an error that is a request's whole JSON answer: its status, and the
/// seconds after which retrying may succeed (sent as `Retry-After`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ErrorHead {
    /// The HTTP status of the answer.
    pub status: StatusCode,
    /// Seconds after which a retry may succeed, sent as `Retry-After`.
    pub retry_after: Option<u64>,
}

/// What a protocol declares about itself; a handler builds it once and returns it by reference.
#[derive(Debug, Clone)]
pub struct Profile {
    session_header: Option<HeaderName>,
    version_header: Option<HeaderName>,
    media_type: &'static str,
    batches: BatchPolicy,
    cancellation: Option<CancelConvention>,
    error_statuses: &'static [(i64, StatusCode)],
    error_heads: Option<fn(&ErrorObject) -> Option<ErrorHead>>,
    refusal_answers: Option<fn(&Refusal) -> Option<RefusalAnswer>>,
    sessionless_error_statuses: Option<&'static [(i64, StatusCode)]>,
}

/// The `data` member of an error answer mapped to `429` or `503` that says, in whole seconds,
/// when to try again; the answer repeats it as `Retry-After` (one second when absent).
pub const RETRY_AFTER_DATA: &str = "retryAfterSeconds";

/// How long a `429` or `503` answer asks the client to wait: the error's
/// `data.retryAfterSeconds`, at least one second; `None` for other statuses.
fn retry_after_of(status: StatusCode, error: &ErrorObject) -> Option<u64> {
    matches!(
        status,
        StatusCode::TOO_MANY_REQUESTS | StatusCode::SERVICE_UNAVAILABLE
    )
    .then(|| {
        error
            .data
            .as_ref()
            .and_then(|data| data.get(RETRY_AFTER_DATA))
            .and_then(serde_json::Value::as_u64)
            .unwrap_or(1)
            .max(1)
    })
}

/// Whether a request was served within a session; a protocol may give the answers of the two
/// different statuses (see [`Profile::with_sessionless_error_statuses`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Served {
    /// Served within a session.
    InSession,
    /// Served without a session.
    Sessionless,
}

impl Profile {
    /// A sessionless JSON-RPC protocol over `application/json` that refuses batches.
    pub const fn new() -> Self {
        Self {
            session_header: None,
            version_header: None,
            media_type: "application/json",
            batches: BatchPolicy::Refuse,
            cancellation: None,
            error_statuses: &[],
            error_heads: None,
            refusal_answers: None,
            sessionless_error_statuses: None,
        }
    }

    /// The header naming the session (absent: the protocol has no transport sessions).
    #[must_use]
    pub fn with_session_header(mut self, name: HeaderName) -> Self {
        self.session_header = Some(name);
        self
    }

    /// The header a client states its protocol revision in; read and handed to the handler,
    /// never judged by the runtime.
    #[must_use]
    pub fn with_version_header(mut self, name: HeaderName) -> Self {
        self.version_header = Some(name);
        self
    }

    /// The JSON media type requests carry and plain answers are labelled with.
    #[must_use]
    pub fn with_media_type(mut self, media_type: &'static str) -> Self {
        self.media_type = media_type;
        self
    }

    /// Whether the protocol accepts JSON-RPC batches (default: refused).
    #[must_use]
    pub fn with_batches(mut self, policy: BatchPolicy) -> Self {
        self.batches = policy;
        self
    }

    /// How requests in flight are cancelled, in both directions.
    #[must_use]
    pub fn with_cancellation(mut self, convention: CancelConvention) -> Self {
        self.cancellation = Some(convention);
        self
    }

    /// The HTTP status a single request's JSON answer carries when it is an error with one of
    /// these codes (a protocol may require e.g. `400` for some of its errors); every other
    /// answer goes out with `200`. Statuses that are not errors are ignored. An answer mapped to
    /// `429` or `503` also carries `Retry-After` (see [`RETRY_AFTER_DATA`]).
    #[must_use]
    pub fn with_error_statuses(mut self, statuses: &'static [(i64, StatusCode)]) -> Self {
        self.error_statuses = statuses;
        self
    }

    /// The head of an error answer, when the code alone does not decide it: `heads` reads the
    /// whole error (e.g. a reason in its `data`) and may name a `Retry-After` too. Consulted
    /// before the code table of [`Self::with_error_statuses`].
    #[must_use]
    pub fn with_error_heads(mut self, heads: fn(&ErrorObject) -> Option<ErrorHead>) -> Self {
        self.error_heads = Some(heads);
        self
    }

    /// How the protocol's binding answers the transport's own refusals of a request at its
    /// endpoint (a wrong method, media type or body): the JSON-RPC code the protocol gives
    /// each, and for a body that is no JSON-RPC message the status it sends that with.
    /// Refusals `answers` passes over keep the runtime's answer.
    #[must_use]
    pub fn with_refusal_answers(mut self, answers: fn(&Refusal) -> Option<RefusalAnswer>) -> Self {
        self.refusal_answers = Some(answers);
        self
    }

    /// The protocol's answer to a transport refusal, when it has its own.
    pub(crate) fn refusal_answers(&self) -> Option<fn(&Refusal) -> Option<RefusalAnswer>> {
        self.refusal_answers
    }

    /// The statuses of the answers to requests served without a session, where a protocol's
    /// sessionless revision has rules of its own (MCP 2026-07-28: `404` for a method not
    /// found, which on a session revision would say the session is gone). Without it, those
    /// answers follow [`Self::with_error_statuses`] too.
    #[must_use]
    pub fn with_sessionless_error_statuses(
        mut self,
        statuses: &'static [(i64, StatusCode)],
    ) -> Self {
        self.sessionless_error_statuses = Some(statuses);
        self
    }

    /// The header that carries the session id, if the protocol has sessions.
    pub(crate) fn session_header(&self) -> Option<&HeaderName> {
        self.session_header.as_ref()
    }

    /// The header that carries the protocol revision, if the protocol has one.
    pub fn version_header(&self) -> Option<&HeaderName> {
        self.version_header.as_ref()
    }

    /// The JSON media type requests carry and plain answers are labelled with.
    pub fn media_type(&self) -> &'static str {
        self.media_type
    }

    /// Whether JSON-RPC batches are accepted.
    pub(crate) fn batches(&self) -> BatchPolicy {
        self.batches
    }

    /// How the protocol cancels requests, if it does.
    pub fn cancellation(&self) -> Option<&CancelConvention> {
        self.cancellation.as_ref()
    }

    /// The head an error answer carries when it is the whole JSON response to a request served
    /// as `served` (`200` and no extra header when `None`). A status from the code tables that
    /// asks the client to come back (`429`, `503`) says when, from the error's `data`
    /// ([`RETRY_AFTER_DATA`], whole seconds, at least one).
    pub(crate) fn error_head(&self, error: &ErrorObject, served: Served) -> Option<ErrorHead> {
        self.error_heads
            .and_then(|heads| heads(error))
            .filter(|head| head.status.is_client_error() || head.status.is_server_error())
            .or_else(|| {
                self.error_status_when(error.code, served)
                    .map(|status| ErrorHead {
                        status,
                        retry_after: retry_after_of(status, error),
                    })
            })
    }

    /// The status an error answer with `code` carries when it is the whole JSON response to a
    /// request served as `served`.
    pub(crate) fn error_status_when(&self, code: i64, served: Served) -> Option<StatusCode> {
        let table = match (served, self.sessionless_error_statuses) {
            (Served::Sessionless, Some(table)) => table,
            _ => self.error_statuses,
        };
        table
            .iter()
            .find(|(listed, _)| *listed == code)
            .map(|(_, status)| *status)
            .filter(|status| status.is_client_error() || status.is_server_error())
    }
}

impl Default for Profile {
    fn default() -> Self {
        Self::new()
    }
}

/// A protocol's refusal of a whole HTTP request before anything runs (e.g. a version header
/// that disagrees with the session). Always an error status with a JSON-RPC error body.
#[derive(Debug, Clone, PartialEq)]
pub struct Rejection {
    status: StatusCode,
    error: ErrorObject,
}

impl Rejection {
    /// A rejection with `status`; a status that is not an error becomes 400, so a rejection can
    /// never read as success.
    pub fn new(status: StatusCode, error: ErrorObject) -> Self {
        let status = if status.is_client_error() || status.is_server_error() {
            status
        } else {
            StatusCode::BAD_REQUEST
        };
        Self { status, error }
    }

    /// The HTTP status the refusal is answered with (always 4xx or 5xx).
    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// The JSON-RPC error the refusal's body carries.
    pub fn error(&self) -> &ErrorObject {
        &self.error
    }
}

/// What a protocol implements to be served by the runtime.
///
/// `handle` and `notify` return `impl Future + Send` rather than being `async fn`, so a generic
/// transport can rely on `Send` without boxing; an implementor still writes `async fn`.
pub trait RequestHandler: Send + Sync + 'static {
    /// The protocol's per-session state (negotiated revision, capabilities). Created with
    /// `Default` when a session opens; interior mutability lets the opening request fill it.
    type Session: Default + Send + Sync + 'static;

    /// What this protocol declares about itself.
    fn profile(&self) -> &Profile;

    /// What the messages mean when the request named no session.
    fn unsessioned(&self, messages: &[Message], headers: &HeaderMap) -> Unsessioned {
        let _ = (messages, headers);
        Unsessioned::NeedsSession
    }

    /// Whether a batch is accepted here (a protocol may allow them in some revisions only).
    fn accepts_batch(&self, headers: &HeaderMap, session: Option<&Self::Session>) -> bool {
        let _ = (headers, session);
        self.profile().batches() == BatchPolicy::Accept
    }

    /// A last check of the whole request before anything runs.
    fn admit(
        &self,
        messages: &[Message],
        headers: &HeaderMap,
        session: Option<&Self::Session>,
    ) -> Result<(), Rejection> {
        let _ = (messages, headers, session);
        Ok(())
    }

    /// Whether an SSE answer on `session`'s resumable stream opens with a priming event (an
    /// event id and empty data), so a client cut off before the first real event can still
    /// resume. A protocol allows it where its clients expect it (MCP: from 2025-11-25; older
    /// clients may take an empty event for a malformed message). Asked once per answer stream.
    fn primes_answer_streams(&self, headers: &HeaderMap, session: &Self::Session) -> bool {
        let _ = (headers, session);
        false
    }

    /// How a request is answered on an endpoint without sessions ([`SessionMode::Sessionless`]),
    /// where every request is served without one: as within a session (a protocol revision that
    /// has sessions, say) or as a stateless request. It picks the error statuses of the answer
    /// ([`Profile::with_sessionless_error_statuses`]); asked only on such an endpoint.
    fn served_without_sessions(&self, headers: &HeaderMap) -> Served {
        let _ = headers;
        Served::Sessionless
    }

    /// Hears that the client opened `session`'s own stream (a `GET`) on this replica, e.g. so
    /// messages not tied to a request (a broadcast) reach a session this replica did not open.
    fn stream_opened(&self, session: &Arc<Session<Self::Session>>) {
        let _ = session;
    }

    /// Answers one request.
    fn handle(
        &self,
        request: Request,
        cx: Context<Self::Session>,
    ) -> impl Future<Output = Reply> + Send;

    /// Takes one notification.
    fn notify(
        &self,
        notification: Notification,
        cx: Context<Self::Session>,
    ) -> impl Future<Output = ()> + Send;
}

/// What the transport knows about the request a message arrived on: its headers, the
/// extensions earlier layers attached (the authenticated principal among them) and, when known,
/// the address of the connection it came on.
#[derive(Debug, Default)]
pub struct RequestMeta {
    /// The request's HTTP headers (empty on stdio).
    pub headers: HeaderMap,
    /// What earlier layers attached to the request, the authenticated principal among them.
    pub extensions: Extensions,
    /// The profile's version header, kept once per request here rather than copied into the
    /// [`Context`] of each of its messages (a context is moved with every handler's future).
    version_header: Option<HeaderName>,
    /// The peer's address as a server that owns its listener hands it down a mounted
    /// transport's direct path, where no `ConnectInfo` extension is inserted for it.
    peer_address: Option<SocketAddr>,
    /// Whether the endpoint the request came to keeps sessions.
    session_mode: SessionMode,
}

impl RequestMeta {
    /// The metadata of a request served under `profile`.
    pub fn new(headers: HeaderMap, extensions: Extensions, profile: &Profile) -> Self {
        Self {
            headers,
            extensions,
            version_header: profile.version_header().cloned(),
            peer_address: None,
            session_mode: SessionMode::PerClient,
        }
    }

    /// The same metadata, for a request to an endpoint in `mode`.
    #[must_use]
    pub(crate) fn with_session_mode(mut self, mode: SessionMode) -> Self {
        self.session_mode = mode;
        self
    }

    /// Whether the endpoint the request came to keeps sessions.
    pub fn session_mode(&self) -> SessionMode {
        self.session_mode
    }

    /// The same metadata, for a request whose connection came from `peer`.
    #[must_use]
    pub(crate) fn with_peer_address(mut self, peer: SocketAddr) -> Self {
        self.peer_address = Some(peer);
        self
    }

    /// The address of the connection the request came on: the one handed down with it, or
    /// else its `ConnectInfo<SocketAddr>` extension (the router's path, or `axum::serve` with
    /// connect info). `None` when the server knows no address (stdio, a router served without
    /// connect info).
    pub fn peer_address(&self) -> Option<SocketAddr> {
        self.peer_address.or_else(|| self.connect_info())
    }

    /// The address axum's `ConnectInfo` extension carries; only a server inserts one.
    #[cfg(feature = "server")]
    fn connect_info(&self) -> Option<SocketAddr> {
        self.extensions
            .get::<ConnectInfo<SocketAddr>>()
            .map(|info| info.0)
    }

    /// Without the `server` feature nothing inserts a `ConnectInfo` extension.
    #[cfg(not(feature = "server"))]
    fn connect_info(&self) -> Option<SocketAddr> {
        None
    }

    /// Who the hardening authenticated; `None` on a public endpoint and over stdio.
    pub fn principal(&self) -> Option<&Principal> {
        self.extensions.get::<Principal>()
    }
}

/// Everything a handler gets beside the message.
pub struct Context<S> {
    request_id: Option<RequestId>,
    session: Option<Arc<Session<S>>>,
    meta: Arc<RequestMeta>,
    /// The token the peer can fire; a request nothing can cancel (no conversation) gets one
    /// only if the handler asks, so the common stateless call allocates none.
    cancellation: OnceLock<CancellationToken>,
    peer: Peer,
}

impl<S> std::fmt::Debug for Context<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("request_id", &self.request_id)
            .field(
                "session",
                &self.session.as_ref().map(|session| session.id()),
            )
            .finish_non_exhaustive()
    }
}

impl<S> Context<S> {
    pub(crate) fn new(
        request_id: Option<RequestId>,
        session: Option<Arc<Session<S>>>,
        meta: Arc<RequestMeta>,
        cancellation: Option<CancellationToken>,
        peer: Peer,
    ) -> Self {
        Self {
            request_id,
            session,
            meta,
            cancellation: cancellation.map_or_else(OnceLock::new, OnceLock::from),
            peer,
        }
    }

    /// The id of the request being answered; `None` for a notification.
    pub fn request_id(&self) -> Option<&RequestId> {
        self.request_id.as_ref()
    }

    /// The session this message belongs to (or opens).
    pub fn session(&self) -> Option<&Arc<Session<S>>> {
        self.session.as_ref()
    }

    /// The protocol's state for the session.
    pub fn state(&self) -> Option<&S> {
        self.session.as_deref().map(Session::state)
    }

    /// The HTTP headers of the request the message arrived on.
    pub fn headers(&self) -> &HeaderMap {
        &self.meta.headers
    }

    /// What earlier layers attached to the request (e.g. the authenticated principal).
    pub fn extensions(&self) -> &Extensions {
        &self.meta.extensions
    }

    /// The address of the connection the request came on, as [`RequestMeta::peer_address`]
    /// finds it.
    pub fn peer_address(&self) -> Option<SocketAddr> {
        self.meta.peer_address()
    }

    /// Who the hardening authenticated, when the endpoint requires a credential.
    pub fn principal(&self) -> Option<&Principal> {
        self.meta.principal()
    }

    /// The request this message arrived on, shared: what a protocol hands on to its own
    /// handlers (the caller's principal and headers) without copying it.
    pub fn request_meta(&self) -> &Arc<RequestMeta> {
        &self.meta
    }

    /// Whether the endpoint keeps sessions: on a [`SessionMode::Sessionless`] one no message
    /// has a session, whatever its protocol revision.
    pub fn session_mode(&self) -> SessionMode {
        self.meta.session_mode
    }

    /// The value of the profile's version header, when the client sent one.
    pub fn protocol_version(&self) -> Option<&str> {
        let name = self.meta.version_header.as_ref()?;
        self.meta
            .headers
            .get(name)
            .and_then(|value| HeaderValue::to_str(value).ok())
    }

    /// Fires when the peer cancels this request or the conversation ends.
    pub fn cancellation(&self) -> &CancellationToken {
        self.cancellation.get_or_init(CancellationToken::new)
    }

    /// Talks back to the peer on this request's stream.
    pub fn peer(&self) -> &Peer {
        &self.peer
    }

    /// Sends an intermediate answer to this request (a streaming call's partial result) on its
    /// stream; the final one is the handler's return value.
    pub fn send_partial_result<T: serde::Serialize + ?Sized>(
        &self,
        result: &T,
    ) -> Result<(), PeerError> {
        let id = self.request_id.clone().ok_or(PeerError::NoStream)?;
        let raw = to_raw(result).map_err(|_| PeerError::Unserializable)?;
        self.peer
            .send(&Message::Response(Response::success(id, raw)))
    }

    /// Ends the connection carrying this request's SSE stream early, telling the client to
    /// reconnect after `retry`; the handler keeps running, and what it sends afterwards (its
    /// answer included) waits for the client to resume with `Last-Event-ID`. Fails with
    /// [`PeerError::NoStream`] when the request is not answered on a resumable stream.
    pub fn close_stream(&self, retry: Duration) -> Result<(), PeerError> {
        self.peer.close_stream(retry)
    }
}

/// How long a server→client request waits for its answer unless the call says otherwise.
pub(crate) const DEFAULT_PEER_TIMEOUT: Duration = Duration::from_secs(60);
