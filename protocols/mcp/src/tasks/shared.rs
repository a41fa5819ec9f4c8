//! The seam under [`TaskStore`](super::TaskStore) that a store shared by replicas implements
//! ([`TaskRecords`]), so a 2025-11-25 task created on one replica is read, listed, awaited and
//! cancelled through any other. The records hold what every replica must agree on (owner,
//! status, timestamps, TTL, the outcome once terminal); what cannot leave a process (the work's
//! cancellation token) stays with the replica running it, which learns of a cancellation made
//! elsewhere by watching its record (see [`watch`]).

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use protocols_runtime::ErrorObject;
use protocols_runtime::session::{StoreError, StoreFuture};
use tokio_util::sync::CancellationToken;

use super::{Outcome, TaskLimits, TaskStatus, is_terminal};
use crate::errors::STORE_UNAVAILABLE;

/// What a shared store keeps of one task, the outcome apart.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TaskRecord {
    /// The task's id.
    pub id: String,
    /// Who may see it: a session, an authenticated caller, or `None` for anonymous callers.
    pub owner: Option<String>,
    /// Its status.
    pub status: TaskStatus,
    /// Why it is in that status, when said.
    pub status_message: Option<String>,
    /// When it was created.
    pub created_at: SystemTime,
    /// When its status last moved.
    pub updated_at: SystemTime,
    /// How long it lives from its creation: the store forgets it then.
    pub ttl: Duration,
}

impl TaskRecord {
    /// A record of every field.
    pub fn new(
        id: String,
        owner: Option<String>,
        status: TaskStatus,
        status_message: Option<String>,
        (created_at, updated_at): (SystemTime, SystemTime),
        ttl: Duration,
    ) -> Self {
        Self {
            id,
            owner,
            status,
            status_message,
            created_at,
            updated_at,
            ttl,
        }
    }
}

/// A record as `get` finds it, with its outcome when asked for and there is one (JSON as
/// [`encode_outcome`] wrote it).
pub type Found = (TaskRecord, Option<String>);

/// Whether a new task was admitted, or which bound refused it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// Stored.
    Admitted,
    /// The store holds [`TaskLimits::max_tasks`] live tasks; the first of them expires after
    /// the duration.
    ServerFull(Duration),
    /// The owner holds [`TaskLimits::max_tasks_per_owner`]; the first of its tasks expires
    /// after the duration.
    OwnerFull(Duration),
}

/// What `cancel` found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cancellation {
    /// The task was running and is now cancelled, as recorded.
    Cancelled(TaskRecord),
    /// The task was already terminal, in this status.
    Terminal(TaskStatus),
    /// No such task for this owner (never created, another owner's, or expired).
    Missing,
}

/// One `tasks/list` page: the records, and the sequence to continue after when there are more.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RecordPage {
    /// The page's records, oldest first.
    pub records: Vec<TaskRecord>,
    /// The sequence of the page's last record when more follow.
    pub next: Option<u64>,
}

/// Task records shared by replicas (2025-11-25 tasks): a network store implements it and
/// [`TaskStore::shared`](super::TaskStore::shared) serves tasks from it. Every answer is a
/// [`StoreFuture`]; an `Err` is the store failing (a `-32017` JSON-RPC error to the client,
/// [`STORE_UNAVAILABLE`]), never "no such task". Each record expires on its own, `ttl` after
/// its creation, without anyone asking.
pub trait TaskRecords: Send + Sync + 'static {
    /// Stores a new `working` record for `record.owner` unless a bound of `limits` is reached
    /// (counted over every replica). The record's list order comes after every earlier task of
    /// its owner.
    fn create<'a>(
        &'a self,
        record: &'a TaskRecord,
        limits: &'a TaskLimits,
    ) -> StoreFuture<'a, Result<Admission, StoreError>>;

    /// The record of task `id`, and its outcome (JSON as [`encode_outcome`] wrote it) when
    /// `with_outcome` and it has one; `None` once it expired or never was.
    fn get<'a>(
        &'a self,
        id: &'a str,
        with_outcome: bool,
    ) -> StoreFuture<'a, Result<Option<Found>, StoreError>>;

    /// Up to `limit` live records of `owner` created after the one at sequence `after` (from
    /// the first when `None`), oldest first.
    fn list<'a>(
        &'a self,
        owner: Option<&'a str>,
        after: Option<u64>,
        limit: usize,
    ) -> StoreFuture<'a, Result<RecordPage, StoreError>>;

    /// Records a running task's end: `status` (completed or failed), its message and its
    /// `outcome` (as [`encode_outcome`] wrote it), at `at`. `None` when the task is already
    /// terminal (cancelled meanwhile, perhaps on another replica) or gone: nothing is written.
    fn finish<'a>(
        &'a self,
        id: &'a str,
        status: TaskStatus,
        status_message: Option<&'a str>,
        outcome: &'a str,
        at: SystemTime,
    ) -> StoreFuture<'a, Result<Option<TaskRecord>, StoreError>>;

    /// Cancels `owner`'s task `id` if it is still running, with `message`, at `at`; checked and
    /// written in one step, so a concurrent finish and cancel cannot both win.
    fn cancel<'a>(
        &'a self,
        owner: Option<&'a str>,
        id: &'a str,
        message: &'a str,
        at: SystemTime,
    ) -> StoreFuture<'a, Result<Cancellation, StoreError>>;
}

/// An outcome as the records keep it: `{"result": …}` or `{"error": …}`.
pub fn encode_outcome(outcome: &Outcome) -> String {
    let wrapped = match outcome {
        Ok(result) => serde_json::json!({ "result": result }),
        Err(error) => serde_json::json!({ "error": error }),
    };
    wrapped.to_string()
}

/// The outcome [`encode_outcome`] wrote; `None` when the text is not one.
pub fn decode_outcome(text: &str) -> Option<Outcome> {
    let mut value: serde_json::Value = serde_json::from_str(text).ok()?;
    if let Some(result) = value.get_mut("result") {
        return Some(Ok(result.take()));
    }
    let error = value.get_mut("error")?.take();
    serde_json::from_value(error).ok().map(Err)
}

/// A shared store's failure as the client hears it (the cause goes to the log, not the wire).
pub(super) fn unavailable(error: &StoreError) -> ErrorObject {
    if matches!(error, StoreError::LimitReached) {
        return ErrorObject::new(
            crate::errors::SERVER_FULL,
            "the server keeps no more tasks now",
        );
    }
    tracing::warn!(%error, "the task store did not answer");
    ErrorObject::new(STORE_UNAVAILABLE, "the task store is unavailable")
}

/// The records, and the tasks this replica runs (their work's cancellation, by id).
pub(super) struct Shared {
    pub(super) records: Arc<dyn TaskRecords>,
    running: Mutex<HashMap<String, CancellationToken>>,
}

impl fmt::Debug for Shared {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Shared").finish_non_exhaustive()
    }
}

impl Shared {
    pub(super) fn new(records: Arc<dyn TaskRecords>) -> Self {
        Self {
            records,
            running: Mutex::default(),
        }
    }

    /// Notes the work of task `id`, running here, stopped by `cancel`.
    pub(super) fn runs(&self, id: &str, cancel: &CancellationToken) {
        if let Ok(mut running) = self.running.lock() {
            running.insert(id.to_owned(), cancel.clone());
        }
    }

    /// Whether task `id`'s work still runs here.
    fn is_running(&self, id: &str) -> bool {
        self.running
            .lock()
            .is_ok_and(|running| running.contains_key(id))
    }

    /// Forgets task `id`'s work here; answers its token when it ran here.
    pub(super) fn ended(&self, id: &str) -> Option<CancellationToken> {
        self.running.lock().ok()?.remove(id)
    }
}

/// Watches the record of task `id`, whose work runs here, every `every`: the work is cancelled
/// as soon as the record says cancelled (by any replica) or is gone (expired); the watch ends
/// when the work does (finished or cancelled here) or the record is terminal. A store outage only delays the next look: the
/// work goes on, and a finish refused by a cancelled record drops its outcome anyway.
pub(super) async fn watch(
    shared: Arc<Shared>,
    id: String,
    work: CancellationToken,
    every: Duration,
) {
    let every = every.max(Duration::from_millis(10));
    loop {
        tokio::select! {
            () = work.cancelled() => break,
            () = tokio::time::sleep(every) => {}
        }
        if !shared.is_running(&id) {
            // The work finished here (its outcome stored, or lost to an outage).
            break;
        }
        match shared.records.get(&id, false).await {
            Ok(Some((record, _))) if !is_terminal(record.status) => continue,
            Ok(Some((record, _))) => {
                if record.status == TaskStatus::Cancelled {
                    work.cancel();
                }
                break;
            }
            Ok(None) => {
                // Expired: nobody can fetch the result any more, so the work is pointless.
                work.cancel();
                break;
            }
            Err(error) => tracing::debug!(%error, task = %id, "a task's record could not be read"),
        }
    }
    shared.ended(&id);
}
