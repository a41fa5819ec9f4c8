//! What an agent keeps of each session so `session/load` can replay it (ACP v1): the session's
//! working directory and its conversation as the `session/update`s the client saw — the user's
//! prompts as `user_message_chunk`s, then whatever the agent streamed. Every part is bounded
//! ([`HistoryLimits`]): past the session cap the least recently used session is forgotten (its id
//! then answers as unknown), and past a session's update or byte cap its oldest updates go
//! first, so what is replayed is always the newest stretch of the conversation that fits.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::io;
use std::sync::Mutex;

use crate::client_handle::{CallError, ClientHandle};
use crate::generated::v1::types::{ContentBlock, SessionId, SessionNotification, SessionUpdate};

/// How much [`Conversations`] keeps. The defaults hold at most 256 sessions × 256 KiB of
/// updates (64 MiB) however many clients add to them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct HistoryLimits {
    /// Sessions remembered; opening one more forgets the least recently used.
    pub max_sessions: usize,
    /// Updates kept per session; past it the oldest are forgotten.
    pub max_updates_per_session: usize,
    /// Bytes of JSON kept per session (each update as sent); past it the oldest updates are
    /// forgotten, and an update larger than this alone leaves the history empty.
    pub max_bytes_per_session: usize,
}

protocols_runtime::config_setters!(HistoryLimits {
    max_sessions: usize,
    max_updates_per_session: usize,
    max_bytes_per_session: usize,
});

impl Default for HistoryLimits {
    fn default() -> Self {
        Self {
            max_sessions: 256,
            max_updates_per_session: 4096,
            max_bytes_per_session: 256 * 1024,
        }
    }
}

/// Every session an agent remembers, with its conversation; shared by all the agent's
/// connections, so a session opened on one can be loaded on another.
#[derive(Debug, Default)]
pub struct Conversations {
    limits: HistoryLimits,
    book: Mutex<Book>,
}

#[derive(Debug, Default)]
struct Book {
    sessions: HashMap<String, Conversation>,
    /// Session ids by when they were last used, oldest first.
    recency: BTreeMap<u64, String>,
    clock: u64,
}

#[derive(Debug)]
struct Conversation {
    cwd: String,
    updates: VecDeque<Kept>,
    bytes: usize,
    used: u64,
}

#[derive(Debug)]
struct Kept {
    update: SessionUpdate,
    bytes: usize,
}

impl Book {
    fn tick(&mut self) -> u64 {
        self.clock += 1;
        self.clock
    }

    /// The session `id`, marked as just used.
    fn touch(&mut self, id: &str) -> Option<&mut Conversation> {
        let now = self.tick();
        let conversation = self.sessions.get_mut(id)?;
        self.recency.remove(&conversation.used);
        self.recency.insert(now, id.to_owned());
        conversation.used = now;
        Some(conversation)
    }

    fn forget_least_recent(&mut self) -> Option<String> {
        let (_, id) = self.recency.pop_first()?;
        self.sessions.remove(&id);
        Some(id)
    }
}

impl Conversation {
    /// Appends `update`, then forgets the oldest updates until both caps hold.
    fn keep(&mut self, update: SessionUpdate, bytes: usize, limits: &HistoryLimits) {
        if bytes > limits.max_bytes_per_session {
            // Keeping the older updates without this one would replay a conversation with a
            // hole in it; the newest stretch that fits is empty.
            self.updates.clear();
            self.bytes = 0;
            return;
        }
        self.updates.push_back(Kept { update, bytes });
        self.bytes = self.bytes.saturating_add(bytes);
        while self.updates.len() > limits.max_updates_per_session
            || self.bytes > limits.max_bytes_per_session
        {
            let Some(oldest) = self.updates.pop_front() else {
                break;
            };
            self.bytes = self.bytes.saturating_sub(oldest.bytes);
        }
    }
}

impl Conversations {
    /// An empty history bounded by `limits`.
    pub fn new(limits: HistoryLimits) -> Self {
        Self {
            limits,
            book: Mutex::new(Book::default()),
        }
    }

    /// The bounds each session's history keeps to.
    pub fn limits(&self) -> HistoryLimits {
        self.limits
    }

    /// Remembers a new session `id` in `cwd`, with an empty conversation; returns the session
    /// forgotten to make room, if one was.
    pub fn open(&self, id: &str, cwd: &str) -> Option<String> {
        let mut book = self.book.lock().ok()?;
        if let Some(earlier) = book.sessions.remove(id) {
            book.recency.remove(&earlier.used);
        }
        let mut forgotten = None;
        while book.sessions.len() >= self.limits.max_sessions.max(1) {
            forgotten = book.forget_least_recent();
            if forgotten.is_none() {
                break;
            }
        }
        let used = book.tick();
        book.recency.insert(used, id.to_owned());
        book.sessions.insert(
            id.to_owned(),
            Conversation {
                cwd: cwd.to_owned(),
                updates: VecDeque::new(),
                bytes: 0,
                used,
            },
        );
        forgotten
    }

    /// Whether session `id` is remembered; asking counts as using it.
    pub fn knows(&self, id: &str) -> bool {
        self.book
            .lock()
            .is_ok_and(|mut book| book.touch(id).is_some())
    }

    /// Forgets session `id`; `false` when it was not remembered.
    pub fn forget(&self, id: &str) -> bool {
        let Ok(mut book) = self.book.lock() else {
            return false;
        };
        let Some(conversation) = book.sessions.remove(id) else {
            return false;
        };
        book.recency.remove(&conversation.used);
        true
    }

    /// Every remembered session as (id, working directory), by id.
    pub fn sessions(&self) -> Vec<(String, String)> {
        let mut listed: Vec<(String, String)> = self
            .book
            .lock()
            .map(|book| {
                book.sessions
                    .iter()
                    .map(|(id, conversation)| (id.clone(), conversation.cwd.clone()))
                    .collect()
            })
            .unwrap_or_default();
        listed.sort();
        listed
    }

    /// Adds `update` to the conversation of session `id`; `false` when the session is not
    /// remembered (nothing is kept then).
    pub fn record(&self, id: &str, update: &SessionUpdate) -> bool {
        let bytes = json_len(update);
        let Ok(mut book) = self.book.lock() else {
            return false;
        };
        let Some(conversation) = book.touch(id) else {
            return false;
        };
        conversation.keep(update.clone(), bytes, &self.limits);
        true
    }

    /// Adds the user's `prompt` to the conversation of session `id`, one `user_message_chunk`
    /// per content block, as the client is told it on `session/load`.
    pub fn record_prompt(&self, id: &str, prompt: &[ContentBlock]) -> bool {
        prompt.iter().all(|block| {
            let chunk = SessionUpdate::UserMessageChunk {
                content: block.clone(),
                message_id: None,
                meta: None,
            };
            self.record(id, &chunk)
        })
    }

    /// Records `notification` in its session's conversation, then sends it to the client.
    ///
    /// # Errors
    /// The notification could not be sent (it is kept all the same).
    pub fn tell(
        &self,
        client: &ClientHandle,
        notification: &SessionNotification,
    ) -> Result<(), CallError> {
        self.record(&notification.session_id.0, &notification.update);
        client.session_update(notification)
    }

    /// The conversation of session `id`, oldest first, as the `session/update`s that replay
    /// it; `None` when the session is not remembered.
    pub fn replay(&self, id: &SessionId) -> Option<Vec<SessionNotification>> {
        let mut book = self.book.lock().ok()?;
        let conversation = book.touch(&id.0)?;
        let replayed = conversation
            .updates
            .iter()
            .map(|kept| SessionNotification {
                meta: None,
                session_id: id.clone(),
                update: kept.update.clone(),
            })
            .collect();
        Some(replayed)
    }

    /// The bytes of JSON kept for session `id` (what [`HistoryLimits::max_bytes_per_session`]
    /// bounds).
    pub fn bytes_kept(&self, id: &str) -> Option<usize> {
        let book = self.book.lock().ok()?;
        book.sessions.get(id).map(|conversation| conversation.bytes)
    }
}

/// The length of `value` as JSON, counted without building the text.
fn json_len(value: &impl serde::Serialize) -> usize {
    let mut counter = ByteCounter(0);
    match serde_json::to_writer(&mut counter, value) {
        Ok(()) => counter.0,
        // Unserializable, it could never be sent either; count it as too large to keep.
        Err(_) => usize::MAX,
    }
}

struct ByteCounter(usize);

impl io::Write for ByteCounter {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.0 = self.0.saturating_add(bytes.len());
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::updates::text;

    fn chunk(text_of: &str) -> SessionUpdate {
        SessionUpdate::AgentMessageChunk {
            content: text(text_of),
            message_id: None,
            meta: None,
        }
    }

    fn replayed_texts(conversations: &Conversations, id: &str) -> Vec<String> {
        conversations
            .replay(&SessionId(id.to_owned()))
            .unwrap_or_default()
            .into_iter()
            .filter_map(|notification| match notification.update {
                SessionUpdate::AgentMessageChunk {
                    content: ContentBlock::Text { text, .. },
                    ..
                }
                | SessionUpdate::UserMessageChunk {
                    content: ContentBlock::Text { text, .. },
                    ..
                } => Some(text),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_session_replays_its_prompt_and_updates_in_the_order_they_happened() {
        let conversations = Conversations::default();
        conversations.open("s", "/");
        assert!(conversations.record_prompt("s", &[text("hi")]));
        assert!(conversations.record("s", &chunk("echo: hi")));
        assert_eq!(replayed_texts(&conversations, "s"), ["hi", "echo: hi"]);
        let replayed = conversations.replay(&SessionId("s".into())).unwrap();
        assert!(matches!(
            replayed[0].update,
            SessionUpdate::UserMessageChunk { .. }
        ));
        assert!(replayed.iter().all(|n| n.session_id.0 == "s"));
    }

    #[test]
    fn an_unknown_session_keeps_nothing_and_replays_nothing() {
        let conversations = Conversations::default();
        assert!(!conversations.record("nope", &chunk("x")));
        assert!(conversations.replay(&SessionId("nope".into())).is_none());
    }

    #[test]
    fn past_max_updates_per_session_the_oldest_updates_are_forgotten() {
        let conversations = Conversations::new(HistoryLimits {
            max_updates_per_session: 3,
            ..HistoryLimits::default()
        });
        conversations.open("s", "/");
        for n in 0..5 {
            conversations.record("s", &chunk(&n.to_string()));
        }
        assert_eq!(replayed_texts(&conversations, "s"), ["2", "3", "4"]);
    }

    #[test]
    fn past_max_bytes_per_session_the_oldest_updates_are_forgotten() {
        let one = json_len(&chunk("0123456789"));
        let conversations = Conversations::new(HistoryLimits {
            max_bytes_per_session: one * 2,
            ..HistoryLimits::default()
        });
        conversations.open("s", "/");
        for digit in ["0", "1", "2"] {
            conversations.record("s", &chunk(&digit.repeat(10)));
        }
        assert_eq!(
            replayed_texts(&conversations, "s"),
            ["1111111111", "2222222222"]
        );
        assert_eq!(conversations.bytes_kept("s"), Some(one * 2));
    }

    #[test]
    fn an_update_larger_than_the_byte_bound_leaves_the_history_empty() {
        let conversations = Conversations::new(HistoryLimits {
            max_bytes_per_session: 100,
            ..HistoryLimits::default()
        });
        conversations.open("s", "/");
        conversations.record("s", &chunk("small"));
        conversations.record("s", &chunk(&"x".repeat(200)));
        assert!(replayed_texts(&conversations, "s").is_empty());
        assert_eq!(conversations.bytes_kept("s"), Some(0));
    }

    #[test]
    fn past_max_sessions_the_least_recently_used_session_is_forgotten() {
        let conversations = Conversations::new(HistoryLimits {
            max_sessions: 2,
            ..HistoryLimits::default()
        });
        assert_eq!(conversations.open("a", "/"), None);
        assert_eq!(conversations.open("b", "/"), None);
        // Using `a` makes `b` the least recently used.
        assert!(conversations.knows("a"));
        assert_eq!(conversations.open("c", "/"), Some("b".to_owned()));
        assert!(!conversations.knows("b"));
        assert!(conversations.knows("a") && conversations.knows("c"));
        assert_eq!(conversations.sessions().len(), 2);
    }

    #[test]
    fn a_forgotten_session_is_unknown_and_frees_its_place() {
        let conversations = Conversations::new(HistoryLimits {
            max_sessions: 1,
            ..HistoryLimits::default()
        });
        conversations.open("a", "/a");
        assert!(conversations.forget("a"));
        assert!(!conversations.forget("a"));
        assert_eq!(conversations.open("b", "/b"), None);
        assert_eq!(
            conversations.sessions(),
            [("b".to_owned(), "/b".to_owned())]
        );
    }
}
