//! What the fuzz targets share: the round-trip claim every generated request, notification and
//! result enum must keep, and small readers of the targets' input formats. Each target in
//! `fuzz_targets/` states its own claims; a broken claim panics, which libFuzzer reports as a
//! crash with the input that broke it.

use std::fmt::Debug;

use protocols_runtime::method::DispatchError;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// A generated request or notification enum (`ClientRequest`, `AgentNotification`, …): decoded
/// from `{"method", "params"}` by method name.
pub trait GeneratedMessage: Sized + Debug + Serialize + DeserializeOwned {
    fn from_method(method: &str, params: Option<Value>) -> Result<Self, DispatchError>;
    fn method(&self) -> &'static str;
    fn params(&self) -> Result<Option<Value>, serde_json::Error>;
}

/// A generated result enum (`ClientResult`, `ServerResult`, …): decoded by the method it answers.
pub trait GeneratedResult: Sized + Debug + Serialize {
    fn decode_result(method: &str, result: Value) -> Result<Self, DispatchError>;
    fn method(&self) -> &'static str;
}

/// Implements [`GeneratedMessage`] for generated enums through their inherent methods.
macro_rules! generated_messages {
    ($($message:ty),+ $(,)?) => {$(
        impl $crate::GeneratedMessage for $message {
            fn from_method(
                method: &str,
                params: Option<serde_json::Value>,
            ) -> Result<Self, protocols_runtime::method::DispatchError> {
                <$message>::from_method(method, params)
            }
            fn method(&self) -> &'static str {
                <$message>::method(self)
            }
            fn params(&self) -> Result<Option<serde_json::Value>, serde_json::Error> {
                <$message>::params(self)
            }
        }
    )+};
}

/// Implements [`GeneratedResult`] for generated result enums through their inherent methods.
macro_rules! generated_results {
    ($($result:ty),+ $(,)?) => {$(
        impl $crate::GeneratedResult for $result {
            fn decode_result(
                method: &str,
                result: serde_json::Value,
            ) -> Result<Self, protocols_runtime::method::DispatchError> {
                <$result>::decode_result(method, result)
            }
            fn method(&self) -> &'static str {
                <$result>::method(self)
            }
        }
    )+};
}

/// Both traits for the six enums of every revision of a protocol (its crate, then the names of
/// its two sides).
macro_rules! every_revision {
    ($krate:ident, $requester:ident, $answerer:ident: $($revision:ident),+) => {$(
        generated_messages!(
            $krate::generated::$revision::ClientRequest,
            $krate::generated::$revision::ClientNotification,
            $krate::generated::$revision::$requester,
            $krate::generated::$revision::$answerer,
        );
    )+};
}

macro_rules! every_revision_results {
    ($krate:ident, $answerer:ident: $($revision:ident),+) => {$(
        generated_results!(
            $krate::generated::$revision::ClientResult,
            $krate::generated::$revision::$answerer,
        );
    )+};
}

every_revision!(protocols_mcp, ServerRequest, ServerNotification:
    v2024_11_05, v2025_03_26, v2025_06_18, v2025_11_25, v2026_07_28);
every_revision_results!(protocols_mcp, ServerResult:
    v2024_11_05, v2025_03_26, v2025_06_18, v2025_11_25, v2026_07_28);
every_revision!(protocols_a2a, AgentRequest, AgentNotification: v0_3_0, v1_0_1);
every_revision_results!(protocols_a2a, AgentResult: v0_3_0, v1_0_1);
every_revision!(protocols_acp, AgentRequest, AgentNotification: v1, v1_unstable, v2, v2_unstable);
every_revision_results!(protocols_acp, AgentResult: v1, v1_unstable, v2, v2_unstable);

/// The claim for one message type: `data` either does not decode, or decodes to a message whose
/// params re-encode to JSON that decodes, by the same method, to the same params; and its own
/// serialization (`{"method", "params"}`) decodes again.
pub fn message_round_trips<M: GeneratedMessage>(data: &[u8]) {
    let Ok(message) = serde_json::from_slice::<M>(data) else {
        return;
    };
    let method = message.method();
    let params = message
        .params()
        .unwrap_or_else(|error| panic!("{method}: decoded params do not encode: {error}"));
    let again = M::from_method(method, params.clone()).unwrap_or_else(|error| {
        panic!("{method}: re-encoded params {params:?} do not decode: {error:?}")
    });
    let params_again = again
        .params()
        .unwrap_or_else(|error| panic!("{method}: params decoded twice do not encode: {error}"));
    assert_eq!(
        params_again, params,
        "{method}: params changed in a round trip"
    );
    let wire = serde_json::to_vec(&message)
        .unwrap_or_else(|error| panic!("{method}: the message does not serialize: {error}"));
    if let Err(error) = serde_json::from_slice::<M>(&wire) {
        panic!("{method}: its own serialization does not decode: {error}");
    }
}

/// The claim for one result type, for a result of `method`: it either does not decode, or it
/// re-encodes to JSON that decodes as a result of the same method to the same JSON.
pub fn result_round_trips<R: GeneratedResult>(method: &str, result: &Value) {
    let Ok(decoded) = R::decode_result(method, result.clone()) else {
        return;
    };
    assert_eq!(decoded.method(), method, "a result changed its method");
    let encoded = serde_json::to_value(&decoded)
        .unwrap_or_else(|error| panic!("{method}: a decoded result does not encode: {error}"));
    let again = R::decode_result(method, encoded.clone()).unwrap_or_else(|error| {
        panic!("{method}: re-encoded result {encoded} does not decode: {error:?}")
    });
    let encoded_again = serde_json::to_value(&again).ok();
    assert_eq!(
        encoded_again.as_ref(),
        Some(&encoded),
        "{method}: result changed in a round trip"
    );
}

/// The method and result a results target reads from its input: `{"method": …, "result": …}`.
pub fn method_and_result(data: &[u8]) -> Option<(String, Value)> {
    let Value::Object(mut fields) = serde_json::from_slice(data).ok()? else {
        return None;
    };
    let method = fields.get("method")?.as_str()?.to_owned();
    let result = fields.remove("result")?;
    Some((method, result))
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
