//! The Hopper `wgmma` path (`mma=wg`), run on the CPU emulator, where `wgmma.mma_async` is
//! computed from its shared-memory descriptors (128-byte swizzle decoded independently of the
//! kernel side), and compared bit-exactly with the f64 direct convolution (data are multiples
//! of 1/8: every product and sum is exact in f32, whatever the order).

use convtune::arch::Arch;
use convtune::codegen::{compile_conv, Capability, CodegenError, Target};
use convtune::config::{MmaPath, PerfConfig};
use convtune::lowering::lower;
use convtune::problem::ConvProblem;
mod common;

use common::{cfg, emulate_exact, problem};

const H200: Target = Target::of(Arch::SM_90);

/// Emulates one candidate: `Ok(false)` when codegen refuses the config (not a wgmma shape for
/// this problem), `Ok(true)` when it ran with no bad access and agrees bit-exactly.
fn check(p: &ConvProblem, c: &PerfConfig) -> bool {
    match emulate_exact(p, c, H200, 11) {
        Ok(_) => true,
        Err(CodegenError::Config { .. }) => false,
        Err(e) => panic!("{p} {c}: {e}"),
    }
}

/// One and two warpgroups (along M and along N), N = 64, 32, 24 and 128, 1-4 stages, cp.async
/// (8 and 16 bytes) and register-path loads, plain and staged C stores, a group kept in flight
/// (`mma=wg1`).
const CONFIGS: [&str; 6] = [
    "v2:bm=64,bn=64,bk=64,wm=64,wn=64,st=2,va=8,vb=8,vc=1,lds=swz,sk=1,rs=1,mma=wg",
    "v2:bm=128,bn=64,bk=64,wm=64,wn=64,st=3,va=8,vb=8,vc=8,lds=swz,sk=1,rs=1,mma=wg",
    "v2:bm=64,bn=128,bk=64,wm=64,wn=64,st=1,va=1,vb=1,vc=1,lds=swz,sk=1,rs=2,mma=wg",
    "v2:bm=64,bn=32,bk=64,wm=64,wn=32,st=4,va=4,vb=4,vc=4,lds=swz,sk=1,rs=1,mma=wg1",
    "v2:bm=64,bn=48,bk=64,wm=64,wn=24,st=2,va=8,vb=8,vc=1,lds=swz,sk=1,rs=1,mma=wg",
    "v2:bm=64,bn=128,bk=64,wm=64,wn=128,st=2,va=8,vb=8,vc=8,lds=swz,sk=1,rs=1,mma=wg",
];

/// NHWC forward (both tiles K-major): padding, stride, dilation, groups, odd sizes, channels
/// that leave partial K tiles.
const SHAPES: [&str; 5] = [
    "-n 2 -c 16 -H 5 -W 4 -k 24 -y 3 -x 3 -p 1 -q 1",
    "-n 1 -c 32 -H 6 -W 7 -k 16 -y 2 -x 2 -u 2 -v 2 -g 2",
    "-n 3 -c 72 -H 5 -W 3 -k 72 -y 1 -x 1",
    "-n 2 -c 8 -H 9 -W 7 -k 80 -y 3 -x 2 -p 2 -q 1 -l 2 -j 1",
    // seed 003's shape, small: 1x2 filter, stride 1x2.
    "-n 2 -c 64 -H 1 -W 16 -k 64 -y 1 -x 2 -u 1 -v 2",
];

#[test]
fn emulated_wgmma_fwd_nhwc_bit_exact() {
    let mut ran = 0;
    for (si, shape) in SHAPES.iter().enumerate() {
        for (di, dt) in ["convbfp16", "convfp16"].iter().enumerate() {
            for k in 0..2 {
                let c = cfg(CONFIGS[(2 * si + di + 3 * k) % CONFIGS.len()]);
                let p = problem(&format!("{dt} {shape} -F 1 --layout NHWC"));
                assert!(
                    check(&p, &c),
                    "{p} {c}: codegen refused a forward NHWC wgmma config"
                );
                ran += 1;
            }
        }
    }
    assert_eq!(ran, 20);
}

/// Backward data (A = filter, M-major in NHWC: transposed A) and backward weight (A and B both
/// MN-major), NHWC: MN-major tiles in 64-row blocks, one or several per warpgroup tile.
#[test]
fn emulated_wgmma_bwd_nhwc_transposed_bit_exact() {
    let bwd_data = [
        "v2:bm=64,bn=64,bk=64,wm=64,wn=64,st=2,va=8,vb=8,vc=1,lds=swz,sk=1,rs=1,mma=wg",
        "v2:bm=64,bn=128,bk=64,wm=64,wn=64,st=3,va=8,vb=8,vc=8,lds=swz,sk=1,rs=1,mma=wg",
        "v2:bm=64,bn=256,bk=64,wm=64,wn=256,st=2,va=4,vb=8,vc=8,lds=swz,sk=1,rs=1,mma=wg",
        "v2:bm=64,bn=48,bk=64,wm=64,wn=24,st=1,va=1,vb=1,vc=1,lds=swz,sk=1,rs=1,mma=wg",
        "v2:bm=128,bn=64,bk=64,wm=64,wn=64,st=3,va=8,vb=8,vc=8,lds=swz,sk=1,rs=1,mma=wg1",
        "v2:bm=128,bn=128,bk=64,wm=64,wn=128,st=2,va=8,vb=8,vc=1,lds=swz,sk=1,rs=1,mma=wg",
    ];
    let bwd_weight = [
        "v2:bm=64,bn=64,bk=64,wm=64,wn=64,st=2,va=8,vb=8,vc=1,lds=swz,sk=1,rs=1,mma=wg",
        "v2:bm=64,bn=64,bk=64,wm=64,wn=64,st=3,va=8,vb=8,vc=8,lds=swz,sk=2,rs=1,mma=wg",
        "v2:bm=64,bn=64,bk=64,wm=64,wn=64,st=4,va=4,vb=4,vc=1,lds=swz,sk=1,rs=1,mma=wg1",
        "v2:bm=64,bn=128,bk=64,wm=64,wn=128,st=3,va=8,vb=8,vc=8,lds=swz,sk=1,rs=1,mma=wg",
        "v2:bm=128,bn=128,bk=64,wm=64,wn=64,st=2,va=8,vb=8,vc=1,lds=swz,sk=2,rs=1,mma=wg",
        "v2:bm=128,bn=256,bk=64,wm=64,wn=256,st=2,va=8,vb=8,vc=8,lds=swz,sk=1,rs=1,mma=wg",
    ];
    let mut ran = 0;
    for (si, shape) in SHAPES.iter().enumerate() {
        for (di, dt) in ["convbfp16", "convfp16"].iter().enumerate() {
            for (dir, configs) in [(2, &bwd_data[..]), (4, &bwd_weight[..])] {
                let c = cfg(configs[(2 * si + di) % configs.len()]);
                let p = problem(&format!("{dt} {shape} -F {dir} --layout NHWC"));
                let legal = convtune::legality::check(&lower(&p), &c, &convtune::arch::Arch::SM_90);
                if legal.is_err() {
                    // split-K needs K / split_k >= bk; nothing else may refuse these.
                    assert!(c.split_k > 1, "{p} {c}: {legal:?}");
                    continue;
                }
                assert!(check(&p, &c), "{p} {c}: codegen refused a legal config");
                ran += 1;
            }
        }
    }
    assert!(ran >= 17, "{ran}");
}

/// Other directions and layouts: whatever codegen accepts must be exact; what it refuses must
/// be what legality refuses (tiles that are not K-major).
#[test]
fn emulated_wgmma_other_directions_where_legal() {
    let arch = convtune::arch::Arch::SM_90;
    let mut ran = 0;
    for shape in &SHAPES[..3] {
        for dir in [1, 2, 4] {
            for layout in ["NCHW", "NHWC"] {
                let p = problem(&format!("convbfp16 {shape} -F {dir} --layout {layout}"));
                let c = cfg(
                    "v2:bm=64,bn=64,bk=64,wm=64,wn=64,st=2,va=1,vb=1,vc=1,lds=swz,sk=1,rs=1,mma=wg",
                );
                let legal = convtune::legality::check(&lower(&p), &c, &arch).is_ok();
                let ran_it = check(&p, &c);
                assert_eq!(legal, ran_it, "{p} {c}: legality and codegen disagree");
                ran += usize::from(ran_it);
            }
        }
    }
    println!("{ran} non-forward-NHWC wgmma candidates agree");
}

#[test]
fn wgmma_is_refused_off_sm90_and_for_f32() {
    let c = cfg(CONFIGS[0]);
    assert_eq!(c.mma, MmaPath::Wgmma);
    let p = problem("convbfp16 -n 2 -c 16 -H 5 -W 4 -k 24 -y 3 -x 3 -p 1 -q 1 -F 1 --layout NHWC");
    let l = lower(&p);
    // sm_80 lacks the instruction family: a planning error that names it.
    assert!(matches!(
        compile_conv(&l, &c, Target::of(Arch::SM_80)),
        Err(CodegenError::Missing {
            capability: Capability::WarpgroupMma,
            ..
        })
    ));
    let pf = problem("conv -n 2 -c 16 -H 5 -W 4 -k 24 -y 3 -x 3 -p 1 -q 1 -F 1 --layout NHWC");
    assert!(matches!(
        compile_conv(&lower(&pf), &c, H200),
        Err(CodegenError::Config { .. })
    ));
    let pad = cfg(&CONFIGS[0].replace("lds=swz", "lds=pad"));
    assert!(matches!(
        compile_conv(&l, &pad, H200),
        Err(CodegenError::Config { .. })
    ));
}

/// The PTX: sm_90a, and the instruction sequence with 64-bit descriptors and tied
/// accumulators (a syntax check short of ptxas, which is not on this machine).
#[test]
fn wgmma_ptx_shape() {
    let p = problem("convbfp16 -n 4 -c 64 -H 8 -W 8 -k 128 -y 3 -x 3 -p 1 -q 1 -F 1 --layout NHWC");
    let c = cfg("v2:bm=128,bn=128,bk=64,wm=64,wn=128,st=3,va=8,vb=8,vc=8,lds=swz,sk=1,rs=1,mma=wg");
    let ptx = compile_conv(&lower(&p), &c, H200)
        .unwrap()
        .module
        .ptx()
        .unwrap()
        .to_string();
    assert!(ptx.contains(".target sm_90a"), "{}", &ptx[..400]);
    assert!(ptx.contains(".align 1024 .b8 convtune_dyn_smem"));
    assert_eq!(
        ptx.matches("wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16")
            .count(),
        4
    );
    assert!(ptx.contains("wgmma.fence.sync.aligned;"));
    assert!(ptx.contains("wgmma.commit_group.sync.aligned;"));
    assert!(ptx.contains("wgmma.wait_group.sync.aligned 0;"));
    assert!(
        !ptx.contains("wgmma.wait_group.sync.aligned 1;"),
        "mma=wg waits each tile"
    );
    // Three stages, copies two tiles ahead: wait until one group is left.
    assert!(ptx.contains("cp.async.wait_group 1;"));
    assert!(ptx.contains("fence.proxy.async.shared::cta;"));
    assert!(!ptx.contains("mma.sync"));
    // Forward NHWC: both operands K-major, no transposes.
    assert!(ptx.contains("p, 1, 1, 0, 0;"));
    let line = ptx.lines().find(|l| l.contains("wgmma.mma_async")).unwrap();
    // 64 accumulators, two 64-bit descriptors, the scale-d predicate and four immediates.
    let regs = line.split('{').nth(1).unwrap().split('}').next().unwrap();
    assert_eq!(regs.split(',').count(), 64);
    assert!(regs.split(',').all(|r| r.trim().starts_with("%f")));
    let tail = line.split('}').nth(1).unwrap();
    assert!(
        tail.contains("%rd") && tail.trim_end().ends_with("p, 1, 1, 0, 0;"),
        "{tail}"
    );
    // mma=wg1: one group in flight in the loop, all retired before the epilogue; the copies run
    // one tile ahead at three stages (wait until none is left).
    let w1 =
        cfg("v2:bm=128,bn=128,bk=64,wm=64,wn=128,st=3,va=8,vb=8,vc=8,lds=swz,sk=1,rs=1,mma=wg1");
    let ptx1 = compile_conv(&lower(&p), &w1, H200)
        .unwrap()
        .module
        .ptx()
        .unwrap()
        .to_string();
    let wait1 = ptx1
        .find("wgmma.wait_group.sync.aligned 1;")
        .expect("a group in flight");
    let wait0 = ptx1
        .rfind("wgmma.wait_group.sync.aligned 0;")
        .expect("drained");
    let store = ptx1.rfind("st.global").expect("an epilogue");
    assert!(wait1 < wait0 && wait0 < store, "{wait1} {wait0} {store}");
    assert!(ptx1.contains("cp.async.wait_group 0;") && !ptx1.contains("cp.async.wait_group 1;"));
    // A sync config of the same problem stays sm_90.
    let s = cfg("v1:bm=128,bn=128,bk=64,wm=64,wn=64,st=3,va=8,vb=8,vc=8,lds=swz,sk=1,rs=1");
    let ptx = compile_conv(&lower(&p), &s, H200)
        .unwrap()
        .module
        .ptx()
        .unwrap()
        .to_string();
    assert!(ptx.contains(".target sm_90\n"));
    // Backward weight NHWC: A M-major and B N-major (imm-trans-a = imm-trans-b = 1).
    let bw = problem("convbfp16 -n 4 -c 64 -H 8 -W 8 -k 64 -y 3 -x 3 -p 1 -q 1 -F 4 --layout NHWC");
    let c = cfg("v2:bm=64,bn=64,bk=64,wm=64,wn=64,st=3,va=8,vb=8,vc=8,lds=swz,sk=1,rs=1,mma=wg");
    let ptx = compile_conv(&lower(&bw), &c, H200)
        .unwrap()
        .module
        .ptx()
        .unwrap()
        .to_string();
    assert!(ptx.contains("p, 1, 1, 1, 1;"));
}

/// `search-spaces/nvidia-hopper.toml` (the re-tuning space and `selfcheck --space`'s) holds only
/// warpgroup kernels and, for depthwise problems, the direct depthwise kernel; it lists every
/// load path, and what it samples on the sweep's 16-bit problems compiles.
#[test]
fn hopper_space_samples_wgmma_kernels_of_every_load_path() {
    use convtune::config::LoadPath;
    use convtune::space::{sample_legal, SearchSpace};
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/search-spaces/nvidia-hopper.toml"
    );
    let space = SearchSpace::load(std::path::Path::new(path)).unwrap();
    space.check_vendor(&Arch::SM_90, path).unwrap();
    assert_eq!(
        space.params.ld,
        LoadPath::ALL.to_vec(),
        "every load path listed"
    );
    let mut sampled = 0;
    let mut paths = std::collections::BTreeSet::new();
    for p in convtune::selfcheck::sweep_problems()
        .into_iter()
        .filter(|p| p.dtype().bytes() == 2)
    {
        let l = lower(&p);
        for c in sample_legal(&p, &Arch::SM_90, &space, 3, 5) {
            let dw = c.mma == convtune::config::MmaPath::Depthwise;
            assert!(c.mma.is_wgmma() || (dw && p.c_per_group() == 1), "{p} {c}");
            compile_conv(&l, &c, H200).unwrap_or_else(|e| panic!("{p} {c}: {e}"));
            if !dw {
                paths.insert(c.ld.name());
                sampled += 1;
            }
        }
    }
    assert!(sampled >= 10, "only {sampled} sampled");
    assert!(paths.len() >= 2, "load paths sampled: {paths:?}");
}
