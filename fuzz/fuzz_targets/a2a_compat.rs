//! A2A's 0.3 mapping (`protocols_a2a::compat`) on any JSON. Input: a 0.3 JSON-RPC request,
//! `{"method": …, "params": …}`, optionally with a `"result"`. Claims: mapping a request's params
//! to 1.0 never panics; mapping any 1.0 answer a server can produce (the result read as that
//! method's 1.0 result type) back to 0.3 never panics; mapping any JSON as an event or a card
//! never panics. With `A2A_COMPAT_STRICT=1` in the environment it also holds the mapping to
//! validity: a 0.3 request the generated 0.3 dispatcher accepts maps to one the 1.0 dispatcher
//! accepts (not a standing claim: an out-of-range `historyLength` is valid 0.3 and rightly
//! refused by 1.0).

#![no_main]

use libfuzzer_sys::fuzz_target;
use protocols_a2a::compat::{card_to_v03, event_to_v03, params_from_v03, result_to_v03, v1_method};
use protocols_a2a::v1;
use protocols_fuzz::a2a_generated;
use protocols_fuzz::codegen_samples::{Dispatched, GeneratedRevision, Receiver};
use serde_json::Value;
use serde_json::value::{RawValue, to_raw_value};

fuzz_target!(|data: &[u8]| {
    let Ok(Value::Object(fields)) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let method = fields
        .get("method")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let params = fields.get("params").cloned().unwrap_or(Value::Null);
    if let Some(method_v1) = v1_method(method) {
        request_maps_to_1_0(method, method_v1, &params);
    }
    if let Some(result) = fields.get("result") {
        for spec in v1::METHODS {
            answer_maps_to_0_3(spec.name, result);
        }
        let _ = event_to_v03(result);
        let _ = card_to_v03(result);
    }
});

fn request_maps_to_1_0(method: &str, method_v1: &'static str, params: &Value) {
    let mapped = params_from_v03(method_v1, params);
    if !strict() {
        return;
    }
    let (Some(legacy), Some(current)) = (revision("0.3.0"), revision("1.0.1")) else {
        return;
    };
    let Ok(given) = to_raw_value(params) else {
        return;
    };
    let sent = mapped
        .as_ref()
        .ok()
        .and_then(|mapped| to_raw_value(mapped).ok());
    let valid = |revision: &GeneratedRevision, method: &str, params: &RawValue| {
        matches!(
            (revision.dispatch)(Receiver::Server, true, method, Some(params)),
            Dispatched::Handled { .. }
        )
    };
    let accepted = sent.is_some_and(|sent| valid(current, method_v1, &sent));
    if valid(legacy, method, &given) && !accepted {
        panic!("valid 0.3 {method} {params} maps to invalid 1.0 {method_v1} {mapped:?}");
    }
}

/// The generated test support of one pinned A2A revision.
fn revision(name: &str) -> Option<&'static GeneratedRevision> {
    a2a_generated::REVISIONS
        .iter()
        .find(|revision| revision.revision == name)
}

/// Any JSON a 1.0 answer could hold, mapped to 0.3: must not panic. (The typed result enums
/// are no longer generated, so the mapping is not held to 0.3 validity here.)
fn answer_maps_to_0_3(method_v1: &'static str, result: &Value) {
    let _ = result_to_v03(method_v1, result);
}

fn strict() -> bool {
    static STRICT: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *STRICT.get_or_init(|| std::env::var_os("A2A_COMPAT_STRICT").is_some())
}
