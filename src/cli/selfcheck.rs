//! `convtune selfcheck`: every generated kernel of a sweep verified on this machine's GPU.

use super::{bad_input, no_gpu};
use anyhow::anyhow;
use convtune::arch::Arch;
use convtune::config::Reduction;
use convtune::problem::Direction;
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
    /// Check only split-K kernels with this reduction (`atomic` or `fixup`), on the sweep's
    /// bwd-weight problems (the only direction with split-K).
    #[arg(long)]
    red: Option<String>,
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
    let mut worker = Worker::spawn(args.device)?;
    let mut problems = selfcheck::sweep_problems();
    let space = match red {
        Some(r) => {
            problems.retain(|p| p.direction() == Direction::BwdWeight);
            selfcheck::split_k_space(&arch, r)
        }
        None => SearchSpace::default_for(&arch),
    };
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
