//! The Redis stores' configuration: where Redis is, the keys' prefix, how long any command may
//! take, how long a reader blocks, and the sessions' limits.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use protocols_runtime::session::{Clock, SessionLimits, SystemClock};

/// How a [`RedisSessionStore`](crate::RedisSessionStore) or a
/// [`RedisEventStore`](crate::RedisEventStore) reaches Redis and what it keeps
/// there. Built as `RedisConfig::new(url).timeout(…)`; every field has a setter.
#[derive(Clone)]
#[non_exhaustive]
pub struct RedisConfig {
    /// `redis://[:password@]host:port[/db]` (no TLS: `rediss://` is refused at connect).
    pub url: String,
    /// What every key of these stores starts with, so several deployments can share one Redis.
    pub prefix: String,
    /// The most any one Redis command may take, waiting for a connection included; past it
    /// the request is answered "unavailable" (a `503`) rather than kept waiting.
    pub timeout: Duration,
    /// The longest pause between two reconnection attempts while Redis is away: how soon after
    /// it returns the store serves again.
    pub reconnect_delay: Duration,
    /// The longest an event reader's blocking read waits for a new entry before it looks
    /// again (whether its stream was closed, taken over or expired, whether its client is
    /// still there).
    pub block: Duration,
    /// How long sessions live and how many may, across every replica on this Redis.
    pub limits: SessionLimits,
    /// The wall clock [`has_room`](protocols_runtime::SessionStore::has_room) counts live
    /// sessions at (every other answer is given a time by its caller).
    pub clock: Arc<dyn Clock>,
}

impl RedisConfig {
    /// The defaults for the Redis at `url`: prefix `protocols:`, a one-second timeout,
    /// reconnection attempts at most 250 ms apart, blocking reads of two seconds, the
    /// runtime's default session limits.
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            prefix: "protocols:".to_owned(),
            timeout: Duration::from_secs(1),
            reconnect_delay: Duration::from_millis(250),
            block: Duration::from_secs(2),
            limits: SessionLimits::default(),
            clock: Arc::new(SystemClock),
        }
    }
}

protocols_runtime::config_setters!(RedisConfig {
    url: String,
    prefix: String,
    timeout: Duration,
    reconnect_delay: Duration,
    block: Duration,
    limits: SessionLimits,
    clock: Arc<dyn Clock>,
});

impl fmt::Debug for RedisConfig {
    // The URL is left out: it may carry a password.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisConfig")
            .field("prefix", &self.prefix)
            .field("timeout", &self.timeout)
            .field("reconnect_delay", &self.reconnect_delay)
            .field("block", &self.block)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}
