//! Test support the protocol crates share: the schema cache and each revision's model, read the
//! way a generation run reads them; the smallest instance a definition accepts; and the checks
//! every pinned revision goes through (`checks`), fed by the test support codegen generates into
//! each crate (`tests/support/generated/`): a [`GeneratedRevision`] per revision, whose
//! dispatcher runs a recording handler. A crate's `tests/revisions.rs` only hands its list over,
//! so pinning and generating a revision puts it under test without new test code.

pub mod checks;
mod minimal;

use std::future::Future;
use std::io::Write as _;
use std::pin::pin;
use std::sync::Mutex;
use std::task::{Context, Poll, Waker};

use serde::Serialize;
use serde_json::Value;
use serde_json::value::RawValue;

pub use minimal::minimal_instance;

use crate::frontend::load;
use crate::model::RevisionModel;
use crate::sources::{Layout, RevisionSpec, Sources};

/// What a test that needs the schema cache says when it is empty: one line naming the command.
pub const SYNC_HINT: &str =
    "the schema cache schema/cache/ is empty: run `cargo run -p codegen -- sync`";

/// The workspace layout (schema cache, sources.toml).
pub fn layout() -> Layout {
    Layout::discover()
}

/// Whether the cache holds any pinned file.
pub fn cache_is_filled() -> bool {
    std::fs::read_dir(layout().cache()).is_ok_and(|mut entries| entries.next().is_some())
}

/// The pin file; a test finding the cache empty stops here with [`SYNC_HINT`].
pub fn sources() -> Sources {
    assert!(cache_is_filled(), "{SYNC_HINT}");
    Sources::load(&layout().sources_toml()).unwrap_or_else(|error| panic!("{error}"))
}

/// The pinned entry of `protocol` `revision`.
pub fn spec(sources: &Sources, protocol: &str, revision: &str) -> RevisionSpec {
    sources
        .revisions
        .iter()
        .find(|s| s.protocol == protocol && s.revision == revision)
        .cloned()
        .unwrap_or_else(|| panic!("{protocol} {revision} is not in schema/sources.toml"))
}

/// Loads `protocol` `revision` from the synced cache; the error says how to sync.
pub fn revision_model(protocol: &str, revision: &str) -> Result<RevisionModel, String> {
    if !cache_is_filled() {
        return Err(SYNC_HINT.to_string());
    }
    let sources = Sources::load(&layout().sources_toml()).map_err(|e| e.to_string())?;
    let spec = sources
        .revisions
        .iter()
        .find(|s| s.protocol == protocol && s.revision == revision)
        .ok_or_else(|| format!("{protocol} {revision} is not in schema/sources.toml"))?;
    load(spec, &sources, &layout().cache())
        .map(|loaded| loaded.model)
        .map_err(|e| format!("{e} ({SYNC_HINT})"))
}

/// Reads a cache-relative file; a missing one is [`SYNC_HINT`].
pub fn read_cache_file(relative: &str) -> Result<Vec<u8>, String> {
    let path = layout().cache().join(relative);
    std::fs::read(&path).map_err(|e| format!("{}: {e}; {SYNC_HINT}", path.display()))
}

/// The smallest params the method's params definition accepts; `None` when it takes none.
pub fn minimal_params(model: &RevisionModel, method: &str) -> Option<Value> {
    let row = model.methods.iter().find(|row| row.name == method)?;
    minimal_of(model, row.params.as_deref()?)
}

/// The smallest result the method's result definition accepts.
pub fn minimal_result(model: &RevisionModel, method: &str) -> Option<Value> {
    let row = model.methods.iter().find(|row| row.name == method)?;
    minimal_of(model, row.result.as_deref()?)
}

fn minimal_of(model: &RevisionModel, definition: &str) -> Option<Value> {
    let schema = model.definitions.get(definition)?;
    Some(minimal_instance(&model.definitions, schema))
}

/// The code a recording handler answers every request with (not a JSON-RPC code), so a
/// dispatch that reached a handler method is told apart from -32601 and -32602.
pub const RECORDED: i64 = 7_000_001;

/// One generated revision's test support, as `tests/support/generated/` lists it.
#[derive(Debug, Clone, Copy)]
pub struct GeneratedRevision {
    pub protocol: &'static str,
    pub revision: &'static str,
    pub module: &'static str,
    /// The method table, described plainly.
    pub methods: fn() -> Vec<Method>,
    /// Runs one request (`true`) or notification through the generated dispatcher of the peer
    /// receiving it, with a handler recording each call.
    pub dispatch: fn(Receiver, bool, &str, Option<&RawValue>) -> Dispatched,
    /// Decodes a value as the type of a definition and encodes it again; `None` when the
    /// definition has no type.
    pub round_trip: fn(&str, Value) -> Option<Result<Value, String>>,
}

/// A method-table row, without the runtime's types.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Method {
    pub name: &'static str,
    pub request: bool,
    pub from_client: bool,
    pub from_server: bool,
    pub params_optional: bool,
    pub json_rpc: bool,
    pub rest_routes: usize,
}

/// Which peer's dispatcher receives a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Receiver {
    /// The MCP server, ACP or A2A agent: receives what the client sends.
    Server,
    /// The client: receives what the server sends.
    Client,
}

/// How one dispatch ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Dispatched {
    /// A handler method ran: the method it records and its params, encoded again.
    Handled {
        method: &'static str,
        params: Option<Result<Value, String>>,
    },
    /// The dispatcher answered an error (or, for a notification, reported one).
    Refused { code: i64, message: String },
    /// The receiving peer has no handler trait at all.
    NoHandler,
}

/// One recorded call: its method and its params encoded again (`None` for a method without).
type Call = (&'static str, Option<Result<Value, String>>);

/// What a recording handler saw: each call's method and params.
#[derive(Debug, Default)]
pub struct Calls(Mutex<Vec<Call>>);

impl Calls {
    /// Records a call with its params, encoded again.
    pub fn record<T: Serialize>(&self, method: &'static str, params: &T) {
        let encoded = serde_json::to_value(params).map_err(|error| error.to_string());
        self.push(method, Some(encoded));
    }

    /// Records a call of a method without params.
    pub fn record_bare(&self, method: &'static str) {
        self.push(method, None);
    }

    fn push(&self, method: &'static str, params: Option<Result<Value, String>>) {
        if let Ok(mut calls) = self.0.lock() {
            calls.push((method, params));
        }
    }

    /// The one call a dispatch made, as its outcome.
    pub fn into_handled(self) -> Dispatched {
        let calls = self.0.into_inner().unwrap_or_default();
        match <[_; 1]>::try_from(calls) {
            Ok([(method, params)]) => Dispatched::Handled { method, params },
            Err(calls) => Dispatched::Refused {
                code: 0,
                message: format!("{} handler calls for one message", calls.len()),
            },
        }
    }
}

/// Runs a future that must not wait (an in-memory dispatch to a recording handler).
pub fn ready<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    match future
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
    {
        Poll::Ready(output) => output,
        Poll::Pending => panic!("an in-memory dispatch waited"),
    }
}

/// A line for the test log that passing tests show too (the harness captures `eprintln!`, not
/// writes to the stream itself): what a check skipped and why.
pub fn note(line: &str) {
    let _ = writeln!(std::io::stderr(), "{line}");
}
