//! The time limits of a [`Worker`]: the configured floors ([`WorkerOptions`]), the run's
//! deadline that caps every wait, and the per-candidate limit that grows with the reference
//! time and the JIT work of the modules still to load. Apart from the exchanges so that what
//! a wait may take is decided in one place.

use super::Worker;
use crate::runtime::plan::LaunchPlan;
use std::ffi::OsString;
use std::time::{Duration, Instant};

/// JIT allowance per MiB of module, on top of [`WorkerOptions::measure_timeout`]: about twice
/// the worst the H200's driver was seen to take (see `Worker::measure_timeout`).
pub(super) const JIT_SECONDS_PER_MB: f64 = 12.0;

/// Time limits of a [`Worker`].
#[derive(Debug, Clone)]
pub struct WorkerOptions {
    /// For the child to open the device and say it is ready (CUDA start-up can take seconds).
    pub start_timeout: Duration,
    /// For setting up a problem: allocation, upload, and running and timing the reference.
    pub problem_timeout: Duration,
    /// Floor of the limit per candidate (PTX JIT, one checked run, warm-up and timed runs).
    pub measure_timeout: Duration,
    /// The per-candidate limit grows by this many reference-plan times, so that large problems,
    /// whose every run is slow, are not cut off.
    pub reference_multiple: f64,
    /// Environment variables set on the child, over the parent's (the CUDA worker's JIT
    /// cache, see [`jit_cache_env`](super::jit_cache::jit_cache_env)).
    pub env: Vec<(String, OsString)>,
}

impl Default for WorkerOptions {
    fn default() -> Self {
        WorkerOptions {
            start_timeout: Duration::from_secs(60),
            problem_timeout: Duration::from_secs(300),
            measure_timeout: Duration::from_secs(10),
            reference_multiple: 50.0,
            env: Vec::new(),
        }
    }
}

impl Worker {
    /// Caps every later wait (start, problem set-up, measurement, preload) at `deadline`: what
    /// is still running then is cut off ([`Outcome::OutOfTime`] for a candidate,
    /// [`RuntimeError::OutOfTime`] for the set-up) and the child is killed; `None` lifts it.
    pub fn set_deadline(&mut self, deadline: Option<Instant>) {
        self.deadline = deadline;
    }

    /// `limit`, or the time to the deadline if that is shorter (then `true`).
    pub(super) fn capped(&self, limit: Duration) -> (Duration, bool) {
        match self.deadline {
            Some(d) => {
                let left = d.saturating_duration_since(Instant::now());
                if left < limit {
                    (left, true)
                } else {
                    (limit, false)
                }
            }
            None => (limit, false),
        }
    }

    pub(super) fn past_deadline(&self) -> bool {
        self.deadline.is_some_and(|d| Instant::now() >= d)
    }

    /// The limit for one candidate: the floor, plus a multiple of the reference's time, plus
    /// the driver's JIT of the module, which grows with its size: on the H200, ptxas took 1.4,
    /// 7.8 and 11.3 s for 0.74, 0.87 and 2.1 MB of PTX (f32 kernels with a deep K step and
    /// several bwd-data phases), so a large module timed out before it ran. A hang still ends
    /// within seconds of what its JIT can need.
    ///
    /// With preloading, the candidate's module may still be queued behind (or JIT-compiled
    /// beside) the other announced modules when it is asked for: on the H200 the first
    /// one-launch strided bwd-data candidates of a problem timed out that way. So the JIT
    /// allowance covers every announced module not measured yet, this one included.
    pub(super) fn measure_timeout(&self, plan: &LaunchPlan) -> Duration {
        let own = (!self.preloaded.contains(&plan.module)).then(|| plan.module.bytes().len());
        let bytes: usize = self
            .preloaded
            .iter()
            .map(|m| m.bytes().len())
            .chain(own)
            .sum();
        let jit_s = JIT_SECONDS_PER_MB * bytes as f64 / (1u64 << 20) as f64;
        self.options.measure_timeout
            + Duration::from_secs_f64(
                (self.reference_us * 1e-6 * self.options.reference_multiple).clamp(0.0, 3600.0)
                    + jit_s.min(600.0),
            )
    }
}
