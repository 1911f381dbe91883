//! The CPU ground truth: a direct convolution in f64, written as the textbook loop nest.
//!
//! Every lowering, every generated kernel and the GPU reference kernel are checked against
//! [`direct_conv`], so it is deliberately the plainest possible definition (one loop per index,
//! bounds checked per tap, no tiling, no decomposition) and reads each tensor through its own
//! layout's strides. f64 accumulation makes its rounding error negligible next to any kernel's.

use crate::problem::{ConvProblem, DType, Direction, Tensor};
use rand::Rng;

/// Element offset of a logical index in a tensor with the given strides.
fn offset(strides: &[u64; 5], idx: [usize; 5]) -> usize {
    strides.iter().zip(idx).map(|(&s, i)| s as usize * i).sum()
}

/// Computes the tensor that `p.direction()` writes from the other two, every tensor stored in its
/// own layout: forward returns the output `y = conv(x, w)`, backward data the input gradient
/// `dx` from `dy` (passed as `output`) and `w`, backward weight the filter gradient `dw` from `x`
/// and `dy`. The slice of the written tensor is not read (it may be empty).
///
/// # Panics
/// If a tensor that is read has fewer elements than `p.tensor_elems` says: the oracle is only
/// ever called by tests and the verifier with tensors built for `p`, so this is a caller bug.
pub fn direct_conv(p: &ConvProblem, input: &[f64], filter: &[f64], output: &[f64]) -> Vec<f64> {
    let dir = p.direction();
    let written = dir.written();
    for (t, data) in Tensor::ALL.into_iter().zip([input, filter, output]) {
        let need = p.tensor_elems(t) as usize;
        assert!(
            t == written || data.len() >= need,
            "direct_conv({}): {} has {} elements, needs {need}",
            p.key(),
            t.name(),
            data.len()
        );
    }
    let s = p.sizes();
    let (si, sf, so) = (
        p.strides(Tensor::Input),
        p.strides(Tensor::Filter),
        p.strides(Tensor::Output),
    );
    let [n_, g_, c_, hi_, wi_] = p.logical_dims(Tensor::Input).map(|d| d as usize);
    let [_, _, k_, ho_, wo_] = p.logical_dims(Tensor::Output).map(|d| d as usize);
    let (y_, x_) = (s.y as usize, s.x as usize);
    let [pad_h, pad_w] = s.pad.map(|v| v as isize);
    let [str_h, str_w] = s.stride.map(|v| v as isize);
    let [dil_h, dil_w] = s.dilation.map(|v| v as isize);

    let mut result = vec![0.0f64; p.tensor_elems(written) as usize];
    for n in 0..n_ {
        for g in 0..g_ {
            for k in 0..k_ {
                for c in 0..c_ {
                    for ho in 0..ho_ {
                        for wo in 0..wo_ {
                            for y in 0..y_ {
                                let hi = ho as isize * str_h + y as isize * dil_h - pad_h;
                                if hi < 0 || hi >= hi_ as isize {
                                    continue;
                                }
                                for x in 0..x_ {
                                    let wi = wo as isize * str_w + x as isize * dil_w - pad_w;
                                    if wi < 0 || wi >= wi_ as isize {
                                        continue;
                                    }
                                    let i = offset(&si, [n, g, c, hi as usize, wi as usize]);
                                    let f = offset(&sf, [g, k, c, y, x]);
                                    let o = offset(&so, [n, g, k, ho, wo]);
                                    match dir {
                                        Direction::Fwd => result[o] += input[i] * filter[f],
                                        Direction::BwdData => result[i] += output[o] * filter[f],
                                        Direction::BwdWeight => result[f] += input[i] * output[o],
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    result
}

/// A tensor of values uniform in [-1, 1] and exactly representable in `p.dtype()`, so the data a
/// kernel reads (after conversion to its element type) is exactly the data the f64 oracle reads,
/// and any difference is the kernel's own rounding.
pub fn random_tensor<R: Rng + ?Sized>(p: &ConvProblem, t: Tensor, rng: &mut R) -> Vec<f64> {
    let dtype = p.dtype();
    (0..p.tensor_elems(t))
        .map(|_| round_to(dtype, rng.gen_range(-1.0..=1.0)))
        .collect()
}

/// Elements per independently seeded piece of [`random_tensor_par`].
const RANDOM_CHUNK: usize = 1 << 16;

/// [`random_tensor`]'s distribution, made on all cores: one seed is drawn from `rng` and each
/// piece of [`RANDOM_CHUNK`] elements gets its own generator seeded from it and the piece's
/// index, so the values depend on `rng` alone, not on the number of threads (a restarted
/// worker makes the same data). The measurers fill tensors of up to ~10^8 elements this way:
/// one generator made that a second of every problem's fixed cost.
pub fn random_tensor_par<R: Rng + ?Sized>(p: &ConvProblem, t: Tensor, rng: &mut R) -> Vec<f64> {
    use rand::{rngs::StdRng, SeedableRng};
    use rayon::prelude::*;
    let dtype = p.dtype();
    let base: u64 = rng.gen();
    let mut out = vec![0.0; p.tensor_elems(t) as usize];
    out.par_chunks_mut(RANDOM_CHUNK)
        .enumerate()
        .for_each(|(i, piece)| {
            let mut r =
                StdRng::seed_from_u64(base ^ (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
            for v in piece {
                *v = round_to(dtype, r.gen_range(-1.0..=1.0));
            }
        });
    out
}

/// The nearest value of `dtype` (round to nearest even), as f64.
fn round_to(dtype: DType, v: f64) -> f64 {
    match dtype {
        DType::F32 => v as f32 as f64,
        DType::F16 => half::f16::from_f64(v).to_f64(),
        DType::BF16 => half::bf16::from_f64(v).to_f64(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::problem::{ConvSizes, Layout};
    use proptest::prelude::*;
    use rand::{rngs::StdRng, SeedableRng};

    fn problem(s: ConvSizes, dir: Direction, act: Layout, fil: Layout) -> ConvProblem {
        ConvProblem::new(s, dir, DType::F32, act, fil, act).expect("valid test problem")
    }

    fn nchw(s: ConvSizes, dir: Direction) -> ConvProblem {
        problem(s, dir, Layout::NGCHW, Layout::GKCYX)
    }

    #[test]
    fn parallel_random_tensors_do_not_depend_on_the_thread_count() {
        let s = ConvSizes {
            c: 64,
            k: 8,
            h: 64,
            w: 64,
            ..Default::default()
        };
        let p = ConvProblem::new(
            s,
            Direction::Fwd,
            DType::BF16,
            Layout::NGCHW,
            Layout::GKCYX,
            Layout::NGCHW,
        )
        .unwrap();
        let make = || random_tensor_par(&p, Tensor::Input, &mut StdRng::seed_from_u64(9));
        let one = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap()
            .install(make);
        let many = make();
        assert!(one.len() > 2 * RANDOM_CHUNK);
        assert_eq!(one, many);
        assert!(one
            .iter()
            .all(|&v| (-1.0..=1.0).contains(&v) && round_to(DType::BF16, v) == v));
        // Pieces are not copies of each other, and another seed gives other data.
        assert_ne!(one[..64], one[RANDOM_CHUNK..RANDOM_CHUNK + 64]);
        assert_ne!(
            one,
            random_tensor_par(&p, Tensor::Input, &mut StdRng::seed_from_u64(10))
        );
    }

    #[test]
    fn fwd_tiny_with_padding_and_stride() {
        let s = ConvSizes {
            h: 3,
            w: 3,
            y: 2,
            x: 2,
            ..Default::default()
        };
        let input: Vec<f64> = (1..=9).map(f64::from).collect();
        let filter = [1.0, 0.0, 0.0, 1.0];
        let p = nchw(s, Direction::Fwd);
        assert_eq!(
            direct_conv(&p, &input, &filter, &[]),
            [6.0, 8.0, 12.0, 14.0]
        );
        // pad 1, stride 2: taps (-1,-1) fall in the padding.
        let p = nchw(
            ConvSizes {
                pad: [1, 1],
                stride: [2, 2],
                ..s
            },
            Direction::Fwd,
        );
        assert_eq!(direct_conv(&p, &input, &filter, &[]), [1.0, 3.0, 7.0, 14.0]);
    }

    #[test]
    fn fwd_tiny_with_dilation() {
        let s = ConvSizes {
            w: 5,
            x: 2,
            dilation: [1, 2],
            ..Default::default()
        };
        let p = nchw(s, Direction::Fwd);
        let input = [1.0, 2.0, 3.0, 4.0, 5.0];
        assert_eq!(
            direct_conv(&p, &input, &[1.0, 10.0], &[]),
            [31.0, 42.0, 53.0]
        );
    }

    #[test]
    fn bwd_data_tiny_with_stride_leaves_untouched_pixels_zero() {
        // W = 5, X = 2, stride 2: Wo = 2, input pixel 4 is read by no output pixel.
        let s = ConvSizes {
            w: 5,
            x: 2,
            stride: [1, 2],
            ..Default::default()
        };
        let p = nchw(s, Direction::BwdData);
        let dx = direct_conv(&p, &[], &[3.0, 5.0], &[1.0, 2.0]);
        assert_eq!(dx, [3.0, 5.0, 6.0, 10.0, 0.0]);
    }

    #[test]
    fn bwd_weight_tiny_keeps_groups_apart() {
        let s = ConvSizes {
            c: 2,
            k: 2,
            groups: 2,
            w: 3,
            x: 2,
            ..Default::default()
        };
        let p = nchw(s, Direction::BwdWeight);
        let x = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        let dy = [1.0, 1.0, 2.0, -1.0];
        assert_eq!(direct_conv(&p, &x, &[], &dy), [3.0, 5.0, 3.0, 4.0]);
    }

    #[test]
    fn fwd_tiny_channels_last() {
        // C = 2, K = 2, W = 2, 1x1 filter; NHWC input [w][c], KYXC filter [k][c], NHWK output.
        let s = ConvSizes {
            c: 2,
            k: 2,
            w: 2,
            ..Default::default()
        };
        let p = problem(s, Direction::Fwd, Layout::NHWGC, Layout::GKYXC);
        let out = direct_conv(&p, &[1.0, 2.0, 3.0, 4.0], &[10.0, 100.0, 1.0, 2.0], &[]);
        assert_eq!(out, [210.0, 5.0, 430.0, 11.0]);
    }

    #[test]
    fn random_tensors_are_exact_in_their_type() {
        let p = nchw(
            ConvSizes {
                n: 4,
                c: 8,
                h: 16,
                w: 16,
                ..Default::default()
            },
            Direction::Fwd,
        );
        let mut rng = StdRng::seed_from_u64(7);
        for dtype in [DType::F32, DType::F16, DType::BF16] {
            let t = random_tensor(&p.with_dtype(dtype), Tensor::Input, &mut rng);
            assert_eq!(t.len(), 4 * 8 * 16 * 16);
            assert!(t.iter().all(|v| (-1.0..=1.0).contains(v)));
            assert!(t.iter().all(|&v| round_to(dtype, v) == v));
            assert!(t.iter().any(|&v| v < -0.5) && t.iter().any(|&v| v > 0.5));
            if dtype == DType::BF16 {
                // At most 8 significant bits.
                assert!(t.iter().all(|&v| (v as f32).to_bits() & 0xffff == 0));
            }
        }
    }

    fn dot(a: &[f64], b: &[f64]) -> f64 {
        a.iter().zip(b).map(|(x, y)| x * y).sum()
    }

    /// Copies a tensor from the layout of `from` to the layout of `to` (same logical dims).
    fn relayout(from: &ConvProblem, to: &ConvProblem, t: Tensor, data: &[f64]) -> Vec<f64> {
        let dims = from.logical_dims(t).map(|d| d as usize);
        let (sf, st) = (from.strides(t), to.strides(t));
        let mut out = vec![f64::NAN; data.len()];
        for a in 0..dims[0] {
            for b in 0..dims[1] {
                for c in 0..dims[2] {
                    for d in 0..dims[3] {
                        for e in 0..dims[4] {
                            let i = [a, b, c, d, e];
                            out[offset(&st, i)] = data[offset(&sf, i)];
                        }
                    }
                }
            }
        }
        out
    }

    fn small_problem() -> impl Strategy<Value = (ConvSizes, bool, u64)> {
        let dims = (
            1u32..3,
            1u32..4,
            1u32..4,
            1u32..4,
            1u32..9,
            1u32..9,
            1u32..5,
            1u32..5,
        );
        let conv = ([0u32..5, 0u32..5], [1u32..4, 1u32..4], [1u32..4, 1u32..4]);
        (dims, conv, any::<bool>(), any::<u64>()).prop_map(
            |((n, g, cg, kg, h, w, y, x), (pad, stride, dilation), last, seed)| {
                let s = ConvSizes {
                    n,
                    c: cg * g,
                    h,
                    w,
                    k: kg * g,
                    y,
                    x,
                    pad,
                    stride,
                    dilation,
                    groups: g,
                };
                (s, last, seed)
            },
        )
    }

    proptest! {
        /// ⟨fwd(x, w), dy⟩ = ⟨x, bwd_data(dy, w)⟩ = ⟨w, bwd_weight(x, dy)⟩: the three directions
        /// are the same bilinear form, whatever the padding, stride, dilation, groups, layout.
        #[test]
        fn directions_are_adjoint((s, last, seed) in small_problem()) {
            let (act, fil) = if last {
                (Layout::NHWGC, Layout::GKYXC)
            } else {
                (Layout::NGCHW, Layout::GKCYX)
            };
            let Ok(p) = ConvProblem::new(s, Direction::Fwd, DType::F32, act, fil, act) else {
                return Err(TestCaseError::reject("empty output"));
            };
            let mut rng = StdRng::seed_from_u64(seed);
            let [x, w, dy] = Tensor::ALL.map(|t| random_tensor(&p, t, &mut rng));
            let y = direct_conv(&p, &x, &w, &[]);
            let dx = direct_conv(&p.with_direction(Direction::BwdData), &[], &w, &dy);
            let dw = direct_conv(&p.with_direction(Direction::BwdWeight), &x, &[], &dy);
            prop_assert_eq!((y.len(), dx.len(), dw.len()), (dy.len(), x.len(), w.len()));
            let (a, b, c) = (dot(&y, &dy), dot(&x, &dx), dot(&w, &dw));
            let abs = |v: &[f64]| v.iter().map(|x| x.abs()).collect::<Vec<_>>();
            let scale = dot(&abs(&y), &abs(&dy)).max(f64::MIN_POSITIVE);
            prop_assert!((a - b).abs() <= 1e-9 * scale, "{} vs {}", a, b);
            prop_assert!((a - c).abs() <= 1e-9 * scale, "{} vs {}", a, c);
        }

        /// The same logical tensors stored channels-first and channels-last give the same
        /// logical result in every direction.
        #[test]
        fn layouts_do_not_change_the_math((s, _, seed) in small_problem(), d in 0usize..3) {
            let dir = [Direction::Fwd, Direction::BwdData, Direction::BwdWeight][d];
            let Ok(first) = ConvProblem::new(s, dir, DType::F32, Layout::NGCHW, Layout::GKCYX, Layout::NGCHW) else {
                return Err(TestCaseError::reject("empty output"));
            };
            let last = first.with_layouts(Layout::NHWGC, Layout::GKYXC, Layout::NHWGC);
            let mut rng = StdRng::seed_from_u64(seed);
            let a = Tensor::ALL.map(|t| random_tensor(&first, t, &mut rng));
            let b = Tensor::ALL.map(|t| relayout(&first, &last, t, &a[t as usize]));
            let ra = direct_conv(&first, &a[0], &a[1], &a[2]);
            let rb = direct_conv(&last, &b[0], &b[1], &b[2]);
            let written = dir.written();
            prop_assert_eq!(relayout(&first, &last, written, &ra), rb);
        }
    }
}
