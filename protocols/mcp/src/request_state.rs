//! 2026-07-28 `requestState`: what a handler carries from one round of an input-required
//! exchange to the next travels through the client, so the server seals it. A sealed state is
//! bound to the request it was issued for (method and target), expires, and carries an
//! HMAC-SHA256 tag under the server's key; a state that was changed, moved to another target or
//! kept too long is refused with invalid params, and the handler only ever reads a state the
//! server issued. Replicas that share the key (`ServeOptions::request_state_key`) accept each
//! other's states.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use protocols_runtime::ErrorObject;
use ring::hmac;
use serde_json::Value;

/// How long a sealed state is accepted after it was issued, unless the server says otherwise.
pub const DEFAULT_STATE_LIFETIME: Duration = Duration::from_secs(600);

/// What tells a sealed state's format apart from any later one.
const FORMAT: &str = "s1";

/// The server's key for sealing request states, and how long a state lives.
#[derive(Clone)]
pub struct StateSeal {
    key: hmac::Key,
    lifetime: Duration,
}

impl std::fmt::Debug for StateSeal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StateSeal")
            .field("lifetime", &self.lifetime)
            .finish_non_exhaustive()
    }
}

/// What a sealed state is bound to: the request it was issued for.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Binding<'a> {
    pub(crate) method: &'a str,
    pub(crate) target: &'a str,
}

/// Why a state the client sent back is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum StateRefused {
    /// The state was not issued by this server for this request.
    #[error("requestState was not issued by this server for this request")]
    Forged,
    /// The state has expired.
    #[error("requestState has expired")]
    Expired,
}

impl From<StateRefused> for ErrorObject {
    fn from(refused: StateRefused) -> Self {
        Self::invalid_params(refused.to_string())
    }
}

impl Default for StateSeal {
    fn default() -> Self {
        Self::random()
    }
}

impl StateSeal {
    /// A seal under a fresh random key (states do not survive a restart, nor cross replicas).
    pub fn random() -> Self {
        let rng = ring::rand::SystemRandom::new();
        let key = hmac::Key::generate(hmac::HMAC_SHA256, &rng)
            // The system's random source failing leaves a key that is still a key: derived from
            // the time, so states stay tamper-evident within this process, if guessable.
            .unwrap_or_else(|_| {
                let now = SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .unwrap_or_default()
                    .as_nanos();
                hmac::Key::new(hmac::HMAC_SHA256, &now.to_le_bytes())
            });
        Self {
            key,
            lifetime: DEFAULT_STATE_LIFETIME,
        }
    }

    /// A seal under `secret` (share it between replicas so each accepts the others' states).
    pub fn with_key(secret: &[u8]) -> Self {
        Self {
            key: hmac::Key::new(hmac::HMAC_SHA256, secret),
            lifetime: DEFAULT_STATE_LIFETIME,
        }
    }

    /// The same seal with states accepted for `lifetime` after they are issued.
    #[must_use]
    pub fn lifetime(mut self, lifetime: Duration) -> Self {
        self.lifetime = lifetime;
        self
    }

    /// The bytes a state's tag covers: the format, the binding, the expiry and the payload, each
    /// length-prefixed so that no two different states read as the same bytes.
    fn signed_bytes(binding: Binding<'_>, expires: u64, payload: &str) -> Vec<u8> {
        let expires = expires.to_string();
        let parts = [FORMAT, binding.method, binding.target, &expires, payload];
        let mut bytes = Vec::with_capacity(parts.iter().map(|part| part.len() + 8).sum());
        for part in parts {
            bytes.extend_from_slice(&(part.len() as u64).to_le_bytes());
            bytes.extend_from_slice(part.as_bytes());
        }
        bytes
    }

    /// `state`, sealed for `binding` at `now`.
    pub(crate) fn seal(&self, binding: Binding<'_>, state: &Value, now: SystemTime) -> String {
        let expires = seconds(now).saturating_add(self.lifetime.as_secs());
        let payload = URL_SAFE_NO_PAD.encode(state.to_string());
        let tag = hmac::sign(&self.key, &Self::signed_bytes(binding, expires, &payload));
        format!(
            "{FORMAT}.{expires}.{payload}.{}",
            URL_SAFE_NO_PAD.encode(tag.as_ref())
        )
    }

    /// The state `sealed` carries, when this server issued it for `binding` and it has not
    /// expired at `now`.
    pub(crate) fn open(
        &self,
        binding: Binding<'_>,
        sealed: &str,
        now: SystemTime,
    ) -> Result<Value, StateRefused> {
        let mut parts = sealed.split('.');
        let (Some(FORMAT), Some(expires), Some(payload), Some(tag), None) = (
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
        ) else {
            return Err(StateRefused::Forged);
        };
        let expires: u64 = expires.parse().map_err(|_| StateRefused::Forged)?;
        let tag = URL_SAFE_NO_PAD
            .decode(tag)
            .map_err(|_| StateRefused::Forged)?;
        // ring compares the tags in constant time.
        hmac::verify(
            &self.key,
            &Self::signed_bytes(binding, expires, payload),
            &tag,
        )
        .map_err(|_| StateRefused::Forged)?;
        if seconds(now) > expires {
            return Err(StateRefused::Expired);
        }
        let json = URL_SAFE_NO_PAD
            .decode(payload)
            .map_err(|_| StateRefused::Forged)?;
        serde_json::from_slice(&json).map_err(|_| StateRefused::Forged)
    }
}

fn seconds(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH).unwrap_or_default().as_secs()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const CALL: Binding<'static> = Binding {
        method: "tools/call",
        target: "confirm",
    };

    #[test]
    fn a_sealed_state_opens_to_what_was_sealed() {
        let seal = StateSeal::random();
        let now = SystemTime::now();
        let sealed = seal.seal(CALL, &json!({"step": 2, "name": "Alice"}), now);
        assert_eq!(
            seal.open(CALL, &sealed, now),
            Ok(json!({"step": 2, "name": "Alice"}))
        );
    }

    #[test]
    fn a_changed_state_or_one_for_another_target_is_forged() {
        let seal = StateSeal::random();
        let now = SystemTime::now();
        let sealed = seal.seal(CALL, &json!({"step": 1}), now);
        for tampered in [
            format!("{sealed}-TAMPERED"),
            sealed.replacen(".", ".9", 1),
            String::new(),
            "s1.1.e30.AAAA".to_owned(),
        ] {
            assert_eq!(
                seal.open(CALL, &tampered, now),
                Err(StateRefused::Forged),
                "{tampered}"
            );
        }
        let other = Binding {
            method: "tools/call",
            target: "delete",
        };
        assert_eq!(seal.open(other, &sealed, now), Err(StateRefused::Forged));
        let another_server = StateSeal::random();
        assert_eq!(
            another_server.open(CALL, &sealed, now),
            Err(StateRefused::Forged)
        );
    }

    #[test]
    fn a_state_past_its_lifetime_is_expired_and_a_shared_key_opens_anothers_state() {
        let seal = StateSeal::with_key(b"shared").lifetime(Duration::from_secs(10));
        let now = SystemTime::now();
        let sealed = seal.seal(CALL, &json!(1), now);
        let replica = StateSeal::with_key(b"shared");
        assert_eq!(replica.open(CALL, &sealed, now), Ok(json!(1)));
        assert_eq!(
            seal.open(CALL, &sealed, now + Duration::from_secs(11)),
            Err(StateRefused::Expired)
        );
    }
}
