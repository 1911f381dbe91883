//! The dry run: enumerate, check and compile each problem's candidates (up to the budget) for an
//! arch, with no GPU and nothing written; the counts say whether a space and a code generator
//! are ready for a new target.

use super::campaign_error::CampaignError;
use super::options::CampaignOptions;
use super::report::{CompiledProblem, DryRunReport, DryRunSetup, Event, Failure};
use super::{compile_only, resource_summary};
use super::{ListPosition, TuneOptions};
use crate::arch::Arch;
use crate::lowering::lower;
use crate::problem::ConvProblem;
use crate::search::{self, SearchContext};
use crate::space::SearchSpace;
use std::time::{Duration, Instant};

/// Compiles every problem's candidates; the options' strategy picks which ones when a budget
/// cuts the list.
pub(super) fn dry_run(
    options: &CampaignOptions,
    arch: &Arch,
    space: &SearchSpace,
    origin: String,
    problems: &[ConvProblem],
    observe: &(dyn Fn(&Event<'_>) + Sync),
) -> Result<DryRunReport, CampaignError> {
    let setup = DryRunSetup {
        arch: arch.name.to_string(),
        product: arch.product.to_string(),
        space: origin,
    };
    observe(&Event::DryRun(&setup));
    let mut out = Vec::new();
    let total_deadline = options.time_total.map(|t| Instant::now() + t);
    for (n, p) in problems.iter().enumerate() {
        let started = Instant::now();
        if total_deadline.is_some_and(|end| started >= end) {
            break; // --time-total is spent
        }
        let left = problems.len() - n - 1;
        let mut tune = options.tune.clone();
        let share = total_deadline
            .map(|end| started + end.saturating_duration_since(started) / (left as u32 + 1));
        tune.deadline = [tune.time_limit.map(|t| started + t), share]
            .into_iter()
            .flatten()
            .min();
        tune.time_limit = None;
        tune.position = Some(ListPosition {
            index: n + 1,
            count: problems.len(),
            problem: p.key(),
            after: after_this(&options.tune, &out, left),
        });
        let l = lower(p);
        let e = options.enumerate(&l, arch, space);
        let enumerate_s = started.elapsed().as_secs_f64();
        let ctx = SearchContext {
            lowering: &l,
            arch,
            candidates: &e.legal,
        };
        let mut strategy = search::by_name(&options.strategy, options.seed)
            .ok_or_else(|| CampaignError::unknown_strategy(&options.strategy))?;
        let only = compile_only(&ctx, strategy.as_mut(), arch, &tune);
        let compiled = only.compiled;
        let mut stages = only.stages;
        stages.enumerate_s = enumerate_s;
        stages.total_s = started.elapsed().as_secs_f64();
        let failed = compiled.iter().filter(|c| c.1.is_err()).count();
        let problem = CompiledProblem {
            problem: p.key(),
            raw: e.raw,
            legal: e.legal.len(),
            compiled: compiled.len() - failed,
            failed,
            first_failure: compiled.iter().find_map(|(cfg, r)| {
                r.as_ref().err().map(|err| Failure {
                    config: cfg.to_string(),
                    reason: err.clone(),
                })
            }),
            resources: resource_summary(&compiled),
            seconds: stages.total_s,
            stages,
            steps: only.steps,
            out_of_time: only.out_of_time,
        };
        observe(&Event::Compiled(&problem));
        out.push(problem);
    }
    Ok(DryRunReport {
        setup,
        problems: out,
    })
}

/// Expected time of the `left` problems after this one (for the list's ETA): their time
/// limit, else the mean time of the problems done.
fn after_this(o: &TuneOptions, done: &[CompiledProblem], left: usize) -> Option<Duration> {
    if let Some(t) = o.time_limit {
        return Some(t * left as u32);
    }
    let mean = done.iter().map(|p| p.seconds).sum::<f64>() / done.len().max(1) as f64;
    (!done.is_empty()).then(|| Duration::from_secs_f64(mean * left as f64))
}
