//! The 2024-11-05 HTTP+SSE transport: one long `GET` stream carries every answer and server
//! message, and `POST`s go to the endpoint its first event names.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt as _;
use protocols_runtime::jsonrpc::to_raw;
use protocols_runtime::method::{ClientError, RpcClient};
use protocols_runtime::sse::SseDecoder;
use serde_json::value::RawValue;
use serde_json::{Value, json};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use super::callbacks::Callbacks;
use super::error::{HttpError, failure, transport_error};
use super::{MAX_EVENT_BYTES, client_info, envelope_raw, outcome_raw};
use crate::generated::v2025_11_25::methods;
use crate::revision::Revision;

/// How long a legacy call waits for its answer on the stream.
const LEGACY_ANSWER_TIMEOUT: Duration = Duration::from_secs(60);

type Pending = Arc<Mutex<HashMap<i64, oneshot::Sender<Value>>>>;

/// An MCP client over the legacy HTTP+SSE transport (MCP 2024-11-05).
#[derive(Debug)]
pub struct LegacySseClient {
    http: reqwest::Client,
    post_url: String,
    next_id: AtomicI64,
    pending: Pending,
    reader: JoinHandle<()>,
}

impl Drop for LegacySseClient {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

/// What the stream reader needs to answer the server on its own.
#[derive(Clone)]
struct LegacyReader {
    http: reqwest::Client,
    post_url: String,
    pending: Pending,
    callbacks: Callbacks,
}

impl LegacyReader {
    async fn run(
        self,
        mut chunks: impl futures::Stream<Item = reqwest::Result<bytes::Bytes>> + Unpin,
        mut decoder: SseDecoder,
    ) {
        loop {
            while let Some(Ok(event)) = decoder.next_event() {
                if let Ok(message) = serde_json::from_str::<Value>(event.data()) {
                    self.take(message).await;
                }
            }
            match chunks.next().await {
                Some(Ok(chunk)) => decoder.push(&chunk),
                _ => break,
            }
        }
        // The stream is gone: every waiting call fails (its sender drops).
        if let Ok(mut pending) = self.pending.lock() {
            pending.clear();
        }
    }

    async fn take(&self, message: Value) {
        let method = message
            .get("method")
            .and_then(Value::as_str)
            .map(str::to_owned);
        match (method, message.get("id").cloned()) {
            (Some(method), Some(id)) => {
                let params = message.get("params").cloned().unwrap_or(Value::Null);
                let answer = match self.callbacks.answer(method, params).await {
                    Ok(result) => json!({ "jsonrpc": "2.0", "id": id, "result": result }),
                    Err(error) => json!({ "jsonrpc": "2.0", "id": id, "error": error }),
                };
                if let Err(error) = post_json(&self.http, &self.post_url, &answer).await {
                    tracing::debug!(%error, "could not answer the server");
                }
            }
            (Some(_), None) => self.callbacks.keep(message),
            (None, Some(id)) => {
                let waiter = id.as_i64().and_then(|id| {
                    self.pending
                        .lock()
                        .ok()
                        .and_then(|mut pending| pending.remove(&id))
                });
                if let Some(waiter) = waiter {
                    let _ = waiter.send(message);
                }
            }
            (None, None) => {}
        }
    }
}

async fn post_json(http: &reqwest::Client, url: &str, message: &Value) -> Result<(), ClientError> {
    let response = http
        .post(url)
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(message.to_string())
        .send()
        .await
        .map_err(transport_error)?;
    if response.status().is_success() {
        Ok(())
    } else {
        let status = response.status();
        let headers = response.headers().clone();
        let bytes = response.bytes().await.unwrap_or_default();
        Err(HttpError::new(status, &headers, &bytes).into())
    }
}

impl LegacySseClient {
    /// Opens the stream at `base_url` + `stream_path` and waits for the `endpoint` event.
    ///
    /// # Errors
    /// The stream could not be opened or named no endpoint.
    pub async fn connect(
        base_url: &str,
        stream_path: &str,
        callbacks: Callbacks,
    ) -> Result<Self, ClientError> {
        let http = reqwest::Client::new();
        let base = base_url.trim_end_matches('/');
        let response = http
            .get(format!("{base}{stream_path}"))
            .header(http::header::ACCEPT, "text/event-stream")
            .send()
            .await
            .map_err(transport_error)?;
        if !response.status().is_success() {
            return Err(failure(format!(
                "HTTP {} opening the stream",
                response.status()
            )));
        }
        let mut chunks = response.bytes_stream();
        let mut decoder = SseDecoder::new(MAX_EVENT_BYTES);
        let endpoint = loop {
            if let Some(event) = decoder.next_event() {
                let event = event.map_err(|error| failure(error.to_string()))?;
                if event.name().is_some_and(|name| name.as_str() == "endpoint") {
                    break event.into_data();
                }
                continue;
            }
            let chunk = chunks
                .next()
                .await
                .ok_or_else(|| failure("the stream ended before naming its endpoint"))?;
            decoder.push(&chunk.map_err(transport_error)?);
        };
        let post_url = if endpoint.starts_with("http://") || endpoint.starts_with("https://") {
            endpoint
        } else {
            format!("{base}{endpoint}")
        };
        let pending: Pending = Arc::default();
        let reader = LegacyReader {
            http: http.clone(),
            post_url: post_url.clone(),
            pending: Arc::clone(&pending),
            callbacks,
        };
        let reader = tokio::spawn(reader.run(chunks, decoder));
        Ok(Self {
            http,
            post_url,
            next_id: AtomicI64::new(1),
            pending,
            reader,
        })
    }

    /// `initialize` offering `revision`, then `notifications/initialized`.
    ///
    /// # Errors
    /// The server refused or the stream ended.
    pub async fn initialize(
        &self,
        revision: Revision,
        capabilities: Value,
    ) -> Result<Value, ClientError> {
        let params = json!({
            "protocolVersion": revision.as_str(),
            "capabilities": capabilities,
            "clientInfo": client_info("protocols-mcp", env!("CARGO_PKG_VERSION"))
        });
        let raw = self.call(methods::INITIALIZE, to_raw(&params).ok()).await?;
        self.notify(methods::NOTIFICATIONS_INITIALIZED, None)
            .await?;
        serde_json::from_str(raw.get()).map_err(transport_error)
    }
}

impl RpcClient for LegacySseClient {
    async fn call(
        &self,
        method: &'static str,
        params: Option<Box<RawValue>>,
    ) -> Result<Box<RawValue>, ClientError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (sender, answer) = oneshot::channel();
        if let Ok(mut pending) = self.pending.lock() {
            pending.insert(id, sender);
        }
        let sent = post_json(
            &self.http,
            &self.post_url,
            &envelope_raw(Some(id), method, params.as_deref()),
        )
        .await;
        if let Err(error) = sent {
            if let Ok(mut pending) = self.pending.lock() {
                pending.remove(&id);
            }
            return Err(error);
        }
        match tokio::time::timeout(LEGACY_ANSWER_TIMEOUT, answer).await {
            Ok(Ok(message)) => outcome_raw(&message),
            Ok(Err(_)) => Err(failure("the stream ended before the answer")),
            Err(_) => {
                if let Ok(mut pending) = self.pending.lock() {
                    pending.remove(&id);
                }
                Err(failure(format!(
                    "no answer to {method} within {LEGACY_ANSWER_TIMEOUT:?}"
                )))
            }
        }
    }

    async fn notify(
        &self,
        method: &'static str,
        params: Option<Box<RawValue>>,
    ) -> Result<(), ClientError> {
        post_json(
            &self.http,
            &self.post_url,
            &envelope_raw(None, method, params.as_deref()),
        )
        .await
    }
}
