//! What one ACP connection remembers between messages: the revision it negotiated, what the
//! client said it can do, and the prompt turns running in each ACP session (so `session/cancel`
//! can stop them). It is the runtime's per-session state: one per stdio conversation, one per
//! `Acp-Connection-Id` over HTTP.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::version::Revision;

/// What the client advertised in `initialize`, reduced to what gates agent→client calls.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClientFeatures {
    /// `fs.readTextFile`: the agent may read files through the client.
    pub read_text_file: bool,
    /// `fs.writeTextFile`: the agent may write files through the client.
    pub write_text_file: bool,
    /// `terminal`: the agent may run commands in the client's terminals.
    pub terminal: bool,
    /// `elicitation`: the agent may ask the user for input through the client.
    pub elicitation: bool,
}

impl ClientFeatures {
    /// Reads the capabilities from `initialize` params of any revision: v1 names them
    /// `clientCapabilities`, v2 `capabilities`; an absent flag is `false`.
    pub fn from_initialize(params: &Value) -> Self {
        let capabilities = params
            .get("clientCapabilities")
            .or_else(|| params.get("capabilities"))
            .unwrap_or(&Value::Null);
        let flag = |pointer: &str| {
            capabilities
                .pointer(pointer)
                .and_then(Value::as_bool)
                .unwrap_or(false)
        };
        Self {
            read_text_file: flag("/fs/readTextFile"),
            write_text_file: flag("/fs/writeTextFile"),
            terminal: flag("/terminal"),
            elicitation: capabilities
                .get("elicitation")
                .is_some_and(|value| !value.is_null()),
        }
    }

    /// The capability an agent→client method needs, and whether the client has it; methods
    /// that need none are always permitted.
    pub fn permits(&self, method: &str) -> Result<(), Capability> {
        let needed = Capability::for_method(method);
        match needed {
            Some(Capability::ReadTextFile) if !self.read_text_file => Err(Capability::ReadTextFile),
            Some(Capability::WriteTextFile) if !self.write_text_file => {
                Err(Capability::WriteTextFile)
            }
            Some(Capability::Terminal) if !self.terminal => Err(Capability::Terminal),
            Some(Capability::Elicitation) if !self.elicitation => Err(Capability::Elicitation),
            _ => Ok(()),
        }
    }
}

/// A client capability that gates agent→client methods.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Capability {
    /// Reading files through the client (`fs/read_text_file`).
    ReadTextFile,
    /// Writing files through the client (`fs/write_text_file`).
    WriteTextFile,
    /// Running commands in the client's terminals (`terminal/*`).
    Terminal,
    /// Asking the user for input through the client.
    Elicitation,
}

impl Capability {
    /// The capability `method` requires of the client, if any.
    pub fn for_method(method: &str) -> Option<Self> {
        match method {
            "fs/read_text_file" => Some(Self::ReadTextFile),
            "fs/write_text_file" => Some(Self::WriteTextFile),
            "elicitation/create" => Some(Self::Elicitation),
            _ if method.starts_with("terminal/") => Some(Self::Terminal),
            _ => None,
        }
    }

    /// Where the flag sits in `clientCapabilities`.
    pub const fn path(self) -> &'static str {
        match self {
            Self::ReadTextFile => "fs.readTextFile",
            Self::WriteTextFile => "fs.writeTextFile",
            Self::Terminal => "terminal",
            Self::Elicitation => "elicitation",
        }
    }
}

impl std::fmt::Display for Capability {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.path())
    }
}

/// The runtime's per-session state for ACP.
#[derive(Debug, Default)]
pub struct AcpConnection {
    negotiated: OnceLock<(Revision, ClientFeatures)>,
    prompts: Mutex<HashMap<String, (u64, CancellationToken)>>,
    turns: AtomicU64,
}

impl AcpConnection {
    /// Records the outcome of `initialize`; a second `initialize` cannot change it.
    pub fn settle(&self, revision: Revision, features: ClientFeatures) -> bool {
        self.negotiated.set((revision, features)).is_ok()
    }

    /// The negotiated revision; `None` before `initialize`.
    pub fn revision(&self) -> Option<Revision> {
        self.negotiated.get().map(|(revision, _)| *revision)
    }

    /// What the client advertised; nothing before `initialize`.
    pub fn features(&self) -> ClientFeatures {
        self.negotiated
            .get()
            .map(|(_, features)| *features)
            .unwrap_or_default()
    }

    /// Registers a prompt turn in `session_id`; the guard unregisters it when dropped. A turn
    /// started while another runs in the same session replaces it as the one to cancel.
    pub fn start_turn(&self, session_id: &str) -> TurnGuard<'_> {
        let token = CancellationToken::new();
        let turn = self.turns.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut prompts) = self.prompts.lock() {
            prompts.insert(session_id.to_owned(), (turn, token.clone()));
        }
        TurnGuard {
            connection: self,
            session_id: session_id.to_owned(),
            turn,
            token,
        }
    }

    /// The cancellation of the prompt turn running in `session_id`, if one runs.
    pub fn turn_token(&self, session_id: &str) -> Option<CancellationToken> {
        self.prompts
            .lock()
            .ok()
            .and_then(|prompts| prompts.get(session_id).map(|(_, token)| token.clone()))
    }

    /// Cancels the prompt turn running in `session_id`; `false` when none runs.
    pub fn cancel_turn(&self, session_id: &str) -> bool {
        self.turn_token(session_id)
            .map(|token| token.cancel())
            .is_some()
    }
}

/// A running prompt turn's registration.
#[derive(Debug)]
pub struct TurnGuard<'a> {
    connection: &'a AcpConnection,
    session_id: String,
    turn: u64,
    token: CancellationToken,
}

impl TurnGuard<'_> {
    /// Fires when the client sends `session/cancel` for this session.
    pub fn token(&self) -> &CancellationToken {
        &self.token
    }
}

impl Drop for TurnGuard<'_> {
    fn drop(&mut self) {
        if let Ok(mut prompts) = self.connection.prompts.lock() {
            // Only our own turn: a newer one may have replaced it.
            if prompts
                .get(&self.session_id)
                .is_some_and(|(turn, _)| *turn == self.turn)
            {
                prompts.remove(&self.session_id);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v1_capabilities_gate_fs_and_terminal_methods() {
        let features = ClientFeatures::from_initialize(&serde_json::json!({
            "protocolVersion": 1,
            "clientCapabilities": {"fs": {"readTextFile": true}, "terminal": false}
        }));
        assert_eq!(features.permits("fs/read_text_file"), Ok(()));
        assert_eq!(
            features.permits("fs/write_text_file"),
            Err(Capability::WriteTextFile)
        );
        assert_eq!(
            features.permits("terminal/create"),
            Err(Capability::Terminal)
        );
        assert_eq!(features.permits("session/request_permission"), Ok(()));
    }

    #[test]
    fn session_cancel_reaches_only_the_running_turn_of_its_session() {
        let connection = AcpConnection::default();
        let turn = connection.start_turn("a");
        assert!(!connection.cancel_turn("b"));
        assert!(connection.cancel_turn("a"));
        assert!(turn.token().is_cancelled());
        drop(turn);
        assert!(!connection.cancel_turn("a"));
    }

    #[test]
    fn a_finished_turn_does_not_unregister_its_successor() {
        let connection = AcpConnection::default();
        let first = connection.start_turn("a");
        let second = connection.start_turn("a");
        drop(first);
        assert!(connection.cancel_turn("a"));
        assert!(second.token().is_cancelled());
    }
}
