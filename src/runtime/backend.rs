//! The seam between the tuning campaign and a kind of GPU: find the devices, open one to measure
//! on. The campaign never names CUDA; it asks for the backend of the arch's vendor.
//!
//! A backend answers two questions. [`DeviceBackend::discover`] lists the devices present (a
//! machine without the vendor's driver is an error that says what was looked for, never a panic),
//! and [`DeviceBackend::open`] starts a [`MeasureDevice`] on one of them: the thing that checks a
//! candidate against the reference and times it. CUDA's opens a fault-isolating [`Worker`]
//! process; a HIP backend plugs in the same way (its own driver library opened at run time, its
//! own worker that loads AMD code objects: [`HipBackend`]), and tests plug in a fake device that
//! drives the whole campaign without a GPU. [`AnyBackend`] is the choice when no arch is given.

use super::device::cuda_devices;
use super::error::RuntimeError;
use super::fingerprint::Fingerprint;
use super::hip::hip_devices;
use super::outcome::{ColdCache, MeasureStages, Outcome};
use super::plan::LaunchPlan;
use super::worker::Worker;
use crate::arch::Vendor;
use crate::problem::ConvProblem;
use std::sync::OnceLock;
use std::time::Instant;

/// The cache state in which the measurer of `vendor`'s GPUs times candidates: a journaled time
/// taken in another state is measured again on resume.
pub fn cold_cache(vendor: Vendor) -> ColdCache {
    match vendor {
        Vendor::Nvidia => super::measure::COLD_CACHE,
        Vendor::Amd => super::hip::COLD_CACHE,
    }
}

/// One kind of GPU runtime the tuner can measure on.
pub trait DeviceBackend: Sync {
    /// Short name for messages: `CUDA`.
    fn name(&self) -> &'static str;
    /// The GPU maker whose architectures this backend runs.
    fn vendor(&self) -> Vendor;
    /// What discovery looks for, so that "no usable GPU" can say where it looked.
    fn looked_for(&self) -> &'static str;
    /// The devices present, in ordinal order; the arch in each fingerprint is the compiler
    /// target (`sm_90`, `gfx90a`). An empty list is not an error.
    fn discover(&self) -> Result<Vec<Fingerprint>, RuntimeError>;
    /// Opens one device for measuring. `Err` means nothing can be measured on it.
    fn open(&self, ordinal: usize) -> Result<Box<dyn MeasureDevice>, RuntimeError>;
}

/// One device, ready to check and time the candidates of one problem at a time.
///
/// A candidate that faults, hangs or computes a wrong result is an [`Outcome`], and the device
/// stays usable for the next one (a worker process restarts behind this interface); `Err` means
/// the device itself is gone and the campaign stops using it.
pub trait MeasureDevice {
    /// Allocates the problem's tensors, fills them with random data from `seed` and runs the
    /// reference every candidate is compared with; returns the reference's time in µs.
    fn set_problem(
        &mut self,
        problem: &ConvProblem,
        reference: &LaunchPlan,
        seed: u64,
    ) -> Result<f64, RuntimeError>;
    /// Checks and times one candidate of the current problem.
    fn measure(&mut self, plan: &LaunchPlan) -> Result<Outcome, RuntimeError>;
    /// [`MeasureDevice::measure`] with adaptive timing: a candidate whose short first
    /// measurement is slower than `screen_us` keeps that short time, marked `screened`. Also
    /// says where the time went, when the device can tell. By default: a full measurement.
    fn measure_with(
        &mut self,
        plan: &LaunchPlan,
        _screen_us: Option<f64>,
    ) -> Result<(Outcome, Option<MeasureStages>), RuntimeError> {
        self.measure(plan).map(|o| (o, None))
    }
    /// Announces the plans measured next, in order, so their modules load while the current
    /// one is timed; how many loads were queued. By default none (each loads when measured).
    fn prefetch(&mut self, _plans: &[&LaunchPlan]) -> Result<usize, RuntimeError> {
        Ok(0)
    }
    /// Caps every later wait at `deadline` (the run's `--time`): a candidate still running
    /// then is [`Outcome::OutOfTime`], a problem set-up [`RuntimeError::OutOfTime`]. `None`
    /// lifts it. By default ignored (a device whose waits are all short).
    fn set_deadline(&mut self, _deadline: Option<Instant>) {}
}

impl MeasureDevice for Worker {
    fn set_problem(
        &mut self,
        problem: &ConvProblem,
        reference: &LaunchPlan,
        seed: u64,
    ) -> Result<f64, RuntimeError> {
        Worker::set_problem(self, problem, reference, seed)
    }
    fn measure(&mut self, plan: &LaunchPlan) -> Result<Outcome, RuntimeError> {
        Worker::measure(self, plan)
    }
    fn measure_with(
        &mut self,
        plan: &LaunchPlan,
        screen_us: Option<f64>,
    ) -> Result<(Outcome, Option<MeasureStages>), RuntimeError> {
        Worker::measure_with(self, plan, screen_us)
    }
    fn prefetch(&mut self, plans: &[&LaunchPlan]) -> Result<usize, RuntimeError> {
        Worker::preload(self, plans)
    }
    fn set_deadline(&mut self, deadline: Option<Instant>) {
        Worker::set_deadline(self, deadline)
    }
}

/// NVIDIA GPUs through the CUDA driver; every device is measured in a `convtune worker` child
/// process of this executable, so a faulting kernel costs one candidate, not the run.
#[derive(Debug, Clone, Copy, Default)]
pub struct CudaBackend;

impl DeviceBackend for CudaBackend {
    fn name(&self) -> &'static str {
        "CUDA"
    }
    fn vendor(&self) -> Vendor {
        Vendor::Nvidia
    }
    fn looked_for(&self) -> &'static str {
        "NVIDIA GPUs through the CUDA driver"
    }
    fn discover(&self) -> Result<Vec<Fingerprint>, RuntimeError> {
        Ok(cuda_devices()?.iter().map(|d| d.fingerprint()).collect())
    }
    fn open(&self, ordinal: usize) -> Result<Box<dyn MeasureDevice>, RuntimeError> {
        Ok(Box::new(Worker::spawn(ordinal)?))
    }
}

/// AMD GPUs through the HIP runtime (`libamdhip64`, opened at run time); every device is
/// measured in a `convtune worker --runtime hip` child process, as on CUDA.
#[derive(Debug, Clone, Copy, Default)]
pub struct HipBackend;

impl DeviceBackend for HipBackend {
    fn name(&self) -> &'static str {
        "HIP"
    }
    fn vendor(&self) -> Vendor {
        Vendor::Amd
    }
    fn looked_for(&self) -> &'static str {
        "AMD GPUs through the HIP runtime (libamdhip64.so)"
    }
    fn discover(&self) -> Result<Vec<Fingerprint>, RuntimeError> {
        Ok(hip_devices()?.iter().map(|d| d.fingerprint()).collect())
    }
    fn open(&self, ordinal: usize) -> Result<Box<dyn MeasureDevice>, RuntimeError> {
        Ok(Box::new(Worker::spawn_hip(ordinal)?))
    }
}

/// The backends in the order a machine's GPUs are looked for when no arch is given.
pub const BACKENDS: [&dyn DeviceBackend; 2] = [&CudaBackend, &HipBackend];

/// Whichever backend finds devices first ([`BACKENDS`] order): a host with AMD GPUs tunes for
/// its gfx target, one with NVIDIA GPUs for its sm target, without being told which. With no
/// GPU of either kind, discovery fails naming both places it looked.
#[derive(Debug, Default)]
pub struct AnyBackend {
    chosen: OnceLock<&'static dyn DeviceBackend>,
}

impl std::fmt::Debug for dyn DeviceBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl AnyBackend {
    /// The backend discovery settled on, if it has run.
    pub fn chosen(&self) -> Option<&'static dyn DeviceBackend> {
        self.chosen.get().copied()
    }
}

impl DeviceBackend for AnyBackend {
    fn name(&self) -> &'static str {
        self.chosen().map_or("GPU", |b| b.name())
    }
    fn vendor(&self) -> Vendor {
        self.chosen().map_or(Vendor::Nvidia, |b| b.vendor())
    }
    fn looked_for(&self) -> &'static str {
        "NVIDIA GPUs through the CUDA driver (libcuda.so.1) and AMD GPUs through the HIP \
         runtime (libamdhip64.so)"
    }
    fn discover(&self) -> Result<Vec<Fingerprint>, RuntimeError> {
        let mut causes = Vec::new();
        for b in BACKENDS {
            match b.discover() {
                Ok(found) if !found.is_empty() => {
                    let _ = self.chosen.set(b);
                    return Ok(found);
                }
                Ok(_) => causes.push(format!("{}: no devices", b.name())),
                Err(e) => causes.push(e.to_string()),
            }
        }
        Err(RuntimeError::NoGpu(causes.join("; ")))
    }
    fn open(&self, ordinal: usize) -> Result<Box<dyn MeasureDevice>, RuntimeError> {
        match self.chosen() {
            Some(b) => b.open(ordinal),
            None => {
                self.discover()?;
                self.open(ordinal)
            }
        }
    }
}

/// The backend that measures on `vendor`'s GPUs.
pub fn backend_for(vendor: Vendor) -> Option<&'static dyn DeviceBackend> {
    match vendor {
        Vendor::Nvidia => Some(&CudaBackend),
        Vendor::Amd => Some(&HipBackend),
    }
}

/// The backend asked when no arch is given and the GPU decides it.
pub fn default_backend() -> &'static dyn DeviceBackend {
    static ANY: OnceLock<AnyBackend> = OnceLock::new();
    ANY.get_or_init(AnyBackend::default)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backends_follow_the_vendor() {
        let cuda = backend_for(Vendor::Nvidia).expect("CUDA is built in");
        assert_eq!((cuda.name(), cuda.vendor()), ("CUDA", Vendor::Nvidia));
        assert!(cuda.looked_for().contains("CUDA driver"));
        let hip = backend_for(Vendor::Amd).expect("HIP is built in");
        assert_eq!((hip.name(), hip.vendor()), ("HIP", Vendor::Amd));
        assert!(hip.looked_for().contains("HIP runtime"));
        let any = default_backend().looked_for();
        assert!(
            any.contains("CUDA driver") && any.contains("HIP runtime"),
            "{any}"
        );
    }

    /// Discovery through the trait: a list on a GPU machine, the driver's absence elsewhere.
    #[test]
    fn cuda_discovery_answers_without_crashing() {
        match CudaBackend.discover() {
            Ok(devices) => assert!(devices.iter().all(|d| d.arch.starts_with("sm_"))),
            Err(e) => assert!(e.to_string().contains("CUDA") || e.to_string().contains("cu")),
        }
    }

    /// Without any GPU runtime, the combined discovery names both it looked for.
    #[test]
    fn no_gpu_of_either_kind_names_both() {
        let any = AnyBackend::default();
        match any.discover() {
            Ok(devices) => assert!(any.chosen().is_some(), "{devices:?}"),
            Err(e) => {
                let e = e.to_string();
                assert!(
                    e.contains("CUDA driver") && e.contains("HIP runtime"),
                    "{e}"
                );
            }
        }
    }
}
