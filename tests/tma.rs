//! TMA loads (`ld=tma`) on the `wgmma` path, run on the CPU emulator, where the tensor-map box
//! copies, their 128-byte swizzle and the `mbarrier` phases and transaction counts are
//! implemented from the PTX ISA independently of the kernel side; compared bit-exactly with the
//! f64 direct convolution (data are multiples of 1/8). What a tiled tensor map cannot express is
//! refused by legality and codegen alike, with a reason.

use convtune::arch::Arch;
use convtune::codegen::{compile_conv, Target};
use convtune::config::{LoadPath, PerfConfig};
use convtune::legality;
use convtune::lowering::lower;
use convtune::problem::ConvProblem;
mod common;

use common::{cfg, emulate_where_legal, problem};

const H200: Target = Target::of(Arch::SM_90);

/// Emulates one candidate; `false` when codegen refuses it (and legality must agree).
fn check(p: &ConvProblem, c: &PerfConfig) -> bool {
    emulate_where_legal(p, c, Arch::SM_90, 5).is_some()
}

const CONFIGS: [&str; 5] = [
    "v3:bm=64,bn=64,bk=64,wm=64,wn=64,st=2,va=8,vb=8,vc=1,lds=swz,sk=1,rs=1,mma=wg,red=atomic,ld=tma",
    "v3:bm=128,bn=64,bk=64,wm=64,wn=64,st=3,va=8,vb=8,vc=8,lds=swz,sk=1,rs=1,mma=wg,red=atomic,ld=tma",
    "v3:bm=64,bn=128,bk=64,wm=64,wn=64,st=1,va=8,vb=8,vc=1,lds=swz,sk=1,rs=2,mma=wg,red=atomic,ld=tma",
    "v3:bm=64,bn=32,bk=64,wm=64,wn=32,st=4,va=4,vb=4,vc=4,lds=swz,sk=1,rs=1,mma=wg1,red=atomic,ld=tma",
    "v3:bm=128,bn=128,bk=64,wm=64,wn=128,st=3,va=8,vb=8,vc=8,lds=swz,sk=1,rs=1,mma=wg1,red=atomic,ld=tma",
];

/// Forward NHWC: padded 3x3 (filter tiled, pixels im2col: tests/im2col.rs), 1x1 and seed 003's dense
/// 1x2/stride-2 shape (both by TMA, partial tiles zero-filled), groups, dilation.
const FWD: [&str; 5] = [
    "-n 2 -c 64 -H 5 -W 4 -k 72 -y 3 -x 3 -p 1 -q 1",
    "-n 3 -c 64 -H 5 -W 3 -k 80 -y 1 -x 1",
    "-n 2 -c 64 -H 1 -W 16 -k 64 -y 1 -x 2 -u 1 -v 2",
    "-n 1 -c 128 -H 6 -W 7 -k 128 -y 2 -x 2 -u 2 -v 2 -g 2",
    "-n 2 -c 16 -H 9 -W 7 -k 64 -y 3 -x 2 -p 2 -q 1 -l 2 -j 1",
];

#[test]
fn emulated_tma_fwd_nhwc_bit_exact() {
    let mut ran = 0;
    for (si, shape) in FWD.iter().enumerate() {
        for (di, dt) in ["convbfp16", "convfp16"].iter().enumerate() {
            let c = cfg(CONFIGS[(2 * si + di) % CONFIGS.len()]);
            let p = problem(&format!("{dt} {shape} -F 1 --layout NHWC"));
            ran += usize::from(check(&p, &c));
        }
    }
    // Only the 16-channel shape has no TMA operand... its filter rows are 16·3·2 = 96
    // elements: dense, so every forward shape runs.
    assert_eq!(ran, 10);
}

/// Backward data and weight, NHWC (MN-major tiles: one TMA box per 64-row block), and NCHW
/// where legal.
#[test]
fn emulated_tma_other_directions_bit_exact_where_legal() {
    let mut ran = 0;
    for shape in &FWD[..3] {
        for dir in [2, 4] {
            for layout in ["NHWC", "NCHW"] {
                for c in [CONFIGS[0], CONFIGS[1], CONFIGS[4]] {
                    let p = problem(&format!("convbfp16 {shape} -F {dir} --layout {layout}"));
                    ran += usize::from(check(&p, &cfg(c)));
                }
            }
        }
    }
    assert!(ran >= 6, "{ran}");
}

#[test]
fn what_tma_cannot_express_is_refused_with_a_reason() {
    let base = cfg(CONFIGS[0]);
    // Channels not 16-byte aligned, padded 3x3: neither operand is a dense box.
    let p = problem("convbfp16 -n 2 -c 12 -H 5 -W 5 -k 12 -y 3 -x 3 -p 1 -q 1 -F 1 --layout NHWC");
    let e = legality::check(&lower(&p), &base, &Arch::SM_90)
        .unwrap_err()
        .to_string();
    assert!(e.contains("tma"), "{e}");
    // The sync path has no swizzled stages to load.
    let sync = PerfConfig {
        mma: convtune::config::MmaPath::Sync,
        warp_m: 32,
        warp_n: 32,
        ..base
    };
    let p = problem("convbfp16 -n 2 -c 64 -H 5 -W 5 -k 64 -y 1 -x 1 -F 1 --layout NHWC");
    let e = legality::check(&lower(&p), &sync, &Arch::SM_90)
        .unwrap_err()
        .to_string();
    assert!(e.contains("mma=wg"), "{e}");
    // Not on sm_80.
    let e = legality::check(&lower(&p), &base, &Arch::SM_80).unwrap_err();
    assert!(!e.to_string().is_empty());
}

/// The tensor map is a `__grid_constant__` parameter (the generic address of the parameter
/// itself, never a local copy) and the loads are bulk tensor copies on mbarriers.
#[test]
fn tma_ptx_shape() {
    let p = problem("convbfp16 -n 4 -c 64 -H 8 -W 8 -k 128 -y 1 -x 1 -F 1 --layout NHWC");
    let c = cfg(CONFIGS[4]);
    assert_eq!(c.ld, LoadPath::Tma);
    let compiled = compile_conv(&lower(&p), &c, H200).unwrap();
    let ptx = compiled.module.ptx().unwrap();
    assert_eq!(
        ptx.matches(".param .align 64 .b8 convtune_gemm0_param_")
            .count(),
        2
    );
    assert!(ptx.contains("cvta.param.u64"), "grid_constant lost");
    assert!(
        !ptx.contains(".local"),
        "the map was copied to local memory"
    );
    assert!(ptx.contains(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
    ));
    assert!(ptx.contains("mbarrier.try_wait.parity.shared::cta.b64"));
    assert!(ptx.contains("mbarrier.arrive.expect_tx.shared::cta.b64"));
    assert!(!ptx.contains("cp.async.cg"), "both operands are TMA here");
    let k = &compiled.kernels[0];
    assert_eq!(k.args.len(), 6);
    // ld=cp is today's kernel.
    let cp = PerfConfig {
        ld: LoadPath::Cp,
        ..c
    };
    let ptx = compile_conv(&lower(&p), &cp, H200)
        .unwrap()
        .module
        .ptx()
        .unwrap()
        .to_string();
    assert!(!ptx.contains("mbarrier") && !ptx.contains("cp.async.bulk"));
}
