//! The generated A2A 1.0 agent service's streaming path: a streaming RPC answers
//! `Answer::Stream` with one serialized reply per item (errors included), a unary RPC answers
//! `Answer::Reply`, an unimplemented streaming RPC is refused up front with -32601, and the typed
//! proxy yields the stream's items typed through an in-memory transport.

// Test helpers outside `#[test]` fns unwrap too; a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use futures::StreamExt;
use protocols_a2a::generated::v1_0_1 as rev;
use protocols_runtime::ErrorObject;
use protocols_runtime::method::{Answer, ClientError, RawResultStream, ResultStream, RpcClient};
use serde_json::value::RawValue;
use serde_json::{Value, json};

/// Runs a future to completion without a reactor: in-memory dispatch and in-memory streams
/// never wait, so a second poll would mean something blocked.
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

fn working() -> Value {
    json!({"statusUpdate": {"taskId": "t1", "contextId": "c1", "status": {"state": "TASK_STATE_WORKING"}}})
}

fn echo(text: &str) -> Value {
    json!({"message": {"messageId": "m1", "role": "ROLE_AGENT", "parts": [{"text": format!("echo: {text}")}]}})
}

/// Streams a working status, the echo of the first text part, then an error; implements
/// nothing else.
struct StreamingEcho;

impl rev::Agent for StreamingEcho {
    type Context = ();

    async fn send_streaming_message(
        &self,
        params: rev::types::SendMessageRequest,
        _cx: &(),
    ) -> Result<ResultStream<rev::types::StreamResponse>, ErrorObject> {
        let message = serde_json::to_value(&params.message).unwrap_or_default();
        let text = message["parts"][0]["text"]
            .as_str()
            .unwrap_or("")
            .to_owned();
        let items: Vec<Result<rev::types::StreamResponse, ErrorObject>> = vec![
            serde_json::from_value(working()).map_err(|_| ErrorObject::internal_error()),
            serde_json::from_value(echo(&text)).map_err(|_| ErrorObject::internal_error()),
            Err(ErrorObject::new(-32001, "task not found")),
        ];
        Ok(Box::pin(futures::stream::iter(items)))
    }

    async fn get_task(
        &self,
        params: rev::types::GetTaskRequest,
        _cx: &(),
    ) -> Result<rev::types::Task, ErrorObject> {
        serde_json::from_value(json!({"id": params.id, "contextId": "c1", "status": {"state": "TASK_STATE_COMPLETED"}}))
            .map_err(|_| ErrorObject::internal_error())
    }
}

fn send_params(text: &str) -> Value {
    json!({"message": {"messageId": "u1", "role": "ROLE_USER", "parts": [{"text": text}]}})
}

fn as_json(reply: &Result<Box<RawValue>, ErrorObject>) -> Result<Value, i64> {
    match reply {
        Ok(raw) => Ok(serde_json::from_str(raw.get()).unwrap()),
        Err(error) => Err(error.code),
    }
}

#[test]
fn a_streaming_rpc_answers_a_stream_of_serialized_items_errors_included() {
    let params = raw(&send_params("hi"));
    let answer = run(rev::dispatch_agent_request(
        &StreamingEcho,
        "SendStreamingMessage",
        Some(&params),
        &(),
    ));
    let Answer::Stream(stream) = answer else {
        panic!("a streaming RPC answered {answer:?}");
    };
    let items: Vec<Result<Value, i64>> = run(stream.collect::<Vec<_>>())
        .iter()
        .map(as_json)
        .collect();
    assert_eq!(items, [Ok(working()), Ok(echo("hi")), Err(-32001)]);
}

#[test]
fn a_unary_rpc_on_a_streaming_side_answers_one_reply() {
    let params = raw(&json!({"id": "t7"}));
    let answer = run(rev::dispatch_agent_request(
        &StreamingEcho,
        "GetTask",
        Some(&params),
        &(),
    ));
    let Answer::Reply(reply) = answer else {
        panic!("a unary RPC answered a stream");
    };
    assert_eq!(
        as_json(&reply).map(|task| task["id"].clone()),
        Ok(json!("t7"))
    );
}

#[test]
fn an_unimplemented_streaming_rpc_is_refused_before_any_stream() {
    let params = raw(&json!({"id": "t7"}));
    let answer = run(rev::dispatch_agent_request(
        &StreamingEcho,
        "SubscribeToTask",
        Some(&params),
        &(),
    ));
    assert!(
        matches!(&answer, Answer::Reply(Err(error)) if error.code == -32601),
        "{answer:?}"
    );
}

#[test]
fn misshapen_params_of_a_streaming_rpc_answer_invalid_params_and_unknown_methods_method_not_found()
{
    let misshapen = raw(&json!({"message": "<script>"}));
    let answer = run(rev::dispatch_agent_request(
        &StreamingEcho,
        "SendStreamingMessage",
        Some(&misshapen),
        &(),
    ));
    assert!(
        matches!(&answer, Answer::Reply(Err(error)) if error.code == -32602 && error.message == "invalid params for SendStreamingMessage"),
        "{answer:?}"
    );
    let unknown = run(rev::dispatch_agent_request(
        &StreamingEcho,
        "message/send",
        None,
        &(),
    ));
    assert!(
        matches!(&unknown, Answer::Reply(Err(error)) if error.code == -32601),
        "{unknown:?}"
    );
}

/// Routes the typed proxy's calls into the generated dispatcher, streams included.
struct InMemory;

impl InMemory {
    async fn answer(&self, method: &'static str, params: Option<Box<RawValue>>) -> Answer {
        rev::dispatch_agent_request(&StreamingEcho, method, params.as_deref(), &()).await
    }
}

impl RpcClient for InMemory {
    async fn call(
        &self,
        method: &'static str,
        params: Option<Box<RawValue>>,
    ) -> Result<Box<RawValue>, ClientError> {
        match self.answer(method, params).await {
            Answer::Reply(reply) => reply.map_err(ClientError::Rejected),
            Answer::Stream(_) => Err(ClientError::StreamingUnsupported),
        }
    }

    async fn notify(
        &self,
        method: &'static str,
        params: Option<Box<RawValue>>,
    ) -> Result<(), ClientError> {
        rev::dispatch_agent_notification(&StreamingEcho, method, params.as_deref(), &())
            .await
            .map_err(|error| ClientError::Rejected(error.to_error_object()))
    }

    async fn call_streaming(
        &self,
        method: &'static str,
        params: Option<Box<RawValue>>,
    ) -> Result<RawResultStream, ClientError> {
        match self.answer(method, params).await {
            Answer::Stream(stream) => Ok(Box::pin(
                stream.map(|reply| reply.map_err(ClientError::Rejected)),
            )),
            Answer::Reply(reply) => Err(ClientError::Rejected(
                reply.err().unwrap_or_else(ErrorObject::internal_error),
            )),
        }
    }
}

#[test]
fn the_typed_proxy_yields_a_streaming_rpcs_items_typed() {
    let agent = rev::RemoteAgent::new(InMemory);
    let params = serde_json::from_value(send_params("typed")).unwrap();
    let stream = run(agent.send_streaming_message(params)).unwrap();
    let items: Vec<Result<Value, String>> = run(stream.collect::<Vec<_>>())
        .into_iter()
        .map(|item| {
            item.map(|response| serde_json::to_value(&response).unwrap())
                .map_err(|error| error.to_string())
        })
        .collect();
    assert_eq!(
        items,
        [
            Ok(working()),
            Ok(echo("typed")),
            Err(
                "the peer answered with an error: JSON-RPC error -32001: `task not found`"
                    .to_owned()
            )
        ]
    );
}
