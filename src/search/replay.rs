//! Replay: score a strategy against a recording, with no GPU, through the same batch protocol
//! as the tuner, and the efficiency figures BENCHMARKS.md reports.
//!
//! The protocol is the one [`tune`](crate::tune::tune) runs: batches of [`BATCH`], proposed one
//! batch ahead of the measurements (the tuner compiles the next batch while the GPU times the
//! current one), so a strategy sees the results of batch *k* only when it proposes batch *k + 2*.

use super::recording::{Prepared, Recording, RecordingError};
use super::{Measured, SearchContext, Strategy};

/// Candidates per batch, as the tuner's default.
pub const BATCH: usize = 32;
/// A time within this fraction of the exhaustive best counts as having found it.
pub const TARGET: f64 = 0.98;
/// Fractions of the space at which the best-so-far is reported.
pub const CHECKPOINTS: [f64; 3] = [0.05, 0.10, 0.25];

/// A strategy that broke the protocol during replay.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// The recording is bad.
    #[error(transparent)]
    Recording(#[from] RecordingError),
    /// An index outside the candidates.
    #[error("strategy '{strategy}' proposed index {index}, but there are {len} candidates")]
    OutOfRange {
        /// The strategy.
        strategy: String,
        /// The index.
        index: usize,
        /// Candidate count.
        len: usize,
    },
    /// An index proposed twice (the tuner would measure it twice).
    #[error("strategy '{strategy}' proposed candidate {index} twice")]
    Repeated {
        /// The strategy.
        strategy: String,
        /// The index.
        index: usize,
    },
    /// A batch larger than asked for.
    #[error("strategy '{strategy}' returned {got} candidates when asked for at most {max}")]
    TooMany {
        /// The strategy.
        strategy: String,
        /// Returned.
        got: usize,
        /// Asked.
        max: usize,
    },
}

/// Best-so-far time (µs) after each evaluation of `strategy` against a prepared recording, for
/// at most `budget` evaluations; infinite until the first success. Shorter than `budget` when
/// the strategy ends early.
pub fn replay_prepared(
    strategy: &mut dyn Strategy,
    rec: &Prepared,
    budget: usize,
) -> Result<Vec<f64>, ReplayError> {
    let n = rec.configs.len();
    let total = budget.min(n);
    let ctx = SearchContext {
        lowering: &rec.lowering,
        arch: &rec.arch,
        candidates: &rec.configs,
    };
    let name = strategy.name().to_string();
    let mut seen = vec![false; n];
    let mut measured: Vec<Measured> = Vec::with_capacity(total);
    let mut curve = Vec::with_capacity(total);
    let mut best = f64::INFINITY;
    let mut queue: std::collections::VecDeque<Vec<usize>> = Default::default();
    let mut proposed = 0usize;
    let mut exhausted = false;
    loop {
        while !exhausted && queue.len() < 2 && proposed < total {
            let want = BATCH.min(total - proposed);
            let batch = strategy.next_batch(&ctx, &measured, want);
            if batch.len() > want {
                return Err(ReplayError::TooMany {
                    strategy: name,
                    got: batch.len(),
                    max: want,
                });
            }
            if batch.is_empty() {
                exhausted = true;
                break;
            }
            for &i in &batch {
                if i >= n {
                    return Err(ReplayError::OutOfRange {
                        strategy: name,
                        index: i,
                        len: n,
                    });
                }
                if std::mem::replace(&mut seen[i], true) {
                    return Err(ReplayError::Repeated {
                        strategy: name,
                        index: i,
                    });
                }
            }
            proposed += batch.len();
            queue.push_back(batch);
        }
        let Some(batch) = queue.pop_front() else {
            break;
        };
        for i in batch {
            let time_us = rec.times[i];
            if let Some(t) = time_us {
                best = best.min(t);
            }
            measured.push(Measured { index: i, time_us });
            curve.push(best);
        }
    }
    Ok(curve)
}

/// Best-so-far time (µs) after each evaluation of `strategy` against `recording`, for at most
/// `budget` evaluations; see [`replay_prepared`].
pub fn replay(
    strategy: &mut dyn Strategy,
    recording: &Recording,
    budget: usize,
) -> Result<Vec<f64>, ReplayError> {
    replay_prepared(strategy, &recording.prepare()?, budget)
}

/// How quickly one strategy found one recording's best.
#[derive(Debug, Clone, PartialEq)]
pub struct Efficiency {
    /// The strategy.
    pub strategy: String,
    /// Candidates in the recording.
    pub space: usize,
    /// The exhaustive best, µs.
    pub best_us: f64,
    /// Evaluations until a time ≤ best / [`TARGET`] was measured; `None` if never.
    pub evals_to_target: Option<usize>,
    /// Best-so-far as a fraction of the exhaustive best (best / best-so-far, 1 = found it) after
    /// 5%, 10% and 25% of the space ([`CHECKPOINTS`]); 0 when nothing succeeded by then.
    pub at_checkpoints: [f64; 3],
    /// The best-so-far curve (µs after each evaluation), for plots.
    pub curve: Vec<f64>,
}

impl Efficiency {
    /// Evaluations to target as a fraction of the space (1 when never reached).
    pub fn fraction_to_target(&self) -> f64 {
        self.evals_to_target
            .map_or(1.0, |e| e as f64 / self.space.max(1) as f64)
    }

    /// Whether the target was reached within `fraction` of the space.
    pub fn meets(&self, fraction: f64) -> bool {
        self.evals_to_target
            .is_some_and(|e| e as f64 <= (fraction * self.space as f64).ceil())
    }
}

/// Evaluations at a checkpoint fraction of a space of `n` (at least one).
pub fn checkpoint_evals(fraction: f64, n: usize) -> usize {
    ((fraction * n as f64).ceil() as usize).clamp(1, n.max(1))
}

/// Replays `strategy` over the whole space of `rec` and summarises it.
pub fn efficiency_prepared(
    rec: &Prepared,
    strategy: &mut dyn Strategy,
) -> Result<Efficiency, ReplayError> {
    let n = rec.configs.len();
    let curve = replay_prepared(strategy, rec, n)?;
    let threshold = rec.best_us / TARGET;
    let evals_to_target = curve.iter().position(|&b| b <= threshold).map(|p| p + 1);
    let at = |f: f64| {
        let k = checkpoint_evals(f, n);
        curve.get(k - 1).or(curve.last()).map_or(0.0, |&b| {
            if b.is_finite() {
                rec.best_us / b
            } else {
                0.0
            }
        })
    };
    Ok(Efficiency {
        strategy: strategy.name().to_string(),
        space: n,
        best_us: rec.best_us,
        evals_to_target,
        at_checkpoints: CHECKPOINTS.map(at),
        curve,
    })
}

/// Every registered strategy ([`STRATEGIES`](super::STRATEGIES), seeded with `seed`) replayed
/// over the whole space of `rec`, in registration order: one row group of the efficiency table
/// and one convergence plot.
pub fn efficiency_all(rec: &Prepared, seed: u64) -> Result<Vec<Efficiency>, ReplayError> {
    super::STRATEGIES
        .iter()
        .filter_map(|name| super::by_name(name, seed))
        .map(|mut s| efficiency_prepared(rec, s.as_mut()))
        .collect()
}

/// Replays `strategy` over the whole space of `recording` and summarises it.
pub fn efficiency(
    recording: &Recording,
    strategy: &mut dyn Strategy,
) -> Result<Efficiency, ReplayError> {
    efficiency_prepared(&recording.prepare()?, strategy)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::recording::RecordedCandidate;
    use crate::search::{by_name, Exhaustive, STRATEGIES};

    /// 100 candidates varying stages 1..=100 (not a real space; replay only needs distinct
    /// configs). Time = 100 - i except every 7th fails.
    fn rec() -> Recording {
        let candidates = (1..=100u32)
            .map(|i| RecordedCandidate {
                config: format!(
                    "v1:bm=64,bn=64,bk=32,wm=32,wn=32,st={i},va=8,vb=8,vc=8,lds=swz,sk=1,rs=1"
                ),
                time_us: (!i.is_multiple_of(7)).then_some(101.0 - f64::from(i)),
            })
            .collect();
        Recording {
            problem: "convbfp16 -n 1 -c 64 -H 8 -W 8 -k 64 -y 1 -x 1 -F 1 --layout NHWC".into(),
            arch: "sm_90".into(),
            device: "unit test".into(),
            synthetic: true,
            candidates,
        }
    }

    #[test]
    fn exhaustive_replay_is_the_running_minimum() {
        let r = rec();
        let curve = replay(&mut Exhaustive::default(), &r, 1000).unwrap();
        assert_eq!(curve.len(), 100);
        assert_eq!(curve[0], 100.0);
        assert_eq!(curve[5], 95.0);
        assert_eq!(curve[6], 95.0, "the 7th failed");
        assert_eq!(curve[99], 1.0);
        let short = replay(&mut Exhaustive::default(), &r, 10).unwrap();
        assert_eq!(short.len(), 10);
        let e = efficiency(&r, &mut Exhaustive::default()).unwrap();
        assert_eq!(e.best_us, 1.0);
        assert_eq!(e.evals_to_target, Some(100));
        assert_eq!(e.at_checkpoints, [1.0 / 96.0, 1.0 / 91.0, 1.0 / 76.0]);
        assert!(!e.meets(0.5) && e.meets(1.0));
    }

    #[test]
    fn strategies_see_measurements_one_batch_late() {
        struct Spy(Vec<usize>, usize);
        impl Strategy for Spy {
            fn name(&self) -> &'static str {
                "spy"
            }
            fn next_batch(
                &mut self,
                _: &SearchContext<'_>,
                m: &[Measured],
                max: usize,
            ) -> Vec<usize> {
                self.0.push(m.len());
                let end = (self.1 + max).min(100);
                let b = (self.1..end).collect();
                self.1 = end;
                b
            }
        }
        let mut spy = Spy(vec![], 0);
        replay(&mut spy, &rec(), 100).unwrap();
        // Batches 0 and 1 see nothing; batch 2 sees batch 0; batch 3 (the last, 4 long) sees 0–1.
        assert_eq!(spy.0, vec![0, 0, 32, 64]);
    }

    #[test]
    fn protocol_violations_are_errors() {
        struct Bad(usize);
        impl Strategy for Bad {
            fn name(&self) -> &'static str {
                "bad"
            }
            fn next_batch(
                &mut self,
                _: &SearchContext<'_>,
                _: &[Measured],
                max: usize,
            ) -> Vec<usize> {
                match self.0 {
                    0 => vec![0, 0],
                    1 => vec![1000],
                    _ => vec![0; max + 1],
                }
            }
        }
        let r = rec();
        assert!(matches!(
            replay(&mut Bad(0), &r, 50),
            Err(ReplayError::Repeated { index: 0, .. })
        ));
        assert!(matches!(
            replay(&mut Bad(1), &r, 50),
            Err(ReplayError::OutOfRange { index: 1000, .. })
        ));
        assert!(matches!(
            replay(&mut Bad(2), &r, 50),
            Err(ReplayError::TooMany { .. })
        ));
    }

    #[test]
    fn every_strategy_replays_the_whole_space() {
        let r = rec();
        for name in STRATEGIES {
            let mut s = by_name(name, 3).unwrap();
            let curve = replay(s.as_mut(), &r, usize::MAX).unwrap();
            assert_eq!(curve.len(), 100, "{name}");
            assert_eq!(*curve.last().unwrap(), 1.0, "{name}");
            assert!(
                curve.windows(2).all(|w| w[1] <= w[0]),
                "{name}: best-so-far never rises"
            );
        }
    }
}
