//! The door generated code comes in by, and only generated code: `protocols-codegen` names
//! runtime items solely through `protocols_runtime::codegen::…`, so what generated modules
//! stand on is one list, apart from the API server and protocol authors read (hidden from the
//! docs, as `tonic::codegen` is). It re-exports the method-table and client types generated
//! code names, and owns the params/result codec rules generated dispatchers and clients share.
//! Nothing here is a stable interface for hand-written code.

use futures::StreamExt;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;

use crate::method::RawResultStream;

pub use crate::handler::Reply;
pub use crate::jsonrpc::ErrorObject;
pub use crate::method::{
    Answer, ClientError, ClientStream, Direction, DispatchError, HttpRoute, MethodKind, MethodSpec,
    ResultStream, RpcClient, RpcMethod, RpcNotification,
};
pub use crate::tagged::read_tagged;

/// Decodes the params of `method`; absent params decode as `null`, so a method whose params are
/// required refuses them with -32602.
pub fn decode_params<T: DeserializeOwned>(
    method: &'static str,
    params: Option<&RawValue>,
) -> Result<T, DispatchError> {
    let text = params.map_or("null", RawValue::get);
    serde_json::from_str(text).map_err(|source| DispatchError::InvalidParams { method, source })
}

/// Decodes the params of a method whose params may be omitted: absent and `null` are `None`.
pub fn decode_optional_params<T: DeserializeOwned>(
    method: &'static str,
    params: Option<&RawValue>,
) -> Result<Option<T>, DispatchError> {
    match params {
        Some(raw) if raw.get() != "null" => decode_params(method, Some(raw)).map(Some),
        _ => Ok(None),
    }
}

/// Serializes a handler's typed answer into the runtime's [`Reply`]. A result that cannot be
/// serialized is the server's fault: -32603, logged, its content never sent.
pub fn reply<T: Serialize>(result: Result<T, ErrorObject>) -> Reply {
    let value = result?;
    serde_json::value::to_raw_value(&value).map_err(|error| {
        tracing::error!(%error, "a handler result could not be serialized");
        ErrorObject::internal_error()
    })
}

/// Serializes a call's params; `None` and values serializing to `null` send no params.
pub fn encode_params<P: Serialize>(
    method: &'static str,
    params: &P,
) -> Result<Option<Box<RawValue>>, ClientError> {
    let raw = serde_json::value::to_raw_value(params)
        .map_err(|source| ClientError::Unserializable { method, source })?;
    Ok((raw.get() != "null").then_some(raw))
}

/// Decodes the result of the request `method` it answers.
pub fn decode_result<T: DeserializeOwned>(
    method: &'static str,
    result: &RawValue,
) -> Result<T, ClientError> {
    serde_json::from_str(result.get())
        .map_err(|source| ClientError::InvalidResult { method, source })
}

/// Decodes each raw answer of a streaming call as the result type of `method`.
pub fn decode_stream<T: DeserializeOwned + 'static>(
    method: &'static str,
    stream: RawResultStream,
) -> ClientStream<T> {
    Box::pin(stream.map(move |item| item.and_then(|raw| decode_result(method, &raw))))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(json: &str) -> Box<RawValue> {
        RawValue::from_string(json.to_owned()).unwrap()
    }

    #[derive(Debug, PartialEq, serde::Deserialize, Serialize)]
    struct Named {
        name: String,
    }

    #[test]
    fn invalid_params_quote_the_decoders_reason_bounded_and_name_the_method_once() {
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        enum Kind {
            Small,
        }
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct Params {
            kind: Kind,
        }
        let value = "v".repeat(100);
        let params = raw(&format!(r#"{{"kind":"{value}"}}"#));
        let error = decode_params::<Params>("tools/call", Some(&params)).unwrap_err();
        let text = error.to_string();
        assert!(!text.contains(&value), "{text}");
        assert_eq!(text.matches("tools/call").count(), 1, "{text}");
        let quoted = text
            .strip_prefix("invalid params for tools/call: `")
            .and_then(|rest| rest.strip_suffix('`'))
            .unwrap_or_else(|| panic!("not quoted: {text}"));
        assert!(quoted.len() <= crate::quote::MAX_QUOTED_BYTES, "{quoted}");
        assert_eq!(
            error.to_error_object().message,
            "invalid params for tools/call"
        );
    }

    #[test]
    fn absent_required_params_are_invalid_params_naming_the_method_not_the_input() {
        let absent = decode_params::<Named>("tools/call", None).map_err(ErrorObject::from);
        let hostile = decode_params::<Named>("tools/call", Some(&raw(r#"{"nom":"<script>"}"#)))
            .map_err(ErrorObject::from);
        assert_eq!(absent.map_err(|e| e.code), Err(-32602));
        let error = hostile.err().unwrap();
        assert_eq!(error.code, -32602);
        assert_eq!(error.message, "invalid params for tools/call");
        assert!(error.data.is_none());
    }

    #[test]
    fn optional_params_read_absent_and_null_as_none() {
        assert_eq!(decode_optional_params::<Named>("m", None).ok(), Some(None));
        assert_eq!(
            decode_optional_params::<Named>("m", Some(&raw("null"))).ok(),
            Some(None)
        );
        let present = decode_optional_params::<Named>("m", Some(&raw(r#"{"name":"a"}"#)));
        assert_eq!(present.ok(), Some(Some(Named { name: "a".into() })));
        assert!(decode_optional_params::<Named>("m", Some(&raw("[]"))).is_err());
    }

    #[test]
    fn a_reply_is_the_serialized_result_or_the_handlers_error() {
        let ok = reply(Ok(Named { name: "a".into() })).map(|raw| raw.get().to_owned());
        assert_eq!(ok.as_deref(), Ok(r#"{"name":"a"}"#));
        let refused = reply::<Named>(Err(ErrorObject::method_not_found()));
        assert_eq!(refused.map(|_| ()), Err(ErrorObject::method_not_found()));
    }

    #[test]
    fn params_serializing_to_null_are_sent_as_no_params() {
        assert!(encode_params("m", &None::<Named>).unwrap().is_none());
        let some = encode_params("m", &Named { name: "a".into() }).unwrap();
        assert_eq!(
            some.map(|raw| raw.get().to_owned()).as_deref(),
            Some(r#"{"name":"a"}"#)
        );
    }

    #[test]
    fn a_result_that_does_not_fit_its_method_is_an_invalid_result() {
        let outcome = decode_result::<Named>("tools/call", &raw("[1]"));
        assert!(matches!(
            outcome,
            Err(ClientError::InvalidResult {
                method: "tools/call",
                ..
            })
        ));
    }
}
