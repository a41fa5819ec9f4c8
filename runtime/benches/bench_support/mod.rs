//! What the benchmark binaries share: serving a router with `TCP_NODELAY` on every accepted
//! socket (without it a small response waits for the peer's delayed ACK), and the protocols the
//! runtime serves in the benchmarks — a sessionless JSON-RPC echo, and a sessionful one whose
//! `open` request opens a session and whose sessions expire quickly.

use std::net::SocketAddr;
use std::time::Duration;

use axum::Router;
use axum::serve::ListenerExt as _;
use http::{HeaderMap, HeaderName};
use protocols_runtime::hardening::{HardeningConfig, RateLimit};
use protocols_runtime::http::{HttpConfig, ResponseMode, router};
use protocols_runtime::jsonrpc::{ErrorObject, Message, Notification, Request};
use protocols_runtime::server::Server;
use protocols_runtime::{Context, Profile, Reply, RequestHandler, SessionLimits, Unsessioned};
use serde_json::value::RawValue;
use tokio::net::TcpListener;

/// The session header of the sessionful benchmark protocol.
pub const SESSION_HEADER: HeaderName = HeaderName::from_static("bench-session-id");
/// How long an idle benchmark session lives.
pub const SESSION_IDLE: Duration = Duration::from_secs(10);

/// Serves `app` on `listener` until the process is killed.
pub async fn serve_nodelay(listener: TcpListener, app: Router) -> Result<(), String> {
    let listener = listener.tap_io(|stream| {
        // A socket that refuses NODELAY is still served, only slower.
        let _ = stream.set_nodelay(true);
    });
    // With the peer address, as a deployment should serve: the rate limit keys callers by it.
    axum::serve(
        listener,
        app.into_make_service_with_connect_info::<SocketAddr>(),
    )
    .await
    .map_err(|error| error.to_string())
}

/// The hardening every benchmarked runtime server runs behind: the defaults, with a rate limit
/// that is charged on every request but never refuses one at benchmark load.
pub fn bench_hardening(address: SocketAddr) -> HardeningConfig {
    HardeningConfig::new()
        .bind_address(address)
        .rate_limit(Some(RateLimit::new(1e9, u32::MAX)))
}

/// A JSON-RPC echo: `echo` answers its params. With a session header, `open` opens a session.
struct Echo {
    profile: Profile,
}

impl RequestHandler for Echo {
    type Session = ();

    fn profile(&self) -> &Profile {
        &self.profile
    }

    fn unsessioned(&self, messages: &[Message], _headers: &HeaderMap) -> Unsessioned {
        match messages.first() {
            Some(Message::Request(request)) if request.method == "open" => Unsessioned::Opens,
            _ => Unsessioned::NeedsSession,
        }
    }

    async fn handle(&self, request: Request, _cx: Context<()>) -> Reply {
        match request.method.as_str() {
            "echo" => request
                .params
                .ok_or_else(|| ErrorObject::invalid_params("echo needs params")),
            "open" => RawValue::from_string("{}".into()).map_err(|_| ErrorObject::internal_error()),
            _ => Err(ErrorObject::method_not_found()),
        }
    }

    async fn notify(&self, _notification: Notification, _cx: Context<()>) {}
}

/// The sessionless echo through the runtime's Streamable HTTP transport, hardened, as a router
/// to nest into an axum app.
pub fn runtime_echo(address: SocketAddr, mode: ResponseMode) -> Result<Router, String> {
    let hardening = bench_hardening(address)
        .build()
        .map_err(|error| error.to_string())?;
    Ok(router(
        "/mcp",
        sessionless_echo(),
        echo_config(mode),
        &hardening,
    ))
}

/// The same echo as a [`Server`] that serves its own listener, behind `hardening`.
pub fn runtime_echo_server(
    hardening: HardeningConfig,
    mode: ResponseMode,
) -> Result<Server, String> {
    Server::builder()
        .hardening(hardening)
        .streamable_http("/mcp", sessionless_echo(), echo_config(mode))
        .build()
        .map_err(|error| error.to_string())
}

fn sessionless_echo() -> Echo {
    Echo {
        profile: Profile::new(),
    }
}

fn echo_config(mode: ResponseMode) -> HttpConfig {
    HttpConfig::default().response_mode(mode)
}

/// The sessionful echo: sessions expire after [`SESSION_IDLE`] and are reaped every second.
pub fn runtime_sessions(address: SocketAddr) -> Result<Router, String> {
    let hardening = bench_hardening(address)
        .build()
        .map_err(|error| error.to_string())?;
    let config = HttpConfig::default()
        .response_mode(ResponseMode::Json)
        .sessions(
            SessionLimits::default()
                .idle(SESSION_IDLE)
                .absolute(Duration::from_secs(3600))
                .max_live(100_000),
        )
        .reap_every(Duration::from_secs(1));
    let echo = Echo {
        profile: Profile::new().with_session_header(SESSION_HEADER),
    };
    Ok(router("/mcp", echo, config, &hardening))
}
