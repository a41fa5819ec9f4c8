//! The A2A task store on Redis (feature `a2a`): tasks and their push configs as Redis records
//! that expire by themselves, listings by owner from a per-owner sorted set, each task's live
//! updates on a Redis Stream any replica's subscribers read, and cancellation sent on a pub/sub
//! channel to whichever replica runs the task's executor. See [`crate::a2a_scripts`] for the
//! keys.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use futures::StreamExt as _;
use protocols_a2a::error::A2aError;
use protocols_a2a::executor::ends_stream;
use protocols_a2a::store::{
    LiveEvents, Owner, SharedTasks, TaskChange, TaskFilter, TaskFuture, TaskLimits, TaskPage,
    TaskStore,
};
use protocols_a2a::v1::types::{StreamResponse, Task, TaskPushNotificationConfig};
use protocols_runtime::store::{StoreError, StoreFuture};
use redis::aio::{ConnectionManager, MultiplexedConnection};
use redis::{AsyncConnectionConfig, FromRedisValue, ScriptInvocation, Value};
use tokio_util::sync::CancellationToken;

use crate::a2a_scripts::TaskScripts;
use crate::config::RedisConfig;
use crate::connection::{ConnectError, ask, bounded, connect, millis_of};

/// How long one `XREAD` waits for a task's next event before the reader checks the task still
/// exists (a task whose replica died stops its subscribers once its record expires).
const READ_BLOCK: Duration = Duration::from_secs(5);

/// How many events one `XREAD` takes at most.
const READ_BATCH: usize = 64;

/// The events a task's stream keeps (approximately): a subscriber further behind misses the
/// oldest, as one lagging behind an in-memory task's channel does.
const STREAM_CAP: usize = 1024;

/// How often an update is retried when other replicas keep changing the task between its read
/// and its write.
const UPDATE_ATTEMPTS: usize = 16;

/// A change to a task and its push configs, answering the event it announces (if any).
type Modify<'a> = &'a mut (
            dyn FnMut(
    &mut Task,
    &mut Vec<TaskPushNotificationConfig>,
) -> Result<Option<StreamResponse>, A2aError>
                + Send
        );

/// The executors this replica runs, by task, for the cancellation listener.
type Watchers = Mutex<HashMap<String, CancellationToken>>;

/// A2A tasks in Redis, served by any replica connected to the same Redis.
///
/// Keys (under [`RedisConfig::prefix`]): `a2a:task:{id}` (the record), `a2a:events:{id}` (its
/// live events), `a2a:owner:{owner}` and `a2a:tasks` (listing order), `a2a:seq`; the channel
/// `a2a:cancel`. Every record expires [`TaskLimits::retention`] after its last change,
/// whatever its state (a replica that died leaves nothing behind for longer). The task-count
/// bounds hold across replicas (settled tasks are dropped, oldest first, to make room); the
/// byte bounds are not kept here.
///
/// Round trips: a read is one (`HMGET`); an update, with its live event, is two (`HMGET`, which
/// reads the push configs too, then one script writing the record, appending the event and
/// moving the listing order, retried only when another replica wrote the task in between); an
/// update ignored on a finished task is the read alone; insert, listing and cancellation are
/// one each. Each is
/// bounded by [`RedisConfig::timeout`]; past it the answer is [`A2aError::Unavailable`] (a
/// `503`). Subscribers read a task's stream with `XREAD BLOCK` on a connection of their own,
/// never the shared one, so a waiting reader holds up no other command.
pub struct RedisTaskStore {
    client: redis::Client,
    connection: ConnectionManager,
    scripts: TaskScripts,
    config: RedisConfig,
    limits: TaskLimits,
    keys: Keys,
    watchers: Arc<Watchers>,
    listener: tokio::task::AbortHandle,
}

impl fmt::Debug for RedisTaskStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisTaskStore")
            .field("config", &self.config)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl Drop for RedisTaskStore {
    fn drop(&mut self) {
        self.listener.abort();
    }
}

struct Keys {
    record: String,
    stream: String,
    owner: String,
    all: String,
    sequence: String,
    cancel: String,
}

impl Keys {
    fn new(prefix: &str) -> Self {
        Self {
            record: format!("{prefix}a2a:task:"),
            stream: format!("{prefix}a2a:events:"),
            owner: format!("{prefix}a2a:owner:"),
            all: format!("{prefix}a2a:tasks"),
            sequence: format!("{prefix}a2a:seq"),
            cancel: format!("{prefix}a2a:cancel"),
        }
    }

    fn record(&self, id: &str) -> String {
        format!("{}{id}", self.record)
    }

    fn stream(&self, id: &str) -> String {
        format!("{}{id}", self.stream)
    }

    fn owner(&self, owner: &str) -> String {
        format!("{}{owner}", self.owner)
    }
}

/// A task as read from its record.
struct Stored {
    task: Task,
    /// The task's JSON as stored: a change that leaves it so writes nothing.
    raw: String,
    push: Vec<TaskPushNotificationConfig>,
    owner: String,
    revision: String,
}

impl RedisTaskStore {
    /// Connects to the Redis `config` names, loads the store's scripts and subscribes to the
    /// cancellation channel; tasks are kept within `limits`. Fails, never hangs, when Redis
    /// cannot be reached within the configured timeout.
    pub async fn connect(config: RedisConfig, limits: TaskLimits) -> Result<Self, ConnectError> {
        let scripts = TaskScripts::new();
        let (client, connection) = connect(&config, &scripts.all()).await?;
        let timeout = config.timeout;
        let keys = Keys::new(&config.prefix);
        // Subscribed before the store is handed out, so a cancellation sent as soon as this
        // replica starts a task is heard.
        let pubsub = listen(&client, &keys.cancel, timeout)
            .await
            .map_err(|error| match error {
                Listen::TimedOut => ConnectError::TimedOut(timeout),
                Listen::Failed(error) => ConnectError::Refused(error),
            })?;
        let watchers = Arc::new(Watchers::default());
        let listener = tokio::spawn(hear_cancellations(
            client.clone(),
            keys.cancel.clone(),
            Arc::downgrade(&watchers),
            pubsub,
            config.clone(),
        ))
        .abort_handle();
        Ok(Self {
            client,
            connection,
            scripts,
            config,
            limits,
            keys,
            watchers,
            listener,
        })
    }

    /// The configuration the store was built with.
    pub fn config(&self) -> &RedisConfig {
        &self.config
    }

    fn retention(&self) -> u64 {
        millis_of(self.limits.retention).max(1)
    }

    async fn ask<T>(
        &self,
        request: impl Future<Output = redis::RedisResult<T>>,
    ) -> Result<T, A2aError> {
        Ok(ask(self.config.timeout, request).await?)
    }

    async fn run<T: FromRedisValue>(
        &self,
        invocation: &ScriptInvocation<'_>,
    ) -> Result<T, A2aError> {
        let mut connection = self.connection.clone();
        self.ask(invocation.invoke_async(&mut connection)).await
    }

    async fn read(&self, id: &str) -> Result<Option<Stored>, A2aError> {
        let mut connection = self.connection.clone();
        let mut hmget = redis::cmd("HMGET");
        hmget
            .arg(self.keys.record(id))
            .arg("task")
            .arg("push")
            .arg("owner")
            .arg("rev");
        let fields: (
            Option<String>,
            Option<String>,
            Option<String>,
            Option<String>,
        ) = self.ask(hmget.query_async(&mut connection)).await?;
        let (Some(task), push, Some(owner), Some(revision)) = fields else {
            return Ok(None);
        };
        let push = match push {
            Some(push) => decode(&push)?,
            None => Vec::new(),
        };
        Ok(Some(Stored {
            task: decode(&task)?,
            raw: task,
            push,
            owner,
            revision,
        }))
    }

    async fn store_new(&self, task: Task, owner: &Owner) -> Result<(), A2aError> {
        let owner = owner_key(owner);
        let fields = Fields::of(&task)?;
        let stored: i64 = self
            .run(
                self.scripts
                    .insert
                    .key(self.keys.record(&task.id))
                    .key(self.keys.owner(&owner))
                    .key(&self.keys.all)
                    .key(&self.keys.sequence)
                    .arg(&self.keys.record)
                    .arg(&self.keys.stream)
                    .arg(&self.keys.owner)
                    .arg(&task.id)
                    .arg(fields.task)
                    .arg(&owner)
                    .arg(fields.context)
                    .arg(fields.state)
                    .arg(fields.at)
                    .arg(fields.settled)
                    .arg(self.retention())
                    .arg(self.limits.max_tasks_per_owner)
                    .arg(self.limits.max_tasks),
            )
            .await?;
        match stored {
            1 => Ok(()),
            0 => Err(A2aError::exhausted(
                "this caller's share of tasks is full of unfinished work",
                self.limits.retry_after,
            )),
            _ => Err(A2aError::unavailable(
                "the agent's task store is full of unfinished work",
                self.limits.retry_after,
            )),
        }
    }

    /// Reads the task, applies `change` to it and its push configs, and writes it back with
    /// the event `change` answers, unless another replica wrote it in between (then again).
    async fn modify(
        &self,
        id: &str,
        push_changes: bool,
        change: Modify<'_>,
    ) -> Result<(Task, Vec<TaskPushNotificationConfig>), A2aError> {
        for _ in 0..UPDATE_ATTEMPTS {
            let Some(stored) = self.read(id).await? else {
                return Err(A2aError::task_not_found(id));
            };
            let mut task = stored.task.clone();
            let mut push = stored.push;
            let event = change(&mut task, &mut push)?;
            let event = match event {
                Some(event) => encode(&event)?,
                None => String::new(),
            };
            let pushed = if push_changes {
                encode(&push)?
            } else {
                String::new()
            };
            let moved = task.status.timestamp != stored.task.status.timestamp;
            let fields = Fields::of(&task)?;
            // Nothing changed (an update ignored on a finished task): no write, no round trip.
            if pushed.is_empty() && event.is_empty() && fields.task == stored.raw {
                return Ok((task, push));
            }
            let written: i64 = self
                .run(
                    self.scripts
                        .update
                        .key(self.keys.record(id))
                        .key(self.keys.stream(id))
                        .key(self.keys.owner(&stored.owner))
                        .key(&self.keys.all)
                        .key(&self.keys.sequence)
                        .arg(&stored.revision)
                        .arg(fields.task)
                        .arg(pushed)
                        .arg(fields.context)
                        .arg(fields.state)
                        .arg(fields.at)
                        .arg(fields.settled)
                        .arg(self.retention())
                        .arg(event)
                        .arg(if moved { "1" } else { "0" })
                        .arg(STREAM_CAP)
                        .arg(id),
                )
                .await?;
            match written {
                1 => return Ok((task, push)),
                0 => continue,
                _ => return Err(A2aError::task_not_found(id)),
            }
        }
        Err(A2aError::unavailable(
            "the task is changed too often to update now",
            Duration::from_secs(1),
        ))
    }

    async fn listing(
        &self,
        filter: &TaskFilter,
        cursor: Option<u64>,
        page_size: usize,
    ) -> Result<TaskPage, A2aError> {
        let index = match &filter.owner {
            Some(owner) => self.keys.owner(&owner_key(owner)),
            None => self.keys.all.clone(),
        };
        let cursor = cursor.map_or(-1, |cursor| i64::try_from(cursor).unwrap_or(i64::MAX));
        let at = filter
            .updated_after
            .map(|after| after.timestamp_micros().to_string())
            .unwrap_or_default();
        let answer: Vec<String> = self
            .run(
                self.scripts
                    .list
                    .key(index)
                    .arg(&self.keys.record)
                    .arg(cursor)
                    .arg(page_size)
                    .arg(filter.context_id.as_deref().unwrap_or_default())
                    .arg(
                        filter
                            .state
                            .map(|state| state.to_string())
                            .unwrap_or_default(),
                    )
                    .arg(at),
            )
            .await?;
        let mut answer = answer.into_iter();
        let total = answer
            .next()
            .and_then(|total| total.parse().ok())
            .unwrap_or_default();
        let next_cursor = answer
            .next()
            .and_then(|more| more.parse::<i64>().ok())
            .and_then(|more| u64::try_from(more).ok());
        let tasks = answer
            .map(|task| decode(&task))
            .collect::<Result<Vec<Task>, _>>()?;
        Ok(TaskPage {
            tasks,
            next_cursor,
            total,
        })
    }

    async fn put_config(&self, config: TaskPushNotificationConfig) -> Result<(), A2aError> {
        let task_id = config.task_id.clone().unwrap_or_default();
        let most = self.limits.max_push_configs_per_task;
        let retry_after = self.limits.retry_after;
        self.modify(&task_id, true, &mut |_, push| {
            push.retain(|existing| existing.id != config.id);
            if push.len() >= most {
                return Err(A2aError::exhausted(
                    &format!("a task has at most {most} push notification configs"),
                    retry_after,
                ));
            }
            push.push(config.clone());
            Ok(None)
        })
        .await
        .map(|_| ())
    }

    async fn delete_config(&self, task_id: &str, config_id: &str) -> Result<bool, A2aError> {
        let Some(stored) = self.read(task_id).await? else {
            return Ok(false);
        };
        if !stored
            .push
            .iter()
            .any(|config| config.id.as_deref() == Some(config_id))
        {
            return Ok(false);
        }
        match self
            .modify(task_id, true, &mut |_, push| {
                push.retain(|config| config.id.as_deref() != Some(config_id));
                Ok(None)
            })
            .await
        {
            Ok(_) => Ok(true),
            Err(A2aError::TaskNotFound(_)) => Ok(false),
            Err(error) => Err(error),
        }
    }

    async fn open_subscription(&self, id: &str) -> Result<Option<(Task, LiveEvents)>, A2aError> {
        let mut connection = self.connection.clone();
        let mut hmget = redis::cmd("HMGET");
        hmget.arg(self.keys.record(id)).arg("task").arg("last");
        let (task, last): (Option<String>, Option<String>) =
            self.ask(hmget.query_async(&mut connection)).await?;
        let Some(task) = task else { return Ok(None) };
        let task: Task = decode(&task)?;
        // A connection of the subscriber's own: `XREAD BLOCK` would hold up every command
        // sharing one.
        let timeout = self.config.timeout;
        let dedicated = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(timeout))
            .set_response_timeout(Some(READ_BLOCK + timeout));
        let connection = self
            .ask(
                self.client
                    .get_multiplexed_async_connection_with_config(&dedicated),
            )
            .await?;
        let reader = Reader {
            connection,
            stream: self.keys.stream(id),
            record: self.keys.record(id),
            last: last.unwrap_or_else(|| "0-0".to_owned()),
            timeout,
            pending: VecDeque::new(),
        };
        let events = futures::stream::unfold(reader, |mut reader| async move {
            let event = reader.next().await?;
            Some((event, reader))
        })
        .boxed();
        Ok(Some((task, events)))
    }

    async fn publish_cancel(&self, id: &str) -> Result<(), A2aError> {
        let mut connection = self.connection.clone();
        let mut publish = redis::cmd("PUBLISH");
        publish.arg(&self.keys.cancel).arg(id);
        self.ask(publish.query_async::<i64>(&mut connection))
            .await
            .map(|_| ())
    }
}

impl TaskStore for RedisTaskStore {
    fn insert<'a>(&'a self, task: Task, owner: &'a Owner) -> TaskFuture<'a, ()> {
        StoreFuture::boxed(self.store_new(task, owner))
    }

    fn get<'a>(&'a self, id: &'a str) -> TaskFuture<'a, Option<Task>> {
        StoreFuture::boxed(async move { Ok(self.read(id).await?.map(|stored| stored.task)) })
    }

    fn get_owned<'a>(&'a self, id: &'a str) -> TaskFuture<'a, Option<(Task, Owner)>> {
        StoreFuture::boxed(async move {
            Ok(self
                .read(id)
                .await?
                .and_then(|stored| Some((stored.task, owner_of(&stored.owner)?))))
        })
    }

    fn update<'a>(&'a self, id: &'a str, change: TaskChange<'a>) -> TaskFuture<'a, Task> {
        StoreFuture::boxed(async move {
            self.modify(id, false, &mut |task, _| {
                change(task);
                Ok(None)
            })
            .await
            .map(|(task, _)| task)
        })
    }

    fn list<'a>(
        &'a self,
        filter: &'a TaskFilter,
        cursor: Option<u64>,
        page_size: usize,
    ) -> TaskFuture<'a, TaskPage> {
        StoreFuture::boxed(self.listing(filter, cursor, page_size))
    }

    fn put_push_config(&self, config: TaskPushNotificationConfig) -> TaskFuture<'_, ()> {
        StoreFuture::boxed(self.put_config(config))
    }

    fn push_configs<'a>(
        &'a self,
        task_id: &'a str,
    ) -> TaskFuture<'a, Vec<TaskPushNotificationConfig>> {
        StoreFuture::boxed(async move {
            Ok(self
                .read(task_id)
                .await?
                .map(|stored| stored.push)
                .unwrap_or_default())
        })
    }

    fn delete_push_config<'a>(
        &'a self,
        task_id: &'a str,
        config_id: &'a str,
    ) -> TaskFuture<'a, bool> {
        StoreFuture::boxed(self.delete_config(task_id, config_id))
    }

    fn shared(&self) -> Option<&dyn SharedTasks> {
        Some(self)
    }
}

impl SharedTasks for RedisTaskStore {
    fn update_announcing<'a>(
        &'a self,
        id: &'a str,
        change: TaskChange<'a>,
        announce: &'a (dyn Fn(&Task) -> Option<StreamResponse> + Sync),
    ) -> TaskFuture<'a, (Task, Vec<TaskPushNotificationConfig>)> {
        StoreFuture::boxed(async move {
            self.modify(id, false, &mut |task, _| {
                change(task);
                Ok(announce(task))
            })
            .await
        })
    }

    fn subscribe<'a>(&'a self, id: &'a str) -> TaskFuture<'a, Option<(Task, LiveEvents)>> {
        StoreFuture::boxed(self.open_subscription(id))
    }

    fn request_cancel<'a>(&'a self, id: &'a str) -> TaskFuture<'a, ()> {
        StoreFuture::boxed(self.publish_cancel(id))
    }

    fn watch_cancel(&self, id: &str, token: CancellationToken) {
        if let Ok(mut watchers) = self.watchers.lock() {
            watchers.insert(id.to_owned(), token);
        }
    }

    fn unwatch_cancel(&self, id: &str) {
        if let Ok(mut watchers) = self.watchers.lock() {
            watchers.remove(id);
        }
    }
}

/// What the scripts keep beside a task's JSON, for listings to filter on.
struct Fields {
    task: String,
    context: String,
    state: String,
    at: i64,
    settled: u8,
}

impl Fields {
    fn of(task: &Task) -> Result<Self, A2aError> {
        Ok(Self {
            task: encode(task)?,
            context: task.context_id.clone().unwrap_or_default(),
            state: task.status.state.to_string(),
            at: task
                .status
                .timestamp
                .map_or(-1, |timestamp| timestamp.timestamp_micros()),
            settled: u8::from(ends_stream(task.status.state)),
        })
    }
}

/// One subscriber's reader of a task's stream, on its own connection.
struct Reader {
    connection: MultiplexedConnection,
    stream: String,
    record: String,
    /// The id of the last entry read (or of the snapshot's last event).
    last: String,
    timeout: Duration,
    pending: VecDeque<StreamResponse>,
}

impl Reader {
    /// The next event; `None` when the task is gone or Redis failed (the subscriber's stream
    /// then ends: a client re-subscribes, on any replica).
    async fn next(&mut self) -> Option<StreamResponse> {
        loop {
            if let Some(event) = self.pending.pop_front() {
                return Some(event);
            }
            let mut xread = redis::cmd("XREAD");
            xread
                .arg("COUNT")
                .arg(READ_BATCH)
                .arg("BLOCK")
                .arg(millis_of(READ_BLOCK))
                .arg("STREAMS")
                .arg(&self.stream)
                .arg(&self.last);
            let read = ask(
                READ_BLOCK + self.timeout,
                xread.query_async::<Value>(&mut self.connection),
            )
            .await;
            let entries = match read {
                Ok(Value::Nil) => {
                    // Nothing for a while: go on while the task exists.
                    let mut exists = redis::cmd("EXISTS");
                    exists.arg(&self.record);
                    match ask(
                        self.timeout,
                        exists.query_async::<i64>(&mut self.connection),
                    )
                    .await
                    {
                        Ok(1) => continue,
                        Ok(_) => return None,
                        Err(error) => return gone(&error),
                    }
                }
                Ok(value) => entries_of(value),
                Err(error) => return gone(&error),
            };
            for (id, event) in entries {
                self.last = id;
                match serde_json::from_slice::<StreamResponse>(&event) {
                    Ok(event) => self.pending.push_back(event),
                    Err(error) => tracing::warn!(%error, "a task event in Redis is not A2A"),
                }
            }
        }
    }
}

fn gone(error: &StoreError) -> Option<StreamResponse> {
    tracing::warn!(%error, "a task's live events could not be read; the subscription ends");
    None
}

/// The `(id, event)` entries of an `XREAD` answer (one stream; RESP2 arrays or RESP3 maps).
fn entries_of(value: Value) -> Vec<(String, Vec<u8>)> {
    let streams = match value {
        Value::Array(streams) => streams
            .into_iter()
            .filter_map(|stream| match stream {
                Value::Array(pair) => pair.into_iter().nth(1),
                _ => None,
            })
            .collect::<Vec<_>>(),
        Value::Map(streams) => streams.into_iter().map(|(_, entries)| entries).collect(),
        _ => Vec::new(),
    };
    let mut found = Vec::new();
    for entries in streams {
        let Value::Array(entries) = entries else {
            continue;
        };
        for entry in entries {
            let Value::Array(entry) = entry else { continue };
            let mut entry = entry.into_iter();
            let (Some(id), Some(fields)) = (entry.next(), entry.next()) else {
                continue;
            };
            let Some(id) = text_of(id) else { continue };
            let fields: Vec<Value> = match fields {
                Value::Array(fields) => fields,
                Value::Map(fields) => fields.into_iter().flat_map(|(k, v)| [k, v]).collect(),
                _ => continue,
            };
            let mut fields = fields.into_iter();
            while let (Some(name), Some(value)) = (fields.next(), fields.next()) {
                if text_of(name).as_deref() == Some("event")
                    && let Value::BulkString(event) = value
                {
                    found.push((id.clone(), event));
                }
            }
        }
    }
    found
}

fn text_of(value: Value) -> Option<String> {
    match value {
        Value::BulkString(bytes) => String::from_utf8(bytes).ok(),
        Value::SimpleString(text) => Some(text),
        _ => None,
    }
}

enum Listen {
    TimedOut,
    Failed(redis::RedisError),
}

/// A pub/sub connection subscribed to `channel`.
async fn listen(
    client: &redis::Client,
    channel: &str,
    timeout: Duration,
) -> Result<redis::aio::PubSub, Listen> {
    let subscribed = bounded(timeout, async {
        let mut pubsub = client.get_async_pubsub().await?;
        pubsub.subscribe(channel).await?;
        Ok::<_, redis::RedisError>(pubsub)
    })
    .await;
    match subscribed {
        Ok(Ok(pubsub)) => Ok(pubsub),
        Ok(Err(error)) => Err(Listen::Failed(error)),
        Err(_) => Err(Listen::TimedOut),
    }
}

/// Fires the tokens of the tasks this replica runs when the cancellation channel names them;
/// subscribes again (every [`RedisConfig::reconnect_delay`]) whenever the connection drops.
/// A cancellation sent while it is away is not heard, but the executor's next update, ignored
/// on the canceled task, stops it all the same. Ends with the store.
async fn hear_cancellations(
    client: redis::Client,
    channel: String,
    watchers: Weak<Watchers>,
    first: redis::aio::PubSub,
    config: RedisConfig,
) {
    let mut pubsub = Some(first);
    loop {
        if let Some(connection) = pubsub.take() {
            let mut messages = connection.into_on_message();
            while let Some(message) = messages.next().await {
                let Some(watchers) = watchers.upgrade() else {
                    return;
                };
                let Ok(id) = message.get_payload::<String>() else {
                    continue;
                };
                if let Ok(watchers) = watchers.lock()
                    && let Some(token) = watchers.get(&id)
                {
                    token.cancel();
                }
            }
            tracing::warn!("the A2A cancellation channel closed; subscribing again");
        }
        if watchers.strong_count() == 0 {
            return;
        }
        tokio::time::sleep(config.reconnect_delay).await;
        pubsub = listen(&client, &channel, config.timeout).await.ok();
    }
}

/// An owner as its set's key names it.
fn owner_key(owner: &Owner) -> String {
    match owner {
        Owner::Subject(subject) => format!("s:{subject}"),
        Owner::Peer(address) => format!("p:{address}"),
        Owner::Anonymous => "a".to_owned(),
    }
}

fn owner_of(key: &str) -> Option<Owner> {
    match key.split_once(':') {
        Some(("s", subject)) => Some(Owner::Subject(subject.into())),
        Some(("p", address)) => address.parse().ok().map(Owner::Peer),
        _ if key == "a" => Some(Owner::Anonymous),
        _ => None,
    }
}

fn encode(value: &impl serde::Serialize) -> Result<String, A2aError> {
    serde_json::to_string(value).map_err(|_| A2aError::Internal)
}

fn decode<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, A2aError> {
    serde_json::from_str(text).map_err(|error| {
        tracing::warn!(%error, "a task record in Redis is not A2A");
        A2aError::Internal
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_owner_survives_its_key() {
        for owner in [
            Owner::Subject("alice:with:colons".into()),
            Owner::Peer("::1".parse().unwrap()),
            Owner::Peer("10.0.0.7".parse().unwrap()),
            Owner::Anonymous,
        ] {
            assert_eq!(owner_of(&owner_key(&owner)), Some(owner));
        }
    }
}
