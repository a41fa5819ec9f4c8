//! Browser access from other origins, opt-in: tower-http's `CorsLayer` for the origins a
//! deployment lists. It sits inside the guard (so preflights carry the security headers and
//! meet the `Origin` check, which admits the listed origins too) and in front of
//! authentication, so a preflight — which never carries credentials — is answered before any
//! token is asked for, and a refusal's `WWW-Authenticate` is readable by the page.

use std::time::Duration;

use http::{HeaderName, HeaderValue, Method};
use tower_http::cors::{AllowOrigin, CorsLayer};

use super::HardeningError;
use super::origin::canonical_origin;

/// The request headers a page may send: credentials, the JSON body, and the headers MCP and
/// A2A's transports read.
pub const CORS_ALLOWED_HEADERS: [&str; 6] = [
    "authorization",
    "content-type",
    "mcp-session-id",
    "mcp-protocol-version",
    "last-event-id",
    "a2a-version",
];

/// The response headers a page may read: the session a POST opened, and why a request was
/// refused.
pub const CORS_EXPOSED_HEADERS: [&str; 2] = ["mcp-session-id", "www-authenticate"];

/// How long a browser may reuse a preflight's answer.
const CORS_MAX_AGE: Duration = Duration::from_secs(600);

/// The layer answering for `origins` (each `http[s]://host[:port]`).
pub(crate) fn cors_layer(origins: &[String]) -> Result<CorsLayer, HardeningError> {
    let origins = origins
        .iter()
        .map(|origin| {
            canonical_origin(origin)
                .and_then(|text| HeaderValue::from_str(&text).ok())
                .ok_or_else(|| HardeningError::InvalidAllowedOrigin(origin.clone()))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(CorsLayer::new()
        .allow_origin(AllowOrigin::list(origins))
        .allow_methods([Method::GET, Method::POST, Method::DELETE])
        .allow_headers(CORS_ALLOWED_HEADERS.map(HeaderName::from_static))
        .expose_headers(CORS_EXPOSED_HEADERS.map(HeaderName::from_static))
        .max_age(CORS_MAX_AGE))
}

#[cfg(test)]
mod tests {
    use axum::Router;
    use axum::body::Body;
    use axum::extract::Request;
    use axum::routing::post;
    use http::{StatusCode, header};
    use tower::ServiceExt as _;

    use super::super::{HardeningConfig, HardeningError, OriginPolicy};
    use super::*;

    /// A public server bound to a non-loopback address, whose default admits any origin.
    async fn status_for(config: HardeningConfig, origin: &str) -> StatusCode {
        let app = config
            .bind_address(([0, 0, 0, 0], 8080).into())
            .build()
            .unwrap()
            .wrap(Router::new().route("/mcp", post(|| async { "ok" })));
        let request = Request::post("/mcp")
            .header(header::HOST, "api.example")
            .header(header::ORIGIN, origin)
            .body(Body::empty())
            .unwrap();
        app.oneshot(request).await.unwrap().status()
    }

    #[tokio::test]
    async fn listing_cors_origins_narrows_a_public_servers_any_origin_default_to_them() {
        let anyone = HardeningConfig::new();
        assert_eq!(
            status_for(anyone, "https://evil.example").await,
            StatusCode::OK
        );
        let listed = HardeningConfig::new().cors_origins(["https://app.example"]);
        assert_eq!(
            status_for(listed.clone(), "https://app.example").await,
            StatusCode::OK
        );
        assert_eq!(
            status_for(listed, "https://evil.example").await,
            StatusCode::FORBIDDEN
        );
        // An explicit policy stays as stated, with the listed origins added.
        let explicit = HardeningConfig::new()
            .origin_policy(OriginPolicy::Allow(vec!["https://admin.example".into()]))
            .cors_origins(["https://app.example"]);
        for origin in ["https://admin.example", "https://app.example"] {
            assert_eq!(status_for(explicit.clone(), origin).await, StatusCode::OK);
        }
    }

    #[test]
    fn a_cors_origin_is_named_as_a_browser_serialises_it() {
        assert_eq!(
            canonical_origin("HTTP://Localhost:80").as_deref(),
            Some("http://localhost")
        );
        assert_eq!(
            canonical_origin("https://app.example:8443").as_deref(),
            Some("https://app.example:8443")
        );
        for not_an_origin in ["app.example", "https://app.example/path", "ftp://a", "null"] {
            assert_eq!(canonical_origin(not_an_origin), None, "{not_an_origin}");
        }
        assert_eq!(
            HardeningConfig::new()
                .cors_origins(["https://a/x"])
                .build()
                .err(),
            Some(HardeningError::InvalidAllowedOrigin("https://a/x".into()))
        );
    }
}
