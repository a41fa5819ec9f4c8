//! Event tails: each SSE stream publishes into a bounded history, readers follow it from a
//! cursor, and a reconnecting client resumes from `Last-Event-ID`. An event id names both the
//! stream and the position in it, so one `GET` can resume any of a session's streams. A cursor
//! the history no longer holds (or never issued) is a typed refusal, never an empty stream.
//!
//! Where histories live is behind [`EventStore`] (one per transport, shared by replicas that
//! must resume each other's streams); [`MemoryEventStore`], bounded rings in this process, is
//! the default. A store hands out [`EventStream`] handles to publish into and [`EventReader`]s
//! to follow them. Like the session store, it answers in [`StoreFuture`]s (ready at once in
//! memory, boxed over a network) and fails with [`StoreError`]: a resume the store refuses
//! (evicted, unknown) stays apart from one it could not answer, and a reader whose store
//! fails says so ([`Next::Failed`]) so its stream ends and the client resumes.
//!
//! The cursor is the SSE event id, a decimal `u64`: the stream's number in its top 24 bits (0
//! the session's standalone stream, request streams from 1), the event's sequence in its
//! stream in the low 40 bits (1 the first event, 0 "before the first", what a priming event
//! carries). With the session id the request names, it is all a replica needs to resume: the
//! store allocates stream numbers per session ([`EventStore::open_request_stream`]), so
//! replicas sharing a store never hand out one number twice for one session.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::Notify;

use crate::session::{SessionId, release_spare_capacity};
use crate::sse::EventId;
use crate::store::{StoreError, StoreFuture};

/// Bits of an event id that number the event within its stream.
const SEQUENCE_BITS: u32 = 40;
const SEQUENCE_MASK: u64 = (1 << SEQUENCE_BITS) - 1;

/// Where an event sits: which of the session's streams, and how far along it. Sequence 0 is
/// "before the first event", the cursor a priming event carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventCursor {
    /// The stream's number within its session: 0 the standalone stream, request streams
    /// from 1 (at most 24 bits are carried in an event id).
    pub stream: u32,
    /// How many events of the stream precede and include this one: 1 the first event, 0
    /// before it (at most 40 bits are carried in an event id).
    pub sequence: u64,
}

impl EventCursor {
    /// The SSE event id naming this cursor: the stream in the top 24 bits, the sequence in
    /// the low 40.
    pub fn to_event_id(self) -> EventId {
        EventId::new((u64::from(self.stream) << SEQUENCE_BITS) | (self.sequence & SEQUENCE_MASK))
    }

    crate::test_support::test_visible! {
        /// The cursor an event id names; `None` for an id no stream number fits.
        fn from_event_id(id: EventId) -> Option<Self> {
            let stream = u32::try_from(id.get() >> SEQUENCE_BITS).ok()?;
            Some(Self {
                stream,
                sequence: id.get() & SEQUENCE_MASK,
            })
        }
    }
}

/// Why a resume cannot be served.
#[derive(Debug, thiserror::Error)]
pub enum ResumeError {
    /// The event is older than what the stream's tail keeps.
    #[error("the event has been evicted from the stream's tail")]
    Evicted,
    /// No such event was issued (or its stream is no longer kept).
    #[error("no such event was issued")]
    Unknown,
    /// The store could not answer: the event may well be there (a `503`, not a refusal).
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What a reader finds after its cursor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Next {
    /// The next event.
    Event(EventId, Bytes),
    /// Nothing yet; wait for a change.
    Idle,
    /// The stream has ended and everything in it has been read.
    Closed,
    /// The reader fell behind the history and missed events: end the stream so it resumes.
    Evicted,
    /// Another reader took over this stream.
    Superseded,
    /// The server let go of this reader's connection (SSE polling): tell the client to
    /// reconnect after this long; what follows waits for it to resume.
    Released(Duration),
    /// The store failed while this reader followed it: end the stream so the client resumes
    /// once the store is back.
    Failed,
}

/// Why a publish to an in-memory tail failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the stream is closed")]
pub(crate) struct StreamClosed;

/// Why publishing into a stream (or releasing its reader) failed.
#[derive(Debug, thiserror::Error)]
pub enum PublishError {
    /// The stream has ended.
    #[error("the stream is closed")]
    Closed,
    /// The store could not take the event.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<StreamClosed> for PublishError {
    fn from(_: StreamClosed) -> Self {
        Self::Closed
    }
}

/// A stream's answer to publishing, closing or releasing. It owns what it needs (`'static`),
/// so a caller that cannot wait (a synchronous send, a `Drop`) can leave it to finish on its
/// own (the runtime then detaches it).
pub type StreamFuture<T> = StoreFuture<'static, T>;

/// A store's answer to opening a stream.
pub type OpenedStream<'a> = StoreFuture<'a, Result<Arc<dyn EventStream>, StoreError>>;

/// A store's answer to resuming a stream.
pub type ResumedStream<'a> = StoreFuture<'a, Result<Box<dyn EventReader>, ResumeError>>;

/// Where a new reader starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    /// Before the first event (a request's stream, read from its start).
    Beginning,
    /// After the last event handed to any earlier reader (a fresh `GET` of the session's own
    /// stream: what nobody has seen yet).
    Unread,
}

/// A future that completes when a stream may have something new for a reader.
pub type Changed<'a> = Pin<Box<dyn Future<Output = ()> + Send + 'a>>;

/// One stream's handle: the transports publish into it and open readers on it.
pub trait EventStream: Send + Sync + fmt::Debug + 'static {
    /// The stream's number within its session (0: the session's standalone stream), as the
    /// store allocated it.
    fn number(&self) -> u32;
    /// Appends an event; its id names this stream and the event's position in it. Events keep
    /// the order of the calls, not of the answers: a stream fixes an event's place when it is
    /// asked (a network stream queues it then), so a caller may publish again before an
    /// earlier answer came.
    fn publish(&self, payload: Bytes) -> StreamFuture<Result<EventId, PublishError>>;
    /// Ends the stream: readers drain what is left and finish; publishing fails from now on.
    fn close(&self) -> StreamFuture<Result<(), StoreError>>;
    /// Whether anything was published through this handle.
    fn is_untouched(&self) -> bool;
    /// Lets go of the current reader once it has read what is published so far: it ends with
    /// [`Next::Released`], and later events wait for the client to resume.
    fn release_reader(&self, retry: Duration) -> StreamFuture<Result<(), PublishError>>;
    /// A reader from `start`. It supersedes any earlier reader, so no event goes out on two
    /// connections.
    fn subscribe(&self, start: Start) -> Box<dyn EventReader>;
}

/// One reader's position in a stream. A network reader fills a buffer of its own in
/// [`Self::changed`] and hands it out in [`Self::poll_next`]; a failure meanwhile is the next
/// [`Next::Failed`].
pub trait EventReader: Send + fmt::Debug + 'static {
    /// What comes next, without waiting.
    fn poll_next(&mut self) -> Next;
    /// Completes when the stream changes after an [`Next::Idle`] (or the store failed).
    fn changed(&mut self) -> Changed<'_>;
    /// The id of the last event this reader was handed (or the cursor it started from).
    fn cursor_id(&self) -> EventId;
    /// The number of the stream being read.
    fn stream(&self) -> u32;
}

/// Where a transport's event streams live, per session. Replicas that share one store (and a
/// session store) can resume each other's streams: a stream opened while serving a request on
/// one replica is resumed with `Last-Event-ID` on another.
pub trait EventStore: Send + Sync + 'static {
    /// Whether every answer is [`StoreFuture::Ready`] (a store in this process's memory): the
    /// transport then takes them in place rather than boxing what awaits them.
    fn answers_at_once(&self) -> bool {
        false
    }
    /// The session's standalone (server-initiated) stream, number 0, opened on first use. It
    /// needs no number allocated, so a network store can answer at once with a handle.
    fn standalone<'a>(&'a self, session: &'a SessionId) -> OpenedStream<'a>;
    /// A new stream for one request's answer, kept so a dropped connection can resume it. Its
    /// number is the store's to allocate: never 0, and never one the session's other streams
    /// (opened through any handle of the store, on any replica) still carry.
    fn open_request_stream<'a>(&'a self, session: &'a SessionId) -> OpenedStream<'a>;
    /// A reader after the event `after` of one of the session's streams. A cursor the store
    /// never issued, or no longer holds, is refused ([`ResumeError::Unknown`],
    /// [`ResumeError::Evicted`]): a client must not be handed an empty stream it would
    /// reconnect to forever. A store that cannot answer says [`ResumeError::Store`].
    fn resume<'a>(&'a self, session: &'a SessionId, after: EventCursor) -> ResumedStream<'a>;
    /// Closes every stream of the session and forgets them (the session ended). `'static`, so
    /// a session ending in a synchronous path leaves it to finish on its own.
    fn close_session(&self, session: &SessionId) -> StreamFuture<Result<(), StoreError>>;
}

struct Ring {
    events: VecDeque<(u64, Bytes)>,
    next_sequence: u64,
    capacity: usize,
    closed: bool,
    /// The furthest sequence any reader has been handed, where a fresh reader starts.
    handed_out: u64,
    generation: u64,
    release: Option<Release>,
}

/// A reader let go of: which one, after which event, and when its client should reconnect.
#[derive(Debug, Clone, Copy)]
struct Release {
    generation: u64,
    after: u64,
    retry: Duration,
}

impl Ring {
    fn oldest(&self) -> u64 {
        self.events
            .front()
            .map_or(self.next_sequence, |(first, _)| *first)
    }
}

/// One stream's bounded history and its live edge, in memory.
pub(crate) struct EventTail {
    stream: u32,
    /// The tail itself, so a reader can be handed out from `&self`.
    this: std::sync::Weak<EventTail>,
    ring: Mutex<Ring>,
    /// Bumped on every change a reader may care about (publish, close, release, takeover), so
    /// a reader can tell whether anything happened since it last looked.
    version: AtomicU64,
    /// Wakes readers waiting for `version` to move. Held inline (a watch channel would be a
    /// separate allocation several times the size of an empty tail, for every stream).
    changes: Notify,
}

impl fmt::Debug for EventTail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventTail")
            .field("stream", &self.stream)
            .finish_non_exhaustive()
    }
}

impl EventTail {
    /// A tail for stream number `stream` keeping at most `capacity` events.
    pub fn new(stream: u32, capacity: usize) -> Arc<Self> {
        Arc::new_cyclic(|this| Self {
            stream,
            this: this.clone(),
            ring: Mutex::new(Ring {
                events: VecDeque::new(),
                next_sequence: 1,
                capacity: capacity.max(1),
                closed: false,
                handed_out: 0,
                generation: 0,
                release: None,
            }),
            version: AtomicU64::new(0),
            changes: Notify::new(),
        })
    }

    /// A tail that is already closed: what a stream of an ended session is.
    pub fn closed() -> Arc<Self> {
        let tail = Self::new(CLOSED_STREAM, 1);
        tail.close();
        tail
    }

    /// The stream's number within its session.
    pub fn stream(&self) -> u32 {
        self.stream
    }

    /// Marks a change and wakes waiting readers; one not waiting sees the new version the next
    /// time it looks.
    fn wake_readers(&self) {
        self.version.fetch_add(1, Ordering::Release);
        self.changes.notify_waiters();
    }

    fn current_version(&self) -> u64 {
        self.version.load(Ordering::Acquire)
    }

    /// Appends an event, evicting the oldest past capacity.
    pub fn publish(&self, payload: Bytes) -> Result<EventId, StreamClosed> {
        let id = {
            let mut ring = self.ring.lock().map_err(|_| StreamClosed)?;
            if ring.closed {
                return Err(StreamClosed);
            }
            let sequence = ring.next_sequence;
            ring.next_sequence += 1;
            if ring.events.len() == ring.capacity {
                ring.events.pop_front();
            }
            ring.events.push_back((sequence, payload));
            self.cursor(sequence).to_event_id()
        };
        self.wake_readers();
        Ok(id)
    }

    /// Ends the stream; readers drain what is left and finish.
    pub fn close(&self) {
        if let Ok(mut ring) = self.ring.lock() {
            ring.closed = true;
        }
        self.wake_readers();
    }

    /// Lets go of the current reader after what is published so far.
    pub fn release_reader(&self, retry: Duration) -> Result<(), StreamClosed> {
        {
            let mut ring = self.ring.lock().map_err(|_| StreamClosed)?;
            if ring.closed {
                return Err(StreamClosed);
            }
            ring.release = Some(Release {
                generation: ring.generation,
                after: ring.next_sequence - 1,
                retry,
            });
        }
        self.wake_readers();
        Ok(())
    }

    /// Whether anything was ever published.
    pub fn is_untouched(&self) -> bool {
        self.ring.lock().is_ok_and(|ring| ring.next_sequence == 1)
    }

    /// Takes over the stream for a new reader starting after `sequence`; any earlier reader
    /// is superseded so no event goes out on two connections.
    pub fn subscribe_after(&self, sequence: u64) -> Subscription {
        let generation = match self.ring.lock() {
            Ok(mut ring) => {
                ring.generation += 1;
                ring.generation
            }
            Err(_) => 0,
        };
        self.wake_readers();
        Subscription {
            // `this` upgrades while `&self` is borrowed; a tail being dropped reads as closed.
            tail: self.this.upgrade().unwrap_or_else(Self::closed),
            cursor: sequence,
            generation,
            seen: self.current_version(),
        }
    }

    /// A reader for events not yet handed to any earlier reader.
    pub fn subscribe_fresh(&self) -> Subscription {
        let start = self.ring.lock().map_or(0, |ring| ring.handed_out);
        self.subscribe_after(start)
    }

    /// A reader resuming after the event `sequence` of this stream.
    pub fn resume_after(&self, sequence: u64) -> Result<Subscription, ResumeError> {
        {
            let ring = self.ring.lock().map_err(|_| ResumeError::Unknown)?;
            if sequence >= ring.next_sequence {
                return Err(ResumeError::Unknown);
            }
            if sequence + 1 < ring.oldest() {
                return Err(ResumeError::Evicted);
            }
        }
        Ok(self.subscribe_after(sequence))
    }

    fn cursor(&self, sequence: u64) -> EventCursor {
        EventCursor {
            stream: self.stream,
            sequence,
        }
    }

    fn next_after(&self, cursor: u64, generation: u64) -> Next {
        let Ok(mut ring) = self.ring.lock() else {
            return Next::Closed;
        };
        if ring.generation != generation {
            return Next::Superseded;
        }
        if let Some(release) = ring.release
            && release.generation == generation
            && cursor >= release.after
        {
            return Next::Released(release.retry);
        }
        let oldest = ring.oldest();
        if cursor + 1 < oldest {
            return Next::Evicted;
        }
        let index = usize::try_from(cursor + 1 - oldest).unwrap_or(usize::MAX);
        match ring.events.get(index).cloned() {
            Some((sequence, payload)) => {
                ring.handed_out = ring.handed_out.max(sequence);
                Next::Event(self.cursor(sequence).to_event_id(), payload)
            }
            None if ring.closed => Next::Closed,
            None => Next::Idle,
        }
    }
}

impl EventStream for EventTail {
    fn number(&self) -> u32 {
        self.stream
    }

    fn publish(&self, payload: Bytes) -> StreamFuture<Result<EventId, PublishError>> {
        StoreFuture::ready(EventTail::publish(self, payload).map_err(PublishError::from))
    }

    fn close(&self) -> StreamFuture<Result<(), StoreError>> {
        EventTail::close(self);
        StoreFuture::ready(Ok(()))
    }

    fn is_untouched(&self) -> bool {
        EventTail::is_untouched(self)
    }

    fn release_reader(&self, retry: Duration) -> StreamFuture<Result<(), PublishError>> {
        StoreFuture::ready(EventTail::release_reader(self, retry).map_err(PublishError::from))
    }

    fn subscribe(&self, start: Start) -> Box<dyn EventReader> {
        Box::new(match start {
            Start::Beginning => self.subscribe_after(0),
            Start::Unread => self.subscribe_fresh(),
        })
    }
}

/// One reader's position in an in-memory tail.
pub(crate) struct Subscription {
    tail: Arc<EventTail>,
    cursor: u64,
    generation: u64,
    /// The tail's version when this reader last looked.
    seen: u64,
}

impl fmt::Debug for Subscription {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Subscription")
            .field("stream", &self.tail.stream)
            .field("cursor", &self.cursor)
            .finish()
    }
}

impl Subscription {
    /// What comes next, without waiting.
    pub fn poll_next(&mut self) -> Next {
        // Read before the ring: a change after this read makes the next `changed` return.
        self.seen = self.tail.current_version();
        let next = self.tail.next_after(self.cursor, self.generation);
        if let Next::Event(id, _) = &next
            && let Some(cursor) = EventCursor::from_event_id(*id)
        {
            self.cursor = cursor.sequence;
        }
        next
    }

    /// Waits for the tail to change since this reader last looked (at its creation or its
    /// latest poll).
    pub async fn changed(&mut self) {
        loop {
            // Registered before the version is read, so a change between the two still wakes.
            let notified = self.tail.changes.notified();
            let mut notified = std::pin::pin!(notified);
            notified.as_mut().enable();
            let now = self.tail.current_version();
            if now != self.seen {
                self.seen = now;
                return;
            }
            notified.await;
        }
    }

    /// The id of the last event this reader was handed (or the cursor it started from).
    pub fn cursor_id(&self) -> EventId {
        self.tail.cursor(self.cursor).to_event_id()
    }
}

impl EventReader for Subscription {
    fn poll_next(&mut self) -> Next {
        Subscription::poll_next(self)
    }

    fn changed(&mut self) -> Changed<'_> {
        Box::pin(Subscription::changed(self))
    }

    fn cursor_id(&self) -> EventId {
        Subscription::cursor_id(self)
    }

    fn stream(&self) -> u32 {
        self.tail.stream
    }
}

/// The number a closed stand-in stream carries; no session numbers its streams this high.
const CLOSED_STREAM: u32 = u32::MAX >> 8;

/// The streams of one session: the standalone (server-initiated) stream, number 0, and the
/// most recent request streams, kept so a dropped one can be resumed.
struct SessionStreams {
    standalone: Option<Arc<EventTail>>,
    requests: VecDeque<Arc<EventTail>>,
    next_stream: u32,
}

/// How many finished request streams a session keeps for resumption.
const KEPT_REQUEST_STREAMS: usize = 16;

impl SessionStreams {
    fn new() -> Self {
        Self {
            standalone: None,
            requests: VecDeque::new(),
            next_stream: 1,
        }
    }

    fn standalone(&mut self, capacity: usize) -> Arc<EventTail> {
        Arc::clone(
            self.standalone
                .get_or_insert_with(|| EventTail::new(0, capacity)),
        )
    }

    fn open_request_stream(&mut self, capacity: usize) -> Arc<EventTail> {
        let number = self.next_stream;
        // Stream numbers wrap below the closed stand-in's, and never reach 0 (the standalone).
        self.next_stream = (self.next_stream % (CLOSED_STREAM - 1)) + 1;
        let tail = EventTail::new(number, capacity);
        if self.requests.len() == KEPT_REQUEST_STREAMS {
            self.requests.pop_front();
        }
        self.requests.push_back(Arc::clone(&tail));
        tail
    }

    /// The stream an event id belongs to.
    fn find(&self, stream: u32) -> Option<&Arc<EventTail>> {
        if stream == 0 {
            return self.standalone.as_ref();
        }
        self.requests.iter().find(|tail| tail.stream() == stream)
    }

    fn close_all(&self) {
        self.standalone
            .iter()
            .chain(self.requests.iter())
            .for_each(|tail| tail.close());
    }
}

/// The default [`EventStore`]: every session's streams as bounded rings in this process.
/// Sessions appear on first use and disappear when they end.
pub struct MemoryEventStore {
    sessions: Mutex<HashMap<SessionId, SessionStreams>>,
    capacity: usize,
}

impl fmt::Debug for MemoryEventStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryEventStore")
            .field("sessions", &self.len())
            .field("capacity", &self.capacity)
            .finish()
    }
}

impl MemoryEventStore {
    /// A store whose streams keep at most `capacity` events each.
    pub fn new(capacity: usize) -> Self {
        Self {
            sessions: Mutex::new(HashMap::new()),
            capacity: capacity.max(1),
        }
    }

    /// How many sessions have streams here.
    pub fn len(&self) -> usize {
        self.sessions.lock().map_or(0, |sessions| sessions.len())
    }

    /// Whether no session has streams here.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Runs `open` on the session's streams, creating them on first use. A poisoned map only
    /// means another thread panicked mid-update; the stand-in is a closed stream.
    fn with_streams(
        &self,
        session: &SessionId,
        open: impl FnOnce(&mut SessionStreams, usize) -> Arc<EventTail>,
    ) -> Arc<dyn EventStream> {
        let Ok(mut sessions) = self.sessions.lock() else {
            return EventTail::closed();
        };
        let streams = sessions
            .entry(session.clone())
            .or_insert_with(SessionStreams::new);
        open(streams, self.capacity)
    }

    crate::test_support::test_visible! {
        /// The session's standalone stream, at once.
        fn standalone_now(&self, session: &SessionId) -> Arc<dyn EventStream> {
            self.with_streams(session, SessionStreams::standalone)
        }
    }

    crate::test_support::test_visible! {
        /// A new request stream of the session, at once.
        fn open_request_stream_now(&self, session: &SessionId) -> Arc<dyn EventStream> {
            self.with_streams(session, SessionStreams::open_request_stream)
        }
    }

    crate::test_support::test_visible! {
        /// A reader after `after`, at once.
        fn resume_now(
            &self,
            session: &SessionId,
            after: EventCursor,
        ) -> Result<Box<dyn EventReader>, ResumeError> {
            let tail = {
                let sessions = self.sessions.lock().map_err(|_| ResumeError::Unknown)?;
                let streams = sessions.get(session).ok_or(ResumeError::Unknown)?;
                Arc::clone(streams.find(after.stream).ok_or(ResumeError::Unknown)?)
            };
            Ok(Box::new(tail.resume_after(after.sequence)?))
        }
    }

    crate::test_support::test_visible! {
        /// Closes and forgets the session's streams, at once.
        fn close_session_now(&self, session: &SessionId) {
            let removed = self.sessions.lock().ok().and_then(|mut sessions| {
                let removed = sessions.remove(session);
                release_spare_capacity(&mut sessions);
                removed
            });
            if let Some(streams) = removed {
                streams.close_all();
            }
        }
    }
}

/// Every answer is the in-memory one, ready at once.
impl EventStore for MemoryEventStore {
    fn answers_at_once(&self) -> bool {
        true
    }

    fn standalone<'a>(&'a self, session: &'a SessionId) -> OpenedStream<'a> {
        StoreFuture::ready(Ok(self.standalone_now(session)))
    }

    fn open_request_stream<'a>(&'a self, session: &'a SessionId) -> OpenedStream<'a> {
        StoreFuture::ready(Ok(self.open_request_stream_now(session)))
    }

    fn resume<'a>(&'a self, session: &'a SessionId, after: EventCursor) -> ResumedStream<'a> {
        StoreFuture::ready(self.resume_now(session, after))
    }

    fn close_session(&self, session: &SessionId) -> StreamFuture<Result<(), StoreError>> {
        self.close_session_now(session);
        StoreFuture::ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn payload(n: u32) -> Bytes {
        Bytes::from(n.to_string())
    }

    fn drain(reader: &mut dyn EventReader) -> Vec<Bytes> {
        let mut out = Vec::new();
        while let Next::Event(_, bytes) = reader.poll_next() {
            out.push(bytes);
        }
        out
    }

    /// Publishes through the trait, whose in-memory answer is ready at once.
    fn put(stream: &dyn EventStream, n: u32) -> Result<EventId, StreamClosed> {
        match stream.publish(payload(n)).now() {
            Ok(Ok(id)) => Ok(id),
            _ => Err(StreamClosed),
        }
    }

    fn sequence_of(id: EventId) -> u64 {
        EventCursor::from_event_id(id).map_or(0, |cursor| cursor.sequence)
    }

    #[test]
    fn an_event_id_names_its_stream_and_position() {
        let cursor = EventCursor {
            stream: 3,
            sequence: 17,
        };
        assert_eq!(
            EventCursor::from_event_id(cursor.to_event_id()),
            Some(cursor)
        );
    }

    #[test]
    fn a_subscriber_reads_every_event_in_order_then_idles() -> Result<(), StreamClosed> {
        let tail = EventTail::new(1, 8);
        let mut reader = tail.subscribe_after(0);
        for n in 0..5 {
            tail.publish(payload(n))?;
        }
        assert_eq!(drain(&mut reader), (0..5).map(payload).collect::<Vec<_>>());
        assert_eq!(reader.poll_next(), Next::Idle);
        tail.close();
        assert_eq!(reader.poll_next(), Next::Closed);
        Ok(())
    }

    #[test]
    fn resuming_replays_exactly_what_followed_the_cursor() -> Result<(), StreamClosed> {
        let tail = EventTail::new(2, 8);
        let ids: Vec<EventId> = (0..6)
            .map(|n| tail.publish(payload(n)))
            .collect::<Result<_, _>>()?;
        let mut reader = tail
            .resume_after(sequence_of(ids[2]))
            .map_err(|_| StreamClosed)?;
        assert_eq!(drain(&mut reader), (3..6).map(payload).collect::<Vec<_>>());
        Ok(())
    }

    #[test]
    fn resuming_from_an_evicted_event_is_refused() -> Result<(), StreamClosed> {
        let tail = EventTail::new(1, 3);
        for n in 0..10 {
            tail.publish(payload(n))?;
        }
        assert!(matches!(tail.resume_after(2), Err(ResumeError::Evicted)));
        assert!(tail.resume_after(7).is_ok());
        Ok(())
    }

    #[test]
    fn resuming_from_an_event_never_issued_is_refused() -> Result<(), StreamClosed> {
        let tail = EventTail::new(1, 3);
        tail.publish(payload(0))?;
        assert!(matches!(tail.resume_after(5), Err(ResumeError::Unknown)));
        assert!(tail.resume_after(0).is_ok());
        Ok(())
    }

    #[test]
    fn a_slow_reader_that_falls_behind_the_ring_is_told_so() -> Result<(), StreamClosed> {
        let tail = EventTail::new(1, 2);
        let mut reader = tail.subscribe_after(0);
        for n in 0..5 {
            tail.publish(payload(n))?;
        }
        assert_eq!(reader.poll_next(), Next::Evicted);
        Ok(())
    }

    #[test]
    fn a_new_reader_supersedes_the_old_one() -> Result<(), StreamClosed> {
        let tail = EventTail::new(0, 8);
        let mut first = tail.subscribe_fresh();
        tail.publish(payload(1))?;
        assert!(matches!(first.poll_next(), Next::Event(..)));
        let mut second = tail.subscribe_fresh();
        tail.publish(payload(2))?;
        assert_eq!(first.poll_next(), Next::Superseded);
        assert_eq!(drain(&mut second), vec![payload(2)]);
        Ok(())
    }

    #[test]
    fn a_released_reader_reads_what_came_before_then_ends_and_a_resume_reads_the_rest()
    -> Result<(), StreamClosed> {
        let tail = EventTail::new(1, 8);
        let mut reader = tail.subscribe_after(0);
        tail.publish(payload(1))?;
        tail.release_reader(Duration::from_millis(250))?;
        tail.publish(payload(2))?;
        assert!(matches!(reader.poll_next(), Next::Event(..)));
        assert_eq!(
            reader.poll_next(),
            Next::Released(Duration::from_millis(250))
        );
        let mut resumed = tail.resume_after(1).map_err(|_| StreamClosed)?;
        assert_eq!(drain(&mut resumed), vec![payload(2)]);
        Ok(())
    }

    #[test]
    fn publishing_to_a_closed_tail_fails() {
        let tail = EventTail::new(1, 2);
        tail.close();
        assert_eq!(tail.publish(payload(1)), Err(StreamClosed));
    }

    #[test]
    fn the_memory_store_resumes_any_stream_of_a_session_by_its_event_id() -> Result<(), StreamClosed>
    {
        let store = MemoryEventStore::new(8);
        let session = SessionId::random();
        let standalone = store.standalone_now(&session);
        let request = store.open_request_stream_now(&session);
        assert_eq!(standalone.number(), 0);
        assert_ne!(request.number(), 0);
        let first = put(request.as_ref(), 1)?;
        put(request.as_ref(), 2)?;
        put(standalone.as_ref(), 9)?;
        let after_first = EventCursor::from_event_id(first).ok_or(StreamClosed)?;
        let mut reader = store
            .resume_now(&session, after_first)
            .map_err(|_| StreamClosed)?;
        assert_eq!(reader.stream(), request.number());
        assert_eq!(drain(reader.as_mut()), vec![payload(2)]);
        let unknown_stream = EventCursor {
            stream: 999,
            sequence: 0,
        };
        assert!(matches!(
            store.resume_now(&session, unknown_stream),
            Err(ResumeError::Unknown)
        ));
        Ok(())
    }

    #[test]
    fn a_session_the_memory_store_never_saw_cannot_be_resumed() {
        let store = MemoryEventStore::new(8);
        let cursor = EventCursor {
            stream: 0,
            sequence: 0,
        };
        assert!(matches!(
            store.resume_now(&SessionId::random(), cursor),
            Err(ResumeError::Unknown)
        ));
        assert!(store.is_empty(), "a refused resume creates nothing");
    }

    #[test]
    fn closing_a_session_closes_its_streams_and_forgets_them() -> Result<(), StreamClosed> {
        let store = MemoryEventStore::new(8);
        let (session, other) = (SessionId::random(), SessionId::random());
        let standalone = store.standalone_now(&session);
        let request = store.open_request_stream_now(&session);
        let mut reader = request.subscribe(Start::Beginning);
        put(store.standalone_now(&other).as_ref(), 1)?;
        store.close_session_now(&session);
        assert_eq!(put(standalone.as_ref(), 1), Err(StreamClosed));
        assert_eq!(reader.poll_next(), Next::Closed);
        let cursor = EventCursor {
            stream: 0,
            sequence: 0,
        };
        assert!(matches!(
            store.resume_now(&session, cursor),
            Err(ResumeError::Unknown)
        ));
        assert_eq!(store.len(), 1, "the other session's streams stay");
        Ok(())
    }

    #[test]
    fn a_session_keeps_only_its_most_recent_request_streams() {
        let store = MemoryEventStore::new(8);
        let session = SessionId::random();
        let first = store.open_request_stream_now(&session).number();
        for _ in 0..KEPT_REQUEST_STREAMS {
            store.open_request_stream_now(&session);
        }
        let cursor = EventCursor {
            stream: first,
            sequence: 0,
        };
        assert!(matches!(
            store.resume_now(&session, cursor),
            Err(ResumeError::Unknown)
        ));
    }

    #[test]
    fn a_fresh_reader_of_the_store_starts_after_what_earlier_readers_were_handed()
    -> Result<(), StreamClosed> {
        let store = MemoryEventStore::new(8);
        let session = SessionId::random();
        let stream = store.standalone_now(&session);
        let mut first = stream.subscribe(Start::Unread);
        put(stream.as_ref(), 1)?;
        assert!(matches!(first.poll_next(), Next::Event(..)));
        put(stream.as_ref(), 2)?;
        let mut second = store.standalone_now(&session).subscribe(Start::Unread);
        assert_eq!(drain(second.as_mut()), vec![payload(2)]);
        assert_eq!(first.poll_next(), Next::Superseded);
        Ok(())
    }

    #[tokio::test]
    async fn a_publish_between_an_idle_poll_and_the_wait_is_not_missed() -> Result<(), StreamClosed>
    {
        let tail = EventTail::new(1, 8);
        let mut reader = tail.subscribe(Start::Beginning);
        assert_eq!(reader.poll_next(), Next::Idle);
        tail.publish(payload(1))?;
        tokio::time::timeout(std::time::Duration::from_secs(5), reader.changed())
            .await
            .map_err(|_| StreamClosed)?;
        assert!(matches!(reader.poll_next(), Next::Event(..)));
        Ok(())
    }

    #[tokio::test]
    async fn a_reader_that_saw_everything_waits_until_the_next_change() -> Result<(), StreamClosed>
    {
        let tail = EventTail::new(1, 8);
        let mut reader = tail.subscribe(Start::Beginning);
        tail.publish(payload(1))?;
        assert!(matches!(reader.poll_next(), Next::Event(..)));
        assert_eq!(reader.poll_next(), Next::Idle);
        let waited =
            tokio::time::timeout(std::time::Duration::from_millis(20), reader.changed()).await;
        assert!(
            waited.is_err(),
            "nothing changed, so the reader kept waiting"
        );
        tail.close();
        tokio::time::timeout(std::time::Duration::from_secs(5), reader.changed())
            .await
            .map_err(|_| StreamClosed)?;
        assert_eq!(reader.poll_next(), Next::Closed);
        Ok(())
    }

    #[tokio::test]
    async fn a_waiting_reader_wakes_on_publish() -> Result<(), StreamClosed> {
        let tail = EventTail::new(1, 8);
        let mut reader: Box<dyn EventReader> = tail.subscribe(Start::Beginning);
        assert_eq!(reader.poll_next(), Next::Idle);
        let publisher = Arc::clone(&tail);
        tokio::spawn(async move {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            let _ = publisher.publish(payload(9));
        });
        tokio::time::timeout(std::time::Duration::from_secs(5), reader.changed())
            .await
            .map_err(|_| StreamClosed)?;
        assert!(matches!(reader.poll_next(), Next::Event(..)));
        Ok(())
    }
}
