//! AMD GPUs through the HIP runtime: discovery, the fingerprint, and the measurer.
//!
//! `libamdhip64` is opened at run time ([`HipLib`]), so the same binary runs on machines with
//! ROCm, with CUDA or with neither, and no cargo feature is needed. Every call goes through the
//! [`HipApi`] trait, which a test implements in host memory to drive [`HipMeasurer`] (argument
//! packing, launch order, poisoning, the timing loop) without an AMD GPU.
//!
//! What is verified where: the call signatures against the HIP 5.2 headers on this machine, and
//! the measurer's logic against a host-memory stand-in in tests; nothing here has run on an AMD
//! GPU yet (`scripts/amd-tests.sh` is the check to run on one).

mod api;
mod ffi;
mod measure;

pub use api::{Attr, HipApi, HipError};
pub use ffi::{HipLib, OpenError, LIBRARY_NAMES};
pub use measure::HipMeasurer;
pub(crate) use measure::COLD_CACHE;

use super::error::RuntimeError;
use super::fingerprint::Fingerprint;
use serde::{Deserialize, Serialize};

/// One AMD GPU and the facts the tuner needs about it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HipDevice {
    /// HIP's ordinal.
    pub ordinal: usize,
    /// Marketing name.
    pub name: String,
    /// Compiler target without features, e.g. `gfx90a`.
    pub arch: String,
    /// `gcnArchName` with the target features the device runs in, e.g.
    /// `gfx90a:sramecc+:xnack-` (the code object must agree with xnack/sramecc modes).
    pub arch_name: String,
    /// Compute units.
    pub compute_units: u32,
    /// HIP runtime version, `major.minor.patch`.
    pub runtime: String,
    /// Driver version as HIP reports it, `major.minor.patch`.
    pub driver: String,
    /// Peak core clock in MHz, if reported.
    pub clock_mhz: Option<u32>,
    /// Peak memory clock in MHz, if reported.
    pub memory_clock_mhz: Option<u32>,
    /// L2 cache bytes.
    pub l2_bytes: u64,
    /// Device memory bytes.
    pub total_memory_bytes: u64,
    /// LDS bytes one workgroup may use.
    pub max_shared_per_block: u32,
    /// Threads per workgroup.
    pub max_threads_per_block: u32,
    /// Threads per wavefront (64 on CDNA).
    pub wavefront_size: u32,
}

impl HipDevice {
    /// The fingerprint stored in the tuned database. The GPU name carries `gcnArchName` with
    /// its features and the driver field both versions, so `db stale` / `retune` see a change
    /// of xnack/sramecc mode, HIP runtime or driver as another machine.
    pub fn fingerprint(&self) -> Fingerprint {
        Fingerprint {
            gpu: format!("{} ({})", self.name, self.arch_name),
            arch: self.arch.clone(),
            compute_units: self.compute_units,
            driver: format!("HIP {}, driver {}", self.runtime, self.driver),
            clock_mhz: self.clock_mhz,
            memory_mhz: self.memory_clock_mhz,
        }
    }

    /// The device as the worker protocol describes one (shaped after CUDA's; an AMD device has
    /// no compute capability, so it is (0, 0)).
    pub fn info(&self) -> super::DeviceInfo {
        super::DeviceInfo {
            ordinal: self.ordinal,
            name: self.fingerprint().gpu,
            compute_capability: (0, 0),
            arch: self.arch.clone(),
            multiprocessors: self.compute_units,
            driver: self.fingerprint().driver,
            clock_mhz: self.clock_mhz,
            memory_clock_mhz: self.memory_clock_mhz,
            l2_bytes: self.l2_bytes,
            total_memory_bytes: self.total_memory_bytes,
            max_shared_per_block_optin: self.max_shared_per_block,
            max_threads_per_block: self.max_threads_per_block,
        }
    }
}

/// Wraps a HIP error with the call it came from.
pub(crate) fn hip_err(call: &'static str, e: HipError) -> RuntimeError {
    RuntimeError::Hip {
        call,
        error: e.to_string(),
    }
}

/// Opens the runtime, mapping "not installed" to the error that names what was looked for.
pub fn open_runtime() -> Result<HipLib, RuntimeError> {
    HipLib::open().map_err(|e| match e {
        OpenError::NotFound { .. } => RuntimeError::NoHipRuntime(e.to_string()),
        OpenError::NoDevice { .. } => RuntimeError::NoGpu(e.to_string()),
        other => RuntimeError::Hip {
            call: "hipInit",
            error: other.to_string(),
        },
    })
}

/// Every AMD GPU the HIP runtime sees (none is an empty list, not an error).
pub fn hip_devices() -> Result<Vec<HipDevice>, RuntimeError> {
    devices(&open_runtime()?)
}

/// [`hip_devices`] through any implementation of the calls.
pub fn devices(api: &dyn HipApi) -> Result<Vec<HipDevice>, RuntimeError> {
    let count = match api.device_count() {
        Err(e) if e.code == HipError::NO_DEVICE => return Ok(Vec::new()),
        r => r.map_err(|e| hip_err("hipGetDeviceCount", e))?,
    };
    (0..count.max(0)).map(|d| device(api, d)).collect()
}

/// The facts of device `ordinal`.
pub fn device(api: &dyn HipApi, ordinal: i32) -> Result<HipDevice, RuntimeError> {
    let attr = |a: Attr| {
        api.attribute(a, ordinal)
            .map_err(|e| hip_err("hipDeviceGetAttribute", e))
    };
    let mhz = |a: Attr| attr(a).ok().filter(|&k| k > 0).map(|khz| khz as u32 / 1000);
    let runtime = api
        .runtime_version()
        .map_err(|e| hip_err("hipRuntimeGetVersion", e))?;
    let driver = api
        .driver_version()
        .map_err(|e| hip_err("hipDriverGetVersion", e))?;
    // The name string carries the features; the number is the fallback for old runtimes.
    let arch_name = match api.arch_name(ordinal) {
        Ok(n) => n,
        Err(_) => gfx_arch(attr(Attr::GcnArch)?),
    };
    Ok(HipDevice {
        ordinal: ordinal as usize,
        name: api
            .device_name(ordinal)
            .map_err(|e| hip_err("hipDeviceGetName", e))?,
        arch: base_arch(&arch_name).to_string(),
        arch_name,
        compute_units: attr(Attr::MultiprocessorCount)?.max(0) as u32,
        runtime: version_string(runtime),
        driver: version_string(driver),
        clock_mhz: mhz(Attr::ClockRate),
        memory_clock_mhz: mhz(Attr::MemoryClockRate),
        l2_bytes: attr(Attr::L2CacheSize)?.max(0) as u64,
        total_memory_bytes: api
            .total_memory(ordinal)
            .map_err(|e| hip_err("hipDeviceTotalMem", e))?,
        max_shared_per_block: attr(Attr::MaxSharedMemoryPerBlock)?.max(0) as u32,
        max_threads_per_block: attr(Attr::MaxThreadsPerBlock)?.max(0) as u32,
        wavefront_size: attr(Attr::WarpSize)?.max(0) as u32,
    })
}

/// `gfx90a:sramecc+:xnack-` → `gfx90a`.
pub fn base_arch(arch_name: &str) -> &str {
    arch_name.split(':').next().unwrap_or(arch_name)
}

/// `HIP_VERSION` encoding (major·10⁷ + minor·10⁵ + patch) → `major.minor.patch`.
fn version_string(v: i32) -> String {
    let v = v.max(0) as u32;
    format!("{}.{}.{}", v / 10_000_000, (v / 100_000) % 100, v % 100_000)
}

/// Targets that exist; `gcnArch` is ambiguous without them (see [`gfx_arch`]).
const KNOWN_TARGETS: &[&str] = &[
    "gfx900", "gfx902", "gfx904", "gfx906", "gfx908", "gfx909", "gfx90a", "gfx90c", "gfx940",
    "gfx941", "gfx942", "gfx950", "gfx1010", "gfx1011", "gfx1012", "gfx1030", "gfx1031", "gfx1032",
    "gfx1034", "gfx1035", "gfx1036", "gfx1100", "gfx1101", "gfx1102", "gfx1103", "gfx1150",
    "gfx1151", "gfx1200", "gfx1201",
];

/// The target name from HIP's `gcnArch` = major·100 + minor·10 + stepping. A stepping ≥ 10
/// (gfx90a is 9·100 + 0·10 + 10 = 910) collides with minor + 1, so of the two readings the one
/// naming a real target wins; minor and stepping are written in hex, as LLVM spells targets.
pub fn gfx_arch(gcn_arch: i32) -> String {
    let v = gcn_arch.max(0) as u32;
    let (major, rest) = (v / 100, v % 100);
    let plain = format!("gfx{major}{:x}{:x}", rest / 10, rest % 10);
    if rest >= 10 {
        let high_stepping = format!("gfx{major}{:x}{:x}", (rest - 10) / 10, 10 + rest % 10);
        if !KNOWN_TARGETS.contains(&plain.as_str())
            && KNOWN_TARGETS.contains(&high_stepping.as_str())
        {
            return high_stepping;
        }
    }
    plain
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gcn_arch_numbers_name_real_targets() {
        assert_eq!(gfx_arch(908), "gfx908");
        assert_eq!(gfx_arch(910), "gfx90a");
        assert_eq!(gfx_arch(912), "gfx90c");
        assert_eq!(gfx_arch(942), "gfx942");
        assert_eq!(gfx_arch(1030), "gfx1030");
        assert_eq!(gfx_arch(1100), "gfx1100");
        assert_eq!(gfx_arch(1011), "gfx1011");
        assert_eq!(base_arch("gfx90a:sramecc+:xnack-"), "gfx90a");
        assert_eq!(base_arch("gfx942"), "gfx942");
    }

    #[test]
    fn version_encoding() {
        assert_eq!(version_string(60_032_830), "6.0.32830");
        assert_eq!(version_string(50_221_153), "5.2.21153");
    }

    /// Wherever it runs: a list (maybe empty) or an error naming the runtime, never a crash.
    #[test]
    fn discovery_answers_without_crashing() {
        match hip_devices() {
            Ok(devices) => {
                for d in devices {
                    assert!(d.arch.starts_with("gfx") && d.compute_units > 0, "{d:?}");
                }
            }
            Err(e) => assert!(e.to_string().contains("HIP runtime"), "{e}"),
        }
    }
}
