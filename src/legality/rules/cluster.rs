//! The `cl` rule: a thread-block cluster ([`ClusterShape`]) is built on `ld=ws` with `pk=1`
//! ([`PerfConfig::cluster_refusal`]); its two blocks take neighbouring tiles along M (`2m`) or
//! N (`2n`) of the same (group, split-K slice), so every sub-GEMM's tiles along that dimension
//! must pair up (an even count), and the operand they share is multicast by TMA, so a tensor
//! map must describe it.

use super::Checker;
use crate::config::{ClusterShape, PerfConfig};
use crate::legality::rejection::Rejection;
use crate::lowering::Dim;

impl Checker {
    pub(in crate::legality) fn cluster(&self, cfg: &PerfConfig) -> Result<(), Rejection> {
        let why = |why: String| Err(Rejection::Cluster { why });
        if let Some(w) = cfg.cluster_refusal() {
            return why(w);
        }
        let (Some(along), Some(shared)) = (
            crate::lowering::Dim::of_cluster(cfg.cluster),
            cfg.cluster.shared_operand(),
        ) else {
            return Ok(());
        };
        let cl = cfg.cluster.name();
        if !self.arch.features.tma {
            return why(format!(
                "cl={cl}: {} has no thread-block clusters with TMA multicast",
                self.arch.name
            ));
        }
        for (i, &[_, m, n]) in self.gmn.iter().enumerate() {
            let tiles = match along {
                Dim::M => m.div_ceil(cfg.block_m),
                _ => n.div_ceil(cfg.block_n),
            };
            if !tiles.is_multiple_of(ClusterShape::PairM.size()) {
                return why(format!(
                    "cl={cl}: sub-GEMM {i} has {tiles} tiles along {along:?}, which do not pair \
                     up for a cluster of two"
                ));
            }
        }
        let maps = self.tma(cfg, [true, true])?;
        if let Some(i) = maps.iter().position(|t| t[shared].is_none()) {
            return why(format!(
                "cl={cl}: the shared operand {} of sub-GEMM {i} stays on cp.async; the cluster \
                 multicasts it with TMA",
                ["A", "B"][shared]
            ));
        }
        Ok(())
    }
}
