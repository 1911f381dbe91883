//! The tuning loop against a fake device: budgets, failures, resume.

use super::*;
use crate::abi::{Module, CONV_ARGS};
use crate::config::LdsLayout;
use crate::lowering::lower;
use crate::runtime::{Launch, Timing};
use crate::search::Exhaustive;
use std::collections::HashMap;

fn configs(n: u32) -> Vec<PerfConfig> {
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
            resources: vec![],
        })
    }
}

fn compile(c: &PerfConfig) -> Result<LaunchPlan, String> {
    if c.block_m == 32 {
        return Err("does not compile".into());
    }
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

fn run(cands: &[PerfConfig], budget: Option<usize>, rec: &mut Mem) -> (TuneReport, usize) {
    let p = "conv -n 1 -c 4 -H 5 -W 5 -k 4 -y 3 -x 3 -F 1"
        .parse()
        .unwrap();
    let l = lower(&p);
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
