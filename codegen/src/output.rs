//! Writing generated files: everything is produced in memory first, then each file goes to a
//! temp file beside its target and is renamed into place, so a failed run leaves the tree as it
//! was; `--check` compares instead of writing.

use std::path::{Path, PathBuf};

use crate::error::{CodegenError, Result};

/// One generated file, relative to the workspace root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GeneratedFile {
    pub path: PathBuf,
    pub contents: String,
}

/// Writes `bytes` to `path` via a temp file and rename, creating parent directories.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| CodegenError::io(parent, e))?;
    }
    let mut temp = path.as_os_str().to_owned();
    temp.push(".tmp-codegen");
    let temp = PathBuf::from(temp);
    std::fs::write(&temp, bytes).map_err(|e| CodegenError::io(&temp, e))?;
    std::fs::rename(&temp, path).map_err(|e| CodegenError::io(path, e))
}

/// Writes every file whose contents changed; returns how many were written.
pub fn write_all(root: &Path, files: &[GeneratedFile]) -> Result<usize> {
    let mut written = 0;
    for file in files {
        let target = root.join(&file.path);
        if std::fs::read_to_string(&target).ok().as_deref() == Some(file.contents.as_str()) {
            continue;
        }
        write_atomic(&target, file.contents.as_bytes())?;
        written += 1;
    }
    Ok(written)
}

/// The files whose committed contents differ from `files` (or that are missing).
pub fn stale_files(root: &Path, files: &[GeneratedFile]) -> Vec<PathBuf> {
    files
        .iter()
        .filter(|file| {
            std::fs::read_to_string(root.join(&file.path))
                .ok()
                .as_deref()
                != Some(file.contents.as_str())
        })
        .map(|file| file.path.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_write_replaces_contents_and_leaves_no_temp_file() {
        let dir = std::env::temp_dir().join(format!("codegen-output-{}", std::process::id()));
        let path = dir.join("nested").join("file.rs");
        write_atomic(&path, b"one").unwrap();
        write_atomic(&path, b"two").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "two");
        let leftovers: Vec<_> = std::fs::read_dir(dir.join("nested")).unwrap().collect();
        assert_eq!(leftovers.len(), 1);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn stale_files_lists_changed_and_missing_files_only() {
        let dir = std::env::temp_dir().join(format!("codegen-stale-{}", std::process::id()));
        write_atomic(&dir.join("same.rs"), b"x").unwrap();
        write_atomic(&dir.join("changed.rs"), b"old").unwrap();
        let files = ["same.rs", "changed.rs", "missing.rs"].map(|name| GeneratedFile {
            path: name.into(),
            contents: if name == "same.rs" {
                "x".into()
            } else {
                "new".into()
            },
        });
        let stale = stale_files(&dir, &files);
        assert_eq!(
            stale,
            vec![PathBuf::from("changed.rs"), PathBuf::from("missing.rs")]
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
