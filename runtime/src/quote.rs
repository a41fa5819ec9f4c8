//! The one rule for quoting a caller's value in an error message or `data`: at most
//! [`MAX_QUOTED_BYTES`] bytes of it, cut on a character boundary (a cut is marked with `…`),
//! control characters escaped, between backticks. Every error path that repeats what a caller
//! sent goes through [`quote`], so a 1 MiB id cannot come back as a 1 MiB message and a newline in
//! a name cannot forge a log line.

use std::fmt::{self, Display, Write};

/// The most bytes of a caller's value an error repeats (escapes and the cut mark included,
/// backticks not).
pub const MAX_QUOTED_BYTES: usize = 64;

/// What a cut value ends with.
const CUT_MARK: &str = "…";

/// A caller's value as an error quotes it; see the module doc. Formatting never renders more
/// than [`MAX_QUOTED_BYTES`] bytes of the value, however long it is.
#[derive(Clone, Copy)]
pub struct Quoted<T>(T);

/// Quotes `value` by the one rule (see the module doc): `quote("a\nb")` renders `` `a\nb` ``
/// with the newline escaped, and a 100-byte id renders its first 61 bytes and `…`.
pub fn quote<T: Display>(value: T) -> Quoted<T> {
    Quoted(value)
}

impl<T: Display> Display for Quoted<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut bounded = Bounded::default();
        // `Bounded` answers `Err` once the value has exceeded the bound; that only ends the
        // rendering early, it is not a formatting failure.
        let _ = write!(bounded, "{}", self.0);
        f.write_char('`')?;
        f.write_str(bounded.finish())?;
        f.write_char('`')
    }
}

impl<T: Display> fmt::Debug for Quoted<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        Display::fmt(self, f)
    }
}

/// Collects the escaped rendering of a value until it has seen more than the bound.
#[derive(Default)]
struct Bounded {
    text: String,
    /// The length of `text` at the last unit (a character or its escape) that still leaves room
    /// for the cut mark.
    cut_at: usize,
    overflowed: bool,
}

impl Bounded {
    fn push_unit(&mut self, unit: &str) -> fmt::Result {
        if self.text.len() + unit.len() > MAX_QUOTED_BYTES {
            self.overflowed = true;
            return Err(fmt::Error);
        }
        self.text.push_str(unit);
        if self.text.len() + CUT_MARK.len() <= MAX_QUOTED_BYTES {
            self.cut_at = self.text.len();
        }
        Ok(())
    }

    fn finish(&mut self) -> &str {
        if self.overflowed {
            self.text.truncate(self.cut_at);
            self.text.push_str(CUT_MARK);
        }
        &self.text
    }
}

impl Write for Bounded {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        for character in s.chars() {
            if character.is_control() {
                let mut escaped = String::with_capacity(10);
                escaped.extend(character.escape_default());
                self.push_unit(&escaped)?;
            } else {
                let mut buffer = [0u8; 4];
                self.push_unit(character.encode_utf8(&mut buffer))?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inner(rendered: &str) -> &str {
        rendered
            .strip_prefix('`')
            .and_then(|rest| rest.strip_suffix('`'))
            .unwrap_or_else(|| panic!("not between backticks: {rendered:?}"))
    }

    #[test]
    fn a_short_value_is_quoted_whole_between_backticks() {
        assert_eq!(quote("tool-7").to_string(), "`tool-7`");
    }

    #[test]
    fn a_value_of_exactly_the_bound_is_not_cut() {
        let value = "x".repeat(MAX_QUOTED_BYTES);
        assert_eq!(inner(&quote(&value).to_string()), value);
    }

    #[test]
    fn a_long_value_is_cut_to_the_bound_with_a_mark() {
        let value = "y".repeat(100);
        let rendered = quote(&value).to_string();
        let quoted = inner(&rendered);
        assert_eq!(quoted.len(), MAX_QUOTED_BYTES);
        assert!(quoted.ends_with(CUT_MARK));
        assert!(quoted.starts_with("yyyy"));
    }

    #[test]
    fn a_cut_never_splits_a_multibyte_character() {
        for prefix in 0..4 {
            let value = format!("{}{}", "a".repeat(prefix), "é".repeat(80));
            let rendered = quote(&value).to_string();
            let quoted = inner(&rendered);
            assert!(
                quoted.len() <= MAX_QUOTED_BYTES,
                "{prefix}: {}",
                quoted.len()
            );
            assert!(quoted.ends_with(CUT_MARK));
        }
    }

    #[test]
    fn control_characters_are_escaped_and_never_split() {
        assert_eq!(quote("a\nb\u{1b}[0m").to_string(), "`a\\nb\\u{1b}[0m`");
        let value = "\u{7}".repeat(40);
        let rendered = quote(&value).to_string();
        let quoted = inner(&rendered);
        assert!(quoted.len() <= MAX_QUOTED_BYTES);
        let kept = quoted.trim_end_matches(CUT_MARK);
        assert_eq!(
            kept.len() % "\\u{7}".len(),
            0,
            "an escape was split: {quoted}"
        );
        assert!(!quoted.chars().any(char::is_control));
    }

    #[test]
    fn any_display_value_is_bounded_without_rendering_it_whole() {
        struct Endless;
        impl Display for Endless {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                loop {
                    f.write_str("zzzzzzzz")?;
                }
            }
        }
        let rendered = quote(Endless).to_string();
        assert_eq!(inner(&rendered).len(), MAX_QUOTED_BYTES);
        assert_eq!(
            quote(serde_json::json!({"k": 1})).to_string(),
            "`{\"k\":1}`"
        );
    }
}
