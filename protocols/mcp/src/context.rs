//! What a tool, resource or prompt handler gets beside its arguments: the negotiated revision,
//! progress and log notifications tied to this request, cancellation, and calls back to the
//! client (sampling, elicitation, roots). On the session revisions a call back is a real
//! server→client request; on the stateless 2026-07-28 revision it becomes an
//! `InputRequiredResult` the client answers by retrying with `inputResponses` (a handler may
//! also name its input requests and carry a sealed `requestState` between rounds itself, see
//! [`InputRequests`]); in a task of the 2026-07-28 tasks extension it parks the task in
//! `input_required` until `tasks/update` brings the answer. The same handler code serves all.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http::HeaderMap;
use protocols_runtime::hardening::Principal;
use protocols_runtime::quote::quote;
use protocols_runtime::{ErrorObject, Peer, PeerError, RequestMeta};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use crate::errors;
use crate::generated::v2025_11_25::types;
use crate::generated::v2026_07_28::methods;
use crate::logging::Level;
use crate::revision::Revision;
use crate::session::ClientCapabilities;
use crate::tasks::{TaskLink, TaskWire};
use crate::wire;

/// MCP's own JSON-RPC error codes (kept here for the path they have always had).
pub use crate::errors::codes;

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
    /// A tool failure with this message: answered as a result with `isError`, not a protocol error.
    pub fn failed(message: impl Into<String>) -> Self {
        Self::Failed(message.into())
    }
}

/// The client capability a server→client request needs.
pub(crate) fn capability_of(method: &str) -> Option<&'static str> {
    match method {
        methods::ELICITATION_CREATE => Some("elicitation"),
        methods::SAMPLING_CREATE_MESSAGE => Some("sampling"),
        methods::ROOTS_LIST => Some("roots"),
        _ => None,
    }
}

/// Requests a stateless call needs the client to answer before it can finish, each under a key
/// of the handler's choosing (the client's retry answers them under the same keys, which
/// [`RequestContext::input_response`] reads), and the state the next round starts from. The
/// server seals that state (see [`crate::request_state`]), so a handler only ever reads back a
/// state it wrote for this very call.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct InputRequests {
    requests: Map<String, Value>,
    state: Option<Value>,
}

impl InputRequests {
    /// No input requests yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Asks `method` with `params` (2025-11-25 shapes) under `key`.
    #[must_use]
    pub fn request(mut self, key: impl Into<String>, method: &str, params: Value) -> Self {
        self.requests
            .insert(key.into(), json!({ "method": method, "params": params }));
        self
    }

    /// Asks the user (`elicitation/create` with these params) under `key`.
    #[must_use]
    pub fn elicit(self, key: impl Into<String>, params: Value) -> Self {
        self.request(key, methods::ELICITATION_CREATE, params)
    }

    /// Asks the client's model (`sampling/createMessage` with these params) under `key`.
    #[must_use]
    pub fn sample(self, key: impl Into<String>, params: Value) -> Self {
        self.request(key, methods::SAMPLING_CREATE_MESSAGE, params)
    }

    /// Asks the client for its roots under `key`.
    #[must_use]
    pub fn list_roots(self, key: impl Into<String>) -> Self {
        self.request(key, methods::ROOTS_LIST, json!({}))
    }

    /// The state the next round starts from ([`RequestContext::request_state`] reads it there).
    #[must_use]
    pub fn with_state(mut self, state: Value) -> Self {
        self.state = Some(state);
        self
    }

    /// Whether no input request has been added.
    pub fn is_empty(&self) -> bool {
        self.requests.is_empty()
    }

    /// The requests by key, as `{method, params}`.
    pub fn requests(&self) -> &Map<String, Value> {
        &self.requests
    }

    pub(crate) fn into_parts(self) -> (Map<String, Value>, Option<Value>) {
        (self.requests, self.state)
    }
}

/// What a handler's request arrived with.
#[derive(Debug, Clone, Default)]
pub(crate) struct Arrival {
    pub(crate) progress_token: Option<Value>,
    pub(crate) log_floor: Option<Level>,
    pub(crate) client_capabilities: ClientCapabilities,
    /// 2026-07-28: answers to the input requests of an earlier round.
    pub(crate) input_responses: Map<String, Value>,
    /// 2026-07-28: the state the earlier round sealed, opened and checked.
    pub(crate) request_state: Option<Value>,
    /// The transport's request: its headers and who the hardening authenticated.
    pub(crate) request: Arc<RequestMeta>,
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
    /// The task this work runs as: named in the `_meta` of everything it sends (2025-11-25),
    /// or holding what it asks the client (the tasks extension).
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

    /// The same request run as a task, outliving its answer: messages go to `peer` and name
    /// the task, and `cancellation` stops it.
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

    /// The task of the tasks extension this work runs as.
    fn extension_task(&self) -> Option<&TaskLink> {
        self.related_task
            .as_ref()
            .filter(|task| task.wire == TaskWire::Extension)
    }

    /// An experimental task waiting on the client is `input_required` until the answer comes,
    /// and the client hears of each change.
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

    /// 2026-07-28: what the client answered, in this retry, to the input request the handler
    /// asked under `key` (see [`InputRequests`]); `None` when it sent no answer under that key.
    pub fn input_response(&self, key: &str) -> Option<&Value> {
        self.shared.arrival.input_responses.get(key)
    }

    /// [`Self::input_response`] read as the answer to an `elicitation/create`; an answer of
    /// another shape is the client's error (invalid params).
    pub fn elicitation_response(
        &self,
        key: &str,
    ) -> Result<Option<types::ElicitResult>, ToolError> {
        self.typed_response(key, methods::ELICITATION_CREATE)
    }

    /// [`Self::input_response`] read as the answer to a `sampling/createMessage`.
    pub fn sampling_response(
        &self,
        key: &str,
    ) -> Result<Option<types::CreateMessageResult>, ToolError> {
        self.typed_response(key, methods::SAMPLING_CREATE_MESSAGE)
    }

    /// [`Self::input_response`] read as the answer to a `roots/list`.
    pub fn roots_response(&self, key: &str) -> Result<Option<types::ListRootsResult>, ToolError> {
        self.typed_response(key, methods::ROOTS_LIST)
    }

    fn typed_response<T: DeserializeOwned>(
        &self,
        key: &str,
        method: &str,
    ) -> Result<Option<T>, ToolError> {
        self.input_response(key)
            .map(|answer| {
                serde_json::from_value(answer.clone()).map_err(|error| {
                    ToolError::Protocol(ErrorObject::invalid_params(format!(
                        "inputResponses.{} does not answer {method}: {}",
                        quote(key),
                        quote(error)
                    )))
                })
            })
            .transpose()
    }

    /// 2026-07-28: the state the previous round of this call left ([`InputRequests::with_state`]),
    /// checked to be the server's own for this call.
    pub fn request_state(&self) -> Option<&Value> {
        self.shared.arrival.request_state.as_ref()
    }

    /// Who the hardening authenticated for this request (its subject, scopes and, for a JWT,
    /// validated claims); `None` on a public endpoint and over stdio. A task keeps the
    /// principal of the call that started it.
    pub fn principal(&self) -> Option<&Principal> {
        self.shared.arrival.request.principal()
    }

    /// The headers of the HTTP request this call arrived on; empty over stdio.
    pub fn headers(&self) -> &HeaderMap {
        &self.shared.arrival.request.headers
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

    /// Whether the client declared extension `id` (under `extensions` in its capabilities).
    pub fn client_supports_extension(&self, id: &str) -> bool {
        self.shared.arrival.client_capabilities.has_extension(id)
    }

    /// Reports progress when the request carried a progress token; otherwise does nothing (as
    /// in a task of the tasks extension, which has no stream to report on).
    pub fn progress(
        &self,
        progress: f64,
        total: Option<f64>,
        message: Option<&str>,
    ) -> Result<(), PeerError> {
        let Some(token) = &self.shared.arrival.progress_token else {
            return Ok(());
        };
        if self.extension_task().is_some() {
            return Ok(());
        }
        let mut params = json!({ "progressToken": token, "progress": progress });
        if let (Some(total), Value::Object(fields)) = (total, &mut params) {
            fields.insert("total".to_owned(), json!(total));
        }
        if let (Some(message), Value::Object(fields)) = (message, &mut params) {
            fields.insert("message".to_owned(), json!(message));
        }
        self.notify(methods::NOTIFICATIONS_PROGRESS, params)
    }

    /// Sends a log message when `level` passes the client's level (2026-07-28: only when the
    /// request asked for a level; never from a task of the tasks extension).
    pub fn log(&self, level: Level, logger: Option<&str>, data: Value) -> Result<(), PeerError> {
        if !level.passes(self.shared.arrival.log_floor) || self.extension_task().is_some() {
            return Ok(());
        }
        if self.revision.is_stateless() && self.shared.arrival.log_floor.is_none() {
            return Ok(());
        }
        let mut params = json!({ "level": level.as_str(), "data": data });
        if let (Some(logger), Value::Object(fields)) = (logger, &mut params) {
            fields.insert("logger".to_owned(), json!(logger));
        }
        self.notify(methods::NOTIFICATIONS_MESSAGE, params)
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
        self.ask(methods::SAMPLING_CREATE_MESSAGE, params).await
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
        self.ask(methods::ELICITATION_CREATE, params).await
    }

    /// Asks the client for its roots (`roots/list`).
    pub async fn list_roots(&self) -> Result<types::ListRootsResult, ToolError> {
        self.ask(methods::ROOTS_LIST, &json!({})).await
    }

    async fn ask<P: Serialize + ?Sized, T: DeserializeOwned>(
        &self,
        method: &str,
        params: &P,
    ) -> Result<T, ToolError> {
        let params = serde_json::to_value(params).map_err(|error| {
            ToolError::failed(format!("unserializable {method} params: {error}"))
        })?;
        if let Some(capability) = capability_of(method)
            && !self.client_supports(capability)
        {
            return Err(self.missing_capability(capability));
        }
        if let Some(task) = self.extension_task() {
            return self.ask_in_task(task, method, params).await;
        }
        if self.revision.is_stateless() {
            return self.input_round(method, params);
        }
        let params = self.related(wire::request_for(self.revision, method, params));
        self.task_awaits_input(true);
        let answered = self.peer.request(method, &params).await;
        self.task_awaits_input(false);
        let raw = answered
            .map_err(|error| ToolError::failed(format!("{method} failed: {}", quote(error))))?;
        decode_answer(method, raw.get())
    }

    /// A task of the tasks extension asks through its `inputRequests`: it is `input_required`
    /// until `tasks/update` answers, or until it is cancelled.
    async fn ask_in_task<T: DeserializeOwned>(
        &self,
        task: &TaskLink,
        method: &str,
        params: Value,
    ) -> Result<T, ToolError> {
        let request =
            json!({ "method": method, "params": wire::request_for(self.revision, method, params) });
        let Some((_, answered)) = task.store.ask(&task.id, request) else {
            return Err(ToolError::failed("the task is no longer running"));
        };
        let answer = tokio::select! {
            answer = answered => answer.map_err(|_| ToolError::failed("the task is no longer running"))?,
            () = self.cancellation.cancelled() => return Err(ToolError::failed("the task was cancelled")),
        };
        serde_json::from_value(answer).map_err(|error| {
            ToolError::Protocol(ErrorObject::invalid_params(format!(
                "the answer does not fit {method}: {}",
                quote(error)
            )))
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
                    "inputResponses.{key} does not answer {method}: {}",
                    quote(error)
                )))
            }),
            None => Err(ToolError::InputRequired(
                InputRequests::new().request(key, method, params),
            )),
        }
    }

    /// The error for a call back the client cannot take: on the stateless revision the
    /// protocol's `-32021`, elsewhere a tool failure the model can read.
    pub(crate) fn missing_capability(&self, capability: &str) -> ToolError {
        if self.revision.is_stateless() {
            let mut required = Map::new();
            required.insert(capability.to_owned(), json!({}));
            return ToolError::Protocol(errors::missing_capability(
                &format!("`{capability}`"),
                Value::Object(required),
            ));
        }
        ToolError::failed(format!("the client does not support {capability}"))
    }
}

fn decode_answer<T: DeserializeOwned>(method: &str, text: &str) -> Result<T, ToolError> {
    serde_json::from_str(text).map_err(|error| {
        ToolError::failed(format!(
            "the client's {method} answer does not fit: {}",
            quote(error)
        ))
    })
}
