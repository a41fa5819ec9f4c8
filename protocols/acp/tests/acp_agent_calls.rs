//! Agent→client calls made from inside a running `session/prompt` through the typed
//! [`ClientHandle`](protocols_acp::ClientHandle): the whole terminal lifecycle
//! (`terminal/create`, `output`, `wait_for_exit`, `kill`, `release`) and `elicitation/create`,
//! each sent only to a client that advertised the capability; and `$/cancel_request` from the
//! agent, which the client's running handler sees as its cancellation. Every scenario checks the
//! wire against the pinned v1 schema.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod acp_support;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use acp_support::Link;
use protocols_acp::generated::v1;
use protocols_acp::generated::v1::types as t;
use protocols_acp::serve::{AcpCx, AgentV1, ClientV1};
use protocols_acp::updates::{agent_text, prompt_text};
use protocols_acp::{AcpAgentServer, AcpContext, CallError, ClientHandle};
use protocols_runtime::ErrorObject;
use serde_json::{Value, json};
use tokio::sync::Notify;

/// How long the agent waits for a permission answer before abandoning the call.
const PATIENCE: Duration = Duration::from_millis(150);

// ---------------------------------------------------------------------------------------------
// The agent: each prompt word is one kind of call to the client, reported back as text.

#[derive(Debug, Default)]
struct CallingAgent;

impl CallingAgent {
    async fn terminal(client: &ClientHandle, session: &t::SessionId) -> Result<String, CallError> {
        let created = client
            .create_terminal(&t::CreateTerminalRequest {
                args: Some(vec!["hello".into()]),
                command: "echo".into(),
                cwd: None,
                env: None,
                meta: None,
                output_byte_limit: Some(1024),
                session_id: session.clone(),
            })
            .await?;
        let terminal = created.terminal_id;
        let ids = || (session.clone(), terminal.clone());
        let (session_id, terminal_id) = ids();
        let output = client
            .terminal_output(&t::TerminalOutputRequest {
                meta: None,
                session_id,
                terminal_id,
            })
            .await?;
        let (session_id, terminal_id) = ids();
        let exit = client
            .wait_for_terminal_exit(&t::WaitForTerminalExitRequest {
                meta: None,
                session_id,
                terminal_id,
            })
            .await?;
        let (session_id, terminal_id) = ids();
        client
            .kill_terminal(&t::KillTerminalRequest {
                meta: None,
                session_id,
                terminal_id,
            })
            .await?;
        let (session_id, terminal_id) = ids();
        client
            .release_terminal(&t::ReleaseTerminalRequest {
                meta: None,
                session_id,
                terminal_id,
            })
            .await?;
        Ok(format!(
            "{}: {} exit {:?}",
            terminal.0,
            output.output.trim(),
            exit.exit_code
        ))
    }

    async fn elicit(client: &ClientHandle, session: &t::SessionId) -> Result<String, CallError> {
        // A mode beyond form/url (the schema leaves it open); form elicitations are covered by
        // `a_form_elicitation_keeps_its_requested_schema_through_the_generated_type`.
        let request = serde_json::from_value(json!({
            "sessionId": session.0,
            "message": "Your name?",
            "mode": "_test/inline",
        }))
        .unwrap();
        let answer = client.create_elicitation(&request).await?;
        Ok(serde_json::to_value(answer).unwrap().to_string())
    }

    /// Asks permission, then gives up waiting: dropping the call cancels it at the client.
    async fn abandon(client: &ClientHandle, session: &t::SessionId) -> String {
        let question = protocols_acp::updates::allow_or_reject_once(
            session,
            &t::ToolCallId("abandoned".into()),
            "wait",
        );
        match tokio::time::timeout(PATIENCE, client.request_permission(&question)).await {
            Err(_) => "abandoned".into(),
            Ok(answer) => format!("answered: {answer:?}"),
        }
    }
}

fn said(outcome: Result<String, CallError>) -> String {
    match outcome {
        Ok(text) => text,
        Err(CallError::NotAdvertised(capability)) => format!("not advertised: {capability}"),
        Err(other) => format!("failed: {other}"),
    }
}

impl v1::Agent for CallingAgent {
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
        let text = match prompt_text(&p.prompt).as_str() {
            "terminal" => said(Self::terminal(&client, session).await),
            "elicit" => said(Self::elicit(&client, session).await),
            "abandon" => Self::abandon(&client, session).await,
            other => other.to_owned(),
        };
        client.session_update(&agent_text(session, text)).unwrap();
        Ok(serde_json::from_value(json!({"stopReason": "end_turn"})).unwrap())
    }
}

// ---------------------------------------------------------------------------------------------
// The editor: a pretend terminal, a form that answers "Ada", and a permission question it never
// answers, noting when the agent cancels it.

#[derive(Debug, Default)]
struct EditorLog {
    calls: Mutex<Vec<String>>,
    texts: Mutex<Vec<String>>,
    cancelled_questions: AtomicU64,
    question_cancelled: Notify,
}

impl EditorLog {
    fn called(&self, method: &str) {
        self.calls.lock().unwrap().push(method.to_owned());
    }

    fn calls(&self) -> Vec<String> {
        self.calls.lock().unwrap().clone()
    }

    fn texts(&self) -> Vec<String> {
        self.texts.lock().unwrap().clone()
    }
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
        self.0.called("session/request_permission");
        cx.cancellation().cancelled().await;
        self.0.cancelled_questions.fetch_add(1, Ordering::Relaxed);
        self.0.question_cancelled.notify_one();
        Err(ErrorObject::new(-32800, "cancelled"))
    }

    async fn terminal_create(
        &self,
        p: t::CreateTerminalRequest,
        _: &AcpCx,
    ) -> Result<t::CreateTerminalResponse, ErrorObject> {
        self.0.called("terminal/create");
        assert_eq!(p.command, "echo");
        Ok(serde_json::from_value(json!({"terminalId": "term-1"})).unwrap())
    }

    async fn terminal_output(
        &self,
        p: t::TerminalOutputRequest,
        _: &AcpCx,
    ) -> Result<t::TerminalOutputResponse, ErrorObject> {
        self.0.called("terminal/output");
        assert_eq!(p.terminal_id.0, "term-1");
        Ok(serde_json::from_value(json!({"output": "hello\n", "truncated": false})).unwrap())
    }

    async fn terminal_wait_for_exit(
        &self,
        _: t::WaitForTerminalExitRequest,
        _: &AcpCx,
    ) -> Result<t::WaitForTerminalExitResponse, ErrorObject> {
        self.0.called("terminal/wait_for_exit");
        Ok(serde_json::from_value(json!({"exitCode": 0})).unwrap())
    }

    async fn terminal_kill(
        &self,
        _: t::KillTerminalRequest,
        _: &AcpCx,
    ) -> Result<t::KillTerminalResponse, ErrorObject> {
        self.0.called("terminal/kill");
        Ok(t::KillTerminalResponse::default())
    }

    async fn terminal_release(
        &self,
        _: t::ReleaseTerminalRequest,
        _: &AcpCx,
    ) -> Result<t::ReleaseTerminalResponse, ErrorObject> {
        self.0.called("terminal/release");
        Ok(t::ReleaseTerminalResponse::default())
    }

    async fn elicitation_create(
        &self,
        _: t::CreateElicitationRequest,
        _: &AcpCx,
    ) -> Result<t::CreateElicitationResponse, ErrorObject> {
        self.0.called("elicitation/create");
        Ok(
            serde_json::from_value(json!({"action": "accept", "content": {"name": "Ada"}}))
                .unwrap(),
        )
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
// Scenarios.

struct Running {
    link: Link,
    log: Arc<EditorLog>,
}

impl Running {
    /// `initialize` with `capabilities`, then a session.
    async fn started(link: Link, log: Arc<EditorLog>, capabilities: Value) -> Self {
        let params = serde_json::from_value(json!({
            "protocolVersion": 1,
            "clientCapabilities": capabilities,
        }))
        .unwrap();
        link.client.v1().initialize(params).await.unwrap();
        let params = serde_json::from_value(json!({"cwd": "/", "mcpServers": []})).unwrap();
        link.client.v1().session_new(params).await.unwrap();
        Self { link, log }
    }

    async fn prompt(&self, text: &str) -> String {
        let params = serde_json::from_value(json!({
            "sessionId": "s",
            "prompt": [{"type": "text", "text": text}]
        }))
        .unwrap();
        self.link.client.v1().session_prompt(params).await.unwrap();
        self.log.texts().last().cloned().unwrap_or_default()
    }

    fn agent_sent(&self, method: &str) -> bool {
        self.link
            .wire
            .sent_by_agent()
            .iter()
            .any(|message| message["method"] == method)
    }
}

fn server() -> AcpAgentServer<AgentV1<CallingAgent>> {
    AcpAgentServer::new(AgentV1(CallingAgent))
}

async fn over_stdio(capabilities: Value) -> Running {
    let editor = Editor::default();
    let log = Arc::clone(&editor.0);
    let link = Link::stdio(server(), ClientV1(editor)).await;
    Running::started(link, log, capabilities).await
}

async fn over_http(capabilities: Value) -> Running {
    let editor = Editor::default();
    let log = Arc::clone(&editor.0);
    let link = Link::http(server(), ClientV1(editor)).await;
    Running::started(link, log, capabilities).await
}

const TERMINAL_LIFECYCLE: [&str; 5] = [
    "terminal/create",
    "terminal/output",
    "terminal/wait_for_exit",
    "terminal/kill",
    "terminal/release",
];

async fn terminal_lifecycle(run: Running) {
    let said = run.prompt("terminal").await;
    assert_eq!(said, "term-1: hello exit Some(0)");
    assert_eq!(run.log.calls(), TERMINAL_LIFECYCLE);
    run.link.wire.assert_valid();
}

async fn terminal_not_advertised(run: Running) {
    let said = run.prompt("terminal").await;
    assert_eq!(said, "not advertised: terminal");
    assert!(run.log.calls().is_empty());
    assert!(
        !TERMINAL_LIFECYCLE
            .iter()
            .any(|method| run.agent_sent(method)),
        "no terminal method reached a client without the capability"
    );
    run.link.wire.assert_valid();
}

async fn elicitation(run: Running) {
    let said: Value = serde_json::from_str(&run.prompt("elicit").await).unwrap();
    assert_eq!(
        said,
        json!({"action": "accept", "content": {"name": "Ada"}})
    );
    assert_eq!(run.log.calls(), ["elicitation/create"]);
    run.link.wire.assert_valid();
}

async fn elicitation_not_advertised(run: Running) {
    let said = run.prompt("elicit").await;
    assert_eq!(said, "not advertised: elicitation");
    assert!(!run.agent_sent("elicitation/create"));
    run.link.wire.assert_valid();
}

macro_rules! on_both_transports {
    ($($name:ident => $scenario:ident with $capabilities:expr;)*) => {
        mod stdio {
            use super::*;
            $(#[tokio::test] async fn $name() { $scenario(over_stdio($capabilities).await).await })*
        }
        mod http {
            use super::*;
            $(#[tokio::test] async fn $name() { $scenario(over_http($capabilities).await).await })*
        }
    };
}

on_both_transports! {
    the_whole_terminal_lifecycle_runs_on_a_client_that_advertised_terminal
        => terminal_lifecycle with json!({"terminal": true});
    no_terminal_method_is_sent_to_a_client_without_terminal
        => terminal_not_advertised with json!({"terminal": false});
    elicitation_create_reaches_a_client_that_advertised_elicitation
        => elicitation with json!({"elicitation": {"form": {}}});
    elicitation_create_is_never_sent_to_a_client_without_elicitation
        => elicitation_not_advertised with json!({});
}

#[tokio::test]
async fn an_agent_abandoning_a_client_call_sends_cancel_request_and_the_client_handler_sees_it() {
    let run = over_stdio(json!({})).await;
    let said = run.prompt("abandon").await;
    assert_eq!(said, "abandoned");
    // `notify_one` keeps a permit, so a cancellation seen before this wait still counts.
    tokio::time::timeout(
        Duration::from_secs(5),
        run.log.question_cancelled.notified(),
    )
    .await
    .expect("the client's handler saw its request cancelled");
    assert_eq!(run.log.cancelled_questions.load(Ordering::Relaxed), 1);
    let question_id = run
        .link
        .wire
        .sent_by_agent()
        .iter()
        .find(|message| message["method"] == "session/request_permission")
        .map(|message| message["id"].clone())
        .unwrap();
    let cancel = run
        .link
        .wire
        .sent_by_agent()
        .into_iter()
        .find(|message| message["method"] == "$/cancel_request")
        .expect("the agent sent $/cancel_request");
    assert_eq!(cancel["params"]["requestId"], question_id);
    run.link.wire.assert_valid();
}

/// The form and url members of the v1 union once came out of the generator as empty enums
/// (codegen's `distribute-object-over-nested-union` rewrite): a form elicitation keeps its schema.
#[test]
fn a_form_elicitation_keeps_its_requested_schema_through_the_generated_type() {
    let form = json!({
        "sessionId": "s",
        "message": "Your name?",
        "mode": "form",
        "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}
    });
    let typed: t::CreateElicitationRequest = serde_json::from_value(form.clone()).unwrap();
    assert_eq!(serde_json::to_value(typed).unwrap(), form);
}

/// The other-mode member of `CreateElicitationRequest` allows members it does not name
/// (`unevaluatedProperties: true`; upstream asks clients to keep an unknown mode's raw payload),
/// so its generated type keeps them (codegen's `unevaluated-properties-kept` rewrite) instead of
/// dropping them on a round trip — in every revision built, scoped to a session or a request.
#[test]
fn an_other_mode_elicitation_keeps_its_extra_fields_through_decode_and_encode() {
    let session_scoped = json!({
        "sessionId": "s",
        "toolCallId": "call-1",
        "message": "Pick a colour",
        "mode": "_palette",
        "palette": {"colours": ["red", "teal"], "columns": 2},
        "allowCustom": true,
        "_meta": {"trace": "t-1"}
    });
    let request_scoped = json!({
        "requestId": 7,
        "message": "Sign in",
        "mode": "device_code",
        "verificationUri": "https://example.test/device",
        "userCode": "ABCD-1234"
    });
    for instance in [&session_scoped, &request_scoped] {
        round_trips_as_other_mode::<t::CreateElicitationRequest>(
            instance,
            &acp_support::Schema::load("v1"),
            |typed| matches!(typed, t::CreateElicitationRequest::Variant2(_)),
        );
        #[cfg(feature = "unstable")]
        {
            use protocols_acp::generated::{v1_unstable, v2, v2_unstable};
            round_trips_as_other_mode::<v2::types::CreateElicitationRequest>(
                instance,
                &acp_support::Schema::load("v2"),
                |typed| matches!(typed, v2::types::CreateElicitationRequest::Variant2(_)),
            );
            round_trips_as_other_mode::<v1_unstable::types::CreateElicitationRequest>(
                instance,
                &acp_support::Schema::load_unstable("v1"),
                |typed| {
                    matches!(
                        typed,
                        v1_unstable::types::CreateElicitationRequest::Variant2(_)
                    )
                },
            );
            round_trips_as_other_mode::<v2_unstable::types::CreateElicitationRequest>(
                instance,
                &acp_support::Schema::load_unstable("v2"),
                |typed| {
                    matches!(
                        typed,
                        v2_unstable::types::CreateElicitationRequest::Variant2(_)
                    )
                },
            );
        }
    }
}

/// Decodes `instance` as `T`, checks it took the other-mode member, re-encodes it and checks the
/// result equals the input and is still valid against the schema's `CreateElicitationRequest`.
fn round_trips_as_other_mode<T>(
    instance: &Value,
    schema: &acp_support::Schema,
    is_other_mode: impl Fn(&T) -> bool,
) where
    T: serde::de::DeserializeOwned + serde::Serialize,
{
    schema.assert_instance_of("CreateElicitationRequest", instance);
    let typed: T = serde_json::from_value(instance.clone()).unwrap();
    assert!(is_other_mode(&typed), "decoded as another mode: {instance}");
    let encoded = serde_json::to_value(&typed).unwrap();
    assert_eq!(&encoded, instance);
    schema.assert_instance_of("CreateElicitationRequest", &encoded);
}
