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
mod persistent;
mod stream_k;
mod text;

pub use cluster::ClusterShape;
pub use depthwise::{DwSums, DwTile};
pub use epilogue::{stage_align, Epilogue, TMA_STAGE_ALIGN};
pub use fields::{Domain, Field, FieldLists, FieldValue, PerField, PerfConfig};
pub use persistent::{
    persistent_c_budget, persistent_epilogue_at, persistent_region_bytes, PersistentGrid,
};
pub use stream_k::{Cut, Region as StreamRegion, StreamCut, StreamK};

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
        (self.red == Reduction::Stream).then(|| StreamK::new(tiles, k_tiles, units, self.cut))
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

    /// Whether this config adds partial sums with floating-point atomics on `direction`'s
    /// problems, so that its result's last bits depend on the order the GPU runs its blocks
    /// in: split-K with `red=atomic` on the GEMM paths, and the depthwise kernel's backward
    /// weight by atomics. Everything else (plain stores, the fix-up's and stream-K's sums in
    /// slice order, the depthwise partials) gives the same bits every run. The code generator
    /// plans atomics exactly where this says.
    pub fn adds_by_atomics(&self, direction: crate::problem::Direction) -> bool {
        let atomic = self.red == Reduction::Atomic;
        match self.mma {
            MmaPath::Depthwise => atomic && direction == crate::problem::Direction::BwdWeight,
            _ => atomic && self.split_k > 1,
        }
    }

    /// Whether the epilogue reads `vc`: it stages C through shared memory in vectors of
    /// `vec_c` only when it stores C itself (`ep=reg`) and split-K slices do not add by
    /// atomics (each thread then adds its accumulator fragment). Elsewhere `vc` changes no
    /// instruction, and a search lists one value of it. The code generator's plan stages C
    /// exactly where this says.
    pub fn reads_vec_c(&self, direction: crate::problem::Direction) -> bool {
        self.epilogue == Epilogue::Reg && !self.adds_by_atomics(direction)
    }

    /// This config without atomics on `direction`'s problems: itself when it has none, else the
    /// same with `red=fixup` (split-K's in-kernel fix-up, the depthwise kernel's partials),
    /// which the caller checks for legality (the fix-up's workspace has a limit).
    pub fn without_atomics(&self, direction: crate::problem::Direction) -> PerfConfig {
        if self.adds_by_atomics(direction) {
            PerfConfig {
                red: Reduction::Fixup,
                ..*self
            }
        } else {
            *self
        }
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
