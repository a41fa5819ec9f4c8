//! Our client against our server over real sockets, through a proxy in the test that can cut
//! an answer's SSE stream after its first event, answer 404 once in place of the session, and
//! refuse with a 401 challenge: resumption by `Last-Event-ID`, opt-in re-initialization, the
//! stateless 2026-07-28 revision (negotiated, with its headers and `input_required` rounds),
//! transport options and typed HTTP errors.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod mcp_common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::Response;
use futures::StreamExt as _;
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use mcp_common::{Observed, fixture_server, spawn};
use protocols_mcp::Revision;
use protocols_mcp::client::{Callbacks, HttpClient, HttpError, HttpOptions};
use protocols_runtime::ErrorObject;
use protocols_runtime::method::ClientError;
use serde_json::{Value, json};
use tokio::net::TcpListener;

/// What the proxy does and what it saw.
#[derive(Default)]
struct Behaviour {
    cut_streams: AtomicBool,
    answer_404_once: AtomicBool,
    answer_401: AtomicBool,
    slow_stream_heads: AtomicBool,
    stream_heads_answered: AtomicUsize,
    cuts: AtomicUsize,
    initializes: AtomicUsize,
    resumes: Mutex<Vec<String>>,
    requests: Mutex<Vec<(String, HeaderMap)>>,
}

struct Proxy {
    upstream: String,
    http: reqwest::Client,
    behaviour: Arc<Behaviour>,
}

async fn forward(State(proxy): State<Arc<Proxy>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let body = axum::body::to_bytes(body, 1 << 20).await.unwrap();
    let method_name = serde_json::from_slice::<Value>(&body)
        .ok()
        .and_then(|message| {
            message
                .get("method")
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
        .unwrap_or_default();
    let behaviour = &proxy.behaviour;
    behaviour
        .requests
        .lock()
        .unwrap()
        .push((method_name.clone(), parts.headers.clone()));
    if method_name == "initialize" {
        behaviour.initializes.fetch_add(1, Ordering::SeqCst);
    }
    if let Some(cursor) = parts.headers.get("last-event-id") {
        behaviour
            .resumes
            .lock()
            .unwrap()
            .push(cursor.to_str().unwrap().to_owned());
    }
    if behaviour.answer_401.load(Ordering::SeqCst) {
        return Response::builder()
            .status(StatusCode::UNAUTHORIZED)
            .header(
                "www-authenticate",
                r#"Bearer error="invalid_token", resource_metadata="http://127.0.0.1:1/.well-known/oauth-protected-resource/mcp""#,
            )
            .body(Body::from("{}"))
            .unwrap();
    }
    if method_name == "tools/call"
        && parts.headers.contains_key("mcp-session-id")
        && behaviour.answer_404_once.swap(false, Ordering::SeqCst)
    {
        return Response::builder()
            .status(StatusCode::NOT_FOUND)
            .body(Body::from(r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"Session not found"}}"#))
            .unwrap();
    }
    let mut upstream = proxy
        .http
        .request(
            parts.method.clone(),
            format!("{}{}", proxy.upstream, parts.uri.path()),
        )
        .body(body);
    for (name, value) in &parts.headers {
        if name != http::header::HOST && name != http::header::CONTENT_LENGTH {
            upstream = upstream.header(name, value);
        }
    }
    let is_get = parts.method == http::Method::GET;
    if is_get && behaviour.slow_stream_heads.load(Ordering::SeqCst) {
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let answer = upstream.send().await.unwrap();
    if is_get {
        behaviour
            .stream_heads_answered
            .fetch_add(1, Ordering::SeqCst);
    }
    let mut response = Response::builder().status(answer.status());
    for (name, value) in answer.headers() {
        if name != http::header::CONTENT_LENGTH && name != http::header::TRANSFER_ENCODING {
            response = response.header(name, value);
        }
    }
    let is_stream = answer
        .headers()
        .get("content-type")
        .is_some_and(|value| value.to_str().unwrap().starts_with("text/event-stream"));
    let cut = is_stream
        && parts.method == http::Method::POST
        && behaviour.cut_streams.load(Ordering::SeqCst);
    if !cut {
        return response
            .body(Body::from_stream(answer.bytes_stream()))
            .unwrap();
    }
    // Forward events until the first notification carrying an id, then end the body cleanly:
    // the answer is still in the server's event tail, to be resumed.
    let behaviour = Arc::clone(&proxy.behaviour);
    let events = async_stream(answer, behaviour);
    response.body(Body::from_stream(events)).unwrap()
}

fn async_stream(
    answer: reqwest::Response,
    behaviour: Arc<Behaviour>,
) -> impl futures::Stream<Item = Result<bytes::Bytes, std::io::Error>> {
    futures::stream::unfold(
        (answer.bytes_stream(), String::new(), false),
        move |(mut chunks, mut buffer, done)| {
            let behaviour = Arc::clone(&behaviour);
            async move {
                if done {
                    return None;
                }
                loop {
                    if let Some(end) = buffer.find("\n\n") {
                        let event: String = buffer.drain(..end + 2).collect();
                        let cut_here = event.contains("\nid:") || event.starts_with("id:");
                        let cut_here = cut_here && event.contains("\"method\"");
                        if cut_here {
                            behaviour.cuts.fetch_add(1, Ordering::SeqCst);
                        }
                        return Some((Ok(bytes::Bytes::from(event)), (chunks, buffer, cut_here)));
                    }
                    match chunks.next().await {
                        Some(Ok(chunk)) => buffer.push_str(&String::from_utf8_lossy(&chunk)),
                        _ => {
                            let rest = std::mem::take(&mut buffer);
                            return (!rest.is_empty()).then(|| {
                                (Ok(bytes::Bytes::from(rest)), (chunks, String::new(), true))
                            });
                        }
                    }
                }
            }
        },
    )
}

/// Our fixture server behind the proxy; returns the proxy's `/mcp` URL.
async fn proxied(behaviour: &Arc<Behaviour>) -> (String, mcp_common::Running) {
    let running = spawn(fixture_server(&Observed::default())).await;
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let proxy = Arc::new(Proxy {
        upstream: format!("http://{}", running.address),
        http: reqwest::Client::new(),
        behaviour: Arc::clone(behaviour),
    });
    let app = axum::Router::new().fallback(forward).with_state(proxy);
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://{address}/mcp"), running)
}

fn callbacks() -> Callbacks {
    Callbacks::new(|method, _params| async move {
        match method.as_str() {
            "sampling/createMessage" => Ok(
                json!({"role": "assistant", "content": {"type": "text", "text": "ok"}, "model": "typed-model"}),
            ),
            "elicitation/create" => Ok(json!({"action": "accept", "content": {"name": "Typed"}})),
            _ => Err(ErrorObject::method_not_found()),
        }
    })
}

fn capabilities() -> Value {
    json!({"sampling": {}, "elicitation": {}, "roots": {}})
}

fn text_of(result: &Value) -> String {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

async fn call(client: &HttpClient, name: &str, arguments: Value) -> Value {
    client
        .request(
            "tools/call",
            Some(json!({"name": name, "arguments": arguments})),
        )
        .await
        .unwrap_or_else(|error| panic!("{name}: {error}"))
}

fn fast_retry() -> HttpOptions {
    HttpOptions::default().default_retry(Duration::from_millis(20))
}

#[tokio::test]
async fn a_cut_answer_stream_is_resumed_with_last_event_id_on_every_resumable_revision() {
    for revision in [
        Revision::V2025_03_26,
        Revision::V2025_06_18,
        Revision::V2025_11_25,
    ] {
        let behaviour = Arc::new(Behaviour::default());
        let (url, _server) = proxied(&behaviour).await;
        let client = HttpClient::with_options(url, callbacks(), fast_retry());
        client.initialize(revision, capabilities()).await.unwrap();
        behaviour.cut_streams.store(true, Ordering::SeqCst);
        let done = client
            .request(
                "tools/call",
                Some(json!({"name": "work", "arguments": {}, "_meta": {"progressToken": 7}})),
            )
            .await
            .unwrap();
        assert_eq!(text_of(&done), "done", "{revision}");
        assert!(
            behaviour.cuts.load(Ordering::SeqCst) >= 1,
            "{revision}: nothing was cut"
        );
        let resumes = behaviour.resumes.lock().unwrap().clone();
        assert!(!resumes.is_empty(), "{revision}: no GET with Last-Event-ID");
        let progress: Vec<Value> = client
            .callbacks()
            .take_notifications()
            .into_iter()
            .filter(|message| message["method"] == "notifications/progress")
            .collect();
        assert_eq!(
            progress.len(),
            2,
            "{revision}: each progress once, none lost or repeated"
        );
        assert_eq!(client.close().await.unwrap(), 200);
    }
}

#[tokio::test]
async fn a_session_answering_404_is_reinitialized_once_when_the_client_opted_in() {
    let behaviour = Arc::new(Behaviour::default());
    let (url, _server) = proxied(&behaviour).await;
    let client = HttpClient::with_options(
        url,
        callbacks(),
        HttpOptions::default().reinitialize_on_404(),
    );
    client
        .initialize(Revision::V2025_11_25, capabilities())
        .await
        .unwrap();
    let first_session = client.session().unwrap();
    behaviour.answer_404_once.store(true, Ordering::SeqCst);
    let echoed = call(&client, "echo", json!({"message": "again"})).await;
    assert_eq!(text_of(&echoed), "again");
    assert_eq!(behaviour.initializes.load(Ordering::SeqCst), 2);
    assert_ne!(client.session().unwrap(), first_session);
}

#[tokio::test]
async fn without_the_opt_in_a_404_surfaces_as_an_http_error_with_its_status() {
    let behaviour = Arc::new(Behaviour::default());
    let (url, _server) = proxied(&behaviour).await;
    let client = HttpClient::new(url, callbacks());
    client
        .initialize(Revision::V2025_11_25, capabilities())
        .await
        .unwrap();
    behaviour.answer_404_once.store(true, Ordering::SeqCst);
    let error = client
        .request(
            "tools/call",
            Some(json!({"name": "echo", "arguments": {"message": "x"}})),
        )
        .await
        .unwrap_err();
    let http = HttpError::of(&error).unwrap_or_else(|| panic!("{error:?}"));
    assert_eq!(http.status, StatusCode::NOT_FOUND);
    assert_eq!(behaviour.initializes.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn connect_negotiates_the_stateless_revision_with_our_server_and_speaks_it() {
    let behaviour = Arc::new(Behaviour::default());
    let (url, _server) = proxied(&behaviour).await;
    let client = HttpClient::new(url, callbacks());
    let connected = client.connect(capabilities()).await.unwrap();
    assert_eq!(connected.revision, Revision::V2026_07_28);
    assert_eq!(client.revision(), Some(Revision::V2026_07_28));
    let listed = client.request("tools/list", None).await.unwrap();
    assert_eq!(listed["resultType"], "complete");
    assert!(
        listed["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|tool| tool["name"] == "echo")
    );
    assert_eq!(
        text_of(&call(&client, "echo", json!({"message": "stateless"})).await),
        "stateless"
    );
    let read = client
        .request("resources/read", Some(json!({"uri": "test://item/4"})))
        .await
        .unwrap();
    assert_eq!(read["contents"][0]["text"], "item 4");
    let prompt = client
        .request(
            "prompts/get",
            Some(json!({"name": "greet", "arguments": {"who": "you"}})),
        )
        .await
        .unwrap();
    assert_eq!(prompt["messages"][0]["content"]["text"], "hello you");
    assert!(client.session().is_none());
    let requests = behaviour.requests.lock().unwrap().clone();
    assert!(
        requests
            .iter()
            .all(|(_, headers)| !headers.contains_key("mcp-session-id"))
    );
    let (_, read_headers) = requests
        .iter()
        .find(|(method, _)| method == "resources/read")
        .unwrap();
    assert_eq!(read_headers["mcp-method"], "resources/read");
    assert_eq!(read_headers["mcp-name"], "test://item/4");
    assert_eq!(read_headers["mcp-protocol-version"], "2026-07-28");
    assert!(requests.iter().all(|(method, _)| method != "initialize"));
}

#[tokio::test]
async fn stateless_input_requests_are_answered_through_the_callbacks_and_retried() {
    let behaviour = Arc::new(Behaviour::default());
    let (url, _server) = proxied(&behaviour).await;
    let client = HttpClient::new(url, callbacks());
    client
        .initialize(Revision::V2026_07_28, capabilities())
        .await
        .unwrap();
    assert_eq!(
        text_of(&call(&client, "ask_model", json!({})).await),
        "model said typed-model"
    );
    assert_eq!(
        text_of(&call(&client, "ask_user", json!({})).await),
        "hello Typed"
    );
    let calls = behaviour
        .requests
        .lock()
        .unwrap()
        .iter()
        .filter(|(method, _)| method == "tools/call")
        .count();
    assert_eq!(
        calls, 4,
        "each tool once, then once more with its input responses"
    );
}

#[tokio::test]
async fn default_per_request_and_injected_client_headers_all_reach_the_server() {
    let behaviour = Arc::new(Behaviour::default());
    let (url, _server) = proxied(&behaviour).await;
    let mut injected = HeaderMap::new();
    injected.insert("x-injected", HeaderValue::from_static("client"));
    let http = reqwest::Client::builder()
        .default_headers(injected)
        .build()
        .unwrap();
    let options = HttpOptions::default().http_client(http).header(
        HeaderName::from_static("x-default"),
        HeaderValue::from_static("every"),
    );
    let client = HttpClient::with_options(url, callbacks(), options);
    client
        .initialize(Revision::V2025_11_25, capabilities())
        .await
        .unwrap();
    let mut once = HeaderMap::new();
    once.insert("x-once", HeaderValue::from_static("this-call"));
    client
        .request_with_headers("tools/list", None, &once)
        .await
        .unwrap();
    client.request("prompts/list", None).await.unwrap();
    let requests = behaviour.requests.lock().unwrap().clone();
    for (_, headers) in &requests {
        assert_eq!(headers["x-injected"], "client");
    }
    let posts: Vec<_> = requests
        .iter()
        .filter(|(method, _)| !method.is_empty())
        .collect();
    assert!(
        posts
            .iter()
            .all(|(_, headers)| headers["x-default"] == "every")
    );
    let (_, listed) = posts
        .iter()
        .find(|(method, _)| method == "tools/list")
        .unwrap();
    assert_eq!(listed["x-once"], "this-call");
    let (_, prompts) = posts
        .iter()
        .find(|(method, _)| method == "prompts/list")
        .unwrap();
    assert!(!prompts.contains_key("x-once"));
}

#[tokio::test]
async fn a_call_outliving_the_request_timeout_fails_saying_so() {
    let behaviour = Arc::new(Behaviour::default());
    let (url, _server) = proxied(&behaviour).await;
    let options = HttpOptions::default().request_timeout(Duration::from_millis(300));
    let client = HttpClient::with_options(url, callbacks(), options);
    client
        .initialize(Revision::V2025_11_25, capabilities())
        .await
        .unwrap();
    let error = client
        .request(
            "tools/call",
            Some(json!({"name": "wait_for_cancel", "arguments": {}})),
        )
        .await
        .unwrap_err();
    assert!(error.to_string().contains("within"), "{error}");
}

#[tokio::test]
async fn a_401_surfaces_with_its_status_and_parsed_challenge() {
    let behaviour = Arc::new(Behaviour::default());
    let (url, _server) = proxied(&behaviour).await;
    behaviour.answer_401.store(true, Ordering::SeqCst);
    let client = HttpClient::new(url, callbacks());
    let error = client
        .initialize(Revision::V2025_11_25, capabilities())
        .await
        .unwrap_err();
    let http = HttpError::of(&error).unwrap_or_else(|| panic!("{error:?}"));
    assert_eq!(http.status, StatusCode::UNAUTHORIZED);
    let challenge = http.challenge().unwrap();
    assert_eq!(challenge.scheme, "Bearer");
    assert_eq!(challenge.error(), Some("invalid_token"));
    assert_eq!(
        challenge.resource_metadata(),
        Some("http://127.0.0.1:1/.well-known/oauth-protected-resource/mcp")
    );
    assert!(!matches!(error, ClientError::Rejected(_)));
}

#[tokio::test]
async fn notifications_past_the_buffer_bound_are_dropped_oldest_first_and_counted() {
    let behaviour = Arc::new(Behaviour::default());
    let (url, _server) = proxied(&behaviour).await;
    let client = HttpClient::new(url, callbacks().with_notification_limit(1));
    client
        .initialize(Revision::V2025_11_25, capabilities())
        .await
        .unwrap();
    client
        .request(
            "tools/call",
            Some(json!({"name": "work", "arguments": {}, "_meta": {"progressToken": "p"}})),
        )
        .await
        .unwrap();
    let kept = client.callbacks().take_notifications();
    assert_eq!(kept.len(), 1);
    assert_eq!(kept[0]["params"]["progress"], 2.0, "the newest is kept");
    assert!(client.callbacks().dropped_notifications() >= 1);
}

#[tokio::test]
async fn the_standalone_stream_is_opened_after_initialize_and_not_for_the_stateless_revision() {
    let behaviour = Arc::new(Behaviour::default());
    let (url, _server) = proxied(&behaviour).await;
    let client = HttpClient::new(url.clone(), callbacks());
    client
        .initialize(Revision::V2025_11_25, capabilities())
        .await
        .unwrap();
    let opened = async {
        loop {
            let gets = behaviour
                .requests
                .lock()
                .unwrap()
                .iter()
                .filter(|(method, headers)| {
                    method.is_empty() && headers["accept"] == "text/event-stream"
                })
                .count();
            if gets > 0 {
                return gets;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    assert_eq!(
        tokio::time::timeout(Duration::from_secs(5), opened)
            .await
            .unwrap(),
        1
    );
    let stateless = HttpClient::new(url, callbacks());
    let before = behaviour.requests.lock().unwrap().len();
    stateless
        .initialize(Revision::V2026_07_28, capabilities())
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let after = behaviour.requests.lock().unwrap()[before..].to_vec();
    assert!(
        after.iter().all(|(method, _)| !method.is_empty()),
        "a GET was sent statelessly"
    );
}

#[tokio::test]
async fn initialize_returns_once_the_standalone_stream_is_answered_so_no_server_request_is_raced() {
    let behaviour = Arc::new(Behaviour::default());
    behaviour.slow_stream_heads.store(true, Ordering::SeqCst);
    let (url, _server) = proxied(&behaviour).await;
    let client = HttpClient::new(url, callbacks());
    client
        .initialize(Revision::V2025_11_25, capabilities())
        .await
        .unwrap();
    assert_eq!(
        behaviour.stream_heads_answered.load(Ordering::SeqCst),
        1,
        "initialize returned before the server had answered the standalone GET"
    );
}
