//! `convtune selfcheck`: every generated kernel of a sweep verified on this machine's GPU.

use super::{bad_input, no_gpu};
use anyhow::anyhow;
use convtune::arch::Arch;
use convtune::config::Reduction;
use convtune::problem::{read_problem_file, Direction};
use convtune::runtime::{cuda_devices, Worker};
use convtune::selfcheck;
use convtune::space::SearchSpace;

/// Arguments of `convtune selfcheck`.
#[derive(clap::Args)]
pub struct SelfcheckArgs {
    /// GPU ordinal.
    #[arg(long, default_value_t = 0)]
    device: usize,
    /// Sampled legal configs per sweep problem.
    #[arg(long, default_value_t = 4)]
    configs: usize,
    /// Seed for sampling configs and for the random inputs.
    #[arg(long, default_value_t = 7)]
    seed: u64,
    /// Check only kernels with this split-K reduction (`atomic`, `fixup` or `stream`), on the
    /// sweep's bwd-weight problems (and, for stream-K, a few with a longer K or more tiles).
    #[arg(long)]
    red: Option<String>,
    /// Check the problems of this file (one a line, `#` comments) instead of the built-in
    /// sweep.
    #[arg(long)]
    problems: Option<std::path::PathBuf>,
    /// Sample the configs from this search-space file instead of the built-in space (with
    /// `--red`, narrowed to that reduction): how a new knob's kernels get checked, e.g.
    /// `search-spaces/nvidia-hopper.toml` for the wgmma load paths.
    #[arg(long)]
    space: Option<std::path::PathBuf>,
}

/// Runs the sweep and the fault-isolation check; fails when anything did not verify.
pub fn run(args: SelfcheckArgs) -> anyhow::Result<()> {
    let devices = cuda_devices().map_err(no_gpu)?;
    let dev = devices
        .get(args.device)
        .ok_or_else(|| bad_input(anyhow!("--device {}: no such GPU", args.device)))?;
    let arch = Arch::from_name(&dev.fingerprint().arch).map_err(bad_input)?;
    errln!("selfcheck on {}", dev.fingerprint());
    let red = match &args.red {
        Some(name) => Some(
            Reduction::ALL
                .into_iter()
                .find(|r| r.name() == name)
                .ok_or_else(|| {
                    bad_input(anyhow!(
                        "--red {name}: expected one of {:?}",
                        Reduction::NAMES
                    ))
                })?,
        ),
        None => None,
    };
    let base = match &args.space {
        Some(path) => {
            let s = SearchSpace::load(path).map_err(bad_input)?;
            s.check_vendor(&arch, &path.display().to_string())
                .map_err(bad_input)?;
            s
        }
        None => SearchSpace::default_for(&arch),
    };
    let mut worker = Worker::spawn(args.device)?;
    let (mut problems, space) = match red {
        Some(r) => (
            selfcheck::reduction_problems(r),
            selfcheck::split_k_space(base, r),
        ),
        None => (selfcheck::sweep_problems(), base),
    };
    if let Some(path) = &args.problems {
        problems = read_problem_file(path).map_err(bad_input)?;
        if red.is_some_and(|r| r != Reduction::Stream) {
            // Only bwd-weight has split-K (stream-K splits any direction's K).
            problems.retain(|p| p.direction() == Direction::BwdWeight);
        }
    }
    let mut summary = selfcheck::run_in(
        &mut worker,
        &arch,
        &problems,
        &space,
        args.configs,
        args.seed,
        |l| errln!("  {l}"),
    )?;
    summary.fault_isolated = Some(selfcheck::fault_isolation(&mut worker, &arch, args.seed)?);
    outln!("{summary}");
    if summary.ok() {
        Ok(())
    } else {
        Err(anyhow!("selfcheck failed"))
    }
}
