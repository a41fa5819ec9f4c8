//! The seam between replicas sharing one deployment: a [`Relay`] carries a message from this
//! replica to another one (or to all others) and hands each replica the messages addressed to
//! it, queued per subscriber in a bounded [`RelayReceiver`]. Each replica names itself with a
//! [`ReplicaTag`]; server→client request ids carry it (`"{tag}-{n}"`), so an answer posted to
//! any replica finds the one awaiting it, and a cancellation for a request running elsewhere
//! is relayed to all. An in-memory relay connects replicas in one process (tests); a network
//! relay (e.g. Redis pub/sub) implements the same trait. Without a relay nothing here runs.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Once, Weak};

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::jsonrpc::{RequestId, Response};
use crate::peer::Conversation;
use crate::session::SessionId;
use crate::store::{StoreError, StoreFuture, log_late_failure};

/// How many messages a subscriber's queue holds; past it messages are dropped and counted
/// ([`RelayLagged`]), so a stalled subscriber never grows memory without bound.
pub const RELAY_QUEUE: usize = 1024;

/// This replica's name among the replicas of a deployment: short, random per process, of
/// letters and digits only (so it can end a channel name and begin a request id).
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct ReplicaTag(Arc<str>);

impl ReplicaTag {
    /// A fresh random tag (12 hex digits).
    pub fn random() -> Self {
        let mut text = uuid::Uuid::new_v4().simple().to_string();
        text.truncate(12);
        Self(Arc::from(text))
    }

    /// The tag `text` names, if it is one (1 to 64 ASCII letters and digits).
    pub fn parse(text: &str) -> Option<Self> {
        let valid = !text.is_empty()
            && text.len() <= 64
            && text.bytes().all(|byte| byte.is_ascii_alphanumeric());
        valid.then(|| Self(Arc::from(text)))
    }

    /// The tag as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The tag a server→client request id names (`"{tag}-{n}"`), if it names one.
    pub fn of_request(id: &RequestId) -> Option<&str> {
        let RequestId::String(text) = id else {
            return None;
        };
        let (tag, counter) = text.split_once('-')?;
        let well_formed = !tag.is_empty()
            && tag.bytes().all(|byte| byte.is_ascii_alphanumeric())
            && !counter.is_empty()
            && counter.bytes().all(|byte| byte.is_ascii_digit());
        well_formed.then_some(tag)
    }
}

impl fmt::Debug for ReplicaTag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ReplicaTag({})", self.0)
    }
}

impl fmt::Display for ReplicaTag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// One message between replicas: who sent it, what it is about (each subscriber listens to
/// one topic) and its body, opaque to the relay.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RelayMessage {
    /// The sending replica.
    pub from: ReplicaTag,
    /// What the message is about (e.g. `streamable-http`, `mcp-broadcast`).
    pub topic: Arc<str>,
    /// The message itself.
    pub body: Bytes,
}

impl RelayMessage {
    /// The message as one frame: `from`, a newline, `topic`, a newline, the body.
    pub fn encode(&self) -> Bytes {
        let mut frame =
            Vec::with_capacity(self.from.as_str().len() + self.topic.len() + 2 + self.body.len());
        frame.extend_from_slice(self.from.as_str().as_bytes());
        frame.push(b'\n');
        frame.extend_from_slice(self.topic.as_bytes());
        frame.push(b'\n');
        frame.extend_from_slice(&self.body);
        Bytes::from(frame)
    }

    /// The message a frame of [`Self::encode`] holds; `None` for anything else.
    pub fn decode(frame: &[u8]) -> Option<Self> {
        let mut parts = frame.splitn(3, |byte| *byte == b'\n');
        let from = ReplicaTag::parse(std::str::from_utf8(parts.next()?).ok()?)?;
        let topic = std::str::from_utf8(parts.next()?).ok()?;
        let body = Bytes::copy_from_slice(parts.next()?);
        Some(Self {
            from,
            topic: Arc::from(topic),
            body,
        })
    }
}

/// Messages were dropped because the subscriber's queue was full: this many since the last
/// report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the relay queue was full: {0} messages were dropped")]
pub struct RelayLagged(pub u64);

/// Carries messages between the replicas of one deployment.
pub trait Relay: Send + Sync + 'static {
    /// This replica's tag.
    fn tag(&self) -> &ReplicaTag;
    /// Sends `body` on `topic` to the replica `to`, or to every other replica (`None`). `Ok`
    /// says the relay took it, not that anyone received it.
    fn publish<'a>(
        &'a self,
        to: Option<&'a ReplicaTag>,
        topic: &'a str,
        body: Bytes,
    ) -> StoreFuture<'a, Result<(), StoreError>>;
    /// A queue of the messages on `topic` addressed to this replica or to all (never this
    /// replica's own).
    fn subscribe(&self, topic: &str) -> RelayReceiver;
}

/// One subscriber's bounded queue of relayed messages.
#[derive(Debug)]
pub struct RelayReceiver {
    messages: mpsc::Receiver<RelayMessage>,
    lost: Arc<AtomicU64>,
}

impl RelayReceiver {
    /// The next message; a [`RelayLagged`] first when messages were dropped since the last
    /// call; `None` once the relay is gone.
    pub async fn recv(&mut self) -> Option<Result<RelayMessage, RelayLagged>> {
        let lost = self.lost.swap(0, Ordering::AcqRel);
        if lost > 0 {
            return Some(Err(RelayLagged(lost)));
        }
        self.messages.recv().await.map(Ok)
    }
}

struct Subscriber {
    topic: Arc<str>,
    queue: mpsc::Sender<RelayMessage>,
    lost: Arc<AtomicU64>,
}

/// A replica's end of a relay: hands each received message to the subscribers of its topic,
/// each through its own bounded queue. A relay implementation feeds it; one place for the
/// fan-out and the bound, whatever carries the messages.
pub struct RelayInbox {
    tag: ReplicaTag,
    subscribers: Mutex<Vec<Subscriber>>,
}

impl fmt::Debug for RelayInbox {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RelayInbox")
            .field("tag", &self.tag)
            .finish_non_exhaustive()
    }
}

impl RelayInbox {
    /// The inbox of the replica tagged `tag`.
    pub fn new(tag: ReplicaTag) -> Self {
        Self {
            tag,
            subscribers: Mutex::new(Vec::new()),
        }
    }

    /// The replica's tag.
    pub fn tag(&self) -> &ReplicaTag {
        &self.tag
    }

    /// A new subscriber to `topic`.
    pub fn subscribe(&self, topic: &str) -> RelayReceiver {
        let (queue, messages) = mpsc::channel(RELAY_QUEUE);
        let lost = Arc::new(AtomicU64::new(0));
        if let Ok(mut subscribers) = self.subscribers.lock() {
            subscribers.push(Subscriber {
                topic: Arc::from(topic),
                queue,
                lost: Arc::clone(&lost),
            });
        }
        RelayReceiver { messages, lost }
    }

    /// Hands `message` to its topic's subscribers; this replica's own messages (a broadcast
    /// comes back to its sender) are dropped. A full queue drops the message for that
    /// subscriber, counted and logged; gone subscribers are forgotten.
    pub fn deliver(&self, message: &RelayMessage) {
        if message.from == self.tag {
            return;
        }
        let Ok(mut subscribers) = self.subscribers.lock() else {
            return;
        };
        subscribers.retain(|subscriber| !subscriber.queue.is_closed());
        for subscriber in subscribers
            .iter()
            .filter(|subscriber| subscriber.topic == message.topic)
        {
            if let Err(mpsc::error::TrySendError::Full(_)) =
                subscriber.queue.try_send(message.clone())
            {
                subscriber.lost.fetch_add(1, Ordering::AcqRel);
                tracing::warn!(topic = %message.topic, "a relay queue is full: message dropped");
            }
        }
    }
}

/// Replicas in one process connected to each other (tests, or several servers in one
/// binary): [`MemoryRelay::join`] adds one.
#[cfg(any(test, feature = "test-support"))]
#[doc(hidden)]
#[derive(Debug, Default)]
pub struct MemoryRelayHub {
    replicas: Mutex<Vec<Weak<RelayInbox>>>,
}

#[cfg(any(test, feature = "test-support"))]
impl MemoryRelayHub {
    /// A hub no replica has joined yet.
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }
}

/// One replica's relay through a [`MemoryRelayHub`].
#[cfg(any(test, feature = "test-support"))]
#[doc(hidden)]
#[derive(Debug)]
pub struct MemoryRelay {
    hub: Arc<MemoryRelayHub>,
    inbox: Arc<RelayInbox>,
}

#[cfg(any(test, feature = "test-support"))]
impl MemoryRelay {
    /// A new replica on `hub`, with a fresh tag.
    pub fn join(hub: &Arc<MemoryRelayHub>) -> Self {
        let inbox = Arc::new(RelayInbox::new(ReplicaTag::random()));
        if let Ok(mut replicas) = hub.replicas.lock() {
            replicas.push(Arc::downgrade(&inbox));
        }
        Self {
            hub: Arc::clone(hub),
            inbox,
        }
    }
}

#[cfg(any(test, feature = "test-support"))]
impl Relay for MemoryRelay {
    fn tag(&self) -> &ReplicaTag {
        self.inbox.tag()
    }

    fn publish<'a>(
        &'a self,
        to: Option<&'a ReplicaTag>,
        topic: &'a str,
        body: Bytes,
    ) -> StoreFuture<'a, Result<(), StoreError>> {
        let message = RelayMessage {
            from: self.inbox.tag().clone(),
            topic: Arc::from(topic),
            body,
        };
        let replicas: Vec<Arc<RelayInbox>> = self
            .hub
            .replicas
            .lock()
            .map(|replicas| replicas.iter().filter_map(Weak::upgrade).collect())
            .unwrap_or_default();
        replicas
            .iter()
            .filter(|inbox| to.is_none_or(|to| inbox.tag() == to))
            .for_each(|inbox| inbox.deliver(&message));
        StoreFuture::ready(Ok(()))
    }

    fn subscribe(&self, topic: &str) -> RelayReceiver {
        self.inbox.subscribe(topic)
    }
}

/// The topic of the Streamable HTTP transport's messages.
const HTTP_TOPIC: &str = "streamable-http";

/// What one replica's transport relays to another: an answer to a server→client request, or
/// a cancellation, each within the session the client proved it holds.
#[derive(Serialize, Deserialize)]
struct Routed {
    session: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    answer: Option<Box<RawValue>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    cancel: Option<serde_json::Value>,
}

/// The conversations a replica holds per session, swept of ended ones as the map doubles.
#[derive(Default)]
struct Held {
    sessions: HashMap<SessionId, Vec<Weak<Conversation>>>,
    sweep_at: usize,
}

impl Held {
    /// Forgets the sessions none of whose conversations lives any more, once the map has
    /// doubled since the last sweep (so each registration costs a constant on average).
    fn sweep(&mut self) {
        if self.sessions.len() < self.sweep_at {
            return;
        }
        self.sessions.retain(|_, list| {
            list.retain(|weak| weak.strong_count() > 0);
            !list.is_empty()
        });
        self.sweep_at = (self.sessions.len() * 2).max(64);
    }
}

/// A transport's link to the other replicas: it numbers server→client requests with this
/// replica's tag, knows which conversations serve which session here, forwards answers and
/// cancellations it cannot use, and applies those the others forward.
pub(crate) struct RelayLink {
    relay: Arc<dyn Relay>,
    next_id: AtomicU64,
    /// The conversations this replica holds per session (a session rebuilt here has a new
    /// one; the older may still await answers).
    conversations: Mutex<Held>,
    listening: Once,
    shutdown: CancellationToken,
}

impl fmt::Debug for RelayLink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RelayLink")
            .field("tag", self.relay.tag())
            .finish_non_exhaustive()
    }
}

impl RelayLink {
    pub(crate) fn new(relay: Arc<dyn Relay>, shutdown: CancellationToken) -> Arc<Self> {
        Arc::new(Self {
            relay,
            next_id: AtomicU64::new(0),
            conversations: Mutex::new(Held::default()),
            listening: Once::new(),
            shutdown,
        })
    }

    /// The next server→client request id: this replica's tag and a counter.
    pub(crate) fn next_id(&self) -> RequestId {
        let n = self.next_id.fetch_add(1, Ordering::Relaxed);
        RequestId::String(Arc::from(format!("{}-{n}", self.relay.tag())))
    }

    /// Notes that `conversation` serves `session` here (so relayed messages find it), and
    /// starts listening to the other replicas on first use.
    pub(crate) fn register(
        self: &Arc<Self>,
        session: &SessionId,
        conversation: &Arc<Conversation>,
    ) {
        self.listening.call_once(|| self.listen());
        conversation.route_through(self);
        let Ok(mut held) = self.conversations.lock() else {
            return;
        };
        held.sweep();
        let held = held.sessions.entry(session.clone()).or_default();
        if held
            .iter()
            .any(|weak| std::ptr::eq(weak.as_ptr(), Arc::as_ptr(conversation)))
        {
            return;
        }
        held.retain(|weak| weak.strong_count() > 0);
        held.push(Arc::downgrade(conversation));
    }

    /// Forwards `response` to the replica its id names, when that is another one; `false`
    /// when the answer is this replica's to take.
    pub(crate) fn forward_answer(&self, session: &SessionId, response: &Response) -> bool {
        let Some(tag) = response.id().and_then(ReplicaTag::of_request) else {
            return false;
        };
        if tag == self.relay.tag().as_str() {
            return false;
        }
        let (Some(to), Ok(answer)) = (
            ReplicaTag::parse(tag),
            RawValue::from_string(String::from_utf8_lossy(&response.to_bytes()).into_owned()),
        ) else {
            return false;
        };
        self.send(
            Some(to),
            &Routed {
                session: session.as_str().to_owned(),
                answer: Some(answer),
                cancel: None,
            },
        );
        true
    }

    /// Tells every other replica to cancel the request `id` of `session` (it is not running
    /// here).
    pub(crate) fn broadcast_cancel(&self, session: &SessionId, id: &RequestId) {
        let id = match id {
            RequestId::Number(number) => serde_json::Value::from(*number),
            RequestId::String(text) => serde_json::Value::from(&**text),
        };
        self.send(
            None,
            &Routed {
                session: session.as_str().to_owned(),
                answer: None,
                cancel: Some(id),
            },
        );
    }

    fn send(&self, to: Option<ReplicaTag>, routed: &Routed) {
        let Ok(body) = serde_json::to_vec(routed) else {
            return;
        };
        let relay = Arc::clone(&self.relay);
        let publish = async move {
            relay
                .publish(to.as_ref(), HTTP_TOPIC, Bytes::from(body))
                .await
        };
        if let Some(Err(error)) = StoreFuture::boxed(publish).now_or_detach(log_late_failure) {
            tracing::warn!(%error, "a message for another replica was not relayed");
        }
    }

    /// Applies the messages the other replicas relay here, until shutdown.
    fn listen(self: &Arc<Self>) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            tracing::warn!("no tokio runtime to listen to the other replicas on");
            return;
        };
        let mut receiver = self.relay.subscribe(HTTP_TOPIC);
        let (link, shutdown) = (Arc::downgrade(self), self.shutdown.clone());
        runtime.spawn(async move {
            loop {
                let received = tokio::select! {
                    () = shutdown.cancelled() => break,
                    received = receiver.recv() => received,
                };
                let Some(link) = link.upgrade() else { break };
                match received {
                    Some(Ok(message)) => link.apply(&message.body),
                    Some(Err(lagged)) => tracing::warn!(%lagged, "relayed messages were lost"),
                    None => break,
                }
            }
        });
    }

    fn apply(&self, body: &[u8]) {
        let Ok(routed) = serde_json::from_slice::<Routed>(body) else {
            tracing::debug!("dropped a relayed message that is not one");
            return;
        };
        let Ok(session) = routed.session.parse::<SessionId>() else {
            return;
        };
        let conversations: Vec<Arc<Conversation>> = self
            .conversations
            .lock()
            .ok()
            .and_then(|held| {
                held.sessions
                    .get(&session)
                    .map(|list| list.iter().filter_map(Weak::upgrade).collect())
            })
            .unwrap_or_default();
        if let Some(answer) = routed.answer {
            let Ok(crate::jsonrpc::Message::Response(response)) =
                crate::jsonrpc::decode_message(answer.get().as_bytes(), &Default::default())
            else {
                return;
            };
            let delivered = conversations
                .iter()
                .any(|conversation| conversation.answer(response.clone()));
            if !delivered {
                tracing::debug!("dropped a relayed answer no call here awaits");
            }
        }
        if let Some(id) = routed.cancel.as_ref().and_then(RequestId::from_json) {
            conversations.iter().for_each(|conversation| {
                conversation.cancel_inbound(&id);
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_decodes_to_the_message_it_encodes() {
        let message = RelayMessage {
            from: ReplicaTag::random(),
            topic: Arc::from("t"),
            body: Bytes::from_static(b"with\nnewlines\n"),
        };
        assert_eq!(RelayMessage::decode(&message.encode()), Some(message));
        assert_eq!(RelayMessage::decode(b"no tag here"), None);
        assert_eq!(RelayMessage::decode(b"bad tag!\nt\nbody"), None);
    }

    #[test]
    fn only_a_tag_and_a_counter_name_a_replica_in_a_request_id() {
        let tagged = RequestId::String(Arc::from("a1b2-7"));
        assert_eq!(ReplicaTag::of_request(&tagged), Some("a1b2"));
        for untagged in ["a1b2", "-7", "a1b2-", "a-b-7", "a1b2-x"] {
            let id = RequestId::String(Arc::from(untagged));
            assert_eq!(ReplicaTag::of_request(&id), None, "{untagged}");
        }
        assert_eq!(ReplicaTag::of_request(&RequestId::Number(7)), None);
    }

    #[tokio::test]
    async fn a_replica_hears_what_is_sent_to_it_or_to_all_but_never_its_own() {
        let hub = MemoryRelayHub::new();
        let (a, b) = (MemoryRelay::join(&hub), MemoryRelay::join(&hub));
        let (mut on_a, mut on_b) = (a.subscribe("t"), b.subscribe("t"));
        let sent = a.publish(None, "t", Bytes::from_static(b"all")).await;
        assert!(sent.is_ok());
        let sent = a
            .publish(Some(b.tag()), "t", Bytes::from_static(b"b"))
            .await;
        assert!(sent.is_ok());
        let heard: Vec<Bytes> = [on_b.recv().await, on_b.recv().await]
            .into_iter()
            .flatten()
            .flatten()
            .map(|message| message.body)
            .collect();
        assert_eq!(
            heard,
            [Bytes::from_static(b"all"), Bytes::from_static(b"b")]
        );
        let own = tokio::time::timeout(std::time::Duration::from_millis(50), on_a.recv()).await;
        assert!(own.is_err(), "the sender heard itself");
    }
}
