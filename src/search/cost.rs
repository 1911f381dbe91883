//! An analytic cost model: a time estimate for one config on one problem, with no GPU.
//!
//! It only has to *rank* candidates well enough that the best few hundred contain the winner;
//! measurements correct it afterwards (see `guided`). The terms are the ones a kernel engineer
//! would reason with:
//!
//! - **Roofline** over the FLOPs the tiles execute (padding included: a 256-row tile on a
//!   32-row problem does 8× the work) and the bytes they move. A and B tiles are re-read from
//!   global memory once per tile of the other dimension:
//!   `bytes ≈ (M·K·⌈N/bn⌉ + K·N·⌈M/bm⌉)·elem + M·N·elem`; the re-reads beyond the first mostly
//!   hit L2 (less so without rasterisation), so they are charged to L2 bandwidth and only a miss
//!   fraction to DRAM.
//! - **Wave quantisation**: `G·⌈M/bm⌉·⌈N/bn⌉·split_k` blocks over the SM count, rounded up.
//! - **Occupancy** from threads, shared memory and a register estimate: resident warps hide
//!   latency, together with the pipeline depth.
//! - **MMA efficiency** of the warp tile (operand loads per matrix instruction) and the
//!   main-loop overhead per `block_k` step.
//! - Split-K adds f32 partial traffic and a reduction launch; vector widths below 16 bytes waste
//!   memory transactions.

use crate::arch::{Arch, MathKind, Vendor};
use crate::legality::{Checker, Resources};
use crate::lowering::Lowering;
use crate::problem::DType;
use crate::space::{LdsLayout, PerfConfig};

/// The machine numbers the model needs: the arch's resource limits, plus throughput figures
/// (peak math rate, DRAM and L2 bandwidth) that are not hardware limits and so are not in
/// [`Arch`]; they come from the vendors' data sheets.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CostArch {
    /// Resource limits and SM count (wave quantisation is over `arch.compute_units`).
    pub arch: Arch,
    /// Resident threads per SM.
    pub max_threads_per_sm: u32,
    /// Resident blocks per SM.
    pub max_blocks_per_sm: u32,
    /// Dense peak of the math unit this dtype uses (TFLOP/s) as this kernel family can reach it.
    pub peak_tflops: f64,
    /// DRAM bandwidth, TB/s.
    pub dram_tbps: f64,
    /// L2 bandwidth, TB/s.
    pub l2_tbps: f64,
    /// Fixed cost of one kernel launch, µs.
    pub launch_us: f64,
}

/// Peak rates per arch name: (matrix f16/bf16 TFLOP/s, f32 TFLOP/s, DRAM TB/s, L2 TB/s).
/// NVIDIA: H100/H200 SXM5 and A100 data sheets, matrix peak scaled by 0.6 because `mma.sync`
/// reaches about 60% of the `wgmma` peak (design notes). AMD: MI100/MI250X/MI300X data sheets
/// (one GCD for MI250X); gfx908 bf16 is half its f16 rate.
fn rates(name: &str, dtype: DType) -> (f64, f64, f64) {
    let (f16, bf16, f32, dram, l2) = match name {
        "sm_80" => (312.0 * 0.6, 312.0 * 0.6, 19.5, 2.0, 5.0),
        "gfx908" => (184.6, 92.3, 46.1, 1.23, 3.0),
        "gfx90a" => (191.5, 191.5, 47.9, 1.6, 4.0),
        "gfx942" => (1307.0, 1307.0, 163.4, 5.3, 12.0),
        // sm_90 and anything newer that maps to it.
        _ => (989.0 * 0.6, 989.0 * 0.6, 67.0, 4.8, 10.0),
    };
    let peak = match dtype {
        DType::F16 => f16,
        DType::BF16 => bf16,
        DType::F32 => f32,
    };
    (peak, dram, l2)
}

impl CostArch {
    /// The model's view of `arch` for one element type.
    pub fn from_arch(arch: &Arch, dtype: DType) -> Self {
        let (peak_tflops, dram_tbps, l2_tbps) = rates(arch.name, dtype);
        CostArch {
            arch: *arch,
            max_threads_per_sm: 2048,
            max_blocks_per_sm: match arch.vendor {
                Vendor::Nvidia => 32,
                Vendor::Amd => 16,
            },
            peak_tflops,
            dram_tbps,
            l2_tbps,
            launch_us: 2.5,
        }
    }
}

/// The model's verdict on one config, with the terms that produced it (for reports and tests).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    /// Predicted time of all kernels of the problem, µs; infinite when the config cannot run.
    pub time_us: f64,
    /// Math-bound part, µs.
    pub compute_us: f64,
    /// Memory-bound part, µs.
    pub memory_us: f64,
    /// Blocks of the largest GEMM.
    pub blocks: u64,
    /// Fraction of SM-waves doing work in the largest GEMM (1 = no quantisation loss).
    pub wave_efficiency: f64,
    /// Resident blocks per SM.
    pub blocks_per_sm: u32,
    /// Estimated registers per thread.
    pub regs_per_thread: u32,
    /// Shared memory per block, bytes.
    pub smem_bytes: u64,
}

fn ceil_div(a: u64, b: u64) -> u64 {
    a.div_ceil(b.max(1))
}

/// Efficiency of global accesses `bytes` wide: 16-byte vectors use whole sectors.
fn vector_efficiency(bytes: u32) -> f64 {
    let b = f64::from(bytes.clamp(1, 16));
    0.4 + 0.6 * b.log2() / 4.0
}

/// The cost model for one problem on one machine: the legality checker supplies each config's
/// resources (threads, shared memory, registers), so the model and legality never disagree on
/// them.
#[derive(Debug, Clone)]
pub struct CostModel<'a> {
    lowering: &'a Lowering,
    machine: CostArch,
    checker: Checker,
}

impl<'a> CostModel<'a> {
    /// Prepares the model (runs the per-problem legality analysis once).
    pub fn new(lowering: &'a Lowering, machine: CostArch) -> Self {
        CostModel {
            lowering,
            machine,
            checker: Checker::new(lowering, &machine.arch),
        }
    }

    /// The machine numbers in use.
    pub fn machine(&self) -> &CostArch {
        &self.machine
    }

    /// Predicts the time of `c` (see the module docs for the terms).
    pub fn estimate(&self, c: &PerfConfig) -> Estimate {
        let res = self.checker.resources(c);
        estimate_with(self.lowering, c, &self.machine, &res)
    }
}

/// Predicts the time of `c` on the problem `lowering` describes (builds a [`CostModel`]; use
/// one directly to estimate many configs).
pub fn estimate(lowering: &Lowering, c: &PerfConfig, machine: &CostArch) -> Estimate {
    CostModel::new(lowering, *machine).estimate(c)
}

fn estimate_with(
    lowering: &Lowering,
    c: &PerfConfig,
    machine: &CostArch,
    res: &Resources,
) -> Estimate {
    let arch = &machine.arch;
    let elem = lowering.problem.dtype().bytes();
    let (threads, smem, regs) = (res.threads, u64::from(res.lds_bytes), res.registers);
    let infeasible = Estimate {
        time_us: f64::INFINITY,
        compute_us: f64::INFINITY,
        memory_us: f64::INFINITY,
        blocks: 0,
        wave_efficiency: 0.0,
        blocks_per_sm: 0,
        regs_per_thread: regs,
        smem_bytes: smem,
    };
    if threads == 0
        || threads > arch.max_threads_per_block
        || smem > u64::from(arch.smem_per_block)
        || c.block_m == 0
        || c.block_n == 0
        || c.block_k == 0
        || c.split_k == 0
        || c.warp_m == 0
        || c.warp_n == 0
    {
        return infeasible;
    }
    let regs_alloc = regs.min(arch.max_regs_per_thread);
    let bps = [
        machine.max_threads_per_sm / threads,
        (u64::from(arch.smem_per_sm) / smem.max(1)).min(u64::from(u32::MAX)) as u32,
        arch.regs_per_sm / (regs_alloc * threads).max(1),
        machine.max_blocks_per_sm,
    ]
    .into_iter()
    .min()
    .unwrap_or(0);
    if bps == 0 {
        return infeasible;
    }
    let spill = if regs > arch.max_regs_per_thread {
        1.0 + 2.0 * f64::from(regs - arch.max_regs_per_thread) / f64::from(arch.max_regs_per_thread)
    } else {
        1.0
    };

    // Warp-tile terms, the same for every sub-GEMM.
    let (wm, wn, bk) = (
        f64::from(c.warp_m),
        f64::from(c.warp_n),
        f64::from(c.block_k),
    );
    let (im, inn, ik) = (
        f64::from(res.instr.m),
        f64::from(res.instr.n),
        f64::from(res.instr.k),
    );
    let (mma_eff, step_eff) = if res.instr.kind == MathKind::Fma {
        let per_thread = (wm * wn / f64::from(arch.warp_size)).max(1.0);
        let intensity = per_thread.sqrt() / 2.0;
        let fmas = per_thread * bk;
        (intensity / (intensity + 1.0), fmas / (fmas + 32.0))
    } else {
        let intensity = wm * wn / (wm + wn);
        let instrs = (wm * wn * bk) / (im * inn * ik);
        (intensity / (intensity + 4.0), instrs / (instrs + 4.0))
    };
    let lds_eff = match c.lds {
        LdsLayout::Padded => 0.97,
        LdsLayout::Swizzled => 1.0,
    };
    let sms = u64::from(arch.compute_units);
    let e = f64::from(elem);

    let mut total = Estimate {
        time_us: 0.0,
        compute_us: 0.0,
        memory_us: 0.0,
        blocks: 0,
        wave_efficiency: 1.0,
        blocks_per_sm: bps,
        regs_per_thread: regs,
        smem_bytes: smem,
    };
    let mut largest = 0.0f64;
    if lowering.zero_init {
        let t = lowering.problem.direction().written();
        let bytes = lowering.problem.tensor_elems(t) as f64 * e;
        total.time_us += machine.launch_us + bytes / (machine.dram_tbps * 1e6);
    }
    for g in &lowering.gemms {
        let (gl, m, n, k) = (
            u64::from(g.g_len()),
            u64::from(g.m_len()),
            u64::from(g.n_len()),
            u64::from(g.k_len()),
        );
        let tiles_m = ceil_div(m, u64::from(c.block_m));
        let tiles_n = ceil_div(n, u64::from(c.block_n));
        let sk = u64::from(c.split_k);
        let k_split = ceil_div(k, sk);
        let k_steps = ceil_div(k_split, u64::from(c.block_k));
        let blocks = gl * tiles_m * tiles_n * sk;
        let padded_flops = 2.0
            * (gl * tiles_m * u64::from(c.block_m) * tiles_n * u64::from(c.block_n)) as f64
            * (k_steps * u64::from(c.block_k) * sk) as f64;
        let waves = ceil_div(blocks, sms).max(1);
        let wave_eff = blocks as f64 / (waves * sms) as f64;
        let resident = blocks.min(sms * u64::from(bps));
        let per_sm_warps = (ceil_div(resident, sms) as f64) * f64::from(c.warps());
        let depth = f64::from(c.stages.clamp(1, 4));
        let hide = 1.0 - 0.5 * (-(per_sm_warps * depth) / 8.0).exp();

        let compute = padded_flops
            / (machine.peak_tflops * 1e6)
            / (mma_eff * step_eff * hide * wave_eff * lds_eff)
            * spill;

        // Bytes: A re-read once per column tile, B once per row tile.
        let a_unique = (gl * m * k) as f64 * e;
        let b_unique = (gl * k * n) as f64 * e;
        let a_reads = a_unique * tiles_n as f64;
        let b_reads = b_unique * tiles_m as f64;
        let c_bytes = if sk > 1 {
            (gl * m * n) as f64 * (8.0 * sk as f64 + e)
        } else {
            (gl * m * n) as f64 * e
        };
        let miss = if resident >= blocks {
            0.1
        } else if c.raster > 1 && tiles_m > 1 {
            0.15
        } else {
            0.35
        };
        let dram_a = a_unique + miss * (a_reads - a_unique);
        let dram_b = b_unique + miss * (b_reads - b_unique);
        let dram = dram_a / vector_efficiency(c.vec_a * elem)
            + dram_b / vector_efficiency(c.vec_b * elem)
            + c_bytes / vector_efficiency(c.vec_c * elem);
        let l2 = a_reads + b_reads + c_bytes;
        // Bytes in flight decide how much bandwidth the grid can draw (Little's law: ~32 KB
        // per SM at these latencies).
        let in_flight =
            resident as f64 * (depth - 1.0).max(1.0) * (c.block_m + c.block_n) as f64 * bk * e;
        let bw_frac = (in_flight / (sms as f64 * 32768.0)).clamp(0.05, 1.0);
        let memory = (dram / (machine.dram_tbps * 1e6)).max(l2 / (machine.l2_tbps * 1e6)) / bw_frac;

        let launches = if sk > 1 { 2.0 } else { 1.0 };
        let t = compute.max(memory) + 0.2 * compute.min(memory) + launches * machine.launch_us;
        total.time_us += t;
        total.compute_us += compute;
        total.memory_us += memory;
        if t > largest {
            largest = t;
            total.blocks = blocks;
            total.wave_efficiency = wave_eff;
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lowering::lower;

    fn cfg(bm: u32, bn: u32, bk: u32, wm: u32, wn: u32, sk: u32) -> PerfConfig {
        PerfConfig {
            block_m: bm,
            block_n: bn,
            block_k: bk,
            warp_m: wm,
            warp_n: wn,
            stages: 3,
            vec_a: 8,
            vec_b: 8,
            vec_c: 8,
            lds: LdsLayout::Swizzled,
            split_k: sk,
            raster: 1,
            mma: crate::space::MmaPath::Sync,
        }
    }

    fn lowered(line: &str) -> Lowering {
        lower(&line.parse().unwrap())
    }

    fn h200() -> CostArch {
        CostArch::from_arch(&Arch::SM_90, DType::BF16)
    }

    #[test]
    fn a_tile_that_fits_beats_one_eight_times_too_large() {
        // GEMM M = 64 (k), N = 1·16·16 = 256 pixels, K = 64·9.
        let l = lowered(
            "convbfp16 -n 1 -c 64 -H 16 -W 16 -k 64 -y 3 -x 3 -p 1 -q 1 -F 1 --layout NHWC",
        );
        assert_eq!((l.gemms[0].m_len(), l.gemms[0].n_len()), (64, 256));
        let a = h200();
        let fits = estimate(&l, &cfg(64, 64, 32, 32, 32, 1), &a);
        let huge = estimate(&l, &cfg(512, 64, 32, 128, 32, 1), &a);
        assert!(fits.time_us.is_finite() && huge.time_us.is_finite());
        assert!(fits.time_us < huge.time_us, "{fits:?} vs {huge:?}");
    }

    #[test]
    fn grids_that_fill_the_sms_rank_higher() {
        // M = 1024, N = 16·8·8 = 1024, K = 1024: 128×128 tiles give 64 blocks on 132 SMs,
        // 64×128 give 128, and split-K 2 on the big tile gives 128 too.
        let l = lowered("convbfp16 -n 16 -c 1024 -H 8 -W 8 -k 1024 -y 1 -x 1 -F 1 --layout NHWC");
        let a = h200();
        let big = estimate(&l, &cfg(128, 128, 64, 64, 64, 1), &a);
        let filled = estimate(&l, &cfg(64, 128, 64, 32, 64, 1), &a);
        let split = estimate(&l, &cfg(128, 128, 64, 64, 64, 2), &a);
        assert_eq!((big.blocks, filled.blocks, split.blocks), (64, 128, 128));
        assert!(filled.wave_efficiency > big.wave_efficiency);
        assert!(filled.time_us < big.time_us, "{filled:?} vs {big:?}");
        assert!(split.compute_us < big.compute_us);
    }

    #[test]
    fn more_work_takes_longer_and_infeasible_is_infinite() {
        let a = h200();
        let small = lowered(
            "convbfp16 -n 8 -c 256 -H 28 -W 28 -k 256 -y 3 -x 3 -p 1 -q 1 -F 1 --layout NHWC",
        );
        let large = lowered(
            "convbfp16 -n 64 -c 256 -H 28 -W 28 -k 256 -y 3 -x 3 -p 1 -q 1 -F 1 --layout NHWC",
        );
        let c = cfg(128, 128, 32, 64, 64, 1);
        let (s, l) = (estimate(&small, &c, &a), estimate(&large, &c, &a));
        assert!(l.time_us > 4.0 * s.time_us, "{s:?} {l:?}");
        // 1024 threads × 2 blocks fit; 32×32 warps of a 1024×1024 tile do not.
        let too_many_threads = cfg(1024, 1024, 32, 32, 32, 1);
        assert!(estimate(&large, &too_many_threads, &a)
            .time_us
            .is_infinite());
        let mut too_deep = c;
        too_deep.stages = 64;
        assert!(estimate(&large, &too_deep, &a).time_us.is_infinite());
    }

    #[test]
    fn narrow_vectors_and_shallow_pipelines_cost_more_on_memory_bound_problems() {
        // A 1×1 convolution with few channels: memory bound.
        let l = lowered("convbfp16 -n 64 -c 32 -H 56 -W 56 -k 32 -y 1 -x 1 -F 1 --layout NHWC");
        let a = h200();
        let wide = cfg(32, 128, 32, 32, 32, 1);
        let mut narrow = wide;
        narrow.vec_b = 1;
        let (w, n) = (estimate(&l, &wide, &a), estimate(&l, &narrow, &a));
        assert!(w.memory_us > w.compute_us, "memory bound: {w:?}");
        assert!(n.time_us > w.time_us);
        let mut shallow = wide;
        shallow.stages = 1;
        assert!(estimate(&l, &shallow, &a).time_us > w.time_us);
    }

    #[test]
    fn bwd_data_sums_its_sub_gemms_and_zero_init() {
        let l = lowered(
            "convbfp16 -n 16 -c 2048 -H 1 -W 512 -k 2048 -y 1 -x 2 -u 1 -v 2 -F 2 --layout NHWC",
        );
        assert_eq!(l.gemms.len(), 2);
        let a = h200();
        let e = estimate(&l, &cfg(128, 128, 32, 64, 64, 1), &a);
        assert!(e.time_us >= 2.0 * a.launch_us);
        // Roughly the work of a 2048×4096×2048 GEMM per sub-GEMM at the modelled peak, within 4×.
        let ideal = l.gemm_flops() / (a.peak_tflops * 1e6);
        assert!(
            e.time_us > ideal && e.time_us < 4.0 * ideal + 10.0,
            "{e:?} ideal {ideal}"
        );
    }
}
