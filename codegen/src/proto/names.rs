//! Definition keys: the key of each proto message or enum (`Outer_Inner` for nested types,
//! relative to the package), handed out once so no two proto elements share one. The Rust names
//! of those definitions are typify's (`TypeNames`); this module never guesses them.

use std::collections::BTreeMap;

use super::ProtoError;
use super::error::Place;

/// The definition key for a message or enum: its path below the package, joined by `_`.
pub(super) fn definition_name(full_name: &str, package: &str) -> String {
    let relative = match full_name.strip_prefix(package) {
        Some(rest) if !package.is_empty() => rest.trim_start_matches('.'),
        _ => full_name,
    };
    relative.replace('.', "_")
}

/// Every definition key handed out for one revision.
#[derive(Debug, Default)]
pub(super) struct NameTable {
    definition_of: BTreeMap<String, String>,
    owner_of_definition: BTreeMap<String, String>,
}

impl NameTable {
    /// Registers `full_name` under `definition`, refusing a definition key already taken.
    pub(super) fn claim(
        &mut self,
        place: &Place,
        full_name: &str,
        definition: &str,
    ) -> Result<(), ProtoError> {
        if self.definition_of.contains_key(full_name) {
            return Ok(());
        }
        if let Some(other) = self.owner_of_definition.get(definition) {
            return Err(ProtoError::NameCollision {
                place: place.clone(),
                element: full_name.to_owned(),
                name: definition.to_owned(),
                other: other.clone(),
            });
        }
        self.owner_of_definition
            .insert(definition.to_owned(), full_name.to_owned());
        self.definition_of
            .insert(full_name.to_owned(), definition.to_owned());
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
