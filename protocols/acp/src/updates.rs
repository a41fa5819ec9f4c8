//! Typed builders for the messages an agent sends most: a text chunk, a tool call and its
//! progress, a permission question with allow-once/reject-once options (v1 at the top level, v2
//! in [`v2`] with the `unstable` feature). They fill the optional fields the generated types
//! carry, and name v2's schema-numbered variants, so agent code states only what it means.

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

/// The v2 builders: v2 reports a turn's progress and end as `state_update`s rather than in the
/// prompt's answer, and its unions are generated as numbered variants, named here once.
#[cfg(feature = "unstable")]
pub mod v2 {
    use crate::generated::v2::types::{
        ContentBlock, ContentBlockVariant0Type, MessageId, PermissionOption, PermissionOptionId,
        PermissionOptionKind, PermissionOptionKindVariant0, PermissionOptionKindVariant2,
        RequestPermissionOutcome, RequestPermissionRequest, SessionId, SessionUpdate,
        SessionUpdateVariant2SessionUpdate, SessionUpdateVariant6,
        SessionUpdateVariant6Variant0SessionUpdate, SessionUpdateVariant6Variant0State,
        SessionUpdateVariant6Variant1SessionUpdate, SessionUpdateVariant6Variant1State,
        SessionUpdateVariant8SessionUpdate, StopReason, StopReasonVariant0, StopReasonVariant4,
        ToolCallId, ToolCallStatus, UpdateSessionNotification,
    };

    use super::{ALLOW_ONCE, REJECT_ONCE};

    /// How a v2 turn ended, as the demo and the tests speak of it.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum TurnEnd {
        /// The agent finished its turn.
        EndTurn,
        /// The client cancelled the turn.
        Cancelled,
    }

    impl From<TurnEnd> for StopReason {
        fn from(end: TurnEnd) -> Self {
            match end {
                TurnEnd::EndTurn => Self::Variant0(StopReasonVariant0::EndTurn),
                TurnEnd::Cancelled => Self::Variant4(StopReasonVariant4::Cancelled),
            }
        }
    }

    /// A text content block.
    pub fn text(text: impl Into<String>) -> ContentBlock {
        ContentBlock::Variant0 {
            annotations: None,
            meta: None,
            text: text.into(),
            type_: ContentBlockVariant0Type::Text,
        }
    }

    /// The text of the text blocks of a prompt, joined by newlines.
    pub fn prompt_text(blocks: &[ContentBlock]) -> String {
        blocks
            .iter()
            .filter_map(|block| match block {
                ContentBlock::Variant0 { text, .. } => Some(text.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// `session/update` with an `agent_message_chunk` of `text`, part of message `message_id`.
    pub fn agent_text(
        session_id: &SessionId,
        message_id: &str,
        text_chunk: impl Into<String>,
    ) -> UpdateSessionNotification {
        notification(
            session_id,
            SessionUpdate::Variant2 {
                content: text(text_chunk),
                message_id: MessageId(message_id.to_owned()),
                meta: None,
                session_update: SessionUpdateVariant2SessionUpdate::AgentMessageChunk,
            },
        )
    }

    /// `session/update` saying the session is running a turn.
    pub fn running(session_id: &SessionId) -> UpdateSessionNotification {
        notification(
            session_id,
            SessionUpdate::Variant6(SessionUpdateVariant6::Variant0 {
                meta: None,
                session_update: SessionUpdateVariant6Variant0SessionUpdate::StateUpdate,
                state: SessionUpdateVariant6Variant0State::Running,
            }),
        )
    }

    /// `session/update` saying the turn ended and why (v2's stop reason).
    pub fn idle(session_id: &SessionId, end: TurnEnd) -> UpdateSessionNotification {
        notification(
            session_id,
            SessionUpdate::Variant6(SessionUpdateVariant6::Variant1 {
                meta: None,
                session_update: SessionUpdateVariant6Variant1SessionUpdate::StateUpdate,
                state: SessionUpdateVariant6Variant1State::Idle,
                stop_reason: Some(end.into()),
            }),
        )
    }

    /// `session/update` moving tool call `id` to `status`, titled `title`.
    pub fn tool_call_status(
        session_id: &SessionId,
        id: &ToolCallId,
        status: ToolCallStatus,
        title: &str,
    ) -> UpdateSessionNotification {
        notification(
            session_id,
            SessionUpdate::Variant8 {
                content: None,
                kind: None,
                locations: None,
                meta: None,
                raw_input: None,
                raw_output: None,
                session_update: SessionUpdateVariant8SessionUpdate::ToolCallUpdate,
                status: Some(status),
                title: Some(title.to_owned()),
                tool_call_id: id.clone(),
            },
        )
    }

    /// A permission question titled `title`, offering allow-once and reject-once.
    pub fn allow_or_reject_once(session_id: &SessionId, title: &str) -> RequestPermissionRequest {
        RequestPermissionRequest {
            description: None,
            meta: None,
            options: vec![
                option(
                    ALLOW_ONCE,
                    "Allow once",
                    PermissionOptionKind::Variant0(PermissionOptionKindVariant0::AllowOnce),
                ),
                option(
                    REJECT_ONCE,
                    "Reject",
                    PermissionOptionKind::Variant2(PermissionOptionKindVariant2::RejectOnce),
                ),
            ],
            session_id: session_id.clone(),
            subject: None,
            title: title.to_owned(),
        }
    }

    /// Whether the client chose `option_id`.
    pub fn chose(outcome: &RequestPermissionOutcome, option_id: &str) -> bool {
        matches!(outcome, RequestPermissionOutcome::Variant1 { option_id: chosen, .. } if chosen.0 == option_id)
    }

    fn option(id: &str, name: &str, kind: PermissionOptionKind) -> PermissionOption {
        PermissionOption {
            kind,
            meta: None,
            name: name.to_owned(),
            option_id: PermissionOptionId(id.to_owned()),
        }
    }

    fn notification(session_id: &SessionId, update: SessionUpdate) -> UpdateSessionNotification {
        UpdateSessionNotification {
            meta: None,
            session_id: session_id.clone(),
            update,
        }
    }
}
