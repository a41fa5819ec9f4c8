//! The `text/event-stream` format, with no HTTP in it: an encoder and an incremental decoder
//! that follow the WHATWG event-stream parsing rules (CR, LF and CRLF all end a line; a payload
//! newline becomes another `data:` line; comment lines dispatch nothing). An id is written from
//! a decimal [`EventId`] (the cursor our server issues) but read back as the opaque string the
//! standard says it is: another server's ids (UUIDs, say) are not ours to interpret.

use std::borrow::Cow;
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};

/// A resume cursor: the decimal number our server writes in an `id:` field. Parsing one (where
/// the server reads `Last-Event-ID`) refuses anything it could not have issued.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EventId(u64);

impl EventId {
    /// The id with this number.
    pub const fn new(value: u64) -> Self {
        Self(value)
    }

    /// The id's number.
    pub const fn get(self) -> u64 {
        self.0
    }
}

impl fmt::Display for EventId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl FromStr for EventId {
    type Err = SseError;

    /// Only plain ASCII digits: `u64::from_str` would also take a leading `+`.
    fn from_str(text: &str) -> Result<Self, SseError> {
        if text.is_empty() || !text.bytes().all(|byte| byte.is_ascii_digit()) {
            return Err(SseError::MalformedId);
        }
        text.parse::<u64>()
            .map(Self)
            .map_err(|_| SseError::MalformedId)
    }
}

/// An event name: non-empty and free of line terminators, so writing it cannot smuggle in a
/// second field.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct EventName(Cow<'static, str>);

impl EventName {
    /// The legacy transport's first event: where to POST.
    pub const ENDPOINT: Self = Self(Cow::Borrowed("endpoint"));
    /// The legacy transport's JSON-RPC message event.
    pub const MESSAGE: Self = Self(Cow::Borrowed("message"));

    /// A name from text, refusing what could not be written on one line.
    pub fn new(text: impl Into<Cow<'static, str>>) -> Result<Self, EventNameError> {
        let text = text.into();
        if text.is_empty() {
            return Err(EventNameError::Empty);
        }
        if text.contains(['\r', '\n']) {
            return Err(EventNameError::LineTerminator);
        }
        Ok(Self(text))
    }

    /// The name as written on the `event:` line.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for EventName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl FromStr for EventName {
    type Err = EventNameError;

    fn from_str(text: &str) -> Result<Self, EventNameError> {
        Self::new(text.to_owned())
    }
}

/// Why text is not an event name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum EventNameError {
    /// The name is empty.
    #[error("an event name is empty")]
    Empty,
    /// The name contains `\r` or `
    /// `, which would end the field.
    #[error("an event name contains a line terminator")]
    LineTerminator,
}

/// Why a frame could not be read. No variant echoes the peer's bytes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SseError {
    /// The block has no `data` field, so it dispatches no event.
    #[error("the block carries no data field, so it dispatches no event")]
    NoData,
    /// The `id` field is not a decimal event id.
    #[error("the id field is not a decimal event id")]
    MalformedId,
    /// The `event` field is not a usable event name.
    #[error("the event field is not a usable event name: {0}")]
    MalformedName(EventNameError),
    /// An event is longer than the byte limit.
    #[error("an event exceeds {limit} bytes")]
    TooLarge {
        /// The limit in bytes.
        limit: usize,
    },
}

/// One event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    name: Option<EventName>,
    /// Opaque, and free of line terminators and NUL (an encoded cursor, or a decoded field).
    id: Option<Box<str>>,
    retry: Option<Duration>,
    data: String,
}

impl SseEvent {
    /// An event with a resume cursor.
    pub fn new(id: EventId, data: impl Into<String>) -> Self {
        Self::without_id(data).with_id(id)
    }

    /// An event that leaves the client's cursor where it was.
    pub fn without_id(data: impl Into<String>) -> Self {
        Self {
            name: None,
            id: None,
            retry: None,
            data: data.into(),
        }
    }

    /// A named event (the legacy transport dispatches on the name).
    #[cfg(test)]
    fn named(name: EventName, data: impl Into<String>) -> Self {
        Self::without_id(data).with_name(name)
    }

    /// Gives the event this id.
    #[must_use]
    pub(crate) fn with_id(mut self, id: EventId) -> Self {
        self.id = Some(id.to_string().into_boxed_str());
        self
    }

    /// Gives the event this name (its `event:` field).
    #[cfg(test)]
    #[must_use]
    fn with_name(mut self, name: EventName) -> Self {
        self.name = Some(name);
        self
    }

    /// Asks the client to wait `retry` before reconnecting.
    #[cfg(test)]
    #[must_use]
    fn with_retry(mut self, retry: Duration) -> Self {
        self.retry = Some(retry);
        self
    }

    /// The event's name, if it has one.
    pub fn name(&self) -> Option<&EventName> {
        self.name.as_ref()
    }

    /// Whether the event carries exactly this name.
    pub fn is_named(&self, name: &EventName) -> bool {
        self.name.as_ref() == Some(name)
    }

    /// The event's id as the stream wrote it: what a client echoes in `Last-Event-ID`.
    pub fn id(&self) -> Option<&str> {
        self.id.as_deref()
    }

    /// The reconnection delay the event asks for, if any.
    pub fn retry(&self) -> Option<Duration> {
        self.retry
    }

    /// The event's payload, its `data:` lines joined by `
    /// `.
    pub fn data(&self) -> &str {
        &self.data
    }

    /// Takes the event's payload.
    pub fn into_data(self) -> String {
        self.data
    }

    /// The event's bytes: `event`, `id`, `retry`, one `data:` line per payload line, then the
    /// blank line that dispatches it.
    pub fn encode(&self) -> String {
        let mut out = BytesMut::with_capacity(self.data.len() + 32);
        self.encode_into(&mut out);
        String::from_utf8_lossy(&out).into_owned()
    }

    /// Appends the event's bytes to `out`.
    pub fn encode_into(&self, out: &mut BytesMut) {
        if let Some(retry) = self.retry {
            put_field(out, "retry", &retry.as_millis().to_string());
        }
        if let Some(name) = &self.name {
            put_field(out, "event", name.as_str());
        }
        if let Some(id) = &self.id {
            put_field(out, "id", id);
        }
        encode_data_lines(out, &self.data);
        out.put_u8(b'\n');
    }

    /// The event's bytes as one chunk.
    pub fn to_bytes(&self) -> Bytes {
        let mut out = BytesMut::with_capacity(self.data.len() + 32);
        self.encode_into(&mut out);
        out.freeze()
    }

    /// Parses one block (an event's lines without its blank line).
    pub fn decode(block: &str) -> Result<Self, SseError> {
        Self::dispatch(block)?.ok_or(SseError::NoData)
    }

    /// Parses one block, returning `None` for a block that dispatches nothing (empty, or only
    /// comments and fields without data).
    pub fn dispatch(block: &str) -> Result<Option<Self>, SseError> {
        let mut builder = BlockBuilder::default();
        for line in lines(block) {
            builder.field(line)?;
        }
        Ok(builder.finish())
    }
}

/// Appends one event from borrowed parts: `event`, `id`, one `data:` line per payload line,
/// then the blank line that dispatches it.
pub fn encode_event(out: &mut BytesMut, name: Option<&EventName>, id: Option<EventId>, data: &str) {
    if let Some(name) = name {
        put_field(out, "event", name.as_str());
    }
    if let Some(id) = id {
        put_field(out, "id", &id.to_string());
    }
    encode_data_lines(out, data);
    out.put_u8(b'\n');
}

/// Appends a block that only sets the client's reconnection delay (it dispatches nothing).
pub fn encode_retry(out: &mut BytesMut, retry: Duration) {
    put_field(out, "retry", &retry.as_millis().to_string());
    out.put_u8(b'\n');
}

/// Writes a keep-alive: a comment line and the blank line after it, which dispatches nothing.
pub fn keep_alive() -> Bytes {
    Bytes::from_static(b":\n\n")
}

fn put_field(out: &mut BytesMut, field: &str, value: &str) {
    out.put_slice(field.as_bytes());
    out.put_slice(b": ");
    out.put_slice(value.as_bytes());
    out.put_u8(b'\n');
}

/// One `data:` line per line of the payload, splitting on CR, LF and CRLF, so no terminator
/// ever reaches the wire inside a line.
fn encode_data_lines(out: &mut BytesMut, data: &str) {
    for line in lines(data) {
        put_field(out, "data", line);
    }
}

/// Splits on CRLF, CR and LF with `str::split` semantics: a trailing terminator leaves an empty
/// last line, and the empty string is one empty line.
fn lines(text: &str) -> Lines<'_> {
    Lines { rest: Some(text) }
}

struct Lines<'a> {
    rest: Option<&'a str>,
}

impl<'a> Iterator for Lines<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        let rest = self.rest?;
        match rest.find(['\r', '\n']) {
            None => {
                self.rest = None;
                Some(rest)
            }
            Some(end) => {
                let line = rest.get(..end).unwrap_or_default();
                let after = rest.get(end..).unwrap_or_default();
                let skip = if after.starts_with("\r\n") { 2 } else { 1 };
                self.rest = after.get(skip..);
                Some(line)
            }
        }
    }
}

/// Accumulates one block's fields per the standard: each `data:` value is appended with a
/// trailing LF, and the final LF is removed at dispatch, so an empty buffer means "no data".
#[derive(Default)]
struct BlockBuilder {
    name: Option<EventName>,
    id: Option<Box<str>>,
    retry: Option<Duration>,
    data: String,
}

impl BlockBuilder {
    fn field(&mut self, line: &str) -> Result<(), SseError> {
        if line.starts_with(':') {
            return Ok(());
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        match field {
            "data" => {
                self.data.push_str(value);
                self.data.push('\n');
            }
            // An id holding NUL is ignored, as the standard says; any other value is opaque.
            "id" if !value.contains('\0') => self.id = Some(value.into()),
            "event" => {
                self.name =
                    Some(EventName::new(value.to_owned()).map_err(SseError::MalformedName)?);
            }
            // The standard ignores a retry that is not all digits.
            "retry" if !value.is_empty() && value.bytes().all(|byte| byte.is_ascii_digit()) => {
                self.retry = value.parse::<u64>().ok().map(Duration::from_millis);
            }
            _ => {}
        }
        Ok(())
    }

    fn finish(mut self) -> Option<SseEvent> {
        if self.data.is_empty() {
            return None;
        }
        self.data.pop();
        Some(SseEvent {
            name: self.name,
            id: self.id,
            retry: self.retry,
            data: self.data,
        })
    }
}

/// An incremental decoder: feed it bytes as they arrive, take events as they complete. It
/// remembers the stream's last event id (what a client resumes from) and the server's latest
/// `retry`, and bounds how large one event may grow.
#[derive(Debug)]
pub struct SseDecoder {
    buffer: BytesMut,
    /// A CR ended the previous chunk, so an LF starting the next one belongs to it.
    pending_cr: bool,
    line: Vec<u8>,
    block: Vec<String>,
    block_bytes: usize,
    max_event_bytes: usize,
    last_event_id: Option<Box<str>>,
    retry: Option<Duration>,
    started: bool,
}

impl SseDecoder {
    /// A decoder refusing any event larger than `max_event_bytes`.
    pub fn new(max_event_bytes: usize) -> Self {
        Self {
            buffer: BytesMut::new(),
            pending_cr: false,
            line: Vec::new(),
            block: Vec::new(),
            block_bytes: 0,
            max_event_bytes,
            last_event_id: None,
            retry: None,
            started: false,
        }
    }

    /// Appends bytes from the stream.
    pub fn push(&mut self, chunk: &[u8]) {
        self.buffer.extend_from_slice(chunk);
    }

    /// The next complete event, `None` when more bytes are needed. Comment-only blocks are
    /// consumed without producing anything.
    pub fn next_event(&mut self) -> Option<Result<SseEvent, SseError>> {
        while let Some(line) = self.next_line() {
            let line = match line {
                Ok(line) => line,
                Err(error) => return Some(Err(error)),
            };
            if !line.is_empty() {
                self.block_bytes += line.len();
                self.block.push(line);
                continue;
            }
            let block = std::mem::take(&mut self.block);
            self.block_bytes = 0;
            match self.dispatch(&block) {
                Ok(Some(event)) => return Some(Ok(event)),
                Ok(None) => {}
                Err(error) => return Some(Err(error)),
            }
        }
        None
    }

    /// The id of the latest event that carried one: what to send as `Last-Event-ID` (an empty
    /// `id:` field resets it, so nothing is sent).
    pub fn last_event_id(&self) -> Option<&str> {
        self.last_event_id.as_deref().filter(|id| !id.is_empty())
    }

    /// The reconnection delay the server last asked for.
    pub fn retry(&self) -> Option<Duration> {
        self.retry
    }

    fn dispatch(&mut self, block: &[String]) -> Result<Option<SseEvent>, SseError> {
        let mut builder = BlockBuilder::default();
        let mut outcome = Ok(());
        for line in block {
            outcome = builder.field(line);
            if outcome.is_err() {
                break;
            }
        }
        // The retry and id take effect even for a block with no data, as the standard says.
        let (id, retry) = (builder.id.clone(), builder.retry);
        let event = builder.finish();
        outcome?;
        if id.is_some() {
            self.last_event_id = id;
        }
        if retry.is_some() {
            self.retry = retry;
        }
        Ok(event)
    }

    /// One line, without its terminator; `None` when the buffer holds no complete line.
    fn next_line(&mut self) -> Option<Result<String, SseError>> {
        if self.pending_cr && self.buffer.first() == Some(&b'\n') {
            let _ = self.buffer.split_to(1);
            // That LF ended the CR's line; one after it is a line of its own.
            self.pending_cr = false;
        }
        if !self.buffer.is_empty() {
            self.pending_cr = false;
        }
        let end = self
            .buffer
            .iter()
            .position(|byte| *byte == b'\n' || *byte == b'\r');
        let Some(end) = end else {
            self.line.extend_from_slice(&self.buffer);
            self.buffer.clear();
            if self.line.len() + self.block_bytes > self.max_event_bytes {
                self.line.clear();
                return Some(Err(SseError::TooLarge {
                    limit: self.max_event_bytes,
                }));
            }
            return None;
        };
        let terminator = self.buffer.get(end).copied();
        let chunk = self.buffer.split_to(end + 1);
        self.line
            .extend_from_slice(chunk.get(..end).unwrap_or_default());
        if terminator == Some(b'\r') {
            if self.buffer.first() == Some(&b'\n') {
                let _ = self.buffer.split_to(1);
            } else if self.buffer.is_empty() {
                self.pending_cr = true;
            }
        }
        let mut raw = std::mem::take(&mut self.line);
        if !self.started {
            self.started = true;
            if raw.starts_with("\u{feff}".as_bytes()) {
                raw.drain(..3);
            }
        }
        if raw.len() + self.block_bytes > self.max_event_bytes {
            return Some(Err(SseError::TooLarge {
                limit: self.max_event_bytes,
            }));
        }
        Some(Ok(String::from_utf8_lossy(&raw).into_owned()))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    type TestError = Box<dyn std::error::Error>;

    fn split(text: &str) -> Vec<&str> {
        lines(text).collect()
    }

    fn decode_stream(decoder: &mut SseDecoder) -> Result<Vec<SseEvent>, SseError> {
        let mut events = Vec::new();
        while let Some(event) = decoder.next_event() {
            events.push(event?);
        }
        Ok(events)
    }

    #[test]
    fn a_crlf_split_across_chunks_does_not_swallow_the_blank_line_after_it() {
        // Found by the sse_decoder fuzz target: the LF that completed a split CRLF left the
        // decoder still expecting one, so the next LF (the blank line) was dropped.
        let mut decoder = SseDecoder::new(1024);
        let mut events = Vec::new();
        for chunk in ["data: x\r", "\n", "\n"] {
            decoder.push(chunk.as_bytes());
            events.extend(decoder.next_event());
        }
        assert_eq!(events, [Ok(SseEvent::without_id("x"))]);
    }

    #[test]
    fn a_single_line_payload_is_one_data_line() {
        let frame = SseEvent::new(EventId::new(7), r#"{"jsonrpc":"2.0"}"#);
        assert_eq!(frame.encode(), "id: 7\ndata: {\"jsonrpc\":\"2.0\"}\n\n");
    }

    #[test]
    fn a_newline_in_the_payload_becomes_another_data_line() {
        let encoded = SseEvent::new(EventId::new(1), "one\ntwo\nthree").encode();
        assert_eq!(encoded, "id: 1\ndata: one\ndata: two\ndata: three\n\n");
        assert_eq!(encoded.matches("data: ").count(), 3);
        assert!(!encoded.contains("one\ntwo"));
    }

    #[test]
    fn encode_then_decode_round_trips() -> Result<(), TestError> {
        let payloads = [
            "",
            "a",
            "\n",
            "\n\n",
            "line one\nline two",
            r#"{"a":"b\"c\\d"}"#,
            "café — ünïcode",
            "\u{7f}",
            "trailing\n",
            " leading space",
        ];
        for payload in payloads {
            let decoded = SseEvent::decode(&SseEvent::new(EventId::new(3), payload).encode())?;
            assert_eq!(decoded.data(), payload, "round trip changed {payload:?}");
            assert_eq!(decoded.id(), Some("3"));
        }
        Ok(())
    }

    #[test]
    fn the_data_line_count_is_the_newline_count_plus_one() -> Result<(), TestError> {
        for newlines in 0..5_usize {
            let payload = "x\n".repeat(newlines);
            let encoded = SseEvent::without_id(payload.clone()).encode();
            assert_eq!(
                encoded.matches("data: ").count(),
                newlines + 1,
                "{encoded:?}"
            );
            assert_eq!(SseEvent::decode(&encoded)?.data(), payload);
        }
        Ok(())
    }

    #[test]
    fn a_carriage_return_is_a_line_terminator() -> Result<(), TestError> {
        assert_eq!(split("a\rb"), vec!["a", "b"]);
        assert_eq!(split("a\r\nb"), vec!["a", "b"]);
        assert_eq!(split("a\nb"), vec!["a", "b"]);
        assert_eq!(split("a\n"), vec!["a", ""]);
        assert_eq!(split("a\r\n"), vec!["a", ""]);
        assert_eq!(split("a\r"), vec!["a", ""]);
        assert_eq!(split("a\n\n"), vec!["a", "", ""]);
        assert_eq!(split("a"), vec!["a"]);
        assert_eq!(split(""), vec![""]);
        let frame = SseEvent::without_id("one\rtwo");
        assert_eq!(frame.encode(), "data: one\ndata: two\n\n");
        assert_eq!(SseEvent::decode(&frame.encode())?.data(), "one\ntwo");
        Ok(())
    }

    #[test]
    fn crlf_encoded_frames_dispatch_exactly_one_event() -> Result<(), TestError> {
        let crlf = SseEvent::new(EventId::new(4), "one\ntwo")
            .encode()
            .replace('\n', "\r\n");
        let decoded = SseEvent::decode(&crlf)?;
        assert_eq!(decoded.data(), "one\ntwo");
        assert_eq!(decoded.id(), Some("4"));
        let mut decoder = SseDecoder::new(1 << 16);
        decoder.push(crlf.as_bytes());
        assert_eq!(decode_stream(&mut decoder)?, vec![decoded]);
        Ok(())
    }

    #[test]
    fn a_frame_with_no_id_decodes_with_no_id() -> Result<(), TestError> {
        let encoded = SseEvent::without_id("{\"a\":1}").encode();
        assert_eq!(encoded, "data: {\"a\":1}\n\n");
        let decoded = SseEvent::decode(&encoded)?;
        assert_eq!(decoded.id(), None);
        assert_eq!(decoded.data(), "{\"a\":1}");
        Ok(())
    }

    #[test]
    fn a_comment_line_dispatches_nothing() -> Result<(), TestError> {
        for block in [":", ": keep-alive", "", "\n\n", ": one\n: two\n\n"] {
            assert_eq!(
                SseEvent::dispatch(block)?,
                None,
                "{block:?} dispatched an event"
            );
            assert_eq!(SseEvent::decode(block), Err(SseError::NoData));
        }
        let frame = SseEvent::decode("id: 2\n: a comment\ndata: payload")?;
        assert_eq!(frame.id(), Some("2"));
        assert_eq!(frame.data(), "payload");
        Ok(())
    }

    #[test]
    fn keep_alives_in_a_stream_dispatch_nothing() -> Result<(), TestError> {
        let mut decoder = SseDecoder::new(1 << 16);
        decoder.push(&keep_alive());
        decoder.push(&keep_alive());
        assert_eq!(decode_stream(&mut decoder)?, vec![]);
        decoder.push(SseEvent::new(EventId::new(1), "x").encode().as_bytes());
        assert_eq!(decode_stream(&mut decoder)?.len(), 1);
        Ok(())
    }

    #[test]
    fn a_corrupt_cursor_is_an_error_and_not_a_zero() -> Result<(), TestError> {
        for text in ["abc", "", "12x", "1.0", "+1", "99999999999999999999"] {
            assert_eq!(
                text.parse::<EventId>(),
                Err(SseError::MalformedId),
                "{text:?} was accepted"
            );
        }
        assert_eq!("0".parse::<EventId>(), Ok(EventId::new(0)));
        assert_eq!(
            SseEvent::decode("id: 0\ndata: x")?.id(),
            Some(EventId::new(0).to_string().as_str())
        );
        Ok(())
    }

    #[test]
    fn a_decoded_id_is_an_opaque_string() -> Result<(), TestError> {
        for id in [
            "abc",
            "12x",
            "1.0",
            "+1",
            "99999999999999999999",
            "0b9e-4c1f",
        ] {
            let frame = SseEvent::decode(&format!("id: {id}\ndata: x"))?;
            assert_eq!(frame.id(), Some(id));
            assert_eq!(SseEvent::decode(&frame.encode())?, frame);
        }
        Ok(())
    }

    #[test]
    fn an_id_holding_nul_is_ignored_and_an_empty_id_resets_the_cursor() -> Result<(), TestError> {
        assert_eq!(SseEvent::decode("id: a\0b\ndata: x")?.id(), None);
        let mut decoder = SseDecoder::new(1 << 16);
        decoder.push(b"id: 7\ndata: x\n\nid\ndata: y\n\n");
        assert_eq!(
            decoder.next_event(),
            Some(Ok(SseEvent::new(EventId::new(7), "x")))
        );
        assert_eq!(decoder.last_event_id(), Some("7"));
        let reset = decoder.next_event().transpose()?;
        assert_eq!(reset.as_ref().and_then(SseEvent::id), Some(""));
        assert_eq!(decoder.last_event_id(), None);
        Ok(())
    }

    #[test]
    fn a_json_payload_is_parsed_as_json_by_a_reader() -> Result<(), TestError> {
        let value = json!({"text": "before\u{7f}after\r\nend", "n": 1});
        let frame = SseEvent::new(EventId::new(9), serde_json::to_string(&value)?);
        let encoded = frame.encode();
        assert!(!encoded.contains("\\u{"), "{encoded:?}");
        let reparsed: Value = serde_json::from_str(SseEvent::decode(&encoded)?.data())?;
        assert_eq!(reparsed, value);
        Ok(())
    }

    #[test]
    fn unknown_fields_are_ignored() -> Result<(), TestError> {
        let frame =
            SseEvent::decode("event: message\nretry: 5000\nid: 5\nwhatever: x\ndata: payload")?;
        assert_eq!(frame.id(), Some("5"));
        assert_eq!(frame.data(), "payload");
        assert_eq!(frame.retry(), Some(Duration::from_millis(5000)));
        Ok(())
    }

    #[test]
    fn a_retry_that_is_not_all_digits_is_ignored() -> Result<(), TestError> {
        assert_eq!(SseEvent::decode("retry: 10s\ndata: x")?.retry(), None);
        assert_eq!(SseEvent::decode("retry: \ndata: x")?.retry(), None);
        Ok(())
    }

    #[test]
    fn exactly_one_space_after_the_colon_is_framing() -> Result<(), TestError> {
        assert_eq!(SseEvent::decode("data:  two")?.data(), " two");
        assert_eq!(SseEvent::decode("data:two")?.data(), "two");
        assert_eq!(
            SseEvent::dispatch("data")?,
            Some(SseEvent::without_id(String::new()))
        );
        Ok(())
    }

    #[test]
    fn concatenated_frames_read_back_as_the_same_events() -> Result<(), TestError> {
        let frames = [
            SseEvent::new(EventId::new(1), "one"),
            SseEvent::new(EventId::new(2), "two\nlines"),
            SseEvent::without_id("three"),
        ];
        let stream: String = frames.iter().map(SseEvent::encode).collect();
        let mut decoder = SseDecoder::new(1 << 16);
        decoder.push(stream.as_bytes());
        assert_eq!(decode_stream(&mut decoder)?, frames.to_vec());
        Ok(())
    }

    #[test]
    fn a_stream_split_at_every_byte_decodes_the_same() -> Result<(), TestError> {
        let frames = [
            SseEvent::new(EventId::new(1), "one\ntwo"),
            SseEvent::named(EventName::MESSAGE, "{}"),
            SseEvent::new(EventId::new(3), ""),
        ];
        for terminator in ["\n", "\r\n", "\r"] {
            let stream: String = frames
                .iter()
                .map(SseEvent::encode)
                .collect::<String>()
                .replace('\n', terminator);
            let mut decoder = SseDecoder::new(1 << 16);
            let mut events = Vec::new();
            for byte in stream.as_bytes() {
                decoder.push(std::slice::from_ref(byte));
                events.extend(decode_stream(&mut decoder)?);
            }
            assert_eq!(events, frames.to_vec(), "terminator {terminator:?}");
        }
        Ok(())
    }

    #[test]
    fn the_decoder_remembers_the_last_id_and_retry_across_events() -> Result<(), TestError> {
        let mut decoder = SseDecoder::new(1 << 16);
        decoder.push(b"id: 4\nretry: 250\ndata:\n\ndata: no id\n\n");
        let events = decode_stream(&mut decoder)?;
        assert_eq!(events.len(), 2);
        assert_eq!(events[0].data(), "");
        assert_eq!(events[1].id(), None);
        assert_eq!(decoder.last_event_id(), Some("4"));
        assert_eq!(decoder.retry(), Some(Duration::from_millis(250)));
        Ok(())
    }

    #[test]
    fn an_event_larger_than_the_limit_is_an_error() {
        let mut decoder = SseDecoder::new(64);
        decoder.push(format!("data: {}", "x".repeat(100)).as_bytes());
        assert_eq!(
            decoder.next_event(),
            Some(Err(SseError::TooLarge { limit: 64 }))
        );
    }

    #[test]
    fn a_leading_byte_order_mark_is_skipped() -> Result<(), TestError> {
        let mut decoder = SseDecoder::new(1 << 16);
        decoder.push("\u{feff}data: x\n\n".as_bytes());
        assert_eq!(
            decode_stream(&mut decoder)?,
            vec![SseEvent::without_id("x")]
        );
        Ok(())
    }

    #[test]
    fn a_named_frame_round_trips_its_name() -> Result<(), TestError> {
        let decoded = SseEvent::decode(
            &SseEvent::named(EventName::ENDPOINT, "/messages?sessionId=abc").encode(),
        )?;
        assert!(decoded.is_named(&EventName::ENDPOINT));
        assert_eq!(decoded.data(), "/messages?sessionId=abc");
        assert!(!decoded.is_named(&EventName::MESSAGE));
        Ok(())
    }

    #[test]
    fn an_unnamed_frame_stays_unnamed() -> Result<(), TestError> {
        let decoded = SseEvent::decode(&SseEvent::new(EventId::new(7), "{}").encode())?;
        assert!(decoded.name().is_none());
        assert!(!decoded.is_named(&EventName::MESSAGE));
        Ok(())
    }

    #[test]
    fn the_two_legacy_frames_are_told_apart_by_name() -> Result<(), TestError> {
        let mut decoder = SseDecoder::new(1 << 16);
        decoder.push(b"event: endpoint\ndata: /messages?sessionId=abc\n\nevent: message\ndata: {\"jsonrpc\":\"2.0\"}\n\n");
        let events = decode_stream(&mut decoder)?;
        let [endpoint, message] = events.as_slice() else {
            return Err(format!("expected two frames, found {}", events.len()).into());
        };
        assert!(endpoint.is_named(&EventName::ENDPOINT));
        assert_eq!(endpoint.data(), "/messages?sessionId=abc");
        assert!(message.is_named(&EventName::MESSAGE));
        Ok(())
    }

    #[test]
    fn a_terminator_after_a_name_is_a_separator_and_not_part_of_it() -> Result<(), TestError> {
        let frame = SseEvent::decode("event: message\ndata: {\"jsonrpc\":\"2.0\"}\n\n")?;
        assert!(frame.is_named(&EventName::MESSAGE));
        assert_eq!(frame.data(), "{\"jsonrpc\":\"2.0\"}");
        Ok(())
    }

    #[test]
    fn an_empty_event_field_is_refused() {
        assert_eq!(
            SseEvent::decode("event:\ndata: x\n\n"),
            Err(SseError::MalformedName(EventNameError::Empty))
        );
    }

    #[test]
    fn a_name_with_a_line_terminator_cannot_be_built() {
        assert_eq!(
            EventName::new("message\ndata: x"),
            Err(EventNameError::LineTerminator)
        );
        assert_eq!(EventName::new("a\rb"), Err(EventNameError::LineTerminator));
    }

    #[test]
    fn the_encoder_writes_the_name_on_its_own_line() {
        let encoded = SseEvent::named(EventName::MESSAGE, "{}").encode();
        assert!(
            encoded.starts_with("event: message\ndata: {}\n\n"),
            "{encoded:?}"
        );
    }

    #[test]
    fn a_peer_supplied_name_matches_a_constant_one() -> Result<(), TestError> {
        let parsed = EventName::from_str("message")?;
        assert!(SseEvent::named(parsed, "{}").is_named(&EventName::MESSAGE));
        Ok(())
    }

    #[test]
    fn the_encoder_writes_retry_in_milliseconds() {
        let encoded = SseEvent::new(EventId::new(5), "")
            .with_retry(Duration::from_secs(2))
            .encode();
        assert_eq!(encoded, "retry: 2000\nid: 5\ndata: \n\n");
    }
}
