//! The googleapis annotations the front end reads from descriptor options:
//! `google.api.field_behavior` (which fields are REQUIRED) and `google.api.http` (the REST
//! routes of an rpc, `additional_bindings` included).

use prost_reflect::{
    DescriptorPool, DynamicMessage, ExtensionDescriptor, FieldDescriptor, MethodDescriptor,
};

use crate::model::HttpRouteRow;

/// The HTTP verbs `HttpRule` spells as fields of its `pattern` oneof.
const VERB_FIELDS: [&str; 5] = ["get", "put", "post", "delete", "patch"];

/// The annotation extensions as found in one descriptor pool; a file that does not import
/// googleapis simply has none.
#[derive(Debug, Clone)]
pub(super) struct Annotations {
    field_behavior: Option<ExtensionDescriptor>,
    required_number: Option<i32>,
    http: Option<ExtensionDescriptor>,
}

impl Annotations {
    pub(super) fn from_pool(pool: &DescriptorPool) -> Self {
        let required_number = pool
            .get_enum_by_name("google.api.FieldBehavior")
            .and_then(|behavior| behavior.get_value_by_name("REQUIRED"))
            .map(|value| value.number());
        Self {
            field_behavior: pool.get_extension_by_name("google.api.field_behavior"),
            required_number,
            http: pool.get_extension_by_name("google.api.http"),
        }
    }

    /// Whether the field carries `(google.api.field_behavior) = REQUIRED` (or is a proto2
    /// `required` field).
    pub(super) fn is_required(&self, field: &FieldDescriptor) -> bool {
        if field.is_required() {
            return true;
        }
        let (Some(extension), Some(required)) = (&self.field_behavior, self.required_number) else {
            return false;
        };
        let options = field.options();
        if !options.has_extension(extension) {
            return false;
        }
        let behaviors = options.get_extension(extension);
        behaviors.as_list().is_some_and(|list| {
            list.iter()
                .any(|behavior| behavior.as_enum_number() == Some(required))
        })
    }

    /// Every HTTP binding of an rpc: the primary rule first, then its `additional_bindings`
    /// in declaration order.
    pub(super) fn http_routes(&self, method: &MethodDescriptor) -> Vec<HttpRouteRow> {
        let Some(extension) = &self.http else {
            return Vec::new();
        };
        let options = method.options();
        if !options.has_extension(extension) {
            return Vec::new();
        }
        let mut routes = Vec::new();
        if let Some(rule) = options.get_extension(extension).as_message() {
            collect_rule(rule, &mut routes);
        }
        routes
    }
}

/// Appends one `HttpRule` and (recursively) its additional bindings.
fn collect_rule(rule: &DynamicMessage, routes: &mut Vec<HttpRouteRow>) {
    if let Some((verb, path)) = rule_pattern(rule) {
        routes.push(HttpRouteRow {
            verb,
            path,
            body: string_field(rule, "body"),
        });
    }
    if let Some(additional) = rule.get_field_by_name("additional_bindings") {
        for binding in additional.as_list().unwrap_or_default() {
            if let Some(binding) = binding.as_message() {
                collect_rule(binding, routes);
            }
        }
    }
}

/// The verb (upper case) and path template of a rule; `custom` rules give their own verb.
fn rule_pattern(rule: &DynamicMessage) -> Option<(String, String)> {
    for verb in VERB_FIELDS {
        if rule.has_field_by_name(verb) {
            return Some((verb.to_ascii_uppercase(), string_field(rule, verb)));
        }
    }
    if rule.has_field_by_name("custom") {
        let custom = rule.get_field_by_name("custom")?;
        let custom = custom.as_message()?;
        return Some((string_field(custom, "kind"), string_field(custom, "path")));
    }
    None
}

fn string_field(message: &DynamicMessage, name: &str) -> String {
    message
        .get_field_by_name(name)
        .and_then(|value| value.as_str().map(str::to_owned))
        .unwrap_or_default()
}
