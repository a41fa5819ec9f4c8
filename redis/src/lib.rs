//! Redis stores for the protocols runtime, so replicas sharing one Redis serve any session.
//!
//! [`RedisSessionStore`] implements the runtime's [`SessionStore`](protocols_runtime::SessionStore):
//! one Redis hash per session holding its serialized state, whose expiry Redis enforces itself
//! (sliding idle deadline, absolute deadline), so a client that never sends `DELETE` leaves no
//! key behind; the live-session limit holds across replicas; every command is bounded by a
//! timeout, so an outage is a `503` quickly and the connection comes back by itself.
//! Configured by [`RedisConfig`]. Event streams are not kept here yet.
//!
//! With the `a2a` feature, `RedisTaskStore` implements A2A's task store: tasks and push configs
//! any replica reads, live updates on Redis Streams and cancellation reaching the replica that
//! runs the task.

#![deny(missing_docs)]
#![cfg_attr(not(test), deny(clippy::indexing_slicing))]

#[cfg(feature = "a2a")]
mod a2a;
#[cfg(feature = "a2a")]
mod a2a_scripts;
mod config;
mod scripts;
mod sessions;

#[cfg(feature = "a2a")]
pub use a2a::RedisTaskStore;
pub use config::RedisConfig;
pub use sessions::{ConnectError, RedisSessionStore};
