//! Tile schedulers: which output tile, group and split-K slice a block computes, and the grid
//! that covers every tile. The GEMM kernel asks its plan's scheduler
//! ([`super::plan::SchedulerKind`]) and never computes a tile from block ids itself, so a
//! persistent scheduler (a fixed grid that walks tiles) is a new implementation here, not an
//! edit of the kernel: [`RasterScheduler`] here, [`super::schedule_phase`]'s shifted raster,
//! and [`super::schedule_persistent`]'s fixed grid walking work units.

use super::builder::Kb;
use super::plan::GemmPlan;
use inkwell::values::IntValue;
use std::fmt;

/// The tile a block computes.
pub(crate) struct Tile<'ctx> {
    /// First row (M) of the tile.
    pub m0: IntValue<'ctx>,
    /// First column (N) of the tile.
    pub n0: IntValue<'ctx>,
    /// Group.
    pub g: IntValue<'ctx>,
    /// Split-K slice (`None` without split-K).
    pub slice: Option<IntValue<'ctx>>,
    /// The output tile's index over groups and tiles, `0 .. G · tiles_m · tiles_n` (what the
    /// split-K fix-up keys its counter and partials by).
    pub index: IntValue<'ctx>,
    /// The block's z index, or for a persistent scheduler the unit's (group, slice) pair
    /// (the faulting test kernel faults in block (0, 0, 0) only).
    pub z: IntValue<'ctx>,
}

/// One unit of a block's work: K tiles `[lo, hi)` of `tile`, and how its accumulators are
/// written.
pub(crate) struct Unit<'ctx> {
    /// The output tile.
    pub tile: Tile<'ctx>,
    /// First K tile.
    pub lo: IntValue<'ctx>,
    /// End of the K tiles (a split-K slice past the last K tile has `lo > hi`).
    pub hi: IntValue<'ctx>,
    /// How the finished accumulators reach C.
    pub finish: Finish<'ctx>,
}

impl<'ctx> Unit<'ctx> {
    /// The unit of a block that owns K tiles `[lo, hi)` of `tile` and finishes it as the plan
    /// says for a tile (one block per work unit).
    pub(crate) fn of_tile(tile: Tile<'ctx>, (lo, hi): (IntValue<'ctx>, IntValue<'ctx>)) -> Self {
        Unit {
            tile,
            lo,
            hi,
            finish: Finish::Tile,
        }
    }
}

/// How a unit's finished accumulators reach C.
pub(crate) enum Finish<'ctx> {
    /// As the plan says for a tile: directly, or through the split-K fix-up as the tile's
    /// slice.
    Tile,
    /// Stream-K: directly when `whole` (block-uniform: the unit covers all of the tile's K),
    /// else through the fix-up as `share`.
    Stream {
        /// Whether the unit covers the whole tile.
        whole: IntValue<'ctx>,
        /// The unit's share of the tile otherwise.
        share: super::fixup::Share<'ctx>,
    },
    /// Directly (stream-K's data-parallel tiles).
    Direct,
}

/// Maps blocks to tiles.
pub(crate) trait TileScheduler: Sync + fmt::Debug {
    /// Launch grid for `plan`.
    fn grid(&self, plan: &GemmPlan) -> [u64; 3];
    /// The tile of the running block.
    fn tile<'ctx>(&self, kb: &Kb<'_, 'ctx>, plan: &GemmPlan) -> Tile<'ctx>;
    /// The K tiles `[lo, hi)` that `tile` reduces over.
    fn k_range<'ctx>(
        &self,
        kb: &Kb<'_, 'ctx>,
        plan: &GemmPlan,
        tile: &Tile<'ctx>,
    ) -> (IntValue<'ctx>, IntValue<'ctx>);
}

/// One block per tile: x walks the tiles (rasterised in groups of `rs` tile rows), z the
/// groups times the split-K slices.
#[derive(Debug)]
pub(crate) struct RasterScheduler;

impl TileScheduler for RasterScheduler {
    fn grid(&self, plan: &GemmPlan) -> [u64; 3] {
        [
            plan.tiles_m as u64 * plan.tiles_n as u64,
            1,
            plan.gemm.g_len() as u64 * plan.cfg.split_k as u64,
        ]
    }

    fn tile<'ctx>(&self, kb: &Kb<'_, 'ctx>, plan: &GemmPlan) -> Tile<'ctx> {
        raster_tile(kb, plan, kb.block_idx(0))
    }

    fn k_range<'ctx>(
        &self,
        kb: &Kb<'_, 'ctx>,
        plan: &GemmPlan,
        tile: &Tile<'ctx>,
    ) -> (IntValue<'ctx>, IntValue<'ctx>) {
        raster_k_range(kb, plan, tile)
    }
}

/// The tile of [`RasterScheduler`] for block `bid` along x (schedulers that place a GEMM's
/// tiles at an offset in a larger grid pass the local id).
pub(crate) fn raster_tile<'ctx>(
    kb: &Kb<'_, 'ctx>,
    plan: &GemmPlan,
    bid: IntValue<'ctx>,
) -> Tile<'ctx> {
    raster_tile_at(kb, plan, bid, |kb| kb.block_idx(2))
}

/// [`raster_tile`] of tile `bid` of the (group, split-K slice) pair `z` (`g · split_k + slice`)
/// that `z` computes (a persistent scheduler's work unit; the grid's z for the others).
pub(crate) fn raster_tile_at<'ctx>(
    kb: &Kb<'_, 'ctx>,
    plan: &GemmPlan,
    bid: IntValue<'ctx>,
    z: impl FnOnce(&Kb<'_, 'ctx>) -> IntValue<'ctx>,
) -> Tile<'ctx> {
    let tile = raster(kb, plan, bid);
    tile_at(kb, plan, tile, bid, z)
}

/// The tile at `(tile_m, tile_n)`, numbered `bid` among its group's tiles, of the (group,
/// split-K slice) pair `z` (`g · split_k + slice`).
pub(crate) fn tile_at<'ctx>(
    kb: &Kb<'_, 'ctx>,
    plan: &GemmPlan,
    (tile_m, tile_n): (IntValue<'ctx>, IntValue<'ctx>),
    bid: IntValue<'ctx>,
    z: impl FnOnce(&Kb<'_, 'ctx>) -> IntValue<'ctx>,
) -> Tile<'ctx> {
    let c = &plan.cfg;
    let z = z(kb);
    let (g, slice) = if c.split_k > 1 {
        (kb.udivc(z, c.split_k), Some(kb.uremc(z, c.split_k)))
    } else {
        (z, None)
    };
    let m0 = kb.mulc(tile_m, c.block_m as i64);
    let n0 = kb.mulc(tile_n, c.block_n as i64);
    let per_group = plan.tiles_m as i64 * plan.tiles_n as i64;
    let index = kb.add(kb.mulc(g, per_group), bid);
    Tile {
        m0,
        n0,
        g,
        slice,
        index,
        z,
    }
}

/// The K range of [`RasterScheduler`]: all of K, or the tile's split-K slice.
pub(crate) fn raster_k_range<'ctx>(
    kb: &Kb<'_, 'ctx>,
    plan: &GemmPlan,
    tile: &Tile<'ctx>,
) -> (IntValue<'ctx>, IntValue<'ctx>) {
    match tile.slice {
        None => (kb.c(0), kb.c(plan.k_tiles as i64)),
        Some(s) => {
            let lo = kb.mulc(s, plan.k_tiles_per_split as i64);
            let hi = kb.umin(
                kb.addc(lo, plan.k_tiles_per_split as i64),
                kb.c(plan.k_tiles as i64),
            );
            (lo, hi)
        }
    }
}

/// Block index → (tile_m, tile_n). With raster r > 1, blocks walk N within groups of r tile
/// rows, so consecutive blocks reuse A and B from L2.
fn raster<'ctx>(
    kb: &Kb<'_, 'ctx>,
    plan: &GemmPlan,
    bid: IntValue<'ctx>,
) -> (IntValue<'ctx>, IntValue<'ctx>) {
    raster_over(kb, plan.cfg.raster, [plan.tiles_m, plan.tiles_n], bid)
}

/// [`raster`] over a grid of `tiles_m × tiles_n` tiles with raster group `raster` (a
/// cluster's walk rasterises its tile pairs so: [`super::schedule_persistent`]).
pub(crate) fn raster_over<'ctx>(
    kb: &Kb<'_, 'ctx>,
    raster: u32,
    [tiles_m, tiles_n]: [u32; 2],
    bid: IntValue<'ctx>,
) -> (IntValue<'ctx>, IntValue<'ctx>) {
    let r = raster.min(tiles_m);
    if r <= 1 {
        return (kb.udivc(bid, tiles_n), kb.uremc(bid, tiles_n));
    }
    let per_group = r * tiles_n;
    let first = kb.mulc(kb.udivc(bid, per_group), r as i64);
    let rows = kb.umin(kb.sub(kb.c(tiles_m as i64), first), kb.c(r as i64));
    let local = kb.uremc(bid, per_group);
    (kb.add(first, kb.urem(local, rows)), kb.udiv(local, rows))
}
