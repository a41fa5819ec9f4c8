//! The registration API: a [`McpServerBuilder`] collects tools, resources, prompts and
//! completions into a [`Registry`], which is nothing but an implementation of the generated
//! 2025-11-25 `Server` trait — the same trait a hand-written server implements — so both are
//! served by [`McpServer`] through one routing path. `build` refuses what a client could not
//! take (see [`crate::tools::InvalidTool`]), so a bad definition fails once, at startup.

use std::collections::HashMap;
use std::future::Future;
use std::time::Duration;

use protocols_runtime::ErrorObject;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::catalog::{Catalog, page};
use crate::context::{RequestContext, ToolError};
use crate::errors;
use crate::generated::v2025_11_25::{Server, types};
use crate::request_state::StateSeal;
use crate::server::{DEFAULT_LISTEN_WINDOW, McpServer, ServeOptions};
use crate::tasks::TaskStore;
use crate::tools::{InvalidTool, ToolDefinition, Tools};

/// Items per page of every list.
pub const DEFAULT_PAGE_SIZE: usize = 100;

/// Completion values per answer (what `completion/complete` allows).
const MAX_COMPLETIONS: usize = 100;

/// Collects what a server offers.
#[derive(Debug)]
pub struct McpServerBuilder {
    registry: Registry,
    listen_window: Duration,
    tasks: Option<TaskStore>,
    request_state: Option<StateSeal>,
}

/// What `build` refuses: every registration a client could not take.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the MCP server cannot be built: {}", list(.0))]
pub struct BuildError(pub Vec<InvalidTool>);

fn list(problems: &[InvalidTool]) -> String {
    problems
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

impl McpServerBuilder {
    /// A server that introduces itself as `name` `version`.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        Self {
            registry: Registry {
                info: implementation(name.into(), version.into()),
                instructions: None,
                tools: Tools::default(),
                catalog: Catalog::default(),
                page_size: DEFAULT_PAGE_SIZE,
            },
            listen_window: DEFAULT_LISTEN_WINDOW,
            tasks: None,
            request_state: None,
        }
    }

    /// The `instructions` `initialize` hands the client: how to use this server.
    #[must_use]
    pub fn instructions(mut self, instructions: impl Into<String>) -> Self {
        self.registry.instructions = Some(instructions.into());
        self
    }

    /// Items per page of `tools/list`, `resources/list` and `prompts/list` (at least 1).
    #[must_use]
    pub fn page_size(mut self, size: usize) -> Self {
        self.registry.page_size = size.max(1);
        self
    }

    /// How long a `subscriptions/listen` stream stays open before the client listens again (default 5 min).
    #[must_use]
    pub fn listen_window(mut self, window: Duration) -> Self {
        self.listen_window = window;
        self
    }

    /// The store task-augmented calls are kept in (its limits and clock). Without one, a
    /// default store is used as soon as a tool declares task support.
    #[must_use]
    pub fn task_store(mut self, store: TaskStore) -> Self {
        self.tasks = Some(store);
        self
    }

    /// The key 2026-07-28 request states are sealed with (see [`crate::request_state`]); give
    /// replicas the same one. Without it, a random key of this process.
    #[must_use]
    pub fn request_state_key(mut self, secret: &[u8]) -> Self {
        self.request_state = Some(StateSeal::with_key(secret));
        self
    }

    /// Registers a tool (see [`ToolDefinition`] for the ways to make one).
    #[must_use]
    pub fn tool(mut self, tool: ToolDefinition) -> Self {
        self.registry.tools.insert(tool);
        self
    }

    /// Registers a resource and its reader.
    #[must_use]
    pub fn resource<F, Fut>(mut self, resource: types::Resource, read: F) -> Self
    where
        F: Fn(String, RequestContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<types::ReadResourceResult, ErrorObject>> + Send + 'static,
    {
        self.registry.catalog.add_resource(resource, read);
        self
    }

    /// Registers a resource template; its reader gets the template's variables.
    #[must_use]
    pub fn resource_template<F, Fut>(mut self, template: types::ResourceTemplate, read: F) -> Self
    where
        F: Fn(String, HashMap<String, String>, RequestContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<types::ReadResourceResult, ErrorObject>> + Send + 'static,
    {
        self.registry.catalog.add_template(template, read);
        self
    }

    /// Registers a prompt; required arguments are checked before `get` runs.
    #[must_use]
    pub fn prompt<F, Fut>(mut self, prompt: types::Prompt, get: F) -> Self
    where
        F: Fn(HashMap<String, String>, RequestContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<types::GetPromptResult, ErrorObject>> + Send + 'static,
    {
        self.registry.catalog.add_prompt(prompt, get);
        self
    }

    /// Answers `completion/complete` with the values `complete` suggests.
    #[must_use]
    pub fn completion(
        mut self,
        complete: impl Fn(&types::CompleteRequestParams) -> Vec<String> + Send + Sync + 'static,
    ) -> Self {
        self.registry.catalog.set_completion(complete);
        self
    }

    /// The server, unless a registration is one a client could not take.
    pub fn build(self) -> Result<McpServer, BuildError> {
        let invalid = self.registry.tools.invalid();
        if !invalid.is_empty() {
            return Err(BuildError(invalid));
        }
        let tasks = self.tasks.or_else(|| {
            self.registry
                .tools
                .any_supports_tasks()
                .then(TaskStore::default)
        });
        let mut options = ServeOptions::default()
            .listen_window(self.listen_window)
            .tasks(tasks);
        if let Some(seal) = self.request_state {
            options = options.request_state(seal);
        }
        Ok(McpServer::with_options(self.registry, options))
    }
}

/// What a builder registered, serving the generated trait.
#[derive(Debug, Clone)]
pub struct Registry {
    info: types::Implementation,
    instructions: Option<String>,
    tools: Tools,
    catalog: Catalog,
    page_size: usize,
}

/// How the server introduces itself: a name and a version, nothing optional.
fn implementation(name: String, version: String) -> types::Implementation {
    types::Implementation {
        description: None,
        icons: None,
        name,
        title: None,
        version,
        website_url: None,
    }
}

/// The answer with nothing in it (`{}`).
fn empty() -> types::EmptyResult {
    types::EmptyResult(types::Result {
        meta: None,
        extra: Map::new(),
    })
}

/// A descriptor as the generated `Tool` it was built to be; a mismatch is the server's fault.
fn typed<T: DeserializeOwned>(value: Value) -> Result<T, ErrorObject> {
    serde_json::from_value(value).map_err(|error| {
        tracing::error!(%error, "a registry answer does not fit its generated type");
        ErrorObject::internal_error()
    })
}

fn cursor(params: Option<&types::PaginatedRequestParams>) -> Option<&str> {
    params.and_then(|params| params.cursor.as_deref())
}

/// The empty object a capability without settings is declared with.
fn declared() -> Option<Map<String, Value>> {
    Some(Map::new())
}

impl Registry {
    /// The capabilities this server declares, from what was registered.
    fn capabilities(&self) -> types::ServerCapabilities {
        let list_changed = Some(true);
        types::ServerCapabilities {
            logging: declared(),
            tools: (!self.tools.is_empty())
                .then_some(types::ServerCapabilitiesTools { list_changed }),
            resources: self
                .catalog
                .has_resources()
                .then_some(types::ServerCapabilitiesResources {
                    list_changed,
                    subscribe: Some(true),
                }),
            prompts: self
                .catalog
                .has_prompts()
                .then_some(types::ServerCapabilitiesPrompts { list_changed }),
            completions: self.catalog.has_completion().then(Map::new),
            ..types::ServerCapabilities::default()
        }
    }

    /// One page of `items` and the cursor of the next one.
    fn page<T>(
        &self,
        items: Vec<T>,
        params: Option<&types::PaginatedRequestParams>,
    ) -> Result<(Vec<T>, Option<String>), ErrorObject> {
        page(items, cursor(params), self.page_size)
    }

    fn known(&self, uri: &str) -> Result<types::EmptyResult, ErrorObject> {
        if !self.catalog.knows(uri) {
            return Err(errors::resource_not_found(uri));
        }
        Ok(empty())
    }
}

impl Server for Registry {
    type Context = RequestContext;

    async fn initialize(
        &self,
        params: types::InitializeRequestParams,
        _cx: &RequestContext,
    ) -> Result<types::InitializeResult, ErrorObject> {
        Ok(types::InitializeResult {
            capabilities: self.capabilities(),
            instructions: self.instructions.clone(),
            meta: None,
            protocol_version: params.protocol_version,
            server_info: self.info.clone(),
        })
    }

    async fn ping(
        &self,
        _params: Option<types::RequestParams>,
        _cx: &RequestContext,
    ) -> Result<types::EmptyResult, ErrorObject> {
        Ok(empty())
    }

    /// Accepts every level; the server remembers it for the session.
    async fn logging_set_level(
        &self,
        _params: types::SetLevelRequestParams,
        _cx: &RequestContext,
    ) -> Result<types::EmptyResult, ErrorObject> {
        Ok(empty())
    }

    async fn tools_list(
        &self,
        params: Option<types::PaginatedRequestParams>,
        _cx: &RequestContext,
    ) -> Result<types::ListToolsResult, ErrorObject> {
        let (tools, next_cursor) = self.page(self.tools.descriptors(), params.as_ref())?;
        Ok(types::ListToolsResult {
            meta: None,
            next_cursor,
            tools: tools.into_iter().map(typed).collect::<Result<_, _>>()?,
        })
    }

    async fn tools_call(
        &self,
        params: types::CallToolRequestParams,
        cx: &RequestContext,
    ) -> Result<types::CallToolResult, ErrorObject> {
        let tool = self
            .tools
            .get(&params.name)
            .ok_or_else(|| errors::unknown_tool(&params.name))?;
        match tool
            .call(params.arguments.unwrap_or_default(), cx.clone())
            .await
        {
            Ok(result) => Ok(result),
            Err(ToolError::InputRequired(requests)) => Err(cx.require_input(requests)),
            Err(ToolError::Protocol(error)) => Err(error),
            Err(ToolError::Failed(message)) => Ok(crate::content::tool_error(message)),
        }
    }

    async fn resources_list(
        &self,
        params: Option<types::PaginatedRequestParams>,
        _cx: &RequestContext,
    ) -> Result<types::ListResourcesResult, ErrorObject> {
        let (resources, next_cursor) = self.page(self.catalog.resources(), params.as_ref())?;
        Ok(types::ListResourcesResult {
            meta: None,
            next_cursor,
            resources,
        })
    }

    async fn resources_templates_list(
        &self,
        params: Option<types::PaginatedRequestParams>,
        _cx: &RequestContext,
    ) -> Result<types::ListResourceTemplatesResult, ErrorObject> {
        let (resource_templates, next_cursor) =
            self.page(self.catalog.templates(), params.as_ref())?;
        Ok(types::ListResourceTemplatesResult {
            meta: None,
            next_cursor,
            resource_templates,
        })
    }

    async fn resources_read(
        &self,
        params: types::ReadResourceRequestParams,
        cx: &RequestContext,
    ) -> Result<types::ReadResourceResult, ErrorObject> {
        self.catalog.read(&params.uri, cx.clone()).await
    }

    /// Validates the URI; the server records the subscription on success.
    async fn resources_subscribe(
        &self,
        params: types::SubscribeRequestParams,
        _cx: &RequestContext,
    ) -> Result<types::EmptyResult, ErrorObject> {
        self.known(&params.uri)
    }

    async fn resources_unsubscribe(
        &self,
        params: types::UnsubscribeRequestParams,
        _cx: &RequestContext,
    ) -> Result<types::EmptyResult, ErrorObject> {
        self.known(&params.uri)
    }

    async fn prompts_list(
        &self,
        params: Option<types::PaginatedRequestParams>,
        _cx: &RequestContext,
    ) -> Result<types::ListPromptsResult, ErrorObject> {
        let (prompts, next_cursor) = self.page(self.catalog.prompts(), params.as_ref())?;
        Ok(types::ListPromptsResult {
            meta: None,
            next_cursor,
            prompts,
        })
    }

    async fn prompts_get(
        &self,
        params: types::GetPromptRequestParams,
        cx: &RequestContext,
    ) -> Result<types::GetPromptResult, ErrorObject> {
        self.catalog
            .get_prompt(
                &params.name,
                params.arguments.unwrap_or_default(),
                cx.clone(),
            )
            .await
    }

    async fn completion_complete(
        &self,
        params: types::CompleteRequestParams,
        _cx: &RequestContext,
    ) -> Result<types::CompleteResult, ErrorObject> {
        let mut values = self.catalog.complete(&params);
        let total = values.len();
        values.truncate(MAX_COMPLETIONS);
        Ok(types::CompleteResult {
            completion: types::CompleteResultCompletion {
                has_more: Some(total > MAX_COMPLETIONS),
                total: Some(i64::try_from(total).unwrap_or(i64::MAX)),
                values,
            },
            meta: None,
        })
    }
}
