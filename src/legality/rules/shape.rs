//! The rules on the block's shape, whatever the search space: the warp tile divides the block
//! tile, the block's threads fit the arch, and the warp tile (and `bk`) is a whole number of
//! the arch's matrix instructions, or for `wgmma` a warpgroup tile whose shared-memory layouts
//! the descriptors describe ([`Checker::wgmma_misfit`]).

use super::Checker;
use crate::arch::fit;
use crate::config::{Field, PerfConfig};
use crate::legality::rejection::Rejection;

impl Checker {
    /// Warp tile divides block tile, along M and N.
    pub(super) fn warp_tile(cfg: &PerfConfig) -> Result<(), Rejection> {
        for (wp, w, bp, b) in [
            (
                Field::WarpM.key(),
                cfg.warp_m,
                Field::BlockM.key(),
                cfg.block_m,
            ),
            (
                Field::WarpN.key(),
                cfg.warp_n,
                Field::BlockN.key(),
                cfg.block_n,
            ),
        ] {
            if w == 0 || b % w != 0 {
                return Err(Rejection::WarpTile {
                    warp_param: wp,
                    warp: w,
                    block_param: bp,
                    block: b,
                });
            }
        }
        Ok(())
    }

    /// Threads per block within the arch limit.
    pub(super) fn threads(&self, cfg: &PerfConfig) -> Result<(), Rejection> {
        let arch = &self.arch;
        let warps = Self::warps(cfg);
        let threads = warps * arch.warp_size as u64;
        if threads > arch.max_threads_per_block as u64 {
            return Err(Rejection::Threads {
                warps: Self::sat(warps),
                warp_size: arch.warp_size,
                threads: Self::sat(threads),
                max: arch.max_threads_per_block,
                arch: arch.name,
            });
        }
        Ok(())
    }

    /// Warp tile and bk a whole number of matrix instructions (`wgmma`: a warpgroup tile that
    /// fits).
    pub(super) fn mma_shape(&self, cfg: &PerfConfig) -> Result<(), Rejection> {
        if cfg.mma.is_wgmma() {
            return match self.wgmma_misfit(cfg) {
                Some(why) => Err(Rejection::Wgmma { why }),
                None => Ok(()),
            };
        }
        match self.instr(cfg) {
            Some(_) => Ok(()),
            None => Err(Rejection::MmaShape {
                warp_m: cfg.warp_m,
                warp_n: cfg.warp_n,
                block_k: cfg.block_k,
                dtype: self.problem.dtype().name(),
                arch: self.arch.name,
                shapes: self.shapes_text(),
            }),
        }
    }

    fn shapes_text(&self) -> String {
        fit::warp_rule_text(&self.arch, self.problem.dtype())
    }
}
