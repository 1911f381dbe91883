//! The candidates as points of a lattice: each field takes the sorted distinct values that occur
//! among the candidates, and a neighbour is one step up or down in one field. Local search walks
//! this lattice from the measured winners; failures push their neighbours down the ranking.

use crate::config::{Field, PerField, PerfConfig};
use rayon::prelude::*;
use std::collections::HashMap;

/// Moves that change two fields together, so that the warp count stays the same when a block
/// tile grows with its warp tile (the single-field move would often be illegal).
const COUPLED: [(Field, Field); 2] = [(Field::BlockM, Field::WarpM), (Field::BlockN, Field::WarpN)];

/// The candidate set as a lattice. A point is a config's field codes
/// ([`PerfConfig::codes`]): the number itself, or the position of an enum value. A point is
/// stored as its positions in the fields' value lists (17 bytes, not 68: spaces reach millions
/// of candidates, and building the lattice is part of the fixed cost of every problem).
#[derive(Debug, Clone)]
pub(crate) struct Lattice {
    /// Position of each candidate's value in its field's value list.
    pos: Vec<PerField<u8>>,
    /// The codes of every candidate, kept only when some field has more values than a `u8`
    /// position holds (then `pos` saturates and cannot give the point back).
    points: Option<Vec<PerField<u32>>>,
    values: PerField<Vec<u32>>,
    index: Index,
}

/// From a lattice point to the first candidate there. Spaces reach millions of candidates
/// (5.9 M legal bwd-weight configs, where a hash map of 64-byte points took 10 s to build):
/// when every field's position fits the `u8` of `pos` and the product of the field sizes fits
/// a `u64`, a point is one mixed-radix number of its positions and the index a sorted list of
/// those numbers; otherwise a hash map of the codes.
#[derive(Debug, Clone)]
enum Index {
    /// (packed position key, candidate), sorted, one entry per key (the first candidate).
    Packed {
        stride: PerField<u64>,
        keys: Vec<(u64, u32)>,
    },
    Hashed(HashMap<PerField<u32>, usize>),
}

impl Lattice {
    pub(crate) fn new(candidates: &[PerfConfig]) -> Self {
        // Each field takes a handful of values: collect them in small sorted lists, in one
        // pass over the candidates, rather than sorting a copy of every value per field.
        let insert = |mut acc: PerField<Vec<u32>>, c: &PerfConfig| {
            let p = c.codes();
            for f in Field::ALL {
                if let Err(at) = acc[f].binary_search(&p[f]) {
                    acc[f].insert(at, p[f]);
                }
            }
            acc
        };
        let values = candidates
            .par_iter()
            .fold(PerField::<Vec<u32>>::default, insert)
            .reduce(PerField::<Vec<u32>>::default, |mut a, b| {
                for f in Field::ALL {
                    for &v in &b[f] {
                        if let Err(at) = a[f].binary_search(&v) {
                            a[f].insert(at, v);
                        }
                    }
                }
                a
            });
        let pos: Vec<PerField<u8>> = candidates
            .par_iter()
            .map(|c| {
                let p = c.codes();
                PerField::from_fn(|f| {
                    let at = values[f].binary_search(&p[f]).unwrap_or(0);
                    at.min(u8::MAX as usize) as u8
                })
            })
            .collect();
        let narrow = Field::ALL
            .iter()
            .all(|&f| values[f].len() <= 1 + u8::MAX as usize);
        let points = (!narrow).then(|| candidates.par_iter().map(PerfConfig::codes).collect());
        let mut lattice = Lattice {
            pos,
            points,
            values,
            index: Index::Hashed(HashMap::new()),
        };
        lattice.index = Index::new(&lattice, narrow);
        lattice
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.pos.len()
    }

    /// Candidate `i`'s field codes.
    pub(crate) fn point(&self, i: usize) -> PerField<u32> {
        match &self.points {
            Some(points) => points[i],
            None => PerField::from_fn(|f| self.values[f][self.pos[i][f] as usize]),
        }
    }

    /// Position of candidate `i`'s value of field `f` among that field's values.
    pub(crate) fn level(&self, i: usize, f: Field) -> usize {
        self.pos[i][f] as usize
    }

    /// How many distinct values field `f` takes.
    pub(crate) fn levels(&self, f: Field) -> usize {
        self.values[f].len()
    }

    /// Candidates one step away from `i`: one field one value up or down (two steps when the
    /// one-step point is not a candidate, e.g. illegal), or a block and warp dimension together.
    pub(crate) fn neighbours(&self, i: usize) -> Vec<usize> {
        let p = self.point(i);
        let mut out = Vec::new();
        let push = |q: PerField<u32>, out: &mut Vec<usize>| -> bool {
            match self.index.get(&q, &self.values) {
                Some(j) if j != i => {
                    if !out.contains(&j) {
                        out.push(j);
                    }
                    true
                }
                _ => false,
            }
        };
        for f in Field::ALL {
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
                let ok = |t: i64, f: Field| t >= 0 && t < self.values[f].len() as i64;
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
        self.index.get(&c.codes(), &self.values)
    }
}

impl Index {
    /// The index of `lattice`'s points; `narrow`: every position fits its `u8`.
    fn new(lattice: &Lattice, narrow: bool) -> Index {
        let (pos, values) = (&lattice.pos, &lattice.values);
        // Strides in reverse enumeration order (the last field varies fastest), so candidates
        // listed in enumeration order, as a problem's legal list is, have ascending keys
        // (when the space lists each field's values in ascending order) and need no sort.
        let mut stride = PerField::from_fn(|_| 0u64);
        let mut size = Some(1u64);
        for f in Field::ENUMERATION.into_iter().rev() {
            stride[f] = size.unwrap_or(0);
            let levels = values[f].len().max(1);
            size = size.and_then(|s| s.checked_mul(levels as u64));
        }
        let fits = u32::try_from(pos.len()).is_ok() && narrow;
        if size.is_none() || !fits {
            let mut index = HashMap::with_capacity(pos.len());
            for i in 0..pos.len() {
                index.entry(lattice.point(i)).or_insert(i);
            }
            return Index::Hashed(index);
        }
        let mut keys: Vec<(u64, u32)> = pos
            .par_iter()
            .enumerate()
            .map(|(i, p)| (pack(&stride, p), i as u32))
            .collect();
        // By key, then candidate: the first of equal keys is the first candidate there.
        if !keys.par_windows(2).all(|w| w[0] <= w[1]) {
            keys.par_sort_unstable();
        }
        keys.dedup_by_key(|k| k.0);
        Index::Packed { stride, keys }
    }

    /// The first candidate at point `q`, whose codes come from `values`.
    fn get(&self, q: &PerField<u32>, values: &PerField<Vec<u32>>) -> Option<usize> {
        match self {
            Index::Hashed(map) => map.get(q).copied(),
            Index::Packed { stride, keys } => {
                let mut key = 0u64;
                for f in Field::ALL {
                    key += values[f].binary_search(&q[f]).ok()? as u64 * stride[f];
                }
                let at = keys.binary_search_by_key(&key, |k| k.0).ok()?;
                Some(keys[at].1 as usize)
            }
        }
    }
}

fn pack(stride: &PerField<u64>, p: &PerField<u8>) -> u64 {
    Field::ALL
        .iter()
        .map(|&f| u64::from(p[f]) * stride[f])
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(bm: u32, bn: u32, wm: u32, st: u32) -> PerfConfig {
        let base: PerfConfig =
            "v1:bm=1,bn=1,bk=32,wm=1,wn=32,st=1,va=8,vb=8,vc=8,lds=swz,sk=1,rs=1"
                .parse()
                .unwrap();
        PerfConfig {
            block_m: bm,
            block_n: bn,
            warp_m: wm,
            stages: st,
            ..base
        }
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
        assert_eq!(PerfConfig::from_codes(&l.point(3)), Some(cands[3]));
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
        assert_eq!(l.levels(Field::Stages), 3);
        assert_eq!(l.level(4, Field::Stages), 2);
    }

    #[test]
    fn packed_and_hashed_indexes_find_the_same_candidates() {
        let p = "convbfp16 -n 64 -c 256 -H 28 -W 28 -k 256 -y 3 -x 3 -p 1 -q 1 -F 4 --layout NHWC"
            .parse()
            .unwrap();
        let mut cands = crate::search::synthetic::candidates(&p, &crate::arch::Arch::SM_90);
        cands.truncate(3000);
        cands.push(cands[5]); // a duplicate: the first candidate there is found
        let l = Lattice::new(&cands);
        assert!(matches!(l.index, Index::Packed { .. }));
        let mut hashed = l.clone();
        let mut map = HashMap::new();
        for i in 0..l.len() {
            map.entry(l.point(i)).or_insert(i);
        }
        hashed.index = Index::Hashed(map);
        for (i, c) in cands.iter().enumerate() {
            assert_eq!(l.find(c), hashed.find(c), "{c}");
            assert_eq!(l.find(c), Some(if i == cands.len() - 1 { 5 } else { i }));
            assert_eq!(l.neighbours(i), hashed.neighbours(i), "{c}");
        }
        // Listed out of enumeration order, the keys need their sort: the same lattice.
        let mut shuffled = cands.clone();
        shuffled.pop();
        crate::search::rng::SplitMix64::new(3).shuffle(&mut shuffled);
        let s = Lattice::new(&shuffled);
        assert!(matches!(s.index, Index::Packed { .. }));
        for (i, c) in shuffled.iter().enumerate() {
            assert_eq!(s.find(c), Some(i), "{c}");
            let mut a: Vec<PerfConfig> = s.neighbours(i).iter().map(|&j| shuffled[j]).collect();
            let mut b: Vec<PerfConfig> = l
                .neighbours(l.find(c).unwrap())
                .iter()
                .map(|&j| cands[j])
                .collect();
            a.sort();
            b.sort();
            assert_eq!(a, b, "{c}");
        }
    }
}
