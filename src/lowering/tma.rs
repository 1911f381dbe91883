//! Which operand tiles a Hopper TMA copy can load, and the tiled tensor map that does it.
//!
//! A tiled tensor map sees memory as a dense box grid: element `(i0, i1, i2)` at
//! `offset + i0·e + i1·s1 + i2·s2` bytes, zero outside `dims`. An operand tile fits that view
//! when, along each GEMM dimension it uses (G, its rows, K), the address is one stride times
//! the GEMM index (the dimension's axes nest like the digits of one number, as `n, ho, wo` do
//! in an unpadded NHWC pixel index or `y, x, c` in an NHWC filter's reduction index) and no
//! coordinate can leave the tensor (padding needs the im2col mode of [`super::im2col`]). Zero-fill
//! past `dims` then gives exactly the zeros of a partial tile at the GEMM
//! edge. Legality and the code generator both ask here, so they agree on every operand.
//!
//! Shared-memory side: the `wgmma` path's swizzled stages (see [`crate::codegen`]'s plan and
//! [`box_shape`]): a K-major tile is `rows` lines of 128 bytes of K with the 128-byte swizzle
//! (box `{bk, rows}`, one copy), an MN-major tile is blocks of one swizzle atom's rows × `bk`
//! lines (box `{atom, bk}`, one copy per block), the swizzle chosen by
//! [`fit::wgmma_mn_swizzle`] from the tile's rows and the warpgroup tile's.

use super::im2col::{im2col_tile, Im2colTile};
use super::{Dim, Gemm, Operand};
use crate::abi::{MapSwizzle, TensorMapSpec, TENSOR_MAP_RANK};
use crate::arch::fit;
use crate::config::PerfConfig;
use crate::problem::ConvProblem;

/// Most elements of a box along one dimension (`cuTensorMapEncodeTiled`).
pub const MAX_BOX: u32 = 256;
/// Bytes of the K-major swizzle span: a K-major box's inner dimension is exactly this many
/// bytes (`bk`).
pub const SWIZZLE_BYTES: u32 = 128;
/// Alignment of the global address and of every stride (bytes).
pub(super) const GLOBAL_ALIGN: u64 = 16;

/// How one operand's tile is loaded with TMA.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TmaTile {
    /// The tensor map (its memory is the operand's tensor argument).
    pub map: TensorMapSpec,
    /// K contiguous (box `{bk, rows}`), else the rows (box `{atom, bk}` per swizzle-atom
    /// block of rows).
    pub kmajor: bool,
    /// Copies per stage (atom blocks when MN-major).
    pub copies: u32,
    /// Whether dimension 2 of the map is the group index (tiled), or the channel coordinate
    /// starts at the group's channel block (im2col).
    pub grouped: bool,
    /// How to address the copies of an im2col map (`map.im2col` is set exactly then).
    pub im2col: Option<Im2colTile>,
}

impl TmaTile {
    /// The tile loaded in two copies of half the rows each, where a K-major tiled box of
    /// whole 1024-byte swizzle atoms allows (the two blocks of a cluster each load one and
    /// multicast it); else itself (an MN-major tile has several copies already, an im2col
    /// box is one copy that the cluster's first block loads).
    pub fn halved(&self) -> TmaTile {
        let rows = self.map.boxes[1];
        if !self.kmajor || self.copies != 1 || self.im2col.is_some() || !rows.is_multiple_of(16) {
            return *self;
        }
        let mut t = *self;
        t.map.boxes[1] = rows / 2;
        t.copies = 2;
        t
    }

    /// Bytes one stage receives (what its `mbarrier` expects).
    pub fn stage_bytes(&self) -> u32 {
        self.map.box_bytes() * self.copies
    }
}

/// Elements of `op`'s tensor from one index of axis `pos` of `d` to the next.
pub(super) fn axis_weight(p: &ConvProblem, op: &Operand, d: Dim, pos: usize) -> i64 {
    let strides = p.strides(op.tensor);
    (0..5)
        .map(|t| {
            op.coords[t]
                .terms
                .iter()
                .filter(|(r, _)| r.dim == d && r.pos == pos)
                .map(|(_, c)| c * strides[t] as i64)
                .sum::<i64>()
        })
        .sum()
}

/// One copy's box (`{inner, outer}` elements), the copies per stage and the swizzle they land
/// with, for a tile of `rows` rows (the warpgroup tile `extent` of them) and `block_k`: K-major,
/// one `{bk, rows}` box of 128-byte lines; MN-major, one `{atom, bk}` box per block of one
/// swizzle atom's rows. Tiled and im2col maps both take their boxes from here.
pub(super) fn box_shape(
    dt: crate::problem::DType,
    kmajor: bool,
    rows: u32,
    extent: u32,
    block_k: u32,
) -> Result<([u32; 2], u32, MapSwizzle), String> {
    if kmajor {
        if block_k * dt.bytes() != SWIZZLE_BYTES {
            return Err(format!(
                "bk × element size must be the {SWIZZLE_BYTES}-byte swizzle span (bk = {block_k})"
            ));
        }
        return Ok(([block_k, rows], 1, MapSwizzle::Swizzle128B));
    }
    let sw = fit::wgmma_mn_swizzle(dt, rows, extent).ok_or_else(|| {
        format!(
            "{rows} tile rows (warpgroup tile {extent}) are not whole blocks of a swizzle atom's \
             rows ({} to {} rows)",
            32 / dt.bytes(),
            128 / dt.bytes()
        )
    })?;
    let atom = fit::mn_atom_rows(dt, sw);
    Ok(([atom, block_k], rows / atom, sw))
}

/// The element stride of GEMM index `idx` along `d` in `op`'s tensor when the address is that
/// stride times the index (0 for a dimension of length 1), or why not.
pub(super) fn linear_stride(
    p: &ConvProblem,
    gemm: &Gemm,
    op: &Operand,
    d: Dim,
) -> Result<i64, String> {
    let axes = &gemm.dims[d as usize].axes;
    let weight = |pos: usize| axis_weight(p, op, d, pos);
    let mut stride: Option<i64> = None;
    let mut span = 1i64;
    for pos in (0..axes.len()).rev() {
        if axes[pos].len <= 1 {
            continue;
        }
        let w = weight(pos);
        match stride {
            None if w > 0 => stride = Some(w),
            None => {
                return Err(format!(
                    "its address does not grow along {d} (axis {} has weight {w})",
                    axes[pos].name
                ))
            }
            Some(s) if w != s * span => {
                return Err(format!(
                    "the axes of {d} do not nest into one stride (axis {} has weight {w}, \
                     a dense index needs {})",
                    axes[pos].name,
                    s * span
                ))
            }
            Some(_) => {}
        }
        span *= axes[pos].len as i64;
    }
    Ok(stride.unwrap_or(0))
}

/// The TMA load of operand `op` (rows along `row_dim`, `rows` per tile, `wg_rows` per
/// warpgroup tile, `block_k` per K step) into the `wgmma` path's swizzled stages, or why a
/// tiled tensor map cannot do it.
pub fn tma_tile(
    p: &ConvProblem,
    gemm: &Gemm,
    op: &Operand,
    row_dim: Dim,
    (rows, wg_rows): (u32, u32),
    block_k: u32,
) -> Result<TmaTile, String> {
    let dt = p.dtype();
    let eb = dt.bytes() as u64;
    let extent = p.logical_dims(op.tensor);
    if let Some(t) = (0..5).find(|&t| op.coords[t].may_leave(extent[t], &gemm.dims)) {
        return Err(format!(
            "{} coordinate {t} can leave the tensor (padding or a strided window): that needs \
             the im2col mode",
            op.tensor.name()
        ));
    }
    let sr = linear_stride(p, gemm, op, row_dim)?;
    let sk = linear_stride(p, gemm, op, Dim::K)?;
    let sg = linear_stride(p, gemm, op, Dim::G)?;
    let kmajor = match (sk, sr) {
        (1, _) => true,
        (_, 1) => false,
        _ => {
            return Err(format!(
                "neither K nor the rows are contiguous in {} (element strides {sk}, {sr}: \
                 NCHW-like layouts)",
                op.tensor.name()
            ))
        }
    };
    let strides = p.strides(op.tensor);
    let offset: i64 = (0..5)
        .map(|t| op.coords[t].offset * strides[t] as i64)
        .sum();
    let offset = offset as u64 * eb;
    let (len_r, len_k, len_g) = (gemm.len(row_dim), gemm.k_len(), gemm.g_len());
    let grouped = len_g > 1;
    let (inner, outer, outer_len, inner_len) = if kmajor {
        (sk, sr, len_r, len_k)
    } else {
        (sr, sk, len_k, len_r)
    };
    debug_assert_eq!(inner, 1);
    let mut byte_strides = vec![outer as u64 * eb];
    if grouped {
        byte_strides.push(sg as u64 * eb);
    }
    if let Some(s) = byte_strides
        .iter()
        .find(|s| !s.is_multiple_of(GLOBAL_ALIGN))
    {
        return Err(format!(
            "a stride of {} is {s} bytes, not a multiple of {GLOBAL_ALIGN} (channels not \
             16-byte aligned)",
            op.tensor.name()
        ));
    }
    if !offset.is_multiple_of(GLOBAL_ALIGN) {
        return Err(format!(
            "the operand starts {offset} bytes into {}, not a multiple of {GLOBAL_ALIGN}",
            op.tensor.name()
        ));
    }
    let (boxes, copies, swizzle) = box_shape(dt, kmajor, rows, wg_rows, block_k)?;
    if let Some(b) = boxes.iter().find(|&&b| b > MAX_BOX) {
        return Err(format!("a box of {b} elements exceeds TMA's {MAX_BOX}"));
    }
    let mut dims = [1u64; TENSOR_MAP_RANK];
    dims[0] = inner_len as u64;
    dims[1] = outer_len as u64;
    let mut map_strides = [0u64; TENSOR_MAP_RANK - 1];
    map_strides[..byte_strides.len()].copy_from_slice(&byte_strides);
    if grouped {
        dims[2] = len_g as u64;
    }
    let mut b = [1u32; TENSOR_MAP_RANK];
    b[..2].copy_from_slice(&boxes);
    Ok(TmaTile {
        map: TensorMapSpec {
            dtype: dt,
            rank: if grouped { 3 } else { 2 },
            dims,
            strides: map_strides,
            offset,
            boxes: b,
            swizzle,
            im2col: None,
        },
        kmajor,
        copies,
        grouped,
        im2col: None,
    })
}

/// The tiled map of [`tma_tile`] where one describes the operand, else the im2col map of
/// [`im2col_tile`], else both reasons.
pub fn tma_or_im2col_tile(
    p: &ConvProblem,
    gemm: &Gemm,
    op: &Operand,
    row_dim: Dim,
    rows: (u32, u32),
    block_k: u32,
) -> Result<TmaTile, String> {
    tma_tile(p, gemm, op, row_dim, rows, block_k).or_else(|tiled| {
        im2col_tile(p, gemm, op, row_dim, rows, block_k)
            .map_err(|im| format!("tiled: {tiled}; im2col: {im}"))
    })
}

/// The TMA loads of `ld=tma` for one GEMM: each operand that a tiled or im2col tensor map describes
/// (its tile K-major or MN-major as the code generator lays it out: K-major unless the
/// operand is contiguous along its rows), the other left to `cp.async`, which `cp_ok[i]` says
/// operand `i` can use. At least one operand must be TMA. The reason names the operands.
pub fn tma_operands(
    p: &ConvProblem,
    gemm: &Gemm,
    cfg: &PerfConfig,
    cp_ok: [bool; 2],
) -> Result<[Option<TmaTile>; 2], String> {
    let mut out = [None, None];
    let mut why = Vec::new();
    let ops = [
        (&gemm.a, Dim::M, (cfg.block_m, cfg.warp_m), "A"),
        (&gemm.b, Dim::N, (cfg.block_n, cfg.warp_n), "B"),
    ];
    for (i, (op, row_dim, rows, name)) in ops.into_iter().enumerate() {
        let kmajor = op
            .contiguity(p, gemm, [row_dim, Dim::K])
            .dim
            .is_none_or(|d| d == Dim::K);
        match tma_or_im2col_tile(p, gemm, op, row_dim, rows, cfg.block_k) {
            Ok(t) if t.kmajor == kmajor => out[i] = Some(t),
            Ok(_) => why.push(format!(
                "{name}: the tensor map's contiguous dimension is not the tile's"
            )),
            Err(r) => why.push(format!("{name}: {r}")),
        }
        if out[i].is_none() && !cp_ok[i] {
            return Err(format!(
                "{}; operand {name} would stay on cp.async, which its vector width cannot use \
                 (4, 8 or 16 bytes)",
                why.join("; ")
            ));
        }
    }
    if out.iter().all(Option::is_none) {
        return Err(format!("no operand is a TMA tile ({})", why.join("; ")));
    }
    Ok(out)
}

/// Whether a vector of `vec` elements of `elem_bytes` can be a `cp.async` (4, 8 or 16 bytes).
pub fn cp_async_width(vec: u32, elem_bytes: u32) -> bool {
    matches!(vec * elem_bytes, 4 | 8 | 16)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lowering::lower;

    fn tiles(line: &str) -> Vec<Result<TmaTile, String>> {
        let p: ConvProblem = line.parse().unwrap();
        let l = lower(&p);
        let g = &l.gemms[0];
        vec![
            tma_tile(&p, g, &g.a, Dim::M, (128, 128), 64),
            tma_tile(&p, g, &g.b, Dim::N, (128, 128), 64),
        ]
    }

    #[test]
    fn nhwc_filters_and_unpadded_pixels_are_tiled_views() {
        // fwd 3x3 padded: the filter (A) is a dense [k][y·x·c] matrix, the pixels (B) need
        // im2col (padding).
        let t =
            tiles("convbfp16 -n 2 -c 64 -H 8 -W 8 -k 128 -y 3 -x 3 -p 1 -q 1 -F 1 --layout NHWC");
        let a = t[0].as_ref().unwrap();
        assert!(a.kmajor && a.copies == 1 && !a.grouped);
        assert_eq!(a.map.dims[..2], [9 * 64, 128]);
        assert_eq!(a.map.strides[0], 9 * 64 * 2);
        assert_eq!(a.map.boxes[..2], [64, 128]);
        assert_eq!(a.map.box_bytes(), 64 * 128 * 2);
        assert!(t[1].as_ref().unwrap_err().contains("im2col"), "{:?}", t[1]);
        // 1x1 unpadded: both are dense matrices.
        let t = tiles("convbfp16 -n 2 -c 64 -H 8 -W 8 -k 128 -y 1 -x 1 -F 1 --layout NHWC");
        let b = t[1].as_ref().unwrap();
        assert!(b.kmajor);
        assert_eq!(b.map.dims[..2], [64, 2 * 8 * 8]);
        assert_eq!(b.map.strides[0], 128);
    }

    #[test]
    fn unaligned_channels_and_nchw_are_refused_with_a_reason() {
        let t = tiles("convbfp16 -n 2 -c 12 -H 8 -W 8 -k 128 -y 1 -x 1 -F 1 --layout NHWC");
        assert!(t[1].as_ref().unwrap_err().contains("16"), "{:?}", t[1]);
        let t = tiles("convbfp16 -n 2 -c 64 -H 8 -W 8 -k 128 -y 1 -x 1 -F 1");
        assert!(t.iter().any(|r| r.is_err()));
    }
}
