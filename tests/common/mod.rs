//! Helpers shared by the emulator-based test binaries (codegen, wgmma): problems and configs from
//! strings, exact test data, and the bit-exact comparison with the direct convolution.
#![allow(dead_code)]

use convtune::problem::{ConvProblem, DType, Tensor};
use rand::{rngs::StdRng, Rng, SeedableRng};

pub fn problem(line: &str) -> ConvProblem {
    line.parse().unwrap_or_else(|e| panic!("{line}: {e}"))
}

pub fn cfg(s: &str) -> convtune::config::PerfConfig {
    s.parse().unwrap_or_else(|e| panic!("{s}: {e}"))
}

/// Tensors of multiples of 1/8 in [-2, 2]: exact in every dtype, products and sums exact in f32.
pub fn data(p: &ConvProblem, seed: u64) -> [Vec<f64>; 3] {
    let mut rng = StdRng::seed_from_u64(seed);
    Tensor::ALL.map(|t| {
        (0..p.tensor_elems(t))
            .map(|_| rng.gen_range(-16i32..=16) as f64 / 8.0)
            .collect()
    })
}

/// The reference value as the kernel's output type stores it.
pub fn round(dt: DType, v: f64) -> f64 {
    match dt {
        DType::F32 => v as f32 as f64,
        DType::F16 => half::f16::from_f64(v).to_f64(),
        DType::BF16 => half::bf16::from_f64(v).to_f64(),
    }
}

/// Indices where the kernel's output differs bit for bit from the rounded reference (±0 equal).
pub fn mismatches(p: &ConvProblem, got: &[f64], want: &[f64]) -> Vec<usize> {
    got.iter()
        .zip(want)
        .enumerate()
        .filter(|(_, (g, w))| {
            let w = round(p.dtype(), **w);
            g.to_bits() != w.to_bits() && !(**g == 0.0 && w == 0.0)
        })
        .map(|(i, _)| i)
        .collect()
}
