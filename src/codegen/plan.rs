//! `GemmPlan`: every compile-time decision of one GEMM kernel, made from the lowering, the
//! perf config and the target, before any IR is emitted. Checking the config here (with a
//! reason that names the field) keeps the emitters free of error paths, and lets callers ask
//! for launch shapes and shared-memory sizes without compiling.

use super::spec::{Capability, TargetSpec};
use super::target::MatrixUnit;
use super::CodegenError;
use crate::abi::{ArgKind, ArgRole, KernelArg, CONV_ARGS};
use crate::arch::fit;
use crate::arch::ws::WsBlock;
use crate::config::fixup::Fixup;
use crate::config::{Field, Grid, LdsLayout, PerfConfig, PersistentGrid, Reduction};
use crate::lowering::tma::{tma_operands, TmaTile};
use crate::lowering::tma_store::{store_tile, StoreTile};
use crate::lowering::{Dim, Gemm};
use crate::problem::{ConvProblem, DType};

use super::smem::c_stage;
pub(crate) use super::smem::{CStage, Smem, SmemTile, CHUNK};

/// How the warp tile is computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Math {
    /// Scalar FMA: the warp's lanes form `lanes_m × lanes_n`, each owning a strided micro-tile.
    Fma {
        /// Lanes along M.
        lanes_m: u32,
        /// Lanes along N.
        lanes_n: u32,
        /// Elements of K read from shared memory per vector load.
        kvec: u32,
    },
    /// A matrix instruction.
    Matrix(MatrixUnit),
    /// Hopper `wgmma.mma_async` m64nNk16: the warp tile is a warpgroup's (4 warps) 64 × `n`
    /// tile, A and B read from K-major 128-byte-swizzled shared memory through descriptors.
    Wgmma {
        /// N of the instruction (= warp_n).
        n: u32,
        /// Whether one K tile's `wgmma` group stays in flight while the next is issued
        /// (`wait_group 1`, `mma = wg1`; three stages or more, so that the buffer the copies
        /// refill is two tiles old and every warpgroup has finished reading it).
        in_flight: bool,
    },
}

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

/// How one operand's tile moves from global to shared memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TileLoad {
    /// The operand's non-K GEMM dimension (M for A, N for B).
    pub row_dim: Dim,
    /// Tile rows (block_m or block_n).
    pub rows: u32,
    /// Vector width in elements.
    pub vec: u32,
    /// Whether vectors run along K (else along the rows).
    pub along_k: bool,
    /// Vectors per tile.
    pub vectors: u32,
    /// Vectors per thread, rounded up.
    pub slots: u32,
    /// Whether the last slot is missing for some threads.
    pub partial: bool,
    /// Whether the copy bypasses registers (`cp.async`).
    pub async_copy: bool,
    /// Threads that share the load (ids from 0 in the loader): the block's, or a
    /// warp-specialised kernel's producer warpgroup.
    pub threads: u32,
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
        let wgmma = c.mma.is_wgmma();
        let math = if wgmma {
            let by = || format!("mma={}", c.mma.name());
            require(Capability::WarpgroupMma, by())?;
            require(Capability::Barriers, by())?;
            let in_flight = c.mma == crate::config::MmaPath::WgmmaInFlight;
            let shape = fit::wgmma_fit(
                arch,
                dt,
                (c.warp_m, c.warp_n, c.block_k),
                c.stages,
                in_flight,
            )
            .map_err(|r| fail(format!("mma={}: {r}", c.mma.name())))?;
            Math::Wgmma {
                n: shape.n,
                in_flight,
            }
        } else {
            let instr =
                fit::warp_instr(arch, dt, c.warp_m, c.warp_n, c.block_k).ok_or_else(|| {
                    fail(format!(
                        "the warp tile {}x{} and bk {} fit no instruction of {} ({})",
                        c.warp_m,
                        c.warp_n,
                        c.block_k,
                        arch.name,
                        fit::warp_rule_text(arch, dt)
                    ))
                })?;
            match MatrixUnit::of(&instr) {
                Some(unit) => {
                    let family = match unit {
                        MatrixUnit::Mma16816 => Capability::WarpMma,
                        MatrixUnit::Mfma { .. } => Capability::Mfma,
                    };
                    require(family, format!("the {} matrix path", dt.name()))?;
                    Math::Matrix(unit)
                }
                None => fma_math(c, warp, bytes).ok_or_else(|| {
                    fail(format!(
                        "no lane arrangement of {warp} lanes divides the {}x{} warp tile",
                        c.warp_m, c.warp_n
                    ))
                })?,
            }
        };
        let load =
            |name: &str, op, row_dim: Dim, rows: u32, vec: u32| -> Result<TileLoad, CodegenError> {
                tile_load(p, gemm, op, row_dim, rows, vec, c, threads, spec)
                    .map_err(|r| fail(format!("{name}: {r}")))
            };
        let mut a = load(Field::VecA.name(), &gemm.a, Dim::M, c.block_m, c.vec_a)?;
        let mut b = load(Field::VecB.name(), &gemm.b, Dim::N, c.block_n, c.vec_b)?;
        // wgmma's MN-major tile (see below): blocks of one swizzle atom's rows (16, 32 or 64
        // of a 16-bit type, `fit::wgmma_mn_swizzle`), whatever the number of blocks (a 192-row
        // tile is three 64-row blocks), so its lines are one block wide.
        let mn_atom = |l: &TileLoad, extent: u32| {
            (wgmma && !l.along_k && c.lds == LdsLayout::Swizzled)
                .then(|| fit::wgmma_mn_swizzle(dt, l.rows, extent))
                .flatten()
                .map(|s| fit::mn_atom_rows(dt, s))
        };
        let tile = |l: &TileLoad, name: &str, extent: u32| {
            let atom = mn_atom(l, extent);
            let (line, lines) = match atom {
                _ if l.along_k => (c.block_k, l.rows),
                Some(atom) => (atom, c.block_k * (l.rows / atom)),
                None => (l.rows, c.block_k),
            };
            let mut t = SmemTile::new(l.along_k, line, lines, l.rows, c.lds, bytes)
                .map_err(|r| fail(format!("{name}: {r}")))?;
            // MN-major: blocks of `atom` rows, each `bk` swizzled lines of one atom's span.
            t.row_blocks = atom.filter(|_| !l.along_k).map(|atom| atom * c.block_k);
            Ok::<_, CodegenError>(t)
        };
        let mut sa = tile(&a, "A", c.warp_m)?;
        let mut sb = tile(&b, "B", c.warp_n)?;
        if wgmma {
            // The descriptors describe swizzled tiles at 1024-byte-aligned stage bases. K-major:
            // the `[row][k]` tile of 128-byte lines of `bk` with the 128-byte swizzle (16-byte
            // chunk c of line r at c ^ r%8). MN-major (the transposed mode, for an operand
            // contiguous along its rows): the `[k][row]` tile laid out as blocks of one swizzle
            // atom's rows (`fit::wgmma_mn_swizzle`), which the warpgroup tile covers whole.
            for (t, name, extent, rows) in [
                (&sa, "A", c.warp_m, c.block_m),
                (&sb, "B", c.warp_n, c.block_n),
            ] {
                let lines_ok = if t.kmajor {
                    t.swizzle == Some(8) && t.stride * bytes == 128
                } else {
                    t.row_blocks.is_some()
                };
                if !lines_ok {
                    return Err(fail(format!(
                        "mma=wg: {name}'s shared-memory tile is not 128-byte swizzled lines of K \
                         or, when its vectors run along its rows, of swizzle-atom blocks (16, 32 \
                         or 64 rows) that the warpgroup tile covers whole (vectors along {}, \
                         {rows} rows, warpgroup tile {extent}, lds must be swz)",
                        if t.kmajor { "K" } else { "the rows" }
                    )));
                }
            }
        }
        sb.region = c.stages * sa.stage;
        sa.region = 0;
        let split = c.split_k > 1;
        let atomic = (split && c.red == Reduction::Atomic).then_some(dt != DType::F32);
        let smem_bytes = c.stages as u64 * (sa.stage + sb.stage) as u64 * bytes as u64;
        if smem_bytes > u32::MAX as u64 / 2 {
            return Err(fail(format!("{smem_bytes} bytes of shared memory")));
        }
        if let Some(why) = c.persistent_refusal() {
            return Err(fail(format!("pk: {why}")));
        }
        let persistent = c.persistent == Grid::Persistent;
        // The mbarriers go after everything the staged epilogue may reuse.
        let barriers_at = smem_bytes.next_multiple_of(8);
        let pipeline_end = if c.ld.uses_tma() {
            barriers_at + 8 * c.ld.mbarriers(c.stages) as u64
        } else {
            smem_bytes
        };
        // `wspp`: one epilogue region per consumer warpgroup (each writes its own tile while
        // the other multiplies), laid out alike.
        let regions = c.tiles_per_block();
        // pk=1: the producer refills stages while the consumers run the epilogue, so the
        // epilogue's shared memory (the fix-up's verdict words, the staged C tile) is a region
        // of its own after the barriers ([`persistent_epilogue`]).
        let align = crate::config::stage_align(c.epilogue);
        let epilogue = persistent.then(|| persistent_epilogue(pipeline_end, align));
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
        let c_stage = if c.vec_c > 1 && atomic.is_none() && tma_store.is_none() {
            let budget = match epilogue {
                None => smem_bytes,
                Some(at) => crate::config::persistent_c_budget(
                    pipeline_end,
                    arch.smem_per_block as u64,
                    regions,
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
        if let (Some(along), Some(shared)) = (c.cluster.along(), c.cluster.shared_operand()) {
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
        let barriers = tma_used.then_some(barriers_at as u32);
        // Bytes from one consumer's epilogue region to the next (`wspp`).
        let region = epilogue.map_or(0, |_| {
            let staged = match tma_store {
                Some(st) => st.stage_bytes(),
                None => c_stage.map_or(0, |st| u64::from(st.lines_per_pass * st.stride * bytes)),
            };
            crate::config::persistent_region_bytes(pipeline_end, staged, align) as u32
        });
        let bytes = match epilogue {
            Some(e) => e.verdict_at + regions * region,
            None => pipeline_end as u32,
        };
        let smem = Smem {
            a: sa,
            b: sb,
            stages: c.stages,
            bytes,
            barriers,
            epilogue: epilogue.map(|e| e.verdict_at),
            c_at: epilogue.map(|e| e.c_at),
            region,
        };
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
        })
    }
}

/// Where a persistent kernel's epilogue region lies (bytes into shared memory).
#[derive(Debug, Clone, Copy)]
struct EpilogueRegion {
    /// The fix-up's two verdict words.
    verdict_at: u32,
    /// The staged C tile (16-byte aligned, for its vector loads).
    c_at: u32,
}

/// The epilogue region of a persistent kernel whose pipeline (stages and mbarriers) ends at
/// byte `pipeline_end`, its C tile aligned to `align`: the one layout of it, which legality's `pk` rule repeats in bytes
/// ([`crate::config::persistent_epilogue_at`]).
fn persistent_epilogue(pipeline_end: u64, align: u64) -> EpilogueRegion {
    let (verdict_at, c_at) = crate::config::persistent_epilogue_at(pipeline_end, align);
    EpilogueRegion {
        verdict_at: verdict_at as u32,
        c_at: c_at as u32,
    }
}

/// The TMA loads of `ld=tma` ([`tma_operands`]), after the path and target checks.
fn tma_plan(
    p: &ConvProblem,
    gemm: &Gemm,
    c: &PerfConfig,
    spec: &dyn TargetSpec,
    loads: [&TileLoad; 2],
) -> Result<[Option<TmaTile>; 2], String> {
    let ld = c.ld.name();
    if !c.mma.is_wgmma() {
        return Err(format!(
            "ld={ld} loads the wgmma path's swizzled stages: it needs mma=wg or wg1"
        ));
    }
    if spec.bulk_tensor_copy().is_none() {
        return Err(format!("ld={ld}: {} has no TMA", spec.target()));
    }
    tma_operands(p, gemm, c, loads.map(|l| l.async_copy)).map_err(|r| format!("ld={ld}: {r}"))
}

/// The FMA lane arrangement with the fewest shared-memory reads per k (tm + tn), ties broken
/// toward more lanes along N (coalesced C stores).
fn fma_math(c: &PerfConfig, warp: u32, bytes: u32) -> Option<Math> {
    let mut best: Option<(u32, u32, u32)> = None;
    let mut lanes_n = 1;
    while lanes_n <= warp {
        let lanes_m = warp / lanes_n;
        if c.warp_m.is_multiple_of(lanes_m) && c.warp_n.is_multiple_of(lanes_n) {
            let cost = c.warp_m / lanes_m + c.warp_n / lanes_n;
            if best.is_none_or(|(b, _, _)| cost <= b) {
                best = Some((cost, lanes_m, lanes_n));
            }
        }
        lanes_n *= 2;
    }
    let mut kvec = CHUNK / bytes;
    while !c.block_k.is_multiple_of(kvec) {
        kvec /= 2;
    }
    best.map(|(_, lanes_m, lanes_n)| Math::Fma {
        lanes_m,
        lanes_n,
        kvec,
    })
}

#[allow(clippy::too_many_arguments)]
fn tile_load(
    p: &ConvProblem,
    gemm: &Gemm,
    op: &crate::lowering::Operand,
    row_dim: Dim,
    rows: u32,
    vec: u32,
    c: &PerfConfig,
    threads: u32,
    spec: &dyn TargetSpec,
) -> Result<TileLoad, String> {
    let bytes = p.dtype().bytes();
    let contiguous = op.contiguity(p, gemm, [row_dim, Dim::K]).dim;
    if !vec.is_power_of_two() || vec * bytes > CHUNK {
        return Err(format!(
            "width {vec} is not a power of two of at most 16 bytes"
        ));
    }
    let along_k = match contiguous {
        Some(d) => d == Dim::K,
        None if vec == 1 => true,
        None => {
            return Err(format!(
                "width {vec} but the operand is contiguous along no GEMM dimension"
            ))
        }
    };
    let (span, len, what) = if along_k {
        (c.block_k, gemm.k_len(), "K")
    } else {
        (rows, gemm.len(row_dim), "the tile rows")
    };
    if span % vec != 0 || len % vec != 0 {
        return Err(format!(
            "width {vec} does not divide {what} (tile {span}, GEMM {len})"
        ));
    }
    let vectors = rows * c.block_k / vec;
    let vb = vec * bytes;
    Ok(TileLoad {
        row_dim,
        rows,
        vec,
        along_k,
        vectors,
        slots: vectors.div_ceil(threads),
        partial: !vectors.is_multiple_of(threads),
        async_copy: spec.async_copy().is_some() && matches!(vb, 4 | 8 | 16),
        threads,
    })
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
