//! The outbound half of a conversation: a [`Peer`] sends notifications and server→client
//! requests on the stream the current request is answered on (or the session's own stream),
//! and the [`Conversation`] correlates the peer's answers, arriving later on other requests,
//! with the calls awaiting them. Cancellation travels both ways through the protocol's declared
//! [`CancelConvention`].

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use serde::Serialize;
use serde_json::value::RawValue;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::jsonrpc::{ErrorObject, Message, Notification, Request, RequestId, Response, to_raw};
use crate::relay::RelayLink;
use crate::session::publish_now;
use crate::store::log_late_failure;
use crate::tail::{EventStream, PublishError};

/// How a protocol cancels a request in flight: the notification's method and the params field
/// naming the request. The runtime applies it both ways; it never knows the method otherwise.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CancelConvention {
    /// The cancellation notification's method (e.g. MCP's or ACP's).
    pub method: &'static str,
    /// The params field holding the cancelled request's id.
    pub id_field: &'static str,
    /// What a cancelled inbound request answers.
    pub reply: CancelReply,
}

/// What the runtime answers for an inbound request the peer cancelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CancelReply {
    /// No answer at all.
    Nothing,
    /// A JSON-RPC error with this code.
    Error(i64),
}

/// Why an outbound message could not be sent or answered.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PeerError {
    /// The message has no stream to go out on.
    #[error("there is no stream to send on")]
    NoStream,
    /// A request needs a session to route its answer back, and there is none.
    #[error("answers cannot be correlated without a session")]
    NoSession,
    /// The stream or session ended before the message went out or was answered.
    #[error("the stream or session has ended")]
    Closed,
    /// The peer did not answer within this time.
    #[error("the peer did not answer within {0:?}")]
    TimedOut(Duration),
    /// The params could not be serialized.
    #[error("the params could not be serialized")]
    Unserializable,
    /// The peer answered with this JSON-RPC error.
    #[error("the peer answered with an error: {0}")]
    Rejected(ErrorObject),
    /// The peer is not reading: its outbound queue is full.
    #[error("the peer is not reading: the queue of messages to it is full")]
    Backlogged,
    /// The store holding the stream could not take the message.
    #[error("the event store is unavailable")]
    Unavailable,
}

impl From<PublishError> for PeerError {
    fn from(error: PublishError) -> Self {
        match error {
            PublishError::Closed => Self::Closed,
            PublishError::Store(_) => Self::Unavailable,
        }
    }
}

/// Where outbound messages go.
#[derive(Clone, Debug)]
pub(crate) enum Route {
    /// An SSE stream's tail (a request's stream or the session's standalone stream).
    Tail(Arc<dyn EventStream>),
    /// A line-oriented writer (stdio), through its bounded queue.
    Lines(mpsc::Sender<Bytes>),
    /// Nowhere: a stateless request answered as plain JSON.
    Nowhere,
}

impl Route {
    /// Sends without waiting: a stream whose store answers later finishes the publish on its
    /// own (in the order of the calls), and `Ok` then only says it was handed over.
    fn send(&self, bytes: Bytes) -> Result<(), PeerError> {
        match self {
            Self::Tail(tail) => publish_now(tail.as_ref(), bytes).map_err(PeerError::from),
            Self::Lines(lines) => lines.try_send(bytes).map_err(|error| match error {
                mpsc::error::TrySendError::Full(_) => PeerError::Backlogged,
                mpsc::error::TrySendError::Closed(_) => PeerError::Closed,
            }),
            Self::Nowhere => Err(PeerError::NoStream),
        }
    }

    /// Sends and waits for the store to take the message (a call that awaits its answer
    /// should know its request went out).
    async fn send_awaiting(&self, bytes: Bytes) -> Result<(), PeerError> {
        match self {
            Self::Tail(tail) => tail
                .publish(bytes)
                .await
                .map(|_| ())
                .map_err(PeerError::from),
            Self::Lines(_) | Self::Nowhere => self.send(bytes),
        }
    }
}

type AnswerSender = oneshot::Sender<Result<Box<RawValue>, ErrorObject>>;

/// How a conversation numbers the requests it sends.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum OutboundIds {
    /// 0, 1, 2…: only the one peer of the conversation sees them.
    #[default]
    Counted,
    /// A random string each: the conversation of a sessionless endpoint, where any client may
    /// post an answer, so only the client that saw a request can answer it.
    Unguessable,
}

/// The bookkeeping of one conversation (a session, or a stdio connection): requests this side
/// sent and awaits, and the peer's requests running here, which the peer may cancel.
#[derive(Debug, Default)]
pub struct Conversation {
    awaiting: Mutex<HashMap<RequestId, AnswerSender>>,
    running: Mutex<HashMap<RequestId, CancellationToken>>,
    next_id: AtomicI64,
    ids: OutboundIds,
    /// Work whose answers are still owed on the conversation's own stream (held by
    /// [`Conversation::hold`]).
    owed: AtomicUsize,
    /// With a relay, the link that numbers this conversation's requests with the replica's
    /// tag, so no replica's ids collide with another's.
    tagged: OnceLock<Arc<RelayLink>>,
}

impl Conversation {
    /// A conversation with nothing in flight.
    pub fn new() -> Self {
        Self::default()
    }

    /// The one conversation of an endpoint without sessions: it only correlates the answers to
    /// requests sent on `POST` streams, so its ids are unguessable.
    pub(crate) fn unguessable() -> Self {
        Self {
            ids: OutboundIds::Unguessable,
            ..Self::default()
        }
    }

    /// Delivers the peer's answer to the call awaiting it; `false` when none is (late, unknown
    /// or duplicate answers are dropped).
    pub fn answer(&self, response: Response) -> bool {
        let Some(id) = response.id().cloned() else {
            return false;
        };
        let waiter = self
            .awaiting
            .lock()
            .ok()
            .and_then(|mut awaiting| awaiting.remove(&id));
        match waiter {
            Some(waiter) => waiter.send(response.into_outcome()).is_ok(),
            None => false,
        }
    }

    /// Registers an inbound request as running and returns the token the peer can cancel.
    pub(crate) fn start(self: &Arc<Self>, id: &RequestId) -> RunningRequest {
        let token = CancellationToken::new();
        if let Ok(mut running) = self.running.lock() {
            running.insert(id.clone(), token.clone());
        }
        RunningRequest {
            conversation: Arc::clone(self),
            id: id.clone(),
            token,
        }
    }

    /// Cancels the peer's running request `id`; `false` when it is not running.
    pub(crate) fn cancel_inbound(&self, id: &RequestId) -> bool {
        let token = self
            .running
            .lock()
            .ok()
            .and_then(|running| running.get(id).cloned());
        token.map(|token| token.cancel()).is_some()
    }

    /// Marks work whose answers travel on the conversation's own stream as owed until the
    /// returned hold is dropped, so that stream outlives a drain until they are written.
    pub(crate) fn hold(self: &Arc<Self>) -> OwedWork {
        self.owed.fetch_add(1, Ordering::AcqRel);
        OwedWork(Arc::clone(self))
    }

    /// Whether answers are still owed on the conversation's own stream.
    pub(crate) fn is_busy(&self) -> bool {
        self.owed.load(Ordering::Acquire) > 0
    }

    /// Fails every call awaiting the peer's answer (the peer can no longer send one).
    pub(crate) fn fail_awaiting(&self) {
        if let Ok(mut awaiting) = self.awaiting.lock() {
            awaiting.clear();
        }
    }

    /// Fails every awaiting call and cancels every running request (the conversation ended).
    pub(crate) fn abandon(&self) {
        self.fail_awaiting();
        if let Ok(running) = self.running.lock() {
            running.values().for_each(CancellationToken::cancel);
        }
    }

    /// Numbers this conversation's requests through `link` from now on (a relay is configured).
    pub(crate) fn route_through(&self, link: &Arc<RelayLink>) {
        if self.tagged.get().is_none() {
            let _ = self.tagged.set(Arc::clone(link));
        }
    }

    fn next_id(&self) -> RequestId {
        match self.ids {
            OutboundIds::Counted => match self.tagged.get() {
                Some(link) => link.next_id(),
                None => RequestId::Number(self.next_id.fetch_add(1, Ordering::Relaxed)),
            },
            OutboundIds::Unguessable => {
                RequestId::String(Arc::from(uuid::Uuid::new_v4().simple().to_string()))
            }
        }
    }

    fn await_answer(
        &self,
        id: &RequestId,
    ) -> oneshot::Receiver<Result<Box<RawValue>, ErrorObject>> {
        let (sender, receiver) = oneshot::channel();
        if let Ok(mut awaiting) = self.awaiting.lock() {
            awaiting.insert(id.clone(), sender);
        }
        receiver
    }

    fn forget(&self, id: &RequestId) -> bool {
        self.awaiting
            .lock()
            .ok()
            .and_then(|mut awaiting| awaiting.remove(id))
            .is_some()
    }
}

/// Work owed on a conversation's own stream; dropping it marks the work done.
#[derive(Debug)]
pub(crate) struct OwedWork(Arc<Conversation>);

impl Drop for OwedWork {
    fn drop(&mut self) {
        self.0.owed.fetch_sub(1, Ordering::AcqRel);
    }
}

/// An inbound request's registration; dropping it unregisters the request.
pub(crate) struct RunningRequest {
    conversation: Arc<Conversation>,
    id: RequestId,
    token: CancellationToken,
}

impl RunningRequest {
    pub(crate) fn token(&self) -> &CancellationToken {
        &self.token
    }
}

impl Drop for RunningRequest {
    fn drop(&mut self) {
        if let Ok(mut running) = self.conversation.running.lock() {
            running.remove(&self.id);
        }
    }
}

/// A handle for talking back to the peer from inside a handler. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Peer {
    route: Route,
    /// Where messages not tied to the current request go; `None`: the same route.
    session_route: Option<Route>,
    /// The current request's own resumable stream, which the handler may release early.
    request_stream: Option<Arc<dyn EventStream>>,
    conversation: Option<Arc<Conversation>>,
    timeout: Duration,
    cancel: Option<CancelConvention>,
}

impl Peer {
    #[inline]
    pub(crate) fn new(
        route: Route,
        conversation: Option<Arc<Conversation>>,
        timeout: Duration,
        cancel: Option<CancelConvention>,
    ) -> Self {
        Self {
            route,
            session_route: None,
            request_stream: None,
            conversation,
            timeout,
            cancel,
        }
    }

    /// Sets where [`Self::session_wide`] sends (the session's own stream over HTTP). Inlined,
    /// so building a request's peer does not copy it once more.
    #[must_use]
    #[inline(always)]
    pub(crate) fn with_session_route(mut self, route: Route) -> Self {
        self.session_route = Some(route);
        self
    }

    /// Marks `tail` as the current request's resumable stream (one a client can resume with
    /// `Last-Event-ID`), so [`Self::close_stream`] may release it.
    #[must_use]
    pub(crate) fn with_request_stream(mut self, tail: Arc<dyn EventStream>) -> Self {
        self.request_stream = Some(tail);
        self
    }

    /// Ends the connection carrying the current request's stream (SSE polling): the client is
    /// told to reconnect after `retry` and resumes with `Last-Event-ID`; messages sent after
    /// this wait for it. [`PeerError::NoStream`] when the request has no resumable stream.
    pub fn close_stream(&self, retry: Duration) -> Result<(), PeerError> {
        let tail = self.request_stream.as_ref().ok_or(PeerError::NoStream)?;
        match tail.release_reader(retry).now_or_detach(log_late_failure) {
            Some(released) => released.map_err(PeerError::from),
            None => Ok(()),
        }
    }

    /// A peer for messages not tied to the current request (list changes, log lines, calls
    /// made after the request answered): the session's own stream over HTTP, the one line
    /// stream over stdio. It stays usable after the request that produced it has finished.
    pub fn session_wide(&self) -> Self {
        let route = self
            .session_route
            .clone()
            .unwrap_or_else(|| self.route.clone());
        // Nowhere to send is no session: a call made there fails as one, at once.
        let conversation = match route {
            Route::Nowhere => None,
            Route::Tail(_) | Route::Lines(_) => self.conversation.clone(),
        };
        Self {
            route,
            session_route: None,
            request_stream: None,
            conversation,
            timeout: self.timeout,
            cancel: self.cancel,
        }
    }

    /// Sends a notification. On a request's stream it travels before that request's answer.
    pub fn notify<P: Serialize + ?Sized>(&self, method: &str, params: &P) -> Result<(), PeerError> {
        self.send(&Message::Notification(Notification {
            method: method.to_owned(),
            params: structured_params(params)?,
        }))
    }

    /// Sends any message as is (e.g. an intermediate result of a streaming call).
    pub fn send(&self, message: &Message) -> Result<(), PeerError> {
        self.route.send(message.to_bytes())
    }

    /// Calls the peer and waits for its answer, up to the configured timeout.
    pub async fn request<P: Serialize + ?Sized>(
        &self,
        method: &str,
        params: &P,
    ) -> Result<Box<RawValue>, PeerError> {
        self.request_within(method, params, self.timeout).await
    }

    /// Calls the peer and waits up to `timeout`. A call that times out, or whose future is
    /// dropped, is forgotten and (when the protocol declares how) cancelled at the peer.
    pub async fn request_within<P: Serialize + ?Sized>(
        &self,
        method: &str,
        params: &P,
        timeout: Duration,
    ) -> Result<Box<RawValue>, PeerError> {
        let conversation = self.conversation.as_ref().ok_or(PeerError::NoSession)?;
        let params = structured_params(params)?;
        let id = conversation.next_id();
        let answer = conversation.await_answer(&id);
        let mut pending = PendingCall {
            peer: self,
            conversation,
            id: id.clone(),
            settled: false,
        };
        let request = Message::Request(Request {
            id,
            method: method.to_owned(),
            params,
        });
        if let Err(error) = self.route.send_awaiting(request.to_bytes()).await {
            pending.settle();
            return Err(error);
        }
        let outcome = tokio::time::timeout(timeout, answer).await;
        match outcome {
            Ok(Ok(answer)) => {
                pending.settle();
                answer.map_err(PeerError::Rejected)
            }
            Ok(Err(_)) => {
                pending.settle();
                Err(PeerError::Closed)
            }
            // The guard's drop forgets the call and cancels it at the peer.
            Err(_) => Err(PeerError::TimedOut(timeout)),
        }
    }

    /// Tells the peer to stop working on a request this side sent.
    fn send_cancel(&self, id: &RequestId) {
        let Some(convention) = self.cancel else {
            return;
        };
        let mut params = serde_json::Map::new();
        let id_value = match id {
            RequestId::Number(number) => serde_json::Value::from(*number),
            RequestId::String(text) => serde_json::Value::from(&**text),
        };
        params.insert(convention.id_field.to_owned(), id_value);
        if let Err(error) = self.notify(convention.method, &params) {
            tracing::debug!(%error, "could not send a cancellation to the peer");
        }
    }
}

/// Params as JSON-RPC wants them: `null` (e.g. from `()`) means "no params" rather than a
/// scalar params member.
fn structured_params<P: Serialize + ?Sized>(
    params: &P,
) -> Result<Option<Box<RawValue>>, PeerError> {
    let raw = to_raw(params).map_err(|_| PeerError::Unserializable)?;
    Ok((raw.get() != "null").then_some(raw))
}

/// A call awaiting its answer; dropped unsettled, it is forgotten and cancelled at the peer.
struct PendingCall<'a> {
    peer: &'a Peer,
    conversation: &'a Arc<Conversation>,
    id: RequestId,
    settled: bool,
}

impl PendingCall<'_> {
    fn settle(&mut self) {
        self.settled = true;
        self.conversation.forget(&self.id);
    }
}

impl Drop for PendingCall<'_> {
    fn drop(&mut self) {
        if !self.settled && self.conversation.forget(&self.id) {
            self.peer.send_cancel(&self.id);
        }
    }
}

/// The request id a cancellation notification names, read per the protocol's convention.
pub(crate) fn cancelled_request_id(
    convention: &CancelConvention,
    params: Option<&RawValue>,
) -> Option<RequestId> {
    let params: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(params?.get()).ok()?;
    RequestId::from_json(params.get(convention.id_field)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jsonrpc::{DecodeLimits, decode_message};

    const CANCEL: CancelConvention = CancelConvention {
        method: "test/cancel",
        id_field: "requestId",
        reply: CancelReply::Nothing,
    };

    fn lines_peer() -> (Peer, Arc<Conversation>, mpsc::Receiver<Bytes>) {
        let (sender, receiver) = mpsc::channel(16);
        let conversation = Arc::new(Conversation::new());
        let peer = Peer::new(
            Route::Lines(sender),
            Some(Arc::clone(&conversation)),
            Duration::from_secs(5),
            Some(CANCEL),
        );
        (peer, conversation, receiver)
    }

    fn read(bytes: &Bytes) -> Message {
        decode_message(bytes, &DecodeLimits::default()).unwrap_or_else(|error| panic!("{error}"))
    }

    #[tokio::test]
    async fn an_outbound_request_is_answered_by_the_matching_response() {
        let (peer, conversation, mut sent) = lines_peer();
        let call =
            tokio::spawn(async move { peer.request("ask", &serde_json::json!({"q": 1})).await });
        let request = sent.recv().await.map(|bytes| read(&bytes));
        let Some(Message::Request(request)) = request else {
            panic!("no request was sent");
        };
        assert_eq!(request.method, "ask");
        let raw =
            to_raw(&serde_json::json!({"a": 2})).unwrap_or_else(|_| RawValue::NULL.to_owned());
        assert!(conversation.answer(Response::success(request.id, raw)));
        let answer = call
            .await
            .ok()
            .and_then(Result::ok)
            .map(|raw| raw.get().to_owned());
        assert_eq!(answer.as_deref(), Some(r#"{"a":2}"#));
    }

    #[tokio::test]
    async fn an_error_answer_is_a_rejection() {
        let (peer, conversation, mut sent) = lines_peer();
        let call = tokio::spawn(async move { peer.request("ask", &()).await });
        let Some(Message::Request(request)) = sent.recv().await.map(|bytes| read(&bytes)) else {
            panic!("no request was sent");
        };
        conversation.answer(Response::error(
            Some(request.id),
            ErrorObject::method_not_found(),
        ));
        let outcome = call
            .await
            .ok()
            .map(|result| result.map(|raw| raw.get().to_owned()));
        assert_eq!(
            outcome,
            Some(Err(PeerError::Rejected(ErrorObject::method_not_found())))
        );
    }

    #[tokio::test]
    async fn a_timed_out_request_is_cancelled_at_the_peer_and_its_late_answer_dropped() {
        let (peer, conversation, mut sent) = lines_peer();
        let outcome = peer
            .request_within("ask", &(), Duration::from_millis(20))
            .await;
        assert_eq!(
            outcome.map(|_| ()),
            Err(PeerError::TimedOut(Duration::from_millis(20)))
        );
        let Some(Message::Request(request)) = sent.recv().await.map(|bytes| read(&bytes)) else {
            panic!("no request was sent");
        };
        let Some(Message::Notification(cancel)) = sent.recv().await.map(|bytes| read(&bytes))
        else {
            panic!("no cancellation was sent");
        };
        assert_eq!(cancel.method, "test/cancel");
        assert_eq!(
            cancelled_request_id(&CANCEL, cancel.params.as_deref()),
            Some(request.id.clone())
        );
        assert!(!conversation.answer(Response::success(request.id, RawValue::NULL.to_owned())));
    }

    #[tokio::test]
    async fn abandoning_the_conversation_fails_awaiting_calls() {
        let (peer, conversation, _sent) = lines_peer();
        let call = tokio::spawn(async move { peer.request("ask", &()).await });
        tokio::time::sleep(Duration::from_millis(10)).await;
        conversation.abandon();
        let outcome = call.await.ok().map(|result| result.map(|_| ()));
        assert_eq!(outcome, Some(Err(PeerError::Closed)));
    }

    #[test]
    fn a_cancellation_reaches_the_running_request_it_names() {
        let conversation = Arc::new(Conversation::new());
        let running = conversation.start(&RequestId::Number(5));
        assert!(!conversation.cancel_inbound(&RequestId::Number(6)));
        assert!(conversation.cancel_inbound(&RequestId::Number(5)));
        assert!(running.token().is_cancelled());
        drop(running);
        assert!(!conversation.cancel_inbound(&RequestId::Number(5)));
    }

    #[test]
    fn a_peer_without_a_stream_says_so() {
        let peer = Peer::new(Route::Nowhere, None, Duration::from_secs(1), None);
        assert_eq!(peer.notify("n", &()), Err(PeerError::NoStream));
    }
}
