//! Typed builders for the v1 messages an agent sends most: a text chunk, a tool call and its
//! progress, a permission question with allow-once/reject-once options. They fill the optional
//! fields the generated types carry so agent code states only what it means.

use crate::generated::v1::types::{
    ContentBlock, PermissionOption, PermissionOptionId, PermissionOptionKind,
    RequestPermissionOutcome, RequestPermissionRequest, SessionId, SessionNotification,
    SessionUpdate, ToolCallContent, ToolCallId, ToolCallLocation, ToolCallStatus, ToolCallUpdate,
    ToolKind,
};

/// The option id of "allow this once".
pub const ALLOW_ONCE: &str = "allow-once";
/// The option id of "reject this once".
pub const REJECT_ONCE: &str = "reject-once";

/// A text content block.
pub fn text(text: impl Into<String>) -> ContentBlock {
    ContentBlock::Text {
        annotations: None,
        meta: None,
        text: text.into(),
    }
}

/// The text of the text blocks of a prompt, joined by newlines.
pub fn prompt_text(blocks: &[ContentBlock]) -> String {
    blocks
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// `session/update` with an `agent_message_chunk` of `text`.
pub fn agent_text(session_id: &SessionId, text_chunk: impl Into<String>) -> SessionNotification {
    notification(
        session_id,
        SessionUpdate::AgentMessageChunk {
            content: text(text_chunk),
            message_id: None,
            meta: None,
        },
    )
}

/// `session/update` announcing a pending `read` tool call on `path`.
pub fn read_tool_call(session_id: &SessionId, id: &ToolCallId, path: &str) -> SessionNotification {
    notification(
        session_id,
        SessionUpdate::ToolCall {
            content: None,
            kind: Some(ToolKind::Read),
            locations: Some(vec![location(path)]),
            meta: None,
            raw_input: Some(serde_json::json!({ "path": path })),
            raw_output: None,
            status: Some(ToolCallStatus::Pending),
            title: format!("Read {path}"),
            tool_call_id: id.clone(),
        },
    )
}

/// `session/update` moving a tool call to `status`, with text content when given.
pub fn tool_call_progress(
    session_id: &SessionId,
    id: &ToolCallId,
    status: ToolCallStatus,
    content: Option<String>,
) -> SessionNotification {
    notification(
        session_id,
        SessionUpdate::ToolCallUpdate {
            content: content.map(|content| {
                vec![ToolCallContent::Content {
                    content: text(content),
                    meta: None,
                }]
            }),
            kind: None,
            locations: None,
            meta: None,
            raw_input: None,
            raw_output: None,
            status: Some(status),
            title: None,
            tool_call_id: id.clone(),
        },
    )
}

/// A permission question about tool call `id`, offering allow-once and reject-once.
pub fn allow_or_reject_once(
    session_id: &SessionId,
    id: &ToolCallId,
    title: &str,
) -> RequestPermissionRequest {
    RequestPermissionRequest {
        meta: None,
        options: vec![
            option(ALLOW_ONCE, "Allow once", PermissionOptionKind::AllowOnce),
            option(REJECT_ONCE, "Reject", PermissionOptionKind::RejectOnce),
        ],
        session_id: session_id.clone(),
        tool_call: ToolCallUpdate {
            content: None,
            kind: Some(ToolKind::Read),
            locations: None,
            meta: None,
            raw_input: None,
            raw_output: None,
            status: None,
            title: Some(title.to_owned()),
            tool_call_id: id.clone(),
        },
    }
}

/// Whether the client chose `option_id`.
pub fn chose(outcome: &RequestPermissionOutcome, option_id: &str) -> bool {
    matches!(outcome, RequestPermissionOutcome::Selected { option_id: chosen, .. } if chosen.0 == option_id)
}

fn option(id: &str, name: &str, kind: PermissionOptionKind) -> PermissionOption {
    PermissionOption {
        kind,
        meta: None,
        name: name.to_owned(),
        option_id: PermissionOptionId(id.to_owned()),
    }
}

fn location(path: &str) -> ToolCallLocation {
    ToolCallLocation {
        line: None,
        meta: None,
        path: path.to_owned(),
    }
}

fn notification(session_id: &SessionId, update: SessionUpdate) -> SessionNotification {
    SessionNotification {
        meta: None,
        session_id: session_id.clone(),
        update,
    }
}
