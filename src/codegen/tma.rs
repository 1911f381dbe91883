//! The TMA main loop (`ld=tma`): the multistage ring of [`super::mainloop`], with the operands
//! that a tensor map describes ([`crate::lowering::tma`]) loaded by one thread with
//! `cp.async.bulk.tensor` into the `wgmma` path's 128-byte-swizzled stages, and each stage
//! completed through its own `mbarrier`'s transaction count instead of `cp.async` groups. An
//! operand without a tensor map keeps `cp.async` from every thread, in commit groups as before.
//!
//! Protocol, per K tile `t` of the block's range (`rel = t - lo`, stage `rel % S`):
//! ```text
//! setup:    thread 0 inits S mbarriers (1 arrival each) and fences them; block barrier
//! issue t:  thread 0: arrive.expect_tx(bar[stage], bytes of every TMA box of the stage), then
//!           the TMA copies (completing on bar[stage]); every thread: cp.async copies, commit
//! prologue: issue tiles 0..ahead-1
//! loop t:   cp.async wait (ahead-1 groups); wait bar[stage] for the phase of parity
//!           (rel / S) % 2; fence.proxy.async (the cp.async writes); block barrier;
//!           issue tile t+ahead into the buffer of t+ahead-S (every warpgroup is past the
//!           multiply that read it: same argument as the cp.async ring); multiply stage
//! ```
//! Each mbarrier completes one phase per use of its stage, so use `u` of a stage waits for
//! parity `u % 2`, and a stage is reissued only after every thread waited for its previous
//! phase (the block barrier after the wait), so no phase is skipped.

use super::builder::Kb;
use super::loader::Loader;
use super::mainloop::MainLoop;
use super::math::WarpMath;
use super::plan::GemmPlan;
use crate::lowering::tma::TmaTile;
use inkwell::values::{IntValue, PointerValue};

/// The TMA + mbarrier ring (see the module doc).
#[derive(Debug)]
pub(crate) struct TmaLoop;

/// What issuing one K tile into one stage needs: the TMA ring's and, from its producer
/// warpgroup, the warp-specialised loop's ([`super::ws`]).
pub(crate) struct Issue<'p, 'a, 'ctx> {
    pub plan: &'p GemmPlan<'p>,
    pub loaders: [&'p Loader<'a, 'ctx>; 2],
    /// The one thread that announces the bytes and issues the TMA boxes.
    pub leader: IntValue<'ctx>,
    /// The first of the plan's mbarriers.
    pub bars: PointerValue<'ctx>,
    /// Bytes every TMA box of a stage writes (the expected transaction count).
    pub bytes: u32,
}

impl<'ctx> Issue<'_, '_, 'ctx> {
    /// The plan's `index`-th mbarrier.
    pub fn bar(&self, kb: &Kb<'_, 'ctx>, index: IntValue<'ctx>) -> PointerValue<'ctx> {
        kb.gep(kb.ctx.i8_type().into(), self.bars, kb.mulc(index, 8))
    }

    /// Whether some operand stays on `cp.async`.
    pub fn any_cp(&self) -> bool {
        self.plan.tma.iter().any(Option::is_none)
    }

    /// The TMA copies (thread 0) and `cp.async` copies (every thread) of K tile `kt` into
    /// `stage`; no commit.
    fn issue(&self, kb: &Kb<'_, 'ctx>, kt: IntValue<'ctx>, stage: IntValue<'ctx>) {
        self.issue_tma(kb, kt, stage, self.bar(kb, stage));
        self.issue_cp(kb, kt, stage);
    }

    /// The leader's part of K tile `kt` into `stage`: one arrival on `bar` announcing every
    /// TMA box's bytes, then the boxes, completing on `bar`.
    pub fn issue_tma(
        &self,
        kb: &Kb<'_, 'ctx>,
        kt: IntValue<'ctx>,
        stage: IntValue<'ctx>,
        bar: PointerValue<'ctx>,
    ) {
        kb.if_then(self.leader, |kb| {
            kb.mbarrier_arrive_expect_tx(bar, self.bytes);
            let mut map = 0;
            for (l, t) in self.loaders.iter().zip(&self.plan.tma) {
                let Some(t) = t else { continue };
                let base = l.stage_base(kb, stage);
                let k0 = kb.mulc(kt, self.plan.cfg.block_k as i64);
                for j in 0..t.copies {
                    let coords = box_coords(kb, l, t, k0, j);
                    let block = l.tile.row_blocks.unwrap_or(0) * j;
                    let dst = kb.gep(kb.elem_ty(self.plan.dt), base, kb.c(block as i64));
                    kb.tma_load(dst, kb.map_arg(map), &coords, bar);
                }
                map += 1;
            }
        });
    }

    /// The `cp.async` copies of the operands without a tensor map, from every thread of the
    /// loaders' [`super::plan::TileLoad::threads`]; no commit.
    pub fn issue_cp(&self, kb: &Kb<'_, 'ctx>, kt: IntValue<'ctx>, stage: IntValue<'ctx>) {
        for (l, t) in self.loaders.iter().zip(&self.plan.tma) {
            if t.is_none() {
                l.issue_async(kb, kt, stage);
            }
        }
    }

    /// Waits until `stage`'s copies of use `rel / S` landed, then orders them before the
    /// multiply (proxy fence for the `cp.async` writes, block barrier).
    fn wait(&self, kb: &Kb<'_, 'ctx>, rel: IntValue<'ctx>, stage: IntValue<'ctx>, cp_pending: u32) {
        if self.any_cp() {
            kb.cp_async_wait(cp_pending);
        }
        let parity = kb.uremc(kb.udivc(rel, self.plan.smem.stages), 2);
        kb.mbarrier_wait(self.bar(kb, stage), parity);
        kb.fence_proxy_async();
        kb.barrier();
    }
}

/// The tensor-map coordinates (innermost first) of box `j` of operand tile `t` for the K tile
/// starting at reduction index `k0`: the one place a box's position is computed.
fn box_coords<'ctx>(
    kb: &Kb<'_, 'ctx>,
    l: &Loader<'_, 'ctx>,
    t: &TmaTile,
    k0: IntValue<'ctx>,
    j: u32,
) -> Vec<IntValue<'ctx>> {
    let (row0, g) = l.origin;
    let line = t.map.boxes[0];
    let r = kb.addc(row0, (j * line) as i64);
    let mut coords = if t.kmajor { vec![k0, r] } else { vec![r, k0] };
    if t.grouped {
        coords.push(g);
    }
    coords
}

impl MainLoop for TmaLoop {
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
        // Every block index is read before the loop, not sunk to the epilogue (see `pin`).
        for dim in 0..3 {
            kb.pin(kb.block_idx(dim));
        }
        let bars_at = plan
            .smem
            .barriers
            .unwrap_or_else(|| panic!("the TMA loop needs the plan's mbarriers"));
        let io = Issue {
            plan,
            loaders: [a, b],
            leader: kb.eq(kb.thread_idx(), kb.c(0)),
            bars: kb.gep_bytes(kb.shared_base(), bars_at as i64),
            bytes: plan.tma.iter().flatten().map(|t| t.stage_bytes()).sum(),
        };
        kb.if_then(io.leader, |kb| {
            for i in 0..s {
                kb.mbarrier_init(io.bar(kb, kb.c(i as i64)), 1);
            }
            kb.mbarrier_init_fence();
        });
        kb.barrier();
        let multiply =
            |stage: IntValue<'ctx>| math.step(kb, a.stage_base(kb, stage), b.stage_base(kb, stage));
        let commit = |kb: &Kb<'_, 'ctx>| {
            if io.any_cp() {
                kb.cp_async_commit();
            }
        };
        if s == 1 {
            kb.for_range(lo, hi, |kb, kt| {
                let zero = kb.c(0);
                io.issue(kb, kt, zero);
                commit(kb);
                io.wait(kb, kb.sub(kt, lo), zero, 0);
                multiply(zero);
                kb.barrier();
            });
            return;
        }
        let ahead = plan.cfg.tiles_ahead();
        for i in 0..ahead {
            let kt = kb.addc(lo, i as i64);
            kb.if_then(kb.ult(kt, hi), |kb| io.issue(kb, kt, kb.c(i as i64)));
            commit(kb);
        }
        kb.for_range(lo, hi, |kb, kt| {
            let rel = kb.sub(kt, lo);
            let stage = kb.uremc(rel, s);
            io.wait(kb, rel, stage, ahead - 1);
            let next = kb.addc(kt, ahead as i64);
            kb.if_then(kb.ult(next, hi), |kb| {
                io.issue(kb, next, kb.uremc(kb.sub(next, lo), s))
            });
            commit(kb);
            multiply(stage);
        });
        math.drain(kb);
        if io.any_cp() {
            kb.cp_async_wait(0);
        }
    }
}
