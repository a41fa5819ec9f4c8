//! Resources, resource templates, prompts and completions: what a server registers besides
//! tools, how a URI finds its reader, and the one pagination rule every list shares.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

use protocols_runtime::ErrorObject;

use crate::context::RequestContext;
use crate::generated::v2025_11_25::types;
use crate::tools::BoxFuture;

/// MCP's error code for a resource that does not exist (2025-11-25; see
/// [`crate::errors::resource_not_found_code`] for each revision's).
pub const RESOURCE_NOT_FOUND: i64 = crate::errors::codes::RESOURCE_NOT_FOUND;

type ReadFn = Arc<
    dyn Fn(
            String,
            HashMap<String, String>,
            RequestContext,
        ) -> BoxFuture<Result<types::ReadResourceResult, ErrorObject>>
        + Send
        + Sync,
>;
type PromptFn = Arc<
    dyn Fn(
            HashMap<String, String>,
            RequestContext,
        ) -> BoxFuture<Result<types::GetPromptResult, ErrorObject>>
        + Send
        + Sync,
>;
type CompleteFn = Arc<dyn Fn(&types::CompleteRequestParams) -> Vec<String> + Send + Sync>;

/// A URI template of RFC 6570 level 1 (`{name}` expansions matching one path segment), enough
/// to route a read to the template that produced the URI.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UriTemplate {
    parts: Vec<TemplatePart>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum TemplatePart {
    Literal(String),
    Variable(String),
}

impl UriTemplate {
    /// Parses an RFC 6570 level-1 template (`file:///{path}`) into literals and variables.
    pub fn parse(template: &str) -> Self {
        let mut parts = Vec::new();
        let mut rest = template;
        while let Some((literal, after)) = rest.split_once('{') {
            let Some((name, tail)) = after.split_once('}') else {
                break;
            };
            if !literal.is_empty() {
                parts.push(TemplatePart::Literal(literal.to_owned()));
            }
            parts.push(TemplatePart::Variable(name.to_owned()));
            rest = tail;
        }
        if !rest.is_empty() {
            parts.push(TemplatePart::Literal(rest.to_owned()));
        }
        Self { parts }
    }

    /// The variables' values when `uri` is an expansion of this template.
    pub fn matches(&self, uri: &str) -> Option<HashMap<String, String>> {
        let mut values = HashMap::new();
        let mut rest = uri;
        let mut parts = self.parts.iter().peekable();
        while let Some(part) = parts.next() {
            match part {
                TemplatePart::Literal(literal) => rest = rest.strip_prefix(literal.as_str())?,
                TemplatePart::Variable(name) => {
                    let end = match parts.peek() {
                        Some(TemplatePart::Literal(next)) => rest.find(next.as_str())?,
                        _ => rest.len(),
                    };
                    let (value, tail) = rest.split_at_checked(end)?;
                    if value.is_empty() || value.contains('/') {
                        return None;
                    }
                    values.insert(name.clone(), value.to_owned());
                    rest = tail;
                }
            }
        }
        rest.is_empty().then_some(values)
    }
}

#[derive(Clone)]
struct ResourceEntry {
    resource: types::Resource,
    read: ReadFn,
}

#[derive(Clone)]
struct TemplateEntry {
    template: types::ResourceTemplate,
    pattern: UriTemplate,
    read: ReadFn,
}

#[derive(Clone)]
struct PromptEntry {
    prompt: types::Prompt,
    get: PromptFn,
}

/// Everything listed besides tools.
#[derive(Clone, Default)]
pub(crate) struct Catalog {
    resources: Vec<ResourceEntry>,
    templates: Vec<TemplateEntry>,
    prompts: Vec<PromptEntry>,
    completion: Option<CompleteFn>,
}

impl std::fmt::Debug for Catalog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Catalog")
            .field("resources", &self.resources.len())
            .field("templates", &self.templates.len())
            .field("prompts", &self.prompts.len())
            .finish_non_exhaustive()
    }
}

impl Catalog {
    pub(crate) fn add_resource<F, Fut>(&mut self, resource: types::Resource, read: F)
    where
        F: Fn(String, RequestContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<types::ReadResourceResult, ErrorObject>> + Send + 'static,
    {
        let read = Arc::new(read);
        self.resources.push(ResourceEntry {
            resource,
            read: Arc::new(move |uri, _, cx| Box::pin(read(uri, cx))),
        });
    }

    pub(crate) fn add_template<F, Fut>(&mut self, template: types::ResourceTemplate, read: F)
    where
        F: Fn(String, HashMap<String, String>, RequestContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<types::ReadResourceResult, ErrorObject>> + Send + 'static,
    {
        let read = Arc::new(read);
        let pattern = UriTemplate::parse(&template.uri_template);
        self.templates.push(TemplateEntry {
            template,
            pattern,
            read: Arc::new(move |uri, values, cx| Box::pin(read(uri, values, cx))),
        });
    }

    pub(crate) fn add_prompt<F, Fut>(&mut self, prompt: types::Prompt, get: F)
    where
        F: Fn(HashMap<String, String>, RequestContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<types::GetPromptResult, ErrorObject>> + Send + 'static,
    {
        let get = Arc::new(get);
        self.prompts.push(PromptEntry {
            prompt,
            get: Arc::new(move |arguments, cx| Box::pin(get(arguments, cx))),
        });
    }

    pub(crate) fn set_completion(
        &mut self,
        complete: impl Fn(&types::CompleteRequestParams) -> Vec<String> + Send + Sync + 'static,
    ) {
        self.completion = Some(Arc::new(complete));
    }

    pub(crate) fn has_resources(&self) -> bool {
        !self.resources.is_empty() || !self.templates.is_empty()
    }

    pub(crate) fn has_prompts(&self) -> bool {
        !self.prompts.is_empty()
    }

    pub(crate) fn has_completion(&self) -> bool {
        self.completion.is_some()
    }

    pub(crate) fn resources(&self) -> Vec<types::Resource> {
        self.resources
            .iter()
            .map(|entry| entry.resource.clone())
            .collect()
    }

    pub(crate) fn templates(&self) -> Vec<types::ResourceTemplate> {
        self.templates
            .iter()
            .map(|entry| entry.template.clone())
            .collect()
    }

    pub(crate) fn prompts(&self) -> Vec<types::Prompt> {
        self.prompts
            .iter()
            .map(|entry| entry.prompt.clone())
            .collect()
    }

    /// Reads `uri`: an exact resource first, then the first template it expands.
    pub(crate) async fn read(
        &self,
        uri: &str,
        cx: RequestContext,
    ) -> Result<types::ReadResourceResult, ErrorObject> {
        if let Some(entry) = self
            .resources
            .iter()
            .find(|entry| entry.resource.uri == uri)
        {
            return (entry.read)(uri.to_owned(), HashMap::new(), cx).await;
        }
        for entry in &self.templates {
            if let Some(values) = entry.pattern.matches(uri) {
                return (entry.read)(uri.to_owned(), values, cx).await;
            }
        }
        Err(crate::errors::resource_not_found(uri))
    }

    /// Whether `uri` names something readable here (what a subscription may name).
    pub(crate) fn knows(&self, uri: &str) -> bool {
        self.resources.iter().any(|entry| entry.resource.uri == uri)
            || self
                .templates
                .iter()
                .any(|entry| entry.pattern.matches(uri).is_some())
    }

    /// Renders prompt `name`; a missing required argument is invalid params.
    pub(crate) async fn get_prompt(
        &self,
        name: &str,
        arguments: HashMap<String, String>,
        cx: RequestContext,
    ) -> Result<types::GetPromptResult, ErrorObject> {
        let entry = self
            .prompts
            .iter()
            .find(|entry| entry.prompt.name == name)
            .ok_or_else(|| crate::errors::unknown_prompt(name))?;
        let missing: Vec<&str> = entry
            .prompt
            .arguments
            .iter()
            .flatten()
            .filter(|argument| {
                argument.required == Some(true) && !arguments.contains_key(&argument.name)
            })
            .map(|argument| argument.name.as_str())
            .collect();
        if !missing.is_empty() {
            return Err(ErrorObject::invalid_params(format!(
                "missing required arguments: {}",
                missing.join(", ")
            )));
        }
        (entry.get)(arguments, cx).await
    }

    pub(crate) fn complete(&self, params: &types::CompleteRequestParams) -> Vec<String> {
        self.completion
            .as_ref()
            .map(|complete| complete(params))
            .unwrap_or_default()
    }
}

/// One page of a list: items after `cursor`, and the cursor of the next page. A cursor is the
/// offset of the page's first item; one that does not parse or points past the end is refused.
pub(crate) fn page<T>(
    items: Vec<T>,
    cursor: Option<&str>,
    size: usize,
) -> Result<(Vec<T>, Option<String>), ErrorObject> {
    let start = match cursor {
        None => 0,
        Some(cursor) => cursor
            .parse::<usize>()
            .ok()
            .filter(|start| *start <= items.len())
            .ok_or_else(|| ErrorObject::invalid_params("invalid cursor"))?,
    };
    let end = start.saturating_add(size.max(1)).min(items.len());
    let next = (end < items.len()).then(|| end.to_string());
    Ok((
        items.into_iter().skip(start).take(end - start).collect(),
        next,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    #[test]
    fn a_template_matches_its_expansions_and_captures_the_variables() {
        let template = UriTemplate::parse("test://template/{id}/data");
        let values = template.matches("test://template/123/data");
        assert_eq!(
            values
                .and_then(|values| values.get("id").cloned())
                .as_deref(),
            Some("123")
        );
        assert_eq!(template.matches("test://template/123/other"), None);
        assert_eq!(template.matches("test://template//data"), None);
        assert_eq!(template.matches("test://template/a/b/data"), None);
    }

    #[test]
    fn pages_follow_cursors_to_the_end_and_a_bad_cursor_is_refused() {
        let items: Vec<Value> = (0..5).map(Value::from).collect();
        let (first, next) = page(items.clone(), None, 2).unwrap_or_default();
        assert_eq!(first, vec![Value::from(0), Value::from(1)]);
        let (second, next) = page(items.clone(), next.as_deref(), 2).unwrap_or_default();
        assert_eq!(second, vec![Value::from(2), Value::from(3)]);
        let (last, next) = page(items.clone(), next.as_deref(), 2).unwrap_or_default();
        assert_eq!((last, next), (vec![Value::from(4)], None));
        assert!(page(items.clone(), Some("nonsense"), 2).is_err());
        assert!(page(items, Some("6"), 2).is_err());
    }
}
