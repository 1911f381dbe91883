//! NVPTX: `nvptx64-nvidia-cuda`, kernels in calling convention 71 (`ptx_kernel`), tensor cores
//! through the `llvm.nvvm.mma` / `ldmatrix` intrinsics, `cp.async` for the pipeline.

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
    fn asm_stmt(ir: &Ir, text: &str) {
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

    /// Inline asm `text` that reads `lead` (constraints `lead_cons`) and updates the floats
    /// `acc` in place, returning their new values. The accumulators are read-write ("+f" in
    /// CUDA), which LLVM spells as outputs "=f" with inputs tied to them ("0", "1", ...), so
    /// in `text` the accumulators are $0..$q-1 and the lead operands follow from $q.
    fn asm_floats<'ctx>(
        ir: &Ir<'_, 'ctx>,
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
        let f32t = ir.f32t();
        let ret = ir.ctx.struct_type(&vec![f32t.into(); acc.len()], false);
        let mut params: Vec<BasicMetadataTypeEnum> = lead
            .iter()
            .map(|v| match v {
                BasicMetadataValueEnum::IntValue(i) => i.get_type().into(),
                other => panic!("asm lead operand {other:?} is not an integer"),
            })
            .collect();
        params.extend(acc.iter().map(|_| BasicMetadataTypeEnum::from(f32t)));
        let fty = ret.fn_type(&params, false);
        let f = ir.ctx.create_inline_asm(
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
        let call = ok(ir.raw().build_indirect_call(fty, f, &args, ""));
        let r = match call.try_as_basic_value() {
            inkwell::values::ValueKind::Basic(v) => v,
            inkwell::values::ValueKind::Instruction(_) => {
                panic!("inline asm with outputs returns a value")
            }
        };
        (0..acc.len() as u32)
            .map(|i| ir.field(r, i).into_float_value())
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

impl WarpgroupMma for Nvptx {
    fn smem_addr<'ctx>(&self, ir: &Ir<'_, 'ctx>, ptr: PointerValue<'ctx>) -> IntValue<'ctx> {
        // An addrspace(3) pointer is the address in the shared window (what `cvta.to.shared`
        // gives for a generic one).
        ok(ir.raw().build_ptr_to_int(ptr, ir.i32t(), ""))
    }
    fn fence(&self, ir: &Ir) {
        Self::asm_stmt(ir, "wgmma.fence.sync.aligned;");
    }
    fn commit(&self, ir: &Ir) {
        Self::asm_stmt(ir, "wgmma.commit_group.sync.aligned;");
    }
    fn wait<'ctx>(
        &self,
        ir: &Ir<'_, 'ctx>,
        n: u32,
        acc: &[FloatValue<'ctx>],
    ) -> Vec<FloatValue<'ctx>> {
        Self::asm_floats(
            ir,
            &format!("wgmma.wait_group.sync.aligned {n};"),
            &[],
            &[],
            acc,
            &["~{memory}"],
        )
    }
    fn mma<'ctx>(
        &self,
        ir: &Ir<'_, 'ctx>,
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
            ir,
            &text,
            &["l", "l", "r"],
            &[da.into(), db.into(), ir.c(1).into()],
            acc,
            &[],
        )
    }
}

impl Nvptx {
    /// Inline PTX with only inputs (`r`: 32-bit, `l`: 64-bit) and a memory clobber.
    fn asm_in<'ctx>(ir: &Ir<'_, 'ctx>, text: &str, cons: &[&str], args: &[IntValue<'ctx>]) {
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

    /// The `.multicast::cluster` qualifier and `, $mask` operand (operand number `at`) of a
    /// TMA copy to the cluster blocks in `multicast`; empty strings for a plain copy.
    fn multicast(at: usize, multicast: Option<u16>) -> (&'static str, String) {
        match multicast {
            Some(_) => (".multicast::cluster", format!(", ${at}")),
            None => ("", String::new()),
        }
    }

    /// The 32-bit shared-window address of a shared pointer.
    fn shared32<'ctx>(ir: &Ir<'_, 'ctx>, p: PointerValue<'ctx>) -> IntValue<'ctx> {
        ok(ir.raw().build_ptr_to_int(p, ir.i32t(), ""))
    }
}

impl Barriers for Nvptx {
    fn fence_proxy_async(&self, ir: &Ir) {
        Self::asm_stmt(ir, "fence.proxy.async.shared::cta;");
    }
    fn mbarrier_init<'ctx>(&self, ir: &Ir<'_, 'ctx>, bar: PointerValue<'ctx>, count: u32) {
        let b = Self::shared32(ir, bar);
        Self::asm_in(
            ir,
            "mbarrier.init.shared::cta.b64 [$0], $1;",
            &["r", "r"],
            &[b, ir.c(count as i64)],
        );
    }
    fn mbarrier_init_fence(&self, ir: &Ir) {
        Self::asm_stmt(ir, "fence.mbarrier_init.release.cluster;");
    }
    fn mbarrier_arrive_expect_tx<'ctx>(
        &self,
        ir: &Ir<'_, 'ctx>,
        bar: PointerValue<'ctx>,
        bytes: u32,
    ) {
        let b = Self::shared32(ir, bar);
        Self::asm_in(
            ir,
            "mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], $1;",
            &["r", "r"],
            &[b, ir.c(bytes as i64)],
        );
    }
    fn mbarrier_wait<'ctx>(
        &self,
        ir: &Ir<'_, 'ctx>,
        bar: PointerValue<'ctx>,
        parity: IntValue<'ctx>,
    ) {
        let b = Self::shared32(ir, bar);
        // Labels inside `{ }` are local to the block, so the loop may be emitted many times.
        Self::asm_in(
            ir,
            "{\n.reg .pred P1;\nLAB_WAIT:\n\
             mbarrier.try_wait.parity.shared::cta.b64 P1, [$0], $1;\n\
             @P1 bra DONE;\nbra LAB_WAIT;\nDONE:\n}",
            &["r", "r"],
            &[b, parity],
        );
    }
    fn mbarrier_arrive<'ctx>(&self, ir: &Ir<'_, 'ctx>, bar: PointerValue<'ctx>) {
        let b = Self::shared32(ir, bar);
        Self::asm_in(ir, "mbarrier.arrive.shared::cta.b64 _, [$0];", &["r"], &[b]);
    }
    fn cp_async_arrive<'ctx>(&self, ir: &Ir<'_, 'ctx>, bar: PointerValue<'ctx>) {
        let b = Self::shared32(ir, bar);
        Self::asm_in(
            ir,
            "cp.async.mbarrier.arrive.noinc.shared::cta.b64 [$0];",
            &["r"],
            &[b],
        );
    }
    fn named_barrier(&self, ir: &Ir, id: u32, threads: u32) {
        ir.intrinsic(
            "llvm.nvvm.barrier.sync.cnt",
            &[],
            &[ir.c(id as i64).into(), ir.c(threads as i64).into()],
        );
    }
    fn cluster_rank<'ctx>(&self, ir: &Ir<'_, 'ctx>) -> IntValue<'ctx> {
        let ty = ir.i32t().fn_type(&[], false);
        let f = ir.ctx.create_inline_asm(
            ty,
            "mov.u32 $0, %cluster_ctarank;".to_string(),
            "=r".to_string(),
            false,
            false,
            None,
            false,
        );
        match ok(ir.raw().build_indirect_call(ty, f, &[], "")).try_as_basic_value() {
            inkwell::values::ValueKind::Basic(v) => v.into_int_value(),
            inkwell::values::ValueKind::Instruction(_) => {
                panic!("%cluster_ctarank returns a value")
            }
        }
    }
    fn cluster_sync(&self, ir: &Ir) {
        // Not `.aligned`: the producer warpgroup's lanes arrive from diverged paths.
        Self::asm_stmt(
            ir,
            "barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;",
        );
    }
    fn mbarrier_arrive_cluster<'ctx>(
        &self,
        ir: &Ir<'_, 'ctx>,
        bar: PointerValue<'ctx>,
        rank: IntValue<'ctx>,
    ) {
        let b = Self::shared32(ir, bar);
        // The default `.release.cta`, as CUTLASS's `ClusterBarrier::arrive(cta_id)`: what the
        // arrival publishes is the end of this warp's `wgmma` reads, which `wait_group`
        // already retired. `.release.cluster` makes ptxas put a fence sequence (`MEMBAR.ALL.CTA;
        // MEMBAR.ALL.GPU; ERRBAR; CGAERRBAR`) before every arrival: on the H200 (session 9)
        // that cost the cluster kernels ~0.5–0.75 µs a K tile, 1.6–2.6× their `cl=1` twins.
        Self::asm_in(
            ir,
            "{\n.reg .b32 R1;\nmapa.shared::cluster.u32 R1, $0, $1;\n\
             mbarrier.arrive.shared::cluster.b64 _, [R1];\n}",
            &["r", "r"],
            &[b, rank],
        );
    }
}

impl BulkTensorCopy for Nvptx {
    fn declare_map_param<'ctx>(&self, ir: &Ir<'_, 'ctx>, index: u32) {
        use inkwell::attributes::{Attribute, AttributeLoc};
        let ctx = ir.ctx;
        let loc = AttributeLoc::Param(index);
        let map_ty = ctx
            .i8_type()
            .array_type(crate::abi::TENSOR_MAP_BYTES as u32);
        let byval = Attribute::get_named_enum_kind_id("byval");
        ir.func
            .add_attribute(loc, ctx.create_type_attribute(byval, map_ty.into()));
        let align = Attribute::get_named_enum_kind_id("align");
        ir.func.add_attribute(
            loc,
            ctx.create_enum_attribute(align, crate::abi::TENSOR_MAP_ALIGN as u64),
        );
        // "grid_constant" lists parameters counting from 1.
        let node = ctx.metadata_node(&[
            ir.func.as_global_value().as_pointer_value().into(),
            ctx.metadata_string("grid_constant").into(),
            ctx.metadata_node(&[ctx.i32_type().const_int(index as u64 + 1, false).into()])
                .into(),
        ]);
        ir.module
            .add_global_metadata("nvvm.annotations", &node)
            .unwrap_or_else(|e| panic!("nvvm.annotations: {e}"));
    }
    fn store_tile<'ctx>(
        &self,
        ir: &Ir<'_, 'ctx>,
        src: PointerValue<'ctx>,
        map: PointerValue<'ctx>,
        coords: &[IntValue<'ctx>],
    ) {
        let n = coords.len();
        let list: Vec<String> = (0..n).map(|i| format!("${}", i + 1)).collect();
        let text = format!(
            "cp.async.bulk.tensor.{n}d.global.shared::cta.bulk_group [$0, {{{}}}], [${}];",
            list.join(", "),
            n + 1
        );
        let m = ok(ir.raw().build_ptr_to_int(map, ir.ctx.i64_type(), ""));
        let mut args = vec![m];
        args.extend_from_slice(coords);
        args.push(Self::shared32(ir, src));
        let mut cons = vec!["l"];
        cons.extend(std::iter::repeat_n("r", n));
        cons.push("r");
        Self::asm_in(ir, &text, &cons, &args);
    }
    fn commit_bulk(&self, ir: &Ir) {
        Self::asm_stmt(ir, "cp.async.bulk.commit_group;");
    }
    fn wait_bulk(&self, ir: &Ir, pending: u32, read: bool) {
        let r = if read { ".read" } else { "" };
        Self::asm_stmt(ir, &format!("cp.async.bulk.wait_group{r} {pending};"));
    }
    fn load_tile<'ctx>(
        &self,
        ir: &Ir<'_, 'ctx>,
        dst: PointerValue<'ctx>,
        map: PointerValue<'ctx>,
        coords: &[IntValue<'ctx>],
        bar: PointerValue<'ctx>,
        multicast: Option<u16>,
    ) {
        let n = coords.len();
        let list: Vec<String> = (0..n).map(|i| format!("${}", i + 2)).collect();
        let (mc, mask) = Self::multicast(n + 3, multicast);
        let text = format!(
            "cp.async.bulk.tensor.{n}d.shared::cluster.global.tile.mbarrier::complete_tx::bytes\
             {mc} [$0], [$1, {{{}}}], [${}]{mask};",
            list.join(", "),
            n + 2
        );
        let m = ok(ir.raw().build_ptr_to_int(map, ir.ctx.i64_type(), ""));
        let mut args = vec![Self::shared32(ir, dst), m];
        args.extend_from_slice(coords);
        args.push(Self::shared32(ir, bar));
        let mut cons = vec!["r", "l"];
        cons.extend(std::iter::repeat_n("r", n));
        cons.push("r");
        if let Some(m) = multicast {
            args.push(ir.ctx.i16_type().const_int(u64::from(m), false));
            cons.push("h");
        }
        Self::asm_in(ir, &text, &cons, &args);
    }
    fn load_im2col<'ctx>(
        &self,
        ir: &Ir<'_, 'ctx>,
        dst: PointerValue<'ctx>,
        map: PointerValue<'ctx>,
        coords: &[IntValue<'ctx>],
        offsets: &[IntValue<'ctx>],
        bar: PointerValue<'ctx>,
        multicast: Option<u16>,
    ) {
        let (n, o) = (coords.len(), offsets.len());
        let list = |from: usize, len: usize| -> String {
            (from..from + len)
                .map(|i| format!("${i}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let (mc, mask) = Self::multicast(n + 3 + o, multicast);
        let text = format!(
            "cp.async.bulk.tensor.{n}d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes\
             {mc} [$0], [$1, {{{}}}], [${}], {{{}}}{mask};",
            list(2, n),
            n + 2,
            list(n + 3, o)
        );
        let m = ok(ir.raw().build_ptr_to_int(map, ir.ctx.i64_type(), ""));
        let mut args = vec![Self::shared32(ir, dst), m];
        args.extend_from_slice(coords);
        args.push(Self::shared32(ir, bar));
        // The offsets are 16-bit operands (`h` registers).
        let i16t = ir.ctx.i16_type();
        args.extend(
            offsets
                .iter()
                .map(|&v| ok(ir.raw().build_int_truncate(v, i16t, ""))),
        );
        let mut cons = vec!["r", "l"];
        cons.extend(std::iter::repeat_n("r", n));
        cons.push("r");
        cons.extend(std::iter::repeat_n("h", o));
        if let Some(m) = multicast {
            args.push(ir.ctx.i16_type().const_int(u64::from(m), false));
            cons.push("h");
        }
        Self::asm_in(ir, &text, &cons, &args);
    }
}
