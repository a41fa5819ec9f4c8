//! The legacy HTTP+SSE transport (the shape MCP 2024-11-05 used, kept protocol-neutral): `GET`
//! on the stream path opens a session whose stream starts with an `endpoint` event naming where
//! to `POST` (with the session in a query parameter); every answer and server-initiated message
//! then arrives on that stream as a `message` event, and each `POST` is acknowledged with 202.
//! The session lives as long as its stream: there is no resumption on this transport.

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::{NestedPath, Request as HttpRequest, State};
use axum::response::{IntoResponse, Response};
use bytes::BytesMut;
use http::{HeaderValue, StatusCode, header};

use crate::dispatch::{Scope, serve_message};
use crate::handler::{RequestHandler, RequestMeta};
use crate::hardening::{BodyLimit, Refusal, read_body};
use crate::http::{HttpConfig, content_type_is, decode_refusal, echo};
use crate::jsonrpc::{Message, Payload, decode};
use crate::peer::{Peer, Route};
use crate::session::{LazyReaper, MemorySessionStore, Session, SessionId, SessionLimits};
use crate::sse::{EventName, encode_event};
use crate::stream::{Drain, Framing, Priming, Stops, sse_response};
use crate::tail::{EventStore, MemoryEventStore, Start};

/// The query parameter carrying the session on `POST`s.
const SESSION_PARAMETER: &str = "sessionId";

/// One protocol served over legacy HTTP+SSE.
pub(crate) struct LegacySse<H: RequestHandler> {
    handler: H,
    config: HttpConfig,
    store: Arc<MemorySessionStore<H::Session>>,
    /// Every session's stream; nothing is ever resumed from it, it only carries the messages.
    events: Arc<dyn EventStore>,
    reaper: LazyReaper,
    post_path: String,
}

impl<H: RequestHandler> std::fmt::Debug for LegacySse<H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LegacySse")
            .field("post_path", &self.post_path)
            .finish_non_exhaustive()
    }
}

impl<H: RequestHandler> LegacySse<H> {
    /// Serves `handler`; clients are told to `POST` to `post_path` (below the same nesting).
    pub fn new(handler: H, config: HttpConfig, post_path: &str) -> Self {
        crate::panic_boundary::install();
        // A legacy session lives as long as its stream, so only the absolute deadline applies:
        // an open but quiet stream is not idle.
        let limits = SessionLimits {
            idle: config.sessions.absolute,
            ..config.sessions
        };
        let store = Arc::new(MemorySessionStore::new(limits));
        let events = Arc::new(MemoryEventStore::new(config.tail_capacity));
        Self {
            handler,
            config,
            store,
            events,
            reaper: LazyReaper::new(),
            post_path: post_path.to_owned(),
        }
    }

    /// `GET stream_path` and `POST post_path`, without hardening.
    pub fn into_routes(self, stream_path: &str) -> Router {
        let post_path = self.post_path.clone();
        let transport = Arc::new(self);
        Router::new()
            .route(stream_path, axum::routing::get(open::<H>))
            .route(&post_path, axum::routing::post(message::<H>))
            .with_state(transport)
    }

    fn endpoint(&self, nested: Option<&NestedPath>, session: &SessionId) -> String {
        let prefix = nested.map_or("", |nested| nested.as_str().trim_end_matches('/'));
        format!("{prefix}{}?{SESSION_PARAMETER}={session}", self.post_path)
    }
}

/// Ends the session when its stream's body is dropped (the client went away).
struct EndOnDrop<S: Send + Sync + 'static> {
    store: Arc<MemorySessionStore<S>>,
    id: SessionId,
}

impl<S: Send + Sync + 'static> Drop for EndOnDrop<S> {
    fn drop(&mut self) {
        self.store.remove(&self.id);
    }
}

async fn open<H: RequestHandler>(
    State(transport): State<Arc<LegacySse<H>>>,
    request: HttpRequest,
) -> Response {
    transport.reaper.ensure::<H::Session, _>(
        &transport.store,
        &transport.config.clock,
        transport.config.reap_every,
    );
    let accepts_stream = request
        .headers()
        .get(header::ACCEPT)
        .and_then(|value| value.to_str().ok())
        .is_none_or(|value| value.contains("text/event-stream") || value.contains("*/*"));
    if !accepts_stream {
        return Refusal::NotAcceptable.into_response();
    }
    let session = Arc::new(Session::with_events(
        SessionId::random(),
        H::Session::default(),
        transport.config.clock.wall(),
        Arc::clone(&transport.events),
    ));
    // Opened before the span is entered: an entered span must not be held across an await.
    let stream = match session.standalone_stream().await {
        Ok(stream) => stream,
        Err(_) => return Refusal::StoreUnavailable.into_response(),
    };
    // The stream's body runs in this span for as long as the session lives.
    let span = tracing::debug_span!("legacy_stream", session = %session.id());
    let _entered = span.enter();
    if transport.store.insert(Arc::clone(&session)).is_err() {
        // Never stored: its stream is let go of here.
        session.end();
        return Refusal::Overloaded.into_response();
    }
    let endpoint = transport.endpoint(request.extensions().get::<NestedPath>(), session.id());
    let mut first = BytesMut::new();
    encode_event(&mut first, Some(&EventName::ENDPOINT), None, &endpoint);
    tracing::debug!("legacy stream opened");
    let subscription = stream.subscribe(Start::Beginning);
    let response = sse_response(
        subscription,
        vec![first.freeze()],
        Framing::Named(EventName::MESSAGE),
        Stops {
            session: Some(session.ended().clone()),
            drain: Drain::AfterWork(
                transport.config.drain.clone(),
                Arc::clone(session.conversation()),
            ),
            shutdown: Some(transport.config.shutdown.clone()),
        },
        &transport.config.streams,
        Priming::Unprimed,
    );
    let guard = EndOnDrop {
        store: Arc::clone(&transport.store),
        id: session.id().clone(),
    };
    let (parts, body) = response.into_parts();
    let guarded = futures::StreamExt::map(body.into_data_stream(), move |chunk| {
        let _alive = &guard;
        chunk
    });
    Response::from_parts(parts, Body::from_stream(guarded))
}

/// The session a `POST` names in its query.
fn session_of(query: Option<&str>) -> Result<SessionId, Refusal> {
    let value = query
        .unwrap_or_default()
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .find(|(name, _)| *name == SESSION_PARAMETER)
        .map(|(_, value)| value)
        .ok_or(Refusal::MissingSession)?;
    value.parse().map_err(|_| Refusal::MalformedSessionId)
}

async fn message<H: RequestHandler>(
    State(transport): State<Arc<LegacySse<H>>>,
    request: HttpRequest,
) -> Response {
    let (parts, body) = request.into_parts();
    if !content_type_is(&parts.headers, transport.handler.profile().media_type()) {
        return Refusal::UnsupportedMediaType.into_response();
    }
    let session = match session_of(parts.uri.query()) {
        Ok(id) => match transport.store.get(&id, transport.config.clock.wall()) {
            Some(session) => session,
            None => return Refusal::UnknownSession.into_response(),
        },
        Err(refusal) => return refusal.into_response(),
    };
    let limit = parts
        .extensions
        .get::<BodyLimit>()
        .map_or(transport.config.limits.max_bytes, |limit| limit.0);
    let bytes = match read_body(body, limit).await {
        Ok(bytes) => bytes,
        Err(refusal) => return refusal.into_response(),
    };
    let messages = match decode(&bytes, &transport.config.limits) {
        Ok(Payload::Single(message)) => vec![message],
        Ok(Payload::Batch(entries))
            if transport
                .handler
                .accepts_batch(&parts.headers, Some(session.state())) =>
        {
            entries.into_iter().filter_map(Result::ok).collect()
        }
        Ok(Payload::Batch(_)) => return Refusal::InvalidRequest.into_response(),
        Err(error) => {
            return decode_refusal(&error).into_response_with_id(echo(error.request_id()).as_ref());
        }
    };
    let tail = match session.standalone_stream().await {
        Ok(tail) => tail,
        Err(_) => return Refusal::StoreUnavailable.into_response(),
    };
    let conversation = Arc::clone(session.conversation());
    // Owed from now, so a drain that begins before the work runs still waits for its answers.
    let owed = conversation.hold();
    let scope = Scope {
        peer: Peer::new(
            Route::Tail(Arc::clone(&tail)),
            Some(Arc::clone(&conversation)),
            transport.config.peer_timeout,
            transport.handler.profile().cancellation().copied(),
        ),
        conversation: Some(conversation),
        session: Some(session),
        relay: None,
        meta: Arc::new(RequestMeta::new(
            parts.headers,
            parts.extensions,
            transport.handler.profile(),
        )),
    };
    // The answer travels on the stream, so the POST is acknowledged at once and the work runs
    // on its own, as the transport expects.
    let worker = Arc::clone(&transport);
    tokio::spawn(async move {
        let _owed = owed;
        for message in messages {
            if let Some(answer) = serve_message(&worker.handler, message, scope.clone()).await
                && tail
                    .publish(Message::Response(answer).to_bytes())
                    .await
                    .is_err()
            {
                tracing::debug!("a legacy stream closed before its answer");
            }
        }
    });
    let mut response = StatusCode::ACCEPTED.into_response();
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    response
}
