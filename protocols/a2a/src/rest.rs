//! The HTTP+JSON binding: every route of the generated method table's `google.api.http`
//! annotations (the `/{tenant}/…` variants included) under one prefix, and `POST` for
//! `SubscribeToTask` as the specification's binding table names it. A request's path variables,
//! query and body become the method's params; answers are `application/a2a+json`, streams are
//! SSE with one `StreamResponse` per event (ended cleanly when the server's shutdown token
//! fires), errors — refusals of a wrong method or media type included — a `google.rpc.Status`
//! body with the status [`A2aError::status`] gives. A 0.3 request (no `A2A-Version`, or `0.3`)
//! is served in 0.3's REST shapes ([`crate::compat::proto_json`]), errors as the bare JSON-RPC
//! error object 0.3 clients read.

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::{Path, Request, State};
use axum::response::Response;
use bytes::BytesMut;
use futures::StreamExt as _;
use http::{HeaderValue, Method, StatusCode, header};
use protocols_runtime::hardening::{BodyLimit, DEFAULT_MAX_BODY_BYTES, Refusal, read_body};
use protocols_runtime::jsonrpc::to_raw;
use protocols_runtime::method::{HttpRoute, MethodSpec};
use protocols_runtime::sse::encode_event;
use protocols_runtime::{Profile, RequestMeta};
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

// The route templates are the binding's, shared with the client; named here too, where they
// always were.
pub use crate::binding::Template;
use crate::binding::{json_name, verbs};
use crate::compat::{self, Revision, VERSION_HEADER};
use crate::dispatch::Outcome;
use crate::error::A2aError;
use crate::executor::AgentExecutor;
use crate::server::A2aServer;

/// Query parameters that are numbers or booleans on the wire (everything else is a string).
const NUMERIC_QUERY: &[&str] = &["historyLength", "pageSize"];
const BOOLEAN_QUERY: &[&str] = &["includeArtifacts", "returnImmediately"];

/// Which table row a request is for.
enum Routed {
    Found(
        &'static MethodSpec,
        &'static HttpRoute,
        Vec<(String, String)>,
    ),
    /// The path exists for these verbs only.
    WrongVerb(Vec<&'static str>),
    Unknown,
}

/// The route for a request; when several templates fit (`/tasks/{id}` and
/// `/tasks/{id}:subscribe` both fit `/tasks/x:subscribe`), the one with more literal text wins.
fn route(methods: &'static [MethodSpec], verb: &Method, path: &[&str]) -> Routed {
    let mut allowed: Vec<&'static str> = Vec::new();
    let mut best: Option<(usize, Routed)> = None;
    for spec in methods {
        for route in spec.http {
            let template = Template::parse(route.path);
            let Some(bound) = template.matches(path) else {
                continue;
            };
            let served = verbs(spec, route);
            if !served.contains(&verb.as_str()) {
                for known in served {
                    if !allowed.contains(known) {
                        allowed.push(known);
                    }
                }
                continue;
            }
            let score = template.literal_len();
            if best
                .as_ref()
                .is_none_or(|(best_score, _)| score > *best_score)
            {
                best = Some((score, Routed::Found(spec, route, bound)));
            }
        }
    }
    match best {
        Some((_, found)) => found,
        None if !allowed.is_empty() => Routed::WrongVerb(allowed),
        None => Routed::Unknown,
    }
}

/// The routes under `prefix`.
pub(crate) fn routes<E: AgentExecutor>(server: A2aServer<E>, prefix: &str) -> Router {
    let prefix = prefix.trim_end_matches('/');
    Router::new()
        .route(
            &format!("{prefix}/{{*rest}}"),
            axum::routing::any(serve::<E>),
        )
        .with_state(Arc::new(server))
}

async fn serve<E: AgentExecutor>(
    State(server): State<Arc<A2aServer<E>>>,
    Path(rest): Path<String>,
    request: Request,
) -> Response {
    // An unreadable version header is answered in 1.0's shape: nothing says the caller is 0.3.
    let revision = Revision::from_header(
        request
            .headers()
            .get(VERSION_HEADER)
            .and_then(|value| value.to_str().ok()),
    );
    match revision {
        Ok(revision) => match answer(&server, revision, &rest, request).await {
            Ok(response) => response,
            Err(error) => error.into_rest_response(revision),
        },
        Err(error) => error.into_rest_response(Revision::V1),
    }
}

/// The path's segments as 1.0 routes name them: 0.3 clients put a `v1` segment after the
/// interface URL, and fetch the extended card at `card`.
fn segments(rest: &str, revision: Revision) -> Vec<&str> {
    let mut path: Vec<&str> = rest.split('/').filter(|s| !s.is_empty()).collect();
    if revision == Revision::V0_3 {
        if path.first() == Some(&"v1") {
            path.remove(0);
        }
        if path == ["card"] {
            path = vec!["extendedAgentCard"];
        }
    }
    path
}

async fn answer<E: AgentExecutor>(
    server: &A2aServer<E>,
    revision: Revision,
    rest: &str,
    request: Request,
) -> Result<Response, A2aError> {
    let (parts, body) = request.into_parts();
    let path = segments(rest, revision);
    let (spec, route, bound) = match self::route(crate::v1::METHODS, &parts.method, &path) {
        Routed::Found(spec, route, bound) => (spec, route, bound),
        Routed::WrongVerb(allowed) => {
            let allow = HeaderValue::from_str(&allowed.join(", ")).ok();
            return Err(A2aError::Refused(Refusal::MethodNotAllowed(allow)));
        }
        Routed::Unknown => return Err(A2aError::Refused(Refusal::NotFound)),
    };
    let mut params = Map::new();
    if route.body == "*" {
        let limit = parts
            .extensions
            .get::<BodyLimit>()
            .map_or(DEFAULT_MAX_BODY_BYTES, |limit| limit.0);
        let bytes = read_body(body, limit).await.map_err(A2aError::Refused)?;
        if !bytes.is_empty() {
            params = body_params(spec.name, revision, &parts.headers, &bytes)?;
        }
    }
    if let Some(query) = parts.uri.query() {
        for (key, value) in url_pairs(query) {
            params.insert(key.clone(), query_value(&key, value));
        }
    }
    for (name, value) in bound {
        params.insert(json_name(&name), Value::String(value));
    }
    // The headers and extensions (the principal, the peer's address) are not read again here:
    // they travel with the caller, to the executor.
    let request = RequestMeta::new(parts.headers, parts.extensions, &Profile::new());
    let caller = server.callers.caller_of(spec.name, Arc::new(request)).await;
    let params = if params.is_empty() && spec.params_optional {
        None
    } else {
        Some(to_raw(&params).map_err(|_| A2aError::Internal)?)
    };
    let method = spec.name;
    Ok(
        match server
            .answer(revision, method, params.as_deref(), caller)
            .await?
        {
            Outcome::Single(answer) => {
                json_response(in_rest_shape(revision, method, answer)?, revision)
            }
            Outcome::Stream(events) => {
                let events = events
                    .map(move |event| {
                        event.and_then(|event| {
                            in_rest_shape(revision, method, event)
                                .map_err(|error| error.to_error_object())
                        })
                    })
                    .boxed();
                sse_response(events, revision, server.shutdown.clone())
            }
        },
    )
}

/// A JSON body's fields as 1.0 params of `method`.
fn body_params(
    method: &str,
    revision: Revision,
    headers: &http::HeaderMap,
    bytes: &[u8],
) -> Result<Map<String, Value>, A2aError> {
    if !is_json(headers) {
        return Err(A2aError::Refused(Refusal::UnsupportedMediaType));
    }
    let value: Value =
        serde_json::from_slice(bytes).map_err(|_| A2aError::Refused(Refusal::ParseError))?;
    let value = match revision {
        Revision::V1 => value,
        Revision::V0_3 => {
            compat::params_from_v03(method, &compat::proto_json::body_to_v03(method, &value))?
        }
    };
    match value {
        Value::Object(fields) => Ok(fields),
        _ => Err(A2aError::invalid_params("the body must be a JSON object")),
    }
}

/// An answer of `method` as `revision`'s REST binding shapes it (the service already answered
/// 0.3 in its JSON-RPC shapes).
fn in_rest_shape(
    revision: Revision,
    method: &str,
    answer: Box<RawValue>,
) -> Result<Box<RawValue>, A2aError> {
    match revision {
        Revision::V1 => Ok(answer),
        Revision::V0_3 => {
            let answer: Value =
                serde_json::from_str(answer.get()).map_err(|_| A2aError::Internal)?;
            to_raw(&compat::proto_json::result_from_v03(method, &answer))
                .map_err(|_| A2aError::Internal)
        }
    }
}

fn is_json(headers: &http::HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.split(';').next())
        .map(str::trim)
        .is_some_and(|media| {
            media.eq_ignore_ascii_case(crate::A2A_JSON_MEDIA_TYPE)
                || media.eq_ignore_ascii_case("application/json")
        })
}

fn url_pairs(query: &str) -> Vec<(String, String)> {
    query
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            (percent_decode(key), percent_decode(value))
        })
        .collect()
}

fn percent_decode(text: &str) -> String {
    let mut rest = text.as_bytes();
    let mut out = Vec::with_capacity(rest.len());
    while let Some((&byte, after)) = rest.split_first() {
        let escaped = after
            .get(..2)
            .filter(|_| byte == b'%')
            .and_then(|hex| std::str::from_utf8(hex).ok())
            .and_then(|hex| u8::from_str_radix(hex, 16).ok());
        rest = match (byte, escaped) {
            (_, Some(decoded)) => {
                out.push(decoded);
                after.get(2..).unwrap_or_default()
            }
            (b'+', None) => {
                out.push(b' ');
                after
            }
            (byte, None) => {
                out.push(byte);
                after
            }
        };
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn query_value(key: &str, value: String) -> Value {
    if NUMERIC_QUERY.contains(&key)
        && let Ok(number) = value.parse::<i64>()
    {
        return Value::from(number);
    }
    if BOOLEAN_QUERY.contains(&key)
        && let Ok(flag) = value.parse::<bool>()
    {
        return Value::Bool(flag);
    }
    Value::String(value)
}

/// The media type `revision`'s REST binding answers with.
const fn media_type(revision: Revision) -> &'static str {
    match revision {
        Revision::V1 => crate::A2A_JSON_MEDIA_TYPE,
        Revision::V0_3 => "application/json",
    }
}

fn json_response(answer: Box<RawValue>, revision: Revision) -> Response {
    let mut response = Response::new(Body::from(String::from(Box::<str>::from(answer))));
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(media_type(revision)),
    );
    response
}

/// The events as an SSE body that ends when `shutdown` fires (the server's drain deadline): the
/// body then finishes like any other (a `retry` its last chunk, the connection not reset), so a
/// drain is not held open past its deadline by a task that streams for long.
fn sse_response(
    events: futures::stream::BoxStream<
        'static,
        Result<Box<RawValue>, protocols_runtime::ErrorObject>,
    >,
    revision: Revision,
    shutdown: CancellationToken,
) -> Response {
    let cut = shutdown.clone();
    let retry = futures::stream::once(async move { cut.is_cancelled() }).filter_map(|cut| {
        let mut out = BytesMut::new();
        protocols_runtime::sse::encode_retry(&mut out, std::time::Duration::from_secs(1));
        std::future::ready(cut.then(|| Ok::<_, std::convert::Infallible>(out.freeze())))
    });
    let body = events
        .take_until(shutdown.cancelled_owned())
        .map(move |event| {
            let mut out = BytesMut::new();
            match event {
                Ok(event) => encode_event(&mut out, None, None, event.get()),
                Err(error) => {
                    let error = A2aError::from_error_object(&error);
                    let body = match revision {
                        Revision::V1 => error.to_rest_body(),
                        Revision::V0_3 => error.to_legacy_rest_body(),
                    }
                    .to_string();
                    // Clients tell a failed stream apart by this event name.
                    let name = protocols_runtime::sse::EventName::new("error").ok();
                    encode_event(&mut out, name.as_ref(), None, &body);
                }
            }
            Ok::<_, std::convert::Infallible>(out.freeze())
        });
    let mut response = Response::new(Body::from_stream(body.chain(retry)));
    *response.status_mut() = StatusCode::OK;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// The route matcher and the query reading, for the fuzz target in `fuzz/`. Not part of the
/// API.
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing {
    use http::Method;
    use serde_json::Value;

    /// Which table row a request path is for.
    #[derive(Debug)]
    pub enum Routed {
        Found {
            method: &'static str,
            verb: &'static str,
            template: &'static str,
            bound: Vec<(String, String)>,
        },
        /// The path fits, not with this verb; `allowed` are the verbs it does take.
        WrongVerb {
            allowed: Vec<&'static str>,
        },
        Unknown,
    }

    /// The 1.0 route for `verb` and `path` (split into segments), as a request is routed.
    pub fn route(verb: &Method, path: &[&str]) -> Routed {
        match super::route(crate::v1::METHODS, verb, path) {
            super::Routed::Found(spec, route, bound) => Routed::Found {
                method: spec.name,
                verb: route.verb,
                template: route.path,
                bound,
            },
            super::Routed::WrongVerb(allowed) => Routed::WrongVerb { allowed },
            super::Routed::Unknown => Routed::Unknown,
        }
    }

    /// The verbs a method-table row is served with.
    pub fn served_verbs(
        spec: &protocols_runtime::method::MethodSpec,
        route: &protocols_runtime::method::HttpRoute,
    ) -> &'static [&'static str] {
        super::verbs(spec, route)
    }

    /// A path variable's params name (`task_id` → `taskId`).
    pub fn json_name(proto_name: &str) -> String {
        super::json_name(proto_name)
    }

    /// The params a query string adds, in order.
    pub fn query(query: &str) -> Vec<(String, Value)> {
        super::url_pairs(query)
            .into_iter()
            .map(|(key, value)| {
                let value = super::query_value(&key, value);
                (key, value)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(path: &str) -> Vec<&str> {
        path.split('/').filter(|s| !s.is_empty()).collect()
    }

    #[test]
    fn a_variable_with_a_verb_suffix_binds_only_the_id() {
        let template = Template::parse("/tasks/{id=*}:cancel");
        assert_eq!(
            template.matches(&split("/tasks/abc:cancel")),
            Some(vec![("id".into(), "abc".into())])
        );
        assert_eq!(template.matches(&split("/tasks/abc")), None);
    }

    #[test]
    fn every_table_route_and_its_tenant_variant_is_reachable() {
        for spec in crate::v1::METHODS {
            for route in spec.http {
                let concrete = route
                    .path
                    .replace("{tenant}", "acme")
                    .replace("{id=*}", "i1")
                    .replace("{task_id=*}", "t1");
                for verb in verbs(spec, route) {
                    let verb = Method::from_bytes(verb.as_bytes()).unwrap();
                    match super::route(crate::v1::METHODS, &verb, &split(&concrete)) {
                        Routed::Found(found, _, _) => {
                            assert_eq!(found.name, spec.name, "{concrete}");
                        }
                        _ => panic!("{verb} {concrete} not routed"),
                    }
                }
            }
        }
    }

    #[test]
    fn a_known_path_with_the_wrong_verb_is_not_an_unknown_path() {
        assert!(matches!(
            route(crate::v1::METHODS, &Method::DELETE, &split("/message:send")),
            Routed::WrongVerb(allowed) if allowed == ["POST"]
        ));
    }

    #[test]
    fn subscribe_is_served_on_post_and_get() {
        for verb in [Method::POST, Method::GET] {
            assert!(matches!(
                route(crate::v1::METHODS, &verb, &split("/tasks/t1:subscribe")),
                Routed::Found(spec, _, _) if spec.name == crate::v1::methods::SUBSCRIBE_TO_TASK
            ));
        }
    }

    #[test]
    fn percent_decoding_takes_escapes_and_leaves_a_cut_escape_alone() {
        assert_eq!(percent_decode("a%20b+c"), "a b c");
        assert_eq!(percent_decode("%4"), "%4");
        assert_eq!(percent_decode("%zz%"), "%zz%");
        assert_eq!(percent_decode("%C3%A9"), "é");
    }

    #[test]
    fn proto_names_become_json_names() {
        assert_eq!(json_name("task_id"), "taskId");
        assert_eq!(json_name("id"), "id");
    }
}
