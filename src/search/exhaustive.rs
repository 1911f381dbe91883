//! Every legal candidate, in enumeration order: the baseline other strategies are scored against.

use super::{Measured, SearchContext, Strategy};

/// Proposes candidates in order until none are left.
#[derive(Debug, Default)]
pub struct Exhaustive {
    next: usize,
}

impl Strategy for Exhaustive {
    fn name(&self) -> &'static str {
        "exhaustive"
    }
    fn next_batch(&mut self, ctx: &SearchContext<'_>, _: &[Measured], max: usize) -> Vec<usize> {
        let end = (self.next + max).min(ctx.candidates.len());
        let batch = (self.next..end).collect();
        self.next = end;
        batch
    }
}
