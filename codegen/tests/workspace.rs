//! The codegen binary on a scratch workspace, as a user adds and removes a revision: pin a copy
//! of a real revision under a new name, sync it from a mirror named by the environment, generate,
//! find the new module in `mod.rs` and its file parsing; then unpin it and have `--check` report
//! the orphan. Also: `--revision` writes a `mod.rs` naming only modules that exist, `--dry-run`
//! writes nothing, and a run on an empty cache says in one line what to run.

// Test helpers outside `#[test]` fns unwrap too; a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};

use codegen::samples::{layout, sources};
use codegen::sync::MIRROR_ENV;

/// The pinned revision copied under a new name: small, so a run stays quick.
const REAL: &str = "mcp/2025-06-18/schema.json";

/// A scratch workspace and mirror, removed on drop.
struct Scratch {
    dir: PathBuf,
}

impl Scratch {
    fn new() -> Self {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "codegen-workspace-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("root/schema")).unwrap();
        let scratch = Self { dir };
        let bytes = std::fs::read(layout().cache().join(REAL)).unwrap();
        for path in [REAL, "mcp/2099-01-01/schema.json"] {
            let target = scratch.mirror().join(path);
            std::fs::create_dir_all(target.parent().unwrap()).unwrap();
            std::fs::write(target, &bytes).unwrap();
        }
        scratch
    }

    fn root(&self) -> PathBuf {
        self.dir.join("root")
    }

    fn mirror(&self) -> PathBuf {
        self.dir.join("mirror")
    }

    /// Writes `sources.toml` pinning the real revision, and the copy when `with_copy`.
    fn pin(&self, with_copy: bool) {
        let sha256 = sources().pin(REAL).unwrap().sha256.clone();
        let file = |revision: &str| {
            format!(
                "[[file]]\nprotocol = \"mcp\"\nrevision = \"{revision}\"\nrole = \"schema\"\n\
                 path = \"mcp/{revision}/schema.json\"\n\
                 url = \"https://raw.githubusercontent.com/o/r/c0ffee/{revision}.json\"\n\
                 sha256 = \"{sha256}\"\n\n"
            )
        };
        let revision = |revision: &str, module: &str, draft: bool| {
            format!(
                "[[revision]]\nprotocol = \"mcp\"\nrevision = \"{revision}\"\n\
                 module = \"{module}\"\nfront_end = \"mcp\"\n\
                 inputs = [\"mcp/{revision}/schema.json\"]\n{}\n",
                if draft { "stability = \"draft\"\n" } else { "" }
            )
        };
        let mut text = file("2025-06-18") + &revision("2025-06-18", "v2025_06_18", false);
        if with_copy {
            text += &file("2099-01-01");
            text += &revision("2099-01-01", "v2099_01_01", true);
        }
        std::fs::write(self.root().join("schema/sources.toml"), text).unwrap();
    }

    fn codegen(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_codegen"))
            .arg("--root")
            .arg(self.root())
            .args(args)
            .env(MIRROR_ENV, self.mirror())
            .output()
            .unwrap()
    }

    fn read(&self, relative: &str) -> String {
        std::fs::read_to_string(self.root().join(relative)).unwrap_or_default()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

fn parses(path: &Path) {
    let source = std::fs::read_to_string(path).unwrap();
    syn::parse_file(&source).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
}

#[test]
fn a_pinned_copy_is_generated_and_listed_and_once_unpinned_its_file_is_an_orphan() {
    let scratch = Scratch::new();
    scratch.pin(true);
    let synced = scratch.codegen(&["sync"]);
    assert!(synced.status.success(), "{}", text(&synced));
    assert!(
        text(&synced).contains(&format!("from the mirror {}", scratch.mirror().display())),
        "{}",
        text(&synced)
    );
    let run = scratch.codegen(&[]);
    assert!(run.status.success(), "{}", text(&run));
    let modules = scratch.read("protocols/mcp/src/generated/mod.rs");
    assert!(
        modules.contains("#[cfg(feature = \"unstable\")]\npub mod v2099_01_01;"),
        "{modules}"
    );
    assert!(modules.contains("V2099_01_01"), "{modules}");
    for file in [
        "protocols/mcp/src/generated/v2099_01_01.rs",
        "protocols/mcp/src/generated/mod.rs",
        "protocols/mcp/tests/support/generated/v2099_01_01.rs",
        "protocols/mcp/tests/support/generated/mod.rs",
    ] {
        parses(&scratch.root().join(file));
    }
    let check = scratch.codegen(&["--check"]);
    assert!(check.status.success(), "{}", text(&check));

    scratch.pin(false);
    let check = scratch.codegen(&["--check"]);
    assert!(!check.status.success(), "{}", text(&check));
    let report = text(&check);
    for orphan in [
        "stale: remove protocols/mcp/src/generated/v2099_01_01.rs",
        "stale: remove protocols/mcp/tests/support/generated/v2099_01_01.rs",
        "stale: update protocols/mcp/src/generated/mod.rs",
    ] {
        assert!(report.contains(orphan), "{orphan} not in {report}");
    }
    let run = scratch.codegen(&[]);
    assert!(run.status.success(), "{}", text(&run));
    assert!(
        !scratch
            .root()
            .join("protocols/mcp/src/generated/v2099_01_01.rs")
            .exists()
    );
    assert!(scratch.codegen(&["--check"]).status.success());
}

#[test]
fn a_partial_run_lists_only_modules_that_exist_and_check_then_reports_the_missing_one() {
    let scratch = Scratch::new();
    scratch.pin(true);
    assert!(scratch.codegen(&["sync"]).status.success());
    let run = scratch.codegen(&["--revision", "2025-06-18"]);
    assert!(run.status.success(), "{}", text(&run));
    let modules = scratch.read("protocols/mcp/src/generated/mod.rs");
    assert!(modules.contains("pub mod v2025_06_18;"), "{modules}");
    assert!(!modules.contains("v2099_01_01"), "{modules}");
    let check = scratch.codegen(&["--check"]);
    assert!(!check.status.success());
    assert!(
        text(&check).contains("stale: create protocols/mcp/src/generated/v2099_01_01.rs"),
        "{}",
        text(&check)
    );
}

#[test]
fn a_dry_run_prints_each_file_it_would_write_and_writes_nothing() {
    let scratch = Scratch::new();
    scratch.pin(false);
    assert!(scratch.codegen(&["sync"]).status.success());
    let dry = scratch.codegen(&["--dry-run"]);
    assert!(dry.status.success(), "{}", text(&dry));
    let report = text(&dry);
    assert!(
        report.contains("would create protocols/mcp/src/generated/v2025_06_18.rs ("),
        "{report}"
    );
    assert!(report.contains("(dry run: nothing written)"), "{report}");
    assert!(!scratch.root().join("protocols").exists());
    let planned = |output: &str| -> Vec<String> {
        output
            .lines()
            .filter(|line| line.starts_with("would "))
            .map(str::to_string)
            .collect()
    };
    let diff = scratch.codegen(&["--diff"]);
    assert_eq!(planned(&text(&diff)), planned(&report));
}

#[test]
fn generating_from_an_empty_cache_fails_with_one_line_naming_sync() {
    let scratch = Scratch::new();
    scratch.pin(false);
    let run = scratch.codegen(&[]);
    assert!(!run.status.success());
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("mcp/2025-06-18/schema.json: missing from schema/cache; run `cargo run -p codegen -- sync`"),
        "{stderr}"
    );
}

#[test]
fn two_revisions_writing_one_module_are_refused_naming_both() {
    let scratch = Scratch::new();
    scratch.pin(true);
    let text_before = scratch.read("schema/sources.toml");
    std::fs::write(
        scratch.root().join("schema/sources.toml"),
        text_before.replace("module = \"v2099_01_01\"", "module = \"v2025_06_18\""),
    )
    .unwrap();
    let run = scratch.codegen(&["--check"]);
    assert!(!run.status.success());
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        stderr.contains("mcp 2025-06-18 (module `v2025_06_18`) and [[revision]] mcp 2099-01-01 (module `v2025_06_18`)"),
        "{stderr}"
    );
}
