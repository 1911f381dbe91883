//! Search strategies: which candidates to compile and time next, within a budget.
//!
//! A strategy sees the legal candidates (indices into one slice) and the measurements so far,
//! and proposes the next batch. The tuner owns the budget, de-duplication and legality, so a
//! strategy only ranks; every strategy can therefore be scored against a recording of an
//! exhaustive run with no GPU (see `replay`).

mod exhaustive;

pub use exhaustive::Exhaustive;

use crate::space::PerfConfig;

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
    /// Every legal candidate; strategies return indices into it.
    pub candidates: &'a [PerfConfig],
}

/// A search strategy.
pub trait Strategy: Send {
    /// Name for `--strategy` and reports.
    fn name(&self) -> &'static str;
    /// Up to `max` indices not yet proposed, best guess first, given all measurements so far
    /// (which may lag one batch behind: the tuner compiles ahead). An empty batch ends the search.
    fn next_batch(&mut self, ctx: &SearchContext<'_>, measured: &[Measured], max: usize) -> Vec<usize>;
}

/// Strategy names accepted by `--strategy`.
pub const STRATEGIES: &[&str] = &["exhaustive"];

/// Builds a strategy by name; `seed` makes randomised strategies reproducible.
pub fn by_name(name: &str, seed: u64) -> Option<Box<dyn Strategy>> {
    let _ = seed;
    match name {
        "exhaustive" => Some(Box::new(Exhaustive::default())),
        _ => None,
    }
}
