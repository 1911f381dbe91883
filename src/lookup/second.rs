//! A first-use benchmark's second round: after timing the lookup's candidates
//! ([`super::FIRST_USE_CANDIDATES`]), the configs the tuner's guided search would measure next
//! from those times ([`search::Guided`]'s local search around the measured winners, with the
//! cost model corrected by what was measured).
//!
//! Why: the fallback's list is ranked by the cost model alone, and where its error is largest
//! (near-ties among widths, layouts and tiles the model cannot tell apart) the fastest of the
//! list stays well short of tuned. A round steered by measurements reaches further than more
//! of the model's picks: with each shipped entry held out (session 38, one H100), this round's
//! eight lifted the fastest measured from 0.983 of tuned speed to 1.011 (geomean over 185;
//! below 0.8: 5 -> 1), where eight model-ranked twins of the list's first two (the other
//! shared-memory layout, narrower widths) reached 0.992 (4 below 0.8).

use super::Limits;
use crate::arch::Arch;
use crate::config::PerfConfig;
use crate::lowering::lower;
use crate::problem::ConvProblem;
use crate::search::{Guided, Measured, SearchContext, Strategy};
use std::collections::HashMap;

/// How many configs a first use times in its second round (`convtune.torch` with
/// `benchmark = True`, `CONVTUNE_SECOND_ROUND_CANDIDATES` in C): one batch of the tuner's
/// local search, after the [`super::FIRST_USE_CANDIDATES`].
pub const SECOND_ROUND_CANDIDATES: usize = 8;

/// Up to `n` configs to time after `measured` (each config with its time in µs, `None` where
/// it failed), best guess first: what the tuner's guided search proposes next from those
/// measurements over the legal configs inside `limits` (the built-in search, else the
/// limits' space). Never one of `measured`; empty when nothing measured succeeded (there is
/// no winner to search around) or `n` is 0.
pub fn second_round(
    problem: &ConvProblem,
    arch: &Arch,
    limits: Limits<'_>,
    measured: &[(PerfConfig, Option<f64>)],
    n: usize,
) -> Vec<PerfConfig> {
    if n == 0 || !measured.iter().any(|(_, t)| t.is_some_and(f64::is_finite)) {
        return Vec::new();
    }
    let l = lower(problem);
    let legal = super::legal_within(problem, &l, arch, limits).legal;
    // Each measured config's place in the legal list, in one pass over it. One outside the
    // list (another space, a stale list) cannot be proposed, and its time cannot steer a
    // search that has no point for it.
    let times_of: HashMap<PerfConfig, Option<f64>> = measured.iter().copied().collect();
    let known: Vec<(usize, Option<f64>)> = legal
        .iter()
        .enumerate()
        .filter_map(|(i, c)| times_of.get(c).map(|&t| (i, t)))
        .collect();
    let ctx = SearchContext {
        lowering: &l,
        arch,
        candidates: &legal,
    };
    let taken: Vec<usize> = known.iter().map(|k| k.0).collect();
    let times: Vec<Measured> = known
        .iter()
        .map(|&(index, time_us)| Measured { index, time_us })
        .collect();
    // The whole space ranked at once (no sampled start: its blind first batches would ignore
    // the times). The search does not know which configs were measured until it proposes
    // one: those are dropped, and it is asked again for the rest.
    let mut search = Guided::new(0).ranked_whole();
    let mut out: Vec<usize> = Vec::with_capacity(n);
    while out.len() < n {
        let batch = search.next_batch(&ctx, &times, n - out.len());
        if batch.is_empty() {
            break;
        }
        out.extend(batch.into_iter().filter(|i| !taken.contains(i)));
    }
    out.into_iter().map(|i| legal[i]).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problem() -> ConvProblem {
        "convbfp16 -F 1 -n 64 -c 24 -H 56 -W 56 -k 16 -y 3 -x 3 -p 1 -q 1 -u 1 -v 1 -l 1 -j 1 \
         -g 1 -I NHWGC -f GKYXC -O NHWGC"
            .parse()
            .unwrap()
    }

    #[test]
    fn proposes_legal_unmeasured_configs_near_the_winner() {
        let p = problem();
        let arch = Arch::from_name("sm_90").unwrap();
        let first = super::super::find_candidates_in_space(
            &p,
            &arch,
            crate::db::Layered {
                system: crate::db::system("sm_90").unwrap(),
                user: None,
            },
            None,
            Limits::default(),
            8,
        )
        .unwrap();
        // The last of the list measured fastest, the others slower the further up they are.
        let measured: Vec<(PerfConfig, Option<f64>)> = first
            .iter()
            .enumerate()
            .map(|(i, f)| (f.config, Some(100.0 - i as f64)))
            .collect();
        let next = second_round(&p, &arch, Limits::default(), &measured, 8);
        assert_eq!(next.len(), 8);
        let l = lower(&p);
        for c in &next {
            assert!(
                crate::legality::check(&l, c, &arch).is_ok(),
                "{c} is illegal"
            );
            assert!(measured.iter().all(|(m, _)| m != c), "{c} was measured");
        }
        // Most of the round is the local search around the fastest: one field away from it.
        let best = measured.last().unwrap().0;
        let near = next
            .iter()
            .filter(|c| {
                let (a, b) = (best.codes(), c.codes());
                crate::config::Field::ALL
                    .iter()
                    .filter(|&&f| a[f] != b[f])
                    .count()
                    <= 2
            })
            .count();
        assert!(near >= 4, "{near} of {next:?} are near {best}");
        // The same measurements, the same round.
        assert_eq!(
            next,
            second_round(&p, &arch, Limits::default(), &measured, 8)
        );
    }

    #[test]
    fn nothing_measured_nothing_proposed() {
        let p = problem();
        let arch = Arch::from_name("sm_90").unwrap();
        let c = super::super::heuristic(&p, &arch).unwrap();
        assert!(second_round(&p, &arch, Limits::default(), &[(c, None)], 8).is_empty());
        assert!(second_round(&p, &arch, Limits::default(), &[(c, Some(3.0))], 0).is_empty());
    }
}
