//! Search strategies: which candidates to compile and time next, within a budget.
//!
//! A strategy sees the legal candidates (indices into one slice) and the measurements so far,
//! and proposes the next batch. The tuner owns the budget, de-duplication and legality, so a
//! strategy only ranks; every strategy can therefore be scored against a recording of an
//! exhaustive run with no GPU (see [`replay()`] and the [`replay`](mod@replay) module).
//!
//! - [`Exhaustive`]: every candidate in enumeration order (the baseline recordings come from).
//! - [`Random`]: a seeded shuffle.
//! - [`Guided`] (the default): an analytic [`cost`] model ranks everything, the first batch
//!   measures a diverse top of that ranking, then a local search over the parameter lattice
//!   refines from the measured winners while the model is corrected by what was measured.

pub mod cost;
mod exhaustive;
mod guided;
mod lattice;
pub mod quick_list;
mod random;
pub mod recording;
pub mod replay;
pub mod report;
mod rng;
mod seeded;
pub mod synthetic;

pub use cost::{estimate, CostArch, CostModel, Estimate};
pub use exhaustive::Exhaustive;
pub use guided::Guided;
pub use quick_list::{quick_list, QuickList};
pub use random::Random;
pub use recording::{Prepared, RecordedCandidate, Recording, RecordingError};
pub use replay::{efficiency, efficiency_all, replay, Efficiency, ReplayError};
pub use report::{efficiency_table, percent_of_best, plot_convergence, plot_efficiencies};
pub use seeded::Seeded;

use crate::config::PerfConfig;

/// What one candidate measured: its time in µs, or `None` when it failed (any reason).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Measured {
    /// Index into the candidate slice.
    pub index: usize,
    /// Median time, µs; `None` for a failed candidate.
    pub time_us: Option<f64>,
}

/// Context a strategy may use to rank candidates (the problem and the arch).
pub struct SearchContext<'a> {
    /// The lowered problem.
    pub lowering: &'a crate::lowering::Lowering,
    /// The target, with the SM count of the device when one was queried (the cost model's wave
    /// quantisation depends on it).
    pub arch: &'a crate::arch::Arch,
    /// Every legal candidate; strategies return indices into it.
    pub candidates: &'a [PerfConfig],
}

/// A search strategy.
pub trait Strategy: Send {
    /// Name for `--strategy` and reports.
    fn name(&self) -> &'static str;
    /// Up to `max` indices not yet proposed, best guess first, given all measurements so far
    /// (which may lag one batch behind: the tuner compiles ahead). An empty batch ends the search.
    fn next_batch(
        &mut self,
        ctx: &SearchContext<'_>,
        measured: &[Measured],
        max: usize,
    ) -> Vec<usize>;
}

/// Strategy names accepted by `--strategy`; the first is the default.
pub const STRATEGIES: &[&str] = &["guided", "exhaustive", "random"];

/// Builds a strategy by name; `seed` makes randomised strategies reproducible.
pub fn by_name(name: &str, seed: u64) -> Option<Box<dyn Strategy>> {
    match name {
        "exhaustive" => Some(Box::new(Exhaustive::default())),
        "random" => Some(Box::new(Random::new(seed))),
        "guided" => Some(Box::new(Guided::new(seed))),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
