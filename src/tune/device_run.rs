//! One device's share of a campaign: take problems from the shared queue, tune each through the
//! device, journal every outcome, write each winner to the database and the report file.

use super::campaign_error::CampaignError;
use super::options::CampaignOptions;
use super::report::{Event, ProblemSummary};
use super::report_file::{write_report_file, ReportRow};
use super::{compile_plan, reference_plan, tune, Evaluate, Record};
use crate::arch::Arch;
use crate::config::PerfConfig;
use crate::db::{self, Entry, Journal, TunedDb};
use crate::lowering::lower;
use crate::problem::ConvProblem;
use crate::runtime::{DeviceBackend, LaunchPlan, MeasureDevice, Outcome};
use crate::search::{self, SearchContext};
use crate::space::{enumerate_lowered, SearchSpace};
use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

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
        match self.device.measure(plan) {
            Ok(o) => o,
            Err(e) => {
                self.fatal = Some(e.to_string());
                Outcome::Fault(e.to_string())
            }
        }
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
}

impl Record for JournalRecord<'_> {
    fn earlier(&self, config: &PerfConfig) -> Option<Outcome> {
        let r = self.earlier.get(&(self.key.clone(), config.to_string()))?;
        serde_json::from_value(r.outcome.clone()).ok()
    }
    fn record(&mut self, config: &PerfConfig, outcome: &Outcome) {
        let value = serde_json::to_value(outcome).unwrap_or_default();
        let time = outcome.timing().map(|t| t.median_us);
        if let Err(e) = self
            .journal
            .record(&self.key, &config.to_string(), value, time)
        {
            self.error.get_or_insert(e.to_string());
        }
    }
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
    let mut dev = backend.open(device)?;
    loop {
        let Some(p) = s
            .queue
            .lock()
            .map_err(|_| CampaignError::Panicked)?
            .pop_front()
        else {
            return Ok(());
        };
        let l = lower(&p);
        let e = enumerate_lowered(&l, arch, &s.space);
        let reference = reference_plan(&p, arch).map_err(CampaignError::Reference)?;
        let reference_us = dev
            .set_problem(&p, &reference, opts.seed)
            .map_err(|source| CampaignError::SetProblem {
                problem: p.to_string(),
                source,
            })?;
        let key = p.key();
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
        let mut strategy = search::by_name(&opts.strategy, opts.seed)
            .ok_or_else(|| CampaignError::unknown_strategy(&opts.strategy))?;
        let mut eval = DeviceEval {
            device: dev.as_mut(),
            fatal: None,
        };
        let mut rec = JournalRecord {
            key: key.clone(),
            earlier: &s.earlier,
            journal: &mut journal,
            error: None,
        };
        let inject = opts.inject_faults;
        let compile = |c: &PerfConfig| {
            let faulty = inject > 0
                && e.legal
                    .iter()
                    .position(|x| x == c)
                    .is_some_and(|i| i < inject);
            compile_plan(&l, c, arch, faulty).map_err(|e| e.to_string())
        };
        let mut tune_opts = opts.tune.clone();
        tune_opts.progress = s.progress;
        let report = tune(
            &ctx,
            strategy.as_mut(),
            compile,
            &mut eval,
            &mut rec,
            &tune_opts,
        );
        if let Some(message) = eval.fatal {
            return Err(CampaignError::DeviceLost { device, message });
        }
        if let Some(message) = rec.error {
            return Err(CampaignError::JournalWrite {
                path: journal_path.to_path_buf(),
                message,
            });
        }
        let summary = ProblemSummary::new(key, device, &report);
        (s.observe)(&Event::ProblemDone(&summary));
        if let Some(row) = summary.report_row() {
            write_entry(s, &row)?;
        }
        let mut done = s.done.lock().map_err(|_| CampaignError::Panicked)?;
        done.push(summary);
        if let Some(path) = &opts.report {
            let rows: Vec<ReportRow> = done.iter().filter_map(ProblemSummary::report_row).collect();
            if !rows.is_empty() {
                write_report_file(path, &rows)?;
            }
        }
    }
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
