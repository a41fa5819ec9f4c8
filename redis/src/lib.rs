//! Redis stores for the protocols runtime, so replicas sharing one Redis serve any session.
//!
//! [`RedisSessionStore`] implements the runtime's [`SessionStore`](protocols_runtime::SessionStore):
//! one Redis hash per session holding its serialized state, whose expiry Redis enforces itself
//! (sliding idle deadline, absolute deadline), so a client that never sends `DELETE` leaves no
//! key behind; the live-session limit holds across replicas; every command is bounded by a
//! timeout, so an outage is a `503` quickly and the connection comes back by itself.
//! [`RedisRelay`] implements the runtime's [`Relay`](protocols_runtime::relay::Relay) on Redis
//! pub/sub, so an answer, a cancellation or a broadcast reaches the replica it is for.
//! Configured by [`RedisConfig`]. Event streams are not kept here yet.

#![deny(missing_docs)]
#![cfg_attr(not(test), deny(clippy::indexing_slicing))]

mod config;
mod relay;
mod scripts;
mod sessions;

pub use config::RedisConfig;
pub use relay::RedisRelay;
pub use sessions::{ConnectError, RedisSessionStore};
