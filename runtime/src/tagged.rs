//! Decoding a generated union by its tag: the one place that reads the tag field, names the
//! member it selects and words the errors, so each generated `Deserialize` is only its match.

use serde::Deserializer;
use serde::de::Error as _;
use serde_json::{Map, Value};

/// A union's object with the tag it carries, already checked to be one of the union's tags.
pub struct Tagged {
    /// The matched tag: always one of the `tags` passed to [`read_tagged`].
    pub tag: &'static str,
    /// The whole object, tag included, for the selected member to decode.
    pub object: Value,
}

/// Reads an object and its `tag_field`; a missing, non-string or unknown tag is an error that
/// names the field (and, when unknown, the tags the union accepts).
pub fn read_tagged<'de, D: Deserializer<'de>>(
    deserializer: D,
    union: &'static str,
    tag_field: &'static str,
    tags: &'static [&'static str],
) -> Result<Tagged, D::Error> {
    let object = <Map<String, Value> as serde::Deserialize>::deserialize(deserializer)?;
    let tag = match object.get(tag_field) {
        Some(Value::String(tag)) => tags
            .iter()
            .find(|known| **known == tag.as_str())
            .ok_or_else(|| D::Error::unknown_variant(tag, tags))?,
        Some(_) => {
            return Err(D::Error::custom(format_args!(
                "{union}: `{tag_field}` is not a string"
            )));
        }
        None => return Err(D::Error::missing_field(tag_field)),
    };
    Ok(Tagged {
        tag,
        object: Value::Object(object),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const TAGS: &[&str] = &["text", "image"];

    fn read(value: Value) -> Result<Tagged, serde_json::Error> {
        read_tagged(value, "Content", "type", TAGS)
    }

    #[test]
    fn a_known_tag_selects_its_member_and_keeps_the_whole_object() {
        let tagged = read(json!({"type": "image", "data": "x"})).unwrap();
        assert_eq!(tagged.tag, "image");
        assert_eq!(tagged.object, json!({"type": "image", "data": "x"}));
    }

    #[test]
    fn an_unknown_missing_or_non_string_tag_is_an_error_naming_the_field() {
        let unknown = read(json!({"type": "video"})).err().unwrap().to_string();
        assert!(unknown.contains("unknown variant `video`") && unknown.contains("`text`"));
        let missing = read(json!({"text": "hi"})).err().unwrap().to_string();
        assert!(missing.contains("missing field `type`"));
        let number = read(json!({"type": 3})).err().unwrap().to_string();
        assert!(number.contains("Content: `type` is not a string"));
        assert!(read(json!(["text"])).is_err());
    }
}
