//! Hardening: everything that decides whether a request may reach a transport route at all —
//! authentication, the `Host`/`Origin` checks, body, rate, concurrency and time limits — plus
//! the security headers stamped on every response and the one mapping from a refusal to a
//! status and JSON-RPC error body ([`Refusal`]).
//!
//! [`HardeningConfig`] is validated once, at start-up, into a [`Hardening`]; its
//! [`wrap`](Hardening::wrap) puts the layers around a transport router in the only order that
//! keeps the guarantees: authentication runs before any route (and so before any session
//! lookup), and the security headers are stamped outermost, so the framework's own 404/405 and
//! every refusal carry them. A Streamable HTTP transport is hardened as one endpoint
//! ([`Hardening::harden`]) doing what those layers do, in the same order, as one service: the
//! router mounts it at its path and a server that owns its listener calls it directly, with
//! one admission value ([`Admitted`]) handing it the body limit and the caller's address.
//!
//! Everything here but [`Principal`] and the [`Refusal`] vocabulary is the `server` feature's:
//! a client's callback handler still reads the principal from its context and answers an
//! overloaded stdio peer with the refusal's code.

#[cfg(feature = "server")]
mod auth;
#[cfg(feature = "server")]
mod cors;
#[cfg(feature = "server")]
mod guard;
#[cfg(feature = "server")]
mod jwks;
#[cfg(feature = "server")]
mod jwt;
#[cfg(feature = "server")]
mod limits;
#[cfg(feature = "server")]
mod origin;
mod principal;
#[cfg(feature = "server")]
mod proxy;
mod refusal;
#[cfg(feature = "server")]
mod security_headers;

#[cfg(feature = "server")]
use std::convert::Infallible;
#[cfg(feature = "server")]
use std::net::SocketAddr;
#[cfg(feature = "server")]
use std::sync::Arc;
#[cfg(feature = "server")]
use std::time::Duration;

#[cfg(feature = "server")]
use axum::Router;
#[cfg(feature = "server")]
use axum::body::Body;
#[cfg(feature = "server")]
use axum::extract::Request;
#[cfg(feature = "server")]
use axum::response::Response;
#[cfg(feature = "server")]
use http::{Extensions, HeaderValue, StatusCode, header};
#[cfg(feature = "server")]
use tower::Layer as _;

#[cfg(feature = "server")]
pub use auth::{AuthFailure, AuthPolicy, Authenticator, BearerAuthenticator, ProtectedResource};
#[cfg(feature = "server")]
pub use cors::{CORS_ALLOWED_HEADERS, CORS_EXPOSED_HEADERS};
#[cfg(feature = "server")]
pub use jwks::MAX_JWKS_BYTES;
#[cfg(feature = "server")]
pub use jwt::{JwtAuthenticator, JwtConfig, JwtConfigError};
#[cfg(feature = "server")]
pub use limits::{BodyLimit, BoundedBody, RateLimit, read_body};
#[cfg(feature = "server")]
pub use origin::{HostPolicy, OriginPolicy};
pub use principal::{Claims, Principal};
#[cfg(feature = "server")]
use proxy::TrustedProxies;
pub use refusal::{Challenge, EchoId, IdentifiedRefusal, Refusal, RefusalAnswer, Refused};
#[cfg(feature = "server")]
pub use security_headers::SecurityHeaders;
#[cfg(feature = "server")]
pub(crate) use security_headers::{AnswerHeaders, response_headers};

#[cfg(feature = "server")]
use auth::{Challenges, DynAuthenticator, Gate, PublishedMetadata};
#[cfg(feature = "server")]
pub use guard::Cacheable;
#[cfg(feature = "server")]
use guard::{AdmitLayer, GuardLayer, GuardPolicy, InFlight};
#[cfg(feature = "server")]
pub(crate) use guard::{Admitted, AdmittedService, HardenedEndpoint, HardenedFuture};
#[cfg(feature = "server")]
use limits::{RateKey, RateLimiter};
#[cfg(feature = "server")]
use origin::SiteCheck;
#[cfg(feature = "server")]
use security_headers::refuse_unknown_path;
#[cfg(feature = "server")]
use tower_http::cors::CorsLayer;

/// The body limit when none is configured: large enough for a base64 image in a tool result.
#[cfg(feature = "server")]
pub const DEFAULT_MAX_BODY_BYTES: usize = 4 * 1024 * 1024;
/// Per-subject allowance when none is configured.
#[cfg(feature = "server")]
const DEFAULT_RATE_LIMIT: RateLimit = RateLimit::new(500.0, 1000);
/// Per-address allowance of anonymous callers when none is configured. An address can stand
/// for a crowd (every user behind one NAT, every client of an untrusted proxy), so this is set
/// at the scale of what one server core answers, not of what one user sends: it keeps one
/// address from taking the whole server and nothing short of that. Behind a load balancer,
/// name it a trusted proxy so each client gets a bucket of its own.
#[cfg(feature = "server")]
pub const DEFAULT_ANONYMOUS_RATE_LIMIT: RateLimit = RateLimit::new(10_000.0, 20_000);
/// Requests in flight at once before new ones are shed with 503.
#[cfg(feature = "server")]
const DEFAULT_MAX_CONCURRENCY: usize = 1024;
/// How long a request may take to produce its response head (a stream's body is not timed).
#[cfg(feature = "server")]
const DEFAULT_REQUEST_DEADLINE: Duration = Duration::from_secs(60);
/// Distinct rate-limit keys tracked before idle buckets are evicted.
#[cfg(feature = "server")]
const MAX_RATE_KEYS: usize = 100_000;

/// A configuration that cannot be served safely; returned at start-up, never per request.
#[cfg(feature = "server")]
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum HardeningError {
    /// A configured security header's value is not a valid header value.
    #[error("the configured value of security header `{0}` is not a valid header value")]
    InvalidSecurityHeader(String),
    /// An allowed host is not an authority (`name` or `name:port`).
    #[error("allowed host `{0}` is not an authority (`name` or `name:port`)")]
    InvalidAllowedHost(String),
    /// An allowed origin is not an origin (`http[s]://host[:port]`).
    #[error("allowed origin `{0}` is not an origin (`http[s]://host[:port]`)")]
    InvalidAllowedOrigin(String),
    /// A trusted proxy is neither an IP address nor a network.
    #[error("trusted proxy `{0}` is neither an IP address nor a network (`10.0.0.0/8`)")]
    InvalidTrustedProxy(String),
    /// The protected resource is not an absolute http(s) URL without query or fragment.
    #[error("protected resource `{0}` is not an absolute http(s) URL without query or fragment")]
    InvalidResource(String),
    /// The protected-resource metadata names no authorization server.
    #[error("protected-resource metadata must name at least one authorization server")]
    NoAuthorizationServer,
    /// A scope is not an RFC 6749 scope-token.
    #[error("scope `{0}` is not an RFC 6749 scope-token")]
    InvalidScope(String),
    #[error(
        "an authenticator was wired but the policy is AuthPolicy::Public, which would serve \
         every caller without checking it; use AuthPolicy::RequireScopes, or drop the \
         authenticator if the endpoint is meant to be public"
    )]
    /// An authenticator is wired but the policy serves every caller unchecked.
    UnprotectedAuthenticator,
    /// The policy requires scopes but no authenticator checks credentials.
    #[error("AuthPolicy::RequireScopes needs an authenticator to check credentials with")]
    PolicyWithoutAuthenticator,
    /// A limit that must be positive (named) is zero.
    #[error("`{0}` must be positive")]
    NonPositiveLimit(&'static str),
    /// A mounted transport's path is also served by another mount or route (named).
    #[error("a mounted transport's path is served by another mount or route too (mounts: {0})")]
    RouteConflict(String),
}

/// The hardening a server runs with, before validation. Every field has a safe default.
#[cfg(feature = "server")]
#[derive(Clone)]
pub struct HardeningConfig {
    security_headers: SecurityHeaders,
    bind: Option<SocketAddr>,
    hosts: Option<HostPolicy>,
    origins: Option<OriginPolicy>,
    max_body_bytes: usize,
    rate_limit: Option<RateLimit>,
    anonymous_rate_limit: Option<RateLimit>,
    max_concurrency: Option<usize>,
    request_deadline: Option<Duration>,
    authenticator: Option<Arc<dyn DynAuthenticator>>,
    policy: AuthPolicy,
    resource: Option<ProtectedResource>,
    cors_origins: Vec<String>,
    trusted_proxies: Vec<String>,
}

#[cfg(feature = "server")]
impl std::fmt::Debug for HardeningConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HardeningConfig")
            .field("bind", &self.bind)
            .field("hosts", &self.hosts)
            .field("origins", &self.origins)
            .field("max_body_bytes", &self.max_body_bytes)
            .field("rate_limit", &self.rate_limit)
            .field("anonymous_rate_limit", &self.anonymous_rate_limit)
            .field("max_concurrency", &self.max_concurrency)
            .field("request_deadline", &self.request_deadline)
            .field("authenticator", &self.authenticator.is_some())
            .field("policy", &self.policy)
            .field("cors_origins", &self.cors_origins)
            .field("trusted_proxies", &self.trusted_proxies)
            .finish_non_exhaustive()
    }
}

#[cfg(feature = "server")]
impl Default for HardeningConfig {
    fn default() -> Self {
        Self {
            security_headers: SecurityHeaders::default(),
            bind: None,
            hosts: None,
            origins: None,
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            rate_limit: Some(DEFAULT_RATE_LIMIT),
            anonymous_rate_limit: Some(DEFAULT_ANONYMOUS_RATE_LIMIT),
            max_concurrency: Some(DEFAULT_MAX_CONCURRENCY),
            request_deadline: Some(DEFAULT_REQUEST_DEADLINE),
            authenticator: None,
            policy: AuthPolicy::Public,
            resource: None,
            cors_origins: Vec::new(),
            trusted_proxies: Vec::new(),
        }
    }
}

#[cfg(feature = "server")]
impl HardeningConfig {
    /// The default configuration: every check on with its safe default.
    pub fn new() -> Self {
        Self::default()
    }

    /// The address the server listens on. A loopback address pins the default `Host` and
    /// `Origin` allow-lists to the loopback names on this port; any other address turns the
    /// default checks off (set [`host_policy`](Self::host_policy) for a public name).
    #[must_use]
    pub fn bind_address(mut self, address: SocketAddr) -> Self {
        self.bind = Some(address);
        self
    }

    /// Which `Host` values are admitted (default: pinned by [`bind_address`](Self::bind_address)).
    #[must_use]
    pub fn host_policy(mut self, policy: HostPolicy) -> Self {
        self.hosts = Some(policy);
        self
    }

    /// Which `Origin` values are admitted (default: pinned by [`bind_address`](Self::bind_address)).
    #[must_use]
    pub fn origin_policy(mut self, policy: OriginPolicy) -> Self {
        self.origins = Some(policy);
        self
    }

    /// The security headers every response carries.
    #[must_use]
    pub fn security_headers(mut self, headers: SecurityHeaders) -> Self {
        self.security_headers = headers;
        self
    }

    /// The largest request body read, in bytes (default 4 MiB); a larger one is refused with 413.
    #[must_use]
    pub fn max_body_bytes(mut self, limit: usize) -> Self {
        self.max_body_bytes = limit;
        self
    }

    /// One allowance for every caller, per authenticated subject and per anonymous address
    /// alike; `None` turns rate limiting off. Set the anonymous one apart afterwards with
    /// [`anonymous_rate_limit`](Self::anonymous_rate_limit). The default allows each subject
    /// 500 requests a second with bursts of 1,000.
    #[must_use]
    pub fn rate_limit(mut self, limit: Option<RateLimit>) -> Self {
        self.rate_limit = limit;
        self.anonymous_rate_limit = limit;
        self
    }

    /// The allowance of each anonymous caller's address (default
    /// [`DEFAULT_ANONYMOUS_RATE_LIMIT`]); `None` leaves anonymous callers unlimited.
    #[must_use]
    pub fn anonymous_rate_limit(mut self, limit: Option<RateLimit>) -> Self {
        self.anonymous_rate_limit = limit;
        self
    }

    /// Lets pages from `origins` (each `http[s]://host[:port]`) call this server: CORS answers
    /// for them, and the `Origin` check admits them. Nothing is admitted cross-origin without it.
    #[must_use]
    pub fn cors_origins(mut self, origins: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.cors_origins = origins.into_iter().map(Into::into).collect();
        self
    }

    /// The proxies (addresses or networks) whose `Forwarded` / `X-Forwarded-For` names the
    /// client a request came from, for rate limits and `peer_address()`; from any other peer
    /// those headers are ignored.
    #[must_use]
    pub fn trusted_proxies(mut self, proxies: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.trusted_proxies = proxies.into_iter().map(Into::into).collect();
        self
    }

    /// Requests in flight before new ones are shed (default 1,024); `None` turns the limit off.
    #[must_use]
    pub fn max_concurrency(mut self, limit: Option<usize>) -> Self {
        self.max_concurrency = limit;
        self
    }

    /// Time allowed to produce a response head (default 60 s); `None` turns the deadline off.
    #[must_use]
    pub fn request_deadline(mut self, deadline: Option<Duration>) -> Self {
        self.request_deadline = deadline;
        self
    }

    /// Wires an authenticator; it must be paired with [`AuthPolicy::RequireScopes`].
    #[must_use]
    pub fn authenticator(mut self, authenticator: impl Authenticator) -> Self {
        self.authenticator = Some(Arc::new(authenticator));
        self
    }

    /// Which callers are served: everyone, or those whose credentials carry the scopes named.
    #[must_use]
    pub fn auth_policy(mut self, policy: AuthPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// Publishes RFC 9728 metadata and names it in every `401` challenge.
    #[must_use]
    pub fn protected_resource(mut self, resource: ProtectedResource) -> Self {
        self.resource = Some(resource);
        self
    }

    /// Validates the whole configuration.
    pub fn build(self) -> Result<Hardening, HardeningError> {
        let headers = self.security_headers.parse()?;
        let site = SiteCheck::new(&self.host_rule(), &self.origin_rule())?
            .admitting_also(&self.cors_origins)?;
        let cors = (!self.cors_origins.is_empty())
            .then(|| cors::cors_layer(&self.cors_origins))
            .transpose()?;
        let proxies = (!self.trusted_proxies.is_empty())
            .then(|| TrustedProxies::new(&self.trusted_proxies))
            .transpose()?;
        let metadata = self
            .resource
            .as_ref()
            .map(PublishedMetadata::new)
            .transpose()?;
        let gate = self.gate(metadata.as_ref().map(|m| m.url.as_str()))?;
        let subject_rate = rate_limiter(self.rate_limit, "rate_limit")?;
        let peer_rate = rate_limiter(self.anonymous_rate_limit, "anonymous_rate_limit")?;
        positive("max_body_bytes", self.max_body_bytes)?;
        if let Some(limit) = self.max_concurrency {
            positive("max_concurrency", limit)?;
        }
        if self
            .request_deadline
            .is_some_and(|deadline| deadline.is_zero())
        {
            return Err(HardeningError::NonPositiveLimit("request_deadline"));
        }
        Ok(Hardening {
            guard: Arc::new(GuardPolicy {
                headers,
                site,
                in_flight: self.max_concurrency.map(InFlight::new),
                deadline: self.request_deadline,
                proxies,
            }),
            admission: Arc::new(Admission {
                gate,
                subject_rate,
                peer_rate,
                body_limit: BodyLimit(self.max_body_bytes),
            }),
            metadata,
            cors,
        })
    }

    fn host_rule(&self) -> HostPolicy {
        match (&self.hosts, self.bind) {
            (Some(policy), _) => policy.clone(),
            (None, Some(bind)) if bind.ip().is_loopback() => HostPolicy::Loopback {
                port: Some(bind.port()),
            },
            (None, Some(_)) => HostPolicy::AnyHost,
            (None, None) => HostPolicy::Loopback { port: None },
        }
    }

    fn origin_rule(&self) -> OriginPolicy {
        match (&self.origins, self.bind) {
            (Some(policy), _) => policy.clone(),
            (None, Some(bind)) if bind.ip().is_loopback() => OriginPolicy::Loopback {
                port: Some(bind.port()),
            },
            // A public server that lists its CORS origins admits those (added to this rule)
            // rather than every page on the web.
            (None, Some(_)) if !self.cors_origins.is_empty() => OriginPolicy::Allow(Vec::new()),
            (None, Some(_)) => OriginPolicy::AnyOrigin,
            (None, None) => OriginPolicy::Loopback { port: None },
        }
    }

    /// The authenticator and policy, refusing the pairings that would fail open or never admit.
    fn gate(&self, metadata_url: Option<&str>) -> Result<Option<Gate>, HardeningError> {
        match (&self.policy, &self.authenticator) {
            (AuthPolicy::Public, None) => Ok(None),
            (AuthPolicy::Public, Some(_)) => Err(HardeningError::UnprotectedAuthenticator),
            (AuthPolicy::RequireScopes(_), None) => Err(HardeningError::PolicyWithoutAuthenticator),
            (AuthPolicy::RequireScopes(scopes), Some(authenticator)) => {
                let challenges = Challenges::new(scopes, metadata_url)?;
                Ok(Some(Gate::new(
                    Arc::clone(authenticator),
                    scopes.clone(),
                    challenges,
                )))
            }
        }
    }
}

/// The limiter for `limit`, named `name` in a configuration error.
#[cfg(feature = "server")]
fn rate_limiter(
    limit: Option<RateLimit>,
    name: &'static str,
) -> Result<Option<RateLimiter>, HardeningError> {
    let Some(limit) = limit else {
        return Ok(None);
    };
    if !(limit.per_second.is_finite() && limit.per_second > 0.0) {
        return Err(HardeningError::NonPositiveLimit(name));
    }
    positive(name, limit.burst as usize)?;
    Ok(Some(RateLimiter::new(limit, MAX_RATE_KEYS)))
}

#[cfg(feature = "server")]
fn positive(name: &'static str, value: usize) -> Result<(), HardeningError> {
    if value == 0 {
        Err(HardeningError::NonPositiveLimit(name))
    } else {
        Ok(())
    }
}

/// The per-request admission state: who is calling, whether they may, and how much they may
/// send.
#[cfg(feature = "server")]
#[derive(Debug)]
pub(crate) struct Admission {
    gate: Option<Gate>,
    /// Buckets per authenticated subject.
    subject_rate: Option<RateLimiter>,
    /// Buckets per anonymous caller's address.
    peer_rate: Option<RateLimiter>,
    body_limit: BodyLimit,
}

#[cfg(feature = "server")]
impl Admission {
    /// Whether admission waits for an authenticator.
    fn authenticates(&self) -> bool {
        self.gate.is_some()
    }

    /// Authenticates, then charges the caller's bucket (`peer`, when the server knows it, for
    /// an anonymous caller). A failed authentication is charged to the peer's bucket, so
    /// guessing tokens is rate limited too.
    async fn admit(&self, request: &mut Request, peer: Option<SocketAddr>) -> Result<(), Refusal> {
        let Some(gate) = &self.gate else {
            return self.charge_caller(request.extensions(), peer);
        };
        match gate.admit(request.headers()).await {
            Ok(principal) => {
                tracing::debug!(subject = %principal.subject, "authenticated");
                // Charged to the principal in hand rather than found again among the
                // extensions it is about to join.
                charge_with(&self.subject_rate, || Some(RateKey::subject(&principal)))?;
                request.extensions_mut().insert(principal);
                Ok(())
            }
            Err(refusal) => {
                self.charge_caller(request.extensions(), peer)?;
                Err(refusal)
            }
        }
    }

    /// The rate charge and the body limit: all admission asks of a public caller behind the
    /// router-wide layers.
    fn charge_and_bound(&self, request: &mut Request) -> Result<(), Refusal> {
        self.charge(request)?;
        self.bound(request);
        Ok(())
    }

    /// Hands the routes behind the router-wide layers the body limit.
    fn bound(&self, request: &mut Request) {
        request.extensions_mut().insert(self.body_limit);
    }

    /// Charges the caller of a request that carries its peer as `ConnectInfo`.
    fn charge(&self, request: &Request) -> Result<(), Refusal> {
        self.charge_key(|| RateKey::of(request.extensions()))
    }

    /// Charges a caller whose address `peer` is handed over beside its request.
    fn charge_caller(
        &self,
        extensions: &Extensions,
        peer: Option<SocketAddr>,
    ) -> Result<(), Refusal> {
        self.charge_key(|| RateKey::of_caller(extensions, peer))
    }

    /// Charges the caller `key` finds, to its subject's bucket or its address's; the key is
    /// only worked out when a limit is set.
    fn charge_key(&self, key: impl FnOnce() -> Option<RateKey>) -> Result<(), Refusal> {
        if self.subject_rate.is_none() && self.peer_rate.is_none() {
            return Ok(());
        }
        match key() {
            Some(subject @ RateKey::Subject(_)) => {
                charge_with(&self.subject_rate, || Some(subject))
            }
            anonymous => charge_with(&self.peer_rate, || anonymous),
        }
    }
}

/// Charges the caller `key` names to `limiter`; the key is only worked out when it is set.
#[cfg(feature = "server")]
fn charge_with(
    limiter: &Option<RateLimiter>,
    key: impl FnOnce() -> Option<RateKey>,
) -> Result<(), Refusal> {
    match limiter {
        Some(limiter) => limiter.charge(key()),
        None => Ok(()),
    }
}

/// A validated hardening, ready to wrap routers. Cheap to clone.
#[cfg(feature = "server")]
#[derive(Debug, Clone)]
pub struct Hardening {
    guard: Arc<GuardPolicy>,
    admission: Arc<Admission>,
    metadata: Option<PublishedMetadata>,
    cors: Option<CorsLayer>,
}

#[cfg(feature = "server")]
impl Hardening {
    /// Wraps a transport router. Outermost first:
    ///
    /// 1. security headers — on every response, framework and refusal alike — and the framework's
    ///    bare 404/405/413 turned into refusal bodies;
    /// 2. `Host` and `Origin` checks (421, 403);
    /// 3. load shedding past the concurrency limit (503), and the request deadline (504);
    /// 4. the RFC 9728 metadata route and the unknown-path fallback, which are public;
    /// 5. with [`cors_origins`](HardeningConfig::cors_origins), CORS: a preflight is answered
    ///    here, before authentication, and every answer from here in names the allowed origin;
    /// 6. authentication (401/403), then the per-subject rate limit (429), then the body limit
    ///    handed to the routes as a [`BodyLimit`] extension — all before any transport route
    ///    runs, so no session is looked up for a caller that has proved nothing.
    ///
    /// Anonymous callers are rate limited per peer address, which axum provides only when the
    /// app is served with `into_make_service_with_connect_info::<SocketAddr>()`; with
    /// [`trusted_proxies`](HardeningConfig::trusted_proxies), the guard first replaces a trusted
    /// proxy's address with the client its forwarding header names.
    pub fn wrap(&self, router: Router) -> Router {
        // Each `Router::layer` puts another boxed, cloned-per-request route around every
        // endpoint, so the transport routes get both services as one layer rather than two;
        // the public routes (metadata, unknown paths) get the guard alone.
        let guard = GuardLayer(Arc::clone(&self.guard));
        let admit = AdmitLayer(Arc::clone(&self.admission));
        let unknown_path = tower::service_fn(|_: Request| {
            std::future::ready(Ok::<_, Infallible>(refuse_unknown_path()))
        });
        // With CORS, its layer goes between the two, on the public routes too: a page reads the
        // metadata document cross-origin, and a preflight for any path is answered.
        let Some(cors) = &self.cors else {
            let admitted = router.layer((guard.clone(), admit));
            let public = match self.metadata_router() {
                Some(metadata) => admitted.merge(metadata.layer(guard.clone())),
                None => admitted,
            };
            return public.fallback_service(guard.layer(unknown_path));
        };
        let admitted = router.layer((guard.clone(), cors.clone(), admit));
        let public = match self.metadata_router() {
            Some(metadata) => admitted.merge(metadata.layer((guard.clone(), cors.clone()))),
            None => admitted,
        };
        public.fallback_service((guard, cors.clone()).layer(unknown_path))
    }

    /// `service` behind the whole hardening as one endpoint, which the router mounts at its
    /// path and a server that owns its listener dispatches that path to.
    pub(crate) fn harden<S: AdmittedService>(&self, service: S) -> HardenedEndpoint<S> {
        HardenedEndpoint::new(
            Arc::clone(&self.guard),
            Arc::clone(&self.admission),
            self.cors.clone(),
            service,
        )
    }

    /// The RFC 9728 document route alone, for an application that nests the wrapped router
    /// under a prefix and must serve the document at its own root.
    pub fn metadata_router(&self) -> Option<Router> {
        let metadata = self.metadata.clone()?;
        let path = metadata.path.clone();
        let document = metadata.document;
        Some(Router::new().route(
            &path,
            axum::routing::get(move || serve_metadata(Arc::clone(&document))),
        ))
    }

    /// The `503` a listener answers a connection past its caps with, as HTTP/1.1 bytes.
    pub(crate) fn connection_refusal(&self) -> bytes::Bytes {
        self.guard.http1_refusal(&Refusal::TooManyConnections)
    }

    /// The body limit admission hands on: to a hardened endpoint with each request it admits,
    /// to the other routes as a [`BodyLimit`] extension.
    pub fn max_body_bytes(&self) -> usize {
        self.admission.body_limit.0
    }
}

/// Public by design (RFC 9728 §3): a client fetches it because it could not authenticate.
#[cfg(feature = "server")]
async fn serve_metadata(document: Arc<[u8]>) -> Response {
    let mut response = Response::new(Body::from(document.to_vec()));
    *response.status_mut() = StatusCode::OK;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

#[cfg(test)]
mod tests;
