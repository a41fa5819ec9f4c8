//! The relay between replicas on Redis pub/sub: one channel per replica tag
//! (`{prefix}relay:{tag}`) and one every replica hears (`{prefix}relay-all`). A dedicated
//! subscriber connection feeds the runtime's [`RelayInbox`] (one bounded queue per subscriber);
//! it pings Redis periodically and, when Redis is gone or stops answering, connects and
//! subscribes again by itself. Publishing goes through the connection manager the stores use,
//! each command bounded by [`RedisConfig::timeout`]. Pub/sub keeps nothing: a message sent
//! while a replica is not subscribed is lost, which the callers accept (an answer then times
//! out, as one lost on the network would).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt as _;
use protocols_runtime::relay::{Relay, RelayInbox, RelayMessage, RelayReceiver, ReplicaTag};
use protocols_runtime::store::{StoreError, StoreFuture};
use redis::aio::{ConnectionManager, PubSub};

use crate::config::RedisConfig;
use crate::connection::{ConnectError, FIRST_RECONNECT_DELAY, ask, bounded, manager};

/// How often the subscriber connection checks that Redis still answers it.
const PING_EVERY: Duration = Duration::from_secs(1);

/// A replica's relay on Redis pub/sub. Dropping it stops its subscriber.
pub struct RedisRelay {
    inbox: Arc<RelayInbox>,
    publisher: ConnectionManager,
    /// `{prefix}relay:`, followed by a replica's tag.
    replica_prefix: String,
    /// `{prefix}relay-all`.
    broadcast: String,
    timeout: Duration,
    subscriber: tokio::task::AbortHandle,
}

impl fmt::Debug for RedisRelay {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisRelay")
            .field("tag", self.inbox.tag())
            .field("broadcast", &self.broadcast)
            .finish_non_exhaustive()
    }
}

impl RedisRelay {
    /// Connects to the Redis `config` names under a fresh [`ReplicaTag`] and subscribes to
    /// this replica's channel and the broadcast one; fails, never hangs, when Redis cannot be
    /// reached within the configured timeout.
    pub async fn connect(config: RedisConfig) -> Result<Self, ConnectError> {
        let (client, publisher) = manager(&config).await?;
        let tag = ReplicaTag::random();
        let replica_prefix = format!("{}relay:", config.prefix);
        let channels = [
            format!("{replica_prefix}{tag}"),
            format!("{}relay-all", config.prefix),
        ];
        let pubsub = subscribed(&client, &channels, config.timeout)
            .await
            .map_err(|error| match error {
                Subscribe::TimedOut => ConnectError::TimedOut(config.timeout),
                Subscribe::Failed(error) => ConnectError::Refused(error),
            })?;
        let inbox = Arc::new(RelayInbox::new(tag));
        let [_, broadcast] = channels.clone();
        let subscriber = tokio::spawn(subscribe_forever(
            client,
            channels,
            pubsub,
            Arc::clone(&inbox),
            config.clone(),
        ))
        .abort_handle();
        Ok(Self {
            inbox,
            publisher,
            replica_prefix,
            broadcast,
            timeout: config.timeout,
            subscriber,
        })
    }
}

impl Drop for RedisRelay {
    fn drop(&mut self) {
        self.subscriber.abort();
    }
}

impl Relay for RedisRelay {
    fn tag(&self) -> &ReplicaTag {
        self.inbox.tag()
    }

    fn publish<'a>(
        &'a self,
        to: Option<&'a ReplicaTag>,
        topic: &'a str,
        body: Bytes,
    ) -> StoreFuture<'a, Result<(), StoreError>> {
        let channel = match to {
            Some(tag) => format!("{}{tag}", self.replica_prefix),
            None => self.broadcast.clone(),
        };
        let frame = RelayMessage {
            from: self.inbox.tag().clone(),
            topic: Arc::from(topic),
            body,
        }
        .encode();
        let mut connection = self.publisher.clone();
        let timeout = self.timeout;
        StoreFuture::boxed(async move {
            let mut publish = redis::cmd("PUBLISH");
            publish.arg(channel).arg(frame.as_ref());
            ask(timeout, publish.query_async::<u64>(&mut connection))
                .await
                .map(|_| ())
        })
    }

    fn subscribe(&self, topic: &str) -> RelayReceiver {
        self.inbox.subscribe(topic)
    }
}

/// Why a subscriber connection could not be set up.
enum Subscribe {
    TimedOut,
    Failed(redis::RedisError),
}

/// A pub/sub connection subscribed to `channels`, within `timeout`.
async fn subscribed(
    client: &redis::Client,
    channels: &[String; 2],
    timeout: Duration,
) -> Result<PubSub, Subscribe> {
    let setup = async {
        let mut pubsub = client.get_async_pubsub().await?;
        pubsub.subscribe(channels.as_slice()).await?;
        Ok::<_, redis::RedisError>(pubsub)
    };
    bounded(timeout, setup)
        .await
        .map_err(|_| Subscribe::TimedOut)?
        .map_err(Subscribe::Failed)
}

/// Hands every message on `pubsub` to `inbox`; when the connection ends or stops answering its
/// pings, connects and subscribes again (pausing longer after each failure, up to the
/// configured reconnect delay), for as long as the relay lives.
async fn subscribe_forever(
    client: redis::Client,
    channels: [String; 2],
    first: PubSub,
    inbox: Arc<RelayInbox>,
    config: RedisConfig,
) {
    let mut pubsub = Some(first);
    let mut pause = FIRST_RECONNECT_DELAY.min(config.reconnect_delay);
    loop {
        let connection = match pubsub.take() {
            Some(connection) => Some(connection),
            None => subscribed(&client, &channels, config.timeout).await.ok(),
        };
        let Some(connection) = connection else {
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(config.reconnect_delay);
            continue;
        };
        pause = FIRST_RECONNECT_DELAY.min(config.reconnect_delay);
        relay_until_lost(connection, &inbox, config.timeout).await;
        tracing::warn!("the relay's subscriber connection to redis was lost; subscribing again");
    }
}

/// Delivers the connection's messages until it ends or misses a ping.
async fn relay_until_lost(connection: PubSub, inbox: &RelayInbox, timeout: Duration) {
    let (mut sink, mut messages) = connection.split();
    let mut ping = tokio::time::interval(PING_EVERY);
    ping.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    ping.tick().await;
    loop {
        tokio::select! {
            message = messages.next() => {
                let Some(message) = message else { return };
                match RelayMessage::decode(message.get_payload_bytes()) {
                    Some(message) => inbox.deliver(&message),
                    None => tracing::debug!("dropped a relay message that is not one"),
                }
            }
            _ = ping.tick() => {
                let answered = bounded(timeout, sink.ping::<redis::Value>()).await;
                if !matches!(answered, Ok(Ok(_))) {
                    return;
                }
            }
        }
    }
}
