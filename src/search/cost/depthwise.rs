//! The cost of the direct depthwise kernel (`mma=dw`): a memory-bound estimate.
//!
//! - **DRAM**: `src` and `dst` once each (the kernel's re-reads of `src` across filter rows
//!   and neighbouring tiles hit L1 or L2). Sectors are wasted only when a block's run of
//!   channels is narrower than a sector: its threads lie along the channels first, so a warp
//!   reads a block's channels of a pixel as one contiguous run whatever each thread's vector
//!   (charging narrow *per-thread* vectors as the GEMM paths do ranked `va=8` first where the
//!   winners load 1–2 channels: on session 26's 603 timed configs of a forward depthwise
//!   problem, the model's pick went from 0.76 to 0.93 of the fastest).
//! - **L2**: every `src` vector a thread loads (its tile's span of rows × columns: the reuse
//!   within a tile is in registers, so a wider tile loads less), the stores, and each block's
//!   copy of its filter taps.
//! - **Bytes in flight** (Little's law, as for the GEMMs): a thread issues its tile's `src`
//!   loads together, so resident threads × span × vector bytes decide how much bandwidth the
//!   grid can draw.
//! - **Issue**: FMAs, conversions, loads and stores per thread on the busiest SM, with the
//!   wave quantisation of the grid.
//! - **The blocks' sums** (backward weight), charged on top of the rest: by atomics
//!   ([`DwSums::Atomic`]) every block adds its sums for each of its channels and taps into the
//!   same few thousand addresses, and those adds serialise at the L2 instead of streaming
//!   ([`CONTENDED_ATOMIC_BYTES`], one after another per address: [`SAME_ADDRESS_ADD_US`]); as
//!   partials ([`DwSums::Partials`]) they are stored and read back once (bytes) by a summing
//!   kernel that waits through a few rounds of L2 loads.

use super::{blocks_per_sm, ceil_div, vector_efficiency, CostArch, Estimate};
use crate::config::{DwSums, DwTile, PerfConfig};
use crate::legality::Resources;
use crate::lowering::depthwise::{DwShape, SlotSum};
use crate::lowering::Lowering;

/// Bytes in flight per SM that saturate DRAM (the GEMM model's figure).
const SATURATING_BYTES_PER_SM: f64 = 32768.0;
/// L2 bytes of bandwidth one f32 atomic add into a contended address takes, as time not hidden
/// behind the kernel's loads: the adds' throughput, charged as L2 bytes so that it scales with
/// an arch's L2 (about 16 µs per million adds on the H200). With [`SAME_ADDRESS_ADD_US`],
/// fitted by least squares on session 28's 30 tiles timed both ways (atomics against
/// partials, same tiles, same process): residual 2.4 µs against 4.7 for the throughput alone.
const CONTENDED_ATOMIC_BYTES: f64 = 160.0;
/// Time of one atomic add into an address that others are adding into: the L2 performs the
/// adds to one address one after another, so each gradient element waits through one add per
/// block that shares its channels (the kernel's slices), however many other elements proceed
/// in parallel (about 26 ns on the H200, fitted with [`CONTENDED_ATOMIC_BYTES`]). Why few
/// channels (c32: 392 blocks per address) lose 10 µs to atomics and 7×7 filters almost none.
const SAME_ADDRESS_ADD_US: f64 = 0.026;
/// Time of one round of dependent loads from L2 (about 300 cycles at the H200's clock; not
/// measured on its own): the summing kernel of backward weight's partials waits through
/// [`SlotSum::rounds`] of them.
const L2_ROUND_TRIP_US: f64 = 0.15;
/// Issue slots a thread spends outside its tile's arithmetic: index math, bounds, the filter
/// copy's share.
const THREAD_OVERHEAD_SLOTS: f64 = 40.0;

/// The estimate of `c` (`mma=dw`) on `lowering`'s problem; infinite when the kernel cannot
/// run it.
pub(super) fn estimate(
    lowering: &Lowering,
    c: &PerfConfig,
    machine: &CostArch,
    res: &Resources,
) -> Estimate {
    let arch = &machine.arch;
    let tile = DwTile::of(c);
    let mut out = Estimate {
        time_us: f64::INFINITY,
        compute_us: f64::INFINITY,
        memory_us: f64::INFINITY,
        copy_us: 0.0,
        blocks: 0,
        wave_efficiency: 0.0,
        blocks_per_sm: 0,
        regs_per_thread: res.registers,
        smem_bytes: u64::from(res.lds_bytes),
    };
    let Ok(shape) = DwShape::of(&lowering.problem) else {
        return out;
    };
    let threads = tile.threads();
    if shape.tile_refusal(&tile, arch).is_some() || threads == 0 {
        return out;
    }
    let regs = res.registers.clamp(1, arch.max_regs_per_thread);
    let bps = blocks_per_sm(machine, threads, u64::from(res.lds_bytes), regs);
    if bps == 0 {
        return out;
    }
    let e = f64::from(shape.dtype.bytes());
    let tiles = shape.tiles(tile.rows, tile.cols);
    let channel_blocks = u64::from(shape.channels.div_ceil(tile.channels));
    let lanes = u64::from(tile.tiles());
    // Backward weight: `slices` blocks per channel block, each thread walking its share of
    // their run of tiles; forward and backward data: one tile a thread.
    let (pixel_blocks, run) = shape.pixel_blocks(&tile, arch);
    let (blocks, per_lane) = (
        pixel_blocks * channel_blocks,
        ceil_div(u64::from(run), lanes),
    );
    let sms = u64::from(arch.compute_units);
    let slots = sms * u64::from(bps);
    let waves = ceil_div(blocks, slots).max(1);
    let wave_eff = blocks as f64 / (waves * slots) as f64;
    let resident = blocks.min(slots);

    let [sh, sw] = shape.span(tile.rows, tile.cols);
    let src_vec_bytes = f64::from(shape.src_vec(tile.vec)) * e;
    let vectors = (channel_blocks * u64::from(tile.channel_vectors())) as f64;
    let taps = f64::from(shape.taps[0] * shape.taps[1]);
    let src_loads = tiles as f64 * vectors * f64::from(sh * sw) * src_vec_bytes;
    let dst_bytes = shape.dst_elems() as f64 * e;
    let filter = blocks as f64 * f64::from(tile.channels) * taps * e;
    // Backward weight: each block's f32 sums, one per channel and tap, added into the
    // gradient by contended atomics, or stored to its slot and read back by the summing
    // kernel (a stream of plain accesses, charged as bytes).
    let block_sums = blocks as f64 * f64::from(tile.channels) * taps;
    let (sums_us, partial_bytes) = match (shape.reduce, tile.sums) {
        (false, _) => (0.0, 0.0),
        (true, Some(DwSums::Partials)) => {
            let slots = pixel_blocks as u32;
            let rounds = f64::from(SlotSum::of(slots).rounds());
            (rounds * L2_ROUND_TRIP_US, block_sums * 4.0 * 2.0)
        }
        (true, _) => (
            block_sums * CONTENDED_ATOMIC_BYTES / (machine.l2_tbps * 1e6)
                + pixel_blocks as f64 * SAME_ADDRESS_ADD_US,
            0.0,
        ),
    };
    let launches = f64::from(shape.launches(&tile));
    // A warp reads a block's channels of a pixel as one run (see the module doc).
    let run_bytes = shape.src_vec(tile.channels) * shape.dtype.bytes();
    let dram = (shape.src_elems() as f64 * e + dst_bytes) / vector_efficiency(run_bytes)
        + (f64::from(shape.channels) * taps * e)
        + partial_bytes;
    let l2 = src_loads + dst_bytes + filter + partial_bytes;
    let in_flight = resident as f64 * f64::from(threads) * f64::from(sh * sw) * src_vec_bytes;
    let bw_frac = (in_flight / (sms as f64 * SATURATING_BYTES_PER_SM)).clamp(0.05, 1.0);
    let memory = (dram / (machine.dram_tbps * 1e6)).max(l2 / (machine.l2_tbps * 1e6)) / bw_frac;

    let (va, px) = (f64::from(tile.vec), f64::from(tile.pixels_per_thread()));
    let per_thread = px * taps * va // FMAs
        + f64::from(sh * sw) * (1.0 + va) // loads and their conversions
        + taps * va.div_euclid(4.0).max(1.0) // filter taps from shared memory
        + px * (1.0 + va / 2.0) // conversions back and stores (backward weight: the loads)
        + THREAD_OVERHEAD_SLOTS;
    // Backward weight: a thread walks `per_lane` tiles, then adds its sums into the block's.
    let per_thread = per_thread * per_lane as f64
        + if shape.reduce {
            taps * va * 3.0 + lanes as f64 * 2.0
        } else {
            0.0
        };
    let slot_us = 1.0 / (machine.issue_per_clk * machine.clock_ghz * 1e3);
    // The busiest SM issues its share of the blocks, each in whole warps (a block of 4
    // threads issues as many instructions as one of 32).
    let issued = f64::from(threads.next_multiple_of(arch.warp_size));
    let compute = ceil_div(blocks, sms) as f64 * issued * per_thread * slot_us;

    out.time_us =
        compute.max(memory) + 0.2 * compute.min(memory) + sums_us + launches * machine.launch_us;
    out.compute_us = compute;
    out.memory_us = memory;
    out.blocks = blocks;
    out.wave_efficiency = wave_eff;
    out.blocks_per_sm = bps;
    out
}

#[cfg(test)]
mod tests {
    use super::super::{estimate, CostArch};
    use crate::arch::Arch;
    use crate::config::PerfConfig;
    use crate::lowering::lower;
    use crate::problem::{ConvProblem, DType};

    fn dw(bm: u32, bn: u32, va: u32, vb: u32, vc: u32) -> PerfConfig {
        format!(
            "v2:bm={bm},bn={bn},bk=16,wm=16,wn=16,st=2,va={va},vb={vb},vc={vc},lds=pad,sk=1,\
             rs=1,mma=dw"
        )
        .parse()
        .unwrap()
    }

    #[test]
    fn backward_weight_ranks_measured_extremes_in_order() {
        // Session 26's call 4 on the H200 (µs): the fastest and one of the slowest timed
        // configs of two problems. The slow ones add into the filter from 4–8× more blocks
        // (contended atomics) or load 8 channels a thread; the model before session 27 ranked
        // both of them first.
        let a = |dt| CostArch::from_arch(&Arch::SM_90, dt);
        for (p, fast, slow) in [
            (
                "conv -n 128 -c 32 -H 28 -W 28 -k 32 -y 3 -x 3 -p 1 -q 1 -g 32 -F 4 --layout NHWC",
                dw(16, 256, 1, 4, 4), // 30.2
                dw(32, 32, 2, 4, 4),  // 226.1
            ),
            (
                "convfp16 -n 8 -c 2048 -H 56 -W 56 -k 2048 -y 3 -x 3 -p 1 -q 1 -g 2048 -F 4 \
                 --layout NHWC",
                dw(64, 128, 2, 4, 4), // 79.8
                dw(128, 32, 8, 2, 4), // 281.4
            ),
        ] {
            let p: ConvProblem = p.parse().unwrap();
            let (l, a) = (lower(&p), a(p.dtype()));
            let (f, s) = (estimate(&l, &fast, &a), estimate(&l, &slow, &a));
            assert!(f.time_us < s.time_us, "{p}: {f:?} vs {s:?}");
        }
    }

    #[test]
    fn atomics_cost_most_where_many_blocks_share_a_channel() {
        // Session 28's call 1 on the H200, the same tile both ways (µs, atomics − partials):
        // f32 c32 28² n128 (392 blocks add into each of 288 addresses) 10.5; f16 c512 7×7
        // filter on a 7² image (8 blocks per address, 25,088 addresses) 0.4. The model's gap
        // keeps that order and is within a few µs on the contended one (on the other it
        // charges the adds' throughput and a conversion launch, ~5 µs: the kernel's 49 taps a
        // pixel hide them better than a bandwidth term can say).
        let gap = |p: &str, c: &str| {
            let p: ConvProblem = p.parse().unwrap();
            let (l, a) = (lower(&p), CostArch::from_arch(&Arch::SM_90, p.dtype()));
            let t = |red: &str| {
                let c: PerfConfig = format!("v3:{c},red={red}").parse().unwrap();
                estimate(&l, &c, &a).time_us
            };
            t("atomic") - t("fixup")
        };
        let few = gap(
            "conv -n 128 -c 32 -H 28 -W 28 -k 32 -y 3 -x 3 -p 1 -q 1 -g 32 -F 4 --layout NHWC",
            "bm=16,bn=256,bk=16,wm=16,wn=16,st=2,va=2,vb=4,vc=4,lds=pad,sk=1,rs=1,mma=dw",
        );
        let many = gap(
            "convfp16 -n 32 -c 512 -H 7 -W 7 -k 512 -y 7 -x 7 -p 3 -q 3 -u 2 -v 2 -g 512 -F 4 \
             --layout NHWC",
            "bm=32,bn=64,bk=16,wm=16,wn=16,st=2,va=2,vb=4,vc=4,lds=pad,sk=1,rs=1,mma=dw",
        );
        assert!(few > 1.5 * many, "{few} vs {many}");
        assert!((few - 10.5).abs() < 4.0, "{few}");
    }

    #[test]
    fn memory_bound_above_the_dram_floor_and_wide_vectors_win() {
        let p: ConvProblem = "convfp16 -n 32 -c 256 -H 28 -W 28 -k 256 -y 3 -x 3 -p 1 -q 1 \
                              -g 256 -F 1 --layout NHWC"
            .parse()
            .unwrap();
        let l = lower(&p);
        let a = CostArch::from_arch(&Arch::SM_90, DType::F16);
        let wide = estimate(&l, &dw(128, 64, 8, 4, 2), &a);
        let narrow = estimate(&l, &dw(128, 64, 1, 4, 2), &a);
        let floor = p.min_bytes() / (a.dram_tbps * 1e6) + a.launch_us;
        assert!(wide.time_us >= floor, "{wide:?} under the floor {floor}");
        assert!(wide.memory_us > wide.compute_us, "{wide:?}");
        assert!(wide.time_us < narrow.time_us, "{wide:?} vs {narrow:?}");
        // A tile the kernel refuses (vb × vc does not divide bn) and a problem it does not run
        // rank last.
        assert!(estimate(&l, &dw(128, 4, 8, 4, 2), &a).time_us.is_infinite());
        let dense = lower(
            &"convfp16 -n 32 -c 256 -H 28 -W 28 -k 256 -y 3 -x 3 -p 1 -q 1 -F 1 --layout NHWC"
                .parse()
                .unwrap(),
        );
        assert!(estimate(&dense, &dw(128, 64, 8, 4, 2), &a)
            .time_us
            .is_infinite());
    }
}
