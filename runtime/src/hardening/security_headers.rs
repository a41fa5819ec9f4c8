//! Security headers stamped on every response by one layer around the whole router, and the
//! conversion of the framework's bare error responses (axum's empty 404/405, tower's empty 413)
//! into [`Refusal`] bodies.
//!
//! The values are configuration, parsed once when the hardening is built: a value this server
//! cannot send is a start-up error, never a per-request failure.

use std::sync::Arc;

use axum::body::HttpBody as _;
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, HeaderName, HeaderValue, header};

use super::HardeningError;
use super::refusal::Refusal;

/// The security headers to send, as configured text. `None` omits a header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecurityHeaders {
    /// `Content-Security-Policy`.
    pub content_security_policy: Option<String>,
    /// `Strict-Transport-Security`.
    pub strict_transport_security: Option<String>,
    /// `X-Frame-Options`.
    pub x_frame_options: Option<String>,
    /// `X-Content-Type-Options`.
    pub x_content_type_options: Option<String>,
    /// `Cache-Control`.
    pub cache_control: Option<String>,
    /// `Referrer-Policy`.
    pub referrer_policy: Option<String>,
}

/// The default values, as constants so the parsed headers can share static storage.
const DEFAULT_CONTENT_SECURITY_POLICY: &str = "default-src 'none'; frame-ancestors 'none'";
const DEFAULT_STRICT_TRANSPORT_SECURITY: &str = "max-age=63072000; includeSubDomains";
const DEFAULT_X_FRAME_OPTIONS: &str = "DENY";
const DEFAULT_X_CONTENT_TYPE_OPTIONS: &str = "nosniff";
const DEFAULT_CACHE_CONTROL: &str = "no-store";
const DEFAULT_REFERRER_POLICY: &str = "no-referrer";

impl Default for SecurityHeaders {
    /// A JSON/SSE API serves nothing a browser should render, frame, cache or refer from.
    fn default() -> Self {
        Self {
            content_security_policy: Some(DEFAULT_CONTENT_SECURITY_POLICY.into()),
            strict_transport_security: Some(DEFAULT_STRICT_TRANSPORT_SECURITY.into()),
            x_frame_options: Some(DEFAULT_X_FRAME_OPTIONS.into()),
            x_content_type_options: Some(DEFAULT_X_CONTENT_TYPE_OPTIONS.into()),
            cache_control: Some(DEFAULT_CACHE_CONTROL.into()),
            referrer_policy: Some(DEFAULT_REFERRER_POLICY.into()),
        }
    }
}

impl SecurityHeaders {
    /// No security header at all: for a deployment whose proxy stamps its own, and for
    /// measuring what stamping costs.
    pub fn none() -> Self {
        Self {
            content_security_policy: None,
            strict_transport_security: None,
            x_frame_options: None,
            x_content_type_options: None,
            cache_control: None,
            referrer_policy: None,
        }
    }

    /// Parses the configured values into the form the layer stamps on each response.
    pub(crate) fn parse(&self) -> Result<ParsedSecurityHeaders, HardeningError> {
        let configured = [
            (
                header::CONTENT_SECURITY_POLICY,
                &self.content_security_policy,
                DEFAULT_CONTENT_SECURITY_POLICY,
            ),
            (
                header::STRICT_TRANSPORT_SECURITY,
                &self.strict_transport_security,
                DEFAULT_STRICT_TRANSPORT_SECURITY,
            ),
            (
                header::X_FRAME_OPTIONS,
                &self.x_frame_options,
                DEFAULT_X_FRAME_OPTIONS,
            ),
            (
                header::X_CONTENT_TYPE_OPTIONS,
                &self.x_content_type_options,
                DEFAULT_X_CONTENT_TYPE_OPTIONS,
            ),
            (
                header::CACHE_CONTROL,
                &self.cache_control,
                DEFAULT_CACHE_CONTROL,
            ),
            (
                header::REFERRER_POLICY,
                &self.referrer_policy,
                DEFAULT_REFERRER_POLICY,
            ),
        ];
        let mut headers = Vec::with_capacity(configured.len());
        for (name, value, default) in configured {
            let Some(text) = value else { continue };
            // A default value is sent from static storage: cloning it per response then
            // touches no reference count.
            let value = if text == default {
                HeaderValue::from_static(default)
            } else {
                HeaderValue::from_str(text)
                    .map_err(|_| HardeningError::InvalidSecurityHeader(name.as_str().to_owned()))?
            };
            headers.push((name, value));
        }
        Ok(ParsedSecurityHeaders::new(headers))
    }
}

/// The validated headers, in the order they are stamped.
#[derive(Debug, Clone)]
pub(crate) struct ParsedSecurityHeaders {
    headers: Arc<[(HeaderName, HeaderValue)]>,
    /// The whole header map of a JSON answer that carries no header of its own but its media
    /// type: the most common response, built as a copy of this ([`AnswerHeaders`]) or stamped
    /// by copying it.
    json_answer: Arc<HeaderMap>,
}

/// What a hardening hands the transport with each request it admits, for building a plain
/// JSON answer: its prepared header map (the media type and its security headers), or nothing
/// when the request came through the router-wide layers. An answer built as a copy of the map
/// leaves its stamp nothing to do; one built without it carries its media type alone, which
/// the stamp completes. Cloning it is one reference count.
#[derive(Debug, Clone, Default)]
pub(crate) struct AnswerHeaders(Option<Arc<HeaderMap>>);

impl AnswerHeaders {
    /// The header map a JSON answer labelled `media_type` starts with: a copy of the prepared
    /// map when that labels answers the same way, else room for the media type alone.
    pub(crate) fn json(&self, media_type: &HeaderValue) -> HeaderMap {
        match &self.0 {
            Some(prepared) if *media_type == JSON => HeaderMap::clone(prepared),
            _ => media_type_only(media_type),
        }
    }
}

/// A map holding `media_type` alone, sized for it: the stamp replaces it whole.
#[inline(never)]
fn media_type_only(media_type: &HeaderValue) -> HeaderMap {
    let mut headers = HeaderMap::with_capacity(1);
    headers.insert(header::CONTENT_TYPE, media_type.clone());
    headers
}

/// The media type of a JSON answer.
const JSON: HeaderValue = HeaderValue::from_static("application/json");

impl ParsedSecurityHeaders {
    /// Stamps the headers on `response`.
    ///
    /// Each is inserted into the response's own map, replacing any value of the response's
    /// own under that name: these are policies about the response as a whole, and a handler's
    /// copy must not leave a client choosing between two. Room for all of them is reserved
    /// first, so the map grows (and rehashes) at most once; a response built with
    /// [`response_headers`] has the room already and does not grow at all.
    ///
    /// A JSON answer whose only header is its media type gets a copy of a prepared map instead:
    /// one exact-sized copy costs less than six inserts into a map sized past the allocator's
    /// small-size cache, and holds the same headers. (A copy is not used for other responses:
    /// their own headers would have to be appended to its exact-sized storage.)
    ///
    /// A copy of that map a transport built its answer with ([`AnswerHeaders`]), untouched
    /// since, already carries every header and is left as it is.
    pub(crate) fn stamp(&self, headers: &mut HeaderMap) {
        if self.is_json_answer_copy(headers) {
            return;
        }
        if carries_only_json_media_type(headers) {
            *headers = HeaderMap::clone(&self.json_answer);
        } else {
            self.stamp_one_by_one(headers);
        }
    }

    /// What a transport builds the JSON answers of the requests this hardening admits with.
    pub(crate) fn answer_headers(&self) -> AnswerHeaders {
        AnswerHeaders(Some(Arc::clone(&self.json_answer)))
    }

    /// Whether `headers` holds exactly the prepared JSON answer's headers, in its order, each
    /// value sharing the prepared one's storage (as a copy's does). Comparing where a value's
    /// bytes live rather than the bytes keeps this a few instructions a header; a map that
    /// merely holds equal text is stamped in full instead, with the same result.
    fn is_json_answer_copy(&self, headers: &HeaderMap) -> bool {
        if headers.len() != self.headers.len() + 1 {
            return false;
        }
        // The prepared map is the media type followed by `self.headers`, whose values it
        // shares; walking a slice beside the map costs less than walking a second map.
        let mut own = headers.iter();
        if !own
            .next()
            .is_some_and(|(name, value)| *name == header::CONTENT_TYPE && *value == JSON)
        {
            return false;
        }
        own.zip(self.headers.iter())
            .all(|((name, value), (prepared_name, prepared_value))| {
                name == prepared_name && std::ptr::eq(value.as_bytes(), prepared_value.as_bytes())
            })
    }

    /// Inserts each header into `headers`; out of line, so the common JSON answer's path
    /// stays short.
    #[inline(never)]
    fn stamp_one_by_one(&self, headers: &mut HeaderMap) {
        headers.reserve(self.headers.len());
        for (name, value) in self.headers.iter() {
            headers.insert(name.clone(), value.clone());
        }
    }

    fn new(headers: Vec<(HeaderName, HeaderValue)>) -> Self {
        let mut json_answer = HeaderMap::with_capacity(headers.len() + 1);
        json_answer.insert(header::CONTENT_TYPE, JSON);
        for (name, value) in &headers {
            json_answer.insert(name.clone(), value.clone());
        }
        Self {
            headers: Arc::from(headers),
            json_answer: Arc::new(json_answer),
        }
    }
}

/// Whether `headers` is exactly `content-type: application/json`.
fn carries_only_json_media_type(headers: &HeaderMap) -> bool {
    headers.len() == 1
        && headers
            .iter()
            .next()
            .is_some_and(|(name, value)| *name == header::CONTENT_TYPE && *value == JSON)
}

/// How many headers a response carries beyond the security headers before its map must grow:
/// its own (content type, session id, allow, retry-after) and the content length added later.
const SPARE_HEADERS: usize = 4;

/// An empty header map with room for the default security headers and the response's own, for
/// responses the runtime builds with headers beyond a JSON media type (streams, refusals,
/// rejections), so stamping them never grows the map.
pub(crate) fn response_headers() -> HeaderMap {
    HeaderMap::with_capacity(6 + SPARE_HEADERS)
}

/// A framework error response with no body becomes the matching [`Refusal`].
///
/// axum answers an unknown path or method, and tower an over-limit body, with an empty body;
/// clients of a JSON-RPC endpoint expect an error object. Responses that already carry a body
/// or a media type are left untouched, so refusals built elsewhere pass through unchanged.
pub(crate) fn refuse_bare_error(response: &mut Response) {
    let status = response.status();
    // Nearly every response is a success, decided from the status alone; what an error needs
    // (its body's size, its headers) is looked at out of line.
    if status.is_client_error() || status.is_server_error() {
        give_bare_error_a_body(response);
    }
}

/// The error half of [`refuse_bare_error`].
#[cold]
#[inline(never)]
fn give_bare_error_a_body(response: &mut Response) {
    let is_bare = response.body().size_hint().exact() == Some(0)
        && !response.headers().contains_key(header::CONTENT_TYPE);
    if !is_bare {
        return;
    }
    let allow = response.headers().get(header::ALLOW);
    let Some(refusal) = Refusal::for_bare_status(response.status(), allow) else {
        return;
    };
    let (refused_parts, body) = refusal.into_response().into_parts();
    // Keep what the framework said (Allow, Retry-After) and add the refusal's media type.
    for (name, value) in &refused_parts.headers {
        response.headers_mut().insert(name.clone(), value.clone());
    }
    *response.body_mut() = body;
}

/// The router's fallback: an unknown path is a [`Refusal::NotFound`].
pub(crate) fn refuse_unknown_path() -> Response {
    Refusal::NotFound.into_response()
}

/// Drains a body into bytes; used by tests and by callers that need a refusal's text.
#[cfg(test)]
pub(crate) async fn body_bytes(body: axum::body::Body) -> bytes::Bytes {
    use http_body_util::BodyExt as _;
    body.collect()
        .await
        .map(http_body_util::Collected::to_bytes)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hardening::guard::{GuardLayer, GuardPolicy};
    use crate::hardening::origin::{HostPolicy, OriginPolicy, SiteCheck};
    use axum::Router;
    use axum::body::Body;
    use axum::extract::Request;
    use axum::routing::get;
    use http::{Method, StatusCode};
    use tower::ServiceExt as _;

    fn guarded(router: Router, headers: &SecurityHeaders) -> Router {
        let policy = GuardPolicy {
            headers: headers.parse().unwrap(),
            site: SiteCheck::new(&HostPolicy::AnyHost, &OriginPolicy::AnyOrigin).unwrap(),
            in_flight: None,
            deadline: None,
            proxies: None,
        };
        router
            .fallback(|| async { refuse_unknown_path() })
            .layer(GuardLayer(Arc::new(policy)))
    }

    fn stamped(router: Router) -> Router {
        guarded(router, &SecurityHeaders::default())
    }

    fn assert_security_headers(response: &Response) {
        let h = response.headers();
        assert_eq!(
            h[header::CONTENT_SECURITY_POLICY],
            "default-src 'none'; frame-ancestors 'none'"
        );
        assert!(h.contains_key(header::STRICT_TRANSPORT_SECURITY));
        assert_eq!(h[header::X_FRAME_OPTIONS], "DENY");
        assert_eq!(h[header::X_CONTENT_TYPE_OPTIONS], "nosniff");
        assert_eq!(h[header::CACHE_CONTROL], "no-store");
        assert_eq!(h[header::REFERRER_POLICY], "no-referrer");
    }

    async fn send(router: Router, method: Method, path: &str) -> Response {
        let request = Request::builder()
            .method(method)
            .uri(path)
            .body(Body::empty())
            .unwrap();
        router.oneshot(request).await.unwrap()
    }

    #[tokio::test]
    async fn a_handler_response_carries_every_security_header() {
        let router = stamped(Router::new().route("/mcp", get(|| async { "ok" })));
        let response = send(router, Method::GET, "/mcp").await;
        assert_eq!(response.status(), StatusCode::OK);
        assert_security_headers(&response);
    }

    #[tokio::test]
    async fn the_frameworks_own_404_carries_headers_and_a_jsonrpc_body() {
        let router = stamped(Router::new().route("/mcp", get(|| async { "ok" })));
        let response = send(router, Method::GET, "/nowhere").await;
        assert_eq!(response.status(), StatusCode::NOT_FOUND);
        assert_security_headers(&response);
        let body: serde_json::Value =
            serde_json::from_slice(&body_bytes(response.into_body()).await).unwrap();
        assert_eq!(body["error"]["code"], Refusal::NotFound.code());
    }

    #[tokio::test]
    async fn the_frameworks_own_405_keeps_allow_and_gains_headers_and_a_jsonrpc_body() {
        let router = stamped(Router::new().route("/mcp", get(|| async { "ok" })));
        let response = send(router, Method::PUT, "/mcp").await;
        assert_eq!(response.status(), StatusCode::METHOD_NOT_ALLOWED);
        assert_security_headers(&response);
        assert!(response.headers().contains_key(header::ALLOW));
        assert_eq!(response.headers()[header::CONTENT_TYPE], "application/json");
        let body: serde_json::Value =
            serde_json::from_slice(&body_bytes(response.into_body()).await).unwrap();
        assert_eq!(body["error"]["code"], -32007);
    }

    #[tokio::test]
    async fn a_handler_error_with_its_own_body_is_left_as_written() {
        let router = stamped(
            Router::new().route("/mcp", get(|| async { (StatusCode::NOT_FOUND, "custom") })),
        );
        let response = send(router, Method::GET, "/mcp").await;
        assert_security_headers(&response);
        assert_eq!(&body_bytes(response.into_body()).await[..], b"custom");
    }

    #[tokio::test]
    async fn a_security_header_set_by_a_handler_is_replaced_not_duplicated() {
        let router = stamped(Router::new().route(
            "/mcp",
            get(|| async { ([(header::CACHE_CONTROL, "public, max-age=60")], "ok") }),
        ));
        let response = send(router, Method::GET, "/mcp").await;
        let values: Vec<_> = response
            .headers()
            .get_all(header::CACHE_CONTROL)
            .iter()
            .collect();
        assert_eq!(values, ["no-store"]);
    }

    #[tokio::test]
    async fn a_cacheable_response_keeps_its_cache_control_and_gets_every_other_header() {
        let router = stamped(Router::new().route(
            "/card",
            get(|| async {
                let mut response = "card".into_response();
                response
                    .extensions_mut()
                    .insert(crate::hardening::Cacheable(HeaderValue::from_static(
                        "public, max-age=300",
                    )));
                response
            }),
        ));
        let response = send(router, Method::GET, "/card").await;
        let values: Vec<_> = response
            .headers()
            .get_all(header::CACHE_CONTROL)
            .iter()
            .collect();
        assert_eq!(values, ["public, max-age=300"]);
        assert_eq!(
            response.headers()[header::X_CONTENT_TYPE_OPTIONS],
            "nosniff"
        );
        assert!(
            response
                .extensions()
                .get::<crate::hardening::Cacheable>()
                .is_none()
        );
    }

    #[test]
    fn a_security_header_value_that_cannot_be_sent_fails_at_construction() {
        let headers = SecurityHeaders {
            content_security_policy: Some("default-src\n'none'".into()),
            ..SecurityHeaders::default()
        };
        assert!(matches!(
            headers.parse(),
            Err(HardeningError::InvalidSecurityHeader(name)) if name == "content-security-policy"
        ));
    }

    #[tokio::test]
    async fn an_omitted_header_is_not_sent() {
        let headers = SecurityHeaders {
            strict_transport_security: None,
            ..SecurityHeaders::default()
        };
        let router = guarded(
            Router::new().route("/mcp", get(|| async { "ok" })),
            &headers,
        );
        let response = send(router, Method::GET, "/mcp").await;
        assert!(
            !response
                .headers()
                .contains_key(header::STRICT_TRANSPORT_SECURITY)
        );
        assert_eq!(response.headers()[header::X_FRAME_OPTIONS], "DENY");
    }

    /// The names and values of `response`'s headers, sorted.
    fn header_list(response: &Response) -> Vec<(String, String)> {
        let mut list: Vec<_> = response
            .headers()
            .iter()
            .map(|(name, value)| (name.to_string(), value.to_str().unwrap().to_owned()))
            .collect();
        list.sort();
        list
    }

    #[test]
    fn a_json_answer_stamped_from_the_prepared_copy_carries_what_stamping_one_by_one_gives() {
        for config in [
            SecurityHeaders::default(),
            SecurityHeaders {
                strict_transport_security: None,
                cache_control: Some("no-cache".into()),
                ..SecurityHeaders::default()
            },
            SecurityHeaders::none(),
        ] {
            let parsed = config.parse().unwrap();
            let json_answer = || {
                let mut response = Response::new(Body::from("{}"));
                response.headers_mut().insert(header::CONTENT_TYPE, JSON);
                response
            };
            let copied = stamped_by(&parsed, json_answer());
            // A second header of the response's own takes the one-by-one path.
            let mut one_by_one = json_answer();
            one_by_one
                .headers_mut()
                .insert("x-own", HeaderValue::from_static("1"));
            let mut one_by_one = stamped_by(&parsed, one_by_one);
            one_by_one.headers_mut().remove("x-own");
            assert_eq!(header_list(&copied), header_list(&one_by_one));
            assert_eq!(copied.headers()[header::CONTENT_TYPE], "application/json");
        }
    }

    #[test]
    fn a_full_json_answer_is_sent_as_is_and_an_altered_one_is_stamped_again() {
        let parsed = SecurityHeaders::default().parse().unwrap();
        let answer_with = |headers: HeaderMap| {
            let mut response = Response::new(Body::from("{}"));
            *response.headers_mut() = headers;
            response
        };
        let copy = stamped_by(&parsed, answer_with(HeaderMap::clone(&parsed.json_answer)));
        assert_eq!(
            header_list(&copy),
            header_list(&stamped_by(&parsed, json_only()))
        );
        // A policy header a handler overwrote in the copy is put back.
        let mut altered = HeaderMap::clone(&parsed.json_answer);
        altered.insert(header::CACHE_CONTROL, HeaderValue::from_static("public"));
        let altered = stamped_by(&parsed, answer_with(altered));
        assert_eq!(altered.headers()[header::CACHE_CONTROL], "no-store");
        assert_security_headers(&altered);
        // Equal text in storage of its own still ends up right.
        let mut retyped = HeaderMap::clone(&parsed.json_answer);
        retyped.insert(
            header::X_FRAME_OPTIONS,
            HeaderValue::from_str("DENY").unwrap(),
        );
        assert_security_headers(&stamped_by(&parsed, answer_with(retyped)));
    }

    #[test]
    fn an_answer_built_with_the_prepared_headers_is_left_as_built_and_any_other_is_stamped() {
        let parsed = SecurityHeaders::default().parse().unwrap();
        let built = parsed.answer_headers().json(&JSON);
        assert!(parsed.is_json_answer_copy(&built));
        assert_security_headers(&stamped_by(&parsed, answer_with_headers(built)));
        // Equal text in storage of its own is not taken for a copy.
        let mut retyped = parsed.answer_headers().json(&JSON);
        retyped.insert(
            header::X_FRAME_OPTIONS,
            HeaderValue::from_str("DENY").unwrap(),
        );
        assert!(!parsed.is_json_answer_copy(&retyped));
        // Another media type, or no hardening's headers at all: the media type alone, which
        // the stamp completes.
        let other = HeaderValue::from_static("application/vnd.test+json");
        for (headers, media_type) in [
            (parsed.answer_headers(), &other),
            (AnswerHeaders::default(), &JSON),
        ] {
            let own = headers.json(media_type);
            assert_eq!(own.len(), 1);
            let stamped = stamped_by(&parsed, answer_with_headers(own));
            assert_eq!(stamped.headers()[header::CONTENT_TYPE], media_type);
            assert_security_headers(&stamped);
        }
    }

    fn answer_with_headers(headers: HeaderMap) -> Response {
        let mut response = Response::new(Body::from("{}"));
        *response.headers_mut() = headers;
        response
    }

    fn stamped_by(parsed: &ParsedSecurityHeaders, mut response: Response) -> Response {
        parsed.stamp(response.headers_mut());
        response
    }

    fn json_only() -> Response {
        let mut response = Response::new(Body::from("{}"));
        response.headers_mut().insert(header::CONTENT_TYPE, JSON);
        response
    }

    #[test]
    fn a_json_answer_with_a_header_of_its_own_keeps_it_when_stamped() {
        let parsed = SecurityHeaders::default().parse().unwrap();
        let mut response = Response::new(Body::from("{}"));
        response.headers_mut().insert(header::CONTENT_TYPE, JSON);
        response
            .headers_mut()
            .insert("test-session-id", HeaderValue::from_static("abc"));
        let stamped = stamped_by(&parsed, response);
        assert_eq!(stamped.headers()["test-session-id"], "abc");
        assert_security_headers(&stamped);
    }

    #[tokio::test]
    async fn with_no_security_headers_configured_a_response_carries_only_its_own() {
        let router = guarded(
            Router::new().route("/mcp", get(|| async { "ok" })),
            &SecurityHeaders::none(),
        );
        let response = send(router, Method::GET, "/mcp").await;
        let names: Vec<&str> = response
            .headers()
            .keys()
            .map(|name| name.as_str())
            .collect();
        assert_eq!(names, ["content-type", "content-length"]);
    }
}
