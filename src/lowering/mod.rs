//! Lowering a convolution to implicit GEMMs, as data.
//!
//! Every GEMM is `C[g][m][n] = Σ_k A[g][m][k] · B[g][k][n]`. Each GEMM dimension (G, M, N, K) is
//! a *merge* of named axes (row-major, outermost first), and each operand says, for every logical
//! dimension of the tensor it touches, which affine function of those axes gives the coordinate.
//! A coordinate outside the tensor is padding: loads read zero, stores are skipped. This one
//! description is read by the legality analysis (vector widths through the transforms), the code
//! generator (index math in the kernels) and the CPU executor that proves the lowering right.
//!
//! The choice of M and N is made once, here, for all directions: M is the output-channel-like
//! dimension (K for forward and backward weight, C for backward data); N is the pixel-like one.
//!
//! ```
//! use convtune::{lowering::lower, problem::ConvProblem};
//! let p: ConvProblem = "convbfp16 -n 16 -c 2048 -H 1 -W 512 -k 2048 -y 1 -x 2 -u 1 -v 2 -F 2 --layout NHWC"
//!     .parse()
//!     .unwrap();
//! let l = lower(&p);
//! // Stride 2 with a 2-wide filter: both residue classes in one dense GEMM.
//! assert_eq!(l.gemms.len(), 1);
//! assert_eq!((l.gemms[0].m_len(), l.gemms[0].k_len()), (2 * 2048, 2048));
//! ```

mod bwd_data;
pub mod depthwise;
mod execute;
pub mod groups;
pub mod im2col;
mod launch;
pub mod relayout;
pub mod tma;
pub mod tma_store;

pub use bwd_data::{coverage, tilda_dim, CoverDim, TildaDim};
pub use execute::execute;
pub use launch::{one_launch, MAX_COVER_CLASSES, MAX_PHASES};

use crate::config::ClusterShape;
use crate::config::Transform;
use crate::problem::{ConvProblem, Direction, Tensor};
use serde::Serialize;
use std::fmt;

/// The four dimensions of a batched GEMM.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum Dim {
    /// Batch (groups).
    G = 0,
    /// Rows of A and C.
    M = 1,
    /// Columns of B and C.
    N = 2,
    /// Reduction.
    K = 3,
}

impl Dim {
    /// All four, in storage order of [`Gemm::dims`].
    pub const ALL: [Dim; 4] = [Dim::G, Dim::M, Dim::N, Dim::K];

    /// The GEMM dimension along which a cluster's blocks are neighbours (`None`: no cluster);
    /// they share the other dimension's operand (M neighbours share B). Here, not on
    /// [`ClusterShape`]: a config field says nothing of the GEMM it tiles.
    pub fn of_cluster(shape: ClusterShape) -> Option<Dim> {
        match shape {
            ClusterShape::One => None,
            ClusterShape::PairM => Some(Dim::M),
            ClusterShape::PairN => Some(Dim::N),
        }
    }
}

impl fmt::Display for Dim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(["G", "M", "N", "K"][*self as usize])
    }
}

/// A named axis that one GEMM dimension merges; names are for people, lengths for the math.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Axis {
    /// Short name (`n`, `ho`, `ydot`, …).
    pub name: &'static str,
    /// Extent.
    pub len: u32,
}

/// Refers to one axis: the GEMM dimension and the position within its merge.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct AxisRef {
    /// Which GEMM dimension.
    pub dim: Dim,
    /// Position in that dimension's axis list (0 = outermost).
    pub pos: usize,
}

/// `offset + Σ coef · axis`: one tensor coordinate as a function of GEMM axes. Pad is a negative
/// offset, stride and dilation are coefficients, a flipped or sliced filter is an offset plus a
/// coefficient; this covers every transform a 2-D convolution needs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Affine {
    /// Terms (axis, coefficient).
    pub terms: Vec<(AxisRef, i64)>,
    /// Constant term.
    pub offset: i64,
}

impl Affine {
    fn axis(r: AxisRef) -> Self {
        Affine {
            terms: vec![(r, 1)],
            offset: 0,
        }
    }
    fn zero() -> Self {
        Affine {
            terms: vec![],
            offset: 0,
        }
    }
    fn plus(mut self, r: AxisRef, coef: i64) -> Self {
        if coef != 0 {
            self.terms.push((r, coef));
        }
        self
    }
    fn add(mut self, offset: i64) -> Self {
        self.offset += offset;
        self
    }
    /// Evaluates at the given axis coordinates (`coords[dim][pos]`).
    pub fn eval(&self, coords: &[Vec<u32>; 4]) -> i64 {
        self.offset
            + self
                .terms
                .iter()
                .map(|(r, c)| c * coords[r.dim as usize][r.pos] as i64)
                .sum::<i64>()
    }
    /// Whether this coordinate can leave `[0, len)` for some axis values (i.e. needs a bounds
    /// check in the kernel). `dims` gives the axis lengths.
    pub fn may_leave(&self, len: u32, dims: &[GemmDim; 4]) -> bool {
        let (mut lo, mut hi) = (self.offset, self.offset);
        for (r, c) in &self.terms {
            let max = (dims[r.dim as usize].axes[r.pos].len - 1) as i64 * c;
            if max < 0 {
                lo += max;
            } else {
                hi += max;
            }
        }
        lo < 0 || hi >= len as i64
    }
}

/// The axes one GEMM dimension merges, outermost first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GemmDim {
    /// The merged axes.
    pub axes: Vec<Axis>,
}

impl GemmDim {
    /// Product of the axis lengths.
    pub fn len(&self) -> u32 {
        self.axes.iter().map(|a| a.len).product()
    }
    /// True for a dimension of length zero (never produced by [`lower`]).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Splits a linear index into axis coordinates (row-major).
    pub fn decompose(&self, mut idx: u32, out: &mut Vec<u32>) {
        out.clear();
        out.resize(self.axes.len(), 0);
        for (i, a) in self.axes.iter().enumerate().rev() {
            out[i] = idx % a.len;
            idx /= a.len;
        }
    }
}

/// How one GEMM operand maps to a tensor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Operand {
    /// The tensor read (A, B) or written (C).
    pub tensor: Tensor,
    /// One affine coordinate per logical tensor dimension, canonical order
    /// (activations n, g, c, h, w; filter g, k, c, y, x).
    pub coords: [Affine; 5],
}

/// Whether and where an operand is contiguous along a GEMM dimension.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Contiguity {
    /// The GEMM dimension whose innermost axis walks the tensor's innermost memory dimension
    /// with unit step, if any.
    pub dim: Option<Dim>,
    /// The tensor's innermost logical dimension, as a letter.
    pub tensor_dim: char,
}

impl Operand {
    /// Element offset of the coordinates in memory, or `None` in the padding.
    pub fn offset(&self, p: &ConvProblem, coords: &[Vec<u32>; 4]) -> Option<u64> {
        let dims = p.logical_dims(self.tensor);
        let strides = p.strides(self.tensor);
        let mut off = 0u64;
        for d in 0..5 {
            let v = self.coords[d].eval(coords);
            if v < 0 || v >= dims[d] as i64 {
                return None;
            }
            off += v as u64 * strides[d];
        }
        Some(off)
    }

    /// Which GEMM dimension (of `dims_of_operand`) walks this tensor's contiguous memory.
    pub fn contiguity(
        &self,
        p: &ConvProblem,
        gemm: &Gemm,
        dims_of_operand: [Dim; 2],
    ) -> Contiguity {
        // The innermost tensor dimension longer than 1: dimensions of length 1 (a 1x1 filter's
        // y and x) have no extent, so the next one out is unit-stride in memory.
        let extents = p.logical_dims(self.tensor);
        let order = p.layout(self.tensor).order();
        let inner = order
            .iter()
            .rev()
            .map(|&d| d as usize)
            .find(|&d| extents[d] > 1)
            .unwrap_or(order[4] as usize);
        let letters = match self.tensor {
            Tensor::Filter => ['g', 'k', 'c', 'y', 'x'],
            _ => ['n', 'g', 'c', 'h', 'w'],
        };
        let dim = dims_of_operand.into_iter().find(|&d| {
            // Axes of length 1 never move: a unit step along the dimension moves the innermost
            // axis that is longer than 1.
            let axes = &gemm.dims[d as usize].axes;
            let last = axes
                .iter()
                .rposition(|a| a.len > 1)
                .unwrap_or(axes.len() - 1);
            self.coords[inner]
                .terms
                .iter()
                .any(|(r, c)| r.dim == d && r.pos == last && *c == 1)
        });
        Contiguity {
            dim,
            tensor_dim: letters[inner],
        }
    }
}

/// One implicit GEMM kernel of a lowered convolution.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Gemm {
    /// Consecutive from 0 within a problem.
    pub id: u32,
    /// G, M, N, K, indexed by [`Dim`].
    pub dims: [GemmDim; 4],
    /// A: indexed by (G, M, K).
    pub a: Operand,
    /// B: indexed by (G, K, N).
    pub b: Operand,
    /// C: indexed by (G, M, N); written.
    pub c: Operand,
}

impl Gemm {
    /// Length of a GEMM dimension.
    pub fn len(&self, d: Dim) -> u32 {
        self.dims[d as usize].len()
    }
    /// Rows.
    pub fn m_len(&self) -> u32 {
        self.len(Dim::M)
    }
    /// Columns.
    pub fn n_len(&self) -> u32 {
        self.len(Dim::N)
    }
    /// Reduction length.
    pub fn k_len(&self) -> u32 {
        self.len(Dim::K)
    }
    /// Batch (group) count.
    pub fn g_len(&self) -> u32 {
        self.len(Dim::G)
    }
    /// The three operands with the GEMM dimensions that index each (besides G).
    pub fn operands(&self) -> [(&Operand, [Dim; 2]); 3] {
        [
            (&self.a, [Dim::M, Dim::K]),
            (&self.b, [Dim::K, Dim::N]),
            (&self.c, [Dim::M, Dim::N]),
        ]
    }
}

/// A convolution as the sequence of kernels that computes it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Lowering {
    /// The problem lowered.
    pub problem: ConvProblem,
    /// Whether the written tensor must be zeroed before the GEMMs run, because some of its
    /// elements are written by no GEMM (backward data with stride > 1).
    pub zero_init: bool,
    /// The GEMMs, ids consecutive from 0.
    pub gemms: Vec<Gemm>,
    /// The layout transform these GEMMs are for: `None` for the problem as given; otherwise
    /// [`Self::problem`] is the channels-last twin that [`relayout`] derives.
    pub transform: Transform,
    /// The lowerings of the transforms that apply (`xf=nhwc`, `xf=nhwc_out`), built with the
    /// plain one so that legality and codegen borrow them like it.
    #[serde(skip)]
    pub twins: [Option<Box<Lowering>>; 2],
}

impl Lowering {
    /// The lowering whose GEMMs run the problem with layout transform `xf`: this one for
    /// `none`, else its twin, or `None` where `xf` does not apply ([`relayout::why_not`]).
    pub fn for_transform(&self, xf: Transform) -> Option<&Lowering> {
        match xf {
            _ if xf == self.transform => Some(self),
            Transform::None => None,
            _ if self.transform != Transform::None => None,
            _ => self.twins[xf as usize - 1].as_deref(),
        }
    }

    /// Total multiply-add work of the GEMMs, ×2 (≥ the problem's FLOPs: sub-GEMMs include
    /// padding).
    pub fn gemm_flops(&self) -> f64 {
        self.gemms
            .iter()
            .map(|g| {
                2.0 * g.g_len() as f64 * g.m_len() as f64 * g.n_len() as f64 * g.k_len() as f64
            })
            .sum()
    }
}

/// Builds the axis list of one GEMM dimension from `(name, len)` pairs.
fn dim(axes: &[(&'static str, u32)]) -> GemmDim {
    GemmDim {
        axes: axes.iter().map(|&(name, len)| Axis { name, len }).collect(),
    }
}

/// Finds an axis by name in a GEMM's dimensions. Names are unique within a GEMM by construction.
fn find(dims: &[GemmDim; 4], name: &str) -> AxisRef {
    for d in Dim::ALL {
        if let Some(pos) = dims[d as usize].axes.iter().position(|a| a.name == name) {
            return AxisRef { dim: d, pos };
        }
    }
    unreachable!("axis {name} is built by this module")
}

/// Whether channels are the innermost dimension of a tensor's layout (NHWC-like).
fn channels_last(p: &ConvProblem, t: Tensor) -> bool {
    p.layout(t).innermost() == 2
}

/// Lowers a problem to its GEMMs (with several groups a GEMM batch when a group has fewer
/// channels than the smallest tile: [`groups`]).
pub fn lower(p: &ConvProblem) -> Lowering {
    let mut l = lower_one(p);
    l.twins = relayout::twins(p);
    l
}

/// [`lower`] without the transforms' twins.
fn lower_one(p: &ConvProblem) -> Lowering {
    let mut l = match p.direction() {
        Direction::Fwd => single(p, fwd(p)),
        Direction::BwdWeight => single(p, bwd_weight(p)),
        Direction::BwdData => bwd_data::lower(p),
    };
    // Every sub-GEMM has the same M (the phases differ in K and N only), so one packing.
    let packs = l
        .gemms
        .first()
        .map_or(1, |g| groups::packed_groups(p, g.m_len()));
    if packs > 1 {
        l.gemms = std::mem::take(&mut l.gemms)
            .into_iter()
            .map(|g| groups::pack_groups(p, g, packs))
            .collect();
    }
    l
}

fn single(p: &ConvProblem, gemm: Gemm) -> Lowering {
    Lowering {
        problem: *p,
        zero_init: false,
        gemms: vec![gemm],
        transform: Transform::None,
        twins: [None, None],
    }
}

/// Input coordinates `h = o·stride + f·dilation − pad` of forward and backward weight.
fn input_coords(p: &ConvProblem, dims: &[GemmDim; 4]) -> [Affine; 5] {
    let s = p.sizes();
    let ax = |n: &str| find(dims, n);
    let spatial = |d: usize, o: &str, f: &str| {
        Affine::zero()
            .plus(ax(o), s.stride[d] as i64)
            .plus(ax(f), s.dilation[d] as i64)
            .add(-(s.pad[d] as i64))
    };
    [
        Affine::axis(ax("n")),
        Affine::axis(ax("g")),
        Affine::axis(ax("c")),
        spatial(0, "ho", "y"),
        spatial(1, "wo", "x"),
    ]
}

fn output_coords(dims: &[GemmDim; 4]) -> [Affine; 5] {
    let ax = |n: &str| Affine::axis(find(dims, n));
    [ax("n"), ax("g"), ax("k"), ax("ho"), ax("wo")]
}

fn filter_coords(dims: &[GemmDim; 4]) -> [Affine; 5] {
    let ax = |n: &str| Affine::axis(find(dims, n));
    [ax("g"), ax("k"), ax("c"), ax("y"), ax("x")]
}

/// The filter-tap axes (c, y, x), with c innermost when tensor `t` is channels-last so that
/// unit steps along the merged dimension walk memory.
fn cyx_axes(p: &ConvProblem, t: Tensor) -> GemmDim {
    let s = p.sizes();
    let (c, y, x) = (("c", p.c_per_group()), ("y", s.y), ("x", s.x));
    if channels_last(p, t) {
        dim(&[y, x, c])
    } else {
        dim(&[c, y, x])
    }
}

/// The GEMM of forward and backward weight: the same three tensor maps, with the operands in
/// the roles the direction gives them.
fn single_gemm(p: &ConvProblem, dims: [GemmDim; 4], roles: [Tensor; 3]) -> Gemm {
    let coords = |t: Tensor| match t {
        Tensor::Input => input_coords(p, &dims),
        Tensor::Filter => filter_coords(&dims),
        Tensor::Output => output_coords(&dims),
    };
    let [a, b, c] = roles.map(|tensor| Operand {
        tensor,
        coords: coords(tensor),
    });
    Gemm {
        id: 0,
        a,
        b,
        c,
        dims,
    }
}

/// Forward: C[k][n·ho·wo] = Σ_{c,y,x} W[k][c,y,x] · X[c,y,x][n·ho·wo].
fn fwd(p: &ConvProblem) -> Gemm {
    let s = p.sizes();
    let [ho, wo] = p.out_size();
    let dims = [
        dim(&[("g", s.groups)]),
        dim(&[("k", p.k_per_group())]),
        dim(&[("n", s.n), ("ho", ho), ("wo", wo)]),
        cyx_axes(p, Tensor::Input),
    ];
    single_gemm(p, dims, [Tensor::Filter, Tensor::Input, Tensor::Output])
}

/// Backward weight: dW[k][c,y,x] = Σ_{n,ho,wo} dY[k][n,ho,wo] · X[n,ho,wo][c,y,x].
fn bwd_weight(p: &ConvProblem) -> Gemm {
    let s = p.sizes();
    let [ho, wo] = p.out_size();
    let dims = [
        dim(&[("g", s.groups)]),
        dim(&[("k", p.k_per_group())]),
        cyx_axes(p, Tensor::Filter),
        dim(&[("n", s.n), ("ho", ho), ("wo", wo)]),
    ];
    single_gemm(p, dims, [Tensor::Output, Tensor::Input, Tensor::Filter])
}

#[cfg(test)]
mod tests;
