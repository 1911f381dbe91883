//! Code generation: every kernel is run on the CPU emulator and compared with the f64 direct
//! convolution (bit-exact: the data are multiples of 1/8, so every sum is exact in f32), and
//! compiled for NVIDIA and AMD to check that LLVM accepts it and emits what was meant.

use convtune::arch::Arch;
use convtune::codegen::emu::{emulate_faulting, emulate_reference};
use convtune::codegen::{compile_conv, compile_reference, Target};
use convtune::config::PerfConfig;
use convtune::lowering::lower;
use convtune::problem::{ConvProblem, DType};
use convtune::reference::direct_conv;
mod common;

use common::{cfg, data, emulate_exact, mismatches, problem};
use rand::{rngs::StdRng, Rng, SeedableRng};

const H200: Target = Target::of(Arch::SM_90);
const MI200: Target = Target::of(Arch::GFX90A);

/// Emulates one candidate on `like` and demands bit-exact agreement and no bad access.
fn check(p: &ConvProblem, c: &PerfConfig, like: Target) {
    emulate_exact(p, c, like, 7).unwrap_or_else(|e| panic!("{p} {c} {like}: {e}"));
}

const BASIC: &str = "v1:bm=64,bn=64,bk=32,wm=32,wn=32,st=2,va=1,vb=1,vc=1,lds=pad,sk=1,rs=1";

#[test]
fn emulated_basic_fwd_f32() {
    check(
        &problem("conv -n 1 -c 8 -H 6 -W 5 -k 12 -y 3 -x 3 -p 1 -q 1 -F 1"),
        &cfg(BASIC),
        H200,
    );
}

#[test]
fn emulated_basic_fwd_bf16() {
    check(
        &problem("convbfp16 -n 1 -c 8 -H 6 -W 5 -k 12 -y 3 -x 3 -p 1 -q 1 -F 1"),
        &cfg(BASIC),
        H200,
    );
}

/// Small problems that exercise every index path: padding, stride, dilation, groups, odd
/// sizes, stride > filter (zero-init), 1x1.
const SHAPES: [&str; 6] = [
    "-n 2 -c 8 -H 6 -W 5 -k 12 -y 3 -x 3 -p 1 -q 1",
    "-n 1 -c 8 -H 9 -W 7 -k 8 -y 3 -x 2 -p 2 -q 1 -u 2 -v 2 -l 2 -j 1 -g 2",
    "-n 2 -c 16 -H 5 -W 6 -k 16 -y 1 -x 1",
    "-n 1 -c 8 -H 7 -W 5 -k 8 -y 2 -x 1 -u 3 -v 1",
    "-n 1 -c 24 -H 4 -W 9 -k 8 -y 1 -x 3 -q 1 -v 2",
    "-n 3 -c 8 -H 3 -W 3 -k 40 -y 3 -x 3 -p 1 -q 1 -u 2 -v 2",
];

const CONFIGS: [&str; 7] = [
    BASIC,
    // 16-wide block tiles (grouped convolutions with few channels per group).
    "v1:bm=16,bn=64,bk=16,wm=16,wn=32,st=3,va=1,vb=1,vc=1,lds=swz,sk=1,rs=1",
    "v1:bm=64,bn=16,bk=32,wm=32,wn=16,st=2,va=1,vb=1,vc=1,lds=pad,sk=2,rs=1",
    "v1:bm=32,bn=64,bk=16,wm=16,wn=32,st=1,va=1,vb=1,vc=1,lds=swz,sk=1,rs=1",
    "v1:bm=64,bn=32,bk=32,wm=32,wn=16,st=3,va=1,vb=1,vc=1,lds=swz,sk=1,rs=2",
    "v1:bm=32,bn=32,bk=16,wm=32,wn=32,st=2,va=1,vb=1,vc=1,lds=pad,sk=3,rs=1",
    "v1:bm=64,bn=64,bk=64,wm=64,wn=32,st=4,va=1,vb=1,vc=1,lds=pad,sk=1,rs=3",
];

const AMD_CONFIGS: [&str; 4] = [
    BASIC,
    "v1:bm=32,bn=64,bk=16,wm=32,wn=32,st=1,va=1,vb=1,vc=1,lds=swz,sk=2,rs=1",
    "v1:bm=64,bn=32,bk=32,wm=32,wn=32,st=3,va=1,vb=1,vc=1,lds=pad,sk=1,rs=2",
    // 16x16 MFMA shapes.
    "v1:bm=32,bn=64,bk=16,wm=16,wn=32,st=2,va=1,vb=1,vc=1,lds=swz,sk=1,rs=1",
];

fn sweep(like: Target, configs: &[&str], dtypes: &[&str]) {
    let mut n = 0;
    for (si, shape) in SHAPES.iter().enumerate() {
        for dir in [1, 2, 4] {
            for (di, dt) in dtypes.iter().enumerate() {
                for layout in ["NCHW", "NHWC"] {
                    let p = problem(&format!("{dt} {shape} -F {dir} --layout {layout}"));
                    // Rotate configs so every config meets every direction and dtype.
                    let c = configs[(si + dir as usize + di + layout.len()) % configs.len()];
                    check(&p, &cfg(c), like);
                    n += 1;
                }
            }
        }
    }
    println!("{n} emulated candidates agree bit-exactly on {like}");
}

#[test]
fn emulated_sweep_nvidia() {
    sweep(H200, &CONFIGS, &["conv", "convfp16", "convbfp16"]);
}

#[test]
fn emulated_sweep_amd() {
    sweep(MI200, &AMD_CONFIGS, &["conv", "convfp16", "convbfp16"]);
}

/// gfx908 (AccVGPRs apart, half-depth bf16 MFMA) and gfx942: the same sweep, so every AMD
/// target's kernels are checked bit-exactly, not only MI200's.
#[test]
fn emulated_sweep_gfx908_and_gfx942() {
    for arch in [Arch::GFX908, Arch::GFX942] {
        sweep(
            Target::of(arch),
            &AMD_CONFIGS,
            &["conv", "convfp16", "convbfp16"],
        );
    }
}

/// NHWC with channels a multiple of 8: vectors along K (fwd B, bwd-data B), along the tile rows
/// (bwd-weight A and B, bwd-data A, scattered into shared memory), with and without cp.async.
#[test]
fn emulated_vector_loads() {
    let shapes = [
        "-n 2 -c 16 -H 5 -W 4 -k 24 -y 3 -x 3 -p 1 -q 1",
        "-n 1 -c 32 -H 6 -W 7 -k 16 -y 2 -x 2 -u 2 -v 2 -g 2",
    ];
    for (like, configs) in [
        (
            H200,
            [
                "v1:bm=64,bn=64,bk=32,wm=32,wn=32,st=3,va={v},vb={v},vc={v},lds=swz,sk=1,rs=1",
                "v1:bm=32,bn=64,bk=16,wm=16,wn=32,st=1,va={v},vb={v},vc={v},lds=pad,sk=2,rs=1",
                // C staged in passes (tile > pipeline); [k][row] tiles with bk > rows.
                "v1:bm=64,bn=64,bk=16,wm=32,wn=32,st=1,va={v},vb={v},vc={v},lds=pad,sk=1,rs=1",
                "v1:bm=32,bn=32,bk=64,wm=16,wn=16,st=2,va={v},vb={v},vc={v},lds=pad,sk=1,rs=1",
            ],
        ),
        (
            MI200,
            [
                "v1:bm=64,bn=64,bk=32,wm=32,wn=32,st=2,va={v},vb={v},vc={v},lds=swz,sk=1,rs=1",
                "v1:bm=32,bn=64,bk=16,wm=32,wn=32,st=1,va={v},vb={v},vc={v},lds=pad,sk=2,rs=1",
                "v1:bm=64,bn=64,bk=16,wm=32,wn=32,st=1,va={v},vb={v},vc={v},lds=pad,sk=1,rs=1",
                "v1:bm=32,bn=32,bk=64,wm=16,wn=16,st=2,va={v},vb={v},vc={v},lds=pad,sk=1,rs=1",
            ],
        ),
    ] {
        for shape in shapes {
            for dir in [1, 2, 4] {
                for (dt, v) in [("conv", 4), ("convfp16", 8), ("convbfp16", 8), ("conv", 2)] {
                    for c in configs {
                        let p = problem(&format!("{dt} {shape} -F {dir} --layout NHWC"));
                        check(&p, &cfg(&c.replace("{v}", &v.to_string())), like);
                    }
                }
            }
        }
    }
}

/// The GPU oracle itself, against the f64 direct convolution, in every direction, type and
/// layout (f32 accumulation is exact on this data, so the check is bit-exact too).
#[test]
fn emulated_reference_kernel() {
    for shape in SHAPES {
        for dir in [1, 2, 4] {
            for dt in ["conv", "convfp16", "convbfp16"] {
                for layout in ["NCHW", "NHWC"] {
                    let p = problem(&format!("{dt} {shape} -F {dir} --layout {layout}"));
                    let mut t = data(&p, 3);
                    let want = direct_conv(&p, &t[0], &t[1], &t[2]);
                    let rep = emulate_reference(&p, H200, &mut t).unwrap();
                    assert_eq!(rep.violations, 0, "{p}: {:#?}", rep.messages);
                    let w = p.direction().written() as usize;
                    assert_eq!(mismatches(&p, &t[w], &want), Vec::<usize>::new(), "{p}");
                }
            }
        }
    }
}

/// The test switch really writes out of bounds (and only that is wrong).
#[test]
fn faulting_kernel_writes_out_of_bounds() {
    let p = problem("conv -n 1 -c 8 -H 6 -W 5 -k 12 -y 3 -x 3 -p 1 -q 1 -F 1");
    let mut t = data(&p, 1);
    let rep = emulate_faulting(&lower(&p), &cfg(BASIC), H200, &mut t).unwrap();
    assert_eq!(rep.violations, 1, "{:#?}", rep.messages);
    assert!(
        rep.messages[0].contains("global store"),
        "{:#?}",
        rep.messages
    );
    let c = convtune::codegen::compile_faulting(&lower(&p), &cfg(BASIC), H200).unwrap();
    assert!(
        c.module.ptx().unwrap().contains("1099511627776"),
        "the far offset (2^40 bytes) is in the PTX"
    );
}

/// Realistic sizes (seed 003, ResNet-like layers) compiled for both vendors: LLVM's verifier
/// accepts every module, PTX holds the instructions meant, code objects carry metadata.
#[test]
fn compiles_for_nvidia_and_amd() {
    let problems = [
        "convbfp16 -n 16 -c 2048 -H 1 -W 512 -k 2048 -y 1 -x 2 -u 1 -v 2 -F 2 --layout NHWC",
        "convfp16 -n 32 -c 64 -H 56 -W 56 -k 64 -y 3 -x 3 -p 1 -q 1 -F 1 --layout NHWC",
        "convbfp16 -n 32 -c 256 -H 14 -W 14 -k 256 -y 3 -x 3 -p 1 -q 1 -F 4 --layout NHWC",
        "conv -n 8 -c 64 -H 28 -W 28 -k 128 -y 3 -x 3 -p 1 -q 1 -u 2 -v 2 -F 1 --layout NCHW",
        "convfp16 -n 8 -c 32 -H 28 -W 28 -k 64 -y 3 -x 3 -p 1 -q 1 -u 2 -v 2 -F 2 --layout NCHW",
    ];
    let nv = cfg("v1:bm=128,bn=128,bk=32,wm=64,wn=64,st=3,va=8,vb=8,vc=1,lds=swz,sk=1,rs=4");
    let amd = cfg("v1:bm=128,bn=128,bk=32,wm=64,wn=64,st=2,va=8,vb=8,vc=1,lds=pad,sk=1,rs=4");
    for line in problems {
        let p = problem(line);
        let l = lower(&p);
        let nhwc = line.ends_with("NHWC");
        let v = if !nhwc {
            1
        } else if p.dtype() == DType::F32 {
            4
        } else {
            8
        };
        let with_v = |c: &PerfConfig| PerfConfig {
            vec_a: v,
            vec_b: v,
            ..*c
        };
        let split = |c: PerfConfig| {
            if p.direction() == convtune::problem::Direction::BwdWeight {
                PerfConfig { split_k: 4, ..c }
            } else {
                c
            }
        };
        let c =
            compile_conv(&l, &split(with_v(&nv)), H200).unwrap_or_else(|e| panic!("{line}: {e}"));
        let ptx = c.module.ptx().unwrap();
        assert!(ptx.contains(".maxntid 128, 1, 1"), "{line}");
        match p.dtype() {
            DType::F32 => assert!(!ptx.contains("mma.sync"), "{line}"),
            DType::BF16 => assert!(
                ptx.contains("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"),
                "{line}"
            ),
            DType::F16 => assert!(
                ptx.contains("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"),
                "{line}"
            ),
        }
        if p.dtype() != DType::F32 {
            assert!(ptx.contains("ldmatrix.sync.aligned.m8n8.x4"), "{line}");
        }
        let bwd_weight = p.direction() == convtune::problem::Direction::BwdWeight;
        if nhwc && bwd_weight && p.dtype() != DType::F32 {
            // Both operands' vectors run along M/N: [k][row] tiles read with ldmatrix.trans.
            assert!(
                ptx.contains("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16"),
                "{line}"
            );
        }
        if nhwc {
            assert!(
                ptx.contains("cp.async.cg.shared.global"),
                "{line}: 16-byte vectors use cp.async in either tile layout"
            );
        }
        // Strided bwd-data without split-K: every phase and the zeroing in one launch.
        let one_launch = p.direction() == convtune::problem::Direction::BwdData
            && (l.gemms.len() > 1 || l.zero_init);
        assert_eq!(
            c.kernels.len(),
            if one_launch {
                1
            } else {
                l.gemms.len()
                    + usize::from(l.zero_init || c.workspace_bytes > 0 || split(nv).split_k > 1)
                    + usize::from(c.workspace_bytes > 0)
            }
        );
        println!("{line}\n{}", convtune::codegen::resource_report(&c));

        let c =
            compile_conv(&l, &split(with_v(&amd)), MI200).unwrap_or_else(|e| panic!("{line}: {e}"));
        let r = c.resources.as_ref().unwrap();
        assert!(c.module.code_object().unwrap().starts_with(b"\x7fELF"));
        for k in &c.kernels {
            let kr = r
                .kernel(&k.name)
                .unwrap_or_else(|| panic!("{line}: no metadata for {}", k.name));
            assert_eq!(kr.wavefront_size, 64);
            assert!(kr.vgpr_count > 0 && kr.sgpr_count > 0);
            assert!(kr.max_flat_workgroup_size >= k.block[0]);
        }
        println!("{}", convtune::codegen::resource_report(&c));
    }
    for t in [
        H200,
        MI200,
        Target::of(Arch::GFX942),
        Target::of(Arch::GFX908),
        Target::of(Arch::SM_80),
    ] {
        let p =
            problem("convbfp16 -n 2 -c 8 -H 6 -W 5 -k 12 -y 3 -x 3 -p 1 -q 1 -F 2 --layout NHWC");
        let r = compile_reference(&p, t).unwrap_or_else(|e| panic!("{t}: {e}"));
        assert_eq!(r.kernels.len(), 1);
        assert_eq!(r.workspace_bytes, 0);
        let c = compile_conv(&lower(&p), &cfg(BASIC), t).unwrap_or_else(|e| panic!("{t}: {e}"));
        assert!(c.module.ptx().is_some() != c.module.code_object().is_some());
    }
}

/// Compile throughput across all cores (printed, not asserted: the machine is shared).
#[test]
fn compile_throughput() {
    use rayon::prelude::*;
    let p =
        problem("convbfp16 -n 32 -c 256 -H 14 -W 14 -k 256 -y 3 -x 3 -p 1 -q 1 -F 1 --layout NHWC");
    let l = lower(&p);
    let mut configs = Vec::new();
    for (bm, bn) in [(64, 64), (128, 64), (64, 128), (128, 128)] {
        for st in [2, 3] {
            for lds in ["pad", "swz"] {
                configs.push(cfg(&format!(
                    "v1:bm={bm},bn={bn},bk=32,wm=32,wn=32,st={st},va=8,vb=8,vc=1,lds={lds},sk=1,rs=1"
                )));
            }
        }
    }
    for target in [H200, MI200] {
        let start = std::time::Instant::now();
        let kernels: usize = configs
            .par_iter()
            .map(|c| {
                compile_conv(&l, c, target)
                    .map(|k| k.kernels.len())
                    .unwrap_or_else(|e| panic!("{c}: {e}"))
            })
            .sum();
        let secs = start.elapsed().as_secs_f64();
        let cores = rayon::current_num_threads();
        println!(
            "{target}: {} candidates, {kernels} kernels in {secs:.2} s on {cores} threads: {:.1} kernels/s, {:.2} kernels/s per core",
            configs.len(),
            kernels as f64 / secs,
            kernels as f64 / secs / cores as f64
        );
    }
}

/// gfx908 has no `_1k` bf16 MFMA: half the K per instruction (2 elements per lane).
#[test]
fn emulated_gfx908_bf16() {
    sweep(Target::of(Arch::GFX908), &AMD_CONFIGS, &["convbfp16"]);
}

/// Every config legality accepts must compute the right answer: random small problems (all
/// directions, types, layouts, padding, stride, dilation, groups), a few legal configs each,
/// emulated on an H200-like and an MI200-like target. `CONVTUNE_EMU_CASES` scales it up.
#[test]
fn legal_configs_are_correct() {
    use convtune::problem::{ConvSizes, Direction, Layout};
    use convtune::space::{sample_legal, SearchSpace};
    let cases: usize = std::env::var("CONVTUNE_EMU_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20);
    let mut rng = StdRng::seed_from_u64(2026);
    let mut done = 0;
    while done < cases {
        let g = rng.gen_range(1..=2);
        let sizes = ConvSizes {
            n: rng.gen_range(1..=2),
            c: g * [1, 2, 3, 4, 8, 16][rng.gen_range(0..6)],
            h: rng.gen_range(1..=9),
            w: rng.gen_range(1..=9),
            k: g * [1, 2, 4, 5, 8, 16][rng.gen_range(0..6)],
            y: rng.gen_range(1..=3),
            x: rng.gen_range(1..=3),
            pad: [rng.gen_range(0..=2), rng.gen_range(0..=2)],
            stride: [rng.gen_range(1..=3), rng.gen_range(1..=3)],
            dilation: [rng.gen_range(1..=2), rng.gen_range(1..=2)],
            groups: g,
        };
        let dir = [Direction::Fwd, Direction::BwdData, Direction::BwdWeight][rng.gen_range(0..3)];
        let dt = [DType::F32, DType::F16, DType::BF16][rng.gen_range(0..3)];
        let (act, fil) = if rng.gen_bool(0.5) {
            (Layout::NGCHW, Layout::GKCYX)
        } else {
            (Layout::NHWGC, Layout::GKYXC)
        };
        let Ok(p) = ConvProblem::new(sizes, dir, dt, act, fil, act) else {
            continue;
        };
        for (arch, like) in [(Arch::SM_90, H200), (Arch::GFX90A, MI200)] {
            let space = SearchSpace::default_for(&arch);
            for c in sample_legal(&p, &arch, &space, 2, done as u64) {
                check(&p, &c, like);
            }
        }
        done += 1;
    }
}

/// Legality and codegen agree: every config legality accepts can be generated (planning only,
/// no LLVM: cheap enough for every legal config of realistic problems on every arch).
#[test]
fn every_legal_config_can_be_generated() {
    use convtune::codegen::launches;
    use convtune::space::{enumerate_legal, SearchSpace};
    let problems = [
        "convbfp16 -n 16 -c 2048 -H 1 -W 512 -k 2048 -y 1 -x 2 -u 1 -v 2 -F 2 --layout NHWC",
        "convfp16 -n 32 -c 64 -H 56 -W 56 -k 64 -y 3 -x 3 -p 1 -q 1 -F 1 --layout NHWC",
        "convbfp16 -n 32 -c 256 -H 14 -W 14 -k 256 -y 3 -x 3 -p 1 -q 1 -F 4 --layout NHWC",
        "conv -n 8 -c 64 -H 28 -W 28 -k 128 -y 3 -x 3 -p 1 -q 1 -u 2 -v 2 -F 1 --layout NCHW",
        "conv -n 32 -c 32 -H 14 -W 14 -k 32 -y 1 -x 1 -p 1 -q 1 -F 2 --layout NCHW",
        "convfp16 -n 4 -c 96 -H 17 -W 17 -k 48 -y 3 -x 3 -p 1 -q 1 -u 2 -v 2 -g 3 -F 4 --layout NCHW",
    ];
    for line in problems {
        let p = problem(line);
        let l = lower(&p);
        for arch in Arch::ALL {
            let target = Target::parse(arch.name).unwrap();
            let legal = enumerate_legal(&p, &arch, &SearchSpace::default_for(&arch)).legal;
            let mut failures = Vec::new();
            for c in &legal {
                match launches(&l, c, target) {
                    Err(e) => failures.push(e.to_string()),
                    Ok(convtune::codegen::Planned { kernels, .. }) => {
                        for k in kernels {
                            if k.shared_bytes > arch.smem_per_block {
                                failures.push(format!(
                                    "{c}: {} needs {} bytes of shared memory, the arch has {}",
                                    k.name, k.shared_bytes, arch.smem_per_block
                                ));
                            }
                        }
                    }
                }
            }
            assert!(
                failures.is_empty(),
                "{line} on {}: {} of {} legal configs cannot be generated, e.g.\n{}",
                arch.name,
                failures.len(),
                legal.len(),
                failures
                    .iter()
                    .take(5)
                    .cloned()
                    .collect::<Vec<_>>()
                    .join("\n")
            );
        }
    }
}
