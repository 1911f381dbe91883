//! `GemmPlan`: every compile-time decision of one GEMM kernel, made from the lowering, the
//! perf config and the target, before any IR is emitted. Checking the config here (with a
//! reason that names the field) keeps the emitters free of error paths, and lets callers ask
//! for launch shapes and shared-memory sizes without compiling.

pub(crate) use super::phase_consts::SharedPhases;
use super::plan_load::{tile_load, tma_plan};
use super::plan_math::plan_math;
use super::plan_smem::{operand_tiles, Layout};
use super::spec::{Capability, TargetSpec};
use super::CodegenError;
use crate::abi::{ArgKind, ArgRole, KernelArg, CONV_ARGS};
use crate::arch::ws::WsBlock;
use crate::config::fixup::Fixup;
use crate::config::{Field, Grid, PerfConfig, PersistentGrid, Reduction};
use crate::lowering::tma::TmaTile;
use crate::lowering::tma_store::{store_tile, StoreTile};
use crate::lowering::{Dim, Gemm};
use crate::problem::{ConvProblem, DType};

pub(crate) use super::plan_load::TileLoad;
pub(crate) use super::plan_math::Math;
use super::smem::c_stage;
pub(crate) use super::smem::{CStage, Smem, SmemTile};

// The plan's parts live beside it, one idea a file: `plan_math` (which instruction
// multiplies), `plan_load` (how each operand's tile is copied) and `plan_smem` (where the
// shared memory goes); this file holds the plan and orders the checks that build it.

/// Which [`super::mainloop::MainLoop`] walks K. One kind per implementation; a new pipeline
/// adds a kind and its file, and leaves the others alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MainLoopKind {
    /// [`super::mainloop::MultistageLoop`]: a ring of `stages` buffers, `cp.async` or registers.
    Multistage,
    /// [`super::tma::TmaLoop`]: the same ring, TMA operands issued by one thread and completed
    /// through one `mbarrier` per stage (`ld=tma`).
    Tma,
    /// [`super::ws`]: a producer warpgroup fills the ring, the consumer warpgroups multiply,
    /// full/empty `mbarrier` pairs per stage (`ld=ws`).
    Ws,
}

/// Which [`super::schedule::TileScheduler`] maps blocks to tiles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SchedulerKind {
    /// [`super::schedule::RasterScheduler`]: one block per tile, rasterised by `rs`.
    Raster,
    /// [`super::schedule_phase::PhaseScheduler`]: the raster of one phase of a one-launch
    /// strided bwd-data kernel, whose tiles start at block `first_block` of the grid (on the
    /// warp-specialised persistent walk: at work unit `first_block` of the walk).
    Phase {
        /// The first block (x) of this phase, or its first work unit on the walk.
        first_block: u32,
    },
    /// [`super::streamk`]: a persistent grid walking (tile, K tile) iterations (`red=stream`).
    StreamK(crate::config::StreamK),
    /// [`super::schedule_persistent::PersistentScheduler`]: a fixed grid whose blocks walk
    /// work units (group, split-K slice, tile), `pk=1` with `ld=ws`.
    Persistent(crate::config::PersistentGrid),
}

/// Every constant of one GEMM kernel.
#[derive(Debug, Clone)]
pub(crate) struct GemmPlan<'l> {
    /// The GEMM.
    pub gemm: &'l Gemm,
    /// Its problem.
    pub problem: &'l ConvProblem,
    /// The config.
    pub cfg: PerfConfig,
    /// Element type.
    pub dt: DType,
    /// Threads that multiply and run the epilogue (the whole block but for a warp-specialised
    /// kernel's producer, see [`GemmPlan::launch_threads`]).
    pub threads: u32,
    /// Warp size.
    pub warp: u32,
    /// Warp-tile computation.
    pub math: Math,
    /// The K loop.
    pub main_loop: MainLoopKind,
    /// Blocks → tiles.
    pub scheduler: SchedulerKind,
    /// A tile loads.
    pub a: TileLoad,
    /// B tile loads.
    pub b: TileLoad,
    /// Shared memory.
    pub smem: Smem,
    /// Block tiles along M.
    pub tiles_m: u32,
    /// Block tiles along N.
    pub tiles_n: u32,
    /// K tiles of the whole reduction.
    pub k_tiles: u32,
    /// K tiles per split-K slice.
    pub k_tiles_per_split: u32,
    /// Whether M, N, K are not multiples of the tile (edge checks needed).
    pub edge: [bool; 3],
    /// Where C goes: `None` = plain stores; `Some(true)` = atomics into the f32 workspace;
    /// `Some(false)` = atomics into the f32 output itself.
    pub atomic: Option<bool>,
    /// The staged epilogue, when C is stored in vectors (`vec_c` > 1, no atomics).
    pub c_stage: Option<CStage>,
    /// The TMA loads of A and B (`ld=tma`); `None`: that operand uses `cp.async`.
    pub tma: [Option<TmaTile>; 2],
    /// The TMA store of C (`ep=tma`): staged in `smem.c_at`'s swizzled boxes, stored by one
    /// elected consumer thread ([`super::epilogue_tma`]).
    pub tma_store: Option<StoreTile>,
    /// The in-kernel split-K reduction (`red=fixup`); its workspace offset is set when the
    /// launch's plans are known ([`super::compile`]).
    pub fixup: Option<Fixup>,
    /// The warp-specialised block (`ld=ws`): consumers = `threads`, plus the producer.
    pub ws: Option<WsBlock>,
    /// The kernel's tensor-map parameter of this plan's first TMA operand, counted over the
    /// kernel's tensor maps: 0, but for a phase of a one-launch kernel that follows phases
    /// with maps of their own ([`super::phased`]).
    pub first_map: usize,
    /// The phases this plan's body serves in a one-launch kernel whose phases share one body
    /// ([`super::phase_consts`]): their GEMMs, first blocks and tile counts, picked at run
    /// time; `None` for a plan of one GEMM.
    pub shared: Option<SharedPhases<'l>>,
}

impl GemmPlan<'_> {
    /// Threads per block at launch: `threads`, plus the producer warpgroup with `ld=ws`.
    pub fn launch_threads(&self) -> u32 {
        self.ws.map_or(self.threads, |w| w.threads())
    }

    /// The kernel's parameters: the convolution's, then one tensor map per TMA operand (A's
    /// first), then C's store map (`ep=tma`).
    pub fn args(&self) -> Vec<KernelArg> {
        let mut args = CONV_ARGS.to_vec();
        for (t, op) in self.tma.iter().zip([&self.gemm.a, &self.gemm.b]) {
            if let Some(t) = t {
                args.push(KernelArg {
                    role: ArgRole::of(op.tensor),
                    kind: ArgKind::TensorMap(t.map),
                });
            }
        }
        if let Some(st) = &self.tma_store {
            args.push(KernelArg {
                role: ArgRole::of(self.gemm.c.tensor),
                kind: ArgKind::TensorMap(st.map),
            });
        }
        args
    }

    /// Tensor-map parameters of this plan ([`Self::args`] past the convolution's).
    pub fn maps(&self) -> usize {
        self.tma.iter().flatten().count() + usize::from(self.tma_store.is_some())
    }

    /// The kernel's tensor-map parameter of C's store map (counted over the kernel's maps).
    pub fn store_map(&self) -> usize {
        self.first_map + self.tma.iter().flatten().count()
    }
}

impl<'l> GemmPlan<'l> {
    /// Plans `gemm` of `p` with `cfg` for `spec`'s target, or says which field does not fit
    /// or which instruction family the target lacks.
    pub fn new(
        p: &'l ConvProblem,
        gemm: &'l Gemm,
        cfg: &PerfConfig,
        spec: &dyn TargetSpec,
    ) -> Result<Self, CodegenError> {
        let target = spec.target();
        let fail = |reason: String| CodegenError::Config {
            config: cfg.to_string(),
            gemm: gemm.id,
            reason,
        };
        let require = |capability: Capability, needed_by: String| {
            if spec.has(capability) {
                Ok(())
            } else {
                Err(CodegenError::Missing {
                    config: cfg.to_string(),
                    gemm: gemm.id,
                    target: target.to_string(),
                    capability,
                    needed_by,
                })
            }
        };
        let c = cfg;
        let dt = p.dtype();
        let bytes = dt.bytes();
        if let Some(f) = c.zero_field() {
            return Err(fail(format!("{} must be positive", f.key())));
        }
        if !c.block_m.is_multiple_of(c.warp_m) || !c.block_n.is_multiple_of(c.warp_n) {
            return Err(fail("the warp tile must divide the block tile".into()));
        }
        let arch = target.arch();
        let warp = target.warp_size();
        let threads = c.warps() * warp;
        if threads > arch.max_threads_per_block {
            return Err(fail(format!(
                "{threads} threads per block (at most {})",
                arch.max_threads_per_block
            )));
        }
        let math = plan_math(c, arch, dt, warp, &fail, &require)?;
        let load =
            |name: &str, op, row_dim: Dim, rows: u32, vec: u32| -> Result<TileLoad, CodegenError> {
                tile_load(p, gemm, op, row_dim, rows, vec, c, threads, spec)
                    .map_err(|r| fail(format!("{name}: {r}")))
            };
        let mut a = load(Field::VecA.name(), &gemm.a, Dim::M, c.block_m, c.vec_a)?;
        let mut b = load(Field::VecB.name(), &gemm.b, Dim::N, c.block_n, c.vec_b)?;
        let (sa, sb) = operand_tiles(c, dt, &a, &b).map_err(&fail)?;
        let split = c.split_k > 1;
        let atomic = c.adds_by_atomics(p.direction()).then_some(dt != DType::F32);
        let smem_bytes = c.stages as u64 * (sa.stage + sb.stage) as u64 * bytes as u64;
        if smem_bytes > u32::MAX as u64 / 2 {
            return Err(fail(format!("{smem_bytes} bytes of shared memory")));
        }
        if let Some(why) = c.persistent_refusal() {
            return Err(fail(format!("pk: {why}")));
        }
        let persistent = c.persistent == Grid::Persistent;
        let layout = Layout::new(c, smem_bytes, persistent);
        let tma_store = match c.epilogue {
            crate::config::Epilogue::Reg => None,
            crate::config::Epilogue::Tma => {
                if let Some(why) = c.epilogue_refusal() {
                    return Err(fail(why));
                }
                if spec.bulk_tensor_copy().is_none() {
                    return Err(fail(format!("ep=tma: {} has no TMA", spec.target())));
                }
                let st = store_tile(p, gemm, c.block_m, c.block_n)
                    .map_err(|r| fail(format!("ep=tma: {r}")))?;
                Some(st)
            }
        };
        let c_stage = if c.vec_c > 1 && c.reads_vec_c(p.direction()) {
            debug_assert!(atomic.is_none() && tma_store.is_none());
            let budget = match layout.epilogue {
                None => smem_bytes,
                Some(at) => crate::config::persistent_c_budget(
                    layout.pipeline_end,
                    arch.smem_per_block as u64,
                    layout.regions,
                )
                .saturating_sub(at.c_at as u64 - at.verdict_at as u64),
            };
            let st = c_stage(p, gemm, c, budget).map_err(|r| {
                fail(format!(
                    "vec_c: {r}{}",
                    if persistent {
                        " (pk=1 stages C in a region of its own, after the pipeline)"
                    } else {
                        ""
                    }
                ))
            })?;
            Some(st)
        } else {
            None
        };
        let mut tma = if c.ld.uses_tma() {
            tma_plan(p, gemm, c, spec, [&a, &b]).map_err(&fail)?
        } else {
            [None, None]
        };
        if let Some(why) = c.cluster_refusal() {
            return Err(fail(why));
        }
        if let (Some(along), Some(shared)) =
            (Dim::of_cluster(c.cluster), c.cluster.shared_operand())
        {
            let size = c.cluster.size();
            let tiles = if along == Dim::M {
                gemm.m_len().div_ceil(c.block_m)
            } else {
                gemm.n_len().div_ceil(c.block_n)
            };
            if !tiles.is_multiple_of(size) {
                return Err(fail(format!(
                    "cl={}: {tiles} tiles along {along:?} do not pair",
                    c.cluster.name()
                )));
            }
            // Each block of the cluster loads half of the shared operand's stage.
            match &mut tma[shared] {
                Some(t) => *t = t.halved(),
                None => {
                    return Err(fail(format!(
                        "cl={}: the shared operand is not a TMA tile",
                        c.cluster.name()
                    )))
                }
            }
        }
        let tma_used = tma.iter().any(Option::is_some);
        let ws = if c.ld.warp_specialised() {
            let w = super::ws::plan_ws(c, c.consumer_warps() * warp, spec).map_err(&fail)?;
            require(Capability::RegisterRealloc, "ld=ws".into())?;
            // The producer's 128 threads issue the cp.async operands' copies.
            for (l, t) in [(&mut a, &tma[0]), (&mut b, &tma[1])] {
                if t.is_none() {
                    *l = TileLoad {
                        slots: l.vectors.div_ceil(w.producers),
                        partial: !l.vectors.is_multiple_of(w.producers),
                        threads: w.producers,
                        ..*l
                    };
                }
            }
            Some(w)
        } else {
            None
        };
        let smem = layout.smem(c, sa, sb, tma_used, tma_store, c_stage, bytes);
        if persistent && smem.bytes > arch.smem_per_block {
            // Only pk=1 adds to what the shared-memory rule budgets.
            return Err(fail(format!(
                "pk=1: {} bytes of shared memory with the epilogue's own region (at most {})",
                smem.bytes, arch.smem_per_block
            )));
        }
        let k_tiles = gemm.k_len().div_ceil(c.block_k);
        let k_tiles_per_split = k_tiles.div_ceil(c.split_k);
        let (tiles_m, tiles_n) = (
            gemm.m_len().div_ceil(c.block_m),
            gemm.n_len().div_ceil(c.block_n),
        );
        let fixup = match c.red {
            Reduction::Fixup if split => {
                let partials = c.fixup_partials(gemm.g_len(), gemm.m_len(), gemm.n_len());
                if partials > i32::MAX as u64 {
                    return Err(fail(format!(
                        "red=fixup: {partials} f32 partials exceed the kernels' i32 indices"
                    )));
                }
                Some(Fixup::new(
                    gemm.g_len() * tiles_m * tiles_n,
                    c.split_k,
                    c.block_m,
                    c.block_n,
                ))
            }
            Reduction::Fixup => {
                return Err(fail("red=fixup needs split_k > 1".into()));
            }
            Reduction::Atomic => None,
            Reduction::Stream => {
                if let Some(why) = c.stream_refusal() {
                    return Err(fail(format!("red=stream: {why}")));
                }
                None
            }
        };
        let tiles = gemm.g_len() * tiles_m * tiles_n;
        let stream = c.stream_k(tiles, k_tiles, arch.compute_units);
        let fixup = match stream {
            Some(sk) => {
                let fx = sk.fixup(c.block_m, c.block_n);
                if fx.partials() > i32::MAX as u64 {
                    return Err(fail(format!(
                        "red=stream: {} f32 partials exceed the kernels' i32 indices",
                        fx.partials()
                    )));
                }
                Some(fx)
            }
            None => fixup,
        };
        Ok(GemmPlan {
            gemm,
            problem: p,
            cfg: *c,
            dt,
            threads,
            warp,
            math,
            main_loop: match (ws, tma_used) {
                (Some(_), _) => MainLoopKind::Ws,
                (None, true) => MainLoopKind::Tma,
                (None, false) => MainLoopKind::Multistage,
            },
            scheduler: match stream {
                Some(sk) => SchedulerKind::StreamK(sk),
                None if persistent => {
                    let w = ws.unwrap_or_else(|| panic!("pk=1 was refused without ld=ws"));
                    let units = gemm.g_len() * c.split_k * tiles_m * tiles_n;
                    SchedulerKind::Persistent(
                        PersistentGrid::new(
                            units,
                            arch.compute_units,
                            w.resident_blocks(arch, smem.bytes),
                        )
                        .in_clusters(c.cluster.size()),
                    )
                }
                None => SchedulerKind::Raster,
            },
            a,
            b,
            smem,
            tiles_m,
            tiles_n,
            k_tiles,
            k_tiles_per_split,
            edge: [
                !gemm.m_len().is_multiple_of(c.block_m),
                !gemm.n_len().is_multiple_of(c.block_n),
                !gemm.k_len().is_multiple_of(c.block_k),
            ],
            atomic,
            c_stage,
            fixup,
            tma,
            tma_store,
            ws,
            first_map: 0,
            shared: None,
        })
    }
}
#[cfg(test)]
mod tests {
    use super::*;
    use crate::codegen::compile::spec_for;
    use crate::codegen::target::Target;
    use crate::lowering::lower;

    fn plan_of(line: &str, cfg: &str, target: Target) -> (ConvProblem, PerfConfig, Target) {
        (line.parse().unwrap(), cfg.parse().unwrap(), target)
    }

    #[test]
    fn staged_c_reuses_pipeline_memory_in_passes() {
        let (p, c, t) = plan_of(
            "convbfp16 -n 2 -c 16 -H 5 -W 4 -k 64 -y 3 -x 3 -p 1 -q 1 -F 1 --layout NHWC",
            "v1:bm=64,bn=64,bk=16,wm=32,wn=32,st=1,va=8,vb=8,vc=8,lds=pad,sk=1,rs=1",
            Target::of(crate::arch::Arch::SM_90),
        );
        let l = lower(&p);
        let plan = GemmPlan::new(&p, &l.gemms[0], &c, spec_for(t, false).as_ref()).unwrap();
        let st = plan.c_stage.unwrap();
        // Output NHWC is contiguous along K (= M); lines of 64 + 8 bf16.
        assert!(!st.along_n);
        assert_eq!(st.stride, 72);
        // Pipeline: (64 + 64) rows × (16 + 8) × 2 bytes = 6144 bytes: 42 lines per pass.
        assert_eq!(plan.smem.bytes, 6144);
        assert_eq!(st.lines_per_pass, 42);
        assert_eq!(st.passes(), 2);
    }

    #[test]
    fn transposed_tiles_pad_within_one_chunk_per_row() {
        // bwd-weight NHWC: both operands' vectors run along M/N, tiles are [k][row].
        let (p, c, t) = plan_of(
            "convbfp16 -n 2 -c 16 -H 5 -W 4 -k 32 -y 3 -x 3 -p 1 -q 1 -F 4 --layout NHWC",
            "v1:bm=32,bn=32,bk=64,wm=16,wn=16,st=2,va=8,vb=8,vc=1,lds=pad,sk=1,rs=1",
            Target::of(crate::arch::Arch::SM_90),
        );
        let l = lower(&p);
        let plan = GemmPlan::new(&p, &l.gemms[0], &c, spec_for(t, false).as_ref()).unwrap();
        assert!(!plan.smem.a.kmajor && !plan.smem.b.kmajor);
        // 64 k-lines would cost 64 chunks of padding, 32 rows budget 32: swizzled instead.
        assert_eq!(plan.smem.a.swizzle, Some(4));
        assert_eq!(plan.smem.bytes, 2 * (32 + 32) * 64 * 2);
        let c = PerfConfig { block_k: 16, ..c };
        let plan = GemmPlan::new(&p, &l.gemms[0], &c, spec_for(t, false).as_ref()).unwrap();
        assert_eq!((plan.smem.a.stride, plan.smem.a.swizzle), (40, None));
    }
}
