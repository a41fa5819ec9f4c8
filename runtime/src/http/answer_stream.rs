//! A `POST` answered as an SSE stream: the request's own resumable stream, primed for a
//! session, run on its own task once something streams, or answered as JSON after all when
//! nothing did and the framing allows it.

use std::sync::Arc;

use axum::response::Response;
use tracing::Instrument;

use super::StreamableHttp;
use super::negotiate::Framed;
use super::post::{Inbound, run_all};
use super::session::Resolved;
use super::{refuse, store_refusal};
use crate::handler::{RequestHandler, RequestMeta};
use crate::hardening::AnswerHeaders;
use crate::jsonrpc::{Message, Response as RpcResponse};
use crate::peer::Route;
use crate::sse::EventId;
use crate::store::{StoreError, log_late_failure};
use crate::stream::{Drain, Framing, Priming, Stops, sse_response};
use crate::tail::{EventStream, EventTail, PublishError, Start};

impl<H: RequestHandler> StreamableHttp<H> {
    pub(super) async fn answer_streaming(
        self: Arc<Self>,
        body: Inbound,
        resolved: Resolved<H::Session>,
        meta: Arc<RequestMeta>,
        framing: Framed,
        answer_headers: AnswerHeaders,
    ) -> Response {
        let opened = match resolved.session() {
            Some(session) => session.open_request_stream().await,
            // Without a session nobody can resume it, so it stays out of the store.
            None => Ok(EventTail::new(1, self.config.tail_capacity) as Arc<dyn EventStream>),
        };
        // Nothing has run and no response has started: a store's failure is the answer.
        let tail = match opened {
            Ok(tail) => tail,
            Err(error) => return self.refuse_unopened(&resolved, error).await,
        };
        let side = match self.side_route(&resolved).await {
            Ok(side) => side,
            Err(error) => {
                let _ = tail.close().await;
                return self.refuse_unopened(&resolved, error).await;
            }
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
        let served = self.served(resolved.session(), &meta.headers);
        let mut scope = self.scope(&resolved, meta, Route::Tail(Arc::clone(&tail)), Some(side));
        // Only a session's stream can be resumed, so only then may the handler release it.
        if resolved.session().is_some() {
            scope.peer = scope.peer.with_request_stream(Arc::clone(&tail));
        }
        let batch = body.batch;
        let transport = Arc::clone(&self);
        let work_tail = Arc::clone(&tail);
        let mut subscription = tail.subscribe(Start::Beginning);
        // Boxed once, here: the handler's future is large, and a task copies the future it is
        // given several times on the way in and again at each change of its stage.
        let mut work = Box::pin(async move {
            let answers = run_all(&transport.handler, body, scope).await;
            if resolved.opening().is_some() || transport.saves_state {
                transport.after_streamed(&resolved, &answers).await;
            }
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
                        if let Err(error) = tail.close().await {
                            tracing::debug!(%error, "an unused answer stream was not closed");
                        }
                        return self.json_answers(batch, answers, served, &answer_headers);
                    }
                    publish_answers(tail.as_ref(), answers).await;
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

    /// What the store hears once a streamed request is answered, before the answers are
    /// published: a failed opening is forgotten, and the state is saved, so a client that reads
    /// its answer and goes to another replica finds the state there. The stream's status is
    /// long sent, so a failed save can only be logged.
    #[inline(never)]
    async fn after_streamed(&self, resolved: &Resolved<H::Session>, answers: &[RpcResponse]) {
        self.settle_opening(resolved.opening(), answers).await;
        if let Err(refusal) = self.save_state(resolved.session()).await {
            tracing::warn!(?refusal, "the session's state was not saved");
        }
    }

    /// A streamed request refused before it ran, its store failing to open its streams: a
    /// session it was opening is forgotten.
    #[cold]
    #[inline(never)]
    async fn refuse_unopened(
        &self,
        resolved: &Resolved<H::Session>,
        error: StoreError,
    ) -> Response {
        self.settle_opening(resolved.opening(), &[]).await;
        refuse(store_refusal(error), None)
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
}

/// Publishes a request's answers and closes its stream. A store that fails meanwhile ends the
/// reader too ([`Next::Failed`](crate::tail::Next::Failed)), so its client resumes. Each step is
/// asked before the one before it is answered (a stream fixes an event's place when asked), so
/// a network store sends the last answer and the close together.
async fn publish_answers(tail: &dyn EventStream, answers: Vec<RpcResponse>) {
    let mut pending = None;
    for answer in answers {
        let published = tail.publish(Message::Response(answer).to_bytes());
        if let Some(earlier) = pending.replace(published) {
            log_unpublished(earlier.await);
        }
    }
    let closed = tail.close();
    if let Some(last) = pending {
        log_unpublished(last.await);
    }
    if let Err(error) = closed.await {
        tracing::debug!(%error, "an answer stream was not closed");
    }
}

fn log_unpublished(published: Result<EventId, PublishError>) {
    if let Err(error) = published {
        tracing::debug!(%error, "an answer did not reach its stream");
    }
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
            let _ = self.0.close().now_or_detach(log_late_failure);
        }
    }
    tokio::spawn(
        async move {
            let closer = CloseOnDrop(tail);
            publish_answers(closer.0.as_ref(), work.await).await;
        }
        .in_current_span(),
    );
}
