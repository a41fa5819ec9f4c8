//! A2A on the shared runtime: the generated revisions (1.0.1 from `a2a.proto`, 0.3.0 from its
//! JSON Schema) plus the hand-written glue that serves them — task store and lifecycle
//! ([`store`], [`executor`], [`service`]), push notifications ([`push`]), the agent card
//! ([`card`]), the JSON-RPC and HTTP+JSON bindings ([`server`], [`rest`]), 0.3 compatibility
//! ([`compat`]) and a typed client ([`client`]).
//!
//! Serving an agent: implement [`executor::AgentExecutor`], build an [`service::A2aService`]
//! and mount [`server::A2aServer::routes`] into a runtime `ServerBuilder`.

// No index that can panic is reachable from input: the glue reads maps and slices with `get`.
// Unit tests may index (a panic there is a failed test); generated code is the generator's.
#![cfg_attr(not(test), deny(clippy::indexing_slicing))]

pub mod agent;
pub mod card;
pub mod client;
pub mod compat;
pub mod dispatch;
pub mod error;
pub mod executor;
#[rustfmt::skip] // prettyplease formats generated code; rustfmt must not restyle it.
#[allow(clippy::indexing_slicing)]
pub mod generated;
pub mod push;
pub mod rest;
pub mod server;
pub mod service;
pub mod store;

pub use generated::v0_3_0 as v0_3;
pub use generated::v1_0_1 as v1;

/// The HTTP+JSON binding's media type.
pub const A2A_JSON_MEDIA_TYPE: &str = "application/a2a+json";
