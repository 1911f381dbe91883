//! The variants a neighbour's config is fitted to a new problem through: its vector widths
//! ([`width_variants`]), its split-K ([`split_variants`]) and its tile ([`TileValues`]). Each
//! lists candidates only; legality and the cost model's ranking are the caller's
//! ([`super::ranked`]).

use super::{RETILE_REACH, TILE_FIELDS};
use crate::config::{Field, PerfConfig};
use crate::space::SearchSpace;

/// The vector widths a config may take on a problem of `elem`-byte elements: powers of two up
/// to `max_bytes` (the arch's widest vector access, [`crate::arch::Arch::max_vector_bytes`]).
fn widths(elem: u32, max_bytes: u32) -> impl Iterator<Item = u32> + Clone {
    let most = (max_bytes / elem.max(1)).max(1);
    std::iter::successors(Some(1u32), |w| w.checked_mul(2)).take_while(move |&w| w <= most)
}

/// `c` with every combination of vector widths (A, B, C), `c` itself first. A neighbour's
/// widths are what *its* tensors allowed (a channel count, a padding, an alignment): the
/// same tile on this problem may load wider, or need narrower loads to be legal at all.
/// Session 7's holdout: a fwd 1×1 c256→64 56×56 problem took the `va=4` of a 3×3 c64 winner
/// and ran at 0.58× of its tuned config, which loads A 8 wide.
pub fn width_variants(c: &PerfConfig, elem: u32, max_bytes: u32) -> Vec<PerfConfig> {
    let mut out = vec![*c];
    for vec_a in widths(elem, max_bytes) {
        for vec_b in widths(elem, max_bytes) {
            for vec_c in widths(elem, max_bytes) {
                let v = PerfConfig {
                    vec_a,
                    vec_b,
                    vec_c,
                    ..*c
                };
                if v != *c {
                    out.push(v);
                }
            }
        }
    }
    out
}

/// `c` with each of `splits` as its split-K, `c` itself first. A bwd-weight neighbour's split
/// filled the SMs with *its* tile count; the same tile on this problem's GEMM makes another
/// count, and the model's wave and reduction terms place the best split well for a given tile:
/// on session 25's leave-one-out picks of the 72 bwd-weight entries, each timed at every split
/// (48 problems where more than one was legal), the neighbour's own split ran at 0.920 of the
/// best split's speed, the model's choice at 0.964. Legality (a split the reduction or the
/// problem cannot take) is the caller's.
pub fn split_variants(c: &PerfConfig, splits: &[u32]) -> Vec<PerfConfig> {
    std::iter::once(*c)
        .chain(
            splits
                .iter()
                .filter(|&&s| s != c.split_k)
                .map(|&split_k| PerfConfig { split_k, ..*c }),
        )
        .collect()
}

/// The values a re-tiling may give each of [`TILE_FIELDS`], and the split-K values a config is
/// fitted with ([`split_variants`]): every value of the field in any of `spaces` (the search
/// spaces a tuning of the problem would enumerate).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TileValues {
    tiles: [Vec<u32>; TILE_FIELDS.len()],
    pub(super) splits: Vec<u32>,
}

/// Every value field `f` takes in any of `spaces` (its codes), sorted, without repeats.
pub fn field_values(spaces: &[&SearchSpace], f: Field) -> Vec<u32> {
    let mut v: Vec<u32> = spaces.iter().flat_map(|s| s.params.codes(f)).collect();
    v.sort_unstable();
    v.dedup();
    v
}

impl TileValues {
    /// The union of the spaces' lists ([`field_values`]).
    pub fn of(spaces: &[&SearchSpace]) -> TileValues {
        let values = |f: Field| field_values(spaces, f);
        TileValues {
            tiles: TILE_FIELDS.map(values),
            splits: values(Field::SplitK),
        }
    }

    /// No re-tiling and no split-K fitting: only the neighbours' own tiles and splits.
    pub fn none() -> TileValues {
        TileValues {
            tiles: Default::default(),
            splits: Vec::new(),
        }
    }

    /// `c` with every combination of tile values near its own, `c` itself excluded: each block
    /// and warp tile side within a factor [`RETILE_REACH`] of `c`'s (the neighbour measured
    /// tiles of about that size; the model alone is not trusted across scales: on leave-one-out
    /// over the shipped database, unbounded re-tiling took a 64×16 tile for a 1×1 layer whose
    /// neighbour ran 128×192), any stages. Combinations that are no config (a code outside a
    /// field's domain) are skipped. Legality is the caller's.
    pub fn variants(&self, c: &PerfConfig) -> Vec<PerfConfig> {
        let mut out = Vec::new();
        let mut codes = c.codes();
        let lists: Vec<Vec<u32>> = TILE_FIELDS
            .iter()
            .zip(&self.tiles)
            .map(|(&f, values)| {
                let own = c.code(f);
                values
                    .iter()
                    .copied()
                    .filter(|&v| {
                        f == Field::Stages
                            || (v <= own.saturating_mul(RETILE_REACH) && own <= v * RETILE_REACH)
                    })
                    .collect()
            })
            .collect();
        let lens: Vec<usize> = lists.iter().map(Vec::len).collect();
        if lens.contains(&0) {
            return out;
        }
        let mut ix = [0usize; TILE_FIELDS.len()];
        loop {
            for (k, f) in TILE_FIELDS.iter().enumerate() {
                codes[*f] = lists[k][ix[k]];
            }
            if let Some(v) = PerfConfig::from_codes(&codes) {
                if v != *c {
                    out.push(v);
                }
            }
            // Odometer over the lists, the last field fastest.
            let mut k = TILE_FIELDS.len();
            loop {
                if k == 0 {
                    return out;
                }
                k -= 1;
                ix[k] += 1;
                if ix[k] < lens[k] {
                    break;
                }
                ix[k] = 0;
            }
        }
    }
}
