//! The total JSON-RPC decoder (`protocols_runtime::jsonrpc::decode`) on any bytes. Claims: it
//! never panics; whatever it decodes re-encodes (`to_bytes`, the same bytes as `Serialize`) to a
//! body that decodes to the same message; every refusal's answer is itself a decodable response;
//! the depth limit refuses exactly the JSON nested deeper than it; tighter limits only refuse
//! more, never decode differently.

#![no_main]

use libfuzzer_sys::fuzz_target;
use protocols_fuzz::{depth, has_float};
use protocols_runtime::jsonrpc::{
    DecodeError, DecodeLimits, Message, Payload, Response, batch_to_bytes, decode, decode_message,
};
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let limits = DecodeLimits::default();
    let decoded = decode(data, &limits);
    depth_limit_is_exact(data, &limits, &decoded);
    tighter_limits_only_refuse_more(data, &decoded);
    match &decoded {
        Ok(Payload::Single(message)) => {
            reencodes(message);
            let alone = decode_message(data, &limits);
            assert_eq!(format!("{alone:?}"), format!("{:?}", Ok::<_, ()>(message)));
        }
        Ok(Payload::Batch(entries)) => {
            assert!(!entries.is_empty(), "an empty batch decoded");
            let messages: Vec<Message> = entries.iter().filter_map(|e| e.clone().ok()).collect();
            for message in &messages {
                reencodes(message);
            }
            for invalid in entries.iter().filter_map(|e| e.as_ref().err()) {
                answer_decodes(&invalid.to_response());
            }
            if !messages.is_empty() {
                let batch = batch_to_bytes(&messages);
                match decode(&batch, &unbounded()) {
                    Ok(Payload::Batch(again)) => assert_eq!(again.len(), messages.len()),
                    other => panic!("a re-encoded batch decoded as {other:?}"),
                }
            }
            assert!(decode_message(data, &limits).is_err(), "a batch read alone");
        }
        Err(error) => answer_decodes(&error.to_response()),
    }
});

/// The default limits without the size bound: a re-encoded body may be longer than its input
/// (an escape written out again), and its depth is the input's.
fn unbounded() -> DecodeLimits {
    DecodeLimits::default().max_bytes(usize::MAX)
}

fn reencodes(message: &Message) {
    let bytes = message.to_bytes();
    let serialized = serde_json::to_vec(message).expect("a message serializes");
    assert_eq!(
        bytes.as_ref(),
        serialized.as_slice(),
        "to_bytes and Serialize disagree"
    );
    if let Message::Response(response) = message {
        assert_eq!(
            response.to_bytes(),
            bytes,
            "Response::to_bytes and Message::to_bytes disagree"
        );
    }
    let again = decode_message(&bytes, &unbounded())
        .unwrap_or_else(|error| panic!("{message:?} re-encoded does not decode: {error:?}"));
    same_message(message, &again);
}

fn same_message(first: &Message, again: &Message) {
    match (first, again) {
        (Message::Request(a), Message::Request(b)) => {
            assert_eq!(a.id, b.id);
            assert_eq!(a.method, b.method);
            assert_eq!(raw(&a.params), raw(&b.params));
        }
        (Message::Notification(a), Message::Notification(b)) => {
            assert_eq!(a.method, b.method);
            assert_eq!(raw(&a.params), raw(&b.params));
        }
        (Message::Response(a), Message::Response(b)) => {
            assert_eq!(a.id(), b.id());
            match (a.outcome(), b.outcome()) {
                (Ok(a), Ok(b)) => assert_eq!(a.get(), b.get()),
                (Err(a), Err(b)) => {
                    assert_eq!((a.code, &a.message), (b.code, &b.message));
                    if !a.data.as_ref().is_some_and(has_float) {
                        assert_eq!(a.data, b.data);
                    }
                }
                (a, b) => panic!("outcome changed kind: {a:?} then {b:?}"),
            }
        }
        (a, b) => panic!("message changed kind: {a:?} then {b:?}"),
    }
}

fn raw(params: &Option<Box<serde_json::value::RawValue>>) -> Option<&str> {
    params.as_deref().map(serde_json::value::RawValue::get)
}

/// The answer to a refusal is a JSON-RPC error response that decodes as one.
fn answer_decodes(answer: &Response) {
    assert!(answer.is_error(), "a refusal answered with a success");
    let bytes = answer.to_bytes();
    match decode_message(&bytes, &DecodeLimits::default()) {
        Ok(Message::Response(again)) => assert!(again.is_error()),
        other => panic!("a refusal's answer decoded as {other:?}"),
    }
}

/// For JSON serde_json reads (at most its own 128 levels), `TooDeep` answers exactly when the
/// text nests deeper than the limit.
fn depth_limit_is_exact(
    data: &[u8],
    limits: &DecodeLimits,
    decoded: &Result<Payload, DecodeError>,
) {
    if data.len() > limits.max_bytes {
        return;
    }
    let Ok(value) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let too_deep = matches!(decoded, Err(DecodeError::TooDeep { .. }));
    assert_eq!(
        too_deep,
        depth(&value) > limits.max_depth,
        "depth {} judged {decoded:?}",
        depth(&value)
    );
}

/// What decodes under tight limits decodes the same under the default ones.
fn tighter_limits_only_refuse_more(data: &[u8], decoded: &Result<Payload, DecodeError>) {
    let tight = DecodeLimits::default().max_bytes(256).max_depth(3);
    if let Ok(payload) = decode(data, &tight) {
        assert_eq!(
            format!("{:?}", Ok::<_, DecodeError>(payload)),
            format!("{decoded:?}"),
            "tighter limits decoded differently"
        );
    }
}
