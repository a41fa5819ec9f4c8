//! Session resolution: which session a request names or opens, checked against the store (a
//! well-formed id the store never issued is refused, never minted), and the naming or
//! forgetting of a session a request opened.

use std::sync::Arc;

use axum::response::Response;
use http::{HeaderMap, HeaderName, HeaderValue};

use super::post::Inbound;
use super::{StreamableHttp, store_refusal};
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
    /// Which session a POST belongs to; the store is asked only when the header names a
    /// session or the body opens one ([`Self::resolve_without_store`] says the rest).
    pub(super) async fn resolve_post_session(
        &self,
        headers: &HeaderMap,
        body: &Inbound,
    ) -> Result<Resolved<H::Session>, Refusal> {
        if let Some(resolved) = self.resolve_without_store(headers, body) {
            return resolved;
        }
        let named = match self.session_header() {
            Some(name) => session_id(headers, name)?,
            None => None,
        };
        match named {
            Some(id) => self.live_session(&id).await.map(Resolved::Live),
            None => self.open_session().await.map(Resolved::Opening),
        }
    }

    /// The session a POST resolves to when that needs no store: none for a protocol without
    /// sessions, a refusal for a malformed or missing id; `None` when the header names a session
    /// (the store looks it up) or the body opens one (the store makes room).
    pub(super) fn resolve_without_store(
        &self,
        headers: &HeaderMap,
        body: &Inbound,
    ) -> Option<Result<Resolved<H::Session>, Refusal>> {
        let Some(name) = self.session_header() else {
            return Some(Ok(Resolved::None));
        };
        match session_id(headers, name) {
            Err(refusal) => return Some(Err(refusal)),
            Ok(Some(_)) => return None,
            Ok(None) => {}
        }
        if !body.has_requests() {
            return Some(Ok(Resolved::None));
        }
        match self.handler.unsessioned(body.messages.as_slice(), headers) {
            Unsessioned::Stateless => Some(Ok(Resolved::None)),
            Unsessioned::NeedsSession => Some(Err(Refusal::MissingSession)),
            Unsessioned::Opens => None,
        }
    }

    /// The live session `id` names; a store that failed is a refusal of its own.
    pub(super) async fn live_session(
        &self,
        id: &SessionId,
    ) -> Result<Arc<Session<H::Session>>, Refusal> {
        match self.store.get(id, self.config.clock.wall()).await {
            Ok(Some(session)) => Ok(session),
            Ok(None) => Err(Refusal::UnknownSession),
            Err(error) => Err(store_refusal(error)),
        }
    }

    /// A new session, not yet stored: it is stored once the request is admitted.
    pub(super) async fn open_session(&self) -> Result<Arc<Session<H::Session>>, Refusal> {
        if !self.store.has_room().await.map_err(store_refusal)? {
            return Err(Refusal::Overloaded);
        }
        let session = Arc::new(Session::with_events(
            SessionId::random(),
            H::Session::default(),
            self.config.clock.wall(),
            Arc::clone(&self.events),
        ));
        tracing::debug!(session = %session.id(), "session opening");
        Ok(session)
    }

    /// An opening session whose opening request failed is forgotten.
    pub(super) async fn settle_opening(
        &self,
        opening: Option<&Arc<Session<H::Session>>>,
        answers: &[RpcResponse],
    ) {
        if let Some(session) = opening
            && !answers.iter().any(|answer| !answer.is_error())
            && let Err(error) = self.store.remove(session.id()).await
        {
            tracing::warn!(%error, "a failed opening's session could not be forgotten");
        }
    }

    /// Saves the session's state after a request, when the store keeps state for other
    /// replicas; a store that holds live sessions is never asked.
    pub(super) async fn save_state(
        &self,
        session: Option<&Arc<Session<H::Session>>>,
    ) -> Result<(), Refusal> {
        match session {
            Some(session) if self.saves_state => {
                self.store.save(session).await.map_err(store_refusal)
            }
            _ => Ok(()),
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
        if let Some(name) = self.session_header()
            && !session.ended().is_cancelled()
            && let Ok(value) = HeaderValue::from_str(session.id().as_str())
        {
            response.headers_mut().insert(name.clone(), value);
        }
    }
}
