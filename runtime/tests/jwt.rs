//! The JWT resource server against a real issuer: a JWKS endpoint on its own loopback port with
//! keys generated in the test, tokens minted with them, and the runtime's own listener in front
//! of the test protocol. Every rule of `hardening::jwt` is claimed here over real sockets.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

mod common;

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use common::{TestProtocol, TestServer, serve};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use protocols_runtime::hardening::{
    AuthPolicy, HardeningConfig, JwtAuthenticator, JwtConfig, MAX_JWKS_BYTES, ProtectedResource,
};
use protocols_runtime::http::HttpConfig;
use protocols_runtime::server::ServerBuilder;
use protocols_testkit::issuer::{SigningKey, TestIssuer, now};
use protocols_testkit::{json_rpc_post, request};
use serde_json::{Value, json};

const AUDIENCE: &str = "https://mcp.example/rpc";
const METADATA_URL: &str = "https://mcp.example/.well-known/oauth-protected-resource/rpc";

/// One RSA key per test binary: generating one takes a second or more in a debug build.
fn rsa_key() -> SigningKey {
    static KEY: OnceLock<SigningKey> = OnceLock::new();
    KEY.get_or_init(|| SigningKey::rsa("rsa-1", Algorithm::RS256))
        .clone()
}

fn config(issuer: &TestIssuer) -> JwtConfig {
    JwtConfig::new(issuer.jwks_url(), issuer.issuer.clone(), AUDIENCE)
}

/// The test protocol behind `jwt`, requiring `scopes`, publishing the issuer as its
/// authorization server.
async fn protected(issuer: &TestIssuer, jwt: JwtConfig, scopes: &[&str]) -> TestServer {
    let hardening = HardeningConfig::new()
        .rate_limit(None)
        .authenticator(JwtAuthenticator::new(jwt).expect("valid JWT configuration"))
        .auth_policy(AuthPolicy::RequireScopes(
            scopes.iter().map(|scope| (*scope).to_owned()).collect(),
        ))
        .protected_resource(ProtectedResource::new(AUDIENCE).authorization_server(&issuer.issuer));
    let server = ServerBuilder::new()
        .hardening(hardening)
        .streamable_http("/rpc", TestProtocol::sessionless(), HttpConfig::default())
        .build()
        .expect("server builds");
    serve(server).await
}

async fn call(server: &TestServer, authorization: Option<&str>) -> reqwest::Response {
    let client = reqwest::Client::new();
    let authorization = authorization.map(|value| ("authorization", value));
    json_rpc_post(
        &client,
        &server.url("/rpc"),
        "application/json",
        authorization,
        &request(1, "stateless/whoami", json!({})),
    )
    .send()
    .await
    .expect("request sent")
}

async fn call_with(server: &TestServer, token: &str) -> reqwest::Response {
    call(server, Some(&format!("Bearer {token}"))).await
}

/// The answer's `result`, after asserting a 200.
async fn admitted(response: reqwest::Response) -> Value {
    assert_eq!(response.status(), 200, "expected admission");
    let body: Value = response.json().await.expect("json");
    body["result"].clone()
}

/// Asserts a refusal: status, challenge, JSON-RPC error code, security headers.
async fn refused(response: reqwest::Response, status: u16, challenge: Option<&str>, code: i64) {
    assert_eq!(response.status(), status);
    let headers = response.headers().clone();
    assert_eq!(
        headers
            .get("www-authenticate")
            .map(|value| value.to_str().unwrap()),
        challenge
    );
    for name in [
        "content-security-policy",
        "strict-transport-security",
        "x-frame-options",
        "x-content-type-options",
        "cache-control",
        "referrer-policy",
    ] {
        assert!(headers.contains_key(name), "missing {name}");
    }
    assert_eq!(headers["content-type"], "application/json");
    let body: Value = response.json().await.expect("a JSON-RPC error body");
    assert_eq!(body["jsonrpc"], "2.0");
    assert_eq!(body["error"]["code"], code);
}

fn invalid_token_challenge() -> String {
    format!("Bearer error=\"invalid_token\", resource_metadata=\"{METADATA_URL}\"")
}

async fn assert_invalid(server: &TestServer, token: &str) {
    refused(
        call_with(server, token).await,
        401,
        Some(&invalid_token_challenge()),
        -32001,
    )
    .await;
}

#[tokio::test]
async fn tokens_signed_with_rs256_ps256_es256_and_eddsa_keys_reach_the_handler_as_their_principal()
{
    let keys = [
        rsa_key(),
        rsa_key().renamed("rsa-pss").with_alg(Algorithm::PS256),
        SigningKey::es256("ec-1"),
        SigningKey::ed25519("ed-1"),
    ];
    let issuer = TestIssuer::start(rsa_key()).await;
    issuer.publish(keys.iter().map(SigningKey::public_jwk).collect());
    let server = protected(&issuer, config(&issuer), &[]).await;
    for key in &keys {
        let mut claims = issuer.claims("alice", AUDIENCE, &["tools", "prompts"]);
        claims["email"] = json!("alice@example.com");
        let result = admitted(call_with(&server, &key.sign(&claims)).await).await;
        assert_eq!(result["subject"], "alice", "{key:?}");
        assert_eq!(result["scopes"], json!(["tools", "prompts"]));
        assert_eq!(result["claims"]["email"], "alice@example.com");
        assert_eq!(result["claims"]["iss"], issuer.issuer);
    }
    assert_eq!(issuer.fetches(), 1, "every key came from one fetch");
}

#[tokio::test]
async fn without_a_token_the_answer_is_a_401_naming_the_metadata_and_no_error() {
    let issuer = TestIssuer::start(rsa_key()).await;
    let server = protected(&issuer, config(&issuer), &[]).await;
    let challenge = format!("Bearer resource_metadata=\"{METADATA_URL}\"");
    refused(call(&server, None).await, 401, Some(&challenge), -32001).await;
    // Another scheme offers no bearer token either.
    refused(
        call(&server, Some("Basic YWxpY2U6c2VjcmV0")).await,
        401,
        Some(&challenge),
        -32001,
    )
    .await;
    assert_eq!(issuer.fetches(), 0, "no token, no fetch");
}

#[tokio::test]
async fn a_token_in_the_query_string_is_never_read() {
    let issuer = TestIssuer::start(rsa_key()).await;
    let server = protected(&issuer, config(&issuer), &[]).await;
    let token = issuer.token("alice", AUDIENCE, &[]);
    let client = reqwest::Client::new();
    let url = format!("{}?access_token={token}", server.url("/rpc"));
    let response = json_rpc_post(
        &client,
        &url,
        "application/json",
        [],
        &request(1, "stateless/whoami", json!({})),
    )
    .send()
    .await
    .unwrap();
    let challenge = format!("Bearer resource_metadata=\"{METADATA_URL}\"");
    refused(response, 401, Some(&challenge), -32001).await;
}

#[tokio::test]
async fn a_wrong_issuer_audience_or_subject_or_a_garbled_token_is_an_invalid_token() {
    let issuer = TestIssuer::start(rsa_key()).await;
    let server = protected(&issuer, config(&issuer), &[]).await;
    let key = issuer.key();
    let valid = issuer.claims("alice", AUDIENCE, &[]);
    let with = |name: &str, value: Value| {
        let mut claims = valid.clone();
        claims[name] = value;
        key.sign(&claims)
    };
    let without = |name: &str| {
        let mut claims = valid.clone();
        claims.as_object_mut().unwrap().remove(name);
        key.sign(&claims)
    };
    for token in [
        with("iss", json!("https://other.example")),
        with("aud", json!("https://other.example/mcp")),
        with("aud", json!(["https://other.example/mcp"])),
        without("aud"),
        without("iss"),
        without("sub"),
        without("exp"),
        with("sub", json!(42)),
        "not.a.token".to_owned(),
        "a".repeat(20_000),
    ] {
        assert_invalid(&server, &token).await;
    }
    // The audience may be one of several.
    let listed = with("aud", json!(["https://other.example", AUDIENCE]));
    admitted(call_with(&server, &listed).await).await;
    // A signature that does not verify: the right header and claims, another key's signature.
    let forged = SigningKey::rsa("rsa-1", Algorithm::RS256).sign(&valid);
    assert_invalid(&server, &forged).await;
}

#[tokio::test]
async fn an_expired_or_not_yet_valid_token_is_refused_outside_the_leeway_only() {
    let issuer = TestIssuer::start(rsa_key()).await;
    let jwt = config(&issuer).leeway(Duration::from_secs(30));
    let server = protected(&issuer, jwt, &[]).await;
    let key = issuer.key();
    let at = |exp: i64, nbf: i64| {
        let mut claims = issuer.claims("alice", AUDIENCE, &[]);
        claims["exp"] = json!(exp);
        claims["nbf"] = json!(nbf);
        key.sign(&claims)
    };
    let now = now();
    assert_invalid(&server, &at(now - 120, now - 600)).await;
    assert_invalid(&server, &at(now + 600, now + 120)).await;
    admitted(call_with(&server, &at(now - 10, now - 600)).await).await;
    admitted(call_with(&server, &at(now + 600, now + 10)).await).await;
}

#[tokio::test]
async fn alg_none_hmac_with_the_public_key_and_another_algorithm_than_the_keys_are_refused() {
    let rsa = rsa_key();
    let ec = SigningKey::es256("ec-1");
    let issuer = TestIssuer::start(rsa.clone()).await;
    issuer.publish(vec![rsa.public_jwk(), ec.public_jwk()]);
    let server = protected(&issuer, config(&issuer), &[]).await;
    let claims = issuer.claims("mallory", AUDIENCE, &[]);
    admitted(call_with(&server, &rsa.sign(&claims)).await).await;

    // `alg: none`, unsigned, naming the RSA key.
    let encode = |value: &Value| base64_url(value.to_string().as_bytes());
    let header = encode(&json!({"alg": "none", "typ": "JWT", "kid": "rsa-1"}));
    let unsigned = format!("{header}.{}.", encode(&claims));
    assert_invalid(&server, &unsigned).await;

    // HS256 keyed with what an attacker has of the RSA key: its published JWK and its modulus.
    let public = rsa.public_jwk();
    let modulus = public["n"].as_str().unwrap().to_owned();
    for secret in [public.to_string(), modulus] {
        let mut header = Header::new(Algorithm::HS256);
        header.kid = Some("rsa-1".into());
        let secret = EncodingKey::from_secret(secret.as_bytes()).unwrap();
        let token = jsonwebtoken::encode(&header, &claims, &secret).unwrap();
        assert_invalid(&server, &token).await;
    }

    // A real ES256 signature naming the RSA key, and an RS256 one naming the EC key.
    let mut header = Header::new(Algorithm::ES256);
    header.kid = Some("rsa-1".into());
    assert_invalid(&server, &ec.sign_with_header(&header, &claims)).await;
    let mut header = Header::new(Algorithm::RS256);
    header.kid = Some("ec-1".into());
    assert_invalid(&server, &rsa.sign_with_header(&header, &claims)).await;

    // A key published as RS256 does not verify PS256, though both are RSA.
    let mut header = Header::new(Algorithm::PS256);
    header.kid = Some("rsa-1".into());
    let pss = rsa.with_alg(Algorithm::PS256);
    assert_invalid(&server, &pss.sign_with_header(&header, &claims)).await;
    assert_eq!(issuer.fetches(), 1);
}

#[tokio::test]
async fn an_rsa_key_published_without_alg_verifies_rs256_and_ps256_only() {
    let rsa = rsa_key();
    let issuer = TestIssuer::start(rsa.clone()).await;
    issuer.publish(vec![rsa.public_jwk_without_alg()]);
    let server = protected(&issuer, config(&issuer), &[]).await;
    let claims = issuer.claims("alice", AUDIENCE, &[]);
    admitted(call_with(&server, &rsa.sign(&claims)).await).await;
    let pss = rsa.with_alg(Algorithm::PS256);
    admitted(call_with(&server, &pss.sign(&claims)).await).await;
    let mut header = Header::new(Algorithm::RS384);
    header.kid = Some("rsa-1".into());
    assert_invalid(&server, &rsa.sign_with_header(&header, &claims)).await;
}

#[tokio::test]
async fn a_token_without_a_kid_is_taken_only_when_the_issuer_publishes_one_key() {
    let rsa = rsa_key();
    let issuer = TestIssuer::start(rsa.clone()).await;
    let jwt = config(&issuer).refetch_interval(Duration::from_millis(100));
    let server = protected(&issuer, jwt, &[]).await;
    let claims = issuer.claims("alice", AUDIENCE, &[]);
    let unnamed = rsa.sign_with_header(&Header::new(Algorithm::RS256), &claims);
    admitted(call_with(&server, &unnamed).await).await;
    let ec = SigningKey::es256("ec-1");
    issuer.publish(vec![rsa.public_jwk(), ec.public_jwk()]);
    tokio::time::sleep(Duration::from_millis(150)).await;
    // A token naming a key not cached yet has the two-key set fetched; from then on the named
    // key still works and the unnamed token matches no single key.
    admitted(call_with(&server, &ec.sign(&claims)).await).await;
    admitted(call_with(&server, &rsa.sign(&claims)).await).await;
    assert_invalid(&server, &unnamed).await;
}

#[tokio::test]
async fn a_rotated_key_is_fetched_on_its_first_token_once_the_refetch_interval_allows() {
    let issuer = TestIssuer::start(SigningKey::es256("before")).await;
    let interval = Duration::from_millis(300);
    let server = protected(&issuer, config(&issuer).refetch_interval(interval), &[]).await;
    let before = issuer.token("alice", AUDIENCE, &[]);
    admitted(call_with(&server, &before).await).await;
    assert_eq!(issuer.fetches(), 1);

    let rotated_at = Instant::now();
    issuer.rotate(SigningKey::es256("after"));
    let after = issuer.token("alice", AUDIENCE, &[]);
    // Within the interval the new key is not fetched for: refused, and no fetch made.
    assert_invalid(&server, &after).await;
    assert_eq!(issuer.fetches(), 1);
    // The old key is still cached and still verifies until the cache learns it was withdrawn.
    admitted(call_with(&server, &before).await).await;

    tokio::time::sleep(interval.saturating_sub(rotated_at.elapsed()) + Duration::from_millis(50))
        .await;
    let result = admitted(call_with(&server, &after).await).await;
    assert_eq!(result["subject"], "alice");
    assert_eq!(issuer.fetches(), 2);
    // The fresh set no longer holds the old key.
    assert_invalid(&server, &before).await;
    assert_eq!(issuer.fetches(), 2);
}

#[tokio::test]
async fn garbage_kids_cause_no_fetch_storm_concurrent_or_sequential() {
    let issuer = TestIssuer::start(SigningKey::es256("real")).await;
    issuer.delay_fetches(Duration::from_millis(100));
    let interval = Duration::from_millis(400);
    let server = protected(&issuer, config(&issuer).refetch_interval(interval), &[]).await;
    let claims = issuer.claims("mallory", AUDIENCE, &[]);
    let garbage = |index: usize| {
        let mut header = Header::new(Algorithm::ES256);
        header.kid = Some(format!("made-up-{index}"));
        issuer.key().sign_with_header(&header, &claims)
    };
    // A hundred at once, while the first fetch is still under way: one fetch between them.
    let tokens: Vec<String> = (0..100).map(garbage).collect();
    let responses =
        futures::future::join_all(tokens.iter().map(|token| call_with(&server, token))).await;
    assert!(responses.iter().all(|response| response.status() == 401));
    assert_eq!(issuer.fetches(), 1);

    // Then a steady stream for about three intervals: at most one fetch per interval.
    let started = Instant::now();
    let mut sent = 0;
    while started.elapsed() < interval * 3 {
        assert_invalid(&server, &garbage(1000 + sent)).await;
        sent += 1;
    }
    let allowed = 1 + started.elapsed().as_millis() / interval.as_millis() + 1;
    let fetched = issuer.fetches() as u128;
    assert!(
        fetched <= allowed,
        "{fetched} fetches for {sent} garbage kids over {:?}",
        started.elapsed()
    );
    assert!(sent > 20, "the stream was long enough to matter ({sent})");
}

#[tokio::test]
async fn a_cached_key_serves_every_later_token_without_a_fetch() {
    let issuer = TestIssuer::start(SigningKey::ed25519("ed")).await;
    let server = protected(&issuer, config(&issuer), &[]).await;
    for index in 0..20 {
        let token = issuer.token(&format!("user-{index}"), AUDIENCE, &[]);
        let result = admitted(call_with(&server, &token).await).await;
        assert_eq!(result["subject"], format!("user-{index}"));
    }
    assert_eq!(issuer.fetches(), 1);
}

#[tokio::test]
async fn an_unreachable_issuer_is_a_503_until_its_keys_can_be_fetched() {
    let issuer = TestIssuer::start(SigningKey::es256("ec")).await;
    issuer.fail_with(http::StatusCode::INTERNAL_SERVER_ERROR);
    let interval = Duration::from_millis(200);
    let server = protected(&issuer, config(&issuer).refetch_interval(interval), &[]).await;
    let token = issuer.token("alice", AUDIENCE, &[]);
    refused(call_with(&server, &token).await, 503, None, -32014).await;
    // Within the interval no second fetch is tried: still 503, from the same one attempt.
    refused(call_with(&server, &token).await, 503, None, -32014).await;
    assert_eq!(issuer.fetches(), 1);
    issuer.rotate(issuer.key());
    tokio::time::sleep(interval + Duration::from_millis(50)).await;
    admitted(call_with(&server, &token).await).await;
    assert_eq!(issuer.fetches(), 2);
}

#[tokio::test]
async fn an_oversized_or_keyless_jwks_is_not_taken() {
    let issuer = TestIssuer::start(SigningKey::es256("ec")).await;
    let interval = Duration::from_millis(100);
    let server = protected(&issuer, config(&issuer).refetch_interval(interval), &[]).await;
    let token = issuer.token("alice", AUDIENCE, &[]);
    let padding = "x".repeat(MAX_JWKS_BYTES);
    let key = issuer.key().public_jwk();
    issuer.serve_raw(format!(r#"{{"keys": [{key}], "padding": "{padding}"}}"#));
    refused(call_with(&server, &token).await, 503, None, -32014).await;
    tokio::time::sleep(interval + Duration::from_millis(50)).await;
    issuer.publish(vec![json!({"kty": "oct", "k": "c2VjcmV0", "kid": "ec"})]);
    refused(call_with(&server, &token).await, 503, None, -32014).await;
    tokio::time::sleep(interval + Duration::from_millis(50)).await;
    issuer.publish(vec![key]);
    admitted(call_with(&server, &token).await).await;
}

#[tokio::test]
async fn aged_keys_still_verify_while_the_issuer_is_down_and_stop_once_it_withdraws_them() {
    let issuer = TestIssuer::start(SigningKey::es256("ec")).await;
    let jwt = config(&issuer)
        .refetch_interval(Duration::from_millis(100))
        .max_key_age(Duration::from_millis(200));
    let server = protected(&issuer, jwt, &[]).await;
    let token = issuer.token("alice", AUDIENCE, &[]);
    admitted(call_with(&server, &token).await).await;
    issuer.fail_with(http::StatusCode::BAD_GATEWAY);
    tokio::time::sleep(Duration::from_millis(250)).await;
    admitted(call_with(&server, &token).await).await;
    assert_eq!(issuer.fetches(), 2, "the aged set was fetched for again");
    issuer.publish(vec![SigningKey::es256("other").public_jwk()]);
    tokio::time::sleep(Duration::from_millis(250)).await;
    assert_invalid(&server, &token).await;
}

#[tokio::test]
async fn a_token_without_the_required_scope_is_a_403_naming_it_and_a_stepped_up_one_passes() {
    let issuer = TestIssuer::start(SigningKey::es256("ec")).await;
    let server = protected(&issuer, config(&issuer), &["tools"]).await;
    let narrow = issuer.token("alice", AUDIENCE, &["read"]);
    let challenge = format!(
        "Bearer error=\"insufficient_scope\", scope=\"tools\", resource_metadata=\"{METADATA_URL}\""
    );
    refused(
        call_with(&server, &narrow).await,
        403,
        Some(&challenge),
        -32002,
    )
    .await;
    // `scp` as an array counts the same as `scope`.
    let mut claims = issuer.claims("alice", AUDIENCE, &[]);
    claims.as_object_mut().unwrap().remove("scope");
    claims["scp"] = json!(["read", "tools"]);
    let stepped_up = issuer.key().sign(&claims);
    let result = admitted(call_with(&server, &stepped_up).await).await;
    assert_eq!(result["scopes"], json!(["read", "tools"]));
    // Without a token, the 401 names the scope too.
    let challenge = format!("Bearer scope=\"tools\", resource_metadata=\"{METADATA_URL}\"");
    refused(call(&server, None).await, 401, Some(&challenge), -32001).await;
}

#[tokio::test]
async fn the_metadata_document_names_the_issuer_as_the_authorization_server() {
    let issuer = TestIssuer::start(SigningKey::es256("ec")).await;
    let server = protected(&issuer, config(&issuer), &[]).await;
    let response = reqwest::get(server.url("/.well-known/oauth-protected-resource/rpc"))
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let document: Value = response.json().await.unwrap();
    assert_eq!(document["resource"], AUDIENCE);
    assert_eq!(document["authorization_servers"], json!([issuer.issuer]));
}

/// Unpadded base64url, for the hand-built `alg: none` token.
fn base64_url(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let word = chunk.iter().enumerate().fold(0u32, |word, (at, byte)| {
            word | (u32::from(*byte) << (16 - 8 * at))
        });
        for at in 0..=chunk.len() {
            out.push(char::from(
                ALPHABET[((word >> (18 - 6 * at)) & 63) as usize],
            ));
        }
    }
    out
}
