//! How the one kernel implementation reaches target instructions: [`TargetSpec`], what every
//! target has (thread and block ids, the block barrier, shared memory, half conversions), and
//! one trait per instruction family that a target has or lacks ([`AsyncCopy`], [`WarpMma`],
//! [`Mfma`], [`WarpgroupMma`], [`Barriers`], [`BulkTensorCopy`]). A target exposes a family
//! through an accessor that returns `None` when it lacks it, so the planner asks before any IR
//! is emitted and turns a missing family into a [`super::CodegenError::Missing`] with a reason;
//! nothing here panics because a target lacks an instruction. NVPTX and AMDGPU implement the
//! traits for real GPUs; the emulator implements them for the host CPU, with the families of
//! the GPU it imitates.
//!
//! Every method takes an [`Ir`] (target-free verbs), never the kernel builder, so the targets
//! and the builder do not depend on each other.

use super::ir::{ok, Ir, Mem};
use super::target::Target;
use crate::problem::DType;
use inkwell::{
    context::Context,
    values::{BasicValueEnum, FloatValue, FunctionValue, IntValue, PointerValue, VectorValue},
    AddressSpace,
};
use std::fmt;

/// An instruction family a target has or lacks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Capability {
    /// Global→shared copies that bypass registers (NVIDIA `cp.async`).
    AsyncCopy,
    /// Warp-level matrix multiply with fragments from shared memory (NVIDIA `mma.sync` and
    /// `ldmatrix`).
    WarpMma,
    /// Wave-level matrix multiply (AMD MFMA).
    Mfma,
    /// Warpgroup matrix multiply from shared-memory descriptors (Hopper `wgmma`).
    WarpgroupMma,
    /// Ordering between the generic and the async proxy, and (with TMA) transaction barriers
    /// (Hopper `fence.proxy.async`, `mbarrier`).
    Barriers,
    /// Bulk tensor copies described by a tensor map (Hopper TMA), completing on `mbarrier`
    /// transaction counts.
    BulkTensorCopy,
    /// Per-warpgroup register reallocation with a register cap at entry (Hopper `setmaxnreg`,
    /// `.maxnreg`).
    RegisterRealloc,
}

impl Capability {
    /// Every family, in a fixed order (reports list them so).
    pub const ALL: [Capability; 7] = [
        Capability::AsyncCopy,
        Capability::WarpMma,
        Capability::Mfma,
        Capability::WarpgroupMma,
        Capability::Barriers,
        Capability::BulkTensorCopy,
        Capability::RegisterRealloc,
    ];

    /// The instructions, as an engineer would name them.
    pub fn name(self) -> &'static str {
        match self {
            Capability::AsyncCopy => "async copy (cp.async)",
            Capability::WarpMma => "warp MMA (mma.sync, ldmatrix)",
            Capability::Mfma => "wave MMA (MFMA)",
            Capability::WarpgroupMma => "warpgroup MMA (wgmma)",
            Capability::Barriers => "async-proxy barriers (fence.proxy.async)",
            Capability::BulkTensorCopy => "bulk tensor copy (TMA)",
            Capability::RegisterRealloc => "register reallocation (setmaxnreg)",
        }
    }
}

impl fmt::Display for Capability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What every target provides, and the accessors of the families it may lack.
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
    /// Pointer arguments appended after the kernel's own (the emulator's context).
    fn extra_params(&self) -> u32 {
        0
    }
    /// Marks a new function as a kernel (calling convention, attributes).
    fn declare_kernel<'ctx>(&self, ctx: &'ctx Context, f: FunctionValue<'ctx>);
    /// Records the block size so the backend can budget registers for it.
    fn set_block_size(&self, ir: &Ir, threads: u32);
    /// Thread index within the block (x).
    fn thread_idx<'ctx>(&self, ir: &Ir<'_, 'ctx>) -> IntValue<'ctx>;
    /// Block index along `dim`.
    fn block_idx<'ctx>(&self, ir: &Ir<'_, 'ctx>, dim: u32) -> IntValue<'ctx>;
    /// Block-wide barrier ordering shared memory (every GPU has one).
    fn barrier(&self, ir: &Ir);
    /// Base of the block's dynamic shared memory.
    fn shared_base<'ctx>(&self, ir: &Ir<'_, 'ctx>) -> PointerValue<'ctx>;
    /// Hook on every memory access: the GPUs return `ptr`; the emulator checks bounds and
    /// alignment and redirects a bad access to scratch memory after recording it.
    fn guard<'ctx>(
        &self,
        _ir: &Ir<'_, 'ctx>,
        _mem: Mem,
        ptr: PointerValue<'ctx>,
        _bytes: u32,
        _align: u32,
        _store: bool,
    ) -> PointerValue<'ctx> {
        ptr
    }
    /// An empty use of `v` that the compiler must keep where it is: a value read here is not
    /// re-read (sunk) later. The TMA loop pins the block index it reads after the loop, whose
    /// special-register read between the `mbarrier` spin loop and `wgmma.wait_group` makes
    /// ptxas serialise `wgmma` (C7514). A no-op where that cannot happen.
    fn pin<'ctx>(&self, _ir: &Ir<'_, 'ctx>, _v: IntValue<'ctx>) {}
    /// Whether a bounds check made of several parts compares the last with bounds from the
    /// others (`−s ≤ last < extent − s`) instead of testing their sum: ptxas 13.0 -O3 fuses a
    /// quotient added to several load slots' coordinates into `IMAD.HI`s with 64-bit addends
    /// and merges two whose addends differ only in the high word, so one slot checks another's
    /// row (session 24). It costs a second register per slot, which AMD's VGPR budget (and
    /// legality's estimate of it) does not spare, and AMD's compiler has no such fault. The
    /// emulator does what the GPU it imitates does.
    fn split_bound_checks(&self) -> bool {
        self.target().arch().vendor == crate::arch::Vendor::Nvidia
    }
    /// LLVM IR text that every module starts from: helpers the C API cannot build (sync
    /// scopes, atomic metadata). Must define `convtune_atomic_fadd(ptr global, float)`,
    /// `i32 convtune_arrive(ptr global)` (device-scope acquire-release increment, returning the
    /// old value) and `convtune_fence_device(ptr global)` (device-scope acquire-release fence).
    fn prelude_ir(&self) -> String;
    /// f16/bf16 bits (i16) to f32; exact, so every real target shares one implementation (the
    /// emulator overrides it to call its own checked conversion).
    fn half_to_f32<'ctx>(
        &self,
        ir: &Ir<'_, 'ctx>,
        v: IntValue<'ctx>,
        dt: DType,
    ) -> FloatValue<'ctx> {
        half_to_f32_generic(ir, v, dt)
    }
    /// f32 to f16/bf16 bits (i16), round to nearest even.
    fn f32_to_half<'ctx>(
        &self,
        ir: &Ir<'_, 'ctx>,
        v: FloatValue<'ctx>,
        dt: DType,
    ) -> IntValue<'ctx>;

    /// `cp.async`, or `None`.
    fn async_copy(&self) -> Option<&dyn AsyncCopy>;
    /// `mma.sync` with `ldmatrix`, or `None`.
    fn warp_mma(&self) -> Option<&dyn WarpMma>;
    /// MFMA, or `None`.
    fn mfma(&self) -> Option<&dyn Mfma>;
    /// `wgmma`, or `None`.
    fn warpgroup_mma(&self) -> Option<&dyn WarpgroupMma>;
    /// Async-proxy fences and barriers, or `None`.
    fn barriers(&self) -> Option<&dyn Barriers>;
    /// TMA, or `None`.
    fn bulk_tensor_copy(&self) -> Option<&dyn BulkTensorCopy>;
    /// `setmaxnreg`, or `None`.
    fn register_realloc(&self) -> Option<&dyn RegisterRealloc> {
        None
    }

    /// Whether the target has `cap`.
    fn has(&self, cap: Capability) -> bool {
        match cap {
            Capability::AsyncCopy => self.async_copy().is_some(),
            Capability::WarpMma => self.warp_mma().is_some(),
            Capability::Mfma => self.mfma().is_some(),
            Capability::WarpgroupMma => self.warpgroup_mma().is_some(),
            Capability::Barriers => self.barriers().is_some(),
            Capability::BulkTensorCopy => self.bulk_tensor_copy().is_some(),
            Capability::RegisterRealloc => self.register_realloc().is_some(),
        }
    }
}

/// Asynchronous global→shared copies in commit groups (NVIDIA `cp.async`, sm_80+).
pub(crate) trait AsyncCopy: Sync {
    /// Copies `bytes` (4, 8 or 16) from `src` to `dst`, reading `src_bytes` (a runtime value,
    /// `bytes` or 0) and zero-filling the rest.
    fn cp_async<'ctx>(
        &self,
        ir: &Ir<'_, 'ctx>,
        dst: PointerValue<'ctx>,
        src: PointerValue<'ctx>,
        bytes: u32,
        src_bytes: IntValue<'ctx>,
    );
    /// Closes the current group of async copies.
    fn commit(&self, ir: &Ir);
    /// Waits until at most `n` groups of async copies are pending.
    fn wait(&self, ir: &Ir, n: u32);
}

/// Warp-level `mma.sync m16n8k16` with f32 accumulators, fed by `ldmatrix` (NVIDIA).
pub(crate) trait WarpMma: Sync {
    /// `ldmatrix.sync.aligned.m8n8.x4[.trans].b16` from a shared address.
    fn ldmatrix_x4<'ctx>(
        &self,
        ir: &Ir<'_, 'ctx>,
        ptr: PointerValue<'ctx>,
        trans: bool,
    ) -> [IntValue<'ctx>; 4];
    /// f32 += f16/bf16 × f16/bf16; operands as packed i32 pairs.
    fn mma_16816<'ctx>(
        &self,
        ir: &Ir<'_, 'ctx>,
        dt: DType,
        a: [IntValue<'ctx>; 4],
        b: [IntValue<'ctx>; 2],
        c: [FloatValue<'ctx>; 4],
    ) -> [FloatValue<'ctx>; 4];
}

/// Wave-level `v_mfma_f32_{m}x{m}x{k}` (AMD CDNA).
pub(crate) trait Mfma: Sync {
    /// `a`, `b` are this lane's `k·m/64` elements (a float for f32, `<n x i16>` bits for
    /// f16/bf16), `c` is `<m·m/64 x float>`.
    #[allow(clippy::too_many_arguments)]
    fn mfma<'ctx>(
        &self,
        ir: &Ir<'_, 'ctx>,
        dt: DType,
        m: u32,
        k: u32,
        a: BasicValueEnum<'ctx>,
        b: BasicValueEnum<'ctx>,
        c: VectorValue<'ctx>,
    ) -> VectorValue<'ctx>;
}

/// Hopper `wgmma`: a warpgroup's matrix multiply with operands in shared memory.
pub(crate) trait WarpgroupMma: Sync {
    /// The shared-memory address (32 bits, as descriptors encode it) of `ptr`.
    fn smem_addr<'ctx>(&self, ir: &Ir<'_, 'ctx>, ptr: PointerValue<'ctx>) -> IntValue<'ctx>;
    /// `wgmma.fence.sync.aligned`: orders earlier register and shared accesses before the
    /// following `wgmma.mma_async`.
    fn fence(&self, ir: &Ir);
    /// `wgmma.commit_group.sync.aligned`.
    fn commit(&self, ir: &Ir);
    /// `wgmma.wait_group.sync.aligned n`, with this thread's accumulators passed through it:
    /// their later uses then depend on the wait, so no compiler can read them before it.
    fn wait<'ctx>(
        &self,
        ir: &Ir<'_, 'ctx>,
        n: u32,
        acc: &[FloatValue<'ctx>],
    ) -> Vec<FloatValue<'ctx>>;
    /// `wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{f16,bf16}` with A and B from the shared-
    /// memory descriptors `da`, `db` (i64); `trans[i]`: operand i is MN-major (imm-trans 1),
    /// else K-major; `acc` are this thread's `n/2` accumulators (d += a·b).
    #[allow(clippy::too_many_arguments)]
    fn mma<'ctx>(
        &self,
        ir: &Ir<'_, 'ctx>,
        dt: DType,
        n: u32,
        trans: [bool; 2],
        da: IntValue<'ctx>,
        db: IntValue<'ctx>,
        acc: &[FloatValue<'ctx>],
    ) -> Vec<FloatValue<'ctx>>;
}

/// Ordering for readers and writers in the async proxy (Hopper): the proxy fence that `wgmma`
/// needs after generic-proxy stores, and the `mbarrier` transaction barriers that TMA loads
/// complete on. An `mbarrier` is 8 bytes of shared memory; each phase completes when its
/// pending arrivals reach zero and its transaction count (bytes expected minus bytes landed)
/// is zero, and a waiter names the phase by its parity.
pub(crate) trait Barriers: Sync {
    /// `fence.proxy.async.shared::cta`: this thread's earlier shared-memory writes become
    /// visible to async-proxy readers (`wgmma`) once a barrier follows.
    fn fence_proxy_async(&self, ir: &Ir);
    /// `mbarrier.init.shared::cta.b64 [bar], count`: phase 0, `count` arrivals pending.
    fn mbarrier_init<'ctx>(&self, ir: &Ir<'_, 'ctx>, bar: PointerValue<'ctx>, count: u32);
    /// `fence.mbarrier_init.release.cluster`: the initialisations become visible to the async
    /// proxy (TMA completes on them) once a block barrier follows.
    fn mbarrier_init_fence(&self, ir: &Ir);
    /// `mbarrier.arrive.expect_tx.shared::cta.b64 _, [bar], bytes`: one arrival, and `bytes`
    /// more the current phase waits for.
    fn mbarrier_arrive_expect_tx<'ctx>(
        &self,
        ir: &Ir<'_, 'ctx>,
        bar: PointerValue<'ctx>,
        bytes: u32,
    );
    /// Spins on `mbarrier.try_wait.parity.shared::cta.b64` until the phase of parity `parity`
    /// (i32, 0 or 1) has completed.
    fn mbarrier_wait<'ctx>(
        &self,
        ir: &Ir<'_, 'ctx>,
        bar: PointerValue<'ctx>,
        parity: IntValue<'ctx>,
    );
    /// `mbarrier.arrive.shared::cta.b64 _, [bar]`: one arrival on the current phase.
    fn mbarrier_arrive<'ctx>(&self, ir: &Ir<'_, 'ctx>, bar: PointerValue<'ctx>);
    /// `cp.async.mbarrier.arrive.noinc.shared::cta.b64 [bar]`: one arrival on `bar` (counted in
    /// its init count: `.noinc`) once every `cp.async` this thread issued before has landed.
    fn cp_async_arrive<'ctx>(&self, ir: &Ir<'_, 'ctx>, bar: PointerValue<'ctx>);
    /// `bar.sync id, threads`: a barrier over `threads` threads (whole warps) that each
    /// execute it with the same `id`, ordering shared memory like the block barrier (which is
    /// barrier 0 over the whole block).
    fn named_barrier(&self, ir: &Ir, id: u32, threads: u32);
    /// `%cluster_ctarank`: the block's rank in its thread-block cluster (i32).
    fn cluster_rank<'ctx>(&self, ir: &Ir<'_, 'ctx>) -> IntValue<'ctx>;
    /// `barrier.cluster.arrive.release` + `barrier.cluster.wait.acquire`: every (not exited)
    /// thread of the cluster; orders the blocks' shared memory and `mbarrier` inits.
    fn cluster_sync(&self, ir: &Ir);
    /// One arrival on the `mbarrier` at `bar`'s offset in the shared memory of the cluster's
    /// block `rank` (`mapa.shared::cluster` + `mbarrier.arrive.shared::cluster`, release at
    /// CTA scope: no cluster-scope fence before it).
    fn mbarrier_arrive_cluster<'ctx>(
        &self,
        ir: &Ir<'_, 'ctx>,
        bar: PointerValue<'ctx>,
        rank: IntValue<'ctx>,
    );
}

/// Hopper `setmaxnreg`: a warpgroup gives registers back or takes more at run time, within
/// the pool the kernel was launched with, which only a register cap at entry fixes.
pub(crate) trait RegisterRealloc: Sync {
    /// Declares the kernel's register count at entry (`.maxnreg`).
    fn cap_registers(&self, ir: &Ir, regs: u32);
    /// `setmaxnreg.{inc,dec}.sync.aligned.u32 regs`, executed by every thread of a warpgroup.
    fn setmaxnreg(&self, ir: &Ir, inc: bool, regs: u32);
}

/// Hopper TMA (`cp.async.bulk.tensor`, tile and im2col modes) from a tensor map passed as a
/// `__grid_constant__` kernel argument ([`crate::abi::ArgKind::TensorMap`]), completing on an
/// `mbarrier` of [`Barriers`].
pub(crate) trait BulkTensorCopy: Sync {
    /// Marks parameter `index` of `f` (a pointer) as a by-value tensor map: on NVPTX
    /// `byval([128 x i8]) align 64` plus the `grid_constant` annotation, without which the
    /// backend copies the map to local memory and TMA reads a bad address.
    fn declare_map_param<'ctx>(&self, ir: &Ir<'_, 'ctx>, index: u32);
    /// `prefetch.tensormap`: starts fetching the tensor map `map` (the parameter) into the
    /// descriptor cache, so the first copy through it does not wait for the fetch. No effect
    /// on what any copy reads or writes.
    fn prefetch_map<'ctx>(&self, ir: &Ir<'_, 'ctx>, map: PointerValue<'ctx>);
    /// Copies the box at `coords` (elements, innermost first; one per map dimension) of the
    /// tensor map `map` (the parameter) to shared memory at `dst`, completing `box bytes` of
    /// `bar`'s transaction count when it lands. With `multicast` (a mask of cluster ranks,
    /// `.multicast::cluster`) the box lands at `dst`'s offset in each of those blocks and
    /// completes the bytes on the `mbarrier` at `bar`'s offset in each.
    fn load_tile<'ctx>(
        &self,
        ir: &Ir<'_, 'ctx>,
        dst: PointerValue<'ctx>,
        map: PointerValue<'ctx>,
        coords: &[IntValue<'ctx>],
        bar: PointerValue<'ctx>,
        multicast: Option<u16>,
    );
    /// Copies the im2col box of the im2col tensor map `map` whose first pixel is at `coords`
    /// (i32: channel, then the spatial dimensions innermost first, then the image) read at the
    /// filter-tap `offsets` (i32, each in `0..=u16::MAX`, one per spatial dimension) to shared
    /// memory at `dst`, completing `box bytes` of `bar`'s transaction count when it lands;
    /// `multicast` as for [`Self::load_tile`].
    #[allow(clippy::too_many_arguments)]
    fn load_im2col<'ctx>(
        &self,
        ir: &Ir<'_, 'ctx>,
        dst: PointerValue<'ctx>,
        map: PointerValue<'ctx>,
        coords: &[IntValue<'ctx>],
        offsets: &[IntValue<'ctx>],
        bar: PointerValue<'ctx>,
        multicast: Option<u16>,
    );
    /// Stores the box at `coords` of the tiled tensor map `map` from shared memory at `src`
    /// (`cp.async.bulk.tensor.Nd.global.shared::cta.bulk_group`), clipped to the map's dims,
    /// in this thread's open bulk group. `src` may be reused only after
    /// [`Self::wait_bulk`] with `read` covered the group.
    fn store_tile<'ctx>(
        &self,
        ir: &Ir<'_, 'ctx>,
        src: PointerValue<'ctx>,
        map: PointerValue<'ctx>,
        coords: &[IntValue<'ctx>],
    );
    /// `cp.async.bulk.commit_group`: closes this thread's open bulk group.
    fn commit_bulk(&self, ir: &Ir);
    /// `cp.async.bulk.wait_group[.read] pending`: waits until at most `pending` of this
    /// thread's bulk groups are in flight; with `read` only until their shared-memory
    /// sources were read (the buffer may be rewritten), else until their writes are done.
    fn wait_bulk(&self, ir: &Ir, pending: u32, read: bool);
}

/// Declares (once per module) the dynamic shared-memory array `[0 x i8]` in `space`.
pub(crate) fn dynamic_shared<'ctx>(ir: &Ir<'_, 'ctx>, space: AddressSpace) -> PointerValue<'ctx> {
    const NAME: &str = "convtune_dyn_smem";
    let g = ir.module.get_global(NAME).unwrap_or_else(|| {
        let ty = ir.ctx.i8_type().array_type(0);
        let g = ir.module.add_global(ty, Some(space), NAME);
        g.set_linkage(inkwell::module::Linkage::External);
        // 1024: the 128-byte swizzle of wgmma descriptors is a function of address bits 4-9,
        // so tiles must start at 1024-byte boundaries of the shared window.
        g.set_alignment(1024);
        g
    });
    g.as_pointer_value()
}

/// f16 bits → f32 by `fpext`; bf16 bits → f32 exactly by a 16-bit shift.
pub(crate) fn half_to_f32_generic<'ctx>(
    ir: &Ir<'_, 'ctx>,
    v: IntValue<'ctx>,
    dt: DType,
) -> FloatValue<'ctx> {
    match dt {
        DType::BF16 => {
            let w = ok(ir.raw().build_int_z_extend(v, ir.i32t(), ""));
            let w = ok(ir.raw().build_left_shift(w, ir.c(16), ""));
            ir.bitcast(w.into(), ir.f32t().into()).into_float_value()
        }
        _ => {
            let h = ir
                .bitcast(v.into(), ir.ctx.f16_type().into())
                .into_float_value();
            ok(ir.raw().build_float_ext(h, ir.f32t(), ""))
        }
    }
}

/// The families `spec` has, in [`Capability::ALL`]'s order.
pub(crate) fn capabilities(spec: &dyn TargetSpec) -> Vec<Capability> {
    Capability::ALL
        .into_iter()
        .filter(|&c| spec.has(c))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arch::Arch;
    use crate::codegen::compile::spec_for;
    use crate::codegen::emu::spec::HostEmu;
    use crate::codegen::plan::GemmPlan;
    use crate::codegen::CodegenError;
    use crate::config::PerfConfig;
    use crate::lowering::lower;

    #[test]
    fn targets_have_the_families_of_their_hardware() {
        use Capability::*;
        let caps = |t: Target| capabilities(spec_for(t, false).as_ref());
        assert_eq!(caps(Target::of(Arch::SM_80)), [AsyncCopy, WarpMma]);
        assert_eq!(
            caps(Target::of(Arch::SM_90)),
            [
                AsyncCopy,
                WarpMma,
                WarpgroupMma,
                Barriers,
                BulkTensorCopy,
                RegisterRealloc
            ]
        );
        assert_eq!(caps(Target::of(Arch::GFX90A)), [Mfma]);
        // The emulator offers exactly what it imitates.
        for t in [Target::of(Arch::SM_80), Target::of(Arch::GFX942)] {
            assert_eq!(capabilities(&HostEmu::new(t)), caps(t));
        }
    }

    /// A config that needs a family the target lacks is a planning error naming the family
    /// and the field, not a panic during emission.
    #[test]
    fn a_missing_family_is_a_planning_error() {
        let p: crate::problem::ConvProblem =
            "convbfp16 -n 4 -c 64 -H 14 -W 14 -k 64 -y 3 -x 3 -p 1 -q 1 -F 1 --layout NHWC"
                .parse()
                .unwrap();
        let cfg: PerfConfig =
            "v2:bm=64,bn=16,bk=64,wm=64,wn=16,st=1,va=1,vb=1,vc=4,lds=swz,sk=1,rs=1,mma=wg"
                .parse()
                .unwrap();
        let l = lower(&p);
        let plan = |t: Target| GemmPlan::new(&p, &l.gemms[0], &cfg, spec_for(t, false).as_ref());
        assert!(plan(Target::of(Arch::SM_90)).is_ok());
        let e = plan(Target::of(Arch::SM_80)).unwrap_err();
        assert!(
            matches!(&e, CodegenError::Missing { capability: Capability::WarpgroupMma, needed_by, .. } if needed_by == "mma=wg"),
            "{e:?}"
        );
        assert!(e.to_string().contains("sm_80 lacks"), "{e}");
    }
}
