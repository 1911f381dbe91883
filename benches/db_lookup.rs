//! Benchmark of the tuned database at scale: 100,000 synthetic entries (every direction, type and
//! two layouts over a grid of sizes). Measures parsing a database file, exact lookups (the path a
//! compiler takes for every convolution it builds) and nearest lookups. Targets: load < 100 ms,
//! exact lookup < 1 µs, in a release build (`cargo bench --bench db_lookup`).
//!
//! The entries' configs and times are synthetic: this measures the database, not tuning.

use convtune::db::{Entry, Fingerprint, Layered, TunedDb};
use convtune::problem::{ConvProblem, ConvSizes, DType, Direction, Layout};
use std::hint::black_box;
use std::time::{Duration, Instant};

const ENTRIES: usize = 100_000;

fn problems() -> Vec<ConvProblem> {
    let mut out = Vec::with_capacity(ENTRIES);
    let layouts = [
        (Layout::NGCHW, Layout::GKCYX),
        (Layout::NHWGC, Layout::GKYXC),
    ];
    'grid: for direction in [Direction::Fwd, Direction::BwdData, Direction::BwdWeight] {
        for dtype in [DType::BF16, DType::F16, DType::F32] {
            for (act, fil) in layouts {
                for n in [1, 2, 4, 8, 16, 32, 64, 128] {
                    for c in [3, 16, 32, 64, 128, 256, 512, 1024] {
                        for k in [16, 64, 128, 256, 512, 1024, 2048] {
                            for hw in [7, 14, 17, 28, 35, 56] {
                                for yx in [1, 3, 5] {
                                    let sizes = ConvSizes {
                                        n,
                                        c,
                                        k,
                                        h: hw,
                                        w: hw,
                                        y: yx,
                                        x: yx,
                                        pad: [yx / 2, yx / 2],
                                        ..Default::default()
                                    };
                                    if let Ok(p) =
                                        ConvProblem::new(sizes, direction, dtype, act, fil, act)
                                    {
                                        out.push(p);
                                        if out.len() == ENTRIES {
                                            break 'grid;
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    out
}

fn fingerprint() -> Fingerprint {
    Fingerprint {
        gpu: "NVIDIA H200".into(),
        compute_units: 132,
        driver: "580.65".into(),
        clock_mhz: Some(1980),
    }
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let problems = problems();
    assert_eq!(problems.len(), ENTRIES, "the size grid is too small");
    let mut db = TunedDb::new("sm_90");
    let t = Instant::now();
    for (i, p) in problems.iter().enumerate() {
        let entry = Entry {
            problem: p.key(),
            config: format!("v1:{}:{}:{}:4:2:1", 64 << (i % 3), 64 << (i % 2), 32),
            time_us: 10.0 + (i % 997) as f64 * 0.37,
            tflops: 123.4,
            candidates_tried: 400 + (i % 50) as u64,
            fingerprint: fingerprint(),
            convtune_version: "0.1.0".into(),
            date: "2026-11-30".into(),
            checksum: String::new(),
        }
        .sealed();
        db.insert(entry).expect("synthetic entries are valid");
    }
    let build = t.elapsed();

    let t = Instant::now();
    let text = db.to_toml_string();
    let write = t.elapsed();

    // More repetitions (DB_BENCH_LOAD_REPS) make load dominate a profile.
    let reps = std::env::var("DB_BENCH_LOAD_REPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5usize);
    let loads: Vec<Duration> = (0..reps)
        .map(|_| {
            let t = Instant::now();
            let db = TunedDb::parse(black_box(&text), "bench").expect("bench database parses");
            let d = t.elapsed();
            assert_eq!(db.len(), ENTRIES);
            d
        })
        .collect();
    let db = TunedDb::parse(&text, "bench").expect("bench database parses");

    // Exact lookups in a scattered order (not the insertion order, which would favour caches).
    let order: Vec<usize> = (0..ENTRIES).map(|i| (i * 7919) % ENTRIES).collect();
    let t = Instant::now();
    let mut hits = 0usize;
    for &i in &order {
        hits += black_box(&db).get(black_box(&problems[i])).count();
    }
    let get_ns = t.elapsed().as_nanos() as f64 / ENTRIES as f64;
    assert_eq!(hits, ENTRIES);

    let fp = fingerprint();
    let check = |_: &ConvProblem, _: &str, _: &str| -> Result<(), String> { Ok(()) };
    let layered = Layered {
        system: Some(&db),
        user: None,
    };
    let t = Instant::now();
    for &i in &order {
        let r = layered.lookup(black_box(&problems[i]), "sm_90", Some(&fp), &check);
        assert!(r.config.is_some());
        black_box(r);
    }
    let lookup_ns = t.elapsed().as_nanos() as f64 / ENTRIES as f64;

    // Nearest: problems not in the database (odd spatial size), so every lookup scans a bucket.
    let misses: Vec<ConvProblem> = problems
        .iter()
        .step_by(ENTRIES / 200)
        .map(|p| {
            let s = ConvSizes {
                h: p.sizes().h + 1,
                w: p.sizes().w + 1,
                ..*p.sizes()
            };
            ConvProblem::new(
                s,
                p.direction(),
                p.dtype(),
                p.layout(convtune::problem::Tensor::Input),
                p.layout(convtune::problem::Tensor::Filter),
                p.layout(convtune::problem::Tensor::Output),
            )
            .expect("a larger image keeps the problem valid")
        })
        .collect();
    let bucket = db
        .entries()
        .iter()
        .filter(|e| e.problem.starts_with("convbfp16 -F 1 ") && e.problem.contains("-I NGCHW"))
        .count();
    let t = Instant::now();
    for p in &misses {
        let r = layered.lookup(p, "sm_90", Some(&fp), &check);
        assert!(matches!(r.source, convtune::db::Source::Nearest { .. }));
        black_box(r);
    }
    let nearest_us = t.elapsed().as_secs_f64() * 1e6 / misses.len() as f64;

    println!("tuned-db benchmark, {ENTRIES} entries");
    println!(
        "  build by insert:        {:8.1} ms",
        build.as_secs_f64() * 1e3
    );
    println!(
        "  write TOML:             {:8.1} ms ({:.1} MB)",
        write.as_secs_f64() * 1e3,
        text.len() as f64 / 1e6
    );
    println!(
        "  load (parse + index):   {:8.1} ms median of {reps} (min {:.1} ms)   target < 100 ms",
        median(loads.clone()).as_secs_f64() * 1e3,
        loads.iter().min().map_or(0.0, |d| d.as_secs_f64() * 1e3)
    );
    println!(
        "  exact get (hash hit):   {get_ns:8.0} ns/lookup                      target < 1000 ns"
    );
    println!("  Layered::lookup exact:  {lookup_ns:8.0} ns/lookup (incl. check, reason text)");
    println!("  Layered::lookup nearest:{nearest_us:8.1} µs/lookup (bucket of ~{bucket} entries)");
}
