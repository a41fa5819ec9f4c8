//! Serving an A2A agent: the public card route, the JSON-RPC binding (a runtime
//! [`RequestHandler`] mounted on the runtime's Streamable HTTP transport, streaming answers as
//! SSE with one JSON-RPC response per event) and the HTTP+JSON binding ([`crate::rest`]), all
//! over one [`A2aService`]. The revision is chosen per request by the `A2A-Version` header.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use axum::Router;
use axum::response::{IntoResponse, Response};
use futures::StreamExt as _;
use http::{HeaderMap, HeaderName, HeaderValue, header};
use protocols_runtime::hardening::{Authenticator, Principal};
use protocols_runtime::http::{HttpConfig, ResponseMode, StreamableHttp};
use protocols_runtime::jsonrpc::to_raw;
use protocols_runtime::{
    Context, ErrorObject, Notification, PeerError, Profile, Reply, Request, RequestHandler,
};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::card::WELL_KNOWN_PATH;
use crate::compat::{self, Revision, VERSION_HEADER};
use crate::dispatch::{self, Outcome};
use crate::error::A2aError;
use crate::executor::AgentExecutor;
use crate::service::{A2aService, Caller};

type AuthCheck = Arc<dyn Fn(HeaderMap) -> Pin<Box<dyn Future<Output = bool> + Send>> + Send + Sync>;

/// Who may read the extended card: callers the hardening already authenticated, or those an
/// authenticator of this server's accepts.
#[derive(Clone, Default)]
pub(crate) struct CallerCheck {
    authenticator: Option<AuthCheck>,
}

impl CallerCheck {
    /// Who is calling `method`; only the extended card asks, so only it pays for the check.
    pub(crate) async fn caller_of(
        &self,
        method: &str,
        headers: &HeaderMap,
        extensions: &http::Extensions,
    ) -> Caller {
        if method == crate::v1::methods::GET_EXTENDED_AGENT_CARD {
            self.caller(headers, extensions).await
        } else {
            Caller::Anonymous
        }
    }

    async fn caller(&self, headers: &HeaderMap, extensions: &http::Extensions) -> Caller {
        if extensions.get::<Principal>().is_some() {
            return Caller::Authenticated;
        }
        match &self.authenticator {
            Some(check) if check(headers.clone()).await => Caller::Authenticated,
            _ => Caller::Anonymous,
        }
    }
}

/// An A2A agent ready to be mounted.
pub struct A2aServer<E> {
    pub(crate) service: A2aService<E>,
    pub(crate) callers: CallerCheck,
    profile: Profile,
    /// Ends both bindings' SSE streams when fired (the server's shutdown).
    pub(crate) shutdown: CancellationToken,
}

impl<E> Clone for A2aServer<E> {
    fn clone(&self) -> Self {
        Self {
            service: self.service.clone(),
            callers: self.callers.clone(),
            profile: self.profile.clone(),
            shutdown: self.shutdown.clone(),
        }
    }
}

impl<E> std::fmt::Debug for A2aServer<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("A2aServer").finish_non_exhaustive()
    }
}

impl<E: AgentExecutor> A2aServer<E> {
    pub fn new(service: A2aService<E>) -> Self {
        Self {
            service,
            callers: CallerCheck::default(),
            profile: Profile::new().with_version_header(HeaderName::from_static(VERSION_HEADER)),
            shutdown: CancellationToken::new(),
        }
    }

    /// Ends both bindings' streaming answers cleanly when `shutdown` fires: pass the
    /// `ServerBuilder`'s `shutdown_token()`, so a graceful shutdown is not held open by a
    /// long-running stream.
    #[must_use]
    pub fn with_shutdown(mut self, shutdown: CancellationToken) -> Self {
        self.shutdown = shutdown;
        self
    }

    /// Lets callers this authenticator accepts read the extended card, even where the routes
    /// themselves are public.
    #[must_use]
    pub fn with_authenticator(mut self, authenticator: impl Authenticator) -> Self {
        let authenticator = Arc::new(authenticator);
        self.callers.authenticator = Some(Arc::new(move |headers: HeaderMap| {
            let authenticator = Arc::clone(&authenticator);
            Box::pin(async move { authenticator.authenticate(&headers).await.is_ok() })
        }));
        self
    }

    pub fn service(&self) -> &A2aService<E> {
        &self.service
    }

    /// The card route, JSON-RPC at `jsonrpc_path` and HTTP+JSON under `rest_path`, unhardened:
    /// mount them with `ServerBuilder::routes` (or wrap them in a `Hardening`).
    pub fn routes(self, jsonrpc_path: &str, rest_path: &str) -> Router {
        let config = HttpConfig {
            response_mode: ResponseMode::Auto,
            shutdown: self.shutdown.clone(),
            ..HttpConfig::default()
        };
        let card = self.service.cards().public_document();
        let rest = crate::rest::routes(self.clone(), rest_path);
        Router::new()
            .route(
                WELL_KNOWN_PATH,
                axum::routing::get(move || serve_card(card.clone())),
            )
            .merge(StreamableHttp::new(self, config).into_routes(jsonrpc_path))
            .merge(rest)
    }

    /// Runs one call in `revision`'s shapes: maps 0.3 params in and results out.
    pub(crate) async fn call(
        &self,
        revision: Revision,
        method: &'static str,
        params: Value,
        caller: Caller,
    ) -> Result<Outcome, A2aError> {
        let params = match revision {
            Revision::V1 => params,
            Revision::V0_3 => compat::params_from_v03(method, &params),
        };
        self.answer(revision, method, params, caller).await
    }

    /// Runs one call whose params are already 1.0; answers in `revision`'s shapes.
    pub(crate) async fn answer(
        &self,
        revision: Revision,
        method: &'static str,
        params: Value,
        caller: Caller,
    ) -> Result<Outcome, A2aError> {
        let outcome = dispatch::call(&self.service, method, params, caller).await?;
        Ok(match (revision, outcome) {
            (Revision::V1, outcome) => outcome,
            (Revision::V0_3, Outcome::Single(value)) => {
                Outcome::Single(compat::result_to_v03(method, &value))
            }
            (Revision::V0_3, Outcome::Stream(events)) => Outcome::Stream(
                events
                    .map(move |event| event.map(|event| compat::result_to_v03(method, &event)))
                    .boxed(),
            ),
        })
    }
}

async fn serve_card(card: Value) -> Response {
    let mut response = axum::Json(card).into_response();
    response.headers_mut().insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=300"),
    );
    response
}

/// The 1.0 name of a method as `revision` spells it.
pub(crate) fn resolve_method(revision: Revision, name: &str) -> Option<&'static str> {
    match revision {
        Revision::V1 => crate::v1::METHODS
            .iter()
            .find(|spec| spec.name == name)
            .map(|spec| spec.name),
        Revision::V0_3 => compat::v1_method(name),
    }
}

fn error_reply(error: &A2aError) -> Reply {
    Err(error.to_error_object())
}

fn raw(value: &Value) -> Reply {
    to_raw(value).map_err(|_| ErrorObject::internal_error())
}

impl<E: AgentExecutor> RequestHandler for A2aServer<E> {
    type Session = ();

    fn profile(&self) -> &Profile {
        &self.profile
    }

    async fn handle(&self, request: Request, cx: Context<()>) -> Reply {
        let revision = match Revision::from_header(cx.protocol_version()) {
            Ok(revision) => revision,
            Err(error) => return error_reply(&error),
        };
        let Some(method) = resolve_method(revision, &request.method) else {
            return error_reply(&A2aError::MethodNotFound);
        };
        let params = match request
            .params
            .as_deref()
            .map(|raw| serde_json::from_str(raw.get()))
        {
            None => Value::Null,
            Some(Ok(params)) => params,
            Some(Err(error)) => return error_reply(&A2aError::InvalidParams(error.to_string())),
        };
        let caller = self
            .callers
            .caller_of(method, cx.headers(), cx.extensions())
            .await;
        match self.call(revision, method, params, caller).await {
            Ok(Outcome::Single(value)) => raw(&value),
            Ok(Outcome::Stream(events)) => answer_stream(events, &cx).await,
            Err(error) => error_reply(&error),
        }
    }

    async fn notify(&self, notification: Notification, _cx: Context<()>) {
        tracing::debug!(method = %notification.method, "A2A has no notifications; ignored");
    }
}

/// Sends every event but the last as a partial result on the request's SSE stream; the last is
/// the answer, so each event is one JSON-RPC response carrying the request's id.
async fn answer_stream(
    mut events: futures::stream::BoxStream<'static, Result<Value, ErrorObject>>,
    cx: &Context<()>,
) -> Reply {
    let Some(mut pending) = events.next().await.transpose()? else {
        return Err(A2aError::Internal.to_error_object());
    };
    let mut stream_open = true;
    while let Some(next) = events.next().await {
        if stream_open {
            match cx.send_partial_result(&pending) {
                Ok(()) => {}
                // A client that accepts only JSON gets the last event alone.
                Err(PeerError::NoStream) => stream_open = false,
                Err(error) => {
                    tracing::debug!(%error, "a streaming answer's client went away");
                    return Err(A2aError::Internal.to_error_object());
                }
            }
        }
        pending = next?;
    }
    raw(&pending)
}
