//! Redis stores for the protocols runtime, so replicas sharing one Redis serve any session.
//!
//! [`RedisSessionStore`] implements the runtime's [`SessionStore`](protocols_runtime::SessionStore):
//! one Redis hash per session holding its serialized state, whose expiry Redis enforces itself
//! (sliding idle deadline, absolute deadline), so a client that never sends `DELETE` leaves no
//! key behind; the live-session limit holds across replicas; every command is bounded by a
//! timeout, so an outage is a `503` quickly and the connection comes back by itself.
//! Configured by [`RedisConfig`]. Event streams are not kept here yet.
//!
//! With the `mcp` feature, `RedisTaskRecords` keeps MCP's 2025-11-25 tasks in Redis (each
//! record expiring with its task's TTL), so any replica answers `tasks/*` for a task another
//! one runs.

#![deny(missing_docs)]
#![cfg_attr(not(test), deny(clippy::indexing_slicing))]

mod config;
#[cfg(feature = "mcp")]
mod mcp_tasks;
mod scripts;
mod sessions;

pub use config::RedisConfig;
#[cfg(feature = "mcp")]
pub use mcp_tasks::RedisTaskRecords;
pub use sessions::{ConnectError, RedisSessionStore};
