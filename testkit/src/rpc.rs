//! JSON-RPC over HTTP as a Streamable HTTP client sends it: the request body, the POST carrying
//! it and the GET opening an event stream, each with the caller's own headers (session,
//! version, credentials) since those differ between protocols.

use serde_json::{Value, json};

/// The `accept` of a client that takes either answer: a JSON body or an SSE stream.
pub const ACCEPT_EITHER: &str = "application/json, text/event-stream";

/// A JSON-RPC request.
pub fn request(id: i64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// `body` POSTed to `url` as JSON, accepting `accept`, with `headers` added (pass `[]`, an
/// `Option` such as a session that may not exist yet, or several pairs).
pub fn json_rpc_post<'h>(
    client: &reqwest::Client,
    url: &str,
    accept: &str,
    headers: impl IntoIterator<Item = (&'h str, &'h str)>,
    body: &Value,
) -> reqwest::RequestBuilder {
    let request = client
        .post(url)
        .header("content-type", "application/json")
        .header("accept", accept)
        .body(body.to_string());
    with_headers(request, headers)
}

/// A GET opening `url`'s event stream, with `headers` added.
pub fn event_stream_get<'h>(
    client: &reqwest::Client,
    url: &str,
    headers: impl IntoIterator<Item = (&'h str, &'h str)>,
) -> reqwest::RequestBuilder {
    with_headers(
        client.get(url).header("accept", "text/event-stream"),
        headers,
    )
}

fn with_headers<'h>(
    request: reqwest::RequestBuilder,
    headers: impl IntoIterator<Item = (&'h str, &'h str)>,
) -> reqwest::RequestBuilder {
    headers.into_iter().fold(request, |request, (name, value)| {
        request.header(name, value)
    })
}
