//! MCP tasks: the store that remembers task-augmented requests — their status, their outcome once
//! terminal, who may see them, and what they wait on the client for — on both wires that define
//! them: 2025-11-25's experimental tasks (the client asks for one with `task`; `tasks/get`,
//! `list`, `cancel`, `result`) and the 2026-07-28 tasks extension (SEP-2663: the server decides;
//! `tasks/get` inlines the outcome, `tasks/update` answers the task's input requests, `tasks/cancel`
//! only acknowledges). The server runs the request; the store records it and answers `tasks/*`.
//!
//! Every bound is a [`TaskLimits`] field: tasks in all and per owner (a new task past either is
//! refused with `-32013`/503 or `-32012`/429, `data.retryAfterSeconds` saying when the oldest
//! one expires), the bytes of one outcome and of all outcomes kept (past either the outcome is
//! replaced by an internal error, so the task fails rather than the store growing), and each
//! task's lifetime (its TTL, on an injectable clock; an expired task is forgotten and its work
//! cancelled).
//!
//! The store keeps its tasks in this process's memory unless built with [`TaskStore::shared`]:
//! then 2025-11-25's tasks live in [`shared::TaskRecords`] that replicas share (a Redis store
//! implements it), and `tasks/*` reach them from any replica; a store failure is a `-32017`
//! error ([`STORE_UNAVAILABLE`](crate::errors::STORE_UNAVAILABLE)). Extension tasks, whose
//! input requests wait in the process that asked, stay in memory either way. On shared records
//! the byte bound is each outcome's alone (Redis's memory bounds the rest), the clock is the
//! wall clock (the records expire in Redis), and a 2025-11-25 task waiting on the client is not
//! marked `input_required` there.

pub mod shared;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime};

use protocols_runtime::{Clock, ErrorObject, Peer, SystemClock};
use serde_json::{Map, Value, json};
use tokio::sync::{broadcast, oneshot, watch};
use tokio_util::sync::CancellationToken;

use crate::errors::{CALLER_FULL, SERVER_FULL};
use crate::generated::v2025_11_25;
use crate::generated::v2025_11_25::types::{Task, TaskStatus};
use protocols_runtime::quote::quote;
use shared::{Admission, Cancellation, Shared, TaskRecord, TaskRecords};

/// The `_meta` key tying a message to the task it belongs to (2025-11-25).
pub const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";

/// The identifier of the 2026-07-28 tasks extension (SEP-2663).
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// The methods the 2026-07-28 tasks extension (SEP-2663) adds. The extension is not part of the
/// 2026-07-28 schema, so nothing generates its names: those it shares with 2025-11-25 are that
/// revision's constants, and only its own two are written here.
pub(crate) mod extension_methods {
    use crate::generated::v2025_11_25::methods;

    /// `tasks/get`: the task, its outcome inlined once terminal.
    pub(crate) const TASKS_GET: &str = methods::TASKS_GET;
    /// `tasks/update`: answers the task's input requests.
    pub(crate) const TASKS_UPDATE: &str = "tasks/update";
    /// `tasks/cancel`: asks the task to stop, and only acknowledges.
    pub(crate) const TASKS_CANCEL: &str = methods::TASKS_CANCEL;
    /// `notifications/tasks`: a watched task as it now is, on a `subscriptions/listen` stream.
    pub(crate) const NOTIFICATIONS_TASKS: &str = "notifications/tasks";
}

/// The `data` member of a bound's error that says how long to wait (whole seconds); the HTTP
/// answer repeats it as `Retry-After`.
pub const RETRY_AFTER: &str = protocols_runtime::handler::RETRY_AFTER_DATA;

/// How long tasks live, how often clients are told to poll, and how much the store keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct TaskLimits {
    /// The TTL of a task whose request named none (every extension task's).
    pub default_ttl: Duration,
    /// The longest TTL granted, whatever the request asked.
    pub max_ttl: Duration,
    /// The poll interval suggested to clients.
    pub poll_interval: Duration,
    /// Tasks per `tasks/list` page.
    pub page_size: usize,
    /// Tasks kept at once, in all.
    pub max_tasks: usize,
    /// Tasks kept at once for one owner (a session, an authenticated caller, or the anonymous
    /// callers together).
    pub max_tasks_per_owner: usize,
    /// The largest outcome kept for one task, in bytes of JSON.
    pub max_outcome_bytes: usize,
    /// The bytes of JSON kept for all outcomes together.
    pub max_kept_bytes: usize,
}

protocols_runtime::config_setters!(TaskLimits {
    default_ttl: Duration,
    max_ttl: Duration,
    poll_interval: Duration,
    page_size: usize,
    max_tasks: usize,
    max_tasks_per_owner: usize,
    max_outcome_bytes: usize,
    max_kept_bytes: usize,
});

impl Default for TaskLimits {
    fn default() -> Self {
        Self {
            default_ttl: Duration::from_secs(600),
            max_ttl: Duration::from_secs(3600),
            poll_interval: Duration::from_secs(1),
            page_size: 50,
            max_tasks: 1024,
            max_tasks_per_owner: 64,
            max_outcome_bytes: 1 << 20,
            max_kept_bytes: 64 << 20,
        }
    }
}

/// What a finished request produced: its result, or the JSON-RPC error it answered.
pub type Outcome = Result<Value, ErrorObject>;

/// Which wire a task was created on: it decides how an outcome reads (a tool result with
/// `isError` fails an experimental task but completes an extension one) and which `tasks/*`
/// see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskWire {
    /// 2025-11-25's experimental tasks.
    Experimental,
    /// The 2026-07-28 tasks extension (SEP-2663).
    Extension,
}

/// A request the task waits on the client to answer (extension tasks).
struct PendingInput {
    request: Value,
    answer: oneshot::Sender<Value>,
}

struct Entry {
    id: String,
    owner: Option<String>,
    wire: TaskWire,
    status: TaskStatus,
    status_message: Option<String>,
    created_at: SystemTime,
    updated_at: SystemTime,
    expires_at: Instant,
    ttl: Duration,
    outcome: Option<Outcome>,
    /// The bytes `outcome` counts against [`TaskLimits::max_kept_bytes`].
    outcome_bytes: usize,
    cancel: CancellationToken,
    /// Tells `tasks/result` waiters that the status moved; dropped (waking them) on expiry.
    changed: watch::Sender<TaskStatus>,
    /// Extension tasks: what the task waits on the client for, by key.
    inputs: BTreeMap<String, PendingInput>,
    /// Input keys minted so far (a key is never reused within a task).
    keys_minted: u64,
}

impl Entry {
    fn is_terminal(&self) -> bool {
        is_terminal(self.status)
    }

    fn touch(&mut self, status: TaskStatus) {
        self.status = status;
        self.updated_at = SystemTime::now();
        self.changed.send_replace(status);
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
    per_owner: HashMap<Option<String>, usize>,
    kept_bytes: usize,
}

impl Entries {
    fn remove(&mut self, sequence: u64) -> Option<Entry> {
        let entry = self.by_sequence.remove(&sequence)?;
        self.sequence_of.remove(&entry.id);
        self.kept_bytes = self.kept_bytes.saturating_sub(entry.outcome_bytes);
        if let Some(count) = self.per_owner.get_mut(&entry.owner) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                self.per_owner.remove(&entry.owner);
            }
        }
        Some(entry)
    }

    fn entry_mut(&mut self, id: &str) -> Option<&mut Entry> {
        let sequence = self.sequence_of.get(id)?;
        self.by_sequence.get_mut(sequence)
    }
}

/// A task the server just created: its id, its first snapshot, and the token that fires when
/// the task is cancelled or expires.
#[derive(Debug, Clone)]
pub struct CreatedTask {
    /// The task's first snapshot, as the call answers it.
    pub task: Task,
    /// Fires when the task is cancelled or expires.
    pub cancellation: CancellationToken,
}

/// What work running as a task knows of it: its id, where its status is kept, and its wire.
#[derive(Debug, Clone)]
pub(crate) struct TaskLink {
    pub(crate) id: Arc<str>,
    pub(crate) store: TaskStore,
    pub(crate) wire: TaskWire,
}

/// `notifications/tasks/status` with the task as it now is (2025-11-25, the handler's own
/// revision, so nothing is converted). Nobody listening is not an error.
pub(crate) fn notify_status(peer: &Peer, task: &Task) {
    if let Err(error) = peer.notify(v2025_11_25::methods::NOTIFICATIONS_TASKS_STATUS, task) {
        tracing::debug!(%error, task = %task.task_id, "task status not delivered");
    }
}

/// The task store: in this process's memory, or (built with [`TaskStore::shared`]) with
/// 2025-11-25's tasks in records replicas share. Cheap to clone; clones share the tasks.
#[derive(Clone)]
pub struct TaskStore {
    clock: Arc<dyn Clock>,
    limits: TaskLimits,
    entries: Arc<Mutex<Entries>>,
    /// The ids of extension tasks whose state changed, for `subscriptions/listen` streams.
    changes: broadcast::Sender<Arc<str>>,
    /// Where 2025-11-25's tasks live when replicas share them; `None`: in `entries`.
    shared: Option<Arc<Shared>>,
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

/// How many changes a slow listener may fall behind before it misses some (it can still poll).
const CHANGES_KEPT: usize = 256;

/// The status message of a task the client cancelled.
const CANCELLED_BY_CLIENT: &str = "cancelled by the client";

/// The longest a `tasks/result` on shared records waits between two looks at the record.
const RESULT_POLL: Duration = Duration::from_millis(250);

/// A bound's refusal: `code`, `message`, and `data.retryAfterSeconds` (whole seconds, at least
/// one) saying when room is made, `wait` from now.
fn bound_reached(code: i64, message: &'static str, wait: Duration) -> ErrorObject {
    let retry_after = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
    ErrorObject::new(code, message).with_data(json!({ RETRY_AFTER: retry_after.max(1) }))
}

fn invalid_cursor() -> ErrorObject {
    ErrorObject::invalid_params("invalid cursor")
}

fn not_found(id: &str) -> ErrorObject {
    ErrorObject::invalid_params(format!("no task {}", quote(id)))
}

fn millis(duration: Duration) -> i64 {
    i64::try_from(duration.as_millis()).unwrap_or(i64::MAX)
}

fn timestamp(at: SystemTime) -> String {
    chrono::DateTime::<chrono::Utc>::from(at).to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// The bytes an outcome takes as JSON.
fn outcome_bytes(outcome: &Outcome) -> usize {
    match outcome {
        Ok(result) => serde_json::to_string(result).map_or(0, |text| text.len()),
        Err(error) => serde_json::to_string(error).map_or(0, |text| text.len()),
    }
}

impl TaskStore {
    /// An empty store bounded by `limits`, reading time from `clock`.
    pub fn new(limits: TaskLimits, clock: Arc<dyn Clock>) -> Self {
        Self {
            clock,
            limits,
            entries: Arc::default(),
            changes: broadcast::channel(CHANGES_KEPT).0,
            shared: None,
        }
    }

    /// A store whose 2025-11-25 tasks live in `records`, shared with every replica using the
    /// same records (extension tasks stay in this process), bounded by `limits`.
    pub fn shared(
        records: Arc<dyn TaskRecords>,
        limits: TaskLimits,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self {
            shared: Some(Arc::new(Shared::new(records))),
            ..Self::new(limits, clock)
        }
    }

    /// Whether 2025-11-25's tasks live in shared records.
    pub fn is_shared(&self) -> bool {
        self.shared.is_some()
    }

    /// The limits the store keeps to.
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
            if let Some(entry) = entries.remove(sequence) {
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

    /// An extension task's own fields (SEP-2663 `Task`).
    fn extension_fields(&self, entry: &Entry) -> Map<String, Value> {
        let mut fields = Map::new();
        fields.insert("taskId".to_owned(), json!(entry.id));
        fields.insert("status".to_owned(), json!(entry.status));
        if let Some(message) = &entry.status_message {
            fields.insert("statusMessage".to_owned(), json!(message));
        }
        fields.insert("createdAt".to_owned(), json!(timestamp(entry.created_at)));
        fields.insert(
            "lastUpdatedAt".to_owned(),
            json!(timestamp(entry.updated_at)),
        );
        fields.insert("ttlMs".to_owned(), json!(millis(entry.ttl)));
        fields.insert(
            "pollIntervalMs".to_owned(),
            json!(millis(self.limits.poll_interval).max(1)),
        );
        fields
    }

    /// An extension task as `tasks/get` and `notifications/tasks` carry it (SEP-2663
    /// `DetailedTask`): its fields and what its status inlines.
    fn detailed(&self, entry: &Entry) -> Map<String, Value> {
        let mut fields = self.extension_fields(entry);
        match (entry.status, &entry.outcome) {
            (TaskStatus::Completed, Some(Ok(result))) => {
                fields.insert("result".to_owned(), result.clone());
            }
            (TaskStatus::Failed, Some(Err(error))) => {
                fields.insert("error".to_owned(), json!(error));
            }
            (TaskStatus::InputRequired, _) => {
                let requests: Map<String, Value> = entry
                    .inputs
                    .iter()
                    .map(|(key, pending)| (key.clone(), pending.request.clone()))
                    .collect();
                fields.insert("inputRequests".to_owned(), Value::Object(requests));
            }
            _ => {}
        }
        fields
    }

    /// Why no task can be created for `owner` now, when that is so: the store or the owner's
    /// share is full. `data.retryAfterSeconds` says when the first of those tasks expires.
    fn refusal(&self, entries: &Entries, owner: Option<&str>) -> Option<ErrorObject> {
        let owner_key = owner.map(str::to_owned);
        let owned = entries.per_owner.get(&owner_key).copied().unwrap_or(0);
        let (code, message, mine) = if entries.by_sequence.len() >= self.limits.max_tasks
            || entries.kept_bytes >= self.limits.max_kept_bytes
        {
            (SERVER_FULL, "the server keeps no more tasks now", false)
        } else if owned >= self.limits.max_tasks_per_owner {
            (
                CALLER_FULL,
                "this caller holds as many tasks as it may",
                true,
            )
        } else {
            return None;
        };
        let now = self.clock.now();
        let first_expiry = entries
            .by_sequence
            .values()
            .filter(|entry| !mine || entry.owner.as_deref() == owner)
            .map(|entry| entry.expires_at.saturating_duration_since(now))
            .min()
            .unwrap_or_default();
        Some(bound_reached(code, message, first_expiry))
    }

    /// `outcome` as a task keeps it (replaced by an internal error past the byte bounds: the
    /// largest outcome, and `budget`, what is left of all outcomes' room), and whether it
    /// fails the task on `wire`.
    fn settled(&self, outcome: Outcome, wire: TaskWire, budget: usize) -> (Outcome, bool) {
        let bytes = outcome_bytes(&outcome);
        let outcome = if bytes > self.limits.max_outcome_bytes || bytes > budget {
            Err(ErrorObject::new(
                -32603,
                format!(
                    "the outcome ({bytes} bytes) is more than the server keeps for a task ({} bytes)",
                    self.limits.max_outcome_bytes.min(budget)
                ),
            ))
        } else {
            outcome
        };
        let failed = match (&outcome, wire) {
            (Err(_), _) => true,
            (Ok(result), TaskWire::Experimental) => {
                result.get("isError").and_then(Value::as_bool) == Some(true)
            }
            (Ok(_), TaskWire::Extension) => false,
        };
        (outcome, failed)
    }

    /// The TTL a task gets for `requested_ttl_ms`: the default when absent, never past the cap.
    fn granted_ttl(&self, requested_ttl_ms: Option<i64>) -> Duration {
        requested_ttl_ms
            .map(|ms| Duration::from_millis(u64::try_from(ms).unwrap_or(0)))
            .unwrap_or(self.limits.default_ttl)
            .min(self.limits.max_ttl)
    }

    /// Opens a `working` task for `owner` on `wire` that lives `requested_ttl_ms` (capped), or
    /// the default when the request named none; refused when a bound is reached.
    pub fn create(
        &self,
        owner: Option<&str>,
        requested_ttl_ms: Option<i64>,
        wire: TaskWire,
    ) -> Result<CreatedTask, ErrorObject> {
        let ttl = self.granted_ttl(requested_ttl_ms);
        let now = SystemTime::now();
        let (changed, _) = watch::channel(TaskStatus::Working);
        let entry = Entry {
            id: uuid::Uuid::new_v4().simple().to_string(),
            owner: owner.map(str::to_owned),
            wire,
            status: TaskStatus::Working,
            status_message: None,
            created_at: now,
            updated_at: now,
            expires_at: self.clock.now() + ttl,
            ttl,
            outcome: None,
            outcome_bytes: 0,
            cancel: CancellationToken::new(),
            changed,
            inputs: BTreeMap::new(),
            keys_minted: 0,
        };
        let created = CreatedTask {
            task: self.snapshot(&entry),
            cancellation: entry.cancel.clone(),
        };
        let mut entries = self.live()?;
        if let Some(refusal) = self.refusal(&entries, owner) {
            return Err(refusal);
        }
        let sequence = entries.next_sequence;
        entries.next_sequence += 1;
        *entries.per_owner.entry(entry.owner.clone()).or_insert(0) += 1;
        entries.sequence_of.insert(entry.id.clone(), sequence);
        entries.by_sequence.insert(sequence, entry);
        Ok(created)
    }

    /// Forgets a task nobody was told of (a call that finished before it had to become one).
    pub(crate) fn forget(&self, id: &str) {
        if let Ok(mut entries) = self.entries.lock()
            && let Some(sequence) = entries.sequence_of.get(id).copied()
        {
            entries.remove(sequence);
        }
    }

    /// Runs `visit` on task `id` of `wire` when `owner` may see it.
    fn with_entry<T>(
        &self,
        owner: Option<&str>,
        id: &str,
        wire: TaskWire,
        visit: impl FnOnce(&mut Entry) -> Result<T, ErrorObject>,
    ) -> Result<T, ErrorObject> {
        let mut entries = self.live()?;
        match entries.entry_mut(id) {
            Some(entry) if entry.owner.as_deref() == owner && entry.wire == wire => visit(entry),
            _ => Err(not_found(id)),
        }
    }

    fn announce(&self, id: &str, wire: TaskWire) {
        if wire == TaskWire::Extension {
            // Nobody listening is not an error.
            let _ = self.changes.send(Arc::from(id));
        }
    }

    /// Records what the request produced. A JSON-RPC error fails the task; a tool result with
    /// `isError` fails an experimental task and completes an extension one. An outcome past the
    /// byte bounds is kept as an internal error instead. `None` when the task was cancelled or
    /// has expired meanwhile (the outcome is then dropped).
    pub fn finish(&self, id: &str, outcome: Outcome) -> Option<Task> {
        let mut entries = self.live().ok()?;
        let budget = self
            .limits
            .max_kept_bytes
            .saturating_sub(entries.kept_bytes);
        let entry = entries.entry_mut(id)?;
        if entry.is_terminal() {
            return None;
        }
        let (outcome, failed) = self.settled(outcome, entry.wire, budget);
        entry.status_message = outcome
            .as_ref()
            .err()
            .map(|error| error.message.to_string());
        entry.outcome_bytes = outcome_bytes(&outcome);
        let kept = entry.outcome_bytes;
        entry.outcome = Some(outcome);
        entry.inputs.clear();
        entry.touch(if failed {
            TaskStatus::Failed
        } else {
            TaskStatus::Completed
        });
        let snapshot = self.snapshot(entry);
        let wire = entry.wire;
        entries.kept_bytes += kept;
        drop(entries);
        self.announce(id, wire);
        Some(snapshot)
    }

    /// Moves a running experimental task to `input_required` while it waits on the client
    /// (`waiting`) and back to `working` after; `None` when the task is no longer running.
    pub(crate) fn awaiting_input(&self, id: &str, waiting: bool) -> Option<Task> {
        let mut entries = self.live().ok()?;
        let entry = entries.entry_mut(id)?;
        if entry.is_terminal() {
            return None;
        }
        entry.touch(if waiting {
            TaskStatus::InputRequired
        } else {
            TaskStatus::Working
        });
        Some(self.snapshot(entry))
    }

    /// An extension task asks the client `request` (a `{method, params}` input request): the
    /// task is `input_required` until every request it asked is answered through
    /// `tasks/update`. The answer arrives on the receiver; `None` when the task is no longer
    /// running.
    pub(crate) fn ask(
        &self,
        id: &str,
        request: Value,
    ) -> Option<(String, oneshot::Receiver<Value>)> {
        let mut entries = self.live().ok()?;
        let entry = entries.entry_mut(id)?;
        if entry.is_terminal() {
            return None;
        }
        entry.keys_minted += 1;
        let key = format!("input-{}", entry.keys_minted);
        let (answer, answered) = oneshot::channel();
        entry
            .inputs
            .insert(key.clone(), PendingInput { request, answer });
        entry.touch(TaskStatus::InputRequired);
        drop(entries);
        self.announce(id, TaskWire::Extension);
        Some((key, answered))
    }

    /// `tasks/update`: delivers each answer to the request it names; keys the task is not
    /// waiting on are ignored. The task works again once nothing is outstanding.
    pub fn update(
        &self,
        owner: Option<&str>,
        id: &str,
        responses: &Map<String, Value>,
    ) -> Result<(), ErrorObject> {
        let resumed = self.with_entry(owner, id, TaskWire::Extension, |entry| {
            let mut answered = false;
            for (key, response) in responses {
                if let Some(pending) = entry.inputs.remove(key) {
                    // The asker may have gone (cancelled); the answer then has nowhere to go.
                    let _ = pending.answer.send(response.clone());
                    answered = true;
                }
            }
            if answered && entry.inputs.is_empty() && !entry.is_terminal() {
                entry.touch(TaskStatus::Working);
            }
            Ok(answered)
        })?;
        if resumed {
            self.announce(id, TaskWire::Extension);
        }
        Ok(())
    }

    /// `tasks/get` (2025-11-25).
    pub fn get(&self, owner: Option<&str>, id: &str) -> Result<Task, ErrorObject> {
        self.with_entry(owner, id, TaskWire::Experimental, |entry| {
            Ok(self.snapshot(entry))
        })
    }

    /// `tasks/get` (extension): the task's `DetailedTask`.
    pub fn get_detailed(
        &self,
        owner: Option<&str>,
        id: &str,
    ) -> Result<Map<String, Value>, ErrorObject> {
        self.with_entry(owner, id, TaskWire::Extension, |entry| {
            Ok(self.detailed(entry))
        })
    }

    /// The `DetailedTask` of an extension task whoever owns it (for the listeners its owner
    /// subscribed); `None` once it is gone.
    pub(crate) fn detailed_of(&self, id: &str) -> Option<(Option<String>, Map<String, Value>)> {
        let mut entries = self.live().ok()?;
        let entry = entries.entry_mut(id)?;
        Some((entry.owner.clone(), self.detailed(entry)))
    }

    /// The fields of a `CreateTaskResult` for task `id` (extension).
    pub(crate) fn created(&self, id: &str) -> Option<Map<String, Value>> {
        let mut entries = self.live().ok()?;
        let entry = entries.entry_mut(id)?;
        Some(self.extension_fields(entry))
    }

    fn cancel_entry(&self, entry: &mut Entry) {
        entry.status_message = Some(CANCELLED_BY_CLIENT.to_owned());
        entry.cancel.cancel();
        entry.inputs.clear();
        entry.touch(TaskStatus::Cancelled);
    }

    /// `tasks/cancel` (2025-11-25): a task already terminal cannot be cancelled (-32602).
    pub fn cancel(&self, owner: Option<&str>, id: &str) -> Result<Task, ErrorObject> {
        self.with_entry(owner, id, TaskWire::Experimental, |entry| {
            if entry.is_terminal() {
                return Err(ErrorObject::invalid_params(format!(
                    "the task is already {}",
                    entry.status
                )));
            }
            self.cancel_entry(entry);
            Ok(self.snapshot(entry))
        })
    }

    /// `tasks/cancel` (extension): acknowledged whatever the status; a running task is
    /// cancelled, a terminal one stays as it is.
    pub fn cancel_extension(&self, owner: Option<&str>, id: &str) -> Result<(), ErrorObject> {
        let cancelled = self.with_entry(owner, id, TaskWire::Extension, |entry| {
            let running = !entry.is_terminal();
            if running {
                self.cancel_entry(entry);
            }
            Ok(running)
        })?;
        if cancelled {
            self.announce(id, TaskWire::Extension);
        }
        Ok(())
    }

    /// `tasks/list` (2025-11-25): `owner`'s tasks, oldest first, one page after `cursor`.
    pub fn list(
        &self,
        owner: Option<&str>,
        cursor: Option<&str>,
    ) -> Result<(Vec<Task>, Option<String>), ErrorObject> {
        let start = match cursor {
            None => 0,
            Some(cursor) => cursor.parse::<u64>().map_err(|_| invalid_cursor())?,
        };
        let entries = self.live()?;
        let mut visible = entries.by_sequence.range(start..).filter(|(_, entry)| {
            entry.owner.as_deref() == owner && entry.wire == TaskWire::Experimental
        });
        let page: Vec<Task> = visible
            .by_ref()
            .take(self.limits.page_size.max(1))
            .map(|(_, entry)| self.snapshot(entry))
            .collect();
        let next = visible.next().map(|(sequence, _)| sequence.to_string());
        Ok((page, next))
    }

    /// `tasks/result` (2025-11-25): waits until the task is terminal (or `abandon` fires),
    /// then answers exactly what the request answered.
    pub async fn result(
        &self,
        owner: Option<&str>,
        id: &str,
        abandon: &CancellationToken,
    ) -> Outcome {
        if let Some(shared) = &self.shared {
            return self.shared_result(shared, owner, id, abandon).await;
        }
        let mut changed = self.with_entry(owner, id, TaskWire::Experimental, |entry| {
            Ok(entry.changed.subscribe())
        })?;
        let waited = tokio::select! {
            waited = changed.wait_for(|status| is_terminal(*status)) => waited.map(|_| ()),
            () = abandon.cancelled() => return Err(result_abandoned()),
        };
        // The sender is dropped only when the task expired while we waited.
        waited.map_err(|_| not_found(id))?;
        self.with_entry(owner, id, TaskWire::Experimental, |entry| {
            match (&entry.outcome, entry.status) {
                (Some(outcome), _) => outcome.clone(),
                (None, status) => Err(ErrorObject::invalid_params(format!(
                    "the task was {status} before it produced a result"
                ))),
            }
        })
    }

    /// The ids of extension tasks as their state changes.
    pub(crate) fn changes(&self) -> broadcast::Receiver<Arc<str>> {
        self.changes.subscribe()
    }

    /// How many tasks are remembered in this process (expired ones excluded; tasks in shared
    /// records are not counted).
    pub fn len(&self) -> usize {
        self.live().map_or(0, |entries| entries.by_sequence.len())
    }

    /// Whether no task is remembered in this process (expired ones excluded).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The requests as the server answers them: each goes to the shared records for a 2025-11-25
/// task when the store has them, to this process's memory otherwise (the synchronous methods
/// above, answered without allocating or waiting).
impl TaskStore {
    /// Opens a task (see [`Self::create`]) where its wire keeps it.
    pub async fn open(
        &self,
        owner: Option<&str>,
        requested_ttl_ms: Option<i64>,
        wire: TaskWire,
    ) -> Result<CreatedTask, ErrorObject> {
        match &self.shared {
            Some(shared) if wire == TaskWire::Experimental => {
                self.open_shared(shared, owner, requested_ttl_ms).await
            }
            _ => self.create(owner, requested_ttl_ms, wire),
        }
    }

    /// `tasks/get` (2025-11-25), see [`Self::get`].
    pub async fn fetch(&self, owner: Option<&str>, id: &str) -> Result<Task, ErrorObject> {
        let Some(shared) = &self.shared else {
            return self.get(owner, id);
        };
        let (record, _) = self.record(shared, owner, id, false).await?;
        Ok(self.task_of(&record))
    }

    /// `tasks/list` (2025-11-25), see [`Self::list`].
    pub async fn page(
        &self,
        owner: Option<&str>,
        cursor: Option<&str>,
    ) -> Result<(Vec<Task>, Option<String>), ErrorObject> {
        let Some(shared) = &self.shared else {
            return self.list(owner, cursor);
        };
        let after = match cursor {
            None => None,
            Some(cursor) => Some(cursor.parse::<u64>().map_err(|_| invalid_cursor())?),
        };
        let page = shared
            .records
            .list(owner, after, self.limits.page_size.max(1))
            .await
            .map_err(|error| shared::unavailable(&error))?;
        let tasks = page
            .records
            .iter()
            .map(|record| self.task_of(record))
            .collect();
        Ok((tasks, page.next.map(|sequence| sequence.to_string())))
    }

    /// `tasks/cancel` (2025-11-25), see [`Self::cancel`]. On shared records the work stops at
    /// once when it runs here, and within a poll interval on the replica running it otherwise
    /// (that replica watches the record).
    pub async fn stop(&self, owner: Option<&str>, id: &str) -> Result<Task, ErrorObject> {
        let Some(shared) = &self.shared else {
            return self.cancel(owner, id);
        };
        let found = shared
            .records
            .cancel(owner, id, CANCELLED_BY_CLIENT, SystemTime::now())
            .await
            .map_err(|error| shared::unavailable(&error))?;
        match found {
            Cancellation::Cancelled(record) => {
                if let Some(work) = shared.ended(id) {
                    work.cancel();
                }
                Ok(self.task_of(&record))
            }
            Cancellation::Terminal(status) => Err(ErrorObject::invalid_params(format!(
                "the task is already {status}"
            ))),
            Cancellation::Missing => Err(not_found(id)),
        }
    }

    /// Records what a 2025-11-25 task's request produced (see [`Self::finish`]); `None` when
    /// it was cancelled (on any replica) or expired meanwhile, or the shared store failed (the
    /// outcome is then lost and the task expires as it is).
    pub async fn settle(&self, id: &str, outcome: Outcome) -> Option<Task> {
        let Some(shared) = &self.shared else {
            return self.finish(id, outcome);
        };
        shared.ended(id);
        let (outcome, failed) = self.settled(
            outcome,
            TaskWire::Experimental,
            self.limits.max_outcome_bytes,
        );
        let status = if failed {
            TaskStatus::Failed
        } else {
            TaskStatus::Completed
        };
        let message = outcome
            .as_ref()
            .err()
            .map(|error| error.message.to_string());
        let text = shared::encode_outcome(&outcome);
        let finished = shared
            .records
            .finish(id, status, message.as_deref(), &text, SystemTime::now())
            .await;
        match finished {
            Ok(record) => record.map(|record| self.task_of(&record)),
            Err(error) => {
                tracing::warn!(%error, task = %id, "a task's outcome could not be stored");
                None
            }
        }
    }

    async fn open_shared(
        &self,
        shared: &Arc<Shared>,
        owner: Option<&str>,
        requested_ttl_ms: Option<i64>,
    ) -> Result<CreatedTask, ErrorObject> {
        let now = SystemTime::now();
        let record = TaskRecord::new(
            uuid::Uuid::new_v4().simple().to_string(),
            owner.map(str::to_owned),
            TaskStatus::Working,
            None,
            (now, now),
            self.granted_ttl(requested_ttl_ms),
        );
        let admission = shared
            .records
            .create(&record, &self.limits)
            .await
            .map_err(|error| shared::unavailable(&error))?;
        match admission {
            Admission::Admitted => {}
            Admission::ServerFull(wait) => {
                return Err(bound_reached(
                    SERVER_FULL,
                    "the server keeps no more tasks now",
                    wait,
                ));
            }
            Admission::OwnerFull(wait) => {
                return Err(bound_reached(
                    CALLER_FULL,
                    "this caller holds as many tasks as it may",
                    wait,
                ));
            }
        }
        let cancellation = CancellationToken::new();
        shared.runs(&record.id, &cancellation);
        tokio::spawn(shared::watch(
            Arc::clone(shared),
            record.id.clone(),
            cancellation.clone(),
            self.limits.poll_interval,
        ));
        Ok(CreatedTask {
            task: self.task_of(&record),
            cancellation,
        })
    }

    /// `owner`'s task `id` in the shared records (its outcome too when `with_outcome`).
    async fn record(
        &self,
        shared: &Shared,
        owner: Option<&str>,
        id: &str,
        with_outcome: bool,
    ) -> Result<(TaskRecord, Option<String>), ErrorObject> {
        let found = shared
            .records
            .get(id, with_outcome)
            .await
            .map_err(|error| shared::unavailable(&error))?;
        match found {
            Some((record, outcome)) if record.owner.as_deref() == owner => Ok((record, outcome)),
            _ => Err(not_found(id)),
        }
    }

    /// `tasks/result` on shared records: looks at the record until it is terminal (the
    /// replica running the task may be another), at most [`RESULT_POLL`] apart.
    async fn shared_result(
        &self,
        shared: &Shared,
        owner: Option<&str>,
        id: &str,
        abandon: &CancellationToken,
    ) -> Outcome {
        let every = self.limits.poll_interval.min(RESULT_POLL);
        loop {
            let (record, outcome) = self.record(shared, owner, id, true).await?;
            if is_terminal(record.status) {
                return outcome
                    .as_deref()
                    .and_then(shared::decode_outcome)
                    .unwrap_or_else(|| {
                        Err(ErrorObject::invalid_params(format!(
                            "the task was {} before it produced a result",
                            record.status
                        )))
                    });
            }
            tokio::select! {
                () = tokio::time::sleep(every) => {}
                () = abandon.cancelled() => return Err(result_abandoned()),
            }
        }
    }

    fn task_of(&self, record: &TaskRecord) -> Task {
        Task {
            created_at: timestamp(record.created_at),
            last_updated_at: timestamp(record.updated_at),
            poll_interval: Some(millis(self.limits.poll_interval)),
            status: record.status,
            status_message: record.status_message.clone(),
            task_id: record.id.clone(),
            ttl: Some(millis(record.ttl)),
        }
    }
}

/// `tasks/result` was cancelled while it waited.
fn result_abandoned() -> ErrorObject {
    ErrorObject::new(
        protocols_runtime::jsonrpc::codes::INVALID_REQUEST,
        format!("{} was cancelled", v2025_11_25::methods::TASKS_RESULT),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocols_runtime::ManualClock;

    const EXPERIMENTAL: TaskWire = TaskWire::Experimental;
    const EXTENSION: TaskWire = TaskWire::Extension;

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
        let created = store.create(Some("s"), Some(1_000), EXPERIMENTAL).unwrap();
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
        let capped = store
            .create(None, Some(i64::MAX), EXPERIMENTAL)
            .unwrap()
            .task;
        assert_eq!(capped.ttl, Some(millis(limits.max_ttl)));
        let default = store.create(None, None, EXPERIMENTAL).unwrap().task;
        assert_eq!(default.ttl, Some(millis(limits.default_ttl)));
    }

    #[test]
    fn another_session_cannot_see_get_or_cancel_a_task() {
        let clock = Arc::new(ManualClock::new());
        let store = store(&clock);
        let id = store
            .create(Some("a"), None, EXPERIMENTAL)
            .unwrap()
            .task
            .task_id;
        assert!(store.get(Some("b"), &id).is_err());
        assert!(store.cancel(Some("b"), &id).is_err());
        assert!(store.list(Some("b"), None).unwrap().0.is_empty());
    }

    #[test]
    fn an_is_error_result_fails_the_task_and_a_terminal_task_cannot_be_cancelled() {
        let clock = Arc::new(ManualClock::new());
        let store = store(&clock);
        let id = store.create(None, None, EXPERIMENTAL).unwrap().task.task_id;
        let finished = store.finish(&id, Ok(json!({"content": [], "isError": true})));
        assert_eq!(finished.map(|task| task.status), Some(TaskStatus::Failed));
        assert_eq!(store.cancel(None, &id).unwrap_err().code, -32602);
    }

    #[test]
    fn listing_pages_through_every_task_in_creation_order() {
        let clock = Arc::new(ManualClock::new());
        let store = store(&clock);
        let ids: Vec<String> = (0..5)
            .map(|_| store.create(None, None, EXPERIMENTAL).unwrap().task.task_id)
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
        let id = store.create(None, None, EXPERIMENTAL).unwrap().task.task_id;
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
        let id = store.create(None, None, EXPERIMENTAL).unwrap().task.task_id;
        store.cancel(None, &id).unwrap();
        let answered = store.result(None, &id, &CancellationToken::new()).await;
        assert_eq!(answered.unwrap_err().code, -32602);
    }

    fn bounded(clock: &Arc<ManualClock>, limits: TaskLimits) -> TaskStore {
        TaskStore::new(limits, Arc::clone(clock) as Arc<dyn Clock>)
    }

    fn retry_after(error: &ErrorObject) -> Option<u64> {
        error.data.as_ref()?.get(RETRY_AFTER)?.as_u64()
    }

    #[test]
    fn a_store_at_its_task_bound_refuses_with_503_code_until_a_task_expires() {
        let clock = Arc::new(ManualClock::new());
        let limits = TaskLimits {
            max_tasks: 2,
            ..TaskLimits::default()
        };
        let store = bounded(&clock, limits);
        store.create(Some("a"), Some(10_000), EXTENSION).unwrap();
        store.create(Some("b"), Some(20_000), EXTENSION).unwrap();
        let refused = store.create(Some("c"), None, EXTENSION).unwrap_err();
        assert_eq!(refused.code, SERVER_FULL);
        assert_eq!(
            retry_after(&refused),
            Some(10),
            "when the first task expires"
        );
        clock.advance(Duration::from_secs(10));
        assert!(store.create(Some("c"), None, EXTENSION).is_ok());
    }

    #[test]
    fn an_owner_at_its_share_is_refused_with_429_code_while_others_are_served() {
        let clock = Arc::new(ManualClock::new());
        let limits = TaskLimits {
            max_tasks_per_owner: 2,
            ..TaskLimits::default()
        };
        let store = bounded(&clock, limits);
        for _ in 0..2 {
            store
                .create(Some("greedy"), Some(5_500), EXPERIMENTAL)
                .unwrap();
        }
        let refused = store
            .create(Some("greedy"), None, EXPERIMENTAL)
            .unwrap_err();
        assert_eq!(refused.code, CALLER_FULL);
        assert_eq!(retry_after(&refused), Some(6));
        assert!(store.create(Some("modest"), None, EXPERIMENTAL).is_ok());
        assert!(store.create(None, None, EXPERIMENTAL).is_ok());
    }

    #[test]
    fn an_outcome_past_the_byte_bounds_fails_the_task_instead_of_being_kept() {
        let clock = Arc::new(ManualClock::new());
        let limits = TaskLimits {
            max_outcome_bytes: 64,
            // The internal error that replaces the first outcome (about 100 bytes) is kept and
            // counted too; what remains after it and the small outcome is under the third's 51.
            max_kept_bytes: 160,
            ..TaskLimits::default()
        };
        let store = bounded(&clock, limits);
        let big = store.create(None, None, EXTENSION).unwrap().task.task_id;
        store.finish(&big, Ok(json!({"text": "x".repeat(100)})));
        let detailed = store.get_detailed(None, &big).unwrap();
        assert_eq!(detailed["status"], "failed");
        assert_eq!(detailed["error"]["code"], -32603);
        let small = store.create(None, None, EXTENSION).unwrap().task.task_id;
        store.finish(&small, Ok(json!({"content": []})));
        assert_eq!(
            store.get_detailed(None, &small).unwrap()["status"],
            "completed"
        );
        // What is kept now leaves less than an outcome's room: the next one fails too.
        let third = store.create(None, None, EXTENSION).unwrap().task.task_id;
        store.finish(&third, Ok(json!({"text": "y".repeat(40)})));
        assert_eq!(
            store.get_detailed(None, &third).unwrap()["status"],
            "failed"
        );
    }

    #[test]
    fn an_extension_task_inlines_its_outcome_and_an_is_error_result_completes_it() {
        let clock = Arc::new(ManualClock::new());
        let store = store(&clock);
        let id = store.create(None, None, EXTENSION).unwrap().task.task_id;
        let working = store.get_detailed(None, &id).unwrap();
        assert_eq!(working["status"], "working");
        assert!(working.get("result").is_none() && working.get("ttl").is_none());
        assert!(working["ttlMs"].as_i64().unwrap() > 0);
        assert!(working["pollIntervalMs"].as_i64().unwrap() > 0);
        store.finish(&id, Ok(json!({"content": [], "isError": true})));
        let done = store.get_detailed(None, &id).unwrap();
        assert_eq!(done["status"], "completed");
        assert_eq!(done["result"]["isError"], true);
        let failing = store.create(None, None, EXTENSION).unwrap().task.task_id;
        store.finish(&failing, Err(ErrorObject::internal_error()));
        let failed = store.get_detailed(None, &failing).unwrap();
        assert_eq!(
            (failed["status"].clone(), failed["error"]["code"].clone()),
            (json!("failed"), json!(-32603))
        );
        assert!(failed.get("result").is_none());
    }

    #[test]
    fn the_two_wires_do_not_see_each_others_tasks() {
        let clock = Arc::new(ManualClock::new());
        let store = store(&clock);
        let experimental = store.create(None, None, EXPERIMENTAL).unwrap().task.task_id;
        let extension = store.create(None, None, EXTENSION).unwrap().task.task_id;
        assert!(store.get_detailed(None, &experimental).is_err());
        assert!(store.get(None, &extension).is_err());
        assert_eq!(store.list(None, None).unwrap().0.len(), 1);
    }

    #[tokio::test]
    async fn an_extension_task_waits_on_every_input_it_asked_and_ignores_unknown_keys() {
        let clock = Arc::new(ManualClock::new());
        let store = store(&clock);
        let id = store.create(None, None, EXTENSION).unwrap().task.task_id;
        let (first, first_answer) = store
            .ask(&id, json!({"method": "elicitation/create"}))
            .unwrap();
        let (second, second_answer) = store
            .ask(&id, json!({"method": "elicitation/create"}))
            .unwrap();
        assert_ne!(first, second);
        let waiting = store.get_detailed(None, &id).unwrap();
        assert_eq!(waiting["status"], "input_required");
        assert_eq!(waiting["inputRequests"].as_object().unwrap().len(), 2);
        let mut partial = Map::new();
        partial.insert(first.clone(), json!({"action": "accept"}));
        partial.insert("never-asked".to_owned(), json!({}));
        store.update(None, &id, &partial).unwrap();
        assert_eq!(first_answer.await.unwrap(), json!({"action": "accept"}));
        let still = store.get_detailed(None, &id).unwrap();
        assert_eq!(still["status"], "input_required");
        assert_eq!(
            still["inputRequests"]
                .as_object()
                .unwrap()
                .keys()
                .collect::<Vec<_>>(),
            [&second]
        );
        let mut rest = Map::new();
        rest.insert(second, json!({"action": "decline"}));
        store.update(None, &id, &rest).unwrap();
        assert!(second_answer.await.is_ok());
        assert_eq!(store.get_detailed(None, &id).unwrap()["status"], "working");
        assert_eq!(store.update(None, "nope", &rest).unwrap_err().code, -32602);
    }

    #[test]
    fn cancelling_an_extension_task_is_acknowledged_even_when_it_is_already_terminal() {
        let clock = Arc::new(ManualClock::new());
        let store = store(&clock);
        let created = store.create(None, None, EXTENSION).unwrap();
        let id = created.task.task_id.clone();
        store.cancel_extension(None, &id).unwrap();
        assert!(created.cancellation.is_cancelled());
        assert_eq!(
            store.get_detailed(None, &id).unwrap()["status"],
            "cancelled"
        );
        assert_eq!(store.cancel_extension(None, &id), Ok(()));
        assert_eq!(
            store.cancel_extension(None, "nope").unwrap_err().code,
            -32602
        );
    }

    #[test]
    fn a_not_found_error_quotes_a_long_id_once_and_bounded() {
        let clock = Arc::new(ManualClock::new());
        let store = store(&clock);
        let id = "i".repeat(100);
        let error = store.get(None, &id).unwrap_err();
        assert!(error.message.len() < 90, "{}", error.message);
        assert_eq!(
            error.message.matches("task").count(),
            1,
            "{}",
            error.message
        );
    }
}
