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
use super::phase_consts::{Phases, SharedPhases};
use super::plan::{GemmPlan, MainLoopKind, SchedulerKind};
use super::schedule::{
    raster_k_range, raster_over, raster_tile, RasterScheduler, Tile, TileScheduler,
};
use super::schedule_persistent::PersistentScheduler;
use crate::lowering::Gemm;
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
        let Some(shared) = &plan.shared else {
            let local = kb.addc(unit, -(first_block(plan) as i64));
            return PersistentScheduler.unit_tile(kb, plan, local);
        };
        // A shared body (the caller emits it for `unit`: [`Kb::set_walk_unit`]): the unit's
        // phase's persistent unit, each phase's raster computed and the unit's chosen.
        let ph = shared.phases(kb);
        let local = kb.sub(unit, ph.pick(kb, &shared.first_blocks));
        let per_z = shared.tiles_per_group();
        // No split-K in one launch: the unit's z is its group.
        let bid = ph.urem(kb, local, &per_z);
        shared_tile(kb, plan, shared, &ph, bid, |kb| ph.udiv(kb, local, &per_z))
    }
}

/// Tile `bid` of group `g` of a shared body's phase `ph`: the raster of every phase's tile
/// grid computed and the phase's chosen (a few instructions, once per block or unit).
fn shared_tile<'ctx>(
    kb: &Kb<'_, 'ctx>,
    plan: &GemmPlan,
    shared: &SharedPhases,
    ph: &Phases<'ctx>,
    bid: IntValue<'ctx>,
    g: impl FnOnce(&Kb<'_, 'ctx>) -> IntValue<'ctx>,
) -> Tile<'ctx> {
    let (tm, tn): (Vec<_>, Vec<_>) = (0..ph.count())
        .map(|i| {
            let tiles = [shared.tiles_m[i], shared.tiles_n[i]];
            raster_over(kb, plan.cfg.raster, tiles, bid)
        })
        .unzip();
    let g = g(kb);
    Tile {
        m0: kb.mulc(ph.choose(kb, &tm), plan.cfg.block_m as i64),
        n0: kb.mulc(ph.choose(kb, &tn), plan.cfg.block_n as i64),
        g,
        slice: None,
        index: kb.add(kb.mul(g, ph.pick(kb, &shared.tiles_per_group())), bid),
        z: g,
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
        // A shared body: the raster of the block's phase.
        let ph = shared.phases(kb);
        let local = kb.sub(kb.block_idx(0), ph.pick(kb, &shared.first_blocks));
        shared_tile(kb, plan, shared, &ph, local, |kb| kb.block_idx(2))
    }

    fn k_range<'ctx>(
        &self,
        kb: &Kb<'_, 'ctx>,
        plan: &GemmPlan,
        tile: &Tile<'ctx>,
    ) -> (IntValue<'ctx>, IntValue<'ctx>) {
        match &plan.shared {
            None => raster_k_range(kb, plan, tile),
            Some(shared) => (kb.c(0), shared.phases(kb).pick(kb, &shared.k_tiles)),
        }
    }
}

/// The one body of `plans` (the phases in grid order, each scheduled at its first block or,
/// on the persistent walk, its first work unit), when they can share one: every decision but
/// the GEMM's lengths and offsets the same, the GEMMs alike in axes and terms. A block per
/// tile shares its whole body, so its loads must be alike too (`cp.async` or register
/// copies). On the warp-specialised walk only the consumers share one: the producer keeps a
/// branch per phase ([`super::ws::Body`]; its copy addresses from constants picked per K tile
/// made the shared walk 0.79–0.97× on the shipped entries, session 19), so the loads may
/// differ. The body is the first plan's, with an edge check wherever some phase needs one.
pub(crate) fn shared_body<'l>(plans: &[GemmPlan<'l>]) -> Option<GemmPlan<'l>> {
    let lead = plans.first()?;
    let path_alike = |g: &GemmPlan| match g.main_loop {
        MainLoopKind::Multistage => {
            g.tma == [None, None] && g.ws.is_none() && (g.a, g.b) == (lead.a, lead.b)
        }
        MainLoopKind::Ws => matches!(g.scheduler, SchedulerKind::Phase { .. }) && g.ws == lead.ws,
        MainLoopKind::Tma => false,
    };
    let alike = |g: &GemmPlan| {
        g.main_loop == lead.main_loop
            && path_alike(g)
            && g.tma_store.is_none()
            && g.fixup.is_none()
            && g.atomic.is_none()
            && (g.threads, g.math, g.smem, g.c_stage)
                == (lead.threads, lead.math, lead.smem, lead.c_stage)
            && alike_gemms(g.gemm, lead.gemm)
    };
    if plans.len() < 2 || !plans.iter().all(alike) {
        return None;
    }
    let per = |f: &dyn Fn(&GemmPlan) -> u32| plans.iter().map(f).collect::<Vec<u32>>();
    let mut body = lead.clone();
    body.edge = std::array::from_fn(|i| plans.iter().any(|g| g.edge[i]));
    body.shared = Some(SharedPhases {
        gemms: plans.iter().map(|g| g.gemm).collect(),
        first_blocks: per(&first_block),
        tiles_m: per(&|g| g.tiles_m),
        tiles_n: per(&|g| g.tiles_n),
        k_tiles: per(&|g| g.k_tiles),
    });
    Some(body)
}

/// Whether two GEMMs have the same axes (names, in order) and the same terms with the same
/// coefficients in every operand coordinate, and every length below 2^31 (what
/// [`Phases::udiv`] needs of an index): they then differ only in lengths and offsets.
fn alike_gemms(a: &Gemm, b: &Gemm) -> bool {
    let names = |g: &Gemm| {
        g.dims
            .iter()
            .map(|d| d.axes.iter().map(|x| x.name).collect::<Vec<_>>())
            .collect::<Vec<_>>()
    };
    let terms = |g: &Gemm| {
        [&g.a, &g.b, &g.c]
            .map(|op| (op.tensor, op.coords.clone().map(|c| c.terms)))
            .to_vec()
    };
    let small = |g: &Gemm| g.dims.iter().all(|d| (d.len() as u64) < 1 << 30);
    names(a) == names(b) && terms(a) == terms(b) && small(a) && small(b)
}
