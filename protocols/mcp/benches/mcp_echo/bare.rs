//! The large-payload baseline: a bare axum handler answering the load generator's calls in
//! either mode with no MCP server behind it. Each body is parsed once (the message unescaped
//! into one `String`) and the answer serialized once, the least any echo server can do; the
//! MCP figures at 100 KB are read as ratios against it.

use std::path::PathBuf;

use axum::Router;
use axum::body::Bytes;
use axum::http::{HeaderName, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use tokio::net::TcpListener;

use crate::runtime;

/// The session every `initialize` gets: the generator only needs one to send back.
const SESSION: &str = "bare";

/// The part of a call the echo reads; everything else is skipped unparsed.
#[derive(Deserialize)]
struct Call<'a> {
    #[serde(borrow)]
    id: Option<&'a RawValue>,
    #[serde(borrow)]
    method: &'a str,
    params: Option<CallParams>,
}

#[derive(Deserialize)]
struct CallParams {
    arguments: Option<Arguments>,
}

#[derive(Deserialize)]
struct Arguments {
    message: String,
}

#[derive(Serialize)]
struct Answer<'a, R> {
    jsonrpc: &'static str,
    id: &'a RawValue,
    result: R,
}

#[derive(Serialize)]
struct Echoed {
    content: [Text; 1],
}

#[derive(Serialize)]
struct Text {
    #[serde(rename = "type")]
    kind: &'static str,
    text: String,
}

#[derive(Serialize)]
struct Initialized {
    #[serde(rename = "protocolVersion")]
    protocol_version: &'static str,
    capabilities: Empty,
    #[serde(rename = "serverInfo")]
    server_info: Info,
}

#[derive(Serialize)]
struct Empty {}

#[derive(Serialize)]
struct Info {
    name: &'static str,
    version: &'static str,
}

fn json(body: Vec<u8>) -> Response {
    ([(header::CONTENT_TYPE, "application/json")], body).into_response()
}

fn encoded<R: Serialize>(id: &RawValue, result: R) -> Result<Vec<u8>, serde_json::Error> {
    serde_json::to_vec(&Answer {
        jsonrpc: "2.0",
        id,
        result,
    })
}

/// One call answered: `initialize` with a session, a notification with 202, anything else
/// with its message echoed back as one text content.
async fn echo(body: Bytes) -> Response {
    let Ok(call) = serde_json::from_slice::<Call<'_>>(&body) else {
        return StatusCode::BAD_REQUEST.into_response();
    };
    let Some(id) = call.id else {
        return StatusCode::ACCEPTED.into_response();
    };
    let answer = if call.method == "initialize" {
        encoded(
            id,
            Initialized {
                protocol_version: "2025-11-25",
                capabilities: Empty {},
                server_info: Info {
                    name: "bare-echo",
                    version: "1.0.0",
                },
            },
        )
        .map(|body| {
            let mut response = json(body);
            response.headers_mut().insert(
                HeaderName::from_static("mcp-session-id"),
                header::HeaderValue::from_static(SESSION),
            );
            response
        })
    } else {
        let text = call
            .params
            .and_then(|params| params.arguments)
            .map(|arguments| arguments.message)
            .unwrap_or_default();
        encoded(
            id,
            Echoed {
                content: [Text { kind: "text", text }],
            },
        )
        .map(json)
    };
    answer.unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

/// `serve bare <port-file>`: the bare echo at `/mcp` on one worker, as the MCP server runs.
pub fn serve(port_file: &str) -> Result<(), String> {
    let port_file = PathBuf::from(port_file);
    runtime()?.block_on(async move {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(|error| error.to_string())?;
        let address = listener.local_addr().map_err(|error| error.to_string())?;
        std::fs::write(&port_file, address.port().to_string())
            .map_err(|error| error.to_string())?;
        axum::serve(listener, Router::new().route("/mcp", post(echo)))
            .await
            .map_err(|error| error.to_string())
    })
}
