//! Properties every strategy must have: deterministic for a seed, never the same index twice,
//! every index eventually, never more than asked for.

use super::synthetic::candidates;
use super::*;
use crate::arch::Arch;
use crate::lowering::{lower, Lowering};
use crate::problem::ConvProblem;

fn setup() -> (Lowering, Vec<PerfConfig>) {
    let p: ConvProblem =
        "convbfp16 -n 8 -c 128 -H 14 -W 14 -k 128 -y 3 -x 3 -p 1 -q 1 -F 1 --layout NHWC"
            .parse()
            .unwrap();
    let cands = candidates(&p, &Arch::SM_90);
    (lower(&p), cands)
}

/// Drives a strategy to the end with a fake time per index (`time(i)`, `None` = failure),
/// measurements lagging one batch, batch sizes varying; returns the proposal order.
fn drive(
    s: &mut dyn Strategy,
    ctx: &SearchContext<'_>,
    time: impl Fn(usize) -> Option<f64>,
) -> Vec<usize> {
    let mut order = Vec::new();
    let mut measured = Vec::new();
    let mut pending: Vec<usize> = Vec::new();
    for round in 0.. {
        let max = [32, 7, 1, 50][round % 4];
        let batch = s.next_batch(ctx, &measured, max);
        assert!(batch.len() <= max, "{}: {} > {max}", s.name(), batch.len());
        for i in pending.drain(..) {
            measured.push(Measured {
                index: i,
                time_us: time(i),
            });
        }
        if batch.is_empty() {
            break;
        }
        order.extend(&batch);
        pending = batch;
    }
    order
}

#[test]
fn every_strategy_proposes_each_candidate_exactly_once_and_deterministically() {
    let (l, cands) = setup();
    let ctx = SearchContext {
        lowering: &l,
        arch: &Arch::SM_90,
        candidates: &cands,
    };
    let time = |i: usize| (!i.is_multiple_of(13)).then(|| 100.0 + ((i * 7919) % 1000) as f64);
    for name in STRATEGIES {
        let a = drive(by_name(name, 5).unwrap().as_mut(), &ctx, time);
        let mut sorted = a.clone();
        sorted.sort_unstable();
        assert_eq!(
            sorted,
            (0..cands.len()).collect::<Vec<_>>(),
            "{name}: each index exactly once"
        );
        let b = drive(by_name(name, 5).unwrap().as_mut(), &ctx, time);
        assert_eq!(a, b, "{name}: same seed, same order");
    }
    let r1 = drive(by_name("random", 1).unwrap().as_mut(), &ctx, time);
    let r2 = drive(by_name("random", 2).unwrap().as_mut(), &ctx, time);
    assert_ne!(r1, r2, "the seed matters");
    assert!(by_name("nonsense", 0).is_none());
    assert_eq!(STRATEGIES[0], "guided", "the default comes first");
}

#[test]
fn empty_candidate_list_ends_at_once() {
    let (l, _) = setup();
    let ctx = SearchContext {
        lowering: &l,
        arch: &Arch::SM_90,
        candidates: &[],
    };
    for name in STRATEGIES {
        assert!(
            by_name(name, 0)
                .unwrap()
                .next_batch(&ctx, &[], 32)
                .is_empty(),
            "{name}"
        );
    }
}
