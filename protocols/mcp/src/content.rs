//! Short constructors for the 2025-11-25 content types handlers return (the generated structs
//! spell out every optional field; these fill in the usual case).

use crate::generated::v2025_11_25::types;

/// A text block.
pub fn text(text: impl Into<String>) -> types::ContentBlock {
    types::ContentBlock::TextContent(types::TextContent {
        annotations: None,
        meta: None,
        text: text.into(),
        type_: types::TextContentType::Text,
    })
}

/// An image block (`data` is base64).
pub fn image(data: impl Into<String>, mime_type: impl Into<String>) -> types::ContentBlock {
    types::ContentBlock::ImageContent(types::ImageContent {
        annotations: None,
        data: data.into(),
        meta: None,
        mime_type: mime_type.into(),
        type_: types::ImageContentType::Image,
    })
}

/// An audio block (`data` is base64).
pub fn audio(data: impl Into<String>, mime_type: impl Into<String>) -> types::ContentBlock {
    types::ContentBlock::AudioContent(types::AudioContent {
        annotations: None,
        data: data.into(),
        meta: None,
        mime_type: mime_type.into(),
        type_: types::AudioContentType::Audio,
    })
}

/// A resource embedded as text.
pub fn embedded_text(
    uri: impl Into<String>,
    mime_type: impl Into<String>,
    text: impl Into<String>,
) -> types::ContentBlock {
    types::ContentBlock::EmbeddedResource(types::EmbeddedResource {
        annotations: None,
        meta: None,
        resource: types::EmbeddedResourceResource::TextResourceContents(text_resource(
            uri, mime_type, text,
        )),
        type_: types::EmbeddedResourceType::Resource,
    })
}

/// A successful tool result made of `content`.
pub fn tool_result(content: Vec<types::ContentBlock>) -> types::CallToolResult {
    types::CallToolResult {
        content,
        is_error: None,
        meta: None,
        structured_content: None,
    }
}

/// A failed tool result: the model sees `message` (`isError: true`), the protocol sees success.
pub fn tool_error(message: impl Into<String>) -> types::CallToolResult {
    types::CallToolResult {
        is_error: Some(true),
        ..tool_result(vec![text(message)])
    }
}

fn text_resource(
    uri: impl Into<String>,
    mime_type: impl Into<String>,
    text: impl Into<String>,
) -> types::TextResourceContents {
    types::TextResourceContents {
        meta: None,
        mime_type: Some(mime_type.into()),
        text: text.into(),
        uri: uri.into(),
    }
}

/// Text contents of a read resource.
pub fn text_contents(
    uri: impl Into<String>,
    mime_type: impl Into<String>,
    text: impl Into<String>,
) -> types::ReadResourceResultContentsItem {
    types::ReadResourceResultContentsItem::TextResourceContents(text_resource(uri, mime_type, text))
}

/// Binary contents of a read resource (`blob` is base64).
pub fn blob_contents(
    uri: impl Into<String>,
    mime_type: impl Into<String>,
    blob: impl Into<String>,
) -> types::ReadResourceResultContentsItem {
    types::ReadResourceResultContentsItem::BlobResourceContents(types::BlobResourceContents {
        blob: blob.into(),
        meta: None,
        mime_type: Some(mime_type.into()),
        uri: uri.into(),
    })
}

/// The answer to `resources/read`.
pub fn read_result(
    contents: Vec<types::ReadResourceResultContentsItem>,
) -> types::ReadResourceResult {
    types::ReadResourceResult {
        contents,
        meta: None,
    }
}

/// A listed resource.
pub fn resource(
    uri: impl Into<String>,
    name: impl Into<String>,
    description: impl Into<String>,
    mime_type: impl Into<String>,
) -> types::Resource {
    types::Resource {
        annotations: None,
        description: Some(description.into()),
        icons: None,
        meta: None,
        mime_type: Some(mime_type.into()),
        name: name.into(),
        size: None,
        title: None,
        uri: uri.into(),
    }
}

/// A listed resource template.
pub fn resource_template(
    uri_template: impl Into<String>,
    name: impl Into<String>,
    description: impl Into<String>,
    mime_type: impl Into<String>,
) -> types::ResourceTemplate {
    types::ResourceTemplate {
        annotations: None,
        description: Some(description.into()),
        icons: None,
        meta: None,
        mime_type: Some(mime_type.into()),
        name: name.into(),
        title: None,
        uri_template: uri_template.into(),
    }
}

/// A listed prompt with its arguments (`(name, description, required)`).
pub fn prompt(
    name: impl Into<String>,
    description: impl Into<String>,
    arguments: &[(&str, &str, bool)],
) -> types::Prompt {
    let arguments: Vec<types::PromptArgument> = arguments
        .iter()
        .map(|(name, description, required)| types::PromptArgument {
            description: Some((*description).to_owned()),
            name: (*name).to_owned(),
            required: Some(*required),
            title: None,
        })
        .collect();
    types::Prompt {
        arguments: (!arguments.is_empty()).then_some(arguments),
        description: Some(description.into()),
        icons: None,
        meta: None,
        name: name.into(),
        title: None,
    }
}

/// A prompt message from the user.
pub fn user_message(content: types::ContentBlock) -> types::PromptMessage {
    types::PromptMessage {
        content,
        role: types::Role::User,
    }
}

/// The answer to `prompts/get`.
pub fn prompt_result(messages: Vec<types::PromptMessage>) -> types::GetPromptResult {
    types::GetPromptResult {
        description: None,
        messages,
        meta: None,
    }
}
