//! A GEMM's constants chosen at run time from the phase a block belongs to, so that one body
//! serves every phase of a one-launch kernel ([`super::phased`]).
//!
//! The sub-GEMMs of a strided bwd-data lowering have the same axes and the same terms
//! ([`crate::lowering`]); they differ only in axis lengths and constant offsets. One body per
//! phase made the kernel grow with the phases, and the assembler's time more than that (issue
//! 16: a four-phase candidate cost 4.4× a one-phase one). With [`Phases`] the body is emitted
//! once: each constant that differs between phases is a `select` chain of the phases'
//! constants on the phase index (loop-invariant, so it is hoisted out of the K loop and shared
//! by common-subexpression elimination), and a division by such a constant multiplies by the
//! phase's magic number instead of dividing. A constant that is the same in every phase (or a
//! kernel with one phase) stays a literal, so the IR of a one-phase kernel is what it was.

use super::builder::Kb;
use crate::lowering::Gemm;
use inkwell::values::IntValue;

/// The phases one body serves: what differs between them, per phase in grid order.
#[derive(Debug, Clone)]
pub(crate) struct SharedPhases<'l> {
    /// Each phase's GEMM.
    pub gemms: Vec<&'l Gemm>,
    /// Each phase's first block along x (on a persistent walk, its first work unit).
    pub first_blocks: Vec<u32>,
    /// Each phase's block tiles along M.
    pub tiles_m: Vec<u32>,
    /// Each phase's block tiles along N.
    pub tiles_n: Vec<u32>,
    /// Each phase's K tiles.
    pub k_tiles: Vec<u32>,
}

impl SharedPhases<'_> {
    /// Each phase's tiles in one group (`tiles_m × tiles_n`).
    pub fn tiles_per_group(&self) -> Vec<u32> {
        self.tiles_m
            .iter()
            .zip(&self.tiles_n)
            .map(|(m, n)| m * n)
            .collect()
    }

    /// The phase of the block (inside a persistent walk, of the work unit) being emitted:
    /// how many phases after the first start at or before its x index (its unit).
    pub fn phases<'ctx>(&self, kb: &Kb<'_, 'ctx>) -> Phases<'ctx> {
        let at = kb.walk_unit().unwrap_or_else(|| kb.block_idx(0));
        let index = self.first_blocks[1..].iter().fold(kb.c(0), |acc, &first| {
            let past = kb.xor(kb.ultc(at, first), kb.cbool(true));
            kb.add(acc, kb.zext(past, kb.i32t()))
        });
        Phases::new(index, self.gemms.len())
    }
}

/// The phase of the block being emitted, for picking per-phase constants.
#[derive(Clone, Copy)]
pub(crate) struct Phases<'ctx> {
    /// Which phase (`0..count`); `None` with one phase.
    index: Option<IntValue<'ctx>>,
    /// Phases in the kernel.
    count: usize,
}

impl<'ctx> Phases<'ctx> {
    /// A kernel of one phase: every constant is a literal.
    pub fn one() -> Self {
        Phases {
            index: None,
            count: 1,
        }
    }

    /// `count` phases, the block's being `index`.
    pub fn new(index: IntValue<'ctx>, count: usize) -> Self {
        Phases {
            index: (count > 1).then_some(index),
            count,
        }
    }

    /// Phases in the kernel.
    pub fn count(&self) -> usize {
        self.count
    }

    /// The block's phase index, or 0 with one phase.
    pub fn index(&self, kb: &Kb<'_, 'ctx>) -> IntValue<'ctx> {
        self.index.unwrap_or_else(|| kb.c(0))
    }

    /// The block's phase's entry of `vals` (one constant per phase), as an i32: a literal
    /// when every phase has the same.
    pub fn pick<T: Copy + Into<i64>>(&self, kb: &Kb<'_, 'ctx>, vals: &[T]) -> IntValue<'ctx> {
        let vals: Vec<i64> = vals.iter().map(|&v| v.into()).collect();
        if vals.iter().all(|&v| v == vals[0]) {
            assert_eq!(vals.len(), self.count, "one constant per phase");
            return kb.c(vals[0]);
        }
        self.choose(kb, &vals.iter().map(|&v| kb.c(v)).collect::<Vec<_>>())
    }

    /// The block's phase's entry of `vals` (one value per phase).
    pub fn choose(&self, kb: &Kb<'_, 'ctx>, vals: &[IntValue<'ctx>]) -> IntValue<'ctx> {
        assert_eq!(vals.len(), self.count, "one value per phase");
        let (Some(index), Some((&last, rest))) = (self.index, vals.split_last()) else {
            return vals[0];
        };
        rest.iter().enumerate().rev().fold(last, |acc, (i, &v)| {
            kb.seli(kb.eq(index, kb.c(i as i64)), v, acc)
        })
    }

    /// `x / d` for the block's phase's divisor `d` of `divs`, unsigned; `x < 2^31`.
    pub fn udiv(&self, kb: &Kb<'_, 'ctx>, x: IntValue<'ctx>, divs: &[u32]) -> IntValue<'ctx> {
        if divs.iter().all(|&d| d == divs[0]) {
            return kb.udivc(x, divs[0]);
        }
        let (m, s): (Vec<u32>, Vec<u32>) = divs
            .iter()
            .map(|&d| {
                let Magic { mul, shift } = Magic::of(d);
                (mul, shift)
            })
            .unzip();
        let hi = kb.umulhi(x, self.pick(kb, &m));
        kb.lshr(kb.add(hi, x), self.pick(kb, &s))
    }

    /// `x mod d` for the block's phase's divisor `d` of `divs`, unsigned; `x < 2^31`.
    pub fn urem(&self, kb: &Kb<'_, 'ctx>, x: IntValue<'ctx>, divs: &[u32]) -> IntValue<'ctx> {
        if divs.iter().all(|&d| d == divs[0]) {
            return kb.uremc(x, divs[0]);
        }
        kb.sub(x, kb.mul(self.udiv(kb, x, divs), self.pick(kb, divs)))
    }

    /// `x < len` for the block's phase's `len` of `lens`, unsigned.
    pub fn ult(&self, kb: &Kb<'_, 'ctx>, x: IntValue<'ctx>, lens: &[u32]) -> IntValue<'ctx> {
        kb.ult(x, self.pick(kb, lens))
    }
}

/// Division of `x < 2^31` by a divisor `d` as `(mulhi(x, mul) + x) >> shift` (Granlund and
/// Montgomery's round-up method: `shift = ⌈log2 d⌉`, `mul = ⌊2^32 (2^shift − d) / d⌋ + 1`).
/// `mulhi(x, mul) ≤ x`, so the sum does not overflow 32 bits for `x < 2^31`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Magic {
    /// The multiplier.
    pub mul: u32,
    /// The final shift.
    pub shift: u32,
}

impl Magic {
    /// The magic of divisor `d` (≥ 1).
    pub fn of(d: u32) -> Magic {
        assert!(d >= 1, "division by zero");
        let shift = 32 - (d - 1).leading_zeros();
        let mul = (((1u128 << 32) * ((1u128 << shift) - d as u128)) / d as u128 + 1) as u32;
        Magic { mul, shift }
    }

    /// `x / d` the way the kernel computes it.
    #[cfg(test)]
    fn div(self, x: u32) -> u32 {
        let hi = ((x as u64 * self.mul as u64) >> 32) as u32;
        (hi + x) >> self.shift
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn magic_divides_small_divisors_exactly() {
        for d in 1..=300u32 {
            let m = Magic::of(d);
            for x in (0..5000u32).chain([(1 << 31) - 1, (1 << 31) - d, 1 << 30]) {
                assert_eq!(m.div(x), x / d, "{x} / {d} with {m:?}");
            }
        }
    }

    proptest! {
        #[test]
        fn magic_divides_any_index_below_2_pow_31(d in 1u32..(1 << 31), x in 0u32..(1 << 31)) {
            prop_assert_eq!(Magic::of(d).div(x), x / d);
        }
    }
}
