//! Identity end to end against the real `all-protocols` binary started with
//! `--auth-jwks/--auth-issuer/--auth-audience/--auth-scope/--cors-origin`, tokens minted by a
//! test issuer whose JWKS is served on a loopback port: our MCP client and an A2A client with
//! bearer tokens read `whoami`, refusals carry the MCP authorization spec's challenges, A2A
//! tasks stay their owner's; the official Python SDK client and a headless Chromium page (the
//! browser as the client, over CORS) run when `scripts/identity-clients.sh` provides them.

// Helpers of these tests fail the test the way an assertion does.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use std::net::SocketAddr;
use std::process::Stdio;
use std::time::Duration;

use http::{HeaderMap, HeaderValue, header};
use protocols_a2a::client::{self, a2a_error};
use protocols_a2a::error::A2aError;
use protocols_a2a::executor::text_part;
use protocols_a2a::v1::types::{
    GetTaskRequest, Message, Role, SendMessageRequest, SendMessageResponsePayload, Task, TaskState,
};
use protocols_mcp::client::{Callbacks, HttpClient, HttpOptions};
use protocols_runtime::ErrorObject;
use protocols_testkit::issuer::{SigningKey, TestIssuer};
use serde_json::{Value, json};
use tokio::process::{Child, Command};
use tokio::sync::mpsc;

const SCOPE: &str = "agents";

/// `all-protocols` running on a loopback port, killed when dropped.
struct Served {
    address: SocketAddr,
    _child: Child,
}

impl Served {
    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.address)
    }

    /// The resource identifier the server is started with, which tokens name as `aud`.
    fn audience(&self) -> String {
        self.url("")
    }
}

fn free_address() -> SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap()
}

/// Starts the binary with `arguments` after `--listen`; waits until it accepts connections.
async fn serve(address: SocketAddr, arguments: &[String]) -> Served {
    let child = Command::new(env!("CARGO_BIN_EXE_all-protocols"))
        .arg("--listen")
        .arg(address.to_string())
        .args(arguments)
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    assert!(
        protocols_testkit::listening_within(address, Duration::from_secs(5)).await,
        "all-protocols never listened on {address}"
    );
    Served {
        address,
        _child: child,
    }
}

/// [`protected_at`] a free address.
async fn protected(issuer: &TestIssuer, cors_origins: &[String]) -> Served {
    protected_at(issuer, free_address(), cors_origins).await
}

async fn issuer() -> TestIssuer {
    TestIssuer::start(SigningKey::es256("k1")).await
}

fn no_callbacks() -> Callbacks {
    Callbacks::new(|_method, _params| async { Err(ErrorObject::method_not_found()) })
}

/// Our MCP client calling `whoami`, with `token` as its bearer credential when there is one.
async fn mcp_whoami(served: &Served, token: Option<&str>) -> String {
    let mut options = HttpOptions::default();
    if let Some(token) = token {
        let bearer = HeaderValue::from_str(&format!("Bearer {token}")).unwrap();
        options = options.header(header::AUTHORIZATION, bearer);
    }
    let client = HttpClient::with_options(served.url("/mcp"), no_callbacks(), options);
    client.connect(json!({})).await.unwrap();
    let called = client
        .request(
            "tools/call",
            Some(json!({"name": "whoami", "arguments": {}})),
        )
        .await
        .unwrap();
    assert_eq!(
        called["content"].as_array().map(Vec::len),
        Some(1),
        "{called}"
    );
    called["content"][0]["text"].as_str().unwrap().to_owned()
}

fn bearer_client(token: Option<&str>) -> reqwest::Client {
    let mut headers = HeaderMap::new();
    if let Some(token) = token {
        let bearer = HeaderValue::from_str(&format!("Bearer {token}")).unwrap();
        headers.insert(header::AUTHORIZATION, bearer);
    }
    reqwest::Client::builder()
        .default_headers(headers)
        .build()
        .unwrap()
}

fn whoami_message() -> SendMessageRequest {
    SendMessageRequest {
        configuration: None,
        message: Message {
            message_id: uuid_like(),
            parts: vec![text_part("whoami")],
            role: Role::RoleUser,
            ..Message::default()
        },
        metadata: Default::default(),
        tenant: None,
    }
}

fn uuid_like() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!("m{}", NEXT.fetch_add(1, Ordering::Relaxed))
}

/// An A2A `whoami` over JSON-RPC with `token`; the completed task.
async fn a2a_whoami(served: &Served, token: Option<&str>) -> Task {
    let http = bearer_client(token);
    let card = client::discover(&http, &served.url("")).await.unwrap();
    let agent = client::jsonrpc_agent(&http, &card).unwrap();
    let answer = agent.send_message(whoami_message()).await.unwrap();
    let SendMessageResponsePayload::Task(task) = answer.payload else {
        panic!("a task")
    };
    assert_eq!(task.status.state, TaskState::TaskStateCompleted);
    task
}

fn artifact_text(task: &Task) -> String {
    let part = serde_json::to_value(&task.artifacts[0].parts[0]).unwrap();
    part["text"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn our_mcp_client_and_an_a2a_client_with_bearer_tokens_read_their_subject_from_whoami() {
    let issuer = issuer().await;
    let served = protected(&issuer, &[]).await;
    let alice = issuer.token("alice", &served.audience(), &[SCOPE]);
    let bob = issuer.token("bob", &served.audience(), &[SCOPE]);
    assert_eq!(mcp_whoami(&served, Some(&alice)).await, "subject: alice");
    assert_eq!(mcp_whoami(&served, Some(&bob)).await, "subject: bob");
    let task = a2a_whoami(&served, Some(&alice)).await;
    assert_eq!(artifact_text(&task), "subject: alice");
    // The task is alice's: bob's token does not find it.
    let http = bearer_client(Some(&bob));
    let card = client::discover(&http, &served.url("")).await.unwrap();
    let agent = client::jsonrpc_agent(&http, &card).unwrap();
    let get = GetTaskRequest {
        history_length: None,
        id: task.id.clone(),
        tenant: None,
    };
    let error = agent.get_task(get).await.unwrap_err();
    assert!(
        matches!(a2a_error(&error), Some(A2aError::TaskNotFound(_))),
        "{error}"
    );
}

#[tokio::test]
async fn without_auth_flags_whoami_answers_anonymous_over_mcp_and_a2a() {
    let served = serve(free_address(), &[]).await;
    assert_eq!(mcp_whoami(&served, None).await, "subject: anonymous");
    let task = a2a_whoami(&served, None).await;
    assert_eq!(artifact_text(&task), "subject: anonymous");
}

async fn initialize(served: &Served, token: Option<&str>) -> reqwest::Response {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "identity-test", "version": "1"}}});
    bearer_client(token)
        .post(served.url("/mcp"))
        .header(header::ACCEPT, "application/json, text/event-stream")
        .json(&body)
        .send()
        .await
        .unwrap()
}

fn challenge(response: &reqwest::Response) -> String {
    let value = response.headers().get(header::WWW_AUTHENTICATE);
    value.and_then(|v| v.to_str().ok()).unwrap_or("").to_owned()
}

#[tokio::test]
async fn refusals_carry_the_spec_challenges_and_the_metadata_names_the_issuer() {
    let issuer = issuer().await;
    let served = protected(&issuer, &[]).await;
    let metadata_url = served.url("/.well-known/oauth-protected-resource");
    let names_metadata = format!("resource_metadata=\"{metadata_url}\"");
    let asked = |response: &reqwest::Response| {
        let challenge = challenge(response);
        assert!(challenge.starts_with("Bearer "), "{challenge}");
        assert!(challenge.contains(&names_metadata), "{challenge}");
        assert!(
            !challenge.contains("error="),
            "no token, no error: {challenge}"
        );
    };

    let missing = initialize(&served, None).await;
    assert_eq!(missing.status(), 401);
    asked(&missing);
    assert!(missing.headers().contains_key("x-content-type-options"));
    let body: Value = missing.json().await.unwrap();
    assert!(body["error"]["code"].is_i64(), "{body}");

    let forged = SigningKey::es256("k1").sign(&issuer.claims("eve", &served.audience(), &[SCOPE]));
    let invalid = initialize(&served, Some(&forged)).await;
    assert_eq!(invalid.status(), 401);
    let rejected = challenge(&invalid);
    assert!(rejected.contains("error=\"invalid_token\""), "{rejected}");
    assert!(rejected.contains(&names_metadata), "{rejected}");

    let narrow = issuer.token("carol", &served.audience(), &["other"]);
    let short = initialize(&served, Some(&narrow)).await;
    assert_eq!(short.status(), 403);
    let step_up = challenge(&short);
    assert!(
        step_up.contains("error=\"insufficient_scope\""),
        "{step_up}"
    );
    assert!(step_up.contains(&format!("scope=\"{SCOPE}\"")), "{step_up}");
    assert!(short.headers().contains_key("x-content-type-options"));

    // The A2A routes are refused the same way.
    let a2a = bearer_client(None)
        .get(served.url("/.well-known/agent-card.json"))
        .send()
        .await
        .unwrap();
    assert_eq!(a2a.status(), 401);
    asked(&a2a);

    let metadata: Value = reqwest::get(&metadata_url)
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(metadata["resource"], served.audience());
    assert_eq!(metadata["authorization_servers"], json!([issuer.issuer]));
    assert_eq!(metadata["scopes_supported"], json!([SCOPE]));
}

/// A tool this test needs, named by the environment `scripts/identity-clients.sh` sets; `None`
/// (the test passes without running) unless `IDENTITY_CLIENTS_REQUIRED` is set, when its absence
/// fails the test.
fn tool(variable: &str) -> Option<String> {
    match std::env::var(variable) {
        Ok(path) => Some(path),
        Err(_) if std::env::var_os("IDENTITY_CLIENTS_REQUIRED").is_some() => {
            panic!("{variable} is required (scripts/identity-clients.sh sets it)")
        }
        Err(_) => {
            eprintln!("skipped: {variable} is unset; run scripts/identity-clients.sh");
            None
        }
    }
}

#[tokio::test]
async fn the_official_python_sdk_client_with_a_bearer_token_calls_whoami() {
    let Some(python) = tool("IDENTITY_PYTHON") else {
        return;
    };
    let issuer = issuer().await;
    let served = protected(&issuer, &[]).await;
    let token = issuer.token("dana", &served.audience(), &[SCOPE]);
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/python/whoami_client.py");
    let run = |token: String| {
        Command::new(&python)
            .arg(script)
            .arg(served.url("/mcp"))
            .arg(token)
            .stderr(Stdio::inherit())
            .output()
    };
    let output = tokio::time::timeout(Duration::from_secs(60), run(token))
        .await
        .unwrap()
        .unwrap();
    assert!(output.status.success(), "python client failed");
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim(),
        "subject: dana"
    );
    // Without a valid token the SDK client does not get in.
    let refused = tokio::time::timeout(Duration::from_secs(60), run("forged".to_owned()))
        .await
        .unwrap()
        .unwrap();
    assert!(!refused.status.success());
}

/// A page server on its own loopback origin: `/` is the page, whose script reports what it
/// read to `/report` (same origin), where the test collects it.
async fn page_server(mcp_url: String, token: String) -> (String, mpsc::UnboundedReceiver<String>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let origin = format!("http://{}", listener.local_addr().unwrap());
    let (reports, reported) = mpsc::unbounded_channel();
    let page = PAGE
        .replace("MCP_URL", &serde_json::to_string(&mcp_url).unwrap())
        .replace("TOKEN", &serde_json::to_string(&token).unwrap());
    let router = axum::Router::new()
        .route(
            "/",
            axum::routing::get(move || async move { axum::response::Html(page) }),
        )
        .route(
            "/report",
            axum::routing::post(move |body: String| {
                let _ = reports.send(body);
                async { "ok" }
            }),
        );
    tokio::spawn(async move { axum::serve(listener, router).await });
    (origin, reported)
}

/// Initializes a session with `fetch`, reads `Mcp-Session-Id` from the answer, calls `whoami`
/// in that session and reports the tool's text (or the error that stopped it).
const PAGE: &str = r#"<!doctype html><html><body><script>
const url = MCP_URL, token = TOKEN;
const headers = (session) => Object.assign({
  "authorization": "Bearer " + token,
  "content-type": "application/json",
  "accept": "application/json, text/event-stream",
  "mcp-protocol-version": "2025-11-25",
}, session ? {"mcp-session-id": session} : {});
const report = (text) => fetch("/report", {method: "POST", body: text});
(async () => {
  const init = await fetch(url, {method: "POST", headers: headers(), body: JSON.stringify({
    jsonrpc: "2.0", id: 1, method: "initialize", params: {protocolVersion: "2025-11-25",
    capabilities: {}, clientInfo: {name: "browser", version: "1"}}})});
  const session = init.headers.get("mcp-session-id");
  if (!session) { return report("no session id readable, status " + init.status); }
  await init.text();
  await fetch(url, {method: "POST", headers: headers(session),
    body: JSON.stringify({jsonrpc: "2.0", method: "notifications/initialized"})});
  const call = await fetch(url, {method: "POST", headers: headers(session), body: JSON.stringify({
    jsonrpc: "2.0", id: 2, method: "tools/call", params: {name: "whoami", arguments: {}}})});
  const text = await call.text();
  const json = JSON.parse(text.includes("data:") ? text.split("data:").pop() : text);
  await report(json.result.content[0].text);
})().catch((error) => report("error: " + error));
</script></body></html>"#;

/// Chromium headless loading `page`, until it reports or a minute passes.
async fn browse(
    chromium: &str,
    page: &str,
    reported: &mut mpsc::UnboundedReceiver<String>,
) -> String {
    let profile = tempfile_dir();
    let mut browser = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--no-first-run",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(page)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let report = tokio::time::timeout(Duration::from_secs(60), reported.recv()).await;
    let _ = browser.kill().await;
    let _ = std::fs::remove_dir_all(&profile);
    report.expect("the page reported").expect("a report")
}

fn tempfile_dir() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "identity-chromium-{}-{}",
        std::process::id(),
        uuid_like()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[tokio::test]
async fn a_browser_page_from_a_listed_origin_calls_whoami_and_one_from_an_unlisted_origin_is_refused()
 {
    let Some(chromium) = tool("IDENTITY_CHROMIUM") else {
        return;
    };
    let issuer = issuer().await;
    let address = free_address();
    let audience = format!("http://{address}");
    let token = issuer.token("erin", &audience, &[SCOPE]);
    let mcp_url = format!("{audience}/mcp");
    let (listed, mut listed_reports) = page_server(mcp_url.clone(), token.clone()).await;
    let (unlisted, mut unlisted_reports) = page_server(mcp_url, token).await;
    let _served = protected_at(&issuer, address, std::slice::from_ref(&listed)).await;

    let answer = browse(&chromium, &format!("{listed}/"), &mut listed_reports).await;
    assert_eq!(answer, "subject: erin");
    let refused = browse(&chromium, &format!("{unlisted}/"), &mut unlisted_reports).await;
    assert!(
        refused.starts_with("error: "),
        "an unlisted origin read: {refused}"
    );
}

/// The server at `address`, protected by `issuer`'s tokens for that address, requiring [`SCOPE`],
/// letting pages of `cors_origins` call.
async fn protected_at(issuer: &TestIssuer, address: SocketAddr, cors_origins: &[String]) -> Served {
    let mut arguments = vec![
        "--auth-jwks".to_owned(),
        issuer.jwks_url(),
        "--auth-issuer".to_owned(),
        issuer.issuer.clone(),
        "--auth-audience".to_owned(),
        format!("http://{address}"),
        "--auth-scope".to_owned(),
        SCOPE.to_owned(),
    ];
    for origin in cors_origins {
        arguments.extend(["--cors-origin".to_owned(), origin.clone()]);
    }
    serve(address, &arguments).await
}
