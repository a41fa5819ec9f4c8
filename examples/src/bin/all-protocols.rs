//! `all-protocols`: one server hosting every protocol behind one hardening layer: MCP at `/mcp`
//! (Streamable HTTP) and `/sse` (legacy HTTP+SSE), A2A at its JSON-RPC and HTTP+JSON paths with
//! its agent card, ACP at `/acp` (Streamable HTTP and WebSocket).
//!
//! `--listen ADDR` picks the address (default 127.0.0.1:8080). `--auth-jwks URL --auth-issuer ISS
//! --auth-audience AUD` require a JWT access token from that authorization server on every
//! route (`--auth-scope` names a scope every token must grant); `--cors-origin` lets a browser
//! page of that origin call; `--trusted-proxy` names a proxy whose forwarding headers name the
//! real client. `--stdio acp` instead serves the ACP demo agent on stdin/stdout, as an editor
//! spawns it. `--session-idle SECONDS` is how long an unused MCP session or ACP connection is
//! kept (default 30 minutes). `--redis URL` keeps the MCP Streamable HTTP sessions, their
//! event streams, MCP tasks and A2A tasks in Redis, and relays between replicas, so replicas on
//! one Redis serve any session, stream and task. `--allow-private-webhooks` is for tests only
//! and unsafe anywhere
//! else (see [`Options::allow_private_webhooks`]).

// No index that can panic is reachable from input: code reads maps and slices with `get`.
// Unit tests may index (a panic there is a failed test).
#![cfg_attr(not(test), deny(clippy::indexing_slicing))]

use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use examples::mcp_demo::everything_server_with_tasks;
use examples::redis_a2a::a2a_task_store;
use examples::redis_sessions::{REDIS_HELP, mount_mcp_streamable_http};
use examples::{a2a_demo, acp_demo};
use protocols_a2a::push::{PrivateTargets, PushPolicy};
use protocols_acp::remote::RemoteConfig;
use protocols_runtime::hardening::{AuthPolicy, HardeningConfig, JwtAuthenticator, JwtConfig};
use protocols_runtime::http::HttpConfig;
use protocols_runtime::server::{Server, ServerBuilder};
use protocols_runtime::session::SessionLimits;

/// Every protocol's demo on one server. `--auth-*`, `--cors-origin` and `--trusted-proxy` are
/// the interface other checks drive, so their names stay.
#[derive(Debug, Parser)]
#[command(name = "all-protocols")]
struct Options {
    /// The address to serve on.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8080")]
    listen: SocketAddr,
    /// Serve this protocol's demo on stdin/stdout instead (`acp`).
    #[arg(long, value_name = "PROTOCOL", conflicts_with_all = ["auth_jwks", "cors_origin"])]
    stdio: Option<String>,
    /// UNSAFE, for tests only: let A2A push-notification webhooks target loopback and private
    /// addresses. Off by default, because it lets any caller make this server send requests
    /// to its own host and private network (SSRF).
    #[arg(long)]
    allow_private_webhooks: bool,
    /// The authorization server's JWKS; with it every route requires a JWT access token.
    #[arg(long, value_name = "URL", requires_all = ["auth_issuer", "auth_audience"])]
    auth_jwks: Option<String>,
    /// The `iss` a token must carry.
    #[arg(long, value_name = "ISS", requires = "auth_jwks")]
    auth_issuer: Option<String>,
    /// This server's resource identifier, which a token's `aud` must name.
    #[arg(long, value_name = "AUD", requires = "auth_jwks")]
    auth_audience: Option<String>,
    /// A scope every token must grant (repeatable).
    #[arg(long, value_name = "SCOPE", requires = "auth_jwks")]
    auth_scope: Vec<String>,
    /// A browser origin allowed to call (repeatable).
    #[arg(long, value_name = "ORIGIN")]
    cors_origin: Vec<String>,
    /// A proxy address or network whose Forwarded / X-Forwarded-For is believed (repeatable).
    #[arg(long, value_name = "ADDR")]
    trusted_proxy: Vec<String>,
    /// Seconds an unused MCP session or ACP connection lives before it ends and its state is
    /// freed (a client that never closes its session holds memory this long).
    /// At least 1: with 0 every session would end before its second request.
    #[arg(long, value_name = "SECONDS", default_value_t = 30 * 60,
          value_parser = clap::value_parser!(u64).range(1..))]
    session_idle: u64,
    #[arg(long, value_name = "URL", conflicts_with = "stdio", help = REDIS_HELP)]
    redis: Option<String>,
}

impl Options {
    /// The hardening these options ask for; a JWKS URL that cannot be served is an error.
    fn hardening(&self) -> Result<HardeningConfig, String> {
        let hardening = HardeningConfig::new()
            .bind_address(self.listen)
            .cors_origins(self.cors_origin.iter().cloned())
            .trusted_proxies(self.trusted_proxy.iter().cloned());
        let (Some(jwks), Some(issuer), Some(audience)) =
            (&self.auth_jwks, &self.auth_issuer, &self.auth_audience)
        else {
            return Ok(hardening);
        };
        let config = JwtConfig::new(jwks, issuer, audience);
        let metadata = config
            .protected_resource()
            .scopes_supported(self.auth_scope.iter().cloned());
        let authenticator = JwtAuthenticator::new(config).map_err(|error| error.to_string())?;
        Ok(hardening
            .authenticator(authenticator)
            .auth_policy(AuthPolicy::RequireScopes(self.auth_scope.clone()))
            .protected_resource(metadata))
    }

    /// How long an unused MCP session or ACP connection is kept.
    fn session_idle(&self) -> Duration {
        Duration::from_secs(self.session_idle)
    }

    /// Where A2A webhooks may point.
    fn push_policy(&self) -> PushPolicy {
        let private_targets = if self.allow_private_webhooks {
            tracing::warn!("A2A webhooks may target loopback and private addresses (unsafe)");
            PrivateTargets::Allow
        } else {
            PrivateTargets::Refuse
        };
        PushPolicy::default().private_targets(private_targets)
    }
}

/// MCP's demo at `/mcp` (its sessions and tasks in Redis when `redis` names one) and `/sse`.
async fn mount_mcp(
    builder: ServerBuilder,
    session_idle: Duration,
    redis: Option<&str>,
) -> Result<ServerBuilder, String> {
    let tasks = examples::redis_mcp::task_store(redis).await?;
    let server = everything_server_with_tasks(tasks).map_err(|error| error.to_string())?;
    let config = HttpConfig::default().sessions(SessionLimits::default().idle(session_idle));
    let builder =
        mount_mcp_streamable_http(builder, "/mcp", server.clone(), config.clone(), redis).await?;
    Ok(builder.legacy_sse("/sse", "/message", server, config))
}

/// A2A's demo agent, its tasks in Redis when `redis` names one; its card names interfaces
/// under `base_url`. Its streaming answers (both bindings) finish during the drain and end at
/// its deadline.
async fn mount_a2a(
    builder: ServerBuilder,
    base_url: &str,
    push: PushPolicy,
    redis: Option<&str>,
) -> Result<ServerBuilder, String> {
    let store = a2a_task_store(redis).await?;
    let routes = a2a_demo::router_with_store(base_url, builder.shutdown_token(), push, store);
    Ok(builder.routes(routes))
}

/// ACP's demo agent over its remote transport (Streamable HTTP and WebSocket at one endpoint),
/// its streams and connections ended when the server starts draining.
fn mount_acp(builder: ServerBuilder, idle_timeout: Duration) -> ServerBuilder {
    let config = RemoteConfig::default().idle_timeout(idle_timeout);
    let routes = acp_demo::router(builder.drain_token(), config);
    builder.routes(routes)
}

#[tokio::main]
async fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .init();
    let options = Options::parse();
    if let Some(protocol) = &options.stdio {
        return serve_stdio(protocol).await;
    }
    let address = options.listen;
    let hardening = match options.hardening() {
        Ok(hardening) => hardening,
        Err(error) => {
            eprintln!("all-protocols: {error}");
            return ExitCode::from(2);
        }
    };
    let builder = Server::builder().hardening(hardening);
    let builder = match mount_mcp(builder, options.session_idle(), options.redis.as_deref()).await {
        Ok(builder) => builder,
        Err(error) => {
            eprintln!("all-protocols: {error}");
            return ExitCode::FAILURE;
        }
    };
    let base_url = format!("http://{address}");
    let push = options.push_policy();
    let builder = match mount_a2a(builder, &base_url, push, options.redis.as_deref()).await {
        Ok(builder) => builder,
        Err(error) => {
            eprintln!("all-protocols: {error}");
            return ExitCode::FAILURE;
        }
    };
    let builder = mount_acp(builder, options.session_idle());
    let server = match builder.build() {
        Ok(server) => server,
        Err(error) => {
            eprintln!("all-protocols: {error}");
            return ExitCode::FAILURE;
        }
    };
    eprintln!(
        "all-protocols listening on http://{address} (MCP at /mcp and /sse, A2A, ACP at /acp)"
    );
    match server.serve(address).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("all-protocols: {error}");
            ExitCode::FAILURE
        }
    }
}

/// `--stdio acp`: only ACP is spoken over stdio by the editors that spawn agents.
async fn serve_stdio(protocol: &str) -> ExitCode {
    if protocol != "acp" {
        eprintln!("--stdio serves: acp");
        return ExitCode::from(2);
    }
    match acp_demo::serve_stdio().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("all-protocols: {error}");
            ExitCode::FAILURE
        }
    }
}
