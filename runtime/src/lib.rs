//! `protocols-runtime`: what every protocol crate plugs into. It owns JSON-RPC 2.0, the SSE
//! format, the transports, sessions and event tails, talking back to the peer, hardening and
//! composition, and never names a protocol method: a protocol crate implements
//! [`RequestHandler`] and declares what differs in its [`Profile`]. Its API has two audiences,
//! and generated code comes in by a third, hidden door.
//!
//! **Serving** (whoever runs a server; usually reached through a protocol crate's builder):
//! - composition: [`server::Server`] and its builder, [`server::ListenerConfig`] for a listener
//!   the server owns;
//! - transports: [`http`] (Streamable HTTP), [`legacy`] (HTTP+SSE), [`stdio`], and
//!   [`connect`] for the side that opens a line-oriented conversation;
//! - hardening: [`hardening`] (`Host`/`Origin` checks, limits, CORS, security headers,
//!   bearer and JWT authentication) and [`stream`] (how SSE answers keep alive and end);
//! - sessions: [`SessionStore`], [`MemorySessionStore`], [`SessionLimits`], [`Clock`]; event
//!   tails for resumable streams in [`tail`].
//!
//! **Protocol authoring** (whoever writes a protocol crate on this runtime):
//! - the handler contract: [`RequestHandler`], [`Profile`], [`Context`], [`Reply`],
//!   [`Rejection`], [`RequestMeta`];
//! - JSON-RPC 2.0: [`jsonrpc`] ([`Request`], [`Notification`], [`Response`], [`ErrorObject`]);
//! - method tables and typed clients: [`method`] ([`method::MethodSpec`],
//!   [`method::RpcClient`]);
//! - talking back to the peer: [`Peer`] ([`peer`]); the SSE format: [`sse`]; quoting a
//!   caller's value in an error: [`quote()`].
//!
//! **Generated code** names the runtime only through `protocols_runtime::codegen`, hidden
//! from these docs and not an interface for hand-written code.
//!
//! The `server` feature (default) adds serving: [`http`], [`legacy`], [`server`], [`stream`]
//! and the hardening layers, with axum, hyper's server side and tower. Without it the crate
//! is the serde-and-tokio core a client or a types-only user needs: [`jsonrpc`], [`method`],
//! [`sse`], [`session`], [`peer`], [`connect`] and [`stdio`].
//!
//! ```no_run
//! use protocols_runtime::http::HttpConfig;
//! use protocols_runtime::server::Server;
//! use protocols_runtime::{Context, ErrorObject, Notification, Profile, Reply, Request, RequestHandler};
//! use serde_json::value::RawValue;
//!
//! struct Echo {
//!     profile: Profile,
//! }
//!
//! impl RequestHandler for Echo {
//!     type Session = ();
//!
//!     fn profile(&self) -> &Profile {
//!         &self.profile
//!     }
//!
//!     async fn handle(&self, request: Request, _cx: Context<()>) -> Reply {
//!         match request.method.as_str() {
//!             "echo" => Ok(request.params.unwrap_or_else(|| RawValue::NULL.to_owned())),
//!             _ => Err(ErrorObject::method_not_found()),
//!         }
//!     }
//!
//!     async fn notify(&self, _notification: Notification, _cx: Context<()>) {}
//! }
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let server = Server::builder()
//!     .streamable_http("/rpc", Echo { profile: Profile::new() }, HttpConfig::default())
//!     .build()?;
//! server.serve("127.0.0.1:8080".parse()?).await?;
//! # Ok(())
//! # }
//! ```

#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]
// Without `server`, a few crate-private pieces of the shared core that only the HTTP transports
// call (the SSE route of a peer, owed-work holds, the lazy session reaper) have no caller; a cfg
// on each would thread the feature through the core, so the lint is relaxed for that build only
// (the all-features clippy run still checks them).
#![cfg_attr(not(feature = "server"), allow(dead_code))]
// No index that can panic is reachable from input: code reads maps and slices with `get`.
// Unit tests may index (a panic there is a failed test).
#![cfg_attr(not(test), deny(clippy::indexing_slicing))]

// The door generated code names the runtime through; not part of the documented API.
#[doc(hidden)]
pub mod codegen;
mod config_setters;
pub mod connect;
#[cfg(feature = "server")]
mod connections;
mod dispatch;
pub mod handler;
pub mod hardening;
#[cfg(feature = "server")]
mod header_scan;
#[cfg(feature = "server")]
#[cfg_attr(docsrs, doc(cfg(feature = "server")))]
pub mod http;
pub mod jsonrpc;
#[cfg(feature = "server")]
#[cfg_attr(docsrs, doc(cfg(feature = "server")))]
pub mod legacy;
#[cfg(feature = "server")]
mod listen;
pub mod method;
mod panic_boundary;
pub mod peer;
pub mod quote;
pub mod relay;
#[cfg(feature = "server")]
#[cfg_attr(docsrs, doc(cfg(feature = "server")))]
pub mod server;
pub mod session;
pub mod sse;
pub mod stdio;
pub mod store;
#[cfg(feature = "server")]
#[cfg_attr(docsrs, doc(cfg(feature = "server")))]
pub mod stream;
mod tagged;
pub mod tail;
mod test_support;

pub use handler::{
    BatchPolicy, Context, ErrorHead, Profile, Rejection, Reply, RequestHandler, RequestMeta,
    Served, SessionMode, Unsessioned,
};
pub use jsonrpc::{ErrorObject, Message, Notification, Request, RequestId, Response};
pub use peer::{CancelConvention, CancelReply, Peer, PeerError};
pub use quote::quote;
#[cfg(feature = "test-support")]
#[doc(hidden)]
pub use session::ManualClock;
pub use session::{
    Clock, MemorySessionStore, Session, SessionId, SessionLimits, SessionStore, SystemClock,
};
