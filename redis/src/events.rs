//! The Redis event store: every session's streams on Redis Streams (see
//! [`crate::event_scripts`] for the keys), so a stream written on one replica is resumed on any
//! other with the runtime's own cursor, and one reader per stream holds across replicas.
//!
//! Each step is one script, queued in call order on one writer task per store (so events keep
//! the order of the calls) and sent in pipelines over the store's shared connection, bounded
//! by the configured timeout. A reader follows its stream from a task of its own: its first
//! batch comes with the takeover, and when it has read everything it blocks in `XREAD` on a
//! connection of its own (never the shared one, which a blocking read would stall), waking on
//! a new event or a takeover, release or close from any replica, and looking again at least
//! every [`RedisConfig::block`].

use std::collections::VecDeque;
use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use protocols_runtime::session::SessionId;
use protocols_runtime::sse::EventId;
use protocols_runtime::store::{StoreError, StoreFuture};
use protocols_runtime::tail::{
    Changed, EventCursor, EventReader, EventStore, EventStream, Next, OpenedStream, PublishError,
    ResumeError, ResumedStream, Start, StreamFuture,
};
use redis::aio::{ConnectionManager, MultiplexedConnection};
use redis::{Client, Cmd, Script, ServerErrorKind, Value};
use tokio::sync::{Notify, mpsc, oneshot};
use tokio::task::JoinHandle;

use crate::config::RedisConfig;
use crate::connection::{ConnectError, TimedOut, bounded, connect, dedicated, millis_of};
use crate::event_scripts::EventScripts;

/// How many request streams a session keeps for resumption (as the in-memory store does).
const KEPT_REQUEST_STREAMS: u32 = 16;

/// The highest stream number; numbers wrap back to 1 past it (the runtime's closed stand-in
/// stream sits above, at `u32::MAX >> 8`).
const HIGHEST_STREAM: u32 = (u32::MAX >> 8) - 1;

/// How many events one fetch hands a reader.
const BATCH: usize = 64;

/// How many fetched events a reader holds before its task waits for them to be read.
const HELD_EVENTS: usize = 4 * BATCH;

/// How many queued steps go out in one pipeline.
const PIPELINE: usize = 256;

/// How long a closed session's wake-up stream outlives it, for blocked readers to be served.
const CLOSE_GRACE_MS: u64 = 1_000;

/// Why Redis could not take a step (the message of the failure every queued step shares).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct Failed(String);

/// Event streams in Redis, resumed by any replica connected to the same Redis.
///
/// Round trips: a publish is one script call; opening a stream is one (the standalone stream
/// too: its handle learns the session's epoch); a subscribe or a resume is one (the takeover
/// and the first batch), then a reader that has read everything costs one blocking read per
/// wake-up plus one fetch; a release, a close and a session's close are one each. A request
/// stream's first reader through the handle that opened it asks nothing until the first
/// publish, and closing a stream nothing was published into nor read from costs nothing: an
/// answer that goes out as plain JSON costs the opening alone. Steps queued
/// together share a pipeline. Every step is bounded by [`RedisConfig::timeout`]: past it the
/// answer is [`StoreError::Unavailable`] (a `503`), and the connection is re-established in
/// the background.
pub struct RedisEventStore {
    inner: Arc<Inner>,
}

impl fmt::Debug for RedisEventStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisEventStore")
            .field("config", &self.inner.config)
            .field("capacity", &self.inner.capacity)
            .finish_non_exhaustive()
    }
}

struct Inner {
    queue: mpsc::UnboundedSender<Job>,
    /// For readers' connections of their own.
    client: Client,
    scripts: Arc<EventScripts>,
    config: RedisConfig,
    capacity: usize,
}

/// One queued step and who awaits its answer.
struct Job {
    command: Cmd,
    reply: oneshot::Sender<Result<Value, StoreError>>,
}

impl RedisEventStore {
    /// Connects to the Redis `config` names and loads the store's scripts; every stream keeps
    /// at most `capacity` events (the Redis stream's cap). Fails, never hangs, when Redis
    /// cannot be reached within the configured timeout. Keys expire at the idle limit of
    /// `config`'s session limits after their last use, never past the absolute one.
    pub async fn connect(config: RedisConfig, capacity: usize) -> Result<Self, ConnectError> {
        let scripts = Arc::new(EventScripts::new());
        let (client, connection) = connect(&config, &scripts.all()).await?;
        let timeout = config.timeout;
        let (queue, jobs) = mpsc::unbounded_channel();
        tokio::spawn(write(connection, Arc::clone(&scripts), timeout, jobs));
        Ok(Self {
            inner: Arc::new(Inner {
                queue,
                client,
                scripts,
                config,
                capacity: capacity.max(1),
            }),
        })
    }

    /// The configuration the store was built with.
    pub fn config(&self) -> &RedisConfig {
        &self.inner.config
    }
}

impl Inner {
    fn meta_key(&self, session: &SessionId) -> String {
        format!("{}events:{session}", self.config.prefix)
    }

    fn control_key(&self, session: &SessionId) -> String {
        format!("{}events:{session}:ctl", self.config.prefix)
    }

    fn streams_prefix(&self, session: &SessionId) -> String {
        format!("{}events:{session}:", self.config.prefix)
    }

    fn stream_key(&self, session: &SessionId, number: u32) -> String {
        format!("{}{number}", self.streams_prefix(session))
    }

    fn record_key(&self, session: &SessionId) -> String {
        format!("{}session:{session}", self.config.prefix)
    }

    fn now(&self) -> u64 {
        millis(self.config.clock.wall())
    }

    fn idle(&self) -> u64 {
        millis_of(self.config.limits.idle)
    }

    /// Queues `command` now, so steps reach Redis in the order they were asked for, and
    /// answers when Redis did (or the timeout passed).
    fn call(
        &self,
        command: Cmd,
    ) -> impl Future<Output = Result<Value, StoreError>> + Send + 'static {
        let (reply, answer) = oneshot::channel();
        let queued = self.queue.send(Job { command, reply }).is_ok();
        let timeout = self.config.timeout;
        async move {
            if !queued {
                return Err(StoreError::unavailable(Failed(
                    "the event store's writer has stopped".into(),
                )));
            }
            match bounded(timeout, answer).await {
                Err(_) => Err(StoreError::unavailable(TimedOut(timeout))),
                Ok(Err(_)) => Err(StoreError::unavailable(Failed(
                    "the event store's writer has stopped".into(),
                ))),
                Ok(Ok(answer)) => answer,
            }
        }
    }

    fn standalone(
        &self,
        session: &SessionId,
    ) -> impl Future<Output = Result<String, StoreError>> + Send + 'static {
        let command = evalsha(
            &self.scripts.standalone,
            &[
                self.meta_key(session),
                self.record_key(session),
                self.control_key(session),
                self.stream_key(session, 0),
            ],
            &[
                SessionId::random().to_string(),
                self.now().to_string(),
                self.idle().to_string(),
                millis_of(self.config.limits.absolute).to_string(),
            ],
        );
        let answer = self.call(command);
        async move { text(answer.await?) }
    }

    fn open(
        &self,
        session: &SessionId,
    ) -> impl Future<Output = Result<(String, u32), StoreError>> + Send + 'static {
        let command = evalsha(
            &self.scripts.open,
            &[
                self.meta_key(session),
                self.record_key(session),
                self.control_key(session),
            ],
            &[
                SessionId::random().to_string(),
                self.now().to_string(),
                self.idle().to_string(),
                millis_of(self.config.limits.absolute).to_string(),
                self.streams_prefix(session),
                KEPT_REQUEST_STREAMS.to_string(),
                HIGHEST_STREAM.to_string(),
            ],
        );
        let answer = self.call(command);
        async move {
            let Value::Array(items) = answer.await? else {
                return Err(malformed());
            };
            let mut items = items.into_iter();
            let epoch = text(items.next().ok_or_else(malformed)?)?;
            let number = integer(items.next().ok_or_else(malformed)?)?;
            Ok((epoch, u32::try_from(number).map_err(|_| malformed())?))
        }
    }

    /// Queues a takeover of stream `number` for a new reader (see the script).
    fn takeover(
        &self,
        session: &SessionId,
        number: u32,
        epoch: Option<&str>,
        start: Begin,
    ) -> impl Future<Output = Result<Taken, StoreError>> + Send + 'static {
        let (mode, after) = match start {
            Begin::At(Start::Beginning) => ("beginning", 0),
            Begin::At(Start::Unread) => ("unread", 0),
            Begin::After(sequence) => ("after", sequence),
        };
        let command = evalsha(
            &self.scripts.takeover,
            &[
                self.meta_key(session),
                self.stream_key(session, number),
                self.control_key(session),
            ],
            &[
                epoch.unwrap_or("").to_owned(),
                number.to_string(),
                mode.to_owned(),
                after.to_string(),
                BATCH.to_string(),
                self.now().to_string(),
                self.idle().to_string(),
            ],
        );
        let answer = self.call(command);
        async move { Taken::parse(answer.await?) }
    }

    fn close_session(
        &self,
        session: &SessionId,
    ) -> impl Future<Output = Result<(), StoreError>> + Send + 'static {
        let command = evalsha(
            &self.scripts.close_session,
            &[self.meta_key(session), self.control_key(session)],
            &[self.streams_prefix(session), CLOSE_GRACE_MS.to_string()],
        );
        let answer = self.call(command);
        async move { answer.await.map(|_| ()) }
    }

    /// A handle of stream `number`; `fresh` when this call opened it (no event, no reader
    /// yet anywhere but through this handle).
    fn handle(
        self: &Arc<Self>,
        session: &SessionId,
        number: u32,
        epoch: String,
        fresh: bool,
    ) -> Arc<dyn EventStream> {
        Arc::new(RedisStream {
            store: Arc::clone(self),
            session: session.clone(),
            number,
            epoch,
            local: Arc::new(Local {
                fresh: AtomicBool::new(fresh),
                touched: AtomicBool::new(false),
                asked: AtomicBool::new(!fresh),
                closed: AtomicBool::new(false),
                changed: Notify::new(),
            }),
        })
    }
}

impl EventStore for RedisEventStore {
    fn standalone<'a>(&'a self, session: &'a SessionId) -> OpenedStream<'a> {
        let epoch = self.inner.standalone(session);
        StoreFuture::boxed(async move { Ok(self.inner.handle(session, 0, epoch.await?, false)) })
    }

    fn open_request_stream<'a>(&'a self, session: &'a SessionId) -> OpenedStream<'a> {
        let opened = self.inner.open(session);
        StoreFuture::boxed(async move {
            let (epoch, number) = opened.await?;
            Ok(self.inner.handle(session, number, epoch, true))
        })
    }

    fn resume<'a>(&'a self, session: &'a SessionId, after: EventCursor) -> ResumedStream<'a> {
        let taken = self
            .inner
            .takeover(session, after.stream, None, Begin::After(after.sequence));
        StoreFuture::boxed(async move {
            match taken.await? {
                Taken::Unknown | Taken::Lazily => Err(ResumeError::Unknown),
                Taken::Evicted => Err(ResumeError::Evicted),
                taken @ Taken::Reader { .. } => Ok(RedisReader::follow(
                    &self.inner,
                    session,
                    after.stream,
                    after.sequence,
                    None,
                    async move { Ok(taken) },
                )),
            }
        })
    }

    fn close_session(&self, session: &SessionId) -> StreamFuture<Result<(), StoreError>> {
        StoreFuture::boxed(self.inner.close_session(session))
    }
}

/// Where a takeover starts its reader.
#[derive(Debug, Clone, Copy)]
enum Begin {
    At(Start),
    After(u64),
}

/// What a takeover answers.
#[derive(Debug)]
enum Taken {
    Reader {
        epoch: String,
        generation: u64,
        start: u64,
        fetched: Fetched,
    },
    Unknown,
    Evicted,
    /// A fresh stream's first reader, at generation 0 with nothing fetched yet.
    Lazily,
}

impl Taken {
    fn parse(value: Value) -> Result<Self, StoreError> {
        let Value::Array(items) = value else {
            return Err(malformed());
        };
        let mut items = items.into_iter();
        let status = text(items.next().ok_or_else(malformed)?)?;
        match status.as_str() {
            "unknown" => Ok(Self::Unknown),
            "evicted" => Ok(Self::Evicted),
            "taken" => {
                let mut next = || items.next().ok_or_else(malformed);
                let epoch = text(next()?)?;
                let generation = unsigned(next()?)?;
                let start = unsigned(next()?)?;
                let fetched = Fetched::parse(next()?)?;
                Ok(Self::Reader {
                    epoch,
                    generation,
                    start,
                    fetched,
                })
            }
            _ => Err(malformed()),
        }
    }
}

/// What a reader found after its cursor.
#[derive(Debug)]
struct Fetched {
    /// `None` while the stream stays open; otherwise how the reader ends once it has read
    /// the events.
    end: Option<Next>,
    /// The wake-up stream's latest entry, where a blocking read starts.
    tip: String,
    events: Vec<(u64, Bytes)>,
}

impl Fetched {
    fn parse(value: Value) -> Result<Self, StoreError> {
        let Value::Array(items) = value else {
            return Err(malformed());
        };
        let mut items = items.into_iter();
        let status = text(items.next().ok_or_else(malformed)?)?;
        let tip = text(items.next().ok_or_else(malformed)?)?;
        let retry = unsigned(items.next().ok_or_else(malformed)?)?;
        let end = match status.as_str() {
            "open" => None,
            "closed" => Some(Next::Closed),
            "superseded" => Some(Next::Superseded),
            "evicted" => Some(Next::Evicted),
            "released" => Some(Next::Released(Duration::from_millis(retry))),
            _ => return Err(malformed()),
        };
        let mut events = Vec::new();
        while let Some(sequence) = items.next() {
            let sequence = unsigned(sequence)?;
            let payload = match items.next() {
                Some(Value::BulkString(bytes)) => Bytes::from(bytes),
                _ => return Err(malformed()),
            };
            events.push((sequence, payload));
        }
        Ok(Self { end, tip, events })
    }
}

/// One stream's handle, for the replica that writes into it.
struct RedisStream {
    store: Arc<Inner>,
    session: SessionId,
    number: u32,
    /// The epoch of the session's streams this handle belongs to: a handle of a closed session
    /// writes into nothing (see [`crate::event_scripts`]).
    epoch: String,
    local: Arc<Local>,
}

/// What a fresh request stream's handle tells the reader it started without Redis: an answer
/// that ends up as plain JSON (nothing published) costs no round trip but the opening.
#[derive(Debug)]
struct Local {
    /// Opened by this handle and not subscribed to yet: the first reader needs no takeover
    /// (its generation is the one the opening set) and nothing to fetch before a publish.
    fresh: AtomicBool,
    /// Published into through this handle.
    touched: AtomicBool,
    /// Whether any reader of this handle's stream asked Redis (or may have: not fresh).
    asked: AtomicBool,
    /// Closed through this handle.
    closed: AtomicBool,
    /// Wakes that first reader on a publish, release or close through this handle.
    changed: Notify,
}

impl Local {
    fn wake(&self) {
        // A permit is kept if the reader is not waiting yet.
        self.changed.notify_one();
    }
}

impl fmt::Debug for RedisStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisStream")
            .field("number", &self.number)
            .finish_non_exhaustive()
    }
}

impl EventStream for RedisStream {
    fn number(&self) -> u32 {
        self.number
    }

    fn publish(&self, payload: Bytes) -> StreamFuture<Result<EventId, PublishError>> {
        self.local.touched.store(true, Ordering::Release);
        let store = &self.store;
        let command = evalsha(
            &store.scripts.publish,
            &[
                store.meta_key(&self.session),
                store.stream_key(&self.session, self.number),
            ],
            &[
                self.epoch.clone().into_bytes(),
                self.number.to_string().into_bytes(),
                payload.to_vec(),
                store.capacity.to_string().into_bytes(),
                store.now().to_string().into_bytes(),
                store.idle().to_string().into_bytes(),
            ],
        );
        let answer = store.call(command);
        self.local.wake();
        let number = self.number;
        StoreFuture::boxed(async move {
            let sequence = integer(answer.await?)?;
            let sequence = u64::try_from(sequence).map_err(|_| PublishError::Closed)?;
            Ok(EventCursor {
                stream: number,
                sequence,
            }
            .to_event_id())
        })
    }

    fn close(&self) -> StreamFuture<Result<(), StoreError>> {
        self.local.closed.store(true, Ordering::Release);
        self.local.wake();
        if self.is_untouched() && !self.local.asked.load(Ordering::Acquire) {
            // Never published into, and no reader asked Redis: nothing there needs to hear of
            // it (an answer that went out as plain JSON costs no round trip here).
            return StoreFuture::ready(Ok(()));
        }
        let store = &self.store;
        let command = evalsha(
            &store.scripts.close,
            &[
                store.meta_key(&self.session),
                store.control_key(&self.session),
            ],
            &[self.epoch.clone(), self.number.to_string()],
        );
        let answer = store.call(command);
        StoreFuture::boxed(async move { answer.await.map(|_| ()) })
    }

    fn is_untouched(&self) -> bool {
        !self.local.touched.load(Ordering::Acquire)
    }

    fn release_reader(&self, retry: Duration) -> StreamFuture<Result<(), PublishError>> {
        let store = &self.store;
        let command = evalsha(
            &store.scripts.release,
            &[
                store.meta_key(&self.session),
                store.control_key(&self.session),
            ],
            &[
                self.epoch.clone(),
                self.number.to_string(),
                millis_of(retry).to_string(),
                store.now().to_string(),
                store.idle().to_string(),
            ],
        );
        let answer = store.call(command);
        self.local.wake();
        StoreFuture::boxed(async move {
            match integer(answer.await?)? {
                0 => Err(PublishError::Closed),
                _ => Ok(()),
            }
        })
    }

    fn subscribe(&self, start: Start) -> Box<dyn EventReader> {
        if self.local.fresh.swap(false, Ordering::AcqRel) && self.is_untouched() {
            // The opening set generation 0 and nothing is published yet: the reader waits
            // for this handle's first publish, release or close before it asks Redis.
            let local = Arc::clone(&self.local);
            let waited = async move {
                local.changed.notified().await;
                local.asked.store(true, Ordering::Release);
                if local.closed.load(Ordering::Acquire) && !local.touched.load(Ordering::Acquire) {
                    // Closed before anything was published (see `close`).
                    return Ok(Taken::Unknown);
                }
                Ok(Taken::Lazily)
            };
            let epoch = self.epoch.clone();
            return RedisReader::follow(
                &self.store,
                &self.session,
                self.number,
                0,
                Some(epoch),
                waited,
            );
        }
        self.local.asked.store(true, Ordering::Release);
        let taken = self.store.takeover(
            &self.session,
            self.number,
            Some(&self.epoch),
            Begin::At(start),
        );
        RedisReader::follow(&self.store, &self.session, self.number, 0, None, taken)
    }
}

/// What a reader's task has fetched for it.
#[derive(Debug)]
struct Inbox {
    events: VecDeque<(u64, Bytes)>,
    /// How the reader ends once the events are read.
    end: Option<Next>,
    /// The last sequence handed out (or the cursor the reader started from).
    cursor: u64,
    /// Bumped on every change, so a reader can tell whether anything came since it looked.
    version: u64,
}

#[derive(Debug)]
struct Shared {
    inbox: Mutex<Inbox>,
    changes: Notify,
    /// Wakes the task once the reader made room in the inbox.
    room: Notify,
}

impl Shared {
    fn version(&self) -> u64 {
        self.inbox.lock().map_or(u64::MAX, |inbox| inbox.version)
    }

    /// Hands the reader what was fetched (and how it ends, if it does).
    fn deliver(&self, events: Vec<(u64, Bytes)>, end: Option<Next>) {
        if events.is_empty() && end.is_none() {
            return;
        }
        if let Ok(mut inbox) = self.inbox.lock() {
            inbox.events.extend(events);
            if inbox.end.is_none() {
                inbox.end = end;
            }
            inbox.version += 1;
        }
        self.changes.notify_waiters();
    }

    fn started_after(&self, start: u64) {
        if let Ok(mut inbox) = self.inbox.lock() {
            inbox.cursor = start;
        }
    }

    /// Waits until the reader holds fewer than [`HELD_EVENTS`] fetched events.
    async fn wait_for_room(&self) {
        loop {
            let room = self.room.notified();
            let mut room = std::pin::pin!(room);
            room.as_mut().enable();
            if self
                .inbox
                .lock()
                .map_or(true, |inbox| inbox.events.len() < HELD_EVENTS)
            {
                return;
            }
            room.await;
        }
    }
}

/// One reader of a Redis stream: what its task fetched, handed out in order.
struct RedisReader {
    shared: Arc<Shared>,
    stream: u32,
    /// The inbox's version when this reader last looked.
    seen: u64,
    /// Ends with the reader: a dropped reader's blocking read is abandoned at once.
    task: Option<JoinHandle<()>>,
}

impl fmt::Debug for RedisReader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisReader")
            .field("stream", &self.stream)
            .finish_non_exhaustive()
    }
}

impl Drop for RedisReader {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

impl RedisReader {
    /// A reader of stream `number` whose takeover `taken` answers; its task follows the stream
    /// from there.
    fn follow(
        store: &Arc<Inner>,
        session: &SessionId,
        number: u32,
        start: u64,
        epoch: Option<String>,
        taken: impl Future<Output = Result<Taken, StoreError>> + Send + 'static,
    ) -> Box<dyn EventReader> {
        let shared = Arc::new(Shared {
            inbox: Mutex::new(Inbox {
                events: VecDeque::new(),
                end: None,
                cursor: start,
                version: 0,
            }),
            changes: Notify::new(),
            room: Notify::new(),
        });
        let follower = Follower {
            store: Arc::clone(store),
            shared: Arc::clone(&shared),
            meta: store.meta_key(session),
            data: store.stream_key(session, number),
            control: store.control_key(session),
            number,
            connection: None,
        };
        let task = match tokio::runtime::Handle::try_current() {
            Ok(runtime) => Some(runtime.spawn(follower.run(epoch, taken))),
            Err(_) => {
                shared.deliver(Vec::new(), Some(Next::Failed));
                None
            }
        };
        Box::new(Self {
            shared,
            stream: number,
            seen: 0,
            task,
        })
    }
}

impl EventReader for RedisReader {
    fn poll_next(&mut self) -> Next {
        let Ok(mut inbox) = self.shared.inbox.lock() else {
            return Next::Failed;
        };
        self.seen = inbox.version;
        match inbox.events.pop_front() {
            Some((sequence, payload)) => {
                inbox.cursor = sequence;
                let room = inbox.events.len() < HELD_EVENTS;
                drop(inbox);
                if room {
                    self.shared.room.notify_one();
                }
                let cursor = EventCursor {
                    stream: self.stream,
                    sequence,
                };
                Next::Event(cursor.to_event_id(), payload)
            }
            None => inbox.end.clone().unwrap_or(Next::Idle),
        }
    }

    fn changed(&mut self) -> Changed<'_> {
        Box::pin(async move {
            loop {
                // Registered before the version is read, so a delivery between the two wakes.
                let notified = self.shared.changes.notified();
                let mut notified = std::pin::pin!(notified);
                notified.as_mut().enable();
                let now = self.shared.version();
                if now != self.seen {
                    self.seen = now;
                    return;
                }
                notified.await;
            }
        })
    }

    fn cursor_id(&self) -> EventId {
        let sequence = self.shared.inbox.lock().map_or(0, |inbox| inbox.cursor);
        EventCursor {
            stream: self.stream,
            sequence,
        }
        .to_event_id()
    }

    fn stream(&self) -> u32 {
        self.stream
    }
}

/// A reader's task: it fetches what follows the reader's cursor and blocks for more.
struct Follower {
    store: Arc<Inner>,
    shared: Arc<Shared>,
    meta: String,
    data: String,
    control: String,
    number: u32,
    /// The connection its blocking reads go out on, made when first needed.
    connection: Option<MultiplexedConnection>,
}

impl Follower {
    /// Follows the stream from where `taken` (a takeover, or a fresh stream's first change
    /// when the reader's `epoch` is known already) leaves it.
    async fn run(
        mut self,
        epoch: Option<String>,
        taken: impl Future<Output = Result<Taken, StoreError>>,
    ) {
        let (epoch, generation, mut cursor, mut fetched) = match (taken.await, epoch) {
            (
                Ok(Taken::Reader {
                    epoch,
                    generation,
                    start,
                    fetched,
                }),
                _,
            ) => (epoch, generation, start, Some(fetched)),
            (Ok(Taken::Lazily), Some(epoch)) => (epoch, 0, 0, None),
            // The session's streams are gone (closed or expired meanwhile).
            (Ok(Taken::Unknown | Taken::Evicted | Taken::Lazily), _) => {
                return self.shared.deliver(Vec::new(), Some(Next::Closed));
            }
            (Err(_), _) => return self.shared.deliver(Vec::new(), Some(Next::Failed)),
        };
        self.shared.started_after(cursor);
        loop {
            let found = match fetched.take() {
                Some(found) => found,
                None => match self.fetch(&epoch, generation, cursor).await {
                    Ok(found) => found,
                    Err(_) => return self.shared.deliver(Vec::new(), Some(Next::Failed)),
                },
            };
            let full = found.events.len() >= BATCH;
            if let Some((last, _)) = found.events.last() {
                cursor = *last;
            }
            let ends = found.end.is_some();
            self.shared.deliver(found.events, found.end);
            if ends {
                return;
            }
            self.shared.wait_for_room().await;
            if !full && self.block(cursor, &found.tip).await.is_err() {
                return self.shared.deliver(Vec::new(), Some(Next::Failed));
            }
        }
    }

    async fn connection(&mut self) -> Result<&mut MultiplexedConnection, StoreError> {
        let timeout = self.store.config.timeout;
        if self.connection.is_none() {
            let made = dedicated(&self.store.client, timeout, self.store.config.block);
            let made = bounded(timeout, made)
                .await
                .map_err(|_| StoreError::unavailable(TimedOut(timeout)))?
                .map_err(StoreError::unavailable)?;
            self.connection = Some(made);
        }
        self.connection
            .as_mut()
            .ok_or_else(|| StoreError::unavailable(Failed("no connection".into())))
    }

    async fn fetch(
        &mut self,
        epoch: &str,
        generation: u64,
        cursor: u64,
    ) -> Result<Fetched, StoreError> {
        let timeout = self.store.config.timeout;
        let store = Arc::clone(&self.store);
        let mut invocation = store.scripts.fetch.prepare_invoke();
        invocation
            .key(&self.meta)
            .key(&self.data)
            .key(&self.control)
            .arg(epoch)
            .arg(self.number)
            .arg(generation)
            .arg(cursor)
            .arg(BATCH)
            .arg(store.now())
            .arg(store.idle());
        let connection = self.connection().await?;
        let value: Value = bounded(timeout, invocation.invoke_async(connection))
            .await
            .map_err(|_| StoreError::unavailable(TimedOut(timeout)))?
            .map_err(StoreError::unavailable)?;
        Fetched::parse(value)
    }

    /// Blocks until the stream has an event after `cursor` or the wake-up stream an entry
    /// after `tip`, at most [`RedisConfig::block`].
    async fn block(&mut self, cursor: u64, tip: &str) -> Result<(), StoreError> {
        let (timeout, block) = (self.store.config.timeout, self.store.config.block);
        let mut read = redis::cmd("XREAD");
        read.arg("COUNT")
            .arg(1)
            .arg("BLOCK")
            .arg(millis_of(block).max(1))
            .arg("STREAMS")
            .arg(&self.data)
            .arg(&self.control)
            .arg(format!("{cursor}-0"))
            .arg(tip);
        let connection = self.connection().await?;
        let answer: Result<Value, _> = bounded(block + timeout, read.query_async(connection))
            .await
            .map_err(|_| StoreError::unavailable(TimedOut(block + timeout)))?;
        if let Err(error) = answer {
            // A broken connection is made anew at the next look.
            self.connection = None;
            return Err(StoreError::unavailable(error));
        }
        Ok(())
    }
}

/// The writer task: sends queued steps in order, those queued together in one pipeline, each
/// pipeline bounded by `timeout`. Steps whose caller stopped waiting are dropped unsent.
async fn write(
    mut connection: ConnectionManager,
    scripts: Arc<EventScripts>,
    timeout: Duration,
    mut jobs: mpsc::UnboundedReceiver<Job>,
) {
    let mut batch = Vec::new();
    while let Some(job) = jobs.recv().await {
        batch.push(job);
        while batch.len() < PIPELINE {
            match jobs.try_recv() {
                Ok(job) => batch.push(job),
                Err(_) => break,
            }
        }
        batch.retain(|job| !job.reply.is_closed());
        if batch.is_empty() {
            continue;
        }
        let answers = run_batch(&mut connection, &scripts, timeout, &batch).await;
        for (job, answer) in batch.drain(..).zip(answers) {
            let _ = job.reply.send(answer);
        }
    }
}

/// One answer per job of `batch`, in order. Scripts Redis lost (it restarted) are loaded
/// again and the steps refused for it sent once more.
async fn run_batch(
    connection: &mut ConnectionManager,
    scripts: &EventScripts,
    timeout: Duration,
    batch: &[Job],
) -> Vec<Result<Value, StoreError>> {
    let commands: Vec<&Cmd> = batch.iter().map(|job| &job.command).collect();
    let mut answers = match pipeline(connection, timeout, &commands).await {
        Ok(answers) => answers,
        Err(error) => return failed_all(batch.len(), &error),
    };
    let lost: Vec<usize> = answers
        .iter()
        .enumerate()
        .filter(|(_, answer)| is_noscript(answer))
        .map(|(index, _)| index)
        .collect();
    if !lost.is_empty() {
        for script in scripts.all() {
            match bounded(timeout, script.load_async(connection)).await {
                Ok(Ok(_)) => {}
                Ok(Err(error)) => return failed_all(batch.len(), &error.to_string()),
                Err(_) => return failed_all(batch.len(), &TimedOut(timeout).to_string()),
            }
        }
        let again: Vec<&Cmd> = lost
            .iter()
            .filter_map(|&index| commands.get(index).copied())
            .collect();
        match pipeline(connection, timeout, &again).await {
            Ok(retried) => {
                for (index, answer) in lost.into_iter().zip(retried) {
                    if let Some(slot) = answers.get_mut(index) {
                        *slot = answer;
                    }
                }
            }
            Err(error) => return failed_all(batch.len(), &error),
        }
    }
    answers
        .into_iter()
        .map(|answer| match answer {
            Value::ServerError(error) => {
                Err(StoreError::unavailable(redis::RedisError::from(error)))
            }
            value => Ok(value),
        })
        .collect()
}

async fn pipeline(
    connection: &mut ConnectionManager,
    timeout: Duration,
    commands: &[&Cmd],
) -> Result<Vec<Value>, String> {
    let mut pipe = redis::pipe();
    pipe.ignore_errors();
    for command in commands {
        pipe.add_command((*command).clone());
    }
    let answers: Vec<Value> = bounded(timeout, pipe.query_async(connection))
        .await
        .map_err(|_| TimedOut(timeout).to_string())?
        .map_err(|error| error.to_string())?;
    if answers.len() == commands.len() {
        Ok(answers)
    } else {
        Err("redis answered a pipeline short".into())
    }
}

fn failed_all(count: usize, error: &str) -> Vec<Result<Value, StoreError>> {
    (0..count)
        .map(|_| Err(StoreError::unavailable(Failed(error.to_owned()))))
        .collect()
}

fn is_noscript(answer: &Value) -> bool {
    matches!(answer, Value::ServerError(error) if error.kind() == Some(ServerErrorKind::NoScript))
}

/// `EVALSHA` of `script` with `keys` and `args`, for a pipeline.
fn evalsha<A: redis::ToRedisArgs>(script: &Script, keys: &[String], args: &[A]) -> Cmd {
    let mut command = redis::cmd("EVALSHA");
    command.arg(script.get_hash()).arg(keys.len()).arg(keys);
    for arg in args {
        command.arg(arg);
    }
    command
}

fn malformed() -> StoreError {
    StoreError::unavailable(Failed(
        "redis answered a script in an unexpected shape".into(),
    ))
}

fn text(value: Value) -> Result<String, StoreError> {
    match value {
        Value::BulkString(bytes) => String::from_utf8(bytes).map_err(|_| malformed()),
        Value::SimpleString(text) => Ok(text),
        _ => Err(malformed()),
    }
}

fn integer(value: Value) -> Result<i64, StoreError> {
    match value {
        Value::Int(number) => Ok(number),
        _ => Err(malformed()),
    }
}

fn unsigned(value: Value) -> Result<u64, StoreError> {
    u64::try_from(integer(value)?).map_err(|_| malformed())
}

/// Milliseconds since the Unix epoch (0 before it), what the keys' expiries count in.
fn millis(time: SystemTime) -> u64 {
    millis_of(time.duration_since(UNIX_EPOCH).unwrap_or(Duration::ZERO))
}
