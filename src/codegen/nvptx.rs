//! NVPTX: `nvptx64-nvidia-cuda`, kernels in calling convention 71 (`ptx_kernel`), tensor cores
//! through the `llvm.nvvm.mma` / `ldmatrix` intrinsics, `cp.async` for the pipeline.
//!
//! This file owns the target itself (triple, address spaces, kernel annotations), the inline
//! asm helpers every family builds on, the sm_80 families (`mma.sync`, `cp.async`,
//! `setmaxnreg`) and the PTX post-processing (the cluster directives). The sm_90 async-proxy
//! families each have a file of their own, so one instruction family reads in one place:
//! `nvptx_wgmma` (`wgmma.mma_async`), `nvptx_barriers` (mbarriers, named and cluster
//! barriers) and `nvptx_tma` (`cp.async.bulk.tensor`).

use super::ir::{ok, Ir};
use super::spec::{
    dynamic_shared, AsyncCopy, Barriers, BulkTensorCopy, Mfma, RegisterRealloc, TargetSpec,
    WarpMma, WarpgroupMma,
};
use super::target::Target;
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
    pub(super) fn asm_stmt(ir: &Ir, text: &str) {
        let ty = ir.ctx.void_type().fn_type(&[], false);
        let f = ir.ctx.create_inline_asm(
            ty,
            text.to_string(),
            "~{memory}".to_string(),
            true,
            false,
            None,
            false,
        );
        ok(ir.raw().build_indirect_call(ty, f, &[], ""));
    }

    /// Inline PTX with only inputs (`r`: 32-bit, `l`: 64-bit) and a memory clobber.
    pub(super) fn asm_in<'ctx>(
        ir: &Ir<'_, 'ctx>,
        text: &str,
        cons: &[&str],
        args: &[IntValue<'ctx>],
    ) {
        use inkwell::types::BasicMetadataTypeEnum;
        use inkwell::values::BasicMetadataValueEnum;
        let params: Vec<BasicMetadataTypeEnum> = args.iter().map(|a| a.get_type().into()).collect();
        let ty = ir.ctx.void_type().fn_type(&params, false);
        let mut c: Vec<String> = cons.iter().map(|c| c.to_string()).collect();
        c.push("~{memory}".into());
        let f =
            ir.ctx
                .create_inline_asm(ty, text.to_string(), c.join(","), true, false, None, false);
        let vals: Vec<BasicMetadataValueEnum> = args.iter().map(|&a| a.into()).collect();
        ok(ir.raw().build_indirect_call(ty, f, &vals, ""));
    }

    /// The 32-bit shared-window address of a shared pointer.
    pub(super) fn shared32<'ctx>(ir: &Ir<'_, 'ctx>, p: PointerValue<'ctx>) -> IntValue<'ctx> {
        ok(ir.raw().build_ptr_to_int(p, ir.i32t(), ""))
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
    fn set_block_size(&self, ir: &Ir, threads: u32) {
        // `.maxntid` lets ptxas budget registers for the real block size instead of 1024.
        Self::annotate(ir, "maxntidx", threads);
    }
    fn thread_idx<'ctx>(&self, ir: &Ir<'_, 'ctx>) -> IntValue<'ctx> {
        ir.intrinsic("llvm.nvvm.read.ptx.sreg.tid.x", &[], &[])
            .into_int_value()
    }
    fn block_idx<'ctx>(&self, ir: &Ir<'_, 'ctx>, dim: u32) -> IntValue<'ctx> {
        let name = ["x", "y", "z"][dim as usize];
        ir.intrinsic(&format!("llvm.nvvm.read.ptx.sreg.ctaid.{name}"), &[], &[])
            .into_int_value()
    }
    fn barrier(&self, ir: &Ir) {
        ir.intrinsic("llvm.nvvm.barrier0", &[], &[]);
    }
    fn shared_base<'ctx>(&self, ir: &Ir<'_, 'ctx>) -> PointerValue<'ctx> {
        dynamic_shared(ir, self.shared_as())
    }
    fn pin<'ctx>(&self, ir: &Ir<'_, 'ctx>, v: IntValue<'ctx>) {
        Self::asm_in(ir, "// pin $0", &["r"], &[v]);
    }
    fn prelude_ir(&self) -> String {
        // Relaxed system-scope fadd becomes `atom.global.add.f32`. LLVM 19 lowers neither the
        // ordering nor the scope of an atomic or fence to PTX's `.acq_rel.gpu` qualifiers, so
        // the split-K fix-up's arrival and fence are inline PTX (sm_70+, PTX ISA 6.0+); the
        // fence's unused pointer operand ties it to the memory it orders.
        r#"
define internal void @convtune_atomic_fadd(ptr addrspace(1) %p, float %v) alwaysinline nounwind {
  %old = atomicrmw fadd ptr addrspace(1) %p, float %v monotonic, align 4
  ret void
}
define internal i32 @convtune_arrive(ptr addrspace(1) %p) alwaysinline nounwind {
  %a = ptrtoint ptr addrspace(1) %p to i64
  %old = call i32 asm sideeffect "atom.acq_rel.gpu.global.add.u32 $0, [$1], 1;", "=r,l,~{memory}"(i64 %a)
  ret i32 %old
}
define internal void @convtune_fence_device(ptr addrspace(1) %p) alwaysinline nounwind {
  %a = ptrtoint ptr addrspace(1) %p to i64
  call void asm sideeffect "fence.acq_rel.gpu;", "l,~{memory}"(i64 %a)
  ret void
}
"#
        .into()
    }
    fn f32_to_half<'ctx>(
        &self,
        ir: &Ir<'_, 'ctx>,
        v: FloatValue<'ctx>,
        dt: DType,
    ) -> IntValue<'ctx> {
        // cvt.rn.f16.f32 / cvt.rn.bf16.f32 (sm_80+).
        let ty = match dt {
            DType::BF16 => ir.ctx.bf16_type(),
            _ => ir.ctx.f16_type(),
        };
        let h = ok(ir.raw().build_float_trunc(v, ty, ""));
        ir.bitcast(h.into(), ir.ctx.i16_type().into())
            .into_int_value()
    }
    fn async_copy(&self) -> Option<&dyn AsyncCopy> {
        self.target.has_cp_async().then_some(self)
    }
    fn warp_mma(&self) -> Option<&dyn WarpMma> {
        // mma.sync is fed by ldmatrix (`Target::check` accepts no mma.sync path without it).
        self.target.arch().features.ldmatrix.then_some(self)
    }
    fn mfma(&self) -> Option<&dyn Mfma> {
        None
    }
    fn warpgroup_mma(&self) -> Option<&dyn WarpgroupMma> {
        self.target.arch().features.wgmma.is_some().then_some(self)
    }
    fn barriers(&self) -> Option<&dyn Barriers> {
        // fence.proxy.async comes with the async proxy (sm_90: wgmma and TMA).
        let f = &self.target.arch().features;
        (f.wgmma.is_some() || f.tma).then_some(self)
    }
    fn bulk_tensor_copy(&self) -> Option<&dyn BulkTensorCopy> {
        // `cp.async.bulk.tensor` is plain sm_90, but the only consumer is the `wgmma` path.
        self.target.arch().features.tma.then_some(self)
    }
    fn register_realloc(&self) -> Option<&dyn RegisterRealloc> {
        self.target
            .arch()
            .features
            .setmaxnreg
            .is_some()
            .then_some(self)
    }
}

impl Nvptx {
    /// Adds `!{ptr @kernel, !"key", i32 value}` to `nvvm.annotations`.
    fn annotate(ir: &Ir, key: &str, value: u32) {
        let ctx = ir.ctx;
        let node = ctx.metadata_node(&[
            ir.func.as_global_value().as_pointer_value().into(),
            ctx.metadata_string(key).into(),
            ctx.i32_type().const_int(value as u64, false).into(),
        ]);
        ir.module
            .add_global_metadata("nvvm.annotations", &node)
            .unwrap_or_else(|e| panic!("nvvm.annotations: {e}"));
    }
}

/// Adds `.explicitcluster` and `.reqnctapercluster N, 1, 1` to the entry of each kernel with a
/// cluster of `N > 1` blocks ([`super::Kernel::cluster`]), after its parameter list. LLVM 19's
/// NVPTX backend emits only `.maxclusterrank` from `nvvm.annotations` (not the cluster shape),
/// and a shape compiled into the kernel is what lets a plain `cuLaunchKernel` form the
/// clusters, so the launch ABI stays the one every consumer already uses (docs/abi.md).
pub(crate) fn cluster_directives(
    ptx: String,
    kernels: &[super::Kernel],
) -> Result<String, super::CodegenError> {
    let mut ptx = ptx;
    for k in kernels.iter().filter(|k| k.cluster > 1) {
        let entry = format!(".entry {}(", k.name);
        let at = ptx
            .find(&entry)
            .and_then(|e| ptx[e..].find("\n)\n").map(|p| e + p + 3))
            .ok_or_else(|| {
                super::CodegenError::Internal(format!(
                    "cluster kernel {}: no `.entry` with a parameter list in the PTX",
                    k.name
                ))
            })?;
        ptx.insert_str(
            at,
            &format!(".explicitcluster\n.reqnctapercluster {}, 1, 1\n", k.cluster),
        );
    }
    Ok(ptx)
}

impl RegisterRealloc for Nvptx {
    fn cap_registers(&self, ir: &Ir, regs: u32) {
        // `.maxnreg`: without a known count at entry ptxas ignores setmaxnreg (C7508).
        Self::annotate(ir, "maxnreg", regs);
    }
    fn setmaxnreg(&self, ir: &Ir, inc: bool, regs: u32) {
        let dir = if inc { "inc" } else { "dec" };
        ir.intrinsic(
            &format!("llvm.nvvm.setmaxnreg.{dir}.sync.aligned.u32"),
            &[],
            &[ir.c(regs as i64).into()],
        );
    }
}

impl WarpMma for Nvptx {
    fn ldmatrix_x4<'ctx>(
        &self,
        ir: &Ir<'_, 'ctx>,
        ptr: PointerValue<'ctx>,
        trans: bool,
    ) -> [IntValue<'ctx>; 4] {
        let name = if trans {
            "llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.trans.b16"
        } else {
            "llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.b16"
        };
        let r = ir.intrinsic(name, &[ptr.get_type().into()], &[ptr.into()]);
        std::array::from_fn(|i| ir.field(r, i as u32).into_int_value())
    }
    fn mma_16816<'ctx>(
        &self,
        ir: &Ir<'_, 'ctx>,
        dt: DType,
        a: [IntValue<'ctx>; 4],
        b: [IntValue<'ctx>; 2],
        c: [FloatValue<'ctx>; 4],
    ) -> [FloatValue<'ctx>; 4] {
        let (name, packed): (&str, Option<inkwell::types::BasicTypeEnum>) = match dt {
            DType::BF16 => ("llvm.nvvm.mma.m16n8k16.row.col.bf16", None),
            _ => (
                "llvm.nvvm.mma.m16n8k16.row.col.f32.f32",
                Some(ir.ctx.f16_type().vec_type(2).into()),
            ),
        };
        let pack = |v: IntValue<'ctx>| -> BasicValueEnum<'ctx> {
            match packed {
                Some(ty) => ir.bitcast(v.into(), ty),
                None => v.into(),
            }
        };
        let mut args: Vec<BasicValueEnum> = a.iter().map(|&v| pack(v)).collect();
        args.extend(b.iter().map(|&v| pack(v)));
        args.extend(c.iter().map(|&v| BasicValueEnum::from(v)));
        let r = ir.intrinsic(name, &[], &args);
        std::array::from_fn(|i| ir.field(r, i as u32).into_float_value())
    }
}

impl AsyncCopy for Nvptx {
    fn cp_async<'ctx>(
        &self,
        ir: &Ir<'_, 'ctx>,
        dst: PointerValue<'ctx>,
        src: PointerValue<'ctx>,
        bytes: u32,
        src_bytes: IntValue<'ctx>,
    ) {
        // .cg (L2 only) needs 16 bytes; smaller copies go through L1 (.ca).
        let cache = if bytes == 16 { "cg" } else { "ca" };
        let name = format!("llvm.nvvm.cp.async.{cache}.shared.global.{bytes}.s");
        ir.intrinsic(&name, &[], &[dst.into(), src.into(), src_bytes.into()]);
    }
    fn commit(&self, ir: &Ir) {
        ir.intrinsic("llvm.nvvm.cp.async.commit.group", &[], &[]);
    }
    fn wait(&self, ir: &Ir, n: u32) {
        ir.intrinsic(
            "llvm.nvvm.cp.async.wait.group",
            &[],
            &[ir.c(n as i64).into()],
        );
    }
}
