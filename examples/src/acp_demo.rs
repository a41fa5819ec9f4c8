//! The ACP demo agent: the shared demo core spoken as ACP v1. A prompt is echoed back as
//! `agent_message_chunk` updates; `read <absolute path>` asks permission and reads the file
//! through the client (only if it advertised `fs.readTextFile`); `slow…` streams a chunk every
//! 0.2 s until the client cancels. Served over stdio ([`serve_stdio`]) and at `/acp`
//! ([`router`]).

use std::collections::HashSet;
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use protocols_acp::client_handle::CallError;
use protocols_acp::generated::v1;
use protocols_acp::generated::v1::types::{
    AgentCapabilities, AuthenticateRequest, AuthenticateResponse, CancelNotification,
    Implementation, InitializeRequest, InitializeResponse, LoadSessionRequest, LoadSessionResponse,
    NewSessionRequest, NewSessionResponse, PromptRequest, PromptResponse, ProtocolVersion,
    ReadTextFileRequest, SessionId, StopReason, ToolCallId, ToolCallStatus,
};
use protocols_acp::serve::{AcpCx, AgentV1};
use protocols_acp::updates::{
    ALLOW_ONCE, agent_text, allow_or_reject_once, chose, prompt_text, read_tool_call,
    tool_call_progress,
};
use protocols_acp::{AcpAgentServer, AcpContext};
use protocols_runtime::ErrorObject;
use protocols_runtime::http::{HttpConfig, StreamableHttp};
use protocols_runtime::stdio::StdioConfig;

use crate::core::{DemoAction, plan};

/// How often a slow turn streams a chunk.
const SLOW_TICK: Duration = Duration::from_millis(200);
/// The prefix that makes the demo read a file.
const READ_PREFIX: &str = "read ";

/// The demo agent's state: the sessions it has opened.
#[derive(Debug, Default)]
pub struct DemoAgent {
    sessions: Mutex<HashSet<String>>,
    next_session: AtomicU64,
    next_tool_call: AtomicU64,
}

impl DemoAgent {
    fn open_session(&self) -> SessionId {
        let number = self.next_session.fetch_add(1, Ordering::Relaxed);
        let id = format!("demo-session-{number}");
        if let Ok(mut sessions) = self.sessions.lock() {
            sessions.insert(id.clone());
        }
        SessionId(id)
    }

    fn known(&self, session_id: &SessionId) -> Result<(), ErrorObject> {
        let known = self
            .sessions
            .lock()
            .map(|sessions| sessions.contains(&session_id.0))
            .unwrap_or(false);
        if known {
            Ok(())
        } else {
            Err(ErrorObject::invalid_params("unknown session"))
        }
    }

    /// Reads `path` for the client, asking its permission first.
    async fn read(
        &self,
        session_id: &SessionId,
        path: &str,
        cx: &AcpCx,
    ) -> Result<StopReason, ErrorObject> {
        let client = cx.client();
        let number = self.next_tool_call.fetch_add(1, Ordering::Relaxed);
        let call = ToolCallId(format!("read-{number}"));
        send(&client, &read_tool_call(session_id, &call, path));
        let question = allow_or_reject_once(session_id, &call, &format!("Read {path}"));
        let answer = client
            .request_permission(&question)
            .await
            .map_err(|error| refused("request permission", &error))?;
        if !chose(&answer.outcome, ALLOW_ONCE) {
            send(
                &client,
                &tool_call_progress(
                    session_id,
                    &call,
                    ToolCallStatus::Failed,
                    Some("permission denied".into()),
                ),
            );
            return Ok(StopReason::EndTurn);
        }
        let request = ReadTextFileRequest {
            limit: None,
            line: None,
            meta: None,
            path: path.to_owned(),
            session_id: session_id.clone(),
        };
        match client.read_text_file(&request).await {
            Ok(file) => {
                send(
                    &client,
                    &tool_call_progress(
                        session_id,
                        &call,
                        ToolCallStatus::Completed,
                        Some(file.content.clone()),
                    ),
                );
                send(&client, &agent_text(session_id, file.content));
            }
            Err(error) => {
                let why = match error {
                    CallError::NotAdvertised(capability) => {
                        format!("the client cannot {capability}")
                    }
                    other => other.to_string(),
                };
                send(
                    &client,
                    &tool_call_progress(session_id, &call, ToolCallStatus::Failed, Some(why)),
                );
            }
        }
        Ok(StopReason::EndTurn)
    }

    /// Streams a chunk every tick until the turn is cancelled or the core's time is up.
    async fn slow(
        session_id: &SessionId,
        reply: String,
        total: Duration,
        cx: &AcpCx,
    ) -> StopReason {
        let client = cx.client();
        let cancelled = cx.turn_cancelled(&session_id.0);
        tokio::pin!(cancelled);
        let mut ticks = tokio::time::interval(SLOW_TICK);
        let deadline = tokio::time::sleep(total);
        tokio::pin!(deadline);
        loop {
            tokio::select! {
                () = &mut cancelled => return StopReason::Cancelled,
                () = &mut deadline => {
                    send(&client, &agent_text(session_id, reply));
                    return StopReason::EndTurn;
                }
                _ = ticks.tick() => send(&client, &agent_text(session_id, "…")),
            }
        }
    }
}

/// Sends a `session/update`; a client that went away ends the turn anyway.
fn send(client: &protocols_acp::ClientHandle, update: &v1::types::SessionNotification) {
    if let Err(error) = client.session_update(update) {
        tracing::debug!(%error, "a session update was not sent");
    }
}

fn refused(what: &str, error: &CallError) -> ErrorObject {
    tracing::debug!(%error, "{what} failed");
    ErrorObject::internal_error()
}

impl v1::Agent for DemoAgent {
    type Context = AcpCx;

    async fn initialize(
        &self,
        _params: InitializeRequest,
        _cx: &AcpCx,
    ) -> Result<InitializeResponse, ErrorObject> {
        Ok(InitializeResponse {
            agent_capabilities: Some(AgentCapabilities {
                load_session: Some(true),
                ..AgentCapabilities::default()
            }),
            agent_info: Some(Implementation {
                meta: None,
                name: "all-protocols-demo".to_owned(),
                title: Some("Demo agent".to_owned()),
                version: env!("CARGO_PKG_VERSION").to_owned(),
            }),
            auth_methods: Some(Vec::new()),
            meta: None,
            protocol_version: ProtocolVersion(1),
        })
    }

    async fn authenticate(
        &self,
        _params: AuthenticateRequest,
        _cx: &AcpCx,
    ) -> Result<AuthenticateResponse, ErrorObject> {
        Ok(AuthenticateResponse::default())
    }

    async fn session_new(
        &self,
        _params: NewSessionRequest,
        _cx: &AcpCx,
    ) -> Result<NewSessionResponse, ErrorObject> {
        Ok(NewSessionResponse {
            config_options: None,
            meta: None,
            modes: None,
            session_id: self.open_session(),
        })
    }

    async fn session_load(
        &self,
        params: LoadSessionRequest,
        _cx: &AcpCx,
    ) -> Result<LoadSessionResponse, ErrorObject> {
        self.known(&params.session_id)?;
        Ok(LoadSessionResponse::default())
    }

    async fn session_prompt(
        &self,
        params: PromptRequest,
        cx: &AcpCx,
    ) -> Result<PromptResponse, ErrorObject> {
        self.known(&params.session_id)?;
        let text = prompt_text(&params.prompt);
        let session_id = &params.session_id;
        let stop_reason = match text.trim_start().strip_prefix(READ_PREFIX).map(str::trim) {
            Some(path) if Path::new(path).is_absolute() => self.read(session_id, path, cx).await?,
            _ => match plan(&text) {
                DemoAction::Echo(reply) => {
                    send(&cx.client(), &agent_text(session_id, reply));
                    StopReason::EndTurn
                }
                DemoAction::Slow { reply, total, .. } => {
                    Self::slow(session_id, reply, total, cx).await
                }
            },
        };
        Ok(PromptResponse {
            meta: None,
            stop_reason,
        })
    }

    async fn session_cancel(&self, _params: CancelNotification, _cx: &AcpCx) {
        // The glue has already cancelled the running turn; nothing else to undo here.
    }
}

/// The demo agent as the runtime serves it.
pub fn server() -> AcpAgentServer<AgentV1<DemoAgent>> {
    AcpAgentServer::new(AgentV1(DemoAgent::default()))
}

/// Serves the demo agent on stdin/stdout until stdin closes.
///
/// # Errors
/// Reading stdin or writing stdout failed.
pub async fn serve_stdio() -> anyhow::Result<()> {
    protocols_runtime::stdio::serve_stdio(&server(), StdioConfig::default()).await?;
    Ok(())
}

/// The demo agent at `/acp` (ACP's HTTP transport), unhardened: the composing server hardens
/// every protocol's routes once.
pub fn router() -> axum::Router {
    StreamableHttp::new(server(), HttpConfig::default()).into_routes("/acp")
}
