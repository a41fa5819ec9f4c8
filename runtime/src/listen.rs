//! Serving on a listener this crate owns: the accept loop (TCP_NODELAY on every socket, the
//! peer's address handed down with each request, accept errors survived), each connection
//! served by hyper over HTTP/1.1 or HTTP/2 with upgrades (WebSocket transports), and graceful
//! shutdown: stop accepting, let every connection finish its in-flight requests, wait for all
//! of them.
//!
//! A request for a mounted transport's exact path goes straight to that transport's hardened
//! service; everything else goes through the axum router, which holds the same mounts. The
//! router would clone the matched route's boxed service, box its future and record the matched
//! path for every request; a transport that owns its path outright needs none of that. The
//! peer's address goes down the direct path as a plain value; only a request for the router
//! carries it as the `ConnectInfo` extension its layers and extractors look for.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{ConnectInfo, Request};
use axum::response::Response;
use futures::future::Either;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto::Builder;
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tower::ServiceExt as _;
use tower::util::Oneshot;

use crate::hardening::{HardenedFuture, HardenedShared, SharedService};
use crate::http::EndpointFuture;

/// A mounted transport hardened as a whole, called through `&self`.
pub(crate) trait DirectRoute: Send + Sync {
    fn serve(&self, request: Request, peer: SocketAddr) -> HardenedFuture<EndpointFuture>;
}

impl<S: SharedService<Future = EndpointFuture>> DirectRoute for HardenedShared<S> {
    fn serve(&self, request: Request, peer: SocketAddr) -> HardenedFuture<EndpointFuture> {
        HardenedShared::serve(self, request, peer)
    }
}

/// A transport served at exactly `path`.
pub(crate) struct DirectMount {
    pub(crate) path: Box<str>,
    pub(crate) route: Box<dyn DirectRoute>,
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
type AppFuture =
    Either<HardenedFuture<EndpointFuture>, std::pin::Pin<Box<Oneshot<Router, Request>>>>;

impl App {
    fn serve(&self, request: Request, peer: SocketAddr) -> AppFuture {
        let path = request.uri().path();
        match self.direct.iter().find(|mount| *mount.path == *path) {
            Some(mount) => Either::Left(mount.route.serve(request, peer)),
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

/// One connection's view of the app: its requests are served with the peer's address.
struct Connection {
    app: Arc<App>,
    peer: SocketAddr,
}

impl hyper::service::Service<http::Request<Incoming>> for Connection {
    type Response = Response;
    type Error = Infallible;
    type Future = AppFuture;

    fn call(&self, request: http::Request<Incoming>) -> AppFuture {
        self.app.serve(request.map(Body::new), self.peer)
    }
}

/// Serves `app` on `listener` until `stop` completes, then shuts down gracefully.
pub(crate) async fn serve(listener: TcpListener, app: App, stop: impl Future<Output = ()>) {
    let app = Arc::new(app);
    let connections = TaskTracker::new();
    let closing = Arc::new(Shutdown::default());
    let mut stop = std::pin::pin!(stop);
    loop {
        let accepted = tokio::select! {
            () = &mut stop => break,
            accepted = listener.accept() => accepted,
        };
        match accepted {
            Ok((stream, peer)) => {
                let service = Connection {
                    app: Arc::clone(&app),
                    peer,
                };
                connections.spawn(serve_connection(stream, service, Arc::clone(&closing)));
            }
            Err(error) => survive_accept_error(error).await,
        }
    }
    drop(listener);
    closing.begin();
    connections.close();
    connections.wait().await;
}

async fn serve_connection(stream: TcpStream, service: Connection, closing: Arc<Shutdown>) {
    set_nodelay(&stream);
    let mut builder = Builder::new(TokioExecutor::new());
    // HTTP/2 WebSockets (RFC 8441) ride on extended CONNECT.
    builder.http2().enable_connect_protocol();
    let connection = builder.serve_connection_with_upgrades(TokioIo::new(stream), service);
    let mut connection = std::pin::pin!(connection);
    let outcome = tokio::select! {
        biased;
        outcome = connection.as_mut() => outcome,
        () = Closing::new(&closing) => {
            // Finishes the requests in flight, then closes; streams end with the server's
            // shutdown token.
            connection.as_mut().graceful_shutdown();
            connection.await
        }
    };
    if let Err(error) = outcome {
        tracing::trace!(%error, "connection ended with an error");
    }
}

/// The server's closing, as its connections watch for it: a flag, and a token that wakes them.
/// A token's own `is_cancelled` takes a lock, and a connection looks at every wake-up.
#[derive(Default)]
struct Shutdown {
    closing: AtomicBool,
    token: CancellationToken,
}

impl Shutdown {
    /// Raises the flag, then wakes every connection, so a woken one finds it raised.
    fn begin(&self) {
        self.closing.store(true, Ordering::Release);
        self.token.cancel();
    }

    fn has_begun(&self) -> bool {
        self.closing.load(Ordering::Acquire)
    }
}

/// Completes once the server starts closing. A cancellation future re-registers its waker under
/// a lock at every poll, and a connection's task is polled for every read and write; this one
/// registers again only when the task's waker changes, and otherwise reads one flag.
struct Closing<'a> {
    shutdown: &'a Shutdown,
    cancelled: std::pin::Pin<Box<tokio_util::sync::WaitForCancellationFuture<'a>>>,
    registered: Option<std::task::Waker>,
}

impl<'a> Closing<'a> {
    fn new(shutdown: &'a Shutdown) -> Self {
        Self {
            shutdown,
            cancelled: Box::pin(shutdown.token.cancelled()),
            registered: None,
        }
    }
}

impl Future for Closing<'_> {
    type Output = ();

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<()> {
        if self.shutdown.has_begun() {
            return std::task::Poll::Ready(());
        }
        let current = self
            .registered
            .as_ref()
            .is_some_and(|waker| waker.will_wake(cx.waker()));
        if current {
            return std::task::Poll::Pending;
        }
        let polled = self.cancelled.as_mut().poll(cx);
        self.registered = Some(cx.waker().clone());
        polled
    }
}

/// Disables Nagle's algorithm: without it a small SSE write waits for the peer's delayed ACK
/// (about 40 ms).
pub(crate) fn set_nodelay(stream: &TcpStream) {
    if let Err(error) = stream.set_nodelay(true) {
        tracing::debug!(%error, "could not set TCP_NODELAY");
    }
}

/// A failed accept: a connection that died before it was accepted is skipped; anything else
/// (such as running out of file descriptors) is logged and waited out, as hyper's own server
/// did, instead of spinning.
async fn survive_accept_error(error: std::io::Error) {
    use std::io::ErrorKind;
    if matches!(
        error.kind(),
        ErrorKind::ConnectionAborted | ErrorKind::ConnectionReset | ErrorKind::ConnectionRefused
    ) {
        return;
    }
    tracing::error!(%error, "accept failed; retrying in a second");
    tokio::time::sleep(Duration::from_secs(1)).await;
}
