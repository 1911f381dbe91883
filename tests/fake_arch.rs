//! Adding an arch is one table row plus a search-space file: a made-up NVIDIA part, described
//! here and nowhere in the crate, is enumerated, legality-checked, compiled to PTX and ranked by
//! the cost model with its own limits, features and rates, and never with another arch's.

use convtune::arch::{Arch, Features, Isa, MathKind, Rates, Vendor};
use convtune::codegen::{compile_conv, Target};
use convtune::config::{MmaPath, PerfConfig};
use convtune::legality::{self, Rejection};
use convtune::lowering::lower;
use convtune::problem::ConvProblem;
use convtune::search::{CostArch, CostModel};
use convtune::space::{enumerate_legal, SearchSpace};

/// An Ada-like part (the name LLVM knows as `sm_89`), with limits and rates of its own: less
/// shared memory than A100 and H100, fewer SMs, no `wgmma`.
const FAKE: Arch = Arch {
    name: "sm_89",
    product: "made-up Ada-like test part",
    vendor: Vendor::Nvidia,
    warp_size: 32,
    smem_per_block: 99 * 1024,
    smem_per_sm: 100 * 1024,
    max_threads_per_block: 1024,
    max_threads_per_sm: 1536,
    max_blocks_per_sm: 24,
    max_regs_per_thread: 255,
    regs_per_sm: 64 * 1024,
    compute_units: 76,
    max_vector_bytes: 16,
    isa: Isa {
        triple: "nvptx64-nvidia-cuda",
        cpu: "sm_89",
        cpu_arch_specific: None,
        features: "+ptx80",
    },
    features: Features {
        cp_async: true,
        ldmatrix: true,
        wgmma: None,
        tma: false,
        setmaxnreg: None,
        clusters: false,
    },
    math: Arch::SM_80.math,
    rates: Rates {
        f16_tflops: 200.0,
        bf16_tflops: 200.0,
        f32_tflops: 50.0,
        mma_sync_fraction: 0.9,
        dram_tbps: 0.9,
        l2_tbps: 4.0,
        clock_ghz: 2.5,
        issue_per_clk: 128.0,
    },
};

/// The arch's space file: the NVIDIA knobs, narrowed, with the wgmma paths listed so that
/// legality must take them out for an arch without `wgmma`.
const SPACE: &str = r#"
name = "fake-sm89"
vendor = "nvidia"

[params]
block_m = [32, 64, 128, 256]
block_n = [32, 64, 128]
block_k = [32, 64]
warp_m = [32, 64]
warp_n = [32, 64]
stages = [2, 3, 4]
vec_a = [8]
vec_b = [8]
vec_c = [1, 8]
lds = ["pad", "swz"]
split_k = [1]
raster = [1, 8]
mma = ["sync", "wg"]

[constraints]
max_threads = 256
min_warps = 1
max_warps = 8
"#;

const PROBLEM: &str =
    "convbfp16 -n 8 -c 128 -H 28 -W 28 -k 128 -y 3 -x 3 -p 1 -q 1 -F 1 --layout NHWC";

#[test]
fn a_fake_arch_is_enumerated_checked_compiled_and_ranked() {
    let p: ConvProblem = PROBLEM.parse().unwrap();
    let l = lower(&p);
    let space = SearchSpace::from_toml(SPACE, "fake-sm89.toml").unwrap();

    // Enumerate: its own shared-memory limit and features decide what is legal.
    let legal = enumerate_legal(&p, &FAKE, &space).legal;
    assert!(!legal.is_empty());
    assert!(
        legal.iter().all(|c| c.mma == MmaPath::Sync),
        "no wgmma on this arch"
    );
    let on_h100 = enumerate_legal(&p, &Arch::SM_90, &space).legal;
    assert!(on_h100.iter().any(|c| c.mma == MmaPath::Wgmma));
    assert!(
        on_h100.len() > legal.len(),
        "227 KB of shared memory and wgmma admit more than 99 KB without"
    );

    // Check: every enumerated config passes, and the rules cite this arch's facts.
    for c in &legal {
        let r = legality::check(&l, c, &FAKE).unwrap_or_else(|e| panic!("{c}: {e}"));
        assert!(r.lds_bytes <= FAKE.smem_per_block, "{c}");
    }
    let big: PerfConfig =
        "v2:bm=256,bn=128,bk=64,wm=64,wn=64,st=4,va=8,vb=8,vc=8,lds=swz,sk=1,rs=1,mma=sync"
            .parse()
            .unwrap();
    assert!(legality::check(&l, &big, &Arch::SM_90).is_ok());
    match legality::check(&l, &big, &FAKE) {
        Err(Rejection::SharedMemory { max, .. }) => assert_eq!(max, 99 * 1024),
        other => panic!("expected the shared-memory rule, got {other:?}"),
    }
    let wg = PerfConfig {
        mma: MmaPath::Wgmma,
        warp_m: 64,
        ..big
    };
    let e = legality::check(&l, &wg, &FAKE).unwrap_err().to_string();
    assert!(e.contains("sm_89 has no wgmma"), "{e}");

    // Compile: real LLVM codegen for the arch's CPU and PTX version.
    let target = Target::of(FAKE);
    target.check().unwrap();
    for c in legal.iter().step_by(legal.len().div_ceil(4)) {
        let ptx = compile_conv(&l, c, target)
            .unwrap_or_else(|e| panic!("{c}: {e}"))
            .module
            .ptx()
            .unwrap()
            .to_string();
        assert!(ptx.contains(".target sm_89"), "{c}");
        assert!(ptx.contains("mma.sync.aligned.m16n8k16"), "{c}");
        assert!(ptx.contains("cp.async"), "{c}");
    }
    assert!(compile_conv(&l, &wg, target).is_err());

    // Rank: the cost model reads this arch's rates and limits.
    let machine = CostArch::from_arch(&FAKE, p.dtype());
    assert_eq!(FAKE.math(p.dtype())[0].kind, MathKind::MmaSync);
    assert!((machine.peak_tflops - 200.0 * 0.9).abs() < 1e-9);
    assert_eq!(machine.wgmma_tflops, 0.0);
    assert_eq!((machine.dram_tbps, machine.clock_ghz), (0.9, 2.5));
    assert_eq!(machine.max_threads_per_sm, 1536);
    let model = CostModel::new(&l, machine);
    let mut ranked: Vec<(f64, &PerfConfig)> = legal
        .iter()
        .map(|c| (model.estimate(c).time_us, c))
        .collect();
    assert!(ranked.iter().all(|(t, _)| t.is_finite() && *t > 0.0));
    ranked.sort_by(|a, b| a.0.total_cmp(&b.0));
    assert!(ranked[0].0 < ranked[ranked.len() - 1].0);
    // The same config costs differently on A100: the fake part's numbers are its own.
    let best = ranked[0].1;
    let a100 = CostModel::new(&l, CostArch::from_arch(&Arch::SM_80, p.dtype()));
    assert_ne!(a100.estimate(best).time_us, ranked[0].0);
}

#[test]
fn an_arch_outside_the_table_is_an_error_by_name() {
    let e = Arch::from_name("sm_89").unwrap_err().to_string();
    assert!(e.contains("known architectures are sm_80, sm_90"), "{e}");
    assert!(Target::parse("sm_89").is_err());
    assert!(Target::parse("gfx940").is_err());
}
