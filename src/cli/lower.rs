//! `convtune lower`: the GEMMs a problem becomes.

use super::{bad_input, ProblemArg};
use convtune::lowering::{lower, Dim, Gemm, Lowering};
use serde_json::json;

/// Arguments of `convtune lower`.
#[derive(clap::Args)]
pub struct LowerArgs {
    #[command(flatten)]
    problem: ProblemArg,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

fn axes(g: &Gemm, d: Dim) -> String {
    let names: Vec<String> = g.dims[d as usize]
        .axes
        .iter()
        .map(|a| format!("{}:{}", a.name, a.len))
        .collect();
    names.join("·")
}

fn describe(l: &Lowering) -> serde_json::Value {
    let p = &l.problem;
    let kernels: Vec<_> = l
        .gemms
        .iter()
        .map(|g| {
            let operands: Vec<_> = g
                .operands()
                .iter()
                .zip(["A", "B", "C"])
                .map(|((op, dims), role)| {
                    let c = op.contiguity(p, g, *dims);
                    json!({
                        "operand": role,
                        "tensor": op.tensor.name(),
                        "contiguous_tensor_dim": c.tensor_dim.to_string(),
                        "contiguous_gemm_dim": c.dim.map(|d| d.to_string()),
                    })
                })
                .collect();
            json!({
                "kernel_id": g.id,
                "g": g.g_len(), "m": g.m_len(), "n": g.n_len(), "k": g.k_len(),
                "m_axes": axes(g, Dim::M), "n_axes": axes(g, Dim::N), "k_axes": axes(g, Dim::K),
                "operands": operands,
            })
        })
        .collect();
    json!({
        "problem": p.key(),
        "direction": p.direction().name(),
        "zero_init": l.zero_init,
        "gemms": kernels,
    })
}

/// Runs the command.
pub fn run(args: LowerArgs) -> anyhow::Result<()> {
    let p = args.problem.parse().map_err(bad_input)?;
    let l = lower(&p);
    let d = describe(&l);
    if args.json {
        return super::out::json(&d);
    }
    outln!("{}", p.key());
    outln!(
        "{} GEMM(s){}",
        l.gemms.len(),
        if l.zero_init {
            ", after a zero-init of the written tensor"
        } else {
            ""
        }
    );
    for g in &l.gemms {
        outln!(
            "  kernel {}: G={} M={} N={} K={}   M=[{}] N=[{}] K=[{}]",
            g.id,
            g.g_len(),
            g.m_len(),
            g.n_len(),
            g.k_len(),
            axes(g, Dim::M),
            axes(g, Dim::N),
            axes(g, Dim::K)
        );
        for ((op, dims), role) in g.operands().iter().zip(["A", "B", "C"]) {
            let c = op.contiguity(&p, g, *dims);
            outln!(
                "    {role} = {:<6} contiguous along {} ({})",
                op.tensor.name(),
                c.dim.map_or("none".to_string(), |d| d.to_string()),
                c.tensor_dim
            );
        }
    }
    Ok(())
}
