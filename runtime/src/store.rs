//! What the store seams share: [`StoreFuture`], a store's answer that is ready at once for a
//! store in this process's memory (no allocation) and a boxed future for a network one, and
//! [`StoreError`], why a store could not answer. The session store
//! ([`SessionStore`](crate::session::SessionStore)) and the event store
//! ([`EventStore`](crate::tail::EventStore)) both answer in these terms, so a transport maps
//! either one's failure to the same refusal (a `503`).

use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures::future::BoxFuture;

/// Why a store could not answer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The most live sessions are held; one more is refused (a `503`).
    #[error("the session limit is reached")]
    LimitReached,
    /// The store failed or could not be reached (a `503`, never "unknown session" or "unknown
    /// event": what was asked for may well exist).
    #[error("the store is unavailable")]
    Unavailable(#[source] Box<dyn std::error::Error + Send + Sync>),
}

impl StoreError {
    /// The store failed with `error`.
    pub fn unavailable(error: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        Self::Unavailable(error.into())
    }
}

/// A store's answer: ready at once (the in-memory store, no allocation) or a boxed future (a
/// network store). A future polled again after it answered stays pending.
pub enum StoreFuture<'a, T> {
    /// The answer, known when it was asked for.
    Ready(Option<T>),
    /// The answer a future gives.
    Boxed(BoxFuture<'a, T>),
}

impl<T> fmt::Debug for StoreFuture<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Ready(_) => f.write_str("StoreFuture::Ready"),
            Self::Boxed(_) => f.write_str("StoreFuture::Boxed"),
        }
    }
}

impl<'a, T> StoreFuture<'a, T> {
    /// An answer known now.
    pub const fn ready(value: T) -> Self {
        Self::Ready(Some(value))
    }

    /// An answer a future gives.
    pub fn boxed(future: impl Future<Output = T> + Send + 'a) -> Self {
        Self::Boxed(Box::pin(future))
    }

    /// The answer if it is known now; the future itself otherwise, to be awaited.
    pub fn now(self) -> Result<T, Self> {
        match self {
            Self::Ready(Some(value)) => Ok(value),
            pending => Err(pending),
        }
    }
}

impl<T: Send + 'static> StoreFuture<'static, T> {
    /// The answer if it is known now; otherwise the future runs on a task of its own and
    /// `settle` hears its answer there, so a caller that cannot wait (a synchronous send, a
    /// `Drop`) still has it done. `None` then: the answer is not known yet. Without a tokio
    /// runtime to run it on, the future is dropped, which a store sees as a cancelled call.
    pub(crate) fn now_or_detach(self, settle: fn(T)) -> Option<T> {
        match self.now() {
            Ok(value) => Some(value),
            Err(pending) => {
                match tokio::runtime::Handle::try_current() {
                    Ok(runtime) => {
                        runtime.spawn(async move { settle(pending.await) });
                    }
                    Err(_) => tracing::warn!("no tokio runtime to finish a store's answer on"),
                }
                None
            }
        }
    }
}

// Never pinned structurally: a ready value is moved out, and a boxed future is pinned in its box.
impl<T> Unpin for StoreFuture<'_, T> {}

impl<T> Future for StoreFuture<'_, T> {
    type Output = T;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        match self.get_mut() {
            Self::Ready(value) => value.take().map_or(Poll::Pending, Poll::Ready),
            Self::Boxed(future) => future.as_mut().poll(cx),
        }
    }
}

/// Logs a store's failure heard after the caller moved on ([`StoreFuture::now_or_detach`]).
pub(crate) fn log_late_failure<T, E: fmt::Display>(outcome: Result<T, E>) {
    if let Err(error) = outcome {
        tracing::warn!(%error, "a store call left to finish on its own failed");
    }
}
