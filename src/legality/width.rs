//! The widest legal vector access of one operand along one GEMM dimension, computed from the
//! affine index maps alone (no enumeration), as rocMLIR pushes widths through its transforms.
//!
//! A vector of width v covers GEMM indices `s … s+v−1` along the dimension, `s` a multiple of v,
//! every other axis fixed. It is legal when its v elements are consecutive in memory and all in
//! bounds, or all in the padding, and its first element's offset is a multiple of v.
//!
//! The analysis:
//! 1. Drop axes of length 1 (always 0). Starting from the innermost axis of the dimension, fuse
//!    outward while the next axis continues the inner one exactly: its memory step is
//!    `len(inner) ×` the inner step, and on every coordinate that can leave its tensor (padding)
//!    its coefficient is `len(inner) ×` the inner one. The fused run `F` of length `L` is then
//!    one affine variable of every coordinate and of the offset. v must divide L (a vector never
//!    spans a non-fusable boundary), which also makes v divide the GEMM dimension.
//! 2. `F`'s memory step must be exactly 1 (a stride on the contiguous dimension caps at 1).
//! 3. For each coordinate that can leave `[0, D)` and moves with `F`: its coefficient must be 1,
//!    and every vector start must sit on a multiple of v relative to each crossed boundary:
//!    v divides `gcd(offset, other coefficients)` if it can go below 0, and
//!    `gcd(D − offset, other coefficients)` if it can reach D (this is the pad rule
//!    `gcd(L, L−l)` generalised to strides, dilations and slices).
//! 4. Alignment: v divides the gcd of the constant part of the memory offset and the memory
//!    steps of every other axis.
//!
//! Every step only states sufficient conditions, so the result is sound; the brute-force checker
//! in [`super::bruteforce`] tests it, and measures how often it is stricter than needed.

use crate::lowering::{AxisRef, Dim, Gemm, Operand};
use crate::problem::{ConvProblem, Tensor};

/// The largest legal power-of-two vector width and the condition that stops it growing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VectorWidth {
    /// Every power of two up to this one is legal (widths are powers of two).
    pub width: u32,
    /// Why no wider vector is legal, in words (for rejection messages).
    pub limit: String,
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// Largest power of two dividing `x`, with 0 (no constraint) mapped to `cap`.
fn pow2_part(x: u64, cap: u32) -> u32 {
    if x == 0 {
        cap
    } else {
        (1u64 << x.trailing_zeros()).min(cap as u64) as u32
    }
}

/// Letters of a tensor's canonical logical dimensions.
pub(crate) fn dim_letters(t: Tensor) -> [char; 5] {
    match t {
        Tensor::Filter => ['g', 'k', 'c', 'y', 'x'],
        _ => ['n', 'g', 'c', 'h', 'w'],
    }
}

/// Coefficient of an axis in one affine coordinate.
fn coef(op: &Operand, j: usize, a: AxisRef) -> i64 {
    op.coords[j]
        .terms
        .iter()
        .filter(|(r, _)| *r == a)
        .map(|(_, c)| c)
        .sum()
}

/// Computes the largest legal vector width (a power of two ≤ `cap`) of operand `op` of `gemm`
/// along GEMM dimension `dim`. `cap` must be a power of two.
pub fn max_vector_width(
    p: &ConvProblem,
    gemm: &Gemm,
    op: &Operand,
    dim: Dim,
    cap: u32,
) -> VectorWidth {
    let tensor = op.tensor;
    let tname = tensor.name();
    let letters = dim_letters(tensor);
    let extents = p.logical_dims(tensor);
    let strides = p.strides(tensor);
    let axis_len = |a: AxisRef| gemm.dims[a.dim as usize].axes[a.pos].len;
    let axis_name = |a: AxisRef| gemm.dims[a.dim as usize].axes[a.pos].name;
    let bounded: Vec<bool> = (0..5)
        .map(|j| op.coords[j].may_leave(extents[j], &gemm.dims))
        .collect();
    let sigma = |a: AxisRef| -> i64 { (0..5).map(|j| strides[j] as i64 * coef(op, j, a)).sum() };
    let one = |limit: String| VectorWidth { width: 1, limit };

    // 1. The innermost run of axes (length > 1) that behaves as one variable.
    let axes: Vec<AxisRef> = (0..gemm.dims[dim as usize].axes.len())
        .rev()
        .map(|pos| AxisRef { dim, pos })
        .filter(|&a| axis_len(a) > 1)
        .collect();
    let Some(&inner) = axes.first() else {
        return one(format!("GEMM dimension {dim} has length 1"));
    };
    let step = sigma(inner);
    let mut run_len = axis_len(inner) as i64;
    let mut fused = vec![inner];
    for &a in &axes[1..] {
        let continues = sigma(a) == run_len * step
            && (0..5).all(|j| !bounded[j] || coef(op, j, a) == run_len * coef(op, j, inner));
        if !continues {
            break;
        }
        run_len *= axis_len(a) as i64;
        fused.push(a);
    }

    // 2. Unit memory step.
    if step != 1 {
        let inner_dim = p.layout(tensor).innermost();
        let c = coef(op, inner_dim, inner);
        let why = if c != 0 && c != 1 {
            format!(
                "stride {c} on the contiguous dimension {} of {tname}",
                letters[inner_dim]
            )
        } else if c == 0 {
            format!(
                "axis {} does not walk the contiguous dimension {} of {tname} (memory step {step})",
                axis_name(inner),
                letters[inner_dim]
            )
        } else {
            format!(
                "axis {} moves {tname} by {step} elements per step, not 1",
                axis_name(inner)
            )
        };
        return one(why);
    }

    // Constraints "v divides X", each with its reason; the first with the smallest power of
    // two names the limit.
    let mut constraints: Vec<(u64, String)> = Vec::new();

    // 3. Padding: coordinates that can leave the tensor and move with the run.
    let is_fused = |a: AxisRef| fused.contains(&a);
    for j in 0..5 {
        let beta = coef(op, j, inner);
        if !bounded[j] || beta == 0 {
            continue;
        }
        let l = letters[j];
        if beta != 1 {
            return one(format!(
                "coordinate {l} of {tname} moves by {beta} per element and can leave [0, {})",
                extents[j]
            ));
        }
        let affine = &op.coords[j];
        let mut others = 0u64;
        let (mut lo, mut hi) = (affine.offset, affine.offset);
        for (r, c) in &affine.terms {
            let span = (axis_len(*r) as i64 - 1) * c;
            if span < 0 {
                lo += span;
            } else {
                hi += span;
            }
            if !is_fused(*r) && axis_len(*r) > 1 {
                others = gcd(others, c.unsigned_abs());
            }
        }
        if lo < 0 {
            let g = gcd(affine.offset.unsigned_abs(), others);
            constraints.push((
                g,
                format!(
                    "padding: coordinate {l} of {tname} goes below 0 and vector starts there are multiples of only {}",
                    pow2_part(g, cap)
                ),
            ));
        }
        if hi >= extents[j] as i64 {
            let g = gcd((extents[j] as i64 - affine.offset).unsigned_abs(), others);
            constraints.push((
                g,
                format!(
                    "padding: coordinate {l} of {tname} runs past its extent {} and vector ends there are multiples of only {}",
                    extents[j],
                    pow2_part(g, cap)
                ),
            ));
        }
    }

    // The run length.
    let names: Vec<&str> = fused.iter().rev().map(|&a| axis_name(a)).collect();
    constraints.push((
        run_len as u64,
        format!(
            "the contiguous run along {} is {run_len} elements",
            names.join("·")
        ),
    ));

    // 4. Alignment of the first element.
    let mut align = (0..5)
        .map(|j| strides[j] as i64 * op.coords[j].offset)
        .sum::<i64>()
        .unsigned_abs();
    for j in 0..5 {
        for (r, _) in &op.coords[j].terms {
            if !is_fused(*r) && axis_len(*r) > 1 {
                align = gcd(align, sigma(*r).unsigned_abs());
            }
        }
    }
    constraints.push((
        align,
        format!(
            "alignment: the first element's offset in {tname} is a multiple of only {}",
            pow2_part(align, cap)
        ),
    ));

    let width = constraints
        .iter()
        .map(|(x, _)| pow2_part(*x, cap))
        .min()
        .unwrap_or(cap)
        .min(cap);
    let limit = constraints
        .into_iter()
        .find(|(x, _)| pow2_part(*x, cap) == width)
        .map(|(_, why)| why)
        .unwrap_or_else(|| format!("capped at {cap} elements"));
    VectorWidth { width, limit }
}

/// The GEMM dimension an operand is vectorized along, and its largest legal width there.
///
/// The dimension is the one [`Operand::contiguity`] names, because that is the one the code
/// generator vectorizes; `None` when it names none (width 1), with the reason taken from the
/// analysis of the dimension whose innermost non-unit axis does move the contiguous tensor
/// dimension (e.g. "stride 2 on the contiguous dimension w of input").
pub fn vector_dim(
    p: &ConvProblem,
    gemm: &Gemm,
    op: &Operand,
    dims: [Dim; 2],
    cap: u32,
) -> (Option<Dim>, VectorWidth) {
    if let Some(d) = op.contiguity(p, gemm, dims).dim {
        return (Some(d), max_vector_width(p, gemm, op, d, cap));
    }
    let inner = p.layout(op.tensor).innermost();
    let walks = |d: Dim| {
        let axes = &gemm.dims[d as usize].axes;
        (0..axes.len())
            .rev()
            .find(|&pos| axes[pos].len > 1)
            .is_some_and(|pos| coef(op, inner, AxisRef { dim: d, pos }) != 0)
    };
    let limit = match dims.into_iter().find(|&d| walks(d)) {
        Some(d) => max_vector_width(p, gemm, op, d, cap).limit,
        None => format!(
            "no GEMM dimension walks the contiguous dimension {} of {}",
            dim_letters(op.tensor)[inner],
            op.tensor.name()
        ),
    };
    (None, VectorWidth { width: 1, limit })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lowering::lower;

    fn problem(line: &str) -> ConvProblem {
        line.parse().unwrap_or_else(|e| panic!("{line}: {e}"))
    }

    #[test]
    fn nhwc_forward_with_three_channels_is_scalar_on_the_input() {
        let p =
            problem("convfp16 -n 2 -c 3 -H 8 -W 8 -k 16 -y 3 -x 3 -p 1 -q 1 -F 1 --layout NHWC");
        let l = lower(&p);
        let g = &l.gemms[0];
        // B is the input, contiguous along K (y, x, c with c innermost).
        let c = g.b.contiguity(&p, g, [Dim::K, Dim::N]);
        assert_eq!(c.dim, Some(Dim::K));
        let w = max_vector_width(&p, g, &g.b, Dim::K, 16);
        assert_eq!(w.width, 1, "{}", w.limit);
        assert!(w.limit.contains("3 elements"), "{}", w.limit);
    }

    #[test]
    fn stride_on_contiguous_dimension_caps_at_one() {
        let p = problem("conv -n 2 -c 8 -H 16 -W 16 -k 8 -y 1 -x 1 -u 2 -v 2 -F 1");
        let l = lower(&p);
        let g = &l.gemms[0];
        let w = max_vector_width(&p, g, &g.b, Dim::N, 16);
        assert_eq!(w.width, 1);
        assert_eq!(w.limit, "stride 2 on the contiguous dimension w of input");
    }

    #[test]
    fn unpadded_nchw_forward_output_is_wide() {
        let p = problem("conv -n 2 -c 8 -H 16 -W 16 -k 8 -y 1 -x 1 -F 1");
        let l = lower(&p);
        let g = &l.gemms[0];
        // 1x1, no padding: ho and wo fuse into one run of 256 pixels.
        assert_eq!(max_vector_width(&p, g, &g.c, Dim::N, 16).width, 16);
        assert_eq!(max_vector_width(&p, g, &g.b, Dim::N, 16).width, 16);
        // Along M (k) the output is not contiguous.
        assert_eq!(max_vector_width(&p, g, &g.c, Dim::M, 16).width, 1);
    }

    #[test]
    fn padding_caps_by_pad_alignment() {
        // pad 2 on W = 16: starts at -2, so vectors of 2 stay uniform, 4 would straddle 0.
        let p = problem("conv -n 1 -c 4 -H 4 -W 16 -k 4 -y 1 -x 1 -p 0 -q 2 -F 1");
        let l = lower(&p);
        let g = &l.gemms[0];
        let w = max_vector_width(&p, g, &g.b, Dim::N, 16);
        assert_eq!(w.width, 2, "{}", w.limit);
        assert!(w.limit.starts_with("padding"), "{}", w.limit);
    }
}
