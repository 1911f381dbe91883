//! The persistent grid (`pk=1`): how many blocks walk the work units, and where each block's
//! epilogue region sits in shared memory after its pipeline. Arithmetic of its own, apart from
//! the config's fields, because legality, the cost model and the planner must all get the same
//! numbers from it.

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
/// the vector stores of `ep=reg`, [`TMA_STAGE_ALIGN`](super::TMA_STAGE_ALIGN) for the swizzled boxes of `ep=tma`:
/// [`stage_align`](super::stage_align)). Shared by the planner and legality's `pk` rule.
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
