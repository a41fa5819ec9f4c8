//! The real `all-protocols` binary's A2A side, as a process: what it keeps for anonymous callers
//! is bounded (60 one-MiB messages leave its resident memory under [`RSS_BOUND_MIB`]), and its
//! test-only `--allow-private-webhooks` flag is what lets a webhook reach loopback (refused
//! without it).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::process::{Child, Command};

/// Resident memory `all-protocols` stays under during the 60 × 1 MiB run: what one anonymous
/// caller may keep (32 MiB by default), the process's own ~20 MiB (a debug build), and room for
/// the allocator's per-thread arenas (measured: 65–97 MiB at peak). Without the store's bounds
/// every task stayed, about 2 MiB each: the run reached 150 MiB and kept growing with each call.
const RSS_BOUND_MIB: u64 = 112;

struct Server {
    child: Child,
    base: String,
    http: reqwest::Client,
}

impl Server {
    async fn start(flags: &[&str]) -> Self {
        let address = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_all-protocols"))
            .args(["--listen", &address.to_string()])
            .args(flags)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        assert!(
            protocols_testkit::listening_within(address, Duration::from_secs(10)).await,
            "all-protocols did not come up at {address}"
        );
        Self {
            child,
            base: format!("http://{address}"),
            http: reqwest::Client::new(),
        }
    }

    async fn call(&self, method: &str, params: Value) -> Value {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        self.http
            .post(format!("{}/a2a", self.base))
            .header("content-type", "application/json")
            .header("A2A-Version", "1.0")
            .body(body.to_string())
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }

    /// The process's resident set, in KiB.
    fn rss_kib(&self) -> u64 {
        let pid = self.child.id().unwrap();
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
        status
            .lines()
            .find_map(|line| line.strip_prefix("VmRSS:"))
            .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap()
    }
}

fn message(text: String) -> Value {
    json!({"message": {"messageId": format!("m-{}", text.len()), "role": "ROLE_USER",
                       "parts": [{"text": text}]}})
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn sixty_anonymous_one_mib_messages_leave_all_protocols_under_its_memory_bound() {
    let server = Server::start(&[]).await;
    let before = server.rss_kib();
    let mib = "m".repeat(1024 * 1024);
    let mut peak = before;
    for _ in 0..60 {
        let answer = server.call("SendMessage", message(mib.clone())).await;
        assert_eq!(
            answer["result"]["task"]["status"]["state"],
            "TASK_STATE_COMPLETED",
            "{}",
            answer.to_string().chars().take(300).collect::<String>()
        );
        peak = peak.max(server.rss_kib());
    }
    let after = server.rss_kib();
    println!(
        "all-protocols RSS: {} KiB before, {} KiB after 60 x 1 MiB, {} KiB at peak (bound {} MiB)",
        before, after, peak, RSS_BOUND_MIB
    );
    assert!(peak < RSS_BOUND_MIB * 1024, "peak {peak} KiB");
}

#[tokio::test]
async fn webhooks_reach_loopback_only_with_the_test_only_flag() {
    let (sender, mut received) = tokio::sync::mpsc::unbounded_channel::<Value>();
    let receiver = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |body: axum::Json<Value>| {
            let _ = sender.send(body.0);
            async { "ok" }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let hook = format!("http://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, receiver).await });
    let with_push = |hook: &str| {
        let mut params = message("hi".into());
        params["configuration"] = json!({"taskPushNotificationConfig": {"url": hook}});
        params
    };

    let strict = Server::start(&[]).await;
    let refused = strict.call("SendMessage", with_push(&hook)).await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");

    let allowing = Server::start(&["--allow-private-webhooks"]).await;
    let sent = allowing.call("SendMessage", with_push(&hook)).await;
    assert_eq!(
        sent["result"]["task"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );
    let event = tokio::time::timeout(Duration::from_secs(10), received.recv())
        .await
        .unwrap()
        .unwrap();
    // Each event is delivered on its own, so under load any of the task's events (a status or
    // an artifact update, or the task itself) may arrive first; each names the task.
    let payload = event.as_object().and_then(|kinds| kinds.values().next());
    let task_id = payload.and_then(|payload| payload.get("taskId").or_else(|| payload.get("id")));
    assert_eq!(task_id, Some(&sent["result"]["task"]["id"]), "{event}");
}
