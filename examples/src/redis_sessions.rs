//! Where the example servers keep Streamable HTTP sessions and their event streams: in this
//! process's memory by default, in Redis with `--redis URL`, so replicas on the same Redis
//! serve any session and resume any stream (`Last-Event-ID` on any replica).

use std::sync::Arc;

use protocols_mcp::McpServer;
use protocols_redis::{ConnectError, RedisConfig, RedisEventStore, RedisRelay, RedisSessionStore};
use protocols_runtime::RequestHandler;
use protocols_runtime::http::HttpConfig;
use protocols_runtime::relay::Relay;
use protocols_runtime::server::ServerBuilder;
use protocols_runtime::session::SharedState;
use protocols_runtime::tail::EventStore;

/// What `--help` says of `--redis`, the same in every binary that takes it.
pub const REDIS_HELP: &str = "Keep MCP sessions, their event streams and tasks, and A2A \
    tasks in the Redis at this URL (redis://HOST:PORT), and relay between replicas through \
    it, so replicas on the same Redis serve any session, stream and task; in memory when \
    absent.";

/// Mounts `handler` over Streamable HTTP at `path`, its sessions and event streams in the Redis
/// at `redis` when given (connected before this returns: an unreachable Redis is an error
/// within a second, saying why with every cause but never the URL, which may carry a
/// password), in memory otherwise.
pub async fn mount_streamable_http<H>(
    builder: ServerBuilder,
    path: &str,
    handler: H,
    config: HttpConfig,
    redis: Option<&str>,
) -> Result<ServerBuilder, String>
where
    H: RequestHandler,
    H::Session: SharedState,
{
    let Some(url) = redis else {
        return Ok(builder.streamable_http(path, handler, config));
    };
    let redis = RedisConfig::new(url)
        .limits(config.sessions)
        .clock(Arc::clone(&config.clock));
    // One event store for the transport and for the sessions the store rebuilds.
    let events: Arc<dyn EventStore> = Arc::new(
        RedisEventStore::connect(redis.clone(), config.tail_capacity)
            .await
            .map_err(|error| with_causes(&error))?,
    );
    let sessions = RedisSessionStore::<H::Session>::connect(redis, Arc::clone(&events))
        .await
        .map_err(|error| with_causes(&error))?;
    Ok(builder.streamable_http_with_stores(path, handler, config, Arc::new(sessions), events))
}

/// [`mount_streamable_http`] for an MCP server: with `redis`, the replicas on that Redis also
/// relay to each other (Redis pub/sub) the answers to server→client requests, cancellations
/// and the server's list-changed and resource-updated broadcasts, so a client may send each
/// request to any replica.
pub async fn mount_mcp_streamable_http(
    builder: ServerBuilder,
    path: &str,
    server: McpServer,
    config: HttpConfig,
    redis: Option<&str>,
) -> Result<ServerBuilder, String> {
    let config = match redis {
        Some(url) => {
            let relay = RedisConfig::new(url);
            let relay: Arc<dyn Relay> = Arc::new(
                RedisRelay::connect(relay)
                    .await
                    .map_err(|error| with_causes(&error))?,
            );
            server.relay_broadcasts(Arc::clone(&relay));
            config.relay(relay)
        }
        None => config,
    };
    mount_streamable_http(builder, path, server, config, redis).await
}

/// `--redis: error: cause: …`, so the reason Redis refused reaches the operator.
pub(crate) fn with_causes(error: &ConnectError) -> String {
    let mut text = format!("--redis: {error}");
    let mut cause = std::error::Error::source(error);
    while let Some(inner) = cause {
        text.push_str(&format!(": {inner}"));
        cause = inner.source();
    }
    text
}
