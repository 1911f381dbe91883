//! The ping-pong consumers of the warp-specialised kernel (`ld=wspp`, CUTLASS sm90's
//! "KernelTmaWarpSpecializedPingpong"): two consumer warpgroups, each computing whole block
//! tiles of its own, taking alternate work units of the persistent walk, so that one runs its
//! epilogue while the other multiplies. The producer, the stage ring and each K range's main
//! loop are [`super::ws`]'s; this file is what differs: which consumer takes which unit, the
//! order barrier between their main loops, each one's thread ids, named barrier and epilogue
//! region, and the wrong protocols the emulator's tests emit on purpose.
//!
//! ```text
//! setup:    as ws, empty[s] counting the 4 warps of one consumer; order[0], order[1]
//!           (mbarriers after the stages', 128 arrivals each)
//! consumer c (threads 128c..128c+128), unit i of the block's walk with i % 2 == c, its j-th:
//!           wait order[c] parity (j + 1 - c) & 1; main loop over the unit's ring positions
//!           (the ring counts every unit's K tiles); after its last full wait and multiply
//!           issue: arrive order[1 - c]; drain; epilogue / fix-up with bar.sync 1 + c, 128
//!           in its own shared-memory region
//! ```

use super::builder::Kb;
use super::math::WarpMath;
use super::plan::GemmPlan;
use super::schedule::Unit;
use super::ws::{walk, Body, Work, CONSUMER_BARRIER};
use crate::config::PING_PONG_CONSUMERS;
use inkwell::values::{IntValue, PointerValue};

thread_local! {
    static PP_FAULT: std::cell::Cell<Option<PingPongFault>> = const { std::cell::Cell::new(None) };
}

/// The mbarrier slot (8 bytes each, after the barriers' base) of consumer `c`'s order barrier
/// in a ring of `stages`: after the full and the empty barriers
/// ([`crate::config::LoadPath::mbarriers`] counts them).
pub(super) fn order_slot(stages: u32, c: u32) -> i64 {
    (2 * stages + c) as i64
}

/// The fault the tests asked for, if any (on the emitting thread).
pub(super) fn fault() -> Option<PingPongFault> {
    PP_FAULT.with(|f| f.get())
}

/// A wrong ping-pong protocol (`ld=wspp`) that the emulator must catch, for the tests that
/// prove it does ([`with_ping_pong_fault`]).
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PingPongFault {
    /// No order barrier: both consumers run their main loops at once, each waiting on ring
    /// positions whose earlier uses the other has not waited for (parity then aliases).
    NoOrder,
    /// Each consumer counts only its own units' K tiles on the ring (the cooperative walk
    /// ported naively): stages and parities that are not the ones the producer filled.
    OwnRing,
    /// Empty barriers that count the warps of both consumers (the cooperative count), though
    /// only one consumer reads each stage: no phase completes, the producer waits forever.
    CooperativeEmpty,
}

/// Test hook: while set (on the emitting thread), a ping-pong kernel is emitted with `fault`.
/// Never set outside the tests that prove the emulator catches it.
#[doc(hidden)]
pub fn with_ping_pong_fault<R>(fault: PingPongFault, f: impl FnOnce() -> R) -> R {
    super::with_test_hook(&PP_FAULT, Some(fault), f)
}

/// What one consumer of the persistent walk runs per K range: `consume(kb, math, lane0, lo,
/// hi, base, issued)` (see [`super::ws::emit`]).
pub(super) type Consume<'s, 'ctx> = dyn Fn(
        &Kb<'_, 'ctx>,
        &WarpMath<'_, 'ctx>,
        IntValue<'ctx>,
        IntValue<'ctx>,
        IntValue<'ctx>,
        Option<IntValue<'ctx>>,
        &dyn Fn(&Kb<'_, 'ctx>),
    ) + 's;

/// The ping-pong consumers (`ld=wspp`, persistent walk only): consumer warpgroup `c` (threads
/// `c·T..(c+1)·T`) takes the block's units `i ≡ c (mod 2)`, each a whole block tile, with its
/// own named barrier (`1 + c`) and epilogue region, so one writes its tile while the other
/// multiplies. Both count every unit's K tiles on the ring (the producer fills it in unit
/// order).
///
/// The order barrier: `order[c]` (an mbarrier of `T` arrivals) completes a phase each time
/// the other consumer has issued its unit's last multiply. Consumer `c`'s `j`-th unit waits
/// for phase `j - 1 + c` of `order[c]` (parity `(j + 1 - c) & 1`; consumer 0's first turn
/// waits on a fresh barrier's parity 1, which passes at once) and arrives on `order[1 - c]`
/// once its own last K tile's wait passed. So main loops take the tensor cores in unit
/// order, and more: every ring position before a unit's first was waited for before that
/// unit's main loop starts, so a consumer waiting on position `p` (use `u` of its stage)
/// finds `u` or `u + 1` phases of the full barrier complete, and parity names the phase, as
/// in the cooperative loop where every consumer waits on every position. Without the order
/// barrier a consumer could find `u - 1` complete and read the stage's previous contents.
pub(super) fn emit<'ctx>(
    kb: &Kb<'_, 'ctx>,
    plan: &GemmPlan,
    work: &Work<'_, 'ctx>,
    tid: IntValue<'ctx>,
    bar: &dyn Fn(&Kb<'_, 'ctx>, IntValue<'ctx>) -> PointerValue<'ctx>,
    consume: &Consume<'_, 'ctx>,
    write: &dyn Fn(&Kb<'_, 'ctx>, &GemmPlan, &WarpMath<'_, 'ctx>, &Unit<'ctx>, IntValue<'ctx>),
) {
    let t = plan.threads;
    let s = plan.smem.stages;
    let fault = fault();
    let order = |kb: &Kb<'_, 'ctx>, c: u32| bar(kb, kb.c(order_slot(s, c)));
    let i32t = kb.i32t();
    for c in 0..PING_PONG_CONSUMERS {
        kb.if_then(kb.eq(kb.udivc(tid, t), kb.c(c as i64)), |kb| {
            let ltid = kb.addc(tid, -((c * t) as i64));
            kb.set_barrier_scope(Some((CONSUMER_BARRIER + c, t)));
            // Fault `OwnRing`: a ring counter over this consumer's units only.
            let own = kb.var(kb.c(0).into());
            let lane0 = kb.eq(kb.uremc(ltid, plan.warp), kb.c(0));
            walk(kb, plan, work, Body::Shared, |kb, plan, u, step| {
                // The unit's plan (its phase's in a one-launch kernel) in this consumer's
                // epilogue region.
                let mut mine = plan.clone();
                mine.smem = plan.smem.for_consumer(c);
                let index = step.index.unwrap_or_else(|| {
                    unreachable!("ld=wspp walks the persistent grid only (stream_refusal)")
                });
                let turn_is_mine = kb.eq(kb.uremc(index, PING_PONG_CONSUMERS), kb.c(c as i64));
                kb.if_then(turn_is_mine, |kb| {
                    let j = kb.udivc(index, PING_PONG_CONSUMERS);
                    let base = match fault {
                        Some(PingPongFault::OwnRing) => {
                            let b = kb.get(own, i32t.into()).into_int_value();
                            let n = kb.sub(kb.umax(u.lo, u.hi), u.lo);
                            kb.set(own, kb.add(b, n).into());
                            b
                        }
                        _ => step.base,
                    };
                    let ordered = fault != Some(PingPongFault::NoOrder);
                    if ordered {
                        let parity = kb.uremc(kb.addc(j, 1 - c as i64), 2);
                        kb.mbarrier_wait(order(kb, c), parity);
                    }
                    let math = WarpMath::new(kb, &mine, ltid);
                    let hand_over = |kb: &Kb<'_, 'ctx>| {
                        if ordered {
                            kb.mbarrier_arrive(order(kb, 1 - c));
                        }
                    };
                    consume(kb, &math, lane0, u.lo, u.hi, Some(base), &hand_over);
                    write(kb, &mine, &math, u, ltid);
                });
            });
            super::epilogue_tma::drain(kb, plan, ltid);
            kb.set_barrier_scope(None);
        });
    }
}
