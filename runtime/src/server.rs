//! Composition: several protocols mounted at their own paths in one server, hardened once as a
//! whole, returned as an axum `Router` a user can nest into their own app — or served on a
//! listener the server owns ([`crate::listen`]: the `Host`/`Origin` defaults pinned to the
//! address actually bound, mounted transports dispatched to directly, the connection caps and
//! timeouts of [`ListenerConfig`], and a drain on SIGTERM or SIGINT that stops accepting, lets
//! in-flight requests and answer streams finish until the drain deadline, then ends every
//! stream telling its client to retry).
//!
//! Two tokens tie streams to the drain: [`ServerBuilder::drain_token`] fires when it begins
//! (streams that carry no answer end), [`ServerBuilder::shutdown_token`] at its deadline (every
//! stream still open ends).

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::serve::{ListenerExt, TapIo};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

pub use crate::connections::ListenerConfig;
use crate::handler::RequestHandler;
use crate::hardening::{Hardening, HardeningConfig, HardeningError};
use crate::http::{HttpConfig, StreamableHttp};
use crate::legacy::LegacySse;
use crate::listen::{App, DirectMount, Lifecycle, MountedEndpoint};
use crate::session::SessionStore;
use crate::tail::EventStore;

/// A Streamable HTTP transport mounted at a path. It is hardened as one endpoint of its own
/// ([`Hardening::harden`]) rather than through the router-wide layers, and again whenever the
/// hardening is rebuilt for the address actually bound; every hardening of it serves the same
/// transport (the same sessions).
#[derive(Clone)]
struct Mount {
    path: String,
    harden: Arc<HardenMount>,
}

/// Hardens a mounted transport as the one endpoint the router and the listener both call.
type HardenMount = dyn Fn(&Hardening) -> Arc<dyn MountedEndpoint> + Send + Sync;

impl std::fmt::Debug for Mount {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mount")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

/// Each mount hardened once, as the endpoint both the router and a server's own listener call.
struct Hardened {
    router: Router,
    endpoints: Vec<(String, Arc<dyn MountedEndpoint>)>,
}

/// The whole app: the routes wrapped in the hardening, and each mount hardened as its own
/// endpoint, routed at its path.
///
/// A mount owns its path outright, so a second mount or a caller's route at that path is a
/// conflict: axum reports it only by panicking, which is turned into an error here so that
/// building a server fails cleanly instead.
fn assemble(
    hardening: &Hardening,
    routes: Router,
    mounts: &[Mount],
) -> Result<Hardened, HardeningError> {
    let mut seen = std::collections::HashSet::new();
    if let Some(mount) = mounts
        .iter()
        .find(|mount| !seen.insert(mount.path.as_str()))
    {
        return Err(HardeningError::RouteConflict(mount.path.clone()));
    }
    let endpoints: Vec<_> = mounts
        .iter()
        .map(|mount| (mount.path.clone(), (mount.harden)(hardening)))
        .collect();
    let merged = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        endpoints
            .iter()
            .fold(hardening.wrap(routes), |app, (path, endpoint)| {
                app.merge(endpoint.route(path))
            })
    }));
    let router = merged.map_err(|_| HardeningError::RouteConflict(mounts_named(mounts)))?;
    Ok(Hardened { router, endpoints })
}

/// The mounted paths, for an error that cannot tell which of them conflicted.
fn mounts_named(mounts: &[Mount]) -> String {
    let paths: Vec<&str> = mounts.iter().map(|mount| mount.path.as_str()).collect();
    paths.join(", ")
}

/// Builds a [`Server`] from protocol mounts and extra routes.
#[derive(Debug)]
pub struct ServerBuilder {
    routes: Router,
    mounts: Vec<Mount>,
    hardening: HardeningConfig,
    listener: ListenerConfig,
    drain: CancellationToken,
    shutdown: CancellationToken,
}

impl Default for ServerBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl ServerBuilder {
    /// A builder with no routes, the default hardening and the default listener.
    pub fn new() -> Self {
        Self {
            routes: Router::new(),
            mounts: Vec::new(),
            hardening: HardeningConfig::default(),
            listener: ListenerConfig::default(),
            drain: CancellationToken::new(),
            shutdown: CancellationToken::new(),
        }
    }

    /// How a listener this server owns treats connections and how long it drains (see
    /// [`ListenerConfig`] for each default).
    #[must_use]
    pub fn listener(mut self, config: ListenerConfig) -> Self {
        self.listener = config;
        self
    }

    /// The hardening every mounted route runs behind.
    #[must_use]
    pub fn hardening(mut self, config: HardeningConfig) -> Self {
        self.hardening = config;
        self
    }

    /// Serves `handler` over Streamable HTTP at `path`.
    #[must_use]
    pub fn streamable_http<H: RequestHandler>(
        self,
        path: &str,
        handler: H,
        config: HttpConfig,
    ) -> Self {
        let config = self.owned(config);
        self.mount(path, StreamableHttp::new(handler, config))
    }

    /// Serves `handler` over Streamable HTTP at `path` with a session store and an event store
    /// of the caller's: replicas sharing both serve any session and resume any stream.
    #[must_use]
    pub fn streamable_http_with_stores<H: RequestHandler>(
        self,
        path: &str,
        handler: H,
        config: HttpConfig,
        sessions: Arc<dyn SessionStore<H::Session>>,
        events: Arc<dyn EventStore>,
    ) -> Self {
        let config = self.owned(config);
        self.mount(
            path,
            StreamableHttp::with_stores(handler, config, sessions, events),
        )
    }

    fn mount<H: RequestHandler>(mut self, path: &str, transport: StreamableHttp<H>) -> Self {
        let endpoint = transport.into_endpoint();
        self.mounts.push(Mount {
            path: path.to_owned(),
            harden: Arc::new(move |hardening| Arc::new(hardening.harden(endpoint.clone()))),
        });
        self
    }

    /// Serves `handler` over legacy HTTP+SSE: the stream at `stream_path`, messages to
    /// `post_path`.
    #[must_use]
    pub fn legacy_sse<H: RequestHandler>(
        self,
        stream_path: &str,
        post_path: &str,
        handler: H,
        config: HttpConfig,
    ) -> Self {
        let config = self.owned(config);
        self.routes(LegacySse::new(handler, config, post_path).into_routes(stream_path))
    }

    /// Adds routes of the caller's (a protocol's REST binding, a discovery document); they run
    /// behind the same hardening.
    #[must_use]
    pub fn routes(mut self, routes: Router) -> Self {
        self.routes = self.routes.merge(routes);
        self
    }

    /// The token fired at the drain deadline (and by [`Server::shutdown`]), for routes mounted
    /// with [`Self::routes`] whose streams must end then: a protocol's own answer streams,
    /// which finish during the drain and end here, telling their clients to retry.
    pub fn shutdown_token(&self) -> CancellationToken {
        self.shutdown.clone()
    }

    /// The token fired when the drain begins, for routes mounted with [`Self::routes`] whose
    /// streams carry no answer still owed and so end at once (a session's own stream).
    pub fn drain_token(&self) -> CancellationToken {
        self.drain.clone()
    }

    /// Ties a transport's streams to this server's drain.
    fn owned(&self, mut config: HttpConfig) -> HttpConfig {
        config.drain = self.drain.clone();
        config.shutdown = self.shutdown.clone();
        config
    }

    /// The hardened server.
    ///
    /// # Errors
    /// A hardening configuration that cannot be served safely.
    pub fn build(self) -> Result<Server, HardeningError> {
        let hardening = self.hardening.clone().build()?;
        Ok(Server {
            router: assemble(&hardening, self.routes.clone(), &self.mounts)?.router,
            routes: self.routes,
            mounts: self.mounts,
            hardening: self.hardening,
            listener: self.listener,
            drain: self.drain,
            shutdown: self.shutdown,
        })
    }
}

/// A hardened set of protocol routes.
#[derive(Debug, Clone)]
pub struct Server {
    /// The routes hardened without knowing where they will be served.
    router: Router,
    /// The same routes and mounts unhardened, and the hardening, to harden them again once the
    /// listener's address is known.
    routes: Router,
    mounts: Vec<Mount>,
    hardening: HardeningConfig,
    listener: ListenerConfig,
    drain: CancellationToken,
    shutdown: CancellationToken,
}

impl Server {
    /// Starts building a server.
    pub fn builder() -> ServerBuilder {
        ServerBuilder::new()
    }

    /// The routes, to nest into another app. Streams still end when [`Self::shutdown`] fires.
    pub fn router(&self) -> Router {
        self.router.clone()
    }

    /// Fires at the drain deadline, or when [`Self::shutdown`] is called: every stream still
    /// open ends.
    pub fn shutdown_token(&self) -> CancellationToken {
        self.shutdown.clone()
    }

    /// Fires when a drain begins: streams that owe no answer end.
    pub fn drain_token(&self) -> CancellationToken {
        self.drain.clone()
    }

    /// Ends every open stream now; a server serving its own listener stops at once.
    pub fn shutdown(&self) {
        self.drain.cancel();
        self.shutdown.cancel();
    }

    /// Binds `address` and serves until SIGTERM or SIGINT (Ctrl-C elsewhere than Unix), then
    /// drains (see [`Self::serve_until`]); a second signal ends the drain at once. The
    /// hardening's `Host`/`Origin` defaults follow the address bound.
    ///
    /// # Errors
    /// Binding or serving failed, or the signals cannot be listened for.
    pub async fn serve(self, address: SocketAddr) -> std::io::Result<()> {
        let signals = Termination::listen()?;
        let listener = TcpListener::bind(address).await?;
        let (first, second) = (CancellationToken::new(), CancellationToken::new());
        let relay = tokio::spawn(signals.relay(first.clone(), second.clone()));
        let served = self
            .serve_with(listener, first.cancelled_owned(), second.cancelled_owned())
            .await;
        relay.abort();
        served
    }

    /// Serves on `listener` until `signal` completes, then drains: no new connection is
    /// accepted, in-flight requests finish and answer streams write their answers, for at most
    /// the drain deadline ([`ListenerConfig::drain_deadline`]); at the deadline every stream
    /// still open ends with a `retry` field, so its client resumes elsewhere. Returns once
    /// every connection has closed.
    ///
    /// The listener's address is the hardening's bind address (overriding any configured one):
    /// on loopback the default `Host` and `Origin` allow-lists name its port. Each connection's
    /// peer address reaches the routes, so anonymous callers are rate limited per peer.
    ///
    /// # Errors
    /// Serving failed, or the listener has no local address.
    pub async fn serve_until(
        self,
        listener: TcpListener,
        signal: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        self.serve_with(listener, signal, std::future::pending())
            .await
    }

    /// [`Self::serve_until`], with a second signal that ends the drain at once.
    async fn serve_with(
        self,
        listener: TcpListener,
        signal: impl Future<Output = ()>,
        force: impl Future<Output = ()>,
    ) -> std::io::Result<()> {
        let address = listener.local_addr()?;
        let hardening = self
            .hardened_for(address)
            .map_err(|error| std::io::Error::new(std::io::ErrorKind::InvalidInput, error))?;
        let hardened = assemble(&hardening, self.routes, &self.mounts)
            .map_err(|error| std::io::Error::new(std::io::ErrorKind::InvalidInput, error))?;
        let app = App {
            direct: direct_mounts(hardened.endpoints),
            router: hardened.router,
        };
        let lifecycle = Lifecycle {
            config: self.listener,
            drain: self.drain,
            shutdown: self.shutdown.clone(),
            refusal: hardening.connection_refusal(),
        };
        let shutdown = self.shutdown;
        tracing::info!(%address, "serving");
        let stop = async move {
            tokio::select! {
                () = signal => {}
                () = shutdown.cancelled() => {}
            }
            tracing::info!("stop signal received");
        };
        crate::listen::serve(listener, app, lifecycle, stop, force).await;
        Ok(())
    }
}

/// The signals that stop a server: SIGTERM (what container runtimes and process managers send)
/// and SIGINT alike, listened for from before the listener is bound.
struct Termination {
    #[cfg(unix)]
    terminate: tokio::signal::unix::Signal,
    #[cfg(unix)]
    interrupt: tokio::signal::unix::Signal,
}

impl Termination {
    #[cfg(unix)]
    fn listen() -> std::io::Result<Self> {
        use tokio::signal::unix::{SignalKind, signal};
        Ok(Self {
            terminate: signal(SignalKind::terminate())?,
            interrupt: signal(SignalKind::interrupt())?,
        })
    }

    #[cfg(not(unix))]
    fn listen() -> std::io::Result<Self> {
        Ok(Self {})
    }

    /// The next signal of either kind.
    #[cfg(unix)]
    async fn next(&mut self) {
        tokio::select! {
            _ = self.terminate.recv() => tracing::info!("SIGTERM"),
            _ = self.interrupt.recv() => tracing::info!("SIGINT"),
        }
    }

    #[cfg(not(unix))]
    async fn next(&mut self) {
        if let Err(error) = tokio::signal::ctrl_c().await {
            tracing::warn!(%error, "cannot listen for Ctrl-C; serving until the process ends");
            std::future::pending::<()>().await;
        }
    }

    /// Fires `first` at the first signal and `second` at the next.
    async fn relay(mut self, first: CancellationToken, second: CancellationToken) {
        self.next().await;
        first.cancel();
        self.next().await;
        tracing::info!("a second signal: ending the drain now");
        second.cancel();
    }
}

impl Server {
    /// The hardening, validated again with the address actually bound (a configuration
    /// [`ServerBuilder::build`] accepted gains only a bind address here).
    fn hardened_for(&self, address: SocketAddr) -> Result<Hardening, HardeningError> {
        self.hardening.clone().bind_address(address).build()
    }
}

/// The mounts a server dispatches to by path equality ([`assemble`] has already refused two
/// mounts at one path); the router still holds them all, for any path it alone can match.
fn direct_mounts(endpoints: Vec<(String, Arc<dyn MountedEndpoint>)>) -> Box<[DirectMount]> {
    endpoints
        .into_iter()
        .filter(|(path, _)| DirectMount::is_literal(path))
        .map(|(path, endpoint)| DirectMount {
            path: path.into(),
            endpoint,
        })
        .collect()
}

/// `listener` with TCP_NODELAY set on every accepted socket: without it a small SSE write waits
/// for the peer's delayed ACK (about 40 ms). Use it when serving a [`Server::router`] yourself.
pub fn without_nagle(listener: TcpListener) -> TapIo<TcpListener, fn(&mut TcpStream)> {
    listener.tap_io(set_nodelay as fn(&mut TcpStream))
}

fn set_nodelay(stream: &mut TcpStream) {
    crate::listen::set_nodelay(stream);
}

#[cfg(test)]
mod tests {
    use axum::serve::Listener;

    use super::*;

    #[tokio::test]
    async fn every_accepted_socket_has_nagle_disabled() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let mut listener = without_nagle(listener);
        for _ in 0..3 {
            let _client = tokio::net::TcpStream::connect(address).await.unwrap();
            let (accepted, _) = listener.accept().await;
            assert!(accepted.nodelay().unwrap());
        }
    }
}
