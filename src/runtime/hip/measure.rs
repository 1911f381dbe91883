//! Checking and timing one candidate on one AMD device, in this process: the HIP twin of
//! [`Measurer`](crate::runtime::Measurer), with the same rules (seeded inputs, poisoned outputs
//! and workspace, comparison with the reference in f64, event timing over ≥ 1 ms with the
//! last-level cache flushed between runs outside the events).
//!
//! Unlike the CUDA measurer, which since session 14 sweeps its L2 with a read kernel
//! ([`l2_sweep`](crate::runtime)), this flush is still a memset: it leaves the cache dirty, and
//! on the H200 the write-back inflated memory-bound timings by up to 20 µs. An AMDGPU sweep
//! kernel needs a device to be proven on, which this project has not had; until then AMD
//! timings of memory-bound candidates carry that write-back.
//!
//! AMD specifics: the module is a linked code object loaded with `hipModuleLoadData`; before a
//! kernel is launched, its argument list in the code object's metadata is checked against the
//! launch ABI ([`crate::abi`]), because HIP packs the kernarg segment by that metadata; dynamic
//! LDS plus the kernel's static LDS must fit the device's per-workgroup limit (no opt-in on
//! AMD); and the flush covers the Infinity Cache where there is one (gfx942). A memory fault
//! usually kills the whole process on AMD; when it does not, the measurer refuses further work
//! ([`RuntimeError::ContextLost`]) and the worker exits, as on CUDA.

use super::api::{HipApi, HipError};
use super::{device, hip_err, HipDevice};
use crate::abi::{device_pointers, ArgRole};
use crate::codegen::{read_code_object, AmdResources};
use crate::problem::{ConvProblem, Tensor};
use crate::reference::random_tensor_par;
use crate::runtime::error::RuntimeError;
use crate::runtime::host::{self, compare, POISON};
use crate::runtime::outcome::{ColdCache, Outcome, Timing};
use crate::runtime::plan::{KernelResources, LaunchPlan};
use rand::{rngs::StdRng, SeedableRng};

/// The cache state this measurer times in: flushed by a memset (see the module's doc).
pub(crate) const COLD_CACHE: ColdCache = ColdCache::Dirty;

/// Bytes of last-level cache beyond L2 that HIP does not report: the MI300X's 256 MB AMD
/// Infinity Cache (AMD Instinct MI300X data sheet). The flush covers twice it.
fn infinity_cache_bytes(arch: &str) -> u64 {
    match arch {
        "gfx940" | "gfx941" | "gfx942" => 256 << 20,
        _ => 0,
    }
}

/// A device allocation, freed on drop by its owner (see [`HipMeasurer::free_all`]).
#[derive(Debug, Clone, Copy)]
struct Buffer {
    ptr: u64,
    bytes: usize,
}

struct ProblemState {
    problem: ConvProblem,
    tensors: [Buffer; 3],
    host: [Vec<f64>; 3],
    workspace: Option<Buffer>,
}

/// A loaded plan: the module, one function per launch, and the metadata it was checked with.
struct Loaded {
    module: u64,
    functions: Vec<u64>,
    resources: Vec<KernelResources>,
}

enum RunError {
    Candidate(Outcome),
    Runtime(RuntimeError),
}

impl From<RuntimeError> for RunError {
    fn from(e: RuntimeError) -> Self {
        RunError::Runtime(e)
    }
}

/// Checks and times candidate plans on one AMD device.
pub struct HipMeasurer<A: HipApi> {
    api: A,
    device: HipDevice,
    stream: u64,
    flush: Buffer,
    events: Vec<(u64, u64)>,
    state: Option<ProblemState>,
    lost: Option<String>,
}

impl<A: HipApi> HipMeasurer<A> {
    /// Opens device `ordinal` through `api`: its facts, a stream and the cache-flush buffer.
    pub fn new(api: A, ordinal: usize) -> Result<Self, RuntimeError> {
        let device = device(&api, ordinal as i32)?;
        api.set_device(ordinal as i32)
            .map_err(|e| hip_err("hipSetDevice", e))?;
        let stream = api
            .stream_create()
            .map_err(|e| hip_err("hipStreamCreate", e))?;
        let flush_bytes =
            (2 * device.l2_bytes.max(infinity_cache_bytes(&device.arch))).max(1 << 20) as usize;
        let flush = Buffer {
            ptr: api
                .malloc(flush_bytes)
                .map_err(|e| hip_err("hipMalloc", e))?,
            bytes: flush_bytes,
        };
        Ok(HipMeasurer {
            api,
            device,
            stream,
            flush,
            events: Vec::new(),
            state: None,
            lost: None,
        })
    }

    /// The device this measurer runs on.
    pub fn device(&self) -> &HipDevice {
        &self.device
    }

    /// The calls it makes (tests inspect their stand-in through this).
    pub fn api(&self) -> &A {
        &self.api
    }

    /// Whether a fault has made this measurer unusable, and why.
    pub fn lost(&self) -> Option<&str> {
        self.lost.as_deref()
    }

    /// Prepares a problem (see [`Measurer::set_problem`](crate::runtime::Measurer::set_problem));
    /// returns the reference plan's median time in µs.
    pub fn set_problem(
        &mut self,
        problem: &ConvProblem,
        reference: &LaunchPlan,
        seed: u64,
    ) -> Result<f64, RuntimeError> {
        self.check_alive()?;
        self.drop_problem();
        let dtype = problem.dtype();
        let written = problem.direction().written();
        let mut rng = StdRng::seed_from_u64(seed);
        let mut host: [Vec<f64>; 3] = Default::default();
        let mut tensors = [Buffer { ptr: 0, bytes: 0 }; 3];
        for (i, t) in Tensor::ALL.into_iter().enumerate() {
            let bytes = problem.tensor_elems(t) as usize * dtype.bytes() as usize;
            let ptr = self.api.malloc(bytes).map_err(|e| {
                self.free_buffers(&tensors);
                hip_err("hipMalloc", e)
            })?;
            tensors[i] = Buffer { ptr, bytes };
            if t != written {
                let values = random_tensor_par(problem, t, &mut rng);
                if let Err(e) = self.api.copy_to_device(ptr, &host::encode(dtype, &values)) {
                    self.free_buffers(&tensors);
                    return Err(hip_err("hipMemcpyHtoD", e));
                }
                host[i] = values;
            }
        }
        self.state = Some(ProblemState {
            problem: *problem,
            tensors,
            host,
            workspace: None,
        });
        let result = self.run_reference(problem, reference);
        if result.is_err() {
            self.drop_problem();
        }
        result
    }

    fn run_reference(
        &mut self,
        problem: &ConvProblem,
        reference: &LaunchPlan,
    ) -> Result<f64, RuntimeError> {
        let failed = |reason: String| RuntimeError::Reference {
            problem: problem.key(),
            reason,
        };
        let (loaded, out) = match self.check_run(reference) {
            Ok(r) => r,
            Err(RunError::Candidate(o)) => return Err(failed(o.to_string())),
            Err(RunError::Runtime(e)) => return Err(e),
        };
        if let Some(s) = self.state.as_mut() {
            if let Err(why) = host::accept_reference(problem, &out, &mut s.host) {
                self.unload(&loaded);
                return Err(failed(why));
            }
        }
        let timed = self.timed_runs(reference, &loaded, host::REFERENCE_RUNS);
        self.unload(&loaded);
        match timed {
            Ok(times) => Ok(host::reference_us(&times)),
            Err(RunError::Candidate(o)) => Err(failed(o.to_string())),
            Err(RunError::Runtime(e)) => Err(e),
        }
    }

    /// ‖reference − CPU‖ / ‖CPU‖ of the current reference output.
    pub fn reference_cpu_error(&self) -> Option<f64> {
        let s = self.state.as_ref()?;
        host::cpu_error(&s.problem, &s.host)
    }

    /// Checks a candidate against the reference and, if it is right, times it.
    pub fn measure(&mut self, plan: &LaunchPlan) -> Result<Outcome, RuntimeError> {
        self.check_alive()?;
        let problem = match &self.state {
            Some(s) if !s.host[s.problem.direction().written() as usize].is_empty() => s.problem,
            _ => return Err(RuntimeError::NoProblem),
        };
        let dtype = problem.dtype();
        let (loaded, out) = match self.check_run(plan) {
            Ok(r) => r,
            Err(RunError::Candidate(o)) => return Ok(o),
            Err(RunError::Runtime(e)) => return Err(e),
        };
        let s = self.state.as_ref().ok_or(RuntimeError::NoProblem)?;
        let c = compare(dtype, &out, &s.host[problem.direction().written() as usize]);
        if !c.passes(problem.tolerance()) {
            self.unload(&loaded);
            return Ok(Outcome::WrongResult {
                rel_err: c.rel_err,
                unwritten: c.unwritten,
                non_finite: c.non_finite,
            });
        }
        let timed = self.time(plan, &loaded, &problem);
        self.unload(&loaded);
        match timed {
            Ok(mut t) => {
                t.rel_err = c.rel_err;
                Ok(Outcome::Ok(t))
            }
            Err(RunError::Candidate(o)) => Ok(o),
            Err(RunError::Runtime(e)) => Err(e),
        }
    }

    /// What the code object declares for each kernel of a plan, without loading it.
    pub fn resources(&mut self, plan: &LaunchPlan) -> Result<Vec<KernelResources>, RuntimeError> {
        let meta = plan_metadata(plan).map_err(RuntimeError::Module)?;
        Ok(kernel_resources(&meta, &self.device.arch))
    }

    fn check_alive(&self) -> Result<(), RuntimeError> {
        match &self.lost {
            Some(why) => Err(RuntimeError::ContextLost(why.clone())),
            None => Ok(()),
        }
    }

    /// A sticky error loses the device; anything else after a launch is still a fault of the
    /// candidate, but the device stays usable.
    fn fault(&mut self, what: &str, e: HipError) -> RunError {
        let message = format!("{what}: {e}");
        if e.is_sticky() {
            self.lost = Some(message.clone());
        }
        RunError::Candidate(Outcome::Fault(message))
    }

    /// Loads the plan after checking its metadata against the ABI and the device's limits.
    fn load(&mut self, plan: &LaunchPlan) -> Result<Loaded, RunError> {
        let meta = plan_metadata(plan).map_err(|m| RunError::Candidate(Outcome::LoadFailed(m)))?;
        for l in &plan.launches {
            let k = meta.kernel(&l.name).ok_or_else(|| {
                RunError::Candidate(Outcome::LoadFailed(format!(
                    "kernel {} is not in the code object's metadata",
                    l.name
                )))
            })?;
            k.check_args(&l.args)
                .map_err(|m| RunError::Candidate(Outcome::LoadFailed(m)))?;
            let lds = k.group_segment_fixed_size as u64 + l.shared_bytes as u64;
            let refuse = |m: String| RunError::Candidate(Outcome::LaunchFailed(m));
            if lds > self.device.max_shared_per_block as u64 {
                return Err(refuse(format!(
                    "kernel {}: {lds} bytes of LDS (static {} + dynamic {}) exceed the device's \
                     {} per workgroup",
                    l.name,
                    k.group_segment_fixed_size,
                    l.shared_bytes,
                    self.device.max_shared_per_block
                )));
            }
            if l.threads() > k.max_flat_workgroup_size.max(1) as u64 {
                return Err(refuse(format!(
                    "kernel {}: {} threads per block, compiled for at most {}",
                    l.name,
                    l.threads(),
                    k.max_flat_workgroup_size
                )));
            }
        }
        let image = plan.module.code_object().ok_or_else(|| {
            RunError::Candidate(Outcome::LoadFailed(format!(
                "a {} cannot be loaded by HIP",
                plan.module.kind()
            )))
        })?;
        let module = self.api.module_load(image).map_err(|e| {
            RunError::Candidate(Outcome::LoadFailed(format!("hipModuleLoadData: {e}")))
        })?;
        let mut functions = Vec::new();
        for l in &plan.launches {
            match self.api.function(module, &l.name) {
                Ok(f) => functions.push(f),
                Err(e) => {
                    let _ = self.api.module_unload(module);
                    return Err(RunError::Candidate(Outcome::LoadFailed(format!(
                        "hipModuleGetFunction({}): {e}",
                        l.name
                    ))));
                }
            }
        }
        Ok(Loaded {
            module,
            functions,
            resources: kernel_resources(&meta, &self.device.arch),
        })
    }

    fn unload(&self, loaded: &Loaded) {
        let _ = self.api.module_unload(loaded.module);
    }

    /// Loads, poisons the written tensor and the workspace, runs once, copies the output back.
    fn check_run(&mut self, plan: &LaunchPlan) -> Result<(Loaded, Vec<u8>), RunError> {
        let loaded = self.load(plan)?;
        let result = self.poisoned_run(plan, &loaded);
        match result {
            Ok(out) => Ok((loaded, out)),
            Err(e) => {
                if self.lost.is_none() {
                    self.unload(&loaded);
                }
                Err(e)
            }
        }
    }

    fn poisoned_run(&mut self, plan: &LaunchPlan, loaded: &Loaded) -> Result<Vec<u8>, RunError> {
        self.ensure_workspace(plan.workspace_bytes)?;
        let s = self.state.as_ref().ok_or(RuntimeError::NoProblem)?;
        let out = s.tensors[s.problem.direction().written() as usize];
        let ws = s.workspace;
        let kept = plan.kept_zero.min(plan.workspace_bytes) as usize;
        let mut r = self.api.memset(out.ptr, POISON, out.bytes, self.stream);
        if let (Ok(()), Some(ws)) = (&r, ws) {
            r = self
                .api
                .memset(ws.ptr, POISON, plan.workspace_bytes as usize, self.stream);
            // The kept-zero region as a caller keeps it: clear.
            if r.is_ok() && kept > 0 {
                r = self.api.memset(ws.ptr, 0, kept, self.stream);
            }
        }
        if let Err(e) = r {
            return Err(self.fault("poisoning the output", e));
        }
        self.run(plan, loaded)?;
        if let Err(e) = self.api.stream_synchronize(self.stream) {
            return Err(self.fault("running the plan", e));
        }
        if let (Some(ws), true) = (ws, kept > 0) {
            let mut region = vec![0u8; kept];
            if let Err(e) = self.api.copy_from_device(&mut region, ws.ptr) {
                return Err(self.fault("copying the workspace back", e));
            }
            host::kept_zero_verdict(&region).map_err(RunError::Candidate)?;
        }
        let mut bytes = vec![0u8; out.bytes];
        if let Err(e) = self.api.copy_from_device(&mut bytes, out.ptr) {
            return Err(self.fault("copying the output back", e));
        }
        Ok(bytes)
    }

    /// Enqueues every launch of the plan in order.
    fn run(&mut self, plan: &LaunchPlan, loaded: &Loaded) -> Result<(), RunError> {
        let s = self.state.as_ref().ok_or(RuntimeError::NoProblem)?;
        let tensors = s.tensors.map(|b| b.ptr);
        let workspace = s.workspace.map_or(0, |b| b.ptr);
        let pointer = |role: ArgRole| match role.tensor() {
            Some(t) => tensors[t as usize],
            None => workspace,
        };
        for (i, (l, &f)) in plan.launches.iter().zip(&loaded.functions).enumerate() {
            let args = device_pointers(&l.args, pointer)
                .map_err(|e| RunError::Candidate(Outcome::LaunchFailed(e.to_string())))?;
            if let Err(e) = self
                .api
                .launch(f, l.grid, l.block, l.shared_bytes, self.stream, &args)
            {
                let what = format!(
                    "launch {i} ({}, grid {:?}, block {:?})",
                    l.name, l.grid, l.block
                );
                if e.is_sticky() {
                    return Err(self.fault(&what, e));
                }
                if let Err(e2) = self.api.stream_synchronize(self.stream) {
                    return Err(self.fault(&what, e2));
                }
                return Err(RunError::Candidate(Outcome::LaunchFailed(format!(
                    "{what}: {e}"
                ))));
            }
        }
        Ok(())
    }

    /// Grows the workspace to `bytes`; failing to allocate it is the candidate's fault.
    fn ensure_workspace(&mut self, bytes: u64) -> Result<(), RunError> {
        let s = self.state.as_ref().ok_or(RuntimeError::NoProblem)?;
        if bytes == 0 || s.workspace.is_some_and(|w| w.bytes as u64 >= bytes) {
            return Ok(());
        }
        if let Some(old) = s.workspace {
            let _ = self.api.free(old.ptr);
        }
        let got = self.api.malloc(bytes as usize);
        let s = self.state.as_mut().ok_or(RuntimeError::NoProblem)?;
        s.workspace = None;
        match got {
            Ok(ptr) => {
                s.workspace = Some(Buffer {
                    ptr,
                    bytes: bytes as usize,
                });
                Ok(())
            }
            Err(e) => Err(RunError::Candidate(Outcome::LaunchFailed(format!(
                "workspace of {bytes} bytes: {e}"
            )))),
        }
    }

    /// Warm-up runs, then enough event-timed runs to cover a millisecond.
    fn time(
        &mut self,
        plan: &LaunchPlan,
        loaded: &Loaded,
        problem: &ConvProblem,
    ) -> Result<Timing, RunError> {
        let warm = self.timed_runs(plan, loaded, host::WARMUP_RUNS as usize)?;
        let estimate = host::median_min(&warm).map_or(0.0, |(m, _)| m);
        let times = self.timed_runs(plan, loaded, host::run_count(estimate) as usize)?;
        let (median_us, min_us) = host::median_min(&times).unwrap_or((0.0, 0.0));
        Ok(Timing {
            median_us,
            min_us,
            runs: times.len() as u32,
            tflops: if median_us > 0.0 {
                problem.flops() / (median_us * 1e-6) / 1e12
            } else {
                0.0
            },
            rel_err: 0.0,
            // Adaptive timing is not wired into the HIP worker yet: always a full median.
            screened: false,
            resources: loaded.resources.clone(),
            cache: COLD_CACHE,
        })
    }

    /// `n` runs, each after a cache flush and bracketed by events; their times in µs.
    fn timed_runs(
        &mut self,
        plan: &LaunchPlan,
        loaded: &Loaded,
        n: usize,
    ) -> Result<Vec<f64>, RunError> {
        while self.events.len() < n {
            let a = self
                .api
                .event_create()
                .map_err(|e| hip_err("hipEventCreate", e))?;
            let b = self
                .api
                .event_create()
                .map_err(|e| hip_err("hipEventCreate", e))?;
            self.events.push((a, b));
        }
        for i in 0..n {
            let (start, stop) = self.events[i];
            let r = self
                .api
                .memset(self.flush.ptr, i as u8, self.flush.bytes, self.stream)
                .and_then(|()| self.api.event_record(start, self.stream));
            if let Err(e) = r {
                return Err(self.fault("flushing the cache before a timed run", e));
            }
            self.run(plan, loaded)?;
            if let Err(e) = self.api.event_record(stop, self.stream) {
                return Err(self.fault("recording a timing event", e));
            }
        }
        let mut times = Vec::with_capacity(n);
        for i in 0..n {
            let (start, stop) = self.events[i];
            match self.api.elapsed_ms(start, stop) {
                Ok(ms) => times.push(ms as f64 * 1000.0),
                Err(e) => return Err(self.fault("timed run", e)),
            }
        }
        Ok(times)
    }

    fn free_buffers(&self, buffers: &[Buffer]) {
        for b in buffers.iter().filter(|b| b.ptr != 0) {
            let _ = self.api.free(b.ptr);
        }
    }

    fn drop_problem(&mut self) {
        if let Some(s) = self.state.take() {
            if self.lost.is_none() {
                self.free_buffers(&s.tensors);
                self.free_buffers(s.workspace.as_slice());
            }
        }
    }
}

impl<A: HipApi> Drop for HipMeasurer<A> {
    fn drop(&mut self) {
        self.drop_problem();
        if self.lost.is_none() {
            self.free_buffers(&[self.flush]);
        }
    }
}

/// The metadata of a plan's code object.
fn plan_metadata(plan: &LaunchPlan) -> Result<AmdResources, String> {
    let image = plan
        .module
        .code_object()
        .ok_or_else(|| format!("a {} is not an AMD code object", plan.module.kind()))?;
    read_code_object(image).map_err(|e| e.to_string())
}

/// The code object's per-kernel resources in the runtime's terms.
fn kernel_resources(meta: &AmdResources, arch: &str) -> Vec<KernelResources> {
    meta.kernels
        .iter()
        .map(|k| KernelResources {
            name: k.name.clone(),
            registers: k.total_vgprs(arch),
            local_bytes: k.private_segment_fixed_size,
            static_shared_bytes: k.group_segment_fixed_size,
            max_threads_per_block: k.max_flat_workgroup_size,
        })
        .collect()
}
