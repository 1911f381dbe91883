//! `convtune space`: how many candidates a problem has on an arch, and why the rest are illegal.

use super::{bad_input, ArchArg, ProblemArg};
use convtune::config::PerfConfig;
use convtune::legality::{self, RejectReasonKind};
use convtune::lowering::lower;
use convtune::space::enumerate_search;
use serde_json::json;

/// Arguments of `convtune space`.
#[derive(clap::Args)]
pub struct SpaceArgs {
    #[command(flatten)]
    problem: ProblemArg,
    #[command(flatten)]
    arch: ArchArg,
    /// List every legal config: one config a line on stdout, nothing else there (the counts
    /// go to stderr).
    #[arg(long)]
    list: bool,
    /// Print JSON: counts, rejections per reason, and (with --list) the configs.
    #[arg(long)]
    json: bool,
    /// Say why one config (`v1:…`) is legal, or which rule rejects it.
    #[arg(long, value_name = "CONFIG")]
    explain: Option<String>,
    /// Print a search-space file (TOML) whose only candidate is this config, after checking
    /// that it is legal for the problem: `--space` then times exactly that config.
    #[arg(long, value_name = "CONFIG", conflicts_with_all = ["explain", "list", "json"])]
    pin: Option<String>,
}

/// Runs the command.
pub fn run(args: SpaceArgs) -> anyhow::Result<()> {
    let p = args.problem.parse().map_err(bad_input)?;
    let arch = args.arch.arch(None)?;
    let (space, origin) = args.arch.space(&arch)?;
    let l = lower(&p);
    // With no `--space`, what the tuner searches: the vendor's space and, for 16-bit problems
    // on Hopper, the Hopper space (`convtune::space::enumerate_search`).
    let builtin = args.arch.space_origin().is_none();
    let extra = if builtin {
        convtune::space::extra_spaces(&l, &arch)
    } else {
        Vec::new()
    };
    let in_space = |c: &PerfConfig| space.contains(c) || extra.iter().any(|s| s.contains(c));
    if let Some(text) = &args.pin {
        let cfg: PerfConfig = text.parse().map_err(bad_input)?;
        legality::check(&l, &cfg, &arch).map_err(|e| {
            bad_input(anyhow::anyhow!(
                "{cfg} is illegal for this problem on {}: {e}",
                arch.name
            ))
        })?;
        outln!(
            "{}",
            convtune::space::pinned_space(&cfg, arch.vendor).trim_end()
        );
        return Ok(());
    }
    if let Some(text) = &args.explain {
        let cfg: PerfConfig = text.parse().map_err(bad_input)?;
        let lines = legality::explain(&l, &cfg, &arch);
        let verdict = legality::check(&l, &cfg, &arch);
        if args.json {
            return super::out::json(&json!({
                "problem": p.key(),
                "arch": arch.name,
                "config": cfg.to_string(),
                "legal": verdict.is_ok(),
                "rejected_by": verdict.as_ref().err().map(|e| e.to_string()),
                "in_space": in_space(&cfg),
                "space": origin,
                "explanation": lines,
            }));
        }
        for line in lines {
            outln!("{line}");
        }
        if !in_space(&cfg) {
            outln!("note: this config is outside the search space ({origin})");
        } else if verdict.is_ok() {
            // Legal and in a space, yet maybe not listed: the spaces' pruning (the same
            // kernel under another name, an oversized tile) passes it over in every space.
            let verdicts: Vec<_> = std::iter::once(&space)
                .chain(extra.iter().copied())
                .filter(|s| s.contains(&cfg))
                .map(|s| {
                    legality::Checker::new(&l, &arch)
                        .with_pruning(s.pruning())
                        .check(&cfg)
                })
                .collect();
            if let Some(Err(why)) = verdicts.iter().find(|v| v.is_err()) {
                if verdicts.iter().all(|v| v.is_err()) {
                    outln!("note: the search does not list this config: {why}");
                }
            }
        }
        match verdict {
            Ok(r) => outln!("LEGAL: {r:?}"),
            Err(e) => outln!("ILLEGAL: {e}"),
        }
        return Ok(());
    }
    let e = enumerate_search(&l, &arch, &space, !builtin);
    let rejected: Vec<_> = e
        .rejected
        .iter()
        .map(|(reason, n)| (reason, n, vector_example(&l, &arch, &e.legal, *reason)))
        .collect();
    if args.json {
        let reasons: Vec<_> = rejected
            .iter()
            .map(|(reason, n, example)| {
                json!({ "reason": reason.to_string(), "count": n, "example": example })
            })
            .collect();
        let configs: Option<Vec<String>> = args
            .list
            .then(|| e.legal.iter().map(|c| c.to_string()).collect());
        return super::out::json(&json!({
            "problem": p.key(),
            "arch": arch.name,
            "product": arch.product,
            "space": origin,
            "gemms": l.gemms.len(),
            "raw": e.raw,
            "legal": e.legal.len(),
            "rejected": reasons,
            "configs": configs,
        }));
    }
    // With --list, stdout is the list alone (a script reads it line by line); the summary goes
    // to stderr.
    let summary = |line: std::fmt::Arguments<'_>| -> anyhow::Result<()> {
        if args.list {
            errln!("{line}");
        } else {
            outln!("{line}");
        }
        Ok(())
    };
    summary(format_args!("{}", p.key()))?;
    summary(format_args!(
        "arch {} ({}), space {}: {} GEMM(s)",
        arch.name,
        arch.product,
        origin,
        l.gemms.len()
    ))?;
    summary(format_args!("  raw      {:>10}", e.raw))?;
    summary(format_args!("  legal    {:>10}", e.legal.len()))?;
    for (reason, n, example) in &rejected {
        summary(format_args!("  rejected {n:>10}  {reason}"))?;
        if let Some(why) = example {
            summary(format_args!("                       e.g. {why}"))?;
        }
    }
    if args.list {
        for c in &e.legal {
            outln!("{c}");
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
