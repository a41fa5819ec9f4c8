//! The two tower services the hardening is made of: [`Guard`], around the whole router (security
//! headers, bare framework errors, `Host`/`Origin`, load shedding, deadline), and [`Admit`],
//! around the transport routes only (authentication, rate limit, body limit).
//!
//! # Why two hand-written services instead of a stack of tower layers
//!
//! Each `Router::layer` and each `axum::middleware::from_fn` adds a boxed service hop and a boxed
//! future per request. Built from eight such layers (tower's `Timeout`, `LoadShed`,
//! `GlobalConcurrencyLimit` behind `HandleError`, plus four `from_fn` middlewares) the hardening
//! halved an echo server's throughput on loopback (≈25k → ≈12k req/s at 16 connections). These
//! two services use what tower's layers do — a `tokio::time` timer for the deadline, a count of
//! requests in flight that is refused rather than waited on for load shedding (an atomic
//! counter: a semaphore that is never waited on only adds a lock to every release) — and
//! [`Hardening::wrap`](super::Hardening::wrap) stacks them as one layer on the transport
//! routes. Neither boxes a future per request (axum's route already does); a refusal is boxed
//! (so an admitted request's future stays small), `Admit` boxes one while an authenticator is
//! awaited, and the deadline's timer is allocated only for an answer that has to wait.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::extract::{ConnectInfo, Request};
use axum::response::{IntoResponse, Response};
use futures::future::Either;
use tokio::time::Sleep;
use tower::{Layer, Service, ServiceExt as _};
use tower_http::cors::CorsLayer;

use super::origin::SiteCheck;
use super::proxy::TrustedProxies;
use super::refusal::Refusal;
use super::security_headers::{AnswerHeaders, ParsedSecurityHeaders, refuse_bare_error};
use super::{Admission, BodyLimit};

type ResponseFuture = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

/// A response extension naming the `Cache-Control` a public document answers with (an agent
/// card a client may cache), which the security headers' default `no-store` then leaves alone.
/// Only a handler that means its answer to be cached sets it.
#[derive(Debug, Clone)]
pub struct Cacheable(pub http::HeaderValue);

/// What the outermost service enforces on every request, matched or not.
#[derive(Debug)]
pub(crate) struct GuardPolicy {
    pub(crate) headers: ParsedSecurityHeaders,
    pub(crate) site: SiteCheck,
    pub(crate) in_flight: Option<InFlight>,
    pub(crate) deadline: Option<Duration>,
    pub(crate) proxies: Option<TrustedProxies>,
}

impl GuardPolicy {
    /// The checks that need no waiting: `Host`/`Origin`, then a place among the requests in
    /// flight. Shed rather than queue: a place is taken now or the request is refused with 503.
    /// The place is held until the response head exists; a stream's body is not counted.
    fn screen(&self, request: &Request) -> Result<Occupancy, Refusal> {
        self.site.check(request.headers(), request.uri())?;
        match &self.in_flight {
            Some(in_flight) if !in_flight.try_enter() => Err(Refusal::Overloaded),
            Some(_) => Ok(Occupancy::Holding),
            None => Ok(Occupancy::Unlimited),
        }
    }

    /// Gives back the place `screen` took, once.
    fn leave(&self, occupancy: &mut Occupancy) {
        if let (Occupancy::Holding, Some(in_flight)) = (*occupancy, &self.in_flight) {
            in_flight.leave();
        }
        *occupancy = Occupancy::Left;
    }

    /// What every response leaves through: bare framework errors get a body, all get headers
    /// (a [`Cacheable`] response keeps its own `Cache-Control`).
    fn finish(&self, response: &mut Response) {
        refuse_bare_error(response);
        let cacheable = response.extensions_mut().remove::<Cacheable>();
        self.headers.stamp(response.headers_mut());
        if let Some(Cacheable(policy)) = cacheable {
            response
                .headers_mut()
                .insert(http::header::CACHE_CONTROL, policy);
        }
    }

    /// `refusal` as a whole HTTP/1.1 answer that closes its connection, security headers
    /// included: what a listener writes to a connection it will not serve.
    pub(crate) fn http1_refusal(&self, refusal: &Refusal) -> bytes::Bytes {
        let body = refusal.body_bytes();
        let mut response = refusal.clone().into_response();
        self.finish(&mut response);
        let status = response.status();
        let mut out = format!(
            "HTTP/1.1 {} {}\r\n",
            status.as_str(),
            status.canonical_reason().unwrap_or_default()
        )
        .into_bytes();
        for (name, value) in response.headers() {
            out.extend_from_slice(name.as_str().as_bytes());
            out.extend_from_slice(b": ");
            out.extend_from_slice(value.as_bytes());
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(format!("content-length: {}\r\n", body.len()).as_bytes());
        out.extend_from_slice(b"connection: close\r\n\r\n");
        out.extend_from_slice(&body);
        out.into()
    }
}

fn into_response(result: Result<Response, Infallible>) -> Response {
    match result {
        Ok(response) => response,
        Err(never) => match never {},
    }
}

/// The concurrency limit: how many requests may be in flight at once, and how many are.
#[derive(Debug)]
pub(crate) struct InFlight {
    limit: usize,
    count: AtomicUsize,
}

impl InFlight {
    pub(crate) fn new(limit: usize) -> Self {
        Self {
            limit,
            count: AtomicUsize::new(0),
        }
    }

    fn try_enter(&self) -> bool {
        let entered = self
            .count
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |count| {
                (count < self.limit).then_some(count + 1)
            });
        entered.is_ok()
    }

    fn leave(&self) {
        self.count.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Whether a request holds a place among those in flight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Occupancy {
    /// There is no limit to hold a place under.
    Unlimited,
    Holding,
    /// The place was given back.
    Left,
}

/// Layer producing [`Guard`].
#[derive(Debug, Clone)]
pub(crate) struct GuardLayer(pub(crate) Arc<GuardPolicy>);

impl<S> Layer<S> for GuardLayer {
    type Service = Guard<S>;

    fn layer(&self, inner: S) -> Guard<S> {
        Guard {
            inner,
            policy: Arc::clone(&self.0),
        }
    }
}

/// The outermost service: every response it returns carries the security headers.
#[derive(Debug, Clone)]
pub(crate) struct Guard<S> {
    inner: S,
    policy: Arc<GuardPolicy>,
}

impl<S> Service<Request> for Guard<S>
where
    S: Service<Request, Response = Response, Error = Infallible> + Clone + Send + 'static,
    S::Future: Unpin + Send + 'static,
{
    type Response = Response;
    type Error = Infallible;
    type Future = GuardFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        // `poll_ready` readied `inner`, so it is called directly rather than cloned.
        guard(&self.policy, request, |request| self.inner.call(request))
    }
}

/// What [`Guard`] does with a request: screen it, then answer through `inner` or refuse.
fn guard<F>(
    policy: &Arc<GuardPolicy>,
    mut request: Request,
    inner: impl FnOnce(Request) -> F,
) -> GuardFuture<F> {
    if let Some(proxies) = &policy.proxies {
        proxies.resolve(&mut request);
    }
    match policy.screen(&request) {
        Ok(occupancy) => GuardFuture::answering(policy, occupancy, inner(request)),
        Err(refusal) => refused(policy, refusal),
    }
}

impl<F> GuardFuture<F> {
    /// A request [`GuardPolicy::screen`] let through, answered by `answer`.
    fn answering(policy: &Arc<GuardPolicy>, occupancy: Occupancy, answer: F) -> Self {
        GuardFuture(GuardState::Answering(Answering {
            answer,
            policy: Arc::clone(policy),
            occupancy,
            timer: None,
        }))
    }
}

/// A request [`guard`] refused, answered without calling what it guards.
#[cold]
#[inline(never)]
fn refused<F>(policy: &GuardPolicy, refusal: Refusal) -> GuardFuture<F> {
    let mut response = refusal.into_response();
    policy.finish(&mut response);
    GuardFuture(GuardState::Refused(Some(Box::new(response))))
}

/// What [`Guard`] returns. A named future rather than a boxed one: axum boxes each route's
/// future once already, and a second box per request (with a copy of the whole route future
/// into it) bought nothing.
pub(crate) struct GuardFuture<F>(GuardState<F>);

/// A response is boxed while it waits to be taken, so the future stays a few words long: a
/// server copies the future it gets for each request into its own slot.
enum GuardState<F> {
    /// Refused before the inner service ran; the finished refusal, until it is taken.
    Refused(Option<Box<Response>>),
    Answering(Answering<F>),
}

/// The inner service's answer in progress, with what finishing it needs.
struct Answering<F> {
    answer: F,
    policy: Arc<GuardPolicy>,
    /// Held until the response head exists (or the answer is dropped unfinished); a stream's
    /// body is not counted.
    occupancy: Occupancy,
    /// The deadline's timer, armed only once the answer has to wait: most answers are ready
    /// at their first poll, and those never touch the timer wheel. The first poll follows the
    /// call at once, so the deadline still runs from the request's arrival.
    timer: Option<Pin<Box<Sleep>>>,
}

impl<F> Answering<F>
where
    F: Future<Output = Result<Response, Infallible>> + Unpin,
{
    /// The response head: the inner answer, or a refusal once the deadline passes.
    fn poll_head(&mut self, cx: &mut Context<'_>) -> Poll<Response> {
        if let Poll::Ready(result) = Pin::new(&mut self.answer).poll(cx) {
            return Poll::Ready(into_response(result));
        }
        poll_deadline(&mut self.timer, self.policy.deadline, cx)
    }
}

/// An answer that is not ready yet waits on the deadline, its timer armed at the first wait.
/// Out of line and not generic: most answers are ready at their first poll.
#[inline(never)]
fn poll_deadline(
    timer: &mut Option<Pin<Box<Sleep>>>,
    deadline: Option<Duration>,
    cx: &mut Context<'_>,
) -> Poll<Response> {
    let Some(deadline) = deadline else {
        return Poll::Pending;
    };
    let timer = timer.get_or_insert_with(|| Box::pin(tokio::time::sleep(deadline)));
    match timer.as_mut().poll(cx) {
        Poll::Ready(()) => Poll::Ready(Refusal::DeadlineExceeded.into_response()),
        Poll::Pending => Poll::Pending,
    }
}

impl<F> Drop for Answering<F> {
    fn drop(&mut self) {
        // An answer abandoned before its head (the client went away) gives its place back too.
        self.policy.leave(&mut self.occupancy);
    }
}

impl<F> Future for GuardFuture<F>
where
    F: Future<Output = Result<Response, Infallible>> + Unpin,
{
    type Output = Result<Response, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match &mut self.get_mut().0 {
            // Polled again after completion: an empty response rather than a panic.
            GuardState::Refused(refused) => Poll::Ready(Ok(refused
                .take()
                .map(|response| *response)
                .unwrap_or_default())),
            GuardState::Answering(answering) => {
                let mut response = std::task::ready!(answering.poll_head(cx));
                answering.policy.leave(&mut answering.occupancy);
                answering.policy.finish(&mut response);
                Poll::Ready(Ok(response))
            }
        }
    }
}

/// Layer producing [`Admit`].
#[derive(Debug, Clone)]
pub(crate) struct AdmitLayer(pub(crate) Arc<Admission>);

impl<S> Layer<S> for AdmitLayer {
    type Service = Admit<S>;

    fn layer(&self, inner: S) -> Admit<S> {
        Admit {
            inner,
            admission: Arc::clone(&self.0),
        }
    }
}

/// The service in front of the transport routes: nothing reaches a route (and so nothing looks
/// up a session) before the caller is authenticated and charged.
#[derive(Debug, Clone)]
pub(crate) struct Admit<S> {
    inner: S,
    admission: Arc<Admission>,
}

/// What [`Admit`] returns: the route's own future when admission needed no waiting (no box
/// per request), or a boxed one: a refusal, or an authenticator to be awaited. A refusal is
/// boxed rather than held inline so the common future stays small.
pub(crate) type AdmitFuture<F> = Either<F, ResponseFuture>;

impl<S> Service<Request> for Admit<S>
where
    S: Service<Request, Response = Response, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    type Response = Response;
    type Error = Infallible;
    type Future = AdmitFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: Request) -> Self::Future {
        if !self.admission.authenticates() {
            // Nothing to wait for: admit now and call the service `poll_ready` readied.
            let admitted = self.admission.charge_and_bound(&mut request);
            return admitted_or_refused(admitted, || self.inner.call(request));
        }
        // Authentication waits, so the readied service is kept for after it and a fresh clone
        // takes its place.
        let fresh = self.inner.clone();
        let inner = std::mem::replace(&mut self.inner, fresh);
        admit_later(&self.admission, request, inner)
    }
}

/// Admission that needed no waiting: the answer when `admitted`, the refusal at once otherwise.
fn admitted_or_refused<F>(
    admitted: Result<(), Refusal>,
    answer: impl FnOnce() -> F,
) -> AdmitFuture<F> {
    match admitted {
        Ok(()) => Either::Left(answer()),
        Err(refusal) => refused_admission(refusal),
    }
}

#[cold]
#[inline(never)]
fn refused_admission<F>(refusal: Refusal) -> AdmitFuture<F> {
    Either::Right(Box::pin(std::future::ready(Ok(refusal.into_response()))))
}

/// Admission that awaits the authenticator, then answers through `inner` (owned, as it is
/// called only after the wait).
fn admit_later<S, F>(admission: &Arc<Admission>, mut request: Request, inner: S) -> AdmitFuture<F>
where
    S: Service<Request, Response = Response, Error = Infallible> + Send + 'static,
    S::Future: Send + 'static,
{
    let admission = Arc::clone(admission);
    Either::Right(Box::pin(async move {
        let peer = request
            .extensions()
            .get::<ConnectInfo<SocketAddr>>()
            .map(|info| info.0);
        match admission.admit(&mut request, peer).await {
            Ok(()) => {
                admission.bound(&mut request);
                inner.oneshot(request).await
            }
            Err(refusal) => Ok(refusal.into_response()),
        }
    }))
}

/// What admission hands a hardened endpoint with each request it admits: the body limit (from
/// the hardening's one [`Admission`], never looked up again), the caller's address when the
/// server knows it (a trusted proxy's already replaced by the client it forwarded for), and
/// the headers its JSON answer is built with (the guard's own, prepared once).
#[derive(Debug, Clone)]
pub(crate) struct Admitted {
    pub(crate) body_limit: BodyLimit,
    pub(crate) peer: Option<SocketAddr>,
    pub(crate) answer_headers: AnswerHeaders,
}

impl Admitted {
    /// What a service mounted behind the router-wide layers ([`super::Hardening::wrap`]) is
    /// admitted with: the [`BodyLimit`] extension [`Admit`] hands down, or `unhardened` when no
    /// hardening runs; the peer stays in the request's `ConnectInfo`.
    pub(crate) fn behind_layers(request: &Request, unhardened: usize) -> Self {
        let body_limit = request
            .extensions()
            .get::<BodyLimit>()
            .copied()
            .unwrap_or(BodyLimit(unhardened));
        Self {
            body_limit,
            peer: None,
            // The router-wide guard stamps what the transport answers with.
            answer_headers: AnswerHeaders::default(),
        }
    }
}

/// A service a [`HardenedEndpoint`] admits requests to, called through `&self` with the
/// [`Admitted`] value rather than request extensions (the first insert allocates the map, and
/// each is looked up again).
pub(crate) trait AdmittedService: Clone + Send + Sync + 'static {
    type Future: Future<Output = Result<Response, Infallible>> + Send + Unpin + 'static;

    fn serve(&self, request: Request, admitted: Admitted) -> Self::Future;
}

/// One transport endpoint behind the whole hardening: what [`Guard`], CORS and [`Admit`]
/// enforce, in that order, as one service. Both the axum router (as the route at the mount's
/// path) and a server that owns its listener (dispatching the path to it directly) call
/// [`Self::serve`]; cloning it, as the router does per request, is one reference count.
pub(crate) struct HardenedEndpoint<S>(Arc<Hardened<S>>);

struct Hardened<S> {
    policy: Arc<GuardPolicy>,
    admission: Arc<Admission>,
    cors: Option<CorsLayer>,
    service: S,
}

impl<S> Clone for HardenedEndpoint<S> {
    fn clone(&self) -> Self {
        Self(Arc::clone(&self.0))
    }
}

/// What a [`HardenedEndpoint`] returns.
pub(crate) type HardenedFuture<F> = GuardFuture<AdmitFuture<F>>;

impl<S: AdmittedService> HardenedEndpoint<S> {
    pub(crate) fn new(
        policy: Arc<GuardPolicy>,
        admission: Arc<Admission>,
        cors: Option<CorsLayer>,
        service: S,
    ) -> Self {
        Self(Arc::new(Hardened {
            policy,
            admission,
            cors,
            service,
        }))
    }

    /// Screens, admits and answers a request from `peer` (when the server knows it), spelt
    /// out rather than through [`guard`] and [`admitted_or_refused`]: their closures would each
    /// take a copy of the request.
    pub(crate) fn serve(
        &self,
        request: Request,
        peer: Option<SocketAddr>,
    ) -> HardenedFuture<S::Future> {
        let hardened = &*self.0;
        let peer = match (&hardened.policy.proxies, peer) {
            (Some(proxies), Some(peer)) => Some(proxies.client(request.headers(), peer)),
            (_, peer) => peer,
        };
        let occupancy = match hardened.policy.screen(&request) {
            Ok(occupancy) => occupancy,
            Err(refusal) => return refused(&hardened.policy, refusal),
        };
        let answer = if hardened.admission.authenticates() || hardened.cors.is_some() {
            self.admit_later(request, peer)
        } else {
            match hardened.admission.charge_caller(request.extensions(), peer) {
                Ok(()) => Either::Left(hardened.service.serve(request, hardened.admitted(peer))),
                Err(refusal) => refused_admission(refusal),
            }
        };
        GuardFuture::answering(&hardened.policy, occupancy, answer)
    }

    /// The path that waits: for CORS (which answers a preflight before admission and names
    /// the allowed origin on every answer) or for an authenticator.
    #[inline(never)]
    fn admit_later(&self, request: Request, peer: Option<SocketAddr>) -> AdmitFuture<S::Future> {
        let admitting = Admitting {
            endpoint: self.clone(),
            peer,
        };
        match &self.0.cors {
            Some(cors) => Either::Right(Box::pin(cors.layer(admitting).oneshot(request))),
            None => Either::Right(Box::pin(admitting.admit(request))),
        }
    }
}

impl<S> Hardened<S> {
    fn admitted(&self, peer: Option<SocketAddr>) -> Admitted {
        Admitted {
            body_limit: self.admission.body_limit,
            peer,
            answer_headers: self.policy.headers.answer_headers(),
        }
    }
}

/// The endpoint as the route the axum router holds at its path: the peer is the request's
/// `ConnectInfo`, as axum's own server leaves it.
impl<S: AdmittedService> Service<Request> for HardenedEndpoint<S> {
    type Response = Response;
    type Error = Infallible;
    type Future = HardenedFuture<S::Future>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request) -> Self::Future {
        let peer = request
            .extensions()
            .get::<ConnectInfo<SocketAddr>>()
            .map(|info| info.0);
        self.serve(request, peer)
    }
}

/// Admission that waits, then the endpoint's service; a tower service so that CORS can sit
/// in front of it.
#[derive(Clone)]
struct Admitting<S> {
    endpoint: HardenedEndpoint<S>,
    peer: Option<SocketAddr>,
}

impl<S: AdmittedService> Admitting<S> {
    async fn admit(self, mut request: Request) -> Result<Response, Infallible> {
        let hardened = &*self.endpoint.0;
        match hardened.admission.admit(&mut request, self.peer).await {
            Ok(()) => {
                hardened
                    .service
                    .serve(request, hardened.admitted(self.peer))
                    .await
            }
            Err(refusal) => Ok(refusal.into_response()),
        }
    }
}

impl<S: AdmittedService> Service<Request> for Admitting<S> {
    type Response = Response;
    type Error = Infallible;
    type Future = ResponseFuture;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request) -> ResponseFuture {
        Box::pin(self.clone().admit(request))
    }
}
