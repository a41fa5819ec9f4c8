//! Redis stores for the protocols runtime, so replicas sharing one Redis serve any session.
//!
//! [`RedisSessionStore`] implements the runtime's [`SessionStore`](protocols_runtime::SessionStore):
//! one Redis hash per session holding its serialized state, whose expiry Redis enforces itself
//! (sliding idle deadline, absolute deadline), so a client that never sends `DELETE` leaves no
//! key behind; the live-session limit holds across replicas; every command is bounded by a
//! timeout, so an outage is a `503` quickly and the connection comes back by itself.
//!
//! [`RedisEventStore`] implements the runtime's [`EventStore`](protocols_runtime::tail::EventStore)
//! on Redis Streams: one capped stream per session stream, cursors any replica resumes, one
//! reader per stream across replicas, readers woken by blocking reads on connections of their
//! own, keys expiring with the session.
//!
//! [`RedisRelay`] implements the runtime's [`Relay`](protocols_runtime::relay::Relay) on Redis
//! pub/sub, so an answer, a cancellation or a broadcast reaches the replica it is for.
//!
//! With the `a2a` feature, `RedisTaskStore` implements A2A's task store: tasks and push configs
//! any replica reads, live updates on Redis Streams and cancellation reaching the replica that
//! runs the task.
//!
//! With the `mcp` feature, `RedisTaskRecords` keeps MCP's 2025-11-25 tasks in Redis (each
//! record expiring with its task's TTL), so any replica answers `tasks/*` for a task another
//! one runs. All are configured by [`RedisConfig`].

#![deny(missing_docs)]
#![cfg_attr(not(test), deny(clippy::indexing_slicing))]

#[cfg(feature = "a2a")]
mod a2a;
#[cfg(feature = "a2a")]
mod a2a_scripts;
mod config;
mod connection;
mod event_scripts;
mod events;
#[cfg(feature = "mcp")]
mod mcp_tasks;
mod relay;
mod scripts;
mod sessions;

#[cfg(feature = "a2a")]
pub use a2a::RedisTaskStore;
pub use config::RedisConfig;
pub use connection::ConnectError;
pub use events::{RedisEventStore, Sent};
#[cfg(feature = "mcp")]
pub use mcp_tasks::RedisTaskRecords;
pub use relay::RedisRelay;
pub use sessions::RedisSessionStore;
