//! The tile scheduler of one phase of a one-launch strided backward-data kernel
//! ([`super::phased`]): the phases' tiles lie one after another along the grid's x axis, so a
//! phase's block `b` is the raster tile `b − first_block` of its own GEMM. Which phase a block
//! belongs to is decided before its GEMM body runs (the prefix sum of the phases' tile counts,
//! compile-time constants), so each phase's body is the ordinary GEMM with its own constants.
//!
//! On the warp-specialised persistent walk (`ld=ws|wspp`, `pk=1`) the same prefix sum numbers
//! work units instead of blocks: unit `u` of the walk is the phase's persistent unit
//! `u − first_block` ([`PhaseScheduler::unit_tile`]).

use super::builder::Kb;
use super::plan::{GemmPlan, SchedulerKind};
use super::schedule::{
    raster_k_range, raster_over, raster_tile, RasterScheduler, Tile, TileScheduler,
};
use super::schedule_persistent::PersistentScheduler;
use inkwell::values::IntValue;

/// [`RasterScheduler`] shifted by the phase's first block.
#[derive(Debug)]
pub(crate) struct PhaseScheduler;

/// The first block (or work unit) of `plan`'s phase (0 for a plan that is not a phase).
fn first_block(plan: &GemmPlan) -> u32 {
    match plan.scheduler {
        SchedulerKind::Phase { first_block } => first_block,
        SchedulerKind::Raster | SchedulerKind::StreamK(_) | SchedulerKind::Persistent(_) => 0,
    }
}

/// `first ≤ id < first + count`, as one unsigned compare.
pub(crate) fn in_range<'ctx>(
    kb: &Kb<'_, 'ctx>,
    id: IntValue<'ctx>,
    first: u32,
    count: u64,
) -> IntValue<'ctx> {
    kb.ultc(kb.addc(id, -(first as i64)), count as u32)
}

impl PhaseScheduler {
    /// The phase's work units on a persistent walk: one per tile and group (no split-K in
    /// one launch).
    pub fn units(&self, plan: &GemmPlan) -> u64 {
        let [x, _, z] = RasterScheduler.grid(plan);
        x * z
    }

    /// Whether work unit `unit` of the walk is this phase's.
    pub fn holds<'ctx>(
        &self,
        kb: &Kb<'_, 'ctx>,
        plan: &GemmPlan,
        unit: IntValue<'ctx>,
    ) -> IntValue<'ctx> {
        in_range(kb, unit, first_block(plan), self.units(plan))
    }

    /// The tile of the walk's work unit `unit` (one the phase [`holds`](Self::holds)): the
    /// phase's own persistent unit `unit − first`.
    pub fn unit_tile<'ctx>(
        &self,
        kb: &Kb<'_, 'ctx>,
        plan: &GemmPlan,
        unit: IntValue<'ctx>,
    ) -> Tile<'ctx> {
        let local = kb.addc(unit, -(first_block(plan) as i64));
        PersistentScheduler.unit_tile(kb, plan, local)
    }
}

impl TileScheduler for PhaseScheduler {
    /// The phase's own tiles (the kernel's grid is the sum over phases).
    fn grid(&self, plan: &GemmPlan) -> [u64; 3] {
        RasterScheduler.grid(plan)
    }

    fn tile<'ctx>(&self, kb: &Kb<'_, 'ctx>, plan: &GemmPlan) -> Tile<'ctx> {
        let Some(shared) = &plan.shared else {
            let local = kb.addc(kb.block_idx(0), -(first_block(plan) as i64));
            return raster_tile(kb, plan, local);
        };
        // A shared body: the raster of the block's phase, each phase's computed and the
        // block's chosen (once per block, so the cost is a few instructions).
        let ph = shared.phases(kb);
        let wide = |v: &[u32]| v.iter().map(|&x| x as i64).collect::<Vec<_>>();
        let local = kb.sub(kb.block_idx(0), ph.pick(kb, &wide(&shared.first_blocks)));
        let (tm, tn): (Vec<_>, Vec<_>) = (0..ph.count())
            .map(|i| {
                let tiles = [shared.tiles_m[i], shared.tiles_n[i]];
                raster_over(kb, plan.cfg.raster, tiles, local)
            })
            .unzip();
        let per_group: Vec<i64> = (0..ph.count())
            .map(|i| shared.tiles_m[i] as i64 * shared.tiles_n[i] as i64)
            .collect();
        let g = kb.block_idx(2);
        Tile {
            m0: kb.mulc(ph.choose(kb, &tm), plan.cfg.block_m as i64),
            n0: kb.mulc(ph.choose(kb, &tn), plan.cfg.block_n as i64),
            g,
            slice: None,
            index: kb.add(kb.mul(g, ph.pick(kb, &per_group)), local),
            z: g,
        }
    }

    fn k_range<'ctx>(
        &self,
        kb: &Kb<'_, 'ctx>,
        plan: &GemmPlan,
        tile: &Tile<'ctx>,
    ) -> (IntValue<'ctx>, IntValue<'ctx>) {
        match &plan.shared {
            None => raster_k_range(kb, plan, tile),
            Some(shared) => {
                let k: Vec<i64> = shared.k_tiles.iter().map(|&k| k as i64).collect();
                (kb.c(0), shared.phases(kb).pick(kb, &k))
            }
        }
    }
}
