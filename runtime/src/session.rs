//! Sessions: the id a server issues, the per-session record the transports keep (protocol state,
//! the conversation's pending requests, where the session's event streams live), the store trait
//! with an in-memory implementation, and the clock that drives idle and absolute expiry.

use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use crate::peer::Conversation;
use crate::tail::{
    EventCursor, EventReader, EventStore, EventStream, EventTail, MemoryEventStore, ResumeError,
};

/// What tells the time to expiry decisions. Injected so tests can move time by hand.
pub trait Clock: Send + Sync + 'static {
    fn now(&self) -> Instant;
}

/// The machine's monotonic clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Instant {
        Instant::now()
    }
}

/// A clock that moves only when told to.
#[derive(Debug)]
pub struct ManualClock {
    origin: Instant,
    elapsed: Mutex<Duration>,
}

impl ManualClock {
    pub fn new() -> Self {
        Self {
            origin: Instant::now(),
            elapsed: Mutex::new(Duration::ZERO),
        }
    }

    /// Moves the clock forward.
    pub fn advance(&self, by: Duration) {
        if let Ok(mut elapsed) = self.elapsed.lock() {
            *elapsed += by;
        }
    }
}

impl Default for ManualClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Instant {
        let elapsed = self
            .elapsed
            .lock()
            .map_or(Duration::ZERO, |elapsed| *elapsed);
        self.origin + elapsed
    }
}

/// A session id: 1 to 128 visible ASCII characters (what a header can carry unchanged). Issued
/// ids are random UUIDs; a parsed id is only ever looked up, never trusted into existence.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct SessionId(Arc<str>);

impl SessionId {
    /// A fresh, unguessable id.
    pub fn random() -> Self {
        Self(Arc::from(uuid::Uuid::new_v4().simple().to_string()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SessionId({})", self.0)
    }
}

impl fmt::Display for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The text is not a session id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("malformed session id")]
pub struct MalformedSessionId;

impl FromStr for SessionId {
    type Err = MalformedSessionId;

    fn from_str(text: &str) -> Result<Self, MalformedSessionId> {
        let visible = text.bytes().all(|byte| (0x21..=0x7e).contains(&byte));
        if text.is_empty() || text.len() > 128 || !visible {
            return Err(MalformedSessionId);
        }
        Ok(Self(Arc::from(text)))
    }
}

/// One session: the protocol's state `S` and what the runtime keeps beside it.
pub struct Session<S> {
    id: SessionId,
    state: S,
    conversation: Arc<Conversation>,
    /// Where this session's streams live; shared by every session of a transport.
    events: Arc<dyn EventStore>,
    created: Instant,
    /// Nanoseconds after `created` of the latest request; an atomic so a lookup only reads.
    last_seen: AtomicU64,
    ended: CancellationToken,
}

impl<S> fmt::Debug for Session<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Session")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl<S> Session<S> {
    /// A session created at `now` with streams of its own, in memory, holding at most
    /// `tail_capacity` events each (a connection-scoped session such as stdio's).
    pub fn new(id: SessionId, state: S, now: Instant, tail_capacity: usize) -> Self {
        Self::with_events(
            id,
            state,
            now,
            Arc::new(MemoryEventStore::new(tail_capacity)),
        )
    }

    /// A session created at `now` whose streams live in `events` (the transport's store, which
    /// replicas may share).
    pub fn with_events(id: SessionId, state: S, now: Instant, events: Arc<dyn EventStore>) -> Self {
        Self {
            id,
            state,
            conversation: Arc::new(Conversation::new()),
            events,
            created: now,
            last_seen: AtomicU64::new(0),
            ended: CancellationToken::new(),
        }
    }

    pub fn id(&self) -> &SessionId {
        &self.id
    }

    /// The protocol's state for this session.
    pub fn state(&self) -> &S {
        &self.state
    }

    /// Fires when the session ends (DELETE, expiry, shutdown).
    pub fn ended(&self) -> &CancellationToken {
        &self.ended
    }

    /// The session's server-initiated stream (what `GET` serves).
    pub fn standalone_stream(&self) -> Arc<dyn EventStream> {
        self.open_unless_ended(|events, id| events.standalone(id))
    }

    /// A new stream for one request's answer, resumable while the session lives.
    pub fn open_request_stream(&self) -> Arc<dyn EventStream> {
        self.open_unless_ended(|events, id| events.open_request_stream(id))
    }

    /// A reader after the event `after` of one of this session's streams.
    pub fn resume(&self, after: EventCursor) -> Result<Box<dyn EventReader>, ResumeError> {
        self.events.resume(&self.id, after)
    }

    /// Opens a stream in the store unless the session has ended. A stream opened while the
    /// session was ending is closed again, so an ended session leaves nothing in the store.
    fn open_unless_ended(
        &self,
        open: impl FnOnce(&dyn EventStore, &SessionId) -> Arc<dyn EventStream>,
    ) -> Arc<dyn EventStream> {
        if self.ended.is_cancelled() {
            return EventTail::closed();
        }
        let stream = open(self.events.as_ref(), &self.id);
        // `end` cancels before it closes the streams: either it saw this stream, or this check
        // sees the cancellation.
        if self.ended.is_cancelled() {
            self.events.close_session(&self.id);
        }
        stream
    }

    pub(crate) fn conversation(&self) -> &Arc<Conversation> {
        &self.conversation
    }

    /// Ends the session: streams close, requests awaiting the peer fail.
    pub fn end(&self) {
        self.ended.cancel();
        self.events.close_session(&self.id);
        self.conversation.abandon();
    }

    fn touch(&self, now: Instant) {
        let nanos = u64::try_from(now.saturating_duration_since(self.created).as_nanos())
            .unwrap_or(u64::MAX);
        self.last_seen.fetch_max(nanos, Ordering::Relaxed);
    }

    fn expired(&self, now: Instant, limits: &SessionLimits) -> bool {
        let age = now.saturating_duration_since(self.created);
        let last_seen = self.created + Duration::from_nanos(self.last_seen.load(Ordering::Relaxed));
        age >= limits.absolute || now.saturating_duration_since(last_seen) >= limits.idle
    }
}

/// How long sessions live and how many may.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct SessionLimits {
    /// A session unused this long ends.
    pub idle: Duration,
    /// A session this old ends however busy it is.
    pub absolute: Duration,
    /// The most live sessions; opening one more is refused, never made room for by eviction.
    pub max_live: usize,
}

crate::config_setters!(SessionLimits {
    idle: Duration,
    absolute: Duration,
    max_live: usize
});

impl Default for SessionLimits {
    fn default() -> Self {
        Self {
            idle: Duration::from_secs(30 * 60),
            absolute: Duration::from_secs(24 * 60 * 60),
            max_live: 10_000,
        }
    }
}

/// The store is full.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the session limit is reached")]
pub struct SessionLimitReached;

/// Where sessions live. Expiry is the store's: `get` never returns an expired session and
/// `reap` removes every expired one, so a client that never sends `DELETE` leaks nothing.
pub trait SessionStore<S>: Send + Sync + 'static {
    /// Whether one more session would fit.
    fn has_room(&self) -> bool;
    /// Adds a session.
    fn insert(&self, session: Arc<Session<S>>) -> Result<(), SessionLimitReached>;
    /// The live session with this id, marked as used at `now`.
    fn get(&self, id: &SessionId, now: Instant) -> Option<Arc<Session<S>>>;
    /// Removes and ends a session.
    fn remove(&self, id: &SessionId) -> Option<Arc<Session<S>>>;
    /// Removes and ends every session expired at `now`; returns how many.
    fn reap(&self, now: Instant) -> usize;
    /// How many sessions are held.
    fn len(&self) -> usize;
    /// Whether none are held.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Ends every session (shutdown).
    fn clear(&self);
}

/// The in-memory store.
pub struct MemorySessionStore<S> {
    sessions: RwLock<HashMap<SessionId, Arc<Session<S>>>>,
    limits: SessionLimits,
}

impl<S> fmt::Debug for MemorySessionStore<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemorySessionStore")
            .field("len", &self.len_inner())
            .field("limits", &self.limits)
            .finish()
    }
}

impl<S> MemorySessionStore<S> {
    pub fn new(limits: SessionLimits) -> Self {
        Self {
            sessions: RwLock::new(HashMap::new()),
            limits,
        }
    }

    pub fn limits(&self) -> &SessionLimits {
        &self.limits
    }

    fn len_inner(&self) -> usize {
        self.sessions.read().map_or(0, |sessions| sessions.len())
    }
}

impl<S: Send + Sync + 'static> SessionStore<S> for MemorySessionStore<S> {
    fn has_room(&self) -> bool {
        self.len_inner() < self.limits.max_live
    }

    fn insert(&self, session: Arc<Session<S>>) -> Result<(), SessionLimitReached> {
        let Ok(mut sessions) = self.sessions.write() else {
            return Err(SessionLimitReached);
        };
        if sessions.len() >= self.limits.max_live {
            return Err(SessionLimitReached);
        }
        sessions.insert(session.id().clone(), session);
        Ok(())
    }

    fn get(&self, id: &SessionId, now: Instant) -> Option<Arc<Session<S>>> {
        let found = self.sessions.read().ok()?.get(id).cloned()?;
        if found.expired(now, &self.limits) {
            // Expiry does not wait for the reaper: an expired session is gone the moment it is
            // asked for.
            self.remove(id);
            return None;
        }
        found.touch(now);
        Some(found)
    }

    fn remove(&self, id: &SessionId) -> Option<Arc<Session<S>>> {
        let removed = {
            let mut sessions = self.sessions.write().ok()?;
            let removed = sessions.remove(id)?;
            release_spare_capacity(&mut sessions);
            removed
        };
        removed.end();
        Some(removed)
    }

    fn reap(&self, now: Instant) -> usize {
        let expired: Vec<Arc<Session<S>>> = match self.sessions.write() {
            Ok(mut sessions) => {
                let ids: Vec<SessionId> = sessions
                    .values()
                    .filter(|session| session.expired(now, &self.limits))
                    .map(|session| session.id().clone())
                    .collect();
                let expired = ids.iter().filter_map(|id| sessions.remove(id)).collect();
                release_spare_capacity(&mut sessions);
                expired
            }
            Err(_) => Vec::new(),
        };
        for session in &expired {
            session.end();
        }
        if !expired.is_empty() {
            tracing::debug!(count = expired.len(), "reaped expired sessions");
        }
        expired.len()
    }

    fn len(&self) -> usize {
        self.len_inner()
    }

    fn clear(&self) {
        let drained: Vec<Arc<Session<S>>> = match self.sessions.write() {
            Ok(mut sessions) => sessions.drain().map(|(_, session)| session).collect(),
            Err(_) => Vec::new(),
        };
        for session in drained {
            session.end();
        }
    }
}

/// Gives back most of a map's table once it is mostly empty, so a burst of sessions that
/// expired leaves no peak-sized table behind; halving only below a quarter full keeps the cost
/// amortised.
pub fn release_spare_capacity<K: Eq + std::hash::Hash, V>(map: &mut HashMap<K, V>) {
    const SMALL: usize = 64;
    if map.capacity() > SMALL && map.len() * 4 < map.capacity() {
        map.shrink_to(map.len() * 2);
    }
}

/// Runs `store.reap` every `every` until the store is dropped. Holding only a `Weak` means the
/// task ends with the router that owns the store.
pub fn spawn_reaper<S, T>(store: &Arc<T>, clock: Arc<dyn Clock>, every: Duration)
where
    S: Send + Sync + 'static,
    T: SessionStore<S> + ?Sized,
{
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        tracing::warn!("no tokio runtime: sessions expire on lookup only until one is running");
        return;
    };
    let weak: Weak<T> = Arc::downgrade(store);
    runtime.spawn(async move {
        let mut ticker = tokio::time::interval(every);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticker.tick().await;
            let Some(store) = weak.upgrade() else { break };
            store.reap(clock.now());
        }
    });
}

/// Starts a store's reaper on first use, so a transport built outside a tokio runtime still
/// reaps once it serves.
pub(crate) struct LazyReaper {
    started: std::sync::Once,
}

impl LazyReaper {
    pub(crate) const fn new() -> Self {
        Self {
            started: std::sync::Once::new(),
        }
    }

    pub(crate) fn ensure<S, T>(&self, store: &Arc<T>, clock: &Arc<dyn Clock>, every: Duration)
    where
        S: Send + Sync + 'static,
        T: SessionStore<S> + ?Sized,
    {
        self.started
            .call_once(|| spawn_reaper::<S, T>(store, Arc::clone(clock), every));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> SessionLimits {
        SessionLimits {
            idle: Duration::from_secs(60),
            absolute: Duration::from_secs(600),
            max_live: 2,
        }
    }

    fn session(clock: &ManualClock) -> Arc<Session<()>> {
        Arc::new(Session::new(SessionId::random(), (), clock.now(), 16))
    }

    #[test]
    fn a_session_id_is_visible_ascii_of_bounded_length() {
        assert!("abc-123".parse::<SessionId>().is_ok());
        for bad in ["", "has space", "tab\there", "é", &"x".repeat(129)] {
            assert_eq!(bad.parse::<SessionId>(), Err(MalformedSessionId), "{bad:?}");
        }
    }

    #[test]
    fn random_ids_differ_and_parse_back() {
        let (a, b) = (SessionId::random(), SessionId::random());
        assert_ne!(a, b);
        assert_eq!(a.as_str().parse::<SessionId>(), Ok(a));
    }

    #[test]
    fn an_idle_session_expires_and_a_used_one_does_not() {
        let clock = ManualClock::new();
        let store = MemorySessionStore::new(limits());
        let idle = session(&clock);
        let used = session(&clock);
        assert!(store.insert(Arc::clone(&idle)).is_ok());
        assert!(store.insert(Arc::clone(&used)).is_ok());
        clock.advance(Duration::from_secs(40));
        assert!(store.get(used.id(), clock.now()).is_some());
        clock.advance(Duration::from_secs(40));
        assert_eq!(store.reap(clock.now()), 1);
        assert!(store.get(idle.id(), clock.now()).is_none());
        assert!(store.get(used.id(), clock.now()).is_some());
        assert!(idle.ended().is_cancelled());
    }

    #[test]
    fn a_busy_session_still_ends_at_its_absolute_deadline() {
        let clock = ManualClock::new();
        let store = MemorySessionStore::new(limits());
        let busy = session(&clock);
        assert!(store.insert(Arc::clone(&busy)).is_ok());
        for _ in 0..19 {
            clock.advance(Duration::from_secs(30));
            assert!(store.get(busy.id(), clock.now()).is_some());
        }
        clock.advance(Duration::from_secs(30));
        assert!(store.get(busy.id(), clock.now()).is_none());
        assert!(store.is_empty());
    }

    #[test]
    fn an_expired_session_is_gone_on_lookup_before_the_reaper_runs() {
        let clock = ManualClock::new();
        let store = MemorySessionStore::new(limits());
        let stale = session(&clock);
        assert!(store.insert(Arc::clone(&stale)).is_ok());
        clock.advance(Duration::from_secs(61));
        assert!(store.get(stale.id(), clock.now()).is_none());
        assert_eq!(store.len(), 0);
    }

    #[test]
    fn the_live_session_cap_refuses_rather_than_evicts() {
        let clock = ManualClock::new();
        let store = MemorySessionStore::new(limits());
        let first = session(&clock);
        assert!(store.insert(Arc::clone(&first)).is_ok());
        assert!(store.insert(session(&clock)).is_ok());
        assert!(!store.has_room());
        assert_eq!(store.insert(session(&clock)), Err(SessionLimitReached));
        assert!(store.get(first.id(), clock.now()).is_some());
    }

    #[test]
    fn removing_a_session_ends_it() {
        let clock = ManualClock::new();
        let store = MemorySessionStore::new(limits());
        let gone = session(&clock);
        assert!(store.insert(Arc::clone(&gone)).is_ok());
        assert!(store.remove(gone.id()).is_some());
        assert!(gone.ended().is_cancelled());
        assert!(store.remove(gone.id()).is_none());
    }

    #[test]
    fn an_expired_session_leaves_nothing_in_the_event_store() {
        let clock = ManualClock::new();
        let events = Arc::new(MemoryEventStore::new(4));
        let store = MemorySessionStore::new(limits());
        let session = Arc::new(Session::with_events(
            SessionId::random(),
            (),
            clock.now(),
            Arc::clone(&events) as Arc<dyn EventStore>,
        ));
        assert!(store.insert(Arc::clone(&session)).is_ok());
        let stream = session.standalone_stream();
        session.open_request_stream();
        assert_eq!(events.len(), 1);
        clock.advance(Duration::from_secs(61));
        assert_eq!(store.reap(clock.now()), 1);
        assert!(events.is_empty());
        assert!(stream.publish(bytes::Bytes::from_static(b"{}")).is_err());
    }

    #[test]
    fn a_store_emptied_by_expiry_gives_its_table_back() {
        let clock = ManualClock::new();
        let store = MemorySessionStore::new(SessionLimits {
            max_live: 10_000,
            ..limits()
        });
        for _ in 0..5_000 {
            assert!(store.insert(session(&clock)).is_ok());
        }
        let peak = store
            .sessions
            .read()
            .map_or(0, |sessions| sessions.capacity());
        clock.advance(Duration::from_secs(61));
        assert_eq!(store.reap(clock.now()), 5_000);
        let after = store
            .sessions
            .read()
            .map_or(usize::MAX, |sessions| sessions.capacity());
        assert!(after * 16 < peak, "capacity {after} of a peak {peak}");
    }

    #[test]
    fn an_ended_session_opens_no_new_streams_in_the_event_store() {
        let clock = ManualClock::new();
        let events = Arc::new(MemoryEventStore::new(4));
        let session = Session::with_events(
            SessionId::random(),
            (),
            clock.now(),
            Arc::clone(&events) as Arc<dyn EventStore>,
        );
        session.end();
        let late = session.standalone_stream();
        assert!(late.publish(bytes::Bytes::from_static(b"{}")).is_err());
        assert!(events.is_empty());
    }

    #[tokio::test]
    async fn the_reaper_task_empties_the_store_without_any_lookup() {
        let clock = Arc::new(ManualClock::new());
        let store = Arc::new(MemorySessionStore::new(limits()));
        assert!(store.insert(session(&clock)).is_ok());
        spawn_reaper::<(), _>(
            &store,
            Arc::clone(&clock) as Arc<dyn Clock>,
            Duration::from_millis(5),
        );
        clock.advance(Duration::from_secs(61));
        for _ in 0..200 {
            if store.is_empty() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert!(store.is_empty());
    }
}
