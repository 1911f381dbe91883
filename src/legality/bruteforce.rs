//! The brute-force check of a vector width: every vector access a kernel would make, one by one.
//! Slow and obviously right, so it is the judge of the analytic [`super::max_vector_width`] on
//! small problems.

use crate::lowering::{Dim, Gemm, Operand};
use crate::problem::ConvProblem;

/// One vector access that breaks a rule.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("vector of {width} at GEMM index {start} of {dim} (other axes {coords:?}): {what}")]
pub struct Violation {
    /// The width checked.
    pub width: u32,
    /// The vectorized dimension.
    pub dim: Dim,
    /// First index of the vector along it.
    pub start: u32,
    /// Axis coordinates of all four GEMM dimensions at the vector's first element.
    pub coords: [Vec<u32>; 4],
    /// Which rule fails.
    pub what: String,
}

/// Checks every width-`v` vector access of operand `op` (indexed by G and `op_dims`) along
/// `dim`: starts at every multiple of v, every value of the other axes. Returns the number of
/// vectors checked, or the first access that is not (consecutive, in bounds, aligned) or (all
/// padding).
pub fn check_vector_access(
    p: &ConvProblem,
    gemm: &Gemm,
    op: &Operand,
    op_dims: [Dim; 2],
    dim: Dim,
    v: u32,
) -> Result<u64, Box<Violation>> {
    let v = v.max(1);
    let len = gemm.len(dim);
    let fixed: Vec<Dim> = [Dim::G, op_dims[0], op_dims[1]]
        .into_iter()
        .filter(|&d| d != dim)
        .collect();
    let mut coords: [Vec<u32>; 4] = std::array::from_fn(|d| vec![0; gemm.dims[d].axes.len()]);
    let fixed_total: u64 = fixed.iter().map(|&d| gemm.len(d) as u64).product();
    let mut offsets: Vec<Option<u64>> = Vec::with_capacity(v as usize);
    let mut count = 0u64;
    for linear in 0..fixed_total {
        let mut rest = linear;
        for &d in fixed.iter().rev() {
            let l = gemm.len(d) as u64;
            gemm.dims[d as usize].decompose((rest % l) as u32, &mut coords[d as usize]);
            rest /= l;
        }
        let mut start = 0u32;
        while start < len {
            let violation = |what: String, coords: &[Vec<u32>; 4]| {
                Box::new(Violation {
                    width: v,
                    dim,
                    start,
                    coords: coords.clone(),
                    what,
                })
            };
            if start + v > len {
                gemm.dims[dim as usize].decompose(start, &mut coords[dim as usize]);
                return Err(violation(
                    format!("runs past the end of {dim} (length {len})"),
                    &coords,
                ));
            }
            offsets.clear();
            for i in 0..v {
                gemm.dims[dim as usize].decompose(start + i, &mut coords[dim as usize]);
                offsets.push(op.offset(p, &coords));
            }
            gemm.dims[dim as usize].decompose(start, &mut coords[dim as usize]);
            let inside = offsets.iter().filter(|o| o.is_some()).count();
            if inside == v as usize {
                let first = offsets[0].unwrap_or(0);
                for (i, o) in offsets.iter().enumerate() {
                    if *o != Some(first + i as u64) {
                        return Err(violation(
                            format!("not consecutive in memory: offsets {offsets:?}"),
                            &coords,
                        ));
                    }
                }
                if !first.is_multiple_of(v as u64) {
                    return Err(violation(
                        format!("first offset {first} is not a multiple of {v}"),
                        &coords,
                    ));
                }
            } else if inside != 0 {
                return Err(violation(
                    format!("mixes in-bounds elements and padding: offsets {offsets:?}"),
                    &coords,
                ));
            }
            count += 1;
            start += v;
        }
    }
    Ok(count)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lowering::lower;

    #[test]
    fn detects_each_kind_of_violation() {
        // NCHW fwd 1x1, pad 1 on W = 8: wo − 1 straddles 0 for widths ≥ 2.
        let p: ConvProblem = "conv -n 1 -c 2 -H 2 -W 8 -k 2 -y 1 -x 1 -q 1 -F 1"
            .parse()
            .unwrap();
        let l = lower(&p);
        let g = &l.gemms[0];
        assert!(check_vector_access(&p, g, &g.b, [Dim::K, Dim::N], Dim::N, 1).is_ok());
        let e = check_vector_access(&p, g, &g.b, [Dim::K, Dim::N], Dim::N, 2).unwrap_err();
        assert!(e.what.contains("mixes"), "{e}");
        // Along K (channels) the input is strided by H·W.
        let e = check_vector_access(&p, g, &g.b, [Dim::K, Dim::N], Dim::K, 2).unwrap_err();
        assert!(e.what.contains("not consecutive"), "{e}");
        // Output wo has length 10: width 4 runs past the end of a 10-wide row at start 8…
        // but N merges n·ho·wo = 20, so a 8-wide vector runs past N's end.
        let e = check_vector_access(&p, g, &g.c, [Dim::M, Dim::N], Dim::N, 8).unwrap_err();
        assert!(
            e.what.contains("runs past") || e.what.contains("not consecutive"),
            "{e}"
        );
    }

    #[test]
    fn misalignment_is_caught() {
        // Seed 000's shape: backward data, 1x1, pad 1. B reads the output gradient at
        // (htilda + 1, wtilda + 1): in bounds and consecutive along wtilda, but starting at odd
        // offsets, so width 2 is misaligned.
        let p: ConvProblem = "conv -n 1 -c 2 -H 4 -W 4 -k 2 -y 1 -x 1 -p 1 -q 1 -F 2"
            .parse()
            .unwrap();
        let l = lower(&p);
        let g = &l.gemms[0];
        assert!(check_vector_access(&p, g, &g.b, [Dim::K, Dim::N], Dim::N, 1).is_ok());
        let e = check_vector_access(&p, g, &g.b, [Dim::K, Dim::N], Dim::N, 2).unwrap_err();
        assert!(e.what.contains("not a multiple of 2"), "{e}");
        // C (the input gradient) is written at (htilda, wtilda): 16 consecutive pixels.
        assert_eq!(
            check_vector_access(&p, g, &g.c, [Dim::M, Dim::N], Dim::N, 4),
            Ok(2 * 4)
        );
    }
}
