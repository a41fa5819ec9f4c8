//! Where proto elements are written: the cache-relative file and the 1-based line and column of
//! a message, enum, field or rpc (from the source info protox keeps), or of a byte offset in a
//! file protox refused. Errors and doc links both read from here.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use prost_reflect::{DescriptorPool, FileDescriptor};

use super::error::Place;

/// Maps protox's file names (relative to an include path) to cache-relative paths and finds
/// line and column of elements.
#[derive(Debug, Clone)]
pub(super) struct Locator {
    /// protox's name of the main file and its cache-relative path.
    main: (String, String),
    /// Each include directory on disk and its cache-relative spelling.
    includes: Vec<(PathBuf, String)>,
}

impl Locator {
    pub(super) fn new(main_name: &str, main_path: &str, includes: &[(PathBuf, String)]) -> Self {
        Self {
            main: (main_name.to_owned(), main_path.to_owned()),
            includes: includes.to_vec(),
        }
    }

    /// The cache-relative path of a file protox names; protox's bundled `google/protobuf`
    /// files are named as protox bundles them.
    pub(super) fn cache_path(&self, protox_name: &str) -> String {
        if protox_name == self.main.0 {
            return self.main.1.clone();
        }
        self.includes
            .iter()
            .find(|(dir, _)| dir.join(protox_name).is_file())
            .map(|(_, relative)| format!("{relative}/{protox_name}"))
            .unwrap_or_else(|| format!("{protox_name} (bundled with protox)"))
    }

    /// The whole main file, when nothing narrower is known.
    pub(super) fn main_file(&self) -> Place {
        Place {
            file: self.main.1.clone(),
            line_column: None,
        }
    }

    /// The place of the element at source-info `path` in `file`.
    pub(super) fn element(&self, file: &FileDescriptor, path: &[i32]) -> Place {
        let line_column = file
            .file_descriptor_proto()
            .source_code_info
            .as_ref()
            .and_then(|info| info.location.iter().find(|location| location.path == path))
            .and_then(|location| {
                let line = usize::try_from(*location.span.first()?).ok()?;
                let column = usize::try_from(*location.span.get(1)?).ok()?;
                Some((line + 1, column + 1))
            });
        Place {
            file: self.cache_path(file.name()),
            line_column,
        }
    }

    /// The place of a byte offset in a file protox names (a parse error's label).
    pub(super) fn offset(&self, protox_name: &str, offset: usize) -> Place {
        let path = self.disk_path(protox_name);
        let line_column = path
            .and_then(|path| std::fs::read(path).ok())
            .map(|bytes| line_column_of(&bytes, offset));
        Place {
            file: self.cache_path(protox_name),
            line_column,
        }
    }

    fn disk_path(&self, protox_name: &str) -> Option<PathBuf> {
        self.includes
            .iter()
            .map(|(dir, _)| dir.join(protox_name))
            .find(|path| path.is_file())
    }
}

/// 1-based line and column (in characters) of a byte offset.
pub(super) fn line_column_of(bytes: &[u8], offset: usize) -> (usize, usize) {
    let before = bytes.get(..offset.min(bytes.len())).unwrap_or_default();
    let line = before.iter().filter(|byte| **byte == b'\n').count() + 1;
    let line_start = before
        .iter()
        .rposition(|byte| *byte == b'\n')
        .map_or(0, |index| index + 1);
    let column = String::from_utf8_lossy(before.get(line_start..).unwrap_or_default())
        .chars()
        .count()
        + 1;
    (line, column)
}

/// The line of every message and enum the file `main_name` declares, by full name, for doc
/// links (an imported type is linked from nowhere rather than to the wrong file).
pub(super) fn element_lines(pool: &DescriptorPool, main_name: &str) -> BTreeMap<String, usize> {
    let mut lines = BTreeMap::new();
    let line_of = |file: &FileDescriptor, path: &[i32]| {
        file.file_descriptor_proto()
            .source_code_info
            .as_ref()
            .and_then(|info| info.location.iter().find(|location| location.path == path))
            .and_then(|location| location.span.first())
            .and_then(|line| usize::try_from(*line).ok())
            .map(|line| line + 1)
    };
    for message in pool
        .all_messages()
        .filter(|m| m.parent_file().name() == main_name)
    {
        if let Some(line) = line_of(&message.parent_file(), message.path()) {
            lines.insert(message.full_name().to_owned(), line);
        }
    }
    for descriptor in pool
        .all_enums()
        .filter(|e| e.parent_file().name() == main_name)
    {
        if let Some(line) = line_of(&descriptor.parent_file(), descriptor.path()) {
            lines.insert(descriptor.full_name().to_owned(), line);
        }
    }
    lines
}

/// The directory a proto file is opened from (its own), as protox's first include path.
pub(super) fn own_directory(proto_file: &Path) -> PathBuf {
    proto_file
        .parent()
        .filter(|parent| !parent.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_offset_is_placed_by_line_and_character_column() {
        let text = "syntax = \"proto3\";\nmessage Ä { y = 1; }\n";
        let offset = text.find("y =").unwrap();
        assert_eq!(line_column_of(text.as_bytes(), offset), (2, 13));
        assert_eq!(line_column_of(text.as_bytes(), 0), (1, 1));
    }
}
