//! The dry run: enumerate, check and compile each problem's candidates (up to the budget) for an
//! arch, with no GPU and nothing written; the counts say whether a space and a code generator
//! are ready for a new target.

use super::campaign_error::CampaignError;
use super::options::CampaignOptions;
use super::report::{CompiledProblem, DryRunReport, DryRunSetup, Event, Failure};
use super::{compile_only, resource_summary};
use crate::arch::Arch;
use crate::lowering::lower;
use crate::problem::ConvProblem;
use crate::search::{self, SearchContext};
use crate::space::{enumerate_lowered, SearchSpace};

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
    for p in problems {
        let l = lower(p);
        let e = enumerate_lowered(&l, arch, space);
        let ctx = SearchContext {
            lowering: &l,
            arch,
            candidates: &e.legal,
        };
        let mut strategy = search::by_name(&options.strategy, options.seed)
            .ok_or_else(|| CampaignError::unknown_strategy(&options.strategy))?;
        let compiled = compile_only(&ctx, strategy.as_mut(), arch, &options.tune);
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
        };
        observe(&Event::Compiled(&problem));
        out.push(problem);
    }
    Ok(DryRunReport {
        setup,
        problems: out,
    })
}
