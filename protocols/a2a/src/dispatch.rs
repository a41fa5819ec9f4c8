//! One call, by 1.0 method name, from JSON params to a JSON answer: a single result or a stream
//! of them. Both bindings (JSON-RPC and HTTP+JSON) and both revisions end here, after their own
//! framing and the 0.3 mapping; the generated dispatcher decodes params into the type the
//! method table names (a shape that does not fit is -32602 before any work starts) and calls
//! the generated `Agent` trait [`crate::agent`] implements.

use futures::stream::BoxStream;
use protocols_runtime::ErrorObject;
use protocols_runtime::method::Answer;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::error::A2aError;
use crate::executor::AgentExecutor;
use crate::service::{A2aService, Caller};

/// What a call answers: 1.0 JSON as the generated types wrote it.
pub enum Outcome {
    /// One answer.
    Single(Box<RawValue>),
    /// A stream of answers, each an event or an error.
    Stream(BoxStream<'static, Result<Box<RawValue>, ErrorObject>>),
}

impl std::fmt::Debug for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Single(value) => f.debug_tuple("Single").field(value).finish(),
            Self::Stream(_) => f.write_str("Stream"),
        }
    }
}

/// Runs `method` with `params` (1.0 JSON, as received); errors come back as the typed A2A
/// error.
pub async fn call<E: AgentExecutor>(
    service: &A2aService<E>,
    method: &str,
    params: Option<&RawValue>,
    caller: Caller,
) -> Result<Outcome, A2aError> {
    let params = params.filter(|raw| raw.get() != "null");
    match crate::v1::dispatch_agent_request(service, method, params, &caller).await {
        Answer::Reply(Ok(raw)) => Ok(Outcome::Single(with_required_tasks(method, raw))),
        Answer::Reply(Err(error)) => Err(A2aError::from_error_object(&error)),
        Answer::Stream(replies) => Ok(Outcome::Stream(replies)),
    }
}

/// `ListTasksResponse.tasks` is REQUIRED, yet the generated type leaves an empty list out (the
/// rule its generator applies to every repeated field); a listing always carries it.
fn with_required_tasks(method: &str, raw: Box<RawValue>) -> Box<RawValue> {
    if method != crate::v1::methods::LIST_TASKS {
        return raw;
    }
    let Ok(Value::Object(mut fields)) = serde_json::from_str::<Value>(raw.get()) else {
        return raw;
    };
    if fields.contains_key("tasks") {
        return raw;
    }
    fields.insert("tasks".into(), Value::Array(Vec::new()));
    serde_json::value::to_raw_value(&fields).unwrap_or(raw)
}
