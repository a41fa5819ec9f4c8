//! Who is calling: the [`Authenticator`] seam, a static bearer-token implementation (the JWT
//! one is `jwt`'s), the [`AuthPolicy`] an endpoint states, the `WWW-Authenticate` challenges,
//! and the RFC 9728 protected-resource metadata document those challenges point at.
//!
//! # Why the authenticator is stored as `Arc<dyn …>`
//!
//! Implementors write a plain `async fn` (the trait returns `impl Future + Send`); the hardening
//! stores it behind a private object-safe twin that boxes that future. A deployment picks its
//! authenticator at start-up from configuration, and keeping it out of the router's type keeps
//! every router, config and test free of an extra generic. The cost is one allocation per
//! authenticated request, on a path that already runs axum's own boxed middleware futures and a
//! SHA-256; the per-request hot path that is monomorphised is the protocol handler seam.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use http::{HeaderMap, HeaderValue, Uri, header};
use serde::Serialize;
use sha2::{Digest as _, Sha256};
use subtle::ConstantTimeEq as _;

use super::HardeningError;
use super::principal::Principal;
use super::refusal::{Challenge, Refusal};

/// The path RFC 9728 §3.1 puts the metadata document under.
pub(crate) const METADATA_WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";

/// Why no principal could be established.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthFailure {
    /// No credential of a kind this authenticator reads.
    Missing,
    /// A credential that is malformed, unknown, expired or revoked.
    Invalid,
    /// The authenticator's backing service could not answer (a 503, not a 401).
    Unavailable,
}

/// Turns request headers into a [`Principal`]. Implement with `async fn`.
pub trait Authenticator: Send + Sync + 'static {
    /// Reads the caller's credentials from the request headers: who it is, or why it is refused.
    fn authenticate(
        &self,
        headers: &HeaderMap,
    ) -> impl Future<Output = Result<Principal, AuthFailure>> + Send;
}

type AuthFuture<'a> = Pin<Box<dyn Future<Output = Result<Principal, AuthFailure>> + Send + 'a>>;

/// The object-safe twin of [`Authenticator`] the hardening stores.
pub(crate) trait DynAuthenticator: Send + Sync {
    fn authenticate_boxed<'a>(&'a self, headers: &'a HeaderMap) -> AuthFuture<'a>;
}

impl<A: Authenticator> DynAuthenticator for A {
    fn authenticate_boxed<'a>(&'a self, headers: &'a HeaderMap) -> AuthFuture<'a> {
        Box::pin(self.authenticate(headers))
    }
}

/// A static table of bearer tokens, each mapped to a principal.
///
/// Only SHA-256 digests of the tokens are held, and a presented token is compared against every
/// entry in constant time, so neither memory nor timing reveals how much of a token matched.
#[derive(Clone, Default)]
pub struct BearerAuthenticator {
    entries: Vec<([u8; 32], Principal)>,
}

impl BearerAuthenticator {
    /// An authenticator that knows no tokens yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Accepts `token` as proof of `principal`.
    #[must_use]
    pub fn with_token(mut self, token: impl AsRef<[u8]>, principal: Principal) -> Self {
        self.entries.push((digest(token.as_ref()), principal));
        self
    }

    fn lookup(&self, token: &[u8]) -> Option<&Principal> {
        let presented = digest(token);
        let mut found = None;
        // No early exit: every entry is compared whether or not one already matched.
        for (stored, principal) in &self.entries {
            if bool::from(stored.ct_eq(&presented)) {
                found = Some(principal);
            }
        }
        found
    }
}

impl fmt::Debug for BearerAuthenticator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BearerAuthenticator")
            .field("tokens", &self.entries.len())
            .finish()
    }
}

impl Authenticator for BearerAuthenticator {
    async fn authenticate(&self, headers: &HeaderMap) -> Result<Principal, AuthFailure> {
        let token = bearer_token(headers)?;
        self.lookup(token).cloned().ok_or(AuthFailure::Invalid)
    }
}

fn digest(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

/// The token of an `Authorization: Bearer <token>` header (RFC 6750 §2.1).
///
/// Another scheme is [`AuthFailure::Missing`] (no bearer credential was offered); a bearer header
/// with an empty or repeated value is [`AuthFailure::Invalid`].
pub(crate) fn bearer_token(headers: &HeaderMap) -> Result<&[u8], AuthFailure> {
    let mut values = headers.get_all(header::AUTHORIZATION).iter();
    let Some(value) = values.next() else {
        return Err(AuthFailure::Missing);
    };
    if values.next().is_some() {
        return Err(AuthFailure::Invalid);
    }
    let bytes = value.as_bytes();
    let Some(split) = bytes.iter().position(|byte| *byte == b' ') else {
        return Err(AuthFailure::Missing);
    };
    let (scheme, rest) = bytes.split_at(split);
    if !scheme.eq_ignore_ascii_case(b"bearer") {
        return Err(AuthFailure::Missing);
    }
    let token = rest.trim_ascii();
    if token.is_empty() || token.contains(&b' ') {
        return Err(AuthFailure::Invalid);
    }
    Ok(token)
}

/// Whether an endpoint needs a credential, stated out loud.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthPolicy {
    /// Anyone may call; no authenticator may be wired.
    Public,
    /// A valid credential granting every listed scope (an empty list: any valid credential).
    RequireScopes(Vec<String>),
}

/// The RFC 9728 protected-resource metadata a deployment publishes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtectedResource {
    /// The resource identifier: the absolute `https` (or loopback `http`) URL of the endpoint.
    pub resource: String,
    /// The issuers of the authorization servers that grant tokens for the resource.
    pub authorization_servers: Vec<String>,
    /// The scopes the resource understands.
    pub scopes_supported: Vec<String>,
}

impl ProtectedResource {
    /// The metadata of `resource`, with no authorization server or scope yet.
    pub fn new(resource: impl Into<String>) -> Self {
        Self {
            resource: resource.into(),
            authorization_servers: Vec::new(),
            scopes_supported: Vec::new(),
        }
    }

    /// Adds an authorization server's issuer (at least one is required).
    #[must_use]
    pub fn authorization_server(mut self, issuer: impl Into<String>) -> Self {
        self.authorization_servers.push(issuer.into());
        self
    }

    /// The scopes the resource understands, replacing any set before.
    #[must_use]
    pub fn scopes_supported(mut self, scopes: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.scopes_supported = scopes.into_iter().map(Into::into).collect();
        self
    }
}

/// The document as served, with the URL and path it is served at.
#[derive(Debug, Clone)]
pub(crate) struct PublishedMetadata {
    pub(crate) path: String,
    pub(crate) url: String,
    pub(crate) document: Arc<[u8]>,
}

#[derive(Serialize)]
struct MetadataDocument<'a> {
    resource: &'a str,
    authorization_servers: &'a [String],
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    scopes_supported: &'a [String],
    bearer_methods_supported: [&'static str; 1],
}

impl PublishedMetadata {
    /// Validates the configuration and renders the document once.
    pub(crate) fn new(metadata: &ProtectedResource) -> Result<Self, HardeningError> {
        let invalid = || HardeningError::InvalidResource(metadata.resource.clone());
        let uri: Uri = metadata.resource.parse().map_err(|_| invalid())?;
        let (Some(scheme), Some(authority)) = (uri.scheme_str(), uri.authority()) else {
            return Err(invalid());
        };
        let has_query = uri.query().is_some();
        if !matches!(scheme, "https" | "http") || has_query || metadata.resource.contains('#') {
            return Err(invalid());
        }
        if metadata.authorization_servers.is_empty() {
            return Err(HardeningError::NoAuthorizationServer);
        }
        for scope in &metadata.scopes_supported {
            validate_scope(scope)?;
        }
        // RFC 9728 §3.1: the well-known segment goes between the host and the resource's path.
        let resource_path = uri.path().trim_end_matches('/');
        let path = format!("{METADATA_WELL_KNOWN}{resource_path}");
        let url = format!("{scheme}://{authority}{path}");
        let document = serde_json::to_vec(&MetadataDocument {
            resource: &metadata.resource,
            authorization_servers: &metadata.authorization_servers,
            scopes_supported: &metadata.scopes_supported,
            bearer_methods_supported: ["header"],
        })
        .map_err(|_| invalid())?;
        Ok(Self {
            path,
            url,
            document: document.into(),
        })
    }
}

/// An RFC 6749 §3.3 scope-token: printable ASCII without space, `"` or `\`, so it can sit inside
/// a quoted challenge parameter unescaped.
fn validate_scope(scope: &str) -> Result<(), HardeningError> {
    let valid = !scope.is_empty()
        && scope
            .bytes()
            .all(|byte| matches!(byte, 0x21 | 0x23..=0x5B | 0x5D..=0x7E));
    if valid {
        Ok(())
    } else {
        Err(HardeningError::InvalidScope(scope.to_owned()))
    }
}

/// The three `WWW-Authenticate` values this server sends, built once from configuration.
#[derive(Debug, Clone)]
pub(crate) struct Challenges {
    no_credential: Challenge,
    invalid_token: Challenge,
    insufficient_scope: Challenge,
}

impl Challenges {
    pub(crate) fn new(
        required: &[String],
        metadata_url: Option<&str>,
    ) -> Result<Self, HardeningError> {
        for scope in required {
            validate_scope(scope)?;
        }
        let scope = (!required.is_empty()).then(|| format!("scope=\"{}\"", required.join(" ")));
        let metadata = metadata_url.map(|url| format!("resource_metadata=\"{url}\""));
        let build = |error: Option<&str>| -> Result<Challenge, HardeningError> {
            let params: Vec<String> = error
                .map(|code| format!("error=\"{code}\""))
                .into_iter()
                .chain(scope.clone())
                .chain(metadata.clone())
                .collect();
            let text = if params.is_empty() {
                "Bearer".to_owned()
            } else {
                format!("Bearer {}", params.join(", "))
            };
            HeaderValue::from_str(&text)
                .map(Challenge)
                .map_err(|_| HardeningError::InvalidResource(metadata_url.unwrap_or("").into()))
        };
        Ok(Self {
            no_credential: build(None)?,
            invalid_token: build(Some("invalid_token"))?,
            insufficient_scope: build(Some("insufficient_scope"))?,
        })
    }
}

/// An authenticator paired with the policy it enforces; absent for a public endpoint.
#[derive(Clone)]
pub(crate) struct Gate {
    authenticator: Arc<dyn DynAuthenticator>,
    required: Arc<[String]>,
    challenges: Challenges,
}

impl fmt::Debug for Gate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Gate")
            .field("required", &self.required)
            .finish_non_exhaustive()
    }
}

impl Gate {
    pub(crate) fn new(
        authenticator: Arc<dyn DynAuthenticator>,
        required: Vec<String>,
        challenges: Challenges,
    ) -> Self {
        Self {
            authenticator,
            required: required.into(),
            challenges,
        }
    }

    /// Authenticates and applies the policy: the refusal says which challenge the caller gets.
    pub(crate) async fn admit(&self, headers: &HeaderMap) -> Result<Principal, Refusal> {
        let principal = self
            .authenticator
            .authenticate_boxed(headers)
            .await
            .map_err(|failure| match failure {
                AuthFailure::Missing => {
                    Refusal::Unauthenticated(self.challenges.no_credential.clone())
                }
                AuthFailure::Invalid => {
                    Refusal::Unauthenticated(self.challenges.invalid_token.clone())
                }
                AuthFailure::Unavailable => Refusal::AuthUnavailable,
            })?;
        if principal.has_scopes(&self.required) {
            Ok(principal)
        } else {
            Err(Refusal::InsufficientScope(
                self.challenges.insufficient_scope.clone(),
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(authorization: &str) -> HeaderMap {
        let mut map = HeaderMap::new();
        map.insert(
            header::AUTHORIZATION,
            HeaderValue::from_str(authorization).unwrap(),
        );
        map
    }

    fn alice() -> Principal {
        Principal::new("alice", ["tools".to_owned()])
    }

    fn gate(required: &[&str], metadata_url: Option<&str>) -> Gate {
        let required: Vec<String> = required.iter().map(|s| (*s).to_owned()).collect();
        let challenges = Challenges::new(&required, metadata_url).unwrap();
        let bearer = BearerAuthenticator::new()
            .with_token("secret-a", alice())
            .with_token("secret-b", Principal::new("bob", []));
        Gate::new(Arc::new(bearer), required, challenges)
    }

    #[tokio::test]
    async fn a_known_bearer_token_yields_its_principal() {
        let bearer = BearerAuthenticator::new().with_token("secret-a", alice());
        let principal = bearer.authenticate(&headers("Bearer secret-a")).await;
        assert_eq!(principal, Ok(alice()));
        let principal = bearer.authenticate(&headers("bearer   secret-a ")).await;
        assert_eq!(principal, Ok(alice()));
    }

    #[tokio::test]
    async fn an_unknown_or_prefix_token_is_invalid_and_another_scheme_is_missing() {
        let bearer = BearerAuthenticator::new().with_token("secret-a", alice());
        for value in ["Bearer secret", "Bearer secret-ab", "Bearer ", "Bearer a b"] {
            let result = bearer.authenticate(&headers(value)).await;
            assert_eq!(result, Err(AuthFailure::Invalid), "{value}");
        }
        let basic = bearer.authenticate(&headers("Basic c2VjcmV0LWE=")).await;
        assert_eq!(basic, Err(AuthFailure::Missing));
        let none = bearer.authenticate(&HeaderMap::new()).await;
        assert_eq!(none, Err(AuthFailure::Missing));
    }

    #[test]
    fn the_token_table_holds_digests_not_tokens() {
        let bearer = BearerAuthenticator::new().with_token("secret-a", alice());
        assert!(!format!("{bearer:?}").contains("secret"));
        assert_ne!(&bearer.entries[0].0[..8], b"secret-a");
    }

    #[tokio::test]
    async fn a_missing_credential_gets_a_challenge_naming_the_metadata_document() {
        let url = "https://api.example/.well-known/oauth-protected-resource/mcp";
        let refusal = gate(&[], Some(url)).admit(&HeaderMap::new()).await;
        let Err(Refusal::Unauthenticated(challenge)) = refusal else {
            panic!("expected a 401, got {refusal:?}");
        };
        assert_eq!(
            challenge.as_header(),
            &format!("Bearer resource_metadata=\"{url}\"")
        );
    }

    #[tokio::test]
    async fn a_wrong_token_gets_an_invalid_token_challenge() {
        let refusal = gate(&[], None).admit(&headers("Bearer nope")).await;
        let Err(Refusal::Unauthenticated(challenge)) = refusal else {
            panic!("expected a 401, got {refusal:?}");
        };
        assert_eq!(challenge.as_header(), "Bearer error=\"invalid_token\"");
    }

    #[tokio::test]
    async fn a_token_without_the_required_scope_is_refused_with_insufficient_scope() {
        let url = "https://api.example/.well-known/oauth-protected-resource";
        let gate = gate(&["tools"], Some(url));
        let refusal = gate.admit(&headers("Bearer secret-b")).await;
        let Err(Refusal::InsufficientScope(challenge)) = refusal else {
            panic!("expected a 403, got {refusal:?}");
        };
        assert_eq!(
            challenge.as_header(),
            &format!(
                "Bearer error=\"insufficient_scope\", scope=\"tools\", resource_metadata=\"{url}\""
            )
        );
        assert_eq!(gate.admit(&headers("Bearer secret-a")).await, Ok(alice()));
    }

    #[tokio::test]
    async fn an_unavailable_authenticator_is_a_503_not_a_401() {
        struct Down;
        impl Authenticator for Down {
            async fn authenticate(&self, _: &HeaderMap) -> Result<Principal, AuthFailure> {
                Err(AuthFailure::Unavailable)
            }
        }
        let challenges = Challenges::new(&[], None).unwrap();
        let gate = Gate::new(Arc::new(Down), Vec::new(), challenges);
        let refusal = gate.admit(&headers("Bearer x")).await;
        assert_eq!(refusal, Err(Refusal::AuthUnavailable));
    }

    #[test]
    fn the_metadata_document_lives_under_the_well_known_path_plus_the_resource_path() {
        let published = PublishedMetadata::new(
            &ProtectedResource::new("https://api.example/mcp")
                .authorization_server("https://auth.example")
                .scopes_supported(["tools", "prompts"]),
        )
        .unwrap();
        assert_eq!(published.path, "/.well-known/oauth-protected-resource/mcp");
        assert_eq!(
            published.url,
            "https://api.example/.well-known/oauth-protected-resource/mcp"
        );
        let document: serde_json::Value = serde_json::from_slice(&published.document).unwrap();
        assert_eq!(
            document,
            serde_json::json!({
                "resource": "https://api.example/mcp",
                "authorization_servers": ["https://auth.example"],
                "scopes_supported": ["tools", "prompts"],
                "bearer_methods_supported": ["header"],
            })
        );
        let root = PublishedMetadata::new(
            &ProtectedResource::new("https://api.example/").authorization_server("https://a"),
        )
        .unwrap();
        assert_eq!(root.path, METADATA_WELL_KNOWN);
    }

    #[test]
    fn a_resource_or_scope_that_cannot_be_published_fails_at_construction() {
        for resource in [
            "api.example/mcp",
            "ftp://api.example",
            "https://a.example/?q=1",
        ] {
            let metadata = ProtectedResource::new(resource).authorization_server("https://a");
            assert!(
                matches!(
                    PublishedMetadata::new(&metadata),
                    Err(HardeningError::InvalidResource(_))
                ),
                "{resource}"
            );
        }
        let no_server = ProtectedResource::new("https://api.example/mcp");
        assert!(matches!(
            PublishedMetadata::new(&no_server),
            Err(HardeningError::NoAuthorizationServer)
        ));
        assert!(matches!(
            Challenges::new(&["has space".into()], None),
            Err(HardeningError::InvalidScope(_))
        ));
        assert!(matches!(
            Challenges::new(&["quo\"te".into()], None),
            Err(HardeningError::InvalidScope(_))
        ));
    }
}
