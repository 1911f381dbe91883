//! The `ep` rule: a TMA-store epilogue (`ep=tma`) is built on the persistent warp-specialised
//! walk and stores whole tiles ([`PerfConfig::epilogue_refusal`]); a tiled tensor map must
//! describe every sub-GEMM's C ([`store_tile`], the planner's rule), and the staging tile (the
//! whole C tile, 1024-byte aligned, one per ping-pong consumer) takes the epilogue's own
//! shared-memory region after the pipeline ([`persistent_region_bytes`], the planner's
//! layout).

use super::Checker;
use crate::config::{
    persistent_epilogue_at, persistent_region_bytes, stage_align, Epilogue, PerfConfig,
};
use crate::legality::rejection::Rejection;
use crate::lowering::tma_store::{stage_bytes, store_tile};

impl Checker {
    pub(in crate::legality) fn epilogue(&self, cfg: &PerfConfig) -> Result<(), Rejection> {
        if cfg.epilogue == Epilogue::Reg {
            return Ok(());
        }
        let why = |why: String, gemm: Option<u32>| Err(Rejection::Epilogue { why, gemm });
        if let Some(w) = cfg.epilogue_refusal() {
            return why(w, None);
        }
        if !self.arch.features.tma {
            return why(format!("ep=tma: {} has no TMA", self.arch.name), None);
        }
        for g in &self.gemms {
            if let Err(r) = store_tile(&self.problem, g, cfg.block_m, cfg.block_n) {
                return why(format!("ep=tma: {r}"), Some(g.id));
            }
        }
        let (pipeline, _) = self.lds_bytes(cfg);
        let align = stage_align(cfg.epilogue);
        let (verdict, c_at) = persistent_epilogue_at(pipeline, align);
        let staged = stage_bytes(cfg.block_m, cfg.block_n, self.elem_bytes);
        let regions = u64::from(cfg.tiles_per_block());
        let limit = u64::from(self.arch.smem_per_block);
        let need = verdict + regions * persistent_region_bytes(pipeline, staged, align);
        if need > limit {
            return why(
                format!(
                    "ep=tma: {need} bytes of shared memory with the {staged}-byte staging \
                     tile{} at byte {c_at} after the {pipeline}-byte pipeline (at most {limit})",
                    if regions > 1 {
                        "s (one per ping-pong consumer)"
                    } else {
                        ""
                    }
                ),
                None,
            );
        }
        Ok(())
    }
}
