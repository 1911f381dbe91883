//! The TMA store of `ep=tma`: which written tensors a tiled tensor map describes as a box grid
//! of whole C tiles, and the map and shared-memory staging layout that store them. Legality's
//! `ep` rule and the planner both ask here, so they agree on every GEMM.
//!
//! C is stored as boxes of `{SWIZZLE_BYTES / element, lines}`: dimension 0 runs along C's
//! contiguous GEMM dimension (its `line` elements per tile cut into boxes of one 128-byte
//! swizzle span each), dimension 1 along the other (`lines` per tile), dimension 2 the group
//! when there are several. In shared memory box `j` is `lines` lines of 128 bytes with the
//! 128-byte swizzle (16-byte chunk `c` of line `r` at `c ^ r % 8`), at `j × lines × 128`
//! bytes from the 1024-byte aligned staging base, so the consumers' stores (lanes of a warp on
//! eight consecutive rows) hit eight distinct bank groups. A TMA store writes only the part of
//! a box inside `dims`: ragged tiles at the GEMM edge need no masking.

use super::tma::{linear_stride, GLOBAL_ALIGN, MAX_BOX, SWIZZLE_BYTES};
use super::{Dim, Gemm};
use crate::abi::{TensorMapSpec, TENSOR_MAP_RANK};
use crate::problem::ConvProblem;

/// How one GEMM's C tile is staged and stored with TMA.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoreTile {
    /// The store map over the written tensor.
    pub map: TensorMapSpec,
    /// Whether C is contiguous along N (tile lines run along N), else along M.
    pub along_n: bool,
    /// Elements of a tile line (along the contiguous dimension).
    pub line: u32,
    /// Lines of a tile.
    pub lines: u32,
    /// Elements of one box along the line (one 128-byte swizzle span).
    pub box_line: u32,
    /// Whether the last map dimension is the group.
    pub grouped: bool,
}

impl StoreTile {
    /// Boxes per tile along the line.
    pub fn boxes(&self) -> u32 {
        self.line / self.box_line
    }

    /// Bytes of the staged tile in shared memory.
    pub fn stage_bytes(&self) -> u64 {
        u64::from(self.line) * u64::from(self.lines) * u64::from(self.map.dtype.bytes())
    }
}

/// Bytes of the `ep=tma` staging tile of a `block_m × block_n` tile of `elem_bytes` elements
/// (the whole tile, unpadded): what legality's `ep` rule budgets.
pub fn stage_bytes(block_m: u32, block_n: u32, elem_bytes: u32) -> u64 {
    u64::from(block_m) * u64::from(block_n) * u64::from(elem_bytes)
}

/// The element stride of C's lines dimension `d`, or why a tiled store map cannot cover it.
///
/// Where a coordinate of C can leave the tensor (a strided bwd-data phase whose pixel slice
/// covers a column past the image, seed 003's shape) the store is refused. Session 10 stored
/// such tiles as wrapped rows (a rank-3 map of the valid columns, one store per row a tile
/// touches); it was bit-exact in the CPU emulator, but every such kernel raised
/// `CUDA_ERROR_ILLEGAL_INSTRUCTION` on the H200 in session 11 (24 of 24 in
/// `scripts/session11/call2.sh`, also with the stores that miss the map left out), so those
/// problems keep `ep=reg` until the cause is known.
fn lines_stride(p: &ConvProblem, gemm: &Gemm, d: Dim) -> Result<i64, String> {
    let op = &gemm.c;
    let extent = p.logical_dims(op.tensor);
    if let Some(t) = (0..5).find(|&t| op.coords[t].may_leave(extent[t], &gemm.dims)) {
        return Err(format!(
            "C coordinate {t} can leave the tensor along {d} (a pixel slice past the image): \
             the wrapped-row store map faulted on the H200 (illegal instruction)"
        ));
    }
    linear_stride(p, gemm, op, d)
}

/// The TMA store of `gemm`'s C in `block_m × block_n` tiles, or why a tiled tensor map cannot
/// describe it.
pub fn store_tile(
    p: &ConvProblem,
    gemm: &Gemm,
    block_m: u32,
    block_n: u32,
) -> Result<StoreTile, String> {
    let op = &gemm.c;
    let name = op.tensor.name();
    let dt = p.dtype();
    let eb = dt.bytes() as u64;
    // The contiguous dimension: one dense run (what leaves the tensor is `lines_view`'s).
    let unit = |d: Dim| linear_stride(p, gemm, op, d) == Ok(1);
    let along_n = if unit(Dim::M) {
        false
    } else if unit(Dim::N) {
        true
    } else {
        return Err(format!("neither M nor N is a contiguous run of {name}"));
    };
    let (inner_dim, outer_dim, line, lines) = if along_n {
        (Dim::N, Dim::M, block_n, block_m)
    } else {
        (Dim::M, Dim::N, block_m, block_n)
    };
    let outer = lines_stride(p, gemm, outer_dim)?;
    let grouped = gemm.g_len() > 1;
    let sg = if grouped {
        Some(linear_stride(p, gemm, op, Dim::G)?)
    } else {
        None
    };
    let byte_strides: Vec<u64> = [outer].iter().chain(&sg).map(|&s| s as u64 * eb).collect();
    if let Some(s) = byte_strides
        .iter()
        .find(|s| !s.is_multiple_of(GLOBAL_ALIGN))
    {
        return Err(format!(
            "a stride of {name} is {s} bytes, not a multiple of {GLOBAL_ALIGN}"
        ));
    }
    let strides = p.strides(op.tensor);
    let offset: i64 = (0..5)
        .map(|t| op.coords[t].offset * strides[t] as i64)
        .sum();
    let offset = offset as u64 * eb;
    if !offset.is_multiple_of(GLOBAL_ALIGN) {
        return Err(format!(
            "C starts {offset} bytes into {name}, not a multiple of {GLOBAL_ALIGN}"
        ));
    }
    let box_line = SWIZZLE_BYTES / eb as u32;
    if !line.is_multiple_of(box_line) {
        return Err(format!(
            "a tile line of {line} elements is not whole {box_line}-element (128-byte) boxes"
        ));
    }
    if lines > MAX_BOX || !lines.is_multiple_of(8) {
        return Err(format!(
            "{lines} tile lines: a swizzled box holds a multiple of 8 and at most {MAX_BOX}"
        ));
    }
    let rank = 2 + usize::from(grouped);
    let mut dims = [1u64; TENSOR_MAP_RANK];
    dims[0] = u64::from(gemm.len(inner_dim));
    dims[1] = u64::from(gemm.len(outer_dim));
    if grouped {
        dims[rank - 1] = u64::from(gemm.g_len());
    }
    let mut map_strides = [0u64; TENSOR_MAP_RANK - 1];
    map_strides[..byte_strides.len()].copy_from_slice(&byte_strides);
    let mut boxes = [1u32; TENSOR_MAP_RANK];
    boxes[0] = box_line;
    boxes[1] = lines;
    Ok(StoreTile {
        map: TensorMapSpec {
            dtype: dt,
            rank: rank as u32,
            dims,
            strides: map_strides,
            offset,
            boxes,
            swizzle: crate::abi::MapSwizzle::Swizzle128B,
            im2col: None,
        },
        along_n,
        line,
        lines,
        box_line,
        grouped,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lowering::lower;

    fn store(line: &str, bm: u32, bn: u32) -> Vec<Result<StoreTile, String>> {
        let p: ConvProblem = line.parse().unwrap();
        let l = lower(&p);
        l.gemms.iter().map(|g| store_tile(&p, g, bm, bn)).collect()
    }

    #[test]
    fn nhwc_outputs_are_tiled_store_maps() {
        // fwd NHWC: C = [pixels][k], contiguous along M (= K).
        let t = store(
            "convbfp16 -n 2 -c 64 -H 8 -W 8 -k 128 -y 3 -x 3 -p 1 -q 1 -F 1 --layout NHWC",
            128,
            64,
        );
        let s = t[0].as_ref().unwrap();
        assert!(!s.along_n);
        assert_eq!(s.map.dims[..2], [128, 2 * 8 * 8]);
        assert_eq!(s.map.strides[0], 128 * 2);
        assert_eq!(s.map.boxes[..2], [64, 64]);
        assert_eq!((s.boxes(), s.stage_bytes()), (2, 128 * 64 * 2));
        // bwd-data stride 1x2, filter 1x2 (seed 003's shape) on an even width: the slice is
        // the image's 8 column pairs, so C is the dense [n·wtilda][2·c] matrix: one plain map.
        let t = store(
            "convbfp16 -n 2 -c 64 -H 1 -W 16 -k 64 -y 1 -x 2 -u 1 -v 2 -F 2 --layout NHWC",
            128,
            64,
        );
        assert_eq!(t.len(), 1);
        let s = t[0].as_ref().unwrap();
        assert_eq!(s.map.dims[..2], [2 * 64, 2 * 8]);
        assert_eq!(s.map.strides[0], 2 * 64 * 2);
        // On an odd width the last column pair has one pixel past the image: refused (the
        // wrapped-row map faulted on the H200).
        let t = store(
            "convbfp16 -n 2 -c 64 -H 1 -W 17 -k 64 -y 1 -x 2 -u 1 -v 2 -F 2 --layout NHWC",
            64,
            64,
        );
        assert_eq!(t.len(), 1);
        assert!(t[0].as_ref().unwrap_err().contains("faulted"), "{:?}", t[0]);
        // Padding on the left: the rows' columns leave below 0, refused.
        let t = store(
            "convbfp16 -n 2 -c 64 -H 8 -W 8 -k 64 -y 3 -x 3 -p 1 -q 1 -u 2 -v 2 -F 2 --layout NHWC",
            64,
            64,
        );
        assert!(t.iter().any(|r| r.is_err()), "{t:?}");
    }

    #[test]
    fn refusals_name_the_reason() {
        // NCHW output: the pixels are contiguous, fine; but a tile line of 96 is not 64s.
        let t = store(
            "convbfp16 -n 2 -c 64 -H 8 -W 8 -k 128 -y 1 -x 1 -F 1 --layout NHWC",
            96,
            64,
        );
        assert!(t[0].as_ref().unwrap_err().contains("boxes"), "{:?}", t[0]);
        // 12 channels: 24-byte pixel stride.
        let t = store(
            "convbfp16 -n 2 -c 64 -H 8 -W 8 -k 12 -y 1 -x 1 -F 1 --layout NHWC",
            64,
            64,
        );
        assert!(t[0].as_ref().unwrap_err().contains("16"), "{:?}", t[0]);
    }
}
