//! The persistent tile scheduler (`pk=1`): a grid of [`PersistentGrid::blocks`] blocks (at
//! most SMs × resident blocks, from the target's arch facts at plan time) over the plan's
//! work units, block `b` walking units `b, b + gridDim.x, …`. A work unit is one output tile
//! of one group and one split-K slice, numbered as the one-block-per-tile grid orders its
//! blocks (tiles fastest, rasterised by `rs`, then `g · split_k + slice`), so concurrently
//! running blocks touch the same neighbourhood of A and B as before and a few-tile, long-K
//! problem with split-K gets many units. The split-K fix-up works unchanged: a unit carries
//! its tile index and slice, and nobody waits for anybody.
//!
//! The walk itself is the main loop's (only [`super::ws`] has one): its producer's stage ring
//! runs on across units.
//!
//! With a cluster of two blocks (`cl=2m|2n`, blocks `2c` and `2c + 1` form cluster `c`), the
//! walk is the clusters': the units of a (group, slice) pair up into tile pairs, neighbours
//! along M (`2m`) or N (`2n`) that share the multicast operand, rasterised by `rs` over the
//! grid of pairs; cluster `c` walks pairs `c, c + clusters, …` and the block of rank `r`
//! takes tile `r` of each pair, so both blocks of a cluster walk the same number of units of
//! the same K range, in step.

use super::builder::Kb;
use super::plan::{GemmPlan, SchedulerKind};
use super::schedule::{raster_k_range, raster_over, raster_tile_at, tile_at, Tile, TileScheduler};
use crate::config::{ClusterShape, PersistentGrid};
use inkwell::values::IntValue;

/// Blocks walk work units of a fixed grid.
#[derive(Debug)]
pub(crate) struct PersistentScheduler;

/// The grid of a persistent plan.
pub(crate) fn persistent_grid(plan: &GemmPlan) -> PersistentGrid {
    match plan.scheduler {
        SchedulerKind::Persistent(pg) => pg,
        _ => panic!("the persistent scheduler of a plan that is not persistent"),
    }
}

impl PersistentScheduler {
    /// The tile of work unit `unit`.
    pub fn unit_tile<'ctx>(
        &self,
        kb: &Kb<'_, 'ctx>,
        plan: &GemmPlan,
        unit: IntValue<'ctx>,
    ) -> Tile<'ctx> {
        let per_z = plan.tiles_m * plan.tiles_n;
        let cluster = plan.cfg.cluster;
        if cluster != ClusterShape::One {
            return self.pair_tile(kb, plan, unit, cluster);
        }
        let bid = kb.uremc(unit, per_z);
        raster_tile_at(kb, plan, bid, |kb| kb.udivc(unit, per_z))
    }

    /// The tile of this block (its cluster rank) in tile pair `pair` of a cluster's walk.
    fn pair_tile<'ctx>(
        &self,
        kb: &Kb<'_, 'ctx>,
        plan: &GemmPlan,
        pair: IntValue<'ctx>,
        cluster: ClusterShape,
    ) -> Tile<'ctx> {
        let size = cluster.size();
        let pairs_per_z = plan.tiles_m * plan.tiles_n / size;
        let local = kb.uremc(pair, pairs_per_z);
        let rank = kb.cluster_rank();
        let grid = match cluster {
            ClusterShape::PairM => [plan.tiles_m / size, plan.tiles_n],
            _ => [plan.tiles_m, plan.tiles_n / size],
        };
        let (pm, pn) = raster_over(kb, plan.cfg.raster, grid, local);
        let tile = match cluster {
            ClusterShape::PairM => (kb.add(kb.mulc(pm, size as i64), rank), pn),
            _ => (pm, kb.add(kb.mulc(pn, size as i64), rank)),
        };
        let bid = kb.add(kb.mulc(local, size as i64), rank);
        tile_at(kb, plan, tile, bid, |kb| kb.udivc(pair, pairs_per_z))
    }

    /// How many units of `pg` block `blockIdx.x` walks: `ceil((units − b) / blocks)` (≥ 1
    /// when the grid does not exceed the units; 0 for a block past them: `units − b + blocks
    /// − 1` stays non-negative since `b < blocks`). With a cluster of `cluster` blocks: how
    /// many tile pairs its cluster walks.
    pub fn units_of_block<'ctx>(
        &self,
        kb: &Kb<'_, 'ctx>,
        pg: PersistentGrid,
        cluster: u32,
    ) -> IntValue<'ctx> {
        if cluster > 1 {
            let (units, clusters) = (pg.units / cluster, pg.blocks / cluster);
            let left = kb.sub(kb.c(units as i64), kb.udivc(kb.block_idx(0), cluster));
            return kb.udivc(kb.addc(left, clusters as i64 - 1), clusters);
        }
        let left = kb.sub(kb.c(pg.units as i64), kb.block_idx(0));
        kb.udivc(kb.addc(left, pg.blocks as i64 - 1), pg.blocks)
    }

    /// Work unit `i` of this block's walk over `pg`: `blockIdx.x + i · gridDim.x`; with a
    /// cluster of `cluster` blocks, its tile pair `cluster + i · clusters`.
    pub fn unit<'ctx>(
        &self,
        kb: &Kb<'_, 'ctx>,
        pg: PersistentGrid,
        cluster: u32,
        i: IntValue<'ctx>,
    ) -> IntValue<'ctx> {
        if cluster > 1 {
            let first = kb.udivc(kb.block_idx(0), cluster);
            return kb.add(first, kb.mulc(i, (pg.blocks / cluster) as i64));
        }
        kb.add(kb.block_idx(0), kb.mulc(i, pg.blocks as i64))
    }
}

impl TileScheduler for PersistentScheduler {
    fn grid(&self, plan: &GemmPlan) -> [u64; 3] {
        [persistent_grid(plan).blocks as u64, 1, 1]
    }

    /// The block's first unit (the walk is [`Self::unit`]).
    fn tile<'ctx>(&self, kb: &Kb<'_, 'ctx>, plan: &GemmPlan) -> Tile<'ctx> {
        self.unit_tile(kb, plan, kb.block_idx(0))
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
