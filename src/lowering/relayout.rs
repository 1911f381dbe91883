//! Layout transforms around the GEMMs (`xf=nhwc|nhwc_out`): which tensors a plan copies to
//! channels-last in the workspace, and the problem the GEMMs then solve.
//!
//! # Why a transform, not transposed tiles
//!
//! A channels-first (NCHW) activation is contiguous along w. In the implicit GEMM that is the
//! innermost axis of the pixel dimension for the output and of the filter taps for the input,
//! and a vector along it straddles the padding or starts misaligned at every tap `x ≠ pad`
//! (the width analysis caps it at 1); its tiles are MN-major. Transposed tiles of any size
//! (`ldmatrix.trans`, and for `wgmma` the 16- and 32-row atoms of the 32- and 64-byte
//! swizzles, `fit::wgmma_mn_swizzle`) fix the tile shapes but not the loads, which stay
//! scalar: they serve unpadded NCHW (a 1×1 forward's pixels) and the MN-major operands of
//! NHWC backward passes. Copying the tensor to channels-last first fixes both for every
//! shape, direction and type at once — the GEMM is then exactly the NHWC problem, with 16-byte vectors along
//! channels, TMA im2col and `wgmma` — for one extra read and write of the tensor, which is what
//! cuDNN does for NCHW on tensor cores. The cost model charges that traffic, so the search
//! picks the transform only where the faster GEMM pays for it.
//!
//! Every transform here is a batched 2-D transpose: `[batch][rows][cols]` with `cols`
//! contiguous becomes `[batch][cols][rows]` (NGCHW → NHWGC: batch n, rows g·c, cols h·w;
//! GKCYX → GKYXC: batch g·k, rows c, cols y·x). A tensor whose rows or cols are 1 has the same
//! bytes in both layouts: the twin problem reorders it and no launch copies it.

use super::Lowering;
use crate::config::Transform;
use crate::problem::{ConvProblem, Layout, LayoutKind, Tensor};

/// One tensor a plan transposes: `[batch][rows][cols]` (cols contiguous) in the source,
/// `[batch][cols][rows]` in the destination.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Relayout {
    /// The tensor.
    pub tensor: Tensor,
    /// Outer extent, the same in both layouts.
    pub batch: u32,
    /// Extent of the channel-like group (channels-first: the slower of the two).
    pub rows: u32,
    /// Extent of the spatial group (contiguous in the channels-first layout).
    pub cols: u32,
}

impl Relayout {
    /// Elements of the tensor.
    pub fn elems(&self) -> u64 {
        self.batch as u64 * self.rows as u64 * self.cols as u64
    }
}

/// The channels-last layout of the same kind as `l`, when `l` is the channels-first one that
/// a batched transpose turns into it.
fn channels_last_of(l: Layout) -> Option<Layout> {
    match l.kind() {
        LayoutKind::Activation if l == Layout::NGCHW => Some(Layout::NHWGC),
        LayoutKind::Filter if l == Layout::GKCYX => Some(Layout::GKYXC),
        _ => None,
    }
}

/// Whether a plan with `xf` reorders tensor `t` of `p` (whatever its bytes).
fn reorders(p: &ConvProblem, xf: Transform, t: Tensor) -> bool {
    let written = t == p.direction().written();
    let asked = match xf {
        Transform::None => false,
        Transform::Nhwc => !written,
        Transform::NhwcOut => true,
    };
    asked && channels_last_of(p.layout(t)).is_some()
}

/// The transpose of tensor `t` of `p` (its channels-first shape).
fn relayout_of(p: &ConvProblem, t: Tensor) -> Relayout {
    let d = p.logical_dims(t);
    match t {
        Tensor::Filter => Relayout {
            tensor: t,
            batch: d[0] * d[1],
            rows: d[2],
            cols: d[3] * d[4],
        },
        _ => Relayout {
            tensor: t,
            batch: d[0],
            rows: d[1] * d[2],
            cols: d[3] * d[4],
        },
    }
}

/// The problem the GEMMs of `xf` solve: `p` with the reordered tensors channels-last.
pub fn twin_problem(p: &ConvProblem, xf: Transform) -> ConvProblem {
    let [i, f, o] = Tensor::ALL.map(|t| {
        let l = p.layout(t);
        if reorders(p, xf, t) {
            channels_last_of(l).unwrap_or(l)
        } else {
            l
        }
    });
    p.with_layouts(i, f, o)
}

/// The transposes a plan with `xf` runs (in tensor order; the written tensor's, if any, runs
/// after the GEMMs), leaving out tensors whose bytes do not change.
pub fn relayouts(p: &ConvProblem, xf: Transform) -> Vec<Relayout> {
    Tensor::ALL
        .into_iter()
        .filter(|&t| reorders(p, xf, t))
        .map(|t| relayout_of(p, t))
        .filter(|r| r.rows > 1 && r.cols > 1)
        .collect()
}

/// Why `xf` does not apply to `p` (it would change no byte, or no more than a smaller
/// transform), or `None` when it does.
pub fn why_not(p: &ConvProblem, xf: Transform) -> Option<String> {
    let moved = |xf| relayouts(p, xf).len();
    match xf {
        Transform::None => None,
        Transform::Nhwc if moved(Transform::Nhwc) == 0 => Some(format!(
            "no tensor the GEMMs read is channels-first with more than one channel and pixel \
             (input {}, filter {}, output {}; written: {})",
            p.layout(Tensor::Input),
            p.layout(Tensor::Filter),
            p.layout(Tensor::Output),
            p.direction().written().name()
        )),
        Transform::NhwcOut if moved(Transform::NhwcOut) == moved(Transform::Nhwc) => Some(format!(
            "the written tensor ({}, {}) needs no transpose: xf=nhwc is the same plan",
            p.direction().written().name(),
            p.layout(p.direction().written())
        )),
        _ => None,
    }
}

/// The lowerings of the transforms that apply to `p`, indexed by `xf as usize - 1`.
pub(super) fn twins(p: &ConvProblem) -> [Option<Box<Lowering>>; 2] {
    [Transform::Nhwc, Transform::NhwcOut].map(|xf| {
        why_not(p, xf).is_none().then(|| {
            let mut l = super::lower_one(&twin_problem(p, xf));
            l.transform = xf;
            Box::new(l)
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lowering::lower;

    fn p(line: &str) -> ConvProblem {
        line.parse().unwrap()
    }

    #[test]
    fn nchw_forward_transposes_input_and_filter() {
        let q = p("convfp16 -n 2 -c 8 -H 5 -W 7 -k 16 -y 3 -x 3 -p 1 -q 1 -F 1");
        let r = relayouts(&q, Transform::Nhwc);
        assert_eq!(
            r,
            [
                Relayout {
                    tensor: Tensor::Input,
                    batch: 2,
                    rows: 8,
                    cols: 35
                },
                Relayout {
                    tensor: Tensor::Filter,
                    batch: 16,
                    rows: 8,
                    cols: 9
                }
            ]
        );
        let t = twin_problem(&q, Transform::Nhwc);
        assert_eq!(t.layout(Tensor::Input), Layout::NHWGC);
        assert_eq!(t.layout(Tensor::Output), Layout::NGCHW);
        assert_eq!(
            twin_problem(&q, Transform::NhwcOut).layout(Tensor::Output),
            Layout::NHWGC
        );
        let l = lower(&q);
        let tw = l.for_transform(Transform::Nhwc).unwrap();
        assert_eq!(tw.problem, t);
        assert_eq!(tw.transform, Transform::Nhwc);
        assert!(l.for_transform(Transform::NhwcOut).is_some());
    }

    #[test]
    fn nothing_to_move_is_refused_with_a_reason() {
        let q = p("convbfp16 -n 2 -c 8 -H 5 -W 7 -k 16 -y 3 -x 3 -F 1 --layout NHWC");
        assert!(why_not(&q, Transform::Nhwc)
            .unwrap()
            .contains("channels-first"));
        assert!(lower(&q).for_transform(Transform::Nhwc).is_none());
        // 1×1 filter: KCYX and KYXC are the same bytes; the input still moves.
        let q = p("convfp16 -n 2 -c 8 -H 5 -W 7 -k 16 -y 1 -x 1 -F 2");
        let r = relayouts(&q, Transform::Nhwc);
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].tensor, Tensor::Output);
        assert!(why_not(&q, Transform::NhwcOut).is_none());
    }
}
