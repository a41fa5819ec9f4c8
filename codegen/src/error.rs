//! The one error type codegen reports: every failure names the file it concerns and, for schema
//! problems, the JSON pointer of the definition it failed on.

use std::path::PathBuf;

/// Why a codegen run stopped. The binary prints it and exits non-zero.
#[derive(Debug, thiserror::Error)]
pub enum CodegenError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{file}: not valid JSON: {source}")]
    NotJson {
        file: String,
        #[source]
        source: serde_json::Error,
    },
    #[error("{file}#{pointer}: {message}")]
    Schema {
        file: String,
        pointer: String,
        message: String,
    },
    #[error("{path}: missing from schema/cache; run `cargo run -p codegen -- sync`")]
    Missing { path: String },
    #[error(
        "{path}: not in the mirror {mirror} (named by `--from` or CODEGEN_SCHEMA_MIRROR); \
         unset it to download the pinned upstream files"
    )]
    NotInMirror { path: String, mirror: String },
    #[error("{path}: sha256 {actual} does not match the pinned {expected}")]
    Digest {
        path: String,
        expected: String,
        actual: String,
    },
    #[error("{path}: {message}")]
    Config { path: String, message: String },
    #[error("download {url}: {message}")]
    Download { url: String, message: String },
    /// The proto front end refused a file; the message names it (cache-relative), the line and
    /// column, and the element.
    #[error("{0}")]
    Proto(String),
    /// A definition the back end cannot generate; `at` is `file#/$defs/Name` (as the file spells
    /// it) or `file:line:column` for a proto message.
    #[error("{at}: {message}")]
    Definition { at: String, message: String },
    #[error("{protocol} {revision}: {message}")]
    Revision {
        protocol: String,
        revision: String,
        message: String,
    },
}

impl CodegenError {
    /// A schema error at `pointer` in `file`.
    pub fn schema(file: &str, pointer: &str, message: impl Into<String>) -> Self {
        Self::Schema {
            file: file.to_string(),
            pointer: pointer.to_string(),
            message: message.into(),
        }
    }

    /// An I/O error on `path`.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Self::Io {
            path: path.into(),
            source,
        }
    }
}

pub type Result<T> = std::result::Result<T, CodegenError>;
