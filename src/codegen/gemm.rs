//! The GEMM kernel: one block computes a `block_m × block_n` tile of C for one group and one
//! split-K slice. Which tile is the plan's tile scheduler's ([`super::schedule`]); how K is
//! walked is the plan's main loop's ([`super::mainloop`]); this file puts them together and
//! writes C (the epilogues), directly or through the split-K fix-up ([`super::fixup`]).

use super::builder::Kb;
use super::fixup::{emit_fixup, Share};
use super::index::Addressing;
use super::loader::Loader;
use super::mainloop::{MainLoop, MultistageLoop};
use super::math::WarpMath;
use super::plan::{CStage, GemmPlan, MainLoopKind, SchedulerKind};
use super::schedule::{Finish, RasterScheduler, TileScheduler, Unit};
use super::schedule_persistent::PersistentScheduler;
use super::schedule_phase::PhaseScheduler;
use super::tma::TmaLoop;
use super::ws::Work;
use crate::abi::ArgRole;
use crate::lowering::Dim;
use inkwell::values::{FloatValue, IntValue};

/// Emits the body of the GEMM kernel of `plan` into `kb`'s function: one block per tile, the
/// warp-specialised body ([`super::ws`], whatever the scheduler), or the `ld=cp` stream-K
/// kernel ([`super::streamk`]). `fault` adds a store far outside every buffer (the
/// fault-isolation test).
pub(crate) fn emit_gemm<'ctx>(kb: &Kb<'_, 'ctx>, plan: &GemmPlan, fault: bool) {
    kb.set_block_size(plan.launch_threads());
    if plan.ws.is_some() {
        return emit_ws_body(kb, plan, fault);
    }
    if let SchedulerKind::StreamK(sk) = plan.scheduler {
        return super::streamk::emit_streamk(kb, plan, &sk, fault);
    }
    emit_gemm_body(kb, plan, fault);
}

/// [`emit_gemm`] without declaring the block size, at the current insertion point: a kernel
/// that holds several GEMMs (one per branch) declares it once.
pub(crate) fn emit_gemm_body<'ctx>(kb: &Kb<'_, 'ctx>, plan: &GemmPlan, fault: bool) {
    let scheduler = scheduler(plan);
    let tid = kb.thread_idx();
    let tile = scheduler.tile(kb, plan);
    let (g, m0, n0) = (tile.g, tile.m0, tile.n0);
    let a = Loader::new(kb, plan, &plan.gemm.a, tid, g, m0);
    let b = Loader::new(kb, plan, &plan.gemm.b, tid, g, n0);
    let math = WarpMath::new(kb, plan, tid);
    let k = scheduler.k_range(kb, plan, &tile);
    main_loop(plan).emit(kb, plan, &a, &b, &math, k.0, k.1);
    let z = tile.z;
    write_unit(kb, plan, &math, &Unit::of_tile(tile, k), tid);
    if fault {
        emit_fault(kb, plan, tid, z);
    }
}

/// The body of a warp-specialised plan ([`super::ws`]): the same tile, K range, epilogue and
/// fix-up, the loads and the multiplies in warpgroups of their own; with `pk=1` each block
/// walks the persistent grid's work units, or its stream-K units.
fn emit_ws_body<'ctx>(kb: &Kb<'_, 'ctx>, plan: &GemmPlan, fault: bool) {
    let tid = kb.thread_idx();
    let walk = match plan.scheduler {
        SchedulerKind::Persistent(_) => Some(Work::Walk),
        SchedulerKind::StreamK(sk) => Some(Work::Stream(sk)),
        SchedulerKind::Raster | SchedulerKind::Phase { .. } => None,
    };
    if let Some(work) = walk {
        super::ws::emit(kb, plan, &work, tid, write_unit);
        if fault {
            emit_fault(kb, plan, tid, kb.block_idx(2));
        }
        return;
    }
    let scheduler = scheduler(plan);
    let tile = scheduler.tile(kb, plan);
    let k = scheduler.k_range(kb, plan, &tile);
    let z = tile.z;
    let unit = Unit::of_tile(tile, k);
    super::ws::emit(kb, plan, &Work::One(unit), tid, write_unit);
    if fault {
        emit_fault(kb, plan, tid, z);
    }
}

/// Writes the finished accumulators of `unit`: through the split-K fix-up where it has one
/// (a split-K slice, a stream-K unit covering part of its tile), then the TMA-store
/// (`ep=tma`), the staged or the direct epilogue. `plan` and `tid` are those of the warpgroups that computed them: a
/// ping-pong consumer's ([`super::ws_pingpong`]) has its own epilogue region in `plan.smem`
/// and its threads counted from 0.
pub(crate) fn write_unit<'ctx>(
    kb: &Kb<'_, 'ctx>,
    plan: &GemmPlan,
    math: &WarpMath<'_, 'ctx>,
    unit: &Unit<'ctx>,
    tid: IntValue<'ctx>,
) {
    let tile = &unit.tile;
    let (g, m0, n0) = (tile.g, tile.m0, tile.n0);
    // `None`: the accumulators themselves, read where the epilogue always read them.
    let write_c = |kb: &Kb<'_, 'ctx>, vals: Option<Vec<FloatValue<'ctx>>>| match (
        &plan.tma_store,
        plan.c_stage,
    ) {
        (Some(st), _) => {
            super::epilogue_tma::epilogue_tma(kb, plan, math, vals, st, tid, g, m0, n0)
        }
        (None, Some(st)) => epilogue_staged(kb, plan, math, vals, &st, tid, g, m0, n0),
        (None, None) => epilogue(kb, plan, math, vals, g, m0, n0),
    };
    let fixup = |kb: &Kb<'_, 'ctx>, share: &Share<'ctx>| {
        let fx = plan
            .fixup
            .unwrap_or_else(|| panic!("a split unit in a plan without the fix-up"));
        emit_fixup(kb, plan, &fx, share, tid, math.values(kb), |kb, sums| {
            write_c(kb, Some(sums))
        })
    };
    match (&unit.finish, &plan.fixup) {
        (Finish::Tile, Some(fx)) => fixup(kb, &Share::of_split(kb, fx, tile)),
        (Finish::Tile, None) | (Finish::Direct, _) => write_c(kb, None),
        (Finish::Stream { whole, share }, _) => {
            kb.if_then(*whole, |kb| write_c(kb, None));
            kb.if_then(kb.xor(*whole, kb.cbool(true)), |kb| fixup(kb, share));
        }
    }
}

/// The faulting test switch: thread 0 of block (0, 0, 0) stores ~1 TiB past C.
pub(crate) fn emit_fault<'ctx>(
    kb: &Kb<'_, 'ctx>,
    plan: &GemmPlan,
    tid: IntValue<'ctx>,
    z: IntValue<'ctx>,
) {
    let first = kb.all(&[
        kb.eq(tid, kb.c(0)),
        kb.eq(kb.block_idx(0), kb.c(0)),
        kb.eq(z, kb.c(0)),
    ]);
    kb.if_then(first, |kb| {
        let out = kb.tensor(plan.gemm.c.tensor);
        let far = kb.gep_bytes(out, 1 << 40);
        kb.store(super::builder::Mem::Global, far, kb.cf(1.0).into(), 4);
    });
}

/// The launch grid of the plan's schedule.
pub(crate) fn grid(plan: &GemmPlan) -> [u64; 3] {
    match plan.scheduler {
        SchedulerKind::StreamK(sk) => [sk.blocks as u64, 1, 1],
        SchedulerKind::Raster | SchedulerKind::Phase { .. } | SchedulerKind::Persistent(_) => {
            scheduler(plan).grid(plan)
        }
    }
}

/// The tile scheduler of a one-block-per-tile plan (a stream-K plan walks tiles in
/// [`super::streamk`] instead).
fn scheduler(plan: &GemmPlan) -> &'static dyn TileScheduler {
    match plan.scheduler {
        SchedulerKind::Raster => &RasterScheduler,
        SchedulerKind::Phase { .. } => &PhaseScheduler,
        SchedulerKind::Persistent(_) => &PersistentScheduler,
        SchedulerKind::StreamK(_) => panic!("a stream-K plan has no per-block tile scheduler"),
    }
}

/// The main loop the plan chose.
pub(crate) fn main_loop(plan: &GemmPlan) -> &'static dyn MainLoop {
    match plan.main_loop {
        MainLoopKind::Multistage => &MultistageLoop,
        MainLoopKind::Tma => &TmaLoop,
        MainLoopKind::Ws => {
            panic!("a warp-specialised plan has no one-loop main loop (gemm emits it)")
        }
    }
}

/// Writes the accumulators (or `vals`, in [`WarpMath::layout`]'s order) to C: converted and
/// stored, or atomically added for split-K with `red=atomic`;
/// elements in C's padding or past the GEMM edge are skipped.
pub(crate) fn epilogue<'ctx>(
    kb: &Kb<'_, 'ctx>,
    plan: &GemmPlan,
    math: &WarpMath<'_, 'ctx>,
    vals: Option<Vec<FloatValue<'ctx>>>,
    g: IntValue<'ctx>,
    m0: IntValue<'ctx>,
    n0: IntValue<'ctx>,
) {
    let gemm = plan.gemm;
    let addr = Addressing::of(kb, plan, &gemm.c);
    let lay = math.layout(kb);
    let vals = vals.unwrap_or_else(|| math.values(kb));
    let gpart = addr.part(kb, Dim::G, g, false);
    let rows: Vec<_> = lay
        .rows
        .iter()
        .map(|&r| addr.part(kb, Dim::M, kb.add(m0, r), plan.edge[0]))
        .collect();
    let cols: Vec<_> = lay
        .cols
        .iter()
        .map(|&c| addr.part(kb, Dim::N, kb.add(n0, c), plan.edge[1]))
        .collect();
    let out = kb.tensor(gemm.c.tensor);
    let ws = kb.arg(ArgRole::Workspace);
    let f32t = kb.f32t().into();
    for (&v, &(ri, ci)) in vals.iter().zip(&lay.items) {
        let (valid, off) = addr.resolve(kb, &[&gpart, &rows[ri], &cols[ci]]);
        kb.if_then(valid, |kb| match plan.atomic {
            None => {
                let at = kb.gep(kb.elem_ty(plan.dt), out, off);
                kb.store(
                    super::builder::Mem::Global,
                    at,
                    kb.narrow(v, plan.dt),
                    plan.dt.bytes(),
                );
            }
            Some(to_workspace) => {
                let base = if to_workspace { ws } else { out };
                kb.atomic_add_f32(kb.gep(f32t, base, off), v);
            }
        });
    }
}

/// Writes C through shared memory: each thread puts its accumulators (converted) into a tile
/// whose lines run along C's contiguous dimension, then the block stores it in vectors of
/// `vec_c` (legality guarantees each vector is wholly inside C or wholly in its padding, and
/// aligned), one address computation per vector. A tile larger than the pipeline's shared
/// memory goes through in passes of whole lines.
#[allow(clippy::too_many_arguments)]
pub(crate) fn epilogue_staged<'ctx>(
    kb: &Kb<'_, 'ctx>,
    plan: &GemmPlan,
    math: &WarpMath<'_, 'ctx>,
    vals: Option<Vec<FloatValue<'ctx>>>,
    st: &CStage,
    tid: IntValue<'ctx>,
    g: IntValue<'ctx>,
    m0: IntValue<'ctx>,
    n0: IntValue<'ctx>,
) {
    let dt = plan.dt;
    let et = kb.elem_ty(dt);
    let base = match plan.smem.c_at {
        None => kb.shared_base(),
        // pk=1: a region of its own (the producer is refilling the stages).
        Some(at) => kb.gep_bytes(kb.shared_base(), at as i64),
    };
    let gemm = plan.gemm;
    let addr = Addressing::of(kb, plan, &gemm.c);
    let gpart = addr.part(kb, Dim::G, g, false);
    let out = kb.tensor(gemm.c.tensor);
    let vty = kb.vec_ty(dt, st.vec);
    let align = st.vec * dt.bytes();
    let per_line = st.line / st.vec;
    let lay = math.layout(kb);
    let vals = vals.unwrap_or_else(|| math.values(kb));
    let passes = st.passes();
    // The A/B tiles are dead once every warp is past its last multiply (pk=1: the previous
    // unit's last pass was read by everyone).
    kb.barrier();
    for pass in 0..passes {
        let first = pass * st.lines_per_pass;
        let lines = st.lines_per_pass.min(st.lines - first);
        // (line, position) of a tile element, lines relative to this pass.
        let split = |m: IntValue<'ctx>, n: IntValue<'ctx>| {
            let (line, pos) = if st.along_n { (m, n) } else { (n, m) };
            (kb.addc(line, -(first as i64)), pos)
        };
        let at = |kb: &Kb<'_, 'ctx>, line: IntValue<'ctx>, pos: IntValue<'ctx>| {
            kb.gep(et, base, kb.add(kb.mulc(line, st.stride as i64), pos))
        };
        for (&v, &(ri, ci)) in vals.iter().zip(&lay.items) {
            let (line, pos) = split(lay.rows[ri], lay.cols[ci]);
            let put = |kb: &Kb<'_, 'ctx>| {
                kb.store(
                    super::builder::Mem::Shared,
                    at(kb, line, pos),
                    kb.narrow(v, dt),
                    dt.bytes(),
                );
            };
            if passes == 1 {
                put(kb);
            } else {
                kb.if_then(kb.ultc(line, lines), put);
            }
        }
        kb.barrier();
        let vectors = lines * per_line;
        for s in 0..vectors.div_ceil(plan.threads) {
            let vid = kb.addc(tid, (s * plan.threads) as i64);
            let body = |kb: &Kb<'_, 'ctx>| {
                let line = kb.udivc(vid, per_line);
                let pos = kb.mulc(kb.uremc(vid, per_line), st.vec as i64);
                let tile_line = kb.addc(line, first as i64);
                let (m, n) = if st.along_n {
                    (tile_line, pos)
                } else {
                    (pos, tile_line)
                };
                let mp = addr.part(kb, Dim::M, kb.add(m0, m), plan.edge[0]);
                let np = addr.part(kb, Dim::N, kb.add(n0, n), plan.edge[1]);
                let (valid, off) = addr.resolve(kb, &[&gpart, &mp, &np]);
                kb.if_then(valid, |kb| {
                    let v = kb.load(super::builder::Mem::Shared, vty, at(kb, line, pos), align);
                    kb.store(super::builder::Mem::Global, kb.gep(et, out, off), v, align);
                });
            };
            if (s + 1) * plan.threads > vectors {
                kb.if_then(kb.ultc(vid, vectors), body);
            } else {
                body(kb);
            }
        }
        if pass + 1 < passes {
            // The next pass overwrites what this one just read.
            kb.barrier();
        }
    }
}
