//! How long enumerating the legal configs of a problem takes, per problem and per raw point.
//! Enumeration runs once per problem before tuning and on every `convtune space`, so it must
//! stay well under a second for the default spaces (~4.7 M raw points).
//!
//! `cargo bench --bench enumerate`

use convtune::arch::Arch;
use convtune::lowering::lower;
use convtune::problem::ConvProblem;
use convtune::space::{enumerate_lowered, SearchSpace};
use std::time::Instant;

const PROBLEMS: [(&str, &str); 5] = [
    (
        "sm_90",
        "convbfp16 -n 16 -c 2048 -H 1 -W 512 -k 2048 -y 1 -x 2 -u 1 -v 2 -F 2 --layout NHWC",
    ),
    (
        "sm_90",
        "convfp16 -n 32 -c 256 -H 56 -W 56 -k 256 -y 3 -x 3 -p 1 -q 1 -F 4 --layout NHWC",
    ),
    (
        "sm_80",
        "conv -n 32 -c 32 -H 14 -W 14 -k 32 -y 3 -x 3 -p 1 -q 1 -F 2",
    ),
    (
        "gfx90a",
        "convbfp16 -n 64 -c 3 -H 224 -W 224 -k 64 -y 7 -x 7 -p 3 -q 3 -u 2 -v 2 -F 1 --layout NHWC",
    ),
    (
        "gfx942",
        "convfp16 -n 16 -c 512 -H 28 -W 28 -k 512 -y 3 -x 3 -p 1 -q 1 -u 2 -v 2 -F 2 --layout NHWC",
    ),
];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!(
        "{:<8} {:>9} {:>9} {:>10} {:>10}  problem",
        "arch", "raw", "legal", "median ms", "ns/raw"
    );
    for (arch, line) in PROBLEMS {
        let arch = Arch::from_name(arch)?;
        let problem: ConvProblem = line.parse()?;
        let lowering = lower(&problem);
        let space = SearchSpace::default_for(&arch);
        let mut times = Vec::new();
        let mut legal = 0;
        for _ in 0..11 {
            let t = Instant::now();
            let e = enumerate_lowered(&lowering, &arch, &space);
            times.push(t.elapsed().as_secs_f64());
            legal = e.legal.len();
        }
        times.sort_by(f64::total_cmp);
        let median = times[times.len() / 2];
        let raw = space.raw_size();
        println!(
            "{:<8} {:>9} {:>9} {:>10.2} {:>10.3}  {line}",
            arch.name,
            raw,
            legal,
            median * 1e3,
            median * 1e9 / raw as f64
        );
    }
    Ok(())
}
