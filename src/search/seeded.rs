//! Measure what a compiler would use today first: a wrapper that puts given candidates (the
//! config `convtune lookup` answers for the problem: its tuned entry, a neighbour's winner, the
//! quick list or the heuristic) at the head of the first batch, then proposes what the wrapped
//! strategy proposes, never one of those again.
//!
//! Why: a search cut short by `--time` (a problem whose candidates are slow to compile, such
//! as a strided data gradient of four sub-GEMMs) may otherwise end with nothing measured, or with
//! a winner slower than the untuned fallback it replaces. Measured first, the fallback is the
//! floor of every search, and the wrapped strategy learns from it like from any measurement.

use super::{Measured, SearchContext, Strategy};

/// `inner`, with `first` measured before anything it proposes (over as many batches as they
/// fill).
pub struct Seeded {
    first: Vec<usize>,
    /// How many of `first` have been proposed.
    given: usize,
    inner: Box<dyn Strategy>,
}

impl Seeded {
    /// Proposes the candidates at `first` (indices into the search's candidates; duplicates
    /// and those out of range are dropped) in the first batch, then `inner`'s.
    pub fn new(first: Vec<usize>, inner: Box<dyn Strategy>) -> Self {
        let mut unique = Vec::with_capacity(first.len());
        for i in first {
            if !unique.contains(&i) {
                unique.push(i);
            }
        }
        Seeded {
            first: unique,
            given: 0,
            inner,
        }
    }
}

impl Strategy for Seeded {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn next_batch(
        &mut self,
        ctx: &SearchContext<'_>,
        measured: &[Measured],
        max: usize,
    ) -> Vec<usize> {
        let n = ctx.candidates.len();
        let mut batch: Vec<usize> = Vec::with_capacity(max);
        if self.given == 0 {
            self.first.retain(|&i| i < n);
        }
        let seeds = &self.first[self.given..];
        let take = seeds.len().min(max);
        batch.extend(&seeds[..take]);
        self.given += take;
        // The inner strategy proposes each candidate once, so asking again after a batch made
        // only of seeds ends: at worst when it runs dry.
        while batch.len() < max {
            let more = self.inner.next_batch(ctx, measured, max - batch.len());
            if more.is_empty() {
                break;
            }
            let before = batch.len();
            batch.extend(more.into_iter().filter(|i| !self.first.contains(i)));
            if batch.len() > before {
                break;
            }
        }
        batch
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arch::Arch;
    use crate::lowering::lower;
    use crate::search::{synthetic::candidates, Exhaustive, Guided};

    fn all_batches(s: &mut dyn Strategy, ctx: &SearchContext<'_>, max: usize) -> Vec<Vec<usize>> {
        let mut out = Vec::new();
        let mut measured = Vec::new();
        loop {
            let b = s.next_batch(ctx, &measured, max);
            if b.is_empty() {
                return out;
            }
            measured.extend(b.iter().map(|&index| Measured {
                index,
                time_us: Some(1.0 + index as f64),
            }));
            out.push(b);
        }
    }

    #[test]
    fn the_seeds_come_first_and_every_candidate_once() {
        let p = "convbfp16 -n 8 -c 64 -H 14 -W 14 -k 64 -y 3 -x 3 -p 1 -q 1 -F 1 --layout NHWC"
            .parse()
            .unwrap();
        let l = lower(&p);
        let cands = candidates(&p, &Arch::SM_90);
        assert!(cands.len() > 40, "{}", cands.len());
        let ctx = SearchContext {
            lowering: &l,
            arch: &Arch::SM_90,
            candidates: &cands,
        };
        let seeds = vec![17, 3, 17, cands.len() + 5];
        for inner in [
            Box::new(Exhaustive::default()) as Box<dyn Strategy>,
            Box::new(Guided::new(1)),
        ] {
            let name = inner.name();
            let mut s = Seeded::new(seeds.clone(), inner);
            let batches = all_batches(&mut s, &ctx, 8);
            assert_eq!(batches[0][..2], [17, 3], "{name}");
            let mut seen: Vec<usize> = batches.concat();
            let total = seen.len();
            seen.sort_unstable();
            seen.dedup();
            assert_eq!(seen.len(), total, "{name}: a candidate proposed twice");
            assert_eq!(total, cands.len(), "{name}: not every candidate proposed");
        }
    }
}
