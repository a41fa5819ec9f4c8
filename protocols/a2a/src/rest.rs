//! The HTTP+JSON binding: every route of the generated method table's `google.api.http`
//! annotations (the `/{tenant}/…` variants included) under one prefix. A request's path
//! variables, query and body become the method's params; answers are
//! `application/a2a+json`, streams are SSE with one `StreamResponse` per event (ended cleanly
//! when the server's shutdown token fires), errors a `google.rpc.Status` body with the status
//! [`A2aError::status`] gives.

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::{Path, Request, State};
use axum::response::{IntoResponse, Response};
use bytes::BytesMut;
use futures::StreamExt as _;
use http::{HeaderValue, Method, StatusCode, header};
use protocols_runtime::hardening::{BodyLimit, DEFAULT_MAX_BODY_BYTES, Refusal, read_body};
use protocols_runtime::method::{HttpRoute, MethodSpec};
use protocols_runtime::sse::encode_event;
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use crate::compat::{self, Revision, VERSION_HEADER};
use crate::dispatch::Outcome;
use crate::error::A2aError;
use crate::executor::AgentExecutor;
use crate::server::A2aServer;

/// Query parameters that are numbers or booleans on the wire (everything else is a string).
const NUMERIC_QUERY: &[&str] = &["historyLength", "pageSize"];
const BOOLEAN_QUERY: &[&str] = &["includeArtifacts", "returnImmediately"];

/// One segment of a route template: literal text, or a variable with an optional literal
/// suffix (`{id=*}:cancel`).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Segment {
    Literal(String),
    Variable { name: String, suffix: String },
}

/// A parsed `google.api.http` path template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    segments: Vec<Segment>,
}

impl Template {
    pub fn parse(path: &str) -> Self {
        let segments = path
            .split('/')
            .filter(|segment| !segment.is_empty())
            .map(
                |segment| match segment.strip_prefix('{').and_then(|s| s.split_once('}')) {
                    Some((inner, suffix)) => Segment::Variable {
                        name: inner.split('=').next().unwrap_or(inner).to_owned(),
                        suffix: suffix.to_owned(),
                    },
                    None => Segment::Literal(segment.to_owned()),
                },
            )
            .collect();
        Self { segments }
    }

    /// The concrete path for `params`, taking each variable's value out of them (the client
    /// side); `None` when a variable has no string value.
    pub fn fill(&self, params: &mut Map<String, Value>) -> Option<String> {
        let mut path = String::new();
        for segment in &self.segments {
            path.push('/');
            match segment {
                Segment::Literal(text) => path.push_str(text),
                Segment::Variable { name, suffix } => {
                    let value = params.remove(&json_name(name))?;
                    path.push_str(value.as_str()?);
                    path.push_str(suffix);
                }
            }
        }
        Some(path)
    }

    /// How much fixed text the template has; the more, the more specific.
    fn literal_len(&self) -> usize {
        self.segments
            .iter()
            .map(|segment| match segment {
                Segment::Literal(text) => text.len(),
                Segment::Variable { suffix, .. } => suffix.len(),
            })
            .sum()
    }

    /// The variables' values when `path` (split into segments) fits the template.
    pub fn matches(&self, path: &[&str]) -> Option<Vec<(String, String)>> {
        if path.len() != self.segments.len() {
            return None;
        }
        let mut bound = Vec::new();
        for (segment, text) in self.segments.iter().zip(path) {
            match segment {
                Segment::Literal(literal) if literal == text => {}
                Segment::Literal(_) => return None,
                Segment::Variable { name, suffix } => {
                    let value = text.strip_suffix(suffix.as_str())?;
                    if value.is_empty() {
                        return None;
                    }
                    bound.push((name.clone(), value.to_owned()));
                }
            }
        }
        Some(bound)
    }
}

/// `task_id` → `taskId`: path variables are named as in the proto, params as in its JSON.
pub(crate) fn json_name(proto_name: &str) -> String {
    let mut out = String::with_capacity(proto_name.len());
    let mut upper = false;
    for character in proto_name.chars() {
        if character == '_' {
            upper = true;
        } else if upper {
            out.extend(character.to_uppercase());
            upper = false;
        } else {
            out.push(character);
        }
    }
    out
}

/// Which table row a request is for.
enum Routed {
    Found(
        &'static MethodSpec,
        &'static HttpRoute,
        Vec<(String, String)>,
    ),
    WrongVerb,
    Unknown,
}

/// The route for a request; when several templates fit (`/tasks/{id}` and
/// `/tasks/{id}:subscribe` both fit `/tasks/x:subscribe`), the one with more literal text wins.
fn route(methods: &'static [MethodSpec], verb: &Method, path: &[&str]) -> Routed {
    let mut path_known = false;
    let mut best: Option<(usize, Routed)> = None;
    for spec in methods {
        for route in spec.http {
            let template = Template::parse(route.path);
            let Some(bound) = template.matches(path) else {
                continue;
            };
            if !route.verb.eq_ignore_ascii_case(verb.as_str()) {
                path_known = true;
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
        None if path_known => Routed::WrongVerb,
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
    match answer(&server, &rest, request).await {
        Ok(response) => response,
        Err(Failure::A2a(error)) => error.into_response(),
        Err(Failure::Refused(refusal)) => refusal.into_response(),
    }
}

enum Failure {
    A2a(A2aError),
    Refused(Refusal),
}

impl From<A2aError> for Failure {
    fn from(error: A2aError) -> Self {
        Self::A2a(error)
    }
}

async fn answer<E: AgentExecutor>(
    server: &A2aServer<E>,
    rest: &str,
    request: Request,
) -> Result<Response, Failure> {
    let (parts, body) = request.into_parts();
    let revision = Revision::from_header(
        parts
            .headers
            .get(VERSION_HEADER)
            .and_then(|value| value.to_str().ok()),
    )?;
    let mut path: Vec<&str> = rest.split('/').filter(|s| !s.is_empty()).collect();
    // 0.3 clients put the version segment after the interface URL.
    if revision == Revision::V0_3 && path.first() == Some(&"v1") {
        path.remove(0);
    }
    let (spec, route, bound) = match self::route(crate::v1::METHODS, &parts.method, &path) {
        Routed::Found(spec, route, bound) => (spec, route, bound),
        Routed::WrongVerb => return Err(Failure::Refused(Refusal::MethodNotAllowed(None))),
        Routed::Unknown => return Err(Failure::A2a(A2aError::MethodNotFound)),
    };
    let mut params = Map::new();
    if route.body == "*" {
        let limit = parts
            .extensions
            .get::<BodyLimit>()
            .map_or(DEFAULT_MAX_BODY_BYTES, |limit| limit.0);
        let bytes = read_body(body, limit).await.map_err(Failure::Refused)?;
        if !bytes.is_empty() {
            if !is_json(&parts.headers) {
                return Err(Failure::Refused(Refusal::UnsupportedMediaType));
            }
            let value: Value = serde_json::from_slice(&bytes)
                .map_err(|error| A2aError::InvalidParams(error.to_string()))?;
            let value = match revision {
                Revision::V1 => value,
                Revision::V0_3 => compat::params_from_v03(spec.name, &value),
            };
            let Value::Object(fields) = value else {
                return Err(
                    A2aError::InvalidParams("the body must be a JSON object".into()).into(),
                );
            };
            params = fields;
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
    let caller = server
        .callers
        .caller_of(spec.name, &parts.headers, &parts.extensions)
        .await;
    let params = if params.is_empty() && spec.params_optional {
        Value::Null
    } else {
        Value::Object(params)
    };
    match server.answer(revision, spec.name, params, caller).await? {
        Outcome::Single(value) => Ok(json_response(&value)),
        Outcome::Stream(events) => Ok(sse_response(events, server.shutdown.clone())),
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
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        let escaped = bytes
            .get(index + 1..index + 3)
            .filter(|_| bytes[index] == b'%')
            .and_then(|hex| std::str::from_utf8(hex).ok())
            .and_then(|hex| u8::from_str_radix(hex, 16).ok());
        match (bytes[index], escaped) {
            (_, Some(byte)) => {
                out.push(byte);
                index += 3;
            }
            (b'+', None) => {
                out.push(b' ');
                index += 1;
            }
            (byte, None) => {
                out.push(byte);
                index += 1;
            }
        }
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

fn json_response(value: &Value) -> Response {
    let mut response = Response::new(Body::from(value.to_string()));
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(crate::A2A_JSON_MEDIA_TYPE),
    );
    response
}

/// The events as an SSE body that ends when `shutdown` fires (the server's drain deadline): the
/// body then finishes like any other (a `retry` its last chunk, the connection not reset), so a
/// drain is not held open past its deadline by a task that streams for long.
fn sse_response(
    events: futures::stream::BoxStream<'static, Result<Value, protocols_runtime::ErrorObject>>,
    shutdown: CancellationToken,
) -> Response {
    let cut = shutdown.clone();
    let retry = futures::stream::once(async move { cut.is_cancelled() }).filter_map(|cut| {
        let mut out = BytesMut::new();
        protocols_runtime::sse::encode_retry(&mut out, std::time::Duration::from_secs(1));
        std::future::ready(cut.then(|| Ok::<_, std::convert::Infallible>(out.freeze())))
    });
    let body = events.take_until(shutdown.cancelled_owned()).map(|event| {
        let mut out = BytesMut::new();
        match event {
            Ok(event) => encode_event(&mut out, None, None, &event.to_string()),
            Err(error) => {
                let body = A2aError::from_error_object(&error)
                    .to_rest_body()
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
        WrongVerb,
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
            super::Routed::WrongVerb => Routed::WrongVerb,
            super::Routed::Unknown => Routed::Unknown,
        }
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

    fn segments(path: &str) -> Vec<&str> {
        path.split('/').filter(|s| !s.is_empty()).collect()
    }

    #[test]
    fn a_variable_with_a_verb_suffix_binds_only_the_id() {
        let template = Template::parse("/tasks/{id=*}:cancel");
        assert_eq!(
            template.matches(&segments("/tasks/abc:cancel")),
            Some(vec![("id".into(), "abc".into())])
        );
        assert_eq!(template.matches(&segments("/tasks/abc")), None);
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
                let verb = Method::from_bytes(route.verb.as_bytes()).unwrap();
                match super::route(crate::v1::METHODS, &verb, &segments(&concrete)) {
                    Routed::Found(found, _, _) => assert_eq!(found.name, spec.name, "{concrete}"),
                    _ => panic!("{} {concrete} not routed", route.verb),
                }
            }
        }
    }

    #[test]
    fn a_known_path_with_the_wrong_verb_is_not_an_unknown_path() {
        assert!(matches!(
            route(
                crate::v1::METHODS,
                &Method::DELETE,
                &segments("/message:send")
            ),
            Routed::WrongVerb
        ));
    }

    #[test]
    fn proto_names_become_json_names() {
        assert_eq!(json_name("task_id"), "taskId");
        assert_eq!(json_name("id"), "id");
    }
}
