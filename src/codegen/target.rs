//! What a kernel is compiled for: the public [`Target`], the facts the kernel logic needs from it
//! (warp size, matrix unit, async copies), and the [`TargetSpec`] trait through which the one
//! kernel implementation reaches target instructions. NVPTX and AMDGPU implement it for real
//! GPUs; the emulator implements it for the host CPU so the same kernels can be run here.

use super::builder::{Kb, Mem};
use super::CodegenError;
use crate::arch::{Arch, MathInstr, MathKind, Vendor};
use crate::problem::DType;
use inkwell::{
    context::Context,
    values::{BasicValueEnum, FloatValue, FunctionValue, IntValue, PointerValue, VectorValue},
    AddressSpace,
};
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

/// Everything the kernel logic needs from a target. One implementation per backend; the kernel
/// code calls these through [`Kb`]'s verbs and never names an intrinsic itself.
pub(crate) trait TargetSpec: Sync {
    /// The GPU whose semantics the code has (the emulator imitates one).
    fn target(&self) -> Target;
    /// LLVM triple.
    fn triple(&self) -> String;
    /// LLVM cpu name.
    fn cpu(&self) -> String;
    /// LLVM feature string.
    fn features(&self) -> String;
    /// Address space of kernel pointer arguments.
    fn global_as(&self) -> AddressSpace;
    /// Address space of shared memory.
    fn shared_as(&self) -> AddressSpace;
    /// Pointer arguments appended after the four tensors (the emulator's context).
    fn extra_params(&self) -> u32 {
        0
    }
    /// Marks a new function as a kernel (calling convention, attributes).
    fn declare_kernel<'ctx>(&self, ctx: &'ctx Context, f: FunctionValue<'ctx>);
    /// Records the block size so the backend can budget registers for it.
    fn set_block_size(&self, kb: &Kb, threads: u32);
    /// Thread index within the block (x).
    fn thread_idx<'ctx>(&self, kb: &Kb<'_, 'ctx>) -> IntValue<'ctx>;
    /// Block index along `dim`.
    fn block_idx<'ctx>(&self, kb: &Kb<'_, 'ctx>, dim: u32) -> IntValue<'ctx>;
    /// Block-wide barrier ordering shared memory.
    fn barrier(&self, kb: &Kb);
    /// Base of the block's dynamic shared memory.
    fn shared_base<'ctx>(&self, kb: &Kb<'_, 'ctx>) -> PointerValue<'ctx>;
    /// Hook on every memory access: the GPUs return `ptr`; the emulator checks bounds and
    /// alignment and redirects a bad access to scratch memory after recording it.
    fn guard<'ctx>(
        &self,
        _kb: &Kb<'_, 'ctx>,
        _mem: Mem,
        ptr: PointerValue<'ctx>,
        _bytes: u32,
        _align: u32,
        _store: bool,
    ) -> PointerValue<'ctx> {
        ptr
    }
    /// LLVM IR text that every module starts from: helpers the C API cannot build (sync
    /// scopes, atomic metadata). Must define `convtune_atomic_fadd(ptr global, float)`.
    fn prelude_ir(&self) -> String;
    /// f16/bf16 bits (i16) to f32; exact, so every real target shares one implementation (the
    /// emulator overrides it to call its own checked conversion).
    fn half_to_f32<'ctx>(
        &self,
        kb: &Kb<'_, 'ctx>,
        v: IntValue<'ctx>,
        dt: DType,
    ) -> FloatValue<'ctx> {
        super::nvptx::half_to_f32_generic(kb, v, dt)
    }
    /// f32 to f16/bf16 bits (i16), round to nearest even.
    fn f32_to_half<'ctx>(
        &self,
        kb: &Kb<'_, 'ctx>,
        v: FloatValue<'ctx>,
        dt: DType,
    ) -> IntValue<'ctx>;
    /// `ldmatrix.sync.aligned.m8n8.x4[.trans].b16` from a shared address (NVIDIA).
    fn ldmatrix_x4<'ctx>(
        &self,
        _kb: &Kb<'_, 'ctx>,
        _ptr: PointerValue<'ctx>,
        _trans: bool,
    ) -> [IntValue<'ctx>; 4] {
        panic!(
            "ldmatrix requested on a target without it: the matrix unit is chosen from the target"
        )
    }
    /// `mma.sync m16n8k16` f32 += f16/bf16 × f16/bf16 (NVIDIA); operands as packed i32 pairs.
    fn mma_16816<'ctx>(
        &self,
        _kb: &Kb<'_, 'ctx>,
        _dt: DType,
        _a: [IntValue<'ctx>; 4],
        _b: [IntValue<'ctx>; 2],
        _c: [FloatValue<'ctx>; 4],
    ) -> [FloatValue<'ctx>; 4] {
        panic!(
            "mma.sync requested on a target without it: the matrix unit is chosen from the target"
        )
    }
    /// `v_mfma_f32_{m}x{m}x{k}` (AMD): `a`, `b` are this lane's `k·m/64` elements (a float for
    /// f32, `<n x i16>` bits for f16/bf16), `c` is `<m·m/64 x float>`.
    #[allow(clippy::too_many_arguments)]
    fn mfma<'ctx>(
        &self,
        _kb: &Kb<'_, 'ctx>,
        _dt: DType,
        _m: u32,
        _k: u32,
        _a: BasicValueEnum<'ctx>,
        _b: BasicValueEnum<'ctx>,
        _c: VectorValue<'ctx>,
    ) -> VectorValue<'ctx> {
        panic!("MFMA requested on a target without it: the matrix unit is chosen from the target")
    }
    /// Asynchronous global→shared copy of `bytes` (4, 8 or 16) that reads `src_bytes` (a
    /// runtime value, `bytes` or 0) and zero-fills the rest (NVIDIA `cp.async`).
    fn cp_async<'ctx>(
        &self,
        _kb: &Kb<'_, 'ctx>,
        _dst: PointerValue<'ctx>,
        _src: PointerValue<'ctx>,
        _bytes: u32,
        _src_bytes: IntValue<'ctx>,
    ) {
        panic!("cp.async requested on a target without it: the pipeline is chosen from the target")
    }
    /// Closes the current group of async copies.
    fn cp_async_commit(&self, _kb: &Kb) {
        panic!("cp.async requested on a target without it")
    }
    /// Waits until at most `n` groups of async copies are pending.
    fn cp_async_wait(&self, _kb: &Kb, _n: u32) {
        panic!("cp.async requested on a target without it")
    }
    /// The shared-memory address (32 bits, as `wgmma` descriptors encode it) of `ptr`.
    fn smem_addr<'ctx>(&self, _kb: &Kb<'_, 'ctx>, _ptr: PointerValue<'ctx>) -> IntValue<'ctx> {
        panic!("shared-memory descriptors requested on a target without wgmma")
    }
    /// `fence.proxy.async.shared::cta`: this thread's earlier shared-memory writes become
    /// visible to async-proxy readers (`wgmma`) once a barrier follows.
    fn fence_proxy_async(&self, _kb: &Kb) {
        panic!("fence.proxy.async requested on a target without wgmma")
    }
    /// `wgmma.fence.sync.aligned`: orders earlier register and shared accesses before the
    /// following `wgmma.mma_async`.
    fn wgmma_fence(&self, _kb: &Kb) {
        panic!("wgmma requested on a target without it")
    }
    /// `wgmma.commit_group.sync.aligned`.
    fn wgmma_commit(&self, _kb: &Kb) {
        panic!("wgmma requested on a target without it")
    }
    /// `wgmma.wait_group.sync.aligned n`, with this thread's accumulators passed through it:
    /// their later uses then depend on the wait, so no compiler can read them before it.
    fn wgmma_wait<'ctx>(
        &self,
        _kb: &Kb<'_, 'ctx>,
        _n: u32,
        _acc: &[FloatValue<'ctx>],
    ) -> Vec<FloatValue<'ctx>> {
        panic!("wgmma requested on a target without it")
    }
    /// `wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{f16,bf16}` with A and B from the shared-
    /// memory descriptors `da`, `db` (i64); `trans[i]`: operand i is MN-major (imm-trans 1),
    /// else K-major; `acc` are this thread's `n/2` accumulators (d += a·b).
    #[allow(clippy::too_many_arguments)]
    fn wgmma<'ctx>(
        &self,
        _kb: &Kb<'_, 'ctx>,
        _dt: DType,
        _n: u32,
        _trans: [bool; 2],
        _da: IntValue<'ctx>,
        _db: IntValue<'ctx>,
        _acc: &[FloatValue<'ctx>],
    ) -> Vec<FloatValue<'ctx>> {
        panic!("wgmma requested on a target without it")
    }
}

/// Declares (once per module) the dynamic shared-memory array `[0 x i8]` in `space`.
pub(crate) fn dynamic_shared<'ctx>(kb: &Kb<'_, 'ctx>, space: AddressSpace) -> PointerValue<'ctx> {
    const NAME: &str = "convtune_dyn_smem";
    let g = kb.module.get_global(NAME).unwrap_or_else(|| {
        let ty = kb.ctx.i8_type().array_type(0);
        let g = kb.module.add_global(ty, Some(space), NAME);
        g.set_linkage(inkwell::module::Linkage::External);
        // 1024: the 128-byte swizzle of wgmma descriptors is a function of address bits 4-9,
        // so tiles must start at 1024-byte boundaries of the shared window.
        g.set_alignment(1024);
        g
    });
    g.as_pointer_value()
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
