//! Serving an A2A agent: the public card route (the 1.0 card, or the 0.3 one to a client asking
//! for 0.3; cacheable, with an `ETag`), the JSON-RPC binding (a runtime [`RequestHandler`]
//! mounted on the runtime's Streamable HTTP transport, streaming answers as SSE with one
//! JSON-RPC response per event, its errors and the transport's refusals in JSON-RPC's own codes
//! with `200` as the official SDKs answer, a bound reached `429`/`503`) and the HTTP+JSON
//! binding ([`crate::rest`]), all over one [`A2aService`]. The revision is chosen per request
//! by the `A2A-Version` header.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use axum::Router;
use axum::response::Response;
use bytes::Bytes;
use futures::StreamExt as _;
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use protocols_runtime::hardening::{Authenticator, Cacheable, Refusal, RefusalAnswer};
use protocols_runtime::http::{HttpConfig, ResponseMode, StreamableHttp};
use protocols_runtime::jsonrpc::to_raw;
use protocols_runtime::{
    Context, ErrorHead, ErrorObject, Notification, PeerError, Profile, Reply, Request,
    RequestHandler, RequestMeta,
};
use serde_json::Value;
use serde_json::value::RawValue;
use tokio_util::sync::CancellationToken;

use crate::card::WELL_KNOWN_PATH;
use crate::compat::{self, Revision, VERSION_HEADER};
use crate::dispatch::{self, Outcome};
use crate::error::A2aError;
use crate::executor::AgentExecutor;
use crate::service::{A2aService, Caller};
use crate::store::Owner;

/// How long a client may keep the card before asking again (with its `ETag`).
const CARD_CACHE_CONTROL: &str = "public, max-age=300";

type AuthCheck = Arc<dyn Fn(HeaderMap) -> Pin<Box<dyn Future<Output = bool> + Send>> + Send + Sync>;

/// Who may read the extended card: callers the hardening already authenticated, or those an
/// authenticator of this server's accepts.
#[derive(Clone, Default)]
pub(crate) struct CallerCheck {
    authenticator: Option<AuthCheck>,
}

impl CallerCheck {
    /// Who is calling `method`: the owner of what it creates (the authenticated subject, else
    /// the peer's address) and, for the extended card only (so only it pays for the check),
    /// whether it proved who it is. The request travels with the caller, to the executor.
    pub(crate) async fn caller_of(&self, method: &str, request: Arc<RequestMeta>) -> Caller {
        let owner = Owner::of(request.principal(), request.peer_address());
        let caller = if method == crate::v1::methods::GET_EXTENDED_AGENT_CARD
            && self.proves(&request).await
        {
            Caller::authenticated(owner)
        } else {
            Caller::anonymous(owner)
        };
        caller.with_request(request)
    }

    async fn proves(&self, request: &RequestMeta) -> bool {
        if request.principal().is_some() {
            return true;
        }
        match &self.authenticator {
            Some(check) => check(request.headers.clone()).await,
            None => false,
        }
    }
}

/// The JSON-RPC binding's head for an error answer: a bound reached is `429`/`503` with
/// `Retry-After`; every other error goes with `200`.
fn json_rpc_error_head(error: &ErrorObject) -> Option<ErrorHead> {
    let error = A2aError::from_error_object(error);
    error.json_rpc_status().map(|status| ErrorHead {
        status,
        retry_after: error.retry_after(),
    })
}

/// The transport's refusals at the JSON-RPC endpoint in JSON-RPC's own codes
/// ([`A2aError::Refused`]): a body that is no JSON-RPC message is answered with `200`, as the
/// official SDKs answer every JSON-RPC error; a wrong method, media type or size keeps its 4xx.
fn json_rpc_refusal(refusal: &Refusal) -> Option<RefusalAnswer> {
    let status = match refusal {
        Refusal::ParseError | Refusal::InvalidRequest => Some(StatusCode::OK),
        Refusal::NotFound
        | Refusal::MethodNotAllowed(_)
        | Refusal::UnsupportedMediaType
        | Refusal::NotAcceptable
        | Refusal::BodyTooLarge
        | Refusal::MalformedHeader(_)
        | Refusal::Overloaded => None,
        _ => return None,
    };
    let code = A2aError::Refused(refusal.clone()).code();
    Some(RefusalAnswer { code, status })
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
    /// A server answering both bindings with `service`.
    pub fn new(service: A2aService<E>) -> Self {
        Self {
            service,
            callers: CallerCheck::default(),
            profile: Profile::new()
                .with_version_header(HeaderName::from_static(VERSION_HEADER))
                .with_error_heads(json_rpc_error_head)
                .with_refusal_answers(json_rpc_refusal),
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

    /// The service the bindings call.
    pub fn service(&self) -> &A2aService<E> {
        &self.service
    }

    /// The card route, JSON-RPC at `jsonrpc_path` and HTTP+JSON under `rest_path`, unhardened:
    /// mount them with `ServerBuilder::routes` (or wrap them in a `Hardening`).
    pub fn routes(self, jsonrpc_path: &str, rest_path: &str) -> Router {
        let config = HttpConfig::default()
            .response_mode(ResponseMode::Auto)
            .shutdown(self.shutdown.clone());
        let cards = Arc::new(CardDocuments::new(self.service.cards()));
        let rest = crate::rest::routes(self.clone(), rest_path);
        let mut routes = Router::new()
            .route(
                WELL_KNOWN_PATH,
                axum::routing::get(move |headers: HeaderMap| {
                    let cards = Arc::clone(&cards);
                    async move { cards.serve(&headers) }
                }),
            )
            .merge(StreamableHttp::new(self, config).into_routes(jsonrpc_path))
            .merge(rest);
        // Below the JSON-RPC path (where the REST prefix is not), an unknown path is a JSON-RPC
        // unknown method, not the runtime's own 404 code (A2A's InvalidAgentResponseError).
        let (jsonrpc, rest) = (
            jsonrpc_path.trim_end_matches('/'),
            rest_path.trim_end_matches('/'),
        );
        if jsonrpc != rest {
            routes = routes.route(
                &format!("{jsonrpc}/{{*unknown}}"),
                axum::routing::any(|| async { unknown_json_rpc_path() }),
            );
        }
        routes
    }

    /// Runs one call in `revision`'s shapes: maps 0.3 params in and results out.
    pub(crate) async fn call(
        &self,
        revision: Revision,
        method: &'static str,
        params: Option<&RawValue>,
        caller: Caller,
    ) -> Result<Outcome, A2aError> {
        match revision {
            Revision::V1 => self.answer(revision, method, params, caller).await,
            Revision::V0_3 => {
                let params = match params {
                    Some(raw) => serde_json::from_str(raw.get())
                        .map_err(|_| A2aError::invalid_params("params are not JSON"))?,
                    None => Value::Null,
                };
                let params = compat::params_from_v03(method, &params)?;
                let params = to_raw(&params).map_err(|_| A2aError::Internal)?;
                self.answer(revision, method, Some(&params), caller).await
            }
        }
    }

    /// Runs one call whose params are already 1.0; answers in `revision`'s shapes.
    pub(crate) async fn answer(
        &self,
        revision: Revision,
        method: &'static str,
        params: Option<&RawValue>,
        caller: Caller,
    ) -> Result<Outcome, A2aError> {
        let outcome = dispatch::call(&self.service, method, params, caller).await?;
        Ok(match (revision, outcome) {
            (Revision::V1, outcome) => outcome,
            (Revision::V0_3, Outcome::Single(value)) => Outcome::Single(in_v03(method, &value)?),
            (Revision::V0_3, Outcome::Stream(events)) => Outcome::Stream(
                events
                    .map(move |event| {
                        event.and_then(|event| {
                            in_v03(method, &event).map_err(|error| error.to_error_object())
                        })
                    })
                    .boxed(),
            ),
        })
    }
}

/// The answer to a path below the JSON-RPC endpoint that nothing serves.
fn unknown_json_rpc_path() -> Response {
    let refusal = Refusal::NotFound;
    let code = A2aError::Refused(refusal.clone()).code();
    refusal.into_response_as(None, RefusalAnswer { code, status: None })
}

/// A 1.0 answer of `method` in its 0.3 shape.
fn in_v03(method: &str, answer: &RawValue) -> Result<Box<RawValue>, A2aError> {
    let answer: Value = serde_json::from_str(answer.get()).map_err(|_| A2aError::Internal)?;
    to_raw(&compat::result_to_v03(method, &answer)).map_err(|_| A2aError::Internal)
}

/// The public card as each revision reads it, serialized once, with its `ETag`.
struct CardDocuments {
    v1: CardDocument,
    legacy: CardDocument,
}

struct CardDocument {
    body: Bytes,
    etag: HeaderValue,
}

impl CardDocument {
    fn new(card: &Value) -> Self {
        use std::hash::{Hash as _, Hasher as _};
        let body = Bytes::from(card.to_string());
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        body.hash(&mut hasher);
        let etag = HeaderValue::from_str(&format!("\"{:016x}\"", hasher.finish()))
            .unwrap_or_else(|_| HeaderValue::from_static("\"card\""));
        Self { body, etag }
    }

    /// Whether an `If-None-Match` value names this document (or any: `*`).
    fn is_named_by(&self, if_none_match: &HeaderValue) -> bool {
        let Ok(list) = if_none_match.to_str() else {
            return false;
        };
        let ours = self.etag.to_str().unwrap_or_default();
        list.split(',')
            .map(|tag| tag.trim().trim_start_matches("W/"))
            .any(|tag| tag == "*" || tag == ours)
    }
}

impl CardDocuments {
    fn new(cards: &crate::card::AgentCards) -> Self {
        Self {
            v1: CardDocument::new(&cards.document(Revision::V1)),
            legacy: CardDocument::new(&cards.document(Revision::V0_3)),
        }
    }

    /// The card a client asking for 0.3 reads in 0.3's shape; every other client (no
    /// `A2A-Version`, 1.0, or a version this agent does not speak) reads the 1.0 card, whose
    /// interfaces say which revisions are served where. `304` when the client's copy is current.
    fn serve(&self, headers: &HeaderMap) -> Response {
        let asks_legacy = headers
            .get(VERSION_HEADER)
            .and_then(|value| value.to_str().ok())
            .filter(|version| !version.trim().is_empty())
            .is_some_and(|version| {
                matches!(Revision::from_header(Some(version)), Ok(Revision::V0_3))
            });
        let document = if asks_legacy { &self.legacy } else { &self.v1 };
        let current = headers
            .get(header::IF_NONE_MATCH)
            .is_some_and(|tags| document.is_named_by(tags));
        let mut response = if current {
            let mut response = Response::new(axum::body::Body::empty());
            *response.status_mut() = StatusCode::NOT_MODIFIED;
            response
        } else {
            let mut response = Response::new(axum::body::Body::from(document.body.clone()));
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            response
        };
        let head = response.headers_mut();
        head.insert(header::ETAG, document.etag.clone());
        head.insert(header::VARY, HeaderValue::from_static("A2A-Version"));
        response
            .extensions_mut()
            .insert(Cacheable(HeaderValue::from_static(CARD_CACHE_CONTROL)));
        response
    }
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
        let caller = self
            .callers
            .caller_of(method, Arc::clone(cx.request_meta()))
            .await;
        match self
            .call(revision, method, request.params.as_deref(), caller)
            .await
        {
            Ok(Outcome::Single(answer)) => Ok(answer),
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
    mut events: futures::stream::BoxStream<'static, Result<Box<RawValue>, ErrorObject>>,
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
    Ok(pending)
}
