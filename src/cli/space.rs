//! `convtune space`: how many candidates a problem has on an arch, and why the rest are illegal.

use super::{bad_input, ArchArg, ProblemArg};
use convtune::config::PerfConfig;
use convtune::legality::{self, RejectReasonKind};
use convtune::lowering::lower;
use convtune::space::enumerate_lowered;

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
        if let Some(why) = vector_example(&l, &arch, &e.legal, *reason) {
            println!("                       e.g. {why}");
        }
    }
    if args.list {
        for c in &e.legal {
            println!("{c}");
        }
    }
    Ok(())
}

/// For a vector-width rejection kind, one concrete reason: the first legal config with that
/// operand's width doubled until the rule rejects it.
fn vector_example(
    l: &convtune::lowering::Lowering,
    arch: &convtune::arch::Arch,
    legal: &[PerfConfig],
    kind: RejectReasonKind,
) -> Option<String> {
    let field: fn(&mut PerfConfig) -> &mut u32 = match kind {
        RejectReasonKind::VectorA => |c| &mut c.vec_a,
        RejectReasonKind::VectorB => |c| &mut c.vec_b,
        RejectReasonKind::VectorC => |c| &mut c.vec_c,
        _ => return None,
    };
    let mut cfg = *legal.first()?;
    while *field(&mut cfg) < 16 {
        *field(&mut cfg) *= 2;
        if let Err(e) = legality::check(l, &cfg, arch) {
            if e.kind() == kind {
                return Some(e.to_string());
            }
        }
    }
    None
}
