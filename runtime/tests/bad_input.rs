//! The bad-input table: every malformed, misdirected or unauthorised request a client can send
//! to the hardened Streamable HTTP transport, sent over a real socket with a real HTTP client,
//! each answered with its refusal status, its JSON-RPC error code and every security header —
//! never a 200, never an echo of the caller's bytes.

// This whole crate is a test: a setup step that fails is a failed test, not a panic in service.
#![allow(clippy::unwrap_used)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderName, HeaderValue, Method, StatusCode, header};
use protocols_runtime::hardening::{
    AuthPolicy, BearerAuthenticator, HardeningConfig, Principal, ProtectedResource, RateLimit,
};
use protocols_runtime::http::{HttpConfig, ResponseMode, router};
use protocols_runtime::jsonrpc::{ErrorObject, Message, Notification, Request};
use protocols_runtime::tail::EventCursor;
use protocols_runtime::{Context, Profile, Reply, RequestHandler, Unsessioned};
use protocols_testkit::{RawConnection, raw_request};
use serde_json::Value;
use serde_json::value::RawValue;
use tokio::net::TcpListener;

const SESSION: HeaderName = HeaderName::from_static("test-session-id");
const GOOD_TOKEN: &str = "good-token";
const NARROW_TOKEN: &str = "narrow-token";
const MAX_BODY: usize = 64 * 1024;
/// Events the test server keeps per stream: small, so a resume can be made to miss.
const TAIL_CAPACITY: usize = 2;
/// A marker planted in hostile inputs; no response body may contain it.
const MARKER: &str = "evil";

/// The minimal protocol this test serves: `open` opens a session, `ping` stands alone, `echo`
/// answers its params, `emit` publishes `n` notifications to the session's stream, `sleep` waits.
struct TestProtocol {
    profile: Profile,
}

impl TestProtocol {
    fn new() -> Self {
        Self {
            profile: Profile::new().with_session_header(SESSION),
        }
    }
}

impl RequestHandler for TestProtocol {
    type Session = ();

    fn profile(&self) -> &Profile {
        &self.profile
    }

    fn unsessioned(&self, messages: &[Message], _headers: &http::HeaderMap) -> Unsessioned {
        match messages.first() {
            Some(Message::Request(request)) if request.method == "open" => Unsessioned::Opens,
            Some(Message::Request(request)) if request.method == "ping" => Unsessioned::Stateless,
            _ => Unsessioned::NeedsSession,
        }
    }

    async fn handle(&self, request: Request, cx: Context<()>) -> Reply {
        let empty =
            || RawValue::from_string("{}".into()).map_err(|_| ErrorObject::internal_error());
        match request.method.as_str() {
            "open" | "ping" => empty(),
            "echo" => request
                .params
                .ok_or_else(|| ErrorObject::invalid_params("no params")),
            "emit" => {
                for tick in 0..5 {
                    cx.peer()
                        .notify("tick", &serde_json::json!({ "n": tick }))
                        .map_err(|_| ErrorObject::internal_error())?;
                }
                empty()
            }
            "sleep" => {
                tokio::time::sleep(Duration::from_secs(5)).await;
                empty()
            }
            _ => Err(ErrorObject::method_not_found()),
        }
    }

    async fn notify(&self, _notification: Notification, _cx: Context<()>) {}
}

struct Server {
    address: SocketAddr,
    client: reqwest::Client,
}

impl Server {
    async fn start(configure: impl FnOnce(HardeningConfig) -> HardeningConfig) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let hardening = configure(
            HardeningConfig::new()
                .bind_address(address)
                .max_body_bytes(MAX_BODY)
                .authenticator(
                    BearerAuthenticator::new()
                        .with_token(GOOD_TOKEN, Principal::new("alice", ["rpc".to_owned()]))
                        .with_token(NARROW_TOKEN, Principal::new("bob", [])),
                )
                .auth_policy(AuthPolicy::RequireScopes(vec!["rpc".into()]))
                .protected_resource(
                    ProtectedResource::new(format!("http://{address}/mcp"))
                        .authorization_server("https://auth.example")
                        .scopes_supported(["rpc"]),
                ),
        )
        .build()
        .unwrap();
        let config = HttpConfig::default()
            .response_mode(ResponseMode::Json)
            .tail_capacity(TAIL_CAPACITY);
        let app = router("/mcp", TestProtocol::new(), config, &hardening);
        let service = app.into_make_service_with_connect_info::<SocketAddr>();
        tokio::spawn(async move { axum::serve(listener, service).await });
        let client = reqwest::Client::builder().no_proxy().build().unwrap();
        Self { address, client }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.address)
    }

    /// A request with the headers a well-behaved client sends.
    fn request(&self, method: Method, path: &str) -> reqwest::RequestBuilder {
        self.client
            .request(method, self.url(path))
            .bearer_auth(GOOD_TOKEN)
            .header(header::CONTENT_TYPE, "application/json")
            .header(header::ACCEPT, "application/json, text/event-stream")
    }

    async fn open_session(&self) -> String {
        let response = self
            .request(Method::POST, "/mcp")
            .body(r#"{"jsonrpc":"2.0","id":1,"method":"open"}"#)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        response.headers()[&SESSION].to_str().unwrap().to_owned()
    }

    async fn call(&self, session: &str, body: &'static str) -> reqwest::Response {
        self.request(Method::POST, "/mcp")
            .header(&SESSION, session)
            .body(body)
            .send()
            .await
            .unwrap()
    }
}

/// Which session header a case sends.
#[derive(Clone, Copy)]
enum SessionHeader {
    Absent,
    /// A session opened for this case.
    Live,
    /// A session opened and then deleted.
    Deleted,
    /// These exact bytes.
    Raw(&'static [u8]),
}

/// Which credential a case sends.
#[derive(Clone, Copy)]
enum Credential {
    Good,
    Absent,
    Raw(&'static str),
}

#[derive(Clone)]
enum Payload {
    Empty,
    Static(&'static [u8]),
    Owned(Vec<u8>),
    /// Sent chunked, with no Content-Length: the limit can only be found while reading.
    Streamed(usize),
}

struct Case {
    name: &'static str,
    method: Method,
    path: &'static str,
    session: SessionHeader,
    credential: Credential,
    headers: Vec<(HeaderName, HeaderValue)>,
    /// Sent as further lines of a header already present.
    repeated: Vec<(HeaderName, HeaderValue)>,
    drop_headers: Vec<HeaderName>,
    body: Payload,
    status: StatusCode,
    code: i64,
    id: Value,
}

impl Case {
    fn post(name: &'static str, body: &'static [u8]) -> Self {
        Self {
            name,
            method: Method::POST,
            path: "/mcp",
            session: SessionHeader::Live,
            credential: Credential::Good,
            headers: Vec::new(),
            repeated: Vec::new(),
            drop_headers: Vec::new(),
            body: Payload::Static(body),
            status: StatusCode::OK,
            code: 0,
            id: Value::Null,
        }
    }

    fn get(name: &'static str) -> Self {
        Self {
            method: Method::GET,
            body: Payload::Empty,
            ..Self::post(name, b"")
        }
    }

    fn with_method(mut self, method: Method) -> Self {
        self.method = method;
        self
    }

    fn at(mut self, path: &'static str) -> Self {
        self.path = path;
        self
    }

    fn session(mut self, session: SessionHeader) -> Self {
        self.session = session;
        self
    }

    fn credential(mut self, credential: Credential) -> Self {
        self.credential = credential;
        self
    }

    fn header(mut self, name: HeaderName, value: impl AsRef<[u8]>) -> Self {
        self.headers
            .push((name, HeaderValue::from_bytes(value.as_ref()).unwrap()));
        self
    }

    /// Adds another line of header `name`, after the one the case already sends.
    fn again(mut self, name: HeaderName, value: impl AsRef<[u8]>) -> Self {
        self.repeated
            .push((name, HeaderValue::from_bytes(value.as_ref()).unwrap()));
        self
    }

    fn without(mut self, name: HeaderName) -> Self {
        self.drop_headers.push(name);
        self
    }

    fn body(mut self, body: Payload) -> Self {
        self.body = body;
        self
    }

    fn refused(mut self, status: StatusCode, code: i64) -> Self {
        self.status = status;
        self.code = code;
        self
    }

    fn echoing(mut self, id: Value) -> Self {
        self.id = id;
        self
    }
}

const PING: &[u8] = br#"{"jsonrpc":"2.0","id":3,"method":"ping"}"#;
const ECHO: &[u8] = br#"{"jsonrpc":"2.0","id":7,"method":"echo","params":{"a":1}}"#;

fn nested(depth: usize) -> Vec<u8> {
    let mut body = br#"{"jsonrpc":"2.0","id":1,"method":"echo","params":{"a":"#.to_vec();
    body.extend(std::iter::repeat_n(b'[', depth));
    body.extend(std::iter::repeat_n(b']', depth));
    body.extend(b"}}");
    body
}

fn event_id(stream: u32, sequence: u64) -> String {
    EventCursor { stream, sequence }
        .to_event_id()
        .get()
        .to_string()
}

fn table() -> Vec<Case> {
    use StatusCode as S;
    let (bad, unauthorized, forbidden) = (S::BAD_REQUEST, S::UNAUTHORIZED, S::FORBIDDEN);
    vec![
        // Malformed JSON
        Case::post("not_json", b"evil: not json").refused(bad, -32700),
        Case::post("truncated_json", br#"{"jsonrpc":"2.0","id":1,"#).refused(bad, -32700),
        Case::post("empty_body", b"").refused(bad, -32700),
        Case::post(
            "trailing_garbage",
            br#"{"jsonrpc":"2.0","id":1,"method":"ping"} evil"#,
        )
        .refused(bad, -32700),
        Case::post(
            "invalid_utf8_in_a_string",
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xff\xfe\"}",
        )
        .refused(bad, -32700),
        Case::post("invalid_utf8_bare_bytes", b"\xc3\x28\xa0\xa1").refused(bad, -32700),
        Case::post("deeply_nested_params", b"")
            .body(Payload::Owned(nested(200)))
            .refused(bad, -32700),
        Case::post("nesting_bomb", b"")
            .body(Payload::Owned(nested(30_000)))
            .refused(bad, -32700),
        // Wrong JSON-RPC shapes
        Case::post("scalar_number", b"42").refused(bad, -32600),
        Case::post("scalar_string", br#""evil""#).refused(bad, -32600),
        Case::post("json_null", b"null").refused(bad, -32600),
        Case::post("empty_batch", b"[]").refused(bad, -32600),
        Case::post(
            "batch_refused_by_the_protocol",
            br#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#,
        )
        .refused(bad, -32600),
        Case::post("batch_of_non_messages", b"[1,2,3]").refused(bad, -32600),
        Case::post("missing_jsonrpc_member", br#"{"id":1,"method":"ping"}"#)
            .refused(bad, -32600)
            .echoing(1.into()),
        Case::post(
            "wrong_jsonrpc_version",
            br#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#,
        )
        .refused(bad, -32600)
        .echoing(1.into()),
        Case::post(
            "method_not_a_string",
            br#"{"jsonrpc":"2.0","id":1,"method":42}"#,
        )
        .refused(bad, -32600)
        .echoing(1.into()),
        Case::post(
            "id_is_an_object",
            br#"{"jsonrpc":"2.0","id":{"evil":1},"method":"ping"}"#,
        )
        .refused(bad, -32600),
        Case::post(
            "id_is_a_fraction",
            br#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#,
        )
        .refused(bad, -32600),
        Case::post(
            "params_is_a_scalar",
            br#"{"jsonrpc":"2.0","id":1,"method":"ping","params":3}"#,
        )
        .refused(bad, -32600)
        .echoing(1.into()),
        // Size
        Case::post("oversized_declared_body", b"")
            .body(Payload::Owned(vec![b' '; MAX_BODY + 1]))
            .refused(S::PAYLOAD_TOO_LARGE, -32010),
        Case::post("oversized_chunked_body", b"")
            .body(Payload::Streamed(MAX_BODY * 2))
            .refused(S::PAYLOAD_TOO_LARGE, -32010),
        // Content-Type and Accept
        Case::post("missing_content_type", PING)
            .without(header::CONTENT_TYPE)
            .refused(S::UNSUPPORTED_MEDIA_TYPE, -32011),
        Case::post("text_plain_content_type", PING)
            .header(header::CONTENT_TYPE, b"text/plain")
            .refused(S::UNSUPPORTED_MEDIA_TYPE, -32011),
        Case::post("json_suffix_lookalike", PING)
            .header(header::CONTENT_TYPE, b"application/json-evil")
            .refused(S::UNSUPPORTED_MEDIA_TYPE, -32011),
        Case::post("form_content_type", PING)
            .header(header::CONTENT_TYPE, b"application/x-www-form-urlencoded")
            .refused(S::UNSUPPORTED_MEDIA_TYPE, -32011),
        Case::post("accept_html_only", PING)
            .header(header::ACCEPT, b"text/html")
            .refused(S::NOT_ACCEPTABLE, -32008),
        Case::post("accept_image_only", PING)
            .header(header::ACCEPT, b"image/png")
            .refused(S::NOT_ACCEPTABLE, -32008),
        Case::get("get_accepting_json_only")
            .header(header::ACCEPT, b"application/json")
            .refused(S::NOT_ACCEPTABLE, -32008),
        // Sessions
        Case::post("missing_session_id", ECHO)
            .session(SessionHeader::Absent)
            .refused(bad, -32600)
            .echoing(7.into()),
        Case::post("session_id_with_spaces", ECHO)
            .session(SessionHeader::Raw(b"evil id"))
            .refused(bad, -32600)
            .echoing(7.into()),
        Case::post("session_id_with_obs_text", ECHO)
            .session(SessionHeader::Raw(b"\xe9vil"))
            .refused(bad, -32600)
            .echoing(7.into()),
        Case::post("session_id_too_long", ECHO)
            .session(SessionHeader::Raw(&[b'a'; 129]))
            .refused(bad, -32600)
            .echoing(7.into()),
        Case::post("empty_session_id", ECHO)
            .session(SessionHeader::Raw(b""))
            .refused(bad, -32600)
            .echoing(7.into()),
        Case::post("unknown_session_id", ECHO)
            .session(SessionHeader::Raw(b"0123456789abcdef"))
            .refused(S::NOT_FOUND, -32005)
            .echoing(7.into()),
        Case::post("deleted_session_id", ECHO)
            .session(SessionHeader::Deleted)
            .refused(S::NOT_FOUND, -32005)
            .echoing(7.into()),
        Case::get("get_without_session")
            .session(SessionHeader::Absent)
            .refused(bad, -32600),
        Case::get("get_unknown_session")
            .session(SessionHeader::Raw(b"0123456789abcdef"))
            .refused(S::NOT_FOUND, -32005),
        Case::get("get_deleted_session")
            .session(SessionHeader::Deleted)
            .refused(S::NOT_FOUND, -32005),
        Case::get("delete_without_session")
            .with_method(Method::DELETE)
            .session(SessionHeader::Absent)
            .refused(bad, -32600),
        Case::get("delete_malformed_session")
            .with_method(Method::DELETE)
            .session(SessionHeader::Raw(b"evil id"))
            .refused(bad, -32600),
        Case::get("delete_twice")
            .with_method(Method::DELETE)
            .session(SessionHeader::Deleted)
            .refused(S::NOT_FOUND, -32005),
        // One request naming two sessions is ambiguous, whichever of them is live.
        Case::post("two_session_id_lines", ECHO)
            .again(SESSION, b"0123456789abcdef")
            .refused(bad, -32600)
            .echoing(7.into()),
        Case::post("two_session_ids_in_one_line", ECHO)
            .session(SessionHeader::Raw(b"0123456789abcdef,fedcba9876543210"))
            .refused(bad, -32600)
            .echoing(7.into()),
        Case::get("get_naming_two_sessions")
            .again(SESSION, b"0123456789abcdef")
            .refused(bad, -32600),
        // Origin and Host
        Case::post("foreign_origin", PING)
            .header(header::ORIGIN, b"https://evil.example")
            .refused(forbidden, -32003),
        Case::post("null_origin", PING)
            .header(header::ORIGIN, b"null")
            .refused(forbidden, -32003),
        Case::post("loopback_origin_on_another_port", PING)
            .header(header::ORIGIN, b"http://localhost:1")
            .refused(forbidden, -32003),
        Case::post("origin_with_a_path", PING)
            .header(header::ORIGIN, b"http://evil.example/x")
            .refused(forbidden, -32003),
        Case::post("foreign_host", PING)
            .header(header::HOST, b"evil.example")
            .refused(S::MISDIRECTED_REQUEST, -32004),
        Case::post("loopback_host_on_another_port", PING)
            .header(header::HOST, b"127.0.0.1:1")
            .refused(S::MISDIRECTED_REQUEST, -32004),
        // A repeated Host or Origin is malformed whatever its values (RFC 9112 §3.2): refused
        // with 400 before either is judged, even when the first one is allowed.
        Case::post("repeated_host_good_then_foreign", PING)
            .again(header::HOST, b"evil.example")
            .refused(bad, -32600),
        Case::post("repeated_origin_good_then_foreign", PING)
            .header(header::ORIGIN, b"http://localhost")
            .again(header::ORIGIN, b"https://evil.example")
            .refused(bad, -32600),
        Case::get("metadata_with_foreign_host")
            .at("/.well-known/oauth-protected-resource/mcp")
            .header(header::HOST, b"evil.example")
            .refused(S::MISDIRECTED_REQUEST, -32004),
        // Last-Event-ID
        Case::get("last_event_id_not_numeric")
            .header(LAST_EVENT_ID, b"evil")
            .refused(bad, -32600),
        Case::get("last_event_id_negative")
            .header(LAST_EVENT_ID, b"-1")
            .refused(bad, -32600),
        Case::get("last_event_id_overflowing")
            .header(LAST_EVENT_ID, b"99999999999999999999999")
            .refused(bad, -32600),
        Case::get("last_event_id_evicted")
            .header(LAST_EVENT_ID, event_id(0, 1))
            .refused(S::GONE, -32009),
        Case::get("last_event_id_never_issued")
            .header(LAST_EVENT_ID, event_id(0, 999))
            .refused(S::GONE, -32009),
        Case::get("last_event_id_of_an_unknown_stream")
            .header(LAST_EVENT_ID, event_id(77, 1))
            .refused(S::GONE, -32009),
        // Paths and methods
        Case::get("unknown_path")
            .at("/evil")
            .refused(S::NOT_FOUND, -32006),
        Case::post("post_to_unknown_path", PING)
            .at("/mcp/evil")
            .refused(S::NOT_FOUND, -32006),
        Case::post("put_on_the_endpoint", PING)
            .with_method(Method::PUT)
            .refused(S::METHOD_NOT_ALLOWED, -32007),
        Case::post("patch_on_the_endpoint", PING)
            .with_method(Method::PATCH)
            .refused(S::METHOD_NOT_ALLOWED, -32007),
        // Authentication
        Case::post("no_credential", PING)
            .credential(Credential::Absent)
            .refused(unauthorized, -32001),
        Case::post("wrong_token", PING)
            .credential(Credential::Raw("Bearer evil-token"))
            .refused(unauthorized, -32001),
        Case::post("basic_scheme", PING)
            .credential(Credential::Raw("Basic ZXZpbDpldmls"))
            .refused(unauthorized, -32001),
        Case::post("empty_bearer", PING)
            .credential(Credential::Raw("Bearer "))
            .refused(unauthorized, -32001),
        Case::post("token_without_the_scope", PING)
            .credential(Credential::Raw("Bearer narrow-token"))
            .refused(forbidden, -32002),
        Case::get("stream_without_credential")
            .credential(Credential::Absent)
            .refused(unauthorized, -32001),
        // Authentication precedes the session lookup: an unproven caller cannot tell a live
        // session id from an unknown one.
        Case::post("unknown_session_without_credential", ECHO)
            .session(SessionHeader::Raw(b"0123456789abcdef"))
            .credential(Credential::Absent)
            .refused(unauthorized, -32001),
        Case::post("live_session_without_credential", ECHO)
            .credential(Credential::Absent)
            .refused(unauthorized, -32001),
        Case::get("delete_without_credential")
            .with_method(Method::DELETE)
            .credential(Credential::Absent)
            .refused(unauthorized, -32001),
    ]
}

const LAST_EVENT_ID: HeaderName = HeaderName::from_static("last-event-id");

const SECURITY_HEADERS: [HeaderName; 6] = [
    header::CONTENT_SECURITY_POLICY,
    header::STRICT_TRANSPORT_SECURITY,
    header::X_FRAME_OPTIONS,
    header::X_CONTENT_TYPE_OPTIONS,
    header::CACHE_CONTROL,
    header::REFERRER_POLICY,
];

async fn session_for(server: &Server, spec: SessionHeader) -> Option<Vec<u8>> {
    match spec {
        SessionHeader::Absent => None,
        SessionHeader::Raw(bytes) => Some(bytes.to_vec()),
        SessionHeader::Live => {
            let id = server.open_session().await;
            // Overflow the standalone stream's tail so its first events are evicted.
            let emitted = server
                .call(&id, r#"{"jsonrpc":"2.0","id":2,"method":"emit"}"#)
                .await;
            assert_eq!(emitted.status(), StatusCode::OK);
            Some(id.into_bytes())
        }
        SessionHeader::Deleted => {
            let id = server.open_session().await;
            let deleted = server
                .client
                .delete(server.url("/mcp"))
                .bearer_auth(GOOD_TOKEN)
                .header(&SESSION, &id)
                .send()
                .await
                .unwrap();
            assert_eq!(deleted.status(), StatusCode::OK);
            Some(id.into_bytes())
        }
    }
}

fn payload(body: &Payload) -> reqwest::Body {
    match body {
        Payload::Empty => reqwest::Body::from(Bytes::new()),
        Payload::Static(bytes) => reqwest::Body::from(Bytes::from_static(bytes)),
        Payload::Owned(bytes) => reqwest::Body::from(bytes.clone()),
        Payload::Streamed(total) => {
            let chunks =
                (0..total / 1024).map(|_| Ok::<_, std::io::Error>(Bytes::from(vec![b' '; 1024])));
            reqwest::Body::wrap_stream(futures::stream::iter(chunks))
        }
    }
}

/// Sends a case and returns what about its answer is wrong, if anything.
async fn check(server: &Server, case: &Case) -> Result<(), String> {
    let mut request = server
        .client
        .request(case.method.clone(), server.url(case.path))
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::ACCEPT, "application/json, text/event-stream")
        .body(payload(&case.body))
        .build()
        .map_err(|error| error.to_string())?;
    let headers = request.headers_mut();
    match case.credential {
        Credential::Good => {
            headers.insert(
                header::AUTHORIZATION,
                HeaderValue::from_str(&format!("Bearer {GOOD_TOKEN}")).unwrap(),
            );
        }
        Credential::Absent => {}
        Credential::Raw(value) => {
            headers.insert(header::AUTHORIZATION, HeaderValue::from_static(value));
        }
    }
    if let Some(id) = session_for(server, case.session).await {
        let headers = request.headers_mut();
        headers.insert(&SESSION, HeaderValue::from_bytes(&id).unwrap());
    }
    let headers = request.headers_mut();
    for name in &case.drop_headers {
        headers.remove(name);
    }
    for (name, value) in &case.headers {
        headers.insert(name, value.clone());
    }
    for (name, value) in &case.repeated {
        if name == header::HOST && !headers.contains_key(header::HOST) {
            // The client only adds its own Host when none is set: set it, then repeat it.
            let host = HeaderValue::from_str(&server.address.to_string()).unwrap();
            headers.insert(header::HOST, host);
        }
        headers.append(name, value.clone());
    }
    let response = server
        .client
        .execute(request)
        .await
        .map_err(|error| error.to_string())?;
    let status = response.status();
    let missing: Vec<_> = SECURITY_HEADERS
        .iter()
        .filter(|name| !response.headers().contains_key(*name))
        .collect();
    let content_type = response.headers().get(header::CONTENT_TYPE).cloned();
    let challenge = response.headers().get(header::WWW_AUTHENTICATE).cloned();
    let allow = response.headers().get(header::ALLOW).cloned();
    let text = response.text().await.map_err(|error| error.to_string())?;
    let body: Value =
        serde_json::from_str(&text).map_err(|_| format!("body is not JSON: {text}"))?;
    let mut wrong = Vec::new();
    if status != case.status {
        wrong.push(format!("status {status}, expected {}", case.status));
    }
    if body["jsonrpc"] != "2.0" || body["error"]["code"] != case.code {
        wrong.push(format!("body {body}, expected code {}", case.code));
    }
    if body["id"] != case.id {
        wrong.push(format!("id {}, expected {}", body["id"], case.id));
    }
    if !missing.is_empty() {
        wrong.push(format!("security headers missing: {missing:?}"));
    }
    if content_type
        .as_ref()
        .is_none_or(|value| value != "application/json")
    {
        wrong.push(format!("content type {content_type:?}"));
    }
    if text.contains(MARKER) {
        wrong.push(format!("the body echoes the caller's bytes: {text}"));
    }
    if status == StatusCode::UNAUTHORIZED
        && !challenge
            .as_ref()
            .and_then(|value| value.to_str().ok())
            .is_some_and(|value| value.contains("resource_metadata=\""))
    {
        wrong.push(format!(
            "401 without a resource_metadata challenge: {challenge:?}"
        ));
    }
    if status == StatusCode::METHOD_NOT_ALLOWED && allow.is_none() {
        wrong.push("405 without Allow".into());
    }
    if wrong.is_empty() {
        Ok(())
    } else {
        Err(wrong.join("; "))
    }
}

#[tokio::test]
async fn every_bad_input_is_refused_with_its_status_code_and_security_headers() {
    let server = Server::start(|config| config).await;
    let cases = table();
    assert!(cases.len() >= 40, "the table has {} cases", cases.len());
    let mut failures = Vec::new();
    for case in &cases {
        assert_ne!(case.status, StatusCode::OK, "{} expects success", case.name);
        if let Err(wrong) = check(&server, case).await {
            failures.push(format!("{}: {wrong}", case.name));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

#[tokio::test]
async fn the_protected_resource_metadata_named_by_the_challenge_is_served() {
    let server = Server::start(|config| config).await;
    let refused = server.client.post(server.url("/mcp")).send().await.unwrap();
    let challenge = refused.headers()[header::WWW_AUTHENTICATE]
        .to_str()
        .unwrap();
    let url = challenge
        .split("resource_metadata=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap()
        .to_owned();
    let response = server.client.get(&url).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    for name in &SECURITY_HEADERS {
        assert!(response.headers().contains_key(name), "missing {name}");
    }
    let document: Value = response.json().await.unwrap();
    assert_eq!(document["resource"], server.url("/mcp"));
    assert_eq!(document["authorization_servers"][0], "https://auth.example");
    assert_eq!(document["scopes_supported"][0], "rpc");
}

#[tokio::test]
async fn a_well_formed_request_in_the_same_server_is_answered() {
    let server = Server::start(|config| config).await;
    let id = server.open_session().await;
    let response = server.call(&id, std::str::from_utf8(ECHO).unwrap()).await;
    assert_eq!(response.status(), StatusCode::OK);
    for name in &SECURITY_HEADERS {
        assert!(response.headers().contains_key(name), "missing {name}");
    }
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["result"], serde_json::json!({ "a": 1 }));
}

async fn post_ping(server: &Server) -> reqwest::Response {
    server
        .request(Method::POST, "/mcp")
        .body(PING)
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn a_subject_past_its_rate_limit_is_refused_with_429_and_retry_after() {
    let server = Server::start(|config| config.rate_limit(Some(RateLimit::new(0.01, 3)))).await;
    for _ in 0..3 {
        assert_eq!(post_ping(&server).await.status(), StatusCode::OK);
    }
    let refused = post_ping(&server).await;
    assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
    let retry_after: u64 = refused.headers()[header::RETRY_AFTER]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(retry_after >= 1);
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["error"]["code"], -32012);
}

#[tokio::test]
async fn a_request_past_the_deadline_is_refused_with_504() {
    let server =
        Server::start(|config| config.request_deadline(Some(Duration::from_millis(200)))).await;
    let id = server.open_session().await;
    let response = server
        .call(&id, r#"{"jsonrpc":"2.0","id":9,"method":"sleep"}"#)
        .await;
    assert_eq!(response.status(), StatusCode::GATEWAY_TIMEOUT);
    for name in &SECURITY_HEADERS {
        assert!(response.headers().contains_key(name), "missing {name}");
    }
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], -32015);
}

#[tokio::test]
async fn a_request_past_the_concurrency_limit_is_shed_with_503() {
    let server = Arc::new(Server::start(|config| config.max_concurrency(Some(1))).await);
    let id = server.open_session().await;
    let slow = {
        let (server, id) = (Arc::clone(&server), id.clone());
        tokio::spawn(async move {
            server
                .call(&id, r#"{"jsonrpc":"2.0","id":9,"method":"sleep"}"#)
                .await
                .status()
        })
    };
    // The slow call holds the only permit for five seconds once it arrives; until then a ping
    // may still be served, so ask until one is shed.
    let mut shed = post_ping(&server).await;
    for _ in 0..40 {
        if shed.status() != StatusCode::OK {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        shed = post_ping(&server).await;
    }
    assert_eq!(shed.status(), StatusCode::SERVICE_UNAVAILABLE);
    let body: Value = shed.json().await.unwrap();
    assert_eq!(body["error"]["code"], -32013);
    slow.abort();
}

/// An absolute-form request for `/mcp` naming `authority`, with `Host: host`.
fn absolute_form(authority: &str, host: &str) -> Vec<u8> {
    raw_request(
        &format!("POST http://{authority}/mcp HTTP/1.1"),
        &[
            &format!("host: {host}"),
            &format!("authorization: Bearer {GOOD_TOKEN}"),
            "content-type: application/json",
            "accept: application/json",
        ],
        std::str::from_utf8(PING).unwrap(),
    )
}

#[tokio::test]
async fn an_absolute_form_target_is_judged_by_its_own_authority_not_by_host() {
    let server = Server::start(|config| config).await;
    let own = server.address.to_string();
    let mut connection = RawConnection::open(server.address).await;
    let foreign = connection
        .exchange(&absolute_form("evil.example", &own))
        .await;
    assert_eq!(foreign.status, 421);
    for name in &SECURITY_HEADERS {
        assert!(foreign.header(name.as_str()).is_some(), "missing {name}");
    }
    let body = foreign.json();
    assert_eq!(body["error"]["code"], -32004);
    assert!(!String::from_utf8_lossy(&foreign.body).contains(MARKER));
    // The target's authority replaces Host (RFC 9112 §3.2.2): a foreign Host is ignored.
    let mut connection = RawConnection::open(server.address).await;
    let own_target = connection
        .exchange(&absolute_form(&own, "evil.example"))
        .await;
    assert_eq!(own_target.status, 200);
    assert_eq!(own_target.json()["id"], 3);
}
