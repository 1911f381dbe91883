//! Helpers shared by the emulator-based test binaries (codegen, wgmma): problems and configs from
//! strings, exact test data, and the bit-exact comparison with the direct convolution.
#![allow(dead_code)]

use convtune::problem::{ConvProblem, DType, Tensor};
use rand::{rngs::StdRng, Rng, SeedableRng};

pub fn problem(line: &str) -> ConvProblem {
    line.parse().unwrap_or_else(|e| panic!("{line}: {e}"))
}

pub fn cfg(s: &str) -> convtune::config::PerfConfig {
    s.parse().unwrap_or_else(|e| panic!("{s}: {e}"))
}

/// Tensors of multiples of 1/8 in [-2, 2]: exact in every dtype, products and sums exact in f32.
pub fn data(p: &ConvProblem, seed: u64) -> [Vec<f64>; 3] {
    let mut rng = StdRng::seed_from_u64(seed);
    Tensor::ALL.map(|t| {
        (0..p.tensor_elems(t))
            .map(|_| rng.gen_range(-16i32..=16) as f64 / 8.0)
            .collect()
    })
}

/// The reference value as the kernel's output type stores it.
pub fn round(dt: DType, v: f64) -> f64 {
    match dt {
        DType::F32 => v as f32 as f64,
        DType::F16 => half::f16::from_f64(v).to_f64(),
        DType::BF16 => half::bf16::from_f64(v).to_f64(),
    }
}

/// Indices where the kernel's output differs bit for bit from the rounded reference (±0 equal).
pub fn mismatches(p: &ConvProblem, got: &[f64], want: &[f64]) -> Vec<usize> {
    got.iter()
        .zip(want)
        .enumerate()
        .filter(|(_, (g, w))| {
            let w = round(p.dtype(), **w);
            g.to_bits() != w.to_bits() && !(**g == 0.0 && w == 0.0)
        })
        .map(|(i, _)| i)
        .collect()
}

/// Emulates `c` for `p` on `like` with exact test data (`seed`) and, when it runs, demands no
/// out-of-bounds or misaligned access and a result bit-identical to the direct convolution.
/// A config codegen refuses comes back as the error (callers decide whether that is expected).
pub fn emulate_exact(
    p: &ConvProblem,
    c: &convtune::config::PerfConfig,
    like: convtune::codegen::Target,
    seed: u64,
) -> Result<convtune::codegen::emu::EmuReport, convtune::codegen::CodegenError> {
    let mut t = data(p, seed);
    let want = convtune::reference::direct_conv(p, &t[0], &t[1], &t[2]);
    let rep = convtune::codegen::emu::emulate_conv(&convtune::lowering::lower(p), c, like, &mut t)?;
    assert_eq!(rep.violations, 0, "{p}\n{c} on {like}: {:#?}", rep.messages);
    let w = p.direction().written() as usize;
    let bad = mismatches(p, &t[w], &want);
    if let Some(&i) = bad.first() {
        panic!(
            "{p}\n{c} on {like}: element {i} is {}, want {} ({} of {} differ)",
            t[w][i],
            want[i],
            bad.len(),
            want.len()
        );
    }
    Ok(rep)
}

/// Emulates one candidate bit-exactly (see [`emulate_exact`]) on a target like `arch`:
/// `Some(report)` when it ran, `None` when codegen refused it with a config reason. Legality
/// must agree either way: a kernel codegen runs must be legal, and one it refuses illegal.
pub fn emulate_where_legal(
    p: &ConvProblem,
    c: &convtune::config::PerfConfig,
    arch: convtune::arch::Arch,
    seed: u64,
) -> Option<convtune::codegen::emu::EmuReport> {
    let legal = convtune::legality::check(&convtune::lowering::lower(p), c, &arch);
    match emulate_exact(p, c, convtune::codegen::Target::of(arch), seed) {
        Ok(r) => {
            assert!(
                legal.is_ok(),
                "{p} {c}: codegen ran what legality refuses: {legal:?}"
            );
            Some(r)
        }
        Err(convtune::codegen::CodegenError::Config { reason, .. }) => {
            assert!(
                legal.is_err(),
                "{p} {c}: legal, but codegen refused: {reason}"
            );
            None
        }
        Err(e) => panic!("{p} {c}: {e}"),
    }
}

/// `search-spaces/nvidia-hopper.toml`: the re-tuning space (and `selfcheck --space`'s), which
/// the planner/legality agreement tests walk.
pub fn hopper_space() -> convtune::space::SearchSpace {
    convtune::space::SearchSpace::load(std::path::Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/search-spaces/nvidia-hopper.toml"
    )))
    .unwrap()
}

/// Legality and the planner on one config for the H200: the kernels when both accept `c`,
/// `None` when both refuse it; a disagreement fails the test with the other side's reason.
pub fn planned_if_legal(
    l: &convtune::lowering::Lowering,
    c: &convtune::config::PerfConfig,
) -> Option<Vec<convtune::codegen::Kernel>> {
    use convtune::arch::Arch;
    let p = &l.problem;
    let legal = convtune::legality::check(l, c, &Arch::SM_90);
    match convtune::codegen::launches(l, c, convtune::codegen::Target::of(Arch::SM_90)) {
        Ok(convtune::codegen::Planned { kernels, .. }) => {
            assert!(legal.is_ok(), "{p} {c}: planned, but {legal:?}");
            Some(kernels)
        }
        Err(err) => {
            assert!(legal.is_err(), "{p} {c}: legal, but {err}");
            None
        }
    }
}

/// Plans `c` and checks its split-K counters sit in the workspace's kept-zero region: the one
/// GEMM launch (no clearing launch), the region asked of the caller, and `partials` f32
/// bytes after it. Returns the GEMM kernel.
#[allow(dead_code)]
pub fn assert_kept_counters(
    l: &convtune::lowering::Lowering,
    c: &convtune::config::PerfConfig,
    like: convtune::codegen::Target,
    partials: u64,
) -> convtune::codegen::Kernel {
    use convtune::abi::KEPT_ZERO_BYTES;
    let planned = convtune::codegen::launches(l, c, like).unwrap();
    assert_eq!(planned.workspace_bytes, KEPT_ZERO_BYTES + partials, "{c}");
    assert_eq!(planned.kept_zero, KEPT_ZERO_BYTES, "{c}");
    assert_eq!(planned.kernels.len(), 1, "{c}: {:?}", planned.kernels);
    planned.kernels.into_iter().next().unwrap()
}
