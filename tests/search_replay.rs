//! Replays every recording in `recordings/` with every strategy (no GPU needed) and holds the
//! default strategy to its target: ≥ 98% of the exhaustive best within 10% of the evaluations,
//! on every *real* recording. Synthetic recordings (generated from the cost model, labelled
//! `synthetic: true`) only test the machinery; their figures are printed as synthetic.

use convtune::arch::Arch;
use convtune::search::replay::efficiency_prepared;
use convtune::search::{
    by_name, efficiency_table, plot_efficiencies, synthetic, Efficiency, Prepared, Recording,
    STRATEGIES,
};
use std::path::Path;

/// Every strategy on one recording; also checks what must hold for any strategy.
fn score(label: &str, rec: &Prepared) -> Vec<Efficiency> {
    STRATEGIES
        .iter()
        .map(|name| {
            let mut s = by_name(name, 1).expect("registered");
            let e =
                efficiency_prepared(rec, s.as_mut()).unwrap_or_else(|err| panic!("{label}: {err}"));
            assert_eq!(
                e.curve.len(),
                rec.configs.len(),
                "{label}/{name}: proposes every candidate"
            );
            assert!(e.curve.windows(2).all(|w| w[1] <= w[0]), "{label}/{name}");
            assert_eq!(
                *e.curve.last().unwrap(),
                rec.best_us,
                "{label}/{name}: ends at the best"
            );
            e
        })
        .collect()
}

fn short(line: &str) -> String {
    line.chars().take(70).collect()
}

/// Problems (of at least `min_space` candidates) where the default strategy missed ≥ 98% of the
/// exhaustive best within 10% of the evaluations.
fn target_failures(rows: &[(String, Vec<Efficiency>)], min_space: usize) -> Vec<String> {
    rows.iter()
        .flat_map(|(p, effs)| effs.iter().map(move |e| (p, e)))
        .filter(|(_, e)| e.strategy == STRATEGIES[0] && e.space >= min_space && !e.meets(0.10))
        .map(|(p, e)| format!("{p}: {:?} of {} evaluations", e.evals_to_target, e.space))
        .collect()
}

#[test]
fn real_recordings_meet_the_guided_target() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("recordings");
    let all = Recording::load_dir(&dir).expect("recordings/ is readable");
    let mut rows = Vec::new();
    for (path, r) in &all {
        let p = r
            .prepare()
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let label = format!(
            "{}{}",
            if p.synthetic { "[synthetic] " } else { "" },
            short(&r.problem)
        );
        rows.push((p.synthetic, (label.clone(), score(&label, &p))));
    }
    let real: Vec<_> = rows.iter().filter(|r| !r.0).map(|r| r.1.clone()).collect();
    if real.is_empty() {
        eprintln!(
            "SKIPPED: recordings/ holds no real (GPU-measured) recordings yet ({} file(s) there); \
             the guided target is not checked against real data",
            all.len()
        );
        return;
    }
    eprintln!("Real recordings:\n{}", efficiency_table(&real));
    let failures = target_failures(&real, 0);
    assert!(
        failures.is_empty(),
        "guided missed ≥98% within 10% on: {failures:#?}"
    );
}

#[test]
fn synthetic_recordings_replay_with_every_strategy() {
    let mut rows = Vec::new();
    for r in synthetic::suite(&Arch::SM_90, 11) {
        assert!(r.synthetic);
        let p = r.prepare().expect("synthetic recordings are valid");
        let label = format!("[synthetic] {}", short(&r.problem));
        rows.push((label.clone(), score(&label, &p)));
    }
    eprintln!(
        "SYNTHETIC recordings (cost model + hidden effects + noise; not GPU data):\n{}",
        efficiency_table(&rows)
    );
    // The first problem's convergence plot, for a look (target/ is never committed).
    let svg = plot_efficiencies(&rows[0].1, &format!("{} (synthetic)", rows[0].0));
    assert_eq!(svg.matches("<polyline").count(), STRATEGIES.len());
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("synthetic-convergence.svg");
    std::fs::write(&out, svg).expect("write the plot");
    eprintln!("plot: {}", out.display());
    // On synthetic data the target is held only where 10% of the space is more than the two
    // batches the tuner proposes before any measurement returns (640 candidates): below that,
    // 10% is a handful of evaluations mostly chosen blind, and whether the one config within 2%
    // of the best is among them is luck. Misses on smaller spaces are printed, not hidden.
    let small = target_failures(&rows, 0);
    if !small.is_empty() {
        eprintln!("[synthetic] guided missed the target on small spaces: {small:#?}");
    }
    let failures = target_failures(&rows, 640);
    assert!(
        failures.is_empty(),
        "[synthetic] guided missed ≥98% within 10% on: {failures:#?}"
    );
    // The default strategy must beat both baselines on the geometric mean.
    let geo = |name: &str| {
        let f: Vec<f64> = rows
            .iter()
            .flat_map(|(_, effs)| effs.iter().filter(|e| e.strategy == name))
            .map(|e| e.fraction_to_target().ln())
            .collect();
        (f.iter().sum::<f64>() / f.len() as f64).exp()
    };
    assert!(geo("guided") < 0.5 * geo("random") && geo("guided") < 0.5 * geo("exhaustive"));
}

/// How the guided strategy holds up as the synthetic GPU departs further from its cost model,
/// over several seeds (all synthetic; run with `--ignored --nocapture`). Prints the summary
/// rows of the efficiency table per (scale, seed).
#[test]
#[ignore]
fn synthetic_stress() {
    use convtune::search::synthetic::{suite_with, SyntheticSpec};
    let scales: Vec<f64> = std::env::var("STRESS_SCALES")
        .ok()
        .map(|v| v.split(',').filter_map(|x| x.parse().ok()).collect())
        .unwrap_or_else(|| vec![1.0, 2.0]);
    let seeds: u64 = std::env::var("STRESS_SEEDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(4);
    for scale in scales {
        let mut worst = Vec::new();
        for seed in 1..=seeds {
            let d = SyntheticSpec::default();
            let spec = SyntheticSpec {
                seed: seed * 1000,
                field_sigma: d.field_sigma * scale,
                pair_sigma: d.pair_sigma * scale,
                rough_sigma: d.rough_sigma * scale,
                noise_sigma: d.noise_sigma * scale,
                fail_rate: d.fail_rate * scale,
            };
            let mut rows = Vec::new();
            for r in suite_with(&Arch::SM_90, &spec) {
                let p = r.prepare().unwrap();
                let label = format!("[synthetic x{scale} seed {seed}] {}", short(&r.problem));
                rows.push((label.clone(), score(&label, &p)));
            }
            let table = efficiency_table(&rows);
            for line in table.lines().filter(|l| l.starts_with("| guided |")) {
                eprintln!("x{scale} seed {seed}: {line}");
            }
            worst.extend(target_failures(&rows, 0));
        }
        eprintln!("x{scale}: misses {worst:#?}");
    }
}
