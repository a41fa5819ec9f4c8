//! Test support shared by the workspace's HTTP tests, so each rule lives once: reading an SSE
//! response with the runtime's own decoder ([`sse`]), POSTing JSON-RPC the way a Streamable
//! HTTP client does ([`rpc`]), HTTP/1.1 over a raw socket for what a client will not send
//! ([`raw`]), a real JWT issuer with a JWKS endpoint ([`issuer`]), a throwaway
//! `redis-server` on a free port ([`redis`]), waiting for a spawned server to listen
//! ([`listening`]), and the contract every session store passes with
//! a store whose replicas share serialized records ([`sessions`]), and the contract every event
//! store passes with a store whose outage switch fails every call ([`events`]). A dev-dependency
//! only; never part of a published crate.

// A test-support crate: its helpers fail the calling test the way an assertion does.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]
#![deny(missing_docs)]

pub mod events;
pub mod issuer;
pub mod listening;
pub mod raw;
pub mod redis;
pub mod rpc;
pub mod sessions;
pub mod sse;

pub use listening::{accepts, listening_within};
pub use raw::{RawAnswer, RawConnection, raw_request};
pub use redis::{RedisServer, Reply};
pub use rpc::{ACCEPT_EITHER, event_stream_get, json_rpc_post, request};
pub use sse::{Drained, SseReader, drain};
