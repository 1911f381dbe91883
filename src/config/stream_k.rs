//! The stream-K schedule (`red=stream`): how output tiles and their K tiles are dealt to a
//! persistent grid of blocks. Kept apart from the config struct because it is pure arithmetic
//! on tile counts that legality, the cost model and the code generators must share.

use super::fixup;

/// A stream-K schedule (`red=stream`), data-parallel and stream-K in one (CUTLASS's
/// "DP + SK", the stream-K paper's hybrid): `blocks` persistent blocks, at most one per SM.
/// The output tiles are cut in two regions, tile-major:
///
/// - the **stream-K region**, tiles `[0, sk_tiles)`: its `sk_tiles × k_tiles` (output tile,
///   K tile) iterations are cut in contiguous ranges of `per_block`, block `b` walking
///   `[b · per_block, (b + 1) · per_block)`; a tile split between blocks is finished by the
///   split-K fix-up (the last contributor adds the partials in K order);
/// - the **data-parallel region**, tiles `[sk_tiles, tiles)`: `dp_waves` full waves of whole
///   tiles, block `b` taking `sk_tiles + b + j · blocks` for `j < dp_waves`, no fix-up.
///
/// Each block walks its stream-K range first, so the fix-up's serial adding overlaps the
/// data-parallel tiles that follow instead of ending the kernel. The stream-K region is the
/// last partial wave alone when spreading it gives every block at least
/// [`Self::MIN_PER_BLOCK`] K tiles; otherwise it takes one full wave more (so a block's range
/// is between one and two tiles: the paper's "two-tile stream-K + DP"), and with fewer than two
/// full waves it is everything (plain stream-K). Either way the busiest block walks
/// `dp_waves · k_tiles + per_block` iterations. The one place legality, the cost model and
/// the code generators (`ld=cp`, and `ld=ws` with `pk=1`) take the schedule from.
///
/// When the stream-K region has fewer tiles than blocks, its iterations are not cut
/// tile-major but [`StreamCut::Aligned`]: every tile at the same K offsets, so that the blocks
/// running at once read the same K rows of the operands.
///
/// (`ld=wspp` does not walk it: [`PerfConfig::stream_refusal`](super::PerfConfig::stream_refusal).)
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamK {
    /// Output tiles.
    pub tiles: u32,
    /// K tiles per output tile.
    pub k_tiles: u32,
    /// Blocks of the grid (at most one per SM, and no more than the work needs).
    pub blocks: u32,
    /// Iterations per block in the stream-K region (the last stream-K block may have fewer,
    /// and blocks past the region's end none).
    pub per_block: u32,
    /// Full waves of whole tiles after the stream-K region (0: plain stream-K).
    pub dp_waves: u32,
    /// How the stream-K region's iterations are cut among the blocks.
    pub cut: StreamCut,
}

/// How the stream-K region's (output tile, K tile) iterations are cut among blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamCut {
    /// Tile-major: block `b` walks `[b · per_block, (b + 1) · per_block)`. With fewer tiles
    /// than blocks this puts the co-resident blocks of different tiles at unrelated K offsets
    /// (tile `t` starts wherever block `t · k_tiles / per_block`'s range happens to): no two
    /// read the same operand rows at once, and on the H100 a long-K bwd-weight (24 tiles of
    /// 784 K tiles on 132 SMs) fetched its operands from DRAM about four times and ran 1.6×
    /// slower than a split-K of the same tiles (BENCHMARKS.md, session 33, call 7).
    Contiguous,
    /// Fewer tiles than blocks: each tile's K range is cut at the same offsets, a head of
    /// `splits` pieces of `per_block` K tiles (the last may be shorter), block
    /// `t · splits + j` walking piece `j` of tile `t` (numbered as the tile-major cut numbers
    /// them, so that where the two cuts coincide the kernels are the same), and a tail of
    /// `tail` K tiles; the blocks left over
    /// (fewer than the tiles) walk `tails_per_block` consecutive tiles' tails each, whose
    /// length makes that about a piece's work. At any moment the running blocks sit at
    /// `splits + 1` K offsets, like a split-K's slices, yet every SM is busy.
    Aligned {
        /// Head pieces per tile.
        splits: u32,
        /// K tiles of each tile's tail, after the head (0: no tail blocks).
        tail: u32,
        /// Tails one tail block walks.
        tails_per_block: u32,
    },
}

impl StreamK {
    /// Fewest K tiles a block should walk: below it the fix-up costs more than the balance
    /// gains (CUTLASS's stream-K minimum).
    pub const MIN_PER_BLOCK: u32 = 8;

    /// The schedule of `tiles` output tiles of `k_tiles` K tiles over at most `units` blocks.
    pub fn new(tiles: u32, k_tiles: u32, units: u32) -> Self {
        let units = units.max(1);
        let k = u64::from(k_tiles.max(1));
        let waves = tiles / units;
        let tail = tiles % units;
        // The partial wave alone, if spread over every block it still gives each enough K
        // tiles; else one full wave more.
        let dp_waves = if u64::from(tail) * k >= u64::from(units) * u64::from(Self::MIN_PER_BLOCK) {
            waves
        } else {
            waves.saturating_sub(1)
        };
        let sk_tiles = tiles - dp_waves * units;
        if let Some((cut, per_block, sk_blocks)) = Self::aligned(sk_tiles, k_tiles, units) {
            return StreamK {
                tiles,
                k_tiles,
                blocks: if dp_waves > 0 { units } else { sk_blocks },
                per_block,
                dp_waves,
                cut,
            };
        }
        let total = u64::from(sk_tiles) * k;
        let sk_blocks = u64::from(units).min(total.max(1));
        let per_block = total.div_ceil(sk_blocks).max(1);
        // Blocks left without stream-K work by the rounding up are dropped, unless they have
        // data-parallel tiles.
        let blocks = if dp_waves > 0 {
            u64::from(units)
        } else {
            total.div_ceil(per_block).max(1)
        };
        StreamK {
            tiles,
            k_tiles,
            blocks: blocks as u32,
            per_block: per_block as u32,
            dp_waves,
            cut: StreamCut::Contiguous,
        }
    }

    /// The [`StreamCut::Aligned`] cut of `tiles` tiles of `k` K tiles over `units` blocks, its head
    /// pieces' length and the blocks it uses; `None` with as many tiles as blocks, or where a
    /// piece or a tail would be shorter than [`Self::MIN_PER_BLOCK`] (then the tile-major
    /// cut balances better, and short K ranges fit in L2 anyway).
    fn aligned(tiles: u32, k: u32, units: u32) -> Option<(StreamCut, u32, u32)> {
        if tiles == 0 || tiles >= units {
            return None;
        }
        let (splits, left) = (units / tiles, units % tiles);
        // `left` blocks take `tails_per_block` tails each; a tail of k / (splits · tails + 1)
        // (rounded) makes that as much work as a head piece.
        let (tail, tails_per_block) = if left == 0 {
            (0, 0)
        } else {
            let g = tiles.div_ceil(left);
            let parts = splits * g + 1;
            let q = (2 * k + parts) / (2 * parts);
            if q < Self::MIN_PER_BLOCK {
                return None;
            }
            (q, g)
        };
        let head = k - tail;
        let per = head.div_ceil(splits);
        if per < Self::MIN_PER_BLOCK {
            return None;
        }
        let splits = head.div_ceil(per);
        let tail_blocks = if tail > 0 {
            tiles.div_ceil(tails_per_block)
        } else {
            0
        };
        let cut = StreamCut::Aligned {
            splits,
            tail,
            tails_per_block,
        };
        Some((cut, per, splits * tiles + tail_blocks))
    }

    /// Tiles of the stream-K region (the first ones).
    pub fn sk_tiles(&self) -> u32 {
        self.tiles - self.dp_waves * self.blocks
    }

    /// Blocks with stream-K iterations (the first ones).
    pub fn sk_blocks(&self) -> u32 {
        let tiles = self.sk_tiles();
        match self.cut {
            StreamCut::Contiguous => (u64::from(tiles) * u64::from(self.k_tiles))
                .div_ceil(u64::from(self.per_block)) as u32,
            StreamCut::Aligned {
                splits,
                tail,
                tails_per_block,
            } => {
                splits * tiles
                    + if tail > 0 {
                        tiles.div_ceil(tails_per_block)
                    } else {
                        0
                    }
            }
        }
    }

    /// Iterations the busiest block walks.
    pub fn most_per_block(&self) -> u32 {
        let sk = match self.cut {
            StreamCut::Contiguous => self.per_block,
            StreamCut::Aligned {
                tail,
                tails_per_block,
                ..
            } => self.per_block.max(tail * tails_per_block),
        };
        self.dp_waves * self.k_tiles + sk
    }

    /// Most blocks that contribute to one output tile (the fix-up's slices per tile).
    pub fn max_contributors(&self) -> u32 {
        match self.cut {
            StreamCut::Contiguous => self.k_tiles.div_ceil(self.per_block) + 1,
            StreamCut::Aligned { splits, tail, .. } => splits + u32::from(tail > 0),
        }
    }

    /// Most output tiles one block's stream-K range touches (the kernels' segment loop).
    pub fn max_segments(&self) -> u32 {
        match self.cut {
            StreamCut::Contiguous => self.per_block.div_ceil(self.k_tiles) + 1,
            StreamCut::Aligned {
                tails_per_block, ..
            } => tails_per_block.max(1),
        }
    }

    /// The fix-up of the stream-K region with `block_m × block_n` tiles: a counter and
    /// [`Self::max_contributors`] partial slots for each of its tiles (the data-parallel tiles
    /// need none).
    pub fn fixup(&self, block_m: u32, block_n: u32) -> fixup::Fixup {
        fixup::Fixup::new(self.sk_tiles(), self.max_contributors(), block_m, block_n)
    }

    /// The work of block `b`, in the order it walks it: `(tile, first K tile, end)` per unit,
    /// the stream-K segments then the data-parallel tiles. The kernels compute the same in
    /// IR; this form is for tests and tools.
    pub fn units_of(&self, b: u32) -> Vec<(u32, u32, u32)> {
        let mut out = Vec::new();
        match self.cut {
            StreamCut::Contiguous => {
                let (k, per) = (u64::from(self.k_tiles), u64::from(self.per_block));
                let total = u64::from(self.sk_tiles()) * k;
                let start = u64::from(b) * per;
                let end = (start + per).min(total);
                let mut it = start;
                while it < end {
                    let t = it / k;
                    let hi = ((t + 1) * k).min(end);
                    out.push((t as u32, (it - t * k) as u32, (hi - t * k) as u32));
                    it = hi;
                }
            }
            StreamCut::Aligned { .. } => {
                let a = self.aligned_walk(b);
                out.extend((a.first..a.first + a.count).map(|t| (t, a.lo, a.hi)));
            }
        }
        for j in 0..self.dp_waves {
            out.push((self.sk_tiles() + b + j * self.blocks, 0, self.k_tiles));
        }
        out
    }

    /// Block `b`'s units under [`StreamCut::Aligned`] (none for a block past the stream-K blocks):
    /// the kernels compute the same in IR.
    pub fn aligned_walk(&self, b: u32) -> AlignedWalk {
        let StreamCut::Aligned {
            splits,
            tail,
            tails_per_block,
        } = self.cut
        else {
            panic!("aligned_walk of a {:?} cut", self.cut);
        };
        let (tiles, head) = (self.sk_tiles(), self.k_tiles - tail);
        if b < splits * tiles {
            let j = b % splits;
            AlignedWalk {
                first: b / splits,
                count: 1,
                lo: j * self.per_block,
                hi: ((j + 1) * self.per_block).min(head),
                slice: j,
            }
        } else {
            let first = (b - splits * tiles) * tails_per_block;
            let count = if tail > 0 && first < tiles {
                tails_per_block.min(tiles - first)
            } else {
                0
            };
            AlignedWalk {
                first,
                count,
                lo: head,
                hi: self.k_tiles,
                slice: splits,
            }
        }
    }

    /// Blocks of the last wave of the data-parallel schedule (one block per tile) over
    /// `units` SMs; 0 when the waves are full.
    pub fn data_parallel_tail(tiles: u32, units: u32) -> u32 {
        tiles % units.max(1)
    }
}

/// One block's stream-K units under [`StreamCut::Aligned`]: tiles `first .. first + count`, each
/// over K tiles `lo .. hi`, as contribution `slice` (the order of the fix-up's sum).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AlignedWalk {
    /// First tile.
    pub first: u32,
    /// Tiles (0 for a block without stream-K work).
    pub count: u32,
    /// First K tile of each unit.
    pub lo: u32,
    /// End of each unit's K tiles.
    pub hi: u32,
    /// The units' place in their tiles' sums.
    pub slice: u32,
}
