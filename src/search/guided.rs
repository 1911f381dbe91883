//! The default strategy: model-ranked start, then local search from the measured winners, with
//! the model corrected by every measurement.
//!
//! 1. The [`cost`](super::cost) model predicts every candidate. The first batches take the top
//!    of that ranking, one config per tile shape (block and warp tile, `block_k`, split-K) before
//!    any shape repeats, so the first measurements spread over the space instead of 32 configs
//!    that differ only in a vector width. A space of millions takes its first batch from a
//!    stratified sample (`Guided::sampled_start`), and so does its second batch, while the
//!    space is ranked whole on a thread of its own (`background`); the third call, made once
//!    the first batch is measured, takes that ranking. The first compile starts within a
//!    sample's worth of ranking, and the tuner's loop never waits for the whole space's.
//! 2. Each measurement corrects the model: the log-residual `ln(measured / predicted)` is fitted
//!    as a sum of per-field-value terms (and a few field pairs), shrunk towards zero (ridge by
//!    backfitting), and applied to every unmeasured candidate that shares those values.
//! 3. Most of each later batch is local search: lattice neighbours (one field one step, see
//!    `lattice`) of the best few measured configs, ranked by the parent's measured time plus the
//!    corrected model's difference between neighbour and parent. Besides the best three, a few
//!    more parents are admitted by a simulated-annealing test against a cooling temperature, so
//!    the search can leave a local optimum; the seed fixes those draws.
//! 4. The rest of each batch are the corrected model's global picks, so a region the local search
//!    has not reached still gets measured.
//! 5. A failed candidate (no time) adds a penalty to its lattice neighbours, so the search steers
//!    away from regions that fail (too many registers, a miscompiling width) without excluding
//!    them.
//!
//! Every candidate is proposed at most once, and after the ranked pools run dry the remaining
//! candidates follow in model order, so with an unlimited budget this is exhaustive.

use super::cost::{CostArch, CostModel};
use super::lattice::Lattice;
use super::rng::SplitMix64;
use super::{Measured, SearchContext, Strategy};
use crate::config::PerfConfig;
use crate::config::{Field, PerField};
use background::{cancelled, Background};
use correction::Fit;
use pick::order_key;
use rayon::prelude::*;
use std::collections::HashSet;
use std::sync::atomic::AtomicBool;

/// The fields that make a tile shape (the first batches take one config per shape).
const SHAPE: [Field; 6] = [
    Field::BlockM,
    Field::BlockN,
    Field::BlockK,
    Field::WarpM,
    Field::WarpN,
    Field::SplitK,
];
/// Batches are at most 1/`SMALL_BATCH_DIVISOR` of the space (but `MIN_BATCH` at least).
const SMALL_BATCH_DIVISOR: usize = 40;
const MIN_BATCH: usize = 8;
/// Parents always expanded; at most this many more admitted by annealing.
const TOP_PARENTS: usize = 3;
const EXTRA_PARENTS: usize = 3;
/// At most this many parents when walking further down for unproposed neighbours.
const MAX_PARENTS: usize = 48;
/// Spaces of more candidates than this take their first batch from a sample (see
/// [`Guided::sampled_start`]); smaller ones, every recording among them, are ranked whole from
/// the start.
const SAMPLE_ABOVE: usize = 1 << 18;
/// Size of that sample: one candidate drawn from each of this many equal slices of the list.
const SAMPLE: usize = 1 << 16;
/// Calls of a big space answered from its sample before the whole ranking is waited for: the
/// two blind batches the tuner proposes before it has measured anything.
const SAMPLE_CALLS: u32 = 2;

/// Model-guided local search (the default strategy).
#[derive(Debug)]
pub struct Guided {
    seed: u64,
    arch: Option<CostArch>,
    state: Option<State>,
    /// A big space's start, before the whole space is ranked (taken into the state when it is
    /// built).
    head: Option<Head>,
    /// [`SAMPLE_ABOVE`] and [`SAMPLE`] (tests lower them).
    sample_above: usize,
    sample: usize,
}

/// A big space's first batches, picked from a sample while the whole space is ranked in the
/// background.
#[derive(Debug)]
struct Head {
    /// The space's candidate count (a new space starts afresh).
    n: usize,
    /// The sample, by the model, best first.
    ranked: Vec<usize>,
    /// What the calls answered from the sample proposed.
    taken: Vec<usize>,
    /// How many calls it answered.
    calls: u32,
    /// The whole space's ranking; `None` when no thread could be started.
    ranking: Option<Background>,
}

impl Head {
    /// The next `max` picks of the sample: one per tile shape not proposed yet, best first,
    /// then the best of the rest.
    fn pick(&mut self, candidates: &[PerfConfig], max: usize) -> Vec<usize> {
        self.calls += 1;
        let taken: HashSet<usize> = self.taken.iter().copied().collect();
        let mut seen: HashSet<[u32; 6]> = self
            .taken
            .iter()
            .map(|&i| shape(&candidates[i].codes()))
            .collect();
        let mut batch: Vec<usize> = self
            .ranked
            .iter()
            .copied()
            .filter(|i| !taken.contains(i))
            .filter(|&i| seen.insert(shape(&candidates[i].codes())))
            .take(max)
            .collect();
        // Fewer new shapes than the batch: the best of the rest.
        for &i in &self.ranked {
            if batch.len() >= max {
                break;
            }
            if !taken.contains(&i) && !batch.contains(&i) {
                batch.push(i);
            }
        }
        self.taken.extend(&batch);
        batch
    }
}

#[derive(Debug)]
struct State {
    lattice: Lattice,
    /// ln(predicted µs) per candidate, finite.
    prior: Vec<f64>,
    proposed: Vec<bool>,
    shapes_seen: HashSet<[u32; 6]>,
    batches: u32,
    rng: SplitMix64,
    /// The fitted correction and how many successes it was fitted on: refitted when the
    /// successes grew by an eighth (or a batch), so a long run does not refit every batch.
    fit: Fit,
    /// Failures already turned into neighbour penalties, and the penalties.
    failure_seen: Vec<bool>,
    penalty: Vec<f64>,
    /// Proposals so far per field and value level (exploration bonus).
    tried: PerField<Vec<u32>>,
    /// Measurements counted so far, and (failures, measurements) per field and value level.
    counted: Vec<bool>,
    outcomes: PerField<Vec<(u32, u32)>>,
    totals: (u32, u32),
}

impl Guided {
    /// A guided search whose annealing draws follow `seed`; the model uses the context's arch
    /// with the data-sheet rates of [`CostArch::from_arch`].
    pub fn new(seed: u64) -> Self {
        Guided {
            seed,
            arch: None,
            state: None,
            head: None,
            sample_above: SAMPLE_ABOVE,
            sample: SAMPLE,
        }
    }

    /// The same search with the model's machine numbers fixed (another GPU, tests).
    pub fn with_arch(seed: u64, arch: CostArch) -> Self {
        Guided {
            seed,
            arch: Some(arch),
            state: None,
            head: None,
            sample_above: SAMPLE_ABOVE,
            sample: SAMPLE,
        }
    }

    /// The same search with the whole space ranked before the first batch, however big (no
    /// sampled start, [`Self::sampled_start`]): for a caller whose first call already brings
    /// measurements (a first use's second round, [`crate::lookup::second_round`]), which the
    /// sampled start's blind batches would ignore.
    pub fn ranked_whole(mut self) -> Self {
        self.sample_above = usize::MAX;
        self
    }

    /// The candidate the model alone ranks best among the unproposed ones `keep` admits, once
    /// a batch has been asked for (`None` before, or when `keep` admits none): a caller's pick
    /// outside the local search, such as a first use's second round covering a kernel its
    /// first round never ran ([`crate::lookup::second_round`]).
    pub fn best_predicted_where(&self, keep: impl Fn(usize) -> bool + Sync) -> Option<usize> {
        let st = self.state.as_ref()?;
        (0..st.prior.len())
            .into_par_iter()
            .filter(|&i| !st.proposed[i] && keep(i))
            .min_by_key(|&i| (order_key(st.prior[i]), i))
    }

    /// The same search with the sampled start ([`Self::sampled_start`]) for spaces above
    /// `above` candidates, from a sample of `sample`.
    #[cfg(test)]
    fn sampling(mut self, above: usize, sample: usize) -> Self {
        self.sample_above = above;
        self.sample = sample;
        self
    }

    /// The cost model's machine numbers for the context's arch.
    fn machine(&self, ctx: &SearchContext<'_>) -> CostArch {
        let dtype = ctx.lowering.problem.dtype();
        self.arch
            .unwrap_or_else(|| CostArch::from_arch(ctx.arch, dtype))
    }

    /// The cost model for the context's problem.
    fn model<'a>(&self, ctx: &SearchContext<'a>) -> CostModel<'a> {
        CostModel::new(ctx.lowering, self.machine(ctx))
    }

    /// The start of a big space, before the whole space is ranked: one candidate from
    /// each of [`SAMPLE`] equal slices of the list (a seeded draw within the slice, so every
    /// region of the enumeration, and so every tile shape with more than a slice's worth of
    /// configs, is represented without aliasing against the inner fields' periods), ranked by
    /// the model ([`Head::pick`] takes one per tile shape, best first). Ranking millions of
    /// configs (the model, the lattice, the sorts) starts on a thread of its own
    /// ([`Background`]): the first candidate compiles after a sample's worth of ranking
    /// instead of a space's (issue 16: the fixed cost of a problem).
    fn sampled_start(&self, ctx: &SearchContext<'_>) -> Head {
        Head {
            n: ctx.candidates.len(),
            ranked: self.sample_ranked(ctx),
            taken: Vec::new(),
            calls: 0,
            ranking: Background::start(self.seed, self.machine(ctx), ctx.lowering, ctx.candidates),
        }
    }

    /// [`Self::sampled_start`]'s sample, by the model, best first.
    fn sample_ranked(&self, ctx: &SearchContext<'_>) -> Vec<usize> {
        let n = ctx.candidates.len();
        let model = self.model(ctx);
        let mut rng = SplitMix64::new(self.seed ^ 0xBB67_AE85_84CA_A73B);
        let slices = self.sample.clamp(1, n);
        let picks: Vec<usize> = (0..slices)
            .map(|s| {
                let (lo, hi) = (s * n / slices, (s + 1) * n / slices);
                lo + rng.below(hi - lo)
            })
            .collect();
        let mut keyed: Vec<(i64, u32)> = picks
            .into_par_iter()
            .map(|i| {
                let t = model.estimate(&ctx.candidates[i]).time_us;
                let t = if t.is_finite() && t > 0.0 {
                    t.ln()
                } else {
                    f64::INFINITY
                };
                (order_key(t), i as u32)
            })
            .collect();
        keyed.par_sort_unstable();
        keyed.dedup_by_key(|k| k.1);
        keyed.into_iter().map(|(_, i)| i as usize).collect()
    }

    /// The candidate a fresh search proposes first, without ranking a big space whole in the
    /// background for batches that will never be asked for: the lookup's heuristic (the cost
    /// model's pick for a problem no database knows) wants one config, and a ranking thread
    /// copying and scoring millions of configs would compete with the tuner that asked it.
    pub fn first_pick(&self, ctx: &SearchContext<'_>) -> Option<usize> {
        self.first_picks(ctx, 1).first().copied()
    }

    /// The first `n` candidates a fresh search proposes, in its order ([`Self::first_pick`]
    /// first): the fallback's own guesses where its other sources are few.
    pub fn first_picks(&self, ctx: &SearchContext<'_>, n: usize) -> Vec<usize> {
        if ctx.candidates.len() > self.sample_above {
            let mut ranked = self.sample_ranked(ctx);
            ranked.truncate(n);
            return ranked;
        }
        let mut fresh = Guided {
            state: None,
            head: None,
            ..*self
        };
        fresh.next_batch(ctx, &[], n)
    }

    /// The whole space ranked, in place.
    fn init(&self, ctx: &SearchContext<'_>) -> State {
        State::build(
            self.seed,
            &self.model(ctx),
            ctx.candidates,
            &AtomicBool::new(false),
        )
        .unwrap_or_else(|| unreachable!("never cancelled"))
    }
}

impl State {
    /// The state of a search over `candidates` before anything is proposed: the model's
    /// prior for every candidate and the lattice. `None` when `stop` is set between stages
    /// (a background ranking no longer wanted).
    fn build(
        seed: u64,
        model: &CostModel<'_>,
        candidates: &[PerfConfig],
        stop: &AtomicBool,
    ) -> Option<State> {
        let n = candidates.len();
        // Spaces reach millions of candidates: the model and the sorts run on every core.
        let raw: Vec<f64> = candidates
            .par_iter()
            .map(|c| model.estimate(c).time_us)
            .collect();
        if cancelled(stop) {
            return None;
        }
        // Infeasible by the model's reckoning (it may be wrong): last, but still ordered.
        let worst = raw
            .iter()
            .copied()
            .filter(|t| t.is_finite() && *t > 0.0)
            .fold(1.0f64, f64::max);
        let prior: Vec<f64> = raw
            .iter()
            .map(|&t| {
                if t.is_finite() && t > 0.0 {
                    t.ln()
                } else {
                    (worst * 4.0).ln()
                }
            })
            .collect();
        let lattice = Lattice::new(candidates);
        Some(State {
            prior,
            proposed: vec![false; n],
            shapes_seen: HashSet::new(),
            batches: 0,
            rng: SplitMix64::new(seed ^ 0x6A09_E667_F3BC_C908),
            fit: Fit::default(),
            failure_seen: vec![false; n],
            penalty: vec![0.0; n],
            tried: PerField::from_fn(|f| vec![0; lattice.levels(f)]),
            counted: vec![false; n],
            outcomes: PerField::from_fn(|f| vec![(0, 0); lattice.levels(f)]),
            totals: (0, 0),
            lattice,
        })
    }
}

/// The tile shape of a lattice point ([`SHAPE`]).
fn shape(p: &PerField<u32>) -> [u32; 6] {
    SHAPE.map(|f| p[f])
}

impl State {
    /// Measured successes, fastest first.
    fn winners(measured: &[Measured], n: usize) -> Vec<(usize, f64)> {
        let mut ok: Vec<(usize, f64)> = measured
            .iter()
            .filter(|m| m.index < n)
            .filter_map(|m| {
                m.time_us
                    .filter(|t| t.is_finite() && *t > 0.0)
                    .map(|t| (m.index, t.ln()))
            })
            .collect();
        ok.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
        ok.dedup_by_key(|x| x.0);
        ok
    }

    /// Parents of the local search: the best few, plus annealing-admitted others.
    fn parents(&mut self, winners: &[(usize, f64)]) -> Vec<(usize, f64)> {
        let mut parents: Vec<(usize, f64)> = winners.iter().take(TOP_PARENTS).copied().collect();
        let Some(&(_, best)) = winners.first() else {
            return parents;
        };
        let temperature = 0.15 * 0.85f64.powi(self.batches as i32);
        let mut extra = 0;
        for &(i, t) in winners.iter().skip(TOP_PARENTS).take(40) {
            if extra >= EXTRA_PARENTS {
                break;
            }
            if self.rng.next_f64() < (-(t - best) / temperature).exp() {
                parents.push((i, t));
                extra += 1;
            }
        }
        parents
    }
}

impl Strategy for Guided {
    fn name(&self) -> &'static str {
        "guided"
    }

    fn next_batch(
        &mut self,
        ctx: &SearchContext<'_>,
        measured: &[Measured],
        max: usize,
    ) -> Vec<usize> {
        let n = ctx.candidates.len();
        // Small spaces: smaller batches, so measurements steer the search sooner (the tuner
        // proposes one batch ahead, so the first two batches are always blind).
        let max = max.min(n.div_ceil(SMALL_BATCH_DIVISOR).max(MIN_BATCH));
        if max == 0 || n == 0 {
            return Vec::new();
        }
        if self.state.as_ref().is_none_or(|s| s.prior.len() != n) {
            if n > self.sample_above {
                if self.head.as_ref().is_none_or(|h| h.n != n) {
                    self.head = Some(self.sampled_start(ctx));
                }
                if let Some(head) = self.head.as_mut().filter(|h| h.calls < SAMPLE_CALLS) {
                    let batch = head.pick(ctx.candidates, max);
                    if !batch.is_empty() {
                        return batch;
                    }
                }
            }
            let mut head = self.head.take().filter(|h| h.n == n);
            let mut st = head
                .as_mut()
                .and_then(|h| h.ranking.take())
                .and_then(Background::wait)
                .filter(|s| s.prior.len() == n)
                .unwrap_or_else(|| self.init(ctx));
            if let Some(head) = head {
                let mut taken = Vec::with_capacity(head.taken.len());
                for i in head.taken {
                    st.take(i, &mut taken);
                }
                st.batches = head.calls;
            }
            self.state = Some(st);
        }
        let Some(st) = self.state.as_mut() else {
            return Vec::new();
        };
        let mut batch = Vec::with_capacity(max);
        let winners = State::winners(measured, n);
        let scores = st.scores(measured, &winners);
        // The corrected model's best unproposed candidates: enough to fill the batch even if
        // the local search contributes nothing (a partial sort: spaces reach 10^5 configs).
        let order = st.best_unproposed(&scores, 2 * max + 1);

        if winners.is_empty() {
            // Nothing measured yet (or all failed): spread over shapes, best predicted first
            // (by the model alone in the first batch).
            if st.batches == 0 {
                let prior = std::mem::take(&mut st.prior);
                st.diverse_by(&prior, max, &mut batch);
                st.prior = prior;
            } else {
                st.diverse_by(&scores, max, &mut batch);
            }
        } else {
            // Local search: neighbours of the parents, predicted from the parent's measured
            // time plus the corrected model's difference.
            let local = max - max / 4;
            let mut parents = st.parents(&winners);
            let mut pool: Vec<(f64, usize)> = Vec::new();
            let mut in_pool: HashSet<usize> = HashSet::new();
            let mut next_winner = 0;
            let mut k = 0;
            // When the best parents' neighbourhoods are used up, walk further down the
            // measured ranking for parents until the local share of the batch can be filled.
            while k < parents.len() || (in_pool.len() < local && parents.len() < MAX_PARENTS) {
                if k == parents.len() {
                    match winners[next_winner..]
                        .iter()
                        .position(|w| !parents.iter().any(|p| p.0 == w.0))
                    {
                        Some(off) => {
                            next_winner += off;
                            parents.push(winners[next_winner]);
                        }
                        None => break,
                    }
                }
                let (p, t) = parents[k];
                k += 1;
                for j in st.lattice.neighbours(p) {
                    if !st.proposed[j] && in_pool.insert(j) {
                        pool.push((t + scores[j] - scores[p], j));
                    }
                }
            }
            pool.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            for &(_, j) in &pool {
                if batch.len() >= local {
                    break;
                }
                st.take(j, &mut batch);
            }
            // Global picks by the corrected model fill the rest.
            for &i in &order {
                if batch.len() >= max {
                    break;
                }
                st.take(i, &mut batch);
            }
        }
        // Whatever is left, in model order (only reached when the pools above ran dry).
        for &i in &order {
            if batch.len() >= max {
                break;
            }
            st.take(i, &mut batch);
        }
        st.batches += 1;
        batch
    }
}

mod background;
mod correction;
mod pick;
#[cfg(test)]
mod tests;
