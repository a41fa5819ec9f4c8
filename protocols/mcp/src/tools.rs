//! Tools as async functions. A tool's arguments are a `T: Deserialize + JsonSchema`, and
//! schemars turns `T` into the advertised `inputSchema`; a structured tool's output type gives
//! `outputSchema`, and its value travels as `structuredContent` (with a text copy for clients
//! that only read `content`). A tool that fails answers an `isError` result, never a protocol
//! error, so the model can see what went wrong. What a client shows of a tool (`title`,
//! `annotations` with their hints, `icons`, `_meta`) is set on its definition; a definition
//! whose schemas a client could not take (an input or output schema that is not an object
//! schema, an invalid `x-mcp-header`) is refused when the server is built, never per call.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use protocols_runtime::quote::quote;

use crate::content;
use crate::context::{RequestContext, ToolError};
use crate::generated::v2025_11_25::types;
use crate::param_headers::{InvalidHeaderAnnotation, header_params};

/// Whether a tool runs as a task: `forbidden` (the default), `optional` or `required`.
pub type TaskSupport = types::ToolExecutionTaskSupport;

/// The task support a listed `Tool` declares.
pub(crate) fn task_support_of(tool: &Value) -> TaskSupport {
    tool.pointer("/execution/taskSupport")
        .cloned()
        .and_then(|support| serde_json::from_value(support).ok())
        .unwrap_or(TaskSupport::Forbidden)
}

/// A boxed, sendable future (what registered handlers return).
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

type ToolFn = Arc<
    dyn Fn(
            Map<String, Value>,
            RequestContext,
        ) -> BoxFuture<Result<types::CallToolResult, ToolError>>
        + Send
        + Sync,
>;

/// Arguments of a tool that takes none.
#[derive(Debug, Clone, Copy, Default, serde::Deserialize, JsonSchema)]
pub struct NoArguments {}

/// One registered tool: what `tools/list` shows and what `tools/call` runs.
#[derive(Clone)]
pub struct ToolDefinition {
    /// The `Tool` object as listed (2025-11-25 shape), kept as JSON so its schemas stay verbatim.
    descriptor: Value,
    call: ToolFn,
}

impl std::fmt::Debug for ToolDefinition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolDefinition")
            .field("descriptor", &self.descriptor)
            .finish_non_exhaustive()
    }
}

/// The JSON Schema of `T` as schemars writes it (JSON Schema 2020-12), without the title it
/// takes from the Rust type's name, which says nothing to a model. MCP wants an object schema
/// for `inputSchema` and `outputSchema`; [`ToolDefinition::validate`] checks that it is one.
pub fn schema_of<T: JsonSchema>() -> Value {
    let schema = schemars::SchemaGenerator::default().into_root_schema_for::<T>();
    let mut value = serde_json::to_value(schema).unwrap_or_else(|_| json!({}));
    if let Value::Object(fields) = &mut value {
        fields.remove("title");
    }
    value
}

/// Why a tool definition cannot be served: what a client would refuse it for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidTool {
    /// The tool's input schema is not an object schema.
    #[error("tool `{tool}`: its input schema is not an object schema (`\"type\": \"object\"`)")]
    InputNotAnObject {
        /// The tool's name.
        tool: String,
    },
    #[error(
        "tool `{tool}`: its output type's schema is not an object schema, and structured content is an object"
    )]
    /// The tool's output schema is not an object schema, and structured content is an object.
    OutputNotAnObject {
        /// The tool's name.
        tool: String,
    },
    /// The tool's `x-mcp-header` annotations are invalid.
    #[error("tool `{tool}`: {source}")]
    Header {
        /// The tool's name.
        tool: String,
        /// What is wrong with the annotations.
        #[source]
        source: InvalidHeaderAnnotation,
    },
}

/// Whether `schema` describes JSON objects at its root (`"type": "object"`).
fn is_object_schema(schema: Option<&Value>) -> bool {
    schema
        .and_then(|schema| schema.get("type"))
        .and_then(Value::as_str)
        == Some("object")
}

fn descriptor(
    name: &str,
    description: &str,
    input_schema: Value,
    output_schema: Option<Value>,
) -> Value {
    let mut tool = json!({ "name": name, "description": description, "inputSchema": input_schema });
    if let (Some(output), Value::Object(fields)) = (output_schema, &mut tool) {
        fields.insert("outputSchema".to_owned(), output);
    }
    tool
}

fn decode_arguments<A: DeserializeOwned>(arguments: Map<String, Value>) -> Result<A, ToolError> {
    serde_json::from_value(Value::Object(arguments))
        .map_err(|error| ToolError::failed(format!("invalid arguments: {}", quote(error))))
}

impl ToolDefinition {
    /// A tool whose handler returns a full `CallToolResult`.
    pub fn new<A, F, Fut>(name: &str, description: &str, handler: F) -> Self
    where
        A: DeserializeOwned + JsonSchema + Send + 'static,
        F: Fn(A, RequestContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<types::CallToolResult, ToolError>> + Send + 'static,
    {
        let handler = Arc::new(handler);
        let call: ToolFn = Arc::new(move |arguments, cx| {
            let handler = Arc::clone(&handler);
            Box::pin(async move { handler(decode_arguments::<A>(arguments)?, cx).await })
        });
        Self {
            descriptor: descriptor(name, description, schema_of::<A>(), None),
            call,
        }
    }

    /// A tool with typed output: `outputSchema` from `O`, `structuredContent` from its value.
    pub fn structured<A, O, F, Fut>(name: &str, description: &str, handler: F) -> Self
    where
        A: DeserializeOwned + JsonSchema + Send + 'static,
        O: Serialize + JsonSchema + Send + 'static,
        F: Fn(A, RequestContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<O, ToolError>> + Send + 'static,
    {
        let handler = Arc::new(handler);
        let call: ToolFn = Arc::new(move |arguments, cx| {
            let handler = Arc::clone(&handler);
            Box::pin(async move {
                let output = handler(decode_arguments::<A>(arguments)?, cx).await?;
                structured_result(&output)
            })
        });
        Self {
            descriptor: descriptor(name, description, schema_of::<A>(), Some(schema_of::<O>())),
            call,
        }
    }

    /// A tool whose input schema is given as JSON (e.g. one schemars cannot express) and whose
    /// handler takes the raw arguments.
    pub fn raw<F, Fut>(name: &str, description: &str, input_schema: Value, handler: F) -> Self
    where
        F: Fn(Map<String, Value>, RequestContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<types::CallToolResult, ToolError>> + Send + 'static,
    {
        let handler = Arc::new(handler);
        let call: ToolFn = Arc::new(move |arguments, cx| {
            let handler = Arc::clone(&handler);
            Box::pin(async move { handler(arguments, cx).await })
        });
        Self {
            descriptor: descriptor(name, description, input_schema, None),
            call,
        }
    }

    /// Declares whether the tool may (or must) run as a task (`execution.taskSupport`,
    /// 2025-11-25); the server then accepts task-augmented calls of it.
    #[must_use]
    pub fn task_support(mut self, support: TaskSupport) -> Self {
        if let Value::Object(fields) = &mut self.descriptor {
            fields.insert(
                "execution".to_owned(),
                json!({ "taskSupport": support.to_string() }),
            );
        }
        self
    }

    /// What the tool declared about running as a task (`forbidden` when it said nothing).
    pub fn declared_task_support(&self) -> TaskSupport {
        task_support_of(&self.descriptor)
    }

    fn with_field(mut self, key: &str, value: Value) -> Self {
        if let Value::Object(fields) = &mut self.descriptor {
            fields.insert(key.to_owned(), value);
        }
        self
    }

    /// The name a client shows for the tool (2025-06-18 on; `name` is the identifier).
    #[must_use]
    pub fn title(self, title: impl Into<String>) -> Self {
        self.with_field("title", Value::from(title.into()))
    }

    /// Hints about the tool's behaviour (`readOnlyHint`, `destructiveHint`,
    /// `idempotentHint`, `openWorldHint`; 2025-03-26 on): what a client may show, or ask
    /// consent for, before a call. Hints, not guarantees.
    #[must_use]
    pub fn annotations(self, annotations: types::ToolAnnotations) -> Self {
        let value = serde_json::to_value(annotations).unwrap_or_else(|_| json!({}));
        self.with_field("annotations", value)
    }

    /// Icons a client may show for the tool (2025-11-25 on).
    #[must_use]
    pub fn icons(self, icons: Vec<types::Icon>) -> Self {
        let value = serde_json::to_value(icons).unwrap_or_else(|_| json!([]));
        self.with_field("icons", value)
    }

    /// The tool's own `_meta` (2025-06-18 on), listed as given.
    #[must_use]
    pub fn meta(self, meta: Map<String, Value>) -> Self {
        self.with_field("_meta", Value::Object(meta))
    }

    /// Whether a client can take the definition: object schemas for input and output, and
    /// valid `x-mcp-header` annotations. The builder refuses a server with a tool that is not.
    pub fn validate(&self) -> Result<(), InvalidTool> {
        let tool = self.name().to_owned();
        let input = self.descriptor.get("inputSchema");
        if !is_object_schema(input) {
            return Err(InvalidTool::InputNotAnObject { tool });
        }
        if let Some(output) = self.descriptor.get("outputSchema")
            && !is_object_schema(Some(output))
        {
            return Err(InvalidTool::OutputNotAnObject { tool });
        }
        if let Some(input) = input {
            header_params(input).map_err(|source| InvalidTool::Header { tool, source })?;
        }
        Ok(())
    }

    /// The tool's name.
    pub fn name(&self) -> &str {
        self.descriptor
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }

    pub(crate) fn descriptor(&self) -> &Value {
        &self.descriptor
    }

    /// Runs the tool; a failure becomes an `isError` result, other errors pass through.
    pub(crate) async fn call(
        &self,
        arguments: Map<String, Value>,
        cx: RequestContext,
    ) -> Result<types::CallToolResult, ToolError> {
        match (self.call)(arguments, cx).await {
            Err(ToolError::Failed(message)) => Ok(content::tool_error(message)),
            outcome => outcome,
        }
    }
}

fn structured_result<O: Serialize>(output: &O) -> Result<types::CallToolResult, ToolError> {
    let value = serde_json::to_value(output)
        .map_err(|error| ToolError::failed(format!("unserializable output: {error}")))?;
    let Value::Object(structured) = value else {
        return Err(ToolError::failed("structured output must be a JSON object"));
    };
    let text = Value::Object(structured.clone()).to_string();
    Ok(types::CallToolResult {
        structured_content: Some(structured),
        ..content::tool_result(vec![content::text(text)])
    })
}

/// The registered tools, in registration order.
#[derive(Debug, Clone, Default)]
pub(crate) struct Tools {
    ordered: Vec<ToolDefinition>,
    by_name: HashMap<String, usize>,
}

impl Tools {
    /// Adds a tool; one with the same name is replaced.
    pub(crate) fn insert(&mut self, tool: ToolDefinition) {
        match self.by_name.get(tool.name()) {
            Some(&index) => {
                if let Some(slot) = self.ordered.get_mut(index) {
                    *slot = tool;
                }
            }
            None => {
                self.by_name
                    .insert(tool.name().to_owned(), self.ordered.len());
                self.ordered.push(tool);
            }
        }
    }

    pub(crate) fn get(&self, name: &str) -> Option<&ToolDefinition> {
        self.by_name
            .get(name)
            .and_then(|&index| self.ordered.get(index))
    }

    pub(crate) fn descriptors(&self) -> Vec<Value> {
        self.ordered
            .iter()
            .map(|tool| tool.descriptor().clone())
            .collect()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.ordered.is_empty()
    }

    /// Every registered tool a client could not take.
    pub(crate) fn invalid(&self) -> Vec<InvalidTool> {
        self.ordered
            .iter()
            .filter_map(|tool| tool.validate().err())
            .collect()
    }

    pub(crate) fn any_supports_tasks(&self) -> bool {
        self.ordered
            .iter()
            .any(|tool| tool.declared_task_support() != TaskSupport::Forbidden)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Add {
        a: i64,
        b: i64,
    }

    #[test]
    fn the_input_schema_is_an_object_schema_naming_the_argument_fields() {
        let schema = schema_of::<Add>();
        assert_eq!(schema["type"], "object");
        assert_eq!(schema["properties"]["a"]["type"], "integer");
        let required: Vec<&str> = schema["required"]
            .as_array()
            .map(|items| items.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        assert_eq!(required, vec!["a", "b"]);
    }

    #[test]
    fn a_tool_without_arguments_still_advertises_an_object_schema() {
        assert_eq!(schema_of::<NoArguments>()["type"], "object");
    }

    #[derive(serde::Serialize, JsonSchema)]
    #[allow(dead_code)]
    enum Verdict {
        Yes,
        No,
    }

    fn echo_like() -> ToolDefinition {
        ToolDefinition::new("add", "Adds", |_: Add, _| async {
            Ok(content::tool_result(Vec::new()))
        })
    }

    #[test]
    fn an_output_type_whose_schema_is_not_an_object_is_refused_at_definition_time_not_per_call() {
        let tool = ToolDefinition::structured("verdict", "Decides", |_: NoArguments, _| async {
            Ok(Verdict::Yes)
        });
        assert_eq!(
            tool.validate(),
            Err(InvalidTool::OutputNotAnObject {
                tool: "verdict".to_owned()
            })
        );
        let numbers = ToolDefinition::structured("count", "Counts", |_: NoArguments, _| async {
            Ok(vec![1, 2])
        });
        assert!(numbers.validate().is_err());
        assert_eq!(echo_like().validate(), Ok(()));
    }

    #[test]
    fn an_input_schema_that_is_not_an_object_or_mirrors_a_number_into_a_header_is_refused() {
        let scalar = ToolDefinition::raw("raw", "Raw", json!({"type": "string"}), |_, _| async {
            Ok(content::tool_result(Vec::new()))
        });
        assert!(matches!(
            scalar.validate(),
            Err(InvalidTool::InputNotAnObject { .. })
        ));
        let header = ToolDefinition::raw(
            "raw",
            "Raw",
            json!({"type": "object", "properties": {"n": {"type": "number", "x-mcp-header": "N"}}}),
            |_, _| async { Ok(content::tool_result(Vec::new())) },
        );
        assert!(matches!(header.validate(), Err(InvalidTool::Header { .. })));
    }

    #[test]
    fn title_annotations_icons_and_meta_are_listed_as_given() {
        let tool = echo_like()
            .title("Adder")
            .annotations(types::ToolAnnotations {
                read_only_hint: Some(true),
                idempotent_hint: Some(true),
                destructive_hint: Some(false),
                open_world_hint: Some(false),
                title: None,
            })
            .icons(vec![types::Icon {
                mime_type: Some("image/png".to_owned()),
                sizes: None,
                src: "https://example.com/add.png".to_owned(),
                theme: None,
            }])
            .meta(
                json!({"com.example/owner": "maths"})
                    .as_object()
                    .cloned()
                    .unwrap_or_default(),
            );
        let listed = tool.descriptor();
        assert_eq!(listed["title"], "Adder");
        assert_eq!(listed["annotations"]["readOnlyHint"], true);
        assert_eq!(listed["annotations"]["destructiveHint"], false);
        assert_eq!(listed["icons"][0]["src"], "https://example.com/add.png");
        assert_eq!(listed["_meta"]["com.example/owner"], "maths");
        assert_eq!(tool.validate(), Ok(()));
    }
}
