//! `POST` answering: the head's checks, the body read within its limit and decoded, its session
//! resolved and the request admitted before anything runs, then the answer: one request as
//! plain JSON in the `POST`'s own future, anything else (notifications, batches, streams) boxed.

use std::convert::Infallible;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::Request as HttpRequest;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use futures::future::BoxFuture;
use http::{HeaderMap, HeaderValue, StatusCode, header};

use super::negotiate::{Accepts, Framed, choose_framing, is_media_type};
use super::session::Resolved;
use super::{Denial, StreamableHttp, record_session, refuse, store_refusal};
use crate::dispatch::{Outcome, Scope, answer_request, serve_message};
use crate::handler::{RequestHandler, RequestMeta, Served};
use crate::hardening::{Admitted, AnswerHeaders, Refusal, read_body};
use crate::header_scan::find_two;
use crate::jsonrpc::{
    DecodeError, DecodeLimits, InvalidMessage, Message, Payload, Request, RequestId,
    Response as RpcResponse, batch_to_bytes, decode,
};
use crate::peer::{Peer, Route};
use crate::session::{Session, StoreError};

/// A decoded body: its valid messages, and the invalid entries of a batch.
pub(super) struct Inbound {
    pub(super) messages: Messages,
    pub(super) invalid: Vec<InvalidMessage>,
    pub(super) batch: bool,
}

/// A body's valid messages: a single message held inline (the common case, no allocation), or
/// a batch's.
pub(super) enum Messages {
    One(Message),
    Many(Vec<Message>),
}

impl Messages {
    pub(super) fn as_slice(&self) -> &[Message] {
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

    pub(super) fn has_requests(&self) -> bool {
        self.messages
            .as_slice()
            .iter()
            .any(|message| matches!(message, Message::Request(_)))
    }

    /// The id a refusal of the whole body echoes: the single request's.
    pub(super) fn echo_id(&self) -> Option<&RequestId> {
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
pub(super) struct PostStart {
    body: Body,
    limit: usize,
    meta: Arc<RequestMeta>,
    framing: Framed,
    answer_headers: AnswerHeaders,
}

/// A `POST`'s work once its head passed, one path for every body: read it, admit it
/// ([`StreamableHttp::admit_post`]), answer it ([`StreamableHttp::answer_of`]), then name the
/// session it opened. While reading it holds only the transport, the request's metadata and
/// the body (the head was taken apart before); a single request answered as JSON is then
/// awaited here rather than through further layers, so the state each request boxes is little
/// more than its handler's own future, built and moved once.
pub(super) fn serve_post<H: RequestHandler>(
    transport: Arc<StreamableHttp<H>>,
    start: PostStart,
) -> impl Future<Output = Result<Response, Infallible>> + Send {
    let PostStart {
        body,
        limit,
        meta,
        framing,
        answer_headers,
    } = start;
    async move {
        let read = read_body(body, limit).await;
        // In a block of its own, so what was admitted is gone before the answer is awaited,
        // and does not stay beside it in this future's state.
        let (answer, after) = {
            let admitted = match transport.admit_post(read, limit, meta, framing) {
                Admission::Ready(admitted) => admitted,
                Admission::NeedsStore(unresolved) => transport.admit_with_store(unresolved).await,
            };
            let admitted = match admitted {
                Ok(admitted) => admitted,
                Err(refused) => return Ok(*refused),
            };
            let after = transport.after_answer(&admitted.resolved);
            (transport.answer_of(admitted, &answer_headers), after)
        };
        let mut response = match answer {
            Answer::One { request, scope } => {
                let served = transport.served(scope.session.as_ref(), &scope.meta.headers);
                let (answer, outcome) = {
                    let mut answering =
                        std::pin::pin!(answer_request(&transport.handler, request, scope));
                    let answer = answering.as_mut().await;
                    (answer, answering.outcome())
                };
                match after.session {
                    // Boxed: only an opening or a store saving state waits on the store here,
                    // and what that wait holds stays out of every request's future.
                    Some(_) => {
                        let finishing = transport.finish_after(
                            &after,
                            answer,
                            outcome,
                            served,
                            &answer_headers,
                        );
                        Box::pin(finishing).await
                    }
                    None => transport.finish_one(answer, outcome, served, &answer_headers),
                }
            }
            Answer::Other(answer) => answer.await,
        };
        if let Some(session) = after.opening() {
            transport.name_opened_session(&mut response, session);
        }
        Ok(response)
    }
}

/// A `POST`'s body once decoded, resolved to its session and admitted (an opening session
/// stored): what every answer is made from.
pub(super) struct AdmittedBody<S> {
    body: Inbound,
    pub(super) resolved: Resolved<S>,
    meta: Arc<RequestMeta>,
    framing: Framed,
}

/// A body admitted without the store, or one whose session the store must resolve.
enum Admission<S> {
    Ready(Result<AdmittedBody<S>, Box<Response>>),
    NeedsStore(Unresolved),
}

/// A decoded body waiting for the store to resolve its session.
struct Unresolved {
    body: Inbound,
    meta: Arc<RequestMeta>,
    framing: Framed,
}

/// The session a `POST` still needs once its answer is ready: the one it opened (to forget a
/// failed opening and name a good one), or the one whose state a store saves. One slot for
/// both, so the `POST`'s future carries one pointer beside its handler's.
struct After<S> {
    session: Option<Arc<Session<S>>>,
    opened: bool,
    /// Whether the store saves state ([`SessionStore::saves_state`](crate::session::SessionStore::saves_state)).
    save: bool,
}

impl<S> After<S> {
    fn opening(&self) -> Option<&Arc<Session<S>>> {
        self.session.as_ref().filter(|_| self.opened)
    }

    /// The session whose state is saved after the answer, when the store saves state.
    fn saving(&self) -> Option<&Arc<Session<S>>> {
        self.session.as_ref().filter(|_| self.save)
    }
}

/// How an admitted body is answered.
// `One` is much the largest, and the common case: it lives only until its parts are moved
// into the request's future, and boxing it would cost the allocation this path avoids.
#[allow(clippy::large_enum_variant)]
enum Answer<S> {
    /// A single request answered as plain JSON, run in the `POST`'s own future.
    One { request: Request, scope: Scope<S> },
    /// Anything else, boxed (a body without requests, a batch, an answer that may stream):
    /// its larger state stays out of the common request's.
    Other(BoxFuture<'static, Response>),
}

/// A `POST` refused before anything ran, boxed so the admitted body's result stays small. Out
/// of line, as every refusal is: the path a served request takes stays short.
#[cold]
#[inline(never)]
fn refused_post(refusal: Refusal, id: Option<&RequestId>) -> Box<Response> {
    Box::new(refuse(refusal, id))
}

/// A body that did not decode.
#[cold]
#[inline(never)]
fn undecoded(error: &DecodeError) -> Box<Response> {
    refused_post(decode_refusal(error), error.request_id())
}

/// A request the transport or the protocol would not serve.
#[cold]
#[inline(never)]
fn denied(denial: Denial, id: Option<&RequestId>) -> Box<Response> {
    Box::new(denial.into_response(id))
}

impl<H: RequestHandler> StreamableHttp<H> {
    /// The checks a `POST`'s head must pass before its body is read; the head is taken apart
    /// here, so what the body's reading holds on to is small.
    pub(super) fn start_post(
        &self,
        request: HttpRequest,
        admitted: Admitted,
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
        let Admitted {
            body_limit,
            peer,
            answer_headers,
        } = admitted;
        let limit = body_limit.0;
        let meta = RequestMeta::new(parts.headers, parts.extensions, profile)
            .with_session_mode(self.config.session_mode);
        let meta = match peer {
            Some(peer) => meta.with_peer_address(peer),
            None => meta,
        };
        let meta = Arc::new(meta);
        Ok(PostStart {
            body,
            limit,
            meta,
            framing,
            answer_headers,
        })
    }

    /// What a `POST` keeps of its session for after its answer ([`After`]).
    fn after_answer(&self, resolved: &Resolved<H::Session>) -> After<H::Session> {
        let save = self.saves_state;
        match resolved {
            Resolved::Opening(session) => After {
                session: Some(Arc::clone(session)),
                opened: true,
                save,
            },
            // Only a store that keeps state for other replicas needs the session afterwards
            // (a rarer body saves in its own answer).
            Resolved::Live(session) if save => After {
                session: Some(Arc::clone(session)),
                opened: false,
                save,
            },
            Resolved::Live(_) | Resolved::None => After {
                session: None,
                opened: false,
                save,
            },
        }
    }

    /// Decodes a read body, resolves its session and admits it, before anything runs. Without
    /// the store when the request neither names a session nor opens one (nothing is awaited
    /// then); otherwise what the store must answer is left to [`Self::admit_with_store`].
    fn admit_post(
        &self,
        read: Result<Bytes, Refusal>,
        limit: usize,
        meta: Arc<RequestMeta>,
        framing: Framed,
    ) -> Admission<H::Session> {
        let bytes = match read {
            Ok(bytes) => bytes,
            Err(refusal) => return Admission::Ready(Err(refused_post(refusal, None))),
        };
        let body = match self.decode_inbound(&bytes, limit) {
            Ok(body) => body,
            Err(error) => return Admission::Ready(Err(undecoded(&error))),
        };
        match self.resolve_without_store(&meta.headers, &body) {
            Some(Ok(resolved)) => Admission::Ready(self.checked(body, resolved, meta, framing)),
            Some(Err(refusal)) => Admission::Ready(Err(refused_post(refusal, body.echo_id()))),
            None => Admission::NeedsStore(Unresolved {
                body,
                meta,
                framing,
            }),
        }
    }

    /// [`Self::admit_stored`], run to its end in place when the store answers at once (nothing
    /// of it then stays in the `POST`'s future), boxed otherwise (only the box stays).
    async fn admit_with_store(
        &self,
        unresolved: Unresolved,
    ) -> Result<AdmittedBody<H::Session>, Box<Response>> {
        if self.answers_at_once {
            futures::FutureExt::now_or_never(self.admit_stored(unresolved))
                // A store that broke its promise to answer at once is one that failed.
                .unwrap_or_else(|| Err(refused_post(Refusal::StoreUnavailable, None)))
        } else {
            Box::pin(self.admit_stored(unresolved)).await
        }
    }

    /// A body whose session the store resolves; only an admitted opening is stored, so a
    /// refused one leaves nothing behind.
    async fn admit_stored(
        &self,
        unresolved: Unresolved,
    ) -> Result<AdmittedBody<H::Session>, Box<Response>> {
        let Unresolved {
            body,
            meta,
            framing,
        } = unresolved;
        let resolved = match self.resolve_post_session(&meta.headers, &body).await {
            Ok(resolved) => resolved,
            Err(refusal) => return Err(refused_post(refusal, body.echo_id())),
        };
        let admitted = self.checked(body, resolved, meta, framing)?;
        if let Resolved::Opening(session) = &admitted.resolved
            && let Err(error) = self.store.insert(Arc::clone(session)).await
        {
            return Err(refused_post(store_refusal(error), admitted.body.echo_id()));
        }
        Ok(admitted)
    }

    /// A resolved body through the transport's and the protocol's admission.
    fn checked(
        &self,
        body: Inbound,
        resolved: Resolved<H::Session>,
        meta: Arc<RequestMeta>,
        framing: Framed,
    ) -> Result<AdmittedBody<H::Session>, Box<Response>> {
        if let Some(session) = resolved.session() {
            record_session(session.id());
        }
        if let Err(denial) = self.admit_inbound(&meta.headers, &body, &resolved) {
            return Err(denied(denial, body.echo_id()));
        }
        Ok(AdmittedBody {
            body,
            resolved,
            meta,
            framing,
        })
    }

    /// The answer an admitted body is owed: a single request framed as JSON inline, any other
    /// body as the boxed future of [`Self::answer_rare`]. Inlined into the `POST`'s future, so
    /// the admitted body is taken apart where it lies rather than first copied into a call.
    #[inline(always)]
    fn answer_of(
        self: &Arc<Self>,
        admitted: AdmittedBody<H::Session>,
        answer_headers: &AnswerHeaders,
    ) -> Answer<H::Session> {
        let AdmittedBody {
            body,
            resolved,
            meta,
            framing,
        } = admitted;
        let body = match framing {
            Framed::Json => match body.into_single_request() {
                Ok(request) => {
                    if self.events_at_once
                        && let Ok(route) = Self::side_route_now(&resolved)
                    {
                        let scope = self.scope(&resolved, meta, route, None);
                        return Answer::One { request, scope };
                    }
                    return Arc::clone(self).answer_one_later(
                        request,
                        resolved,
                        meta,
                        answer_headers.clone(),
                    );
                }
                Err(body) => body,
            },
            Framed::Sse | Framed::Auto | Framed::SseOrRefusal => body,
        };
        Arc::clone(self).answer_rare_boxed(
            AdmittedBody {
                body,
                resolved,
                meta,
                framing,
            },
            answer_headers.clone(),
        )
    }

    /// A single request answered as JSON once the event store has opened the session's own
    /// stream, for a store that does not answer at once (or failed to): boxed, off the common
    /// path. A store that cannot open it refuses the request before it runs.
    #[inline(never)]
    fn answer_one_later(
        self: Arc<Self>,
        request: Request,
        resolved: Resolved<H::Session>,
        meta: Arc<RequestMeta>,
        answer_headers: AnswerHeaders,
    ) -> Answer<H::Session> {
        Answer::Other(Box::pin(async move {
            let route = match self.side_route(&resolved).await {
                Ok(route) => route,
                Err(error) => {
                    self.settle_opening(resolved.opening(), &[]).await;
                    return refuse(store_refusal(error), Some(&request.id));
                }
            };
            let after = self.after_answer(&resolved);
            let scope = self.scope(&resolved, meta, route, None);
            let served = self.served(scope.session.as_ref(), &scope.meta.headers);
            let mut answering = std::pin::pin!(answer_request(&self.handler, request, scope));
            let answer = answering.as_mut().await;
            let outcome = answering.outcome();
            self.finish_after(&after, answer, outcome, served, &answer_headers)
                .await
        }))
    }

    /// The boxed future of a rarer body ([`Self::answer_rare`]), built out of line so the
    /// common path's code stays short.
    #[inline(never)]
    fn answer_rare_boxed(
        self: Arc<Self>,
        admitted: AdmittedBody<H::Session>,
        answer_headers: AnswerHeaders,
    ) -> Answer<H::Session> {
        Answer::Other(Box::pin(self.answer_rare(admitted, answer_headers)))
    }

    /// Decodes a read body within the body limit in force.
    fn decode_inbound(&self, bytes: &[u8], limit: usize) -> Result<Inbound, DecodeError> {
        let limits = DecodeLimits {
            max_bytes: limit,
            ..self.config.limits
        };
        decode(bytes, &limits).map(Inbound::from_payload)
    }

    /// [`Self::finish_one`] once the store heard of the request: a failed opening forgotten,
    /// the state saved when the store saves it (a failed save is the store's refusal).
    async fn finish_after(
        &self,
        after: &After<H::Session>,
        answer: Option<RpcResponse>,
        outcome: Outcome,
        served: Served,
        answer_headers: &AnswerHeaders,
    ) -> Response {
        if let Some(session) = after.opening() {
            self.settle_opening(Some(session), answer.as_slice()).await;
        }
        match self.save_state(after.saving()).await {
            Ok(()) => self.finish_one(answer, outcome, served, answer_headers),
            Err(refusal) => refuse(refusal, None),
        }
    }

    /// A single request's answer as the whole JSON response (`202` when a cancelled request is
    /// owed none, `500` when its handler panicked).
    fn finish_one(
        &self,
        answer: Option<RpcResponse>,
        outcome: Outcome,
        served: Served,
        answer_headers: &AnswerHeaders,
    ) -> Response {
        let mut response = match answer {
            Some(answer) => self.single_answer(&answer, served, answer_headers),
            None => StatusCode::ACCEPTED.into_response(),
        };
        if outcome == Outcome::Panicked {
            *response.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
        }
        response
    }

    /// Every `POST` but a single request answered as JSON: bodies without requests, batches and
    /// answers that may stream.
    async fn answer_rare(
        self: Arc<Self>,
        admitted: AdmittedBody<H::Session>,
        answer_headers: AnswerHeaders,
    ) -> Response {
        let AdmittedBody {
            body,
            resolved,
            meta,
            framing,
        } = admitted;
        if !body.has_requests() && body.invalid.is_empty() {
            if let Err(refusal) = self
                .take_without_answer(body.messages, &resolved, meta)
                .await
            {
                return refuse(refusal, None);
            }
            // Saved before the answer exists, so no response is held across the save.
            if let Err(refusal) = self.save_state(resolved.session()).await {
                return refuse(refusal, None);
            }
            return StatusCode::ACCEPTED.into_response();
        }
        match framing {
            Framed::Json => {
                self.answer_batch(body, &resolved, meta, &answer_headers)
                    .await
            }
            Framed::Sse | Framed::Auto | Framed::SseOrRefusal => {
                self.answer_streaming(body, resolved, meta, framing, answer_headers)
                    .await
            }
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

    /// What a request's handler runs with: its peer sends on `route`, and what is not tied to
    /// the request on `side` (`None`: on `route` too).
    pub(super) fn scope(
        &self,
        resolved: &Resolved<H::Session>,
        meta: Arc<RequestMeta>,
        route: Route,
        side: Option<Route>,
    ) -> Scope<H::Session> {
        let session = resolved.session().cloned();
        let conversation = session
            .as_ref()
            .map(|session| Arc::clone(session.conversation()));
        // Without a session, a call back rides the POST's own stream, if it has one.
        let calls = match (&conversation, &route) {
            (None, Route::Tail(_)) => self.relay.clone(),
            _ => conversation.clone(),
        };
        let peer = Peer::new(
            route,
            calls,
            self.config.peer_timeout,
            self.handler.profile().cancellation().copied(),
        );
        let relay = match (&self.routing, &session) {
            (Some(link), Some(session)) => {
                link.register(session.id(), session.conversation());
                Some(Arc::clone(link))
            }
            _ => None,
        };
        Scope {
            peer: match side {
                Some(side) => peer.with_session_route(side),
                None => peer,
            },
            session,
            conversation,
            meta,
            relay,
        }
    }

    /// Where a handler's own messages go when the answer is plain JSON: the session's own
    /// stream, as the event store opens it.
    pub(super) async fn side_route(
        &self,
        resolved: &Resolved<H::Session>,
    ) -> Result<Route, StoreError> {
        match resolved.session() {
            Some(session) => session.standalone_stream().await.map(Route::Tail),
            None => Ok(Route::Nowhere),
        }
    }

    /// [`Self::side_route`] from an event store that answers at once; one that did not keep
    /// that promise is taken as failed.
    fn side_route_now(resolved: &Resolved<H::Session>) -> Result<Route, StoreError> {
        match resolved.session() {
            Some(session) => match session.standalone_stream().now() {
                Ok(opened) => opened.map(Route::Tail),
                Err(_) => Err(StoreError::unavailable("the event store answered late")),
            },
            None => Ok(Route::Nowhere),
        }
    }

    async fn take_without_answer(
        &self,
        messages: Messages,
        resolved: &Resolved<H::Session>,
        meta: Arc<RequestMeta>,
    ) -> Result<(), Refusal> {
        let side = self.side_route(resolved).await.map_err(store_refusal)?;
        let mut scope = self.scope(resolved, meta, side, None);
        // Without sessions, answers to calls made on POST streams come here; requests never
        // join that conversation, so no client can cancel another's by its id.
        if scope.conversation.is_none() {
            scope.conversation.clone_from(&self.relay);
        }
        for message in messages {
            serve_message(&self.handler, message, scope.clone()).await;
        }
        Ok(())
    }

    /// A batch answered as one JSON array (a single request is answered by [`serve_post`]).
    async fn answer_batch(
        &self,
        body: Inbound,
        resolved: &Resolved<H::Session>,
        meta: Arc<RequestMeta>,
        answer_headers: &AnswerHeaders,
    ) -> Response {
        let side = match self.side_route(resolved).await {
            Ok(side) => side,
            Err(error) => {
                self.settle_opening(resolved.opening(), &[]).await;
                return refuse(store_refusal(error), None);
            }
        };
        let scope = self.scope(resolved, meta, side, None);
        let answers = run_all(&self.handler, body, scope).await;
        self.settle_opening(resolved.opening(), &answers).await;
        if let Err(refusal) = self.save_state(resolved.session()).await {
            return refuse(refusal, None);
        }
        self.batch_response(answers, answer_headers)
    }

    /// One request's answer as the whole JSON response, with the head the profile declares
    /// for its error as served (200 otherwise).
    fn single_answer(
        &self,
        answer: &RpcResponse,
        served: Served,
        answer_headers: &AnswerHeaders,
    ) -> Response {
        let mut response = self.json_response(answer.to_bytes(), answer_headers);
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

    /// A JSON answer, its headers built as the hardening that admitted it prepared them
    /// ([`AnswerHeaders::json`]).
    fn json_response(&self, bytes: Bytes, answer_headers: &AnswerHeaders) -> Response {
        let mut response = Response::new(Body::from(bytes));
        *response.headers_mut() = answer_headers.json(&self.content_type);
        response
    }

    pub(super) fn json_answers(
        &self,
        batch: bool,
        answers: Vec<RpcResponse>,
        served: Served,
        answer_headers: &AnswerHeaders,
    ) -> Response {
        match (batch, answers.as_slice()) {
            (false, [single]) => self.single_answer(single, served, answer_headers),
            (_, []) => StatusCode::ACCEPTED.into_response(),
            _ => self.batch_response(answers, answer_headers),
        }
    }

    /// Answers as one JSON array.
    fn batch_response(
        &self,
        answers: Vec<RpcResponse>,
        answer_headers: &AnswerHeaders,
    ) -> Response {
        let messages: Vec<Message> = answers.into_iter().map(Message::Response).collect();
        self.json_response(batch_to_bytes(&messages), answer_headers)
    }
}

/// Runs every message of a body concurrently; returns the answers owed, invalid entries first.
pub(super) async fn run_all<H: RequestHandler>(
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
