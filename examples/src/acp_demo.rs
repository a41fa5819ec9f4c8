//! The ACP demo agent: the shared demo core spoken as ACP v1 (and v2 with the `unstable`
//! feature). A prompt is echoed back as `agent_message_chunk` updates; `read <absolute path>`
//! asks permission and reads the file through the client (only if it advertised
//! `fs.readTextFile`; v2 has no client file system, so there the read fails after permission);
//! `slow…` streams a chunk every 0.2 s until the client cancels. Each session's conversation is
//! kept, bounded ([`protocols_acp::history`]), so `session/load` replays it before answering.
//! Served over stdio ([`serve_stdio`]) and at `/acp` ([`router`]).

use std::path::Path;
use std::sync::Arc;
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
use protocols_acp::history::Conversations;
use protocols_acp::profile::session_not_found;
use protocols_acp::remote::{AcpEndpoint, RemoteConfig};
#[cfg(feature = "unstable")]
use protocols_acp::serve::AgentV2;
use protocols_acp::serve::{AcpCx, AgentV1};
use protocols_acp::updates::{
    ALLOW_ONCE, agent_text, allow_or_reject_once, chose, prompt_text, read_tool_call,
    tool_call_progress,
};
use protocols_acp::{AcpAgentServer, AcpContext};
use protocols_runtime::ErrorObject;
use protocols_runtime::stdio::StdioConfig;
use tokio_util::sync::CancellationToken;

use crate::core::{DemoAction, plan};

/// How often a slow turn streams a chunk.
const SLOW_TICK: Duration = Duration::from_millis(200);
/// The prefix that makes the demo read a file.
const READ_PREFIX: &str = "read ";

/// The demo agent: cheap to clone, every clone sharing one [`DemoState`], so the v1 and v2
/// faces of one server know the same sessions.
#[derive(Debug, Default, Clone)]
pub struct DemoAgent {
    state: Arc<DemoState>,
}

/// What the demo agent remembers: the sessions it has opened, each with its working directory
/// and its conversation (bounded by [`protocols_acp::history::HistoryLimits`]' defaults).
#[derive(Debug, Default)]
pub struct DemoState {
    sessions: Conversations,
    next_session: AtomicU64,
    next_tool_call: AtomicU64,
}

impl DemoAgent {
    fn open_session(&self, cwd: &str) -> String {
        let number = self.state.next_session.fetch_add(1, Ordering::Relaxed);
        let id = format!("demo-session-{number}");
        if let Some(forgotten) = self.state.sessions.open(&id, cwd) {
            tracing::debug!(%forgotten, "the least recently used session was forgotten");
        }
        id
    }

    fn known_id(&self, session_id: &str) -> Result<(), ErrorObject> {
        if self.state.sessions.knows(session_id) {
            Ok(())
        } else {
            Err(session_not_found(session_id))
        }
    }

    fn known(&self, session_id: &SessionId) -> Result<(), ErrorObject> {
        self.known_id(&session_id.0)
    }

    fn tool_call_id(&self) -> String {
        let number = self.state.next_tool_call.fetch_add(1, Ordering::Relaxed);
        format!("read-{number}")
    }

    /// Sends a v1 `session/update` and keeps it in its session's conversation; a client that
    /// went away ends the turn anyway.
    fn tell(&self, client: &protocols_acp::ClientHandle, update: &v1::types::SessionNotification) {
        if let Err(error) = self.state.sessions.tell(client, update) {
            tracing::debug!(%error, "a session update was not sent");
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
        let call = ToolCallId(self.tool_call_id());
        self.tell(&client, &read_tool_call(session_id, &call, path));
        let question = allow_or_reject_once(session_id, &call, &format!("Read {path}"));
        let answer = client
            .request_permission(&question)
            .await
            .map_err(|error| refused("request permission", &error))?;
        if !chose(&answer.outcome, ALLOW_ONCE) {
            self.tell(
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
                self.tell(
                    &client,
                    &tool_call_progress(
                        session_id,
                        &call,
                        ToolCallStatus::Completed,
                        Some(file.content.clone()),
                    ),
                );
                self.tell(&client, &agent_text(session_id, file.content));
            }
            Err(error) => {
                let why = match error {
                    CallError::NotAdvertised(capability) => {
                        format!("the client cannot {capability}")
                    }
                    other => other.to_string(),
                };
                self.tell(
                    &client,
                    &tool_call_progress(session_id, &call, ToolCallStatus::Failed, Some(why)),
                );
            }
        }
        Ok(StopReason::EndTurn)
    }

    /// Streams a chunk every tick until the turn is cancelled or the core's time is up.
    async fn slow(
        &self,
        session_id: &SessionId,
        reply: String,
        total: Duration,
        cx: &AcpCx,
    ) -> StopReason {
        let client = cx.client();
        let tick = || self.tell(&client, &agent_text(session_id, "…"));
        match tick_until_cancelled(cx.turn_cancelled(&session_id.0), total, tick).await {
            SlowEnd::Cancelled => StopReason::Cancelled,
            SlowEnd::TimeUp => {
                self.tell(&client, &agent_text(session_id, reply));
                StopReason::EndTurn
            }
        }
    }
}

/// How a slow turn ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SlowEnd {
    Cancelled,
    TimeUp,
}

/// Calls `tick` every [`SLOW_TICK`] until `cancelled` completes or `total` has passed.
async fn tick_until_cancelled(
    cancelled: impl std::future::Future<Output = ()>,
    total: Duration,
    tick: impl Fn(),
) -> SlowEnd {
    tokio::pin!(cancelled);
    let mut ticks = tokio::time::interval(SLOW_TICK);
    let deadline = tokio::time::sleep(total);
    tokio::pin!(deadline);
    loop {
        tokio::select! {
            () = &mut cancelled => return SlowEnd::Cancelled,
            () = &mut deadline => return SlowEnd::TimeUp,
            _ = ticks.tick() => tick(),
        }
    }
}

/// The absolute path a `read <path>` prompt names.
fn read_path(text: &str) -> Option<&str> {
    text.trim_start()
        .strip_prefix(READ_PREFIX)
        .map(str::trim)
        .filter(|path| Path::new(path).is_absolute())
}

/// Sends a `session/update` without keeping it (a replay of what is kept already); a client
/// that went away ends the load anyway.
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
        params: NewSessionRequest,
        _cx: &AcpCx,
    ) -> Result<NewSessionResponse, ErrorObject> {
        Ok(NewSessionResponse {
            config_options: None,
            meta: None,
            modes: None,
            session_id: SessionId(self.open_session(&params.cwd)),
        })
    }

    /// Replays the session's kept conversation as `session/update`s, then answers, as ACP's
    /// session setup requires.
    async fn session_load(
        &self,
        params: LoadSessionRequest,
        cx: &AcpCx,
    ) -> Result<LoadSessionResponse, ErrorObject> {
        let replay = self
            .state
            .sessions
            .replay(&params.session_id)
            .ok_or_else(|| session_not_found(&params.session_id.0))?;
        let client = cx.client();
        for update in &replay {
            send(&client, update);
        }
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
        self.state
            .sessions
            .record_prompt(&session_id.0, &params.prompt);
        let stop_reason = match read_path(&text) {
            Some(path) => self.read(session_id, path, cx).await?,
            _ => match plan(&text) {
                DemoAction::Echo(reply) => {
                    self.tell(&cx.client(), &agent_text(session_id, reply));
                    StopReason::EndTurn
                }
                DemoAction::Slow { reply, total, .. } => {
                    self.slow(session_id, reply, total, cx).await
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

/// The demo agent as the runtime serves it: v1, and v2 too in builds with `unstable`.
#[cfg(not(feature = "unstable"))]
pub fn server() -> AcpAgentServer<AgentV1<DemoAgent>> {
    AcpAgentServer::new(AgentV1(DemoAgent::default()))
}

/// The demo agent as the runtime serves it: v1, and v2 too in builds with `unstable`. Both
/// revisions share one agent, so a session is the same whichever version opened it.
#[cfg(feature = "unstable")]
pub fn server() -> AcpAgentServer<AgentV1<DemoAgent>, AgentV2<DemoAgent>> {
    let agent = DemoAgent::default();
    AcpAgentServer::new(AgentV1(agent.clone())).with_v2(AgentV2(agent))
}

/// Serves the demo agent on stdin/stdout until stdin closes.
///
/// # Errors
/// Reading stdin or writing stdout failed.
pub async fn serve_stdio() -> anyhow::Result<()> {
    protocols_runtime::stdio::serve_stdio(&server(), StdioConfig::default()).await?;
    Ok(())
}

/// The demo agent at `/acp` over ACP's remote transport (Streamable HTTP and WebSocket at one
/// endpoint), unhardened: the composing server hardens every protocol's routes once. Its streams
/// and connections end when `shutdown` fires; `config` bounds the transport.
pub fn router(shutdown: CancellationToken, config: RemoteConfig) -> axum::Router {
    AcpEndpoint::new(server(), config)
        .with_shutdown(shutdown)
        .into_routes("/acp")
}

/// The demo's v2 face: the same behaviour, told the v2 way — a prompt's answer only
/// acknowledges it, and the turn's progress and end travel as `state_update`s (`running`, then
/// `idle` with the stop reason). The demo acknowledges a prompt once its turn has ended, so a
/// client that awaits the answer has seen every update of the turn.
#[cfg(feature = "unstable")]
mod v2_face {
    use protocols_acp::generated::v2::types::{
        AbsolutePath, CloseSessionRequest, CloseSessionResponse, DeleteSessionRequest,
        DeleteSessionResponse, Implementation, InitializeRequest, InitializeResponse,
        ListSessionsRequest, ListSessionsResponse, LoginAuthRequest, LoginAuthResponse,
        LogoutAuthRequest, LogoutAuthResponse, NewSessionRequest, NewSessionResponse,
        PromptRequest, PromptResponse, ProtocolVersion, ResumeSessionRequest,
        ResumeSessionResponse, SessionId, SessionInfo, SetSessionConfigOptionRequest,
        SetSessionConfigOptionResponse, ToolCallId, ToolCallStatus, ToolCallStatusVariant0,
        ToolCallStatusVariant3, UpdateSessionNotification,
    };
    use protocols_acp::generated::v2::{self, types::CancelSessionNotification};
    use protocols_acp::serve::AcpCx;
    use protocols_acp::updates::ALLOW_ONCE;
    use protocols_acp::updates::v2::{
        TurnEnd, agent_text, allow_or_reject_once, chose, idle, prompt_text, running,
        tool_call_status,
    };
    use protocols_acp::{AcpContext, ClientHandle};
    use protocols_runtime::ErrorObject;

    use super::{DemoAgent, SlowEnd, read_path, refused, tick_until_cancelled};
    use crate::core::{DemoAction, plan};

    /// Sends a v2 `session/update`; a client that went away ends the turn anyway.
    fn send(client: &ClientHandle, update: &UpdateSessionNotification) {
        if let Err(error) = client.v2().session_update(update) {
            tracing::debug!(%error, "a session update was not sent");
        }
    }

    impl DemoAgent {
        /// Every open session as (id, working directory), by id.
        fn listed(&self) -> Vec<(String, String)> {
            self.state.sessions.sessions()
        }

        fn forget(&self, session_id: &str) {
            self.state.sessions.forget(session_id);
        }

        /// Asks permission to read `path`; v2 gives agents no client file system, so an
        /// allowed read fails and says why.
        async fn read_v2(
            &self,
            session_id: &SessionId,
            path: &str,
            cx: &AcpCx,
        ) -> Result<TurnEnd, ErrorObject> {
            let client = cx.client();
            let call = ToolCallId(self.tool_call_id());
            let title = format!("Read {path}");
            let pending = ToolCallStatus::Variant0(ToolCallStatusVariant0::Pending);
            send(
                &client,
                &tool_call_status(session_id, &call, pending, &title),
            );
            let answer = client
                .v2()
                .request_permission(&allow_or_reject_once(session_id, &title))
                .await
                .map_err(|error| refused("request permission", &error))?;
            let outcome = if chose(&answer.outcome, ALLOW_ONCE) {
                "ACP v2 gives agents no client file system"
            } else {
                "permission denied"
            };
            let failed = ToolCallStatus::Variant3(ToolCallStatusVariant3::Failed);
            send(
                &client,
                &tool_call_status(session_id, &call, failed, outcome),
            );
            Ok(TurnEnd::EndTurn)
        }

        async fn slow_v2(
            session_id: &SessionId,
            message_id: &str,
            reply: String,
            total: std::time::Duration,
            cx: &AcpCx,
        ) -> TurnEnd {
            let client = cx.client();
            let tick = || send(&client, &agent_text(session_id, message_id, "…"));
            match tick_until_cancelled(cx.turn_cancelled(&session_id.0), total, tick).await {
                SlowEnd::Cancelled => TurnEnd::Cancelled,
                SlowEnd::TimeUp => {
                    send(&client, &agent_text(session_id, message_id, reply));
                    TurnEnd::EndTurn
                }
            }
        }
    }

    impl v2::Agent for DemoAgent {
        type Context = AcpCx;

        async fn initialize(
            &self,
            _params: InitializeRequest,
            _cx: &AcpCx,
        ) -> Result<InitializeResponse, ErrorObject> {
            Ok(InitializeResponse {
                auth_methods: Some(Vec::new()),
                capabilities: None,
                info: Implementation {
                    meta: None,
                    name: "all-protocols-demo".to_owned(),
                    title: Some("Demo agent".to_owned()),
                    version: env!("CARGO_PKG_VERSION").to_owned(),
                },
                meta: None,
                protocol_version: ProtocolVersion(2),
            })
        }

        async fn auth_login(
            &self,
            _params: LoginAuthRequest,
            _cx: &AcpCx,
        ) -> Result<LoginAuthResponse, ErrorObject> {
            Ok(LoginAuthResponse::default())
        }

        async fn auth_logout(
            &self,
            _params: LogoutAuthRequest,
            _cx: &AcpCx,
        ) -> Result<LogoutAuthResponse, ErrorObject> {
            Ok(LogoutAuthResponse::default())
        }

        async fn session_new(
            &self,
            params: NewSessionRequest,
            _cx: &AcpCx,
        ) -> Result<NewSessionResponse, ErrorObject> {
            Ok(NewSessionResponse {
                config_options: None,
                meta: None,
                session_id: SessionId(self.open_session(&params.cwd.0)),
            })
        }

        async fn session_list(
            &self,
            _params: ListSessionsRequest,
            _cx: &AcpCx,
        ) -> Result<ListSessionsResponse, ErrorObject> {
            let sessions = self
                .listed()
                .into_iter()
                .map(|(id, cwd)| SessionInfo {
                    additional_directories: None,
                    cwd: AbsolutePath(cwd),
                    meta: None,
                    session_id: SessionId(id),
                    title: None,
                    updated_at: None,
                })
                .collect();
            Ok(ListSessionsResponse {
                meta: None,
                next_cursor: None,
                sessions,
            })
        }

        async fn session_resume(
            &self,
            params: ResumeSessionRequest,
            _cx: &AcpCx,
        ) -> Result<ResumeSessionResponse, ErrorObject> {
            self.known_id(&params.session_id.0)?;
            Ok(ResumeSessionResponse::default())
        }

        async fn session_close(
            &self,
            params: CloseSessionRequest,
            _cx: &AcpCx,
        ) -> Result<CloseSessionResponse, ErrorObject> {
            self.known_id(&params.session_id.0)?;
            Ok(CloseSessionResponse::default())
        }

        async fn session_delete(
            &self,
            params: DeleteSessionRequest,
            _cx: &AcpCx,
        ) -> Result<DeleteSessionResponse, ErrorObject> {
            self.known_id(&params.session_id.0)?;
            self.forget(&params.session_id.0);
            Ok(DeleteSessionResponse::default())
        }

        async fn session_set_config_option(
            &self,
            _params: SetSessionConfigOptionRequest,
            _cx: &AcpCx,
        ) -> Result<SetSessionConfigOptionResponse, ErrorObject> {
            // The demo offers no options, so setting one leaves none.
            Ok(SetSessionConfigOptionResponse {
                config_options: Vec::new(),
                meta: None,
            })
        }

        async fn session_prompt(
            &self,
            params: PromptRequest,
            cx: &AcpCx,
        ) -> Result<PromptResponse, ErrorObject> {
            self.known_id(&params.session_id.0)?;
            let session_id = &params.session_id;
            let client = cx.client();
            let message_id = format!("reply-{}", self.tool_call_id());
            send(&client, &running(session_id));
            let text = prompt_text(&params.prompt);
            let end = match read_path(&text) {
                Some(path) => self.read_v2(session_id, path, cx).await?,
                None => match plan(&text) {
                    DemoAction::Echo(reply) => {
                        send(&client, &agent_text(session_id, &message_id, reply));
                        TurnEnd::EndTurn
                    }
                    DemoAction::Slow { reply, total, .. } => {
                        Self::slow_v2(session_id, &message_id, reply, total, cx).await
                    }
                },
            };
            send(&client, &idle(session_id, end));
            Ok(PromptResponse::default())
        }

        async fn session_cancel(&self, _params: CancelSessionNotification, _cx: &AcpCx) {
            // The glue has already cancelled the running turn; nothing else to undo here.
        }
    }
}
