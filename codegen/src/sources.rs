//! `schema/sources.toml`: the pinned upstream files and the revisions generated from them, checked
//! on load (one pin per path, one module per protocol, one entry per revision), and the workspace
//! layout the pins are resolved against.

use std::collections::BTreeMap;
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

/// The Cargo feature a draft revision's module is compiled behind; every protocol crate declares
/// it, so any revision can be pinned as draft.
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

    /// How the pin file names this entry in an error.
    pub fn label(&self) -> String {
        format!(
            "[[revision]] {} {} (module `{}`)",
            self.protocol, self.revision, self.module
        )
    }
}

impl Sources {
    /// Reads, parses and checks the pin file.
    pub fn load(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|e| CodegenError::io(path, e))?;
        Self::parse(&path.display().to_string(), &text)
    }

    /// Parses and checks pin-file text; `origin` names it in errors.
    pub fn parse(origin: &str, text: &str) -> Result<Self> {
        let sources: Self = toml::from_str(text).map_err(|e| CodegenError::Config {
            path: origin.to_string(),
            message: one_line(&e.to_string()),
        })?;
        sources.check().map_err(|message| CodegenError::Config {
            path: origin.to_string(),
            message,
        })?;
        Ok(sources)
    }

    /// Refuses what would make two entries fight over one thing: two pins of one path (codegen
    /// would read one and `sync` check the other), two revisions writing one module file, one
    /// revision listed twice, a module name that is no Rust identifier, an input nothing pins.
    fn check(&self) -> std::result::Result<(), String> {
        let mut pins: BTreeMap<&str, &PinnedFile> = BTreeMap::new();
        for pin in &self.files {
            if let Some(first) = pins.insert(&pin.path, pin) {
                return Err(format!(
                    "`{}` is pinned twice: [[file]] {} {} {:?} and [[file]] {} {} {:?}",
                    pin.path,
                    first.protocol,
                    first.revision,
                    first.sha256,
                    pin.protocol,
                    pin.revision,
                    pin.sha256
                ));
            }
        }
        let mut modules: BTreeMap<(&str, &str), &RevisionSpec> = BTreeMap::new();
        let mut names: BTreeMap<(&str, &str), &RevisionSpec> = BTreeMap::new();
        for spec in &self.revisions {
            if syn::parse_str::<syn::Ident>(&spec.module).is_err() || spec.module == "mod" {
                return Err(format!(
                    "{}: the module is not a Rust identifier",
                    spec.label()
                ));
            }
            if let Some(first) = modules.insert((&spec.protocol, &spec.module), spec) {
                return Err(format!(
                    "{} and {} write the same module file",
                    first.label(),
                    spec.label()
                ));
            }
            if let Some(first) = names.insert((&spec.protocol, &spec.revision), spec) {
                return Err(format!(
                    "{} and {} name the same revision",
                    first.label(),
                    spec.label()
                ));
            }
            if let Some(input) = spec
                .inputs
                .iter()
                .find(|input| !pins.contains_key(input.as_str()))
            {
                return Err(format!(
                    "{}: input `{input}` has no [[file]] pin",
                    spec.label()
                ));
            }
        }
        Ok(())
    }

    /// The pin of a cache-relative path.
    pub fn pin(&self, path: &str) -> Option<&PinnedFile> {
        self.files.iter().find(|f| f.path == path)
    }

    /// The examples manifest pinned for a revision, if upstream publishes example messages.
    pub fn examples_manifest(&self, protocol: &str, revision: &str) -> Option<&PinnedFile> {
        self.files.iter().find(|f| {
            f.role == Role::ExamplesManifest && f.protocol == protocol && f.revision == revision
        })
    }

    /// The protocols that have at least one revision, in first-pinned order.
    pub fn protocols(&self) -> Vec<&str> {
        let mut protocols: Vec<&str> = Vec::new();
        for spec in &self.revisions {
            if !protocols.contains(&spec.protocol.as_str()) {
                protocols.push(&spec.protocol);
            }
        }
        protocols
    }
}

/// TOML errors span lines (a caret under the offending text); an error here is one line.
fn one_line(message: &str) -> String {
    message
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('|') && !line.starts_with('^'))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Where the workspace's schema directory, cache and protocol crates live.
#[derive(Debug, Clone)]
pub struct Layout {
    pub root: PathBuf,
}

impl Layout {
    /// The workspace root: the nearest directory holding `schema/sources.toml` above the package
    /// being built or run (cargo sets `CARGO_MANIFEST_DIR` for `cargo run` and `cargo test`), else
    /// above the working directory, else the one codegen was compiled in. Looking at run time
    /// matters: a compiled path goes stale when a target directory is copied to another checkout.
    pub fn discover() -> Self {
        let starts = [
            std::env::var_os("CARGO_MANIFEST_DIR").map(PathBuf::from),
            std::env::current_dir().ok(),
            Some(PathBuf::from(env!("CARGO_MANIFEST_DIR"))),
        ];
        let root = starts
            .into_iter()
            .flatten()
            .find_map(|start| {
                start
                    .ancestors()
                    .find(|dir| dir.join("schema").join("sources.toml").is_file())
                    .map(Path::to_path_buf)
            })
            .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".."));
        Self { root }
    }

    /// A workspace at `root` (a scratch copy, in tests).
    pub fn at(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
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

    const PIN: &str = "[[file]]\nprotocol = \"mcp\"\nrevision = \"r\"\nrole = \"schema\"\n\
        path = \"mcp/r/schema.json\"\nurl = \"u\"\nsha256 = \"aa\"\n";

    fn entry(revision: &str, module: &str) -> String {
        format!(
            "[[revision]]\nprotocol = \"mcp\"\nrevision = \"{revision}\"\nmodule = \"{module}\"\n\
             front_end = \"mcp\"\ninputs = [\"mcp/r/schema.json\"]\n"
        )
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
    fn two_revisions_writing_one_module_are_an_error_naming_both() {
        let text = format!("{PIN}{}{}", entry("r", "vr"), entry("draft", "vr"));
        let error = Sources::parse("sources.toml", &text)
            .unwrap_err()
            .to_string();
        assert!(error.contains("mcp r (module `vr`)"), "{error}");
        assert!(error.contains("mcp draft (module `vr`)"), "{error}");
        assert_eq!(error.lines().count(), 1, "{error}");
    }

    #[test]
    fn two_pins_of_one_path_are_an_error_naming_both() {
        let second = PIN.replace("\"aa\"", "\"bb\"");
        let text = format!("{PIN}{second}{}", entry("r", "vr"));
        let error = Sources::parse("sources.toml", &text)
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("`mcp/r/schema.json` is pinned twice"),
            "{error}"
        );
        assert!(
            error.contains("\"aa\"") && error.contains("\"bb\""),
            "{error}"
        );
    }

    #[test]
    fn a_revision_listed_twice_or_reading_an_unpinned_input_is_refused() {
        let twice = format!("{PIN}{}{}", entry("r", "va"), entry("r", "vb"));
        assert!(
            Sources::parse("s", &twice)
                .unwrap_err()
                .to_string()
                .contains("name the same revision")
        );
        let unpinned = format!("{}{}", "file = []\n", entry("r", "vr"));
        assert!(
            Sources::parse("s", &unpinned)
                .unwrap_err()
                .to_string()
                .contains("has no [[file]] pin")
        );
    }

    #[test]
    fn a_module_that_is_not_an_identifier_is_refused() {
        let text = format!("{PIN}{}", entry("r", "2025-06-18"));
        let error = Sources::parse("s", &text).unwrap_err().to_string();
        assert!(error.contains("not a Rust identifier"), "{error}");
    }

    #[test]
    fn the_pinned_sources_load() {
        let sources = Sources::load(&Layout::discover().sources_toml()).unwrap();
        assert!(!sources.revisions.is_empty());
    }
}
