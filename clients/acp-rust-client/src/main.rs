//! The official Rust ACP SDK (`agent-client-protocol`, the crate the Zed editor builds on) as
//! the client of an agent command, `all-protocols --stdio acp` in CI:
//! `acp-rust-client AGENT [ARGS...]`. It spawns the agent and runs, over its stdin/stdout: a
//! plain prompt (echoed back), `read <file>` with the permission allowed (the file's content
//! streams back, read through `fs/read_text_file`) and rejected (nothing read), a `slow` prompt
//! cancelled mid-turn (`cancelled`), `session/load` (the conversation so far replayed as
//! `session/update`s, every one read before the load's answer), a prompt to an unknown session
//! (-32002), and end of input (the agent exits 0 promptly). Prints one line per check and a
//! summary; exits non-zero on the first failure.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::{ExitCode, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    CancelNotification, ClientCapabilities, ContentBlock, FileSystemCapabilities, Implementation,
    InitializeRequest, LoadSessionRequest, NewSessionRequest, PermissionOptionKind, PromptRequest,
    ReadTextFileRequest, ReadTextFileResponse, RequestPermissionOutcome, RequestPermissionRequest,
    RequestPermissionResponse, SelectedPermissionOutcome, SessionId, SessionNotification,
    StopReason, TextContent,
};
use agent_client_protocol::{Agent, Client, ErrorCode, Lines};
use futures::StreamExt as _;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};

const FILE_TEXT: &str = "hello from a file the agent may read";
/// Generous bound on each step; only a hang reaches it.
const STEP: Duration = Duration::from_secs(20);

/// The editor's side: answers permission questions as told, reads files, records updates.
#[derive(Default)]
struct Editor {
    allow: AtomicBool,
    permission_questions: AtomicUsize,
    reads: Mutex<Vec<PathBuf>>,
    /// Every `session/update`'s `update`, as JSON, in the order the SDK delivered them.
    updates: Mutex<Vec<Value>>,
}

impl Editor {
    fn updates(&self) -> Vec<Value> {
        self.updates.lock().map(|u| u.clone()).unwrap_or_default()
    }

    fn kinds(&self) -> Vec<String> {
        self.updates()
            .iter()
            .filter_map(|update| update["sessionUpdate"].as_str().map(str::to_owned))
            .collect()
    }

    /// Every text the agent streamed as message chunks, joined.
    fn texts(&self) -> String {
        self.updates()
            .iter()
            .filter(|update| update["sessionUpdate"] == "agent_message_chunk")
            .filter_map(|update| update["content"]["text"].as_str().map(str::to_owned))
            .collect()
    }

    fn clear(&self) {
        if let Ok(mut updates) = self.updates.lock() {
            updates.clear();
        }
    }

    fn reads(&self) -> Vec<PathBuf> {
        self.reads.lock().map(|r| r.clone()).unwrap_or_default()
    }
}

/// Every line the client wrote and read, in order, as JSON.
#[derive(Default)]
struct Wire(Mutex<Vec<(Direction, Value)>>);

#[derive(Clone, Copy, PartialEq, Eq)]
enum Direction {
    Sent,
    Read,
}

impl Wire {
    fn record(&self, direction: Direction, line: &str) {
        if let (Ok(value), Ok(mut log)) = (serde_json::from_str(line), self.0.lock()) {
            log.push((direction, value));
        }
    }

    /// The `update`s of the `session/update`s read just before the answer to the last request
    /// of `method`: what the agent replayed before answering it.
    fn replayed_before_answer(&self, method: &str) -> Vec<Value> {
        let log = self.0.lock().map(|log| log.clone()).unwrap_or_default();
        let Some(id) = log
            .iter()
            .rev()
            .find(|(direction, m)| *direction == Direction::Sent && m["method"] == method)
            .map(|(_, m)| m["id"].clone())
        else {
            return Vec::new();
        };
        let read: Vec<&Value> = log
            .iter()
            .filter(|(direction, _)| *direction == Direction::Read)
            .map(|(_, m)| m)
            .collect();
        let Some(answer) = read
            .iter()
            .position(|m| m["id"] == id && m.get("method").is_none())
        else {
            return Vec::new();
        };
        let mut replayed: Vec<Value> = read
            .get(..answer)
            .unwrap_or_default()
            .iter()
            .rev()
            .take_while(|m| m["method"] == "session/update")
            .map(|m| m["params"]["update"].clone())
            .collect();
        replayed.reverse();
        replayed
    }
}

/// Counts the checks that held; the first that fails ends the run.
#[derive(Default)]
struct Checks {
    passed: AtomicUsize,
}

impl Checks {
    fn check(&self, holds: bool, claim: &str) -> agent_client_protocol::Result<()> {
        if !holds {
            return Err(agent_client_protocol::Error::internal_error()
                .data(Value::from(format!("check failed: {claim}"))));
        }
        println!("ok - {claim}");
        self.passed.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
}

fn text_prompt(session: &SessionId, text: &str) -> PromptRequest {
    PromptRequest::new(
        session.clone(),
        vec![ContentBlock::Text(TextContent::new(text))],
    )
}

async fn scenario(
    connection: ConnectionTo<Agent>,
    editor: Arc<Editor>,
    wire: Arc<Wire>,
    checks: Arc<Checks>,
    readable: PathBuf,
) -> agent_client_protocol::Result<()> {
    let initialize = InitializeRequest::new(ProtocolVersion::V1)
        .client_capabilities(
            ClientCapabilities::new().fs(FileSystemCapabilities::new().read_text_file(true)),
        )
        .client_info(Implementation::new("rust-real-client", "0"));
    let init = connection.send_request(initialize).block_task().await?;
    checks.check(
        init.protocol_version == ProtocolVersion::V1,
        "initialize negotiates protocol version 1",
    )?;
    checks.check(
        init.agent_capabilities.load_session,
        "the agent advertises loadSession",
    )?;

    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
    let session = connection
        .send_request(NewSessionRequest::new(cwd.clone()))
        .block_task()
        .await?
        .session_id;

    let answer = connection
        .send_request(text_prompt(&session, "hello rust client"))
        .block_task()
        .await?;
    checks.check(
        answer.stop_reason == StopReason::EndTurn,
        "a prompt ends its turn",
    )?;
    checks.check(
        editor.texts().contains("hello rust client"),
        "the prompt text streams back",
    )?;

    editor.clear();
    editor.allow.store(true, Ordering::Relaxed);
    let read = format!("read {}", readable.display());
    let answer = connection
        .send_request(text_prompt(&session, &read))
        .block_task()
        .await?;
    checks.check(
        editor.permission_questions.load(Ordering::Relaxed) == 1,
        "reading asks permission",
    )?;
    checks.check(
        editor.reads() == [readable.clone()],
        "allowed, the agent reads through fs/read_text_file",
    )?;
    let kinds = editor.kinds();
    checks.check(
        kinds.iter().any(|k| k == "tool_call") && kinds.iter().any(|k| k == "tool_call_update"),
        "the read is reported as a tool call and its completion",
    )?;
    checks.check(
        editor.texts().contains(FILE_TEXT),
        "the file's content streams back",
    )?;
    checks.check(
        answer.stop_reason == StopReason::EndTurn,
        "the read turn ends",
    )?;

    editor.clear();
    editor.allow.store(false, Ordering::Relaxed);
    connection
        .send_request(text_prompt(&session, &read))
        .block_task()
        .await?;
    checks.check(
        editor.permission_questions.load(Ordering::Relaxed) == 2,
        "a second read asks again",
    )?;
    checks.check(
        editor.reads() == [readable.clone()],
        "rejected, nothing is read",
    )?;

    editor.clear();
    let turn = connection
        .send_request(text_prompt(&session, "slow please"))
        .block_task();
    let cancel = async {
        while editor.updates().len() < 2 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        connection.send_notification(CancelNotification::new(session.clone()))
    };
    let (answer, cancelled) = tokio::join!(turn, cancel);
    cancelled?;
    checks.check(
        answer?.stop_reason == StopReason::Cancelled,
        "a cancelled slow turn stops with cancelled",
    )?;

    editor.clear();
    connection
        .send_request(LoadSessionRequest::new(session.clone(), cwd.clone()))
        .block_task()
        .await?;
    let replayed = wire.replayed_before_answer("session/load");
    checks.check(
        replayed.first()
            == Some(&serde_json::json!({
                "sessionUpdate": "user_message_chunk",
                "content": {"type": "text", "text": "hello rust client"}
            })),
        "session/load replays the first prompt first, as a user_message_chunk",
    )?;
    checks.check(
        replayed
            .get(1)
            .is_some_and(|update| update["content"]["text"] == "echo: hello rust client"),
        "then the agent's answer to it",
    )?;
    let count = |kind: &str| {
        replayed
            .iter()
            .filter(|update| update["sessionUpdate"] == kind)
            .count()
    };
    checks.check(
        count("user_message_chunk") == 4 && count("tool_call") == 2,
        "every prompt and both reads are replayed",
    )?;
    // The SDK's dispatch loop runs each notification's handler before the next message, so
    // the replay has reached the editor by the time the load's answer is returned (the SDK
    // re-encodes each update, leaving out defaults, so their kinds are compared).
    let kinds_of = |updates: &[Value]| -> Vec<Value> {
        updates
            .iter()
            .map(|update| update["sessionUpdate"].clone())
            .collect()
    };
    checks.check(
        kinds_of(&editor.updates()) == kinds_of(&replayed),
        "the editor's handler saw every replayed update before the answer",
    )?;
    let fresh = connection
        .send_request(NewSessionRequest::new(cwd.clone()))
        .block_task()
        .await?
        .session_id;
    connection
        .send_request(LoadSessionRequest::new(fresh, cwd))
        .block_task()
        .await?;
    checks.check(
        wire.replayed_before_answer("session/load").is_empty(),
        "a new session replays nothing",
    )?;

    let unknown = connection
        .send_request(text_prompt(&SessionId::new("no-such-session"), "hi"))
        .block_task()
        .await;
    checks.check(
        matches!(&unknown, Err(error) if error.code == ErrorCode::RESOURCE_NOT_FOUND),
        "an unknown session is -32002, Resource not found",
    )?;
    Ok(())
}

async fn run(agent: &[String], checks: &Arc<Checks>) -> Result<(), String> {
    let (program, args) = agent.split_first().ok_or("no agent command")?;
    let mut child = tokio::process::Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|error| format!("the agent did not start: {error}"))?;
    let stdin = child.stdin.take().ok_or("no stdin")?;
    let stdout = child.stdout.take().ok_or("no stdout")?;

    let readable = std::env::temp_dir().join(format!("acp-rust-client-{}.txt", std::process::id()));
    std::fs::write(&readable, format!("{FILE_TEXT}\n")).map_err(|error| error.to_string())?;

    let wire = Arc::new(Wire::default());
    let incoming = tokio_stream_lines(stdout, Arc::clone(&wire));
    let outgoing = {
        let wire = Arc::clone(&wire);
        futures::sink::unfold(stdin, move |mut stdin, line: String| {
            wire.record(Direction::Sent, &line);
            async move {
                stdin.write_all(line.as_bytes()).await?;
                stdin.write_all(b"\n").await?;
                stdin.flush().await?;
                Ok::<_, std::io::Error>(stdin)
            }
        })
    };
    let transport = Lines::new(Box::pin(outgoing), incoming);

    let editor = Arc::new(Editor::default());
    let on_permission = Arc::clone(&editor);
    let on_read = Arc::clone(&editor);
    let on_update = Arc::clone(&editor);
    let ran = Client
        .v1()
        .name("acp-rust-client")
        .on_receive_request(
            async move |request: RequestPermissionRequest, responder, _connection| {
                on_permission
                    .permission_questions
                    .fetch_add(1, Ordering::Relaxed);
                let wanted = if on_permission.allow.load(Ordering::Relaxed) {
                    PermissionOptionKind::AllowOnce
                } else {
                    PermissionOptionKind::RejectOnce
                };
                let outcome = request
                    .options
                    .iter()
                    .find(|option| option.kind == wanted)
                    .map_or(RequestPermissionOutcome::Cancelled, |option| {
                        RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(
                            option.option_id.clone(),
                        ))
                    });
                responder.respond(RequestPermissionResponse::new(outcome))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: ReadTextFileRequest, responder, _connection| {
                if let Ok(mut reads) = on_read.reads.lock() {
                    reads.push(request.path.clone());
                }
                match std::fs::read_to_string(&request.path) {
                    Ok(content) => responder.respond(ReadTextFileResponse::new(content)),
                    Err(_) => responder.respond_with_error(
                        agent_client_protocol::v1::schema::Error::resource_not_found(None).into(),
                    ),
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_notification(
            async move |notification: SessionNotification, _connection| {
                if let (Ok(update), Ok(mut updates)) = (
                    serde_json::to_value(&notification.update),
                    on_update.updates.lock(),
                ) {
                    updates.push(update);
                }
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .connect_with(transport, {
            let (editor, wire, checks) =
                (Arc::clone(&editor), Arc::clone(&wire), Arc::clone(checks));
            let readable = readable.clone();
            async move |connection: ConnectionTo<Agent>| {
                tokio::time::timeout(
                    STEP * 6,
                    scenario(connection, editor, wire, checks, readable),
                )
                .await
                .map_err(|_| {
                    agent_client_protocol::Error::internal_error()
                        .data(Value::from("the scenario timed out"))
                })?
            }
        })
        .await;
    let _ = std::fs::remove_file(&readable);
    ran.map_err(|error| format!("{error}"))?;

    // The transport is gone, so the agent's stdin is closed: it must exit at once, cleanly.
    let exited = tokio::time::timeout(Duration::from_secs(5), child.wait())
        .await
        .map_err(|_| "the agent did not exit within 5 s of end of input".to_owned())?
        .map_err(|error| error.to_string())?;
    checks
        .check(
            exited.success(),
            "the agent exits cleanly and promptly at end of input",
        )
        .map_err(|error| format!("{error}"))
}

/// The agent's stdout as lines, each recorded on the wire as it is read.
fn tokio_stream_lines(
    stdout: tokio::process::ChildStdout,
    wire: Arc<Wire>,
) -> impl futures::Stream<Item = std::io::Result<String>> + Send + 'static {
    let lines = BufReader::new(stdout).lines();
    futures::stream::unfold(lines, |mut lines| async move {
        match lines.next_line().await {
            Ok(Some(line)) => Some((Ok(line), lines)),
            Ok(None) => None,
            Err(error) => Some((Err(error), lines)),
        }
    })
    .inspect(move |line| {
        if let Ok(line) = line {
            wire.record(Direction::Read, line);
        }
    })
    .boxed()
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let agent: Vec<String> = std::env::args().skip(1).collect();
    if agent.is_empty() {
        eprintln!("usage: acp-rust-client AGENT_COMMAND [ARGS...]");
        return ExitCode::from(2);
    }
    let checks = Arc::new(Checks::default());
    let outcome = run(&agent, &checks).await;
    let passed = checks.passed.load(Ordering::Relaxed);
    let failed = usize::from(outcome.is_err());
    if let Err(error) = outcome {
        println!("not ok - {error}");
    }
    println!("acp-rust-client: {passed} passed, {failed} failed");
    let _ = std::io::stdout().flush();
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
