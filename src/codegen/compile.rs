//! From a lowering (or a problem, for the reference) to the list of launches, and from that
//! list to one LLVM module for a target spec. Shared by the GPU backends and the emulator, so
//! the emulator runs exactly the kernels the GPU gets.

use super::builder::Kb;
use super::depthwise::{emit_depthwise, DwPlan};
use super::gemm::{emit_gemm, grid};
use super::phased::{self, emit_phased, PhasedPlan};
use super::plan::GemmPlan;
use super::relayout::{self, emit_transpose, Place, Transpose};
use super::simple::{self, blocks, fill_width, THREADS};
use super::spec::TargetSpec;
use super::target::Target;
use super::{amdgpu, nvptx};
use super::{CodegenError, Kernel};
use crate::abi::{ArgRole, CONV_ARGS, KEPT_ZERO_BYTES};
use crate::arch::{Vendor, MAX_GRID};
use crate::config::{DwSums, MmaPath, PerfConfig, Transform};
use crate::lowering::{depthwise::SlotSum, relayout::relayouts, Lowering};
use crate::problem::{ConvProblem, DType, Tensor};
use inkwell::context::Context;
use inkwell::module::Module;

/// What to compile.
#[derive(Clone, Copy)]
pub(crate) enum Job<'l> {
    /// All kernels of one candidate; `fault` adds an out-of-bounds store (test switch).
    Conv {
        /// The lowering.
        lowering: &'l Lowering,
        /// The candidate.
        cfg: &'l PerfConfig,
        /// Fault-isolation test switch.
        fault: bool,
    },
    /// The direct-convolution reference.
    Reference(&'l ConvProblem),
}

/// What one kernel does.
pub(crate) enum Body<'l> {
    /// Zero `elems` elements of `dt` at argument `role`.
    Zero {
        role: ArgRole,
        dt: DType,
        elems: u64,
    },
    /// One GEMM.
    Gemm(Box<GemmPlan<'l>>),
    /// Every phase of strided bwd-data and its zeroing, in one grid.
    Phased(Box<PhasedPlan<'l>>),
    /// The direct depthwise convolution (`mma=dw`).
    Depthwise(Box<DwPlan>),
    /// Workspace (f32) → written tensor: the sum of `slots` runs of `elems` (one: a
    /// conversion).
    Finish {
        written: Tensor,
        dt: DType,
        elems: u64,
        slots: u32,
    },
    /// Direct convolution.
    Reference(&'l ConvProblem),
    /// A layout transform's transpose (reads and writes its places, never redirected).
    Relayout(Transpose),
}

/// The launches of a job, planned without LLVM.
pub(crate) struct Launches<'l> {
    /// Kernels in launch order with what each does.
    pub kernels: Vec<(Kernel, Body<'l>)>,
    /// Scratch bytes the kernels need (the workspace argument).
    pub workspace_bytes: u64,
    /// Bytes at the workspace's start that must be zero when the plan starts and that it
    /// leaves zero: [`KEPT_ZERO_BYTES`] where its fix-up counters live there, else 0.
    pub kept_zero: u64,
    /// Whether the GEMM kernels get the out-of-bounds store.
    pub fault: bool,
    /// Per tensor, the workspace byte offset of its channels-last copy that every kernel but
    /// the transposes reads or writes instead of the tensor (`xf`).
    pub redirect: [Option<u64>; 3],
}

fn kernel(
    name: String,
    grid: [u64; 3],
    threads: u32,
    shared_bytes: u32,
) -> Result<Kernel, CodegenError> {
    if grid[0] == 0 || grid.iter().zip(MAX_GRID).any(|(&g, m)| g > m as u64) {
        return Err(CodegenError::Launch { kernel: name, grid });
    }
    Ok(Kernel {
        name,
        grid: grid.map(|g| g as u32),
        block: [threads, 1, 1],
        shared_bytes,
        args: CONV_ARGS.to_vec(),
        cluster: 1,
    })
}

/// The spec of a GPU target; `arch_specific`: the module uses instructions of the exact
/// processor (NVIDIA `sm_90a` for `wgmma`).
pub(crate) fn spec_for(target: Target, arch_specific: bool) -> Box<dyn TargetSpec> {
    match target.arch().vendor {
        Vendor::Nvidia => Box::new(nvptx::Nvptx {
            target,
            arch_specific,
        }),
        Vendor::Amd => Box::new(amdgpu::Amdgpu { target }),
    }
}

/// Plans every launch of `job` for `spec`'s target, asking it for the instruction families
/// the configs need.
pub(crate) fn plan<'l>(job: Job<'l>, spec: &dyn TargetSpec) -> Result<Launches<'l>, CodegenError> {
    let target = spec.target();
    target.check()?;
    let mut kernels = Vec::new();
    match job {
        Job::Reference(p) => {
            let elems = p.tensor_elems(p.direction().written());
            let k = kernel(
                "convtune_reference".into(),
                [blocks(elems, 1), 1, 1],
                THREADS,
                0,
            )?;
            kernels.push((k, Body::Reference(p)));
            Ok(Launches {
                kernels,
                workspace_bytes: 0,
                kept_zero: 0,
                fault: false,
                redirect: [None; 3],
            })
        }
        Job::Conv {
            lowering,
            cfg,
            fault,
        } => {
            let gemms = lowering
                .for_transform(cfg.xf)
                .ok_or_else(|| CodegenError::Config {
                    config: cfg.to_string(),
                    gemm: 0,
                    reason: crate::lowering::relayout::why_not(&lowering.problem, cfg.xf)
                        .unwrap_or_else(|| "the layout transform has no lowering".into()),
                })?;
            let mut l = if cfg.mma == MmaPath::Depthwise {
                plan_depthwise(gemms, cfg, spec)?
            } else {
                plan_gemms(gemms, cfg, spec, fault)?
            };
            if cfg.xf != Transform::None {
                transform(&lowering.problem, cfg.xf, &mut l)?;
            }
            Ok(l)
        }
    }
}

/// Adds the transposes of layout transform `xf` around the GEMM launches `l` of the twin
/// lowering: the channels-last copies go to the workspace after what the GEMMs use, the
/// GEMMs' tensors (and tensor maps) are redirected there, the read tensors are copied in
/// first and the written one copied back last.
fn transform(p: &ConvProblem, xf: Transform, l: &mut Launches) -> Result<(), CodegenError> {
    const ALIGN: u64 = 256;
    let dt = p.dtype();
    let written = p.direction().written();
    let mut at = l.workspace_bytes.next_multiple_of(ALIGN);
    let (mut before, mut after) = (Vec::new(), Vec::new());
    for r in relayouts(p, xf) {
        l.redirect[r.tensor as usize] = Some(at);
        let back = r.tensor == written;
        let t = Transpose {
            dt,
            batch: r.batch,
            rows: if back { r.cols } else { r.rows },
            cols: if back { r.rows } else { r.cols },
            src: if back {
                Place::Workspace(at)
            } else {
                Place::Tensor(r.tensor)
            },
            dst: if back {
                Place::Tensor(r.tensor)
            } else {
                Place::Workspace(at)
            },
        };
        let name = format!(
            "convtune_relayout_{}{}",
            r.tensor.name(),
            if back { "_back" } else { "" }
        );
        let k = kernel(
            name,
            [t.blocks(), 1, 1],
            relayout::THREADS,
            t.shared_bytes(),
        )?;
        if back { &mut after } else { &mut before }.push((k, Body::Relayout(t)));
        at = (at + r.elems() * dt.bytes() as u64).next_multiple_of(ALIGN);
    }
    for (k, _) in &mut l.kernels {
        for a in &mut k.args {
            let role = a.role;
            if let (crate::abi::ArgKind::TensorMap(m), Some(t)) = (&mut a.kind, role.tensor()) {
                if let Some(off) = l.redirect[t as usize] {
                    m.offset += off;
                    a.role = ArgRole::Workspace;
                }
            }
        }
    }
    l.workspace_bytes = at;
    before.append(&mut l.kernels);
    before.append(&mut after);
    l.kernels = before;
    Ok(())
}

/// The one launch of the direct depthwise kernel (`mma=dw`) for `lowering`'s problem (the
/// twin's, with a layout transform): it reads the lowering's problem, not its GEMMs.
fn plan_depthwise<'l>(
    lowering: &'l Lowering,
    cfg: &'l PerfConfig,
    spec: &dyn TargetSpec,
) -> Result<Launches<'l>, CodegenError> {
    let plan = DwPlan::new(&lowering.problem, cfg, spec.target().arch())?;
    let k = kernel(
        "convtune_depthwise".into(),
        plan.grid,
        plan.threads(),
        plan.shared_bytes,
    )?;
    if !plan.shape.reduce {
        return Ok(Launches {
            kernels: vec![(k, Body::Depthwise(Box::new(plan)))],
            workspace_bytes: 0,
            kept_zero: 0,
            fault: false,
            redirect: [None; 3],
        });
    }
    // Backward weight: by atomics, the blocks' sums are added into a zeroed f32 filter
    // gradient (the filter itself when f32, else a copy in the workspace converted after); as
    // partials, each block's go to a workspace slot of its own, added up by a second kernel.
    let (shape, tile) = (plan.shape, plan.tile);
    let elems = shape.filter_elems();
    let (dt, in_ws) = (shape.dtype, shape.sums_in_workspace(&tile));
    let partials = tile.sums == Some(DwSums::Partials);
    // An f32 copy of the gradient in the workspace per slot: each block's own as partials (one
    // a block along the pixels, `grid[0]`), else the one every block adds into.
    let slots = if partials { plan.grid[0] as u32 } else { 1 };
    let workspace_bytes = if in_ws {
        4 * elems * u64::from(slots)
    } else {
        0
    };
    let mut kernels = Vec::new();
    if !partials {
        let (role, zdt) = if in_ws {
            (ArgRole::Workspace, DType::F32)
        } else {
            (ArgRole::Filter, dt)
        };
        kernels.push(zero_launch("convtune_zero", role, zdt, elems)?);
    }
    kernels.push((k, Body::Depthwise(Box::new(plan))));
    if in_ws {
        let name = if partials {
            "convtune_depthwise_sum"
        } else {
            "convtune_depthwise_finish"
        };
        kernels.push(finish_launch(name, Tensor::Filter, dt, elems, slots)?);
    }
    Ok(Launches {
        kernels,
        workspace_bytes,
        kept_zero: 0,
        fault: false,
        redirect: [None; 3],
    })
}

/// The launch that writes zeros to `elems` elements of `dt` at argument `role` (split-K and
/// depthwise backward-weight sums, fix-up counters, zero-initialised outputs).
fn zero_launch<'l>(
    name: &str,
    role: ArgRole,
    dt: DType,
    elems: u64,
) -> Result<(Kernel, Body<'l>), CodegenError> {
    let k = kernel(
        name.into(),
        [blocks(elems, fill_width(elems, dt.bytes())), 1, 1],
        THREADS,
        0,
    )?;
    Ok((k, Body::Zero { role, dt, elems }))
}

/// The launch that writes `written` (of type `dt`) from the f32 workspace: each of its
/// `elems` elements the sum of `slots` consecutive runs of `elems` sums, in slot order (one
/// slot: a conversion).
fn finish_launch<'l>(
    name: &str,
    written: Tensor,
    dt: DType,
    elems: u64,
    slots: u32,
) -> Result<(Kernel, Body<'l>), CodegenError> {
    let k = if slots > 1 {
        let smem = THREADS * 4;
        kernel(
            name.into(),
            [SlotSum::of(slots).blocks(elems, THREADS), 1, 1],
            THREADS,
            smem,
        )?
    } else {
        kernel(name.into(), [blocks(elems, 1), 1, 1], THREADS, 0)?
    };
    Ok((
        k,
        Body::Finish {
            written,
            dt,
            elems,
            slots,
        },
    ))
}

/// The launches of the GEMMs of `lowering` with `cfg` (and the zeroing, fix-up counters and
/// split-K finish around them), each tensor in the layout `lowering.problem` gives it.
fn plan_gemms<'l>(
    lowering: &'l Lowering,
    cfg: &'l PerfConfig,
    spec: &dyn TargetSpec,
    fault: bool,
) -> Result<Launches<'l>, CodegenError> {
    let mut kernels = Vec::new();
    let p = &lowering.problem;
    let written = p.direction().written();
    let elems = p.tensor_elems(written);
    let dt = p.dtype();
    let mut plans = lowering
        .gemms
        .iter()
        .map(|g| GemmPlan::new(p, g, cfg, spec))
        .collect::<Result<Vec<_>, _>>()?;
    if phased::one_launch(lowering, cfg) {
        let plan = PhasedPlan::new(lowering, plans, spec.target().arch())?;
        let mut k = kernel(
            "convtune_phases".into(),
            plan.grid,
            plan.threads,
            plan.shared_bytes,
        )?;
        k.args = plan.args();
        kernels.push((k, Body::Phased(Box::new(plan))));
        return Ok(Launches {
            kernels,
            workspace_bytes: 0,
            kept_zero: 0,
            fault,
            redirect: [None; 3],
        });
    }
    let split = cfg.split_k > 1 && !plans.is_empty();
    // Split-K through atomics: a zeroed f32 sum (the output itself for f32), and for
    // f16/bf16 a finishing launch. Through the fix-up: only its counters are zeroed.
    let atomics = split && plans.iter().all(|pl| pl.fixup.is_none());
    let to_workspace = atomics && dt != DType::F32;
    let mut workspace_bytes = if to_workspace { elems * 4 } else { 0 };
    let counters = plans
        .iter()
        .filter_map(|pl| pl.fixup)
        .max_by_key(|f| f.counter_bytes());
    let mut kept_zero = 0;
    if let Some(most) = counters {
        // Counters that fit the kept-zero region are zero when the plan starts (the caller's
        // side of `abi::KEPT_ZERO_BYTES`); the partials start after the region, so no plan's
        // partials ever land there.
        let (kept, counters) = (most.counters_kept(), most.counter_bytes());
        for fx in plans.iter_mut().filter_map(|pl| pl.fixup.as_mut()) {
            fx.partials_at = if kept { KEPT_ZERO_BYTES } else { counters };
            workspace_bytes = workspace_bytes.max(fx.workspace_bytes());
        }
        if kept {
            kept_zero = KEPT_ZERO_BYTES;
        } else {
            kernels.push(zero_launch(
                "convtune_zero_counters",
                ArgRole::Workspace,
                DType::F32,
                counters / 4,
            )?);
        }
    }
    if lowering.zero_init || atomics {
        let (role, zdt) = if to_workspace {
            (ArgRole::Workspace, DType::F32)
        } else {
            (ArgRole::of(written), dt)
        };
        kernels.push(zero_launch("convtune_zero", role, zdt, elems)?);
    }
    for plan in plans {
        let name = format!("convtune_gemm{}", plan.gemm.id);
        let grid = grid(&plan);
        let mut k = kernel(name, grid, plan.launch_threads(), plan.smem.bytes)?;
        k.args = plan.args();
        k.cluster = plan.cfg.cluster.size();
        kernels.push((k, Body::Gemm(Box::new(plan))));
    }
    if to_workspace {
        kernels.push(finish_launch(
            "convtune_splitk_finish",
            written,
            dt,
            elems,
            1,
        )?);
    }
    Ok(Launches {
        kernels,
        workspace_bytes,
        kept_zero,
        fault,
        redirect: [None; 3],
    })
}

/// Emits every kernel of `launches` into `module`.
pub(crate) fn emit<'ctx>(
    ctx: &'ctx Context,
    module: &Module<'ctx>,
    spec: &dyn TargetSpec,
    launches: &Launches,
) {
    for (k, body) in &launches.kernels {
        // Arguments the kernel writes may not be marked read-only.
        let writes = match body {
            Body::Zero { role, .. } => vec![*role],
            Body::Gemm(plan) => {
                let mut w = vec![ArgRole::of(plan.gemm.c.tensor)];
                if plan.atomic == Some(true) || plan.fixup.is_some() {
                    w.push(ArgRole::Workspace);
                }
                w
            }
            Body::Phased(_) => vec![ArgRole::Input],
            Body::Depthwise(plan) if plan.shape.reduce => {
                match plan.shape.sums_in_workspace(&plan.tile) {
                    true => vec![ArgRole::Workspace],
                    false => vec![ArgRole::Filter],
                }
            }
            Body::Depthwise(plan) => vec![ArgRole::of(plan.shape.dst)],
            Body::Finish { written, .. } => vec![ArgRole::of(*written)],
            Body::Reference(p) => vec![ArgRole::of(p.direction().written())],
            Body::Relayout(t) => vec![match t.dst {
                Place::Tensor(x) => ArgRole::of(x),
                Place::Workspace(_) => ArgRole::Workspace,
            }],
        };
        let mut writes = writes;
        let redirected = launches.redirect.iter().any(Option::is_some);
        if redirected && !writes.contains(&ArgRole::Workspace) {
            writes.push(ArgRole::Workspace);
        }
        let kb = Kb::kernel(ctx, module, spec, &k.name, &k.args, &writes);
        if !matches!(body, Body::Relayout(_)) {
            for t in Tensor::ALL {
                if let Some(at) = launches.redirect[t as usize] {
                    kb.redirect(t, at);
                }
            }
        }
        kb.prefetch_maps();
        match body {
            Body::Zero { role, dt, elems } => simple::emit_zero(&kb, *role, *dt, *elems),
            Body::Gemm(plan) => emit_gemm(&kb, plan, launches.fault),
            Body::Phased(plan) => emit_phased(&kb, plan, launches.fault),
            Body::Depthwise(plan) => emit_depthwise(&kb, plan),
            Body::Finish {
                written,
                dt,
                elems,
                slots,
            } => simple::emit_finish(&kb, *written, *dt, *elems, *slots),
            Body::Reference(p) => simple::emit_reference(&kb, p),
            Body::Relayout(t) => emit_transpose(&kb, t),
        }
        kb.finish();
    }
}

/// Runs `f`, turning a panic (a code-generator bug: see [`super::builder`]) into an error so a
/// tuning run records the candidate as failed and goes on.
pub(crate) fn guarded<T>(f: impl FnOnce() -> Result<T, CodegenError>) -> Result<T, CodegenError> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(payload) => {
            let msg = payload
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "panic without a message".into());
            Err(CodegenError::Internal(msg))
        }
    }
}
