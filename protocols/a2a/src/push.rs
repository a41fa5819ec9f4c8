//! Push notifications: which webhook targets are acceptable (no SSRF through a webhook URL:
//! loopback, private, link-local and unspecified addresses are refused unless the deployment
//! allows them), and delivery of task events to a webhook with bounded retries and a bound on
//! deliveries in flight (past it an event is not delivered, and the log says so).

use std::collections::{HashMap, VecDeque};
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use reqwest::Url;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::error::A2aError;
use crate::v1::types::{StreamResponse, TaskPushNotificationConfig};

/// The header carrying the config's token, so a receiver can tell our calls apart.
pub const NOTIFICATION_TOKEN_HEADER: &str = "X-A2A-Notification-Token";

/// Whether webhooks may target this host's or a private network's addresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PrivateTargets {
    /// Only public addresses (the safe default).
    #[default]
    Refuse,
    /// Any address (tests, or a deployment whose receivers live on a private network).
    Allow,
}

/// How webhooks are checked and delivered.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct PushPolicy {
    /// Whether webhooks may target private and loopback addresses.
    pub private_targets: PrivateTargets,
    /// Attempts per event, the first included.
    pub attempts: u32,
    /// The wait before the first retry; doubled after each.
    pub first_backoff: Duration,
    /// How long one delivery attempt may take.
    pub timeout: Duration,
    /// Deliveries (with their retries) in flight at once; past it an event is not delivered to
    /// that webhook, so a slow receiver cannot make the server hold work without bound.
    pub max_in_flight: usize,
}

protocols_runtime::config_setters!(PushPolicy {
    private_targets: PrivateTargets,
    attempts: u32,
    first_backoff: Duration,
    timeout: Duration,
    max_in_flight: usize,
});

impl Default for PushPolicy {
    fn default() -> Self {
        Self {
            private_targets: PrivateTargets::Refuse,
            attempts: 3,
            first_backoff: Duration::from_millis(200),
            timeout: Duration::from_secs(10),
            max_in_flight: 256,
        }
    }
}

/// Whether `ip` is on this host or a non-public network.
fn is_private(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_documentation()
                // 100.64.0.0/10, carrier-grade NAT.
                || (v4.octets()[0] == 100 && (v4.octets()[1] & 0xc0) == 64)
        }
        IpAddr::V6(v6) => {
            v6.is_loopback()
                || v6.is_unspecified()
                || (v6.segments()[0] & 0xfe00) == 0xfc00
                || (v6.segments()[0] & 0xffc0) == 0xfe80
                || v6
                    .to_ipv4_mapped()
                    .is_some_and(|v4| is_private(IpAddr::V4(v4)))
        }
    }
}

impl PushPolicy {
    /// Checks a webhook URL when a config is created: scheme, and the host when it is an
    /// address or `localhost`. Names are checked again, resolved, at delivery.
    pub fn check_url(&self, url: &str) -> Result<Url, A2aError> {
        let parsed = Url::parse(url)
            .map_err(|error| A2aError::InvalidParams(format!("webhook url: {error}")))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(A2aError::InvalidParams(
                "webhook url must be http or https".into(),
            ));
        }
        let host = parsed
            .host_str()
            .ok_or_else(|| A2aError::InvalidParams("webhook url has no host".into()))?;
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        let private = match bare.parse::<IpAddr>() {
            Ok(ip) => is_private(ip),
            Err(_) => {
                let name = bare.trim_end_matches('.').to_ascii_lowercase();
                name == "localhost" || name.ends_with(".localhost")
            }
        };
        self.refuse_private(private)?;
        Ok(parsed)
    }

    fn refuse_private(&self, private: bool) -> Result<(), A2aError> {
        if private && self.private_targets == PrivateTargets::Refuse {
            return Err(A2aError::InvalidParams(
                "webhook targets a loopback or private address".into(),
            ));
        }
        Ok(())
    }

    /// Resolves the host and refuses it if any address is private (a public name pointing at
    /// a private address is the classic SSRF).
    async fn check_resolved(&self, url: &Url) -> Result<(), A2aError> {
        if self.private_targets == PrivateTargets::Allow {
            return Ok(());
        }
        let host = url.host_str().unwrap_or_default().to_owned();
        let port = url.port_or_known_default().unwrap_or(443);
        let addresses: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), port))
            .await
            .map_err(|_| A2aError::InvalidParams("webhook host does not resolve".into()))?
            .collect();
        self.refuse_private(addresses.iter().any(|address| is_private(address.ip())))
    }
}

/// Delivers task events to webhooks.
#[derive(Debug, Clone)]
pub struct PushSender {
    policy: PushPolicy,
    http: reqwest::Client,
    in_flight: Arc<Semaphore>,
    lanes: Arc<Lanes>,
}

/// One webhook of one task: its events are delivered in order, one at a time.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct LaneKey {
    tenant: Option<String>,
    task_id: Option<String>,
    config_id: Option<String>,
    url: String,
}

impl LaneKey {
    fn of(config: &TaskPushNotificationConfig) -> Self {
        Self {
            tenant: config.tenant.clone(),
            task_id: config.task_id.clone(),
            config_id: config.id.clone(),
            url: config.url.clone(),
        }
    }
}

/// An event waiting in its lane, holding its place in the in-flight bound until it is sent.
struct Queued {
    config: TaskPushNotificationConfig,
    event: StreamResponse,
    _place: OwnedSemaphorePermit,
}

/// The lanes with a delivery under way. A lane is present exactly while one task drains it, so
/// an event either joins a running drain or starts one; the lock is never held across a send.
#[derive(Default)]
struct Lanes {
    waiting: Mutex<HashMap<LaneKey, VecDeque<Queued>>>,
}

impl std::fmt::Debug for Lanes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lanes").finish_non_exhaustive()
    }
}

/// Whether an event joined a lane already being drained or opened a new one.
enum Joined {
    Running,
    Opened,
}

impl Lanes {
    fn join(&self, key: &LaneKey, queued: Queued) -> Joined {
        let mut waiting = self.waiting.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(lane) = waiting.get_mut(key) {
            lane.push_back(queued);
            return Joined::Running;
        }
        waiting.insert(key.clone(), VecDeque::from([queued]));
        Joined::Opened
    }

    /// The lane's next event; `None` closes the lane (removing it under the same lock an event
    /// joining it takes, so no event is left behind).
    fn next(&self, key: &LaneKey) -> Option<Queued> {
        let mut waiting = self.waiting.lock().unwrap_or_else(PoisonError::into_inner);
        let next = waiting.get_mut(key).and_then(VecDeque::pop_front);
        if next.is_none() {
            waiting.remove(key);
        }
        next
    }
}

impl PushSender {
    /// A sender delivering webhooks under `policy`.
    pub fn new(policy: PushPolicy) -> Self {
        let http = reqwest::Client::builder()
            // A redirect could point a checked URL at a private address.
            .redirect(reqwest::redirect::Policy::none())
            .timeout(policy.timeout)
            .build()
            .unwrap_or_default();
        let in_flight = Arc::new(Semaphore::new(policy.max_in_flight));
        Self {
            policy,
            http,
            in_flight,
            lanes: Arc::default(),
        }
    }

    /// The policy deliveries follow.
    pub fn policy(&self) -> &PushPolicy {
        &self.policy
    }

    /// Sends `event` to the config's URL in the background, after the events queued before it
    /// for the same webhook of the same task, retrying transient failures; when
    /// [`PushPolicy::max_in_flight`] events are queued or under way, it is not sent. Whether the
    /// delivery was accepted.
    pub fn spawn_delivery(
        &self,
        config: TaskPushNotificationConfig,
        event: StreamResponse,
    ) -> bool {
        let Ok(place) = Arc::clone(&self.in_flight).try_acquire_owned() else {
            tracing::warn!(
                url = %protocols_runtime::quote(&config.url),
                "push notification not delivered: too many deliveries in flight"
            );
            return false;
        };
        let key = LaneKey::of(&config);
        let queued = Queued {
            config,
            event,
            _place: place,
        };
        if let Joined::Opened = self.lanes.join(&key, queued) {
            let sender = self.clone();
            tokio::spawn(async move { sender.drain(&key).await });
        }
        true
    }

    /// Delivers a lane's events one after another until it is empty.
    async fn drain(&self, key: &LaneKey) {
        while let Some(queued) = self.lanes.next(key) {
            if let Err(error) = self.deliver(&queued.config, &queued.event).await {
                tracing::warn!(
                    url = %protocols_runtime::quote(&queued.config.url),
                    %error,
                    "push notification not delivered"
                );
            }
        }
    }

    /// Sends `event` once per attempt until a 2xx; a 4xx other than 408/429 is final.
    pub async fn deliver(
        &self,
        config: &TaskPushNotificationConfig,
        event: &StreamResponse,
    ) -> Result<(), A2aError> {
        let url = self.policy.check_url(&config.url)?;
        self.policy.check_resolved(&url).await?;
        let mut backoff = self.policy.first_backoff;
        for attempt in 1..=self.policy.attempts.max(1) {
            match self.attempt(&url, config, event).await {
                Attempt::Delivered => return Ok(()),
                Attempt::Final => break,
                Attempt::Retry if attempt < self.policy.attempts => {
                    tokio::time::sleep(backoff).await;
                    backoff *= 2;
                }
                Attempt::Retry => {}
            }
        }
        Err(A2aError::Internal)
    }

    async fn attempt(
        &self,
        url: &Url,
        config: &TaskPushNotificationConfig,
        event: &StreamResponse,
    ) -> Attempt {
        let mut request = self.http.post(url.clone()).json(event);
        if let Some(token) = &config.token {
            request = request.header(NOTIFICATION_TOKEN_HEADER, token);
        }
        if let Some(auth) = &config.authentication
            && let Some(credentials) = &auth.credentials
        {
            request = request.header(
                http::header::AUTHORIZATION,
                format!("{} {credentials}", auth.scheme),
            );
        }
        match request.send().await {
            Ok(response) if response.status().is_success() => Attempt::Delivered,
            Ok(response)
                if response.status().is_client_error()
                    && !matches!(response.status().as_u16(), 408 | 429) =>
            {
                Attempt::Final
            }
            Ok(_) | Err(_) => Attempt::Retry,
        }
    }
}

enum Attempt {
    Delivered,
    Retry,
    Final,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_private_and_link_local_webhooks_are_refused_by_default() {
        let policy = PushPolicy::default();
        for url in [
            "http://127.0.0.1:8080/hook",
            "http://localhost/hook",
            "http://10.1.2.3/hook",
            "http://192.168.0.1/hook",
            "http://169.254.169.254/latest/meta-data",
            "http://[::1]/hook",
            "http://[fd00::1]/hook",
            "http://0.0.0.0/hook",
        ] {
            assert!(
                matches!(policy.check_url(url), Err(A2aError::InvalidParams(_))),
                "{url}"
            );
        }
    }

    #[test]
    fn public_webhooks_pass_and_private_ones_pass_when_allowed() {
        let policy = PushPolicy::default();
        assert!(policy.check_url("https://93.184.216.34/hook").is_ok());
        let allowing = PushPolicy {
            private_targets: PrivateTargets::Allow,
            ..PushPolicy::default()
        };
        assert!(allowing.check_url("http://127.0.0.1:9/hook").is_ok());
    }

    #[tokio::test]
    async fn deliveries_past_the_in_flight_bound_are_not_started() {
        let sender = PushSender::new(PushPolicy {
            private_targets: PrivateTargets::Allow,
            max_in_flight: 1,
            timeout: Duration::from_secs(30),
            ..PushPolicy::default()
        });
        // A receiver that accepts the connection and never answers holds the one place.
        let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/hook", silent.local_addr().unwrap());
        let config = TaskPushNotificationConfig {
            url,
            ..TaskPushNotificationConfig::default()
        };
        let event = StreamResponse {
            payload: crate::v1::types::StreamResponsePayload::Message(
                crate::v1::types::Message::default(),
            ),
        };
        assert!(sender.spawn_delivery(config.clone(), event.clone()));
        assert!(!sender.spawn_delivery(config, event));
    }

    fn message_event(message_id: &str) -> StreamResponse {
        StreamResponse {
            payload: crate::v1::types::StreamResponsePayload::Message(crate::v1::types::Message {
                message_id: message_id.to_owned(),
                ..crate::v1::types::Message::default()
            }),
        }
    }

    /// A webhook receiver that holds each answer for `hold` and records, per request, which
    /// message it carried and whether an earlier request was still unanswered when it came.
    async fn slow_receiver(
        hold: Duration,
    ) -> (String, tokio::sync::mpsc::UnboundedReceiver<(String, bool)>) {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/hook", listener.local_addr().unwrap());
        let (seen, arrivals) = tokio::sync::mpsc::unbounded_channel();
        let unanswered = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        tokio::spawn(async move {
            loop {
                let (mut socket, _) = listener.accept().await.unwrap();
                let seen = seen.clone();
                let unanswered = Arc::clone(&unanswered);
                tokio::spawn(async move {
                    let mut buffer = Vec::new();
                    let mut chunk = [0u8; 4096];
                    loop {
                        let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") else {
                            let read = socket.read(&mut chunk).await.unwrap();
                            if read == 0 {
                                return;
                            }
                            buffer.extend_from_slice(&chunk[..read]);
                            continue;
                        };
                        let head = String::from_utf8_lossy(&buffer[..end]).to_lowercase();
                        let length: usize = head
                            .lines()
                            .find_map(|line| line.strip_prefix("content-length:"))
                            .map_or(0, |value| value.trim().parse().unwrap());
                        while buffer.len() < end + 4 + length {
                            let read = socket.read(&mut chunk).await.unwrap();
                            assert!(read > 0, "body cut short");
                            buffer.extend_from_slice(&chunk[..read]);
                        }
                        let body: serde_json::Value =
                            serde_json::from_slice(&buffer[end + 4..end + 4 + length]).unwrap();
                        buffer.drain(..end + 4 + length);
                        let overlapped =
                            unanswered.fetch_add(1, std::sync::atomic::Ordering::SeqCst) > 0;
                        let id = body["message"]["messageId"].as_str().unwrap().to_owned();
                        seen.send((id, overlapped)).unwrap();
                        tokio::time::sleep(hold).await;
                        unanswered.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
                        socket
                            .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n")
                            .await
                            .unwrap();
                    }
                });
            }
        });
        (url, arrivals)
    }

    #[tokio::test]
    async fn one_webhooks_events_arrive_one_at_a_time_in_the_order_they_were_sent() {
        let sender = PushSender::new(PushPolicy {
            private_targets: PrivateTargets::Allow,
            ..PushPolicy::default()
        });
        let (url, mut arrivals) = slow_receiver(Duration::from_millis(30)).await;
        let config = TaskPushNotificationConfig {
            url,
            task_id: Some("task-1".into()),
            ..TaskPushNotificationConfig::default()
        };
        let sent: Vec<String> = (0..6).map(|n| format!("event-{n}")).collect();
        for id in &sent {
            assert!(sender.spawn_delivery(config.clone(), message_event(id)));
        }
        let mut received = Vec::new();
        for _ in &sent {
            let (id, overlapped) = tokio::time::timeout(Duration::from_secs(10), arrivals.recv())
                .await
                .unwrap()
                .unwrap();
            assert!(
                !overlapped,
                "{id} was sent before the previous event was answered"
            );
            received.push(id);
        }
        assert_eq!(received, sent);
        // Every lane closes once drained, so nothing is kept per finished webhook.
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(sender.lanes.waiting.lock().unwrap().is_empty());
    }

    #[tokio::test]
    async fn different_webhooks_are_delivered_side_by_side() {
        let sender = PushSender::new(PushPolicy {
            private_targets: PrivateTargets::Allow,
            ..PushPolicy::default()
        });
        let (url, mut arrivals) = slow_receiver(Duration::from_secs(2)).await;
        for task in ["task-a", "task-b"] {
            let config = TaskPushNotificationConfig {
                url: url.clone(),
                task_id: Some(task.into()),
                ..TaskPushNotificationConfig::default()
            };
            assert!(sender.spawn_delivery(config, message_event(task)));
        }
        let mut overlaps = 0;
        for _ in 0..2 {
            let (_, overlapped) = tokio::time::timeout(Duration::from_secs(10), arrivals.recv())
                .await
                .unwrap()
                .unwrap();
            overlaps += usize::from(overlapped);
        }
        assert_eq!(
            overlaps, 1,
            "the second task's event waited for the first's"
        );
    }

    #[test]
    fn non_http_webhooks_are_refused() {
        let policy = PushPolicy::default();
        assert!(policy.check_url("file:///etc/passwd").is_err());
        assert!(policy.check_url("not a url").is_err());
    }
}
