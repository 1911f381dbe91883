//! The long fuzz run behind `scripts/fuzz.sh`: generated problem lines, databases and search
//! spaces through the library's parsers, counting inputs, acceptances, panics, the slowest input
//! and peak memory. Usage: `cargo run --release --example fuzz -- [INPUTS] [SEED]`.

#[path = "../tests/common/fuzz.rs"]
mod fuzz;

use fuzz::{generate, timed, Target, TIME_LIMIT};
use rand::{rngs::StdRng, SeedableRng};
use std::time::{Duration, Instant};

/// Peak resident memory of this process in KiB (Linux), 0 where unknown.
fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let total: u64 = args
        .next()
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let seed: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(18);
    // Panics are counted, not printed a million times; the first few are shown.
    let shown = std::sync::atomic::AtomicU32::new(0);
    std::panic::set_hook(Box::new(move |info| {
        if shown.fetch_add(1, std::sync::atomic::Ordering::Relaxed) < 5 {
            eprintln!("panic: {info}");
        }
    }));
    let targets = [Target::Problem, Target::Db, Target::Space];
    // Problem lines are the cheapest and the most varied: 60 % of the inputs, the rest split.
    let share = |i: u64| match i % 10 {
        0..=5 => Target::Problem,
        6..=8 => Target::Db,
        _ => Target::Space,
    };
    let mut rng = StdRng::seed_from_u64(seed);
    let start = Instant::now();
    let mut stats = [(0u64, 0u64, 0u64, 0u64, Duration::ZERO); 3];
    for i in 0..total {
        let target = share(i);
        let k = targets.iter().position(|&t| t == target).unwrap();
        let input = generate(&mut rng, target);
        let r = std::panic::catch_unwind(|| timed(target, &input));
        let s = &mut stats[k];
        s.0 += 1;
        match r {
            Ok((accepted, took)) => {
                s.1 += u64::from(accepted);
                s.3 += u64::from(took >= TIME_LIMIT);
                s.4 = s.4.max(took);
            }
            Err(_) => {
                s.2 += 1;
                eprintln!("input: {}", convtune::input::excerpt(&input, 300));
            }
        }
    }
    let mut panics = 0;
    let mut slow = 0;
    println!(
        "target    inputs   accepted   panics   over {:?}   slowest",
        TIME_LIMIT
    );
    for (t, s) in targets.iter().zip(&stats) {
        println!(
            "{:<8} {:>8} {:>10} {:>8} {:>11} {:>9.1} ms",
            format!("{t:?}"),
            s.0,
            s.1,
            s.2,
            s.3,
            s.4.as_secs_f64() * 1e3
        );
        panics += s.2;
        slow += s.3;
    }
    println!(
        "total {} inputs in {:.1} s, {} panics, {} over the time limit, peak RSS {} MiB",
        total,
        start.elapsed().as_secs_f64(),
        panics,
        slow,
        peak_rss_kib() / 1024
    );
    if panics > 0 || slow > 0 {
        std::process::exit(1);
    }
}
