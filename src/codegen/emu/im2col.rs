//! TMA copies in im2col mode in the emulator, written from the PTX ISA ("Tensor Map", im2col
//! mode: bounding box, traversal stride, im2col offsets) and the driver's
//! `cuTensorMapEncodeIm2col` parameters, independently of the lowering's derivation
//! (`lowering/im2col.rs`).
//!
//! A map of rank `r` is `[C, spatial…, N]`, spatial dimensions innermost first. Along spatial
//! dimension `d` the bounding box is `[lower[d], dims[d] − 1 + upper[d]]`. A copy with
//! coordinates `(c, s…, n)` and offsets `o…` gathers `pixelsPerColumn` (`boxes[1]`) pixels:
//! the first at `(s…, n)`, each next one `elementStrides[1]` further along the innermost
//! spatial dimension; past the box's end it wraps to the box's lower corner and the next
//! dimension out advances by its element stride, and past the outermost spatial dimension the
//! image index advances. Pixel `(s…, n)` is read at `(s + o…, n)`, `channelsPerPixel`
//! (`boxes[0]`) channels from `c`; any coordinate outside `[0, dims)` reads zero. The box lands
//! as one line of channels per pixel, 16-byte chunks swizzled as in tile mode. A first pixel
//! outside the bounding box, a tile-mode map, or a channel element stride other than 1 is a
//! reported violation (the kernel side never needs one).

use super::runtime::thread;
use super::tma::{land, queue, read_map, HostMap, IM2COL_WORD, MAP_WORDS};
use crate::abi::TENSOR_MAP_RANK;

/// The corners and element strides of an im2col host map.
struct Im2colWords {
    lower: [i64; TENSOR_MAP_RANK - 2],
    upper: [i64; TENSOR_MAP_RANK - 2],
    estride: [i64; TENSOR_MAP_RANK],
}

impl Im2colWords {
    fn of(m: &[u64; MAP_WORDS]) -> Self {
        Im2colWords {
            lower: std::array::from_fn(|d| m[17 + d] as i64),
            upper: std::array::from_fn(|d| m[20 + d] as i64),
            estride: std::array::from_fn(|d| ((m[23] >> (8 * d)) & 0xFF) as i64),
        }
    }
}

/// The source address of every element of the im2col copy (`None`: zero fill), element `e`
/// being channel `e % channels` of pixel `e / channels`; or why the copy is invalid.
fn sources(
    h: &HostMap,
    w: &Im2colWords,
    coords: &[i32],
    offsets: &[i32],
) -> Result<Vec<Option<i64>>, String> {
    let rank = h.rank;
    if !(3..=TENSOR_MAP_RANK).contains(&rank) || coords.len() != rank {
        return Err(format!(
            "im2col TMA copy with {} coordinates for a rank-{rank} map (3..=5)",
            coords.len()
        ));
    }
    let ns = rank - 2;
    if w.estride[0] != 1 {
        return Err(format!("im2col channel element stride {}", w.estride[0]));
    }
    let (channels, pixels) = (h.boxes[0], h.boxes[1]);
    // Bounding box along each spatial dimension (map dimension d + 1).
    let hi = |d: usize| h.dims[d + 1] as i64 - 1 + w.upper[d];
    let mut pos: Vec<i64> = (0..ns).map(|d| coords[d + 1] as i64).collect();
    let mut image = coords[rank - 1] as i64;
    if let Some(d) = (0..ns).find(|&d| pos[d] < w.lower[d] || pos[d] > hi(d)) {
        return Err(format!(
            "im2col first pixel {pos:?} outside the bounding box along dimension {} ([{}, {}])",
            d + 1,
            w.lower[d],
            hi(d)
        ));
    }
    let mut out = Vec::with_capacity(channels * pixels);
    for _ in 0..pixels {
        let mut addr = Some(h.base as i64 + image * h.stride(rank - 1));
        if image < 0 || image as u64 >= h.dims[rank - 1] {
            addr = None;
        }
        for d in 0..ns {
            let at = pos[d] + offsets[d] as i64;
            if at < 0 || at as u64 >= h.dims[d + 1] {
                addr = None;
            }
            addr = addr.map(|a| a + at * h.stride(d + 1));
        }
        for ch in 0..channels {
            let c = coords[0] as i64 + ch as i64;
            let inside = c >= 0 && (c as u64) < h.dims[0];
            out.push(addr.filter(|_| inside).map(|a| a + c * h.stride(0)));
        }
        // Next pixel: innermost spatial dimension first, wrapping at the box's end.
        let mut d = 0;
        loop {
            if d == ns {
                image += w.estride[rank - 1];
                break;
            }
            pos[d] += w.estride[d + 1];
            if pos[d] <= hi(d) {
                break;
            }
            pos[d] = w.lower[d];
            d += 1;
        }
    }
    Ok(out)
}

#[allow(clippy::too_many_arguments)]
pub(crate) extern "C" fn emu_tma_load_im2col(
    ctx: *const u8,
    dst: *const u8,
    map: *const u64,
    n: u32,
    c0: i32,
    c1: i32,
    c2: i32,
    c3: i32,
    c4: i32,
    o0: i32,
    o1: i32,
    o2: i32,
    bar: *const u8,
) {
    // SAFETY: called by emulated kernels with their context.
    let t = unsafe { thread(ctx) };
    // SAFETY: `map` is the host map the emulator passed.
    let chunks = unsafe { im2col_chunks(t, dst, map, n, [c0, c1, c2, c3, c4], [o0, o1, o2]) };
    if let Some(chunks) = chunks {
        queue(t, bar, chunks);
    }
}

/// `emu_tma_load_im2col` with `.multicast::cluster` to the cluster blocks in `mask`.
#[allow(clippy::too_many_arguments)]
pub(crate) extern "C" fn emu_tma_load_im2col_multicast(
    ctx: *const u8,
    dst: *const u8,
    map: *const u64,
    n: u32,
    c0: i32,
    c1: i32,
    c2: i32,
    c3: i32,
    c4: i32,
    o0: i32,
    o1: i32,
    o2: i32,
    bar: *const u8,
    mask: u32,
) {
    // SAFETY: called by emulated kernels with their context.
    let t = unsafe { thread(ctx) };
    // SAFETY: `map` is the host map the emulator passed.
    let chunks = unsafe { im2col_chunks(t, dst, map, n, [c0, c1, c2, c3, c4], [o0, o1, o2]) };
    if let Some(chunks) = chunks {
        super::cluster::multicast(t, bar, chunks, mask);
    }
}

/// The chunks of the im2col copy of `emu_tma_load_im2col`'s arguments, or why not (recorded).
///
/// # Safety
/// `map` is a host map the emulator passed.
unsafe fn im2col_chunks(
    t: &super::runtime::Thread,
    dst: *const u8,
    map: *const u64,
    n: u32,
    coords: [i32; 5],
    offsets: [i32; 3],
) -> Option<Vec<super::sync::Landing>> {
    // SAFETY: see the function contract.
    let m = unsafe { read_map(map) };
    if m[IM2COL_WORD] != 1 {
        t.record("an im2col TMA copy from a tile-mode tensor map");
        return None;
    }
    let h = HostMap::of(&m);
    let n = (n as usize).min(TENSOR_MAP_RANK);
    if let Some(o) = offsets
        .iter()
        .find(|&&o| !(0..=u16::MAX as i32).contains(&o))
    {
        t.record(&format!("im2col offset {o} is not a 16-bit value"));
        return None;
    }
    let src = match sources(&h, &Im2colWords::of(&m), &coords[..n], &offsets) {
        Ok(s) => s,
        Err(e) => {
            t.record(&e);
            return None;
        }
    };
    let d = (dst as usize).wrapping_sub(t.block.smem as usize);
    land(t, &h, h.boxes[0], src.len(), d, |e| src[e])
}

#[cfg(test)]
mod tests {
    use super::super::tma::host_map;
    use super::*;
    use crate::abi::{Im2colMap, TensorMapSpec};
    use crate::problem::DType;

    /// A 1-image 3×4 (h × w) NHWC map of 8 channels, 5 pixels per copy, and the given corners
    /// and stride; the base address is 0 so sources are byte offsets.
    fn map(lower: [i32; 2], upper: [i32; 2], stride: u32) -> [u64; MAP_WORDS] {
        let spec = TensorMapSpec {
            dtype: DType::BF16,
            rank: 4,
            dims: [8, 4, 3, 1, 1],
            strides: [16, 64, 192, 0],
            offset: 0,
            boxes: [8, 5, 1, 1, 1],
            swizzle: crate::abi::MapSwizzle::None,
            im2col: Some(Im2colMap {
                lower: [lower[0], lower[1], 0],
                upper: [upper[0], upper[1], 0],
                element_strides: [1, stride, stride, 1, 1],
            }),
        };
        host_map(&spec, 0)
    }

    /// The (h, w) each pixel of a copy reads, `None` for zero fill (channel 0's source).
    fn pixels(m: &[u64; MAP_WORDS], coords: [i32; 4], off: [i32; 2]) -> Vec<Option<(i64, i64)>> {
        let src = sources(
            &HostMap::of(m),
            &Im2colWords::of(m),
            &coords,
            &[off[0], off[1], 0],
        )
        .unwrap();
        src.chunks(8)
            .map(|px| px[0].map(|a| (a / 64, (a % 64) / 16)))
            .collect()
    }

    #[test]
    fn a_padded_box_walks_rows_and_zero_fills_the_border() {
        // 3x3 filter, pad 1: box w in [-1, 4 - 1 - 1] = [-1, 2], h in [-1, 1].
        let m = map([-1, -1], [-1, -1], 1);
        // Start at output pixel (0, 3) = input (-1, 2); tap (y, x) = (1, 2).
        let got = pixels(&m, [0, 2, -1, 0], [2, 1]);
        // Pixels (h, w): (-1, 2), then wrap to (0, -1), (0, 0), (0, 1), (0, 2); read at
        // (h + 1, w + 2): (0, 4) is outside (w = 4), then (1, 1), (1, 2), (1, 3), (1, 4) out.
        assert_eq!(got, [None, Some((1, 1)), Some((1, 2)), Some((1, 3)), None]);
    }

    #[test]
    fn a_strided_box_steps_by_the_element_stride_and_moves_to_the_next_image() {
        // Stride 2, 1x1, no pad: w in [0, 4 - 1 - 1] (0, 2), h in [0, 3 - 1 + 0] (0, 2); the
        // 5th pixel is image 1 (zero).
        let m = map([0, 0], [-1, 0], 2);
        let got = pixels(&m, [0, 0, 0, 0], [0, 0]);
        assert_eq!(
            got,
            [Some((0, 0)), Some((0, 2)), Some((2, 0)), Some((2, 2)), None]
        );
        // A first pixel outside the box is refused.
        let e = sources(
            &HostMap::of(&m),
            &Im2colWords::of(&m),
            &[0, 3, 0, 0],
            &[0, 0, 0],
        );
        assert!(e.unwrap_err().contains("bounding box"));
    }
}
