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

/// Whether upstream has released a revision or still marks it draft.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Stability {
    #[default]
    Stable,
    Draft,
}

/// The Cargo feature a draft revision's module is compiled behind.
pub const DRAFT_FEATURE: &str = "unstable";

/// One generated revision module.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RevisionSpec {
    pub protocol: String,
    pub revision: String,
    pub module: String,
    pub front_end: FrontEnd,
    /// Cache-relative input files; the first is the main schema or proto.
    pub inputs: Vec<String>,
    #[serde(default)]
    pub include_dirs: Vec<String>,
    /// `draft` when upstream labels the revision draft; stable when absent.
    #[serde(default)]
    pub stability: Stability,
}

impl RevisionSpec {
    /// The Cargo feature the module is gated behind: [`DRAFT_FEATURE`] for a draft revision,
    /// none for a stable one. The one place that rule lives.
    pub fn feature(&self) -> Option<&'static str> {
        match self.stability {
            Stability::Stable => None,
            Stability::Draft => Some(DRAFT_FEATURE),
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn revision(extra: &str) -> std::result::Result<RevisionSpec, toml::de::Error> {
        toml::from_str(&format!(
            "protocol = \"acp\"\nrevision = \"v2\"\nmodule = \"v2\"\nfront_end = \"acp\"\ninputs = []\n{extra}"
        ))
    }

    #[test]
    fn a_draft_revision_is_gated_behind_the_unstable_feature() {
        let draft = revision("stability = \"draft\"").unwrap();
        assert_eq!(draft.feature(), Some("unstable"));
    }

    #[test]
    fn a_revision_without_stability_is_stable_and_ungated() {
        let stable = revision("").unwrap();
        assert_eq!(stable.stability, Stability::Stable);
        assert_eq!(stable.feature(), None);
    }

    #[test]
    fn a_revision_naming_its_own_feature_is_refused() {
        // The gate follows from stability alone; a stray key must not be silently ignored.
        assert!(revision("feature = \"unstable\"").is_err());
    }

    #[test]
    fn the_pinned_acp_v2_and_unstable_revisions_are_draft_and_v1_is_not() {
        let sources = Sources::load(&Layout::from_manifest_dir().sources_toml()).unwrap();
        let draft: Vec<&str> = sources
            .revisions
            .iter()
            .filter(|spec| spec.protocol == "acp" && spec.feature().is_some())
            .map(|spec| spec.revision.as_str())
            .collect();
        assert_eq!(draft, ["v2", "v1-unstable", "v2-unstable"]);
    }
}
