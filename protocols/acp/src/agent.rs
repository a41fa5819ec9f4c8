//! Serving an ACP agent on the runtime: [`AcpAgentServer`] is the [`RequestHandler`] that
//! negotiates the revision in `initialize`, routes every later message to that revision's agent,
//! turns `session/cancel` into the running turn's cancellation, and hands extension methods
//! (a leading `_`) to a catch-all. What each method means is the revision agent's.

use std::future::Future;

use http::{HeaderMap, StatusCode};
use protocols_runtime::handler::{Context, Profile, Rejection, Reply, RequestHandler, Unsessioned};
use protocols_runtime::jsonrpc::{ErrorObject, Message, Notification, Request, to_raw};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::client_handle::ClientHandle;
use crate::connection::{AcpConnection, ClientFeatures};
use crate::profile::{acp_profile, session_header_conflict};
use crate::version::{Revision, negotiate, requested_version};

/// The wire names the glue itself acts on; every other method is the revision agent's.
const INITIALIZE: &str = "initialize";
const SESSION_PROMPT: &str = "session/prompt";
const SESSION_CANCEL: &str = "session/cancel";

/// One side of one revision as the glue serves it (an agent's methods, or a client's): the
/// adapter from typed methods to the runtime's raw messages.
pub trait AcpService: Send + Sync + 'static {
    /// Answers one request of this revision.
    fn handle(
        &self,
        request: Request,
        cx: Context<AcpConnection>,
    ) -> impl Future<Output = Reply> + Send;

    /// Takes one notification of this revision.
    fn notify(
        &self,
        notification: Notification,
        cx: Context<AcpConnection>,
    ) -> impl Future<Output = ()> + Send;
}

/// A revision this build's agent does not serve.
#[derive(Debug, Clone, Copy, Default)]
pub struct NotServed;

impl AcpService for NotServed {
    async fn handle(&self, _request: Request, _cx: Context<AcpConnection>) -> Reply {
        Err(ErrorObject::method_not_found())
    }

    async fn notify(&self, _notification: Notification, _cx: Context<AcpConnection>) {}
}

/// The catch-all for extension methods (names with a leading `_`). Both default to what an
/// agent without extensions answers: -32601 for requests, nothing for notifications.
pub trait Extensions: Send + Sync + 'static {
    /// Answers an extension request (a method whose name starts with `_`).
    fn ext_method(
        &self,
        method: &str,
        params: Option<&RawValue>,
        cx: &Context<AcpConnection>,
    ) -> impl Future<Output = Reply> + Send {
        let _ = (method, params, cx);
        async { Err(ErrorObject::method_not_found()) }
    }

    /// Handles an extension notification (a method whose name starts with `_`).
    fn ext_notification(
        &self,
        method: &str,
        params: Option<&RawValue>,
        cx: &Context<AcpConnection>,
    ) -> impl Future<Output = ()> + Send {
        let _ = (method, params, cx);
        async {}
    }
}

/// An agent with no extension methods.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoExtensions;

impl Extensions for NoExtensions {}

/// Whether `method` is an extension method.
pub fn is_extension(method: &str) -> bool {
    method.starts_with('_')
}

/// An ACP agent served on the runtime: version 1 always, version 2 when given (builds with the
/// `unstable` feature only, as upstream marks version 2 draft).
pub struct AcpAgentServer<V1, V2 = NotServed, E = NoExtensions> {
    v1: V1,
    v2: Option<V2>,
    extensions: E,
    profile: Profile,
}

impl<V1, V2, E> std::fmt::Debug for AcpAgentServer<V1, V2, E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AcpAgentServer")
            .field("serves_v2", &self.v2.is_some())
            .finish_non_exhaustive()
    }
}

impl<V1: AcpService> AcpAgentServer<V1> {
    /// Serves `v1` only.
    pub fn new(v1: V1) -> Self {
        Self {
            v1,
            v2: None,
            extensions: NoExtensions,
            profile: acp_profile(),
        }
    }
}

impl<V1: AcpService, V2: AcpService, E: Extensions> AcpAgentServer<V1, V2, E> {
    /// Also serves version 2, to clients that ask for it.
    #[cfg(feature = "unstable")]
    pub fn with_v2<W: AcpService>(self, v2: W) -> AcpAgentServer<V1, W, E> {
        AcpAgentServer {
            v1: self.v1,
            v2: Some(v2),
            extensions: self.extensions,
            profile: self.profile,
        }
    }

    /// Answers extension methods with `extensions`.
    pub fn with_extensions<F: Extensions>(self, extensions: F) -> AcpAgentServer<V1, V2, F> {
        AcpAgentServer {
            v1: self.v1,
            v2: self.v2,
            extensions,
            profile: self.profile,
        }
    }

    /// The revisions this server negotiates, oldest first.
    pub fn served(&self) -> Vec<Revision> {
        let v1 = std::iter::once(Revision::V1);
        #[cfg(feature = "unstable")]
        let v2 = self.v2.as_ref().map(|_| Revision::V2);
        #[cfg(not(feature = "unstable"))]
        let v2 = None;
        v1.chain(v2).collect()
    }

    async fn route(
        &self,
        revision: Revision,
        request: Request,
        cx: Context<AcpConnection>,
    ) -> Reply {
        match (revision, &self.v2) {
            #[cfg(feature = "unstable")]
            (Revision::V2, Some(v2)) => v2.handle(request, cx).await,
            _ => self.v1.handle(request, cx).await,
        }
    }

    async fn route_notification(
        &self,
        revision: Revision,
        notification: Notification,
        cx: Context<AcpConnection>,
    ) {
        match (revision, &self.v2) {
            #[cfg(feature = "unstable")]
            (Revision::V2, Some(v2)) => v2.notify(notification, cx).await,
            _ => self.v1.notify(notification, cx).await,
        }
    }

    /// Negotiates the revision, remembers the client's capabilities, lets the revision agent
    /// answer, and states the negotiated version in that answer whatever the agent wrote.
    async fn initialize(&self, request: Request, cx: Context<AcpConnection>) -> Reply {
        let params = params_value(request.params.as_deref());
        let revision = negotiate(requested_version(&params), &self.served());
        let connection = cx.state().ok_or_else(no_connection)?;
        if !connection.settle(revision, ClientFeatures::from_initialize(&params)) {
            return Err(ErrorObject::invalid_request(
                "the connection is already initialized",
            ));
        }
        let answer = self.route(revision, request, cx).await?;
        state_version(&answer, revision)
    }

    /// Runs a prompt turn registered under its session, so `session/cancel` can reach it.
    async fn prompt(
        &self,
        revision: Revision,
        request: Request,
        cx: Context<AcpConnection>,
    ) -> Reply {
        let session = cx.session().cloned().ok_or_else(no_connection)?;
        let session_id = params_value(request.params.as_deref())
            .get("sessionId")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let _turn = session_id
            .as_deref()
            .map(|session_id| session.state().start_turn(session_id));
        self.route(revision, request, cx).await
    }
}

impl<V1: AcpService, V2: AcpService, E: Extensions> RequestHandler for AcpAgentServer<V1, V2, E> {
    type Session = AcpConnection;

    fn profile(&self) -> &Profile {
        &self.profile
    }

    fn unsessioned(&self, messages: &[Message], _headers: &HeaderMap) -> Unsessioned {
        match messages {
            [Message::Request(request)] if request.method == INITIALIZE => Unsessioned::Opens,
            _ => Unsessioned::NeedsSession,
        }
    }

    fn admit(
        &self,
        messages: &[Message],
        headers: &HeaderMap,
        _session: Option<&AcpConnection>,
    ) -> Result<(), Rejection> {
        match session_header_conflict(messages, headers) {
            Some(error) => Err(Rejection::new(StatusCode::BAD_REQUEST, error)),
            None => Ok(()),
        }
    }

    async fn handle(&self, request: Request, cx: Context<AcpConnection>) -> Reply {
        if is_extension(&request.method) {
            return self
                .extensions
                .ext_method(&request.method, request.params.as_deref(), &cx)
                .await;
        }
        if request.method == INITIALIZE {
            return self.initialize(request, cx).await;
        }
        let revision = cx
            .state()
            .and_then(AcpConnection::revision)
            .ok_or_else(|| ErrorObject::invalid_request("initialize the connection first"))?;
        if request.method == SESSION_PROMPT {
            return self.prompt(revision, request, cx).await;
        }
        self.route(revision, request, cx).await
    }

    async fn notify(&self, notification: Notification, cx: Context<AcpConnection>) {
        if is_extension(&notification.method) {
            self.extensions
                .ext_notification(&notification.method, notification.params.as_deref(), &cx)
                .await;
            return;
        }
        let Some(connection) = cx.state() else { return };
        if notification.method == SESSION_CANCEL
            && let Some(session_id) = params_value(notification.params.as_deref())
                .get("sessionId")
                .and_then(Value::as_str)
        {
            connection.cancel_turn(session_id);
        }
        // Notifications before `initialize` have no revision to go to; they are dropped.
        if let Some(revision) = connection.revision() {
            self.route_notification(revision, notification, cx).await;
        }
    }
}

/// What an agent method reaches through its context: the client, and the turn's cancellation.
pub trait AcpContext {
    /// Calls the client, gated on what it advertised.
    fn client(&self) -> ClientHandle;

    /// Completes when the client cancels the prompt turn running in `session_id`
    /// (`session/cancel`) or the request itself (`$/cancel_request`, or the connection ending).
    fn turn_cancelled(&self, session_id: &str) -> impl Future<Output = ()> + Send + 'static;
}

impl AcpContext for Context<AcpConnection> {
    fn client(&self) -> ClientHandle {
        let features = self
            .state()
            .map(AcpConnection::features)
            .unwrap_or_default();
        ClientHandle::new(self.peer().clone(), features)
    }

    fn turn_cancelled(&self, session_id: &str) -> impl Future<Output = ()> + Send + 'static {
        // Without a registered turn only the request's own cancellation can end it.
        let turn = self
            .state()
            .and_then(|connection| connection.turn_token(session_id))
            .unwrap_or_default();
        let request = self.cancellation().clone();
        async move {
            tokio::select! {
                () = turn.cancelled() => {}
                () = request.cancelled() => {}
            }
        }
    }
}

fn no_connection() -> ErrorObject {
    ErrorObject::internal_error()
}

/// Params as JSON for the glue's own reads (`protocolVersion`, `sessionId`); unreadable params
/// read as `null` and are left for the revision agent to refuse.
fn params_value(params: Option<&RawValue>) -> Value {
    params
        .and_then(|raw| serde_json::from_str(raw.get()).ok())
        .unwrap_or(Value::Null)
}

/// The `initialize` answer with `protocolVersion` set to the negotiated revision.
fn state_version(answer: &RawValue, revision: Revision) -> Reply {
    let mut value: Value =
        serde_json::from_str(answer.get()).map_err(|_| ErrorObject::internal_error())?;
    if let Some(object) = value.as_object_mut() {
        object.insert("protocolVersion".to_owned(), Value::from(revision.number()));
    }
    to_raw(&value).map_err(|_| ErrorObject::internal_error())
}
