//! OAuth 2.1 for an MCP client, as the MCP authorization spec asks: on a 401/403 the server's
//! protected-resource metadata (RFC 9728, from the challenge's `resource_metadata` or the
//! well-known paths) names its authorization server; that server's metadata (RFC 8414, then
//! OpenID discovery) is fetched and its `issuer` checked; the client is identified by a
//! pre-registered credential, a client ID metadata document, or dynamic registration
//! (RFC 7591), keyed by issuer so credentials never travel to another server; then the
//! authorization code grant with PKCE S256 (the user-interaction step is a [`UserInteraction`]
//! of the caller's; `state` and RFC 9207's `iss` are checked), or client credentials. Every
//! authorization and token request names the resource (RFC 8707) exactly as its metadata
//! published it. Tokens live in a [`TokenStore`] (in memory by default), are refreshed before
//! they expire or when the server refuses them, and a 403 `insufficient_scope` asks for the
//! union of what was granted and what was challenged.
//!
//! The `oauth2` crate builds the authorization URL and PKCE pair and performs the token
//! grants (code, refresh, client credentials) with their client authentication; discovery,
//! registration, the metadata checks and the step-up rules are written here.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use http::HeaderValue;
use oauth2::basic::BasicClient;
use oauth2::{
    AuthType, AuthUrl, AuthorizationCode, ClientId, ClientSecret, CsrfToken, PkceCodeChallenge,
    RedirectUrl, RefreshToken, Scope, TokenResponse, TokenUrl,
};
use protocols_runtime::method::ClientError;
use protocols_runtime::quote::quote;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
pub use url::Url;

use super::error::{Challenge, HttpError};
use super::http::{AuthFuture, Authorizer};

/// Why authorization failed.
#[derive(Debug, thiserror::Error)]
pub enum OAuthError {
    /// The server publishes no protected-resource metadata.
    #[error("no protected-resource metadata: {0}")]
    NoResourceMetadata(String),
    /// The protected-resource metadata names another resource than this server.
    #[error("the protected-resource metadata names resource {found}, not this server ({server})")]
    ResourceMismatch {
        /// The resource the metadata names.
        found: String,
        /// The server this client talks to.
        server: String,
    },
    /// The authorization server publishes no metadata.
    #[error("no authorization-server metadata for {0}")]
    NoServerMetadata(String),
    /// The authorization-server metadata names another issuer than the one asked for.
    #[error("the authorization-server metadata names issuer {found}, not {expected}")]
    IssuerMismatch {
        /// The issuer the metadata names.
        found: String,
        /// The issuer asked for.
        expected: String,
    },
    #[error(
        "no way to identify this client to {0}: no pre-registration, no client ID metadata document, no registration endpoint"
    )]
    /// The client has no way to identify itself to the authorization server.
    NoClientIdentity(String),
    /// Dynamic client registration failed.
    #[error("dynamic client registration failed: {0}")]
    Registration(String),
    /// The user-interaction step failed.
    #[error("the user-interaction step failed: {0}")]
    Interaction(String),
    /// The authorization response failed a check (state, issuer, error).
    #[error("the authorization response failed a check: {0}")]
    AuthorizationResponse(String),
    /// The token request failed.
    #[error("the token request failed: {0}")]
    Token(String),
    /// A URL is malformed.
    #[error("a URL is malformed: {0}")]
    Url(String),
}

impl From<OAuthError> for ClientError {
    fn from(error: OAuthError) -> Self {
        Self::Transport(Box::new(error))
    }
}

/// Tokens for one resource, with what they were obtained from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tokens {
    /// The bearer token sent with each request.
    pub access_token: String,
    /// The token that obtains a new access token, if one was issued.
    pub refresh_token: Option<String>,
    /// The scopes granted (or, when the server did not say, requested), space-separated.
    pub scope: Option<String>,
    /// When the access token expires, if the server said.
    pub expires_at: Option<SystemTime>,
    /// The authorization server that issued them.
    pub issuer: String,
    /// The token endpoint a refresh goes to.
    pub token_endpoint: String,
}

/// How this client is known to one authorization server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RegisteredClient {
    /// The client id the authorization server knows this client by.
    pub client_id: String,
    /// The client secret, for a confidential client.
    pub client_secret: Option<String>,
    /// `client_secret_basic`, `client_secret_post` or `none`.
    pub token_endpoint_auth_method: Option<String>,
}

/// Where tokens (keyed by the MCP server's URL) and client registrations (keyed by issuer)
/// are kept between calls — and, for a store that persists, between runs.
pub trait TokenStore: Send + Sync + std::fmt::Debug {
    /// The tokens saved for `resource`, if any.
    fn tokens(&self, resource: &str) -> Option<Tokens>;
    /// Saves the tokens for `resource`, replacing any before.
    fn save_tokens(&self, resource: &str, tokens: Tokens);
    /// Drops the tokens of `resource` (they were refused).
    fn forget_tokens(&self, resource: &str);
    /// The registration saved for `issuer`, if any.
    fn client(&self, issuer: &str) -> Option<RegisteredClient>;
    /// Saves the registration with `issuer`.
    fn save_client(&self, issuer: &str, client: RegisteredClient);
}

/// The default store: process memory.
#[derive(Debug, Default)]
pub struct MemoryTokenStore {
    tokens: Mutex<HashMap<String, Tokens>>,
    clients: Mutex<HashMap<String, RegisteredClient>>,
}

impl TokenStore for MemoryTokenStore {
    fn tokens(&self, resource: &str) -> Option<Tokens> {
        self.tokens.lock().ok()?.get(resource).cloned()
    }
    fn save_tokens(&self, resource: &str, tokens: Tokens) {
        if let Ok(mut all) = self.tokens.lock() {
            all.insert(resource.to_owned(), tokens);
        }
    }
    fn forget_tokens(&self, resource: &str) {
        if let Ok(mut all) = self.tokens.lock() {
            all.remove(resource);
        }
    }
    fn client(&self, issuer: &str) -> Option<RegisteredClient> {
        self.clients.lock().ok()?.get(issuer).cloned()
    }
    fn save_client(&self, issuer: &str, client: RegisteredClient) {
        if let Ok(mut all) = self.clients.lock() {
            all.insert(issuer.to_owned(), client);
        }
    }
}

/// The step where a person authorizes: show (or open) `authorization_url`, and return the URL
/// the authorization server redirected the browser to (it carries `code`, `state`, `iss`).
pub trait UserInteraction: Send + Sync + std::fmt::Debug {
    /// Shows `authorization_url` to the user and returns the redirect URL the browser was sent to.
    fn authorize<'a>(
        &'a self,
        authorization_url: &'a Url,
    ) -> AuthFuture<'a, Result<Url, OAuthError>>;
}

/// Which grant obtains tokens.
#[derive(Debug, Clone)]
enum Grant {
    AuthorizationCode(Arc<dyn UserInteraction>),
    ClientCredentials(RegisteredClient),
}

/// How the client presents itself; build with [`OAuthConfig::authorization_code`] or
/// [`OAuthConfig::client_credentials`].
#[derive(Debug, Clone)]
pub struct OAuthConfig {
    grant: Grant,
    client_name: String,
    redirect_uri: String,
    client_metadata_url: Option<String>,
    pre_registered: Option<RegisteredClient>,
    offline_access: bool,
    store: Arc<dyn TokenStore>,
    http: Option<reqwest::Client>,
}

impl OAuthConfig {
    /// The authorization code grant with PKCE; `interaction` performs the user's step, and the
    /// authorization server sends the browser back to `redirect_uri`.
    pub fn authorization_code(
        client_name: impl Into<String>,
        redirect_uri: impl Into<String>,
        interaction: Arc<dyn UserInteraction>,
    ) -> Self {
        Self::with_grant(
            Grant::AuthorizationCode(interaction),
            client_name,
            redirect_uri,
        )
    }

    /// The client credentials grant (machine to machine), authenticating with `client_id` and
    /// `client_secret` at the token endpoint.
    pub fn client_credentials(
        client_id: impl Into<String>,
        client_secret: impl Into<String>,
    ) -> Self {
        let client = RegisteredClient {
            client_id: client_id.into(),
            client_secret: Some(client_secret.into()),
            token_endpoint_auth_method: None,
        };
        Self::with_grant(Grant::ClientCredentials(client), "", "")
    }

    fn with_grant(
        grant: Grant,
        client_name: impl Into<String>,
        redirect_uri: impl Into<String>,
    ) -> Self {
        Self {
            grant,
            client_name: client_name.into(),
            redirect_uri: redirect_uri.into(),
            client_metadata_url: None,
            pre_registered: None,
            offline_access: true,
            store: Arc::new(MemoryTokenStore::default()),
            http: None,
        }
    }

    /// Identify as this client ID metadata document URL wherever the authorization server
    /// supports them (instead of registering).
    #[must_use]
    pub fn client_metadata_url(mut self, url: impl Into<String>) -> Self {
        self.client_metadata_url = Some(url.into());
        self
    }

    /// Use credentials registered beforehand (no dynamic registration).
    #[must_use]
    pub fn pre_registered(
        mut self,
        client_id: impl Into<String>,
        client_secret: Option<String>,
    ) -> Self {
        self.pre_registered = Some(RegisteredClient {
            client_id: client_id.into(),
            client_secret,
            token_endpoint_auth_method: None,
        });
        self
    }

    /// Do not ask for `offline_access` (refresh tokens) even where the server offers it.
    #[must_use]
    pub fn without_offline_access(mut self) -> Self {
        self.offline_access = false;
        self
    }

    /// Keep tokens and registrations in `store`.
    #[must_use]
    pub fn store(mut self, store: Arc<dyn TokenStore>) -> Self {
        self.store = store;
        self
    }

    /// Send discovery, registration and token requests through `http` (it must not follow
    /// redirects).
    #[must_use]
    pub fn http_client(mut self, http: reqwest::Client) -> Self {
        self.http = Some(http);
        self
    }
}

/// Protected-resource metadata (RFC 9728), the fields a client reads.
#[derive(Debug, Clone, Deserialize)]
struct ResourceMetadata {
    resource: String,
    #[serde(default)]
    authorization_servers: Vec<String>,
    #[serde(default)]
    scopes_supported: Option<Vec<String>>,
}

/// Authorization-server metadata (RFC 8414 / OpenID), the fields a client reads.
#[derive(Debug, Clone, Deserialize)]
struct ServerMetadata {
    issuer: String,
    authorization_endpoint: Option<String>,
    token_endpoint: String,
    registration_endpoint: Option<String>,
    #[serde(default)]
    scopes_supported: Option<Vec<String>>,
    #[serde(default)]
    token_endpoint_auth_methods_supported: Option<Vec<String>>,
    #[serde(default)]
    client_id_metadata_document_supported: bool,
    #[serde(default)]
    authorization_response_iss_parameter_supported: bool,
}

/// What one discovery found.
#[derive(Debug)]
struct Discovered {
    /// The resource identifier exactly as published (the `resource` parameter's value).
    resource: String,
    resource_scopes: Option<Vec<String>>,
    server: ServerMetadata,
}

/// An OAuth client for one MCP server URL; give it to
/// [`HttpOptions::authorizer`](super::HttpOptions::authorizer).
#[derive(Debug)]
pub struct OAuth {
    config: OAuthConfig,
    http: reqwest::Client,
    /// The scopes last asked for, so a step-up adds to them (SEP-2350).
    requested: Mutex<Option<String>>,
    /// The server URL tokens are stored under, once a challenge named it.
    resource_key: Mutex<Option<String>>,
}

impl OAuth {
    /// An OAuth client with this configuration and nothing obtained yet.
    pub fn new(config: OAuthConfig) -> Self {
        let http = config.http.clone().unwrap_or_else(|| {
            reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .timeout(Duration::from_secs(30))
                .build()
                .unwrap_or_default()
        });
        Self {
            config,
            http,
            requested: Mutex::new(None),
            resource_key: Mutex::new(None),
        }
    }

    fn key(&self) -> Option<String> {
        self.resource_key.lock().ok()?.clone()
    }

    /// The tokens held for the server, refreshed first when they have expired.
    async fn current_tokens(&self) -> Option<Tokens> {
        let key = self.key()?;
        let tokens = self.config.store.tokens(&key)?;
        let expired = tokens
            .expires_at
            .is_some_and(|at| at <= SystemTime::now() + Duration::from_secs(5));
        if !expired {
            return Some(tokens);
        }
        match self.refresh(&key, &tokens).await {
            Ok(fresh) => Some(fresh),
            Err(error) => {
                tracing::debug!(%error, "refreshing an expired token failed");
                self.config.store.forget_tokens(&key);
                None
            }
        }
    }

    async fn get_json(&self, url: &str) -> Option<Value> {
        let response = self
            .http
            .get(url)
            .header(http::header::ACCEPT, "application/json")
            .send()
            .await
            .ok()?;
        if !response.status().is_success() {
            return None;
        }
        response.json().await.ok()
    }

    /// RFC 9728: the challenge's `resource_metadata`, else the path-aware then the root
    /// well-known URL of the server.
    async fn resource_metadata(
        &self,
        challenge: Option<&Challenge>,
        server: &Url,
    ) -> Result<ResourceMetadata, OAuthError> {
        let mut candidates = Vec::new();
        if let Some(url) = challenge.and_then(Challenge::resource_metadata) {
            candidates.push(url.to_owned());
        }
        let path = server.path().trim_end_matches('/');
        let origin = origin(server);
        if !path.is_empty() {
            candidates.push(format!(
                "{origin}/.well-known/oauth-protected-resource{path}"
            ));
        }
        candidates.push(format!("{origin}/.well-known/oauth-protected-resource"));
        for candidate in &candidates {
            if let Some(value) = self.get_json(candidate).await
                && let Ok(metadata) = serde_json::from_value::<ResourceMetadata>(value)
            {
                return Ok(metadata);
            }
        }
        Err(OAuthError::NoResourceMetadata(quote(server).to_string()))
    }

    /// RFC 8414 then OpenID discovery for `issuer`; the metadata's `issuer` must be `issuer`.
    async fn server_metadata(&self, issuer: &str) -> Result<ServerMetadata, OAuthError> {
        let url = Url::parse(issuer).map_err(|_| OAuthError::Url(quote(issuer).to_string()))?;
        let origin = origin(&url);
        let path = url.path().trim_end_matches('/');
        let candidates = if path.is_empty() {
            vec![
                format!("{origin}/.well-known/oauth-authorization-server"),
                format!("{origin}/.well-known/openid-configuration"),
            ]
        } else {
            vec![
                format!("{origin}/.well-known/oauth-authorization-server{path}"),
                format!("{origin}/.well-known/openid-configuration{path}"),
                format!("{origin}{path}/.well-known/openid-configuration"),
            ]
        };
        for candidate in &candidates {
            let Some(value) = self.get_json(candidate).await else {
                continue;
            };
            let Ok(metadata) = serde_json::from_value::<ServerMetadata>(value) else {
                continue;
            };
            if metadata.issuer != issuer {
                return Err(OAuthError::IssuerMismatch {
                    found: quote(&metadata.issuer).to_string(),
                    expected: quote(issuer).to_string(),
                });
            }
            return Ok(metadata);
        }
        Err(OAuthError::NoServerMetadata(quote(issuer).to_string()))
    }

    async fn discover(
        &self,
        challenge: Option<&Challenge>,
        server: &Url,
    ) -> Result<Discovered, OAuthError> {
        let resource = self.resource_metadata(challenge, server).await?;
        if !resource_covers(&resource.resource, server) {
            return Err(OAuthError::ResourceMismatch {
                found: quote(&resource.resource).to_string(),
                server: quote(server).to_string(),
            });
        }
        let issuer = resource
            .authorization_servers
            .first()
            .ok_or_else(|| OAuthError::NoServerMetadata("(none named)".to_owned()))?;
        let metadata = self.server_metadata(issuer).await?;
        Ok(Discovered {
            resource: resource.resource,
            resource_scopes: resource.scopes_supported,
            server: metadata,
        })
    }

    /// The scopes to ask for: the challenge's, else the resource's `scopes_supported`, joined
    /// with what was asked before on a step-up, plus `offline_access` where the server offers
    /// it and this client wants refresh tokens.
    fn scopes(
        &self,
        challenge: Option<&Challenge>,
        found: &Discovered,
        step_up: bool,
    ) -> Vec<String> {
        let mut scopes: Vec<String> = Vec::new();
        let add = |scopes: &mut Vec<String>, scope: &str| {
            if !scope.is_empty() && !scopes.iter().any(|known| known == scope) {
                scopes.push(scope.to_owned());
            }
        };
        if step_up && let Some(prior) = self.requested.lock().ok().and_then(|prior| prior.clone()) {
            prior.split(' ').for_each(|scope| add(&mut scopes, scope));
        }
        match challenge.and_then(Challenge::scope) {
            Some(challenged) => challenged
                .split(' ')
                .for_each(|scope| add(&mut scopes, scope)),
            None => {
                if let Some(supported) = &found.resource_scopes {
                    supported.iter().for_each(|scope| add(&mut scopes, scope));
                }
            }
        }
        let wants_refresh = self.config.offline_access
            && matches!(self.config.grant, Grant::AuthorizationCode(_))
            && !scopes.is_empty();
        if wants_refresh
            && found
                .server
                .scopes_supported
                .as_ref()
                .is_some_and(|supported| supported.iter().any(|scope| scope == "offline_access"))
        {
            add(&mut scopes, "offline_access");
        }
        scopes
    }

    /// How this client is known to the server: stored, pre-registered, a metadata document,
    /// or registered now.
    async fn identity(&self, metadata: &ServerMetadata) -> Result<RegisteredClient, OAuthError> {
        if let Some(client) = self.config.store.client(&metadata.issuer) {
            return Ok(client);
        }
        if let Some(client) = &self.config.pre_registered {
            return Ok(client.clone());
        }
        if metadata.client_id_metadata_document_supported
            && let Some(url) = &self.config.client_metadata_url
        {
            return Ok(RegisteredClient {
                client_id: url.clone(),
                client_secret: None,
                token_endpoint_auth_method: Some("none".to_owned()),
            });
        }
        let Some(endpoint) = &metadata.registration_endpoint else {
            return Err(OAuthError::NoClientIdentity(
                quote(&metadata.issuer).to_string(),
            ));
        };
        let client = self.register(endpoint, metadata).await?;
        self.config
            .store
            .save_client(&metadata.issuer, client.clone());
        Ok(client)
    }

    /// RFC 7591 dynamic client registration.
    async fn register(
        &self,
        endpoint: &str,
        metadata: &ServerMetadata,
    ) -> Result<RegisteredClient, OAuthError> {
        let supported = metadata
            .token_endpoint_auth_methods_supported
            .clone()
            .unwrap_or_else(|| vec!["client_secret_basic".to_owned()]);
        let method = ["none", "client_secret_basic", "client_secret_post"]
            .into_iter()
            .find(|method| supported.iter().any(|known| known == method))
            .unwrap_or("client_secret_basic");
        let body = json!({
            "client_name": self.config.client_name,
            "redirect_uris": [self.config.redirect_uri],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": method,
            "application_type": "native",
        });
        let response = self
            .http
            .post(endpoint)
            .json(&body)
            .send()
            .await
            .map_err(|error| OAuthError::Registration(error.to_string()))?;
        if !response.status().is_success() {
            return Err(OAuthError::Registration(format!(
                "HTTP {}",
                response.status()
            )));
        }
        let registered: Value = response
            .json()
            .await
            .map_err(|error| OAuthError::Registration(error.to_string()))?;
        let client_id = registered
            .get("client_id")
            .and_then(Value::as_str)
            .ok_or_else(|| OAuthError::Registration("the answer names no client_id".to_owned()))?;
        Ok(RegisteredClient {
            client_id: client_id.to_owned(),
            client_secret: registered
                .get("client_secret")
                .and_then(Value::as_str)
                .map(str::to_owned),
            token_endpoint_auth_method: registered
                .get("token_endpoint_auth_method")
                .and_then(Value::as_str)
                .map(str::to_owned),
        })
    }

    /// Runs the configured grant and stores what it returns.
    async fn obtain(
        &self,
        key: &str,
        found: &Discovered,
        scopes: Vec<String>,
    ) -> Result<Tokens, OAuthError> {
        let metadata = &found.server;
        let (client, response) = match &self.config.grant {
            Grant::ClientCredentials(client) => {
                let response = self.client_credentials(client, found, &scopes).await?;
                (client.clone(), response)
            }
            Grant::AuthorizationCode(interaction) => {
                let client = self.identity(metadata).await?;
                let response = self
                    .authorization_code(interaction.as_ref(), &client, found, &scopes)
                    .await?;
                (client, response)
            }
        };
        let _ = client;
        if let Ok(mut requested) = self.requested.lock() {
            *requested = (!scopes.is_empty()).then(|| scopes.join(" "));
        }
        let tokens = tokens_from(&response, metadata, &scopes);
        self.config.store.save_tokens(key, tokens.clone());
        Ok(tokens)
    }

    async fn client_credentials(
        &self,
        client: &RegisteredClient,
        found: &Discovered,
        scopes: &[String],
    ) -> Result<oauth2::basic::BasicTokenResponse, OAuthError> {
        let oauth = token_client(client, &found.server)?;
        let mut request = oauth
            .exchange_client_credentials()
            .add_extra_param("resource", found.resource.clone());
        for scope in scopes {
            request = request.add_scope(Scope::new(scope.clone()));
        }
        request
            .request_async(&self.http)
            .await
            .map_err(|error| OAuthError::Token(describe(&error)))
    }

    async fn authorization_code(
        &self,
        interaction: &dyn UserInteraction,
        client: &RegisteredClient,
        found: &Discovered,
        scopes: &[String],
    ) -> Result<oauth2::basic::BasicTokenResponse, OAuthError> {
        let metadata = &found.server;
        let authorize = metadata
            .authorization_endpoint
            .clone()
            .ok_or_else(|| OAuthError::NoServerMetadata("no authorization_endpoint".to_owned()))?;
        let redirect = RedirectUrl::new(self.config.redirect_uri.clone())
            .map_err(|_| OAuthError::Url(quote(&self.config.redirect_uri).to_string()))?;
        let oauth = token_client(client, metadata)?
            .set_auth_uri(
                AuthUrl::new(authorize.clone())
                    .map_err(|_| OAuthError::Url(quote(&authorize).to_string()))?,
            )
            .set_redirect_uri(redirect);
        let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
        let mut request = oauth
            .authorize_url(CsrfToken::new_random)
            .set_pkce_challenge(challenge)
            .add_extra_param("resource", found.resource.clone());
        for scope in scopes {
            request = request.add_scope(Scope::new(scope.clone()));
        }
        let (url, state) = request.url();
        let returned = interaction.authorize(&url).await?;
        let code = check_redirect(&returned, state.secret(), metadata)?;
        oauth
            .exchange_code(AuthorizationCode::new(code))
            .set_pkce_verifier(verifier)
            .add_extra_param("resource", found.resource.clone())
            .request_async(&self.http)
            .await
            .map_err(|error| OAuthError::Token(describe(&error)))
    }

    async fn refresh(&self, key: &str, tokens: &Tokens) -> Result<Tokens, OAuthError> {
        let refresh = tokens
            .refresh_token
            .clone()
            .ok_or_else(|| OAuthError::Token("no refresh token".to_owned()))?;
        let metadata = self.server_metadata(&tokens.issuer).await?;
        let client = match &self.config.grant {
            Grant::ClientCredentials(client) => client.clone(),
            Grant::AuthorizationCode(_) => self.identity(&metadata).await?,
        };
        let resource = self.config.store.tokens(key).map(|_| key.to_owned());
        let oauth = token_client(&client, &metadata)?;
        let refresh_token = RefreshToken::new(refresh.clone());
        let mut request = oauth.exchange_refresh_token(&refresh_token);
        if let Some(resource) = resource {
            request = request.add_extra_param("resource", resource);
        }
        let response = request
            .request_async(&self.http)
            .await
            .map_err(|error| OAuthError::Token(describe(&error)))?;
        let granted: Vec<String> = tokens
            .scope
            .as_deref()
            .map(|scope| scope.split(' ').map(str::to_owned).collect())
            .unwrap_or_default();
        let mut fresh = tokens_from(&response, &metadata, &granted);
        fresh.refresh_token = fresh.refresh_token.or(Some(refresh));
        self.config.store.save_tokens(key, fresh.clone());
        Ok(fresh)
    }

    async fn answer(&self, refusal: &HttpError, resource: &str) -> Result<bool, OAuthError> {
        let server =
            Url::parse(resource).map_err(|_| OAuthError::Url(quote(resource).to_string()))?;
        let key = server.to_string();
        if let Ok(mut current) = self.resource_key.lock() {
            *current = Some(key.clone());
        }
        let challenge = refusal.challenge();
        let held = self.config.store.tokens(&key);
        let step_up = refusal.status.as_u16() == 403
            || challenge.and_then(Challenge::error) == Some("insufficient_scope");
        if step_up
            && let (Some(held), Some(wanted)) = (&held, challenge.and_then(Challenge::scope))
            && covers(held.scope.as_deref(), wanted)
        {
            // The token already carries every scope asked for: asking again cannot help.
            return Ok(false);
        }
        let found = self.discover(challenge, &server).await?;
        if let Some(held) = &held {
            if held.issuer != found.server.issuer {
                // The resource moved to another authorization server: nothing of the old one's
                // is presented to the new one.
                self.config.store.forget_tokens(&key);
            } else if !step_up && held.refresh_token.is_some() {
                match self.refresh(&key, held).await {
                    Ok(_) => return Ok(true),
                    Err(error) => tracing::debug!(%error, "refresh refused; authorizing again"),
                }
            }
        }
        let scopes = self.scopes(challenge, &found, step_up);
        self.obtain(&key, &found, scopes).await?;
        Ok(true)
    }
}

impl Authorizer for OAuth {
    fn authorization(&self) -> AuthFuture<'_, Option<HeaderValue>> {
        Box::pin(async move {
            let tokens = self.current_tokens().await?;
            HeaderValue::from_str(&format!("Bearer {}", tokens.access_token)).ok()
        })
    }

    fn challenged<'a>(
        &'a self,
        refusal: &'a HttpError,
        resource: &'a str,
    ) -> AuthFuture<'a, Result<bool, ClientError>> {
        Box::pin(async move {
            self.answer(refusal, resource)
                .await
                .map_err(ClientError::from)
        })
    }
}

/// An `oauth2` client for the token endpoint, authenticating as `client` says.
fn token_client(
    client: &RegisteredClient,
    metadata: &ServerMetadata,
) -> Result<
    oauth2::basic::BasicClient<
        oauth2::EndpointNotSet,
        oauth2::EndpointNotSet,
        oauth2::EndpointNotSet,
        oauth2::EndpointNotSet,
        oauth2::EndpointSet,
    >,
    OAuthError,
> {
    let token_url = TokenUrl::new(metadata.token_endpoint.clone())
        .map_err(|_| OAuthError::Url(quote(&metadata.token_endpoint).to_string()))?;
    let mut oauth =
        BasicClient::new(ClientId::new(client.client_id.clone())).set_token_uri(token_url);
    if let Some(secret) = &client.client_secret {
        oauth = oauth.set_client_secret(ClientSecret::new(secret.clone()));
    }
    let method = client.token_endpoint_auth_method.as_deref().or_else(|| {
        metadata
            .token_endpoint_auth_methods_supported
            .as_ref()
            .and_then(|supported| supported.first())
            .map(String::as_str)
    });
    let auth_type = match method {
        Some("client_secret_post" | "none") => AuthType::RequestBody,
        _ => AuthType::BasicAuth,
    };
    Ok(oauth.set_auth_type(auth_type))
}

/// The code from the redirect, once its `error`, `state` and `iss` (RFC 9207) pass.
fn check_redirect(
    returned: &Url,
    state: &str,
    metadata: &ServerMetadata,
) -> Result<String, OAuthError> {
    let query: HashMap<String, String> = returned.query_pairs().into_owned().collect();
    if let Some(error) = query.get("error") {
        return Err(OAuthError::AuthorizationResponse(format!(
            "the server answered {}",
            quote(error)
        )));
    }
    if query.get("state").map(String::as_str) != Some(state) {
        return Err(OAuthError::AuthorizationResponse(
            "the state does not match".to_owned(),
        ));
    }
    match query.get("iss") {
        // Compared as strings, as RFC 9207 says: no URL normalization.
        Some(iss) if iss != &metadata.issuer => {
            return Err(OAuthError::AuthorizationResponse(format!(
                "iss {} is not the issuer {}",
                quote(iss),
                quote(&metadata.issuer)
            )));
        }
        None if metadata.authorization_response_iss_parameter_supported => {
            return Err(OAuthError::AuthorizationResponse(
                "the server promised iss and sent none".to_owned(),
            ));
        }
        _ => {}
    }
    query
        .get("code")
        .cloned()
        .ok_or_else(|| OAuthError::AuthorizationResponse("no code".to_owned()))
}

fn tokens_from(
    response: &oauth2::basic::BasicTokenResponse,
    metadata: &ServerMetadata,
    asked: &[String],
) -> Tokens {
    let granted = response
        .scopes()
        .map(|scopes| {
            scopes
                .iter()
                .map(|scope| scope.to_string())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .or_else(|| (!asked.is_empty()).then(|| asked.join(" ")));
    Tokens {
        access_token: response.access_token().secret().clone(),
        refresh_token: response.refresh_token().map(|token| token.secret().clone()),
        scope: granted,
        expires_at: response
            .expires_in()
            .map(|lifetime| SystemTime::now() + lifetime),
        issuer: metadata.issuer.clone(),
        token_endpoint: metadata.token_endpoint.clone(),
    }
}

/// Whether `granted` (space-separated) includes every scope of `wanted`.
fn covers(granted: Option<&str>, wanted: &str) -> bool {
    let granted: Vec<&str> = granted.unwrap_or_default().split(' ').collect();
    wanted
        .split(' ')
        .filter(|scope| !scope.is_empty())
        .all(|scope| granted.contains(&scope))
}

/// `scheme://host[:port]`.
fn origin(url: &Url) -> String {
    url.origin().ascii_serialization()
}

/// Whether the published resource identifier covers the server URL: the same origin, and the
/// server's path within the resource's.
fn resource_covers(resource: &str, server: &Url) -> bool {
    let Ok(resource) = Url::parse(resource) else {
        return false;
    };
    if resource.origin() != server.origin() {
        return false;
    }
    let prefix = resource.path().trim_end_matches('/');
    let path = server.path();
    path == prefix || path.starts_with(&format!("{prefix}/")) || prefix.is_empty()
}

fn describe<E: std::error::Error>(error: &E) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metadata(issuer: &str, iss_supported: bool) -> ServerMetadata {
        ServerMetadata {
            issuer: issuer.to_owned(),
            authorization_endpoint: None,
            token_endpoint: format!("{issuer}/token"),
            registration_endpoint: None,
            scopes_supported: None,
            token_endpoint_auth_methods_supported: None,
            client_id_metadata_document_supported: false,
            authorization_response_iss_parameter_supported: iss_supported,
        }
    }

    fn redirect(query: &str) -> Url {
        Url::parse(&format!("http://localhost:3000/callback?{query}")).unwrap()
    }

    #[test]
    fn the_redirect_must_carry_our_state_and_the_exact_issuer() {
        let server = metadata("http://as.test", true);
        assert_eq!(
            check_redirect(
                &redirect("code=c&state=s&iss=http%3A%2F%2Fas.test"),
                "s",
                &server
            )
            .unwrap(),
            "c"
        );
        assert!(
            check_redirect(
                &redirect("code=c&state=t&iss=http%3A%2F%2Fas.test"),
                "s",
                &server
            )
            .is_err()
        );
        assert!(
            check_redirect(
                &redirect("code=c&state=s&iss=http%3A%2F%2Fas.test%2F"),
                "s",
                &server
            )
            .is_err()
        );
        assert!(check_redirect(&redirect("code=c&state=s"), "s", &server).is_err());
        let silent = metadata("http://as.test", false);
        assert!(check_redirect(&redirect("code=c&state=s"), "s", &silent).is_ok());
        assert!(
            check_redirect(
                &redirect("code=c&state=s&iss=http%3A%2F%2Fevil"),
                "s",
                &silent
            )
            .is_err()
        );
    }

    #[test]
    fn a_resource_covers_only_its_own_origin_and_path() {
        let server = Url::parse("http://localhost:9/mcp").unwrap();
        assert!(resource_covers("http://localhost:9/mcp", &server));
        assert!(resource_covers("http://localhost:9", &server));
        assert!(!resource_covers("https://evil.example.com/mcp", &server));
        assert!(!resource_covers("http://localhost:9/other", &server));
        assert!(!resource_covers("http://localhost:9/mc", &server));
    }

    #[test]
    fn a_step_up_is_pointless_when_every_scope_is_held() {
        assert!(covers(Some("a b"), "b"));
        assert!(!covers(Some("a"), "a b"));
        assert!(!covers(None, "a"));
    }
}
