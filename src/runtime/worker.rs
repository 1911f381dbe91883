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

mod child;
mod limits;
#[cfg(test)]
mod tests;

pub use limits::WorkerOptions;

use super::device::DeviceInfo;
use super::error::RuntimeError;
use super::outcome::{MeasureStages, Outcome};
use super::plan::{KernelResources, LaunchPlan};
use super::protocol::{Request, Response};
use crate::problem::ConvProblem;
use child::{start, Child, Reply};
use std::io::Write;
use std::path::PathBuf;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

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
