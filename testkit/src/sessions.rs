//! Session stores under test: [`RecordSessionStore`], a store whose replicas share serialized
//! [`SessionRecord`]s (never live objects) the way a network store does, and
//! [`session_store_contract`], the claims every [`SessionStore`] implementation must hold
//! (insert, lookup, touch, expiry, removal, limits, failures), for any crate's store to run.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use protocols_runtime::session::{
    Clock, ManualClock, Session, SessionId, SessionLimits, SessionRecord, SessionStore,
    SharedState, StoreError, StoreFuture, decode_state,
};
use protocols_runtime::tail::{EventStore, MemoryEventStore};

/// What replicas share: the records, as a network store would hold them, and a switch that
/// makes every answer fail (an outage).
#[derive(Debug, Default)]
pub struct SharedRecords {
    records: Mutex<HashMap<SessionId, SessionRecord>>,
    down: AtomicBool,
}

impl SharedRecords {
    /// Makes the records unreachable (`true`) or reachable again.
    pub fn set_down(&self, down: bool) {
        self.down.store(down, Ordering::SeqCst);
    }

    /// The record of session `id`, as stored.
    pub fn record(&self, id: &SessionId) -> Option<SessionRecord> {
        self.records.lock().unwrap().get(id).cloned()
    }

    fn reachable(&self) -> Result<(), StoreError> {
        if self.down.load(Ordering::SeqCst) {
            Err(StoreError::unavailable("the shared records are down"))
        } else {
            Ok(())
        }
    }
}

/// A session held live by one replica, with the record revision its state reflects.
type Held<S> = (Arc<Session<S>>, u64);

/// One replica's store over [`SharedRecords`]: its own live `Session`s, each rebuilt from its
/// record on first use, saved back when a request changed the state. Its answers are boxed
/// futures, as a network store's are.
pub struct RecordSessionStore<S> {
    shared: Arc<SharedRecords>,
    live: Mutex<HashMap<SessionId, Held<S>>>,
    events: Arc<dyn EventStore>,
    limits: SessionLimits,
}

impl<S> std::fmt::Debug for RecordSessionStore<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecordSessionStore")
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl<S: SharedState> RecordSessionStore<S> {
    /// A replica's store over `shared`, its sessions' streams in `events`.
    pub fn new(
        shared: &Arc<SharedRecords>,
        events: &Arc<dyn EventStore>,
        limits: SessionLimits,
    ) -> Self {
        Self {
            shared: Arc::clone(shared),
            live: Mutex::new(HashMap::new()),
            events: Arc::clone(events),
            limits,
        }
    }

    fn forget_live(&self, id: &SessionId) {
        if let Some((session, _)) = self.live.lock().unwrap().remove(id) {
            session.end();
        }
    }

    fn lookup(
        &self,
        id: &SessionId,
        now: SystemTime,
    ) -> Result<Option<Arc<Session<S>>>, StoreError> {
        self.shared.reachable()?;
        let record = {
            let mut records = self.shared.records.lock().unwrap();
            match records.get_mut(id) {
                Some(record) if !record.is_expired(now) => {
                    record.touch(now, &self.limits);
                    Some(record.clone())
                }
                Some(_) => {
                    records.remove(id);
                    None
                }
                None => None,
            }
        };
        let Some(record) = record else {
            self.forget_live(id);
            return Ok(None);
        };
        let mut live = self.live.lock().unwrap();
        if let Some((session, revision)) = live.get(id)
            && *revision >= record.revision
        {
            return Ok(Some(Arc::clone(session)));
        }
        // Not held here, or changed by another replica since: rebuilt from the record.
        let state: S = decode_state(&record.state)?;
        let session = Arc::new(Session::restored(
            &record,
            state,
            now,
            Arc::clone(&self.events),
        ));
        live.insert(id.clone(), (Arc::clone(&session), record.revision));
        Ok(Some(session))
    }

    fn store_new(&self, session: &Arc<Session<S>>) -> Result<(), StoreError> {
        self.shared.reachable()?;
        let record = SessionRecord::of(session, session.created(), &self.limits)?;
        let mut records = self.shared.records.lock().unwrap();
        if records.len() >= self.limits.max_live {
            return Err(StoreError::LimitReached);
        }
        session.mark_saved(session.state().version());
        records.insert(session.id().clone(), record);
        self.live
            .lock()
            .unwrap()
            .insert(session.id().clone(), (Arc::clone(session), 0));
        Ok(())
    }

    fn store_state(&self, session: &Arc<Session<S>>) -> Result<(), StoreError> {
        let version = session.state().version();
        if version == session.saved_version() {
            return Ok(());
        }
        self.shared.reachable()?;
        let encoded = protocols_runtime::session::encode_state(session.state())?;
        let revision = {
            let mut records = self.shared.records.lock().unwrap();
            let Some(record) = records.get_mut(session.id()) else {
                // Removed meanwhile: nothing is left to save into.
                return Ok(());
            };
            record.state = encoded;
            record.revision += 1;
            record.revision
        };
        if let Some((_, held)) = self.live.lock().unwrap().get_mut(session.id()) {
            *held = revision;
        }
        session.mark_saved(version);
        Ok(())
    }

    fn delete(&self, id: &SessionId) -> Result<bool, StoreError> {
        self.shared.reachable()?;
        let existed = self.shared.records.lock().unwrap().remove(id).is_some();
        self.forget_live(id);
        Ok(existed)
    }

    fn expire(&self, now: SystemTime) -> Result<usize, StoreError> {
        self.shared.reachable()?;
        let expired: Vec<SessionId> = {
            let mut records = self.shared.records.lock().unwrap();
            let expired: Vec<SessionId> = records
                .values()
                .filter(|record| record.is_expired(now))
                .map(|record| record.id.clone())
                .collect();
            for id in &expired {
                records.remove(id);
            }
            expired
        };
        for id in &expired {
            self.forget_live(id);
        }
        Ok(expired.len())
    }
}

impl<S: SharedState> SessionStore<S> for RecordSessionStore<S> {
    fn has_room(&self) -> StoreFuture<'_, Result<bool, StoreError>> {
        StoreFuture::boxed(async move {
            self.shared.reachable()?;
            Ok(self.shared.records.lock().unwrap().len() < self.limits.max_live)
        })
    }

    fn insert(&self, session: Arc<Session<S>>) -> StoreFuture<'_, Result<(), StoreError>> {
        StoreFuture::boxed(async move { self.store_new(&session) })
    }

    fn get<'a>(
        &'a self,
        id: &'a SessionId,
        now: SystemTime,
    ) -> StoreFuture<'a, Result<Option<Arc<Session<S>>>, StoreError>> {
        StoreFuture::boxed(async move { self.lookup(id, now) })
    }

    fn saves_state(&self) -> bool {
        true
    }

    fn save<'a>(&'a self, session: &'a Arc<Session<S>>) -> StoreFuture<'a, Result<(), StoreError>> {
        // An unchanged state costs no round trip.
        if session.state().version() == session.saved_version() {
            return StoreFuture::ready(Ok(()));
        }
        StoreFuture::boxed(async move { self.store_state(session) })
    }

    fn remove<'a>(&'a self, id: &'a SessionId) -> StoreFuture<'a, Result<bool, StoreError>> {
        StoreFuture::boxed(async move { self.delete(id) })
    }

    fn reap(&self, now: SystemTime) -> StoreFuture<'_, Result<usize, StoreError>> {
        StoreFuture::boxed(async move { self.expire(now) })
    }

    fn len(&self) -> usize {
        self.shared.records.lock().unwrap().len()
    }

    fn clear(&self) {
        for (_, (session, _)) in self.live.lock().unwrap().drain() {
            session.end();
        }
    }
}

/// A store the contract runs against, and how to cut it off when it can be.
pub struct ContractStore {
    /// The store under test, empty when the contract starts.
    pub store: Arc<dyn SessionStore<()>>,
    /// Makes the store fail (`true`) and recover; `None` for a store that cannot fail.
    pub outage: Option<Box<dyn Fn(bool) + Send + Sync>>,
}

/// The limits the contract runs under: a minute idle, ten minutes at most, two sessions.
pub fn contract_limits() -> SessionLimits {
    SessionLimits::default()
        .idle(Duration::from_secs(60))
        .absolute(Duration::from_secs(600))
        .max_live(2)
}

fn session(clock: &ManualClock) -> Arc<Session<()>> {
    Arc::new(Session::with_events(
        SessionId::random(),
        (),
        clock.wall(),
        Arc::new(MemoryEventStore::new(4)),
    ))
}

async fn found(store: &dyn SessionStore<()>, id: &SessionId, clock: &ManualClock) -> bool {
    store
        .get(id, clock.wall())
        .await
        .expect("the store answers")
        .is_some()
}

/// Runs every claim of the session store contract against stores `make` builds (a fresh one
/// per claim, under [`contract_limits`]); panics at the first claim a store breaks.
pub async fn session_store_contract(make: impl Fn(SessionLimits) -> ContractStore) {
    an_inserted_session_is_found_and_an_unknown_one_is_not(&make(contract_limits())).await;
    a_used_session_outlives_its_idle_limit_and_an_unused_one_does_not(&make(contract_limits()))
        .await;
    a_busy_session_ends_at_its_absolute_deadline(&make(contract_limits())).await;
    reaping_removes_exactly_the_expired_sessions(&make(contract_limits())).await;
    removal_ends_a_session_once(&make(contract_limits())).await;
    the_live_limit_refuses_rather_than_evicts(&make(contract_limits())).await;
    an_outage_is_an_error_never_an_unknown_session(&make(contract_limits())).await;
}

async fn an_inserted_session_is_found_and_an_unknown_one_is_not(under: &ContractStore) {
    let (store, clock) = (under.store.as_ref(), ManualClock::new());
    let opened = session(&clock);
    store.insert(Arc::clone(&opened)).await.expect("inserted");
    let got = store.get(opened.id(), clock.wall()).await.expect("answers");
    assert_eq!(
        got.map(|session| session.id().clone()).as_ref(),
        Some(opened.id())
    );
    assert!(!found(store, &SessionId::random(), &clock).await);
    assert_eq!(store.len(), 1);
}

async fn a_used_session_outlives_its_idle_limit_and_an_unused_one_does_not(under: &ContractStore) {
    let (store, clock) = (under.store.as_ref(), ManualClock::new());
    let (idle, used) = (session(&clock), session(&clock));
    store.insert(Arc::clone(&idle)).await.expect("inserted");
    store.insert(Arc::clone(&used)).await.expect("inserted");
    clock.advance(Duration::from_secs(40));
    assert!(found(store, used.id(), &clock).await);
    clock.advance(Duration::from_secs(40));
    assert!(found(store, used.id(), &clock).await, "touched 40 s ago");
    assert!(!found(store, idle.id(), &clock).await, "unused for 80 s");
}

async fn a_busy_session_ends_at_its_absolute_deadline(under: &ContractStore) {
    let (store, clock) = (under.store.as_ref(), ManualClock::new());
    let busy = session(&clock);
    store.insert(Arc::clone(&busy)).await.expect("inserted");
    for _ in 0..19 {
        clock.advance(Duration::from_secs(30));
        assert!(found(store, busy.id(), &clock).await);
    }
    clock.advance(Duration::from_secs(30));
    assert!(!found(store, busy.id(), &clock).await);
    assert!(store.is_empty());
}

async fn reaping_removes_exactly_the_expired_sessions(under: &ContractStore) {
    let (store, clock) = (under.store.as_ref(), ManualClock::new());
    let (stale, fresh) = (session(&clock), session(&clock));
    store.insert(Arc::clone(&stale)).await.expect("inserted");
    store.insert(Arc::clone(&fresh)).await.expect("inserted");
    clock.advance(Duration::from_secs(50));
    assert!(found(store, fresh.id(), &clock).await);
    clock.advance(Duration::from_secs(20));
    assert_eq!(store.reap(clock.wall()).await.expect("reaped"), 1);
    assert_eq!(store.len(), 1);
    assert!(found(store, fresh.id(), &clock).await);
    assert!(!found(store, stale.id(), &clock).await);
}

async fn removal_ends_a_session_once(under: &ContractStore) {
    let (store, clock) = (under.store.as_ref(), ManualClock::new());
    let opened = session(&clock);
    store.insert(Arc::clone(&opened)).await.expect("inserted");
    let live = store
        .get(opened.id(), clock.wall())
        .await
        .expect("answers")
        .expect("found");
    assert!(store.remove(opened.id()).await.expect("removed"));
    assert!(live.ended().is_cancelled(), "the live session ended");
    assert!(!store.remove(opened.id()).await.expect("answers"));
    assert!(!found(store, opened.id(), &clock).await);
}

async fn the_live_limit_refuses_rather_than_evicts(under: &ContractStore) {
    let (store, clock) = (under.store.as_ref(), ManualClock::new());
    let first = session(&clock);
    store.insert(Arc::clone(&first)).await.expect("inserted");
    store.insert(session(&clock)).await.expect("inserted");
    assert!(!store.has_room().await.expect("answers"));
    let refused = store.insert(session(&clock)).await;
    assert!(
        matches!(refused, Err(StoreError::LimitReached)),
        "{refused:?}"
    );
    assert!(found(store, first.id(), &clock).await);
}

async fn an_outage_is_an_error_never_an_unknown_session(under: &ContractStore) {
    let Some(outage) = &under.outage else { return };
    let (store, clock) = (under.store.as_ref(), ManualClock::new());
    let opened = session(&clock);
    store.insert(Arc::clone(&opened)).await.expect("inserted");
    outage(true);
    let unavailable =
        |result: &Result<(), StoreError>| matches!(result, Err(StoreError::Unavailable(_)));
    let get = store.get(opened.id(), clock.wall()).await.map(|_| ());
    assert!(unavailable(&get), "get: {get:?}");
    assert!(unavailable(&store.has_room().await.map(|_| ())));
    assert!(unavailable(&store.insert(session(&clock)).await));
    assert!(unavailable(&store.remove(opened.id()).await.map(|_| ())));
    assert!(unavailable(&store.reap(clock.wall()).await.map(|_| ())));
    outage(false);
    assert!(
        found(store, opened.id(), &clock).await,
        "the session outlived the outage"
    );
}
