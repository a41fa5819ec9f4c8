//! The agent's side of a task: the [`AgentExecutor`] an application implements (what to do
//! with a message) and the [`TaskUpdater`] it reports through. Every update goes through one
//! place ([`LiveTasks::publish`]) that writes the store, wakes subscribers and queues push
//! notifications, and ignores anything sent after the task reached a terminal state.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};

use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use crate::error::A2aError;
use crate::push::PushSender;
use crate::service::Caller;
use crate::store::TaskStore;
use crate::v1::types::{
    Artifact, Message, Part, PartContent, Role, StreamResponse, StreamResponsePayload, Task,
    TaskArtifactUpdateEvent, TaskState, TaskStatus, TaskStatusUpdateEvent,
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
/// with no gap and no repeat.
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
    pub events: Option<broadcast::Receiver<StreamResponse>>,
}

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

    /// Registers a stored task as running; returns its cancellation token.
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
        Ok(cancel)
    }

    /// The task's current state and, if it is running, its later events.
    pub fn subscribe(&self, task_id: &str) -> Result<Subscription, A2aError> {
        let running = self.lock()?;
        let snapshot = self
            .store
            .get(task_id)
            .ok_or_else(|| A2aError::task_not_found(task_id))?;
        let events = running.get(task_id).map(|live| live.events.subscribe());
        Ok(Subscription { snapshot, events })
    }

    /// Applies `change` to the task unless it is already terminal, then announces `event` built
    /// from the changed task. Returns the changed task, or `None` when the update was ignored.
    fn publish(
        &self,
        task_id: &str,
        change: &mut dyn FnMut(&mut Task),
        event: impl FnOnce(&Task) -> StreamResponse,
    ) -> Result<Option<Task>, A2aError> {
        let mut running = self.lock()?;
        let mut applied = false;
        let task = self.store.update(task_id, &mut |task| {
            if !is_terminal(task.status.state) {
                change(task);
                applied = true;
            }
        })?;
        if !applied {
            return Ok(None);
        }
        let event = event(&task);
        if let Some(live) = running.get(task_id) {
            // No receiver is fine: nobody is streaming this task.
            let _ = live.events.send(event.clone());
        }
        if is_terminal(task.status.state) {
            running.remove(task_id);
        }
        drop(running);
        self.notify(task_id, &event);
        Ok(Some(task))
    }

    fn notify(&self, task_id: &str, event: &StreamResponse) {
        let Some(push) = &self.push else {
            return;
        };
        for config in self.store.push_configs(task_id) {
            // One not started is logged by the sender; the task's work goes on regardless.
            let _ = push.spawn_delivery(config, event.clone());
        }
    }

    /// Moves the task to `state` (with an optional agent message).
    pub fn set_status(
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
            |task| StreamResponse {
                payload: StreamResponsePayload::StatusUpdate(TaskStatusUpdateEvent {
                    context_id: task.context_id.clone().unwrap_or_default(),
                    metadata: serde_json::Map::new(),
                    status: task.status.clone(),
                    task_id: task.id.clone(),
                }),
            },
        )
    }

    /// Adds (or, with `append`, extends) an artifact.
    pub fn add_artifact(&self, task_id: &str, artifact: Artifact) -> Result<(), A2aError> {
        self.publish(
            task_id,
            &mut |task| {
                task.artifacts
                    .retain(|existing| existing.artifact_id != artifact.artifact_id);
                task.artifacts.push(artifact.clone());
            },
            |task| StreamResponse {
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
        .map(|_| ())
    }

    /// Forgets a task's live state once its executor returned; its subscribers' streams end.
    pub fn finish(&self, task_id: &str) {
        if let Ok(mut running) = self.lock() {
            running.remove(task_id);
        }
    }

    /// Cancels a task: fires its token and records `CANCELED`.
    pub fn cancel(&self, task_id: &str) -> Result<Task, A2aError> {
        let current = self
            .store
            .get(task_id)
            .ok_or_else(|| A2aError::task_not_found(task_id))?;
        if is_terminal(current.status.state) {
            return Err(not_cancelable(&current));
        }
        if let Some(live) = self.lock()?.get(task_id) {
            live.cancel.cancel();
        }
        match self.set_status(task_id, TaskState::TaskStateCanceled, None)? {
            Some(task) => Ok(task),
            // It finished between the check and the cancel.
            None => self.store.get(task_id).map_or_else(
                || Err(A2aError::task_not_found(task_id)),
                |task| Err(not_cancelable(&task)),
            ),
        }
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
    pub fn working(&self, message: Option<Message>) -> Result<(), A2aError> {
        self.live
            .set_status(&self.task.id, TaskState::TaskStateWorking, message)
            .map(|_| ())
    }

    /// Adds an artifact with one text part.
    pub fn text_artifact(&self, name: &str, text: impl Into<String>) -> Result<(), A2aError> {
        self.live.add_artifact(
            &self.task.id,
            Artifact {
                artifact_id: uuid::Uuid::new_v4().to_string(),
                name: Some(name.to_owned()),
                parts: vec![text_part(text)],
                ..Artifact::default()
            },
        )
    }

    /// Leaves the task `INPUT_REQUIRED` with `message` (what the agent asks); the client
    /// continues it with a message naming the task.
    pub fn require_input(&self, message: Message) -> Result<(), A2aError> {
        self.live
            .set_status(
                &self.task.id,
                TaskState::TaskStateInputRequired,
                Some(message),
            )
            .map(|_| ())
    }

    /// Finishes the task as `COMPLETED`.
    pub fn complete(&self, message: Option<Message>) -> Result<(), A2aError> {
        self.live
            .set_status(&self.task.id, TaskState::TaskStateCompleted, message)
            .map(|_| ())
    }

    /// Finishes the task as `FAILED`.
    pub fn fail(&self, message: Option<Message>) -> Result<(), A2aError> {
        self.live
            .set_status(&self.task.id, TaskState::TaskStateFailed, message)
            .map(|_| ())
    }
}
