//! Picking from a ranking: the best unproposed candidates, and one candidate per tile shape
//! not proposed yet (module doc of [`guided`](super), step 1).

use super::{shape, State, SHAPE};
use crate::config::Field;
use rayon::prelude::*;
use std::collections::HashMap;

/// Tile shapes (the product of the shape fields' value counts) up to which a diverse pick
/// keeps each shape's best in a table rather than a map.
const DENSE_SHAPES: u64 = 1 << 16;

/// An integer that orders like `x.total_cmp` (the IEEE total order): sorting (key, index)
/// pairs, which are all distinct, gives the order of `total_cmp` then index, without looking
/// the scores up at every comparison.
pub(super) fn order_key(x: f64) -> i64 {
    let bits = x.to_bits() as i64;
    bits ^ (((bits >> 63) as u64) >> 1) as i64
}

impl State {
    /// The `k` unproposed candidates with the lowest scores, best first (ties by index).
    pub(super) fn best_unproposed(&self, scores: &[f64], k: usize) -> Vec<usize> {
        let mut order: Vec<(i64, u32)> = (0..scores.len())
            .into_par_iter()
            .filter(|&i| !self.proposed[i])
            .map(|i| (order_key(scores[i]), i as u32))
            .collect();
        if order.len() > k {
            order.select_nth_unstable(k);
            order.truncate(k);
        }
        order.par_sort_unstable();
        order.into_iter().map(|(_, i)| i as usize).collect()
    }

    /// Unproposed candidates in `order`, one per unseen tile shape first.
    pub(super) fn diverse(&mut self, order: &[usize], want: usize, batch: &mut Vec<usize>) {
        for &i in order {
            if batch.len() >= want {
                return;
            }
            if self.proposed[i] {
                continue;
            }
            let s = shape(&self.lattice.point(i));
            if self.shapes_seen.insert(s) {
                self.take(i, batch);
            }
        }
    }

    /// [`Self::diverse`] over every unproposed candidate by `score`, best first, without
    /// sorting them: walking that ranking takes, for each tile shape not seen yet, its first
    /// candidate there, i.e. its best unproposed one (by score, then index), in the order of
    /// those bests. So one pass finds each shape's best, and only the shapes are sorted. (The
    /// best configs of a space share a few shapes: a blind batch after the first walked most
    /// of a 4-million-candidate ranking to find new ones.)
    pub(super) fn diverse_by(&mut self, score: &[f64], want: usize, batch: &mut Vec<usize>) {
        self.diverse_by_table(score, want, batch, DENSE_SHAPES);
    }

    /// [`Self::diverse_by`] with shapes kept in a table up to `dense` of them.
    pub(super) fn diverse_by_table(
        &mut self,
        score: &[f64],
        want: usize,
        batch: &mut Vec<usize>,
        dense: u64,
    ) {
        let sizes = SHAPE.map(|f| self.lattice.levels(f).max(1) as u64);
        let this = &*self;
        let shape_id = |i: usize| {
            SHAPE.iter().zip(sizes).fold(0u64, |id, (&f, size)| {
                id * size + this.lattice.level(i, f) as u64
            })
        };
        let unproposed = (0..score.len())
            .into_par_iter()
            .filter(|&i| !this.proposed[i])
            .map(|i| (shape_id(i), (order_key(score[i]), i as u32)));
        let shapes: u64 = sizes.iter().product();
        // Each shape's best: in a table indexed by shape when the shapes are few enough (they
        // are a few thousand in the built-in spaces), else in a map.
        let mut firsts: Vec<(i64, u32)> = if shapes <= dense {
            const NONE: (i64, u32) = (i64::MAX, u32::MAX);
            let min_into = |mut best: Vec<(i64, u32)>, (s, key): (u64, (i64, u32))| {
                let b = &mut best[s as usize];
                *b = (*b).min(key);
                best
            };
            unproposed
                .fold(|| vec![NONE; shapes as usize], min_into)
                .reduce(
                    || vec![NONE; shapes as usize],
                    |mut a, b| {
                        for (x, y) in a.iter_mut().zip(b) {
                            *x = (*x).min(y);
                        }
                        a
                    },
                )
                .into_iter()
                .filter(|&k| k != NONE)
                .collect()
        } else {
            let min_into = |mut best: HashMap<u64, (i64, u32)>, (s, key): (u64, (i64, u32))| {
                best.entry(s)
                    .and_modify(|b| *b = (*b).min(key))
                    .or_insert(key);
                best
            };
            unproposed
                .fold(HashMap::new, min_into)
                .reduce(HashMap::new, |mut a, b| {
                    for (s, key) in b {
                        a.entry(s).and_modify(|k| *k = (*k).min(key)).or_insert(key);
                    }
                    a
                })
                .into_values()
                .collect()
        };
        firsts.sort_unstable();
        let order: Vec<usize> = firsts.into_iter().map(|(_, i)| i as usize).collect();
        self.diverse(&order, want, batch);
    }

    pub(super) fn take(&mut self, i: usize, batch: &mut Vec<usize>) {
        if !self.proposed[i] {
            self.proposed[i] = true;
            self.shapes_seen.insert(shape(&self.lattice.point(i)));
            for f in Field::ALL {
                self.tried[f][self.lattice.level(i, f)] += 1;
            }
            batch.push(i);
        }
    }
}
