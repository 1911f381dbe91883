//! Backward data as one GEMM per (iYTilda, iXTilda) residue class, with the filter read flipped
//! and strided by index math only (seed 000's decomposition).
//!
//! Forward relates `hi + pad = ho·stride + y·dilation`. Writing `y = iYTilda + yDot·YTilda` with
//! `YTilda = stride / gcd(stride, dilation)` makes `hi + pad = hTilda·stride + iYTilda·dilation`
//! and `ho = hTilda − yDot·(dilation / gcd)`, so for a fixed iYTilda each input pixel is one GEMM
//! column and the sum runs over (k, yDot, xDot). Pixels that no residue class reaches (filter
//! slice empty, or `gcd > 1`) receive no contribution and are zeroed by a zero-init step.

use super::{dim, find, Affine, Gemm, GemmDim, Lowering, Operand};
use crate::problem::{gcd, ConvProblem, Tensor};

/// The tilda decomposition of one spatial dimension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TildaDim {
    /// stride / gcd(stride, dilation): residue classes.
    pub tilda: u32,
    /// ceil(filter / tilda): filter taps per residue class, at most.
    pub dot: u32,
    /// dilation / gcd: how far ho moves per filter tap.
    pub dot_step: u32,
    /// Out + ceil(dilation·(filter − 1) / stride).
    pub extent: u32,
    /// First hTilda that touches the image.
    pub left: u32,
    /// One past the last hTilda that touches the image.
    pub right: u32,
}

impl TildaDim {
    /// Filter taps of residue class `i` (0 when the class is empty: `i ≥ filter`).
    pub fn dot_slice(&self, i: u32, filter: u32) -> u32 {
        if i >= filter {
            0
        } else {
            (filter - i).div_ceil(self.tilda)
        }
    }
    /// Columns of the sub-GEMMs along this dimension.
    pub fn slice_len(&self) -> u32 {
        self.right.saturating_sub(self.left)
    }
}

/// The decomposition of spatial dimension `d` (0 = H, 1 = W).
pub fn tilda_dim(p: &ConvProblem, d: usize) -> TildaDim {
    let s = p.sizes();
    let (stride, dil, pad) = (s.stride[d], s.dilation[d], s.pad[d]);
    let (filter, input) = if d == 0 { (s.y, s.h) } else { (s.x, s.w) };
    let out = p.out_size()[d];
    let g = gcd(stride, dil);
    let tilda = stride / g;
    // `dil·(filter − 1)` fits (the problem bounds the dilated filter).
    let extent = out + (dil * (filter - 1)).div_ceil(stride);
    // The slice runs from the first column any residue class writes inside the image to the
    // last ([`class_columns`]). MIOpen and rocMLIR round both ends outwards, keeping columns
    // that write only past an edge: seed 003's 1×2 stride 2 had 257 columns where 256 write,
    // 5×5 stride 2 pad 2 on 28² 16 where 14 do, 3×3 stride 2 on 7² 5 where 4 do.
    let (mut first, mut last) = (i64::MAX, -1);
    // Classes past `pad + input − 1` write nothing (their first pixel is past the image).
    let classes = i64::from(p.residue_classes()[d])
        .min((i64::from(pad) + i64::from(input) - 1) / i64::from(dil) + 1);
    for i in 0..classes {
        let (lo, hi) = class_columns(p, d, i);
        if lo <= hi {
            (first, last) = (first.min(lo), last.max(hi));
        }
    }
    let right = extent.min((last + 1) as u32);
    let left = if first == i64::MAX {
        right
    } else {
        (first as u32).min(right)
    };
    TildaDim {
        tilda,
        dot: filter.div_ceil(tilda),
        dot_step: dil / g,
        extent,
        left,
        right,
    }
}

/// The hTilda columns in which residue class `i` of dimension `d` writes inside the image,
/// first and last (empty when first > last): class `i` writes `hTilda·stride + i·dil − pad`,
/// in `[0, input)` for hTilda from `⌈(pad − i·dil) / stride⌉` (at least 0) to
/// `⌊(pad + input − 1 − i·dil) / stride⌋`. In 64 bits: `i·dil` need not fit 32 at a huge
/// stride.
fn class_columns(p: &ConvProblem, d: usize, i: i64) -> (i64, i64) {
    let s = p.sizes();
    let (stride, dil, pad) = (s.stride[d] as i64, s.dilation[d] as i64, s.pad[d] as i64);
    let input = i64::from(if d == 0 { s.h } else { s.w });
    let off = pad - i * dil;
    (
        (off.max(0) + stride - 1) / stride,
        (input - 1 + off).div_euclid(stride),
    )
}

/// Which input pixels along one spatial dimension the sub-GEMMs write, in the form a kernel
/// tests cheaply: pixel `hi` is written by class `i < classes` exactly when
/// `u = hi + base − i·dilation` is a multiple of `stride` in `[0, span)` (class `i` writes
/// `hTilda·stride + i·dilation − pad` for `hTilda ∈ [left, right)`). The one-launch bwd-data
/// kernel zeroes the pixels that fail this in both dimensions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CoverDim {
    /// The convolution stride.
    pub stride: u32,
    /// The dilation (class `i` starts `i · dilation` further).
    pub dilation: u32,
    /// Residue classes written: `0..classes` (see [`ConvProblem::residue_classes`]).
    pub classes: u32,
    /// `pad − left·stride`.
    pub base: i64,
    /// `(right − left) · stride`.
    pub span: u64,
}

impl CoverDim {
    /// Whether some sub-GEMM writes input pixel `hi`.
    pub fn writes(&self, hi: u32) -> bool {
        (0..self.classes as i64).any(|i| {
            let u = hi as i64 + self.base - i * self.dilation as i64;
            u >= 0 && (u as u64) < self.span && u % self.stride as i64 == 0
        })
    }
}

/// The pixels the sub-GEMMs write, per spatial dimension (H, W).
pub fn coverage(p: &ConvProblem) -> [CoverDim; 2] {
    let s = p.sizes();
    let classes = p.residue_classes();
    std::array::from_fn(|d| {
        let t = tilda_dim(p, d);
        CoverDim {
            stride: s.stride[d],
            dilation: s.dilation[d],
            classes: classes[d],
            base: s.pad[d] as i64 - t.left as i64 * s.stride[d] as i64,
            span: t.slice_len() as u64 * s.stride[d] as u64,
        }
    })
}

/// Whether every input pixel along dimension `d` is written by some non-empty sub-GEMM.
///
/// Class `i` writes the pixels `hTilda·stride + i·dilation − pad` for `hTilda` in
/// `[left, right)`; distinct classes write distinct pixels (`i·dilation` differ modulo the
/// stride for `i < tilda`), so the image is covered exactly when the per-class counts of pixels
/// inside it add up to its extent. One closed-form count per class keeps this linear in the
/// number of classes, whatever the image size.
fn covered(p: &ConvProblem, d: usize, t: &TildaDim) -> bool {
    let input = [p.sizes().h, p.sizes().w][d];
    let written: i64 = (0..p.residue_classes()[d] as i64)
        .map(|i| {
            let (first, last) = class_columns(p, d, i);
            let lo = first.max(t.left as i64);
            let hi = (last + 1).min(t.right as i64);
            (hi - lo).max(0)
        })
        .sum();
    written == input as i64
}

pub(super) fn lower(p: &ConvProblem) -> Lowering {
    let s = p.sizes();
    let td = [tilda_dim(p, 0), tilda_dim(p, 1)];
    let filter = [s.y, s.x];
    let mut gemms = Vec::new();
    // At most two runs of classes per dimension (see `phases`), never one per class of the
    // stride.
    if td[0].slice_len() > 0 && td[1].slice_len() > 0 {
        let [ys, xs] = [0, 1].map(|d| phases(&td[d], filter[d]));
        let alike = ys.len() * xs.len() > 1;
        for &py in &ys {
            for &px in &xs {
                let id = gemms.len() as u32;
                gemms.push(sub_gemm(p, &td, [py, px], id, alike));
            }
        }
    }
    debug_assert!(
        gemms.len() <= super::MAX_PHASES,
        "{p}: {} sub-GEMMs",
        gemms.len()
    );
    let zero_init = gemms.is_empty() || !covered(p, 0, &td[0]) || !covered(p, 1, &td[1]);
    Lowering {
        problem: *p,
        zero_init,
        gemms,
        transform: crate::config::Transform::None,
        twins: [None, None],
    }
}

/// Which residue classes of one spatial dimension a sub-GEMM covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Class `i` alone, with `dot` filter taps.
    Fixed(u32, u32),
    /// Classes `first..first + classes` as a row axis of the GEMM, each with `dot` filter taps.
    Merged {
        /// The first class of the run.
        first: u32,
        /// Non-empty residue classes in the run (at least 2).
        classes: u32,
        /// Filter taps of each.
        dot: u32,
    },
}

impl Phase {
    fn dot(self) -> u32 {
        match self {
            Phase::Fixed(_, dot) | Phase::Merged { dot, .. } => dot,
        }
    }
    /// The run's first class and its number of classes.
    fn run(self) -> (u32, u32) {
        match self {
            Phase::Fixed(i, _) => (i, 1),
            Phase::Merged { first, classes, .. } => (first, classes),
        }
    }
}

/// The residue classes of one spatial dimension, as the sub-GEMMs cover them: one sub-GEMM
/// per run of classes with the same filter taps. Classes with the same taps write disjoint
/// pixels with the same reduction, so a run is one row axis of a single GEMM (seed 003: one
/// dense GEMM, not two). Class `i` has `ceil((filter − i) / tilda)` taps, which takes at most
/// two values over `i < min(tilda, filter)` and never grows with `i`, so there are at most two
/// runs a dimension and four sub-GEMMs in all, whatever the stride (5×5 stride 3: taps 2, 2, 1
/// make runs {0, 1} and {2}, four sub-GEMMs instead of nine). Fewer bodies in the one-launch
/// kernel is less to compile for every candidate (issue 16), and no row of any sub-GEMM is
/// padding.
fn phases(t: &TildaDim, filter: u32) -> Vec<Phase> {
    let classes = t.tilda.min(filter);
    let mut runs = Vec::new();
    let mut first = 0;
    while first < classes {
        let dot = t.dot_slice(first, filter);
        let end = (first + 1..classes)
            .find(|&i| t.dot_slice(i, filter) != dot)
            .unwrap_or(classes);
        runs.push(match end - first {
            1 => Phase::Fixed(first, dot),
            classes => Phase::Merged {
                first,
                classes,
                dot,
            },
        });
        first = end;
    }
    runs
}

/// Sub-GEMM `id` of `p` for the class runs `phases`. With `alike` (a lowering of several
/// sub-GEMMs) a class alone is an axis of length 1 too, so that every sub-GEMM has the same
/// axes and terms and they differ only in lengths and constant offsets: the one-launch kernel
/// then runs them all with one body whose constants are picked at run time
/// ([`crate::codegen`]'s shared phases). A lowering of one sub-GEMM keeps the shorter form.
fn sub_gemm(p: &ConvProblem, td: &[TildaDim; 2], phases: [Phase; 2], id: u32, alike: bool) -> Gemm {
    let s = p.sizes();
    let k = ("k", p.k_per_group());
    let (yd, xd) = (("ydot", phases[0].dot()), ("xdot", phases[1].dot()));
    let k_axes = if super::channels_last(p, Tensor::Output) {
        dim(&[yd, xd, k])
    } else {
        dim(&[k, yd, xd])
    };
    // Merged residue classes are row axes outside the channel: with channels innermost in
    // memory, (class, c) stays one contiguous run when the dilation is 1.
    let has_axis = |d: usize| alike || phases[d].run().1 > 1;
    let class_axes = [("iy", 0), ("ix", 1)]
        .into_iter()
        .filter(|&(_, d)| has_axis(d))
        .map(|(name, d)| (name, phases[d].run().1));
    let m_axes: Vec<(&'static str, u32)> = class_axes.chain([("c", p.c_per_group())]).collect();
    let dims: [GemmDim; 4] = [
        dim(&[("g", s.groups)]),
        dim(&m_axes),
        dim(&[
            ("n", s.n),
            ("htilda", td[0].slice_len()),
            ("wtilda", td[1].slice_len()),
        ]),
        k_axes,
    ];
    let ax = |n: &str| find(&dims, n);
    let one = |n: &str| Affine::axis(ax(n));
    // `base + i · coef` for the residue class `i` of dimension `d`: a constant, or the run's
    // first class plus the class axis.
    let class = |d: usize, base: Affine, coef: i64| {
        let base = if has_axis(d) {
            base.plus(ax(["iy", "ix"][d]), coef)
        } else {
            base
        };
        base.add(phases[d].run().0 as i64 * coef)
    };
    let tap = |d: usize, dot: &str| class(d, Affine::zero().plus(ax(dot), td[d].tilda as i64), 1);
    let out_pixel = |d: usize, t: &str, dot: &str| {
        Affine::axis(ax(t))
            .plus(ax(dot), -(td[d].dot_step as i64))
            .add(td[d].left as i64)
    };
    let in_pixel = |d: usize, t: &str| {
        class(
            d,
            Affine::zero()
                .plus(ax(t), s.stride[d] as i64)
                .add(td[d].left as i64 * s.stride[d] as i64 - s.pad[d] as i64),
            s.dilation[d] as i64,
        )
    };
    Gemm {
        id,
        a: Operand {
            tensor: Tensor::Filter,
            coords: [one("g"), one("k"), one("c"), tap(0, "ydot"), tap(1, "xdot")],
        },
        b: Operand {
            tensor: Tensor::Output,
            coords: [
                one("n"),
                one("g"),
                one("k"),
                out_pixel(0, "htilda", "ydot"),
                out_pixel(1, "wtilda", "xdot"),
            ],
        },
        c: Operand {
            tensor: Tensor::Input,
            coords: [
                one("n"),
                one("g"),
                one("c"),
                in_pixel(0, "htilda"),
                in_pixel(1, "wtilda"),
            ],
        },
        dims,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::problem::arbitrary::small_problem;
    use proptest::prelude::*;

    /// The pixel-by-pixel definition the closed form replaced.
    fn covered_by_pixels(p: &ConvProblem, d: usize, t: &TildaDim) -> bool {
        let s = p.sizes();
        let (stride, dil, pad) = (s.stride[d] as i64, s.dilation[d] as i64, s.pad[d] as i64);
        let (filter, input) = if d == 0 { (s.y, s.h) } else { (s.x, s.w) };
        (0..input as i64).all(|hi| {
            (0..t.tilda.min(filter) as i64).any(|i| {
                let num = hi + pad - i * dil;
                num >= 0
                    && num % stride == 0
                    && (t.left as i64..t.right as i64).contains(&(num / stride))
            })
        })
    }

    proptest! {
        #[test]
        fn closed_form_coverage_matches_the_pixel_walk(p in small_problem(4, 12)) {
            for d in 0..2 {
                let t = tilda_dim(&p, d);
                prop_assert_eq!(covered(&p, d, &t), covered_by_pixels(&p, d, &t), "{}", p);
                let cover = coverage(&p)[d];
                let input = [p.sizes().h, p.sizes().w][d];
                prop_assert_eq!(
                    (0..input).all(|hi| cover.writes(hi)),
                    covered_by_pixels(&p, d, &t),
                    "{}", p
                );
            }
        }
    }

    proptest! {
        /// The slice `[left, right)` holds every hTilda whose columns write inside the image
        /// (no contribution is lost), starts at the first one that does and ends at the last
        /// (no column writes only past an edge: seed 003's 257th).
        #[test]
        fn the_slice_ends_at_the_last_column_that_writes(p in small_problem(4, 12)) {
            let s = p.sizes();
            for d in 0..2 {
                let t = tilda_dim(&p, d);
                let (stride, dil, pad) =
                    (s.stride[d] as i64, s.dilation[d] as i64, s.pad[d] as i64);
                let (filter, input) = if d == 0 { (s.y, s.h) } else { (s.x, s.w) };
                let writes = |h: i64| {
                    (0..t.tilda.min(filter) as i64).any(|i| {
                        let px = h * stride + i * dil - pad;
                        (0..input as i64).contains(&px)
                    })
                };
                for h in 0..t.extent as i64 {
                    if writes(h) {
                        prop_assert!(
                            (t.left as i64..t.right as i64).contains(&h),
                            "{}: hTilda {} writes but is outside [{}, {})", p, h, t.left, t.right
                        );
                    }
                }
                if (t.left as i64..t.right as i64).any(writes) {
                    prop_assert!(writes(t.left as i64), "{}: column {} writes nothing", p, t.left);
                    prop_assert!(
                        t.right == t.extent || writes(t.right as i64 - 1),
                        "{}: column {} writes nothing", p, t.right - 1
                    );
                }
            }
        }
    }

    proptest! {
        /// The runs of one dimension cover its classes in order, each run's classes with the
        /// taps the run has, and no two neighbouring runs could be one.
        #[test]
        fn runs_cover_the_classes_with_their_taps(p in small_problem(4, 12)) {
            let s = p.sizes();
            for (d, filter) in [(0, s.y), (1, s.x)] {
                let t = tilda_dim(&p, d);
                let runs = phases(&t, filter);
                prop_assert!(runs.len() <= 2, "{} {:?}", p, runs);
                let mut next = 0;
                for r in &runs {
                    let (first, n) = match *r {
                        Phase::Fixed(i, _) => (i, 1),
                        Phase::Merged { first, classes, .. } => (first, classes),
                    };
                    prop_assert_eq!(first, next);
                    for i in first..first + n {
                        prop_assert_eq!(t.dot_slice(i, filter), r.dot());
                    }
                    next = first + n;
                }
                prop_assert_eq!(next, t.tilda.min(filter));
                prop_assert!(runs.windows(2).all(|w| w[0].dot() != w[1].dot()));
            }
        }
    }

    #[test]
    fn classes_with_the_same_taps_share_a_sub_gemm() {
        // 5×5 stride 3: taps 2, 2, 1 per dimension, so runs {0, 1} and {2}; 11×11 stride 4
        // (taps 3, 3, 3, 2) likewise: four sub-GEMMs, not 9 or 16.
        for (line, m) in [
            (
                "conv -n 16 -c 64 -H 48 -W 48 -k 64 -y 5 -x 5 -p 2 -q 2 -u 3 -v 3 -F 2",
                [256, 128, 128, 64],
            ),
            (
                "conv -n 2 -c 8 -H 57 -W 57 -k 8 -y 11 -x 11 -p 2 -q 2 -u 4 -v 4 -F 2",
                [72, 24, 24, 8],
            ),
        ] {
            let p: ConvProblem = line.parse().unwrap();
            let l = lower(&p);
            let ms: Vec<u32> = l.gemms.iter().map(|g| g.m_len()).collect();
            assert_eq!(ms, m, "{line}");
        }
    }

    #[test]
    fn huge_strides_lower_at_once() {
        // Issue 18: the sub-GEMM loops ran over stride_h × stride_w (2^64 iterations here).
        let start = std::time::Instant::now();
        for line in [
            "conv -n 1 -c 1 -H 1 -W 1 -k 1 -y 1 -x 1 -u 4294967295 -v 4294967295 -F 2",
            "conv -n 1 -c 1 -H 1 -W 1 -k 1 -y 1 -x 1 -u 100000 -v 100000 -F 2",
            "conv -n 1 -c 1 -H 3 -W 3 -k 1 -y 3 -x 3 -l 2 -j 2 -p 2 -q 2 -u 4294967295 -v 7 -F 2",
            "conv -n 1 -c 1 -H 1073741823 -W 1 -k 1 -y 1 -x 1 -u 4294967295 -F 2",
        ] {
            let p: ConvProblem = line.parse().unwrap();
            let l = lower(&p);
            assert!(!l.gemms.is_empty() && l.gemms.len() <= 4, "{line}");
        }
        assert!(start.elapsed().as_secs_f64() < 1.0, "{:?}", start.elapsed());
    }
}
