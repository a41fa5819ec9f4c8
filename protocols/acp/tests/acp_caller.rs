//! The caller reaches an ACP agent over the remote transport: the agent reads the principal the
//! hardening authenticated and the headers of the request that opened the connection from its
//! context, and a connection one subject opened is unknown to another (POST, GET and DELETE
//! naming it). Real sockets, two subjects with bearer tokens.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod acp_support;

use std::time::Duration;

use protocols_acp::remote::{AcpEndpoint, RemoteConfig};
use protocols_acp::serve::AgentV1;
use protocols_acp::{AcpAgentServer, AcpConnection, Extensions};
use protocols_runtime::handler::{Context, Reply};
use protocols_runtime::hardening::{AuthPolicy, BearerAuthenticator, HardeningConfig, Principal};
use protocols_runtime::jsonrpc::{ErrorObject, to_raw};
use protocols_runtime::server::Server;
use protocols_testkit::{self as testkit, SseReader, event_stream_get, json_rpc_post};
use serde_json::value::RawValue;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

const PATIENCE: Duration = Duration::from_secs(10);

/// `_test/whoami` answers with the subject and the `x-tenant` header its context carries.
struct WhoAmI;

impl Extensions for WhoAmI {
    async fn ext_method(
        &self,
        method: &str,
        _params: Option<&RawValue>,
        cx: &Context<AcpConnection>,
    ) -> Reply {
        if method != "_test/whoami" {
            return Err(ErrorObject::method_not_found());
        }
        let subject = cx
            .principal()
            .map(|principal| principal.subject.to_string());
        let tenant = cx
            .headers()
            .get("x-tenant")
            .and_then(|value| value.to_str().ok());
        Ok(to_raw(&json!({"subject": subject, "tenant": tenant})).unwrap())
    }
}

struct Running {
    url: String,
    stop: CancellationToken,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

async fn serve() -> Running {
    let hardening = HardeningConfig::new()
        .rate_limit(None)
        .authenticator(
            BearerAuthenticator::new()
                .with_token("alice-token", Principal::new("alice", Vec::new()))
                .with_token("bob-token", Principal::new("bob", Vec::new())),
        )
        .auth_policy(AuthPolicy::RequireScopes(Vec::new()));
    let builder = Server::builder().hardening(hardening);
    let agent =
        AcpAgentServer::new(AgentV1(acp_support::TestAgent::default())).with_extensions(WhoAmI);
    let endpoint = AcpEndpoint::new(agent, RemoteConfig::default());
    let server = builder
        .routes(endpoint.into_routes("/acp"))
        .build()
        .unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/acp", listener.local_addr().unwrap());
    let stop = CancellationToken::new();
    let stopped = stop.clone();
    tokio::spawn(server.serve_until(listener, async move { stopped.cancelled().await }));
    Running { url, stop }
}

/// One subject's connection: its token, and the id `initialize` named.
struct Opened {
    http: reqwest::Client,
    url: String,
    bearer: String,
    connection: String,
}

async fn open(running: &Running, token: &str, tenant: &str) -> Opened {
    let http = reqwest::Client::new();
    let bearer = format!("Bearer {token}");
    let initialize = testkit::request(
        0,
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": {}}),
    );
    let headers = [("authorization", bearer.as_str()), ("x-tenant", tenant)];
    let response = json_rpc_post(
        &http,
        &running.url,
        "application/json",
        headers,
        &initialize,
    )
    .send()
    .await
    .unwrap();
    assert_eq!(response.status(), 200);
    let connection = response.headers()["acp-connection-id"]
        .to_str()
        .unwrap()
        .to_owned();
    Opened {
        http,
        url: running.url.clone(),
        bearer,
        connection,
    }
}

impl Opened {
    /// A POST naming this connection, with `bearer` as the credential.
    async fn post_as(&self, bearer: &str, message: &Value) -> reqwest::Response {
        let headers = [
            ("authorization", bearer),
            ("acp-connection-id", self.connection.as_str()),
        ];
        json_rpc_post(&self.http, &self.url, "application/json", headers, message)
            .send()
            .await
            .unwrap()
    }

    async fn get_as(&self, bearer: &str) -> reqwest::Response {
        let headers = [
            ("authorization", bearer),
            ("acp-connection-id", self.connection.as_str()),
        ];
        event_stream_get(&self.http, &self.url, headers)
            .send()
            .await
            .unwrap()
    }

    async fn delete_as(&self, bearer: &str) -> reqwest::Response {
        self.http
            .delete(&self.url)
            .header("authorization", bearer)
            .header("acp-connection-id", &self.connection)
            .send()
            .await
            .unwrap()
    }

    /// `_test/whoami` on this connection, its answer read from the connection's stream.
    async fn whoami(&self) -> Value {
        let response = self.get_as(&self.bearer).await;
        assert_eq!(response.status(), 200);
        let mut stream = SseReader::new(response);
        let call = testkit::request(1, "_test/whoami", json!({}));
        assert_eq!(self.post_as(&self.bearer, &call).await.status(), 202);
        let answer = tokio::time::timeout(PATIENCE, stream.next_json())
            .await
            .unwrap();
        answer.expect("an answer before the stream ended").1["result"].clone()
    }
}

#[tokio::test]
async fn an_acp_agent_reads_its_callers_principal_and_headers_over_the_remote_transport() {
    let running = serve().await;
    for (token, tenant, subject) in [
        ("alice-token", "acme", "alice"),
        ("bob-token", "globex", "bob"),
    ] {
        let opened = open(&running, token, tenant).await;
        assert_eq!(
            opened.whoami().await,
            json!({"subject": subject, "tenant": tenant})
        );
    }
}

#[tokio::test]
async fn a_connection_another_subject_opened_is_unknown_to_post_get_and_delete() {
    let running = serve().await;
    let alices = open(&running, "alice-token", "acme").await;
    let bob = "Bearer bob-token";
    let call = testkit::request(1, "_test/whoami", json!({}));
    let posted = alices.post_as(bob, &call).await;
    let streamed = alices.get_as(bob).await;
    let deleted = alices.delete_as(bob).await;
    for (what, response) in [("post", posted), ("get", streamed), ("delete", deleted)] {
        assert_eq!(response.status(), 404, "{what}");
    }
    // Alice's connection survived bob's DELETE.
    assert_eq!(alices.whoami().await["subject"], "alice");
}
