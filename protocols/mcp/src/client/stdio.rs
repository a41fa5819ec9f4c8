//! MCP over stdio: the client spawns the server process and speaks newline-delimited JSON-RPC
//! on its stdin/stdout, answering the server's requests through the callbacks.

use std::process::Stdio;

use protocols_runtime::handler::Context;
use protocols_runtime::jsonrpc::to_raw;
use protocols_runtime::method::{ClientError, RpcClient};
use protocols_runtime::stdio::StdioConfig;
use protocols_runtime::{ErrorObject, Notification, Profile, Reply, Request, RequestHandler};
use serde_json::value::RawValue;
use serde_json::{Value, json};
use tokio::process::{Child, Command};

use super::callbacks::Callbacks;
use super::error::transport_error;
use super::{client_info, envelope_raw};
use crate::conventions::CANCELLATION;
use crate::generated::v2025_11_25::methods;
use crate::revision::Revision;

/// The client's side of a line-oriented conversation: it answers the server's requests
/// through the callbacks and keeps its notifications.
struct ClientSide {
    callbacks: Callbacks,
    profile: Profile,
}

impl RequestHandler for ClientSide {
    type Session = ();

    fn profile(&self) -> &Profile {
        &self.profile
    }

    async fn handle(&self, request: Request, _cx: Context<()>) -> Reply {
        let params = request
            .params
            .as_deref()
            .and_then(|raw| serde_json::from_str(raw.get()).ok())
            .unwrap_or(Value::Null);
        let result = self.callbacks.answer(request.method, params).await?;
        to_raw(&result).map_err(|_| ErrorObject::internal_error())
    }

    async fn notify(&self, notification: Notification, _cx: Context<()>) {
        self.callbacks.keep(envelope_raw(
            None,
            &notification.method,
            notification.params.as_deref(),
        ));
    }
}

/// An MCP client talking to a server process it spawned, over the process's stdin/stdout.
#[derive(Debug)]
pub struct StdioClient {
    connection: protocols_runtime::connect::LinesConnection,
    child: Child,
}

impl StdioClient {
    /// Spawns `command` (its stdin and stdout become the conversation; stderr is inherited).
    ///
    /// # Errors
    /// The process could not be started.
    pub async fn spawn(mut command: Command, callbacks: Callbacks) -> std::io::Result<Self> {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(std::io::Error::other("the child has no stdin/stdout"));
        };
        let side = ClientSide {
            callbacks,
            profile: Profile::new().with_cancellation(CANCELLATION),
        };
        let connection =
            protocols_runtime::connect::connect_lines(side, stdout, stdin, StdioConfig::default())
                .await
                .map_err(std::io::Error::other)?;
        Ok(Self { connection, child })
    }

    /// `initialize` offering `revision`, then `notifications/initialized`.
    ///
    /// # Errors
    /// The server refused or the process went away.
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

    /// Closes stdin (the server's end of input) and waits for the process to exit.
    ///
    /// # Errors
    /// Waiting for the process failed.
    pub async fn shutdown(mut self) -> std::io::Result<std::process::ExitStatus> {
        self.connection.close().await?;
        self.child.wait().await
    }
}

impl RpcClient for StdioClient {
    async fn call(
        &self,
        method: &'static str,
        params: Option<Box<RawValue>>,
    ) -> Result<Box<RawValue>, ClientError> {
        RpcClient::call(self.connection.peer(), method, params).await
    }

    async fn notify(
        &self,
        method: &'static str,
        params: Option<Box<RawValue>>,
    ) -> Result<(), ClientError> {
        RpcClient::notify(self.connection.peer(), method, params).await
    }
}
