//! Claims about the composed hardening: a tiny axum router wrapped by [`Hardening::wrap`] and
//! driven with `tower::ServiceExt::oneshot`.

use std::sync::atomic::{AtomicUsize, Ordering};

use axum::Extension;
use axum::extract::ConnectInfo;
use axum::routing::{get, post};
use http::Method;
use serde_json::Value;
use tokio::sync::Notify;
use tower::ServiceExt as _;

use super::*;

const HOST: &str = "127.0.0.1:3000";
const METADATA_URL: &str = "https://api.example/.well-known/oauth-protected-resource/mcp";

fn bind() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 3000))
}

fn secured() -> HardeningConfig {
    HardeningConfig::new()
        .bind_address(bind())
        .authenticator(
            BearerAuthenticator::new()
                .with_token("good", Principal::new("alice", ["tools".to_owned()]))
                .with_token("narrow", Principal::new("bob", [])),
        )
        .auth_policy(AuthPolicy::RequireScopes(vec!["tools".into()]))
        .protected_resource(
            ProtectedResource::new("https://api.example/mcp")
                .authorization_server("https://auth.example")
                .scopes_supported(["tools"]),
        )
}

/// A route that counts how often it ran, so a test can prove a refusal came first.
fn counting_router(hits: Arc<AtomicUsize>) -> Router {
    Router::new().route(
        "/mcp",
        post(move |Extension(principal): Extension<Principal>| {
            hits.fetch_add(1, Ordering::SeqCst);
            async move { principal.subject.to_string() }
        }),
    )
}

fn request(method: Method, path: &str) -> http::request::Builder {
    Request::builder()
        .method(method)
        .uri(path)
        .header(header::HOST, HOST)
}

async fn send(router: Router, request: Request) -> Response {
    router.oneshot(request).await.unwrap()
}

async fn json(response: Response) -> Value {
    let bytes = security_headers::body_bytes(response.into_body()).await;
    serde_json::from_slice(&bytes).unwrap()
}

fn assert_security_headers(response: &Response) {
    for name in [
        header::CONTENT_SECURITY_POLICY,
        header::STRICT_TRANSPORT_SECURITY,
        header::X_FRAME_OPTIONS,
        header::X_CONTENT_TYPE_OPTIONS,
        header::CACHE_CONTROL,
        header::REFERRER_POLICY,
    ] {
        assert!(response.headers().contains_key(&name), "missing {name}");
    }
}

async fn assert_refused(response: Response, status: StatusCode, code: i64) {
    assert_eq!(response.status(), status);
    assert_security_headers(&response);
    assert_eq!(response.headers()[header::CONTENT_TYPE], "application/json");
    assert_eq!(json(response).await["error"]["code"], code);
}

#[tokio::test]
async fn an_unauthenticated_request_is_refused_before_any_route_runs() {
    let hits = Arc::new(AtomicUsize::new(0));
    let app = secured()
        .build()
        .unwrap()
        .wrap(counting_router(Arc::clone(&hits)));
    let response = send(
        app,
        request(Method::POST, "/mcp").body(Body::empty()).unwrap(),
    )
    .await;
    assert_eq!(
        response.headers()[header::WWW_AUTHENTICATE],
        format!("Bearer scope=\"tools\", resource_metadata=\"{METADATA_URL}\"").as_str()
    );
    assert_refused(response, StatusCode::UNAUTHORIZED, -32001).await;
    assert_eq!(hits.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_wrong_token_is_refused_with_401_and_an_invalid_token_challenge() {
    let hits = Arc::new(AtomicUsize::new(0));
    let app = secured()
        .build()
        .unwrap()
        .wrap(counting_router(Arc::clone(&hits)));
    let request = request(Method::POST, "/mcp")
        .header(header::AUTHORIZATION, "Bearer guess")
        .body(Body::empty())
        .unwrap();
    let response = send(app, request).await;
    let challenge = response.headers()[header::WWW_AUTHENTICATE]
        .to_str()
        .unwrap();
    assert!(challenge.starts_with("Bearer error=\"invalid_token\""));
    assert_refused(response, StatusCode::UNAUTHORIZED, -32001).await;
    assert_eq!(hits.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_token_lacking_the_scope_is_refused_with_403_insufficient_scope() {
    let app = secured()
        .build()
        .unwrap()
        .wrap(counting_router(Arc::default()));
    let request = request(Method::POST, "/mcp")
        .header(header::AUTHORIZATION, "Bearer narrow")
        .body(Body::empty())
        .unwrap();
    let response = send(app, request).await;
    let challenge = response.headers()[header::WWW_AUTHENTICATE]
        .to_str()
        .unwrap();
    assert!(challenge.contains("error=\"insufficient_scope\""));
    assert_refused(response, StatusCode::FORBIDDEN, -32002).await;
}

#[tokio::test]
async fn an_authenticated_request_reaches_the_route_with_its_principal() {
    let hits = Arc::new(AtomicUsize::new(0));
    let app = secured()
        .build()
        .unwrap()
        .wrap(counting_router(Arc::clone(&hits)));
    let request = request(Method::POST, "/mcp")
        .header(header::AUTHORIZATION, "Bearer good")
        .body(Body::empty())
        .unwrap();
    let response = send(app, request).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_security_headers(&response);
    let body = security_headers::body_bytes(response.into_body()).await;
    assert_eq!(&body[..], b"alice");
    assert_eq!(hits.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn the_metadata_document_is_served_without_a_credential() {
    let app = secured()
        .build()
        .unwrap()
        .wrap(counting_router(Arc::default()));
    let path = "/.well-known/oauth-protected-resource/mcp";
    let response = send(app, request(Method::GET, path).body(Body::empty()).unwrap()).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_security_headers(&response);
    let document = json(response).await;
    assert_eq!(document["resource"], "https://api.example/mcp");
    assert_eq!(document["authorization_servers"][0], "https://auth.example");
    assert_eq!(document["bearer_methods_supported"][0], "header");
}

#[test]
fn an_authenticator_wired_with_a_public_policy_fails_at_startup() {
    let config = secured().auth_policy(AuthPolicy::Public);
    assert_eq!(
        config.build().err(),
        Some(HardeningError::UnprotectedAuthenticator)
    );
}

#[test]
fn a_scope_policy_without_an_authenticator_fails_at_startup() {
    let config =
        HardeningConfig::new().auth_policy(AuthPolicy::RequireScopes(vec!["tools".into()]));
    assert_eq!(
        config.build().err(),
        Some(HardeningError::PolicyWithoutAuthenticator)
    );
}

#[test]
fn zero_limits_fail_at_startup() {
    let cases = [
        HardeningConfig::new().max_body_bytes(0),
        HardeningConfig::new().max_concurrency(Some(0)),
        HardeningConfig::new().request_deadline(Some(Duration::ZERO)),
        HardeningConfig::new().rate_limit(Some(RateLimit::new(0.0, 10))),
        HardeningConfig::new().rate_limit(Some(RateLimit::new(f64::NAN, 10))),
        HardeningConfig::new().rate_limit(Some(RateLimit::new(1.0, 0))),
    ];
    for config in cases {
        assert!(
            matches!(config.build(), Err(HardeningError::NonPositiveLimit(_))),
            "accepted a zero limit"
        );
    }
}

fn public_echo() -> Router {
    Router::new().route(
        "/mcp",
        post(|BoundedBody(body): BoundedBody| async move { body }),
    )
}

fn public(config: HardeningConfig) -> Router {
    config
        .bind_address(bind())
        .build()
        .unwrap()
        .wrap(public_echo())
}

#[tokio::test]
async fn a_foreign_origin_is_refused_with_403_and_security_headers() {
    let request = request(Method::POST, "/mcp")
        .header(header::ORIGIN, "https://evil.example")
        .body(Body::empty())
        .unwrap();
    let response = send(public(HardeningConfig::new()), request).await;
    assert_refused(response, StatusCode::FORBIDDEN, -32003).await;
}

#[tokio::test]
async fn a_foreign_host_is_refused_with_421_even_on_the_metadata_route() {
    let app = secured()
        .build()
        .unwrap()
        .wrap(counting_router(Arc::default()));
    let request = Request::get("/.well-known/oauth-protected-resource/mcp")
        .header(header::HOST, "evil.example:3000")
        .body(Body::empty())
        .unwrap();
    assert_refused(
        send(app, request).await,
        StatusCode::MISDIRECTED_REQUEST,
        -32004,
    )
    .await;
}

#[tokio::test]
async fn a_same_origin_browser_request_is_served() {
    let request = request(Method::POST, "/mcp")
        .header(header::ORIGIN, "http://localhost:3000")
        .body(Body::from("{}"))
        .unwrap();
    let response = send(public(HardeningConfig::new()), request).await;
    assert_eq!(response.status(), StatusCode::OK);
}

#[tokio::test]
async fn a_body_over_the_configured_limit_is_refused_with_413_and_a_jsonrpc_body() {
    let app = public(HardeningConfig::new().max_body_bytes(16));
    let request = request(Method::POST, "/mcp")
        .body(Body::from(vec![b'x'; 17]))
        .unwrap();
    assert_refused(
        send(app, request).await,
        StatusCode::PAYLOAD_TOO_LARGE,
        -32010,
    )
    .await;
}

#[tokio::test]
async fn an_unknown_path_and_an_unmapped_method_are_refusals_with_security_headers() {
    let app = secured()
        .build()
        .unwrap()
        .wrap(counting_router(Arc::default()));
    let unknown = request(Method::GET, "/elsewhere")
        .body(Body::empty())
        .unwrap();
    assert_refused(send(app, unknown).await, StatusCode::NOT_FOUND, -32006).await;

    let app = public(HardeningConfig::new());
    let wrong = request(Method::PATCH, "/mcp").body(Body::empty()).unwrap();
    let response = send(app, wrong).await;
    assert!(response.headers().contains_key(header::ALLOW));
    assert_refused(response, StatusCode::METHOD_NOT_ALLOWED, -32007).await;
}

#[tokio::test(start_paused = true)]
async fn a_subject_over_its_rate_is_refused_with_429_and_retry_after() {
    let app = secured()
        .rate_limit(Some(RateLimit::new(1.0, 2)))
        .build()
        .unwrap()
        .wrap(counting_router(Arc::default()));
    let call = |token: &str| {
        request(Method::POST, "/mcp")
            .header(header::AUTHORIZATION, format!("Bearer {token}"))
            .body(Body::empty())
            .unwrap()
    };
    for _ in 0..2 {
        assert_eq!(
            send(app.clone(), call("good")).await.status(),
            StatusCode::OK
        );
    }
    let response = send(app.clone(), call("good")).await;
    assert_eq!(response.headers()[header::RETRY_AFTER], "1");
    assert_refused(response, StatusCode::TOO_MANY_REQUESTS, -32012).await;
    // Another subject keeps its own allowance.
    let other = send(app, call("narrow")).await;
    assert_eq!(other.status(), StatusCode::FORBIDDEN);
}

#[tokio::test(start_paused = true)]
async fn guessing_tokens_is_rate_limited_per_peer() {
    let app = secured()
        .rate_limit(Some(RateLimit::new(1.0, 3)))
        .build()
        .unwrap()
        .wrap(counting_router(Arc::default()));
    let peer = ConnectInfo(SocketAddr::from(([10, 0, 0, 9], 5555)));
    let guess = || {
        let mut request = request(Method::POST, "/mcp")
            .header(header::AUTHORIZATION, "Bearer guess")
            .body(Body::empty())
            .unwrap();
        request.extensions_mut().insert(peer);
        request
    };
    for _ in 0..3 {
        assert_eq!(
            send(app.clone(), guess()).await.status(),
            StatusCode::UNAUTHORIZED
        );
    }
    let response = send(app, guess()).await;
    assert_refused(response, StatusCode::TOO_MANY_REQUESTS, -32012).await;
}

#[tokio::test(start_paused = true)]
async fn one_anonymous_address_is_allowed_the_default_anonymous_burst_and_no_more() {
    let app = public(HardeningConfig::new());
    let peer = ConnectInfo(SocketAddr::from(([203, 0, 113, 5], 5555)));
    let call = || {
        let mut request = request(Method::POST, "/mcp")
            .body(Body::from("{}"))
            .unwrap();
        request.extensions_mut().insert(peer);
        request
    };
    for _ in 0..DEFAULT_ANONYMOUS_RATE_LIMIT.burst {
        assert_eq!(send(app.clone(), call()).await.status(), StatusCode::OK);
    }
    let response = send(app, call()).await;
    assert_refused(response, StatusCode::TOO_MANY_REQUESTS, -32012).await;
}

/// A hardened app letting one request in flight at a time, whose `/slow` route notifies
/// `entered` when a request reaches it and answers once `release` is notified.
fn one_at_a_time_slow_route() -> (Router, Arc<Notify>, Arc<Notify>) {
    let release = Arc::new(Notify::new());
    let entered = Arc::new(Notify::new());
    let router = {
        let (release, entered) = (Arc::clone(&release), Arc::clone(&entered));
        Router::new().route(
            "/slow",
            get(move || {
                let (release, entered) = (Arc::clone(&release), Arc::clone(&entered));
                async move {
                    entered.notify_one();
                    release.notified().await;
                    "done"
                }
            }),
        )
    };
    let app = HardeningConfig::new()
        .bind_address(bind())
        .max_concurrency(Some(1))
        .build()
        .unwrap()
        .wrap(router);
    (app, entered, release)
}

#[tokio::test]
async fn requests_past_the_concurrency_limit_are_shed_with_503() {
    let (app, entered, release) = one_at_a_time_slow_route();
    let first = tokio::spawn(send(
        app.clone(),
        request(Method::GET, "/slow").body(Body::empty()).unwrap(),
    ));
    entered.notified().await;
    let second = send(
        app,
        request(Method::GET, "/slow").body(Body::empty()).unwrap(),
    )
    .await;
    assert_refused(second, StatusCode::SERVICE_UNAVAILABLE, -32013).await;
    release.notify_one();
    assert_eq!(first.await.unwrap().status(), StatusCode::OK);
}

#[tokio::test]
async fn a_place_in_flight_is_given_back_when_answered_and_when_abandoned() {
    let (app, entered, release) = one_at_a_time_slow_route();
    let slow = || request(Method::GET, "/slow").body(Body::empty()).unwrap();
    // Answered: the place is free for the next request.
    let answered = tokio::spawn(send(app.clone(), slow()));
    entered.notified().await;
    release.notify_one();
    assert_eq!(answered.await.unwrap().status(), StatusCode::OK);
    // Abandoned before its answer (the client went away): the place is free too.
    let abandoned = tokio::spawn(send(app.clone(), slow()));
    entered.notified().await;
    abandoned.abort();
    assert!(abandoned.await.unwrap_err().is_cancelled());
    let next = tokio::spawn(send(app.clone(), slow()));
    tokio::time::timeout(Duration::from_secs(5), entered.notified())
        .await
        .expect("the abandoned request's place was given back");
    release.notify_one();
    assert_eq!(next.await.unwrap().status(), StatusCode::OK);
}

#[tokio::test(start_paused = true)]
async fn a_request_past_its_deadline_is_refused_with_504() {
    let router = Router::new().route(
        "/slow",
        get(|| async {
            tokio::time::sleep(Duration::from_secs(10)).await;
            "late"
        }),
    );
    let app = HardeningConfig::new()
        .bind_address(bind())
        .request_deadline(Some(Duration::from_secs(1)))
        .build()
        .unwrap()
        .wrap(router);
    let response = send(
        app,
        request(Method::GET, "/slow").body(Body::empty()).unwrap(),
    )
    .await;
    assert_refused(response, StatusCode::GATEWAY_TIMEOUT, -32015).await;
}

#[tokio::test]
async fn the_default_config_guards_loopback_names_without_knowing_the_port() {
    let app = HardeningConfig::new().build().unwrap().wrap(public_echo());
    let ok = Request::post("/mcp")
        .header(header::HOST, "localhost:41234")
        .body(Body::from("{}"))
        .unwrap();
    assert_eq!(send(app.clone(), ok).await.status(), StatusCode::OK);
    let rebinding = Request::post("/mcp")
        .header(header::HOST, "attacker.example")
        .body(Body::from("{}"))
        .unwrap();
    assert_refused(
        send(app, rebinding).await,
        StatusCode::MISDIRECTED_REQUEST,
        -32004,
    )
    .await;
}

#[tokio::test]
async fn a_handler_refusal_echoes_the_request_id_and_gets_security_headers() {
    let router = Router::new().route(
        "/mcp",
        post(|BoundedBody(body): BoundedBody| async move {
            Refusal::UnknownSession.answering(EchoId::peek(&body))
        }),
    );
    let app = HardeningConfig::new()
        .bind_address(bind())
        .build()
        .unwrap()
        .wrap(router);
    let request = request(Method::POST, "/mcp")
        .body(Body::from(r#"{"jsonrpc":"2.0","id":41,"method":"m"}"#))
        .unwrap();
    let response = send(app, request).await;
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    assert_security_headers(&response);
    let body = json(response).await;
    assert_eq!(body["id"], 41);
    assert_eq!(body["error"]["code"], -32005);
}

#[tokio::test]
async fn the_metadata_router_alone_serves_the_document_for_nesting_apps() {
    let hardening = secured().build().unwrap();
    let metadata = hardening.metadata_router().unwrap();
    let response = send(
        metadata,
        Request::get("/.well-known/oauth-protected-resource/mcp")
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(json(response).await["resource"], "https://api.example/mcp");
}

#[tokio::test]
async fn a_hardened_router_nested_in_a_users_app_keeps_its_guarantees() {
    let hits = Arc::new(AtomicUsize::new(0));
    let hardened = secured()
        .build()
        .unwrap()
        .wrap(counting_router(Arc::clone(&hits)));
    let app = Router::new()
        .route("/health", get(|| async { "ok" }))
        .nest("/api", hardened);
    let refused = send(
        app.clone(),
        request(Method::POST, "/api/mcp")
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_refused(refused, StatusCode::UNAUTHORIZED, -32001).await;
    let unknown = send(
        app.clone(),
        request(Method::GET, "/api/elsewhere")
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_refused(unknown, StatusCode::NOT_FOUND, -32006).await;
    let served = request(Method::POST, "/api/mcp")
        .header(header::AUTHORIZATION, "Bearer good")
        .body(Body::empty())
        .unwrap();
    assert_eq!(send(app.clone(), served).await.status(), StatusCode::OK);
    assert_eq!(hits.load(Ordering::SeqCst), 1);
    // The user's own routes are theirs: the hardening does not reach outside its router.
    let health = send(
        app,
        request(Method::GET, "/health").body(Body::empty()).unwrap(),
    )
    .await;
    assert_eq!(health.status(), StatusCode::OK);
}
