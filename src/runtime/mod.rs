//! The GPU side of tuning: find the device, check a candidate against a reference, time it.
//!
//! Layers, bottom up:
//! - [`cuda_devices`] / [`DeviceInfo`] / [`Fingerprint`]: what is installed (a machine without
//!   `libcuda.so.1` gets [`RuntimeError::NoDriver`], never a panic).
//! - `cuda`: PTX modules loaded with the JIT log, kernel attributes, launches of a [`LaunchPlan`].
//! - [`Measurer`]: in-process checking and timing against a reference plan.
//! - [`Worker`]: the same in a child process, restarted when a kernel crashes or hangs it, so a
//!   bad candidate costs one [`Outcome`] and never the run.
//! - [`hip`]: the same for AMD GPUs, with `libamdhip64` opened at run time.
//! - [`DeviceBackend`] / [`MeasureDevice`]: what the tuning campaign sees of all this:
//!   [`CudaBackend`], [`HipBackend`], [`AnyBackend`] (whichever is present) or a test's fake.
//!
//! ```no_run
//! use convtune::runtime::{Outcome, Worker};
//! # fn demo(problem: convtune::problem::ConvProblem,
//! #         reference: convtune::runtime::LaunchPlan,
//! #         candidates: Vec<convtune::runtime::LaunchPlan>) -> Result<(), convtune::runtime::RuntimeError> {
//! let mut worker = Worker::spawn(0)?; // runs `convtune worker --device 0`
//! worker.set_problem(&problem, &reference, 42)?;
//! for plan in &candidates {
//!     match worker.measure(plan)? {
//!         Outcome::Ok(t) => println!("{:.1} us, {:.0} TFLOP/s", t.median_us, t.tflops),
//!         failed => println!("rejected: {failed}"),
//!     }
//! }
//! # Ok(()) }
//! ```

mod backend;
mod cuda;
mod device;
mod error;
mod fingerprint;
mod gpu_compare;
#[cfg(test)]
mod gpu_tests;
pub mod hip;
mod host;
mod jit_cache;
mod l2_sweep;
mod measure;
mod outcome;
mod plan;
mod preload;
mod protocol;
mod ptxas;
mod serve;
#[cfg(test)]
pub(crate) mod stand_in;
mod tensor_map;
mod worker;

pub use backend::{
    backend_for, cold_cache, default_backend, AnyBackend, CudaBackend, DeviceBackend, HipBackend,
    MeasureDevice,
};
pub use device::{cuda_device, cuda_devices, driver_version, sm_arch, DeviceInfo};
pub use error::RuntimeError;
pub use fingerprint::Fingerprint;
pub use jit_cache::jit_cache_env;
pub use measure::Measurer;
pub use outcome::{ColdCache, MeasureStages, Outcome, Timing};
pub use plan::{KernelResources, Launch, LaunchPlan, SHARED_OPT_IN_ABOVE};
pub use preload::JIT_THREADS_ENV;
pub use ptxas::{Assembled, Ptxas, FATAL_WARNINGS, PTXAS_ENV};
pub use serve::{hip_worker_main, worker_main};
pub use worker::{Worker, WorkerOptions};
