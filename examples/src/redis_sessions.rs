//! Where the example servers keep Streamable HTTP sessions: in this process's memory by
//! default, in Redis with `--redis URL` so replicas on the same Redis serve any session. Event
//! streams stay in memory either way for now (a resumed stream must reach the replica that
//! wrote it).

use std::sync::Arc;

use protocols_redis::{ConnectError, RedisConfig, RedisSessionStore};
use protocols_runtime::RequestHandler;
use protocols_runtime::http::HttpConfig;
use protocols_runtime::server::ServerBuilder;
use protocols_runtime::session::SharedState;
use protocols_runtime::tail::{EventStore, MemoryEventStore};

/// What `--help` says of `--redis`, the same in every binary that takes it.
pub const REDIS_HELP: &str = "Keep MCP sessions in the Redis at this URL (redis://HOST:PORT), \
    so replicas on the same Redis serve any session; in memory when absent. Event streams stay \
    in this process's memory for now.";

/// Mounts `handler` over Streamable HTTP at `path`, its sessions in the Redis at `redis` when
/// given (connected before this returns: an unreachable Redis is an error within a second,
/// saying why with every cause but never the URL, which may carry a password), in memory
/// otherwise.
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
    // One event store for the transport and for the sessions the store rebuilds.
    let events: Arc<dyn EventStore> = Arc::new(MemoryEventStore::new(config.tail_capacity));
    let redis = RedisConfig::new(url)
        .limits(config.sessions)
        .clock(Arc::clone(&config.clock));
    let sessions = RedisSessionStore::<H::Session>::connect(redis, Arc::clone(&events))
        .await
        .map_err(|error| with_causes(&error))?;
    Ok(builder.streamable_http_with_stores(path, handler, config, Arc::new(sessions), events))
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
