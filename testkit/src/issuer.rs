//! A real token issuer for the tests of a JWT-protected server: signing keys generated in the
//! test (RSA, P-256, Ed25519, with the RustCrypto crates the runtime verifies with), a JWKS
//! document served over HTTP on a free loopback port, rotated or broken on demand, a count of
//! how often it was fetched, and tokens minted with any of the keys.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// The path the JWKS is served at.
pub const JWKS_PATH: &str = "/jwks.json";

/// A private key and the public JWK naming it.
#[derive(Clone)]
pub struct SigningKey {
    /// The key id the JWK and each token's header carry.
    pub kid: String,
    /// The algorithm the key signs with.
    pub alg: Algorithm,
    encoding: EncodingKey,
    jwk: Jwk,
}

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SigningKey")
            .field("kid", &self.kid)
            .field("alg", &self.alg)
            .finish_non_exhaustive()
    }
}

fn os_rng() -> rsa::rand_core::UnwrapErr<getrandom::SysRng> {
    rsa::rand_core::UnwrapErr(getrandom::SysRng)
}

impl SigningKey {
    /// A fresh 2048-bit RSA key for `alg` (RS256 or PS256).
    pub fn rsa(kid: &str, alg: Algorithm) -> Self {
        use rsa::pkcs1::EncodeRsaPrivateKey as _;
        let key = rsa::PrivateKey::new(&mut getrandom::SysRng, 2048).expect("RSA key generation");
        let der = key
            .to_pkcs1_der()
            .expect("PKCS#1 encoding")
            .as_bytes()
            .to_vec();
        Self::from_der(kid, alg, EncodingKey::from_rsa_der(&der))
    }

    /// A fresh P-256 key (ES256).
    pub fn es256(kid: &str) -> Self {
        use p256::pkcs8::EncodePrivateKey as _;
        let key = <p256::ecdsa::SigningKey as rsa::Generate>::generate_from_rng(&mut os_rng());
        let der = key
            .to_pkcs8_der()
            .expect("PKCS#8 encoding")
            .as_bytes()
            .to_vec();
        Self::from_der(kid, Algorithm::ES256, EncodingKey::from_ec_der(&der))
    }

    /// A fresh Ed25519 key (EdDSA).
    pub fn ed25519(kid: &str) -> Self {
        use ed25519_dalek::pkcs8::EncodePrivateKey as _;
        let key = ed25519_dalek::SigningKey::generate(&mut os_rng());
        // The version-1 PKCS#8 form (no public key inside) is the one jsonwebtoken reads.
        let bytes = ed25519_dalek::pkcs8::KeypairBytes {
            secret_key: key.to_bytes(),
            public_key: None,
        };
        let der = bytes
            .to_pkcs8_der()
            .expect("PKCS#8 encoding")
            .as_bytes()
            .to_vec();
        Self::from_der(kid, Algorithm::EdDSA, EncodingKey::from_ed_der(&der))
    }

    fn from_der(kid: &str, alg: Algorithm, encoding: EncodingKey) -> Self {
        let mut jwk = Jwk::from_encoding_key(&encoding, alg).expect("public JWK");
        jwk.common.key_id = Some(kid.to_owned());
        Self {
            kid: kid.to_owned(),
            alg,
            encoding,
            jwk,
        }
    }

    /// The same key published under another `kid`.
    pub fn renamed(&self, kid: &str) -> Self {
        let mut renamed = self.clone();
        renamed.kid = kid.to_owned();
        renamed.jwk.common.key_id = Some(kid.to_owned());
        renamed
    }

    /// The same key for another algorithm of its family (an RSA key for PS256, say), its JWK
    /// naming that algorithm.
    pub fn with_alg(&self, alg: Algorithm) -> Self {
        let mut other = self.clone();
        other.alg = alg;
        other.jwk.common.key_algorithm = Some(alg.into());
        other
    }

    /// The public JWK, as the JWKS publishes it.
    pub fn public_jwk(&self) -> Value {
        serde_json::to_value(&self.jwk).expect("JWK serializes")
    }

    /// The public JWK without its `alg` (as some issuers publish RSA keys).
    pub fn public_jwk_without_alg(&self) -> Value {
        let mut jwk = self.public_jwk();
        if let Some(object) = jwk.as_object_mut() {
            object.remove("alg");
        }
        jwk
    }

    /// A token with `claims`, signed with this key and naming it in `kid`.
    pub fn sign(&self, claims: &Value) -> String {
        let mut header = Header::new(self.alg);
        header.kid = Some(self.kid.clone());
        self.sign_with_header(&header, claims)
    }

    /// A token with `header` and `claims`, signed with this key under the header's `alg`.
    pub fn sign_with_header(&self, header: &Header, claims: &Value) -> String {
        jsonwebtoken::encode(header, claims, &self.encoding).expect("token signs")
    }
}

/// Seconds since the Unix epoch, as JWT times are counted.
pub fn now() -> i64 {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO);
    i64::try_from(since.as_secs()).unwrap_or(i64::MAX)
}

/// What the JWKS endpoint answers.
#[derive(Debug, Clone)]
enum Serving {
    Document(Value),
    Status(StatusCode),
    Raw(String),
}

struct Shared {
    serving: Mutex<Serving>,
    fetches: AtomicUsize,
    delay: Mutex<Duration>,
}

/// The issuer: its JWKS endpoint on a loopback port, and the key it signs with by default.
pub struct TestIssuer {
    /// The issuer URL tokens name in `iss`.
    pub issuer: String,
    /// The loopback address the JWKS endpoint listens on.
    pub address: SocketAddr,
    key: Mutex<SigningKey>,
    shared: Arc<Shared>,
    stop: CancellationToken,
}

impl std::fmt::Debug for TestIssuer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestIssuer")
            .field("issuer", &self.issuer)
            .field("address", &self.address)
            .finish_non_exhaustive()
    }
}

impl Drop for TestIssuer {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

async fn serve_jwks(State(shared): State<Arc<Shared>>) -> Response {
    shared.fetches.fetch_add(1, Ordering::SeqCst);
    let delay = *shared.delay.lock().expect("delay lock");
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
    let serving = shared.serving.lock().expect("serving lock").clone();
    match serving {
        Serving::Document(document) => axum::Json(document).into_response(),
        Serving::Status(status) => status.into_response(),
        Serving::Raw(body) => ([("content-type", "application/json")], body).into_response(),
    }
}

impl TestIssuer {
    /// An issuer publishing `key` alone, served until the issuer is dropped.
    pub async fn start(key: SigningKey) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind loopback");
        let address = listener.local_addr().expect("local address");
        let shared = Arc::new(Shared {
            serving: Mutex::new(Serving::Document(json!({ "keys": [key.public_jwk()] }))),
            fetches: AtomicUsize::new(0),
            delay: Mutex::new(Duration::ZERO),
        });
        let router = Router::new()
            .route(JWKS_PATH, get(serve_jwks))
            .with_state(Arc::clone(&shared));
        let stop = CancellationToken::new();
        let stopped = stop.clone();
        tokio::spawn(async move {
            let _ = axum::serve(listener, router)
                .with_graceful_shutdown(async move { stopped.cancelled().await })
                .await;
        });
        Self {
            issuer: format!("http://{address}"),
            address,
            key: Mutex::new(key),
            shared,
            stop,
        }
    }

    /// The URL of the JWKS endpoint.
    pub fn jwks_url(&self) -> String {
        format!("http://{}{JWKS_PATH}", self.address)
    }

    /// How often the JWKS has been fetched.
    pub fn fetches(&self) -> usize {
        self.shared.fetches.load(Ordering::SeqCst)
    }

    /// The key tokens are signed with by [`token`](Self::token).
    pub fn key(&self) -> SigningKey {
        self.key.lock().expect("key lock").clone()
    }

    /// Publishes exactly `jwks` (e.g. several keys, or keys without `alg`).
    pub fn publish(&self, keys: Vec<Value>) {
        *self.shared.serving.lock().expect("serving lock") =
            Serving::Document(json!({ "keys": keys }));
    }

    /// Rotates: `key` signs from now on and is the only key published.
    pub fn rotate(&self, key: SigningKey) {
        self.publish(vec![key.public_jwk()]);
        *self.key.lock().expect("key lock") = key;
    }

    /// The JWKS endpoint answers `status` with no document.
    pub fn fail_with(&self, status: StatusCode) {
        *self.shared.serving.lock().expect("serving lock") = Serving::Status(status);
    }

    /// The JWKS endpoint answers `body` as JSON.
    pub fn serve_raw(&self, body: String) {
        *self.shared.serving.lock().expect("serving lock") = Serving::Raw(body);
    }

    /// Each fetch of the JWKS takes `delay` before it is answered.
    pub fn delay_fetches(&self, delay: Duration) {
        *self.shared.delay.lock().expect("delay lock") = delay;
    }

    /// Claims a valid access token for `audience` carries: this issuer, `subject`, `scopes`,
    /// issued now and valid for five minutes.
    pub fn claims(&self, subject: &str, audience: &str, scopes: &[&str]) -> Value {
        let now = now();
        json!({
            "iss": self.issuer,
            "sub": subject,
            "aud": audience,
            "iat": now,
            "nbf": now,
            "exp": now + 300,
            "scope": scopes.join(" "),
        })
    }

    /// A valid token for `subject` with `scopes`, for `audience`.
    pub fn token(&self, subject: &str, audience: &str, scopes: &[&str]) -> String {
        self.key().sign(&self.claims(subject, audience, scopes))
    }
}
