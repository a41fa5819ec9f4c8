//! Who a request is from once a credential proved it: the [`Principal`] the hardening attaches
//! to a request and a handler reads from its context. Kept apart from the authenticators, so a
//! build without the `server` feature (a client's callback handler) still names it.

use std::fmt;
use std::sync::Arc;

/// The claims of a validated token, as the issuer sent them.
pub type Claims = serde_json::Map<String, serde_json::Value>;

/// What a credential proved: who the caller is, what it may do and, for a token that carries
/// them (a JWT), its validated claims. Cheap to clone: every part is shared.
#[derive(Clone, PartialEq, Eq)]
pub struct Principal {
    /// Who the caller is: the token's subject, or the name a static token was given.
    pub subject: Arc<str>,
    /// The scopes the credential grants.
    pub scopes: Arc<[String]>,
    claims: Option<Arc<Claims>>,
}

impl Principal {
    /// A principal without claims: `subject` granted `scopes`.
    pub fn new(subject: impl Into<Arc<str>>, scopes: impl IntoIterator<Item = String>) -> Self {
        Self {
            subject: subject.into(),
            scopes: scopes.into_iter().collect(),
            claims: None,
        }
    }

    /// The same principal, carrying the claims of the token that proved it.
    #[must_use]
    pub fn with_claims(mut self, claims: Claims) -> Self {
        self.claims = Some(Arc::new(claims));
        self
    }

    /// Whether every scope in `required` was granted.
    pub fn has_scopes(&self, required: &[String]) -> bool {
        required.iter().all(|scope| self.scopes.contains(scope))
    }

    /// The validated claims, when the credential was a token that carries claims; `None` for a
    /// static credential.
    pub fn claims(&self) -> Option<&Claims> {
        self.claims.as_deref()
    }

    /// One validated claim (`email`, `azp`, `client_id`…), when there is one by that name.
    pub fn claim(&self, name: &str) -> Option<&serde_json::Value> {
        self.claims()?.get(name)
    }
}

/// Subjects are identifiers, not secrets, but a `Debug` print should never grow a token field by
/// accident, so this one is written by hand, and names only how many claims there are.
impl fmt::Debug for Principal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Principal")
            .field("subject", &self.subject)
            .field("scopes", &self.scopes)
            .field("claims", &self.claims.as_ref().map(|claims| claims.len()))
            .finish()
    }
}
