//! A minimal protocol for the transport tests and a server harness on a real loopback socket;
//! the SSE reader and request builder come from the workspace's testkit.

#![allow(dead_code, clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http::{HeaderMap, HeaderName};
use protocols_runtime::hardening::HardeningConfig;
use protocols_runtime::http::HttpConfig;
use protocols_runtime::jsonrpc::to_raw;
use protocols_runtime::server::{ListenerConfig, Server, ServerBuilder};
use protocols_runtime::{
    BatchPolicy, CancelConvention, CancelReply, Context, ErrorObject, Message, Notification,
    Profile, Rejection, Reply, Request, RequestHandler, Unsessioned,
};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

pub const SESSION_HEADER: &str = "test-session-id";
pub const CANCEL_METHOD: &str = "cancel";

/// Per-session state: whatever the opening request recorded. Shared between replicas as its
/// `opened_by` alone, counting its changes.
#[derive(Debug, Default)]
pub struct TestSession {
    pub opened_by: Mutex<Option<String>>,
    version: AtomicU64,
}

impl TestSession {
    fn record_opening(&self, by: &str) {
        if let Ok(mut opened_by) = self.opened_by.lock() {
            *opened_by = Some(by.to_owned());
        }
        self.version.fetch_add(1, Ordering::Relaxed);
    }

    fn opened_by(&self) -> Option<String> {
        self.opened_by
            .lock()
            .ok()
            .and_then(|opened_by| opened_by.clone())
    }
}

impl serde::Serialize for TestSession {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.opened_by().serialize(serializer)
    }
}

impl<'de> serde::Deserialize<'de> for TestSession {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let opened_by = Option::<String>::deserialize(deserializer)?;
        Ok(Self {
            opened_by: Mutex::new(opened_by),
            version: AtomicU64::new(0),
        })
    }
}

impl protocols_runtime::session::SharedState for TestSession {
    fn version(&self) -> u64 {
        self.version.load(Ordering::Relaxed)
    }
}

/// The test protocol: `open` opens a session, `stateless/*` stands alone, everything else needs
/// a session.
pub struct TestProtocol {
    profile: Profile,
    pub notifications: Arc<Mutex<Vec<String>>>,
    /// Whether its sessions' SSE answers open with a priming event.
    primes: bool,
}

impl TestProtocol {
    pub fn new() -> Self {
        Self {
            profile: Profile::new()
                .with_session_header(HeaderName::from_static(SESSION_HEADER))
                .with_version_header(HeaderName::from_static("test-version"))
                .with_batches(BatchPolicy::Accept)
                .with_cancellation(CancelConvention {
                    method: CANCEL_METHOD,
                    id_field: "requestId",
                    reply: CancelReply::Nothing,
                }),
            notifications: Arc::new(Mutex::new(Vec::new())),
            primes: false,
        }
    }

    /// The same methods as a protocol without transport sessions that refuses batches.
    pub fn sessionless() -> Self {
        Self {
            profile: Profile::new(),
            notifications: Arc::new(Mutex::new(Vec::new())),
            primes: false,
        }
    }

    /// The same protocol, asking for its sessions' SSE answers to be primed.
    pub fn priming(mut self) -> Self {
        self.primes = true;
        self
    }
}

/// The `ms` param of a request, as a duration (100 ms when absent).
fn millis(params: &Value) -> Duration {
    Duration::from_millis(params["ms"].as_u64().unwrap_or(100))
}

fn params(request: &Request) -> Value {
    request
        .params
        .as_ref()
        .and_then(|raw| serde_json::from_str(raw.get()).ok())
        .unwrap_or(Value::Null)
}

fn reply(value: &Value) -> Reply {
    to_raw(value).map_err(|_| ErrorObject::internal_error())
}

impl RequestHandler for TestProtocol {
    type Session = TestSession;

    fn profile(&self) -> &Profile {
        &self.profile
    }

    fn unsessioned(&self, messages: &[Message], _headers: &HeaderMap) -> Unsessioned {
        match messages.first() {
            Some(Message::Request(request)) if request.method == "open" => Unsessioned::Opens,
            Some(Message::Request(request)) if request.method.starts_with("stateless/") => {
                Unsessioned::Stateless
            }
            _ => Unsessioned::NeedsSession,
        }
    }

    fn primes_answer_streams(&self, _headers: &HeaderMap, _session: &TestSession) -> bool {
        self.primes
    }

    fn admit(
        &self,
        _messages: &[Message],
        headers: &HeaderMap,
        _session: Option<&TestSession>,
    ) -> Result<(), Rejection> {
        if headers.contains_key("test-reject") {
            return Err(Rejection::new(
                http::StatusCode::BAD_REQUEST,
                ErrorObject::new(-32099, "rejected by the protocol"),
            ));
        }
        Ok(())
    }

    async fn handle(&self, request: Request, cx: Context<TestSession>) -> Reply {
        let params = params(&request);
        match request.method.as_str() {
            "open" if params["fail"] == true => Err(ErrorObject::new(-32000, "refused to open")),
            "open" => {
                if let Some(state) = cx.state() {
                    state.record_opening("open");
                }
                reply(&json!({"opened": true}))
            }
            "opened-by" => reply(&json!({
                "openedBy": cx.state().and_then(TestSession::opened_by),
            })),
            "echo" | "stateless/echo" => reply(&params),
            "stateless/whereami" => reply(&json!({
                "peer": cx.peer_address().map(|address| address.to_string()),
            })),
            "stateless/whoami" => reply(&json!({
                "subject": cx.principal().map(|principal| principal.subject.to_string()),
                "scopes": cx.principal().map(|principal| principal.scopes.to_vec()),
                "claims": cx.principal().and_then(|principal| principal.claims().cloned()),
                "peer": cx.peer_address().map(|address| address.to_string()),
            })),
            "whoami" => reply(&json!({
                "version": cx.protocol_version(),
                "subject": cx.principal().map(|principal| principal.subject.to_string()),
            })),
            "notify-then-answer" | "burst" => {
                let count = params["count"].as_u64().unwrap_or(3);
                for i in 0..count {
                    if cx.peer().notify("progress", &json!({"i": i})).is_err() {
                        return Err(ErrorObject::internal_error());
                    }
                    if request.method == "burst" && i % 8 == 0 {
                        tokio::time::sleep(Duration::from_millis(1)).await;
                    }
                }
                reply(&json!({"sent": count}))
            }
            "ask-client" => match cx.peer().request("client/ask", &params).await {
                Ok(answer) => {
                    let answer: Value = serde_json::from_str(answer.get()).unwrap_or(Value::Null);
                    reply(&json!({"client_said": answer}))
                }
                Err(error) => Err(ErrorObject::new(-32001, error.to_string())),
            },
            "ask-session-wide" => match cx
                .peer()
                .session_wide()
                .request("client/ask", &params)
                .await
            {
                Ok(_) => reply(&json!("answered")),
                Err(error) => Err(ErrorObject::new(-32003, error.to_string())),
            },
            "ask-client-briefly" => match cx
                .peer()
                .request_within("client/ask", &params, Duration::from_millis(100))
                .await
            {
                Ok(_) => reply(&json!("answered")),
                Err(error) => Err(ErrorObject::new(-32002, error.to_string())),
            },
            "stateless/pause" => {
                tokio::time::sleep(Duration::from_millis(300)).await;
                reply(&json!("resumed"))
            }
            "slow" => {
                tokio::time::sleep(Duration::from_secs(30)).await;
                reply(&json!("finished"))
            }
            "notify-later" => {
                let later = cx.peer().session_wide();
                tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    let _ = later.notify("later", &json!({"after": "answer"}));
                });
                reply(&json!("scheduled"))
            }
            "stream-results" => {
                for part in ["first", "second"] {
                    if cx.send_partial_result(&json!({"part": part})).is_err() {
                        return Err(ErrorObject::internal_error());
                    }
                }
                reply(&json!({"part": "final"}))
            }
            "stateless/sleep" | "sleep" => {
                tokio::time::sleep(millis(&params)).await;
                reply(&json!({"slept_ms": millis(&params).as_millis() as u64}))
            }
            "stateless/stream-slowly" | "stream-slowly" => {
                if cx.send_partial_result(&json!({"part": "first"})).is_err() {
                    return Err(ErrorObject::internal_error());
                }
                tokio::time::sleep(millis(&params)).await;
                reply(&json!({"part": "final"}))
            }
            "panic" | "stateless/panic" => panic!("the handler panicked on purpose"),
            "stream-then-panic" => {
                if cx.send_partial_result(&json!({"part": "first"})).is_err() {
                    return Err(ErrorObject::internal_error());
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
                panic!("the handler panicked mid-stream on purpose")
            }
            "fail" => Err(ErrorObject::new(-32000, "failed on purpose")),
            _ => Err(ErrorObject::method_not_found()),
        }
    }

    async fn notify(&self, notification: Notification, _cx: Context<TestSession>) {
        if notification.method == "panic" {
            panic!("the notification handler panicked on purpose");
        }
        if let Ok(mut seen) = self.notifications.lock() {
            seen.push(notification.method);
        }
    }
}

/// A server on 127.0.0.1:0 that stops when dropped.
pub struct TestServer {
    pub address: SocketAddr,
    stop: CancellationToken,
    task: Option<JoinHandle<std::io::Result<()>>>,
}

impl TestServer {
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.address)
    }

    /// Stops the server gracefully and waits for it.
    pub async fn stop(mut self) -> std::io::Result<()> {
        self.stop.cancel();
        match self.task.take() {
            Some(task) => task.await.unwrap_or(Ok(())),
            None => Ok(()),
        }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// Hardening for tests: loopback host policy, no rate limit.
pub fn test_hardening() -> HardeningConfig {
    HardeningConfig::new().rate_limit(None)
}

/// Serves a built server on a fresh loopback port.
pub async fn serve(server: Server) -> TestServer {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind loopback");
    let address = listener.local_addr().expect("local address");
    let stop = CancellationToken::new();
    let signal = stop.clone();
    let task = tokio::spawn(server.serve_until(listener, async move { signal.cancelled().await }));
    TestServer {
        address,
        stop,
        task: Some(task),
    }
}

/// The test protocol at `/rpc` over Streamable HTTP with `config`.
pub async fn serve_protocol(config: HttpConfig) -> TestServer {
    serve_handler(TestProtocol::new(), config).await
}

/// `handler` at `/rpc` over Streamable HTTP with `config`.
pub async fn serve_handler(handler: TestProtocol, config: HttpConfig) -> TestServer {
    serve_with_listener(handler, config, ListenerConfig::default()).await
}

/// `handler` at `/rpc` with `config`, its listener treating connections as `listener` says.
pub async fn serve_with_listener(
    handler: TestProtocol,
    config: HttpConfig,
    listener: ListenerConfig,
) -> TestServer {
    let server = ServerBuilder::new()
        .hardening(test_hardening())
        .listener(listener)
        .streamable_http("/rpc", handler, config)
        .build()
        .expect("server builds");
    serve(server).await
}

pub use protocols_testkit::request;
use protocols_testkit::{ACCEPT_EITHER, event_stream_get, json_rpc_post};

/// The test protocol's endpoint as one HTTP client sees it.
#[derive(Clone)]
pub struct Endpoint {
    pub client: reqwest::Client,
    pub url: String,
}

impl Endpoint {
    /// The test protocol at `/rpc` on `server`.
    pub fn of(server: &TestServer) -> Self {
        Self::at(server.url("/rpc"))
    }

    pub fn at(url: String) -> Self {
        Self {
            client: reqwest::Client::new(),
            url,
        }
    }

    pub async fn post(
        &self,
        session: Option<&str>,
        accept: &str,
        body: &Value,
    ) -> reqwest::Response {
        let session = session.map(|session| (SESSION_HEADER, session));
        json_rpc_post(&self.client, &self.url, accept, session, body)
            .send()
            .await
            .expect("request sent")
    }

    /// A request on `session` from a client that takes either a JSON or an SSE answer.
    pub async fn call(
        &self,
        session: &str,
        id: i64,
        method: &str,
        params: Value,
    ) -> reqwest::Response {
        self.post(Some(session), ACCEPT_EITHER, &request(id, method, params))
            .await
    }

    /// The session's event stream, resumed after `last_event_id` when given.
    pub async fn event_stream(
        &self,
        session: &str,
        last_event_id: Option<&str>,
    ) -> reqwest::Response {
        let resume = last_event_id.map(|cursor| ("last-event-id", cursor));
        event_stream_get(
            &self.client,
            &self.url,
            [(SESSION_HEADER, session)].into_iter().chain(resume),
        )
        .send()
        .await
        .expect("request sent")
    }

    /// Opens a session and returns its id.
    pub async fn open(&self) -> String {
        let response = self
            .post(None, "application/json", &request(0, "open", json!({})))
            .await;
        assert_eq!(response.status(), http::StatusCode::OK);
        let id = response.headers()[SESSION_HEADER]
            .to_str()
            .expect("ascii")
            .to_owned();
        let body: Value = response.json().await.expect("json");
        assert_eq!(body["result"]["opened"], true);
        id
    }
}
