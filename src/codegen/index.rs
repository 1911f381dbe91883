//! Operand addressing in the kernels: a GEMM index along one dimension → its axes (constant
//! div/mod) → the affine tensor coordinates → bounds checks → element offset, all constants
//! baked in from the lowering. It is [`Operand::offset`] emitted as IR, split per GEMM
//! dimension so that the part that does not change inside the K loop is computed once.
//!
//! Offsets are i32 and wrap: every in-bounds offset is below 2^31, so modular arithmetic gives
//! it exactly whatever the intermediate values; an out-of-bounds offset is replaced by 0 (a
//! valid address) before anyone dereferences it.

use super::builder::Kb;
use crate::lowering::{Dim, Gemm, GemmDim, Operand};
use crate::problem::ConvProblem;
use inkwell::values::IntValue;

/// How one operand (A, B or C) of one GEMM is addressed.
pub(crate) struct Addressing<'l> {
    op: &'l Operand,
    dims: &'l [GemmDim; 4],
    extent: [u32; 5],
    stride: [i64; 5],
    /// Logical dimensions whose coordinate can leave the tensor (padding): checked.
    check: [bool; 5],
}

/// What one GEMM dimension's index contributes to an operand's address.
pub(crate) struct Part<'ctx> {
    /// Σ stride · coordinate contribution.
    lin: IntValue<'ctx>,
    /// Raw coordinate contribution of each checked logical dimension.
    raw: [Option<IntValue<'ctx>>; 5],
    /// `index < length`, when the index can run past the GEMM edge.
    in_range: Option<IntValue<'ctx>>,
}

impl<'l> Addressing<'l> {
    /// The addressing of `op`, an operand of `gemm` in problem `p`.
    pub fn new(p: &ConvProblem, gemm: &'l Gemm, op: &'l Operand) -> Self {
        let extent = p.logical_dims(op.tensor);
        let stride = p.strides(op.tensor).map(|s| s as i64);
        let check = std::array::from_fn(|t| op.coords[t].may_leave(extent[t], &gemm.dims));
        Addressing {
            op,
            dims: &gemm.dims,
            extent,
            stride,
            check,
        }
    }

    /// The contribution of index `idx` along GEMM dimension `d`. `edge` says that `idx` may be
    /// ≥ the dimension's length (a partial tile): then the part carries that check too, and the
    /// axes decomposed from such an index are never used unchecked.
    pub fn part<'ctx>(
        &self,
        kb: &Kb<'_, 'ctx>,
        d: Dim,
        idx: IntValue<'ctx>,
        edge: bool,
    ) -> Part<'ctx> {
        let axes = &self.dims[d as usize].axes;
        // Axis values, outermost first; only those some coordinate uses are emitted.
        let used = |pos: usize| {
            self.op
                .coords
                .iter()
                .any(|a| a.terms.iter().any(|(r, _)| r.dim == d && r.pos == pos))
        };
        let mut inner = 1u32;
        let mut value = vec![None; axes.len()];
        for pos in (0..axes.len()).rev() {
            if used(pos) {
                let q = kb.udivc(idx, inner);
                // The outermost axis needs no modulo: idx < len (or the part is invalid).
                value[pos] = Some(if pos == 0 {
                    q
                } else {
                    kb.uremc(q, axes[pos].len)
                });
            }
            inner = inner.saturating_mul(axes[pos].len);
        }
        // Linear offset: Σ_axis (Σ_t coef · stride_t) · axis.
        let mut lin = kb.c(0);
        for (pos, v) in value.iter().enumerate() {
            let Some(v) = *v else { continue };
            let w: i64 = (0..5)
                .map(|t| {
                    self.op.coords[t]
                        .terms
                        .iter()
                        .filter(|(r, _)| r.dim == d && r.pos == pos)
                        .map(|(_, c)| c * self.stride[t])
                        .sum::<i64>()
                })
                .sum();
            if w != 0 {
                lin = kb.add(lin, kb.mulc(v, w));
            }
        }
        let raw = std::array::from_fn(|t| {
            if !self.check[t] {
                return None;
            }
            let mut acc: Option<IntValue<'ctx>> = None;
            for (r, c) in &self.op.coords[t].terms {
                if r.dim != d {
                    continue;
                }
                let v =
                    value[r.pos].unwrap_or_else(|| panic!("axis {} of {d} not decomposed", r.pos));
                let term = kb.mulc(v, *c);
                acc = Some(match acc {
                    None => term,
                    Some(a) => kb.add(a, term),
                });
            }
            acc
        });
        let in_range = edge.then(|| kb.ultc(idx, self.dims[d as usize].len()));
        Part { lin, raw, in_range }
    }

    /// Combines the parts of every GEMM dimension the operand uses into `(valid, offset)`:
    /// `valid` is i1 (in the tensor and inside the GEMM), `offset` the element offset, 0 when
    /// not valid.
    pub fn resolve<'ctx>(
        &self,
        kb: &Kb<'_, 'ctx>,
        parts: &[&Part<'ctx>],
    ) -> (IntValue<'ctx>, IntValue<'ctx>) {
        let base: i64 = (0..5)
            .map(|t| self.op.coords[t].offset * self.stride[t])
            .sum();
        // i32 wrapping is exact for in-bounds results (module doc); keep the low 32 bits.
        let mut off = kb.c(base as i32 as i64);
        for p in parts {
            off = kb.add(off, p.lin);
        }
        let mut conds: Vec<IntValue<'ctx>> = parts.iter().filter_map(|p| p.in_range).collect();
        for t in 0..5 {
            if !self.check[t] {
                continue;
            }
            let mut c = kb.c(self.op.coords[t].offset);
            for p in parts {
                if let Some(r) = p.raw[t] {
                    c = kb.add(c, r);
                }
            }
            conds.push(kb.ultc(c, self.extent[t]));
        }
        let valid = kb.all(&conds);
        if conds.is_empty() {
            return (valid, off);
        }
        (valid, kb.seli(valid, off, kb.c(0)))
    }
}
