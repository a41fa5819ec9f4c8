//! `cargo run -p codegen`: regenerates every protocol crate from the pinned schemas;
//! `-- --check` lists stale files instead of writing; `-- sync [--from DIR]` fills the cache.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use codegen::error::CodegenError;
use codegen::generate::{Generation, Selection, generate};
use codegen::output::{stale_files, write_all};
use codegen::sources::{Layout, Sources};
use codegen::sync::{Origin, sync};

#[derive(Debug, Parser)]
#[command(about = "Regenerates the protocol crates from the pinned upstream schemas")]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// Exit non-zero, listing stale files, when the committed output differs from a fresh run.
    #[arg(long)]
    check: bool,
    /// Only this protocol (mcp, acp, a2a).
    #[arg(long)]
    protocol: Option<String>,
    /// Only this revision (as sources.toml spells it).
    #[arg(long)]
    revision: Option<String>,
    /// Also print which definitions each normalization rewrite touched.
    #[arg(long)]
    report: bool,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Fill schema/cache/ with every pinned file, verified against its sha256.
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
    let layout = Layout::from_manifest_dir();
    let sources = Sources::load(&layout.sources_toml())?;
    if let Some(Command::Sync { from }) = &cli.command {
        let origin = from.clone().map_or(Origin::Upstream, Origin::Mirror);
        let count = sync(&sources, &origin, &layout.cache())?;
        println!("synced {count} files into {}", layout.cache().display());
        return Ok(ExitCode::SUCCESS);
    }
    let selection = Selection {
        protocol: cli.protocol.clone(),
        revision: cli.revision.clone(),
    };
    let generation = generate(&sources, &layout.cache(), &selection)?;
    print_summary(&generation, cli.report);
    if cli.check {
        let stale = stale_files(&layout.root, &generation.files);
        if stale.is_empty() {
            println!("generated code is up to date");
            return Ok(ExitCode::SUCCESS);
        }
        for path in &stale {
            eprintln!("stale: {}", path.display());
        }
        eprintln!("run `cargo run -p codegen` and commit the result");
        return Ok(ExitCode::FAILURE);
    }
    let written = write_all(&layout.root, &generation.files)?;
    println!(
        "{written} files written, {} unchanged",
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
                "    replaced by method-dispatched enums: {}",
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
