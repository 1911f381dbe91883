//! The GPU self-check: every generated kernel of a sweep against the reference kernel, the
//! reference kernel against the CPU f64 convolution, and fault isolation — what a user runs
//! after a hardware, driver or compiler change, and what `scripts/gpu-tests.sh` runs on the H200.

use crate::arch::Arch;
use crate::codegen;
use crate::config::{PerfConfig, Reduction};
use crate::legality;
use crate::lowering::lower;
use crate::problem::{ConvProblem, DType, Direction, Layout};
use crate::runtime::{Outcome, RuntimeError, Worker};
use crate::space::{sample_legal, SearchSpace};
use crate::tune::{compile_plan, reference_plan, target_for};
use std::fmt;

/// The problems of the sweep: every direction, dtype and layout over odd sizes, padding (also
/// larger than the filter), stride larger than the filter, dilation, groups, and both seeds'
/// shapes at reduced size.
pub fn sweep_problems() -> Vec<ConvProblem> {
    let shapes = [
        // Seed 000: 1x1 and 3x3 with pad 1 (padding ≥ filter), odd and even images.
        "-n 2 -c 32 -H 14 -W 14 -k 32 -y 1 -x 1 -p 1 -q 1",
        "-n 2 -c 32 -H 15 -W 15 -k 32 -y 3 -x 3 -p 1 -q 1",
        // Seed 003's spatial shape, stride and filter at reduced batch and channels.
        "-n 2 -c 64 -H 1 -W 512 -k 64 -y 1 -x 2 -u 1 -v 2",
        // Odd sizes, stride > filter, padding > filter, dilation.
        "-n 3 -c 24 -H 13 -W 11 -k 40 -y 2 -x 1 -p 3 -q 2 -u 3 -v 2",
        "-n 2 -c 16 -H 17 -W 9 -k 24 -y 3 -x 3 -p 2 -q 2 -l 2 -j 2",
        // Groups.
        "-n 2 -c 32 -H 9 -W 9 -k 64 -y 3 -x 3 -p 1 -q 1 -g 4",
    ];
    // Session 4's paths, in the directions that reach them (the sweep grows by half, not by
    // the full product): strided bwd-data in one launch (3×3 at stride 2, four phases; 5×5 at
    // stride 3, four sub-GEMMs of class runs, f32 on NCHW; dilation = stride, uncovered pixels zeroed by the
    // same launch), 1×1 at stride 2 (one phase and zeroing; strided 1×1 bwd-weight), and
    // several groups a GEMM batch (8 channels a group; depthwise).
    let focus: [(&str, &[usize]); 6] = [
        (
            "-n 2 -c 32 -H 15 -W 14 -k 48 -y 3 -x 3 -p 1 -q 1 -u 2 -v 2",
            &[2],
        ),
        (
            "-n 2 -c 16 -H 16 -W 17 -k 24 -y 5 -x 5 -p 2 -q 2 -u 3 -v 3",
            &[2],
        ),
        (
            "-n 2 -c 16 -H 13 -W 13 -k 16 -y 3 -x 3 -p 2 -q 2 -u 2 -v 2 -l 2 -j 2",
            &[2],
        ),
        ("-n 2 -c 64 -H 14 -W 14 -k 64 -y 1 -x 1 -u 2 -v 2", &[2, 4]),
        (
            "-n 2 -c 64 -H 10 -W 10 -k 64 -y 3 -x 3 -p 1 -q 1 -g 8",
            &[1, 2, 4],
        ),
        (
            "-n 2 -c 32 -H 10 -W 10 -k 32 -y 3 -x 3 -p 1 -q 1 -g 32",
            &[1, 2],
        ),
    ];
    let all: &[usize] = &[1, 2, 4];
    let shapes = shapes.iter().map(|&s| (s, all)).chain(focus);
    let mut out = Vec::new();
    for (i, (shape, dirs)) in shapes.enumerate() {
        for &dir in dirs {
            for (j, dtype) in ["conv", "convfp16", "convbfp16"].iter().enumerate() {
                // Alternate layouts so every (dtype, layout) pair appears.
                let layout = if (i + j + dir) % 2 == 0 {
                    "NHWC"
                } else {
                    "NCHW"
                };
                let line = format!("{dtype} {shape} -F {dir} --layout {layout}");
                if let Ok(p) = line.parse() {
                    out.push(p);
                }
            }
        }
    }
    out
}

/// What the self-check found.
#[derive(Debug, Default)]
pub struct Summary {
    /// Problems checked.
    pub problems: usize,
    /// Candidate kernels (plans) measured.
    pub kernels: usize,
    /// Candidates that verified.
    pub passed: usize,
    /// One line per candidate that did not verify (wrong result, fault, launch failure…).
    pub failures: Vec<String>,
    /// Problems whose reference kernel disagreed with the CPU (or could not be set up).
    pub reference_failures: Vec<String>,
    /// Whether a deliberately faulting kernel was recorded as a fault and the next candidate
    /// still measured.
    pub fault_isolated: Option<bool>,
}

impl Summary {
    /// Nothing failed.
    pub fn ok(&self) -> bool {
        self.failures.is_empty()
            && self.reference_failures.is_empty()
            && self.fault_isolated != Some(false)
    }
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for l in self.reference_failures.iter().chain(&self.failures) {
            writeln!(f, "FAIL {l}")?;
        }
        write!(
            f,
            "selfcheck: {} problems, {} kernels, {} verified, {} failed, {} reference failures, fault isolation {}",
            self.problems,
            self.kernels,
            self.passed,
            self.failures.len(),
            self.reference_failures.len(),
            match self.fault_isolated {
                Some(true) => "ok",
                Some(false) => "FAILED",
                None => "not run",
            }
        )
    }
}

/// Runs the sweep on a device: `configs` sampled legal configs per problem.
pub fn run(
    worker: &mut Worker,
    arch: &Arch,
    problems: &[ConvProblem],
    configs: usize,
    seed: u64,
    log: impl FnMut(&str),
) -> Result<Summary, RuntimeError> {
    let space = SearchSpace::default_for(arch);
    run_in(worker, arch, problems, &space, configs, seed, log)
}

/// `space` (the arch's default, or `selfcheck --space`) narrowed to configs that reduce with
/// `red`: split-K for `atomic` and `fixup`, `split_k = 1` for stream-K (what `selfcheck --red`
/// samples from, so that every sampled kernel exercises it).
pub fn split_k_space(mut space: SearchSpace, red: Reduction) -> SearchSpace {
    match red {
        Reduction::Stream => space.params.split_k = vec![1],
        _ => space.params.split_k.retain(|&s| s > 1),
    }
    space.params.red = vec![red];
    space
}

/// The problems `selfcheck --red` runs: the sweep's bwd-weight problems (the direction with
/// split-K), and for stream-K, whose schedule needs ≥ 8 K tiles per SM, a few of a few
/// thousand K steps or a few hundred tiles that the sweep's small ones do not reach.
pub fn reduction_problems(red: Reduction) -> Vec<ConvProblem> {
    let mut out: Vec<ConvProblem> = sweep_problems()
        .into_iter()
        .filter(|p| p.direction() == Direction::BwdWeight)
        .collect();
    if red == Reduction::Stream {
        for line in [
            "convbfp16 -n 8 -c 64 -H 32 -W 32 -k 96 -y 3 -x 3 -p 1 -q 1 -F 4 --layout NHWC",
            "conv -n 8 -c 96 -H 24 -W 24 -k 64 -y 1 -x 1 -F 4 --layout NCHW",
            "convfp16 -n 8 -c 64 -H 28 -W 28 -k 128 -y 3 -x 3 -p 1 -q 1 -u 2 -v 2 -F 4 --layout NHWC",
            // Issue 14's targets, where the Hopper space's 128-wide tiles apply: bwd-weight
            // (64 tiles of 128x128: plain stream-K) and fwd (400 tiles: two data-parallel
            // waves after the stream-K region).
            "convbfp16 -n 64 -c 512 -H 7 -W 7 -k 2048 -y 1 -x 1 -F 4 --layout NHWC",
            "convbfp16 -n 64 -c 512 -H 7 -W 7 -k 2048 -y 1 -x 1 -F 1 --layout NHWC",
        ] {
            out.push(line.parse().expect("static problem"));
        }
    }
    out
}

/// Kernels that once gave wrong results on a GPU although the emulator ran them exactly: a
/// toolkit miscompiled them. Every self-check measures them (where legal on the arch), so
/// that a code-generator change that brings back what triggered the fault, or a toolkit that
/// miscompiles it anew, fails here and not in a user's lookup answer.
///
/// - ptxas 13.0 at -O3 (and the driver's JIT) merged the `IMAD.HI`s of two B slots' bounds
///   checks whose 64-bit addends differed only in the high word, so one slot checked another
///   slot's row: these 8 of ~650 `mma=sync` candidates of this grouped problem were wrong by
///   5–36%, the same kernels assembled at -O0 right (session 24, BENCHMARKS: 7 of them still
///   fail with the old code generator at n = 64, 2 at n = 8). [`crate::codegen`]'s bounds
///   checks no longer add a quotient to a slot's coordinate.
pub const MISCOMPILED: &[(&str, &[&str])] = &[(
    "convbfp16 -F 1 -n 64 -c 1024 -H 7 -W 7 -k 2048 -y 7 -x 7 -p 3 -q 3 -g 1024 --layout NHWC",
    &[
        "v1:bm=16,bn=256,bk=64,wm=16,wn=128,st=2,va=1,vb=8,vc=8,lds=swz,sk=1,rs=1",
        "v1:bm=16,bn=256,bk=64,wm=16,wn=64,st=3,va=1,vb=8,vc=8,lds=pad,sk=1,rs=1",
        "v1:bm=16,bn=256,bk=16,wm=16,wn=64,st=4,va=1,vb=8,vc=8,lds=pad,sk=1,rs=1",
        "v1:bm=16,bn=256,bk=16,wm=16,wn=64,st=3,va=1,vb=8,vc=8,lds=pad,sk=1,rs=1",
        "v1:bm=16,bn=256,bk=16,wm=16,wn=64,st=2,va=1,vb=8,vc=8,lds=swz,sk=1,rs=1",
        "v1:bm=16,bn=128,bk=16,wm=16,wn=128,st=4,va=1,vb=8,vc=1,lds=swz,sk=1,rs=1",
        "v1:bm=16,bn=128,bk=64,wm=16,wn=32,st=3,va=1,vb=8,vc=1,lds=swz,sk=1,rs=1",
        "v1:bm=16,bn=128,bk=64,wm=16,wn=64,st=3,va=1,vb=8,vc=8,lds=pad,sk=1,rs=1",
    ],
)];

/// The [`MISCOMPILED`] kernels that are legal on `arch`: `(problem, configs)`.
pub fn miscompiled(arch: &Arch) -> Vec<(ConvProblem, Vec<PerfConfig>)> {
    MISCOMPILED
        .iter()
        .map(|(line, cfgs)| {
            let p: ConvProblem = line.parse().expect("static problem");
            let l = lower(&p);
            let cfgs = cfgs
                .iter()
                .map(|c| c.parse::<PerfConfig>().expect("static config"))
                .filter(|c| legality::check(&l, c, arch).is_ok())
                .collect();
            (p, cfgs)
        })
        .collect()
}

/// [`run`] with configs sampled from `space`, then the [`MISCOMPILED`] kernels.
pub fn run_in(
    worker: &mut Worker,
    arch: &Arch,
    problems: &[ConvProblem],
    space: &SearchSpace,
    configs: usize,
    seed: u64,
    mut log: impl FnMut(&str),
) -> Result<Summary, RuntimeError> {
    let mut s = Summary::default();
    let sampled = problems
        .iter()
        .map(|p| (*p, sample_legal(p, arch, space, configs, seed)));
    for (p, cfgs) in sampled.chain(miscompiled(arch)) {
        check_problem(worker, arch, &p, &cfgs, seed, &mut s, &mut log)?;
    }
    Ok(s)
}

/// Measures `cfgs` on `p` against the reference kernel, adding to `s`.
fn check_problem(
    worker: &mut Worker,
    arch: &Arch,
    p: &ConvProblem,
    cfgs: &[PerfConfig],
    seed: u64,
    s: &mut Summary,
    log: &mut impl FnMut(&str),
) -> Result<(), RuntimeError> {
    if cfgs.is_empty() {
        return Ok(());
    }
    s.problems += 1;
    let reference = match reference_plan(p, arch) {
        Ok(r) => r,
        Err(e) => {
            s.reference_failures
                .push(format!("{p}: reference kernel: {e}"));
            return Ok(());
        }
    };
    if let Err(e) = worker.set_problem(p, &reference, seed) {
        s.reference_failures.push(format!("{p}: {e}"));
        return Ok(());
    }
    let l = lower(p);
    for cfg in cfgs {
        s.kernels += 1;
        let outcome = match compile_plan(&l, cfg, arch, false) {
            Ok(plan) => worker.measure(&plan)?,
            Err(e) => Outcome::CompileFailed(e.to_string()),
        };
        match outcome {
            Outcome::Ok(_) => s.passed += 1,
            other => {
                let line = format!("{p} {cfg}: {other}");
                log(&line);
                s.failures.push(line);
            }
        }
    }
    log(&format!(
        "{}: {} kernels so far, {} failed",
        p.key(),
        s.kernels,
        s.failures.len()
    ));
    Ok(())
}

/// Proves fault isolation: a kernel that writes far out of bounds is recorded as a fault, and
/// the next (good) candidate still verifies.
pub fn fault_isolation(worker: &mut Worker, arch: &Arch, seed: u64) -> Result<bool, RuntimeError> {
    let p: ConvProblem = "conv -n 2 -c 16 -H 8 -W 8 -k 16 -y 3 -x 3 -p 1 -q 1 -F 1"
        .parse()
        .expect("static problem");
    let l = lower(&p);
    let cfg = sample_legal(&p, arch, &SearchSpace::default_for(arch), 1, seed)[0];
    let (Ok(reference), Ok(good), Ok(bad)) = (
        reference_plan(&p, arch),
        compile_plan(&l, &cfg, arch, false),
        compile_plan(&l, &cfg, arch, true),
    ) else {
        return Ok(false);
    };
    worker.set_problem(&p, &reference, seed)?;
    let faulted = matches!(
        worker.measure(&bad)?,
        Outcome::Fault(_) | Outcome::LaunchFailed(_)
    );
    let recovered = matches!(worker.measure(&good)?, Outcome::Ok(_));
    Ok(faulted && recovered)
}

/// Compiles the sweep for a target without a GPU (CI): every kernel passes LLVM's verifier and
/// emits; returns (kernels compiled, failures).
pub fn compile_sweep(arch: &Arch, configs: usize, seed: u64) -> (usize, Vec<String>) {
    let space = SearchSpace::default_for(arch);
    let target = target_for(arch);
    let mut n = 0;
    let mut failures = Vec::new();
    for p in sweep_problems() {
        let l = lower(&p);
        for cfg in sample_legal(&p, arch, &space, configs, seed) {
            n += 1;
            if let Err(e) = codegen::compile_conv(&l, &cfg, target) {
                failures.push(format!("{p} {cfg}: {e}"));
            }
        }
    }
    (n, failures)
}

/// Every sweep problem is a valid problem of the kind it claims (guards the sweep itself).
pub fn sweep_covers_everything() -> bool {
    let ps = sweep_problems();
    let dirs = [Direction::Fwd, Direction::BwdData, Direction::BwdWeight];
    let dtypes = [DType::F32, DType::F16, DType::BF16];
    dirs.iter().all(|d| ps.iter().any(|p| p.direction() == *d))
        && dtypes.iter().all(|t| ps.iter().any(|p| p.dtype() == *t))
        && [Layout::NGCHW, Layout::NHWGC].iter().all(|l| {
            ps.iter()
                .any(|p| p.layout(crate::problem::Tensor::Input) == *l)
        })
}

#[cfg(test)]
mod tests {
    #[test]
    fn sweep_has_every_direction_dtype_and_layout() {
        assert!(super::sweep_covers_everything());
        assert!(super::sweep_problems().len() >= 50);
    }

    /// A miscompiled kernel that legality stopped accepting would drop out of every
    /// self-check silently.
    #[test]
    fn every_miscompiled_kernel_is_still_checked_on_hopper() {
        let listed: usize = super::MISCOMPILED.iter().map(|(_, c)| c.len()).sum();
        let legal: usize = super::miscompiled(&crate::arch::Arch::SM_90)
            .iter()
            .map(|(_, c)| c.len())
            .sum();
        assert_eq!(legal, listed);
    }
}
