//! The opening side of a line-oriented conversation: an editor that spawns an agent, a client
//! that spawns a server. The peer's messages are served to this side's handler exactly as the
//! stdio transport serves them, and a [`Peer`] is handed back through which this side calls
//! first. [`serve_detached_in`] does the same for one message a client-side transport of the
//! protocol's own read (e.g. a request on an SSE stream an HTTP client consumes). Added for
//! ACP's typed client; protocol-neutral like the rest of the runtime.

use std::sync::Arc;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::dispatch::{Scope, serve_message};
use crate::handler::{DEFAULT_PEER_TIMEOUT, RequestHandler, RequestMeta};
use crate::jsonrpc::{Message, Response};
use crate::peer::{Conversation, Peer, PeerError, Route};
use crate::session::Session;
use crate::stdio::{StdioConfig, serve_lines_exposing};

/// A running conversation this side opened. Dropping it stops serving and closes the writer,
/// which a child process reads as end of input.
#[derive(Debug)]
pub struct LinesConnection {
    peer: Peer,
    served: JoinHandle<std::io::Result<()>>,
}

impl LinesConnection {
    /// Calls and notifies the other side.
    pub fn peer(&self) -> &Peer {
        &self.peer
    }

    /// Whether the other side has closed its end (or serving failed).
    pub fn is_finished(&self) -> bool {
        self.served.is_finished()
    }

    /// Waits until the other side closes its end.
    ///
    /// # Errors
    /// Reading or writing failed, or the serving task panicked.
    pub async fn closed(mut self) -> std::io::Result<()> {
        join(&mut self.served).await
    }

    /// Stops serving now and closes the writer.
    ///
    /// # Errors
    /// Serving had already failed.
    pub async fn close(mut self) -> std::io::Result<()> {
        self.served.abort();
        match (&mut self.served).await {
            Ok(outcome) => outcome,
            Err(error) if error.is_cancelled() => Ok(()),
            Err(error) => Err(std::io::Error::other(error)),
        }
    }
}

impl Drop for LinesConnection {
    fn drop(&mut self) {
        self.served.abort();
    }
}

async fn join(served: &mut JoinHandle<std::io::Result<()>>) -> std::io::Result<()> {
    served.await.map_err(std::io::Error::other)?
}

/// Serves `handler` on `reader`/`writer` in a task of its own and returns the conversation,
/// ready for this side's first call.
///
/// # Errors
/// [`PeerError::Closed`] when serving ended before the conversation was set up.
pub async fn connect_lines<H, R, W>(
    handler: H,
    reader: R,
    writer: W,
    config: StdioConfig,
) -> Result<LinesConnection, PeerError>
where
    H: RequestHandler,
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (hand_over, handed) = oneshot::channel();
    let served = tokio::spawn(async move {
        let request = Arc::new(RequestMeta::default());
        serve_lines_exposing(&handler, reader, writer, config, request, |peer| {
            // The receiver only goes away if the caller stopped waiting; nothing to tell then.
            let _ = hand_over.send(peer);
        })
        .await
    });
    let peer = handed.await.map_err(|_| PeerError::Closed)?;
    Ok(LinesConnection { peer, served })
}

/// Serves one message that reached this side outside the runtime's transports to `handler`, in
/// `session`; returns the answer owed to it. The handler cannot call back from here (its peer
/// has no stream): a detached message is answered, not conversed with. It is served within
/// `conversation`: a request runs registered there from its first poll, so the peer's cancel notification, served later in the same conversation, reaches the
/// handler's cancellation token (the other side of `$/cancel_request` over a transport of the
/// protocol's own).
pub async fn serve_detached_in<H: RequestHandler>(
    handler: &H,
    message: Message,
    session: &Arc<Session<H::Session>>,
    conversation: &Arc<Conversation>,
) -> Option<Response> {
    let scope = detached_scope(session, Some(Arc::clone(conversation)));
    serve_message(handler, message, scope).await
}

fn detached_scope<S>(
    session: &Arc<Session<S>>,
    conversation: Option<Arc<Conversation>>,
) -> Scope<S> {
    Scope {
        session: Some(Arc::clone(session)),
        conversation,
        meta: Arc::new(RequestMeta::default()),
        peer: Peer::new(Route::Nowhere, None, DEFAULT_PEER_TIMEOUT, None),
        relay: None,
    }
}
