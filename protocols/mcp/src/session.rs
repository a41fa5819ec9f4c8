//! What the server remembers about one MCP session: the revision `initialize` negotiated, what
//! the client declared, the log level it asked for and the resources it subscribed to. Held by
//! the runtime's session (one per Streamable HTTP session, legacy SSE stream or stdio
//! connection); filled by the opening `initialize` through interior mutability. Kept compact:
//! an idle session costs what it holds here times every session a server keeps open, so the
//! client's description is reduced to what the server consults. It is [`SharedState`]: a store
//! shared by replicas keeps it serialized and saves it after each request that changed it.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};

use protocols_runtime::session::{Session, SharedState, release_spare_capacity};

use serde::de::{Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::value::RawValue;

use crate::generated::v2025_11_25::types;
use crate::logging::Level;
use crate::revision::Revision;

/// The capability names MCP defines at the top level of a client's capabilities, one bit each.
const KNOWN_CAPABILITIES: [&str; 6] = [
    "elicitation",
    "experimental",
    "extensions",
    "roots",
    "sampling",
    "tasks",
];

/// Which top-level capabilities a client declared (what [`crate::RequestContext`]'s
/// `client_supports` asks): MCP's own names as bits, any other name as text; and the
/// extensions it declared under `extensions` (2026-07-28).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ClientCapabilities {
    known: u8,
    others: Box<[Box<str>]>,
    extensions: Box<[Box<str>]>,
}

impl ClientCapabilities {
    /// Whether the client declared `name`.
    pub fn contains(&self, name: &str) -> bool {
        match KNOWN_CAPABILITIES.iter().position(|known| *known == name) {
            Some(bit) => self.known & (1 << bit) != 0,
            None => self.others.iter().any(|other| &**other == name),
        }
    }

    /// Whether the client declared extension `id`.
    pub fn has_extension(&self, id: &str) -> bool {
        self.extensions.iter().any(|declared| &**declared == id)
    }

    /// What an `initialize` declared.
    pub(crate) fn declared(capabilities: &types::ClientCapabilities) -> Self {
        let present = [
            ("elicitation", capabilities.elicitation.is_some()),
            ("experimental", capabilities.experimental.is_some()),
            ("roots", capabilities.roots.is_some()),
            ("sampling", capabilities.sampling.is_some()),
            ("tasks", capabilities.tasks.is_some()),
        ];
        let mut names = Names::default();
        present
            .into_iter()
            .filter(|(_, present)| *present)
            .for_each(|(name, _)| names.add(name));
        names.finish()
    }

    /// The top-level names of a JSON object (a 2026-07-28 request's declared capabilities);
    /// none when the text is absent or not an object.
    pub(crate) fn from_json(raw: Option<&RawValue>) -> Self {
        let Some(raw) = raw else {
            return Self::default();
        };
        let mut deserializer = serde_json::Deserializer::from_str(raw.get());
        deserializer
            .deserialize_map(NamesVisitor)
            .unwrap_or_default()
    }
}

/// Collects capability names into a [`ClientCapabilities`].
#[derive(Default)]
struct Names {
    known: u8,
    others: Vec<Box<str>>,
    extensions: Vec<Box<str>>,
}

impl Names {
    fn add(&mut self, name: &str) {
        match KNOWN_CAPABILITIES.iter().position(|known| *known == name) {
            Some(bit) => self.known |= 1 << bit,
            None if !self.others.iter().any(|other| &**other == name) => {
                self.others.push(name.into());
            }
            None => {}
        }
    }

    fn finish(self) -> ClientCapabilities {
        ClientCapabilities {
            known: self.known,
            others: self.others.into_boxed_slice(),
            extensions: self.extensions.into_boxed_slice(),
        }
    }
}

/// Reads an object's keys and skips its values.
struct NamesVisitor;

impl<'de> Visitor<'de> for NamesVisitor {
    type Value = ClientCapabilities;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a capabilities object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut names = Names::default();
        while let Some(name) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            if name == "extensions" {
                names.extensions = map.next_value::<ExtensionNames>()?.0;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
            names.add(&name);
        }
        Ok(names.finish())
    }
}

/// The keys of a declared `extensions` object (nothing when it is not an object).
#[derive(Default)]
struct ExtensionNames(Vec<Box<str>>);

impl<'de> serde::Deserialize<'de> for ExtensionNames {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ExtensionNamesVisitor)
    }
}

struct ExtensionNamesVisitor;

impl<'de> Visitor<'de> for ExtensionNamesVisitor {
    type Value = ExtensionNames;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("an extensions object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut names: Vec<Box<str>> = Vec::new();
        while let Some(name) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            map.next_value::<IgnoredAny>()?;
            if !names.iter().any(|known| **known == *name) {
                names.push(name.as_ref().into());
            }
        }
        Ok(ExtensionNames(names))
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(ExtensionNames::default())
    }

    fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
        Ok(ExtensionNames::default())
    }

    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(ExtensionNames::default())
    }

    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        Ok(ExtensionNames::default())
    }

    fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
        Ok(ExtensionNames::default())
    }

    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok(ExtensionNames::default())
    }

    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(ExtensionNames::default())
    }
}

/// The client as `initialize` described it: its capabilities and its `clientInfo` name and
/// version (one allocation for both).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ClientDescription {
    capabilities: ClientCapabilities,
    /// The name followed by the version.
    name_and_version: Box<str>,
    name_len: usize,
}

impl ClientDescription {
    pub(crate) fn from_initialize(params: &types::InitializeRequestParams) -> Self {
        let info = &params.client_info;
        Self {
            capabilities: ClientCapabilities::declared(&params.capabilities),
            name_and_version: format!("{}{}", info.name, info.version).into_boxed_str(),
            name_len: info.name.len(),
        }
    }

    /// The capabilities the client declared.
    pub fn capabilities(&self) -> &ClientCapabilities {
        &self.capabilities
    }

    /// `clientInfo.name`.
    pub fn name(&self) -> &str {
        self.name_and_version
            .get(..self.name_len)
            .unwrap_or_default()
    }

    /// `clientInfo.version`.
    pub fn version(&self) -> &str {
        self.name_and_version
            .get(self.name_len..)
            .unwrap_or_default()
    }
}

/// Per-session MCP state.
#[derive(Debug, Default)]
pub struct McpSession {
    revision: OnceLock<Revision>,
    client: OnceLock<ClientDescription>,
    initialized: AtomicBool,
    /// `Level as u8 + 1`; 0 means the client never set a level.
    log_level: AtomicU8,
    /// Allocated on the first subscription: most sessions never subscribe, and a boxed set
    /// costs them one pointer where an empty set is six words.
    #[allow(clippy::box_collection)]
    subscriptions: Mutex<Option<Box<HashSet<String>>>>,
    /// This session's entry among the server's live sessions, dropped with the session.
    listed: OnceLock<Listing>,
    /// Another replica opened this session's stream after this one: broadcasts are its to
    /// deliver, so a stream shared through one event store hears each of them once.
    streamed_elsewhere: AtomicBool,
    /// How many times the state changed: what a shared store compares to decide whether to save.
    changes: AtomicU64,
}

impl McpSession {
    /// Whether this replica delivers broadcasts to the session (no other replica opened its
    /// stream since this one listed it).
    pub(crate) fn delivers_broadcasts_here(&self) -> bool {
        !self.streamed_elsewhere.load(Ordering::Relaxed)
    }

    /// The session's stream opened here: broadcasts are this replica's to deliver again.
    pub(crate) fn stream_opened_here(&self) {
        self.streamed_elsewhere.store(false, Ordering::Relaxed);
    }

    /// Another replica opened the session's stream: it delivers the broadcasts from now on.
    pub(crate) fn stream_opened_elsewhere(&self) {
        self.streamed_elsewhere.store(true, Ordering::Relaxed);
    }

    /// The revision `initialize` negotiated, once it has.
    pub fn revision(&self) -> Option<Revision> {
        self.revision.get().copied()
    }

    /// Records the outcome of `initialize`; a second `initialize` on the same session is refused.
    pub(crate) fn open(&self, revision: Revision, client: ClientDescription) -> bool {
        let fresh = self.revision.set(revision).is_ok();
        if fresh {
            let _ = self.client.set(client);
            self.changed();
        }
        fresh
    }

    fn changed(&self) {
        self.changes.fetch_add(1, Ordering::Relaxed);
    }

    /// The client as `initialize` described it, once it has.
    pub fn client(&self) -> Option<&ClientDescription> {
        self.client.get()
    }

    pub(crate) fn mark_initialized(&self) {
        if !self.initialized.swap(true, Ordering::Relaxed) {
            self.changed();
        }
    }

    /// Whether the client sent `notifications/initialized`.
    pub fn is_initialized(&self) -> bool {
        self.initialized.load(Ordering::Relaxed)
    }

    pub(crate) fn set_log_level(&self, level: Level) {
        if self.log_level.swap(level as u8 + 1, Ordering::Relaxed) != level as u8 + 1 {
            self.changed();
        }
    }

    /// The least severe level the client wants to hear; `None` until it sets one.
    pub fn log_level(&self) -> Option<Level> {
        match self.log_level.load(Ordering::Relaxed) {
            0 => None,
            stored => Level::from_index(stored - 1),
        }
    }

    pub(crate) fn subscribe(&self, uri: &str) {
        if let Ok(mut subscriptions) = self.subscriptions.lock()
            && subscriptions.get_or_insert_default().insert(uri.to_owned())
        {
            self.changed();
        }
    }

    pub(crate) fn unsubscribe(&self, uri: &str) {
        if let Ok(mut subscriptions) = self.subscriptions.lock()
            && let Some(uris) = subscriptions.as_mut()
            && uris.remove(uri)
        {
            self.changed();
        }
    }

    /// Whether the client subscribed to updates of `uri`.
    pub fn is_subscribed(&self, uri: &str) -> bool {
        self.subscriptions.lock().is_ok_and(|subscriptions| {
            subscriptions
                .as_ref()
                .is_some_and(|uris| uris.contains(uri))
        })
    }
}

/// What a shared store keeps of an [`McpSession`]: everything but its place among this
/// process's live sessions (each replica lists the sessions it serves itself).
#[derive(serde::Serialize, serde::Deserialize)]
struct McpSessionRecord {
    revision: Option<Box<str>>,
    client: Option<ClientDescription>,
    initialized: bool,
    log_level: u8,
    subscriptions: Vec<String>,
}

impl serde::Serialize for McpSession {
    fn serialize<Ser: serde::Serializer>(&self, serializer: Ser) -> Result<Ser::Ok, Ser::Error> {
        let subscriptions = self
            .subscriptions
            .lock()
            .ok()
            .and_then(|uris| uris.as_ref().map(|uris| uris.iter().cloned().collect()))
            .unwrap_or_default();
        McpSessionRecord {
            revision: self.revision().map(|revision| revision.as_str().into()),
            client: self.client().cloned(),
            initialized: self.is_initialized(),
            log_level: self.log_level.load(Ordering::Relaxed),
            subscriptions,
        }
        .serialize(serializer)
    }
}

impl<'de> serde::Deserialize<'de> for McpSession {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let record = McpSessionRecord::deserialize(deserializer)?;
        let session = Self {
            initialized: AtomicBool::new(record.initialized),
            log_level: AtomicU8::new(record.log_level),
            ..Self::default()
        };
        if let Some(text) = record.revision {
            let revision = Revision::from_text(&text)
                .ok_or_else(|| serde::de::Error::custom("a revision this server does not serve"))?;
            let _ = session.revision.set(revision);
        }
        if let Some(client) = record.client {
            let _ = session.client.set(client);
        }
        if !record.subscriptions.is_empty()
            && let Ok(mut subscriptions) = session.subscriptions.lock()
        {
            *subscriptions = Some(Box::new(record.subscriptions.into_iter().collect()));
        }
        Ok(session)
    }
}

impl SharedState for McpSession {
    fn version(&self) -> u64 {
        self.changes.load(Ordering::Relaxed)
    }
}

/// The sessions a server has opened and that still live, for messages not tied to a request
/// (list changes, resource updates). Each entry is a `Weak` so the list keeps no session
/// alive, and a session takes its entry out as it is dropped: after a burst of sessions
/// expires, neither the entries nor the session records they would pin are left behind.
#[derive(Debug, Default)]
pub(crate) struct LiveSessions {
    sessions: Mutex<HashMap<u64, Weak<Session<McpSession>>>>,
    next_key: AtomicU64,
}

impl LiveSessions {
    /// Lists `session` (once; an already listed session stays as it is).
    pub(crate) fn add(self: &Arc<Self>, session: &Arc<Session<McpSession>>) {
        let key = self.next_key.fetch_add(1, Ordering::Relaxed);
        let listing = Listing {
            list: Arc::downgrade(self),
            key,
        };
        if session.state().listed.set(listing).is_err() {
            return;
        }
        if let Ok(mut sessions) = self.sessions.lock() {
            sessions.insert(key, Arc::downgrade(session));
        }
    }

    /// Every listed session still alive.
    pub(crate) fn snapshot(&self) -> Vec<Arc<Session<McpSession>>> {
        // Upgraded under the lock, dropped after it: dropping the last handle of a session
        // takes the lock again (its `Listing`).
        let sessions = self.sessions.lock();
        sessions.map_or_else(
            |_| Vec::new(),
            |sessions| sessions.values().filter_map(Weak::upgrade).collect(),
        )
    }

    fn remove(&self, key: u64) {
        if let Ok(mut sessions) = self.sessions.lock() {
            sessions.remove(&key);
            release_spare_capacity(&mut sessions);
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.sessions.lock().map_or(0, |sessions| sessions.len())
    }
}

/// A session's entry in [`LiveSessions`]; dropping it (with the session) removes the entry.
#[derive(Debug)]
struct Listing {
    list: Weak<LiveSessions>,
    key: u64,
}

impl Drop for Listing {
    fn drop(&mut self) {
        if let Some(list) = self.list.upgrade() {
            list.remove(self.key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocols_runtime::session::SessionId;

    fn raw(text: &str) -> Result<Box<RawValue>, serde_json::Error> {
        RawValue::from_string(text.to_owned())
    }

    #[test]
    fn a_session_rebuilt_from_its_record_holds_what_the_client_negotiated_and_asked_for()
    -> Result<(), protocols_runtime::session::StoreError> {
        use protocols_runtime::session::{decode_state, encode_state};
        let session = McpSession::default();
        let client = ClientDescription {
            capabilities: ClientCapabilities::from_json(raw(r#"{"sampling":{}}"#).ok().as_deref()),
            name_and_version: "client1.0".into(),
            name_len: 6,
        };
        assert!(session.open(Revision::V2025_06_18, client.clone()));
        session.mark_initialized();
        session.set_log_level(Level::Warning);
        session.subscribe("file:///a");

        let rebuilt: McpSession = decode_state(&encode_state(&session)?)?;
        assert_eq!(rebuilt.revision(), Some(Revision::V2025_06_18));
        assert_eq!(rebuilt.client(), Some(&client));
        assert!(rebuilt.is_initialized());
        assert_eq!(rebuilt.log_level(), Some(Level::Warning));
        assert!(rebuilt.is_subscribed("file:///a"));
        Ok(())
    }

    #[test]
    fn every_change_of_the_state_moves_its_version_and_a_repeat_does_not() {
        let session = McpSession::default();
        assert_eq!(session.version(), 0);
        session.set_log_level(Level::Info);
        session.subscribe("file:///a");
        session.mark_initialized();
        let changed = session.version();
        assert_eq!(changed, 3);
        session.set_log_level(Level::Info);
        session.subscribe("file:///a");
        session.mark_initialized();
        assert_eq!(session.version(), changed);
        session.unsubscribe("file:///a");
        assert_eq!(session.version(), changed + 1);
    }

    #[test]
    fn a_requests_declared_capabilities_are_the_top_level_names_of_its_object()
    -> Result<(), serde_json::Error> {
        let declared = raw(r#"{"sampling":{"tools":{}},"roots":{"listChanged":true},"x-own":1}"#)?;
        let capabilities = ClientCapabilities::from_json(Some(&declared));
        for name in ["sampling", "roots", "x-own"] {
            assert!(capabilities.contains(name), "{name}");
        }
        for name in ["elicitation", "tasks", "listChanged", "tools", "x-other"] {
            assert!(!capabilities.contains(name), "{name}");
        }
        Ok(())
    }

    #[test]
    fn a_requests_declared_extensions_are_the_keys_of_its_extensions_object()
    -> Result<(), serde_json::Error> {
        let declared = raw(
            r#"{"extensions":{"io.modelcontextprotocol/tasks":{},"com.example/x":{}},"sampling":{}}"#,
        )?;
        let capabilities = ClientCapabilities::from_json(Some(&declared));
        assert!(capabilities.has_extension("io.modelcontextprotocol/tasks"));
        assert!(capabilities.has_extension("com.example/x"));
        assert!(!capabilities.has_extension("io.modelcontextprotocol/other"));
        assert!(capabilities.contains("extensions") && capabilities.contains("sampling"));
        let odd = raw(r#"{"extensions":["io.modelcontextprotocol/tasks"]}"#)?;
        assert!(
            !ClientCapabilities::from_json(Some(&odd))
                .has_extension("io.modelcontextprotocol/tasks")
        );
        Ok(())
    }

    #[test]
    fn capabilities_that_are_absent_or_not_an_object_declare_nothing()
    -> Result<(), serde_json::Error> {
        for text in ["[]", "null", "\"sampling\"", "3"] {
            let declared = raw(text)?;
            assert_eq!(
                ClientCapabilities::from_json(Some(&declared)),
                ClientCapabilities::default()
            );
        }
        assert!(!ClientCapabilities::from_json(None).contains("sampling"));
        Ok(())
    }

    #[test]
    fn an_initialize_leaves_the_declared_capabilities_and_the_client_name_and_version()
    -> Result<(), serde_json::Error> {
        let params: types::InitializeRequestParams = serde_json::from_value(serde_json::json!({
            "protocolVersion": "2025-11-25",
            "capabilities": { "elicitation": {}, "experimental": {} },
            "clientInfo": { "name": "inspector", "version": "0.9.1" },
        }))?;
        let client = ClientDescription::from_initialize(&params);
        assert_eq!((client.name(), client.version()), ("inspector", "0.9.1"));
        assert!(client.capabilities().contains("elicitation"));
        assert!(client.capabilities().contains("experimental"));
        assert!(!client.capabilities().contains("sampling"));
        assert!(!client.capabilities().contains("roots"));
        Ok(())
    }

    #[test]
    fn subscriptions_are_remembered_until_unsubscribed() {
        let session = McpSession::default();
        assert!(!session.is_subscribed("file:///a"));
        session.subscribe("file:///a");
        assert!(session.is_subscribed("file:///a"));
        session.unsubscribe("file:///a");
        session.unsubscribe("file:///never");
        assert!(!session.is_subscribed("file:///a"));
    }

    #[test]
    fn a_dropped_session_leaves_the_live_list() {
        let live = Arc::new(LiveSessions::default());
        let now = std::time::SystemTime::now();
        let kept = Arc::new(Session::new(
            SessionId::random(),
            McpSession::default(),
            now,
            4,
        ));
        let dropped = Arc::new(Session::new(
            SessionId::random(),
            McpSession::default(),
            now,
            4,
        ));
        live.add(&kept);
        live.add(&dropped);
        live.add(&kept);
        assert_eq!(live.len(), 2, "a session is listed once");
        drop(dropped);
        assert_eq!(live.len(), 1);
        let listed = live.snapshot();
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].id(), kept.id());
        drop(listed);
        drop(kept);
        assert_eq!(live.len(), 0);
    }
}
