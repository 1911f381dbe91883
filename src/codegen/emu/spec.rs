//! The host target spec: the GPU kernels compiled for this CPU, with every GPU-only operation
//! (thread ids, barriers, `ldmatrix`, `mma`, MFMA, `cp.async`, half conversions) turned into a
//! call into the emulator runtime, and every memory access checked.

use crate::codegen::compile::spec_for;
use crate::codegen::ir::{ok, Ir, Mem};
use crate::codegen::spec::{
    AsyncCopy, Barriers, BulkTensorCopy, Capability, Mfma, RegisterRealloc, TargetSpec, WarpMma,
    WarpgroupMma,
};
use crate::codegen::target::Target;
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
    /// The instruction families of `like`: the emulator offers exactly those, so a config
    /// the GPU cannot run is refused here too.
    caps: Vec<Capability>,
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
    /// Kernels for the host that behave like kernels for `like`.
    pub fn new(like: Target) -> Self {
        HostEmu {
            like,
            caps: super::super::spec::capabilities(spec_for(like, false).as_ref()),
        }
    }

    /// Whether the imitated GPU has family `cap`.
    fn offers(&self, cap: Capability) -> bool {
        self.caps.contains(&cap)
    }

    /// The thread context: the argument the host spec appends to every kernel.
    fn ctx_arg<'ctx>(ir: &Ir<'_, 'ctx>) -> BasicValueEnum<'ctx> {
        ir.last_param()
    }

    /// Calls runtime function `name` with the thread context first.
    fn rt<'ctx>(
        ir: &Ir<'_, 'ctx>,
        name: &str,
        ret: Option<BasicTypeEnum<'ctx>>,
        args: &[BasicValueEnum<'ctx>],
    ) -> Option<BasicValueEnum<'ctx>> {
        let mut all = vec![Self::ctx_arg(ir)];
        all.extend_from_slice(args);
        Self::call(ir, name, ret, &all)
    }

    fn call<'ctx>(
        ir: &Ir<'_, 'ctx>,
        name: &str,
        ret: Option<BasicTypeEnum<'ctx>>,
        args: &[BasicValueEnum<'ctx>],
    ) -> Option<BasicValueEnum<'ctx>> {
        let params: Vec<BasicMetadataTypeEnum> = args.iter().map(|a| a.get_type().into()).collect();
        let ty = match ret {
            Some(r) => r.fn_type(&params, false),
            None => ir.ctx.void_type().fn_type(&params, false),
        };
        let f = ir.extern_fn(name, ty);
        ir.call(f, args)
    }

    /// A private array of `n` elements of `ty`, as a pointer for the runtime to read or fill.
    fn array<'ctx>(
        ir: &Ir<'_, 'ctx>,
        ty: BasicTypeEnum<'ctx>,
        vals: &[BasicValueEnum<'ctx>],
        n: u32,
    ) -> PointerValue<'ctx> {
        let arr = ir.var(ty.array_type(n).const_zero().into());
        for (i, &v) in vals.iter().enumerate() {
            ir.set(ir.gep(ty, arr, ir.c(i as i64)), v);
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
    fn set_block_size(&self, _kb: &Ir, _threads: u32) {}
    fn thread_idx<'ctx>(&self, ir: &Ir<'_, 'ctx>) -> IntValue<'ctx> {
        Self::rt(ir, "emu_tid", Some(ir.i32t().into()), &[])
            .map(|v| v.into_int_value())
            .unwrap_or_else(|| ir.c(0))
    }
    fn block_idx<'ctx>(&self, ir: &Ir<'_, 'ctx>, dim: u32) -> IntValue<'ctx> {
        Self::rt(
            ir,
            "emu_bid",
            Some(ir.i32t().into()),
            &[ir.c(dim as i64).into()],
        )
        .map(|v| v.into_int_value())
        .unwrap_or_else(|| ir.c(0))
    }
    fn barrier(&self, ir: &Ir) {
        Self::rt(ir, "emu_barrier", None, &[]);
    }
    fn shared_base<'ctx>(&self, ir: &Ir<'_, 'ctx>) -> PointerValue<'ctx> {
        Self::rt(ir, "emu_smem", Some(ptr_ty(ir.ctx)), &[])
            .map(|v| v.into_pointer_value())
            .unwrap_or_else(|| panic!("emu_smem returns a pointer"))
    }
    fn guard<'ctx>(
        &self,
        ir: &Ir<'_, 'ctx>,
        mem: Mem,
        ptr: PointerValue<'ctx>,
        bytes: u32,
        align: u32,
        store: bool,
    ) -> PointerValue<'ctx> {
        let flags = u32::from(mem == Mem::Shared) | (u32::from(store) << 1);
        let args = [
            ptr.into(),
            ir.c(bytes as i64).into(),
            ir.c(align as i64).into(),
            ir.c(flags as i64).into(),
        ];
        Self::rt(ir, "emu_guard", Some(ptr_ty(ir.ctx)), &args)
            .map(|v| v.into_pointer_value())
            .unwrap_or(ptr)
    }
    fn prelude_ir(&self) -> String {
        r#"
define internal void @convtune_atomic_fadd(ptr %p, float %v) alwaysinline nounwind {
  %old = atomicrmw fadd ptr %p, float %v monotonic, align 4
  ret void
}
define internal i32 @convtune_arrive(ptr %p) alwaysinline nounwind {
  %old = atomicrmw add ptr %p, i32 1 seq_cst, align 4
  ret i32 %old
}
define internal void @convtune_fence_device(ptr %p) alwaysinline nounwind {
  fence seq_cst
  ret void
}
"#
        .into()
    }
    fn half_to_f32<'ctx>(
        &self,
        ir: &Ir<'_, 'ctx>,
        v: IntValue<'ctx>,
        dt: DType,
    ) -> FloatValue<'ctx> {
        let w = ok(ir.raw().build_int_z_extend(v, ir.i32t(), ""));
        let code = ir.c(half_code(dt) as i64).into();
        Self::call(
            ir,
            "emu_half_to_f32",
            Some(ir.f32t().into()),
            &[w.into(), code],
        )
        .map(|v| v.into_float_value())
        .unwrap_or_else(|| ir.cf(0.0))
    }
    fn f32_to_half<'ctx>(
        &self,
        ir: &Ir<'_, 'ctx>,
        v: FloatValue<'ctx>,
        dt: DType,
    ) -> IntValue<'ctx> {
        let code = ir.c(half_code(dt) as i64).into();
        let w = Self::call(
            ir,
            "emu_f32_to_half",
            Some(ir.i32t().into()),
            &[v.into(), code],
        )
        .map(|v| v.into_int_value())
        .unwrap_or_else(|| ir.c(0));
        ok(ir.raw().build_int_truncate(w, ir.ctx.i16_type(), ""))
    }
    fn async_copy(&self) -> Option<&dyn AsyncCopy> {
        self.offers(Capability::AsyncCopy).then_some(self)
    }
    fn warp_mma(&self) -> Option<&dyn WarpMma> {
        self.offers(Capability::WarpMma).then_some(self)
    }
    fn mfma(&self) -> Option<&dyn Mfma> {
        self.offers(Capability::Mfma).then_some(self)
    }
    fn warpgroup_mma(&self) -> Option<&dyn WarpgroupMma> {
        self.offers(Capability::WarpgroupMma).then_some(self)
    }
    fn barriers(&self) -> Option<&dyn Barriers> {
        self.offers(Capability::Barriers).then_some(self)
    }
    fn bulk_tensor_copy(&self) -> Option<&dyn BulkTensorCopy> {
        self.offers(Capability::BulkTensorCopy).then_some(self)
    }
    fn register_realloc(&self) -> Option<&dyn RegisterRealloc> {
        self.offers(Capability::RegisterRealloc).then_some(self)
    }
}

impl RegisterRealloc for HostEmu {
    /// The host has no register file to cap.
    fn cap_registers(&self, _ir: &Ir, _regs: u32) {}
    fn setmaxnreg(&self, ir: &Ir, inc: bool, regs: u32) {
        let args = [ir.c(i64::from(inc)).into(), ir.c(regs as i64).into()];
        Self::rt(ir, "emu_setmaxnreg", None, &args);
    }
}

impl WarpMma for HostEmu {
    fn ldmatrix_x4<'ctx>(
        &self,
        ir: &Ir<'_, 'ctx>,
        ptr: PointerValue<'ctx>,
        trans: bool,
    ) -> [IntValue<'ctx>; 4] {
        let i32t: BasicTypeEnum = ir.i32t().into();
        let out = Self::array(ir, i32t, &[], 4);
        let trans = ir.c(i64::from(trans)).into();
        Self::rt(
            ir,
            "emu_ldmatrix_x4",
            None,
            &[ptr.into(), trans, out.into()],
        );
        std::array::from_fn(|i| {
            ir.get(ir.gep(i32t, out, ir.c(i as i64)), i32t)
                .into_int_value()
        })
    }
    fn mma_16816<'ctx>(
        &self,
        ir: &Ir<'_, 'ctx>,
        dt: DType,
        a: [IntValue<'ctx>; 4],
        b: [IntValue<'ctx>; 2],
        c: [FloatValue<'ctx>; 4],
    ) -> [FloatValue<'ctx>; 4] {
        let (i32t, f32t): (BasicTypeEnum, BasicTypeEnum) = (ir.i32t().into(), ir.f32t().into());
        let pa = Self::array(ir, i32t, &a.map(Into::into), 4);
        let pb = Self::array(ir, i32t, &b.map(Into::into), 2);
        let pc = Self::array(ir, f32t, &c.map(Into::into), 4);
        let code = ir.c(half_code(dt) as i64).into();
        Self::rt(
            ir,
            "emu_mma16816",
            None,
            &[code, pa.into(), pb.into(), pc.into()],
        );
        std::array::from_fn(|i| {
            ir.get(ir.gep(f32t, pc, ir.c(i as i64)), f32t)
                .into_float_value()
        })
    }
}

impl Mfma for HostEmu {
    fn mfma<'ctx>(
        &self,
        ir: &Ir<'_, 'ctx>,
        dt: DType,
        m: u32,
        k: u32,
        a: BasicValueEnum<'ctx>,
        b: BasicValueEnum<'ctx>,
        c: VectorValue<'ctx>,
    ) -> VectorValue<'ctx> {
        let pa = ir.var(a);
        let pb = ir.var(b);
        let pc = ir.var(c.into());
        let args = [
            ir.c(dtype_code(dt) as i64).into(),
            ir.c(m as i64).into(),
            ir.c(k as i64).into(),
            pa.into(),
            pb.into(),
            pc.into(),
        ];
        Self::rt(ir, "emu_mfma", None, &args);
        ir.get(pc, c.get_type().into()).into_vector_value()
    }
}

impl AsyncCopy for HostEmu {
    fn cp_async<'ctx>(
        &self,
        ir: &Ir<'_, 'ctx>,
        dst: PointerValue<'ctx>,
        src: PointerValue<'ctx>,
        bytes: u32,
        src_bytes: IntValue<'ctx>,
    ) {
        let args = [
            dst.into(),
            src.into(),
            ir.c(bytes as i64).into(),
            src_bytes.into(),
        ];
        Self::rt(ir, "emu_cp_async", None, &args);
    }
    fn commit(&self, ir: &Ir) {
        Self::rt(ir, "emu_cp_commit", None, &[]);
    }
    fn wait(&self, ir: &Ir, n: u32) {
        Self::rt(ir, "emu_cp_wait", None, &[ir.c(n as i64).into()]);
    }
}

impl WarpgroupMma for HostEmu {
    fn smem_addr<'ctx>(&self, ir: &Ir<'_, 'ctx>, ptr: PointerValue<'ctx>) -> IntValue<'ctx> {
        // The offset into the block's shared memory: what the GPU's shared window address is
        // when the dynamic shared memory starts at 0 (1024-aligned on the GPU).
        let i64t = ir.ctx.i64_type();
        let r = ir.raw();
        let p = ok(r.build_ptr_to_int(ptr, i64t, ""));
        let base = ok(r.build_ptr_to_int(self.shared_base(ir), i64t, ""));
        let off = ok(r.build_int_sub(p, base, ""));
        ok(r.build_int_truncate(off, ir.i32t(), ""))
    }
    fn fence(&self, ir: &Ir) {
        Self::rt(ir, "emu_wgmma_fence", None, &[]);
    }
    fn commit(&self, ir: &Ir) {
        Self::rt(ir, "emu_wgmma_commit", None, &[]);
    }
    fn wait<'ctx>(
        &self,
        ir: &Ir<'_, 'ctx>,
        n: u32,
        acc: &[FloatValue<'ctx>],
    ) -> Vec<FloatValue<'ctx>> {
        Self::rt(ir, "emu_wgmma_wait", None, &[ir.c(n as i64).into()]);
        acc.to_vec()
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
        let f32t: BasicTypeEnum = ir.f32t().into();
        let vals: Vec<BasicValueEnum> = acc.iter().map(|&v| v.into()).collect();
        let pc = Self::array(ir, f32t, &vals, acc.len() as u32);
        let args = [
            ir.c(half_code(dt) as i64).into(),
            ir.c(n as i64).into(),
            ir.c(i64::from(trans[0]) | (i64::from(trans[1]) << 1))
                .into(),
            da.into(),
            db.into(),
            pc.into(),
        ];
        Self::rt(ir, "emu_wgmma", None, &args);
        (0..acc.len())
            .map(|i| {
                ir.get(ir.gep(f32t, pc, ir.c(i as i64)), f32t)
                    .into_float_value()
            })
            .collect()
    }
}

impl Barriers for HostEmu {
    fn fence_proxy_async(&self, ir: &Ir) {
        Self::rt(ir, "emu_fence_proxy", None, &[]);
    }
    fn mbarrier_init<'ctx>(&self, ir: &Ir<'_, 'ctx>, bar: PointerValue<'ctx>, count: u32) {
        let args = [bar.into(), ir.c(count as i64).into()];
        Self::rt(ir, "emu_mbar_init", None, &args);
    }
    fn mbarrier_init_fence(&self, ir: &Ir) {
        Self::rt(ir, "emu_mbar_fence", None, &[]);
    }
    fn mbarrier_arrive_expect_tx<'ctx>(
        &self,
        ir: &Ir<'_, 'ctx>,
        bar: PointerValue<'ctx>,
        bytes: u32,
    ) {
        let args = [bar.into(), ir.c(bytes as i64).into()];
        Self::rt(ir, "emu_mbar_arrive_tx", None, &args);
    }
    fn mbarrier_wait<'ctx>(
        &self,
        ir: &Ir<'_, 'ctx>,
        bar: PointerValue<'ctx>,
        parity: IntValue<'ctx>,
    ) {
        Self::rt(ir, "emu_mbar_wait", None, &[bar.into(), parity.into()]);
    }
    fn mbarrier_arrive<'ctx>(&self, ir: &Ir<'_, 'ctx>, bar: PointerValue<'ctx>) {
        Self::rt(ir, "emu_mbar_arrive", None, &[bar.into()]);
    }
    fn cp_async_arrive<'ctx>(&self, ir: &Ir<'_, 'ctx>, bar: PointerValue<'ctx>) {
        Self::rt(ir, "emu_cp_async_arrive", None, &[bar.into()]);
    }
    fn named_barrier(&self, ir: &Ir, id: u32, threads: u32) {
        let args = [ir.c(id as i64).into(), ir.c(threads as i64).into()];
        Self::rt(ir, "emu_named_barrier", None, &args);
    }
    fn cluster_rank<'ctx>(&self, ir: &Ir<'_, 'ctx>) -> IntValue<'ctx> {
        Self::rt(ir, "emu_cluster_rank", Some(ir.i32t().into()), &[])
            .unwrap_or_else(|| panic!("emu_cluster_rank returns a value"))
            .into_int_value()
    }
    fn cluster_sync(&self, ir: &Ir) {
        Self::rt(ir, "emu_cluster_sync", None, &[]);
    }
    fn mbarrier_arrive_cluster<'ctx>(
        &self,
        ir: &Ir<'_, 'ctx>,
        bar: PointerValue<'ctx>,
        rank: IntValue<'ctx>,
    ) {
        Self::rt(
            ir,
            "emu_mbar_arrive_cluster",
            None,
            &[bar.into(), rank.into()],
        );
    }
}

impl BulkTensorCopy for HostEmu {
    /// The host passes a pointer to its own 128-byte map (see `emu/tma.rs`); no attributes.
    fn declare_map_param<'ctx>(&self, _ir: &Ir<'_, 'ctx>, _index: u32) {}
    /// The host has no descriptor cache.
    fn prefetch_map<'ctx>(&self, _ir: &Ir<'_, 'ctx>, _map: PointerValue<'ctx>) {}
    fn store_tile<'ctx>(
        &self,
        ir: &Ir<'_, 'ctx>,
        src: PointerValue<'ctx>,
        map: PointerValue<'ctx>,
        coords: &[IntValue<'ctx>],
    ) {
        let mut args: Vec<BasicValueEnum> =
            vec![src.into(), map.into(), ir.c(coords.len() as i64).into()];
        for i in 0..crate::abi::TENSOR_MAP_RANK {
            args.push(coords.get(i).copied().unwrap_or_else(|| ir.c(0)).into());
        }
        Self::rt(ir, "emu_tma_store", None, &args);
    }
    fn commit_bulk(&self, ir: &Ir) {
        Self::rt(ir, "emu_bulk_commit", None, &[]);
    }
    fn wait_bulk(&self, ir: &Ir, pending: u32, read: bool) {
        let args = [
            ir.c(i64::from(pending)).into(),
            ir.c(i64::from(read)).into(),
        ];
        Self::rt(ir, "emu_bulk_wait", None, &args);
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
        let mut args: Vec<BasicValueEnum> =
            vec![dst.into(), map.into(), ir.c(coords.len() as i64).into()];
        for i in 0..crate::abi::TENSOR_MAP_RANK {
            args.push(coords.get(i).copied().unwrap_or_else(|| ir.c(0)).into());
        }
        args.push(bar.into());
        match multicast {
            Some(m) => {
                args.push(ir.c(i64::from(m)).into());
                Self::rt(ir, "emu_tma_load_multicast", None, &args)
            }
            None => Self::rt(ir, "emu_tma_load", None, &args),
        };
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
        let rank = crate::abi::TENSOR_MAP_RANK;
        let mut args: Vec<BasicValueEnum> =
            vec![dst.into(), map.into(), ir.c(coords.len() as i64).into()];
        for i in 0..rank {
            args.push(coords.get(i).copied().unwrap_or_else(|| ir.c(0)).into());
        }
        for i in 0..rank - 2 {
            args.push(offsets.get(i).copied().unwrap_or_else(|| ir.c(0)).into());
        }
        args.push(bar.into());
        match multicast {
            Some(m) => {
                args.push(ir.c(i64::from(m)).into());
                Self::rt(ir, "emu_tma_load_im2col_multicast", None, &args)
            }
            None => Self::rt(ir, "emu_tma_load_im2col", None, &args),
        };
    }
}
