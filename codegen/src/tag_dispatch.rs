//! Tag-dispatched unions: typify renders a union of `$ref`s as a `#[serde(untagged)]` enum, which
//! decodes by trying each member in turn (MCP `ContentBlock` fails image, audio and resource link
//! before it reaches text). When every member is an object with a required single-value string
//! property under one name, distinct per member (`type: "text"`, `kind: "task"`), that property
//! tells the member at once: this pass replaces the derived `Deserialize` of such an enum with one
//! that reads the tag first and decodes that member only. `Serialize` stays derived (untagged,
//! newtype variants), so the serialized form is unchanged.

use std::collections::{BTreeMap, BTreeSet};

use proc_macro2::TokenStream;
use quote::quote;
use serde_json::Value;
use syn::punctuated::Punctuated;

use crate::normalize::Definitions;
use crate::types_emit::TypeNames;

/// Required single-value string properties (`name → value`) of each definition, by Rust type name.
pub type Discriminators = BTreeMap<String, BTreeMap<String, String>>;

/// One enum this pass rewrote: its Rust name, the tag property and each tag value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TagDispatch {
    pub enum_name: String,
    pub tag: String,
    pub values: Vec<String>,
}

/// The discriminator candidates of every object definition (after `const-to-enum`), by the
/// name typify gives its type.
pub fn discriminators(definitions: &Definitions, names: &TypeNames) -> Discriminators {
    definitions
        .iter()
        .filter_map(|(name, schema)| {
            let candidates = fixed_required_strings(schema);
            let ident = names.ident(name)?;
            (!candidates.is_empty()).then(|| (ident.to_string(), candidates))
        })
        .collect()
}

fn fixed_required_strings(schema: &Value) -> BTreeMap<String, String> {
    let required: BTreeSet<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return BTreeMap::new();
    };
    properties
        .iter()
        .filter(|(name, _)| required.contains(name.as_str()))
        .filter_map(|(name, property)| {
            let values = property.get("enum")?.as_array()?;
            let [Value::String(value)] = values.as_slice() else {
                return None;
            };
            Some((name.clone(), value.clone()))
        })
        .collect()
}

/// Rewrites every eligible untagged enum of `file` in place; returns what it rewrote.
pub fn dispatch_on_tags(file: &mut syn::File, discriminators: &Discriminators) -> Vec<TagDispatch> {
    let mut rewritten = Vec::new();
    let mut impls = Vec::new();
    for item in &mut file.items {
        let syn::Item::Enum(item) = item else {
            continue;
        };
        let Some(dispatch) = tag_of(item, discriminators) else {
            continue;
        };
        if !drop_derived_deserialize(item) {
            continue;
        }
        impls.push(deserialize_impl(item, &dispatch));
        rewritten.push(dispatch);
    }
    for tokens in impls {
        file.items.push(syn::Item::Verbatim(tokens));
    }
    rewritten
}

/// The shared tag of an untagged enum of newtype variants, if it has one.
fn tag_of(item: &syn::ItemEnum, discriminators: &Discriminators) -> Option<TagDispatch> {
    if !is_untagged(item) || item.variants.len() < 2 {
        return None;
    }
    let mut members = Vec::new();
    for variant in &item.variants {
        let syn::Fields::Unnamed(fields) = &variant.fields else {
            return None;
        };
        let [field] = fields.unnamed.iter().collect::<Vec<_>>()[..] else {
            return None;
        };
        let syn::Type::Path(path) = &field.ty else {
            return None;
        };
        let ident = path.path.get_ident()?.to_string();
        members.push(discriminators.get(&ident)?);
    }
    let candidates = members.first()?.keys();
    let tag = candidates
        .filter(|tag| {
            let values: Option<BTreeSet<&String>> = members.iter().map(|m| m.get(*tag)).collect();
            values.is_some_and(|values| values.len() == members.len())
        })
        .min_by_key(|tag| (!matches!(tag.as_str(), "type" | "kind"), (*tag).clone()))?;
    Some(TagDispatch {
        enum_name: item.ident.to_string(),
        tag: tag.clone(),
        values: members.iter().filter_map(|m| m.get(tag).cloned()).collect(),
    })
}

fn is_untagged(item: &syn::ItemEnum) -> bool {
    item.attrs.iter().any(|attr| {
        attr.path().is_ident("serde")
            && attr
                .parse_args::<syn::Ident>()
                .is_ok_and(|arg| arg == "untagged")
    })
}

/// Removes `Deserialize` from the enum's derive list; false when it was not derived.
fn drop_derived_deserialize(item: &mut syn::ItemEnum) -> bool {
    let mut dropped = false;
    for attr in &mut item.attrs {
        if !attr.path().is_ident("derive") {
            continue;
        }
        let Ok(paths) =
            attr.parse_args_with(Punctuated::<syn::Path, syn::Token![,]>::parse_terminated)
        else {
            continue;
        };
        let before = paths.len();
        let kept: Vec<&syn::Path> = paths
            .iter()
            .filter(|path| {
                path.segments
                    .last()
                    .is_none_or(|segment| segment.ident != "Deserialize")
            })
            .collect();
        if kept.len() != before {
            *attr = syn::parse_quote!(#[derive(#(#kept),*)]);
            dropped = true;
        }
    }
    dropped
}

/// `Deserialize` reading the tag first (through the runtime's `tagged::read_tagged`, which owns
/// the tag checks and their errors): one member decoded.
fn deserialize_impl(item: &syn::ItemEnum, dispatch: &TagDispatch) -> TokenStream {
    let door = crate::door::path();
    let name = &item.ident;
    let union = name.to_string();
    let tag = &dispatch.tag;
    let values = &dispatch.values;
    let variants: Vec<&syn::Ident> = item.variants.iter().map(|v| &v.ident).collect();
    quote! {
        impl<'de> ::serde::Deserialize<'de> for #name {
            fn deserialize<D: ::serde::Deserializer<'de>>(
                deserializer: D,
            ) -> ::std::result::Result<Self, D::Error> {
                use ::serde::de::Error as _;
                const TAGS: &[&str] = &[#(#values),*];
                let tagged = #door::read_tagged(deserializer, #union, #tag, TAGS)?;
                match tagged.tag {
                    #( #values => ::serde_json::from_value(tagged.object).map(Self::#variants), )*
                    other => return ::std::result::Result::Err(D::Error::unknown_variant(other, TAGS)),
                }
                .map_err(D::Error::custom)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rewrite(code: &str, definitions: &Definitions) -> (Vec<TagDispatch>, String) {
        let mut file: syn::File = syn::parse_str(code).unwrap();
        let names = TypeNames::of(definitions.keys().map(String::as_str)).unwrap();
        let rewritten = dispatch_on_tags(&mut file, &discriminators(definitions, &names));
        (rewritten, quote!(#file).to_string())
    }

    fn content_definitions() -> Definitions {
        serde_json::from_value(json!({
            "Text": {"type": "object", "properties": {"type": {"type": "string", "enum": ["text"]},
                "text": {"type": "string"}}, "required": ["type", "text"]},
            "Image": {"type": "object", "properties": {"type": {"type": "string", "enum": ["image"]},
                "data": {"type": "string"}}, "required": ["type", "data"]},
            "Loose": {"type": "object", "properties": {"type": {"type": "string", "enum": ["text"]}}}
        }))
        .unwrap()
    }

    #[test]
    fn an_untagged_union_of_distinctly_tagged_objects_dispatches_on_the_tag() {
        let code = "#[derive(::serde::Deserialize, ::serde::Serialize, Clone, Debug)]
            #[serde(untagged)] pub enum Content { Image(Image), Text(Text) }";
        let (rewritten, out) = rewrite(code, &content_definitions());
        assert_eq!(
            rewritten,
            vec![TagDispatch {
                enum_name: "Content".into(),
                tag: "type".into(),
                values: vec!["image".into(), "text".into()],
            }]
        );
        let squashed: String = out.split_whitespace().collect();
        assert!(
            squashed.contains(
                "#[derive(::serde::Serialize,Clone,Debug)]#[serde(untagged)]pubenumContent"
            ),
            "{out}"
        );
        assert!(
            squashed.contains("impl<'de>::serde::Deserialize<'de>forContent"),
            "{out}"
        );
        assert!(
            squashed.contains("\"text\"=>::serde_json::from_value(tagged.object).map(Self::Text)"),
            "{out}"
        );
    }

    #[test]
    fn a_union_whose_members_share_a_tag_value_or_lack_one_stays_untagged() {
        let defs = content_definitions();
        for code in [
            "#[derive(::serde::Deserialize)] #[serde(untagged)] pub enum Same { A(Text), B(Text) }",
            "#[derive(::serde::Deserialize)] #[serde(untagged)] pub enum Optional { A(Image), B(Loose) }",
            "#[derive(::serde::Deserialize)] #[serde(untagged)] pub enum Scalar { A(Image), B(String) }",
            "#[derive(::serde::Deserialize)] #[serde(tag = \"type\")] pub enum Tagged { A(Image), B(Text) }",
        ] {
            let (rewritten, out) = rewrite(code, &defs);
            assert!(rewritten.is_empty(), "{code} → {out}");
            assert!(out.contains("Deserialize"), "{out}");
        }
    }
}
