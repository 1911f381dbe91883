//! GPU architectures: the hardware limits that decide which tuning parameters can run at all.
//!
//! Legality, the register and shared-memory estimates, the search-space choice and the code
//! generator's target all read these numbers, so they live in one table with their sources:
//!
//! - NVIDIA: CUDA C++ Programming Guide, "Technical Specifications per Compute Capability"
//!   (shared memory per block opt-in 163 KB on 8.0 and 227 KB on 9.0; per SM 164 / 228 KB;
//!   64 K 32-bit registers per SM, 255 per thread, 1024 threads per block); PTX ISA,
//!   "Warp-level matrix multiply-accumulate instructions" (`mma.sync.m16n8k16` for f16/bf16);
//!   SM counts from the A100 and H100 whitepapers (A100 108, H100/H200 SXM5 132).
//! - AMD: CDNA / CDNA2 / CDNA3 ISA reference guides and LLVM's AMDGPUUsage (64 KB LDS per
//!   workgroup and per CU, wave64, 1024 work-items per workgroup, 512 VGPRs per lane: 256
//!   ArchVGPR + 256 AccVGPR on gfx908, one unified file of 512 on gfx90a/gfx942, 4 SIMDs per
//!   CU); MFMA shapes from the same ISA guides (`v_mfma_f32_32x32x8f16`, `…_16x16x16f16`,
//!   `…_32x32x8bf16_1k` from gfx90a, gfx908 only has `…_32x32x4bf16` / `…_16x16x8bf16`,
//!   `…_32x32x2f32`, `…_16x16x4f32`); CU counts from the product pages (MI100 120, MI210 104,
//!   MI250X 110 per GCD, MI300X 304).
//! - Target triples and CPU names as LLVM 19 spells them.

use crate::problem::DType;
use std::fmt;

/// The GPU maker; decides the kernel flavour (warps vs waves, mma.sync vs MFMA) and the
/// default search space.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Vendor {
    /// CUDA GPUs, NVPTX backend.
    Nvidia,
    /// ROCm GPUs, AMDGPU backend.
    Amd,
}

impl Vendor {
    /// Lowercase name, as used for the default search-space file.
    pub fn name(self) -> &'static str {
        match self {
            Vendor::Nvidia => "nvidia",
            Vendor::Amd => "amd",
        }
    }
}

/// What executes the inner product of a warp tile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MathKind {
    /// Scalar fused multiply-adds per thread (no matrix unit for this type).
    Fma,
    /// NVIDIA warp-level `mma.sync`.
    MmaSync,
    /// AMD matrix fused multiply-add (matrix cores).
    Mfma,
}

/// One matrix instruction shape: a warp (wave) tile must be a whole number of them, so the
/// shape is what legality checks the warp tile and `block_k` against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MathInstr {
    /// Which unit.
    pub kind: MathKind,
    /// Rows per instruction.
    pub m: u32,
    /// Columns per instruction.
    pub n: u32,
    /// Reduction depth per instruction.
    pub k: u32,
    /// The instruction as the ISA spells it, for reports and the code generator.
    pub mnemonic: &'static str,
}

impl fmt::Display for MathInstr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({}x{}x{})", self.mnemonic, self.m, self.n, self.k)
    }
}

const fn instr(kind: MathKind, m: u32, n: u32, k: u32, mnemonic: &'static str) -> MathInstr {
    MathInstr {
        kind,
        m,
        n,
        k,
        mnemonic,
    }
}

/// f32 on NVIDIA is SIMT FMA: any warp tile that is a multiple of 4×4 per thread group.
const NV_F32: &[MathInstr] = &[instr(MathKind::Fma, 4, 4, 1, "fma.rn.f32")];
const NV_F16: &[MathInstr] = &[instr(
    MathKind::MmaSync,
    16,
    8,
    16,
    "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
)];
const NV_BF16: &[MathInstr] = &[instr(
    MathKind::MmaSync,
    16,
    8,
    16,
    "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
)];
const AMD_F32: &[MathInstr] = &[
    instr(MathKind::Mfma, 32, 32, 2, "v_mfma_f32_32x32x2f32"),
    instr(MathKind::Mfma, 16, 16, 4, "v_mfma_f32_16x16x4f32"),
];
const AMD_F16: &[MathInstr] = &[
    instr(MathKind::Mfma, 32, 32, 8, "v_mfma_f32_32x32x8f16"),
    instr(MathKind::Mfma, 16, 16, 16, "v_mfma_f32_16x16x16f16"),
];
/// gfx908 predates the `_1k` bf16 instructions: half the depth per instruction.
const GFX908_BF16: &[MathInstr] = &[
    instr(MathKind::Mfma, 32, 32, 4, "v_mfma_f32_32x32x4bf16"),
    instr(MathKind::Mfma, 16, 16, 8, "v_mfma_f32_16x16x8bf16"),
];
const AMD_BF16_1K: &[MathInstr] = &[
    instr(MathKind::Mfma, 32, 32, 8, "v_mfma_f32_32x32x8bf16_1k"),
    instr(MathKind::Mfma, 16, 16, 16, "v_mfma_f32_16x16x16bf16_1k"),
];

/// One GPU target and its limits. Values are per block (workgroup) unless named per SM/CU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Arch {
    /// Canonical name (`sm_90`, `gfx90a`, …), as the database files are named.
    pub name: &'static str,
    /// The product the defaults describe (CU count), for reports.
    pub product: &'static str,
    /// Maker.
    pub vendor: Vendor,
    /// Threads per warp (wave).
    pub warp_size: u32,
    /// Shared memory (LDS) one block may use, bytes (the opt-in maximum on NVIDIA).
    pub smem_per_block: u32,
    /// Shared memory (LDS) per SM (CU), bytes; bounds how many blocks are resident.
    pub smem_per_sm: u32,
    /// Threads per block.
    pub max_threads_per_block: u32,
    /// 32-bit registers one thread may use (on AMD: ArchVGPRs + AccVGPRs per lane).
    pub max_regs_per_thread: u32,
    /// 32-bit registers per SM (CU), all lanes together.
    pub regs_per_sm: u32,
    /// SMs (CUs) of the default product; a device query overrides it when a GPU is present.
    pub compute_units: u32,
    /// Widest global load or store one thread can issue, bytes.
    pub max_vector_bytes: u32,
    /// LLVM target triple.
    pub triple: &'static str,
    /// LLVM target CPU.
    pub cpu: &'static str,
    mma_f32: &'static [MathInstr],
    mma_f16: &'static [MathInstr],
    mma_bf16: &'static [MathInstr],
}

/// An architecture name this crate does not describe.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown arch '{name}': known architectures are {known}")]
pub struct UnknownArch {
    /// The name given.
    pub name: String,
    /// The known names, comma-separated.
    pub known: String,
}

impl Arch {
    /// NVIDIA A100 (Ampere).
    pub const SM_80: Arch = Arch {
        name: "sm_80",
        product: "A100 SXM4",
        vendor: Vendor::Nvidia,
        warp_size: 32,
        smem_per_block: 163 * 1024,
        smem_per_sm: 164 * 1024,
        max_threads_per_block: 1024,
        max_regs_per_thread: 255,
        regs_per_sm: 64 * 1024,
        compute_units: 108,
        max_vector_bytes: 16,
        triple: "nvptx64-nvidia-cuda",
        cpu: "sm_80",
        mma_f32: NV_F32,
        mma_f16: NV_F16,
        mma_bf16: NV_BF16,
    };
    /// NVIDIA H100 / H200 (Hopper).
    pub const SM_90: Arch = Arch {
        name: "sm_90",
        product: "H100/H200 SXM5",
        vendor: Vendor::Nvidia,
        warp_size: 32,
        smem_per_block: 227 * 1024,
        smem_per_sm: 228 * 1024,
        max_threads_per_block: 1024,
        max_regs_per_thread: 255,
        regs_per_sm: 64 * 1024,
        compute_units: 132,
        max_vector_bytes: 16,
        triple: "nvptx64-nvidia-cuda",
        cpu: "sm_90",
        mma_f32: NV_F32,
        mma_f16: NV_F16,
        mma_bf16: NV_BF16,
    };
    /// AMD MI100 (CDNA1).
    pub const GFX908: Arch = Arch {
        name: "gfx908",
        product: "MI100",
        vendor: Vendor::Amd,
        warp_size: 64,
        smem_per_block: 64 * 1024,
        smem_per_sm: 64 * 1024,
        max_threads_per_block: 1024,
        max_regs_per_thread: 512,
        regs_per_sm: 4 * 512 * 64,
        compute_units: 120,
        max_vector_bytes: 16,
        triple: "amdgcn-amd-amdhsa",
        cpu: "gfx908",
        mma_f32: AMD_F32,
        mma_f16: AMD_F16,
        mma_bf16: GFX908_BF16,
    };
    /// AMD MI210 / MI250X (CDNA2); the default CU count is one MI250X GCD (MI210: 104).
    pub const GFX90A: Arch = Arch {
        name: "gfx90a",
        product: "MI250X (one GCD)",
        vendor: Vendor::Amd,
        warp_size: 64,
        smem_per_block: 64 * 1024,
        smem_per_sm: 64 * 1024,
        max_threads_per_block: 1024,
        max_regs_per_thread: 512,
        regs_per_sm: 4 * 512 * 64,
        compute_units: 110,
        max_vector_bytes: 16,
        triple: "amdgcn-amd-amdhsa",
        cpu: "gfx90a",
        mma_f32: AMD_F32,
        mma_f16: AMD_F16,
        mma_bf16: AMD_BF16_1K,
    };
    /// AMD MI300X (CDNA3).
    pub const GFX942: Arch = Arch {
        name: "gfx942",
        product: "MI300X",
        vendor: Vendor::Amd,
        warp_size: 64,
        smem_per_block: 64 * 1024,
        smem_per_sm: 64 * 1024,
        max_threads_per_block: 1024,
        max_regs_per_thread: 512,
        regs_per_sm: 4 * 512 * 64,
        compute_units: 304,
        max_vector_bytes: 16,
        triple: "amdgcn-amd-amdhsa",
        cpu: "gfx942",
        mma_f32: AMD_F32,
        mma_f16: AMD_F16,
        mma_bf16: AMD_BF16_1K,
    };

    /// Every described architecture, for listings and exhaustive tests.
    pub const ALL: [Arch; 5] = [
        Arch::SM_80,
        Arch::SM_90,
        Arch::GFX908,
        Arch::GFX90A,
        Arch::GFX942,
    ];

    /// Looks an architecture up by name. Case-insensitive; accepts `sm_90a` (the wgmma variant
    /// has the same limits) and AMD target ids with feature suffixes (`gfx90a:sramecc+:xnack-`).
    pub fn from_name(name: &str) -> Result<Arch, UnknownArch> {
        let lower = name.trim().to_ascii_lowercase();
        let base = lower.split(':').next().unwrap_or("");
        let base = if base == "sm_90a" { "sm_90" } else { base };
        Arch::ALL
            .iter()
            .find(|a| a.name == base)
            .copied()
            .ok_or_else(|| UnknownArch {
                name: name.to_string(),
                known: Arch::ALL.map(|a| a.name).join(", "),
            })
    }

    /// The matrix (or FMA) instructions a warp tile of this element type can be built from,
    /// preferred first.
    pub fn math(&self, dtype: DType) -> &'static [MathInstr] {
        match dtype {
            DType::F32 => self.mma_f32,
            DType::F16 => self.mma_f16,
            DType::BF16 => self.mma_bf16,
        }
    }

    /// The same arch with another SM (CU) count, as a device query reports it.
    pub fn with_compute_units(&self, compute_units: u32) -> Arch {
        Arch {
            compute_units,
            ..*self
        }
    }
}

impl fmt::Display for Arch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name)
    }
}

impl std::str::FromStr for Arch {
    type Err = UnknownArch;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Arch::from_name(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookup_by_name_and_error_lists_known() {
        assert_eq!(Arch::from_name("sm_90").unwrap().compute_units, 132);
        assert_eq!(Arch::from_name("SM_80").unwrap().smem_per_block, 166_912);
        assert_eq!(Arch::from_name("sm_90a").unwrap().name, "sm_90");
        assert_eq!(
            Arch::from_name("gfx90a:sramecc+:xnack-").unwrap().name,
            "gfx90a"
        );
        let e = Arch::from_name("sm_75").unwrap_err();
        assert_eq!(
            e.to_string(),
            "unknown arch 'sm_75': known architectures are sm_80, sm_90, gfx908, gfx90a, gfx942"
        );
    }

    #[test]
    fn limits_are_consistent() {
        for a in Arch::ALL {
            assert!(a.smem_per_block <= a.smem_per_sm, "{a}");
            assert!(a.max_regs_per_thread * a.warp_size <= a.regs_per_sm, "{a}");
            let expect_warp = if a.vendor == Vendor::Nvidia { 32 } else { 64 };
            assert_eq!(a.warp_size, expect_warp);
            for d in [DType::F32, DType::F16, DType::BF16] {
                assert!(!a.math(d).is_empty());
            }
        }
        assert_eq!(Arch::GFX908.math(DType::BF16)[0].k, 4);
        assert_eq!(Arch::GFX90A.math(DType::BF16)[0].k, 8);
        assert_eq!(Arch::SM_90.math(DType::F32)[0].kind, MathKind::Fma);
        assert_eq!(Arch::GFX942.regs_per_sm, 131_072);
    }
}
