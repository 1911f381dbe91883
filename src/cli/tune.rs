//! The main job: `convtune --problem … --arch …` tunes on the GPU into the database.

use super::out::{self, OutputError};
use super::{bad_input, ArchArg};
use anyhow::anyhow;
use convtune::arch::Arch;
use convtune::input;
use convtune::problem::{read_problem_file, ConvProblem};
use convtune::tune::{
    Campaign, CampaignError, CampaignOptions, CampaignReport, Devices, Event, Try, TuneOptions,
};
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

/// Arguments of the tuning run (the bare `convtune` form).
#[derive(clap::Args)]
pub struct TuneArgs {
    /// One problem (MIOpenDriver line or rocMLIR driver flags).
    #[arg(long, allow_hyphen_values = true, conflicts_with = "problems")]
    pub problem: Option<String>,
    /// A file of problems, one a line, `#` comments.
    #[arg(long, value_name = "FILE")]
    pub problems: Option<PathBuf>,
    #[command(flatten)]
    pub arch: ArchArg,
    /// Evaluate at most this many candidates per problem (default: all legal ones).
    #[arg(long)]
    pub budget: Option<usize>,
    /// Wall time per problem in seconds, every stage included (enumerate, reference, compile,
    /// measure): a problem ends within about a second of it.
    #[arg(long, value_name = "SECS", value_parser = positive_secs)]
    pub time: Option<f64>,
    /// Wall time of the whole list in seconds: each problem gets at most its share of what is
    /// left; problems not started when it runs out are listed at the end.
    #[arg(long, value_name = "SECS", value_parser = positive_secs)]
    pub time_total: Option<f64>,
    /// Configs to measure first where they are legal, one a line (`#` comments): another
    /// database's winners, a quick list, on every problem; `PROBLEM | CONFIG` for one problem
    /// of the list only. With `--budget` set to their count, a run times just those (and the
    /// lookup's config, when it is not one of them, in their place).
    #[arg(long = "try", value_name = "FILE")]
    pub tries: Option<PathBuf>,
    /// Time every candidate in full (no adaptive timing: by default a candidate clearly slower
    /// than the best so far keeps its short first measurement).
    #[arg(long)]
    pub full_timing: bool,
    /// Only candidates whose results are the same bits on every run: no floating-point atomics
    /// (split-K adds by the in-kernel fix-up, depthwise backward weight as partials), for the
    /// database a deterministic lookup reads (`lookup --deterministic`); best with its own `--db`.
    #[arg(long)]
    pub deterministic: bool,
    /// Search strategy.
    #[arg(long, default_value = "guided")]
    pub strategy: String,
    /// Seed for random inputs and randomised strategies.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// GPU ordinal.
    #[arg(long, default_value_t = 0)]
    pub device: usize,
    /// Tune on several GPUs of this host, one worker each: `all` or a list `0,1`.
    #[arg(long, value_name = "all|LIST")]
    pub devices: Option<String>,
    /// Database file to write (default: the user database, see `convtune lookup --help`).
    #[arg(long, value_name = "FILE")]
    pub db: Option<PathBuf>,
    /// Journal of every measured candidate, for resuming (default: beside the database).
    #[arg(long, value_name = "FILE")]
    pub journal: Option<PathBuf>,
    /// Append a JSON report of the winners here (read by scripts/compare-cudnn.py).
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,
    /// Tune only problems i, i+n, i+2n, … of the list (`i/n`, 0-based): split a list across hosts.
    #[arg(long, value_name = "I/N")]
    pub shard: Option<String>,
    /// Enumerate, check and compile every candidate, report counts; no GPU, writes nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Candidates compiled per batch.
    #[arg(long, default_value_t = 32)]
    pub batch: usize,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
    /// Print the report (of the dry run or of the tuning) as JSON on stdout at the end; the
    /// per-problem lines go to stderr instead.
    #[arg(long)]
    pub json: bool,
    /// Test only: make this many of the first candidates write out of bounds (fault isolation).
    #[arg(long, hide = true, default_value_t = 0)]
    pub inject_faults: usize,
}

impl TuneArgs {
    /// Whether a problem was given: the bare `convtune` form tunes only then, and otherwise
    /// prints what is missing instead of starting a GPU worker.
    pub fn wants_tuning(&self) -> bool {
        self.problem.is_some() || self.problems.is_some()
    }
}

/// A number of seconds that is finite and above zero.
fn positive_secs(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 && v < 1e9 => Ok(v),
        _ => Err(format!("'{s}' is not a number of seconds above zero")),
    }
}

fn problems(args: &TuneArgs) -> anyhow::Result<Vec<ConvProblem>> {
    match (&args.problem, &args.problems) {
        (Some(p), _) => Ok(vec![p.parse().map_err(|e| {
            bad_input(anyhow!(
                "problem '{}': {e}",
                convtune::input::excerpt(p, 200)
            ))
        })?]),
        (None, Some(path)) => read_problem_file(path).map_err(bad_input),
        (None, None) => Err(bad_input(anyhow!("give --problem or --problems"))),
    }
}

/// The configs of a `--try` file: one a line, as problem lists are written
/// ([`input::list_lines`]); a line that does not parse is an error naming the file and line.
fn read_tries(path: &std::path::Path) -> anyhow::Result<Vec<Try>> {
    let text =
        input::read_text(path, input::PROBLEM_FILE_LIMIT, "config lists").map_err(bad_input)?;
    let at = |line: usize, e: &dyn std::fmt::Display| {
        bad_input(anyhow!("{}:{line}: {e}", path.display()))
    };
    input::list_lines(&text)
        .map(|(line, text)| {
            let (problem, config) = match text.rsplit_once('|') {
                Some((p, c)) => (Some(p.trim()), c.trim()),
                None => (None, text),
            };
            let problem = problem
                .map(|p| p.parse::<ConvProblem>().map(|p| p.key()))
                .transpose()
                .map_err(|e| at(line, &e))?;
            let config = config.parse().map_err(|e| at(line, &e))?;
            Ok(Try { problem, config })
        })
        .collect()
}

/// The flags as the library's validated options.
fn campaign(args: TuneArgs) -> anyhow::Result<Campaign> {
    let arch = args.arch.arch.as_deref().map(Arch::from_name);
    let options = CampaignOptions {
        arch: arch.transpose().map_err(bad_input)?,
        space: args.arch.space,
        strategy: args.strategy,
        seed: args.seed,
        tune: TuneOptions {
            budget: args.budget,
            time_limit: args.time.map(Duration::from_secs_f64),
            batch: args.batch,
            progress: !args.quiet,
            adaptive: !args.full_timing,
            ..TuneOptions::default()
        },
        time_total: args.time_total.map(Duration::from_secs_f64),
        devices: match &args.devices {
            Some(spec) => spec.parse().map_err(bad_input)?,
            None => Devices::One(args.device),
        },
        db: args.db,
        journal: args.journal,
        report: args.report,
        shard: args
            .shard
            .as_deref()
            .map(str::parse)
            .transpose()
            .map_err(bad_input)?,
        dry_run: args.dry_run,
        inject_faults: args.inject_faults,
        deterministic: args.deterministic,
        tries: match &args.tries {
            Some(path) => read_tries(path)?,
            None => Vec::new(),
        },
    };
    Campaign::new(options).map_err(exit_code)
}

/// Errors of the request itself exit 2, the others 1.
fn exit_code(e: CampaignError) -> anyhow::Error {
    if e.is_input_error() {
        bad_input(e)
    } else {
        e.into()
    }
}

/// Results on stdout (stderr with `--json`), the running commentary on stderr. The first
/// failed write to stdout is kept and returned when the campaign ends; the campaign itself goes
/// on, since what it measures lands in the database, not on stdout.
struct Printer {
    json: bool,
    failed: Mutex<Option<OutputError>>,
}

impl Printer {
    fn observe(&self, event: &Event<'_>) {
        let result = match event {
            Event::ProblemDone(s) => {
                let r = self.result(format_args!("{s}"));
                if s.winner().is_none() {
                    errln!("  no candidate verified: nothing written for this problem");
                }
                r
            }
            Event::DryRun(_) | Event::Compiled(_) => self.result(format_args!("{event}")),
            Event::Tuning(_) | Event::ProblemStarted { .. } => {
                errln!("{event}");
                Ok(())
            }
        };
        if let (Err(e), Ok(mut failed)) = (result, self.failed.lock()) {
            failed.get_or_insert(e);
        }
    }

    fn result(&self, line: std::fmt::Arguments<'_>) -> Result<(), OutputError> {
        if self.json {
            errln!("{line}");
            Ok(())
        } else {
            out::line(line)
        }
    }
}

/// Runs the tuner; returns the exit code's error, if any.
pub fn run(args: TuneArgs) -> anyhow::Result<()> {
    let list = problems(&args)?;
    let json = args.json;
    run_list(campaign(args)?, list, json).map_err(|e| match e.downcast::<CampaignError>() {
        // The main command without a GPU: say how to work without one.
        Ok(e @ CampaignError::NoGpu { .. }) => bad_input(anyhow!("{e}; {}", super::dry_run_hint())),
        Ok(e) => exit_code(e),
        Err(e) => e,
    })
}

/// `convtune retune`: tunes again the entries of the database that are stale here (another GPU,
/// driver or convtune version than the present ones).
pub fn retune(args: TuneArgs) -> anyhow::Result<()> {
    let json = args.json;
    let campaign = campaign(args)?;
    let stale = campaign.stale().map_err(exit_code)?;
    errln!("{stale}");
    if stale.problems.is_empty() {
        return Ok(());
    }
    run_list(campaign, stale.problems, json).map_err(|e| match e.downcast::<CampaignError>() {
        Ok(e) => exit_code(e),
        Err(e) => e,
    })
}

/// Runs the campaign; a campaign error is returned as itself, for the caller to map.
fn run_list(campaign: Campaign, list: Vec<ConvProblem>, json: bool) -> anyhow::Result<()> {
    let printer = Printer {
        json,
        failed: Mutex::new(None),
    };
    let report = campaign.run(list, &|e| printer.observe(e))?;
    if let Some(e) = printer.failed.into_inner().ok().flatten() {
        return Err(e.into());
    }
    if let CampaignReport::Tuned(t) = &report {
        if !t.not_started.is_empty() {
            errln!(
                "{} problem(s) not started: --time-total ran out (first: {})",
                t.not_started.len(),
                t.not_started[0]
            );
        }
    }
    if json {
        out::json(&report)?;
    }
    match report {
        CampaignReport::DryRun(r) if r.failed() > 0 => {
            Err(anyhow!("{} candidate(s) failed to compile", r.failed()))
        }
        _ => Ok(()),
    }
}
