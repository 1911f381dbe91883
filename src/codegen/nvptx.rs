//! NVPTX: `nvptx64-nvidia-cuda`, kernels in calling convention 71 (`ptx_kernel`), tensor cores
//! through the `llvm.nvvm.mma` / `ldmatrix` intrinsics, `cp.async` for the pipeline.

use super::builder::Kb;
use super::target::{dynamic_shared, Target, TargetSpec};
use crate::problem::DType;
use inkwell::{
    context::Context,
    values::{BasicValueEnum, FloatValue, FunctionValue, IntValue, PointerValue, VectorValue},
    AddressSpace,
};

/// An NVIDIA GPU of compute capability `sm`.
pub(crate) struct Nvptx {
    /// e.g. 90.
    pub sm: u32,
}

const GLOBAL: u16 = 1;
const SHARED: u16 = 3;

impl TargetSpec for Nvptx {
    fn target(&self) -> Target {
        Target::Nvptx { sm: self.sm }
    }
    fn triple(&self) -> String {
        "nvptx64-nvidia-cuda".into()
    }
    fn cpu(&self) -> String {
        format!("sm_{}", self.sm)
    }
    fn features(&self) -> String {
        // PTX ISA 8.0 covers sm_90 and everything the kernels use; the H200's driver JITs it.
        "+ptx80".into()
    }
    fn global_as(&self) -> AddressSpace {
        AddressSpace::from(GLOBAL)
    }
    fn shared_as(&self) -> AddressSpace {
        AddressSpace::from(SHARED)
    }
    fn declare_kernel<'ctx>(&self, _ctx: &'ctx Context, f: FunctionValue<'ctx>) {
        f.set_call_conventions(71);
    }
    fn set_block_size(&self, kb: &Kb, threads: u32) {
        // `.maxntid` lets ptxas budget registers for the real block size instead of 1024.
        let ctx = kb.ctx;
        let node = ctx.metadata_node(&[
            kb.func.as_global_value().as_pointer_value().into(),
            ctx.metadata_string("maxntidx").into(),
            ctx.i32_type().const_int(threads as u64, false).into(),
        ]);
        kb.module
            .add_global_metadata("nvvm.annotations", &node)
            .unwrap_or_else(|e| panic!("nvvm.annotations: {e}"));
    }
    fn thread_idx<'ctx>(&self, kb: &Kb<'_, 'ctx>) -> IntValue<'ctx> {
        kb.intrinsic("llvm.nvvm.read.ptx.sreg.tid.x", &[], &[])
            .into_int_value()
    }
    fn block_idx<'ctx>(&self, kb: &Kb<'_, 'ctx>, dim: u32) -> IntValue<'ctx> {
        let name = ["x", "y", "z"][dim as usize];
        kb.intrinsic(&format!("llvm.nvvm.read.ptx.sreg.ctaid.{name}"), &[], &[])
            .into_int_value()
    }
    fn barrier(&self, kb: &Kb) {
        kb.intrinsic("llvm.nvvm.barrier0", &[], &[]);
    }
    fn shared_base<'ctx>(&self, kb: &Kb<'_, 'ctx>) -> PointerValue<'ctx> {
        dynamic_shared(kb, self.shared_as())
    }
    fn prelude_ir(&self) -> String {
        // Relaxed system-scope fadd becomes `atom.global.add.f32`.
        r#"
define internal void @convtune_atomic_fadd(ptr addrspace(1) %p, float %v) alwaysinline nounwind {
  %old = atomicrmw fadd ptr addrspace(1) %p, float %v monotonic, align 4
  ret void
}
"#
        .into()
    }
    fn half_to_f32<'ctx>(
        &self,
        kb: &Kb<'_, 'ctx>,
        v: IntValue<'ctx>,
        dt: DType,
    ) -> FloatValue<'ctx> {
        half_to_f32_generic(kb, v, dt)
    }
    fn f32_to_half<'ctx>(
        &self,
        kb: &Kb<'_, 'ctx>,
        v: FloatValue<'ctx>,
        dt: DType,
    ) -> IntValue<'ctx> {
        // cvt.rn.f16.f32 / cvt.rn.bf16.f32 (sm_80+).
        let ty = match dt {
            DType::BF16 => kb.ctx.bf16_type(),
            _ => kb.ctx.f16_type(),
        };
        let h = super::builder::ok(kb.raw().build_float_trunc(v, ty, ""));
        kb.bitcast(h.into(), kb.ctx.i16_type().into())
            .into_int_value()
    }
    fn ldmatrix_x4<'ctx>(
        &self,
        kb: &Kb<'_, 'ctx>,
        ptr: PointerValue<'ctx>,
        trans: bool,
    ) -> [IntValue<'ctx>; 4] {
        let name = if trans {
            "llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.trans.b16"
        } else {
            "llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.b16"
        };
        let r = kb.intrinsic(name, &[ptr.get_type().into()], &[ptr.into()]);
        std::array::from_fn(|i| kb.field(r, i as u32).into_int_value())
    }
    fn mma_16816<'ctx>(
        &self,
        kb: &Kb<'_, 'ctx>,
        dt: DType,
        a: [IntValue<'ctx>; 4],
        b: [IntValue<'ctx>; 2],
        c: [FloatValue<'ctx>; 4],
    ) -> [FloatValue<'ctx>; 4] {
        let (name, packed): (&str, Option<inkwell::types::BasicTypeEnum>) = match dt {
            DType::BF16 => ("llvm.nvvm.mma.m16n8k16.row.col.bf16", None),
            _ => (
                "llvm.nvvm.mma.m16n8k16.row.col.f32.f32",
                Some(kb.ctx.f16_type().vec_type(2).into()),
            ),
        };
        let pack = |v: IntValue<'ctx>| -> BasicValueEnum<'ctx> {
            match packed {
                Some(ty) => kb.bitcast(v.into(), ty),
                None => v.into(),
            }
        };
        let mut args: Vec<BasicValueEnum> = a.iter().map(|&v| pack(v)).collect();
        args.extend(b.iter().map(|&v| pack(v)));
        args.extend(c.iter().map(|&v| BasicValueEnum::from(v)));
        let r = kb.intrinsic(name, &[], &args);
        std::array::from_fn(|i| kb.field(r, i as u32).into_float_value())
    }
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
        panic!("MFMA requested on NVPTX: the matrix unit is chosen from the target")
    }
    fn cp_async<'ctx>(
        &self,
        kb: &Kb<'_, 'ctx>,
        dst: PointerValue<'ctx>,
        src: PointerValue<'ctx>,
        bytes: u32,
        src_bytes: IntValue<'ctx>,
    ) {
        // .cg (L2 only) needs 16 bytes; smaller copies go through L1 (.ca).
        let cache = if bytes == 16 { "cg" } else { "ca" };
        let name = format!("llvm.nvvm.cp.async.{cache}.shared.global.{bytes}.s");
        kb.intrinsic(&name, &[], &[dst.into(), src.into(), src_bytes.into()]);
    }
    fn cp_async_commit(&self, kb: &Kb) {
        kb.intrinsic("llvm.nvvm.cp.async.commit.group", &[], &[]);
    }
    fn cp_async_wait(&self, kb: &Kb, n: u32) {
        kb.intrinsic(
            "llvm.nvvm.cp.async.wait.group",
            &[],
            &[kb.c(n as i64).into()],
        );
    }
}

/// f16 bits → f32 by `fpext`; bf16 bits → f32 exactly by a 16-bit shift.
pub(crate) fn half_to_f32_generic<'ctx>(
    kb: &Kb<'_, 'ctx>,
    v: IntValue<'ctx>,
    dt: DType,
) -> FloatValue<'ctx> {
    use super::builder::ok;
    match dt {
        DType::BF16 => {
            let w = ok(kb.raw().build_int_z_extend(v, kb.i32t(), ""));
            let w = ok(kb.raw().build_left_shift(w, kb.c(16), ""));
            kb.bitcast(w.into(), kb.f32t().into()).into_float_value()
        }
        _ => {
            let h = kb
                .bitcast(v.into(), kb.ctx.f16_type().into())
                .into_float_value();
            ok(kb.raw().build_float_ext(h, kb.f32t(), ""))
        }
    }
}
