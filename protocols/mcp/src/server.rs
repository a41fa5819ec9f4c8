//! The MCP server: a [`McpServerBuilder`] collects tools, resources, prompts and completions,
//! and the built [`McpServer`] is the runtime's `RequestHandler` for every revision at one
//! endpoint. It negotiates on `initialize` (session revisions) or reads each request's `_meta`
//! (2026-07-28), routes by the generated method table of the revision in use, runs the
//! handler against 2025-11-25 types, and sends back what the peer's revision defines.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use http::HeaderMap;
use protocols_runtime::handler::Context;
use protocols_runtime::jsonrpc::to_raw;
use protocols_runtime::method::Direction;
use protocols_runtime::session::Session;
use protocols_runtime::{
    BatchPolicy, CancelConvention, CancelReply, ErrorObject, Message, Notification, Profile,
    Rejection, Reply, Request, RequestHandler, Unsessioned,
};
use serde_json::{Map, Value, json};

use crate::catalog::{Catalog, page};
use crate::context::{Arrival, RequestContext, ToolError};
use crate::generated::v2025_11_25::{ClientRequest, types};
use crate::generated::{v2024_11_05, v2025_03_26, v2025_06_18, v2025_11_25, v2026_07_28};
use crate::logging::Level;
use crate::revision::Revision;
use crate::session::{ClientDescription, McpSession};
use crate::stateless::{self, META_CLIENT_CAPABILITIES, META_LOG_LEVEL, params_of};
use crate::tools::{ToolDefinition, Tools};
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

/// Items per page of every list.
pub const DEFAULT_PAGE_SIZE: usize = 100;

/// How long a `subscriptions/listen` stream stays open before the server ends it and the
/// client listens again.
pub const DEFAULT_LISTEN_WINDOW: Duration = Duration::from_secs(300);

/// Collects what a server offers.
#[derive(Debug)]
pub struct McpServerBuilder {
    name: String,
    version: String,
    instructions: Option<String>,
    tools: Tools,
    catalog: Catalog,
    page_size: usize,
    listen_window: Duration,
}

impl McpServerBuilder {
    /// A server that introduces itself as `name` `version`.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            version: version.into(),
            instructions: None,
            tools: Tools::default(),
            catalog: Catalog::default(),
            page_size: DEFAULT_PAGE_SIZE,
            listen_window: DEFAULT_LISTEN_WINDOW,
        }
    }

    #[must_use]
    pub fn instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = Some(instructions.into());
        self
    }

    #[must_use]
    pub fn page_size(mut self, size: usize) -> Self {
        self.page_size = size.max(1);
        self
    }

    #[must_use]
    pub fn listen_window(mut self, window: Duration) -> Self {
        self.listen_window = window;
        self
    }

    /// Registers a tool (see [`ToolDefinition`] for the ways to make one).
    #[must_use]
    pub fn tool(mut self, tool: ToolDefinition) -> Self {
        self.tools.insert(tool);
        self
    }

    /// Registers a resource and its reader.
    #[must_use]
    pub fn resource<F, Fut>(mut self, resource: types::Resource, read: F) -> Self
    where
        F: Fn(String, RequestContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<types::ReadResourceResult, ErrorObject>> + Send + 'static,
    {
        self.catalog.add_resource(resource, read);
        self
    }

    /// Registers a resource template; its reader gets the template's variables.
    #[must_use]
    pub fn resource_template<F, Fut>(mut self, template: types::ResourceTemplate, read: F) -> Self
    where
        F: Fn(String, HashMap<String, String>, RequestContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<types::ReadResourceResult, ErrorObject>> + Send + 'static,
    {
        self.catalog.add_template(template, read);
        self
    }

    /// Registers a prompt; required arguments are checked before `get` runs.
    #[must_use]
    pub fn prompt<F, Fut>(mut self, prompt: types::Prompt, get: F) -> Self
    where
        F: Fn(HashMap<String, String>, RequestContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<types::GetPromptResult, ErrorObject>> + Send + 'static,
    {
        self.catalog.add_prompt(prompt, get);
        self
    }

    /// Answers `completion/complete` with the values `complete` suggests.
    #[must_use]
    pub fn completion(
        mut self,
        complete: impl Fn(&types::CompleteRequestParams) -> Vec<String> + Send + Sync + 'static,
    ) -> Self {
        self.catalog.set_completion(complete);
        self
    }

    pub fn build(self) -> McpServer {
        let profile = Profile::new()
            .with_session_header(stateless::SESSION_HEADER)
            .with_version_header(stateless::VERSION_HEADER)
            .with_batches(BatchPolicy::Accept)
            .with_cancellation(CANCELLATION);
        McpServer {
            inner: Arc::new(Inner {
                info: json!({ "name": self.name, "version": self.version }),
                instructions: self.instructions,
                tools: self.tools,
                catalog: self.catalog,
                page_size: self.page_size,
                listen_window: self.listen_window,
                profile,
                live: Mutex::new(Vec::new()),
                listeners: Mutex::new(Vec::new()),
            }),
        }
    }
}

/// A stateless client's open `subscriptions/listen` stream.
struct Listener {
    peer: protocols_runtime::Peer,
    filter: Value,
    /// The `_meta` naming the stream, stamped on everything sent on it.
    meta: Value,
    alive: Weak<()>,
}

struct Inner {
    info: Value,
    instructions: Option<String>,
    tools: Tools,
    catalog: Catalog,
    page_size: usize,
    listen_window: Duration,
    profile: Profile,
    /// Sessions that completed `initialize`, for notifications not tied to a request.
    live: Mutex<Vec<Weak<Session<McpSession>>>>,
    listeners: Mutex<Vec<Listener>>,
}

/// The MCP `RequestHandler`. Cheap to clone: clones share tools, sessions and listeners, so
/// one server can be mounted on several transports at once.
#[derive(Clone)]
pub struct McpServer {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for McpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServer")
            .field("info", &self.inner.info)
            .field("catalog", &self.inner.catalog)
            .finish_non_exhaustive()
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

fn invalid(error: &protocols_runtime::method::DispatchError) -> ErrorObject {
    ErrorObject::new(error.code(), error.to_string())
}

fn to_json<T: serde::Serialize>(value: &T) -> Result<Value, ErrorObject> {
    serde_json::to_value(value).map_err(|_| ErrorObject::internal_error())
}

/// One request on its way through the server.
struct Call<'a> {
    revision: Revision,
    params: Value,
    cx: &'a Context<McpSession>,
}

impl Call<'_> {
    fn context(&self) -> RequestContext {
        let meta = self.params.get("_meta");
        let session = self.cx.state();
        let client_capabilities = match (session.and_then(McpSession::client), meta) {
            (Some(client), _) => client.capabilities.clone(),
            (None, Some(meta)) => meta
                .get(META_CLIENT_CAPABILITIES)
                .cloned()
                .unwrap_or(Value::Null),
            (None, None) => Value::Null,
        };
        let meta_level = meta
            .and_then(|meta| meta.get(META_LOG_LEVEL))
            .and_then(Value::as_str)
            .and_then(|level| level.parse::<Level>().ok());
        let arrival = Arrival {
            progress_token: meta.and_then(|meta| meta.get("progressToken")).cloned(),
            log_floor: session.and_then(McpSession::log_level).or(meta_level),
            client_capabilities,
            input_responses: self
                .params
                .get("inputResponses")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default(),
        };
        RequestContext::new(
            self.revision,
            self.cx.peer().clone(),
            self.cx.cancellation().clone(),
            arrival,
        )
    }
}

impl McpServer {
    pub fn builder(name: impl Into<String>, version: impl Into<String>) -> McpServerBuilder {
        McpServerBuilder::new(name, version)
    }

    /// The capabilities this server declares, from what was registered.
    fn capabilities(&self) -> Value {
        let mut capabilities = Map::new();
        capabilities.insert("logging".to_owned(), json!({}));
        if !self.inner.tools.is_empty() {
            capabilities.insert("tools".to_owned(), json!({ "listChanged": true }));
        }
        if self.inner.catalog.has_resources() {
            capabilities.insert(
                "resources".to_owned(),
                json!({ "subscribe": true, "listChanged": true }),
            );
        }
        if self.inner.catalog.has_prompts() {
            capabilities.insert("prompts".to_owned(), json!({ "listChanged": true }));
        }
        if self.inner.catalog.has_completion() {
            capabilities.insert("completions".to_owned(), json!({}));
        }
        Value::Object(capabilities)
    }

    /// The revision a request is served under, or why it cannot be served.
    fn revision_of(
        &self,
        request: &Request,
        params: &Value,
        cx: &Context<McpSession>,
    ) -> Result<Revision, ErrorObject> {
        if let Some(version) = stateless::meta_version(params) {
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
        let params = params_of(&request);
        if request.method == "initialize" {
            return self.initialize(&params, &cx);
        }
        let revision = self.revision_of(&request, &params, &cx)?;
        if !serves(revision, &request.method) {
            return Err(ErrorObject::method_not_found());
        }
        let call = Call {
            revision,
            params,
            cx: &cx,
        };
        let result = match request.method.as_str() {
            "server/discover" => Ok(self.discover()),
            "subscriptions/listen" => return self.listen(&call).await,
            method => self.dispatch(method, &call).await,
        };
        match result {
            Ok(Answer::Complete(value)) => raw(&wire::result_for(revision, &request.method, value)),
            Ok(Answer::AsIs(value)) => raw(&value),
            Err(error) => Err(error),
        }
    }

    fn initialize(&self, params: &Value, cx: &Context<McpSession>) -> Reply {
        let typed: types::InitializeRequestParams = serde_json::from_value(params.clone())
            .map_err(|error| {
                ErrorObject::invalid_params(format!("invalid initialize params: {error}"))
            })?;
        let revision = Revision::negotiate(&typed.protocol_version);
        let client = ClientDescription {
            capabilities: to_json(&typed.capabilities)?,
            info: to_json(&typed.client_info)?,
        };
        let Some(session) = cx.session() else {
            return Err(ErrorObject::invalid_request("initialize needs a session"));
        };
        if !session.state().open(revision, client) {
            return Err(ErrorObject::invalid_request(
                "the session is already initialized",
            ));
        }
        if let Ok(mut live) = self.inner.live.lock() {
            live.retain(|session| session.strong_count() > 0);
            live.push(Arc::downgrade(session));
        }
        let mut result = json!({
            "protocolVersion": revision.as_str(),
            "capabilities": self.capabilities(),
            "serverInfo": self.inner.info,
        });
        if let (Some(instructions), Value::Object(fields)) = (&self.inner.instructions, &mut result)
        {
            fields.insert("instructions".to_owned(), json!(instructions));
        }
        raw(&wire::result_for(revision, "initialize", result))
    }

    fn discover(&self) -> Answer {
        let mut result = json!({
            "supportedVersions": Revision::supported(),
            "capabilities": self.capabilities(),
            "serverInfo": self.inner.info,
            "cacheScope": "public",
            "ttlMs": 60_000,
        });
        if let (Some(instructions), Value::Object(fields)) = (&self.inner.instructions, &mut result)
        {
            fields.insert("instructions".to_owned(), json!(instructions));
        }
        Answer::Complete(result)
    }

    async fn dispatch(&self, method: &str, call: &Call<'_>) -> Result<Answer, ErrorObject> {
        let typed = ClientRequest::from_method(method, Some(call.params.clone()))
            .map_err(|error| invalid(&error))?;
        let value = match typed {
            ClientRequest::Ping(_) => json!({}),
            ClientRequest::LoggingSetLevel(params) => {
                let level: Level = to_json(&params.level)?
                    .as_str()
                    .and_then(|level| level.parse().ok())
                    .ok_or_else(|| ErrorObject::invalid_params("unknown log level"))?;
                if let Some(session) = call.cx.state() {
                    session.set_log_level(level);
                }
                json!({})
            }
            ClientRequest::ToolsList(params) => self.list(
                "tools",
                self.inner.tools.descriptors(),
                cursor(params.as_ref()),
            )?,
            ClientRequest::ToolsCall(params) => return self.call_tool(params, call).await,
            ClientRequest::ResourcesList(params) => self.list(
                "resources",
                self.inner.catalog.resources(),
                cursor(params.as_ref()),
            )?,
            ClientRequest::ResourcesTemplatesList(params) => self.list(
                "resourceTemplates",
                self.inner.catalog.templates(),
                cursor(params.as_ref()),
            )?,
            ClientRequest::ResourcesRead(params) => {
                to_json(&self.inner.catalog.read(&params.uri, call.context()).await?)?
            }
            ClientRequest::ResourcesSubscribe(params) => {
                self.subscription(&params.uri, call, McpSession::subscribe)?
            }
            ClientRequest::ResourcesUnsubscribe(params) => {
                self.subscription(&params.uri, call, McpSession::unsubscribe)?
            }
            ClientRequest::PromptsList(params) => self.list(
                "prompts",
                self.inner.catalog.prompts(),
                cursor(params.as_ref()),
            )?,
            ClientRequest::PromptsGet(params) => to_json(
                &self
                    .inner
                    .catalog
                    .get_prompt(
                        &params.name,
                        params.arguments.unwrap_or_default(),
                        call.context(),
                    )
                    .await?,
            )?,
            ClientRequest::CompletionComplete(params) => {
                let mut values = self.inner.catalog.complete(&params);
                let total = values.len();
                values.truncate(100);
                json!({ "completion": { "values": values, "total": total, "hasMore": total > 100 } })
            }
            ClientRequest::Initialize(_)
            | ClientRequest::TasksCancel(_)
            | ClientRequest::TasksGet(_)
            | ClientRequest::TasksList(_)
            | ClientRequest::TasksResult(_) => return Err(ErrorObject::method_not_found()),
        };
        Ok(Answer::Complete(value))
    }

    fn list(
        &self,
        field: &str,
        items: Vec<Value>,
        cursor: Option<&str>,
    ) -> Result<Value, ErrorObject> {
        let (items, next) = page(items, cursor, self.inner.page_size)?;
        let mut result = Map::new();
        result.insert(field.to_owned(), Value::Array(items));
        if let Some(next) = next {
            result.insert("nextCursor".to_owned(), Value::from(next));
        }
        Ok(Value::Object(result))
    }

    async fn call_tool(
        &self,
        params: types::CallToolRequestParams,
        call: &Call<'_>,
    ) -> Result<Answer, ErrorObject> {
        let tool = self.inner.tools.get(&params.name).ok_or_else(|| {
            ErrorObject::invalid_params(format!("unknown tool `{}`", params.name))
        })?;
        match tool
            .call(params.arguments.unwrap_or_default(), call.context())
            .await
        {
            Ok(result) => Ok(Answer::Complete(to_json(&result)?)),
            Err(ToolError::InputRequired(requests)) => Ok(Answer::AsIs(json!({
                "resultType": "input_required",
                "inputRequests": requests.0,
            }))),
            Err(ToolError::Protocol(error)) => Err(error),
            Err(ToolError::Failed(message)) => Ok(Answer::Complete(to_json(
                &crate::content::tool_error(message),
            )?)),
        }
    }

    fn subscription(
        &self,
        uri: &str,
        call: &Call<'_>,
        change: fn(&McpSession, &str),
    ) -> Result<Value, ErrorObject> {
        if !self.inner.catalog.knows(uri) {
            return Err(
                ErrorObject::new(crate::catalog::RESOURCE_NOT_FOUND, "resource not found")
                    .with_data(json!({ "uri": uri })),
            );
        }
        if let Some(session) = call.cx.state() {
            change(session, uri);
        }
        Ok(json!({}))
    }

    /// 2026-07-28: acknowledges the filter, then keeps the stream open for notifications
    /// until the window closes or the client cancels.
    async fn listen(&self, call: &Call<'_>) -> Reply {
        let requested = call
            .params
            .get("notifications")
            .cloned()
            .unwrap_or_else(|| json!({}));
        let honoured = self.honoured_filter(&requested);
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
            () = tokio::time::sleep(self.inner.listen_window) => {}
        }
        drop(alive);
        raw(&wire::result_for(
            call.revision,
            "subscriptions/listen",
            json!({ "_meta": stream_meta }),
        ))
    }

    /// The part of a subscription filter this server can honour.
    fn honoured_filter(&self, requested: &Value) -> Value {
        let mut honoured = Map::new();
        let wants = |key: &str| requested.get(key).and_then(Value::as_bool) == Some(true);
        if wants("toolsListChanged") && !self.inner.tools.is_empty() {
            honoured.insert("toolsListChanged".to_owned(), json!(true));
        }
        if wants("promptsListChanged") && self.inner.catalog.has_prompts() {
            honoured.insert("promptsListChanged".to_owned(), json!(true));
        }
        if wants("resourcesListChanged") && self.inner.catalog.has_resources() {
            honoured.insert("resourcesListChanged".to_owned(), json!(true));
        }
        if let Some(uris) = requested
            .get("resourceSubscriptions")
            .and_then(Value::as_array)
        {
            let known: Vec<Value> = uris
                .iter()
                .filter(|uri| {
                    uri.as_str()
                        .is_some_and(|uri| self.inner.catalog.knows(uri))
                })
                .cloned()
                .collect();
            honoured.insert("resourceSubscriptions".to_owned(), Value::Array(known));
        }
        Value::Object(honoured)
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
        let sessions: Vec<Arc<Session<McpSession>>> = match self.inner.live.lock() {
            Ok(mut live) => {
                live.retain(|session| session.strong_count() > 0);
                live.iter().filter_map(Weak::upgrade).collect()
            }
            Err(_) => Vec::new(),
        };
        sessions
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
                if let Value::Object(fields) = &mut params {
                    fields.insert("_meta".to_owned(), listener.meta.clone());
                }
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

/// A handler's answer: a 2025-11-25 result to re-express in the peer's revision, or one
/// already in its final shape.
enum Answer {
    Complete(Value),
    AsIs(Value),
}

fn cursor(params: Option<&types::PaginatedRequestParams>) -> Option<&str> {
    params.and_then(|params| params.cursor.as_deref())
}

impl RequestHandler for McpServer {
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

    async fn handle(&self, request: Request, cx: Context<McpSession>) -> Reply {
        self.answer(request, cx).await
    }

    async fn notify(&self, notification: Notification, cx: Context<McpSession>) {
        if notification.method == "notifications/initialized"
            && let Some(session) = cx.state()
        {
            session.mark_initialized();
        }
    }
}
