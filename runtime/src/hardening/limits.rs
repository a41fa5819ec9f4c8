//! How much a caller may send and how often: the body limit enforced while reading and a
//! per-subject token-bucket rate limit.
//!
//! # Why the rate limiter is our own
//!
//! tower's `RateLimit` is one bucket per service, not per caller, and it applies back-pressure
//! (requests wait in `poll_ready`) instead of refusing. A server must refuse one noisy subject
//! with `429` and `Retry-After` while every other subject is served, so the limiter here keys a
//! token bucket by authenticated subject, or by peer address for anonymous callers.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::body::Body;
use axum::body::HttpBody as _;
use axum::extract::{ConnectInfo, FromRequest, Request};
use bytes::{Bytes, BytesMut};
use http::Extensions;
use http_body_util::{BodyExt as _, LengthLimitError};
use tokio::time::Instant;

use super::principal::Principal;
use super::refusal::Refusal;

/// The body limit in force for a request, placed in its extensions by the hardening so a route
/// reads the body against it without knowing the configuration (a mount served directly is
/// handed it instead).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BodyLimit(pub usize);

/// Reads `body` to the end, refusing it the moment it passes `limit` bytes.
///
/// A `Content-Length` is only a claim, so the limit is enforced on the bytes as they arrive;
/// nothing over the limit is buffered. A body that arrives as one chunk (nearly every JSON-RPC
/// message) is returned as that chunk, without the chunk list and copy a general collector makes.
pub async fn read_body(mut body: Body, limit: usize) -> Result<Bytes, Refusal> {
    let mut read = ReadSoFar::default();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|error| body_error_refusal(&error))?;
        // Trailers carry nothing a JSON-RPC body needs.
        if let Ok(chunk) = frame.into_data() {
            read.push(chunk, limit)?;
        }
        // A body that says it has ended (one with a Content-Length, once all of it has come)
        // is not polled again: the poll that would only say so costs about as much as a read.
        if body.is_end_stream() {
            break;
        }
    }
    Ok(read.into_bytes())
}

/// The refusal a body error is owed: over a limit set further in, or cut short.
fn body_error_refusal(error: &(dyn std::error::Error + 'static)) -> Refusal {
    if is_length_limit(error) {
        Refusal::BodyTooLarge
    } else {
        // The peer stopped sending mid-body: nothing usable arrived.
        Refusal::InvalidRequest
    }
}

/// The bytes of a body read so far: the first chunk as it came, later ones joined to it.
#[derive(Default)]
enum ReadSoFar {
    #[default]
    Nothing,
    One(Bytes),
    Joined(BytesMut),
}

impl ReadSoFar {
    fn len(&self) -> usize {
        match self {
            Self::Nothing => 0,
            Self::One(chunk) => chunk.len(),
            Self::Joined(joined) => joined.len(),
        }
    }

    /// Adds `chunk`, or refuses it when the body would pass `limit`, before buffering it.
    #[inline]
    fn push(&mut self, chunk: Bytes, limit: usize) -> Result<(), Refusal> {
        if self.len().saturating_add(chunk.len()) > limit {
            return Err(Refusal::BodyTooLarge);
        }
        match self {
            Self::Nothing => *self = Self::One(chunk),
            _ => self.join(chunk),
        }
        Ok(())
    }

    /// A chunk after the first: rare for a JSON-RPC body, so kept out of the reading loop.
    #[cold]
    #[inline(never)]
    fn join(&mut self, chunk: Bytes) {
        match self {
            Self::Nothing => *self = Self::One(chunk),
            Self::One(first) => {
                let mut joined = BytesMut::with_capacity(first.len() + chunk.len());
                joined.extend_from_slice(first);
                joined.extend_from_slice(&chunk);
                *self = Self::Joined(joined);
            }
            Self::Joined(joined) => joined.extend_from_slice(&chunk),
        }
    }

    #[inline]
    fn into_bytes(self) -> Bytes {
        match self {
            Self::Nothing => Bytes::new(),
            Self::One(chunk) => chunk,
            Self::Joined(joined) => joined.freeze(),
        }
    }
}

/// axum wraps body errors, so the length-limit error may sit one or more sources deep.
fn is_length_limit(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut current = Some(error);
    while let Some(error) = current {
        if error.is::<LengthLimitError>() {
            return true;
        }
        current = error.source();
    }
    false
}

/// A request body read against the request's [`BodyLimit`]; the extractor a transport uses.
///
/// Without a `BodyLimit` extension (a router mounted without the hardening) the default limit
/// applies, so an unhardened route is still bounded.
#[derive(Debug, Clone)]
pub struct BoundedBody(pub Bytes);

impl<S: Send + Sync> FromRequest<S> for BoundedBody {
    type Rejection = Refusal;

    async fn from_request(request: Request, _state: &S) -> Result<Self, Refusal> {
        let limit = request
            .extensions()
            .get::<BodyLimit>()
            .map_or(super::DEFAULT_MAX_BODY_BYTES, |limit| limit.0);
        let declared = request
            .headers()
            .get(http::header::CONTENT_LENGTH)
            .and_then(|value| value.to_str().ok())
            .and_then(|text| text.parse::<u64>().ok());
        // A declared length over the limit is refused before a byte is read.
        let ceiling = u64::try_from(limit).unwrap_or(u64::MAX);
        if declared.is_some_and(|length| length > ceiling) {
            return Err(Refusal::BodyTooLarge);
        }
        read_body(request.into_body(), limit).await.map(Self)
    }
}

/// A token bucket's shape: `burst` requests at once, refilled at `per_second`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateLimit {
    /// Requests added back to the bucket per second.
    pub per_second: f64,
    /// Requests the bucket holds when full: the most sent at once.
    pub burst: u32,
}

impl RateLimit {
    /// A bucket of `burst` requests refilled at `per_second`.
    pub const fn new(per_second: f64, burst: u32) -> Self {
        Self { per_second, burst }
    }
}

/// Who a request is charged to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RateKey {
    Subject(Arc<str>),
    Peer(IpAddr),
}

impl RateKey {
    /// The authenticated subject when there is one, otherwise the peer address; `None` for an
    /// anonymous caller of a server run without `ConnectInfo`, who cannot be told apart from
    /// any other. Charging all of those to one shared bucket would turn a per-caller limit into
    /// a server-wide one, so they are not charged (and the limiter says so once).
    pub(crate) fn of(extensions: &Extensions) -> Option<Self> {
        let peer = extensions.get::<ConnectInfo<SocketAddr>>();
        Self::of_caller(extensions, peer.map(|info| info.0))
    }

    /// [`Self::of`] for a caller whose address `peer` is handed over beside the request.
    pub(crate) fn of_caller(extensions: &Extensions, peer: Option<SocketAddr>) -> Option<Self> {
        // A request from the server's own listener carries no extension but perhaps the peer's
        // address: only another extension can be a principal, so without one it is not looked
        // for.
        let connect_info = usize::from(extensions.get::<ConnectInfo<SocketAddr>>().is_some());
        if extensions.len() > connect_info
            && let Some(principal) = extensions.get::<Principal>()
        {
            return Some(Self::subject(principal));
        }
        peer.map(|peer| Self::Peer(peer.ip()))
    }

    pub(crate) fn subject(principal: &Principal) -> Self {
        Self::Subject(Arc::clone(&principal.subject))
    }

    /// Which of the table's recent lines this key is remembered in: a multiplicative hash of
    /// a word standing for the key (the address, or a subject's length and first bytes).
    fn recent_line(&self) -> usize {
        let word = match self {
            Self::Peer(IpAddr::V4(address)) => u64::from(address.to_bits()),
            Self::Peer(IpAddr::V6(address)) => {
                let bits = address.to_bits();
                (bits as u64) ^ ((bits >> 64) as u64)
            }
            Self::Subject(subject) => subject
                .bytes()
                .take(8)
                .fold(subject.len() as u64, |word, byte| {
                    word.rotate_left(8) ^ u64::from(byte)
                }),
        };
        let mixed = word.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        (mixed >> (u64::BITS - RECENT_LINE_BITS)) as usize
    }
}

/// Keys are hashed with std's keyed SipHash: the keys are chosen by callers (an IPv6 peer
/// has billions of addresses to pick from), so a hash whose key could be learnt would let
/// one caller make every lookup in the table scan it whole. SipHash costs per `write` call
/// and per eight bytes, and a key is hashed on every request, so each key is one write of
/// as few bytes as tell it apart, where the derived impl made three.
impl Hash for RateKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        match self {
            Self::Subject(subject) => subject.hash(state),
            Self::Peer(IpAddr::V4(address)) => state.write_u32(address.to_bits()),
            Self::Peer(IpAddr::V6(address)) => state.write_u128(address.to_bits()),
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    /// When `tokens` was last brought up to date, as [`RateLimiter::clock`] reads.
    updated: Seconds,
}

/// Seconds since a limiter was made: a plain number, so that reading the clock (the costly
/// part) happens before the lock is taken and refilling under the lock is arithmetic only.
/// A double resolves a few nanoseconds after a year, far finer than any refill needs.
type Seconds = f64;

/// The tracked keys and their buckets.
///
/// Every lookup through the keyed map costs a SipHash of the key and a probe, on every request.
/// A caller's requests tend to come in runs (a client on a keep-alive connection, a proxy
/// forwarding many callers), so each key also names one of a few `recent` lines holding the
/// slot it was last found in; a line whose slot still holds the key answers without the map.
/// A line is picked by an unkeyed hash, which a caller can make collide at will, but all a
/// collision costs is a miss that falls back to the keyed map: no lookup costs more than the
/// map's own.
#[derive(Debug)]
struct Table {
    slots: Vec<Slot>,
    /// Where each key's slot is.
    index: HashMap<RateKey, usize>,
    /// A slot each line last found; stale after slots move, so a slot is used only if it
    /// still holds the key looked up.
    recent: [usize; RECENT_LINES],
}

#[derive(Debug)]
struct Slot {
    key: RateKey,
    bucket: Bucket,
}

const RECENT_LINE_BITS: u32 = 6;
const RECENT_LINES: usize = 1 << RECENT_LINE_BITS;

impl Table {
    fn new() -> Self {
        Self {
            slots: Vec::new(),
            index: HashMap::new(),
            recent: [0; RECENT_LINES],
        }
    }

    fn len(&self) -> usize {
        self.slots.len()
    }

    /// The bucket of a tracked key.
    fn find(&mut self, key: &RateKey) -> Option<&mut Bucket> {
        let line = key.recent_line();
        // A line past the table (never: the line is masked to it) remembers nothing.
        let remembered = self.recent.get(line).copied().unwrap_or(usize::MAX);
        let at = if self
            .slots
            .get(remembered)
            .is_some_and(|slot| slot.key == *key)
        {
            remembered
        } else {
            self.find_indexed(key, line)?
        };
        self.slots.get_mut(at).map(|slot| &mut slot.bucket)
    }

    /// The keyed map's answer, remembered in `line`.
    #[inline(never)]
    fn find_indexed(&mut self, key: &RateKey, line: usize) -> Option<usize> {
        let at = *self.index.get(key)?;
        self.remember(line, at);
        Some(at)
    }

    /// Remembers that the key of `line` sits at `at`.
    fn remember(&mut self, line: usize, at: usize) {
        if let Some(slot) = self.recent.get_mut(line) {
            *slot = at;
        }
    }

    fn insert(&mut self, key: RateKey, bucket: Bucket) {
        let at = self.slots.len();
        self.remember(key.recent_line(), at);
        self.index.insert(key.clone(), at);
        self.slots.push(Slot { key, bucket });
    }

    /// Keeps the slots `keep` accepts, in order, and indexes them again.
    fn retain(&mut self, mut keep: impl FnMut(&mut Bucket) -> bool) {
        self.slots.retain_mut(|slot| keep(&mut slot.bucket));
        self.index.clear();
        let moved = self.slots.iter().enumerate();
        self.index
            .extend(moved.map(|(at, slot)| (slot.key.clone(), at)));
    }
}

/// The per-key buckets. The map is bounded: when it reaches `max_keys`, buckets that have
/// refilled completely (and so carry no state worth keeping) are dropped first; if none can be
/// dropped, new keys share one overflow bucket rather than growing memory without bound.
#[derive(Debug)]
pub(crate) struct RateLimiter {
    limit: RateLimit,
    max_keys: usize,
    started: Instant,
    table: Mutex<Table>,
    overflow: Mutex<Bucket>,
    warned_unattributed: AtomicBool,
}

impl RateLimiter {
    pub(crate) fn new(limit: RateLimit, max_keys: usize) -> Self {
        let full = Bucket {
            tokens: f64::from(limit.burst),
            updated: 0.0,
        };
        Self {
            limit,
            max_keys,
            started: Instant::now(),
            table: Mutex::new(Table::new()),
            overflow: Mutex::new(full),
            warned_unattributed: AtomicBool::new(false),
        }
    }

    /// Takes one token for `key`, or says how long until one is available.
    pub(crate) fn charge(&self, key: Option<RateKey>) -> Result<(), Refusal> {
        let Some(key) = key else {
            return self.pass_unattributed();
        };
        let now = self.clock();
        let mut table = lock(&self.table);
        // A known key (every request but a caller's first) costs one lookup.
        match table.find(&key) {
            Some(bucket) => self.take(bucket, now),
            None => self.charge_new_key(table, key, now),
        }
    }

    #[cold]
    #[inline(never)]
    fn pass_unattributed(&self) -> Result<(), Refusal> {
        if !self.warned_unattributed.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                "anonymous callers are not rate limited: serve with \
                 `into_make_service_with_connect_info::<SocketAddr>()` to limit them per peer"
            );
        }
        Ok(())
    }

    /// A caller's first request: a bucket of its own while the table has room (after dropping
    /// the buckets that have refilled, once it is full), the shared overflow bucket otherwise.
    #[cold]
    #[inline(never)]
    fn charge_new_key(
        &self,
        mut table: MutexGuard<'_, Table>,
        key: RateKey,
        now: Seconds,
    ) -> Result<(), Refusal> {
        if table.len() >= self.max_keys {
            self.evict_full(&mut table, now);
        }
        if table.len() >= self.max_keys {
            drop(table);
            return self.take(&mut lock(&self.overflow), now);
        }
        let mut bucket = Bucket {
            tokens: f64::from(self.limit.burst),
            updated: now,
        };
        let charged = self.take(&mut bucket, now);
        table.insert(key, bucket);
        charged
    }

    /// The time now, on the buckets' clock.
    fn clock(&self) -> Seconds {
        let now = Instant::now();
        now.saturating_duration_since(self.started).as_secs_f64()
    }

    fn refill(&self, bucket: &mut Bucket, now: Seconds) {
        let elapsed = (now - bucket.updated).max(0.0);
        let full = f64::from(self.limit.burst);
        bucket.tokens = (bucket.tokens + elapsed * self.limit.per_second).min(full);
        bucket.updated = now;
    }

    #[inline]
    fn take(&self, bucket: &mut Bucket, now: Seconds) -> Result<(), Refusal> {
        self.refill(bucket, now);
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            return Ok(());
        }
        Err(self.refusal(bucket.tokens))
    }

    /// How long until a bucket holding `tokens` (less than one) holds one.
    #[cold]
    #[inline(never)]
    fn refusal(&self, tokens: f64) -> Refusal {
        let wait = (1.0 - tokens) / self.limit.per_second;
        // Whole seconds, rounded up, at least one: Retry-After has one-second resolution.
        let retry_after_secs = Duration::try_from_secs_f64(wait)
            .map_or(u64::MAX, |wait| {
                wait.as_secs() + u64::from(wait.subsec_nanos() > 0)
            })
            .max(1);
        Refusal::RateLimited { retry_after_secs }
    }

    fn evict_full(&self, table: &mut Table, now: Seconds) {
        let full = f64::from(self.limit.burst);
        table.retain(|bucket| {
            self.refill(bucket, now);
            bucket.tokens < full
        });
    }

    #[cfg(test)]
    fn tracked_keys(&self) -> usize {
        self.table.lock().map_or(0, |table| table.len())
    }
}

/// A poisoned lock only means another request panicked mid-update; the bucket numbers are
/// still usable, so keep serving rather than failing every request after it.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::Router;
    use axum::response::Response;
    use axum::routing::post;
    use http::StatusCode;
    use tower::ServiceExt as _;

    fn limiter(per_second: f64, burst: u32) -> RateLimiter {
        RateLimiter::new(RateLimit::new(per_second, burst), 1000)
    }

    fn subject(name: &str) -> Option<RateKey> {
        Some(RateKey::Subject(name.into()))
    }

    #[tokio::test(start_paused = true)]
    async fn a_subject_past_its_burst_is_refused_with_a_retry_after() {
        let limiter = limiter(0.5, 2);
        assert_eq!(limiter.charge(subject("a")), Ok(()));
        assert_eq!(limiter.charge(subject("a")), Ok(()));
        assert_eq!(
            limiter.charge(subject("a")),
            Err(Refusal::RateLimited {
                retry_after_secs: 2
            })
        );
    }

    #[tokio::test(start_paused = true)]
    async fn one_subjects_exhaustion_does_not_limit_another() {
        let limiter = limiter(1.0, 1);
        assert_eq!(limiter.charge(subject("a")), Ok(()));
        assert!(limiter.charge(subject("a")).is_err());
        assert_eq!(limiter.charge(subject("b")), Ok(()));
        let peer = RateKey::Peer(IpAddr::from([127, 0, 0, 1]));
        assert_eq!(limiter.charge(Some(peer)), Ok(()));
    }

    #[tokio::test(start_paused = true)]
    async fn a_bucket_refills_with_time() {
        let limiter = limiter(2.0, 1);
        assert_eq!(limiter.charge(subject("a")), Ok(()));
        assert!(limiter.charge(subject("a")).is_err());
        tokio::time::advance(Duration::from_millis(500)).await;
        assert_eq!(limiter.charge(subject("a")), Ok(()));
    }

    #[tokio::test(start_paused = true)]
    async fn an_idle_bucket_refills_to_its_burst_and_no_further() {
        let limiter = limiter(1.0, 2);
        assert_eq!(limiter.charge(subject("a")), Ok(()));
        assert_eq!(limiter.charge(subject("a")), Ok(()));
        tokio::time::advance(Duration::from_secs(100)).await;
        assert_eq!(limiter.charge(subject("a")), Ok(()));
        assert_eq!(limiter.charge(subject("a")), Ok(()));
        assert_eq!(
            limiter.charge(subject("a")),
            Err(Refusal::RateLimited {
                retry_after_secs: 1
            })
        );
    }

    #[tokio::test(start_paused = true)]
    async fn peers_are_charged_by_their_whole_address_in_either_family() {
        let limiter = limiter(1.0, 1);
        let v4 = IpAddr::from([127, 0, 0, 1]);
        let v6 = IpAddr::from(std::net::Ipv6Addr::LOCALHOST);
        let next_door = IpAddr::from([127, 0, 0, 2]);
        for peer in [v4, v6, next_door] {
            assert_eq!(limiter.charge(Some(RateKey::Peer(peer))), Ok(()), "{peer}");
        }
        for peer in [v4, v6, next_door] {
            assert!(limiter.charge(Some(RateKey::Peer(peer))).is_err(), "{peer}");
        }
        assert_eq!(limiter.tracked_keys(), 3);
    }

    #[tokio::test(start_paused = true)]
    async fn tracked_keys_stay_bounded_and_refilled_buckets_are_dropped_first() {
        let limiter = RateLimiter::new(RateLimit::new(10.0, 1), 2);
        assert_eq!(limiter.charge(subject("a")), Ok(()));
        assert_eq!(limiter.charge(subject("b")), Ok(()));
        // Both buckets are empty: a third key goes to the shared overflow bucket.
        assert_eq!(limiter.charge(subject("c")), Ok(()));
        assert!(limiter.charge(subject("d")).is_err());
        assert_eq!(limiter.tracked_keys(), 2);
        tokio::time::advance(Duration::from_secs(1)).await;
        assert_eq!(limiter.charge(subject("e")), Ok(()));
        assert_eq!(limiter.tracked_keys(), 1);
    }

    fn peer(address: [u8; 4]) -> Option<RateKey> {
        Some(RateKey::Peer(IpAddr::from(address)))
    }

    #[tokio::test(start_paused = true)]
    async fn keys_sharing_a_recent_line_keep_their_own_buckets() {
        let first = [10, 0, 0, 1];
        let line = |key: Option<RateKey>| key.map(|key| key.recent_line());
        let second = (2..=255)
            .map(|last| [10, 0, 0, last])
            .find(|address| line(peer(*address)) == line(peer(first)))
            .unwrap();
        let limiter = limiter(1.0, 1);
        for address in [first, second] {
            assert_eq!(limiter.charge(peer(address)), Ok(()), "{address:?}");
        }
        // Each lookup finds the line naming the other key's slot.
        for address in [first, second, first, second] {
            assert!(limiter.charge(peer(address)).is_err(), "{address:?}");
        }
        assert_eq!(limiter.tracked_keys(), 2);
    }

    #[tokio::test(start_paused = true)]
    async fn buckets_moved_by_an_eviction_are_still_found_under_their_own_keys() {
        let limiter = RateLimiter::new(RateLimit::new(1.0, 2), 3);
        assert_eq!(limiter.charge(subject("a")), Ok(()));
        tokio::time::advance(Duration::from_secs(1)).await;
        for key in ["b", "b", "c"] {
            assert_eq!(limiter.charge(subject(key)), Ok(()), "{key}");
        }
        // The table is full: "a" has refilled and is dropped, "b" and "c" move down a slot.
        assert_eq!(limiter.charge(subject("d")), Ok(()));
        assert_eq!(limiter.tracked_keys(), 3);
        assert!(limiter.charge(subject("b")).is_err());
        assert_eq!(limiter.charge(subject("c")), Ok(()));
        assert!(limiter.charge(subject("c")).is_err());
        assert_eq!(limiter.charge(subject("d")), Ok(()));
        assert!(limiter.charge(subject("d")).is_err());
        // No bucket is full now: "a" comes back to the overflow bucket, which is.
        assert_eq!(limiter.charge(subject("a")), Ok(()));
        assert_eq!(limiter.tracked_keys(), 3);
    }

    #[test]
    fn a_principal_is_charged_as_its_subject_wherever_it_sits_among_the_extensions() {
        let peer = ConnectInfo(SocketAddr::from(([10, 0, 0, 9], 5555)));
        let principal = Principal::new("alice", []);
        let subject = Some(RateKey::Subject("alice".into()));
        let mut only_peer = Extensions::new();
        only_peer.insert(peer);
        assert_eq!(RateKey::of(&only_peer), Some(RateKey::Peer(peer.0.ip())));
        let mut peer_and_principal = only_peer.clone();
        peer_and_principal.insert(principal.clone());
        assert_eq!(RateKey::of(&peer_and_principal), subject);
        let mut only_principal = Extensions::new();
        only_principal.insert(principal.clone());
        assert_eq!(RateKey::of(&only_principal), subject);
        let mut principal_among_others = only_principal.clone();
        principal_among_others.insert(BodyLimit(1));
        principal_among_others.insert(peer);
        assert_eq!(RateKey::of(&principal_among_others), subject);
        let mut peer_among_others = only_peer;
        peer_among_others.insert(BodyLimit(1));
        assert_eq!(
            RateKey::of(&peer_among_others),
            Some(RateKey::Peer(peer.0.ip()))
        );
        assert_eq!(RateKey::of(&Extensions::new()), None);
    }

    #[tokio::test(start_paused = true)]
    async fn callers_that_cannot_be_told_apart_are_not_charged_to_one_shared_bucket() {
        let limiter = limiter(1.0, 1);
        for _ in 0..10 {
            assert_eq!(limiter.charge(None), Ok(()));
        }
        assert_eq!(limiter.tracked_keys(), 0);
    }

    async fn echo(BoundedBody(body): BoundedBody) -> Bytes {
        body
    }

    async fn post_body(limit: usize, body: Body) -> Response {
        let router = Router::new()
            .route("/mcp", post(echo))
            .layer(axum::middleware::from_fn(
                move |mut request: Request, next: axum::middleware::Next| {
                    request.extensions_mut().insert(BodyLimit(limit));
                    next.run(request)
                },
            ));
        let request = Request::post("/mcp").body(body).unwrap();
        router.oneshot(request).await.unwrap()
    }

    #[tokio::test]
    async fn a_body_within_the_limit_is_read_whole() {
        let response = post_body(8, Body::from("12345678")).await;
        assert_eq!(response.status(), StatusCode::OK);
    }

    #[tokio::test]
    async fn a_streamed_body_past_the_limit_is_refused_with_413_while_reading() {
        // No Content-Length: the limit can only be found by counting bytes as they arrive.
        let chunks = futures::stream::iter(
            std::iter::repeat_with(|| Ok::<_, std::io::Error>(Bytes::from_static(b"xxxx"))).take(4),
        );
        let response = post_body(8, Body::from_stream(chunks)).await;
        assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);
        let body: serde_json::Value = serde_json::from_slice(
            &super::super::security_headers::body_bytes(response.into_body()).await,
        )
        .unwrap();
        assert_eq!(body["error"]["code"], Refusal::BodyTooLarge.code());
    }

    fn chunked(chunks: &[&'static str]) -> Body {
        let chunks: Vec<Result<Bytes, std::io::Error>> = chunks
            .iter()
            .map(|chunk| Ok(Bytes::from_static(chunk.as_bytes())))
            .collect();
        Body::from_stream(futures::stream::iter(chunks))
    }

    #[tokio::test]
    async fn a_body_in_several_chunks_is_read_joined_in_order() {
        let read = read_body(chunked(&["{\"a\":", "", "1", "}"]), 64).await;
        assert_eq!(read.unwrap(), Bytes::from_static(b"{\"a\":1}"));
        assert_eq!(read_body(chunked(&[]), 64).await.unwrap(), Bytes::new());
    }

    #[tokio::test]
    async fn a_body_of_exactly_the_limit_is_read_and_one_byte_more_is_refused() {
        assert_eq!(
            read_body(chunked(&["1234", "5678"]), 8)
                .await
                .unwrap()
                .len(),
            8
        );
        assert_eq!(read_body(chunked(&["12345678"]), 8).await.unwrap().len(), 8);
        assert_eq!(
            read_body(chunked(&["1234", "56789"]), 8).await,
            Err(Refusal::BodyTooLarge)
        );
        assert_eq!(
            read_body(chunked(&["123456789"]), 8).await,
            Err(Refusal::BodyTooLarge)
        );
    }

    /// One chunk, then an error for any further poll, while saying it has ended after the chunk.
    struct EndsAfterOneChunk(Option<Bytes>);

    impl axum::body::HttpBody for EndsAfterOneChunk {
        type Data = Bytes;
        type Error = std::io::Error;

        fn poll_frame(
            mut self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<Option<Result<hyper::body::Frame<Bytes>, std::io::Error>>> {
            std::task::Poll::Ready(Some(match self.0.take() {
                Some(chunk) => Ok(hyper::body::Frame::data(chunk)),
                None => Err(std::io::Error::other("polled past its end")),
            }))
        }

        fn is_end_stream(&self) -> bool {
            self.0.is_none()
        }
    }

    #[tokio::test]
    async fn a_body_that_says_it_has_ended_is_not_polled_again() {
        let body = Body::new(EndsAfterOneChunk(Some(Bytes::from_static(b"{}"))));
        assert_eq!(read_body(body, 64).await, Ok(Bytes::from_static(b"{}")));
    }

    #[tokio::test]
    async fn a_body_cut_off_mid_stream_is_an_invalid_request() {
        let chunks = futures::stream::iter([
            Ok(Bytes::from_static(b"{\"a\"")),
            Err(std::io::Error::from(std::io::ErrorKind::ConnectionReset)),
        ]);
        assert_eq!(
            read_body(Body::from_stream(chunks), 64).await,
            Err(Refusal::InvalidRequest)
        );
    }

    #[tokio::test]
    async fn a_declared_length_past_the_limit_is_refused_before_reading() {
        let router = Router::new().route("/mcp", post(echo));
        let request = Request::post("/mcp")
            .header(http::header::CONTENT_LENGTH, "999999999")
            .body(Body::empty())
            .unwrap();
        let response = router.oneshot(request).await.unwrap();
        assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);
    }
}
