//! `protocols-runtime`: what every protocol crate plugs into. It owns JSON-RPC 2.0, the
//! transports, sessions, event tails and hardening, and never names a protocol method; the
//! protocol crates describe themselves through [`method`] tables and the seam traits.

pub mod hardening;
pub mod method;
