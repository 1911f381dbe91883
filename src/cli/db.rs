//! `convtune db …` and `convtune lookup`: read, merge, check and export tuned databases.

use super::{bad_input, no_gpu, ArchArg, DbArgs, ProblemArg};
use anyhow::anyhow;
use clap::Subcommand;
use convtune::db::{self, DiffLine, Entry, TunedDb};
use convtune::lookup::LegalityCheck;
use convtune::manifest::ConfigSource;
use convtune::runtime::cuda_devices;
use serde::Serialize;
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
        /// Print JSON: `{"changes": [{"change": "added|removed|config|time", "old", "new"}]}`.
        #[arg(long)]
        json: bool,
    },
    /// Schema, duplicate keys, and every config still parsing and legal for its problem today.
    Check {
        /// Database file.
        file: PathBuf,
        /// Print JSON: `{"file", "arch", "entries", "valid", "issues": [...]}` (exit code as without).
        #[arg(long)]
        json: bool,
    },
    /// Entries tuned on another GPU/driver or by another convtune version than this one.
    Stale {
        /// Database file.
        file: PathBuf,
        /// GPU ordinal whose fingerprint is current.
        #[arg(long, default_value_t = 0)]
        device: usize,
        /// Print JSON: `{"file", "entries", "stale": [entry…]}`.
        #[arg(long)]
        json: bool,
    },
    /// Write the database as JSON or a C header, for compilers not written in Rust.
    Export {
        /// Database file.
        file: PathBuf,
        /// `json` or `c`.
        #[arg(long, default_value = "json")]
        format: String,
        /// Write here (atomically) instead of to stdout.
        #[arg(short, long, value_name = "FILE")]
        output: Option<PathBuf>,
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
                outln!("conflict: {c}");
            }
            merged.save_locked(&output, &lock).map_err(bad_input)?;
            drop(lock);
            outln!(
                "{} entries written to {} ({} conflict(s))",
                merged.len(),
                output.display(),
                conflicts.len()
            );
        }
        DbCommand::Diff { a, b, json } => {
            let lines = db::diff(&load(&a)?, &load(&b)?);
            if json {
                let changes: Vec<Change> = lines.iter().map(Change::from).collect();
                super::out::json(&serde_json::json!({ "changes": changes }))?;
                return Ok(());
            }
            for l in &lines {
                outln!("{l}");
            }
            if lines.is_empty() {
                outln!("no differences");
            }
        }
        DbCommand::Check { file, json } => {
            let d = load(&file)?;
            let mut issues = db::arch_issues(&d, &file);
            issues.extend(db::check(&d, d.arch(), &LegalityCheck));
            if json {
                let messages: Vec<String> = issues.iter().map(|i| i.to_string()).collect();
                super::out::json(&serde_json::json!({
                    "file": file.display().to_string(),
                    "arch": d.arch(),
                    "entries": d.len(),
                    "valid": issues.is_empty(),
                    "issues": messages,
                    "devices": devices_json(&d),
                }))?;
            } else {
                for i in &issues {
                    outln!("{}: {i}", file.display());
                }
            }
            if !issues.is_empty() {
                return Err(bad_input(anyhow!(
                    "{}: {} issue(s) in {} entries",
                    file.display(),
                    issues.len(),
                    d.len()
                )));
            }
            if !json {
                outln!("{}: {} entries, all valid", file.display(), d.len());
                print_devices(&d)?;
            }
        }
        DbCommand::Stale { file, device, json } => {
            let d = load(&file)?;
            let devices = cuda_devices().map_err(no_gpu)?;
            let dev = devices.get(device).ok_or_else(|| {
                bad_input(anyhow!(
                    "--device {device}: only {} CUDA device(s) present",
                    devices.len()
                ))
            })?;
            let fp = db::Fingerprint::from(&dev.fingerprint());
            let stale = db::stale(&d, &fp, env!("CARGO_PKG_VERSION"));
            if json {
                super::out::json(&serde_json::json!({
                    "file": file.display().to_string(),
                    "fingerprint": fp,
                    "entries": d.len(),
                    "stale": stale,
                }))?;
                return Ok(());
            }
            for e in &stale {
                outln!(
                    "{}  ({}; convtune {})",
                    e.problem,
                    e.fingerprint,
                    e.convtune_version
                );
            }
            outln!("{} of {} entries stale", stale.len(), d.len());
        }
        DbCommand::Export {
            file,
            format,
            output,
        } => {
            let d = load(&file)?;
            let text = match format.as_str() {
                "json" => db::export_json(&d),
                "c" => db::export_c_header(&d),
                f => return Err(bad_input(anyhow!("--format '{f}': expected json or c"))),
            };
            match output {
                Some(path) => super::out::write_file(&path, format!("{text}\n").as_bytes())?,
                None => outln!("{text}"),
            }
        }
    }
    Ok(())
}

/// One `db diff` change as JSON.
#[derive(Serialize)]
struct Change<'a> {
    /// `added`, `removed`, `config` or `time`.
    change: &'static str,
    old: Option<&'a Entry>,
    new: Option<&'a Entry>,
}

impl<'a> From<&'a DiffLine> for Change<'a> {
    fn from(d: &'a DiffLine) -> Self {
        let (change, old, new) = match d {
            DiffLine::Added(e) => ("added", None, Some(e)),
            DiffLine::Removed(e) => ("removed", Some(e), None),
            DiffLine::ConfigChanged { old, new } => ("config", Some(old), Some(new)),
            DiffLine::TimeChanged { old, new } => ("time", Some(old), Some(new)),
        };
        Change { change, old, new }
    }
}

/// Arguments of `convtune lookup`.
#[derive(clap::Args)]
pub struct LookupArgs {
    #[command(flatten)]
    problem: ProblemArg,
    #[command(flatten)]
    arch: ArchArg,
    #[command(flatten)]
    db: DbArgs,
    /// Also list the fallback's next configs, up to this many in all: the candidates a consumer
    /// times on first use to pick the fastest (JSON: `"candidates": [{"config", "source",
    /// "reason"}…]`, the answer first).
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u16).range(1..=convtune::lookup::MAX_CANDIDATES as i64))]
    candidates: u16,
    /// Only configs whose results are the same bits on every run: no floating-point atomics
    /// (split-K with `red=atomic`, depthwise backward weight by atomics), as PyTorch's
    /// `torch.use_deterministic_algorithms(True)` demands; a database entry that uses them is
    /// passed over with the reason.
    #[arg(long)]
    deterministic: bool,
    /// A first use's times: lines `CONFIG TIME_US` (`CONFIG failed` for one that did not run;
    /// `#` comments). Prints the second round instead of the lookup's answer: the configs the
    /// tuner's guided search would measure next from those times, the last of a kernel family
    /// nothing measured belongs to (JSON: `{"problem", "arch",
    /// "next": [config…], "measured"}`).
    #[arg(long, value_name = "FILE")]
    measured: Option<PathBuf>,
    /// With `--measured`: at most this many configs.
    #[arg(long, value_name = "N", default_value_t = convtune::lookup::SECOND_ROUND_CANDIDATES as u16,
          value_parser = clap::value_parser!(u16).range(1..=convtune::lookup::MAX_CANDIDATES as i64))]
    next: u16,
    /// Print JSON: `{"problem", "arch", "config", "source": {"kind", …}, "reason", "user_db", …}`.
    #[arg(long)]
    json: bool,
}

/// Prints the config a compiler would use for a problem, and where it came from.
pub fn lookup(args: LookupArgs) -> anyhow::Result<()> {
    let p = args.problem.parse().map_err(bad_input)?;
    let arch = args.arch.arch(None)?;
    let space = args.arch.space_file(&arch)?;
    let limits = convtune::lookup::Limits {
        space: space.as_ref(),
        deterministic: args.deterministic,
    };
    if let Some(path) = &args.measured {
        let measured = read_measured(path)?;
        let next =
            convtune::lookup::second_round(&p, &arch, limits, &measured, usize::from(args.next));
        if args.json {
            let next: Vec<String> = next.iter().map(ToString::to_string).collect();
            return super::out::json(&serde_json::json!({
                "problem": p.key(),
                "arch": arch.name,
                "next": next,
                "measured": measured.len(),
            }));
        }
        if next.is_empty() {
            if measured.iter().any(|(_, t)| t.is_some()) {
                errln!("no legal config is left unmeasured");
            } else {
                errln!(
                    "none of the {} measured configs ran: no winner to search around",
                    measured.len()
                );
            }
        }
        for c in &next {
            outln!("{c}");
        }
        return Ok(());
    }
    let looked = args
        .db
        .find(&p, &arch, limits, usize::from(args.candidates))?;
    let found = &looked.found;
    let candidate = |f: &convtune::lookup::Found| {
        serde_json::json!({
            "config": f.config.to_string(),
            "source": ConfigSource::from(&f.source),
            "reason": f.reason,
        })
    };
    if args.json {
        let mut all = vec![candidate(found)];
        all.extend(looked.more.iter().map(candidate));
        return super::out::json(&serde_json::json!({
            "candidates": all,
            "problem": p.key(),
            "arch": arch.name,
            "config": found.config.to_string(),
            "source": ConfigSource::from(&found.source),
            "reason": found.reason,
            "user_db": looked.user_db.as_ref().map(|p| p.display().to_string()),
            "user_db_read": looked.user_db_read,
            "space": args.arch.space_origin(),
            "deterministic": args.deterministic,
        }));
    }
    outln!("{}", found.config);
    outln!("source: {}", found.source);
    outln!("why: {} [{}]", found.reason, looked.user_note);
    for (i, f) in looked.more.iter().enumerate() {
        outln!("candidate {}: {}", i + 2, f.config);
        outln!("  source: {}", f.source);
        outln!("  why: {}", f.reason);
    }
    Ok(())
}

/// `lookup --measured`'s file: `CONFIG TIME_US` or `CONFIG failed` per line.
fn read_measured(path: &Path) -> anyhow::Result<Vec<(convtune::config::PerfConfig, Option<f64>)>> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| bad_input(anyhow!("cannot read {}: {e}", path.display())))?;
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let at = || format!("{}:{}", path.display(), n + 1);
        let (config, time) = line.split_once(char::is_whitespace).ok_or_else(|| {
            bad_input(anyhow!("{}: expected `CONFIG TIME_US`, got `{line}`", at()))
        })?;
        let config = config
            .parse()
            .map_err(|e| bad_input(anyhow!("{}: {e}", at())))?;
        let time = match time.trim() {
            "failed" => None,
            t => Some(
                t.parse::<f64>()
                    .ok()
                    .filter(|t| t.is_finite() && *t > 0.0)
                    .ok_or_else(|| {
                        bad_input(anyhow!("{}: `{t}` is not a time in µs (or `failed`)", at()))
                    })?,
            ),
        };
        out.push((config, time));
    }
    Ok(out)
}

/// The devices a database's entries were tuned on, the home device (what a lookup that names no
/// GPU serves where a problem was tuned on several) first.
fn print_devices(d: &TunedDb) -> anyhow::Result<()> {
    for (i, (gpu, units, n)) in d.devices().into_iter().enumerate() {
        let home = if i == 0 { " (home device)" } else { "" };
        outln!("  tuned on {gpu} ({units} CUs): {n} entries{home}");
    }
    Ok(())
}

fn devices_json(d: &TunedDb) -> serde_json::Value {
    d.devices()
        .into_iter()
        .enumerate()
        .map(|(i, (gpu, units, n))| {
            serde_json::json!({"gpu": gpu, "compute_units": units, "entries": n, "home": i == 0})
        })
        .collect()
}
