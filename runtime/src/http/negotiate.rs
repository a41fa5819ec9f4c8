//! Accept and framing negotiation: what a request's `Content-Type` and `Accept` say, and how
//! its answer is framed (plain JSON, an SSE stream, or JSON unless something streams first).

use http::{HeaderMap, HeaderValue, header};

use super::ResponseMode;

const EVENT_STREAM: &str = "text/event-stream";

/// What the client's `Accept` admits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Accepts {
    json: bool,
    pub(super) sse: bool,
}

impl Accepts {
    const BOTH: Self = Self {
        json: true,
        sse: true,
    };

    /// An absent `Accept` admits anything.
    pub(super) fn read(headers: &HeaderMap, json_type: &str) -> Self {
        let mut values = headers.get_all(header::ACCEPT).iter();
        let first = values.next();
        let several = values.next().is_some();
        Self::from_first(first, several, headers, json_type)
    }

    /// What `Accept` admits, given its first value and whether it has `several`: a single
    /// common value is recognised whole; anything else is parsed from `headers`.
    pub(super) fn from_first(
        first: Option<&HeaderValue>,
        several: bool,
        headers: &HeaderMap,
        json_type: &str,
    ) -> Self {
        let Some(first) = first else {
            return Self::BOTH;
        };
        if !several && let Some(accepts) = Self::common(first.as_bytes(), json_type.as_bytes()) {
            return accepts;
        }
        Self::parse(headers.get_all(header::ACCEPT).iter(), json_type)
    }

    /// The general parse of every `Accept` value.
    fn parse<'a>(values: impl Iterator<Item = &'a HeaderValue>, json_type: &str) -> Self {
        let mut accepts = Self {
            json: false,
            sse: false,
        };
        // Split as bytes, without `str` pattern searchers: this runs on every POST. A value
        // that is not visible ASCII is skipped whole.
        for value in values.filter(|value| value.to_str().is_ok()) {
            for element in value.as_bytes().split(|&byte| byte == b',') {
                let range = bare_media_type(element);
                accepts.json |= media_range_admits(range, json_type.as_bytes());
                accepts.sse |= media_range_admits(range, EVENT_STREAM.as_bytes());
            }
        }
        accepts
    }

    /// The values clients send most (the media type alone, or with the event stream on either
    /// side), recognised whole before the general parse, which would give the same answer.
    fn common(value: &[u8], json_type: &[u8]) -> Option<Self> {
        const SSE_AFTER: &[u8] = b", text/event-stream";
        const SSE_BEFORE: &[u8] = b"text/event-stream, ";
        if value == json_type {
            return Some(Self {
                json: true,
                sse: false,
            });
        }
        let both = value
            .strip_prefix(json_type)
            .is_some_and(|rest| rest == SSE_AFTER)
            || value
                .strip_prefix(SSE_BEFORE)
                .is_some_and(|rest| rest == json_type);
        both.then_some(Self::BOTH)
    }
}

/// The media type of an `Accept` element or a `Content-Type`: parameters and the whitespace
/// around it dropped.
fn bare_media_type(text: &[u8]) -> &[u8] {
    text.split(|&byte| byte == b';')
        .next()
        .unwrap_or_default()
        .trim_ascii()
}

/// Whether the `Accept` media range `range` admits `media` (exactly, `type/*` or `*/*`).
fn media_range_admits(range: &[u8], media: &[u8]) -> bool {
    if range == b"*/*" || range.eq_ignore_ascii_case(media) {
        return true;
    }
    let Some(range_type) = range.strip_suffix(b"/*") else {
        return false;
    };
    media
        .iter()
        .position(|&byte| byte == b'/')
        .and_then(|slash| media.get(..slash))
        .is_some_and(|media_type| media_type.eq_ignore_ascii_case(range_type))
}

/// How this answer is framed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Framed {
    Json,
    Sse,
    Auto,
    /// For a client that accepts only SSE: a stream, unless the request is refused before
    /// anything is sent, which is answered as plain JSON (a refusal is not a stream).
    SseOrRefusal,
}

pub(super) fn choose_framing(mode: ResponseMode, accepts: Accepts) -> Option<Framed> {
    match (mode, accepts.json, accepts.sse) {
        (_, false, false) => None,
        (ResponseMode::Json, true, _) | (_, true, false) => Some(Framed::Json),
        (ResponseMode::Auto, false, true) => Some(Framed::SseOrRefusal),
        (ResponseMode::Sse, _, true) | (_, false, true) => Some(Framed::Sse),
        (ResponseMode::Auto, true, true) => Some(Framed::Auto),
    }
}

/// Whether the request's `Content-Type` is `media_type` (parameters aside).
pub(crate) fn content_type_is(headers: &HeaderMap, media_type: &str) -> bool {
    is_media_type(headers.get(header::CONTENT_TYPE), media_type)
}

/// Whether a `Content-Type` value is `media_type` (parameters aside).
pub(super) fn is_media_type(value: Option<&HeaderValue>, media_type: &str) -> bool {
    let Some(value) = value else {
        return false;
    };
    // The exact media type, as nearly every client sends it, needs no parsing.
    value.as_bytes() == media_type.as_bytes()
        || (value.to_str().is_ok()
            && bare_media_type(value.as_bytes()).eq_ignore_ascii_case(media_type.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_common_accept_values_read_as_the_general_parse_reads_them() {
        let json = "application/json";
        for text in [
            "application/json",
            "application/json, text/event-stream",
            "text/event-stream, application/json",
        ] {
            let value = HeaderValue::from_static(text);
            let parsed = Accepts::parse(std::iter::once(&value), json);
            assert_eq!(
                Accepts::common(text.as_bytes(), json.as_bytes()),
                Some(parsed)
            );
        }
    }

    #[test]
    fn other_accept_values_are_left_to_the_general_parse() {
        let json = b"application/json";
        for text in [
            "Application/JSON, text/event-stream",
            "application/json,text/event-stream",
            "text/event-stream",
            "*/*",
            "application/json; q=0.5, text/event-stream",
        ] {
            assert_eq!(Accepts::common(text.as_bytes(), json), None, "{text}");
        }
    }

    #[test]
    fn a_content_type_with_parameters_or_other_case_is_still_the_media_type() {
        let mut headers = HeaderMap::new();
        for (text, expected) in [
            ("application/json", true),
            ("Application/JSON; charset=utf-8", true),
            ("application/jsonx", false),
            ("text/plain", false),
        ] {
            headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(text));
            assert_eq!(
                content_type_is(&headers, "application/json"),
                expected,
                "{text}"
            );
        }
    }
}
