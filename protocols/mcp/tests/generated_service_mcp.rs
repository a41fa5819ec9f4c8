//! The generated MCP services, driven through their dispatchers and typed proxies: the one
//! method a handler implements answers, every other request is -32601, and a typed call through
//! an in-memory transport round-trips. (That every method of every pinned revision reaches its
//! own handler method is `revisions.rs`'s.) Params come from the method table and the schema
//! cache (the smallest instance each params definition accepts), never a hand list.

// Test helpers outside `#[test]` fns unwrap too; a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::future::Future;
use std::pin::pin;
use std::sync::Mutex;
use std::task::{Context, Poll, Waker};

use codegen::model::RevisionModel;
use codegen::samples;
use protocols_mcp::generated::v2025_06_18 as rev;
use protocols_runtime::ErrorObject;
use protocols_runtime::method::{ClientError, DispatchError, MethodKind, MethodSpec, RpcClient};
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
    samples::revision_model("mcp", revision).unwrap_or_else(|error| panic!("{error}"))
}

/// The smallest params the method's params definition accepts; `None` when it takes none.
fn sample_params(model: &RevisionModel, spec: &MethodSpec) -> Option<Box<RawValue>> {
    samples::minimal_params(model, spec.name).map(|params| raw(&params))
}

fn code(reply: &Result<Box<RawValue>, ErrorObject>) -> Option<i64> {
    reply.as_ref().err().map(|error| error.code)
}

/// What the test server's context records: the notifications it received.
#[derive(Debug, Default)]
struct Recorder {
    notified: Mutex<Vec<&'static str>>,
}

/// Implements `tools/call` (echoing the tool's name) and `notifications/initialized`, nothing
/// else.
struct ToolsOnly;

impl rev::Server for ToolsOnly {
    type Context = Recorder;

    async fn tools_call(
        &self,
        params: rev::types::CallToolRequestParams,
        _cx: &Recorder,
    ) -> Result<rev::types::CallToolResult, ErrorObject> {
        let text = format!("called {}", params.name);
        serde_json::from_value(json!({"content": [{"type": "text", "text": text}]}))
            .map_err(|_| ErrorObject::internal_error())
    }

    async fn notifications_initialized(
        &self,
        _params: Option<rev::types::InitializedNotificationParams>,
        cx: &Recorder,
    ) {
        cx.notified
            .lock()
            .unwrap()
            .push(rev::methods::NOTIFICATIONS_INITIALIZED);
    }
}

#[test]
fn a_handler_implementing_only_tools_call_answers_it_and_every_other_request_with_method_not_found()
{
    let model = model("2025-06-18");
    let requests = rev::METHODS
        .iter()
        .filter(|spec| spec.kind == MethodKind::Request && spec.direction.from_client());
    let mut answered = Vec::new();
    for spec in requests {
        let params = sample_params(&model, spec);
        let reply = run(rev::dispatch_server_request(
            &ToolsOnly,
            spec.name,
            params.as_deref(),
            &Recorder::default(),
        ));
        match reply {
            Ok(result) => answered.push((spec.name, result.get().to_owned())),
            Err(error) => assert_eq!(error.code, -32601, "{}", spec.name),
        }
    }
    assert_eq!(
        answered,
        [(
            "tools/call",
            r#"{"content":[{"text":"called x","type":"text"}]}"#.to_owned()
        )]
    );
}

/// Routes a typed proxy's calls into the generated dispatcher, as a transport would.
struct InMemory<H: rev::Server> {
    handler: H,
    context: H::Context,
}

impl<H: rev::Server> RpcClient for InMemory<H> {
    async fn call(
        &self,
        method: &'static str,
        params: Option<Box<RawValue>>,
    ) -> Result<Box<RawValue>, ClientError> {
        rev::dispatch_server_request(&self.handler, method, params.as_deref(), &self.context)
            .await
            .map_err(ClientError::Rejected)
    }

    async fn notify(
        &self,
        method: &'static str,
        params: Option<Box<RawValue>>,
    ) -> Result<(), ClientError> {
        rev::dispatch_server_notification(&self.handler, method, params.as_deref(), &self.context)
            .await
            .map_err(|error| ClientError::Rejected(error.to_error_object()))
    }
}

fn in_memory_server() -> rev::RemoteServer<InMemory<ToolsOnly>> {
    rev::RemoteServer::new(InMemory {
        handler: ToolsOnly,
        context: Recorder::default(),
    })
}

#[test]
fn a_typed_call_through_an_in_memory_transport_round_trips_params_and_result() {
    let server = in_memory_server();
    let params =
        serde_json::from_value(json!({"name": "echo", "arguments": {"text": "hi"}})).unwrap();
    let result = run(server.tools_call(params)).unwrap();
    assert_eq!(
        serde_json::to_value(&result).unwrap(),
        json!({"content": [{"type": "text", "text": "called echo"}]})
    );
}

#[test]
fn a_typed_notification_reaches_the_handler_with_the_context_the_transport_passes() {
    let server = in_memory_server();
    run(server.notifications_initialized(None)).unwrap();
    let notified = server.transport().context.notified.lock().unwrap().clone();
    assert_eq!(notified, ["notifications/initialized"]);
}

#[test]
fn a_typed_call_the_handler_does_not_implement_is_rejected_with_method_not_found() {
    let server = in_memory_server();
    let outcome = run(server.tools_list(None));
    assert!(
        matches!(&outcome, Err(ClientError::Rejected(error)) if error.code == -32601),
        "{outcome:?}"
    );
}

#[test]
fn an_unknown_method_answers_method_not_found() {
    let cx = Recorder::default();
    let reply = run(rev::dispatch_server_request(
        &ToolsOnly,
        "tools/unknown",
        None,
        &cx,
    ));
    assert_eq!(code(&reply), Some(-32601));
    let notified = run(rev::dispatch_server_notification(
        &ToolsOnly,
        "notifications/unknown",
        None,
        &cx,
    ));
    assert!(matches!(notified, Err(DispatchError::UnknownMethod)));
}

#[test]
fn params_that_do_not_fit_answer_invalid_params_without_echoing_them() {
    let cx = Recorder::default();
    let hostile = raw(&json!({"name": ["<script>alert(1)</script>"]}));
    for params in [Some(&*hostile), None] {
        let reply = run(rev::dispatch_server_request(
            &ToolsOnly,
            "tools/call",
            params,
            &cx,
        ));
        let error = reply.err().unwrap();
        assert_eq!(error.code, -32602);
        assert_eq!(error.message, "invalid params for tools/call");
        assert!(error.data.is_none());
    }
}

/// The dispatcher's future can be handed to a multi-threaded runtime (the `RequestHandler`
/// seam requires `Send`) for any handler, without boxing.
#[test]
fn the_dispatcher_future_is_send_for_a_generic_handler() {
    fn assert_send<F: Future + Send>(_: F) {}
    fn generic<H: rev::Server>(handler: &H, cx: &H::Context) {
        assert_send(rev::dispatch_server_request(handler, "ping", None, cx));
        assert_send(rev::dispatch_server_notification(handler, "ping", None, cx));
    }
    generic(&ToolsOnly, &Recorder::default());
}
