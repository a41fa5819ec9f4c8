//! The Redis event store: every session's streams on Redis Streams (see
//! [`crate::event_scripts`] for the keys), so a stream written on one replica is resumed on any
//! other with the runtime's own cursor, and one reader per stream holds across replicas.
//!
//! Each step is one script, queued in call order on one writer task per store (so events keep
//! the order of the calls) and sent in pipelines over the store's shared connection, bounded
//! by the configured timeout. A request stream's first reader, subscribed through the handle
//! that opened it (a `POST`'s own answer), is fed in process by that writer as Redis
//! acknowledges each step, so it never reads Redis and no event reaches it before Redis holds
//! it; Redis is written for another replica to resume from. Every other reader (a `GET`, a
//! resume, a takeover) follows its stream from a task of its own: its first batch comes with
//! the takeover, and when it has read everything it blocks in `XREAD` on a connection of its
//! own (never the shared one, which a blocking read would stall), waking on a new event or a
//! takeover, release or close from any replica, and looking again at least every
//! [`RedisConfig::block`].

use std::collections::VecDeque;
use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
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
use crate::connection::{ConnectError, TimedOut, ask, bounded, connect, dedicated, millis_of};
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
/// and the first batch), then a reader on Redis that has read everything costs one blocking
/// read per wake-up plus one fetch; a release, a close and a session's close are one each. A
/// request stream's first reader through the handle that opened it asks Redis nothing (it is
/// fed in process), and closing a stream nothing was published into nor released costs
/// nothing: an answer that goes out as plain JSON costs the opening alone. Steps queued
/// together share a pipeline ([`Self::sent`] counts both). Every step is bounded by
/// [`RedisConfig::timeout`]: past it the answer is [`StoreError::Unavailable`] (a `503`), and
/// the connection is re-established in the background.
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
    sent: Arc<Counters>,
    /// For readers' connections of their own.
    client: Client,
    scripts: Arc<EventScripts>,
    config: RedisConfig,
    capacity: usize,
    epochs: Epochs,
}

/// One queued step and who awaits its answer.
struct Job {
    command: Cmd,
    /// Told the answer by the writer before the caller is, in the order the steps were queued
    /// (what feeds a stream's own reader in process).
    then: Option<Then>,
    reply: oneshot::Sender<Result<Value, StoreError>>,
}

type Then = Box<dyn FnOnce(&Result<Value, StoreError>) + Send + Sync>;

/// What the writer has sent Redis.
#[derive(Debug, Default)]
struct Counters {
    pipelines: AtomicU64,
    steps: AtomicU64,
}

/// What a [`RedisEventStore`] has sent Redis since it connected: each pipeline is one round
/// trip, carrying one script call per step (blocking reads and fetches of readers on Redis go
/// on their own connections and are not counted here).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sent {
    /// Pipelines sent, each one round trip.
    pub pipelines: u64,
    /// Steps (script calls) those pipelines carried.
    pub steps: u64,
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
        let sent = Arc::new(Counters::default());
        let writer = Writer {
            connection,
            scripts: Arc::clone(&scripts),
            timeout,
            sent: Arc::clone(&sent),
        };
        tokio::spawn(writer.run(jobs));
        Ok(Self {
            inner: Arc::new(Inner {
                queue,
                sent,
                client,
                scripts,
                config,
                capacity: capacity.max(1),
                epochs: Epochs::default(),
            }),
        })
    }

    /// The configuration the store was built with.
    pub fn config(&self) -> &RedisConfig {
        &self.inner.config
    }

    /// What the store has sent Redis so far.
    pub fn sent(&self) -> Sent {
        Sent {
            pipelines: self.inner.sent.pipelines.load(Ordering::Relaxed),
            steps: self.inner.sent.steps.load(Ordering::Relaxed),
        }
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
        self.call_then(command, None)
    }

    /// [`Self::call`], with `then` told the answer first (see [`Job::then`]).
    fn call_then(
        &self,
        command: Cmd,
        then: Option<Then>,
    ) -> impl Future<Output = Result<Value, StoreError>> + Send + 'static {
        let (reply, answer) = oneshot::channel();
        let queued = self
            .queue
            .send(Job {
                command,
                then,
                reply,
            })
            .is_ok();
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
                self.stream_key(session, 0),
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
                written: AtomicBool::new(false),
                asked: AtomicBool::new(!fresh),
                closed: AtomicBool::new(false),
                feed: Feed::default(),
                capacity: self.capacity,
            }),
        })
    }
}

impl EventStore for RedisEventStore {
    fn standalone<'a>(&'a self, session: &'a SessionId) -> OpenedStream<'a> {
        if let Some(epoch) = self.inner.epochs.get(session) {
            return StoreFuture::ready(Ok(self.inner.handle(session, 0, epoch, false)));
        }
        let epoch = self.inner.standalone(session);
        StoreFuture::boxed(async move {
            let epoch = epoch.await?;
            self.inner.epochs.learn(session, &epoch);
            Ok(self.inner.handle(session, 0, epoch, false))
        })
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
                Taken::Unknown => Err(ResumeError::Unknown),
                Taken::Evicted => Err(ResumeError::Evicted),
                taken @ Taken::Reader { .. } => Ok(RedisReader::follow(
                    &self.inner,
                    session,
                    after.stream,
                    after.sequence,
                    async move { Ok(taken) },
                )),
            }
        })
    }

    fn close_session(&self, session: &SessionId) -> StreamFuture<Result<(), StoreError>> {
        self.inner.epochs.forget(session);
        StoreFuture::boxed(self.inner.close_session(session))
    }
}

/// How many sessions' epochs a store remembers (past it, it forgets them all and learns again).
const EPOCHS_KEPT: usize = 65_536;

/// The epochs of sessions whose standalone stream this store has opened, so opening it again
/// (every `POST` does, for messages outside its answer) asks Redis nothing. A remembered epoch
/// can only be out of date when the session's streams were closed (or expired) since: its
/// handle then writes nothing, which is what a handle of a closed session must do.
#[derive(Debug, Default)]
struct Epochs {
    known: Mutex<std::collections::HashMap<SessionId, String>>,
}

impl Epochs {
    fn get(&self, session: &SessionId) -> Option<String> {
        self.known.lock().ok()?.get(session).cloned()
    }

    fn learn(&self, session: &SessionId, epoch: &str) {
        if let Ok(mut known) = self.known.lock() {
            if known.len() >= EPOCHS_KEPT {
                known.clear();
            }
            known.insert(session.clone(), epoch.to_owned());
        }
    }

    fn forget(&self, session: &SessionId) {
        if let Ok(mut known) = self.known.lock() {
            known.remove(session);
        }
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

/// What a request stream's handle knows without asking Redis, and its own reader's feed.
#[derive(Debug)]
struct Local {
    /// Opened by this handle and not subscribed to yet: the first reader is fed in process
    /// (its generation is the one the opening set, 0).
    fresh: AtomicBool,
    /// Published into through this handle.
    touched: AtomicBool,
    /// Published into or released through this handle: Redis knows of the stream's use.
    written: AtomicBool,
    /// Whether a reader of this handle's stream may follow it on Redis (not fresh, or taken
    /// over through this handle).
    asked: AtomicBool,
    /// Closed through this handle.
    closed: AtomicBool,
    feed: Feed,
    /// How many events the fed reader may hold unread before it ends as evicted (the stream's
    /// capacity, as a reader falling behind a tail in memory).
    capacity: usize,
}

/// The in-process reader of a request stream, while it holds the stream: the writer hands it
/// each event once Redis has taken it, and its end (closed, released, superseded, failed).
#[derive(Debug, Default)]
struct Feed {
    reader: Mutex<Option<Weak<Shared>>>,
}

impl Feed {
    fn attach(&self, shared: &Arc<Shared>) {
        if let Ok(mut reader) = self.reader.lock() {
            *reader = Some(Arc::downgrade(shared));
        }
    }

    /// Hands the fed reader event `sequence` (one that fell `capacity` behind ends evicted).
    fn event(&self, sequence: u64, payload: Bytes, capacity: usize) {
        let Ok(mut held) = self.reader.lock() else {
            return;
        };
        let Some(shared) = held.as_ref().and_then(Weak::upgrade) else {
            *held = None;
            return;
        };
        if shared.held() >= capacity {
            *held = None;
            shared.deliver(Vec::new(), Some(Next::Evicted));
        } else {
            shared.deliver(vec![(sequence, payload)], None);
        }
    }

    /// Ends the fed reader with `end` once it has read what it was handed; nothing more is fed.
    fn end(&self, end: Next) {
        let taken = self.reader.lock().ok().and_then(|mut held| held.take());
        if let Some(shared) = taken.and_then(|weak| weak.upgrade()) {
            shared.deliver(Vec::new(), Some(end));
        }
    }
}

impl fmt::Debug for RedisStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisStream")
            .field("number", &self.number)
            .finish_non_exhaustive()
    }
}

impl RedisStream {
    fn meta_key(&self) -> String {
        self.store.meta_key(&self.session)
    }

    fn control_key(&self) -> String {
        self.store.control_key(&self.session)
    }
}

impl EventStream for RedisStream {
    fn number(&self) -> u32 {
        self.number
    }

    fn publish(&self, payload: Bytes) -> StreamFuture<Result<EventId, PublishError>> {
        self.local.touched.store(true, Ordering::Release);
        self.local.written.store(true, Ordering::Release);
        let store = &self.store;
        let command = evalsha(
            &store.scripts.publish,
            &[
                self.meta_key(),
                store.stream_key(&self.session, self.number),
            ],
            &[
                self.epoch.as_bytes(),
                self.number.to_string().as_bytes(),
                payload.as_ref(),
                store.capacity.to_string().as_bytes(),
                store.now().to_string().as_bytes(),
                store.idle().to_string().as_bytes(),
            ],
        );
        let local = Arc::clone(&self.local);
        let feed: Then = Box::new(move |answer| match answer.as_ref().map(Published::parse) {
            Ok(Ok(Published::Event {
                sequence,
                generation: 0,
            })) => local.feed.event(sequence, payload, local.capacity),
            // Another reader took the stream over (on any replica) before this event.
            Ok(Ok(Published::Event { .. })) => local.feed.end(Next::Superseded),
            Ok(Ok(Published::Closed)) => local.feed.end(Next::Closed),
            Ok(Err(_)) | Err(_) => local.feed.end(Next::Failed),
        });
        let answer = store.call_then(command, Some(feed));
        let number = self.number;
        StoreFuture::boxed(async move {
            match Published::parse(&answer.await?)? {
                Published::Event { sequence, .. } => Ok(EventCursor {
                    stream: number,
                    sequence,
                }
                .to_event_id()),
                Published::Closed => Err(PublishError::Closed),
            }
        })
    }

    fn close(&self) -> StreamFuture<Result<(), StoreError>> {
        if self.local.closed.swap(true, Ordering::AcqRel) {
            // Closed through this handle already (a stream's work closes it, and so does its
            // guard): Redis heard it once.
            return StoreFuture::ready(Ok(()));
        }
        if !self.local.written.load(Ordering::Acquire) && !self.local.asked.load(Ordering::Acquire)
        {
            // Never published into nor released, and no reader on Redis: nothing there needs
            // to hear of it (an answer that went out as plain JSON costs no round trip here).
            self.local.feed.end(Next::Closed);
            return StoreFuture::ready(Ok(()));
        }
        let command = evalsha(
            &self.store.scripts.close,
            &[self.meta_key(), self.control_key()],
            &[self.epoch.clone(), self.number.to_string()],
        );
        let local = Arc::clone(&self.local);
        let feed: Then = Box::new(move |answer| {
            local.feed.end(match answer {
                Ok(_) => Next::Closed,
                Err(_) => Next::Failed,
            });
        });
        let answer = self.store.call_then(command, Some(feed));
        StoreFuture::boxed(async move { answer.await.map(|_| ()) })
    }

    fn is_untouched(&self) -> bool {
        !self.local.touched.load(Ordering::Acquire)
    }

    fn release_reader(&self, retry: Duration) -> StreamFuture<Result<(), PublishError>> {
        self.local.written.store(true, Ordering::Release);
        let store = &self.store;
        let command = evalsha(
            &store.scripts.release,
            &[self.meta_key(), self.control_key()],
            &[
                self.epoch.clone(),
                self.number.to_string(),
                millis_of(retry).to_string(),
                store.now().to_string(),
                store.idle().to_string(),
            ],
        );
        let local = Arc::clone(&self.local);
        let feed: Then = Box::new(move |answer| match answer.as_ref().map(integer_of) {
            Ok(Some(0)) => {}
            Ok(Some(_)) => local.feed.end(Next::Released(retry)),
            Ok(None) | Err(_) => local.feed.end(Next::Failed),
        });
        let answer = store.call_then(command, Some(feed));
        StoreFuture::boxed(async move {
            match integer(answer.await?)? {
                0 => Err(PublishError::Closed),
                _ => Ok(()),
            }
        })
    }

    fn subscribe(&self, start: Start) -> Box<dyn EventReader> {
        if self.local.fresh.swap(false, Ordering::AcqRel) && self.is_untouched() {
            // The opening set generation 0 and nothing is published yet: this reader is fed
            // in process as Redis takes each step, and reads nothing from Redis.
            let shared = Shared::new(0);
            self.local.feed.attach(&shared);
            return Box::new(RedisReader {
                shared,
                stream: self.number,
                seen: 0,
                task: None,
            });
        }
        // A reader on Redis takes over: the fed one (if any) is superseded now.
        self.local.feed.end(Next::Superseded);
        self.local.asked.store(true, Ordering::Release);
        let taken = self.store.takeover(
            &self.session,
            self.number,
            Some(&self.epoch),
            Begin::At(start),
        );
        RedisReader::follow(&self.store, &self.session, self.number, 0, taken)
    }
}

/// What a publish answers.
#[derive(Debug)]
enum Published {
    /// The event's sequence, and the generation of the reader holding the stream then.
    Event {
        sequence: u64,
        generation: u64,
    },
    Closed,
}

impl Published {
    fn parse(value: &Value) -> Result<Self, StoreError> {
        match value {
            Value::Array(items) => match items.as_slice() {
                [Value::Int(sequence), Value::Int(generation)] => Ok(Self::Event {
                    sequence: u64::try_from(*sequence).map_err(|_| malformed())?,
                    generation: u64::try_from(*generation).map_err(|_| malformed())?,
                }),
                _ => Err(malformed()),
            },
            Value::Int(_) => Ok(Self::Closed),
            _ => Err(malformed()),
        }
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
    /// An empty inbox whose reader starts after sequence `cursor`.
    fn new(cursor: u64) -> Arc<Self> {
        Arc::new(Self {
            inbox: Mutex::new(Inbox {
                events: VecDeque::new(),
                end: None,
                cursor,
                version: 0,
            }),
            changes: Notify::new(),
            room: Notify::new(),
        })
    }

    /// How many events the reader holds unread.
    fn held(&self) -> usize {
        self.inbox
            .lock()
            .map_or(usize::MAX, |inbox| inbox.events.len())
    }

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
        taken: impl Future<Output = Result<Taken, StoreError>> + Send + 'static,
    ) -> Box<dyn EventReader> {
        let shared = Shared::new(start);
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
            Ok(runtime) => Some(runtime.spawn(follower.run(taken))),
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
    /// Follows the stream from where the takeover `taken` leaves it.
    async fn run(mut self, taken: impl Future<Output = Result<Taken, StoreError>>) {
        let (epoch, generation, mut cursor, mut fetched) = match taken.await {
            Ok(Taken::Reader {
                epoch,
                generation,
                start,
                fetched,
            }) => (epoch, generation, start, Some(fetched)),
            // The session's streams are gone (closed or expired meanwhile).
            Ok(Taken::Unknown | Taken::Evicted) => {
                return self.shared.deliver(Vec::new(), Some(Next::Closed));
            }
            Err(_) => return self.shared.deliver(Vec::new(), Some(Next::Failed)),
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
            self.connection = Some(ask(timeout, made).await?);
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
        let value: Value = ask(timeout, invocation.invoke_async(connection)).await?;
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

/// The writer task's side: the shared connection and what it has sent.
struct Writer {
    connection: ConnectionManager,
    scripts: Arc<EventScripts>,
    timeout: Duration,
    sent: Arc<Counters>,
}

impl Writer {
    /// Sends queued steps in order, those queued together in one pipeline, each pipeline
    /// bounded by the timeout; each answer goes first to the step's `then`, then to its
    /// caller. Steps whose caller stopped waiting are dropped unsent.
    async fn run(mut self, mut jobs: mpsc::UnboundedReceiver<Job>) {
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
            let answers = self.run_batch(&batch).await;
            for (job, answer) in batch.drain(..).zip(answers) {
                if let Some(then) = job.then {
                    then(&answer);
                }
                let _ = job.reply.send(answer);
            }
        }
    }

    /// One answer per job of `batch`, in order. Scripts Redis lost (it restarted) are loaded
    /// again and the steps refused for it sent once more.
    async fn run_batch(&mut self, batch: &[Job]) -> Vec<Result<Value, StoreError>> {
        let commands: Vec<&Cmd> = batch.iter().map(|job| &job.command).collect();
        let mut answers = match self.pipeline(&commands).await {
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
            let timeout = self.timeout;
            for script in self.scripts.all() {
                if let Err(error) = ask(timeout, script.load_async(&mut self.connection)).await {
                    return failed_all(batch.len(), &error.to_string());
                }
            }
            let again: Vec<&Cmd> = lost
                .iter()
                .filter_map(|&index| commands.get(index).copied())
                .collect();
            match self.pipeline(&again).await {
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

    async fn pipeline(&mut self, commands: &[&Cmd]) -> Result<Vec<Value>, String> {
        let mut pipe = redis::pipe();
        pipe.ignore_errors();
        for command in commands {
            pipe.add_command((*command).clone());
        }
        self.sent.pipelines.fetch_add(1, Ordering::Relaxed);
        self.sent.steps.fetch_add(
            u64::try_from(commands.len()).unwrap_or(u64::MAX),
            Ordering::Relaxed,
        );
        let answers: Vec<Value> = ask(self.timeout, pipe.query_async(&mut self.connection))
            .await
            .map_err(|error| error.to_string())?;
        if answers.len() == commands.len() {
            Ok(answers)
        } else {
            Err("redis answered a pipeline short".into())
        }
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

fn integer_of(value: &Value) -> Option<i64> {
    match value {
        Value::Int(number) => Some(*number),
        _ => None,
    }
}

fn unsigned(value: Value) -> Result<u64, StoreError> {
    u64::try_from(integer(value)?).map_err(|_| malformed())
}

/// Milliseconds since the Unix epoch (0 before it), what the keys' expiries count in.
fn millis(time: SystemTime) -> u64 {
    millis_of(time.duration_since(UNIX_EPOCH).unwrap_or(Duration::ZERO))
}
