//! Thread-block clusters (`cl`): the shape, and what the other fields of a config must be for
//! one (the config's part of legality's `cl` rule, shared with the planner).

use super::{Grid, LoadPath, PerfConfig, Reduction};
use serde::{Deserialize, Serialize};

/// Thread-block clusters (`cl`, `ld=ws` with `pk=1` only): two blocks of a cluster take
/// neighbouring output tiles that share one operand's rows, and each loads half of that
/// operand's stage and multicasts it to both (TMA `.multicast::cluster`), so the shared
/// operand crosses L2 once per pair. `2m`: the tiles are neighbours along M and share B;
/// `2n`: neighbours along N, sharing A. The cluster shape is compiled into the kernel
/// (`.reqnctapercluster`), so a plain launch still works ([`ClusterShape::size`] blocks a
/// cluster, the grid a multiple of it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum ClusterShape {
    /// No cluster (every string before `v5:`).
    One,
    /// Two blocks on neighbouring M tiles sharing B.
    PairM,
    /// Two blocks on neighbouring N tiles sharing A.
    PairN,
}

impl ClusterShape {
    /// Every shape, in the lattice order the search walks (the order of [`Self::NAMES`]).
    pub const ALL: [ClusterShape; 3] =
        [ClusterShape::One, ClusterShape::PairM, ClusterShape::PairN];
    /// The names in config strings and search-space files, in the order of [`Self::ALL`].
    pub const NAMES: [&'static str; 3] = ["1", "2m", "2n"];

    /// The name in config strings and search-space files.
    pub fn name(self) -> &'static str {
        Self::NAMES[self as usize]
    }

    /// Blocks per cluster.
    pub fn size(self) -> u32 {
        match self {
            ClusterShape::One => 1,
            ClusterShape::PairM | ClusterShape::PairN => 2,
        }
    }

    /// Which operand the cluster multicasts: 0 for A (`2n`), 1 for B (`2m`).
    pub fn shared_operand(self) -> Option<usize> {
        match self {
            ClusterShape::One => None,
            ClusterShape::PairM => Some(1),
            ClusterShape::PairN => Some(0),
        }
    }
}

impl PerfConfig {
    /// What a cluster (`cl` ≠ 1) cannot do with this config's other fields, whatever the
    /// problem (the problem's part, tiles that pair and a multicast operand on a tiled tensor
    /// map, is legality's `cl` rule): shared by that rule and the planner. Clusters are built
    /// on the cooperative warp-specialised persistent walk only: its producer's ring is what
    /// the peer's consumers release, and the walk is what hands a cluster its tile pairs.
    pub fn cluster_refusal(&self) -> Option<String> {
        if self.cluster == ClusterShape::One {
            return None;
        }
        let cl = self.cluster.name();
        if self.ld != LoadPath::Ws {
            return Some(format!(
                "cl={cl}: the cluster's multicast ring is built on ld=ws (not ld={})",
                self.ld.name()
            ));
        }
        if self.persistent != Grid::Persistent {
            return Some(format!(
                "cl={cl}: a cluster walks tile pairs of the persistent grid; it needs pk=1"
            ));
        }
        if self.red == Reduction::Stream {
            return Some(format!(
                "cl={cl}: stream-K units of one block do not pair with its peer's; use red=atomic \
                 or fixup"
            ));
        }
        None
    }
}
