//! Where tasks and their push-notification configs live: the [`TaskStore`] trait and its
//! bounded in-memory default. The store owns persistence, listing order (most recently updated
//! first, with an opaque cursor so pages stay stable while new tasks arrive) and the bounds on
//! what it keeps ([`TaskLimits`]), and remembers each task's [`Owner`]; lifecycle rules, and
//! who may see a task, are the service's.
//!
//! A task whose work has settled (finished, or waiting for input) is kept for
//! [`TaskLimits::retention`] and may be dropped sooner, oldest first, to make room for new work
//! of the same owner (or, at the global bounds, of anyone); a task still working is never
//! dropped, so a bound only live work fills is a refusal: `429` for one owner's share, `503`
//! for the store's.

use std::collections::{BTreeMap, HashMap};
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::stream::BoxStream;
use protocols_runtime::hardening::Principal;
use protocols_runtime::store::StoreFuture;
use protocols_runtime::{Clock, SystemClock};
use tokio_util::sync::CancellationToken;

use crate::error::A2aError;
use crate::executor::{ends_stream, is_terminal};
use crate::v1::types::{
    Artifact, Message, Part, PartContent, StreamResponse, Task, TaskPushNotificationConfig,
    TaskState,
};

/// Who a task belongs to: for the per-owner bounds, and for who may see it (to any other owner
/// it does not exist).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Owner {
    /// An authenticated principal, by subject.
    Subject(Arc<str>),
    /// An anonymous caller, by the address it called from.
    Peer(IpAddr),
    /// An anonymous caller whose address is unknown (a router served without connect info).
    Anonymous,
}

impl Owner {
    /// The principal's subject when the caller authenticated, else its address, else the one
    /// anonymous owner.
    pub fn of(principal: Option<&Principal>, peer: Option<SocketAddr>) -> Self {
        match (principal, peer) {
            (Some(principal), _) => Self::Subject(Arc::clone(&principal.subject)),
            (None, Some(peer)) => Self::Peer(peer.ip()),
            (None, None) => Self::Anonymous,
        }
    }
}

/// The bounds a [`MemoryTaskStore`] keeps to. Bytes are what the tasks hold (history, artifacts
/// and push configs included), counted close to their JSON size.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct TaskLimits {
    /// Tasks kept in all.
    pub max_tasks: usize,
    /// Bytes kept in all.
    pub max_bytes: usize,
    /// Tasks kept for one owner.
    pub max_tasks_per_owner: usize,
    /// Bytes kept for one owner.
    pub max_bytes_per_owner: usize,
    /// How long a settled task (finished, or waiting for input) is kept after its last change.
    pub retention: Duration,
    /// Push-notification configs one task may have.
    pub max_push_configs_per_task: usize,
    /// The wait a refusal suggests (`Retry-After`).
    pub retry_after: Duration,
}

protocols_runtime::config_setters!(TaskLimits {
    max_tasks: usize,
    max_bytes: usize,
    max_tasks_per_owner: usize,
    max_bytes_per_owner: usize,
    retention: Duration,
    max_push_configs_per_task: usize,
    retry_after: Duration,
});

impl Default for TaskLimits {
    fn default() -> Self {
        Self {
            max_tasks: 10_000,
            max_bytes: 256 * 1024 * 1024,
            max_tasks_per_owner: 1_000,
            max_bytes_per_owner: 32 * 1024 * 1024,
            retention: Duration::from_secs(60 * 60),
            max_push_configs_per_task: 10,
            retry_after: Duration::from_secs(5),
        }
    }
}

/// What a listing filters on.
#[derive(Debug, Clone, Default)]
pub struct TaskFilter {
    /// Only this owner's tasks (`None`: every owner's).
    pub owner: Option<Owner>,
    /// Only tasks of this context.
    pub context_id: Option<String>,
    /// Only tasks in this state.
    pub state: Option<TaskState>,
    /// Only tasks whose status changed at or after this instant.
    pub updated_after: Option<chrono::DateTime<chrono::Utc>>,
}

/// One page of a listing.
#[derive(Debug, Clone, Default)]
pub struct TaskPage {
    /// The tasks of this page, in listing order.
    pub tasks: Vec<Task>,
    /// Where the next page starts; `None` on the last page.
    pub next_cursor: Option<u64>,
    /// How many tasks match the filter in all.
    pub total: usize,
}

/// A store's answer: ready at once for [`MemoryTaskStore`] (no allocation), a boxed future for
/// a network store; a store that cannot be reached answers [`A2aError::Unavailable`] (a `503`
/// on either binding), never "task not found".
pub type TaskFuture<'a, T> = StoreFuture<'a, Result<T, A2aError>>;

/// A task's change: applied to the stored task, possibly more than once (a network store
/// retries it on the newest copy when another replica changed the task meanwhile).
pub type TaskChange<'a> = &'a mut (dyn FnMut(&mut Task) + Send);

/// Persistence for tasks and push configs. Object-safe so a deployment can pick a shared
/// implementation at start-up; async and fallible so that implementation may be a network
/// store.
pub trait TaskStore: Send + Sync + 'static {
    /// Stores a new task of `owner`; refused when the owner's share or the store is full of
    /// work that cannot be dropped.
    fn insert<'a>(&'a self, task: Task, owner: &'a Owner) -> TaskFuture<'a, ()>;

    /// The task with this id, if there is one.
    fn get<'a>(&'a self, id: &'a str) -> TaskFuture<'a, Option<Task>>;

    /// The task with this id and who it belongs to, if there is one.
    fn get_owned<'a>(&'a self, id: &'a str) -> TaskFuture<'a, Option<(Task, Owner)>>;

    /// Changes a task in place, atomically; returns the changed task. A change that grows a
    /// task past a bound is refused, unless it ends the task (so every task can finish).
    fn update<'a>(&'a self, id: &'a str, change: TaskChange<'a>) -> TaskFuture<'a, Task>;

    /// Most recently updated first; `cursor` is a page's `next_cursor`.
    fn list<'a>(
        &'a self,
        filter: &'a TaskFilter,
        cursor: Option<u64>,
        page_size: usize,
    ) -> TaskFuture<'a, TaskPage>;

    /// Stores (or replaces, by id) a push config of an existing task.
    fn put_push_config(&self, config: TaskPushNotificationConfig) -> TaskFuture<'_, ()>;

    /// The push configurations of a task.
    fn push_configs<'a>(
        &'a self,
        task_id: &'a str,
    ) -> TaskFuture<'a, Vec<TaskPushNotificationConfig>>;

    /// Removes a config; `false` when there was none.
    fn delete_push_config<'a>(
        &'a self,
        task_id: &'a str,
        config_id: &'a str,
    ) -> TaskFuture<'a, bool>;

    /// The live side of a store several replicas share; `None` (the default): tasks run and
    /// are watched in this process only, through its own channels.
    fn shared(&self) -> Option<&dyn SharedTasks> {
        None
    }
}

/// A task's live events as a shared store delivers them; ends when the store can no longer
/// read them (the subscriber's stream then ends too).
pub type LiveEvents = BoxStream<'static, StreamResponse>;

/// What a store shared by replicas adds to [`TaskStore`]: the tasks' live events, readable on
/// every replica, and cancellation that reaches the replica running a task's executor. With
/// it, `SubscribeToTask` and `CancelTask` work on any replica.
pub trait SharedTasks: Send + Sync {
    /// Changes a task like [`TaskStore::update`] and, in the same step, appends the event
    /// `announce` builds from the changed task (`None`: no event) to the task's live events;
    /// answers the changed task and its push configs (read with it, so notifying its webhooks
    /// costs no further read).
    fn update_announcing<'a>(
        &'a self,
        id: &'a str,
        change: TaskChange<'a>,
        announce: &'a (dyn Fn(&Task) -> Option<StreamResponse> + Sync),
    ) -> TaskFuture<'a, (Task, Vec<TaskPushNotificationConfig>)>;

    /// The task as it stands, and every event announced after that state, in order; `None`
    /// when there is no such task.
    fn subscribe<'a>(&'a self, id: &'a str) -> TaskFuture<'a, Option<(Task, LiveEvents)>>;

    /// Asks whichever replica runs the task's executor to fire its cancellation.
    fn request_cancel<'a>(&'a self, id: &'a str) -> TaskFuture<'a, ()>;

    /// Fires `token` when any replica asks for the task's cancellation, until
    /// [`Self::unwatch_cancel`].
    fn watch_cancel(&self, id: &str, token: CancellationToken);

    /// Stops watching for the task's cancellation (its executor returned).
    fn unwatch_cancel(&self, id: &str);
}

/// Where a settled task sits in the eviction order: when it settled, then a sequence number.
type SettledKey = (Instant, u64);

#[derive(Debug)]
struct Entry {
    task: Task,
    push: Vec<TaskPushNotificationConfig>,
    owner: Owner,
    /// The task's and its push configs' JSON size.
    bytes: usize,
    /// Its key in the listing order.
    order: u64,
    settled: Option<SettledKey>,
}

/// One owner's share.
#[derive(Debug, Default)]
struct Usage {
    tasks: usize,
    bytes: usize,
    settled: BTreeMap<SettledKey, String>,
}

#[derive(Debug, Default)]
struct Tables {
    tasks: HashMap<String, Entry>,
    /// Listing sequence → task id; a task moves to the front when its status changes.
    order: BTreeMap<u64, String>,
    /// Every settled task, oldest first.
    settled: BTreeMap<SettledKey, String>,
    owners: HashMap<Owner, Usage>,
    bytes: usize,
    next_sequence: u64,
}

/// The in-memory [`TaskStore`], bounded by its [`TaskLimits`].
pub struct MemoryTaskStore {
    limits: TaskLimits,
    clock: Arc<dyn Clock>,
    tables: Mutex<Tables>,
}

impl std::fmt::Debug for MemoryTaskStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryTaskStore")
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl Default for MemoryTaskStore {
    fn default() -> Self {
        Self::with_limits(TaskLimits::default())
    }
}

impl MemoryTaskStore {
    /// A store with the default [`TaskLimits`].
    pub fn new() -> Self {
        Self::default()
    }

    /// A store with these limits.
    pub fn with_limits(limits: TaskLimits) -> Self {
        Self {
            limits,
            clock: Arc::new(SystemClock),
            tables: Mutex::new(Tables::default()),
        }
    }

    /// Tells the time to retention decisions with `clock` (tests move it by hand).
    #[must_use]
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// The limits the store keeps to.
    pub fn limits(&self) -> &TaskLimits {
        &self.limits
    }

    /// How many tasks and bytes the store keeps now, after dropping expired tasks.
    pub fn usage(&self) -> (usize, usize) {
        self.with(|tables| (tables.tasks.len(), tables.bytes))
            .unwrap_or_default()
    }

    /// Runs `work` on the tables once expired tasks are gone.
    fn with<R>(&self, work: impl FnOnce(&mut Tables) -> R) -> Result<R, A2aError> {
        let mut tables = self.tables.lock().map_err(|_| A2aError::Internal)?;
        tables.expire(self.clock.now(), self.limits.retention);
        Ok(work(&mut tables))
    }
}

/// What each message, part, artifact and config adds beside its text: roughly its JSON keys,
/// punctuation and state names.
const ITEM_OVERHEAD: usize = 64;

/// The bytes a task and its push configs hold: the length of every string (ids, texts, names,
/// URLs) and of every structured value's strings and keys, plus [`ITEM_OVERHEAD`] per item —
/// close to their JSON size, counted without writing it (a task of megabytes is counted in
/// steps per part, not per byte).
fn entry_size(task: &Task, push: &[TaskPushNotificationConfig]) -> usize {
    let status = task.status.message.as_ref().map_or(0, message_size);
    task.id.len()
        + optional(task.context_id.as_ref())
        + map_size(&task.metadata)
        + status
        + task.history.iter().map(message_size).sum::<usize>()
        + task.artifacts.iter().map(artifact_size).sum::<usize>()
        + push.iter().map(push_config_size).sum::<usize>()
        + ITEM_OVERHEAD
}

fn optional(text: Option<&String>) -> usize {
    text.map_or(0, String::len)
}

fn strings(texts: &[String]) -> usize {
    texts.iter().map(String::len).sum()
}

fn message_size(message: &Message) -> usize {
    message.message_id.len()
        + optional(message.context_id.as_ref())
        + optional(message.task_id.as_ref())
        + strings(&message.extensions)
        + strings(&message.reference_task_ids)
        + map_size(&message.metadata)
        + message.parts.iter().map(part_size).sum::<usize>()
        + ITEM_OVERHEAD
}

fn part_size(part: &Part) -> usize {
    let content = match &part.content {
        PartContent::Text(text) | PartContent::Raw(text) | PartContent::Url(text) => text.len(),
        PartContent::Data(value) => value_size(value),
    };
    content
        + optional(part.filename.as_ref())
        + optional(part.media_type.as_ref())
        + map_size(&part.metadata)
        + ITEM_OVERHEAD
}

fn artifact_size(artifact: &Artifact) -> usize {
    artifact.artifact_id.len()
        + optional(artifact.name.as_ref())
        + optional(artifact.description.as_ref())
        + strings(&artifact.extensions)
        + map_size(&artifact.metadata)
        + artifact.parts.iter().map(part_size).sum::<usize>()
        + ITEM_OVERHEAD
}

fn push_config_size(config: &TaskPushNotificationConfig) -> usize {
    let authentication = config.authentication.as_ref().map_or(0, |auth| {
        auth.scheme.len() + optional(auth.credentials.as_ref())
    });
    config.url.len()
        + optional(config.id.as_ref())
        + optional(config.task_id.as_ref())
        + optional(config.token.as_ref())
        + optional(config.tenant.as_ref())
        + authentication
        + ITEM_OVERHEAD
}

fn map_size(map: &serde_json::Map<String, serde_json::Value>) -> usize {
    map.iter()
        .map(|(key, value)| key.len() + value_size(value))
        .sum()
}

/// A structured value's strings and keys, and a few bytes for each other node; iterative, so a
/// deeply nested value cannot exhaust the stack.
fn value_size(value: &serde_json::Value) -> usize {
    use serde_json::Value;
    let mut size = 0;
    let mut pending = vec![value];
    while let Some(value) = pending.pop() {
        size += match value {
            Value::String(text) => text.len() + 2,
            Value::Array(items) => {
                pending.extend(items);
                2
            }
            Value::Object(fields) => {
                for (key, value) in fields {
                    size += key.len() + 4;
                    pending.push(value);
                }
                2
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => 8,
        };
    }
    size
}

impl Tables {
    fn next(&mut self) -> u64 {
        self.next_sequence += 1;
        self.next_sequence
    }

    /// Drops every settled task whose retention has run out.
    fn expire(&mut self, now: Instant, retention: Duration) {
        while let Some((&(settled_at, _), id)) = self.settled.first_key_value() {
            if settled_at + retention > now {
                break;
            }
            let id = id.clone();
            self.remove(&id);
        }
    }

    fn remove(&mut self, id: &str) -> Option<Entry> {
        let mut entry = self.tasks.remove(id)?;
        self.order.remove(&entry.order);
        self.unsettle(&mut entry);
        self.bytes = self.bytes.saturating_sub(entry.bytes);
        if let Some(usage) = self.owners.get_mut(&entry.owner) {
            usage.tasks = usage.tasks.saturating_sub(1);
            usage.bytes = usage.bytes.saturating_sub(entry.bytes);
            if usage.tasks == 0 {
                self.owners.remove(&entry.owner);
            }
        }
        Some(entry)
    }

    /// Takes a task out of the eviction order (while it changes, or for good); returns where
    /// it was.
    fn unsettle(&mut self, entry: &mut Entry) -> Option<SettledKey> {
        let key = entry.settled.take()?;
        self.settled.remove(&key);
        if let Some(usage) = self.owners.get_mut(&entry.owner) {
            usage.settled.remove(&key);
        }
        Some(key)
    }

    /// Puts a task whose work has settled into the eviction order, as settled `now`.
    fn settle(&mut self, entry: &mut Entry, now: Instant) {
        if ends_stream(entry.task.status.state) {
            let key = (now, self.next());
            self.settle_at(entry, key);
        }
    }

    fn settle_at(&mut self, entry: &mut Entry, key: SettledKey) {
        self.settled.insert(key, entry.task.id.clone());
        self.owners
            .entry(entry.owner.clone())
            .or_default()
            .settled
            .insert(key, entry.task.id.clone());
        entry.settled = Some(key);
    }

    /// Drops settled tasks, oldest first, until `owner` can keep `tasks` more tasks and `bytes`
    /// more bytes within its share and the store's; refuses when only live work is left.
    fn make_room(
        &mut self,
        limits: &TaskLimits,
        owner: &Owner,
        tasks: usize,
        bytes: usize,
    ) -> Result<(), A2aError> {
        loop {
            let (owned_tasks, owned_bytes) = self
                .owners
                .get(owner)
                .map_or((0, 0), |usage| (usage.tasks, usage.bytes));
            if owned_tasks + tasks <= limits.max_tasks_per_owner
                && owned_bytes + bytes <= limits.max_bytes_per_owner
            {
                break;
            }
            let oldest = self
                .owners
                .get(owner)
                .and_then(|usage| usage.settled.first_key_value())
                .map(|(_, id)| id.clone());
            let Some(oldest) = oldest else {
                return Err(A2aError::exhausted(
                    "this caller's share of tasks is full of unfinished work",
                    limits.retry_after,
                ));
            };
            self.remove(&oldest);
        }
        while self.tasks.len() + tasks > limits.max_tasks || self.bytes + bytes > limits.max_bytes {
            let Some((_, oldest)) = self.settled.first_key_value() else {
                return Err(A2aError::unavailable(
                    "the agent's task store is full of unfinished work",
                    limits.retry_after,
                ));
            };
            let oldest = oldest.clone();
            self.remove(&oldest);
        }
        Ok(())
    }

    /// Replaces a task's content (task and push configs), keeping the bounds unless the new
    /// task is terminal; moves it to the front of the listing when its status changed.
    fn replace(
        &mut self,
        limits: &TaskLimits,
        now: Instant,
        id: &str,
        task: Task,
        push: Vec<TaskPushNotificationConfig>,
    ) -> Result<Task, A2aError> {
        let mut entry = self
            .tasks
            .remove(id)
            .ok_or_else(|| A2aError::task_not_found(id))?;
        // Out of the eviction order while it changes, so making room cannot drop it.
        let was_settled = self.unsettle(&mut entry);
        let bytes = entry_size(&task, &push);
        let growth = bytes.saturating_sub(entry.bytes);
        if growth > 0
            && !is_terminal(task.status.state)
            && let Err(error) = self.make_room(limits, &entry.owner, 0, growth)
        {
            if let Some(key) = was_settled {
                self.settle_at(&mut entry, key);
            }
            self.tasks.insert(id.to_owned(), entry);
            return Err(error);
        }
        if task.status.timestamp != entry.task.status.timestamp {
            self.order.remove(&entry.order);
            entry.order = self.next();
            self.order.insert(entry.order, id.to_owned());
        }
        self.bytes = self.bytes.saturating_sub(entry.bytes) + bytes;
        if let Some(usage) = self.owners.get_mut(&entry.owner) {
            usage.bytes = usage.bytes.saturating_sub(entry.bytes) + bytes;
        }
        entry.bytes = bytes;
        entry.task = task;
        entry.push = push;
        self.settle(&mut entry, now);
        let changed = entry.task.clone();
        self.tasks.insert(id.to_owned(), entry);
        Ok(changed)
    }
}

fn matches(filter: &TaskFilter, entry: &Entry) -> bool {
    let task = &entry.task;
    filter
        .owner
        .as_ref()
        .is_none_or(|owner| *owner == entry.owner)
        && filter
            .context_id
            .as_ref()
            .is_none_or(|context| task.context_id.as_ref() == Some(context))
        && filter.state.is_none_or(|state| task.status.state == state)
        && filter.updated_after.is_none_or(|after| {
            task.status
                .timestamp
                .is_some_and(|timestamp| timestamp >= after)
        })
}

/// The answers, known at once; the trait below hands them out as ready futures.
impl MemoryTaskStore {
    fn insert_now(&self, task: Task, owner: &Owner) -> Result<(), A2aError> {
        let now = self.clock.now();
        let limits = &self.limits;
        self.with(|tables| {
            let bytes = entry_size(&task, &[]);
            if bytes > limits.max_bytes_per_owner {
                return Err(A2aError::exhausted(
                    "the task is larger than one caller may keep",
                    limits.retry_after,
                ));
            }
            tables.make_room(limits, owner, 1, bytes)?;
            let order = tables.next();
            let id = task.id.clone();
            let mut entry = Entry {
                task,
                push: Vec::new(),
                owner: owner.clone(),
                bytes,
                order,
                settled: None,
            };
            tables.settle(&mut entry, now);
            tables.order.insert(order, id.clone());
            tables.bytes += bytes;
            let usage = tables.owners.entry(owner.clone()).or_default();
            usage.tasks += 1;
            usage.bytes += bytes;
            tables.tasks.insert(id, entry);
            Ok(())
        })?
    }

    fn get_now(&self, id: &str) -> Option<Task> {
        self.with(|tables| tables.tasks.get(id).map(|entry| entry.task.clone()))
            .ok()
            .flatten()
    }

    #[cfg(test)]
    fn owner_now(&self, id: &str) -> Option<Owner> {
        self.with(|tables| tables.tasks.get(id).map(|entry| entry.owner.clone()))
            .ok()
            .flatten()
    }

    fn update_now(&self, id: &str, change: TaskChange<'_>) -> Result<Task, A2aError> {
        let now = self.clock.now();
        self.with(|tables| {
            let entry = tables
                .tasks
                .get(id)
                .ok_or_else(|| A2aError::task_not_found(id))?;
            let mut task = entry.task.clone();
            let push = entry.push.clone();
            change(&mut task);
            tables.replace(&self.limits, now, id, task, push)
        })?
    }

    fn list_now(&self, filter: &TaskFilter, cursor: Option<u64>, page_size: usize) -> TaskPage {
        self.with(|tables| {
            let matching: Vec<(u64, &Task)> = tables
                .order
                .iter()
                .rev()
                .filter_map(|(sequence, id)| {
                    let entry = tables.tasks.get(id)?;
                    matches(filter, entry).then_some((*sequence, &entry.task))
                })
                .collect();
            let total = matching.len();
            let mut after_cursor = matching
                .into_iter()
                .filter(|(sequence, _)| cursor.is_none_or(|cursor| *sequence < cursor));
            let tasks: Vec<(u64, Task)> = after_cursor
                .by_ref()
                .take(page_size)
                .map(|(sequence, task)| (sequence, task.clone()))
                .collect();
            let more = after_cursor.next().is_some();
            TaskPage {
                next_cursor: tasks.last().filter(|_| more).map(|(sequence, _)| *sequence),
                tasks: tasks.into_iter().map(|(_, task)| task).collect(),
                total,
            }
        })
        .unwrap_or_default()
    }

    fn put_push_config_now(&self, config: TaskPushNotificationConfig) -> Result<(), A2aError> {
        let now = self.clock.now();
        let limits = &self.limits;
        let task_id = config.task_id.clone().unwrap_or_default();
        self.with(|tables| {
            let entry = tables
                .tasks
                .get(&task_id)
                .ok_or_else(|| A2aError::task_not_found(&task_id))?;
            let mut push = entry.push.clone();
            push.retain(|existing| existing.id != config.id);
            if push.len() >= limits.max_push_configs_per_task {
                return Err(A2aError::exhausted(
                    &format!(
                        "a task has at most {} push notification configs",
                        limits.max_push_configs_per_task
                    ),
                    limits.retry_after,
                ));
            }
            push.push(config);
            let task = entry.task.clone();
            tables
                .replace(limits, now, &task_id, task, push)
                .map(|_| ())
        })?
    }

    fn push_configs_now(&self, task_id: &str) -> Vec<TaskPushNotificationConfig> {
        self.with(|tables| {
            tables
                .tasks
                .get(task_id)
                .map(|entry| entry.push.clone())
                .unwrap_or_default()
        })
        .unwrap_or_default()
    }

    fn delete_push_config_now(&self, task_id: &str, config_id: &str) -> bool {
        let now = self.clock.now();
        self.with(|tables| {
            let Some(entry) = tables.tasks.get(task_id) else {
                return false;
            };
            let mut push = entry.push.clone();
            let before = push.len();
            push.retain(|config| config.id.as_deref() != Some(config_id));
            if push.len() == before {
                return false;
            }
            let task = entry.task.clone();
            tables
                .replace(&self.limits, now, task_id, task, push)
                .is_ok()
        })
        .unwrap_or(false)
    }
}

impl TaskStore for MemoryTaskStore {
    fn insert<'a>(&'a self, task: Task, owner: &'a Owner) -> TaskFuture<'a, ()> {
        StoreFuture::ready(self.insert_now(task, owner))
    }

    fn get<'a>(&'a self, id: &'a str) -> TaskFuture<'a, Option<Task>> {
        StoreFuture::ready(Ok(self.get_now(id)))
    }

    fn get_owned<'a>(&'a self, id: &'a str) -> TaskFuture<'a, Option<(Task, Owner)>> {
        let owned = self
            .with(|tables| {
                tables
                    .tasks
                    .get(id)
                    .map(|entry| (entry.task.clone(), entry.owner.clone()))
            })
            .ok()
            .flatten();
        StoreFuture::ready(Ok(owned))
    }

    fn update<'a>(&'a self, id: &'a str, change: TaskChange<'a>) -> TaskFuture<'a, Task> {
        StoreFuture::ready(self.update_now(id, change))
    }

    fn list<'a>(
        &'a self,
        filter: &'a TaskFilter,
        cursor: Option<u64>,
        page_size: usize,
    ) -> TaskFuture<'a, TaskPage> {
        StoreFuture::ready(Ok(self.list_now(filter, cursor, page_size)))
    }

    fn put_push_config(&self, config: TaskPushNotificationConfig) -> TaskFuture<'_, ()> {
        StoreFuture::ready(self.put_push_config_now(config))
    }

    fn push_configs<'a>(
        &'a self,
        task_id: &'a str,
    ) -> TaskFuture<'a, Vec<TaskPushNotificationConfig>> {
        StoreFuture::ready(Ok(self.push_configs_now(task_id)))
    }

    fn delete_push_config<'a>(
        &'a self,
        task_id: &'a str,
        config_id: &'a str,
    ) -> TaskFuture<'a, bool> {
        StoreFuture::ready(Ok(self.delete_push_config_now(task_id, config_id)))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::indexing_slicing)]

    use super::*;
    use crate::v1::types::TaskStatus;
    use protocols_runtime::ManualClock;

    fn task(id: &str, context: &str) -> Task {
        Task {
            artifacts: Vec::new(),
            context_id: Some(context.into()),
            history: Vec::new(),
            id: id.into(),
            metadata: serde_json::Map::new(),
            status: TaskStatus::default(),
        }
    }

    fn finished(id: &str) -> Task {
        let mut task = task(id, "c");
        task.status.state = TaskState::TaskStateCompleted;
        task
    }

    fn working(id: &str) -> Task {
        let mut task = task(id, "c");
        task.status.state = TaskState::TaskStateWorking;
        task
    }

    const ME: Owner = Owner::Anonymous;

    #[test]
    fn pages_walk_every_task_newest_first_without_repeats() {
        let store = MemoryTaskStore::new();
        for n in 0..5 {
            store.insert_now(task(&format!("t{n}"), "c"), &ME).unwrap();
        }
        let first = store.list_now(&TaskFilter::default(), None, 2);
        assert_eq!(first.total, 5);
        let ids = |page: &TaskPage| page.tasks.iter().map(|t| t.id.clone()).collect::<Vec<_>>();
        assert_eq!(ids(&first), ["t4", "t3"]);
        // A task created between pages does not shift the cursor.
        store.insert_now(task("t5", "c"), &ME).unwrap();
        let second = store.list_now(&TaskFilter::default(), first.next_cursor, 2);
        assert_eq!(ids(&second), ["t2", "t1"]);
        let third = store.list_now(&TaskFilter::default(), second.next_cursor, 2);
        assert_eq!(ids(&third), ["t0"]);
        assert_eq!(third.next_cursor, None);
    }

    #[test]
    fn a_task_whose_status_changes_is_listed_first() {
        let store = MemoryTaskStore::new();
        store.insert_now(task("old", "c"), &ME).unwrap();
        store.insert_now(task("new", "c"), &ME).unwrap();
        store
            .update_now("old", &mut |task| {
                task.status.timestamp = Some(chrono::Utc::now());
            })
            .unwrap();
        let page = store.list_now(&TaskFilter::default(), None, 10);
        assert_eq!(page.tasks[0].id, "old");
    }

    #[test]
    fn listing_filters_by_context() {
        let store = MemoryTaskStore::new();
        store.insert_now(task("a", "one"), &ME).unwrap();
        store.insert_now(task("b", "two"), &ME).unwrap();
        let filter = TaskFilter {
            context_id: Some("two".into()),
            ..TaskFilter::default()
        };
        let page = store.list_now(&filter, None, 10);
        assert_eq!(page.total, 1);
        assert_eq!(page.tasks[0].id, "b");
    }

    #[test]
    fn listing_shows_only_the_filters_owner_and_the_store_remembers_each_owner() {
        let store = MemoryTaskStore::new();
        let alice = Owner::Subject("alice".into());
        store.insert_now(task("a", "c"), &alice).unwrap();
        store
            .insert_now(task("b", "c"), &Owner::Subject("bob".into()))
            .unwrap();
        store.insert_now(task("n", "c"), &ME).unwrap();
        let listed = |owner: Option<Owner>| {
            let filter = TaskFilter {
                owner,
                ..TaskFilter::default()
            };
            let page = store.list_now(&filter, None, 10);
            page.tasks.iter().map(|t| t.id.clone()).collect::<Vec<_>>()
        };
        assert_eq!(listed(Some(alice.clone())), ["a"]);
        assert_eq!(listed(Some(ME)), ["n"]);
        assert_eq!(listed(None), ["n", "b", "a"]);
        assert_eq!(store.owner_now("a"), Some(alice));
        assert_eq!(store.owner_now("missing"), None);
    }

    #[test]
    fn push_config_for_unknown_task_is_task_not_found() {
        let store = MemoryTaskStore::new();
        let config = TaskPushNotificationConfig {
            task_id: Some("nope".into()),
            ..TaskPushNotificationConfig::default()
        };
        assert!(matches!(
            store.put_push_config_now(config),
            Err(A2aError::TaskNotFound(_))
        ));
    }

    #[test]
    fn a_finished_task_is_dropped_once_its_retention_runs_out() {
        let clock = Arc::new(ManualClock::new());
        let store = MemoryTaskStore::with_limits(TaskLimits {
            retention: Duration::from_secs(60),
            ..TaskLimits::default()
        })
        .with_clock(Arc::clone(&clock) as Arc<dyn Clock>);
        store.insert_now(finished("done"), &ME).unwrap();
        store.insert_now(working("busy"), &ME).unwrap();
        clock.advance(Duration::from_secs(59));
        assert!(store.get_now("done").is_some());
        clock.advance(Duration::from_secs(2));
        assert!(store.get_now("done").is_none());
        assert!(
            store.get_now("busy").is_some(),
            "live work is never dropped"
        );
        assert_eq!(store.usage().0, 1);
    }

    #[test]
    fn an_owner_at_its_task_cap_drops_its_oldest_finished_task_then_is_refused_with_429() {
        let store = MemoryTaskStore::with_limits(TaskLimits {
            max_tasks_per_owner: 2,
            ..TaskLimits::default()
        });
        let other = Owner::Subject("other".into());
        store.insert_now(finished("theirs"), &other).unwrap();
        store.insert_now(finished("first"), &ME).unwrap();
        store.insert_now(working("second"), &ME).unwrap();
        store.insert_now(working("third"), &ME).unwrap();
        assert!(store.get_now("first").is_none());
        assert!(
            store.get_now("theirs").is_some(),
            "another owner's task stays"
        );
        let refused = store.insert_now(working("fourth"), &ME).unwrap_err();
        assert_eq!(refused.status(), http::StatusCode::TOO_MANY_REQUESTS);
        assert!(refused.retry_after().is_some());
    }

    #[test]
    fn the_store_full_of_live_work_refuses_with_503() {
        let store = MemoryTaskStore::with_limits(TaskLimits {
            max_tasks: 2,
            ..TaskLimits::default()
        });
        store
            .insert_now(working("a"), &Owner::Subject("x".into()))
            .unwrap();
        store
            .insert_now(working("b"), &Owner::Subject("y".into()))
            .unwrap();
        let refused = store
            .insert_now(working("c"), &Owner::Subject("z".into()))
            .unwrap_err();
        assert_eq!(refused.status(), http::StatusCode::SERVICE_UNAVAILABLE);
    }

    #[test]
    fn bytes_are_bounded_per_owner_and_a_change_past_the_bound_is_refused_unless_it_ends_the_task()
    {
        let store = MemoryTaskStore::with_limits(TaskLimits {
            max_bytes_per_owner: 4_000,
            ..TaskLimits::default()
        });
        store.insert_now(working("t"), &ME).unwrap();
        let grow = |task: &mut Task| task.metadata.insert("pad".into(), "x".repeat(5_000).into());
        let refused = store
            .update_now("t", &mut |task| {
                grow(task);
            })
            .unwrap_err();
        assert_eq!(refused.status(), http::StatusCode::TOO_MANY_REQUESTS);
        assert!(
            store.get_now("t").unwrap().metadata.is_empty(),
            "nothing lost"
        );
        let ended = store
            .update_now("t", &mut |task| {
                grow(task);
                task.status.state = TaskState::TaskStateFailed;
            })
            .unwrap();
        assert!(is_terminal(ended.status.state));
        // The finished task is the first to go when its owner needs room.
        store.insert_now(working("next"), &ME).unwrap();
        assert!(store.get_now("t").is_none());
        assert!(store.usage().1 <= 4_000);
    }

    #[test]
    fn push_configs_per_task_are_bounded() {
        let store = MemoryTaskStore::with_limits(TaskLimits {
            max_push_configs_per_task: 2,
            ..TaskLimits::default()
        });
        store.insert_now(working("t"), &ME).unwrap();
        let config = |id: &str| TaskPushNotificationConfig {
            id: Some(id.into()),
            task_id: Some("t".into()),
            url: "https://example.com/hook".into(),
            ..TaskPushNotificationConfig::default()
        };
        store.put_push_config_now(config("a")).unwrap();
        store.put_push_config_now(config("b")).unwrap();
        // Replacing one by id is not adding one.
        store.put_push_config_now(config("b")).unwrap();
        let refused = store.put_push_config_now(config("c")).unwrap_err();
        assert_eq!(refused.status(), http::StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(store.push_configs_now("t").len(), 2);
    }
}
