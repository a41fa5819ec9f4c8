//! A2A on the shared runtime: the generated revisions (1.0.1 from `a2a.proto`, 0.3.0 from its
//! JSON Schema) plus the hand-written glue that serves them — task store and lifecycle
//! ([`store`], [`executor`], [`service`]), push notifications ([`push`]), the agent card
//! ([`card`]), the JSON-RPC and HTTP+JSON bindings ([`server`], [`rest`]), 0.3 compatibility
//! ([`compat`]) and a typed client ([`client`]).
//!
//! Serving an agent: implement [`executor::AgentExecutor`], build an [`service::A2aService`]
//! and mount [`server::A2aServer::routes`] into a runtime `ServerBuilder`.
//!
//! Features: `server` (default) is the serving glue above and the runtime's HTTP stack;
//! `client` (default) is [`client`]. With neither, the crate is the generated types and method
//! tables, the agent card, the 0.3 conversions and the error vocabulary.

// No index that can panic is reachable from input: the glue reads maps and slices with `get`.
// Unit tests may index (a panic there is a failed test); generated code is the generator's.
#![cfg_attr(not(test), deny(clippy::indexing_slicing))]
#![deny(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]

#[cfg(feature = "server")]
pub mod agent;
#[cfg(any(feature = "server", feature = "client"))]
pub mod binding;
pub mod card;
#[cfg(feature = "client")]
#[cfg_attr(docsrs, doc(cfg(feature = "client")))]
pub mod client;
pub mod compat;
#[cfg(feature = "server")]
pub mod dispatch;
pub mod error;
#[cfg(feature = "server")]
pub mod executor;
// Generated items carry the upstream schema's descriptions where it has them, and none where
// it has not; hand-written docs cannot be added there, so the lint stops at this module.
#[allow(missing_docs)]
#[rustfmt::skip] // prettyplease formats generated code; rustfmt must not restyle it.
#[allow(clippy::indexing_slicing)]
pub mod generated;
#[cfg(feature = "server")]
pub mod push;
#[cfg(feature = "server")]
pub mod rest;
#[cfg(feature = "server")]
pub mod server;
#[cfg(feature = "server")]
pub mod service;
#[cfg(feature = "server")]
pub mod store;

pub use generated::v0_3_0 as v0_3;
pub use generated::v1_0_1 as v1;

/// The HTTP+JSON binding's media type.
pub const A2A_JSON_MEDIA_TYPE: &str = "application/a2a+json";
