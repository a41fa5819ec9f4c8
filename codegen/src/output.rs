//! Writing generated files: a run is compared with the tree first ([`plan`]: files to create,
//! change, or remove because no pin produces them any more), then each file goes to a temp file
//! beside its target and is renamed into place, so a failed run leaves the tree as it was.
//! `--check` reports the plan as stale files; `--dry-run` prints it without writing.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::error::{CodegenError, Result};
use crate::generate::Generation;

/// One generated file, relative to the workspace root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GeneratedFile {
    pub path: PathBuf,
    pub contents: String,
}

/// What a run would do to one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// The file does not exist yet.
    Create { lines: usize },
    /// The file exists with other contents: lines only in the new version, lines only in the
    /// committed one (counted as multisets, so a moved line counts as neither).
    Update { added: usize, removed: usize },
    /// No pin produces the file any more.
    Remove { lines: usize },
}

/// A file and what a run would do to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Planned {
    pub path: PathBuf,
    pub change: Change,
}

impl std::fmt::Display for Planned {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let path = self.path.display();
        match self.change {
            Change::Create { lines } => write!(f, "create {path} ({lines} lines)"),
            Change::Update { added, removed } => {
                write!(f, "update {path} (+{added} -{removed} lines)")
            }
            Change::Remove { lines } => {
                write!(f, "remove {path} ({lines} lines; no pin produces it)")
            }
        }
    }
}

/// Every difference between the tree at `root` and what `generation` says it should be: the
/// files it produced that are missing or differ, and the `.rs` files in its generated
/// directories that no pin produces (orphans).
pub fn plan(root: &Path, generation: &Generation) -> Vec<Planned> {
    let mut planned = Vec::new();
    for file in &generation.files {
        match std::fs::read_to_string(root.join(&file.path)) {
            Ok(committed) if committed == file.contents => {}
            Ok(committed) => {
                let (added, removed) = line_difference(&committed, &file.contents);
                planned.push(Planned {
                    path: file.path.clone(),
                    change: Change::Update { added, removed },
                });
            }
            Err(_) => planned.push(Planned {
                path: file.path.clone(),
                change: Change::Create {
                    lines: file.contents.lines().count(),
                },
            }),
        }
    }
    for orphan in orphans(root, generation) {
        let lines = std::fs::read_to_string(root.join(&orphan))
            .map(|text| text.lines().count())
            .unwrap_or_default();
        planned.push(Planned {
            path: orphan,
            change: Change::Remove { lines },
        });
    }
    planned
}

/// `.rs` files in the run's generated directories that the pins do not produce.
fn orphans(root: &Path, generation: &Generation) -> Vec<PathBuf> {
    let mut found = BTreeSet::new();
    for dir in &generation.generated_dirs {
        let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = dir.join(entry.file_name());
            let is_rust = path.extension().is_some_and(|ext| ext == "rs");
            if is_rust && entry.path().is_file() && !generation.expected.contains(&path) {
                found.insert(path);
            }
        }
    }
    found.into_iter().collect()
}

/// Lines only in `new` and lines only in `old`, as multisets.
fn line_difference(old: &str, new: &str) -> (usize, usize) {
    let mut old_lines: Vec<&str> = old.lines().collect();
    let mut new_lines: Vec<&str> = new.lines().collect();
    old_lines.sort_unstable();
    new_lines.sort_unstable();
    let (mut added, mut removed) = (0, 0);
    let (mut o, mut n) = (old_lines.iter().peekable(), new_lines.iter().peekable());
    loop {
        match (o.peek(), n.peek()) {
            (Some(a), Some(b)) if a == b => {
                o.next();
                n.next();
            }
            (Some(a), Some(b)) if a < b => {
                removed += 1;
                o.next();
            }
            (Some(_), Some(_)) | (None, Some(_)) => {
                added += 1;
                n.next();
            }
            (Some(_), None) => {
                removed += 1;
                o.next();
            }
            (None, None) => break,
        }
    }
    (added, removed)
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

/// Carries out `planned`: every new or changed file written, every orphan removed.
pub fn apply(root: &Path, generation: &Generation, planned: &[Planned]) -> Result<()> {
    for entry in planned {
        let target = root.join(&entry.path);
        match entry.change {
            Change::Remove { .. } => {
                std::fs::remove_file(&target).map_err(|e| CodegenError::io(&target, e))?;
            }
            Change::Create { .. } | Change::Update { .. } => {
                let file = generation
                    .files
                    .iter()
                    .find(|file| file.path == entry.path)
                    .ok_or_else(|| CodegenError::Config {
                        path: entry.path.display().to_string(),
                        message: "planned but not generated".into(),
                    })?;
                write_atomic(&target, file.contents.as_bytes())?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Dir(PathBuf);

    impl Dir {
        fn new(name: &str) -> Self {
            let dir = std::env::temp_dir().join(format!("codegen-{name}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            Self(dir)
        }
    }

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn atomic_write_replaces_contents_and_leaves_no_temp_file() {
        let dir = Dir::new("output");
        let path = dir.0.join("nested").join("file.rs");
        write_atomic(&path, b"one").unwrap();
        write_atomic(&path, b"two").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "two");
        let leftovers: Vec<_> = std::fs::read_dir(dir.0.join("nested")).unwrap().collect();
        assert_eq!(leftovers.len(), 1);
    }

    #[test]
    fn the_plan_lists_changed_missing_and_orphaned_files_and_nothing_else() {
        let dir = Dir::new("plan");
        let generated = PathBuf::from("gen");
        write_atomic(&dir.0.join("gen/same.rs"), b"x\n").unwrap();
        write_atomic(&dir.0.join("gen/changed.rs"), b"a\nb\nc\n").unwrap();
        write_atomic(&dir.0.join("gen/orphan.rs"), b"1\n2\n").unwrap();
        write_atomic(&dir.0.join("gen/notes.txt"), b"not rust").unwrap();
        let file = |name: &str, contents: &str| GeneratedFile {
            path: generated.join(name),
            contents: contents.into(),
        };
        let generation = Generation {
            files: vec![
                file("same.rs", "x\n"),
                file("changed.rs", "a\nc\nd\ne\n"),
                file("missing.rs", "m\n"),
            ],
            summaries: Vec::new(),
            generated_dirs: vec![generated.clone()],
            expected: ["same.rs", "changed.rs", "missing.rs"]
                .iter()
                .map(|name| generated.join(name))
                .collect(),
        };
        let rendered: Vec<String> = plan(&dir.0, &generation)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            rendered,
            [
                "update gen/changed.rs (+2 -1 lines)",
                "create gen/missing.rs (1 lines)",
                "remove gen/orphan.rs (2 lines; no pin produces it)",
            ]
        );
        let planned = plan(&dir.0, &generation);
        apply(&dir.0, &generation, &planned).unwrap();
        assert!(plan(&dir.0, &generation).is_empty());
        assert!(!dir.0.join("gen/orphan.rs").exists());
        assert!(dir.0.join("gen/notes.txt").exists());
    }
}
