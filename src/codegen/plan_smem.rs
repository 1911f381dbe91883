//! Where a plan's shared memory goes: the A and B stage tiles (with the swizzled lines that
//! `wgmma`'s descriptors require), the mbarriers after them, and a persistent kernel's
//! epilogue region (fix-up verdict words and staged C, one region per consumer warpgroup
//! with `wspp`) after the pipeline. One layout, which legality's `pk` rule repeats in bytes
//! ([`crate::config::persistent_epilogue_at`]); [`super::plan::GemmPlan::new`] only orders
//! the checks around it.

use super::plan::{CStage, Smem, SmemTile, TileLoad};
use crate::arch::fit;
use crate::config::{LdsLayout, PerfConfig};
use crate::lowering::tma_store::StoreTile;
use crate::problem::DType;

/// The shared-memory tiles of A and B for `c` (B's stages after A's), or why one does not
/// fit (with `mma=wg`: why it is not the swizzled layout the descriptors describe).
pub(super) fn operand_tiles(
    c: &PerfConfig,
    dt: DType,
    a: &TileLoad,
    b: &TileLoad,
) -> Result<(SmemTile, SmemTile), String> {
    let wgmma = c.mma.is_wgmma();
    let bytes = dt.bytes();
    // wgmma's MN-major tile (see below): blocks of one swizzle atom's rows (16, 32 or 64
    // of a 16-bit type, `fit::wgmma_mn_swizzle`), whatever the number of blocks (a 192-row
    // tile is three 64-row blocks), so its lines are one block wide.
    let mn_atom = |l: &TileLoad, extent: u32| {
        (wgmma && !l.along_k && c.lds == LdsLayout::Swizzled)
            .then(|| fit::wgmma_mn_swizzle(dt, l.rows, extent))
            .flatten()
            .map(|s| fit::mn_atom_rows(dt, s))
    };
    let tile = |l: &TileLoad, name: &str, extent: u32| {
        let atom = mn_atom(l, extent);
        let (line, lines) = match atom {
            _ if l.along_k => (c.block_k, l.rows),
            Some(atom) => (atom, c.block_k * (l.rows / atom)),
            None => (l.rows, c.block_k),
        };
        let mut t = SmemTile::new(l.along_k, line, lines, l.rows, c.lds, bytes)
            .map_err(|r| format!("{name}: {r}"))?;
        // MN-major: blocks of `atom` rows, each `bk` swizzled lines of one atom's span.
        t.row_blocks = atom.filter(|_| !l.along_k).map(|atom| atom * c.block_k);
        Ok::<_, String>(t)
    };
    let mut sa = tile(a, "A", c.warp_m)?;
    let mut sb = tile(b, "B", c.warp_n)?;
    if wgmma {
        // The descriptors describe swizzled tiles at 1024-byte-aligned stage bases. K-major:
        // the `[row][k]` tile of 128-byte lines of `bk` with the 128-byte swizzle (16-byte
        // chunk c of line r at c ^ r%8). MN-major (the transposed mode, for an operand
        // contiguous along its rows): the `[k][row]` tile laid out as blocks of one swizzle
        // atom's rows (`fit::wgmma_mn_swizzle`), which the warpgroup tile covers whole.
        for (t, name, extent, rows) in [
            (&sa, "A", c.warp_m, c.block_m),
            (&sb, "B", c.warp_n, c.block_n),
        ] {
            let lines_ok = if t.kmajor {
                t.swizzle == Some(8) && t.stride * bytes == 128
            } else {
                t.row_blocks.is_some()
            };
            if !lines_ok {
                return Err(format!(
                    "mma=wg: {name}'s shared-memory tile is not 128-byte swizzled lines of K \
                     or, when its vectors run along its rows, of swizzle-atom blocks (16, 32 \
                     or 64 rows) that the warpgroup tile covers whole (vectors along {}, \
                     {rows} rows, warpgroup tile {extent}, lds must be swz)",
                    if t.kmajor { "K" } else { "the rows" }
                ));
            }
        }
    }
    sb.region = c.stages * sa.stage;
    sa.region = 0;
    Ok((sa, sb))
}

/// The pipeline's end and the epilogue region(s) after it, from the bytes of the operand
/// stages.
#[derive(Debug, Clone, Copy)]
pub(super) struct Layout {
    /// The mbarriers' offset: after everything the staged epilogue may reuse.
    barriers_at: u64,
    /// The end of the stages and mbarriers.
    pub pipeline_end: u64,
    /// `wspp`: one epilogue region per consumer warpgroup (each writes its own tile while
    /// the other multiplies), laid out alike.
    pub regions: u32,
    /// The staged C tile's alignment.
    align: u64,
    /// pk=1: the epilogue's own region.
    pub epilogue: Option<EpilogueRegion>,
}

impl Layout {
    /// The layout of `c`'s pipeline whose A and B stages take `smem_bytes`, `persistent`
    /// with `pk=1`.
    pub fn new(c: &PerfConfig, smem_bytes: u64, persistent: bool) -> Self {
        // The mbarriers go after everything the staged epilogue may reuse.
        let barriers_at = smem_bytes.next_multiple_of(8);
        let pipeline_end = if c.ld.uses_tma() {
            barriers_at + 8 * c.ld.mbarriers(c.stages) as u64
        } else {
            smem_bytes
        };
        let regions = c.tiles_per_block();
        // pk=1: the producer refills stages while the consumers run the epilogue, so the
        // epilogue's shared memory (the fix-up's verdict words, the staged C tile) is a region
        // of its own after the barriers ([`persistent_epilogue`]).
        let align = crate::config::stage_align(c.epilogue);
        let epilogue = persistent.then(|| persistent_epilogue(pipeline_end, align));
        Layout {
            barriers_at,
            pipeline_end,
            regions,
            align,
            epilogue,
        }
    }

    /// The whole shared memory: the tiles `sa`, `sb`, the mbarriers when `tma_used`, and the
    /// epilogue region(s) sized for C staged by `tma_store` or `c_stage` (`bytes` an element).
    #[allow(clippy::too_many_arguments)]
    pub fn smem(
        &self,
        c: &PerfConfig,
        sa: SmemTile,
        sb: SmemTile,
        tma_used: bool,
        tma_store: Option<StoreTile>,
        c_stage: Option<CStage>,
        bytes: u32,
    ) -> Smem {
        let Layout {
            barriers_at,
            pipeline_end,
            regions,
            align,
            epilogue,
        } = *self;
        let barriers = tma_used.then_some(barriers_at as u32);
        // Bytes from one consumer's epilogue region to the next (`wspp`).
        let region = epilogue.map_or(0, |_| {
            let staged = match tma_store {
                Some(st) => st.stage_bytes(),
                None => c_stage.map_or(0, |st| u64::from(st.lines_per_pass * st.stride * bytes)),
            };
            crate::config::persistent_region_bytes(pipeline_end, staged, align) as u32
        });
        let bytes = match epilogue {
            Some(e) => e.verdict_at + regions * region,
            None => pipeline_end as u32,
        };
        Smem {
            a: sa,
            b: sb,
            stages: c.stages,
            bytes,
            barriers,
            epilogue: epilogue.map(|e| e.verdict_at),
            c_at: epilogue.map(|e| e.c_at),
            region,
        }
    }
}

/// Where a persistent kernel's epilogue region lies (bytes into shared memory).
#[derive(Debug, Clone, Copy)]
pub(super) struct EpilogueRegion {
    /// The fix-up's two verdict words.
    pub verdict_at: u32,
    /// The staged C tile (16-byte aligned, for its vector loads).
    pub c_at: u32,
}

/// The epilogue region of a persistent kernel whose pipeline (stages and mbarriers) ends at
/// byte `pipeline_end`, its C tile aligned to `align`: the one layout of it, which legality's `pk` rule repeats in bytes
/// ([`crate::config::persistent_epilogue_at`]).
fn persistent_epilogue(pipeline_end: u64, align: u64) -> EpilogueRegion {
    let (verdict_at, c_at) = crate::config::persistent_epilogue_at(pipeline_end, align);
    EpilogueRegion {
        verdict_at: verdict_at as u32,
        c_at: c_at as u32,
    }
}
