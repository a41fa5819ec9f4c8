//! Unions whose members carry a distinct `type` tag (codegen's `tag_dispatch`) decode by that
//! tag: the member it names, a clear error for an unknown or missing tag, and the same bytes out.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use protocols_mcp::generated::v2025_11_25::types::{CallToolResult, ContentBlock};
use serde_json::json;

#[test]
fn each_content_tag_decodes_to_its_own_member_and_serializes_to_the_same_bytes() {
    let blocks = [
        r#"{"type":"text","text":"hi"}"#,
        r#"{"type":"image","data":"aGk=","mimeType":"image/png"}"#,
        r#"{"type":"audio","data":"aGk=","mimeType":"audio/wav"}"#,
        r#"{"name":"a","type":"resource_link","uri":"file:///a"}"#,
        r#"{"resource":{"text":"x","uri":"file:///a"},"type":"resource"}"#,
    ];
    for text in blocks {
        let block: ContentBlock = serde_json::from_str(text).unwrap();
        let tag = serde_json::from_str::<serde_json::Value>(text).unwrap()["type"].clone();
        let member = match &block {
            ContentBlock::TextContent(_) => "text",
            ContentBlock::ImageContent(_) => "image",
            ContentBlock::AudioContent(_) => "audio",
            ContentBlock::ResourceLink(_) => "resource_link",
            ContentBlock::EmbeddedResource(_) => "resource",
        };
        assert_eq!(tag, member);
        let again: serde_json::Value = serde_json::to_value(&block).unwrap();
        assert_eq!(
            again,
            serde_json::from_str::<serde_json::Value>(text).unwrap()
        );
    }
}

#[test]
fn an_unknown_content_tag_is_an_unknown_variant_error_listing_the_known_ones() {
    let error = serde_json::from_value::<ContentBlock>(json!({"type": "video", "data": "x"}))
        .unwrap_err()
        .to_string();
    assert_eq!(
        error,
        "unknown variant `video`, expected one of `image`, `audio`, `resource_link`, `text`, `resource`"
    );
}

#[test]
fn a_content_block_without_its_tag_is_a_missing_field_error() {
    let error = serde_json::from_str::<CallToolResult>(r#"{"content":[{"text":"hi"}]}"#)
        .unwrap_err()
        .to_string();
    assert!(error.starts_with("missing field `type`"), "{error}");
}

#[test]
fn a_tag_that_is_not_a_string_is_refused_by_name() {
    let error = serde_json::from_value::<ContentBlock>(json!({"type": 7, "text": "hi"}))
        .unwrap_err()
        .to_string();
    assert_eq!(error, "ContentBlock: `type` is not a string");
}

#[test]
fn a_member_named_by_its_tag_but_missing_a_field_reports_that_field() {
    let error = serde_json::from_value::<ContentBlock>(json!({"type": "text"}))
        .unwrap_err()
        .to_string();
    assert_eq!(error, "missing field `text`");
}
