//! The proto front end's error: every variant names the `.proto` file relative to the schema
//! cache (`a2a/1.0.1/a2a.proto`) with the line and column, and, where one is to blame, the fully
//! qualified element (message, field, rpc) it failed on.

use std::fmt;

/// A place in a proto file: its cache-relative path and, when known, a 1-based line and column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    pub file: String,
    pub line_column: Option<(usize, usize)>,
}

impl fmt::Display for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line_column {
            Some((line, column)) => write!(f, "{}:{line}:{column}", self.file),
            None => f.write_str(&self.file),
        }
    }
}

/// Why a `.proto` could not become a revision model.
#[derive(Debug, thiserror::Error)]
pub enum ProtoError {
    #[error("{file}: {source}")]
    Io {
        file: String,
        #[source]
        source: std::io::Error,
    },
    /// protox refused the file: a syntax error, a missing import, an unresolved type.
    #[error("{place}: {message}")]
    Parse { place: Place, message: String },
    /// A construct the proto3 JSON mapping (or this front end) has no representation for.
    #[error("{place}: {element}: {message}")]
    Unsupported {
        place: Place,
        element: String,
        message: String,
    },
    /// Two proto elements map to the same definition or Rust name.
    #[error("{place}: {element}: name `{name}` is already taken by {other}")]
    NameCollision {
        place: Place,
        element: String,
        name: String,
        other: String,
    },
}
