//! The cost model's physics, term by term.

use super::*;
use crate::arch::Arch;
use crate::config::Reduction;
use crate::lowering::lower;
use crate::problem::DType;

fn cfg(bm: u32, bn: u32, bk: u32, wm: u32, wn: u32, sk: u32) -> PerfConfig {
    PerfConfig {
        block_m: bm,
        block_n: bn,
        block_k: bk,
        warp_m: wm,
        warp_n: wn,
        stages: 3,
        vec_a: 8,
        vec_b: 8,
        vec_c: 8,
        lds: LdsLayout::Swizzled,
        split_k: sk,
        raster: 1,
        mma: crate::config::MmaPath::Sync,
        red: crate::config::Reduction::Atomic,
        ld: crate::config::LoadPath::Cp,
        persistent: crate::config::Grid::PerTile,
        xf: crate::config::Transform::None,
        cluster: crate::config::ClusterShape::One,
        epilogue: crate::config::Epilogue::Reg,
        cut: crate::config::Cut::Tile,
    }
}

fn lowered(line: &str) -> Lowering {
    lower(&line.parse().unwrap())
}

fn h200() -> CostArch {
    CostArch::from_arch(&Arch::SM_90, DType::BF16)
}

#[test]
fn a_tile_that_fits_beats_one_eight_times_too_large() {
    // GEMM M = 64 (k), N = 1·16·16 = 256 pixels, K = 64·9.
    let l =
        lowered("convbfp16 -n 1 -c 64 -H 16 -W 16 -k 64 -y 3 -x 3 -p 1 -q 1 -F 1 --layout NHWC");
    assert_eq!((l.gemms[0].m_len(), l.gemms[0].n_len()), (64, 256));
    let a = h200();
    let fits = estimate(&l, &cfg(64, 64, 32, 32, 32, 1), &a);
    let huge = estimate(&l, &cfg(512, 64, 32, 128, 32, 1), &a);
    assert!(fits.time_us.is_finite() && huge.time_us.is_finite());
    assert!(fits.time_us < huge.time_us, "{fits:?} vs {huge:?}");
}

#[test]
fn grids_that_fill_the_sms_rank_higher() {
    // M = 1024, N = 16·8·8 = 1024, K = 1024: 128×128 tiles give 64 blocks on 132 SMs,
    // 64×128 give 128, and split-K 2 on the big tile gives 128 too.
    let l = lowered("convbfp16 -n 16 -c 1024 -H 8 -W 8 -k 1024 -y 1 -x 1 -F 1 --layout NHWC");
    let a = h200();
    let big = estimate(&l, &cfg(128, 128, 64, 64, 64, 1), &a);
    let filled = estimate(&l, &cfg(64, 128, 64, 32, 64, 1), &a);
    let split = estimate(&l, &cfg(128, 128, 64, 64, 64, 2), &a);
    assert_eq!((big.blocks, filled.blocks, split.blocks), (64, 128, 128));
    assert!(filled.wave_efficiency > big.wave_efficiency);
    assert!(filled.time_us < big.time_us, "{filled:?} vs {big:?}");
    assert!(split.compute_us < big.compute_us);
}

#[test]
fn more_work_takes_longer_and_infeasible_is_infinite() {
    let a = h200();
    let small =
        lowered("convbfp16 -n 8 -c 256 -H 28 -W 28 -k 256 -y 3 -x 3 -p 1 -q 1 -F 1 --layout NHWC");
    let large =
        lowered("convbfp16 -n 64 -c 256 -H 28 -W 28 -k 256 -y 3 -x 3 -p 1 -q 1 -F 1 --layout NHWC");
    let c = cfg(128, 128, 32, 64, 64, 1);
    let (s, l) = (estimate(&small, &c, &a), estimate(&large, &c, &a));
    assert!(l.time_us > 4.0 * s.time_us, "{s:?} {l:?}");
    // 1024 threads × 2 blocks fit; 32×32 warps of a 1024×1024 tile do not.
    let too_many_threads = cfg(1024, 1024, 32, 32, 32, 1);
    assert!(estimate(&large, &too_many_threads, &a)
        .time_us
        .is_infinite());
    let mut too_deep = c;
    too_deep.stages = 64;
    assert!(estimate(&large, &too_deep, &a).time_us.is_infinite());
}

#[test]
fn narrow_vectors_and_shallow_pipelines_cost_more_on_memory_bound_problems() {
    // A 1×1 convolution with few channels: memory bound.
    let l = lowered("convbfp16 -n 64 -c 32 -H 56 -W 56 -k 32 -y 1 -x 1 -F 1 --layout NHWC");
    let a = h200();
    let wide = cfg(32, 128, 32, 32, 32, 1);
    let mut narrow = wide;
    narrow.vec_b = 1;
    let (w, n) = (estimate(&l, &wide, &a), estimate(&l, &narrow, &a));
    assert!(w.memory_us > w.compute_us, "memory bound: {w:?}");
    assert!(n.time_us > w.time_us);
    let mut shallow = wide;
    shallow.stages = 1;
    assert!(estimate(&l, &shallow, &a).time_us > w.time_us);
}

#[test]
fn bwd_data_sums_its_sub_gemms_and_zero_init() {
    let l = lowered(
        "convbfp16 -n 16 -c 1024 -H 28 -W 28 -k 1024 -y 3 -x 3 -p 1 -q 1 -u 2 -v 2 -F 2 --layout NHWC",
    );
    assert_eq!(l.gemms.len(), 4);
    let a = h200();
    let e = estimate(&l, &cfg(128, 128, 32, 64, 64, 1), &a);
    assert!(e.time_us >= 4.0 * a.launch_us);
    // Roughly the work of the four sub-GEMMs at the modelled peak, within 4×.
    let ideal = l.gemm_flops() / (a.peak_tflops * 1e6);
    assert!(
        e.time_us > ideal && e.time_us < 4.0 * ideal + 10.0,
        "{e:?} ideal {ideal}"
    );
}

/// ResNet-50's 1×1 layer at 14×14: GEMM M = 256 (k), N = 64·14·14 = 12544, K = 1024.
const FWD_1X1: &str = "convbfp16 -n 64 -c 1024 -H 14 -W 14 -k 256 -y 1 -x 1 -F 1 --layout NHWC";

#[test]
fn narrow_copies_cost_issue_time_whatever_bounds_the_problem() {
    // 2-byte vectors cannot use cp.async: staged through registers, a vector per element.
    // The H200 measured such twins 1.5–3.5× slower on this layer; the roofline terms alone
    // barely see them (the operand is read from L2 at the same rate either way).
    let l = lowered(FWD_1X1);
    let a = h200();
    let wide = cfg(128, 64, 64, 64, 32, 1);
    let w = estimate(&l, &wide, &a);
    for narrow in [
        PerfConfig { vec_a: 1, ..wide },
        PerfConfig { vec_b: 1, ..wide },
    ] {
        let n = estimate(&l, &narrow, &a);
        assert!(n.copy_us > 4.0 * w.copy_us, "{n:?} vs {w:?}");
        assert!(n.regs_per_thread > w.regs_per_thread, "staging registers");
        assert!(n.time_us > 1.3 * w.time_us, "{n:?} vs {w:?}");
    }
    // 4-byte vectors are a cp.async size: cheaper than 2-byte ones, dearer than 16-byte ones.
    let four = estimate(&l, &PerfConfig { vec_b: 2, ..wide }, &a);
    let two = estimate(&l, &PerfConfig { vec_b: 1, ..wide }, &a);
    assert!(w.copy_us < four.copy_us && four.copy_us < two.copy_us);
    assert_eq!(four.regs_per_thread, w.regs_per_thread);
}

#[test]
fn wgmma_beats_mma_sync_at_equal_tile_on_hopper_only() {
    let l = lowered(FWD_1X1);
    let a = h200();
    let sync = cfg(128, 64, 64, 64, 64, 1);
    let wg = PerfConfig {
        mma: crate::config::MmaPath::Wgmma,
        ..sync
    };
    let (s, w) = (estimate(&l, &sync, &a), estimate(&l, &wg, &a));
    assert!(w.compute_us < 0.8 * s.compute_us, "{w:?} vs {s:?}");
    assert!(w.time_us < s.time_us);
    assert!((a.wgmma_tflops / a.peak_tflops - 1.0 / 0.6).abs() < 1e-9);
    // No wgmma on Ampere, nor for f32.
    assert_eq!(
        CostArch::from_arch(&Arch::SM_80, DType::BF16).wgmma_tflops,
        0.0
    );
    assert_eq!(
        CostArch::from_arch(&Arch::SM_90, DType::F32).wgmma_tflops,
        0.0
    );
}

#[test]
fn im2col_replicas_are_not_unique_dram_traffic() {
    // The same GEMM (M = 64, N = 64·28·28, K = 576) from a 3×3 convolution over 64 channels and
    // a 1×1 one over 576: the 3×3 input is a ninth of the 1×1 input, and its nine-fold
    // replication is re-read from cache.
    let three =
        lowered("convbfp16 -n 64 -c 64 -H 28 -W 28 -k 64 -y 3 -x 3 -p 1 -q 1 -F 1 --layout NHWC");
    let one = lowered("convbfp16 -n 64 -c 576 -H 28 -W 28 -k 64 -y 1 -x 1 -F 1 --layout NHWC");
    let shape = |l: &Lowering| (l.gemms[0].m_len(), l.gemms[0].n_len(), l.gemms[0].k_len());
    assert_eq!(shape(&three), shape(&one));
    let a = h200();
    // A small grid-filling tile with a shallow pipeline, so that DRAM is the bound.
    let mut c = cfg(64, 64, 32, 32, 32, 1);
    c.stages = 2;
    let (t, o) = (estimate(&three, &c, &a), estimate(&one, &c, &a));
    assert!(t.memory_us < 0.8 * o.memory_us, "{t:?} vs {o:?}");
    assert_eq!(t.compute_us, o.compute_us);
}

#[test]
fn a_group_in_flight_costs_one_tile_of_copy_lookahead() {
    use crate::config::MmaPath::{Wgmma, WgmmaInFlight};
    let a = h200();
    let l =
        lowered("convbfp16 -n 64 -c 256 -H 28 -W 28 -k 256 -y 3 -x 3 -p 1 -q 1 -F 1 --layout NHWC");
    let at = |mma, stages| {
        let c = PerfConfig {
            mma,
            stages,
            ..cfg(128, 128, 64, 64, 128, 1)
        };
        estimate(&l, &c, &a).time_us
    };
    // Same shared memory and occupancy, one tile less lookahead.
    assert!(at(WgmmaInFlight, 3) > at(Wgmma, 3));
    assert!(at(WgmmaInFlight, 4) > at(Wgmma, 4));
}

#[test]
fn the_in_kernel_fixup_saves_the_zeroing_and_finishing_passes_of_16_bit_split_k() {
    // bwd-weight 3x3 on a 14x14 image: dw is 256 x 2304, K = 32·196.
    let l =
        lowered("convbfp16 -n 32 -c 256 -H 14 -W 14 -k 256 -y 3 -x 3 -p 1 -q 1 -F 4 --layout NHWC");
    let a = h200();
    let atomic = cfg(64, 64, 64, 32, 32, 4);
    let fixup = PerfConfig {
        red: crate::config::Reduction::Fixup,
        ..atomic
    };
    let (ea, ef) = (estimate(&l, &atomic, &a), estimate(&l, &fixup, &a));
    assert!(ef.time_us < ea.time_us, "{ef:?} vs {ea:?}");
    // The fix-up's serial tail grows with the slices and the tile: with 128x128 tiles split 64
    // ways it costs more than the passes it saves.
    let deep = |red| PerfConfig {
        split_k: 64,
        red,
        ..cfg(128, 128, 64, 64, 64, 1)
    };
    let (da, df) = (
        estimate(&l, &deep(crate::config::Reduction::Atomic), &a),
        estimate(&l, &deep(crate::config::Reduction::Fixup), &a),
    );
    assert!(df.time_us > da.time_us, "{df:?} vs {da:?}");
}

#[test]
fn tma_operands_cost_no_copy_issue_and_ws_overlaps_the_rest() {
    // Padded 3x3: the filter (A) by TMA, the pixels (B) by cp.async.
    let l =
        lowered("convbfp16 -n 64 -c 256 -H 28 -W 28 -k 256 -y 3 -x 3 -p 1 -q 1 -F 1 --layout NHWC");
    let a = h200();
    let base = PerfConfig {
        stages: 4,
        mma: crate::config::MmaPath::WgmmaInFlight,
        ..cfg(128, 256, 64, 64, 256, 1)
    };
    let at = |ld| estimate(&l, &PerfConfig { ld, ..base }, &a);
    let (cp, tma, ws) = (
        at(crate::config::LoadPath::Cp),
        at(crate::config::LoadPath::Tma),
        at(crate::config::LoadPath::Ws),
    );
    assert!(tma.copy_us < cp.copy_us, "{tma:?} vs {cp:?}");
    assert_eq!(ws.copy_us, tma.copy_us);
    // The producer's copies hide under the multiplies; the block has the SM to itself.
    assert!(ws.compute_us < tma.compute_us, "{ws:?} vs {tma:?}");
    assert_eq!(ws.blocks_per_sm, 1);
    assert!(ws.time_us.is_finite());
}

#[test]
fn a_persistent_grid_gains_where_blocks_walk_many_short_units() {
    let ws = |c: PerfConfig, pk| PerfConfig {
        mma: crate::config::MmaPath::Wgmma,
        ld: crate::config::LoadPath::Ws,
        persistent: pk,
        ..c
    };
    let (off, on) = (
        crate::config::Grid::PerTile,
        crate::config::Grid::Persistent,
    );
    let a = h200();
    // M = 256, N = 32·14·14 = 6272, K = 1024 (16 K steps): 2 × 98 = 196 units of 128 × 64
    // on 132 SMs (two a block at most) gain; 98 units of 128 × 128 (one a block) do not.
    let l = lowered("convbfp16 -n 32 -c 1024 -H 14 -W 14 -k 256 -y 1 -x 1 -F 1 --layout NHWC");
    let c = cfg(128, 64, 64, 64, 64, 1);
    let (base, pers) = (estimate(&l, &ws(c, off), &a), estimate(&l, &ws(c, on), &a));
    assert!(pers.compute_us < base.compute_us, "{pers:?} vs {base:?}");
    let c = cfg(128, 128, 64, 64, 128, 1);
    let (base, pers) = (estimate(&l, &ws(c, off), &a), estimate(&l, &ws(c, on), &a));
    assert_eq!(pers.compute_us, base.compute_us);
    // Many units a block, short K: the gain is the fill and epilogue overlap of
    // `persistent_gain`, at most half the per-unit overhead.
    assert_eq!(persistent_gain(&ws(c, off), 2, 1000, 100), 1.0);
    let g = persistent_gain(&ws(c, on), 2, 1000, 100);
    assert!((g - (2.0 + 1.0 + 0.1) / 4.0).abs() < 1e-12, "{g}");
    assert!(persistent_gain(&ws(c, on), 64, 1000, 100) > 0.98);
    // Ping-pong hides the epilogue too: 8 K steps, 10 units a block: (8 + 0.2) / 10, against
    // the cooperative (8 + 1 + 0.1) / 10; one unit a block gains nothing either way.
    let pp = PerfConfig {
        ld: crate::config::LoadPath::WsPingPong,
        ..ws(c, on)
    };
    let g = persistent_gain(&pp, 8, 1000, 100);
    assert!((g - 8.2 / 10.0).abs() < 1e-12, "{g}");
    assert!(g < persistent_gain(&ws(c, on), 8, 1000, 100));
    assert_eq!(persistent_gain(&pp, 8, 100, 100), 1.0);
}

#[test]
fn ping_pong_is_costed_with_both_consumer_warpgroups() {
    // fwd 1×1 7×7 c512→2048 n64: K = 512 (8 K steps), 32 × 13 = 416 units of 64 × 256, about
    // three a block. Against the same tile with one cooperative consumer warpgroup, ping-pong
    // hides the epilogues (H200, session 8: 20.9 against 22.5 µs at st=4, mma=wg).
    let l = lowered("convbfp16 -n 64 -c 512 -H 7 -W 7 -k 2048 -y 1 -x 1 -F 1 --layout NHWC");
    let a = h200();
    let at = |ld| {
        estimate(
            &l,
            &PerfConfig {
                ld,
                stages: 4,
                mma: crate::config::MmaPath::Wgmma,
                persistent: crate::config::Grid::Persistent,
                ..cfg(64, 256, 64, 64, 256, 1)
            },
            &a,
        )
    };
    let (pp, coop) = (
        at(crate::config::LoadPath::WsPingPong),
        at(crate::config::LoadPath::Ws),
    );
    assert!(pp.time_us.is_finite(), "{pp:?}");
    assert_eq!(pp.blocks_per_sm, 1);
    assert!(pp.compute_us < coop.compute_us, "{pp:?} vs {coop:?}");
}

#[test]
fn ws_stream_k_fills_the_last_wave_of_the_issues_fwd_problem() {
    // 400 tiles of 128x128 on 132 SMs, 8 K tiles each: one block per tile runs 3 full waves
    // and 4 tiles; DP + SK runs two data-parallel waves and spreads the other 136 tiles'
    // 1088 iterations at 9 a block: 25 K steps a block instead of 32.
    let l = lowered("convbfp16 -n 64 -c 512 -H 7 -W 7 -k 2048 -y 1 -x 1 -F 1 --layout NHWC");
    let a = h200();
    let mut ws = cfg(128, 128, 64, 64, 128, 1);
    ws.mma = crate::config::MmaPath::Wgmma;
    ws.ld = crate::config::LoadPath::Ws;
    ws.persistent = crate::config::Grid::Persistent;
    ws.stages = 4;
    let stream = PerfConfig {
        red: Reduction::Stream,
        ..ws
    };
    let (dp, sk) = (estimate(&l, &ws, &a), estimate(&l, &stream, &a));
    assert_eq!(sk.blocks, 132);
    assert!(
        (sk.wave_efficiency - 3200.0 / (132.0 * 25.0)).abs() < 1e-9,
        "{sk:?}"
    );
    assert!(sk.wave_efficiency > dp.wave_efficiency, "{sk:?} vs {dp:?}");
    assert!(sk.compute_us < dp.compute_us, "{sk:?} vs {dp:?}");
}

/// A cluster halves the re-reads of the operand its blocks share and nothing else: on the
/// short-K 1×1 layer (GEMM 256 × 6272 × 1024, 128 × 128 tiles: 2 × 49) `2m` shares B, read
/// once per M tile, `2n` shares A, read once per N tile; the math is its twin's; without
/// `pk=1`'s walk of whole clusters the grid is the twin's.
#[test]
fn a_cluster_halves_its_shared_operands_re_reads() {
    let ws = |c: PerfConfig, cl| PerfConfig {
        mma: crate::config::MmaPath::Wgmma,
        ld: crate::config::LoadPath::Ws,
        persistent: crate::config::Grid::Persistent,
        cluster: cl,
        ..c
    };
    use crate::config::ClusterShape::{One, PairM, PairN};
    let a = h200();
    let l = lowered("convbfp16 -n 32 -c 1024 -H 14 -W 14 -k 256 -y 1 -x 1 -F 1 --layout NHWC");
    let c = cfg(128, 128, 64, 64, 128, 1);
    let [one, m, n] = [One, PairM, PairN].map(|cl| estimate(&l, &ws(c, cl), &a));
    assert_eq!(
        (m.compute_us, n.compute_us),
        (one.compute_us, one.compute_us)
    );
    assert!(m.memory_us < one.memory_us, "{m:?} vs {one:?}");
    assert!(n.memory_us < one.memory_us, "{n:?} vs {one:?}");
    // A (0.5 MB) is re-read 49 times, B (12.8 MB) twice: the same bytes, the same saving.
    assert!((n.memory_us - m.memory_us).abs() < 1e-9, "{n:?} vs {m:?}");
    assert!(m.time_us <= one.time_us && n.time_us <= one.time_us);
}

/// On an odd SM count the persistent grid of a cluster kernel is one block short (whole
/// clusters, as the planner launches it): an SM idles, which its twin does not pay.
#[test]
fn a_cluster_grid_holds_whole_clusters() {
    let c = PerfConfig {
        mma: crate::config::MmaPath::Wgmma,
        ld: crate::config::LoadPath::Ws,
        persistent: crate::config::Grid::Persistent,
        ..cfg(128, 128, 64, 64, 128, 1)
    };
    let odd = CostArch::from_arch(&Arch::SM_90.with_compute_units(3), DType::BF16);
    let l = lowered("convbfp16 -n 32 -c 1024 -H 14 -W 14 -k 256 -y 1 -x 1 -F 1 --layout NHWC");
    let one = estimate(&l, &c, &odd);
    let two = estimate(
        &l,
        &PerfConfig {
            cluster: crate::config::ClusterShape::PairM,
            ..c
        },
        &odd,
    );
    assert!(two.compute_us > one.compute_us, "{two:?} vs {one:?}");
}

/// `ep=tma`: the epilogue's global writes overlap the next unit's main loop, so a persistent
/// walk of several units a block is estimated faster than its `ep=reg` twin, by no more than
/// the unit overhead the model charges.
#[test]
fn a_tma_store_epilogue_overlaps_the_next_unit() {
    let ws = |c: PerfConfig, ep| PerfConfig {
        mma: crate::config::MmaPath::Wgmma,
        ld: crate::config::LoadPath::Ws,
        persistent: crate::config::Grid::Persistent,
        epilogue: ep,
        ..c
    };
    use crate::config::Epilogue::{Reg, Tma};
    let a = h200();
    let l = lowered("convbfp16 -n 64 -c 256 -H 28 -W 28 -k 256 -y 1 -x 1 -F 1 --layout NHWC");
    let c = cfg(128, 128, 64, 64, 128, 1);
    let [reg, tma] = [Reg, Tma].map(|ep| estimate(&l, &ws(c, ep), &a));
    assert!(
        tma.time_us < reg.time_us,
        "{} vs {}",
        tma.time_us,
        reg.time_us
    );
    assert!(
        tma.time_us > 0.7 * reg.time_us,
        "{} vs {}",
        tma.time_us,
        reg.time_us
    );
}
