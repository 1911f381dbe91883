//! The cost model's time (µs), its compute and memory terms (µs), blocks and blocks per SM, and
//! whether the config is legal (last), for `PROBLEM | CONFIG` lines on stdin (sm_90),
//! tab-separated: what a fallback or search experiment needs without a GPU
//! (`scripts/session25/loo-tries.py --legal-only`).
use convtune::arch::Arch;
use convtune::lowering::lower;
use convtune::search::{CostArch, CostModel};
use std::io::BufRead;
fn main() {
    let arch = Arch::from_name("sm_90").unwrap();
    for line in std::io::stdin().lock().lines() {
        let line = line.unwrap();
        let (p, c) = line.rsplit_once('|').unwrap();
        let p: convtune::problem::ConvProblem = p.trim().parse().unwrap();
        let c: convtune::config::PerfConfig = c.trim().parse().unwrap();
        let l = lower(&p);
        let m = CostModel::new(&l, CostArch::from_arch(&arch, p.dtype()));
        let ok = convtune::legality::check(&l, &c, &arch).is_ok();
        let e = m.estimate(&c);
        println!(
            "{:.3}\t{:.3}\t{:.3}\t{}\t{}\t{ok}",
            e.time_us, e.compute_us, e.memory_us, e.blocks, e.blocks_per_sm
        );
    }
}
