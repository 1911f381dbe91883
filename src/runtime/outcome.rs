//! The verdict on one candidate: timed, or the reason it was rejected.
//!
//! A failed candidate is data, not an abort: every way a kernel can fail is a variant here, with
//! the reason, so the tuner records it and moves on. The type crosses the worker's pipe as JSON,
//! hence serde, and every number in it is finite (JSON has no NaN).

use super::plan::KernelResources;
use serde::{Deserialize, Serialize};

/// The state of the last-level cache at the start of each timed run. Times taken in different
/// states are not comparable (session 14: a dirty L2 added up to 20 µs to memory-bound runs on
/// the H200), so a resumed run re-measures a journaled time taken in another state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ColdCache {
    /// Flushed by a memset: cold, but full of dirty lines that the run writes back first. What
    /// every journal before session 14 measured (records without the field).
    #[default]
    Dirty,
    /// Swept by a read of an unrelated buffer: cold and clean (`runtime::l2_sweep`).
    Clean,
}

/// Device-event timings of a candidate that produced the right answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Timing {
    /// Median of the timed runs, in microseconds: the figure the tuner ranks by.
    pub median_us: f64,
    /// Fastest run, in microseconds.
    pub min_us: f64,
    /// How many runs were timed (enough to cover ≥ 1 ms, at least 5).
    pub runs: u32,
    /// Convolution FLOPs divided by the median time.
    pub tflops: f64,
    /// ‖out − ref‖ / ‖ref‖ of the checked run.
    pub rel_err: f64,
    /// Registers, spills and limits of each kernel of the plan, as the driver reports them.
    pub resources: Vec<KernelResources>,
    /// Only the short first measurement was taken: it was clearly slower than the best so far
    /// (the screen the tuner asked for), so the full ≥ 1 ms median was not worth its time.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub screened: bool,
    /// The cache state each timed run started in.
    #[serde(default)]
    pub cache: ColdCache,
}

/// Seconds one measurement spent in each stage inside the worker (where the time of a
/// candidate goes, for the tuner's stage timings).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct MeasureStages {
    /// Module load (JIT) and kernel preparation: the wall time the measurement waited for
    /// them (less than the JIT's own time when the module was preloaded on another thread).
    pub load_s: f64,
    /// The JIT of this candidate's module, on whichever thread ran it (a loader thread when
    /// preloaded): summed over candidates, the JIT's total work, which may overlap the GPU's.
    #[serde(default)]
    pub jit_s: f64,
    /// The checked run, copying the output back and comparing it with the reference.
    pub verify_s: f64,
    /// Warm-up and timed runs.
    pub time_s: f64,
}

/// What happened to one candidate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Outcome {
    /// Correct, and timed.
    Ok(Timing),
    /// It ran but its output differs from the reference beyond the dtype's tolerance.
    WrongResult {
        /// ‖out − ref‖ / ‖ref‖ over the elements that are finite.
        rel_err: f64,
        /// Elements still holding the poison pattern: the kernel never wrote them.
        unwritten: u64,
        /// Other NaN or infinite elements.
        non_finite: u64,
    },
    /// It ran but left bytes of the workspace's kept-zero region
    /// ([`crate::abi::KEPT_ZERO_BYTES`]) non-zero: the next call on a kept workspace would
    /// start from stale counters, whatever this call's output.
    DirtyWorkspace {
        /// Non-zero bytes of the region after the run.
        nonzero: u64,
    },
    /// The code generator failed (filled in by the tuner, never by the runtime).
    CompileFailed(String),
    /// The driver rejected the module (PTX JIT log included) or a kernel name is missing.
    LoadFailed(String),
    /// A launch was refused: too many threads or registers, too much shared memory, bad grid.
    LaunchFailed(String),
    /// The kernel crashed (illegal address, misaligned access, …); its context was lost.
    Fault(String),
    /// The kernel did not finish within the worker's time limit.
    Timeout,
    /// The run's deadline (`--time`, `--time-total`) passed while this candidate was being
    /// measured, so it was cut off: this says nothing about the kernel (it is not a fault), and
    /// a resumed run measures it again. Made by the parent, never sent by a worker.
    OutOfTime,
}

impl Outcome {
    /// The timing, if the candidate passed.
    pub fn timing(&self) -> Option<&Timing> {
        match self {
            Outcome::Ok(t) => Some(t),
            _ => None,
        }
    }

    /// A short lowercase tag for tables and logs (`ok`, `wrong`, `fault`, …).
    pub fn kind(&self) -> &'static str {
        match self {
            Outcome::Ok(_) => "ok",
            Outcome::WrongResult { .. } => "wrong",
            Outcome::DirtyWorkspace { .. } => "dirty-workspace",
            Outcome::CompileFailed(_) => "compile-failed",
            Outcome::LoadFailed(_) => "load-failed",
            Outcome::LaunchFailed(_) => "launch-failed",
            Outcome::Fault(_) => "fault",
            Outcome::Timeout => "timeout",
            Outcome::OutOfTime => "out-of-time",
        }
    }

    /// Whether the run's deadline cut the candidate off (not a verdict on the kernel).
    pub fn cut_off(&self) -> bool {
        matches!(self, Outcome::OutOfTime)
    }

    /// Whether the process that measured it must be restarted before measuring anything else.
    pub fn lost_context(&self) -> bool {
        matches!(self, Outcome::Fault(_) | Outcome::Timeout)
    }
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Outcome::Ok(t) => write!(
                f,
                "ok: {:.2} us median ({:.2} min, {} runs{}), {:.1} TFLOP/s",
                t.median_us,
                t.min_us,
                t.runs,
                if t.screened { ", screened" } else { "" },
                t.tflops
            ),
            Outcome::WrongResult {
                rel_err,
                unwritten,
                non_finite,
            } => write!(
                f,
                "wrong result: rel. error {rel_err:.3e}, {unwritten} element(s) unwritten, \
                 {non_finite} other non-finite"
            ),
            Outcome::DirtyWorkspace { nonzero } => write!(
                f,
                "left {nonzero} byte(s) of the workspace's kept-zero region non-zero"
            ),
            Outcome::CompileFailed(m) => write!(f, "compile failed: {m}"),
            Outcome::LoadFailed(m) => write!(f, "load failed: {m}"),
            Outcome::LaunchFailed(m) => write!(f, "launch failed: {m}"),
            Outcome::Fault(m) => write!(f, "fault: {m}"),
            Outcome::Timeout => write!(f, "timeout"),
            Outcome::OutOfTime => write!(f, "cut off by the run's deadline"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcomes_round_trip_and_describe_themselves() {
        let all = [
            Outcome::Ok(Timing {
                median_us: 10.5,
                min_us: 10.0,
                runs: 96,
                tflops: 12.0,
                rel_err: 1e-7,
                screened: false,
                resources: vec![],
                cache: ColdCache::Clean,
            }),
            Outcome::WrongResult {
                rel_err: 0.5,
                unwritten: 3,
                non_finite: 0,
            },
            Outcome::LoadFailed("ptxas: error".into()),
            Outcome::Fault("CUDA_ERROR_ILLEGAL_ADDRESS".into()),
            Outcome::Timeout,
            Outcome::OutOfTime,
        ];
        for o in &all {
            let back: Outcome = serde_json::from_str(&serde_json::to_string(o).unwrap()).unwrap();
            assert_eq!(&back, o);
        }
        assert_eq!(all[0].timing().map(|t| t.runs), Some(96));
        assert!(all[1].timing().is_none());
        assert!(all[1].to_string().contains("3 element(s) unwritten"));
        assert!(all[3].lost_context() && all[4].lost_context() && !all[2].lost_context());
        assert_eq!(all[4].kind(), "timeout");
        assert!(all[5].cut_off() && !all[4].cut_off() && !all[5].lost_context());
        // A timing journaled before the cache state was recorded was taken after a memset.
        let old = serde_json::to_string(&all[0])
            .unwrap()
            .replace(r#","cache":"clean""#, "");
        let old: Outcome = serde_json::from_str(&old).unwrap();
        assert_eq!(old.timing().map(|t| t.cache), Some(ColdCache::Dirty));
    }
}
