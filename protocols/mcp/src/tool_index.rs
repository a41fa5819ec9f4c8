//! What the server must know about a tool before it runs a call of it: whether the tool runs as
//! a task, and which of its parameters a 2026-07-28 client mirrors into headers. Both come from
//! the handler's own `tools/list`, read once (every page) and kept until the server is told the
//! tool list changed ([`crate::McpServer::notify_list_changed`]), so a call costs a lookup, not a
//! listing.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use serde_json::Value;

use crate::param_headers::{HeaderParam, header_params};
use crate::tools::{TaskSupport, task_support_of};

/// Pages of `tools/list` read to index the tools, at most.
pub(crate) const TOOL_PAGES_INDEXED: usize = 100;

/// What the server knows about one listed tool.
#[derive(Debug, Clone)]
pub(crate) struct ToolFacts {
    pub(crate) task_support: TaskSupport,
    /// The parameters mirrored into `Mcp-Param-*` headers (none when the tool's annotations are
    /// not valid: a client then excludes the tool, so nothing is mirrored).
    pub(crate) headers: Arc<[HeaderParam]>,
}

impl ToolFacts {
    /// The facts a listed `Tool` (as JSON) states.
    pub(crate) fn of(tool: &Value) -> Self {
        let headers = tool
            .get("inputSchema")
            .map(header_params)
            .transpose()
            .unwrap_or_else(|error| {
                let name = tool.get("name").and_then(Value::as_str).unwrap_or_default();
                tracing::warn!(tool = name, %error, "a listed tool's x-mcp-header annotations are not valid; not checked");
                None
            })
            .unwrap_or_default();
        Self {
            task_support: task_support_of(tool),
            headers: headers.into(),
        }
    }
}

/// The tools by name, as last listed.
pub(crate) type Index = Arc<HashMap<String, ToolFacts>>;

/// The index, filled on first use and dropped when the tool list changes.
#[derive(Debug, Default)]
pub(crate) struct ToolIndex {
    current: RwLock<Option<Index>>,
}

impl ToolIndex {
    /// The index as last filled, if it is.
    pub(crate) fn current(&self) -> Option<Index> {
        self.current.read().ok().and_then(|current| current.clone())
    }

    /// Keeps `index` as the current one (a concurrent fill may land first; either reads the
    /// same list).
    pub(crate) fn fill(&self, index: HashMap<String, ToolFacts>) -> Index {
        let index = Arc::new(index);
        if let Ok(mut current) = self.current.write() {
            *current = Some(Arc::clone(&index));
        }
        index
    }

    /// Forgets the index: the next call reads the list again.
    pub(crate) fn invalidate(&self) {
        if let Ok(mut current) = self.current.write() {
            *current = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_tool_states_its_task_support_and_its_mirrored_parameters() {
        let facts = ToolFacts::of(&json!({
            "name": "query",
            "inputSchema": {"type": "object", "properties": {"region": {"type": "string", "x-mcp-header": "Region"}}},
            "execution": {"taskSupport": "optional"}
        }));
        assert_eq!(facts.task_support, TaskSupport::Optional);
        assert_eq!(facts.headers.len(), 1);
        let invalid = ToolFacts::of(&json!({
            "name": "bad",
            "inputSchema": {"type": "object", "properties": {"n": {"type": "number", "x-mcp-header": "N"}}}
        }));
        assert!(invalid.headers.is_empty());
        assert_eq!(invalid.task_support, TaskSupport::Forbidden);
    }

    #[test]
    fn an_invalidated_index_is_gone_until_filled_again() {
        let index = ToolIndex::default();
        assert!(index.current().is_none());
        index.fill(HashMap::new());
        assert!(index.current().is_some());
        index.invalidate();
        assert!(index.current().is_none());
    }
}
