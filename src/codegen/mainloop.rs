//! Main loops: the K loop of the GEMM kernel, which moves A and B tiles into shared memory and
//! multiplies them into the accumulators. The kernel asks its plan's main loop
//! ([`super::plan::MainLoopKind`]) and never writes a K loop itself, so a new pipeline (TMA
//! loads with a producer warp and consumer warpgroups) is a new implementation here, not an
//! edit of the others. Today there is one: [`MultistageLoop`].
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
use super::loader::Loader;
use super::math::WarpMath;
use super::plan::{GemmPlan, Math};
use inkwell::values::IntValue;
use std::fmt;

/// The K loop of a GEMM kernel.
pub(crate) trait MainLoop: Sync + fmt::Debug {
    /// Emits the loop over K tiles `[lo, hi)`: loads through `a` and `b`, multiplies with
    /// `math`, and leaves the final values in `math`'s accumulators.
    #[allow(clippy::too_many_arguments)]
    fn emit<'ctx>(
        &self,
        kb: &Kb<'_, 'ctx>,
        plan: &GemmPlan,
        a: &Loader<'_, 'ctx>,
        b: &Loader<'_, 'ctx>,
        math: &WarpMath<'_, 'ctx>,
        lo: IntValue<'ctx>,
        hi: IntValue<'ctx>,
    );
}

/// A ring of `stages` shared-memory buffers filled by `cp.async` (where the target has it
/// and the vector width allows) or through registers, as described in the module doc.
#[derive(Debug)]
pub(crate) struct MultistageLoop;

impl MainLoop for MultistageLoop {
    fn emit<'ctx>(
        &self,
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
        let async_reader = matches!(plan.math, Math::Wgmma { .. });
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
}
