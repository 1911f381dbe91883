//! Where a problem's tuning time goes, stage by stage (issue 16: a short run is mostly fixed
//! cost, and the fix starts with seeing which stage it is).
//!
//! Wall-clock stages (the longest of lookup, enumerate and reference, which run at the same
//! time; rank, waiting for the compiler, measuring) add up to about the problem's wall time; `codegen_s` is CPU time summed over the compile threads,
//! so on many cores it can exceed the wall time it overlaps with. `load_s`, `verify_s` and
//! `time_s` split `measure_s` as the device worker saw it (zero when the device does not
//! report the split); `jit_s` is the JIT's own time, mostly on the worker's loader threads
//! while the GPU timed other candidates, so like `codegen_s` it is work, not wall time.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::time::Duration;

/// Seconds spent in each stage of one problem.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct StageTimes {
    /// Looking the problem up in the databases for the seeds measured first (beside the
    /// enumeration and the reference).
    pub lookup_s: f64,
    /// Enumerating and checking the legal candidates.
    pub enumerate_s: f64,
    /// The strategy choosing candidates (the guided one ranks them all with the cost model).
    pub rank_s: f64,
    /// Code generation, CPU seconds summed over the compile threads.
    pub codegen_s: f64,
    /// Wall time the measuring loop waited for compiled candidates.
    pub codegen_wait_s: f64,
    /// Compiling, uploading and running the reference kernel (`set_problem`), and for a
    /// device's first problem starting its worker.
    pub reference_s: f64,
    /// Wall time of every candidate measurement, sending the module to the worker included.
    pub measure_s: f64,
    /// Of `measure_s`: waiting for the module load and JIT in the worker.
    pub load_s: f64,
    /// The JIT's own time summed over the candidates, on whichever worker thread ran it: with
    /// modules preloaded on several threads while the GPU times, more than `load_s` (the part
    /// not hidden), and it may exceed the wall time it overlaps with.
    pub jit_s: f64,
    /// Of `measure_s`: the checked run and the comparison with the reference.
    pub verify_s: f64,
    /// Of `measure_s`: the timed runs.
    pub time_s: f64,
    /// The problem's wall time, start to end.
    pub total_s: f64,
}

impl StageTimes {
    /// Adds a duration to a stage.
    pub fn add(slot: &mut f64, d: Duration) {
        *slot += d.as_secs_f64();
    }
}

impl fmt::Display for StageTimes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "lookup {:.2} s, enumerate {:.2} s, rank {:.2} s, codegen {:.2} s CPU (waited {:.2} s), \
             reference {:.2} s, measure {:.2} s (load {:.2} waited of {:.2} JIT, verify {:.2}, \
             time {:.2})",
            self.lookup_s,
            self.enumerate_s,
            self.rank_s,
            self.codegen_s,
            self.codegen_wait_s,
            self.reference_s,
            self.measure_s,
            self.load_s,
            self.jit_s,
            self.verify_s,
            self.time_s
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn old_records_without_stages_still_parse() {
        let s: StageTimes = serde_json::from_str(r#"{"rank_s": 1.5}"#).unwrap();
        assert_eq!(s.rank_s, 1.5);
        assert_eq!(s.total_s, 0.0);
        let mut t = StageTimes::default();
        StageTimes::add(&mut t.codegen_s, Duration::from_millis(250));
        StageTimes::add(&mut t.codegen_s, Duration::from_millis(250));
        assert!((t.codegen_s - 0.5).abs() < 1e-9);
        assert!(t.to_string().contains("codegen 0.50 s CPU"));
    }
}
