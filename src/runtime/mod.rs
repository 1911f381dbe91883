//! runtime (in progress)
mod cuda;
mod device;
mod error;
mod fingerprint;
mod host;
mod measure;
mod outcome;
mod plan;

pub use device::{cuda_device, cuda_devices, driver_version, sm_arch, DeviceInfo};
pub use error::RuntimeError;
pub use fingerprint::Fingerprint;
pub use measure::Measurer;
pub use outcome::{Outcome, Timing};
pub use plan::{KernelResources, Launch, LaunchPlan};
