//! What a kernel is compiled for: the public [`Target`] and the facts the kernel logic needs
//! from it (warp size, matrix unit, async copies). How the kernels reach a target's
//! instructions is [`super::spec`].

use super::CodegenError;
use crate::arch::{Arch, MathInstr, MathKind, Vendor};
use crate::problem::DType;
use std::fmt;

/// A GPU to compile for: an arch of the table ([`Arch`]), whose rows say everything codegen
/// needs (vendor and so backend, warp size, matrix instructions, features, LLVM names).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Target {
    arch: Arch,
}

impl Target {
    /// The target for `arch` ([`check`](Self::check) says whether the kernels can run on it;
    /// compiling checks).
    pub const fn of(arch: Arch) -> Target {
        Target { arch }
    }

    /// Parses an arch name as the CLI takes it (`sm_90`, `sm_90a`, `gfx90a`, …): an arch of the
    /// table, else an error naming the known ones.
    pub fn parse(arch: &str) -> Result<Target, CodegenError> {
        let a = Arch::from_name(arch).map_err(|e| CodegenError::Target {
            target: arch.to_string(),
            reason: e.to_string(),
        })?;
        let t = Target::of(a);
        t.check()?;
        Ok(t)
    }

    /// The arch.
    pub fn arch(&self) -> &Arch {
        &self.arch
    }

    /// Rejects archs the kernels cannot run on: the backends and kernel paths need a warp of
    /// 32 with `mma.sync` read through `ldmatrix` on NVIDIA, and a wave64 with square MFMA
    /// shapes of 16 or 32 rows on AMD.
    pub fn check(&self) -> Result<(), CodegenError> {
        let a = &self.arch;
        let bad = |reason: String| {
            Err(CodegenError::Target {
                target: self.to_string(),
                reason,
            })
        };
        let warp = match a.vendor {
            Vendor::Nvidia => 32,
            Vendor::Amd => 64,
        };
        if a.warp_size != warp {
            return bad(format!(
                "the {} backend needs a warp of {warp} threads",
                a.vendor.name()
            ));
        }
        for dt in [DType::F32, DType::F16, DType::BF16] {
            for i in a.math(dt) {
                let ok = match (i.kind, a.vendor) {
                    (MathKind::Fma, Vendor::Nvidia) => true,
                    (MathKind::MmaSync, Vendor::Nvidia) => {
                        a.features.ldmatrix && (i.m, i.n, i.k) == (16, 8, 16) && dt != DType::F32
                    }
                    (MathKind::Mfma, Vendor::Amd) => matches!(i.m, 16 | 32) && i.n == i.m,
                    _ => false,
                };
                if !ok {
                    return bad(format!(
                        "no kernel path for {i} with {} operands on {}",
                        dt.name(),
                        a.vendor.name()
                    ));
                }
            }
        }
        Ok(())
    }

    /// Threads that execute in lockstep.
    pub fn warp_size(&self) -> u32 {
        self.arch.warp_size
    }

    /// The matrix instructions for `dt`, preferred first, as [`crate::arch::Arch::math`] lists
    /// them. Empty: scalar FMA (f32 on NVIDIA: TF32 would not meet the f32 tolerance).
    #[cfg(test)]
    pub(crate) fn matrix_units(&self, dt: DType) -> Vec<MatrixUnit> {
        self.arch
            .math(dt)
            .iter()
            .filter_map(MatrixUnit::of)
            .collect()
    }

    /// Whether global→shared copies can bypass registers (`cp.async`).
    pub(crate) fn has_cp_async(&self) -> bool {
        self.arch.features.cp_async
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.arch.name)
    }
}

/// A warp-level matrix multiply-accumulate instruction with f32 accumulators.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MatrixUnit {
    /// NVIDIA `mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}`, fragments from `ldmatrix`.
    Mma16816,
    /// AMD `v_mfma_f32_{m}x{m}x{k}` (one block, wave64): `m` = 32 or 16.
    Mfma {
        /// Rows and columns of one instruction.
        m: u32,
        /// Reduction depth of one instruction.
        k: u32,
    },
}

impl MatrixUnit {
    /// The unit that executes `i`, `None` for FMA (see [`Target::check`] for the shapes the
    /// backends take).
    pub fn of(i: &MathInstr) -> Option<MatrixUnit> {
        match i.kind {
            MathKind::Fma => None,
            MathKind::MmaSync => Some(MatrixUnit::Mma16816),
            MathKind::Mfma => Some(MatrixUnit::Mfma { m: i.m, k: i.k }),
        }
    }
    /// MFMA: elements of A (and B) per lane; the 64 lanes form 64/m groups along K.
    pub fn per_lane(&self) -> u32 {
        match *self {
            MatrixUnit::Mma16816 => 8,
            MatrixUnit::Mfma { m, k } => k * m / 64,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_and_display_round_trip() {
        for s in ["sm_80", "sm_90", "gfx90a", "gfx942", "gfx908"] {
            assert_eq!(Target::parse(s).unwrap().to_string(), s);
        }
        assert_eq!(Target::parse("sm_90a").unwrap(), Target::of(Arch::SM_90));
        assert!(Target::parse("sm_70").is_err());
        let e = Target::parse("sm_86").unwrap_err().to_string();
        assert!(e.contains("known architectures are sm_80, sm_90"), "{e}");
        assert!(Target::parse("gfx1100").is_err());
        assert!(Target::parse("cuda").is_err());
    }

    #[test]
    fn matrix_units() {
        let h = Target::of(Arch::SM_90);
        assert_eq!(h.matrix_units(DType::BF16), &[MatrixUnit::Mma16816]);
        assert!(h.matrix_units(DType::F32).is_empty());
        let m = Target::of(Arch::GFX908);
        assert_eq!(
            m.matrix_units(DType::BF16)[0],
            MatrixUnit::Mfma { m: 32, k: 4 }
        );
        assert_eq!(
            m.matrix_units(DType::F16)[1],
            MatrixUnit::Mfma { m: 16, k: 16 }
        );
        assert_eq!(MatrixUnit::Mfma { m: 16, k: 4 }.per_lane(), 1);
        assert_eq!(MatrixUnit::Mfma { m: 32, k: 8 }.per_lane(), 4);
    }
}
