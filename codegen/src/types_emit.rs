//! typify's side of the back end: the names typify gives each definition ([`TypeNames`], from a
//! naming pass over its type space, so nothing here re-derives typify's naming rule), the types of
//! a revision's normalized definitions, and what codegen does to typify's output (upstream docs
//! removed, each definition's type documented by a link to it upstream, extra names accepted on
//! input). A typify panic is caught quietly and becomes one line naming the definition.

use std::cell::Cell;
use std::collections::{BTreeMap, BTreeSet};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Once;

use proc_macro2::{Ident, TokenStream};
use quote::quote;
use schemars::schema::{Schema, SchemaObject};
use serde_json::Value;
use syn::visit_mut::VisitMut;
use typify::{TypeSpace, TypeSpaceSettings};

use crate::normalize::Definitions;
use crate::schema_doc::referenced_names;

/// The Rust name typify gives each definition, read from its type space.
#[derive(Debug, Clone, Default)]
pub struct TypeNames {
    by_definition: BTreeMap<String, Ident>,
}

impl TypeNames {
    /// Asks typify how it names each of `definitions`: it converts a stand-in for each (an empty
    /// schema, which never fails) and reports each one's type name. Naming depends on the
    /// definition key alone, so the names hold for the real schemas too.
    pub fn of<'a>(definitions: impl IntoIterator<Item = &'a str>) -> Result<Self, String> {
        let names: Vec<&str> = definitions.into_iter().collect();
        let stand_ins = names
            .iter()
            .map(|name| (name.to_string(), Schema::Object(SchemaObject::default())));
        let mut space = TypeSpace::new(&TypeSpaceSettings::default());
        space
            .add_ref_types(stand_ins)
            .map_err(|error| error.to_string())?;
        let mut by_definition = BTreeMap::new();
        for name in names {
            let reference = Schema::Object(SchemaObject {
                reference: Some(format!(
                    "#/definitions/{}",
                    name.replace('~', "~0").replace('/', "~1")
                )),
                ..Default::default()
            });
            let id = space
                .add_type(&reference)
                .map_err(|error| error.to_string())?;
            let rust = space
                .get_type(&id)
                .map_err(|error| error.to_string())?
                .name();
            let ident = syn::parse_str::<Ident>(&rust)
                .map_err(|_| format!("typify names `{name}` `{rust}`, not an identifier"))?;
            by_definition.insert(name.to_string(), ident);
        }
        Ok(Self { by_definition })
    }

    /// typify's identifier for a definition's type.
    pub fn ident(&self, definition: &str) -> Option<&Ident> {
        self.by_definition.get(definition)
    }

    /// The definition's type as the revision module names it: `types::Name`.
    pub fn path(&self, definition: &str) -> Option<TokenStream> {
        let ident = self.ident(definition)?;
        Some(quote! { types::#ident })
    }

    /// The definition typify named `ident`, if any.
    pub fn definition_of(&self, ident: &str) -> Option<&str> {
        self.by_definition
            .iter()
            .find(|(_, name)| *name == ident)
            .map(|(definition, _)| definition.as_str())
    }

    /// Every (definition, identifier) pair.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Ident)> {
        self.by_definition
            .iter()
            .map(|(definition, ident)| (definition.as_str(), ident))
    }
}

/// What typify is asked to produce.
#[derive(Debug, Clone)]
pub struct TypesRequest<'a> {
    pub definitions: &'a Definitions,
    /// Definitions whose type is emitted elsewhere, with the path typify should use for them.
    pub replacements: &'a BTreeMap<String, TokenStream>,
    pub names: &'a TypeNames,
}

/// Why typify produced nothing for a revision: the definition responsible (when one is) and
/// typify's own account, which is never a panic message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypifyFailure {
    pub definition: Option<String>,
    pub reason: String,
}

/// Converts every definition; on failure finds the definition responsible.
pub fn typify_definitions(request: &TypesRequest<'_>) -> Result<TokenStream, TypifyFailure> {
    let all: Vec<String> = request.definitions.keys().cloned().collect();
    run_typify(request, &all).map_err(|reason| TypifyFailure {
        definition: find_culprit(request),
        reason,
    })
}

fn run_typify(request: &TypesRequest<'_>, names: &[String]) -> Result<TokenStream, String> {
    let mut schemas = Vec::with_capacity(names.len());
    for name in names {
        let value = request
            .definitions
            .get(name)
            .cloned()
            .unwrap_or(Value::Bool(true));
        let schema: Schema =
            serde_json::from_value(value).map_err(|e| format!("not a JSON Schema: {e}"))?;
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
    for (definition, path) in request.replacements {
        if let Some(ident) = request.names.ident(definition) {
            settings.with_replacement(ident, path, std::iter::empty());
        }
    }
    let outcome = quietly(move || {
        let mut space = TypeSpace::new(&settings);
        space
            .add_ref_types(schemas)
            .map(|()| space.to_stream())
            .map_err(|e| first_line(&e.to_string()))
    });
    outcome.unwrap_or_else(|()| Err("it cannot convert this definition".to_string()))
}

/// typify errors embed multi-line debug dumps of the schema; the account keeps its first line.
fn first_line(message: &str) -> String {
    let line = message.lines().next().unwrap_or_default();
    line.trim_end_matches(|c: char| c == '{' || c.is_whitespace())
        .to_string()
}

thread_local! {
    static QUIET: Cell<bool> = const { Cell::new(false) };
}

/// Runs `work`, turning a panic into `Err(())` without printing it: the caller reports a
/// failure as one line of its own. The process-wide hook stays in place for every other thread
/// and for this one outside `work`.
fn quietly<T>(work: impl FnOnce() -> T) -> Result<T, ()> {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !QUIET.with(Cell::get) {
                previous(info);
            }
        }));
    });
    QUIET.with(|quiet| quiet.set(true));
    let outcome = catch_unwind(AssertUnwindSafe(work));
    QUIET.with(|quiet| quiet.set(false));
    outcome.map_err(|_| ())
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

/// What a type of typify's output stands for, as its doc says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stands<'a> {
    /// The type of this definition.
    For(&'a str),
    /// A type typify named for a schema inside this definition (an inline object, enum or
    /// union of one of its properties).
    InsideOf(&'a str),
}

/// Removes every doc attribute typify wrote (it copies schema text) and documents each type
/// with `doc` of what it stands for: a definition's type by that definition, every other type
/// by the definition it is part of.
pub fn redocument(
    file: &mut syn::File,
    names: &TypeNames,
    doc: &dyn Fn(Stands<'_>) -> Option<String>,
) {
    let mut stripper = DocStripper;
    stripper.visit_file_mut(file);
    let owners = inner_type_owners(file, names);
    for item in &mut file.items {
        let Some((attrs, ident)) = type_item_mut(item) else {
            continue;
        };
        let stands = match names.definition_of(&ident) {
            Some(definition) => Stands::For(definition),
            None => match owners.get(&ident) {
                Some(definition) => Stands::InsideOf(definition),
                None => continue,
            },
        };
        if let Some(text) = doc(stands) {
            attrs.insert(0, syn::parse_quote!(#[doc = #text]));
        }
    }
}

fn type_item_mut(item: &mut syn::Item) -> Option<(&mut Vec<syn::Attribute>, String)> {
    match item {
        syn::Item::Struct(s) => Some((&mut s.attrs, s.ident.to_string())),
        syn::Item::Enum(e) => Some((&mut e.attrs, e.ident.to_string())),
        syn::Item::Type(t) => Some((&mut t.attrs, t.ident.to_string())),
        _ => None,
    }
}

/// For each type typify named itself (no definition's), the definition it is part of: the
/// nearest definition type whose declaration refers to it, directly or through other such
/// types. Read from the declarations typify wrote, so nothing here re-derives how it names them.
fn inner_type_owners(file: &syn::File, names: &TypeNames) -> BTreeMap<String, String> {
    let mut refers: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for item in &file.items {
        let (ident, tokens) = match item {
            syn::Item::Struct(s) => (s.ident.to_string(), quote!(#s)),
            syn::Item::Enum(e) => (e.ident.to_string(), quote!(#e)),
            syn::Item::Type(t) => (t.ident.to_string(), quote!(#t)),
            _ => continue,
        };
        let mut mentioned = BTreeSet::new();
        collect_idents(tokens, &mut mentioned);
        mentioned.remove(&ident);
        refers.insert(ident, mentioned);
    }
    let mut owners: BTreeMap<String, String> = BTreeMap::new();
    // Breadth first from every definition type at once, in definition order, so each inner type
    // goes to its nearest definition and ties always resolve the same way.
    let mut frontier: Vec<(String, String)> = names
        .iter()
        .map(|(definition, ident)| (ident.to_string(), definition.to_string()))
        .filter(|(ident, _)| refers.contains_key(ident))
        .collect();
    while !frontier.is_empty() {
        let mut next = Vec::new();
        for (ident, definition) in frontier {
            for child in refers.get(&ident).into_iter().flatten() {
                let inner = refers.contains_key(child) && names.definition_of(child).is_none();
                if inner && !owners.contains_key(child) {
                    owners.insert(child.clone(), definition.clone());
                    next.push((child.clone(), definition.clone()));
                }
            }
        }
        frontier = next;
    }
    owners
}

fn collect_idents(tokens: TokenStream, into: &mut BTreeSet<String>) {
    for tree in tokens {
        match tree {
            proc_macro2::TokenTree::Ident(ident) => {
                into.insert(ident.to_string());
            }
            proc_macro2::TokenTree::Group(group) => collect_idents(group.stream(), into),
            _ => {}
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

/// Adds `#[serde(alias = "…")]` to the fields of each definition's struct that `aliases` names
/// (by the name the field has on the wire), so input may use either name; output keeps the
/// wire name. Returns the aliases that found no field, for the caller to refuse.
pub fn add_field_aliases(
    file: &mut syn::File,
    names: &TypeNames,
    aliases: &BTreeMap<String, BTreeMap<String, String>>,
) -> Vec<String> {
    let mut unplaced = Vec::new();
    for (definition, fields) in aliases {
        let Some(ident) = names.ident(definition) else {
            unplaced.extend(fields.keys().map(|field| format!("{definition}.{field}")));
            continue;
        };
        let target = file.items.iter_mut().find_map(|item| match item {
            syn::Item::Struct(item) if item.ident == *ident => Some(item),
            _ => None,
        });
        let Some(target) = target else {
            // A definition emitted elsewhere (a custom type) places its own aliases.
            continue;
        };
        for (wire, alias) in fields {
            let field = target
                .fields
                .iter_mut()
                .find(|field| wire_name(field).as_deref() == Some(wire.as_str()));
            match field {
                Some(field) => field
                    .attrs
                    .push(syn::parse_quote!(#[serde(alias = #alias)])),
                None => unplaced.push(format!("{definition}.{wire}")),
            }
        }
    }
    unplaced
}

/// The name a struct field has on the wire: its `#[serde(rename = "…")]`, else its identifier.
fn wire_name(field: &syn::Field) -> Option<String> {
    let mut renamed = None;
    for attr in field
        .attrs
        .iter()
        .filter(|attr| attr.path().is_ident("serde"))
    {
        let _ = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("rename") {
                let value: syn::LitStr = meta.value()?.parse()?;
                renamed = Some(value.value());
            } else if meta.input.peek(syn::Token![=]) {
                let _: syn::Expr = meta.value()?.parse()?;
            }
            Ok(())
        });
    }
    renamed.or_else(|| {
        field
            .ident
            .as_ref()
            .map(|ident| ident.to_string().trim_start_matches("r#").to_string())
    })
}

#[cfg(test)]
pub fn render_types_for_test(definitions: &Definitions) -> String {
    let replacements = BTreeMap::new();
    let names = TypeNames::of(definitions.keys().map(String::as_str)).unwrap();
    let request = TypesRequest {
        definitions,
        replacements: &replacements,
        names: &names,
    };
    let tokens = typify_definitions(&request).unwrap();
    let file: syn::File = syn::parse2(tokens).unwrap();
    prettyplease::unparse(&file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_names_are_what_typify_calls_each_definition() {
        let names = TypeNames::of(["CallToolRequest", "Task_Status", "self", "a-b c"]).unwrap();
        let rendered: Vec<String> = names.iter().map(|(d, i)| format!("{d}={i}")).collect();
        assert_eq!(
            rendered,
            [
                "CallToolRequest=CallToolRequest",
                "Task_Status=TaskStatus",
                "a-b c=ABC",
                "self=Self_"
            ]
        );
    }

    #[test]
    fn a_typify_panic_is_caught_without_a_word_on_stderr_and_reported_by_definition() {
        let definitions: Definitions = serde_json::from_value(serde_json::json!({
            "Fine": {"type": "string"},
            "Conditional": {"type": "object", "if": {"required": ["a"]}, "then": {"required": ["b"]}}
        }))
        .unwrap();
        let names = TypeNames::of(definitions.keys().map(String::as_str)).unwrap();
        let failure = typify_definitions(&TypesRequest {
            definitions: &definitions,
            replacements: &BTreeMap::new(),
            names: &names,
        })
        .unwrap_err();
        assert_eq!(failure.definition.as_deref(), Some("Conditional"));
        assert_eq!(failure.reason, "it cannot convert this definition");
    }

    #[test]
    fn a_panic_inside_quietly_is_an_error_and_the_thread_is_loud_again_after() {
        #[allow(clippy::panic)]
        let outcome = quietly(|| panic!("typify internals"));
        assert_eq!(outcome, Err(()));
        assert!(!QUIET.with(Cell::get));
    }

    #[test]
    fn every_type_typify_names_inside_a_definition_is_documented_as_part_of_that_definition() {
        let definitions: Definitions = serde_json::from_value(serde_json::json!({
            "Outer": {"type": "object", "properties": {
                "mode": {"enum": ["a", "b"]},
                "inner": {"type": "object", "properties": {"kind": {"enum": ["x", "y"]}}}
            }},
            "Plain": {"type": "object", "properties": {"level": {"enum": ["low", "high"]}}}
        }))
        .unwrap();
        let names = TypeNames::of(definitions.keys().map(String::as_str)).unwrap();
        let tokens = typify_definitions(&TypesRequest {
            definitions: &definitions,
            replacements: &BTreeMap::new(),
            names: &names,
        })
        .unwrap();
        let mut file: syn::File = syn::parse2(tokens).unwrap();
        redocument(&mut file, &names, &|stands| {
            Some(match stands {
                Stands::For(definition) => format!("for {definition}"),
                Stands::InsideOf(definition) => format!("inside {definition}"),
            })
        });
        let mut docs = BTreeMap::new();
        for item in &mut file.items {
            if let Some((attrs, ident)) = type_item_mut(item) {
                let doc = attrs.iter().find_map(|attr| match &attr.meta {
                    syn::Meta::NameValue(value) if attr.path().is_ident("doc") => {
                        Some(quote!(#value).to_string())
                    }
                    _ => None,
                });
                docs.insert(ident, doc.unwrap_or_default());
            }
        }
        assert!(docs.len() > 3, "typify named inner types: {docs:?}");
        for (ident, doc) in &docs {
            let expected = match ident.as_str() {
                "Outer" => "for Outer",
                "Plain" => "for Plain",
                inner if inner.starts_with("Plain") => "inside Plain",
                _ => "inside Outer",
            };
            assert!(
                doc.contains(expected),
                "{ident}: {doc:?}, expected {expected:?}"
            );
        }
    }

    #[test]
    fn an_alias_is_added_to_the_field_with_that_wire_name() {
        let mut file: syn::File = syn::parse_quote! {
            pub struct Task {
                #[serde(rename = "contextId")]
                pub context_id: String,
                pub id: String,
            }
        };
        let names = TypeNames::of(["Task"]).unwrap();
        let aliases = BTreeMap::from([(
            "Task".to_string(),
            BTreeMap::from([
                ("contextId".to_string(), "context_id".to_string()),
                ("missing".to_string(), "gone".to_string()),
            ]),
        )]);
        let unplaced = add_field_aliases(&mut file, &names, &aliases);
        assert_eq!(unplaced, ["Task.missing"]);
        let code = quote!(#file).to_string();
        assert!(code.contains("alias = \"context_id\""), "{code}");
    }
}
