//! `protocols-runtime`: what every protocol crate plugs into. It owns JSON-RPC 2.0, the
//! transports, sessions, event tails and hardening, and never names a protocol method; the
//! protocol crates describe themselves through [`method`] tables and the seam traits in
//! [`handler`].

mod dispatch;
pub mod connect;
pub mod handler;
pub mod http;
pub mod hardening;
pub mod jsonrpc;
pub mod legacy;
pub mod method;
pub mod peer;
pub mod server;
pub mod session;
pub mod sse;
pub mod stdio;
pub mod stream;
pub mod tail;

pub use handler::{BatchPolicy, Context, Profile, Rejection, Reply, RequestHandler, RequestMeta, Unsessioned};
pub use jsonrpc::{ErrorObject, Message, Notification, Request, RequestId, Response};
pub use peer::{CancelConvention, CancelReply, Peer, PeerError};
pub use session::{Clock, ManualClock, MemorySessionStore, Session, SessionId, SessionLimits, SessionStore, SystemClock};
