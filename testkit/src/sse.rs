//! Reading an SSE response the way a client does, with the runtime's own [`SseDecoder`]: event
//! by event, or drained to its end. Every read insists the stream is well formed: a reset
//! connection, a malformed event, a body that ends inside an event or a stream silent for
//! [`STALL`] fails the test instead of passing for a clean end.

use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt as _;
use futures::stream::BoxStream;
use protocols_runtime::sse::{SseDecoder, SseEvent};
use serde_json::Value;

/// How long a read waits for the next chunk before failing the test as stalled.
pub const STALL: Duration = Duration::from_secs(10);

/// The largest event the reader accepts.
const MAX_EVENT_BYTES: usize = 1 << 20;

/// An id our server wrote, as the decimal cursor it is (the decoder keeps ids opaque).
fn cursor(id: &str) -> u64 {
    id.parse().expect("our server writes decimal event ids")
}

/// Reads SSE events from a streaming response.
pub struct SseReader {
    body: BoxStream<'static, reqwest::Result<Bytes>>,
    decoder: SseDecoder,
}

impl std::fmt::Debug for SseReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SseReader").finish_non_exhaustive()
    }
}

impl SseReader {
    /// Reads the SSE events of `response`'s body.
    pub fn new(response: reqwest::Response) -> Self {
        Self {
            body: response.bytes_stream().boxed(),
            decoder: SseDecoder::new(MAX_EVENT_BYTES),
        }
    }

    /// The next event, `None` once the body has ended cleanly between events.
    pub async fn next(&mut self) -> Option<SseEvent> {
        loop {
            if let Some(event) = self.decoder.next_event() {
                return Some(event.expect("well-formed SSE"));
            }
            let chunk = tokio::time::timeout(STALL, self.body.next())
                .await
                .expect("the stream stalled");
            match chunk {
                Some(chunk) => self
                    .decoder
                    .push(&chunk.expect("the stream ends cleanly, not reset")),
                None => {
                    self.assert_ended_between_events();
                    return None;
                }
            }
        }
    }

    /// The next event that carries data, with its id and its data parsed as JSON.
    pub async fn next_json(&mut self) -> Option<(Option<u64>, Value)> {
        loop {
            let event = self.next().await?;
            if event.data().is_empty() {
                continue;
            }
            let value = serde_json::from_str(event.data()).expect("JSON event data");
            return Some((event.id().map(cursor), value));
        }
    }

    /// The id of the latest event that carried one: what a client resumes from.
    pub fn last_event_id(&self) -> Option<u64> {
        self.decoder.last_event_id().map(cursor)
    }

    /// Reads the rest of the stream to its end.
    pub async fn drain(mut self) -> Drained {
        let mut messages = Vec::new();
        while let Some((_, message)) = self.next_json().await {
            messages.push(message);
        }
        Drained {
            messages,
            last_event_id: self.last_event_id(),
            retry: self.decoder.retry(),
        }
    }

    /// A blank line completes an event only when the body stopped inside one.
    fn assert_ended_between_events(&mut self) {
        self.decoder.push(b"\n\n");
        if let Some(event) = self.decoder.next_event() {
            panic!("the body ended inside an event: {event:?}");
        }
    }
}

/// Everything an SSE response carried until it ended: the JSON messages, the last event id and
/// the reconnection delay it asked for.
#[derive(Debug)]
pub struct Drained {
    /// The JSON messages the events carried, in order.
    pub messages: Vec<Value>,
    /// The last event id the stream set, as a number.
    pub last_event_id: Option<u64>,
    /// The reconnection delay the stream asked for, if it did.
    pub retry: Option<Duration>,
}

/// Reads `response`, which must be an SSE stream, to its end.
pub async fn drain(response: reqwest::Response) -> Drained {
    assert_event_stream(&response);
    SseReader::new(response).drain().await
}

/// Fails unless `response` is an SSE stream.
pub fn assert_event_stream(response: &reqwest::Response) {
    let media = response
        .headers()
        .get("content-type")
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default();
    assert!(
        media.starts_with("text/event-stream"),
        "expected an SSE answer, got {media:?}"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn response(body: &'static str) -> reqwest::Response {
        let response = http::Response::builder()
            .header("content-type", "text/event-stream")
            .body(body)
            .unwrap();
        reqwest::Response::from(response)
    }

    #[tokio::test]
    async fn drain_keeps_data_events_the_last_id_and_the_retry() {
        let drained = drain(response(
            "id: 1\ndata: {\"a\":1}\n\n: keep-alive\n\nretry: 500\nid: 2\ndata: \n\n",
        ))
        .await;
        assert_eq!(drained.messages, vec![serde_json::json!({"a": 1})]);
        assert_eq!(drained.last_event_id, Some(2));
        assert_eq!(drained.retry, Some(Duration::from_millis(500)));
    }

    #[tokio::test]
    #[should_panic(expected = "the body ended inside an event")]
    async fn a_body_ending_inside_an_event_fails_the_read() {
        let mut reader = SseReader::new(response("data: {\"a\":1}\n\ndata: {\"cut\":"));
        assert!(reader.next().await.is_some());
        reader.next().await;
    }

    #[tokio::test]
    #[should_panic(expected = "expected an SSE answer")]
    async fn drain_refuses_a_json_answer() {
        let answer = http::Response::builder()
            .header("content-type", "application/json")
            .body("{}")
            .unwrap();
        drain(reqwest::Response::from(answer)).await;
    }
}
