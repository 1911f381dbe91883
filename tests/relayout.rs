//! Layout transforms (`xf=nhwc|nhwc_out`) on the CPU emulator: NCHW problems of every direction
//! and type, whose GEMMs run on channels-last copies in the workspace (16-byte vectors, TMA
//! im2col, wgmma), compared bit-exactly with the f64 direct convolution; legality and codegen
//! must agree on what runs. Each case also checks that the transposes really are in the plan,
//! so a silent fall-back to the untransformed GEMM cannot pass.

use convtune::arch::Arch;
use convtune::codegen::{compile_conv, Target};
use convtune::config::{PerfConfig, Transform};
use convtune::legality;
use convtune::lowering::lower;
use convtune::problem::ConvProblem;
mod common;

use common::{cfg, emulate_where_legal, problem};

const H200: Target = Target::of(Arch::SM_90);

/// NCHW shapes: padded 3×3 forward (odd widths), stride-1 and stride-3 5×5 backward data
/// (four sub-GEMMs of class runs, pixels none writes), backward weight.
const SHAPES: [&str; 4] = [
    "-n 2 -c 16 -H 5 -W 7 -k 32 -y 3 -x 3 -p 1 -q 1 -F 1",
    "-n 2 -c 16 -H 5 -W 7 -k 32 -y 3 -x 3 -p 1 -q 1 -F 2",
    "-n 1 -c 16 -H 8 -W 7 -k 16 -y 5 -x 5 -p 2 -q 2 -u 3 -v 3 -F 2",
    "-n 2 -c 16 -H 5 -W 7 -k 32 -y 3 -x 3 -p 1 -q 1 -F 4",
];

/// mma.sync with 16-byte loads along channels; the same with split-K (bwd-weight only).
const HALF: [&str; 2] = [
    "v4:bm=32,bn=32,bk=16,wm=16,wn=16,st=2,va=8,vb=8,vc=1,lds=swz,sk=1,rs=1,mma=sync,red=atomic,ld=cp,xf=X",
    "v4:bm=32,bn=32,bk=32,wm=32,wn=16,st=3,va=8,vb=8,vc=1,lds=pad,sk=2,rs=1,mma=sync,red=atomic,ld=cp,xf=X",
];
/// FMA tiles with 4-wide loads.
const SINGLE: [&str; 2] = [
    "v4:bm=32,bn=32,bk=16,wm=16,wn=16,st=2,va=4,vb=4,vc=1,lds=pad,sk=1,rs=1,mma=sync,red=atomic,ld=cp,xf=X",
    "v4:bm=32,bn=32,bk=16,wm=16,wn=16,st=2,va=4,vb=4,vc=1,lds=pad,sk=2,rs=1,mma=sync,red=fixup,ld=cp,xf=X",
];

fn with_xf(c: &str, xf: Transform) -> PerfConfig {
    cfg(&c.replace("xf=X", &format!("xf={}", xf.name())))
}

/// Emulates `c`; `Some(number of transpose launches)` when it ran.
fn run(p: &ConvProblem, c: &PerfConfig) -> Option<usize> {
    let rep = emulate_where_legal(p, c, Arch::SM_90, 11)?;
    Some(
        rep.kernels
            .iter()
            .filter(|k| k.name.starts_with("convtune_relayout"))
            .count(),
    )
}

#[test]
fn emulated_nchw_transforms_bit_exact() {
    for (si, shape) in SHAPES.iter().enumerate() {
        for (di, dt) in ["convfp16", "convbfp16", "conv"].iter().enumerate() {
            let p = problem(&format!("{dt} {shape}"));
            let configs = if di == 2 { SINGLE } else { HALF };
            for (ci, c) in configs.iter().enumerate() {
                if ci == 1 && !shape.ends_with("-F 4") {
                    continue;
                }
                // Input and filter move; with nhwc_out also the written tensor.
                let moved = [(Transform::Nhwc, 2), (Transform::NhwcOut, 3)];
                for (xf, want) in moved {
                    // Backward weight with the filter left KCYX: its (c, y, x) order is the
                    // GEMM's N, along which the channels-last input is not contiguous.
                    let c = if xf == Transform::Nhwc && shape.ends_with("-F 4") {
                        c.replace("vb=8", "vb=1").replace("vb=4", "vb=1")
                    } else {
                        c.to_string()
                    };
                    let c = with_xf(&c, xf);
                    let ran = run(&p, &c);
                    assert_eq!(ran, Some(want), "{p} {c} (shape {si})");
                }
            }
        }
    }
}

/// The 16-bit NCHW forward on the wgmma path with TMA im2col from the channels-last copy
/// (the tensor maps point into the workspace): impossible without the transform.
#[test]
fn emulated_nchw_wgmma_tma_from_the_copy() {
    let p = problem("convfp16 -n 2 -c 64 -H 5 -W 6 -k 64 -y 3 -x 3 -p 1 -q 1 -F 1");
    let base = "v4:bm=64,bn=64,bk=64,wm=64,wn=64,st=2,va=8,vb=8,vc=1,lds=swz,sk=1,rs=1,mma=wg,red=atomic,ld=tma,xf=X";
    let none = with_xf(base, Transform::None);
    assert!(legality::check(&lower(&p), &none, &Arch::SM_90).is_err());
    for xf in [Transform::Nhwc, Transform::NhwcOut] {
        let c = with_xf(base, xf);
        assert!(run(&p, &c).is_some(), "{c}");
        let ptx = compile_conv(&lower(&p), &c, H200).unwrap();
        assert!(ptx.module.ptx().unwrap().contains(".im2col"), "{c}");
    }
}

/// `xf` on a problem with nothing to move is refused with a reason, and codegen agrees.
#[test]
fn transform_of_nothing_is_refused() {
    let p = problem("convfp16 -n 2 -c 16 -H 5 -W 7 -k 32 -y 3 -x 3 -p 1 -q 1 -F 1 --layout NHWC");
    let c = with_xf(HALF[0], Transform::Nhwc);
    let e = legality::check(&lower(&p), &c, &Arch::SM_90).unwrap_err();
    assert!(e.to_string().contains("xf=nhwc does not apply"), "{e}");
    assert_eq!(run(&p, &c), None);
}

/// The AMD target compiles the transposes and the GEMMs on the copies, and runs them exactly.
#[test]
fn emulated_nchw_transform_on_gfx90a() {
    let p = problem("convfp16 -n 2 -c 16 -H 5 -W 7 -k 32 -y 3 -x 3 -p 1 -q 1 -F 1");
    let c = with_xf(
        "v4:bm=32,bn=32,bk=16,wm=32,wn=32,st=2,va=8,vb=8,vc=1,lds=pad,sk=1,rs=1,mma=sync,red=atomic,ld=cp,xf=X",
        Transform::Nhwc,
    );
    let rep = emulate_where_legal(&p, &c, Arch::GFX90A, 5).expect("legal on gfx90a");
    assert!(rep
        .kernels
        .iter()
        .any(|k| k.name.starts_with("convtune_relayout")));
}

/// The configs the report asks the lead to time on the H200 (the cost model's best per load
/// path for the suite's f16 NCHW 3×3 forward and the f32 NCHW 5×5 stride-3 data gradient), on
/// smaller images of the same channels: every one legal and bit-exact, `ld=ws` included.
#[test]
fn emulated_report_configs_bit_exact() {
    let fwd = problem("convfp16 -n 1 -c 64 -H 7 -W 9 -k 96 -y 3 -x 3 -p 1 -q 1 -F 1");
    let dgrad = problem("conv -n 1 -c 64 -H 10 -W 11 -k 64 -y 5 -x 5 -p 2 -q 2 -u 3 -v 3 -F 2");
    let cases = [
        (&fwd, "v4:bm=128,bn=256,bk=64,wm=64,wn=256,st=4,va=2,vb=2,vc=1,lds=swz,sk=1,rs=1,mma=wg,red=atomic,ld=ws,xf=nhwc"),
        (&fwd, "v4:bm=128,bn=256,bk=64,wm=64,wn=256,st=4,va=2,vb=2,vc=8,lds=swz,sk=1,rs=1,mma=wg,red=atomic,ld=tma,xf=nhwc_out"),
        (&fwd, "v4:bm=128,bn=256,bk=64,wm=64,wn=256,st=4,va=8,vb=8,vc=1,lds=swz,sk=1,rs=1,mma=wg,red=atomic,ld=cp,xf=nhwc"),
        (&fwd, "v4:bm=128,bn=64,bk=64,wm=64,wn=64,st=3,va=8,vb=8,vc=8,lds=swz,sk=1,rs=1,mma=sync,red=atomic,ld=cp,xf=nhwc_out"),
        (&fwd, "v4:bm=128,bn=128,bk=64,wm=64,wn=128,st=4,va=8,vb=8,vc=1,lds=swz,sk=1,rs=1,mma=wg,red=atomic,ld=ws,xf=nhwc"),
        (&fwd, "v4:bm=128,bn=256,bk=64,wm=64,wn=256,st=4,va=8,vb=8,vc=8,lds=swz,sk=1,rs=1,mma=wg,red=atomic,ld=cp,xf=nhwc_out"),
        (&dgrad, "v4:bm=16,bn=32,bk=64,wm=16,wn=32,st=4,va=4,vb=4,vc=1,lds=swz,sk=1,rs=4,mma=sync,red=atomic,ld=cp,xf=nhwc"),
        (&dgrad, "v4:bm=16,bn=32,bk=64,wm=16,wn=32,st=4,va=4,vb=4,vc=4,lds=swz,sk=1,rs=4,mma=sync,red=atomic,ld=cp,xf=nhwc_out"),
        (&dgrad, "v4:bm=64,bn=64,bk=32,wm=32,wn=32,st=3,va=4,vb=4,vc=4,lds=swz,sk=1,rs=1,mma=sync,red=atomic,ld=cp,xf=nhwc_out"),
    ];
    for (p, c) in cases {
        let c = cfg(c);
        let moved = if c.xf == Transform::Nhwc { 2 } else { 3 };
        assert_eq!(run(p, &c), Some(moved), "{p} {c}");
    }
}
