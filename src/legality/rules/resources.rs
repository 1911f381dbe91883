//! The per-config estimates the rules compare with the arch's limits: warps, registers, shared
//! memory, and whether the `wgmma` path's shared-memory layouts fit the config.

use super::{Checker, AMD_OVERHEAD_REGS, OVERHEAD_REGS};
use crate::arch::{fit, MathInstr, MathKind, Vendor};
use crate::config::{LdsLayout, MmaPath, PerfConfig};

impl Checker {
    pub(in crate::legality) fn warps(cfg: &PerfConfig) -> u64 {
        let per_tile = match cfg.mma {
            MmaPath::Sync => 1,
            MmaPath::Wgmma | MmaPath::WgmmaInFlight => 4,
            MmaPath::Depthwise => return u64::from(cfg.warps()),
        };
        (cfg.block_m / cfg.warp_m.max(1)) as u64
            * (cfg.block_n / cfg.warp_n.max(1)) as u64
            * per_tile
    }

    /// Why the `wgmma` path cannot run `cfg` (fields up to `bk`), if it cannot: the shared
    /// rule ([`fit::wgmma_tile`]), then the operand layouts. The kernel's shared-memory tiles
    /// must be exactly the swizzled layouts the descriptors describe: K-major tiles of
    /// 128-byte lines of K, or, for an operand contiguous along its rows (stored `[k][row]`),
    /// MN-major tiles in blocks of a swizzle atom's rows ([`fit::wgmma_mn_swizzle`]: 16, 32
    /// or 64 rows of a 16-bit type).
    pub(in crate::legality) fn wgmma_misfit(&self, cfg: &PerfConfig) -> Option<String> {
        let dt = self.problem.dtype();
        if let Err(why) = fit::wgmma_tile(&self.arch, dt, cfg.warp_m, cfg.warp_n, cfg.block_k) {
            return Some(why.to_string());
        }
        for (i, name, block, warp) in [
            (0, "A", cfg.block_m, cfg.warp_m),
            (1, "B", cfg.block_n, cfg.warp_n),
        ] {
            if self.mn_major[i] && fit::wgmma_mn_swizzle(dt, block, warp).is_none() {
                let least = 32 / dt.bytes();
                return Some(format!(
                    "{name} is contiguous along its rows (an MN-major tile), which wgmma reads \
                     in blocks of a swizzle atom's rows ({least}, {} or {} rows): block and \
                     warpgroup tile must be multiples of {least} along it, not {block} and \
                     {warp}",
                    2 * least,
                    4 * least
                ));
            }
        }
        None
    }

    /// (accumulators, fragments, staging) registers per thread.
    pub(in crate::legality) fn register_parts(
        &self,
        cfg: &PerfConfig,
        instr: &MathInstr,
    ) -> (u64, u64, u64) {
        let warp = self.arch.warp_size as u64;
        let eb = self.elem_bytes as u64;
        let (wm, wn) = (cfg.warp_m as u64, cfg.warp_n as u64);
        if cfg.mma.is_wgmma() {
            // A warpgroup's accumulators over its 128 threads; A and B stay in shared memory.
            return ((wm * wn).div_ceil(4 * warp), 0, 0);
        }
        let amd = self.arch.vendor == Vendor::Amd;
        let acc = (wm * wn).div_ceil(warp);
        // AMD: the accumulators live in AccVGPRs during the main loop and are copied to
        // ArchVGPRs for the epilogue's conversion and stores (seen in the linker's counts of
        // gfx908/gfx90a/gfx942 code objects: tests/amd_code_objects.rs).
        let acc = if amd && instr.kind == MathKind::Mfma {
            2 * acc
        } else {
            acc
        };
        let frag = match instr.kind {
            // A thread owns a (warp/8) × 8 grid cell: one column of A and one row of B per k.
            MathKind::Fma => wm.div_ceil(warp / 8) + wn.div_ceil(8),
            // Double-buffered A and B fragments of one instruction depth.
            _ => 2 * ((wm + wn) * instr.k as u64 * eb).div_ceil(4 * warp),
        };
        // Without `cp.async` (AMD) tiles go global → registers → shared memory; with it the
        // copies bypass registers.
        let staging = if self.arch.features.cp_async {
            0
        } else {
            let threads = (Self::warps(cfg) * warp).max(1);
            let elems = (cfg.block_m as u64 + cfg.block_n as u64) * cfg.block_k as u64;
            let data = (elems * eb).div_ceil(4 * threads);
            if amd {
                // Plus a 64-bit address per load, live until its LDS store; one load per
                // element is the worst case, and the one assumed, because the vector widths
                // are decided after this rule runs (see `Rule::innermost`).
                data + 2 * elems.div_ceil(threads)
            } else {
                data
            }
        };
        (acc, frag, staging)
    }

    /// (total, padding) shared-memory bytes.
    pub(in crate::legality) fn lds_bytes(&self, cfg: &PerfConfig) -> (u64, u64) {
        let rows = cfg.stages as u64 * (cfg.block_m as u64 + cfg.block_n as u64);
        let tiles = rows * cfg.block_k as u64 * self.elem_bytes as u64;
        let padding = match cfg.lds {
            LdsLayout::Padded => rows * 16,
            LdsLayout::Swizzled => 0,
        };
        // ld=tma|ws|wspp: the 8-byte mbarriers after the tiles (8-byte aligned).
        let barriers = match cfg.ld.mbarriers(cfg.stages) as u64 {
            0 => 0,
            n => (tiles + padding).next_multiple_of(8) - (tiles + padding) + 8 * n,
        };
        (tiles + padding + barriers, padding)
    }

    /// Registers every kernel spends on addresses, loop counters and bounds (estimate). AMD's
    /// kernels keep more index math in VGPRs (no per-thread predicate registers, 64-bit
    /// addresses built in pairs of VGPRs), calibrated on the code-object sweep.
    pub(in crate::legality) fn overhead_regs(&self) -> u32 {
        match self.arch.vendor {
            Vendor::Nvidia => OVERHEAD_REGS,
            Vendor::Amd => AMD_OVERHEAD_REGS,
        }
    }

    pub(in crate::legality) fn sat(x: u64) -> u32 {
        x.min(u32::MAX as u64) as u32
    }
}
