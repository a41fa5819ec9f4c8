//! The demo agents behind the runnable servers. One shared core ([`core`]) decides what the demo
//! answers; each protocol module only translates it to its protocol, so the three protocols in
//! `all-protocols` behave alike.

pub mod a2a_demo;
pub mod acp_demo;
pub mod core;
pub mod mcp_demo;
