//! The Redis session store: the records replicas share live in Redis (see [`crate::scripts`] for
//! the keys), each replica keeps live `Session`s for the ones it serves, rebuilt from the
//! record when another replica saved a newer state. Every command is one script call bounded by
//! the configured timeout: a lookup is one round trip (read and slide the expiry), a save is
//! one more only when the state's version moved.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use protocols_runtime::session::{
    Session, SessionId, SessionRecord, SessionStore, SharedState, StoreError, StoreFuture,
    decode_state, encode_state,
};
use protocols_runtime::tail::EventStore;
use redis::aio::ConnectionManager;
use redis::{FromRedisValue, ScriptInvocation};

use crate::config::RedisConfig;
use crate::connection::{ConnectError, millis_of};
use crate::scripts::Scripts;

/// How many ended sessions one reap script removes before the next batch: keeps each script
/// short, since Redis runs nothing else while a script runs.
const REAP_BATCH: usize = 256;

/// A session this replica holds live, with the record revision its state reflects.
struct Held<S> {
    session: Arc<Session<S>>,
    revision: u64,
}

/// What the lookup script answers for a live session: revision, created (ns since the epoch,
/// so a rebuilt session keeps the exact time), idle and absolute deadlines (ms since the
/// epoch), and the state when newer than the caller's.
type Found = (u64, u64, u64, u64, Option<Vec<u8>>);

/// Sessions in Redis, served by any replica connected to the same Redis.
///
/// Keys (under [`RedisConfig::prefix`]): `session:{id}`, a hash of the session's serialized
/// state, its revision (how many saves), its creation time and its idle and absolute deadlines;
/// `sessions`, a sorted set of the live ids by the time each ends. Every write sets the hash to
/// expire at the earlier deadline and the set at its latest one, so Redis removes a session no
/// one deletes, and once all have ended no key is left. The limit counts the set's entries not
/// yet ended, in the same script as the insert, so it holds across replicas.
///
/// Round trips: a lookup is one script call (read, slide the idle deadline, and the state only
/// when another replica saved a newer revision than the copy held here, which is then rebuilt);
/// a save is one script call when the state's version moved, none otherwise; insert, remove
/// and has-room are one each; a reap is one per 256 ended sessions plus one to check the
/// copies held here. Each is bounded by [`RedisConfig::timeout`]: past it the answer is
/// [`StoreError::Unavailable`], and the connection is re-established in the background.
pub struct RedisSessionStore<S> {
    connection: ConnectionManager,
    scripts: Scripts,
    /// What every record key starts with (`{prefix}session:`).
    record_prefix: String,
    /// The sorted set of live session ids by end time (`{prefix}sessions`).
    index: String,
    events: Arc<dyn EventStore>,
    config: RedisConfig,
    live: Mutex<HashMap<SessionId, Held<S>>>,
}

impl<S> fmt::Debug for RedisSessionStore<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisSessionStore")
            .field("config", &self.config)
            .field("live", &self.live_count())
            .finish_non_exhaustive()
    }
}

impl<S> RedisSessionStore<S> {
    /// Connects to the Redis `config` names and loads the store's scripts; the sessions'
    /// streams live in `events`. Fails, never hangs, when Redis cannot be reached within the
    /// configured timeout.
    pub async fn connect(
        config: RedisConfig,
        events: Arc<dyn EventStore>,
    ) -> Result<Self, ConnectError> {
        let scripts = Scripts::new();
        let (_, connection) = crate::connection::connect(&config, &scripts.all()).await?;
        Ok(Self {
            connection,
            scripts,
            record_prefix: format!("{}session:", config.prefix),
            index: format!("{}sessions", config.prefix),
            events,
            config,
            live: Mutex::new(HashMap::new()),
        })
    }

    /// The configuration the store was built with.
    pub fn config(&self) -> &RedisConfig {
        &self.config
    }

    fn record_key(&self, id: &SessionId) -> String {
        format!("{}{id}", self.record_prefix)
    }

    /// Runs one script (see [`Self::ask`]).
    async fn run<T: FromRedisValue>(
        &self,
        invocation: &ScriptInvocation<'_>,
    ) -> Result<T, StoreError> {
        let mut connection = self.connection.clone();
        self.ask(invocation.invoke_async(&mut connection)).await
    }

    /// Awaits one request to Redis, bounded by the timeout.
    async fn ask<T>(
        &self,
        request: impl Future<Output = redis::RedisResult<T>>,
    ) -> Result<T, StoreError> {
        crate::connection::ask(self.config.timeout, request).await
    }

    fn live_count(&self) -> usize {
        self.live.lock().map_or(0, |live| live.len())
    }

    fn held_revision(&self, id: &SessionId) -> Option<u64> {
        let live = self.live.lock().ok()?;
        live.get(id).map(|held| held.revision)
    }

    fn held_session(&self, id: &SessionId) -> Option<Arc<Session<S>>> {
        let live = self.live.lock().ok()?;
        live.get(id).map(|held| Arc::clone(&held.session))
    }

    /// Ends and drops this replica's live copy of a session that is gone from Redis.
    fn forget(&self, id: &SessionId) -> bool {
        let held = self.live.lock().ok().and_then(|mut live| live.remove(id));
        let Some(held) = held else { return false };
        held.session.end();
        true
    }

    /// Holds `session` at `revision` unless a copy at least as new is held already (two
    /// lookups rebuilding it at once); answers the copy held.
    fn hold(&self, session: Arc<Session<S>>, revision: u64) -> Arc<Session<S>> {
        let Ok(mut live) = self.live.lock() else {
            return session;
        };
        match live.get(session.id()) {
            Some(held) if held.revision >= revision => Arc::clone(&held.session),
            _ => {
                live.insert(
                    session.id().clone(),
                    Held {
                        session: Arc::clone(&session),
                        revision,
                    },
                );
                session
            }
        }
    }

    fn note_saved(&self, session: &Arc<Session<S>>, revision: u64) {
        if let Ok(mut live) = self.live.lock()
            && let Some(held) = live.get_mut(session.id())
            && Arc::ptr_eq(&held.session, session)
        {
            held.revision = held.revision.max(revision);
        }
    }

    async fn room(&self) -> Result<bool, StoreError> {
        let now = millis(self.config.clock.wall());
        let mut connection = self.connection.clone();
        let mut zcount = redis::cmd("ZCOUNT");
        zcount.arg(&self.index).arg(format!("({now}")).arg("+inf");
        let count = self
            .ask(zcount.query_async::<usize>(&mut connection))
            .await?;
        Ok(count < self.config.limits.max_live)
    }

    async fn delete(&self, id: &SessionId) -> Result<bool, StoreError> {
        let removed: u64 = self
            .run(
                self.scripts
                    .remove
                    .key(self.record_key(id))
                    .key(&self.index)
                    .arg(id.as_str()),
            )
            .await?;
        self.forget(id);
        Ok(removed > 0)
    }

    async fn expire(&self, now: SystemTime) -> Result<usize, StoreError> {
        let mut reaped = 0;
        loop {
            let ids: Vec<String> = self
                .run(
                    self.scripts
                        .reap
                        .key(&self.index)
                        .arg(millis(now))
                        .arg(REAP_BATCH)
                        .arg(&self.record_prefix),
                )
                .await?;
            for id in &ids {
                if let Ok(id) = id.parse::<SessionId>() {
                    self.forget(&id);
                }
            }
            reaped += ids.len();
            if ids.len() < REAP_BATCH {
                break;
            }
        }
        Ok(reaped + self.forget_ended_elsewhere(now).await?)
    }

    /// Ends the live copies of sessions that ended in Redis without this replica seeing it
    /// (expired there, removed or reaped by another replica); answers how many.
    async fn forget_ended_elsewhere(&self, now: SystemTime) -> Result<usize, StoreError> {
        let held: Vec<SessionId> = match self.live.lock() {
            Ok(live) => live.keys().cloned().collect(),
            Err(_) => return Ok(0),
        };
        if held.is_empty() {
            return Ok(0);
        }
        let mut pipeline = redis::pipe();
        for id in &held {
            pipeline.zscore(&self.index, id.as_str());
        }
        let mut connection = self.connection.clone();
        let scores = self
            .ask(pipeline.query_async::<Vec<Option<f64>>>(&mut connection))
            .await?;
        let now = millis(now) as f64;
        let ended = held
            .iter()
            .zip(scores)
            .filter(|(_, score)| score.is_none_or(|ends| ends <= now))
            .filter(|(id, _)| self.forget(id))
            .count();
        Ok(ended)
    }
}

impl<S: SharedState> RedisSessionStore<S> {
    async fn store_new(&self, session: Arc<Session<S>>) -> Result<(), StoreError> {
        let created = session.created();
        let record = SessionRecord::of(&session, created, &self.config.limits)?;
        let stored: u64 = self
            .run(
                self.scripts
                    .insert
                    .key(self.record_key(session.id()))
                    .key(&self.index)
                    .arg(session.id().as_str())
                    .arg(millis(created))
                    .arg(self.config.limits.max_live)
                    .arg(record.state)
                    .arg(nanos(created))
                    .arg(millis(record.idle_deadline))
                    .arg(millis(record.absolute_deadline)),
            )
            .await?;
        if stored == 0 {
            return Err(StoreError::LimitReached);
        }
        session.mark_saved(session.state().version());
        self.hold(session, 0);
        Ok(())
    }

    async fn lookup(
        &self,
        id: &SessionId,
        now: SystemTime,
    ) -> Result<Option<Arc<Session<S>>>, StoreError> {
        let known = self.held_revision(id);
        let found: Option<Found> = self
            .run(
                self.scripts
                    .get
                    .key(self.record_key(id))
                    .key(&self.index)
                    .arg(id.as_str())
                    .arg(millis(now))
                    .arg(millis_of(self.config.limits.idle))
                    .arg(known.map_or(-1, |revision| i64::try_from(revision).unwrap_or(i64::MAX))),
            )
            .await?;
        let Some((revision, created, idle, absolute, state)) = found else {
            self.forget(id);
            return Ok(None);
        };
        let Some(state) = state else {
            // The live copy is current; gone only if a removal raced this lookup.
            return Ok(self.held_session(id));
        };
        // Not held here, or saved by another replica since: rebuilt from the record.
        let record = SessionRecord {
            id: id.clone(),
            state,
            revision,
            created: UNIX_EPOCH
                .checked_add(Duration::from_nanos(created))
                .unwrap_or(UNIX_EPOCH),
            idle_deadline: time_of(idle),
            absolute_deadline: time_of(absolute),
        };
        let restored = Session::restored(
            &record,
            decode_state::<S>(&record.state)?,
            now,
            Arc::clone(&self.events),
        );
        Ok(Some(self.hold(Arc::new(restored), revision)))
    }

    async fn store_state(&self, session: &Arc<Session<S>>, version: u64) -> Result<(), StoreError> {
        let state = encode_state(session.state())?;
        let revision: Option<u64> = self
            .run(
                self.scripts
                    .save
                    .key(self.record_key(session.id()))
                    .arg(state),
            )
            .await?;
        // A session removed meanwhile has nothing left to save into.
        if let Some(revision) = revision {
            self.note_saved(session, revision);
        }
        session.mark_saved(version);
        Ok(())
    }
}

impl<S: SharedState> SessionStore<S> for RedisSessionStore<S> {
    fn has_room(&self) -> StoreFuture<'_, Result<bool, StoreError>> {
        StoreFuture::boxed(self.room())
    }

    fn insert(&self, session: Arc<Session<S>>) -> StoreFuture<'_, Result<(), StoreError>> {
        StoreFuture::boxed(self.store_new(session))
    }

    fn get<'a>(
        &'a self,
        id: &'a SessionId,
        now: SystemTime,
    ) -> StoreFuture<'a, Result<Option<Arc<Session<S>>>, StoreError>> {
        StoreFuture::boxed(self.lookup(id, now))
    }

    fn saves_state(&self) -> bool {
        true
    }

    fn save<'a>(&'a self, session: &'a Arc<Session<S>>) -> StoreFuture<'a, Result<(), StoreError>> {
        let version = session.state().version();
        // An unchanged state costs no round trip.
        if version == session.saved_version() {
            return StoreFuture::ready(Ok(()));
        }
        StoreFuture::boxed(self.store_state(session, version))
    }

    fn remove<'a>(&'a self, id: &'a SessionId) -> StoreFuture<'a, Result<bool, StoreError>> {
        StoreFuture::boxed(self.delete(id))
    }

    fn reap(&self, now: SystemTime) -> StoreFuture<'_, Result<usize, StoreError>> {
        StoreFuture::boxed(self.expire(now))
    }

    /// The sessions this replica holds live (others may hold more in Redis).
    fn len(&self) -> usize {
        self.live_count()
    }

    fn clear(&self) {
        let drained: Vec<Held<S>> = match self.live.lock() {
            Ok(mut live) => live.drain().map(|(_, held)| held).collect(),
            Err(_) => Vec::new(),
        };
        for held in drained {
            held.session.end();
        }
    }
}

/// Milliseconds since the Unix epoch (0 before it), what the records and expiries count in.
fn millis(time: SystemTime) -> u64 {
    millis_of(time.duration_since(UNIX_EPOCH).unwrap_or(Duration::ZERO))
}

/// Nanoseconds since the Unix epoch (0 before it), what a record's creation time counts in.
fn nanos(time: SystemTime) -> u64 {
    let since = time.duration_since(UNIX_EPOCH).unwrap_or(Duration::ZERO);
    u64::try_from(since.as_nanos()).unwrap_or(u64::MAX)
}

fn time_of(millis: u64) -> SystemTime {
    UNIX_EPOCH
        .checked_add(Duration::from_millis(millis))
        .unwrap_or(UNIX_EPOCH)
}
