//! One top-level member of a JSON object, located in the object's own text and cut out of it,
//! without a tree of values: what a protocol needs to strip a member it has already read (MCP's
//! stateless `_meta`) before params reach the handler, so the handler decodes the same text a
//! request without that member would carry.
//!
//! The object is scanned once with the common-shape reader's cursor (the same JSON grammar,
//! eight bytes a step through strings), member by member, recording the offsets it reads; a
//! member's value is skipped whole, so a member nested in a value is never taken for a
//! top-level one. A key is located only where it is written exactly as given, without escapes;
//! an escaped spelling of it still counts as the key, so a key written twice, in any spelling,
//! is found nowhere: which of two members a reader takes differs between readers, and a cut
//! that guesses would leave the other.

use std::ops::Range;

use serde_json::value::RawValue;

use super::common_shape::{Cursor, owned_raw, value_end};

/// One member of a JSON object, located in the object's text.
#[derive(Debug, Clone)]
pub struct Member<'a> {
    object: &'a str,
    value: Range<usize>,
    /// What removing the member takes out of the object: the member, one comma that
    /// separates it from a neighbour and the whitespace between them.
    cut: Range<usize>,
}

/// The member of `object` whose key is `key`, when `object` is a JSON object holding that key
/// once (in any spelling) and written there without escapes.
pub fn find<'a>(object: &'a RawValue, key: &str) -> Option<Member<'a>> {
    let text = object.get();
    let mut cursor = Cursor { text, at: 0 };
    cursor.token(b'{')?;
    let inside = cursor.at;
    if cursor.eat_token(b'}') {
        return None;
    }
    let mut found = None;
    let mut spellings = 0usize;
    let mut comma_before = None;
    loop {
        let (spelling, value) = read_member(&mut cursor, key)?;
        let next = cursor.next_token()?;
        // The comma or the closing brace just read.
        let after = cursor.at.checked_sub(1)?;
        spellings += usize::from(spelling != Spelling::Other);
        if spelling == Spelling::Plain {
            let cut = match comma_before {
                Some(comma) => comma..value.end,
                // The first member: the comma after it goes instead, if there is one.
                None if next == b',' => inside..after + 1,
                None => inside..after,
            };
            found = Some(Member {
                object: text,
                value,
                cut,
            });
        }
        match next {
            b',' => comma_before = Some(after),
            b'}' => break,
            _ => return None,
        }
    }
    found.filter(|_| spellings == 1)
}

/// Reads one member (whitespace, key, colon, value) at `cursor`: how its key spells `key`,
/// and where its value lies.
fn read_member(cursor: &mut Cursor<'_>, key: &str) -> Option<(Spelling, Range<usize>)> {
    cursor.skip_whitespace();
    let key_start = cursor.at;
    cursor.token(b'"')?;
    cursor.string_rest()?;
    let spelling = Spelling::of(cursor.text.get(key_start..cursor.at)?, key);
    cursor.token(b':')?;
    cursor.skip_whitespace();
    let value_start = cursor.at;
    cursor.at = value_end(cursor.text, value_start)?;
    Some((spelling, value_start..cursor.at))
}

/// How a member's key, as written, relates to the key looked for.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Spelling {
    /// Written exactly as the key.
    Plain,
    /// The key, spelled with escapes.
    Escaped,
    /// Another key.
    Other,
}

impl Spelling {
    /// How `quoted` (a key with its quotes, as written) spells `key`. Only a key written with
    /// a backslash is decoded, which keys rarely are.
    fn of(quoted: &str, key: &str) -> Self {
        let written = quoted.strip_prefix('"').and_then(|q| q.strip_suffix('"'));
        if written == Some(key) {
            return Self::Plain;
        }
        if !quoted.contains('\\') {
            return Self::Other;
        }
        match serde_json::from_str::<String>(quoted) {
            Ok(decoded) if decoded == key => Self::Escaped,
            _ => Self::Other,
        }
    }
}

impl<'a> Member<'a> {
    /// The member's value as written in the object.
    pub fn value(&self) -> &'a str {
        self.object.get(self.value.clone()).unwrap_or_default()
    }

    /// The object's text without this member, the rest as written. `None` only if the text
    /// could not be made a raw value, which a cut of a valid object never leaves.
    pub fn object_without(&self) -> Option<Box<RawValue>> {
        let before = self.object.get(..self.cut.start)?;
        let after = self.object.get(self.cut.end..)?;
        let mut text = String::with_capacity(before.len() + after.len());
        text.push_str(before);
        text.push_str(after);
        // Valid by construction (a whole member and one separator went), so not parsed again.
        owned_raw(&text)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Map, Value};

    use super::*;

    fn raw(text: &str) -> Box<RawValue> {
        RawValue::from_string(text.to_owned()).unwrap_or_else(|error| panic!("{text:?}: {error}"))
    }

    /// The value and the rest of `object` when `key` is found in it.
    fn located(object: &str, key: &str) -> Option<(String, String)> {
        let object = raw(object);
        let member = find(&object, key)?;
        let without = member.object_without().map(|rest| rest.get().to_owned());
        Some((member.value().to_owned(), without.unwrap_or_default()))
    }

    fn pair(value: &str, rest: &str) -> Option<(String, String)> {
        Some((value.to_owned(), rest.to_owned()))
    }

    #[test]
    fn a_member_is_cut_with_one_comma_wherever_it_stands_and_the_rest_stays_as_written() {
        assert_eq!(
            located(r#"{"a":1,"_meta":{"k":[1]}}"#, "_meta"),
            pair(r#"{"k":[1]}"#, r#"{"a":1}"#)
        );
        assert_eq!(
            located(r#"{ "_meta" : {"v":"x"} , "name":"echo"}"#, "_meta"),
            pair(r#"{"v":"x"}"#, r#"{ "name":"echo"}"#)
        );
        assert_eq!(
            located(r#"{"a":1 , "_meta":2 ,"b":[3]}"#, "_meta"),
            pair("2", r#"{"a":1  ,"b":[3]}"#)
        );
        assert_eq!(
            located("{\n\t\"_meta\":null\r\n}", "_meta"),
            pair("null", "{}")
        );
    }

    #[test]
    fn a_key_inside_a_value_is_not_a_member_of_the_object() {
        for object in [
            r#"{"a":{"_meta":1}}"#,
            r#"{"a":[{"_meta":1}]}"#,
            r#"{"a":"\"_meta\":1","b":"_meta"}"#,
            r#"{"_meta ":1,"_met":2,"meta":3}"#,
        ] {
            assert_eq!(located(object, "_meta"), None, "{object}");
        }
        assert_eq!(
            located(r#"{"a":{"_meta":1},"_meta":"\"}"}"#, "_meta"),
            pair(r#""\"}""#, r#"{"a":{"_meta":1}}"#)
        );
    }

    #[test]
    fn a_repeated_or_escaped_key_is_found_nowhere() {
        for object in [
            r#"{"_meta":1,"_meta":2}"#,
            r#"{"_meta":1,"a":0,"\u005fmeta":2}"#,
            r#"{"\u005fmeta":1}"#,
            r#"{"_m\u0065ta":1,"b":2}"#,
        ] {
            assert_eq!(located(object, "_meta"), None, "{object}");
        }
        // An escape in another key is only another key.
        assert_eq!(
            located(r#"{"\u0061":1,"_meta":2}"#, "_meta"),
            pair("2", r#"{"\u0061":1}"#)
        );
    }

    #[test]
    fn what_is_not_an_object_holding_the_key_has_no_member() {
        for text in [
            "{}",
            "[]",
            r#"[{"_meta":1}]"#,
            r#""_meta""#,
            "1",
            "null",
            r#"{"a":1}"#,
        ] {
            assert_eq!(located(text, "_meta"), None, "{text}");
        }
    }

    /// A deterministic pseudo-random source (xorshift64*), so every run tests the same objects.
    struct Seeded(u64);

    impl Seeded {
        fn below(&mut self, bound: usize) -> usize {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % bound.max(1) as u64) as usize
        }

        fn pick<'a>(&mut self, choices: &[&'a str]) -> &'a str {
            choices
                .get(self.below(choices.len()))
                .copied()
                .unwrap_or_default()
        }
    }

    /// Keys as written, with the key each decodes to: the one looked for, plainly and escaped,
    /// and neighbours of it.
    const KEYS: &[(&str, &str)] = &[
        (r#""_meta""#, "_meta"),
        (r#""\u005fmeta""#, "_meta"),
        (r#""_me\u0074a""#, "_meta"),
        (r#""name""#, "name"),
        (r#""_meta ""#, "_meta "),
        (r#""_Meta""#, "_Meta"),
        (r#""\"_meta""#, "\"_meta"),
        (r#""""#, ""),
        (r#""日本""#, "日本"),
        (r#""a\\b""#, "a\\b"),
    ];

    /// Values at the edges of the grammar, some holding the key in every way a value can.
    const VALUES: &[&str] = &[
        "0",
        "-1.5e+3",
        "true",
        "null",
        r#""""#,
        r#""_meta""#,
        r#""\"_meta\":{}""#,
        r#""}{][,:\\\"""#,
        r#""\ud83d\ude00 é""#,
        "[]",
        "{}",
        r#"{"_meta":{"_meta":1}}"#,
        r#"[{"_meta":[]},"_meta",{"a":{"b":[null,{"_meta":"}"}]}}]"#,
        r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","x":[1,2]}"#,
    ];

    const WHITESPACE: &[&str] = &["", "", " ", "\t", "\n", "\r\n", "  "];

    /// A generated object's text, and how many of its keys decode to `_meta` and whether the
    /// last of them is written plainly.
    fn generated(random: &mut Seeded) -> (String, usize, bool) {
        let mut text = String::from("{");
        let (mut count, mut plain) = (0, false);
        let members = random.below(6);
        for index in 0..members {
            if index > 0 {
                text.push_str(random.pick(WHITESPACE));
                text.push(',');
            }
            let (written, decoded) = KEYS
                .get(random.below(KEYS.len()))
                .copied()
                .unwrap_or_default();
            if decoded == "_meta" {
                count += 1;
                plain = written == r#""_meta""#;
            }
            for part in [
                random.pick(WHITESPACE),
                written,
                random.pick(WHITESPACE),
                ":",
                random.pick(WHITESPACE),
                random.pick(VALUES),
            ] {
                text.push_str(part);
            }
        }
        text.push_str(random.pick(WHITESPACE));
        text.push('}');
        (text, count, plain)
    }

    #[test]
    fn generated_objects_are_cut_exactly_as_a_full_parse_reads_them() {
        let mut random = Seeded(0x0b1e_c7ed_5eed);
        let mut found_count = 0;
        for _ in 0..20_000 {
            let (text, count, plain) = generated(&mut random);
            let parsed: Map<String, Value> = serde_json::from_str(&text)
                .unwrap_or_else(|error| panic!("generated {text:?}: {error}"));
            let object = raw(&text);
            let Some(member) = find(&object, "_meta") else {
                assert!(count != 1 || !plain, "not found in {text:?}");
                continue;
            };
            found_count += 1;
            assert!(count == 1 && plain, "found in {text:?}");
            let value: Value = serde_json::from_str(member.value()).unwrap_or_default();
            assert_eq!(Some(&value), parsed.get("_meta"), "{text:?}");
            let mut expected = parsed.clone();
            expected.remove("_meta");
            let rest = member.object_without().map(|rest| rest.get().to_owned());
            let rest: Option<Map<String, Value>> =
                rest.and_then(|rest| serde_json::from_str(&rest).ok());
            assert_eq!(rest, Some(expected), "{text:?}");
        }
        // Both outcomes are common, so neither a finder of nothing nor of everything passes.
        assert!(
            (2_000..18_000).contains(&found_count),
            "{found_count} of 20000 found"
        );
    }
}
