//! The candidates as points of a lattice: each field takes the sorted distinct values that occur
//! among the candidates, and a neighbour is one step up or down in one field. Local search walks
//! this lattice from the measured winners; failures push their neighbours down the ranking.

use crate::space::{LdsLayout, MmaPath, PerfConfig};
use std::collections::HashMap;

/// Number of tuning fields in a [`PerfConfig`].
pub(crate) const NFIELDS: usize = 13;

/// The fields of a config as numbers, in the order of the `v2:` string.
pub(crate) fn fields(c: &PerfConfig) -> [u32; NFIELDS] {
    [
        c.block_m,
        c.block_n,
        c.block_k,
        c.warp_m,
        c.warp_n,
        c.stages,
        c.vec_a,
        c.vec_b,
        c.vec_c,
        match c.lds {
            LdsLayout::Padded => 0,
            LdsLayout::Swizzled => 1,
        },
        c.split_k,
        c.raster,
        MmaPath::ALL.iter().position(|&m| m == c.mma).unwrap_or(0) as u32,
    ]
}

/// Moves that change two fields together, so that the warp count stays the same when a block
/// tile grows with its warp tile (the single-field move would often be illegal).
const COUPLED: [(usize, usize); 2] = [(0, 3), (1, 4)];

/// The candidate set as a lattice.
#[derive(Debug, Clone)]
pub(crate) struct Lattice {
    points: Vec<[u32; NFIELDS]>,
    /// Position of each candidate's value in its field's value list.
    pos: Vec<[u8; NFIELDS]>,
    values: Vec<Vec<u32>>,
    index: HashMap<[u32; NFIELDS], usize>,
}

impl Lattice {
    pub(crate) fn new(candidates: &[PerfConfig]) -> Self {
        let points: Vec<[u32; NFIELDS]> = candidates.iter().map(fields).collect();
        let values: Vec<Vec<u32>> = (0..NFIELDS)
            .map(|f| {
                let mut v: Vec<u32> = points.iter().map(|p| p[f]).collect();
                v.sort_unstable();
                v.dedup();
                v
            })
            .collect();
        let pos = points
            .iter()
            .map(|p| {
                let mut out = [0u8; NFIELDS];
                for f in 0..NFIELDS {
                    let at = values[f].binary_search(&p[f]).unwrap_or(0);
                    out[f] = at.min(u8::MAX as usize) as u8;
                }
                out
            })
            .collect();
        let mut index = HashMap::with_capacity(points.len());
        for (i, p) in points.iter().enumerate() {
            index.entry(*p).or_insert(i);
        }
        Lattice {
            points,
            pos,
            values,
            index,
        }
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.points.len()
    }

    pub(crate) fn point(&self, i: usize) -> &[u32; NFIELDS] {
        &self.points[i]
    }

    /// Position of candidate `i`'s value of field `f` among that field's values.
    pub(crate) fn level(&self, i: usize, f: usize) -> usize {
        self.pos[i][f] as usize
    }

    /// How many distinct values field `f` takes.
    pub(crate) fn levels(&self, f: usize) -> usize {
        self.values[f].len()
    }

    /// Candidates one step away from `i`: one field one value up or down (two steps when the
    /// one-step point is not a candidate, e.g. illegal), or a block and warp dimension together.
    pub(crate) fn neighbours(&self, i: usize) -> Vec<usize> {
        let p = self.points[i];
        let mut out = Vec::new();
        let push = |q: [u32; NFIELDS], out: &mut Vec<usize>| -> bool {
            match self.index.get(&q) {
                Some(&j) if j != i => {
                    if !out.contains(&j) {
                        out.push(j);
                    }
                    true
                }
                _ => false,
            }
        };
        for f in 0..NFIELDS {
            let at = self.pos[i][f] as usize;
            for dir in [-1i64, 1] {
                for step in 1..=2i64 {
                    let to = at as i64 + dir * step;
                    if to < 0 || to >= self.values[f].len() as i64 {
                        break;
                    }
                    let mut q = p;
                    q[f] = self.values[f][to as usize];
                    if push(q, &mut out) {
                        break;
                    }
                }
            }
        }
        for (a, b) in COUPLED {
            for dir in [-1i64, 1] {
                let ta = self.pos[i][a] as i64 + dir;
                let tb = self.pos[i][b] as i64 + dir;
                let ok = |t: i64, f: usize| t >= 0 && t < self.values[f].len() as i64;
                if ok(ta, a) && ok(tb, b) {
                    let mut q = p;
                    q[a] = self.values[a][ta as usize];
                    q[b] = self.values[b][tb as usize];
                    push(q, &mut out);
                }
            }
        }
        out
    }

    /// The candidate with these fields, if there is one.
    #[cfg(test)]
    pub(crate) fn find(&self, c: &PerfConfig) -> Option<usize> {
        self.index.get(&fields(c)).copied()
    }
}

/// Inverse of [`fields`], for tests.
#[cfg(test)]
pub(crate) fn from_fields(f: &[u32; NFIELDS]) -> PerfConfig {
    PerfConfig {
        block_m: f[0],
        block_n: f[1],
        block_k: f[2],
        warp_m: f[3],
        warp_n: f[4],
        stages: f[5],
        vec_a: f[6],
        vec_b: f[7],
        vec_c: f[8],
        lds: if f[9] == 0 {
            LdsLayout::Padded
        } else {
            LdsLayout::Swizzled
        },
        split_k: f[10],
        raster: f[11],
        mma: MmaPath::ALL[f[12] as usize],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(bm: u32, bn: u32, wm: u32, st: u32) -> PerfConfig {
        from_fields(&[bm, bn, 32, wm, 32, st, 8, 8, 8, 1, 1, 1, 0])
    }

    #[test]
    fn neighbours_are_one_step_and_skip_holes() {
        let cands = vec![
            c(64, 64, 32, 2),
            c(128, 64, 32, 2),
            c(256, 64, 32, 2),
            c(64, 64, 32, 3),
            c(64, 64, 32, 4),
            c(128, 64, 64, 2),
        ];
        let l = Lattice::new(&cands);
        assert_eq!(l.len(), 6);
        assert_eq!(fields(&from_fields(l.point(3))), *l.point(3));
        let n0 = l.neighbours(0);
        // bm 64→128, stages 2→3, and (bm, wm) 64/32 → 128/64 together; not 256 (two steps of a
        // field whose one-step point exists) and not stages 4.
        assert!(
            n0.contains(&1) && n0.contains(&3) && n0.contains(&5),
            "{n0:?}"
        );
        assert!(!n0.contains(&2) && !n0.contains(&4), "{n0:?}");
        // From 128/64/64, bm one step down (64 with wm 64) does not exist, two steps neither.
        let n5 = l.neighbours(5);
        assert!(n5.contains(&0), "coupled move down: {n5:?}");
        assert!(n5.contains(&1), "wm 64→32: {n5:?}");
        assert_eq!(l.find(&c(256, 64, 32, 2)), Some(2));
        assert_eq!(l.levels(5), 3);
        assert_eq!(l.level(4, 5), 2);
    }
}
