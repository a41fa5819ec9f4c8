//! `schema/sources.toml`: the pinned upstream files and the revisions generated from them.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::error::{CodegenError, Result};

/// The whole pin file.
#[derive(Debug, Clone, Deserialize)]
pub struct Sources {
    #[serde(rename = "file")]
    pub files: Vec<PinnedFile>,
    #[serde(rename = "revision")]
    pub revisions: Vec<RevisionSpec>,
}

/// What a pinned file is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    Schema,
    Meta,
    Proto,
    ProtoInclude,
    ExamplesManifest,
}

/// One pinned upstream file.
#[derive(Debug, Clone, Deserialize)]
pub struct PinnedFile {
    pub protocol: String,
    pub revision: String,
    pub role: Role,
    /// Path relative to the cache root (and to a mirror given to `sync --from`).
    pub path: String,
    pub url: String,
    pub sha256: String,
    /// For an examples manifest: the URL its listed paths are relative to.
    pub examples_url: Option<String>,
}

/// Which front end reads a revision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FrontEnd {
    Mcp,
    Acp,
    A2aJson,
    A2aProto,
}

/// One generated revision module.
#[derive(Debug, Clone, Deserialize)]
pub struct RevisionSpec {
    pub protocol: String,
    pub revision: String,
    pub module: String,
    pub front_end: FrontEnd,
    /// Cache-relative input files; the first is the main schema or proto.
    pub inputs: Vec<String>,
    #[serde(default)]
    pub include_dirs: Vec<String>,
    pub feature: Option<String>,
}

impl Sources {
    /// Reads and parses the pin file.
    pub fn load(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|e| CodegenError::io(path, e))?;
        toml::from_str(&text).map_err(|e| CodegenError::Config {
            path: path.display().to_string(),
            message: e.to_string(),
        })
    }

    /// The pin of a cache-relative path.
    pub fn pin(&self, path: &str) -> Option<&PinnedFile> {
        self.files.iter().find(|f| f.path == path)
    }
}

/// Where the workspace's schema directory, cache and protocol crates live.
#[derive(Debug, Clone)]
pub struct Layout {
    pub root: PathBuf,
}

impl Layout {
    /// The workspace root, found from codegen's own manifest directory.
    pub fn from_manifest_dir() -> Self {
        let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        let root = manifest.parent().map(Path::to_path_buf).unwrap_or(manifest);
        Self { root }
    }

    pub fn sources_toml(&self) -> PathBuf {
        self.root.join("schema").join("sources.toml")
    }

    pub fn cache(&self) -> PathBuf {
        self.root.join("schema").join("cache")
    }

    /// The crate a protocol's generated modules go to.
    pub fn protocol_crate(&self, protocol: &str) -> PathBuf {
        self.root.join("protocols").join(protocol)
    }
}
