//! SSE codec throughput: encoding JSON-RPC-sized events into a stream buffer, and decoding a
//! stream of them back, fed in network-sized chunks. Criterion reports bytes per second of
//! encoded stream for both directions.

use std::hint::black_box;

use bytes::BytesMut;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use protocols_runtime::sse::{EventId, SseDecoder, SseEvent, encode_event};

/// Events per iteration, and the payload shapes: a small notification and a multi-line result.
const EVENTS: u64 = 1000;
const SMALL: &str = r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":7,"progress":50}}"#;

fn large_payload() -> String {
    // A 4 KiB result pretty-printed over many lines, so each event has many `data:` lines.
    let items: Vec<String> = (0..100)
        .map(|index| format!("    {{\"index\": {index}, \"text\": \"line of tool output\"}}"))
        .collect();
    format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{{\"items\":[\n{}\n]}}}}",
        items.join(",\n")
    )
}

fn encoded_stream(payload: &str) -> BytesMut {
    let mut out = BytesMut::new();
    for sequence in 1..=EVENTS {
        encode_event(&mut out, None, Some(EventId::new(sequence)), payload);
    }
    out
}

fn bench_payload(criterion: &mut Criterion, label: &str, payload: &str) {
    let stream = encoded_stream(payload);
    let mut group = criterion.benchmark_group(format!("sse/{label}"));
    group.throughput(Throughput::Bytes(stream.len() as u64));
    group.bench_function("encode", |bencher| {
        let mut out = BytesMut::with_capacity(stream.len());
        bencher.iter(|| {
            out.clear();
            for sequence in 1..=EVENTS {
                encode_event(
                    &mut out,
                    None,
                    Some(EventId::new(sequence)),
                    black_box(payload),
                );
            }
            black_box(out.len())
        });
    });
    group.bench_function("encode_event_values", |bencher| {
        let events: Vec<SseEvent> = (1..=EVENTS)
            .map(|sequence| SseEvent::new(EventId::new(sequence), payload))
            .collect();
        let mut out = BytesMut::with_capacity(stream.len());
        bencher.iter(|| {
            out.clear();
            for event in &events {
                event.encode_into(&mut out);
            }
            black_box(out.len())
        });
    });
    group.bench_function("decode_in_1500_byte_chunks", |bencher| {
        bencher.iter(|| {
            let mut decoder = SseDecoder::new(1 << 20);
            let mut decoded = 0_u64;
            for chunk in stream.chunks(1500) {
                decoder.push(black_box(chunk));
                while let Some(event) = decoder.next_event() {
                    if event.is_ok() {
                        decoded += 1;
                    }
                }
            }
            assert_eq!(decoded, EVENTS);
            decoded
        });
    });
    group.finish();
}

fn sse_codec(criterion: &mut Criterion) {
    bench_payload(criterion, "small_event", SMALL);
    bench_payload(criterion, "multiline_4k_event", &large_payload());
}

criterion_group!(benches, sse_codec);
criterion_main!(benches);
