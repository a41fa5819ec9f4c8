//! An SSE response body read from an event tail: each published message becomes one event
//! (with its resumable id, or named for the legacy transport), idle periods carry keep-alive
//! comments, and the stream ends cleanly when its tail closes, its session ends, the server
//! drains (each stream by its [`Drain`] rule) or passes its drain deadline, or the connection
//! is cut for SSE polling (the configured window passed or the handler released it) or its
//! event store fails — after telling the client when to reconnect, whenever the stream ends
//! before its tail does.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::response::Response;
use bytes::{Bytes, BytesMut};
use http::{HeaderValue, StatusCode, header};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::hardening::response_headers;
use crate::sse::{EventName, encode_event, encode_retry, keep_alive};
use tracing::Instrument;

use crate::peer::Conversation;
use crate::tail::{EventReader, Next};

/// The reconnection delay a stream the server ends announces when none is configured.
const DEFAULT_RETRY: Duration = Duration::from_secs(1);

/// How often a stream that waits for its conversation's work to finish looks again.
const WORK_RECHECK: Duration = Duration::from_millis(50);

/// How an SSE response behaves over time.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct StreamPolicy {
    /// A comment is sent after this long without an event.
    pub keep_alive: Option<Duration>,
    /// The server closes the stream after this long (SSE polling); the client resumes.
    pub close_after: Option<Duration>,
    /// The reconnection delay announced to the client.
    pub retry: Option<Duration>,
}

crate::config_setters!(StreamPolicy { keep_alive: Option<Duration>, close_after: Option<Duration>, retry: Option<Duration> });

/// Whether a stream opens with an event carrying its cursor and no data, so a client can
/// resume even before the first message; the protocol decides (`RequestHandler::primes`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Priming {
    Primed,
    Unprimed,
}

/// How each message is framed.
#[derive(Debug, Clone)]
pub(crate) enum Framing {
    /// Unnamed events with resumable ids (Streamable HTTP).
    Resumable,
    /// Events named `name` without ids (legacy HTTP+SSE).
    Named(EventName),
}

/// What ends a stream besides its tail closing.
#[derive(Debug, Clone)]
pub(crate) struct Stops {
    pub(crate) session: Option<CancellationToken>,
    /// What the stream does when the server starts draining.
    pub(crate) drain: Drain,
    /// Fired at the drain deadline: the stream ends at once, telling its client to retry.
    pub(crate) shutdown: Option<CancellationToken>,
}

/// How a stream behaves while the server drains.
#[derive(Debug, Clone)]
pub(crate) enum Drain {
    /// It carries a request's answer: it goes on until its tail closes (or the deadline).
    Finish,
    /// It owes no answer: it ends, with a `retry`, when this token fires.
    End(CancellationToken),
    /// It carries the answers of its conversation's work (the legacy transport's stream):
    /// once this token fires it ends, with a `retry`, as soon as that work is done and read.
    AfterWork(CancellationToken, Arc<Conversation>),
}

impl Drain {
    fn token(&self) -> Option<CancellationToken> {
        match self {
            Self::Finish => None,
            Self::End(token) | Self::AfterWork(token, _) => Some(token.clone()),
        }
    }
}

struct StreamState {
    subscription: Box<dyn EventReader>,
    prelude: VecDeque<Bytes>,
    framing: Framing,
    stops: Stops,
    keep_alive: Option<Duration>,
    next_keep_alive: Option<Instant>,
    close_at: Option<Instant>,
    retry: Option<Duration>,
    /// Whether the drain has begun for a stream that ends after its conversation's work.
    draining: bool,
    done: bool,
    /// The span of the request that opened the stream: the body is polled long after the
    /// handler returned, and its logs still belong to that request and session.
    span: tracing::Span,
}

/// A `200 text/event-stream` response reading `subscription`, after `prelude` events. The body
/// runs in the span current here.
pub(crate) fn sse_response(
    subscription: Box<dyn EventReader>,
    prelude: Vec<Bytes>,
    framing: Framing,
    stops: Stops,
    policy: &StreamPolicy,
    priming: Priming,
) -> Response {
    let mut prelude: VecDeque<Bytes> = prelude.into();
    if priming == Priming::Primed && matches!(framing, Framing::Resumable) {
        let mut out = BytesMut::new();
        if let Some(retry) = policy.retry {
            encode_retry(&mut out, retry);
        }
        encode_event(&mut out, None, Some(subscription.cursor_id()), "");
        prelude.push_front(out.freeze());
    }
    let now = Instant::now();
    let state = StreamState {
        subscription,
        prelude,
        framing,
        stops,
        keep_alive: policy.keep_alive,
        next_keep_alive: policy.keep_alive.map(|every| now + every),
        close_at: policy.close_after.map(|after| now + after),
        retry: policy.retry,
        draining: false,
        done: false,
        span: tracing::Span::current(),
    };
    let stream = futures::stream::unfold(state, |state| {
        let span = state.span.clone();
        next_chunk(state).instrument(span)
    });
    let mut response = Response::new(Body::from_stream(stream));
    *response.status_mut() = StatusCode::OK;
    let headers = response.headers_mut();
    // Sized for the security headers too, so stamping them does not grow the map.
    *headers = response_headers();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    // Proxies that buffer (nginx) would hold events back without this.
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}

async fn next_chunk(mut state: StreamState) -> Option<(Result<Bytes, Infallible>, StreamState)> {
    if let Some(chunk) = state.prelude.pop_front() {
        return Some((Ok(chunk), state));
    }
    if state.done {
        return None;
    }
    loop {
        match state.subscription.poll_next() {
            Next::Event(id, payload) => {
                tracing::trace!(id = id.get(), "event sent");
                let chunk = encode_message(&state.framing, id, &payload);
                state.next_keep_alive = state.keep_alive.map(|every| Instant::now() + every);
                return Some((Ok(chunk), state));
            }
            Next::Released(retry) => {
                state.done = true;
                return Some((Ok(released(&state, retry)), state));
            }
            Next::Closed => return finished("the stream closed"),
            Next::Evicted => return finished("the reader fell behind the stream's history"),
            Next::Superseded => return finished("another reader took the stream over"),
            // The client resumes from its last event once the store is back.
            Next::Failed => return last_words(state, "the event store failed"),
            Next::Idle => {}
        }
        if state.draining && work_done(&state.stops.drain) {
            return last_words(state, "the server is draining and the work is done");
        }
        let keep_alive_at = state.next_keep_alive;
        let close_at = state.close_at;
        let session = state.stops.session.clone();
        let drain = state.stops.drain.token().filter(|_| !state.draining);
        let recheck = state.draining.then(|| Instant::now() + WORK_RECHECK);
        let shutdown = state.stops.shutdown.clone();
        tokio::select! {
            () = state.subscription.changed() => {}
            () = cancelled(session) => return finished("the session ended"),
            () = cancelled(drain) => match state.stops.drain {
                Drain::AfterWork(..) => state.draining = true,
                Drain::Finish | Drain::End(_) => {
                    return last_words(state, "the server is draining");
                }
            },
            () = sleep_until(recheck) => {}
            () = cancelled(shutdown) => return last_words(state, "the drain deadline passed"),
            () = sleep_until(keep_alive_at) => {
                state.next_keep_alive = state.keep_alive.map(|every| Instant::now() + every);
                return Some((Ok(keep_alive()), state));
            }
            () = sleep_until(close_at) => {
                state.done = true;
                let mut out = BytesMut::new();
                encode_retry(&mut out, state.retry.unwrap_or(DEFAULT_RETRY));
                return Some((Ok(out.freeze()), state));
            }
        }
    }
}

/// Whether a stream waiting for its conversation's work may end: none is running.
fn work_done(drain: &Drain) -> bool {
    match drain {
        Drain::AfterWork(_, conversation) => !conversation.is_busy(),
        Drain::Finish | Drain::End(_) => true,
    }
}

/// The last chunk of a stream the server ends before its tail did: when to reconnect.
fn last_words(
    mut state: StreamState,
    reason: &'static str,
) -> Option<(Result<Bytes, Infallible>, StreamState)> {
    tracing::debug!(reason, "stream ended");
    state.done = true;
    let mut out = BytesMut::new();
    encode_retry(&mut out, state.retry.unwrap_or(DEFAULT_RETRY));
    Some((Ok(out.freeze()), state))
}

/// Ends the body (a clean end: the final chunk goes out) and says why.
fn finished<T>(reason: &'static str) -> Option<T> {
    tracing::debug!(reason, "stream ended");
    None
}

/// The last words of a released connection: when to reconnect, and (for resumable streams) the
/// cursor to resume from, so a client that saw no event yet still has a `Last-Event-ID`.
fn released(state: &StreamState, retry: Duration) -> Bytes {
    let mut out = BytesMut::new();
    encode_retry(&mut out, retry);
    if matches!(state.framing, Framing::Resumable) {
        encode_event(&mut out, None, Some(state.subscription.cursor_id()), "");
    }
    out.freeze()
}

fn encode_message(framing: &Framing, id: crate::sse::EventId, payload: &[u8]) -> Bytes {
    let data = String::from_utf8_lossy(payload);
    let mut out = BytesMut::with_capacity(payload.len() + 32);
    match framing {
        Framing::Resumable => encode_event(&mut out, None, Some(id), &data),
        Framing::Named(name) => encode_event(&mut out, Some(name), None, &data),
    }
    out.freeze()
}

async fn cancelled(token: Option<CancellationToken>) {
    match token {
        Some(token) => token.cancelled().await,
        None => std::future::pending().await,
    }
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}
