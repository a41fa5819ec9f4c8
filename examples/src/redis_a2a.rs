//! Where the example servers keep A2A tasks: in this process's memory by default, in Redis
//! with `--redis URL`, so replicas on the same Redis serve any task: a task sent to one is
//! read, subscribed to and cancelled through any other.

use std::sync::Arc;

use protocols_a2a::store::{MemoryTaskStore, TaskLimits, TaskStore};
use protocols_redis::{RedisConfig, RedisTaskStore};

use crate::redis_sessions::with_causes;

/// The A2A task store: in the Redis at `redis` when given (connected before this returns: an
/// unreachable Redis is an error within a second, saying why but never the URL, which may
/// carry a password), in memory otherwise.
pub async fn a2a_task_store(redis: Option<&str>) -> Result<Arc<dyn TaskStore>, String> {
    let Some(url) = redis else {
        return Ok(Arc::new(MemoryTaskStore::new()));
    };
    let store = RedisTaskStore::connect(RedisConfig::new(url), TaskLimits::default())
        .await
        .map_err(|error| with_causes(&error))?;
    Ok(Arc::new(store))
}
