//! Stand-in workers for tests without a GPU: shell scripts that speak the worker protocol, so
//! that the real [`Worker`] (its limits, kills and restarts) runs under the tuner.

use super::device::DeviceInfo;
use super::protocol::{encode_response, Response};
use super::worker::{Worker, WorkerOptions};
use std::path::Path;
use std::time::Duration;

/// The GPU a stand-in reports.
pub(crate) fn device() -> DeviceInfo {
    DeviceInfo {
        ordinal: 0,
        name: "Stand-in GPU".into(),
        compute_capability: (9, 0),
        arch: "sm_90".into(),
        multiprocessors: 132,
        driver: "13.0".into(),
        clock_mhz: Some(1980),
        memory_clock_mhz: None,
        l2_bytes: 50 << 20,
        total_memory_bytes: 80 << 30,
        max_shared_per_block_optin: 227 << 10,
        max_threads_per_block: 1024,
    }
}

/// A worker that sets up every problem (logging `start` and `problem` to `log`) and hangs on
/// every candidate, like a kernel that never ends (it takes preloads and loads nothing); its measure timeout is `measure_timeout`.
pub(crate) fn hanging_worker(dir: &Path, log: &Path, measure_timeout: Duration) -> Worker {
    let ready = encode_response(&Response::Ready { device: device() });
    let problem_set = encode_response(&Response::ProblemSet { reference_us: 10.0 });
    let preloading = encode_response(&Response::Preloading { queued: 0 });
    let script = format!(
        "#!/bin/sh\necho start >> \"$1\"\necho '{ready}'\nwhile read -r line; do\n  \
         case \"$line\" in\n    *SetProblem*) echo problem >> \"$1\"; echo '{problem_set}' ;;\n    \
         *'{{\"Preload\"'*) echo '{preloading}' ;;\n    *Measure*) exec sleep 1000 ;;\n    *Shutdown*) exit 0 ;;\n  esac\ndone\n"
    );
    let path = dir.join("hanging-worker.sh");
    std::fs::write(&path, script).expect("writing the stand-in");
    let options = WorkerOptions {
        start_timeout: Duration::from_secs(10),
        problem_timeout: Duration::from_secs(10),
        measure_timeout,
        reference_multiple: 50.0,
        env: Vec::new(),
    };
    // Run as `sh script` (executing a file just written can fail with ETXTBSY).
    let args = vec![path.display().to_string(), log.display().to_string()];
    Worker::spawn_with("/bin/sh", args, options).expect("starting the stand-in")
}
