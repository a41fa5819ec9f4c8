//! The transport-independent step every transport shares: run one inbound message through the
//! handler. Requests run under a cancellation token the peer can fire (through the protocol's
//! cancel convention); notifications that cancel are applied before the handler sees them;
//! responses are handed to the conversation awaiting them.

use std::future::Future;
use std::sync::Arc;

use futures::FutureExt as _;
use futures::future::Either;
use tokio_util::future::FutureExt as _;
use tracing::Instrument;

use crate::handler::{Context, RequestHandler, RequestMeta};
use crate::jsonrpc::{ErrorObject, Message, Notification, Request, RequestId, Response};
use crate::peer::{CancelReply, Conversation, Peer, cancelled_request_id};
use crate::session::Session;

/// Where a message is being served: the session (if any), the request's metadata and the
/// route back to the peer.
pub(crate) struct Scope<S> {
    pub(crate) session: Option<Arc<Session<S>>>,
    pub(crate) conversation: Option<Arc<Conversation>>,
    pub(crate) meta: Arc<RequestMeta>,
    pub(crate) peer: Peer,
}

impl<S> Clone for Scope<S> {
    fn clone(&self) -> Self {
        Self {
            session: self.session.clone(),
            conversation: self.conversation.clone(),
            meta: Arc::clone(&self.meta),
            peer: self.peer.clone(),
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
            take_response(scope.conversation.as_deref(), response);
            Either::Right(Either::Right(std::future::ready(None)))
        }
    }
}

/// Runs a request to its answer, or to its cancellation. The request is registered with its
/// conversation (if any) now, and unregistered once the returned future ends or is dropped.
pub(crate) fn answer_request<H: RequestHandler>(
    handler: &H,
    request: Request,
    scope: Scope<H::Session>,
) -> impl Future<Output = Option<Response>> + Send + '_ {
    let id = request.id.clone();
    let running = scope
        .conversation
        .as_ref()
        .map(|conversation| conversation.start(&id));
    let token = running.as_ref().map(|running| running.token().clone());
    let profile = handler.profile();
    let span = tracing::debug_span!("request", method = %request.method, id = %id);
    let cx = Context::new(
        Some(id.clone()),
        scope.session,
        scope.meta,
        profile,
        token.clone(),
        scope.peer,
    );
    let reply = handler.handle(request, cx).instrument(span);
    // Without a conversation nothing can cancel the request: it runs to its answer.
    let Some(token) = token else {
        return Either::Left(reply.map(move |reply| Some(Response::answering(id, reply))));
    };
    let cancel_reply = profile.cancellation().map(|convention| convention.reply);
    // Polls the handler first, so an answer ready when the peer cancels is still the answer.
    let cancellable = reply.with_cancellation_token_owned(token);
    Either::Right(cancellable.map(move |reply| {
        drop(running);
        match reply {
            Some(reply) => Some(Response::answering(id, reply)),
            None => cancelled(id, cancel_reply),
        }
    }))
}

/// The answer a request the peer cancelled is owed under the protocol's convention.
fn cancelled(id: RequestId, reply: Option<CancelReply>) -> Option<Response> {
    tracing::debug!(%id, "request cancelled by the peer");
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
        conversation.cancel_inbound(&id);
    }
    let cx = Context::new(
        None,
        scope.session,
        scope.meta,
        handler.profile(),
        None,
        scope.peer,
    );
    handler.notify(notification, cx)
}

/// Hands the peer's answer to the call awaiting it.
pub(crate) fn take_response(conversation: Option<&Conversation>, response: Response) {
    let delivered = conversation.is_some_and(|conversation| conversation.answer(response));
    if !delivered {
        tracing::debug!("dropped an answer no call was awaiting");
    }
}
