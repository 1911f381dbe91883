//! Stream-K (`red=stream`): the walk of a block of the [`StreamK`] schedule, shared by the two
//! kernels that run it. Block `b` first walks its share of the stream-K region — under
//! [`StreamCut::Contiguous`](crate::config::StreamCut::Contiguous) iterations
//! `[b · per, (b + 1) · per)` of the tile-major (output tile, K tile) space (it crosses a few
//! output tiles: one unit per tile it meets), under
//! [`StreamCut::Aligned`](crate::config::StreamCut::Aligned) one head piece of one tile, or
//! past the heads a range of the tails' tile-major space — then its
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
use crate::config::{StreamK, StreamRegion as Region};
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
/// segments of its range in its stream-K region (the heads', or past them the tails'; one
/// loop with block-uniform bounds and branches, so `body` is emitted once and may hold
/// barriers), then its data-parallel tiles. [`StreamK::units_of`] is the same walk on the host.
pub(crate) fn walk_units<'ctx>(
    kb: &Kb<'_, 'ctx>,
    plan: &GemmPlan,
    sk: &StreamK,
    body: impl Fn(&Kb<'_, 'ctx>, &Unit<'ctx>),
) {
    let (heads, tails) = sk.regions();
    let b = kb.block_idx(0);
    let in_tail = match tails {
        Some(_) => kb.ult(kb.c(heads.blocks() as i64 - 1), b),
        None => kb.cbool(false),
    };
    // This block's region: the heads', else the tails' (the same when there are none).
    let other = tails.unwrap_or(heads);
    let pick = |h: u64, t: u64| kb.seli(in_tail, kb.c(t as i64), kb.c(h as i64));
    let i = kb.seli(in_tail, kb.sub(b, kb.c(heads.blocks() as i64)), b);
    let per = pick(heads.per.into(), other.per.into());
    let len = pick(heads.len.into(), other.len.into());
    let k0 = pick(heads.k0.into(), other.k0.into());
    let total = pick(heads.iterations(), other.iterations());
    let start = kb.mul(i, per);
    let end = kb.umin(kb.add(start, per), total);
    let first_tile = kb.seli(
        in_tail,
        kb.udivc(start, other.len),
        kb.udivc(start, heads.len),
    );
    let k_tiles = kb.c(sk.k_tiles as i64);
    // A unit is the whole tile where it covers its region's share of the tile and that share is
    // all of the tile's K range (the tile-major cut's region; an aligned cut's heads only
    // without tails).
    let whole_region = kb.seli(in_tail, kb.cbool(false), kb.cbool(heads.len == sk.k_tiles));
    kb.for_range(kb.c(0), kb.c(sk.max_segments() as i64), |kb, seg| {
        let t = kb.add(first_tile, seg);
        let t_lo = kb.mul(t, len);
        let t_hi = kb.add(t_lo, len);
        let lo = kb.umax(start, t_lo);
        let hi = kb.umin(end, t_hi);
        kb.if_then(kb.ult(lo, hi), |kb| {
            let whole = kb.all(&[kb.eq(lo, t_lo), kb.eq(hi, t_hi), whole_region]);
            body(
                kb,
                &Unit {
                    tile: tile_at(kb, plan, t),
                    lo: kb.add(k0, kb.sub(lo, t_lo)),
                    hi: kb.add(k0, kb.sub(hi, t_lo)),
                    finish: Finish::Stream {
                        whole,
                        share: share(kb, t, i, in_tail, &heads, tails.as_ref()),
                    },
                },
            );
        });
    });
    if sk.dp_waves > 0 {
        let first = kb.addc(b, sk.sk_tiles() as i64);
        kb.for_range(kb.c(0), kb.c(sk.dp_waves as i64), |kb, j| {
            let t = kb.add(first, kb.mulc(j, sk.blocks as i64));
            body(
                kb,
                &Unit {
                    tile: tile_at(kb, plan, t),
                    lo: kb.c(0),
                    hi: k_tiles,
                    finish: Finish::Direct,
                },
            );
        });
    }
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

/// The share of tile `t` of block `i` of its region (the tails' when `in_tail`): a region's
/// blocks that meet a tile are consecutive, from the one holding its first iteration to the
/// one holding its last; the heads' come first in the sum (their K tiles do), then the
/// tails'.
fn share<'ctx>(
    kb: &Kb<'_, 'ctx>,
    t: IntValue<'ctx>,
    i: IntValue<'ctx>,
    in_tail: IntValue<'ctx>,
    heads: &Region,
    tails: Option<&Region>,
) -> Share<'ctx> {
    let (h_first, h_count) = contributors(kb, t, heads);
    let Some(tails) = tails else {
        return Share {
            tile: t,
            slice: kb.sub(i, h_first),
            count: h_count,
        };
    };
    let (t_first, t_count) = contributors(kb, t, tails);
    Share {
        tile: t,
        slice: kb.seli(
            in_tail,
            kb.add(h_count, kb.sub(i, t_first)),
            kb.sub(i, h_first),
        ),
        count: kb.add(h_count, t_count),
    }
}

/// The first of region `r`'s blocks that meet tile `t`, and how many do
/// ([`Region::contributors`]).
fn contributors<'ctx>(
    kb: &Kb<'_, 'ctx>,
    t: IntValue<'ctx>,
    r: &Region,
) -> (IntValue<'ctx>, IntValue<'ctx>) {
    let lo = kb.mulc(t, r.len as i64);
    let first = kb.udivc(lo, r.per);
    let last = kb.udivc(kb.addc(lo, r.len as i64 - 1), r.per);
    (first, kb.addc(kb.sub(last, first), 1))
}
