//! The generated A2A 1.0 [`Agent`] trait implemented by [`A2aService`]: each RPC forwards to the
//! service, its errors become JSON-RPC error objects (carrying their `reason`, so the HTTP+JSON
//! binding and clients can restore the typed error), and the caller (who owns the tasks it
//! creates and may reach, whether it authenticated, its principal and headers) is the trait's
//! context.

use futures::StreamExt as _;
use protocols_runtime::ErrorObject;
use protocols_runtime::method::ResultStream;

use crate::error::A2aError;
use crate::executor::AgentExecutor;
use crate::service::{A2aService, Caller, EventStream};
use crate::v1::Agent;
use crate::v1::types::{
    AgentCard, CancelTaskRequest, DeleteTaskPushNotificationConfigRequest, Empty,
    GetExtendedAgentCardRequest, GetTaskPushNotificationConfigRequest, GetTaskRequest,
    ListTaskPushNotificationConfigsRequest, ListTaskPushNotificationConfigsResponse,
    ListTasksRequest, ListTasksResponse, SendMessageRequest, SendMessageResponse, StreamResponse,
    SubscribeToTaskRequest, Task, TaskPushNotificationConfig,
};

fn wire<T>(result: Result<T, A2aError>) -> Result<T, ErrorObject> {
    result.map_err(|error| error.to_error_object())
}

fn wire_stream(
    events: Result<EventStream, A2aError>,
) -> Result<ResultStream<StreamResponse>, ErrorObject> {
    wire(events).map(|events| events.map(Ok).boxed())
}

impl<E: AgentExecutor> Agent for A2aService<E> {
    type Context = Caller;

    async fn send_message(
        &self,
        params: SendMessageRequest,
        cx: &Caller,
    ) -> Result<SendMessageResponse, ErrorObject> {
        wire(A2aService::send_message(self, params, cx).await)
    }

    async fn send_streaming_message(
        &self,
        params: SendMessageRequest,
        cx: &Caller,
    ) -> Result<ResultStream<StreamResponse>, ErrorObject> {
        wire_stream(A2aService::send_streaming_message(self, params, cx).await)
    }

    async fn get_task(&self, params: GetTaskRequest, cx: &Caller) -> Result<Task, ErrorObject> {
        wire(A2aService::get_task(self, &params, cx).await)
    }

    async fn list_tasks(
        &self,
        params: Option<ListTasksRequest>,
        cx: &Caller,
    ) -> Result<ListTasksResponse, ErrorObject> {
        wire(A2aService::list_tasks(self, &params.unwrap_or_default(), cx).await)
    }

    async fn cancel_task(
        &self,
        params: CancelTaskRequest,
        cx: &Caller,
    ) -> Result<Task, ErrorObject> {
        wire(A2aService::cancel_task(self, &params, cx).await)
    }

    async fn subscribe_to_task(
        &self,
        params: SubscribeToTaskRequest,
        cx: &Caller,
    ) -> Result<ResultStream<StreamResponse>, ErrorObject> {
        wire_stream(A2aService::subscribe_to_task(self, &params, cx).await)
    }

    async fn create_task_push_notification_config(
        &self,
        params: TaskPushNotificationConfig,
        cx: &Caller,
    ) -> Result<TaskPushNotificationConfig, ErrorObject> {
        wire(self.create_push_config(params, cx).await)
    }

    async fn get_task_push_notification_config(
        &self,
        params: GetTaskPushNotificationConfigRequest,
        cx: &Caller,
    ) -> Result<TaskPushNotificationConfig, ErrorObject> {
        wire(self.get_push_config(&params, cx).await)
    }

    async fn list_task_push_notification_configs(
        &self,
        params: ListTaskPushNotificationConfigsRequest,
        cx: &Caller,
    ) -> Result<ListTaskPushNotificationConfigsResponse, ErrorObject> {
        wire(self.list_push_configs(&params, cx).await)
    }

    async fn get_extended_agent_card(
        &self,
        _params: Option<GetExtendedAgentCardRequest>,
        cx: &Caller,
    ) -> Result<AgentCard, ErrorObject> {
        wire(self.extended_card(cx))
    }

    async fn delete_task_push_notification_config(
        &self,
        params: DeleteTaskPushNotificationConfigRequest,
        cx: &Caller,
    ) -> Result<Empty, ErrorObject> {
        wire(self.delete_push_config(&params, cx).await)
    }
}
