//! One call, by 1.0 method name, from JSON params to a JSON answer: a single result or a stream
//! of them. Both bindings (JSON-RPC and HTTP+JSON) and both revisions end here, after their own
//! framing and the 0.3 mapping; params are decoded into the generated type the method table
//! names, so a shape that does not fit is -32602 before any work starts.

use futures::StreamExt as _;
use futures::stream::BoxStream;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::A2aError;
use crate::executor::AgentExecutor;
use crate::service::{A2aService, Caller, EventStream};
use crate::v1::methods as m;

/// What a call answers.
pub enum Outcome {
    Single(Value),
    Stream(BoxStream<'static, Value>),
}

impl std::fmt::Debug for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Single(value) => f.debug_tuple("Single").field(value).finish(),
            Self::Stream(_) => f.write_str("Stream"),
        }
    }
}

fn params<T: DeserializeOwned>(params: Value) -> Result<T, A2aError> {
    serde_json::from_value(params).map_err(|error| A2aError::InvalidParams(error.to_string()))
}

/// Params a method may omit: absent decodes as the type's default.
fn optional_params<T: DeserializeOwned + Default>(params: Value) -> Result<T, A2aError> {
    if params.is_null() {
        return Ok(T::default());
    }
    self::params(params)
}

fn single<T: Serialize>(result: Result<T, A2aError>) -> Result<Outcome, A2aError> {
    let value = serde_json::to_value(result?).map_err(|_| A2aError::Internal)?;
    Ok(Outcome::Single(value))
}

fn stream(events: Result<EventStream, A2aError>) -> Result<Outcome, A2aError> {
    Ok(Outcome::Stream(
        events?
            .map(|event| serde_json::to_value(event).unwrap_or(Value::Null))
            .boxed(),
    ))
}

/// Whether `method` answers with a stream.
pub fn is_streaming(method: &str) -> bool {
    crate::v1::METHODS
        .iter()
        .any(|spec| spec.name == method && spec.streaming)
}

/// Runs `method` with `params`.
pub async fn call<E: AgentExecutor>(
    service: &A2aService<E>,
    method: &str,
    params: Value,
    caller: Caller,
) -> Result<Outcome, A2aError> {
    match method {
        m::SEND_MESSAGE => single(service.send_message(self::params(params)?).await),
        m::SEND_STREAMING_MESSAGE => stream(service.send_streaming_message(self::params(params)?)),
        m::GET_TASK => single(service.get_task(&self::params(params)?)),
        m::LIST_TASKS => single(service.list_tasks(&optional_params(params)?)),
        m::CANCEL_TASK => single(service.cancel_task(&self::params(params)?)),
        m::SUBSCRIBE_TO_TASK => stream(service.subscribe_to_task(&self::params(params)?)),
        m::CREATE_TASK_PUSH_NOTIFICATION_CONFIG => {
            single(service.create_push_config(self::params(params)?))
        }
        m::GET_TASK_PUSH_NOTIFICATION_CONFIG => {
            single(service.get_push_config(&self::params(params)?))
        }
        m::LIST_TASK_PUSH_NOTIFICATION_CONFIGS => {
            single(service.list_push_configs(&self::params(params)?))
        }
        m::DELETE_TASK_PUSH_NOTIFICATION_CONFIG => {
            single(service.delete_push_config(&self::params(params)?))
        }
        m::GET_EXTENDED_AGENT_CARD => single(service.extended_card(caller)),
        _ => Err(A2aError::MethodNotFound),
    }
}
