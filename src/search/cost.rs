//! An analytic cost model: a time estimate for one config on one problem, with no GPU.
//!
//! It only has to *rank* candidates well enough that the best few hundred contain the winner;
//! measurements correct it afterwards (see `guided`). The terms are the ones a kernel engineer
//! would reason with:
//!
//! - **Roofline** over the FLOPs the tiles execute (padding included: a 256-row tile on a
//!   32-row problem does 8× the work) and the bytes they move. A and B tiles are re-read from
//!   global memory once per tile of the other dimension:
//!   `bytes ≈ (M·K·⌈N/bn⌉ + K·N·⌈M/bm⌉)·elem + M·N·elem`; the re-reads beyond the first mostly
//!   hit L2 (less so without rasterisation), so they are charged to L2 bandwidth and only a miss
//!   fraction to DRAM. The first read is at most the tensor itself: the im2col replication of
//!   a filter window is a re-read too.
//! - **Wave quantisation**: `G·⌈M/bm⌉·⌈N/bn⌉·split_k` blocks over the SM count, rounded up.
//! - **Occupancy** from threads, shared memory and a register estimate: resident warps hide
//!   latency, together with the pipeline depth.
//! - **MMA efficiency** of the warp tile (operand loads per matrix instruction) and the
//!   main-loop overhead per `block_k` step.
//! - Split-K adds f32 partial traffic and, by its reduction (`red`), a zeroing and finishing
//!   launch (atomics) or a serial tail in the last block of each tile (in-kernel fix-up);
//!   vector widths below 16 bytes waste memory transactions.
//! - **Copy issue**: every global→shared vector costs issue slots on the SM that loads it;
//!   narrow vectors multiply them, and on NVIDIA a vector under 4 bytes cannot use `cp.async` at
//!   all, so it is staged through registers (more slots, and registers that hold the next tile).
//!   That cost is the same whether the problem is memory or math bound, which is why it is a
//!   term of its own ([`Estimate::copy_us`]).
//! - **Math path**: Hopper's `wgmma` reaches the data-sheet matrix peak; `mma.sync` about 60% of
//!   it ([`CostArch::wgmma_tflops`] vs [`CostArch::peak_tflops`]).
//! - **Load path** (`ld`): an operand a TMA tensor map loads costs no copy issue; with `ld=ws`
//!   the producer warpgroup issues the other copies while the consumers multiply (copy and
//!   math overlap rather than add), it keeps every stage full (depth = stages), and the block
//!   holds the whole register file (one block an SM, from [`Resources`]).
//! - **Persistent grid** (`pk=1`): a block walking several work units pays the pipeline fill
//!   once and overlaps each unit's epilogue with the next unit's loads
//!   ([`persistent_gain`]); wave quantisation is the same as one block per unit (the units
//!   are dealt round-robin).
//! - **Cluster** (`cl=2m|2n`): a tile pair fetches the operand it shares once, the peer's copy
//!   landing by multicast, so that operand's re-reads (L2, and the DRAM misses among them) are
//!   halved; a persistent grid holds whole clusters ([`PersistentGrid::in_clusters`], as the
//!   planner launches it). Session 9 measured every cluster kernel 1.6–2.6× slower than its
//!   twin on the H200: a fixed ~0.5–0.75 µs a K tile, the cluster-scope fence ptxas put before
//!   each remote `mbarrier` arrival (gone since session 10, see `codegen::ws`); the knob stays
//!   out of the default Hopper space until a device run shows the fixed kernels winning.
//! - **Depthwise** (`mma=dw`): no GEMM terms; the direct kernel is charged its own bytes and
//!   issue slots ([`depthwise`]).
//! - **Layout transform** (`xf`): the GEMM terms are those of the channels-last twin lowering,
//!   plus a launch and a read and a write of each transposed tensor at DRAM bandwidth
//!   ([`transform_us`]).

mod arch;
mod compute;
mod depthwise;
mod memory;
#[cfg(test)]
mod tests;

pub use arch::CostArch;
pub use memory::transform_us;

use crate::arch::MathKind;
use crate::config::{LdsLayout, MmaPath, PerfConfig, PersistentGrid};
use crate::legality::{Checker, Resources};
use crate::lowering::tma::tma_operands;
use crate::lowering::Lowering;
use compute::{
    blocks_per_sm, copy_slots, persistent_gain, through_registers, ASYNC_COPY_SLOTS, WS_DEPTH_MAX,
};
use memory::{access_bytes, c_access_bytes, split_reduction, vector_efficiency};

/// The model's verdict on one config, with the terms that produced it (for reports and tests).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    /// Predicted time of all kernels of the problem, µs; infinite when the config cannot run.
    pub time_us: f64,
    /// Math-bound part, µs, including the copy issue ([`copy_us`](Self::copy_us)).
    pub compute_us: f64,
    /// Memory-bound part, µs.
    pub memory_us: f64,
    /// Issue time of the global→shared copies and the epilogue's stores on the busiest SM, µs
    /// (part of `compute_us`: the same warps issue them).
    pub copy_us: f64,
    /// Blocks of the largest GEMM.
    pub blocks: u64,
    /// Fraction of SM-waves doing work in the largest GEMM (1 = no quantisation loss).
    pub wave_efficiency: f64,
    /// Resident blocks per SM.
    pub blocks_per_sm: u32,
    /// Estimated registers per thread.
    pub regs_per_thread: u32,
    /// Shared memory per block, bytes.
    pub smem_bytes: u64,
}

fn ceil_div(a: u64, b: u64) -> u64 {
    a.div_ceil(b.max(1))
}

/// The cost model for one problem on one machine: the legality checker supplies each config's
/// resources (threads, shared memory, registers), so the model and legality never disagree on
/// them.
#[derive(Debug, Clone)]
pub struct CostModel<'a> {
    lowering: &'a Lowering,
    machine: CostArch,
    checker: Checker,
}

impl<'a> CostModel<'a> {
    /// Prepares the model (runs the per-problem legality analysis once).
    pub fn new(lowering: &'a Lowering, machine: CostArch) -> Self {
        CostModel {
            lowering,
            machine,
            checker: Checker::new(lowering, &machine.arch),
        }
    }

    /// The machine numbers in use.
    pub fn machine(&self) -> &CostArch {
        &self.machine
    }

    /// Predicts the time of `c` (see the module docs for the terms).
    pub fn estimate(&self, c: &PerfConfig) -> Estimate {
        let res = self.checker.resources(c);
        let Some(gemms) = self.lowering.for_transform(c.xf) else {
            // No twin: legality refuses the config; rank it last.
            let mut e = estimate_with(self.lowering, c, &self.machine, &res);
            e.time_us = f64::INFINITY;
            return e;
        };
        let mut e = if c.mma == MmaPath::Depthwise {
            depthwise::estimate(gemms, c, &self.machine, &res)
        } else {
            estimate_with(gemms, c, &self.machine, &res)
        };
        let t = transform_us(self.lowering, c, &self.machine);
        e.time_us += t;
        e.memory_us += t;
        e
    }
}

/// Predicts the time of `c` on the problem `lowering` describes (builds a [`CostModel`]; use
/// one directly to estimate many configs).
pub fn estimate(lowering: &Lowering, c: &PerfConfig, machine: &CostArch) -> Estimate {
    CostModel::new(lowering, *machine).estimate(c)
}

fn estimate_with(
    lowering: &Lowering,
    c: &PerfConfig,
    machine: &CostArch,
    res: &Resources,
) -> Estimate {
    let arch = &machine.arch;
    let elem = lowering.problem.dtype().bytes();
    let (threads, smem) = (res.threads, u64::from(res.lds_bytes));
    // On an arch with `cp.async`, an operand too narrow for it holds its next tile in registers
    // across the multiply (the resource estimate assumes `cp.async` there): one register per 4
    // bytes of each vector a thread copies.
    let cp_async = arch.features.cp_async;
    let staging: u32 = [(c.block_m, c.vec_a), (c.block_n, c.vec_b)]
        .into_iter()
        .filter(|&(_, v)| cp_async && through_registers(cp_async, v * elem))
        .map(|(rows, v)| {
            let vectors = rows.saturating_mul(c.block_k) / v.max(1);
            vectors.div_ceil(threads.max(1)) * (v * elem).div_ceil(4)
        })
        .sum();
    let regs = res.registers.saturating_add(staging);
    let infeasible = Estimate {
        time_us: f64::INFINITY,
        compute_us: f64::INFINITY,
        memory_us: f64::INFINITY,
        copy_us: f64::INFINITY,
        blocks: 0,
        wave_efficiency: 0.0,
        blocks_per_sm: 0,
        regs_per_thread: regs,
        smem_bytes: smem,
    };
    if threads == 0
        || threads > arch.max_threads_per_block
        || smem > u64::from(arch.smem_per_block)
        || c.block_m == 0
        || c.block_n == 0
        || c.block_k == 0
        || c.split_k == 0
        || c.warp_m == 0
        || c.warp_n == 0
    {
        return infeasible;
    }
    let regs_alloc = regs.min(arch.max_regs_per_thread);
    let bps = blocks_per_sm(machine, threads, smem, regs_alloc);
    if bps == 0 {
        return infeasible;
    }
    let spill = if regs > arch.max_regs_per_thread {
        1.0 + 2.0 * f64::from(regs - arch.max_regs_per_thread) / f64::from(arch.max_regs_per_thread)
    } else {
        1.0
    };

    // Warp-tile terms, the same for every sub-GEMM.
    let (wm, wn, bk) = (
        f64::from(c.warp_m),
        f64::from(c.warp_n),
        f64::from(c.block_k),
    );
    let (im, inn, ik) = (
        f64::from(res.instr.m),
        f64::from(res.instr.n),
        f64::from(res.instr.k),
    );
    let (mma_eff, step_eff) = if res.instr.kind == MathKind::Fma {
        let per_thread = (wm * wn / f64::from(arch.warp_size)).max(1.0);
        let intensity = per_thread.sqrt() / 2.0;
        let fmas = per_thread * bk;
        (intensity / (intensity + 1.0), fmas / (fmas + 32.0))
    } else {
        let intensity = wm * wn / (wm + wn);
        let instrs = (wm * wn * bk) / (im * inn * ik);
        (intensity / (intensity + 4.0), instrs / (instrs + 4.0))
    };
    let lds_eff = match c.lds {
        LdsLayout::Padded => 0.97,
        LdsLayout::Swizzled => 1.0,
    };
    let sms = u64::from(arch.compute_units);
    let e = f64::from(elem);
    let peak = if c.mma.is_wgmma() && machine.wgmma_tflops > 0.0 {
        machine.wgmma_tflops
    } else {
        machine.peak_tflops
    };
    // Copy issue per `block_k` step of one block (an operand TMA loads, per sub-GEMM below,
    // costs one thread a box per stage: nothing next to this), and the epilogue's stores.
    let operand_slots = [
        copy_slots(cp_async, c.block_m, c.block_k, c.vec_a, elem),
        copy_slots(cp_async, c.block_n, c.block_k, c.vec_b, elem),
    ];
    // `ep=tma`: one thread issues a store per box, nothing next to the vector stores.
    let c_bytes_per_access = c_access_bytes(c, lowering.problem.direction(), elem);
    let epilogue_slots = match c.epilogue {
        crate::config::Epilogue::Reg => {
            f64::from(c.block_m) * f64::from(c.block_n) * f64::from(elem)
                / f64::from(c_bytes_per_access)
                * ASYNC_COPY_SLOTS
        }
        crate::config::Epilogue::Tma => 0.0,
    };
    let slot_us = 1.0 / (machine.issue_per_clk * machine.clock_ghz * 1e3);

    let mut total = Estimate {
        time_us: 0.0,
        compute_us: 0.0,
        memory_us: 0.0,
        copy_us: 0.0,
        blocks: 0,
        wave_efficiency: 1.0,
        blocks_per_sm: bps,
        regs_per_thread: regs,
        smem_bytes: smem,
    };
    let mut largest = 0.0f64;
    // Strided bwd-data in one launch: one launch overhead for every phase and the zeroing.
    let one_launch = crate::lowering::one_launch(lowering, c);
    if lowering.zero_init {
        let t = lowering.problem.direction().written();
        let bytes = lowering.problem.tensor_elems(t) as f64 * e;
        let launch = if one_launch { 0.0 } else { machine.launch_us };
        total.time_us += launch + bytes / (machine.dram_tbps * 1e6);
    }
    for (gi, g) in lowering.gemms.iter().enumerate() {
        let (gl, m, n, k) = (
            u64::from(g.g_len()),
            u64::from(g.m_len()),
            u64::from(g.n_len()),
            u64::from(g.k_len()),
        );
        let tiles_m = ceil_div(m, u64::from(c.block_m));
        let tiles_n = ceil_div(n, u64::from(c.block_n));
        let sk = u64::from(c.split_k);
        let k_split = ceil_div(k, sk);
        let k_steps = ceil_div(k_split, u64::from(c.block_k));
        // Stream-K: one block per SM at most, each walking its data-parallel tiles and an
        // equal share of the stream-K region's iterations; the waves are as full as that
        // divides (the busiest block walks `most_per_block` K steps).
        let stream = c.stream_k((gl * tiles_m * tiles_n) as u32, k_steps as u32, sms as u32);
        let blocks = match stream {
            Some(s) => u64::from(s.blocks),
            None => gl * tiles_m * tiles_n * sk,
        };
        let padded_flops = 2.0
            * (gl * tiles_m * u64::from(c.block_m) * tiles_n * u64::from(c.block_n)) as f64
            * (k_steps * u64::from(c.block_k) * sk) as f64;
        let waves = ceil_div(blocks, sms).max(1);
        let (wave_eff, steps_per_block) = match stream {
            Some(s) => (
                (gl * tiles_m * tiles_n * k_steps) as f64
                    / (sms * u64::from(s.most_per_block())) as f64,
                u64::from(s.most_per_block()),
            ),
            None => (blocks as f64 / (waves * sms) as f64, k_steps),
        };
        // The persistent walks: a stream-K block walks its segments and data-parallel tiles
        // (its grid is its own); a persistent grid's blocks one block-per-unit's units.
        let (units, unit_steps, slots, fill) = match stream {
            Some(s) => {
                let per = u64::from(s.dp_waves + s.max_segments().saturating_sub(1).max(1));
                (blocks * per, ceil_div(steps_per_block, per), blocks, 1.0)
            }
            // The grid the planner launches holds whole clusters: on an odd count of block
            // slots one stays idle (`fill`, 1 without a cluster).
            None => {
                let grid = PersistentGrid::new(blocks as u32, sms as u32, bps.max(1));
                let whole = grid.in_clusters(c.cluster.size());
                let fill = f64::from(whole.blocks) / f64::from(grid.blocks);
                (blocks, k_steps, u64::from(whole.blocks), fill)
            }
        };
        let wave_eff = wave_eff * fill;
        let resident = blocks.min(sms * u64::from(bps));
        let per_sm_warps = (ceil_div(resident, sms) as f64) * f64::from(c.consumer_warps());
        // Pipeline depth: the tile multiplied and those the copies run ahead. `mma=wg1` keeps a
        // wgmma group in flight, so its copies run one tile less ahead than `wg` at the same
        // stage count. That loss is modelled; the overlap the group in flight buys is not, and
        // is left to the guided search's per-field correction (H200, session 2 runs: over 111
        // wg/wg1 pairs of one config, wg1 was a median 4.5% slower at three stages and level
        // at four).
        // `ld=ws`: the producer fills every stage ahead of the consumers, whatever `mma`.
        let ahead = if c.ld.warp_specialised() {
            c.stages
        } else {
            c.tiles_ahead() + 1
        };
        // Beyond four tiles ahead the copies of a block that shares its SM's warps gain nothing
        // more; a warp-specialised block is alone on its SM, and its producer keeps every stage
        // in flight, so up to `WS_DEPTH_MAX` stages still hide latency that one consumer
        // warpgroup's four warps cannot (cuDNN's 64 × 128 sm_90 kernels run 8 stages).
        let depth = if c.ld.warp_specialised() {
            f64::from(ahead.clamp(1, WS_DEPTH_MAX))
        } else {
            f64::from(ahead.clamp(1, 4))
        };
        let hide = 1.0 - 0.5 * (-(per_sm_warps * depth) / 8.0).exp();

        // `ld=tma|ws`: the operands a tensor map loads (the code generator's rule).
        let tma = if c.ld.uses_tma() {
            tma_operands(&lowering.problem, g, c, [true, true]).unwrap_or([None, None])
        } else {
            [None, None]
        };
        let step_slots: f64 = operand_slots
            .iter()
            .zip(&tma)
            .filter(|(_, t)| t.is_none())
            .map(|(s, _)| s)
            .sum();
        // The busiest SM issues the copies of its share of the blocks.
        let copy = ceil_div(blocks, sms) as f64
            * (steps_per_block as f64 * step_slots + epilogue_slots)
            * slot_us
            * spill;
        let math = padded_flops / (peak * 1e6) / (mma_eff * step_eff * hide * wave_eff * lds_eff)
            * spill
            * persistent_gain(c, unit_steps, units, slots);
        // `ld=ws`: a producer warpgroup of its own issues the copies while the consumers
        // multiply, so they overlap instead of adding up.
        let compute = if c.ld.warp_specialised() {
            math.max(copy)
        } else {
            math + copy
        };

        // Bytes: A re-read once per column tile, B once per row tile. An implicit-GEMM operand
        // gathers its tensor with replication (a 3×3 filter window reads each input pixel up to
        // nine times), so only the tensor's own size is unique DRAM traffic; the replicas are
        // re-reads like the per-tile ones.
        let tensor_bytes = |t| lowering.problem.tensor_elems(t) as f64 * e;
        let a_gathered = (gl * m * k) as f64 * e;
        let b_gathered = (gl * k * n) as f64 * e;
        let a_unique = a_gathered.min(tensor_bytes(g.a.tensor));
        let b_unique = b_gathered.min(tensor_bytes(g.b.tensor));
        // A cluster's blocks share one operand's tile: it crosses L2 once per pair.
        let pairing = |operand| match c.cluster.shared_operand() {
            Some(o) if o == operand => f64::from(c.cluster.size()),
            _ => 1.0,
        };
        let a_reads = (a_gathered * tiles_n as f64 / pairing(0)).max(a_unique);
        let b_reads = (b_gathered * tiles_m as f64 / pairing(1)).max(b_unique);
        // One SM's port to L2: 64 bytes per clock.
        let sm_l2_bytes_per_us = 64.0 * machine.clock_ghz * 1e3;
        let (c_bytes, launches, tail) =
            split_reduction(c, stream, (gl * m * n) as f64, e, sm_l2_bytes_per_us);
        let miss = if resident >= blocks {
            0.1
        } else if c.raster > 1 && tiles_m > 1 {
            0.15
        } else {
            0.35
        };
        let dram_a = a_unique + miss * (a_reads - a_unique);
        let dram_b = b_unique + miss * (b_reads - b_unique);
        // An operand TMA loads moves in whole boxes: its `va`/`vb` is not read.
        let dram = dram_a / vector_efficiency(access_bytes(tma[0].is_none(), c.vec_a, elem))
            + dram_b / vector_efficiency(access_bytes(tma[1].is_none(), c.vec_b, elem))
            + c_bytes / vector_efficiency(c_bytes_per_access);
        let l2 = a_reads + b_reads + c_bytes;
        // Bytes in flight decide how much bandwidth the grid can draw (Little's law: ~32 KB
        // per SM at these latencies).
        let in_flight =
            resident as f64 * (depth - 1.0).max(1.0) * (c.block_m + c.block_n) as f64 * bk * e;
        let bw_frac = (in_flight / (sms as f64 * 32768.0)).clamp(0.05, 1.0);
        // The bytes move wave by wave too: these kernels draw far less than the chip's
        // bandwidth, each SM its own latency-bound share, so SMs without a block (a partial
        // last wave, a grid under one wave) leave theirs unused. Measured on the H200 (one
        // run, 2026-12-02): 7×7 1×1 forward, 256 × 96 tiles (two full waves) 16.8 µs against
        // 256 × 128 (1.5 waves) 19.7 µs, though 256 × 96 re-reads the filter more; 7×7 1×1
        // backward weight, 64 × 128 (128 blocks) 17.4 µs against 64 × 192 (96) 21.5 µs. A grid
        // whose bytes in flight are fewer still is limited by them instead (`bw_frac`).
        let memory = (dram / (machine.dram_tbps * 1e6)).max(l2 / (machine.l2_tbps * 1e6))
            / bw_frac.min(wave_eff);

        // One launch for every phase of one-launch bwd-data (without split-K: one each).
        let launches = if one_launch && gi > 0 { 0.0 } else { launches };
        let t =
            compute.max(memory) + 0.2 * compute.min(memory) + tail + launches * machine.launch_us;
        total.time_us += t;
        total.compute_us += compute;
        total.memory_us += memory;
        total.copy_us += copy;
        if t > largest {
            largest = t;
            total.blocks = blocks;
            total.wave_efficiency = wave_eff;
        }
    }
    total
}
