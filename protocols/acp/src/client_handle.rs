//! The agent's typed handle on the client, from inside a running method: every agent→client
//! request goes through [`ClientHandle::call`], which refuses, before anything is sent, a method
//! whose capability the client did not advertise in `initialize`. Dropping a call's future
//! before its answer cancels it at the client (`$/cancel_request`).

use protocols_runtime::jsonrpc::ErrorObject;
use protocols_runtime::method::{RpcMethod, RpcNotification};
use protocols_runtime::peer::{Peer, PeerError};

use crate::connection::{Capability, ClientFeatures};
use crate::generated::v1;
#[cfg(feature = "unstable")]
use crate::generated::v2;

/// Why a call to the client failed.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    /// The client did not advertise the capability the method needs; nothing was sent.
    #[error("the client did not advertise {0}")]
    NotAdvertised(Capability),
    /// The client answered with a JSON-RPC error.
    #[error("the client refused: {0}")]
    Rejected(ErrorObject),
    /// The call could not be made or answered (no stream, timeout, connection gone).
    #[error("the call failed: {0}")]
    Transport(PeerError),
    /// The client's answer does not fit the method's result type.
    #[error("the client's answer to {method} does not fit its type")]
    InvalidResult {
        /// The method called.
        method: &'static str,
        /// The decoder's error.
        #[source]
        source: serde_json::Error,
    },
}

impl From<PeerError> for CallError {
    fn from(error: PeerError) -> Self {
        match error {
            PeerError::Rejected(error) => Self::Rejected(error),
            other => Self::Transport(other),
        }
    }
}

/// Calls the client of one connection. Cheap to clone.
#[derive(Debug, Clone)]
pub struct ClientHandle {
    peer: Peer,
    features: ClientFeatures,
}

impl ClientHandle {
    /// A handle calling through `peer`, gated by the `features` the client advertised.
    pub fn new(peer: Peer, features: ClientFeatures) -> Self {
        Self { peer, features }
    }

    /// What the client advertised.
    pub fn features(&self) -> ClientFeatures {
        self.features
    }

    /// Calls `M` on the client and waits for its typed answer.
    ///
    /// # Errors
    /// [`CallError::NotAdvertised`] without sending anything when the client lacks the
    /// capability `M` needs; otherwise the client's refusal or a transport failure.
    pub async fn call<M: RpcMethod>(&self, params: &M::Params) -> Result<M::Result, CallError> {
        self.features
            .permits(M::NAME)
            .map_err(CallError::NotAdvertised)?;
        let raw = self.peer.request(M::NAME, params).await?;
        serde_json::from_str(raw.get()).map_err(|source| CallError::InvalidResult {
            method: M::NAME,
            source,
        })
    }

    /// Sends the notification `N` to the client.
    ///
    /// # Errors
    /// The message could not be sent.
    pub fn notify<N: RpcNotification>(&self, params: &N::Params) -> Result<(), CallError> {
        Ok(self.peer.notify(N::NAME, params)?)
    }

    /// `session/update` (v1).
    ///
    /// # Errors
    /// The update could not be sent.
    pub fn session_update(&self, update: &v1::types::SessionNotification) -> Result<(), CallError> {
        self.notify::<v1::methods::SessionUpdate>(update)
    }

    /// `session/request_permission` (v1).
    ///
    /// # Errors
    /// See [`Self::call`].
    pub async fn request_permission(
        &self,
        request: &v1::types::RequestPermissionRequest,
    ) -> Result<v1::types::RequestPermissionResponse, CallError> {
        self.call::<v1::methods::SessionRequestPermission>(request)
            .await
    }

    /// `fs/read_text_file` (v1), only if the client advertised `fs.readTextFile`.
    ///
    /// # Errors
    /// See [`Self::call`].
    pub async fn read_text_file(
        &self,
        request: &v1::types::ReadTextFileRequest,
    ) -> Result<v1::types::ReadTextFileResponse, CallError> {
        self.call::<v1::methods::FsReadTextFile>(request).await
    }

    /// `fs/write_text_file` (v1), only if the client advertised `fs.writeTextFile`.
    ///
    /// # Errors
    /// See [`Self::call`].
    pub async fn write_text_file(
        &self,
        request: &v1::types::WriteTextFileRequest,
    ) -> Result<v1::types::WriteTextFileResponse, CallError> {
        self.call::<v1::methods::FsWriteTextFile>(request).await
    }

    /// `terminal/create` (v1), only if the client advertised `terminal`.
    ///
    /// # Errors
    /// See [`Self::call`].
    pub async fn create_terminal(
        &self,
        request: &v1::types::CreateTerminalRequest,
    ) -> Result<v1::types::CreateTerminalResponse, CallError> {
        self.call::<v1::methods::TerminalCreate>(request).await
    }

    /// `terminal/output` (v1), only if the client advertised `terminal`.
    ///
    /// # Errors
    /// See [`Self::call`].
    pub async fn terminal_output(
        &self,
        request: &v1::types::TerminalOutputRequest,
    ) -> Result<v1::types::TerminalOutputResponse, CallError> {
        self.call::<v1::methods::TerminalOutput>(request).await
    }

    /// `terminal/wait_for_exit` (v1), only if the client advertised `terminal`.
    ///
    /// # Errors
    /// See [`Self::call`].
    pub async fn wait_for_terminal_exit(
        &self,
        request: &v1::types::WaitForTerminalExitRequest,
    ) -> Result<v1::types::WaitForTerminalExitResponse, CallError> {
        self.call::<v1::methods::TerminalWaitForExit>(request).await
    }

    /// `terminal/kill` (v1), only if the client advertised `terminal`.
    ///
    /// # Errors
    /// See [`Self::call`].
    pub async fn kill_terminal(
        &self,
        request: &v1::types::KillTerminalRequest,
    ) -> Result<v1::types::KillTerminalResponse, CallError> {
        self.call::<v1::methods::TerminalKill>(request).await
    }

    /// `terminal/release` (v1), only if the client advertised `terminal`.
    ///
    /// # Errors
    /// See [`Self::call`].
    pub async fn release_terminal(
        &self,
        request: &v1::types::ReleaseTerminalRequest,
    ) -> Result<v1::types::ReleaseTerminalResponse, CallError> {
        self.call::<v1::methods::TerminalRelease>(request).await
    }

    /// `elicitation/create` (v1), only if the client advertised `elicitation`.
    ///
    /// # Errors
    /// See [`Self::call`].
    pub async fn create_elicitation(
        &self,
        request: &v1::types::CreateElicitationRequest,
    ) -> Result<v1::types::CreateElicitationResponse, CallError> {
        self.call::<v1::methods::ElicitationCreate>(request).await
    }

    /// The client's v2 methods, typed, with the same capability gate.
    #[cfg(feature = "unstable")]
    pub fn v2(&self) -> ClientV2<'_> {
        ClientV2(self)
    }
}

/// The agent→client methods of ACP v2 on a [`ClientHandle`] (builds with `unstable`).
#[cfg(feature = "unstable")]
#[derive(Debug, Clone, Copy)]
pub struct ClientV2<'a>(&'a ClientHandle);

#[cfg(feature = "unstable")]
impl ClientV2<'_> {
    /// `session/update` (v2).
    ///
    /// # Errors
    /// The update could not be sent.
    pub fn session_update(
        &self,
        update: &v2::types::UpdateSessionNotification,
    ) -> Result<(), CallError> {
        self.0.notify::<v2::methods::SessionUpdate>(update)
    }

    /// `session/request_permission` (v2).
    ///
    /// # Errors
    /// See [`ClientHandle::call`].
    pub async fn request_permission(
        &self,
        request: &v2::types::RequestPermissionRequest,
    ) -> Result<v2::types::RequestPermissionResponse, CallError> {
        self.0
            .call::<v2::methods::SessionRequestPermission>(request)
            .await
    }

    /// `elicitation/create` (v2), only if the client advertised `elicitation`.
    ///
    /// # Errors
    /// See [`ClientHandle::call`].
    pub async fn create_elicitation(
        &self,
        request: &v2::types::CreateElicitationRequest,
    ) -> Result<v2::types::CreateElicitationResponse, CallError> {
        self.0.call::<v2::methods::ElicitationCreate>(request).await
    }
}
