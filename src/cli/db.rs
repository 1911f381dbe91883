//! `convtune db …` and `convtune lookup`: read, merge, check and export tuned databases.

use super::{bad_input, ArchArg, ProblemArg};
use anyhow::{anyhow, Context as _};
use clap::Subcommand;
use convtune::db::{self, TunedDb};
use convtune::lookup::{find_config_in, LegalityCheck};
use convtune::runtime::cuda_devices;
use std::path::{Path, PathBuf};

/// `convtune db` subcommands.
#[derive(Subcommand)]
pub enum DbCommand {
    /// Join two databases of one arch: the faster measurement wins; conflicts are listed.
    Merge {
        /// First database.
        a: PathBuf,
        /// Second database.
        b: PathBuf,
        /// Output file (may be one of the inputs).
        #[arg(short, long)]
        output: PathBuf,
    },
    /// What changed from A to B.
    Diff {
        /// Old.
        a: PathBuf,
        /// New.
        b: PathBuf,
    },
    /// Schema, duplicate keys, and every config still parsing and legal for its problem today.
    Check {
        /// Database file.
        file: PathBuf,
    },
    /// Entries tuned on another GPU/driver or by another convtune version than this one.
    Stale {
        /// Database file.
        file: PathBuf,
        /// GPU ordinal whose fingerprint is current.
        #[arg(long, default_value_t = 0)]
        device: usize,
    },
    /// Write the database as JSON or a C header, for compilers not written in Rust.
    Export {
        /// Database file.
        file: PathBuf,
        /// `json` or `c`.
        #[arg(long, default_value = "json")]
        format: String,
    },
}

fn load(path: &Path) -> anyhow::Result<TunedDb> {
    TunedDb::load(path).map_err(bad_input)
}

/// A merge input: loaded, and every entry's checksum holding.
fn load_trusted(path: &Path) -> anyhow::Result<TunedDb> {
    let d = load(path)?;
    d.require_trusted(&path.display().to_string())
        .map_err(bad_input)?;
    Ok(d)
}

/// Runs a `db` subcommand.
pub fn run(cmd: DbCommand) -> anyhow::Result<()> {
    match cmd {
        DbCommand::Merge { a, b, output } => {
            // Lock, then read, then write: an input that is also the output is read under the
            // lock, so entries a concurrent writer added are merged, not lost. Failing to lock or
            // write the output is the output path's fault: bad input too.
            let lock = db::DbLock::acquire(&output).map_err(bad_input)?;
            let (da, dbb) = (load_trusted(&a)?, load_trusted(&b)?);
            let (merged, conflicts) = db::merge(&da, &dbb).map_err(bad_input)?;
            for c in &conflicts {
                println!("conflict: {c}");
            }
            merged.save_locked(&output, &lock).map_err(bad_input)?;
            drop(lock);
            println!(
                "{} entries written to {} ({} conflict(s))",
                merged.len(),
                output.display(),
                conflicts.len()
            );
        }
        DbCommand::Diff { a, b } => {
            let lines = db::diff(&load(&a)?, &load(&b)?);
            for l in &lines {
                println!("{l}");
            }
            if lines.is_empty() {
                println!("no differences");
            }
        }
        DbCommand::Check { file } => {
            let d = load(&file)?;
            let mut issues = db::arch_issues(&d, &file);
            issues.extend(db::check(&d, d.arch(), &LegalityCheck));
            for i in &issues {
                println!("{}: {i}", file.display());
            }
            if !issues.is_empty() {
                return Err(bad_input(anyhow!(
                    "{}: {} issue(s) in {} entries",
                    file.display(),
                    issues.len(),
                    d.len()
                )));
            }
            println!("{}: {} entries, all valid", file.display(), d.len());
        }
        DbCommand::Stale { file, device } => {
            let d = load(&file)?;
            let dev = cuda_devices()
                .ok()
                .and_then(|v| v.into_iter().nth(device))
                .ok_or_else(|| {
                    bad_input(anyhow!("no GPU {device} to compare fingerprints with"))
                })?;
            let fp = db::Fingerprint::from(&dev.fingerprint());
            let stale = db::stale(&d, &fp, env!("CARGO_PKG_VERSION"));
            for e in &stale {
                println!(
                    "{}  ({}; convtune {})",
                    e.problem, e.fingerprint, e.convtune_version
                );
            }
            println!("{} of {} entries stale", stale.len(), d.len());
        }
        DbCommand::Export { file, format } => {
            let d = load(&file)?;
            match format.as_str() {
                "json" => println!("{}", db::export_json(&d)),
                "c" => println!("{}", db::export_c_header(&d)),
                f => return Err(bad_input(anyhow!("--format '{f}': expected json or c"))),
            }
        }
    }
    Ok(())
}

/// Arguments of `convtune lookup`.
#[derive(clap::Args)]
pub struct LookupArgs {
    #[command(flatten)]
    problem: ProblemArg,
    #[command(flatten)]
    arch: ArchArg,
    /// User database (default: $CONVTUNE_DB, else $XDG_DATA_HOME/convtune/<arch>.toml).
    #[arg(long, value_name = "FILE")]
    db: Option<PathBuf>,
    /// Ignore the system database compiled into this binary.
    #[arg(long)]
    no_system_db: bool,
}

/// Prints the config a compiler would use for a problem, and where it came from.
pub fn lookup(args: LookupArgs) -> anyhow::Result<()> {
    let p = args.problem.parse().map_err(bad_input)?;
    let arch = args.arch.arch(None)?;
    // The "why" names the user database, or why there is none: a lookup that silently read
    // some other file (or none) is what users cannot debug.
    let (user, user_note) = match db::user_db_path(args.db.as_deref(), arch.name) {
        Err(e) => (None, format!("no user database: {e}")),
        Ok(path) if path.exists() => {
            let d = TunedDb::load(&path)
                .with_context(|| format!("user database {}", path.display()))
                .map_err(bad_input)?;
            let issues = db::arch_issues(&d, &path);
            if issues.is_empty() {
                (Some(d), format!("user database {}", path.display()))
            } else {
                let why: Vec<String> = issues.iter().map(ToString::to_string).collect();
                let note = format!(
                    "user database {} ignored: {}",
                    path.display(),
                    why.join("; ")
                );
                (None, note)
            }
        }
        Ok(path) => (
            None,
            format!("user database {} (not found)", path.display()),
        ),
    };
    let system = if args.no_system_db {
        None
    } else {
        db::system(arch.name)?
    };
    let layers = db::Layered {
        system,
        user: user.as_ref(),
    };
    let found = find_config_in(&p, &arch, layers, None)?;
    println!("{}", found.config);
    println!("source: {}", found.source);
    println!("why: {} [{user_note}]", found.reason);
    Ok(())
}
