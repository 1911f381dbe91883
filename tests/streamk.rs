//! Stream-K (`red=stream`): a persistent grid walking (tile, K tile) iterations, split tiles
//! finished by the in-kernel fix-up. Bit-exact on the CPU emulator against the f64 direct
//! convolution (ranges inside one tile, across tiles, and covering whole tiles), the grid it
//! launches, and legality's reasons.

use convtune::arch::Arch;
use convtune::codegen::{compile_conv, launches, Target};
use convtune::config::{PerfConfig, Reduction, StreamK};
use convtune::legality::{self, Rejection};
use convtune::lowering::lower;
use convtune::problem::ConvProblem;
mod common;

use common::{cfg, emulate_exact, problem};

const H200: Target = Target::of(Arch::SM_90);

fn stream(c: &str) -> PerfConfig {
    PerfConfig {
        red: Reduction::Stream,
        ..cfg(c)
    }
}

/// Emulates `c`: no bad access, bit-exact; returns the GEMM launch's grid.
fn check(p: &ConvProblem, c: &PerfConfig, like: Target) -> [u32; 3] {
    if let Err(e) = legality::check(&lower(p), c, like.arch()) {
        panic!("{p} {c}: {e}");
    }
    let rep = emulate_exact(p, c, like, 5).unwrap_or_else(|e| panic!("{p} {c}: {e}"));
    let names: Vec<_> = rep.kernels.iter().map(|k| k.name.as_str()).collect();
    assert_eq!(
        names,
        ["convtune_zero_counters", "convtune_gemm0"],
        "{p} {c}"
    );
    rep.kernels[1].grid
}

#[test]
fn ranges_inside_tiles_are_bit_exact() {
    // 1x1: dw 96 x 96 in 16x16 tiles: 36 tiles of 32 K tiles (K = 2·16·16 = 512, bk 16): 1152
    // iterations over 132 SMs, 9 a block: every tile split over 4 or 5 blocks. bf16 NHWC,
    // staged vector stores.
    let p = problem("convbfp16 -n 2 -c 96 -H 16 -W 16 -k 96 -y 1 -x 1 -F 4 --layout NHWC");
    let c = stream("v1:bm=16,bn=16,bk=16,wm=16,wn=16,st=3,va=8,vb=8,vc=8,lds=swz,sk=1,rs=1");
    assert_eq!(check(&p, &c, H200), [128, 1, 1]);
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
    // 8 iterations a block on 132 SMs, 67 contributors a tile, added in groups of 8.
    let p = problem("conv -n 2 -c 32 -H 66 -W 64 -k 16 -y 1 -x 1 -F 4");
    let c = stream("v1:bm=16,bn=16,bk=16,wm=16,wn=16,st=2,va=1,vb=1,vc=1,lds=pad,sk=1,rs=1");
    let s = StreamK::new(2, 528, 132);
    assert_eq!((s.blocks, s.per_block, s.max_contributors()), (132, 8, 67));
    assert_eq!(check(&p, &c, H200), [132, 1, 1]);
}

#[test]
fn the_schedule_and_legality() {
    let s = StreamK::new(36, 32, 132);
    assert_eq!((s.blocks, s.per_block), (128, 9));
    assert_eq!(s.max_contributors(), 5);
    assert_eq!(s.max_segments(), 2);
    let s = StreamK::new(140, 8, 132);
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
    // The workspace: counters of 36 tiles, then 36 tiles x 5 contributors x 32·32 f32.
    let (kernels, ws) = launches(&l, &c, H200).unwrap();
    assert_eq!(ws, 256 + 36 * 5 * 32 * 32 * 4);
    assert_eq!(kernels[1].grid, [128, 1, 1]);
    let ptx = compile_conv(&l, &c, H200).unwrap().module;
    assert!(ptx
        .ptx()
        .unwrap()
        .contains("atom.acq_rel.gpu.global.add.u32"));
    // The bwd-weight 1x1 7x7 c512 -> 2048: 64 tiles of 128x128 on 132 SMs, 49 K tiles
    // each; the wgmma kernel compiles with the schedule of 24 K tiles a block.
    let big = lower(&problem(
        "convbfp16 -n 64 -c 512 -H 7 -W 7 -k 2048 -y 1 -x 1 -F 4 --layout NHWC",
    ));
    let wg =
        stream("v2:bm=128,bn=128,bk=64,wm=64,wn=128,st=3,va=8,vb=8,vc=8,lds=swz,sk=1,rs=1,mma=wg");
    legality::check(&big, &wg, &Arch::SM_90).unwrap_or_else(|e| panic!("{e}"));
    let (kernels, _) = launches(&big, &wg, H200).unwrap();
    assert_eq!(kernels[1].grid, [131, 1, 1]);
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
