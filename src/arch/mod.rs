//! GPU architectures: every hardware fact the tuner uses, in one table with its sources.
//!
//! Legality, the register and shared-memory estimates, the search-space choice, the code
//! generator's target and the cost model all read an [`Arch`]: its limits, its [`Features`]
//! (which kernel paths exist), its matrix instructions, how LLVM names it ([`Isa`]) and its
//! throughput [`Rates`]. The rows are in `table.rs`, with where each number comes from; the
//! rule for "does this tile fit the arch's matrix unit" that legality, planning and the cost
//! model share is [`fit`]. Nothing outside this module names an arch to decide behaviour: an
//! arch the table lacks is an error ([`UnknownArch`]), never another arch's numbers.

use crate::problem::DType;
use std::fmt;

mod features;
pub mod fit;
mod rates;
mod table;
pub mod ws;

pub use features::{Features, Isa, RegisterRealloc, WarpgroupMma};
pub use rates::Rates;

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

/// The matrix (or FMA) instructions per element type, preferred first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MathTable {
    /// f32 operands.
    pub f32: &'static [MathInstr],
    /// f16 operands (f32 accumulation).
    pub f16: &'static [MathInstr],
    /// bf16 operands (f32 accumulation).
    pub bf16: &'static [MathInstr],
}

/// Blocks a launch grid may have along x, y and z: 2^31 − 1, 65535, 65535 on every GPU this
/// crate targets (CUDA Programming Guide, "Technical Specifications"; HIP's `hipModuleLaunchKernel`
/// takes the same). Codegen rejects a plan past it; the runtimes check again before launching.
pub const MAX_GRID: [u32; 3] = [i32::MAX as u32, 65535, 65535];

/// One GPU target: its limits, features, instruction set and rates. Values are per block
/// (workgroup) unless named per SM/CU. The fields are public so that an arch can be described
/// outside the table too (a test's made-up arch); the tuner then treats it like any row.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Arch {
    /// Canonical name (`sm_90`, `gfx90a`, …), as the database files are named.
    pub name: &'static str,
    /// The product the defaults describe (CU count, rates), for reports.
    pub product: &'static str,
    /// Maker: decides the backend (NVPTX or AMDGPU) and the default search space.
    pub vendor: Vendor,
    /// Threads per warp (wave).
    pub warp_size: u32,
    /// Shared memory (LDS) one block may use, bytes (the opt-in maximum on NVIDIA).
    pub smem_per_block: u32,
    /// Shared memory (LDS) per SM (CU), bytes; bounds how many blocks are resident.
    pub smem_per_sm: u32,
    /// Threads per block.
    pub max_threads_per_block: u32,
    /// Resident threads per SM (CU).
    pub max_threads_per_sm: u32,
    /// Resident blocks (workgroups) per SM (CU).
    pub max_blocks_per_sm: u32,
    /// 32-bit registers one thread may use (on AMD: ArchVGPRs + AccVGPRs per lane).
    pub max_regs_per_thread: u32,
    /// 32-bit registers per SM (CU), all lanes together.
    pub regs_per_sm: u32,
    /// SMs (CUs) of the default product; a device query overrides it when a GPU is present.
    pub compute_units: u32,
    /// Widest global load or store one thread can issue, bytes.
    pub max_vector_bytes: u32,
    /// LLVM triple, CPU and features.
    pub isa: Isa,
    /// Instructions that decide which kernel paths exist.
    pub features: Features,
    /// Matrix (or FMA) instructions per element type; see [`Arch::math`].
    pub math: MathTable,
    /// Data-sheet throughput of the default product, for the cost model.
    pub rates: Rates,
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
    /// Looks an architecture up by name. Case-insensitive; accepts an arch-specific CPU name
    /// (`sm_90a`: the same limits) and AMD target ids with feature suffixes
    /// (`gfx90a:sramecc+:xnack-`).
    pub fn from_name(name: &str) -> Result<Arch, UnknownArch> {
        let lower = name.trim().to_ascii_lowercase();
        let base = lower.split(':').next().unwrap_or("");
        Arch::ALL
            .iter()
            .find(|a| a.name == base || a.isa.cpu_arch_specific == Some(base))
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
            DType::F32 => self.math.f32,
            DType::F16 => self.math.f16,
            DType::BF16 => self.math.bf16,
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
