//! What a kernel is compiled for: the public [`Target`] and the facts the kernel logic needs
//! from it (warp size, matrix unit, async copies). How the kernels reach a target's
//! instructions is [`super::spec`].

use super::CodegenError;
use crate::problem::DType;
use std::fmt;

/// A GPU to compile for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Target {
    /// NVIDIA, by compute capability (80 = A100, 90 = H100/H200).
    Nvptx {
        /// Compute capability × 10 + minor, e.g. 90.
        sm: u32,
    },
    /// AMD CDNA, by LLVM processor name.
    Amdgpu {
        /// `gfx908`, `gfx90a`, `gfx940`, `gfx941` or `gfx942`.
        gfx: &'static str,
    },
}

/// The AMD processors with MFMA that LLVM 19 knows (the tuner's AMD targets).
const GFX: [&str; 5] = ["gfx908", "gfx90a", "gfx940", "gfx941", "gfx942"];

impl Target {
    /// Parses an arch name as the CLI takes it (`sm_90`, `sm_80`, `gfx90a`, …).
    pub fn parse(arch: &str) -> Result<Target, CodegenError> {
        let bad = |reason: &str| CodegenError::Target {
            target: arch.to_string(),
            reason: reason.to_string(),
        };
        if let Some(sm) = arch.strip_prefix("sm_") {
            let sm: u32 = sm
                .trim_end_matches('a')
                .parse()
                .map_err(|_| bad("expected sm_<number>"))?;
            let t = Target::Nvptx { sm };
            t.check()?;
            return Ok(t);
        }
        GFX.iter()
            .find(|&&g| g == arch)
            .map(|&gfx| Target::Amdgpu { gfx })
            .ok_or_else(|| bad("unknown arch (expected sm_80, sm_90 or one of gfx908, gfx90a, gfx940, gfx941, gfx942)"))
    }

    /// Rejects targets the kernels cannot run on (the tensor-core and async-copy paths need
    /// sm_80 or newer; AMD needs an MFMA-capable CDNA part).
    pub fn check(&self) -> Result<(), CodegenError> {
        match *self {
            Target::Nvptx { sm } if sm < 80 => Err(CodegenError::Target {
                target: self.to_string(),
                reason: "sm_80 or newer is required (mma.sync bf16, cp.async)".into(),
            }),
            Target::Amdgpu { gfx } if !GFX.contains(&gfx) => Err(CodegenError::Target {
                target: self.to_string(),
                reason: "not an MFMA-capable CDNA processor known to LLVM 19".into(),
            }),
            _ => Ok(()),
        }
    }

    /// Threads that execute in lockstep: 32 on NVIDIA, 64 on CDNA.
    pub fn warp_size(&self) -> u32 {
        match self {
            Target::Nvptx { .. } => 32,
            Target::Amdgpu { .. } => 64,
        }
    }

    /// The matrix instructions for `dt`, preferred first (the first that tiles the warp tile
    /// and `block_k` is used; the same order as [`crate::arch::Arch::math`]). Empty: scalar FMA
    /// (f32 on NVIDIA: TF32 would not meet the f32 tolerance).
    pub(crate) fn matrix_units(&self, dt: DType) -> &'static [MatrixUnit] {
        use MatrixUnit::{Mfma, Mma16816};
        match (self, dt) {
            (Target::Nvptx { .. }, DType::F32) => &[],
            (Target::Nvptx { .. }, _) => &[Mma16816],
            (Target::Amdgpu { .. }, DType::F32) => &[Mfma { m: 32, k: 2 }, Mfma { m: 16, k: 4 }],
            (Target::Amdgpu { gfx: "gfx908" }, DType::BF16) => {
                &[Mfma { m: 32, k: 4 }, Mfma { m: 16, k: 8 }]
            }
            (Target::Amdgpu { .. }, _) => &[Mfma { m: 32, k: 8 }, Mfma { m: 16, k: 16 }],
        }
    }

    /// Whether global→shared copies can bypass registers (`cp.async`, sm_80+).
    pub(crate) fn has_cp_async(&self) -> bool {
        matches!(self, Target::Nvptx { .. })
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Nvptx { sm } => write!(f, "sm_{sm}"),
            Target::Amdgpu { gfx } => f.write_str(gfx),
        }
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
    /// (rows, columns, depth) of one instruction: what the warp tile and `block_k` must be
    /// multiples of. The B fragments of `mma.sync` are loaded two n8 tiles at a time.
    pub fn shape(&self) -> (u32, u32, u32) {
        match *self {
            MatrixUnit::Mma16816 => (16, 16, 16),
            MatrixUnit::Mfma { m, k } => (m, m, k),
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
        assert_eq!(Target::parse("sm_90a").unwrap(), Target::Nvptx { sm: 90 });
        assert!(Target::parse("sm_70").is_err());
        assert!(Target::parse("gfx1100").is_err());
        assert!(Target::parse("cuda").is_err());
    }

    #[test]
    fn matrix_units() {
        let h = Target::Nvptx { sm: 90 };
        assert_eq!(h.matrix_units(DType::BF16), &[MatrixUnit::Mma16816]);
        assert!(h.matrix_units(DType::F32).is_empty());
        let m = Target::Amdgpu { gfx: "gfx908" };
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
