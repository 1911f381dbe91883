//! Checking and timing one candidate on one CUDA device, in this process.
//!
//! A [`Measurer`] holds the context, one stream and the tensors of the current problem. Per
//! problem: the two read tensors get fresh random values (seeded, so a restarted worker makes the
//! same data), and the reference plan runs once to give the reference output. Per candidate: the
//! written tensor and the workspace are poisoned (all bytes 0xFF, a NaN), the plan runs once and is
//! compared with the reference in f64; only a correct candidate is timed, with device events
//! around each run and the L2 cache swept clean between runs, outside the events
//! ([`L2Sweep`]: cold, with no dirty lines to write back).
//!
//! A kernel that faults leaves the context unusable; the measurer then refuses further work with
//! [`RuntimeError::ContextLost`]. The context is the device's primary context, so the damage is
//! process-wide (a new `Measurer` in the same process fails too, as seen on the H200): run it
//! inside a [`Worker`](super::Worker) to survive faults.

use super::cuda::{alloc, memset, LoadedPlan, Module, PlanError};
use super::device::{cuda_device, init_driver, DeviceInfo};
use super::error::{describe, is_sticky, RuntimeError};
use super::gpu_compare::GpuCheck;
use super::host::{self, compare, POISON};
use super::l2_sweep::L2Sweep;
use super::outcome::{ColdCache, MeasureStages, Outcome, Timing};
use super::plan::{KernelResources, LaunchPlan};
use super::preload::{threads_from_env, Preloader};
use super::ptxas::{Image, Ptxas};
use crate::abi::ArgRole;
use crate::problem::{ConvProblem, Tensor};
use crate::reference::random_tensor_par;
use cudarc::driver::{
    result::DriverError, sys::CUevent_flags, CudaContext, CudaEvent, CudaSlice, CudaStream,
    DevicePtr,
};
use rand::{rngs::StdRng, SeedableRng};
use std::sync::Arc;
use std::time::Instant;

/// The tensors and reference of the problem being tuned.
struct ProblemState {
    problem: ConvProblem,
    /// Input, filter, output, in [`Tensor::ALL`] order.
    tensors: [CudaSlice<u8>; 3],
    /// f64 values: the uploaded data for read tensors, the reference output for the written one.
    host: [Vec<f64>; 3],
    /// Grown on demand to the largest workspace a plan asked for.
    workspace: Option<CudaSlice<u8>>,
    /// The output check on the GPU, once the reference is accepted and the kernel has given
    /// the host's answers on known outputs (`None`: the CPU compares the copied-back output).
    gpu_check: Option<GpuCheck>,
}

/// What went wrong in a run, before it becomes an [`Outcome`] or an error.
enum RunError {
    /// The candidate is at fault; the outcome says how.
    Candidate(Outcome),
    /// The machinery failed.
    Runtime(RuntimeError),
}

impl From<RuntimeError> for RunError {
    fn from(e: RuntimeError) -> Self {
        RunError::Runtime(e)
    }
}

/// The cache state this measurer times in: the L2 swept clean ([`L2Sweep`]).
pub(crate) const COLD_CACHE: ColdCache = ColdCache::Clean;

/// Checks and times candidate plans on one device.
pub struct Measurer {
    device: DeviceInfo,
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    /// Reads 2 × L2 bytes between timed runs, so no run starts with a warm (or dirty) cache.
    sweep: L2Sweep,
    /// Timing event pairs, created as needed and reused.
    events: Vec<(CudaEvent, CudaEvent)>,
    state: Option<ProblemState>,
    /// Set once a kernel faulted: the reason.
    lost: Option<String>,
    /// Assembles the modules of the candidates announced next while this one is timed.
    preloader: Preloader<Image>,
}

impl Measurer {
    /// Opens device `ordinal`: context, stream and the L2 sweep.
    pub fn new(ordinal: usize) -> Result<Measurer, RuntimeError> {
        init_driver()?;
        let device = cuda_device(ordinal)?;
        let ctx = CudaContext::new(ordinal).map_err(|e| {
            RuntimeError::driver("cuDevicePrimaryCtxRetain", format!("device {ordinal}"), e)
        })?;
        // SAFETY: one stream does all the work, so cudarc's cross-stream event tracking (extra
        // events recorded around every pointer use) is not needed, and would cost time per launch.
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx
            .new_stream()
            .map_err(|e| RuntimeError::driver("cuStreamCreate", "", e))?;
        let sweep_bytes = (2 * device.l2_bytes).max(1 << 20) as usize;
        let sweep = L2Sweep::new(&ctx, &stream, sweep_bytes)?;
        let ptxas = Ptxas::find();
        let threads = threads_from_env(ptxas.is_some());
        let arch = device.arch.clone();
        let preloader = Preloader::new(
            threads,
            Arc::new(move |ptx: &str| Ok(Ptxas::image(ptxas.as_ref(), ptx, &arch))),
        );
        Ok(Measurer {
            device,
            ctx,
            stream,
            sweep,
            events: Vec::new(),
            state: None,
            lost: None,
            preloader,
        })
    }

    /// Starts loading the PTX modules of the candidates that will be measured next, in that
    /// order, on the loader threads; returns how many loads were queued. A module that fails
    /// to load fails its candidate when it is measured, as if loaded then.
    pub fn preload(&mut self, modules: &[crate::abi::Module]) -> usize {
        if self.lost.is_some() {
            return 0;
        }
        self.preloader
            .preload(modules.iter().filter_map(|m| m.ptx().map(str::to_string)))
    }

    /// The device this measurer runs on.
    pub fn device(&self) -> &DeviceInfo {
        &self.device
    }

    /// Prepares a problem: allocates its tensors, fills the read ones with seeded random values and
    /// runs `reference` to get the output every candidate is compared with (checked against the
    /// CPU's f64 direct convolution when the problem is small). Returns the reference plan's median
    /// time in µs (a scale for time limits).
    pub fn set_problem(
        &mut self,
        problem: &ConvProblem,
        reference: &LaunchPlan,
        seed: u64,
    ) -> Result<f64, RuntimeError> {
        self.check_alive()?;
        self.preloader.clear(); // the previous problem's candidates will not come
        self.state = None; // free the previous problem's memory first
        let dtype = problem.dtype();
        let written = problem.direction().written();
        let mut rng = StdRng::seed_from_u64(seed);
        let mut host: [Vec<f64>; 3] = Default::default();
        let mut tensors = Vec::with_capacity(3);
        for (i, t) in Tensor::ALL.into_iter().enumerate() {
            let elems = problem.tensor_elems(t) as usize;
            let mut buf = alloc(&self.stream, elems * dtype.bytes() as usize, t.name())?;
            if t != written {
                let values = random_tensor_par(problem, t, &mut rng);
                self.stream
                    .memcpy_htod(&host::encode(dtype, &values), &mut buf)
                    .map_err(|e| RuntimeError::driver("cuMemcpyHtoDAsync", t.name(), e))?;
                host[i] = values;
            }
            tensors.push(buf);
        }
        let tensors: [CudaSlice<u8>; 3] = match tensors.try_into() {
            Ok(t) => t,
            Err(_) => unreachable!("three tensors were pushed"),
        };
        self.state = Some(ProblemState {
            problem: *problem,
            tensors,
            host,
            workspace: None,
            gpu_check: None,
        });
        let result = self.run_reference(problem, reference);
        if result.is_err() {
            self.state = None; // never measure against a reference that failed its checks
        }
        result
    }

    /// Runs the reference plan on the freshly filled tensors, checks its output (fully written,
    /// finite, and equal to the CPU's for small problems), keeps it, and times it.
    fn run_reference(
        &mut self,
        problem: &ConvProblem,
        reference: &LaunchPlan,
    ) -> Result<f64, RuntimeError> {
        let reference_failed = |reason: String| RuntimeError::Reference {
            problem: problem.key(),
            reason,
        };
        let (loaded, out) = match self.check_run(reference, &mut MeasureStages::default(), true) {
            Ok(r) => r,
            Err(RunError::Candidate(o)) => return Err(reference_failed(o.to_string())),
            Err(RunError::Runtime(e)) => return Err(e),
        };
        if let (Some(s), Some(out)) = (self.state.as_mut(), out) {
            host::accept_reference(problem, &out, &mut s.host).map_err(reference_failed)?;
            let w = problem.direction().written() as usize;
            let check = GpuCheck::new(
                &self.ctx,
                &self.stream,
                problem.dtype(),
                &s.host[w],
                &s.tensors[w],
            );
            s.gpu_check = check
                .map_err(|why| {
                    static SAID: std::sync::Once = std::sync::Once::new();
                    SAID.call_once(|| {
                        eprintln!("convtune: outputs are checked on the CPU (the GPU check is off: {why})")
                    });
                })
                .ok();
        }
        match self.timed_runs(&loaded, host::REFERENCE_RUNS) {
            Ok(times) => Ok(host::reference_us(&times)),
            Err(RunError::Candidate(o)) => Err(reference_failed(o.to_string())),
            Err(RunError::Runtime(e)) => Err(e),
        }
    }

    /// ‖ref − cpu‖ / ‖cpu‖ of the current reference output against
    /// [`direct_conv`](crate::reference::direct_conv) in f64. `set_problem` checks this itself for
    /// problems small enough for the CPU; a test may call it on larger ones.
    pub fn reference_cpu_error(&self) -> Option<f64> {
        let s = self.state.as_ref()?;
        host::cpu_error(&s.problem, &s.host)
    }

    /// f64 values of a tensor of the current problem: what was uploaded for a read tensor, the
    /// reference output for the written one. Lets a test check the reference kernel on the CPU.
    pub fn host_tensor(&self, t: Tensor) -> Option<&[f64]> {
        let s = self.state.as_ref()?;
        let v = &s.host[t as usize];
        (!v.is_empty()).then_some(v.as_slice())
    }

    /// Checks a candidate against the reference and, if it is right, times it.
    /// `Err` means the measuring machinery failed, not the candidate.
    pub fn measure(&mut self, plan: &LaunchPlan) -> Result<Outcome, RuntimeError> {
        self.measure_with(plan, None).map(|(o, _)| o)
    }

    /// [`Measurer::measure`] with adaptive timing, and where the time went. With a `screen_us`,
    /// a candidate whose short first measurement (the warm-up runs) is slower than that is
    /// reported with its short time and marked `screened`: it cannot beat the best so far, so the
    /// full ≥ 1 ms median is not worth its time.
    pub fn measure_with(
        &mut self,
        plan: &LaunchPlan,
        screen_us: Option<f64>,
    ) -> Result<(Outcome, MeasureStages), RuntimeError> {
        let mut stages = MeasureStages::default();
        self.check_alive()?;
        let problem = self.ready_problem()?;
        let dtype = problem.dtype();
        let on_gpu = self.checks_on_gpu();
        let (loaded, out) = match self.check_run(plan, &mut stages, !on_gpu) {
            Ok(r) => r,
            Err(RunError::Candidate(o)) => return Ok((o, stages)),
            Err(RunError::Runtime(e)) => return Err(e),
        };
        let started = Instant::now();
        let s = self.state.as_ref().ok_or(RuntimeError::NoProblem)?;
        let w = problem.direction().written() as usize;
        let checked = match (&s.gpu_check, out) {
            (Some(check), _) => check.compare(&self.stream, &s.tensors[w]),
            (None, Some(out)) => Ok(compare(dtype, &out, &s.host[w])),
            (None, None) => unreachable!("the output is copied back when the CPU checks it"),
        };
        let c = match checked {
            Ok(c) => c,
            Err(e) => match self.fault("checking the output".into(), e) {
                RunError::Candidate(o) => return Ok((o, stages)),
                RunError::Runtime(e) => return Err(e),
            },
        };
        stages.verify_s += started.elapsed().as_secs_f64();
        if !c.passes(problem.tolerance()) {
            return Ok((
                Outcome::WrongResult {
                    rel_err: c.rel_err,
                    unwritten: c.unwritten,
                    non_finite: c.non_finite,
                },
                stages,
            ));
        }
        let started = Instant::now();
        let timed = self.time(&loaded, &problem, screen_us);
        stages.time_s = started.elapsed().as_secs_f64();
        match timed {
            Ok(mut t) => {
                t.rel_err = c.rel_err;
                Ok((Outcome::Ok(t), stages))
            }
            Err(RunError::Candidate(o)) => Ok((o, stages)),
            Err(RunError::Runtime(e)) => Err(e),
        }
    }

    /// Loads a plan and reports what the driver made of each kernel (registers, spills, limits),
    /// without running it.
    pub fn resources(&mut self, plan: &LaunchPlan) -> Result<Vec<KernelResources>, RuntimeError> {
        self.check_alive()?;
        match LoadedPlan::load(&self.ctx, plan) {
            Ok(p) => Ok(p.resources),
            Err(PlanError::Load(m) | PlanError::Launch(m)) => Err(RuntimeError::Module(m)),
        }
    }

    /// Whether candidates of the current problem are checked on the GPU ([`GpuCheck`]) rather
    /// than copied back and compared on the CPU.
    pub fn checks_on_gpu(&self) -> bool {
        self.state.as_ref().is_some_and(|s| s.gpu_check.is_some())
    }

    /// Whether a fault has made this measurer unusable, and why.
    pub fn lost(&self) -> Option<&str> {
        self.lost.as_deref()
    }

    /// The current problem, once its reference output exists.
    fn ready_problem(&self) -> Result<ConvProblem, RuntimeError> {
        match &self.state {
            Some(s) if !s.host[s.problem.direction().written() as usize].is_empty() => {
                Ok(s.problem)
            }
            _ => Err(RuntimeError::NoProblem),
        }
    }

    fn check_alive(&self) -> Result<(), RuntimeError> {
        match &self.lost {
            Some(why) => Err(RuntimeError::ContextLost(why.clone())),
            None => Ok(()),
        }
    }

    /// Records a context-killing error and turns it into a `Fault`.
    fn fault(&mut self, what: String, e: DriverError) -> RunError {
        let message = format!("{what}: {}", describe(e));
        self.lost = Some(message.clone());
        RunError::Candidate(Outcome::Fault(message))
    }

    /// Loads and prepares `plan`, poisons its outputs, runs it once and returns the written tensor.
    /// `stages` gets the load and the checked run's times.
    fn check_run(
        &mut self,
        plan: &LaunchPlan,
        stages: &mut MeasureStages,
        copy_back: bool,
    ) -> Result<(LoadedPlan, Option<Vec<u8>>), RunError> {
        let started = Instant::now();
        let (preloader, ctx) = (&self.preloader, &self.ctx);
        let loaded = LoadedPlan::load_with(plan, |ptx| {
            let taken = preloader.take(ptx);
            let image = taken.module?;
            let started = Instant::now();
            let module = match &*image {
                Image::Cubin(done) => match done.fatal_warning() {
                    Some(w) => Err(format!("ptxas: {}", w.trim())),
                    None => Module::load_cubin(ctx, &done.cubin),
                },
                Image::Jit(why) => {
                    if let Some(why) = why {
                        static SAID: std::sync::Once = std::sync::Once::new();
                        SAID.call_once(|| {
                            eprintln!("convtune: ptxas refused a module, the driver JITs it: {why}")
                        });
                    }
                    Module::load(ctx, ptx)
                }
            };
            // The assembler's time (on a loader thread, or here) and the driver's.
            stages.jit_s = taken.jit_s + started.elapsed().as_secs_f64();
            module.map(Arc::new)
        })
        .and_then(|l| {
            l.prepare(self.device.max_shared_per_block_optin)
                .map(|()| l)
        })
        .map_err(|e| match e {
            PlanError::Load(m) => RunError::Candidate(Outcome::LoadFailed(m)),
            PlanError::Launch(m) => RunError::Candidate(Outcome::LaunchFailed(m)),
        });
        stages.load_s = started.elapsed().as_secs_f64();
        let loaded = loaded?;
        let started = Instant::now();
        let out = self.checked_run(&loaded, plan, copy_back)?;
        stages.verify_s = started.elapsed().as_secs_f64();
        Ok((loaded, out))
    }

    /// Poisons the written tensor and the workspace, runs the loaded plan once, and (with
    /// `copy_back`) copies the written tensor back.
    fn checked_run(
        &mut self,
        loaded: &LoadedPlan,
        plan: &LaunchPlan,
        copy_back: bool,
    ) -> Result<Option<Vec<u8>>, RunError> {
        self.ensure_workspace(plan.workspace_bytes)?;
        let (written, ws_len) = {
            let s = self.state.as_ref().ok_or(RuntimeError::NoProblem)?;
            (
                s.problem.direction().written() as usize,
                plan.workspace_bytes as usize,
            )
        };
        let stream = self.stream.clone();
        let kept = plan.kept_zero.min(ws_len as u64) as usize;
        let poison = {
            let s = self.state.as_ref().ok_or(RuntimeError::NoProblem)?;
            let out = &s.tensors[written];
            let mut r = memset(&stream, out, out.len(), POISON);
            if let (Ok(()), Some(ws)) = (&r, &s.workspace) {
                r = memset(&stream, ws, ws_len, POISON);
                // The kept-zero region as a caller keeps it: clear.
                if r.is_ok() && kept > 0 {
                    r = memset(&stream, ws, kept, 0);
                }
            }
            r
        };
        if let Err(e) = poison {
            return Err(self.fault("poisoning the output".into(), e));
        }
        self.run(loaded)?;
        if let Err(e) = self.stream.synchronize() {
            return Err(self.fault("running the plan".into(), e));
        }
        if kept > 0 {
            let region = {
                let s = self.state.as_ref().ok_or(RuntimeError::NoProblem)?;
                let ws = s.workspace.as_ref().ok_or(RuntimeError::NoProblem)?;
                self.stream.clone_dtoh(&ws.slice(..kept))
            };
            match region.and_then(|v| self.stream.synchronize().map(|()| v)) {
                Ok(bytes) => host::kept_zero_verdict(&bytes).map_err(RunError::Candidate)?,
                Err(e) => return Err(self.fault("copying the workspace back".into(), e)),
            }
        }
        if !copy_back {
            return Ok(None);
        }
        let copied = {
            let s = self.state.as_ref().ok_or(RuntimeError::NoProblem)?;
            self.stream.clone_dtoh(&s.tensors[written])
        };
        match copied.and_then(|v| self.stream.synchronize().map(|()| v)) {
            Ok(out) => Ok(Some(out)),
            Err(e) => Err(self.fault("copying the output back".into(), e)),
        }
    }

    /// Enqueues one run of the plan. A refused launch is `LaunchFailed` (after the launches
    /// already queued finish) unless the error is sticky, which makes it a `Fault`.
    fn run(&mut self, loaded: &LoadedPlan) -> Result<(), RunError> {
        let pointers = self.pointers()?;
        if let Err((i, e)) = loaded.launch(&self.stream, &pointers) {
            let what = loaded.describe_launch(i);
            if is_sticky(e) {
                return Err(self.fault(what, e));
            }
            if let Err(e2) = self.stream.synchronize() {
                return Err(self.fault(what, e2));
            }
            return Err(RunError::Candidate(Outcome::LaunchFailed(format!(
                "{what}: {}",
                describe(e)
            ))));
        }
        Ok(())
    }

    /// The device pointer of each argument role: a tensor's buffer, or the workspace (null
    /// when no plan has asked for one).
    fn pointers(&self) -> Result<impl Fn(ArgRole) -> u64, RuntimeError> {
        let s = self.state.as_ref().ok_or(RuntimeError::NoProblem)?;
        let ptr = |b: &CudaSlice<u8>| b.device_ptr(&self.stream).0;
        let tensors = Tensor::ALL.map(|t| ptr(&s.tensors[t as usize]));
        let workspace = s.workspace.as_ref().map(ptr).unwrap_or(0);
        Ok(move |role: ArgRole| match role.tensor() {
            Some(t) => tensors[t as usize],
            None => workspace,
        })
    }

    /// Makes the workspace at least `bytes` long. Failing to allocate it is the candidate's
    /// fault (it asked for too much), so it is reported as a launch failure.
    fn ensure_workspace(&mut self, bytes: u64) -> Result<(), RunError> {
        let s = self.state.as_mut().ok_or(RuntimeError::NoProblem)?;
        if bytes == 0
            || s.workspace
                .as_ref()
                .is_some_and(|w| w.len() as u64 >= bytes)
        {
            return Ok(());
        }
        s.workspace = None;
        match alloc(&self.stream, bytes as usize, "workspace") {
            Ok(w) => {
                s.workspace = Some(w);
                Ok(())
            }
            Err(e) => Err(RunError::Candidate(Outcome::LaunchFailed(e.to_string()))),
        }
    }

    /// Warm-up runs, then enough event-timed runs to cover a millisecond, with the L2 swept
    /// before each run outside the events. A warm-up median slower than `screen_us` ends it
    /// there: the short time is the result, marked `screened`.
    fn time(
        &mut self,
        loaded: &LoadedPlan,
        problem: &ConvProblem,
        screen_us: Option<f64>,
    ) -> Result<Timing, RunError> {
        let warm = self.timed_runs(loaded, host::WARMUP_RUNS as usize)?;
        let estimate = host::median_min(&warm).map_or(0.0, |(m, _)| m);
        let screened = host::screened_out(estimate, screen_us);
        let times = if screened {
            warm
        } else {
            self.timed_runs(loaded, host::run_count(estimate) as usize)?
        };
        let (median_us, min_us) = host::median_min(&times).unwrap_or((0.0, 0.0));
        Ok(Timing {
            median_us,
            min_us,
            screened,
            runs: times.len() as u32,
            tflops: if median_us > 0.0 {
                problem.flops() / (median_us * 1e-6) / 1e12
            } else {
                0.0
            },
            rel_err: 0.0,
            resources: loaded.resources.clone(),
            cache: COLD_CACHE,
        })
    }

    /// `n` runs, each after a sweep of the L2 and bracketed by events; returns their times in µs.
    fn timed_runs(&mut self, loaded: &LoadedPlan, n: usize) -> Result<Vec<f64>, RunError> {
        while self.events.len() < n {
            let ev = |ctx: &Arc<CudaContext>| {
                ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
                    .map_err(|e| RuntimeError::driver("cuEventCreate", "", e))
            };
            let pair = (ev(&self.ctx)?, ev(&self.ctx)?);
            self.events.push(pair);
        }
        for i in 0..n {
            let swept = self.sweep.run(&self.stream);
            let started = swept.and_then(|()| self.events[i].0.record(&self.stream));
            if let Err(e) = started {
                return Err(self.fault("sweeping the L2 before a timed run".into(), e));
            }
            self.run(loaded)?;
            if let Err(e) = self.events[i].1.record(&self.stream) {
                return Err(self.fault("recording a timing event".into(), e));
            }
        }
        let mut times = Vec::with_capacity(n);
        for i in 0..n {
            match self.events[i].0.elapsed_ms(&self.events[i].1) {
                Ok(ms) => times.push(ms as f64 * 1000.0),
                Err(e) => return Err(self.fault("timed run".into(), e)),
            }
        }
        Ok(times)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_driver_is_an_error_not_a_panic() {
        // SAFETY: dlopen probe only.
        if unsafe { cudarc::driver::sys::is_culib_present() } {
            return; // covered by the GPU tests on a machine with a driver
        }
        match Measurer::new(0) {
            Err(RuntimeError::NoDriver) => {}
            Err(e) => panic!("expected NoDriver, got {e}"),
            Ok(_) => panic!("a measurer without a driver"),
        }
    }
}
