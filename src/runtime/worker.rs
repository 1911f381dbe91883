//! The parent's side of the fault-isolating worker process.
//!
//! A kernel that faults poisons its CUDA context for the rest of the process, and a kernel that
//! never ends blocks it for good; neither may end a tuning run. So the GPU work happens in a child
//! process (`convtune worker --device N`, serving [`worker_main`](super::worker_main)) that this
//! side talks to in JSON lines, with a time limit on every answer. When the child dies or runs out
//! of time, it is killed, the candidate is recorded as [`Outcome::Fault`] or [`Outcome::Timeout`],
//! and a fresh child is started (and given the problem again) when the next request comes.
//!
//! Every wait is also capped by the run's deadline ([`Worker::set_deadline`], from `--time`):
//! a candidate still running when it passes is [`Outcome::OutOfTime`], not a timeout of the
//! kernel; its child is killed without waiting for it to exit (a hung GPU can take a while to
//! tear down) and reaped on a thread, so the problem ends on time.

use super::device::DeviceInfo;
use super::error::RuntimeError;
use super::outcome::{MeasureStages, Outcome};
use super::plan::{KernelResources, LaunchPlan};
use super::protocol::{decode_response, Request, Response};
use crate::problem::ConvProblem;
use std::collections::VecDeque;
use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::{ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

/// JIT allowance per MiB of module, on top of [`WorkerOptions::measure_timeout`]: about twice
/// the worst the H200's driver was seen to take (see `Worker::measure_timeout`).
const JIT_SECONDS_PER_MB: f64 = 12.0;

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

/// Lines of the child's stderr (and stray stdout) kept to explain a death.
const DIAGNOSTIC_LINES: usize = 20;

/// How an exchange with the child ended.
enum Reply {
    Response(Response),
    TimedOut,
    /// The child died or spoke nonsense; the text says how.
    Broken(String),
}

/// A running child process and its pipes.
struct Child {
    process: std::process::Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    diagnostics: Arc<Mutex<VecDeque<String>>>,
    stderr_thread: Option<JoinHandle<()>>,
}

fn remember(diagnostics: &Mutex<VecDeque<String>>, line: String) {
    if let Ok(mut d) = diagnostics.lock() {
        if d.len() == DIAGNOSTIC_LINES {
            d.pop_front();
        }
        d.push_back(line.chars().take(500).collect());
    }
}

/// Reads `r` line by line (lossy UTF-8) on a thread, handing each line to `each`.
fn pump(
    r: impl Read + Send + 'static,
    mut each: impl FnMut(String) -> bool + Send + 'static,
) -> JoinHandle<()> {
    thread::spawn(move || {
        let mut r = BufReader::new(r);
        let mut buf = Vec::new();
        loop {
            buf.clear();
            match r.read_until(b'\n', &mut buf) {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    let line = String::from_utf8_lossy(&buf).trim_end().to_string();
                    if !each(line) {
                        break;
                    }
                }
            }
        }
    })
}

impl Child {
    fn start(
        exe: &PathBuf,
        args: &[String],
        env: &[(String, OsString)],
    ) -> Result<Child, RuntimeError> {
        let mut process = Command::new(exe)
            .args(args)
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| RuntimeError::Worker(format!("cannot start {}: {e}", exe.display())))?;
        let diagnostics = Arc::new(Mutex::new(VecDeque::new()));
        let (tx, lines) = mpsc::channel();
        if let Some(out) = process.stdout.take() {
            pump(out, move |l| tx.send(l).is_ok());
        }
        let stderr_thread = process.stderr.take().map(|err| {
            let d = diagnostics.clone();
            pump(err, move |l| {
                remember(&d, l);
                true
            })
        });
        Ok(Child {
            stdin: process.stdin.take(),
            process,
            lines,
            diagnostics,
            stderr_thread,
        })
    }

    /// Sends one request and waits up to `timeout` for its response.
    fn exchange(&mut self, request: &str, timeout: Duration) -> Reply {
        let sent = match self.stdin.as_mut() {
            Some(stdin) => writeln!(stdin, "{request}").and_then(|()| stdin.flush()),
            None => Err(std::io::ErrorKind::BrokenPipe.into()),
        };
        if let Err(e) = sent {
            return Reply::Broken(format!("cannot send a request ({e})"));
        }
        self.receive(timeout)
    }

    /// Waits up to `timeout` for the next response line; other lines become diagnostics.
    fn receive(&mut self, timeout: Duration) -> Reply {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => match decode_response(&line) {
                    None => remember(&self.diagnostics, line),
                    Some(Ok(r)) => return Reply::Response(r),
                    Some(Err(e)) => return Reply::Broken(e),
                },
                Err(RecvTimeoutError::Timeout) => return Reply::TimedOut,
                Err(RecvTimeoutError::Disconnected) => {
                    return Reply::Broken("the worker closed its output".into())
                }
            }
        }
    }

    /// Kills the child without waiting for it: a thread reaps it (returned, so that the next
    /// child can wait for the GPU to be free, within its own limit).
    fn abandon(mut self) -> JoinHandle<()> {
        drop(self.stdin.take());
        let _ = self.process.kill();
        thread::spawn(move || {
            let _ = self.process.wait();
        })
    }

    /// Ends the child: closes its input, waits up to `grace` for it to exit, then kills it; says
    /// how it ended, with its last stderr lines.
    fn end(mut self, grace: Duration) -> String {
        drop(self.stdin.take()); // end of input: a healthy worker exits on its own
        let deadline = Instant::now() + grace;
        let status = loop {
            match self.process.try_wait() {
                Ok(Some(s)) => break Some(s),
                Ok(None) if Instant::now() < deadline => thread::sleep(Duration::from_millis(10)),
                _ => {
                    let _ = self.process.kill();
                    break self.process.wait().ok();
                }
            }
        };
        // Let the stderr reader drain what the child wrote before it ended.
        if let Some(t) = self.stderr_thread.take() {
            let until = Instant::now() + Duration::from_millis(500);
            while !t.is_finished() && Instant::now() < until {
                thread::sleep(Duration::from_millis(5));
            }
        }
        let mut text = match status {
            Some(s) => format!("worker {s}"),
            None => "worker status unknown".to_string(),
        };
        if let Ok(d) = self.diagnostics.lock() {
            if !d.is_empty() {
                let tail: Vec<&str> = d.iter().map(String::as_str).collect();
                text.push_str(&format!("; its last output: {}", tail.join(" | ")));
            }
        }
        text
    }
}

/// A measuring process for one device, restarted whenever a candidate kills it.
pub struct Worker {
    exe: PathBuf,
    args: Vec<String>,
    options: WorkerOptions,
    child: Option<Child>,
    device: DeviceInfo,
    /// The `SetProblem` request line, replayed to every restarted child.
    problem: Option<String>,
    /// Modules announced with [`Worker::preload`] whose candidates are not measured yet: a
    /// restarted child (after a fault) is told them again, so it loads ahead as well.
    preloaded: Vec<crate::abi::Module>,
    reference_us: f64,
    restarts: u32,
    /// Every wait ends by this instant (the run's deadline), see [`Worker::set_deadline`].
    deadline: Option<Instant>,
    /// The reaper of a child killed at the deadline, joined (briefly) before the next starts.
    reaping: Option<JoinHandle<()>>,
}

/// How long a new child waits for the one killed before it to be gone.
const REAP_WAIT: Duration = Duration::from_secs(5);

impl Worker {
    /// Starts `convtune worker --device N` (this executable) with default time limits and the
    /// driver's JIT cache in a per-user directory of its own (see
    /// [`jit_cache_env`](super::jit_cache::jit_cache_env)).
    pub fn spawn(device: usize) -> Result<Worker, RuntimeError> {
        let exe = std::env::current_exe()
            .map_err(|e| RuntimeError::Worker(format!("cannot find this executable: {e}")))?;
        let args = vec!["worker".into(), "--device".into(), device.to_string()];
        let options = WorkerOptions {
            env: super::jit_cache::jit_cache_env(),
            ..WorkerOptions::default()
        };
        Worker::spawn_with(exe, args, options)
    }

    /// Starts `convtune worker --device N --runtime hip`: the same isolation on an AMD GPU,
    /// where a memory fault usually ends the process (the next request starts a fresh one).
    pub fn spawn_hip(device: usize) -> Result<Worker, RuntimeError> {
        let exe = std::env::current_exe()
            .map_err(|e| RuntimeError::Worker(format!("cannot find this executable: {e}")))?;
        let args = [
            "worker",
            "--device",
            &device.to_string(),
            "--runtime",
            "hip",
        ]
        .map(String::from)
        .to_vec();
        Worker::spawn_with(exe, args, WorkerOptions::default())
    }

    /// Starts any executable that speaks the worker protocol (tests use stand-ins).
    pub fn spawn_with(
        exe: impl Into<PathBuf>,
        args: Vec<String>,
        options: WorkerOptions,
    ) -> Result<Worker, RuntimeError> {
        let exe = exe.into();
        let (child, device) = start(&exe, &args, &options)?;
        Ok(Worker {
            exe,
            args,
            options,
            child: Some(child),
            device,
            problem: None,
            preloaded: Vec::new(),
            reference_us: 0.0,
            restarts: 0,
            deadline: None,
            reaping: None,
        })
    }

    /// The device the worker measures on.
    pub fn device(&self) -> &DeviceInfo {
        &self.device
    }

    /// Caps every later wait (start, problem set-up, measurement, preload) at `deadline`: what
    /// is still running then is cut off ([`Outcome::OutOfTime`] for a candidate,
    /// [`RuntimeError::OutOfTime`] for the set-up) and the child is killed; `None` lifts it.
    pub fn set_deadline(&mut self, deadline: Option<Instant>) {
        self.deadline = deadline;
    }

    /// `limit`, or the time to the deadline if that is shorter (then `true`).
    fn capped(&self, limit: Duration) -> (Duration, bool) {
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

    fn past_deadline(&self) -> bool {
        self.deadline.is_some_and(|d| Instant::now() >= d)
    }

    /// How many times a dead or stuck worker has been replaced.
    pub fn restarts(&self) -> u32 {
        self.restarts
    }

    /// Sets up a problem in the worker (see [`Measurer::set_problem`](super::Measurer::set_problem));
    /// returns the reference plan's median time in µs.
    pub fn set_problem(
        &mut self,
        problem: &ConvProblem,
        reference: &LaunchPlan,
        seed: u64,
    ) -> Result<f64, RuntimeError> {
        let line = encode(&Request::SetProblem {
            problem: *problem,
            reference: reference.clone(),
            seed,
        })?;
        self.problem = None;
        self.preloaded.clear();
        self.ensure_child()?;
        let reference_us = self.send_problem(&line)?;
        self.problem = Some(line);
        self.reference_us = reference_us;
        Ok(reference_us)
    }

    /// Checks and times a candidate. A candidate that crashes or hangs the worker is
    /// `Ok(Fault)` or `Ok(Timeout)`; `Err` means no worker can be brought up to measure.
    pub fn measure(&mut self, plan: &LaunchPlan) -> Result<Outcome, RuntimeError> {
        self.measure_with(plan, None).map(|(o, _)| o)
    }

    /// [`Worker::measure`] with adaptive timing (a candidate whose short first measurement is
    /// slower than `screen_us` is not timed in full, see
    /// [`Measurer::measure_with`](super::Measurer::measure_with)), and the worker's stage times.
    pub fn measure_with(
        &mut self,
        plan: &LaunchPlan,
        screen_us: Option<f64>,
    ) -> Result<(Outcome, Option<MeasureStages>), RuntimeError> {
        if self.problem.is_none() {
            return Err(RuntimeError::NoProblem);
        }
        if self.past_deadline() {
            return Ok((Outcome::OutOfTime, None));
        }
        let line = encode(&Request::Measure {
            plan: plan.clone(),
            screen_us,
        })?;
        // A restarted child is told what is still to come, this candidate included.
        match self.ensure_child() {
            Err(RuntimeError::OutOfTime { .. }) => return Ok((Outcome::OutOfTime, None)),
            r => r?,
        }
        let (timeout, cut) = self.capped(self.measure_timeout(plan));
        if let Some(i) = self.preloaded.iter().position(|m| *m == plan.module) {
            self.preloaded.remove(i);
        }
        match self.exchange(&line, timeout) {
            Reply::TimedOut if cut => {
                self.abandon_child();
                Ok((Outcome::OutOfTime, None))
            }
            Reply::Response(Response::Measured { outcome, stages }) => {
                if outcome.lost_context() {
                    // The worker exits after a fault; collect it now.
                    self.discard_child(Duration::from_secs(2));
                }
                Ok((outcome, stages))
            }
            Reply::TimedOut => {
                self.discard_child(Duration::ZERO);
                Ok((Outcome::Timeout, None))
            }
            Reply::Broken(why) => {
                let how = self.discard_child(Duration::from_secs(2));
                Ok((Outcome::Fault(format!("{why}: {how}")), None))
            }
            Reply::Response(other) => Err(self.unexpected(other)),
        }
    }

    /// Tells the worker which candidates come next, in measuring order, so that it loads
    /// (JIT-compiles) their modules on its loader threads while it times the current one.
    /// Returns how many loads it queued. Nothing here is a candidate's outcome: a worker that
    /// does not answer is replaced at the next measurement, and each `measure` still sends
    /// its plan, so a module that was not preloaded is loaded then.
    pub fn preload(&mut self, plans: &[&LaunchPlan]) -> Result<usize, RuntimeError> {
        if self.problem.is_none() {
            return Err(RuntimeError::NoProblem);
        }
        let modules: Vec<crate::abi::Module> = plans
            .iter()
            .filter(|p| p.module.ptx().is_some())
            .map(|p| p.module.clone())
            .collect();
        if modules.is_empty() {
            return Ok(0);
        }
        self.ensure_child()?;
        let queued = self.send_preload(&modules);
        self.preloaded.extend(modules);
        Ok(queued)
    }

    /// Sends `Preload` for `modules` to the live child; 0 when it does not take them.
    fn send_preload(&mut self, modules: &[crate::abi::Module]) -> usize {
        let Ok(line) = encode(&Request::Preload {
            modules: modules.to_vec(),
        }) else {
            return 0;
        };
        if self.past_deadline() {
            return 0;
        }
        let (timeout, cut) = self.capped(self.options.measure_timeout);
        match self.exchange(&line, timeout) {
            Reply::TimedOut if cut => {
                self.abandon_child();
                0
            }
            Reply::Response(Response::Preloading { queued }) => queued,
            // An older worker answers with an error: it loads when measuring, as before.
            Reply::Response(Response::Error { fatal: false, .. }) => 0,
            Reply::Response(other) => {
                let _ = self.unexpected(other);
                0
            }
            Reply::TimedOut => {
                self.discard_child(Duration::ZERO);
                0
            }
            Reply::Broken(_) => {
                self.discard_child(Duration::from_secs(2));
                0
            }
        }
    }

    /// Loads a plan in the worker and reports its kernels' registers, spills and limits.
    pub fn resources(&mut self, plan: &LaunchPlan) -> Result<Vec<KernelResources>, RuntimeError> {
        let line = encode(&Request::Resources { plan: plan.clone() })?;
        self.ensure_child()?;
        match self.exchange(&line, self.measure_timeout(plan)) {
            Reply::Response(Response::Resources { kernels }) => Ok(kernels),
            Reply::TimedOut => {
                self.discard_child(Duration::ZERO);
                Err(RuntimeError::Worker("loading the plan timed out".into()))
            }
            Reply::Broken(why) => {
                let how = self.discard_child(Duration::from_secs(2));
                Err(RuntimeError::Worker(format!("{why}: {how}")))
            }
            Reply::Response(other) => Err(self.unexpected(other)),
        }
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
    fn measure_timeout(&self, plan: &LaunchPlan) -> Duration {
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

    /// Exchanges with the live child; `ensure_child` must have run.
    fn exchange(&mut self, line: &str, timeout: Duration) -> Reply {
        match self.child.as_mut() {
            Some(c) => c.exchange(line, timeout),
            None => Reply::Broken("no worker running".into()),
        }
    }

    /// Sends `SetProblem` and waits for the reference time.
    fn send_problem(&mut self, line: &str) -> Result<f64, RuntimeError> {
        let what = "setting up the problem (reference run)";
        if self.past_deadline() {
            return Err(RuntimeError::OutOfTime { what });
        }
        let (timeout, cut) = self.capped(self.options.problem_timeout);
        match self.exchange(line, timeout) {
            Reply::TimedOut if cut => {
                self.abandon_child();
                Err(RuntimeError::OutOfTime { what })
            }
            Reply::Response(Response::ProblemSet { reference_us }) => Ok(reference_us),
            Reply::TimedOut => {
                self.discard_child(Duration::ZERO);
                Err(RuntimeError::Worker(format!(
                    "setting up the problem took longer than {:?}",
                    self.options.problem_timeout
                )))
            }
            Reply::Broken(why) => {
                let how = self.discard_child(Duration::from_secs(2));
                Err(RuntimeError::Worker(format!(
                    "died while setting up the problem ({why}): {how}"
                )))
            }
            Reply::Response(other) => Err(self.unexpected(other)),
        }
    }

    /// Turns an `Error` (or an out-of-place) response into an error, dropping the child if it
    /// said it is exiting.
    fn unexpected(&mut self, r: Response) -> RuntimeError {
        match r {
            Response::Error { message, fatal } => {
                if fatal {
                    self.discard_child(Duration::from_secs(2));
                }
                RuntimeError::Worker(message)
            }
            other => {
                self.discard_child(Duration::ZERO);
                RuntimeError::Worker(format!("out-of-place response {other:?}"))
            }
        }
    }

    /// Starts a fresh child if there is none, and gives it the current problem.
    fn ensure_child(&mut self) -> Result<(), RuntimeError> {
        if self.child.is_some() {
            return Ok(());
        }
        let what = "starting the worker";
        if let Some(reaper) = self.reaping.take() {
            // The child killed at a deadline may still hold the GPU: give it a moment to go.
            let until = Instant::now() + self.capped(REAP_WAIT).0;
            while !reaper.is_finished() && Instant::now() < until {
                thread::sleep(Duration::from_millis(5));
            }
        }
        let (start_timeout, cut) = self.capped(self.options.start_timeout);
        if cut && start_timeout.is_zero() {
            return Err(RuntimeError::OutOfTime { what });
        }
        let options = WorkerOptions {
            start_timeout,
            ..self.options.clone()
        };
        let (child, _) = match start(&self.exe, &self.args, &options) {
            Err(_) if cut && self.past_deadline() => return Err(RuntimeError::OutOfTime { what }),
            r => r?,
        };
        self.child = Some(child);
        self.restarts += 1;
        if let Some(line) = self.problem.clone() {
            self.send_problem(&line)?;
            if !self.preloaded.is_empty() {
                let modules = self.preloaded.clone();
                self.send_preload(&modules);
            }
        }
        Ok(())
    }

    /// Kills the child at a deadline without waiting for it (see [`Child::abandon`]).
    fn abandon_child(&mut self) {
        if let Some(c) = self.child.take() {
            self.reaping = Some(c.abandon());
        }
    }

    /// Ends the child, waiting up to `grace` for it to exit by itself; says how it ended.
    fn discard_child(&mut self, grace: Duration) -> String {
        match self.child.take() {
            Some(c) => c.end(grace),
            None => "no worker running".into(),
        }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        if let Some(c) = self.child.as_mut() {
            if let (Some(stdin), Ok(line)) = (c.stdin.as_mut(), encode(&Request::Shutdown)) {
                let _ = writeln!(stdin, "{line}");
            }
        }
        self.discard_child(Duration::from_secs(2));
    }
}

fn encode(r: &Request) -> Result<String, RuntimeError> {
    serde_json::to_string(r)
        .map_err(|e| RuntimeError::Worker(format!("cannot encode request: {e}")))
}

/// Starts a child and waits for it to report its device.
fn start(
    exe: &PathBuf,
    args: &[String],
    options: &WorkerOptions,
) -> Result<(Child, DeviceInfo), RuntimeError> {
    let mut child = Child::start(exe, args, &options.env)?;
    match child.receive(options.start_timeout) {
        Reply::Response(Response::Ready { device }) => Ok((child, device)),
        Reply::Response(Response::Error { message, .. }) => {
            child.end(Duration::from_secs(2));
            // Keep "no driver" recognisable: the CLI maps it to "no usable GPU".
            Err(if message == RuntimeError::NoDriver.to_string() {
                RuntimeError::NoDriver
            } else if message.starts_with("HIP runtime not found") {
                RuntimeError::NoHipRuntime(message)
            } else if message.starts_with("the HIP runtime (") {
                RuntimeError::NoGpu(message)
            } else {
                RuntimeError::Worker(message)
            })
        }
        Reply::Response(other) => {
            child.end(Duration::ZERO);
            Err(RuntimeError::Worker(format!(
                "unexpected first response {other:?}"
            )))
        }
        Reply::TimedOut => {
            let how = child.end(Duration::ZERO);
            Err(RuntimeError::Worker(format!(
                "not ready within {:?}: {how}",
                options.start_timeout
            )))
        }
        Reply::Broken(why) => {
            let how = child.end(Duration::from_secs(2));
            Err(RuntimeError::Worker(format!(
                "exited before it was ready ({why}): {how}"
            )))
        }
    }
}

#[cfg(test)]
mod tests;
