//! Every generated MCP dispatcher of every revision, both sides, requests and
//! notifications, on any JSON. Input: a message, `{"method": …, "params": …}`. Claims: dispatching
//! never panics; the params a handler receives re-encode to params that dispatch to the same
//! handler method unchanged (see `protocols_fuzz::dispatch_round_trips`).

#![no_main]

use libfuzzer_sys::fuzz_target;
use protocols_fuzz::{dispatch_round_trips, mcp_generated};

fuzz_target!(|data: &[u8]| dispatch_round_trips(mcp_generated::REVISIONS, data));
