//! What the cost model ranks first over `search-spaces/nvidia-hopper.toml` for the suite's
//! short-K 1×1 layers, where cuDNN's sm_90 kernels win with tiles that fill whole H200 waves:
//! 128 × 192 for the 14×14 forward (256 × 12544: 2 × 66 = 132 tiles, one wave) and 256 × 96
//! for the 7×7 forward (2048 × 3136: 8 × 33 = 264 tiles, two waves). The model charges wave
//! quantisation (tiles over 132 SMs, rounded up), so those tiles must lead its ranking.

use convtune::arch::Arch;
use convtune::config::{LoadPath, PerfConfig};
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

/// 14×14 forward (M = 256, N = 12544, K = 1024): the one-wave tiles lead, cuDNN's 128 × 192
/// (2 × 66 = 132 tiles) first, and 256 × 96 (131; the H200's fastest of ours) in the first few
/// shapes (a shape is bm, bn, wm, wn and split-K: 128 × 192 has three warpgroup tilings).
#[test]
fn wave_exact_tiles_lead_for_the_14x14_forward() {
    let s = shapes(&ranked(FWD_14X14));
    let (cudnn, ours) = (rank_of(&s, 128, 192), rank_of(&s, 256, 96));
    assert!(
        cudnn == 0 && ours < 6,
        "128x192 at {cudnn}, 256x96 at {ours}"
    );
}

/// 7×7 forward (M = 2048, N = 3136, K = 512): 256 × 96 (two full waves) leads, though it
/// re-reads the filter more than 256 × 128 (1.5 waves): a partial wave leaves SMs' bandwidth
/// unused as well as their tensor cores.
#[test]
fn wave_exact_tiles_lead_for_the_7x7_forward() {
    let s = shapes(&ranked(FWD_7X7));
    assert_eq!(rank_of(&s, 256, 96), 0, "{}", s[0]);
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

/// Per tile shape, the best of an exhaustive H200 run (2026-12-02, `scripts/session9/shortk.sh`;
/// every candidate verified): (bm, bn, wm, wn, ping-pong, stages, raster, µs).
type Measured = (u32, u32, u32, u32, bool, u32, u32, f64);
const MEASURED_F14: [Measured; 6] = [
    (256, 96, 128, 96, false, 5, 1, 16.90),
    (128, 192, 64, 192, false, 5, 1, 17.90),
    (256, 128, 128, 128, false, 4, 1, 18.98),
    (128, 96, 64, 96, false, 5, 1, 19.97),
    (128, 128, 64, 128, false, 5, 1, 21.68),
    (128, 256, 128, 128, false, 4, 1, 24.93),
];
const MEASURED_F7: [Measured; 8] = [
    (256, 96, 128, 96, false, 4, 1, 16.78),
    (128, 96, 64, 96, false, 5, 8, 17.18),
    (256, 64, 128, 64, false, 4, 1, 17.31),
    (128, 64, 64, 64, false, 8, 8, 17.82),
    (128, 128, 64, 128, false, 4, 8, 19.39),
    (256, 128, 128, 128, false, 4, 1, 19.65),
    (128, 192, 64, 192, false, 4, 8, 20.86),
    (128, 128, 128, 128, false, 4, 8, 21.57),
];
const MEASURED_W7: [Measured; 8] = [
    (64, 128, 64, 64, false, 8, 1, 17.36),
    (128, 64, 128, 64, false, 8, 1, 18.10),
    (64, 128, 64, 128, true, 8, 1, 19.01),
    (64, 192, 64, 64, false, 5, 1, 20.50),
    (128, 128, 64, 128, false, 5, 1, 21.38),
    (64, 64, 64, 64, false, 8, 1, 22.72),
    (128, 128, 128, 128, false, 4, 1, 24.58),
    (128, 192, 64, 192, false, 4, 1, 27.94),
];

/// Ranks (0 = smallest) of `xs`.
fn ranks(xs: &[f64]) -> Vec<f64> {
    let mut ix: Vec<usize> = (0..xs.len()).collect();
    ix.sort_by(|&a, &b| xs[a].total_cmp(&xs[b]));
    let mut r = vec![0.0; xs.len()];
    for (k, &i) in ix.iter().enumerate() {
        r[i] = k as f64;
    }
    r
}

/// The model's pick among the measured shapes is within `slack` of the fastest measured, and
/// its order agrees with the measured one (Spearman's ρ above `min_rho`).
fn agrees(line: &str, measured: &[Measured], slack: f64, min_rho: f64) {
    let p: ConvProblem = line.parse().unwrap();
    let l = lower(&p);
    let model = CostModel::new(&l, CostArch::from_arch(&Arch::SM_90, DType::BF16));
    let predicted: Vec<f64> = measured
        .iter()
        .map(|&(bm, bn, wm, wn, pp, st, rs, _)| {
            let c: PerfConfig = format!(
                "v4:bm={bm},bn={bn},bk=64,wm={wm},wn={wn},st={st},va=8,vb=8,vc=8,lds=swz,sk=1,\
                 rs={rs},mma=wg,red=atomic,ld=ws,pk=1,xf=none"
            )
            .parse()
            .unwrap();
            let ld = if pp {
                LoadPath::WsPingPong
            } else {
                LoadPath::Ws
            };
            model.estimate(&PerfConfig { ld, ..c }).time_us
        })
        .collect();
    let times: Vec<f64> = measured.iter().map(|m| m.7).collect();
    let (rm, rp) = (ranks(&times), ranks(&predicted));
    let n = times.len() as f64;
    let d2: f64 = rm.iter().zip(&rp).map(|(a, b)| (a - b) * (a - b)).sum();
    let rho = 1.0 - 6.0 * d2 / (n * (n * n - 1.0));
    let pick = rp.iter().position(|&r| r == 0.0).unwrap();
    assert!(
        times[pick] <= slack * times[0] && rho > min_rho,
        "{line}: the model picks {:?} ({} µs), ρ = {rho:.2}; predicted {predicted:.1?}",
        measured[pick],
        times[pick]
    );
}

/// The model against the H200 on the three layers: its pick is the measured fastest shape
/// (7×7 forward), or within 6% (14×14 forward: it prefers 128 × 192 to 256 × 96) and 10% (7×7
/// backward weight), and its order correlates with the measured one.
#[test]
fn the_model_agrees_with_the_h200_on_the_short_k_layers() {
    agrees(FWD_14X14, &MEASURED_F14, 1.06, 0.5);
    agrees(FWD_7X7, &MEASURED_F7, 1.0, 0.5);
    agrees(WGRAD_7X7, &MEASURED_W7, 1.1, 0.5);
}
