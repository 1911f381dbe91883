//! Stream-K (`red=stream`): a persistent grid walking (tile, K tile) iterations, split tiles
//! finished by the in-kernel fix-up. Bit-exact on the CPU emulator against the f64 direct
//! convolution (ranges inside one tile, across tiles, and covering whole tiles), the grid it
//! launches, and legality's reasons.

use convtune::arch::Arch;
use convtune::codegen::{compile_conv, launches, Target};
use convtune::config::{Cut, PerfConfig, Reduction, StreamCut, StreamK};
use convtune::legality::{self, Rejection};
use convtune::lowering::lower;
use convtune::problem::ConvProblem;
mod common;

use common::{cfg, emulate_exact, hopper_space, problem};

const H200: Target = Target::of(Arch::SM_90);

fn stream(c: &str) -> PerfConfig {
    PerfConfig {
        red: Reduction::Stream,
        ..cfg(c)
    }
}

/// `c` with stream-K's aligned cut (`cut=aligned`).
fn aligned(c: PerfConfig) -> PerfConfig {
    PerfConfig {
        cut: Cut::Aligned,
        ..c
    }
}

/// Emulates `c`: no bad access, bit-exact; returns the GEMM launch's grid.
fn check(p: &ConvProblem, c: &PerfConfig, like: Target) -> [u32; 3] {
    if let Err(e) = legality::check(&lower(p), c, like.arch()) {
        panic!("{p} {c}: {e}");
    }
    let rep = emulate_exact(p, c, like, 5).unwrap_or_else(|e| panic!("{p} {c}: {e}"));
    let names: Vec<_> = rep.kernels.iter().map(|k| k.name.as_str()).collect();
    // The GEMM alone: its counters are in the kept-zero region, clear when it starts.
    assert_eq!(names, ["convtune_gemm0"], "{p} {c}");
    rep.kernels[0].grid
}

#[test]
fn ranges_inside_tiles_are_bit_exact() {
    // 1x1: dw 96 x 96 in 16x16 tiles: 36 tiles of 32 K tiles (K = 2·16·16 = 512, bk 16): 1152
    // iterations over 132 SMs, 9 a block: every tile split over 4 or 5 blocks (an aligned cut
    // would leave tails under 8 K tiles: the tile-major one). bf16 NHWC, staged vector
    // stores.
    let p = problem("convbfp16 -n 2 -c 96 -H 16 -W 16 -k 96 -y 1 -x 1 -F 4 --layout NHWC");
    let c = stream("v1:bm=16,bn=16,bk=16,wm=16,wn=16,st=3,va=8,vb=8,vc=8,lds=swz,sk=1,rs=1");
    assert_eq!(
        StreamK::new(36, 32, 132, Cut::Aligned).cut,
        StreamCut::Contiguous
    );
    assert_eq!(check(&p, &c, H200), [128, 1, 1]);
}

#[test]
fn aligned_cuts_with_tails_are_bit_exact() {
    // bwd-weight 1x1 f32: dw 160 x 64 in 16x16 tiles: 40 tiles of 104 K tiles (K = 2·26·32,
    // bk 16) on 132 SMs: every tile cut at K 0, 32, 64 (3 head pieces, blocks 3t + j) with
    // a tail [96, 104) of 8 K tiles, the 320 tail iterations walked by the 12 blocks left,
    // 27 each (a head piece is 32): 132 blocks, 4 or 5 contributions a tile.
    let p = problem("conv -n 2 -c 64 -H 26 -W 32 -k 160 -y 1 -x 1 -F 4");
    let c = aligned(stream(
        "v1:bm=16,bn=16,bk=16,wm=16,wn=16,st=2,va=1,vb=1,vc=1,lds=pad,sk=1,rs=1",
    ));
    let s = StreamK::new(40, 104, 132, Cut::Aligned);
    let cut = StreamCut::Aligned {
        splits: 3,
        tail: 8,
        tail_per: 27,
    };
    assert_eq!((s.cut, s.blocks, s.per_block), (cut, 132, 32));
    assert_eq!(check(&p, &c, H200), [132, 1, 1]);
}

#[test]
fn ranges_across_and_covering_whole_tiles_are_bit_exact() {
    // 1x1: dw 160 x 224 in 16x16 tiles: 140 tiles (8 in the last data-parallel wave) of 8 K
    // tiles (K = 2·8·8 = 128): 9 iterations a block, so blocks cover whole tiles, cross tile
    // boundaries, and each tile has one or two contributors. f32 NCHW, scalar stores.
    let p = problem("conv -n 2 -c 224 -H 8 -W 8 -k 160 -y 1 -x 1 -F 4");
    let c = stream("v1:bm=16,bn=16,bk=16,wm=16,wn=16,st=2,va=1,vb=1,vc=1,lds=pad,sk=1,rs=1");
    assert_eq!(check(&p, &c, H200), [125, 1, 1]);
}

#[test]
fn many_contributors_per_tile_take_the_two_level_fixup() {
    // 1x1 f32: dw 16 x 32 in 16x16 tiles: 2 tiles of 528 K tiles (K = 2·66·64 = 8448, bk 16):
    // 8 iterations a block on 132 SMs, 67 contributors a tile, added in groups of 8; cut
    // aligned, each tile at the same 66 offsets (no tails), 66 contributors.
    let p = problem("conv -n 2 -c 32 -H 66 -W 64 -k 16 -y 1 -x 1 -F 4");
    let c = stream("v1:bm=16,bn=16,bk=16,wm=16,wn=16,st=2,va=1,vb=1,vc=1,lds=pad,sk=1,rs=1");
    let s = StreamK::new(2, 528, 132, Cut::Tile);
    assert_eq!((s.blocks, s.per_block, s.max_contributors()), (132, 8, 67));
    assert_eq!(check(&p, &c, H200), [132, 1, 1]);
    let s = StreamK::new(2, 528, 132, Cut::Aligned);
    assert_eq!((s.blocks, s.per_block, s.max_contributors()), (132, 8, 67));
    let cut = StreamCut::Aligned {
        splits: 66,
        tail: 0,
        tail_per: 0,
    };
    assert_eq!(s.cut, cut);
    assert_eq!(check(&p, &aligned(c), H200), [132, 1, 1]);
}

#[test]
fn the_schedule_and_legality() {
    let s = StreamK::new(36, 32, 132, Cut::Tile);
    assert_eq!((s.blocks, s.per_block), (128, 9));
    assert_eq!(s.max_contributors(), 5);
    assert_eq!(s.max_segments(), 2);
    let s = StreamK::new(140, 8, 132, Cut::Tile);
    assert_eq!((s.blocks, s.per_block, s.max_segments()), (125, 9, 3));
    let l = lower(&problem(
        "convbfp16 -n 2 -c 64 -H 16 -W 16 -k 64 -y 3 -x 3 -p 1 -q 1 -F 4 --layout NHWC",
    ));
    let c = stream("v1:bm=32,bn=32,bk=16,wm=16,wn=16,st=3,va=8,vb=8,vc=8,lds=swz,sk=1,rs=1");
    let why = |c: PerfConfig| match legality::check(&l, &c, &Arch::SM_90) {
        Err(Rejection::StreamK { why }) => why,
        other => panic!("{c}: {other:?}"),
    };
    assert!(why(PerfConfig { split_k: 2, ..c }).contains("split_k must be 1"));
    // cut=aligned: stream-K only, and only where it changes the schedule (36 tiles of 32 K
    // tiles would leave tails of 5: tile-major); a long K takes it.
    let atomic = PerfConfig {
        red: Reduction::Atomic,
        ..aligned(c)
    };
    assert!(
        why(atomic).contains("red=atomic has none"),
        "{}",
        why(atomic)
    );
    assert!(
        why(aligned(c)).contains("it would run tile-major"),
        "{}",
        why(aligned(c))
    );
    let long = lower(&problem(
        "convbfp16 -n 64 -c 64 -H 32 -W 32 -k 64 -y 3 -x 3 -p 1 -q 1 -F 4 --layout NHWC",
    ));
    legality::check(&long, &aligned(c), &Arch::SM_90).unwrap_or_else(|e| panic!("{e}"));
    // 64x64 tiles: 9 tiles of 16 K tiles (bk 32) = 144 iterations: 2 a block.
    let few = PerfConfig {
        block_m: 64,
        block_n: 64,
        block_k: 32,
        warp_m: 32,
        warp_n: 32,
        ..c
    };
    assert!(why(few).contains("fewer than 8"), "{}", why(few));
    // A full last wave: 1x1 dw 256 x 528 in 16x16 tiles = 528 tiles = 4 waves of 132.
    let full = lower(&problem("conv -n 2 -c 528 -H 8 -W 8 -k 256 -y 1 -x 1 -F 4"));
    let c16 = stream("v1:bm=16,bn=16,bk=16,wm=16,wn=16,st=2,va=1,vb=1,vc=1,lds=pad,sk=1,rs=1");
    match legality::check(&full, &c16, &Arch::SM_90) {
        Err(Rejection::StreamK { why }) => assert!(why.contains("last wave"), "{why}"),
        other => panic!("{other:?}"),
    }
    // The workspace: counters of 36 tiles in the kept-zero region (no launch of their own),
    // then 36 tiles x 5 contributors x 32·32 f32.
    let gemm = common::assert_kept_counters(&l, &c, H200, 36 * 5 * 32 * 32 * 4);
    assert_eq!(gemm.grid, [128, 1, 1]);
    let ptx = compile_conv(&l, &c, H200).unwrap().module;
    assert!(ptx
        .ptx()
        .unwrap()
        .contains("atom.acq_rel.gpu.global.add.u32"));
    // The issue's bwd-weight 1x1 7x7 c512 -> 2048: 64 tiles of 128x128 on 132 SMs, 49 K tiles
    // each; the wgmma kernel compiles with the schedule of 24 K tiles a block.
    let big = lower(&problem(
        "convbfp16 -n 64 -c 512 -H 7 -W 7 -k 2048 -y 1 -x 1 -F 4 --layout NHWC",
    ));
    let wg =
        stream("v2:bm=128,bn=128,bk=64,wm=64,wn=128,st=3,va=8,vb=8,vc=8,lds=swz,sk=1,rs=1,mma=wg");
    legality::check(&big, &wg, &Arch::SM_90).unwrap_or_else(|e| panic!("{e}"));
    let kernels = launches(&big, &wg, H200).unwrap().kernels;
    assert_eq!(kernels[0].grid, [131, 1, 1]);
    let ptx = compile_conv(&big, &wg, H200).unwrap().module;
    assert!(ptx.ptx().unwrap().contains("wgmma.mma_async"));
    let s = c.to_string();
    assert!(s.ends_with(",mma=sync,red=stream,ld=cp"), "{s}");
    assert_eq!(s.parse::<PerfConfig>().unwrap(), c);
}

#[test]
fn selfcheck_samples_stream_k_kernels_and_they_compile() {
    use convtune::selfcheck::{reduction_problems, split_k_space};
    use convtune::space::sample_legal;
    let space = split_k_space(
        convtune::space::SearchSpace::default_for(&Arch::SM_90),
        Reduction::Stream,
    );
    let mut n = 0;
    for p in reduction_problems(Reduction::Stream) {
        let l = lower(&p);
        for c in sample_legal(&p, &Arch::SM_90, &space, 2, 3) {
            assert!(c.red == Reduction::Stream && c.split_k == 1, "{c}");
            compile_conv(&l, &c, H200).unwrap_or_else(|e| panic!("{p} {c}: {e}"));
            n += 1;
        }
    }
    assert!(n >= 4, "{n} stream-K kernels sampled");
}

/// The host form of the schedule: every (tile, K tile) iteration walked exactly once, the
/// stream-K region first, a tile's contributors (at most `max_contributors`) consecutive
/// blocks when cut tile-major, at the same K offsets in every tile when aligned, and the
/// busiest block's work `most_per_block`.
#[test]
fn the_hybrid_schedule_covers_every_iteration_once() {
    // (tiles, K tiles, SMs) → (data-parallel waves, stream-K tiles): under two full waves
    // plain stream-K; a last wave that spread over every SM gives ≥ 8 K tiles each, alone;
    // a thinner one with one full wave more (the issue's fwd 1x1: 400 tiles of 8 K tiles on
    // 132 SMs).
    for (tiles, k, units, dp, sk_tiles) in [
        (140, 8, 132, 0, 140),
        (36, 32, 132, 0, 36),
        (400, 8, 132, 2, 136),
        (7, 10, 3, 1, 4),
        (7, 25, 3, 2, 1),
        (1, 44, 5, 0, 1),
        (11, 9, 4, 1, 7),
        // Fewer tiles than SMs, long K: aligned cuts, with tails (24 on 132: the bwd-weight
        // 3x3 c256 of issue 13; 3 on 10; 5 on 12, two tails a block, the last block one) and
        // without (6 on 12 after two data-parallel waves).
        (24, 784, 132, 0, 24),
        (3, 100, 10, 0, 3),
        (5, 60, 12, 0, 5),
        (30, 40, 12, 2, 6),
    ] {
        for cut in Cut::ALL {
            let s = StreamK::new(tiles, k, units, cut);
            assert_eq!((s.dp_waves, s.sk_tiles()), (dp, sk_tiles), "{s:?}");
            assert!(s.blocks <= units);
            let mut seen = vec![0u32; (tiles * k) as usize];
            let mut contributors = vec![vec![]; tiles as usize];
            let mut most = 0;
            for b in 0..s.blocks {
                let units = s.units_of(b);
                most = most.max(units.iter().map(|&(_, lo, hi)| hi - lo).sum::<u32>());
                for (i, &(t, lo, hi)) in units.iter().enumerate() {
                    assert!(lo < hi && hi <= k, "{s:?} block {b}: {units:?}");
                    for kt in lo..hi {
                        seen[(t * k + kt) as usize] += 1;
                    }
                    if t < s.sk_tiles() {
                        contributors[t as usize].push(b);
                    } else {
                        // Data-parallel tiles are whole and come after the stream-K segments.
                        assert!(
                            (lo, hi) == (0, k) && units[i..].iter().all(|u| u.0 >= s.sk_tiles())
                        );
                    }
                }
            }
            assert!(seen.iter().all(|&n| n == 1), "{s:?}: {seen:?}");
            assert_eq!(most, s.most_per_block(), "{s:?}");
            for c in contributors.iter().filter(|c| !c.is_empty()) {
                assert!(c.len() as u32 <= s.max_contributors(), "{s:?}: {c:?}");
                if s.cut == StreamCut::Contiguous {
                    assert!(c.windows(2).all(|w| w[1] == w[0] + 1), "{s:?}: {c:?}");
                }
            }
            // Each region's contributors to a tile are the consecutive blocks its host form (and
            // the kernels' share computation) names.
            let (heads, tails) = s.regions();
            for r in std::iter::once(heads).chain(tails) {
                for t in 0..s.sk_tiles() {
                    let (first, count) = r.contributors(t);
                    let meet: Vec<u32> = (0..r.blocks())
                        .filter(|&i| r.units_of(i).iter().any(|u| u.0 == t))
                        .collect();
                    assert_eq!(
                        meet,
                        (first..first + count).collect::<Vec<_>>(),
                        "{s:?} tile {t}"
                    );
                }
            }
            if let StreamCut::Aligned { splits, .. } = s.cut {
                // The heads: piece j of every tile at K [j · per, (j + 1) · per), block t·splits + j.
                for b in 0..splits * s.sk_tiles() {
                    let (t, j) = (b / splits, b % splits);
                    let head = (t, j * s.per_block, (j + 1) * s.per_block);
                    assert_eq!(s.units_of(b)[0], head, "{s:?} block {b}");
                }
                // As balanced as the tile-major cut, but for rounding.
                let sk_most = most - s.dp_waves * k;
                let even = (s.sk_tiles() * k).div_ceil(units);
                assert!(
                    sk_most * 8 <= even * 9,
                    "{s:?}: busiest {sk_most}, {even} even"
                );
            }
            if dp > 0 {
                assert!(s.per_block >= StreamK::MIN_PER_BLOCK, "{s:?}");
                assert_eq!(s.blocks, units);
            }
        }
    }
}

/// Stream-K on the warp-specialised persistent path (`ld=ws`, `pk=1`): one consumer
/// warpgroup, two stages, staged epilogue.
const WS_STREAM: &str = "v4:bm=64,bn=64,bk=64,wm=64,wn=64,st=2,va=8,vb=8,vc=8,lds=swz,sk=1,rs=1,mma=wg,red=stream,ld=ws,pk=1,xf=none";

/// Emulates the ws stream-K config `c` on an H200-like arch of `sms` SMs, bit-exactly, legal;
/// returns the GEMM launches' grids.
fn check_ws(p: &ConvProblem, c: &PerfConfig, sms: u32) -> Vec<[u32; 3]> {
    let arch = Arch::SM_90.with_compute_units(sms);
    let rep =
        common::emulate_where_legal(p, c, arch, 7).unwrap_or_else(|| panic!("{p} {c}: refused"));
    rep.kernels
        .iter()
        .filter(|k| k.name.starts_with("convtune_gemm"))
        .map(|k| {
            assert_eq!(k.block[0], 128 + 128, "{p} {c}: consumers + producer");
            k.grid
        })
        .collect()
}

fn ws_with(f: impl FnOnce(&mut PerfConfig)) -> PerfConfig {
    let mut c = cfg(WS_STREAM);
    f(&mut c);
    c
}

#[test]
fn ws_stream_k_splits_tiles_across_blocks() {
    // bwd-weight 1x1: dw 128 x 64 in 64x64 tiles = 2 tiles of 22 K tiles (K = 2·20·34 = 1360:
    // the last K tile partial) on 5 SMs: 44 iterations, 9 a block. Block 2 ends tile 0
    // ([18, 22)) and starts tile 1 ([0, 5)): K ranges off the tile grid, tiles split over 3
    // blocks, two tiles in one block's walk, the ring running on across them.
    let p = problem("convbfp16 -n 2 -c 64 -H 20 -W 34 -k 128 -y 1 -x 1 -F 4 --layout NHWC");
    let s = StreamK::new(2, 22, 5, Cut::Tile);
    assert_eq!((s.blocks, s.per_block, s.dp_waves), (5, 9, 0));
    assert_eq!(s.units_of(2), [(0, 18, 22), (1, 0, 5)]);
    assert_eq!(check_ws(&p, &cfg(WS_STREAM), 5), [[5, 1, 1]]);
    // Three stages with the group in flight (released across the tile boundary), direct
    // epilogue, f16.
    let wg1 = ws_with(|c| {
        c.stages = 3;
        c.mma = convtune::config::MmaPath::WgmmaInFlight;
        c.vec_c = 1;
    });
    let p16 = problem("convfp16 -n 2 -c 64 -H 20 -W 34 -k 128 -y 1 -x 1 -F 4 --layout NHWC");
    assert_eq!(check_ws(&p16, &wg1, 5), [[5, 1, 1]]);
}

#[test]
fn ws_stream_k_aligned_cut_runs_tails_of_several_tiles() {
    // bwd-weight 1x1: dw 192 x 64 in 64x64 tiles = 3 tiles of 40 K tiles (K = 2·32·40) on 8
    // SMs: each tile cut at K 0 and 15 (blocks 2t + j), the tails [30, 40) walked tile-major
    // by the two blocks left, 15 iterations each: the first takes tile 0's tail and half of
    // tile 1's, the ring running on across them.
    let p = problem("convbfp16 -n 2 -c 64 -H 32 -W 40 -k 192 -y 1 -x 1 -F 4 --layout NHWC");
    let s = StreamK::new(3, 40, 8, Cut::Aligned);
    assert_eq!(s.units_of(6), [(0, 30, 40), (1, 30, 35)]);
    assert_eq!(s.units_of(7), [(1, 35, 40), (2, 30, 40)]);
    assert_eq!(s.units_of(3), [(1, 15, 30)]);
    assert_eq!(check_ws(&p, &aligned(cfg(WS_STREAM)), 8), [[8, 1, 1]]);
}

#[test]
fn ws_stream_k_aligned_region_then_data_parallel_waves() {
    // 7 tiles on 5 SMs, 40 K tiles: one data-parallel wave after a stream-K region of the
    // last 2 tiles, cut aligned: 2 head pieces of 16 a tile (blocks 0-3), the tails [32, 40)
    // walked by block 4, then each block's whole tile of the wave (bwd-weight dw 448 x 64).
    let p = problem("convbfp16 -n 2 -c 64 -H 32 -W 40 -k 448 -y 1 -x 1 -F 4 --layout NHWC");
    let s = StreamK::new(7, 40, 5, Cut::Aligned);
    let cut = StreamCut::Aligned {
        splits: 2,
        tail: 8,
        tail_per: 16,
    };
    assert_eq!((s.dp_waves, s.sk_tiles(), s.cut), (1, 2, cut));
    assert_eq!(s.units_of(4), [(0, 32, 40), (1, 32, 40), (6, 0, 40)]);
    assert_eq!(check_ws(&p, &aligned(cfg(WS_STREAM)), 5), [[5, 1, 1]]);
}

#[test]
fn ws_stream_k_hybrid_runs_data_parallel_waves_after_the_stream_k_region() {
    // 7 tiles on 3 SMs (two full waves and one tile), bwd-weight dw 448 x 64.
    // 10 K tiles: the last tile alone would give each block 3 (< 8), so the stream-K region
    // is 4 tiles (40 iterations, 14 a block) and one data-parallel wave follows.
    let p = problem("convbfp16 -n 2 -c 64 -H 16 -W 20 -k 448 -y 1 -x 1 -F 4 --layout NHWC");
    let s = StreamK::new(7, 10, 3, Cut::Tile);
    assert_eq!((s.dp_waves, s.sk_tiles(), s.per_block), (1, 4, 14));
    assert_eq!(s.units_of(1), [(1, 4, 10), (2, 0, 8), (5, 0, 10)]);
    assert_eq!(check_ws(&p, &cfg(WS_STREAM), 3), [[3, 1, 1]]);
    // 25 K tiles: the last tile alone, over 3 blocks (9 each), after two full waves.
    let p = problem("convbfp16 -n 4 -c 64 -H 20 -W 20 -k 448 -y 1 -x 1 -F 4 --layout NHWC");
    let s = StreamK::new(7, 25, 3, Cut::Tile);
    assert_eq!((s.dp_waves, s.sk_tiles(), s.per_block), (2, 1, 9));
    assert_eq!(check_ws(&p, &cfg(WS_STREAM), 3), [[3, 1, 1]]);
    // Forward, 1x1, two groups: 7 tiles of 64 output pixels by 64 channels each (the tile
    // index runs over groups), K = 640 (10 K tiles), raster 2; 14 tiles on 6 SMs: a stream-K
    // region of 8 tiles (80 iterations, 14 a block), then one data-parallel wave.
    let fwd = problem("convbfp16 -n 7 -c 1280 -H 8 -W 8 -k 128 -y 1 -x 1 -g 2 -F 1 --layout NHWC");
    let s = StreamK::new(14, 10, 6, Cut::Tile);
    assert_eq!((s.dp_waves, s.sk_tiles(), s.per_block), (1, 8, 14));
    let rs = ws_with(|c| c.raster = 2);
    assert_eq!(check_ws(&fwd, &rs, 6), [[6, 1, 1]]);
}

#[test]
fn ws_stream_k_over_several_sub_gemms() {
    // Strided bwd-data, 3x3 stride 2: four sub-GEMMs (one per (iy, ix) phase) of 6 tiles and
    // 32, 16, 16 and 8 K tiles, each its own stream-K launch and fix-up on 5 SMs.
    let p = problem(
        "convbfp16 -n 2 -c 64 -H 24 -W 24 -k 512 -y 3 -x 3 -p 1 -q 1 -u 2 -v 2 -F 2 --layout NHWC",
    );
    let l = lower(&p);
    assert_eq!(l.gemms.len(), 4);
    let grids = check_ws(&p, &cfg(WS_STREAM), 5);
    assert_eq!(grids.len(), l.gemms.len(), "{grids:?}");
}

#[test]
fn ws_stream_k_legality() {
    let p = problem("convbfp16 -n 2 -c 64 -H 20 -W 34 -k 128 -y 1 -x 1 -F 4 --layout NHWC");
    let l = lower(&p);
    let arch = Arch::SM_90.with_compute_units(5);
    let c = cfg(WS_STREAM);
    legality::check(&l, &c, &arch).unwrap_or_else(|e| panic!("{e}"));
    let refused = |c: &PerfConfig| {
        let e = legality::check(&l, c, &arch).unwrap_err().to_string();
        let plan = launches(&l, c, Target::of(arch))
            .map(|_| ())
            .unwrap_err()
            .to_string();
        (e, plan)
    };
    let (e, plan) = refused(&ws_with(|c| c.persistent = convtune::config::Grid::PerTile));
    assert!(
        e.contains("use pk=1") && plan.contains("use pk=1"),
        "{e} / {plan}"
    );
    let (e, plan) = refused(&ws_with(|c| c.ld = convtune::config::LoadPath::Tma));
    assert!(
        e.contains("ld=tma") && plan.contains("ld=tma"),
        "{e} / {plan}"
    );
    let (e, _) = refused(&ws_with(|c| c.split_k = 2));
    assert!(e.contains("split_k must be 1"), "{e}");
    // On the H200 the 2 tiles x 22 K tiles give 132 blocks fewer than 8 K tiles each.
    let e = legality::check(&l, &c, &Arch::SM_90)
        .unwrap_err()
        .to_string();
    assert!(e.contains("fewer than 8"), "{e}");
}

/// The issue's targets plan and compile for the H200 on the ws path: fwd 1x1 c512 -> 2048
/// n64 (400 tiles of 128x128: two data-parallel waves after a stream-K region of 136 tiles)
/// and bwd-weight (64 tiles: plain stream-K).
#[test]
fn ws_stream_k_for_the_issue_problems_on_the_h200() {
    let c = cfg("v4:bm=128,bn=128,bk=64,wm=64,wn=128,st=4,va=8,vb=8,vc=8,lds=swz,sk=1,rs=1,mma=wg,red=stream,ld=ws,pk=1,xf=none");
    for (line, grid) in [
        (
            "convbfp16 -n 64 -c 512 -H 7 -W 7 -k 2048 -y 1 -x 1 -F 1 --layout NHWC",
            132,
        ),
        (
            "convbfp16 -n 64 -c 512 -H 7 -W 7 -k 2048 -y 1 -x 1 -F 4 --layout NHWC",
            131,
        ),
    ] {
        let l = lower(&problem(line));
        legality::check(&l, &c, &Arch::SM_90).unwrap_or_else(|e| panic!("{line}: {e}"));
        let compiled = compile_conv(&l, &c, H200).unwrap_or_else(|e| panic!("{line}: {e}"));
        let k = compiled
            .kernels
            .iter()
            .find(|k| k.name.starts_with("convtune_gemm"))
            .unwrap();
        assert_eq!(k.grid, [grid, 1, 1], "{line}");
        let ptx = compiled.module.ptx().unwrap();
        assert!(ptx.contains("setmaxnreg") && ptx.contains("atom.acq_rel.gpu.global.add.u32"));
    }
}

/// A ring restarted at every stream-K unit (each unit's K tiles from stage 0, parity 0) waits
/// on the wrong phases once a block's second unit starts mid-ring: the emulator must notice.
/// (Block 2's first unit has 4 K tiles: with 3 stages its second starts mid-ring; with 2
/// every stage's parity would be back where a reset puts it.)
#[test]
fn ws_stream_k_ring_reset_per_unit_is_caught() {
    let p = problem("convbfp16 -n 2 -c 64 -H 20 -W 34 -k 128 -y 1 -x 1 -F 4 --layout NHWC");
    let c = ws_with(|c| c.stages = 3);
    let like = Target::of(Arch::SM_90.with_compute_units(5));
    let mut t = common::data(&p, 3);
    let want = convtune::reference::direct_conv(&p, &t[0], &t[1], &t[2]);
    let rep = convtune::codegen::with_ring_reset_per_unit(|| {
        convtune::codegen::emu::emulate_conv(&lower(&p), &c, like, &mut t)
    })
    .unwrap_or_else(|e| panic!("{p} {c}: {e}"));
    let bad = common::mismatches(&p, &t[p.direction().written() as usize], &want).len();
    assert!(
        rep.violations > 0 || bad > 0,
        "{p} {c}: the wrong ring went unnoticed"
    );
    // The right one passes on the same problem.
    assert_eq!(check_ws(&p, &c, 5), [[5, 1, 1]]);
}

/// `selfcheck --space search-spaces/nvidia-hopper.toml --red stream` samples stream-K on the
/// warp-specialised path (`ld=ws`, `pk=1`) too, and what it samples compiles.
#[test]
fn the_hopper_space_samples_ws_stream_k() {
    use convtune::selfcheck::{reduction_problems, split_k_space};
    use convtune::space::sample_legal;
    let space = hopper_space();
    let space = split_k_space(space, Reduction::Stream);
    let mut ws = 0;
    for p in reduction_problems(Reduction::Stream) {
        let l = lower(&p);
        let got = sample_legal(&p, &Arch::SM_90, &space, 10, 5);
        for c in got {
            assert!(c.red == Reduction::Stream && c.ld != convtune::config::LoadPath::Tma);
            if c.ld == convtune::config::LoadPath::Ws {
                assert_eq!(c.persistent, convtune::config::Grid::Persistent, "{c}");
                compile_conv(&l, &c, H200).unwrap_or_else(|e| panic!("{p} {c}: {e}"));
                ws += 1;
            }
        }
    }
    assert!(ws >= 2, "{ws} ws stream-K kernels sampled");
}

proptest::proptest! {
    /// For any tile count, K length and SM count, both cuts walk every (tile, K tile) iteration
    /// exactly once, within the bounds the kernels are sized by: blocks, contributors per tile,
    /// tiles per block, the busiest block's work; an aligned cut's head pieces, tails and tail
    /// ranges are at least `MIN_PER_BLOCK` K tiles.
    #[test]
    fn any_schedule_covers_its_iterations_once(
        tiles in 1u32..300,
        k in 1u32..400,
        units in 1u32..140,
        aligned in proptest::bool::ANY,
    ) {
        let cut = if aligned { Cut::Aligned } else { Cut::Tile };
        let s = StreamK::new(tiles, k, units, cut);
        proptest::prop_assert!(s.blocks >= 1 && s.blocks <= units, "{:?}", s);
        let mut seen = vec![0u8; (tiles * k) as usize];
        let mut meets = vec![0u32; tiles as usize];
        let mut most = 0;
        for b in 0..s.blocks {
            let units_b = s.units_of(b);
            let sk_units = units_b.iter().filter(|u| u.0 < s.sk_tiles()).count() as u32;
            proptest::prop_assert!(sk_units <= s.max_segments(), "{:?} block {}", s, b);
            most = most.max(units_b.iter().map(|&(_, lo, hi)| hi - lo).sum::<u32>());
            for &(t, lo, hi) in &units_b {
                proptest::prop_assert!(lo < hi && hi <= k && t < tiles, "{:?} block {}", s, b);
                (lo..hi).for_each(|kt| seen[(t * k + kt) as usize] += 1);
                meets[t as usize] += 1;
            }
        }
        proptest::prop_assert!(seen.iter().all(|&n| n == 1), "{:?}", s);
        proptest::prop_assert_eq!(most, s.most_per_block());
        let worst = meets[..s.sk_tiles() as usize].iter().copied().max().unwrap_or(0);
        proptest::prop_assert!(worst <= s.max_contributors(), "{:?}: {}", s, worst);
        if let StreamCut::Aligned { tail, tail_per, .. } = s.cut {
            proptest::prop_assert!(s.per_block >= StreamK::MIN_PER_BLOCK);
            let min = StreamK::MIN_PER_BLOCK;
            proptest::prop_assert!(tail == 0 || (tail >= min && tail_per >= min), "{:?}", s);
        }
    }
}
