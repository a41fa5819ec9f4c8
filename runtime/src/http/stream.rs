//! `GET` and `DELETE`: a session's own server-initiated stream, fresh or resumed from
//! `Last-Event-ID`, and the end of a session at its client's request.

use axum::response::{IntoResponse, Response};
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use tracing::Instrument;

use super::negotiate::Accepts;
use super::session::session_id;
use super::{StreamableHttp, record_session, refuse, store_refusal};
use crate::handler::RequestHandler;
use crate::hardening::Refusal;
use crate::session::Session;
use crate::sse::EventId;
use crate::stream::{Drain, Framing, Priming, Stops, sse_response};
use crate::tail::{EventCursor, EventReader, ResumeError, Start};

const LAST_EVENT_ID: HeaderName = HeaderName::from_static("last-event-id");

impl<H: RequestHandler> StreamableHttp<H> {
    pub(super) async fn serve_get(&self, headers: &HeaderMap) -> Response {
        // The stream's body runs in this span too, for as long as the stream stays open.
        let span = tracing::debug_span!("get", session = tracing::field::Empty);
        self.open_stream(headers).instrument(span).await
    }

    pub(super) async fn serve_delete(&self, headers: &HeaderMap) -> Response {
        let span = tracing::debug_span!("delete", session = tracing::field::Empty);
        self.end_session(headers).instrument(span).await
    }

    /// A session's own stream owes no answer: it ends when the drain begins.
    fn session_stops(&self, session: &Session<H::Session>) -> Stops {
        Stops {
            session: Some(session.ended().clone()),
            drain: Drain::End(self.config.drain.clone()),
            shutdown: Some(self.config.shutdown.clone()),
        }
    }

    /// `GET`: the session's stream, fresh or resumed from `Last-Event-ID`.
    async fn open_stream(&self, headers: &HeaderMap) -> Response {
        let Some(name) = self.session_header() else {
            return refuse(
                Refusal::MethodNotAllowed(Some(HeaderValue::from_static("POST"))),
                None,
            );
        };
        if !Accepts::read(headers, self.handler.profile().media_type()).sse {
            return refuse(Refusal::NotAcceptable, None);
        }
        let session = match session_id(headers, name) {
            Ok(Some(id)) => {
                record_session(&id);
                match self.live_session(&id).await {
                    Ok(session) => session,
                    Err(refusal) => return refuse(refusal, None),
                }
            }
            Ok(None) => return refuse(Refusal::MissingSession, None),
            Err(refusal) => return refuse(refusal, None),
        };
        self.handler.stream_opened(&session);
        let subscription = match headers.get(LAST_EVENT_ID) {
            None => match session.standalone_stream().await {
                Ok(stream) => stream.subscribe(Start::Unread),
                Err(error) => return refuse(store_refusal(error), None),
            },
            Some(value) => match resume(&session, value).await {
                Ok(subscription) => subscription,
                Err(refusal) => return refuse(refusal, None),
            },
        };
        tracing::debug!(stream = subscription.stream(), "stream opened");
        sse_response(
            subscription,
            Vec::new(),
            Framing::Resumable,
            self.session_stops(&session),
            &self.config.streams,
            Priming::Unprimed,
        )
    }

    /// `DELETE`: ends the session; its id is unknown afterwards.
    async fn end_session(&self, headers: &HeaderMap) -> Response {
        let Some(name) = self.session_header() else {
            return refuse(
                Refusal::MethodNotAllowed(Some(HeaderValue::from_static("POST"))),
                None,
            );
        };
        match session_id(headers, name) {
            Ok(Some(id)) => match self.store.remove(&id).await {
                Ok(true) => {
                    record_session(&id);
                    tracing::debug!("session ended by the client");
                    StatusCode::OK.into_response()
                }
                Ok(false) => refuse(Refusal::UnknownSession, None),
                Err(error) => refuse(store_refusal(error), None),
            },
            Ok(None) => refuse(Refusal::MissingSession, None),
            Err(refusal) => refuse(refusal, None),
        }
    }
}

/// Resumes one of the session's streams after the event `Last-Event-ID` names; the session's
/// event store decides whether it still can (a store that cannot answer is unavailable, not a
/// refused cursor).
async fn resume<S>(
    session: &Session<S>,
    value: &HeaderValue,
) -> Result<Box<dyn EventReader>, Refusal> {
    let id: EventId = value
        .to_str()
        .map_err(|_| Refusal::MalformedLastEventId)?
        .trim()
        .parse()
        .map_err(|_| Refusal::MalformedLastEventId)?;
    let cursor = EventCursor::from_event_id(id).ok_or(Refusal::MalformedLastEventId)?;
    session.resume(cursor).await.map_err(|error| match error {
        ResumeError::Store(error) => store_refusal(error),
        ResumeError::Evicted | ResumeError::Unknown => Refusal::ResumeGone,
    })
}
