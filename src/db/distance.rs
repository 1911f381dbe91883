//! How far apart two problems are for the nearest-tuned-problem search: the one formula that
//! both the index (per-entry parts, computed when an entry is loaded) and the lookup use. Kept
//! apart from both so the database file and the lookup depend on it, not on each other.

use crate::problem::ConvSizes;

/// Penalty for each differing filter size, stride, dilation or group count: these change the
/// GEMM's shape and the access pattern, so such a neighbour ranks behind one that differs by
/// 2^10 in a single size.
pub const STRUCTURE_PENALTY: f64 = 10.0;
/// Penalty for each differing padding: it mostly decides vector-load legality, which the
/// config check verifies anyway.
pub const PAD_PENALTY: f64 = 2.0;
/// How far a tuned problem is from the one asked for: Σ |log2 a − log2 b| over n, c, k, H, W (a
/// factor 2 in one size costs 1), plus [`STRUCTURE_PENALTY`] for each of y, x, stride h/w,
/// dilation h/w and groups that differ, plus [`PAD_PENALTY`] for each differing padding.
/// Only problems of one direction, type and layouts are compared at all.
pub fn distance(a: &ConvSizes, b: &ConvSizes) -> f64 {
    distance_parts(&size_logs(a), &shape(a), &size_logs(b), &shape(b))
}

/// log2 of n, c, k, H, W: precomputed per entry so a nearest scan does no logarithms.
pub(crate) fn size_logs(s: &ConvSizes) -> [f64; 5] {
    [s.n, s.c, s.k, s.h, s.w].map(|v| f64::from(v).log2())
}

/// The sizes compared for equality: y, x, stride h/w, dilation h/w, groups (structure), then
/// pad h/w.
pub(crate) fn shape(s: &ConvSizes) -> [u32; 9] {
    [
        s.y,
        s.x,
        s.stride[0],
        s.stride[1],
        s.dilation[0],
        s.dilation[1],
        s.groups,
        s.pad[0],
        s.pad[1],
    ]
}

/// [`distance`] from precomputed parts; the one formula both paths use, so the distance a
/// lookup reports is exactly what [`distance`] gives.
pub(crate) fn distance_parts(la: &[f64; 5], sa: &[u32; 9], lb: &[f64; 5], sb: &[u32; 9]) -> f64 {
    let mut d = 0.0;
    for i in 0..5 {
        d += (la[i] - lb[i]).abs();
    }
    let mut structure = 0u32;
    for i in 0..7 {
        structure += u32::from(sa[i] != sb[i]);
    }
    let pad = u32::from(sa[7] != sb[7]) + u32::from(sa[8] != sb[8]);
    d + STRUCTURE_PENALTY * f64::from(structure) + PAD_PENALTY * f64::from(pad)
}
