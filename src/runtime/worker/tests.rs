//! The parent side against stand-in workers: shell scripts that speak the protocol and then die,
//! hang or refuse to start on cue. No GPU needed.

use super::super::plan::Launch;
use super::super::protocol::{encode_response, Response};
use super::super::stand_in::device;
use super::*;
use crate::abi::{Module, CONV_ARGS};
use std::path::Path;

fn plan(name: &str) -> LaunchPlan {
    LaunchPlan {
        module: Module::Ptx(String::new()),
        launches: vec![Launch {
            name: name.into(),
            grid: [1, 1, 1],
            block: [32, 1, 1],
            shared_bytes: 0,
            args: CONV_ARGS.to_vec(),
        }],
        workspace_bytes: 0,
        kept_zero: 0,
    }
}

fn problem() -> ConvProblem {
    "conv -F 1 -n 1 -c 4 -H 5 -W 5 -k 4 -y 3 -x 3"
        .parse()
        .unwrap()
}

/// A worker in sh: logs `start`, `problem` and `preload` (with the module texts `modN` it was
/// given) to the file given as $1, answers `SetProblem` and `Preload`,
/// and measures by kernel name: `die` kills itself, `hang` sleeps, `fault` reports a fault and
/// exits like the real worker, anything else is `WrongResult` with `unwritten` = 7.
fn stand_in(dir: &Path) -> PathBuf {
    let ready = encode_response(&Response::Ready { device: device() });
    let problem_set = encode_response(&Response::ProblemSet {
        reference_us: 100.0,
    });
    let wrong = encode_response(&Response::Measured {
        outcome: Outcome::WrongResult {
            rel_err: 0.5,
            unwritten: 7,
            non_finite: 0,
        },
        stages: None,
    });
    let fault = encode_response(&Response::Measured {
        outcome: Outcome::Fault("CUDA_ERROR_ILLEGAL_ADDRESS".into()),
        stages: None,
    });
    let preloading = encode_response(&Response::Preloading { queued: 2 });
    let script = format!(
        r#"#!/bin/sh
echo start >> "$1"
echo 'a library printing to stdout'
echo '{ready}'
while read -r line; do
  case "$line" in
    *SetProblem*) echo problem >> "$1"; echo '{problem_set}' ;;
    *'{{"Preload"'*) echo "preload $(echo "$line" | grep -o 'mod[0-9]' | tr '\n' ' ')" >> "$1"; echo '{preloading}' ;;
    *'"name":"die"'*) echo 'dying on purpose' >&2; kill -9 $$ ;;
    *'"name":"hang"'*) exec sleep 1000 ;;
    *'"name":"fault"'*) echo '{fault}'; exit 4 ;;
    *Measure*) echo '{wrong}' ;;
    *Shutdown*) exit 0 ;;
  esac
done
"#
    );
    write_script(dir, "worker.sh", &script)
}

/// Writes a script; it is run as `sh <script>` rather than executed directly, because executing a
/// file just written can fail with ETXTBSY while another test thread forks.
fn write_script(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn spawn_script(
    script: &Path,
    args: &[&str],
    options: WorkerOptions,
) -> Result<Worker, RuntimeError> {
    let mut all = vec![script.display().to_string()];
    all.extend(args.iter().map(|a| a.to_string()));
    Worker::spawn_with("/bin/sh", all, options)
}

fn options() -> WorkerOptions {
    WorkerOptions {
        start_timeout: Duration::from_secs(10),
        problem_timeout: Duration::from_secs(10),
        measure_timeout: Duration::from_secs(1),
        reference_multiple: 50.0,
        env: Vec::new(),
    }
}

/// Spawns the stand-in and sets the problem; returns the worker and its log file.
fn started(dir: &Path) -> (Worker, PathBuf) {
    let log = dir.join("log");
    let script = stand_in(dir);
    let mut w = spawn_script(&script, &[&log.display().to_string()], options()).unwrap();
    assert_eq!(w.device().name, "Stand-in GPU");
    assert_eq!(w.set_problem(&problem(), &plan("ref"), 5).unwrap(), 100.0);
    (w, log)
}

fn log_lines(log: &Path) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

fn is_wrong_result(o: &Outcome) -> bool {
    matches!(o, Outcome::WrongResult { unwritten: 7, .. })
}

#[test]
fn answers_pass_through_and_stdout_noise_is_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let (mut w, log) = started(dir.path());
    assert!(is_wrong_result(&w.measure(&plan("a")).unwrap()));
    assert!(is_wrong_result(&w.measure(&plan("b")).unwrap()));
    assert_eq!(w.restarts(), 0);
    assert_eq!(log_lines(&log), ["start", "problem"]);
}

#[test]
fn a_worker_that_dies_is_a_fault_and_is_restarted_with_the_problem() {
    let dir = tempfile::tempdir().unwrap();
    let (mut w, log) = started(dir.path());
    match w.measure(&plan("die")).unwrap() {
        Outcome::Fault(m) => {
            assert!(m.contains("dying on purpose"), "{m}");
            assert!(m.contains("signal"), "{m}");
        }
        other => panic!("expected a fault, got {other:?}"),
    }
    // The run goes on: the next candidate gets a fresh worker that knows the problem.
    assert!(is_wrong_result(&w.measure(&plan("next")).unwrap()));
    assert_eq!(w.restarts(), 1);
    assert_eq!(log_lines(&log), ["start", "problem", "start", "problem"]);
}

#[test]
fn a_reported_fault_replaces_the_worker_before_the_next_candidate() {
    let dir = tempfile::tempdir().unwrap();
    let (mut w, log) = started(dir.path());
    assert_eq!(
        w.measure(&plan("fault")).unwrap(),
        Outcome::Fault("CUDA_ERROR_ILLEGAL_ADDRESS".into())
    );
    assert!(is_wrong_result(&w.measure(&plan("next")).unwrap()));
    assert_eq!(w.restarts(), 1);
    assert_eq!(log_lines(&log).len(), 4);
}

#[test]
fn a_hanging_worker_times_out_and_is_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let (mut w, _log) = started(dir.path());
    let t = Instant::now();
    assert_eq!(w.measure(&plan("hang")).unwrap(), Outcome::Timeout);
    let took = t.elapsed();
    // 1 s floor + 50 × 100 µs of reference time, and no waiting for the sleep to end.
    assert!(
        took >= Duration::from_secs(1) && took < Duration::from_secs(5),
        "{took:?}"
    );
    assert!(is_wrong_result(&w.measure(&plan("next")).unwrap()));
    assert_eq!(w.restarts(), 1);
}

#[test]
fn no_driver_in_the_worker_is_reported_as_no_driver() {
    let dir = tempfile::tempdir().unwrap();
    let line = encode_response(&Response::Error {
        message: RuntimeError::NoDriver.to_string(),
        fatal: true,
    });
    let exe = write_script(
        dir.path(),
        "nodriver.sh",
        &format!("#!/bin/sh\necho '{line}'\nexit 3\n"),
    );
    match spawn_script(&exe, &[], options()) {
        Err(RuntimeError::NoDriver) => {}
        Err(e) => panic!("expected NoDriver, got {e}"),
        Ok(_) => panic!("a worker without a driver"),
    }
}

#[test]
fn start_failures_say_why() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-such-exe");
    let e = Worker::spawn_with(&missing, vec![], options())
        .err()
        .unwrap();
    assert!(e.to_string().contains("cannot start"), "{e}");

    let crash = write_script(
        dir.path(),
        "crash.sh",
        "#!/bin/sh\necho 'panicked at startup' >&2\nexit 101\n",
    );
    let e = spawn_script(&crash, &[], options())
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("exited before it was ready") && e.contains("panicked at startup"),
        "{e}"
    );
    assert!(e.contains("101"), "{e}");

    let slow = write_script(dir.path(), "slow.sh", "#!/bin/sh\nexec sleep 1000\n");
    let opts = WorkerOptions {
        start_timeout: Duration::from_millis(300),
        ..options()
    };
    let t = Instant::now();
    let e = spawn_script(&slow, &[], opts).err().unwrap().to_string();
    assert!(e.contains("not ready within"), "{e}");
    assert!(t.elapsed() < Duration::from_secs(3));
}

#[test]
fn measuring_before_a_problem_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let script = stand_in(dir.path());
    let log = dir.path().join("log");
    let mut w = spawn_script(&script, &[&log.display().to_string()], options()).unwrap();
    assert!(matches!(
        w.measure(&plan("a")),
        Err(RuntimeError::NoProblem)
    ));
}

fn plan_with(name: &str, ptx: &str) -> LaunchPlan {
    LaunchPlan {
        module: Module::Ptx(ptx.into()),
        ..plan(name)
    }
}

#[test]
fn preloads_are_sent_and_told_again_to_a_restarted_worker() {
    let dir = tempfile::tempdir().unwrap();
    let (mut w, log) = started(dir.path());
    let (a, b, c) = (
        plan_with("a", "mod1"),
        plan_with("die", "mod2"),
        plan_with("c", "mod3"),
    );
    assert_eq!(w.preload(&[&a, &b, &c]).unwrap(), 2);
    assert!(is_wrong_result(&w.measure(&a).unwrap()));
    // The second candidate kills the worker: it is recorded as a fault, and the fresh worker
    // is told the problem and the one module still to come.
    assert!(matches!(w.measure(&b).unwrap(), Outcome::Fault(_)));
    assert!(is_wrong_result(&w.measure(&c).unwrap()));
    assert_eq!(w.restarts(), 1);
    assert_eq!(
        log_lines(&log),
        [
            "start",
            "problem",
            "preload mod1 mod2 mod3 ",
            "start",
            "problem",
            "preload mod3 "
        ]
    );
    // Once every announced candidate is measured, a restart has nothing to preload.
    assert!(matches!(
        w.measure(&plan("fault")).unwrap(),
        Outcome::Fault(_)
    ));
    assert!(is_wrong_result(&w.measure(&plan("next")).unwrap()));
    assert_eq!(log_lines(&log).len(), 8);
}

/// A candidate asked for while other announced modules are still being JIT-compiled waits for
/// them too: its limit allows for every announced module not yet measured (the first one-launch
/// bwd-data candidates of a problem timed out on the H200 when it allowed for its own only).
#[test]
fn the_measure_limit_allows_for_the_jit_of_every_announced_module() {
    let dir = tempfile::tempdir().unwrap();
    let (mut w, _log) = started(dir.path());
    let big = |name: &str, c: char| plan_with(name, &c.to_string().repeat(1 << 20));
    let (a, b) = (big("a", 'a'), big("b", 'b'));
    let alone = w.measure_timeout(&a);
    w.preload(&[&a, &b]).unwrap();
    let queued = w.measure_timeout(&a);
    let one_mib = Duration::from_secs_f64(super::limits::JIT_SECONDS_PER_MB);
    assert_eq!(queued, alone + one_mib, "a's own MiB plus b's");
    w.measure(&a).unwrap();
    assert_eq!(w.measure_timeout(&b), alone, "only b is left");
}

#[test]
fn the_deadline_cuts_off_a_hung_candidate_long_before_its_measure_timeout() {
    // Regression (issue 16): a hung candidate overran `--time 8` by the worker's measure
    // timeout, 70 s. Here the timeout is 60 s and the deadline half a second away.
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    let script = stand_in(dir.path());
    let patient = WorkerOptions {
        measure_timeout: Duration::from_secs(60),
        ..options()
    };
    let mut w = spawn_script(&script, &[&log.display().to_string()], patient).unwrap();
    w.set_problem(&problem(), &plan("ref"), 5).unwrap();
    w.set_deadline(Some(Instant::now() + Duration::from_millis(500)));
    let t = Instant::now();
    assert_eq!(w.measure(&plan("hang")).unwrap(), Outcome::OutOfTime);
    let took = t.elapsed();
    assert!(
        took >= Duration::from_millis(400) && took < Duration::from_millis(900),
        "{took:?}"
    );
    // Past the deadline nothing is sent, and no worker is started for it.
    assert_eq!(w.measure(&plan("next")).unwrap(), Outcome::OutOfTime);
    assert_eq!(log_lines(&log), ["start", "problem"]);
    // The deadline lifted (the next problem): a fresh worker, given the problem, measures.
    w.set_deadline(None);
    assert!(is_wrong_result(&w.measure(&plan("next")).unwrap()));
    assert_eq!(w.restarts(), 1);
    assert_eq!(log_lines(&log), ["start", "problem", "start", "problem"]);
}

#[test]
fn the_deadline_cuts_off_a_problem_set_up_that_never_ends() {
    // The reference run (and the allocation before it) waits up to problem_timeout, 300 s by
    // default: the deadline must end it too, as OutOfTime rather than a broken device.
    let ready = encode_response(&Response::Ready { device: device() });
    let script = format!(
        "#!/bin/sh\necho '{ready}'\nwhile read -r line; do\n  case \"$line\" in\n    \
         *SetProblem*) exec sleep 1000 ;;\n  esac\ndone\n"
    );
    let dir = tempfile::tempdir().unwrap();
    let script = write_script(dir.path(), "stuck.sh", &script);
    let patient = WorkerOptions {
        problem_timeout: Duration::from_secs(300),
        ..options()
    };
    let mut w = spawn_script(&script, &[], patient).unwrap();
    w.set_deadline(Some(Instant::now() + Duration::from_millis(300)));
    let t = Instant::now();
    let e = w.set_problem(&problem(), &plan("ref"), 5).unwrap_err();
    assert!(matches!(e, RuntimeError::OutOfTime { .. }), "{e}");
    assert!(
        t.elapsed() < Duration::from_millis(800),
        "{:?}",
        t.elapsed()
    );
    // Again with the deadline spent: the restart itself is refused at once.
    let t = Instant::now();
    let e = w.set_problem(&problem(), &plan("ref"), 5).unwrap_err();
    assert!(matches!(e, RuntimeError::OutOfTime { .. }), "{e}");
    assert!(
        t.elapsed() < Duration::from_millis(200),
        "{:?}",
        t.elapsed()
    );
}
