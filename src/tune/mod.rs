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
mod early;
mod options;
mod plan;
mod progress;
mod report;
mod report_file;
mod stages;

pub use campaign::{Campaign, CampaignOptions, Stale};
pub use campaign_error::CampaignError;
pub use devices::{Devices, SelectionError, Shard};
pub use options::Try;
pub use plan::{
    compile_only, compile_plan, reference_plan, resource_summary, target_for, CompiledOnly,
    PlanError,
};
pub use report::{
    CampaignReport, CompiledProblem, DryRunReport, DryRunSetup, Event, Failure, ProblemSummary,
    Ranked, TuneSetup, TunedReport,
};
pub use report_file::{write_report_file, ReportFileError, ReportRow};

use crate::config::PerfConfig;
use crate::runtime::{LaunchPlan, MeasureStages, Outcome, Timing};
use crate::search::{Measured, SearchContext, Strategy};
pub use progress::ListPosition;
use progress::Progress;
pub use stages::StageTimes;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

/// Measures one compiled candidate on a device (verify, then time).
pub trait Evaluate {
    /// Verifies and times the plan; a failure is an outcome, never a panic.
    fn measure(&mut self, plan: &LaunchPlan) -> Outcome;
    /// [`Evaluate::measure`] with adaptive timing (a candidate whose short first measurement
    /// is slower than `screen_us` keeps that time, marked screened) and, when the device can
    /// tell, where the time went. By default: a full measurement.
    fn measure_with(
        &mut self,
        plan: &LaunchPlan,
        _screen_us: Option<f64>,
    ) -> (Outcome, Option<MeasureStages>) {
        (self.measure(plan), None)
    }
    /// Announces the plans measured next, in order, so the device can load their modules
    /// while it times the current one. Only a hint: by default nothing.
    fn prefetch(&mut self, _plans: &[&LaunchPlan]) {}
    /// Every later measurement ends by `deadline`: one still running then comes back as
    /// [`Outcome::OutOfTime`] (see [`MeasureDevice::set_deadline`](crate::runtime::MeasureDevice::set_deadline)).
    /// By default ignored (a device whose every measurement is short).
    fn set_deadline(&mut self, _deadline: Option<Instant>) {}
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
    /// Wall time of one problem, every stage included: a campaign starts the clock before
    /// enumerating; [`tune`] alone starts it when called.
    pub time_limit: Option<Duration>,
    /// Stop here (the campaign's per-problem deadline; `time_limit` and `--time-total` both
    /// end in it): nothing is compiled, waited for or measured after it (see [`tune`]).
    pub deadline: Option<Instant>,
    /// Candidates compiled per batch.
    pub batch: usize,
    /// Show a progress bar (a plain line every few seconds when stderr is not a terminal).
    pub progress: bool,
    /// Where the problem stands in its list, for the progress line.
    pub position: Option<ListPosition>,
    /// Adaptive timing: a candidate whose short first measurement is clearly slower than the
    /// best so far keeps that short time (marked screened) instead of a full ≥ 1 ms median.
    pub adaptive: bool,
}

impl Default for TuneOptions {
    fn default() -> Self {
        TuneOptions {
            budget: None,
            time_limit: None,
            deadline: None,
            batch: 32,
            progress: true,
            position: None,
            adaptive: true,
        }
    }
}

impl TuneOptions {
    /// The earlier of the deadline and the time limit counted from `start`.
    pub fn deadline_from(&self, start: Instant) -> Option<Instant> {
        let by_limit = self.time_limit.map(|t| start + t);
        match (self.deadline, by_limit) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

/// A candidate's short first measurement must be this much slower than the best full median so
/// far to be screened: the short median (3 runs) is noisier than the full one, and a candidate
/// within this margin might still win.
pub const SCREEN_MARGIN: f64 = 1.25;

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

/// What the strategy learns from candidate `index`'s outcome: its median, or that it failed.
fn measured_of(index: usize, outcome: &Outcome) -> Measured {
    Measured {
        index,
        time_us: outcome.timing().map(|t| t.median_us),
    }
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
    /// Where the time went (the caller adds the stages before the search: enumerate, reference).
    pub stages: StageTimes,
    /// The deadline stopped the search before the strategy or the budget did.
    pub out_of_time: bool,
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
    /// Count of trials timed only by their short first measurement.
    pub fn screened(&self) -> usize {
        self.trials
            .iter()
            .filter(|t| t.outcome.timing().is_some_and(|t| t.screened))
            .count()
    }
    /// Count of trials that did not produce a verified timing (those cut off by the deadline
    /// are not failures: see [`TuneReport::cut_off`]).
    pub fn failed(&self) -> usize {
        self.trials
            .iter()
            .filter(|t| t.outcome.timing().is_none() && !t.outcome.cut_off())
            .count()
    }
    /// Count of trials cut off by the deadline while they were measured.
    pub fn cut_off(&self) -> usize {
        self.trials.iter().filter(|t| t.outcome.cut_off()).count()
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

/// A candidate's plan (or why not) with the CPU time its compile took; `None` for one skipped
/// because the deadline passed.
type CompiledPlan = Option<(Result<LaunchPlan, String>, Duration)>;

/// One compiled candidate: its position in proposal order, its index, and its plan.
type CompiledOne = (usize, usize, CompiledPlan);

/// One candidate for the compiler: its position in proposal order, its index, its config.
type CompileJob = (usize, usize, PerfConfig);

/// Batches proposed and not yet measured to the end: while one is measured, the next
/// compiles, and the strategy is asked again once the older one is measured.
const OPEN_BATCHES: usize = 2;

/// The compiler: queues every candidate it is sent on the
/// [`compile_pool`](plan::compile_pool) (beside the strategy's ranking), in order, and sends
/// each back as soon as it is compiled, so that measuring starts after the first compile of a
/// batch, not its slowest, and the next batch's compiles start as threads come free (a
/// bwd-weight batch's slowest compile held the GPU idle for seconds; a 9-launch problem
/// measured nothing in 10 s). Nothing waits for it: at the deadline (or when the search has
/// ended, `over`) the search stops waiting, a compile already running (LLVM cannot be
/// interrupted) finishes in the background and is dropped, and candidates not started by
/// then are skipped.
fn spawn_compiler<C>(
    compile: C,
    deadline: Option<Instant>,
    over: Arc<AtomicBool>,
) -> (mpsc::Sender<Vec<CompileJob>>, mpsc::Receiver<CompiledOne>)
where
    C: Fn(&PerfConfig) -> Result<LaunchPlan, String> + Send + Sync + 'static,
{
    let (to_compiler, jobs) = mpsc::channel::<Vec<CompileJob>>();
    let (done, compiled) = mpsc::channel::<CompiledOne>();
    let skip =
        move || over.load(Ordering::Relaxed) || deadline.is_some_and(|d| Instant::now() >= d);
    let compile = Arc::new(compile);
    std::thread::spawn(move || {
        for batch in jobs {
            for (seq, i, config) in batch {
                let (done, compile, skip) = (done.clone(), Arc::clone(&compile), skip.clone());
                plan::spawn_on_compile_pool(move || {
                    let out = if skip() {
                        None
                    } else {
                        let t = Instant::now();
                        let plan = compile(&config);
                        Some((plan, t.elapsed()))
                    };
                    // The search may have ended (its receiver dropped): nothing to do.
                    let _ = done.send((seq, i, out));
                });
            }
        }
    });
    (to_compiler, compiled)
}

/// Compiled candidates that came back, by proposal order: measured in that order (so the
/// search measures the same candidates in the same order however the compiles interleave),
/// and announced to the device for loading as soon as every earlier one has been.
#[derive(Default)]
struct Arrivals {
    by_seq: std::collections::HashMap<usize, (usize, CompiledPlan)>,
    /// The next candidate to announce, and to measure, in proposal order.
    next_announce: usize,
    next_measure: usize,
}

impl Arrivals {
    /// Takes a candidate back.
    fn arrive(&mut self, (seq, i, out): CompiledOne) {
        self.by_seq.insert(seq, (i, out));
    }

    /// The plans that can now be announced (every earlier candidate has come back), in order.
    fn announce(&mut self) -> Vec<&LaunchPlan> {
        // One already measured is gone from `by_seq`: announcing resumes after it.
        self.next_announce = self.next_announce.max(self.next_measure);
        let from = self.next_announce;
        while self.by_seq.contains_key(&self.next_announce) {
            self.next_announce += 1;
        }
        (from..self.next_announce)
            .filter_map(|k| self.by_seq.get(&k)?.1.as_ref()?.0.as_ref().ok())
            .collect()
    }

    /// The next candidate to measure, if it came back.
    fn next(&mut self) -> Option<(usize, CompiledPlan)> {
        let got = self.by_seq.remove(&self.next_measure)?;
        self.next_measure += 1;
        Some(got)
    }
}

/// Runs the search for one problem.
///
/// `compile` turns a config into a launch plan (called from many threads at once); it runs one
/// batch ahead of the measurements so the CPU and the GPU work at the same time, and each
/// candidate is measured as soon as it and those proposed before it are compiled. The deadline
/// holds for every wait: nothing new is compiled or measured after it, waiting for a compiled
/// candidate ends at it (the compile finishes in the background, see [`spawn_compiler`]), and
/// the device cuts off a measurement still running then ([`Evaluate::set_deadline`]: the
/// candidate is recorded as [`Outcome::OutOfTime`], not as a fault). So the run ends within
/// moments of the deadline, with the best verified so far — or none, if none was verified in
/// time.
pub fn tune<C>(
    ctx: &SearchContext<'_>,
    strategy: &mut dyn Strategy,
    compile: C,
    eval: &mut dyn Evaluate,
    record: &mut dyn Record,
    opts: &TuneOptions,
) -> TuneReport
where
    C: Fn(&PerfConfig) -> Result<LaunchPlan, String> + Send + Sync + 'static,
{
    let start = Instant::now();
    let deadline = opts.deadline_from(start);
    let past = move || deadline.is_some_and(|d| Instant::now() >= d);
    eval.set_deadline(deadline);
    let total = opts
        .budget
        .map_or(ctx.candidates.len(), |b| b.min(ctx.candidates.len()));
    let mut progress = Progress::new(
        total as u64,
        opts.progress,
        "timed",
        opts.position.as_ref(),
        deadline,
    );
    let mut trials = Vec::new();
    let mut measured: Vec<Measured> = Vec::new();
    let mut stages = StageTimes::default();
    let mut proposed = 0usize;
    let mut out_of_time = false;
    // The best full median so far: the screen of adaptive timing.
    let mut best_full: Option<f64> = None;
    let candidates = ctx.candidates;
    let over = Arc::new(AtomicBool::new(false));
    let (to_compiler, compiled_rx) = spawn_compiler(compile, deadline, Arc::clone(&over));

    // Candidates sent to the compiler (their proposal-order numbers run from 0), and the end
    // (in that numbering) of each batch not yet measured to the end.
    let mut sent = 0usize;
    let mut open: std::collections::VecDeque<usize> = Default::default();
    let mut arrivals = Arrivals::default();
    let mut exhausted = false;
    loop {
        out_of_time |= past();
        while open
            .front()
            .is_some_and(|&end| arrivals.next_measure >= end)
        {
            open.pop_front();
        }
        // Keep a batch compiling while the one before it is measured.
        while !exhausted && !out_of_time && open.len() < OPEN_BATCHES && proposed < total {
            let want = opts.batch.min(total - proposed);
            let ranking = Instant::now();
            let mut batch = strategy.next_batch(ctx, &measured, want);
            StageTimes::add(&mut stages.rank_s, ranking.elapsed());
            batch.truncate(want);
            if batch.is_empty() {
                exhausted = true;
                break;
            }
            proposed += batch.len();
            // Candidates an earlier run already measured are not compiled again.
            batch.retain(|&i| match record.earlier(&candidates[i]) {
                Some(outcome) => {
                    progress.update(&outcome, true);
                    if let Some(t) = outcome.timing().filter(|t| !t.screened) {
                        best_full = Some(best_full.map_or(t.median_us, |b| b.min(t.median_us)));
                    }
                    measured.push(measured_of(i, &outcome));
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
                let jobs: Vec<CompileJob> = batch
                    .iter()
                    .enumerate()
                    .map(|(k, &i)| (sent + k, i, candidates[i]))
                    .collect();
                sent += jobs.len();
                open.push_back(sent);
                if to_compiler.send(jobs).is_err() {
                    break;
                }
            }
        }
        if arrivals.next_measure >= sent || eval.fatal().is_some() || out_of_time {
            break;
        }
        // Whatever has come back, then (if the next in order has not) wait for more.
        let mut took = 0usize;
        while let Ok(c) = compiled_rx.try_recv() {
            arrivals.arrive(c);
            took += 1;
        }
        // Announced before `next` takes it: a candidate is never measured unannounced.
        announce(&mut arrivals, eval);
        let next = loop {
            if let Some(next) = arrivals.next() {
                break Some(next);
            }
            let waiting = Instant::now();
            let got = match deadline {
                Some(d) => compiled_rx
                    .recv_timeout(d.saturating_duration_since(waiting))
                    .map_err(|e| matches!(e, mpsc::RecvTimeoutError::Timeout)),
                None => compiled_rx.recv().map_err(|_| false),
            };
            StageTimes::add(&mut stages.codegen_wait_s, waiting.elapsed());
            match got {
                Ok(c) => {
                    arrivals.arrive(c);
                    took += 1;
                    while let Ok(c) = compiled_rx.try_recv() {
                        arrivals.arrive(c);
                        took += 1;
                    }
                    announce(&mut arrivals, eval);
                }
                Err(timed_out) => {
                    out_of_time |= timed_out;
                    break None;
                }
            }
        };
        progress.compiled(took);
        announce(&mut arrivals, eval);
        let Some((i, compiled)) = next else {
            break;
        };
        let Some((plan, cpu)) = compiled else {
            out_of_time = true;
            continue;
        };
        StageTimes::add(&mut stages.codegen_s, cpu);
        if past() {
            out_of_time = true;
            continue;
        }
        let outcome = match plan {
            Ok(plan) => {
                let screen = best_full
                    .filter(|_| opts.adaptive)
                    .map(|b| b * SCREEN_MARGIN);
                let measuring = Instant::now();
                let (outcome, split) = eval.measure_with(&plan, screen);
                StageTimes::add(&mut stages.measure_s, measuring.elapsed());
                if let Some(s) = split {
                    stages.load_s += s.load_s;
                    stages.jit_s += s.jit_s;
                    stages.verify_s += s.verify_s;
                    stages.time_s += s.time_s;
                }
                outcome
            }
            Err(e) => Outcome::CompileFailed(e),
        };
        if let Some(t) = outcome.timing().filter(|t| !t.screened) {
            best_full = Some(best_full.map_or(t.median_us, |b| b.min(t.median_us)));
        }
        out_of_time |= outcome.cut_off();
        record.record(&candidates[i], &outcome);
        progress.update(&outcome, false);
        if !outcome.cut_off() {
            // A cut-off candidate says nothing about its kernel: the strategy does not
            // learn from it.
            measured.push(measured_of(i, &outcome));
        }
        trials.push(Trial {
            config: candidates[i],
            outcome,
            resumed: false,
        });
    }
    // Candidates still queued (a fatal device error ended the search) are not compiled.
    over.store(true, Ordering::Relaxed);
    drop(to_compiler);
    eval.set_deadline(None);
    progress.finish();
    stages.total_s = start.elapsed().as_secs_f64();
    TuneReport {
        legal: ctx.candidates.len(),
        trials,
        elapsed: start.elapsed(),
        stages,
        out_of_time,
    }
}

/// Announces to the device, for loading ahead, the compiled plans whose turn is coming.
fn announce(arrivals: &mut Arrivals, eval: &mut dyn Evaluate) {
    let plans = arrivals.announce();
    if !plans.is_empty() {
        eval.prefetch(&plans);
    }
}

#[cfg(test)]
mod campaign_tests;
#[cfg(test)]
mod tests;
