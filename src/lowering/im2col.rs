//! The im2col tensor map of an activation operand: what a TMA copy in im2col mode
//! (`cuTensorMapEncodeIm2col`) can load when the address needs padding, a conv stride or
//! filter taps, which a tiled map ([`super::tma`]) cannot express.
//!
//! The map sees the activation as `[C, W, H, N]` (channels innermost). One copy gathers
//! `pixelsPerColumn` pixels of `channelsPerPixel` channels: starting at pixel `(w, h, n)`, it
//! steps `w` by the conv stride through the pixel bounding box `[lower, dim − 1 + upper]`,
//! wrapping to the next row and the next image, and reads each pixel at `(w, h) + offsets`
//! (the filter tap, an instruction operand), zero outside the tensor. So the pixels must be
//! one GEMM dimension whose axes are `(n, ho, wo)` in that order, with the tensor coordinate
//! along each spatial dimension `stride · o + Σ a·tap + offset`; the channels and taps are the
//! other dimension, channels innermost and a whole number of 128-byte lines per tap, so one
//! copy reads one tap. With `base = offset + Σ min(0, a·(len − 1))` (the smallest coordinate
//! at output 0) and `span = Σ |a|·(len − 1)`, the box is `lower = base`,
//! `upper = base + (O − 1)·stride − (D − 1)` (it holds exactly the O output positions), and a
//! tap's offset is `Σ a·tap − Σ min(0, a·(len − 1))` in `[0, span]`. For a forward conv that
//! is `lower = −pad`, offsets `y·dil`, and (stride 1) `upper = pad − (R − 1)·dil`.
//!
//! Which GEMM dimension holds the pixels decides the shared-memory layout: rows (forward,
//! data gradient) land K-major, one copy of `{bk channels, rows pixels}`; K (weight gradient)
//! lands MN-major, one copy of `{atom channels, bk pixels}` per block of a swizzle atom's rows
//! (16, 32 or 64 channels of a 16-bit type, [`super::tma::box_shape`]).

use super::tma::{box_shape, TmaTile, MAX_BOX};
use super::{Dim, Gemm, Operand};
use crate::abi::{im2col_corner_range, Im2colMap, TensorMapSpec, TENSOR_MAP_RANK};
use crate::problem::{ConvProblem, Tensor};

/// Most axes of the channel-and-tap dimension (the channel and up to three tap axes).
pub const MAX_TAP_AXES: usize = 4;
/// Largest `elementStrides` entry (`cuTensorMapEncodeIm2col`).
const MAX_ELEMENT_STRIDE: u32 = 8;
/// Rank of the map: channels, w, h, images.
const RANK: u32 = 4;

/// What the code generator needs, besides the map, to address one im2col copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Im2colTile {
    /// Lengths of the channel-and-tap dimension's axes, outermost first, padded with 1s in
    /// front; the last is the channel axis.
    pub tap_lens: [u32; MAX_TAP_AXES],
    /// Each of those axes' coefficient in the (w, h) coordinates (0 for the channel axis).
    pub tap_coefs: [[i32; 2]; MAX_TAP_AXES],
    /// Lengths of the pixel dimension's axes `(n, ho, wo)`.
    pub pixel_lens: [u32; 3],
    /// Channels per group (map channel = g · this + c) when the operand is grouped, else 0.
    pub group_channels: u32,
}

impl Im2colTile {
    /// The im2col offsets `(w, h)` of the tap with axis coordinates `taps` (as `tap_lens`).
    pub fn offsets(&self, taps: [u32; MAX_TAP_AXES]) -> [u32; 2] {
        std::array::from_fn(|d| {
            (0..MAX_TAP_AXES)
                .map(|i| {
                    let a = self.tap_coefs[i][d] as i64;
                    let t = taps[i] as i64;
                    if a >= 0 {
                        a * t
                    } else {
                        -a * (self.tap_lens[i] as i64 - 1 - t)
                    }
                })
                .sum::<i64>() as u32
        })
    }
}

/// Canonical activation dimensions (`n, g, c, h, w`).
const N: usize = 0;
const G: usize = 1;
const C: usize = 2;
const SPATIAL: [usize; 2] = [4, 3]; // w, h: map dimensions 1, 2

/// The im2col TMA load of activation operand `op` into the `wgmma` path's swizzled stages
/// (rows along `row_dim`, `rows` per tile and `wg_rows` per warpgroup tile, `block_k` per K
/// step), or why im2col mode cannot load it.
pub fn im2col_tile(
    p: &ConvProblem,
    gemm: &Gemm,
    op: &Operand,
    row_dim: Dim,
    (rows, wg_rows): (u32, u32),
    block_k: u32,
) -> Result<TmaTile, String> {
    let name = op.tensor.name();
    if op.tensor == Tensor::Filter {
        return Err("im2col mode reads activations, not the filter".into());
    }
    let dt = p.dtype();
    let eb = dt.bytes() as u64;
    let strides = p.strides(op.tensor);
    let extent = p.logical_dims(op.tensor);
    if strides[C] != 1 {
        return Err(format!(
            "{name}'s channels are not innermost (NCHW-like): im2col needs NHWC"
        ));
    }
    // Which dimension walks the pixels: the one that indexes the image.
    let pix = match op.coords[N].terms.as_slice() {
        [(r, 1)]
            if r.pos == 0 && op.coords[N].offset == 0 && [row_dim, Dim::K].contains(&r.dim) =>
        {
            r.dim
        }
        _ => {
            return Err(format!(
                "{name}'s image index is not the outer axis of its rows or K"
            ))
        }
    };
    let tap = if pix == Dim::K { row_dim } else { Dim::K };
    let kmajor = pix == row_dim;
    let pixel_axes = &gemm.dims[pix as usize].axes;
    let tap_axes = &gemm.dims[tap as usize].axes;
    let order = || {
        format!(
            "{name}'s pixels are not consecutive output pixels in (n, ho, wo) order along {pix}, \
             or its {tap} is not (taps, c) with c innermost"
        )
    };
    if pixel_axes.len() != 3 || tap_axes.is_empty() || tap_axes.len() > MAX_TAP_AXES {
        return Err(order());
    }
    let channel_pos = tap_axes.len() - 1;
    // Channels: exactly the innermost tap-side axis.
    match op.coords[C].terms.as_slice() {
        [(r, 1)] if r.dim == tap && r.pos == channel_pos && op.coords[C].offset == 0 => {}
        _ => return Err(order()),
    }
    // Groups: none, or the G axis over adjacent channel blocks.
    let grouped = match op.coords[G].terms.as_slice() {
        [] if extent[G] == 1 && op.coords[G].offset == 0 => false,
        [(r, 1)] if r.dim == Dim::G && op.coords[G].offset == 0 => extent[G] > 1,
        _ => return Err(format!("{name}'s group index is not the GEMM batch")),
    };
    if grouped && strides[G] != extent[C] as u64 {
        return Err(format!("{name}'s groups are not adjacent channel blocks"));
    }
    let mut tap_lens = [1u32; MAX_TAP_AXES];
    let mut tap_coefs = [[0i32; 2]; MAX_TAP_AXES];
    let front = MAX_TAP_AXES - tap_axes.len();
    for (i, a) in tap_axes.iter().enumerate() {
        tap_lens[front + i] = a.len;
    }
    let mut im = Im2colMap {
        lower: [0; TENSOR_MAP_RANK - 2],
        upper: [0; TENSOR_MAP_RANK - 2],
        element_strides: [1; TENSOR_MAP_RANK],
    };
    let (lo_corner, hi_corner) = im2col_corner_range(RANK);
    let mut dims = [1u64; TENSOR_MAP_RANK];
    dims[0] = extent[C] as u64 * if grouped { extent[G] as u64 } else { 1 };
    for (d, &t) in SPATIAL.iter().enumerate() {
        let co = &op.coords[t];
        let mut stride = None;
        let (mut base, mut span) = (co.offset, 0i64);
        for &(r, a) in &co.terms {
            let len = gemm.dims[r.dim as usize].axes[r.pos].len as i64;
            if r.dim == pix && r.pos == 2 - d && a > 0 && stride.is_none() {
                stride = Some(a);
            } else if r.dim == tap && r.pos != channel_pos {
                base += (a * (len - 1)).min(0);
                span += a.abs() * (len - 1);
                tap_coefs[front + r.pos][d] = a as i32;
            } else {
                return Err(order());
            }
        }
        let s = stride.unwrap_or(1);
        let o = pixel_axes[2 - d].len as i64;
        if stride.is_none() && o > 1 {
            return Err(order());
        }
        let upper = base + (o - 1) * s - (extent[t] as i64 - 1);
        if s > MAX_ELEMENT_STRIDE as i64 {
            return Err(format!(
                "a stride of {s} exceeds im2col's element strides (1..{MAX_ELEMENT_STRIDE})"
            ));
        }
        for (what, v) in [("lower", base), ("upper", upper)] {
            if v < lo_corner as i64 || v > hi_corner as i64 {
                return Err(format!(
                    "the pixel box's {what} corner {v} is outside [{lo_corner}, {hi_corner}] \
                     (rank-{RANK} im2col)"
                ));
            }
        }
        if span > hi_corner as i64 - lo_corner as i64 {
            return Err(format!(
                "filter offsets up to {span} exceed the {}-wide corner field",
                hi_corner as i64 - lo_corner as i64 + 1
            ));
        }
        im.lower[d] = base as i32;
        im.upper[d] = upper as i32;
        im.element_strides[d + 1] = s as u32;
        dims[d + 1] = extent[t] as u64;
    }
    dims[3] = extent[N] as u64;
    let byte_strides = [strides[SPATIAL[0]], strides[SPATIAL[1]], strides[N]].map(|s| s * eb);
    if let Some(s) = byte_strides.iter().find(|s| !s.is_multiple_of(16)) {
        return Err(format!(
            "a stride of {name} is {s} bytes, not a multiple of 16 (channels not 16-byte aligned)"
        ));
    }
    let (boxes, copies, swizzle) = box_shape(dt, kmajor, rows, wg_rows, block_k)?;
    // One copy reads one tap: channels are whole boxes along them (bk K-major, an atom's rows
    // MN-major).
    let line = boxes[0];
    let channels = tap_axes[channel_pos].len;
    if !channels.is_multiple_of(line) {
        return Err(format!(
            "{channels} channels are not a multiple of {line} (one box line): a tile would \
             straddle filter taps"
        ));
    }
    if boxes[1] > MAX_BOX {
        return Err(format!(
            "{} pixels per copy exceed im2col's {MAX_BOX}",
            boxes[1]
        ));
    }
    let mut map_strides = [0u64; TENSOR_MAP_RANK - 1];
    map_strides[..3].copy_from_slice(&byte_strides);
    let mut b = [1u32; TENSOR_MAP_RANK];
    b[..2].copy_from_slice(&boxes);
    Ok(TmaTile {
        map: TensorMapSpec {
            dtype: dt,
            rank: RANK,
            dims,
            strides: map_strides,
            offset: 0,
            boxes: b,
            swizzle,
            im2col: Some(im),
        },
        kmajor,
        copies,
        grouped,
        im2col: Some(Im2colTile {
            tap_lens,
            tap_coefs,
            pixel_lens: [pixel_axes[0].len, pixel_axes[1].len, pixel_axes[2].len],
            group_channels: if grouped { extent[C] } else { 0 },
        }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lowering::lower;
    use crate::lowering::tma::tma_or_im2col_tile;

    /// The B operand's load (rows along N, `rows` per tile) of sub-GEMM `g` of `line`.
    fn b_tile(line: &str, g: usize, rows: u32, bk: u32) -> Result<TmaTile, String> {
        let p: ConvProblem = line.parse().unwrap();
        let l = lower(&p);
        let gm = &l.gemms[g];
        im2col_tile(&p, gm, &gm.b, Dim::N, (rows, rows), bk)
    }

    fn corners(t: &TmaTile) -> ([i32; 2], [i32; 2], [u32; 2]) {
        let m = t.map.im2col.unwrap();
        (
            [m.lower[0], m.lower[1]],
            [m.upper[0], m.upper[1]],
            [m.element_strides[1], m.element_strides[2]],
        )
    }

    #[test]
    fn forward_maps_match_hand_computed_corners_strides_and_offsets() {
        // 3x3 pad 1, 28x28, 256 channels: lower −pad, upper pad − (R−1)·dil = −1.
        let t = b_tile(
            "convbfp16 -n 64 -c 256 -H 28 -W 28 -k 256 -y 3 -x 3 -p 1 -q 1 -F 1 --layout NHWC",
            0,
            256,
            64,
        )
        .unwrap();
        assert!(t.kmajor && t.copies == 1 && !t.grouped);
        assert_eq!(corners(&t), ([-1, -1], [-1, -1], [1, 1]));
        assert_eq!(t.map.rank, 4);
        assert_eq!(t.map.dims[..4], [256, 28, 28, 64]);
        assert_eq!(t.map.strides[..3], [512, 512 * 28, 512 * 28 * 28]);
        assert_eq!(t.map.boxes[..4], [64, 256, 1, 1]);
        // Every box byte counts, zero-filled padding pixels included.
        assert_eq!(t.stage_bytes(), 64 * 256 * 2);
        let ic = t.im2col.unwrap();
        assert_eq!(ic.tap_lens, [1, 3, 3, 256]);
        assert_eq!(ic.pixel_lens, [64, 28, 28]);
        // Tap (y, x) = (2, 1): offsets (w, h) = (x·dil, y·dil).
        assert_eq!(ic.offsets([0, 2, 1, 0]), [1, 2]);
        // 5x5 pad 2: −2 and 2 − 4; dilation 2 on a 3x3 with pad 2: −2 and 2 − 2·2; offsets
        // carry the dilation.
        let t = b_tile(
            "convbfp16 -n 2 -c 64 -H 9 -W 9 -k 64 -y 5 -x 5 -p 2 -q 2 -F 1 --layout NHWC",
            0,
            64,
            64,
        )
        .unwrap();
        assert_eq!(corners(&t), ([-2, -2], [-2, -2], [1, 1]));
        let t = b_tile(
            "convbfp16 -n 2 -c 64 -H 9 -W 8 -k 64 -y 3 -x 3 -p 2 -q 2 -l 2 -j 2 -F 1 --layout NHWC",
            0,
            64,
            64,
        )
        .unwrap();
        assert_eq!(corners(&t), ([-2, -2], [-2, -2], [1, 1]));
        assert_eq!(t.im2col.unwrap().offsets([0, 1, 2, 0]), [4, 2]);
        // Stride 2, 3x3 pad 1 on 56x56 (Ho = 28): the box's last position is
        // −1 + 27·2 = 53 = 55 + upper, so upper = −2 (the canonical pad − (R−1)·dil = −1 ends
        // the box at 54, the same 28 positions).
        let t = b_tile(
            "convbfp16 -n 2 -c 64 -H 56 -W 56 -k 64 -y 3 -x 3 -p 1 -q 1 -u 2 -v 2 -F 1 --layout NHWC",
            0,
            128,
            64,
        )
        .unwrap();
        assert_eq!(corners(&t), ([-1, -1], [-2, -2], [2, 2]));
        // 1x1 stride 2 (no tiled view: the pixels do not nest), groups: the channel block.
        let t = b_tile(
            "convbfp16 -n 2 -c 256 -H 14 -W 14 -k 128 -y 1 -x 1 -u 2 -v 2 -g 2 -F 1 --layout NHWC",
            0,
            64,
            64,
        )
        .unwrap();
        assert_eq!(corners(&t), ([0, 0], [-1, -1], [2, 2]));
        assert!(t.grouped);
        assert_eq!(t.im2col.unwrap().group_channels, 128);
        assert_eq!(t.map.dims[0], 256);
    }

    #[test]
    fn what_im2col_cannot_express_is_refused_with_a_reason() {
        let fwd = |extra: &str, bk: u32| {
            b_tile(
                &format!("convbfp16 -n 2 -H 8 -W 8 -k 64 -y 3 -x 3 {extra} -F 1"),
                0,
                64,
                bk,
            )
            .unwrap_err()
        };
        let cases = [
            (fwd("-c 64 -p 1 -q 1", 64), "NCHW"),
            (fwd("-c 12 -p 1 -q 1 --layout NHWC", 64), "16-byte aligned"),
            (
                fwd("-c 32 -p 1 -q 1 --layout NHWC", 64),
                "straddle filter taps",
            ),
            (fwd("-c 64 -p 1 -q 1 --layout NHWC", 32), "swizzle span"),
            (fwd("-c 64 -p 130 -q 1 --layout NHWC", 64), "corner"),
        ];
        for (e, want) in cases {
            assert!(e.contains(want), "{want}: {e}");
        }
        // Too many pixels for one copy.
        let p = "convbfp16 -n 2 -c 64 -H 8 -W 8 -k 64 -y 3 -x 3 -p 1 -q 1 -F 1 --layout NHWC";
        assert!(b_tile(p, 0, 512, 64).unwrap_err().contains("256"));
        // The filter operand is never an im2col map.
        let pr: ConvProblem = p.parse().unwrap();
        let l = lower(&pr);
        let g = &l.gemms[0];
        let e = im2col_tile(&pr, g, &g.a, Dim::M, (64, 64), 64).unwrap_err();
        assert!(e.contains("activations"), "{e}");
        // Both reasons when neither mode fits.
        let p: ConvProblem = "convbfp16 -n 2 -c 64 -H 8 -W 8 -k 64 -y 3 -x 3 -p 1 -q 1 -F 1"
            .parse()
            .unwrap();
        let l = lower(&p);
        let g = &l.gemms[0];
        let e = tma_or_im2col_tile(&p, g, &g.b, Dim::N, (64, 64), 64).unwrap_err();
        assert!(e.contains("tiled: ") && e.contains("; im2col: "), "{e}");
    }

    /// Seed 000's six problems (fp32 backward data, pad 1): NCHW as given is refused for
    /// im2col; in NHWC the output gradient is an im2col map with pad' = dil·(Y−1) − pad, so
    /// lower = −pad' (the flipped filter is the other operand's business).
    #[test]
    fn seed_000_padding_problems() {
        for (hw, f) in [(14, 1), (14, 3), (15, 1), (16, 1), (18, 1), (20, 1)] {
            let line = format!(
                "conv -n 32 -c 32 -H {hw} -W {hw} -k 32 -y {f} -x {f} -p 1 -q 1 -u 1 -v 1 -F 2"
            );
            let e = b_tile(&line, 0, 64, 32).unwrap_err();
            assert!(e.contains("NCHW"), "{line}: {e}");
            let t = b_tile(&format!("{line} --layout NHWC"), 0, 64, 32).unwrap();
            let pad = f as i32 - 1 - 1;
            let (lower, upper, es) = corners(&t);
            assert_eq!((lower, es), ([-pad, -pad], [1, 1]), "{line}");
            // The box holds the input-gradient pixels: hw positions over an output of
            // hw + 2 − f + 1.
            let ho = hw + 2 - f as i32 + 1;
            assert_eq!(upper, [-pad + hw - 1 - (ho - 1); 2], "{line}");
            assert_eq!(t.im2col.unwrap().offsets([0, 0, 0, 0]), [f - 1; 2]);
        }
    }

    #[test]
    fn weight_gradient_reads_pixels_along_k_as_mn_major_blocks() {
        let line = "convbfp16 -n 2 -c 64 -H 8 -W 8 -k 64 -y 3 -x 3 -p 1 -q 1 -F 4 --layout NHWC";
        let t = b_tile(line, 0, 128, 64).unwrap();
        assert!(!t.kmajor);
        assert_eq!((t.copies, t.map.boxes[..2].to_vec()), (2, vec![64, 64]));
        assert_eq!(corners(&t), ([-1, -1], [-1, -1], [1, 1]));
    }
}
