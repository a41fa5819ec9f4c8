//! The Redis session store against a real, throwaway `redis-server`: the shared session store
//! contract (its outage a cut network), expiry by Redis itself with no key left behind, the
//! limit and the state shared by two stores (two replicas), a killed Redis, round trips counted.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use protocols_redis::{ConnectError, RedisConfig, RedisSessionStore};
use protocols_runtime::session::{
    Clock, ManualClock, Session, SessionId, SessionLimits, SessionStore, SharedState, StoreError,
};
use protocols_runtime::tail::{EventStore, MemoryEventStore};
use protocols_testkit::sessions::{ContractStore, session_store_contract};
use protocols_testkit::{RedisServer, Reply};
use serde::{Deserialize, Serialize};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// Short, so an outage costs the tests little; the default is a second.
const TIMEOUT: Duration = Duration::from_millis(250);

/// A protocol's session state: a log level, counting its changes as MCP's state does.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Notes {
    level: Mutex<String>,
    #[serde(skip)]
    changes: AtomicU64,
}

impl Notes {
    fn set_level(&self, level: &str) {
        *self.level.lock().unwrap() = level.to_owned();
        self.changes.fetch_add(1, Ordering::SeqCst);
    }

    fn level(&self) -> String {
        self.level.lock().unwrap().clone()
    }
}

impl SharedState for Notes {
    fn version(&self) -> u64 {
        self.changes.load(Ordering::SeqCst)
    }
}

fn events() -> Arc<dyn EventStore> {
    Arc::new(MemoryEventStore::new(4))
}

fn config(url: String, limits: SessionLimits) -> RedisConfig {
    RedisConfig::new(url)
        .timeout(TIMEOUT)
        .reconnect_delay(Duration::from_millis(20))
        .limits(limits)
}

async fn store<S: SharedState>(
    server: &RedisServer,
    limits: SessionLimits,
) -> RedisSessionStore<S> {
    RedisSessionStore::connect(config(server.url(), limits), events())
        .await
        .expect("connected")
}

fn session<S: SharedState>() -> Arc<Session<S>> {
    Arc::new(Session::with_events(
        SessionId::random(),
        S::default(),
        SystemTime::now(),
        events(),
    ))
}

fn limits() -> SessionLimits {
    SessionLimits::default()
        .idle(Duration::from_secs(60))
        .absolute(Duration::from_secs(600))
        .max_live(10)
}

async fn get<S: SharedState>(
    store: &RedisSessionStore<S>,
    id: &SessionId,
) -> Option<Arc<Session<S>>> {
    store.get(id, SystemTime::now()).await.expect("answers")
}

/// A TCP relay to Redis whose network can be cut: cut, it closes every relayed connection and
/// drops new ones unread, so no command reaches Redis and Redis keeps its data (a partition).
struct Relay {
    address: SocketAddr,
    cut: watch::Sender<bool>,
}

fn relay(upstream: SocketAddr) -> Relay {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let address = listener.local_addr().unwrap();
    let listener = TcpListener::from_std(listener).unwrap();
    let (cut, watching) = watch::channel(false);
    tokio::spawn(async move {
        while let Ok((mut client, _)) = listener.accept().await {
            let mut watching = watching.clone();
            if *watching.borrow() {
                continue;
            }
            tokio::spawn(async move {
                let Ok(mut server) = TcpStream::connect(upstream).await else {
                    return;
                };
                tokio::select! {
                    biased;
                    _ = watching.wait_for(|cut| *cut) => {}
                    _ = tokio::io::copy_bidirectional(&mut client, &mut server) => {}
                }
            });
        }
    });
    Relay { address, cut }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_redis_store_keeps_the_session_store_contract_through_an_outage() {
    let server = RedisServer::start();
    let stores = AtomicUsize::new(0);
    session_store_contract(|limits| {
        let relay = relay(server.address());
        // Each claim on keys of its own, as on a fresh Redis.
        let prefix = format!("contract{}:", stores.fetch_add(1, Ordering::SeqCst));
        let config = config(format!("redis://{}", relay.address), limits).prefix(prefix);
        let connect = RedisSessionStore::<()>::connect(config, events());
        let store =
            tokio::task::block_in_place(|| tokio::runtime::Handle::current().block_on(connect))
                .expect("connected");
        ContractStore {
            store: Arc::new(store),
            outage: Some(Box::new(move |down| {
                relay.cut.send_replace(down);
            })),
        }
    })
    .await;
}

#[tokio::test]
async fn a_session_that_is_never_deleted_leaves_no_key_after_expiry() {
    let server = RedisServer::start();
    let idle = Duration::from_secs(1);
    let store = store::<()>(&server, limits().idle(idle)).await;
    let opened = session::<()>();
    let started = Instant::now();
    store.insert(Arc::clone(&opened)).await.expect("inserted");
    assert_eq!(server.key_count(), 2, "the record and the index");
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert!(get(&store, opened.id()).await.is_some(), "used at 0.6 s");
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(server.key_count(), 2, "the use moved the expiry past 1 s");
    // No DELETE, no lookup, no reap: Redis expires both keys a second after the last use.
    while server.key_count() > 0 {
        assert!(
            started.elapsed() < Duration::from_secs(4),
            "keys outlived their expiry"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(started.elapsed() >= Duration::from_millis(1600));
}

#[tokio::test]
async fn ending_every_session_leaves_no_key() {
    let server = RedisServer::start();
    let store = store::<Notes>(&server, limits()).await;
    let opened: Vec<_> = (0..3).map(|_| session::<Notes>()).collect();
    for session in &opened {
        store.insert(Arc::clone(session)).await.expect("inserted");
    }
    let live = get(&store, opened[0].id()).await.expect("found");
    live.state().set_level("debug");
    store.save(&live).await.expect("saved");
    assert_eq!(server.key_count(), 4, "three records and the index");
    for session in &opened {
        assert!(store.remove(session.id()).await.expect("removed"));
        assert!(session.ended().is_cancelled());
    }
    assert_eq!(server.key_count(), 0);
    assert!(store.is_empty());
}

#[tokio::test]
async fn the_reaper_removes_sessions_ended_in_redis_from_every_replica() {
    let server = RedisServer::start();
    let (first, second) = (
        store::<()>(&server, limits()).await,
        store::<()>(&server, limits()).await,
    );
    let opened = session::<()>();
    first.insert(Arc::clone(&opened)).await.expect("inserted");
    let copy = get(&second, opened.id())
        .await
        .expect("found on the second");
    let later = SystemTime::now() + Duration::from_secs(61);
    assert_eq!(first.reap(later).await.expect("reaped"), 1);
    assert_eq!(server.key_count(), 0);
    // The second replica never saw the session end; its reaper ends its live copy.
    assert!(!copy.ended().is_cancelled());
    assert_eq!(second.reap(later).await.expect("reaped"), 1);
    assert!(copy.ended().is_cancelled());
    assert!(second.is_empty());
}

#[tokio::test]
async fn a_redis_outage_is_unavailable_within_the_timeout_and_the_store_recovers_after() {
    let mut server = RedisServer::start();
    let store = store::<()>(&server, limits()).await;
    let opened = session::<()>();
    store.insert(Arc::clone(&opened)).await.expect("inserted");
    server.stop();
    for _ in 0..3 {
        let asked = Instant::now();
        let answer = store.get(opened.id(), SystemTime::now()).await;
        assert!(
            matches!(answer, Err(StoreError::Unavailable(_))),
            "{answer:?}"
        );
        assert!(asked.elapsed() < TIMEOUT + Duration::from_millis(400));
    }
    let refused = store.insert(session()).await;
    assert!(
        matches!(refused, Err(StoreError::Unavailable(_))),
        "{refused:?}"
    );
    server.resume();
    // The killed Redis kept nothing (no persistence); the store serves again by itself.
    let resumed = Instant::now();
    let reopened = session::<()>();
    while let Err(error) = store.insert(Arc::clone(&reopened)).await {
        assert!(
            resumed.elapsed() < Duration::from_secs(2),
            "not recovered: {error}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(get(&store, reopened.id()).await.is_some());
    assert!(
        get(&store, opened.id()).await.is_none(),
        "lost with the killed Redis"
    );
    assert!(opened.ended().is_cancelled());
}

#[tokio::test]
async fn a_second_store_on_the_same_redis_serves_a_session_the_first_opened_with_its_saved_state() {
    let server = RedisServer::start();
    let (first, second) = (
        store::<Notes>(&server, limits()).await,
        store::<Notes>(&server, limits()).await,
    );
    let opened = session::<Notes>();
    first.insert(Arc::clone(&opened)).await.expect("inserted");
    opened.state().set_level("debug");
    first.save(&opened).await.expect("saved");

    let on_second = get(&second, opened.id())
        .await
        .expect("found on the second");
    assert_eq!(on_second.state().level(), "debug");
    assert_eq!(on_second.created(), opened.created());
    on_second.state().set_level("error");
    second.save(&on_second).await.expect("saved");

    // The first replica's live copy is older than the record now: rebuilt with the new state.
    let on_first = get(&first, opened.id()).await.expect("found on the first");
    assert!(!Arc::ptr_eq(&on_first, &opened));
    assert_eq!(on_first.state().level(), "error");
    // And held again: a second lookup answers the same copy.
    let again = get(&first, opened.id()).await.expect("found");
    assert!(Arc::ptr_eq(&on_first, &again));
}

#[tokio::test]
async fn the_session_limit_holds_across_two_stores() {
    let server = RedisServer::start();
    let two = limits().max_live(2);
    let (first, second) = (
        store::<()>(&server, two).await,
        store::<()>(&server, two).await,
    );
    let kept = session::<()>();
    first.insert(Arc::clone(&kept)).await.expect("inserted");
    second.insert(session()).await.expect("inserted");
    assert!(!first.has_room().await.expect("answers"));
    assert!(!second.has_room().await.expect("answers"));
    let refused = first.insert(session()).await;
    assert!(
        matches!(refused, Err(StoreError::LimitReached)),
        "{refused:?}"
    );
    assert!(matches!(
        second.insert(session()).await,
        Err(StoreError::LimitReached)
    ));
    assert!(second.remove(kept.id()).await.expect("removed"));
    assert!(first.has_room().await.expect("answers"));
    first.insert(session()).await.expect("room again");
}

#[tokio::test]
async fn a_lookup_is_one_round_trip_and_an_unchanged_save_is_none() {
    let server = RedisServer::start();
    let store = store::<Notes>(&server, limits()).await;
    let opened = session::<Notes>();
    store.insert(Arc::clone(&opened)).await.expect("inserted");
    server.command(&["CONFIG", "RESETSTAT"]);
    for _ in 0..5 {
        let live = get(&store, opened.id()).await.expect("found");
        store.save(&live).await.expect("nothing to save");
    }
    assert_eq!(top_level_calls(&server), 5, "one script call per lookup");
    opened.state().set_level("debug");
    store.save(&opened).await.expect("saved");
    assert_eq!(top_level_calls(&server), 6, "one more for a changed state");
}

/// The commands clients sent since the statistics were reset (commands a script runs are
/// counted apart, under `scripts`), less the `INFO` asking.
fn top_level_calls(server: &RedisServer) -> u64 {
    let Reply::Bulk(Some(info)) = server.command(&["INFO", "commandstats"]) else {
        panic!("no INFO reply");
    };
    let calls = |name: &str| {
        info.lines()
            .find_map(|line| line.strip_prefix(&format!("cmdstat_{name}:calls=")))
            .and_then(|rest| rest.split(',').next())
            .map_or(0, |calls| calls.parse::<u64>().unwrap())
    };
    ["evalsha", "eval", "zcount", "zscore", "script|load", "ping"]
        .iter()
        .map(|name| calls(name))
        .sum()
}

#[tokio::test]
async fn connecting_to_no_redis_is_an_error_within_the_timeout() {
    let nobody = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("redis://{}", nobody.local_addr().unwrap());
    drop(nobody);
    let asked = Instant::now();
    let refused = RedisSessionStore::<()>::connect(config(url, limits()), events()).await;
    assert!(
        matches!(refused, Err(ConnectError::TimedOut(_))),
        "{refused:?}"
    );
    assert!(asked.elapsed() < TIMEOUT + Duration::from_millis(400));
    let tls =
        RedisSessionStore::<()>::connect(config("rediss://127.0.0.1:1".into(), limits()), events())
            .await;
    assert!(matches!(tls, Err(ConnectError::InvalidUrl(_))), "{tls:?}");
}

#[tokio::test]
async fn a_session_that_ended_unreaped_does_not_count_toward_the_limit() {
    let server = RedisServer::start();
    let clock = Arc::new(ManualClock::new());
    let config = config(server.url(), limits().max_live(1)).clock(Arc::clone(&clock) as _);
    let store = RedisSessionStore::<()>::connect(config, events())
        .await
        .expect("connected");
    let at = |clock: &ManualClock| {
        Arc::new(Session::with_events(
            SessionId::random(),
            (),
            clock.wall(),
            events(),
        ))
    };
    store.insert(at(&clock)).await.expect("inserted");
    assert!(!store.has_room().await.expect("answers"));
    clock.advance(Duration::from_secs(61));
    assert!(
        store.has_room().await.expect("answers"),
        "the idle one ended"
    );
    store
        .insert(at(&clock))
        .await
        .expect("inserted in its place, no reap run");
    assert!(matches!(
        store.insert(at(&clock)).await,
        Err(StoreError::LimitReached)
    ));
}

/// The Redis server's process id, as the server names it.
fn process_id(server: &RedisServer) -> String {
    let Reply::Bulk(Some(info)) = server.command(&["INFO", "server"]) else {
        panic!("no INFO reply");
    };
    let pid = info
        .lines()
        .find_map(|line| line.strip_prefix("process_id:"));
    pid.expect("a process id").trim().to_owned()
}

fn signal(pid: &str, signal: &str) {
    let sent = std::process::Command::new("kill")
        .args([signal, pid])
        .status()
        .unwrap();
    assert!(sent.success());
}

#[tokio::test]
async fn a_frozen_redis_is_unavailable_within_the_timeout_and_served_again_when_it_thaws() {
    let server = RedisServer::start();
    let store = store::<()>(&server, limits()).await;
    let opened = session::<()>();
    store.insert(Arc::clone(&opened)).await.expect("inserted");
    // Stopped, not killed: the connection stays open and no answer ever comes.
    let pid = process_id(&server);
    signal(&pid, "-STOP");
    let asked = Instant::now();
    let answer = store.get(opened.id(), SystemTime::now()).await;
    let waited = asked.elapsed();
    signal(&pid, "-CONT");
    assert!(
        matches!(answer, Err(StoreError::Unavailable(_))),
        "{answer:?}"
    );
    assert!(waited >= TIMEOUT && waited < TIMEOUT + Duration::from_millis(400));
    assert!(
        get(&store, opened.id()).await.is_some(),
        "the same connection serves again"
    );
}
