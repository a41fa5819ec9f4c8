//! What a tool, resource or prompt handler gets beside its arguments: the negotiated revision,
//! progress and log notifications tied to this request, cancellation, and calls back to the
//! client (sampling, elicitation, roots). On the session revisions a call back is a real
//! server→client request; on the stateless 2026-07-28 revision it becomes an
//! `InputRequiredResult` the client answers by retrying with `inputResponses`, so the same
//! handler code serves both.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use protocols_runtime::{ErrorObject, Peer, PeerError};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use crate::generated::v2025_11_25::types;
use crate::logging::Level;
use crate::revision::Revision;
use crate::session::ClientCapabilities;
use crate::tasks::TaskLink;
use crate::wire;

/// JSON-RPC error codes MCP 2026-07-28 adds. Over HTTP each goes out with `400 Bad Request`
/// (see `stateless::ERROR_STATUSES`).
pub mod codes {
    /// Headers disagree with the body, or a required header is missing.
    pub const HEADER_MISMATCH: i64 = -32020;
    /// The request needs a client capability the client did not declare.
    pub const MISSING_CLIENT_CAPABILITY: i64 = -32021;
    /// The request's protocol version is not served here.
    pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;
}

/// Why a tool call did not produce its result.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ToolError {
    /// The tool ran and failed; the model sees the message in an `isError` result.
    #[error("{0}")]
    Failed(String),
    /// The request itself is wrong (a protocol error, not a tool outcome).
    #[error("{0}")]
    Protocol(ErrorObject),
    /// 2026-07-28: the client must answer these requests and retry.
    #[error("input required from the client")]
    InputRequired(InputRequests),
}

impl ToolError {
    pub fn failed(message: impl Into<String>) -> Self {
        Self::Failed(message.into())
    }
}

/// Requests a stateless call needs answered before it can finish, keyed as the handler asked
/// them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct InputRequests(pub Map<String, Value>);

/// What a handler's request arrived with.
#[derive(Debug, Clone, Default)]
pub(crate) struct Arrival {
    pub(crate) progress_token: Option<Value>,
    pub(crate) log_floor: Option<Level>,
    pub(crate) client_capabilities: ClientCapabilities,
    /// 2026-07-28: answers to the input requests of an earlier round.
    pub(crate) input_responses: Map<String, Value>,
}

/// What every clone of one request's context shares, in one allocation.
#[derive(Debug)]
struct Shared {
    arrival: Arrival,
    /// How many call backs the handler has made (they key the stateless input requests).
    asked: AtomicUsize,
    /// 2026-07-28: what the handler needs the client to answer first (see
    /// [`RequestContext::require_input`]); the server turns it into an `InputRequiredResult`.
    input_required: Mutex<Option<InputRequests>>,
}

/// The handler's view of the request it is serving. Cheap to clone.
#[derive(Debug, Clone)]
pub struct RequestContext {
    revision: Revision,
    peer: Peer,
    cancellation: CancellationToken,
    shared: Arc<Shared>,
    /// The task this work runs as, named in the `_meta` of everything it sends.
    related_task: Option<TaskLink>,
}

impl RequestContext {
    pub(crate) fn new(
        revision: Revision,
        peer: Peer,
        cancellation: CancellationToken,
        arrival: Arrival,
    ) -> Self {
        Self {
            revision,
            peer,
            cancellation,
            shared: Arc::new(Shared {
                arrival,
                asked: AtomicUsize::new(0),
                input_required: Mutex::new(None),
            }),
            related_task: None,
        }
    }

    /// The same request run as task `task_id`, outliving its answer: messages go to `peer`
    /// and name the task, and `cancellation` stops it.
    pub(crate) fn detached(
        &self,
        task: TaskLink,
        peer: Peer,
        cancellation: CancellationToken,
    ) -> Self {
        Self {
            peer,
            cancellation,
            related_task: Some(task),
            ..self.clone()
        }
    }

    /// A task waiting on the client is `input_required` until the answer comes, and the
    /// client hears of each change.
    fn task_awaits_input(&self, waiting: bool) {
        if let Some(task) = &self.related_task
            && let Some(snapshot) = task.store.awaiting_input(&task.id, waiting)
        {
            crate::tasks::notify_status(&self.peer, &snapshot);
        }
    }

    /// `params` with the related-task `_meta` when this work runs as a task.
    fn related(&self, mut params: Value) -> Value {
        let (Some(task), Value::Object(fields)) = (&self.related_task, &mut params) else {
            return params;
        };
        let meta = fields.entry("_meta").or_insert_with(|| json!({}));
        if let Value::Object(meta) = meta {
            meta.insert(
                crate::tasks::RELATED_TASK.to_owned(),
                json!({ "taskId": &*task.id }),
            );
        }
        params
    }

    /// 2026-07-28: answers this request with an `InputRequiredResult` asking `requests`
    /// instead of the handler's result. Return the error it gives from the handler (what a
    /// handler of the generated trait does with [`ToolError::InputRequired`]).
    pub fn require_input(&self, requests: InputRequests) -> ErrorObject {
        if let Ok(mut pending) = self.shared.input_required.lock() {
            *pending = Some(requests);
        }
        ErrorObject::new(-32603, "input required from the client")
    }

    /// What [`Self::require_input`] recorded, once.
    pub(crate) fn take_input_required(&self) -> Option<InputRequests> {
        self.shared
            .input_required
            .lock()
            .ok()
            .and_then(|mut pending| pending.take())
    }

    /// The revision the client speaks.
    pub fn revision(&self) -> Revision {
        self.revision
    }

    /// Fires when the client cancels this request.
    pub fn cancellation(&self) -> &CancellationToken {
        &self.cancellation
    }

    /// Whether the client declared `capability` (a top-level key of its capabilities).
    pub fn client_supports(&self, capability: &str) -> bool {
        self.shared.arrival.client_capabilities.contains(capability)
    }

    /// Reports progress when the request carried a progress token; otherwise does nothing.
    pub fn progress(
        &self,
        progress: f64,
        total: Option<f64>,
        message: Option<&str>,
    ) -> Result<(), PeerError> {
        let Some(token) = &self.shared.arrival.progress_token else {
            return Ok(());
        };
        let mut params = json!({ "progressToken": token, "progress": progress });
        if let (Some(total), Value::Object(fields)) = (total, &mut params) {
            fields.insert("total".to_owned(), json!(total));
        }
        if let (Some(message), Value::Object(fields)) = (message, &mut params) {
            fields.insert("message".to_owned(), json!(message));
        }
        self.notify("notifications/progress", params)
    }

    /// Sends a log message when `level` passes the client's level.
    pub fn log(&self, level: Level, logger: Option<&str>, data: Value) -> Result<(), PeerError> {
        if !level.passes(self.shared.arrival.log_floor) {
            return Ok(());
        }
        let mut params = json!({ "level": level.as_str(), "data": data });
        if let (Some(logger), Value::Object(fields)) = (logger, &mut params) {
            fields.insert("logger".to_owned(), json!(logger));
        }
        self.notify("notifications/message", params)
    }

    /// SSE polling: ends the connection this request's answer streams on, telling the client
    /// to come back after `retry`; the handler goes on, and what it sends next (its result
    /// included) reaches the client when it resumes with `Last-Event-ID`. Fails with
    /// [`PeerError::NoStream`] where there is no resumable stream (stdio, a JSON answer, the
    /// stateless revision); the handler can simply carry on then.
    pub fn close_stream(&self, retry: Duration) -> Result<(), PeerError> {
        self.peer.close_stream(retry)
    }

    fn notify(&self, method: &str, params: Value) -> Result<(), PeerError> {
        let params = self.related(wire::notification_for(self.revision, method, params));
        self.peer.notify(method, &params)
    }

    /// Asks the client's model for a completion (`sampling/createMessage`).
    pub async fn sample<P: Serialize + ?Sized>(
        &self,
        params: &P,
    ) -> Result<types::CreateMessageResult, ToolError> {
        self.ask("sampling/createMessage", "sampling", params).await
    }

    /// Asks the user for input (`elicitation/create`).
    pub async fn elicit<P: Serialize + ?Sized>(
        &self,
        params: &P,
    ) -> Result<types::ElicitResult, ToolError> {
        if !self.revision.has_elicitation() {
            return Err(ToolError::failed(format!(
                "elicitation does not exist in MCP {}",
                self.revision
            )));
        }
        self.ask("elicitation/create", "elicitation", params).await
    }

    /// Asks the client for its roots (`roots/list`).
    pub async fn list_roots(&self) -> Result<types::ListRootsResult, ToolError> {
        self.ask("roots/list", "roots", &json!({})).await
    }

    async fn ask<P: Serialize + ?Sized, T: DeserializeOwned>(
        &self,
        method: &str,
        capability: &str,
        params: &P,
    ) -> Result<T, ToolError> {
        let params = serde_json::to_value(params).map_err(|error| {
            ToolError::failed(format!("unserializable {method} params: {error}"))
        })?;
        if !self.client_supports(capability) {
            return Err(self.missing_capability(capability));
        }
        if self.revision.is_stateless() {
            return self.input_round(method, params);
        }
        let params = self.related(wire::request_for(self.revision, method, params));
        self.task_awaits_input(true);
        let answered = self.peer.request(method, &params).await;
        self.task_awaits_input(false);
        let raw =
            answered.map_err(|error| ToolError::failed(format!("{method} failed: {error}")))?;
        serde_json::from_str(raw.get()).map_err(|error| {
            ToolError::failed(format!(
                "the client's {method} answer does not fit: {error}"
            ))
        })
    }

    /// The stateless form of a call back: the answer if the client already sent it, else the
    /// request it must answer. Keys follow the order the handler asks in, which a retry repeats.
    fn input_round<T: DeserializeOwned>(
        &self,
        method: &str,
        params: Value,
    ) -> Result<T, ToolError> {
        let key = format!(
            "input-{}",
            self.shared.asked.fetch_add(1, Ordering::Relaxed)
        );
        match self.shared.arrival.input_responses.get(&key) {
            Some(answer) => serde_json::from_value(answer.clone()).map_err(|error| {
                ToolError::Protocol(ErrorObject::invalid_params(format!(
                    "inputResponses.{key} does not answer {method}: {error}"
                )))
            }),
            None => {
                let params = wire::request_for(self.revision, method, params);
                let mut requests = Map::new();
                requests.insert(key, json!({ "method": method, "params": params }));
                Err(ToolError::InputRequired(InputRequests(requests)))
            }
        }
    }

    fn missing_capability(&self, capability: &str) -> ToolError {
        if self.revision.is_stateless() {
            let mut required = Map::new();
            required.insert(capability.to_owned(), json!({}));
            return ToolError::Protocol(
                ErrorObject::new(
                    codes::MISSING_CLIENT_CAPABILITY,
                    format!("this request needs the client capability `{capability}`"),
                )
                .with_data(json!({ "requiredCapabilities": required })),
            );
        }
        ToolError::failed(format!("the client does not support {capability}"))
    }
}
