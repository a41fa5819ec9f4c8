//! Push notifications: which webhook targets are acceptable (no SSRF through a webhook URL:
//! loopback, private, link-local and unspecified addresses are refused unless the deployment
//! allows them), and delivery of task events to a webhook with bounded retries and a bound on
//! deliveries in flight (past it an event is not delivered, and the log says so).

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use reqwest::Url;
use tokio::sync::Semaphore;

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
    pub private_targets: PrivateTargets,
    /// Attempts per event, the first included.
    pub attempts: u32,
    /// The wait before the first retry; doubled after each.
    pub first_backoff: Duration,
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
}

impl PushSender {
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
        }
    }

    pub fn policy(&self) -> &PushPolicy {
        &self.policy
    }

    /// Sends `event` to the config's URL in the background, retrying transient failures;
    /// when [`PushPolicy::max_in_flight`] deliveries are under way, it is not sent. Whether the
    /// delivery started.
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
        let sender = self.clone();
        tokio::spawn(async move {
            if let Err(error) = sender.deliver(&config, &event).await {
                tracing::warn!(
                    url = %protocols_runtime::quote(&config.url),
                    %error,
                    "push notification not delivered"
                );
            }
            drop(place);
        });
        true
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

    #[test]
    fn non_http_webhooks_are_refused() {
        let policy = PushPolicy::default();
        assert!(policy.check_url("file:///etc/passwd").is_err());
        assert!(policy.check_url("not a url").is_err());
    }
}
