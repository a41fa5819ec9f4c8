//! What the client does with what the server sends on its own: requests (sampling, elicitation,
//! roots — on a session's streams, or as a 2026-07-28 `input_required` result) are answered by
//! one function of the caller's, and notifications wait in a bounded buffer until taken.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use protocols_runtime::ErrorObject;
use serde_json::{Map, Value};

use crate::generated::v2026_07_28::methods;

/// How many notifications the buffer keeps by default before the oldest make room.
pub const DEFAULT_NOTIFICATION_LIMIT: usize = 1024;

type AnswerFn =
    Arc<dyn Fn(String, Value) -> BoxFuture<'static, Result<Value, ErrorObject>> + Send + Sync>;

/// How the client answers the server's requests, and where the server's notifications go.
///
/// Notifications are kept in a buffer of at most [`DEFAULT_NOTIFICATION_LIMIT`] messages (see
/// [`Callbacks::with_notification_limit`]). When it is full, the oldest notification is dropped
/// to make room for the newest, and the drop is counted ([`Callbacks::dropped_notifications`])
/// and logged: a client that never takes its notifications keeps a bounded amount of memory
/// and can tell that it missed some.
#[derive(Clone)]
pub struct Callbacks {
    answer: AnswerFn,
    notifications: Arc<NotificationBuffer>,
}

impl std::fmt::Debug for Callbacks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Callbacks").finish_non_exhaustive()
    }
}

impl Default for Callbacks {
    /// Declines every server request (-32601) and keeps notifications.
    fn default() -> Self {
        Self::new(|_, _| async { Err(ErrorObject::method_not_found()) })
    }
}

impl Callbacks {
    /// Answers the server's requests with `answer(method, params)`. An accepted
    /// `elicitation/create` answer gets the requested schema's defaults for the fields it
    /// leaves out (SEP-1034), so `answer` may return only what the user changed.
    pub fn new<F, Fut>(answer: F) -> Self
    where
        F: Fn(String, Value) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Value, ErrorObject>> + Send + 'static,
    {
        let answer = Arc::new(answer);
        Self {
            answer: Arc::new(move |method, params| Box::pin(answer(method, params))),
            notifications: Arc::new(NotificationBuffer::new(DEFAULT_NOTIFICATION_LIMIT)),
        }
    }

    /// Keeps at most `limit` notifications (at least one) before the oldest make room.
    #[must_use]
    pub fn with_notification_limit(mut self, limit: usize) -> Self {
        self.notifications = Arc::new(NotificationBuffer::new(limit.max(1)));
        self
    }

    /// The notifications received so far (whole messages, oldest first), leaving none behind.
    pub fn take_notifications(&self) -> Vec<Value> {
        self.notifications.take()
    }

    /// How many notifications were dropped because the buffer was full.
    pub fn dropped_notifications(&self) -> u64 {
        self.notifications.dropped.load(Ordering::Relaxed)
    }

    /// Answers one server request.
    pub(crate) async fn answer(&self, method: String, params: Value) -> Result<Value, ErrorObject> {
        let is_elicitation = method == methods::ELICITATION_CREATE;
        let schema = is_elicitation.then(|| params.get("requestedSchema").cloned());
        let mut result = (self.answer)(method, params).await?;
        if let Some(Some(schema)) = schema {
            apply_elicitation_defaults(&mut result, &schema);
        }
        Ok(result)
    }

    pub(crate) fn keep(&self, notification: Value) {
        self.notifications.push(notification);
    }
}

/// A FIFO of notifications with a fixed capacity; the oldest give way, counted.
#[derive(Debug)]
struct NotificationBuffer {
    limit: usize,
    kept: Mutex<VecDeque<Value>>,
    dropped: AtomicU64,
}

impl NotificationBuffer {
    fn new(limit: usize) -> Self {
        Self {
            limit,
            kept: Mutex::new(VecDeque::new()),
            dropped: AtomicU64::new(0),
        }
    }

    fn push(&self, notification: Value) {
        let Ok(mut kept) = self.kept.lock() else {
            return;
        };
        if kept.len() >= self.limit {
            kept.pop_front();
            let dropped = self.dropped.fetch_add(1, Ordering::Relaxed) + 1;
            // Once per thousand, so a flood does not become a flood of logs.
            if dropped % 1000 == 1 {
                tracing::warn!(
                    limit = self.limit,
                    dropped,
                    "the notification buffer is full: the oldest notification was dropped"
                );
            }
        }
        kept.push_back(notification);
    }

    fn take(&self) -> Vec<Value> {
        self.kept
            .lock()
            .map(|mut kept| kept.drain(..).collect())
            .unwrap_or_default()
    }
}

/// Fills the fields an accepted elicitation left out with the schema's `default`s.
fn apply_elicitation_defaults(result: &mut Value, schema: &Value) {
    if result.get("action").and_then(Value::as_str) != Some("accept") {
        return;
    }
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return;
    };
    let Some(object) = result.as_object_mut() else {
        return;
    };
    let content = object
        .entry("content")
        .or_insert_with(|| Value::Object(Map::new()));
    let Some(content) = content.as_object_mut() else {
        return;
    };
    for (name, property) in properties {
        if let Some(default) = property.get("default")
            && !content.contains_key(name)
        {
            content.insert(name.clone(), default.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_full_buffer_drops_the_oldest_and_counts_it() {
        let callbacks = Callbacks::default().with_notification_limit(3);
        for n in 0..5 {
            callbacks.keep(json!({ "n": n }));
        }
        assert_eq!(callbacks.dropped_notifications(), 2);
        assert_eq!(
            callbacks.take_notifications(),
            vec![json!({"n": 2}), json!({"n": 3}), json!({"n": 4})]
        );
        assert!(callbacks.take_notifications().is_empty());
    }

    #[test]
    fn the_default_buffer_holds_its_documented_bound() {
        let callbacks = Callbacks::default();
        for n in 0..DEFAULT_NOTIFICATION_LIMIT + 10 {
            callbacks.keep(json!(n));
        }
        assert_eq!(
            callbacks.take_notifications().len(),
            DEFAULT_NOTIFICATION_LIMIT
        );
        assert_eq!(callbacks.dropped_notifications(), 10);
    }

    #[test]
    fn an_accepted_elicitation_gets_the_defaults_it_left_out() {
        let mut answer = json!({"action": "accept", "content": {"name": "Ada"}});
        let schema = json!({"properties": {
            "name": {"type": "string", "default": "John"},
            "age": {"type": "integer", "default": 30},
            "note": {"type": "string"}
        }});
        apply_elicitation_defaults(&mut answer, &schema);
        assert_eq!(answer["content"], json!({"name": "Ada", "age": 30}));
        let mut declined = json!({"action": "decline"});
        apply_elicitation_defaults(&mut declined, &schema);
        assert_eq!(declined, json!({"action": "decline"}));
    }
}
