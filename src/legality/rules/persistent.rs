//! The `pk` rule: the persistent grid is built for `ld=ws|wspp` only (the producer's ring runs
//! on across work units; `ld=tma` and `ld=cp` keep one block per unit), stream-K on `ld=ws` is
//! that walk and `ld=wspp`'s consumers alternate on it (so both need `pk=1`:
//! [`PerfConfig::persistent_refusal`]), and the epilogue's own shared-memory region (one per
//! ping-pong consumer) must fit:
//! with `pk=1` the producer refills stages while the consumers run the epilogue, so the
//! fix-up's verdict words and the staged C tile (`vc` > 1 without atomics) live after the
//! pipeline ([`persistent_epilogue_at`], the planner's layout), and at least one staged line
//! must fit below the arch's per-block limit.

use super::Checker;
use crate::config::{
    persistent_epilogue_at, persistent_region_bytes, stage_align, Epilogue, Grid, PerfConfig,
    Reduction,
};
use crate::legality::rejection::Rejection;
use crate::lowering::Dim;

impl Checker {
    pub(in crate::legality) fn persistent(&self, cfg: &PerfConfig) -> Result<(), Rejection> {
        let why = |why: String| Err(Rejection::Persistent { why });
        if let Some(w) = cfg.persistent_refusal() {
            return why(w);
        }
        if cfg.persistent != Grid::Persistent {
            return Ok(());
        }
        let (pipeline, _) = self.lds_bytes(cfg);
        let (verdict, c_at) = persistent_epilogue_at(pipeline, stage_align(Epilogue::Reg));
        let atomic = cfg.split_k > 1 && cfg.red == Reduction::Atomic;
        let staged = cfg.vec_c > 1 && !atomic;
        // One staged line of C: along C's contiguous dimension, padded by one 16-byte chunk.
        let line = if staged {
            self.vectors
                .iter()
                .map(|ops| {
                    let line = match ops[2].dim {
                        Some(Dim::N) => cfg.block_n,
                        _ => cfg.block_m,
                    };
                    u64::from(line + 16 / self.elem_bytes) * u64::from(self.elem_bytes)
                })
                .max()
                .unwrap_or(0)
        } else {
            0
        };
        let limit = u64::from(self.arch.smem_per_block);
        // `wspp`: one region per consumer warpgroup.
        let regions = u64::from(cfg.tiles_per_block());
        if verdict + regions * persistent_region_bytes(pipeline, line, stage_align(Epilogue::Reg))
            > limit
        {
            return why(format!(
                "the epilogue's own shared-memory region{} (at byte {c_at}, after the \
                 {pipeline}-byte pipeline{}) exceeds the {limit} bytes a block may use",
                if regions > 1 {
                    "s (one per ping-pong consumer)"
                } else {
                    ""
                },
                if staged {
                    format!(", and one {line}-byte staged line of C")
                } else {
                    String::new()
                }
            ));
        }
        Ok(())
    }
}
