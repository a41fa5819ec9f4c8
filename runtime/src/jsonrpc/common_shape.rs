//! A hand-written reader for the shape nearly every inbound message has — a request or
//! notification whose keys are among `jsonrpc`, `id`, `method` and `params`, each once and
//! unescaped, with `"2.0"`, an unsigned integer or plain string id, a plain string method and
//! structured params — so the common case skips serde's field-by-field envelope visitor (about
//! 2,000 instructions a message). It never decides an error: anything else (another key, an
//! escape, a duplicate, a negative or fractional id, malformed JSON) answers `None`, and the
//! total decoder reads the text as if this reader did not exist. Whatever it accepts, the total
//! decoder would decode to the same message.

use std::sync::Arc;

use serde::Deserialize as _;
use serde_json::value::RawValue;

use super::{Message, Notification, Request, RequestId, VERSION};

/// The message `text` holds, when it has the common shape.
pub(super) fn read(text: &str) -> Option<Message> {
    let mut cursor = Cursor { text, at: 0 };
    cursor.expect(b'{')?;
    let mut fields = Fields::default();
    if !cursor.eat(b'}') {
        loop {
            let key = cursor.plain_string()?;
            cursor.expect(b':')?;
            cursor.skip_whitespace();
            fields.read(key, &mut cursor)?;
            if cursor.eat(b',') {
                continue;
            }
            cursor.expect(b'}')?;
            break;
        }
    }
    cursor.skip_whitespace();
    if cursor.at != text.len() || fields.version != Some(VERSION) {
        return None;
    }
    let method = fields.method?.to_owned();
    let params = fields.params.map(RawValue::to_owned);
    Some(match fields.id {
        Some(id) => Message::Request(Request { id, method, params }),
        None => Message::Notification(Notification { method, params }),
    })
}

/// The fields read so far; a second occurrence of one is not the common shape.
#[derive(Default)]
struct Fields<'a> {
    version: Option<&'a str>,
    id: Option<RequestId>,
    method: Option<&'a str>,
    params: Option<&'a RawValue>,
}

impl<'a> Fields<'a> {
    fn read(&mut self, key: &str, cursor: &mut Cursor<'a>) -> Option<()> {
        match key {
            "jsonrpc" if self.version.is_none() => self.version = Some(cursor.plain_string()?),
            "id" if self.id.is_none() => self.id = Some(cursor.id()?),
            "method" if self.method.is_none() => self.method = Some(cursor.plain_string()?),
            "params" if self.params.is_none() => self.params = Some(cursor.structured()?),
            _ => return None,
        }
        Some(())
    }
}

/// The bytes a plain string's scan stops at: its closing quote, an escape or a control
/// character. One table lookup a byte instead of three comparisons.
const ENDS_PLAIN_STRING: [bool; 256] = {
    let mut table = [false; 256];
    let mut byte = 0;
    while byte < 0x20 {
        table[byte] = true;
        byte += 1;
    }
    table[b'"' as usize] = true;
    table[b'\\' as usize] = true;
    table
};

struct Cursor<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Cursor<'a> {
    fn skip_whitespace(&mut self) {
        // JSON's four whitespace bytes only (`trim_ascii` would also skip a form feed).
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.text.as_bytes().get(self.at) {
            self.at += 1;
        }
    }

    /// Consumes `byte` after optional whitespace, if it is there.
    fn eat(&mut self, byte: u8) -> bool {
        self.skip_whitespace();
        let found = self.text.as_bytes().get(self.at) == Some(&byte);
        if found {
            self.at += 1;
        }
        found
    }

    fn expect(&mut self, byte: u8) -> Option<()> {
        self.eat(byte).then_some(())
    }

    /// A string with no escape and no control character, without its quotes.
    fn plain_string(&mut self) -> Option<&'a str> {
        self.expect(b'"')?;
        let start = self.at;
        let rest = self.text.as_bytes().get(start..)?;
        let length = rest
            .iter()
            .position(|&byte| ENDS_PLAIN_STRING[usize::from(byte)])?;
        if rest.get(length) != Some(&b'"') {
            return None;
        }
        self.at = start + length + 1;
        self.text.get(start..start + length)
    }

    /// A plain string id, or an unsigned integer id of at most 18 digits (so it fits an `i64`)
    /// without a leading zero, fraction or exponent.
    fn id(&mut self) -> Option<RequestId> {
        let bytes = self.text.as_bytes();
        if bytes.get(self.at) == Some(&b'"') {
            return self
                .plain_string()
                .map(|text| RequestId::String(Arc::from(text)));
        }
        let start = self.at;
        let mut end = start;
        // Accumulated while scanned: 18 digits cannot overflow, and a 19th is never taken.
        let mut number = 0i64;
        while let Some(&digit @ b'0'..=b'9') = bytes.get(end) {
            if end - start == 18 {
                return None;
            }
            number = number * 10 + i64::from(digit - b'0');
            end += 1;
        }
        let leading_zero = end - start > 1 && bytes.get(start) == Some(&b'0');
        if end == start || leading_zero || matches!(bytes.get(end), Some(b'.' | b'e' | b'E')) {
            return None;
        }
        self.at = end;
        Some(RequestId::Number(number))
    }

    /// An object or array, validated by serde_json and borrowed from the text.
    fn structured(&mut self) -> Option<&'a RawValue> {
        let rest = self.text.get(self.at..)?;
        if !matches!(rest.as_bytes().first(), Some(b'{' | b'[')) {
            return None;
        }
        let mut deserializer = serde_json::Deserializer::from_str(rest);
        let raw = <&RawValue>::deserialize(&mut deserializer).ok()?;
        // The value starts where `rest` does (no whitespace precedes the bracket).
        self.at += raw.get().len();
        Some(raw)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jsonrpc::{DecodeLimits, Payload, decode};

    /// What the total decoder makes of `text` with this reader bypassed.
    fn total(text: &str) -> String {
        let payload = super::super::decode_envelope(text);
        format!("{payload:?}")
    }

    #[test]
    fn the_common_shapes_read_as_the_total_decoder_reads_them() {
        let texts = [
            r#"{"jsonrpc":"2.0","id":1,"method":"echo","params":{"text":"hello, world"}}"#,
            r#"{"jsonrpc":"2.0","id":"a-1","method":"tools/call","params":[1,2,{"x":null}]}"#,
            r#" { "method" : "ping" , "jsonrpc" : "2.0" , "id" : 0 } "#,
            "{\"jsonrpc\":\"2.0\",\n\t\"method\":\"notify\"\r\n}",
            r#"{"params":{},"method":"m","jsonrpc":"2.0","id":123456789012345678}"#,
            r#"{"jsonrpc":"2.0","id":7,"method":"m","params":{"nested":{"a":[1,"\"}"]}}}"#,
            r#"{"jsonrpc":"2.0","id":"","method":""}"#,
        ];
        for text in texts {
            let message = read(text).unwrap_or_else(|| panic!("{text} was not read"));
            assert_eq!(format!("{:?}", Ok::<_, ()>(message)), total(text), "{text}");
        }
    }

    #[test]
    fn anything_unusual_is_left_to_the_total_decoder() {
        let texts = [
            r#"{"jsonrpc":"2.0","id":-1,"method":"m"}"#,
            r#"{"jsonrpc":"2.0","id":-0,"method":"m"}"#,
            r#"{"jsonrpc":"2.0","id":1.0,"method":"m"}"#,
            r#"{"jsonrpc":"2.0","id":1e3,"method":"m"}"#,
            r#"{"jsonrpc":"2.0","id":01,"method":"m"}"#,
            r#"{"jsonrpc":"2.0","id":1234567890123456789,"method":"m"}"#,
            r#"{"jsonrpc":"2.0","id":null,"method":"m"}"#,
            r#"{"jsonrpc":"2.0","id":true,"method":"m"}"#,
            r#"{"jsonrpc":"2.0","id":"a\"b","method":"m"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m\u0041"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":"text"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":null}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m","extra":1}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"m"}"#,
            r#"{"jsonrpc":"1.0","id":1,"method":"m"}"#,
            r#"{"id":1,"method":"m"}"#,
            r#"{"jsonrpc":"2.0","id":1}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m"} x"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m",}"#,
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\"}\u{c}",
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"a\tb\"}",
            r#"{"jsonrpc":"2.0" "id":1,"method":"m"}"#,
            r#"{}"#,
            r#"{"#,
        ];
        for text in texts {
            assert!(read(text).is_none(), "{text} was read");
        }
    }

    #[test]
    fn a_batch_of_common_entries_decodes_as_before() {
        let text = r#"[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","method":"b"}]"#;
        let Ok(Payload::Batch(entries)) = decode(text.as_bytes(), &DecodeLimits::default()) else {
            panic!("not a batch");
        };
        assert!(matches!(&entries[0], Ok(Message::Request(request)) if request.method == "a"));
        assert!(matches!(&entries[1], Ok(Message::Notification(note)) if note.method == "b"));
    }
}
