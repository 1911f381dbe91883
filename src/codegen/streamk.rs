//! Stream-K (`red=stream`): the walk of a block of the [`StreamK`] schedule, shared by the two
//! kernels that run it. Block `b` first walks its share of the stream-K region — under
//! [`StreamCut::Contiguous`] iterations `[b · per, (b + 1) · per)` of the tile-major
//! (output tile, K tile) space (it crosses a few output tiles: one unit per tile it meets),
//! under [`StreamCut::Aligned`] one head piece of one tile or the tails of a few — then its
//! data-parallel tiles, whole. A unit that covers only part of its tile hands its partial to the split-K
//! fix-up ([`super::fixup`]), whose last contributor adds the partials in K order (the
//! contributors' block order) and writes C. Nobody waits for anybody, so any number of
//! resident blocks (and the emulator's one at a time) is fine, and a block never idles on a
//! turnstile while its producer could load the next unit.
//!
//! - `ld=cp` ([`emit_streamk`]): per unit, the ordinary main loop over its K tiles, then the
//!   epilogue or the fix-up, and a block barrier before the next unit's copies reuse the
//!   shared memory.
//! - `ld=ws` with `pk=1` ([`super::ws`]'s `Work::Stream`): the producer walks the same units,
//!   its stage ring running on across them as for the persistent grid's units.
//!
//! Tiles are numbered as the raster scheduler numbers them within a group (rasterised by
//! `rs`), so the data-parallel waves read neighbouring tiles at once.

use super::builder::Kb;
use super::fixup::Share;
use super::gemm::{emit_fault, main_loop, write_unit};
use super::loader::Loader;
use super::math::WarpMath;
use super::plan::GemmPlan;
use super::schedule::{raster_tile_at, Finish, Unit};
use crate::config::{StreamCut, StreamK};
use inkwell::values::IntValue;

/// Emits the `ld=cp` stream-K GEMM kernel of `plan` (whose scheduler is `sk`).
pub(crate) fn emit_streamk<'ctx>(kb: &Kb<'_, 'ctx>, plan: &GemmPlan, sk: &StreamK, fault: bool) {
    let tid = kb.thread_idx();
    walk_units(kb, plan, sk, |kb, unit| {
        let (tile, lo, hi) = (&unit.tile, unit.lo, unit.hi);
        let a = Loader::new(kb, plan, &plan.gemm.a, tid, tile.g, tile.m0);
        let b = Loader::new(kb, plan, &plan.gemm.b, tid, tile.g, tile.n0);
        let math = WarpMath::new(kb, plan, tid);
        main_loop(plan).emit(kb, plan, &a, &b, &math, lo, hi);
        write_unit(kb, plan, &math, unit, tid);
        // The next unit's copies overwrite the shared memory this one's epilogue or fix-up
        // verdict used.
        kb.barrier();
    });
    if fault {
        emit_fault(kb, plan, tid, kb.c(0));
    }
}

/// Calls `body` for each unit of block `blockIdx.x`'s walk, in order: the non-empty
/// segments of its stream-K range (block-uniform branches: `body` may hold barriers), then
/// its data-parallel tiles. [`StreamK::units_of`] is the same walk on the host.
pub(crate) fn walk_units<'ctx>(
    kb: &Kb<'_, 'ctx>,
    plan: &GemmPlan,
    sk: &StreamK,
    body: impl Fn(&Kb<'_, 'ctx>, &Unit<'ctx>),
) {
    match sk.cut {
        StreamCut::Contiguous => walk_contiguous(kb, plan, sk, &body),
        StreamCut::Aligned { .. } => walk_aligned(kb, plan, sk, &body),
    }
    if sk.dp_waves > 0 {
        let first = kb.addc(kb.block_idx(0), sk.sk_tiles() as i64);
        kb.for_range(kb.c(0), kb.c(sk.dp_waves as i64), |kb, j| {
            let t = kb.add(first, kb.mulc(j, sk.blocks as i64));
            body(
                kb,
                &Unit {
                    tile: tile_at(kb, plan, t),
                    lo: kb.c(0),
                    hi: kb.c(sk.k_tiles as i64),
                    finish: Finish::Direct,
                },
            );
        });
    }
}

/// The stream-K units of [`StreamCut::Contiguous`]: the non-empty segments of the block's
/// range, tile by tile.
fn walk_contiguous<'ctx>(
    kb: &Kb<'_, 'ctx>,
    plan: &GemmPlan,
    sk: &StreamK,
    body: &impl Fn(&Kb<'_, 'ctx>, &Unit<'ctx>),
) {
    let b = kb.block_idx(0);
    let per = sk.per_block as i64;
    let k_tiles = sk.k_tiles as i64;
    let total = sk.sk_tiles() as i64 * k_tiles;
    let start = kb.mulc(b, per);
    let end = kb.umin(kb.addc(start, per), kb.c(total));
    let first_tile = kb.udivc(start, sk.k_tiles);
    let segments = kb.c(sk.max_segments() as i64);
    kb.for_range(kb.c(0), segments, |kb, seg| {
        let t = kb.add(first_tile, seg);
        let t_lo = kb.mulc(t, k_tiles);
        let t_hi = kb.addc(t_lo, k_tiles);
        let lo = kb.umax(start, t_lo);
        let hi = kb.umin(end, t_hi);
        kb.if_then(kb.ult(lo, hi), |kb| {
            let whole = kb.all(&[kb.eq(lo, t_lo), kb.eq(hi, t_hi)]);
            body(
                kb,
                &Unit {
                    tile: tile_at(kb, plan, t),
                    lo: kb.sub(lo, t_lo),
                    hi: kb.sub(hi, t_lo),
                    finish: Finish::Stream {
                        whole,
                        share: share(kb, t, b, sk),
                    },
                },
            );
        });
    });
}

/// The stream-K units of [`StreamCut::Aligned`], as [`StreamK::aligned_walk`] computes them
/// on the host: a head piece (`b < splits · tiles`: piece `b % splits` of tile `b / splits`),
/// else a run of tails, else nothing. One loop over the block's tiles with block-uniform
/// bounds, so `body` is emitted once.
fn walk_aligned<'ctx>(
    kb: &Kb<'_, 'ctx>,
    plan: &GemmPlan,
    sk: &StreamK,
    body: &impl Fn(&Kb<'_, 'ctx>, &Unit<'ctx>),
) {
    let StreamCut::Aligned {
        splits,
        tail,
        tails_per_block,
    } = sk.cut
    else {
        unreachable!("walk_aligned of a {:?} cut", sk.cut);
    };
    let b = kb.block_idx(0);
    let tiles = sk.sk_tiles();
    let (k_tiles, head) = (sk.k_tiles as i64, (sk.k_tiles - tail) as i64);
    let heads = (splits * tiles) as i64;
    let in_head = kb.ult(b, kb.c(heads));
    let j = kb.uremc(b, splits);
    // Tail blocks: past the heads, before the stream-K blocks' end.
    let first_tail = kb.mulc(kb.sub(b, kb.c(heads)), tails_per_block as i64);
    let in_tail = kb.all(&[
        kb.ult(kb.c(heads - 1), b),
        kb.ult(b, kb.c(sk.sk_blocks() as i64)),
    ]);
    let tail_count = kb.umin(
        kb.c(tails_per_block as i64),
        kb.sub(kb.c(tiles as i64), kb.umin(first_tail, kb.c(tiles as i64))),
    );
    let first = kb.seli(in_head, kb.udivc(b, splits), first_tail);
    let count = kb.seli(in_head, kb.c(1), kb.seli(in_tail, tail_count, kb.c(0)));
    let lo = kb.seli(in_head, kb.mulc(j, sk.per_block as i64), kb.c(head));
    let hi = kb.seli(
        in_head,
        kb.umin(kb.addc(lo, sk.per_block as i64), kb.c(head)),
        kb.c(k_tiles),
    );
    let slice = kb.seli(in_head, j, kb.c(splits as i64));
    let whole = kb.all(&[kb.eq(lo, kb.c(0)), kb.eq(hi, kb.c(k_tiles))]);
    kb.for_range(kb.c(0), count, |kb, u| {
        let t = kb.add(first, u);
        body(
            kb,
            &Unit {
                tile: tile_at(kb, plan, t),
                lo,
                hi,
                finish: Finish::Stream {
                    whole,
                    share: Share {
                        tile: t,
                        slice,
                        count: kb.c(sk.max_contributors() as i64),
                    },
                },
            },
        );
    });
}

/// Output tile `t` (over groups and tiles): the raster scheduler's tile `t mod tiles` of
/// group `t / tiles`.
fn tile_at<'ctx>(
    kb: &Kb<'_, 'ctx>,
    plan: &GemmPlan,
    t: IntValue<'ctx>,
) -> super::schedule::Tile<'ctx> {
    let per_group = plan.tiles_m * plan.tiles_n;
    raster_tile_at(kb, plan, kb.uremc(t, per_group), |kb| {
        kb.udivc(t, per_group)
    })
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
