//! The compute and pipeline side of the cost model: occupancy (blocks an SM holds), the issue
//! slots of global→shared copies and epilogue stores, the pipeline depth that hides latency
//! with warp specialisation, and the persistent grid's gain from paying the fill once. These
//! are the terms that scale the math time, apart from the bytes ([`super::memory`]).

use super::{ceil_div, CostArch};
use crate::config::{PerfConfig, Reduction};

/// Blocks of `threads` threads, `smem` bytes of shared memory and `regs` registers a thread
/// (already capped at the arch's maximum) that fit on one SM at once: the GEMM and depthwise
/// estimates' occupancy (0 when one does not fit).
pub(super) fn blocks_per_sm(machine: &CostArch, threads: u32, smem: u64, regs: u32) -> u32 {
    let arch = &machine.arch;
    [
        machine.max_threads_per_sm / threads.max(1),
        (u64::from(arch.smem_per_sm) / smem.max(1)).min(u64::from(u32::MAX)) as u32,
        arch.regs_per_sm / (regs * threads).max(1),
        machine.max_blocks_per_sm,
    ]
    .into_iter()
    .min()
    .unwrap_or(0)
}

/// Issue slots (thread instructions) of one global→shared vector through registers: the
/// gather's address arithmetic and bounds predicate, `ld.global`, `st.shared`, and the wait on
/// the load that the store imposes. Calibrated on the H200 recordings, where a config whose
/// operand is copied element by element (2-byte bf16 vectors) is slower than its 16-byte twin by
/// about 0.25 clock per extra vector on the busiest SM (128 slots a clock), whatever the
/// problem's direction or bound.
const REGISTER_COPY_SLOTS: f64 = 32.0;
/// Issue slots of one vector copied with `cp.async` (address arithmetic and the copy; no
/// register round trip, no wait), and of one vector the epilogue stores.
pub(super) const ASYNC_COPY_SLOTS: f64 = 8.0;

/// Whether a global→shared vector of `bytes` goes through registers: always without
/// `cp.async` (AMD: global → VGPR → LDS), and with it when it is not a `cp.async` size (4, 8
/// or 16 bytes), which is how the code generator lowers it.
pub(super) fn through_registers(cp_async: bool, bytes: u32) -> bool {
    !cp_async || !matches!(bytes, 4 | 8 | 16)
}

/// Issue slots of copying `rows × block_k` elements of one operand per `block_k` step in
/// vectors of `vec` elements of `elem` bytes.
pub(super) fn copy_slots(cp_async: bool, rows: u32, block_k: u32, vec: u32, elem: u32) -> f64 {
    let vectors = f64::from(rows) * f64::from(block_k) / f64::from(vec.max(1));
    let per = if through_registers(cp_async, vec * elem) {
        REGISTER_COPY_SLOTS
    } else {
        ASYNC_COPY_SLOTS
    };
    vectors * per
}

/// Most pipeline stages whose depth hides latency in the model for `ld=ws|wspp` (see
/// `estimate_with`); the Hopper space lists up to 8.
pub(super) const WS_DEPTH_MAX: u32 = 8;

/// The math-time factor of `pk=1` with `red=fixup`: measured 2.36× slower than `pk=0` on the
/// H200 (bwd-weight 3×3, 128×256, sk=16: 219.1 vs 93.0 µs; BENCHMARKS, session 7 final pass A):
/// a tile's slices are walked by different blocks in unit order, so the last contributor of
/// each tile arrives only at the end of the walks.
const PERSISTENT_FIXUP_LOSS: f64 = 2.0;

/// K steps' worth of time each block-per-unit pays outside its K loop: the pipeline fill
/// (the first stages' loads before the first multiply) and the epilogue with nothing loading.
const UNIT_OVERHEAD_STEPS: f64 = 2.0;

/// The math-time factor of the persistent grid (`pk=1`), ≤ 1: a block walking `u` units pays
/// the fill once and overlaps each later unit's loads with the previous epilogue, so a unit's
/// overhead falls from [`UNIT_OVERHEAD_STEPS`] to half of it plus the first fill spread over
/// the walk: `(k + O/2 + O/(2u)) / (k + O)` for `k` K steps per unit. One unit a block (units
/// ≤ grid) gains nothing; short K with many units per block gains most. 1 for `pk=0`.
/// With the split-K fix-up it is a loss instead ([`PERSISTENT_FIXUP_LOSS`]).
///
/// Ping-pong consumers (`ld=wspp`) also hide each unit's epilogue under the other consumer's
/// main loop (where it is no longer than `k` steps), so only the walk's first fill and last
/// epilogue remain: `(k + O/u) / (k + O)`; where the epilogue outlasts the main loop, the
/// consumers alternate at the epilogue's pace, `(max(k, O/2) + O/u) / (k + O)`.
///
/// With `ep=tma` the epilogue's share of `O` (half of it) shrinks to [`TMA_EPILOGUE_LEFT`]
/// of itself: the global writes overlap the next unit's main loop.
pub(super) fn persistent_gain(c: &PerfConfig, k_steps: u64, units: u64, slots: u64) -> f64 {
    if c.persistent != crate::config::Grid::Persistent {
        return 1.0;
    }
    if c.split_k > 1 && c.red == Reduction::Fixup {
        return PERSISTENT_FIXUP_LOSS;
    }
    let grid = units.min(slots).max(1);
    let per_block = ceil_div(units.max(1), grid) as f64;
    let (k, o) = (k_steps as f64, UNIT_OVERHEAD_STEPS);
    let epilogue = match c.epilogue {
        crate::config::Epilogue::Reg => o / 2.0,
        crate::config::Epilogue::Tma => o / 2.0 * TMA_EPILOGUE_LEFT,
    };
    if c.ld.ping_pong() {
        return (k.max(epilogue) + o / per_block) / (k + o);
    }
    (k + epilogue + o / (2.0 * per_block)) / (k + o)
}

/// The share of a unit's epilogue the consumers still spend with `ep=tma`: converting and
/// staging the tile in shared memory and two named barriers (the stores from registers to
/// global memory of `ep=reg` become one thread's TMA stores, written while the next unit
/// multiplies). An estimate, not yet fitted to measurements.
const TMA_EPILOGUE_LEFT: f64 = 0.4;
