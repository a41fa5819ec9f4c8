//! The typed A2A client: card discovery, and the generated `RemoteAgent` proxies (1.0 and 0.3)
//! over two transports implementing the runtime's `RpcClient` — JSON-RPC over HTTP (streams read
//! from SSE, one JSON-RPC response per event) and HTTP+JSON (each method's route taken from the
//! generated method table, params bound to path, query or body).

use std::sync::atomic::{AtomicI64, Ordering};

use futures::StreamExt as _;
use http::{HeaderMap, HeaderValue, header};
use protocols_runtime::ErrorObject;
use protocols_runtime::method::{ClientError, RawResultStream, RpcClient};
use protocols_runtime::sse::SseDecoder;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use crate::binding::Template;
use crate::card::{
    HTTP_JSON_BINDING, JSONRPC_BINDING, LEGACY_PROTOCOL_VERSION, PROTOCOL_VERSION, WELL_KNOWN_PATH,
};
use crate::compat::VERSION_HEADER;
use crate::error::A2aError;
use crate::v1::types::AgentCard;

/// The largest SSE event a client accepts.
const MAX_EVENT_BYTES: usize = 4 * 1024 * 1024;

fn transport_error(error: impl std::error::Error + Send + Sync + 'static) -> ClientError {
    ClientError::Transport(Box::new(error))
}

/// Fetches and parses the public card under `base_url`.
///
/// # Errors
/// The request failed or the document is not a 1.0 card.
pub async fn discover(http: &reqwest::Client, base_url: &str) -> Result<AgentCard, ClientError> {
    let url = format!("{}{WELL_KNOWN_PATH}", base_url.trim_end_matches('/'));
    let response = http.get(url).send().await.map_err(transport_error)?;
    let bytes = response.bytes().await.map_err(transport_error)?;
    serde_json::from_slice(&bytes).map_err(|source| ClientError::InvalidResult {
        method: "agent card",
        source,
    })
}

/// The URL of the card's 1.0 interface with `binding`.
pub fn interface_url(card: &AgentCard, binding: &str) -> Option<String> {
    versioned_interface_url(card, binding, PROTOCOL_VERSION)
}

/// The URL of the card's interface with `binding` announcing `version` (`1.0`, `0.3`).
pub fn versioned_interface_url(card: &AgentCard, binding: &str, version: &str) -> Option<String> {
    card.supported_interfaces
        .iter()
        .find(|interface| {
            interface.protocol_binding == binding && interface.protocol_version == version
        })
        .map(|interface| interface.url.clone())
}

/// Which revision a transport speaks: 1.0 sends `A2A-Version: 1.0`, 0.3 sends none (absent
/// means 0.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireRevision {
    /// A2A 1.0.
    V1,
    /// A2A 0.3.
    V0_3,
}

fn base_headers(revision: WireRevision, extra: &HeaderMap) -> HeaderMap {
    let mut headers = extra.clone();
    if revision == WireRevision::V1 {
        headers.insert(VERSION_HEADER, HeaderValue::from_static(PROTOCOL_VERSION));
    }
    headers
}

/// JSON-RPC 2.0 over HTTP.
#[derive(Debug)]
pub struct JsonRpcTransport {
    http: reqwest::Client,
    url: String,
    revision: WireRevision,
    headers: HeaderMap,
    next_id: AtomicI64,
}

impl JsonRpcTransport {
    /// A JSON-RPC transport posting to `url` in `revision`'s wire shape.
    pub fn new(http: reqwest::Client, url: impl Into<String>, revision: WireRevision) -> Self {
        Self {
            http,
            url: url.into(),
            revision,
            headers: HeaderMap::new(),
            next_id: AtomicI64::new(1),
        }
    }

    /// Sends `headers` (e.g. `Authorization`) with every call.
    #[must_use]
    pub fn with_headers(mut self, headers: HeaderMap) -> Self {
        self.headers = headers;
        self
    }

    fn request(
        &self,
        method: &str,
        params: Option<&RawValue>,
        accept: &'static str,
    ) -> reqwest::RequestBuilder {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.http
            .post(&self.url)
            .headers(base_headers(self.revision, &self.headers))
            .header(header::CONTENT_TYPE, "application/json")
            .header(header::ACCEPT, accept)
            .body(body.to_string())
    }
}

/// The result or error of one JSON-RPC response.
fn rpc_outcome(text: &str) -> Result<Box<RawValue>, ClientError> {
    #[derive(serde::Deserialize)]
    struct Envelope {
        result: Option<Box<RawValue>>,
        error: Option<ErrorObject>,
    }
    let envelope: Envelope = serde_json::from_str(text).map_err(transport_error)?;
    match (envelope.result, envelope.error) {
        (_, Some(error)) => Err(ClientError::Rejected(error)),
        (Some(result), None) => Ok(result),
        (None, None) => Err(ClientError::Rejected(ErrorObject::internal_error())),
    }
}

fn is_event_stream(response: &reqwest::Response) -> bool {
    response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.starts_with("text/event-stream"))
}

/// The events of an SSE body, as (name, data).
fn sse_events(
    response: reqwest::Response,
) -> futures::stream::BoxStream<'static, Result<(Option<String>, String), ClientError>> {
    let chunks = response.bytes_stream();
    futures::stream::unfold(
        (chunks, SseDecoder::new(MAX_EVENT_BYTES), false),
        |(mut chunks, mut decoder, ended)| async move {
            loop {
                if let Some(event) = decoder.next_event() {
                    let item = event
                        .map(|event| {
                            (
                                event.name().map(|name| name.as_str().to_owned()),
                                event.into_data(),
                            )
                        })
                        .map_err(transport_error);
                    return Some((item, (chunks, decoder, ended)));
                }
                if ended {
                    return None;
                }
                match chunks.next().await {
                    Some(Ok(chunk)) => decoder.push(&chunk),
                    Some(Err(error)) => {
                        return Some((Err(transport_error(error)), (chunks, decoder, true)));
                    }
                    None => {
                        decoder.push(b"\n\n");
                        return decoder.next_event().map(|event| {
                            (
                                event
                                    .map(|event| {
                                        (
                                            event.name().map(|name| name.as_str().to_owned()),
                                            event.into_data(),
                                        )
                                    })
                                    .map_err(transport_error),
                                (chunks, SseDecoder::new(MAX_EVENT_BYTES), true),
                            )
                        });
                    }
                }
            }
        },
    )
    .filter(|item| futures::future::ready(!matches!(item, Ok((_, data)) if data.is_empty())))
    .boxed()
}

impl RpcClient for JsonRpcTransport {
    async fn call(
        &self,
        method: &'static str,
        params: Option<Box<RawValue>>,
    ) -> Result<Box<RawValue>, ClientError> {
        let response = self
            .request(method, params.as_deref(), "application/json")
            .send()
            .await
            .map_err(transport_error)?;
        let text = response.text().await.map_err(transport_error)?;
        rpc_outcome(&text)
    }

    async fn notify(
        &self,
        method: &'static str,
        params: Option<Box<RawValue>>,
    ) -> Result<(), ClientError> {
        let body = json!({"jsonrpc": "2.0", "method": method, "params": params});
        self.http
            .post(&self.url)
            .headers(base_headers(self.revision, &self.headers))
            .header(header::CONTENT_TYPE, "application/json")
            .body(body.to_string())
            .send()
            .await
            .map_err(transport_error)?;
        Ok(())
    }

    async fn call_streaming(
        &self,
        method: &'static str,
        params: Option<Box<RawValue>>,
    ) -> Result<RawResultStream, ClientError> {
        let response = self
            .request(method, params.as_deref(), "text/event-stream")
            .send()
            .await
            .map_err(transport_error)?;
        if !is_event_stream(&response) {
            let text = response.text().await.map_err(transport_error)?;
            return rpc_outcome(&text).map(|_| futures::stream::empty().boxed());
        }
        Ok(sse_events(response)
            .map(|event| event.and_then(|(_, data)| rpc_outcome(&data)))
            .boxed())
    }
}

/// HTTP+JSON: each method on its route from the generated table.
#[derive(Debug)]
pub struct RestTransport {
    http: reqwest::Client,
    base_url: String,
    revision: WireRevision,
    headers: HeaderMap,
}

impl RestTransport {
    /// A REST transport calling under `base_url` in `revision`'s wire shape.
    pub fn new(http: reqwest::Client, base_url: impl Into<String>, revision: WireRevision) -> Self {
        Self {
            http,
            base_url: base_url.into().trim_end_matches('/').to_owned(),
            revision,
            headers: HeaderMap::new(),
        }
    }

    /// Headers sent with every call (credentials, say).
    #[must_use]
    pub fn with_headers(mut self, headers: HeaderMap) -> Self {
        self.headers = headers;
        self
    }

    fn request(
        &self,
        method: &str,
        params: Option<&RawValue>,
        accept: &'static str,
    ) -> Result<reqwest::RequestBuilder, ClientError> {
        let spec = crate::v1::METHODS
            .iter()
            .find(|spec| spec.name == method)
            .ok_or_else(|| ClientError::Rejected(A2aError::MethodNotFound.to_error_object()))?;
        let route = spec.http.first().ok_or(ClientError::StreamingUnsupported)?;
        let mut fields: Map<String, Value> = match params {
            Some(raw) => serde_json::from_str(raw.get()).map_err(transport_error)?,
            None => Map::new(),
        };
        let path = Template::parse(route.path)
            .fill(&mut fields)
            .ok_or_else(|| {
                ClientError::Rejected(
                    A2aError::invalid_params("a path parameter is missing").to_error_object(),
                )
            })?;
        // The specification's verb (SubscribeToTask is a POST), where it differs from the
        // annotation's.
        let verb = crate::binding::verbs(spec, route)
            .first()
            .copied()
            .unwrap_or(route.verb);
        let verb = reqwest::Method::from_bytes(verb.as_bytes()).map_err(transport_error)?;
        let mut request = self
            .http
            .request(verb, format!("{}{path}", self.base_url))
            .headers(base_headers(self.revision, &self.headers))
            .header(header::ACCEPT, accept);
        if route.body == "*" {
            request = request
                .header(header::CONTENT_TYPE, crate::A2A_JSON_MEDIA_TYPE)
                .body(Value::Object(fields).to_string());
        } else {
            let query: Vec<(String, String)> = fields
                .into_iter()
                .filter_map(|(key, value)| match value {
                    Value::String(text) => Some((key, text)),
                    Value::Number(number) => Some((key, number.to_string())),
                    Value::Bool(flag) => Some((key, flag.to_string())),
                    _ => None,
                })
                .collect();
            request = request.query(&query);
        }
        Ok(request)
    }
}

async fn rest_failure(response: reqwest::Response) -> ClientError {
    let status = response.status();
    let body: Value = response.json().await.unwrap_or(Value::Null);
    ClientError::Rejected(A2aError::from_rest_body(status, &body).to_error_object())
}

impl RpcClient for RestTransport {
    async fn call(
        &self,
        method: &'static str,
        params: Option<Box<RawValue>>,
    ) -> Result<Box<RawValue>, ClientError> {
        let response = self
            .request(method, params.as_deref(), crate::A2A_JSON_MEDIA_TYPE)?
            .send()
            .await
            .map_err(transport_error)?;
        if !response.status().is_success() {
            return Err(rest_failure(response).await);
        }
        let text = response.text().await.map_err(transport_error)?;
        RawValue::from_string(text).map_err(transport_error)
    }

    async fn notify(
        &self,
        _method: &'static str,
        _params: Option<Box<RawValue>>,
    ) -> Result<(), ClientError> {
        Err(ClientError::Rejected(
            A2aError::MethodNotFound.to_error_object(),
        ))
    }

    async fn call_streaming(
        &self,
        method: &'static str,
        params: Option<Box<RawValue>>,
    ) -> Result<RawResultStream, ClientError> {
        let response = self
            .request(method, params.as_deref(), "text/event-stream")?
            .send()
            .await
            .map_err(transport_error)?;
        if !response.status().is_success() {
            return Err(rest_failure(response).await);
        }
        Ok(sse_events(response)
            .map(|event| {
                let (name, data) = event?;
                if name.as_deref() == Some("error") {
                    let body: Value = serde_json::from_str(&data).unwrap_or(Value::Null);
                    let status = http::StatusCode::INTERNAL_SERVER_ERROR;
                    return Err(ClientError::Rejected(
                        A2aError::from_rest_body(status, &body).to_error_object(),
                    ));
                }
                RawValue::from_string(data).map_err(transport_error)
            })
            .boxed())
    }
}

/// The 1.0 typed client over JSON-RPC at the card's JSON-RPC interface.
pub fn jsonrpc_agent(
    http: &reqwest::Client,
    card: &AgentCard,
) -> Option<crate::v1::RemoteAgent<JsonRpcTransport>> {
    let url = interface_url(card, JSONRPC_BINDING)?;
    Some(crate::v1::RemoteAgent::new(JsonRpcTransport::new(
        http.clone(),
        url,
        WireRevision::V1,
    )))
}

/// The 1.0 typed client over HTTP+JSON at the card's REST interface.
pub fn rest_agent(
    http: &reqwest::Client,
    card: &AgentCard,
) -> Option<crate::v1::RemoteAgent<RestTransport>> {
    let url = interface_url(card, HTTP_JSON_BINDING)?;
    Some(crate::v1::RemoteAgent::new(RestTransport::new(
        http.clone(),
        url,
        WireRevision::V1,
    )))
}

/// The 0.3 typed client over JSON-RPC (no version header: 0.3).
pub fn legacy_jsonrpc_agent(
    http: &reqwest::Client,
    card: &AgentCard,
) -> Option<crate::v0_3::RemoteAgent<JsonRpcTransport>> {
    let url = versioned_interface_url(card, JSONRPC_BINDING, LEGACY_PROTOCOL_VERSION)?;
    Some(crate::v0_3::RemoteAgent::new(JsonRpcTransport::new(
        http.clone(),
        url,
        WireRevision::V0_3,
    )))
}

/// The typed A2A error a client error stands for, when the agent answered with one.
pub fn a2a_error(error: &ClientError) -> Option<A2aError> {
    match error {
        ClientError::Rejected(error) => Some(A2aError::from_error_object(error)),
        _ => None,
    }
}
