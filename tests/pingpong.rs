//! Ping-pong consumers (`ld=wspp`) on the CPU emulator: two consumer warpgroups, each with a
//! whole block tile of its own, taking alternate units of the persistent walk; the producer's
//! ring runs over every unit in walk order; an order barrier (an mbarrier per consumer) hands
//! the tensor cores from one consumer's main loop to the other's. Bit-exact against the f64
//! direct convolution for fwd, bwd-data and bwd-weight, several units per block, odd unit
//! counts (consumer 0 takes one more), split-K through atomics and the fix-up; every wrong
//! protocol a test hook emits (no order barrier, a ring per consumer, the cooperative empty
//! count) must fail in the emulator.

use convtune::arch::Arch;
use convtune::codegen::{compile_conv, emu, with_ping_pong_fault, PingPongFault, Target};
use convtune::config::{Grid, LoadPath, MmaPath, PerfConfig, Reduction};
use convtune::legality;
use convtune::lowering::lower;
use convtune::problem::ConvProblem;
mod common;

use common::{cfg, data, emulate_where_legal, hopper_space, mismatches, problem};

/// One warpgroup per tile, two stages, staged epilogue.
const PP: &str =
    "v4:bm=64,bn=64,bk=64,wm=64,wn=64,st=2,va=8,vb=8,vc=8,lds=swz,sk=1,rs=1,mma=wg,red=atomic,ld=wspp,pk=1,xf=none";

fn with(c: &PerfConfig, f: impl FnOnce(&mut PerfConfig)) -> PerfConfig {
    let mut c = *c;
    f(&mut c);
    c
}

/// Emulates `c` on an H200-like arch with `sms` SMs, bit-exactly; returns the GEMM grid's x.
fn run(p: &ConvProblem, c: &PerfConfig, sms: u32) -> u32 {
    let arch = Arch::SM_90.with_compute_units(sms);
    let r = emulate_where_legal(p, c, arch, 13).unwrap_or_else(|| panic!("{p} {c}: refused"));
    let k = r
        .kernels
        .iter()
        .find(|k| k.name.starts_with("convtune_gemm"))
        .unwrap();
    // Two consumer warpgroups and the producer.
    assert_eq!(k.block[0], 3 * 128, "{p} {c}");
    k.grid[0]
}

/// Forward, short K (one K tile a unit): 8 units over 3 blocks (3, 3, 2: consumer 0 takes
/// two units of an odd walk), over 1 block (4 each), over 8 (one unit: consumer 1 idle);
/// direct epilogue; f16.
#[test]
fn ping_pong_fwd_short_k_odd_and_even_walks() {
    let p = problem("convbfp16 -n 4 -c 64 -H 8 -W 8 -k 128 -y 1 -x 1 -F 1 --layout NHWC");
    let c = cfg(PP);
    assert_eq!(run(&p, &c, 3), 3);
    assert_eq!(run(&p, &c, 1), 1);
    assert_eq!(run(&p, &c, 132), 8);
    assert_eq!(run(&p, &with(&c, |c| c.vec_c = 1), 3), 3);
    let p16 = problem("convfp16 -n 4 -c 64 -H 8 -W 8 -k 128 -y 1 -x 1 -F 1 --layout NHWC");
    assert_eq!(run(&p16, &c, 5), 5);
}

/// Long K with an odd K-tile count per unit (9: a unit boundary falls mid-ring), the
/// activation through the producer's cp.async (padded 3x3); wg1 with three stages.
#[test]
fn ping_pong_fwd_long_k_and_wg1() {
    let p = problem("convbfp16 -n 2 -c 64 -H 5 -W 4 -k 128 -y 3 -x 3 -p 1 -q 1 -F 1 --layout NHWC");
    assert_eq!(run(&p, &cfg(PP), 1), 1);
    let wg1 = with(&cfg(PP), |c| {
        c.stages = 3;
        c.mma = MmaPath::WgmmaInFlight;
        c.raster = 2;
    });
    let p = problem("convbfp16 -n 4 -c 64 -H 6 -W 6 -k 128 -y 3 -x 3 -p 1 -q 1 -F 1 --layout NHWC");
    assert_eq!(run(&p, &wg1, 2), 2);
}

/// Backward data (stride 1, a partial K tile; seed 003's dense shape, small).
#[test]
fn ping_pong_bwd_data() {
    let p = problem("convbfp16 -n 4 -c 128 -H 8 -W 8 -k 80 -y 1 -x 1 -F 2 --layout NHWC");
    assert_eq!(run(&p, &cfg(PP), 3), 3);
    let p =
        problem("convbfp16 -n 2 -c 128 -H 1 -W 32 -k 64 -y 1 -x 2 -u 1 -v 2 -F 2 --layout NHWC");
    assert_eq!(run(&p, &cfg(PP), 3), 3);
}

/// Backward weight with split-K: units are (tile, slice), an empty slice (no K tile) still
/// takes its consumer's turn; the fix-up's verdict words and staged C in each consumer's own
/// region.
#[test]
fn ping_pong_bwd_weight_split_k() {
    let p = problem("convbfp16 -n 2 -c 64 -H 12 -W 16 -k 64 -y 1 -x 1 -F 4 --layout NHWC");
    for red in [Reduction::Fixup, Reduction::Atomic] {
        let c = with(&cfg(PP), |c| {
            c.split_k = 4;
            c.red = red;
        });
        assert_eq!(run(&p, &c, 1), 1, "{c}");
        assert_eq!(run(&p, &c, 3), 3, "{c}");
    }
    let past = problem("convbfp16 -n 2 -c 64 -H 10 -W 16 -k 64 -y 1 -x 1 -F 4 --layout NHWC");
    let c = with(&cfg(PP), |c| {
        c.split_k = 4;
        c.red = Reduction::Fixup;
        c.stages = 3;
        c.mma = MmaPath::WgmmaInFlight;
    });
    assert_eq!(run(&past, &c, 2), 2, "{c}");
}

/// Each wrong protocol must be reported by the emulator (violations or wrong elements), on
/// problems where the right one passes.
#[test]
fn every_broken_ping_pong_protocol_is_caught() {
    let cases = [
        // 8 units, 9 K tiles each, one block: the consumers' ring positions interleave.
        (
            "convbfp16 -n 2 -c 64 -H 8 -W 8 -k 128 -y 3 -x 3 -p 1 -q 1 -F 1 --layout NHWC",
            1,
        ),
        // Two K tiles a unit (with two stages, each stage alternates between the
        // consumers), 8 units over 3 blocks. (With one K tile a unit each stage would belong
        // to one consumer, and no order barrier would still be a correct protocol.)
        (
            "convbfp16 -n 4 -c 128 -H 8 -W 8 -k 128 -y 1 -x 1 -F 1 --layout NHWC",
            3,
        ),
    ];
    for fault in [
        PingPongFault::NoOrder,
        PingPongFault::OwnRing,
        PingPongFault::CooperativeEmpty,
    ] {
        let mut caught = 0;
        for (line, sms) in cases {
            let p = problem(line);
            let c = cfg(PP);
            let like = Target::of(Arch::SM_90.with_compute_units(sms));
            let mut t = data(&p, 3);
            let want = convtune::reference::direct_conv(&p, &t[0], &t[1], &t[2]);
            let rep =
                with_ping_pong_fault(fault, || emu::emulate_conv(&lower(&p), &c, like, &mut t))
                    .unwrap_or_else(|e| panic!("{p} {c}: {e}"));
            let w = p.direction().written() as usize;
            let bad = mismatches(&p, &t[w], &want).len();
            eprintln!(
                "{fault:?}, {p}: {} violations {:?}, {bad} wrong elements",
                rep.violations,
                rep.messages.first()
            );
            caught += usize::from(rep.violations > 0 || bad > 0);
        }
        assert_eq!(caught, cases.len(), "{fault:?} went unnoticed");
    }
    for (line, sms) in cases {
        assert_eq!(run(&problem(line), &cfg(PP), sms), sms);
    }
}

#[test]
fn what_wspp_cannot_do_is_refused_with_a_reason() {
    let p = problem("convbfp16 -n 2 -c 64 -H 5 -W 5 -k 64 -y 1 -x 1 -F 1 --layout NHWC");
    let l = lower(&p);
    let h200 = Target::of(Arch::SM_90);
    let refused = |c: &PerfConfig| {
        let e = legality::check(&l, c, &Arch::SM_90)
            .unwrap_err()
            .to_string();
        let plan = compile_conv(&l, c, h200)
            .map(|_| ())
            .unwrap_err()
            .to_string();
        (e, plan)
    };
    let base = cfg(PP);
    // No persistent walk: no alternate units to take.
    let (e, plan) = refused(&with(&base, |c| c.persistent = Grid::PerTile));
    assert!(e.contains("pk=1") && e.contains("ld=wspp"), "{e}");
    assert!(plan.contains("pk=1"), "{plan}");
    // Two warpgroups on one block tile is the cooperative kernel, not ping-pong.
    let (e, plan) = refused(&with(&base, |c| {
        c.block_m = 128;
        c.block_n = 128;
        c.warp_n = 128;
    }));
    assert!(e.contains("wm × wn must be bm × bn"), "{e}");
    assert!(plan.contains("wm × wn must be bm × bn"), "{plan}");
    // One stage: the producer cannot load ahead.
    let (e, _) = refused(&with(&base, |c| c.stages = 1));
    assert!(e.contains("st = 1"), "{e}");
    // Stream-K's walk is not the one the consumers alternate on (ld=ws walks it).
    let (e, plan) = refused(&with(&base, |c| c.red = Reduction::Stream));
    assert!(e.contains("ld=wspp") && e.contains("stream"), "{e}");
    assert!(plan.contains("use ld=ws with pk=1"), "{plan}");
    // The warp-level path has no warpgroups to specialise.
    let (e, _) = refused(&with(&base, |c| {
        c.mma = MmaPath::Sync;
        c.warp_m = 32;
        c.warp_n = 32;
    }));
    assert!(e.contains("wg"), "{e}");
    // A legal one: 384 threads, consumers with 232 registers.
    assert!(legality::check(&l, &base, &Arch::SM_90).is_ok());
    assert_eq!(base.consumer_warps(), 8);
    assert_eq!(
        cfg(&base.to_string()).ld,
        LoadPath::WsPingPong,
        "wspp round-trips"
    );
}

/// Legality and the planner agree on `ld=wspp` over the Hopper space: every legal ping-pong
/// config plans a 384-thread block on a grid of min(units, 132) blocks within the shared
/// memory limit (two epilogue regions); the space holds them.
#[test]
fn legality_and_the_planner_agree_on_wspp_over_the_hopper_space() {
    let space = hopper_space();
    assert!(space.params.ld.contains(&LoadPath::WsPingPong));
    let h200 = Target::of(Arch::SM_90);
    let mut planned = 0;
    for line in [
        "convbfp16 -n 64 -c 512 -H 7 -W 7 -k 2048 -y 1 -x 1 -F 1 --layout NHWC",
        "convbfp16 -n 16 -c 256 -H 14 -W 14 -k 256 -y 3 -x 3 -p 1 -q 1 -F 4 --layout NHWC",
        "convbfp16 -n 8 -c 128 -H 28 -W 28 -k 256 -y 1 -x 1 -F 2 --layout NHWC",
    ] {
        let p = problem(line);
        let l = lower(&p);
        let e = convtune::space::enumerate_legal(&p, &Arch::SM_90, &space);
        for c in e.legal.iter().filter(|c| c.ld == LoadPath::WsPingPong) {
            assert_eq!(c.persistent, Grid::Persistent, "{c}");
            let kernels = convtune::codegen::launches(&l, c, h200)
                .unwrap_or_else(|err| panic!("{p} {c}: legal, but {err}"))
                .kernels;
            let g = &l.gemms[0];
            let units = g.g_len()
                * c.split_k
                * g.m_len().div_ceil(c.block_m)
                * g.n_len().div_ceil(c.block_n);
            let k = kernels
                .iter()
                .find(|k| k.name.starts_with("convtune_gemm"))
                .unwrap();
            assert_eq!(k.grid, [units.min(132), 1, 1], "{p} {c}");
            assert_eq!(k.block[0], 384, "{p} {c}");
            assert!(k.shared_bytes <= Arch::SM_90.smem_per_block, "{p} {c}");
            planned += 1;
        }
    }
    assert!(planned > 100, "{planned} planned");
}

/// A 128-row warpgroup tile (two m64 instructions a k step on one B, two accumulator blocks):
/// a ping-pong consumer's 128 × 128 tile (CUTLASS's ping-pong shape), on fwd (both operands
/// by TMA; the activation by cp.async), bwd-data and bwd-weight (MN-major A and B), wg and
/// wg1; and the same warpgroup tile on the other paths (cooperative ws with two warpgroups
/// on 256 rows, tma, cp).
#[test]
fn a_128_row_warpgroup_tile_is_bit_exact() {
    let pp = "v4:bm=128,bn=128,bk=64,wm=128,wn=128,st=3,va=8,vb=8,vc=8,lds=swz,sk=1,rs=1,mma=wg,red=atomic,ld=wspp,pk=1,xf=none";
    let fwd = problem("convbfp16 -n 2 -c 128 -H 16 -W 16 -k 256 -y 1 -x 1 -F 1 --layout NHWC");
    assert_eq!(run(&fwd, &cfg(pp), 1), 1);
    let wg1 = with(&cfg(pp), |c| c.mma = MmaPath::WgmmaInFlight);
    let padded =
        problem("convbfp16 -n 2 -c 64 -H 9 -W 9 -k 128 -y 3 -x 3 -p 1 -q 1 -F 1 --layout NHWC");
    assert_eq!(run(&padded, &wg1, 1), 1);
    let dgrad = problem("convbfp16 -n 2 -c 256 -H 8 -W 8 -k 80 -y 1 -x 1 -F 2 --layout NHWC");
    assert_eq!(run(&dgrad, &cfg(pp), 2), 2);
    let wgrad = problem("convbfp16 -n 2 -c 128 -H 8 -W 16 -k 256 -y 1 -x 1 -F 4 --layout NHWC");
    let fx = with(&cfg(pp), |c| {
        c.split_k = 2;
        c.red = Reduction::Fixup;
    });
    assert_eq!(run(&wgrad, &fx, 1), 1);
    // The other paths: 256 × 128 with two cooperative warpgroups of 128 × 128, and one.
    let coop = with(&cfg(pp), |c| {
        c.ld = LoadPath::Ws;
        c.block_m = 256;
    });
    for c in [
        coop,
        with(&coop, |c| c.persistent = Grid::PerTile),
        with(&coop, |c| {
            c.ld = LoadPath::Tma;
            c.persistent = Grid::PerTile;
            c.block_m = 128;
        }),
        with(&coop, |c| {
            c.ld = LoadPath::Cp;
            c.persistent = Grid::PerTile;
            c.block_m = 128;
        }),
    ] {
        for p in [&fwd, &wgrad] {
            assert!(
                emulate_where_legal(p, &c, Arch::SM_90, 5).is_some(),
                "{p} {c}: refused"
            );
        }
    }
}
