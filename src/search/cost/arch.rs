//! The machine numbers of the cost model ([`CostArch`]): peaks, bandwidths, clocks and
//! residency limits for one element type, read from the arch table. Apart from the model's
//! terms so that tests and the synthetic GPU can perturb the machine without touching them.

use crate::arch::{fit, Arch, MathKind};
use crate::problem::DType;

/// The machine numbers the model needs for one element type, all read from the arch table
/// ([`Arch::rates`] and its limits); a struct of its own so that tests and the synthetic GPU can
/// perturb them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CostArch {
    /// Resource limits and SM count (wave quantisation is over `arch.compute_units`).
    pub arch: Arch,
    /// Resident threads per SM.
    pub max_threads_per_sm: u32,
    /// Resident blocks per SM.
    pub max_blocks_per_sm: u32,
    /// Dense peak of the math unit this dtype uses (TFLOP/s) as this kernel family can reach it
    /// with warp-level matrix instructions (`mma.sync`, MFMA) or FMA.
    pub peak_tflops: f64,
    /// Dense peak with Hopper's warpgroup instructions (`mma=wg`, TFLOP/s): the data-sheet peak,
    /// since `wgmma` reads both operands from shared memory asynchronously and leaves the warps'
    /// issue slots free; 0 where there is no `wgmma`.
    pub wgmma_tflops: f64,
    /// SM (CU) clock, GHz (boost, from the data sheets): converts issue slots to time.
    pub clock_ghz: f64,
    /// Thread instructions one SM (CU) issues per clock: 4 schedulers × 32 lanes on NVIDIA,
    /// 4 SIMD16 on AMD CDNA.
    pub issue_per_clk: f64,
    /// DRAM bandwidth, TB/s.
    pub dram_tbps: f64,
    /// L2 bandwidth, TB/s.
    pub l2_tbps: f64,
    /// Fixed cost of one kernel launch, µs.
    pub launch_us: f64,
}

/// Fixed cost of one kernel launch, µs (driver and queue, not a property of the arch).
const LAUNCH_US: f64 = 2.5;

impl CostArch {
    /// The model's view of `arch` for one element type: the arch table's limits and rates (every
    /// arch states its own; there is no fallback to another arch's numbers).
    pub fn from_arch(arch: &Arch, dtype: DType) -> Self {
        let r = &arch.rates;
        let warp_kind = arch.math(dtype).first().map_or(MathKind::Fma, |i| i.kind);
        CostArch {
            arch: *arch,
            max_threads_per_sm: arch.max_threads_per_sm,
            max_blocks_per_sm: arch.max_blocks_per_sm,
            peak_tflops: r.warp_tflops(dtype, warp_kind),
            // `wgmma` reaches the data-sheet peak where the shared rule offers it for `dtype`.
            wgmma_tflops: if fit::wgmma_unit(arch, dtype).is_ok() {
                r.matrix_tflops(dtype)
            } else {
                0.0
            },
            dram_tbps: r.dram_tbps,
            l2_tbps: r.l2_tbps,
            clock_ghz: r.clock_ghz,
            issue_per_clk: r.issue_per_clk,
            launch_us: LAUNCH_US,
        }
    }
}
