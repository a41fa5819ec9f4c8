//! Browser access (CORS) and trusted proxies over real sockets: preflights answered before
//! authentication with exactly the listed headers, listed origins admitted and unlisted ones
//! refused, forwarding headers believed from trusted proxies only (for the rate limit and the
//! handler's `peer_address()`), rate limits keyed by subject, and the anonymous default.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

mod common;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use common::{TestProtocol, TestServer, serve, test_hardening};
use protocols_runtime::hardening::{
    AuthPolicy, BearerAuthenticator, CORS_ALLOWED_HEADERS, CORS_EXPOSED_HEADERS,
    DEFAULT_ANONYMOUS_RATE_LIMIT, HardeningConfig, Principal, ProtectedResource, RateLimit,
};
use protocols_runtime::http::HttpConfig;
use protocols_runtime::server::ServerBuilder;
use protocols_testkit::request;
use reqwest::{Client, Method, StatusCode};
use serde_json::{Value, json};

const PAGE: &str = "http://127.0.0.1:5173";

fn secured(hardening: HardeningConfig) -> HardeningConfig {
    hardening
        .authenticator(
            BearerAuthenticator::new()
                .with_token("alice-token", Principal::new("alice", Vec::new()))
                .with_token("bob-token", Principal::new("bob", Vec::new())),
        )
        .auth_policy(AuthPolicy::RequireScopes(Vec::new()))
        .protected_resource(
            ProtectedResource::new("http://127.0.0.1/rpc")
                .authorization_server("https://as.example"),
        )
}

async fn serve_with(hardening: HardeningConfig) -> TestServer {
    let server = ServerBuilder::new()
        .hardening(hardening)
        .streamable_http("/rpc", TestProtocol::new(), HttpConfig::default())
        .build()
        .expect("server builds");
    serve(server).await
}

async fn preflight(server: &TestServer, origin: &str) -> reqwest::Response {
    Client::new()
        .request(Method::OPTIONS, server.url("/rpc"))
        .header("origin", origin)
        .header("access-control-request-method", "POST")
        .header(
            "access-control-request-headers",
            "authorization, content-type, mcp-session-id",
        )
        .send()
        .await
        .unwrap()
}

fn post(client: &Client, url: String, method: &str) -> reqwest::RequestBuilder {
    client
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json")
        .body(request(1, method, json!({})).to_string())
}

fn header<'r>(response: &'r reqwest::Response, name: &str) -> Option<&'r str> {
    response
        .headers()
        .get(name)
        .map(|value| value.to_str().unwrap())
}

/// A comma-separated header value as a sorted list of lower-case names.
fn names(value: Option<&str>) -> Vec<String> {
    let mut names: Vec<String> = value
        .unwrap_or("")
        .split(',')
        .map(|name| name.trim().to_ascii_lowercase())
        .filter(|name| !name.is_empty())
        .collect();
    names.sort();
    names
}

fn sorted(list: &[&str]) -> Vec<String> {
    let mut list: Vec<String> = list.iter().map(|name| (*name).to_owned()).collect();
    list.sort();
    list
}

fn assert_security_headers(response: &reqwest::Response) {
    for name in [
        "content-security-policy",
        "strict-transport-security",
        "x-frame-options",
        "x-content-type-options",
        "cache-control",
        "referrer-policy",
    ] {
        assert!(response.headers().contains_key(name), "missing {name}");
    }
}

#[tokio::test]
async fn a_preflight_from_a_listed_origin_is_answered_before_authentication_with_the_listed_headers()
 {
    let server = serve_with(secured(test_hardening().cors_origins([PAGE]))).await;
    let response = preflight(&server, PAGE).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(header(&response, "access-control-allow-origin"), Some(PAGE));
    assert_eq!(
        names(header(&response, "access-control-allow-headers")),
        sorted(&CORS_ALLOWED_HEADERS)
    );
    let methods = names(header(&response, "access-control-allow-methods"));
    for method in ["delete", "get", "post"] {
        assert!(methods.contains(&method.to_owned()), "{methods:?}");
    }
    assert!(header(&response, "www-authenticate").is_none());
    assert_security_headers(&response);
}

#[tokio::test]
async fn answers_to_a_listed_origin_name_it_and_expose_the_session_and_challenge_headers() {
    let server = serve_with(secured(test_hardening().cors_origins([PAGE]))).await;
    let client = Client::new();
    let refused = post(&client, server.url("/rpc"), "open")
        .header("origin", PAGE)
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(header(&refused, "access-control-allow-origin"), Some(PAGE));
    assert_eq!(
        names(header(&refused, "access-control-expose-headers")),
        sorted(&CORS_EXPOSED_HEADERS)
    );
    assert!(header(&refused, "www-authenticate").is_some());
    let opened = post(&client, server.url("/rpc"), "open")
        .header("origin", PAGE)
        .header("authorization", "Bearer alice-token")
        .send()
        .await
        .unwrap();
    assert_eq!(opened.status(), StatusCode::OK);
    assert_eq!(header(&opened, "access-control-allow-origin"), Some(PAGE));
    assert!(header(&opened, "test-session-id").is_some());
    assert_security_headers(&opened);
    // The metadata document a page reads after that 401 is served cross-origin too.
    let metadata = client
        .get(server.url("/.well-known/oauth-protected-resource/rpc"))
        .header("origin", PAGE)
        .send()
        .await
        .unwrap();
    assert_eq!(metadata.status(), StatusCode::OK);
    assert_eq!(header(&metadata, "access-control-allow-origin"), Some(PAGE));
}

#[tokio::test]
async fn an_unlisted_origin_is_refused_by_the_origin_check_preflight_or_not() {
    let server = serve_with(secured(test_hardening().cors_origins([PAGE]))).await;
    for origin in ["http://127.0.0.1:5174", "https://evil.example", "null"] {
        let response = preflight(&server, origin).await;
        assert_eq!(response.status(), StatusCode::FORBIDDEN, "{origin}");
        assert!(header(&response, "access-control-allow-origin").is_none());
        assert_security_headers(&response);
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["error"]["code"], -32003);
        let response = post(&Client::new(), server.url("/rpc"), "open")
            .header("origin", origin)
            .header("authorization", "Bearer alice-token")
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::FORBIDDEN, "{origin}");
    }
}

#[tokio::test]
async fn without_cors_origins_a_cross_origin_page_gets_no_cors_answer() {
    let server = serve_with(secured(test_hardening())).await;
    let response = preflight(&server, PAGE).await;
    assert_eq!(response.status(), StatusCode::FORBIDDEN);
    assert!(header(&response, "access-control-allow-origin").is_none());
    // A same-host page on the server's own port passes the Origin check, but gets no CORS
    // headers either: nothing cross-origin is granted unless listed.
    let own = format!("http://{}", server.address);
    let response = preflight(&server, &own).await;
    assert!(header(&response, "access-control-allow-origin").is_none());
}

#[tokio::test]
async fn cors_holds_on_a_router_nested_in_a_users_app() {
    let built = ServerBuilder::new()
        .hardening(secured(test_hardening().cors_origins([PAGE])))
        .streamable_http("/rpc", TestProtocol::new(), HttpConfig::default())
        .build()
        .unwrap();
    let app = axum::Router::new().nest("/agent", built.router());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let serving = tokio::spawn(async move { axum::serve(listener, app).await });
    let response = Client::new()
        .request(Method::OPTIONS, format!("http://{address}/agent/rpc"))
        .header("origin", PAGE)
        .header("access-control-request-method", "POST")
        .send()
        .await
        .unwrap();
    serving.abort();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(header(&response, "access-control-allow-origin"), Some(PAGE));
}

/// A client whose connections come from `source` (any 127/8 address is loopback on Linux).
fn client_from(source: Ipv4Addr) -> Client {
    Client::builder()
        .local_address(IpAddr::V4(source))
        .build()
        .unwrap()
}

async fn whereami(client: &Client, server: &TestServer, forwarded: &[(&str, &str)]) -> String {
    let request = forwarded.iter().fold(
        post(client, server.url("/rpc"), "stateless/whereami"),
        |request, (name, value)| request.header(*name, *value),
    );
    let answer = request.send().await.unwrap();
    assert_eq!(answer.status(), StatusCode::OK);
    let body: Value = answer.json().await.unwrap();
    body["result"]["peer"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn a_trusted_proxys_forwarding_header_names_the_peer_the_handler_sees() {
    let proxy = client_from(Ipv4Addr::new(127, 0, 0, 9));
    let server = serve_with(test_hardening().trusted_proxies(["127.0.0.9"])).await;
    let forwarded = [("x-forwarded-for", "203.0.113.7")];
    assert_eq!(whereami(&proxy, &server, &forwarded).await, "203.0.113.7:0");
    let forwarded = [("forwarded", "for=\"198.51.100.4:4711\";proto=https")];
    assert_eq!(
        whereami(&proxy, &server, &forwarded).await,
        "198.51.100.4:4711"
    );
    // Anyone else's forwarding header is ignored.
    let stranger = client_from(Ipv4Addr::new(127, 0, 0, 10));
    let spoofed = [("x-forwarded-for", "203.0.113.7")];
    let seen: SocketAddr = whereami(&stranger, &server, &spoofed)
        .await
        .parse()
        .unwrap();
    assert_eq!(seen.ip(), IpAddr::V4(Ipv4Addr::new(127, 0, 0, 10)));
}

#[tokio::test]
async fn a_trusted_proxy_is_believed_on_a_router_nested_in_a_users_app_too() {
    let built = ServerBuilder::new()
        .hardening(test_hardening().trusted_proxies(["127.0.0.0/8"]))
        .streamable_http("/rpc", TestProtocol::new(), HttpConfig::default())
        .build()
        .unwrap();
    let app = axum::Router::new().nest("/agent", built.router());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let service = app.into_make_service_with_connect_info::<SocketAddr>();
    let serving = tokio::spawn(async move { axum::serve(listener, service).await });
    let answer = post(
        &Client::new(),
        format!("http://{address}/agent/rpc"),
        "stateless/whereami",
    )
    .header("x-forwarded-for", "203.0.113.8")
    .send()
    .await
    .unwrap();
    let body: Value = answer.json().await.unwrap();
    serving.abort();
    assert_eq!(body["result"]["peer"], "203.0.113.8:0");
}

async fn echo_status(client: &Client, server: &TestServer, headers: &[(&str, &str)]) -> u16 {
    let request = headers.iter().fold(
        post(client, server.url("/rpc"), "stateless/echo"),
        |request, (name, value)| request.header(*name, *value),
    );
    request.send().await.unwrap().status().as_u16()
}

#[tokio::test]
async fn clients_behind_a_trusted_proxy_are_rate_limited_apart_and_untrusted_ones_together() {
    let limited = test_hardening().rate_limit(Some(RateLimit::new(0.001, 2)));
    let proxy = client_from(Ipv4Addr::new(127, 0, 0, 11));
    let (first, second) = (
        [("x-forwarded-for", "203.0.113.1")],
        [("x-forwarded-for", "203.0.113.2")],
    );
    let server = serve_with(limited.clone().trusted_proxies(["127.0.0.11"])).await;
    for _ in 0..2 {
        assert_eq!(echo_status(&proxy, &server, &first).await, 200);
    }
    assert_eq!(echo_status(&proxy, &server, &first).await, 429);
    assert_eq!(echo_status(&proxy, &server, &second).await, 200);
    // Not trusted: the proxy's one address is every client's bucket.
    let server = serve_with(limited).await;
    for _ in 0..2 {
        assert_eq!(echo_status(&proxy, &server, &first).await, 200);
    }
    assert_eq!(echo_status(&proxy, &server, &second).await, 429);
}

#[tokio::test]
async fn authenticated_callers_on_one_address_are_rate_limited_by_subject() {
    let hardening = secured(test_hardening().rate_limit(Some(RateLimit::new(0.001, 2))));
    let server = serve_with(hardening).await;
    let client = Client::new();
    let alice = [("authorization", "Bearer alice-token")];
    let bob = [("authorization", "Bearer bob-token")];
    for _ in 0..2 {
        assert_eq!(echo_status(&client, &server, &alice).await, 200);
    }
    assert_eq!(echo_status(&client, &server, &alice).await, 429);
    assert_eq!(echo_status(&client, &server, &bob).await, 200);
}

#[tokio::test]
async fn the_default_anonymous_limit_lets_a_crowd_behind_one_address_through() {
    // Past the old default's burst (1000), from one address, as fast as sixteen connections go.
    let requests = 1_500;
    assert!(f64::from(DEFAULT_ANONYMOUS_RATE_LIMIT.burst) > f64::from(requests));
    let server = serve_with(HardeningConfig::new()).await;
    let clients: Vec<Client> = (0..16).map(|_| Client::new()).collect();
    let statuses = futures::future::join_all(clients.iter().map(|client| {
        let server = &server;
        async move {
            let mut refused = 0;
            for _ in 0..requests / 16 {
                if echo_status(client, server, &[]).await == 429 {
                    refused += 1;
                }
            }
            refused
        }
    }))
    .await;
    assert_eq!(
        statuses.iter().sum::<u32>(),
        0,
        "no request was rate limited"
    );
}
