//! Random small problems for property tests (lowering, legality): every direction and layout,
//! strides 1–3, dilations 1–2, paddings 0–3 (so also padding ≥ filter), groups 1–2, filters up to
//! 4 (so also filter < stride).

use super::{ConvProblem, ConvSizes, DType, Direction, Layout};
use proptest::prelude::*;

/// Problems with channels per group below `max_channels` and images below `max_image`.
pub(crate) fn small_problem(
    max_channels: u32,
    max_image: u32,
) -> impl Strategy<Value = ConvProblem> {
    let dir = prop_oneof![
        Just(Direction::Fwd),
        Just(Direction::BwdData),
        Just(Direction::BwdWeight)
    ];
    let act = prop_oneof![Just(Layout::NGCHW), Just(Layout::NHWGC)];
    let fil = prop_oneof![Just(Layout::GKCYX), Just(Layout::GKYXC)];
    (
        (1u32..3, 1..max_channels, 1..max_channels, 1u32..3),
        (1..max_image, 1..max_image, 1u32..5, 1u32..5),
        ([0u32..4, 0u32..4], [1u32..4, 1u32..4], [1u32..3, 1u32..3]),
        (dir, act.clone(), fil, act),
    )
        .prop_filter_map(
            "invalid problem",
            |((n, cg, kg, g), (h, w, y, x), (pad, stride, dilation), (d, il, fl, ol))| {
                let sizes = ConvSizes {
                    n,
                    c: cg * g,
                    h,
                    w,
                    k: kg * g,
                    y,
                    x,
                    pad,
                    stride,
                    dilation,
                    groups: g,
                };
                ConvProblem::new(sizes, d, DType::F32, il, fl, ol).ok()
            },
        )
}
