//! The client (editor) side: [`AcpClient`] connects to an agent over stdio (a spawned child, or
//! any line-oriented pair), over Streamable HTTP or over WebSocket, calls it with typed
//! methods, and serves the agent's calls back (`session/update`, `session/request_permission`,
//! `fs/*`, …) to an [`AcpService`] of the caller's, through the same runtime dispatch the agent
//! side uses.

use std::sync::Arc;
use std::time::SystemTime;

use protocols_runtime::connect::{LinesConnection, connect_lines, serve_detached_in};
use protocols_runtime::handler::{Context, Profile, Reply, RequestHandler};
use protocols_runtime::jsonrpc::{Notification, Request};
use protocols_runtime::method::{ClientError, RpcClient, RpcMethod, RpcNotification};
use protocols_runtime::peer::Conversation;
use protocols_runtime::session::{Session, SessionId};
use protocols_runtime::stdio::StdioConfig;
use serde::Serialize;
use serde_json::value::RawValue;
use tokio::io::{AsyncRead, AsyncWrite};

use crate::agent::AcpService;
use crate::client_handle::CallError;
use crate::connection::AcpConnection;
use crate::generated::v1;
use crate::profile::acp_profile;
use crate::remote_client::{HttpLink, Inbound};

/// Sees every message as it crosses the wire, as its exact bytes (for logging, or the schema
/// checks of the tests).
pub type WireObserver = Arc<dyn Fn(WireDirection, &[u8]) + Send + Sync>;

/// Which way a message travelled, seen from the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireDirection {
    /// Sent by the client to the agent.
    ToAgent,
    /// Sent by the agent to the client.
    FromAgent,
}

/// Serves the agent's calls to the client's service, under ACP's profile.
struct ClientSide<S> {
    service: S,
    profile: Profile,
}

impl<S: AcpService> RequestHandler for ClientSide<S> {
    type Session = AcpConnection;

    fn profile(&self) -> &Profile {
        &self.profile
    }

    async fn handle(&self, request: Request, cx: Context<AcpConnection>) -> Reply {
        self.service.handle(request, cx).await
    }

    async fn notify(&self, notification: Notification, cx: Context<AcpConnection>) {
        self.service.notify(notification, cx).await;
    }
}

/// A connection to an agent.
pub struct AcpClient {
    link: Link,
}

impl std::fmt::Debug for AcpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AcpClient").finish_non_exhaustive()
    }
}

enum Link {
    Lines(LinesConnection),
    Http(HttpLink),
}

impl AcpClient {
    /// Connects over a line-oriented pair: `reader` carries the agent's output, `writer` its
    /// input (a child's stdout and stdin).
    ///
    /// # Errors
    /// The conversation ended before it started.
    pub async fn connect_lines<S, R, W>(service: S, reader: R, writer: W) -> Result<Self, CallError>
    where
        S: AcpService,
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let side = ClientSide {
            service,
            profile: acp_profile(),
        };
        let connection = connect_lines(side, reader, writer, StdioConfig::default()).await?;
        Ok(Self {
            link: Link::Lines(connection),
        })
    }

    /// Connects over ACP's WebSocket transport to the endpoint at `url` (e.g.
    /// `ws://host/acp`): the stdio conversation, one text frame per message.
    ///
    /// # Errors
    /// The upgrade was refused, or the conversation ended before it started.
    pub async fn connect_websocket<S: AcpService>(
        service: S,
        url: &str,
    ) -> Result<Self, CallError> {
        Self::connect_websocket_observed(service, url, None).await
    }

    /// [`Self::connect_websocket`], showing every message to `observer`.
    ///
    /// # Errors
    /// The upgrade was refused, or the conversation ended before it started.
    pub async fn connect_websocket_observed<S: AcpService>(
        service: S,
        url: &str,
        observer: Option<WireObserver>,
    ) -> Result<Self, CallError> {
        let (reader, writer) = crate::remote_client::websocket_lines(url, observer).await?;
        Self::connect_lines(service, reader, writer).await
    }

    /// Connects over ACP's Streamable HTTP transport to the endpoint at `url` (e.g.
    /// `http://host/acp`), over HTTP/2: `initialize` opens the connection, answers and the
    /// agent's calls arrive on the connection's and each session's `GET` stream, and a call
    /// dropped before its answer is cancelled at the agent with `$/cancel_request`.
    pub fn connect_http<S: AcpService>(service: S, url: impl Into<String>) -> Self {
        Self::connect_http_observed(service, url, None)
    }

    /// [`Self::connect_http`], showing every message to `observer`.
    pub fn connect_http_observed<S: AcpService>(
        service: S,
        url: impl Into<String>,
        observer: Option<WireObserver>,
    ) -> Self {
        let side = Arc::new(ClientSide {
            service,
            profile: acp_profile(),
        });
        let session = Arc::new(Session::new(
            SessionId::random(),
            AcpConnection::default(),
            SystemTime::now(),
            1,
        ));
        // The agent's calls run registered here, so its `$/cancel_request` reaches them.
        let conversation = Arc::new(Conversation::new());
        let inbound: Inbound = Arc::new(move |message| {
            let side = Arc::clone(&side);
            let session = Arc::clone(&session);
            let conversation = Arc::clone(&conversation);
            Box::pin(async move {
                serve_detached_in(side.as_ref(), message, &session, &conversation).await
            })
        });
        Self {
            link: Link::Http(HttpLink::new(url.into(), inbound, observer)),
        }
    }

    /// Calls `M` on the agent and waits for its typed answer.
    ///
    /// # Errors
    /// The agent's refusal, or a transport failure.
    pub async fn call<M: RpcMethod>(&self, params: &M::Params) -> Result<M::Result, CallError> {
        let raw = self.call_raw(M::NAME, params).await?;
        serde_json::from_str(raw.get()).map_err(|source| CallError::InvalidResult {
            method: M::NAME,
            source,
        })
    }

    /// Calls any method (an extension method, say) with untyped params and answer.
    ///
    /// # Errors
    /// The agent's refusal, or a transport failure.
    pub async fn call_raw<P: Serialize + ?Sized>(
        &self,
        method: &str,
        params: &P,
    ) -> Result<Box<RawValue>, CallError> {
        match &self.link {
            Link::Lines(connection) => Ok(connection.peer().request(method, params).await?),
            Link::Http(link) => link.call(method, params).await,
        }
    }

    /// Sends the notification `N` to the agent.
    ///
    /// # Errors
    /// The message could not be sent.
    pub async fn notify<N: RpcNotification>(&self, params: &N::Params) -> Result<(), CallError> {
        self.notify_raw(N::NAME, params).await
    }

    /// Sends any notification.
    ///
    /// # Errors
    /// The message could not be sent.
    pub async fn notify_raw<P: Serialize + ?Sized>(
        &self,
        method: &str,
        params: &P,
    ) -> Result<(), CallError> {
        match &self.link {
            Link::Lines(connection) => Ok(connection.peer().notify(method, params)?),
            Link::Http(link) => link.notify(method, params).await,
        }
    }

    /// The agent's v1 methods, typed (the generated proxy over this connection).
    pub fn v1(&self) -> v1::RemoteAgent<&Self> {
        v1::RemoteAgent::new(self)
    }

    /// The agent's v2 methods, typed; `initialize` asking for version 2 first (builds with the
    /// `unstable` feature, as upstream marks v2 draft).
    #[cfg(feature = "unstable")]
    pub fn v2(&self) -> crate::generated::v2::RemoteAgent<&Self> {
        crate::generated::v2::RemoteAgent::new(self)
    }

    /// `session/cancel` (v1): stops the turn running in `session_id`.
    ///
    /// # Errors
    /// The message could not be sent.
    pub async fn cancel(&self, session_id: &str) -> Result<(), CallError> {
        let params = v1::types::CancelNotification {
            meta: None,
            session_id: v1::types::SessionId(session_id.to_owned()),
        };
        self.notify::<v1::methods::SessionCancel>(&params).await
    }

    /// Ends the connection: over stdio the agent sees end of input; over HTTP the connection
    /// is deleted at the agent.
    ///
    /// # Errors
    /// The transport failed while closing.
    pub async fn close(self) -> Result<(), CallError> {
        match self.link {
            Link::Lines(connection) => connection
                .close()
                .await
                .map_err(|error| CallError::Transport(transport(&error))),
            Link::Http(link) => link.delete().await,
        }
    }
}

impl RpcClient for AcpClient {
    async fn call(
        &self,
        method: &'static str,
        params: Option<Box<RawValue>>,
    ) -> Result<Box<RawValue>, ClientError> {
        self.call_raw(method, &params)
            .await
            .map_err(into_client_error)
    }

    async fn notify(
        &self,
        method: &'static str,
        params: Option<Box<RawValue>>,
    ) -> Result<(), ClientError> {
        self.notify_raw(method, &params)
            .await
            .map_err(into_client_error)
    }
}

fn into_client_error(error: CallError) -> ClientError {
    match error {
        CallError::Rejected(error) => ClientError::Rejected(error),
        other => ClientError::Transport(Box::new(other)),
    }
}

fn transport(error: &dyn std::fmt::Display) -> protocols_runtime::peer::PeerError {
    tracing::debug!(%error, "transport failure");
    protocols_runtime::peer::PeerError::Closed
}
