//! The owned listener's account of its connections: how many may be open (in all, and from one
//! peer), which connection makes room when a cap is reached, and the watchdog that closes a
//! connection that sends no request head in time or has gone idle.
//!
//! A connection is *unproven* until its first request head arrives: a healthy client sends one
//! within milliseconds, a silent or dribbling socket never does. When a cap is reached the
//! oldest unproven connection (of the same peer, for the per-peer cap) is closed to make room;
//! only when there is none is the new connection refused, with a `503` written before it is
//! closed. Proven connections are never evicted: they end when idle.
//!
//! The watchdog is one task for the whole listener, waking every [`ListenerConfig::tick`]: per
//! request a connection only bumps two counters, and its socket counts the writes (a stream's
//! keep-alive comments among them).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll};
use std::time::Duration;

use futures::task::AtomicWaker;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Instant;

/// How long a connection may take to send its first request head.
pub(crate) const DEFAULT_HEAD_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a connection with no request in flight and nothing written stays open.
pub(crate) const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(60);
/// Open connections from one peer (an IPv4 address, or an IPv6 /64).
pub(crate) const DEFAULT_MAX_CONNECTIONS_PER_PEER: usize = 256;
/// The most open connections by default, whatever the file limit allows.
pub(crate) const MAX_DEFAULT_CONNECTIONS: usize = 16_384;
/// The file limit assumed where it cannot be read.
const ASSUMED_FILE_LIMIT: usize = 1024;
/// How long a drain waits for in-flight requests and streams to finish.
pub(crate) const DEFAULT_DRAIN_DEADLINE: Duration = Duration::from_secs(30);

/// How a server that owns its listener treats connections, and how long it drains. Every
/// value has a default; change them with the builder methods and hand the result to
/// `ServerBuilder::listener`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ListenerConfig {
    /// A connection that has not sent its first request head this long after being accepted
    /// is closed (silent and slow-dribbling sockets alike; HTTP/2's preface included).
    pub head_timeout: Duration,
    /// A connection with no request in flight that has written nothing for this long is
    /// closed: an idle keep-alive connection, or a next request head that never completes. A
    /// stream the server writes to (keep-alive comments count) is not idle.
    pub idle_timeout: Duration,
    /// Open connections at most; past it the oldest connection that has sent no request yet
    /// is closed to make room, or else the new one is refused with `503`.
    pub max_connections: usize,
    /// Open connections from one peer at most (an IPv4 address, or an IPv6 /64), with the
    /// same rule for making room among that peer's connections.
    pub max_connections_per_peer: usize,
    /// After the stop signal: how long in-flight requests and answer streams get to finish.
    /// At the deadline, streams still open end telling their clients to retry.
    pub drain_deadline: Duration,
}

impl Default for ListenerConfig {
    /// The documented defaults; `max_connections` is three quarters of the process's soft
    /// `RLIMIT_NOFILE` (read from `/proc/self/limits`; 1,024 assumed elsewhere), at most
    /// 16,384.
    fn default() -> Self {
        Self {
            head_timeout: DEFAULT_HEAD_TIMEOUT,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            max_connections: default_max_connections(),
            max_connections_per_peer: DEFAULT_MAX_CONNECTIONS_PER_PEER,
            drain_deadline: DEFAULT_DRAIN_DEADLINE,
        }
    }
}

impl ListenerConfig {
    /// Sets [`Self::head_timeout`] (default 10 s).
    #[must_use]
    pub fn head_timeout(mut self, timeout: Duration) -> Self {
        self.head_timeout = timeout;
        self
    }

    /// Sets [`Self::idle_timeout`] (default 60 s).
    #[must_use]
    pub fn idle_timeout(mut self, timeout: Duration) -> Self {
        self.idle_timeout = timeout;
        self
    }

    /// Sets [`Self::max_connections`] (default: three quarters of the file limit, at most 16,384).
    #[must_use]
    pub fn max_connections(mut self, limit: usize) -> Self {
        self.max_connections = limit;
        self
    }

    /// Sets [`Self::max_connections_per_peer`] (default 256).
    #[must_use]
    pub fn max_connections_per_peer(mut self, limit: usize) -> Self {
        self.max_connections_per_peer = limit;
        self
    }

    /// Sets [`Self::drain_deadline`] (default 30 s).
    #[must_use]
    pub fn drain_deadline(mut self, deadline: Duration) -> Self {
        self.drain_deadline = deadline;
        self
    }

    /// How often the watchdog looks: a tenth of the shorter timeout, between 5 ms and 1 s, so
    /// a timeout is enforced within a tenth of its length.
    fn tick(&self) -> Duration {
        (self.head_timeout.min(self.idle_timeout) / 10)
            .clamp(Duration::from_millis(5), Duration::from_secs(1))
    }
}

/// Three quarters of the soft file limit, so the listener's own sockets never take the last
/// descriptors the rest of the process (and the accept of a refusal) needs.
fn default_max_connections() -> usize {
    let limit = soft_file_limit().unwrap_or(ASSUMED_FILE_LIMIT);
    (limit / 4 * 3).clamp(1, MAX_DEFAULT_CONNECTIONS)
}

/// The soft `RLIMIT_NOFILE`, as Linux reports it in `/proc/self/limits`.
fn soft_file_limit() -> Option<usize> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = limits
        .lines()
        .find(|line| line.starts_with("Max open files"))?;
    let soft = line
        .trim_start_matches("Max open files")
        .split_whitespace()
        .next()?;
    // "unlimited" is no bound to stay under; the fixed ceiling applies.
    Some(soft.parse().unwrap_or(usize::MAX))
}

/// Who a connection is counted against: an IPv4 address, or the /64 an IPv6 address is in (a
/// single host is commonly handed a whole /64).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum PeerKey {
    V4([u8; 4]),
    V6Prefix([u8; 8]),
}

impl PeerKey {
    fn of(ip: IpAddr) -> Self {
        match ip {
            IpAddr::V4(v4) => Self::V4(v4.octets()),
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => Self::V4(v4.octets()),
                None => {
                    let octets = v6.octets();
                    let mut prefix = [0; 8];
                    prefix.copy_from_slice(octets.first_chunk::<8>().unwrap_or(&[0; 8]));
                    Self::V6Prefix(prefix)
                }
            },
        }
    }
}

/// Why a connection is closed before it ends on its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Verdict {
    Open = 0,
    /// No first request head within the head timeout.
    HeadTimeout = 1,
    /// Nothing in flight and nothing written for the idle timeout.
    Idle = 2,
    /// Closed to make room under a cap.
    Evicted = 3,
}

impl Verdict {
    fn from_u8(value: u8) -> Self {
        match value {
            1 => Self::HeadTimeout,
            2 => Self::Idle,
            3 => Self::Evicted,
            _ => Self::Open,
        }
    }

    pub(crate) fn reason(self) -> &'static str {
        match self {
            Self::Open => "open",
            Self::HeadTimeout => "no request head within the head timeout",
            Self::Idle => "idle past the idle timeout",
            Self::Evicted => "closed to make room under a connection cap",
        }
    }
}

/// One connection as the listener tracks it, shared by its task, its service (which counts its
/// requests), its socket (which counts writes) and the watchdog.
#[derive(Debug)]
pub(crate) struct Tracked {
    id: u64,
    peer: PeerKey,
    accepted: Instant,
    /// Requests whose answer was asked for, and those whose answer head came back (or was
    /// dropped); they differ while a request is in flight.
    started: AtomicU64,
    finished: AtomicU64,
    /// Successful writes to the socket.
    writes: AtomicU64,
    /// Whether a request head ever arrived.
    proven: AtomicBool,
    verdict: AtomicU8,
    /// The connection's task, woken when a verdict is given.
    waker: AtomicWaker,
    /// Set once the connection's HTTP serving has ended while its socket lives on (an
    /// upgraded connection, such as a WebSocket, whose protocol now owns it).
    detached: AtomicBool,
    connections: Weak<Connections>,
}

impl Tracked {
    /// A request head arrived: counted, and the first one proves the connection.
    #[inline]
    pub(crate) fn request_started(&self) {
        self.started.fetch_add(1, Ordering::Relaxed);
        if !self.proven.load(Ordering::Relaxed) {
            self.prove();
        }
    }

    #[cold]
    #[inline(never)]
    fn prove(&self) {
        self.proven.store(true, Ordering::Relaxed);
        if let Some(connections) = self.connections.upgrade() {
            connections.proven(self);
        }
    }

    #[inline]
    pub(crate) fn request_finished(&self) {
        self.finished.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn verdict(&self) -> Verdict {
        Verdict::from_u8(self.verdict.load(Ordering::Acquire))
    }

    /// Tells the connection's task to close at once, unless a verdict was already given.
    fn close(&self, verdict: Verdict) {
        let given = self.verdict.compare_exchange(
            Verdict::Open as u8,
            verdict as u8,
            Ordering::AcqRel,
            Ordering::Acquire,
        );
        if given.is_ok() {
            self.waker.wake();
        }
    }

    /// Registers the task to wake when a verdict is given.
    pub(crate) fn register(&self, waker: &std::task::Waker) {
        self.waker.register(waker);
    }

    pub(crate) fn detach(&self) {
        self.detached.store(true, Ordering::Release);
    }
}

/// What the watchdog remembers of a connection between two looks.
#[derive(Debug)]
struct Watch {
    started: u64,
    writes: u64,
    /// Since when nothing was in flight and nothing written.
    quiet_since: Instant,
}

struct Entry {
    tracked: Arc<Tracked>,
    watch: Watch,
}

/// One peer's open connections, and which of them are unproven (by age).
#[derive(Default)]
struct PeerEntry {
    open: usize,
    unproven: BTreeSet<u64>,
}

#[derive(Default)]
struct Registry {
    entries: HashMap<u64, Entry>,
    /// Unproven connections by age, with their peer.
    unproven: BTreeMap<u64, PeerKey>,
    peers: HashMap<PeerKey, PeerEntry>,
}

impl Registry {
    /// Closes the oldest unproven connection (of `peer`, when given); whether there was one.
    fn evict_oldest(&mut self, peer: Option<PeerKey>) -> bool {
        let victim = match peer {
            Some(peer) => self
                .peers
                .get(&peer)
                .and_then(|entry| entry.unproven.first().copied()),
            None => self.unproven.first_key_value().map(|(id, _)| *id),
        };
        let Some(id) = victim else {
            return false;
        };
        if let Some(entry) = self.remove(id) {
            entry.tracked.close(Verdict::Evicted);
        }
        true
    }

    fn remove(&mut self, id: u64) -> Option<Entry> {
        let entry = self.entries.remove(&id)?;
        self.unproven.remove(&id);
        let peer = entry.tracked.peer;
        if let Some(counts) = self.peers.get_mut(&peer) {
            counts.open = counts.open.saturating_sub(1);
            counts.unproven.remove(&id);
            if counts.open == 0 {
                self.peers.remove(&peer);
            }
        }
        Some(entry)
    }
}

/// Every open connection of one listener.
pub(crate) struct Connections {
    config: ListenerConfig,
    registry: Mutex<Registry>,
    next_id: AtomicU64,
    /// Handed to each connection, so it can find its way back without keeping this alive.
    this: Weak<Connections>,
}

impl std::fmt::Debug for Connections {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connections")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl Connections {
    pub(crate) fn new(config: ListenerConfig) -> Arc<Self> {
        Arc::new_cyclic(|this| Self {
            config,
            registry: Mutex::new(Registry::default()),
            next_id: AtomicU64::new(0),
            this: this.clone(),
        })
    }

    /// A place for a new connection from `peer`, making room under either cap by closing the
    /// oldest unproven connection; `None` when there is no room to make.
    pub(crate) fn admit(&self, peer: IpAddr) -> Option<Registration> {
        let peer = PeerKey::of(peer);
        let mut registry = self.registry.lock().ok()?;
        let from_peer = registry.peers.get(&peer).map_or(0, |entry| entry.open);
        if from_peer >= self.config.max_connections_per_peer && !registry.evict_oldest(Some(peer)) {
            return None;
        }
        if registry.entries.len() >= self.config.max_connections && !registry.evict_oldest(None) {
            return None;
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let now = Instant::now();
        let tracked = Arc::new(Tracked {
            id,
            peer,
            accepted: now,
            started: AtomicU64::new(0),
            finished: AtomicU64::new(0),
            writes: AtomicU64::new(0),
            proven: AtomicBool::new(false),
            verdict: AtomicU8::new(Verdict::Open as u8),
            waker: AtomicWaker::new(),
            detached: AtomicBool::new(false),
            connections: self.this.clone(),
        });
        registry.entries.insert(
            id,
            Entry {
                tracked: Arc::clone(&tracked),
                watch: Watch {
                    started: 0,
                    writes: 0,
                    quiet_since: now,
                },
            },
        );
        registry.unproven.insert(id, peer);
        let counts = registry.peers.entry(peer).or_default();
        counts.open += 1;
        counts.unproven.insert(id);
        Some(Registration {
            tracked,
            connections: self.this.clone(),
        })
    }

    /// Makes room for a descriptor when the process has run out of them: the oldest unproven
    /// connection is closed.
    pub(crate) fn evict_for_descriptor(&self) -> bool {
        self.registry
            .lock()
            .is_ok_and(|mut registry| registry.evict_oldest(None))
    }

    /// How many connections are open.
    pub(crate) fn open(&self) -> usize {
        self.registry
            .lock()
            .map_or(0, |registry| registry.entries.len())
    }

    fn proven(&self, tracked: &Tracked) {
        if let Ok(mut registry) = self.registry.lock() {
            registry.unproven.remove(&tracked.id);
            if let Some(counts) = registry.peers.get_mut(&tracked.peer) {
                counts.unproven.remove(&tracked.id);
            }
        }
    }

    fn release(&self, id: u64) {
        if let Ok(mut registry) = self.registry.lock() {
            registry.remove(id);
        }
    }

    /// Looks at every connection once, closing those past a timeout.
    fn inspect(&self, now: Instant) {
        let Ok(mut registry) = self.registry.lock() else {
            return;
        };
        for entry in registry.entries.values_mut() {
            if let Some(verdict) = judge(entry, now, &self.config) {
                tracing::debug!(
                    connection = entry.tracked.id,
                    reason = verdict.reason(),
                    "closing a connection"
                );
                entry.tracked.close(verdict);
            }
        }
    }

    /// Runs the watchdog until `this` is dropped.
    pub(crate) async fn watch(this: Weak<Self>) {
        let Some(tick) = this.upgrade().map(|connections| connections.config.tick()) else {
            return;
        };
        let mut interval = tokio::time::interval(tick);
        interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            let now = interval.tick().await;
            match this.upgrade() {
                Some(connections) => connections.inspect(now),
                None => return,
            }
        }
    }
}

/// Whether a connection is past a timeout now; updates what the watchdog remembers of it.
fn judge(entry: &mut Entry, now: Instant, config: &ListenerConfig) -> Option<Verdict> {
    let tracked = &entry.tracked;
    if tracked.detached.load(Ordering::Acquire) || tracked.verdict() != Verdict::Open {
        return None;
    }
    let started = tracked.started.load(Ordering::Relaxed);
    let finished = tracked.finished.load(Ordering::Relaxed);
    let writes = tracked.writes.load(Ordering::Relaxed);
    let watch = &mut entry.watch;
    let busy = started != finished || started != watch.started || writes != watch.writes;
    watch.started = started;
    watch.writes = writes;
    if busy {
        watch.quiet_since = now;
    }
    if started == 0 {
        let waited = now.saturating_duration_since(tracked.accepted);
        return (waited >= config.head_timeout).then_some(Verdict::HeadTimeout);
    }
    let quiet = now.saturating_duration_since(watch.quiet_since);
    (quiet >= config.idle_timeout).then_some(Verdict::Idle)
}

/// A connection's place among the open ones, given back when dropped. It travels with the
/// socket, so an upgraded connection keeps its place for as long as its socket is open.
#[derive(Debug)]
pub(crate) struct Registration {
    tracked: Arc<Tracked>,
    connections: Weak<Connections>,
}

impl Registration {
    pub(crate) fn tracked(&self) -> &Arc<Tracked> {
        &self.tracked
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        if let Some(connections) = self.connections.upgrade() {
            connections.release(self.tracked.id);
        }
    }
}

/// A socket that counts its writes for the watchdog and holds its connection's place.
#[derive(Debug)]
pub(crate) struct Metered<T> {
    io: T,
    registration: Registration,
}

impl<T> Metered<T> {
    pub(crate) fn new(io: T, registration: Registration) -> Self {
        Self { io, registration }
    }

    fn wrote(&self, written: &Poll<std::io::Result<usize>>) {
        if matches!(written, Poll::Ready(Ok(count)) if *count > 0) {
            let writes = &self.registration.tracked.writes;
            // Only this socket writes the count, so a plain store suffices.
            writes.store(writes.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
        }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for Metered<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Metered<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let written = Pin::new(&mut self.io).poll_write(cx, buf);
        self.wrote(&written);
        written
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let written = Pin::new(&mut self.io).poll_write_vectored(cx, bufs);
        self.wrote(&written);
        written
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, Ipv6Addr};

    fn config(max: usize, per_peer: usize) -> ListenerConfig {
        ListenerConfig::default()
            .max_connections(max)
            .max_connections_per_peer(per_peer)
    }

    const A: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1));
    const B: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2));

    #[test]
    fn a_full_listener_closes_the_oldest_unproven_connection_to_make_room() {
        let connections = Connections::new(config(2, 10));
        let first = connections.admit(A).unwrap();
        let second = connections.admit(B).unwrap();
        second.tracked().request_started();
        let third = connections.admit(B).unwrap();
        assert_eq!(first.tracked().verdict(), Verdict::Evicted);
        assert_eq!(second.tracked().verdict(), Verdict::Open);
        assert_eq!(connections.open(), 2);
        // Both left are proven: there is no room to make.
        third.tracked().request_started();
        assert!(connections.admit(A).is_none());
        drop(second);
        assert!(connections.admit(A).is_some());
    }

    #[test]
    fn a_peer_at_its_cap_makes_room_among_its_own_connections_only() {
        let connections = Connections::new(config(10, 2));
        let other = connections.admit(B).unwrap();
        let first = connections.admit(A).unwrap();
        let _second = connections.admit(A).unwrap();
        let _third = connections.admit(A).unwrap();
        assert_eq!(first.tracked().verdict(), Verdict::Evicted);
        assert_eq!(other.tracked().verdict(), Verdict::Open);
    }

    #[test]
    fn ipv6_peers_are_counted_by_their_64_bit_prefix() {
        let one = IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 1, 2, 0, 0, 0, 1));
        let same_prefix = IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 1, 2, 9, 9, 9, 9));
        let other_prefix = IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 1, 3, 0, 0, 0, 1));
        assert_eq!(PeerKey::of(one), PeerKey::of(same_prefix));
        assert_ne!(PeerKey::of(one), PeerKey::of(other_prefix));
        let mapped = IpAddr::V6(Ipv4Addr::new(10, 0, 0, 1).to_ipv6_mapped());
        assert_eq!(PeerKey::of(mapped), PeerKey::of(A));
    }

    #[test]
    fn the_default_cap_stays_under_the_file_limit() {
        let max = ListenerConfig::default().max_connections;
        let limit = soft_file_limit().unwrap_or(ASSUMED_FILE_LIMIT);
        assert!(
            max < limit,
            "{max} connections under a limit of {limit} files"
        );
        assert!(max >= 1);
    }
}
