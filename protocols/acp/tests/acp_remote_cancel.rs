//! `$/cancel_request` both ways over ACP's remote transport, on real sockets: over Streamable
//! HTTP and over WebSocket, an agent that stops waiting for a permission answer cancels the
//! call at the editor (whose running handler sees it, with the call's id), and an editor that
//! drops a prompt call cancels the turn at the agent. Over HTTP the agent's cancel travels on
//! the session stream its call went out on. Every message either side sent is validated against
//! the pinned v1 schema.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod acp_support;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use acp_support::{Served, Wire, serve_remote};
use protocols_acp::client::AcpClient;
use protocols_acp::generated::v1;
use protocols_acp::generated::v1::types as t;
use protocols_acp::remote::RemoteConfig;
use protocols_acp::serve::{AcpCx, AgentV1, ClientV1};
use protocols_acp::updates::{agent_text, allow_or_reject_once, prompt_text};
use protocols_acp::{AcpAgentServer, AcpContext};
use protocols_runtime::ErrorObject;
use protocols_testkit::{SseReader, event_stream_get, json_rpc_post};
use serde_json::{Value, json};
use tokio::sync::Notify;

/// How long the agent waits for a permission answer before abandoning the call.
const PERMISSION_PATIENCE: Duration = Duration::from_millis(150);
/// How often the slow turn streams.
const TICK: Duration = Duration::from_millis(20);
/// Bound on anything that should happen at once; only a hang reaches it.
const PATIENCE: Duration = Duration::from_secs(10);

// ---------------------------------------------------------------------------------------------
// The agent: `abandon` asks permission and gives up waiting; `slow` streams until cancelled.

#[derive(Debug, Default)]
struct Agent;

impl v1::Agent for Agent {
    type Context = AcpCx;

    async fn initialize(
        &self,
        _: t::InitializeRequest,
        _: &AcpCx,
    ) -> Result<t::InitializeResponse, ErrorObject> {
        Ok(serde_json::from_value(json!({"protocolVersion": 1})).unwrap())
    }

    async fn session_new(
        &self,
        _: t::NewSessionRequest,
        _: &AcpCx,
    ) -> Result<t::NewSessionResponse, ErrorObject> {
        Ok(serde_json::from_value(json!({"sessionId": "s"})).unwrap())
    }

    async fn session_prompt(
        &self,
        p: t::PromptRequest,
        cx: &AcpCx,
    ) -> Result<t::PromptResponse, ErrorObject> {
        let client = cx.client();
        let session = &p.session_id;
        let text = prompt_text(&p.prompt);
        if text == "slow" {
            loop {
                tokio::select! {
                    () = cx.cancellation().cancelled() => break,
                    () = tokio::time::sleep(TICK) => {
                        client.session_update(&agent_text(session, "tick")).unwrap();
                    }
                }
            }
            return Ok(serde_json::from_value(json!({"stopReason": "cancelled"})).unwrap());
        }
        let question = allow_or_reject_once(session, &t::ToolCallId("abandoned".into()), "wait");
        let said =
            match tokio::time::timeout(PERMISSION_PATIENCE, client.request_permission(&question))
                .await
            {
                Err(_) => "abandoned".to_owned(),
                Ok(answer) => format!("answered: {answer:?}"),
            };
        client.session_update(&agent_text(session, said)).unwrap();
        Ok(serde_json::from_value(json!({"stopReason": "end_turn"})).unwrap())
    }
}

fn agent() -> AcpAgentServer<AgentV1<Agent>> {
    AcpAgentServer::new(AgentV1(Agent))
}

// ---------------------------------------------------------------------------------------------
// The editor: never answers a permission question, noting when the agent cancels it.

#[derive(Debug, Default)]
struct EditorLog {
    texts: Mutex<Vec<String>>,
    cancelled_questions: AtomicU64,
    question_cancelled: Notify,
}

#[derive(Debug, Clone, Default)]
struct Editor(Arc<EditorLog>);

impl v1::Client for Editor {
    type Context = AcpCx;

    async fn session_request_permission(
        &self,
        _: t::RequestPermissionRequest,
        cx: &AcpCx,
    ) -> Result<t::RequestPermissionResponse, ErrorObject> {
        cx.cancellation().cancelled().await;
        self.0.cancelled_questions.fetch_add(1, Ordering::Relaxed);
        self.0.question_cancelled.notify_one();
        Err(ErrorObject::new(-32800, "cancelled"))
    }

    async fn session_update(&self, p: t::SessionNotification, _: &AcpCx) {
        if let t::SessionUpdate::AgentMessageChunk {
            content: t::ContentBlock::Text { text, .. },
            ..
        } = p.update
        {
            self.0.texts.lock().unwrap().push(text);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Harness: the agent at `/acp` on a real listener, the typed client over one transport.

#[derive(Debug, Clone, Copy)]
enum Transport {
    Http,
    WebSocket,
}

struct Remote {
    client: AcpClient,
    wire: Arc<Wire>,
    log: Arc<EditorLog>,
    _served: Served,
}

impl Remote {
    /// Connected, initialized and with session `s` open.
    async fn start(transport: Transport) -> Self {
        let served = serve_remote(agent(), RemoteConfig::default()).await;
        let editor = Editor::default();
        let log = Arc::clone(&editor.0);
        let wire = Arc::new(Wire::default());
        let observer = Some(wire.observer());
        let client = match transport {
            Transport::Http => {
                AcpClient::connect_http_observed(ClientV1(editor), served.url(), observer)
            }
            Transport::WebSocket => {
                AcpClient::connect_websocket_observed(ClientV1(editor), &served.ws_url(), observer)
                    .await
                    .unwrap()
            }
        };
        let params =
            serde_json::from_value(json!({"protocolVersion": 1, "clientCapabilities": {}}))
                .unwrap();
        client.v1().initialize(params).await.unwrap();
        let params = serde_json::from_value(json!({"cwd": "/", "mcpServers": []})).unwrap();
        client.v1().session_new(params).await.unwrap();
        Self {
            client,
            wire,
            log,
            _served: served,
        }
    }

    fn prompt(&self, text: &str) -> impl Future<Output = t::PromptResponse> + '_ {
        let params: t::PromptRequest = serde_json::from_value(json!({
            "sessionId": "s",
            "prompt": [{"type": "text", "text": text}]
        }))
        .unwrap();
        async move { self.client.v1().session_prompt(params).await.unwrap() }
    }

    fn texts(&self) -> Vec<String> {
        self.log.texts.lock().unwrap().clone()
    }
}

fn first_with_method(messages: &[Value], method: &str) -> Value {
    messages
        .iter()
        .find(|message| message["method"] == method)
        .cloned()
        .unwrap_or_else(|| panic!("no {method} on the wire"))
}

// ---------------------------------------------------------------------------------------------
// Agent → client.

async fn agent_abandons_a_call(transport: Transport) {
    let run = Remote::start(transport).await;
    let done = run.prompt("abandon").await;
    assert_eq!(done.stop_reason, t::StopReason::EndTurn);
    assert_eq!(run.texts(), ["abandoned"]);
    tokio::time::timeout(PATIENCE, run.log.question_cancelled.notified())
        .await
        .expect("the editor's handler saw its request cancelled");
    assert_eq!(run.log.cancelled_questions.load(Ordering::Relaxed), 1);
    let from_agent = run.wire.sent_by_agent();
    let question = first_with_method(&from_agent, "session/request_permission");
    let cancel = first_with_method(&from_agent, "$/cancel_request");
    assert_eq!(cancel["params"]["requestId"], question["id"]);
    // The editor answers the cancelled call with -32800, which the agent may ignore.
    let answered = run
        .wire
        .sent_by_client()
        .into_iter()
        .find(|message| message["id"] == question["id"] && message.get("method").is_none())
        .expect("the editor answered the cancelled call");
    assert_eq!(answered["error"]["code"], -32800);
    run.wire.assert_valid();
    run.client.close().await.unwrap();
}

#[tokio::test]
async fn over_http_an_agent_abandoning_a_permission_question_cancels_the_editors_handler() {
    agent_abandons_a_call(Transport::Http).await;
}

#[tokio::test]
async fn over_websocket_an_agent_abandoning_a_permission_question_cancels_the_editors_handler() {
    agent_abandons_a_call(Transport::WebSocket).await;
}

// ---------------------------------------------------------------------------------------------
// Client → agent.

async fn client_drops_a_prompt(transport: Transport) {
    let run = Remote::start(transport).await;
    let abandoned = tokio::time::timeout(Duration::from_millis(150), run.prompt("slow")).await;
    assert!(abandoned.is_err(), "the slow turn was still running");
    let prompt = first_with_method(&run.wire.sent_by_client(), "session/prompt");
    // The cancel goes out after the call is dropped; the agent answers the cancelled prompt
    // once, and streams no more.
    let deadline = tokio::time::Instant::now() + PATIENCE;
    let answer = loop {
        let answers: Vec<_> = run
            .wire
            .sent_by_agent()
            .into_iter()
            .filter(|message| message["id"] == prompt["id"] && message.get("method").is_none())
            .collect();
        if let [answer] = answers.as_slice() {
            break answer.clone();
        }
        assert!(answers.is_empty(), "the prompt was answered once");
        assert!(
            tokio::time::Instant::now() < deadline,
            "the cancelled prompt was answered"
        );
        tokio::time::sleep(TICK).await;
    };
    assert!(answer["result"]["stopReason"] == "cancelled" || answer["error"]["code"] == -32800);
    let cancel = first_with_method(&run.wire.sent_by_client(), "$/cancel_request");
    assert_eq!(cancel["params"]["requestId"], prompt["id"]);
    let ticks = run.texts().len();
    tokio::time::sleep(TICK * 5).await;
    assert_eq!(
        run.texts().len(),
        ticks,
        "the cancelled turn stopped streaming"
    );
    run.wire.assert_valid();
    run.client.close().await.unwrap();
}

#[tokio::test]
async fn over_http_dropping_a_prompt_call_cancels_the_turn_at_the_agent() {
    client_drops_a_prompt(Transport::Http).await;
}

#[tokio::test]
async fn over_websocket_dropping_a_prompt_call_cancels_the_turn_at_the_agent() {
    client_drops_a_prompt(Transport::WebSocket).await;
}

// ---------------------------------------------------------------------------------------------
// The agent's cancel on the wire of Streamable HTTP.

#[tokio::test]
async fn over_http_the_agents_cancel_request_follows_its_call_on_the_session_stream() {
    let served = serve_remote(agent(), RemoteConfig::default()).await;
    let url = served.url();
    let http = reqwest::Client::builder()
        .http2_prior_knowledge()
        .build()
        .unwrap();
    let post = |connection: Option<&str>, session: Option<&str>, body: Value| {
        let headers = [
            ("acp-connection-id", connection),
            ("acp-session-id", session),
        ];
        let named = headers
            .into_iter()
            .filter_map(|(name, value)| Some((name, value?)));
        json_rpc_post(&http, &url, "application/json", named, &body).send()
    };
    let initialized = post(
        None,
        None,
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
               "params": {"protocolVersion": 1, "clientCapabilities": {}}}),
    )
    .await
    .unwrap();
    assert_eq!(initialized.status(), 200);
    let connection = initialized.headers()["acp-connection-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let created = post(
        Some(&connection),
        None,
        json!({"jsonrpc": "2.0", "id": 1, "method": "session/new",
               "params": {"cwd": "/", "mcpServers": []}}),
    )
    .await
    .unwrap();
    assert_eq!(created.status(), 202);
    let session_stream = event_stream_get(
        &http,
        &url,
        [
            ("acp-connection-id", connection.as_str()),
            ("acp-session-id", "s"),
        ],
    )
    .send()
    .await
    .unwrap();
    assert_eq!(session_stream.status(), 200);
    let mut session_stream = SseReader::new(session_stream);
    let prompted = post(
        Some(&connection),
        Some("s"),
        json!({"jsonrpc": "2.0", "id": 2, "method": "session/prompt",
               "params": {"sessionId": "s", "prompt": [{"type": "text", "text": "abandon"}]}}),
    )
    .await
    .unwrap();
    assert_eq!(prompted.status(), 202);
    let mut seen = Vec::new();
    for _ in 0..4 {
        let (_, message) = session_stream
            .next_json()
            .await
            .expect("the session stream is open");
        seen.push(message);
    }
    // The call, its cancel, then the rest of the turn: all on the session's stream, in order.
    assert_eq!(seen[0]["method"], "session/request_permission");
    assert_eq!(seen[1]["method"], "$/cancel_request");
    assert_eq!(seen[1]["params"]["requestId"], seen[0]["id"]);
    assert_eq!(seen[2]["params"]["update"]["content"]["text"], "abandoned");
    assert_eq!(seen[3]["id"], 2);
}
