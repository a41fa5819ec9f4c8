//! The hardening's own cost per request, in process (no sockets): the same tiny router served
//! bare and wrapped by [`Hardening::wrap`] with the default configuration (public, loopback
//! host check, rate limit charged but never refusing, concurrency limit, deadline), and with an
//! authenticator, driven with `tower::ServiceExt::oneshot` on a current-thread runtime.

use std::hint::black_box;

use axum::Router;
use axum::body::Body;
use axum::extract::Request;
use axum::routing::post;
use bytes::Bytes;
use criterion::{Criterion, criterion_group, criterion_main};
use protocols_runtime::hardening::{
    AuthPolicy, BearerAuthenticator, BoundedBody, HardeningConfig, Principal, RateLimit,
};
use tower::ServiceExt as _;

const BODY: &str = r#"{"jsonrpc":"2.0","id":1,"method":"echo","params":{"text":"hello, world"}}"#;

async fn bare(body: Bytes) -> Bytes {
    body
}

async fn bounded(BoundedBody(body): BoundedBody) -> Bytes {
    body
}

fn request() -> Request {
    Request::post("/mcp")
        .header(http::header::HOST, "127.0.0.1:3000")
        .header(http::header::AUTHORIZATION, "Bearer bench-token")
        .body(Body::from(BODY))
        .unwrap_or_default()
}

fn hardened(config: HardeningConfig) -> Option<Router> {
    let hardening = config
        .bind_address(([127, 0, 0, 1], 3000).into())
        .rate_limit(Some(RateLimit::new(1e12, u32::MAX)))
        .build()
        .ok()?;
    Some(hardening.wrap(Router::new().route("/mcp", post(bounded))))
}

fn hardening_layers(criterion: &mut Criterion) {
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return;
    };
    let authenticated = HardeningConfig::new()
        .authenticator(
            BearerAuthenticator::new()
                .with_token("bench-token", Principal::new("bench", ["rpc".to_owned()])),
        )
        .auth_policy(AuthPolicy::RequireScopes(vec!["rpc".into()]));
    let routers = [
        ("bare", Some(Router::new().route("/mcp", post(bare)))),
        ("hardened_public", hardened(HardeningConfig::new())),
        ("hardened_bearer", hardened(authenticated)),
    ];
    let mut group = criterion.benchmark_group("hardening_per_request");
    for (name, router) in routers {
        let Some(router) = router else {
            eprintln!("{name}: the benchmark configuration did not build");
            continue;
        };
        group.bench_function(name, |bencher| {
            bencher.iter(|| {
                let router = router.clone();
                let status = runtime.block_on(async move {
                    router
                        .oneshot(request())
                        .await
                        .map(|response| response.status())
                });
                black_box(status)
            });
        });
    }
    group.finish();
}

criterion_group!(benches, hardening_layers);
criterion_main!(benches);
