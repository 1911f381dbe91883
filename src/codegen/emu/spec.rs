//! The host target spec: the GPU kernels compiled for this CPU, with every GPU-only operation
//! (thread ids, barriers, `ldmatrix`, `mma`, MFMA, `cp.async`, half conversions) turned into a
//! call into the emulator runtime, and every memory access checked.

use crate::codegen::builder::{Kb, Mem};
use crate::codegen::target::{Target, TargetSpec};
use crate::problem::DType;
use inkwell::{
    context::Context,
    targets::TargetMachine,
    types::{BasicMetadataTypeEnum, BasicType, BasicTypeEnum},
    values::{BasicValueEnum, FloatValue, FunctionValue, IntValue, PointerValue, VectorValue},
    AddressSpace,
};

/// Kernels for the host that behave like kernels for `like`.
pub(crate) struct HostEmu {
    /// The GPU imitated (warp size, matrix unit, async copies).
    pub like: Target,
}

/// The emulator's half-type code: 0 = f16, 1 = bf16.
pub(crate) fn half_code(dt: DType) -> u64 {
    u64::from(dt == DType::BF16)
}

/// The emulator's element-type code: 0 = f16, 1 = bf16, 2 = f32.
pub(crate) fn dtype_code(dt: DType) -> u64 {
    match dt {
        DType::F16 => 0,
        DType::BF16 => 1,
        DType::F32 => 2,
    }
}

impl HostEmu {
    fn ctx_arg<'ctx>(kb: &Kb<'_, 'ctx>) -> BasicValueEnum<'ctx> {
        kb.param(4).into()
    }

    /// Calls runtime function `name` with the thread context first.
    fn rt<'ctx>(
        kb: &Kb<'_, 'ctx>,
        name: &str,
        ret: Option<BasicTypeEnum<'ctx>>,
        args: &[BasicValueEnum<'ctx>],
    ) -> Option<BasicValueEnum<'ctx>> {
        let mut all = vec![Self::ctx_arg(kb)];
        all.extend_from_slice(args);
        Self::call(kb, name, ret, &all)
    }

    fn call<'ctx>(
        kb: &Kb<'_, 'ctx>,
        name: &str,
        ret: Option<BasicTypeEnum<'ctx>>,
        args: &[BasicValueEnum<'ctx>],
    ) -> Option<BasicValueEnum<'ctx>> {
        let params: Vec<BasicMetadataTypeEnum> = args.iter().map(|a| a.get_type().into()).collect();
        let ty = match ret {
            Some(r) => r.fn_type(&params, false),
            None => kb.ctx.void_type().fn_type(&params, false),
        };
        let f = kb.extern_fn(name, ty);
        kb.call(f, args)
    }

    /// A private array of `n` elements of `ty`, as a pointer for the runtime to read or fill.
    fn array<'ctx>(
        kb: &Kb<'_, 'ctx>,
        ty: BasicTypeEnum<'ctx>,
        vals: &[BasicValueEnum<'ctx>],
        n: u32,
    ) -> PointerValue<'ctx> {
        let arr = kb.var(ty.array_type(n).const_zero().into());
        for (i, &v) in vals.iter().enumerate() {
            kb.set(kb.gep(ty, arr, kb.c(i as i64)), v);
        }
        arr
    }
}

fn ptr_ty(ctx: &Context) -> BasicTypeEnum<'_> {
    ctx.ptr_type(AddressSpace::default()).into()
}

impl TargetSpec for HostEmu {
    fn target(&self) -> Target {
        self.like
    }
    fn triple(&self) -> String {
        TargetMachine::get_default_triple()
            .as_str()
            .to_string_lossy()
            .into_owned()
    }
    fn cpu(&self) -> String {
        // The JIT compiles for the generic CPU; optimise for the same one.
        String::new()
    }
    fn features(&self) -> String {
        String::new()
    }
    fn global_as(&self) -> AddressSpace {
        AddressSpace::default()
    }
    fn shared_as(&self) -> AddressSpace {
        AddressSpace::default()
    }
    fn extra_params(&self) -> u32 {
        1
    }
    fn declare_kernel<'ctx>(&self, _ctx: &'ctx Context, _f: FunctionValue<'ctx>) {}
    fn set_block_size(&self, _kb: &Kb, _threads: u32) {}
    fn thread_idx<'ctx>(&self, kb: &Kb<'_, 'ctx>) -> IntValue<'ctx> {
        Self::rt(kb, "emu_tid", Some(kb.i32t().into()), &[])
            .map(|v| v.into_int_value())
            .unwrap_or_else(|| kb.c(0))
    }
    fn block_idx<'ctx>(&self, kb: &Kb<'_, 'ctx>, dim: u32) -> IntValue<'ctx> {
        Self::rt(
            kb,
            "emu_bid",
            Some(kb.i32t().into()),
            &[kb.c(dim as i64).into()],
        )
        .map(|v| v.into_int_value())
        .unwrap_or_else(|| kb.c(0))
    }
    fn barrier(&self, kb: &Kb) {
        Self::rt(kb, "emu_barrier", None, &[]);
    }
    fn shared_base<'ctx>(&self, kb: &Kb<'_, 'ctx>) -> PointerValue<'ctx> {
        Self::rt(kb, "emu_smem", Some(ptr_ty(kb.ctx)), &[])
            .map(|v| v.into_pointer_value())
            .unwrap_or_else(|| panic!("emu_smem returns a pointer"))
    }
    fn guard<'ctx>(
        &self,
        kb: &Kb<'_, 'ctx>,
        mem: Mem,
        ptr: PointerValue<'ctx>,
        bytes: u32,
        align: u32,
        store: bool,
    ) -> PointerValue<'ctx> {
        let flags = u32::from(mem == Mem::Shared) | (u32::from(store) << 1);
        let args = [
            ptr.into(),
            kb.c(bytes as i64).into(),
            kb.c(align as i64).into(),
            kb.c(flags as i64).into(),
        ];
        Self::rt(kb, "emu_guard", Some(ptr_ty(kb.ctx)), &args)
            .map(|v| v.into_pointer_value())
            .unwrap_or(ptr)
    }
    fn prelude_ir(&self) -> String {
        r#"
define internal void @convtune_atomic_fadd(ptr %p, float %v) alwaysinline nounwind {
  %old = atomicrmw fadd ptr %p, float %v monotonic, align 4
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
        let w = super::super::builder::ok(kb.raw().build_int_z_extend(v, kb.i32t(), ""));
        let code = kb.c(half_code(dt) as i64).into();
        Self::call(
            kb,
            "emu_half_to_f32",
            Some(kb.f32t().into()),
            &[w.into(), code],
        )
        .map(|v| v.into_float_value())
        .unwrap_or_else(|| kb.cf(0.0))
    }
    fn f32_to_half<'ctx>(
        &self,
        kb: &Kb<'_, 'ctx>,
        v: FloatValue<'ctx>,
        dt: DType,
    ) -> IntValue<'ctx> {
        let code = kb.c(half_code(dt) as i64).into();
        let w = Self::call(
            kb,
            "emu_f32_to_half",
            Some(kb.i32t().into()),
            &[v.into(), code],
        )
        .map(|v| v.into_int_value())
        .unwrap_or_else(|| kb.c(0));
        super::super::builder::ok(kb.raw().build_int_truncate(w, kb.ctx.i16_type(), ""))
    }
    fn ldmatrix_x4<'ctx>(
        &self,
        kb: &Kb<'_, 'ctx>,
        ptr: PointerValue<'ctx>,
        trans: bool,
    ) -> [IntValue<'ctx>; 4] {
        let i32t: BasicTypeEnum = kb.i32t().into();
        let out = Self::array(kb, i32t, &[], 4);
        let trans = kb.c(i64::from(trans)).into();
        Self::rt(
            kb,
            "emu_ldmatrix_x4",
            None,
            &[ptr.into(), trans, out.into()],
        );
        std::array::from_fn(|i| {
            kb.get(kb.gep(i32t, out, kb.c(i as i64)), i32t)
                .into_int_value()
        })
    }
    fn mma_16816<'ctx>(
        &self,
        kb: &Kb<'_, 'ctx>,
        dt: DType,
        a: [IntValue<'ctx>; 4],
        b: [IntValue<'ctx>; 2],
        c: [FloatValue<'ctx>; 4],
    ) -> [FloatValue<'ctx>; 4] {
        let (i32t, f32t): (BasicTypeEnum, BasicTypeEnum) = (kb.i32t().into(), kb.f32t().into());
        let pa = Self::array(kb, i32t, &a.map(Into::into), 4);
        let pb = Self::array(kb, i32t, &b.map(Into::into), 2);
        let pc = Self::array(kb, f32t, &c.map(Into::into), 4);
        let code = kb.c(half_code(dt) as i64).into();
        Self::rt(
            kb,
            "emu_mma16816",
            None,
            &[code, pa.into(), pb.into(), pc.into()],
        );
        std::array::from_fn(|i| {
            kb.get(kb.gep(f32t, pc, kb.c(i as i64)), f32t)
                .into_float_value()
        })
    }
    fn mfma<'ctx>(
        &self,
        kb: &Kb<'_, 'ctx>,
        dt: DType,
        m: u32,
        k: u32,
        a: BasicValueEnum<'ctx>,
        b: BasicValueEnum<'ctx>,
        c: VectorValue<'ctx>,
    ) -> VectorValue<'ctx> {
        let pa = kb.var(a);
        let pb = kb.var(b);
        let pc = kb.var(c.into());
        let args = [
            kb.c(dtype_code(dt) as i64).into(),
            kb.c(m as i64).into(),
            kb.c(k as i64).into(),
            pa.into(),
            pb.into(),
            pc.into(),
        ];
        Self::rt(kb, "emu_mfma", None, &args);
        kb.get(pc, c.get_type().into()).into_vector_value()
    }
    fn cp_async<'ctx>(
        &self,
        kb: &Kb<'_, 'ctx>,
        dst: PointerValue<'ctx>,
        src: PointerValue<'ctx>,
        bytes: u32,
        src_bytes: IntValue<'ctx>,
    ) {
        let args = [
            dst.into(),
            src.into(),
            kb.c(bytes as i64).into(),
            src_bytes.into(),
        ];
        Self::rt(kb, "emu_cp_async", None, &args);
    }
    fn cp_async_commit(&self, kb: &Kb) {
        Self::rt(kb, "emu_cp_commit", None, &[]);
    }
    fn cp_async_wait(&self, kb: &Kb, n: u32) {
        Self::rt(kb, "emu_cp_wait", None, &[kb.c(n as i64).into()]);
    }
    fn smem_addr<'ctx>(&self, kb: &Kb<'_, 'ctx>, ptr: PointerValue<'ctx>) -> IntValue<'ctx> {
        // The offset into the block's shared memory: what the GPU's shared window address is
        // when the dynamic shared memory starts at 0 (1024-aligned on the GPU).
        use crate::codegen::builder::ok;
        let i64t = kb.ctx.i64_type();
        let r = kb.raw();
        let p = ok(r.build_ptr_to_int(ptr, i64t, ""));
        let base = ok(r.build_ptr_to_int(kb.shared_base(), i64t, ""));
        let off = ok(r.build_int_sub(p, base, ""));
        ok(r.build_int_truncate(off, kb.i32t(), ""))
    }
    fn fence_proxy_async(&self, kb: &Kb) {
        Self::rt(kb, "emu_fence_proxy", None, &[]);
    }
    fn wgmma_fence(&self, kb: &Kb) {
        Self::rt(kb, "emu_wgmma_fence", None, &[]);
    }
    fn wgmma_commit(&self, kb: &Kb) {
        Self::rt(kb, "emu_wgmma_commit", None, &[]);
    }
    fn wgmma_wait<'ctx>(
        &self,
        kb: &Kb<'_, 'ctx>,
        n: u32,
        acc: &[FloatValue<'ctx>],
    ) -> Vec<FloatValue<'ctx>> {
        Self::rt(kb, "emu_wgmma_wait", None, &[kb.c(n as i64).into()]);
        acc.to_vec()
    }
    fn wgmma<'ctx>(
        &self,
        kb: &Kb<'_, 'ctx>,
        dt: DType,
        n: u32,
        trans: [bool; 2],
        da: IntValue<'ctx>,
        db: IntValue<'ctx>,
        acc: &[FloatValue<'ctx>],
    ) -> Vec<FloatValue<'ctx>> {
        let f32t: BasicTypeEnum = kb.f32t().into();
        let vals: Vec<BasicValueEnum> = acc.iter().map(|&v| v.into()).collect();
        let pc = Self::array(kb, f32t, &vals, acc.len() as u32);
        let args = [
            kb.c(half_code(dt) as i64).into(),
            kb.c(n as i64).into(),
            kb.c(i64::from(trans[0]) | (i64::from(trans[1]) << 1))
                .into(),
            da.into(),
            db.into(),
            pc.into(),
        ];
        Self::rt(kb, "emu_wgmma", None, &args);
        (0..acc.len())
            .map(|i| {
                kb.get(kb.gep(f32t, pc, kb.c(i as i64)), f32t)
                    .into_float_value()
            })
            .collect()
    }
}
