//! A tuning campaign: a list of problems tuned on one or more devices into the database, resumable
//! from its journal, reported as a typed [`CampaignReport`].
//!
//! The campaign picks the [`DeviceBackend`] of the arch's vendor, checks that the devices are that
//! arch, and runs one thread per device over a shared queue of problems. Each outcome is
//! journalled before the next candidate runs, so a killed run loses nothing and a rerun skips
//! what the journal holds; each winner goes into the database under its file lock.
//!
//! ```no_run
//! use convtune::tune::{Campaign, CampaignOptions, CampaignReport};
//! # fn demo(problems: Vec<convtune::problem::ConvProblem>) -> Result<(), convtune::tune::CampaignError> {
//! let campaign = Campaign::new(CampaignOptions::default())?;
//! let report = campaign.run(problems, &|event| eprintln!("{event}"))?;
//! if let CampaignReport::Tuned(t) = report {
//!     for p in &t.problems {
//!         println!("{}: {:?}", p.problem, p.winner());
//!     }
//! }
//! # Ok(()) }
//! ```

use super::campaign_error::CampaignError;
use super::device_run::{tune_device, Earlier, Shared};
use super::dry_run::dry_run;
pub use super::options::CampaignOptions;
use super::report::{CampaignReport, Event, TuneSetup, TunedReport};
use crate::arch::Arch;
use crate::db::{self, Journal};
use crate::problem::ConvProblem;
use crate::runtime::{self, DeviceBackend, Fingerprint};
use crate::search;
use crate::space::SearchSpace;
use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicUsize;
use std::sync::Mutex;
use std::time::Instant;

/// The database entries `retune` tunes again.
#[derive(Debug, Clone)]
pub struct Stale {
    /// The database read.
    pub path: PathBuf,
    /// Its entries.
    pub entries: usize,
    /// The problems of the stale ones.
    pub problems: Vec<ConvProblem>,
}

impl std::fmt::Display for Stale {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} of {} entries in {} are stale",
            self.problems.len(),
            self.entries,
            self.path.display()
        )
    }
}

/// A validated campaign, ready to run.
#[derive(Debug, Clone)]
pub struct Campaign {
    options: CampaignOptions,
}

impl Campaign {
    /// Checks what can be checked without a device (the strategy's name).
    pub fn new(mut options: CampaignOptions) -> Result<Campaign, CampaignError> {
        if !search::STRATEGIES.contains(&options.strategy.as_str()) {
            return Err(CampaignError::unknown_strategy(&options.strategy));
        }
        options.tune.batch = options.tune.batch.max(1);
        Ok(Campaign { options })
    }

    /// The options it runs with.
    pub fn options(&self) -> &CampaignOptions {
        &self.options
    }

    /// Runs the campaign over `problems` (the shard's share of them) on the backend of the
    /// arch's vendor, telling `observe` what happens as it happens.
    pub fn run(
        &self,
        problems: Vec<ConvProblem>,
        observe: &(dyn Fn(&Event<'_>) + Sync),
    ) -> Result<CampaignReport, CampaignError> {
        if self.options.dry_run {
            return self.dry_run(problems, observe);
        }
        self.run_on(self.backend()?, problems, observe)
    }

    /// [`Campaign::run`] on a given backend.
    pub fn run_on(
        &self,
        backend: &dyn DeviceBackend,
        problems: Vec<ConvProblem>,
        observe: &(dyn Fn(&Event<'_>) + Sync),
    ) -> Result<CampaignReport, CampaignError> {
        let began = Instant::now();
        let o = &self.options;
        if o.dry_run {
            return self.dry_run(problems, observe);
        }
        let problems = self.shard(problems);
        let found = discover(backend)?;
        let primary = o.devices.primary();
        let fp = found.get(primary).ok_or(CampaignError::NoSuchDevice {
            ordinal: primary,
            present: found.len(),
            backend: backend.name(),
        })?;
        let arch = self.arch(&fp.arch)?;
        if arch.name != fp.arch {
            return Err(CampaignError::ArchMismatch {
                arch: arch.name,
                ordinal: primary,
                gpu: fp.gpu.clone(),
                detected: fp.arch.clone(),
            });
        }
        let (space, origin) = self.space(&arch)?;
        let ordinals = o.devices.resolve(found.len())?;
        for &d in &ordinals {
            if found[d].arch != arch.name {
                return Err(CampaignError::MixedDevices {
                    ordinal: d,
                    found: found[d].arch.clone(),
                    arch: arch.name,
                });
            }
        }
        let db_path =
            db::user_db_path(o.db.as_deref(), arch.name).map_err(CampaignError::UserDbPath)?;
        let journal = o
            .journal
            .clone()
            .unwrap_or_else(|| db_path.with_extension("journal.jsonl"));
        if let Some(dir) = journal.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|source| CampaignError::JournalDir {
                path: dir.to_path_buf(),
                source,
            })?;
        }
        // One journal per device (a journal has one writer); a rerun resumes from all of them.
        let journals: Vec<PathBuf> = ordinals
            .iter()
            .map(|&d| journal_for(&journal, d, ordinals.len()))
            .collect();
        let mut earlier = Earlier::new();
        for j in journals.iter().chain(std::iter::once(&journal)) {
            earlier.extend(Journal::load(j).unwrap_or_default());
        }
        let setup = TuneSetup {
            problems: problems.len(),
            arch: arch.name.to_string(),
            fingerprint: fp.clone(),
            devices: ordinals.clone(),
            space: origin,
            strategy: o.strategy.clone(),
            database: db_path.clone(),
            journal,
        };
        observe(&Event::Tuning(&setup));
        let shared = Shared {
            options: o,
            arch,
            space,
            fingerprint: db::Fingerprint::from(fp),
            db_path,
            earlier,
            progress: ordinals.len() == 1 && o.tune.progress,
            count: problems.len(),
            started: AtomicUsize::new(0),
            total_deadline: o.time_total.map(|t| began + t),
            began,
            devices: ordinals.len(),
            queue: Mutex::new(problems.into_iter().collect::<VecDeque<_>>()),
            done: Mutex::new(Vec::new()),
            observe,
        };
        std::thread::scope(|scope| {
            let threads: Vec<_> = ordinals
                .iter()
                .zip(&journals)
                .map(|(&d, j)| {
                    let shared = &shared;
                    scope.spawn(move || tune_device(shared, backend, d, j))
                })
                .collect();
            threads
                .into_iter()
                .map(|t| t.join().unwrap_or(Err(CampaignError::Panicked)))
                .collect::<Result<Vec<()>, _>>()
        })?;
        let not_started = shared
            .queue
            .into_inner()
            .map_err(|_| CampaignError::Panicked)?
            .iter()
            .map(ConvProblem::key)
            .collect();
        let problems = shared
            .done
            .into_inner()
            .map_err(|_| CampaignError::Panicked)?;
        Ok(CampaignReport::Tuned(TunedReport {
            setup,
            problems,
            not_started,
        }))
    }

    /// The database entries that are stale on this machine's GPU (another GPU, driver or
    /// convtune version), as problems to tune again.
    pub fn stale(&self) -> Result<Stale, CampaignError> {
        self.stale_on(self.backend()?)
    }

    /// [`Campaign::stale`] on a given backend.
    pub fn stale_on(&self, backend: &dyn DeviceBackend) -> Result<Stale, CampaignError> {
        let found = discover(backend)?;
        let primary = self.options.devices.primary();
        let fp = found.get(primary).ok_or(CampaignError::NoSuchDevice {
            ordinal: primary,
            present: found.len(),
            backend: backend.name(),
        })?;
        let arch = self.arch(&fp.arch)?;
        let path = db::user_db_path(self.options.db.as_deref(), arch.name)
            .map_err(CampaignError::UserDbPath)?;
        let d = db::TunedDb::load(&path).map_err(CampaignError::StaleDb)?;
        let stale = db::stale(&d, &db::Fingerprint::from(fp), env!("CARGO_PKG_VERSION"));
        let problems = stale
            .iter()
            .map(|e| {
                e.problem.parse().map_err(|err| CampaignError::StaleEntry {
                    path: path.clone(),
                    problem: e.problem.clone(),
                    message: format!("{err}"),
                })
            })
            .collect::<Result<_, _>>()?;
        Ok(Stale {
            entries: d.len(),
            path,
            problems,
        })
    }

    /// The backend of the arch's vendor, or the default one when the GPU is to name the arch.
    fn backend(&self) -> Result<&'static dyn DeviceBackend, CampaignError> {
        match self.options.arch {
            None => Ok(runtime::default_backend()),
            Some(a) => runtime::backend_for(a.vendor).ok_or(CampaignError::NoBackend {
                vendor: a.vendor.name(),
                arch: a.name,
            }),
        }
    }

    /// The arch asked for, else the detected one.
    fn arch(&self, detected: &str) -> Result<Arch, CampaignError> {
        match self.options.arch {
            Some(a) => Ok(a),
            None => Ok(Arch::from_name(detected)?),
        }
    }

    /// The search space and where it came from.
    fn space(&self, arch: &Arch) -> Result<(SearchSpace, String), CampaignError> {
        match &self.options.space {
            Some(path) => SearchSpace::load(path)
                .and_then(|s| {
                    s.check_vendor(arch, &path.display().to_string())
                        .map(|()| s)
                })
                .map(|s| (s, path.display().to_string()))
                .map_err(|source| CampaignError::Space {
                    path: path.clone(),
                    source,
                }),
            None => Ok((
                SearchSpace::default_for(arch),
                crate::space::builtin_origin(arch),
            )),
        }
    }

    fn shard(&self, problems: Vec<ConvProblem>) -> Vec<ConvProblem> {
        match self.options.shard {
            Some(s) => s.select(problems),
            None => problems,
        }
    }

    fn dry_run(
        &self,
        problems: Vec<ConvProblem>,
        observe: &(dyn Fn(&Event<'_>) + Sync),
    ) -> Result<CampaignReport, CampaignError> {
        let arch = self.options.arch.ok_or(CampaignError::NoArch)?;
        let (space, origin) = self.space(&arch)?;
        let problems = self.shard(problems);
        let report = dry_run(&self.options, &arch, &space, origin, &problems, observe)?;
        Ok(CampaignReport::DryRun(report))
    }
}

/// The backend's devices; a backend that finds no driver is "no usable GPU", saying where it
/// looked.
fn discover(backend: &dyn DeviceBackend) -> Result<Vec<Fingerprint>, CampaignError> {
    backend.discover().map_err(|cause| CampaignError::NoGpu {
        looked_for: backend.looked_for(),
        cause,
    })
}

/// The journal of one device: the base path itself when one device tunes, else `<base>.gpuN`.
fn journal_for(base: &Path, device: usize, devices: usize) -> PathBuf {
    if devices == 1 {
        return base.to_path_buf();
    }
    let mut name = base.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".gpu{device}"));
    base.with_file_name(name)
}
