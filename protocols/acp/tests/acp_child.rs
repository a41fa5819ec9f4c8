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
async fn a_prompt_to_an_unknown_session_is_resource_not_found_quoting_the_id() {
    let (h, _child, _session) = started(true).await;
    let refused = h.prompt(&SessionId("nope".into()), "hi").await.unwrap_err();
    let ClientError::Rejected(error) = refused else {
        panic!("not a JSON-RPC error: {refused:?}");
    };
    assert_eq!(error.code, -32002);
    assert_eq!(error.message, "Resource not found: session `nope`");
    h.wire.assert_valid();
}

/// What the agent wrote between the answer before the last `session/load`'s answer and that
/// answer, as (update kind, text) pairs: the replay, read from the wire in the order sent.
fn replayed_before_the_answer(h: &Harness) -> Vec<(String, String)> {
    let load_id = h
        .wire
        .sent_by_client()
        .into_iter()
        .rev()
        .find(|message| message["method"] == "session/load")
        .unwrap()["id"]
        .clone();
    let sent = h.wire.sent_by_agent();
    let answer = sent
        .iter()
        .position(|message| message["id"] == load_id && message.get("method").is_none())
        .expect("the load was answered");
    let mut replayed: Vec<(String, String)> = sent[..answer]
        .iter()
        .rev()
        .take_while(|message| message["method"] == "session/update")
        .map(|message| {
            let update = &message["params"]["update"];
            let kind = update["sessionUpdate"].as_str().unwrap().to_owned();
            let text = update["content"]["text"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            (kind, text)
        })
        .collect();
    replayed.reverse();
    replayed
}

async fn load(h: &Harness, session: &SessionId) -> Result<(), ClientError> {
    let params = serde_json::from_value(serde_json::json!({
        "sessionId": session.0, "cwd": "/", "mcpServers": []
    }))
    .unwrap();
    h.client.v1().session_load(params).await.map(|_| ())
}

#[tokio::test]
async fn session_load_replays_the_conversation_as_updates_before_answering() {
    let (h, _child, session) = started(true).await;
    h.prompt(&session, "first").await.unwrap();
    h.prompt(&session, "second").await.unwrap();
    load(&h, &session).await.unwrap();
    let expected = [
        ("user_message_chunk", "first"),
        ("agent_message_chunk", "echo: first"),
        ("user_message_chunk", "second"),
        ("agent_message_chunk", "echo: second"),
    ]
    .map(|(kind, text)| (kind.to_owned(), text.to_owned()));
    assert_eq!(replayed_before_the_answer(&h), expected);
    h.wire.assert_valid();
}

#[tokio::test]
async fn session_load_replays_a_read_with_its_tool_calls_and_a_new_session_replays_nothing() {
    let (h, _child, session) = started(true).await;
    h.prompt(&session, "read /tmp/acp-demo-replay.txt")
        .await
        .unwrap();
    load(&h, &session).await.unwrap();
    let kinds: Vec<String> = replayed_before_the_answer(&h)
        .into_iter()
        .map(|(kind, _)| kind)
        .collect();
    assert_eq!(
        kinds,
        [
            "user_message_chunk",
            "tool_call",
            "tool_call_update",
            "agent_message_chunk"
        ]
    );
    let fresh = h.new_session().await;
    load(&h, &fresh).await.unwrap();
    assert!(replayed_before_the_answer(&h).is_empty());
    h.wire.assert_valid();
}

#[tokio::test]
async fn session_load_of_an_unknown_session_is_resource_not_found() {
    let (h, _child, _session) = started(true).await;
    let refused = load(&h, &SessionId("never-opened".into()))
        .await
        .unwrap_err();
    assert!(matches!(refused, ClientError::Rejected(ref error) if error.code == -32002));
}

async fn next_json(
    lines: &mut tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>,
) -> serde_json::Value {
    let line = tokio::time::timeout(Duration::from_secs(10), lines.next_line()).await;
    serde_json::from_str(&line.unwrap().unwrap().unwrap()).unwrap()
}

#[tokio::test]
async fn a_json_array_on_stdin_is_answered_with_one_invalid_request_line_and_the_agent_lives_on() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let mut child = agent_command()
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
    let initialize =
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}"#;
    stdin
        .write_all(format!("[{initialize}]\n{initialize}\n").as_bytes())
        .await
        .unwrap();
    let refused = next_json(&mut stdout).await;
    assert_eq!(refused["id"], serde_json::Value::Null);
    assert_eq!(refused["error"]["code"], -32600);
    let answered = next_json(&mut stdout).await;
    assert_eq!(answered["id"], 1, "the same request, alone, is served");
    assert_eq!(answered["result"]["protocolVersion"], 1);
    drop(stdin);
    let status = tokio::time::timeout(Duration::from_secs(5), child.wait()).await;
    assert!(matches!(status, Ok(Ok(status)) if status.success()));
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
