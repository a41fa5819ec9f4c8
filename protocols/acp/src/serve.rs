//! Adapters from the generated handler traits to [`AcpService`]: one per revision and side, so
//! an agent (or a client) is written as typed methods receiving the runtime's
//! `Context<AcpConnection>` (through which [`crate::AcpContext`] reaches the peer) and served by
//! the generated dispatchers. The v2 adapters exist with the `unstable` feature only; the agent
//! adapters with `server`, the client ones with `client`, as the generated traits do.

use protocols_runtime::handler::{Context, Reply};
use protocols_runtime::jsonrpc::{Notification, Request};

use crate::agent::AcpService;
use crate::connection::AcpConnection;
use crate::generated::v1;
#[cfg(feature = "unstable")]
use crate::generated::v2;

/// What every generated method of a served ACP trait receives.
pub type AcpCx = Context<AcpConnection>;

/// Logs a notification the generated dispatcher could not deliver (nothing is answered).
fn undelivered(method: &str, error: &protocols_runtime::method::DispatchError) {
    tracing::debug!(%method, %error, "a notification was not delivered");
}

macro_rules! adapter {
    ($(#[$doc:meta])* $name:ident, $module:ident :: $trait:ident, $request:ident, $notification:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Default)]
        pub struct $name<T>(pub T);

        impl<T: $module::$trait<Context = AcpCx> + 'static> AcpService for $name<T> {
            async fn handle(&self, request: Request, cx: AcpCx) -> Reply {
                $module::$request(&self.0, &request.method, request.params.as_deref(), &cx).await
            }

            async fn notify(&self, notification: Notification, cx: AcpCx) {
                let delivered = $module::$notification(
                    &self.0,
                    &notification.method,
                    notification.params.as_deref(),
                    &cx,
                )
                .await;
                if let Err(error) = delivered {
                    undelivered(&notification.method, &error);
                }
            }
        }
    };
}

#[cfg(feature = "server")]
adapter!(
    /// Serves a [`v1::Agent`] (client→agent methods of ACP v1).
    AgentV1, v1::Agent, dispatch_agent_request, dispatch_agent_notification
);
#[cfg(all(feature = "unstable", feature = "server"))]
adapter!(
    /// Serves a [`v2::Agent`] (client→agent methods of ACP v2).
    AgentV2, v2::Agent, dispatch_agent_request, dispatch_agent_notification
);
#[cfg(feature = "client")]
adapter!(
    /// Serves a [`v1::Client`] (agent→client methods of ACP v1), on the editor's side.
    ClientV1, v1::Client, dispatch_client_request, dispatch_client_notification
);
#[cfg(all(feature = "unstable", feature = "client"))]
adapter!(
    /// Serves a [`v2::Client`] (agent→client methods of ACP v2), on the editor's side.
    ClientV2, v2::Client, dispatch_client_request, dispatch_client_notification
);
