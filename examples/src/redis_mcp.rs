//! Where the MCP demo server keeps its tasks: in this process's memory by default, in Redis
//! with `--redis URL` (2025-11-25's tasks, through `RedisTaskRecords`), so a task created on
//! one replica is read, listed, awaited and cancelled through any replica on the same Redis.

use std::sync::Arc;

use protocols_mcp::{TaskLimits, TaskStore};
use protocols_redis::{RedisConfig, RedisTaskRecords};
use protocols_runtime::session::SystemClock;

use crate::redis_sessions::with_causes;

/// The task store for the Redis at `redis` (connected before this returns: an unreachable
/// Redis is an error within a second, saying why but never the URL); `None` without one, so
/// the server keeps its default in-memory store.
pub async fn task_store(redis: Option<&str>) -> Result<Option<TaskStore>, String> {
    let Some(url) = redis else {
        return Ok(None);
    };
    let records = RedisTaskRecords::connect(RedisConfig::new(url))
        .await
        .map_err(|error| with_causes(&error))?;
    Ok(Some(TaskStore::shared(
        Arc::new(records),
        TaskLimits::default(),
        Arc::new(SystemClock),
    )))
}
