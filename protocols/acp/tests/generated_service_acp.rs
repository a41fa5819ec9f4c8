//! The generated ACP services, both sides, driven through their dispatchers and typed proxies:
//! the one method a handler implements answers, every other request is -32601, and typed calls
//! both ways (editor→agent and agent→client) round trip through in-memory transports. (That every
//! method of every pinned revision reaches its own handler method is `revisions.rs`'s.) Params
//! come from the method table and the schema cache, never a hand list.

// Test helpers outside `#[test]` fns unwrap too; a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::future::Future;
use std::pin::pin;
use std::sync::Mutex;
use std::task::{Context, Poll, Waker};

use codegen::model::RevisionModel;
use codegen::samples;
use protocols_acp::generated::v1 as rev;
use protocols_runtime::ErrorObject;
use protocols_runtime::method::{ClientError, MethodKind, MethodSpec, RpcClient};
use serde_json::value::RawValue;
use serde_json::{Value, json};

/// Runs a future to completion without a reactor: in-memory dispatch never waits on anything,
/// so a second poll would mean something blocked.
fn run<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    match future
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
    {
        Poll::Ready(output) => output,
        Poll::Pending => panic!("in-memory dispatch waited"),
    }
}

fn raw(value: &Value) -> Box<RawValue> {
    serde_json::value::to_raw_value(value).unwrap()
}

fn model(revision: &str) -> RevisionModel {
    samples::revision_model("acp", revision).unwrap_or_else(|error| panic!("{error}"))
}

/// The smallest params the method's params definition accepts; `None` when it takes none.
fn sample_params(model: &RevisionModel, spec: &MethodSpec) -> Option<Box<RawValue>> {
    samples::minimal_params(model, spec.name).map(|params| raw(&params))
}

fn code(reply: &Result<Box<RawValue>, ErrorObject>) -> Option<i64> {
    reply.as_ref().err().map(|error| error.code)
}

/// Implements `session/new` (naming the session after its working directory), nothing else.
struct NewSessionsOnly;

impl rev::Agent for NewSessionsOnly {
    type Context = ();

    async fn session_new(
        &self,
        params: rev::types::NewSessionRequest,
        _cx: &(),
    ) -> Result<rev::types::NewSessionResponse, ErrorObject> {
        serde_json::from_value(json!({"sessionId": format!("session at {}", params.cwd)}))
            .map_err(|_| ErrorObject::internal_error())
    }
}

#[test]
fn an_agent_implementing_only_session_new_answers_it_and_every_other_request_with_method_not_found()
{
    let model = model("v1");
    let requests = rev::METHODS
        .iter()
        .filter(|spec| spec.kind == MethodKind::Request && spec.direction.from_client());
    let mut answered = Vec::new();
    for spec in requests {
        let params = sample_params(&model, spec);
        let reply = run(rev::dispatch_agent_request(
            &NewSessionsOnly,
            spec.name,
            params.as_deref(),
            &(),
        ));
        match reply {
            Ok(result) => answered.push((spec.name, result.get().to_owned())),
            Err(error) => assert_eq!(error.code, -32601, "{}", spec.name),
        }
    }
    assert_eq!(
        answered,
        [("session/new", r#"{"sessionId":"session at x"}"#.to_owned())]
    );
}

/// What the editor's context records: the session updates it received.
#[derive(Debug, Default)]
struct Updates {
    received: Mutex<Vec<Value>>,
}

/// The editor side: reads files (answering with a description of the read) and records updates.
struct Editor;

impl rev::Client for Editor {
    type Context = Updates;

    async fn fs_read_text_file(
        &self,
        params: rev::types::ReadTextFileRequest,
        _cx: &Updates,
    ) -> Result<rev::types::ReadTextFileResponse, ErrorObject> {
        let content = format!("{} from line {:?}", params.path, params.line);
        serde_json::from_value(json!({"content": content}))
            .map_err(|_| ErrorObject::internal_error())
    }

    async fn session_update(&self, params: rev::types::SessionNotification, cx: &Updates) {
        if let Ok(update) = serde_json::to_value(&params) {
            cx.received.lock().unwrap().push(update);
        }
    }
}

/// Routes the agent's typed calls into the editor's generated dispatcher, as a connection would.
struct ToEditor {
    editor: Editor,
    context: Updates,
}

impl RpcClient for ToEditor {
    async fn call(
        &self,
        method: &'static str,
        params: Option<Box<RawValue>>,
    ) -> Result<Box<RawValue>, ClientError> {
        rev::dispatch_client_request(&self.editor, method, params.as_deref(), &self.context)
            .await
            .map_err(ClientError::Rejected)
    }

    async fn notify(
        &self,
        method: &'static str,
        params: Option<Box<RawValue>>,
    ) -> Result<(), ClientError> {
        rev::dispatch_client_notification(&self.editor, method, params.as_deref(), &self.context)
            .await
            .map_err(|error| ClientError::Rejected(error.to_error_object()))
    }
}

/// Routes the editor's typed calls into the agent's generated dispatcher.
struct ToAgent;

impl RpcClient for ToAgent {
    async fn call(
        &self,
        method: &'static str,
        params: Option<Box<RawValue>>,
    ) -> Result<Box<RawValue>, ClientError> {
        rev::dispatch_agent_request(&NewSessionsOnly, method, params.as_deref(), &())
            .await
            .map_err(ClientError::Rejected)
    }

    async fn notify(
        &self,
        method: &'static str,
        params: Option<Box<RawValue>>,
    ) -> Result<(), ClientError> {
        rev::dispatch_agent_notification(&NewSessionsOnly, method, params.as_deref(), &())
            .await
            .map_err(|error| ClientError::Rejected(error.to_error_object()))
    }
}

fn editor() -> rev::RemoteClient<ToEditor> {
    rev::RemoteClient::new(ToEditor {
        editor: Editor,
        context: Updates::default(),
    })
}

#[test]
fn an_agent_to_client_call_round_trips_typed_params_and_result() {
    let params = serde_json::from_value(json!({
        "sessionId": "s1",
        "path": "/tmp/notes.txt",
        "line": 3
    }))
    .unwrap();
    let response = run(editor().fs_read_text_file(params)).unwrap();
    assert_eq!(response.content, "/tmp/notes.txt from line Some(3)");
}

#[test]
fn an_editor_to_agent_call_round_trips_typed_params_and_result() {
    let agent = rev::RemoteAgent::new(ToAgent);
    let params = serde_json::from_value(json!({"cwd": "/work", "mcpServers": []})).unwrap();
    let response = run(agent.session_new(params)).unwrap();
    assert_eq!(
        serde_json::to_value(&response).unwrap(),
        json!({"sessionId": "session at /work"})
    );
}

#[test]
fn a_session_update_notification_reaches_the_editor_typed() {
    let editor = editor();
    let update = json!({
        "sessionId": "s1",
        "update": {
            "sessionUpdate": "agent_message_chunk",
            "content": {"type": "text", "text": "hello"}
        }
    });
    run(editor.session_update(serde_json::from_value(update.clone()).unwrap())).unwrap();
    let received = editor.transport().context.received.lock().unwrap().clone();
    assert_eq!(received, [update]);
}

#[test]
fn a_client_method_the_editor_does_not_implement_is_rejected_with_method_not_found() {
    let params = serde_json::from_value(json!({"sessionId": "s1", "command": "ls"})).unwrap();
    let outcome = run(editor().terminal_create(params));
    assert!(
        matches!(&outcome, Err(ClientError::Rejected(error)) if error.code == -32601),
        "{outcome:?}"
    );
}

#[test]
fn an_unknown_method_answers_method_not_found_on_both_sides() {
    let unknown_to_agent = run(rev::dispatch_agent_request(
        &NewSessionsOnly,
        "_vendor/x",
        None,
        &(),
    ));
    let unknown_to_editor = run(rev::dispatch_client_request(
        &Editor,
        "session/new",
        None,
        &Updates::default(),
    ));
    assert_eq!(code(&unknown_to_agent), Some(-32601));
    assert_eq!(code(&unknown_to_editor), Some(-32601));
}

#[test]
fn params_that_do_not_fit_answer_invalid_params_without_echoing_them() {
    let hostile = raw(&json!({"cwd": {"<script>": 1}, "mcpServers": "<script>"}));
    for params in [Some(&*hostile), None] {
        let reply = run(rev::dispatch_agent_request(
            &NewSessionsOnly,
            "session/new",
            params,
            &(),
        ));
        let error = reply.err().unwrap();
        assert_eq!(error.code, -32602);
        assert_eq!(error.message, "invalid params for session/new");
        assert!(error.data.is_none());
    }
}
