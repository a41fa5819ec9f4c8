//! MCP tasks (2025-11-25, experimental): the store that remembers task-augmented requests —
//! their status, their outcome once terminal, and which session may see them — and forgets
//! each one when its TTL runs out, measured on an injectable clock like the runtime's sessions.
//! The server runs the request; the store only records and answers `tasks/*`.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime};

use protocols_runtime::{Clock, ErrorObject, Peer, SystemClock};
use serde_json::Value;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::generated::v2025_11_25::types::{Task, TaskStatus};

/// The `_meta` key tying a message to the task it belongs to.
pub const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";

/// How long tasks live and how often clients are told to poll.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskLimits {
    /// The TTL of a task whose request named none.
    pub default_ttl: Duration,
    /// The longest TTL granted, whatever the request asked.
    pub max_ttl: Duration,
    /// The `pollInterval` suggested to clients.
    pub poll_interval: Duration,
    /// Tasks per `tasks/list` page.
    pub page_size: usize,
}

impl Default for TaskLimits {
    fn default() -> Self {
        Self {
            default_ttl: Duration::from_secs(600),
            max_ttl: Duration::from_secs(3600),
            poll_interval: Duration::from_secs(1),
            page_size: 50,
        }
    }
}

/// What a finished request produced: its result, or the JSON-RPC error it answered.
pub type Outcome = Result<Value, ErrorObject>;

struct Entry {
    id: String,
    owner: Option<String>,
    status: TaskStatus,
    status_message: Option<String>,
    created_at: SystemTime,
    updated_at: SystemTime,
    expires_at: Instant,
    ttl: Duration,
    outcome: Option<Outcome>,
    cancel: CancellationToken,
    /// Tells `tasks/result` waiters that the status moved; dropped (waking them) on expiry.
    changed: watch::Sender<TaskStatus>,
}

impl Entry {
    fn is_terminal(&self) -> bool {
        is_terminal(self.status)
    }
}

fn is_terminal(status: TaskStatus) -> bool {
    matches!(
        status,
        TaskStatus::Completed | TaskStatus::Failed | TaskStatus::Cancelled
    )
}

#[derive(Default)]
struct Entries {
    /// By creation sequence, which is also the `tasks/list` order and cursor.
    by_sequence: BTreeMap<u64, Entry>,
    sequence_of: HashMap<String, u64>,
    next_sequence: u64,
}

/// A task the server just created: its id, its first snapshot, and the token that fires when
/// the task is cancelled or expires.
#[derive(Debug, Clone)]
pub struct CreatedTask {
    pub task: Task,
    pub cancellation: CancellationToken,
}

/// What work running as a task knows of it: its id and where its status is kept.
#[derive(Debug, Clone)]
pub(crate) struct TaskLink {
    pub(crate) id: Arc<str>,
    pub(crate) store: TaskStore,
}

/// `notifications/tasks/status` with the task as it now is (tasks exist on 2025-11-25 only,
/// the handler's own revision, so nothing is converted). Nobody listening is not an error.
pub(crate) fn notify_status(peer: &Peer, task: &Task) {
    if let Err(error) = peer.notify("notifications/tasks/status", task) {
        tracing::debug!(%error, task = %task.task_id, "task status not delivered");
    }
}

/// The in-memory task store. Cheap to clone; clones share the tasks.
#[derive(Clone)]
pub struct TaskStore {
    clock: Arc<dyn Clock>,
    limits: TaskLimits,
    entries: Arc<Mutex<Entries>>,
}

impl std::fmt::Debug for TaskStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskStore")
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl Default for TaskStore {
    fn default() -> Self {
        Self::new(TaskLimits::default(), Arc::new(SystemClock))
    }
}

fn not_found(id: &str) -> ErrorObject {
    ErrorObject::invalid_params(format!("no task `{id}`"))
}

fn millis(duration: Duration) -> i64 {
    i64::try_from(duration.as_millis()).unwrap_or(i64::MAX)
}

fn timestamp(at: SystemTime) -> String {
    chrono::DateTime::<chrono::Utc>::from(at).to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

impl TaskStore {
    pub fn new(limits: TaskLimits, clock: Arc<dyn Clock>) -> Self {
        Self {
            clock,
            limits,
            entries: Arc::default(),
        }
    }

    pub fn limits(&self) -> &TaskLimits {
        &self.limits
    }

    /// Locks the entries after forgetting every task whose TTL has run out.
    fn live(&self) -> Result<MutexGuard<'_, Entries>, ErrorObject> {
        let mut entries = self
            .entries
            .lock()
            .map_err(|_| ErrorObject::internal_error())?;
        let now = self.clock.now();
        let expired: Vec<u64> = entries
            .by_sequence
            .iter()
            .filter(|(_, entry)| entry.expires_at <= now)
            .map(|(sequence, _)| *sequence)
            .collect();
        for sequence in expired {
            if let Some(entry) = entries.by_sequence.remove(&sequence) {
                entries.sequence_of.remove(&entry.id);
                // Nobody can fetch the result any more, so the work is pointless.
                entry.cancel.cancel();
            }
        }
        Ok(entries)
    }

    fn snapshot(&self, entry: &Entry) -> Task {
        Task {
            created_at: timestamp(entry.created_at),
            last_updated_at: timestamp(entry.updated_at),
            poll_interval: Some(millis(self.limits.poll_interval)),
            status: entry.status,
            status_message: entry.status_message.clone(),
            task_id: entry.id.clone(),
            ttl: Some(millis(entry.ttl)),
        }
    }

    /// Opens a `working` task for `owner` that lives `requested_ttl_ms` (capped), or the
    /// default when the request named none.
    pub fn create(
        &self,
        owner: Option<&str>,
        requested_ttl_ms: Option<i64>,
    ) -> Result<CreatedTask, ErrorObject> {
        let ttl = requested_ttl_ms
            .map(|ms| Duration::from_millis(u64::try_from(ms).unwrap_or(0)))
            .unwrap_or(self.limits.default_ttl)
            .min(self.limits.max_ttl);
        let now = SystemTime::now();
        let (changed, _) = watch::channel(TaskStatus::Working);
        let entry = Entry {
            id: uuid::Uuid::new_v4().simple().to_string(),
            owner: owner.map(str::to_owned),
            status: TaskStatus::Working,
            status_message: None,
            created_at: now,
            updated_at: now,
            expires_at: self.clock.now() + ttl,
            ttl,
            outcome: None,
            cancel: CancellationToken::new(),
            changed,
        };
        let created = CreatedTask {
            task: self.snapshot(&entry),
            cancellation: entry.cancel.clone(),
        };
        let mut entries = self.live()?;
        let sequence = entries.next_sequence;
        entries.next_sequence += 1;
        entries.sequence_of.insert(entry.id.clone(), sequence);
        entries.by_sequence.insert(sequence, entry);
        Ok(created)
    }

    /// Runs `visit` on task `id` when `owner` may see it.
    fn with_entry<T>(
        &self,
        owner: Option<&str>,
        id: &str,
        visit: impl FnOnce(&mut Entry) -> Result<T, ErrorObject>,
    ) -> Result<T, ErrorObject> {
        let mut entries = self.live()?;
        let sequence = entries
            .sequence_of
            .get(id)
            .copied()
            .ok_or_else(|| not_found(id))?;
        match entries.by_sequence.get_mut(&sequence) {
            Some(entry) if entry.owner.as_deref() == owner => visit(entry),
            _ => Err(not_found(id)),
        }
    }

    /// Records what the request produced; a tool result with `isError` makes the task
    /// `failed`, as does a JSON-RPC error. `None` when the task was cancelled or has expired
    /// meanwhile (the outcome is then dropped).
    pub fn finish(&self, id: &str, outcome: Outcome) -> Option<Task> {
        let mut entries = self.live().ok()?;
        let sequence = entries.sequence_of.get(id).copied()?;
        let entry = entries.by_sequence.get_mut(&sequence)?;
        if entry.is_terminal() {
            return None;
        }
        let failed = match &outcome {
            Ok(result) => result.get("isError").and_then(Value::as_bool) == Some(true),
            Err(_) => true,
        };
        entry.status = if failed {
            TaskStatus::Failed
        } else {
            TaskStatus::Completed
        };
        entry.status_message = outcome
            .as_ref()
            .err()
            .map(|error| error.message.to_string());
        entry.updated_at = SystemTime::now();
        entry.outcome = Some(outcome);
        entry.changed.send_replace(entry.status);
        Some(self.snapshot(entry))
    }

    /// Moves a running task to `input_required` while it waits on the client (`waiting`) and
    /// back to `working` after; `None` when the task is no longer running.
    pub(crate) fn awaiting_input(&self, id: &str, waiting: bool) -> Option<Task> {
        let mut entries = self.live().ok()?;
        let sequence = entries.sequence_of.get(id).copied()?;
        let entry = entries.by_sequence.get_mut(&sequence)?;
        if entry.is_terminal() {
            return None;
        }
        entry.status = if waiting {
            TaskStatus::InputRequired
        } else {
            TaskStatus::Working
        };
        entry.updated_at = SystemTime::now();
        entry.changed.send_replace(entry.status);
        Some(self.snapshot(entry))
    }

    /// `tasks/get`.
    pub fn get(&self, owner: Option<&str>, id: &str) -> Result<Task, ErrorObject> {
        self.with_entry(owner, id, |entry| Ok(self.snapshot(entry)))
    }

    /// `tasks/cancel`: a task already terminal cannot be cancelled (-32602).
    pub fn cancel(&self, owner: Option<&str>, id: &str) -> Result<Task, ErrorObject> {
        self.with_entry(owner, id, |entry| {
            if entry.is_terminal() {
                return Err(ErrorObject::invalid_params(format!(
                    "task `{id}` is already {}",
                    entry.status
                )));
            }
            entry.status = TaskStatus::Cancelled;
            entry.status_message = Some("cancelled by the client".to_owned());
            entry.updated_at = SystemTime::now();
            entry.cancel.cancel();
            entry.changed.send_replace(entry.status);
            Ok(self.snapshot(entry))
        })
    }

    /// `tasks/list`: `owner`'s tasks, oldest first, one page after `cursor`.
    pub fn list(
        &self,
        owner: Option<&str>,
        cursor: Option<&str>,
    ) -> Result<(Vec<Task>, Option<String>), ErrorObject> {
        let start = match cursor {
            None => 0,
            Some(cursor) => cursor
                .parse::<u64>()
                .map_err(|_| ErrorObject::invalid_params("invalid cursor"))?,
        };
        let entries = self.live()?;
        let mut visible = entries
            .by_sequence
            .range(start..)
            .filter(|(_, entry)| entry.owner.as_deref() == owner);
        let page: Vec<Task> = visible
            .by_ref()
            .take(self.limits.page_size.max(1))
            .map(|(_, entry)| self.snapshot(entry))
            .collect();
        let next = visible.next().map(|(sequence, _)| sequence.to_string());
        Ok((page, next))
    }

    /// `tasks/result`: waits until the task is terminal (or `abandon` fires), then answers
    /// exactly what the request answered.
    pub async fn result(
        &self,
        owner: Option<&str>,
        id: &str,
        abandon: &CancellationToken,
    ) -> Outcome {
        let mut changed = self.with_entry(owner, id, |entry| Ok(entry.changed.subscribe()))?;
        let waited = tokio::select! {
            waited = changed.wait_for(|status| is_terminal(*status)) => waited.map(|_| ()),
            () = abandon.cancelled() => return Err(ErrorObject::invalid_request("tasks/result was cancelled")),
        };
        // The sender is dropped only when the task expired while we waited.
        waited.map_err(|_| not_found(id))?;
        self.with_entry(owner, id, |entry| match (&entry.outcome, entry.status) {
            (Some(outcome), _) => outcome.clone(),
            (None, status) => Err(ErrorObject::invalid_params(format!(
                "task `{id}` was {status} before it produced a result"
            ))),
        })
    }

    /// How many tasks are remembered (expired ones excluded).
    pub fn len(&self) -> usize {
        self.live().map_or(0, |entries| entries.by_sequence.len())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocols_runtime::ManualClock;
    use serde_json::json;

    fn store(clock: &Arc<ManualClock>) -> TaskStore {
        let limits = TaskLimits {
            page_size: 2,
            ..TaskLimits::default()
        };
        TaskStore::new(limits, Arc::clone(clock) as Arc<dyn Clock>)
    }

    #[test]
    fn a_task_is_forgotten_once_its_ttl_has_passed_and_its_work_is_cancelled() {
        let clock = Arc::new(ManualClock::new());
        let store = store(&clock);
        let created = store.create(Some("s"), Some(1_000)).unwrap();
        let id = created.task.task_id.clone();
        clock.advance(Duration::from_millis(999));
        assert_eq!(
            store.get(Some("s"), &id).unwrap().status,
            TaskStatus::Working
        );
        clock.advance(Duration::from_millis(1));
        assert_eq!(store.get(Some("s"), &id).unwrap_err().code, -32602);
        assert!(created.cancellation.is_cancelled());
        assert!(store.is_empty());
    }

    #[test]
    fn a_requested_ttl_is_capped_and_an_absent_one_gets_the_default() {
        let clock = Arc::new(ManualClock::new());
        let store = store(&clock);
        let limits = *store.limits();
        let capped = store.create(None, Some(i64::MAX)).unwrap().task;
        assert_eq!(capped.ttl, Some(millis(limits.max_ttl)));
        let default = store.create(None, None).unwrap().task;
        assert_eq!(default.ttl, Some(millis(limits.default_ttl)));
    }

    #[test]
    fn another_session_cannot_see_get_or_cancel_a_task() {
        let clock = Arc::new(ManualClock::new());
        let store = store(&clock);
        let id = store.create(Some("a"), None).unwrap().task.task_id;
        assert!(store.get(Some("b"), &id).is_err());
        assert!(store.cancel(Some("b"), &id).is_err());
        assert!(store.list(Some("b"), None).unwrap().0.is_empty());
    }

    #[test]
    fn an_is_error_result_fails_the_task_and_a_terminal_task_cannot_be_cancelled() {
        let clock = Arc::new(ManualClock::new());
        let store = store(&clock);
        let id = store.create(None, None).unwrap().task.task_id;
        let finished = store.finish(&id, Ok(json!({"content": [], "isError": true})));
        assert_eq!(finished.map(|task| task.status), Some(TaskStatus::Failed));
        assert_eq!(store.cancel(None, &id).unwrap_err().code, -32602);
    }

    #[test]
    fn listing_pages_through_every_task_in_creation_order() {
        let clock = Arc::new(ManualClock::new());
        let store = store(&clock);
        let ids: Vec<String> = (0..5)
            .map(|_| store.create(None, None).unwrap().task.task_id)
            .collect();
        let mut seen = Vec::new();
        let mut cursor = None;
        loop {
            let (page, next) = store.list(None, cursor.as_deref()).unwrap();
            seen.extend(page.into_iter().map(|task| task.task_id));
            match next {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
        assert_eq!(seen, ids);
        assert!(store.list(None, Some("not-a-cursor")).is_err());
    }

    #[tokio::test]
    async fn result_waits_for_the_outcome_and_answers_it_exactly() {
        let clock = Arc::new(ManualClock::new());
        let store = store(&clock);
        let id = store.create(None, None).unwrap().task.task_id;
        let waiter = {
            let store = store.clone();
            let id = id.clone();
            tokio::spawn(async move { store.result(None, &id, &CancellationToken::new()).await })
        };
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished());
        store.finish(&id, Err(ErrorObject::invalid_params("bad")));
        let answered = waiter.await.unwrap();
        assert_eq!(answered.unwrap_err().message, "bad");
    }

    #[tokio::test]
    async fn result_of_a_cancelled_task_is_an_error() {
        let clock = Arc::new(ManualClock::new());
        let store = store(&clock);
        let id = store.create(None, None).unwrap().task.task_id;
        store.cancel(None, &id).unwrap();
        let answered = store.result(None, &id, &CancellationToken::new()).await;
        assert_eq!(answered.unwrap_err().code, -32602);
    }
}
