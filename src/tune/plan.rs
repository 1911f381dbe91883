//! From a candidate to something the runtime can launch: codegen for the arch, then the
//! launch list the worker runs.

use super::progress::Progress;
use super::{StageTimes, TuneOptions};
use crate::arch::Arch;
use crate::codegen::{self, CodegenCache, CodegenError, Compiled, Target};
use crate::config::PerfConfig;
use crate::lowering::Lowering;
use crate::problem::ConvProblem;
use crate::runtime::{Launch, LaunchPlan};
use crate::search::{SearchContext, Strategy};
use rayon::prelude::*;
use std::sync::mpsc;
use std::time::Instant;

/// The code generator's target for an arch (compiling checks that the kernels can run on it).
pub fn target_for(arch: &Arch) -> Target {
    Target::of(*arch)
}

/// Why a candidate has no launch plan.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// Code generation failed.
    #[error(transparent)]
    Codegen(#[from] CodegenError),
    /// The code object spills registers to scratch (AMD): rejected, not timed.
    #[error("{0}")]
    Spills(String),
}

/// A compiled candidate that spills is rejected with the linker's counts (AMD reports them in
/// the code object; NVIDIA's PTX has none until the driver JITs it).
fn reject_spills(c: Compiled) -> Result<Compiled, PlanError> {
    match c.resources.as_ref().and_then(|r| r.spill_report()) {
        Some(why) => Err(PlanError::Spills(why)),
        None => Ok(c),
    }
}

/// PTX for the CUDA worker, a code object for the HIP one: each runtime refuses the other's.
fn to_plan(c: Compiled) -> Result<LaunchPlan, PlanError> {
    Ok(LaunchPlan {
        module: c.module,
        launches: c
            .kernels
            .into_iter()
            .map(|k| Launch {
                name: k.name,
                grid: k.grid,
                block: k.block,
                shared_bytes: k.shared_bytes,
                args: k.args,
            })
            .collect(),
        workspace_bytes: c.workspace_bytes,
    })
}

/// Compiles a candidate into a launch plan; `faulty` builds the test-only faulting variant.
pub fn compile_plan(
    l: &Lowering,
    cfg: &PerfConfig,
    arch: &Arch,
    faulty: bool,
) -> Result<LaunchPlan, PlanError> {
    let target = target_for(arch);
    let c = if faulty {
        codegen::compile_faulting(l, cfg, target)?
    } else {
        reject_spills(codegen::compile_conv_cached(
            l,
            cfg,
            target,
            CodegenCache::from_env(),
        )?)?
    };
    to_plan(c)
}

/// The direct-convolution reference kernel's plan.
pub fn reference_plan(p: &ConvProblem, arch: &Arch) -> Result<LaunchPlan, PlanError> {
    to_plan(codegen::compile_reference(p, target_for(arch))?)
}

/// What a dry run compiled for one problem, and where its time went.
pub struct CompiledOnly {
    /// Each candidate compiled, in the order the strategy picked them.
    pub compiled: Vec<(PerfConfig, Result<Compiled, String>)>,
    /// Rank and codegen times (codegen in CPU seconds over the threads).
    pub stages: StageTimes,
    /// The deadline stopped compiling before the budget did.
    pub out_of_time: bool,
}

/// Compiles the candidates a strategy picks (up to the budget, until the options' deadline)
/// without running anything: the dry run.
pub fn compile_only(
    ctx: &SearchContext<'_>,
    strategy: &mut dyn Strategy,
    arch: &Arch,
    opts: &TuneOptions,
) -> CompiledOnly {
    let start = Instant::now();
    let deadline = opts.deadline_from(start);
    let past = move || deadline.is_some_and(|d| Instant::now() >= d);
    let total = opts.budget.unwrap_or(usize::MAX).min(ctx.candidates.len());
    let target = target_for(arch);
    let cache = CodegenCache::from_env();
    let mut stages = StageTimes::default();
    let mut picked = Vec::new();
    let ranking = Instant::now();
    while picked.len() < total {
        let batch = strategy.next_batch(ctx, &[], (total - picked.len()).min(opts.batch.max(1)));
        if batch.is_empty() {
            break;
        }
        picked.extend(batch);
    }
    StageTimes::add(&mut stages.rank_s, ranking.elapsed());
    let mut progress = Progress::new(
        picked.len() as u64,
        opts.progress,
        "compiled",
        opts.position.as_ref(),
        deadline,
    );
    // Compiled on a thread of their own that the deadline does not wait for: a compile already
    // running then (LLVM cannot be interrupted) finishes in the background and is dropped, so
    // the dry run holds `--time` like the tuner does.
    let (done, results) = mpsc::channel();
    let lowering = ctx.lowering.clone();
    let jobs: Vec<(usize, PerfConfig)> = picked
        .iter()
        .enumerate()
        .map(|(n, &i)| (n, ctx.candidates[i]))
        .collect();
    let count = jobs.len();
    std::thread::spawn(move || {
        jobs.into_par_iter().for_each_with(done, |done, (n, cfg)| {
            if past() {
                return;
            }
            let t = Instant::now();
            let r = codegen::compile_conv_cached(&lowering, &cfg, target, cache)
                .map_err(PlanError::from)
                .and_then(reject_spills)
                .map_err(|e| e.to_string());
            let _ = done.send((n, cfg, r, t.elapsed()));
        })
    });
    let mut out = Vec::with_capacity(count);
    while out.len() < count {
        let got = match deadline {
            Some(d) => results
                .recv_timeout(d.saturating_duration_since(Instant::now()))
                .ok(),
            None => results.recv().ok(),
        };
        let Some((n, cfg, r, cpu)) = got else { break };
        progress.compiled_one(r.is_ok());
        out.push((n, cfg, r, cpu));
    }
    progress.finish();
    let out_of_time = out.len() < count;
    // In the order the strategy picked them, as before.
    out.sort_by_key(|o| o.0);
    let mut compiled = Vec::with_capacity(out.len());
    for (_, cfg, r, cpu) in out {
        StageTimes::add(&mut stages.codegen_s, cpu);
        compiled.push((cfg, r));
    }
    stages.total_s = start.elapsed().as_secs_f64();
    CompiledOnly {
        compiled,
        stages,
        out_of_time,
    }
}

/// One line on the resources of the compiled candidates (AMD: registers, LDS, spills).
pub fn resource_summary(compiled: &[(PerfConfig, Result<Compiled, String>)]) -> Option<String> {
    let reports: Vec<String> = compiled
        .iter()
        .filter_map(|(_, c)| c.as_ref().ok())
        .filter(|c| c.resources.is_some())
        .map(codegen::resource_report)
        .collect();
    let first = reports.first()?;
    Some(format!(
        "resources of {} code objects; first: {}",
        reports.len(),
        first.lines().collect::<Vec<_>>().join("; ")
    ))
}
