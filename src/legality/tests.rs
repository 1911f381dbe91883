//! Named cases and the property test of the vector-width analysis against brute force.

use super::bruteforce::check_vector_access;
use super::*;
use crate::config::LdsLayout;
use crate::lowering::{lower, Dim, Gemm, Operand};
use crate::problem::{ConvProblem, DType, Direction};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

fn problem(line: &str) -> ConvProblem {
    line.parse().unwrap_or_else(|e| panic!("{line}: {e}"))
}

fn cfg(text: &str) -> PerfConfig {
    text.parse().unwrap_or_else(|e| panic!("{text}: {e}"))
}

const CAP: u32 = 16;

/// Asserts that every power of two up to the analytic width passes the brute-force check;
/// returns (analytic, the largest power of two ≤ CAP for which brute force passes all widths
/// up to it).
fn sound(p: &ConvProblem, g: &Gemm, op: &Operand, dims: [Dim; 2], dim: Dim) -> (u32, u32) {
    let w = max_vector_width(p, g, op, dim, CAP);
    let mut v = 1;
    while v <= w.width {
        if let Err(e) = check_vector_access(p, g, op, dims, dim, v) {
            panic!(
                "{p}: sub-GEMM {} operand {} along {dim}: analysis says {} ({}), but {e}",
                g.id,
                op.tensor.name(),
                w.width,
                w.limit
            );
        }
        v *= 2;
    }
    let mut truth = w.width;
    while truth < CAP && check_vector_access(p, g, op, dims, dim, truth * 2).is_ok() {
        truth *= 2;
    }
    (w.width, truth)
}

/// Seed 000's six problems (fp32 NCHW backward data, batch 32, 32 channels, pad 1): expected
/// widths of A (filter), B (output gradient), C (input gradient) along their vector dimensions.
/// A (KCYX filter) is contiguous along M = c when the filter is 1x1 (y and x have no extent),
/// so it vectorizes to the cap there; a 3x3 filter is contiguous along neither GEMM dimension.
#[test]
fn seed_000_problems_have_sound_widths() {
    let cases = [
        (14, 1, [16, 1, 4]),
        (14, 3, [1, 1, 4]),
        (15, 1, [16, 1, 1]),
        (16, 1, [16, 1, 16]),
        (18, 1, [16, 1, 4]),
        (20, 1, [16, 1, 16]),
    ];
    for (hw, f, expect) in cases {
        let p = problem(&format!(
            "conv -n 32 -c 32 -H {hw} -W {hw} -k 32 -y {f} -x {f} -p 1 -q 1 -u 1 -v 1 -F 2"
        ));
        let l = lower(&p);
        assert_eq!(l.gemms.len(), 1);
        let g = &l.gemms[0];
        for (i, (op, dims)) in g.operands().into_iter().enumerate() {
            for d in dims {
                sound(&p, g, op, dims, d);
            }
            let (dim, w) = vector_dim(&p, g, op, dims, CAP);
            assert_eq!(
                w.width, expect[i],
                "{p}: operand {i} along {dim:?}: {}",
                w.limit
            );
        }
        // B reads dy at (htilda + 1, wtilda + 1): in bounds, contiguous, but misaligned.
        let (dim, w) = vector_dim(&p, g, &g.b, [Dim::K, Dim::N], CAP);
        assert_eq!(dim, Some(Dim::N));
        if f == 3 {
            assert!(w.limit.starts_with("padding"), "{}", w.limit);
        } else if hw % 2 == 0 {
            assert!(w.limit.starts_with("alignment"), "{}", w.limit);
        } else {
            assert!(w.limit.contains("run along wtilda is"), "{}", w.limit);
        }
        // And the rejection says so.
        let c = cfg("v1:bm=32,bn=64,bk=16,wm=16,wn=32,st=2,va=1,vb=2,vc=1,lds=pad,sk=1,rs=1");
        let e = check(&l, &c, &Arch::SM_90).unwrap_err();
        assert_eq!(e.kind(), RejectReasonKind::VectorB);
        assert!(e
            .to_string()
            .starts_with("vector width of B is 2 but at most 1 is legal: "));
    }
}

#[test]
fn nhwc_forward_with_three_channels_loads_the_input_one_by_one() {
    let p = problem(
        "convbfp16 -n 4 -c 3 -H 32 -W 32 -k 64 -y 7 -x 7 -p 3 -q 3 -u 2 -v 2 -F 1 --layout NHWC",
    );
    let l = lower(&p);
    let g = &l.gemms[0];
    let (dim, w) = vector_dim(&p, g, &g.b, [Dim::K, Dim::N], CAP);
    assert_eq!((dim, w.width), (Some(Dim::K), 1), "{}", w.limit);
    // The filter (k, y·x·c = 147 contiguous elements) is scalar too.
    let (_, wa) = vector_dim(&p, g, &g.a, [Dim::M, Dim::K], CAP);
    assert_eq!(wa.limit, "the contiguous run along y·x·c is 147 elements");
    let c = cfg("v1:bm=64,bn=64,bk=32,wm=32,wn=32,st=2,va=1,vb=2,vc=8,lds=swz,sk=1,rs=1");
    let e = check(&l, &c, &Arch::SM_90).unwrap_err();
    assert_eq!(
        e.to_string(),
        "vector width of B is 2 but at most 1 is legal: the contiguous run along c is 3 elements (sub-GEMM 0)"
    );
    let ok = PerfConfig { vec_b: 1, ..c };
    let r = check(&l, &ok, &Arch::SM_90).unwrap();
    assert_eq!(r.max_vector, [1, 1, 8]);
    assert_eq!((r.warps, r.threads), (4, 128));
}

#[test]
fn strided_input_message() {
    // Dilation 2 on x and stride 2 on wo: neither GEMM dimension walks w with unit step.
    let p = problem(
        "convfp16 -n 2 -c 16 -H 16 -W 16 -k 16 -y 3 -x 3 -p 2 -q 2 -u 2 -v 2 -l 2 -j 2 -F 1",
    );
    let c = cfg("v1:bm=32,bn=32,bk=16,wm=16,wn=16,st=2,va=1,vb=8,vc=1,lds=pad,sk=1,rs=1");
    let e = check(&lower(&p), &c, &Arch::SM_90).unwrap_err();
    assert_eq!(
        e.to_string(),
        "vector width of B is 8 but at most 1 is legal: stride 2 on the contiguous dimension w of input (sub-GEMM 0)"
    );
}

#[test]
fn each_resource_rule_rejects_with_numbers() {
    let p =
        problem("convfp16 -n 8 -c 256 -H 16 -W 16 -k 256 -y 3 -x 3 -p 1 -q 1 -F 1 --layout NHWC");
    let l = lower(&p);
    let base = cfg("v1:bm=128,bn=128,bk=32,wm=64,wn=64,st=3,va=8,vb=8,vc=8,lds=swz,sk=1,rs=4");
    let res = check(&l, &base, &Arch::SM_90).unwrap();
    assert_eq!(res.lds_bytes, 3 * 256 * 32 * 2);
    assert_eq!(res.instr.m, 16);
    let reject = |c: PerfConfig, arch: &Arch| check(&l, &c, arch).unwrap_err();

    let e = reject(PerfConfig { warp_m: 48, ..base }, &Arch::SM_90);
    assert_eq!(
        e.to_string(),
        "warp tile wm=48 does not divide block tile bm=128"
    );
    let e = reject(
        PerfConfig {
            block_m: 256,
            block_n: 256,
            warp_m: 16,
            warp_n: 16,
            ..base
        },
        &Arch::SM_90,
    );
    assert_eq!(
        e.to_string(),
        "8192 threads per block (256 warps of 32) exceed the limit of 1024 on sm_90"
    );
    let e = reject(PerfConfig { block_k: 8, ..base }, &Arch::SM_90);
    assert_eq!(e.kind(), RejectReasonKind::MmaShape, "{e}");
    let e = reject(
        PerfConfig {
            warp_m: 128,
            warp_n: 128,
            ..base
        },
        &Arch::SM_90,
    );
    assert!(
        matches!(
            e,
            Rejection::Registers {
                acc: 512,
                max: 255,
                ..
            }
        ),
        "{e}"
    );
    let e = reject(
        PerfConfig {
            block_m: 256,
            block_n: 256,
            block_k: 64,
            stages: 4,
            ..base
        },
        &Arch::SM_80,
    );
    assert!(
        matches!(
            e,
            Rejection::SharedMemory {
                bytes: 262_144,
                max: 166_912,
                ..
            }
        ),
        "{e}"
    );
    let e = reject(
        PerfConfig {
            lds: LdsLayout::Padded,
            block_k: 64,
            stages: 4,
            ..base
        },
        &Arch::GFX90A,
    );
    assert!(
        matches!(
            e,
            Rejection::SharedMemory {
                padding: 16_384,
                max: 65_536,
                ..
            }
        ),
        "{e}"
    );
    let f32 = lower(&p.with_dtype(DType::F32));
    let odd = PerfConfig {
        block_k: 12,
        vec_a: 4,
        vec_b: 4,
        vec_c: 4,
        ..base
    };
    let e = check(&f32, &odd, &Arch::SM_90).unwrap_err();
    assert_eq!(
        e.to_string(),
        "lds=swz needs shared-memory rows (bk × elem = 48 bytes) of a power-of-two number of 16-byte chunks"
    );
    check(
        &f32,
        &PerfConfig {
            lds: LdsLayout::Padded,
            ..odd
        },
        &Arch::SM_90,
    )
    .unwrap();
    let e = reject(PerfConfig { split_k: 2, ..base }, &Arch::SM_90);
    assert_eq!(
        e.to_string(),
        "split_k = 2 applies only to bwd-weight, not fwd"
    );
    let e = reject(PerfConfig { vec_a: 16, ..base }, &Arch::SM_90);
    assert!(matches!(e, Rejection::VectorBytes { bytes: 32, .. }), "{e}");
    // f32 on NVIDIA is FMA (any bk), so a K step of 2 can be narrower than A's vector.
    let f = lower(&p.with_dtype(DType::F32));
    let narrow = PerfConfig {
        block_k: 2,
        lds: LdsLayout::Padded,
        vec_a: 4,
        vec_b: 4,
        vec_c: 4,
        ..base
    };
    let e = check(&f, &narrow, &Arch::SM_90).unwrap_err();
    assert_eq!(
        e.to_string(),
        "vector width of A is 4 but does not divide the block tile along K (bk = 2)"
    );
    let e = reject(PerfConfig { stages: 0, ..base }, &Arch::SM_90);
    assert_eq!(e.kind(), RejectReasonKind::Malformed);

    // Backward weight: split-K legal while K / split ≥ bk.
    let w = lower(&p.with_direction(Direction::BwdWeight));
    let k_len = w.gemms[0].k_len();
    assert_eq!(k_len, 8 * 16 * 16);
    let sk = PerfConfig { split_k: 8, ..base };
    check(&w, &sk, &Arch::SM_90).unwrap();
    let e = check(
        &w,
        &PerfConfig {
            split_k: 4096,
            ..base
        },
        &Arch::SM_90,
    )
    .unwrap_err();
    assert!(
        matches!(e, Rejection::SplitKTooShort { per_split: 0, .. }),
        "{e}"
    );

    // AMD bf16 on gfx908: a 16x16 wave tile with bk=16 is 16x16x8bf16; with bk = 4 nothing.
    let b = lower(&p.with_dtype(DType::BF16));
    let amd = PerfConfig {
        warp_m: 16,
        warp_n: 16,
        block_m: 64,
        block_n: 32,
        ..base
    };
    assert_eq!(check(&b, &amd, &Arch::GFX908).unwrap().instr.k, 8);
    let e = check(&b, &PerfConfig { block_k: 4, ..amd }, &Arch::GFX908).unwrap_err();
    assert!(e.to_string().contains("v_mfma_f32_32x32x4bf16"), "{e}");
}

#[test]
fn explain_lists_every_rule() {
    let p = problem(
        "convfp16 -n 2 -c 16 -H 16 -W 16 -k 16 -y 3 -x 3 -p 2 -q 2 -u 2 -v 2 -l 2 -j 2 -F 1",
    );
    let c = cfg("v1:bm=32,bn=32,bk=16,wm=16,wn=16,st=2,va=1,vb=8,vc=1,lds=pad,sk=1,rs=1");
    let lines = explain(&lower(&p), &c, &Arch::SM_90);
    let verdicts: Vec<&String> = lines
        .iter()
        .filter(|l| l.starts_with("ok") || l.starts_with("FAIL") || l.starts_with("skip"))
        .collect();
    assert_eq!(verdicts.len(), Rule::ALL.len());
    assert!(lines
        .iter()
        .any(|l| l.starts_with("FAIL  vector width B: vector width of B is 8")));
    assert!(lines
        .iter()
        .any(|l| l.starts_with("ok    threads per block: 128 threads ≤ 1024")));
    assert!(lines
        .iter()
        .any(|l| l.starts_with("ok    matrix instruction shape") && l.contains("m16n8k16")));
    assert!(lines.iter().any(|l| l.contains(
        "sub-GEMM 0 B (input, contiguous w): along no GEMM dimension, max width 1 (stride 2"
    )));
}

fn arb_problem() -> impl Strategy<Value = ConvProblem> {
    crate::problem::arbitrary::small_problem(9, 13)
}

/// Over random small problems, every operand of every sub-GEMM along both of its dimensions:
/// the analytic width passes brute force. Also measures how often a wider vector would have
/// passed too (the analysis being stricter than needed); run with `--nocapture` to see it, and
/// with `SHOW_STRICT=1` to list those cases.
#[test]
fn analytic_width_is_sound_on_random_problems() {
    let mut runner = TestRunner::new(Config {
        cases: 600,
        failure_persistence: None,
        ..Config::default()
    });
    let stats = std::cell::RefCell::new([0u64; 6]);
    let result = runner.run(&arb_problem(), |p| {
        let l = lower(&p);
        for g in &l.gemms {
            for (op, dims) in g.operands() {
                let (chosen, _) = vector_dim(&p, g, op, dims, CAP);
                for d in dims {
                    let (analytic, truth) = sound(&p, g, op, dims, d);
                    if truth > analytic && std::env::var("SHOW_STRICT").is_ok() {
                        let w = max_vector_width(&p, g, op, d, CAP);
                        println!(
                            "STRICT {p} | gemm {} {} along {d} dims {:?}: {analytic} < {truth}: {}",
                            g.id,
                            op.tensor.name(),
                            g.dims[d as usize].axes,
                            w.limit
                        );
                    }
                    let mut s = stats.borrow_mut();
                    let i = if chosen == Some(d) { 3 } else { 0 };
                    s[i] += 1;
                    s[i + 1] += (truth > analytic) as u64;
                    s[i + 2] += (analytic > 1) as u64;
                }
            }
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    let s = stats.into_inner();
    let pct = |a: u64, b: u64| 100.0 * a as f64 / b.max(1) as f64;
    println!(
        "vector-width analysis over 600 random problems:\n  \
         chosen vector dimensions: {} checks, width > 1 in {:.1}%, a wider width would also pass in {} ({:.2}%)\n  \
         other dimensions: {} checks, width > 1 in {:.1}%, a wider width would also pass in {} ({:.2}%)",
        s[3],
        pct(s[5], s[3]),
        s[4],
        pct(s[4], s[3]),
        s[0],
        pct(s[2], s[0]),
        s[1],
        pct(s[1], s[0]),
    );
    assert!(s[3] > 1000, "too few checks: {s:?}");
    assert!(
        s[5] > 0,
        "no case with width > 1: the test would prove nothing"
    );
}

#[test]
fn packed_groups_cap_the_filter_at_a_group_and_let_the_input_span_groups() {
    // Depthwise fwd, NHWC f16: sixteen groups a GEMM batch. The input's (group, channel) run is
    // contiguous, so B loads one channel of 8 groups at once; the block-diagonal filter is
    // padding off its group's single channel, so A is scalar, and legality says why.
    let p =
        problem("convfp16 -n 2 -c 32 -H 8 -W 8 -k 32 -y 3 -x 3 -p 1 -q 1 -g 32 -F 1 --layout NHWC");
    let l = lower(&p);
    assert_eq!(l.gemms[0].g_len(), 2);
    let c = cfg("v1:bm=16,bn=64,bk=16,wm=16,wn=32,st=2,va=2,vb=8,vc=1,lds=pad,sk=1,rs=1");
    let e = check(&l, &c, &Arch::SM_90).unwrap_err().to_string();
    assert!(
        e.starts_with("vector width of A is 2 but at most 1 is legal: ") && e.contains("filter"),
        "{e}"
    );
    let r = check(&l, &PerfConfig { vec_a: 1, ..c }, &Arch::SM_90).unwrap();
    assert_eq!(r.max_vector[1], 8);
}

/// An operand contiguous along its rows is stored `[k][row]`: with `lds=swz` and no wgmma, a
/// row of `bn` elements must be a power-of-two number of 16-byte chunks, as the planner
/// requires. Session 23: the untuned fallback re-tiled an `mma=sync` neighbour to `bn=192`
/// (a tile of the wgmma space) for a bf16 NCHW 1×1 fwd problem, legality let it through and
/// the Python package could not compile the lookup's candidate.
#[test]
fn a_swizzled_row_major_tile_needs_power_of_two_chunk_rows() {
    let p: ConvProblem = "convbfp16 -n 64 -c 16 -H 28 -W 28 -k 64 -y 1 -x 1 -F 1"
        .parse()
        .unwrap();
    let l = lower(&p);
    let c: PerfConfig = "v1:bm=64,bn=192,bk=16,wm=64,wn=64,st=4,va=8,vb=8,vc=8,lds=swz,sk=1,rs=1"
        .parse()
        .unwrap();
    let e = check(&l, &c, &Arch::SM_90).unwrap_err();
    assert_eq!(
        e.to_string(),
        "lds=swz needs shared-memory rows (bn × elem = 384 bytes) of a power-of-two number of 16-byte chunks"
    );
    assert!(crate::codegen::compile_conv(&l, &c, crate::codegen::Target::of(Arch::SM_90)).is_err());
    // A power-of-two row, or padded rows, are fine with both.
    for ok in [
        PerfConfig { block_n: 128, ..c },
        PerfConfig {
            lds: LdsLayout::Padded,
            ..c
        },
    ] {
        check(&l, &ok, &Arch::SM_90).unwrap();
        crate::codegen::compile_conv(&l, &ok, crate::codegen::Target::of(Arch::SM_90)).unwrap();
    }
}
