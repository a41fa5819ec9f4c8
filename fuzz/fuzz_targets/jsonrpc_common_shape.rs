//! Differential: the hand-written common-shape reader against the total decoder, on any text.
//! The contract (`runtime/src/jsonrpc/common_shape.rs`): what the reader reads, the total
//! decoder reads as the same message; text serde_json refuses is never read; so one message
//! decodes to the same answer, acceptance or refusal and its message, with or without the
//! reader in front.

#![no_main]

use libfuzzer_sys::fuzz_target;
use protocols_runtime::jsonrpc::fuzzing::{decode_total, read_common_shape};
use protocols_runtime::jsonrpc::{DecodeLimits, Payload, decode};
use serde::de::IgnoredAny;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let fast = read_common_shape(text);
    let total = decode_total(text);
    if fast.is_some() && serde_json::from_str::<IgnoredAny>(text).is_err() {
        panic!("the common-shape reader read text serde_json refuses");
    }
    if let Some(message) = fast {
        assert_eq!(
            format!("{:?}", Ok::<_, ()>(message)),
            format!("{total:?}"),
            "the common-shape reader and the total decoder disagree"
        );
    }
    // The whole decoder, reader in front, answers one object exactly as the total decoder does
    // (within the limits it checks before either reader runs).
    if text.trim_ascii_start().starts_with('{') {
        let limits = DecodeLimits::default()
            .max_bytes(usize::MAX)
            .max_depth(usize::MAX);
        let whole = decode(data, &limits).map(|payload| match payload {
            Payload::Single(message) => message,
            Payload::Batch(_) => panic!("an object decoded as a batch"),
        });
        assert_eq!(
            format!("{whole:?}"),
            format!("{total:?}"),
            "the decoder with the reader in front answers differently"
        );
    }
});
