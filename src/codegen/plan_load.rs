//! How each operand's tile moves from global to shared memory: vector width and direction,
//! per-thread slots and `cp.async` ([`TileLoad`]), or TMA boxes (`ld=tma`). Checked here,
//! with a reason that names the operand, so the loaders have no error paths.

use super::smem::CHUNK;
use super::spec::TargetSpec;
use crate::config::PerfConfig;
use crate::lowering::tma::{tma_operands, TmaTile};
use crate::lowering::{Dim, Gemm};
use crate::problem::ConvProblem;

/// How one operand's tile moves from global to shared memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TileLoad {
    /// The operand's non-K GEMM dimension (M for A, N for B).
    pub row_dim: Dim,
    /// Tile rows (block_m or block_n).
    pub rows: u32,
    /// Vector width in elements.
    pub vec: u32,
    /// Whether vectors run along K (else along the rows).
    pub along_k: bool,
    /// Vectors per tile.
    pub vectors: u32,
    /// Vectors per thread, rounded up.
    pub slots: u32,
    /// Whether the last slot is missing for some threads.
    pub partial: bool,
    /// Whether the copy bypasses registers (`cp.async`).
    pub async_copy: bool,
    /// Threads that share the load (ids from 0 in the loader): the block's, or a
    /// warp-specialised kernel's producer warpgroup.
    pub threads: u32,
}

/// The TMA loads of `ld=tma` ([`tma_operands`]), after the path and target checks.
pub(super) fn tma_plan(
    p: &ConvProblem,
    gemm: &Gemm,
    c: &PerfConfig,
    spec: &dyn TargetSpec,
    loads: [&TileLoad; 2],
) -> Result<[Option<TmaTile>; 2], String> {
    let ld = c.ld.name();
    if !c.mma.is_wgmma() {
        return Err(format!(
            "ld={ld} loads the wgmma path's swizzled stages: it needs mma=wg or wg1"
        ));
    }
    if spec.bulk_tensor_copy().is_none() {
        return Err(format!("ld={ld}: {} has no TMA", spec.target()));
    }
    tma_operands(p, gemm, c, loads.map(|l| l.async_copy)).map_err(|r| format!("ld={ld}: {r}"))
}

/// The tile load of operand `op` (rows along `row_dim`) in vectors of `vec` elements shared by
/// `threads` threads, or why that width does not fit the operand.
#[allow(clippy::too_many_arguments)]
pub(super) fn tile_load(
    p: &ConvProblem,
    gemm: &Gemm,
    op: &crate::lowering::Operand,
    row_dim: Dim,
    rows: u32,
    vec: u32,
    c: &PerfConfig,
    threads: u32,
    spec: &dyn TargetSpec,
) -> Result<TileLoad, String> {
    let bytes = p.dtype().bytes();
    let contiguous = op.contiguity(p, gemm, [row_dim, Dim::K]).dim;
    if !vec.is_power_of_two() || vec * bytes > CHUNK {
        return Err(format!(
            "width {vec} is not a power of two of at most 16 bytes"
        ));
    }
    let along_k = match contiguous {
        Some(d) => d == Dim::K,
        None if vec == 1 => true,
        None => {
            return Err(format!(
                "width {vec} but the operand is contiguous along no GEMM dimension"
            ))
        }
    };
    let (span, len, what) = if along_k {
        (c.block_k, gemm.k_len(), "K")
    } else {
        (rows, gemm.len(row_dim), "the tile rows")
    };
    if span % vec != 0 || len % vec != 0 {
        return Err(format!(
            "width {vec} does not divide {what} (tile {span}, GEMM {len})"
        ));
    }
    let vectors = rows * c.block_k / vec;
    let vb = vec * bytes;
    Ok(TileLoad {
        row_dim,
        rows,
        vec,
        along_k,
        vectors,
        slots: vectors.div_ceil(threads),
        partial: !vectors.is_multiple_of(threads),
        async_copy: spec.async_copy().is_some() && matches!(vb, 4 | 8 | 16),
        threads,
    })
}
