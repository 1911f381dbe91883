//! AMDGPU: `amdgcn-amd-amdhsa`, kernels in calling convention 91 (`amdgpu_kernel`), wave64,
//! MFMA for f16/bf16. The barrier and the float atomic need sync scopes and metadata that the
//! LLVM C API cannot build, so they live in the prelude IR.

use super::ir::{ok, Ir};
use super::spec::{
    dynamic_shared, AsyncCopy, Barriers, BulkTensorCopy, Mfma, TargetSpec, WarpMma, WarpgroupMma,
};
use super::target::Target;
use crate::problem::DType;
use inkwell::{
    context::Context,
    values::{BasicValueEnum, FloatValue, FunctionValue, IntValue, PointerValue, VectorValue},
    AddressSpace,
};

/// An AMD CDNA GPU.
pub(crate) struct Amdgpu {
    /// Which one.
    pub target: Target,
}

impl TargetSpec for Amdgpu {
    fn target(&self) -> Target {
        self.target
    }
    fn triple(&self) -> String {
        self.target.arch().isa.triple.into()
    }
    fn cpu(&self) -> String {
        self.target.arch().isa.cpu.into()
    }
    fn features(&self) -> String {
        self.target.arch().isa.features.into()
    }
    fn global_as(&self) -> AddressSpace {
        AddressSpace::from(1u16)
    }
    fn shared_as(&self) -> AddressSpace {
        AddressSpace::from(3u16)
    }
    fn declare_kernel<'ctx>(&self, _ctx: &'ctx Context, f: FunctionValue<'ctx>) {
        f.set_call_conventions(91);
    }
    fn set_block_size(&self, ir: &Ir, threads: u32) {
        // Without it the backend assumes 1024 threads and caps registers accordingly.
        let v = format!("{threads},{threads}");
        let attr = ir
            .ctx
            .create_string_attribute("amdgpu-flat-work-group-size", &v);
        ir.func
            .add_attribute(inkwell::attributes::AttributeLoc::Function, attr);
    }
    fn thread_idx<'ctx>(&self, ir: &Ir<'_, 'ctx>) -> IntValue<'ctx> {
        ir.intrinsic("llvm.amdgcn.workitem.id.x", &[], &[])
            .into_int_value()
    }
    fn block_idx<'ctx>(&self, ir: &Ir<'_, 'ctx>, dim: u32) -> IntValue<'ctx> {
        let name = ["x", "y", "z"][dim as usize];
        ir.intrinsic(&format!("llvm.amdgcn.workgroup.id.{name}"), &[], &[])
            .into_int_value()
    }
    fn barrier(&self, ir: &Ir) {
        ir.call(ir.prelude_fn("convtune_barrier"), &[]);
    }
    fn shared_base<'ctx>(&self, ir: &Ir<'_, 'ctx>) -> PointerValue<'ctx> {
        dynamic_shared(ir, self.shared_as())
    }
    fn prelude_ir(&self) -> String {
        // Workgroup-scope fences around s_barrier make LDS writes before the barrier visible
        // after it (what HIP's __syncthreads does). The fadd is agent-scope on memory that is
        // never fine-grained (hipMalloc), so it becomes a hardware float atomic, not a CAS loop.
        // The split-K fix-up's arrival and fence are agent-scope acquire-release.
        r#"
declare void @llvm.amdgcn.s.barrier() convergent nounwind willreturn
define internal void @convtune_barrier() alwaysinline convergent nounwind {
  fence syncscope("workgroup") release
  call void @llvm.amdgcn.s.barrier()
  fence syncscope("workgroup") acquire
  ret void
}
define internal void @convtune_atomic_fadd(ptr addrspace(1) %p, float %v) alwaysinline nounwind {
  %old = atomicrmw fadd ptr addrspace(1) %p, float %v syncscope("agent") monotonic, align 4, !amdgpu.no.fine.grained.memory !0, !amdgpu.ignore.denormal.mode !0
  ret void
}
define internal i32 @convtune_arrive(ptr addrspace(1) %p) alwaysinline nounwind {
  %old = atomicrmw add ptr addrspace(1) %p, i32 1 syncscope("agent") acq_rel, align 4
  ret i32 %old
}
define internal void @convtune_fence_device(ptr addrspace(1) %p) alwaysinline nounwind {
  fence syncscope("agent") acq_rel
  ret void
}
!0 = !{}
"#
        .into()
    }
    fn f32_to_half<'ctx>(
        &self,
        ir: &Ir<'_, 'ctx>,
        v: FloatValue<'ctx>,
        dt: DType,
    ) -> IntValue<'ctx> {
        match dt {
            DType::BF16 => f32_to_bf16_bits(ir, v),
            _ => {
                let h = ok(ir.raw().build_float_trunc(v, ir.ctx.f16_type(), ""));
                ir.bitcast(h.into(), ir.ctx.i16_type().into())
                    .into_int_value()
            }
        }
    }
    fn async_copy(&self) -> Option<&dyn AsyncCopy> {
        None
    }
    fn warp_mma(&self) -> Option<&dyn WarpMma> {
        None
    }
    fn mfma(&self) -> Option<&dyn Mfma> {
        // Every CDNA processor `Target` accepts has MFMA.
        Some(self)
    }
    fn warpgroup_mma(&self) -> Option<&dyn WarpgroupMma> {
        None
    }
    fn barriers(&self) -> Option<&dyn Barriers> {
        None
    }
    fn bulk_tensor_copy(&self) -> Option<&dyn BulkTensorCopy> {
        None
    }
}

impl Mfma for Amdgpu {
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
        let per_lane = k * m / 64;
        let (suffix, a, b) = match dt {
            DType::F32 => ("f32", a, b),
            DType::F16 => {
                let h = ir.ctx.f16_type().vec_type(per_lane).into();
                ("f16", ir.bitcast(a, h), ir.bitcast(b, h))
            }
            DType::BF16 if per_lane == 4 => ("bf16.1k", a, b),
            DType::BF16 => ("bf16", a, b),
        };
        let name = format!("llvm.amdgcn.mfma.f32.{m}x{m}x{k}{suffix}");
        let z = ir.c(0).into();
        ir.intrinsic(&name, &[], &[a, b, c.into(), z, z, z])
            .into_vector_value()
    }
}

/// f32 → bf16 bits, round to nearest even, NaN kept quiet, with integer operations only (CDNA
/// before gfx950 has no conversion instruction).
pub(crate) fn f32_to_bf16_bits<'ctx>(ir: &Ir<'_, 'ctx>, v: FloatValue<'ctx>) -> IntValue<'ctx> {
    let b = ir.raw();
    let bits = ir.bitcast(v.into(), ir.i32t().into()).into_int_value();
    let hi = ok(b.build_right_shift(bits, ir.c(16), false, ""));
    let lsb = ok(b.build_and(hi, ir.c(1), ""));
    let rounded = ir.add(ir.add(bits, ir.c(0x7fff)), lsb);
    let rounded = ok(b.build_right_shift(rounded, ir.c(16), false, ""));
    let quiet = ok(b.build_or(hi, ir.c(0x40), ""));
    let mag = ok(b.build_and(bits, ir.c(0x7fff_ffff), ""));
    let is_nan = ok(b.build_int_compare(inkwell::IntPredicate::UGT, mag, ir.c(0x7f80_0000), ""));
    let r = ir.seli(is_nan, quiet, rounded);
    ok(b.build_int_truncate(r, ir.ctx.i16_type(), ""))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::{ArgRole, CONV_ARGS};
    use crate::codegen::{builder::Kb, emu::spec::HostEmu, machine};
    use inkwell::OptimizationLevel;

    /// The integer bf16 rounding (what AMD kernels use to store bf16) against the `half` crate,
    /// JIT-compiled for the host: specials, ties, subnormals and random bit patterns.
    #[test]
    fn bf16_rounding_matches_half() {
        let mut inputs: Vec<u32> = vec![
            0,
            0x8000_0000,
            0x7f80_0000,
            0xff80_0000,
            0x7fc0_0000,
            0x7f80_0001,
            0xffff_ffff,
            0x7f7f_ffff,
            0x0000_0001,
            0x0000_8000,
            0x0001_8000,
            0x3f80_8000,
            0x3f81_8000,
            0x3f80_8001,
        ];
        let mut x = 0x1234_5678u32;
        for _ in 0..100_000 {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            inputs.push(x);
        }
        let spec = HostEmu::new(Target::of(crate::arch::Arch::GFX90A));
        let tm = machine::machine(&spec).unwrap();
        let ctx = Context::create();
        let m = machine::new_module(&ctx, &spec, &tm, "bf16").unwrap();
        let kb = Kb::kernel(&ctx, &m, &spec, "round", CONV_ARGS, &[ArgRole::Output]);
        let n = kb.c(inputs.len() as i64);
        kb.for_range(kb.c(0), n, |kb, i| {
            let f32t = kb.f32t().into();
            let v = kb
                .get(kb.gep(f32t, kb.arg(ArgRole::Input), i), f32t)
                .into_float_value();
            let h = f32_to_bf16_bits(kb, v);
            kb.set(
                kb.gep(kb.ctx.i16_type().into(), kb.arg(ArgRole::Output), i),
                h.into(),
            );
        });
        kb.finish();
        machine::optimize(&m, &tm).unwrap();
        let ee = m
            .create_jit_execution_engine(OptimizationLevel::Default)
            .unwrap();
        let addr = ee.get_function_address("round").unwrap();
        type F = unsafe extern "C" fn(*mut u8, *mut u8, *mut u8, *mut u8, *const u8);
        // SAFETY: `round` was emitted above with this signature; it reads `inputs.len()` f32
        // from argument 0 and writes as many u16 to argument 2.
        let f = unsafe { std::mem::transmute::<usize, F>(addr) };
        let mut src: Vec<f32> = inputs.iter().map(|&b| f32::from_bits(b)).collect();
        let mut dst = vec![0u16; inputs.len()];
        let null = std::ptr::null_mut();
        // SAFETY: buffers sized as the kernel expects; the context argument is unused.
        unsafe {
            f(
                src.as_mut_ptr() as *mut u8,
                null,
                dst.as_mut_ptr() as *mut u8,
                null,
                null,
            )
        };
        for (&b, &got) in inputs.iter().zip(&dst) {
            let want = half::bf16::from_f32(f32::from_bits(b)).to_bits();
            assert_eq!(got, want, "f32 bits {b:#010x}");
        }
    }
}
