//! What an arch can execute beyond plain loads, stores and arithmetic, and how LLVM is told
//! which arch it compiles for. The kernels pick their paths from these flags (never from an
//! arch name), so a new arch gets the paths its row enables and no other.

use crate::problem::DType;

/// Instructions whose presence changes which kernels (or which kernel paths) can run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Features {
    /// Asynchronous global→shared copies that bypass registers (NVIDIA `cp.async`, sm_80+;
    /// PTX ISA "cp.async"). Without it a tile goes global → registers → shared memory.
    pub cp_async: bool,
    /// `ldmatrix` (sm_75+; PTX ISA "ldmatrix"): how the `mma.sync` path reads its fragments.
    pub ldmatrix: bool,
    /// Warpgroup MMA (`wgmma.mma_async`, sm_90a; PTX ISA "Asynchronous Warpgroup Level Matrix
    /// Multiply-Accumulate"), with the shapes it offers; `None` where there is none.
    pub wgmma: Option<WarpgroupMma>,
    /// Bulk tensor copies through a tensor map (TMA, `cp.async.bulk.tensor`, sm_90; PTX ISA
    /// "cp.async.bulk.tensor"). No kernel uses it yet.
    pub tma: bool,
    /// Per-warpgroup register reallocation (`setmaxnreg`, sm_90a; PTX ISA "setmaxnreg"), with
    /// its limits; `None` where there is none. The warp-specialised main loop (`ld=ws`) uses it.
    pub setmaxnreg: Option<RegisterRealloc>,
    /// Thread-block clusters and distributed shared memory (sm_90; CUDA C++ Programming Guide,
    /// "Thread Block Clusters"). No kernel uses them yet.
    pub clusters: bool,
}

/// The warpgroup MMA instruction family: `wgmma.mma_async.sync.aligned.m{m}n{n}k{k}` with
/// f32 accumulators, four warps together computing an `m × n` tile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct WarpgroupMma {
    /// Rows of every shape (64).
    pub m: u32,
    /// N comes in steps of this many columns (8) ...
    pub n_step: u32,
    /// ... up to this many (256).
    pub n_max: u32,
    /// Reduction depth of one instruction, bytes of an operand row (16 f16/bf16 elements).
    pub k_bytes: u32,
    /// Element types with f32 accumulation that the kernels use it for.
    pub dtypes: &'static [DType],
}

/// `setmaxnreg.{inc,dec}.sync.aligned.u32 n`: a warpgroup changes its per-thread register
/// count at run time, drawing from or returning to the block's pool, which is what the kernel
/// was launched with (its register count at entry × threads). The pool is only known when the
/// kernel declares a cap at entry (`.maxnreg`); without one ptxas ignores the instruction
/// (warning C7508).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RegisterRealloc {
    /// Warps that execute one `setmaxnreg` together (a warpgroup, 4).
    pub warps: u32,
    /// Smallest count `n` may be (24).
    pub min: u32,
    /// Largest count (256).
    pub max: u32,
    /// `n` is a multiple of this (8), and so is the register count at entry.
    pub granule: u32,
    /// What a warpgroup that only issues loads keeps (40: CUTLASS's sm90 load warpgroups).
    pub producer: u32,
    /// Most a multiplying warpgroup asks for (232: CUTLASS's sm90 MMA warpgroups).
    pub consumer_max: u32,
}

/// How LLVM names the arch, and which instruction-set version the module declares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Isa {
    /// LLVM target triple.
    pub triple: &'static str,
    /// LLVM target CPU.
    pub cpu: &'static str,
    /// The CPU to compile for when a module uses arch-specific instructions (`wgmma`,
    /// `setmaxnreg`): `sm_90a`, whose code runs on that arch only. `None`: there are none.
    pub cpu_arch_specific: Option<&'static str>,
    /// LLVM target features: the PTX ISA version on NVIDIA (`+ptx80` = PTX ISA 8.0, the first
    /// to cover sm_90 and `wgmma`; the driver JIT-compiles it for newer GPUs), none on AMD.
    pub features: &'static str,
}

impl Isa {
    /// The CPU for a module that does (`arch_specific`) or does not use arch-specific
    /// instructions.
    pub fn cpu_for(&self, arch_specific: bool) -> &'static str {
        match (arch_specific, self.cpu_arch_specific) {
            (true, Some(cpu)) => cpu,
            _ => self.cpu,
        }
    }
}
