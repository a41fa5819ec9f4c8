//! The JWT resource-server authenticator ([`JwtAuthenticator`]): an access token from the
//! `Authorization` header (never a query string), signed by a key of the issuer's JWKS (see
//! `jwks`), with the configured issuer, an audience naming this resource (RFC 8707), and a
//! lifetime (`exp`, `nbf`) that holds within a small leeway, becomes a [`Principal`] carrying
//! its subject, its scopes (`scope`, or `scp`) and its validated claims.
//!
//! # Why `jsonwebtoken`
//!
//! It is what the Rust field validates JWTs with (the most used JWT crate, maintained, no
//! unsafe of its own), it parses JWKs, and it checks `iss`, `aud`, `exp` and `nbf` itself, so
//! none of those rules is written twice here. Its RustCrypto backend needs no C toolchain.

use std::time::Duration;

use http::HeaderMap;
use jsonwebtoken::crypto::CryptoProvider;
use jsonwebtoken::{Algorithm, Validation};
use serde_json::Value;

use super::auth::{AuthFailure, Authenticator, ProtectedResource, bearer_token};
use super::jwks::{Jwks, Lookup, Pin, Timing};
use super::principal::{Claims, Principal};

/// How far past `exp` (or before `nbf`) a token is still taken: clocks drift.
const DEFAULT_LEEWAY: Duration = Duration::from_secs(30);
/// The least time between two fetches of the JWKS, however many unknown `kid`s arrive.
const DEFAULT_REFETCH_INTERVAL: Duration = Duration::from_secs(10);
/// How long fetched keys are used before they are fetched again (a key the issuer withdrew
/// stops verifying by then).
const DEFAULT_MAX_KEY_AGE: Duration = Duration::from_secs(10 * 60);
/// How long one fetch of the JWKS may take.
const DEFAULT_FETCH_TIMEOUT: Duration = Duration::from_secs(5);
/// The longest token read; a longer `Authorization` value is refused without being parsed.
const MAX_TOKEN_BYTES: usize = 16 * 1024;

/// What a token must satisfy, and where the keys it is checked with come from.
#[derive(Debug, Clone)]
pub struct JwtConfig {
    jwks_url: String,
    issuers: Vec<String>,
    audiences: Vec<String>,
    leeway: Duration,
    refetch_interval: Duration,
    max_key_age: Duration,
    fetch_timeout: Duration,
}

/// A JWT configuration that cannot be served; returned at start-up, never per request.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JwtConfigError {
    /// The JWKS URL is not an absolute http(s) URL.
    #[error("JWKS URL `{0}` is not an absolute http(s) URL")]
    InvalidJwksUrl(String),
    /// No issuer or no audience is named, or one is empty.
    #[error("an issuer and an audience must each be named, and none may be empty")]
    MissingIssuerOrAudience,
    /// A duration that must be positive (named) is zero.
    #[error("`{0}` must be positive")]
    NonPositive(&'static str),
    /// No JWT crypto backend is available.
    #[error("no JWT crypto backend is available: {0}")]
    Backend(String),
}

impl JwtConfig {
    /// Tokens from `issuer` (its `iss`, exactly), checked with the keys at `jwks_url`, for
    /// `audience`: this resource's identifier, which a token's `aud` must name.
    pub fn new(
        jwks_url: impl Into<String>,
        issuer: impl Into<String>,
        audience: impl Into<String>,
    ) -> Self {
        Self {
            jwks_url: jwks_url.into(),
            issuers: vec![issuer.into()],
            audiences: vec![audience.into()],
            leeway: DEFAULT_LEEWAY,
            refetch_interval: DEFAULT_REFETCH_INTERVAL,
            max_key_age: DEFAULT_MAX_KEY_AGE,
            fetch_timeout: DEFAULT_FETCH_TIMEOUT,
        }
    }

    /// Also accepts tokens whose `iss` is `issuer` (signed with keys of the same JWKS).
    #[must_use]
    pub fn issuer(mut self, issuer: impl Into<String>) -> Self {
        self.issuers.push(issuer.into());
        self
    }

    /// Also accepts tokens for `audience`.
    #[must_use]
    pub fn audience(mut self, audience: impl Into<String>) -> Self {
        self.audiences.push(audience.into());
        self
    }

    /// How far `exp` and `nbf` may be off to allow for clock skew (default 30 s).
    #[must_use]
    pub fn leeway(mut self, leeway: Duration) -> Self {
        self.leeway = leeway;
        self
    }

    /// The least time between two fetches of the JWKS.
    #[must_use]
    pub fn refetch_interval(mut self, interval: Duration) -> Self {
        self.refetch_interval = interval;
        self
    }

    /// How long fetched keys are used before they are fetched again (default 10 min).
    #[must_use]
    pub fn max_key_age(mut self, age: Duration) -> Self {
        self.max_key_age = age;
        self
    }

    /// How long one JWKS fetch may take (default 5 s).
    #[must_use]
    pub fn fetch_timeout(mut self, timeout: Duration) -> Self {
        self.fetch_timeout = timeout;
        self
    }

    /// The RFC 9728 metadata this configuration implies: the first audience as the resource,
    /// the issuers as its authorization servers.
    pub fn protected_resource(&self) -> ProtectedResource {
        let resource = self.audiences.first().cloned().unwrap_or_default();
        self.issuers
            .iter()
            .fold(ProtectedResource::new(resource), |metadata, issuer| {
                metadata.authorization_server(issuer.clone())
            })
    }
}

/// Validates JWT access tokens; see the module documentation for the rules.
#[derive(Debug)]
pub struct JwtAuthenticator {
    jwks: Jwks,
    validations: Validations,
}

/// One validation per [`Pin`], built once: the claim rules are the same for every key, only
/// the algorithms differ.
#[derive(Debug)]
struct Validations {
    rs256: Validation,
    ps256: Validation,
    any_rsa: Validation,
    es256: Validation,
    eddsa: Validation,
}

impl Validations {
    fn new(config: &JwtConfig) -> Self {
        Self {
            rs256: validation(config, Pin::Rs256),
            ps256: validation(config, Pin::Ps256),
            any_rsa: validation(config, Pin::AnyRsa),
            es256: validation(config, Pin::Es256),
            eddsa: validation(config, Pin::EdDsa),
        }
    }

    fn of(&self, pin: Pin) -> &Validation {
        match pin {
            Pin::Rs256 => &self.rs256,
            Pin::Ps256 => &self.ps256,
            Pin::AnyRsa => &self.any_rsa,
            Pin::Es256 => &self.es256,
            Pin::EdDsa => &self.eddsa,
        }
    }
}

impl JwtAuthenticator {
    /// Checks the configuration; the JWKS is first fetched when the first token arrives.
    pub fn new(config: JwtConfig) -> Result<Self, JwtConfigError> {
        let url = reqwest::Url::parse(&config.jwks_url)
            .ok()
            .filter(|url| matches!(url.scheme(), "http" | "https") && url.host().is_some())
            .ok_or_else(|| JwtConfigError::InvalidJwksUrl(config.jwks_url.clone()))?;
        let named = |values: &[String]| !values.is_empty() && values.iter().all(|v| !v.is_empty());
        if !named(&config.issuers) || !named(&config.audiences) {
            return Err(JwtConfigError::MissingIssuerOrAudience);
        }
        for (name, value) in [
            ("refetch_interval", config.refetch_interval),
            ("max_key_age", config.max_key_age),
            ("fetch_timeout", config.fetch_timeout),
        ] {
            if value.is_zero() {
                return Err(JwtConfigError::NonPositive(name));
            }
        }
        // Without a backend, jsonwebtoken would panic at the first token; refuse here instead.
        if CryptoProvider::try_get_default().is_none() {
            return Err(JwtConfigError::Backend(
                "jsonwebtoken found no single default CryptoProvider".into(),
            ));
        }
        let client = reqwest::Client::builder()
            .timeout(config.fetch_timeout)
            .connect_timeout(config.fetch_timeout)
            // The configured URL is the one trusted; a redirect elsewhere is an error.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|error| JwtConfigError::Backend(error.to_string()))?;
        let timing = Timing {
            refetch_interval: config.refetch_interval,
            max_age: config.max_key_age,
        };
        Ok(Self {
            jwks: Jwks::new(url, client, timing),
            validations: Validations::new(&config),
        })
    }
}

/// The claim rules every token is held to, with the algorithms `pin` allows.
fn validation(config: &JwtConfig, pin: Pin) -> Validation {
    let mut validation = Validation::new(Algorithm::RS256);
    validation.algorithms = pin.algorithms().to_vec();
    validation.set_issuer(&config.issuers);
    validation.set_audience(&config.audiences);
    validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
    validation.validate_exp = true;
    validation.validate_nbf = true;
    validation.leeway = config.leeway.as_secs();
    validation
}

/// The algorithms a token's header may name at all; anything else (`none`, HMAC, the
/// algorithms no key here is pinned to) is refused before any key is looked up, so it cannot
/// cause a fetch either.
const ACCEPTED_ALGORITHMS: [Algorithm; 4] = [
    Algorithm::RS256,
    Algorithm::PS256,
    Algorithm::ES256,
    Algorithm::EdDSA,
];

impl Authenticator for JwtAuthenticator {
    async fn authenticate(&self, headers: &HeaderMap) -> Result<Principal, AuthFailure> {
        let token = bearer_token(headers)?;
        if token.len() > MAX_TOKEN_BYTES {
            return Err(AuthFailure::Invalid);
        }
        let header = jsonwebtoken::decode_header(token).map_err(|_| AuthFailure::Invalid)?;
        if !ACCEPTED_ALGORITHMS.contains(&header.alg) {
            tracing::debug!(alg = ?header.alg, "refusing a token signed with an unaccepted alg");
            return Err(AuthFailure::Invalid);
        }
        let key = match self.jwks.key(header.kid.as_deref()).await {
            Lookup::Found(key) => key,
            Lookup::Unknown => {
                tracing::debug!("refusing a token naming no key the issuer publishes");
                return Err(AuthFailure::Invalid);
            }
            Lookup::Unavailable => return Err(AuthFailure::Unavailable),
        };
        let claims = jsonwebtoken::decode::<Claims>(token, &key.key, self.validations.of(key.pin))
            .map_err(|error| {
                tracing::debug!(reason = ?error.kind(), "refusing a token");
                AuthFailure::Invalid
            })?
            .claims;
        principal(claims)
    }
}

/// The principal validated `claims` prove: `sub` as the subject, the scopes of `scope` (a
/// space-separated string, RFC 8693/9068) or else of `scp` (the same, or an array of strings,
/// as some issuers send it).
fn principal(claims: Claims) -> Result<Principal, AuthFailure> {
    let subject = match claims.get("sub") {
        Some(Value::String(subject)) if !subject.is_empty() => subject.as_str(),
        _ => return Err(AuthFailure::Invalid),
    };
    let scopes = match claims.get("scope").or_else(|| claims.get("scp")) {
        None => Vec::new(),
        Some(Value::String(scopes)) => scopes.split_ascii_whitespace().map(str::to_owned).collect(),
        Some(Value::Array(scopes)) => scopes
            .iter()
            .map(|scope| {
                scope
                    .as_str()
                    .map(str::to_owned)
                    .ok_or(AuthFailure::Invalid)
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(AuthFailure::Invalid),
    };
    Ok(Principal::new(subject, scopes).with_claims(claims))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn claims(value: Value) -> Claims {
        match value {
            Value::Object(map) => map,
            _ => Claims::new(),
        }
    }

    #[test]
    fn scopes_come_from_scope_or_else_scp_in_either_form() {
        let from_scope = principal(claims(json!({"sub": "a", "scope": "read  write"}))).unwrap();
        assert_eq!(&*from_scope.scopes, ["read", "write"]);
        let scope_wins = principal(claims(json!({"sub": "a", "scope": "x", "scp": ["y"]})));
        assert_eq!(&*scope_wins.unwrap().scopes, ["x"]);
        let from_scp = principal(claims(json!({"sub": "a", "scp": ["read", "write"]}))).unwrap();
        assert_eq!(&*from_scp.scopes, ["read", "write"]);
        let scp_string = principal(claims(json!({"sub": "a", "scp": "read"}))).unwrap();
        assert_eq!(&*scp_string.scopes, ["read"]);
        let none = principal(claims(json!({"sub": "a"}))).unwrap();
        assert!(none.scopes.is_empty());
        assert_eq!(none.claim("sub"), Some(&json!("a")));
    }

    #[test]
    fn a_missing_or_odd_subject_or_scope_claim_is_an_invalid_token() {
        for odd in [
            json!({"scope": "x"}),
            json!({"sub": ""}),
            json!({"sub": 7}),
            json!({"sub": "a", "scope": 7}),
            json!({"sub": "a", "scp": ["x", 7]}),
        ] {
            assert_eq!(
                principal(claims(odd.clone())).err(),
                Some(AuthFailure::Invalid),
                "{odd}"
            );
        }
    }

    #[test]
    fn a_configuration_without_a_usable_url_issuer_or_audience_is_refused() {
        let build = |config: JwtConfig| JwtAuthenticator::new(config).err();
        assert_eq!(
            build(JwtConfig::new("ftp://issuer/jwks", "i", "a")),
            Some(JwtConfigError::InvalidJwksUrl("ftp://issuer/jwks".into()))
        );
        assert_eq!(
            build(JwtConfig::new("jwks.json", "i", "a")),
            Some(JwtConfigError::InvalidJwksUrl("jwks.json".into()))
        );
        assert_eq!(
            build(JwtConfig::new("http://issuer/jwks", "", "a")),
            Some(JwtConfigError::MissingIssuerOrAudience)
        );
        assert_eq!(
            build(JwtConfig::new("http://issuer/jwks", "i", "a").refetch_interval(Duration::ZERO)),
            Some(JwtConfigError::NonPositive("refetch_interval"))
        );
        assert!(build(JwtConfig::new("https://issuer/jwks", "i", "a")).is_none());
    }

    #[test]
    fn the_implied_metadata_names_the_audience_and_every_issuer() {
        let config = JwtConfig::new(
            "https://a.example/jwks",
            "https://a.example",
            "https://r/mcp",
        )
        .issuer("https://b.example");
        let metadata = config.protected_resource();
        assert_eq!(metadata.resource, "https://r/mcp");
        assert_eq!(
            metadata.authorization_servers,
            ["https://a.example", "https://b.example"]
        );
    }
}
