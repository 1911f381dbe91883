//! Backward data as one GEMM per (iYTilda, iXTilda) residue class, with the filter read flipped
//! and strided by index math only (seed 000's decomposition).
//!
//! Forward relates `hi + pad = ho·stride + y·dilation`. Writing `y = iYTilda + yDot·YTilda` with
//! `YTilda = stride / gcd(stride, dilation)` makes `hi + pad = hTilda·stride + iYTilda·dilation`
//! and `ho = hTilda − yDot·(dilation / gcd)`, so for a fixed iYTilda each input pixel is one GEMM
//! column and the sum runs over (k, yDot, xDot). Pixels that no residue class reaches (filter
//! slice empty, or `gcd > 1`) receive no contribution and are zeroed by a zero-init step.

use super::{dim, find, Affine, Gemm, GemmDim, Lowering, Operand};
use crate::problem::{ConvProblem, Tensor};

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

fn gcd(a: u32, b: u32) -> u32 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
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
    let extent = out + (dil * (filter - 1)).div_ceil(stride);
    let left = pad.saturating_sub(dil * (tilda - 1)) / stride;
    let right = extent.min((pad + input - 1).div_ceil(stride) + 1);
    TildaDim {
        tilda,
        dot: filter.div_ceil(tilda),
        dot_step: dil / g,
        extent,
        left,
        right,
    }
}

/// Whether every input pixel along dimension `d` is written by some non-empty sub-GEMM.
fn covered(p: &ConvProblem, d: usize, t: &TildaDim) -> bool {
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

pub(super) fn lower(p: &ConvProblem) -> Lowering {
    let s = p.sizes();
    let td = [tilda_dim(p, 0), tilda_dim(p, 1)];
    let filter = [s.y, s.x];
    let mut gemms = Vec::new();
    if td[0].slice_len() > 0 && td[1].slice_len() > 0 {
        let [ys, xs] = [0, 1].map(|d| phases(&td[d], filter[d]));
        for &py in &ys {
            for &px in &xs {
                let id = gemms.len() as u32;
                gemms.push(sub_gemm(p, &td, [py, px], id));
            }
        }
    }
    let zero_init = gemms.is_empty() || !covered(p, 0, &td[0]) || !covered(p, 1, &td[1]);
    Lowering {
        problem: *p,
        zero_init,
        gemms,
    }
}

/// Which residue classes of one spatial dimension a sub-GEMM covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Class `i` alone, with `dot` filter taps.
    Fixed(u32, u32),
    /// Classes `0..classes` as a row axis of the GEMM, each with `dot` filter taps.
    Merged {
        /// Non-empty residue classes.
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
}

/// The residue classes of one spatial dimension, as the sub-GEMMs cover them. When every
/// non-empty class has the same filter taps (filter ≤ tilda, or filter a multiple of tilda) the
/// classes write disjoint pixels with the same reduction, so they are one row axis of a single
/// GEMM (seed 003: one dense GEMM, not two); otherwise each non-empty class is a GEMM of its own.
fn phases(t: &TildaDim, filter: u32) -> Vec<Phase> {
    let classes = t.tilda.min(filter);
    if classes > 1 && (filter <= t.tilda || filter.is_multiple_of(t.tilda)) {
        return vec![Phase::Merged {
            classes,
            dot: t.dot_slice(0, filter),
        }];
    }
    (0..classes)
        .map(|i| Phase::Fixed(i, t.dot_slice(i, filter)))
        .collect()
}

fn sub_gemm(p: &ConvProblem, td: &[TildaDim; 2], phases: [Phase; 2], id: u32) -> Gemm {
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
    let class_axes = [("iy", 0), ("ix", 1)]
        .into_iter()
        .filter_map(|(name, d)| match phases[d] {
            Phase::Merged { classes, .. } => Some((name, classes)),
            Phase::Fixed(..) => None,
        });
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
    // `base + i · coef` for the residue class of dimension `d`: a constant, or the class axis.
    let class = |d: usize, base: Affine, coef: i64| match phases[d] {
        Phase::Fixed(i, _) => base.add(i as i64 * coef),
        Phase::Merged { .. } => base.plus(ax(["iy", "ix"][d]), coef),
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
