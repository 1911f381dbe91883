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
//! Workspace layout, bytes: `[counters: u32 per output tile, padded to 256][partials]`, the
//! partials of tile `t`, slice `s` at `(t · slices + s) · tile_values`, value `i` of thread
//! `tid` at `+ i · threads + tid` (coalesced; the reducing block has the same thread → value
//! map, so the layout never needs to know where a value sits in the tile). The counters must
//! be zero when a GEMM launch starts: the plan's zero launch clears them (a few hundred bytes)
//! before the first GEMM, and each GEMM leaves them zero for the next.

use super::builder::{Kb, Mem};
use super::plan::GemmPlan;
use super::schedule::Tile;
use crate::abi::ArgRole;
use inkwell::values::{FloatValue, IntValue};

/// Alignment of the partials after the counters, bytes.
const PARTIALS_ALIGN: u64 = 256;

/// The fix-up of one GEMM kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Fixup {
    /// Output tiles (groups × tile rows × tile columns): one counter each.
    pub tiles: u32,
    /// Slices per tile.
    pub slices: u32,
    /// f32 values of one block tile.
    pub tile_values: u32,
    /// Byte offset of the partials in the workspace: after the counters of the launch's GEMM
    /// with the most tiles, so that no GEMM's partials overlap another's counters.
    pub partials_at: u64,
}

impl Fixup {
    /// The fix-up of a GEMM with `tiles` output tiles of `block_m × block_n`, `slices` each.
    pub fn new(tiles: u32, slices: u32, block_m: u32, block_n: u32) -> Self {
        let mut f = Fixup {
            tiles,
            slices,
            tile_values: block_m * block_n,
            partials_at: 0,
        };
        f.partials_at = f.counter_bytes();
        f
    }

    /// Bytes of the counters, padded.
    pub fn counter_bytes(&self) -> u64 {
        (self.tiles as u64 * 4).div_ceil(PARTIALS_ALIGN) * PARTIALS_ALIGN
    }

    /// Workspace bytes this kernel reaches.
    pub fn workspace_bytes(&self) -> u64 {
        self.partials_at + self.tiles as u64 * self.slices as u64 * self.tile_values as u64 * 4
    }
}

/// Writes this slice's partials, counts it in, and in the last slice to arrive adds every
/// slice's partials in slice order and calls `epilogue` with the sums (in the order of `vals`).
pub(crate) fn emit_fixup<'ctx>(
    kb: &Kb<'_, 'ctx>,
    plan: &GemmPlan,
    fx: &Fixup,
    tile: &Tile<'ctx>,
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
    let slice = tile
        .slice
        .unwrap_or_else(|| panic!("fixup planned without split-K slices"));
    let ws = kb.arg(ArgRole::Workspace);
    let f32t = kb.f32t();
    let partials = kb.gep_bytes(ws, fx.partials_at as i64);
    let slot = |kb: &Kb<'_, 'ctx>, s: IntValue<'ctx>, i: usize| {
        let first = kb.mulc(
            kb.add(kb.mulc(tile.index, fx.slices as i64), s),
            fx.tile_values as i64,
        );
        let at = kb.add(first, kb.addc(tid, i as i64 * threads as i64));
        kb.gep(f32t.into(), partials, at)
    };
    for (i, &v) in vals.iter().enumerate() {
        kb.store(Mem::Global, slot(kb, slice, i), v.into(), 4);
    }
    kb.fence_device(ws);
    // Every warp is past its last multiply and its partial stores: shared memory is free for
    // the verdict, and thread 0's release covers the whole block's stores.
    kb.barrier();
    let verdict = kb.shared_base();
    let i32t = kb.i32t();
    kb.if_then(kb.eq(tid, kb.c(0)), |kb| {
        let counter = kb.gep(i32t.into(), ws, tile.index);
        let before = kb.arrive(counter);
        let last = kb.eq(before, kb.c(fx.slices as i64 - 1));
        kb.if_then(last, |kb| {
            kb.store(Mem::Global, counter, kb.c(0).into(), 4);
        });
        let flag = kb.zext(last, i32t);
        kb.store(Mem::Shared, verdict, flag.into(), 4);
    });
    kb.barrier();
    let flag = kb
        .load(Mem::Shared, i32t.into(), verdict, 4)
        .into_int_value();
    kb.if_then(kb.eq(flag, kb.c(1)), |kb| {
        kb.fence_device(ws);
        let sums = (0..vals.len())
            .map(|i| {
                let load = |s: u32| {
                    kb.load(Mem::Global, f32t.into(), slot(kb, kb.c(s as i64), i), 4)
                        .into_float_value()
                };
                (1..fx.slices).fold(load(0), |acc, s| kb.fadd(acc, load(s)))
            })
            .collect();
        epilogue(kb, sums);
    });
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
    }
}
