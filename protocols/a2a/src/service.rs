//! The A2A 1.0 operations over a task store and an executor: task lifecycle (create, run,
//! cancel), reads with history trimming, paginated listing, re-attaching to a running task,
//! push-notification config CRUD and the extended card. Every binding and revision (JSON-RPC,
//! HTTP+JSON, 0.3) calls these same methods, on behalf of a [`Caller`]: a task belongs to its
//! [`Owner`], and to any other caller it does not exist.

use std::sync::Arc;

use futures::StreamExt as _;
use futures::stream::{self, BoxStream};
use http::HeaderMap;
use protocols_runtime::RequestMeta;
use protocols_runtime::hardening::Principal;

use crate::card::AgentCards;
use crate::error::A2aError;
use crate::executor::{
    AgentExecutor, LiveTasks, Subscription, TaskUpdater, ends_stream, is_terminal,
};
use protocols_runtime::quote;

use crate::push::PushSender;
use crate::store::{Owner, TaskFilter, TaskStore};
use crate::v1::types::{
    AgentCard, CancelTaskRequest, DeleteTaskPushNotificationConfigRequest, Empty,
    GetTaskPushNotificationConfigRequest, GetTaskRequest, ListTaskPushNotificationConfigsRequest,
    ListTaskPushNotificationConfigsResponse, ListTasksRequest, ListTasksResponse, Message, Role,
    SendMessageRequest, SendMessageResponse, SendMessageResponsePayload, StreamResponse,
    StreamResponsePayload, SubscribeToTaskRequest, Task, TaskPushNotificationConfig, TaskState,
    TaskStatus,
};

/// A stream of a task's events, ending after its final (or interrupted) status.
pub type EventStream = BoxStream<'static, StreamResponse>;

/// Page size when a listing names none.
pub const DEFAULT_PAGE_SIZE: usize = 50;
/// The largest page size a listing may ask for.
pub const MAX_PAGE_SIZE: usize = 100;

/// Who is calling: the owner whose tasks it creates and may reach, whether it proved who it is
/// (the extended card is only for those who did), and the request it called with (the
/// principal the hardening authenticated, the headers), which the executor sees too. Cheap to
/// clone.
#[derive(Debug, Clone)]
pub struct Caller {
    owner: Owner,
    authenticated: bool,
    request: Arc<RequestMeta>,
}

impl Caller {
    /// A caller who proved nothing (or whose proof was not asked for), with no request (a call
    /// made in process).
    pub fn anonymous(owner: Owner) -> Self {
        Self {
            owner,
            authenticated: false,
            request: Arc::default(),
        }
    }

    /// A caller an authenticator accepted.
    pub fn authenticated(owner: Owner) -> Self {
        Self {
            authenticated: true,
            ..Self::anonymous(owner)
        }
    }

    /// The same caller, calling with `request`.
    #[must_use]
    pub fn with_request(mut self, request: Arc<RequestMeta>) -> Self {
        self.request = request;
        self
    }

    /// Who the hardening authenticated; `None` for an anonymous caller.
    pub fn principal(&self) -> Option<&Principal> {
        self.request.principal()
    }

    /// The headers of the request the call came on (empty for a call made in process).
    pub fn headers(&self) -> &HeaderMap {
        &self.request.headers
    }

    /// The owner the caller's tasks are kept under, and the only one whose tasks it sees.
    pub fn owner(&self) -> &Owner {
        &self.owner
    }

    /// Whether the caller presented valid credentials.
    pub fn is_authenticated(&self) -> bool {
        self.authenticated
    }
}

/// The A2A operations, shared by every binding.
pub struct A2aService<E> {
    executor: Arc<E>,
    live: Arc<LiveTasks>,
    cards: Arc<AgentCards>,
}

impl<E> Clone for A2aService<E> {
    fn clone(&self) -> Self {
        Self {
            executor: Arc::clone(&self.executor),
            live: Arc::clone(&self.live),
            cards: Arc::clone(&self.cards),
        }
    }
}

impl<E> std::fmt::Debug for A2aService<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("A2aService").finish_non_exhaustive()
    }
}

impl<E: AgentExecutor> A2aService<E> {
    /// `push` is `None` when the agent does not support push notifications.
    pub fn new(
        executor: E,
        store: Arc<dyn TaskStore>,
        push: Option<PushSender>,
        cards: AgentCards,
    ) -> Self {
        Self {
            executor: Arc::new(executor),
            live: Arc::new(LiveTasks::new(store, push)),
            cards: Arc::new(cards),
        }
    }

    /// The agent cards the service publishes.
    pub fn cards(&self) -> &AgentCards {
        &self.cards
    }

    fn store(&self) -> &Arc<dyn TaskStore> {
        self.live.store()
    }

    /// `SendMessage`: runs the message on a task; answers when it ends (or at once, with
    /// `returnImmediately`).
    pub async fn send_message(
        &self,
        request: SendMessageRequest,
        caller: &Caller,
    ) -> Result<SendMessageResponse, A2aError> {
        let configuration = request.configuration.clone().unwrap_or_default();
        let history_length = configuration.history_length;
        let wait = configuration.return_immediately != Some(true);
        let (task_id, subscription) = self.start_task(request, caller, wait).await?;
        if let Some(subscription) = subscription {
            let mut events = event_stream(subscription);
            while events.next().await.is_some() {}
        }
        let task = self
            .store()
            .get(&task_id)
            .await?
            .ok_or_else(|| A2aError::task_not_found(&task_id))?;
        Ok(SendMessageResponse {
            payload: SendMessageResponsePayload::Task(trim_history(task, history_length)?),
        })
    }

    /// `SendStreamingMessage`: the task, then its events as they happen.
    pub async fn send_streaming_message(
        &self,
        request: SendMessageRequest,
        caller: &Caller,
    ) -> Result<EventStream, A2aError> {
        match self.start_task(request, caller, true).await? {
            (_, Some(subscription)) => Ok(event_stream(subscription)),
            (_, None) => Err(A2aError::Internal),
        }
    }

    /// Creates (or continues) the message's task, subscribes when `watch` asks to, then starts
    /// the executor, so the subscription misses nothing. (A caller that does not wait opens no
    /// subscription: on a shared store, that is a connection spared.)
    async fn start_task(
        &self,
        request: SendMessageRequest,
        caller: &Caller,
        watch: bool,
    ) -> Result<(String, Option<Subscription>), A2aError> {
        let message = validate_message(request.message)?;
        let task = match &message.task_id {
            Some(task_id) if !task_id.is_empty() => {
                self.continue_task(task_id, &message, caller).await?
            }
            _ => self.create_task(&message, caller.owner()).await?,
        };
        if let Some(config) = request
            .configuration
            .and_then(|configuration| configuration.task_push_notification_config)
        {
            self.register_push_config(&task.id, config).await?;
        }
        let cancel = self.live.start(&task.id)?;
        let subscription = if watch {
            match self.live.subscribe(&task.id).await {
                Ok(subscription) => Some(subscription),
                Err(error) => {
                    self.live.finish(&task.id);
                    return Err(error);
                }
            }
        } else {
            None
        };
        let mut message = message;
        message.task_id = Some(task.id.clone());
        message.context_id.clone_from(&task.context_id);
        let updater =
            TaskUpdater::new(task.clone(), Arc::clone(&self.live), cancel, caller.clone());
        let executor = Arc::clone(&self.executor);
        let live = Arc::clone(&self.live);
        let task_id = task.id.clone();
        tokio::spawn(async move {
            executor.execute(message, updater).await;
            settle(&live, &task_id).await;
        });
        Ok((task.id, subscription))
    }

    async fn create_task(&self, message: &Message, owner: &Owner) -> Result<Task, A2aError> {
        let task_id = uuid::Uuid::new_v4().to_string();
        let context_id = message
            .context_id
            .clone()
            .filter(|context| !context.is_empty())
            .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
        let mut first = message.clone();
        first.task_id = Some(task_id.clone());
        first.context_id = Some(context_id.clone());
        let task = Task {
            artifacts: Vec::new(),
            context_id: Some(context_id),
            history: vec![first],
            id: task_id,
            metadata: serde_json::Map::new(),
            status: TaskStatus {
                message: None,
                state: TaskState::TaskStateSubmitted,
                timestamp: Some(chrono::Utc::now()),
            },
        };
        self.store().insert(task.clone(), owner).await?;
        Ok(task)
    }

    /// A follow-up message on a task that is waiting for one.
    async fn continue_task(
        &self,
        task_id: &str,
        message: &Message,
        caller: &Caller,
    ) -> Result<Task, A2aError> {
        let task = self.existing_task(task_id, caller).await?;
        if is_terminal(task.status.state) {
            return Err(A2aError::UnsupportedOperation(format!(
                "task {} is in a terminal state",
                quote(task_id)
            )));
        }
        if !ends_stream(task.status.state) {
            return Err(A2aError::UnsupportedOperation(format!(
                "task {} is still working",
                quote(task_id)
            )));
        }
        if let Some(context) = message.context_id.as_ref().filter(|c| !c.is_empty())
            && task.context_id.as_ref() != Some(context)
        {
            return Err(A2aError::invalid_params(
                "message contextId differs from the task's",
            ));
        }
        let message = message.clone();
        self.store()
            .update(task_id, &mut |task| {
                task.history.push(message.clone());
                task.status = TaskStatus {
                    message: None,
                    state: TaskState::TaskStateSubmitted,
                    timestamp: Some(chrono::Utc::now()),
                };
            })
            .await
    }

    /// `GetTask`.
    pub async fn get_task(
        &self,
        request: &GetTaskRequest,
        caller: &Caller,
    ) -> Result<Task, A2aError> {
        let task = self
            .existing_task(required("id", &request.id)?, caller)
            .await?;
        trim_history(task, request.history_length)
    }

    /// `ListTasks`: the caller's tasks, newest first, `pageToken` from the previous page.
    pub async fn list_tasks(
        &self,
        request: &ListTasksRequest,
        caller: &Caller,
    ) -> Result<ListTasksResponse, A2aError> {
        let page_size = match request.page_size.map(usize::try_from) {
            None => DEFAULT_PAGE_SIZE,
            Some(Ok(size)) if (1..=MAX_PAGE_SIZE).contains(&size) => size,
            Some(_) => {
                return Err(A2aError::invalid_params(format!(
                    "pageSize must be between 1 and {MAX_PAGE_SIZE}"
                )));
            }
        };
        let cursor = match request.page_token.as_deref() {
            None | Some("") => None,
            Some(token) => Some(token.parse::<u64>().map_err(|_| {
                A2aError::invalid_params("pageToken is not a token this agent issued")
            })?),
        };
        let filter = TaskFilter {
            owner: Some(caller.owner().clone()),
            context_id: request.context_id.clone().filter(|c| !c.is_empty()),
            state: request
                .status
                .filter(|state| *state != TaskState::TaskStateUnspecified),
            updated_after: request.status_timestamp_after,
        };
        let page = self.store().list(&filter, cursor, page_size).await?;
        let include_artifacts = request.include_artifacts == Some(true);
        let tasks = page
            .tasks
            .into_iter()
            .map(|mut task| {
                if !include_artifacts {
                    task.artifacts.clear();
                }
                trim_history(task, request.history_length)
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(ListTasksResponse {
            next_page_token: page.next_cursor.map(|c| c.to_string()).unwrap_or_default(),
            page_size: i32::try_from(page_size).unwrap_or(i32::MAX),
            tasks,
            total_size: i32::try_from(page.total).unwrap_or(i32::MAX),
        })
    }

    /// `CancelTask`.
    pub async fn cancel_task(
        &self,
        request: &CancelTaskRequest,
        caller: &Caller,
    ) -> Result<Task, A2aError> {
        let task_id = required("id", &request.id)?;
        self.existing_task(task_id, caller).await?;
        self.live.cancel(task_id).await
    }

    /// `SubscribeToTask`: the task now, then its events; a finished task cannot be subscribed.
    pub async fn subscribe_to_task(
        &self,
        request: &SubscribeToTaskRequest,
        caller: &Caller,
    ) -> Result<EventStream, A2aError> {
        let task_id = required("id", &request.id)?;
        self.existing_task(task_id, caller).await?;
        let subscription = self.live.subscribe(task_id).await?;
        if is_terminal(subscription.snapshot.status.state) {
            return Err(A2aError::UnsupportedOperation(format!(
                "task {} is in a terminal state",
                quote(&request.id)
            )));
        }
        Ok(event_stream(subscription))
    }

    fn push_sender(&self) -> Result<&PushSender, A2aError> {
        self.live
            .push()
            .ok_or(A2aError::PushNotificationNotSupported)
    }

    async fn register_push_config(
        &self,
        task_id: &str,
        mut config: TaskPushNotificationConfig,
    ) -> Result<TaskPushNotificationConfig, A2aError> {
        required("url", &config.url)?;
        self.push_sender()?.policy().check_url(&config.url)?;
        config.task_id = Some(task_id.to_owned());
        if config.id.as_deref().is_none_or(str::is_empty) {
            config.id = Some(uuid::Uuid::new_v4().to_string());
        }
        self.store().put_push_config(config.clone()).await?;
        Ok(config)
    }

    /// `CreateTaskPushNotificationConfig`.
    pub async fn create_push_config(
        &self,
        config: TaskPushNotificationConfig,
        caller: &Caller,
    ) -> Result<TaskPushNotificationConfig, A2aError> {
        let task_id = config
            .task_id
            .clone()
            .filter(|id| !id.is_empty())
            .ok_or_else(|| A2aError::missing("taskId"))?;
        self.push_sender()?;
        self.existing_task(&task_id, caller).await?;
        self.register_push_config(&task_id, config).await
    }

    /// The task, if it exists and belongs to `caller`: another owner's task gets the error a
    /// task that never existed gets, so its existence does not leak.
    async fn existing_task(&self, task_id: &str, caller: &Caller) -> Result<Task, A2aError> {
        match self.store().get_owned(task_id).await? {
            Some((task, owner)) if owner == *caller.owner() => Ok(task),
            _ => Err(A2aError::task_not_found(task_id)),
        }
    }

    /// `GetTaskPushNotificationConfig`.
    pub async fn get_push_config(
        &self,
        request: &GetTaskPushNotificationConfigRequest,
        caller: &Caller,
    ) -> Result<TaskPushNotificationConfig, A2aError> {
        self.push_sender()?;
        let task_id = required("taskId", &request.task_id)?;
        let config_id = required("id", &request.id)?;
        self.existing_task(task_id, caller).await?;
        // A config that does not exist is not found, as a task would be (spec §3.1.8).
        self.store()
            .push_configs(task_id)
            .await?
            .into_iter()
            .find(|config| config.id.as_deref() == Some(config_id))
            .ok_or_else(|| {
                A2aError::TaskNotFound(format!(
                    "push notification config {} not found",
                    quote(config_id)
                ))
            })
    }

    /// `ListTaskPushNotificationConfigs` (one page: configs per task are few).
    pub async fn list_push_configs(
        &self,
        request: &ListTaskPushNotificationConfigsRequest,
        caller: &Caller,
    ) -> Result<ListTaskPushNotificationConfigsResponse, A2aError> {
        self.push_sender()?;
        let task_id = required("taskId", &request.task_id)?;
        self.existing_task(task_id, caller).await?;
        Ok(ListTaskPushNotificationConfigsResponse {
            configs: self.store().push_configs(task_id).await?,
            next_page_token: None,
        })
    }

    /// `DeleteTaskPushNotificationConfig`: idempotent (spec §3.1.10), so deleting a config
    /// that is already gone succeeds too.
    pub async fn delete_push_config(
        &self,
        request: &DeleteTaskPushNotificationConfigRequest,
        caller: &Caller,
    ) -> Result<Empty, A2aError> {
        self.push_sender()?;
        let task_id = required("taskId", &request.task_id)?;
        let config_id = required("id", &request.id)?;
        self.existing_task(task_id, caller).await?;
        self.store().delete_push_config(task_id, config_id).await?;
        Ok(Empty {})
    }

    /// `GetExtendedAgentCard`: only for a caller who authenticated.
    pub fn extended_card(&self, caller: &Caller) -> Result<AgentCard, A2aError> {
        let card = self
            .cards
            .extended()
            .ok_or(A2aError::ExtendedAgentCardNotConfigured)?;
        if caller.is_authenticated() {
            Ok(card.clone())
        } else {
            Err(A2aError::Unauthenticated)
        }
    }
}

/// After the executor returns: a task it left working is completed; the task stops being
/// live either way.
async fn settle(live: &LiveTasks, task_id: &str) {
    let state = match live.store().get(task_id).await {
        Ok(task) => task.map(|task| task.status.state),
        Err(error) => {
            tracing::warn!(%error, "a finished task's state could not be read");
            None
        }
    };
    if state.is_some_and(|state| !ends_stream(state)) {
        let _ = live
            .set_status(task_id, TaskState::TaskStateCompleted, None)
            .await;
    }
    live.finish(task_id);
}

/// A REQUIRED string field's value; empty (or absent, which reads as empty) is refused.
fn required<'a>(name: &str, value: &'a str) -> Result<&'a str, A2aError> {
    if value.is_empty() {
        Err(A2aError::missing(name))
    } else {
        Ok(value)
    }
}

fn validate_message(message: Message) -> Result<Message, A2aError> {
    required("message.messageId", &message.message_id)?;
    if message.parts.is_empty() {
        return Err(A2aError::missing("message.parts"));
    }
    match message.role {
        Role::RoleUser => Ok(message),
        Role::RoleUnspecified => Err(A2aError::missing("message.role")),
        Role::RoleAgent => Err(A2aError::invalid_params(
            "a client message must have role ROLE_USER",
        )),
    }
}

/// Keeps the last `length` history messages; unset keeps all, negative is invalid.
pub fn trim_history(mut task: Task, length: Option<i32>) -> Result<Task, A2aError> {
    let Some(length) = length else {
        return Ok(task);
    };
    let keep = usize::try_from(length)
        .map_err(|_| A2aError::invalid_params("historyLength must not be negative"))?;
    let excess = task.history.len().saturating_sub(keep);
    task.history.drain(..excess);
    Ok(task)
}

/// The snapshot as a `task` event, then live events until one ends the stream.
fn event_stream(subscription: Subscription) -> EventStream {
    let first = StreamResponse {
        payload: StreamResponsePayload::Task(subscription.snapshot.clone()),
    };
    let finished = ends_stream(subscription.snapshot.status.state);
    let Some(receiver) = subscription.events.filter(|_| !finished) else {
        return stream::once(async move { first }).boxed();
    };
    let rest = stream::unfold(Some(receiver), |receiver| async move {
        let mut receiver = receiver?;
        let event = receiver.next().await?;
        let last = ends_the_stream(&event);
        Some((event, (!last).then_some(receiver)))
    });
    stream::once(async move { first }).chain(rest).boxed()
}

fn ends_the_stream(event: &StreamResponse) -> bool {
    match &event.payload {
        StreamResponsePayload::StatusUpdate(update) => ends_stream(update.status.state),
        StreamResponsePayload::Task(task) => ends_stream(task.status.state),
        StreamResponsePayload::Message(_) => true,
        StreamResponsePayload::ArtifactUpdate(_) => false,
    }
}
