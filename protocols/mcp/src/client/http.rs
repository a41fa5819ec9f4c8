//! Streamable HTTP, every revision: sessions (`initialize`, `Mcp-Session-Id`, the version
//! header from 2025-06-18, the standalone `GET` stream) and the stateless 2026-07-28 revision
//! (`_meta` and the SEP-2243 headers on every request, `input_required` answered through the
//! callbacks and retried). An SSE answer that ends before its response is resumed with `GET` +
//! `Last-Event-ID` after the server's `retry`; a session that answers 404 is opened again when
//! the caller opted in; a 401/403 goes to the [`Authorizer`] once per kind before it surfaces
//! as an [`HttpError`] with its status and challenge.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use futures::StreamExt as _;
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use protocols_runtime::jsonrpc::to_raw;
use protocols_runtime::method::{ClientError, RpcClient};
use protocols_runtime::sse::SseDecoder;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use super::callbacks::Callbacks;
use super::error::{HttpError, failure, transport_error};
use super::headers::{ToolHeaders, request_headers, screen_tools};
use super::{MAX_EVENT_BYTES, client_info, envelope, outcome};
use crate::conventions::{
    META_CLIENT_CAPABILITIES, META_CLIENT_INFO, META_PROTOCOL_VERSION, SESSION_HEADER,
    VERSION_HEADER,
};
use crate::errors::codes;
use crate::generated::{v2025_11_25, v2026_07_28};
use crate::revision::Revision;

const LAST_EVENT_ID: HeaderName = HeaderName::from_static("last-event-id");

/// How long `initialize` waits for the standalone stream's answer before it returns anyway.
const STANDALONE_HEAD_WAIT: Duration = Duration::from_secs(5);

/// A future borrowing what it was called on.
pub type AuthFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What answers a server's 401 or 403: the [`OAuth`](super::oauth::OAuth) client, or anything
/// else that can put an `Authorization` header on a request.
pub trait Authorizer: Send + Sync + std::fmt::Debug {
    /// The `Authorization` value to send now, if there is one.
    fn authorization(&self) -> AuthFuture<'_, Option<HeaderValue>>;

    /// The server at `resource` refused with `refusal` (401 or 403). Obtain credentials that
    /// answer it and return `true` to have the request sent again, or `false` to give up.
    ///
    /// # Errors
    /// Obtaining credentials failed.
    fn challenged<'a>(
        &'a self,
        refusal: &'a HttpError,
        resource: &'a str,
    ) -> AuthFuture<'a, Result<bool, ClientError>>;
}

/// How an [`HttpClient`] behaves; every field has a documented default.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    http: Option<reqwest::Client>,
    headers: HeaderMap,
    request_timeout: Duration,
    reinitialize_on_404: bool,
    max_resumptions: u32,
    default_retry: Duration,
    standalone_stream: bool,
    max_input_rounds: u32,
    client_name: String,
    client_version: String,
    authorizer: Option<Arc<dyn Authorizer>>,
}

impl Default for HttpOptions {
    fn default() -> Self {
        Self {
            http: None,
            headers: HeaderMap::new(),
            request_timeout: Duration::from_secs(60),
            reinitialize_on_404: false,
            max_resumptions: 5,
            default_retry: Duration::from_secs(1),
            standalone_stream: true,
            max_input_rounds: 8,
            client_name: "protocols-mcp".to_owned(),
            client_version: env!("CARGO_PKG_VERSION").to_owned(),
            authorizer: None,
        }
    }
}

impl HttpOptions {
    /// Sends through `http` (its timeouts, proxies, root certificates, connection pool)
    /// instead of a default `reqwest::Client`.
    #[must_use]
    pub fn http_client(mut self, http: reqwest::Client) -> Self {
        self.http = Some(http);
        self
    }

    /// A header sent on every request (e.g. a fixed `Authorization`).
    #[must_use]
    pub fn header(mut self, name: HeaderName, value: HeaderValue) -> Self {
        self.headers.insert(name, value);
        self
    }

    /// How long one call may take, resumptions and `input_required` rounds included (60 s).
    #[must_use]
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// When the server answers 404 to a request carrying the session id (the session is gone),
    /// open a new session with the same `initialize` and send the request again, once. Off by
    /// default: a new session loses whatever the server kept in the old one.
    #[must_use]
    pub fn reinitialize_on_404(mut self) -> Self {
        self.reinitialize_on_404 = true;
        self
    }

    /// How many times one answer's SSE stream is resumed before the call fails (5).
    #[must_use]
    pub fn max_resumptions(mut self, resumptions: u32) -> Self {
        self.max_resumptions = resumptions;
        self
    }

    /// How long to wait before resuming when the server named no `retry` (1 s).
    #[must_use]
    pub fn default_retry(mut self, retry: Duration) -> Self {
        self.default_retry = retry;
        self
    }

    /// Do not open the standalone `GET` stream after `initialize` (it is opened by default,
    /// so server requests and notifications sent outside any call are heard).
    #[must_use]
    pub fn without_standalone_stream(mut self) -> Self {
        self.standalone_stream = false;
        self
    }

    /// How the client names itself in `initialize` and in 2026-07-28's `_meta`.
    #[must_use]
    pub fn client_info(mut self, name: impl Into<String>, version: impl Into<String>) -> Self {
        self.client_name = name.into();
        self.client_version = version.into();
        self
    }

    /// Answers 401 and 403 with `authorizer` (for instance [`OAuth`](super::oauth::OAuth)).
    #[must_use]
    pub fn authorizer(mut self, authorizer: Arc<dyn Authorizer>) -> Self {
        self.authorizer = Some(authorizer);
        self
    }
}

/// What `connect` settled on.
#[derive(Debug, Clone)]
pub struct Connected {
    /// The revision every later request speaks.
    pub revision: Revision,
    /// The `server/discover` result (2026-07-28) or the `initialize` result.
    pub result: Value,
}

/// What the HTTP client remembers between calls.
#[derive(Debug, Default)]
struct State {
    session: Option<String>,
    revision: Option<Revision>,
    capabilities: Value,
    tools: HashMap<String, ToolHeaders>,
    standalone: Option<JoinHandle<()>>,
}

type Pending = Mutex<HashMap<i64, oneshot::Sender<Value>>>;

#[derive(Debug)]
struct Inner {
    http: reqwest::Client,
    url: String,
    options: HttpOptions,
    state: Mutex<State>,
    next_id: AtomicI64,
    pending: Pending,
    callbacks: Callbacks,
}

impl Drop for Inner {
    fn drop(&mut self) {
        if let Ok(state) = self.state.get_mut()
            && let Some(task) = state.standalone.take()
        {
            task.abort();
        }
    }
}

/// An MCP client over Streamable HTTP, for every revision. Calls made through it (directly
/// with [`HttpClient::request`], or through a generated `RemoteServer` proxy, since it
/// implements `RpcClient`) carry whatever the negotiated revision requires.
#[derive(Debug, Clone)]
pub struct HttpClient {
    inner: Arc<Inner>,
}

/// How one stream read ended.
enum StreamEnd {
    Answer(Value),
    Ended,
}

impl HttpClient {
    /// A client with the default options.
    pub fn new(url: impl Into<String>, callbacks: Callbacks) -> Self {
        Self::with_options(url, callbacks, HttpOptions::default())
    }

    /// A client of the server at `url`, answering its requests with `callbacks`, with these options.
    pub fn with_options(
        url: impl Into<String>,
        callbacks: Callbacks,
        options: HttpOptions,
    ) -> Self {
        let http = options.http.clone().unwrap_or_default();
        Self {
            inner: Arc::new(Inner {
                http,
                url: url.into(),
                options,
                state: Mutex::new(State::default()),
                next_id: AtomicI64::new(1),
                pending: Mutex::new(HashMap::new()),
                callbacks,
            }),
        }
    }

    /// What answers the server's requests to this client.
    pub fn callbacks(&self) -> &Callbacks {
        &self.inner.callbacks
    }

    /// The session the server assigned, once it has.
    pub fn session(&self) -> Option<String> {
        self.inner.state().session.clone()
    }

    /// The revision negotiated, once `connect` or `initialize` settled one.
    pub fn revision(&self) -> Option<Revision> {
        self.inner.state().revision
    }

    /// Settles a revision the way 2026-07-28 says a client that also speaks older revisions
    /// does: probe with `server/discover`; a server that lists 2026-07-28 is spoken to
    /// statelessly from then on, and any other answer (method not found, an HTTP error, a list
    /// without it) falls back to `initialize` offering 2025-11-25.
    ///
    /// # Errors
    /// Neither way reached an agreement, or the server could not be reached.
    pub async fn connect(&self, capabilities: Value) -> Result<Connected, ClientError> {
        match self.discover(capabilities.clone()).await {
            Ok(result) if lists(&result, Revision::V2026_07_28) => Ok(Connected {
                revision: Revision::V2026_07_28,
                result,
            }),
            Err(error) if is_auth_failure(&error) => Err(error),
            outcome => {
                if let Err(error) = &outcome {
                    tracing::debug!(
                        %error,
                        method = v2026_07_28::methods::SERVER_DISCOVER,
                        "discovery failed: falling back to initialize"
                    );
                }
                let result = self
                    .initialize(Revision::NEWEST_SESSION, capabilities)
                    .await?;
                let revision = self.revision().unwrap_or(Revision::NEWEST_SESSION);
                Ok(Connected { revision, result })
            }
        }
    }

    /// Opens the conversation at `revision`: for a session revision, `initialize` offering it
    /// with `capabilities`, then `notifications/initialized` and the standalone stream; for
    /// 2026-07-28, `server/discover` (every later request then carries `capabilities`).
    /// Returns the server's result.
    ///
    /// # Errors
    /// The server refused, answered a revision this client does not speak, or could not be
    /// reached.
    pub async fn initialize(
        &self,
        revision: Revision,
        capabilities: Value,
    ) -> Result<Value, ClientError> {
        if revision.is_stateless() {
            return self.discover(capabilities).await;
        }
        self.inner.open_session(revision, capabilities).await
    }

    /// `server/discover` at 2026-07-28; on -32022 naming a revision both sides speak, once more
    /// with it.
    async fn discover(&self, capabilities: Value) -> Result<Value, ClientError> {
        {
            let mut state = self.inner.state();
            state.revision = Some(Revision::V2026_07_28);
            state.capabilities = capabilities;
            state.session = None;
        }
        let first = self
            .request(v2026_07_28::methods::SERVER_DISCOVER, None)
            .await;
        let outcome = match first {
            Err(ClientError::Rejected(error))
                if error.code == codes::UNSUPPORTED_PROTOCOL_VERSION
                    && supported_in(&error.data).contains(&Revision::V2026_07_28) =>
            {
                self.request(v2026_07_28::methods::SERVER_DISCOVER, None)
                    .await
            }
            other => other,
        };
        if outcome.is_err() {
            self.inner.state().revision = None;
        }
        outcome
    }

    /// Ends the session (`DELETE`); 204 when there was none.
    ///
    /// # Errors
    /// The server could not be reached.
    pub async fn close(&self) -> Result<u16, ClientError> {
        let session = {
            let mut state = self.inner.state();
            if let Some(task) = state.standalone.take() {
                task.abort();
            }
            state.session.clone()
        };
        let Some(session) = session else {
            return Ok(204);
        };
        let mut request = self
            .inner
            .http
            .delete(&self.inner.url)
            .headers(self.inner.options.headers.clone())
            .header(SESSION_HEADER, session);
        if let Some(authorization) = self.inner.authorization().await {
            request = request.header(http::header::AUTHORIZATION, authorization);
        }
        let response = request.send().await.map_err(transport_error)?;
        Ok(response.status().as_u16())
    }

    /// One call with JSON params, answered as JSON: the revision's `_meta` and headers added,
    /// `input_required` rounds answered through the callbacks, a 2026-07-28 result without
    /// `resultType` read as `complete`.
    ///
    /// # Errors
    /// The server refused, or the call could not complete within the request timeout.
    pub async fn request(&self, method: &str, params: Option<Value>) -> Result<Value, ClientError> {
        self.request_with_headers(method, params, &HeaderMap::new())
            .await
    }

    /// [`HttpClient::request`] with `headers` added to this request only.
    ///
    /// # Errors
    /// As for [`HttpClient::request`].
    pub async fn request_with_headers(
        &self,
        method: &str,
        params: Option<Value>,
        headers: &HeaderMap,
    ) -> Result<Value, ClientError> {
        let timeout = self.inner.options.request_timeout;
        tokio::time::timeout(timeout, self.inner.request_rounds(method, params, headers))
            .await
            .map_err(|_| failure(format!("no answer to {method} within {timeout:?}")))?
    }

    /// A notification (no answer awaited beyond the server's acknowledgement).
    ///
    /// # Errors
    /// The server refused it or could not be reached.
    pub async fn notification(
        &self,
        method: &str,
        params: Option<Value>,
    ) -> Result<(), ClientError> {
        self.inner.send_notification(method, params).await
    }

    /// This client with `headers` added to every call made through the returned handle: give
    /// it to a generated `RemoteServer` proxy for per-request headers on typed calls.
    pub fn with_headers(&self, headers: HeaderMap) -> ScopedHeaders<'_> {
        ScopedHeaders {
            client: self,
            headers,
        }
    }
}

/// An [`HttpClient`] whose calls carry extra headers.
#[derive(Debug)]
pub struct ScopedHeaders<'a> {
    client: &'a HttpClient,
    headers: HeaderMap,
}

fn raw_params(params: Option<Box<RawValue>>) -> Option<Value> {
    params.and_then(|raw| serde_json::from_str(raw.get()).ok())
}

impl RpcClient for HttpClient {
    async fn call(
        &self,
        method: &'static str,
        params: Option<Box<RawValue>>,
    ) -> Result<Box<RawValue>, ClientError> {
        let result = self.request(method, raw_params(params)).await?;
        to_raw(&result).map_err(transport_error)
    }

    async fn notify(
        &self,
        method: &'static str,
        params: Option<Box<RawValue>>,
    ) -> Result<(), ClientError> {
        self.notification(method, raw_params(params)).await
    }
}

impl RpcClient for ScopedHeaders<'_> {
    async fn call(
        &self,
        method: &'static str,
        params: Option<Box<RawValue>>,
    ) -> Result<Box<RawValue>, ClientError> {
        let result = self
            .client
            .request_with_headers(method, raw_params(params), &self.headers)
            .await?;
        to_raw(&result).map_err(transport_error)
    }

    async fn notify(
        &self,
        method: &'static str,
        params: Option<Box<RawValue>>,
    ) -> Result<(), ClientError> {
        self.client.notification(method, raw_params(params)).await
    }
}

/// Whether a discover result lists `revision` among its `supportedVersions`.
fn lists(result: &Value, revision: Revision) -> bool {
    result
        .get("supportedVersions")
        .and_then(Value::as_array)
        .is_some_and(|versions| {
            versions
                .iter()
                .any(|v| v.as_str() == Some(revision.as_str()))
        })
}

/// The revisions a -32022 error's `data.supported` names that this client speaks.
fn supported_in(data: &Option<Value>) -> Vec<Revision> {
    data.as_ref()
        .and_then(|data| data.get("supported"))
        .and_then(Value::as_array)
        .map(|versions| {
            versions
                .iter()
                .filter_map(|v| v.as_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

fn is_auth_failure(error: &ClientError) -> bool {
    HttpError::of(error).is_some_and(|http| matches!(http.status.as_u16(), 401 | 403))
}

impl Inner {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic while holding the lock leaves plain data behind; keep using it.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn stateless(&self) -> bool {
        self.state().revision.is_some_and(Revision::is_stateless)
    }

    fn next_id(&self) -> i64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    async fn authorization(&self) -> Option<HeaderValue> {
        match &self.options.authorizer {
            Some(authorizer) => authorizer.authorization().await,
            None => None,
        }
    }

    async fn open_session(
        self: &Arc<Self>,
        revision: Revision,
        capabilities: Value,
    ) -> Result<Value, ClientError> {
        {
            let mut state = self.state();
            state.revision = None;
            state.session = None;
            state.capabilities = capabilities.clone();
            if let Some(task) = state.standalone.take() {
                task.abort();
            }
        }
        let params = json!({
            "protocolVersion": revision.as_str(),
            "capabilities": capabilities,
            "clientInfo": client_info(&self.options.client_name, &self.options.client_version),
        });
        let result = self
            .request_once(v2025_11_25::methods::INITIALIZE, Some(params))
            .await?;
        let negotiated = result
            .get("protocolVersion")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let negotiated = match negotiated.parse::<Revision>() {
            Ok(negotiated) if negotiated.has_initialize() => negotiated,
            _ => {
                return Err(failure(format!(
                    "the server answered initialize with protocol version {}, which this client does not speak",
                    protocols_runtime::quote::quote(negotiated)
                )));
            }
        };
        self.state().revision = Some(negotiated);
        self.send_notification(v2025_11_25::methods::NOTIFICATIONS_INITIALIZED, None)
            .await?;
        if self.options.standalone_stream && negotiated >= Revision::V2025_03_26 {
            let (answered, head) = tokio::sync::oneshot::channel();
            let task = tokio::spawn(standalone_stream(Arc::downgrade(self), answered));
            self.state().standalone = Some(task);
            // A server may send its requests outside any call, on this stream only, and drop
            // them while it is not open: the caller's first call must not race its opening.
            let _ = tokio::time::timeout(STANDALONE_HEAD_WAIT, head).await;
        }
        Ok(result)
    }

    async fn request_rounds(
        self: &Arc<Self>,
        method: &str,
        params: Option<Value>,
        headers: &HeaderMap,
    ) -> Result<Value, ClientError> {
        let mut params = params;
        for _ in 0..=self.options.max_input_rounds {
            let result = self.request_with(method, params.clone(), headers).await?;
            if !self.stateless() {
                return Ok(result);
            }
            match result.get("resultType").and_then(Value::as_str) {
                Some("input_required") => {
                    params = Some(self.fulfil(params, &result).await?);
                }
                _ => return Ok(complete(result)),
            }
        }
        Err(failure(format!(
            "{method} still asked for input after {} rounds",
            self.options.max_input_rounds
        )))
    }

    /// Answers every input request of an `input_required` result through the callbacks; the
    /// params to send again, with `inputResponses` and the server's `requestState` unchanged.
    async fn fulfil(&self, params: Option<Value>, result: &Value) -> Result<Value, ClientError> {
        let mut responses = Map::new();
        if let Some(requests) = result.get("inputRequests").and_then(Value::as_object) {
            for (key, request) in requests {
                let method = request
                    .get("method")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                let request_params = request.get("params").cloned().unwrap_or(Value::Null);
                let answer = self
                    .callbacks
                    .answer(method, request_params)
                    .await
                    .map_err(ClientError::Rejected)?;
                responses.insert(key.clone(), answer);
            }
        }
        let mut params = match params {
            Some(Value::Object(params)) => params,
            _ => Map::new(),
        };
        params.remove("requestState");
        params.insert("inputResponses".to_owned(), Value::Object(responses));
        if let Some(state) = result.get("requestState") {
            params.insert("requestState".to_owned(), state.clone());
        }
        Ok(Value::Object(params))
    }

    async fn request_with(
        self: &Arc<Self>,
        method: &str,
        params: Option<Value>,
        headers: &HeaderMap,
    ) -> Result<Value, ClientError> {
        self.request_scoped(method, params, headers).await
    }

    async fn request_once(
        self: &Arc<Self>,
        method: &str,
        params: Option<Value>,
    ) -> Result<Value, ClientError> {
        self.request_scoped(method, params, &HeaderMap::new()).await
    }

    async fn request_scoped(
        self: &Arc<Self>,
        method: &str,
        params: Option<Value>,
        extra: &HeaderMap,
    ) -> Result<Value, ClientError> {
        let id = self.next_id();
        let params = self.with_meta(params);
        let message = envelope(Some(id), method, params.as_ref());
        let (sender, receiver) = oneshot::channel();
        if let Ok(mut pending) = self.pending.lock() {
            pending.insert(id, sender);
        }
        let answer = self
            .exchange(
                method,
                params.as_ref(),
                &message,
                Some((id, receiver)),
                extra,
            )
            .await;
        if let Ok(mut pending) = self.pending.lock() {
            pending.remove(&id);
        }
        let answer = answer?.ok_or_else(|| failure(format!("no answer to {method}")))?;
        let mut result = outcome(&answer)?;
        if method == v2026_07_28::methods::TOOLS_LIST && self.stateless() {
            let tools = screen_tools(&mut result);
            self.state().tools.extend(tools);
        }
        Ok(result)
    }

    async fn send_notification(
        self: &Arc<Self>,
        method: &str,
        params: Option<Value>,
    ) -> Result<(), ClientError> {
        let params = self.with_meta(params);
        let message = envelope(None, method, params.as_ref());
        self.exchange(method, params.as_ref(), &message, None, &HeaderMap::new())
            .await
            .map(|_| ())
    }

    /// On 2026-07-28, the `_meta` every request carries (merged into what the caller put there);
    /// other revisions' params pass unchanged.
    fn with_meta(&self, params: Option<Value>) -> Option<Value> {
        let (revision, capabilities) = {
            let state = self.state();
            (state.revision, state.capabilities.clone())
        };
        if !revision.is_some_and(Revision::is_stateless) {
            return params;
        }
        let mut params = match params {
            Some(Value::Object(params)) => params,
            None | Some(Value::Null) => Map::new(),
            Some(other) => return Some(other),
        };
        let meta = params
            .entry("_meta")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Some(meta) = meta.as_object_mut() {
            meta.insert(
                META_PROTOCOL_VERSION.to_owned(),
                json!(Revision::V2026_07_28.as_str()),
            );
            meta.entry(META_CLIENT_INFO).or_insert_with(|| {
                client_info(&self.options.client_name, &self.options.client_version)
            });
            meta.entry(META_CLIENT_CAPABILITIES).or_insert_with(|| {
                if capabilities.is_object() {
                    capabilities
                } else {
                    json!({})
                }
            });
        }
        Some(Value::Object(params))
    }

    /// The headers a POST carries beyond the body's media types: the caller's, the session's,
    /// the revision's.
    fn post_headers(&self, method: &str, params: Option<&Value>, extra: &HeaderMap) -> HeaderMap {
        let mut headers = self.options.headers.clone();
        let state = self.state();
        if let Some(session) = state.session.as_deref()
            && let Ok(value) = HeaderValue::from_str(session)
        {
            headers.insert(SESSION_HEADER, value);
        }
        if let Some(revision) = state.revision
            && revision.has_version_header()
        {
            headers.insert(VERSION_HEADER, HeaderValue::from_static(revision.as_str()));
        }
        if state.revision.is_some_and(Revision::is_stateless) {
            headers.extend(request_headers(method, params, &state.tools));
        }
        drop(state);
        for (name, value) in extra {
            headers.insert(name.clone(), value.clone());
        }
        headers
    }

    /// Sends one message and reads its answer: the session reopened on 404 when allowed.
    async fn exchange(
        self: &Arc<Self>,
        method: &str,
        params: Option<&Value>,
        message: &Value,
        mut waiter: Option<(i64, oneshot::Receiver<Value>)>,
        extra: &HeaderMap,
    ) -> Result<Option<Value>, ClientError> {
        let mut reopened = false;
        loop {
            let had_session = self.state().session.is_some();
            let response = self.post(method, params, message, extra).await?;
            if response.status() == StatusCode::NOT_FOUND
                && had_session
                && self.options.reinitialize_on_404
                && !reopened
                && method != v2025_11_25::methods::INITIALIZE
            {
                reopened = true;
                tracing::debug!("the session is gone (404): opening a new one");
                self.reopen().await?;
                if method == v2025_11_25::methods::NOTIFICATIONS_INITIALIZED {
                    return Ok(None);
                }
                continue;
            }
            return self.read_answer(response, waiter.take()).await;
        }
    }

    /// Opens a new session with the capabilities and revision of the old one.
    async fn reopen(self: &Arc<Self>) -> Result<(), ClientError> {
        let (revision, capabilities) = {
            let state = self.state();
            (state.revision, state.capabilities.clone())
        };
        let revision = revision.unwrap_or(Revision::NEWEST_SESSION);
        Box::pin(self.open_session(revision, capabilities))
            .await
            .map(|_| ())
    }

    /// One POST; a 401 or 403 goes to the authorizer, at most twice per request (a missing
    /// token, then one scope step-up), so a server that never accepts cannot loop the client.
    async fn post(
        &self,
        method: &str,
        params: Option<&Value>,
        message: &Value,
        extra: &HeaderMap,
    ) -> Result<reqwest::Response, ClientError> {
        let body = message.to_string();
        let mut authorizations = 0;
        loop {
            let mut request = self
                .http
                .post(&self.url)
                .headers(self.post_headers(method, params, extra))
                .header(http::header::CONTENT_TYPE, "application/json")
                .header(http::header::ACCEPT, "application/json, text/event-stream")
                .body(body.clone());
            if let Some(authorization) = self.authorization().await {
                request = request.header(http::header::AUTHORIZATION, authorization);
            }
            let response = request.send().await.map_err(transport_error)?;
            let status = response.status();
            let refused = matches!(status.as_u16(), 401 | 403);
            let Some(authorizer) = self.options.authorizer.as_ref().filter(|_| refused) else {
                return Ok(response);
            };
            let headers = response.headers().clone();
            let bytes = response.bytes().await.unwrap_or_default();
            let refusal = HttpError::new(status, &headers, &bytes);
            if authorizations >= 2 || !authorizer.challenged(&refusal, &self.url).await? {
                return Err(refusal.into());
            }
            authorizations += 1;
        }
    }

    /// Reads an answer: JSON, an SSE stream (resumed when it breaks off), or an
    /// acknowledgement; anything else is an [`HttpError`].
    async fn read_answer(
        self: &Arc<Self>,
        response: reqwest::Response,
        waiter: Option<(i64, oneshot::Receiver<Value>)>,
    ) -> Result<Option<Value>, ClientError> {
        let status = response.status();
        let headers = response.headers().clone();
        if !status.is_success() {
            let bytes = response.bytes().await.unwrap_or_default();
            return Err(HttpError::new(status, &headers, &bytes).into());
        }
        if !self.stateless() {
            self.remember_session(&headers);
        }
        if media_type(&headers).starts_with("text/event-stream") {
            return self.read_events(response, waiter).await;
        }
        let bytes = response.bytes().await.map_err(transport_error)?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return match waiter {
                None => Ok(None),
                Some((_, receiver)) => receiver
                    .await
                    .map(Some)
                    .map_err(|_| failure("the server acknowledged a request without answering it")),
            };
        }
        let answer: Value = serde_json::from_slice(&bytes).map_err(|_| {
            failure(format!(
                "HTTP {status}: not JSON: {}",
                protocols_runtime::quote::quote(String::from_utf8_lossy(&bytes))
            ))
        })?;
        Ok(Some(answer))
    }

    /// Keeps the session id an answer names (the `initialize` answer's, echoed by later ones).
    fn remember_session(&self, headers: &HeaderMap) {
        if let Some(session) = headers
            .get(SESSION_HEADER)
            .and_then(|value| value.to_str().ok())
        {
            self.state().session = Some(session.to_owned());
        }
    }

    /// Reads an SSE answer to its response; when the stream ends first, waits the server's
    /// `retry` and resumes it with `Last-Event-ID`, up to `max_resumptions` times.
    async fn read_events(
        self: &Arc<Self>,
        response: reqwest::Response,
        waiter: Option<(i64, oneshot::Receiver<Value>)>,
    ) -> Result<Option<Value>, ClientError> {
        let id = waiter.as_ref().map(|(id, _)| *id);
        let mut decoder = SseDecoder::new(MAX_EVENT_BYTES);
        let mut response = response;
        let mut resumptions = 0;
        loop {
            if let StreamEnd::Answer(answer) = self.consume(response, &mut decoder, id).await {
                return Ok(Some(answer));
            }
            if waiter.is_none() {
                return Ok(None);
            }
            let Some(cursor) = decoder.last_event_id().map(str::to_owned) else {
                // Nothing to resume from: the answer can only come another way.
                return match waiter {
                    Some((_, receiver)) => receiver.await.map(Some).map_err(|_| {
                        failure(
                            "the stream ended before the answer and named no event to resume from",
                        )
                    }),
                    None => Ok(None),
                };
            };
            if resumptions >= self.options.max_resumptions {
                return Err(failure(format!(
                    "the stream broke off {resumptions} times before the answer"
                )));
            }
            resumptions += 1;
            let delay = decoder.retry().unwrap_or(self.options.default_retry);
            tokio::time::sleep(delay).await;
            response = self.resume(&cursor).await?;
            decoder = SseDecoder::new(MAX_EVENT_BYTES);
        }
    }

    /// `GET` the stream after `cursor`.
    async fn resume(&self, cursor: &str) -> Result<reqwest::Response, ClientError> {
        let response = self.get_stream(Some(cursor)).await?;
        if response.status().is_success() {
            return Ok(response);
        }
        let status = response.status();
        let headers = response.headers().clone();
        let bytes = response.bytes().await.unwrap_or_default();
        Err(HttpError::new(status, &headers, &bytes).into())
    }

    async fn get_stream(&self, cursor: Option<&str>) -> Result<reqwest::Response, ClientError> {
        let mut request = self
            .http
            .get(&self.url)
            .headers(self.post_headers("", None, &HeaderMap::new()))
            .header(http::header::ACCEPT, "text/event-stream");
        if let Some(cursor) = cursor.and_then(|cursor| HeaderValue::from_str(cursor).ok()) {
            request = request.header(LAST_EVENT_ID, cursor);
        }
        if let Some(authorization) = self.authorization().await {
            request = request.header(http::header::AUTHORIZATION, authorization);
        }
        request.send().await.map_err(transport_error)
    }

    /// Reads one stream's events until it ends or carries the response to `id`.
    async fn consume(
        &self,
        response: reqwest::Response,
        decoder: &mut SseDecoder,
        id: Option<i64>,
    ) -> StreamEnd {
        let mut chunks = response.bytes_stream();
        loop {
            while let Some(event) = decoder.next_event() {
                let Ok(event) = event else {
                    return StreamEnd::Ended;
                };
                if event.data().trim().is_empty() {
                    continue;
                }
                let Ok(message) = serde_json::from_str::<Value>(event.data()) else {
                    tracing::debug!("an SSE event was not JSON");
                    continue;
                };
                if let Some(answer) = self.take(message, id).await {
                    return StreamEnd::Answer(answer);
                }
            }
            match chunks.next().await {
                Some(Ok(chunk)) => decoder.push(&chunk),
                Some(Err(error)) => {
                    tracing::debug!(%error, "the stream broke off");
                    return StreamEnd::Ended;
                }
                None => return StreamEnd::Ended,
            }
        }
    }

    /// Handles one message read from a stream; returns it when it answers `id`.
    async fn take(&self, message: Value, id: Option<i64>) -> Option<Value> {
        let method = message
            .get("method")
            .and_then(Value::as_str)
            .map(str::to_owned);
        match (method, message.get("id").cloned()) {
            (Some(method), Some(request_id)) => {
                let params = message.get("params").cloned().unwrap_or(Value::Null);
                let answer = match self.callbacks.answer(method, params).await {
                    Ok(result) => json!({ "jsonrpc": "2.0", "id": request_id, "result": result }),
                    Err(error) => json!({ "jsonrpc": "2.0", "id": request_id, "error": error }),
                };
                if let Err(error) = self.deliver(&answer).await {
                    tracing::debug!(%error, "could not answer the server's request");
                }
                None
            }
            (Some(_), None) => {
                self.callbacks.keep(message);
                None
            }
            (None, Some(answered)) => {
                let answered = answered.as_i64();
                if answered.is_some() && answered == id {
                    return Some(message);
                }
                let waiter = answered.and_then(|answered| {
                    self.pending
                        .lock()
                        .ok()
                        .and_then(|mut pending| pending.remove(&answered))
                });
                if let Some(waiter) = waiter {
                    let _ = waiter.send(message);
                }
                None
            }
            (None, None) => None,
        }
    }

    /// Posts an answer to a server request; the server acknowledges it with 202.
    async fn deliver(&self, answer: &Value) -> Result<(), ClientError> {
        let response = self.post("", None, answer, &HeaderMap::new()).await?;
        if response.status().is_success() {
            Ok(())
        } else {
            let status = response.status();
            let headers = response.headers().clone();
            let bytes = response.bytes().await.unwrap_or_default();
            Err(HttpError::new(status, &headers, &bytes).into())
        }
    }
}

/// The session's standalone stream: what the server sends outside any call. Reconnects after
/// the server's `retry` with `Last-Event-ID`; stops when the server does not offer one (405),
/// the session is gone, the client is dropped, or five connections in a row fail. `answered`
/// fires once the first `GET` has its answer's head (or failed).
async fn standalone_stream(inner: Weak<Inner>, answered: tokio::sync::oneshot::Sender<()>) {
    let mut decoder = SseDecoder::new(MAX_EVENT_BYTES);
    let mut failures = 0;
    let mut answered = Some(answered);
    loop {
        let Some(client) = inner.upgrade() else {
            return;
        };
        let cursor = decoder.last_event_id().map(str::to_owned);
        let response = client.get_stream(cursor.as_deref()).await;
        if let Some(answered) = answered.take() {
            let _ = answered.send(());
        }
        let response = match response {
            Ok(response) if response.status().is_success() => response,
            Ok(response) => {
                tracing::debug!(status = %response.status(), "no standalone stream");
                return;
            }
            Err(error) => {
                failures += 1;
                tracing::debug!(%error, "the standalone stream could not be opened");
                if failures >= 5 {
                    return;
                }
                let delay = client.options.default_retry;
                drop(client);
                tokio::time::sleep(delay).await;
                continue;
            }
        };
        failures = 0;
        let _ = client.consume(response, &mut decoder, None).await;
        let delay = decoder.retry().unwrap_or(client.options.default_retry);
        drop(client);
        tokio::time::sleep(delay).await;
    }
}

fn media_type(headers: &HeaderMap) -> &str {
    headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default()
}

/// A 2026-07-28 result without `resultType` is complete (the default the schema states).
fn complete(mut result: Value) -> Value {
    if let Some(object) = result.as_object_mut()
        && !object.contains_key("resultType")
    {
        object.insert("resultType".to_owned(), json!("complete"));
    }
    result
}
