//! `PerfConfig`: one point of the search space, the fields it is made of, and its versioned
//! string form. Below both `space` (which lists values per field) and `legality` (which judges a
//! config), so neither has to import the other for it.
//!
//! Every field is declared once, in [`fields`]; the struct, the string form, the space-file
//! keys, the enumeration order and the lattice coordinates of the search are derived from that
//! declaration through [`Field`].

mod cluster;
mod depthwise;
mod epilogue;
mod fields;
pub mod fixup;
mod text;

pub use cluster::ClusterShape;
pub use depthwise::DwTile;
pub use epilogue::{stage_align, Epilogue, TMA_STAGE_ALIGN};
pub use fields::{Domain, Field, FieldLists, FieldValue, PerField, PerfConfig};

pub use text::ConfigParseError;

use serde::{Deserialize, Serialize};

/// How the shared-memory (LDS) tiles are laid out to avoid bank conflicts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum LdsLayout {
    /// Each row padded by one 16-byte vector.
    Padded,
    /// XOR swizzle of 16-byte chunks within a row; no padding.
    Swizzled,
}

impl LdsLayout {
    /// Every layout, in the lattice order the search walks (the order of [`Self::NAMES`]).
    pub const ALL: [LdsLayout; 2] = [LdsLayout::Padded, LdsLayout::Swizzled];
    /// The names in config strings and search-space files, in the order of [`Self::ALL`].
    pub const NAMES: [&'static str; 2] = ["pad", "swz"];

    /// The name in config strings and search-space files.
    pub fn name(self) -> &'static str {
        Self::NAMES[self as usize]
    }
}

/// Which matrix instruction computes the tile (NVIDIA): the question the database must answer
/// per problem, since the Hopper path only wins where its larger tiles fill the GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum MmaPath {
    /// Per-warp `mma.sync` (or MFMA / FMA: whatever the target's warp-level unit is).
    Sync,
    /// Hopper `wgmma.mma_async` (sm_90a): `warp_m × warp_n` is then a warpgroup's tile (four
    /// consecutive warps), A and B read from shared memory through descriptors. Each K tile
    /// waits for its own group (`wait_group 0`); copies run `stages - 1` tiles ahead.
    Wgmma,
    /// `wgmma` with one group kept in flight (`wait_group 1`): the tensor cores run through the
    /// next tile's barrier and copy issue, but the copies run only `stages - 2` tiles ahead
    /// (the buffer they refill must be two tiles old), so it needs three stages or more. Which
    /// of the two wins depends on the problem (occupancy against overlap): a knob, not a rule.
    WgmmaInFlight,
    /// No GEMM: a direct depthwise convolution (one input channel per group), memory-bound,
    /// each thread a vector of channels over a small tile of output pixels. The tile fields
    /// mean something else on this path: [`DwTile`] says what, in one place.
    Depthwise,
}

impl MmaPath {
    /// Every path, in the lattice order the search walks (the order of [`Self::NAMES`]).
    pub const ALL: [MmaPath; 4] = [
        MmaPath::Sync,
        MmaPath::Wgmma,
        MmaPath::WgmmaInFlight,
        MmaPath::Depthwise,
    ];
    /// The names in config strings and search-space files, in the order of [`Self::ALL`]
    /// (appended at the end, so that older codes keep their meaning).
    pub const NAMES: [&'static str; 4] = ["sync", "wg", "wg1", "dw"];

    /// The name in config strings and search-space files.
    pub fn name(self) -> &'static str {
        Self::NAMES[self as usize]
    }

    /// The path called `name`, if any.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.name() == name)
    }

    /// Whether the tile is computed by Hopper `wgmma` (either variant).
    pub fn is_wgmma(self) -> bool {
        matches!(self, MmaPath::Wgmma | MmaPath::WgmmaInFlight)
    }
}

/// How A and B tiles move from global to shared memory on the `wgmma` path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum LoadPath {
    /// `cp.async` (or registers) from every thread, with im2col address math per vector.
    Cp,
    /// Hopper TMA (`cp.async.bulk.tensor`) from a tensor map built on the host, one thread
    /// issuing whole tiles into 128-byte-swizzled stages that complete on `mbarrier`
    /// transaction counts; an operand TMA cannot describe (legality says which and why) keeps
    /// `cp.async`. Needs `mma=wg|wg1`.
    Tma,
    /// Warp-specialised TMA: the consumer warpgroups of `tma` only multiply, and one producer
    /// warpgroup appended to the block loads (TMA from one elected thread, `cp.async` from its
    /// 128 threads for the operands TMA cannot describe), through full/empty `mbarrier` pairs
    /// per stage with parity waits and no block barrier in the K loop; `setmaxnreg` moves
    /// registers from the producer to the consumers. Needs `mma=wg|wg1` and two stages or more.
    Ws,
    /// `ws` with ping-pong consumers (CUTLASS sm90's "Pingpong" kernel): two consumer
    /// warpgroups, each owning a whole block tile of its own (alternate work units of the
    /// persistent walk), so that while one runs its main loop the other runs its epilogue; an
    /// order barrier hands the tensor cores from one consumer's main loop to the other's. The
    /// producer fills the ring in the order the consumers take the units. What the tile fields
    /// mean for it: [`PerfConfig::consumer_warps`]. Needs `pk=1`.
    WsPingPong,
}

impl LoadPath {
    /// Every path, in the lattice order the search walks (the order of [`Self::NAMES`]).
    pub const ALL: [LoadPath; 4] = [
        LoadPath::Cp,
        LoadPath::Tma,
        LoadPath::Ws,
        LoadPath::WsPingPong,
    ];
    /// The names in config strings and search-space files, in the order of [`Self::ALL`].
    pub const NAMES: [&'static str; 4] = ["cp", "tma", "ws", "wspp"];

    /// The name in config strings and search-space files.
    pub fn name(self) -> &'static str {
        Self::NAMES[self as usize]
    }

    /// Whether operands a tensor map describes are loaded with TMA (`tma` and `ws`).
    pub fn uses_tma(self) -> bool {
        self != LoadPath::Cp
    }

    /// Whether a producer warpgroup loads and the consumers only multiply (`ws`, `wspp`).
    pub fn warp_specialised(self) -> bool {
        matches!(self, LoadPath::Ws | LoadPath::WsPingPong)
    }

    /// Whether the consumer warpgroups take alternate work units (`wspp`) rather than
    /// cooperate on one (`ws`).
    pub fn ping_pong(self) -> bool {
        self == LoadPath::WsPingPong
    }

    /// The 8-byte `mbarrier`s per pipeline stage: none for `cp`, one (the stage's copies
    /// landed) for `tma`, a full/empty pair for `ws`/`wspp` (the empty one: the consumers are
    /// done with the stage).
    pub fn mbarriers_per_stage(self) -> u32 {
        match self {
            LoadPath::Cp => 0,
            LoadPath::Tma => 1,
            LoadPath::Ws | LoadPath::WsPingPong => 2,
        }
    }

    /// The 8-byte `mbarrier`s of a pipeline of `stages`: the stages' ([`Self::mbarriers_per_stage`]),
    /// then for `wspp` the order barrier's, one per consumer warpgroup (its turn at the tensor
    /// cores). Shared-memory budgets in legality and the plan both count these.
    pub fn mbarriers(self, stages: u32) -> u32 {
        self.mbarriers_per_stage() * stages
            + if self.ping_pong() {
                PING_PONG_CONSUMERS
            } else {
                0
            }
    }
}

/// Consumer warpgroups of a ping-pong block (`ld=wspp`), each with a block tile of its own.
pub const PING_PONG_CONSUMERS: u32 = 2;

/// How blocks map to work units (a work unit: one output tile of one group and one split-K
/// slice): the knob `pk`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Grid {
    /// One block per work unit (`pk=0`): what every string before `v4:` means.
    PerTile,
    /// A persistent grid (`pk=1`, `ld=ws` only): `min(units, SMs × resident blocks)` blocks,
    /// block `b` walking units `b, b + gridDim.x, …`; the producer's stage ring runs on across
    /// units, so the next unit's loads overlap this one's epilogue ([`PersistentGrid`]).
    Persistent,
}

impl Grid {
    /// Every kind, in the lattice order the search walks (the order of [`Self::NAMES`]).
    pub const ALL: [Grid; 2] = [Grid::PerTile, Grid::Persistent];
    /// The names in config strings and search-space files, in the order of [`Self::ALL`].
    pub const NAMES: [&'static str; 2] = ["0", "1"];

    /// The name in config strings and search-space files.
    pub fn name(self) -> &'static str {
        Self::NAMES[self as usize]
    }
}

/// How the split-K slices of one output tile are added up: the question for bwd-weight, whose
/// few output tiles and long K want many slices, and where the f32 atomics plus a finishing
/// launch cost as much as the GEMM on small images.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Reduction {
    /// Each slice adds its tile into f32 with atomics (the output itself for f32, else a
    /// workspace that a finishing launch converts); zeroed first by a launch of its own.
    Atomic,
    /// Each slice writes its f32 partial tile to a workspace and counts itself in; the last
    /// slice to arrive adds the partials in slice order (deterministic) and runs the epilogue,
    /// so no finishing launch and no atomics on data ([`crate::codegen`]'s `fixup`).
    Fixup,
    /// Stream-K (Osama et al., PPoPP'23): a persistent grid of one block per SM, each walking
    /// an equal contiguous range of the (output tile, K tile) iterations; a tile split between
    /// blocks is finished by the same fix-up as `fixup`. Past two full waves of tiles, the
    /// full waves but one (or all, when the last alone spreads thick enough) run whole tiles
    /// data-parallel after it ([`StreamK`]: CUTLASS's DP + SK). For few output tiles and a
    /// long K, where one block per tile leaves SMs idle and a fixed split-K over- or
    /// under-splits. `sk` must be 1 (the schedule splits K itself); on `ld=cp` with `pk=0`, on
    /// `ld=ws` with `pk=1` (its producer's ring runs on across the tiles a block visits), not
    /// on `ld=tma` ([`PerfConfig::stream_refusal`], [`PerfConfig::persistent_refusal`]).
    Stream,
}

impl Reduction {
    /// Every mode, in the lattice order the search walks (the order of [`Self::NAMES`]).
    pub const ALL: [Reduction; 3] = [Reduction::Atomic, Reduction::Fixup, Reduction::Stream];
    /// The names in config strings and search-space files, in the order of [`Self::ALL`].
    pub const NAMES: [&'static str; 3] = ["atomic", "fixup", "stream"];

    /// The name in config strings and search-space files.
    pub fn name(self) -> &'static str {
        Self::NAMES[self as usize]
    }
}

/// Whether the plan reorders tensors before (and after) the GEMMs: NCHW activations and a
/// KCYX filter are contiguous along the spatial axes, which makes the implicit GEMM's vectors
/// straddle padding (width 1) and its tiles MN-major; copied to channels-last in the workspace
/// first, the GEMM is the NHWC one, with 16-byte vectors, TMA im2col and `wgmma`
/// ([`crate::lowering::relayout`] says which tensors and why this, not transposed tiles).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Transform {
    /// Every tensor in its own layout (what configs before `v4:` mean).
    None,
    /// The tensors the GEMMs read that are channels-first are copied to channels-last in the
    /// workspace by a transpose launch each; the written tensor keeps its layout.
    Nhwc,
    /// As `nhwc`, and the written tensor too: the GEMMs write it channels-last into the
    /// workspace and a last launch transposes it into place.
    NhwcOut,
}

impl Transform {
    /// Every value, in the lattice order the search walks (the order of [`Self::NAMES`]).
    pub const ALL: [Transform; 3] = [Transform::None, Transform::Nhwc, Transform::NhwcOut];
    /// The names in config strings and search-space files, in the order of [`Self::ALL`].
    pub const NAMES: [&'static str; 3] = ["none", "nhwc", "nhwc_out"];

    /// The name in config strings and search-space files.
    pub fn name(self) -> &'static str {
        Self::NAMES[self as usize]
    }

    /// Whether the written tensor is transposed too.
    pub fn writes_nhwc(self) -> bool {
        self == Transform::NhwcOut
    }
}

impl PerfConfig {
    /// Warps (waves) per block: one per warp tile, four per warpgroup tile with `wgmma`; with
    /// `mma=dw`, the block's threads ([`DwTile::threads`]) in 32-lane warps.
    pub fn warps(&self) -> u32 {
        let per_tile = match self.mma {
            MmaPath::Sync => 1,
            MmaPath::Wgmma | MmaPath::WgmmaInFlight => 4,
            MmaPath::Depthwise => return DwTile::of(self).threads().div_ceil(32),
        };
        (self.block_m / self.warp_m) * (self.block_n / self.warp_n) * per_tile
    }

    /// Warps of the block that multiply: [`Self::warps`] compute one block tile (`bm × bn`
    /// in warp tiles of `wm × wn`, warpgroup tiles with `wgmma`), and that is the block but
    /// for `ld=wspp`, whose [`PING_PONG_CONSUMERS`] consumer warpgroups each compute a block
    /// tile of their own: there `wm × wn = bm × bn` (one warpgroup per tile, see
    /// [`Self::ws_refusal`]), and the block's consumers are two such warpgroups. The one place
    /// the tile fields get that meaning; legality and the planner ask here.
    pub fn consumer_warps(&self) -> u32 {
        self.warps() * self.tiles_per_block()
    }

    /// Block tiles a block's consumers hold at once: [`PING_PONG_CONSUMERS`] for `ld=wspp`
    /// (each with its own epilogue region in shared memory), else 1.
    pub fn tiles_per_block(&self) -> u32 {
        if self.ld.ping_pong() {
            PING_PONG_CONSUMERS
        } else {
            1
        }
    }

    /// K tiles the copies run ahead of the one being multiplied: `stages - 1`, one fewer with
    /// `mma=wg1`, whose group in flight still reads the buffer before the current one.
    pub fn tiles_ahead(&self) -> u32 {
        match self.mma {
            MmaPath::WgmmaInFlight => self.stages.saturating_sub(2),
            _ => self.stages.saturating_sub(1),
        }
    }

    /// f32 partial values a split-K fix-up (`red=fixup`) keeps for a GEMM of `g` groups of
    /// `m × n`: one whole block tile per output tile and slice. The workspace layout is the
    /// code generator's; this count is the one fact legality and it share.
    pub fn fixup_partials(&self, g: u32, m: u32, n: u32) -> u64 {
        let tiles = u64::from(g)
            * u64::from(m.div_ceil(self.block_m.max(1)))
            * u64::from(n.div_ceil(self.block_n.max(1)));
        tiles * u64::from(self.split_k) * u64::from(self.block_m) * u64::from(self.block_n)
    }

    /// The stream-K schedule of a GEMM of `tiles` output tiles of `k_tiles` K tiles each on
    /// `units` SMs, when `red=stream`: the one place legality and the code generator take it
    /// from.
    pub fn stream_k(&self, tiles: u32, k_tiles: u32, units: u32) -> Option<StreamK> {
        (self.red == Reduction::Stream).then(|| StreamK::new(tiles, k_tiles, units))
    }

    /// What `ld=ws|wspp` cannot do with this config's pipeline depth (and for `wspp` its tile
    /// shape), whatever the arch: the rule legality (at the `ld` loop, whose level `st`
    /// shares) and the code generator's planner share. `None` also when `ld` is neither.
    /// (`wspp`'s grid is [`Self::persistent_refusal`]'s, its stream-K [`Self::stream_refusal`]'s.)
    pub fn ws_refusal(&self) -> Option<String> {
        if self.ld.warp_specialised() && self.stages < 2 {
            return Some(format!(
                "st = {}: with one stage the producer cannot load ahead of the consumers (use \
                 ld=tma)",
                self.stages
            ));
        }
        // One warpgroup per block tile (with wgmma; the warp-level path has no warpgroups
        // to specialise, which the `ld` rule says).
        if self.ld.ping_pong()
            && self.mma.is_wgmma()
            && (self.warp_m, self.warp_n) != (self.block_m, self.block_n)
        {
            return Some(format!(
                "each ping-pong consumer is one warpgroup computing a whole block tile: \
                 wm × wn must be bm × bn (here {}×{} in {}×{})",
                self.warp_m, self.warp_n, self.block_m, self.block_n
            ));
        }
        None
    }

    /// What the persistent grid (`pk`) rule refuses in this config, whatever the problem: the
    /// rule legality (at the `pk` loop, the last field it reads) and the code generator's
    /// planner share. `pk=1` is built for `ld=ws|wspp` only; on `ld=ws` stream-K *is* the
    /// persistent walk, so `red=stream` there needs `pk=1`; and `ld=wspp`'s consumers take
    /// alternate units of the persistent walk, so it needs `pk=1` whatever `red`. `None`
    /// otherwise.
    pub fn persistent_refusal(&self) -> Option<String> {
        let persistent = self.persistent == Grid::Persistent;
        if !persistent && self.ld.ping_pong() {
            return Some(
                "ld=wspp: the ping-pong consumers take alternate work units of the persistent \
                 walk; it needs pk=1"
                    .into(),
            );
        }
        if persistent && !self.ld.warp_specialised() {
            return Some(format!(
                "pk=1 with ld={}: the persistent grid is built for ld=ws and ld=wspp (their \
                 producer's ring runs on across work units); use pk=0{}",
                self.ld.name(),
                if self.red == Reduction::Stream {
                    " (red=stream on ld=cp is a persistent schedule of its own)"
                } else {
                    ""
                }
            ));
        }
        if !persistent && self.ld.warp_specialised() && self.red == Reduction::Stream {
            return Some(
                "red=stream on ld=ws walks the persistent grid (the producer's ring runs on \
                 across the tiles a block visits); use pk=1"
                    .into(),
            );
        }
        None
    }

    /// What stream-K (`red=stream`) cannot do with this config's other fields, whatever the
    /// problem (the problem-dependent part, wave fill and K tiles per block, is legality's
    /// `red` rule): shared by that rule and the code generator's planner. `None` also when
    /// `red` is not `stream`. (Whether `ld=ws` has `pk=1` is [`Self::persistent_refusal`]'s:
    /// `pk` is enumerated after `red`.)
    pub fn stream_refusal(&self) -> Option<String> {
        if self.red != Reduction::Stream {
            return None;
        }
        if self.split_k > 1 {
            return Some(format!(
                "it splits K itself, so split_k must be 1 (not {})",
                self.split_k
            ));
        }
        if self.ld == LoadPath::Tma {
            // One K loop per tile initialises the mbarriers; a stream-K block runs one per
            // tile it visits, and re-initialising a live mbarrier is undefined.
            return Some(
                "a stream-K block walks several tiles and ld=tma sets up its mbarriers once \
                 per tile; use ld=ws with pk=1 (its ring runs on across tiles) or ld=cp"
                    .into(),
            );
        }
        if self.ld.ping_pong() {
            // Its consumers alternate on the persistent walk's unit index; the stream-K walk
            // would hand them partial tiles through the fix-up, not wired or tested for two
            // epilogue regions.
            return Some(
                "ld=wspp's ping-pong consumers take alternate units of the persistent grid's \
                 walk, not stream-K's; use ld=ws with pk=1"
                    .into(),
            );
        }
        None
    }

    /// The first numeric field that is zero, in declaration order: a hand-built config that no
    /// kernel can run (a string or a space file never holds one).
    pub fn zero_field(&self) -> Option<Field> {
        Field::ALL
            .into_iter()
            .find(|&f| f.domain().is_number() && self.code(f) == 0)
    }
}

/// A persistent grid (`pk=1`): `units` work units (group × split-K slice × output tile, in
/// the order of the one-block-per-unit grid: tiles fastest, rasterised by `rs`) over `blocks`
/// blocks, block `b` taking units `b, b + blocks, …`. The one place legality, the cost model
/// and the code generator take the grid from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PersistentGrid {
    /// Work units.
    pub units: u32,
    /// Blocks of the grid: `min(units, SMs × resident blocks per SM)`, at least 1.
    pub blocks: u32,
}

impl PersistentGrid {
    /// The grid over `units` work units on `sms` SMs holding `resident` blocks each.
    pub fn new(units: u32, sms: u32, resident: u32) -> Self {
        let slots = u64::from(sms.max(1)) * u64::from(resident.max(1));
        PersistentGrid {
            units,
            blocks: u64::from(units).min(slots).max(1) as u32,
        }
    }

    /// The grid in clusters of `size` blocks (1: as is): a multiple of `size` blocks, at
    /// least one cluster (`units` is a multiple of `size`: the cluster pairs them).
    pub fn in_clusters(self, size: u32) -> Self {
        if size <= 1 {
            return self;
        }
        PersistentGrid {
            blocks: (self.blocks - self.blocks % size).max(size),
            ..self
        }
    }

    /// Most units one block walks.
    pub fn most_per_block(&self) -> u32 {
        self.units.div_ceil(self.blocks)
    }
}

/// Where a persistent kernel's epilogue region starts in shared memory, given the byte where
/// its pipeline (stages and mbarriers) ends: `(verdict words, staged C tile)`. The fix-up's
/// two verdict words (8 bytes, 8-aligned) first, then the C tile aligned to `align` (16 for
/// the vector stores of `ep=reg`, [`TMA_STAGE_ALIGN`] for the swizzled boxes of `ep=tma`:
/// [`stage_align`]). Shared by the planner and legality's `pk` rule.
pub fn persistent_epilogue_at(pipeline_end: u64, align: u64) -> (u64, u64) {
    let verdict = pipeline_end.next_multiple_of(8);
    (verdict, (verdict + 8).next_multiple_of(align))
}

/// Bytes of one persistent epilogue region (verdict words, then `staged` bytes of C aligned
/// to `align`) of a pipeline ending at `pipeline_end`, rounded to `align` so that a second
/// region (`ld=wspp`, one per consumer warpgroup) repeats the first's alignment.
pub fn persistent_region_bytes(pipeline_end: u64, staged: u64, align: u64) -> u64 {
    let (verdict, c_at) = persistent_epilogue_at(pipeline_end, align);
    (c_at - verdict + staged).next_multiple_of(align)
}

/// The bytes each of `regions` persistent epilogue regions may take below `limit` (the
/// block's shared memory) after a pipeline ending at `pipeline_end`.
pub fn persistent_c_budget(pipeline_end: u64, limit: u64, regions: u32) -> u64 {
    let (verdict, _) = persistent_epilogue_at(pipeline_end, 16);
    let left = limit.saturating_sub(verdict);
    match regions {
        0 | 1 => left,
        n => left / u64::from(n) / 16 * 16,
    }
}

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
/// (`ld=wspp` does not walk it: [`PerfConfig::stream_refusal`].)
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
        }
    }

    /// Tiles of the stream-K region (the first ones).
    pub fn sk_tiles(&self) -> u32 {
        self.tiles - self.dp_waves * self.blocks
    }

    /// Blocks with stream-K iterations (the first ones).
    pub fn sk_blocks(&self) -> u32 {
        (u64::from(self.sk_tiles()) * u64::from(self.k_tiles)).div_ceil(u64::from(self.per_block))
            as u32
    }

    /// Iterations the busiest block walks.
    pub fn most_per_block(&self) -> u32 {
        self.dp_waves * self.k_tiles + self.per_block
    }

    /// Most blocks that contribute to one output tile (the fix-up's slices per tile).
    pub fn max_contributors(&self) -> u32 {
        self.k_tiles.div_ceil(self.per_block) + 1
    }

    /// Most output tiles one block's stream-K range touches (the kernels' segment loop).
    pub fn max_segments(&self) -> u32 {
        self.per_block.div_ceil(self.k_tiles) + 1
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
        let (k, per) = (u64::from(self.k_tiles), u64::from(self.per_block));
        let total = u64::from(self.sk_tiles()) * k;
        let start = u64::from(b) * per;
        let end = (start + per).min(total);
        let mut out = Vec::new();
        let mut it = start;
        while it < end {
            let t = it / k;
            let hi = ((t + 1) * k).min(end);
            out.push((t as u32, (it - t * k) as u32, (hi - t * k) as u32));
            it = hi;
        }
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
