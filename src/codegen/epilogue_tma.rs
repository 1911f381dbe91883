//! The TMA-store epilogue (`ep=tma`) of the persistent warp-specialised consumers: the
//! accumulators, converted to C's type, go to a staging tile in the epilogue's own
//! shared-memory region (the boxes of [`StoreTile`], 128-byte swizzled like the store map),
//! and one elected consumer thread stores the tile with TMA, so the consumers go on to the
//! next unit's multiplies while the TMA engine writes C.
//!
//! Protocol, per unit (consumer threads `0..T` of one block tile, leader = thread 0):
//! ```text
//! leader:   cp.async.bulk.wait_group.read 0   (its previous unit's stores read the tile)
//! all:      named barrier                      (nobody writes the tile before that)
//! all:      st.shared of the converted accumulators into the swizzled boxes
//! all:      fence.proxy.async.shared::cta      (generic writes visible to the TMA engine)
//! all:      named barrier                      (every write fenced before the store)
//! leader:   cp.async.bulk.tensor … .global.shared::cta.bulk_group per box; commit_group
//! after the walk, leader: cp.async.bulk.wait_group 0 (the writes done before exit)
//! ```
//! The TMA store writes only the part of a box inside the map's dims, so ragged tiles at the
//! GEMM edge need no masking; the bulk groups are per thread, so the wait must be the issuing
//! thread's.

use super::builder::{Kb, Mem};
use super::math::WarpMath;
use super::plan::GemmPlan;
use crate::lowering::tma::SWIZZLE_BYTES;
use crate::lowering::tma_store::StoreTile;
use inkwell::values::{FloatValue, IntValue};

/// A deliberately broken TMA-store protocol, for the tests that prove the emulator catches
/// it.
#[doc(hidden)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum StoreFault {
    /// The correct protocol.
    #[default]
    None,
    /// No `wait_group.read` before the staging tile is rewritten: the next unit's writes may
    /// land while the TMA engine still reads the previous tile.
    NoReadWait,
    /// No `fence.proxy.async` between the generic writes and the store.
    NoProxyFence,
}

thread_local! {
    static FAULT: std::cell::Cell<StoreFault> = const { std::cell::Cell::new(StoreFault::None) };
}

/// Test hook: emits the kernels of `f` (on this thread) with `fault`. Never set outside the
/// tests that prove the emulator catches it.
#[doc(hidden)]
pub fn with_store_fault<R>(fault: StoreFault, f: impl FnOnce() -> R) -> R {
    super::with_test_hook(&FAULT, fault, f)
}

fn fault() -> StoreFault {
    FAULT.with(|f| f.get())
}

/// Writes the accumulators (or `vals`, in [`WarpMath::layout`]'s order) of the tile at
/// `(g, m0, n0)` through the staging tile and TMA (see the module doc). `tid` counts this
/// block tile's consumer threads from 0.
#[allow(clippy::too_many_arguments)]
pub(crate) fn epilogue_tma<'ctx>(
    kb: &Kb<'_, 'ctx>,
    plan: &GemmPlan,
    math: &WarpMath<'_, 'ctx>,
    vals: Option<Vec<FloatValue<'ctx>>>,
    st: &StoreTile,
    tid: IntValue<'ctx>,
    g: IntValue<'ctx>,
    m0: IntValue<'ctx>,
    n0: IntValue<'ctx>,
) {
    let dt = plan.dt;
    let at = plan
        .smem
        .c_at
        .unwrap_or_else(|| panic!("ep=tma stages C in the persistent epilogue region"));
    let base = kb.gep_bytes(kb.shared_base(), at as i64);
    let leader = kb.eq(tid, kb.c(0));
    let lay = math.layout(kb);
    let vals = vals.unwrap_or_else(|| math.values(kb));
    if fault() != StoreFault::NoReadWait {
        kb.if_then(leader, |kb| kb.bulk_wait(0, true));
    }
    kb.barrier();
    let line_bytes = SWIZZLE_BYTES as i64;
    let box_bytes = (st.lines * SWIZZLE_BYTES) as i64;
    let eb = dt.bytes() as i64;
    for (&v, &(ri, ci)) in vals.iter().zip(&lay.items) {
        let (m, n) = (lay.rows[ri], lay.cols[ci]);
        // Lines run along C's contiguous dimension: a line is indexed by the other one.
        let (line, pos) = if st.along_n { (m, n) } else { (n, m) };
        let j = kb.udivc(pos, st.box_line);
        let p = kb.uremc(pos, st.box_line);
        let plain = kb.add(
            kb.add(kb.mulc(j, box_bytes), kb.mulc(line, line_bytes)),
            kb.mulc(p, eb),
        );
        // The 128-byte swizzle: 16-byte chunk c of line r at c ^ r % 8.
        let off = kb.xor(plain, kb.mulc(kb.uremc(line, 8), 16));
        kb.store(
            Mem::Shared,
            kb.gep(kb.ctx.i8_type().into(), base, off),
            kb.narrow(v, dt),
            dt.bytes(),
        );
    }
    if fault() != StoreFault::NoProxyFence {
        kb.fence_proxy_async();
    }
    kb.barrier();
    kb.if_then(leader, |kb| {
        let map = kb.map_arg(plan.store_map());
        let (inner0, outer0) = if st.along_n { (n0, m0) } else { (m0, n0) };
        for j in 0..st.boxes() {
            let src = kb.gep_bytes(base, j as i64 * box_bytes);
            let mut coords = vec![kb.addc(inner0, (j * st.box_line) as i64), outer0];
            if st.grouped {
                coords.push(g);
            }
            kb.tma_store(src, map, &coords);
        }
        kb.bulk_commit();
    });
}

/// After the consumers' walk: the leader waits until its stores are written (a block must
/// not exit with its staging tile still being read).
pub(crate) fn drain<'ctx>(kb: &Kb<'_, 'ctx>, plan: &GemmPlan, tid: IntValue<'ctx>) {
    if plan.tma_store.is_some() {
        kb.if_then(kb.eq(tid, kb.c(0)), |kb| kb.bulk_wait(0, false));
    }
}
