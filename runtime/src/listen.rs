//! Serving on a listener this crate owns: the accept loop (TCP_NODELAY on every socket, the
//! peer's address handed down with each request, the connection caps of [`crate::connections`],
//! accept errors waited out without spinning), each connection served by hyper over HTTP/1.1 or
//! HTTP/2 with upgrades (WebSocket transports) and closed by the watchdog when it sends no head
//! in time or goes idle, and the drain: stop accepting, let every connection finish its
//! in-flight requests and answer streams until the drain deadline, then end what is left.
//!
//! A request for a mounted transport's exact path goes straight to that transport's hardened
//! endpoint; everything else goes through the axum router, which holds the same endpoints. The
//! router would clone the matched route's boxed service, box its future and record the matched
//! path for every request; a transport that owns its path outright needs none of that. The
//! peer's address goes down the direct path as a plain value; only a request for the router
//! carries it as the `ConnectInfo` extension its layers and extractors look for.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{ConnectInfo, Request};
use axum::response::Response;
use bytes::Bytes;
use futures::FutureExt as _;
use futures::future::Either;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto::Builder;
use tokio::net::{TcpListener, TcpStream};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tower::ServiceExt as _;
use tower::util::Oneshot;

use crate::connections::{Connections, ListenerConfig, Metered, Tracked, Verdict};
use crate::hardening::{AdmittedService, HardenedEndpoint, HardenedFuture};
use crate::http::EndpointFuture;

/// A mounted transport's one hardened endpoint, type-erased: the router holds it as the route
/// at the mount's path, and a server that owns its listener dispatches that path to it.
pub(crate) trait MountedEndpoint: Send + Sync {
    /// Screens, admits and answers a request from `peer`, when the server knows it.
    fn serve(&self, request: Request, peer: Option<SocketAddr>) -> HardenedFuture<EndpointFuture>;

    /// The endpoint as the route at `path`, for the router.
    fn route(&self, path: &str) -> Router;
}

impl<S: AdmittedService<Future = EndpointFuture>> MountedEndpoint for HardenedEndpoint<S> {
    fn serve(&self, request: Request, peer: Option<SocketAddr>) -> HardenedFuture<EndpointFuture> {
        HardenedEndpoint::serve(self, request, peer)
    }

    fn route(&self, path: &str) -> Router {
        Router::new().route_service(path, self.clone())
    }
}

/// A transport served at exactly `path`.
pub(crate) struct DirectMount {
    pub(crate) path: Box<str>,
    pub(crate) endpoint: Arc<dyn MountedEndpoint>,
}

impl DirectMount {
    /// Whether `path` can be matched by plain equality: a path with captures or wildcards is
    /// left to the router, which knows their syntax.
    pub(crate) fn is_literal(path: &str) -> bool {
        !path.contains(['{', '}', '*'])
    }
}

/// Everything a server answers: its directly served mounts, and the router for the rest.
pub(crate) struct App {
    pub(crate) direct: Box<[DirectMount]>,
    pub(crate) router: Router,
}

/// A few words long: hyper copies each request's future into its connection's slot, so the
/// router's future, which holds the whole request until it is first polled, is boxed.
type AppFuture = Either<HardenedFuture<EndpointFuture>, Pin<Box<Oneshot<Router, Request>>>>;

impl App {
    fn serve(&self, request: Request, peer: SocketAddr) -> AppFuture {
        let path = request.uri().path();
        match self.direct.iter().find(|mount| *mount.path == *path) {
            Some(mount) => Either::Left(mount.endpoint.serve(request, Some(peer))),
            None => self.route(request, peer),
        }
    }

    /// A request for the router, which finds the peer as axum's own server would leave it.
    #[inline(never)]
    fn route(&self, mut request: Request, peer: SocketAddr) -> AppFuture {
        request.extensions_mut().insert(ConnectInfo(peer));
        Either::Right(Box::pin(self.router.clone().oneshot(request)))
    }
}

/// One connection's view of the app: its requests are served with the peer's address, and
/// counted for the watchdog.
struct Connection {
    app: Arc<App>,
    peer: SocketAddr,
    tracked: Arc<Tracked>,
}

impl hyper::service::Service<http::Request<Incoming>> for Connection {
    type Response = Response;
    type Error = Infallible;
    type Future = Counted<AppFuture>;

    fn call(&self, request: http::Request<Incoming>) -> Counted<AppFuture> {
        self.tracked.request_started();
        Counted {
            answer: self.app.serve(request.map(Body::new), self.peer),
            _finish: Finish(Arc::clone(&self.tracked)),
        }
    }
}

/// A request's answer, counted as finished once its head is ready (or it is dropped).
struct Counted<F> {
    answer: F,
    _finish: Finish,
}

impl<F: Future + Unpin> Future for Counted<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        Pin::new(&mut self.answer).poll(cx)
    }
}

/// Counts a request as finished when dropped: hyper drops an answer's future once its head is
/// ready, and an abandoned one is finished too.
struct Finish(Arc<Tracked>);

impl Drop for Finish {
    fn drop(&mut self) {
        self.0.request_finished();
    }
}

/// What the accept loop needs beside the app: how connections are treated, the tokens a drain
/// fires, and the bytes a refused connection is answered with.
pub(crate) struct Lifecycle {
    pub(crate) config: ListenerConfig,
    /// Fired when the drain begins: streams that carry no answer end.
    pub(crate) drain: CancellationToken,
    /// Fired at the drain deadline (or at once, by `Server::shutdown`): every stream still
    /// open ends, telling its client to retry.
    pub(crate) shutdown: CancellationToken,
    /// A complete HTTP/1.1 `503` answer, security headers included.
    pub(crate) refusal: Bytes,
}

/// How long streams cut at the drain deadline get to write their last words before what is
/// left of every connection is dropped.
const LAST_WORDS: Duration = Duration::from_secs(1);

/// Serves `app` on `listener` until `stop` completes, then drains: no new connection, every
/// in-flight request and answer stream finishes, until the drain deadline (or `force`).
pub(crate) async fn serve(
    listener: TcpListener,
    app: App,
    lifecycle: Lifecycle,
    stop: impl Future<Output = ()>,
    force: impl Future<Output = ()>,
) {
    let app = Arc::new(app);
    let connections = Connections::new(lifecycle.config.clone());
    let watchdog = tokio::spawn(Connections::watch(Arc::downgrade(&connections)));
    let tasks = TaskTracker::new();
    let server = Arc::new(Shutdown::default());
    accept_until(
        &listener,
        &app,
        &connections,
        &tasks,
        &server,
        &lifecycle,
        stop,
    )
    .await;
    drop(listener);
    let started = Instant::now();
    let open = connections.open();
    tracing::info!(open, "draining");
    lifecycle.drain.cancel();
    server.begin(Phase::Draining);
    tasks.close();
    let mut force = std::pin::pin!(force);
    let drained = tokio::select! {
        biased;
        () = tasks.wait() => true,
        () = lifecycle.shutdown.cancelled() => false,
        () = tokio::time::sleep(lifecycle.config.drain_deadline) => false,
        () = &mut force => false,
    };
    if !drained {
        tracing::info!(
            open = connections.open(),
            "drain deadline: ending what is left"
        );
        lifecycle.shutdown.cancel();
        let _ = tokio::time::timeout(LAST_WORDS, tasks.wait()).await;
        server.begin(Phase::Aborting);
        tasks.wait().await;
    }
    lifecycle.shutdown.cancel();
    watchdog.abort();
    tracing::info!(
        elapsed_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        drained,
        "stopped"
    );
}

/// The accept loop, until `stop`: each connection admitted under the caps is served on its own
/// task, any other is answered `503` and closed at once, and failed accepts are waited out
/// briefly (never spun on; out of descriptors, the oldest unproven connection makes room).
async fn accept_until(
    listener: &TcpListener,
    app: &Arc<App>,
    connections: &Connections,
    tasks: &TaskTracker,
    server: &Arc<Shutdown>,
    lifecycle: &Lifecycle,
    stop: impl Future<Output = ()>,
) {
    let mut stop = std::pin::pin!(stop);
    let mut spare = spare_descriptor();
    let mut backoff = Backoff::default();
    loop {
        let accepted = tokio::select! {
            () = &mut stop => return,
            accepted = listener.accept() => accepted,
        };
        let wait = match accepted {
            Ok((stream, peer)) => {
                backoff.reset();
                set_nodelay(&stream);
                match connections.admit(peer.ip()) {
                    Some(registration) => {
                        let service = Connection {
                            app: Arc::clone(app),
                            peer,
                            tracked: Arc::clone(registration.tracked()),
                        };
                        let io = Metered::new(stream, registration);
                        tasks.spawn(serve_connection(io, service, Arc::clone(server)));
                    }
                    None => refuse(stream, &lifecycle.refusal),
                }
                continue;
            }
            Err(error) if out_of_descriptors(&error) => {
                connections.evict_for_descriptor();
                refuse_with_spare(listener, &mut spare, &lifecycle.refusal);
                backoff.next(&error)
            }
            Err(error) if aborted_before_accept(&error) => continue,
            Err(error) => backoff.next(&error),
        };
        tokio::select! {
            () = &mut stop => return,
            () = tokio::time::sleep(wait) => {}
        }
    }
}

/// Answers a connection that cannot be served with the prepared `503` and closes it, without
/// waiting: what the socket cannot take at once is not sent.
fn refuse(stream: TcpStream, refusal: &[u8]) {
    tracing::debug!("connection refused: a connection cap is reached");
    let _ = stream.try_write(refusal);
    // Whatever the client already sent is read and dropped, so the close is a plain FIN
    // rather than a reset that could discard the answer before the client reads it.
    let mut discard = [0; 1024];
    while matches!(stream.try_read(&mut discard), Ok(read) if read > 0) {}
}

/// Out of descriptors, a connection waits in the backlog and every accept fails: the spare
/// descriptor is given up so that one can be accepted, answered `503` and closed, then taken
/// again.
fn refuse_with_spare(listener: &TcpListener, spare: &mut Option<std::fs::File>, refusal: &[u8]) {
    if spare.take().is_none() {
        return;
    }
    if let Some(Ok((stream, _))) = listener.accept().now_or_never() {
        refuse(stream, refusal);
    }
    *spare = spare_descriptor();
}

/// A descriptor held in reserve for [`refuse_with_spare`].
fn spare_descriptor() -> Option<std::fs::File> {
    std::fs::File::open("/dev/null").ok()
}

/// `EMFILE` or `ENFILE` (the same numbers on Linux and the BSDs).
fn out_of_descriptors(error: &std::io::Error) -> bool {
    matches!(error.raw_os_error(), Some(23 | 24))
}

/// A connection that died before it was accepted: nothing to wait out.
fn aborted_before_accept(error: &std::io::Error) -> bool {
    use std::io::ErrorKind;
    matches!(
        error.kind(),
        ErrorKind::ConnectionAborted | ErrorKind::ConnectionReset | ErrorKind::ConnectionRefused
    )
}

/// How long the accept loop waits after a failed accept: 10 ms, doubling while accepts keep
/// failing, at most a second; any accepted connection starts it again.
#[derive(Debug, Default)]
struct Backoff {
    failures: u32,
}

impl Backoff {
    fn reset(&mut self) {
        self.failures = 0;
    }

    fn next(&mut self, error: &std::io::Error) -> Duration {
        let wait = Duration::from_millis(10)
            .saturating_mul(1 << self.failures.min(7))
            .min(Duration::from_secs(1));
        if self.failures == 0 {
            tracing::error!(%error, "accept failed; waiting before the next");
        }
        self.failures = self.failures.saturating_add(1);
        wait
    }
}

async fn serve_connection(io: Metered<TcpStream>, service: Connection, server: Arc<Shutdown>) {
    let tracked = Arc::clone(&service.tracked);
    let mut builder = Builder::new(TokioExecutor::new());
    // HTTP/2 WebSockets (RFC 8441) ride on extended CONNECT.
    builder.http2().enable_connect_protocol();
    let connection = builder.serve_connection_with_upgrades(TokioIo::new(io), service);
    let mut connection = std::pin::pin!(connection);
    let outcome = tokio::select! {
        biased;
        outcome = connection.as_mut() => Some(outcome),
        interrupt = Watched::new(&server, Phase::Draining, &tracked) => match interrupt {
            Interrupt::Drain => {
                // Finishes the requests in flight, then closes; answer streams finish too, and
                // end at the drain deadline if they have not.
                connection.as_mut().graceful_shutdown();
                tokio::select! {
                    biased;
                    outcome = connection.as_mut() => Some(outcome),
                    interrupt = Watched::new(&server, Phase::Aborting, &tracked) => {
                        interrupted(interrupt, &tracked)
                    }
                }
            }
            interrupt => interrupted(interrupt, &tracked),
        }
    };
    if let Some(Err(error)) = outcome {
        tracing::trace!(%error, "connection ended with an error");
    }
    // An upgraded connection's socket lives on in its protocol's hands, and leaves the
    // watchdog's care; its place is given back when that socket closes.
    tracked.detach();
}

/// Logs why a connection is dropped before it ended on its own.
fn interrupted(interrupt: Interrupt, tracked: &Tracked) -> Option<Result<(), BoxError>> {
    let reason = match interrupt {
        Interrupt::Verdict => tracked.verdict().reason(),
        Interrupt::Drain | Interrupt::Abort => "the drain deadline passed",
    };
    tracing::debug!(reason, "connection closed");
    None
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// How far the server is in stopping.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
enum Phase {
    /// No new connections; those open finish what they are doing.
    Draining = 1,
    /// The drain deadline passed: what is left is dropped.
    Aborting = 2,
}

/// The server's phase, as its connections watch for it (0 while serving): a number, and a
/// token per phase that wakes them. A token's own `is_cancelled` takes a lock, and a
/// connection looks at every wake-up.
#[derive(Default)]
struct Shutdown {
    phase: AtomicU8,
    draining: CancellationToken,
    aborting: CancellationToken,
}

impl Shutdown {
    /// Moves to `phase`, then wakes every connection waiting for it, so a woken one finds it.
    fn begin(&self, phase: Phase) {
        self.phase.fetch_max(phase as u8, Ordering::Release);
        match phase {
            Phase::Draining => self.draining.cancel(),
            Phase::Aborting => self.aborting.cancel(),
        }
    }

    fn has_reached(&self, phase: Phase) -> bool {
        self.phase.load(Ordering::Acquire) >= phase as u8
    }

    fn token(&self, phase: Phase) -> &CancellationToken {
        match phase {
            Phase::Draining => &self.draining,
            Phase::Aborting => &self.aborting,
        }
    }
}

/// Why a connection stops being served as usual.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Interrupt {
    Drain,
    Abort,
    /// The watchdog or a cap closed it.
    Verdict,
}

/// Completes once the server reaches a phase or the connection is given a verdict. A
/// cancellation future re-registers its waker under a lock at every poll, and a connection's
/// task is polled for every read and write; this one registers again only when the task's
/// waker changes, and otherwise reads two numbers.
struct Watched<'a> {
    server: &'a Shutdown,
    phase: Phase,
    tracked: &'a Tracked,
    cancelled: Pin<Box<tokio_util::sync::WaitForCancellationFuture<'a>>>,
    registered: Option<std::task::Waker>,
}

impl<'a> Watched<'a> {
    fn new(server: &'a Shutdown, phase: Phase, tracked: &'a Tracked) -> Self {
        Self {
            server,
            phase,
            tracked,
            cancelled: Box::pin(server.token(phase).cancelled()),
            registered: None,
        }
    }

    fn interrupt(&self) -> Option<Interrupt> {
        if self.tracked.verdict() != Verdict::Open {
            return Some(Interrupt::Verdict);
        }
        self.server
            .has_reached(self.phase)
            .then_some(match self.phase {
                Phase::Aborting => Interrupt::Abort,
                Phase::Draining => Interrupt::Drain,
            })
    }
}

impl Future for Watched<'_> {
    type Output = Interrupt;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Interrupt> {
        if let Some(interrupt) = self.interrupt() {
            return Poll::Ready(interrupt);
        }
        let current = self
            .registered
            .as_ref()
            .is_some_and(|waker| waker.will_wake(cx.waker()));
        if current {
            return Poll::Pending;
        }
        self.tracked.register(cx.waker());
        let _ = self.cancelled.as_mut().poll(cx);
        self.registered = Some(cx.waker().clone());
        // Looked at again after registering, so a verdict or phase set meanwhile is not missed.
        match self.interrupt() {
            Some(interrupt) => Poll::Ready(interrupt),
            None => Poll::Pending,
        }
    }
}

/// Disables Nagle's algorithm: without it a small SSE write waits for the peer's delayed ACK
/// (about 40 ms).
pub(crate) fn set_nodelay(stream: &TcpStream) {
    if let Err(error) = stream.set_nodelay(true) {
        tracing::debug!(%error, "could not set TCP_NODELAY");
    }
}
