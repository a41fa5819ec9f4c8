//! An experiment on the server's hot path: a handler that delegates everything to another and
//! boxes the future of each request. The runtime moves that future into a task, and a large
//! future is copied several times on the way; boxed, only a pointer moves.

use std::future::Future;

use http::HeaderMap;
use protocols_runtime::handler::Context;
use protocols_runtime::{
    Message, Notification, Profile, Rejection, Reply, Request, RequestHandler, Unsessioned,
};

/// `H` with each `handle` future on the heap.
pub struct BoxedHandle<H>(pub H);

impl<H: RequestHandler> RequestHandler for BoxedHandle<H> {
    type Session = H::Session;

    fn profile(&self) -> &Profile {
        self.0.profile()
    }

    fn unsessioned(&self, messages: &[Message], headers: &HeaderMap) -> Unsessioned {
        self.0.unsessioned(messages, headers)
    }

    fn accepts_batch(&self, headers: &HeaderMap, session: Option<&Self::Session>) -> bool {
        self.0.accepts_batch(headers, session)
    }

    fn admit(
        &self,
        messages: &[Message],
        headers: &HeaderMap,
        session: Option<&Self::Session>,
    ) -> Result<(), Rejection> {
        self.0.admit(messages, headers, session)
    }

    fn handle(
        &self,
        request: Request,
        cx: Context<Self::Session>,
    ) -> impl Future<Output = Reply> + Send {
        Box::pin(self.0.handle(request, cx))
    }

    fn notify(
        &self,
        notification: Notification,
        cx: Context<Self::Session>,
    ) -> impl Future<Output = ()> + Send {
        self.0.notify(notification, cx)
    }
}
