//! `convtune compile`: one candidate's kernels as PTX or an AMDGPU code object, with resources.

use super::{bad_input, ArchArg, ProblemArg};
use anyhow::{anyhow, Context as _};
use convtune::codegen::{compile_conv, resource_report};
use convtune::config::PerfConfig;
use convtune::legality;
use convtune::lookup::find_config;
use convtune::lowering::lower;
use convtune::tune::target_for;
use std::path::PathBuf;

/// Arguments of `convtune compile`.
#[derive(clap::Args)]
pub struct CompileArgs {
    #[command(flatten)]
    problem: ProblemArg,
    #[command(flatten)]
    arch: ArchArg,
    /// The config (`v1:…`); default: the database's or the heuristic's choice.
    #[arg(long)]
    config: Option<String>,
    /// Output file: PTX text for NVIDIA, a code object (ELF) for AMD.
    #[arg(short, long)]
    output: PathBuf,
}

/// Compiles and writes the module, then prints the resource report.
pub fn run(args: CompileArgs) -> anyhow::Result<()> {
    let p = args.problem.parse().map_err(bad_input)?;
    let arch = args.arch.arch(None)?;
    let l = lower(&p);
    let cfg: PerfConfig = match &args.config {
        Some(c) => c.parse().map_err(bad_input)?,
        None => {
            let found = find_config(&p, &arch, None, None)?;
            eprintln!("config from {}: {}", found.source, found.reason);
            found.config
        }
    };
    legality::check(&l, &cfg, &arch).map_err(|e| {
        bad_input(anyhow!(
            "{cfg} is illegal for this problem on {}: {e}",
            arch.name
        ))
    })?;
    let c = compile_conv(&l, &cfg, target_for(&arch))?;
    std::fs::write(&args.output, c.module.bytes())
        .with_context(|| format!("writing {}", args.output.display()))?;
    println!("{cfg}");
    println!("{}", resource_report(&c));
    println!("wrote {}", args.output.display());
    Ok(())
}
