//! The tuning loop: ask the strategy for candidates, compile them on all cores while the GPU
//! times the previous batch, verify and time each, record every outcome as it arrives.
//!
//! The loop is independent of the GPU: it measures through the [`Evaluate`] trait (the real one
//! is a worker process; tests use a fake), and it records through callbacks so that the caller
//! decides where results go (a journal for resuming, the database for winners).
//!
//! [`Campaign`] is the whole job on top of that loop: problems spread over the devices of a
//! [`DeviceBackend`](crate::runtime::DeviceBackend), resumed from the journal, winners written to
//! the database, a typed [`CampaignReport`] at the end (and a dry run that only compiles).

mod campaign;
mod campaign_error;
mod device_run;
mod devices;
mod dry_run;
mod options;
mod plan;
mod progress;
mod report;
mod report_file;

pub use campaign::{Campaign, CampaignOptions, Stale};
pub use campaign_error::CampaignError;
pub use devices::{Devices, SelectionError, Shard};
pub use plan::{
    compile_only, compile_plan, reference_plan, resource_summary, target_for, PlanError,
};
pub use report::{
    CampaignReport, CompiledProblem, DryRunReport, DryRunSetup, Event, Failure, ProblemSummary,
    Ranked, TuneSetup, TunedReport,
};
pub use report_file::{write_report_file, ReportFileError, ReportRow};

use crate::config::PerfConfig;
use crate::runtime::{LaunchPlan, Outcome, Timing};
use crate::search::{Measured, SearchContext, Strategy};
use progress::Progress;
use rayon::prelude::*;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Measures one compiled candidate on a device (verify, then time).
pub trait Evaluate {
    /// Verifies and times the plan; a failure is an outcome, never a panic.
    fn measure(&mut self, plan: &LaunchPlan) -> Outcome;
    /// Set when the device itself is gone (no worker can start): the run stops, since every
    /// further candidate would fail for the same reason.
    fn fatal(&self) -> Option<&str> {
        None
    }
}

/// Limits and display of one tuning run.
#[derive(Debug, Clone)]
pub struct TuneOptions {
    /// At most this many candidates evaluated (resumed ones included).
    pub budget: Option<usize>,
    /// Stop proposing new candidates after this long.
    pub time_limit: Option<Duration>,
    /// Candidates compiled per batch.
    pub batch: usize,
    /// Show a progress bar.
    pub progress: bool,
}

impl Default for TuneOptions {
    fn default() -> Self {
        TuneOptions {
            budget: None,
            time_limit: None,
            batch: 32,
            progress: true,
        }
    }
}

/// One evaluated candidate.
#[derive(Debug, Clone)]
pub struct Trial {
    /// The configuration.
    pub config: PerfConfig,
    /// What happened.
    pub outcome: Outcome,
    /// Taken from the journal of an earlier, interrupted run rather than measured now.
    pub resumed: bool,
}

/// Everything one tuning run of one problem produced.
#[derive(Debug, Clone)]
pub struct TuneReport {
    /// Legal candidates the search could choose from.
    pub legal: usize,
    /// Every evaluated candidate, in evaluation order.
    pub trials: Vec<Trial>,
    /// Wall time of the run.
    pub elapsed: Duration,
}

impl TuneReport {
    /// Verified candidates, fastest first.
    pub fn ranked(&self) -> Vec<(&PerfConfig, &Timing)> {
        let mut ok: Vec<_> = self
            .trials
            .iter()
            .filter_map(|t| t.outcome.timing().map(|tm| (&t.config, tm)))
            .collect();
        ok.sort_by(|a, b| a.1.median_us.total_cmp(&b.1.median_us));
        ok
    }
    /// The fastest verified candidate.
    pub fn best(&self) -> Option<(&PerfConfig, &Timing)> {
        self.ranked().into_iter().next()
    }
    /// Count of trials that did not produce a verified timing.
    pub fn failed(&self) -> usize {
        self.trials
            .iter()
            .filter(|t| t.outcome.timing().is_none())
            .count()
    }
}

/// Where results go as they arrive, and where earlier results come from.
pub trait Record {
    /// An outcome recorded by an earlier run for this candidate, if any (resume).
    fn earlier(&self, config: &PerfConfig) -> Option<Outcome>;
    /// Persists one new outcome before the next candidate runs.
    fn record(&mut self, config: &PerfConfig, outcome: &Outcome);
}

/// Records nothing and resumes nothing (dry runs, tests).
pub struct NoRecord;

impl Record for NoRecord {
    fn earlier(&self, _: &PerfConfig) -> Option<Outcome> {
        None
    }
    fn record(&mut self, _: &PerfConfig, _: &Outcome) {}
}

type CompiledBatch = Vec<(usize, Result<LaunchPlan, String>)>;

/// Runs the search for one problem.
///
/// `compile` turns a config into a launch plan (called from many threads at once); it runs one
/// batch ahead of the measurements so the CPU and the GPU work at the same time.
pub fn tune<C>(
    ctx: &SearchContext<'_>,
    strategy: &mut dyn Strategy,
    compile: C,
    eval: &mut dyn Evaluate,
    record: &mut dyn Record,
    opts: &TuneOptions,
) -> TuneReport
where
    C: Fn(&PerfConfig) -> Result<LaunchPlan, String> + Sync,
{
    let start = Instant::now();
    let total = opts
        .budget
        .map_or(ctx.candidates.len(), |b| b.min(ctx.candidates.len()));
    let mut progress = Progress::new(total as u64, opts.progress);
    let mut trials = Vec::new();
    let mut measured: Vec<Measured> = Vec::new();
    let mut proposed = 0usize;

    std::thread::scope(|scope| {
        let (to_compiler, jobs) = mpsc::channel::<Vec<usize>>();
        let (done, compiled) = mpsc::channel::<CompiledBatch>();
        let compile = &compile;
        let candidates = ctx.candidates;
        scope.spawn(move || {
            for batch in jobs {
                let out: CompiledBatch = batch
                    .par_iter()
                    .map(|&i| (i, compile(&candidates[i])))
                    .collect();
                if done.send(out).is_err() {
                    break;
                }
            }
        });

        let mut in_flight = 0usize;
        let mut exhausted = false;
        loop {
            let out_of_time = opts.time_limit.is_some_and(|t| start.elapsed() >= t);
            // Keep one batch compiling ahead of the one being measured.
            while !exhausted && !out_of_time && in_flight < 2 && proposed < total {
                let want = opts.batch.min(total - proposed);
                let mut batch = strategy.next_batch(ctx, &measured, want);
                batch.truncate(want);
                if batch.is_empty() {
                    exhausted = true;
                    break;
                }
                proposed += batch.len();
                // Candidates an earlier run already measured are not compiled again.
                batch.retain(|&i| match record.earlier(&candidates[i]) {
                    Some(outcome) => {
                        progress.update(&candidates[i], &outcome, true);
                        measured.push(Measured {
                            index: i,
                            time_us: outcome.timing().map(|t| t.median_us),
                        });
                        trials.push(Trial {
                            config: candidates[i],
                            outcome,
                            resumed: true,
                        });
                        false
                    }
                    None => true,
                });
                if !batch.is_empty() {
                    progress.compiling(batch.len());
                    in_flight += 1;
                    if to_compiler.send(batch).is_err() {
                        break;
                    }
                }
            }
            if in_flight == 0 || eval.fatal().is_some() {
                break;
            }
            let Ok(batch) = compiled.recv() else { break };
            in_flight -= 1;
            progress.compiled(batch.len());
            for (i, plan) in batch {
                let outcome = match plan {
                    Ok(plan) => eval.measure(&plan),
                    Err(e) => Outcome::CompileFailed(e),
                };
                record.record(&candidates[i], &outcome);
                progress.update(&candidates[i], &outcome, false);
                measured.push(Measured {
                    index: i,
                    time_us: outcome.timing().map(|t| t.median_us),
                });
                trials.push(Trial {
                    config: candidates[i],
                    outcome,
                    resumed: false,
                });
            }
        }
        drop(to_compiler);
    });
    progress.finish();
    TuneReport {
        legal: ctx.candidates.len(),
        trials,
        elapsed: start.elapsed(),
    }
}

#[cfg(test)]
mod campaign_tests;
#[cfg(test)]
mod tests;
