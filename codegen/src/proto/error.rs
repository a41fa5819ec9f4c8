//! The proto front end's error: every variant names the `.proto` file and, where one is to blame,
//! the fully qualified element (message, field, rpc) it failed on.

use std::path::PathBuf;

/// Why a `.proto` could not become a revision model.
#[derive(Debug, thiserror::Error)]
pub enum ProtoError {
    #[error("{file}: {source}")]
    Io {
        file: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// protox refused the file: a syntax error, a missing import, an unresolved type.
    #[error("{file}: {message}")]
    Parse { file: PathBuf, message: String },
    /// A construct the proto3 JSON mapping (or this front end) has no representation for.
    #[error("{file}: {element}: {message}")]
    Unsupported {
        file: PathBuf,
        element: String,
        message: String,
    },
    /// Two proto elements map to the same definition or Rust name.
    #[error("{file}: {element}: name `{name}` is already taken by {other}")]
    NameCollision {
        file: PathBuf,
        element: String,
        name: String,
        other: String,
    },
}
