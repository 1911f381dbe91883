//! Runs a lowering on the CPU exactly as the GPU kernels do: each GEMM walked through its index
//! transforms, f64 accumulation. Proves the lowering against the direct convolution.

use super::{Dim, Lowering};

/// Executes every step of a lowering over f64 tensors stored in their layouts, indexed by
/// [`crate::problem::Tensor`] (`tensors[Tensor::Input as usize]`, …). The written tensor is overwritten.
pub fn execute(l: &Lowering, tensors: &mut [Vec<f64>; 3]) {
    let p = &l.problem;
    let written = p.direction().written() as usize;
    if l.zero_init {
        tensors[written].iter_mut().for_each(|v| *v = 0.0);
    }
    let mut coords: [Vec<u32>; 4] = Default::default();
    for gemm in &l.gemms {
        debug_assert_eq!(gemm.c.tensor as usize, written);
        let (ta, tb) = (gemm.a.tensor as usize, gemm.b.tensor as usize);
        for g in 0..gemm.g_len() {
            gemm.dims[Dim::G as usize].decompose(g, &mut coords[Dim::G as usize]);
            for m in 0..gemm.m_len() {
                gemm.dims[Dim::M as usize].decompose(m, &mut coords[Dim::M as usize]);
                for n in 0..gemm.n_len() {
                    gemm.dims[Dim::N as usize].decompose(n, &mut coords[Dim::N as usize]);
                    let Some(out) = gemm.c.offset(p, &coords) else {
                        continue;
                    };
                    let mut acc = 0.0;
                    for k in 0..gemm.k_len() {
                        gemm.dims[Dim::K as usize].decompose(k, &mut coords[Dim::K as usize]);
                        if let (Some(a), Some(b)) =
                            (gemm.a.offset(p, &coords), gemm.b.offset(p, &coords))
                        {
                            acc += tensors[ta][a as usize] * tensors[tb][b as usize];
                        }
                    }
                    tensors[written][out as usize] = acc;
                }
            }
        }
    }
}
