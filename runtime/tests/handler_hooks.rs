//! The hooks a protocol uses over a real socket: the HTTP status (and `Retry-After`) its profile
//! declares for an error (on a single request's JSON answer, and only there), the JSON-RPC codes
//! its binding answers the transport's refusals with, an error answered before anything was
//! streamed going out as plain JSON to a client that accepts only SSE, and a handler closing its
//! request's SSE stream early (SSE polling) and finishing on the stream the client resumes.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::Duration;

use common::{TestServer, request, serve, test_hardening};
use http::{HeaderMap, HeaderName, StatusCode};
use protocols_runtime::hardening::{Refusal, RefusalAnswer};
use protocols_runtime::http::HttpConfig;
use protocols_runtime::jsonrpc::to_raw;
use protocols_runtime::server::ServerBuilder;
use protocols_runtime::{
    BatchPolicy, Context, ErrorHead, ErrorObject, Message, Notification, Profile, Reply, Request,
    RequestHandler, Unsessioned,
};
use protocols_testkit::{ACCEPT_EITHER, drain, event_stream_get, json_rpc_post};
use serde_json::{Value, json};

const SESSION: &str = "hooks-session";
const MISSING_CAPABILITY: i64 = -32021;
const MAPPED_TO_SUCCESS: i64 = -32098;
const LATER: i64 = -32097;
const RETRY_AFTER_SECS: u64 = 7;
const BUSY: i64 = -32013;
const NOT_FOUND_STATELESS: i64 = -32601;
const RETRY: Duration = Duration::from_millis(40);

/// `open` opens a session, `stateless/*` stands alone; `fail` answers the error code it is
/// given; `poll` notifies, closes its stream, notifies again and says whether it could close.
struct Hooks {
    profile: Profile,
}

impl Hooks {
    fn new() -> Self {
        Self {
            profile: Profile::new()
                .with_session_header(HeaderName::from_static(SESSION))
                .with_batches(BatchPolicy::Accept)
                .with_error_statuses(&[
                    (MISSING_CAPABILITY, StatusCode::BAD_REQUEST),
                    (MAPPED_TO_SUCCESS, StatusCode::OK),
                    (BUSY, StatusCode::SERVICE_UNAVAILABLE),
                ])
                .with_sessionless_error_statuses(&[
                    (NOT_FOUND_STATELESS, StatusCode::NOT_FOUND),
                    (BUSY, StatusCode::TOO_MANY_REQUESTS),
                ])
                .with_error_heads(later_is_429)
                .with_refusal_answers(own_codes),
        }
    }
}

/// An error asking to be retried later (by its data) is a `429` with `Retry-After`.
fn later_is_429(error: &ErrorObject) -> Option<ErrorHead> {
    let later = error.code == LATER
        && error
            .data
            .as_ref()
            .is_some_and(|data| data["later"] == true);
    later.then_some(ErrorHead {
        status: StatusCode::TOO_MANY_REQUESTS,
        retry_after: Some(RETRY_AFTER_SECS),
    })
}

/// The protocol's own codes for three refusals; a malformed body is answered with `200`.
fn own_codes(refusal: &Refusal) -> Option<RefusalAnswer> {
    match refusal {
        Refusal::ParseError => Some(RefusalAnswer {
            code: -32700,
            status: Some(StatusCode::OK),
        }),
        Refusal::UnsupportedMediaType => Some(RefusalAnswer {
            code: -32600,
            // Not a malformed body: the refusal keeps its 415.
            status: Some(StatusCode::OK),
        }),
        Refusal::MethodNotAllowed(_) => Some(RefusalAnswer {
            code: -32601,
            status: None,
        }),
        _ => None,
    }
}

impl RequestHandler for Hooks {
    type Session = ();

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

    async fn handle(&self, request: Request, cx: Context<()>) -> Reply {
        let params: Value = request
            .params
            .as_ref()
            .and_then(|raw| serde_json::from_str(raw.get()).ok())
            .unwrap_or(Value::Null);
        let reply = match request.method.as_str() {
            "open" => json!({}),
            "fail" | "stateless/fail" => {
                let code = params["code"].as_i64().unwrap_or(-32000);
                let error = ErrorObject::new(code, "failed as asked");
                return Err(match params.get("data") {
                    Some(data) => error.with_data(data.clone()),
                    None => error,
                });
            }
            "stateless/ok" => json!({"ok": true}),
            "poll" | "stateless/poll" => {
                // Over JSON there is no stream to notify on; only the close's outcome matters.
                let _ = cx.peer().notify("step", &json!({"at": "before"}));
                let closed = cx.close_stream(RETRY).is_ok();
                tokio::time::sleep(Duration::from_millis(30)).await;
                let _ = cx.peer().notify("step", &json!({"at": "after"}));
                json!({"closed": closed})
            }
            _ => return Err(ErrorObject::method_not_found()),
        };
        to_raw(&reply).map_err(|_| ErrorObject::internal_error())
    }

    async fn notify(&self, _notification: Notification, _cx: Context<()>) {}
}

async fn start() -> TestServer {
    let server = ServerBuilder::new()
        .hardening(test_hardening())
        .streamable_http("/rpc", Hooks::new(), HttpConfig::default())
        .build()
        .expect("server builds");
    serve(server).await
}

struct Caller {
    http: reqwest::Client,
    url: String,
    session: Option<String>,
}

impl Caller {
    async fn open(server: &TestServer) -> Self {
        let mut caller = Self {
            http: reqwest::Client::new(),
            url: server.url("/rpc"),
            session: None,
        };
        let opened = caller.post(&request(0, "open", json!({})), JSON).await;
        caller.session = opened
            .headers()
            .get(SESSION)
            .map(|value| value.to_str().unwrap().to_owned());
        assert!(caller.session.is_some(), "open issued no session");
        caller
    }

    async fn post(&self, body: &Value, accept: &str) -> reqwest::Response {
        let session = self.session.as_deref().map(|session| (SESSION, session));
        json_rpc_post(&self.http, &self.url, accept, session, body)
            .send()
            .await
            .unwrap()
    }

    async fn resume(&self, last_event_id: u64) -> reqwest::Response {
        let cursor = last_event_id.to_string();
        let headers = [
            (SESSION, self.session.as_deref().unwrap()),
            ("last-event-id", cursor.as_str()),
        ];
        event_stream_get(&self.http, &self.url, headers)
            .send()
            .await
            .unwrap()
    }
}

const JSON: &str = "application/json";

fn steps(messages: &[Value]) -> Vec<&str> {
    messages
        .iter()
        .filter(|message| message["method"] == "step")
        .filter_map(|message| message["params"]["at"].as_str())
        .collect()
}

fn answer(messages: &[Value], id: i64) -> Option<&Value> {
    messages.iter().find(|message| message["id"] == id)
}

#[tokio::test]
async fn an_error_whose_code_the_profile_maps_is_answered_with_that_status() {
    let server = start().await;
    let caller = Caller::open(&server).await;

    let mapped = caller
        .post(
            &request(1, "fail", json!({"code": MISSING_CAPABILITY})),
            JSON,
        )
        .await;
    assert_eq!(mapped.status(), StatusCode::BAD_REQUEST);
    let body: Value = mapped.json().await.unwrap();
    assert_eq!(body["error"]["code"], MISSING_CAPABILITY);
    assert_eq!(body["id"], 1);

    let unmapped = caller
        .post(&request(2, "fail", json!({"code": -32000})), JSON)
        .await;
    assert_eq!(unmapped.status(), StatusCode::OK);
}

#[tokio::test]
async fn a_sessionless_answer_follows_the_sessionless_statuses_and_a_session_answer_does_not() {
    let server = start().await;
    let caller = Caller::open(&server).await;
    let sessionless = Caller {
        http: reqwest::Client::new(),
        url: server.url("/rpc"),
        session: None,
    };
    let unknown = json!({"code": NOT_FOUND_STATELESS});
    let alone = sessionless
        .post(&request(1, "stateless/fail", unknown.clone()), JSON)
        .await;
    assert_eq!(alone.status(), StatusCode::NOT_FOUND);
    let in_session = caller.post(&request(2, "fail", unknown), JSON).await;
    assert_eq!(in_session.status(), StatusCode::OK);
    // A code only the session table names keeps its status there and takes the sessionless
    // table's elsewhere.
    let busy = json!({"code": BUSY});
    let alone = sessionless
        .post(&request(3, "stateless/fail", busy.clone()), JSON)
        .await;
    assert_eq!(alone.status(), StatusCode::TOO_MANY_REQUESTS);
    let in_session = caller.post(&request(4, "fail", busy), JSON).await;
    assert_eq!(in_session.status(), StatusCode::SERVICE_UNAVAILABLE);
}

#[tokio::test]
async fn a_503_or_429_answer_carries_retry_after_from_its_data_or_one_second() {
    let server = start().await;
    let caller = Caller::open(&server).await;
    let told = caller
        .post(
            &request(
                1,
                "fail",
                json!({"code": BUSY, "data": {"retryAfterSeconds": 7}}),
            ),
            JSON,
        )
        .await;
    assert_eq!(told.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(told.headers()["retry-after"], "7");
    let untold = caller
        .post(&request(2, "fail", json!({"code": BUSY})), JSON)
        .await;
    assert_eq!(untold.headers()["retry-after"], "1");
    let unmapped = caller
        .post(
            &request(3, "fail", json!({"code": MISSING_CAPABILITY})),
            JSON,
        )
        .await;
    assert!(unmapped.headers().get("retry-after").is_none());
}

#[tokio::test]
async fn a_mapping_to_a_status_that_is_not_an_error_is_ignored() {
    let server = start().await;
    let caller = Caller::open(&server).await;
    let answered = caller
        .post(
            &request(1, "fail", json!({"code": MAPPED_TO_SUCCESS})),
            JSON,
        )
        .await;
    assert_eq!(answered.status(), StatusCode::OK);
}

#[tokio::test]
async fn a_mapped_error_inside_a_batch_leaves_the_batch_at_200() {
    let server = start().await;
    let caller = Caller::open(&server).await;
    let batch = json!([
        request(1, "fail", json!({"code": MISSING_CAPABILITY})),
        request(2, "open", json!({})),
    ]);
    let answered = caller.post(&batch, JSON).await;
    assert_eq!(answered.status(), StatusCode::OK);
    let body: Value = answered.json().await.unwrap();
    assert_eq!(body.as_array().map(Vec::len), Some(2));
}

#[tokio::test]
async fn a_mapped_error_answered_on_an_auto_framed_request_still_carries_its_status() {
    let server = start().await;
    let caller = Caller::open(&server).await;
    let answered = caller
        .post(
            &request(1, "fail", json!({"code": MISSING_CAPABILITY})),
            ACCEPT_EITHER,
        )
        .await;
    assert_eq!(answered.status(), StatusCode::BAD_REQUEST);
    assert_eq!(answered.headers()["content-type"], JSON);
}

#[tokio::test]
async fn a_stream_closed_early_ends_with_a_retry_and_the_resume_delivers_the_rest() {
    let server = start().await;
    let caller = Caller::open(&server).await;

    let first = drain(
        caller
            .post(&request(7, "poll", json!({})), ACCEPT_EITHER)
            .await,
    )
    .await;
    assert_eq!(steps(&first.messages), ["before"]);
    assert!(
        answer(&first.messages, 7).is_none(),
        "the answer came before the close"
    );
    assert_eq!(first.retry, Some(RETRY));
    let last_event_id = first.last_event_id.expect("an id to resume from");

    let resumed = drain(caller.resume(last_event_id).await).await;
    assert_eq!(steps(&resumed.messages), ["after"]);
    let answer = answer(&resumed.messages, 7).expect("the answer on the resumed stream");
    assert_eq!(answer["result"]["closed"], true);
}

#[tokio::test]
async fn a_request_answered_as_plain_json_has_no_stream_to_close() {
    let server = start().await;
    let caller = Caller::open(&server).await;
    let answered = caller.post(&request(1, "poll", json!({})), JSON).await;
    let body: Value = answered.json().await.unwrap();
    assert_eq!(body["result"]["closed"], false);
}

#[tokio::test]
async fn a_stateless_request_cannot_close_its_stream_since_nobody_could_resume_it() {
    let server = start().await;
    let caller = Caller {
        http: reqwest::Client::new(),
        url: server.url("/rpc"),
        session: None,
    };
    let drained = drain(
        caller
            .post(&request(3, "stateless/poll", json!({})), ACCEPT_EITHER)
            .await,
    )
    .await;
    assert_eq!(steps(&drained.messages), ["before", "after"]);
    assert_eq!(
        answer(&drained.messages, 3).map(|answer| answer["result"]["closed"].clone()),
        Some(json!(false))
    );
}

const SSE_ONLY: &str = "text/event-stream";

fn stateless(server: &TestServer) -> Caller {
    Caller {
        http: reqwest::Client::new(),
        url: server.url("/rpc"),
        session: None,
    }
}

#[tokio::test]
async fn an_error_head_the_profile_reads_from_the_whole_error_sets_status_and_retry_after() {
    let server = start().await;
    let caller = stateless(&server);
    let later = caller
        .post(
            &request(
                1,
                "stateless/fail",
                json!({"code": LATER, "data": {"later": true}}),
            ),
            JSON,
        )
        .await;
    assert_eq!(later.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(later.headers()["retry-after"], RETRY_AFTER_SECS.to_string());
    let body: Value = later.json().await.unwrap();
    assert_eq!(body["error"]["code"], LATER);
    // The same code without what the head reads from its data is a plain 200.
    let plain = caller
        .post(&request(2, "stateless/fail", json!({"code": LATER})), JSON)
        .await;
    assert_eq!(plain.status(), StatusCode::OK);
    assert!(!plain.headers().contains_key("retry-after"));
}

#[tokio::test]
async fn transport_refusals_carry_the_protocols_codes_and_only_a_malformed_body_its_status() {
    let server = start().await;
    let http = reqwest::Client::new();
    let url = server.url("/rpc");
    let not_json = http
        .post(&url)
        .header("content-type", JSON)
        .header("accept", ACCEPT_EITHER)
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(not_json.status(), StatusCode::OK);
    assert_eq!(
        not_json.json::<Value>().await.unwrap()["error"]["code"],
        -32700
    );
    let wrong_type = http
        .post(&url)
        .header("content-type", "text/plain")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(wrong_type.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);
    assert_eq!(
        wrong_type.json::<Value>().await.unwrap()["error"]["code"],
        -32600
    );
    let wrong_method = http.put(&url).send().await.unwrap();
    assert_eq!(wrong_method.status(), StatusCode::METHOD_NOT_ALLOWED);
    assert!(wrong_method.headers().contains_key("allow"));
    assert!(
        wrong_method
            .headers()
            .contains_key("x-content-type-options")
    );
    assert_eq!(
        wrong_method.json::<Value>().await.unwrap()["error"]["code"],
        -32601
    );
}

#[tokio::test]
async fn a_client_accepting_only_sse_gets_an_early_error_as_plain_json_and_an_answer_as_a_stream() {
    let server = start().await;
    let caller = stateless(&server);
    let refused = caller
        .post(
            &request(1, "stateless/fail", json!({"code": -32000})),
            SSE_ONLY,
        )
        .await;
    assert_eq!(refused.headers()["content-type"], JSON);
    assert_eq!(
        refused.json::<Value>().await.unwrap()["error"]["code"],
        -32000
    );
    let answered = caller
        .post(&request(2, "stateless/ok", json!({})), SSE_ONLY)
        .await;
    assert_eq!(answered.headers()["content-type"], "text/event-stream");
    let drained = drain(answered).await;
    assert_eq!(
        answer(&drained.messages, 2).map(|answer| answer["result"]["ok"].clone()),
        Some(json!(true))
    );
}
