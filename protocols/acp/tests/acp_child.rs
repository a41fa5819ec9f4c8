//! The demo agent as a real child process: `all-protocols --stdio acp`, driven by our typed
//! client over its stdin/stdout. The binary is built once per run (a no-op when fresh);
//! `ACP_AGENT_COMMAND` overrides the command (whitespace-separated) to test another agent.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod acp_support;

use std::sync::OnceLock;
use std::sync::atomic::Ordering;
use std::time::Duration;

use acp_support::{FILE_TEXT, Harness, built_all_protocols};
use protocols_acp::generated::v1::types::{SessionId, StopReason};
use protocols_runtime::method::ClientError;

/// The agent command: the override, or the freshly built `all-protocols --stdio acp`.
fn agent_command() -> tokio::process::Command {
    static PROGRAM: OnceLock<Vec<String>> = OnceLock::new();
    let words = PROGRAM.get_or_init(|| match std::env::var("ACP_AGENT_COMMAND") {
        Ok(command) => command.split_whitespace().map(str::to_owned).collect(),
        Err(_) => vec![built_all_protocols(), "--stdio".into(), "acp".into()],
    });
    let mut command = tokio::process::Command::new(&words[0]);
    command.args(&words[1..]);
    command
}

async fn started(read_text_file: bool) -> (Harness, tokio::process::Child, SessionId) {
    let (h, child) = Harness::child(&mut agent_command()).await;
    assert_eq!(h.initialize(read_text_file).await, 1);
    let session = h.new_session().await;
    (h, child, session)
}

fn stop_reason(
    answer: Result<protocols_acp::generated::v1::types::PromptResponse, ClientError>,
) -> StopReason {
    answer.unwrap().stop_reason
}

#[tokio::test]
async fn the_demo_echoes_a_prompt_as_message_chunks_and_ends_the_turn() {
    let (h, _child, session) = started(true).await;
    let stop = stop_reason(h.prompt(&session, "hello demo").await);
    assert!(matches!(stop, StopReason::EndTurn));
    assert!(h.editor.texts().concat().contains("hello demo"));
    h.wire.assert_valid();
}

#[tokio::test]
async fn the_demo_reads_a_file_through_the_client_only_after_permission() {
    let (h, _child, session) = started(true).await;
    h.prompt(&session, "read /tmp/acp-demo-file.txt")
        .await
        .unwrap();
    assert_eq!(h.editor.permission_questions.load(Ordering::Relaxed), 1);
    assert_eq!(
        *h.editor.reads.lock().unwrap(),
        vec!["/tmp/acp-demo-file.txt".to_owned()]
    );
    assert!(h.editor.texts().concat().contains(FILE_TEXT));
    let kinds: Vec<String> = h
        .wire
        .sent_by_agent()
        .iter()
        .filter_map(|message| {
            message["params"]["update"]["sessionUpdate"]
                .as_str()
                .map(str::to_owned)
        })
        .collect();
    assert!(
        kinds.contains(&"tool_call".to_owned()) && kinds.contains(&"tool_call_update".to_owned())
    );
    h.wire.assert_valid();
}

#[tokio::test]
async fn the_demo_reads_nothing_when_permission_is_rejected() {
    let (h, _child, session) = started(true).await;
    h.editor.reject.store(true, Ordering::Relaxed);
    h.prompt(&session, "read /tmp/acp-demo-file.txt")
        .await
        .unwrap();
    assert_eq!(h.editor.permission_questions.load(Ordering::Relaxed), 1);
    assert!(h.editor.reads.lock().unwrap().is_empty());
    h.wire.assert_valid();
}

#[tokio::test]
async fn the_demo_never_sends_fs_read_to_a_client_without_the_capability() {
    let (h, _child, session) = started(false).await;
    h.prompt(&session, "read /tmp/acp-demo-file.txt")
        .await
        .unwrap();
    let asked = h
        .wire
        .sent_by_agent()
        .iter()
        .any(|message| message["method"] == "fs/read_text_file");
    assert!(!asked);
    h.wire.assert_valid();
}

#[tokio::test]
async fn a_slow_demo_turn_streams_until_cancelled_then_stops_with_cancelled() {
    let (h, _child, session) = started(true).await;
    let cancel = async {
        while h.editor.texts().len() < 2 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        h.client.cancel(&session.0).await.unwrap();
    };
    let (answer, ()) = tokio::join!(h.prompt(&session, "slow please"), cancel);
    assert!(matches!(stop_reason(answer), StopReason::Cancelled));
    h.wire.assert_valid();
}

#[tokio::test]
async fn a_prompt_to_an_unknown_session_is_a_json_rpc_error() {
    let (h, _child, _session) = started(true).await;
    let refused = h.prompt(&SessionId("nope".into()), "hi").await.unwrap_err();
    assert!(matches!(refused, ClientError::Rejected(ref error) if error.code == -32602));
    h.wire.assert_valid();
}

#[tokio::test]
async fn the_agent_writes_only_json_rpc_on_stdout_and_exits_promptly_at_eof() {
    let (h, mut child, session) = started(true).await;
    h.prompt(&session, "hi").await.unwrap();
    // Every line the agent wrote parsed as JSON (sent_by_agent panics otherwise) and is JSON-RPC.
    assert!(
        h.wire
            .sent_by_agent()
            .iter()
            .all(|message| message["jsonrpc"] == "2.0")
    );
    let Harness { client, .. } = h;
    client.close().await.unwrap();
    let status = tokio::time::timeout(Duration::from_secs(5), child.wait()).await;
    assert!(matches!(status, Ok(Ok(status)) if status.success()));
}
