//! LLVM kernels for the lowered GEMMs: PTX for NVIDIA, code objects for AMD, and the same
//! kernels JIT-compiled for the host so they can be run and checked without a GPU.
//!
//! A candidate (one [`PerfConfig`] for one [`Lowering`]) becomes one module holding every launch
//! in order: a zero-init kernel when the written tensor is not fully covered by the GEMMs or
//! split-K accumulates, one kernel per sub-GEMM, and a split-K finishing pass for f16/bf16 —
//! except strided backward data without split-K, whose sub-GEMMs and zeroing run in one
//! kernel (`phased`).
//! Every kernel takes the arguments of [`Kernel::args`] (today [`crate::abi::CONV_ARGS`]: the
//! tensors in their own layouts and a scratch buffer of [`Compiled::workspace_bytes`], null
//! when 0), and uses dynamic shared memory of [`Kernel::shared_bytes`].
//!
//! ```no_run
//! use convtune::arch::Arch;
//! use convtune::codegen::{compile_conv, Target};
//! use convtune::lowering::lower;
//! use convtune::config::PerfConfig;
//! let p = "convbfp16 -n 16 -c 64 -H 14 -W 14 -k 64 -y 3 -x 3 -p 1 -q 1 --layout NHWC".parse().unwrap();
//! let cfg: PerfConfig = "v1:bm=64,bn=64,bk=32,wm=32,wn=32,st=2,va=1,vb=1,vc=1,lds=pad,sk=1,rs=1".parse().unwrap();
//! let c = compile_conv(&lower(&p), &cfg, Target::of(Arch::SM_90)).unwrap();
//! assert!(c.module.ptx().unwrap().contains("mma.sync"));
//! ```
//!
//! Layers: `ir` (target-free verbs over inkwell), `spec` (the `TargetSpec` trait and the
//! instruction families a target has or lacks; NVPTX, AMDGPU and the host emulator implement
//! them), `builder` (the kernel builder: `ir` plus the target verbs), `target` (the public
//! [`Target`]), `plan` (every compile-time decision, including which families a config needs;
//! its parts in `plan_math`, `plan_load`, `plan_smem`),
//! `index`, `loader`, `math`, `schedule` (tile schedulers), `mainloop` (K loops), `tma` (the TMA + mbarrier K loop), `gemm`,
//! `simple` (the kernel logic, written once), `machine` (LLVM passes and emission), [`emu`]
//! (running the same kernels on the CPU).

mod amd_meta;
mod amdgpu;
mod builder;
mod cache;
mod compile;
mod depthwise;
pub mod emu;
mod epilogue_tma;
mod error;
mod fixup;
mod gemm;
mod index;
mod ir;
mod loader;
mod machine;
mod mainloop;
mod math;
mod nvptx;
mod nvptx_barriers;
mod nvptx_tma;
mod nvptx_wgmma;
mod phase_consts;
mod phased;
mod plan;
mod plan_load;
mod plan_math;
mod plan_smem;
mod ptx_waits;
mod relayout;
mod report;
mod schedule;
mod schedule_persistent;
mod schedule_phase;
mod simple;
mod smem;
mod spec;
mod steps;
mod streamk;
mod target;
mod tma;
mod ws;
mod ws_pingpong;

pub use amd_meta::{
    read as read_code_object, unified_vgprs, AmdKernelArg, AmdKernelResources, AmdResources,
};
pub use cache::{CodegenCache, CACHE_ENV};
#[doc(hidden)]
pub use epilogue_tma::{with_store_fault, StoreFault};
pub use error::CodegenError;
pub use fixup::with_counters_kept;
#[doc(hidden)]
pub use phased::{with_phased_fault, PhasedFault};
pub use report::{resource_report, PtxCounts};
pub use spec::Capability;
pub use steps::CompileSteps;
pub use target::Target;
#[doc(hidden)]
pub use ws::{with_cluster_fault, with_ring_reset_per_unit, ClusterFault};
pub use ws_pingpong::{with_ping_pong_fault, PingPongFault};

pub use crate::abi::Module;

use crate::abi::KernelArg;
use crate::arch::Vendor;
use crate::config::PerfConfig;
use crate::lowering::Lowering;
use crate::problem::ConvProblem;
use compile::{guarded, spec_for, Job};
use inkwell::context::Context;

/// One launch: what the runtime needs to run a kernel of a [`Compiled`] module.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kernel {
    /// Symbol name in the module.
    pub name: String,
    /// Grid in blocks.
    pub grid: [u32; 3],
    /// Block in threads.
    pub block: [u32; 3],
    /// Dynamic shared memory to pass at launch, bytes.
    pub shared_bytes: u32,
    /// The kernel's parameters, in order (see [`crate::abi`]).
    pub args: Vec<KernelArg>,
    /// Blocks per thread-block cluster along x (1: none). Compiled into the kernel
    /// (`.reqnctapercluster`), so a plain launch forms the clusters; the grid is a multiple.
    pub cluster: u32,
}

/// All launches of one candidate (or of the reference), compiled for one target.
#[derive(Debug, Clone)]
pub struct Compiled {
    /// What it was compiled for.
    pub target: Target,
    /// PTX (NVIDIA) or a linked code object (AMD).
    pub module: Module,
    /// Launches, in the order they must run.
    pub kernels: Vec<Kernel>,
    /// Bytes of the scratch buffer passed as the fourth argument (0: pass null).
    pub workspace_bytes: u64,
    /// Bytes at the workspace's start that must be zero when the plan starts and that it
    /// leaves zero ([`crate::abi::KEPT_ZERO_BYTES`] or 0).
    pub kept_zero: u64,
    /// Register and memory use per kernel, from the code object's metadata (AMD only).
    pub resources: Option<AmdResources>,
    /// Where the compile's time went.
    pub steps: CompileSteps,
}

/// The launches of a candidate, planned without compiling anything.
#[derive(Debug, Clone)]
pub struct Planned {
    /// Launches, in the order they must run.
    pub kernels: Vec<Kernel>,
    /// Bytes of the scratch buffer (0: pass null).
    pub workspace_bytes: u64,
    /// Bytes at the workspace's start that must be zero when the plan starts and that it
    /// leaves zero ([`crate::abi::KEPT_ZERO_BYTES`] or 0).
    pub kept_zero: u64,
}

/// The launches of a candidate without compiling anything: grids, blocks, shared memory and
/// workspace, or why the config cannot be generated. Cheap; legality and schedulers use it.
pub fn launches(
    lowering: &Lowering,
    cfg: &PerfConfig,
    target: Target,
) -> Result<Planned, CodegenError> {
    let l = compile::plan(
        Job::Conv {
            lowering,
            cfg,
            fault: false,
        },
        spec_for(target, false).as_ref(),
    )?;
    Ok(Planned {
        kernels: l.kernels.into_iter().map(|(k, _)| k).collect(),
        workspace_bytes: l.workspace_bytes,
        kept_zero: l.kept_zero,
    })
}

/// Compiles every launch of one candidate. Safe to call from many threads at once (each call
/// has its own LLVM context).
pub fn compile_conv(
    lowering: &Lowering,
    cfg: &PerfConfig,
    target: Target,
) -> Result<Compiled, CodegenError> {
    compile_conv_cached(lowering, cfg, target, None)
}

/// [`compile_conv`] through a [`CodegenCache`]: a candidate whose generated IR was compiled
/// before for the same target, LLVM and linker gets the stored module (the same bytes) without
/// running the optimiser, the back end or the linker again.
pub fn compile_conv_cached(
    lowering: &Lowering,
    cfg: &PerfConfig,
    target: Target,
    cache: Option<&CodegenCache>,
) -> Result<Compiled, CodegenError> {
    compile_job(
        Job::Conv {
            lowering,
            cfg,
            fault: false,
        },
        target,
        cache,
    )
}

/// Like [`compile_conv`], but the GEMM kernels also store to an address ~1 TiB past the written
/// tensor: a kernel that is certain to fault, for testing that the runtime isolates faults.
pub fn compile_faulting(
    lowering: &Lowering,
    cfg: &PerfConfig,
    target: Target,
) -> Result<Compiled, CodegenError> {
    compile_job(
        Job::Conv {
            lowering,
            cfg,
            fault: true,
        },
        target,
        None,
    )
}

/// The direct convolution, one thread per written element with f32 accumulation: the GPU-side
/// oracle that candidates are verified against (it is itself checked against the CPU reference).
pub fn compile_reference(problem: &ConvProblem, target: Target) -> Result<Compiled, CodegenError> {
    compile_job(Job::Reference(problem), target, None)
}

/// The instruction families `target` has (what configs it can be planned for).
pub fn capabilities(target: Target) -> Vec<Capability> {
    spec::capabilities(spec_for(target, false).as_ref())
}

fn compile_job(
    job: Job,
    target: Target,
    cache: Option<&CodegenCache>,
) -> Result<Compiled, CodegenError> {
    let arch_specific = matches!(job, Job::Conv { cfg, .. } if cfg.mma.is_wgmma());
    let spec = spec_for(target, arch_specific);
    let mut steps = CompileSteps::default();
    let launches = steps.time(|s| &mut s.ir_s, || compile::plan(job, spec.as_ref()))?;
    guarded(|| {
        let tm = machine::machine(spec.as_ref())?;
        let ctx = Context::create();
        let module = steps.time(
            |s| &mut s.ir_s,
            || -> Result<_, CodegenError> {
                let module = machine::new_module(&ctx, spec.as_ref(), &tm, "convtune")?;
                compile::emit(&ctx, &module, spec.as_ref(), &launches);
                Ok(module)
            },
        )?;
        let (key, stored) = steps.time(
            |s| &mut s.cache_s,
            || {
                let key = cache
                    .map(|c| c.key(module.write_bitcode_to_memory().as_slice(), spec.as_ref()));
                let stored = cache.zip(key.as_ref()).and_then(|(c, k)| c.get(k));
                (key, stored)
            },
        );
        let kernels: Vec<Kernel> = launches.kernels.iter().map(|(k, _)| k.clone()).collect();
        let module = match stored {
            Some(m) => m,
            None => {
                steps.time(|s| &mut s.optimise_s, || machine::optimize(&module, &tm))?;
                let m = steps.time(
                    |s| &mut s.backend_s,
                    || -> Result<_, CodegenError> {
                        Ok(match target.arch().vendor {
                            Vendor::Nvidia => Module::Ptx(nvptx::cluster_directives(
                                machine::emit_ptx(&module, &tm)?,
                                &kernels,
                            )?),
                            Vendor::Amd => {
                                Module::CodeObject(machine::emit_code_object(&module, &tm)?)
                            }
                        })
                    },
                )?;
                if let (Some(c), Some(k)) = (cache, &key) {
                    steps.time(|s| &mut s.cache_s, || c.put(k, &m));
                }
                m
            }
        };
        let resources = match &module {
            Module::CodeObject(co) => Some(amd_meta::read(co)?),
            Module::Ptx(_) => None,
        };
        Ok(Compiled {
            target,
            module,
            kernels,
            workspace_bytes: launches.workspace_bytes,
            kept_zero: launches.kept_zero,
            resources,
            steps,
        })
    })
}

/// Runs `f` (which emits kernels on this thread) with the thread-local test hook `hook` set to
/// `value`, then resets it to its default, also when `f` panics (the panic goes on): the one
/// shape of every `with_*_fault` hook the emulator tests use to emit a broken protocol.
pub(crate) fn with_test_hook<T: Copy + Default + 'static, R>(
    hook: &'static std::thread::LocalKey<std::cell::Cell<T>>,
    value: T,
    f: impl FnOnce() -> R,
) -> R {
    hook.with(|h| h.set(value));
    let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    hook.with(|h| h.set(T::default()));
    out.unwrap_or_else(|p| std::panic::resume_unwind(p))
}
