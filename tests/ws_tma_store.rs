//! The TMA-store epilogue (`ep=tma`) of the persistent warp-specialised kernels on the CPU
//! emulator: the consumers stage C in a swizzled shared-memory tile, one elected thread stores
//! it with `cp.async.bulk.tensor` and waits (`wait_group.read`) before the tile is reused.
//! Bit-exact against the f64 direct convolution for fwd 1×1, fwd 3×3 (im2col loads), strided
//! bwd-data (one launch, a store map per phase), ragged edges (the store clips), ping-pong
//! consumers and groups; a protocol without the read wait or the proxy fence must be caught.

use convtune::arch::Arch;
use convtune::codegen::{compile_conv, emu, with_store_fault, StoreFault, Target};
use convtune::config::{Epilogue, LoadPath, PerfConfig};
use convtune::legality;
use convtune::lowering::lower;
use convtune::problem::ConvProblem;
mod common;

use common::{cfg, data, emulate_where_legal, hopper_space, planned_if_legal, problem};

/// One consumer warpgroup of 64 × 64, two stages, TMA store.
const EP: &str = "v6:bm=64,bn=64,bk=64,wm=64,wn=64,st=2,va=8,vb=8,vc=8,lds=swz,sk=1,rs=1,\
                  mma=wg,red=atomic,ld=ws,pk=1,xf=none,cl=1,ep=tma";

fn with(c: &PerfConfig, f: impl FnOnce(&mut PerfConfig)) -> PerfConfig {
    let mut c = *c;
    f(&mut c);
    c
}

/// Emulates `c` on an H200 with `sms` SMs bit-exactly (legality must agree it runs); returns
/// the store maps of the GEMM kernel.
fn run(p: &ConvProblem, c: &PerfConfig, sms: u32) -> usize {
    let arch = Arch::SM_90.with_compute_units(sms);
    let r = emulate_where_legal(p, c, arch, 7).unwrap_or_else(|| panic!("{p} {c}: refused"));
    let k = r
        .kernels
        .iter()
        .find(|k| k.name.starts_with("convtune_gemm"))
        .unwrap();
    k.args
        .iter()
        .filter(|a| {
            matches!(a.kind, convtune::abi::ArgKind::TensorMap(_))
                && a.role == convtune::abi::ArgRole::of(p.direction().written())
        })
        .count()
}

#[test]
fn ep_is_a_v6_field_and_reg_is_todays_kernel() {
    let c = cfg(EP);
    assert_eq!(c.epilogue, Epilogue::Tma);
    let reg = with(&c, |c| c.epilogue = Epilogue::Reg);
    assert!(reg.to_string().starts_with("v4:"), "{reg}");
    let p = problem("convbfp16 -n 4 -c 64 -H 8 -W 8 -k 128 -y 1 -x 1 -F 1 --layout NHWC");
    let ptx = |c: &PerfConfig| {
        let m = compile_conv(&lower(&p), c, Target::of(Arch::SM_90)).unwrap();
        m.module.ptx().unwrap().to_string()
    };
    let (t, r) = (ptx(&c), ptx(&reg));
    for s in [
        "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group",
        "cp.async.bulk.commit_group",
        "cp.async.bulk.wait_group.read 0",
        "cp.async.bulk.wait_group 0",
    ] {
        assert!(t.contains(s), "ep=tma PTX lacks {s}");
        assert!(!r.contains(s), "ep=reg PTX has {s}");
    }
}

/// fwd 1×1: many units over few blocks (the staging tile reused across units), one block,
/// and f16; a 128-wide tile line is two boxes.
#[test]
fn fwd_1x1_walks_units_through_the_staging_tile() {
    let p = problem("convbfp16 -n 4 -c 64 -H 8 -W 8 -k 128 -y 1 -x 1 -F 1 --layout NHWC");
    let c = cfg(EP);
    assert_eq!(run(&p, &c, 3), 1);
    assert_eq!(run(&p, &c, 1), 1);
    let wide = with(&c, |c| {
        c.block_m = 128;
        c.warp_m = 64;
    });
    assert_eq!(run(&p, &wide, 2), 1);
    let p16 = problem("convfp16 -n 4 -c 64 -H 8 -W 8 -k 128 -y 1 -x 1 -F 1 --layout NHWC");
    assert_eq!(run(&p16, &c, 5), 1);
}

/// Ragged edges: M = 96 channels (a half tile) and N = 2·5·7 = 70 pixels (not a multiple of
/// 64): the TMA store clips what lies past the tensor.
#[test]
fn ragged_tiles_are_clipped_by_the_store() {
    let p = problem("convbfp16 -n 2 -c 64 -H 5 -W 7 -k 96 -y 1 -x 1 -F 1 --layout NHWC");
    assert_eq!(run(&p, &cfg(EP), 3), 1);
}

/// fwd 3×3 padded: B through the im2col map, three stages, two consumer warpgroups.
#[test]
fn fwd_3x3_im2col_and_two_consumer_warpgroups() {
    let p = problem("convbfp16 -n 2 -c 64 -H 6 -W 6 -k 128 -y 3 -x 3 -p 1 -q 1 -F 1 --layout NHWC");
    let c = with(&cfg(EP), |c| {
        c.block_m = 128;
        c.stages = 3;
    });
    assert_eq!(run(&p, &c, 2), 1);
}

/// Strided bwd-data (seed 003's shape, small). On an even width the GEMM's columns are the
/// image's column pairs exactly, so C is one dense matrix: the plain store map, bit-exact in the
/// emulator. On an odd width the last pair has a pixel past the image; the wrapped-row store
/// map for that faulted on the H200 (session 11), so legality refuses `ep=tma` with the reason.
#[test]
fn strided_bwd_data_stores_the_image_or_is_refused() {
    let p = problem("convbfp16 -n 2 -c 64 -H 2 -W 16 -k 64 -y 1 -x 2 -u 1 -v 2 -F 2 --layout NHWC");
    assert_eq!(run(&p, &cfg(EP), 2), 1);
    for line in [
        "convbfp16 -n 2 -c 64 -H 2 -W 17 -k 64 -y 1 -x 2 -u 1 -v 2 -F 2 --layout NHWC",
        "convbfp16 -n 2 -c 64 -H 1 -W 511 -k 64 -y 1 -x 2 -u 1 -v 2 -F 2 --layout NHWC",
    ] {
        let l = lower(&problem(line));
        let e = legality::check(&l, &cfg(EP), &Arch::SM_90).unwrap_err();
        assert!(e.to_string().contains("faulted"), "{line}: {e}");
    }
}

/// Strided bwd-data whose classes are sub-GEMMs of their own (3×3 filter, stride 2): one
/// launch, each phase's C a store map of its own, when legality allows it; padding makes the
/// columns leave below 0, which the rule refuses with its reason.
#[test]
fn strided_bwd_data_phases_or_a_reason() {
    let p = problem("convbfp16 -n 2 -c 64 -H 8 -W 8 -k 64 -y 3 -x 3 -u 2 -v 2 -F 2 --layout NHWC");
    let l = lower(&p);
    assert!(l.gemms.len() > 1);
    let c = cfg(EP);
    match legality::check(&l, &c, &Arch::SM_90) {
        Ok(_) => assert_eq!(run(&p, &c, 2), l.gemms.len()),
        Err(e) => assert!(e.to_string().contains("ep=tma"), "{e}"),
    }
}

/// Ping-pong consumers: each its own staging tile and its own bulk groups.
#[test]
fn ping_pong_consumers_stage_in_their_own_regions() {
    let p = problem("convbfp16 -n 4 -c 64 -H 8 -W 8 -k 128 -y 1 -x 1 -F 1 --layout NHWC");
    let c = with(&cfg(EP), |c| c.ld = LoadPath::WsPingPong);
    assert_eq!(run(&p, &c, 2), 1);
}

/// Groups: the store map's third dimension is the group.
#[test]
fn grouped_outputs_store_with_a_group_coordinate() {
    let p = problem("convbfp16 -n 2 -c 128 -H 4 -W 4 -k 128 -y 1 -x 1 -g 2 -F 1 --layout NHWC");
    assert_eq!(run(&p, &cfg(EP), 2), 1);
}

/// What the rule refuses, with its reason: split-K, pk=0, a C whose stride is not 16-byte
/// aligned, a tile line that is not whole 128-byte boxes.
#[test]
fn refusals_name_their_reason() {
    let p = problem("convbfp16 -n 4 -c 64 -H 8 -W 8 -k 128 -y 1 -x 1 -F 1 --layout NHWC");
    let l = lower(&p);
    let why = |c: &PerfConfig, l: &convtune::lowering::Lowering| {
        legality::check(l, c, &Arch::SM_90).unwrap_err().to_string()
    };
    let split = with(&cfg(EP), |c| c.split_k = 2);
    assert!(why(&split, &l).contains("split_k"), "{}", why(&split, &l));
    let tiled = with(&cfg(EP), |c| c.persistent = convtune::config::Grid::PerTile);
    assert!(why(&tiled, &l).contains("pk=1"), "{}", why(&tiled, &l));
    let odd = problem("convbfp16 -n 4 -c 64 -H 8 -W 8 -k 132 -y 1 -x 1 -F 1 --layout NHWC");
    let e = why(&with(&cfg(EP), |c| c.vec_c = 4), &lower(&odd));
    assert!(e.contains("ep"), "{e}");
}

/// Emulates `c` under `fault`; returns the violations' messages.
fn broken(fault: StoreFault, c: &PerfConfig, p: &ConvProblem) -> Vec<String> {
    let mut t = data(p, 3);
    let r = with_store_fault(fault, || {
        emu::emulate_conv(
            &lower(p),
            c,
            Target::of(Arch::SM_90.with_compute_units(1)),
            &mut t,
        )
    })
    .unwrap();
    assert!(r.violations > 0, "{fault:?}: not caught");
    r.messages
}

/// The staging tile rewritten while the previous unit's store may still read it (no
/// `wait_group.read`), and a store of generic writes with no proxy fence: both reported.
#[test]
fn a_missing_read_wait_or_proxy_fence_is_caught() {
    // One block walks all 8 units: every unit but the first rewrites a tile still pending.
    let p = problem("convbfp16 -n 4 -c 64 -H 8 -W 8 -k 128 -y 1 -x 1 -F 1 --layout NHWC");
    let c = cfg(EP);
    let m = broken(StoreFault::NoReadWait, &c, &p);
    assert!(m.iter().any(|m| m.contains("wait_group.read")), "{m:#?}");
    let m = broken(StoreFault::NoProxyFence, &c, &p);
    assert!(m.iter().any(|m| m.contains("fence.proxy.async")), "{m:#?}");
}

/// The production shapes the GPU runs: 256 × 96 and 256 × 128 tiles of two 128-row consumer
/// warpgroups, three or four stages (fwd 1×1 with ragged pixels, and a padded 3×3).
#[test]
fn production_tiles() {
    let big = with(&cfg(EP), |c| {
        c.block_m = 256;
        c.block_n = 96;
        c.warp_m = 128;
        c.warp_n = 96;
        c.stages = 4;
    });
    let p = problem("convbfp16 -n 2 -c 128 -H 7 -W 7 -k 512 -y 1 -x 1 -F 1 --layout NHWC");
    assert_eq!(run(&p, &big, 2), 1);
    let wide = with(&big, |c| {
        c.block_n = 128;
        c.warp_n = 128;
        c.stages = 3;
    });
    let p = problem("convbfp16 -n 2 -c 64 -H 9 -W 9 -k 128 -y 3 -x 3 -p 1 -q 1 -F 1 --layout NHWC");
    assert_eq!(run(&p, &wide, 2), 1);
}

/// Legality and the planner agree on `ep` over the Hopper space: each legal `ld=ws|wspp`,
/// `pk=1` config with `ep=tma` either plans (with no more shared memory than the arch has)
/// or both refuse it; seed 003 (refused: its columns run past the image) and a padded 3×3
/// forward.
#[test]
fn legality_and_the_planner_agree_on_ep_over_the_hopper_space() {
    use convtune::config::Grid;
    let space = hopper_space();
    let (mut planned, mut refused) = (0, 0);
    for line in [
        "convbfp16 -n 16 -c 2048 -H 1 -W 512 -k 2048 -y 1 -x 2 -u 1 -v 2 -F 2 --layout NHWC",
        "convbfp16 -n 16 -c 256 -H 14 -W 14 -k 256 -y 3 -x 3 -p 1 -q 1 -F 1 --layout NHWC",
    ] {
        let p = problem(line);
        let l = lower(&p);
        let e = convtune::space::enumerate_legal(&p, &Arch::SM_90, &space);
        let ws = e.legal.iter().filter(|c| {
            c.ld.warp_specialised()
                && c.persistent == Grid::Persistent
                && c.epilogue == Epilogue::Reg
        });
        for c in ws {
            let c = with(c, |c| c.epilogue = Epilogue::Tma);
            match planned_if_legal(&l, &c) {
                Some(kernels) => {
                    for k in kernels {
                        assert!(k.shared_bytes <= Arch::SM_90.smem_per_block, "{p} {c}");
                    }
                    planned += 1;
                }
                None => refused += 1,
            }
        }
    }
    assert!(
        planned > 50 && refused > 50,
        "{planned} planned, {refused} refused"
    );
}
