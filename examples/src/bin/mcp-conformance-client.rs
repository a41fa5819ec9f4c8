//! The client the official MCP conformance suite drives (`conformance client --command ...`):
//! it is run as `mcp-conformance-client <server-url>` with the scenario in
//! `MCP_CONFORMANCE_SCENARIO`, the spec version in `MCP_CONFORMANCE_PROTOCOL_VERSION` and, for
//! some scenarios, JSON in `MCP_CONFORMANCE_CONTEXT` (credentials, the tool calls to make).
//! Written only on `protocols_mcp::client`'s public API: it is what a user would write.
//!
//! Every scenario gets the same well-behaved client: open the conversation the version asks for
//! (`initialize`, or 2026-07-28's `server/discover`), list what the server offers and use each
//! of it once, answering sampling, elicitation and roots as a cooperative user would, with OAuth
//! for the `auth/*` scenarios.

// No index that can panic is reachable from input: code reads maps and slices with `get`.
// Unit tests may index (a panic there is a failed test).
#![cfg_attr(not(test), deny(clippy::indexing_slicing))]

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context as _, bail};
use clap::Parser;
use protocols_mcp::Revision;
use protocols_mcp::client::oauth::{OAuth, OAuthConfig, OAuthError, Url, UserInteraction};
use protocols_mcp::client::{AuthFuture, Callbacks, HttpClient, HttpOptions};
use protocols_runtime::ErrorObject;
use serde_json::{Map, Value, json};

/// The client ID metadata document URL the suite expects a client to present where the
/// authorization server accepts such documents.
const CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";
const REDIRECT_URI: &str = "http://localhost:3000/callback";

/// The user-interaction step of a client with nobody at the keyboard: the suite's
/// authorization server approves at once, so following its authorization URL without a browser
/// yields the redirect (and never follows it).
#[derive(Debug)]
struct Unattended {
    http: reqwest::Client,
}

impl UserInteraction for Unattended {
    fn authorize<'a>(
        &'a self,
        authorization_url: &'a Url,
    ) -> AuthFuture<'a, Result<Url, OAuthError>> {
        Box::pin(async move {
            let response = self
                .http
                .get(authorization_url.as_str())
                .send()
                .await
                .map_err(|error| OAuthError::Interaction(error.to_string()))?;
            let location = response
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|value| value.to_str().ok())
                .ok_or_else(|| {
                    OAuthError::Interaction(format!("no redirect (HTTP {})", response.status()))
                })?;
            Url::parse(location).map_err(|error| OAuthError::Interaction(error.to_string()))
        })
    }
}

fn callbacks() -> Callbacks {
    Callbacks::new(|method, _params| async move {
        match method.as_str() {
            // Accept with nothing filled in: the client applies the requested schema's defaults.
            "elicitation/create" => Ok(json!({ "action": "accept", "content": {} })),
            "sampling/createMessage" => Ok(json!({
                "role": "assistant",
                "content": { "type": "text", "text": "conformance" },
                "model": "mcp-conformance-client",
            })),
            "roots/list" => Ok(json!({ "roots": [] })),
            "ping" => Ok(json!({})),
            _ => Err(ErrorObject::method_not_found()),
        }
    })
}

fn authorizer(scenario: &str, context: &Value) -> anyhow::Result<Option<Arc<OAuth>>> {
    if !scenario.starts_with("auth/") {
        return Ok(None);
    }
    let client_id = context.get("client_id").and_then(Value::as_str);
    let client_secret = context.get("client_secret").and_then(Value::as_str);
    let config = if scenario.starts_with("auth/client-credentials") {
        let (Some(id), Some(secret)) = (client_id, client_secret) else {
            bail!("{scenario} needs client_id and client_secret in MCP_CONFORMANCE_CONTEXT");
        };
        OAuthConfig::client_credentials(id, secret)
    } else {
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()?;
        let mut config = OAuthConfig::authorization_code(
            "mcp-conformance-client",
            REDIRECT_URI,
            Arc::new(Unattended { http }),
        )
        .client_metadata_url(CLIENT_METADATA_URL);
        if let Some(id) = client_id {
            config = config.pre_registered(id, client_secret.map(str::to_owned));
        }
        config
    };
    Ok(Some(Arc::new(OAuth::new(config))))
}

/// Arguments a cooperative caller would pass: each required property gets a value of its type.
fn arguments_for(tool: &Value) -> Value {
    let schema = tool.get("inputSchema").cloned().unwrap_or(Value::Null);
    let properties = schema.get("properties").and_then(Value::as_object);
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut arguments = Map::new();
    for name in required {
        let property = properties.and_then(|properties| properties.get(name));
        let value = property
            .and_then(|property| property.get("default").cloned())
            .or_else(|| {
                property
                    .and_then(|property| property.get("enum"))
                    .and_then(Value::as_array)
                    .and_then(|values| values.first().cloned())
            })
            .unwrap_or_else(|| {
                match property
                    .and_then(|property| property.get("type"))
                    .and_then(Value::as_str)
                {
                    Some("number" | "integer") => json!(1),
                    Some("boolean") => json!(true),
                    Some("object") => json!({}),
                    Some("array") => json!([]),
                    _ => json!("conformance"),
                }
            });
        arguments.insert(name.to_owned(), value);
    }
    Value::Object(arguments)
}

/// `value`'s member `name`, or null when it has none (what indexing a `Value` answers, without
/// an index expression the crate's lint refuses).
fn member(value: &Value, name: &str) -> Value {
    value.get(name).cloned().unwrap_or(Value::Null)
}

fn items(result: &Value, field: &str) -> Vec<Value> {
    result
        .get(field)
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// Lists the server's tools, resources and prompts and uses each once.
async fn exercise(
    client: &HttpClient,
    scenario: &str,
    capabilities: &Value,
    context: &Value,
) -> anyhow::Result<()> {
    let listed = client
        .request("tools/list", None)
        .await
        .context("tools/list")?;
    let tools = items(&listed, "tools");
    match scenario {
        "json-schema-ref-no-deref" => return Ok(()),
        "json-schema-2020-12-preservation" => {
            let focal = tools
                .iter()
                .find(|tool| member(tool, "name") == "json_schema_2020_12_tool")
                .context("the focal tool is not listed")?;
            let echo = json!({ "name": "json_schema_echo", "arguments": { "schema": member(focal, "inputSchema") } });
            client
                .request("tools/call", Some(echo))
                .await
                .context("json_schema_echo")?;
            return Ok(());
        }
        _ => {}
    }
    let calls: Vec<Value> = match context.get("toolCalls").and_then(Value::as_array) {
        Some(calls) => calls.clone(),
        None => tools
            .iter()
            .map(|tool| json!({ "name": member(tool, "name"), "arguments": arguments_for(tool) }))
            .collect(),
    };
    for call in calls {
        let name = member(&call, "name");
        let result = client.request("tools/call", Some(call)).await;
        let outcome = result
            .map(|_| ())
            .with_context(|| format!("tools/call {name}"));
        // A tool that answers with an error is the server's business; a refused authorization is
        // this client's failure.
        if scenario.starts_with("auth/") {
            outcome?;
        } else if let Err(error) = outcome {
            eprintln!("{error:#}");
        }
    }
    if capabilities.get("resources").is_some() {
        let listed = client
            .request("resources/list", None)
            .await
            .context("resources/list")?;
        for resource in items(&listed, "resources") {
            let read = client
                .request(
                    "resources/read",
                    Some(json!({ "uri": member(&resource, "uri") })),
                )
                .await;
            if let Err(error) = read {
                eprintln!("resources/read: {error}");
            }
        }
    }
    if capabilities.get("prompts").is_some() {
        let listed = client
            .request("prompts/list", None)
            .await
            .context("prompts/list")?;
        for prompt in items(&listed, "prompts") {
            let got = client
                .request(
                    "prompts/get",
                    Some(json!({ "name": member(&prompt, "name"), "arguments": {} })),
                )
                .await;
            if let Err(error) = got {
                eprintln!("prompts/get: {error}");
            }
        }
    }
    Ok(())
}

/// The client the official MCP conformance suite drives; the suite sets the environment.
#[derive(Debug, Parser)]
#[command(
    version,
    about = "The MCP client the official conformance suite drives"
)]
struct Arguments {
    /// The MCP endpoint to connect to (the suite appends it to the command).
    server_url: String,
    /// The scenario being run, which decides what the client exercises.
    #[arg(long, env = "MCP_CONFORMANCE_SCENARIO", default_value = "")]
    scenario: String,
    /// The protocol version to open the conversation with.
    #[arg(
        long,
        env = "MCP_CONFORMANCE_PROTOCOL_VERSION",
        default_value = "2025-11-25"
    )]
    protocol_version: String,
    /// The scenario's JSON context (credentials, the tool calls to make); ignored unless JSON.
    // It can carry credentials: `--help` must not print it.
    #[arg(long, env = "MCP_CONFORMANCE_CONTEXT", hide_env_values = true)]
    context: Option<String>,
}

async fn run(arguments: Arguments) -> anyhow::Result<()> {
    let Arguments {
        server_url: url,
        scenario,
        protocol_version,
        context,
    } = arguments;
    let revision: Revision = protocol_version
        .parse()
        .context("MCP_CONFORMANCE_PROTOCOL_VERSION")?;
    let context: Value = context
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or(Value::Null);
    let mut options =
        HttpOptions::default().client_info("mcp-conformance-client", env!("CARGO_PKG_VERSION"));
    if let Some(oauth) = authorizer(&scenario, &context)? {
        options = options.authorizer(oauth);
    }
    let client = HttpClient::with_options(url, callbacks(), options);
    let capabilities = json!({ "roots": {}, "sampling": {}, "elicitation": {} });
    let opened = client
        .initialize(revision, capabilities)
        .await
        .context("opening the conversation")?;
    let server_capabilities = opened.get("capabilities").cloned().unwrap_or(Value::Null);
    exercise(&client, &scenario, &server_capabilities, &context).await?;
    client.close().await.context("closing the session")?;
    Ok(())
}

#[tokio::main]
async fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .init();
    match run(Arguments::parse()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("mcp-conformance-client: {error:#}");
            ExitCode::FAILURE
        }
    }
}
