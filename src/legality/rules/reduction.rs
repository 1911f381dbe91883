//! The `red` rule: how split-K slices are added up. `red=fixup` only means something with
//! split-K (a second name for the same kernel would double the space), and its workspace of
//! partial tiles must be addressable with the kernels' i32 indices.

use super::{Checker, MAX_FIXUP_PARTIALS};
use crate::config::{PerfConfig, Reduction};
use crate::legality::rejection::Rejection;

impl Checker {
    pub(in crate::legality) fn reduction(&self, cfg: &PerfConfig) -> Result<(), Rejection> {
        if cfg.red == Reduction::Atomic {
            return Ok(());
        }
        if cfg.split_k <= 1 {
            return Err(Rejection::ReductionWithoutSplit {
                red: cfg.red.name(),
            });
        }
        for (gemm, &[g, m, n]) in self.gmn.iter().enumerate() {
            let partials = cfg.fixup_partials(g, m, n);
            if partials > MAX_FIXUP_PARTIALS {
                return Err(Rejection::FixupWorkspace {
                    partials,
                    max: MAX_FIXUP_PARTIALS,
                    gemm: gemm as u32,
                });
            }
        }
        Ok(())
    }
}
