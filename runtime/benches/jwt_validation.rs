//! What authenticating one request costs once the issuer's key is cached: the JWT authenticator
//! for each algorithm against the static bearer table (the baseline, measured in the same run).
//! The issuer is the test kit's, on a loopback port; only its first fetch touches the network.
//!
//! `cargo bench -p protocols-runtime --bench jwt_validation` runs criterion; `… -- exactly KIND N`
//! authenticates N times inside `measured` (for `valgrind --tool=callgrind --collect-atstart=no
//! --toggle-collect='*measured*'`, whose count divided by N is instructions per request; see
//! `scripts/bench-auth.sh`). KIND is one of `bearer rs256 ps256 es256 eddsa`.

use std::hint::black_box;

use criterion::{Criterion, criterion_group};
use http::{HeaderMap, HeaderValue, header};
use jsonwebtoken::Algorithm;
use protocols_runtime::hardening::{
    AuthFailure, Authenticator, BearerAuthenticator, JwtAuthenticator, JwtConfig, Principal,
};
use protocols_testkit::issuer::{SigningKey, TestIssuer};

const AUDIENCE: &str = "https://bench.example/mcp";
const KINDS: [&str; 5] = ["bearer", "rs256", "ps256", "es256", "eddsa"];

fn bearer_headers(token: &str) -> HeaderMap {
    let mut headers = HeaderMap::new();
    if let Ok(value) = HeaderValue::from_str(&format!("Bearer {token}")) {
        headers.insert(header::AUTHORIZATION, value);
    }
    headers
}

/// An authenticator under test and the headers of a request it admits.
enum Subject {
    Bearer(BearerAuthenticator),
    Jwt(Box<JwtAuthenticator>),
}

impl Subject {
    async fn authenticate(&self, headers: &HeaderMap) -> Result<Principal, AuthFailure> {
        match self {
            Self::Bearer(bearer) => bearer.authenticate(headers).await,
            Self::Jwt(jwt) => jwt.authenticate(headers).await,
        }
    }
}

struct Setup {
    runtime: tokio::runtime::Runtime,
    /// Kept alive: its JWKS endpoint is what the authenticators fetched from.
    _issuer: TestIssuer,
    cases: Vec<(&'static str, Subject, HeaderMap)>,
}

fn setup() -> Option<Setup> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .ok()?;
    let rsa = SigningKey::rsa("rsa", Algorithm::RS256);
    let keys = [
        ("rs256", rsa.clone()),
        ("ps256", rsa.renamed("pss").with_alg(Algorithm::PS256)),
        ("es256", SigningKey::es256("ec")),
        ("eddsa", SigningKey::ed25519("ed")),
    ];
    let issuer = runtime.block_on(TestIssuer::start(rsa));
    issuer.publish(keys.iter().map(|(_, key)| key.public_jwk()).collect());
    let mut cases = vec![(
        "bearer",
        Subject::Bearer(
            BearerAuthenticator::new()
                .with_token("bench-token", Principal::new("bench", ["tools".to_owned()])),
        ),
        bearer_headers("bench-token"),
    )];
    for (name, key) in keys {
        let config = JwtConfig::new(issuer.jwks_url(), issuer.issuer.clone(), AUDIENCE);
        let jwt = JwtAuthenticator::new(config).ok()?;
        let token = key.sign(&issuer.claims("bench", AUDIENCE, &["tools"]));
        cases.push((name, Subject::Jwt(Box::new(jwt)), bearer_headers(&token)));
    }
    // Every authenticator admits its request once, so each key is cached before measuring.
    for (name, subject, headers) in &cases {
        if runtime.block_on(subject.authenticate(headers)).is_err() {
            eprintln!("{name}: the warm-up request was not admitted");
            return None;
        }
    }
    Some(Setup {
        runtime,
        _issuer: issuer,
        cases,
    })
}

fn jwt_validation(criterion: &mut Criterion) {
    let Some(setup) = setup() else {
        return;
    };
    let mut group = criterion.benchmark_group("authenticate_cached");
    for (name, subject, headers) in &setup.cases {
        group.bench_function(*name, |bencher| {
            bencher.iter(|| black_box(setup.runtime.block_on(subject.authenticate(headers))));
        });
    }
    group.finish();
}

/// The loop callgrind counts: `count` authentications, each awaited to completion.
#[inline(never)]
fn measured(setup: &Setup, subject: &Subject, headers: &HeaderMap, count: u64) -> u64 {
    let mut admitted = 0;
    for _ in 0..count {
        if setup
            .runtime
            .block_on(subject.authenticate(black_box(headers)))
            .is_ok()
        {
            admitted += 1;
        }
    }
    admitted
}

fn exactly(kind: &str, count: u64) -> Result<(), String> {
    let setup = setup().ok_or("the benchmark setup failed")?;
    let (_, subject, headers) = setup
        .cases
        .iter()
        .find(|(name, ..)| *name == kind)
        .ok_or_else(|| format!("unknown kind {kind}; one of {KINDS:?}"))?;
    let admitted = measured(&setup, subject, headers, count);
    if admitted == count {
        Ok(())
    } else {
        Err(format!("{kind}: only {admitted} of {count} admitted"))
    }
}

criterion_group!(benches, jwt_validation);

fn main() {
    let arguments: Vec<String> = std::env::args().skip(1).collect();
    if let [mode, kind, count] = arguments.as_slice()
        && mode == "exactly"
    {
        let outcome = count
            .parse()
            .map_err(|error| format!("bad count {count}: {error}"))
            .and_then(|count| exactly(kind, count));
        if let Err(error) = outcome {
            eprintln!("jwt_validation: {error}");
            std::process::exit(1);
        }
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
