//! The `ld` rule: which operand tiles TMA loads (the code generator's rule,
//! [`tma_operands`]), and for `ld=ws` the warp-specialised block's shape and register split
//! ([`ws_block`]), so that legality and the planner agree.

use super::Checker;
use crate::arch::ws::{ws_block, WsBlock};
use crate::config::{LoadPath, PerfConfig};
use crate::legality::rejection::Rejection;
use crate::lowering::tma::{cp_async_width, tma_operands, TmaTile};

/// Registers a warp-specialised consumer spends besides its accumulators: more than the
/// generic estimate ([`Checker::overhead_regs`]), because the descriptors, the ring's parities
/// and the epilogue's addresses are live next to the accumulators. From `ptxas` (13.0) on the
/// 7×7 1×1 forward: 192 accumulators a thread (wm × wn = 128 × 192) spill under the 232-register
/// cap (8 bytes with `ld=ws`, 336 with `ld=wspp`), so the overhead is over 40; 128 (128 × 128,
/// 64 × 256) fit.
const WS_CONSUMER_OVERHEAD_REGS: u32 = 48;

impl Checker {
    /// The TMA loads of every sub-GEMM under `ld=tma` (none under `ld=cp`), operand `i` allowed
    /// to stay on `cp.async` where `cp_ok[i]`: the code generator's rule ([`tma_operands`]).
    pub(in crate::legality) fn tma(
        &self,
        cfg: &PerfConfig,
        cp_ok: [bool; 2],
    ) -> Result<Vec<[Option<TmaTile>; 2]>, Rejection> {
        if cfg.ld == LoadPath::Cp {
            return Ok(Vec::new());
        }
        let ld = cfg.ld.name();
        let reject = |why: String, gemm: Option<u32>| Rejection::Tma { ld, why, gemm };
        if !cfg.mma.is_wgmma() {
            return Err(reject(
                "it loads the wgmma path's stages: needs mma=wg or wg1".into(),
                None,
            ));
        }
        if !self.arch.features.tma {
            return Err(reject(format!("{} has no TMA", self.arch.name), None));
        }
        if cfg.ld.warp_specialised() {
            // The code generator's rules: `PerfConfig::ws_refusal`, then the block's shape.
            if let Some(why) = cfg.ws_refusal() {
                return Err(reject(why, None));
            }
            let consumers = Self::sat(
                Self::warps(cfg) * u64::from(cfg.tiles_per_block() * self.arch.warp_size),
            );
            let w = ws_block(&self.arch, consumers).map_err(|why| reject(why, None))?;
            if let Some(instr) = self.instr(cfg) {
                let (acc, frag, staging) = self.register_parts(cfg, &instr);
                let overhead = self.overhead_regs().max(WS_CONSUMER_OVERHEAD_REGS);
                let estimate = acc + frag + staging + overhead as u64;
                if estimate > w.consumer_regs as u64 {
                    return Err(reject(
                        format!(
                            "the consumers get {} registers a thread after setmaxnreg, the \
                             register estimate is {estimate}",
                            w.consumer_regs
                        ),
                        None,
                    ));
                }
            }
        }
        self.gemms
            .iter()
            .map(|g| tma_operands(&self.problem, g, cfg, cp_ok).map_err(|r| reject(r, Some(g.id))))
            .collect()
    }

    /// Under `ld=tma`, operand `i` that stays on `cp.async` must have a `cp.async` width (read
    /// at the vector rules' level: the widths are fixed last).
    pub(super) fn tma_cp_width(&self, cfg: &PerfConfig, i: usize) -> Result<(), Rejection> {
        let vec = [cfg.vec_a, cfg.vec_b][i];
        if cfg.ld == LoadPath::Cp || cp_async_width(vec, self.elem_bytes) {
            return Ok(());
        }
        let mut cp_ok = [true, true];
        cp_ok[i] = false;
        self.tma(cfg, cp_ok).map(|_| ())
    }

    /// The warp-specialised block of `cfg` (`ld=ws`), if it has one that fits.
    pub(in crate::legality) fn ws_block(&self, cfg: &PerfConfig) -> Option<WsBlock> {
        if !cfg.ld.warp_specialised() {
            return None;
        }
        let consumers =
            Self::sat(Self::warps(cfg) * u64::from(cfg.tiles_per_block() * self.arch.warp_size));
        ws_block(&self.arch, consumers).ok()
    }
}
