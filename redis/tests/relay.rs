//! The Redis relay against a real, throwaway `redis-server`: two relays (two replicas) reach
//! each other by tag and by broadcast, a stalled subscriber's queue stays bounded, and a
//! killed Redis is survived by resubscribing on its own.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use std::time::{Duration, Instant};

use bytes::Bytes;
use protocols_redis::{RedisConfig, RedisRelay};
use protocols_runtime::relay::{RELAY_QUEUE, Relay, RelayLagged, RelayMessage, RelayReceiver};
use protocols_testkit::RedisServer;

const TIMEOUT: Duration = Duration::from_millis(250);

async fn relay(server: &RedisServer) -> RedisRelay {
    let config = RedisConfig::new(server.url())
        .timeout(TIMEOUT)
        .reconnect_delay(Duration::from_millis(20));
    RedisRelay::connect(config).await.expect("relay connects")
}

/// The next message within a second; `None` when none comes.
async fn next(receiver: &mut RelayReceiver) -> Option<Result<RelayMessage, RelayLagged>> {
    tokio::time::timeout(Duration::from_secs(1), receiver.recv())
        .await
        .ok()
        .flatten()
}

#[tokio::test]
async fn a_message_addressed_to_a_replica_reaches_it_and_no_other() {
    let server = RedisServer::start();
    let (a, b, c) = (
        relay(&server).await,
        relay(&server).await,
        relay(&server).await,
    );
    let (mut on_b, mut on_c) = (b.subscribe("t"), c.subscribe("t"));
    let mut other_topic = b.subscribe("other");
    a.publish(Some(b.tag()), "t", Bytes::from_static(b"hello"))
        .await
        .expect("published");
    let received = next(&mut on_b).await.expect("a message").expect("no loss");
    assert_eq!(received.from, *a.tag());
    assert_eq!(&*received.topic, "t");
    assert_eq!(received.body, Bytes::from_static(b"hello"));
    assert!(next(&mut on_c).await.is_none(), "C was not addressed");
    assert!(next(&mut other_topic).await.is_none(), "another topic");
}

#[tokio::test]
async fn a_broadcast_reaches_every_other_replica_but_not_its_sender() {
    let server = RedisServer::start();
    let (a, b, c) = (
        relay(&server).await,
        relay(&server).await,
        relay(&server).await,
    );
    let (mut on_a, mut on_b, mut on_c) = (a.subscribe("t"), b.subscribe("t"), c.subscribe("t"));
    a.publish(None, "t", Bytes::from_static(b"all"))
        .await
        .expect("published");
    for receiver in [&mut on_b, &mut on_c] {
        let received = next(receiver).await.expect("a message").expect("no loss");
        assert_eq!(received.body, Bytes::from_static(b"all"));
    }
    assert!(next(&mut on_a).await.is_none(), "the sender hears nothing");
}

#[tokio::test]
async fn a_subscriber_that_does_not_read_holds_at_most_the_queue_bound_and_is_told_what_it_lost() {
    let server = RedisServer::start();
    let (a, b) = (relay(&server).await, relay(&server).await);
    let (mut stalled, mut marker) = (b.subscribe("t"), b.subscribe("marker"));
    let sent = RELAY_QUEUE as u64 + 500;
    for n in 0..sent {
        a.publish(Some(b.tag()), "t", Bytes::from(n.to_string()))
            .await
            .expect("published");
    }
    // B hears one connection's messages in order: once the marker is in, every message of the
    // burst has been queued or dropped, so reading now cannot make room for late ones.
    a.publish(Some(b.tag()), "marker", Bytes::from_static(b"end"))
        .await
        .expect("published");
    assert!(next(&mut marker).await.is_some(), "the marker arrives");
    let (mut received, mut lost) = (0u64, 0u64);
    while received + lost < sent {
        match next(&mut stalled).await {
            Some(Ok(_)) => received += 1,
            Some(Err(RelayLagged(count))) => lost += count,
            None => panic!("{received} received and {lost} lost of {sent}"),
        }
    }
    assert!(received <= RELAY_QUEUE as u64, "{received} held");
    assert!(lost >= 500, "{lost} reported lost");
}

#[tokio::test]
async fn after_redis_restarts_the_relay_subscribes_again_by_itself() {
    let mut server = RedisServer::start();
    let (a, b) = (relay(&server).await, relay(&server).await);
    let mut on_b = b.subscribe("t");
    server.stop();
    let refused = Instant::now();
    assert!(
        a.publish(Some(b.tag()), "t", Bytes::from_static(b"lost"))
            .await
            .is_err()
    );
    assert!(refused.elapsed() < TIMEOUT + Duration::from_millis(400));
    server.resume();
    // Published until B's new subscription hears it: each try is bounded, and B must be back
    // within a few pings.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        assert!(Instant::now() < deadline, "B never heard A again");
        if a.publish(Some(b.tag()), "t", Bytes::from_static(b"back"))
            .await
            .is_ok()
            && let Some(Ok(message)) = next(&mut on_b).await
        {
            assert_eq!(message.body, Bytes::from_static(b"back"));
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
