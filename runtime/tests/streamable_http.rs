//! Streamable HTTP over a real loopback socket with a real HTTP client: framing, sessions and
//! their expiry, resumption, bidirectional calls, cancellation and shutdown.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{Endpoint, SESSION_HEADER, TestProtocol, request, serve_handler, serve_protocol};
use protocols_runtime::ManualClock;
use protocols_runtime::http::{HttpConfig, ResponseMode, StreamableHttp};
use protocols_runtime::server::ServerBuilder;
use protocols_runtime::session::SessionLimits;
use protocols_runtime::stream::StreamPolicy;
use protocols_testkit::{ACCEPT_EITHER, SseReader};
use reqwest::StatusCode;
use serde_json::{Value, json};

/// Sessions idle for 60 s expire on `clock`, reaped every 10 ms of real time.
fn expiring_after_a_minute_idle(clock: &Arc<ManualClock>) -> HttpConfig {
    HttpConfig::default()
        .clock(clock.clone())
        .sessions(
            SessionLimits::default()
                .idle(Duration::from_secs(60))
                .absolute(Duration::from_secs(3600))
                .max_live(100),
        )
        .reap_every(Duration::from_millis(10))
}

#[tokio::test]
async fn a_plain_request_is_answered_with_json_echoing_its_id() {
    let server = serve_protocol(HttpConfig::default()).await;
    let rpc = Endpoint::of(&server);
    let response = rpc
        .post(
            None,
            ACCEPT_EITHER,
            &request(41, "stateless/echo", json!({"text": "a\nb"})),
        )
        .await;
    assert_eq!(response.status(), StatusCode::OK);
    assert!(
        response.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("application/json")
    );
    let body: Value = response.json().await.unwrap();
    assert_eq!(
        body,
        json!({"jsonrpc": "2.0", "id": 41, "result": {"text": "a\nb"}})
    );
}

#[tokio::test]
async fn notifications_travel_on_the_request_stream_before_its_answer() {
    let server = serve_protocol(HttpConfig::default()).await;
    let rpc = Endpoint::of(&server);
    let session = rpc.open().await;
    let response = rpc
        .call(&session, 2, "notify-then-answer", json!({"count": 3}))
        .await;
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let mut events = SseReader::new(response);
    for i in 0..3 {
        let (_, message) = events.next_json().await.expect("a notification");
        assert_eq!(message["method"], "progress");
        assert_eq!(message["params"]["i"], i);
    }
    let (_, answer) = events.next_json().await.expect("the answer");
    assert_eq!(answer["id"], 2);
    assert_eq!(answer["result"]["sent"], 3);
    assert!(
        events.next().await.is_none(),
        "the stream ends after the answer"
    );
}

#[tokio::test]
async fn json_mode_answers_json_even_when_the_handler_notifies() {
    let config = HttpConfig::default().response_mode(ResponseMode::Json);
    let server = serve_protocol(config).await;
    let rpc = Endpoint::of(&server);
    let session = rpc.open().await;
    let response = rpc
        .call(&session, 3, "notify-then-answer", json!({"count": 2}))
        .await;
    assert!(
        response.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("application/json")
    );
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["result"]["sent"], 2);
}

#[tokio::test]
async fn sse_mode_streams_even_a_plain_answer() {
    let config = HttpConfig::default().response_mode(ResponseMode::Sse);
    let server = serve_protocol(config).await;
    let rpc = Endpoint::of(&server);
    let response = rpc
        .post(
            None,
            ACCEPT_EITHER,
            &request(4, "stateless/echo", json!({"x": 1})),
        )
        .await;
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let mut events = SseReader::new(response);
    let (id, answer) = events.next_json().await.expect("the answer");
    assert!(id.is_some(), "events carry resumable ids");
    assert_eq!(answer["result"]["x"], 1);
}

#[tokio::test]
async fn a_batch_is_answered_as_an_array_with_invalid_entries_answered_alone() {
    let server = serve_protocol(HttpConfig::default()).await;
    let rpc = Endpoint::of(&server);
    let session = rpc.open().await;
    let batch = json!([
        request(1, "echo", json!({"a": 1})),
        7,
        request(2, "fail", json!({}))
    ]);
    let response = rpc.post(Some(&session), "application/json", &batch).await;
    assert_eq!(response.status(), StatusCode::OK);
    let answers: Vec<Value> = response.json().await.unwrap();
    assert_eq!(answers.len(), 3);
    assert!(
        answers
            .iter()
            .any(|a| a["id"].is_null() && a["error"]["code"] == -32600)
    );
    assert!(
        answers
            .iter()
            .any(|a| a["id"] == 1 && a["result"]["a"] == 1)
    );
    assert!(
        answers
            .iter()
            .any(|a| a["id"] == 2 && a["error"]["code"] == -32000)
    );
}

#[tokio::test]
async fn notifications_alone_are_accepted_with_202_and_reach_the_handler() {
    let handler = TestProtocol::new();
    let seen = Arc::clone(&handler.notifications);
    let server = serve_handler(handler, HttpConfig::default()).await;
    let rpc = Endpoint::of(&server);
    let session = rpc.open().await;
    let note = json!({"jsonrpc": "2.0", "method": "hello"});
    let response = rpc.post(Some(&session), ACCEPT_EITHER, &note).await;
    assert_eq!(response.status(), StatusCode::ACCEPTED);
    assert_eq!(response.content_length(), Some(0));
    assert_eq!(*seen.lock().unwrap(), vec!["hello".to_owned()]);
}

#[tokio::test]
async fn a_request_needing_a_session_without_one_is_refused_with_400_echoing_its_id() {
    let server = serve_protocol(HttpConfig::default()).await;
    let rpc = Endpoint::of(&server);
    let response = rpc
        .post(None, ACCEPT_EITHER, &request(9, "echo", json!({})))
        .await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["id"], 9);
    assert_eq!(body["error"]["code"], -32600);
}

#[tokio::test]
async fn an_unknown_session_is_404_and_a_malformed_one_is_400() {
    let server = serve_protocol(HttpConfig::default()).await;
    let rpc = Endpoint::of(&server);
    let unknown = rpc.call("no-such-session", 1, "echo", json!({})).await;
    assert_eq!(unknown.status(), StatusCode::NOT_FOUND);
    let malformed = rpc.call("has space", 1, "echo", json!({})).await;
    assert_eq!(malformed.status(), StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn a_failed_opening_request_issues_no_session() {
    let server = serve_protocol(HttpConfig::default()).await;
    let rpc = Endpoint::of(&server);
    let response = rpc
        .post(
            None,
            "application/json",
            &request(1, "open", json!({"fail": true})),
        )
        .await;
    assert!(response.headers().get(SESSION_HEADER).is_none());
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], -32000);
}

#[tokio::test]
async fn after_delete_the_session_id_is_404() {
    let server = serve_protocol(HttpConfig::default()).await;
    let rpc = Endpoint::of(&server);
    let session = rpc.open().await;
    let echo = rpc.call(&session, 1, "echo", json!({})).await;
    assert_eq!(echo.status(), StatusCode::OK);
    let delete = rpc
        .client
        .delete(&rpc.url)
        .header(SESSION_HEADER, &session)
        .send()
        .await
        .unwrap();
    assert_eq!(delete.status(), StatusCode::OK);
    let after = rpc.call(&session, 2, "echo", json!({})).await;
    assert_eq!(after.status(), StatusCode::NOT_FOUND);
    let again = rpc
        .client
        .delete(&rpc.url)
        .header(SESSION_HEADER, &session)
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn an_idle_session_expires_under_the_injected_clock_without_any_delete() {
    let clock = Arc::new(ManualClock::new());
    let config = expiring_after_a_minute_idle(&clock);
    let server = serve_protocol(config).await;
    let rpc = Endpoint::of(&server);
    let session = rpc.open().await;
    clock.advance(Duration::from_secs(59));
    let still = rpc.call(&session, 1, "echo", json!({})).await;
    assert_eq!(still.status(), StatusCode::OK);
    clock.advance(Duration::from_secs(61));
    let gone = rpc.call(&session, 2, "echo", json!({})).await;
    assert_eq!(gone.status(), StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn the_session_cap_refuses_new_sessions_with_503() {
    let config = HttpConfig::default().sessions(SessionLimits::default().max_live(2));
    let server = serve_protocol(config).await;
    let rpc = Endpoint::of(&server);
    rpc.open().await;
    rpc.open().await;
    let third = rpc
        .post(None, ACCEPT_EITHER, &request(0, "open", json!({})))
        .await;
    assert_eq!(third.status(), StatusCode::SERVICE_UNAVAILABLE);
}

#[tokio::test]
async fn get_without_event_stream_in_accept_is_406_and_without_session_is_400() {
    let server = serve_protocol(HttpConfig::default()).await;
    let rpc = Endpoint::of(&server);
    let session = rpc.open().await;
    let json_only = rpc
        .client
        .get(&rpc.url)
        .header("accept", "application/json")
        .header(SESSION_HEADER, &session)
        .send()
        .await
        .unwrap();
    assert_eq!(json_only.status(), StatusCode::NOT_ACCEPTABLE);
    let no_session = rpc
        .client
        .get(&rpc.url)
        .header("accept", "text/event-stream")
        .send()
        .await
        .unwrap();
    assert_eq!(no_session.status(), StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn resuming_from_a_malformed_or_unknown_event_id_is_refused_never_an_empty_200() {
    let server = serve_protocol(HttpConfig::default()).await;
    let rpc = Endpoint::of(&server);
    let session = rpc.open().await;
    for (cursor, status) in [
        ("abc", StatusCode::BAD_REQUEST),
        ("-1", StatusCode::BAD_REQUEST),
        ("99999", StatusCode::GONE),
        ("1099511627776", StatusCode::GONE),
    ] {
        let response = rpc.event_stream(&session, Some(cursor)).await;
        assert_eq!(response.status(), status, "cursor {cursor}");
    }
}

#[tokio::test]
async fn resume_from_evicted_event_id_is_refused_with_410() {
    let config = HttpConfig::default()
        .tail_capacity(4)
        .response_mode(ResponseMode::Sse);
    let server = serve_protocol(config).await;
    let rpc = Endpoint::of(&server);
    let session = rpc.open().await;
    let response = rpc.call(&session, 5, "burst", json!({"count": 20})).await;
    let mut events = SseReader::new(response);
    let (first_id, _) = events.next_json().await.expect("first event");
    while events.next_json().await.is_some() {}
    let cursor = first_id.expect("an id").to_string();
    let resume = rpc.event_stream(&session, Some(&cursor)).await;
    assert_eq!(resume.status(), StatusCode::GONE);
    let body: Value = resume.json().await.unwrap();
    assert!(body["error"]["code"].is_i64());
}

#[tokio::test]
async fn a_stream_dropped_mid_flight_under_load_resumes_with_every_event_exactly_once_in_order() {
    const COUNT: u64 = 2_000;
    let config = HttpConfig::default()
        .tail_capacity(4_096)
        .response_mode(ResponseMode::Sse);
    let server = serve_protocol(config).await;
    let rpc = Endpoint::of(&server);
    let session = rpc.open().await;

    // Load beside the stream: other requests on the same session while it runs.
    let load = {
        let (rpc, session) = (rpc.clone(), session.clone());
        tokio::spawn(async move {
            for n in 0..200 {
                let response = rpc
                    .post(
                        Some(&session),
                        "application/json",
                        &request(1000 + n, "echo", json!({"n": n})),
                    )
                    .await;
                assert_eq!(response.status(), StatusCode::OK);
            }
        })
    };

    let response = rpc
        .call(&session, 7, "burst", json!({"count": COUNT}))
        .await;
    let mut events = SseReader::new(response);
    let mut seen: Vec<u64> = Vec::new();
    while seen.len() < 300 {
        let (_, message) = events.next_json().await.expect("an event before the drop");
        seen.push(message["params"]["i"].as_u64().expect("an index"));
    }
    let cursor = events.last_event_id().expect("events carry ids");
    drop(events);

    let resumed = rpc.event_stream(&session, Some(&cursor.to_string())).await;
    assert_eq!(resumed.status(), StatusCode::OK);
    let mut events = SseReader::new(resumed);
    let mut answer = None;
    while let Some((_, message)) = events.next_json().await {
        if message.get("method").is_some() {
            seen.push(message["params"]["i"].as_u64().expect("an index"));
        } else {
            answer = Some(message);
            break;
        }
    }
    assert_eq!(
        seen,
        (0..COUNT).collect::<Vec<_>>(),
        "every event exactly once, in order"
    );
    assert_eq!(answer.expect("the final answer")["result"]["sent"], COUNT);
    load.await.unwrap();
}

#[tokio::test]
async fn a_server_to_client_request_is_answered_by_a_later_post() {
    let server = serve_protocol(HttpConfig::default()).await;
    let rpc = Endpoint::of(&server);
    let session = rpc.open().await;
    let response = rpc
        .call(&session, 11, "ask-client", json!({"q": "name?"}))
        .await;
    let mut events = SseReader::new(response);
    let (_, asked) = events.next_json().await.expect("the server's request");
    assert_eq!(asked["method"], "client/ask");
    assert_eq!(asked["params"]["q"], "name?");
    let answer = json!({"jsonrpc": "2.0", "id": asked["id"], "result": {"name": "tester"}});
    let ack = rpc.post(Some(&session), ACCEPT_EITHER, &answer).await;
    assert_eq!(ack.status(), StatusCode::ACCEPTED);
    let (_, reply) = events.next_json().await.expect("the final answer");
    assert_eq!(reply["id"], 11);
    assert_eq!(reply["result"]["client_said"]["name"], "tester");
}

#[tokio::test]
async fn a_server_to_client_request_that_times_out_is_cancelled_at_the_client() {
    let server = serve_protocol(HttpConfig::default()).await;
    let rpc = Endpoint::of(&server);
    let session = rpc.open().await;
    let response = rpc
        .call(&session, 12, "ask-client-briefly", json!({}))
        .await;
    let mut events = SseReader::new(response);
    let (_, asked) = events.next_json().await.expect("the server's request");
    let (_, cancel) = events.next_json().await.expect("the cancellation");
    assert_eq!(cancel["method"], common::CANCEL_METHOD);
    assert_eq!(cancel["params"]["requestId"], asked["id"]);
    let (_, reply) = events.next_json().await.expect("the final answer");
    assert_eq!(reply["error"]["code"], -32002);
}

#[tokio::test]
async fn a_cancellation_from_the_client_stops_the_running_request() {
    let server = serve_protocol(HttpConfig::default()).await;
    let rpc = Endpoint::of(&server);
    let session = rpc.open().await;
    let slow = {
        let (rpc, session) = (rpc.clone(), session.clone());
        tokio::spawn(async move {
            rpc.post(
                Some(&session),
                "application/json",
                &request(13, "slow", json!({})),
            )
            .await
        })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    let cancel =
        json!({"jsonrpc": "2.0", "method": common::CANCEL_METHOD, "params": {"requestId": 13}});
    let ack = rpc.post(Some(&session), ACCEPT_EITHER, &cancel).await;
    assert_eq!(ack.status(), StatusCode::ACCEPTED);
    let answered = tokio::time::timeout(Duration::from_secs(5), slow)
        .await
        .expect("cancelled well before 30 s");
    // The convention answers nothing, so the POST completes without a JSON-RPC answer.
    assert_eq!(answered.unwrap().status(), StatusCode::ACCEPTED);
}

#[tokio::test]
async fn the_session_stream_carries_messages_sent_while_answering_json() {
    let config = HttpConfig::default().response_mode(ResponseMode::Json);
    let server = serve_protocol(config).await;
    let rpc = Endpoint::of(&server);
    let session = rpc.open().await;
    let stream = rpc.event_stream(&session, None).await;
    assert_eq!(stream.status(), StatusCode::OK);
    let mut events = SseReader::new(stream);
    let answer = rpc
        .call(&session, 3, "notify-then-answer", json!({"count": 2}))
        .await;
    assert_eq!(answer.status(), StatusCode::OK);
    for i in 0..2 {
        let (_, message) = events
            .next_json()
            .await
            .expect("a notification on the session stream");
        assert_eq!(message["params"]["i"], i);
    }
}

#[tokio::test]
async fn keep_alive_comments_flow_on_an_idle_stream_and_dispatch_nothing() {
    let config = HttpConfig::default()
        .streams(StreamPolicy::default().keep_alive(Some(Duration::from_millis(20))));
    let server = serve_protocol(config).await;
    let rpc = Endpoint::of(&server);
    let session = rpc.open().await;
    let mut stream = rpc.event_stream(&session, None).await;
    let first = tokio::time::timeout(Duration::from_secs(5), stream.chunk())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(&first[..], b":\n\n");
}

#[tokio::test]
async fn a_polling_stream_is_closed_by_the_server_with_a_retry_and_resumes() {
    let config = HttpConfig::default()
        .response_mode(ResponseMode::Sse)
        .streams(
            StreamPolicy::default()
                .keep_alive(None)
                .close_after(Some(Duration::from_millis(150)))
                .retry(Some(Duration::from_millis(50))),
        );
    let server = serve_handler(TestProtocol::new().priming(), config).await;
    let rpc = Endpoint::of(&server);
    let session = rpc.open().await;
    // `ask-client` waits for the client, so the stream outlives the polling window.
    let response = rpc.call(&session, 21, "ask-client", json!({})).await;
    let mut events = SseReader::new(response);
    let priming = events.next().await.expect("a priming event");
    assert_eq!(priming.data(), "");
    let (_, asked) = events.next_json().await.expect("the server's request");
    assert!(
        events.next().await.is_none(),
        "the server closed the stream"
    );
    let cursor = events.last_event_id().expect("a cursor");
    let answer = json!({"jsonrpc": "2.0", "id": asked["id"], "result": "yes"});
    rpc.post(Some(&session), ACCEPT_EITHER, &answer).await;
    let resumed = rpc.event_stream(&session, Some(&cursor.to_string())).await;
    let mut events = SseReader::new(resumed);
    let (_, reply) = events.next_json().await.expect("the answer after resuming");
    assert_eq!(reply["id"], 21);
    assert_eq!(reply["result"]["client_said"], "yes");
}

#[tokio::test]
async fn the_version_header_reaches_the_handler_unjudged() {
    let server = serve_protocol(HttpConfig::default()).await;
    let rpc = Endpoint::of(&server);
    let session = rpc.open().await;
    let response = rpc
        .client
        .post(&rpc.url)
        .header("content-type", "application/json")
        .header("accept", "application/json")
        .header(SESSION_HEADER, &session)
        .header("test-version", "2099-01-01")
        .body(request(1, "whoami", json!({})).to_string())
        .send()
        .await
        .unwrap();
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["result"]["version"], "2099-01-01");
}

#[tokio::test]
async fn graceful_shutdown_ends_open_streams_and_the_server_returns() {
    let server = serve_protocol(HttpConfig::default()).await;
    let rpc = Endpoint::of(&server);
    let session = rpc.open().await;
    let stream = rpc.event_stream(&session, None).await;
    let mut events = SseReader::new(stream);
    let stopped = tokio::time::timeout(Duration::from_secs(5), server.stop()).await;
    assert!(
        matches!(stopped, Ok(Ok(()))),
        "the server stopped gracefully"
    );
    assert!(events.next().await.is_none(), "the stream ended cleanly");
}

#[tokio::test]
async fn a_wrong_content_type_is_415() {
    let server = serve_protocol(HttpConfig::default()).await;
    let rpc = Endpoint::of(&server);
    let response = rpc
        .client
        .post(&rpc.url)
        .header("content-type", "text/plain")
        .header("accept", ACCEPT_EITHER)
        .body(request(1, "stateless/echo", json!({})).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);
}

#[tokio::test]
async fn a_session_wide_peer_reaches_the_session_stream_after_the_request_answered() {
    let server = serve_protocol(HttpConfig::default()).await;
    let rpc = Endpoint::of(&server);
    let session = rpc.open().await;
    let stream = rpc.event_stream(&session, None).await;
    let mut events = SseReader::new(stream);
    let answer = rpc.call(&session, 1, "notify-later", json!({})).await;
    let body: Value = answer.json().await.unwrap();
    assert_eq!(body["result"], "scheduled");
    let (_, later) = events.next_json().await.expect("the later notification");
    assert_eq!(later["method"], "later");
}

#[tokio::test]
async fn a_protocol_rejection_keeps_its_status_echoes_the_id_and_stores_no_opening_session() {
    let config = HttpConfig::default().sessions(SessionLimits::default().max_live(1));
    let server = serve_protocol(config).await;
    let rpc = Endpoint::of(&server);
    let rejected = rpc
        .client
        .post(&rpc.url)
        .header("content-type", "application/json")
        .header("test-reject", "yes")
        .body(request(5, "open", json!({})).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(rejected.status(), StatusCode::BAD_REQUEST);
    assert!(rejected.headers().get(SESSION_HEADER).is_none());
    let body: Value = rejected.json().await.unwrap();
    assert_eq!(body["id"], 5);
    assert_eq!(body["error"]["code"], -32099);
    // The only slot is still free.
    rpc.open().await;
}

#[tokio::test]
async fn sessions_never_deleted_are_reaped_to_an_empty_store() {
    let clock = Arc::new(ManualClock::new());
    let config = expiring_after_a_minute_idle(&clock);
    let transport = StreamableHttp::new(TestProtocol::new(), config);
    let store = transport.store();
    let server = ServerBuilder::new()
        .hardening(common::test_hardening())
        .routes(transport.into_routes("/rpc"))
        .build()
        .unwrap();
    let server = common::serve(server).await;
    let rpc = Endpoint::of(&server);
    for _ in 0..5 {
        rpc.open().await;
    }
    assert_eq!(store.len(), 5);
    clock.advance(Duration::from_secs(61));
    for _ in 0..500 {
        if store.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(
        store.len(),
        0,
        "the reaper emptied the store without any request"
    );
}

#[tokio::test]
async fn a_protocol_without_sessions_serves_post_and_answers_get_and_delete_with_405() {
    let server = serve_handler(TestProtocol::sessionless(), HttpConfig::default()).await;
    let rpc = Endpoint::of(&server);
    let answer = rpc
        .post(None, ACCEPT_EITHER, &request(1, "echo", json!({"k": 1})))
        .await;
    assert_eq!(answer.status(), StatusCode::OK);
    let get = rpc
        .client
        .get(&rpc.url)
        .header("accept", "text/event-stream")
        .send()
        .await
        .unwrap();
    assert_eq!(get.status(), StatusCode::METHOD_NOT_ALLOWED);
    let delete = rpc.client.delete(&rpc.url).send().await.unwrap();
    assert_eq!(delete.status(), StatusCode::METHOD_NOT_ALLOWED);
}

#[tokio::test]
async fn a_batch_to_a_protocol_refusing_batches_is_refused_with_400() {
    let server = serve_handler(TestProtocol::sessionless(), HttpConfig::default()).await;
    let rpc = Endpoint::of(&server);
    let batch = json!([request(1, "echo", json!({})), request(2, "echo", json!({}))]);
    let response = rpc.post(None, ACCEPT_EITHER, &batch).await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], -32600);
}

#[tokio::test]
async fn partial_results_stream_as_responses_with_the_request_id_before_the_final_one() {
    let server = serve_handler(TestProtocol::sessionless(), HttpConfig::default()).await;
    let rpc = Endpoint::of(&server);
    let response = rpc
        .post(
            None,
            "text/event-stream",
            &request(8, "stream-results", json!({})),
        )
        .await;
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let mut events = SseReader::new(response);
    for part in ["first", "second", "final"] {
        let (_, answer) = events.next_json().await.expect("a result event");
        assert_eq!(answer["id"], 8);
        assert_eq!(answer["result"]["part"], part);
    }
    assert!(events.next().await.is_none());
}

#[tokio::test]
async fn an_answer_cut_right_after_its_priming_event_resumes_and_gets_the_answer() {
    let config = HttpConfig::default().response_mode(ResponseMode::Sse);
    let server = serve_handler(TestProtocol::new().priming(), config).await;
    let rpc = Endpoint::of(&server);
    let session = rpc.open().await;
    let response = rpc.call(&session, 31, "sleep", json!({"ms": 300})).await;
    let mut events = SseReader::new(response);
    let priming = events.next().await.expect("the priming event first");
    assert_eq!(priming.data(), "");
    let cursor = priming
        .id()
        .expect("the priming event carries an id")
        .to_owned();
    // The connection is cut before the answer exists.
    drop(events);
    let resumed = rpc.event_stream(&session, Some(&cursor)).await;
    assert_eq!(resumed.status(), 200);
    let (_, answer) = SseReader::new(resumed)
        .next_json()
        .await
        .expect("the answer after resuming");
    assert_eq!(answer["id"], 31);
    assert_eq!(answer["result"]["slept_ms"], 300);
}

#[tokio::test]
async fn an_answer_opens_with_its_first_message_when_the_protocol_does_not_prime() {
    let config = HttpConfig::default().response_mode(ResponseMode::Sse);
    let server = serve_protocol(config).await;
    let rpc = Endpoint::of(&server);
    let session = rpc.open().await;
    let response = rpc.call(&session, 32, "echo", json!({"n": 32})).await;
    let first = SseReader::new(response).next().await.expect("an event");
    assert!(!first.data().is_empty(), "no priming event: {first:?}");
}
