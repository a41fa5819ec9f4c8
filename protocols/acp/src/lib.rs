//! ACP (Agent Client Protocol) on the shared runtime. `generated` holds every revision's types
//! and method tables (written by `cargo run -p codegen`); the hand-written glue around it
//! negotiates the version ([`version`]), keeps per-connection state ([`connection`]), serves an
//! agent ([`agent`]) whose methods call back into the client ([`client_handle`]), keeps each
//! session's conversation, bounded, for `session/load` to replay ([`history`]), declares ACP's
//! headers and cancellation to the runtime ([`profile`]), serves it over the remote
//! (Streamable HTTP and WebSocket) transport ([`remote`]), and connects a typed client to an
//! agent over stdio or HTTP ([`client`]).
//!
//! Features: `server` (default) adds the agent's remote transport ([`remote`], with the
//! runtime's HTTP stack) and the agent-side helpers ([`history`], [`updates`]); `client`
//! (default) adds [`client`] with its HTTP and WebSocket transports. Either one brings the
//! transport-free glue both sides share ([`agent`], [`serve`], [`connection`], [`profile`]);
//! with neither, the crate is the generated types and method tables and [`version`].

// No input may reach a panicking index: outside tests, every lookup is `get` or a pattern.
#![cfg_attr(not(test), deny(clippy::indexing_slicing))]
#![deny(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]

#[cfg(any(feature = "server", feature = "client"))]
pub mod agent;
#[cfg(feature = "client")]
#[cfg_attr(docsrs, doc(cfg(feature = "client")))]
pub mod client;
#[cfg(any(feature = "server", feature = "client"))]
pub mod client_handle;
#[cfg(any(feature = "server", feature = "client"))]
pub mod connection;
// Generated items carry the upstream schema's descriptions where it has them, and none where
// it has not; hand-written docs cannot be added there, so the lint stops at this module.
#[allow(missing_docs)]
#[rustfmt::skip] // prettyplease formats generated code; rustfmt must not restyle it.
pub mod generated;
#[cfg(feature = "server")]
pub mod history;
#[cfg(any(feature = "server", feature = "client"))]
pub mod profile;
#[cfg(feature = "server")]
#[cfg_attr(docsrs, doc(cfg(feature = "server")))]
pub mod remote;
#[cfg(feature = "client")]
mod remote_client;
#[cfg(any(feature = "server", feature = "client"))]
pub mod serve;
#[cfg(feature = "server")]
pub mod updates;
pub mod version;

#[cfg(any(feature = "server", feature = "client"))]
pub use agent::{AcpAgentServer, AcpContext, AcpService, Extensions, NoExtensions, NotServed};
#[cfg(any(feature = "server", feature = "client"))]
pub use client_handle::{CallError, ClientHandle};
#[cfg(any(feature = "server", feature = "client"))]
pub use connection::{AcpConnection, Capability, ClientFeatures};
pub use version::Revision;
