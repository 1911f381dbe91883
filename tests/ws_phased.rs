//! Strided backward data in one launch on the warp-specialised persistent walk (`ld=ws|wspp`,
//! `pk=1`) on the CPU emulator: every phase's tiles are work units of one walk (longest K
//! first), the producer's ring running on across units and phases, each phase's tensor maps
//! parameters of their own, the uncovered pixels zeroed by the consumers of the same launch.
//! Bit-exact against the f64 direct convolution on random strided problems (strides 2 and 3,
//! filters 1–5, with and without uncovered pixels, f16 and bf16, several tile shapes, few SMs
//! so that one block's walk crosses phases); a kernel that leaves out a phase or the zeroing
//! must fail.

use convtune::arch::Arch;
use convtune::codegen::{emu, launches, with_phased_fault, PhasedFault, Target};
use convtune::config::PerfConfig;
use convtune::lowering::lower;
use convtune::problem::ConvProblem;
use rand::{rngs::StdRng, Rng, SeedableRng};
mod common;

use common::{cfg, data, emulate_where_legal, mismatches, problem};

/// One consumer warpgroup, two stages, staged epilogue.
const WS: &str =
    "v4:bm=64,bn=64,bk=64,wm=64,wn=64,st=2,va=8,vb=8,vc=8,lds=swz,sk=1,rs=1,mma=wg,red=atomic,ld=ws,pk=1";
/// Two consumer warpgroups on one tile, `wg1` with three stages, direct epilogue.
const WS2: &str =
    "v4:bm=128,bn=64,bk=64,wm=64,wn=64,st=3,va=8,vb=8,vc=1,lds=swz,sk=1,rs=2,mma=wg1,red=atomic,ld=ws,pk=1";
/// Ping-pong consumers, one tile each.
const WSPP: &str =
    "v4:bm=64,bn=64,bk=64,wm=64,wn=64,st=2,va=8,vb=8,vc=8,lds=swz,sk=1,rs=1,mma=wg,red=atomic,ld=wspp,pk=1";
/// Ping-pong with wider tiles and four stages.
const WSPP2: &str =
    "v4:bm=64,bn=128,bk=64,wm=64,wn=128,st=4,va=8,vb=8,vc=8,lds=swz,sk=1,rs=1,mma=wg1,red=atomic,ld=wspp,pk=1";

const CONFIGS: [&str; 4] = [WS, WS2, WSPP, WSPP2];

/// Emulates `c` on an H200-like arch with `sms` SMs bit-exactly (legality agreeing), and
/// checks the launch: one kernel, the persistent grid over every phase's units. `None` when
/// both refuse it.
fn run(p: &ConvProblem, c: &PerfConfig, sms: u32, seed: u64) -> Option<u32> {
    let arch = Arch::SM_90.with_compute_units(sms);
    let r = emulate_where_legal(p, c, arch, seed)?;
    assert_eq!(r.kernels.len(), 1, "{p} {c}: {:?}", r.kernels);
    let k = &r.kernels[0];
    assert_eq!(k.name, "convtune_phases", "{p} {c}");
    assert_eq!(k.block[0] % 128, 0, "{p} {c}");
    assert!(
        k.grid[0] <= sms * 2 && k.grid[1..] == [1, 1],
        "{p} {c}: {:?}",
        k.grid
    );
    Some(k.grid[0])
}

/// Four phases (K 4:2:2:1 filter taps), every pixel covered, one block (its walk crosses
/// every phase: the ring's stage and parity carry from a long-K phase into the short ones)
/// and a few; both dtypes; every config.
#[test]
fn four_phases_on_one_block_and_a_few() {
    for (i, c) in CONFIGS.iter().enumerate() {
        let dt = ["convbfp16", "convfp16"][i % 2];
        let p = problem(&format!(
            "{dt} -n 2 -c 64 -H 9 -W 8 -k 64 -y 3 -x 3 -p 1 -q 1 -u 2 -v 2 -F 2 --layout NHWC"
        ));
        let c = cfg(c);
        assert_eq!(run(&p, &c, 1, 5), Some(1), "{c}");
        assert_eq!(run(&p, &c, 3, 6), Some(3), "{c}");
    }
}

/// Four sub-GEMMs of class runs (5×5 at stride 3: runs {0, 1} and {2} a dimension) and phases with empty filter slices whose pixels the
/// zeroing writes (2×2 at stride 3; 1×1 at stride 2: one GEMM and the zeroing).
#[test]
fn class_runs_and_uncovered_pixels() {
    let shapes = [
        (
            "-n 1 -c 64 -H 11 -W 10 -k 64 -y 5 -x 5 -p 2 -q 2 -u 3 -v 3",
            false,
        ),
        ("-n 2 -c 64 -H 8 -W 7 -k 64 -y 2 -x 2 -u 3 -v 3", true),
        ("-n 2 -c 64 -H 7 -W 6 -k 64 -y 1 -x 1 -u 2 -v 2", true),
    ];
    for (si, (shape, uncovered)) in shapes.iter().enumerate() {
        let p = problem(&format!("convbfp16 {shape} -F 2 --layout NHWC"));
        assert_eq!(lower(&p).zero_init, *uncovered, "{p}");
        for (ci, c) in [WS, WSPP].iter().enumerate() {
            let c = cfg(c);
            let sms = [1, 2, 4][(si + ci) % 3];
            assert!(run(&p, &c, sms, 7).is_some(), "{p} {c}: refused");
        }
    }
}

/// Random strided problems: strides 2–3, filters 1–5, padding and dilation, with and without
/// uncovered pixels, f16 and bf16, every config, 1–4 SMs; each one that legality admits must
/// run bit-exactly in one launch, and enough of them must be admitted.
#[test]
fn random_strided_bwd_data_bit_exact() {
    let mut rng = StdRng::seed_from_u64(9);
    let (mut ran, mut uncovered) = (0, 0);
    for case in 0..20 {
        let (u, v) = (rng.gen_range(2..=3), rng.gen_range(2..=3));
        let (y, x) = (rng.gen_range(1..=5u32), rng.gen_range(1..=5u32));
        let (py, px) = (rng.gen_range(0..=y / 2), rng.gen_range(0..=x / 2));
        let dil = if rng.gen_bool(0.2) { 2 } else { 1 };
        let (h, w) = (rng.gen_range(6..=10), rng.gen_range(6..=10));
        let n = rng.gen_range(1..=2);
        let k = [16, 64, 64][rng.gen_range(0..3)];
        let dt = ["convbfp16", "convfp16"][case % 2];
        let line = format!(
            "{dt} -n {n} -c 64 -H {h} -W {w} -k {k} -y {y} -x {x} -p {py} -q {px} -u {u} -v {v} \
             -l {dil} -j {dil} -F 2 --layout NHWC"
        );
        // A dilated filter larger than the padded image has no output.
        let Ok(p) = line.parse::<ConvProblem>() else {
            continue;
        };
        let l = lower(&p);
        if l.gemms.len() < 2 && !l.zero_init {
            continue;
        }
        let c = cfg(CONFIGS[case % CONFIGS.len()]);
        let sms = rng.gen_range(1..=4);
        if run(&p, &c, sms, case as u64).is_some() {
            ran += 1;
            uncovered += l.zero_init as u32;
        }
    }
    assert!(
        ran >= 10 && uncovered >= 2,
        "{ran} ran, {uncovered} with zeroing"
    );
}

/// The same problem in several launches (`pk=0` keeps a launch per phase) and in one agree,
/// and the one launch's parameters hold every phase's tensor maps.
#[test]
fn one_launch_takes_every_phase_s_tensor_maps() {
    let p = problem(
        "convbfp16 -n 2 -c 64 -H 9 -W 8 -k 64 -y 3 -x 3 -p 1 -q 1 -u 2 -v 2 -F 2 --layout NHWC",
    );
    let l = lower(&p);
    let c = cfg(WS);
    let one = launches(&l, &c, Target::of(Arch::SM_90)).unwrap().kernels;
    assert_eq!(one.len(), 1);
    let per_tile = PerfConfig {
        persistent: convtune::config::Grid::PerTile,
        ..c
    };
    let many = launches(&l, &per_tile, Target::of(Arch::SM_90))
        .unwrap()
        .kernels;
    assert_eq!(many.len(), l.gemms.len());
    let maps = |k: &convtune::codegen::Kernel| {
        k.args
            .iter()
            .filter(|a| matches!(a.kind, convtune::abi::ArgKind::TensorMap(_)))
            .count()
    };
    let total: usize = many.iter().map(maps).sum();
    assert!(total > 0, "no phase loads through TMA");
    assert_eq!(maps(&one[0]), total);
}

/// A kernel that skips one phase, or the zeroing, leaves NaN-poisoned elements: the
/// emulator's comparison must see them (and the whole kernel passes on the same problem).
#[test]
fn a_skipped_phase_or_zeroing_is_caught() {
    let four = problem(
        "convbfp16 -n 2 -c 64 -H 9 -W 8 -k 64 -y 3 -x 3 -p 1 -q 1 -u 2 -v 2 -F 2 --layout NHWC",
    );
    let zeroed =
        problem("convbfp16 -n 2 -c 64 -H 8 -W 7 -k 64 -y 2 -x 2 -u 3 -v 3 -F 2 --layout NHWC");
    let mut cases = vec![];
    for c in [WS, WSPP] {
        for i in 0..4 {
            cases.push((&four, c, PhasedFault::SkipPhase(i)));
        }
        cases.push((&zeroed, c, PhasedFault::SkipZero));
        cases.push((&zeroed, c, PhasedFault::SkipPhase(0)));
    }
    for (p, c, fault) in cases {
        let c = cfg(c);
        let like = Target::of(Arch::SM_90.with_compute_units(2));
        let mut t = data(p, 3);
        let want = convtune::reference::direct_conv(p, &t[0], &t[1], &t[2]);
        let rep = with_phased_fault(fault, || emu::emulate_conv(&lower(p), &c, like, &mut t))
            .unwrap_or_else(|e| panic!("{p} {c}: {e}"));
        let w = p.direction().written() as usize;
        let bad = mismatches(p, &t[w], &want).len();
        eprintln!(
            "{fault:?}, {c}: {} violations {:?}, {bad} wrong elements",
            rep.violations,
            rep.messages.first()
        );
        // Poisoned elements left unwritten; with ping-pong consumers a skipped unit also
        // leaves the other consumer waiting on the order barrier (a deadlock).
        assert!(
            bad > 0 && (rep.violations == 0 || c.ld.ping_pong()),
            "{p} {c}: {fault:?} went unnoticed"
        );
        assert!(run(p, &c, 2, 3).is_some());
    }
}

/// The persistent walk's consumers share one body too (issue 16): their constants are picked
/// by the unit's phase, and only the producer keeps a branch per phase (its maps, im2col taps
/// and copy addresses with the phase's constants), so a four-phase kernel is 1.6–2.6× its
/// one-phase twin (it was 3.8–6.7×).
#[test]
fn the_walks_consumers_share_one_body() {
    let ptx = |line: &str, c: &str| {
        let p = problem(line);
        let l = lower(&p);
        let k = convtune::codegen::compile_conv(&l, &cfg(c), Target::of(Arch::SM_90))
            .unwrap_or_else(|e| panic!("{p}: {e}"));
        (l.gemms.len(), k.module.ptx().unwrap().len())
    };
    for c in CONFIGS {
        let (phases, four) = ptx(
            "convfp16 -n 32 -c 96 -H 56 -W 56 -k 128 -y 5 -x 5 -p 2 -q 2 -u 2 -v 2 -F 2 \
             --layout NHWC",
            c,
        );
        let (one, single) = ptx(
            "convfp16 -n 32 -c 96 -H 28 -W 28 -k 128 -y 3 -x 3 -p 1 -q 1 -F 2 --layout NHWC",
            c,
        );
        assert_eq!((phases, one), (4, 1));
        assert!(
            (four as f64) < 3.0 * single as f64,
            "{c}: 4 phases {four} bytes of PTX, 1 phase {single}"
        );
    }
}
