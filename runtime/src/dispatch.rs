//! The transport-independent step every transport shares: run one inbound message through the
//! handler. Requests run under a cancellation token the peer can fire (through the protocol's
//! cancel convention); notifications that cancel are applied before the handler sees them;
//! responses are handed to the conversation awaiting them.

use std::sync::Arc;

use tracing::Instrument;

use crate::handler::{Context, RequestHandler, RequestMeta};
use crate::jsonrpc::{ErrorObject, Message, Notification, Request, Response};
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
pub(crate) async fn serve_message<H: RequestHandler>(
    handler: &H,
    message: Message,
    scope: Scope<H::Session>,
) -> Option<Response> {
    match message {
        Message::Request(request) => answer_request(handler, request, scope).await,
        Message::Notification(notification) => {
            take_notification(handler, notification, scope).await;
            None
        }
        Message::Response(response) => {
            take_response(scope.conversation.as_deref(), response);
            None
        }
    }
}

/// Runs a request to its answer, or to its cancellation.
pub(crate) async fn answer_request<H: RequestHandler>(
    handler: &H,
    request: Request,
    scope: Scope<H::Session>,
) -> Option<Response> {
    let id = request.id.clone();
    let running = scope
        .conversation
        .as_ref()
        .map(|conversation| conversation.start(&id));
    let token = running.as_ref().map(|running| running.token().clone());
    let profile = handler.profile();
    let cx = Context::new(
        Some(id.clone()),
        scope.session,
        scope.meta,
        profile,
        token.clone(),
        scope.peer,
    );
    let span = tracing::debug_span!("request", method = %request.method, id = %id);
    // Pinned where it is built, so both ways of awaiting it below share this one copy of the
    // handler's (often large) future, and neither moves it.
    let reply = std::pin::pin!(handler.handle(request, cx).instrument(span));
    // Without a conversation nothing can cancel the request: it runs to its answer.
    let Some(token) = token else {
        return Some(Response::answering(id, reply.await));
    };
    tokio::select! {
        biased;
        reply = reply => Some(Response::answering(id, reply)),
        () = token.cancelled() => {
            tracing::debug!(%id, "request cancelled by the peer");
            match profile.cancellation().map(|convention| convention.reply) {
                Some(CancelReply::Error(code)) => {
                    Some(Response::error(Some(id), ErrorObject::new(code, "request cancelled")))
                }
                Some(CancelReply::Nothing) | None => None,
            }
        }
    }
}

/// Applies a cancellation the notification carries, then hands it to the handler.
pub(crate) async fn take_notification<H: RequestHandler>(
    handler: &H,
    notification: Notification,
    scope: Scope<H::Session>,
) {
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
    handler.notify(notification, cx).await;
}

/// Hands the peer's answer to the call awaiting it.
pub(crate) fn take_response(conversation: Option<&Conversation>, response: Response) {
    let delivered = conversation.is_some_and(|conversation| conversation.answer(response));
    if !delivered {
        tracing::debug!("dropped an answer no call was awaiting");
    }
}
