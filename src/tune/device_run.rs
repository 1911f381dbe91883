//! One device's share of a campaign: take problems from the shared queue, tune each through the
//! device, journal every outcome, write each winner to the database and the report file.

use super::campaign_error::CampaignError;
use super::early::EarlyCompiles;
use super::options::CampaignOptions;
use super::report::{Event, ProblemSummary};
use super::report_file::{write_report_file, ReportRow};
use super::{
    compile_plan, reference_plan, tune, Evaluate, ListPosition, Record, StageTimes, TuneReport,
};
use crate::arch::Arch;
use crate::config::PerfConfig;
use crate::db::{self, Entry, Journal, TunedDb};
use crate::lowering::lower;
use crate::problem::ConvProblem;
use crate::runtime::{
    cold_cache, ColdCache, DeviceBackend, LaunchPlan, MeasureDevice, MeasureStages, Outcome,
    RuntimeError,
};
use crate::search::{self, SearchContext, Seeded};
use crate::space::{Enumeration, SearchSpace};
use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Earlier outcomes by (problem key, config string), from the journals of interrupted runs.
pub(super) type Earlier = HashMap<(String, String), db::JournalRecord>;

/// What every device thread shares.
pub(super) struct Shared<'a> {
    pub options: &'a CampaignOptions,
    pub arch: Arch,
    pub space: SearchSpace,
    pub fingerprint: db::Fingerprint,
    pub db_path: PathBuf,
    pub earlier: Earlier,
    /// Draw the progress bar (one device only: bars of several threads would interleave).
    pub progress: bool,
    pub queue: Mutex<VecDeque<ConvProblem>>,
    /// Problems in the list, and how many were started (for "problem i/N").
    pub count: usize,
    pub started: AtomicUsize,
    /// `--time-total`: no problem starts after this, and each gets its share of what is left.
    pub total_deadline: Option<Instant>,
    /// Devices tuning, for the share of the remaining time.
    pub devices: usize,
    /// When the campaign started: each device's first problem counts its time from here, so
    /// finding the GPUs and starting the workers is inside `--time` too.
    pub began: Instant,
    pub done: Mutex<Vec<ProblemSummary>>,
    pub observe: &'a (dyn Fn(&Event<'_>) + Sync),
}

/// Measures through the device; a device that stops answering ends the run.
struct DeviceEval<'a> {
    device: &'a mut dyn MeasureDevice,
    fatal: Option<String>,
}

impl Evaluate for DeviceEval<'_> {
    fn measure(&mut self, plan: &LaunchPlan) -> Outcome {
        self.measure_with(plan, None).0
    }
    fn measure_with(
        &mut self,
        plan: &LaunchPlan,
        screen_us: Option<f64>,
    ) -> (Outcome, Option<MeasureStages>) {
        match self.device.measure_with(plan, screen_us) {
            Ok(r) => r,
            Err(e) => {
                self.fatal = Some(e.to_string());
                (Outcome::Fault(e.to_string()), None)
            }
        }
    }
    fn prefetch(&mut self, plans: &[&LaunchPlan]) {
        // A hint: a worker that cannot take it is replaced when the next candidate is measured.
        let _ = self.device.prefetch(plans);
    }
    fn set_deadline(&mut self, deadline: Option<Instant>) {
        self.device.set_deadline(deadline);
    }
    fn fatal(&self) -> Option<&str> {
        self.fatal.as_deref()
    }
}

/// The journal: earlier outcomes of this problem, and new ones appended as they come.
struct JournalRecord<'a> {
    key: String,
    earlier: &'a Earlier,
    journal: &'a mut Journal,
    error: Option<String>,
    /// When the problem's run started: records are stamped with the seconds since.
    started: Instant,
    /// The cache state this run times in: an earlier time taken in another is not reused.
    cache: ColdCache,
}

impl Record for JournalRecord<'_> {
    fn earlier(&self, config: &PerfConfig) -> Option<Outcome> {
        let r = self.earlier.get(&(self.key.clone(), config.to_string()))?;
        let outcome: Outcome = serde_json::from_value(r.outcome.clone()).ok()?;
        // One cut off by the deadline was never measured: measure it now. So is one timed
        // from another cache state (a journal of an older build), which would not compare.
        let comparable = outcome.timing().is_none_or(|t| t.cache == self.cache);
        (!outcome.cut_off() && comparable).then_some(outcome)
    }
    fn record(&mut self, config: &PerfConfig, outcome: &Outcome) {
        let value = serde_json::to_value(outcome).unwrap_or_default();
        let time = outcome.timing().map(|t| t.median_us);
        if let Err(e) = self.journal.record_at(
            &self.key,
            &config.to_string(),
            value,
            time,
            Some(self.started.elapsed().as_secs_f64()),
        ) {
            self.error.get_or_insert(e.to_string());
        }
    }
}

/// The journal's config field of a problem-level record: the stage timings of a finished
/// problem (`@` never starts a config string, so resuming never mistakes it for a candidate).
pub(super) const STAGES_RECORD: &str = "@stages";

impl JournalRecord<'_> {
    /// Journals where the problem's time went.
    fn record_stages(&mut self, stages: &super::StageTimes) {
        let value = serde_json::to_value(stages).unwrap_or_default();
        let at = Some(self.started.elapsed().as_secs_f64());
        if let Err(e) = self
            .journal
            .record_at(&self.key, STAGES_RECORD, value, None, at)
        {
            self.error.get_or_insert(e.to_string());
        }
    }
}

/// When the problem started at `started` must end: its `--time` limit, and its share of what
/// is left of `--time-total` (this and the `left` problems after it, over the devices).
fn problem_deadline(s: &Shared<'_>, started: Instant, left: usize) -> Option<Instant> {
    let own = s.options.tune.time_limit.map(|t| started + t);
    let share = s.total_deadline.map(|end| {
        let remaining = end.saturating_duration_since(started);
        let turns = (left + 1).div_ceil(s.devices.max(1)).max(1);
        started + remaining / turns as u32
    });
    match (own, share) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// Expected time of the `left` problems after this one on this device (for the list's ETA):
/// their time limit, else the mean time of the finished ones.
fn after_this(s: &Shared<'_>, left: usize) -> Option<Duration> {
    let turns = left.div_ceil(s.devices.max(1)) as u32;
    if let Some(t) = s.options.tune.time_limit {
        return Some(t * turns);
    }
    let done = s.done.lock().ok()?;
    let mean = done.iter().map(|p| p.seconds).sum::<f64>() / done.len().max(1) as f64;
    (!done.is_empty()).then(|| Duration::from_secs_f64(mean * turns as f64))
}

/// Tunes problems from the queue on `device` until the queue is empty.
pub(super) fn tune_device(
    s: &Shared<'_>,
    backend: &dyn DeviceBackend,
    device: usize,
    journal_path: &Path,
) -> Result<(), CampaignError> {
    let arch = &s.arch;
    let opts = s.options;
    let mut journal = Journal::open(journal_path)?;
    // Opened with the first problem, beside its enumeration (starting a worker is a CUDA
    // context: a few tenths of a second of the first problem's fixed cost).
    let mut dev: Option<Box<dyn MeasureDevice>> = None;
    let mut first = true;
    loop {
        let started = if std::mem::take(&mut first) {
            s.began
        } else {
            Instant::now()
        };
        if s.total_deadline.is_some_and(|end| Instant::now() >= end) {
            return Ok(()); // --time-total is spent: what is left stays in the queue
        }
        let (p, left) = {
            let mut queue = s.queue.lock().map_err(|_| CampaignError::Panicked)?;
            let Some(p) = queue.pop_front() else {
                return Ok(());
            };
            (p, queue.len())
        };
        let deadline = problem_deadline(s, started, left);
        let index = s.started.fetch_add(1, Ordering::SeqCst) + 1;
        let l = Arc::new(lower(&p));
        let key = p.key();
        let mut ready = prepare(s, &p, &l, deadline, &mut dev, backend, device)?;
        let reference_us = match ready.reference {
            Ok(us) => us,
            Err(RuntimeError::OutOfTime { .. }) => {
                // The time ran out before the reference did: the problem ends with nothing
                // measured, and the list goes on (the worker restarts for the next problem).
                if let Some(d) = dev.as_mut() {
                    d.set_deadline(None);
                }
                let mut report = TuneReport {
                    legal: ready.e.legal.len(),
                    trials: Vec::new(),
                    elapsed: started.elapsed(),
                    stages: ready.stages,
                    out_of_time: true,
                };
                report.stages.total_s = started.elapsed().as_secs_f64();
                finish_problem(
                    s,
                    key,
                    device,
                    (&report, &[]),
                    None,
                    (&mut journal, journal_path),
                    started,
                )?;
                continue;
            }
            Err(source) => {
                return Err(CampaignError::SetProblem {
                    problem: p.to_string(),
                    source,
                })
            }
        };
        let e = &ready.e;
        let dev = dev.as_mut().ok_or(CampaignError::Panicked)?;
        (s.observe)(&Event::ProblemStarted {
            device,
            problem: &key,
            legal: e.legal.len(),
            raw: e.raw,
            reference_us,
        });
        let ctx = SearchContext {
            lowering: &l,
            arch,
            candidates: &e.legal,
        };
        let strategy = search::by_name(&opts.strategy, opts.seed)
            .ok_or_else(|| CampaignError::unknown_strategy(&opts.strategy))?;
        let mut strategy = Seeded::new(std::mem::take(&mut ready.seeds), strategy);
        let mut eval = DeviceEval {
            device: dev.as_mut(),
            fatal: None,
        };
        let mut rec = JournalRecord {
            key: key.clone(),
            earlier: &s.earlier,
            journal: &mut journal,
            error: None,
            started,
            cache: cold_cache(arch.vendor),
        };
        // The compiler thread outlives the search when the deadline cuts it off (see
        // `tune::spawn_compiler`), so it owns what it reads.
        let faulty: Vec<PerfConfig> = e.legal.iter().take(opts.inject_faults).copied().collect();
        let (lowering, target_arch) = (Arc::clone(&l), *arch);
        let early = ready.early;
        let compile = move |c: &PerfConfig| {
            early.take_or(c, |c| {
                compile_plan(&lowering, c, &target_arch, faulty.contains(c))
                    .map_err(|e| e.to_string())
            })
        };
        let mut tune_opts = opts.tune.clone();
        tune_opts.progress = s.progress;
        tune_opts.deadline = deadline;
        tune_opts.time_limit = None; // folded into the deadline, which counts from `started`
        tune_opts.position = Some(ListPosition {
            index,
            count: s.count,
            problem: key.clone(),
            after: after_this(s, left),
        });
        let mut report = tune(
            &ctx,
            &mut strategy,
            compile,
            &mut eval,
            &mut rec,
            &tune_opts,
        );
        if let Some(message) = eval.fatal {
            return Err(CampaignError::DeviceLost { device, message });
        }
        report.stages.enumerate_s = ready.stages.enumerate_s;
        report.stages.lookup_s = ready.stages.lookup_s;
        report.stages.reference_s = ready.stages.reference_s;
        report.stages.total_s = started.elapsed().as_secs_f64();
        report.elapsed = started.elapsed();
        let error = rec.error;
        finish_problem(
            s,
            key,
            device,
            (&report, &ready.before),
            error,
            (&mut journal, journal_path),
            started,
        )?;
    }
}

/// Journals where a finished problem's time went, reports it, and writes its winner (if any)
/// to the database and the report file.
fn finish_problem(
    s: &Shared<'_>,
    key: String,
    device: usize,
    (report, before): (&TuneReport, &[PerfConfig]),
    journal_error: Option<String>,
    (journal, journal_path): (&mut Journal, &Path),
    started: Instant,
) -> Result<(), CampaignError> {
    let mut rec = JournalRecord {
        key: key.clone(),
        earlier: &s.earlier,
        journal,
        error: journal_error,
        started,
        cache: cold_cache(s.arch.vendor),
    };
    rec.record_stages(&report.stages);
    if let Some(message) = rec.error {
        return Err(CampaignError::JournalWrite {
            path: journal_path.to_path_buf(),
            message,
        });
    }
    let summary = ProblemSummary::new(key, device, report, before);
    (s.observe)(&Event::ProblemDone(&summary));
    if let Some(row) = summary.report_row() {
        write_entry(s, &row)?;
    }
    let mut done = s.done.lock().map_err(|_| CampaignError::Panicked)?;
    done.push(summary);
    if let Some(path) = &s.options.report {
        let rows: Vec<ReportRow> = done.iter().filter_map(ProblemSummary::report_row).collect();
        if !rows.is_empty() {
            write_report_file(path, &rows)?;
        }
    }
    Ok(())
}

/// Puts a winner into the database file, under its lock, beside what other tuners wrote.
fn write_entry(s: &Shared<'_>, row: &ReportRow) -> Result<(), CampaignError> {
    let entry = Entry {
        problem: row.problem.clone(),
        config: row.config.clone(),
        time_us: row.time_us,
        tflops: row.tflops,
        candidates_tried: row.tried as u64,
        fingerprint: s.fingerprint.clone(),
        convtune_version: env!("CARGO_PKG_VERSION").to_string(),
        date: db::today_utc(),
        checksum: String::new(),
    }
    .sealed();
    TunedDb::update_file(&s.db_path, s.arch.name, |db| db.insert(entry))??;
    Ok(())
}

/// The index of `c` among `legal`: appended when the enumeration does not hold it (pruned, or
/// outside the space) but it is among the seeds found legal for the problem (`checked`);
/// `None` when it is not.
fn index_among(
    c: &PerfConfig,
    checked: &[PerfConfig],
    legal: &mut Vec<PerfConfig>,
) -> Option<usize> {
    if let Some(i) = legal.iter().position(|x| x == c) {
        return Some(i);
    }
    checked.contains(c).then(|| {
        legal.push(*c);
        legal.len() - 1
    })
}

/// A problem ready for its search: the legal candidates, the seeds measured first, and the
/// reference's time on the device (or why not), with the stages that got it there.
struct Prepared {
    e: Enumeration,
    /// Indices among `e.legal`, measured first ([`Seeded`]): the lookup's answer, the `--try`
    /// configs legal here, the lookup's next candidates.
    seeds: Vec<usize>,
    /// The lookup's candidates legal here, its answer first (for the report).
    before: Vec<PerfConfig>,
    /// The seeds' compiles, started beside the enumeration.
    early: EarlyCompiles,
    /// `lookup_s`, `enumerate_s` and `reference_s` (which overlap).
    stages: StageTimes,
    reference: Result<f64, RuntimeError>,
}

/// Gets `p` ready for its search with as little on the critical path as can be, three things
/// at once: the lookup, after which the seeds' compiles start ([`EarlyCompiles`]); the
/// enumeration; the device (started here for its first problem) running the reference. The
/// first candidate then waits for the longest of the three, not for their sum (issue 16's
/// fixed cost: bwd-weight 3×3 c256 measured its first candidate after 2.9 s, most of it the
/// lookup, the enumeration and the seed's compile one after the other).
fn prepare(
    s: &Shared<'_>,
    p: &ConvProblem,
    l: &Arc<crate::lowering::Lowering>,
    deadline: Option<Instant>,
    dev: &mut Option<Box<dyn MeasureDevice>>,
    backend: &dyn DeviceBackend,
    device: usize,
) -> Result<Prepared, CampaignError> {
    let arch = s.arch;
    let mut stages = StageTimes::default();
    // The lookup's heuristic comes from the enumeration of the same search.
    let (heuristic_tx, heuristic_rx) = std::sync::mpsc::channel();
    let (seeding, enumerated, reference) = std::thread::scope(|scope| {
        let seeding = scope.spawn(move || {
            let t = Instant::now();
            let early = early_compiler(s, l);
            let looked =
                lookup_candidates(s, p, &early, |_| heuristic_rx.recv().unwrap_or_default());
            let order = measured_first(s, p, &looked);
            let looked_for = t.elapsed();
            // The seeds in the order they are measured, the illegal ones left out (checked
            // here, once: compiling starts from them, and they are indexed from them).
            let checker = crate::legality::Checker::new(l, &arch);
            let order: Vec<PerfConfig> = order
                .into_iter()
                .filter(|c| checker.check(c).is_ok())
                .collect();
            early.start(order.iter().copied());
            (looked, early, order, looked_for)
        });
        let enumerating = scope.spawn(move || {
            let t = Instant::now();
            let e = s.options.enumerate(l, &arch, &s.space);
            // The same picks as the lookup's heuristic from the same search (deterministic
            // results asked for: `enumerate` dropped the atomics already); the vendor space's
            // own configs are the enumeration's first ones.
            let vendor = s.options.space.is_none().then(|| &e.legal[..e.first]);
            let picks = crate::lookup::model_picks(
                l,
                &arch,
                &e.legal,
                vendor,
                crate::lookup::FIRST_USE_CANDIDATES,
            );
            let _ = heuristic_tx.send(picks);
            (e, t.elapsed())
        });
        let referencing = Instant::now();
        let reference = run_reference(s, p, deadline, dev, backend, device);
        let reference_s = referencing.elapsed();
        (
            seeding.join(),
            enumerating.join(),
            reference.map(|r| (r, reference_s)),
        )
    });
    let (looked, early, order, lookup_d) = seeding.map_err(|_| CampaignError::Panicked)?;
    stages.lookup_s = lookup_d.as_secs_f64();
    let (mut e, enumerate_d) = enumerated.map_err(|_| CampaignError::Panicked)?;
    let (reference, reference_d) = reference?;
    stages.enumerate_s = enumerate_d.as_secs_f64();
    stages.reference_s = reference_d.as_secs_f64();
    // Each config looked up once among millions (the lookup's also lead `order`).
    let mut at: HashMap<PerfConfig, Option<usize>> = HashMap::new();
    let mut index = |c: &PerfConfig| {
        *at.entry(*c)
            .or_insert_with(|| index_among(c, &order, &mut e.legal))
    };
    let before: Vec<PerfConfig> = looked
        .iter()
        .filter(|c| index(c).is_some())
        .copied()
        .collect();
    // With deterministic results asked for, a `--try` config that adds by atomics is not run.
    let direction = p.direction();
    let seeds = order
        .iter()
        .filter(|c| !(s.options.deterministic && c.adds_by_atomics(direction)))
        .filter_map(&mut index)
        .collect();
    Ok(Prepared {
        e,
        seeds,
        before,
        early,
        stages,
        reference,
    })
}

/// The configs measured first, in order: the lookup's answer, the `--try` configs for `p`,
/// the lookup's next candidates (after the tries, so that `--try` with `--budget` set to their
/// count times just those).
fn measured_first(s: &Shared<'_>, p: &ConvProblem, looked: &[PerfConfig]) -> Vec<PerfConfig> {
    let key = p.key();
    let tries = s.options.tries.iter().filter(|t| t.applies_to(&key));
    looked
        .first()
        .copied()
        .into_iter()
        .chain(tries.map(|t| t.config))
        .chain(looked.iter().skip(1).copied())
        .collect()
}

/// Where the seeds compile before the search asks for them.
fn early_compiler(s: &Shared<'_>, l: &Arc<crate::lowering::Lowering>) -> EarlyCompiles {
    if s.options.inject_faults > 0 {
        // Injected faults are chosen from the enumeration: nothing compiles before it.
        return EarlyCompiles::default();
    }
    let (lowering, arch) = (Arc::clone(l), s.arch);
    EarlyCompiles::new(move |c| compile_plan(&lowering, c, &arch, false).map_err(|e| e.to_string()))
}

/// Compiles the reference and runs it on the device (opened here if this is its first
/// problem), capped by the problem's deadline. The outer error ends the device's run; the
/// inner one is the reference's own (out of time: the problem ends, the list goes on).
fn run_reference(
    s: &Shared<'_>,
    p: &ConvProblem,
    deadline: Option<Instant>,
    dev: &mut Option<Box<dyn MeasureDevice>>,
    backend: &dyn DeviceBackend,
    device: usize,
) -> Result<Result<f64, RuntimeError>, CampaignError> {
    let reference = reference_plan(p, &s.arch).map_err(CampaignError::Reference)?;
    let dev = match dev {
        Some(d) => d,
        None => dev.insert(backend.open(device)?),
    };
    // The deadline caps the reference run as well as every candidate's measurement.
    dev.set_deadline(deadline);
    Ok(dev.set_problem(p, &reference, s.options.seed))
}

/// The configs `convtune lookup --candidates` answers for `p`
/// ([`crate::lookup::FIRST_USE_CANDIDATES`] of them, the lookup's own answer first) with the
/// database this campaign writes over the system one (inside the space only when `--space` was
/// given, as `lookup --space` does). [`prepare`] appends them to the legal candidates when the
/// enumeration pruned them or the built-in space lacks them (session 11 found a default-space
/// search that never measured its own problem's shipped Hopper entry: 99.5 µs against the
/// entry's 79.8). The search measures them first ([`Seeded`]), so a winner is never slower
/// than the untuned fallback it replaces, a search cut short by its time still has it, and the
/// report says what timing the candidates on first use would have picked. An exact entry
/// starts compiling at once (`early`); `heuristic` gives the cost model's first picks
/// ([`crate::lookup::find_candidates_with`]).
/// Empty when the lookup fails (a database that does not load is reported when the winner is
/// written, not here).
fn lookup_candidates(
    s: &Shared<'_>,
    p: &ConvProblem,
    early: &EarlyCompiles,
    heuristic: impl FnOnce(usize) -> crate::lookup::ModelPicks,
) -> Vec<PerfConfig> {
    let user = if s.db_path.exists() {
        match TunedDb::load(&s.db_path) {
            Ok(d) => Some(d),
            Err(_) => return Vec::new(),
        }
    } else {
        None
    };
    let Ok(system) = db::system(s.arch.name) else {
        return Vec::new();
    };
    let layers = db::Layered {
        system,
        user: user.as_ref(),
    };
    let space = s.options.space.as_ref().map(|_| &s.space);
    let limits = crate::lookup::Limits {
        space,
        deterministic: s.options.deterministic,
    };
    let read = crate::lookup::Read::databases(p, &s.arch, layers, Some(&s.fingerprint), limits);
    // The answer whenever there is an exact entry, known before anything is enumerated.
    early.start(read.exact());
    read.candidates(crate::lookup::FIRST_USE_CANDIDATES, heuristic)
        .map(|found| found.iter().map(|f| f.config).collect())
        .unwrap_or_default()
}
