//! Split-K reduced inside the GEMM kernel (`red=fixup`), instead of f32 atomics into a zeroed
//! buffer plus a finishing launch.
//!
//! Every slice of an output tile writes its f32 accumulators to its own slot of the workspace,
//! then counts itself in on the tile's arrival counter. The slice that arrives last (it sees
//! `slices - 1` before its increment) reads every slice's partials back, adds them **in slice
//! order** — the same sum, bit for bit, whichever block arrives last — and runs the ordinary
//! epilogue (conversion, staged vector stores). The others end. Nobody waits on anybody, so the
//! schedule works with any number of resident blocks (and in the emulator, which runs blocks
//! one after another).
//!
//! Memory ordering (PTX memory model, mirrored on AMD and in the emulator): each thread's
//! partial stores, then a device-scope fence by each thread, then the block barrier; thread 0
//! increments the counter with an acquire-release device-scope atomic and resets it to 0 when
//! it is last (no other slice touches it afterwards, so the next launch finds it zero); a
//! second barrier publishes its verdict through shared memory; the last block's threads fence
//! again before reading the partials. The fences take the workspace pointer so that LLVM
//! cannot move workspace accesses across them.
//!
//! Workspace layout, bytes: `[counters: u32 per output tile (and per group of slices, when
//! two-level), padded to 256][partials][group partials]`, the
//! partials of tile `t`, slice `s` at `(t · slices + s) · tile_values`, value `i` of thread
//! `tid` at `+ i · threads + tid` (coalesced; the reducing block has the same thread → value
//! map, so the layout never needs to know where a value sits in the tile). The counters must
//! be zero when a GEMM launch starts: the plan's zero launch clears them (a few hundred bytes)
//! before the first GEMM, and each GEMM leaves them zero for the next.

use super::builder::{Kb, Mem};
use super::plan::GemmPlan;
use super::schedule::Tile;
use crate::abi::ArgRole;
pub(crate) use crate::config::fixup::Fixup;
use crate::config::fixup::GROUP;
use inkwell::values::{FloatValue, IntValue, PointerValue};

/// One block's share of an output tile.
pub(crate) struct Share<'ctx> {
    /// The output tile ([`super::schedule::Tile::index`]).
    pub tile: IntValue<'ctx>,
    /// Which of the tile's contributions this is, `0 .. count`: the order of the sum.
    pub slice: IntValue<'ctx>,
    /// Contributions to this tile (at most [`Fixup::slices`]).
    pub count: IntValue<'ctx>,
}

impl<'ctx> Share<'ctx> {
    /// The split-K slice of a raster-scheduled tile: `split_k` contributions each.
    pub fn of_split(kb: &Kb<'_, 'ctx>, fx: &Fixup, tile: &Tile<'ctx>) -> Self {
        Share {
            tile: tile.index,
            slice: tile
                .slice
                .unwrap_or_else(|| panic!("fixup planned without split-K slices")),
            count: kb.c(fx.slices as i64),
        }
    }
}

/// Writes this share's partials, counts it in, and in the last share to arrive adds every
/// share's partials in slice order and calls `epilogue` with the sums (in the order of `vals`).
/// With more than [`GROUP_ABOVE`] slices the adding is two-level: the last arrival of each
/// group of [`GROUP`] consecutive slices adds the group's partials into a group partial, and
/// the last group to finish adds the group partials — each in a fixed order, so still
/// deterministic, and the serial tail reads `GROUP + slices / GROUP` partial tiles instead of
/// `slices` (on the H200 the one-level fix-up lost to atomics at 32–64 slices for that tail).
#[allow(clippy::too_many_arguments)]
pub(crate) fn emit_fixup<'ctx>(
    kb: &Kb<'_, 'ctx>,
    plan: &GemmPlan,
    fx: &Fixup,
    share: &Share<'ctx>,
    tid: IntValue<'ctx>,
    vals: Vec<FloatValue<'ctx>>,
    epilogue: impl FnOnce(&Kb<'_, 'ctx>, Vec<FloatValue<'ctx>>),
) {
    let threads = plan.threads;
    // The thread → value map covers the block tile at most once (a planner invariant).
    assert!(
        vals.len() as u64 * threads as u64 <= fx.tile_values as u64,
        "fixup: {} values × {threads} threads exceed the {}-value tile",
        vals.len(),
        fx.tile_values
    );
    let n = vals.len();
    let ws = kb.arg(ArgRole::Workspace);
    let slots = Slots {
        base: kb.gep_bytes(ws, fx.partials_at as i64),
        tile: share.tile,
        per_tile: fx.slots_per_tile(),
        tile_values: fx.tile_values,
        threads,
        tid,
    };
    slots.store(kb, share.slice, &vals);
    let counters = fx.counters_per_tile();
    let tile_counter = kb.mulc(share.tile, counters as i64);
    if !fx.grouped() {
        let last = arrive_last(kb, plan, ws, tid, tile_counter, share.count, 0);
        kb.if_then(last, |kb| {
            kb.fence_device(ws);
            epilogue(kb, slots.sum(kb, n, kb.c(0), fx.slices, share.count));
        });
        return;
    }
    // Level 1: the group of this slice.
    let group = kb.udivc(share.slice, GROUP);
    let first = kb.mulc(group, GROUP as i64);
    let in_group = kb.umin(kb.sub(share.count, first), kb.c(GROUP as i64));
    let group_counter = kb.add(kb.addc(tile_counter, 1), group);
    let last_in_group = arrive_last(kb, plan, ws, tid, group_counter, in_group, 0);
    kb.if_then(last_in_group, |kb| {
        kb.fence_device(ws);
        let sums = slots.sum(kb, n, first, GROUP, in_group);
        let groups = Slots {
            base: kb.gep_bytes(ws, fx.groups_at() as i64),
            per_tile: fx.groups(),
            ..slots
        };
        groups.store(kb, group, &sums);
        // Level 2: the tile's groups.
        let count = kb.udivc(kb.addc(share.count, GROUP as i64 - 1), GROUP);
        let last = arrive_last(kb, plan, ws, tid, tile_counter, count, 1);
        kb.if_then(last, |kb| {
            kb.fence_device(ws);
            epilogue(kb, groups.sum(kb, n, kb.c(0), fx.groups(), count));
        });
    });
}

/// Partial tiles in the workspace: `per_tile` slots per output tile, value `i` of thread `tid`
/// of slot `s` of tile `t` at `((t · per_tile + s) · tile_values) + i · threads + tid`.
#[derive(Clone, Copy)]
struct Slots<'ctx> {
    base: PointerValue<'ctx>,
    tile: IntValue<'ctx>,
    per_tile: u32,
    tile_values: u32,
    threads: u32,
    tid: IntValue<'ctx>,
}

impl<'ctx> Slots<'ctx> {
    fn at(&self, kb: &Kb<'_, 'ctx>, s: IntValue<'ctx>, i: usize) -> PointerValue<'ctx> {
        let first = kb.mulc(
            kb.add(kb.mulc(self.tile, self.per_tile as i64), s),
            self.tile_values as i64,
        );
        let at = kb.add(first, kb.addc(self.tid, i as i64 * self.threads as i64));
        kb.gep(kb.f32t().into(), self.base, at)
    }

    fn store(&self, kb: &Kb<'_, 'ctx>, s: IntValue<'ctx>, vals: &[FloatValue<'ctx>]) {
        for (i, &v) in vals.iter().enumerate() {
            kb.store(Mem::Global, self.at(kb, s, i), v.into(), 4);
        }
    }

    /// The sums of slots `first + 0 .. first + count` (at most `most`), in slot order.
    fn sum(
        &self,
        kb: &Kb<'_, 'ctx>,
        n: usize,
        first: IntValue<'ctx>,
        most: u32,
        count: IntValue<'ctx>,
    ) -> Vec<FloatValue<'ctx>> {
        (0..n)
            .map(|i| {
                let load = |s: u32| {
                    let at = self.at(kb, kb.addc(first, s as i64), i);
                    kb.load(Mem::Global, kb.f32t().into(), at, 4)
                        .into_float_value()
                };
                // Slots past `count` hold nothing of this tile (a constant `count` folds the
                // test away); they are still inside the workspace.
                (1..most).fold(load(0), |acc, s| {
                    let more = kb.ult(kb.c(s as i64), count);
                    kb.select(more, kb.fadd(acc, load(s)).into(), acc.into())
                        .into_float_value()
                })
            })
            .collect()
    }
}

/// Publishes this block's stores and counts it in at counter `index` of `expected` arrivals;
/// returns whether it arrived last (block-uniform, through shared-memory word `slot`), and then
/// resets the counter for the next launch.
#[allow(clippy::too_many_arguments)]
fn arrive_last<'ctx>(
    kb: &Kb<'_, 'ctx>,
    plan: &GemmPlan,
    ws: PointerValue<'ctx>,
    tid: IntValue<'ctx>,
    index: IntValue<'ctx>,
    expected: IntValue<'ctx>,
    slot: u32,
) -> IntValue<'ctx> {
    kb.fence_device(ws);
    // Every warp is past its last multiply and its stores: shared memory is free for the
    // verdict, and thread 0's release covers the whole block's stores.
    kb.barrier();
    let i32t = kb.i32t();
    let words = match plan.smem.epilogue {
        None => kb.shared_base(),
        // pk=1: the epilogue's own region (the producer is refilling the stages).
        Some(at) => kb.gep_bytes(kb.shared_base(), at as i64),
    };
    let verdict = kb.gep(i32t.into(), words, kb.c(slot as i64));
    kb.if_then(kb.eq(tid, kb.c(0)), |kb| {
        let counter = kb.gep(i32t.into(), ws, index);
        let before = kb.arrive(counter);
        let last = kb.eq(before, kb.addc(expected, -1));
        if !KEEP_COUNTERS.with(|k| k.get()) {
            kb.if_then(last, |kb| {
                kb.store(Mem::Global, counter, kb.c(0).into(), 4);
            });
        }
        kb.store(Mem::Shared, verdict, kb.zext(last, i32t).into(), 4);
    });
    kb.barrier();
    let flag = kb
        .load(Mem::Shared, i32t.into(), verdict, 4)
        .into_int_value();
    kb.eq(flag, kb.c(1))
}

/// Runs `f` with the fix-up's counters left at their final count instead of reset: the wrong
/// protocol that breaks the kept-zero contract ([`crate::abi::KEPT_ZERO_BYTES`]), which the
/// emulator and the GPU check must catch. Never set outside the tests that prove that.
#[doc(hidden)]
pub fn with_counters_kept<R>(f: impl FnOnce() -> R) -> R {
    super::with_test_hook(&KEEP_COUNTERS, true, f)
}

thread_local! {
    static KEEP_COUNTERS: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partials_follow_the_padded_counters() {
        let f = Fixup::new(3, 4, 64, 32);
        assert_eq!(f.counter_bytes(), 256);
        assert_eq!(f.partials_at, 256);
        assert_eq!(f.workspace_bytes(), 256 + 3 * 4 * 64 * 32 * 4);
        let f = Fixup::new(65, 2, 16, 16);
        assert_eq!(f.counter_bytes(), 512);
        // 64 slices: two levels, groups of 8; a counter per tile and per group.
        let f = Fixup::new(3, 64, 16, 16);
        assert!(f.grouped() && f.groups() == 8 && f.counters_per_tile() == 9);
        assert_eq!(f.counter_bytes(), 256);
        assert_eq!(f.groups_at(), 256 + 3 * 64 * 256 * 4);
        assert_eq!(f.workspace_bytes(), f.groups_at() + 3 * 8 * 256 * 4);
    }
}
