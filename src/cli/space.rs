//! `convtune space`: how many candidates a problem has on an arch, and why the rest are illegal.

use super::{bad_input, ArchArg, ProblemArg};
use convtune::legality;
use convtune::lowering::lower;
use convtune::space::{enumerate_lowered, PerfConfig};

/// Arguments of `convtune space`.
#[derive(clap::Args)]
pub struct SpaceArgs {
    #[command(flatten)]
    problem: ProblemArg,
    #[command(flatten)]
    arch: ArchArg,
    /// List every legal config.
    #[arg(long)]
    list: bool,
    /// Say why one config (`v1:…`) is legal, or which rule rejects it.
    #[arg(long, value_name = "CONFIG")]
    explain: Option<String>,
}

/// Runs the command.
pub fn run(args: SpaceArgs) -> anyhow::Result<()> {
    let p = args.problem.parse().map_err(bad_input)?;
    let arch = args.arch.arch(None)?;
    let (space, origin) = args.arch.space(&arch)?;
    let l = lower(&p);
    if let Some(text) = &args.explain {
        let cfg: PerfConfig = text.parse().map_err(bad_input)?;
        for line in legality::explain(&l, &cfg, &arch) {
            println!("{line}");
        }
        if !space.contains(&cfg) {
            println!("note: this config is outside the search space ({origin})");
        }
        return match legality::check(&l, &cfg, &arch) {
            Ok(r) => {
                println!("LEGAL: {r:?}");
                Ok(())
            }
            Err(e) => {
                println!("ILLEGAL: {e}");
                Ok(())
            }
        };
    }
    let e = enumerate_lowered(&l, &arch, &space);
    println!("{}", p.key());
    println!(
        "arch {} ({}), space {}: {} GEMM(s)",
        arch.name,
        arch.product,
        origin,
        l.gemms.len()
    );
    println!("  raw      {:>10}", e.raw);
    println!("  legal    {:>10}", e.legal.len());
    for (reason, n) in &e.rejected {
        println!("  rejected {n:>10}  {reason}");
    }
    if args.list {
        for c in &e.legal {
            println!("{c}");
        }
    }
    Ok(())
}
