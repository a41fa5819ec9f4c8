//! ACP version 2 end to end (builds with `unstable`, as upstream marks v2 draft): the demo agent
//! as a real process (`all-protocols`, built with `unstable`), driven by our typed v2 client
//! (`AcpClient::v2()`) over its stdio and over HTTP at `/acp`. Every v2 client→agent method,
//! the prompt lifecycle told through `state_update`s, permission allowed and rejected,
//! `session/cancel` mid-prompt, unknown sessions, and a v1-only method refused once v2 is
//! negotiated. Every scenario validates each message either side sent against the pinned v2
//! schema.

#![cfg(feature = "unstable")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod acp_support;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use acp_support::{Link, built_all_protocols};
use protocols_acp::generated::v2;
use protocols_acp::generated::v2::types as t;
use protocols_acp::serve::{AcpCx, ClientV2};
use protocols_acp::updates::{ALLOW_ONCE, REJECT_ONCE};
use protocols_runtime::ErrorObject;
use protocols_runtime::method::ClientError;
use serde_json::{Value, json};

// ---------------------------------------------------------------------------------------------
// The v2 editor: answers permission questions and records every update as JSON.

#[derive(Debug, Default)]
struct EditorLog {
    reject: AtomicBool,
    permission_questions: AtomicU64,
    updates: Mutex<Vec<Value>>,
}

impl EditorLog {
    fn updates_of(&self, kind: &str) -> Vec<Value> {
        self.updates
            .lock()
            .unwrap()
            .iter()
            .filter(|update| update["sessionUpdate"] == kind)
            .cloned()
            .collect()
    }

    fn texts(&self) -> Vec<String> {
        self.updates_of("agent_message_chunk")
            .iter()
            .map(|update| update["content"]["text"].as_str().unwrap().to_owned())
            .collect()
    }

    /// Each `state_update` as `state` or `state:stopReason`.
    fn states(&self) -> Vec<String> {
        self.updates_of("state_update")
            .iter()
            .map(|update| match update["stopReason"].as_str() {
                Some(reason) => format!("{}:{reason}", update["state"].as_str().unwrap()),
                None => update["state"].as_str().unwrap().to_owned(),
            })
            .collect()
    }
}

#[derive(Debug, Clone, Default)]
struct Editor(Arc<EditorLog>);

impl v2::Client for Editor {
    type Context = AcpCx;

    async fn session_request_permission(
        &self,
        _: t::RequestPermissionRequest,
        _: &AcpCx,
    ) -> Result<t::RequestPermissionResponse, ErrorObject> {
        self.0.permission_questions.fetch_add(1, Ordering::Relaxed);
        let option = if self.0.reject.load(Ordering::Relaxed) {
            REJECT_ONCE
        } else {
            ALLOW_ONCE
        };
        Ok(serde_json::from_value(json!({
            "outcome": {"outcome": "selected", "optionId": option}
        }))
        .unwrap())
    }

    async fn session_update(&self, p: t::UpdateSessionNotification, _: &AcpCx) {
        let update = serde_json::to_value(p.update).unwrap();
        self.0.updates.lock().unwrap().push(update);
    }
}

// ---------------------------------------------------------------------------------------------
// The demo agent as a process, over its stdio or over HTTP.

struct Demo {
    link: Link,
    log: Arc<EditorLog>,
    _process: tokio::process::Child,
}

async fn over_stdio() -> Demo {
    let editor = Editor::default();
    let log = Arc::clone(&editor.0);
    let mut command = tokio::process::Command::new(built_all_protocols());
    command.args(["--stdio", "acp"]);
    let (link, process) = Link::child(&mut command, ClientV2(editor)).await;
    Demo {
        link,
        log,
        _process: process,
    }
}

async fn over_http() -> Demo {
    let listen_on = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let address = listen_on.to_string();
    let process = tokio::process::Command::new(built_all_protocols())
        .args(["--listen", &address])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("the demo server starts");
    assert!(
        protocols_testkit::listening_within(listen_on, Duration::from_secs(30)).await,
        "the demo server listens"
    );
    let editor = Editor::default();
    let log = Arc::clone(&editor.0);
    let link = Link::http_at(&format!("http://{address}/acp"), ClientV2(editor));
    Demo {
        link,
        log,
        _process: process,
    }
}

impl Demo {
    fn v2(&self) -> v2::RemoteAgent<&protocols_acp::client::AcpClient> {
        self.link.client.v2()
    }

    /// `initialize` asking for `version`; returns the version the agent answered with.
    async fn initialize(&self, version: u16) -> u16 {
        let params = serde_json::from_value(json!({
            "protocolVersion": version,
            "info": {"name": "acp-v2-tests", "version": "0"},
            "capabilities": {}
        }))
        .unwrap();
        self.v2()
            .initialize(params)
            .await
            .unwrap()
            .protocol_version
            .0
    }

    async fn new_session(&self) -> t::SessionId {
        let params = serde_json::from_value(json!({"cwd": "/tmp"})).unwrap();
        self.v2().session_new(params).await.unwrap().session_id
    }

    async fn prompt(&self, session: &t::SessionId, text: &str) -> Result<(), ClientError> {
        let params = serde_json::from_value(json!({
            "sessionId": session.0,
            "prompt": [{"type": "text", "text": text}]
        }))
        .unwrap();
        self.v2().session_prompt(params).await.map(|_| ())
    }

    fn assert_wire_valid(&self) -> usize {
        self.link.wire.assert_valid_against("v2")
    }
}

fn params<T: serde::de::DeserializeOwned>(value: Value) -> T {
    serde_json::from_value(value).unwrap()
}

fn rejected_code(error: &ClientError) -> Option<i64> {
    match error {
        ClientError::Rejected(error) => Some(error.code),
        _ => None,
    }
}

// ---------------------------------------------------------------------------------------------
// Scenarios.

async fn every_v2_method(demo: Demo) {
    assert_eq!(demo.initialize(2).await, 2);
    let agent = demo.v2();
    agent
        .auth_login(params(json!({"methodId": "none"})))
        .await
        .unwrap();
    let session = demo.new_session().await;
    let id = session.0.clone();
    let listed = agent.session_list(params(json!({}))).await.unwrap();
    assert!(listed.sessions.iter().any(|info| info.session_id.0 == id));
    agent
        .session_resume(params(json!({"sessionId": id, "cwd": "/tmp"})))
        .await
        .unwrap();
    agent
        .session_set_config_option(params(json!({
            "sessionId": id, "configId": "mode", "type": "id", "value": "fast"
        })))
        .await
        .unwrap();
    demo.prompt(&session, "hi").await.unwrap();
    agent
        .session_cancel(params(json!({"sessionId": id})))
        .await
        .unwrap();
    agent
        .session_close(params(json!({"sessionId": id})))
        .await
        .unwrap();
    agent
        .session_delete(params(json!({"sessionId": id})))
        .await
        .unwrap();
    let listed = agent.session_list(params(json!({}))).await.unwrap();
    assert!(
        listed.sessions.iter().all(|info| info.session_id.0 != id),
        "the deleted session is gone"
    );
    agent.auth_logout(params(json!({}))).await.unwrap();
    let methods: std::collections::BTreeSet<String> = demo
        .link
        .wire
        .sent_by_client()
        .iter()
        .filter_map(|message| message["method"].as_str().map(str::to_owned))
        .collect();
    let every_v2_client_method = v2::METHODS
        .iter()
        .filter(|spec| spec.direction == protocols_runtime::method::Direction::ClientToServer)
        .map(|spec| spec.name.to_owned())
        .collect::<std::collections::BTreeSet<_>>();
    assert_eq!(methods, every_v2_client_method);
    assert!(demo.assert_wire_valid() >= 25);
}

async fn prompt_lifecycle(demo: Demo) {
    demo.initialize(2).await;
    let session = demo.new_session().await;
    demo.prompt(&session, "hello v2").await.unwrap();
    assert_eq!(demo.log.texts(), ["echo: hello v2"]);
    assert_eq!(demo.log.states(), ["running", "idle:end_turn"]);
    demo.assert_wire_valid();
}

async fn read_allowed(demo: Demo) {
    demo.initialize(2).await;
    let session = demo.new_session().await;
    demo.prompt(&session, "read /tmp/acp-v2.txt").await.unwrap();
    assert_eq!(demo.log.permission_questions.load(Ordering::Relaxed), 1);
    let calls = demo.log.updates_of("tool_call_update");
    let statuses: Vec<&str> = calls
        .iter()
        .map(|update| update["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["pending", "failed"]);
    assert_eq!(
        calls[1]["title"],
        "ACP v2 gives agents no client file system"
    );
    assert_eq!(demo.log.states(), ["running", "idle:end_turn"]);
    demo.assert_wire_valid();
}

async fn read_rejected(demo: Demo) {
    demo.initialize(2).await;
    demo.log.reject.store(true, Ordering::Relaxed);
    let session = demo.new_session().await;
    demo.prompt(&session, "read /tmp/acp-v2.txt").await.unwrap();
    assert_eq!(demo.log.permission_questions.load(Ordering::Relaxed), 1);
    let calls = demo.log.updates_of("tool_call_update");
    assert_eq!(calls.last().unwrap()["title"], "permission denied");
    demo.assert_wire_valid();
}

async fn cancel_mid_prompt(demo: Demo) {
    demo.initialize(2).await;
    let session = demo.new_session().await;
    let cancel = async {
        while demo.log.texts().len() < 2 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        demo.v2()
            .session_cancel(params(json!({"sessionId": session.0})))
            .await
            .unwrap();
    };
    let (answer, ()) = tokio::join!(demo.prompt(&session, "slow please"), cancel);
    answer.unwrap();
    assert_eq!(demo.log.states(), ["running", "idle:cancelled"]);
    demo.assert_wire_valid();
}

async fn unknown_session(demo: Demo) {
    demo.initialize(2).await;
    let refused = demo
        .prompt(&t::SessionId("nope".into()), "hi")
        .await
        .unwrap_err();
    assert_eq!(rejected_code(&refused), Some(-32002));
    demo.assert_wire_valid();
}

async fn v1_method_on_v2(demo: Demo) {
    demo.initialize(2).await;
    // `session/load` is v1's; a connection that negotiated v2 answers it as unknown.
    let refused = demo
        .link
        .client
        .call_raw(
            "session/load",
            &json!({"sessionId": "s", "cwd": "/", "mcpServers": []}),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(refused, protocols_acp::CallError::Rejected(ref error) if error.code == -32601)
    );
}

async fn v1_still_served(demo: Demo) {
    // The same v2-capable agent answers a client asking for 1 with 1.
    let answer = demo
        .link
        .client
        .call_raw(
            "initialize",
            &json!({"protocolVersion": 1, "clientCapabilities": {}}),
        )
        .await
        .unwrap();
    let answer: Value = serde_json::from_str(answer.get()).unwrap();
    assert_eq!(answer["protocolVersion"], 1);
}

macro_rules! on_both_transports {
    ($($name:ident => $scenario:ident;)*) => {
        mod stdio {
            use super::*;
            $(#[tokio::test] async fn $name() { $scenario(over_stdio().await).await })*
        }
        mod http {
            use super::*;
            $(#[tokio::test] async fn $name() { $scenario(over_http().await).await })*
        }
    };
}

on_both_transports! {
    every_v2_client_to_agent_method_is_answered_and_every_message_fits_the_v2_schema
        => every_v2_method;
    a_v2_prompt_streams_its_text_between_running_and_idle_end_turn => prompt_lifecycle;
    an_allowed_v2_read_asks_permission_then_fails_for_want_of_a_client_file_system
        => read_allowed;
    a_rejected_v2_read_reports_permission_denied => read_rejected;
    session_cancel_ends_a_slow_v2_turn_with_idle_cancelled => cancel_mid_prompt;
    a_v2_prompt_to_an_unknown_session_is_refused_with_resource_not_found => unknown_session;
    a_v1_only_method_on_a_v2_connection_is_minus_32601 => v1_method_on_v2;
    a_client_asking_for_version_1_still_gets_1_from_a_v2_capable_agent => v1_still_served;
}
