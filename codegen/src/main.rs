//! `cargo run -p codegen`: regenerates every protocol crate from the pinned schemas;
//! `-- --check` lists stale files instead of writing, `-- --dry-run` prints what a run would
//! change; `-- sync [--from DIR]` fills the cache (from `$CODEGEN_SCHEMA_MIRROR` when set).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use codegen::error::CodegenError;
use codegen::generate::{Generation, Selection, generate};
use codegen::output::{Change, apply, plan};
use codegen::sources::{Layout, Sources};
use codegen::sync::{Origin, sync};

#[derive(Debug, Parser)]
#[command(about = "Regenerates the protocol crates from the pinned upstream schemas")]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// Exit non-zero, listing stale files, when the generated tree differs from a fresh run:
    /// changed or missing files, and files no pin produces.
    #[arg(long)]
    check: bool,
    /// Print what a run would create, change or remove, per file, without writing.
    #[arg(long, visible_alias = "diff", conflicts_with = "check")]
    dry_run: bool,
    /// Only this protocol (mcp, acp, a2a).
    #[arg(long)]
    protocol: Option<String>,
    /// Only this revision (as sources.toml spells it).
    #[arg(long)]
    revision: Option<String>,
    /// Also print which definitions each normalization rewrite touched.
    #[arg(long)]
    report: bool,
    /// The workspace to work on (default: the one holding `schema/sources.toml` around here).
    #[arg(long, global = true)]
    root: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Fill schema/cache/ with every pinned file, verified against its sha256: from `--from DIR`,
    /// else from the mirror `$CODEGEN_SCHEMA_MIRROR` names, else from the pinned upstream URLs.
    Sync {
        /// Copy from this mirror directory instead of downloading.
        #[arg(long)]
        from: Option<PathBuf>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(&cli) {
        Ok(code) => code,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: &Cli) -> Result<ExitCode, CodegenError> {
    let layout = cli.root.clone().map_or_else(Layout::discover, Layout::at);
    let sources = Sources::load(&layout.sources_toml())?;
    if let Some(Command::Sync { from }) = &cli.command {
        let origin = Origin::choose(from.clone());
        let count = sync(&sources, &origin, &layout.cache())?;
        println!(
            "synced {count} files from {} into {}",
            origin.describe(),
            layout.cache().display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    let selection = Selection {
        protocol: cli.protocol.clone(),
        revision: cli.revision.clone(),
    };
    let generation = generate(&sources, &layout, &selection)?;
    print_summary(&generation, cli.report);
    let planned = plan(&layout.root, &generation);
    if cli.check {
        if planned.is_empty() {
            println!("generated code is up to date");
            return Ok(ExitCode::SUCCESS);
        }
        for entry in &planned {
            eprintln!("stale: {entry}");
        }
        eprintln!("run `cargo run -p codegen` and commit the result");
        return Ok(ExitCode::FAILURE);
    }
    if cli.dry_run {
        for entry in &planned {
            println!("would {entry}");
        }
        println!(
            "{} files would change (dry run: nothing written)",
            planned.len()
        );
        return Ok(ExitCode::SUCCESS);
    }
    apply(&layout.root, &generation, &planned)?;
    let removed = planned
        .iter()
        .filter(|entry| matches!(entry.change, Change::Remove { .. }))
        .count();
    let written = planned.len() - removed;
    println!(
        "{written} files written, {removed} removed, {} unchanged",
        generation.files.len() - written
    );
    Ok(ExitCode::SUCCESS)
}

fn print_summary(generation: &Generation, report: bool) {
    for summary in &generation.summaries {
        println!(
            "{} {}: {} definitions, {} methods -> {} ({} ms)",
            summary.protocol,
            summary.revision,
            summary.definitions,
            summary.methods,
            summary.file.display(),
            summary.millis
        );
        if report {
            for (rewrite, definitions) in &summary.treatments {
                let names: Vec<&str> = definitions.iter().map(String::as_str).collect();
                println!("    {rewrite} ({}): {}", names.len(), names.join(", "));
            }
            println!(
                "    unions the method table replaces: {}",
                summary.replaced_unions.join(", ")
            );
            let dispatched: Vec<String> = summary
                .tag_dispatched
                .iter()
                .map(|d| format!("{} by `{}`", d.enum_name, d.tag))
                .collect();
            println!(
                "    tag-dispatched unions ({}): {}",
                dispatched.len(),
                dispatched.join(", ")
            );
        }
    }
}
