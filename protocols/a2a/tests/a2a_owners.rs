//! Tasks belong to the subject whose message created it: over real sockets, on both bindings,
//! another subject's GetTask, ListTasks, CancelTask, SubscribeToTask, follow-up message and
//! push-config calls see "task not found", while the owner reaches the task; and the executor
//! reads the caller (its principal and headers) from its updater.

// Helpers of these tests fail the test the way an assertion does.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt as _;
use http::{HeaderMap, HeaderValue, header};
use protocols_a2a::card::{AgentCards, Endpoints};
use protocols_a2a::client::{self, a2a_error};
use protocols_a2a::error::A2aError;
use protocols_a2a::executor::{AgentExecutor, TaskUpdater, text_part};
use protocols_a2a::push::{PrivateTargets, PushPolicy, PushSender};
use protocols_a2a::server::A2aServer;
use protocols_a2a::service::A2aService;
use protocols_a2a::store::MemoryTaskStore;
use protocols_a2a::v1::types::*;
use protocols_runtime::hardening::{AuthPolicy, BearerAuthenticator, HardeningConfig, Principal};
use protocols_runtime::method::ClientError;
use protocols_runtime::server::Server;
use tokio_util::sync::CancellationToken;

/// Answers with who sent the message and the `x-tenant` it came with; a message starting with
/// `slow` keeps its task working until cancelled.
struct CallerEcho;

impl AgentExecutor for CallerEcho {
    async fn execute(&self, message: Message, updater: TaskUpdater) {
        if let Err(error) = run(&message, &updater).await {
            eprintln!("test agent failed: {error}");
        }
    }
}

async fn run(message: &Message, updater: &TaskUpdater) -> Result<(), A2aError> {
    let slow = protocols_a2a::executor::message_text(message).starts_with("slow");
    updater.working(None).await?;
    if slow {
        tokio::select! {
            () = updater.cancellation().cancelled() => return Ok(()),
            () = tokio::time::sleep(Duration::from_secs(20)) => {}
        }
    }
    let caller = updater.caller();
    let subject = caller
        .principal()
        .map_or("anonymous".to_owned(), |p| p.subject.to_string());
    let tenant = caller
        .headers()
        .get("x-tenant")
        .and_then(|value| value.to_str().ok())
        .unwrap_or("none")
        .to_owned();
    updater
        .text_artifact("caller", format!("subject: {subject} of {tenant}"))
        .await?;
    updater.complete(None).await
}

fn card() -> AgentCard {
    AgentCard {
        capabilities: AgentCapabilities {
            streaming: Some(true),
            push_notifications: Some(true),
            ..AgentCapabilities::default()
        },
        default_input_modes: vec!["text/plain".into()],
        default_output_modes: vec!["text/plain".into()],
        description: "owners".into(),
        documentation_url: None,
        icon_url: None,
        name: "owners".into(),
        provider: None,
        security_requirements: Vec::new(),
        security_schemes: Default::default(),
        signatures: Vec::new(),
        skills: Vec::new(),
        supported_interfaces: Vec::new(),
        version: "1".into(),
    }
}

struct Running {
    base: String,
    stop: CancellationToken,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

async fn start() -> Running {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let cards = AgentCards::new(card(), None, Endpoints::at(&base, "/a2a", "/a2a/v1"));
    let push = PushSender::new(PushPolicy::default().private_targets(PrivateTargets::Allow));
    let service = A2aService::new(
        CallerEcho,
        Arc::new(MemoryTaskStore::new()),
        Some(push),
        cards,
    );
    let hardening = HardeningConfig::new()
        .authenticator(
            BearerAuthenticator::new()
                .with_token("alice-token", Principal::new("alice", Vec::new()))
                .with_token("bob-token", Principal::new("bob", Vec::new())),
        )
        .auth_policy(AuthPolicy::RequireScopes(Vec::new()));
    let server = Server::builder()
        .hardening(hardening)
        .routes(A2aServer::new(service).routes("/a2a", "/a2a/v1"))
        .build()
        .unwrap();
    let stop = CancellationToken::new();
    let signal = stop.clone();
    tokio::spawn(server.serve_until(listener, async move { signal.cancelled().await }));
    Running { base, stop }
}

/// One subject's two clients, JSON-RPC and HTTP+JSON, sending its token and its tenant.
struct Subject {
    rpc: protocols_a2a::v1::RemoteAgent<client::JsonRpcTransport>,
    rest: protocols_a2a::v1::RemoteAgent<client::RestTransport>,
}

async fn subject(running: &Running, token: &str, tenant: &str) -> Subject {
    let mut headers = HeaderMap::new();
    let bearer = HeaderValue::from_str(&format!("Bearer {token}")).unwrap();
    headers.insert(header::AUTHORIZATION, bearer);
    headers.insert("x-tenant", HeaderValue::from_str(tenant).unwrap());
    let http = reqwest::Client::builder()
        .default_headers(headers)
        .build()
        .unwrap();
    let card = client::discover(&http, &running.base).await.unwrap();
    Subject {
        rpc: client::jsonrpc_agent(&http, &card).unwrap(),
        rest: client::rest_agent(&http, &card).unwrap(),
    }
}

fn message(text: &str, task_id: Option<&str>) -> SendMessageRequest {
    SendMessageRequest {
        configuration: Some(SendMessageConfiguration {
            return_immediately: Some(true),
            ..Default::default()
        }),
        message: Message {
            message_id: uuid::Uuid::new_v4().to_string(),
            parts: vec![text_part(text)],
            role: Role::RoleUser,
            task_id: task_id.map(str::to_owned),
            ..Message::default()
        },
        metadata: Default::default(),
        tenant: None,
    }
}

fn task_of(response: SendMessageResponse) -> Task {
    match response.payload {
        SendMessageResponsePayload::Task(task) => task,
        SendMessageResponsePayload::Message(_) => panic!("expected a task"),
    }
}

fn get(id: &str) -> GetTaskRequest {
    GetTaskRequest {
        history_length: None,
        id: id.into(),
        tenant: None,
    }
}

fn cancel(id: &str) -> CancelTaskRequest {
    CancelTaskRequest {
        id: id.into(),
        metadata: Default::default(),
        tenant: None,
    }
}

fn subscribe(id: &str) -> SubscribeToTaskRequest {
    SubscribeToTaskRequest {
        id: id.into(),
        tenant: None,
    }
}

fn push_config(task_id: &str) -> TaskPushNotificationConfig {
    TaskPushNotificationConfig {
        id: Some("c1".into()),
        task_id: Some(task_id.into()),
        url: "http://127.0.0.1:9/hook".into(),
        ..Default::default()
    }
}

fn assert_not_found<T: std::fmt::Debug>(what: &str, result: Result<T, ClientError>) {
    let error = result.expect_err(what);
    assert!(
        matches!(a2a_error(&error), Some(A2aError::TaskNotFound(_))),
        "{what}: {error}"
    );
}

/// Every call `other` can make about `task`, on one binding, is "task not found".
macro_rules! assert_unreachable_for {
    ($agent:expr, $task:expr) => {{
        let agent = &$agent;
        let task: &str = $task;
        assert_not_found("get", agent.get_task(get(task)).await);
        assert_not_found("cancel", agent.cancel_task(cancel(task)).await);
        let subscribed = match agent.subscribe_to_task(subscribe(task)).await {
            Err(error) => Err(error),
            Ok(mut stream) => match stream.next().await {
                Some(Err(error)) => Err(error),
                other => Ok(format!("{other:?}")),
            },
        };
        assert_not_found("subscribe", subscribed);
        assert_not_found(
            "follow-up",
            agent.send_message(message("more", Some(task))).await,
        );
        assert_not_found(
            "create push config",
            agent
                .create_task_push_notification_config(push_config(task))
                .await,
        );
        let named = GetTaskPushNotificationConfigRequest {
            id: "c1".into(),
            task_id: task.into(),
            tenant: None,
        };
        assert_not_found(
            "get push config",
            agent.get_task_push_notification_config(named).await,
        );
        let listing = ListTaskPushNotificationConfigsRequest {
            task_id: task.into(),
            ..Default::default()
        };
        let listed = agent.list_task_push_notification_configs(listing).await;
        assert_not_found("list push configs", listed);
        let deleting = DeleteTaskPushNotificationConfigRequest {
            id: "c1".into(),
            task_id: task.into(),
            tenant: None,
        };
        let deleted = agent.delete_task_push_notification_config(deleting).await;
        assert_not_found("delete push config", deleted);
        let listed = agent.list_tasks(None).await.unwrap();
        assert!(listed.tasks.iter().all(|t| t.id != task), "listed {task}");
    }};
}

#[tokio::test]
async fn another_subjects_task_is_not_found_on_every_call_of_both_bindings() {
    let running = start().await;
    let alice = subject(&running, "alice-token", "acme").await;
    let bob = subject(&running, "bob-token", "globex").await;
    let over_rpc = task_of(alice.rpc.send_message(message("slow", None)).await.unwrap());
    let over_rest = task_of(
        alice
            .rest
            .send_message(message("slow", None))
            .await
            .unwrap(),
    );
    alice
        .rpc
        .create_task_push_notification_config(push_config(&over_rpc.id))
        .await
        .unwrap();
    for task in [&over_rpc.id, &over_rest.id] {
        assert_unreachable_for!(bob.rpc, task);
        assert_unreachable_for!(bob.rest, task);
    }
    // The owner still reaches both, on either binding, and its config survived bob's delete.
    let listed = alice.rest.list_tasks(None).await.unwrap();
    let mut ids: Vec<_> = listed.tasks.iter().map(|t| t.id.clone()).collect();
    ids.sort();
    let mut expected = vec![over_rpc.id.clone(), over_rest.id.clone()];
    expected.sort();
    assert_eq!(ids, expected);
    let configs = ListTaskPushNotificationConfigsRequest {
        task_id: over_rpc.id.clone(),
        ..Default::default()
    };
    let configs = alice
        .rest
        .list_task_push_notification_configs(configs)
        .await;
    assert_eq!(configs.unwrap().configs.len(), 1);
    assert_eq!(
        alice.rest.get_task(get(&over_rpc.id)).await.unwrap().id,
        over_rpc.id
    );
    for (agent_task, canceled) in [
        (
            &over_rpc.id,
            alice.rest.cancel_task(cancel(&over_rpc.id)).await,
        ),
        (
            &over_rest.id,
            alice.rpc.cancel_task(cancel(&over_rest.id)).await,
        ),
    ] {
        let canceled = canceled.unwrap();
        assert_eq!(&canceled.id, agent_task);
        assert_eq!(canceled.status.state, TaskState::TaskStateCanceled);
    }
    let bobs = bob.rpc.list_tasks(None).await.unwrap();
    assert!(bobs.tasks.is_empty(), "bob lists {:?}", bobs.tasks);
}

#[tokio::test]
async fn the_executor_reads_its_callers_principal_and_headers() {
    let running = start().await;
    for (token, tenant, expected) in [
        ("alice-token", "acme", "subject: alice of acme"),
        ("bob-token", "globex", "subject: bob of globex"),
    ] {
        let subject = subject(&running, token, tenant).await;
        for agent_answer in [
            subject.rpc.send_message(message("whoami", None)).await,
            subject.rest.send_message(message("whoami", None)).await,
        ] {
            let task = task_of(agent_answer.unwrap());
            let mut finished = subject.rpc.get_task(get(&task.id)).await.unwrap();
            for _ in 0..100 {
                if finished.status.state == TaskState::TaskStateCompleted {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
                finished = subject.rpc.get_task(get(&task.id)).await.unwrap();
            }
            let text = serde_json::to_value(&finished.artifacts[0].parts[0]).unwrap();
            assert_eq!(text["text"], expected);
        }
    }
}
