//! The lifecycle at one endpoint: negotiation, the version header, batches only on
//! 2025-03-26, session end, cancellation, DNS-rebinding refusal, the stateless 2026-07-28
//! revision (discover, `_meta`, header agreement, input-required rounds) and legacy HTTP+SSE.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod mcp_common;

use std::time::Duration;

use mcp_common::{
    Client, Observed, Schemas, call, fixture_server, spawn, stateless_call, stateless_client,
};
use protocols_mcp::Revision;
use protocols_testkit::{ACCEPT_EITHER, SseReader, json_rpc_post};
use serde_json::{Value, json};

#[tokio::test]
async fn a_newer_or_unknown_offered_version_negotiates_the_newest_session_revision() {
    let running = spawn(fixture_server(&Observed::default())).await;
    for offered in ["2099-12-31", "not-a-version"] {
        let mut client = Client::new(running.url("/mcp"));
        let init = client.initialize(offered).await;
        assert_eq!(
            init.answer(0)["result"]["protocolVersion"],
            Revision::NEWEST_SESSION.as_str()
        );
    }
}

#[tokio::test]
async fn batches_are_answered_on_2025_03_26_and_refused_on_2025_06_18() {
    let running = spawn(fixture_server(&Observed::default())).await;
    let batch = json!([call(1, "ping", json!({})), call(2, "tools/list", json!({}))]);
    let mut old = Client::new(running.url("/mcp"));
    old.initialize("2025-03-26").await;
    let answered = old.post(batch.clone()).await;
    assert_eq!(answered.status, 200);
    assert_eq!(answered.messages.len(), 2);
    let mut newer = Client::new(running.url("/mcp"));
    newer.initialize("2025-06-18").await;
    let refused = newer.post(batch).await;
    assert_eq!(refused.status, 400);
}

#[tokio::test]
async fn an_unserved_protocol_version_header_is_refused_with_400_and_an_absent_one_is_accepted() {
    let running = spawn(fixture_server(&Observed::default())).await;
    let mut client = Client::new(running.url("/mcp"));
    client.initialize("2025-11-25").await;
    client.version_header = Some("1999-01-01".to_owned());
    assert_eq!(client.post(call(1, "ping", json!({}))).await.status, 400);
    client.version_header = None;
    let assumed = client.post(call(2, "ping", json!({}))).await;
    assert_eq!(assumed.status, 200);
    assert_eq!(assumed.answer(2)["result"], json!({}));
}

#[tokio::test]
async fn a_request_without_a_session_is_refused_and_a_deleted_session_answers_404_after() {
    let running = spawn(fixture_server(&Observed::default())).await;
    let loose = Client::new(running.url("/mcp"));
    assert_eq!(
        loose.post(call(1, "tools/list", json!({}))).await.status,
        400
    );
    let mut client = Client::new(running.url("/mcp"));
    client.initialize("2025-11-25").await;
    let session = client.session.clone().unwrap();
    let deleted = client
        .http
        .delete(running.url("/mcp"))
        .header("mcp-session-id", &session)
        .send()
        .await
        .unwrap();
    assert!(deleted.status().is_success());
    assert_eq!(client.post(call(1, "ping", json!({}))).await.status, 404);
}

#[tokio::test]
async fn notifications_cancelled_stops_the_running_handler_and_no_answer_is_sent() {
    let observed = Observed::default();
    let running = spawn(fixture_server(&observed)).await;
    let mut client = Client::new(running.url("/mcp"));
    client.initialize("2025-11-25").await;
    let client = std::sync::Arc::new(client);
    let waiting = {
        let client = std::sync::Arc::clone(&client);
        tokio::spawn(async move {
            client
                .post(call(7, "tools/call", json!({"name": "wait_for_cancel"})))
                .await
        })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    let cancel = client
        .post(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7, "reason": "test"}}))
        .await;
    assert_eq!(cancel.status, 202);
    let exchange = tokio::time::timeout(Duration::from_secs(5), waiting)
        .await
        .unwrap()
        .unwrap();
    assert!(
        exchange
            .messages
            .iter()
            .all(|message| message.get("id") != Some(&json!(7))),
        "{:?}",
        exchange.messages
    );
    // The stream ended long before the tool's 30 s of work: its future was dropped.
    assert!(!*observed.finished.lock().unwrap());
}

#[tokio::test]
async fn a_foreign_host_or_origin_is_refused_and_the_own_host_accepted() {
    let running = spawn(fixture_server(&Observed::default())).await;
    let http = reqwest::Client::new();
    let initialize = call(
        0,
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
    );
    let url = running.url("/mcp");
    let send = |host: String, origin: String| {
        let headers = [("host", host.as_str()), ("origin", origin.as_str())];
        json_rpc_post(&http, &url, ACCEPT_EITHER, headers, &initialize).send()
    };
    let foreign = send(
        "evil.example.com".to_owned(),
        "http://evil.example.com".to_owned(),
    )
    .await
    .unwrap();
    assert!(foreign.status().is_client_error(), "{}", foreign.status());
    let own = running.address.to_string();
    let accepted = send(own.clone(), format!("http://{own}")).await.unwrap();
    assert!(accepted.status().is_success(), "{}", accepted.status());
}

#[tokio::test]
async fn the_stateless_revision_serves_discover_and_calls_without_a_session_and_conforms() {
    let running = spawn(fixture_server(&Observed::default())).await;
    let schemas = Schemas::new(Revision::V2026_07_28);
    let discover = stateless_client(running.url("/mcp"), "server/discover", None);
    let found = discover
        .post(stateless_call(1, "server/discover", json!({})))
        .await;
    assert_eq!(found.status, 200);
    assert!(found.session.is_none());
    let supported = &found.answer(1)["result"]["supportedVersions"];
    assert!(supported.as_array().unwrap().contains(&json!("2026-07-28")));
    discover.check_all(&schemas);

    let listing = stateless_client(running.url("/mcp"), "tools/list", None);
    listing
        .post(stateless_call(2, "tools/list", json!({})))
        .await;
    listing.check_all(&schemas);

    let echo = stateless_client(running.url("/mcp"), "tools/call", Some("echo"));
    let echoed = echo
        .post(stateless_call(
            3,
            "tools/call",
            json!({"name": "echo", "arguments": {"message": "hi"}}),
        ))
        .await;
    assert_eq!(echoed.answer(3)["result"]["resultType"], "complete");
    assert_eq!(echoed.answer(3)["result"]["content"][0]["text"], "hi");
    echo.check_all(&schemas);
}

#[tokio::test]
async fn elicitation_on_the_stateless_revision_is_an_input_required_round_trip() {
    let running = spawn(fixture_server(&Observed::default())).await;
    let schemas = Schemas::new(Revision::V2026_07_28);
    let client = stateless_client(running.url("/mcp"), "tools/call", Some("ask_user"));
    let first = client
        .post(stateless_call(1, "tools/call", json!({"name": "ask_user"})))
        .await;
    let result = first.answer(1)["result"].clone();
    assert_eq!(result["resultType"], "input_required");
    let (key, request) = result["inputRequests"]
        .as_object()
        .unwrap()
        .iter()
        .next()
        .unwrap();
    assert_eq!(request["method"], "elicitation/create");
    let retry = client
        .post(stateless_call(
            2,
            "tools/call",
            json!({
                "name": "ask_user",
                "inputResponses": {key.clone(): {"action": "accept", "content": {"name": "Grace"}}}
            }),
        ))
        .await;
    assert_eq!(
        retry.answer(2)["result"]["content"][0]["text"],
        "hello Grace"
    );
    client.check_all(&schemas);
}

#[tokio::test]
async fn stateless_headers_that_disagree_with_the_body_are_refused_with_32020() {
    let running = spawn(fixture_server(&Observed::default())).await;
    let wrong_name = stateless_client(running.url("/mcp"), "tools/call", Some("add"));
    let refused = wrong_name
        .post(stateless_call(
            1,
            "tools/call",
            json!({"name": "echo", "arguments": {"message": "x"}}),
        ))
        .await;
    assert_eq!(refused.status, 400);
    assert_eq!(refused.answer(1)["error"]["code"], -32020);
    let wrong_method = stateless_client(running.url("/mcp"), "tools/list", Some("echo"));
    let refused = wrong_method
        .post(stateless_call(2, "tools/call", json!({"name": "echo"})))
        .await;
    assert_eq!(refused.answer(2)["error"]["code"], -32020);
}

#[tokio::test]
async fn an_unsupported_stateless_version_is_refused_with_32022_listing_the_supported() {
    let running = spawn(fixture_server(&Observed::default())).await;
    let client = stateless_client(running.url("/mcp"), "tools/list", None);
    let mut request = stateless_call(1, "tools/list", json!({}));
    request["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("2031-01-01");
    let mut client = client;
    // The header names the same version: a header disagreeing with the _meta would be a
    // mismatch before the version is judged.
    client.version_header = Some("2031-01-01".to_owned());
    let refused = client.post(request).await;
    assert_eq!(refused.status, 400);
    let error = &refused.answer(1)["error"];
    assert_eq!(error["code"], -32022);
    assert_eq!(error["data"]["requested"], "2031-01-01");
}

#[tokio::test]
async fn a_stateless_client_that_probes_discover_can_fall_back_to_initialize() {
    let running = spawn(fixture_server(&Observed::default())).await;
    let probe = stateless_client(running.url("/mcp"), "server/discover", None);
    assert_eq!(
        probe
            .post(stateless_call(1, "server/discover", json!({})))
            .await
            .status,
        200
    );
    let mut fallback = Client::new(running.url("/mcp"));
    let init = fallback.initialize("2025-06-18").await;
    assert_eq!(init.answer(0)["result"]["protocolVersion"], "2025-06-18");
    assert!(fallback.session.is_some());
}

/// The next event of a legacy stream: its name (`message` when unnamed) and its data.
async fn next_event(events: &mut SseReader) -> (String, String) {
    let event = events.next().await.expect("an event");
    let name = event
        .name()
        .map_or("message", |name| name.as_str())
        .to_owned();
    (name, event.into_data())
}

#[tokio::test]
async fn a_2024_11_05_client_is_served_over_legacy_http_and_sse_and_its_messages_conform() {
    let running = spawn(fixture_server(&Observed::default())).await;
    let http = reqwest::Client::new();
    let stream = http
        .get(running.url("/sse"))
        .header("accept", "text/event-stream")
        .send()
        .await
        .unwrap();
    assert!(stream.status().is_success());
    let mut events = SseReader::new(stream);
    let (name, endpoint) = next_event(&mut events).await;
    assert_eq!(name, "endpoint");
    let post_url = running.url(&endpoint);
    let schemas = Schemas::new(Revision::V2024_11_05);
    let mut asked = std::collections::HashMap::new();
    let script = [
        call(
            0,
            "initialize",
            json!({"protocolVersion": "2024-11-05", "capabilities": {}, "clientInfo": {"name": "legacy", "version": "1"}}),
        ),
        call(1, "tools/list", json!({})),
        call(2, "tools/call", json!({"name": "sound"})),
        call(
            3,
            "prompts/get",
            json!({"name": "greet", "arguments": {"who": "legacy"}}),
        ),
    ];
    for request in script {
        asked.insert(
            request["id"].to_string(),
            request["method"].as_str().unwrap().to_owned(),
        );
        let accepted = http
            .post(&post_url)
            .header("content-type", "application/json")
            .body(request.to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(accepted.status().as_u16(), 202);
        let (name, data) = next_event(&mut events).await;
        assert_eq!(name, "message");
        let message: Value = serde_json::from_str(&data).unwrap();
        assert_eq!(message["id"], request["id"]);
        schemas.check_emitted(&message, &asked);
        if request["method"] == "initialize" {
            assert_eq!(message["result"]["protocolVersion"], "2024-11-05");
            let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
            http.post(&post_url)
                .header("content-type", "application/json")
                .body(initialized.to_string())
                .send()
                .await
                .unwrap();
        }
    }
}

#[tokio::test]
async fn a_subscribed_session_hears_resource_updates_on_its_get_stream() {
    let server = fixture_server(&Observed::default());
    let running = spawn(server.clone()).await;
    let mut client = Client::new(running.url("/mcp"));
    client.initialize("2025-11-25").await;
    client
        .post(call(1, "resources/subscribe", json!({"uri": "test://a"})))
        .await;
    let stream = client
        .http
        .get(running.url("/mcp"))
        .header("accept", "text/event-stream")
        .header("mcp-session-id", client.session.clone().unwrap())
        .send()
        .await
        .unwrap();
    assert!(stream.status().is_success());
    let mut events = SseReader::new(stream);
    assert_eq!(server.notify_resource_updated("test://unwatched"), 0);
    assert_eq!(server.notify_resource_updated("test://a"), 1);
    let (_, data) = next_event(&mut events).await;
    let message: Value = serde_json::from_str(&data).unwrap();
    assert_eq!(message["method"], "notifications/resources/updated");
    assert_eq!(message["params"]["uri"], "test://a");
    Schemas::new(Revision::V2025_11_25).check_emitted(&message, &std::collections::HashMap::new());
}

#[tokio::test]
async fn subscriptions_listen_acknowledges_the_honoured_filter_then_delivers_what_it_asked_for() {
    let server = fixture_server(&Observed::default());
    let running = spawn(server.clone()).await;
    let client = stateless_client(running.url("/mcp"), "subscriptions/listen", None);
    let notifier = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        (
            server.notify_list_changed(protocols_mcp::ListKind::Tools),
            server.notify_list_changed(protocols_mcp::ListKind::Prompts),
        )
    });
    let listened = client
        .post(stateless_call(1, "subscriptions/listen", json!({"notifications": {"toolsListChanged": true, "resourceSubscriptions": ["test://a", "test://nowhere"]}})))
        .await;
    let (tools_told, prompts_told) = notifier.await.unwrap();
    assert_eq!(
        (tools_told, prompts_told),
        (1, 0),
        "only the listener that asked for tools is told"
    );
    let acknowledged = listened.notifications("notifications/subscriptions/acknowledged");
    assert_eq!(
        acknowledged[0]["params"]["notifications"],
        json!({"toolsListChanged": true, "resourceSubscriptions": ["test://a"]})
    );
    assert_eq!(
        acknowledged[0]["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        1
    );
    let changed = listened.notifications("notifications/tools/list_changed");
    assert_eq!(changed.len(), 1);
    assert_eq!(
        changed[0]["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        1
    );
    assert_eq!(listened.answer(1)["result"]["resultType"], "complete");
    client.check_all(&Schemas::new(Revision::V2026_07_28));
}
