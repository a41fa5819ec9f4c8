//! Runs typify over a revision's normalized definitions and post-processes its output: upstream
//! docs removed, each definition documented by name/revision/file instead. A typify panic is
//! caught and narrowed down to the definition that causes it.

use std::collections::{BTreeMap, BTreeSet};
use std::panic::{AssertUnwindSafe, catch_unwind};

use heck::ToPascalCase;
use proc_macro2::TokenStream;
use schemars::schema::Schema;
use serde_json::Value;
use syn::visit_mut::VisitMut;
use typify::{TypeSpace, TypeSpaceSettings};

use crate::normalize::Definitions;
use crate::schema_doc::referenced_names;

/// The Rust type name typify gives a definition.
pub fn rust_type_name(definition: &str) -> String {
    let cleaned: String = definition
        .replace('\'', "")
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect();
    cleaned.to_pascal_case()
}

/// What typify is asked to produce.
#[derive(Debug, Clone)]
pub struct TypesRequest<'a> {
    pub definitions: &'a Definitions,
    /// Definitions whose type codegen emits itself, with the path typify should use instead.
    pub replacements: &'a BTreeMap<String, String>,
}

/// A definition typify could not convert (error or panic).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypifyFailure {
    pub definition: Option<String>,
    pub message: String,
}

/// Converts every definition; on failure finds the definition responsible.
pub fn typify_definitions(request: &TypesRequest<'_>) -> Result<TokenStream, TypifyFailure> {
    let all: Vec<String> = request.definitions.keys().cloned().collect();
    match run_typify(request, &all) {
        Ok(tokens) => Ok(tokens),
        Err(message) => Err(TypifyFailure {
            definition: find_culprit(request),
            message,
        }),
    }
}

fn run_typify(request: &TypesRequest<'_>, names: &[String]) -> Result<TokenStream, String> {
    let mut schemas = Vec::with_capacity(names.len());
    for name in names {
        let value = request
            .definitions
            .get(name)
            .cloned()
            .unwrap_or(Value::Bool(true));
        let schema: Schema = serde_json::from_value(value).map_err(|e| format!("{name}: {e}"))?;
        schemas.push((name.clone(), schema));
    }
    let mut settings = TypeSpaceSettings::default();
    settings.with_struct_builder(false);
    // Paired with the `numbers-keep-their-text` rewrite: every number stays exactly as written.
    settings.with_conversion(
        schemars::schema::SchemaObject {
            instance_type: Some(schemars::schema::InstanceType::Number.into()),
            ..Default::default()
        },
        "::serde_json::Number",
        std::iter::empty(),
    );
    for (name, path) in request.replacements {
        settings.with_replacement(rust_type_name(name), path, std::iter::empty());
    }
    let outcome = catch_unwind(AssertUnwindSafe(move || {
        let mut space = TypeSpace::new(&settings);
        space
            .add_ref_types(schemas)
            .map(|()| space.to_stream())
            .map_err(|e| e.to_string())
    }));
    match outcome {
        Ok(result) => result,
        Err(panic) => Err(format!("typify panicked: {}", panic_message(&panic))),
    }
}

fn panic_message(panic: &Box<dyn std::any::Any + Send>) -> String {
    panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "unknown panic".into())
}

/// Tries each definition with only what it references; the failing one with the smallest
/// closure is the cause. Runs only after a failure, so its cost does not matter.
fn find_culprit(request: &TypesRequest<'_>) -> Option<String> {
    let mut failing: Vec<(usize, String)> = Vec::new();
    for name in request.definitions.keys() {
        let closure = reference_closure(request.definitions, name);
        if run_typify(request, &closure).is_err() {
            failing.push((closure.len(), name.clone()));
        }
    }
    failing.into_iter().min().map(|(_, name)| name)
}

/// `name` and every definition it reaches through `$ref`, sorted.
pub fn reference_closure(definitions: &Definitions, name: &str) -> Vec<String> {
    let mut seen = BTreeSet::new();
    let mut stack = vec![name.to_string()];
    while let Some(next) = stack.pop() {
        if !seen.insert(next.clone()) {
            continue;
        }
        if let Some(schema) = definitions.get(&next) {
            stack.extend(referenced_names(schema));
        }
    }
    seen.into_iter().collect()
}

/// Removes every doc attribute typify wrote (it copies schema text) and documents each
/// definition's type with `doc(name)` instead.
pub fn redocument(file: &mut syn::File, doc: &dyn Fn(&str) -> Option<String>) {
    let mut stripper = DocStripper;
    stripper.visit_file_mut(file);
    for item in &mut file.items {
        let (attrs, ident) = match item {
            syn::Item::Struct(s) => (&mut s.attrs, s.ident.to_string()),
            syn::Item::Enum(e) => (&mut e.attrs, e.ident.to_string()),
            syn::Item::Type(t) => (&mut t.attrs, t.ident.to_string()),
            _ => continue,
        };
        if let Some(text) = doc(&ident) {
            attrs.insert(0, syn::parse_quote!(#[doc = #text]));
        }
    }
}

struct DocStripper;

impl VisitMut for DocStripper {
    fn visit_attributes_mut(&mut self, attrs: &mut Vec<syn::Attribute>) {
        attrs.retain(|attr| !attr.path().is_ident("doc"));
        for attr in attrs.iter_mut() {
            self.visit_attribute_mut(attr);
        }
    }

    fn visit_item_mod_mut(&mut self, module: &mut syn::ItemMod) {
        self.visit_attributes_mut(&mut module.attrs);
        if let Some((_, items)) = &mut module.content {
            for item in items {
                self.visit_item_mut(item);
            }
        }
    }
}

#[cfg(test)]
pub fn render_types_for_test(definitions: &Definitions) -> String {
    let replacements = BTreeMap::new();
    let request = TypesRequest {
        definitions,
        replacements: &replacements,
    };
    let tokens = typify_definitions(&request).unwrap();
    let file: syn::File = syn::parse2(tokens).unwrap();
    prettyplease::unparse(&file)
}
