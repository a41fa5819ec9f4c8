//! ACP's remote transport over real sockets, checked against upstream's Streamable HTTP &
//! WebSocket RFD: `initialize` answered 200 with JSON and `Acp-Connection-Id`, every later
//! `POST` 202 with its answer on a `GET` stream (the connection's, or the session's), the
//! agent's calls to the client delivered on those streams and answered by `POST`, the RFD's
//! status codes, the WebSocket upgrade, a dropped typed call cancelling the agent's handler, and
//! streams ending cleanly when the server shuts down.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod acp_support;

use std::sync::Arc;
use std::time::Duration;

use acp_support::{Served, serve_remote, test_server};
use futures::{SinkExt, StreamExt};
use protocols_acp::client::AcpClient;
use protocols_acp::remote::RemoteConfig;
use protocols_acp::serve::{AgentV1, ClientV1};
use protocols_acp::{AcpAgentServer, AcpConnection, Extensions};
use protocols_runtime::handler::{Context, Reply};
use protocols_runtime::jsonrpc::ErrorObject;
use protocols_testkit::{self as testkit, SseReader, event_stream_get, json_rpc_post};
use serde_json::value::RawValue;
use serde_json::{Value, json};
use tokio::sync::Notify;
use tokio_tungstenite::tungstenite::Message as WsMessage;

/// Generous bound on anything that should happen at once; only a hang reaches it.
const PATIENCE: Duration = Duration::from_secs(10);
/// The `accept` of a POST: the RFD answers `initialize` with JSON and everything else with 202.
const JSON: &str = "application/json";

// ---------------------------------------------------------------------------------------------
// A raw client speaking the RFD's wire, to check it message by message.

struct Raw {
    http: reqwest::Client,
    url: String,
    connection: String,
}

/// What `initialize` asks: version 1, a client that reads files.
fn initialize_request() -> Value {
    testkit::request(
        0,
        "initialize",
        json!({"protocolVersion": 1,
               "clientCapabilities": {"fs": {"readTextFile": true, "writeTextFile": false}}}),
    )
}

impl Raw {
    async fn initialize(url: &str) -> (Self, Value) {
        let http = reqwest::Client::new();
        let response = json_rpc_post(&http, url, JSON, [], &initialize_request())
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        assert!(
            response.headers()["content-type"]
                .to_str()
                .unwrap()
                .starts_with("application/json")
        );
        let connection = response.headers()["acp-connection-id"]
            .to_str()
            .unwrap()
            .to_owned();
        let answer: Value = response.json().await.unwrap();
        let raw = Self {
            http,
            url: url.to_owned(),
            connection,
        };
        (raw, answer)
    }

    async fn post(&self, message: Value, session: Option<&str>) -> reqwest::Response {
        let session = session.map(|session| ("acp-session-id", session));
        self.post_with(message, session.as_slice()).await
    }

    /// A `POST` on the connection with these extra headers.
    async fn post_with(&self, message: Value, headers: &[(&str, &str)]) -> reqwest::Response {
        let on_connection = [("acp-connection-id", self.connection.as_str())];
        json_rpc_post(
            &self.http,
            &self.url,
            JSON,
            on_connection.into_iter().chain(headers.iter().copied()),
            &message,
        )
        .send()
        .await
        .unwrap()
    }

    /// `session/new` answered on the connection's stream; its session's stream opened.
    async fn new_session(&self, connection_stream: &mut SseReader) -> (String, SseReader) {
        let created = self
            .post(
                json!({"jsonrpc": "2.0", "id": 1, "method": "session/new",
                       "params": {"cwd": "/", "mcpServers": []}}),
                None,
            )
            .await;
        assert_eq!(created.status(), 202);
        let session = expect(connection_stream).await["result"]["sessionId"]
            .as_str()
            .unwrap()
            .to_owned();
        let stream = self.stream(Some(&session)).await;
        (session, stream)
    }

    async fn get(&self, session: Option<&str>) -> reqwest::Response {
        let on_connection = [("acp-connection-id", self.connection.as_str())];
        let session = session.map(|session| ("acp-session-id", session));
        event_stream_get(
            &self.http,
            &self.url,
            on_connection.into_iter().chain(session),
        )
        .send()
        .await
        .unwrap()
    }

    /// `DELETE` of the connection, with these extra headers.
    async fn delete(&self, headers: &[(&str, &str)]) -> reqwest::Response {
        let request = self
            .http
            .delete(&self.url)
            .header("acp-connection-id", &self.connection);
        headers
            .iter()
            .fold(request, |request, (name, value)| {
                request.header(*name, *value)
            })
            .send()
            .await
            .unwrap()
    }

    async fn stream(&self, session: Option<&str>) -> SseReader {
        let response = self.get(session).await;
        assert_eq!(response.status(), 200);
        testkit::sse::assert_event_stream(&response);
        SseReader::new(response)
    }
}

/// The next message on `stream`, which must come before the stream ends.
async fn expect(stream: &mut SseReader) -> Value {
    stream
        .next_json()
        .await
        .expect("a message before the stream ended")
        .1
}

/// Whether `stream` ends (cleanly: a reset or a stall fails the test) before another message.
async fn ends(stream: &mut SseReader) -> bool {
    stream.next_json().await.is_none()
}

#[tokio::test]
async fn answers_and_agent_calls_arrive_on_the_connection_and_session_get_streams() {
    let running = serve_remote(test_server(), RemoteConfig::default()).await;
    let (raw, initialized) = Raw::initialize(&running.url()).await;
    assert_eq!(initialized["id"], 0);
    assert_eq!(initialized["result"]["protocolVersion"], 1);
    assert_eq!(initialized["result"]["connectionId"], raw.connection);

    let mut connection_stream = raw.stream(None).await;
    let created = raw
        .post(
            json!({"jsonrpc": "2.0", "id": 1, "method": "session/new",
                     "params": {"cwd": "/", "mcpServers": []}}),
            None,
        )
        .await;
    assert_eq!(created.status(), 202);
    assert!(created.bytes().await.unwrap().is_empty());
    let created = expect(&mut connection_stream).await;
    assert_eq!(created["id"], 1);
    let session = created["result"]["sessionId"].as_str().unwrap().to_owned();

    let mut session_stream = raw.stream(Some(&session)).await;
    let prompt = raw
        .post(json!({"jsonrpc": "2.0", "id": 2, "method": "session/prompt",
                     "params": {"sessionId": session, "prompt": [{"type": "text", "text": "read /notes.txt"}]}}),
              Some(&session))
        .await;
    assert_eq!(prompt.status(), 202);

    // The agent's calls come on the session's stream; each answer is a POST of its own.
    let permission = expect(&mut session_stream).await;
    assert_eq!(permission["method"], "session/request_permission");
    assert_eq!(permission["params"]["sessionId"], session.as_str());
    let allow = permission["params"]["options"]
        .as_array()
        .unwrap()
        .iter()
        .find(|option| option["kind"] == "allow_once")
        .unwrap()["optionId"]
        .clone();
    let answered = raw
        .post(
            json!({"jsonrpc": "2.0", "id": permission["id"],
                     "result": {"outcome": {"outcome": "selected", "optionId": allow}}}),
            Some(&session),
        )
        .await;
    assert_eq!(answered.status(), 202);

    let read = expect(&mut session_stream).await;
    assert_eq!(read["method"], "fs/read_text_file");
    assert_eq!(read["params"]["path"], "/notes.txt");
    let answered = raw
        .post(
            json!({"jsonrpc": "2.0", "id": read["id"], "result": {"content": "over the stream"}}),
            Some(&session),
        )
        .await;
    assert_eq!(answered.status(), 202);

    let update = expect(&mut session_stream).await;
    assert_eq!(update["method"], "session/update");
    assert_eq!(
        update["params"]["update"]["content"]["text"],
        "over the stream"
    );
    let done = expect(&mut session_stream).await;
    assert_eq!(done["id"], 2);
    assert_eq!(done["result"]["stopReason"], "end_turn");

    let deleted = raw.delete(&[]).await;
    assert_eq!(deleted.status(), 202);
    assert!(ends(&mut session_stream).await, "DELETE ends the streams");
    assert!(ends(&mut connection_stream).await);
    assert_eq!(raw.get(None).await.status(), 404);
}

#[tokio::test]
async fn requests_the_rfd_refuses_get_its_status_codes() {
    let running = serve_remote(test_server(), RemoteConfig::default()).await;
    let url = running.url();
    let http = reqwest::Client::new();
    let prompt = json!({"jsonrpc": "2.0", "id": 5, "method": "session/prompt",
                        "params": {"sessionId": "s", "prompt": []}})
    .to_string();
    let status = |request: reqwest::RequestBuilder| async move {
        request.send().await.unwrap().status().as_u16()
    };
    let json_post = || http.post(&url).header("content-type", "application/json");

    // POST: no connection (and not initialize), an unknown one, a batch, not JSON.
    assert_eq!(status(json_post().body(prompt.clone())).await, 400);
    assert_eq!(
        status(
            json_post()
                .header("acp-connection-id", "nope")
                .body(prompt.clone())
        )
        .await,
        404
    );
    assert_eq!(status(json_post().body(format!("[{prompt}]"))).await, 400);
    assert_eq!(
        status(
            http.post(&url)
                .header("content-type", "text/plain")
                .body(prompt.clone())
        )
        .await,
        415
    );
    // GET: no connection, an unknown one, not accepting an event stream.
    let sse_get = || http.get(&url).header("accept", "text/event-stream");
    assert_eq!(status(sse_get()).await, 400);
    assert_eq!(
        status(sse_get().header("acp-connection-id", "nope")).await,
        404
    );
    // DELETE without a connection.
    assert_eq!(status(http.delete(&url)).await, 400);

    let (raw, _) = Raw::initialize(&url).await;
    assert_eq!(
        status(
            http.get(&url)
                .header("accept", "application/json")
                .header("acp-connection-id", &raw.connection)
        )
        .await,
        406
    );
    assert_eq!(raw.get(Some("never-created")).await.status(), 404);
    // A session-scoped message must name its session in the header too, and the same one.
    assert_eq!(
        raw.post(serde_json::from_str(&prompt).unwrap(), None)
            .await
            .status(),
        400
    );
    assert_eq!(
        raw.post(serde_json::from_str(&prompt).unwrap(), Some("other"))
            .await
            .status(),
        400
    );
}

#[tokio::test]
async fn an_idle_connection_is_ended_and_its_id_is_then_unknown() {
    let config = RemoteConfig::default().idle_timeout(Duration::from_millis(100));
    let running = serve_remote(test_server(), config).await;
    let (raw, _) = Raw::initialize(&running.url()).await;
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        tokio::time::sleep(Duration::from_millis(50)).await;
        let status = raw
            .post(json!({"jsonrpc": "2.0", "method": "_test/ping"}), None)
            .await
            .status();
        if status == 404 {
            break;
        }
        assert_eq!(status, 202);
        // Posting keeps it alive: stop posting and wait for the reaper.
        tokio::time::sleep(Duration::from_millis(400)).await;
        assert!(
            tokio::time::Instant::now() < deadline,
            "the idle connection was ended"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// The typed client: a dropped call cancels the agent's handler.

/// `_test/hang` waits until its request is cancelled and says so.
#[derive(Clone)]
struct Hang {
    observed: Arc<Notify>,
}

impl Extensions for Hang {
    async fn ext_method(
        &self,
        method: &str,
        _params: Option<&RawValue>,
        cx: &Context<AcpConnection>,
    ) -> Reply {
        if method != "_test/hang" {
            return Err(ErrorObject::method_not_found());
        }
        cx.cancellation().cancelled().await;
        self.observed.notify_one();
        Err(ErrorObject::new(-32800, "cancelled"))
    }
}

#[tokio::test]
async fn dropping_a_call_over_http_cancels_the_agents_handler() {
    let observed = Arc::new(Notify::new());
    let agent =
        AcpAgentServer::new(AgentV1(acp_support::TestAgent::default())).with_extensions(Hang {
            observed: Arc::clone(&observed),
        });
    let running = serve_remote(agent, RemoteConfig::default()).await;
    let editor = acp_support::TestEditor::default();
    let client = AcpClient::connect_http(ClientV1(editor), running.url());
    let initialize = json!({"protocolVersion": 1, "clientCapabilities": {}});
    client.call_raw("initialize", &initialize).await.unwrap();

    let params = json!({});
    let call = client.call_raw("_test/hang", &params);
    let abandoned = tokio::time::timeout(Duration::from_millis(200), call).await;
    assert!(abandoned.is_err(), "the handler was still waiting");
    tokio::time::timeout(PATIENCE, observed.notified())
        .await
        .expect("the handler saw its request cancelled");
    client.close().await.unwrap();
}

// ---------------------------------------------------------------------------------------------
// WebSocket.

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

async fn receive(socket: &mut Socket) -> Value {
    loop {
        let frame = tokio::time::timeout(PATIENCE, socket.next())
            .await
            .expect("a frame in time")
            .expect("the socket is open")
            .unwrap();
        if let WsMessage::Text(text) = frame {
            return serde_json::from_str(text.as_str()).unwrap();
        }
    }
}

async fn send(socket: &mut Socket, message: Value) {
    socket
        .send(WsMessage::Text(message.to_string().into()))
        .await
        .unwrap();
}

#[tokio::test]
async fn a_websocket_upgrade_names_the_connection_and_carries_the_whole_conversation() {
    let running = serve_remote(test_server(), RemoteConfig::default()).await;
    let (mut socket, upgraded) = tokio_tungstenite::connect_async(running.ws_url())
        .await
        .unwrap();
    assert_eq!(upgraded.status(), 101);
    assert!(upgraded.headers().contains_key("acp-connection-id"));

    // Pretty-printed JSON in a frame is still one message; binary frames are ignored.
    socket
        .send(WsMessage::Binary(b"ignored".to_vec().into()))
        .await
        .unwrap();
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": 1,
        "clientCapabilities": {"fs": {"readTextFile": true, "writeTextFile": false}}
    }});
    socket
        .send(WsMessage::Text(
            serde_json::to_string_pretty(&initialize).unwrap().into(),
        ))
        .await
        .unwrap();
    let initialized = receive(&mut socket).await;
    assert_eq!(initialized["id"], 1);
    assert_eq!(initialized["result"]["protocolVersion"], 1);

    send(
        &mut socket,
        json!({"jsonrpc": "2.0", "id": 2, "method": "session/new",
                             "params": {"cwd": "/", "mcpServers": []}}),
    )
    .await;
    let session = receive(&mut socket).await["result"]["sessionId"].clone();
    send(&mut socket, json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
                             "params": {"sessionId": session, "prompt": [{"type": "text", "text": "read /w.txt"}]}})).await;
    let permission = receive(&mut socket).await;
    assert_eq!(permission["method"], "session/request_permission");
    send(
        &mut socket,
        json!({"jsonrpc": "2.0", "id": permission["id"],
                             "result": {"outcome": {"outcome": "cancelled"}}}),
    )
    .await;
    let update = receive(&mut socket).await;
    assert_eq!(update["method"], "session/update");
    assert_eq!(
        update["params"]["update"]["content"]["text"],
        "permission denied"
    );
    let done = receive(&mut socket).await;
    assert_eq!(done["id"], 3);
    assert_eq!(done["result"]["stopReason"], "end_turn");
    socket.close(None).await.unwrap();
}

// ---------------------------------------------------------------------------------------------
// Shutdown.

#[tokio::test]
async fn at_shutdown_sse_streams_end_cleanly_and_websockets_close_going_away() {
    let mut running = serve_remote(test_server(), RemoteConfig::default()).await;
    let (raw, _) = Raw::initialize(&running.url()).await;
    let created = raw
        .post(
            json!({"jsonrpc": "2.0", "id": 1, "method": "session/new",
                     "params": {"cwd": "/", "mcpServers": []}}),
            None,
        )
        .await;
    assert_eq!(created.status(), 202);
    let mut connection_stream = raw.stream(None).await;
    let session = expect(&mut connection_stream).await["result"]["sessionId"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut session_stream = raw.stream(Some(&session)).await;
    // A turn that streams until cancelled keeps the session's stream busy.
    let slow = raw
        .post(json!({"jsonrpc": "2.0", "id": 2, "method": "session/prompt",
                     "params": {"sessionId": session, "prompt": [{"type": "text", "text": "slow"}]}}),
              Some(&session))
        .await;
    assert_eq!(slow.status(), 202);
    assert_eq!(
        expect(&mut session_stream).await["method"],
        "session/update"
    );

    let (mut socket, _) = tokio_tungstenite::connect_async(running.ws_url())
        .await
        .unwrap();

    running.stop.0.cancel();
    // Both streams end: `next` fails the test on a reset, and times out on a hang.
    while !ends(&mut session_stream).await {}
    assert!(ends(&mut connection_stream).await);
    let closing = loop {
        let frame = tokio::time::timeout(PATIENCE, socket.next())
            .await
            .expect("the socket closes in time");
        match frame {
            Some(Ok(WsMessage::Close(frame))) => break frame,
            Some(Ok(_)) => {}
            other => panic!("expected a closing frame, got {other:?}"),
        }
    };
    let closing = closing.expect("the close names its reason");
    assert_eq!(u16::from(closing.code), 1001);
    let served = tokio::time::timeout(PATIENCE, &mut running.serving).await;
    assert!(
        matches!(served, Ok(Ok(Ok(())))),
        "serve_until returned cleanly"
    );
}

#[tokio::test]
async fn the_typed_client_over_websocket_asks_permission_and_reads_through_the_editor() {
    let running = serve_remote(test_server(), RemoteConfig::default()).await;
    let editor = acp_support::TestEditor::default();
    let state = Arc::clone(&editor.0);
    let client = AcpClient::connect_websocket(ClientV1(editor), &running.ws_url())
        .await
        .unwrap();
    let initialize = json!({"protocolVersion": 1,
                            "clientCapabilities": {"fs": {"readTextFile": true, "writeTextFile": false}}});
    client.call_raw("initialize", &initialize).await.unwrap();
    let created = client
        .call_raw("session/new", &json!({"cwd": "/", "mcpServers": []}))
        .await
        .unwrap();
    let session: Value = serde_json::from_str(created.get()).unwrap();
    let prompt = json!({"sessionId": session["sessionId"],
                        "prompt": [{"type": "text", "text": "read /over/ws"}]});
    let done: Value = serde_json::from_str(
        client
            .call_raw("session/prompt", &prompt)
            .await
            .unwrap()
            .get(),
    )
    .unwrap();
    assert_eq!(done["stopReason"], "end_turn");
    assert_eq!(*state.reads.lock().unwrap(), ["/over/ws"]);
    assert_eq!(state.texts(), [acp_support::FILE_TEXT]);
    client.close().await.unwrap();
}

// ---------------------------------------------------------------------------------------------
// Session-scoped POSTs, the version header, HTTP/2.

/// Checks a refusal the way the runtime refuses: the status, a JSON-RPC error body with a null
/// id, the security headers, and none of the caller's bytes echoed.
async fn assert_refused(response: reqwest::Response, status: u16, code: i64, untrusted: &str) {
    assert_eq!(response.status(), status);
    assert_eq!(response.headers()["x-content-type-options"], "nosniff");
    assert!(
        response.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("application/json")
    );
    let body = response.text().await.unwrap();
    assert!(
        !body.contains(untrusted),
        "the refusal echoed the caller's bytes"
    );
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(body["jsonrpc"], "2.0");
    assert_eq!(body["id"], Value::Null);
    assert_eq!(body["error"]["code"], code);
}

#[tokio::test]
async fn an_answer_to_the_agents_session_call_must_name_its_session_in_acp_session_id() {
    let running = serve_remote(test_server(), RemoteConfig::default()).await;
    let (raw, _) = Raw::initialize(&running.url()).await;
    let mut connection_stream = raw.stream(None).await;
    let (session, mut session_stream) = raw.new_session(&mut connection_stream).await;
    let prompt = raw
        .post(json!({"jsonrpc": "2.0", "id": 2, "method": "session/prompt",
                     "params": {"sessionId": session, "prompt": [{"type": "text", "text": "read /a"}]}}),
              Some(&session))
        .await;
    assert_eq!(prompt.status(), 202);
    let permission = expect(&mut session_stream).await;
    assert_eq!(permission["method"], "session/request_permission");
    let reject = json!({"jsonrpc": "2.0", "id": permission["id"],
                        "result": {"outcome": {"outcome": "cancelled"}}});

    let missing = raw.post(reject.clone(), None).await;
    assert_refused(missing, 400, -32600, &session).await;
    let other = "other-<session>";
    let mismatched = raw.post(reject.clone(), Some(other)).await;
    assert_refused(mismatched, 400, -32600, other).await;

    // Refused answers never reached the agent: the call is still waiting for the right one.
    assert_eq!(raw.post(reject, Some(&session)).await.status(), 202);
    let update = expect(&mut session_stream).await;
    assert_eq!(
        update["params"]["update"]["content"]["text"],
        "permission denied"
    );
    assert_eq!(expect(&mut session_stream).await["id"], 2);
}

#[tokio::test]
async fn a_cancel_request_for_a_session_request_must_name_its_session() {
    let running = serve_remote(test_server(), RemoteConfig::default()).await;
    let (raw, _) = Raw::initialize(&running.url()).await;
    let mut connection_stream = raw.stream(None).await;
    let (session, mut session_stream) = raw.new_session(&mut connection_stream).await;
    let slow = raw
        .post(json!({"jsonrpc": "2.0", "id": 2, "method": "session/prompt",
                     "params": {"sessionId": session, "prompt": [{"type": "text", "text": "slow"}]}}),
              Some(&session))
        .await;
    assert_eq!(slow.status(), 202);
    assert_eq!(
        expect(&mut session_stream).await["method"],
        "session/update"
    );

    let cancel =
        json!({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": 2}});
    assert_refused(
        raw.post(cancel.clone(), None).await,
        400,
        -32600,
        "requestId",
    )
    .await;
    assert_eq!(raw.post(cancel, Some(&session)).await.status(), 202);
    let answer = loop {
        let message = expect(&mut session_stream).await;
        if message.get("method").is_none() {
            break message;
        }
    };
    assert_eq!(answer["id"], 2);
    assert!(answer["result"]["stopReason"] == "cancelled" || answer["error"]["code"] == -32800);
    // A connection-scoped message needs no session header.
    let list = raw
        .post(
            json!({"jsonrpc": "2.0", "id": 3, "method": "session/list", "params": {}}),
            None,
        )
        .await;
    assert_eq!(list.status(), 202);
    assert_eq!(expect(&mut connection_stream).await["id"], 3);
}

#[tokio::test]
async fn acp_protocol_version_when_sent_must_name_the_negotiated_version() {
    let running = serve_remote(test_server(), RemoteConfig::default()).await;
    let (raw, initialized) = Raw::initialize(&running.url()).await;
    assert_eq!(initialized["result"]["protocolVersion"], 1);
    let ping = json!({"jsonrpc": "2.0", "method": "_test/ping"});
    let with_version = |version: &'static str| [("acp-protocol-version", version)];

    // Absent (the RFD makes it a SHOULD) or the negotiated one: accepted.
    assert_eq!(raw.post_with(ping.clone(), &[]).await.status(), 202);
    assert_eq!(
        raw.post_with(ping.clone(), &with_version("1"))
            .await
            .status(),
        202
    );
    // Not a version, a version nobody serves, a version served but not negotiated here (or,
    // without the unstable feature, not served either); "2" is too short to check for echoes.
    for (version, echo) in [("<one>", "<one>"), ("99", "99"), ("2", "<one>")] {
        let refused = raw.post_with(ping.clone(), &with_version(version)).await;
        assert_refused(refused, 400, -32600, echo).await;
    }
    let stream = event_stream_get(
        &raw.http,
        &raw.url,
        [
            ("acp-connection-id", raw.connection.as_str()),
            ("acp-protocol-version", "99"),
        ],
    )
    .send()
    .await
    .unwrap();
    assert_refused(stream, 400, -32600, "99").await;
    let delete = raw.delete(&[("acp-protocol-version", "99")]).await;
    assert_refused(delete, 400, -32600, "99").await;
    // The refused DELETE ended nothing.
    assert_eq!(raw.post_with(ping, &with_version("1")).await.status(), 202);
}

#[tokio::test]
async fn streamable_http_is_served_over_http2_by_prior_knowledge() {
    let running = serve_remote(test_server(), RemoteConfig::default()).await;
    let http = reqwest::Client::builder()
        .http2_prior_knowledge()
        .build()
        .unwrap();
    let initialized = json_rpc_post(&http, &running.url(), JSON, [], &initialize_request())
        .send()
        .await
        .unwrap();
    assert_eq!(initialized.version(), reqwest::Version::HTTP_2);
    assert_eq!(initialized.status(), 200);
    let connection = initialized.headers()["acp-connection-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let stream = event_stream_get(
        &http,
        &running.url(),
        [("acp-connection-id", connection.as_str())],
    )
    .send()
    .await
    .unwrap();
    assert_eq!(stream.version(), reqwest::Version::HTTP_2);
    assert_eq!(stream.status(), 200);
}

// ---------------------------------------------------------------------------------------------
// Where the RFD leaves a choice: `initialize` that fails or comes again, and the resume flow.

/// Waits until the endpoint serves `count` connections.
async fn live_connections_reach(running: &Served, count: usize) {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while running.live.get() != count {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{} live connections, not {count}",
            running.live.get()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The RFD's routing answers every `initialize` POST with 200 and a JSON body; when the agent
/// refuses it, that body is the agent's JSON-RPC error, and no connection is named or kept.
#[tokio::test]
async fn a_refused_initialize_gets_the_agents_error_and_no_connection() {
    let running = serve_remote(test_server(), RemoteConfig::default()).await;
    let http = reqwest::Client::new();
    let refused = testkit::request(0, "initialize", json!({"protocolVersion": "one"}));
    let response = json_rpc_post(&http, &running.url(), JSON, [], &refused)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert!(!response.headers().contains_key("acp-connection-id"));
    let answer: Value = response.json().await.unwrap();
    assert_eq!(answer["id"], 0);
    assert_eq!(answer["error"]["code"], -32602);
    assert!(answer.get("result").is_none());
    live_connections_reach(&running, 0).await;

    // A well-formed one afterwards opens a connection as usual.
    let (_raw, initialized) = Raw::initialize(&running.url()).await;
    assert_eq!(initialized["result"]["protocolVersion"], 1);
    assert_eq!(running.live.get(), 1);
}

/// A connection negotiates once, as over stdio: a later `initialize` on it is forwarded like any
/// message (202), the agent refuses it on the connection's stream, and `Acp-Protocol-Version`
/// must still name the version the first one negotiated.
#[tokio::test]
async fn a_second_initialize_on_a_connection_is_refused_and_the_negotiated_version_stands() {
    let running = serve_remote(test_server(), RemoteConfig::default()).await;
    let (raw, initialized) = Raw::initialize(&running.url()).await;
    assert_eq!(initialized["result"]["protocolVersion"], 1);
    let mut connection_stream = raw.stream(None).await;
    let again = testkit::request(
        7,
        "initialize",
        json!({"protocolVersion": 2,
                                                           "clientCapabilities": {}}),
    );
    assert_eq!(raw.post(again, None).await.status(), 202);
    let refused = expect(&mut connection_stream).await;
    assert_eq!(refused["id"], 7);
    assert_eq!(refused["error"]["code"], -32600);

    let ping = json!({"jsonrpc": "2.0", "method": "_test/ping"});
    let negotiated = [("acp-protocol-version", "1")];
    assert_eq!(raw.post_with(ping.clone(), &negotiated).await.status(), 202);
    let asked_again = [("acp-protocol-version", "2")];
    assert_eq!(raw.post_with(ping, &asked_again).await.status(), 400);
    assert_eq!(running.live.get(), 1);
}

/// The RFD's resume flow opens the session's stream on the new connection before
/// `session/load`: a session any earlier connection created is known to every connection (the
/// stream itself is the new connection's own), while a session nobody created is 404.
#[tokio::test]
async fn a_new_connection_opens_an_earlier_sessions_stream_before_loading_it() {
    let running = serve_remote(test_server(), RemoteConfig::default()).await;
    let (first, _) = Raw::initialize(&running.url()).await;
    let mut first_stream = first.stream(None).await;
    let (session, _first_session_stream) = first.new_session(&mut first_stream).await;
    let ended = first.delete(&[]).await;
    assert_eq!(ended.status(), 202);

    let (second, _) = Raw::initialize(&running.url()).await;
    assert_ne!(second.connection, first.connection);
    assert_eq!(second.get(Some("never-created")).await.status(), 404);
    let mut session_stream = second.stream(Some(&session)).await;
    let mut connection_stream = second.stream(None).await;
    let load = json!({"jsonrpc": "2.0", "id": 1, "method": "session/load",
                      "params": {"sessionId": session, "cwd": "/", "mcpServers": []}});
    assert_eq!(second.post(load, Some(&session)).await.status(), 202);
    let loaded = expect(&mut connection_stream).await;
    assert_eq!(loaded["id"], 1);
    assert!(loaded.get("result").is_some(), "{loaded}");

    let prompt = json!({"jsonrpc": "2.0", "id": 2, "method": "session/prompt",
                        "params": {"sessionId": session,
                                   "prompt": [{"type": "text", "text": "resumed"}]}});
    assert_eq!(second.post(prompt, Some(&session)).await.status(), 202);
    let answer = loop {
        let message = expect(&mut session_stream).await;
        if message.get("method").is_none() {
            break message;
        }
        assert_eq!(message["params"]["sessionId"], session.as_str());
    };
    assert_eq!(answer["id"], 2);
    assert_eq!(answer["result"]["stopReason"], "end_turn");
}

/// An ended connection gives its place back: with room for one, a connection deleted, one
/// refused at `initialize` and one idled out each leave room for the next.
#[tokio::test]
async fn an_ended_connection_frees_its_place_under_max_connections() {
    let config = RemoteConfig::default()
        .max_connections(1)
        .idle_timeout(Duration::from_millis(200));
    let running = serve_remote(test_server(), config).await;
    let (raw, _) = Raw::initialize(&running.url()).await;
    // An open stream keeps the connection from idling out before it is deleted.
    let _stream = raw.stream(None).await;
    let http = reqwest::Client::new();
    let full = json_rpc_post(&http, &running.url(), JSON, [], &initialize_request())
        .send()
        .await
        .unwrap();
    assert_eq!(full.status(), 503, "one connection fills the endpoint");
    let deleted = raw.delete(&[]).await;
    assert_eq!(deleted.status(), 202);
    live_connections_reach(&running, 0).await;

    let refused = testkit::request(0, "initialize", json!({"protocolVersion": "one"}));
    let response = json_rpc_post(&http, &running.url(), JSON, [], &refused)
        .send()
        .await
        .unwrap();
    assert!(!response.headers().contains_key("acp-connection-id"));
    live_connections_reach(&running, 0).await;

    let (_idle, _) = Raw::initialize(&running.url()).await;
    live_connections_reach(&running, 0).await;
    let (_next, initialized) = Raw::initialize(&running.url()).await;
    assert_eq!(initialized["result"]["protocolVersion"], 1);
}

/// Closing the typed client ends its connection at the agent (a `DELETE` over Streamable HTTP,
/// the closing handshake over WebSocket), so it stops counting against `max_connections`.
#[tokio::test]
async fn closing_the_typed_client_ends_its_connection_over_http_and_websocket() {
    let running = serve_remote(test_server(), RemoteConfig::default()).await;
    let initialize = json!({"protocolVersion": 1, "clientCapabilities": {}});
    let editor = || ClientV1(acp_support::TestEditor::default());

    let over_http = AcpClient::connect_http(editor(), running.url());
    over_http.call_raw("initialize", &initialize).await.unwrap();
    assert_eq!(running.live.get(), 1);
    over_http.close().await.unwrap();
    live_connections_reach(&running, 0).await;

    let over_websocket = AcpClient::connect_websocket(editor(), &running.ws_url())
        .await
        .unwrap();
    over_websocket
        .call_raw("initialize", &initialize)
        .await
        .unwrap();
    assert_eq!(running.live.get(), 1);
    over_websocket.close().await.unwrap();
    live_connections_reach(&running, 0).await;
}

/// The security headers every response carries, with the runtime's default values.
const SECURITY_HEADERS: [(&str, &str); 6] = [
    (
        "content-security-policy",
        "default-src 'none'; frame-ancestors 'none'",
    ),
    (
        "strict-transport-security",
        "max-age=63072000; includeSubDomains",
    ),
    ("x-frame-options", "DENY"),
    ("x-content-type-options", "nosniff"),
    ("cache-control", "no-store"),
    ("referrer-policy", "no-referrer"),
];

fn assert_security_headers(response: &reqwest::Response) {
    for (name, value) in SECURITY_HEADERS {
        assert_eq!(
            response.headers().get(name).map(|v| v.to_str().unwrap()),
            Some(value),
            "{name}"
        );
    }
}

/// ACP has no batches: a JSON array is a malformed request, on a connection or without one.
#[tokio::test]
async fn a_json_array_on_acp_is_400_invalid_request_with_every_security_header() {
    let running = serve_remote(test_server(), RemoteConfig::default()).await;
    let batch = json!([initialize_request()]);
    let http = reqwest::Client::new();
    let without_connection = json_rpc_post(&http, &running.url(), JSON, [], &batch)
        .send()
        .await
        .unwrap();
    assert_security_headers(&without_connection);
    assert_refused(without_connection, 400, -32600, "initialize").await;

    let (raw, _) = Raw::initialize(&running.url()).await;
    let prompts = json!([
        {"jsonrpc": "2.0", "id": 7, "method": "session/prompt",
         "params": {"sessionId": "s", "prompt": []}}
    ]);
    let on_connection = raw.post(prompts, None).await;
    assert_security_headers(&on_connection);
    assert_refused(on_connection, 400, -32600, "session/prompt").await;
    // Nothing was lost: the connection goes on serving single messages.
    let mut connection_stream = raw.stream(None).await;
    let (session, _session_stream) = raw.new_session(&mut connection_stream).await;
    assert!(!session.is_empty());
}

/// A refusal at one of the remote transport's bounds: 503, -32013, `Retry-After`, and every
/// security header.
async fn assert_overloaded(response: reqwest::Response) {
    assert_eq!(response.headers()["retry-after"], "1");
    assert_security_headers(&response);
    assert_refused(response, 503, -32013, "session").await;
}

#[tokio::test]
async fn past_max_requests_per_connection_a_request_is_refused_503_until_an_answer_goes_out() {
    let config = RemoteConfig::default().max_requests_per_connection(1);
    let running = serve_remote(test_server(), config).await;
    let (raw, _) = Raw::initialize(&running.url()).await;
    let mut connection_stream = raw.stream(None).await;
    let (session, mut session_stream) = raw.new_session(&mut connection_stream).await;
    let prompt = |id: u64, text: &str| {
        json!({"jsonrpc": "2.0", "id": id, "method": "session/prompt",
               "params": {"sessionId": session, "prompt": [{"type": "text", "text": text}]}})
    };
    let slow = raw.post(prompt(10, "slow"), Some(&session)).await;
    assert_eq!(slow.status(), 202);
    assert_overloaded(raw.post(prompt(11, "hi"), Some(&session)).await).await;
    // A notification owes no answer, so it is taken even at the bound.
    let cancel = json!({"jsonrpc": "2.0", "method": "session/cancel",
                        "params": {"sessionId": session}});
    assert_eq!(raw.post(cancel, Some(&session)).await.status(), 202);
    let answered = loop {
        let message = expect(&mut session_stream).await;
        if message.get("method").is_none() {
            break message;
        }
    };
    assert_eq!(answered["id"], 10);
    assert_eq!(answered["result"]["stopReason"], "cancelled");
    let next = raw.post(prompt(12, "hi"), Some(&session)).await;
    assert_eq!(next.status(), 202, "the answer freed the place");
}

#[tokio::test]
async fn past_max_sessions_per_connection_another_sessions_stream_is_refused_503() {
    let config = RemoteConfig::default().max_sessions_per_connection(1);
    let running = serve_remote(test_server(), config).await;
    let (raw, _) = Raw::initialize(&running.url()).await;
    let mut connection_stream = raw.stream(None).await;
    let (first, mut first_stream) = raw.new_session(&mut connection_stream).await;
    let created = raw
        .post(
            json!({"jsonrpc": "2.0", "id": 2, "method": "session/new",
                   "params": {"cwd": "/", "mcpServers": []}}),
            None,
        )
        .await;
    assert_eq!(created.status(), 202);
    let second = expect(&mut connection_stream).await["result"]["sessionId"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_overloaded(raw.get(Some(&second)).await).await;
    let prompt = |id: u64, session: &str| {
        json!({"jsonrpc": "2.0", "id": id, "method": "session/prompt",
               "params": {"sessionId": session, "prompt": [{"type": "text", "text": "hi"}]}})
    };
    assert_overloaded(raw.post(prompt(3, &second), Some(&second)).await).await;
    // The session that has its stream is served as before.
    assert_eq!(
        raw.post(prompt(4, &first), Some(&first)).await.status(),
        202
    );
    let echoed = expect(&mut first_stream).await;
    assert_eq!(echoed["method"], "session/update");
}
