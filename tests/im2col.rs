//! TMA im2col loads (`ld=tma` on a padded, strided or dilated activation) on the CPU emulator,
//! whose im2col box walk (bounding box, element strides, wrap to the next row and image, zero
//! fill, tap offsets) is written from the PTX ISA independently of the lowering that derives
//! the corners and coordinates; compared bit-exactly with the f64 direct convolution. Each
//! case also asserts that the kernel really issues im2col copies, so a silent fall-back to
//! `cp.async` cannot pass for a working im2col path.

use convtune::arch::Arch;
use convtune::codegen::{compile_conv, Target};
use convtune::config::PerfConfig;
use convtune::legality;
use convtune::lowering::lower;
use convtune::problem::ConvProblem;
mod common;

use common::{cfg, emulate_where_legal, problem};

const H200: Target = Target::of(Arch::SM_90);
const IM2COL: &str = ".global.im2col.mbarrier::complete_tx::bytes";

/// Emulates one candidate; `Some(uses im2col)` when it ran, `None` when codegen refused it
/// (legality must agree either way).
fn run(p: &ConvProblem, c: &PerfConfig) -> Option<bool> {
    emulate_where_legal(p, c, Arch::SM_90, 7)?;
    let ptx = compile_conv(&lower(p), c, H200).unwrap();
    Some(ptx.module.ptx().unwrap().contains(IM2COL))
}

const CONFIGS: [&str; 5] = [
    "v3:bm=64,bn=64,bk=64,wm=64,wn=64,st=2,va=8,vb=8,vc=1,lds=swz,sk=1,rs=1,mma=wg,red=atomic,ld=tma",
    "v3:bm=128,bn=64,bk=64,wm=64,wn=64,st=3,va=8,vb=8,vc=8,lds=swz,sk=1,rs=1,mma=wg,red=atomic,ld=tma",
    "v3:bm=64,bn=128,bk=64,wm=64,wn=64,st=1,va=8,vb=8,vc=1,lds=swz,sk=1,rs=2,mma=wg,red=atomic,ld=tma",
    "v3:bm=64,bn=32,bk=64,wm=64,wn=32,st=4,va=4,vb=4,vc=4,lds=swz,sk=1,rs=1,mma=wg1,red=atomic,ld=tma",
    "v3:bm=128,bn=128,bk=64,wm=64,wn=128,st=3,va=8,vb=8,vc=8,lds=swz,sk=1,rs=1,mma=wg1,red=atomic,ld=tma",
];

/// Forward NHWC shapes whose pixels need im2col: 3x3 pad 1, 5x5 pad 2, stride 2, dilation 2
/// with unequal pads, groups, 1x1 stride 2, two channel lines per tap. No N·Ho·Wo is a
/// multiple of the tile, so every case has a partial last tile (zero-filled images past N).
const FWD: [&str; 7] = [
    "-n 2 -c 64 -H 5 -W 4 -k 64 -y 3 -x 3 -p 1 -q 1",
    "-n 1 -c 64 -H 6 -W 5 -k 64 -y 5 -x 5 -p 2 -q 2",
    "-n 2 -c 64 -H 7 -W 6 -k 64 -y 3 -x 3 -p 1 -q 1 -u 2 -v 2",
    "-n 1 -c 64 -H 7 -W 7 -k 64 -y 3 -x 3 -p 2 -q 1 -l 2 -j 1",
    "-n 1 -c 128 -H 5 -W 5 -k 128 -y 3 -x 3 -p 1 -q 1 -g 2",
    "-n 2 -c 64 -H 6 -W 6 -k 80 -y 1 -x 1 -u 2 -v 2",
    "-n 1 -c 128 -H 4 -W 3 -k 64 -y 3 -x 3 -p 1 -q 1",
];

#[test]
fn emulated_im2col_fwd_nhwc_bit_exact() {
    for (si, shape) in FWD.iter().enumerate() {
        for (di, dt) in ["convbfp16", "convfp16"].iter().enumerate() {
            let c = cfg(CONFIGS[(2 * si + di) % CONFIGS.len()]);
            let p = problem(&format!("{dt} {shape} -F 1 --layout NHWC"));
            assert_eq!(run(&p, &c), Some(true), "{p} {c}");
        }
    }
}

/// Stride-1 data gradient (the output gradient read with pad' = dil·(Y−1) − pad through the
/// flipped filter), the strided data gradient's sub-GEMMs, and the weight gradient (pixels
/// along K, MN-major boxes of 64 channels × bk pixels): all im2col, all bit-exact.
#[test]
fn emulated_im2col_other_directions_bit_exact_where_legal() {
    // Each strided data-gradient sub-GEMM reads the output gradient at unit stride (the
    // stride is in which input pixels it writes), so im2col loads it too.
    let cases = [
        "-n 2 -c 64 -H 5 -W 4 -k 64 -y 3 -x 3 -p 1 -q 1 -F 2",
        "-n 1 -c 64 -H 6 -W 5 -k 64 -y 3 -x 2 -p 1 -q 0 -l 2 -j 1 -F 2",
        "-n 1 -c 64 -H 5 -W 5 -k 64 -y 3 -x 3 -p 1 -q 1 -u 2 -v 2 -F 2",
        "-n 2 -c 64 -H 5 -W 4 -k 64 -y 3 -x 3 -p 1 -q 1 -F 4",
    ];
    for shape in cases {
        for c in [CONFIGS[0], CONFIGS[4]] {
            let p = problem(&format!("convbfp16 {shape} --layout NHWC"));
            assert_eq!(run(&p, &cfg(c)), Some(true), "{p} {c}");
        }
    }
}

/// What neither a tiled nor an im2col map can load stays on `cp.async` when that is legal, and
/// legality names both reasons when `ld=tma` has no TMA operand at all.
#[test]
fn im2col_refusals_reach_legality() {
    let c = cfg(CONFIGS[0]);
    // 32 channels: a 64-wide K tile would straddle two filter taps.
    let p = problem("convbfp16 -n 2 -c 32 -H 5 -W 5 -k 64 -y 3 -x 3 -p 1 -q 1 -F 1 --layout NHWC");
    assert_eq!(run(&p, &c), Some(false), "the filter alone is TMA");
    // NCHW: neither operand (B scalar, so not even cp.async).
    let p = problem("convbfp16 -n 2 -c 64 -H 5 -W 5 -k 64 -y 3 -x 3 -p 1 -q 1 -F 1");
    let c = PerfConfig { vec_b: 1, ..c };
    let e = legality::check(&lower(&p), &c, &Arch::SM_90)
        .unwrap_err()
        .to_string();
    assert!(e.contains("im2col") && e.contains("NCHW"), "{e}");
}

/// The activation's copies are 4-D im2col bulk tensor copies with two 16-bit tap offsets
/// (`h` registers), the filter's stay tiled, nothing is left on `cp.async`, and the kernel's
/// argument says which mode its map is (what the runtime and the manifest encode).
#[test]
fn im2col_ptx_shape_and_map_mode() {
    let p = problem("convbfp16 -n 4 -c 64 -H 8 -W 8 -k 128 -y 3 -x 3 -p 1 -q 1 -F 1 --layout NHWC");
    let compiled = compile_conv(&lower(&p), &cfg(CONFIGS[4]), H200).unwrap();
    let ptx = compiled.module.ptx().unwrap();
    let line = ptx
        .lines()
        .find(|l| l.contains(IM2COL))
        .expect("an im2col copy");
    assert!(
        line.contains("cp.async.bulk.tensor.4d.shared::cluster.global.im2col"),
        "{line}"
    );
    assert!(
        line.trim_end().ends_with("{%rs") || line.contains("], {%rs"),
        "{line}"
    );
    assert!(ptx.contains("global.tile.mbarrier"), "the filter is tiled");
    assert!(!ptx.contains("cp.async.cg") && !ptx.contains(".local"));
    let modes: Vec<&str> = compiled.kernels[0]
        .args
        .iter()
        .filter_map(|a| match a.kind {
            convtune::abi::ArgKind::TensorMap(m) => Some(m.mode()),
            _ => None,
        })
        .collect();
    assert_eq!(modes, ["tiled", "im2col"]);
    let json = serde_json::to_string(&compiled.kernels[0].args).unwrap();
    assert!(json.contains("\"im2col\":{\"lower\":[-1,-1,0]"), "{json}");
}
