//! The warp-specialised main loop (`ld=ws`): the block is the consumer warpgroups of the plan
//! (thread ids `0..T`, `T = plan.threads`, so math, epilogues and the fix-up are the other
//! paths' code) plus one producer warpgroup appended (ids `T..T+128`). The producer only loads,
//! the consumers only multiply, and they meet on a full/empty `mbarrier` pair per stage, never
//! on a block barrier inside the K loop. With `ld=wspp` the consumers are two warpgroups with
//! a block tile each (ids `0..2T`), taking alternate units of the persistent walk in turn
//! ([`super::ws_pingpong`]); the producer and the ring below are the same.
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
//! In a cluster of two blocks (`cl=2m|2n`, [`crate::config::ClusterShape`]) the blocks walk
//! tile pairs in step and share one operand, which each block's producer loads half of and
//! multicasts to both ([`super::tma::Issue::multicast`]): each full barrier still expects the
//! whole stage's bytes (half of the shared operand's land from the peer), and a stage may be
//! refilled only once the consumers of *both* blocks released it, so every consumer warp
//! arrives on the empty barrier of each block of the cluster (`mapa` + a remote arrive, lane
//! `r` on rank `r`'s, at CTA scope: see [`super::spec::Barriers::mbarrier_arrive_cluster`])
//! and the empty barriers count the consumer warps of the whole cluster. A cluster barrier
//! replaces the block barrier after the init (a peer's arrivals and copies need this block's
//! `mbarrier`s initialised), and a last one ends the kernel (no block exits while its peer may
//! still multicast into it or arrive on its barriers).
//!
//! Why the producer leaves the barriers after the loop: a block barrier (`bar.sync 0`) counts
//! every thread of the block, so it would have to follow the consumers through the staged
//! epilogue and the fix-up's barriers only to arrive; a named barrier over the `T` consumers
//! needs nothing of it, so the producer exits once its copies were consumed.

use super::builder::Kb;
use super::loader::{stage_base, Loader};
use super::math::WarpMath;
use super::phased::PhasedPlan;
use super::plan::{GemmPlan, Math};
use super::schedule::{Tile, TileScheduler, Unit};
use super::schedule_persistent::{persistent_grid, PersistentScheduler};
use super::schedule_phase::PhaseScheduler;
use super::spec::TargetSpec;
use super::streamk::walk_units;
use super::tma::Issue;
use super::ws_pingpong::PingPongFault;
use crate::arch::ws::{ws_block, WsBlock};
use crate::config::{PerfConfig, StreamK, PING_PONG_CONSUMERS};
use inkwell::values::{IntValue, PointerValue};

/// The named barrier the consumers use after the loop (0 is the block barrier).
pub(super) const CONSUMER_BARRIER: u32 = 1;

/// Consumer arrivals on an empty barrier: one per consumer warp (its lane 0), after the
/// warp's `wgmma.wait_group` (which the whole warp executes together) retired the group.
/// Ping-pong: the warps of the one consumer warpgroup that read the stage (`plan.threads` is
/// one block tile's warpgroup). In a cluster: the consumer warps of every block.
fn empty_arrivals(plan: &GemmPlan) -> u32 {
    let warps = plan.threads / plan.warp;
    let cluster = match cluster_fault() {
        Some(ClusterFault::LocalEmpty) => 1,
        _ => plan.cfg.cluster.size(),
    };
    match super::ws_pingpong::fault() {
        // Every consumer warp of the block, as the cooperative loop counts them.
        Some(PingPongFault::CooperativeEmpty) => warps * PING_PONG_CONSUMERS,
        _ => warps * cluster,
    }
}

/// A deliberately broken cluster protocol, for the tests that prove the emulator catches it.
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClusterFault {
    /// The consumers release only their own block's empty barrier (counting only them): a
    /// producer refills a stage the peer's consumers may still read.
    LocalEmpty,
    /// No cluster barrier before exit: a block may exit while its peer still multicasts into
    /// it or arrives on its barriers.
    NoExitBarrier,
}

thread_local! {
    static CLUSTER_FAULT: std::cell::Cell<Option<ClusterFault>> =
        const { std::cell::Cell::new(None) };
}

/// Test hook: emits the kernels of `f` (on this thread) with `fault`. Never set outside the
/// tests that prove the emulator catches it.
#[doc(hidden)]
pub fn with_cluster_fault<R>(fault: ClusterFault, f: impl FnOnce() -> R) -> R {
    super::with_test_hook(&CLUSTER_FAULT, Some(fault), f)
}

fn cluster_fault() -> Option<ClusterFault> {
    CLUSTER_FAULT.with(|c| c.get())
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
    ws_block(spec.target().arch(), consumers).map_err(|r| format!("ld=ws: {r}"))
}

/// What a block of the warp-specialised kernel computes.
pub(crate) enum Work<'w, 'ctx> {
    /// One work unit (one block per unit, `pk=0`).
    One(Unit<'ctx>),
    /// The block's walk over the persistent grid's units (`pk=1`): the ring's stage and
    /// parity run on over a block-global K-tile counter, never reset at a unit boundary.
    Walk,
    /// The block's stream-K walk ([`super::streamk::walk_units`], `pk=1`, `red=stream`): its
    /// units, the same ring running on across them.
    Stream(StreamK),
    /// The block's walk over the units of every phase of a one-launch strided bwd-data
    /// kernel ([`super::phased`], `pk=1`): each unit with its phase's plan, the ring running
    /// on across units and phases; the consumers zero their share of the uncovered pixels
    /// first.
    Phases(&'w PhasedPlan<'w>),
}

/// The plans whose units `work` walks: every phase's, or `plan` alone.
fn plans<'p>(plan: &'p GemmPlan<'p>, work: &'p Work<'p, '_>) -> Vec<&'p GemmPlan<'p>> {
    match work {
        Work::Phases(pp) => pp.phases.iter().collect(),
        Work::One(_) | Work::Walk | Work::Stream(_) => vec![plan],
    }
}

/// Test hook: while set (on the emitting thread), a persistent kernel restarts its ring
/// counter at every unit, the wrong protocol the emulator must catch. Never set outside the
/// tests that prove that.
#[doc(hidden)]
pub fn with_ring_reset_per_unit<R>(f: impl FnOnce() -> R) -> R {
    super::with_test_hook(&RESET_RING, true, f)
}

thread_local! {
    static RESET_RING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// The producer's loaders of `plan`'s A and B tiles at `tile` (`ptid`: the producer thread).
fn loaders<'a, 'ctx>(
    kb: &Kb<'_, 'ctx>,
    plan: &'a GemmPlan<'a>,
    ptid: IntValue<'ctx>,
    tile: &Tile<'ctx>,
) -> (Loader<'a, 'ctx>, Loader<'a, 'ctx>) {
    (
        Loader::new(kb, plan, &plan.gemm.a, ptid, tile.g, tile.m0),
        Loader::new(kb, plan, &plan.gemm.b, ptid, tile.g, tile.n0),
    )
}

/// What the producer issues a K tile with: `loaders`, the leader thread 0 of the producer
/// (`ptid`), the mbarriers at `bars`, and in a cluster the shared operand and this block's
/// rank (`rank`).
fn issue<'p, 'a, 'ctx>(
    kb: &Kb<'_, 'ctx>,
    plan: &'p GemmPlan<'p>,
    loaders: [&'p Loader<'a, 'ctx>; 2],
    ptid: IntValue<'ctx>,
    bars: PointerValue<'ctx>,
    rank: Option<IntValue<'ctx>>,
) -> Issue<'p, 'a, 'ctx> {
    Issue {
        plan,
        loaders,
        leader: kb.eq(ptid, kb.c(0)),
        bars,
        bytes: plan.tma.iter().flatten().map(|t| t.stage_bytes()).sum(),
        multicast: plan.cfg.cluster.shared_operand().zip(rank),
    }
}

/// How a walk over a one-launch kernel's phases emits them: one body whose constants the
/// unit's phase picks ([`PhasedPlan::shared`], where the phases can share one: what the
/// consumers run), or a branch per phase with the phase's constants (what the producer runs:
/// its copy addresses are computed per K tile, where constants picked at run time cost it
/// more than its 40 registers hide).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Body {
    /// The shared body, where there is one.
    Shared,
    /// A branch per phase.
    PerPhase,
}

/// Where a unit sits in the block's walk (what [`walk`] passes its body besides the unit).
pub(super) struct Step<'ctx> {
    /// The ring counter of the unit's first K tile (the K tiles of the units before it,
    /// whoever consumes them).
    pub base: IntValue<'ctx>,
    /// Its place in the persistent grid's walk (0, 1, …: what the ping-pong consumers
    /// alternate on); `None` on the stream-K walk, which `ld=wspp` does not take
    /// ([`PerfConfig::stream_refusal`]).
    pub index: Option<IntValue<'ctx>>,
}

/// Calls `body(kb, unit_plan, unit, step)` for each unit the block walks (`work` is a walk),
/// in order, with the plan of the unit's GEMM (`plan`, or its phase's); returns the ring
/// counter after the last unit. The cooperative consumers, the ping-pong consumers
/// ([`super::ws_pingpong`]) and the producer all walk here.
pub(super) fn walk<'ctx>(
    kb: &Kb<'_, 'ctx>,
    plan: &GemmPlan,
    work: &Work<'_, 'ctx>,
    bodies: Body,
    body: impl Fn(&Kb<'_, 'ctx>, &GemmPlan, &Unit<'ctx>, &Step<'ctx>),
) -> IntValue<'ctx> {
    let i32t = kb.i32t();
    let counter = kb.var(kb.c(0).into());
    let reset = RESET_RING.with(|r| r.get());
    let visit =
        |kb: &Kb<'_, 'ctx>, plan: &GemmPlan, unit: &Unit<'ctx>, index: Option<IntValue<'ctx>>| {
            let base = if reset {
                kb.c(0)
            } else {
                kb.get(counter, i32t.into()).into_int_value()
            };
            body(kb, plan, unit, &Step { base, index });
            // An empty split-K slice (lo ≥ hi) has no K tile.
            let (lo, hi) = (unit.lo, unit.hi);
            kb.set(counter, kb.add(base, kb.sub(kb.umax(lo, hi), lo)).into());
        };
    match work {
        Work::Walk => {
            let sched = PersistentScheduler;
            let (pg, cluster) = (persistent_grid(plan), plan.cfg.cluster.size());
            kb.for_range(kb.c(0), sched.units_of_block(kb, pg, cluster), |kb, i| {
                let unit = sched.unit(kb, pg, cluster, i);
                let tile = sched.unit_tile(kb, plan, unit);
                let k = sched.k_range(kb, plan, &tile);
                visit(kb, plan, &Unit::of_tile(tile, k), Some(i));
            });
        }
        Work::Phases(pp) => {
            let sched = PersistentScheduler;
            let pg = pp
                .walk
                .unwrap_or_else(|| panic!("a one-launch plan without its walk on ld=ws"));
            // No cluster: the `cl` rule refuses one-launch phase walks.
            kb.for_range(kb.c(0), sched.units_of_block(kb, pg, 1), |kb, i| {
                let unit = sched.unit(kb, pg, 1, i);
                if let Some(body) = pp.shared.as_ref().filter(|_| bodies == Body::Shared) {
                    // One body, its constants picked by the unit's phase.
                    kb.set_walk_unit(Some(unit));
                    let run = super::phased::not_skipped(kb, body, pp.phases.len())
                        .unwrap_or_else(|| kb.cbool(true));
                    kb.if_then(run, |kb| {
                        let tile = PhaseScheduler.unit_tile(kb, body, unit);
                        let k = PhaseScheduler.k_range(kb, body, &tile);
                        visit(kb, body, &Unit::of_tile(tile, k), Some(i));
                    });
                    kb.set_walk_unit(None);
                    return;
                }
                // One branch per phase, its body emitted with the phase's constants.
                for (p, phase) in pp.phases.iter().enumerate() {
                    if super::phased::skipped(p) {
                        continue;
                    }
                    kb.if_then(PhaseScheduler.holds(kb, phase, unit), |kb| {
                        let tile = PhaseScheduler.unit_tile(kb, phase, unit);
                        let k = PhaseScheduler.k_range(kb, phase, &tile);
                        visit(kb, phase, &Unit::of_tile(tile, k), Some(i));
                    });
                }
            });
        }
        Work::Stream(sk) => walk_units(kb, plan, sk, |kb, unit| visit(kb, plan, unit, None)),
        Work::One(_) => unreachable!("one unit is no walk"),
    }
    kb.get(counter, i32t.into()).into_int_value()
}

/// Emits the warp-specialised body of `work`; the consumers then run `write(kb, plan, math,
/// unit, tid)` (the epilogue, with the fix-up if any: [`super::gemm::write_unit`]) on each
/// unit's accumulators, with the plan and thread index of the warpgroups that computed them
/// (a ping-pong consumer's own epilogue region, its threads counted from 0).
pub(crate) fn emit<'ctx>(
    kb: &Kb<'_, 'ctx>,
    plan: &GemmPlan,
    work: &Work<'_, 'ctx>,
    tid: IntValue<'ctx>,
    write: impl Fn(&Kb<'_, 'ctx>, &GemmPlan, &WarpMath<'_, 'ctx>, &Unit<'ctx>, IntValue<'ctx>),
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
    // One full-barrier count for the kernel: with an operand on cp.async in some phase, the
    // producer's threads arrive in every phase (with no copy pending, at once).
    let any_cp = plans(plan, work)
        .iter()
        .any(|g| g.tma.iter().any(Option::is_none));
    let full_count = 1 + if any_cp { ws.producers } else { 0 };
    kb.if_then(kb.eq(tid, kb.c(0)), |kb| {
        for i in 0..s {
            let i = kb.c(i as i64);
            kb.mbarrier_init(full(kb, i), full_count);
            kb.mbarrier_init(empty(kb, i), empty_arrivals(plan));
        }
        if ws.consumers > t {
            // Ping-pong: the order barriers, every thread of the other consumer arriving.
            for c in 0..PING_PONG_CONSUMERS {
                kb.mbarrier_init(bar(kb, kb.c(super::ws_pingpong::order_slot(s, c))), t);
            }
        }
        kb.mbarrier_init_fence();
    });
    let cluster = plan.cfg.cluster.size();
    // In a cluster: this block's rank, and the cluster barrier that orders every block's
    // inits before any remote arrival or multicast.
    let rank = (cluster > 1).then(|| kb.cluster_rank());
    if cluster > 1 {
        kb.cluster_sync();
    } else {
        kb.barrier();
    }
    // (stage, parity of the use's phase) of ring position `rel`.
    let slot_rel =
        |kb: &Kb<'_, 'ctx>, rel: IntValue<'ctx>| (kb.uremc(rel, s), kb.uremc(kb.udivc(rel, s), 2));
    // The ring position of K tile `kt` of a unit starting at `lo` at position `base`.
    let pos = |kb: &Kb<'_, 'ctx>,
               kt: IntValue<'ctx>,
               lo: IntValue<'ctx>,
               base: Option<IntValue<'ctx>>| {
        let rel = kb.sub(kt, lo);
        match base {
            Some(b) => kb.add(b, rel),
            None => rel,
        }
    };
    let one = kb.c(1);
    let consumer = kb.ultc(tid, ws.consumers);
    let producer = kb.xor(consumer, kb.ctx.bool_type().const_int(1, false));
    kb.if_then(producer, |kb| {
        kb.setmaxnreg(false, ws.producer_regs);
        let ptid = kb.addc(tid, -(ws.consumers as i64));
        // The K tiles `[lo, hi)` of a unit, from ring position `base`.
        let produce_unit = |kb: &Kb<'_, 'ctx>,
                            io: &Issue<'_, '_, 'ctx>,
                            lo: IntValue<'ctx>,
                            hi: IntValue<'ctx>,
                            base: Option<IntValue<'ctx>>| {
            kb.for_range(lo, hi, |kb, kt| {
                let (stage, parity) = slot_rel(kb, pos(kb, kt, lo, base));
                kb.mbarrier_wait(empty(kb, stage), kb.xor(parity, one));
                io.issue_tma(kb, kt, stage, full(kb, stage));
                if any_cp {
                    io.issue_cp(kb, kt, stage);
                    kb.cp_async_arrive(full(kb, stage));
                }
            });
        };
        // The tail: each stage's release of its last use (ring positions `[end, end + S)`
        // with `lo` subtracted), so no copy is in flight at exit.
        let tail = |kb: &Kb<'_, 'ctx>, end: IntValue<'ctx>, lo: IntValue<'ctx>| {
            kb.for_range(end, kb.addc(end, s as i64), |kb, kt| {
                let (stage, parity) = slot_rel(kb, kb.sub(kt, lo));
                kb.mbarrier_wait(empty(kb, stage), kb.xor(parity, one));
            });
        };
        let produce = |kb: &Kb<'_, 'ctx>, io: Option<&Issue<'_, '_, 'ctx>>| match (work, io) {
            (Work::One(Unit { lo, hi, .. }), Some(io)) => {
                produce_unit(kb, io, *lo, *hi, None);
                // A split-K slice past the last K tile has `lo > hi`: its ring ends at
                // position 0, not at the negative `hi - lo` (whose unsigned parity names a
                // phase a fresh barrier never completes: the producer hung).
                let end = if plan.cfg.split_k > 1 {
                    kb.umax(*lo, *hi)
                } else {
                    *hi
                };
                tail(kb, end, *lo);
            }
            (Work::Walk | Work::Stream(_) | Work::Phases(_), _) => {
                // A body per phase: each phase's loads (tensor maps, im2col taps, copy
                // addresses) with the phase's constants.
                let end = walk(kb, plan, work, Body::PerPhase, |kb, plan, unit, step| {
                    let (a, b) = loaders(kb, plan, ptid, &unit.tile);
                    produce_unit(
                        kb,
                        &issue(kb, plan, [&a, &b], ptid, bars, rank),
                        unit.lo,
                        unit.hi,
                        Some(step.base),
                    )
                });
                tail(kb, end, kb.c(0));
            }
            (Work::One(_), None) => unreachable!("one unit's loaders are built up front"),
        };
        // One unit: its loaders up front, for every producer thread.
        let first = match work {
            Work::One(unit) => Some(loaders(kb, plan, ptid, &unit.tile)),
            Work::Walk | Work::Stream(_) | Work::Phases(_) => None,
        };
        let io = first
            .as_ref()
            .map(|(a, b)| issue(kb, plan, [a, b], ptid, bars, rank));
        let leader = match &io {
            Some(io) => io.leader,
            None => kb.eq(ptid, kb.c(0)),
        };
        if any_cp {
            // Every producer thread arrives on full[s], so none can fall a phase behind.
            produce(kb, io.as_ref());
        } else {
            // Only the leader: a thread that waited for nothing else could still be waiting
            // for phase u-1 of empty[s] when u completed too, and then wait for the wrong one.
            kb.if_then(leader, |kb| produce(kb, io.as_ref()));
        }
    });
    kb.if_then(consumer, |kb| {
        kb.setmaxnreg(true, ws.consumer_regs);
        // In a cluster: the thread's lane, which names the block its release arrives on.
        let lane = rank.map(|_| kb.uremc(tid, plan.warp));
        let in_flight = matches!(
            plan.math,
            Math::Wgmma {
                in_flight: true,
                ..
            }
        );
        let (ta, tb) = (&plan.smem.a, &plan.smem.b);
        // One block tile's consumers (`lane0`: the thread is its warp's lane 0): zeroed
        // accumulators, the K tiles `[lo, hi)` from ring position `base`, `issued` once every
        // tile's wait passed and its multiply was issued, the drain.
        let consume = |kb: &Kb<'_, 'ctx>,
                       math: &WarpMath<'_, 'ctx>,
                       lane0: IntValue<'ctx>,
                       lo: IntValue<'ctx>,
                       hi: IntValue<'ctx>,
                       base: Option<IntValue<'ctx>>,
                       issued: &dyn Fn(&Kb<'_, 'ctx>)| {
            let release = |kb: &Kb<'_, 'ctx>, stage: IntValue<'ctx>| match lane {
                // Every block's empty barrier (its producer multicasts into this one): lane `r`
                // of the warp arrives on rank `r`'s, so the remote arrivals leave in parallel.
                Some(lane) if cluster_fault() != Some(ClusterFault::LocalEmpty) => {
                    kb.if_then(kb.ultc(lane, cluster), |kb| {
                        kb.mbarrier_arrive_cluster(empty(kb, stage), lane)
                    });
                }
                _ => kb.if_then(lane0, |kb| kb.mbarrier_arrive(empty(kb, stage))),
            };
            kb.for_range(lo, hi, |kb, kt| {
                let (stage, parity) = slot_rel(kb, pos(kb, kt, lo, base));
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
                        release(kb, slot_rel(kb, pos(kb, kb.addc(kt, -1), lo, base)).0);
                    });
                } else {
                    release(kb, stage);
                }
            });
            issued(kb);
            math.drain(kb);
            if in_flight {
                kb.if_then(kb.ult(lo, hi), |kb| {
                    release(kb, slot_rel(kb, pos(kb, kb.addc(hi, -1), lo, base)).0)
                });
            }
        };
        if let Work::Phases(pp) = work {
            // The uncovered pixels first, by every consumer thread (see `super::phased`).
            super::phased::emit_zero_walk(kb, pp, tid);
        }
        if ws.consumers > t {
            return super::ws_pingpong::emit(kb, plan, work, tid, &bar, &consume, &write);
        }
        kb.set_barrier_scope(Some((CONSUMER_BARRIER, t)));
        let none = |_: &Kb<'_, 'ctx>| {};
        let lane0 = |kb: &Kb<'_, 'ctx>| kb.eq(kb.uremc(tid, plan.warp), kb.c(0));
        match work {
            Work::One(unit) => {
                let math = WarpMath::new(kb, plan, tid);
                consume(kb, &math, lane0(kb), unit.lo, unit.hi, None, &none);
                write(kb, plan, &math, unit, tid);
            }
            Work::Walk | Work::Stream(_) | Work::Phases(_) => {
                let lane0 = lane0(kb);
                walk(kb, plan, work, Body::Shared, |kb, plan, unit, step| {
                    let math = WarpMath::new(kb, plan, tid);
                    consume(kb, &math, lane0, unit.lo, unit.hi, Some(step.base), &none);
                    write(kb, plan, &math, unit, tid);
                });
                super::epilogue_tma::drain(kb, plan, tid);
            }
        }
        kb.set_barrier_scope(None);
    });
    if cluster > 1 && cluster_fault() != Some(ClusterFault::NoExitBarrier) {
        // Every thread of both blocks: neither exits while the other may still reach it.
        kb.cluster_sync();
    }
}
