//! NVPTX: `nvptx64-nvidia-cuda`, kernels in calling convention 71 (`ptx_kernel`), tensor cores
//! through the `llvm.nvvm.mma` / `ldmatrix` intrinsics, `cp.async` for the pipeline.

use super::builder::Kb;
use super::target::{dynamic_shared, Target, TargetSpec};
use crate::problem::DType;
use inkwell::{
    context::Context,
    values::{BasicValueEnum, FloatValue, FunctionValue, IntValue, PointerValue},
    AddressSpace,
};

/// An NVIDIA GPU.
pub(crate) struct Nvptx {
    /// Which one.
    pub target: Target,
    /// Whether the module uses arch-specific instructions (`wgmma`): then it is compiled for
    /// the arch-specific CPU (`sm_90a`, which the H200's driver JIT-loads as it does `sm_90`).
    pub arch_specific: bool,
}

impl Nvptx {
    /// A void inline-asm statement with no operands that the optimiser keeps in place.
    fn asm_stmt(kb: &Kb, text: &str) {
        let ty = kb.ctx.void_type().fn_type(&[], false);
        let f = kb.ctx.create_inline_asm(
            ty,
            text.to_string(),
            "~{memory}".to_string(),
            true,
            false,
            None,
            false,
        );
        super::builder::ok(kb.raw().build_indirect_call(ty, f, &[], ""));
    }

    /// Inline asm `text` that reads `lead` (constraints `lead_cons`) and updates the floats
    /// `acc` in place, returning their new values. The accumulators are read-write ("+f" in
    /// CUDA), which LLVM spells as outputs "=f" with inputs tied to them ("0", "1", ...), so
    /// in `text` the accumulators are $0..$q-1 and the lead operands follow from $q.
    fn asm_floats<'ctx>(
        kb: &Kb<'_, 'ctx>,
        text: &str,
        lead_cons: &[&str],
        lead: &[inkwell::values::BasicMetadataValueEnum<'ctx>],
        acc: &[FloatValue<'ctx>],
        clobbers: &[&str],
    ) -> Vec<FloatValue<'ctx>> {
        use inkwell::types::BasicMetadataTypeEnum;
        use inkwell::values::BasicMetadataValueEnum;
        let q = acc.len();
        let mut cons: Vec<String> = (0..q).map(|_| "=f".to_string()).collect();
        cons.extend(lead_cons.iter().map(|c| c.to_string()));
        cons.extend((0..q).map(|i| i.to_string()));
        cons.extend(clobbers.iter().map(|c| c.to_string()));
        let f32t = kb.f32t();
        let ret = kb.ctx.struct_type(&vec![f32t.into(); acc.len()], false);
        let mut params: Vec<BasicMetadataTypeEnum> = lead
            .iter()
            .map(|v| match v {
                BasicMetadataValueEnum::IntValue(i) => i.get_type().into(),
                other => panic!("asm lead operand {other:?} is not an integer"),
            })
            .collect();
        params.extend(acc.iter().map(|_| BasicMetadataTypeEnum::from(f32t)));
        let fty = ret.fn_type(&params, false);
        let f = kb.ctx.create_inline_asm(
            fty,
            text.to_string(),
            cons.join(","),
            true,
            false,
            None,
            false,
        );
        let mut args = lead.to_vec();
        args.extend(acc.iter().map(|&v| BasicMetadataValueEnum::from(v)));
        let call = super::builder::ok(kb.raw().build_indirect_call(fty, f, &args, ""));
        let r = match call.try_as_basic_value() {
            inkwell::values::ValueKind::Basic(v) => v,
            inkwell::values::ValueKind::Instruction(_) => {
                panic!("inline asm with outputs returns a value")
            }
        };
        (0..acc.len() as u32)
            .map(|i| kb.field(r, i).into_float_value())
            .collect()
    }
}

const GLOBAL: u16 = 1;
const SHARED: u16 = 3;

impl TargetSpec for Nvptx {
    fn target(&self) -> Target {
        self.target
    }
    fn triple(&self) -> String {
        self.target.arch().isa.triple.into()
    }
    fn cpu(&self) -> String {
        self.target.arch().isa.cpu_for(self.arch_specific).into()
    }
    fn features(&self) -> String {
        self.target.arch().isa.features.into()
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
    fn smem_addr<'ctx>(&self, kb: &Kb<'_, 'ctx>, ptr: PointerValue<'ctx>) -> IntValue<'ctx> {
        // An addrspace(3) pointer is the address in the shared window (what `cvta.to.shared`
        // gives for a generic one).
        super::builder::ok(kb.raw().build_ptr_to_int(ptr, kb.i32t(), ""))
    }
    fn fence_proxy_async(&self, kb: &Kb) {
        Self::asm_stmt(kb, "fence.proxy.async.shared::cta;");
    }
    fn wgmma_fence(&self, kb: &Kb) {
        Self::asm_stmt(kb, "wgmma.fence.sync.aligned;");
    }
    fn wgmma_commit(&self, kb: &Kb) {
        Self::asm_stmt(kb, "wgmma.commit_group.sync.aligned;");
    }
    fn wgmma_wait<'ctx>(
        &self,
        kb: &Kb<'_, 'ctx>,
        n: u32,
        acc: &[FloatValue<'ctx>],
    ) -> Vec<FloatValue<'ctx>> {
        Self::asm_floats(
            kb,
            &format!("wgmma.wait_group.sync.aligned {n};"),
            &[],
            &[],
            acc,
            &["~{memory}"],
        )
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
        // Operands (see `asm_floats`): $0..$q-1 the accumulators, $q and $q+1 the descriptors
        // ("l": 64-bit), $q+2 the scale-d flag (1: d = a·b + d).
        let q = acc.len();
        let ty = if dt == DType::BF16 { "bf16" } else { "f16" };
        let regs: Vec<String> = (0..q).map(|i| format!("${i}")).collect();
        let text = format!(
            "{{\n.reg .pred p;\nsetp.ne.b32 p, ${s}, 0;\n\
             wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{ty}.{ty} {{{regs}}}, ${a}, ${b}, p, 1, 1, {ta}, {tb};\n}}",
            ta = u8::from(trans[0]),
            tb = u8::from(trans[1]),
            regs = regs.join(", "),
            a = q,
            b = q + 1,
            s = q + 2,
        );
        Self::asm_floats(
            kb,
            &text,
            &["l", "l", "r"],
            &[da.into(), db.into(), kb.c(1).into()],
            acc,
            &[],
        )
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
