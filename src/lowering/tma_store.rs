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

use super::tma::{axis_weight, linear_stride, GLOBAL_ALIGN, MAX_BOX, SWIZZLE_BYTES};
use super::{Dim, Gemm};
use crate::abi::{TensorMapSpec, TENSOR_MAP_RANK};
use crate::problem::ConvProblem;

/// A lines dimension whose innermost axis runs past the tensor at its top (a strided
/// bwd-data phase's pixel slice covers a column outside the image): the store map sees it as
/// rows of `valid` elements (map dimension 1) at a row stride of their own (dimension 2), and
/// a tile, whose lines may wrap over rows of `len` GEMM indices, is stored once per row it
/// touches from the same staging box, each store's box shifted back by `len` so the map's
/// clipping keeps exactly that row's part (see [`StoreTile::stores`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wrap {
    /// GEMM indices per row (the innermost axis's length).
    pub len: u32,
    /// Elements of a row inside the tensor (a prefix of the row).
    pub valid: u32,
}

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
    /// The lines dimension as wrapped rows, or `None`: one dense dimension.
    pub wrap: Option<Wrap>,
}

impl StoreTile {
    /// Boxes per tile along the line.
    pub fn boxes(&self) -> u32 {
        self.line / self.box_line
    }

    /// TMA stores per box: one, or one per row a tile's lines can touch when wrapped
    /// (`lines` consecutive indices over rows of `len`).
    pub fn stores(&self) -> u32 {
        self.wrap
            .map_or(1, |w| (self.lines + w.len - 2) / w.len + 1)
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

/// The lines dimension `d` of C as `(element strides of the map dimensions it becomes,
/// their lengths, the wrap)`: one dense dimension when no coordinate leaves the tensor, else
/// wrapped rows (see [`Wrap`]), or why neither describes it.
#[allow(clippy::type_complexity)]
fn lines_view(
    p: &ConvProblem,
    gemm: &Gemm,
    d: Dim,
) -> Result<(Vec<i64>, Vec<u64>, Option<Wrap>), String> {
    let op = &gemm.c;
    let extent = p.logical_dims(op.tensor);
    let leaving: Vec<usize> = (0..5)
        .filter(|&t| op.coords[t].may_leave(extent[t], &gemm.dims))
        .collect();
    if leaving.is_empty() {
        let s = linear_stride(p, gemm, op, d)?;
        return Ok((vec![s], vec![u64::from(gemm.len(d))], None));
    }
    let axes = &gemm.dims[d as usize].axes;
    let Some(x) = axes.iter().rposition(|a| a.len > 1) else {
        return Err("C's GEMM view leaves the tensor along no axis".into());
    };
    let len = axes[x].len;
    let mut valid = len;
    let inner = if d == Dim::N { Dim::M } else { Dim::N };
    for &t in &leaving {
        let c = &op.coords[t];
        let refuse = || {
            Err(format!(
                "C coordinate {t} can leave the tensor other than past the end of the \
                 innermost {d} axis (padding): a tiled store map cannot skip it"
            ))
        };
        // `offset + a·x + Σ b·i` over the line's axes `i` (b ≥ 0): the rows' columns must be
        // in the tensor for a prefix of x that no line position changes.
        let (mut a, mut spread) = (0i64, 0i64);
        for (r, coef) in &c.terms {
            match (r.dim, r.pos) {
                (dd, pos) if dd == d && pos == x && *coef > 0 => a = *coef,
                (dd, pos) if dd == inner && *coef >= 0 => {
                    spread += coef * i64::from(gemm.dims[inner as usize].axes[pos].len - 1)
                }
                _ => return refuse(),
            }
        }
        if a == 0 || c.offset < 0 {
            return refuse();
        }
        let cut = |contrib: i64| {
            let room = i64::from(extent[t]) - c.offset - contrib;
            if room <= 0 {
                0
            } else {
                (room + a - 1) / a
            }
        };
        if cut(0) != cut(spread) {
            return refuse();
        }
        valid = valid.min(cut(0).min(i64::from(len)) as u32);
    }
    if valid == 0 {
        return Err("a row of C's GEMM view lies wholly outside the tensor".into());
    }
    let sx = axis_weight(p, op, d, x);
    // The outer axes must nest into one row stride.
    let (mut row, mut span, mut rows) = (None::<i64>, 1i64, 1u64);
    for pos in (0..x).rev() {
        let a = &axes[pos];
        if a.len <= 1 {
            continue;
        }
        let w = axis_weight(p, op, d, pos);
        match row {
            None if w > 0 => row = Some(w),
            Some(s) if w == s * span => {}
            _ => {
                return Err(format!(
                    "the rows of C along {d} do not nest into one stride (axis {} has weight                      {w})",
                    a.name
                ))
            }
        }
        span *= i64::from(a.len);
        rows *= u64::from(a.len);
    }
    if sx <= 0 {
        return Err(format!("C's address does not grow along {d}"));
    }
    Ok((
        vec![sx, row.unwrap_or(sx * i64::from(len))],
        vec![u64::from(valid), rows],
        Some(Wrap { len, valid }),
    ))
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
    let (outer, outer_lens, wrap) = lines_view(p, gemm, outer_dim)?;
    let grouped = gemm.g_len() > 1;
    let sg = if grouped {
        Some(linear_stride(p, gemm, op, Dim::G)?)
    } else {
        None
    };
    let byte_strides: Vec<u64> = outer.iter().chain(&sg).map(|&s| s as u64 * eb).collect();
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
    let rank = 1 + outer_lens.len() + usize::from(grouped);
    let mut dims = [1u64; TENSOR_MAP_RANK];
    dims[0] = u64::from(gemm.len(inner_dim));
    dims[1..1 + outer_lens.len()].copy_from_slice(&outer_lens);
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
        wrap,
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
        // bwd-data stride 1x2, filter 1x2 (seed 003's shape): one GEMM, M = (ix, c) dense,
        // N's columns 2·wtilda + ix over a slice of 9 of which 8 are in the image: wrapped
        // rows of 8 valid of 9 at a row stride of W·C.
        let t = store(
            "convbfp16 -n 2 -c 64 -H 1 -W 16 -k 64 -y 1 -x 2 -u 1 -v 2 -F 2 --layout NHWC",
            64,
            64,
        );
        assert_eq!(t.len(), 1);
        let s = t[0].as_ref().unwrap();
        assert!(!s.along_n);
        assert_eq!(s.wrap, Some(Wrap { len: 9, valid: 8 }));
        assert_eq!(s.map.dims[..3], [128, 8, 2]);
        assert_eq!(s.map.strides[..2], [2 * 64 * 2, 16 * 64 * 2]);
        // 64 lines over rows of 9 touch at most 8 rows (from column 8: 1 + 7·9 = 64).
        assert_eq!(s.stores(), 8);
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
