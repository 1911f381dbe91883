//! The lowering against the direct convolution: seeds' named problems and a property test.

use super::*;
use crate::reference::{direct_conv, random_tensor};
use proptest::prelude::*;
use rand::{rngs::StdRng, SeedableRng};

/// Runs the lowering and the direct convolution on the same random inputs; returns the max
/// absolute difference relative to the largest reference value.
fn disagreement(p: &ConvProblem, seed: u64) -> f64 {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut t: [Vec<f64>; 3] = Tensor::ALL.map(|t| random_tensor(p, t, &mut rng));
    let expect = direct_conv(p, &t[0], &t[1], &t[2]);
    let written = p.direction().written() as usize;
    // Poison: anything the lowering fails to write stays NaN and fails the comparison.
    t[written].iter_mut().for_each(|v| *v = f64::NAN);
    execute(&lower(p), &mut t);
    let scale = expect.iter().fold(1e-30f64, |m, v| m.max(v.abs()));
    expect
        .iter()
        .zip(&t[written])
        .map(|(e, g)| {
            if g.is_nan() {
                f64::INFINITY
            } else {
                (e - g).abs() / scale
            }
        })
        .fold(0.0, f64::max)
}

fn problem(line: &str) -> ConvProblem {
    line.parse().unwrap_or_else(|e| panic!("{line}: {e}"))
}

/// The six fp32 NCHW backward-data problems of seed 000's last comment (pad 1, filters 1x1 and
/// 3x3), at batch 2 so the test stays fast; the padding bug lived in their spatial shapes.
const SEED_000: [(u32, u32); 6] = [(14, 1), (14, 3), (15, 1), (16, 1), (18, 1), (20, 1)];

#[test]
fn seed_000_padding_problems_match_direct_conv() {
    for (hw, f) in SEED_000 {
        let p = problem(&format!(
            "conv -n 2 -c 4 -H {hw} -W {hw} -k 3 -y {f} -x {f} -p 1 -q 1 -u 1 -v 1 -F 2"
        ));
        assert!(disagreement(&p, 7) < 1e-12, "{p}");
    }
}

#[test]
fn seed_003_shape_is_one_dense_gemm_and_correct() {
    // Seed 003's spatial shape, stride and filter at reduced batch and channels: stride equals
    // the filter width, so the two residue classes write disjoint pixels with one tap each and
    // are the rows of one GEMM (M = classes x C).
    let p = problem("convbfp16 -n 2 -c 8 -H 1 -W 512 -k 4 -y 1 -x 2 -u 1 -v 2 -F 2 --layout NHWC");
    let l = lower(&p);
    assert_eq!(l.gemms.len(), 1);
    assert_eq!(
        (l.gemms[0].id, l.gemms[0].m_len(), l.gemms[0].k_len()),
        (0, 16, 4)
    );
    assert!(
        !l.zero_init,
        "stride 2 with a 2-wide filter covers every pixel"
    );
    assert!(disagreement(&p, 3) < 1e-12);
}

#[test]
fn empty_filter_slice_is_dropped_and_zeroed() {
    // Stride 3 > filter 2: residue class 2 has no filter taps, its pixels must read zero.
    // The two non-empty classes have one tap each: one GEMM over both.
    let p = problem("conv -n 1 -c 2 -H 7 -W 5 -k 2 -y 2 -x 1 -u 3 -v 1 -F 2");
    let l = lower(&p);
    assert_eq!(l.gemms.len(), 1);
    assert_eq!(l.gemms[0].m_len(), 2 * 2);
    assert!(l.zero_init);
    assert!(disagreement(&p, 1) < 1e-12);
}

#[test]
fn full_problem_sizes_of_seed_003() {
    let p = problem("convbfp16 -n 16 -c 2048 -H 1 -W 512 -k 2048 -y 1 -x 2 -p 0 -q 0 -u 1 -v 2 -l 1 -j 1 -g 1 -F 2 --layout NHWC");
    let l = lower(&p);
    let sizes: Vec<_> = l
        .gemms
        .iter()
        .map(|g| (g.m_len(), g.n_len(), g.k_len()))
        .collect();
    // 256 column pairs a row: the image's 512 columns exactly (not 257: see `tilda_dim`).
    assert_eq!(sizes, [(2 * 2048, 16 * 256, 2048)]);
}

#[test]
fn unequal_classes_stay_separate_gemms_with_consecutive_ids() {
    // 3x3 stride 2: classes have 2 and 1 taps per dimension, so four GEMMs of different K.
    let p = problem("conv -n 2 -c 3 -H 9 -W 8 -k 5 -y 3 -x 3 -p 1 -q 1 -u 2 -v 2 -F 2");
    let l = lower(&p);
    let ks: Vec<_> = l.gemms.iter().map(|g| (g.id, g.k_len())).collect();
    assert_eq!(ks, [(0, 5 * 4), (1, 5 * 2), (2, 5 * 2), (3, 5)]);
    assert!(disagreement(&p, 5) < 1e-12);
    // One dimension mergeable (x: 2 taps, stride 2), the other not (y: 3 taps, stride 2).
    let p = problem("conv -n 2 -c 3 -H 9 -W 8 -k 5 -y 3 -x 2 -p 1 -q 0 -u 2 -v 2 -F 2");
    let l = lower(&p);
    let shapes: Vec<_> = l.gemms.iter().map(|g| (g.m_len(), g.k_len())).collect();
    assert_eq!(shapes, [(2 * 3, 5 * 2), (2 * 3, 5)]);
    assert!(disagreement(&p, 6) < 1e-12);
}

fn arb_problem() -> impl Strategy<Value = ConvProblem> {
    crate::problem::arbitrary::small_problem(4, 9)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1500))]
    #[test]
    fn lowering_matches_direct_conv(p in arb_problem(), seed in 0u64..1000) {
        prop_assert!(disagreement(&p, seed) < 1e-12, "{}", p);
    }

    #[test]
    fn gemm_ids_are_consecutive_and_dims_nonempty(p in arb_problem()) {
        let l = lower(&p);
        for (i, g) in l.gemms.iter().enumerate() {
            prop_assert_eq!(g.id as usize, i);
            prop_assert!(g.m_len() > 0 && g.n_len() > 0 && g.k_len() > 0);
        }
    }
}

#[test]
fn packed_groups_match_direct_conv() {
    // 8 channels a group (two groups a batch: M = 16) and depthwise (sixteen a batch), in
    // every direction and both layouts, strided bwd-data phases included.
    for (shape, packs) in [
        ("-n 2 -c 32 -H 6 -W 5 -k 32 -y 3 -x 3 -p 1 -q 1 -g 4", 2),
        (
            "-n 1 -c 32 -H 7 -W 6 -k 32 -y 3 -x 3 -p 1 -q 1 -u 2 -v 2 -g 32",
            16,
        ),
        // 8 and 16 channels a group with three groups: 16 channels already fill M.
        ("-n 1 -c 48 -H 5 -W 5 -k 48 -y 1 -x 3 -q 1 -g 3", 1),
    ] {
        for dir in [1, 2, 4] {
            for layout in ["NCHW", "NHWC"] {
                let p = problem(&format!("conv {shape} -F {dir} --layout {layout}"));
                let l = lower(&p);
                let g = &l.gemms[0];
                assert_eq!(g.g_len(), p.sizes().groups / packs, "{p}");
                if packs > 1 {
                    assert_eq!(g.m_len() % 16, 0, "{p}: M {}", g.m_len());
                }
                assert!(disagreement(&p, 3) < 1e-12, "{p}");
            }
        }
    }
}
