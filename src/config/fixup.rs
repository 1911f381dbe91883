//! The workspace layout of the in-kernel split-K fix-up (`red=fixup`, and stream-K's shared
//! tiles): counters, partial tiles, group partials. The protocol and the kernel code that
//! reads the layout are in the codegen's `fixup.rs`; the layout and the serial tail are here,
//! outside the LLVM-gated code, because the cost model reads them too.

/// Alignment of the partials after the counters, bytes.
const PARTIALS_ALIGN: u64 = 256;

/// The fix-up of one GEMM kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fixup {
    /// Output tiles (groups × tile rows × tile columns): one counter each.
    pub tiles: u32,
    /// Slices per tile.
    pub slices: u32,
    /// f32 values of one block tile.
    pub tile_values: u32,
    /// Byte offset of the partials in the workspace: after the kept-zero region where the
    /// counters fit it, else after the counters of the launch's GEMM with the most tiles, so
    /// that no GEMM's partials overlap another's (or a later plan's) counters.
    pub partials_at: u64,
}

impl Fixup {
    /// The fix-up of a GEMM with `tiles` output tiles of `block_m × block_n`, `slices` each.
    pub fn new(tiles: u32, slices: u32, block_m: u32, block_n: u32) -> Self {
        let mut f = Fixup {
            tiles,
            slices,
            tile_values: block_m * block_n,
            partials_at: 0,
        };
        f.partials_at = f.counter_bytes();
        f
    }

    /// Whether the slices are added in two levels (see [`emit_fixup`]).
    pub fn grouped(&self) -> bool {
        self.slices > GROUP_ABOVE
    }

    /// Groups of slices per tile (two-level), else 0.
    pub fn groups(&self) -> u32 {
        if self.grouped() {
            self.slices.div_ceil(GROUP)
        } else {
            0
        }
    }

    /// Partial slots per tile: the slices, rounded up to whole groups when two-level (the
    /// last group's sum reads whole-group slots, those past the slices masked off).
    pub fn slots_per_tile(&self) -> u32 {
        if self.grouped() {
            self.groups() * GROUP
        } else {
            self.slices
        }
    }

    /// f32 partial values of the slices (what the kernels index with i32).
    pub fn partials(&self) -> u64 {
        u64::from(self.tiles) * u64::from(self.slots_per_tile()) * u64::from(self.tile_values)
    }

    /// Counters per tile: the tile's, then one per group.
    pub fn counters_per_tile(&self) -> u32 {
        1 + self.groups()
    }

    /// Bytes of the counters, padded.
    pub fn counter_bytes(&self) -> u64 {
        (self.tiles as u64 * self.counters_per_tile() as u64 * 4).div_ceil(PARTIALS_ALIGN)
            * PARTIALS_ALIGN
    }

    /// Whether the counters fit the workspace's kept-zero region
    /// ([`crate::abi::KEPT_ZERO_BYTES`]): found zero and left zero, no launch clears them.
    pub fn counters_kept(&self) -> bool {
        self.counter_bytes() <= crate::abi::KEPT_ZERO_BYTES
    }

    /// Byte offset of the group partials (after the slices' partials).
    pub fn groups_at(&self) -> u64 {
        self.partials_at
            + self.tiles as u64 * self.slots_per_tile() as u64 * self.tile_values as u64 * 4
    }

    /// Workspace bytes this kernel reaches.
    pub fn workspace_bytes(&self) -> u64 {
        self.groups_at() + self.tiles as u64 * self.groups() as u64 * self.tile_values as u64 * 4
    }
}

/// Slices per group of the two-level fix-up.
pub const GROUP: u32 = 8;
/// Most slices added in one level.
pub const GROUP_ABOVE: u32 = 16;

/// Partial tiles the block that finishes a tile of `slices` contributions reads one after
/// another (one level: all of them; two levels: its group, then the group partials): the
/// serial tail the cost model charges.
pub fn serial_reads(slices: u32) -> u32 {
    if slices > GROUP_ABOVE {
        GROUP + slices.div_ceil(GROUP)
    } else {
        slices
    }
}
