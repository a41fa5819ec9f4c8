//! The A2A demo agent: every message becomes a task whose artifact echoes the text
//! (`echo: <text>`); text starting with `slow` keeps the task `WORKING` for about 8 s with a
//! status update every 0.5 s, and honours `CancelTask` meanwhile; text starting with `ask`
//! leaves the task `INPUT_REQUIRED` with a question until the client continues it (a message
//! naming the task), then completes with both texts (`echo: <first> / <answer>`).
//!
//! Mounting: [`router`] returns unhardened routes — the card at
//! `/.well-known/agent-card.json`, JSON-RPC at `/a2a`, HTTP+JSON under `/a2a/v1` — for a runtime
//! `ServerBuilder::routes` (which hardens them with everything else), their streams tied to the
//! builder's shutdown:
//!
//! ```no_run
//! let builder = protocols_runtime::server::Server::builder();
//! let routes = examples::a2a_demo::router("http://127.0.0.1:8080", builder.shutdown_token());
//! let server = builder.routes(routes).build();
//! ```

use std::sync::Arc;

use axum::Router;
use protocols_a2a::card::{AgentCards, Endpoints};
use protocols_a2a::executor::{AgentExecutor, TaskUpdater, message_text};
use protocols_a2a::push::{PushPolicy, PushSender};
use protocols_a2a::server::A2aServer;
use protocols_a2a::service::A2aService;
use protocols_a2a::store::{MemoryTaskStore, TaskStore};
use protocols_a2a::v1::types::Role;
use protocols_a2a::v1::types::{AgentCapabilities, AgentCard, AgentSkill, Message};
use tokio_util::sync::CancellationToken;

use crate::core::{DemoAction, WHOAMI, answer_after_question, plan, question_for, whoami};

/// Where the demo serves JSON-RPC, and the prefix of its HTTP+JSON routes.
pub const JSONRPC_PATH: &str = "/a2a";
pub const REST_PATH: &str = "/a2a/v1";

/// The demo's executor.
#[derive(Debug, Clone, Copy, Default)]
pub struct DemoExecutor;

impl AgentExecutor for DemoExecutor {
    async fn execute(&self, message: Message, updater: TaskUpdater) {
        let text = message_text(&message);
        let ran = if text.trim() == WHOAMI {
            name_the_caller(&updater).await
        } else {
            run(&text, &updater).await
        };
        if let Err(error) = ran {
            tracing::warn!(%error, task = updater.task_id(), "demo task failed");
            let _ = updater.fail(None).await;
        }
    }
}

/// The text that opened an exchange the agent asked a question in, when `updater`'s task is
/// that exchange continued: its history holds the client's first message, the agent's
/// question, then the answer now being run.
fn opening_text(updater: &TaskUpdater) -> Option<String> {
    let history = &updater.task().history;
    history
        .iter()
        .rev()
        .skip(1)
        .any(|message| message.role == Role::RoleAgent)
        .then(|| history.first().map(message_text))
        .flatten()
}

/// `whoami`: an artifact naming the subject that sent the message.
async fn name_the_caller(updater: &TaskUpdater) -> Result<(), protocols_a2a::error::A2aError> {
    let subject = updater.caller().principal().map(|p| &*p.subject);
    updater.working(None).await?;
    updater.text_artifact("whoami", whoami(subject)).await?;
    updater.complete(None).await
}

async fn run(text: &str, updater: &TaskUpdater) -> Result<(), protocols_a2a::error::A2aError> {
    if let Some(first) = opening_text(updater) {
        updater.working(None).await?;
        updater
            .text_artifact("echo", answer_after_question(&first, text))
            .await?;
        return updater.complete(None).await;
    }
    if let Some(question) = question_for(text) {
        return updater.require_input(updater.agent_message(question)).await;
    }
    match plan(text) {
        DemoAction::Echo(reply) => {
            updater.working(None).await?;
            updater.text_artifact("echo", reply).await?;
        }
        DemoAction::Slow { reply, tick, total } => {
            let ticks = (total.as_millis() / tick.as_millis().max(1)).max(1);
            for n in 1..=ticks {
                let progress = updater.agent_message(format!("working {n}/{ticks}"));
                updater.working(Some(progress)).await?;
                tokio::select! {
                    () = updater.cancellation().cancelled() => return Ok(()),
                    () = tokio::time::sleep(tick) => {}
                }
            }
            updater.text_artifact("echo", reply).await?;
        }
    }
    updater.complete(None).await
}

/// The demo's public card (interfaces are filled in from the endpoints).
pub fn card() -> AgentCard {
    AgentCard {
        capabilities: AgentCapabilities {
            extended_agent_card: None,
            extensions: Vec::new(),
            push_notifications: Some(true),
            streaming: Some(true),
        },
        default_input_modes: vec!["text/plain".into()],
        default_output_modes: vec!["text/plain".into()],
        description: "Echoes every message; text starting with `slow` takes about 8 s, text \
                      starting with `ask` asks a question first."
            .into(),
        documentation_url: None,
        icon_url: None,
        name: "protocols demo agent".into(),
        provider: None,
        security_requirements: Vec::new(),
        security_schemes: Default::default(),
        signatures: Vec::new(),
        skills: vec![AgentSkill {
            description: "Answers `echo: <text>`".into(),
            examples: vec!["hello".into(), "slow hello".into(), "ask me".into()],
            id: "echo".into(),
            input_modes: Vec::new(),
            name: "echo".into(),
            output_modes: Vec::new(),
            security_requirements: Vec::new(),
            tags: vec!["demo".into()],
        }],
        supported_interfaces: Vec::new(),
        version: env!("CARGO_PKG_VERSION").into(),
    }
}

/// The demo agent with `push` as its webhook policy, its tasks in memory.
pub fn server(public_base_url: &str, push: PushPolicy) -> A2aServer<DemoExecutor> {
    server_with_store(public_base_url, push, Arc::new(MemoryTaskStore::new()))
}

/// The demo agent with `push` as its webhook policy, its tasks in `store` (one replicas share
/// lets any of them serve any task).
pub fn server_with_store(
    public_base_url: &str,
    push: PushPolicy,
    store: Arc<dyn TaskStore>,
) -> A2aServer<DemoExecutor> {
    let endpoints = Endpoints::at(public_base_url, JSONRPC_PATH, REST_PATH);
    let cards = AgentCards::new(card(), None, endpoints);
    let service = A2aService::new(DemoExecutor, store, Some(PushSender::new(push)), cards);
    A2aServer::new(service)
}

/// The demo's routes, with interface URLs under `public_base_url` (e.g.
/// `http://127.0.0.1:8080`); webhooks to private addresses are refused. Both bindings' streams
/// end when `shutdown` fires.
pub fn router(public_base_url: &str, shutdown: CancellationToken) -> Router {
    router_with_push(public_base_url, shutdown, PushPolicy::default())
}

/// [`router`] with `push` as the webhook policy (e.g. [`PrivateTargets::Allow`] for a test
/// that receives webhooks on loopback — unsafe anywhere else: it lets a caller make the server
/// call its own host and private network).
///
/// [`PrivateTargets::Allow`]: protocols_a2a::push::PrivateTargets::Allow
pub fn router_with_push(
    public_base_url: &str,
    shutdown: CancellationToken,
    push: PushPolicy,
) -> Router {
    router_with_store(
        public_base_url,
        shutdown,
        push,
        Arc::new(MemoryTaskStore::new()),
    )
}

/// [`router_with_push`] with the tasks in `store`.
pub fn router_with_store(
    public_base_url: &str,
    shutdown: CancellationToken,
    push: PushPolicy,
    store: Arc<dyn TaskStore>,
) -> Router {
    server_with_store(public_base_url, push, store)
        .with_shutdown(shutdown)
        .routes(JSONRPC_PATH, REST_PATH)
}

#[cfg(test)]
mod tests {
    use futures::StreamExt as _;
    use protocols_a2a::executor::text_part;
    use protocols_a2a::service::Caller;
    use protocols_a2a::store::Owner;
    use protocols_a2a::v1::types::{
        CancelTaskRequest, Role, SendMessageRequest, SendMessageResponsePayload,
        StreamResponsePayload, TaskState,
    };

    use super::*;

    fn request(text: &str) -> SendMessageRequest {
        SendMessageRequest {
            configuration: None,
            message: Message {
                message_id: "m".into(),
                parts: vec![text_part(text)],
                role: Role::RoleUser,
                ..Message::default()
            },
            metadata: Default::default(),
            tenant: None,
        }
    }

    fn me() -> Caller {
        Caller::anonymous(Owner::Anonymous)
    }

    #[tokio::test]
    async fn a_message_becomes_a_completed_task_echoing_its_text() {
        let agent = server("http://127.0.0.1:1", PushPolicy::default());
        let answer = agent
            .service()
            .send_message(request("hi"), &me())
            .await
            .unwrap();
        let SendMessageResponsePayload::Task(task) = answer.payload else {
            panic!("a task")
        };
        assert_eq!(task.status.state, TaskState::TaskStateCompleted);
        let text = serde_json::to_value(&task.artifacts[0].parts[0]).unwrap();
        assert_eq!(text["text"], "echo: hi");
    }

    #[tokio::test]
    async fn a_slow_task_reports_progress_and_honours_cancel() {
        let agent = server("http://127.0.0.1:1", PushPolicy::default());
        let mut events = agent
            .service()
            .send_streaming_message(request("slow down"), &me())
            .await
            .unwrap();
        let StreamResponsePayload::Task(task) = events.next().await.unwrap().payload else {
            panic!("the task first")
        };
        let StreamResponsePayload::StatusUpdate(progress) = events.next().await.unwrap().payload
        else {
            panic!("then progress")
        };
        assert_eq!(progress.status.state, TaskState::TaskStateWorking);
        let canceled = agent
            .service()
            .cancel_task(
                &CancelTaskRequest {
                    id: task.id,
                    metadata: Default::default(),
                    tenant: None,
                },
                &me(),
            )
            .await
            .unwrap();
        assert_eq!(canceled.status.state, TaskState::TaskStateCanceled);
        let last = events.collect::<Vec<_>>().await.pop().unwrap();
        let StreamResponsePayload::StatusUpdate(last) = last.payload else {
            panic!("a final status")
        };
        assert_eq!(last.status.state, TaskState::TaskStateCanceled);
    }
}
