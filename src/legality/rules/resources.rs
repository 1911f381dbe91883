//! What a config uses: the per-config estimates (warps, registers, shared memory), the rules
//! that compare them with the arch's limits, whether the `wgmma` path's shared-memory layouts
//! fit the config, and the [`Resources`] a legal config reports, for occupancy and for the code
//! generator.

use super::Checker;
use crate::arch::{fit, MathInstr, MathKind, Vendor};
use crate::config::{DwTile, LdsLayout, MmaPath, PerfConfig};
use crate::legality::rejection::Rejection;
use crate::lowering::depthwise::DwShape;

/// Registers every kernel spends on addresses, loop counters and bounds (estimate).
const OVERHEAD_REGS: u32 = 40;
/// The same on AMD (see [`Checker::overhead_regs`]): the largest shortfall of the estimate
/// without it over the code-object sweep (`tests/amd_code_objects.rs`), raised from 88 in
/// session 30 when the sweep drew a one-stage strided bwd-data kernel (fp16 3×3 stride 2 on
/// 9×9, 32×64×64 tile) whose linker count was 292 against 260 estimated.
const AMD_OVERHEAD_REGS: u32 = 120;

/// What a legal config uses, for occupancy and for the code generator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Resources {
    /// Warps (waves) per block.
    pub warps: u32,
    /// Threads per block.
    pub threads: u32,
    /// The instruction the warp tile is built from.
    pub instr: MathInstr,
    /// Shared memory per block, bytes.
    pub lds_bytes: u32,
    /// Estimated registers per thread.
    pub registers: u32,
    /// Blocks that fit on one SM (CU) by shared memory and registers.
    pub blocks_per_cu: u32,
    /// Largest legal vector width of A, B, C over all sub-GEMMs (byte limit included).
    pub max_vector: [u32; 3],
}

impl Checker {
    /// The register estimate within the arch's registers per thread.
    pub(super) fn registers(&self, cfg: &PerfConfig) -> Result<(), Rejection> {
        let arch = &self.arch;
        let Some(instr) = self.instr(cfg) else {
            return Ok(());
        };
        let (acc, frag, staging) = self.register_parts(cfg, &instr);
        let overhead = self.overhead_regs();
        let total = acc + frag + staging + overhead as u64;
        if total > arch.max_regs_per_thread as u64 {
            return Err(Rejection::Registers {
                estimate: Self::sat(total),
                max: arch.max_regs_per_thread,
                acc: Self::sat(acc),
                frag: Self::sat(frag),
                staging: Self::sat(staging),
                overhead,
            });
        }
        Ok(())
    }

    /// Shared memory per block: the layout (`lds`) and `wgmma` pipeline the config asks for,
    /// then the bytes within the arch's limit.
    pub(super) fn shared_memory(&self, cfg: &PerfConfig) -> Result<(), Rejection> {
        if cfg.mma.is_wgmma() && cfg.lds != LdsLayout::Swizzled {
            return Err(Rejection::Wgmma {
                why: "lds = pad (the descriptors describe the 128-byte swizzle: lds = swz)".into(),
            });
        }
        let in_flight = cfg.mma == MmaPath::WgmmaInFlight;
        if let Err(why) = fit::wgmma_pipeline(in_flight, cfg.stages) {
            return Err(Rejection::Wgmma {
                why: why.to_string(),
            });
        }
        if cfg.lds == LdsLayout::Swizzled {
            // The XOR swizzle permutes 16-byte chunks within a row: a row of K, and without
            // wgmma (whose MN-major tiles are rows of one swizzle atom, `wgmma_misfit`) a row
            // of block_m or block_n elements for an operand contiguous along its rows (the
            // planner's `SmemTile::new` refuses the same tiles).
            let mn_rows = [("bm", cfg.block_m), ("bn", cfg.block_n)]
                .into_iter()
                .zip(self.mn_major)
                .filter(|_| !cfg.mma.is_wgmma())
                .filter_map(|(row, mn)| mn.then_some(row));
            for (line, elems) in std::iter::once(("bk", cfg.block_k)).chain(mn_rows) {
                let row_bytes = elems as u64 * self.elem_bytes as u64;
                if !row_bytes.is_multiple_of(16) || !(row_bytes / 16).is_power_of_two() {
                    return Err(Rejection::SwizzleRow {
                        line,
                        row_bytes: Self::sat(row_bytes),
                    });
                }
            }
        }
        let (bytes, padding) = self.lds_bytes(cfg);
        if bytes > self.arch.smem_per_block as u64 {
            return Err(Rejection::SharedMemory {
                bytes: Self::sat(bytes),
                padding: Self::sat(padding),
                max: self.arch.smem_per_block,
            });
        }
        Ok(())
    }

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

    /// [`Self::resources`] on this checker's own sub-GEMMs (the judge of `cfg`).
    pub(super) fn resources_here(&self, cfg: &PerfConfig) -> Resources {
        let arch = &self.arch;
        if let (MmaPath::Depthwise, Ok(shape)) = (cfg.mma, &self.depthwise) {
            return self.depthwise_resources(cfg, shape);
        }
        let warps = Self::warps(cfg);
        let threads = warps * arch.warp_size as u64;
        let instr = self
            .instr(cfg)
            .unwrap_or(arch.math(self.problem.dtype())[0]);
        let (acc, frag, staging) = self.register_parts(cfg, &instr);
        let registers = acc + frag + staging + self.overhead_regs() as u64;
        // ld=ws: the producer warpgroup too, and the whole pool at entry (one block an SM).
        let (threads, registers) = match self.ws_block(cfg) {
            Some(w) => (w.threads() as u64, w.entry_regs as u64),
            None => (threads, registers),
        };
        let (lds, _) = self.lds_bytes(cfg);
        let by_lds = (arch.smem_per_sm as u64)
            .checked_div(lds)
            .unwrap_or(u64::MAX);
        let by_regs = arch.regs_per_sm as u64 / (registers * threads).max(1);
        let byte_cap = arch.max_vector_bytes / self.elem_bytes;
        let max_vector = std::array::from_fn(|i| {
            self.vectors
                .iter()
                .map(|ops| ops[i].max.width)
                .min()
                .unwrap_or(1)
                .min(byte_cap)
        });
        Resources {
            warps: Self::sat(warps),
            threads: Self::sat(threads),
            instr,
            lds_bytes: Self::sat(lds),
            registers: Self::sat(registers),
            blocks_per_cu: Self::sat(by_lds.min(by_regs)),
            max_vector,
        }
    }

    /// [`Self::resources`] of a config of `mma=dw` (no matrix instruction: `instr` is the
    /// arch's first, for reports only).
    fn depthwise_resources(&self, cfg: &PerfConfig, shape: &DwShape) -> Resources {
        let arch = &self.arch;
        let tile = DwTile::of(cfg);
        let threads = tile.threads();
        let registers = shape.registers(tile.vec, tile.rows, tile.cols);
        let lds = shape.filter_bytes(tile.channels);
        let by_lds = (arch.smem_per_sm as u64)
            .checked_div(lds)
            .unwrap_or(u64::MAX);
        let by_regs = arch.regs_per_sm as u64 / (registers as u64 * threads as u64).max(1);
        let widest = shape.widest_vec(arch.max_vector_bytes);
        Resources {
            warps: threads.div_ceil(arch.warp_size),
            threads,
            instr: arch.math(self.problem.dtype())[0],
            lds_bytes: Self::sat(lds),
            registers,
            blocks_per_cu: Self::sat(by_lds.min(by_regs)),
            max_vector: [widest, 1, widest],
        }
    }
}
