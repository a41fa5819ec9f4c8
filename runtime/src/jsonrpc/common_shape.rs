//! A hand-written reader for the shape nearly every inbound message has — a request or
//! notification whose keys are among `jsonrpc`, `id`, `method` and `params`, each once and
//! unescaped, with `"2.0"`, an unsigned integer or plain string id, a plain string method and
//! structured params — so the common case skips serde's field-by-field envelope visitor. Params
//! are checked by an iterative JSON validator of its own ([`Cursor::value`]) that accepts
//! exactly what serde_json accepts as a raw value, in the same scan that finds where they end.
//! It never decides an error: anything else (another key, an escape, a duplicate, a negative or
//! fractional id, malformed JSON, params nested deeper than [`MAX_DEPTH`]) answers `None`, and
//! the total decoder reads the text as if this reader did not exist. Whatever it accepts, the
//! total decoder would decode to the same message.

use std::sync::Arc;

use serde::Deserialize as _;
use serde::de::value::{Error as ValueError, MapDeserializer};
use serde_json::value::RawValue;

use super::{Message, Notification, Request, RequestId};

/// The message `text` holds, when it has the common shape.
pub(super) fn read(text: &str) -> Option<Message> {
    let mut cursor = Cursor { text, at: 0 };
    let mut fields = Fields::default();
    cursor.token(b'{')?;
    loop {
        cursor.member(&mut fields)?;
        // Only a comma or the closing brace may follow a value, which also refuses an id
        // with a fraction or an exponent.
        match cursor.next_token()? {
            b',' => {}
            b'}' => break,
            _ => return None,
        }
    }
    cursor.skip_whitespace();
    if cursor.at != text.len() {
        return None;
    }
    fields.into_message()
}

/// The fields read so far; a second occurrence of one is not the common shape.
#[derive(Default)]
struct Fields<'a> {
    version: bool,
    id: Option<Id<'a>>,
    method: Option<&'a str>,
    params: Option<&'a str>,
}

impl<'a> Fields<'a> {
    fn into_message(self) -> Option<Message> {
        if !self.version {
            return None;
        }
        let method = self.method?.to_owned();
        let params = match self.params {
            Some(json) => Some(owned_raw(json)?),
            None => None,
        };
        Some(match self.id {
            Some(id) => Message::Request(Request {
                id: id.into(),
                method,
                params,
            }),
            None => Message::Notification(Notification { method, params }),
        })
    }
}

/// An id as read, made a [`RequestId`] (which may allocate) only once the whole message is read.
#[derive(Clone, Copy)]
enum Id<'a> {
    Number(i64),
    Text(&'a str),
}

impl From<Id<'_>> for RequestId {
    fn from(id: Id<'_>) -> Self {
        match id {
            Id::Number(number) => Self::Number(number),
            Id::Text(text) => Self::String(Arc::from(text)),
        }
    }
}

/// `json` (already validated) as an owned raw value, copied once. serde_json has no public
/// constructor that skips validation (`RawValue::from_string` parses the text again), but its
/// `Box<RawValue>` deserializes from any map whose one key is serde_json's raw-value token and
/// whose value is the text. Should that private token ever change, this answers `None` and the
/// total decoder reads the message; the tests would notice the fast path going unused.
pub(super) fn owned_raw(json: &str) -> Option<Box<RawValue>> {
    const RAW_VALUE_TOKEN: &str = "$serde_json::private::RawValue";
    let entry = std::iter::once((RAW_VALUE_TOKEN, json));
    Box::<RawValue>::deserialize(MapDeserializer::<_, ValueError>::new(entry)).ok()
}

/// How deep params may nest (their own bracket counts as 1) before this reader leaves them to
/// the total decoder: serde_json's own recursion limit, and the size of [`Open`]'s stack.
const MAX_DEPTH: u32 = u128::BITS;

pub(super) struct Cursor<'a> {
    pub(super) text: &'a str,
    pub(super) at: usize,
}

impl<'a> Cursor<'a> {
    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.at).copied()
    }

    fn next(&mut self) -> Option<u8> {
        let byte = self.peek()?;
        self.at += 1;
        Some(byte)
    }

    pub(super) fn skip_whitespace(&mut self) {
        // JSON's four whitespace bytes only (`trim_ascii` would also skip a form feed).
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.at += 1;
        }
    }

    /// The next byte that is not whitespace, consumed.
    pub(super) fn next_token(&mut self) -> Option<u8> {
        self.skip_whitespace();
        self.next()
    }

    pub(super) fn token(&mut self, byte: u8) -> Option<()> {
        (self.next_token()? == byte).then_some(())
    }

    /// Consumes `byte` if it is the next token.
    pub(super) fn eat_token(&mut self, byte: u8) -> bool {
        self.skip_whitespace();
        let found = self.peek() == Some(byte);
        self.at += usize::from(found);
        found
    }

    /// Consumes `expected` if the text continues with it.
    fn literal(&mut self, expected: &[u8]) -> Option<()> {
        let found = self.text.as_bytes().get(self.at..)?.starts_with(expected);
        self.at += if found { expected.len() } else { 0 };
        found.then_some(())
    }

    /// One member of the envelope into `fields`: the byte after the name's opening quote
    /// picks the one name it can be, and so how its value is read.
    fn member(&mut self, fields: &mut Fields<'a>) -> Option<()> {
        self.skip_whitespace();
        match self.text.as_bytes().get(self.at + 1)? {
            // `"2.0"` is the only plain string equal to the version.
            b'j' if !fields.version => {
                self.name(br#""jsonrpc""#)?;
                self.literal(br#""2.0""#)?;
                fields.version = true;
            }
            b'i' if fields.id.is_none() => {
                self.name(br#""id""#)?;
                fields.id = Some(self.id()?);
            }
            b'm' if fields.method.is_none() => {
                self.name(br#""method""#)?;
                fields.method = Some(self.plain_string()?);
            }
            b'p' if fields.params.is_none() => {
                self.name(br#""params""#)?;
                fields.params = Some(self.structured()?);
            }
            _ => return None,
        }
        Some(())
    }

    /// A member's `quoted` name, unescaped, and the colon after it.
    fn name(&mut self, quoted: &[u8]) -> Option<()> {
        self.literal(quoted)?;
        self.token(b':')?;
        self.skip_whitespace();
        Some(())
    }

    /// A string with no escape and no control character, without its quotes. (This and the
    /// other readers of a member's value are inlined, so that the cursor stays in registers.)
    #[inline(always)]
    fn plain_string(&mut self) -> Option<&'a str> {
        (self.next()? == b'"').then_some(())?;
        let start = self.at;
        self.at = plain_run_end(self.text.as_bytes(), start);
        let end = self.at;
        (self.next()? == b'"').then_some(())?;
        self.text.get(start..end)
    }

    /// A plain string id, or an unsigned integer id of at most 18 digits (so it fits an `i64`)
    /// without a leading zero.
    #[inline(always)]
    fn id(&mut self) -> Option<Id<'a>> {
        if self.peek() == Some(b'"') {
            return self.plain_string().map(Id::Text);
        }
        let start = self.at;
        // Accumulated while scanned: 18 digits cannot overflow, and a 19th is never taken.
        let mut number = 0i64;
        while let Some(digit @ b'0'..=b'9') = self.peek() {
            if self.at - start == 18 {
                return None;
            }
            number = number * 10 + i64::from(digit - b'0');
            self.at += 1;
        }
        let digits = self.at - start;
        let leading_zero = digits > 1 && self.text.as_bytes().get(start) == Some(&b'0');
        if digits == 0 || leading_zero {
            return None;
        }
        Some(Id::Number(number))
    }

    /// An object or array, validated, as written.
    #[inline(always)]
    fn structured(&mut self) -> Option<&'a str> {
        let start = self.at;
        matches!(self.peek(), Some(b'{' | b'[')).then_some(())?;
        self.at = value_end(self.text, start)?;
        self.text.get(start..self.at)
    }

    /// One JSON value, validated in the one scan that finds its end, as serde_json's raw-value
    /// reader would: iteratively, with the open containers on a bit stack, and `None` past
    /// [`MAX_DEPTH`].
    fn value(&mut self) -> Option<()> {
        let mut open = Open::default();
        loop {
            // An element starts here; inside an object, with its member name.
            if open.innermost() == Some(Container::Object) {
                self.token(b'"')?;
                self.string_rest()?;
                self.token(b':')?;
            }
            match self.next_token()? {
                b'{' => {
                    open.push(Container::Object)?;
                    if !self.eat_token(b'}') {
                        continue;
                    }
                    open.pop();
                }
                b'[' => {
                    open.push(Container::Array)?;
                    if !self.eat_token(b']') {
                        continue;
                    }
                    open.pop();
                }
                b'"' => self.string_rest()?,
                first @ (b'-' | b'0'..=b'9') => self.number_rest(first)?,
                b't' => self.literal(b"rue")?,
                b'f' => self.literal(b"alse")?,
                b'n' => self.literal(b"ull")?,
                _ => return None,
            }
            // A value ends here: close what ends with it, then step to the next element. Only
            // whitespace, a comma or the right bracket may follow a value inside a container,
            // which also refuses a digit after a leading zero.
            loop {
                let Some(container) = open.innermost() else {
                    return Some(());
                };
                match (self.next_token()?, container) {
                    (b',', _) => break,
                    (b']', Container::Array) | (b'}', Container::Object) => open.pop(),
                    _ => return None,
                }
            }
        }
    }

    /// The rest of a string after its opening quote; the text is already valid UTF-8. Inlined
    /// into the validator's loop, so that its cursor stays in registers.
    #[inline(always)]
    pub(super) fn string_rest(&mut self) -> Option<()> {
        loop {
            self.at = plain_run_end(self.text.as_bytes(), self.at);
            match self.next()? {
                b'"' => return Some(()),
                b'\\' => self.at = escape_end(self.text.as_bytes(), self.at)?,
                _ => return None,
            }
        }
    }

    /// The rest of a number after its `first` byte: an optional minus, then an integer part
    /// without a leading zero (a digit after one is refused by what may follow a value).
    fn number_rest(&mut self, first: u8) -> Option<()> {
        let leading = if first == b'-' { self.next()? } else { first };
        match leading {
            b'0' => {}
            b'1'..=b'9' => self.at = digits_end(self.text.as_bytes(), self.at),
            _ => return None,
        }
        if let Some(b'.' | b'e' | b'E') = self.peek() {
            self.at = fraction_and_exponent_end(self.text.as_bytes(), self.at)?;
        }
        Some(())
    }
}

/// Where the JSON value starting at `at` in `text` ends, when it is valid. Out of line, with a
/// cursor of its own, so that the envelope's cursor stays in registers.
#[inline(never)]
pub(super) fn value_end(text: &str, at: usize) -> Option<usize> {
    let mut cursor = Cursor { text, at };
    cursor.value()?;
    Some(cursor.at)
}

/// Where the plain run of a string starting at `at` ends: at its closing quote, an escape or a
/// control byte, or at the end of the text. Eight bytes a step, the last step included.
fn plain_run_end(bytes: &[u8], mut at: usize) -> usize {
    while let Some(eight) = bytes.get(at..).and_then(<[u8]>::first_chunk::<8>) {
        let stops = stops_in(u64::from_le_bytes(*eight));
        if stops != 0 {
            return at + (stops.trailing_zeros() / 8) as usize;
        }
        at += 8;
    }
    match bytes.last_chunk::<8>() {
        // Fewer than eight bytes are left: the text's last eight, shifted so that `at` comes
        // first. The zero bytes shifted in read as control bytes, so they end the run at the
        // end of the text.
        Some(last) if at < bytes.len() => {
            let word = u64::from_le_bytes(*last) >> (8 * (at + 8 - bytes.len()));
            at + (stops_in(word).trailing_zeros() / 8) as usize
        }
        _ => short_run_end(bytes, at),
    }
}

/// [`plain_run_end`] a byte at a time, for a text shorter than eight bytes.
#[cold]
#[inline(never)]
fn short_run_end(bytes: &[u8], at: usize) -> usize {
    let rest = bytes.get(at..).unwrap_or_default();
    at + rest
        .iter()
        .take_while(|&&byte| byte >= 0x20 && byte != b'"' && byte != b'\\')
        .count()
}

/// The top bit of each byte of `eight` that ends a plain run, exact up to the first such byte
/// (a borrow may mark bytes after it, which nobody reads): the classic test for a byte below
/// `n`, `(x - n) & !x & 0x80`, applied to the byte itself (below 0x20, a control byte) and to
/// its difference from a quote and from a backslash (below 1, equal).
fn stops_in(eight: u64) -> u64 {
    const ONES: u64 = u64::from_le_bytes([1; 8]);
    let below = |word: u64, n: u8| word.wrapping_sub(ONES * u64::from(n)) & !word;
    let control = below(eight, 0x20);
    let quote = below(eight ^ (ONES * u64::from(b'"')), 1);
    let backslash = below(eight ^ (ONES * u64::from(b'\\')), 1);
    (control | quote | backslash) & (ONES * 0x80)
}

/// Where the escape whose backslash ends before `at` ends. Any four hex digits are accepted,
/// lone surrogates included, as serde_json's raw-value reader accepts them.
#[cold]
#[inline(never)]
fn escape_end(bytes: &[u8], at: usize) -> Option<usize> {
    match bytes.get(at)? {
        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => Some(at + 1),
        b'u' => {
            let digits = bytes.get(at + 1..at + 5)?;
            digits.iter().all(u8::is_ascii_hexdigit).then_some(at + 5)
        }
        _ => None,
    }
}

fn digits_end(bytes: &[u8], at: usize) -> usize {
    let rest = bytes.get(at..).unwrap_or_default();
    at + rest.iter().take_while(|byte| byte.is_ascii_digit()).count()
}

/// Where a number's optional fraction and optional exponent starting at `at` end, each with
/// at least one digit; out of line, since most numbers in messages are integers.
#[cold]
#[inline(never)]
fn fraction_and_exponent_end(bytes: &[u8], mut at: usize) -> Option<usize> {
    let at_least_one_digit = |at| Some(digits_end(bytes, at)).filter(|&end| end > at);
    if bytes.get(at) == Some(&b'.') {
        at = at_least_one_digit(at + 1)?;
    }
    if let Some(b'e' | b'E') = bytes.get(at) {
        at += 1;
        if let Some(b'+' | b'-') = bytes.get(at) {
            at += 1;
        }
        at = at_least_one_digit(at)?;
    }
    Some(at)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Container {
    Object,
    Array,
}

/// The containers open around the value being read, as a stack of bits (set for an object)
/// with the innermost in the lowest bit: no allocation and no recursion.
#[derive(Default)]
struct Open {
    objects: u128,
    depth: u32,
}

impl Open {
    /// Opens a container; `None` past [`MAX_DEPTH`].
    fn push(&mut self, container: Container) -> Option<()> {
        if self.depth == MAX_DEPTH {
            return None;
        }
        self.objects = self.objects << 1 | u128::from(container == Container::Object);
        self.depth += 1;
        Some(())
    }

    fn pop(&mut self) {
        self.objects >>= 1;
        self.depth = self.depth.saturating_sub(1);
    }

    fn innermost(&self) -> Option<Container> {
        match (self.depth, self.objects & 1) {
            (0, _) => None,
            (_, 1) => Some(Container::Object),
            _ => Some(Container::Array),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde::de::IgnoredAny;

    use super::*;
    use crate::jsonrpc::{DecodeLimits, Payload, decode, decode_envelope};

    /// What the total decoder makes of `text` with this reader bypassed.
    fn total(text: &str) -> String {
        let payload = decode_envelope(text);
        format!("{payload:?}")
    }

    /// The module's contract for one text: what this reader reads, the total decoder reads as
    /// the same message, and text serde_json refuses is never read. Answers whether it was read.
    fn agrees_with_total_decoder(text: &str) -> bool {
        let fast = read(text);
        if serde_json::from_str::<IgnoredAny>(text).is_err() {
            assert!(fast.is_none(), "read text serde_json refuses: {text:?}");
        }
        let Some(message) = fast else {
            return false;
        };
        let fast = format!("{:?}", Ok::<_, ()>(message));
        assert_eq!(fast, total(text), "{text:?}");
        true
    }

    /// The params the total decoder reads from `text`, when it reads a request or notification.
    fn params_of_total(text: &str) -> Option<String> {
        match decode_envelope(text).ok()? {
            Message::Request(Request { params, .. })
            | Message::Notification(Notification { params, .. }) => {
                params.map(|raw| raw.get().to_owned())
            }
            Message::Response(_) => None,
        }
    }

    /// A request carrying `params` verbatim.
    fn with_params(params: &str) -> String {
        format!(r#"{{"jsonrpc":"2.0","id":1,"method":"m","params":{params}}}"#)
    }

    /// The validator's claim for one params text: it is read exactly when the total decoder
    /// reads it as the params of the message (rather than reading more keys after it), and
    /// then as the same message. Answers whether it was read.
    fn params_agree(params: &str) -> bool {
        let text = with_params(params);
        let read_by_fast_path = agrees_with_total_decoder(&text);
        let json_whitespace: &[char] = &[' ', '\t', '\n', '\r'];
        let whole_params =
            params_of_total(&text).as_deref() == Some(params.trim_matches(json_whitespace));
        assert_eq!(read_by_fast_path, whole_params, "params {params:?}");
        read_by_fast_path
    }

    /// Containers nested `depth` deep, alternating objects and arrays, around a number.
    fn nested(depth: usize) -> String {
        let mut text = String::new();
        for level in 0..depth {
            text.push_str(if level % 2 == 0 { r#"{"k":"# } else { "[" });
        }
        text.push('0');
        for level in (0..depth).rev() {
            text.push(if level % 2 == 0 { '}' } else { ']' });
        }
        text
    }

    /// JSON values at the edges of the grammar, good and bad, placed inside params.
    const VALUES: &[&str] = &[
        // numbers
        "0",
        "-0",
        "1",
        "-1",
        "1e5",
        "1E5",
        "1e+5",
        "1e-5",
        "1.5",
        "-1.5e-3",
        "0.0",
        "0e0",
        "123456789012345678901234567890",
        "01",
        "-01",
        "00",
        "1.",
        "1.e5",
        ".5",
        "-",
        "+1",
        "--1",
        "1e",
        "1e+",
        "1E-",
        "0x10",
        "1_000",
        "NaN",
        "Infinity",
        "-Infinity",
        "1.5.3",
        "1ee5",
        "- 1",
        "1 .5",
        // literals
        "true",
        "false",
        "null",
        "tru",
        "nul",
        "nulll",
        "True",
        "NULL",
        "fals",
        "truefalse",
        // strings and escapes
        r#""""#,
        r#""a""#,
        r#""\"""#,
        r#""\\""#,
        r#""\/""#,
        r#""\b\f\n\r\t""#,
        r#""\u0041""#,
        r#""\u00e9""#,
        r#""\uD83D\uDE00""#,
        r#""\ud800""#,
        r#""\udc00x""#,
        r#""\uDBFF\u0041""#,
        r#""\uFFFF""#,
        r#""\u12""#,
        r#""\u12G4""#,
        r#""\U0041""#,
        r#""\x41""#,
        r#""\a""#,
        r#""\'""#,
        r#""\""#,
        r#""\u""#,
        r#""unterminated"#,
        "\"tab\there\"",
        "\"nul\u{0}\"",
        "\"unit\u{1f}\"",
        "\"del\u{7f}\"",
        "\"line\nbreak\"",
        "\"héllo ✓ 😀 日本語\"",
        "\"\u{2028}\u{feff}\"",
        // containers
        "[]",
        "{}",
        "[ ]",
        "{ }",
        "[1,2]",
        "[1,]",
        "[,1]",
        "[,]",
        "[1 2]",
        "[[]]",
        "[{}]",
        r#"{"a":1}"#,
        r#"{"a":1,}"#,
        "{,}",
        r#"{"a" 1}"#,
        r#"{"a":}"#,
        "{1:2}",
        "{a:1}",
        r#"{"a":1 "b":2}"#,
        r#"{"a":1,"a":2}"#,
        r#"{"":""}"#,
        r#"{"a\"b":[]}"#,
        "[}",
        "{]",
        "[1}",
        "[[]",
        "[]]",
        r#"{"a":1]"#,
        r#"{"a"}"#,
        r#"{"a":1:2}"#,
        "[:]",
        // whitespace: JSON's four kinds only
        "[ 1 ]",
        "[\t1\n]",
        "[\r\n1\r\n]",
        "[\u{c}1]",
        "[1\u{c}]",
        "[\u{a0}1]",
        "[\u{2003}1]",
        "[\u{b}1]",
        "[\u{0}]",
        "{ \"a\" : 1 , \"b\" : [ ] }",
        // bytes that are no value
        "[é]",
        "[']",
        "[undefined]",
        "[/]",
        "[#]",
    ];

    #[test]
    fn every_edge_value_in_params_is_read_exactly_when_serde_json_accepts_it() {
        let (mut read_count, mut refused_count) = (0, 0);
        for value in VALUES {
            for params in [
                format!("[{value}]"),
                format!(r#"{{"k":{value}}}"#),
                format!(r#"[0,{{"k":[{value}, {value}]}},1]"#),
            ] {
                if params_agree(&params) {
                    read_count += 1;
                } else {
                    refused_count += 1;
                }
            }
        }
        for params in [
            "{}", "[]", " {}", "[] ", "\t{\n}\r", "\u{c}{}", "null", "\"s\"", "1",
        ] {
            params_agree(params);
        }
        assert!(
            read_count > 100 && refused_count > 100,
            "{read_count} read, {refused_count} refused"
        );
    }

    #[test]
    fn params_nested_128_deep_are_read_and_deeper_ones_are_left_to_the_total_decoder() {
        // serde_json's own recursion limit, which this reader's stack is sized to.
        let limit = 128;
        for depth in [1, 2, 3, limit - 1, limit] {
            let text = with_params(&nested(depth));
            assert!(
                agrees_with_total_decoder(&text),
                "depth {depth} was not read"
            );
            let arrays = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
            assert!(
                agrees_with_total_decoder(&with_params(&arrays)),
                "{depth} arrays"
            );
        }
        for depth in [limit + 1, limit + 2, 4 * limit] {
            let text = with_params(&nested(depth));
            assert!(read(&text).is_none(), "depth {depth} was read");
            // The total decoder, not this reader, decides what such params are.
            assert!(params_of_total(&text).is_some(), "depth {depth}");
        }
        let unclosed = with_params(&"[".repeat(limit));
        assert!(!agrees_with_total_decoder(&unclosed));
        let overclosed = with_params(&format!("{}{}", "[".repeat(3), "]".repeat(4)));
        assert!(!agrees_with_total_decoder(&overclosed));
    }

    #[test]
    fn unusual_envelopes_are_read_only_as_the_total_decoder_reads_them() {
        let texts = [
            "\u{feff}{\"jsonrpc\":\"2.0\",\"method\":\"m\"}",
            "\u{c}{\"jsonrpc\":\"2.0\",\"method\":\"m\"}",
            "{\"jsonrpc\":\"2.0\",\u{c}\"method\":\"m\"}",
            "{\"jsonrpc\":\"2.0\",\"method\":\"m\"}\u{a0}",
            r#"{"jsonrp\u0063":"2.0","method":"m"}"#,
            r#"{"jsonrpc":"2\u002e0","method":"m"}"#,
            r#"{"jsonrpc":"2.0 ","method":"m"}"#,
            r#"{"jsonrpc":"2.0","jsonrpc":"2.0","method":"m"}"#,
            r#"{"jsonrpc":"2.0","method":"m","params":{},"params":[]}"#,
            r#"{"jsonrpc":"2.0","method":"m","params":null}"#,
            r#"{"jsonrpc":"2.0","method":"m","params":{}}}"#,
            r#"{"jsonrpc":"2.0","method":"m","params":{} }"#,
            r#"{"jsonrpc":"2.0","method":"m","params":[1}"#,
            r#"{"jsonrpc":"2.0","method":"m","id":1,"result":1}"#,
            r#"{"jsonrpc":"2.0","method":"m","id":1,"error":{"code":1,"message":"x"}}"#,
            r#"{"jsonrpc":"2.0","method":"m","id":0}"#,
            r#"{"jsonrpc":"2.0","method":"m","id":00}"#,
            r#"{"jsonrpc":"2.0","method":"m","id":-0}"#,
            r#"{"jsonrpc":"2.0","method":"m","id":999999999999999999}"#,
            r#"{"jsonrpc":"2.0","method":"m","id":9223372036854775807}"#,
            r#"{"jsonrpc":"2.0","method":"m","id":9223372036854775808}"#,
            r#"{"jsonrpc":"2.0","method":"m","id":1e0}"#,
            r#"{"jsonrpc":"2.0","method":"m","id":1x}"#,
            r#"{"jsonrpc":"2.0","method":"m","id":"\u0041"}"#,
            r#"{"jsonrpc":"2.0","method":"é ✓","id":"日本"}"#,
            r#"{"jsonrpc":"2.0","method":"m","i":1}"#,
            r#"{"jsonrpc":"2.0","method":"m","idx":1}"#,
            r#"{"jsonrpc":"2.0","methods":"m"}"#,
            r#"{"jsonrpc":"2.0","method":m}"#,
            r#"{"jsonrpc":"2.0","method":"m"#,
            r#"{"jsonrpc":"2.0","method""m"}"#,
            r#"{"jsonrpc":"2.0",,"method":"m"}"#,
            r#"{,"jsonrpc":"2.0","method":"m"}"#,
            r#"[{"jsonrpc":"2.0","method":"m"}]"#,
            r#"{"jsonrpc":"2.0","method":"m"}{}"#,
            "",
            "{",
            "{\"",
            "{\"j",
        ];
        for text in texts {
            agrees_with_total_decoder(text);
        }
    }

    #[test]
    fn a_plain_run_ends_at_the_first_quote_backslash_or_control_byte_wherever_it_lies() {
        let stops = [b'"', b'\\', 0x00, 0x0a, 0x1f];
        let fillers = [b'a', b' ', 0x7f, 0x80, 0xc3, 0xff, b'!', b'#', b'[', b']'];
        for length in 0..24 {
            for start in 0..=length {
                for filler in fillers {
                    // Stops before `start` are not part of the run.
                    let unscanned = |bytes: &mut Vec<u8>| bytes[..start].fill(b'"');
                    let mut bytes = vec![filler; length];
                    unscanned(&mut bytes);
                    assert_eq!(plain_run_end(&bytes, start), length, "no stop in {bytes:?}");
                    for at in start..length {
                        for stop in stops {
                            bytes[at] = stop;
                            // A second stop after the first must not move the answer.
                            if let Some(later) = bytes.get_mut(at + 3) {
                                *later = b'"';
                            }
                            unscanned(&mut bytes);
                            assert_eq!(plain_run_end(&bytes, start), at, "{bytes:?} from {start}");
                            bytes.fill(filler);
                        }
                    }
                }
            }
        }
    }

    /// A deterministic pseudo-random source (xorshift64*), so every run tests the same corpus.
    struct Seeded(u64);

    impl Seeded {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
        }

        fn below(&mut self, bound: usize) -> usize {
            (self.next() % bound.max(1) as u64) as usize
        }
    }

    /// What a mutation inserts or writes over: JSON's structural bytes, parts of numbers,
    /// literals and escapes, every kind of whitespace, control characters and non-ASCII text.
    const ALPHABET: &[char] = &[
        '{', '}', '[', ']', '"', ',', ':', '\\', '/', '.', '-', '+', '0', '1', '9', 'e', 'E', 't',
        'r', 'u', 'f', 'a', 'l', 's', 'n', 'b', 'x', 'D', ' ', '\t', '\n', '\r', '\u{c}', '\u{b}',
        '\u{0}', '\u{1f}', '\u{7f}', '\u{a0}', 'é', '😀',
    ];

    /// `text` changed by one to three random insertions, deletions, replacements or copies of
    /// a short span elsewhere.
    fn mutate(text: &str, random: &mut Seeded) -> String {
        let mut chars: Vec<char> = text.chars().collect();
        for _ in 0..=random.below(3) {
            let at = random.below(chars.len() + 1);
            let byte = ALPHABET[random.below(ALPHABET.len())];
            match random.below(4) {
                0 => chars.insert(at, byte),
                1 if at < chars.len() => {
                    chars.remove(at);
                }
                2 if at < chars.len() => chars[at] = byte,
                _ => {
                    let from = random.below(chars.len());
                    let span: Vec<char> = chars
                        .iter()
                        .skip(from)
                        .take(1 + random.below(8))
                        .copied()
                        .collect();
                    chars.splice(at..at, span);
                }
            }
        }
        chars.into_iter().collect()
    }

    /// Valid params exercising every part of the grammar.
    const PARAMS: &[&str] = &[
        r#"{"text":"hello, world"}"#,
        r#"{"name":"search","arguments":{"query":"caf\u00e9 \"quoted\" \\ \/","limit":10,"ratio":-0.5e-3,"flags":[true,false,null],"nested":[[],{},[{"a":[1,2.5,3E+10,0]}]]}}"#,
        "[ 1 , -2 , 3.25E+2 , \"tab\\t\" , { } ,\r\n [ ] ]",
        r#"["\ud83d\ude00","\b\f\n\r\t",0,-0,1e5,{"k":"v","k2":[null]}]"#,
        r#"{"emoji":"😀","text":"日本語","empty":"","deep":[[[{"x":[[{"y":{}}]]}]]]}"#,
    ];

    #[test]
    fn mutated_params_are_read_exactly_when_the_total_decoder_reads_them_as_params() {
        mutants_agree(PARAMS, 0x5eed_0fc0_ffee, params_agree);
    }

    /// Checks `agree` on 6,000 seeded mutants of `originals`; it answers whether a mutant was
    /// read. Both outcomes must be common, so neither a reader that takes nothing nor one that
    /// takes everything passes.
    fn mutants_agree(originals: &[&str], seed: u64, agree: impl Fn(&str) -> bool) {
        let mut random = Seeded(seed);
        let (mut read_count, mut refused_count) = (0, 0);
        for round in 0..6000 {
            let text = mutate(originals[round % originals.len()], &mut random);
            if agree(&text) {
                read_count += 1;
            } else {
                refused_count += 1;
            }
        }
        assert!(
            read_count > 500 && refused_count > 500,
            "{read_count} read, {refused_count} refused"
        );
    }

    #[test]
    fn mutated_messages_are_read_only_as_the_total_decoder_reads_them() {
        let messages: Vec<String> = [
            r#"{"jsonrpc":"2.0","id":1,"method":"echo","params":{"text":"hello, world"}}"#,
            r#"{"params":[],"method":"tools/list","id":"req-7","jsonrpc":"2.0"}"#,
            " { \"jsonrpc\" : \"2.0\" ,\n\t\"method\" : \"notify\" } ",
            r#"{"jsonrpc":"2.0","id":1234567,"method":"ünïcödé/✓"}"#,
        ]
        .into_iter()
        .map(str::to_owned)
        .chain(PARAMS.iter().map(|params| with_params(params)))
        .collect();
        let messages: Vec<&str> = messages.iter().map(String::as_str).collect();
        mutants_agree(&messages, 0x00de_c0de_5eed, agrees_with_total_decoder);
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
    fn a_body_led_by_whitespace_json_does_not_know_is_not_json() {
        let message = r#"{"jsonrpc":"2.0","id":1,"method":"m"}"#;
        for lead in [
            "\u{c}", "\u{b}", "\u{a0}", "\u{3000}", "\u{feff}", " \u{c} ",
        ] {
            for body in [format!("{lead}{message}"), format!("{lead}[{message}]")] {
                let decoded = decode(body.as_bytes(), &DecodeLimits::default());
                assert!(
                    matches!(decoded, Err(crate::jsonrpc::DecodeError::NotJson)),
                    "{body:?}: {decoded:?}"
                );
            }
        }
        let led_by_json_whitespace = format!(" \t\r\n{message}");
        let decoded = decode(led_by_json_whitespace.as_bytes(), &DecodeLimits::default());
        assert!(matches!(decoded, Ok(Payload::Single(Message::Request(_)))));
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
