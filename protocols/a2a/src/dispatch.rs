//! One call, by 1.0 method name, from JSON params to a JSON answer: a single result or a stream
//! of them. Both bindings (JSON-RPC and HTTP+JSON) and both revisions end here, after their own
//! framing and the 0.3 mapping; the generated dispatcher decodes params into the type the
//! method table names (a shape that does not fit is -32602 before any work starts) and calls
//! the generated `Agent` trait [`crate::agent`] implements.

use futures::StreamExt as _;
use futures::stream::BoxStream;
use protocols_runtime::ErrorObject;
use protocols_runtime::method::Answer;
use serde_json::Value;

use crate::error::A2aError;
use crate::executor::AgentExecutor;
use crate::service::{A2aService, Caller};

/// What a call answers.
pub enum Outcome {
    Single(Value),
    Stream(BoxStream<'static, Result<Value, ErrorObject>>),
}

impl std::fmt::Debug for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Single(value) => f.debug_tuple("Single").field(value).finish(),
            Self::Stream(_) => f.write_str("Stream"),
        }
    }
}

fn to_value(raw: &serde_json::value::RawValue) -> Result<Value, ErrorObject> {
    serde_json::from_str(raw.get()).map_err(|_| ErrorObject::internal_error())
}

/// Runs `method` with `params`; errors come back as the typed A2A error.
pub async fn call<E: AgentExecutor>(
    service: &A2aService<E>,
    method: &str,
    params: Value,
    caller: Caller,
) -> Result<Outcome, A2aError> {
    let raw = if params.is_null() {
        None
    } else {
        Some(serde_json::value::to_raw_value(&params).map_err(|_| A2aError::Internal)?)
    };
    let answer = crate::v1::dispatch_agent_request(service, method, raw.as_deref(), &caller).await;
    match answer {
        Answer::Reply(Ok(raw)) => Ok(Outcome::Single(
            to_value(&raw).map_err(|error| A2aError::from_error_object(&error))?,
        )),
        Answer::Reply(Err(error)) => Err(A2aError::from_error_object(&error)),
        Answer::Stream(replies) => Ok(Outcome::Stream(
            replies
                .map(|reply| reply.and_then(|raw| to_value(&raw)))
                .boxed(),
        )),
    }
}
