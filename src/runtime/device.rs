//! CUDA device discovery: what is installed, and the limits a measurement must respect.
//!
//! Every entry point first checks that `libcuda.so.1` can be opened, because cudarc (loading the
//! driver lazily) panics on the first call otherwise; a machine without a GPU gets a clear
//! [`RuntimeError::NoDriver`] instead.

use super::error::RuntimeError;
use super::fingerprint::Fingerprint;
use cudarc::driver::{result, sys, sys::CUdevice_attribute as Attr};
use serde::{Deserialize, Serialize};

/// One CUDA device and the facts the tuner and the measurer need about it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceInfo {
    /// The driver's ordinal.
    pub ordinal: usize,
    /// Marketing name.
    pub name: String,
    /// Compute capability (major, minor).
    pub compute_capability: (u32, u32),
    /// Compiler target for that capability: `sm_90` for 9.0.
    pub arch: String,
    /// Streaming multiprocessors.
    pub multiprocessors: u32,
    /// CUDA driver API version, `major.minor`.
    pub driver: String,
    /// Maximum core clock in MHz (CUDA 13 may no longer report it).
    pub clock_mhz: Option<u32>,
    /// Memory clock in MHz (CUDA 13 may no longer report it).
    pub memory_clock_mhz: Option<u32>,
    /// L2 cache bytes: the measurer flushes twice this much between timed runs.
    pub l2_bytes: u64,
    /// Device memory bytes.
    pub total_memory_bytes: u64,
    /// Most dynamic shared memory one block may opt in to.
    pub max_shared_per_block_optin: u32,
    /// Hardware limit of threads per block.
    pub max_threads_per_block: u32,
}

impl DeviceInfo {
    /// The fingerprint stored in the tuned database.
    pub fn fingerprint(&self) -> Fingerprint {
        Fingerprint {
            gpu: self.name.clone(),
            arch: self.arch.clone(),
            compute_units: self.multiprocessors,
            driver: self.driver.clone(),
            clock_mhz: self.clock_mhz,
            memory_mhz: self.memory_clock_mhz,
        }
    }
}

/// The compiler target for a compute capability: `sm_90`, `sm_80`, `sm_100`.
pub fn sm_arch(major: u32, minor: u32) -> String {
    format!("sm_{major}{minor}")
}

/// `13000` → `13.0`, `12080` → `12.8` (the encoding of `cuDriverGetVersion`).
pub(crate) fn version_string(v: i32) -> String {
    format!("{}.{}", v / 1000, (v % 1000) / 10)
}

/// Opens the driver and runs `cuInit`; the gate before any other CUDA call.
pub(crate) fn init_driver() -> Result<(), RuntimeError> {
    // SAFETY: only tries to dlopen the library; no symbol is called.
    if !unsafe { sys::is_culib_present() } {
        return Err(RuntimeError::NoDriver);
    }
    result::init().map_err(|e| RuntimeError::driver("cuInit", "", e))
}

/// The CUDA driver API version, `major.minor`.
pub fn driver_version() -> Result<String, RuntimeError> {
    init_driver()?;
    let mut v = 0i32;
    // SAFETY: writes one int.
    unsafe { sys::cuDriverGetVersion(&mut v) }
        .result()
        .map_err(|e| RuntimeError::driver("cuDriverGetVersion", "", e))?;
    Ok(version_string(v))
}

/// Every CUDA device the driver sees, in ordinal order.
pub fn cuda_devices() -> Result<Vec<DeviceInfo>, RuntimeError> {
    init_driver()?;
    let count =
        result::device::get_count().map_err(|e| RuntimeError::driver("cuDeviceGetCount", "", e))?;
    (0..count.max(0) as usize).map(cuda_device).collect()
}

/// One device's facts.
pub fn cuda_device(ordinal: usize) -> Result<DeviceInfo, RuntimeError> {
    let driver = driver_version()?;
    let count =
        result::device::get_count().map_err(|e| RuntimeError::driver("cuDeviceGetCount", "", e))?;
    if ordinal >= count.max(0) as usize {
        return Err(RuntimeError::NoSuchDevice {
            ordinal,
            count: count.max(0) as usize,
        });
    }
    let ctx = format!("device {ordinal}");
    let dev = result::device::get(ordinal as i32)
        .map_err(|e| RuntimeError::driver("cuDeviceGet", ctx.clone(), e))?;
    let attr = |a: Attr| -> Result<i32, RuntimeError> {
        // SAFETY: `dev` is a valid device handle from cuDeviceGet.
        unsafe { result::device::get_attribute(dev, a) }
            .map_err(|e| RuntimeError::driver("cuDeviceGetAttribute", format!("{ctx}, {a:?}"), e))
    };
    // Clocks are informational and deprecated in CUDA 13: absent rather than an error.
    let mhz = |a: Attr| attr(a).ok().filter(|&k| k > 0).map(|khz| khz as u32 / 1000);
    let major = attr(Attr::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)? as u32;
    let minor = attr(Attr::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)? as u32;
    Ok(DeviceInfo {
        ordinal,
        name: result::device::get_name(dev)
            .map_err(|e| RuntimeError::driver("cuDeviceGetName", ctx.clone(), e))?,
        compute_capability: (major, minor),
        arch: sm_arch(major, minor),
        multiprocessors: attr(Attr::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)? as u32,
        driver,
        clock_mhz: mhz(Attr::CU_DEVICE_ATTRIBUTE_CLOCK_RATE),
        memory_clock_mhz: mhz(Attr::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE),
        l2_bytes: attr(Attr::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)? as u64,
        // SAFETY: valid device handle.
        total_memory_bytes: unsafe { result::device::total_mem(dev) }
            .map_err(|e| RuntimeError::driver("cuDeviceTotalMem", ctx.clone(), e))?
            as u64,
        max_shared_per_block_optin: attr(
            Attr::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
        )? as u32,
        max_threads_per_block: attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)? as u32,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arch_and_version_strings() {
        assert_eq!(sm_arch(9, 0), "sm_90");
        assert_eq!(sm_arch(8, 6), "sm_86");
        assert_eq!(sm_arch(10, 0), "sm_100");
        assert_eq!(version_string(13000), "13.0");
        assert_eq!(version_string(12080), "12.8");
        assert_eq!(version_string(12020), "12.2");
    }

    /// Without a driver: a clear error, not a panic. With one (the GPU machine): sane facts.
    #[test]
    fn devices_or_a_clear_no_driver_error() {
        // SAFETY: dlopen probe only.
        let present = unsafe { sys::is_culib_present() };
        match cuda_devices() {
            Err(RuntimeError::NoDriver) => {
                assert!(!present);
                assert_eq!(
                    RuntimeError::NoDriver.to_string(),
                    "no CUDA driver (libcuda.so.1 not found)"
                );
                assert!(matches!(cuda_device(0), Err(RuntimeError::NoDriver)));
            }
            Ok(devices) => {
                assert!(present);
                for d in &devices {
                    assert!(d.arch.starts_with("sm_"), "{d:?}");
                    assert!(d.multiprocessors > 0 && d.l2_bytes > 0, "{d:?}");
                    assert!(d.max_shared_per_block_optin >= 48 * 1024, "{d:?}");
                    assert_eq!(d.fingerprint().compute_units, d.multiprocessors);
                }
                let n = devices.len();
                assert!(matches!(
                    cuda_device(n),
                    Err(RuntimeError::NoSuchDevice { ordinal, count }) if ordinal == n && count == n
                ));
            }
            // A driver without a usable GPU (e.g. CUDA_ERROR_NO_DEVICE) is reported, not hidden.
            Err(e) => assert!(present && e.to_string().contains("cuInit"), "{e}"),
        }
    }
}
