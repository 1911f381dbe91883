//! `convtune compile`: one candidate's kernels as PTX or an AMDGPU code object, with resources,
//! and the launch manifest that lets a program outside convtune run them (`docs/abi.md`).

use super::{bad_input, ArchArg, DbArgs, ProblemArg};
use anyhow::anyhow;
use convtune::codegen::{compile_conv, resource_report, PtxCounts};
use convtune::config::PerfConfig;
use convtune::legality;
use convtune::lowering::lower;
use convtune::manifest::{ConfigSource, Manifest};
use convtune::runtime::{Ptxas, PTXAS_ENV};
use convtune::tune::target_for;
use std::path::PathBuf;

/// Arguments of `convtune compile`.
#[derive(clap::Args)]
pub struct CompileArgs {
    #[command(flatten)]
    problem: ProblemArg,
    #[command(flatten)]
    arch: ArchArg,
    #[command(flatten)]
    db: DbArgs,
    /// The config (`v1:…`); default: what `convtune lookup` with the same flags answers.
    #[arg(long)]
    config: Option<String>,
    /// Output file: PTX text for NVIDIA, a code object (ELF) for AMD.
    #[arg(short, long)]
    output: PathBuf,
    /// Also write the launch manifest (JSON, see docs/abi.md) here.
    #[arg(long, value_name = "FILE")]
    manifest: Option<PathBuf>,
    /// Print the summary as JSON (`{"manifest", "ptx": instruction counts, "amd_resources",
    /// "steps_s": seconds per compile step, "ptxas"}`).
    #[arg(long)]
    json: bool,
    /// Also assemble the PTX with the toolkit's `ptxas` (found as the tuner finds it, see
    /// CONVTUNE_PTXAS) and print its resource report and warnings; exits non-zero on a warning
    /// that the tuner treats as a failure (serialised wgmma, ignored setmaxnreg).
    #[arg(long)]
    ptxas: bool,
}

/// Compiles and writes the module (and the manifest), then prints the resource report.
pub fn run(args: CompileArgs) -> anyhow::Result<()> {
    let p = args.problem.parse().map_err(bad_input)?;
    let arch = args.arch.arch(None)?;
    let space = args.arch.space_file(&arch)?;
    let l = lower(&p);
    let (cfg, source, reason): (PerfConfig, _, _) = match &args.config {
        Some(c) => {
            let cfg: PerfConfig = c.parse().map_err(bad_input)?;
            if space.as_ref().is_some_and(|s| !s.contains(&cfg)) {
                return Err(bad_input(anyhow!(
                    "--config {cfg} is outside the search space {}",
                    args.arch.space_origin().unwrap_or_default()
                )));
            }
            (cfg, ConfigSource::Given, "given with --config".to_string())
        }
        None => {
            let limits = convtune::lookup::Limits::space(space.as_ref());
            let found = args.db.find(&p, &arch, limits, 1)?.found;
            errln!("config from {}: {}", found.source, found.reason);
            (
                found.config,
                ConfigSource::from(&found.source),
                found.reason,
            )
        }
    };
    legality::check(&l, &cfg, &arch).map_err(|e| {
        bad_input(anyhow!(
            "{cfg} is illegal for this problem on {}: {e}",
            arch.name
        ))
    })?;
    let c = compile_conv(&l, &cfg, target_for(&arch))?;
    super::out::write_file(&args.output, c.module.bytes())?;
    let manifest = Manifest::new(
        &l,
        &arch,
        &cfg,
        source,
        &reason,
        &c,
        &args.output.display().to_string(),
    );
    if let Some(path) = &args.manifest {
        let text = serde_json::to_string_pretty(&manifest)?;
        super::out::write_file(path, format!("{text}\n").as_bytes())?;
    }
    let assembled = match (args.ptxas, c.module.ptx()) {
        (false, _) => None,
        (true, None) => return Err(bad_input(anyhow!("--ptxas: {} makes no PTX", arch.name))),
        (true, Some(ptx)) => {
            let asm = Ptxas::find().ok_or_else(|| {
                anyhow!("--ptxas: no ptxas found (set {PTXAS_ENV} or put ptxas on PATH)")
            })?;
            Some(asm.assemble(ptx).map_err(|e| anyhow!("--ptxas: {e}"))?)
        }
    };
    let fatal = assembled
        .as_ref()
        .and_then(|a| a.fatal_warning().map(|w| w.trim().to_string()));
    if args.json {
        super::out::json(&serde_json::json!({
            "manifest": manifest,
            "manifest_file": args.manifest.as_ref().map(|m| m.display().to_string()),
            "ptx": c.module.ptx().map(PtxCounts::of),
            "amd_resources": c.resources,
            "steps_s": c.steps,
            "ptxas": assembled.as_ref().map(|a| serde_json::json!({
                "log": a.log,
                "spill_bytes": a.spill_bytes(),
                "fatal_warning": fatal,
            })),
        }))?;
    } else {
        outln!("{cfg}");
        outln!("{}", resource_report(&c));
        outln!("compile: {}", c.steps);
        if let Some(a) = &assembled {
            outln!("ptxas: {}", a.log.trim().replace('\n', "\n  "));
        }
    }
    if let Some(w) = fatal {
        return Err(anyhow!("ptxas: {w}"));
    }
    if args.json {
        return Ok(());
    }
    outln!("wrote {}", args.output.display());
    if let Some(path) = &args.manifest {
        outln!("wrote {}", path.display());
    }
    Ok(())
}
