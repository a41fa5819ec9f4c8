//! `codegen sync`: fills the schema cache from upstream (or a mirror directory), refusing any file
//! whose sha256 differs from its pin, and reads cached files back with the same check.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::error::{CodegenError, Result};
use crate::output::write_atomic;
use crate::sources::{PinnedFile, Role, Sources};

/// The environment variable naming an offline mirror for `sync`; CI sets it to
/// `../shared/schema`, so CI and a user run the same command.
pub const MIRROR_ENV: &str = "CODEGEN_SCHEMA_MIRROR";

/// Where `sync` takes files from.
#[derive(Debug, Clone)]
pub enum Origin {
    /// The upstream URLs in the pin file (each fixed to a commit).
    Upstream,
    /// A mirror laid out like the cache (e.g. `../shared/schema`).
    Mirror(PathBuf),
}

impl Origin {
    /// `--from DIR` when given, else the mirror [`MIRROR_ENV`] names when it is set and not
    /// empty, else upstream.
    pub fn choose(from: Option<PathBuf>) -> Self {
        let from_env = std::env::var_os(MIRROR_ENV)
            .filter(|value| !value.is_empty())
            .map(PathBuf::from);
        from.or(from_env).map_or(Self::Upstream, Self::Mirror)
    }

    /// What a summary line says the files came from.
    pub fn describe(&self) -> String {
        match self {
            Self::Upstream => "upstream".to_string(),
            Self::Mirror(dir) => format!("the mirror {}", dir.display()),
        }
    }
}

/// Hex sha256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// Fetches every pinned file (and every example a manifest lists) into `cache`; returns how
/// many files were written.
pub fn sync(sources: &Sources, origin: &Origin, cache: &Path) -> Result<usize> {
    let mut written = 0;
    for pin in &sources.files {
        let bytes = fetch(origin, &pin.path, &pin.url)?;
        verify(&pin.path, &bytes, &pin.sha256)?;
        write_atomic(&cache.join(&pin.path), &bytes)?;
        written += 1;
        if pin.role == Role::ExamplesManifest {
            written += sync_examples(pin, &bytes, origin, cache)?;
        }
    }
    Ok(written)
}

/// One entry of a `sha256sum -c` manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestEntry {
    pub sha256: String,
    /// Path relative to the manifest's directory.
    pub path: String,
}

/// Parses `sha256sum` output lines (`<hex>  <path>`).
pub fn parse_manifest(manifest_path: &str, text: &str) -> Result<Vec<ManifestEntry>> {
    text.lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| {
            let (sha, path) = line.split_once("  ").ok_or_else(|| CodegenError::Config {
                path: manifest_path.to_string(),
                message: format!("not a sha256sum line: {line:?}"),
            })?;
            Ok(ManifestEntry {
                sha256: sha.trim().to_string(),
                path: path.trim().to_string(),
            })
        })
        .collect()
}

fn sync_examples(
    pin: &PinnedFile,
    manifest: &[u8],
    origin: &Origin,
    cache: &Path,
) -> Result<usize> {
    let text = String::from_utf8_lossy(manifest);
    let base_dir = parent_of(&pin.path);
    let base_url = pin.examples_url.as_deref().unwrap_or_default();
    let entries = parse_manifest(&pin.path, &text)?;
    for entry in &entries {
        let relative = format!("{base_dir}/{}", entry.path);
        let bytes = fetch(origin, &relative, &format!("{base_url}{}", entry.path))?;
        verify(&relative, &bytes, &entry.sha256)?;
        write_atomic(&cache.join(&relative), &bytes)?;
    }
    Ok(entries.len())
}

fn parent_of(path: &str) -> &str {
    path.rsplit_once('/').map(|(dir, _)| dir).unwrap_or("")
}

fn fetch(origin: &Origin, relative: &str, url: &str) -> Result<Vec<u8>> {
    match origin {
        Origin::Mirror(dir) => {
            let path = dir.join(relative);
            if !path.exists() {
                return Err(CodegenError::NotInMirror {
                    path: relative.to_string(),
                    mirror: dir.display().to_string(),
                });
            }
            std::fs::read(&path).map_err(|e| CodegenError::io(path, e))
        }
        Origin::Upstream => download(url),
    }
}

fn download(url: &str) -> Result<Vec<u8>> {
    let failed = |message: String| CodegenError::Download {
        url: url.to_string(),
        message,
    };
    let response = reqwest::blocking::get(url).map_err(|e| failed(e.to_string()))?;
    let response = response
        .error_for_status()
        .map_err(|e| failed(e.to_string()))?;
    let body = response.bytes().map_err(|e| failed(e.to_string()))?;
    Ok(body.to_vec())
}

fn verify(path: &str, bytes: &[u8], expected: &str) -> Result<()> {
    let actual = sha256_hex(bytes);
    if actual == expected {
        Ok(())
    } else {
        Err(CodegenError::Digest {
            path: path.to_string(),
            expected: expected.to_string(),
            actual,
        })
    }
}

/// Reads a pinned file from the cache, checking it against its pin.
pub fn read_cached(sources: &Sources, cache: &Path, relative: &str) -> Result<Vec<u8>> {
    let pin = sources.pin(relative).ok_or_else(|| CodegenError::Config {
        path: relative.to_string(),
        message: "not pinned in schema/sources.toml".to_string(),
    })?;
    let path = cache.join(relative);
    if !path.exists() {
        return Err(CodegenError::Missing {
            path: relative.to_string(),
        });
    }
    let bytes = std::fs::read(&path).map_err(|e| CodegenError::io(&path, e))?;
    verify(relative, &bytes, &pin.sha256)?;
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manifest_lines_split_into_digest_and_path() {
        let entries = parse_manifest("m", "abc  examples/A/a.json\n\n").unwrap();
        assert_eq!(
            entries,
            vec![ManifestEntry {
                sha256: "abc".into(),
                path: "examples/A/a.json".into()
            }]
        );
    }

    #[test]
    fn mismatched_digest_is_an_error_naming_the_file() {
        let err = verify("mcp/x.json", b"hello", "00").unwrap_err();
        assert!(err.to_string().contains("mcp/x.json"), "{err}");
    }
}
