//! What a campaign is asked to do: its own file so that the campaign and the per-device and
//! dry-run steps it calls all read it without importing each other.

use super::devices::{Devices, Shard};
use super::TuneOptions;
use crate::arch::Arch;
use crate::config::PerfConfig;
use std::path::PathBuf;
use std::time::Duration;

/// Everything a campaign is asked to do, already parsed.
#[derive(Debug, Clone)]
pub struct CampaignOptions {
    /// The arch to tune for; `None`: the GPU's own.
    pub arch: Option<Arch>,
    /// A search-space file; `None`: the built-in space of the arch's vendor.
    pub space: Option<PathBuf>,
    /// Search strategy by name (see [`crate::search::STRATEGIES`]).
    pub strategy: String,
    /// Seed for the random inputs and the randomised strategies.
    pub seed: u64,
    /// Budget, time limit, batch size and progress bar of each problem's search.
    pub tune: TuneOptions,
    /// Wall time of the whole list: each problem gets at most its share of what is left, and
    /// no problem starts after it (those are reported as not started).
    pub time_total: Option<Duration>,
    /// Which devices tune.
    pub devices: Devices,
    /// The database to write; `None`: the user database ([`crate::db::user_db_path`]).
    pub db: Option<PathBuf>,
    /// The journal; `None`: beside the database.
    pub journal: Option<PathBuf>,
    /// A JSON file of the winners, merged with what is there.
    pub report: Option<PathBuf>,
    /// Tune only every n-th problem of the list.
    pub shard: Option<Shard>,
    /// Enumerate, check and compile only: no GPU, nothing written.
    pub dry_run: bool,
    /// Test only: the first this-many legal candidates are built to fault.
    pub inject_faults: usize,
    /// Configs measured first where they are legal (after the untuned fallback's, before what
    /// the strategy proposes): another database's winners, a quick list, a colleague's guess,
    /// each on every problem or on one. With `--budget` equal to their count, a run times
    /// exactly those (the lookup's config, measured first, counts too): how each tuned
    /// problem's winner does on the others, or a fallback's picks against the tuned winners.
    pub tries: Vec<Try>,
    /// Only candidates whose results are the same bits on every run (no floating-point
    /// atomics, [`PerfConfig::adds_by_atomics`]): split-K by the fix-up, depthwise backward
    /// weight as partials, as a deterministic lookup answers ([`crate::lookup::Limits`]).
    pub deterministic: bool,
}

/// A config to measure first ([`CampaignOptions::tries`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Try {
    /// The key ([`crate::problem::ConvProblem::key`]) of the one problem it is for; `None`:
    /// every problem of the list where it is legal.
    pub problem: Option<String>,
    /// The config.
    pub config: PerfConfig,
}

impl Try {
    /// A config for every problem.
    pub fn everywhere(config: PerfConfig) -> Try {
        Try {
            problem: None,
            config,
        }
    }

    /// Whether it is for the problem of key `key`.
    pub fn applies_to(&self, key: &str) -> bool {
        self.problem.as_deref().is_none_or(|k| k == key)
    }
}

impl Default for CampaignOptions {
    fn default() -> Self {
        CampaignOptions {
            arch: None,
            space: None,
            strategy: "guided".into(),
            seed: 1,
            tune: TuneOptions::default(),
            time_total: None,
            devices: Devices::One(0),
            db: None,
            journal: None,
            report: None,
            shard: None,
            dry_run: false,
            inject_faults: 0,
            tries: Vec::new(),
            deterministic: false,
        }
    }
}

impl CampaignOptions {
    /// The legal candidates of `lowering`'s search ([`crate::space::enumerate_search`]).
    pub fn enumerate(
        &self,
        lowering: &crate::lowering::Lowering,
        arch: &Arch,
        space: &crate::space::SearchSpace,
    ) -> crate::space::Enumeration {
        let given = self.space.is_some();
        let mut e = crate::space::enumerate_search(lowering, arch, space, given);
        if self.deterministic {
            crate::lookup::enumeration_without_atomics(lowering, arch, &mut e);
        }
        e
    }
}
