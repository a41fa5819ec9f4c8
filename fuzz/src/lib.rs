//! What the fuzz targets share: the round-trip claim every generated dispatcher must keep, and
//! small readers of the targets' input formats. Each target in
//! `fuzz_targets/` states its own claims; a broken claim panics, which libFuzzer reports as a
//! crash with the input that broke it.

pub use codegen::samples as codegen_samples;
use codegen::samples::{Dispatched, GeneratedRevision, Receiver};
use serde_json::Value;
use serde_json::value::RawValue;

// Each protocol crate's generated test support (a recording handler per side of every pinned
// revision, behind that revision's generated dispatchers), reused so the targets reach every
// dispatcher codegen emits, drafts included, with no list kept by hand. Generated text keeps
// the generator's layout, so rustfmt leaves it alone.
#[path = "../../protocols/a2a/tests/support/generated/mod.rs"]
#[rustfmt::skip]
pub mod a2a_generated;
#[path = "../../protocols/acp/tests/support/generated/mod.rs"]
#[rustfmt::skip]
pub mod acp_generated;
#[path = "../../protocols/mcp/tests/support/generated/mod.rs"]
#[rustfmt::skip]
pub mod mcp_generated;

/// The claim for every generated dispatcher of `revisions` (both receivers, requests and
/// notifications) on a message `{"method": …, "params": …}`: dispatching never panics, the
/// params a handler receives encode again, and those encoded params dispatch to the same
/// handler method with the same params.
pub fn dispatch_round_trips(revisions: &[GeneratedRevision], data: &[u8]) {
    let Some((method, params)) = method_and_params(data) else {
        return;
    };
    for revision in revisions {
        for receiver in [Receiver::Server, Receiver::Client] {
            for request in [true, false] {
                let first = (revision.dispatch)(receiver, request, &method, params.as_deref());
                holds_again(revision, receiver, request, &method, first);
            }
        }
    }
}

/// A first dispatch's handled params, dispatched once more, must reach the handler unchanged.
fn holds_again(
    revision: &GeneratedRevision,
    receiver: Receiver,
    request: bool,
    method: &str,
    first: Dispatched,
) {
    let Dispatched::Handled {
        method: handled,
        params,
    } = first
    else {
        return;
    };
    let at = format!("{} {} {method}", revision.protocol, revision.revision);
    let Some(params) = params else {
        return;
    };
    let seen = params.unwrap_or_else(|error| panic!("{at}: decoded params do not encode: {error}"));
    let raw = serde_json::value::to_raw_value(&seen)
        .unwrap_or_else(|error| panic!("{at}: encoded params are not JSON text: {error}"));
    let again = (revision.dispatch)(receiver, request, method, Some(&raw));
    let Dispatched::Handled {
        method: handled_again,
        params: Some(Ok(seen_again)),
    } = again
    else {
        panic!("{at}: re-encoded params {seen} do not dispatch again: {again:?}");
    };
    assert_eq!(
        handled_again, handled,
        "{at}: a round trip changed the handler method"
    );
    if !has_float(&seen) {
        assert_eq!(seen_again, seen, "{at}: params changed in a round trip");
    }
}

/// The method and params a message target reads from its input: `{"method": …, "params": …}`.
pub fn method_and_params(data: &[u8]) -> Option<(String, Option<Box<RawValue>>)> {
    let Value::Object(fields) = serde_json::from_slice(data).ok()? else {
        return None;
    };
    let method = fields.get("method")?.as_str()?.to_owned();
    let params = match fields.get("params") {
        Some(params) => Some(serde_json::value::to_raw_value(params).ok()?),
        None => None,
    };
    Some((method, params))
}

/// How deeply `value` nests arrays and objects (a scalar is 0, `[]` is 1).
pub fn depth(value: &Value) -> usize {
    match value {
        Value::Array(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
        Value::Object(fields) => 1 + fields.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

/// Whether `value` holds a number that is neither an `i64` nor a `u64`: serde_json parses those
/// without exact rounding, so text holding one need not survive a round trip bit for bit.
pub fn has_float(value: &Value) -> bool {
    match value {
        Value::Number(number) => number.is_f64(),
        Value::Array(items) => items.iter().any(has_float),
        Value::Object(fields) => fields.values().any(has_float),
        _ => false,
    }
}

/// Splits an HTTP-like input, `Name: value` lines then a blank line then the body, into its
/// header lines and body. Input without a blank line is all body.
pub fn split_head(data: &[u8]) -> (Vec<(&[u8], &[u8])>, &[u8]) {
    let Some(blank) = data.windows(2).position(|pair| pair == b"\n\n") else {
        return (Vec::new(), data);
    };
    let (head, body) = data.split_at(blank);
    let headers = head
        .split(|byte| *byte == b'\n')
        .filter_map(|line| {
            let colon = line.iter().position(|byte| *byte == b':')?;
            let (name, value) = line.split_at(colon);
            Some((name, value.get(1..)?.trim_ascii()))
        })
        .collect();
    (headers, body.get(2..).unwrap_or_default())
}

/// A header map from header lines, skipping any name or value HTTP would not carry.
pub fn header_map(lines: &[(&[u8], &[u8])]) -> http::HeaderMap {
    let mut headers = http::HeaderMap::new();
    for (name, value) in lines {
        let (Ok(name), Ok(value)) = (
            http::HeaderName::from_bytes(name),
            http::HeaderValue::from_bytes(value),
        ) else {
            continue;
        };
        headers.append(name, value);
    }
    headers
}
