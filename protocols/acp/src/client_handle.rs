//! The agent's typed handle on the client, from inside a running method: every agent→client
//! request goes through [`ClientHandle::call`], which refuses, before anything is sent, a method
//! whose capability the client did not advertise in `initialize`.

use protocols_runtime::jsonrpc::ErrorObject;
use protocols_runtime::method::{RpcMethod, RpcNotification};
use protocols_runtime::peer::{Peer, PeerError};

use crate::connection::{Capability, ClientFeatures};
use crate::generated::v1;

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
        method: &'static str,
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
}
