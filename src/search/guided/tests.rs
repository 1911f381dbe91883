use super::correction::FAIL_PENALTY;
use super::*;
use crate::arch::Arch;
use crate::config::PerfConfig;
use crate::lowering::{lower, Lowering};
use crate::search::synthetic::candidates;

fn setup() -> (Lowering, Vec<PerfConfig>) {
    let p = "convbfp16 -n 64 -c 256 -H 28 -W 28 -k 256 -y 3 -x 3 -p 1 -q 1 -F 1 --layout NHWC"
        .parse()
        .unwrap();
    let c = candidates(&p, &Arch::SM_90);
    (lower(&p), c)
}

fn ctx<'a>(l: &'a Lowering, c: &'a [PerfConfig]) -> SearchContext<'a> {
    SearchContext {
        lowering: l,
        arch: &Arch::SM_90,
        candidates: c,
    }
}

#[test]
fn first_batch_spreads_over_tile_shapes() {
    let (l, c) = setup();
    let batch = Guided::new(0).next_batch(&ctx(&l, &c), &[], 32);
    assert_eq!(batch.len(), 32);
    let shapes: HashSet<[u32; 6]> = batch.iter().map(|&i| shape(&c[i].codes())).collect();
    assert_eq!(shapes.len(), 32, "one config per tile shape");
}

#[test]
fn small_spaces_get_small_batches() {
    let (l, c) = setup();
    let few = &c[..100];
    let mut g = Guided::new(0);
    assert_eq!(g.next_batch(&ctx(&l, few), &[], 32).len(), MIN_BATCH);
    let mid = &c[..800];
    assert_eq!(Guided::new(0).next_batch(&ctx(&l, mid), &[], 32).len(), 20);
    assert_eq!(Guided::new(0).next_batch(&ctx(&l, &c), &[], 5).len(), 5);
}

/// Truth: the model's time, but padded LDS is 3× faster than the model thinks and everything
/// with bk = 32 fails. Both must show in what the search proposes after feedback.
#[test]
fn measurements_and_failures_steer_later_batches() {
    let (l, c) = setup();
    let cx = ctx(&l, &c);
    let model = CostModel::new(&l, CostArch::from_arch(&Arch::SM_90, l.problem.dtype()));
    let truth = |i: usize| {
        let cfg = &c[i];
        (cfg.block_k != 32).then(|| {
            let pad = cfg.lds == crate::config::LdsLayout::Padded;
            model.estimate(cfg).time_us * if pad { 1.0 / 3.0 } else { 1.0 }
        })
    };
    let share = |batch: &[usize], f: &dyn Fn(&PerfConfig) -> bool| {
        batch.iter().filter(|&&i| f(&c[i])).count() as f64 / batch.len() as f64
    };
    let mut g = Guided::new(0);
    let mut measured = Vec::new();
    let first = g.next_batch(&cx, &measured, 32);
    let mut pending = first.clone();
    let mut last = Vec::new();
    for _ in 0..6 {
        let b = g.next_batch(&cx, &measured, 32);
        measured.extend(pending.iter().map(|&i| Measured {
            index: i,
            time_us: truth(i),
        }));
        pending = b.clone();
        last = b;
    }
    let pad = |p: &PerfConfig| p.lds == crate::config::LdsLayout::Padded;
    let bk32 = |p: &PerfConfig| p.block_k == 32;
    assert!(
        share(&last, &pad) > share(&first, &pad) + 0.3,
        "padded: {} → {}",
        share(&first, &pad),
        share(&last, &pad)
    );
    assert!(
        share(&last, &bk32) < share(&first, &bk32).max(0.3) - 0.2,
        "bk 32: {} → {}",
        share(&first, &bk32),
        share(&last, &bk32)
    );
}

#[test]
fn local_search_proposes_the_winners_neighbours() {
    let (l, c) = setup();
    let cx = ctx(&l, &c);
    let mut g = Guided::new(3);
    let first = g.next_batch(&cx, &[], 32);
    let _second = g.next_batch(&cx, &[], 32);
    // The last config of the first batch measured far faster than all others.
    let winner = first[31];
    let measured: Vec<Measured> = first
        .iter()
        .map(|&i| Measured {
            index: i,
            time_us: Some(if i == winner { 1.0 } else { 100.0 }),
        })
        .collect();
    let third = g.next_batch(&cx, &measured, 32);
    let lattice = Lattice::new(&c);
    let near: HashSet<usize> = lattice.neighbours(winner).into_iter().collect();
    let hits = third.iter().filter(|i| near.contains(i)).count();
    assert!(
        hits >= 8,
        "{hits} of 32 proposals are the winner's neighbours"
    );
}

#[test]
fn a_failure_penalises_its_neighbours_only() {
    let (l, c) = setup();
    let g = Guided::new(0);
    let mut st = g.init(&ctx(&l, &c));
    let before = st.scores(&[], &[]);
    let failed = 10;
    let after = st.scores(
        &[Measured {
            index: failed,
            time_us: None,
        }],
        &[],
    );
    let near: HashSet<usize> = st.lattice.neighbours(failed).into_iter().collect();
    assert!(!near.is_empty());
    for i in 0..c.len() {
        let d = after[i] - before[i];
        if near.contains(&i) {
            assert!((d - FAIL_PENALTY).abs() < 1e-12, "{i}: {d}");
        } else {
            assert_eq!(d, 0.0, "{i}");
        }
    }
}

/// Scores with ties, signed zeros, infinities and NaN: what the keyed sorts must order exactly
/// as the comparison sorts they replaced (`total_cmp`, then index).
fn awkward_scores(n: usize) -> Vec<f64> {
    let mut rng = SplitMix64::new(7);
    (0..n)
        .map(|i| match i % 11 {
            0 => 1.5,
            1 => -0.0,
            2 => 0.0,
            3 => f64::INFINITY,
            4 => f64::NEG_INFINITY,
            5 => f64::NAN,
            _ => (rng.next_f64() * 8.0).round() / 4.0 - 1.0,
        })
        .collect()
}

#[test]
fn diverse_picks_equal_walking_the_full_ranking() {
    let (l, c) = setup();
    let c = &c[..c.len().min(3000)];
    let awkward = awkward_scores(c.len());
    // The best thousand or so configs share one block tile: the sort must go deeper.
    let clustered: Vec<f64> = (0..c.len())
        .map(|i| {
            let same = c[i].block_m == c[0].block_m && c[i].block_n == c[0].block_n;
            if same {
                -10.0 + awkward[i].clamp(-1.0, 1.0)
            } else {
                awkward[i]
            }
        })
        .collect();
    for scores in [&awkward, &clustered] {
        let mut full: Vec<usize> = (0..c.len()).collect();
        full.sort_by(|&a, &b| scores[a].total_cmp(&scores[b]).then(a.cmp(&b)));
        for want in [1, 5, 32, 200, 5000] {
            let mut a = Guided::new(0).init(&ctx(&l, c));
            let mut b = Guided::new(0).init(&ctx(&l, c));
            for i in (0..c.len()).step_by(5) {
                a.proposed[i] = true;
                b.proposed[i] = true;
            }
            let mut m = Guided::new(0).init(&ctx(&l, c));
            m.proposed.clone_from(&a.proposed);
            let (mut x, mut y, mut z) = (Vec::new(), Vec::new(), Vec::new());
            a.diverse_by(scores, want, &mut x);
            b.diverse(&full, want, &mut y);
            m.diverse_by_table(scores, want, &mut z, 0);
            assert_eq!(x, y, "want {want}");
            assert_eq!(z, y, "want {want}, shapes in a map");
            assert!(!x.is_empty());
        }
    }
}

#[test]
fn a_big_space_starts_from_a_sample_and_then_ranks_the_rest() {
    let (l, c) = setup();
    let cx = ctx(&l, &c);
    let sampled = || Guided::new(4).sampling(1000, 512);
    let mut g = sampled();
    let head = g.next_batch(&cx, &[], 32);
    assert!(g.state.is_none(), "nothing ranked whole yet");
    assert_eq!(head, sampled().next_batch(&cx, &[], 32), "reproducible");
    assert_eq!(head.len(), 32);
    let shapes: HashSet<[u32; 6]> = head.iter().map(|&i| shape(&c[i].codes())).collect();
    assert_eq!(shapes.len(), 32, "one config per tile shape");
    // Good picks by the model: the best of the head is in the top 2% of the whole space.
    let model = CostModel::new(&l, CostArch::from_arch(&Arch::SM_90, l.problem.dtype()));
    let t: Vec<f64> = c.iter().map(|x| model.estimate(x).time_us).collect();
    let best = head.iter().map(|&i| t[i]).fold(f64::INFINITY, f64::min);
    let better = t.iter().filter(|&&x| x < best).count();
    assert!(
        better * 50 < c.len(),
        "{better} of {} predicted faster",
        c.len()
    );
    // The second call is answered from the sample too (new tile shapes first), while the
    // space is ranked in the background; the third takes that ranking, which equals the one
    // made in place.
    let second = g.next_batch(&cx, &[], 32);
    assert!(
        g.state.is_none(),
        "the second batch is blind too: from the sample"
    );
    assert_eq!(second, {
        let mut again = sampled();
        again.next_batch(&cx, &[], 32);
        again.next_batch(&cx, &[], 32)
    });
    assert!(second.iter().all(|i| !head.contains(i)));
    let shapes2: HashSet<[u32; 6]> = second.iter().map(|&i| shape(&c[i].codes())).collect();
    assert!(shapes2.is_disjoint(&shapes), "new tile shapes first");
    let third = g.next_batch(&cx, &[], 32);
    let st = g.state.as_ref().expect("ranked whole at the third call");
    assert_eq!(st.prior, Guided::new(4).init(&cx).prior);
    assert_eq!(st.batches, 3);
    assert!(st.proposed.iter().filter(|&&p| p).count() == 96);
    // To the end, every candidate exactly once.
    let mut all = head.clone();
    all.extend(second.iter().chain(&third));
    let head: Vec<usize> = all.clone();
    loop {
        let b = g.next_batch(&cx, &[], 50);
        if b.is_empty() {
            break;
        }
        assert!(b.iter().all(|i| !head.contains(i)));
        all.extend(b);
    }
    assert!(g.state.as_ref().is_some_and(|s| s.batches > 1));
    all.sort_unstable();
    assert_eq!(all, (0..c.len()).collect::<Vec<_>>());
    // Below the threshold, the first batch is the whole space's diverse top.
    let whole = Guided::new(4).next_batch(&cx, &[], 32);
    let mut g = Guided::new(4).sampling(c.len(), 512);
    assert_eq!(g.next_batch(&cx, &[], 32), whole);
}

#[test]
fn a_background_ranking_no_longer_wanted_stops() {
    let (l, c) = setup();
    let model = CostModel::new(&l, CostArch::from_arch(&Arch::SM_90, l.problem.dtype()));
    let stop = std::sync::atomic::AtomicBool::new(true);
    assert!(State::build(4, &model, &c, &stop).is_none());
    stop.store(false, std::sync::atomic::Ordering::Relaxed);
    assert!(State::build(4, &model, &c, &stop).is_some_and(|s| s.prior.len() == c.len()));
}

#[test]
fn top_k_of_the_unproposed_equals_the_head_of_the_full_sort() {
    let (l, c) = setup();
    let c = &c[..c.len().min(2000)];
    let mut st = Guided::new(0).init(&ctx(&l, c));
    let scores = awkward_scores(c.len());
    for i in (0..c.len()).step_by(3) {
        st.proposed[i] = true;
    }
    let mut full: Vec<usize> = (0..c.len()).filter(|&i| !st.proposed[i]).collect();
    full.sort_by(|&a, &b| scores[a].total_cmp(&scores[b]).then(a.cmp(&b)));
    for k in [0, 1, 7, 65, full.len(), full.len() + 5] {
        let top = st.best_unproposed(&scores, k);
        assert_eq!(top, full[..k.min(full.len())], "k = {k}");
    }
}

#[test]
fn the_first_pick_is_what_a_fresh_search_proposes_first() {
    let (l, c) = setup();
    let cx = ctx(&l, &c);
    // A big space (from its sample, with no ranking started) and a small one (ranked whole).
    for g in [Guided::new(0).sampling(1000, 512), Guided::new(0)] {
        let first = g.first_pick(&cx);
        assert!(
            g.head.is_none() && g.state.is_none(),
            "nothing kept or started"
        );
        let mut fresh = Guided { ..g };
        assert_eq!(first, fresh.next_batch(&cx, &[], 1).first().copied());
        assert!(first.is_some());
    }
}
