//! Candidates in a seeded random order: the baseline a guided search must beat by a wide
//! margin to be worth its model.

use super::rng::SplitMix64;
use super::{Measured, SearchContext, Strategy};

/// Proposes every candidate once, in an order fixed by the seed.
#[derive(Debug)]
pub struct Random {
    seed: u64,
    order: Option<Vec<usize>>,
    next: usize,
}

impl Random {
    /// A random order that the same seed always reproduces.
    pub fn new(seed: u64) -> Self {
        Random {
            seed,
            order: None,
            next: 0,
        }
    }
}

impl Strategy for Random {
    fn name(&self) -> &'static str {
        "random"
    }
    fn next_batch(&mut self, ctx: &SearchContext<'_>, _: &[Measured], max: usize) -> Vec<usize> {
        let seed = self.seed;
        let order = self.order.get_or_insert_with(|| {
            let mut v: Vec<usize> = (0..ctx.candidates.len()).collect();
            SplitMix64::new(seed).shuffle(&mut v);
            v
        });
        let end = (self.next + max).min(order.len());
        let batch = order[self.next..end].to_vec();
        self.next = end;
        batch
    }
}
