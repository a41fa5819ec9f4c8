//! The official Python a2a-sdk against an in-process agent (ignored by default: it needs the
//! virtualenv `scripts/a2a-real-client.sh` installs under `.tools/a2a-venv`). CI drives the real
//! `all-protocols` binary through that script instead.

// Helpers of these tests fail the test the way an assertion does.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use std::sync::Arc;
use std::time::Duration;

use protocols_a2a::card::{AgentCards, Endpoints};
use protocols_a2a::executor::{AgentExecutor, TaskUpdater, message_text};
use protocols_a2a::server::A2aServer;
use protocols_a2a::service::A2aService;
use protocols_a2a::store::MemoryTaskStore;
use protocols_a2a::v1::types::{AgentCapabilities, AgentCard, Message};
use protocols_runtime::server::Server;
use tokio_util::sync::CancellationToken;

struct Echo;

impl AgentExecutor for Echo {
    async fn execute(&self, message: Message, updater: TaskUpdater) {
        if let Err(error) = run(&message_text(&message), &updater).await {
            eprintln!("test agent failed: {error}");
        }
    }
}

async fn run(text: &str, updater: &TaskUpdater) -> Result<(), protocols_a2a::error::A2aError> {
    if text.starts_with("slow") {
        for n in 0..16 {
            updater
                .working(Some(updater.agent_message(format!("tick {n}"))))
                .await?;
            tokio::select! {
                () = updater.cancellation().cancelled() => return Ok(()),
                () = tokio::time::sleep(Duration::from_millis(500)) => {}
            }
        }
    } else {
        updater.working(None).await?;
    }
    updater
        .text_artifact("echo", format!("echo: {text}"))
        .await?;
    updater.complete(None).await
}

#[tokio::test]
#[ignore = "needs the a2a-sdk virtualenv from scripts/a2a-real-client.sh"]
async fn python_a2a_sdk_drives_discovery_send_stream_get_cancel_and_subscribe() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let card = AgentCard {
        capabilities: AgentCapabilities {
            streaming: Some(true),
            ..AgentCapabilities::default()
        },
        default_input_modes: vec!["text/plain".into()],
        default_output_modes: vec!["text/plain".into()],
        description: "python sdk check".into(),
        documentation_url: None,
        icon_url: None,
        name: "echo".into(),
        provider: None,
        security_requirements: Vec::new(),
        security_schemes: Default::default(),
        signatures: Vec::new(),
        skills: Vec::new(),
        supported_interfaces: Vec::new(),
        version: "1".into(),
    };
    let cards = AgentCards::new(card, None, Endpoints::at(&base, "/a2a", "/a2a/v1"));
    let service = A2aService::new(Echo, Arc::new(MemoryTaskStore::new()), None, cards);
    let server = Server::builder()
        .routes(A2aServer::new(service).routes("/a2a", "/a2a/v1"))
        .build()
        .unwrap();
    let stop = CancellationToken::new();
    let signal = stop.clone();
    tokio::spawn(server.serve_until(listener, async move { signal.cancelled().await }));
    let status = tokio::process::Command::new(format!("{root}/.tools/a2a-venv/bin/python"))
        .arg(format!(
            "{root}/protocols/a2a/tests/python/a2a_real_client.py"
        ))
        .arg(&base)
        .status()
        .await
        .unwrap();
    stop.cancel();
    assert!(status.success());
}
