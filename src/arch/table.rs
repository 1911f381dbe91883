//! The rows: one constant per described GPU, every number with where it comes from. Adding an
//! arch is one more row here (and a search-space file if no vendor default fits); everything
//! else (legality, planning, codegen target, cost model) reads the row.
//!
//! Sources:
//! - NVIDIA limits: CUDA C++ Programming Guide, "Technical Specifications per Compute
//!   Capability" (shared memory per block opt-in 163 KB on 8.0 and 227 KB on 9.0; per SM 164 /
//!   228 KB; 64 K 32-bit registers per SM, 255 per thread, 1024 threads per block, 2048
//!   resident threads and 32 resident blocks per SM); PTX ISA, "Warp-level matrix
//!   multiply-accumulate instructions" (`mma.sync.m16n8k16` for f16/bf16) and "Asynchronous
//!   Warpgroup Level Matrix Multiply-Accumulate" (`wgmma` m64nNk16, N a multiple of 8 up to
//!   256, sm_90a); SM counts from the A100 and H100 whitepapers (A100 108, H100/H200 SXM5
//!   132).
//! - NVIDIA rates: A100 SXM4 data sheet (312 TFLOP/s dense f16/bf16 tensor, 19.5 f32, 2.0 TB/s
//!   HBM2e, 1.41 GHz boost); H100/H200 SXM5 data sheets (989 dense f16/bf16 tensor, 67 f32,
//!   4.8 TB/s HBM3e on H200, 1.98 GHz boost). The data sheets give no L2 bandwidth: 5 and
//!   10 TB/s are the model's estimates. The `mma.sync` fraction 0.6 is Hopper's (see
//!   [`Rates::mma_sync_fraction`]); the model has always applied it to A100 as well, which
//!   scales every A100 f16/bf16 estimate alike and so leaves its ranking unchanged.
//! - AMD limits: CDNA / CDNA2 / CDNA3 ISA reference guides and LLVM's AMDGPUUsage (64 KB LDS
//!   per workgroup and per CU, wave64, 1024 work-items per workgroup, 512 VGPRs per lane: 256
//!   ArchVGPR + 256 AccVGPR on gfx908, one unified file of 512 on gfx90a/gfx942, 4 SIMDs per
//!   CU, 2048 work-items (32 wave64) per CU; 16 resident workgroups per CU is the figure the
//!   cost model uses); MFMA shapes from the same ISA guides (`v_mfma_f32_32x32x8f16`,
//!   `…_16x16x16f16`, `…_32x32x8bf16_1k` from gfx90a, gfx908 only has `…_32x32x4bf16` /
//!   `…_16x16x8bf16`, `…_32x32x2f32`, `…_16x16x4f32`); CU counts from the product pages
//!   (MI100 120, MI210 104, MI250X 110 per GCD, MI300X 304).
//! - AMD rates: MI100 data sheet (184.6 TFLOP/s f16 matrix, 92.3 bf16, 46.1 f32 matrix,
//!   1.23 TB/s, 1.502 GHz); MI250X data sheet halved for one GCD (383 f16/bf16, 95.7 f32
//!   matrix, 3.2 TB/s, 1.7 GHz); MI300X data sheet (1307.4 f16/bf16 dense, which the row rounds to
//!   1307, 163.4 f32 matrix, 5.3 TB/s, 2.1 GHz). L2 bandwidths (3, 4, 12 TB/s) are the model's estimates.
//! - Target triples, CPU names and the PTX feature as LLVM 19 spells them.

use super::features::{Features, Isa, RegisterRealloc, WarpgroupMma};
use super::rates::Rates;
use super::{Arch, MathInstr, MathKind, MathTable, Vendor};
use crate::problem::DType;

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

/// Hopper's `wgmma`: m64nNk16 for f16/bf16 (16 elements = 32 bytes of K per instruction).
const HOPPER_WGMMA: WarpgroupMma = WarpgroupMma {
    m: 64,
    n_step: 8,
    n_max: 256,
    k_bytes: 32,
    dtypes: &[DType::F16, DType::BF16],
};

/// Hopper's `setmaxnreg` (PTX ISA 8.0 "setmaxnreg": 24..=256 in steps of 8, per warpgroup);
/// the producer and consumer counts are CUTLASS's sm90 warp-specialised kernels' (40 / 232).
const HOPPER_SETMAXNREG: RegisterRealloc = RegisterRealloc {
    warps: 4,
    min: 24,
    max: 256,
    granule: 8,
    producer: 40,
    consumer_max: 232,
};

/// Ampere: asynchronous copies and `ldmatrix`, nothing of Hopper's.
const AMPERE_FEATURES: Features = Features {
    cp_async: true,
    ldmatrix: true,
    wgmma: None,
    tma: false,
    setmaxnreg: None,
    clusters: false,
};

/// CDNA: loads go through VGPRs, matrix cores through MFMA (in [`Arch::math`]).
const CDNA_FEATURES: Features = Features {
    cp_async: false,
    ldmatrix: false,
    wgmma: None,
    tma: false,
    setmaxnreg: None,
    clusters: false,
};

const fn amd_isa(cpu: &'static str) -> Isa {
    Isa {
        triple: "amdgcn-amd-amdhsa",
        cpu,
        cpu_arch_specific: None,
        features: "",
    }
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
        max_threads_per_sm: 2048,
        max_blocks_per_sm: 32,
        max_regs_per_thread: 255,
        regs_per_sm: 64 * 1024,
        compute_units: 108,
        max_vector_bytes: 16,
        isa: Isa {
            triple: "nvptx64-nvidia-cuda",
            cpu: "sm_80",
            cpu_arch_specific: None,
            features: "+ptx80",
        },
        features: AMPERE_FEATURES,
        math: MathTable {
            f32: NV_F32,
            f16: NV_F16,
            bf16: NV_BF16,
        },
        rates: Rates {
            f16_tflops: 312.0,
            bf16_tflops: 312.0,
            f32_tflops: 19.5,
            mma_sync_fraction: 0.6,
            dram_tbps: 2.0,
            l2_tbps: 5.0,
            clock_ghz: 1.41,
            issue_per_clk: 128.0,
        },
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
        max_threads_per_sm: 2048,
        max_blocks_per_sm: 32,
        max_regs_per_thread: 255,
        regs_per_sm: 64 * 1024,
        compute_units: 132,
        max_vector_bytes: 16,
        isa: Isa {
            triple: "nvptx64-nvidia-cuda",
            cpu: "sm_90",
            cpu_arch_specific: Some("sm_90a"),
            features: "+ptx80",
        },
        features: Features {
            cp_async: true,
            ldmatrix: true,
            wgmma: Some(HOPPER_WGMMA),
            tma: true,
            setmaxnreg: Some(HOPPER_SETMAXNREG),
            clusters: true,
        },
        math: MathTable {
            f32: NV_F32,
            f16: NV_F16,
            bf16: NV_BF16,
        },
        rates: Rates {
            f16_tflops: 989.0,
            bf16_tflops: 989.0,
            f32_tflops: 67.0,
            mma_sync_fraction: 0.6,
            dram_tbps: 4.8,
            l2_tbps: 10.0,
            clock_ghz: 1.98,
            issue_per_clk: 128.0,
        },
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
        max_threads_per_sm: 2048,
        max_blocks_per_sm: 16,
        max_regs_per_thread: 512,
        regs_per_sm: 4 * 512 * 64,
        compute_units: 120,
        max_vector_bytes: 16,
        isa: amd_isa("gfx908"),
        features: CDNA_FEATURES,
        math: MathTable {
            f32: AMD_F32,
            f16: AMD_F16,
            bf16: GFX908_BF16,
        },
        rates: Rates {
            f16_tflops: 184.6,
            bf16_tflops: 92.3,
            f32_tflops: 46.1,
            mma_sync_fraction: 1.0,
            dram_tbps: 1.23,
            l2_tbps: 3.0,
            clock_ghz: 1.502,
            issue_per_clk: 64.0,
        },
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
        max_threads_per_sm: 2048,
        max_blocks_per_sm: 16,
        max_regs_per_thread: 512,
        regs_per_sm: 4 * 512 * 64,
        compute_units: 110,
        max_vector_bytes: 16,
        isa: amd_isa("gfx90a"),
        features: CDNA_FEATURES,
        math: MathTable {
            f32: AMD_F32,
            f16: AMD_F16,
            bf16: AMD_BF16_1K,
        },
        rates: Rates {
            f16_tflops: 191.5,
            bf16_tflops: 191.5,
            f32_tflops: 47.9,
            mma_sync_fraction: 1.0,
            dram_tbps: 1.6,
            l2_tbps: 4.0,
            clock_ghz: 1.7,
            issue_per_clk: 64.0,
        },
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
        max_threads_per_sm: 2048,
        max_blocks_per_sm: 16,
        max_regs_per_thread: 512,
        regs_per_sm: 4 * 512 * 64,
        compute_units: 304,
        max_vector_bytes: 16,
        isa: amd_isa("gfx942"),
        features: CDNA_FEATURES,
        math: MathTable {
            f32: AMD_F32,
            f16: AMD_F16,
            bf16: AMD_BF16_1K,
        },
        rates: Rates {
            f16_tflops: 1307.0,
            bf16_tflops: 1307.0,
            f32_tflops: 163.4,
            mma_sync_fraction: 1.0,
            dram_tbps: 5.3,
            l2_tbps: 12.0,
            clock_ghz: 2.1,
            issue_per_clk: 64.0,
        },
    };

    /// Every described architecture, for listings and exhaustive tests.
    pub const ALL: [Arch; 5] = [
        Arch::SM_80,
        Arch::SM_90,
        Arch::GFX908,
        Arch::GFX90A,
        Arch::GFX942,
    ];
}
