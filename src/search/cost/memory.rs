//! The memory side of the cost model: the bytes a config moves and what they cost. Access
//! width efficiency, C's traffic and serial tail by split-K reduction, and the layout
//! transform's transposes. The operand (A/B) re-read and L2-miss arithmetic stays in the
//! per-GEMM loop of `estimate_with`, where the tile counts it needs are computed.

use super::CostArch;
use crate::config::fixup::serial_reads;
use crate::config::{PerfConfig, Reduction, StreamK};
use crate::lowering::Lowering;

/// The widest global access, bytes: what the model charges an access whose width the
/// kernel does not read (a TMA box's rows, an unstaged C).
pub(super) const WHOLE_ACCESS_BYTES: u32 = 16;

/// Efficiency of global accesses `bytes` wide: 16-byte vectors use whole sectors.
pub(super) fn vector_efficiency(bytes: u32) -> f64 {
    let b = f64::from(bytes.clamp(1, WHOLE_ACCESS_BYTES));
    0.4 + 0.6 * b.log2() / 4.0
}

/// Bytes of C one global access of `c`'s epilogue writes, for the sector efficiency and the
/// issue slots of its stores: its staged vectors of `vc` elements where it reads `vc`
/// ([`PerfConfig::reads_vec_c`]); else (`ep=tma`, or split-K slices adding by atomics, whose
/// own cost [`split_reduction`] charges) a whole 16-byte access, what the model charged the
/// widest of the configs that differ only in the unread `vc` when a search still listed
/// them all (a search lists one of them now), so that the ranking stays as it was.
pub(super) fn c_access_bytes(
    c: &PerfConfig,
    direction: crate::problem::Direction,
    elem: u32,
) -> u32 {
    access_bytes(c.reads_vec_c(direction), c.vec_c.max(1), elem)
}

/// Bytes of one global access of `vec` elements of `elem` bytes where the kernel reads that
/// width, else [`WHOLE_ACCESS_BYTES`] (a width it does not read: a search lists one value of
/// it, charged as the widest of its twins was).
pub(super) fn access_bytes(read: bool, vec: u32, elem: u32) -> u32 {
    if read {
        vec * elem
    } else {
        WHOLE_ACCESS_BYTES
    }
}

/// The transposes of `c`'s layout transform: per tensor moved, one launch and its bytes read
/// and written once at DRAM bandwidth (coalesced both ways through the shared-memory tile).
pub fn transform_us(lowering: &Lowering, c: &PerfConfig, machine: &CostArch) -> f64 {
    let p = &lowering.problem;
    let e = f64::from(p.dtype().bytes());
    crate::lowering::relayout::relayouts(p, c.xf)
        .iter()
        .map(|r| machine.launch_us + 2.0 * r.elems() as f64 * e / (machine.dram_tbps * 1e6))
        .sum()
}

/// C's traffic (bytes), the launches, and the serial tail (µs) of writing an output of `mn`
/// elements of `e` bytes, by `c`'s split-K reduction. `red=atomic`: every slice adds f32 into a
/// zeroed sum (8 bytes per element and slice at L2), zeroed by a launch of its own, and for
/// 16-bit types converted by a finishing launch (a read of the f32 sum and a write). `red=fixup`:
/// the same partial traffic (each slice writes its tile, the last reads them all back), no
/// zeroing pass or finish, but the block that finishes a tile reads [`serial_reads`] partial
/// tiles alone, through its SM's port to L2 (`sm_bytes_per_us`) while the tiles of the last
/// wave finish. Fix-up and stream-K are charged two launches though their counters, in the
/// workspace's kept-zero region, need no clearing launch since session 33: the second stands
/// for fix-up costs the model does not otherwise see. Counted as one, the model ranked
/// stream-K and fix-up shapes first for the bf16 7×7 backward weight, which on the H100 ran
/// 19.6–48 µs against the tuned sk=1 shape's 13.5 (BENCHMARKS, session 33 call 3).
/// `red=stream` (`stream`): each stream-K block's range splits at most one tile at each end, so
/// about one partial tile per block, and the tail adds the most contributors any tile has.
pub(super) fn split_reduction(
    c: &PerfConfig,
    stream: Option<StreamK>,
    mn: f64,
    e: f64,
    sm_bytes_per_us: f64,
) -> (f64, f64, f64) {
    let tile = f64::from(c.block_m) * f64::from(c.block_n) * 4.0;
    if let Some(s) = stream {
        let partials = f64::from(s.sk_blocks()) * tile * 2.0;
        let tail = f64::from(serial_reads(s.max_contributors())) * tile / sm_bytes_per_us.max(1.0);
        return (mn * e + partials, 2.0, tail);
    }
    if c.split_k <= 1 {
        return (mn * e, 1.0, 0.0);
    }
    let sk = f64::from(c.split_k);
    let partials = mn * (8.0 * sk + e);
    match c.red {
        Reduction::Atomic if e < 4.0 => (partials + mn * (4.0 + 4.0 + e), 3.0, 0.0),
        Reduction::Atomic => (partials + mn * 4.0, 2.0, 0.0),
        // A stream-K config never reaches here (handled above).
        Reduction::Fixup | Reduction::Stream => {
            let reads = f64::from(serial_reads(c.split_k));
            (partials, 2.0, tile * reads / sm_bytes_per_us.max(1.0))
        }
    }
}
