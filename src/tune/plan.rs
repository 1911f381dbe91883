//! From a candidate to something the runtime can launch: codegen for the arch, then the
//! launch list the worker runs.

use super::progress::Progress;
use super::{StageTimes, TuneOptions};
use crate::arch::Arch;
use crate::codegen::{self, CodegenCache, CodegenError, CompileSteps, Compiled, Target};
use crate::config::PerfConfig;
use crate::lowering::Lowering;
use crate::problem::ConvProblem;
use crate::runtime::{Launch, LaunchPlan};
use crate::search::{SearchContext, Strategy};
use rayon::prelude::*;
use std::sync::mpsc;
use std::time::Instant;

/// The thread pool candidates compile on: one of their own, as many threads as cores, so that
/// the strategy's parallel ranking (on rayon's global pool) runs beside a batch's compiles
/// instead of queueing behind them. On the global pool a ranking call waited for every
/// compile of the batch in flight (LLVM runs up to seconds a candidate), which in the dry run
/// put 5–6 s of waiting into a 5 s run's rank time. `None` when no pool could be made (the
/// global one is used).
pub(super) fn compile_pool() -> Option<&'static rayon::ThreadPool> {
    static POOL: std::sync::OnceLock<Option<rayon::ThreadPool>> = std::sync::OnceLock::new();
    POOL.get_or_init(|| {
        rayon::ThreadPoolBuilder::new()
            .thread_name(|i| format!("convtune-compile-{i}"))
            .build()
            .ok()
    })
    .as_ref()
}

/// Runs `f` on the [`compile_pool`].
pub(super) fn on_compile_pool<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    match compile_pool() {
        Some(pool) => pool.install(f),
        None => f(),
    }
}

/// Queues `f` on the [`compile_pool`], first come first served, without waiting for it: the
/// tuner queues each candidate so that the next batch's compiles start as threads come free,
/// not after the slowest compile of the batch before.
pub(super) fn spawn_on_compile_pool(f: impl FnOnce() + Send + 'static) {
    match compile_pool() {
        Some(pool) => pool.spawn_fifo(f),
        None => rayon::spawn_fifo(f),
    }
}

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
        kept_zero: c.kept_zero,
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
    /// The codegen of the candidates compiled without error, step by step.
    pub steps: CompileSteps,
    /// The deadline stopped compiling before the budget did.
    pub out_of_time: bool,
}

/// One compiled candidate of the dry run: its position in the strategy's order, its config,
/// the code (or why not) and the CPU time it took.
type DryCompiled = (
    usize,
    PerfConfig,
    Result<Compiled, String>,
    std::time::Duration,
);

/// Batches of the dry run compiled ahead of the one whose results are awaited: like the tuner,
/// the strategy proposes the next batch while the compiler works on the last one.
const DRY_BATCHES_AHEAD: usize = 2;

/// Compiles the candidates a strategy picks (up to the budget, until the options' deadline)
/// without running anything: the dry run.
///
/// The strategy is asked batch by batch, as the tuner asks it, with at most
/// [`DRY_BATCHES_AHEAD`] batches at the compiler: so the first candidate compiles as soon as the
/// first batch is ranked (not after the whole space is, which for the guided strategy costs a
/// pass over every candidate per batch), and the deadline stops the ranking too.
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
    let mut progress = Progress::new(
        total as u64,
        opts.progress,
        "compiled",
        opts.position.as_ref(),
        deadline,
    );
    // Compiled on a thread of their own that the deadline does not wait for: a compile already
    // running then (LLVM cannot be interrupted) finishes in the background and is dropped, so
    // the dry run holds `--time` like the tuner does. Each candidate is sent back as it
    // finishes, so those done by the deadline count.
    let (to_compiler, jobs) = mpsc::channel::<Vec<(usize, PerfConfig)>>();
    let (done, results) = mpsc::channel::<DryCompiled>();
    let lowering = ctx.lowering.clone();
    std::thread::spawn(move || {
        for batch in jobs {
            on_compile_pool(|| {
                batch
                    .into_par_iter()
                    .for_each_with(done.clone(), |done, (n, cfg)| {
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
        }
    });
    let mut out: Vec<DryCompiled> = Vec::new();
    // Candidates sent to the compiler, and the end (in that count) of each batch in flight.
    let mut sent = 0usize;
    let mut batch_ends: std::collections::VecDeque<usize> = Default::default();
    let mut exhausted = false;
    let mut out_of_time = false;
    loop {
        out_of_time |= past() && !exhausted && sent < total;
        while !exhausted && !out_of_time && batch_ends.len() < DRY_BATCHES_AHEAD && sent < total {
            let ranking = Instant::now();
            let mut batch = strategy.next_batch(ctx, &[], (total - sent).min(opts.batch.max(1)));
            StageTimes::add(&mut stages.rank_s, ranking.elapsed());
            batch.truncate(total - sent);
            if batch.is_empty() {
                exhausted = true;
                break;
            }
            let jobs: Vec<(usize, PerfConfig)> = batch
                .iter()
                .enumerate()
                .map(|(k, &i)| (sent + k, ctx.candidates[i]))
                .collect();
            sent += jobs.len();
            batch_ends.push_back(sent);
            progress.compiling(jobs.len());
            if to_compiler.send(jobs).is_err() {
                exhausted = true;
            }
        }
        let Some(&end) = batch_ends.front() else {
            break;
        };
        // Wait for the oldest batch in flight.
        while out.len() < end {
            let got = match deadline {
                Some(d) => results
                    .recv_timeout(d.saturating_duration_since(Instant::now()))
                    .ok(),
                None => results.recv().ok(),
            };
            let Some(r) = got else {
                out_of_time = true;
                break;
            };
            progress.compiled_one(r.2.is_ok());
            out.push(r);
        }
        if out_of_time {
            break;
        }
        batch_ends.pop_front();
    }
    drop(to_compiler);
    progress.finish();
    out_of_time |= out.len() < sent;
    // In the order the strategy picked them.
    out.sort_by_key(|o| o.0);
    let mut compiled = Vec::with_capacity(out.len());
    let mut steps = CompileSteps::default();
    for (_, cfg, r, cpu) in out {
        StageTimes::add(&mut stages.codegen_s, cpu);
        if let Ok(c) = &r {
            steps = steps.plus(c.steps);
        }
        compiled.push((cfg, r));
    }
    stages.total_s = start.elapsed().as_secs_f64();
    CompiledOnly {
        compiled,
        stages,
        steps,
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
