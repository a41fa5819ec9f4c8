//! The demo agents behind the runnable servers. One shared core ([`core`]) decides what the demo
//! answers; each protocol module only translates it to its protocol, so the three protocols in
//! `all-protocols` behave alike.

// No index that can panic is reachable from input: code reads maps and slices with `get`.
// Unit tests may index (a panic there is a failed test).
#![cfg_attr(not(test), deny(clippy::indexing_slicing))]

pub mod a2a_demo;
pub mod acp_demo;
pub mod core;
pub mod mcp_demo;
pub mod redis_a2a;
pub mod redis_mcp;
pub mod redis_sessions;
