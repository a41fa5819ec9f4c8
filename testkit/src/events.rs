//! Event stores under test: [`event_store_contract`], the claims every [`EventStore`]
//! implementation must hold (publish and resume in order from any handle, eviction and
//! unknown-cursor refusals, one reader per stream, closing a session, store-allocated stream
//! numbers that two handles never share), and [`SwitchedEventStore`], a store over
//! [`MemoryEventStore`] answering in boxed futures, as a network store does, whose
//! [`EventOutage`] switch makes every call fail.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bytes::Bytes;
use protocols_runtime::session::{SessionId, StoreError, StoreFuture};
use protocols_runtime::sse::EventId;
use protocols_runtime::tail::{
    Changed, EventCursor, EventReader, EventStore, EventStream, MemoryEventStore, Next,
    OpenedStream, PublishError, ResumeError, ResumedStream, Start, StreamFuture,
};
use tokio::sync::Notify;

/// How long a reader may wait for a change the contract caused before the claim fails.
const WAIT: Duration = Duration::from_secs(5);

/// Two handles of one fresh store, as two replicas sharing it hold them.
pub type StoreHandles = [Arc<dyn EventStore>; 2];

/// Runs every claim of the event store contract against stores `make` builds: a fresh store
/// per claim, whose streams keep at most `capacity` events, seen through two handles (for an
/// in-memory store, two clones of one `Arc`). Panics at the first claim a store breaks.
pub async fn event_store_contract(make: impl Fn(usize) -> StoreHandles) {
    published_events_resume_in_order_from_either_handle(&make(16)).await;
    a_cursor_the_tail_evicted_is_refused_as_evicted(&make(2)).await;
    a_cursor_never_issued_is_refused_as_unknown(&make(16)).await;
    a_new_reader_supersedes_the_old_one(&make(16)).await;
    closing_a_session_closes_its_streams_and_forgets_them(&make(16)).await;
    two_handles_never_allocate_one_stream_number_twice_for_a_session(&make(16)).await;
}

fn payload(n: usize) -> Bytes {
    Bytes::from(format!("{{\"n\":{n}}}"))
}

async fn opened(answer: OpenedStream<'_>) -> Arc<dyn EventStream> {
    answer.await.expect("the store opens the stream")
}

async fn publish(stream: &dyn EventStream, n: usize) -> EventId {
    stream
        .publish(payload(n))
        .await
        .expect("the store takes the event")
}

fn cursor_of(id: EventId) -> EventCursor {
    EventCursor::from_event_id(id).expect("a store's event id parses as a cursor")
}

/// The next thing the reader finds, waiting (bounded) through idle periods.
async fn next(reader: &mut dyn EventReader) -> Next {
    loop {
        match reader.poll_next() {
            Next::Idle => tokio::time::timeout(WAIT, reader.changed())
                .await
                .expect("a reader wakes when its stream changes"),
            other => return other,
        }
    }
}

/// The payloads of the next `count` events.
async fn read(reader: &mut dyn EventReader, count: usize) -> Vec<Bytes> {
    let mut out = Vec::with_capacity(count);
    while out.len() < count {
        match next(reader).await {
            Next::Event(_, bytes) => out.push(bytes),
            other => panic!("expected an event, found {other:?}"),
        }
    }
    out
}

async fn published_events_resume_in_order_from_either_handle([one, other]: &StoreHandles) {
    let session = SessionId::random();
    let stream = opened(one.open_request_stream(&session)).await;
    let mut ids = Vec::new();
    for n in 0..5 {
        ids.push(publish(stream.as_ref(), n).await);
    }
    for (handle, after) in [(one, 1), (other, 2)] {
        let mut reader = handle
            .resume(&session, cursor_of(ids[after]))
            .await
            .expect("a cursor the store issued resumes");
        assert_eq!(reader.stream(), stream.number());
        let expected: Vec<Bytes> = (after + 1..5).map(payload).collect();
        assert_eq!(read(reader.as_mut(), expected.len()).await, expected);
        assert_eq!(
            reader.cursor_id(),
            ids[4],
            "the cursor follows the events read"
        );
    }
    let origin = EventCursor {
        stream: stream.number(),
        sequence: 0,
    };
    let mut from_start = other
        .resume(&session, origin)
        .await
        .expect("the cursor before the first event resumes");
    assert_eq!(
        read(from_start.as_mut(), 5).await,
        (0..5).map(payload).collect::<Vec<_>>()
    );
    stream.close().await.expect("the stream closes");
    assert_eq!(next(from_start.as_mut()).await, Next::Closed);
}

async fn a_cursor_the_tail_evicted_is_refused_as_evicted([one, other]: &StoreHandles) {
    let session = SessionId::random();
    let stream = opened(one.open_request_stream(&session)).await;
    let mut ids = Vec::new();
    for n in 0..6 {
        ids.push(publish(stream.as_ref(), n).await);
    }
    for handle in [one, other] {
        let refused = handle.resume(&session, cursor_of(ids[0])).await;
        assert!(
            matches!(refused, Err(ResumeError::Evicted)),
            "an evicted cursor is refused as evicted: {refused:?}"
        );
    }
    let kept = other.resume(&session, cursor_of(ids[3])).await;
    assert!(kept.is_ok(), "a cursor still in the tail resumes");
}

async fn a_cursor_never_issued_is_refused_as_unknown([one, other]: &StoreHandles) {
    let session = SessionId::random();
    let stream = opened(one.open_request_stream(&session)).await;
    let last = cursor_of(publish(stream.as_ref(), 0).await);
    let ahead = EventCursor {
        sequence: last.sequence + 5,
        ..last
    };
    let no_stream = EventCursor {
        stream: stream.number() + 1_000,
        sequence: 0,
    };
    for (session, cursor) in [
        (&session, ahead),
        (&session, no_stream),
        (&SessionId::random(), last),
    ] {
        let refused = other.resume(session, cursor).await;
        assert!(
            matches!(refused, Err(ResumeError::Unknown)),
            "a cursor never issued is refused as unknown: {refused:?}"
        );
    }
}

async fn a_new_reader_supersedes_the_old_one([one, other]: &StoreHandles) {
    let session = SessionId::random();
    let stream = opened(one.standalone(&session)).await;
    assert_eq!(stream.number(), 0, "the standalone stream is number 0");
    let mut first = stream.subscribe(Start::Unread);
    publish(stream.as_ref(), 1).await;
    assert_eq!(read(first.as_mut(), 1).await, vec![payload(1)]);
    let mut second = opened(other.standalone(&session))
        .await
        .subscribe(Start::Unread);
    publish(stream.as_ref(), 2).await;
    assert_eq!(next(first.as_mut()).await, Next::Superseded);
    assert_eq!(
        read(second.as_mut(), 1).await,
        vec![payload(2)],
        "a fresh reader starts after what earlier readers were handed"
    );
}

async fn closing_a_session_closes_its_streams_and_forgets_them([one, other]: &StoreHandles) {
    let (session, kept) = (SessionId::random(), SessionId::random());
    let standalone = opened(one.standalone(&session)).await;
    let request = opened(one.open_request_stream(&session)).await;
    let first = publish(request.as_ref(), 1).await;
    let mut reader = request.subscribe(Start::Beginning);
    let other_session = opened(one.standalone(&kept)).await;
    let kept_id = publish(other_session.as_ref(), 1).await;
    other
        .close_session(&session)
        .await
        .expect("the session's streams close");
    assert_eq!(read(reader.as_mut(), 1).await, vec![payload(1)]);
    assert_eq!(next(reader.as_mut()).await, Next::Closed);
    for stream in [&standalone, &request] {
        let refused = stream.publish(payload(2)).await;
        assert!(
            matches!(refused, Err(PublishError::Closed)),
            "a closed session's stream takes no events: {refused:?}"
        );
    }
    let forgotten = one.resume(&session, cursor_of(first)).await;
    assert!(matches!(forgotten, Err(ResumeError::Unknown)));
    let untouched = one.resume(&kept, cursor_of(kept_id)).await;
    assert!(untouched.is_ok(), "another session's streams stay");
}

async fn two_handles_never_allocate_one_stream_number_twice_for_a_session(
    [one, other]: &StoreHandles,
) {
    let session = SessionId::random();
    let mut numbers = Vec::new();
    for round in 0..8 {
        let handle = if round % 2 == 0 { one } else { other };
        numbers.push(opened(handle.open_request_stream(&session)).await.number());
    }
    assert!(
        !numbers.contains(&0),
        "request streams never take the standalone's number"
    );
    let mut distinct = numbers.clone();
    distinct.sort_unstable();
    distinct.dedup();
    assert_eq!(distinct.len(), numbers.len(), "numbers {numbers:?}");
}

/// The switch of a [`SwitchedEventStore`]: while down, every call fails and every reader ends
/// with [`Next::Failed`].
#[derive(Debug, Default)]
pub struct EventOutage {
    down: AtomicBool,
    flipped: Notify,
}

impl EventOutage {
    /// Makes the store fail (`true`) or answer again; waiting readers wake to find out.
    pub fn set_down(&self, down: bool) {
        self.down.store(down, Ordering::SeqCst);
        self.flipped.notify_waiters();
    }

    fn is_down(&self) -> bool {
        self.down.load(Ordering::SeqCst)
    }

    fn reachable(&self) -> Result<(), StoreError> {
        if self.is_down() {
            Err(StoreError::unavailable("the event store is down"))
        } else {
            Ok(())
        }
    }
}

/// An event store over [`MemoryEventStore`] that answers in boxed futures, as a network store
/// does, and fails every call while its [`EventOutage`] is down.
#[derive(Debug)]
pub struct SwitchedEventStore {
    inner: MemoryEventStore,
    outage: Arc<EventOutage>,
}

impl SwitchedEventStore {
    /// A store whose streams keep at most `capacity` events, failing while `outage` is down.
    pub fn new(capacity: usize, outage: &Arc<EventOutage>) -> Self {
        Self {
            inner: MemoryEventStore::new(capacity),
            outage: Arc::clone(outage),
        }
    }

    fn switched(&self, stream: Arc<dyn EventStream>) -> Arc<dyn EventStream> {
        Arc::new(SwitchedStream {
            inner: stream,
            outage: Arc::clone(&self.outage),
        })
    }
}

impl EventStore for SwitchedEventStore {
    fn standalone<'a>(&'a self, session: &'a SessionId) -> OpenedStream<'a> {
        StoreFuture::boxed(async move {
            self.outage.reachable()?;
            Ok(self.switched(self.inner.standalone_now(session)))
        })
    }

    fn open_request_stream<'a>(&'a self, session: &'a SessionId) -> OpenedStream<'a> {
        StoreFuture::boxed(async move {
            self.outage.reachable()?;
            Ok(self.switched(self.inner.open_request_stream_now(session)))
        })
    }

    fn resume<'a>(&'a self, session: &'a SessionId, after: EventCursor) -> ResumedStream<'a> {
        StoreFuture::boxed(async move {
            self.outage.reachable()?;
            let reader = self.inner.resume_now(session, after)?;
            Ok(switched_reader(reader, &self.outage))
        })
    }

    fn close_session(&self, session: &SessionId) -> StreamFuture<Result<(), StoreError>> {
        let reachable = self.outage.reachable();
        if reachable.is_ok() {
            self.inner.close_session_now(session);
        }
        StoreFuture::boxed(async move { reachable })
    }
}

/// A stream of a [`SwitchedEventStore`].
#[derive(Debug)]
struct SwitchedStream {
    inner: Arc<dyn EventStream>,
    outage: Arc<EventOutage>,
}

impl EventStream for SwitchedStream {
    fn number(&self) -> u32 {
        self.inner.number()
    }

    fn publish(&self, payload: Bytes) -> StreamFuture<Result<EventId, PublishError>> {
        // The event's place is fixed now, at the call, as the trait asks.
        let published = match self.outage.reachable() {
            Ok(()) => self.inner.publish(payload),
            Err(error) => StoreFuture::ready(Err(error.into())),
        };
        StoreFuture::boxed(published)
    }

    fn close(&self) -> StreamFuture<Result<(), StoreError>> {
        let closed = match self.outage.reachable() {
            Ok(()) => self.inner.close(),
            Err(error) => StoreFuture::ready(Err(error)),
        };
        StoreFuture::boxed(closed)
    }

    fn is_untouched(&self) -> bool {
        self.inner.is_untouched()
    }

    fn release_reader(&self, retry: Duration) -> StreamFuture<Result<(), PublishError>> {
        let released = match self.outage.reachable() {
            Ok(()) => self.inner.release_reader(retry),
            Err(error) => StoreFuture::ready(Err(error.into())),
        };
        StoreFuture::boxed(released)
    }

    fn subscribe(&self, start: Start) -> Box<dyn EventReader> {
        switched_reader(self.inner.subscribe(start), &self.outage)
    }
}

fn switched_reader(inner: Box<dyn EventReader>, outage: &Arc<EventOutage>) -> Box<dyn EventReader> {
    Box::new(SwitchedReader {
        inner,
        outage: Arc::clone(outage),
    })
}

/// A reader of a [`SwitchedEventStore`]: it fails while the store is down, as a network
/// reader whose connection broke does.
#[derive(Debug)]
struct SwitchedReader {
    inner: Box<dyn EventReader>,
    outage: Arc<EventOutage>,
}

impl EventReader for SwitchedReader {
    fn poll_next(&mut self) -> Next {
        if self.outage.is_down() {
            return Next::Failed;
        }
        self.inner.poll_next()
    }

    fn changed(&mut self) -> Changed<'_> {
        let outage = Arc::clone(&self.outage);
        let inner = &mut self.inner;
        Box::pin(async move {
            let flipped = outage.flipped.notified();
            let mut flipped = std::pin::pin!(flipped);
            flipped.as_mut().enable();
            if outage.is_down() {
                return;
            }
            tokio::select! {
                () = inner.changed() => {}
                () = flipped => {}
            }
        })
    }

    fn cursor_id(&self) -> EventId {
        self.inner.cursor_id()
    }

    fn stream(&self) -> u32 {
        self.inner.stream()
    }
}
