//! The tuning loop against a fake device: budgets, failures, resume.

use super::*;
use crate::abi::{Module, CONV_ARGS};
use crate::config::LdsLayout;
use crate::lowering::lower;
use crate::runtime::{ColdCache, Launch, Timing};
use crate::search::Exhaustive;
use std::collections::HashMap;

/// `n` distinct configs (block_m 16, 32, …).
pub(super) fn configs(n: u32) -> Vec<PerfConfig> {
    (1..=n)
        .map(|i| PerfConfig {
            block_m: 16 * i,
            block_n: 64,
            block_k: 32,
            warp_m: 16,
            warp_n: 32,
            stages: 2,
            vec_a: 1,
            vec_b: 1,
            vec_c: 1,
            lds: LdsLayout::Padded,
            split_k: 1,
            raster: 1,
            mma: crate::config::MmaPath::Sync,
            red: crate::config::Reduction::Atomic,
            ld: crate::config::LoadPath::Cp,
            persistent: crate::config::Grid::PerTile,
            xf: crate::config::Transform::None,
            cluster: crate::config::ClusterShape::One,
            epilogue: crate::config::Epilogue::Reg,
            cut: crate::config::Cut::Tile,
        })
        .collect()
}

/// Times a plan by the block_m encoded in its kernel name; block_m 48 faults.
struct Fake {
    calls: usize,
}

impl Evaluate for Fake {
    fn measure(&mut self, plan: &LaunchPlan) -> Outcome {
        self.calls += 1;
        let bm: f64 = plan.launches[0].name.parse().unwrap();
        if bm == 48.0 {
            return Outcome::Fault("illegal address".into());
        }
        Outcome::Ok(Timing {
            median_us: 1000.0 / bm,
            min_us: 1000.0 / bm,
            runs: 5,
            tflops: bm,
            rel_err: 0.0,
            screened: false,
            resources: vec![],
            cache: ColdCache::Clean,
        })
    }
}

fn compile(c: &PerfConfig) -> Result<LaunchPlan, String> {
    if c.block_m == 32 {
        return Err("does not compile".into());
    }
    plan_of(c)
}

/// A plan whose kernel name carries the config's block_m (what the fakes time by).
fn plan_of(c: &PerfConfig) -> Result<LaunchPlan, String> {
    Ok(LaunchPlan {
        module: Module::Ptx(String::new()),
        launches: vec![Launch {
            name: c.block_m.to_string(),
            grid: [1, 1, 1],
            block: [32, 1, 1],
            shared_bytes: 0,
            args: CONV_ARGS.to_vec(),
        }],
        workspace_bytes: 0,
        kept_zero: 0,
    })
}

#[derive(Default)]
struct Mem(HashMap<PerfConfig, Outcome>);

impl Record for Mem {
    fn earlier(&self, c: &PerfConfig) -> Option<Outcome> {
        self.0.get(c).cloned()
    }
    fn record(&mut self, c: &PerfConfig, o: &Outcome) {
        self.0.insert(*c, o.clone());
    }
}

/// The one small problem the campaign tests tune.
fn tiny() -> crate::lowering::Lowering {
    lower(
        &"conv -n 1 -c 4 -H 5 -W 5 -k 4 -y 3 -x 3 -F 1"
            .parse()
            .unwrap(),
    )
}

fn run(cands: &[PerfConfig], budget: Option<usize>, rec: &mut Mem) -> (TuneReport, usize) {
    let l = tiny();
    let ctx = SearchContext {
        lowering: &l,
        arch: &crate::arch::Arch::SM_90,
        candidates: cands,
    };
    let mut fake = Fake { calls: 0 };
    let opts = TuneOptions {
        budget,
        batch: 3,
        progress: false,
        ..Default::default()
    };
    let r = tune(
        &ctx,
        &mut Exhaustive::default(),
        compile,
        &mut fake,
        rec,
        &opts,
    );
    (r, fake.calls)
}

#[test]
fn failures_are_recorded_and_the_run_goes_on() {
    let cands = configs(8);
    let (r, calls) = run(&cands, None, &mut Mem::default());
    assert_eq!(r.trials.len(), 8);
    assert_eq!(
        calls, 7,
        "the config that fails to compile is never measured"
    );
    assert_eq!(r.failed(), 2);
    assert_eq!(r.best().unwrap().0.block_m, 128);
    assert!(matches!(
        r.trials
            .iter()
            .find(|t| t.config.block_m == 48)
            .unwrap()
            .outcome,
        Outcome::Fault(_)
    ));
}

#[test]
fn budget_caps_evaluations() {
    let cands = configs(10);
    let (r, _) = run(&cands, Some(4), &mut Mem::default());
    assert_eq!(r.trials.len(), 4);
}

#[test]
fn resume_measures_only_what_is_missing_and_ends_the_same() {
    let cands = configs(9);
    let mut rec = Mem::default();
    let (first, _) = run(&cands, Some(5), &mut rec);
    assert_eq!(first.trials.len(), 5);
    let (second, calls) = run(&cands, None, &mut rec);
    assert_eq!(second.trials.iter().filter(|t| t.resumed).count(), 5);
    assert_eq!(
        calls,
        4 - usize::from(cands[5..].iter().any(|c| c.block_m == 32))
    );
    let (full, _) = run(&cands, None, &mut Mem::default());
    assert_eq!(second.best().unwrap().0, full.best().unwrap().0);
}

/// Measures slowly (`delay` each) and remembers the screen it was given each time; a candidate
/// over the screen comes back screened, like the worker's adaptive timing.
struct Screening {
    delay: std::time::Duration,
    screens: Vec<Option<f64>>,
    /// Kernel names announced through `prefetch`, and measured, in order.
    prefetched: Vec<String>,
    measured: Vec<String>,
}

impl Evaluate for Screening {
    fn measure(&mut self, plan: &LaunchPlan) -> Outcome {
        self.measure_with(plan, None).0
    }
    fn measure_with(
        &mut self,
        plan: &LaunchPlan,
        screen_us: Option<f64>,
    ) -> (Outcome, Option<MeasureStages>) {
        std::thread::sleep(self.delay);
        self.screens.push(screen_us);
        self.measured.push(plan.launches[0].name.clone());
        assert!(
            self.prefetched.contains(&plan.launches[0].name),
            "announced before it is measured"
        );
        let bm: f64 = plan.launches[0].name.parse().unwrap();
        let us = 1000.0 / bm;
        let screened = screen_us.is_some_and(|s| us > s);
        let timing = Timing {
            median_us: us,
            min_us: us,
            runs: if screened { 3 } else { 50 },
            tflops: bm,
            rel_err: 0.0,
            screened,
            resources: vec![],
            cache: ColdCache::Clean,
        };
        let stages = MeasureStages {
            load_s: 0.001,
            jit_s: 0.002,
            verify_s: 0.001,
            time_s: 0.001,
        };
        (Outcome::Ok(timing), Some(stages))
    }
    fn prefetch(&mut self, plans: &[&LaunchPlan]) {
        self.prefetched
            .extend(plans.iter().map(|p| p.launches[0].name.clone()));
    }
}

fn run_screening(
    cands: &[PerfConfig],
    opts: &TuneOptions,
    delay: std::time::Duration,
) -> (TuneReport, Vec<Option<f64>>) {
    let l = tiny();
    let ctx = SearchContext {
        lowering: &l,
        arch: &crate::arch::Arch::SM_90,
        candidates: cands,
    };
    let mut eval = Screening {
        delay,
        screens: Vec::new(),
        prefetched: Vec::new(),
        measured: Vec::new(),
    };
    let r = tune(
        &ctx,
        &mut Exhaustive::default(),
        plan_of,
        &mut eval,
        &mut NoRecord,
        opts,
    );
    assert_eq!(
        eval.prefetched[..eval.measured.len()],
        eval.measured[..],
        "announced in measuring order"
    );
    (r, eval.screens)
}

#[test]
fn adaptive_timing_screens_against_the_best_full_median_so_far() {
    // Times fall with block_m (1000/16, 1000/32, …); in reverse order the first candidate
    // (block_m 96) is the fastest; block_m 80 is within 1.25 × of it, the other four are not.
    let mut cands = configs(6);
    cands.reverse();
    let opts = TuneOptions {
        batch: 2,
        progress: false,
        ..Default::default()
    };
    let (r, screens) = run_screening(&cands, &opts, std::time::Duration::ZERO);
    assert_eq!(
        screens[0], None,
        "nothing to screen against before the first timing"
    );
    let best = 1000.0 / 96.0;
    assert!(screens[1..]
        .iter()
        .all(|s| s.is_some_and(|s| (s - best * SCREEN_MARGIN).abs() < 1e-9)));
    assert_eq!(
        r.screened(),
        4,
        "the clearly slower candidates kept their short time"
    );
    assert_eq!(r.best().unwrap().0.block_m, 96);
    assert!(
        (r.stages.load_s - 0.006).abs() < 1e-9 && (r.stages.jit_s - 0.012).abs() < 1e-9,
        "the device's stage split adds up"
    );
    let full = TuneOptions {
        adaptive: false,
        ..opts
    };
    let (r, screens) = run_screening(&cands, &full, std::time::Duration::ZERO);
    assert!(screens.iter().all(Option::is_none));
    assert_eq!(r.screened(), 0);
}

#[test]
fn the_deadline_stops_compiling_and_measuring() {
    let cands = configs(40);
    let limit = std::time::Duration::from_millis(300);
    let opts = TuneOptions {
        batch: 4,
        progress: false,
        time_limit: Some(limit),
        ..Default::default()
    };
    let start = std::time::Instant::now();
    let (r, _) = run_screening(&cands, &opts, std::time::Duration::from_millis(40));
    let took = start.elapsed();
    assert!(r.out_of_time, "{} trials", r.trials.len());
    assert!(r.trials.len() < 40 && !r.trials.is_empty());
    assert!(
        took < limit + std::time::Duration::from_millis(200),
        "ended {took:?} after the start, limit {limit:?}"
    );
    // A deadline already past: nothing is measured, even with nothing verified (`--time`
    // holds; issue 16).
    let past = TuneOptions {
        deadline: Some(std::time::Instant::now()),
        ..opts
    };
    let (r, screens) = run_screening(&cands, &past, std::time::Duration::ZERO);
    assert!(r.trials.is_empty(), "{:?}", r.trials);
    assert!(screens.is_empty() && r.out_of_time);
}

/// Times the first `quick` candidates at once, then hangs like a kernel that never ends:
/// until the deadline it was given, which cuts the candidate off (what the worker does).
struct Hangs {
    quick: usize,
    deadline: Option<std::time::Instant>,
    calls: usize,
}

impl Evaluate for Hangs {
    fn measure(&mut self, plan: &LaunchPlan) -> Outcome {
        self.calls += 1;
        if self.calls <= self.quick {
            return Fake { calls: 0 }.measure(plan);
        }
        let d = self.deadline.expect("a deadline to cut the hang off");
        std::thread::sleep(d.saturating_duration_since(std::time::Instant::now()));
        Outcome::OutOfTime
    }
    fn set_deadline(&mut self, deadline: Option<std::time::Instant>) {
        self.deadline = deadline;
    }
}

fn tune_with(
    cands: &[PerfConfig],
    eval: &mut dyn Evaluate,
    compile: impl Fn(&PerfConfig) -> Result<LaunchPlan, String> + Send + Sync + 'static,
    limit: std::time::Duration,
) -> (TuneReport, std::time::Duration) {
    let l = tiny();
    let ctx = SearchContext {
        lowering: &l,
        arch: &crate::arch::Arch::SM_90,
        candidates: cands,
    };
    let opts = TuneOptions {
        batch: 2,
        progress: false,
        time_limit: Some(limit),
        ..Default::default()
    };
    let start = std::time::Instant::now();
    let r = tune(
        &ctx,
        &mut Exhaustive::default(),
        compile,
        eval,
        &mut NoRecord,
        &opts,
    );
    (r, start.elapsed())
}

#[test]
fn a_candidate_hung_at_the_deadline_is_cut_off_not_failed_and_the_best_is_kept() {
    // Regression: a hung candidate overran `--time 8` by the worker's measure timeout (70 s).
    let cands = configs(12);
    let mut eval = Hangs {
        quick: 2,
        deadline: None,
        calls: 0,
    };
    // Long enough that the two quick candidates compile before it on a loaded machine (the
    // shared rayon pool also runs the other tests' compiles); the hang itself sleeps to it.
    let limit = std::time::Duration::from_millis(1500);
    let (r, took) = tune_with(&cands, &mut eval, plan_of, limit);
    assert!(
        took < limit + std::time::Duration::from_millis(300),
        "{took:?}"
    );
    assert!(r.out_of_time);
    assert_eq!(r.cut_off(), 1, "{:?}", r.trials);
    assert_eq!(r.failed(), 0, "a cut-off candidate is not a failure");
    assert_eq!(
        r.best().unwrap().0.block_m,
        32,
        "the best before the cut is kept"
    );
    assert_eq!(eval.calls, 3, "nothing measured after the cut");
    assert!(eval.deadline.is_none(), "the deadline is lifted at the end");
}

#[test]
fn a_compile_still_running_at_the_deadline_is_not_waited_for() {
    // LLVM cannot be interrupted; one slow candidate (a big f32 NCHW plan took minutes) must
    // not hold the problem past its deadline.
    // (Short enough not to starve the shared rayon pool of the other tests for long.)
    let cands = configs(2);
    let slow = |c: &PerfConfig| {
        std::thread::sleep(std::time::Duration::from_millis(1200));
        plan_of(c)
    };
    let mut fake = Fake { calls: 0 };
    let limit = std::time::Duration::from_millis(300);
    let (r, took) = tune_with(&cands, &mut fake, slow, limit);
    assert!(
        took < limit + std::time::Duration::from_millis(300),
        "{took:?}"
    );
    assert!(r.out_of_time && r.trials.is_empty());
    assert!(r.stages.codegen_wait_s > 0.2, "{:?}", r.stages);
    assert_eq!(fake.calls, 0);
}

/// Times like [`Fake`] and notes when each candidate was measured.
struct Stamps {
    start: std::time::Instant,
    at: Vec<(u32, std::time::Duration)>,
}

impl Evaluate for Stamps {
    fn measure(&mut self, plan: &LaunchPlan) -> Outcome {
        let bm: u32 = plan.launches[0].name.parse().unwrap();
        self.at.push((bm, self.start.elapsed()));
        Fake { calls: 0 }.measure(plan)
    }
}

/// Regression (session 9 on the H200, `scripts/session9/tune-cost.sh`): a batch was measured
/// only once all of it had compiled, so its slowest compile held the GPU idle (a bwd-weight
/// problem waited 3.6 s of its 10 for compiles; a 9-launch problem measured nothing in 10 s).
/// Now each candidate is measured as soon as it and those proposed before it have compiled,
/// still in proposal order.
#[test]
fn measuring_starts_before_the_slowest_compile_of_the_batch_ends() {
    let cands = configs(8);
    let slow = |c: &PerfConfig| {
        if c.block_m == 16 * 8 {
            std::thread::sleep(std::time::Duration::from_millis(1000));
        }
        plan_of(c)
    };
    let l = tiny();
    let ctx = SearchContext {
        lowering: &l,
        arch: &crate::arch::Arch::SM_90,
        candidates: &cands,
    };
    let opts = TuneOptions {
        batch: 8,
        progress: false,
        ..Default::default()
    };
    let mut eval = Stamps {
        start: std::time::Instant::now(),
        at: Vec::new(),
    };
    let r = tune(
        &ctx,
        &mut Exhaustive::default(),
        slow,
        &mut eval,
        &mut NoRecord,
        &opts,
    );
    assert_eq!(r.trials.len(), 8);
    let order: Vec<u32> = eval.at.iter().map(|a| a.0).collect();
    assert_eq!(order, (1..=8).map(|i| 16 * i).collect::<Vec<_>>());
    let ms = |k: usize| eval.at[k].1.as_millis();
    assert!(
        ms(6) < 600,
        "the fast seven waited for the slow one: {:?}",
        eval.at
    );
    assert!(ms(7) >= 1000, "{:?}", eval.at);
}

#[test]
fn a_deterministic_search_keeps_no_atomics_and_their_fixup_twins() {
    use crate::config::{MmaPath, Reduction};
    let arch = crate::arch::Arch::SM_90;
    for (line, dw) in [
        // Depthwise backward weight: the direct kernel stays, as partials.
        (
            "convbfp16 -n 8 -c 64 -H 14 -W 14 -k 64 -y 3 -x 3 -p 1 -q 1 -g 64 -F 4 --layout NHWC",
            true,
        ),
        // Grouped backward weight: split-K stays, by the fix-up.
        (
            "convbfp16 -n 8 -c 64 -H 14 -W 14 -k 64 -y 3 -x 3 -p 1 -q 1 -g 4 -F 4 --layout NHWC",
            false,
        ),
    ] {
        let p: crate::problem::ConvProblem = line.parse().unwrap();
        let l = lower(&p);
        let space = crate::space::SearchSpace::default_for(&arch);
        let plain = CampaignOptions::default().enumerate(&l, &arch, &space);
        let det = CampaignOptions {
            deterministic: true,
            ..CampaignOptions::default()
        }
        .enumerate(&l, &arch, &space);
        let dir = p.direction();
        assert!(plain.legal.iter().any(|c| c.adds_by_atomics(dir)), "{line}");
        assert!(!det.legal.is_empty() && det.legal.iter().all(|c| !c.adds_by_atomics(dir)));
        let twins = det
            .legal
            .iter()
            .filter(|c| c.red == Reduction::Fixup && (c.mma == MmaPath::Depthwise) == dw)
            .filter(|c| dw || c.split_k > 1)
            .count();
        assert!(twins > 0, "{line}: no fixup twins");
        let unique: std::collections::HashSet<_> = det.legal.iter().collect();
        assert_eq!(unique.len(), det.legal.len(), "{line}: a config twice");
    }
}
