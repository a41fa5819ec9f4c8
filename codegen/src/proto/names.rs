//! Names: the definition key of each proto message or enum (`Outer_Inner` for nested types,
//! relative to the package) and the Rust names typify will give it, so that hand-emitted Rust
//! refers to typify's types by the names typify actually uses.

use std::collections::BTreeMap;
use std::path::Path;

use heck::{ToPascalCase, ToSnakeCase};

use super::ProtoError;

/// The definition key for a message or enum: its path below the package, joined by `_`.
pub(super) fn definition_name(full_name: &str, package: &str) -> String {
    let relative = match full_name.strip_prefix(package) {
        Some(rest) if !package.is_empty() => rest.trim_start_matches('.'),
        _ => full_name,
    };
    relative.replace('.', "_")
}

/// The Rust type name typify 0.8 derives from a definition key (`sanitize(name, Pascal)`).
pub(super) fn rust_type_name(definition: &str) -> String {
    not_a_keyword(definition.to_pascal_case())
}

/// The Rust field name typify derives from a property (`sanitize(name, Snake)`).
pub(super) fn rust_field_name(proto_name: &str) -> String {
    not_a_keyword(proto_name.to_snake_case())
}

/// The Rust enum variant name for a oneof member or an enum value, as typify spells variants.
pub(super) fn rust_variant_name(name: &str) -> String {
    not_a_keyword(name.to_pascal_case())
}

/// typify appends `_` to anything that is not a usable identifier; so do we.
fn not_a_keyword(candidate: String) -> String {
    let reserved = matches!(
        candidate.as_str(),
        "gen" | "Self" | "self" | "super" | "crate"
    );
    if reserved || syn::parse_str::<syn::Ident>(&candidate).is_err() {
        format!("{candidate}_")
    } else {
        candidate
    }
}

/// Every name handed out for one revision, so that no two proto elements share a definition key
/// or a Rust type name.
#[derive(Debug, Default)]
pub(super) struct NameTable {
    definition_of: BTreeMap<String, String>,
    owner_of_definition: BTreeMap<String, String>,
    owner_of_rust: BTreeMap<String, String>,
}

impl NameTable {
    /// Registers `full_name` under `definition`, refusing a definition or Rust name already taken.
    pub(super) fn claim(
        &mut self,
        file: &Path,
        full_name: &str,
        definition: &str,
    ) -> Result<(), ProtoError> {
        if self.definition_of.contains_key(full_name) {
            return Ok(());
        }
        self.claim_rust(file, full_name, &rust_type_name(definition))?;
        if let Some(other) = self.owner_of_definition.get(definition) {
            return Err(collision(file, full_name, definition, other));
        }
        self.owner_of_definition
            .insert(definition.to_owned(), full_name.to_owned());
        self.definition_of
            .insert(full_name.to_owned(), definition.to_owned());
        Ok(())
    }

    /// Registers a Rust type name that is not a definition (a oneof enum).
    pub(super) fn claim_rust(
        &mut self,
        file: &Path,
        element: &str,
        rust_name: &str,
    ) -> Result<(), ProtoError> {
        if let Some(other) = self.owner_of_rust.get(rust_name) {
            return Err(collision(file, element, rust_name, other));
        }
        self.owner_of_rust
            .insert(rust_name.to_owned(), element.to_owned());
        Ok(())
    }

    /// The definition key registered for a message or enum.
    pub(super) fn definition(&self, full_name: &str) -> Option<&str> {
        self.definition_of.get(full_name).map(String::as_str)
    }

    /// Every (full name, definition key) pair, sorted by full name.
    pub(super) fn definitions(&self) -> impl Iterator<Item = (&str, &str)> {
        self.definition_of
            .iter()
            .map(|(full, def)| (full.as_str(), def.as_str()))
    }
}

fn collision(file: &Path, element: &str, name: &str, other: &str) -> ProtoError {
    ProtoError::NameCollision {
        file: file.to_owned(),
        element: element.to_owned(),
        name: name.to_owned(),
        other: other.to_owned(),
    }
}
