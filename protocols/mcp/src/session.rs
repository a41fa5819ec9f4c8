//! What the server remembers about one MCP session: the revision `initialize` negotiated, what
//! the client declared, the log level it asked for and the resources it subscribed to. Held by
//! the runtime's session (one per Streamable HTTP session, legacy SSE stream or stdio
//! connection); filled by the opening `initialize` through interior mutability.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Mutex, OnceLock};

use serde_json::Value;

use crate::logging::Level;
use crate::revision::Revision;

/// The client as `initialize` described it.
#[derive(Debug, Clone)]
pub struct ClientDescription {
    pub capabilities: Value,
    pub info: Value,
}

/// Per-session MCP state.
#[derive(Debug, Default)]
pub struct McpSession {
    revision: OnceLock<Revision>,
    client: OnceLock<ClientDescription>,
    initialized: AtomicBool,
    /// `Level as u8 + 1`; 0 means the client never set a level.
    log_level: AtomicU8,
    subscriptions: Mutex<HashSet<String>>,
}

impl McpSession {
    /// The revision `initialize` negotiated, once it has.
    pub fn revision(&self) -> Option<Revision> {
        self.revision.get().copied()
    }

    /// Records the outcome of `initialize`; a second `initialize` on the same session is refused.
    pub(crate) fn open(&self, revision: Revision, client: ClientDescription) -> bool {
        let fresh = self.revision.set(revision).is_ok();
        if fresh {
            let _ = self.client.set(client);
        }
        fresh
    }

    pub fn client(&self) -> Option<&ClientDescription> {
        self.client.get()
    }

    pub(crate) fn mark_initialized(&self) {
        self.initialized.store(true, Ordering::Relaxed);
    }

    /// Whether the client sent `notifications/initialized`.
    pub fn is_initialized(&self) -> bool {
        self.initialized.load(Ordering::Relaxed)
    }

    pub(crate) fn set_log_level(&self, level: Level) {
        self.log_level.store(level as u8 + 1, Ordering::Relaxed);
    }

    /// The least severe level the client wants to hear; `None` until it sets one.
    pub fn log_level(&self) -> Option<Level> {
        match self.log_level.load(Ordering::Relaxed) {
            0 => None,
            stored => Level::from_index(stored - 1),
        }
    }

    pub(crate) fn subscribe(&self, uri: &str) {
        if let Ok(mut subscriptions) = self.subscriptions.lock() {
            subscriptions.insert(uri.to_owned());
        }
    }

    pub(crate) fn unsubscribe(&self, uri: &str) {
        if let Ok(mut subscriptions) = self.subscriptions.lock() {
            subscriptions.remove(uri);
        }
    }

    /// Whether the client subscribed to updates of `uri`.
    pub fn is_subscribed(&self, uri: &str) -> bool {
        self.subscriptions
            .lock()
            .is_ok_and(|subscriptions| subscriptions.contains(uri))
    }
}
