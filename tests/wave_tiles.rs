//! Wave-shaped warpgroup tiles: block and warpgroup N of 96 and 192 (wgmma n is any multiple
//! of 8 up to 256, so nothing in the kernel needs a power of two), and deep pipelines (7–8
//! stages) on small tiles. These are the shapes cuDNN's sm_90 kernels pick for the short-K 1×1
//! layers: 128 × 192 tiles cover a 256 × 12544 GEMM in exactly 132 tiles, one wave of the
//! H200; 256 × 96 cover 2048 × 3136 in exactly two. Every load path (`ld` = cp, tma, ws,
//! wspp), both grids (`pk`), stream-K and split-K, every direction and both 16-bit types, with
//! partial tiles along M, N and K: bit-exact on the CPU emulator against the f64 direct
//! convolution, and legality agreeing with codegen.

use convtune::arch::Arch;
use convtune::config::{LoadPath, PerfConfig, Reduction};
use convtune::legality;
use convtune::lowering::lower;
use convtune::problem::ConvProblem;
mod common;

use common::{cfg, emulate_where_legal, problem};

/// Emulates `c` for `p` on an H200-like arch with `sms` SMs (few, so that persistent and
/// stream-K grids walk several units a block): bit-exact, legality agreeing; panics when
/// codegen refuses it.
fn run(p: &ConvProblem, c: &PerfConfig, sms: u32) {
    let arch = Arch::SM_90.with_compute_units(sms);
    if emulate_where_legal(p, c, arch, 13).is_none() {
        panic!(
            "{p} {c}: refused: {:?}",
            legality::check(&lower(p), c, &arch)
        );
    }
}

fn with(c: &str, f: impl FnOnce(&mut PerfConfig)) -> PerfConfig {
    let mut c = cfg(c);
    f(&mut c);
    c
}

/// 128 × 192 in two consumer warpgroups of 64 × 192 (the 14×14 layer's tile), 5 stages.
const WS_128X192: &str = "v4:bm=128,bn=192,bk=64,wm=64,wn=192,st=5,va=8,vb=8,vc=8,lds=swz,sk=1,rs=1,mma=wg,red=atomic,ld=ws,pk=1,xf=none";
/// 256 × 96 in two consumer warpgroups of 128 × 96 (the 7×7 layer's tile), 4 stages.
const WS_256X96: &str = "v4:bm=256,bn=96,bk=64,wm=128,wn=96,st=4,va=8,vb=8,vc=8,lds=swz,sk=1,rs=8,mma=wg,red=atomic,ld=ws,pk=1,xf=none";
/// 64 × 96 with one warpgroup, 8 stages.
const WS_64X96: &str = "v4:bm=64,bn=96,bk=64,wm=64,wn=96,st=8,va=8,vb=8,vc=4,lds=swz,sk=1,rs=1,mma=wg1,red=atomic,ld=ws,pk=0,xf=none";

/// Forward 1×1 NHWC with partial tiles everywhere: M = k = 200 (not a multiple of 128 or
/// 256), N = 2·10·11 = 220 pixels (one full 192 tile and a 28-wide one; two full 96 tiles and
/// a 28-wide one), K = c = 192 (three K tiles) or 160 (a partial last K tile).
const FWD_1X1: &str = "-n 2 -c 192 -H 10 -W 11 -k 200 -y 1 -x 1 -F 1 --layout NHWC";
const FWD_1X1_SHORT_K: &str = "-n 2 -c 160 -H 10 -W 11 -k 200 -y 1 -x 1 -F 1 --layout NHWC";
/// Forward padded 3×3 (the activation through im2col or the producer's cp.async).
const FWD_3X3: &str = "-n 2 -c 64 -H 9 -W 11 -k 72 -y 3 -x 3 -p 1 -q 1 -F 1 --layout NHWC";

#[test]
fn ws_wave_tiles_fwd_bit_exact() {
    for (shape, c) in [
        (FWD_1X1, WS_128X192),
        (FWD_1X1_SHORT_K, WS_256X96),
        (FWD_3X3, WS_128X192),
        (FWD_1X1, WS_64X96),
    ] {
        for dt in ["convbfp16", "convfp16"] {
            let p = problem(&format!("{dt} {shape}"));
            run(&p, &cfg(c), 3);
        }
    }
    // The data-parallel grid (pk = 0) of the same tiles.
    let p = problem(&format!("convbfp16 {FWD_1X1}"));
    for c in [WS_128X192, WS_256X96] {
        run(
            &p,
            &with(c, |c| c.persistent = convtune::config::Grid::PerTile),
            132,
        );
    }
}

/// Ping-pong consumers: one warpgroup a whole tile (wm = bm, wn = bn).
#[test]
fn wspp_wave_tiles_bit_exact() {
    // 128 × 192 in one warpgroup is 192 accumulators a thread: more than the consumers'
    // registers leave room for (ptxas spills it), refused with that reason.
    let p = problem(&format!("convbfp16 {FWD_1X1}"));
    let c = with(WS_128X192, |c| {
        (c.warp_m, c.ld) = (128, LoadPath::WsPingPong);
    });
    let e = legality::check(&lower(&p), &c, &Arch::SM_90)
        .unwrap_err()
        .to_string();
    assert!(e.contains("registers"), "{e}");
    let p = problem(&format!("convbfp16 {FWD_1X1}"));
    for (bm, bn, st) in [(64, 192, 6), (128, 96, 5), (64, 96, 8)] {
        let c = with(WS_128X192, |c| {
            (c.block_m, c.block_n, c.warp_m, c.warp_n, c.stages) = (bm, bn, bm, bn, st);
            c.ld = LoadPath::WsPingPong;
        });
        run(&p, &c, 3);
    }
    let p = problem(&format!("convfp16 {FWD_1X1_SHORT_K}"));
    run(
        &p,
        &with(WS_128X192, |c| {
            (c.block_m, c.block_n, c.warp_m, c.warp_n) = (128, 96, 128, 96);
            c.ld = LoadPath::WsPingPong;
        }),
        2,
    );
}

/// The non-persistent TMA and cp.async pipelines (no producer warpgroup).
#[test]
fn tma_and_cp_wave_tiles_bit_exact() {
    for ld in [LoadPath::Tma, LoadPath::Cp] {
        for (shape, bm, bn, wm, wn, st) in [
            (FWD_1X1, 128, 192, 64, 192, 4),
            (FWD_1X1_SHORT_K, 128, 96, 64, 96, 6),
            (FWD_3X3, 64, 192, 64, 96, 3),
        ] {
            let c = with(WS_128X192, |c| {
                (c.block_m, c.block_n, c.warp_m, c.warp_n, c.stages) = (bm, bn, wm, wn, st);
                c.ld = ld;
                c.persistent = convtune::config::Grid::PerTile;
            });
            run(&problem(&format!("convbfp16 {shape}")), &c, 132);
        }
    }
}

/// Stream-K over 96- and 192-wide tiles: ranges that split tiles across blocks (6 tiles of 8
/// K tiles on 5 SMs: a last wave of one tile, which stream-K spreads).
#[test]
fn stream_k_wave_tiles_bit_exact() {
    let p = problem("convbfp16 -n 2 -c 512 -H 10 -W 11 -k 304 -y 1 -x 1 -F 1 --layout NHWC");
    for c in [WS_128X192, WS_256X96] {
        let c = with(c, |c| {
            c.red = Reduction::Stream;
        });
        run(&p, &c, 5);
        // And the cp.async pipeline's per-tile grid.
        let c = with(&c.to_string(), |c| {
            c.ld = LoadPath::Cp;
            c.persistent = convtune::config::Grid::PerTile;
        });
        run(&p, &c, 5);
    }
}

/// Backward data (1×1, N along input pixels) and backward weight (N along C·Y·X; its B tile is
/// MN-major, which wgmma reads in blocks of a swizzle atom's rows: 192 fits in 64-row blocks,
/// 96 in 32-row ones, 40 is refused with a reason), with split-K through the fix-up.
#[test]
fn bwd_wave_tiles_bit_exact() {
    let dgrad = "-n 2 -c 200 -H 10 -W 11 -k 160 -y 1 -x 1 -F 2 --layout NHWC";
    for dt in ["convbfp16", "convfp16"] {
        let p = problem(&format!("{dt} {dgrad}"));
        run(&p, &cfg(WS_128X192), 3);
        run(&p, &cfg(WS_256X96), 3);
    }
    let wgrad = problem("convbfp16 -n 2 -c 200 -H 8 -W 9 -k 136 -y 1 -x 1 -F 4 --layout NHWC");
    run(&wgrad, &cfg(WS_128X192), 3);
    let split = with(WS_128X192, |c| {
        c.split_k = 2;
        c.red = Reduction::Fixup;
        c.stages = 3;
    });
    run(&wgrad, &split, 3);
    run(&wgrad, &cfg(WS_256X96), 3);
    let narrow = with(WS_256X96, |c| (c.block_n, c.warp_n) = (40, 40));
    let e = legality::check(&lower(&wgrad), &narrow, &Arch::SM_90)
        .unwrap_err()
        .to_string();
    assert!(e.contains("multiples of 16"), "{e}");
}

/// Deep pipelines on small tiles (the bwd-weight 1×1's 64 × 128 with 8 stages, cuDNN's), and
/// the shared-memory rule that bounds them.
#[test]
fn deep_pipelines_bit_exact_and_bounded_by_shared_memory() {
    let wgrad = problem("convbfp16 -n 2 -c 128 -H 8 -W 9 -k 136 -y 1 -x 1 -F 4 --layout NHWC");
    let c = with(WS_128X192, |c| {
        (c.block_m, c.block_n, c.warp_m, c.warp_n, c.stages) = (64, 128, 64, 128, 8);
        c.persistent = convtune::config::Grid::PerTile;
    });
    run(&wgrad, &c, 132);
    run(&wgrad, &with(&c.to_string(), |c| c.stages = 7), 132);
    // (128 + 256) × 64 × 2 bytes a stage: 8 stages are 384 KiB, more than a block may have.
    let big = with(WS_128X192, |c| {
        (c.block_n, c.warp_n, c.stages) = (256, 256, 8);
    });
    let p = problem(&format!("convbfp16 {FWD_1X1}"));
    let e = legality::check(&lower(&p), &big, &Arch::SM_90)
        .unwrap_err()
        .to_string();
    assert!(e.contains("shared"), "{e}");
}
