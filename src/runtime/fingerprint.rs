//! The device fingerprint stored with every tuned entry.
//!
//! A database entry is only as trustworthy as the machine it was measured on: the fingerprint says
//! which GPU, how many compute units, which driver and (when readable) which clocks, so a user can
//! see that an entry came from different hardware and rerun the tuner after a driver change.

use serde::{Deserialize, Serialize};

/// Which device a measurement was made on.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Fingerprint {
    /// Marketing name as the driver reports it, e.g. `NVIDIA H200`.
    pub gpu: String,
    /// Compiler target, e.g. `sm_90` or `gfx90a`.
    pub arch: String,
    /// Streaming multiprocessors (NVIDIA) or compute units (AMD).
    pub compute_units: u32,
    /// Driver version as `major.minor` (CUDA driver API version, or HIP runtime version).
    pub driver: String,
    /// Maximum core clock in MHz, when the driver reports it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_mhz: Option<u32>,
    /// Memory clock in MHz, when the driver reports it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_mhz: Option<u32>,
}

impl Fingerprint {
    /// Same chip and configuration (name, arch, unit count), whatever the driver and clocks: the
    /// condition under which a tuned config is expected to stay the fastest.
    pub fn same_hardware(&self, other: &Fingerprint) -> bool {
        self.gpu == other.gpu
            && self.arch == other.arch
            && self.compute_units == other.compute_units
    }
}

impl std::fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} ({}, {} CUs, driver {}",
            self.gpu, self.arch, self.compute_units, self.driver
        )?;
        if let Some(c) = self.clock_mhz {
            write!(f, ", {c} MHz")?;
        }
        if let Some(m) = self.memory_mhz {
            write!(f, ", mem {m} MHz")?;
        }
        write!(f, ")")
    }
}

/// The database keeps the stable subset of a fingerprint (no arch: a database file is per arch;
/// no memory clock: it does not decide which config wins).
impl From<&Fingerprint> for crate::db::Fingerprint {
    fn from(f: &Fingerprint) -> Self {
        crate::db::Fingerprint {
            gpu: f.gpu.clone(),
            compute_units: f.compute_units,
            driver: f.driver.clone(),
            clock_mhz: f.clock_mhz,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h200() -> Fingerprint {
        Fingerprint {
            gpu: "NVIDIA H200".into(),
            arch: "sm_90".into(),
            compute_units: 132,
            driver: "13.0".into(),
            clock_mhz: Some(1980),
            memory_mhz: None,
        }
    }

    #[test]
    fn optional_clocks_are_omitted_and_default_when_missing() {
        let text = toml::to_string(&h200()).unwrap();
        assert!(text.contains("clock_mhz = 1980"));
        assert!(!text.contains("memory_mhz"));
        let back: Fingerprint = toml::from_str(&text).unwrap();
        assert_eq!(back, h200());
    }

    #[test]
    fn driver_change_keeps_hardware_identity() {
        let newer = Fingerprint {
            driver: "13.1".into(),
            clock_mhz: None,
            ..h200()
        };
        assert!(h200().same_hardware(&newer));
        let smaller = Fingerprint {
            compute_units: 114,
            ..h200()
        };
        assert!(!h200().same_hardware(&smaller));
        assert_eq!(
            h200().to_string(),
            "NVIDIA H200 (sm_90, 132 CUs, driver 13.0, 1980 MHz)"
        );
    }
}
