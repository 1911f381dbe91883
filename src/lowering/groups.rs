//! Several groups in one block tile (CUTLASS 2.x grouped conv's "multiple groups per CTA"), as
//! a rewrite of a lowered GEMM: a grouped convolution with few channels per group wastes most
//! of a tile along M (8 output channels a group in a 64-row tile) and reads each pixel in
//! 16-byte pieces, one group at a time. Packing `P` consecutive groups into one GEMM batch
//! makes M, and the reduction or N dimension that carries the other channel, `P` times longer:
//!
//! - the batch axis `g` becomes `g / P`; every channel axis (`c` or `k`) of M, N and K gets a
//!   group axis of length `P` just outside it, so `(group, channel)` stays one contiguous run
//!   in channels-last memory (vectors span groups);
//! - an operand indexed by one packed dimension reads group `P·g + that axis`;
//! - an operand indexed by two (the filter in fwd and bwd-data, dW in bwd-weight) is
//!   block-diagonal: its group comes from the first, and the channel coordinate that the second
//!   indexes is shifted by `extent · (second − first)`, which leaves `[0, extent)` unless the
//!   two group axes agree. Off the diagonal the filter is then padding (loads read zero) and dW
//!   is outside its tensor (stores are skipped): no new index machinery, the same checks that
//!   handle spatial padding.
//!
//! The diagonal costs `P×` the multiply-adds; packing is chosen only until the packed M fills
//! the smallest matrix tile, where these memory-bound problems gain more from whole-sector
//! loads and fewer, fuller tiles than they lose. Depthwise (one channel a group) is the same
//! code with the largest `P`.

use super::{Affine, Axis, AxisRef, Dim, Gemm, Operand};
use crate::problem::{ConvProblem, Tensor};

/// The M extent that packing aims for: the smallest block tile (one 16-row matrix fragment).
const TARGET_M: u32 = 16;

/// Groups packed into one GEMM batch for `p` whose M carries `m_channels` channels a group: the
/// largest divisor of the group count up to `ceil(TARGET_M / m_channels)` ([`TARGET_M`]); 1 (no
/// packing) when M is already that long.
pub fn packed_groups(p: &ConvProblem, m_channels: u32) -> u32 {
    let groups = p.sizes().groups;
    if groups == 1 || m_channels >= TARGET_M {
        return 1;
    }
    let want = TARGET_M.div_ceil(m_channels);
    let divisors = (1..=groups.min(want)).filter(|d| groups.is_multiple_of(*d));
    divisors.max().unwrap_or(1)
}

/// Name of the group axis inserted into GEMM dimension `d`.
fn group_axis_name(d: Dim) -> &'static str {
    match d {
        Dim::M => "gm",
        Dim::N => "gn",
        _ => "gk",
    }
}

/// Rewrites `gemm` of `p` to compute `packs` groups per batch (see the module doc). `packs`
/// must divide the group count.
pub fn pack_groups(p: &ConvProblem, mut gemm: Gemm, packs: u32) -> Gemm {
    if packs <= 1 {
        return gemm;
    }
    let groups = p.sizes().groups;
    debug_assert!(groups.is_multiple_of(packs));
    gemm.dims[Dim::G as usize].axes[0].len = groups / packs;
    // Insert a group axis before the channel axis of M, N and K.
    let mut inserted: [Option<usize>; 4] = [None; 4];
    for d in [Dim::M, Dim::N, Dim::K] {
        let axes = &mut gemm.dims[d as usize].axes;
        if let Some(pos) = axes.iter().position(|a| a.name == "c" || a.name == "k") {
            axes.insert(
                pos,
                Axis {
                    name: group_axis_name(d),
                    len: packs,
                },
            );
            inserted[d as usize] = Some(pos);
        }
    }
    let g_dim = AxisRef {
        dim: Dim::G,
        pos: 0,
    };
    let (a, b, c) = (gemm.a.clone(), gemm.b.clone(), gemm.c.clone());
    let extents = |t: Tensor| p.logical_dims(t);
    let rewrite = |op: Operand, dims: [Dim; 2]| -> Operand {
        let mut op = op;
        // Shift the positions of existing terms past each inserted axis.
        for coord in op.coords.iter_mut() {
            for (r, _) in coord.terms.iter_mut() {
                if let Some(pos) = inserted[r.dim as usize] {
                    if r.dim != Dim::G && r.pos >= pos {
                        r.pos += 1;
                    }
                }
            }
        }
        let group_of = |d: Dim| inserted[d as usize].map(|pos| AxisRef { dim: d, pos });
        let packed: Vec<(Dim, AxisRef)> = dims
            .iter()
            .filter_map(|&d| group_of(d).map(|a| (d, a)))
            .collect();
        let gi = if op.tensor == Tensor::Filter { 0 } else { 1 };
        let Some(&(_, first)) = packed.first() else {
            return op;
        };
        op.coords[gi] = Affine::zero().plus(g_dim, packs as i64).plus(first, 1);
        if let Some(&(d2, second)) = packed.get(1) {
            // The channel coordinate the second dimension indexes: the one that reads its
            // channel axis (now just inside the group axis).
            let channel = AxisRef {
                dim: d2,
                pos: second.pos + 1,
            };
            let ext = extents(op.tensor);
            let t = (0..5)
                .find(|&t| op.coords[t].terms.iter().any(|(r, _)| *r == channel))
                .expect("a packed dimension's channel axis indexes its operand");
            let e = ext[t] as i64;
            op.coords[t] = op.coords[t].clone().plus(second, e).plus(first, -e);
        }
        op
    };
    gemm.a = rewrite(a, [Dim::M, Dim::K]);
    gemm.b = rewrite(b, [Dim::K, Dim::N]);
    gemm.c = rewrite(c, [Dim::M, Dim::N]);
    gemm
}
