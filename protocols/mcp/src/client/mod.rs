//! The MCP client side: transports implementing the runtime's `RpcClient`, so every revision's
//! generated typed proxy (`vX::RemoteServer`) calls through them.
//!
//! - [`HttpClient`] (module `http`): Streamable HTTP for every revision — sessions with the
//!   standalone stream, resumption and opt-in re-initialization, and the stateless 2026-07-28
//!   revision with its `_meta`, SEP-2243 headers and `input_required` rounds; `connect`
//!   negotiates between them.
//! - [`StdioClient`] (module `stdio`): a server process spoken to over its stdin/stdout.
//! - [`LegacySseClient`] (module `legacy`): the 2024-11-05 HTTP+SSE transport.
//! - [`oauth`]: OAuth 2.1 as the MCP authorization spec asks of a client, plugged into
//!   [`HttpOptions::authorizer`].
//!
//! What the client answers to the server's own requests (sampling, elicitation, roots) and where
//! notifications wait is a [`Callbacks`] of the caller's.

mod callbacks;
mod error;
mod headers;
mod http;
mod legacy;
pub mod oauth;
mod stdio;

use protocols_runtime::ErrorObject;
use protocols_runtime::jsonrpc::to_raw;
use protocols_runtime::method::ClientError;
use serde_json::value::RawValue;
use serde_json::{Value, json};

pub use callbacks::{Callbacks, DEFAULT_NOTIFICATION_LIMIT};
pub use error::{Challenge, HttpError, TransportFailure};
pub use headers::{InvalidToolHeader, ToolHeaders};
pub use http::{AuthFuture, Authorizer, Connected, HttpClient, HttpOptions, ScopedHeaders};
pub use legacy::LegacySseClient;
pub use stdio::StdioClient;

use error::{failure, transport_error};

/// The largest SSE event the client accepts.
const MAX_EVENT_BYTES: usize = 4 * 1024 * 1024;

/// `clientInfo` as `initialize` and 2026-07-28's `_meta` carry it.
fn client_info(name: &str, version: &str) -> Value {
    json!({ "name": name, "version": version })
}

/// A JSON-RPC response message as the outcome of a call.
fn outcome(message: &Value) -> Result<Value, ClientError> {
    if let Some(error) = message.get("error") {
        let error: ErrorObject = serde_json::from_value(error.clone()).map_err(|_| {
            failure(format!(
                "malformed error answer: {}",
                protocols_runtime::quote::quote(message)
            ))
        })?;
        return Err(ClientError::Rejected(error));
    }
    Ok(message.get("result").cloned().unwrap_or_else(|| json!({})))
}

/// [`outcome`] as the raw value `RpcClient` returns.
fn outcome_raw(message: &Value) -> Result<Box<RawValue>, ClientError> {
    to_raw(&outcome(message)?).map_err(transport_error)
}

fn envelope(id: Option<i64>, method: &str, params: Option<&Value>) -> Value {
    let mut message = serde_json::Map::new();
    message.insert("jsonrpc".to_owned(), json!("2.0"));
    if let Some(id) = id {
        message.insert("id".to_owned(), json!(id));
    }
    message.insert("method".to_owned(), json!(method));
    if let Some(params) = params {
        message.insert("params".to_owned(), params.clone());
    }
    Value::Object(message)
}

fn envelope_raw(id: Option<i64>, method: &str, params: Option<&RawValue>) -> Value {
    let params = params.and_then(|raw| serde_json::from_str::<Value>(raw.get()).ok());
    envelope(id, method, params.as_ref())
}
