//! The warp-specialised main loop (`ld=ws`): the block is the consumer warpgroups of the plan
//! (thread ids `0..T`, `T = plan.threads`, so math, epilogues and the fix-up are the other
//! paths' code) plus one producer warpgroup appended (ids `T..T+128`). The producer only loads,
//! the consumers only multiply, and they meet on a full/empty `mbarrier` pair per stage, never
//! on a block barrier inside the K loop.
//!
//! Protocol, K tile `t` of the block's range (`rel = t - lo`, stage `s = rel % S`, use
//! `u = rel / S` of that stage):
//! ```text
//! setup:    thread 0 inits full[s] (1 + 128 arrivals when an operand is on cp.async, else 1)
//!           and empty[s] (one arrival per consumer warp); fence; block barrier (everyone)
//! producer: setmaxnreg.dec; for t: wait empty[s] parity (u&1)^1 (a fresh barrier counts
//!           its phase of parity 1 as complete, so use 0 passes at once);
//!           elected thread: arrive.expect_tx(full[s], TMA bytes) + the TMA boxes;
//!           all 128: cp.async of the other operands, cp.async.mbarrier.arrive.noinc(full[s]);
//!           tail: wait the empty phase after each stage's last use (every copy it issued
//!           was consumed), then exit
//! consumer: setmaxnreg.inc; for t: wait full[s] parity u&1; fence.proxy.async (cp.async
//!           data is generic-proxy); wgmma on stage s; lane 0 of each warp arrives on
//!           empty[s] once the group that read s retired: at once for `wg` (its step waits
//!           for the group), the previous tile's stage for `wg1` (wait_group 1 retired it;
//!           the last one after the drain)
//! after:    consumers only: epilogue and fix-up with `bar.sync 1, T` for every barrier
//! ```
//! A stage is refilled only after all consumer warps released its previous use, and a
//! consumer reads it only after the phase of its use completed (bytes and arrivals), so
//! parity alone names the phase: the producer never runs more than `S` tiles ahead.
//!
//! Why the producer leaves the barriers after the loop: a block barrier (`bar.sync 0`) counts
//! every thread of the block, so it would have to follow the consumers through the staged
//! epilogue and the fix-up's barriers only to arrive; a named barrier over the `T` consumers
//! needs nothing of it, so the producer exits once its copies were consumed.

use super::builder::Kb;
use super::loader::{stage_base, Loader};
use super::math::WarpMath;
use super::plan::{GemmPlan, Math};
use super::schedule::Tile;
use super::spec::TargetSpec;
use super::tma::Issue;
use crate::arch::ws::{ws_block, WsBlock};
use crate::config::{PerfConfig, Reduction};
use inkwell::values::{IntValue, PointerValue};

/// The named barrier the consumers use after the loop (0 is the block barrier).
const CONSUMER_BARRIER: u32 = 1;

/// Consumer arrivals on an empty barrier: one per consumer warp (its lane 0), after the
/// warp's `wgmma.wait_group` (which the whole warp executes together) retired the group.
fn empty_arrivals(plan: &GemmPlan) -> u32 {
    plan.threads / plan.warp
}

/// The block of `ld=ws` over `consumers` threads, or why `cfg` cannot have one.
pub(crate) fn plan_ws(
    cfg: &PerfConfig,
    consumers: u32,
    spec: &dyn TargetSpec,
) -> Result<WsBlock, String> {
    if let Some(why) = cfg.ws_refusal() {
        return Err(format!("ld=ws: {why}"));
    }
    if cfg.red == Reduction::Stream {
        // Legality's `red` rule says the same for every TMA path.
        return Err(
            "ld=ws: a stream-K block walks several tiles and the producer/consumer \
                    ring sets up its mbarriers once per tile; use ld=cp"
                .into(),
        );
    }
    ws_block(spec.target().arch(), consumers).map_err(|r| format!("ld=ws: {r}"))
}

/// Emits the warp-specialised body for `tile` over K tiles `[lo, hi)`; the consumers then run
/// `write` (the epilogue, with the fix-up if any) on their accumulators.
pub(crate) fn emit<'ctx>(
    kb: &Kb<'_, 'ctx>,
    plan: &GemmPlan,
    tile: &Tile<'ctx>,
    tid: IntValue<'ctx>,
    lo: IntValue<'ctx>,
    hi: IntValue<'ctx>,
    write: impl FnOnce(&Kb<'_, 'ctx>, &WarpMath<'_, 'ctx>),
) {
    let ws = plan
        .ws
        .unwrap_or_else(|| panic!("the warp-specialised loop needs the plan's ws block"));
    let s = plan.smem.stages;
    let t = plan.threads;
    // Every block index is read here, not sunk into the loops (see `TargetSpec::pin`).
    for dim in 0..3 {
        kb.pin(kb.block_idx(dim));
    }
    kb.cap_registers(ws.entry_regs);
    let bars_at = plan
        .smem
        .barriers
        .unwrap_or_else(|| panic!("the warp-specialised loop needs the plan's mbarriers"));
    let bars = kb.gep_bytes(kb.shared_base(), bars_at as i64);
    let bar = |kb: &Kb<'_, 'ctx>, i: IntValue<'ctx>| -> PointerValue<'ctx> {
        kb.gep(kb.ctx.i8_type().into(), bars, kb.mulc(i, 8))
    };
    let full = |kb: &Kb<'_, 'ctx>, stage: IntValue<'ctx>| bar(kb, stage);
    let empty = |kb: &Kb<'_, 'ctx>, stage: IntValue<'ctx>| bar(kb, kb.addc(stage, s as i64));
    let any_cp = plan.tma.iter().any(Option::is_none);
    let full_count = 1 + if any_cp { ws.producers } else { 0 };
    kb.if_then(kb.eq(tid, kb.c(0)), |kb| {
        for i in 0..s {
            let i = kb.c(i as i64);
            kb.mbarrier_init(full(kb, i), full_count);
            kb.mbarrier_init(empty(kb, i), empty_arrivals(plan));
        }
        kb.mbarrier_init_fence();
    });
    kb.barrier();
    // (stage, parity of the use's phase) of K tile `kt`.
    let slot = |kb: &Kb<'_, 'ctx>, kt: IntValue<'ctx>| {
        let rel = kb.sub(kt, lo);
        (kb.uremc(rel, s), kb.uremc(kb.udivc(rel, s), 2))
    };
    let one = kb.c(1);
    let consumer = kb.ultc(tid, t);
    let producer = kb.xor(consumer, kb.ctx.bool_type().const_int(1, false));
    kb.if_then(producer, |kb| {
        kb.setmaxnreg(false, ws.producer_regs);
        let ptid = kb.addc(tid, -(t as i64));
        let a = Loader::new(kb, plan, &plan.gemm.a, ptid, tile.g, tile.m0);
        let b = Loader::new(kb, plan, &plan.gemm.b, ptid, tile.g, tile.n0);
        let io = Issue {
            plan,
            loaders: [&a, &b],
            leader: kb.eq(ptid, kb.c(0)),
            bars,
            bytes: plan.tma.iter().flatten().map(|t| t.stage_bytes()).sum(),
        };
        let produce = |kb: &Kb<'_, 'ctx>| {
            kb.for_range(lo, hi, |kb, kt| {
                let (stage, parity) = slot(kb, kt);
                kb.mbarrier_wait(empty(kb, stage), kb.xor(parity, one));
                io.issue_tma(kb, kt, stage, full(kb, stage));
                if any_cp {
                    io.issue_cp(kb, kt, stage);
                    kb.cp_async_arrive(full(kb, stage));
                }
            });
            // The tail: each stage's release of its last use, so no copy is in flight at exit.
            kb.for_range(hi, kb.addc(hi, s as i64), |kb, kt| {
                let (stage, parity) = slot(kb, kt);
                kb.mbarrier_wait(empty(kb, stage), kb.xor(parity, one));
            });
        };
        if any_cp {
            // Every producer thread arrives on full[s], so none can fall a phase behind.
            produce(kb);
        } else {
            // Only the leader: a thread that waited for nothing else could still be waiting
            // for phase u-1 of empty[s] when u completed too, and then wait for the wrong one.
            kb.if_then(io.leader, produce);
        }
    });
    kb.if_then(consumer, |kb| {
        kb.setmaxnreg(true, ws.consumer_regs);
        kb.set_barrier_scope(Some((CONSUMER_BARRIER, t)));
        let math = WarpMath::new(kb, plan, tid);
        let lane0 = kb.eq(kb.uremc(tid, plan.warp), kb.c(0));
        let release = |kb: &Kb<'_, 'ctx>, stage: IntValue<'ctx>| {
            kb.if_then(lane0, |kb| kb.mbarrier_arrive(empty(kb, stage)));
        };
        let in_flight = matches!(
            plan.math,
            Math::Wgmma {
                in_flight: true,
                ..
            }
        );
        let (ta, tb) = (&plan.smem.a, &plan.smem.b);
        kb.for_range(lo, hi, |kb, kt| {
            let (stage, parity) = slot(kb, kt);
            kb.mbarrier_wait(full(kb, stage), parity);
            if any_cp {
                kb.fence_proxy_async();
            }
            math.step(
                kb,
                stage_base(kb, ta, plan.dt, stage),
                stage_base(kb, tb, plan.dt, stage),
            );
            if in_flight {
                // wait_group 1 retired the previous tile's group.
                kb.if_then(kb.ult(lo, kt), |kb| {
                    release(kb, slot(kb, kb.addc(kt, -1)).0);
                });
            } else {
                release(kb, stage);
            }
        });
        math.drain(kb);
        if in_flight {
            kb.if_then(kb.ult(lo, hi), |kb| {
                release(kb, slot(kb, kb.addc(hi, -1)).0)
            });
        }
        write(kb, &math);
        kb.set_barrier_scope(None);
    });
}
