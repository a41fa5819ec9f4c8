//! [`Serving`], the serving layer's own implementation of the generated 2025-11-25 `Server`
//! trait: a decorator over the user's handler that the generated dispatcher runs. Every method
//! hands its typed params to the handler; the ones whose success leaves something in the
//! session (`logging/setLevel`, `resources/subscribe`, `resources/unsubscribe`) then record it
//! from the same typed params, so nothing reads a request's params a second time.

use protocols_runtime::ErrorObject;

use crate::context::RequestContext;
use crate::generated::v2025_11_25::{Server, types};
use crate::logging::Level;
use crate::session::McpSession;

/// The user's handler `H` as served in one request: its answers, plus the session bookkeeping
/// they imply (none without a session).
pub(crate) struct Serving<'a, H> {
    handler: &'a H,
    session: Option<&'a McpSession>,
}

impl<'a, H> Serving<'a, H> {
    /// `handler` serving a request of `session` (`None`: a request outside any session).
    pub(crate) fn new(handler: &'a H, session: Option<&'a McpSession>) -> Self {
        Self { handler, session }
    }

    /// Runs `record` on the session when the handler's answer is a success.
    fn on_success<T>(
        &self,
        answer: Result<T, ErrorObject>,
        record: impl FnOnce(&McpSession),
    ) -> Result<T, ErrorObject> {
        if answer.is_ok()
            && let Some(session) = self.session
        {
            record(session);
        }
        answer
    }
}

/// Trait methods that only hand their typed params to the handler.
macro_rules! delegate {
    ($($method:ident($params:ty) -> $result:ty;)*) => {
        $(
            fn $method(
                &self,
                params: $params,
                cx: &RequestContext,
            ) -> impl Future<Output = Result<$result, ErrorObject>> + Send {
                self.handler.$method(params, cx)
            }
        )*
    };
}

/// Notification methods that only hand their typed params to the handler.
macro_rules! delegate_notifications {
    ($($method:ident($params:ty);)*) => {
        $(
            fn $method(&self, params: $params, cx: &RequestContext) -> impl Future<Output = ()> + Send {
                self.handler.$method(params, cx)
            }
        )*
    };
}

impl<H: Server<Context = RequestContext>> Server for Serving<'_, H> {
    type Context = RequestContext;

    delegate! {
        completion_complete(types::CompleteRequestParams) -> types::CompleteResult;
        initialize(types::InitializeRequestParams) -> types::InitializeResult;
        ping(Option<types::RequestParams>) -> types::EmptyResult;
        prompts_get(types::GetPromptRequestParams) -> types::GetPromptResult;
        prompts_list(Option<types::PaginatedRequestParams>) -> types::ListPromptsResult;
        resources_list(Option<types::PaginatedRequestParams>) -> types::ListResourcesResult;
        resources_read(types::ReadResourceRequestParams) -> types::ReadResourceResult;
        resources_templates_list(Option<types::PaginatedRequestParams>)
            -> types::ListResourceTemplatesResult;
        tasks_cancel(types::CancelTaskRequestParams) -> types::CancelTaskResult;
        tasks_get(types::GetTaskRequestParams) -> types::GetTaskResult;
        tasks_list(Option<types::PaginatedRequestParams>) -> types::ListTasksResult;
        tasks_result(types::GetTaskPayloadRequestParams) -> types::GetTaskPayloadResult;
        tools_call(types::CallToolRequestParams) -> types::CallToolResult;
        tools_list(Option<types::PaginatedRequestParams>) -> types::ListToolsResult;
    }

    delegate_notifications! {
        notifications_cancelled(types::CancelledNotificationParams);
        notifications_initialized(Option<types::NotificationParams>);
        notifications_progress(types::ProgressNotificationParams);
        notifications_roots_list_changed(Option<types::NotificationParams>);
        notifications_tasks_status(types::TaskStatusNotificationParams);
    }

    /// The level the handler accepted becomes the session's floor for log messages.
    async fn logging_set_level(
        &self,
        params: types::SetLevelRequestParams,
        cx: &RequestContext,
    ) -> Result<types::EmptyResult, ErrorObject> {
        let level = Level::from(params.level);
        let answer = self.handler.logging_set_level(params, cx).await;
        self.on_success(answer, |session| session.set_log_level(level))
    }

    /// A subscription the handler accepted is the session's: updates of `uri` reach it.
    async fn resources_subscribe(
        &self,
        params: types::SubscribeRequestParams,
        cx: &RequestContext,
    ) -> Result<types::EmptyResult, ErrorObject> {
        let uri = params.uri.clone();
        let answer = self.handler.resources_subscribe(params, cx).await;
        self.on_success(answer, |session| session.subscribe(&uri))
    }

    async fn resources_unsubscribe(
        &self,
        params: types::UnsubscribeRequestParams,
        cx: &RequestContext,
    ) -> Result<types::EmptyResult, ErrorObject> {
        let uri = params.uri.clone();
        let answer = self.handler.resources_unsubscribe(params, cx).await;
        self.on_success(answer, |session| session.unsubscribe(&uri))
    }
}
