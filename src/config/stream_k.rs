//! The stream-K schedule (`red=stream`): how output tiles and their K tiles are dealt to a
//! persistent grid of blocks. Kept apart from the config struct because it is pure arithmetic
//! on tile counts that legality, the cost model and the code generators must share.

use super::fixup;
use serde::{Deserialize, Serialize};

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
/// With `cut=aligned` and fewer stream-K tiles than blocks, its iterations are cut
/// [`StreamCut::Aligned`] instead: every tile at the same K offsets, so that the blocks running
/// at once read the same K rows of the operands.
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

/// The stream-K cut a config asks for (`cut`, v7): `tile`, the tile-major cut (what every
/// string before `v7:` means), or `aligned` ([`StreamCut::Aligned`], where it applies). A knob
/// rather than a rule because neither wins everywhere: on the H200 the aligned cut ran the
/// long-K bwd-weight's stream-K shapes 1.3× faster, and the shipped stream-K entries from 9%
/// slower to 15% faster (BENCHMARKS.md, session 34).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Cut {
    /// Tile-major.
    Tile,
    /// Every tile cut at the same K offsets, where that is about as balanced.
    Aligned,
}

impl Cut {
    /// Every value, in the lattice order the search walks (the order of [`Self::NAMES`]).
    pub const ALL: [Cut; 2] = [Cut::Tile, Cut::Aligned];
    /// The names in config strings and search-space files, in the order of [`Self::ALL`].
    pub const NAMES: [&'static str; 2] = ["tile", "aligned"];

    /// The name in config strings and search-space files.
    pub fn name(self) -> &'static str {
        Self::NAMES[self as usize]
    }
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
    /// `splits` pieces of `per_block` K tiles, block `t · splits + j` walking piece `j` of tile
    /// `t` (numbered as the tile-major cut numbers them, so that where the two cuts coincide
    /// the kernels are the same), then a tail of `tail` K tiles a tile, the tails walked
    /// tile-major by the blocks left over, `tail_per` iterations each. The tail's length
    /// balances the two (a head piece's work is a tail block's), and the tile-major walk only
    /// spreads the tail blocks over the tail's K range. At any moment the head blocks sit at
    /// `splits` K offsets, like a split-K's slices, yet every SM is busy.
    Aligned {
        /// Head pieces per tile.
        splits: u32,
        /// K tiles of each tile's tail, after the head's `splits · per_block` (0: none).
        tail: u32,
        /// Tail iterations per tail block.
        tail_per: u32,
    },
}

/// A tile-major walk: `tiles × len` iterations (each tile's K tiles `k0 .. k0 + len`) cut in
/// ranges of `per`, block `i` of the region walking `[i · per, (i + 1) · per)`. The stream-K
/// region is one ([`StreamCut::Contiguous`]) or two ([`StreamCut::Aligned`]: the heads,
/// whose `per` divides `len`, and the tails); the kernels compute the same in IR.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Region {
    /// Output tiles.
    pub tiles: u32,
    /// K tiles of each tile in this region.
    pub len: u32,
    /// Iterations per block.
    pub per: u32,
    /// The region's first K tile in each tile.
    pub k0: u32,
}

impl Region {
    /// Iterations of the region.
    pub fn iterations(&self) -> u64 {
        u64::from(self.tiles) * u64::from(self.len)
    }

    /// Blocks with iterations here.
    pub fn blocks(&self) -> u32 {
        self.iterations().div_ceil(u64::from(self.per)) as u32
    }

    /// Most blocks that meet one tile (one more than some regions need: where `per` divides
    /// `len` a tile has `len / per`; the slot is kept so that the tile-major cut's workspace
    /// is what it always was).
    pub fn max_contributors(&self) -> u32 {
        self.len.div_ceil(self.per) + 1
    }

    /// Most tiles one block meets.
    pub fn max_segments(&self) -> u32 {
        self.per.div_ceil(self.len) + 1
    }

    /// The blocks (of the region) that meet tile `t`: the first and how many.
    pub fn contributors(&self, t: u32) -> (u32, u32) {
        let lo = u64::from(t) * u64::from(self.len);
        let (first, last) = (
            lo / u64::from(self.per),
            (lo + u64::from(self.len) - 1) / u64::from(self.per),
        );
        (first as u32, (last - first + 1) as u32)
    }

    /// Block `i`'s units, in order: `(tile, first K tile, end)`, K tiles of the whole tile.
    pub fn units_of(&self, i: u32) -> Vec<(u32, u32, u32)> {
        let (len, per) = (u64::from(self.len), u64::from(self.per));
        let start = u64::from(i) * per;
        let end = (start + per).min(self.iterations());
        let mut out = Vec::new();
        let mut it = start;
        while it < end {
            let t = it / len;
            let hi = ((t + 1) * len).min(end);
            let k = |x: u64| (x - t * len) as u32 + self.k0;
            out.push((t as u32, k(it), k(hi)));
            it = hi;
        }
        out
    }
}

impl StreamK {
    /// Fewest K tiles a block should walk: below it the fix-up costs more than the balance
    /// gains (CUTLASS's stream-K minimum).
    pub const MIN_PER_BLOCK: u32 = 8;

    /// How much busier (as a fraction `(num, den)`) the aligned cut's busiest block may be
    /// than the tile-major cut's and still be taken: blocks that read the same operand rows
    /// at once are worth that much (on the H200 the aligned cut ran the bwd-weight 3×3 c256's
    /// stream-K shapes 1.3× faster, BENCHMARKS.md session 34).
    pub const ALIGNED_SLACK: (u32, u32) = (1, 8);

    /// The schedule of `tiles` output tiles of `k_tiles` K tiles over at most `units` blocks,
    /// its stream-K region cut as `cut` asks where that cut applies (else tile-major).
    pub fn new(tiles: u32, k_tiles: u32, units: u32, cut: Cut) -> Self {
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
        let aligned = match cut {
            Cut::Tile => None,
            Cut::Aligned => Self::aligned(sk_tiles, k_tiles, units),
        };
        if let Some((cut, per_block)) = aligned {
            let mut sk = StreamK {
                tiles,
                k_tiles,
                blocks: units,
                per_block,
                dp_waves,
                cut,
            };
            if dp_waves == 0 {
                sk.blocks = sk.sk_blocks();
            }
            return sk;
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

    /// The [`StreamCut::Aligned`] cut of `tiles` tiles of `k` K tiles over `units` blocks and
    /// its head pieces' length. `units / tiles` pieces a tile leave `units mod tiles` blocks
    /// for the tails: a tail of about `k · left / units` K tiles gives head and tail blocks
    /// the tile-major cut's share each; of the rounded candidates (and no tail at all) the
    /// one whose busiest block walks least. `None` with as many tiles as blocks, where a head
    /// piece, a tail block's range or a tail would be under [`Self::MIN_PER_BLOCK`] K tiles
    /// (a short tail makes its blocks meet many tiles, each paying a fix-up), or where the
    /// busiest block would walk more than the tile-major cut's by over
    /// [`Self::ALIGNED_SLACK`].
    fn aligned(tiles: u32, k: u32, units: u32) -> Option<(StreamCut, u32)> {
        if tiles == 0 || tiles >= units {
            return None;
        }
        let short = |n: u32| n < Self::MIN_PER_BLOCK;
        let (s, left) = (units / tiles, units % tiles);
        let even = u64::from(k) * u64::from(left) / u64::from(units);
        let mut best: Option<(u32, StreamCut, u32)> = None;
        for q in [0, even, even + 1] {
            let q = q as u32;
            if q >= k || (q > 0 && left == 0) {
                continue;
            }
            let per = (k - q).div_ceil(s);
            let splits = s.min(k / per);
            let tail = k - splits * per;
            let tail_per = if tail > 0 {
                (tiles * tail).div_ceil(units - splits * tiles)
            } else {
                0
            };
            if short(per) || (tail > 0 && (short(tail) || short(tail_per))) {
                continue;
            }
            let busiest = per.max(tail_per);
            if best.is_none_or(|(b, ..)| busiest < b) {
                let cut = StreamCut::Aligned {
                    splits,
                    tail,
                    tail_per,
                };
                best = Some((busiest, cut, per));
            }
        }
        let (busiest, cut, per) = best?;
        let tile_major = (tiles * k).div_ceil(units);
        let (num, den) = Self::ALIGNED_SLACK;
        (busiest * den <= tile_major * (den + num)).then_some((cut, per))
    }

    /// The stream-K region's walks: the heads (or the whole region, tile-major) and, for an
    /// aligned cut with a tail, the tails, whose blocks come after the heads'.
    pub fn regions(&self) -> (Region, Option<Region>) {
        let tiles = self.sk_tiles();
        match self.cut {
            StreamCut::Contiguous => (
                Region {
                    tiles,
                    len: self.k_tiles,
                    per: self.per_block,
                    k0: 0,
                },
                None,
            ),
            StreamCut::Aligned {
                splits,
                tail,
                tail_per,
            } => {
                let head = splits * self.per_block;
                let heads = Region {
                    tiles,
                    len: head,
                    per: self.per_block,
                    k0: 0,
                };
                let tails = (tail > 0).then_some(Region {
                    tiles,
                    len: tail,
                    per: tail_per,
                    k0: head,
                });
                (heads, tails)
            }
        }
    }

    /// Tiles of the stream-K region (the first ones).
    pub fn sk_tiles(&self) -> u32 {
        self.tiles - self.dp_waves * self.blocks
    }

    /// Blocks with stream-K iterations (the first ones).
    pub fn sk_blocks(&self) -> u32 {
        let (heads, tails) = self.regions();
        heads.blocks() + tails.map_or(0, |r| r.blocks())
    }

    /// Iterations the busiest block walks.
    pub fn most_per_block(&self) -> u32 {
        let (heads, tails) = self.regions();
        self.dp_waves * self.k_tiles + heads.per.max(tails.map_or(0, |r| r.per))
    }

    /// Most blocks that contribute to one output tile (the fix-up's slices per tile).
    pub fn max_contributors(&self) -> u32 {
        let (heads, tails) = self.regions();
        heads.max_contributors() + tails.map_or(0, |r| r.max_contributors())
    }

    /// Most output tiles one block's stream-K range touches (the kernels' segment loop).
    pub fn max_segments(&self) -> u32 {
        let (heads, tails) = self.regions();
        heads
            .max_segments()
            .max(tails.map_or(0, |r| r.max_segments()))
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
        let (heads, tails) = self.regions();
        let mut out = if b < heads.blocks() {
            heads.units_of(b)
        } else {
            tails.map_or(vec![], |r| r.units_of(b - heads.blocks()))
        };
        for j in 0..self.dp_waves {
            out.push((self.sk_tiles() + b + j * self.blocks, 0, self.k_tiles));
        }
        out
    }

    /// Blocks of the last wave of the data-parallel schedule (one block per tile) over
    /// `units` SMs; 0 when the waves are full.
    pub fn data_parallel_tail(tiles: u32, units: u32) -> u32 {
        tiles % units.max(1)
    }
}
