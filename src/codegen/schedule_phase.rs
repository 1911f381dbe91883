//! The tile scheduler of one phase of a one-launch strided backward-data kernel
//! ([`super::phased`]): the phases' tiles lie one after another along the grid's x axis, so a
//! phase's block `b` is the raster tile `b − first_block` of its own GEMM. Which phase a block
//! belongs to is decided before its GEMM body runs (the prefix sum of the phases' tile counts,
//! compile-time constants), so each phase's body is the ordinary GEMM with its own constants.

use super::builder::Kb;
use super::plan::{GemmPlan, SchedulerKind};
use super::schedule::{raster_k_range, raster_tile, RasterScheduler, Tile, TileScheduler};
use inkwell::values::IntValue;

/// [`RasterScheduler`] shifted by the phase's first block.
#[derive(Debug)]
pub(crate) struct PhaseScheduler;

/// The first block of `plan`'s phase (0 for a plan that is not a phase).
fn first_block(plan: &GemmPlan) -> u32 {
    match plan.scheduler {
        SchedulerKind::Phase { first_block } => first_block,
        SchedulerKind::Raster | SchedulerKind::StreamK(_) | SchedulerKind::Persistent(_) => 0,
    }
}

impl TileScheduler for PhaseScheduler {
    /// The phase's own tiles (the kernel's grid is the sum over phases).
    fn grid(&self, plan: &GemmPlan) -> [u64; 3] {
        RasterScheduler.grid(plan)
    }

    fn tile<'ctx>(&self, kb: &Kb<'_, 'ctx>, plan: &GemmPlan) -> Tile<'ctx> {
        let local = kb.addc(kb.block_idx(0), -(first_block(plan) as i64));
        raster_tile(kb, plan, local)
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
