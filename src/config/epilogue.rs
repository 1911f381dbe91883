//! How a warp-specialised persistent kernel writes C (`ep`, v6): from registers (`reg`, every
//! consumer thread storing its accumulators, directly or through the staged tile of `vc`), or
//! through a shared-memory staging tile that one elected consumer thread stores with TMA
//! (`tma`: `cp.async.bulk.tensor … .global.shared::cta.bulk_group`), so the consumers go on to
//! the next unit's multiplies while the TMA engine writes. The config-only part of its rule is
//! here (shared by legality and the planner); what the problem must allow (C a tiled tensor
//! map) is [`crate::lowering::tma::store_tile`]'s.

use super::{ClusterShape, Grid, LoadPath, PerfConfig, Reduction};
use serde::{Deserialize, Serialize};

/// The epilogue's store path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Epilogue {
    /// Stores from registers (every string before `v6:`).
    Reg,
    /// A TMA store of a swizzled shared-memory staging tile.
    Tma,
}

impl Epilogue {
    /// Every value, in the lattice order the search walks (the order of [`Self::NAMES`]).
    pub const ALL: [Epilogue; 2] = [Epilogue::Reg, Epilogue::Tma];
    /// The names in config strings and search-space files, in the order of [`Self::ALL`].
    pub const NAMES: [&'static str; 2] = ["reg", "tma"];

    /// The name in config strings and search-space files.
    pub fn name(self) -> &'static str {
        Self::NAMES[self as usize]
    }
}

/// Alignment of the `ep=tma` staging tile in shared memory: the 128-byte swizzle's pattern
/// repeats every 1024 bytes, and TMA reads a swizzled box from a 1024-byte aligned address.
pub const TMA_STAGE_ALIGN: u64 = 1024;

/// Alignment of the staged C tile of a persistent kernel's epilogue region for `ep`.
pub fn stage_align(ep: Epilogue) -> u64 {
    match ep {
        Epilogue::Reg => 16,
        Epilogue::Tma => TMA_STAGE_ALIGN,
    }
}

impl PerfConfig {
    /// What `ep=tma` cannot do with this config's other fields, whatever the problem: shared
    /// by legality's `ep` rule and the planner. The TMA store is built on the persistent
    /// warp-specialised walk (the staging buffer's reuse is ordered by the elected thread's
    /// `wait_group.read` across units), and stores whole tiles: a split-K slice or a stream-K
    /// partial goes to the workspace or to atomics instead.
    pub fn epilogue_refusal(&self) -> Option<String> {
        if self.epilogue == Epilogue::Reg {
            return None;
        }
        if !self.ld.warp_specialised() || self.persistent != Grid::Persistent {
            return Some(format!(
                "ep=tma stores from the persistent warp-specialised walk: it needs ld=ws|wspp \
                 and pk=1 (not ld={}, pk={})",
                self.ld.name(),
                self.persistent.name()
            ));
        }
        if self.split_k > 1 {
            return Some(format!(
                "ep=tma stores whole tiles; split_k = {} writes partial sums",
                self.split_k
            ));
        }
        if self.red == Reduction::Stream {
            return Some(
                "ep=tma stores whole tiles; red=stream finishes split tiles through the \
                 fix-up's partials"
                    .into(),
            );
        }
        if self.cluster != ClusterShape::One {
            // Not yet run on the emulator with a peer block multicasting into the ring.
            return Some(format!(
                "ep=tma is not built with thread-block clusters yet (cl={})",
                self.cluster.name()
            ));
        }
        debug_assert!(self.ld != LoadPath::Cp);
        None
    }
}
