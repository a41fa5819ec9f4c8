//! The keys an issuer signs its tokens with ([`Jwks`]): its JWKS document fetched over HTTP(S),
//! each usable key pinned to the algorithms it may verify, cached, and fetched again when a
//! token names a key the cache lacks (the issuer rotated) or the cache has aged. Fetches are
//! attempted at most once per refetch interval and never two at a time, so tokens naming
//! made-up `kid`s cannot turn this server into a client hammering its issuer.

use std::sync::{Arc, RwLock};
use std::time::Duration;

use jsonwebtoken::crypto::CryptoProvider;
use jsonwebtoken::jwk::{
    AlgorithmParameters, EllipticCurve, Jwk, KeyAlgorithm, KeyOperations, PublicKeyUse,
};
use jsonwebtoken::{Algorithm, DecodingKey, DecodingKeyKind};
use serde::Deserialize;
use serde_json::value::RawValue;
use tokio::sync::Mutex;
use tokio::time::Instant;

/// Bytes of a JWKS document read before it is refused: dozens of keys fit many times over.
pub const MAX_JWKS_BYTES: usize = 256 * 1024;
/// Keys taken from one document; any after these are ignored, with a warning.
const MAX_JWKS_KEYS: usize = 64;
/// The smallest RSA modulus accepted: 2048 bits.
const MIN_RSA_MODULUS_BYTES: usize = 256;
/// An Ed25519 public key's length.
const ED25519_KEY_BYTES: usize = 32;
/// A P-256 coordinate's length.
const P256_COORDINATE_BYTES: usize = 32;

/// Which algorithms a key verifies: the one its `alg` names, or, for a key without an `alg`,
/// each algorithm this server supports for the key's type. Never more than one family, so a
/// token cannot have an RSA key checked as an HMAC secret, or any key checked by `none`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pin {
    Rs256,
    Ps256,
    /// An RSA key without an `alg` (Microsoft Entra publishes these): RS256 or PS256.
    AnyRsa,
    Es256,
    EdDsa,
}

impl Pin {
    pub(crate) const fn algorithms(self) -> &'static [Algorithm] {
        match self {
            Self::Rs256 => &[Algorithm::RS256],
            Self::Ps256 => &[Algorithm::PS256],
            Self::AnyRsa => &[Algorithm::RS256, Algorithm::PS256],
            Self::Es256 => &[Algorithm::ES256],
            Self::EdDsa => &[Algorithm::EdDSA],
        }
    }

    /// The key type and `alg` of `jwk`, if this server verifies with such a key.
    fn of(jwk: &Jwk) -> Option<Self> {
        let alg = jwk.common.key_algorithm;
        match (&jwk.algorithm, alg) {
            (AlgorithmParameters::RSA(_), None) => Some(Self::AnyRsa),
            (AlgorithmParameters::RSA(_), Some(KeyAlgorithm::RS256)) => Some(Self::Rs256),
            (AlgorithmParameters::RSA(_), Some(KeyAlgorithm::PS256)) => Some(Self::Ps256),
            (AlgorithmParameters::EllipticCurve(ec), None | Some(KeyAlgorithm::ES256))
                if ec.curve == EllipticCurve::P256 =>
            {
                Some(Self::Es256)
            }
            (AlgorithmParameters::OctetKeyPair(okp), None | Some(KeyAlgorithm::EdDSA))
                if okp.curve == EllipticCurve::Ed25519 =>
            {
                Some(Self::EdDsa)
            }
            // `oct` keys above all: a published key is public, and HMAC with a public key is
            // no signature at all.
            _ => None,
        }
    }
}

/// One usable key of the issuer's.
pub(crate) struct VerifyingKey {
    kid: Option<Box<str>>,
    pub(crate) key: DecodingKey,
    pub(crate) pin: Pin,
}

/// Why a published key is not used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Unusable {
    #[error("it is not meant for verifying signatures (`use` or `key_ops`)")]
    NotForSignatures,
    #[error("its type, curve or `alg` is not RS256, PS256, ES256 (P-256) or EdDSA (Ed25519)")]
    Unsupported,
    #[error("its parameters are malformed")]
    Malformed,
    #[error("its RSA modulus is shorter than 2048 bits")]
    WeakRsa,
}

impl VerifyingKey {
    /// The key `jwk` describes, checked once here so that no request meets a malformed key.
    pub(crate) fn from_jwk(jwk: &Jwk) -> Result<Self, Unusable> {
        let common = &jwk.common;
        let for_signatures = common
            .public_key_use
            .as_ref()
            .is_none_or(|usage| *usage == PublicKeyUse::Signature)
            && common
                .key_operations
                .as_ref()
                .is_none_or(|operations| operations.contains(&KeyOperations::Verify));
        if !for_signatures {
            return Err(Unusable::NotForSignatures);
        }
        let pin = Pin::of(jwk).ok_or(Unusable::Unsupported)?;
        let key = DecodingKey::from_jwk(jwk).map_err(|_| Unusable::Malformed)?;
        check_lengths(&key, pin)?;
        // Building each verifier once proves the key parses (an EC point on its curve, an
        // Ed25519 point that decodes), so a request's verification cannot fail on the key.
        let provider = CryptoProvider::try_get_default().ok_or(Unusable::Unsupported)?;
        for algorithm in pin.algorithms() {
            (provider.verifier_factory)(algorithm, &key).map_err(|_| Unusable::Malformed)?;
        }
        Ok(Self {
            kid: common.key_id.as_deref().map(Box::from),
            key,
            pin,
        })
    }
}

/// The lengths the crypto backend assumes rather than checks (it slices an Ed25519 key to 32
/// bytes, which would panic on a shorter one), and the RSA modulus floor.
fn check_lengths(key: &DecodingKey, pin: Pin) -> Result<(), Unusable> {
    match (key.kind(), pin) {
        (DecodingKeyKind::RsaModulusExponent { n, .. }, Pin::Rs256 | Pin::Ps256 | Pin::AnyRsa) => {
            let significant = n.iter().skip_while(|byte| **byte == 0).count();
            if significant < MIN_RSA_MODULUS_BYTES {
                return Err(Unusable::WeakRsa);
            }
            Ok(())
        }
        // An uncompressed point: the 0x04 tag, then x and y.
        (DecodingKeyKind::SecretOrDer(point), Pin::Es256)
            if point.len() == 1 + 2 * P256_COORDINATE_BYTES =>
        {
            Ok(())
        }
        (DecodingKeyKind::SecretOrDer(point), Pin::EdDsa) if point.len() == ED25519_KEY_BYTES => {
            Ok(())
        }
        _ => Err(Unusable::Malformed),
    }
}

/// The usable keys of one fetched document.
struct KeySet {
    keys: Box<[Arc<VerifyingKey>]>,
    fetched: Instant,
    /// Counts the sets fetched, so a request that waited for a fetch knows one happened.
    generation: u64,
}

impl KeySet {
    /// The key `kid` names; a token naming none may use the only key of a one-key set.
    fn find(&self, kid: Option<&str>) -> Option<&Arc<VerifyingKey>> {
        match (kid, &*self.keys) {
            (Some(kid), keys) => keys.iter().find(|key| key.kid.as_deref() == Some(kid)),
            (None, [only]) => Some(only),
            (None, _) => None,
        }
    }
}

/// What a token's `kid` found.
pub(crate) enum Lookup {
    Found(Arc<VerifyingKey>),
    /// The issuer publishes no such key (as of a fetch no older than the refetch interval).
    Unknown,
    /// No keys could be fetched, so no token can be checked now.
    Unavailable,
}

/// How often and how patiently the document is fetched.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Timing {
    pub(crate) refetch_interval: Duration,
    pub(crate) max_age: Duration,
}

/// An issuer's keys, fetched from `url` when first needed.
pub(crate) struct Jwks {
    url: reqwest::Url,
    client: reqwest::Client,
    timing: Timing,
    current: RwLock<Option<Arc<KeySet>>>,
    /// When a fetch was last attempted. Held across the fetch, so requests that miss meanwhile
    /// wait for its keys rather than start fetches of their own.
    last_attempt: Mutex<Option<Instant>>,
}

impl std::fmt::Debug for Jwks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Jwks")
            .field("url", &self.url.as_str())
            .field("timing", &self.timing)
            .finish_non_exhaustive()
    }
}

/// What asking for a fresh document came to.
enum Refresh {
    /// A set fetched by this request, or by the one it waited for.
    Fetched(Arc<KeySet>),
    /// The last attempt is younger than the refetch interval.
    TooSoon,
    Failed,
}

/// Why a fetch brought no keys.
#[derive(Debug, thiserror::Error)]
enum FetchError {
    #[error("the request failed: {0}")]
    Http(#[from] reqwest::Error),
    #[error("the issuer answered {0}")]
    Status(reqwest::StatusCode),
    #[error("the document is larger than {MAX_JWKS_BYTES} bytes")]
    TooLarge,
    #[error("the document is not a JWK set: {0}")]
    NotAKeySet(#[from] serde_json::Error),
    #[error("the document holds no usable signing key")]
    NoUsableKey,
}

impl Jwks {
    pub(crate) fn new(url: reqwest::Url, client: reqwest::Client, timing: Timing) -> Self {
        Self {
            url,
            client,
            timing,
            current: RwLock::new(None),
            last_attempt: Mutex::new(None),
        }
    }

    /// The key `kid` names: from the cache while it is younger than its maximum age, otherwise
    /// after a fetch, if one may be attempted now.
    pub(crate) async fn key(&self, kid: Option<&str>) -> Lookup {
        let cached = self.snapshot();
        if let Some(set) = &cached
            && set.fetched.elapsed() < self.timing.max_age
            && let Some(key) = set.find(kid)
        {
            return Lookup::Found(Arc::clone(key));
        }
        self.key_after_refresh(kid, cached).await
    }

    /// A miss, or an aged cache: fetch if allowed, else make do with what is cached (an aged
    /// key still verifies while the issuer cannot be reached).
    async fn key_after_refresh(&self, kid: Option<&str>, cached: Option<Arc<KeySet>>) -> Lookup {
        let refresh = self
            .refresh(cached.as_ref().map(|set| set.generation))
            .await;
        if let Refresh::Fetched(set) = &refresh {
            return set
                .find(kid)
                .map_or(Lookup::Unknown, |key| Lookup::Found(Arc::clone(key)));
        }
        match (cached.as_ref().and_then(|set| set.find(kid)), refresh) {
            (Some(key), _) => Lookup::Found(Arc::clone(key)),
            (None, Refresh::TooSoon) if cached.is_some() => Lookup::Unknown,
            (None, _) => Lookup::Unavailable,
        }
    }

    fn snapshot(&self) -> Option<Arc<KeySet>> {
        let current = self
            .current
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        current.clone()
    }

    /// Fetches a fresh set unless one arrived since `seen` (the generation the caller looked
    /// at) or the last attempt was less than the refetch interval ago.
    async fn refresh(&self, seen: Option<u64>) -> Refresh {
        let mut last_attempt = self.last_attempt.lock().await;
        let latest = self.snapshot();
        if let Some(latest) = latest.as_ref()
            && Some(latest.generation) != seen
        {
            return Refresh::Fetched(Arc::clone(latest));
        }
        if last_attempt.is_some_and(|at| at.elapsed() < self.timing.refetch_interval) {
            return Refresh::TooSoon;
        }
        *last_attempt = Some(Instant::now());
        match self.fetch().await {
            Ok(keys) => {
                let set = Arc::new(KeySet {
                    keys,
                    fetched: Instant::now(),
                    generation: latest.map_or(1, |set| set.generation + 1),
                });
                *self
                    .current
                    .write()
                    .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(Arc::clone(&set));
                tracing::debug!(url = %self.url, keys = set.keys.len(), "fetched the JWKS");
                Refresh::Fetched(set)
            }
            Err(error) => {
                tracing::warn!(url = %self.url, %error, "could not fetch the issuer's JWKS");
                Refresh::Failed
            }
        }
    }

    async fn fetch(&self) -> Result<Box<[Arc<VerifyingKey>]>, FetchError> {
        let mut response = self
            .client
            .get(self.url.clone())
            .header(http::header::ACCEPT, "application/json")
            .send()
            .await?;
        if !response.status().is_success() {
            return Err(FetchError::Status(response.status()));
        }
        let limit = MAX_JWKS_BYTES as u64;
        if response
            .content_length()
            .is_some_and(|length| length > limit)
        {
            return Err(FetchError::TooLarge);
        }
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await? {
            if body.len() + chunk.len() > MAX_JWKS_BYTES {
                return Err(FetchError::TooLarge);
            }
            body.extend_from_slice(&chunk);
        }
        let keys = parse_key_set(&body)?;
        if keys.is_empty() {
            return Err(FetchError::NoUsableKey);
        }
        Ok(keys)
    }
}

/// The usable keys of a JWKS document. A key this server cannot use is skipped (and logged)
/// rather than failing the set: an issuer may publish encryption keys or newer key types
/// beside its signing keys.
fn parse_key_set(body: &[u8]) -> Result<Box<[Arc<VerifyingKey>]>, serde_json::Error> {
    #[derive(Deserialize)]
    struct Document<'a> {
        #[serde(borrow)]
        keys: Vec<&'a RawValue>,
    }
    let document: Document<'_> = serde_json::from_slice(body)?;
    if document.keys.len() > MAX_JWKS_KEYS {
        tracing::warn!(
            published = document.keys.len(),
            "the JWKS holds more than {MAX_JWKS_KEYS} keys; the rest are ignored"
        );
    }
    let keys = document
        .keys
        .iter()
        .take(MAX_JWKS_KEYS)
        .enumerate()
        .filter_map(|(index, raw)| {
            let key = serde_json::from_str::<Jwk>(raw.get())
                .map_err(|_| Unusable::Malformed)
                .and_then(|jwk| VerifyingKey::from_jwk(&jwk));
            match key {
                Ok(key) => Some(Arc::new(key)),
                Err(reason) => {
                    tracing::debug!(index, %reason, "skipping a JWKS key");
                    None
                }
            }
        })
        .collect();
    Ok(keys)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const P256_X: &str = "DUc_cjNFKIVPZF6NHDF07k8JNQieiXGSh8rmbvJqWhY";
    const P256_Y: &str = "UEVJRpFOJFOmH6F5CW0VCMC-iPi_r0NwfAfPGuSUNRo";
    const ED25519_X: &str = "JjQ1n3Z2TbQ4OkEKx1YdNLSSLYjaJErUiBlgxSPG840";

    /// A base64url modulus of `bytes` bytes (three per four `x`s); verifying is not tried here.
    fn rsa_modulus(bytes: usize) -> String {
        "x".repeat(bytes / 3 * 4)
    }

    fn key(jwk: serde_json::Value) -> Result<VerifyingKey, Unusable> {
        VerifyingKey::from_jwk(&serde_json::from_value(jwk).unwrap())
    }

    fn pin(jwk: serde_json::Value) -> Result<Pin, Unusable> {
        key(jwk).map(|key| key.pin)
    }

    #[test]
    fn each_key_is_pinned_to_its_alg_or_to_what_its_type_allows() {
        let n = rsa_modulus(258);
        let rsa = |alg: Option<&str>| {
            let mut jwk = json!({"kty": "RSA", "n": n, "e": "AQAB"});
            if let Some(alg) = alg {
                jwk["alg"] = json!(alg);
            }
            jwk
        };
        assert_eq!(pin(rsa(Some("RS256"))), Ok(Pin::Rs256));
        assert_eq!(pin(rsa(Some("PS256"))), Ok(Pin::Ps256));
        assert_eq!(pin(rsa(None)), Ok(Pin::AnyRsa));
        assert_eq!(pin(rsa(Some("RS512"))).err(), Some(Unusable::Unsupported));
        let ec = json!({"kty": "EC", "crv": "P-256", "x": P256_X, "y": P256_Y});
        assert_eq!(pin(ec), Ok(Pin::Es256));
        let okp = json!({"kty": "OKP", "crv": "Ed25519", "x": ED25519_X, "alg": "EdDSA"});
        assert_eq!(pin(okp), Ok(Pin::EdDsa));
    }

    #[test]
    fn hmac_encryption_weak_and_malformed_keys_are_not_used() {
        let oct = json!({"kty": "oct", "k": "c2VjcmV0", "alg": "HS256"});
        assert_eq!(pin(oct).err(), Some(Unusable::Unsupported));
        let n = rsa_modulus(258);
        let enc = json!({"kty": "RSA", "n": n, "e": "AQAB", "use": "enc"});
        assert_eq!(pin(enc).err(), Some(Unusable::NotForSignatures));
        let sign_only = json!({"kty": "RSA", "n": n, "e": "AQAB", "key_ops": ["sign"]});
        assert_eq!(pin(sign_only).err(), Some(Unusable::NotForSignatures));
        let weak = json!({"kty": "RSA", "n": rsa_modulus(128), "e": "AQAB"});
        assert_eq!(pin(weak).err(), Some(Unusable::WeakRsa));
        let short_ed = json!({"kty": "OKP", "crv": "Ed25519", "x": "AAAA"});
        assert_eq!(pin(short_ed).err(), Some(Unusable::Malformed));
        let off_curve = json!({"kty": "EC", "crv": "P-256", "x": P256_X, "y": P256_X});
        assert_eq!(pin(off_curve).err(), Some(Unusable::Malformed));
        let wrong_curve = json!({"kty": "EC", "crv": "P-384", "x": P256_X, "y": P256_Y});
        assert_eq!(pin(wrong_curve).err(), Some(Unusable::Unsupported));
        let mismatched =
            json!({"kty": "EC", "crv": "P-256", "x": P256_X, "y": P256_Y, "alg": "RS256"});
        assert_eq!(pin(mismatched).err(), Some(Unusable::Unsupported));
    }

    #[test]
    fn a_key_set_keeps_its_usable_keys_and_at_most_the_bound() {
        let ec = |kid: usize| json!({"kty": "EC", "crv": "P-256", "x": P256_X, "y": P256_Y, "kid": kid.to_string()});
        let mut keys: Vec<serde_json::Value> = (0..MAX_JWKS_KEYS + 5).map(ec).collect();
        keys.insert(0, json!({"kty": "oct", "k": "c2VjcmV0", "kid": "hmac"}));
        keys.insert(1, json!({"kty": "future", "kid": "new"}));
        let body = serde_json::to_vec(&json!({ "keys": keys })).unwrap();
        let parsed = parse_key_set(&body).unwrap();
        assert_eq!(parsed.len(), MAX_JWKS_KEYS - 2);
        assert!(parse_key_set(b"{\"keys\": 1}").is_err());
        assert!(parse_key_set(b"[]").is_err());
    }

    #[test]
    fn a_token_without_a_kid_finds_only_the_key_of_a_one_key_set() {
        let set = |count: usize| {
            KeySet {
            keys: (0..count)
                .map(|index| {
                    let jwk = json!({"kty": "EC", "crv": "P-256", "x": P256_X, "y": P256_Y, "kid": index.to_string()});
                    Arc::new(key(jwk).unwrap())
                })
                .collect(),
            fetched: Instant::now(),
            generation: 1,
        }
        };
        assert!(set(1).find(None).is_some());
        assert!(set(2).find(None).is_none());
        assert!(set(2).find(Some("1")).is_some());
        assert!(set(2).find(Some("2")).is_none());
    }
}
