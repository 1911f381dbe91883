//! The GEMM kernel: one block computes a `block_m × block_n` tile of C for one group and one
//! split-K slice, walking K in `block_k` steps through a ring of `stages` shared-memory buffers.
//!
//! Pipeline (stages ≥ 2), per K tile `t` of the block's range:
//! ```text
//! prologue: async copies of tiles 0..S-2 into buffers 0..S-2 (one commit group each);
//!           register-path tile 0 into buffer 0
//! loop t:   wait until tile t's group landed; barrier
//!           async copies of tile t+S-1 into buffer (t+S-1)%S   (buffer of t-1: all warps are
//!           past it, the barrier says so); commit (possibly empty, keeps the count uniform)
//!           register path: load tile t+1 from global into registers
//!           multiply buffer t%S
//!           register path: store tile t+1 into buffer (t+1)%S  (last read at t+1-S ≤ t-1)
//! ```
//! With one stage: load, barrier, multiply, barrier.
//!
//! With `wgmma` the multiply reads shared memory through the async proxy, so every thread
//! fences (`fence.proxy.async.shared::cta`) its landed copies and stores before the barrier that
//! precedes a multiply. With two stages the multiply waits for its own `wgmma` group, so a
//! buffer is free for the next copies once every warpgroup is past the following barrier. With
//! three or more, tile t's group is still running when the multiply returns (only t-1's is
//! retired), so the copies run `S-2` tiles ahead instead of `S-1`: at tile t they refill the
//! buffer of t-2, which every warpgroup retired before the barrier that opens tile t; a
//! register-path store of tile t+1 lands in the buffer of t+1-S ≤ t-2 likewise.

use super::builder::Kb;
use super::index::Addressing;
use super::loader::Loader;
use super::math::WarpMath;
use super::plan::{CStage, GemmPlan};
use crate::lowering::Dim;
use inkwell::values::IntValue;

/// Emits the body of the GEMM kernel of `plan` into `kb`'s function. `fault` adds a store far
/// outside every buffer (the fault-isolation test).
pub(crate) fn emit_gemm<'ctx>(kb: &Kb<'_, 'ctx>, plan: &GemmPlan, fault: bool) {
    let c = &plan.cfg;
    kb.set_block_size(plan.threads);
    let tid = kb.thread_idx();
    let (tile_m, tile_n) = raster(kb, plan);
    let z = kb.block_idx(2);
    let (g, slice) = if c.split_k > 1 {
        (kb.udivc(z, c.split_k), Some(kb.uremc(z, c.split_k)))
    } else {
        (z, None)
    };
    let m0 = kb.mulc(tile_m, c.block_m as i64);
    let n0 = kb.mulc(tile_n, c.block_n as i64);
    let a = Loader::new(kb, plan, &plan.gemm.a, tid, g, m0);
    let b = Loader::new(kb, plan, &plan.gemm.b, tid, g, n0);
    let math = WarpMath::new(kb, plan, tid);
    let (lo, hi) = match slice {
        None => (kb.c(0), kb.c(plan.k_tiles as i64)),
        Some(s) => {
            let lo = kb.mulc(s, plan.k_tiles_per_split as i64);
            let hi = kb.umin(
                kb.addc(lo, plan.k_tiles_per_split as i64),
                kb.c(plan.k_tiles as i64),
            );
            (lo, hi)
        }
    };
    pipeline(kb, plan, &a, &b, &math, lo, hi);
    match plan.c_stage {
        Some(st) => epilogue_staged(kb, plan, &math, &st, tid, g, m0, n0),
        None => epilogue(kb, plan, &math, g, m0, n0),
    }
    if fault {
        let first = kb.all(&[
            kb.eq(tid, kb.c(0)),
            kb.eq(kb.block_idx(0), kb.c(0)),
            kb.eq(z, kb.c(0)),
        ]);
        kb.if_then(first, |kb| {
            let out = kb.param(plan.gemm.c.tensor as u32);
            let far = kb.gep_bytes(out, 1 << 40);
            kb.store(super::builder::Mem::Global, far, kb.cf(1.0).into(), 4);
        });
    }
}

/// Block index → (tile_m, tile_n). With raster r > 1, blocks walk N within groups of r tile
/// rows, so consecutive blocks reuse A and B from L2.
fn raster<'ctx>(kb: &Kb<'_, 'ctx>, plan: &GemmPlan) -> (IntValue<'ctx>, IntValue<'ctx>) {
    let bid = kb.block_idx(0);
    let r = plan.cfg.raster.min(plan.tiles_m);
    if r <= 1 {
        return (kb.udivc(bid, plan.tiles_n), kb.uremc(bid, plan.tiles_n));
    }
    let per_group = r * plan.tiles_n;
    let first = kb.mulc(kb.udivc(bid, per_group), r as i64);
    let rows = kb.umin(kb.sub(kb.c(plan.tiles_m as i64), first), kb.c(r as i64));
    let local = kb.uremc(bid, per_group);
    (kb.add(first, kb.urem(local, rows)), kb.udiv(local, rows))
}

fn pipeline<'ctx>(
    kb: &Kb<'_, 'ctx>,
    plan: &GemmPlan,
    a: &Loader<'_, 'ctx>,
    b: &Loader<'_, 'ctx>,
    math: &WarpMath<'_, 'ctx>,
    lo: IntValue<'ctx>,
    hi: IntValue<'ctx>,
) {
    let s = plan.smem.stages;
    let ahead = plan.cfg.tiles_ahead();
    let loaders = [a, b];
    let any_async = loaders.iter().any(|l| l.load.async_copy);
    let any_regs = loaders.iter().any(|l| !l.load.async_copy);
    let stage_of = |kt: IntValue<'ctx>| kb.uremc(kb.sub(kt, lo), s);
    let multiply =
        |stage: IntValue<'ctx>| math.step(kb, a.stage_base(kb, stage), b.stage_base(kb, stage));
    let async_reader = matches!(plan.math, super::plan::Math::Wgmma { .. });
    let fence = |kb: &Kb<'_, 'ctx>| {
        if async_reader {
            kb.fence_proxy_async();
        }
    };
    if s == 1 {
        kb.for_range(lo, hi, |kb, kt| {
            let zero = kb.c(0);
            for l in loaders {
                if l.load.async_copy {
                    l.issue_async(kb, kt, zero);
                } else {
                    l.load_regs(kb, kt);
                    l.store_regs(kb, zero);
                }
            }
            if any_async {
                kb.cp_async_commit();
                kb.cp_async_wait(0);
            }
            fence(kb);
            kb.barrier();
            multiply(zero);
            kb.barrier();
        });
        return;
    }
    for i in 0..ahead {
        let kt = kb.addc(lo, i as i64);
        if any_async {
            kb.if_then(kb.ult(kt, hi), |kb| {
                for l in loaders.iter().filter(|l| l.load.async_copy) {
                    l.issue_async(kb, kt, kb.c(i as i64));
                }
            });
            kb.cp_async_commit();
        }
    }
    if any_regs {
        kb.if_then(kb.ult(lo, hi), |kb| {
            for l in loaders.iter().filter(|l| !l.load.async_copy) {
                l.load_regs(kb, lo);
                l.store_regs(kb, kb.c(0));
            }
        });
    }
    kb.for_range(lo, hi, |kb, kt| {
        if any_async {
            kb.cp_async_wait(ahead - 1);
        }
        fence(kb);
        kb.barrier();
        if any_async {
            let next = kb.addc(kt, ahead as i64);
            kb.if_then(kb.ult(next, hi), |kb| {
                for l in loaders.iter().filter(|l| l.load.async_copy) {
                    l.issue_async(kb, next, stage_of(next));
                }
            });
            kb.cp_async_commit();
        }
        let next = kb.addc(kt, 1);
        let more = kb.ult(next, hi);
        if any_regs {
            kb.if_then(more, |kb| {
                for l in loaders.iter().filter(|l| !l.load.async_copy) {
                    l.load_regs(kb, next);
                }
            });
        }
        multiply(stage_of(kt));
        if any_regs {
            kb.if_then(more, |kb| {
                for l in loaders.iter().filter(|l| !l.load.async_copy) {
                    l.store_regs(kb, stage_of(next));
                }
            });
        }
    });
    math.drain(kb);
    if any_async {
        // No copy may still be in flight when the kernel ends (the last groups are empty, but
        // the count is what the hardware tracks).
        kb.cp_async_wait(0);
    }
}

/// Writes the accumulators to C: converted and stored, or atomically added for split-K;
/// elements in C's padding or past the GEMM edge are skipped.
fn epilogue<'ctx>(
    kb: &Kb<'_, 'ctx>,
    plan: &GemmPlan,
    math: &WarpMath<'_, 'ctx>,
    g: IntValue<'ctx>,
    m0: IntValue<'ctx>,
    n0: IntValue<'ctx>,
) {
    let gemm = plan.gemm;
    let addr = Addressing::new(plan.problem, gemm, &gemm.c);
    let lay = math.layout(kb);
    let vals = math.values(kb);
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
    let out = kb.param(gemm.c.tensor as u32);
    let ws = kb.param(3);
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
fn epilogue_staged<'ctx>(
    kb: &Kb<'_, 'ctx>,
    plan: &GemmPlan,
    math: &WarpMath<'_, 'ctx>,
    st: &CStage,
    tid: IntValue<'ctx>,
    g: IntValue<'ctx>,
    m0: IntValue<'ctx>,
    n0: IntValue<'ctx>,
) {
    let dt = plan.dt;
    let et = kb.elem_ty(dt);
    let base = kb.shared_base();
    let gemm = plan.gemm;
    let addr = Addressing::new(plan.problem, gemm, &gemm.c);
    let gpart = addr.part(kb, Dim::G, g, false);
    let out = kb.param(gemm.c.tensor as u32);
    let vty = kb.vec_ty(dt, st.vec);
    let align = st.vec * dt.bytes();
    let per_line = st.line / st.vec;
    let lay = math.layout(kb);
    let vals = math.values(kb);
    let passes = st.passes();
    // The A/B tiles are dead once every warp is past its last multiply.
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
