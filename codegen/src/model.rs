//! The input model every front end produces and the back end consumes: one pinned revision's
//! definitions (as JSON Schema, for normalization and typify), where each definition is upstream,
//! any definitions the front end emits itself, the method table, and what is protocol-specific
//! (peer names, the unions the method table replaces, field aliases). Types are named by their
//! definition key; the back end resolves each key to the Rust type typify gives it.

use std::collections::BTreeMap;
use std::sync::Arc;

use proc_macro2::{Ident, Span, TokenStream};
use serde_json::Value;

use crate::types_emit::TypeNames;

/// One protocol revision, ready for the back end.
#[derive(Debug, Clone)]
pub struct RevisionModel {
    /// `mcp`, `a2a` or `acp`.
    pub protocol: String,
    /// The revision as the protocol spells it (`2025-06-18`, `1.0.1`, `v1`).
    pub revision: String,
    /// The Rust module the revision is emitted as (`v2025_06_18`, `v1_0_1`, `v1_unstable`).
    pub module: String,
    /// The cache-relative path of each source file with its sha256, for the `@generated` header.
    pub sources: Vec<SourceFile>,
    /// Definitions by name, as JSON Schema (draft-07 style, `$ref`s as `#/definitions/Name`).
    pub definitions: BTreeMap<String, Value>,
    /// Where each definition is written upstream, for error messages and doc links.
    pub origins: Origins,
    /// Definitions the front end emits itself because no schema makes typify produce them right
    /// (proto messages with a `oneof`), by definition key.
    pub custom_types: BTreeMap<String, Arc<dyn CustomType>>,
    /// Every wire method of the revision.
    pub methods: Vec<MethodRow>,
    /// How the protocol names its two peers.
    pub peers: Peers,
    /// Upstream unions of every message one peer sends (`ClientRequest`, MCP's `ServerResult`):
    /// the method table replaces them, so they become no type of their own.
    pub message_unions: Vec<MessageUnion>,
    /// Peers whose messages get method-dispatched enums all the same (MCP: the glue re-expresses
    /// what a server sends in the peer's revision through them). These carry only that: decoding
    /// by method name and the params or result encoded again; a union another definition refers
    /// to gets whole-message serde as well, being a type.
    pub dispatched_enums: Vec<Peer>,
    /// Per definition, other names each property is accepted under on input (proto field names
    /// beside their lowerCamelCase JSON names), by JSON name.
    pub field_aliases: BTreeMap<String, BTreeMap<String, String>>,
    /// Cargo feature the module is gated behind (`unstable`), if any.
    pub feature: Option<String>,
}

/// A source file and its pinned digest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceFile {
    pub path: String,
    pub sha256: String,
}

/// Where a revision's definitions are written: the main file, how an error points into it, and
/// a link to each definition's line in the upstream repository at the pinned commit.
#[derive(Debug, Clone, Default)]
pub struct Origins {
    /// The cache-relative main file (`mcp/2025-06-18/schema.json`).
    pub file: String,
    /// Per definition: the place in `file` as an error names it (`#/$defs/Tool` for JSON
    /// Schema, as the file spells its definitions key; `:12:1` for a proto message).
    pub places: BTreeMap<String, String>,
    /// Per definition: its 1-based line in `file`.
    pub lines: BTreeMap<String, usize>,
    /// Per definition: the upstream element it stands for, when a name says more than the
    /// definition key (a proto message's full name, `a2a.v1.Task`).
    pub elements: BTreeMap<String, String>,
    /// The upstream page of `file` at its pinned commit, when the pin is a GitHub raw URL.
    pub browse_url: Option<String>,
}

impl Origins {
    /// `file#/$defs/Name` (or `file:line:column` for a proto): where an error about a definition
    /// points.
    pub fn locate(&self, definition: &str) -> String {
        match self.places.get(definition) {
            Some(place) => format!("{}{place}", self.file),
            None => self.file.clone(),
        }
    }

    /// The link to a definition's line upstream; `None` for a definition `file` does not
    /// declare (a proto's imported well-known type).
    pub fn link(&self, definition: &str) -> Option<String> {
        let url = self.browse_url.as_ref()?;
        let line = self.lines.get(definition)?;
        Some(format!("{url}#L{line}"))
    }
}

/// The page showing a pinned raw GitHub file (`raw.githubusercontent.com/o/r/<commit>/p` →
/// `github.com/o/r/blob/<commit>/p`); `None` for a URL of another host.
pub fn browse_url(raw_url: &str) -> Option<String> {
    let rest = raw_url.strip_prefix("https://raw.githubusercontent.com/")?;
    let mut parts = rest.splitn(4, '/');
    let (owner, repo, commit, path) = (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    Some(format!(
        "https://github.com/{owner}/{repo}/blob/{commit}/{path}"
    ))
}

/// One of the two peers of a protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Peer {
    /// The side that opens the connection (MCP client, ACP editor, A2A client).
    Client,
    /// The side that answers it (MCP server, ACP or A2A agent).
    Server,
}

/// How a protocol names its peers in generated items (`Server`, `Agent`): the identifier each
/// peer's trait is called, which its dispatchers, proxy and enums are named from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Peers {
    pub client: Ident,
    pub server: Ident,
}

impl Peers {
    /// The peers a front end names; each name must be a Rust identifier (front ends pass
    /// literals, so a bad one fails every run at once).
    pub fn new(client: &str, server: &str) -> Self {
        Self {
            client: Ident::new(client, Span::call_site()),
            server: Ident::new(server, Span::call_site()),
        }
    }

    pub fn name(&self, peer: Peer) -> &Ident {
        match peer {
            Peer::Client => &self.client,
            Peer::Server => &self.server,
        }
    }
}

/// What an upstream union of messages holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum UnionKind {
    Request,
    Notification,
    Result,
}

/// An upstream union of the messages of one kind one peer sends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageUnion {
    pub definition: String,
    pub sender: Peer,
    pub kind: UnionKind,
}

/// A definition the front end emits as Rust itself. It gets typify's names for every
/// definition, so its items and references agree with typify's output.
pub trait CustomType: std::fmt::Debug + Send + Sync {
    /// The items standing for the definition (its type under typify's name for it, plus any
    /// helpers); the error says why they could not be built.
    fn emit(&self, names: &TypeNames) -> Result<TokenStream, String>;
}

/// Which peer sends a method; mirrors `protocols_runtime::method::Direction`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Direction {
    ClientToServer,
    ServerToClient,
    Both,
}

impl Direction {
    /// Whether `peer` sends messages in this direction.
    pub fn sent_by(self, peer: Peer) -> bool {
        matches!(
            (self, peer),
            (Self::Both, _)
                | (Self::ClientToServer, Peer::Client)
                | (Self::ServerToClient, Peer::Server)
        )
    }
}

/// Request or notification; mirrors `protocols_runtime::method::MethodKind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum MethodKind {
    Request,
    Notification,
}

/// Which way an rpc streams (proto rpcs may stream either way or both).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub enum Streaming {
    /// One params message, one result.
    #[default]
    Unary,
    /// One params message, a stream of results.
    Results,
    /// A stream of params messages, one result.
    Params,
    /// Streams both ways.
    Both,
}

impl Streaming {
    pub fn results(self) -> bool {
        matches!(self, Self::Results | Self::Both)
    }

    pub fn params(self) -> bool {
        matches!(self, Self::Params | Self::Both)
    }
}

/// One HTTP binding (A2A `google.api.http`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpRouteRow {
    pub verb: String,
    pub path: String,
    pub body: String,
}

/// One method-table row; types are definition keys of the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MethodRow {
    pub name: String,
    pub direction: Direction,
    pub kind: MethodKind,
    /// The definition of the params, if the method has any.
    pub params: Option<String>,
    pub params_optional: bool,
    /// The definition of the result (requests only).
    pub result: Option<String>,
    pub streaming: Streaming,
    /// REST routes; empty for protocols without REST and for rpcs REST cannot carry.
    pub http: Vec<HttpRouteRow>,
}

impl MethodRow {
    /// Whether JSON-RPC carries the method: a stream of params has no JSON-RPC form.
    pub fn on_json_rpc(&self) -> bool {
        !self.streaming.params()
    }

    /// Whether any binding serves the method; only then does a handler trait answer it.
    pub fn is_bound(&self) -> bool {
        self.on_json_rpc() || !self.http.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_raw_github_url_maps_to_its_page_at_the_same_commit() {
        assert_eq!(
            browse_url("https://raw.githubusercontent.com/o/r/abc123/schema/v1/schema.json"),
            Some("https://github.com/o/r/blob/abc123/schema/v1/schema.json".to_string())
        );
        assert_eq!(browse_url("https://example.com/schema.json"), None);
    }

    #[test]
    fn a_client_streaming_rpc_has_no_binding_and_a_server_streaming_one_has_json_rpc() {
        let mut row = MethodRow {
            name: "SendLiveMessage".into(),
            direction: Direction::ClientToServer,
            kind: MethodKind::Request,
            params: None,
            params_optional: false,
            result: None,
            streaming: Streaming::Both,
            http: Vec::new(),
        };
        assert!(!row.is_bound());
        row.streaming = Streaming::Results;
        assert!(row.on_json_rpc() && row.is_bound());
    }
}
