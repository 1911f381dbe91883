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
    let mut gemms = Vec::new();
    for iy in 0..td[0].tilda {
        for ix in 0..td[1].tilda {
            let (ydot, xdot) = (td[0].dot_slice(iy, s.y), td[1].dot_slice(ix, s.x));
            if ydot == 0 || xdot == 0 || td[0].slice_len() == 0 || td[1].slice_len() == 0 {
                continue;
            }
            gemms.push(sub_gemm(p, &td, [iy, ix], [ydot, xdot], gemms.len() as u32));
        }
    }
    let zero_init = gemms.is_empty() || !covered(p, 0, &td[0]) || !covered(p, 1, &td[1]);
    Lowering {
        problem: *p,
        zero_init,
        gemms,
    }
}

fn sub_gemm(p: &ConvProblem, td: &[TildaDim; 2], i: [u32; 2], dots: [u32; 2], id: u32) -> Gemm {
    let s = p.sizes();
    let k = ("k", p.k_per_group());
    let (yd, xd) = (("ydot", dots[0]), ("xdot", dots[1]));
    let k_axes = if super::channels_last(p, Tensor::Output) {
        dim(&[yd, xd, k])
    } else {
        dim(&[k, yd, xd])
    };
    let dims: [GemmDim; 4] = [
        dim(&[("g", s.groups)]),
        dim(&[("c", p.c_per_group())]),
        dim(&[
            ("n", s.n),
            ("htilda", td[0].slice_len()),
            ("wtilda", td[1].slice_len()),
        ]),
        k_axes,
    ];
    let ax = |n: &str| find(&dims, n);
    let one = |n: &str| Affine::axis(ax(n));
    let tap = |d: usize, dot: &str| {
        Affine::zero()
            .plus(ax(dot), td[d].tilda as i64)
            .add(i[d] as i64)
    };
    let out_pixel = |d: usize, t: &str, dot: &str| {
        Affine::axis(ax(t))
            .plus(ax(dot), -(td[d].dot_step as i64))
            .add(td[d].left as i64)
    };
    let in_pixel = |d: usize, t: &str| {
        Affine::zero().plus(ax(t), s.stride[d] as i64).add(
            td[d].left as i64 * s.stride[d] as i64 + i[d] as i64 * s.dilation[d] as i64
                - s.pad[d] as i64,
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
