//! ACP (Agent Client Protocol) on the shared runtime. `generated` holds every revision's types
//! and method tables (written by `cargo run -p codegen`); the hand-written glue around it
//! negotiates the version ([`version`]), keeps per-connection state ([`connection`]), serves an
//! agent ([`agent`]) whose methods call back into the client ([`client_handle`]), keeps each
//! session's conversation, bounded, for `session/load` to replay ([`history`]), declares ACP's
//! headers and cancellation to the runtime ([`profile`]), serves it over the remote
//! (Streamable HTTP and WebSocket) transport ([`remote`]), and connects a typed client to an
//! agent over stdio or HTTP ([`client`]).

// No input may reach a panicking index: outside tests, every lookup is `get` or a pattern.
#![cfg_attr(not(test), deny(clippy::indexing_slicing))]

pub mod agent;
pub mod client;
pub mod client_handle;
pub mod connection;
#[rustfmt::skip] // prettyplease formats generated code; rustfmt must not restyle it.
pub mod generated;
pub mod history;
pub mod profile;
pub mod remote;
mod remote_client;
pub mod serve;
pub mod updates;
pub mod version;

pub use agent::{AcpAgentServer, AcpContext, AcpService, Extensions, NoExtensions, NotServed};
pub use client_handle::{CallError, ClientHandle};
pub use connection::{AcpConnection, Capability, ClientFeatures};
pub use version::Revision;
