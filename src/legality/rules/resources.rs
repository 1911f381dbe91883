//! The per-config estimates the rules compare with the arch's limits: warps, registers, shared
//! memory, and whether the `wgmma` path's shared-memory layouts fit the config.

use super::Checker;
use crate::arch::{MathInstr, MathKind, Vendor};
use crate::config::{LdsLayout, MmaPath, PerfConfig};
use crate::problem::DType;

impl Checker {
    pub(in crate::legality) fn warps(cfg: &PerfConfig) -> u64 {
        let per_tile = match cfg.mma {
            MmaPath::Sync => 1,
            MmaPath::Wgmma | MmaPath::WgmmaInFlight => 4,
        };
        (cfg.block_m / cfg.warp_m.max(1)) as u64
            * (cfg.block_n / cfg.warp_n.max(1)) as u64
            * per_tile
    }

    /// Why the `wgmma` path cannot run `cfg` (fields up to `bk`), if it cannot. The kernel's
    /// shared-memory tiles must be exactly the 128-byte-swizzle layouts the descriptors
    /// describe: K-major tiles of 64-element (128-byte) lines of K, so `bk` = 128 bytes, or,
    /// for an operand contiguous along its rows (stored `[k][row]`), MN-major tiles in blocks
    /// of 64 rows.
    pub(in crate::legality) fn wgmma_misfit(&self, cfg: &PerfConfig) -> Option<String> {
        let arch = &self.arch;
        if arch.vendor != Vendor::Nvidia || arch.name != "sm_90" {
            return Some(format!("{} is not sm_90", arch.name));
        }
        let dt = self.problem.dtype();
        if !matches!(dt, DType::F16 | DType::BF16) {
            return Some(format!("{} is not f16 or bf16", dt.name()));
        }
        if cfg.warp_m != 64 {
            return Some(format!(
                "wm = {} (the warpgroup tile has 64 rows)",
                cfg.warp_m
            ));
        }
        if !cfg.warp_n.is_multiple_of(8) || cfg.warp_n > 256 {
            return Some(format!("wn = {} (a multiple of 8 up to 256)", cfg.warp_n));
        }
        if cfg.block_k * self.elem_bytes != 128 {
            return Some(format!(
                "bk = {} ({} bytes; the 128-byte swizzle needs 128)",
                cfg.block_k,
                cfg.block_k * self.elem_bytes
            ));
        }
        for (i, name, block, warp) in [
            (0, "A", cfg.block_m, cfg.warp_m),
            (1, "B", cfg.block_n, cfg.warp_n),
        ] {
            if self.mn_major[i] && (block % 64 != 0 || warp % 64 != 0) {
                return Some(format!(
                    "{name} is contiguous along its rows (an MN-major tile), which wgmma reads \
                     in blocks of 64 rows: block and warpgroup tile must be multiples of 64 \
                     along it, not {block} and {warp}"
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
        let acc = (wm * wn).div_ceil(warp);
        let frag = match instr.kind {
            // A thread owns a (warp/8) × 8 grid cell: one column of A and one row of B per k.
            MathKind::Fma => wm.div_ceil(warp / 8) + wn.div_ceil(8),
            // Double-buffered A and B fragments of one instruction depth.
            _ => 2 * ((wm + wn) * instr.k as u64 * eb).div_ceil(4 * warp),
        };
        // AMD loads global → VGPR → LDS; NVIDIA sm_80+ copies asynchronously (cp.async).
        let staging = match self.arch.vendor {
            Vendor::Amd => {
                let threads = (Self::warps(cfg) * warp).max(1);
                ((cfg.block_m as u64 + cfg.block_n as u64) * cfg.block_k as u64 * eb)
                    .div_ceil(4 * threads)
            }
            Vendor::Nvidia => 0,
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
        (tiles + padding, padding)
    }

    pub(in crate::legality) fn sat(x: u64) -> u32 {
        x.min(u32::MAX as u64) as u32
    }
}
