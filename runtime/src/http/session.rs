//! Session resolution: which session a request names or opens, checked against the store (a
//! well-formed id the store never issued is refused, never minted), and the naming or
//! forgetting of a session a request opened.

use std::sync::Arc;

use axum::response::Response;
use http::{HeaderMap, HeaderName, HeaderValue};

use super::StreamableHttp;
use super::post::Inbound;
use crate::handler::{RequestHandler, Unsessioned};
use crate::hardening::Refusal;
use crate::jsonrpc::Response as RpcResponse;
use crate::session::{Session, SessionId};

/// The session the header names, if it names one. A header naming more than one value (two
/// lines, or one line with a comma: no issued id has one) is ambiguous and refused.
pub(super) fn session_id(
    headers: &HeaderMap,
    name: &HeaderName,
) -> Result<Option<SessionId>, Refusal> {
    let mut values = headers.get_all(name).iter();
    let Some(value) = values.next() else {
        return Ok(None);
    };
    if values.next().is_some() {
        return Err(Refusal::MalformedSessionId);
    }
    let text = value.to_str().map_err(|_| Refusal::MalformedSessionId)?;
    if text.contains(',') {
        return Err(Refusal::MalformedSessionId);
    }
    text.parse()
        .map(Some)
        .map_err(|_| Refusal::MalformedSessionId)
}

/// The session a request resolved to.
pub(super) enum Resolved<S> {
    /// No session: stateless, or a protocol without sessions.
    None,
    /// A session this request opens; stored now, forgotten again if the opening fails.
    Opening(Arc<Session<S>>),
    Live(Arc<Session<S>>),
}

impl<S> Resolved<S> {
    pub(super) fn session(&self) -> Option<&Arc<Session<S>>> {
        match self {
            Self::None => None,
            Self::Opening(session) | Self::Live(session) => Some(session),
        }
    }

    /// The session this request opens, if it opens one.
    pub(super) fn opening(&self) -> Option<&Arc<Session<S>>> {
        match self {
            Self::Opening(session) => Some(session),
            Self::None | Self::Live(_) => None,
        }
    }
}

impl<H: RequestHandler> StreamableHttp<H> {
    /// Which session a POST belongs to. The store is consulted only when the header names a
    /// session; otherwise the handler says what the body means.
    pub(super) fn resolve_post_session(
        &self,
        headers: &HeaderMap,
        body: &Inbound,
    ) -> Result<Resolved<H::Session>, Refusal> {
        match self.handler.profile().session_header() {
            Some(name) => self.resolve_named_session(name, headers, body),
            None => Ok(Resolved::None),
        }
    }

    /// [`Self::resolve_post_session`] for a protocol with sessions; out of line, so a
    /// sessionless protocol's path does not carry it.
    #[inline(never)]
    fn resolve_named_session(
        &self,
        name: &HeaderName,
        headers: &HeaderMap,
        body: &Inbound,
    ) -> Result<Resolved<H::Session>, Refusal> {
        if let Some(id) = session_id(headers, name)? {
            return self.live_session(&id).map(Resolved::Live);
        }
        if !body.has_requests() {
            return Ok(Resolved::None);
        }
        match self.handler.unsessioned(body.messages.as_slice(), headers) {
            Unsessioned::Stateless => Ok(Resolved::None),
            Unsessioned::NeedsSession => Err(Refusal::MissingSession),
            Unsessioned::Opens => self.open_session().map(Resolved::Opening),
        }
    }

    pub(super) fn live_session(&self, id: &SessionId) -> Result<Arc<Session<H::Session>>, Refusal> {
        self.store
            .get(id, self.config.clock.now())
            .ok_or(Refusal::UnknownSession)
    }

    /// A new session, not yet stored: it is stored once the request is admitted.
    #[inline(never)]
    pub(super) fn open_session(&self) -> Result<Arc<Session<H::Session>>, Refusal> {
        if !self.store.has_room() {
            return Err(Refusal::Overloaded);
        }
        let session = Arc::new(Session::with_events(
            SessionId::random(),
            H::Session::default(),
            self.config.clock.now(),
            Arc::clone(&self.events),
        ));
        tracing::debug!(session = %session.id(), "session opening");
        Ok(session)
    }

    /// An opening session whose opening request failed is forgotten.
    pub(super) fn settle_opening(
        &self,
        opening: Option<&Arc<Session<H::Session>>>,
        answers: &[RpcResponse],
    ) {
        if let Some(session) = opening
            && !answers.iter().any(|answer| !answer.is_error())
        {
            self.store.remove(session.id());
        }
    }

    /// The session an answered request opened is named in the response, unless the opening
    /// failed (answered only errors) and so already ended it.
    #[inline(never)]
    pub(super) fn name_opened_session(
        &self,
        response: &mut Response,
        session: &Session<H::Session>,
    ) {
        if let Some(name) = self.handler.profile().session_header()
            && !session.ended().is_cancelled()
            && let Ok(value) = HeaderValue::from_str(session.id().as_str())
        {
            response.headers_mut().insert(name.clone(), value);
        }
    }
}
