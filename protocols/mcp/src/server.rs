//! The MCP server: [`McpServer`] serves any implementation of the generated 2025-11-25
//! `Server` trait as the runtime's `RequestHandler`, for every revision at one endpoint. It
//! negotiates on `initialize` (session revisions) or reads each request's `_meta`
//! (2026-07-28), checks the method against the generated method table of the revision in use,
//! routes through the generated dispatcher, and sends back what the peer's revision defines.
//! What the trait cannot say is owned here: the lifecycle (`initialize` is the handler's to
//! describe, the session is ours), `server/discover`, `subscriptions/listen`, and tasks
//! (a task-augmented `tools/call` runs the handler's `tools_call` in the background).

use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use http::HeaderMap;
use protocols_runtime::handler::Context;
use protocols_runtime::jsonrpc::to_raw;
use protocols_runtime::method::Direction;
use protocols_runtime::{
    BatchPolicy, CancelConvention, CancelReply, ErrorObject, Message, Notification, Peer, Profile,
    Rejection, Reply, Request, RequestHandler, Unsessioned,
};
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use crate::builder::{McpServerBuilder, Registry};
use crate::context::{Arrival, RequestContext};
use crate::generated::v2025_11_25::{self as handler_revision, Server, types};
use crate::generated::{v2024_11_05, v2025_03_26, v2025_06_18, v2025_11_25, v2026_07_28};
use crate::logging::Level;
use crate::revision::Revision;
use crate::session::{ClientCapabilities, ClientDescription, LiveSessions, McpSession};
use crate::stateless::{self, RequestHead, params_of};
use crate::tasks::{RELATED_TASK, TaskLink, TaskStore, notify_status};
use crate::tools::{TaskSupport, task_support_of};
use crate::wire;

/// How `notifications/cancelled` names the request it cancels; a cancelled request gets no
/// answer, as MCP requires.
pub const CANCELLATION: CancelConvention = CancelConvention {
    method: "notifications/cancelled",
    id_field: "requestId",
    reply: CancelReply::Nothing,
};

/// The `_meta` key naming the `subscriptions/listen` stream a message belongs to.
const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// How long a `subscriptions/listen` stream stays open before the server ends it and the
/// client listens again.
pub const DEFAULT_LISTEN_WINDOW: Duration = Duration::from_secs(300);

/// Pages of `tools/list` read to find one tool's task support, at most.
const TOOL_PAGES_SEARCHED: usize = 100;

/// How a handler is served beyond what it answers itself.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    listen_window: Duration,
    tasks: Option<TaskStore>,
}

impl Default for ServeOptions {
    fn default() -> Self {
        Self {
            listen_window: DEFAULT_LISTEN_WINDOW,
            tasks: None,
        }
    }
}

impl ServeOptions {
    #[must_use]
    pub fn listen_window(mut self, window: Duration) -> Self {
        self.listen_window = window;
        self
    }

    /// Serves tasks (2025-11-25) from `store`: the `tasks` capability is declared,
    /// task-augmented `tools/call` is accepted for tools whose listing allows it, and
    /// `tasks/*` are answered from the store. `None` leaves `tasks/*` to the handler.
    #[must_use]
    pub fn tasks(mut self, store: Option<TaskStore>) -> Self {
        self.tasks = store;
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

struct Inner<H> {
    handler: Arc<H>,
    options: ServeOptions,
    profile: Profile,
    /// Sessions that completed `initialize`, for notifications not tied to a request.
    live: Arc<LiveSessions>,
    listeners: Mutex<Vec<Listener>>,
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
fn serves(revision: Revision, method: &str) -> bool {
    let table = match revision {
        Revision::V2024_11_05 => v2024_11_05::METHODS,
        Revision::V2025_03_26 => v2025_03_26::METHODS,
        Revision::V2025_06_18 => v2025_06_18::METHODS,
        Revision::V2025_11_25 => v2025_11_25::METHODS,
        Revision::V2026_07_28 => v2026_07_28::METHODS,
    };
    table.iter().any(|spec| {
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

fn decode<T: DeserializeOwned>(method: &'static str, params: &Value) -> Result<T, ErrorObject> {
    serde_json::from_value(params.clone())
        .map_err(|error| ErrorObject::invalid_params(format!("invalid {method} params: {error}")))
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
    params: Option<&'a RawValue>,
    head: RequestHead<'a>,
    cx: &'a Context<McpSession>,
}

impl<'a> Call<'a> {
    fn new(revision: Revision, request: &'a Request, cx: &'a Context<McpSession>) -> Self {
        Self {
            revision,
            params: request.params.as_deref(),
            head: RequestHead::of(request),
            cx,
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
        };
        RequestContext::new(
            self.revision,
            self.cx.peer().clone(),
            self.cx.cancellation().clone(),
            arrival,
        )
    }

    /// Who may see the tasks this request creates: its session.
    fn task_owner(&self) -> Option<&str> {
        self.cx.session().map(|session| session.id().as_str())
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

    pub fn with_options(handler: H, options: ServeOptions) -> Self {
        let profile = Profile::new()
            .with_session_header(stateless::SESSION_HEADER)
            .with_version_header(stateless::VERSION_HEADER)
            .with_batches(BatchPolicy::Accept)
            .with_cancellation(CANCELLATION)
            .with_error_statuses(stateless::ERROR_STATUSES);
        Self {
            inner: Arc::new(Inner {
                handler: Arc::new(handler),
                options,
                profile,
                live: Arc::default(),
                listeners: Mutex::new(Vec::new()),
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

    /// The revision a request is served under, or why it cannot be served.
    fn revision_of(
        &self,
        request: &Request,
        head: &RequestHead<'_>,
        cx: &Context<McpSession>,
    ) -> Result<Revision, ErrorObject> {
        if let Some(version) = head.version() {
            return match version.parse::<Revision>() {
                Ok(revision) if revision.is_stateless() => Ok(revision),
                _ => Err(stateless::unsupported_version(version)),
            };
        }
        if let Some(revision) = cx.state().and_then(McpSession::revision) {
            return Ok(revision);
        }
        if request.method == "server/discover" {
            return Ok(Revision::V2026_07_28);
        }
        Err(ErrorObject::invalid_request(
            "the session is not initialized",
        ))
    }

    async fn answer(&self, request: Request, cx: Context<McpSession>) -> Reply {
        if request.method == "initialize" {
            return self.initialize(&request, &cx).await;
        }
        let head = RequestHead::of(&request);
        let revision = self.revision_of(&request, &head, &cx)?;
        if !serves(revision, &request.method) {
            return Err(ErrorObject::method_not_found());
        }
        let call = Call {
            revision,
            params: request.params.as_deref(),
            head,
            cx: &cx,
        };
        let tasks = self.inner.options.tasks.as_ref();
        match (request.method.as_str(), tasks) {
            ("server/discover", _) => self.discover(&call).await,
            ("subscriptions/listen", _) => self.listen(&call).await,
            // Tasks exist in 2025-11-25 only; elsewhere a tool runs as it always did.
            ("tools/call", Some(store)) if revision == Revision::V2025_11_25 => {
                self.call_tool(&request, &call, store).await
            }
            ("tasks/get" | "tasks/list" | "tasks/cancel" | "tasks/result", Some(store)) => {
                self.task_request(&request.method, &call, store).await
            }
            _ => self.dispatch(&request, &call).await,
        }
    }

    /// Runs a request through the generated dispatcher and re-expresses its answer.
    async fn dispatch(&self, request: &Request, call: &Call<'_>) -> Reply {
        let rcx = call.context();
        let params = call
            .params
            .map(|params| call.head.params_for_handler(params));
        let reply = handler_revision::dispatch_server_request(
            &*self.inner.handler,
            &request.method,
            params.as_deref(),
            &rcx,
        )
        .await;
        if let Some(requests) = rcx.take_input_required() {
            return raw(&json!({
                "resultType": "input_required",
                "inputRequests": requests.0,
            }));
        }
        let result = reply?;
        self.remember(&request.method, call);
        self.to_wire(call.revision, &request.method, result)
    }

    /// What a successful request leaves behind in the session: the log level it set, the
    /// resource it (un)subscribed.
    fn remember(&self, method: &str, call: &Call<'_>) {
        let Some(session) = call.cx.state() else {
            return;
        };
        if !matches!(
            method,
            "logging/setLevel" | "resources/subscribe" | "resources/unsubscribe"
        ) {
            return;
        }
        let params = call.params();
        let text = |field: &str| params.get(field).and_then(Value::as_str);
        match method {
            "logging/setLevel" => {
                if let Some(level) = text("level").and_then(|level| level.parse().ok()) {
                    session.set_log_level(level);
                }
            }
            "resources/subscribe" => text("uri")
                .into_iter()
                .for_each(|uri| session.subscribe(uri)),
            "resources/unsubscribe" => text("uri")
                .into_iter()
                .for_each(|uri| session.unsubscribe(uri)),
            _ => {}
        }
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
        let typed: types::InitializeRequestParams = decode("initialize", &params_of(request))?;
        let revision = Revision::negotiate(&typed.protocol_version);
        let Some(session) = cx.session() else {
            return Err(ErrorObject::invalid_request("initialize needs a session"));
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
        raw(&wire::result_for(revision, "initialize", result))
    }

    /// The description a stateless request gets in place of `initialize`.
    async fn describe_for(&self, call: &Call<'_>) -> Result<Value, ErrorObject> {
        let params = decode("server/discover", &call.client_as_initialize())?;
        self.describe(params, &call.context()).await
    }

    async fn discover(&self, call: &Call<'_>) -> Reply {
        let described = self.describe_for(call).await?;
        let field = |key: &str| described.get(key).cloned();
        let mut result = json!({
            "supportedVersions": Revision::supported(),
            "capabilities": field("capabilities").unwrap_or_else(|| json!({})),
            "cacheScope": "public",
            "ttlMs": 60_000,
        });
        for key in ["serverInfo", "instructions"] {
            if let Some(value) = field(key) {
                insert(&mut result, key, value);
            }
        }
        raw(&wire::result_for(call.revision, "server/discover", result))
    }

    /// 2026-07-28: acknowledges the filter, then keeps the stream open for notifications
    /// until the window closes or the client cancels.
    async fn listen(&self, call: &Call<'_>) -> Reply {
        let requested = call
            .params()
            .get("notifications")
            .cloned()
            .unwrap_or_else(|| json!({}));
        let honoured = self.honoured_filter(&requested, call).await?;
        // Every message on the stream names it by the id of the request that opened it.
        let stream_meta = json!({ SUBSCRIPTION_ID: call.cx.request_id() });
        let acknowledged = wire::notification_for(
            call.revision,
            "notifications/subscriptions/acknowledged",
            json!({ "notifications": honoured, "_meta": stream_meta }),
        );
        if let Err(error) = call
            .cx
            .peer()
            .notify("notifications/subscriptions/acknowledged", &acknowledged)
        {
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
        tokio::select! {
            () = call.cx.cancellation().cancelled() => {}
            () = tokio::time::sleep(self.inner.options.listen_window) => {}
        }
        drop(alive);
        raw(&wire::result_for(
            call.revision,
            "subscriptions/listen",
            json!({ "_meta": stream_meta }),
        ))
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

    /// `tools/call` when tasks are served: the tool's declared task support decides whether
    /// the call runs now or as a task.
    async fn call_tool(&self, request: &Request, call: &Call<'_>, store: &TaskStore) -> Reply {
        let params: types::CallToolRequestParams = decode("tools/call", &call.params())?;
        let support = self.task_support(&params.name, call).await;
        let refuse = |why: &str| {
            Err(ErrorObject::new(
                -32601,
                format!("tool `{}` {why}", params.name),
            ))
        };
        match (&params.task, support) {
            (Some(_), Some(TaskSupport::Forbidden)) => refuse("does not run as a task"),
            (None, Some(TaskSupport::Required)) => refuse("runs only as a task"),
            (Some(task), Some(_)) => {
                let ttl = task.ttl;
                self.start_task(params, ttl, call, store)
            }
            // Unknown tools are the handler's to refuse.
            _ => self.dispatch(request, call).await,
        }
    }

    /// The task support the handler's `tools/list` declares for tool `name`.
    async fn task_support(&self, name: &str, call: &Call<'_>) -> Option<TaskSupport> {
        let rcx = call.context();
        let mut cursor = None;
        for _ in 0..TOOL_PAGES_SEARCHED {
            let params = cursor.take().map(|cursor| types::PaginatedRequestParams {
                cursor: Some(cursor),
                meta: None,
            });
            let listed = self.inner.handler.tools_list(params, &rcx).await.ok()?;
            if let Some(tool) = listed.tools.iter().find(|tool| tool.name == name) {
                return Some(task_support_of(&to_json(tool).ok()?));
            }
            cursor = Some(listed.next_cursor?);
        }
        None
    }

    /// Opens a task, answers `CreateTaskResult` at once and runs the call in the background;
    /// the outcome goes to the store and the client hears of it on the session's stream.
    fn start_task(
        &self,
        mut params: types::CallToolRequestParams,
        ttl: Option<i64>,
        call: &Call<'_>,
        store: &TaskStore,
    ) -> Reply {
        let created = store.create(call.task_owner(), ttl)?;
        let task_id = created.task.task_id.clone();
        let peer = call.cx.peer().session_wide();
        let link = TaskLink {
            id: Arc::from(task_id.as_str()),
            store: store.clone(),
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
            if let Some(task) = store.finish(&task_id, outcome) {
                notify_status(&peer, &task);
            }
        });
        raw(&json!({ "task": to_json(&created.task)? }))
    }

    async fn task_request(&self, method: &str, call: &Call<'_>, store: &TaskStore) -> Reply {
        let owner = call.task_owner();
        let params = call.params();
        let task_id = || -> Result<String, ErrorObject> {
            let params: types::GetTaskRequestParams = decode("tasks/*", &params)?;
            Ok(params.task_id)
        };
        match method {
            "tasks/get" => raw(&to_json(&store.get(owner, &task_id()?)?)?),
            "tasks/cancel" => {
                let task = store.cancel(owner, &task_id()?)?;
                notify_status(&call.cx.peer().session_wide(), &task);
                raw(&to_json(&task)?)
            }
            "tasks/list" => {
                let cursor = params.get("cursor").and_then(Value::as_str);
                let (tasks, next) = store.list(owner, cursor)?;
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

    /// Tells every session subscribed to `uri`, and every listener that asked, that it changed.
    /// Returns how many were told.
    pub fn notify_resource_updated(&self, uri: &str) -> usize {
        let params = json!({ "uri": uri });
        let sessions =
            self.broadcast_to_sessions("notifications/resources/updated", &params, |session| {
                session.is_subscribed(uri)
            });
        let listeners =
            self.broadcast_to_listeners("notifications/resources/updated", &params, |filter| {
                filter
                    .get("resourceSubscriptions")
                    .and_then(Value::as_array)
                    .is_some_and(|uris| uris.iter().any(|listed| listed.as_str() == Some(uri)))
            });
        sessions + listeners
    }

    /// Tells every client that a list changed (`tools`, `resources` or `prompts`).
    pub fn notify_list_changed(&self, list: ListKind) -> usize {
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
            .filter(|session| !session.ended().is_cancelled() && wanted(session.state()))
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
                session
                    .standalone_stream()
                    .publish(message.to_bytes())
                    .is_ok()
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

/// Which list changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListKind {
    Tools,
    Resources,
    Prompts,
}

impl ListKind {
    fn method(self) -> &'static str {
        match self {
            Self::Tools => "notifications/tools/list_changed",
            Self::Resources => "notifications/resources/list_changed",
            Self::Prompts => "notifications/prompts/list_changed",
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
            if request.method == "initialize" {
                return Unsessioned::Opens;
            }
            stateless &= stateless::is_stateless(request, headers);
        }
        if stateless {
            Unsessioned::Stateless
        } else {
            Unsessioned::NeedsSession
        }
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
        session: Option<&McpSession>,
    ) -> Result<(), Rejection> {
        stateless::admit(messages, headers, session.is_some())
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

    /// Marks the session initialized, then hands the notification to the handler's trait
    /// method (cancellation itself is the runtime's).
    async fn notify(&self, notification: Notification, cx: Context<McpSession>) {
        if notification.method == "notifications/initialized"
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
            params: None,
            head: RequestHead::default(),
            cx: &cx,
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
