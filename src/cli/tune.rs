//! The main job: `convtune --problem … --arch …` tunes on the GPU into the database.

use super::{bad_input, ArchArg};
use anyhow::{anyhow, Context as _};
use convtune::arch::Arch;
use convtune::problem::{parse_problem_file, ConvProblem};
use convtune::tune::{
    Campaign, CampaignError, CampaignOptions, CampaignReport, Devices, Event, TuneOptions,
};
use std::path::PathBuf;
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
    /// Stop proposing candidates for a problem after this many seconds.
    #[arg(long, value_name = "SECS")]
    pub time: Option<f64>,
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

fn problems(args: &TuneArgs) -> anyhow::Result<Vec<ConvProblem>> {
    match (&args.problem, &args.problems) {
        (Some(p), _) => Ok(vec![p
            .parse()
            .map_err(|e| bad_input(anyhow!("problem '{p}': {e}")))?]),
        (None, Some(path)) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading {}", path.display()))
                .map_err(bad_input)?;
            parse_problem_file(&text).map_err(|e| bad_input(anyhow!("{}: {e}", path.display())))
        }
        (None, None) => Err(bad_input(anyhow!("give --problem or --problems"))),
    }
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
        },
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

/// Results on stdout, the running commentary on stderr.
fn print(event: &Event<'_>) {
    match event {
        Event::ProblemDone(s) => {
            println!("{s}");
            if s.winner().is_none() {
                eprintln!("  no candidate verified: nothing written for this problem");
            }
        }
        Event::DryRun(_) | Event::Compiled(_) => println!("{event}"),
        Event::Tuning(_) | Event::ProblemStarted { .. } => eprintln!("{event}"),
    }
}

/// Runs the tuner; returns the exit code's error, if any.
pub fn run(args: TuneArgs) -> anyhow::Result<()> {
    let list = problems(&args)?;
    run_list(campaign(args)?, list)
}

/// `convtune retune`: tunes again the entries of the database that are stale here (another GPU,
/// driver or convtune version than the present ones).
pub fn retune(args: TuneArgs) -> anyhow::Result<()> {
    let campaign = campaign(args)?;
    let stale = campaign.stale().map_err(exit_code)?;
    eprintln!("{stale}");
    if stale.problems.is_empty() {
        return Ok(());
    }
    run_list(campaign, stale.problems)
}

fn run_list(campaign: Campaign, list: Vec<ConvProblem>) -> anyhow::Result<()> {
    match campaign.run(list, &print).map_err(exit_code)? {
        CampaignReport::DryRun(r) if r.failed() > 0 => {
            Err(anyhow!("{} candidate(s) failed to compile", r.failed()))
        }
        _ => Ok(()),
    }
}
