//! What the cost model ranks first over `search-spaces/nvidia-hopper.toml` for the suite's
//! short-K 1×1 layers, where cuDNN's sm_90 kernels win with tiles that fill whole H200 waves:
//! 128 × 192 for the 14×14 forward (256 × 12544: 2 × 66 = 132 tiles, one wave) and 256 × 96
//! for the 7×7 forward (2048 × 3136: 8 × 33 = 264 tiles, two waves). The model charges wave
//! quantisation (tiles over 132 SMs, rounded up), so those tiles must lead its ranking.

use convtune::arch::Arch;
use convtune::config::PerfConfig;
use convtune::lowering::lower;
use convtune::problem::{ConvProblem, DType};
use convtune::search::{CostArch, CostModel};
use convtune::space::{enumerate_legal, SearchSpace};

fn hopper() -> SearchSpace {
    SearchSpace::load(std::path::Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/search-spaces/nvidia-hopper.toml"
    )))
    .unwrap()
}

/// The legal configs of the Hopper space for `line`, best predicted first, with their
/// predictions (µs).
fn ranked(line: &str) -> Vec<(f64, PerfConfig)> {
    let p: ConvProblem = line.parse().unwrap();
    let l = lower(&p);
    let e = enumerate_legal(&p, &Arch::SM_90, &hopper());
    let model = CostModel::new(&l, CostArch::from_arch(&Arch::SM_90, DType::BF16));
    let mut r: Vec<(f64, PerfConfig)> = e
        .legal
        .iter()
        .map(|c| (model.estimate(c).time_us, *c))
        .collect();
    r.sort_by(|a, b| a.0.total_cmp(&b.0));
    r
}

/// The distinct tile shapes (bm, bn, wm, wn, split-K) in ranking order, each with its best
/// config: the guided search's first batch takes one config per shape in this order.
fn shapes(ranked: &[(f64, PerfConfig)]) -> Vec<PerfConfig> {
    let mut seen = std::collections::HashSet::new();
    ranked
        .iter()
        .filter(|(_, c)| seen.insert((c.block_m, c.block_n, c.warp_m, c.warp_n, c.split_k)))
        .map(|&(_, c)| c)
        .collect()
}

/// The position of the first shape with block tile `bm × bn` (0 = the model's favourite).
fn rank_of(shapes: &[PerfConfig], bm: u32, bn: u32) -> usize {
    shapes
        .iter()
        .position(|c| (c.block_m, c.block_n) == (bm, bn))
        .unwrap_or(usize::MAX)
}

const FWD_14X14: &str = "convbfp16 -n 64 -c 1024 -H 14 -W 14 -k 256 -y 1 -x 1 -F 1 --layout NHWC";
const FWD_7X7: &str = "convbfp16 -n 64 -c 512 -H 7 -W 7 -k 2048 -y 1 -x 1 -F 1 --layout NHWC";
const WGRAD_7X7: &str = "convbfp16 -n 64 -c 512 -H 7 -W 7 -k 2048 -y 1 -x 1 -F 4 --layout NHWC";

/// The model sees the waves: 128 × 192 fills one H200 wave exactly on the 14×14 forward,
/// 256 × 96 two on the 7×7 forward; the shipped 256 × 128 and 256 × 64 leave SMs idle.
#[test]
fn the_model_counts_wave_exact_tiles_as_full_waves() {
    let wave = |line: &str, c: &str| {
        let p: ConvProblem = line.parse().unwrap();
        let l = lower(&p);
        let e = CostModel::new(&l, CostArch::from_arch(&Arch::SM_90, DType::BF16))
            .estimate(&c.parse().unwrap());
        (e.blocks, e.wave_efficiency)
    };
    let cfg = |bm: u32, bn: u32, wm: u32, wn: u32| {
        format!(
            "v4:bm={bm},bn={bn},bk=64,wm={wm},wn={wn},st=4,va=8,vb=8,vc=8,lds=swz,sk=1,rs=1,\
             mma=wg,red=atomic,ld=ws,pk=1,xf=none"
        )
    };
    assert_eq!(wave(FWD_14X14, &cfg(128, 192, 64, 192)), (132, 1.0));
    assert_eq!(wave(FWD_7X7, &cfg(256, 96, 128, 96)), (264, 1.0));
    let (blocks, eff) = wave(FWD_14X14, &cfg(256, 128, 128, 128));
    assert_eq!(blocks, 98);
    assert!(eff < 0.75, "{eff}");
    let (blocks, eff) = wave(FWD_7X7, &cfg(256, 64, 128, 64));
    assert_eq!(blocks, 392);
    assert!(eff < 1.0, "{eff}");
}

/// 14×14 forward (M = 256, N = 12544, K = 1024): the model's favourite is cuDNN's tile.
#[test]
fn wave_exact_tiles_lead_for_the_14x14_forward() {
    let s = shapes(&ranked(FWD_14X14));
    assert_eq!(rank_of(&s, 128, 192), 0, "{}", s[0]);
}

/// 7×7 forward (M = 2048, N = 3136, K = 512): the model charges 256 × 96's 33 column tiles
/// more L2 re-reads of the filter than 256 × 128's 25 (whose last wave is 68 of 132 tiles), so
/// it ranks them close; 256 × 96 is in the first shapes, ahead of the shipped 256 × 64.
#[test]
fn wave_exact_tiles_are_proposed_early_for_the_7x7_forward() {
    let s = shapes(&ranked(FWD_7X7));
    let (wave, shipped) = (rank_of(&s, 256, 96), rank_of(&s, 256, 64));
    assert!(
        wave < 8 && wave < shipped,
        "256x96 {wave}, 256x64 {shipped}"
    );
}

/// 7×7 backward weight (M = 2048, N = 512, K = 3136: 49 K tiles): 64 × 128 (128 tiles, cuDNN's)
/// is in the first shapes, and with one consumer warpgroup the model takes a deep pipeline.
#[test]
fn small_tiles_take_deep_pipelines_for_the_7x7_backward_weight() {
    let s = shapes(&ranked(WGRAD_7X7));
    let r = rank_of(&s, 64, 128);
    assert!(r < 8, "64x128 at {r}");
    assert!(s[r].stages >= 7, "{}", s[r]);
}
