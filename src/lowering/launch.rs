//! Which lowerings run in one launch: a decision of the lowering (its phases and their
//! coverage) and the config, read by codegen (which builds the one-launch kernel) and by the
//! cost model (which charges one launch), so it lives here, outside the LLVM-gated code.

use super::Lowering;
use crate::config::{ClusterShape, Grid, LoadPath, PerfConfig, Reduction};
use crate::problem::Direction;

/// Most sub-GEMMs (phases) a lowering has: backward data makes one per run of residue classes
/// with the same filter taps, at most two runs a dimension (`bwd_data::phases`), whatever the
/// stride; every other direction makes one. Each phase is a copy of the GEMM body in the
/// one-launch kernel, so this also bounds what one candidate costs to compile.
pub const MAX_PHASES: usize = 4;

/// Most residue classes per spatial dimension that the zeroing blocks test a pixel against.
pub const MAX_COVER_CLASSES: u32 = 16;

/// Whether `lowering` with `cfg` runs in one launch: backward data with more than one
/// sub-GEMM or with pixels no sub-GEMM writes, without split-K, within the limit above, on
/// the block-per-tile `cp.async` path or on the warp-specialised persistent walk (`ld=ws|wspp`,
/// `pk=1`: every phase's tiles are units of one walk, `codegen::phased`).
pub fn one_launch(lowering: &Lowering, cfg: &PerfConfig) -> bool {
    let p = &lowering.problem;
    p.direction() == Direction::BwdData
        && cfg.split_k == 1
        // A stream-K grid is one block per SM walking its own GEMM: it keeps a launch a phase.
        && cfg.red != Reduction::Stream
        // `ld=tma` (and `ld=ws` with a block per tile) would initialise its mbarriers in
        // every phase's branch: not joined. The persistent walk sets its ring up once and
        // takes each phase's tensor maps as parameters of their own.
        && (cfg.ld == LoadPath::Cp
            || (cfg.ld.warp_specialised() && cfg.persistent == Grid::Persistent))
        // A cluster pairs neighbouring tiles of one GEMM (`cl`); the phase walk pairs none, so
        // a clustered plan keeps a launch a phase.
        && cfg.cluster == ClusterShape::One
        && !lowering.gemms.is_empty()
        && (lowering.gemms.len() > 1 || lowering.zero_init)
        && p.residue_classes().iter().all(|&c| c <= MAX_COVER_CLASSES)
}
