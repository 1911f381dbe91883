//! The TMA main loop (`ld=tma`): the multistage ring of [`super::mainloop`], with the operands
//! that a tiled or im2col tensor map describes ([`crate::lowering::tma`],
//! [`crate::lowering::im2col`]) loaded by one thread with
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
use crate::abi::Im2colMap;
use crate::lowering::im2col::{Im2colTile, MAX_TAP_AXES};
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
    /// In a cluster: the operand its blocks share (0: A, 1: B) and this block's rank. The
    /// block of rank `r` issues the copies `j` of that operand with `j % 2 == r` (all of a
    /// one-copy tile for rank 0) and multicasts them to both blocks, so every block's stage
    /// still receives `bytes`.
    pub multicast: Option<(usize, IntValue<'ctx>)>,
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
            for (i, (l, t)) in self.loaders.iter().zip(&self.plan.tma).enumerate() {
                let Some(t) = t else { continue };
                let rank = self
                    .multicast
                    .and_then(|(shared, rank)| (shared == i).then_some(rank));
                issue_box(
                    kb,
                    self.plan,
                    l,
                    t,
                    kb.map_arg(self.plan.first_map + map),
                    kt,
                    stage,
                    bar,
                    rank,
                );
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

/// The TMA copies (issued by the calling thread) of operand tile `t` of K tile `kt` into
/// `stage`, completing on `bar`: per copy the box coordinates of a tiled map, or the first
/// pixel, channel and filter-tap offsets of an im2col map ([`im2col_coords`]). With `rank`
/// (the block's in a cluster that shares this operand), only the copies of that rank, each
/// multicast to the cluster (see [`Issue::multicast`]).
#[allow(clippy::too_many_arguments)]
fn issue_box<'ctx>(
    kb: &Kb<'_, 'ctx>,
    plan: &GemmPlan,
    l: &Loader<'_, 'ctx>,
    t: &TmaTile,
    map: PointerValue<'ctx>,
    kt: IntValue<'ctx>,
    stage: IntValue<'ctx>,
    bar: PointerValue<'ctx>,
    rank: Option<IntValue<'ctx>>,
) {
    let base = l.stage_base(kb, stage);
    let k0 = kb.mulc(kt, plan.cfg.block_k as i64);
    let (row0, g) = l.origin;
    // Copy j's first row and element: MN-major copies are swizzle-atom blocks of the stage
    // (`row_blocks` elements each); K-major ones (a halved tile) whole-K runs of rows.
    let (line, step) = if t.kmajor {
        (t.map.boxes[1], t.map.boxes[1] * t.map.boxes[0])
    } else {
        (t.map.boxes[0], l.tile.row_blocks.unwrap_or(0))
    };
    for j in 0..t.copies {
        let r = kb.addc(row0, (j * line) as i64);
        let block = step * j;
        let dst = kb.gep(kb.elem_ty(plan.dt), base, kb.c(block as i64));
        let copy = |kb: &Kb<'_, 'ctx>| match (&t.im2col, &t.map.im2col) {
            (Some(ic), Some(m)) => {
                // K-major: the rows are the pixels, K the channels and taps; else the reverse.
                let (pixel, tap) = if t.kmajor { (r, k0) } else { (k0, r) };
                let (coords, offsets) =
                    im2col_coords(kb, ic, m, pixel, tap, t.grouped.then_some(g));
                match rank {
                    Some(_) => {
                        kb.tma_load_multicast(dst, map, &coords, Some(&offsets), bar, CLUSTER_MASK)
                    }
                    None => kb.tma_load_im2col(dst, map, &coords, &offsets, bar),
                }
            }
            _ => {
                let mut coords = if t.kmajor { vec![k0, r] } else { vec![r, k0] };
                if t.grouped {
                    coords.push(g);
                }
                match rank {
                    Some(_) => kb.tma_load_multicast(dst, map, &coords, None, bar, CLUSTER_MASK),
                    None => kb.tma_load(dst, map, &coords, bar),
                }
            }
        };
        match rank {
            Some(rank) => kb.if_then(kb.eq(rank, kb.c(i64::from(j % 2))), copy),
            None => copy(kb),
        }
    }
}

/// The multicast mask of a cluster of two blocks: both.
const CLUSTER_MASK: u16 = 0b11;

/// The coordinates `(c, w, h, n)` and offsets `(w, h)` of the im2col copy whose first pixel is
/// GEMM index `pixel` along the pixel dimension and whose channels start at index `tap` of the
/// channel-and-tap dimension (see [`crate::lowering::im2col`]): the pixel `(n, ho, wo)` read
/// at tap 0 is `(wo·stride + lower, ho·stride + lower, n)`; the tap's axes give the offsets.
fn im2col_coords<'ctx>(
    kb: &Kb<'_, 'ctx>,
    ic: &Im2colTile,
    m: &Im2colMap,
    pixel: IntValue<'ctx>,
    tap: IntValue<'ctx>,
    group: Option<IntValue<'ctx>>,
) -> (Vec<IntValue<'ctx>>, Vec<IntValue<'ctx>>) {
    let [_, ho_len, wo_len] = ic.pixel_lens;
    let wo = kb.uremc(pixel, wo_len);
    let rest = kb.udivc(pixel, wo_len);
    let ho = kb.uremc(rest, ho_len);
    let n = kb.udivc(rest, ho_len);
    let spatial = |o: IntValue<'ctx>, d: usize| {
        kb.addc(
            kb.mulc(o, m.element_strides[d + 1] as i64),
            m.lower[d] as i64,
        )
    };
    let mut taps = [kb.c(0); MAX_TAP_AXES];
    let mut rest = tap;
    for i in (0..MAX_TAP_AXES).rev() {
        let len = ic.tap_lens[i];
        if len > 1 {
            taps[i] = kb.uremc(rest, len);
            rest = kb.udivc(rest, len);
        }
    }
    let mut channel = taps[MAX_TAP_AXES - 1];
    if let Some(g) = group {
        channel = kb.add(channel, kb.mulc(g, ic.group_channels as i64));
    }
    // Offset d = Σ a·t over taps with a ≥ 0, Σ |a|·(len − 1 − t) over the others (≥ 0).
    let offsets = (0..2)
        .map(|d| {
            let mut off = kb.c((0..MAX_TAP_AXES)
                .map(|i| {
                    let a = ic.tap_coefs[i][d] as i64;
                    if a < 0 {
                        -a * (ic.tap_lens[i] as i64 - 1)
                    } else {
                        0
                    }
                })
                .sum());
            for (i, &t) in taps.iter().enumerate().take(MAX_TAP_AXES - 1) {
                let a = ic.tap_coefs[i][d] as i64;
                if a != 0 && ic.tap_lens[i] > 1 {
                    off = kb.add(off, kb.mulc(t, a));
                }
            }
            off
        })
        .collect();
    (vec![channel, spatial(wo, 0), spatial(ho, 1), n], offsets)
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
            multicast: None,
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
