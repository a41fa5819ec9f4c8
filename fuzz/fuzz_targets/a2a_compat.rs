//! A2A's 0.3 mapping (`protocols_a2a::compat`) on any JSON. Input: a 0.3 JSON-RPC request,
//! `{"method": …, "params": …}`, optionally with a `"result"`. Claims: mapping a request's params
//! to 1.0 never panics; mapping any 1.0 answer a server can produce (the result read as that
//! method's 1.0 result type) back to 0.3 never panics; mapping any JSON as an event or a card
//! never panics. With `A2A_COMPAT_STRICT=1` in the environment it also holds the mapping to
//! validity: a valid 0.3 request maps to a valid 1.0 one, a 1.0 answer to a valid 0.3 one (not
//! a standing claim: an out-of-range `historyLength` is valid 0.3 and rightly refused by 1.0).

#![no_main]

use libfuzzer_sys::fuzz_target;
use protocols_a2a::compat::{card_to_v03, event_to_v03, params_from_v03, result_to_v03, v1_method};
use protocols_a2a::{v0_3 as legacy, v1};
use serde_json::Value;

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
    let request = serde_json::json!({ "method": method, "params": params });
    if serde_json::from_value::<legacy::ClientRequest>(request).is_ok()
        && let Err(error) = v1::ClientRequest::from_method(method_v1, Some(mapped.clone()))
    {
        panic!("valid 0.3 {method} {params} maps to invalid 1.0 {method_v1} {mapped}: {error:?}");
    }
}

/// The 0.3 method a 1.0 method answers for, if any.
fn legacy_method(method_v1: &str) -> Option<&'static str> {
    legacy::METHODS
        .iter()
        .map(|spec| spec.name)
        .find(|name| v1_method(name) == Some(method_v1))
}

fn answer_maps_to_0_3(method_v1: &'static str, result: &Value) {
    let Ok(typed) = v1::AgentResult::decode_result(method_v1, result.clone()) else {
        return;
    };
    let Ok(produced) = serde_json::to_value(&typed) else {
        return;
    };
    let mapped = result_to_v03(method_v1, &produced);
    if !strict() {
        return;
    }
    let Some(method) = legacy_method(method_v1) else {
        return;
    };
    if let Err(error) = legacy::AgentResult::decode_result(method, mapped.clone()) {
        panic!(
            "1.0 {method_v1} result {produced} maps to invalid 0.3 {method} {mapped}: {error:?}"
        );
    }
}

fn strict() -> bool {
    static STRICT: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *STRICT.get_or_init(|| std::env::var_os("A2A_COMPAT_STRICT").is_some())
}

