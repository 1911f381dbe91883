//! The quick list: the few configs that serve most problems well, per (arch, direction, dtype),
//! used as the fallback for problems nobody tuned.
//!
//! A config *covers* a problem when it is within [`COVER`] of that problem's best
//! (time ≤ best / 0.93). Picking the fewest configs that cover every problem is set cover
//! (NP-hard); the greedy choice — repeatedly the config covering the most problems not yet
//! covered — is within a factor ln(problems) of optimal and is what rocMLIR-style quick lists
//! use. Ties go to the config that is fastest, summed over the problems it would newly cover.

use super::recording::{Recording, RecordingError};
use crate::config::PerfConfig;
use crate::problem::{DType, Direction};
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write;

/// A config covers a problem when its time is ≤ best / `COVER`.
pub const COVER: f64 = 0.93;

/// Greedy set cover over problems given as (config → time µs) maps. Returns the picks in order,
/// each with the fraction of the problems covered by it and all earlier picks. Stops after
/// `max_configs` picks or when no config covers a problem still uncovered.
pub fn cover(problems: &[HashMap<PerfConfig, f64>], max_configs: usize) -> Vec<(PerfConfig, f64)> {
    // Which problems each config covers, and how fast it is there (best / time ≤ 1).
    let mut covers: BTreeMap<PerfConfig, Vec<(usize, f64)>> = BTreeMap::new();
    for (p, times) in problems.iter().enumerate() {
        let best = times
            .values()
            .copied()
            .filter(|t| t.is_finite() && *t > 0.0)
            .fold(f64::INFINITY, f64::min);
        if !best.is_finite() {
            continue;
        }
        for (c, &t) in times {
            if t.is_finite() && t > 0.0 && t <= best / COVER {
                covers.entry(*c).or_default().push((p, best / t));
            }
        }
    }
    let n = problems.len().max(1) as f64;
    let mut covered = vec![false; problems.len()];
    let mut count = 0usize;
    let mut picks = Vec::new();
    while picks.len() < max_configs {
        // BTreeMap order makes ties between equal gains deterministic.
        let mut best: Option<(usize, f64, PerfConfig)> = None;
        for (c, list) in &covers {
            let (gain, speed) = list
                .iter()
                .filter(|(p, _)| !covered[*p])
                .fold((0usize, 0.0f64), |(g, s), (_, r)| (g + 1, s + r));
            let better = match best {
                None => gain > 0,
                Some((bg, bs, _)) => gain > bg || (gain == bg && speed > bs + 1e-12),
            };
            if better {
                best = Some((gain, speed, *c));
            }
        }
        let Some((_, _, c)) = best else { break };
        for (p, _) in &covers[&c] {
            if !covered[*p] {
                covered[*p] = true;
                count += 1;
            }
        }
        covers.remove(&c);
        picks.push((c, count as f64 / n));
    }
    picks
}

/// The quick list of one (arch, direction, dtype).
#[derive(Debug, Clone, PartialEq)]
pub struct QuickList {
    /// Arch name.
    pub arch: String,
    /// Direction.
    pub direction: Direction,
    /// Element type.
    pub dtype: DType,
    /// Problems in this group.
    pub problems: usize,
    /// Configs in pick order, each with the cumulative fraction of problems covered.
    pub picks: Vec<(PerfConfig, f64)>,
}

impl QuickList {
    /// Fraction of the group's problems the whole list covers.
    pub fn coverage(&self) -> f64 {
        self.picks.last().map_or(0.0, |p| p.1)
    }
}

/// Quick lists from recordings, one per (arch, direction, dtype), at most `max_configs` each,
/// sorted by arch, direction, dtype.
pub fn quick_list(
    recordings: &[Recording],
    max_configs: usize,
) -> Result<Vec<QuickList>, RecordingError> {
    type Group = (String, Direction, DType);
    let mut groups: BTreeMap<Group, Vec<HashMap<PerfConfig, f64>>> = BTreeMap::new();
    for r in recordings {
        let p = r.prepare()?;
        let times = p
            .configs
            .iter()
            .zip(&p.times)
            .filter_map(|(c, t)| t.map(|t| (*c, t)))
            .collect();
        let key = (
            p.arch.name.to_string(),
            p.lowering.problem.direction(),
            p.lowering.problem.dtype(),
        );
        groups.entry(key).or_default().push(times);
    }
    Ok(groups
        .into_iter()
        .map(|((arch, direction, dtype), problems)| QuickList {
            picks: cover(&problems, max_configs),
            problems: problems.len(),
            arch,
            direction,
            dtype,
        })
        .collect())
}

/// A markdown report of quick lists and their coverage.
pub fn quick_list_table(lists: &[QuickList]) -> String {
    let mut s = String::new();
    s.push_str("| arch | direction | dtype | problems | # | config | covered (cumulative) |\n");
    s.push_str("|---|---|---|---:|---:|---|---:|\n");
    for l in lists {
        for (k, (c, f)) in l.picks.iter().enumerate() {
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} | `{c}` | {:.1}% |",
                l.arch,
                l.direction.name(),
                l.dtype.name(),
                l.problems,
                k + 1,
                100.0 * f
            );
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::recording::RecordedCandidate;

    fn cfg(st: u32) -> PerfConfig {
        format!("v1:bm=64,bn=64,bk=32,wm=32,wn=32,st={st},va=8,vb=8,vc=8,lds=swz,sk=1,rs=1")
            .parse()
            .unwrap()
    }

    fn times(list: &[(u32, f64)]) -> HashMap<PerfConfig, f64> {
        list.iter().map(|&(s, t)| (cfg(s), t)).collect()
    }

    #[test]
    fn greedy_cover_picks_the_widest_config_first_and_reports_cumulative_coverage() {
        // Config 1 covers problems 0, 1, 2 (within 0.93); config 2 covers 3; config 3 is the
        // fastest on problem 0 only; problem 4 has only failures.
        let problems = vec![
            times(&[(1, 10.5), (3, 10.0), (2, 20.0)]),
            times(&[(1, 5.0), (2, 9.0)]),
            times(&[(1, 7.0), (3, 7.2)]),
            times(&[(1, 30.0), (2, 10.0)]),
            HashMap::new(),
        ];
        let picks = cover(&problems, 5);
        assert_eq!(picks.len(), 2, "{picks:?}");
        assert_eq!(picks[0], (cfg(1), 0.6));
        assert_eq!(picks[1], (cfg(2), 0.8));
        let one = cover(&problems, 1);
        assert_eq!(one, vec![(cfg(1), 0.6)]);
        // 10.0 / 0.93 = 10.75: 10.76 does not cover.
        // If config 2 covered problem 0 it would cover both and be the only pick.
        let edge = vec![times(&[(1, 10.0), (2, 10.76)]), times(&[(2, 1.0)])];
        let picks = cover(&edge, 3);
        assert_eq!(picks.len(), 2, "{picks:?}");
        assert_eq!(picks[0].1, 0.5);
        let edge = vec![times(&[(1, 10.0), (2, 10.75)]), times(&[(2, 1.0)])];
        assert_eq!(cover(&edge, 3), vec![(cfg(2), 1.0)]);
        assert!(cover(&[], 3).is_empty());
    }

    #[test]
    fn quick_lists_are_grouped_by_arch_direction_and_dtype() {
        let rec = |line: &str, arch: &str, ts: &[(u32, Option<f64>)]| Recording {
            problem: line.into(),
            arch: arch.into(),
            device: "test".into(),
            synthetic: true,
            candidates: ts
                .iter()
                .map(|&(s, t)| RecordedCandidate {
                    config: cfg(s).to_string(),
                    time_us: t,
                })
                .collect(),
        };
        let fwd = "convbfp16 -n 1 -c 64 -H 8 -W 8 -k 64 -y 1 -x 1 -F 1 --layout NHWC";
        let fwd2 = "convbfp16 -n 2 -c 64 -H 8 -W 8 -k 64 -y 1 -x 1 -F 1 --layout NHWC";
        let bwd = "convbfp16 -n 1 -c 64 -H 8 -W 8 -k 64 -y 1 -x 1 -F 2 --layout NHWC";
        let recs = vec![
            rec(fwd, "sm_90", &[(1, Some(1.0)), (2, Some(2.0))]),
            rec(fwd2, "sm_90", &[(1, Some(3.0)), (2, Some(1.0))]),
            rec(bwd, "sm_90", &[(1, None), (2, Some(1.0))]),
            rec(fwd, "sm_80", &[(1, Some(1.0))]),
        ];
        let lists = quick_list(&recs, 4).unwrap();
        assert_eq!(lists.len(), 3);
        let f90 = lists
            .iter()
            .find(|l| l.arch == "sm_90" && l.direction == Direction::Fwd)
            .unwrap();
        assert_eq!(f90.problems, 2);
        assert_eq!(f90.picks.len(), 2);
        assert_eq!(f90.coverage(), 1.0);
        let b90 = lists
            .iter()
            .find(|l| l.direction == Direction::BwdData)
            .unwrap();
        assert_eq!(b90.picks, vec![(cfg(2), 1.0)]);
        let t = quick_list_table(&lists);
        assert!(t.contains("| sm_90 | bwd-data | bf16 | 1 | 1 |"), "{t}");
        assert_eq!(t.lines().count(), 2 + 4);
    }
}
