//! What a campaign tells its caller: typed, serializable, and printable as the CLI prints it.
//!
//! Every value here is both data (serde, for `--json` and the `--report` file) and text
//! (`Display`, the lines the CLI shows), so the two never drift apart.

use super::report_file::ReportRow;
use super::{StageTimes, TuneReport};
use crate::codegen::CompileSteps;
use crate::config::PerfConfig;
use crate::runtime::{Fingerprint, Timing};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

/// Everything a campaign produced.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "mode", rename_all = "snake_case")]
pub enum CampaignReport {
    /// Candidates measured on GPUs; winners written to the database.
    Tuned(TunedReport),
    /// Candidates only enumerated, checked and compiled.
    DryRun(DryRunReport),
}

/// How a tuning campaign was set up: announced before the first problem starts.
#[derive(Debug, Clone, Serialize)]
pub struct TuneSetup {
    /// Problems to tune (after sharding).
    pub problems: usize,
    /// The arch tuned for.
    pub arch: String,
    /// The device the database entries are attributed to.
    pub fingerprint: Fingerprint,
    /// Device ordinals, one worker each.
    pub devices: Vec<usize>,
    /// Where the search space came from.
    pub space: String,
    /// Search strategy.
    pub strategy: String,
    /// The database the winners go to.
    pub database: PathBuf,
    /// The journal (one per device, with a `.gpuN` suffix, when several devices tune).
    pub journal: PathBuf,
}

impl fmt::Display for TuneSetup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "convtune: {} problem(s) on {} × {}, space {}, strategy {}, database {}, journal {}",
            self.problems,
            self.devices.len(),
            self.fingerprint,
            self.space,
            self.strategy,
            self.database.display(),
            self.journal.display()
        )
    }
}

/// A finished tuning campaign.
#[derive(Debug, Clone, Serialize)]
pub struct TunedReport {
    /// How it was set up.
    pub setup: TuneSetup,
    /// One summary per problem, in the order they finished.
    pub problems: Vec<ProblemSummary>,
    /// Problems never started because `--time-total` ran out.
    pub not_started: Vec<String>,
}

/// One verified candidate and its time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ranked {
    /// The perf config string.
    pub config: String,
    /// Median kernel time, µs.
    pub time_us: f64,
    /// Throughput at that time.
    pub tflops: f64,
}

impl Ranked {
    /// `config` as timed by `t`.
    fn of(config: &PerfConfig, t: &Timing) -> Ranked {
        Ranked {
            config: config.to_string(),
            time_us: t.median_us,
            tflops: t.tflops,
        }
    }
}

/// A candidate that produced no timing, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Failure {
    /// The perf config string.
    pub config: String,
    /// The outcome, in words.
    pub reason: String,
}

/// How many fastest candidates a summary keeps.
const FASTEST: usize = 5;

/// The result of tuning one problem on one device.
#[derive(Debug, Clone, Serialize)]
pub struct ProblemSummary {
    /// Canonical problem key.
    pub problem: String,
    /// Device ordinal it was tuned on.
    pub device: usize,
    /// Legal candidates.
    pub legal: usize,
    /// Candidates evaluated, resumed ones included.
    pub evaluated: usize,
    /// Of those, taken from the journal.
    pub resumed: usize,
    /// Of those, without a verified timing (those cut off by the deadline not counted).
    pub failed: usize,
    /// Of those, cut off by the deadline while they were measured (not a verdict on them).
    pub cut_off: usize,
    /// Of those, timed only by their short first measurement (clearly slower than the best).
    pub screened: usize,
    /// Wall time, seconds, every stage included.
    pub seconds: f64,
    /// Where that time went.
    pub stages: StageTimes,
    /// The time limit ended the search before the strategy or the budget did.
    pub out_of_time: bool,
    /// The config `convtune lookup` answered before this run (the database's entry, or the
    /// untuned fallback), as this run timed it: what the winner replaces, measured in the same
    /// run and protocol, so a re-tune says what it gained without a second run.
    pub before: Option<Ranked>,
    /// The fastest, as this run timed them, of the configs `convtune lookup --candidates`
    /// answered before this run (the lookup's own answer among them): what a consumer timing
    /// those on first use would have picked.
    pub lookup_best: Option<Ranked>,
    /// The fastest verified candidates, fastest first; the first is the winner.
    pub fastest: Vec<Ranked>,
    /// Failed candidates per outcome kind.
    pub failures: BTreeMap<String, usize>,
    /// The first failed candidate, to show what went wrong.
    pub first_failure: Option<Failure>,
}

impl ProblemSummary {
    /// Summarises one problem's tuning run.
    /// `start` are the lookup's candidates the search measured first, its answer first (see
    /// [`ProblemSummary::before`] and [`ProblemSummary::lookup_best`]).
    pub fn new(
        problem: String,
        device: usize,
        r: &TuneReport,
        start: &[PerfConfig],
    ) -> ProblemSummary {
        let timed = |c: &PerfConfig| {
            r.trials
                .iter()
                .filter(|t| t.config == *c)
                .find_map(|t| t.outcome.timing())
                .map(|t| Ranked::of(c, t))
        };
        let mut failures = BTreeMap::new();
        for t in r
            .trials
            .iter()
            .filter(|t| t.outcome.timing().is_none() && !t.outcome.cut_off())
        {
            *failures.entry(t.outcome.kind().to_string()).or_default() += 1;
        }
        ProblemSummary {
            problem,
            device,
            legal: r.legal,
            evaluated: r.trials.len(),
            resumed: r.trials.iter().filter(|t| t.resumed).count(),
            failed: r.failed(),
            cut_off: r.cut_off(),
            screened: r.screened(),
            seconds: r.elapsed.as_secs_f64(),
            stages: r.stages,
            out_of_time: r.out_of_time,
            before: start.first().and_then(timed),
            lookup_best: start
                .iter()
                .filter_map(timed)
                .min_by(|a, b| a.time_us.total_cmp(&b.time_us)),
            fastest: r
                .ranked()
                .into_iter()
                .take(FASTEST)
                .map(|(c, t)| Ranked::of(c, t))
                .collect(),
            failures,
            first_failure: r
                .trials
                .iter()
                .find(|t| t.outcome.timing().is_none() && !t.outcome.cut_off())
                .map(|t| Failure {
                    config: t.config.to_string(),
                    reason: t.outcome.to_string(),
                }),
        }
    }

    /// The fastest verified candidate: what goes into the database.
    pub fn winner(&self) -> Option<&Ranked> {
        self.fastest.first()
    }

    /// One line: the problem, its best time, how many candidates, how long, and where the time
    /// went.
    pub fn line(&self) -> String {
        let best = self
            .winner()
            .map_or("no verified candidate".to_string(), |w| {
                format!("best {:.2} us ({:.1} TFLOP/s)", w.time_us, w.tflops)
            });
        let best = match (&self.before, self.winner()) {
            (Some(b), Some(w)) if b.config == w.config => {
                format!("{best}, the config used before this run")
            }
            (Some(b), Some(w)) => format!(
                "{best}, {:.2}x the config used before this run ({:.2} us)",
                b.time_us / w.time_us,
                b.time_us
            ),
            _ => best,
        };
        format!(
            "summary: {}: {best}; {} evaluated ({} screened, {} failed) in {:.1} s{}; {}",
            self.problem,
            self.evaluated,
            self.screened,
            self.failed,
            self.seconds,
            match (self.out_of_time, self.cut_off) {
                (false, _) => String::new(),
                (true, 0) => " (time limit)".to_string(),
                (true, n) => format!(" (time limit; {n} cut off while measured)"),
            },
            self.stages
        )
    }

    /// The problem's row in the `--report` file, if a candidate verified.
    pub fn report_row(&self) -> Option<ReportRow> {
        let w = self.winner()?;
        Some(ReportRow {
            problem: self.problem.clone(),
            config: w.config.clone(),
            time_us: w.time_us,
            tflops: w.tflops,
            tried: self.evaluated,
            failed: self.failed,
            legal: self.legal,
            seconds: self.seconds,
            device: self.device,
            before_us: self.before.as_ref().map(|b| b.time_us),
            lookup_best_us: self.lookup_best.as_ref().map(|b| b.time_us),
        })
    }
}

impl fmt::Display for ProblemSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {} evaluated ({} resumed, {} failed) of {} legal in {:.1} s",
            self.problem, self.evaluated, self.resumed, self.failed, self.legal, self.seconds
        )?;
        write!(f, "\n  {:>10} {:>9}  config", "time us", "TFLOP/s")?;
        for r in &self.fastest {
            write!(f, "\n  {:>10.2} {:>9.1}  {}", r.time_us, r.tflops, r.config)?;
        }
        if !self.failures.is_empty() {
            let s: Vec<String> = self
                .failures
                .iter()
                .map(|(k, n)| format!("{n} {k}"))
                .collect();
            write!(f, "\n  failed: {}", s.join(", "))?;
        }
        if let Some(x) = &self.first_failure {
            write!(f, "\n  first failure: {} → {}", x.config, x.reason)?;
        }
        write!(f, "\n{}", self.line())
    }
}

/// How a dry run was set up.
#[derive(Debug, Clone, Serialize)]
pub struct DryRunSetup {
    /// The arch compiled for.
    pub arch: String,
    /// The product its numbers describe.
    pub product: String,
    /// Where the search space came from.
    pub space: String,
}

impl fmt::Display for DryRunSetup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "dry run for {} ({}), space {}",
            self.arch, self.product, self.space
        )
    }
}

/// One problem of a dry run: counts of candidates enumerated, legal and compiled.
#[derive(Debug, Clone, Serialize)]
pub struct CompiledProblem {
    /// Canonical problem key.
    pub problem: String,
    /// Points in the raw search space.
    pub raw: u64,
    /// Legal candidates.
    pub legal: usize,
    /// Compiled without error.
    pub compiled: usize,
    /// Failed to compile.
    pub failed: usize,
    /// The first candidate that failed to compile.
    pub first_failure: Option<Failure>,
    /// One line on the compiled code objects' resources (AMD), if any.
    pub resources: Option<String>,
    /// Wall time, seconds.
    pub seconds: f64,
    /// Where it went (enumerate, rank, codegen; codegen in CPU seconds).
    pub stages: StageTimes,
    /// The codegen of the candidates compiled without error, step by step.
    pub steps: CompileSteps,
    /// The time limit stopped compiling before the budget did.
    pub out_of_time: bool,
}

impl fmt::Display for CompiledProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}\n  raw {}, legal {}, compiled {} ok, {} failed",
            self.problem, self.raw, self.legal, self.compiled, self.failed
        )?;
        if let Some(x) = &self.first_failure {
            write!(f, "\n  first failure: {}: {}", x.config, x.reason)?;
        }
        if let Some(r) = &self.resources {
            write!(f, "\n  {r}")?;
        }
        write!(
            f,
            "\nsummary: {}: {} compiled in {:.1} s{}; enumerate {:.2} s, rank {:.2} s, \
             codegen {:.2} s CPU ({:.3} s a candidate: {})",
            self.problem,
            self.compiled + self.failed,
            self.seconds,
            if self.out_of_time {
                " (time limit)"
            } else {
                ""
            },
            self.stages.enumerate_s,
            self.stages.rank_s,
            self.stages.codegen_s,
            self.stages.codegen_s / (self.compiled + self.failed).max(1) as f64,
            self.steps
        )
    }
}

/// A finished dry run.
#[derive(Debug, Clone, Serialize)]
pub struct DryRunReport {
    /// How it was set up.
    pub setup: DryRunSetup,
    /// One entry per problem, in list order.
    pub problems: Vec<CompiledProblem>,
}

impl DryRunReport {
    /// Candidates that failed to compile, over all problems.
    pub fn failed(&self) -> usize {
        self.problems.iter().map(|p| p.failed).sum()
    }
}

/// What a campaign announces while it runs, in the order it happens (from several device
/// threads at once when several devices tune).
#[derive(Debug, Clone, Copy)]
pub enum Event<'a> {
    /// A tuning campaign starts.
    Tuning(&'a TuneSetup),
    /// A device starts a problem.
    ProblemStarted {
        /// Device ordinal.
        device: usize,
        /// Canonical problem key.
        problem: &'a str,
        /// Legal candidates.
        legal: usize,
        /// Raw candidates.
        raw: u64,
        /// The reference kernel's time, µs.
        reference_us: f64,
    },
    /// A problem is tuned (its winner, if any, is about to be written).
    ProblemDone(&'a ProblemSummary),
    /// A dry run starts.
    DryRun(&'a DryRunSetup),
    /// A dry run has compiled one problem's candidates.
    Compiled(&'a CompiledProblem),
}

impl fmt::Display for Event<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Event::Tuning(s) => s.fmt(f),
            Event::ProblemStarted {
                device,
                problem,
                legal,
                raw,
                reference_us,
            } => write!(
                f,
                "[gpu {device}] {problem}: {legal} legal of {raw} raw candidates; \
                 reference kernel {reference_us:.1} us"
            ),
            Event::ProblemDone(s) => s.fmt(f),
            Event::DryRun(s) => s.fmt(f),
            Event::Compiled(c) => c.fmt(f),
        }
    }
}
