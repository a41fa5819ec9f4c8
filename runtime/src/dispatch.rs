//! The transport-independent step every transport shares: run one inbound message through the
//! handler. Requests run under a cancellation token the peer can fire (through the protocol's
//! cancel convention); notifications that cancel are applied before the handler sees them;
//! responses are handed to the conversation awaiting them. It is also the one panic boundary:
//! a handler that panics answers its request with an internal error (-32603), logged once with
//! its location ([`crate::panic_boundary`]), and every transport goes on serving.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;

use futures::FutureExt as _;
use futures::future::{CatchUnwind, Either};
use pin_project_lite::pin_project;
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};
use tracing::Instrument;
use tracing::instrument::Instrumented;

use crate::handler::{Context, Reply, RequestHandler, RequestMeta};
use crate::jsonrpc::{ErrorObject, Message, Notification, Request, RequestId, Response};
use crate::panic_boundary::Polling;
use crate::peer::{CancelReply, Conversation, Peer, RunningRequest, cancelled_request_id};
use crate::quote::quote;
use crate::relay::RelayLink;
use crate::session::Session;

/// Where a message is being served: the session (if any), the request's metadata and the
/// route back to the peer.
pub(crate) struct Scope<S> {
    pub(crate) session: Option<Arc<Session<S>>>,
    pub(crate) conversation: Option<Arc<Conversation>>,
    pub(crate) meta: Arc<RequestMeta>,
    pub(crate) peer: Peer,
    /// With a relay configured, where answers and cancellations meant for another replica go.
    pub(crate) relay: Option<Arc<RelayLink>>,
}

impl<S> Clone for Scope<S> {
    fn clone(&self) -> Self {
        Self {
            session: self.session.clone(),
            conversation: self.conversation.clone(),
            meta: Arc::clone(&self.meta),
            peer: self.peer.clone(),
            relay: self.relay.clone(),
        }
    }
}

/// Serves one message; returns the answer owed to it, if any.
///
/// Like the functions it picks from, this does its bookkeeping when called and returns the
/// handler's future wrapped in combinators, not an `async fn`: an `async fn` keeps its
/// arguments beside the future built from them, so each layer would add another copy of the
/// request and its [`Context`] to every request's state.
pub(crate) fn serve_message<H: RequestHandler>(
    handler: &H,
    message: Message,
    scope: Scope<H::Session>,
) -> impl Future<Output = Option<Response>> + Send + '_ {
    match message {
        Message::Request(request) => Either::Left(answer_request(handler, request, scope)),
        Message::Notification(notification) => Either::Right(Either::Left(
            take_notification(handler, notification, scope).map(|()| None),
        )),
        Message::Response(response) => {
            if !forwarded(&scope, &response) {
                take_response(scope.conversation.as_deref(), response);
            }
            Either::Right(Either::Right(std::future::ready(None)))
        }
    }
}

/// Runs a request to its answer, or to its cancellation. The request is registered with its
/// conversation (if any) now, and unregistered once it is answered or its future is dropped.
pub(crate) fn answer_request<H: RequestHandler>(
    handler: &H,
    request: Request,
    scope: Scope<H::Session>,
) -> Answering<impl Future<Output = Reply> + Send + '_> {
    let id = request.id.clone();
    // Without a conversation nothing can cancel the request: it runs to its answer.
    let running = scope
        .conversation
        .as_ref()
        .map(|conversation| conversation.start(&id));
    let token = running.as_ref().map(|running| running.token().clone());
    let profile = handler.profile();
    let span = tracing::debug_span!("request", method = %quote(&request.method), id = %quote(&id));
    let cancelled = token.clone().map(CancellationToken::cancelled_owned);
    let cx = Context::new(
        Some(id.clone()),
        scope.session,
        scope.meta,
        token,
        scope.peer,
    );
    Answering {
        reply: AssertUnwindSafe(handler.handle(request, cx).instrument(span)).catch_unwind(),
        cancelled,
        id,
        running,
        cancel_reply: profile.cancellation().map(|convention| convention.reply),
        outcome: Outcome::Answered,
    }
}

/// How a request's answer came about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// The handler answered, or the peer cancelled the request.
    Answered,
    /// The handler panicked: the answer is an internal error, and an HTTP answer of its own
    /// carries `500`.
    Panicked,
}

pin_project! {
    /// A request's answer in the making: the handler's future, polled in the request's span,
    /// until it answers or the peer cancels the request. One struct rather than nested
    /// combinators, so the future is built (and moved) once.
    pub(crate) struct Answering<F> {
        #[pin]
        reply: CatchUnwind<AssertUnwindSafe<Instrumented<F>>>,
        #[pin]
        cancelled: Option<WaitForCancellationFutureOwned>,
        id: RequestId,
        running: Option<RunningRequest>,
        cancel_reply: Option<CancelReply>,
        outcome: Outcome,
    }
}

impl<F> Answering<F> {
    /// How the answer came about, once it has.
    pub(crate) fn outcome(self: Pin<&mut Self>) -> Outcome {
        *self.project().outcome
    }
}

impl<F: Future<Output = Reply>> Future for Answering<F> {
    type Output = Option<Response>;

    fn poll(self: Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        // The handler first, so an answer ready when the peer cancels is still the answer.
        let polled = {
            let _polling = Polling::enter();
            this.reply.poll(cx)
        };
        if let Poll::Ready(caught) = polled {
            this.running.take();
            let reply = caught.unwrap_or_else(|_| {
                *this.outcome = Outcome::Panicked;
                Err(ErrorObject::internal_error())
            });
            return Poll::Ready(Some(Response::answering(this.id.clone(), reply)));
        }
        if let Some(cancelled) = this.cancelled.as_pin_mut()
            && cancelled.poll(cx).is_ready()
        {
            this.running.take();
            return Poll::Ready(cancelled_answer(this.id.clone(), *this.cancel_reply));
        }
        Poll::Pending
    }
}

/// The answer a request the peer cancelled is owed under the protocol's convention.
fn cancelled_answer(id: RequestId, reply: Option<CancelReply>) -> Option<Response> {
    tracing::debug!(id = %quote(&id), "request cancelled by the peer");
    match reply {
        Some(CancelReply::Error(code)) => Some(Response::error(
            Some(id),
            ErrorObject::new(code, "request cancelled"),
        )),
        Some(CancelReply::Nothing) | None => None,
    }
}

/// Applies a cancellation the notification carries now, then hands it to the handler.
pub(crate) fn take_notification<H: RequestHandler>(
    handler: &H,
    notification: Notification,
    scope: Scope<H::Session>,
) -> impl Future<Output = ()> + Send + '_ {
    if let (Some(convention), Some(conversation)) = (
        handler.profile().cancellation(),
        scope.conversation.as_ref(),
    ) && notification.method == convention.method
        && let Some(id) = cancelled_request_id(convention, notification.params.as_deref())
    {
        let here = conversation.cancel_inbound(&id);
        // Not running here: it may run on another replica serving the same session.
        if !here && let (Some(link), Some(session)) = (&scope.relay, &scope.session) {
            link.broadcast_cancel(session.id(), &id);
        }
    }
    let cx = Context::new(None, scope.session, scope.meta, None, scope.peer);
    Guarded {
        inner: AssertUnwindSafe(handler.notify(notification, cx)).catch_unwind(),
    }
}

pin_project! {
    /// A notification's handling, whose panic is caught (and logged by the hook): there is no
    /// answer to give, and the transport serves on.
    struct Guarded<F> {
        #[pin]
        inner: CatchUnwind<AssertUnwindSafe<F>>,
    }
}

impl<F: Future<Output = ()>> Future for Guarded<F> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> Poll<()> {
        let _polling = Polling::enter();
        self.project().inner.poll(cx).map(|_| ())
    }
}

/// Whether `response` answers a request another replica sent, and went there.
fn forwarded<S>(scope: &Scope<S>, response: &Response) -> bool {
    match (&scope.relay, &scope.session) {
        (Some(link), Some(session)) => link.forward_answer(session.id(), response),
        _ => false,
    }
}

/// Hands the peer's answer to the call awaiting it.
pub(crate) fn take_response(conversation: Option<&Conversation>, response: Response) {
    let delivered = conversation.is_some_and(|conversation| conversation.answer(response));
    if !delivered {
        tracing::debug!("dropped an answer no call was awaiting");
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::value::RawValue;

    use super::*;
    use crate::handler::Profile;
    use crate::peer::{CancelConvention, Route};

    const CANCELLED: i64 = -32800;

    /// Answers `ready` at once and never answers anything else.
    struct Handler {
        profile: Profile,
    }

    impl RequestHandler for Handler {
        type Session = ();

        fn profile(&self) -> &Profile {
            &self.profile
        }

        async fn handle(&self, request: Request, _cx: Context<()>) -> Reply {
            if request.method == "ready" {
                return RawValue::from_string("true".into())
                    .map_err(|_| ErrorObject::internal_error());
            }
            std::future::pending().await
        }

        async fn notify(&self, _notification: Notification, _cx: Context<()>) {}
    }

    fn handler() -> Handler {
        Handler {
            profile: Profile::new().with_cancellation(CancelConvention {
                method: "cancel",
                id_field: "id",
                reply: CancelReply::Error(CANCELLED),
            }),
        }
    }

    fn scope(conversation: &Arc<Conversation>) -> Scope<()> {
        Scope {
            session: None,
            conversation: Some(Arc::clone(conversation)),
            meta: Arc::new(RequestMeta::default()),
            peer: Peer::new(
                Route::Nowhere,
                Some(Arc::clone(conversation)),
                Duration::from_secs(1),
                None,
            ),
            relay: None,
        }
    }

    fn request(id: i64, method: &str) -> Request {
        Request {
            id: RequestId::Number(id),
            method: method.into(),
            params: None,
        }
    }

    #[tokio::test]
    async fn an_answer_ready_when_the_peer_cancels_is_still_the_answer() {
        let (handler, conversation) = (handler(), Arc::new(Conversation::new()));
        let answering = answer_request(&handler, request(7, "ready"), scope(&conversation));
        // Registered when called, so the peer can cancel it before it is first polled.
        assert!(conversation.cancel_inbound(&RequestId::Number(7)));
        let answer = answering.await.expect("an answer");
        assert_eq!(answer.id(), Some(&RequestId::Number(7)));
        assert_eq!(answer.outcome().as_ref().map(|raw| raw.get()), Ok("true"));
    }

    #[tokio::test]
    async fn a_request_the_peer_cancels_gets_the_conventions_error_and_is_unregistered() {
        let (handler, conversation) = (handler(), Arc::new(Conversation::new()));
        let answering = answer_request(&handler, request(8, "never"), scope(&conversation));
        assert!(conversation.cancel_inbound(&RequestId::Number(8)));
        // Bounded, so a cancellation that is not applied fails here instead of hanging.
        let answer = tokio::time::timeout(Duration::from_secs(5), answering)
            .await
            .expect("cancelled in time")
            .expect("the convention's error");
        assert_eq!(
            answer
                .outcome()
                .as_ref()
                .map(|raw| raw.get())
                .map_err(|error| error.code),
            Err(CANCELLED)
        );
        assert!(!conversation.cancel_inbound(&RequestId::Number(8)));
    }
}
