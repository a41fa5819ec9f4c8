//! Event tails: each SSE stream publishes into a bounded ring, subscribers read from a cursor,
//! and a reconnecting client resumes from `Last-Event-ID`. An event id names both the stream
//! and the position in it, so one `GET` can resume any of a session's streams. A cursor the
//! ring no longer holds (or never issued) is a typed refusal, never an empty stream.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use tokio::sync::watch;

use crate::sse::EventId;

/// Bits of an event id that number the event within its stream.
const SEQUENCE_BITS: u32 = 40;
const SEQUENCE_MASK: u64 = (1 << SEQUENCE_BITS) - 1;

/// Where an event sits: which of the session's streams, and how far along it. Sequence 0 is
/// "before the first event", the cursor a priming event carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventCursor {
    pub stream: u32,
    pub sequence: u64,
}

impl EventCursor {
    pub fn to_event_id(self) -> EventId {
        EventId::new((u64::from(self.stream) << SEQUENCE_BITS) | (self.sequence & SEQUENCE_MASK))
    }

    pub fn from_event_id(id: EventId) -> Option<Self> {
        let stream = u32::try_from(id.get() >> SEQUENCE_BITS).ok()?;
        Some(Self {
            stream,
            sequence: id.get() & SEQUENCE_MASK,
        })
    }
}

/// Why a resume cannot be served.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ResumeError {
    #[error("the event has been evicted from the stream's tail")]
    Evicted,
    #[error("no such event was issued")]
    Unknown,
}

/// What a subscriber finds after its cursor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Next {
    /// The next event.
    Event(EventId, Bytes),
    /// Nothing yet; wait for a change.
    Idle,
    /// The stream has ended and everything in it has been read.
    Closed,
    /// The reader fell behind the ring and missed events: end the stream so it resumes.
    Evicted,
    /// Another subscriber took over this stream.
    Superseded,
}

/// Why a publish failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the stream is closed")]
pub struct StreamClosed;

struct Ring {
    events: VecDeque<(u64, Bytes)>,
    next_sequence: u64,
    capacity: usize,
    closed: bool,
    /// The furthest sequence any subscriber has been handed, where a fresh subscriber starts.
    handed_out: u64,
    generation: u64,
}

/// One stream's bounded history and its live edge.
pub struct EventTail {
    stream: u32,
    ring: Mutex<Ring>,
    /// Bumped on every publish and on close, so waiting subscribers wake.
    changes: watch::Sender<u64>,
}

impl std::fmt::Debug for EventTail {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventTail")
            .field("stream", &self.stream)
            .finish_non_exhaustive()
    }
}

impl EventTail {
    /// A tail for stream number `stream` keeping at most `capacity` events.
    pub fn new(stream: u32, capacity: usize) -> Self {
        Self {
            stream,
            ring: Mutex::new(Ring {
                events: VecDeque::new(),
                next_sequence: 1,
                capacity: capacity.max(1),
                closed: false,
                handed_out: 0,
                generation: 0,
            }),
            changes: watch::channel(0).0,
        }
    }

    pub fn stream(&self) -> u32 {
        self.stream
    }

    /// Wakes waiting readers; with none, there is nobody to wake (later readers read the ring).
    fn wake_readers(&self) {
        if self.changes.receiver_count() > 0 {
            self.changes
                .send_modify(|count| *count = count.wrapping_add(1));
        }
    }

    /// The cursor before the first event (what a priming event carries).
    pub fn origin(&self) -> EventId {
        EventCursor {
            stream: self.stream,
            sequence: 0,
        }
        .to_event_id()
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

    /// Ends the stream; subscribers drain what is left and finish.
    pub fn close(&self) {
        if let Ok(mut ring) = self.ring.lock() {
            ring.closed = true;
        }
        self.wake_readers();
    }

    pub fn is_closed(&self) -> bool {
        self.ring.lock().map_or(true, |ring| ring.closed)
    }

    /// Whether anything was ever published.
    pub fn is_untouched(&self) -> bool {
        self.ring.lock().is_ok_and(|ring| ring.next_sequence == 1)
    }

    /// Takes over the stream for a new reader starting after `sequence`; any earlier reader
    /// is superseded so no event goes out on two connections.
    pub fn subscribe_after(self: &Arc<Self>, sequence: u64) -> Subscription {
        let generation = match self.ring.lock() {
            Ok(mut ring) => {
                ring.generation += 1;
                ring.generation
            }
            Err(_) => 0,
        };
        self.wake_readers();
        Subscription {
            tail: Arc::clone(self),
            cursor: sequence,
            generation,
            changes: self.changes.subscribe(),
        }
    }

    /// A reader for events not yet handed to any earlier reader.
    pub fn subscribe_fresh(self: &Arc<Self>) -> Subscription {
        let start = self.ring.lock().map_or(0, |ring| ring.handed_out);
        self.subscribe_after(start)
    }

    /// A reader resuming after the event `sequence` of this stream.
    pub fn resume_after(self: &Arc<Self>, sequence: u64) -> Result<Subscription, ResumeError> {
        {
            let ring = self.ring.lock().map_err(|_| ResumeError::Unknown)?;
            if sequence >= ring.next_sequence {
                return Err(ResumeError::Unknown);
            }
            let oldest = ring
                .events
                .front()
                .map_or(ring.next_sequence, |(first, _)| *first);
            if sequence + 1 < oldest {
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
        let oldest = ring
            .events
            .front()
            .map_or(ring.next_sequence, |(first, _)| *first);
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

/// One reader's position in a tail.
pub struct Subscription {
    tail: Arc<EventTail>,
    cursor: u64,
    generation: u64,
    changes: watch::Receiver<u64>,
}

impl std::fmt::Debug for Subscription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subscription")
            .field("stream", &self.tail.stream)
            .field("cursor", &self.cursor)
            .finish()
    }
}

impl Subscription {
    /// What comes next, without waiting.
    pub fn poll_next(&mut self) -> Next {
        self.changes.mark_unchanged();
        let next = self.tail.next_after(self.cursor, self.generation);
        if let Next::Event(id, _) = &next
            && let Some(cursor) = EventCursor::from_event_id(*id)
        {
            self.cursor = cursor.sequence;
        }
        next
    }

    /// Waits for the tail to change after an `Idle`.
    pub async fn changed(&mut self) {
        if self.changes.changed().await.is_err() {
            // The tail is gone; the next poll reports what is left.
            std::future::pending::<()>().await;
        }
    }

    pub fn tail(&self) -> &Arc<EventTail> {
        &self.tail
    }

    /// The id of the last event this reader was handed (or the cursor it started from).
    pub fn cursor_id(&self) -> EventId {
        self.tail.cursor(self.cursor).to_event_id()
    }
}

/// The streams of one session: the standalone (server-initiated) stream, number 0, and the
/// most recent request streams, kept so a dropped one can be resumed.
pub struct SessionStreams {
    inner: Mutex<StreamsInner>,
    capacity: usize,
}

struct StreamsInner {
    standalone: Option<Arc<EventTail>>,
    requests: VecDeque<Arc<EventTail>>,
    next_stream: u32,
}

/// How many finished request streams a session keeps for resumption.
const KEPT_REQUEST_STREAMS: usize = 16;

impl SessionStreams {
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            inner: Mutex::new(StreamsInner {
                standalone: None,
                requests: VecDeque::new(),
                next_stream: 1,
            }),
            capacity,
        }
    }

    /// The standalone stream, created on first use.
    pub(crate) fn standalone(&self) -> Arc<EventTail> {
        match self.inner.lock() {
            Ok(mut inner) => Arc::clone(
                inner
                    .standalone
                    .get_or_insert_with(|| Arc::new(EventTail::new(0, self.capacity))),
            ),
            Err(_) => closed_tail(),
        }
    }

    /// A new stream for one request's answer, remembered for resumption.
    pub(crate) fn open_request_stream(&self) -> Arc<EventTail> {
        let Ok(mut inner) = self.inner.lock() else {
            return closed_tail();
        };
        let number = inner.next_stream;
        inner.next_stream = inner.next_stream.wrapping_add(1).max(1);
        let tail = Arc::new(EventTail::new(number, self.capacity));
        if inner.requests.len() == KEPT_REQUEST_STREAMS {
            inner.requests.pop_front();
        }
        inner.requests.push_back(Arc::clone(&tail));
        tail
    }

    /// The stream an event id belongs to.
    pub(crate) fn find(&self, stream: u32) -> Option<Arc<EventTail>> {
        let inner = self.inner.lock().ok()?;
        if stream == 0 {
            return inner.standalone.clone();
        }
        inner
            .requests
            .iter()
            .find(|tail| tail.stream() == stream)
            .cloned()
    }

    pub(crate) fn close_all(&self) {
        if let Ok(inner) = self.inner.lock() {
            inner
                .standalone
                .iter()
                .chain(inner.requests.iter())
                .for_each(|tail| tail.close());
        }
    }
}

fn closed_tail() -> Arc<EventTail> {
    let tail = Arc::new(EventTail::new(u32::MAX >> 8, 1));
    tail.close();
    tail
}

#[cfg(test)]
mod tests {
    use super::*;

    fn payload(n: u32) -> Bytes {
        Bytes::from(n.to_string())
    }

    fn drain(subscription: &mut Subscription) -> Vec<Bytes> {
        let mut out = Vec::new();
        while let Next::Event(_, bytes) = subscription.poll_next() {
            out.push(bytes);
        }
        out
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
        let tail = Arc::new(EventTail::new(1, 8));
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
        let tail = Arc::new(EventTail::new(2, 8));
        let ids: Vec<EventId> = (0..6)
            .map(|n| tail.publish(payload(n)))
            .collect::<Result<_, _>>()?;
        let third = EventCursor::from_event_id(ids[2]).map_or(0, |cursor| cursor.sequence);
        let mut reader = tail.resume_after(third).map_err(|_| StreamClosed)?;
        assert_eq!(drain(&mut reader), (3..6).map(payload).collect::<Vec<_>>());
        Ok(())
    }

    #[test]
    fn resuming_from_an_evicted_event_is_refused() -> Result<(), StreamClosed> {
        let tail = Arc::new(EventTail::new(1, 3));
        for n in 0..10 {
            tail.publish(payload(n))?;
        }
        assert!(matches!(tail.resume_after(2), Err(ResumeError::Evicted)));
        assert!(tail.resume_after(7).is_ok());
        Ok(())
    }

    #[test]
    fn resuming_from_an_event_never_issued_is_refused() -> Result<(), StreamClosed> {
        let tail = Arc::new(EventTail::new(1, 3));
        tail.publish(payload(0))?;
        assert!(matches!(tail.resume_after(5), Err(ResumeError::Unknown)));
        assert!(tail.resume_after(0).is_ok());
        Ok(())
    }

    #[test]
    fn a_slow_reader_that_falls_behind_the_ring_is_told_so() -> Result<(), StreamClosed> {
        let tail = Arc::new(EventTail::new(1, 2));
        let mut reader = tail.subscribe_after(0);
        for n in 0..5 {
            tail.publish(payload(n))?;
        }
        assert_eq!(reader.poll_next(), Next::Evicted);
        Ok(())
    }

    #[test]
    fn a_new_reader_supersedes_the_old_one() -> Result<(), StreamClosed> {
        let tail = Arc::new(EventTail::new(0, 8));
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
    fn publishing_to_a_closed_tail_fails() {
        let tail = EventTail::new(1, 2);
        tail.close();
        assert_eq!(tail.publish(payload(1)), Err(StreamClosed));
    }

    #[test]
    fn a_session_finds_its_streams_by_number() {
        let streams = SessionStreams::new(4);
        let standalone = streams.standalone();
        let request = streams.open_request_stream();
        assert_eq!(
            streams.find(0).map(|tail| tail.stream()),
            Some(standalone.stream())
        );
        assert_eq!(
            streams.find(request.stream()).map(|tail| tail.stream()),
            Some(request.stream())
        );
        assert!(streams.find(999).is_none());
    }

    #[tokio::test]
    async fn a_waiting_reader_wakes_on_publish() -> Result<(), StreamClosed> {
        let tail = Arc::new(EventTail::new(1, 8));
        let mut reader = tail.subscribe_after(0);
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
