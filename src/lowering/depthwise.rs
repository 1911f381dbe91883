//! The depthwise convolution as the direct kernel (`mma=dw`) sees it: which problems it runs,
//! and the index math every part of it shares — legality, the code generator, the cost model.
//!
//! A depthwise problem has one input channel per group (G = C, K = m·C for a depth multiplier
//! m). Its implicit GEMM packs several groups into one tile with a block-diagonal filter
//! ([`super::groups`]), doing many times the useful multiply-adds of a problem that is
//! memory-bound anyway; the direct kernel reads each activation once per filter row from
//! cache and does only the useful ones.
//!
//! The three directions are one formula. The kernel writes `dst[n][h][w][ch]` (channels
//! innermost) as `Σ_t src[n][h·stride + t·dil + offset][ch / m] · W[ch][tap(t)]` over the
//! filter taps `t` that land inside `src`:
//!
//! - forward: `src` = input, `dst` = output, `offset` = −pad, `tap(t)` = t;
//! - backward data (stride 1, m = 1): `src` = output gradient, `dst` = input gradient, the
//!   filter flipped (`tap(t)` = Y − 1 − t) and `offset` = pad − dil·(Y − 1), because
//!   `dx[h] = Σ_y dy[h + pad − y·dil] · W[y]`. Strided backward data would make the taps a
//!   pixel meets depend on its residue modulo the stride: refused.
//! - backward weight: the same walk read the other way round. `src` = input, `dst` = output
//!   gradient (read, not written), `offset` = −pad, and the kernel reduces
//!   `dW[ch][tap(t)] = Σ_pixels src[…][ch / m] · dst[…][ch]` over every `dst` pixel
//!   ([`DwShape::reduce`]): each block sums its share of the pixels in f32 and adds the sums
//!   into an f32 copy of the filter gradient (the GEMM paths pack groups block-diagonally
//!   there too, and a depthwise bwd-weight ran at 0.32× cuDNN: session 25, call 6).

use crate::arch::Arch;
use crate::config::{DwSums, DwTile};
use crate::problem::{ConvProblem, DType, Direction, Tensor};

/// Registers per thread beyond the tile's values: addresses, indices, bounds (estimate).
const OVERHEAD_REGS: u32 = 32;

/// One depthwise problem in the kernel's terms (see the module doc for the formula).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DwShape {
    /// Element type of every tensor.
    pub dtype: DType,
    /// Images.
    pub batch: u32,
    /// Channels of `dst`; a thread's vector runs along them.
    pub channels: u32,
    /// `dst` channels per `src` channel (the depth multiplier; 1 for backward data).
    pub multiplier: u32,
    /// The activation read.
    pub src: Tensor,
    /// The activation written.
    pub dst: Tensor,
    /// `src`'s (H, W).
    pub src_hw: [u32; 2],
    /// `dst`'s (H, W).
    pub dst_hw: [u32; 2],
    /// Filter (Y, X).
    pub taps: [u32; 2],
    /// Step in `src` per `dst` pixel, per spatial dimension.
    pub stride: [u32; 2],
    /// Step in `src` per filter tap.
    pub dilation: [u32; 2],
    /// `src` coordinate of `dst` pixel 0 and tap 0 (may be negative: padding).
    pub offset: [i64; 2],
    /// Whether tap `t` reads filter element `taps − 1 − t` (backward data).
    pub flip: bool,
    /// Backward weight: `dst` (the output gradient) is read, and the kernel sums
    /// `src · dst` over its pixels into the filter gradient instead of writing `dst`.
    pub reduce: bool,
    /// Element strides of `src` along (n, h, w); its channels are contiguous.
    pub src_strides: [u64; 3],
    /// Element strides of `dst` along (n, h, w); its channels are contiguous.
    pub dst_strides: [u64; 3],
    /// Element strides of the filter along (group, channel in group, y, x).
    pub filter_strides: [u64; 4],
}

/// Whether activation `t` of `p` has its channels (groups × channels per group) contiguous
/// and innermost, which the kernel's channel vectors need.
fn channels_contiguous(p: &ConvProblem, t: Tensor) -> bool {
    let d = p.logical_dims(t);
    let s = p.strides(t);
    (d[1] == 1 || s[1] == u64::from(d[2])) && (d[2] == 1 || s[2] == 1)
}

impl DwShape {
    /// The kernel's view of `p`, or why it does not run `p`.
    pub fn of(p: &ConvProblem) -> Result<DwShape, String> {
        let s = p.sizes();
        if p.c_per_group() != 1 {
            return Err(format!(
                "not depthwise: {} input channels per group (mma=dw needs groups = C)",
                p.c_per_group()
            ));
        }
        let m = p.k_per_group();
        let [ho, wo] = p.out_size();
        let dir = p.direction();
        let (src, dst) = match dir {
            Direction::Fwd => (Tensor::Input, Tensor::Output),
            Direction::BwdData => (Tensor::Output, Tensor::Input),
            Direction::BwdWeight => (Tensor::Input, Tensor::Output),
        };
        if dir == Direction::BwdData {
            if m != 1 {
                return Err(format!(
                    "bwd-data with a depth multiplier of {m}: mma=dw runs backward data only \
                     with K = C"
                ));
            }
            if s.stride != [1, 1] {
                return Err(format!(
                    "bwd-data with stride {}x{}: mma=dw runs backward data only at stride 1 \
                     (a pixel's taps would depend on its residue modulo the stride)",
                    s.stride[0], s.stride[1]
                ));
            }
        }
        for t in [src, dst] {
            if !channels_contiguous(p, t) {
                return Err(format!(
                    "the {} is not channels-last with contiguous channels: mma=dw reads and \
                     writes channel vectors (a channels-first problem runs it through \
                     xf=nhwc_out)",
                    t.name()
                ));
            }
        }
        let pixel = |t: Tensor| {
            let st = p.strides(t);
            [st[0], st[3], st[4]]
        };
        let fs = p.strides(Tensor::Filter);
        let taps = [s.y, s.x];
        let bwd = dir == Direction::BwdData;
        let offset = std::array::from_fn(|d| {
            let pad = i64::from(s.pad[d]);
            if bwd {
                pad - i64::from(s.dilation[d]) * (i64::from(taps[d]) - 1)
            } else {
                -pad
            }
        });
        let (src_hw, dst_hw) = if bwd {
            ([ho, wo], [s.h, s.w])
        } else {
            ([s.h, s.w], [ho, wo])
        };
        Ok(DwShape {
            dtype: p.dtype(),
            batch: s.n,
            channels: if bwd { s.c } else { s.k },
            multiplier: m,
            src,
            dst,
            src_hw,
            dst_hw,
            taps,
            stride: s.stride,
            dilation: s.dilation,
            offset,
            flip: bwd,
            reduce: dir == Direction::BwdWeight,
            src_strides: pixel(src),
            dst_strides: pixel(dst),
            filter_strides: [fs[0], fs[1], fs[3], fs[4]],
        })
    }

    /// Channels of `src`.
    pub fn src_channels(&self) -> u32 {
        self.channels / self.multiplier
    }

    /// Elements of `src` one thread's vector of `vec` `dst` channels reads per pixel: `vec / m`
    /// when the multiplier divides it, else 1 (`vec` divides the multiplier: every channel of
    /// the vector reads the same `src` channel).
    pub fn src_vec(&self, vec: u32) -> u32 {
        (vec / self.multiplier).max(1)
    }

    /// Why `vec` channels per thread cannot be read and written as one vector, if not: at most
    /// `max_bytes`, a power of two dividing the channels (so that every pixel's vector is
    /// aligned), and a divisor or multiple of the depth multiplier.
    pub fn vec_misfit(&self, vec: u32, max_bytes: u32) -> Option<String> {
        let bytes = vec * self.dtype.bytes();
        if !vec.is_power_of_two() || bytes > max_bytes {
            return Some(format!(
                "va = {vec} is not a power of two of at most {max_bytes} bytes"
            ));
        }
        if !self.channels.is_multiple_of(vec) {
            return Some(format!(
                "va = {vec} does not divide the {} channels of the {} (every pixel's vector \
                 must be aligned; the widest that divides is {})",
                self.channels,
                self.dst.name(),
                self.widest_vec(max_bytes)
            ));
        }
        let m = self.multiplier;
        if !vec.is_multiple_of(m) && !m.is_multiple_of(vec) {
            return Some(format!(
                "va = {vec} is neither a multiple nor a divisor of the depth multiplier {m}"
            ));
        }
        None
    }

    /// The widest legal vector (elements) within `max_bytes`.
    pub fn widest_vec(&self, max_bytes: u32) -> u32 {
        let m = self.multiplier;
        let mut v = 1 << (max_bytes / self.dtype.bytes()).max(1).ilog2();
        while v > 1
            && !(self.channels.is_multiple_of(v) && (v.is_multiple_of(m) || m.is_multiple_of(v)))
        {
            v /= 2;
        }
        v
    }

    /// `src` rows and columns one thread's tile of `rows × cols` pixels spans.
    pub fn span(&self, rows: u32, cols: u32) -> [u32; 2] {
        let out = [rows, cols];
        std::array::from_fn(|d| {
            (out[d] - 1) * self.stride[d] + (self.taps[d] - 1) * self.dilation[d] + 1
        })
    }

    /// Pixel tiles of `rows × cols` along (H, W) of `dst`.
    pub fn tiles_hw(&self, rows: u32, cols: u32) -> [u32; 2] {
        [
            self.dst_hw[0].div_ceil(rows.max(1)),
            self.dst_hw[1].div_ceil(cols.max(1)),
        ]
    }

    /// Shared memory of a block of `channels` channels: the filter taps of its channels in
    /// f32, `[tap][channel]` (backward weight: the block's sums of them, the same size).
    pub fn filter_bytes(&self, channels: u32) -> u64 {
        u64::from(channels) * u64::from(self.taps[0] * self.taps[1]) * 4
    }

    /// Registers per thread (estimate) of a tile of `vec` channels × `rows × cols` pixels:
    /// the f32 accumulators, the filter taps of its channels (the compiler keeps each one
    /// loaded from shared memory once), one row of `src` vectors, and addressing.
    pub fn registers(&self, vec: u32, rows: u32, cols: u32) -> u32 {
        // Backward weight swaps the roles: sums per tap, the tile's `dst` values held.
        let acc = vec * rows * cols;
        let filter = vec * self.taps[0] * self.taps[1];
        let row = self.span(rows, cols)[1] * self.src_vec(vec);
        acc + filter + row + OVERHEAD_REGS
    }

    /// Why `tile` cannot run this problem on `arch`, if it cannot: the vector, the tile's
    /// shape, threads, shared memory and registers, in that order. Legality checks the same
    /// pieces at the loop levels of their fields; the code generator calls this.
    pub fn tile_refusal(&self, tile: &DwTile, arch: &Arch) -> Option<String> {
        if let Some(why) = self.vec_misfit(tile.vec, arch.max_vector_bytes) {
            return Some(why);
        }
        if let Some(why) = self.smem_refusal(tile.channels, arch) {
            return Some(why);
        }
        if let Some(why) = tile.misfit() {
            return Some(why);
        }
        if let Some(why) = self.sums_refusal(tile) {
            return Some(why);
        }
        self.thread_refusal(tile, arch)
    }

    /// Why a block of `channels` channels does not fit its filter in shared memory.
    pub fn smem_refusal(&self, channels: u32, arch: &Arch) -> Option<String> {
        let bytes = self.filter_bytes(channels);
        (bytes > u64::from(arch.smem_per_block)).then(|| {
            format!(
                "the f32 filter taps of bm = {channels} channels take {bytes} bytes of shared \
                 memory (at most {})",
                arch.smem_per_block
            )
        })
    }

    /// Why `tile`'s threads per block or registers per thread do not fit `arch`.
    pub fn thread_refusal(&self, tile: &DwTile, arch: &Arch) -> Option<String> {
        let threads = tile.threads();
        if threads == 0 || threads > arch.max_threads_per_block {
            return Some(format!(
                "{threads} threads per block (bm / va × bn / (vb × vc)); 1 to {} on {}",
                arch.max_threads_per_block, arch.name
            ));
        }
        let regs = self.registers(tile.vec, tile.rows, tile.cols);
        // A block whose threads need more than the SM's register file is capped by the
        // compiler and spills (seen on the H200: 512 threads capped at 128 registers, 552
        // bytes of local memory, twice the time of the same tile in fewer threads).
        let block = u64::from(regs) * u64::from(threads);
        if regs <= arch.max_regs_per_thread && block > u64::from(arch.regs_per_sm) {
            return Some(format!(
                "{threads} threads × {regs} registers (estimate) exceed the {} registers of \
                 an SM: the compiler would spill",
                arch.regs_per_sm
            ));
        }
        (regs > arch.max_regs_per_thread).then(|| {
            format!(
                "register estimate {regs} per thread exceeds {} (va × vb × vc accumulators, \
                 va × Y × X filter taps, a row of inputs, addressing)",
                arch.max_regs_per_thread
            )
        })
    }

    /// Elements of `dst` (pixels × channels).
    pub fn dst_elems(&self) -> u64 {
        u64::from(self.batch)
            * u64::from(self.dst_hw[0])
            * u64::from(self.dst_hw[1])
            * u64::from(self.channels)
    }

    /// Pixel tiles of `dst` in all images, for a tile of `rows × cols` pixels.
    pub fn tiles(&self, rows: u32, cols: u32) -> u64 {
        let [th, tw] = self.tiles_hw(rows, cols);
        u64::from(self.batch) * u64::from(th) * u64::from(tw)
    }

    /// Backward weight: how many blocks share each channel block's pixel tiles, one
    /// contiguous run of tiles each. Enough blocks for every SM to hold as many as its threads
    /// allow (the sums cost one f32 add per block, channel and tap in the end), never more
    /// than there are runs of one tile per thread.
    pub fn slices(&self, tile: &DwTile, arch: &Arch) -> u32 {
        let threads = tile.threads().max(1);
        let per_sm = (arch.max_threads_per_sm / threads).clamp(1, arch.max_blocks_per_sm);
        let channel_blocks = self.channels.div_ceil(tile.channels.max(1));
        let want = (arch.compute_units * per_sm).div_ceil(channel_blocks);
        let most = self
            .tiles(tile.rows, tile.cols)
            .div_ceil(u64::from(tile.tiles().max(1)));
        u64::from(want).clamp(1, most.max(1)) as u32
    }

    /// Blocks along the pixels per channel block, and the pixel tiles each one takes: one
    /// tile a thread for forward and backward data; backward weight's [`Self::slices`], each
    /// a contiguous run of tiles its threads walk.
    pub fn pixel_blocks(&self, tile: &DwTile, arch: &Arch) -> (u64, u32) {
        let tiles = self.tiles(tile.rows, tile.cols);
        if self.reduce {
            let slices = u64::from(self.slices(tile, arch));
            (slices, tiles.div_ceil(slices) as u32)
        } else {
            (tiles.div_ceil(u64::from(tile.tiles())), tile.tiles())
        }
    }

    /// Backward weight: whether the blocks' sums go to the workspace (their own slots with
    /// [`DwSums::Partials`]; by atomics, an f32 copy of a 16-bit filter gradient, converted
    /// after) rather than into the filter gradient itself.
    pub fn sums_in_workspace(&self, tile: &DwTile) -> bool {
        self.reduce && (tile.sums == Some(DwSums::Partials) || self.dtype != DType::F32)
    }

    /// Kernel launches a run takes: the kernel; for backward weight by atomics also the
    /// zeroing of what the blocks add into and, with the sums in the workspace, the conversion
    /// after; by partials the kernel that adds the blocks' slots.
    pub fn launches(&self, tile: &DwTile) -> u32 {
        match (self.reduce, tile.sums) {
            (false, _) => 1,
            (true, Some(DwSums::Partials)) => 2,
            (true, _) => 2 + u32::from(self.sums_in_workspace(tile)),
        }
    }

    /// Elements of the filter gradient: one sum per channel and tap.
    pub fn filter_elems(&self) -> u64 {
        u64::from(self.channels) * u64::from(self.taps[0] * self.taps[1])
    }

    /// Why backward weight cannot combine its blocks' sums as `tile` asks (`red=stream`).
    pub fn sums_refusal(&self, tile: &DwTile) -> Option<String> {
        (self.reduce && tile.sums.is_none()).then(|| {
            "backward weight adds its blocks' sums by atomics (red=atomic) or as partials summed \
             by a second kernel (red=fixup); red=stream is a GEMM schedule"
                .to_string()
        })
    }

    /// Elements of `src`.
    pub fn src_elems(&self) -> u64 {
        u64::from(self.batch)
            * u64::from(self.src_hw[0])
            * u64::from(self.src_hw[1])
            * u64::from(self.src_channels())
    }
}

/// How the summing kernel of backward weight's partials ([`DwSums::Partials`]) spreads
/// `slots` slots of each gradient element over a block's threads: `lanes` threads an element
/// (a power of two up to 8, at most `slots`), each adding every `lanes`-th slot along
/// [`Self::CHAINS`] independent chains, so that that many of its loads are in flight at once
/// instead of each waiting for the add before it. Read by the code generator and the cost
/// model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlotSum {
    /// Slots of each element.
    pub slots: u32,
    /// Threads an element.
    pub lanes: u32,
}

impl SlotSum {
    /// Independent sums a thread keeps.
    pub const CHAINS: u32 = 4;

    /// The layout for `slots` slots.
    pub fn of(slots: u32) -> SlotSum {
        let mut lanes = 8;
        while lanes > 1 && lanes > slots {
            lanes /= 2;
        }
        SlotSum { slots, lanes }
    }

    /// Elements a block of `threads` threads (a multiple of 8) sums.
    pub fn per_block(&self, threads: u32) -> u32 {
        threads / self.lanes
    }

    /// Blocks of `threads` threads for `elems` elements.
    pub fn blocks(&self, elems: u64, threads: u32) -> u64 {
        elems.div_ceil(u64::from(self.per_block(threads)))
    }

    /// Rounds of dependent loads a thread waits through, each with [`Self::CHAINS`] in flight
    /// (what the cost model charges as latency).
    pub fn rounds(&self) -> u32 {
        self.slots.div_ceil(self.lanes * Self::CHAINS)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(line: &str) -> Result<DwShape, String> {
        DwShape::of(&line.parse().unwrap())
    }

    #[test]
    fn directions_and_refusals() {
        let f = shape(
            "convfp16 -n 2 -c 24 -H 7 -W 9 -k 48 -y 3 -x 5 -p 1 -q 3 -u 2 -v 1 -l 1 -j 2 -g 24 \
             -F 1 --layout NHWC",
        )
        .unwrap();
        assert_eq!((f.channels, f.multiplier, f.src_channels()), (48, 2, 24));
        assert_eq!((f.offset, f.flip), ([-1, -3], false));
        assert_eq!(f.src_hw, [7, 9]);
        assert_eq!(f.dst_hw, [4, 7]);
        assert_eq!(f.src_strides, [7 * 9 * 24, 9 * 24, 24]);
        assert_eq!(f.span(2, 4), [2 + 2 + 1, 3 + 8 + 1]);
        // m = 2: 8 channels read 4; 1 channel reads 1; 3 is no power of two.
        assert_eq!((f.src_vec(8), f.src_vec(1)), (4, 1));
        assert_eq!(f.vec_misfit(8, 16), None);
        assert!(f.vec_misfit(16, 16).unwrap().contains("at most 16 bytes"));
        assert_eq!(f.widest_vec(16), 8);
        let b = shape(
            "conv -n 1 -c 12 -H 5 -W 5 -k 12 -y 3 -x 3 -p 4 -q 0 -l 2 -j 2 -g 12 -F 2 \
             --layout NHWC",
        )
        .unwrap();
        assert_eq!(
            (b.src, b.dst, b.flip),
            (Tensor::Output, Tensor::Input, true)
        );
        assert_eq!(b.offset, [4 - 4, -4]);
        // Backward weight walks the output gradient's pixels over the input, as forward does.
        let w = shape(
            "conv -n 2 -c 8 -H 7 -W 9 -k 16 -y 3 -x 3 -p 1 -q 1 -u 2 -v 2 -g 8 -F 4 --layout NHWC",
        )
        .unwrap();
        assert_eq!(
            (w.src, w.dst, w.flip, w.reduce),
            (Tensor::Input, Tensor::Output, false, true)
        );
        assert_eq!((w.multiplier, w.channels, w.offset), (2, 16, [-1, -1]));
        assert!(!b.reduce);
        // 12 channels: a vector of 8 would start misaligned at every other pixel.
        assert!(b.vec_misfit(8, 16).is_some());
        assert_eq!(b.widest_vec(16), 4);
        for (line, why) in [
            (
                "conv -n 1 -c 8 -H 5 -W 5 -k 8 -y 3 -x 3 -g 4 -F 1 --layout NHWC",
                "not depthwise",
            ),
            (
                "conv -n 1 -c 8 -H 5 -W 5 -k 8 -y 3 -x 3 -u 2 -g 8 -F 2 --layout NHWC",
                "stride 2x1",
            ),
            (
                "conv -n 1 -c 8 -H 5 -W 5 -k 16 -y 3 -x 3 -g 8 -F 2 --layout NHWC",
                "multiplier",
            ),
            (
                "conv -n 1 -c 8 -H 5 -W 5 -k 8 -y 3 -x 3 -g 8 -F 1",
                "xf=nhwc_out",
            ),
        ] {
            let e = shape(line).unwrap_err();
            assert!(e.contains(why), "{line}: {e}");
        }
    }
}
