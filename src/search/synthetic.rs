//! Synthetic recordings: structured stand-ins for exhaustive GPU runs, so that replay, the
//! efficiency report, the plot and the quick list can be built and tested before real recordings
//! exist. **They measure nothing**: every recording made here carries `synthetic: true`, and no
//! efficiency figure from one may be reported as a strategy's real efficiency.
//!
//! To keep them from flattering the guided strategy (whose cost model generated them), the
//! "true" time is the model run with *different* machine numbers, times effects the model does
//! not know: per-field-value factors, interactions between fields the strategy does not fit, a
//! fixed per-config roughness, measurement noise, and failures (random, and whole regions that
//! fail the way register-hungry or miscompiling configs do).

use super::cost::{CostArch, CostModel};
use super::recording::{RecordedCandidate, Recording};
use super::rng::SplitMix64;
use crate::arch::Arch;
use crate::config::{Field, PerfConfig};
use crate::lowering::lower;
use crate::problem::ConvProblem;
use crate::space::{enumerate_legal, SearchSpace};

/// How far a synthetic GPU departs from the cost model.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SyntheticSpec {
    /// Seed of every hidden effect and noise draw.
    pub seed: u64,
    /// σ of the per-field-value log factors.
    pub field_sigma: f64,
    /// σ of the log factors of field pairs the guided strategy does not model.
    pub pair_sigma: f64,
    /// σ of a fixed per-config log factor (roughness the lattice cannot predict).
    pub rough_sigma: f64,
    /// σ of log measurement noise.
    pub noise_sigma: f64,
    /// Probability that any one candidate fails.
    pub fail_rate: f64,
}

impl Default for SyntheticSpec {
    fn default() -> Self {
        SyntheticSpec {
            seed: 1,
            field_sigma: 0.08,
            pair_sigma: 0.06,
            rough_sigma: 0.06,
            noise_sigma: 0.02,
            fail_rate: 0.02,
        }
    }
}

/// A reduced search space for synthetic recordings: the default spaces hold 10^5 legal
/// configs per problem, too many to replay quickly in debug-mode tests. This one keeps every
/// knob but fewer values (a few thousand legal configs), vendor-neutral.
pub const REPLAY_SPACE: &str = r#"
name = "synthetic-replay"

[params]
block_m = [32, 64, 128, 256]
block_n = [32, 64, 128, 256]
block_k = [32, 64]
warp_m = [32, 64]
warp_n = [32, 64]
stages = [2, 3, 4]
vec_a = [1, 8]
vec_b = [1, 8]
vec_c = [1, 8]
lds = ["pad", "swz"]
split_k = [1, 4]
raster = [1, 8]

[constraints]
max_threads = 512
min_warps = 1
max_warps = 8
"#;

/// The legal candidates of `problem` on `arch` in [`REPLAY_SPACE`], in enumeration order: what
/// an exhaustive run over that space would have measured.
pub fn candidates(problem: &ConvProblem, arch: &Arch) -> Vec<PerfConfig> {
    match SearchSpace::from_toml(REPLAY_SPACE, "<synthetic replay space>") {
        Ok(space) => enumerate_legal(problem, arch, &space).legal,
        Err(_) => Vec::new(),
    }
}

/// A reproducible normal draw for a hashed key.
fn hidden(seed: u64, key: &[u64]) -> f64 {
    let mut h = seed ^ 0xD1B5_4A32_D192_ED03;
    for &k in key {
        h = SplitMix64::new(h ^ k.wrapping_mul(0x9E37_79B9_7F4A_7C15)).next_u64();
    }
    SplitMix64::new(h).normal()
}

/// Pairs of fields whose interaction the synthetic GPU has and the guided strategy does not fit.
const HIDDEN_PAIRS: [(Field, Field); 4] = [
    (Field::BlockK, Field::VecA),
    (Field::WarpN, Field::Stages),
    (Field::SplitK, Field::Raster),
    (Field::BlockM, Field::Lds),
];

/// A synthetic recording of `problem` on `arch` over `candidates` (see the module docs).
pub fn recording(
    problem: &ConvProblem,
    arch: &Arch,
    candidates: &[PerfConfig],
    spec: &SyntheticSpec,
) -> Recording {
    let lowering = lower(problem);
    let dtype = problem.dtype();
    let model = CostArch::from_arch(arch, dtype);
    // The "real" GPU: slower DRAM, faster L2, a lower math peak and dearer launches than the
    // model believes.
    let truth_arch = CostArch {
        peak_tflops: model.peak_tflops * 0.85,
        dram_tbps: model.dram_tbps * 0.75,
        l2_tbps: model.l2_tbps * 1.3,
        launch_us: model.launch_us * 1.6,
        ..model
    };
    let truth = CostModel::new(&lowering, truth_arch);
    let mut noise = SplitMix64::new(spec.seed ^ 0x5851_F42D_4C95_7F2D);
    let s = spec.seed;
    let candidates = candidates
        .iter()
        .map(|c| {
            // Keys hash each field's index in declaration order and its code.
            let f = c.codes();
            let base = truth.estimate(c).time_us;
            let mut log = 0.0;
            for (field, &v) in f.iter() {
                log += spec.field_sigma * hidden(s, &[1, field as u64, u64::from(v)]);
            }
            for (a, b) in HIDDEN_PAIRS {
                log += spec.pair_sigma
                    * hidden(
                        s,
                        &[2, a as u64, b as u64, u64::from(f[a]), u64::from(f[b])],
                    );
            }
            log += spec.rough_sigma * hidden(s, &f.as_array().map(u64::from));
            log += spec.noise_sigma * noise.normal();
            // Regions that fail: the largest tiles with the deepest pipelines (register
            // pressure), and one (bk, vb) pair chosen by the seed (a miscompiling width).
            let bad_pair = hidden(
                s,
                &[3, u64::from(f[Field::BlockK]), u64::from(f[Field::VecB])],
            ) > 1.6;
            let hungry = c.block_m * c.block_n >= 256 * 128 && c.stages == 4;
            let fails =
                !base.is_finite() || bad_pair || hungry || noise.next_f64() < spec.fail_rate;
            RecordedCandidate {
                config: c.to_string(),
                time_us: (!fails).then(|| base * log.exp()),
            }
        })
        .collect();
    Recording {
        problem: problem.key(),
        arch: arch.name.to_string(),
        device: format!(
            "synthetic (cost model with hidden effects and noise, seed {})",
            spec.seed
        ),
        synthetic: true,
        candidates,
    }
}

/// Synthetic recordings of a few representative problems (ResNet-50 layers in three directions,
/// a small f32 problem, a grouped f16 one) on `arch`, for tests and demonstrations.
pub fn suite(arch: &Arch, seed: u64) -> Vec<Recording> {
    suite_with(
        arch,
        &SyntheticSpec {
            seed,
            ..SyntheticSpec::default()
        },
    )
}

/// [`suite`] with every departure from the model set by `spec` (each problem gets its own seed
/// derived from `spec.seed`).
pub fn suite_with(arch: &Arch, spec: &SyntheticSpec) -> Vec<Recording> {
    const PROBLEMS: [&str; 6] = [
        "convbfp16 -n 64 -c 256 -H 28 -W 28 -k 256 -y 3 -x 3 -p 1 -q 1 -F 1 --layout NHWC",
        "convbfp16 -n 64 -c 1024 -H 14 -W 14 -k 256 -y 1 -x 1 -F 2 --layout NHWC",
        "convbfp16 -n 64 -c 64 -H 56 -W 56 -k 64 -y 3 -x 3 -p 1 -q 1 -F 4 --layout NHWC",
        "convbfp16 -n 16 -c 2048 -H 1 -W 512 -k 2048 -y 1 -x 2 -u 1 -v 2 -F 2 --layout NHWC",
        "conv -n 32 -c 32 -H 14 -W 14 -k 32 -y 3 -x 3 -p 1 -q 1 -F 2",
        "convfp16 -n 32 -c 256 -H 28 -W 28 -k 256 -y 3 -x 3 -p 1 -q 1 -g 8 -F 1",
    ];
    PROBLEMS
        .iter()
        .enumerate()
        .filter_map(|(i, line)| {
            let p: ConvProblem = line.parse().ok()?;
            let cands = candidates(&p, arch);
            let spec = SyntheticSpec {
                seed: spec.seed.wrapping_add(i as u64 * 7919),
                ..*spec
            };
            Some(recording(&p, arch, &cands, &spec))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::problem::DType;

    #[test]
    fn synthetic_recordings_are_labelled_structured_and_reproducible() {
        let a = CostArch::from_arch(&Arch::SM_90, DType::BF16);
        let p: ConvProblem =
            "convbfp16 -n 64 -c 256 -H 28 -W 28 -k 256 -y 3 -x 3 -p 1 -q 1 -F 1 --layout NHWC"
                .parse()
                .unwrap();
        assert!(SearchSpace::from_toml(REPLAY_SPACE, "test").is_ok());
        let cands = candidates(&p, &Arch::SM_90);
        assert!((500..20_000).contains(&cands.len()), "{}", cands.len());
        let spec = SyntheticSpec::default();
        let r = recording(&p, &Arch::SM_90, &cands, &spec);
        assert!(r.synthetic && r.device.starts_with("synthetic"));
        assert_eq!(r, recording(&p, &Arch::SM_90, &cands, &spec));
        let prepared = r.prepare().unwrap();
        let failed = prepared.times.iter().filter(|t| t.is_none()).count();
        assert!(failed > 0 && failed < cands.len() / 3, "{failed}");
        // Structured: the times spread over more than an order of magnitude, and the model's
        // top tenth holds faster configs on average than its bottom tenth.
        let ok: Vec<f64> = prepared.times.iter().flatten().copied().collect();
        let (lo, hi) = ok
            .iter()
            .fold((f64::MAX, 0.0f64), |(l, h), &t| (l.min(t), h.max(t)));
        assert!(hi / lo > 10.0, "{lo} {hi}");
        let l = lower(&p);
        let model = CostModel::new(&l, a);
        let mut by_model: Vec<(f64, Option<f64>)> = cands
            .iter()
            .zip(&prepared.times)
            .map(|(c, &t)| (model.estimate(c).time_us, t))
            .collect();
        by_model.sort_by(|x, y| x.0.total_cmp(&y.0));
        let mean = |s: &[(f64, Option<f64>)]| {
            let v: Vec<f64> = s.iter().filter_map(|x| x.1).collect();
            v.iter().sum::<f64>() / v.len() as f64
        };
        let tenth = by_model.len() / 10;
        assert!(mean(&by_model[..tenth]) < mean(&by_model[by_model.len() - tenth..]));
        let other = recording(&p, &Arch::SM_90, &cands, &SyntheticSpec { seed: 2, ..spec });
        assert_ne!(r.candidates, other.candidates);
    }
}
