//! AMD devices through the HIP runtime (cargo feature `hip`): discovery and fingerprint only.
//!
//! hip-runtime-sys links `libamdhip64` at load time, which is why this sits behind a feature: the
//! default binary must start on machines without ROCm. Its bindings come from HIP 5.4 headers, so
//! two precautions apply. Device facts are read one by one with `hipDeviceGetAttribute` (whose
//! attribute numbering has stayed put), never through `hipDeviceProp_t` (whose layout changed in
//! ROCm 6). And HIP errors arrive as a Rust enum, where a code the 5.4 headers lack would be
//! undefined behaviour, so the runtime's major version is checked first and only the few calls
//! below are made.

use super::error::RuntimeError;
use super::fingerprint::Fingerprint;
use hip_runtime_sys::{self as hip, hipDeviceAttribute_t as Attr, hipError_t};
use serde::{Deserialize, Serialize};
use std::ffi::CStr;

/// HIP runtime major versions whose error codes the bindings know.
const SUPPORTED_MAJORS: std::ops::RangeInclusive<u32> = 5..=6;

/// One AMD GPU and the facts the tuner needs about it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HipDevice {
    /// HIP's ordinal.
    pub ordinal: usize,
    /// Marketing name.
    pub name: String,
    /// Compiler target, e.g. `gfx90a`.
    pub arch: String,
    /// Compute units.
    pub compute_units: u32,
    /// HIP runtime version, `major.minor`.
    pub runtime: String,
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
    /// Threads per wavefront (64 on CDNA).
    pub wavefront_size: u32,
}

impl HipDevice {
    /// The fingerprint stored in the tuned database.
    pub fn fingerprint(&self) -> Fingerprint {
        Fingerprint {
            gpu: self.name.clone(),
            arch: self.arch.clone(),
            compute_units: self.compute_units,
            driver: self.runtime.clone(),
            clock_mhz: self.clock_mhz,
            memory_mhz: self.memory_clock_mhz,
        }
    }
}

fn check(call: &'static str, r: hipError_t) -> Result<(), RuntimeError> {
    if r == hipError_t::hipSuccess {
        return Ok(());
    }
    // SAFETY: hipGetErrorString returns a static NUL-terminated string (or null).
    let text = unsafe {
        let p = hip::hipGetErrorString(r);
        if p.is_null() {
            String::new()
        } else {
            CStr::from_ptr(p).to_string_lossy().into_owned()
        }
    };
    Err(RuntimeError::Hip {
        call,
        error: format!("{r:?} ({text})"),
    })
}

/// The HIP runtime version (major, minor), refusing majors the bindings were not made for.
pub fn hip_runtime_version() -> Result<(u32, u32), RuntimeError> {
    let mut v = 0;
    // SAFETY: writes one int; hipSuccess and hipErrorInvalidValue are the only documented codes.
    check("hipRuntimeGetVersion", unsafe {
        hip::hipRuntimeGetVersion(&mut v)
    })?;
    let (major, minor) = split_version(v);
    if !SUPPORTED_MAJORS.contains(&major) {
        return Err(RuntimeError::Hip {
            call: "hipRuntimeGetVersion",
            error: format!(
                "HIP runtime {major}.{minor} is not supported (bindings cover {}.x to {}.x)",
                SUPPORTED_MAJORS.start(),
                SUPPORTED_MAJORS.end()
            ),
        });
    }
    Ok((major, minor))
}

/// `HIP_VERSION` encoding: major·10⁷ + minor·10⁵ + patch.
fn split_version(v: i32) -> (u32, u32) {
    let v = v.max(0) as u32;
    (v / 10_000_000, (v / 100_000) % 100)
}

/// Every AMD GPU the HIP runtime sees (none is an empty list, not an error).
pub fn hip_devices() -> Result<Vec<HipDevice>, RuntimeError> {
    let (major, minor) = hip_runtime_version()?;
    let mut count = 0;
    // SAFETY: writes one int.
    let r = unsafe { hip::hipGetDeviceCount(&mut count) };
    if r == hipError_t::hipErrorNoDevice {
        return Ok(Vec::new());
    }
    check("hipGetDeviceCount", r)?;
    (0..count.max(0))
        .map(|d| hip_device(d, format!("{major}.{minor}")))
        .collect()
}

fn hip_device(ordinal: i32, runtime: String) -> Result<HipDevice, RuntimeError> {
    let attr = |a: Attr| -> Result<i32, RuntimeError> {
        let mut v = 0;
        // SAFETY: writes one int for a valid ordinal.
        check("hipDeviceGetAttribute", unsafe {
            hip::hipDeviceGetAttribute(&mut v, a, ordinal)
        })?;
        Ok(v)
    };
    let mhz = |a: Attr| attr(a).ok().filter(|&k| k > 0).map(|khz| khz as u32 / 1000);
    let mut name = [0 as std::ffi::c_char; 256];
    // SAFETY: the buffer's length is passed; HIP NUL-terminates within it.
    check("hipDeviceGetName", unsafe {
        hip::hipDeviceGetName(name.as_mut_ptr(), name.len() as i32, ordinal)
    })?;
    // SAFETY: NUL-terminated by hipDeviceGetName (and the last byte is still 0).
    let name = unsafe { CStr::from_ptr(name.as_ptr()) }
        .to_string_lossy()
        .into_owned();
    let mut total = 0usize;
    // SAFETY: writes one size_t.
    check("hipDeviceTotalMem", unsafe {
        hip::hipDeviceTotalMem(&mut total, ordinal)
    })?;
    Ok(HipDevice {
        ordinal: ordinal as usize,
        name,
        arch: gfx_arch(attr(Attr::hipDeviceAttributeGcnArch)?),
        compute_units: attr(Attr::hipDeviceAttributeMultiprocessorCount)? as u32,
        runtime,
        clock_mhz: mhz(Attr::hipDeviceAttributeClockRate),
        memory_clock_mhz: mhz(Attr::hipDeviceAttributeMemoryClockRate),
        l2_bytes: attr(Attr::hipDeviceAttributeL2CacheSize)?.max(0) as u64,
        total_memory_bytes: total as u64,
        max_shared_per_block: attr(Attr::hipDeviceAttributeMaxSharedMemoryPerBlock)?.max(0) as u32,
        wavefront_size: attr(Attr::hipDeviceAttributeWarpSize)?.max(0) as u32,
    })
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
    }

    #[test]
    fn version_encoding() {
        assert_eq!(split_version(60_032_830), (6, 0));
        assert_eq!(split_version(50_221_153), (5, 2));
    }

    /// Wherever it runs: a list (maybe empty) or a clear error, never a crash.
    #[test]
    fn discovery_answers_without_crashing() {
        match hip_devices() {
            Ok(devices) => {
                for d in devices {
                    assert!(d.arch.starts_with("gfx") && d.compute_units > 0, "{d:?}");
                }
            }
            Err(e) => assert!(e.to_string().contains("hip"), "{e}"),
        }
    }
}
