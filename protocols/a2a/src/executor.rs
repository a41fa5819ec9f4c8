//! The agent's side of a task: the [`AgentExecutor`] an application implements (what to do
//! with a message) and the [`TaskUpdater`] it reports through. Every update goes through one
//! place ([`LiveTasks::publish`]) that writes the store, wakes subscribers and queues push
//! notifications, and ignores anything sent after the task reached a terminal state.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use futures::StreamExt as _;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use crate::error::A2aError;
use crate::push::PushSender;
use crate::service::Caller;
use crate::store::{LiveEvents, TaskStore};
use crate::v1::types::{
    Artifact, Message, Part, PartContent, Role, StreamResponse, StreamResponsePayload, Task,
    TaskArtifactUpdateEvent, TaskPushNotificationConfig, TaskState, TaskStatus,
    TaskStatusUpdateEvent,
};

/// Events a live task buffers for a slow subscriber before it must resynchronise.
const EVENT_BUFFER: usize = 256;

/// What an application implements: carry out one message's work on its task.
pub trait AgentExecutor: Send + Sync + 'static {
    /// Runs the task to a final (or interrupted) state, reporting through `updater`; should
    /// return soon after `updater.cancellation()` fires.
    fn execute(&self, message: Message, updater: TaskUpdater) -> impl Future<Output = ()> + Send;
}

/// Whether no further work can happen on a task in `state`.
pub const fn is_terminal(state: TaskState) -> bool {
    matches!(
        state,
        TaskState::TaskStateCompleted
            | TaskState::TaskStateFailed
            | TaskState::TaskStateCanceled
            | TaskState::TaskStateRejected
    )
}

/// Whether a stream of the task's events ends at `state` (final, or waiting on the client).
pub const fn ends_stream(state: TaskState) -> bool {
    is_terminal(state)
        || matches!(
            state,
            TaskState::TaskStateInputRequired | TaskState::TaskStateAuthRequired
        )
}

/// An agent message with one text part.
pub fn agent_text(text: impl Into<String>, task: &Task) -> Message {
    Message {
        context_id: task.context_id.clone(),
        message_id: uuid::Uuid::new_v4().to_string(),
        parts: vec![text_part(text)],
        role: Role::RoleAgent,
        task_id: Some(task.id.clone()),
        ..Message::default()
    }
}

/// A text part.
pub fn text_part(text: impl Into<String>) -> Part {
    Part {
        content: PartContent::Text(text.into()),
        metadata: serde_json::Map::new(),
        filename: None,
        media_type: None,
    }
}

/// Every text part of a message, joined.
pub fn message_text(message: &Message) -> String {
    message
        .parts
        .iter()
        .filter_map(|part| match &part.content {
            PartContent::Text(text) => Some(text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

struct LiveTask {
    events: broadcast::Sender<StreamResponse>,
    cancel: CancellationToken,
}

/// The running tasks: their event channels and cancellation tokens. Publishing and
/// subscribing take the same lock, so a subscriber sees a snapshot and then every later event,
/// with no gap and no repeat. On a store replicas share ([`TaskStore::shared`]) the events
/// and cancellations go through the store instead, so any replica serves them.
pub struct LiveTasks {
    store: Arc<dyn TaskStore>,
    push: Option<PushSender>,
    running: Mutex<HashMap<String, LiveTask>>,
}

impl std::fmt::Debug for LiveTasks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveTasks").finish_non_exhaustive()
    }
}

/// A subscription to a task: its state when subscribed, then its events.
#[derive(Debug)]
pub struct Subscription {
    /// The task as it stood when subscribed.
    pub snapshot: Task,
    /// `None` when the task was not running (nothing more will happen).
    pub events: Option<TaskEvents>,
}

/// A task's events after a subscription's snapshot.
pub struct TaskEvents(Events);

enum Events {
    /// This process's channel of a task it runs.
    Local(broadcast::Receiver<StreamResponse>),
    /// A shared store's events, from whichever replica runs the task.
    Shared(LiveEvents),
}

impl std::fmt::Debug for TaskEvents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskEvents").finish_non_exhaustive()
    }
}

impl TaskEvents {
    /// The next event; `None` once no more will come.
    pub async fn next(&mut self) -> Option<StreamResponse> {
        match &mut self.0 {
            Events::Local(receiver) => loop {
                match receiver.recv().await {
                    Ok(event) => return Some(event),
                    Err(broadcast::error::RecvError::Lagged(skipped)) => {
                        tracing::debug!(skipped, "a slow subscriber skipped task events");
                    }
                    Err(broadcast::error::RecvError::Closed) => return None,
                }
            },
            Events::Shared(events) => events.next().await,
        }
    }
}

/// An update's event, built from the changed task.
type Announce<'a> = &'a (dyn Fn(&Task) -> StreamResponse + Sync);

impl LiveTasks {
    /// Live tasks kept in `store`, with webhooks delivered by `push` when given.
    pub fn new(store: Arc<dyn TaskStore>, push: Option<PushSender>) -> Self {
        Self {
            store,
            push,
            running: Mutex::new(HashMap::new()),
        }
    }

    /// The store tasks are kept in.
    pub fn store(&self) -> &Arc<dyn TaskStore> {
        &self.store
    }

    /// The webhook sender, when push notifications are on.
    pub fn push(&self) -> Option<&PushSender> {
        self.push.as_ref()
    }

    fn lock(&self) -> Result<std::sync::MutexGuard<'_, HashMap<String, LiveTask>>, A2aError> {
        self.running.lock().map_err(|_| A2aError::Internal)
    }

    /// Registers a stored task as running here; returns its cancellation token (fired too
    /// when another replica cancels the task, on a shared store).
    pub fn start(&self, task_id: &str) -> Result<CancellationToken, A2aError> {
        let (events, _) = broadcast::channel(EVENT_BUFFER);
        let cancel = CancellationToken::new();
        self.lock()?.insert(
            task_id.to_owned(),
            LiveTask {
                events,
                cancel: cancel.clone(),
            },
        );
        if let Some(shared) = self.store.shared() {
            shared.watch_cancel(task_id, cancel.clone());
        }
        Ok(cancel)
    }

    /// The task's current state and, if it is running, its later events.
    pub async fn subscribe(&self, task_id: &str) -> Result<Subscription, A2aError> {
        if let Some(shared) = self.store.shared() {
            let (snapshot, events) = shared
                .subscribe(task_id)
                .await?
                .ok_or_else(|| A2aError::task_not_found(task_id))?;
            return Ok(Subscription {
                snapshot,
                events: Some(TaskEvents(Events::Shared(events))),
            });
        }
        let (answer, events) = {
            let running = self.lock()?;
            let events = running.get(task_id).map(|live| live.events.subscribe());
            // An in-memory store answers here, under the lock publishing takes: no gap.
            (self.store.get(task_id).now(), events)
        };
        let snapshot = match answer {
            Ok(found) => found?,
            Err(pending) => pending.await?,
        }
        .ok_or_else(|| A2aError::task_not_found(task_id))?;
        Ok(Subscription {
            snapshot,
            events: events.map(|receiver| TaskEvents(Events::Local(receiver))),
        })
    }

    /// Applies `change` to the task unless it is already terminal, then announces the event
    /// `event` builds from the changed task. Returns the changed task, or `None` when the
    /// update was ignored.
    async fn publish(
        &self,
        task_id: &str,
        change: &mut (dyn FnMut(&mut Task) + Send),
        event: Announce<'_>,
    ) -> Result<Option<Task>, A2aError> {
        let applied = AtomicBool::new(false);
        let mut guarded = |task: &mut Task| {
            let open = !is_terminal(task.status.state);
            applied.store(open, Ordering::Relaxed);
            if open {
                change(task);
            }
        };
        let (task, event, configs) = match self.store.shared() {
            Some(shared) => {
                let announce = |task: &Task| applied.load(Ordering::Relaxed).then(|| event(task));
                let (task, configs) = shared
                    .update_announcing(task_id, &mut guarded, &announce)
                    .await?;
                if !applied.load(Ordering::Relaxed) {
                    // Ended elsewhere (canceled through another replica): stop the work here
                    // too, should the request to cancel it have been lost.
                    self.stop(task_id);
                    return Ok(None);
                }
                let event = event(&task);
                if is_terminal(task.status.state) {
                    self.finish(task_id);
                }
                (task, event, Some(configs))
            }
            None => {
                let running = self.lock()?;
                // An in-memory store changes the task here, under the lock subscribing takes.
                let outcome = match self.store.update(task_id, &mut guarded).now() {
                    Ok(task) => {
                        let task = task?;
                        self.announce_locally(running, &applied, &task, event)
                    }
                    Err(pending) => {
                        drop(running);
                        let task = pending.await?;
                        self.announce_locally(self.lock()?, &applied, &task, event)
                    }
                };
                let Some((task, event)) = outcome else {
                    return Ok(None);
                };
                (task, event, None)
            }
        };
        self.notify(task_id, &event, configs).await;
        Ok(Some(task))
    }

    /// Sends an applied update's event to this process's subscribers.
    fn announce_locally(
        &self,
        mut running: std::sync::MutexGuard<'_, HashMap<String, LiveTask>>,
        applied: &AtomicBool,
        task: &Task,
        event: Announce<'_>,
    ) -> Option<(Task, StreamResponse)> {
        if !applied.load(Ordering::Relaxed) {
            return None;
        }
        let event = event(task);
        if let Some(live) = running.get(&task.id) {
            // No receiver is fine: nobody is streaming this task.
            let _ = live.events.send(event.clone());
        }
        if is_terminal(task.status.state) {
            running.remove(&task.id);
        }
        Some((task.clone(), event))
    }

    /// Queues the event's webhooks: to `configs` when the update read them already, else to
    /// the task's configs as stored.
    async fn notify(
        &self,
        task_id: &str,
        event: &StreamResponse,
        configs: Option<Vec<TaskPushNotificationConfig>>,
    ) {
        let Some(push) = &self.push else {
            return;
        };
        let configs = match configs {
            Some(configs) => configs,
            None => match self.store.push_configs(task_id).await {
                Ok(configs) => configs,
                Err(error) => {
                    tracing::warn!(%error, "push configs could not be read; no webhook sent");
                    return;
                }
            },
        };
        for config in configs {
            // One not started is logged by the sender; the task's work goes on regardless.
            let _ = push.spawn_delivery(config, event.clone());
        }
    }

    /// Moves the task to `state` (with an optional agent message).
    pub async fn set_status(
        &self,
        task_id: &str,
        state: TaskState,
        message: Option<Message>,
    ) -> Result<Option<Task>, A2aError> {
        let status = TaskStatus {
            message,
            state,
            timestamp: Some(chrono::Utc::now()),
        };
        self.publish(
            task_id,
            &mut |task| {
                if let Some(message) = &status.message {
                    task.history.push(message.clone());
                }
                task.status = status.clone();
            },
            &|task| StreamResponse {
                payload: StreamResponsePayload::StatusUpdate(TaskStatusUpdateEvent {
                    context_id: task.context_id.clone().unwrap_or_default(),
                    metadata: serde_json::Map::new(),
                    status: task.status.clone(),
                    task_id: task.id.clone(),
                }),
            },
        )
        .await
    }

    /// Adds (or, with `append`, extends) an artifact.
    pub async fn add_artifact(&self, task_id: &str, artifact: Artifact) -> Result<(), A2aError> {
        self.publish(
            task_id,
            &mut |task| {
                task.artifacts
                    .retain(|existing| existing.artifact_id != artifact.artifact_id);
                task.artifacts.push(artifact.clone());
            },
            &|task| StreamResponse {
                payload: StreamResponsePayload::ArtifactUpdate(TaskArtifactUpdateEvent {
                    append: None,
                    artifact: artifact.clone(),
                    context_id: task.context_id.clone().unwrap_or_default(),
                    last_chunk: Some(true),
                    metadata: serde_json::Map::new(),
                    task_id: task.id.clone(),
                }),
            },
        )
        .await
        .map(|_| ())
    }

    /// Forgets a task's live state once its executor returned; its subscribers' streams end.
    pub fn finish(&self, task_id: &str) {
        if let Ok(mut running) = self.lock() {
            running.remove(task_id);
        }
        if let Some(shared) = self.store.shared() {
            shared.unwatch_cancel(task_id);
        }
    }

    /// Fires the cancellation of a task running here.
    fn stop(&self, task_id: &str) {
        if let Ok(running) = self.lock()
            && let Some(live) = running.get(task_id)
        {
            live.cancel.cancel();
        }
    }

    /// Cancels a task: records `CANCELED`, then fires its token, here or (on a shared store)
    /// on the replica running it. Recorded first, so the executor's last updates are ignored
    /// and its return cannot complete the task instead.
    pub async fn cancel(&self, task_id: &str) -> Result<Task, A2aError> {
        let current = self
            .store
            .get(task_id)
            .await?
            .ok_or_else(|| A2aError::task_not_found(task_id))?;
        if is_terminal(current.status.state) {
            return Err(not_cancelable(&current));
        }
        // Taken first: recording a terminal state forgets the task's live entry.
        let token = self.lock()?.get(task_id).map(|live| live.cancel.clone());
        let Some(task) = self
            .set_status(task_id, TaskState::TaskStateCanceled, None)
            .await?
        else {
            // It finished between the check and the cancel.
            return match self.store.get(task_id).await? {
                Some(task) => Err(not_cancelable(&task)),
                None => Err(A2aError::task_not_found(task_id)),
            };
        };
        if let Some(token) = token {
            token.cancel();
        }
        if let Some(shared) = self.store.shared()
            && let Err(error) = shared.request_cancel(task_id).await
        {
            // The task is canceled; its executor stops at its next update, which is ignored.
            tracing::warn!(%error, "the cancellation could not be sent to the running replica");
        }
        Ok(task)
    }
}

fn not_cancelable(task: &Task) -> A2aError {
    A2aError::task_not_cancelable(&task.id, &task.status.state.to_string())
}

/// What an executor reports through; bound to one task and to the caller whose message it
/// runs.
#[derive(Clone)]
pub struct TaskUpdater {
    task: Task,
    live: Arc<LiveTasks>,
    cancel: CancellationToken,
    caller: Caller,
}

impl std::fmt::Debug for TaskUpdater {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskUpdater")
            .field("task", &self.task.id)
            .finish_non_exhaustive()
    }
}

impl TaskUpdater {
    pub(crate) fn new(
        task: Task,
        live: Arc<LiveTasks>,
        cancel: CancellationToken,
        caller: Caller,
    ) -> Self {
        Self {
            task,
            live,
            cancel,
            caller,
        }
    }

    /// Who sent the message being run: its principal (`caller().principal()`) and request
    /// headers.
    pub fn caller(&self) -> &Caller {
        &self.caller
    }

    /// The id of the task being run.
    pub fn task_id(&self) -> &str {
        &self.task.id
    }

    /// The id of the context the task belongs to.
    pub fn context_id(&self) -> &str {
        self.task.context_id.as_deref().unwrap_or_default()
    }

    /// The task as it was when this message's work started: its history ends with the message,
    /// and a task the client continues still carries what came before.
    pub fn task(&self) -> &Task {
        &self.task
    }

    /// Fires when a client cancels the task.
    pub fn cancellation(&self) -> &CancellationToken {
        &self.cancel
    }

    /// An agent message on this task.
    pub fn agent_message(&self, text: impl Into<String>) -> Message {
        agent_text(text, &self.task)
    }

    /// Reports progress (`WORKING`, with an optional message).
    pub async fn working(&self, message: Option<Message>) -> Result<(), A2aError> {
        self.live
            .set_status(&self.task.id, TaskState::TaskStateWorking, message)
            .await
            .map(|_| ())
    }

    /// Adds an artifact with one text part.
    pub async fn text_artifact(&self, name: &str, text: impl Into<String>) -> Result<(), A2aError> {
        self.live
            .add_artifact(
                &self.task.id,
                Artifact {
                    artifact_id: uuid::Uuid::new_v4().to_string(),
                    name: Some(name.to_owned()),
                    parts: vec![text_part(text)],
                    ..Artifact::default()
                },
            )
            .await
    }

    /// Leaves the task `INPUT_REQUIRED` with `message` (what the agent asks); the client
    /// continues it with a message naming the task.
    pub async fn require_input(&self, message: Message) -> Result<(), A2aError> {
        self.live
            .set_status(
                &self.task.id,
                TaskState::TaskStateInputRequired,
                Some(message),
            )
            .await
            .map(|_| ())
    }

    /// Finishes the task as `COMPLETED`.
    pub async fn complete(&self, message: Option<Message>) -> Result<(), A2aError> {
        self.live
            .set_status(&self.task.id, TaskState::TaskStateCompleted, message)
            .await
            .map(|_| ())
    }

    /// Finishes the task as `FAILED`.
    pub async fn fail(&self, message: Option<Message>) -> Result<(), A2aError> {
        self.live
            .set_status(&self.task.id, TaskState::TaskStateFailed, message)
            .await
            .map(|_| ())
    }
}
