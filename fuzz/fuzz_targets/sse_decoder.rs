//! The incremental SSE decoder (`protocols_runtime::sse::SseDecoder`) on any byte stream.
//! Input: one byte choosing the event size limit, one byte seeding where the stream is cut
//! into chunks, then the stream. Claims: it never panics; up to its first error, the events a
//! stream decodes to do not depend on how it is cut into chunks, nor do the resume cursor and
//! retry it leaves; every event it yields re-encodes to bytes a fresh decoder reads back as the
//! same event. Written against the decoder's public API only (push, next_event, last_event_id,
//! retry, encode), so it does not care what an event id is.

#![no_main]

use libfuzzer_sys::fuzz_target;
use protocols_runtime::sse::SseDecoder;

fuzz_target!(|data: &[u8]| {
    let [limit, cut_seed, stream @ ..] = data else {
        return;
    };
    let limit = match limit % 4 {
        0 => 16,
        1 => 256,
        2 => 4096,
        _ => 1 << 20,
    };
    let whole = decode(limit, [stream]);
    let cut = decode(limit, chunks(stream, *cut_seed));
    assert_eq!(
        whole, cut,
        "cutting the stream into chunks changed what it decodes to"
    );
    let bytewise = decode(limit, stream.chunks(1));
    assert_eq!(
        whole, bytewise,
        "feeding the stream byte by byte changed what it decodes to"
    );
    for event in whole.events.iter().filter_map(|event| event.as_ref().ok()) {
        let encoded = event.encode();
        let mut fresh = SseDecoder::new(usize::MAX);
        fresh.push(encoded.as_bytes());
        match fresh.next_event() {
            Some(Ok(again)) => assert_eq!(&again, event, "an event changed in a round trip"),
            other => panic!("{event:?} encoded as {encoded:?} decodes as {other:?}"),
        }
        assert!(fresh.next_event().is_none(), "one event re-encoded as two");
    }
});

/// What a decoder made of a stream: its events up to and including the first error, and the
/// cursor and retry it was left with then.
#[derive(Debug, PartialEq)]
struct Decoded {
    events: Vec<Result<protocols_runtime::sse::SseEvent, protocols_runtime::sse::SseError>>,
    cursor: String,
    retry: Option<std::time::Duration>,
}

fn decode<'a>(limit: usize, chunks: impl IntoIterator<Item = &'a [u8]>) -> Decoded {
    let mut decoder = SseDecoder::new(limit);
    let mut events = Vec::new();
    'stream: for chunk in chunks {
        decoder.push(chunk);
        while let Some(event) = decoder.next_event() {
            let failed = event.is_err();
            events.push(event);
            if failed {
                break 'stream;
            }
        }
    }
    Decoded {
        events,
        cursor: format!("{:?}", decoder.last_event_id()),
        retry: decoder.retry(),
    }
}

/// `stream` cut at places a seed picks (a small linear congruential walk), so each input also
/// says how it arrives.
fn chunks(stream: &[u8], seed: u8) -> Vec<&[u8]> {
    let mut state = u32::from(seed) | 1;
    let mut pieces = Vec::new();
    let mut rest = stream;
    while !rest.is_empty() {
        state = state.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        let take = 1 + (state >> 16) as usize % 17;
        let (piece, after) = rest.split_at(take.min(rest.len()));
        pieces.push(piece);
        rest = after;
    }
    pieces
}
