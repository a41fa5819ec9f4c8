//! The MCP server: [`McpServer`] serves any implementation of the generated 2025-11-25
//! `Server` trait as the runtime's `RequestHandler`, for every revision at one endpoint. It
//! negotiates on `initialize` (session revisions) or reads each request's `_meta`
//! (2026-07-28), checks the method against the generated method table of the revision in use,
//! routes through the generated dispatcher (over `crate::serving`'s decorator, which keeps the
//! session's log level and subscriptions from the typed params), and sends back what the
//! peer's revision defines.
//! What the trait cannot say is owned here: the lifecycle (`initialize` is the handler's to
//! describe, the session is ours), `server/discover`, `subscriptions/listen`, the 2026-07-28
//! input-required rounds (their `requestState` sealed) and `Mcp-Param-*` checks, and tasks on
//! both wires (a `tools/call` that becomes a task runs the handler's `tools_call` in the
//! background). Every error leaves in the peer's revision's codes, with its status
//! (`crate::errors`). On an endpoint without sessions the session revisions are served as
//! `crate::sessionless` says.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::task::Poll;
use std::time::{Duration, SystemTime};

use http::HeaderMap;
use protocols_runtime::handler::Context;
use protocols_runtime::jsonrpc::to_raw;
use protocols_runtime::method::Direction;
use protocols_runtime::{
    BatchPolicy, ErrorObject, Message, Notification, Peer, Profile, Rejection, Reply, Request,
    RequestHandler, Served, Session, SessionMode, Unsessioned,
};
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use crate::builder::{McpServerBuilder, Registry};
use crate::context::{Arrival, InputRequests, RequestContext, capability_of};
use crate::errors;
use crate::generated::v2025_11_25::{self as handler_revision, Server, types};
use crate::generated::{v2025_11_25, v2026_07_28};
use crate::logging::Level;
use crate::param_headers;
use crate::request_state::{Binding, StateSeal};
use crate::revision::Revision;
use crate::serving::Serving;
use crate::session::{ClientCapabilities, ClientDescription, LiveSessions, McpSession};
use crate::sessionless;
use crate::stateless::{self, RequestHead, params_of};
use crate::tasks::extension_methods as extension;
use crate::tasks::{RELATED_TASK, TASKS_EXTENSION, TaskLink, TaskStore, TaskWire, notify_status};
use crate::tool_index::{TOOL_PAGES_INDEXED, ToolFacts, ToolIndex};
use crate::tools::TaskSupport;
use crate::wire;
use protocols_runtime::quote::quote;
use protocols_runtime::relay::Relay;

// Its home is `conventions`, shared with the client; named here too, where it always was.
pub use crate::conventions::CANCELLATION;

/// The `_meta` key naming the `subscriptions/listen` stream a message belongs to.
const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// How long a `subscriptions/listen` stream stays open before the server ends it and the
/// client listens again.
pub const DEFAULT_LISTEN_WINDOW: Duration = Duration::from_secs(300);

/// The `_meta` key a 2026-07-28 result names the server by.
const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";

/// The methods the tasks extension adds to 2026-07-28.
const EXTENSION_TASK_METHODS: [&str; 3] = [
    extension::TASKS_GET,
    extension::TASKS_UPDATE,
    extension::TASKS_CANCEL,
];

/// The requests a 2026-07-28 server may answer with an `InputRequiredResult` (SEP-2322).
fn takes_input_rounds(method: &str) -> bool {
    matches!(
        method,
        v2026_07_28::methods::TOOLS_CALL
            | v2026_07_28::methods::PROMPTS_GET
            | v2026_07_28::methods::RESOURCES_READ
    )
}

/// How a handler is served beyond what it answers itself.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    listen_window: Duration,
    tasks: Option<TaskStore>,
    request_state: StateSeal,
}

impl Default for ServeOptions {
    fn default() -> Self {
        Self {
            listen_window: DEFAULT_LISTEN_WINDOW,
            tasks: None,
            request_state: StateSeal::random(),
        }
    }
}

impl ServeOptions {
    /// How long a `subscriptions/listen` stream stays open before the client listens again (default 5 min).
    #[must_use]
    pub fn listen_window(mut self, window: Duration) -> Self {
        self.listen_window = window;
        self
    }

    /// Serves tasks from `store`, on both wires: 2025-11-25's (the `tasks` capability is
    /// declared, task-augmented `tools/call` is accepted for tools whose listing allows it,
    /// `tasks/*` are answered from the store) and the 2026-07-28 tasks extension (declared
    /// under `extensions`; a call of a tool that allows tasks, from a client that declared the
    /// extension, becomes a task when it does not finish at once). `None` leaves `tasks/*` to
    /// the handler on 2025-11-25.
    #[must_use]
    pub fn tasks(mut self, store: Option<TaskStore>) -> Self {
        self.tasks = store;
        self
    }

    /// How 2026-07-28 request states are sealed (the key, and how long a state lives).
    #[must_use]
    pub fn request_state(mut self, seal: StateSeal) -> Self {
        self.request_state = seal;
        self
    }
}

/// A stateless client's open `subscriptions/listen` stream.
struct Listener {
    peer: Peer,
    filter: Value,
    /// The `_meta` naming the stream, stamped on everything sent on it.
    meta: Value,
    alive: Weak<()>,
}

/// The extension tasks one listen stream follows.
struct TaskWatch<'a> {
    ids: Vec<String>,
    owner: Option<String>,
    meta: &'a Value,
}

impl TaskWatch<'_> {
    /// Sends `notifications/tasks` (the task as `tasks/get` would show it) each time one of
    /// the followed tasks changes; never returns (the stream's window ends it). A listener that
    /// falls behind misses changes rather than holding them, and can poll.
    async fn forward(&self, store: TaskStore, peer: &Peer) {
        let mut changes = store.changes();
        loop {
            let id = match changes.recv().await {
                Ok(id) => id,
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                Err(tokio::sync::broadcast::error::RecvError::Closed) => {
                    return std::future::pending().await;
                }
            };
            if !self.ids.iter().any(|followed| **followed == *id) {
                continue;
            }
            let Some((owner, mut task)) = store.detailed_of(&id) else {
                continue;
            };
            if owner != self.owner {
                continue;
            }
            task.insert("_meta".to_owned(), self.meta.clone());
            if let Err(error) = peer.notify(extension::NOTIFICATIONS_TASKS, &Value::Object(task)) {
                tracing::debug!(%error, "a task change was not delivered to its listener");
            }
        }
    }
}

struct Inner<H> {
    handler: Arc<H>,
    options: ServeOptions,
    profile: Profile,
    /// Sessions that completed `initialize`, for notifications not tied to a request.
    live: Arc<LiveSessions>,
    listeners: Mutex<Vec<Listener>>,
    /// What the server knows of each tool from the handler's listing.
    tools: ToolIndex,
    /// With [`McpServer::relay_broadcasts`], how broadcasts reach the other replicas.
    relay: OnceLock<Arc<dyn Relay>>,
}

/// The MCP `RequestHandler` serving handler `H` (by default what a [`McpServerBuilder`]
/// registered). Cheap to clone: clones share the handler, sessions and listeners, so one
/// server can be mounted on several transports at once.
pub struct McpServer<H = Registry> {
    inner: Arc<Inner<H>>,
}

impl<H> Clone for McpServer<H> {
    fn clone(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<H: std::fmt::Debug> std::fmt::Debug for McpServer<H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServer")
            .field("handler", &self.inner.handler)
            .field("options", &self.inner.options)
            .finish_non_exhaustive()
    }
}

/// A handle on a server that does not keep it alive: what something the server itself owns (a
/// tool, say) holds to reach it, e.g. to announce a list change, without a reference cycle.
pub struct WeakMcpServer<H = Registry>(Weak<Inner<H>>);

impl<H> Clone for WeakMcpServer<H> {
    fn clone(&self) -> Self {
        Self(Weak::clone(&self.0))
    }
}

impl<H> std::fmt::Debug for WeakMcpServer<H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WeakMcpServer")
    }
}

impl<H> WeakMcpServer<H> {
    /// The server, while anything else still holds it.
    pub fn upgrade(&self) -> Option<McpServer<H>> {
        self.0.upgrade().map(|inner| McpServer { inner })
    }
}

impl<H> McpServer<H> {
    /// A handle that reaches this server without keeping it alive.
    pub fn downgrade(&self) -> WeakMcpServer<H> {
        WeakMcpServer(Arc::downgrade(&self.inner))
    }
}

/// Whether `revision`'s method table has `method` as a client→server request.
fn in_method_table(revision: Revision, method: &str) -> bool {
    revision.methods().iter().any(|spec| {
        spec.name == method
            && spec.direction.from_client()
            && spec.direction != Direction::ServerToClient
    })
}

fn raw(value: &Value) -> Reply {
    to_raw(value).map_err(|_| ErrorObject::internal_error())
}

fn to_json<T: serde::Serialize>(value: &T) -> Result<Value, ErrorObject> {
    serde_json::to_value(value).map_err(|_| ErrorObject::internal_error())
}

fn decode<T: DeserializeOwned>(method: &str, params: &Value) -> Result<T, ErrorObject> {
    serde_json::from_value(params.clone()).map_err(|error| errors::invalid_params(method, error))
}

fn insert(value: &mut Value, key: &str, field: Value) {
    if let Value::Object(fields) = value {
        fields.insert(key.to_owned(), field);
    }
}

/// A JSON text as a value (`Null` when absent).
fn json_of(raw: Option<&RawValue>) -> Value {
    raw.and_then(|raw| serde_json::from_str(raw.get()).ok())
        .unwrap_or(Value::Null)
}

/// One request on its way through the server. What every request needs from its params is
/// read once into `head`; the rare paths that want the whole params parse them on demand.
struct Call<'a> {
    revision: Revision,
    method: &'a str,
    params: Option<&'a RawValue>,
    head: RequestHead<'a>,
    cx: &'a Context<McpSession>,
    /// 2026-07-28: the request state the previous round sealed, opened.
    state: Option<Value>,
}

impl<'a> Call<'a> {
    fn new(revision: Revision, request: &'a Request, cx: &'a Context<McpSession>) -> Self {
        Self {
            revision,
            method: &request.method,
            params: request.params.as_deref(),
            head: RequestHead::of(request),
            cx,
            state: None,
        }
    }

    /// The whole params as JSON (`Null` when absent).
    fn params(&self) -> Value {
        json_of(self.params)
    }

    fn context(&self) -> RequestContext {
        let meta = &self.head.meta;
        let session = self.cx.state();
        let client_capabilities = match session.and_then(McpSession::client) {
            Some(client) => client.capabilities().clone(),
            None => ClientCapabilities::from_json(meta.client_capabilities),
        };
        let meta_level = meta
            .log_level
            .as_deref()
            .and_then(|level| level.parse::<Level>().ok());
        let input_responses = match json_of(self.head.input_responses) {
            Value::Object(responses) => responses,
            _ => Map::new(),
        };
        let arrival = Arrival {
            progress_token: meta.progress_token.map(|token| json_of(Some(token))),
            log_floor: session.and_then(McpSession::log_level).or(meta_level),
            client_capabilities,
            input_responses,
            request_state: self.state.clone(),
            request: Arc::clone(self.cx.request_meta()),
        };
        RequestContext::new(
            self.revision,
            self.cx.peer().clone(),
            self.cx.cancellation().clone(),
            arrival,
        )
    }

    /// Who may see the tasks this request creates: its session, else the caller the hardening
    /// authenticated, else anyone who holds the task's id (SEP-2663: an unguessable id is then
    /// the only scope there is).
    fn task_owner(&self) -> Option<&str> {
        match self.cx.session() {
            Some(session) => Some(session.id().as_str()),
            None => self.cx.principal().map(|principal| &*principal.subject),
        }
    }

    /// Whether the client declared the tasks extension for this request.
    fn declares_tasks_extension(&self) -> bool {
        ClientCapabilities::from_json(self.head.meta.client_capabilities)
            .has_extension(TASKS_EXTENSION)
    }

    /// Whether the request came over HTTP, where a stateless request carries its version
    /// header (the only place `Mcp-*` headers exist to be checked).
    fn over_http(&self) -> bool {
        self.cx.protocol_version().is_some()
    }

    /// What a stateless request says about its client, as `initialize` params would.
    fn client_as_initialize(&self) -> Value {
        let field = |raw: Option<&RawValue>, fallback: Value| {
            raw.map_or(fallback, |raw| json_of(Some(raw)))
        };
        let meta = &self.head.meta;
        json!({
            "protocolVersion": self.revision.as_str(),
            "capabilities": field(meta.client_capabilities, json!({})),
            "clientInfo": field(meta.client_info, json!({ "name": "unnamed", "version": "0" })),
        })
    }
}

impl McpServer {
    /// Collects tools, resources, prompts and completions into a served [`Registry`].
    pub fn builder(name: impl Into<String>, version: impl Into<String>) -> McpServerBuilder {
        McpServerBuilder::new(name, version)
    }
}

impl<H: Server<Context = RequestContext> + 'static> McpServer<H> {
    /// Serves `handler` at one endpoint for every revision, with default options.
    pub fn new(handler: H) -> Self {
        Self::with_options(handler, ServeOptions::default())
    }

    /// Serves `handler` at one endpoint for every revision, with these options.
    pub fn with_options(handler: H, options: ServeOptions) -> Self {
        let profile = Profile::new()
            .with_session_header(stateless::SESSION_HEADER)
            .with_version_header(stateless::VERSION_HEADER)
            .with_batches(BatchPolicy::Accept)
            .with_cancellation(CANCELLATION)
            .with_error_statuses(errors::error_statuses(Revision::NEWEST_SESSION))
            // Only a stateless request is served without a session.
            .with_sessionless_error_statuses(errors::error_statuses(Revision::V2026_07_28));
        Self {
            inner: Arc::new(Inner {
                handler: Arc::new(handler),
                options,
                profile,
                live: Arc::default(),
                listeners: Mutex::new(Vec::new()),
                tools: ToolIndex::default(),
                relay: OnceLock::new(),
            }),
        }
    }

    /// The handler being served.
    pub fn handler(&self) -> &H {
        &self.inner.handler
    }

    /// The task store, when tasks are served.
    pub fn tasks(&self) -> Option<&TaskStore> {
        self.inner.options.tasks.as_ref()
    }

    /// Whether `revision` has `method` as a client request here: its method table, and on
    /// 2026-07-28 the tasks extension's methods when tasks are served.
    fn serves(&self, revision: Revision, method: &str) -> bool {
        in_method_table(revision, method)
            || (revision.is_stateless()
                && self.inner.options.tasks.is_some()
                && EXTENSION_TASK_METHODS.contains(&method))
    }

    /// The revision a request is served under, or why it cannot be served. A request whose
    /// `_meta` names the stateless revision must carry its required fields; one naming a
    /// session revision is that session's; a stateless request without a `_meta` version
    /// (its header says it is one, or its method exists only there) is malformed.
    fn revision_of(
        &self,
        request: &Request,
        head: &RequestHead<'_>,
        cx: &Context<McpSession>,
    ) -> Result<Revision, ErrorObject> {
        if let Some(version) = head.version() {
            match version.parse::<Revision>() {
                Ok(revision) if revision.is_stateless() => {
                    return match head.missing_meta_field() {
                        Some(field) => Err(stateless::missing_meta(field)),
                        None => Ok(revision),
                    };
                }
                // A session revision's request: the key means nothing there.
                Ok(_) => {}
                Err(_) => return Err(stateless::unsupported_version(version)),
            }
        } else if stateless::names_stateless_header(cx.protocol_version())
            || (cx.state().and_then(McpSession::revision).is_none()
                && request.method == v2026_07_28::methods::SERVER_DISCOVER)
        {
            return Err(stateless::missing_meta(
                head.missing_meta_field().unwrap_or("_meta"),
            ));
        }
        let not_initialized = || ErrorObject::invalid_request("the session is not initialized");
        match (cx.state(), cx.session_mode()) {
            (Some(session), _) => session.revision().ok_or_else(not_initialized),
            (None, SessionMode::Sessionless) => sessionless::revision(cx.headers()),
            (None, SessionMode::PerClient) => Err(not_initialized()),
        }
    }

    async fn answer(&self, request: Request, cx: Context<McpSession>) -> Reply {
        let head = RequestHead::of(&request);
        if request.method == v2025_11_25::methods::INITIALIZE
            && !head.names_stateless_version()
            && !stateless::names_stateless_header(cx.protocol_version())
        {
            return self.initialize(&request, &cx).await;
        }
        let revision = self.revision_of(&request, &head, &cx)?;
        if !self.serves(revision, &request.method) {
            return Err(ErrorObject::method_not_found());
        }
        if cx.session_mode() == SessionMode::Sessionless
            && let Some(refusal) = sessionless::refusal(&request.method)
        {
            return Err(refusal);
        }
        let mut call = Call {
            revision,
            method: &request.method,
            params: request.params.as_deref(),
            head,
            cx: &cx,
            state: None,
        };
        if revision.is_stateless() && takes_input_rounds(&request.method) {
            call.state = self.open_round(&call)?;
        }
        self.route(&request, &call)
            .await
            .map_err(|error| errors::error_for(revision, error))
    }

    /// Checks what a retried 2026-07-28 round brings back: `inputResponses`, when present, is an
    /// object, and a `requestState` is one this server sealed for this call (its state, opened).
    fn open_round(&self, call: &Call<'_>) -> Result<Option<Value>, ErrorObject> {
        if call
            .head
            .input_responses
            .is_some_and(|responses| !responses.get().starts_with('{'))
        {
            return Err(ErrorObject::invalid_params(
                "inputResponses must be an object of answers by key",
            ));
        }
        let Some(sealed) = call.head.request_state.as_deref() else {
            return Ok(None);
        };
        let binding = Binding {
            method: call.method,
            target: call.head.target(call.method).unwrap_or_default(),
        };
        self.inner
            .options
            .request_state
            .open(binding, sealed, SystemTime::now())
            .map(Some)
            .map_err(ErrorObject::from)
    }

    async fn route(&self, request: &Request, call: &Call<'_>) -> Reply {
        let tasks = self.inner.options.tasks.as_ref();
        let stateless = call.revision.is_stateless();
        match (request.method.as_str(), tasks) {
            (v2026_07_28::methods::SERVER_DISCOVER, _) => self.discover(call).await,
            (v2026_07_28::methods::SUBSCRIPTIONS_LISTEN, _) => self.listen(call).await,
            (v2026_07_28::methods::TOOLS_CALL, _) => self.call_tool(request, call).await,
            (
                extension::TASKS_GET | extension::TASKS_UPDATE | extension::TASKS_CANCEL,
                Some(store),
            ) if stateless => self.extension_task_request(call, store),
            (
                v2025_11_25::methods::TASKS_GET
                | v2025_11_25::methods::TASKS_LIST
                | v2025_11_25::methods::TASKS_CANCEL
                | v2025_11_25::methods::TASKS_RESULT,
                Some(store),
            ) if call.revision.has_experimental_tasks() => {
                self.task_request(&request.method, call, store).await
            }
            _ => self.dispatch(request, call).await,
        }
    }

    /// Runs a request through the generated dispatcher and re-expresses its answer.
    async fn dispatch(&self, request: &Request, call: &Call<'_>) -> Reply {
        let rcx = call.context();
        let params = call
            .params
            .map(|params| call.head.params_for_handler(params));
        let reply = handler_revision::dispatch_server_request(
            &Serving::new(&*self.inner.handler, call.cx.state()),
            &request.method,
            params.as_deref(),
            &rcx,
        )
        .await;
        // Only 2026-07-28 has input rounds; elsewhere a handler asking for one answers the
        // error it returned.
        if call.revision.is_stateless()
            && takes_input_rounds(&request.method)
            && let Some(requests) = rcx.take_input_required()
        {
            return self.input_required(call, &rcx, requests);
        }
        let result = reply?;
        self.to_wire(call.revision, &request.method, result)
    }

    /// The `InputRequiredResult` asking `requests` (2026-07-28): each request in the client's
    /// revision, only those the client declared the capability for (one it did not is the
    /// protocol's `-32021`), and the handler's state sealed for this very call.
    fn input_required(
        &self,
        call: &Call<'_>,
        rcx: &RequestContext,
        requests: InputRequests,
    ) -> Reply {
        let (requests, state) = requests.into_parts();
        let mut asked = Map::new();
        for (key, request) in requests {
            let method = request
                .get("method")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            if let Some(capability) = capability_of(&method)
                && !rcx.client_supports(capability)
            {
                return Err(match rcx.missing_capability(capability) {
                    crate::ToolError::Protocol(error) => error,
                    other => ErrorObject::internal_error().with_data(json!(other.to_string())),
                });
            }
            let params = request.get("params").cloned().unwrap_or_else(|| json!({}));
            let params = wire::request_for(call.revision, &method, params);
            asked.insert(key, json!({ "method": method, "params": params }));
        }
        let mut result = json!({ "resultType": "input_required", "inputRequests": asked });
        if let Some(state) = state {
            let binding = Binding {
                method: call.method,
                target: call.head.target(call.method).unwrap_or_default(),
            };
            let sealed = self
                .inner
                .options
                .request_state
                .seal(binding, &state, SystemTime::now());
            insert(&mut result, "requestState", json!(sealed));
        }
        raw(&result)
    }

    /// A 2025-11-25 result as the peer's revision defines it.
    fn to_wire(&self, revision: Revision, method: &str, result: Box<RawValue>) -> Reply {
        if revision == Revision::NEWEST_SESSION {
            return Ok(result);
        }
        wire::encoded_result_for(revision, method, &result)
            .map_err(|_| ErrorObject::internal_error())
    }

    /// The handler's description of the server (its `initialize` answer) as JSON, with the
    /// capabilities only the serving layer provides added.
    async fn describe(
        &self,
        params: types::InitializeRequestParams,
        rcx: &RequestContext,
    ) -> Result<Value, ErrorObject> {
        let described = self.inner.handler.initialize(params, rcx).await?;
        let mut value = to_json(&described)?;
        if self.inner.options.tasks.is_some()
            && let Some(capabilities) = value.get_mut("capabilities")
        {
            insert(
                capabilities,
                "tasks",
                json!({ "list": {}, "cancel": {}, "requests": { "tools": { "call": {} } } }),
            );
        }
        Ok(value)
    }

    async fn initialize(&self, request: &Request, cx: &Context<McpSession>) -> Reply {
        let typed: types::InitializeRequestParams =
            decode(v2025_11_25::methods::INITIALIZE, &params_of(request))?;
        let revision = Revision::negotiate(&typed.protocol_version);
        let Some(session) = cx.session() else {
            return match cx.session_mode() {
                SessionMode::Sessionless => {
                    self.initialize_sessionless(revision, typed, request, cx)
                        .await
                }
                SessionMode::PerClient => {
                    Err(ErrorObject::invalid_request("initialize needs a session"))
                }
            };
        };
        let already = || ErrorObject::invalid_request("the session is already initialized");
        if session.state().revision().is_some() {
            return Err(already());
        }
        let client = ClientDescription::from_initialize(&typed);
        let call = Call::new(revision, request, cx);
        let mut result = self.describe(typed, &call.context()).await?;
        if !session.state().open(revision, client) {
            return Err(already());
        }
        self.inner.live.add(session);
        insert(&mut result, "protocolVersion", json!(revision.as_str()));
        raw(&wire::result_for(
            revision,
            v2025_11_25::methods::INITIALIZE,
            result,
        ))
    }

    /// `initialize` on an endpoint without sessions: described, negotiated and forgotten.
    async fn initialize_sessionless(
        &self,
        revision: Revision,
        typed: types::InitializeRequestParams,
        request: &Request,
        cx: &Context<McpSession>,
    ) -> Reply {
        let call = Call::new(revision, request, cx);
        let mut result = sessionless::described(self.describe(typed, &call.context()).await?);
        insert(&mut result, "protocolVersion", json!(revision.as_str()));
        raw(&wire::result_for(
            revision,
            v2025_11_25::methods::INITIALIZE,
            result,
        ))
    }

    /// The description a stateless request gets in place of `initialize`.
    async fn describe_for(&self, call: &Call<'_>) -> Result<Value, ErrorObject> {
        let params = decode(
            v2026_07_28::methods::SERVER_DISCOVER,
            &call.client_as_initialize(),
        )?;
        self.describe(params, &call.context()).await
    }

    /// `server/discover`: what `initialize` would say, as 2026-07-28 says it: the server names
    /// itself in `_meta`, and tasks are the extension's (under `extensions`), not 2025-11-25's
    /// `tasks` capability.
    async fn discover(&self, call: &Call<'_>) -> Reply {
        let described = self.describe_for(call).await?;
        let field = |key: &str| described.get(key).cloned();
        let mut capabilities = field("capabilities").unwrap_or_else(|| json!({}));
        if let Value::Object(declared) = &mut capabilities {
            declared.remove("tasks");
            if self.inner.options.tasks.is_some() {
                let extensions = declared.entry("extensions").or_insert_with(|| json!({}));
                insert(extensions, TASKS_EXTENSION, json!({}));
            }
        }
        let mut result = json!({
            "supportedVersions": Revision::supported(),
            "capabilities": capabilities,
            "cacheScope": "public",
            "ttlMs": 60_000,
        });
        if let Some(info) = field("serverInfo") {
            insert(&mut result, "_meta", json!({ SERVER_INFO: info }));
        }
        if let Some(instructions) = field("instructions") {
            insert(&mut result, "instructions", instructions);
        }
        raw(&wire::result_for(
            call.revision,
            v2026_07_28::methods::SERVER_DISCOVER,
            result,
        ))
    }

    /// 2026-07-28: acknowledges the filter, then keeps the stream open for notifications
    /// until the window closes or the client cancels: list changes and resource updates as
    /// they are announced, and `notifications/tasks` for the extension tasks it named.
    async fn listen(&self, call: &Call<'_>) -> Reply {
        let requested = call
            .params()
            .get("notifications")
            .cloned()
            .unwrap_or_else(|| json!({}));
        let honoured = self.honoured_filter(&requested, call).await?;
        let watched = self.watched_tasks(&requested, call)?;
        // Every message on the stream names it by the id of the request that opened it.
        let stream_meta = json!({ SUBSCRIPTION_ID: call.cx.request_id() });
        let mut acknowledged = wire::notification_for(
            call.revision,
            v2026_07_28::methods::NOTIFICATIONS_SUBSCRIPTIONS_ACKNOWLEDGED,
            json!({ "notifications": honoured, "_meta": stream_meta }),
        );
        if let (Some(notifications), Some((ids, _))) =
            (acknowledged.get_mut("notifications"), &watched)
        {
            insert(notifications, "taskIds", json!(ids));
        }
        if let Err(error) = call.cx.peer().notify(
            v2026_07_28::methods::NOTIFICATIONS_SUBSCRIPTIONS_ACKNOWLEDGED,
            &acknowledged,
        ) {
            return Err(ErrorObject::new(
                -32603,
                format!("cannot open the stream: {error}"),
            ));
        }
        let alive = Arc::new(());
        if let Ok(mut listeners) = self.inner.listeners.lock() {
            listeners.retain(|listener| listener.alive.strong_count() > 0);
            listeners.push(Listener {
                peer: call.cx.peer().clone(),
                filter: honoured,
                meta: stream_meta.clone(),
                alive: Arc::downgrade(&alive),
            });
        }
        let window = tokio::time::sleep(self.inner.options.listen_window);
        match watched {
            Some((ids, store)) => {
                let told = TaskWatch {
                    ids,
                    owner: call.task_owner().map(str::to_owned),
                    meta: &stream_meta,
                };
                tokio::select! {
                    () = call.cx.cancellation().cancelled() => {}
                    () = window => {}
                    () = told.forward(store, call.cx.peer()) => {}
                }
            }
            None => tokio::select! {
                () = call.cx.cancellation().cancelled() => {}
                () = window => {}
            },
        }
        drop(alive);
        raw(&wire::result_for(
            call.revision,
            v2026_07_28::methods::SUBSCRIPTIONS_LISTEN,
            json!({ "_meta": stream_meta }),
        ))
    }

    /// The extension tasks a listen filter names (`taskIds`) that the caller may see, and the
    /// store to follow them in; `None` when it names none. Naming any without declaring the
    /// extension is `-32021`.
    fn watched_tasks(
        &self,
        requested: &Value,
        call: &Call<'_>,
    ) -> Result<Option<(Vec<String>, TaskStore)>, ErrorObject> {
        let Some(asked) = requested.get("taskIds").and_then(Value::as_array) else {
            return Ok(None);
        };
        if !call.declares_tasks_extension() {
            return Err(errors::missing_capability(
                &format!("extension `{TASKS_EXTENSION}`"),
                json!({ "extensions": { TASKS_EXTENSION: {} } }),
            ));
        }
        let Some(store) = self.inner.options.tasks.as_ref() else {
            return Ok(Some((Vec::new(), TaskStore::default())));
        };
        let owner = call.task_owner();
        let ids = asked
            .iter()
            .filter_map(Value::as_str)
            .filter(|id| store.get_detailed(owner, id).is_ok())
            .map(str::to_owned)
            .collect();
        Ok(Some((ids, store.clone())))
    }

    /// The part of a subscription filter this server can honour: list changes of what its
    /// capabilities declare, updates of the resources its handler lets one subscribe to.
    async fn honoured_filter(
        &self,
        requested: &Value,
        call: &Call<'_>,
    ) -> Result<Value, ErrorObject> {
        let described = self.describe_for(call).await?;
        let declares = |capability: &str| {
            described
                .get("capabilities")
                .and_then(|capabilities| capabilities.get(capability))
                .is_some()
        };
        let wants = |key: &str| requested.get(key).and_then(Value::as_bool) == Some(true);
        let mut honoured = Map::new();
        for (key, capability) in [
            ("toolsListChanged", "tools"),
            ("promptsListChanged", "prompts"),
            ("resourcesListChanged", "resources"),
        ] {
            if wants(key) && declares(capability) {
                honoured.insert(key.to_owned(), json!(true));
            }
        }
        if let Some(uris) = requested
            .get("resourceSubscriptions")
            .and_then(Value::as_array)
        {
            let rcx = call.context();
            let mut known = Vec::new();
            for uri in uris.iter().filter_map(Value::as_str) {
                let params = types::SubscribeRequestParams {
                    meta: None,
                    uri: uri.to_owned(),
                };
                if self
                    .inner
                    .handler
                    .resources_subscribe(params, &rcx)
                    .await
                    .is_ok()
                {
                    known.push(json!(uri));
                }
            }
            honoured.insert("resourceSubscriptions".to_owned(), Value::Array(known));
        }
        Ok(Value::Object(honoured))
    }

    /// `tools/call`: a 2026-07-28 call over HTTP first has its `Mcp-Param-*` headers checked
    /// against its arguments; then, where tasks are served, the tool's task support decides
    /// whether the call runs now or as a task (on the wire the revision has for tasks).
    async fn call_tool(&self, request: &Request, call: &Call<'_>) -> Reply {
        let checks_headers = call.revision.is_stateless() && call.over_http();
        let tasks = self.inner.options.tasks.as_ref();
        if !checks_headers && tasks.is_none() {
            return self.dispatch(request, call).await;
        }
        // Unknown tools (and a missing name) are the handler's to refuse.
        let Some(facts) = self.tool_facts(call).await else {
            return self.dispatch(request, call).await;
        };
        if checks_headers && !facts.headers.is_empty() {
            let params = call.params();
            let arguments = params.get("arguments").and_then(Value::as_object);
            param_headers::check(&facts.headers, arguments, call.cx.headers())?;
        }
        match (tasks, facts.task_support) {
            (Some(store), support) if call.revision.has_experimental_tasks() => {
                self.call_tool_experimental(request, call, store, support)
                    .await
            }
            (Some(store), support)
                if call.revision.has_tasks_extension() && support != TaskSupport::Forbidden =>
            {
                self.call_tool_extension(request, call, store, support)
                    .await
            }
            _ => self.dispatch(request, call).await,
        }
    }

    /// What the handler's listing says of the tool a call names (`None`: a tool it does not
    /// list). The listing is read once and kept until the tool list changes.
    async fn tool_facts(&self, call: &Call<'_>) -> Option<ToolFacts> {
        let name = call.head.name.as_deref()?;
        let index = match self.inner.tools.current() {
            Some(index) => index,
            None => self.index_tools(call).await?,
        };
        index.get(name).cloned()
    }

    /// Reads every page of the handler's `tools/list` into the tool index.
    async fn index_tools(&self, call: &Call<'_>) -> Option<crate::tool_index::Index> {
        let rcx = call.context();
        let mut facts = HashMap::new();
        let mut cursor = None;
        for _ in 0..TOOL_PAGES_INDEXED {
            let params = cursor.take().map(|cursor| types::PaginatedRequestParams {
                cursor: Some(cursor),
                meta: None,
            });
            let listed = self.inner.handler.tools_list(params, &rcx).await.ok()?;
            for tool in &listed.tools {
                facts.insert(tool.name.clone(), ToolFacts::of(&to_json(tool).ok()?));
            }
            match listed.next_cursor {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
        Some(self.inner.tools.fill(facts))
    }

    /// A 2025-11-25 `tools/call` where tasks are served: the client asks for a task with
    /// `task`, and the tool's declared support decides whether it may (or must).
    async fn call_tool_experimental(
        &self,
        request: &Request,
        call: &Call<'_>,
        store: &TaskStore,
        support: TaskSupport,
    ) -> Reply {
        let params: types::CallToolRequestParams =
            decode(v2026_07_28::methods::TOOLS_CALL, &call.params())?;
        let refuse = |why: &str| {
            Err(ErrorObject::new(
                -32601,
                format!("tool {} {why}", quote(&params.name)),
            ))
        };
        match (&params.task, support) {
            (Some(_), TaskSupport::Forbidden) => refuse("does not run as a task"),
            (None, TaskSupport::Required) => refuse("runs only as a task"),
            (Some(task), _) => {
                let ttl = task.ttl;
                self.start_task(params, ttl, call, store).await
            }
            (None, _) => self.dispatch(request, call).await,
        }
    }

    /// Opens a task, answers `CreateTaskResult` at once and runs the call in the background;
    /// the outcome goes to the store and the client hears of it on the session's stream
    /// (2025-11-25).
    async fn start_task(
        &self,
        mut params: types::CallToolRequestParams,
        ttl: Option<i64>,
        call: &Call<'_>,
        store: &TaskStore,
    ) -> Reply {
        let created = store
            .open(call.task_owner(), ttl, TaskWire::Experimental)
            .await?;
        let task_id = created.task.task_id.clone();
        let peer = call.cx.peer().session_wide();
        let link = TaskLink {
            id: Arc::from(task_id.as_str()),
            store: store.clone(),
            wire: TaskWire::Experimental,
        };
        let rcx = call
            .context()
            .detached(link, peer.clone(), created.cancellation.clone());
        let handler = Arc::clone(&self.inner.handler);
        let store = store.clone();
        params.task = None;
        tokio::spawn(async move {
            let outcome = tokio::select! {
                outcome = handler.tools_call(params, &rcx) => outcome.and_then(|result| to_json(&result)),
                () = rcx.cancellation().cancelled() => return,
            };
            if let Some(task) = store.settle(&task_id, outcome).await {
                notify_status(&peer, &task);
            }
        });
        raw(&json!({ "task": to_json(&created.task)? }))
    }

    /// A 2026-07-28 `tools/call` of a tool that may run as a task (SEP-2663): the server
    /// decides. A client that did not declare the extension gets the call run now (or, for a
    /// tool that only runs as a task, `-32021`); otherwise the call starts at once and stays a
    /// plain answer if it finishes or asks for input on its first step, and becomes a task
    /// (`CreateTaskResult`) when it has to wait. A tool that only runs as a task always answers
    /// with one. A store with no room left runs an optional tool now and refuses a required one.
    async fn call_tool_extension(
        &self,
        request: &Request,
        call: &Call<'_>,
        store: &TaskStore,
        support: TaskSupport,
    ) -> Reply {
        if !call.declares_tasks_extension() {
            if support == TaskSupport::Required {
                return Err(errors::missing_capability(
                    &format!("extension `{TASKS_EXTENSION}`"),
                    json!({ "extensions": { TASKS_EXTENSION: {} } }),
                ));
            }
            return self.dispatch(request, call).await;
        }
        let created = match store.create(call.task_owner(), None, TaskWire::Extension) {
            Ok(created) => created,
            Err(_) if support == TaskSupport::Optional => {
                return self.dispatch(request, call).await;
            }
            Err(full) => return Err(full),
        };
        let task_id = created.task.task_id.clone();
        let link = TaskLink {
            id: Arc::from(task_id.as_str()),
            store: store.clone(),
            wire: TaskWire::Extension,
        };
        let rcx =
            call.context()
                .detached(link, call.cx.peer().clone(), created.cancellation.clone());
        let text = call
            .params
            .map(|params| call.head.params_for_handler(params));
        let mut params: types::CallToolRequestParams =
            serde_json::from_str(text.as_deref().map_or("{}", RawValue::get))
                .map_err(|error| errors::invalid_params(v2026_07_28::methods::TOOLS_CALL, error))?;
        // A 2025-11-25 client's hint: the server alone decides here.
        params.task = None;
        let handler = Arc::clone(&self.inner.handler);
        let mut work = Box::pin(async move {
            let outcome = handler.tools_call(params, &rcx).await;
            (outcome, rcx)
        });
        match futures::poll!(work.as_mut()) {
            Poll::Ready((outcome, rcx)) => {
                if let Some(requests) = rcx.take_input_required() {
                    store.forget(&task_id);
                    return self.input_required(call, &rcx, requests);
                }
                match (outcome, support) {
                    (Ok(result), TaskSupport::Required) => {
                        store.finish(&task_id, to_json(&result));
                        self.created_task(store, &task_id)
                    }
                    (outcome, _) => {
                        store.forget(&task_id);
                        let result = to_json(&outcome?)?;
                        raw(&wire::result_for(
                            call.revision,
                            v2026_07_28::methods::TOOLS_CALL,
                            result,
                        ))
                    }
                }
            }
            Poll::Pending => {
                let store_for_work = store.clone();
                let id = task_id.clone();
                tokio::spawn(async move {
                    let cancelled = created.cancellation;
                    tokio::select! {
                        (outcome, _) = work => {
                            store_for_work.finish(&id, outcome.and_then(|result| to_json(&result)));
                        }
                        () = cancelled.cancelled() => {}
                    }
                });
                self.created_task(store, &task_id)
            }
        }
    }

    /// The `CreateTaskResult` of extension task `id`: `resultType: "task"` and the task.
    fn created_task(&self, store: &TaskStore, id: &str) -> Reply {
        let mut fields = store.created(id).ok_or_else(ErrorObject::internal_error)?;
        fields.insert("resultType".to_owned(), json!("task"));
        raw(&Value::Object(fields))
    }

    /// `tasks/get`, `tasks/update` and `tasks/cancel` of the tasks extension, for a client
    /// that declared it (`-32021` otherwise).
    fn extension_task_request(&self, call: &Call<'_>, store: &TaskStore) -> Reply {
        if !call.declares_tasks_extension() {
            return Err(errors::missing_capability(
                &format!("extension `{TASKS_EXTENSION}`"),
                json!({ "extensions": { TASKS_EXTENSION: {} } }),
            ));
        }
        let owner = call.task_owner();
        let task_id = call
            .head
            .task_id
            .as_deref()
            .ok_or_else(|| ErrorObject::invalid_params("taskId is required"))?;
        let mut result = match call.method {
            extension::TASKS_GET => store.get_detailed(owner, task_id)?,
            extension::TASKS_UPDATE => {
                let params = call.params();
                let Some(responses) = params.get("inputResponses").and_then(Value::as_object)
                else {
                    return Err(ErrorObject::invalid_params(
                        "inputResponses must be an object of answers by key",
                    ));
                };
                store.update(owner, task_id, responses)?;
                Map::new()
            }
            _ => {
                store.cancel_extension(owner, task_id)?;
                Map::new()
            }
        };
        result.insert("resultType".to_owned(), json!("complete"));
        raw(&Value::Object(result))
    }

    async fn task_request(&self, method: &str, call: &Call<'_>, store: &TaskStore) -> Reply {
        let owner = call.task_owner();
        let params = call.params();
        let task_id = || -> Result<String, ErrorObject> {
            let params: types::GetTaskRequestParams = decode(method, &params)?;
            Ok(params.task_id)
        };
        match method {
            v2025_11_25::methods::TASKS_GET => {
                raw(&to_json(&store.fetch(owner, &task_id()?).await?)?)
            }
            v2025_11_25::methods::TASKS_CANCEL => {
                let task = store.stop(owner, &task_id()?).await?;
                notify_status(&call.cx.peer().session_wide(), &task);
                raw(&to_json(&task)?)
            }
            v2025_11_25::methods::TASKS_LIST => {
                let cursor = params.get("cursor").and_then(Value::as_str);
                let (tasks, next) = store.page(owner, cursor).await?;
                let mut result = json!({ "tasks": to_json(&tasks)? });
                if let Some(next) = next {
                    insert(&mut result, "nextCursor", json!(next));
                }
                raw(&result)
            }
            _ => {
                let task_id = task_id()?;
                let mut result = store
                    .result(owner, &task_id, call.cx.cancellation())
                    .await?;
                let related = json!({ "taskId": task_id });
                match result.get_mut("_meta") {
                    Some(meta) => insert(meta, RELATED_TASK, related),
                    None => insert(&mut result, "_meta", json!({ RELATED_TASK: related })),
                }
                raw(&result)
            }
        }
    }

    /// Carries this server's broadcasts ([`Self::notify_resource_updated`],
    /// [`Self::notify_list_changed`]) to the other replicas on `relay`, and delivers theirs to
    /// the sessions and listeners here: a session subscribed on any replica hears a change made
    /// on any other, on the stream it holds open where it holds it. Set once; the relay's
    /// listener runs on the current tokio runtime until the server is dropped.
    pub fn relay_broadcasts(&self, relay: Arc<dyn Relay>) {
        if self.inner.relay.set(Arc::clone(&relay)).is_err() {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            tracing::warn!("no tokio runtime to hear the other replicas' broadcasts on");
            return;
        };
        self.hear(
            &runtime,
            relay.subscribe(BROADCAST_TOPIC),
            Self::deliver_relayed,
        );
        self.hear(
            &runtime,
            relay.subscribe(STREAM_CLAIM_TOPIC),
            Self::stream_claimed,
        );
    }

    /// Hands each message on `receiver` to `apply` on a task of its own, until the server is
    /// dropped.
    fn hear(
        &self,
        runtime: &tokio::runtime::Handle,
        mut receiver: protocols_runtime::relay::RelayReceiver,
        apply: fn(&Self, &[u8]),
    ) {
        let server = Arc::downgrade(&self.inner);
        runtime.spawn(async move {
            while let Some(received) = receiver.recv().await {
                let Some(inner) = server.upgrade() else { break };
                let server = McpServer { inner };
                match received {
                    Ok(message) => apply(&server, &message.body),
                    Err(lagged) => tracing::warn!(%lagged, "relayed messages were lost"),
                }
            }
        });
    }

    /// Another replica opened the stream of the session `body` names: it delivers that
    /// session's broadcasts from now on, so one shared stream hears each broadcast once.
    fn stream_claimed(&self, body: &[u8]) {
        let Ok(claimed) = std::str::from_utf8(body) else {
            return;
        };
        for session in self.inner.live.snapshot() {
            if session.id().as_str() == claimed {
                session.state().stream_opened_elsewhere();
            }
        }
    }

    /// Applies a broadcast another replica relayed.
    fn deliver_relayed(&self, body: &[u8]) {
        let Ok(broadcast) = serde_json::from_slice::<Value>(body) else {
            return;
        };
        if let Some(uri) = broadcast.get("resourceUpdated").and_then(Value::as_str) {
            self.resource_updated_here(uri);
        }
        let list = broadcast.get("listChanged").and_then(Value::as_str);
        if let Some(list) = [ListKind::Tools, ListKind::Resources, ListKind::Prompts]
            .into_iter()
            .find(|kind| Some(kind.filter_key()) == list)
        {
            self.list_changed_here(list);
        }
    }

    /// Relays a broadcast to the other replicas, if a relay is set; its failure is logged.
    fn relay_broadcast(&self, broadcast: &Value) {
        let Ok(body) = serde_json::to_vec(broadcast) else {
            return;
        };
        self.relay_to_all(BROADCAST_TOPIC, bytes::Bytes::from(body));
    }

    /// Sends `body` on `topic` to every other replica, if a relay is set; its failure is logged.
    fn relay_to_all(&self, topic: &'static str, body: bytes::Bytes) {
        let Some(relay) = self.inner.relay.get() else {
            return;
        };
        let relay = Arc::clone(relay);
        let publish = async move { relay.publish(None, topic, body).await };
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(async move {
                    if let Err(error) = publish.await {
                        tracing::warn!(%error, topic, "a message was not relayed to the other replicas");
                    }
                });
            }
            Err(_) => tracing::warn!(topic, "no tokio runtime to relay a message on"),
        }
    }

    /// Tells every session subscribed to `uri`, and every listener that asked, that it changed
    /// (on every replica, with [`Self::relay_broadcasts`]). Returns how many were told here.
    pub fn notify_resource_updated(&self, uri: &str) -> usize {
        self.relay_broadcast(&json!({ "resourceUpdated": uri }));
        self.resource_updated_here(uri)
    }

    fn resource_updated_here(&self, uri: &str) -> usize {
        let params = json!({ "uri": uri });
        let sessions = self.broadcast_to_sessions(
            v2026_07_28::methods::NOTIFICATIONS_RESOURCES_UPDATED,
            &params,
            |session| session.is_subscribed(uri),
        );
        let listeners = self.broadcast_to_listeners(
            v2026_07_28::methods::NOTIFICATIONS_RESOURCES_UPDATED,
            &params,
            |filter| {
                filter
                    .get("resourceSubscriptions")
                    .and_then(Value::as_array)
                    .is_some_and(|uris| uris.iter().any(|listed| listed.as_str() == Some(uri)))
            },
        );
        sessions + listeners
    }

    /// Tells every client that a list changed (`tools`, `resources` or `prompts`), on every
    /// replica with [`Self::relay_broadcasts`]. A changed tool list is read again before the
    /// next call. Returns how many were told here.
    pub fn notify_list_changed(&self, list: ListKind) -> usize {
        self.relay_broadcast(&json!({ "listChanged": list.filter_key() }));
        self.list_changed_here(list)
    }

    fn list_changed_here(&self, list: ListKind) -> usize {
        if list == ListKind::Tools {
            self.inner.tools.invalidate();
        }
        let method = list.method();
        let sessions = self.broadcast_to_sessions(method, &json!({}), |_| true);
        let listeners = self.broadcast_to_listeners(method, &json!({}), |filter| {
            filter.get(list.filter_key()).and_then(Value::as_bool) == Some(true)
        });
        sessions + listeners
    }

    fn broadcast_to_sessions(
        &self,
        method: &str,
        params: &Value,
        wanted: impl Fn(&McpSession) -> bool,
    ) -> usize {
        self.inner
            .live
            .snapshot()
            .iter()
            .filter(|session| {
                !session.ended().is_cancelled()
                    && session.state().delivers_broadcasts_here()
                    && wanted(session.state())
            })
            .filter(|session| {
                let revision = session
                    .state()
                    .revision()
                    .unwrap_or(Revision::NEWEST_SESSION);
                let params = wire::notification_for(revision, method, params.clone());
                let message = Message::Notification(Notification {
                    method: method.to_owned(),
                    params: to_raw(&params).ok(),
                });
                session.publish_standalone(message.to_bytes()).is_ok()
            })
            .count()
    }

    fn broadcast_to_listeners(
        &self,
        method: &str,
        params: &Value,
        wanted: impl Fn(&Value) -> bool,
    ) -> usize {
        let Ok(mut listeners) = self.inner.listeners.lock() else {
            return 0;
        };
        listeners.retain(|listener| listener.alive.strong_count() > 0);
        listeners
            .iter()
            .filter(|listener| wanted(&listener.filter))
            .filter(|listener| {
                let mut params = params.clone();
                insert(&mut params, "_meta", listener.meta.clone());
                let params = wire::notification_for(Revision::V2026_07_28, method, params);
                listener.peer.notify(method, &params).is_ok()
            })
            .count()
    }
}

/// The relay topic of broadcasts between replicas.
const BROADCAST_TOPIC: &str = "mcp-broadcast";

/// The relay topic on which a replica that opened a session's stream tells the others.
const STREAM_CLAIM_TOPIC: &str = "mcp-stream-claim";

/// Which list changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListKind {
    /// The tool list.
    Tools,
    /// The resource list.
    Resources,
    /// The prompt list.
    Prompts,
}

impl ListKind {
    fn method(self) -> &'static str {
        match self {
            Self::Tools => v2026_07_28::methods::NOTIFICATIONS_TOOLS_LIST_CHANGED,
            Self::Resources => v2026_07_28::methods::NOTIFICATIONS_RESOURCES_LIST_CHANGED,
            Self::Prompts => v2026_07_28::methods::NOTIFICATIONS_PROMPTS_LIST_CHANGED,
        }
    }

    fn filter_key(self) -> &'static str {
        match self {
            Self::Tools => "toolsListChanged",
            Self::Resources => "resourcesListChanged",
            Self::Prompts => "promptsListChanged",
        }
    }
}

impl<H: Server<Context = RequestContext> + 'static> RequestHandler for McpServer<H> {
    type Session = McpSession;

    fn profile(&self) -> &Profile {
        &self.inner.profile
    }

    fn unsessioned(&self, messages: &[Message], headers: &HeaderMap) -> Unsessioned {
        let requests = messages.iter().filter_map(|message| match message {
            Message::Request(request) => Some(request),
            _ => None,
        });
        let mut stateless = true;
        for request in requests {
            let alone = stateless::is_stateless(request, headers);
            // A stateless `initialize` opens nothing: 2026-07-28 has no such method.
            if request.method == v2025_11_25::methods::INITIALIZE && !alone {
                return Unsessioned::Opens;
            }
            stateless &= alone;
        }
        if stateless {
            Unsessioned::Stateless
        } else {
            Unsessioned::NeedsSession
        }
    }

    fn served_without_sessions(&self, headers: &HeaderMap) -> Served {
        sessionless::served(headers)
    }

    fn accepts_batch(&self, _headers: &HeaderMap, session: Option<&McpSession>) -> bool {
        session
            .and_then(McpSession::revision)
            .is_some_and(Revision::accepts_batches)
    }

    fn admit(
        &self,
        messages: &[Message],
        headers: &HeaderMap,
        _session: Option<&McpSession>,
    ) -> Result<(), Rejection> {
        stateless::admit(messages, headers)
    }

    /// From 2025-11-25 a resumable answer opens with a priming event (as the official SDK's
    /// server does); older clients may take its empty data for a malformed message.
    fn primes_answer_streams(&self, _headers: &HeaderMap, session: &McpSession) -> bool {
        session
            .revision()
            .is_some_and(|revision| revision >= Revision::V2025_11_25)
    }

    async fn handle(&self, request: Request, cx: Context<McpSession>) -> Reply {
        self.answer(request, cx).await
    }

    /// Lists an initialized session whose stream opens here though another replica opened
    /// it, so broadcasts made or relayed here reach it.
    /// With a relay, the other replicas hear of it and leave the session's broadcasts to this
    /// one.
    fn stream_opened(&self, session: &Arc<Session<McpSession>>) {
        if session.state().revision().is_some() {
            self.inner.live.add(session);
            session.state().stream_opened_here();
            let id = bytes::Bytes::copy_from_slice(session.id().as_str().as_bytes());
            self.relay_to_all(STREAM_CLAIM_TOPIC, id);
        }
    }

    /// Marks the session initialized, then hands the notification to the handler's trait
    /// method (cancellation itself is the runtime's).
    async fn notify(&self, notification: Notification, cx: Context<McpSession>) {
        if notification.method == v2025_11_25::methods::NOTIFICATIONS_INITIALIZED
            && let Some(session) = cx.state()
        {
            session.mark_initialized();
        }
        let revision = cx
            .state()
            .and_then(McpSession::revision)
            .unwrap_or(Revision::NEWEST_SESSION);
        let call = Call {
            revision,
            method: &notification.method,
            params: None,
            head: RequestHead::default(),
            cx: &cx,
            state: None,
        };
        let outcome = handler_revision::dispatch_server_notification(
            &*self.inner.handler,
            &notification.method,
            notification.params.as_deref(),
            &call.context(),
        )
        .await;
        if let Err(error) = outcome {
            tracing::debug!(method = %notification.method, %error, "notification not delivered to the handler");
        }
    }
}
