//! Host-side numerics of a measurement: test data, decoding results, comparing, counting runs.
//!
//! Kept apart from the driver calls so every rule here (exact encoding, poison counts as
//! unwritten, the error norm, how many runs cover a millisecond) is tested without a GPU.

use crate::problem::{ConvProblem, DType};
use half::{bf16, f16};

/// Problems up to this many FLOPs have their reference output checked against the CPU's f64
/// direct convolution when the problem is set up (about a second of CPU time at most).
pub(crate) const CPU_CHECK_MAX_FLOPS: f64 = 5e7;

/// Accepts the reference kernel's output `out` for `problem`, the same rule on every backend:
/// every element written and finite and, for problems up to [`CPU_CHECK_MAX_FLOPS`], within the
/// type's tolerance of the CPU's f64 direct convolution. Stores the decoded output as the written
/// tensor's host copy in `host` (the caller drops the problem when this fails); `Err` says why.
pub(crate) fn accept_reference(
    problem: &ConvProblem,
    out: &[u8],
    host: &mut [Vec<f64>; 3],
) -> Result<(), String> {
    let dtype = problem.dtype();
    let values = decode(dtype, out);
    let c = compare(dtype, out, &values);
    if c.unwritten + c.non_finite > 0 {
        return Err(format!(
            "its output has {} unwritten and {} non-finite element(s)",
            c.unwritten, c.non_finite
        ));
    }
    host[problem.direction().written() as usize] = values;
    if problem.flops() <= CPU_CHECK_MAX_FLOPS {
        if let Some(err) =
            cpu_error(problem, host).filter(|&e| e.is_nan() || e > problem.tolerance())
        {
            return Err(format!(
                "its output differs from the CPU direct convolution by {err:.3e} (relative)"
            ));
        }
    }
    Ok(())
}

/// ‖reference − CPU‖ / ‖CPU‖ of the reference output kept in `host` (`None` before there is
/// one), against [`direct_conv`](crate::reference::direct_conv) in f64.
pub(crate) fn cpu_error(problem: &ConvProblem, host: &[Vec<f64>; 3]) -> Option<f64> {
    let w = problem.direction().written() as usize;
    if host[w].is_empty() {
        return None;
    }
    let [input, filter, output] = host;
    let cpu = crate::reference::direct_conv(problem, input, filter, output);
    Some(rel_err(&host[w], &cpu))
}

/// The byte every written tensor and workspace is filled with before a candidate runs. 0xFF… is a
/// NaN in f32, f16 and bf16 alike, so an element a kernel forgets to write cannot pass by luck.
pub(crate) const POISON: u8 = 0xFF;

/// The verdict on the workspace's kept-zero region ([`crate::abi::KEPT_ZERO_BYTES`]) as a plan
/// left it: a candidate that leaves bytes non-zero breaks the contract, whatever its output.
pub(crate) fn kept_zero_verdict(region: &[u8]) -> Result<(), crate::runtime::Outcome> {
    match region.iter().filter(|&&b| b != 0).count() as u64 {
        0 => Ok(()),
        nonzero => Err(crate::runtime::Outcome::DirtyWorkspace { nonzero }),
    }
}

/// Little-endian `dtype` bytes of values already representable in `dtype` (as
/// [`crate::reference::random_tensor`] makes them), so the device reads exactly what the f64 checks
/// assume.
pub(crate) fn encode(dtype: DType, values: &[f64]) -> Vec<u8> {
    use rayon::prelude::*;
    let size = dtype.bytes() as usize;
    let mut out = vec![0u8; values.len() * size];
    out.par_chunks_mut(PIECE * size)
        .zip(values.par_chunks(PIECE))
        .for_each(|(bytes, vals)| {
            for (b, &v) in bytes.chunks_exact_mut(size).zip(vals) {
                match dtype {
                    DType::F32 => b.copy_from_slice(&(v as f32).to_le_bytes()),
                    DType::F16 => b.copy_from_slice(&f16::from_f64(v).to_le_bytes()),
                    DType::BF16 => b.copy_from_slice(&bf16::from_f64(v).to_le_bytes()),
                }
            }
        });
    out
}

/// Exact f64 values of little-endian `dtype` elements.
pub(crate) fn decode(dtype: DType, bytes: &[u8]) -> Vec<f64> {
    match dtype {
        DType::F32 => bytes
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]) as f64)
            .collect(),
        DType::F16 => bytes
            .chunks_exact(2)
            .map(|c| f16::from_le_bytes([c[0], c[1]]).to_f64())
            .collect(),
        DType::BF16 => bytes
            .chunks_exact(2)
            .map(|c| bf16::from_le_bytes([c[0], c[1]]).to_f64())
            .collect(),
    }
}

/// How a written tensor compares with the reference.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Comparison {
    /// ‖out − ref‖₂ / ‖ref‖₂ over elements finite in `out` (absolute if ‖ref‖ is 0).
    pub rel_err: f64,
    /// Elements whose bytes are still all [`POISON`].
    pub unwritten: u64,
    /// Elements that are NaN or infinite but not the poison pattern.
    pub non_finite: u64,
}

impl Comparison {
    /// The comparison of these sums over a tensor: ‖out − ref‖² over the finite elements,
    /// ‖ref‖², and the counts. The one place the error norm is formed, for the CPU loop and
    /// the GPU kernel ([`super::gpu_compare`]) alike.
    pub fn from_sums(diff2: f64, ref2: f64, unwritten: u64, non_finite: u64) -> Comparison {
        Comparison {
            rel_err: if ref2 > 0.0 {
                (diff2 / ref2).sqrt()
            } else {
                diff2.sqrt()
            },
            unwritten,
            non_finite,
        }
    }

    /// Every element written, finite, and the error within `tolerance`.
    pub fn passes(&self, tolerance: f64) -> bool {
        self.unwritten == 0 && self.non_finite == 0 && self.rel_err <= tolerance
    }
}

/// Elements per piece of the parallel passes over a tensor (encoding, comparing): a
/// comparison's partial sums are added in piece order, so no result depends on the number of
/// threads.
const PIECE: usize = 1 << 16;

/// Compares raw output bytes with reference values, in f64. Runs on all cores without
/// decoding the tensor into a copy: on the H200 the single-threaded version (a 100 MB f64
/// copy of a 12.8 M-element output) was 95% of a candidate's measure stage (BENCHMARKS,
/// session 7 mid pass: verify 6.6 s of 6.9 s for 48 candidates).
pub(crate) fn compare(dtype: DType, out: &[u8], reference: &[f64]) -> Comparison {
    // One loop per element type, so the decode is inlined and the hot loop has no branch on
    // the type; the sums split over lanes. About twice as fast as one generic loop on a
    // 12.8 M-element bf16 output (development machine, session 12). On the H200 the tuner
    // checks on the GPU instead ([`super::gpu_compare`]): there the CPU compare competes
    // with the compile threads.
    match dtype {
        DType::F32 => compare_as(out, reference, |b: [u8; 4]| f32::from_le_bytes(b) as f64),
        DType::F16 => compare_as(out, reference, |b: [u8; 2]| f16::from_le_bytes(b).to_f64()),
        DType::BF16 => compare_as(out, reference, |b: [u8; 2]| {
            // bf16 is the top half of an f32: exact, and cheaper than `bf16::to_f64`.
            f32::from_bits((u16::from_le_bytes(b) as u32) << 16) as f64
        }),
    }
}

/// Independent partial sums per piece in [`compare_as`].
const LANES: usize = 8;

/// [`compare`] for elements of `N` bytes that `value` decodes.
fn compare_as<const N: usize>(
    out: &[u8],
    reference: &[f64],
    value: impl Fn([u8; N]) -> f64 + Sync,
) -> Comparison {
    use rayon::prelude::*;
    let elem = |bytes: &[u8]| -> [u8; N] { bytes.try_into().expect("N-byte chunks") };
    let parts: Vec<(f64, f64, u64, u64)> = out
        .par_chunks(PIECE * N)
        .zip(reference.par_chunks(PIECE))
        .map(|(bytes, want)| {
            // LANES independent sums: an f64 sum is a chain of dependent adds unless split.
            let (mut diff2, mut ref2, mut bad) = ([0.0f64; LANES], [0.0f64; LANES], 0u64);
            let mut lane = |l: usize, e: &[u8], want: f64| {
                let got = value(elem(e));
                let finite = got.is_finite();
                let d = if finite { got - want } else { 0.0 };
                ref2[l] += want * want;
                diff2[l] += d * d;
                u64::from(!finite)
            };
            let mut es = bytes.chunks_exact(N * LANES);
            let mut ws = want.chunks_exact(LANES);
            for (e, w) in (&mut es).zip(&mut ws) {
                for l in 0..LANES {
                    bad += lane(l, &e[l * N..(l + 1) * N], w[l]);
                }
            }
            for (e, &w) in es.remainder().chunks_exact(N).zip(ws.remainder()) {
                bad += lane(0, e, w);
            }
            let (diff2, ref2): (f64, f64) = (diff2.iter().sum(), ref2.iter().sum());
            // Rare: tell the poison (never written) from values the kernel made non-finite.
            let unwritten = if bad == 0 {
                0
            } else {
                bytes
                    .chunks_exact(N)
                    .filter(|e| !value(elem(e)).is_finite() && e.iter().all(|&b| b == POISON))
                    .count() as u64
            };
            (diff2, ref2, unwritten, bad - unwritten)
        })
        .collect();
    let (mut diff2, mut ref2) = (0.0f64, 0.0f64);
    let (mut unwritten, mut non_finite) = (0u64, 0u64);
    for (d, r, u, n) in parts {
        diff2 += d;
        ref2 += r;
        unwritten += u;
        non_finite += n;
    }
    Comparison::from_sums(diff2, ref2, unwritten, non_finite)
}

/// ‖got − want‖₂ / ‖want‖₂ (absolute if ‖want‖ is 0); NaN if any element is NaN.
pub(crate) fn rel_err(got: &[f64], want: &[f64]) -> f64 {
    let (diff2, want2) = got.iter().zip(want).fold((0.0, 0.0), |(d, w), (&g, &r)| {
        (d + (g - r) * (g - r), w + r * r)
    });
    if want2 > 0.0 {
        (diff2 / want2).sqrt()
    } else {
        diff2.sqrt()
    }
}

/// Timed runs of the reference kernel, after its checked run (which warms it up). Its time
/// only scales the candidates' timeouts and is reported; a median of several runs cost ~1 s
/// of a problem's fixed cost on big layers (the direct convolution takes ~0.1 s a run on a
/// 3×3 c256 28×28 batch-64 layer), where `--time 10` has no second to spare.
pub(crate) const REFERENCE_RUNS: usize = 1;

/// The reference kernel's time from its [`REFERENCE_RUNS`] timed runs, µs.
pub(crate) fn reference_us(times: &[f64]) -> f64 {
    median_min(times).map_or(0.0, |(median, _)| median)
}

/// Warm-up runs before timing.
pub(crate) const WARMUP_RUNS: u32 = 3;
/// Fewest timed runs: a median of fewer is noise.
pub(crate) const MIN_RUNS: u32 = 5;
/// Most timed runs: beyond this a tiny kernel only costs tuning time.
pub(crate) const MAX_RUNS: u32 = 200;
/// Kernel time the timed runs must cover together, in microseconds.
pub(crate) const COVER_US: f64 = 1000.0;

/// Timed runs needed to cover [`COVER_US`] when one run takes `estimate_us`.
pub(crate) fn run_count(estimate_us: f64) -> u32 {
    if estimate_us.is_nan() || estimate_us <= 0.0 {
        return MAX_RUNS;
    }
    (COVER_US / estimate_us)
        .ceil()
        .clamp(MIN_RUNS as f64, MAX_RUNS as f64) as u32
}

/// Whether the short first measurement (`estimate_us`, the warm-up median) is slower than the
/// screen the tuner asked for, so the full timing is skipped.
pub(crate) fn screened_out(estimate_us: f64, screen_us: Option<f64>) -> bool {
    screen_us.is_some_and(|s| estimate_us.is_finite() && s > 0.0 && estimate_us > s)
}

/// Median and minimum of run times (µs); `None` for no runs.
pub(crate) fn median_min(times: &[f64]) -> Option<(f64, f64)> {
    if times.is_empty() {
        return None;
    }
    let mut t = times.to_vec();
    t.sort_by(f64::total_cmp);
    let n = t.len();
    let median = if n % 2 == 1 {
        t[n / 2]
    } else {
        (t[n / 2 - 1] + t[n / 2]) / 2.0
    };
    Some((median, t[0]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::problem::{ConvProblem, ConvSizes, Direction, Layout, Tensor};
    use crate::reference::random_tensor;
    use rand::{rngs::StdRng, SeedableRng};

    #[test]
    fn a_kept_zero_region_left_dirty_is_the_candidates_fault() {
        let mut region = vec![0u8; 256];
        assert!(kept_zero_verdict(&region).is_ok());
        region[4] = 1;
        region[255] = 0xFF;
        assert_eq!(
            kept_zero_verdict(&region),
            Err(crate::runtime::Outcome::DirtyWorkspace { nonzero: 2 })
        );
    }

    fn values(dtype: DType, n: usize, seed: u64) -> Vec<f64> {
        let p = ConvProblem::new(
            ConvSizes {
                n: n as u32,
                ..Default::default()
            },
            Direction::Fwd,
            dtype,
            Layout::NGCHW,
            Layout::GKCYX,
            Layout::NGCHW,
        )
        .unwrap();
        random_tensor(&p, Tensor::Input, &mut StdRng::seed_from_u64(seed))
    }

    #[test]
    fn encoding_is_exact_for_reference_data() {
        for dtype in [DType::F32, DType::F16, DType::BF16] {
            let v = values(dtype, 5000, 7);
            let bytes = encode(dtype, &v);
            assert_eq!(bytes.len(), 5000 * dtype.bytes() as usize);
            // The f64 view is exactly what the device will read.
            assert_eq!(decode(dtype, &bytes), v);
            assert!(v.iter().any(|&x| x > 0.5) && v.iter().any(|&x| x < -0.5));
        }
        // Same seed, same data: a restarted worker checks against the same reference.
        assert_eq!(values(DType::BF16, 64, 1), values(DType::BF16, 64, 1));
    }

    #[test]
    fn poison_is_nan_in_every_dtype_and_counts_as_unwritten() {
        for dtype in [DType::F32, DType::F16, DType::BF16] {
            let n = 10;
            let size = dtype.bytes() as usize;
            let v = values(dtype, n, 3);
            let mut out = encode(dtype, &v);
            assert!(decode(dtype, &[POISON; 4][..size])[0].is_nan());
            let exact = compare(dtype, &out, &v);
            assert_eq!(exact.rel_err, 0.0);
            assert!(exact.passes(0.0));
            // Leave two elements poisoned.
            out[..2 * size].fill(POISON);
            let c = compare(dtype, &out, &v);
            assert_eq!((c.unwritten, c.non_finite), (2, 0));
            assert!(c.rel_err.is_finite());
            assert!(!c.passes(1.0));
        }
    }

    proptest::proptest! {
        /// The lane-split, per-type loop counts and sums what the element-by-element rule
        /// does: any length (remainders of the lanes), poison, non-finite values and errors
        /// anywhere.
        #[test]
        fn compare_is_the_element_by_element_rule(
            t in 0usize..3,
            n in 1usize..200,
            seed in 0u64..1000,
            hits in proptest::collection::vec((0usize..200, 0u8..3), 0..6),
        ) {
            let dtype = [DType::F32, DType::F16, DType::BF16][t];
            let size = dtype.bytes() as usize;
            let want = values(dtype, n, seed);
            let mut out = encode(dtype, &values(dtype, n, seed + 1));
            for (i, kind) in hits {
                let e = &mut out[(i % n) * size..][..size];
                match kind {
                    0 => e.fill(POISON),
                    1 => e.copy_from_slice(&encode(dtype, &[f64::INFINITY])),
                    _ => e.copy_from_slice(&encode(dtype, &[0.0])),
                }
            }
            let got = decode(dtype, &out);
            let (mut d2, mut r2, mut unwritten, mut non_finite) = (0.0, 0.0, 0, 0);
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                r2 += w * w;
                if g.is_finite() {
                    d2 += (g - w) * (g - w);
                } else if out[i * size..][..size].iter().all(|&b| b == POISON) {
                    unwritten += 1;
                } else {
                    non_finite += 1;
                }
            }
            let c = compare(dtype, &out, &want);
            proptest::prop_assert_eq!((c.unwritten, c.non_finite), (unwritten, non_finite));
            let rel = if r2 > 0.0 { (d2 / r2).sqrt() } else { d2.sqrt() };
            proptest::prop_assert!((c.rel_err - rel).abs() <= 1e-12 * rel.max(1.0));
        }
    }

    #[test]
    fn a_tensor_of_many_pieces_compares_as_one() {
        // Several PIECE pieces and a partial one; a poisoned element, an infinity and
        // an error in different pieces.
        let n = 3 * PIECE + 123;
        let v = values(DType::BF16, n, 5);
        let mut got: Vec<f64> = decode(DType::BF16, &encode(DType::BF16, &v));
        got[PIECE + 7] += 0.25;
        let mut out = encode(DType::BF16, &got);
        out[2 * (2 * PIECE + 1)..][..2].fill(POISON);
        out[2 * (n - 1)..].copy_from_slice(&half::bf16::INFINITY.to_le_bytes());
        let c = compare(DType::BF16, &out, &v);
        assert_eq!((c.unwritten, c.non_finite), (1, 1));
        // The same sums in one sequential pass over the finite elements.
        let back = decode(DType::BF16, &out);
        let (mut d2, mut r2) = (0.0, 0.0);
        for (g, w) in back.iter().zip(&v) {
            r2 += w * w;
            if g.is_finite() {
                d2 += (g - w) * (g - w);
            }
        }
        let want = (d2 / r2).sqrt();
        assert!(
            (c.rel_err - want).abs() <= 1e-12 * want,
            "{} vs {want}",
            c.rel_err
        );
        assert!(c.rel_err > 0.0);
    }

    #[test]
    fn relative_error_is_the_norm_ratio_and_infinities_are_caught() {
        let reference = [3.0, 4.0];
        let out: Vec<u8> = [3.0f32, 4.5].iter().flat_map(|x| x.to_le_bytes()).collect();
        let c = compare(DType::F32, &out, &reference);
        assert!((c.rel_err - 0.5 / 5.0).abs() < 1e-12);
        assert!(!c.passes(1e-5) && c.passes(0.2));
        let out: Vec<u8> = [3.0f32, f32::INFINITY]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        let c = compare(DType::F32, &out, &reference);
        assert_eq!((c.unwritten, c.non_finite), (0, 1));
        assert!(!c.passes(1.0));
        assert!((rel_err(&[3.0, 4.5], &reference) - 0.1).abs() < 1e-12);
        assert_eq!(rel_err(&[0.5], &[0.0]), 0.5);
        assert!(rel_err(&[f64::NAN], &[1.0]).is_nan());
    }

    #[test]
    fn only_a_clearly_slower_candidate_is_screened() {
        assert!(screened_out(20.0, Some(12.5)));
        assert!(!screened_out(12.0, Some(12.5)));
        assert!(!screened_out(1e9, None));
        assert!(!screened_out(f64::NAN, Some(1.0)));
        assert!(!screened_out(5.0, Some(0.0)));
    }

    #[test]
    fn run_count_covers_a_millisecond_within_bounds() {
        assert_eq!(run_count(10.0), 100);
        assert_eq!(run_count(333.0), 5);
        assert_eq!(run_count(1.0), MAX_RUNS);
        assert_eq!(run_count(0.0), MAX_RUNS);
        assert_eq!(run_count(f64::NAN), MAX_RUNS);
        assert_eq!(run_count(1e6), MIN_RUNS);
        assert!(run_count(7.0) as f64 * 7.0 >= COVER_US);
    }

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median_min(&[5.0, 1.0, 3.0]), Some((3.0, 1.0)));
        assert_eq!(median_min(&[4.0, 1.0, 3.0, 2.0]), Some((2.5, 1.0)));
        assert_eq!(median_min(&[]), None);
    }

    #[test]
    fn the_reference_is_accepted_only_written_and_equal_to_the_cpu() {
        let p: ConvProblem = "conv -n 1 -c 4 -H 5 -W 5 -k 4 -y 3 -x 3 -p 1 -q 1 -F 1"
            .parse()
            .unwrap();
        let mut rng = StdRng::seed_from_u64(3);
        let mut host = Tensor::ALL.map(|t| random_tensor(&p, t, &mut rng));
        let w = p.direction().written() as usize;
        host[w].clear();
        let [i, f, o] = &host;
        let right = crate::reference::direct_conv(&p, i, f, o);
        assert_eq!(cpu_error(&p, &host), None, "no reference output yet");
        let mut bytes = encode(p.dtype(), &right);
        assert_eq!(accept_reference(&p, &bytes, &mut host), Ok(()));
        assert_eq!(
            host[w],
            decode(p.dtype(), &bytes),
            "kept as the kernel wrote it"
        );
        assert!(cpu_error(&p, &host).unwrap() < p.dtype().tolerance());
        bytes[..4].fill(POISON);
        assert!(accept_reference(&p, &bytes, &mut host)
            .unwrap_err()
            .contains("unwritten"));
        let wrong: Vec<f64> = right.iter().map(|v| v + 1.0).collect();
        let e = accept_reference(&p, &encode(p.dtype(), &wrong), &mut host).unwrap_err();
        assert!(e.contains("differs from the CPU"), "{e}");
    }
}
