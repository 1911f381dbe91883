//! Split-K reduced inside the kernel (`red=fixup`): bit-exact on the CPU emulator against the
//! f64 direct convolution for bwd-weight problems (f32, bf16, f16, groups, edges, staged vector
//! stores, wgmma), the launches it makes (one GEMM: its counters in the kept-zero region, no clearing or finishing pass), the
//! PTX it emits (acquire-release arrival, no float atomics), legality's reasons, and the
//! config string.

use convtune::abi::KEPT_ZERO_BYTES;
use convtune::arch::Arch;
use convtune::codegen::{compile_conv, launches, Target};
use convtune::config::{PerfConfig, Reduction};
use convtune::legality::{self, Rejection};
use convtune::lowering::lower;
use convtune::problem::ConvProblem;
mod common;

use common::{cfg, emulate_exact, problem};

const H200: Target = Target::of(Arch::SM_90);
const MI200: Target = Target::of(Arch::GFX90A);

/// Emulates `c` on `like`: no bad access, bit-exact result; returns the launch names.
fn check(p: &ConvProblem, c: &PerfConfig, like: Target) -> Vec<String> {
    let rep = emulate_exact(p, c, like, 11).unwrap_or_else(|e| panic!("{p} {c} {like}: {e}"));
    rep.kernels.into_iter().map(|k| k.name).collect()
}

fn fixup(c: &str) -> PerfConfig {
    PerfConfig {
        red: Reduction::Fixup,
        ..cfg(c)
    }
}

#[test]
fn fixup_is_bit_exact_on_bwd_weight_without_a_finishing_launch() {
    let cases = [
        // f32 NCHW, K = 2·5·4 = 40 split 3 ways over bk 8: uneven slices, edges on M and N.
        (
            "conv -n 2 -c 6 -H 5 -W 4 -k 10 -y 3 -x 3 -p 1 -q 1 -F 4",
            "v1:bm=32,bn=32,bk=8,wm=16,wn=16,st=2,va=1,vb=1,vc=1,lds=pad,sk=3,rs=1",
        ),
        // bf16 NHWC, staged vector stores of C after the fix-up.
        (
            "convbfp16 -n 2 -c 16 -H 5 -W 4 -k 32 -y 3 -x 3 -p 1 -q 1 -F 4 --layout NHWC",
            "v1:bm=32,bn=32,bk=16,wm=16,wn=16,st=2,va=8,vb=8,vc=8,lds=pad,sk=2,rs=1",
        ),
        // f16 grouped, four slices, one of them short.
        (
            "convfp16 -n 2 -c 16 -H 6 -W 5 -k 16 -y 3 -x 3 -p 1 -q 1 -g 2 -F 4",
            "v1:bm=16,bn=64,bk=16,wm=16,wn=32,st=3,va=1,vb=1,vc=1,lds=swz,sk=4,rs=1",
        ),
        // bf16 1x1 stride 2 (few tiles, long K).
        (
            "convbfp16 -n 4 -c 32 -H 8 -W 8 -k 64 -y 1 -x 1 -u 2 -v 2 -F 4 --layout NHWC",
            "v1:bm=64,bn=32,bk=16,wm=32,wn=16,st=2,va=8,vb=8,vc=4,lds=swz,sk=2,rs=2",
        ),
    ];
    for (line, c) in cases {
        let p = problem(line);
        let names = check(&p, &fixup(c), H200);
        assert_eq!(
            names,
            ["convtune_gemm0"],
            "{line}: the GEMM alone (its counters in the kept-zero region); no zero-init of \
             the sum, no finish"
        );
        // The same config with atomics still agrees (and keeps its three launches for 16-bit).
        let atomic = check(&p, &cfg(c), H200);
        assert!(atomic.len() >= 2, "{line}: {atomic:?}");
    }
}

#[test]
fn two_level_fixup_is_bit_exact_with_whole_and_partial_groups() {
    // 20 slices: groups of 8, 8 and 4 (slices 13..19 have no K tiles and add zeros); 64
    // slices: eight groups of 8.
    let p =
        problem("convbfp16 -n 2 -c 16 -H 16 -W 16 -k 16 -y 3 -x 3 -p 1 -q 1 -F 4 --layout NHWC");
    for sk in [20, 64] {
        let c = fixup(&format!(
            "v1:bm=16,bn=32,bk=16,wm=16,wn=16,st=2,va=8,vb=8,vc=4,lds=pad,sk={sk},rs=1"
        ));
        let names = check(&p, &c, H200);
        assert_eq!(names, ["convtune_gemm0"], "sk {sk}");
    }
    let f = problem("conv -n 2 -c 8 -H 12 -W 12 -k 8 -y 3 -x 3 -p 1 -q 1 -F 4");
    check(
        &f,
        &fixup("v1:bm=16,bn=16,bk=8,wm=16,wn=16,st=2,va=1,vb=1,vc=1,lds=pad,sk=32,rs=1"),
        H200,
    );
}

/// The kept-zero contract (`abi::KEPT_ZERO_BYTES`): the emulator clears the region as a caller
/// does and flags a plan that leaves it dirty, here the fix-up with its counter reset left out.
#[test]
fn a_fixup_that_leaves_its_counters_set_breaks_the_kept_zero_contract() {
    let p = problem("convbfp16 -n 2 -c 16 -H 5 -W 4 -k 32 -y 3 -x 3 -p 1 -q 1 -F 4 --layout NHWC");
    let c = fixup("v1:bm=32,bn=32,bk=16,wm=16,wn=16,st=2,va=8,vb=8,vc=8,lds=pad,sk=2,rs=1");
    let mut t = common::data(&p, 3);
    let rep = convtune::codegen::with_counters_kept(|| {
        convtune::codegen::emu::emulate_conv(&lower(&p), &c, H200, &mut t)
    })
    .unwrap();
    assert!(rep.violations > 0, "{:?}", rep.messages);
    assert!(
        rep.messages.iter().any(|m| m.contains("kept-zero region")),
        "{:?}",
        rep.messages
    );
    // Without the hook the same plan passes (bit-exact, region clear).
    check(&p, &c, H200);
}

/// Counters beyond the kept-zero region are cleared by a launch of the plan's own, and the
/// plan asks its caller for nothing.
#[test]
fn counters_that_do_not_fit_the_kept_zero_region_get_their_own_clearing_launch() {
    // dw of 2048 × 2048 in 16 × 16 tiles: 16384 tiles × 4 bytes = the whole region, and one
    // more tile row past it.
    let fits = lower(&problem(
        "conv -n 1 -c 2048 -H 4 -W 4 -k 2048 -y 1 -x 1 -F 4",
    ));
    let over = lower(&problem(
        "conv -n 1 -c 2064 -H 4 -W 4 -k 2048 -y 1 -x 1 -F 4",
    ));
    let c = fixup("v1:bm=16,bn=16,bk=8,wm=16,wn=16,st=2,va=1,vb=1,vc=1,lds=pad,sk=2,rs=1");
    let fits = launches(&fits, &c, H200).unwrap();
    assert_eq!(fits.kept_zero, KEPT_ZERO_BYTES);
    assert_eq!(fits.kernels.len(), 1);
    let over = launches(&over, &c, H200).unwrap();
    assert_eq!(over.kept_zero, 0);
    let names: Vec<&str> = over.kernels.iter().map(|k| k.name.as_str()).collect();
    assert_eq!(names, ["convtune_zero_counters", "convtune_gemm0"]);
}

#[test]
fn fixup_is_bit_exact_with_wgmma_and_on_amd() {
    let p = problem("convbfp16 -n 2 -c 64 -H 4 -W 4 -k 64 -y 3 -x 3 -p 1 -q 1 -F 4 --layout NHWC");
    let wg = fixup("v2:bm=64,bn=64,bk=64,wm=64,wn=64,st=3,va=8,vb=8,vc=8,lds=swz,sk=2,rs=1,mma=wg");
    check(&p, &wg, H200);
    let amd = fixup("v1:bm=64,bn=32,bk=32,wm=32,wn=32,st=2,va=8,vb=8,vc=1,lds=pad,sk=3,rs=1");
    check(&p, &amd, MI200);
}

#[test]
fn fixup_ptx_arrives_with_acquire_release_and_has_no_float_atomics() {
    let p = problem("convbfp16 -n 2 -c 64 -H 7 -W 7 -k 64 -y 3 -x 3 -p 1 -q 1 -F 4 --layout NHWC");
    let l = lower(&p);
    let c = fixup("v1:bm=64,bn=64,bk=32,wm=32,wn=32,st=3,va=8,vb=8,vc=8,lds=swz,sk=4,rs=1");
    let ptx = compile_conv(&l, &c, H200).unwrap().module;
    let ptx = ptx.ptx().unwrap();
    assert!(ptx.contains("atom.acq_rel.gpu.global.add.u32"), "{ptx}");
    assert!(ptx.contains("fence.acq_rel.gpu"));
    assert!(!ptx.contains("atom.global.add.f32"));
    let atomic = cfg(&c.to_string().replace("red=fixup", "red=atomic"));
    let atomic = compile_conv(&l, &atomic, H200).unwrap().module;
    let atomic = atomic.ptx().unwrap();
    assert!(atomic.contains("atom.global.add.f32") && !atomic.contains("acq_rel"));
    // Workspace: dw is 64 × 576 (k × c·y·x): 9 tiles' counters in the kept-zero region (the
    // caller keeps it clear: no launch clears them), then 9 tiles × 4 slices × 64 × 64 f32.
    common::assert_kept_counters(&l, &c, H200, 9 * 4 * 64 * 64 * 4);
    assert!(compile_conv(&l, &c, MI200).is_ok());
}

#[test]
fn legality_says_why_fixup_does_not_apply() {
    let bwd = lower(&problem(
        "convbfp16 -n 2 -c 64 -H 14 -W 14 -k 64 -y 3 -x 3 -p 1 -q 1 -F 4 --layout NHWC",
    ));
    let c = fixup("v1:bm=64,bn=64,bk=32,wm=32,wn=32,st=3,va=8,vb=8,vc=8,lds=swz,sk=4,rs=1");
    if let Err(e) = legality::check(&bwd, &c, &Arch::SM_90) {
        panic!("{c}: {e}");
    }
    let one = PerfConfig { split_k: 1, ..c };
    let e = legality::check(&bwd, &one, &Arch::SM_90).unwrap_err();
    assert!(
        matches!(e, Rejection::ReductionWithoutSplit { red: "fixup" }),
        "{e}"
    );
    assert!(e.to_string().contains("split_k = 1"), "{e}");
    assert!(compile_conv(&bwd, &one, H200).is_err());
    let fwd = lower(&problem(
        "convbfp16 -n 2 -c 64 -H 14 -W 14 -k 64 -y 3 -x 3 -p 1 -q 1 -F 1 --layout NHWC",
    ));
    let e = legality::check(&fwd, &c, &Arch::SM_90).unwrap_err();
    assert!(matches!(e, Rejection::SplitKDirection { .. }), "{e}");
    // Partials beyond i32 indices: 2048 × 18432 filter values split 64 ways.
    let big = lower(&problem(
        "convbfp16 -n 64 -c 2048 -H 14 -W 14 -k 2048 -y 3 -x 3 -p 1 -q 1 -F 4 --layout NHWC",
    ));
    let wide = PerfConfig { split_k: 64, ..c };
    let e = legality::check(&big, &wide, &Arch::SM_90).unwrap_err();
    assert!(matches!(e, Rejection::FixupWorkspace { .. }), "{e}");
}

#[test]
fn config_string_round_trips_with_red() {
    let c = fixup("v1:bm=64,bn=64,bk=32,wm=32,wn=32,st=3,va=8,vb=8,vc=8,lds=swz,sk=4,rs=1");
    let s = c.to_string();
    assert_eq!(
        s,
        "v3:bm=64,bn=64,bk=32,wm=32,wn=32,st=3,va=8,vb=8,vc=8,lds=swz,sk=4,rs=1,mma=sync,red=fixup,ld=cp"
    );
    assert_eq!(s.parse::<PerfConfig>().unwrap(), c);
    let a = PerfConfig {
        red: Reduction::Atomic,
        ..c
    };
    assert!(a.to_string().starts_with("v1:"));
}

#[test]
fn sampled_fixup_kernels_of_the_selfcheck_sweep_compile_and_the_first_emulates() {
    use convtune::problem::Direction;
    use convtune::selfcheck::{split_k_space, sweep_problems};
    use convtune::space::sample_legal;
    let space = split_k_space(
        convtune::space::SearchSpace::default_for(&Arch::SM_90),
        Reduction::Fixup,
    );
    let mut sampled = 0;
    for p in sweep_problems()
        .into_iter()
        .filter(|p| p.direction() == Direction::BwdWeight)
    {
        let l = lower(&p);
        for (i, c) in sample_legal(&p, &Arch::SM_90, &space, 2, 7)
            .into_iter()
            .enumerate()
        {
            assert!(c.red == Reduction::Fixup && c.split_k > 1, "{c}");
            compile_conv(&l, &c, H200).unwrap_or_else(|e| panic!("{p} {c}: {e}"));
            // Counters in the kept-zero region and no clearing launch, or a clearing launch and
            // nothing asked of the caller; the partials always past the region.
            let planned = launches(&l, &c, H200).unwrap();
            let clears = planned
                .kernels
                .iter()
                .any(|k| k.name == "convtune_zero_counters");
            assert_eq!(clears, planned.kept_zero == 0, "{p} {c}");
            assert!(planned.workspace_bytes > KEPT_ZERO_BYTES, "{p} {c}");
            if sampled == 0 && i == 0 {
                check(&p, &c, H200);
            }
            sampled += 1;
        }
    }
    assert!(sampled >= 10, "{sampled} fixup kernels sampled");
}
