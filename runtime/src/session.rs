//! Sessions: the id a server issues, the per-session record the transports keep (protocol state,
//! the conversation's pending requests, where the session's event streams live), the store trait
//! with an in-memory implementation, and the clock that drives idle and absolute expiry.
//!
//! The store trait is asynchronous and fallible so a network store can implement it, while the
//! in-memory store pays nothing for that: its answers are [`StoreFuture::Ready`], no allocation,
//! and only a network store's are boxed. A store that keeps sessions for other replicas keeps a
//! [`SessionRecord`] per session (the state a protocol declares [`SharedState`], serialized, and
//! the wall-clock deadlines every replica agrees on); the transport asks it to
//! [`SessionStore::save`] after each request only when it [`SessionStore::saves_state`], and such
//! a store writes only when the state's [`SharedState::version`] moved.

use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock, Weak};
use std::time::{Duration, Instant, SystemTime};

use serde::Serialize;
use serde::de::DeserializeOwned;

use tokio_util::sync::CancellationToken;

use bytes::Bytes;

use crate::peer::Conversation;
use crate::store::log_late_failure;
pub use crate::store::{StoreError, StoreFuture};
use crate::tail::{
    EventCursor, EventStore, EventStream, EventTail, MemoryEventStore, OpenedStream, PublishError,
    ResumedStream,
};

/// What tells the time to expiry decisions. Injected so tests can move time by hand.
pub trait Clock: Send + Sync + 'static {
    /// The monotonic time, for deadlines one process keeps.
    fn now(&self) -> Instant;

    /// The wall-clock time, for deadlines replicas share (session expiry): every machine reads
    /// the same time, where each one's monotonic clock starts at its own boot.
    fn wall(&self) -> SystemTime {
        SystemTime::now()
    }
}

/// The machine's monotonic clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Instant {
        Instant::now()
    }
}

/// A clock that moves only when told to, for tests (`test-support`).
#[cfg(any(test, feature = "test-support"))]
#[doc(hidden)]
#[derive(Debug)]
pub struct ManualClock {
    origin: Instant,
    wall_origin: SystemTime,
    elapsed: std::sync::Mutex<Duration>,
}

#[cfg(any(test, feature = "test-support"))]
impl ManualClock {
    /// A clock reading the current time until it is moved.
    pub fn new() -> Self {
        Self {
            origin: Instant::now(),
            wall_origin: SystemTime::now(),
            elapsed: std::sync::Mutex::new(Duration::ZERO),
        }
    }

    fn elapsed(&self) -> Duration {
        self.elapsed
            .lock()
            .map_or(Duration::ZERO, |elapsed| *elapsed)
    }

    /// Moves the clock forward.
    pub fn advance(&self, by: Duration) {
        if let Ok(mut elapsed) = self.elapsed.lock() {
            *elapsed += by;
        }
    }
}

#[cfg(any(test, feature = "test-support"))]
impl Default for ManualClock {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(any(test, feature = "test-support"))]
impl Clock for ManualClock {
    fn now(&self) -> Instant {
        self.origin + self.elapsed()
    }

    fn wall(&self) -> SystemTime {
        self.wall_origin + self.elapsed()
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

    /// The id as sent in a header.
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
    /// Wall-clock, so a replica that rebuilds the session from its record keeps its deadlines.
    created: SystemTime,
    /// Nanoseconds after `created` of the latest request; an atomic so a lookup only reads.
    last_seen: AtomicU64,
    /// The state's version a store last saved ([`SessionStore::save`]); unused in memory.
    saved_version: AtomicU64,
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
    pub fn new(id: SessionId, state: S, now: SystemTime, tail_capacity: usize) -> Self {
        Self::with_events(
            id,
            state,
            now,
            Arc::new(MemoryEventStore::new(tail_capacity)),
        )
    }

    crate::test_support::test_visible! {
        /// A session created at `now` whose streams live in `events` (the transport's store,
        /// which replicas may share).
        fn with_events(
            id: SessionId,
            state: S,
            now: SystemTime,
            events: Arc<dyn EventStore>,
        ) -> Self {
            Self {
                id,
                state,
                conversation: Arc::new(Conversation::new()),
                events,
                created: now,
                last_seen: AtomicU64::new(0),
                saved_version: AtomicU64::new(0),
                ended: CancellationToken::new(),
            }
        }
    }

    /// A replica's live copy of a session another replica opened: its state rebuilt from the
    /// record (counting its changes from 0 again), its deadlines the record's, seen at `now`.
    pub fn restored(
        record: &SessionRecord,
        state: S,
        now: SystemTime,
        events: Arc<dyn EventStore>,
    ) -> Self {
        let session = Self::with_events(record.id.clone(), state, record.created, events);
        session.touch(now);
        session
    }

    /// When the session opened (wall-clock).
    pub fn created(&self) -> SystemTime {
        self.created
    }

    /// The state's [`SharedState::version`] a store last saved (0 before any save).
    pub fn saved_version(&self) -> u64 {
        self.saved_version.load(Ordering::Acquire)
    }

    /// Notes that a store saved the state at `version`; an older version never replaces a
    /// newer one, so two requests finishing together leave the newest mark.
    pub fn mark_saved(&self, version: u64) {
        self.saved_version.fetch_max(version, Ordering::AcqRel);
    }

    /// The session's id.
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
    pub fn standalone_stream(&self) -> OpenedStream<'_> {
        self.open_unless_ended(|events, id| events.standalone(id))
    }

    /// A new stream for one request's answer, resumable while the session lives.
    pub fn open_request_stream(&self) -> OpenedStream<'_> {
        self.open_unless_ended(|events, id| events.open_request_stream(id))
    }

    /// A reader after the event `after` of one of this session's streams.
    pub fn resume(&self, after: EventCursor) -> ResumedStream<'_> {
        self.events.resume(&self.id, after)
    }

    /// Publishes `payload` on the session's standalone stream from a caller that cannot wait
    /// (a broadcast). Taken in place when the store answers at once; otherwise it finishes
    /// on its own, and `Ok` only says it was handed over (two such publishes racing to a
    /// store whose opening is not ready at once may then land in either order).
    pub fn publish_standalone(&self, payload: Bytes) -> Result<(), PublishError> {
        match self.standalone_stream().now() {
            Ok(opened) => publish_now(opened?.as_ref(), payload),
            Err(_) => {
                let (events, id) = (Arc::clone(&self.events), self.id.clone());
                let publish = async move {
                    let stream = events.standalone(&id).await?;
                    stream.publish(payload).await.map(|_| ())
                };
                StoreFuture::boxed(publish).now_or_detach(log_late_failure);
                Ok(())
            }
        }
    }

    /// Opens a stream in the store unless the session has ended. A stream opened while the
    /// session was ending is closed again, so an ended session leaves nothing in the store.
    fn open_unless_ended<'a>(
        &'a self,
        open: impl FnOnce(&'a dyn EventStore, &'a SessionId) -> OpenedStream<'a>,
    ) -> OpenedStream<'a> {
        if self.ended.is_cancelled() {
            return StoreFuture::ready(Ok(EventTail::closed()));
        }
        // `end` cancels before it closes the streams: either it saw a stream just opened, or
        // the check after the opening sees the cancellation and closes them again.
        match open(self.events.as_ref(), &self.id).now() {
            Ok(opened) => {
                if self.ended.is_cancelled() {
                    close_streams(self.events.as_ref(), &self.id);
                }
                StoreFuture::ready(opened)
            }
            Err(pending) => {
                let (ended, events, id) = (
                    self.ended.clone(),
                    Arc::clone(&self.events),
                    self.id.clone(),
                );
                StoreFuture::boxed(async move {
                    let opened = pending.await;
                    if ended.is_cancelled() {
                        close_streams(events.as_ref(), &id);
                    }
                    opened
                })
            }
        }
    }

    pub(crate) fn conversation(&self) -> &Arc<Conversation> {
        &self.conversation
    }

    /// Ends the session: streams close, requests awaiting the peer fail.
    pub fn end(&self) {
        self.ended.cancel();
        close_streams(self.events.as_ref(), &self.id);
        self.conversation.abandon();
    }

    fn touch(&self, now: SystemTime) {
        let nanos = u64::try_from(since(self.created, now).as_nanos()).unwrap_or(u64::MAX);
        self.last_seen.fetch_max(nanos, Ordering::Relaxed);
    }

    fn expired(&self, now: SystemTime, limits: &SessionLimits) -> bool {
        let age = since(self.created, now);
        let last_seen = Duration::from_nanos(self.last_seen.load(Ordering::Relaxed));
        age >= limits.absolute || age.saturating_sub(last_seen) >= limits.idle
    }
}

/// Closes a session's streams in the store, finishing on its own when the store does not answer
/// at once (a session ends in synchronous paths too).
fn close_streams(events: &dyn EventStore, id: &SessionId) {
    if let Some(Err(error)) = events.close_session(id).now_or_detach(log_late_failure) {
        tracing::warn!(%error, "the session's streams were not closed in the event store");
    }
}

/// Publishes into a stream whose answers may come later: taken in place when ready, left to
/// finish on its own otherwise (its failure is logged then).
pub(crate) fn publish_now(stream: &dyn EventStream, payload: Bytes) -> Result<(), PublishError> {
    match stream.publish(payload).now_or_detach(log_late_failure) {
        Some(published) => published.map(|_| ()),
        None => Ok(()),
    }
}

/// How long after `earlier` `now` is; zero when the wall clock stepped back.
fn since(earlier: SystemTime, now: SystemTime) -> Duration {
    now.duration_since(earlier).unwrap_or(Duration::ZERO)
}

/// What a shared store keeps of a session so any replica can serve it: the id, the protocol's
/// state serialized ([`SharedState`]), and wall-clock times every replica reads alike.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionRecord {
    /// The session's id.
    pub id: SessionId,
    /// The state as [`encode_state`] wrote it.
    pub state: Vec<u8>,
    /// How many times the state was saved since the session opened: a replica whose live copy
    /// reflects an older revision rebuilds it.
    pub revision: u64,
    /// When the session opened.
    pub created: SystemTime,
    /// The session ends unused past this; each request moves it (never past the absolute one).
    pub idle_deadline: SystemTime,
    /// The session ends here however busy it is.
    pub absolute_deadline: SystemTime,
}

impl SessionRecord {
    /// The record of `session` as its state stands, used at `now` under `limits`, at revision 0
    /// (a store counts the saves after).
    pub fn of<S: SharedState>(
        session: &Session<S>,
        now: SystemTime,
        limits: &SessionLimits,
    ) -> Result<Self, StoreError> {
        let absolute_deadline = session.created + limits.absolute;
        Ok(Self {
            id: session.id.clone(),
            state: encode_state(session.state())?,
            revision: 0,
            created: session.created,
            idle_deadline: (now + limits.idle).min(absolute_deadline),
            absolute_deadline,
        })
    }

    /// Whether the session has ended by `now`.
    #[cfg(feature = "test-support")]
    #[doc(hidden)]
    pub fn is_expired(&self, now: SystemTime) -> bool {
        now >= self.idle_deadline || now >= self.absolute_deadline
    }

    /// Moves the idle deadline for a request at `now`.
    pub fn touch(&mut self, now: SystemTime, limits: &SessionLimits) {
        self.idle_deadline = (now + limits.idle).min(self.absolute_deadline);
    }
}

/// Session state a protocol shares between replicas: serializable, and counting its own
/// changes so a store writes it only after a request changed it.
pub trait SharedState: Serialize + DeserializeOwned + Default + Send + Sync + 'static {
    /// A number that grows with every change of the state (0 for a fresh one).
    fn version(&self) -> u64;
}

/// `()` shares nothing and never changes.
impl SharedState for () {
    fn version(&self) -> u64 {
        0
    }
}

/// The state's bytes in a record (JSON: readable in the store, stable across builds).
pub fn encode_state<S: SharedState>(state: &S) -> Result<Vec<u8>, StoreError> {
    serde_json::to_vec(state).map_err(StoreError::unavailable)
}

/// The state a record's bytes hold.
pub fn decode_state<S: SharedState>(bytes: &[u8]) -> Result<S, StoreError> {
    serde_json::from_slice(bytes).map_err(StoreError::unavailable)
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
pub(crate) struct SessionLimitReached;

impl From<SessionLimitReached> for StoreError {
    fn from(_: SessionLimitReached) -> Self {
        Self::LimitReached
    }
}

/// Where sessions live. Expiry is the store's: `get` never returns an expired session and
/// `reap` removes every expired one, so a client that never sends `DELETE` leaks nothing.
/// Times are wall-clock, so replicas sharing a store agree on when a session ends.
pub trait SessionStore<S>: Send + Sync + 'static {
    /// Whether one more session would fit.
    fn has_room(&self) -> StoreFuture<'_, Result<bool, StoreError>>;
    /// Adds a session.
    fn insert(&self, session: Arc<Session<S>>) -> StoreFuture<'_, Result<(), StoreError>>;
    /// The live session with this id, marked as used at `now`; a replica that does not hold it
    /// live rebuilds it from the stored record.
    fn get<'a>(
        &'a self,
        id: &'a SessionId,
        now: SystemTime,
    ) -> StoreFuture<'a, Result<Option<Arc<Session<S>>>, StoreError>>;
    /// Whether every answer is [`StoreFuture::Ready`] (a store in this process's memory): the
    /// transport then runs what awaits it in place rather than boxing it.
    fn answers_at_once(&self) -> bool {
        false
    }
    /// Whether [`Self::save`] keeps anything: the transport asks for saves only then, so a
    /// store holding live sessions costs nothing after a request.
    fn saves_state(&self) -> bool {
        false
    }
    /// Saves the session's state after a request, if the request changed it.
    fn save<'a>(&'a self, session: &'a Arc<Session<S>>) -> StoreFuture<'a, Result<(), StoreError>> {
        let _ = session;
        StoreFuture::ready(Ok(()))
    }
    /// Removes and ends a session; whether it was held.
    fn remove<'a>(&'a self, id: &'a SessionId) -> StoreFuture<'a, Result<bool, StoreError>>;
    /// Removes and ends every session expired at `now`; returns how many.
    fn reap(&self, now: SystemTime) -> StoreFuture<'_, Result<usize, StoreError>>;
    /// How many sessions this process holds live.
    fn len(&self) -> usize;
    /// Whether none are held.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Ends every session this process holds live (shutdown); a shared store keeps its records
    /// for the other replicas.
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
    /// An empty store holding sessions under `limits`.
    pub fn new(limits: SessionLimits) -> Self {
        Self {
            sessions: RwLock::new(HashMap::new()),
            limits,
        }
    }

    fn len_inner(&self) -> usize {
        self.sessions.read().map_or(0, |sessions| sessions.len())
    }
}

/// The in-memory store's answers, at once: what its [`SessionStore`] implementation wraps in
/// [`StoreFuture::ready`].
impl<S> MemorySessionStore<S> {
    /// Whether one more session would fit.
    pub(crate) fn has_room(&self) -> bool {
        self.len_inner() < self.limits.max_live
    }

    /// Adds a session.
    pub(crate) fn insert(&self, session: Arc<Session<S>>) -> Result<(), SessionLimitReached> {
        let Ok(mut sessions) = self.sessions.write() else {
            return Err(SessionLimitReached);
        };
        if sessions.len() >= self.limits.max_live {
            return Err(SessionLimitReached);
        }
        sessions.insert(session.id().clone(), session);
        Ok(())
    }

    /// The live session with this id, marked as used at `now`.
    pub(crate) fn get(&self, id: &SessionId, now: SystemTime) -> Option<Arc<Session<S>>> {
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

    /// Removes and ends a session.
    pub(crate) fn remove(&self, id: &SessionId) -> Option<Arc<Session<S>>> {
        let removed = {
            let mut sessions = self.sessions.write().ok()?;
            let removed = sessions.remove(id)?;
            release_spare_capacity(&mut sessions);
            removed
        };
        removed.end();
        Some(removed)
    }

    /// Removes and ends every session expired at `now`; returns how many.
    pub(crate) fn reap(&self, now: SystemTime) -> usize {
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

    /// Ends every session (shutdown).
    pub(crate) fn clear(&self) {
        let drained: Vec<Arc<Session<S>>> = match self.sessions.write() {
            Ok(mut sessions) => sessions.drain().map(|(_, session)| session).collect(),
            Err(_) => Vec::new(),
        };
        for session in drained {
            session.end();
        }
    }
}

impl<S: Send + Sync + 'static> SessionStore<S> for MemorySessionStore<S> {
    fn answers_at_once(&self) -> bool {
        true
    }

    fn has_room(&self) -> StoreFuture<'_, Result<bool, StoreError>> {
        StoreFuture::ready(Ok(Self::has_room(self)))
    }

    fn insert(&self, session: Arc<Session<S>>) -> StoreFuture<'_, Result<(), StoreError>> {
        StoreFuture::ready(Self::insert(self, session).map_err(StoreError::from))
    }

    fn get<'a>(
        &'a self,
        id: &'a SessionId,
        now: SystemTime,
    ) -> StoreFuture<'a, Result<Option<Arc<Session<S>>>, StoreError>> {
        StoreFuture::ready(Ok(Self::get(self, id, now)))
    }

    fn remove<'a>(&'a self, id: &'a SessionId) -> StoreFuture<'a, Result<bool, StoreError>> {
        StoreFuture::ready(Ok(Self::remove(self, id).is_some()))
    }

    fn reap(&self, now: SystemTime) -> StoreFuture<'_, Result<usize, StoreError>> {
        StoreFuture::ready(Ok(Self::reap(self, now)))
    }

    fn len(&self) -> usize {
        self.len_inner()
    }

    fn clear(&self) {
        Self::clear(self);
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
pub(crate) fn spawn_reaper<S, T>(store: &Arc<T>, clock: Arc<dyn Clock>, every: Duration)
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
            if let Err(error) = store.reap(clock.wall()).await {
                tracing::warn!(%error, "reaping expired sessions failed");
            }
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

    /// A stream the in-memory store opened, at once.
    fn opened(answer: OpenedStream<'_>) -> Arc<dyn EventStream> {
        match answer.now() {
            Ok(Ok(stream)) => stream,
            _ => panic!("the in-memory store answers at once"),
        }
    }

    fn session(clock: &ManualClock) -> Arc<Session<()>> {
        Arc::new(Session::new(SessionId::random(), (), clock.wall(), 16))
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
        assert!(store.get(used.id(), clock.wall()).is_some());
        clock.advance(Duration::from_secs(40));
        assert_eq!(store.reap(clock.wall()), 1);
        assert!(store.get(idle.id(), clock.wall()).is_none());
        assert!(store.get(used.id(), clock.wall()).is_some());
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
            assert!(store.get(busy.id(), clock.wall()).is_some());
        }
        clock.advance(Duration::from_secs(30));
        assert!(store.get(busy.id(), clock.wall()).is_none());
        assert!(store.is_empty());
    }

    #[test]
    fn an_expired_session_is_gone_on_lookup_before_the_reaper_runs() {
        let clock = ManualClock::new();
        let store = MemorySessionStore::new(limits());
        let stale = session(&clock);
        assert!(store.insert(Arc::clone(&stale)).is_ok());
        clock.advance(Duration::from_secs(61));
        assert!(store.get(stale.id(), clock.wall()).is_none());
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
        assert!(store.get(first.id(), clock.wall()).is_some());
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
            clock.wall(),
            Arc::clone(&events) as Arc<dyn EventStore>,
        ));
        assert!(store.insert(Arc::clone(&session)).is_ok());
        let stream = opened(session.standalone_stream());
        opened(session.open_request_stream());
        assert_eq!(events.len(), 1);
        clock.advance(Duration::from_secs(61));
        assert_eq!(store.reap(clock.wall()), 1);
        assert!(events.is_empty());
        assert!(publish_now(stream.as_ref(), Bytes::from_static(b"{}")).is_err());
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
        assert_eq!(store.reap(clock.wall()), 5_000);
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
            clock.wall(),
            Arc::clone(&events) as Arc<dyn EventStore>,
        );
        session.end();
        let late = opened(session.standalone_stream());
        assert!(publish_now(late.as_ref(), Bytes::from_static(b"{}")).is_err());
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
