//! The input model every front end produces and the back end consumes: one pinned revision's
//! definitions (as JSON Schema, for normalization and typify), any definitions codegen emits
//! itself, and the method table derived from the source.

use std::collections::BTreeMap;

use serde_json::Value;

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
    /// Definitions codegen emits from its own model because no schema rewrite makes typify take
    /// them; each is Rust source for one item, named by the key.
    pub custom_types: BTreeMap<String, String>,
    /// Every wire method of the revision.
    pub methods: Vec<MethodRow>,
    /// Cargo feature the module is gated behind (`unstable`), if any.
    pub feature: Option<String>,
}

/// A source file and its pinned digest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceFile {
    pub path: String,
    pub sha256: String,
}

/// Which peer sends a method; mirrors `protocols_runtime::method::Direction`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Direction {
    ClientToServer,
    ServerToClient,
    Both,
}

/// Request or notification; mirrors `protocols_runtime::method::MethodKind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum MethodKind {
    Request,
    Notification,
}

/// One HTTP binding (A2A `google.api.http`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpRouteRow {
    pub verb: String,
    pub path: String,
    pub body: String,
}

/// One method-table row, with type names referring to `definitions`/`custom_types` keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MethodRow {
    pub name: String,
    pub direction: Direction,
    pub kind: MethodKind,
    pub params_type: Option<String>,
    pub params_optional: bool,
    pub result_type: Option<String>,
    pub streaming: bool,
    pub http: Vec<HttpRouteRow>,
}
