//! How the stores reach Redis: one multiplexed connection per store that reconnects by itself,
//! connections of their own for readers that block, and the bound every command is held to.

use std::time::Duration;

use protocols_runtime::session::StoreError;
use redis::aio::{ConnectionManager, ConnectionManagerConfig, MultiplexedConnection};
use redis::{AsyncConnectionConfig, Client, RedisError};

use crate::config::RedisConfig;

/// The shortest pause between two reconnection attempts (the pauses double up to
/// [`RedisConfig::reconnect_delay`]).
pub(crate) const FIRST_RECONNECT_DELAY: Duration = Duration::from_millis(10);

/// Why a store could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConnectError {
    /// The URL is not one this crate connects to (malformed, or `rediss://`: no TLS here).
    #[error("the redis url is not usable")]
    InvalidUrl(#[source] RedisError),
    /// Redis answered with an error (authentication, or no Lua scripting).
    #[error("redis refused the store")]
    Refused(#[source] RedisError),
    /// Redis did not answer within the configured timeout.
    #[error("redis did not answer within {0:?}")]
    TimedOut(Duration),
}

/// A Redis command got no answer within the configured timeout.
#[derive(Debug, thiserror::Error)]
#[error("redis did not answer within {0:?}")]
pub(crate) struct TimedOut(pub(crate) Duration);

/// The client for `config`'s URL and a shared connection to it, connected within the timeout.
/// Reconnection never gives up: while Redis is away each command fails at the timeout, and the
/// first attempt after Redis returns serves again, with no request lost to it.
pub(crate) async fn manager(
    config: &RedisConfig,
) -> Result<(Client, ConnectionManager), ConnectError> {
    let client = Client::open(config.url.as_str()).map_err(ConnectError::InvalidUrl)?;
    let reconnect = ConnectionManagerConfig::new()
        .set_connection_timeout(Some(config.timeout))
        .set_min_delay(FIRST_RECONNECT_DELAY.min(config.reconnect_delay))
        .set_max_delay(config.reconnect_delay)
        .set_number_of_retries(usize::MAX);
    let timeout = config.timeout;
    let connection = bounded(
        timeout,
        ConnectionManager::new_with_config(client.clone(), reconnect),
    )
    .await
    .map_err(|_| ConnectError::TimedOut(timeout))?
    .map_err(ConnectError::Refused)?;
    Ok((client, connection))
}

/// A connection of its own, for a reader whose commands block for up to `block` (a blocking
/// read on the shared connection would stall every command queued behind it).
pub(crate) async fn dedicated(
    client: &Client,
    timeout: Duration,
    block: Duration,
) -> Result<MultiplexedConnection, RedisError> {
    let config = AsyncConnectionConfig::new()
        .set_connection_timeout(Some(timeout))
        .set_response_timeout(Some(block + timeout));
    client
        .get_multiplexed_async_connection_with_config(&config)
        .await
}

/// `future`, or an error once `timeout` has passed.
pub(crate) async fn bounded<T>(
    timeout: Duration,
    future: impl Future<Output = T>,
) -> Result<T, tokio::time::error::Elapsed> {
    tokio::time::timeout(timeout, future).await
}

/// Awaits one request to Redis, bounded by `timeout`: the one place where a failure or a late
/// answer becomes "unavailable".
pub(crate) async fn ask<T>(
    timeout: Duration,
    request: impl Future<Output = redis::RedisResult<T>>,
) -> Result<T, StoreError> {
    bounded(timeout, request)
        .await
        .map_err(|_| StoreError::unavailable(TimedOut(timeout)))?
        .map_err(StoreError::unavailable)
}

/// Whole milliseconds of `duration` (saturating), what Redis expiries count in.
pub(crate) fn millis_of(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// [`manager`] with `scripts` loaded, so a Redis without Lua is refused when a store is built,
/// not at its first request. Every store of this crate connects through it.
pub(crate) async fn connect(
    config: &RedisConfig,
    scripts: &[&redis::Script],
) -> Result<(Client, ConnectionManager), ConnectError> {
    let (client, mut connection) = manager(config).await?;
    let timeout = config.timeout;
    for script in scripts {
        bounded(timeout, script.load_async(&mut connection))
            .await
            .map_err(|_| ConnectError::TimedOut(timeout))?
            .map_err(ConnectError::Refused)?;
    }
    Ok((client, connection))
}
