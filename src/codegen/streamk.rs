//! The stream-K GEMM kernel (`red=stream`): a persistent grid of [`StreamK::blocks`] blocks
//! (at most one per SM), block `b` walking the iterations `[b · per, (b + 1) · per)` of the
//! tile-major (output tile, K tile) space. Its range crosses a few output tiles; per tile it
//! runs the ordinary main loop over its K tiles of that tile, then either writes C directly
//! (it covered the whole tile) or hands its partial to the split-K fix-up ([`super::fixup`]),
//! whose last contributor adds the partials in block order and writes C. Nobody waits for
//! anybody, so any number of resident blocks (and the emulator's one at a time) is fine.
//!
//! Tiles are walked in plain row-major order within a group (`rs` is not used: every tile's
//! blocks run at once anyway).

use super::builder::Kb;
use super::fixup::{emit_fixup, Share};
use super::gemm::{emit_fault, epilogue, epilogue_staged, main_loop};
use super::loader::Loader;
use super::math::WarpMath;
use super::plan::GemmPlan;
use crate::config::StreamK;
use inkwell::values::{FloatValue, IntValue};

/// Emits the stream-K GEMM kernel of `plan` (whose scheduler is `sk`).
pub(crate) fn emit_streamk<'ctx>(kb: &Kb<'_, 'ctx>, plan: &GemmPlan, sk: &StreamK, fault: bool) {
    let fx = plan
        .fixup
        .unwrap_or_else(|| panic!("a stream-K plan without its fix-up"));
    kb.set_block_size(plan.threads);
    let tid = kb.thread_idx();
    let b = kb.block_idx(0);
    let per = sk.per_block as i64;
    let k_tiles = sk.k_tiles as i64;
    let total = sk.tiles as i64 * k_tiles;
    let start = kb.mulc(b, per);
    let end = kb.umin(kb.addc(start, per), kb.c(total));
    let first_tile = kb.udivc(start, sk.k_tiles);
    let per_group = plan.tiles_m * plan.tiles_n;
    let segments = kb.c(sk.max_segments() as i64);
    kb.for_range(kb.c(0), segments, |kb, seg| {
        let t = kb.add(first_tile, seg);
        let t_lo = kb.mulc(t, k_tiles);
        let t_hi = kb.addc(t_lo, k_tiles);
        let lo = kb.umax(start, t_lo);
        let hi = kb.umin(end, t_hi);
        // Block-uniform: the whole block takes the same branches below (barriers inside).
        kb.if_then(kb.ult(lo, hi), |kb| {
            let g = kb.udivc(t, per_group);
            let r = kb.uremc(t, per_group);
            let m0 = kb.mulc(kb.udivc(r, plan.tiles_n), plan.cfg.block_m as i64);
            let n0 = kb.mulc(kb.uremc(r, plan.tiles_n), plan.cfg.block_n as i64);
            let a = Loader::new(kb, plan, &plan.gemm.a, tid, g, m0);
            let bl = Loader::new(kb, plan, &plan.gemm.b, tid, g, n0);
            let math = WarpMath::new(kb, plan, tid);
            main_loop(plan).emit(kb, plan, &a, &bl, &math, kb.sub(lo, t_lo), kb.sub(hi, t_lo));
            let write_c =
                |kb: &Kb<'_, 'ctx>, vals: Option<Vec<FloatValue<'ctx>>>| match plan.c_stage {
                    Some(st) => epilogue_staged(kb, plan, &math, vals, &st, tid, g, m0, n0),
                    None => epilogue(kb, plan, &math, vals, g, m0, n0),
                };
            let whole = kb.all(&[kb.eq(lo, t_lo), kb.eq(hi, t_hi)]);
            let vals = math.values(kb);
            let split = kb.xor(whole, kb.cbool(true));
            kb.if_then(whole, |kb| write_c(kb, Some(vals.clone())));
            kb.if_then(split, |kb| {
                let share = share(kb, t, b, sk);
                emit_fixup(kb, plan, &fx, &share, tid, vals, |kb, sums| {
                    write_c(kb, Some(sums))
                });
            });
            // The next tile's copies overwrite the shared memory this one's epilogue or
            // fix-up verdict used.
            kb.barrier();
        });
    });
    if fault {
        emit_fault(kb, plan, tid, kb.c(0));
    }
}

/// Block `b`'s share of tile `t`: the blocks whose ranges meet the tile are consecutive, from
/// the one holding its first iteration to the one holding its last; `b`'s place among them is
/// the order of the sum.
fn share<'ctx>(
    kb: &Kb<'_, 'ctx>,
    t: IntValue<'ctx>,
    b: IntValue<'ctx>,
    sk: &StreamK,
) -> Share<'ctx> {
    let t_lo = kb.mulc(t, sk.k_tiles as i64);
    let first = kb.udivc(t_lo, sk.per_block);
    let last = kb.udivc(kb.addc(t_lo, sk.k_tiles as i64 - 1), sk.per_block);
    Share {
        tile: t,
        slice: kb.sub(b, first),
        count: kb.addc(kb.sub(last, first), 1),
    }
}
