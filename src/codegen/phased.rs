//! Strided backward data in one launch (CUTLASS 2.x's strided dgrad: the M grid split over the
//! stride phases). The sub-GEMMs of a lowering (one per residue class, [`crate::lowering`])
//! and the zeroing of the input-gradient pixels that none of them writes all run in one grid:
//! block `b` along x belongs to the phase whose range of the prefix sum of the phases' tile
//! counts holds it, and the blocks after the last phase zero uncovered pixels. The blocks of
//! a phase are a raster of its tiles ([`super::schedule_phase::PhaseScheduler`]). The
//! phases' GEMMs differ only in lengths and offsets, so every phase's blocks run one GEMM
//! body whose constants (K length, tile counts, index maps) are picked at run time from the
//! block's phase ([`super::phase_consts`]): the kernel is about the size of a one-phase one,
//! where a body per phase made it, and the assembler's time, grow with the phases. Plans
//! that cannot share a body ([`shared_body`] says which) keep a body per phase, each in a
//! branch of its own.
//!
//! Phases and zeroing write disjoint elements, so no order among blocks is needed. Phases
//! with the longest reduction come first: their blocks start in the first wave and the short
//! ones fill the tail. The zeroing blocks come last for the same reason (they are cheap).
//!
//! Split-K (atomics into a cleared tensor) keeps the multi-launch plan: its zeroing must
//! finish before any GEMM adds. So does stream-K (`red=stream`): its grid is one schedule
//! over one GEMM's (tile, K tile) iterations, a launch per phase ([`one_launch`]).
//!
//! On the warp-specialised persistent path (`ld=ws|wspp`, `pk=1`) the phases' tiles are the
//! work units of one persistent walk instead of blocks ([`PhasedPlan::walk`]): unit `u`
//! belongs to the phase whose range of the same prefix sum holds it, longest reduction
//! first, so a block's walk visits long-K units before short ones. The producer issues each
//! unit's K tiles with its phase's loaders and tensor maps (each phase's maps are kernel
//! parameters of their own, [`GemmPlan::first_map`]); its stage ring and parities run on
//! across units *and* phases (the ring is one block-global counter of K tiles, whatever GEMM
//! they belong to); the consumers multiply and write with the phase's plan. The stages, the
//! mbarriers and the epilogue regions are laid out alike in every phase (one config), the
//! epilogue region taken as the largest phase's. The walk's consumers share one body, its
//! constants picked by the *unit's* phase ([`Kb::set_walk_unit`]); the producer keeps a
//! branch per phase (each phase's maps, im2col taps and copy addresses with its constants).
//!
//! The zeroing of uncovered pixels on that path runs on the consumer warpgroups *before*
//! their first GEMM unit, in chunks walked like units (block `b` zeroes chunks `b, b +
//! gridDim.x, …`), every consumer thread of the block sharing a chunk (both ping-pong
//! consumers alike, before they split into their turns). Before rather than after: the
//! producer starts filling the ring at once, so the consumers' first wait is for the
//! pipeline's fill, and the stores hide under it; after the walk they would lengthen the
//! blocks whose walk is longest (the zeroing is not balanced against the GEMM units). The
//! zeroing needs no shared memory or barrier, so it does not touch the ring's protocol.

use super::builder::{Kb, Mem};
use super::gemm::{emit_fault, emit_gemm_body, write_unit};
use super::plan::{GemmPlan, SchedulerKind};
use super::schedule::RasterScheduler;
use super::schedule::TileScheduler;
use super::schedule_persistent::PersistentScheduler;
use super::schedule_phase::{in_range, shared_body, PhaseScheduler};
use super::simple::fill_width;
use super::ws::Work;
use super::CodegenError;
use crate::abi::{KernelArg, CONV_ARGS};
use crate::arch::Arch;
use crate::config::PersistentGrid;
pub(crate) use crate::lowering::one_launch;
use crate::lowering::{coverage, CoverDim, Lowering};
use crate::problem::{DType, Tensor};
use inkwell::values::IntValue;

/// Vectors each thread of a zeroing block clears.
const ZERO_UNROLL: u32 = 4;

/// The zeroing part of the launch: every element of the input gradient whose pixel no phase
/// writes is set to zero, `vec` elements (of one pixel) at a time, in chunks of `threads ×`
/// [`ZERO_UNROLL`] vectors.
#[derive(Debug, Clone)]
pub(crate) struct ZeroFill {
    /// First block (x) of the zeroing blocks (0 on the persistent walk, whose blocks walk
    /// the chunks themselves).
    pub first_block: u32,
    /// Chunks per z index (the zeroing blocks along x; the walk's chunks).
    pub blocks: u32,
    /// Threads that share a chunk.
    pub threads: u32,
    /// Vectors in the tensor.
    pub units: u64,
    /// Elements per vector: a run of the innermost dimensions that stays within one pixel.
    pub vec: u32,
    /// Element type.
    pub dt: DType,
    /// Element strides of h and w in the tensor.
    pub pixel_stride: [u64; 2],
    /// Extents of h and w.
    pub pixel_extent: [u32; 2],
    /// Which pixels the phases write, per dimension.
    pub cover: [CoverDim; 2],
}

impl ZeroFill {
    /// The zeroing of `lowering` (when some pixel is written by no phase) in chunks of
    /// `threads` threads, `z` z-slices, starting at block `first_block`.
    fn of(lowering: &Lowering, threads: u32, z: u64, first_block: u32) -> Option<ZeroFill> {
        let p = &lowering.problem;
        lowering.zero_init.then(|| {
            let t = Tensor::Input;
            let dims = p.logical_dims(t);
            let strides = p.strides(t);
            // Elements that share a pixel: the innermost dimensions up to h or w.
            let run: u64 = p
                .layout(t)
                .order()
                .iter()
                .rev()
                .map(|&d| d as usize)
                .take_while(|&d| d < 3)
                .map(|d| dims[d] as u64)
                .product();
            let dt = p.dtype();
            let vec = fill_width(run, dt.bytes());
            let units = p.tensor_elems(t) / vec as u64;
            let per_block = threads as u64 * ZERO_UNROLL as u64 * z;
            ZeroFill {
                first_block,
                blocks: units.div_ceil(per_block).max(1) as u32,
                threads,
                units,
                vec,
                dt,
                pixel_stride: [strides[3], strides[4]],
                pixel_extent: [dims[3], dims[4]],
                cover: coverage(p),
            }
        })
    }
}

/// Every decision of a one-launch bwd-data kernel.
#[derive(Debug, Clone)]
pub(crate) struct PhasedPlan<'l> {
    /// The phases in grid order, each scheduled at its first block (or work unit).
    pub phases: Vec<GemmPlan<'l>>,
    /// The zeroing, when some pixels are written by no phase.
    pub zero: Option<ZeroFill>,
    /// Threads per block at launch (with `ld=ws|wspp`, the producer's included).
    pub threads: u32,
    /// Dynamic shared memory: the most any phase uses.
    pub shared_bytes: u32,
    /// The launch grid.
    pub grid: [u64; 3],
    /// The persistent walk over every phase's work units (`ld=ws|wspp`, `pk=1`), or `None`
    /// for a block per tile.
    pub walk: Option<PersistentGrid>,
    /// The one body every phase's blocks (or walk units) run, when the phases can share one
    /// ([`shared_body`]); `None`: a body per phase.
    pub shared: Option<GemmPlan<'l>>,
}

/// A part of the one-launch kernel left out on purpose, for the tests that prove the
/// emulator notices ([`with_phased_fault`]).
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PhasedFault {
    /// The phase at this grid position computes nothing.
    SkipPhase(usize),
    /// No zeroing.
    SkipZero,
}

thread_local! {
    static FAULT: std::cell::Cell<Option<PhasedFault>> = const { std::cell::Cell::new(None) };
}

/// Test hook: while set (on the emitting thread), one-launch kernels are emitted with
/// `fault`. Never set outside the tests that prove the emulator catches it.
#[doc(hidden)]
pub fn with_phased_fault<R>(fault: PhasedFault, f: impl FnOnce() -> R) -> R {
    super::with_test_hook(&FAULT, Some(fault), f)
}

/// Whether the test hook leaves out phase `i`.
pub(crate) fn skipped(i: usize) -> bool {
    FAULT.with(|f| f.get()) == Some(PhasedFault::SkipPhase(i))
}

/// With a shared phase body (`body`, serving `phases` phases): whether the block's (or the
/// walk unit's) phase is not the one the test hook leaves out; `None` when it leaves none.
pub(crate) fn not_skipped<'ctx>(
    kb: &Kb<'_, 'ctx>,
    body: &GemmPlan,
    phases: usize,
) -> Option<IntValue<'ctx>> {
    let i = (0..phases).find(|&i| skipped(i))?;
    let shared = body.shared.as_ref().expect("a shared body has phases");
    let phase = shared.phases(kb).index(kb);
    Some(kb.xor(kb.eq(phase, kb.c(i as i64)), kb.cbool(true)))
}

/// The zeroing to emit (none when the test hook leaves it out).
fn zeroing<'p>(plan: &'p PhasedPlan) -> Option<&'p ZeroFill> {
    let skip = FAULT.with(|f| f.get()) == Some(PhasedFault::SkipZero);
    plan.zero.as_ref().filter(|_| !skip)
}

impl<'l> PhasedPlan<'l> {
    /// Places the planned sub-GEMMs (`plans`, already checked for the config) of `lowering`
    /// in one launch on `arch`: a block per tile, or the persistent walk when the config's
    /// plans walk one (`ld=ws|wspp`, `pk=1`). `lowering` must pass [`one_launch`].
    pub fn new(
        lowering: &'l Lowering,
        mut plans: Vec<GemmPlan<'l>>,
        arch: &Arch,
    ) -> Result<Self, CodegenError> {
        plans.sort_by_key(|g| std::cmp::Reverse(g.k_tiles));
        if matches!(plans[0].scheduler, SchedulerKind::Persistent(_)) {
            return Self::walk(lowering, plans, arch);
        }
        let threads = plans[0].threads;
        let z = RasterScheduler.grid(&plans[0])[2];
        let mut next = 0u64;
        for plan in &mut plans {
            debug_assert_eq!(plan.threads, threads);
            plan.scheduler = SchedulerKind::Phase {
                first_block: next as u32,
            };
            next += RasterScheduler.grid(plan)[0];
        }
        let shared = shared_body(&plans);
        let zero = ZeroFill::of(lowering, threads, z, next as u32);
        if let Some(z) = &zero {
            next += z.blocks as u64;
        }
        let shared_bytes = plans.iter().map(|g| g.smem.bytes).max().unwrap_or(0);
        Ok(PhasedPlan {
            phases: plans,
            zero,
            threads,
            shared_bytes,
            grid: [next, 1, z],
            walk: None,
            shared,
        })
    }

    /// The persistent walk over every phase's units (see the module's doc).
    fn walk(
        lowering: &'l Lowering,
        mut plans: Vec<GemmPlan<'l>>,
        arch: &Arch,
    ) -> Result<Self, CodegenError> {
        let lead = &plans[0];
        let ws = lead
            .ws
            .unwrap_or_else(|| panic!("pk=1 was refused without ld=ws"));
        // One ring and one set of mbarriers serve every phase: the same config lays them out
        // alike, unless an operand's tile changed its major dimension between phases.
        let ring = |g: &GemmPlan| (g.smem.a, g.smem.b, g.smem.stages, g.smem.barriers);
        let epi = |g: &GemmPlan| (g.smem.epilogue, g.smem.c_at);
        if let Some(g) = plans
            .iter()
            .find(|g| ring(g) != ring(lead) || epi(g) != epi(lead))
        {
            return Err(CodegenError::Internal(format!(
                "{}: phase {}'s shared-memory layout differs from phase {}'s",
                lead.cfg, g.gemm.id, lead.gemm.id
            )));
        }
        let region = plans.iter().map(|g| g.smem.region).max().unwrap_or(0);
        let shared_bytes = plans.iter().map(|g| g.smem.bytes).max().unwrap_or(0);
        let (mut next, mut maps) = (0u64, 0usize);
        for plan in &mut plans {
            plan.smem.region = region;
            plan.smem.bytes = shared_bytes;
            plan.scheduler = SchedulerKind::Phase {
                first_block: next as u32,
            };
            plan.first_map = maps;
            maps += plan.maps();
            next += PhaseScheduler.units(plan);
        }
        let walk = PersistentGrid::new(
            next as u32,
            arch.compute_units,
            ws.resident_blocks(arch, shared_bytes),
        );
        let shared = shared_body(&plans);
        Ok(PhasedPlan {
            zero: ZeroFill::of(lowering, ws.consumers, 1, 0),
            phases: plans,
            threads: ws.threads(),
            shared_bytes,
            grid: [walk.blocks as u64, 1, 1],
            walk: Some(walk),
            shared,
        })
    }

    /// The kernel's parameters: the convolution's, then every phase's tensor maps in phase
    /// order ([`GemmPlan::first_map`]).
    pub fn args(&self) -> Vec<KernelArg> {
        let mut args = CONV_ARGS.to_vec();
        for g in &self.phases {
            args.extend_from_slice(&g.args()[CONV_ARGS.len()..]);
        }
        args
    }
}

/// Emits the one-launch kernel of `plan`.
pub(crate) fn emit_phased<'ctx>(kb: &Kb<'_, 'ctx>, plan: &PhasedPlan, fault: bool) {
    kb.set_block_size(plan.threads);
    if plan.walk.is_some() {
        let lead = &plan.phases[0];
        let tid = kb.thread_idx();
        super::ws::emit(kb, lead, &Work::Phases(plan), tid, write_unit);
        if fault {
            emit_fault(kb, lead, tid, kb.block_idx(2));
        }
        return;
    }
    let bid = kb.block_idx(0);
    if let Some(body) = &plan.shared {
        // Every phase's blocks: those before the zeroing's.
        let blocks = plan
            .zero
            .as_ref()
            .map_or(plan.grid[0], |z| z.first_block as u64);
        let mut run = in_range(kb, bid, 0, blocks);
        if let Some(kept) = not_skipped(kb, body, plan.phases.len()) {
            run = kb.all(&[run, kept]);
        }
        kb.if_then(run, |kb| emit_gemm_body(kb, body, fault));
    } else {
        for (i, phase) in plan.phases.iter().enumerate() {
            let SchedulerKind::Phase { first_block } = phase.scheduler else {
                unreachable!("PhasedPlan::new schedules every phase")
            };
            let blocks = RasterScheduler.grid(phase)[0];
            if !skipped(i) {
                kb.if_then(in_range(kb, bid, first_block, blocks), |kb| {
                    emit_gemm_body(kb, phase, fault)
                });
            }
        }
    }
    if let Some(z) = zeroing(plan) {
        kb.if_then(in_range(kb, bid, z.first_block, z.blocks as u64), |kb| {
            let tid = kb.thread_idx();
            let local = kb.addc(bid, -(z.first_block as i64));
            let chunk = kb.add(kb.mulc(kb.block_idx(2), z.blocks as i64), local);
            emit_zero_chunk(kb, z, tid, chunk)
        });
    }
}

/// The zeroing on the persistent walk (`plan.walk`): block `b` zeroes chunks `b, b +
/// gridDim.x, …` with its consumer threads `tid` (`0 .. z.threads`).
pub(crate) fn emit_zero_walk<'ctx>(kb: &Kb<'_, 'ctx>, plan: &PhasedPlan, tid: IntValue<'ctx>) {
    let (Some(z), Some(walk)) = (zeroing(plan), plan.walk) else {
        return;
    };
    let chunks = PersistentGrid {
        units: z.blocks,
        blocks: walk.blocks,
    };
    let sched = PersistentScheduler;
    kb.for_range(kb.c(0), sched.units_of_block(kb, chunks, 1), |kb, i| {
        emit_zero_chunk(kb, z, tid, sched.unit(kb, chunks, 1, i))
    });
}

/// Whether pixel coordinate `hi` is written by some phase along one dimension (the kernel
/// form of [`CoverDim::writes`]).
fn writes<'ctx>(kb: &Kb<'_, 'ctx>, cover: &CoverDim, hi: IntValue<'ctx>) -> IntValue<'ctx> {
    // u < span: in-image pixels are < 2^31, so a negative u (wrapped) is ≥ 2^31.
    let span = cover.span.min(i32::MAX as u64) as u32;
    let mut any = kb.cbool(false);
    for i in 0..cover.classes as i64 {
        let u = kb.addc(hi, cover.base - i * cover.dilation as i64);
        let hit = kb.all(&[kb.ultc(u, span), kb.eq(kb.uremc(u, cover.stride), kb.c(0))]);
        any = kb.or(any, hit);
    }
    any
}

/// Zeroing chunk `chunk`: thread `tid` (of `z.threads`) clears vectors `(chunk·UNROLL + j)·
/// threads + tid` whose pixel no phase writes.
fn emit_zero_chunk<'ctx>(
    kb: &Kb<'_, 'ctx>,
    z: &ZeroFill,
    tid: IntValue<'ctx>,
    chunk: IntValue<'ctx>,
) {
    let ty = kb.vec_ty(z.dt, z.vec);
    let out = kb.tensor(Tensor::Input);
    for j in 0..ZERO_UNROLL {
        let unit = kb.add(
            kb.mulc(
                kb.addc(kb.mulc(chunk, ZERO_UNROLL as i64), j as i64),
                z.threads as i64,
            ),
            tid,
        );
        kb.if_then(kb.ultc(unit, z.units as u32), |kb| {
            let e = kb.mulc(unit, z.vec as i64);
            let coord =
                |d: usize| kb.uremc(kb.udivc(e, z.pixel_stride[d] as u32), z.pixel_extent[d]);
            let written = kb.all(&[
                writes(kb, &z.cover[0], coord(0)),
                writes(kb, &z.cover[1], coord(1)),
            ]);
            kb.if_then(kb.xor(written, kb.cbool(true)), |kb| {
                let at = kb.gep(kb.elem_ty(z.dt), out, e);
                kb.store(Mem::Global, at, kb.zero(ty), z.vec * z.dt.bytes());
            });
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arch::Arch;
    use crate::codegen::compile::{plan, spec_for, Body, Job};
    use crate::codegen::Target;
    use crate::config::PerfConfig;
    use crate::lowering::lower;

    /// The one-launch plan of `line` with `cfg`, checked by `check`.
    fn with_plan(line: &str, cfg: &str, check: impl FnOnce(&PhasedPlan)) {
        let p: crate::problem::ConvProblem = line.parse().unwrap();
        let l = lower(&p);
        let cfg: PerfConfig = cfg.parse().unwrap();
        let spec = spec_for(Target::of(Arch::SM_90), false);
        let launches = plan(
            Job::Conv {
                lowering: &l,
                cfg: &cfg,
                fault: false,
            },
            spec.as_ref(),
        )
        .unwrap();
        assert_eq!(launches.kernels.len(), 1);
        match &launches.kernels[0].1 {
            Body::Phased(plan) => check(plan),
            _ => panic!("{line}: not one launch"),
        }
    }

    const CFG: &str = "v1:bm=32,bn=32,bk=16,wm=16,wn=16,st=2,va=1,vb=1,vc=1,lds=pad,sk=1,rs=1";

    #[test]
    fn longest_reduction_first_then_consecutive_blocks() {
        with_plan(
            "conv -n 2 -c 16 -H 9 -W 8 -k 16 -y 3 -x 3 -p 1 -q 1 -u 2 -v 2 -F 2",
            CFG,
            |plan| {
                let k: Vec<u32> = plan.phases.iter().map(|g| g.gemm.k_len()).collect();
                assert_eq!(k, [16 * 4, 16 * 2, 16 * 2, 16]);
                let body = plan.shared.as_ref().expect("the phases share one body");
                let shared = body.shared.as_ref().unwrap();
                assert_eq!(shared.k_tiles, [4, 2, 2, 1]);
                assert_eq!(shared.gemms.len(), 4);
                let mut next = 0;
                for g in &plan.phases {
                    assert_eq!(g.scheduler, SchedulerKind::Phase { first_block: next });
                    next += g.tiles_m * g.tiles_n;
                }
                assert!(
                    plan.zero.is_none(),
                    "3×3 at stride 2 with pad 1 covers every pixel"
                );
                assert_eq!(plan.grid, [next as u64, 1, 1]);
            },
        );
    }

    #[test]
    fn uncovered_pixels_get_zeroing_blocks_after_the_phases() {
        // NHWC bf16, 24 channels: a vector of 8 channels of one pixel.
        with_plan(
            "convbfp16 -n 2 -c 24 -H 7 -W 6 -k 24 -y 1 -x 1 -u 2 -v 2 -g 3 -F 2 --layout NHWC",
            CFG,
            |plan| {
                let z = plan.zero.as_ref().unwrap();
                let g = &plan.phases[0];
                assert_eq!(z.first_block, g.tiles_m * g.tiles_n);
                assert_eq!((z.vec, z.units), (8, 2 * 24 * 7 * 6 / 8));
                assert!(z.blocks as u64 * 3 * (plan.threads * ZERO_UNROLL) as u64 >= z.units);
                assert_eq!(plan.grid, [(z.first_block + z.blocks) as u64, 1, 3]);
                // Even pixels are the GEMM's, odd ones the zeroing's.
                assert!((0..7).all(|h| z.cover[0].writes(h) == (h % 2 == 0)));
            },
        );
        // NCHW: w is innermost, so one element at a time.
        with_plan(
            "conv -n 1 -c 8 -H 9 -W 9 -k 8 -y 3 -x 3 -p 2 -q 2 -u 2 -v 2 -l 2 -j 2 -F 2",
            CFG,
            |plan| assert_eq!(plan.zero.as_ref().unwrap().vec, 1),
        );
    }

    #[test]
    fn ws_persistent_phases_are_units_of_one_walk() {
        let p: crate::problem::ConvProblem =
            "convbfp16 -n 2 -c 64 -H 9 -W 8 -k 64 -y 3 -x 3 -p 1 -q 1 -u 2 -v 2 -F 2 --layout NHWC"
                .parse()
                .unwrap();
        let l = lower(&p);
        let ws: PerfConfig = "v4:bm=64,bn=64,bk=64,wm=64,wn=64,st=2,va=8,vb=8,vc=8,lds=swz,sk=1,\
                              rs=1,mma=wg,red=atomic,ld=wspp,pk=1"
            .parse()
            .unwrap();
        let sms = 3;
        let spec = spec_for(Target::of(Arch::SM_90.with_compute_units(sms)), true);
        let job = |cfg| Job::Conv {
            lowering: &l,
            cfg,
            fault: false,
        };
        let launches = plan(job(&ws), spec.as_ref()).unwrap();
        assert_eq!(launches.kernels.len(), 1);
        let Body::Phased(plan) = &launches.kernels[0].1 else {
            panic!("not one launch")
        };
        let walk = plan.walk.unwrap();
        // The consumers run one body for every phase's units.
        assert!(plan.shared.is_some(), "the walk's consumers share one body");
        let (mut next, mut maps) = (0, 0);
        for g in &plan.phases {
            assert_eq!(g.scheduler, SchedulerKind::Phase { first_block: next });
            assert_eq!(g.first_map, maps);
            assert_eq!(g.smem.region, plan.phases[0].smem.region);
            maps += g.maps();
            next += g.tiles_m * g.tiles_n;
        }
        assert!(maps > 0);
        assert_eq!(walk.units, next);
        assert_eq!(plan.grid, [sms as u64, 1, 1]);
        assert_eq!((walk.blocks, plan.threads), (sms, 3 * 128));
        assert_eq!(plan.args().len(), CONV_ARGS.len() + maps);
        assert_eq!(launches.kernels[0].0.args, plan.args());
        // A block per tile (pk=0), ld=tma and stream-K keep a launch per phase.
        let per_tile = PerfConfig {
            ld: crate::config::LoadPath::Ws,
            persistent: crate::config::Grid::PerTile,
            ..ws
        };
        let tma = PerfConfig {
            ld: crate::config::LoadPath::Tma,
            ..per_tile
        };
        let stream = PerfConfig {
            ld: crate::config::LoadPath::Ws,
            red: crate::config::Reduction::Stream,
            ..ws
        };
        assert!(one_launch(&l, &ws));
        for c in [per_tile, tma, stream] {
            assert!(!one_launch(&l, &c), "{c}");
        }
    }

    #[test]
    fn limits_keep_the_launch_per_phase() {
        let l = lower(
            &"conv -n 1 -c 1 -H 40 -W 40 -k 1 -y 18 -x 1 -u 17 -v 1 -F 2"
                .parse()
                .unwrap(),
        );
        let cfg: PerfConfig = CFG.parse().unwrap();
        // 17 residue classes along H (two runs: taps 2, then 1): more than the zeroing tests
        // a pixel against (MAX_COVER_CLASSES).
        assert_eq!(l.gemms.len(), 2);
        assert!(!one_launch(&l, &cfg));
        let split = PerfConfig { split_k: 2, ..cfg };
        let l = lower(
            &"conv -n 1 -c 8 -H 9 -W 8 -k 16 -y 3 -x 3 -p 1 -q 1 -u 2 -v 2 -F 2"
                .parse()
                .unwrap(),
        );
        assert!(one_launch(&l, &cfg) && !one_launch(&l, &split));
    }
}
