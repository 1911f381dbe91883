//! Throughput figures of an arch's default product: what the cost model turns FLOPs, bytes and
//! issue slots into time with. They are data-sheet numbers, not limits: nothing is rejected
//! for them, but a wrong one silently mis-ranks candidates, so every arch must state its own.

use super::MathKind;
use crate::problem::DType;

/// Dense peak rates, bandwidths and clock (boost) of one product.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rates {
    /// f16 matrix peak with f32 accumulation (or FMA where there is no matrix unit), TFLOP/s.
    pub f16_tflops: f64,
    /// bf16 matrix peak with f32 accumulation, TFLOP/s.
    pub bf16_tflops: f64,
    /// f32 peak (vector FMA on NVIDIA: TF32 would not meet the f32 tolerance; MFMA on AMD),
    /// TFLOP/s.
    pub f32_tflops: f64,
    /// Fraction of the data-sheet matrix peak that warp-level `mma.sync` reaches: about 0.6 on
    /// Hopper, whose data-sheet peak is `wgmma`'s (design notes; the H200 recordings agree: at
    /// equal tiles `mma=wg` measures ~1.5× faster). Applied only to dtypes whose matrix
    /// instruction is `mma.sync`.
    pub mma_sync_fraction: f64,
    /// DRAM bandwidth, TB/s.
    pub dram_tbps: f64,
    /// L2 bandwidth, TB/s.
    pub l2_tbps: f64,
    /// SM (CU) clock, GHz: converts issue slots to time.
    pub clock_ghz: f64,
    /// Thread instructions one SM (CU) issues per clock: 4 schedulers × 32 lanes on NVIDIA,
    /// 4 SIMD16 on AMD CDNA.
    pub issue_per_clk: f64,
}

impl Rates {
    /// The data-sheet peak for `dtype`, TFLOP/s.
    pub fn matrix_tflops(&self, dtype: DType) -> f64 {
        match dtype {
            DType::F16 => self.f16_tflops,
            DType::BF16 => self.bf16_tflops,
            DType::F32 => self.f32_tflops,
        }
    }

    /// The peak the warp-level path reaches with instruction `kind`: the data-sheet peak, or
    /// its `mma_sync_fraction` for `mma.sync`.
    pub fn warp_tflops(&self, dtype: DType, kind: MathKind) -> f64 {
        let matrix = self.matrix_tflops(dtype);
        if kind == MathKind::MmaSync {
            matrix * self.mma_sync_fraction
        } else {
            matrix
        }
    }
}
