//! The persistent grid (`pk=1`, `ld=ws`) on the CPU emulator: `min(units, SMs × resident)`
//! blocks walking work units (group, tile, split-K slice) `blockIdx.x, += gridDim.x`, the
//! producer's stage ring running on across units over a block-global K-tile counter, the
//! epilogue in shared memory of its own. Bit-exact against the f64 direct convolution for
//! fwd, bwd-data and bwd-weight, with split-K through atomics and the fix-up, empty K slices,
//! and more units than blocks (an arch with a few SMs: uneven walks) or fewer. A ring that
//! restarts at each unit (the wrong parity across unit boundaries) must fail in the emulator.

use convtune::arch::Arch;
use convtune::codegen::{compile_conv, emu, with_ring_reset_per_unit, Target};
use convtune::config::{Grid, LoadPath, MmaPath, PerfConfig, Reduction};
use convtune::legality;
use convtune::lowering::lower;
use convtune::problem::ConvProblem;
mod common;

use common::{cfg, data, emulate_where_legal, hopper_space, mismatches, planned_if_legal, problem};

/// One consumer warpgroup, two stages, staged epilogue.
const WS: &str =
    "v4:bm=64,bn=64,bk=64,wm=64,wn=64,st=2,va=8,vb=8,vc=8,lds=swz,sk=1,rs=1,mma=wg,red=atomic,ld=ws,pk=1,xf=none";

/// Emulates `c` on an H200-like arch with `sms` SMs, bit-exactly; returns the GEMM grid's x
/// (the blocks of the persistent grid). Legality must agree that it runs.
fn run(p: &ConvProblem, c: &PerfConfig, sms: u32) -> u32 {
    let arch = Arch::SM_90.with_compute_units(sms);
    let r = emulate_where_legal(p, c, arch, 11).unwrap_or_else(|| panic!("{p} {c}: refused"));
    let k = r
        .kernels
        .iter()
        .find(|k| k.name.starts_with("convtune_gemm"))
        .unwrap();
    assert_eq!(k.block[0] % 128, 0, "{p} {c}");
    assert_eq!(k.grid[1..], [1, 1], "{p} {c}");
    k.grid[0]
}

fn with(c: &PerfConfig, f: impl FnOnce(&mut PerfConfig)) -> PerfConfig {
    let mut c = *c;
    f(&mut c);
    c
}

#[test]
fn pk_is_a_v4_field_that_older_strings_leave_off() {
    let c = cfg(WS);
    assert_eq!(c.persistent, Grid::Persistent);
    assert_eq!(c.to_string(), WS);
    let off = with(&c, |c| c.persistent = Grid::PerTile);
    // pk=0 prints as v3 (what every database entry already says) and v3 means pk=0.
    assert_eq!(
        off.to_string(),
        WS.replace("v4:", "v3:").replace(",pk=1,xf=none", "")
    );
    assert_eq!(cfg(&off.to_string()), off);
    assert!("v4:bm=64,bn=64,bk=64,wm=64,wn=64,st=2,va=8,vb=8,vc=8,lds=swz,sk=1,rs=1,mma=wg,red=atomic,ld=ws,pk=2"
        .parse::<PerfConfig>()
        .is_err());
}

/// Short K (one K tile a unit) and many units: the ring position moves by one per unit, so
/// every unit starts at another stage and parity. 8 units over 3 blocks (3, 3, 2), over 1,
/// and over the H200's 132 SMs (fewer units than SMs: one unit a block).
#[test]
fn persistent_fwd_walks_units_unevenly() {
    let p = problem("convbfp16 -n 4 -c 64 -H 8 -W 8 -k 128 -y 1 -x 1 -F 1 --layout NHWC");
    let c = cfg(WS);
    assert_eq!(run(&p, &c, 3), 3);
    assert_eq!(run(&p, &c, 1), 1);
    assert_eq!(run(&p, &c, 132), 8);
    // Direct epilogue, and f16.
    let direct = with(&c, |c| c.vec_c = 1);
    assert_eq!(run(&p, &direct, 3), 3);
    let p16 = problem("convfp16 -n 4 -c 64 -H 8 -W 8 -k 128 -y 1 -x 1 -F 1 --layout NHWC");
    assert_eq!(run(&p16, &c, 5), 5);
}

/// Long K with an odd count per unit (9 K tiles, 2 or 3 stages): the activation through the
/// producer's cp.async (padded 3x3), `wg1` with two consumer warpgroups and the group in
/// flight released across the unit boundary.
#[test]
fn persistent_fwd_long_k_and_wg1() {
    let p = problem("convbfp16 -n 2 -c 64 -H 5 -W 4 -k 128 -y 3 -x 3 -p 1 -q 1 -F 1 --layout NHWC");
    assert_eq!(run(&p, &cfg(WS), 1), 1);
    let wg1 = cfg("v4:bm=128,bn=64,bk=64,wm=64,wn=64,st=3,va=8,vb=8,vc=8,lds=swz,sk=1,rs=1,mma=wg1,red=atomic,ld=ws,pk=1");
    let p = problem("convbfp16 -n 4 -c 64 -H 6 -W 6 -k 128 -y 3 -x 3 -p 1 -q 1 -F 1 --layout NHWC");
    assert_eq!(run(&p, &wg1, 2), 2);
    let raster = with(&wg1, |c| {
        c.block_m = 64;
        c.raster = 2;
        c.mma = MmaPath::Wgmma;
    });
    assert_eq!(run(&p, &raster, 3), 3);
}

/// Stride-1 backward data (1x1, a partial K tile) over 8 units.
#[test]
fn persistent_bwd_data() {
    let p = problem("convbfp16 -n 4 -c 128 -H 8 -W 8 -k 80 -y 1 -x 1 -F 2 --layout NHWC");
    assert_eq!(run(&p, &cfg(WS), 3), 3);
    // Seed 003's shape (stride = filter width: one dense GEMM), small.
    let p =
        problem("convbfp16 -n 2 -c 128 -H 1 -W 32 -k 64 -y 1 -x 2 -u 1 -v 2 -F 2 --layout NHWC");
    assert_eq!(run(&p, &cfg(WS), 3), 3);
}

/// Backward weight with split-K: a unit is (tile, slice), so one output tile's slices are
/// walked by several blocks or by one; the fix-up's last arrival sums them; 6 K tiles in 4
/// slices of 2 leave slice 3 empty (a unit with no K tile: the ring does not move).
#[test]
fn persistent_bwd_weight_split_k() {
    let p = problem("convbfp16 -n 2 -c 64 -H 12 -W 16 -k 64 -y 1 -x 1 -F 4 --layout NHWC");
    for red in [Reduction::Fixup, Reduction::Atomic] {
        let c = with(&cfg(WS), |c| {
            c.split_k = 4;
            c.red = red;
        });
        assert_eq!(run(&p, &c, 2), 2, "{c}");
        assert_eq!(run(&p, &c, 1), 1, "{c}");
        assert_eq!(run(&p, &c, 132), 4, "{c}");
    }
    // 5 K tiles in 4 slices of 2: slice 3 is [6, 5), past the end (the unit adds no ring
    // position either way).
    let past = problem("convbfp16 -n 2 -c 64 -H 10 -W 16 -k 64 -y 1 -x 1 -F 4 --layout NHWC");
    for red in [Reduction::Fixup, Reduction::Atomic] {
        let c = with(&cfg(WS), |c| {
            c.split_k = 4;
            c.red = red;
        });
        assert_eq!(run(&past, &c, 3), 3, "{c}");
    }
    // Two output tiles × 3 slices = 6 units over 4 blocks, wg1.
    let p = problem("convbfp16 -n 2 -c 64 -H 12 -W 16 -k 128 -y 1 -x 1 -F 4 --layout NHWC");
    let c = with(&cfg(WS), |c| {
        c.split_k = 3;
        c.red = Reduction::Fixup;
        c.stages = 3;
        c.mma = MmaPath::WgmmaInFlight;
    });
    assert_eq!(run(&p, &c, 4), 4);
}

/// A ring counter restarted at every unit (each unit's K tiles from stage 0, parity 0, as a
/// one-unit block does) waits on the wrong phases once a unit boundary falls mid-ring: the
/// emulator must report it (stale stages read, arrivals past a count, or a deadlock).
#[test]
fn a_ring_reset_per_unit_is_caught() {
    for (line, c, sms) in [
        (
            "convbfp16 -n 4 -c 64 -H 8 -W 8 -k 128 -y 1 -x 1 -F 1 --layout NHWC",
            cfg(WS),
            1,
        ),
        (
            "convbfp16 -n 2 -c 64 -H 5 -W 4 -k 128 -y 3 -x 3 -p 1 -q 1 -F 1 --layout NHWC",
            cfg(WS),
            1,
        ),
    ] {
        let p = problem(line);
        let like = Target::of(Arch::SM_90.with_compute_units(sms));
        let mut t = data(&p, 3);
        let want = convtune::reference::direct_conv(&p, &t[0], &t[1], &t[2]);
        let rep = with_ring_reset_per_unit(|| emu::emulate_conv(&lower(&p), &c, like, &mut t))
            .unwrap_or_else(|e| panic!("{p} {c}: {e}"));
        let w = p.direction().written() as usize;
        let bad = mismatches(&p, &t[w], &want).len();
        eprintln!(
            "ring reset per unit, {p}: {} violations {:?}, {bad} wrong elements",
            rep.violations,
            rep.messages.first()
        );
        assert!(
            rep.violations > 0 || bad > 0,
            "{p} {c}: the wrong ring went unnoticed"
        );
        // The right one passes on the same problem.
        assert_eq!(run(&p, &c, sms), sms);
    }
}

#[test]
fn what_pk_cannot_do_is_refused_with_a_reason() {
    let p = problem("convbfp16 -n 2 -c 64 -H 5 -W 5 -k 64 -y 1 -x 1 -F 1 --layout NHWC");
    let l = lower(&p);
    let base = cfg(WS);
    let refused = |c: &PerfConfig| {
        let e = legality::check(&l, c, &Arch::SM_90)
            .unwrap_err()
            .to_string();
        let plan = compile_conv(&l, c, Target::of(Arch::SM_90))
            .map(|_| ())
            .unwrap_err()
            .to_string();
        assert!(plan.contains("pk=1"), "{plan}");
        e
    };
    for ld in [LoadPath::Tma, LoadPath::Cp] {
        let e = refused(&with(&base, |c| c.ld = ld));
        assert!(e.contains("pk=1") && e.contains("ld=ws"), "{e}");
    }
    // The persistent kernel's staged C lives after the pipeline: 4 stages of 128×256 tiles
    // (192 KiB) leave room for passes of a few lines.
    let big = problem("convbfp16 -n 4 -c 256 -H 8 -W 8 -k 256 -y 1 -x 1 -F 1 --layout NHWC");
    let c = cfg("v4:bm=128,bn=256,bk=64,wm=64,wn=256,st=4,va=8,vb=8,vc=8,lds=swz,sk=1,rs=1,mma=wg,red=atomic,ld=ws,pk=1");
    assert!(legality::check(&lower(&big), &c, &Arch::SM_90).is_ok());
    let compiled = compile_conv(&lower(&big), &c, Target::of(Arch::SM_90)).unwrap();
    let k = compiled.kernels.last().unwrap();
    assert!(k.shared_bytes <= Arch::SM_90.smem_per_block, "{k:?}");
    assert!(k.shared_bytes > 4 * (128 + 256) * 64 * 2 + 64, "{k:?}");
}

/// The persistent kernel for the H200: the ws kernel's instructions, a grid of
/// min(units, 132), and the knob in the Hopper search space.
#[test]
fn persistent_ptx_and_grid_for_the_h200() {
    let p = problem(
        "convbfp16 -n 16 -c 2048 -H 1 -W 512 -k 2048 -y 1 -x 2 -p 0 -q 0 -u 1 -v 2 -F 2 --layout NHWC",
    );
    let c = cfg("v4:bm=128,bn=256,bk=64,wm=64,wn=256,st=4,va=8,vb=8,vc=8,lds=swz,sk=1,rs=8,mma=wg1,red=atomic,ld=ws,pk=1");
    let l = lower(&p);
    legality::check(&l, &c, &Arch::SM_90).unwrap();
    let compiled = compile_conv(&l, &c, Target::of(Arch::SM_90)).unwrap();
    for k in compiled
        .kernels
        .iter()
        .filter(|k| k.name.starts_with("convtune_gemm"))
    {
        assert_eq!(k.grid, [132, 1, 1], "{k:?}");
        assert_eq!(k.block[0], 256 + 128);
    }
    let ptx = compiled.module.ptx().unwrap();
    let ptx = ptx.split_whitespace().collect::<Vec<_>>().join(" ");
    for needle in [
        "setmaxnreg.dec.sync.aligned.u32",
        "mbarrier.try_wait.parity.shared::cta.b64",
        "barrier.sync 1, 256",
        "wgmma.mma_async",
    ] {
        assert!(ptx.contains(needle), "no {needle:?}");
    }
    let space = hopper_space();
    assert!(space.params.persistent.contains(&Grid::Persistent));
    assert!(space.contains(&c));
}

/// Legality and the planner agree on `pk=1` over the Hopper space: every legal `pk=1` config
/// plans, with a grid of min(units, 132) blocks (stream-K: its schedule's); each legal `ld=ws`
/// config that the `pk` rule
/// refuses once persistent is refused by the planner too.
#[test]
fn legality_and_the_planner_agree_on_pk_over_the_hopper_space() {
    let space = hopper_space();
    let (mut planned, mut refused) = (0, 0);
    for line in [
        "convbfp16 -n 32 -c 1024 -H 14 -W 14 -k 256 -y 1 -x 1 -F 1 --layout NHWC",
        "convbfp16 -n 16 -c 256 -H 14 -W 14 -k 256 -y 3 -x 3 -p 1 -q 1 -F 4 --layout NHWC",
        "convbfp16 -n 8 -c 128 -H 28 -W 28 -k 256 -y 1 -x 1 -F 2 --layout NHWC",
    ] {
        let p = problem(line);
        let l = lower(&p);
        let e = convtune::space::enumerate_legal(&p, &Arch::SM_90, &space);
        for c in e.legal.iter().filter(|c| c.ld == LoadPath::Ws) {
            let pk = with(c, |c| c.persistent = Grid::Persistent);
            match planned_if_legal(&l, &pk) {
                Some(kernels) => {
                    let g = &l.gemms[0];
                    let units = g.g_len()
                        * pk.split_k
                        * g.m_len().div_ceil(pk.block_m)
                        * g.n_len().div_ceil(pk.block_n);
                    let k = kernels
                        .iter()
                        .find(|k| k.name.starts_with("convtune_gemm"))
                        .unwrap();
                    // Stream-K's grid is its schedule's (at most one block per SM).
                    let k_tiles = g.k_len().div_ceil(pk.block_k);
                    let grid = match pk.stream_k(units, k_tiles, 132) {
                        Some(s) => s.blocks,
                        None => units.min(132),
                    };
                    assert_eq!(k.grid, [grid, 1, 1], "{p} {pk}");
                    assert!(k.shared_bytes <= Arch::SM_90.smem_per_block, "{p} {pk}");
                    planned += 1;
                }
                None => refused += 1,
            }
        }
    }
    // With bk = 64 (128-byte lines) a pipeline that fits leaves room for a staged line, so
    // the `pk` rule's shared-memory refusal does not occur in this space.
    assert!(planned > 1000, "{planned} planned, {refused} refused");
}
