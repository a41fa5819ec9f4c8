//! Our typed client drives the test agent over both transports (stdio on a pipe, and HTTP at
//! `/acp`): every v1 agent method, permission allowed and rejected, capability gating,
//! cancellation mid-prompt, unknown sessions and extension methods. Every scenario ends by
//! validating each message either side sent against the pinned ACP v1 schema.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod acp_support;

use std::sync::atomic::Ordering;
use std::time::Duration;

use acp_support::{FILE_TEXT, Harness};
use protocols_acp::CallError;
use protocols_acp::generated::v1;
use protocols_runtime::method::ClientError;
use serde_json::{Value, json};

fn code(error: &ClientError) -> Option<i64> {
    match error {
        ClientError::Rejected(error) => Some(error.code),
        _ => None,
    }
}

fn raw_code(error: &CallError) -> Option<i64> {
    match error {
        CallError::Rejected(error) => Some(error.code),
        _ => None,
    }
}

async fn call(h: &Harness, method: &str, params: Value) -> Result<Value, CallError> {
    h.client
        .call_raw(method, &params)
        .await
        .map(|raw| serde_json::from_str(raw.get()).unwrap())
}

async fn every_v1_method(h: Harness) {
    assert_eq!(h.initialize(true).await, 1);
    let session = h.new_session().await;
    let id = session.0.clone();
    let calls = [
        ("authenticate", json!({"methodId": "none"})),
        (
            "session/load",
            json!({"sessionId": id, "cwd": "/", "mcpServers": []}),
        ),
        ("session/list", json!({})),
        ("session/resume", json!({"sessionId": id, "cwd": "/"})),
        (
            "session/set_mode",
            json!({"sessionId": id, "modeId": "default"}),
        ),
        (
            "session/set_config_option",
            json!({"sessionId": id, "configId": "c", "value": "v"}),
        ),
        (
            "session/prompt",
            json!({"sessionId": id, "prompt": [{"type": "text", "text": "hi"}]}),
        ),
        ("session/close", json!({"sessionId": id})),
        ("session/delete", json!({"sessionId": id})),
        ("logout", json!({})),
    ];
    for (method, params) in calls {
        let answer = call(&h, method, params).await;
        assert!(answer.is_ok(), "{method} failed: {answer:?}");
    }
    let listed = call(&h, "session/list", json!({})).await.unwrap();
    assert_eq!(listed["sessions"], json!([]), "the deleted session is gone");
    h.client.cancel(&id).await.unwrap();
    assert!(h.wire.assert_valid() >= 26);
}

async fn prompt_echo(h: Harness) {
    h.initialize(true).await;
    let session = h.new_session().await;
    let answer = h.prompt(&session, "hello agent").await.unwrap();
    assert!(matches!(answer.stop_reason, v1::types::StopReason::EndTurn));
    assert_eq!(h.editor.texts(), vec!["hello agent".to_owned()]);
    h.wire.assert_valid();
}

async fn read_allowed(h: Harness) {
    h.initialize(true).await;
    let session = h.new_session().await;
    h.prompt(&session, "read /etc/hostname").await.unwrap();
    assert_eq!(h.editor.permission_questions.load(Ordering::Relaxed), 1);
    assert_eq!(
        *h.editor.reads.lock().unwrap(),
        vec!["/etc/hostname".to_owned()]
    );
    assert_eq!(h.editor.texts(), vec![FILE_TEXT.to_owned()]);
    h.wire.assert_valid();
}

async fn read_rejected(h: Harness) {
    h.initialize(true).await;
    h.editor.reject.store(true, Ordering::Relaxed);
    let session = h.new_session().await;
    h.prompt(&session, "read /etc/hostname").await.unwrap();
    assert_eq!(h.editor.permission_questions.load(Ordering::Relaxed), 1);
    assert!(h.editor.reads.lock().unwrap().is_empty());
    assert_eq!(h.editor.texts(), vec!["permission denied".to_owned()]);
    h.wire.assert_valid();
}

async fn capability_gating(h: Harness) {
    h.initialize(false).await;
    let session = h.new_session().await;
    h.prompt(&session, "read /etc/hostname").await.unwrap();
    assert!(h.editor.reads.lock().unwrap().is_empty());
    assert_eq!(
        h.editor.texts(),
        vec!["not advertised: fs.readTextFile".to_owned()]
    );
    let asked_to_read = h
        .wire
        .sent_by_agent()
        .iter()
        .any(|message| message["method"] == "fs/read_text_file");
    assert!(
        !asked_to_read,
        "nothing was sent for a capability the client lacks"
    );
    h.wire.assert_valid();
}

async fn cancel_mid_prompt(h: Harness) {
    h.initialize(true).await;
    let session = h.new_session().await;
    let turn = h.prompt(&session, "slow");
    let cancel = async {
        while h.editor.texts().len() < 2 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        h.client.cancel(&session.0).await.unwrap();
    };
    let (answer, ()) = tokio::join!(turn, cancel);
    assert!(matches!(
        answer.unwrap().stop_reason,
        v1::types::StopReason::Cancelled
    ));
    h.wire.assert_valid();
}

async fn unknown_session(h: Harness) {
    h.initialize(true).await;
    let error = h
        .prompt(&v1::types::SessionId("nope".into()), "hi")
        .await
        .unwrap_err();
    assert_eq!(code(&error), Some(-32602));
    h.wire.assert_valid();
}

async fn extensions(h: Harness) {
    h.initialize(true).await;
    let echoed = call(&h, "_test/echo", json!({"x": 1})).await.unwrap();
    assert_eq!(echoed, json!({"x": 1}));
    let unknown = call(&h, "_test/unknown", json!({})).await.unwrap_err();
    assert_eq!(raw_code(&unknown), Some(-32601));
    h.client.notify_raw("_test/note", &json!({})).await.unwrap();
    h.wire.assert_valid();
}

async fn before_initialize(h: Harness) {
    let refused = call(&h, "session/new", json!({"cwd": "/", "mcpServers": []}))
        .await
        .unwrap_err();
    assert_eq!(raw_code(&refused), Some(-32600));
}

async fn unknown_method(h: Harness) {
    h.initialize(true).await;
    let refused = call(&h, "session/fork", json!({"sessionId": "x"}))
        .await
        .unwrap_err();
    assert_eq!(raw_code(&refused), Some(-32601));
    // The request itself is outside v1's schema on purpose; the agent's answers still fit it.
    let from_agent = h.wire.sent_by_agent();
    assert_eq!(
        from_agent
            .last()
            .map(|message| message["error"]["code"].clone()),
        Some(json!(-32601))
    );
}

macro_rules! on_both_transports {
    ($($name:ident => $scenario:ident;)*) => {
        mod stdio {
            use super::*;
            $(#[tokio::test] async fn $name() { $scenario(Harness::stdio().await).await })*
        }
        mod http {
            use super::*;
            $(#[tokio::test] async fn $name() { $scenario(Harness::http().await).await })*
        }
    };
}

on_both_transports! {
    every_v1_agent_method_is_answered_and_every_message_fits_the_schema => every_v1_method;
    a_prompt_streams_its_text_back_and_ends_the_turn => prompt_echo;
    an_allowed_read_asks_permission_then_reads_through_the_client => read_allowed;
    a_rejected_read_never_reaches_the_client_file_system => read_rejected;
    a_client_without_fs_read_is_never_sent_fs_read_text_file => capability_gating;
    session_cancel_ends_a_running_turn_with_stop_reason_cancelled => cancel_mid_prompt;
    an_unknown_session_is_refused_with_invalid_params => unknown_session;
    extension_methods_reach_the_catch_all_and_unknown_ones_are_minus_32601 => extensions;
    a_request_before_initialize_is_refused_as_invalid => before_initialize;
    a_method_v1_does_not_define_is_minus_32601 => unknown_method;
}

#[tokio::test]
async fn dropping_a_prompt_call_sends_cancel_request_and_the_turn_stops() {
    let h = Harness::stdio().await;
    h.initialize(true).await;
    let session = h.new_session().await;
    let abandoned =
        tokio::time::timeout(Duration::from_millis(150), h.prompt(&session, "slow")).await;
    assert!(abandoned.is_err(), "the slow turn was still running");
    tokio::time::sleep(Duration::from_millis(100)).await;
    let ticks = h.editor.texts().len();
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(
        h.editor.texts().len(),
        ticks,
        "the cancelled turn stopped streaming"
    );
    let sent = h.wire.sent_by_client();
    assert!(
        sent.iter()
            .any(|message| message["method"] == "$/cancel_request")
    );
    // The turn sees its request cancelled and ends as a cancelled turn (or, had it not
    // noticed, the runtime would answer -32800); either way the prompt is answered once.
    let prompt_id = sent
        .iter()
        .find(|message| message["method"] == "session/prompt")
        .map(|message| message["id"].clone())
        .unwrap();
    let answers: Vec<_> = h
        .wire
        .sent_by_agent()
        .into_iter()
        .filter(|message| message["id"] == prompt_id && message.get("method").is_none())
        .collect();
    assert_eq!(answers.len(), 1);
    let answer = &answers[0];
    assert!(answer["result"]["stopReason"] == "cancelled" || answer["error"]["code"] == -32800);
    h.wire.assert_valid();
}

#[tokio::test]
async fn a_client_asking_for_version_2_of_a_v1_only_agent_is_answered_with_1() {
    let h = Harness::stdio().await;
    let answer = call(&h, "initialize", json!({"protocolVersion": 2}))
        .await
        .unwrap();
    assert_eq!(answer["protocolVersion"], 1);
    h.wire.assert_valid();
}
