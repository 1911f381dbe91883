//! Strided backward data in one launch (every phase of the decomposition and the zeroing of
//! uncovered pixels in one grid) and grouped convolutions, on the CPU emulator: bit-exact
//! against the f64 direct convolution (the data are multiples of 1/8), no bad access, and the
//! launch count the plan promises.

use convtune::arch::Arch;
use convtune::codegen::emu::EmuReport;
use convtune::codegen::{launches, Target};
use convtune::config::PerfConfig;
use convtune::lowering::lower;
use convtune::problem::ConvProblem;
mod common;

use common::{cfg, emulate_exact, problem};

const H200: Target = Target::of(Arch::SM_90);
const MI200: Target = Target::of(Arch::GFX90A);

/// Emulates one candidate and demands bit-exact agreement and no bad access.
fn check(p: &ConvProblem, c: &PerfConfig, like: Target) -> EmuReport {
    emulate_exact(p, c, like, 11).unwrap_or_else(|e| panic!("{p} {c} {like}: {e}"))
}

/// Strided bwd-data shapes: several phases with and without uncovered pixels.
const STRIDED: [&str; 7] = [
    // Stride 2, 3×3: four phases (K 4:2:2:1), every pixel covered.
    "-n 2 -c 16 -H 9 -W 8 -k 16 -y 3 -x 3 -p 1 -q 1 -u 2 -v 2",
    // Stride 3, 5×5: four sub-GEMMs (class runs {0, 1} and {2} a dimension; K 4:2:2:1).
    "-n 1 -c 8 -H 11 -W 10 -k 8 -y 5 -x 5 -p 2 -q 2 -u 3 -v 3",
    // Dilation 2 at stride 2: one residue class, every other pixel uncovered (zeroing blocks).
    "-n 1 -c 8 -H 9 -W 9 -k 8 -y 3 -x 3 -p 2 -q 2 -u 2 -v 2 -l 2 -j 2",
    // 1×1 at stride 2: one GEMM, three pixels in four zeroed by the same launch.
    "-n 2 -c 8 -H 7 -W 6 -k 16 -y 1 -x 1 -u 2 -v 2",
    // Mixed: stride 2 × 3, filter 3 × 2, dilation 1 × 2, padding on one side only.
    "-n 1 -c 8 -H 10 -W 7 -k 8 -y 3 -x 2 -p 1 -q 0 -u 2 -v 3 -l 1 -j 2",
    // Groups with strided phases.
    "-n 1 -c 16 -H 7 -W 7 -k 16 -y 3 -x 3 -p 1 -q 1 -u 2 -v 2 -g 2",
    // 5×5 stride 2 pad 2: the slices start one column in (the first writes only before the
    // edge) and, along H, end one early (the last writes only past it).
    "-n 1 -c 8 -H 12 -W 11 -k 8 -y 5 -x 5 -p 2 -q 2 -u 2 -v 2",
];

const CONFIGS: [&str; 3] = [
    "v1:bm=32,bn=32,bk=16,wm=16,wn=16,st=2,va=1,vb=1,vc=1,lds=pad,sk=1,rs=1",
    "v1:bm=16,bn=64,bk=16,wm=16,wn=32,st=3,va=1,vb=1,vc=1,lds=swz,sk=1,rs=2",
    "v1:bm=64,bn=32,bk=32,wm=32,wn=16,st=1,va=1,vb=1,vc=1,lds=pad,sk=1,rs=1",
];

#[test]
fn strided_bwd_data_is_one_launch_and_exact() {
    let mut n = 0;
    for (si, shape) in STRIDED.iter().enumerate() {
        for (di, (dt, layout)) in [
            ("conv", "NCHW"),
            ("conv", "NHWC"),
            ("convbfp16", "NHWC"),
            ("convfp16", "NCHW"),
        ]
        .iter()
        .enumerate()
        {
            let p = problem(&format!("{dt} {shape} -F 2 --layout {layout}"));
            let l = lower(&p);
            assert!(l.gemms.len() > 1 || l.zero_init, "{p}: not a strided case");
            let c = cfg(CONFIGS[(si + di) % CONFIGS.len()]);
            for like in [H200, MI200] {
                let rep = check(&p, &c, like);
                assert_eq!(rep.kernels.len(), 1, "{p} {c}: {:?}", rep.kernels);
                assert_eq!(rep.kernels[0].name, "convtune_phases");
                n += 1;
            }
        }
    }
    println!("{n} one-launch strided bwd-data candidates agree bit-exactly");
}

/// Vector loads and stores (NHWC, channels a multiple of 8) through the phases, with the
/// staged epilogue.
#[test]
fn strided_bwd_data_vectors() {
    for shape in [
        "-n 2 -c 16 -H 9 -W 8 -k 16 -y 3 -x 3 -p 1 -q 1 -u 2 -v 2",
        "-n 2 -c 16 -H 7 -W 6 -k 16 -y 1 -x 1 -u 2 -v 2",
    ] {
        for (dt, v) in [("convbfp16", 8), ("conv", 4)] {
            let p = problem(&format!("{dt} {shape} -F 2 --layout NHWC"));
            let c = cfg(&format!(
                "v1:bm=32,bn=32,bk=32,wm=16,wn=16,st=3,va={v},vb={v},vc={v},lds=swz,sk=1,rs=1"
            ));
            check(&p, &c, H200);
        }
    }
}

#[test]
fn split_k_keeps_its_launches() {
    // Atomics need the tensor cleared before any GEMM adds: zero, then one launch per phase.
    let p = problem("conv -n 1 -c 8 -H 9 -W 8 -k 16 -y 3 -x 3 -p 1 -q 1 -u 2 -v 2 -F 2");
    let c = cfg("v1:bm=32,bn=32,bk=16,wm=16,wn=16,st=2,va=1,vb=1,vc=1,lds=pad,sk=2,rs=1");
    let rep = check(&p, &c, H200);
    assert_eq!(rep.kernels.len(), 1 + lower(&p).gemms.len());
}

#[test]
fn one_launch_grid_is_the_sum_of_the_phases() {
    // 3×3 at stride 2: four phases, no uncovered pixel: the grid is exactly their tiles.
    let p = problem(
        "convbfp16 -n 4 -c 64 -H 28 -W 28 -k 64 -y 3 -x 3 -p 1 -q 1 -u 2 -v 2 -F 2 --layout NHWC",
    );
    let l = lower(&p);
    assert_eq!(l.gemms.len(), 4);
    let c = cfg("v1:bm=64,bn=64,bk=32,wm=32,wn=32,st=3,va=8,vb=8,vc=8,lds=swz,sk=1,rs=1");
    let planned = launches(&l, &c, H200).unwrap();
    let kernels = planned.kernels;
    assert_eq!((kernels.len(), planned.workspace_bytes), (1, 0));
    let tiles: u64 = l
        .gemms
        .iter()
        .map(|g| (g.m_len().div_ceil(64) * g.n_len().div_ceil(64)) as u64)
        .sum();
    assert_eq!(kernels[0].grid, [tiles as u32, 1, 1]);
}

/// Grouped convolutions with several groups a block tile (8 channels a group, depthwise): every
/// direction, both layouts, scalar and vector loads.
#[test]
fn packed_groups_are_exact() {
    let mut n = 0;
    for shape in [
        "-n 2 -c 32 -H 6 -W 5 -k 32 -y 3 -x 3 -p 1 -q 1 -g 4",
        "-n 1 -c 32 -H 7 -W 6 -k 32 -y 3 -x 3 -p 1 -q 1 -u 2 -v 2 -g 32",
    ] {
        for dir in [1, 2, 4] {
            for (dt, layout, v) in [
                ("conv", "NCHW", 1),
                ("convfp16", "NHWC", 8),
                ("convbfp16", "NHWC", 1),
                ("conv", "NHWC", 4),
            ] {
                let p = problem(&format!("{dt} {shape} -F {dir} --layout {layout}"));
                let l = lower(&p);
                assert!(l.gemms[0].g_len() < p.sizes().groups, "{p}: not packed");
                for (i, c) in CONFIGS.iter().enumerate() {
                    let c = cfg(c);
                    let c = PerfConfig {
                        vec_a: if i == 0 { v } else { 1 },
                        vec_b: v,
                        ..c
                    };
                    // Vectors the packed operands cannot take are legality's to refuse.
                    match launches(&l, &c, H200) {
                        Ok(_) => {
                            check(&p, &c, H200);
                            n += 1;
                        }
                        Err(e) => println!("{p} {c}: {e}"),
                    }
                }
            }
        }
    }
    assert!(n >= 40, "{n} candidates ran");
    println!("{n} packed-group candidates agree bit-exactly");
}

/// The phases of a one-launch kernel share one body whose lengths and offsets are picked at
/// run time (issue 16): a four-phase kernel is about the size of a one-phase one, not four
/// times it. Sizes, not times: the assembler's time follows the code it is given.
#[test]
fn phases_share_one_body() {
    use convtune::codegen::compile_conv;
    let c = cfg("v1:bm=32,bn=64,bk=32,wm=16,wn=64,st=4,va=1,vb=1,vc=1,lds=swz,sk=1,rs=1");
    let ptx = |line: &str| {
        let p = problem(line);
        let l = lower(&p);
        let k = compile_conv(&l, &c, H200).unwrap_or_else(|e| panic!("{p}: {e}"));
        (l.gemms.len(), k.module.ptx().unwrap().len())
    };
    let (phases, four) =
        ptx("conv -F 2 -n 16 -c 64 -H 48 -W 48 -k 64 -y 5 -x 5 -p 2 -q 2 -u 3 -v 3");
    let (one, single) =
        ptx("conv -F 2 -n 16 -c 64 -H 16 -W 16 -k 64 -y 5 -x 5 -p 2 -q 2 -u 1 -v 1");
    assert_eq!((phases, one), (4, 1));
    assert!(
        (four as f64) < 1.6 * single as f64,
        "4 phases: {four} bytes of PTX, 1 phase: {single}"
    );
}

/// A shared body that skips one phase's blocks (or the zeroing) leaves NaN-poisoned elements
/// the emulator's comparison sees, on both targets.
#[test]
fn a_skipped_phase_of_a_shared_body_is_caught() {
    use convtune::codegen::emu;
    use convtune::codegen::{with_phased_fault, PhasedFault};
    let four = problem("conv -n 2 -c 16 -H 9 -W 8 -k 16 -y 3 -x 3 -p 1 -q 1 -u 2 -v 2 -F 2");
    let zeroed =
        problem("conv -n 1 -c 8 -H 9 -W 9 -k 8 -y 3 -x 3 -p 2 -q 2 -u 2 -v 2 -l 2 -j 2 -F 2");
    let c = cfg(CONFIGS[0]);
    let mut cases: Vec<_> = (0..4).map(|i| (&four, PhasedFault::SkipPhase(i))).collect();
    cases.push((&zeroed, PhasedFault::SkipZero));
    for like in [H200, MI200] {
        for &(p, fault) in &cases {
            let mut t = common::data(p, 5);
            let want = convtune::reference::direct_conv(p, &t[0], &t[1], &t[2]);
            with_phased_fault(fault, || emu::emulate_conv(&lower(p), &c, like, &mut t))
                .unwrap_or_else(|e| panic!("{p} {c}: {e}"));
            let w = p.direction().written() as usize;
            let bad = common::mismatches(p, &t[w], &want).len();
            assert!(bad > 0, "{p} {c} {like}: {fault:?} went unnoticed");
        }
    }
}

/// The shipped configs of the problems whose slice the tighter bounds shrank (session 30:
/// `scripts/session30/slice-problems.txt`), on the same shapes with one or two images and
/// fewer channels where the config allows: bit-exact in the emulator on an H200-like arch.
#[test]
fn shipped_configs_of_the_shrunken_slices_are_exact() {
    let shipped = include_str!("../tuned-db/sm_90.toml");
    let mut ran = 0;
    for line in include_str!("../scripts/session30/slice-problems.txt").lines() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let key = format!("problem = \"{line}\"\nconfig = \"");
        let at = shipped
            .find(&key)
            .unwrap_or_else(|| panic!("{line}: not shipped"))
            + key.len();
        let c = cfg(&shipped[at..at + shipped[at..].find('"').unwrap()]);
        // One image (two for a single-row image); the channels as shipped.
        let big = problem(line);
        let images = if big.sizes().h == 1 { "-n 2" } else { "-n 1" };
        let small = line.replacen(&format!("-n {}", big.sizes().n), images, 1);
        let p = problem(&small);
        // Shrunk, a config can fall foul of a rule about the problem's size (stream-K's wave
        // fill); the kernel is still the shipped one, so only codegen's own refusals skip it.
        let like = Target::of(Arch::SM_90.with_compute_units(4));
        match emulate_exact(&p, &c, like, 5) {
            Ok(_) => ran += 1,
            Err(convtune::codegen::CodegenError::Config { reason, .. }) => {
                eprintln!("skipped (codegen refuses it shrunk): {p} {c}: {reason}")
            }
            Err(e) => panic!("{p} {c}: {e}"),
        }
    }
    eprintln!("{ran} of 8 shipped configs emulated bit-exactly");
    assert_eq!(ran, 8, "of the 8 shipped configs");
}
