//! MCP's wire names that a server and a client both speak: the Streamable HTTP headers, the
//! `_meta` keys of a stateless (2026-07-28) request, and how `notifications/cancelled` names
//! the request it cancels. Compiled with either side (or none), so neither borrows the other's
//! modules for them.

use http::HeaderName;
use protocols_runtime::{CancelConvention, CancelReply};

use crate::generated::v2026_07_28::methods;

/// The header naming the protocol revision a request speaks.
pub const VERSION_HEADER: HeaderName = HeaderName::from_static("mcp-protocol-version");
/// The header carrying the session id.
pub const SESSION_HEADER: HeaderName = HeaderName::from_static("mcp-session-id");
/// The header mirroring a request's method (2026-07-28).
pub const METHOD_HEADER: HeaderName = HeaderName::from_static("mcp-method");
/// The header mirroring the tool, resource or prompt a request names (2026-07-28).
pub const NAME_HEADER: HeaderName = HeaderName::from_static("mcp-name");

/// The `_meta` key carrying a stateless request's protocol version.
pub const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// The `_meta` key carrying a stateless request's client capabilities.
pub const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// The `_meta` key carrying a stateless request's log level.
pub const META_LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
/// The `_meta` key a stateless request may describe its client with.
pub const META_CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";

/// How `notifications/cancelled` names the request it cancels; a cancelled request gets no
/// answer, as MCP requires.
pub const CANCELLATION: CancelConvention = CancelConvention {
    method: methods::NOTIFICATIONS_CANCELLED,
    id_field: "requestId",
    reply: CancelReply::Nothing,
};
