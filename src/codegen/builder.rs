//! `Kb`: the kernel builder. Kernel code reads like a kernel (`kb.add(a, b)`,
//! `kb.load(..)`, `kb.barrier()`, `kb.cp_async(..)`, `kb.mma(..)`, `kb.wgmma(..)`): the
//! target-free verbs come from [`Ir`] (through `Deref`), the target-dependent ones are here and
//! go through the [`TargetSpec`] and its instruction families. Kernel code never names the
//! spec or an intrinsic.
//!
//! Index arithmetic is i32 throughout: every tensor has fewer than 2^31 elements (the problem
//! validates that), and an out-of-range coordinate is never used as an address (it is replaced
//! by 0 before the access).
//!
//! A verb of an instruction family (`cp_async`, `mma`, `mfma`, `wgmma`, …) needs the target to
//! have it. The planner asks first ([`super::plan`]) and turns a missing family into an error
//! with a reason; reaching such a verb on a target without the family is therefore a planner
//! bug, which panics like any other builder misuse and becomes
//! [`super::CodegenError::Internal`].

pub(crate) use super::ir::Mem;
use super::ir::{ok, type_bytes, Ir};
use super::spec::{
    AsyncCopy, Barriers, BulkTensorCopy, Mfma, RegisterRealloc, TargetSpec, WarpMma, WarpgroupMma,
};
use crate::abi::{ArgKind, ArgRole, KernelArg};
use crate::problem::{DType, Tensor};
use inkwell::{
    context::Context,
    module::Module,
    values::{BasicValue, BasicValueEnum, FloatValue, IntValue, PointerValue, VectorValue},
    AddressSpace,
};
use std::cell::Cell;
use std::ops::Deref;

/// The kernel builder: one kernel being emitted into a module for one target.
pub(crate) struct Kb<'a, 'ctx> {
    ir: Ir<'a, 'ctx>,
    spec: &'a dyn TargetSpec,
    args: &'a [KernelArg],
    /// Which threads [`Kb::barrier`] synchronises: `None` the whole block, `Some((id,
    /// threads))` a named barrier over the first `threads` (see [`Kb::set_barrier_scope`]).
    scope: Cell<Option<(u32, u32)>>,
    /// Per tensor, the workspace byte offset that holds it instead of its argument (a layout
    /// transform's channels-last copy: [`Kb::redirect`]).
    redirect: Cell<[Option<u64>; 3]>,
    /// The work unit a persistent walk is emitting a body for: a one-launch kernel's phases
    /// are then laid out along the walk's units instead of the grid's blocks (see
    /// [`Kb::set_walk_unit`]).
    walk_unit: Cell<Option<IntValue<'ctx>>>,
}

impl<'a, 'ctx> Deref for Kb<'a, 'ctx> {
    type Target = Ir<'a, 'ctx>;
    fn deref(&self) -> &Ir<'a, 'ctx> {
        &self.ir
    }
}

/// A family the plan checked for; its absence here is a planner bug (see the module doc).
fn planned<'s, T: ?Sized>(family: Option<&'s T>, what: &str) -> &'s T {
    family.unwrap_or_else(|| {
        panic!("{what} emitted for a target without it: the planner should have refused the config")
    })
}

impl<'a, 'ctx> Kb<'a, 'ctx> {
    /// Starts a kernel `name(<args>, <spec extras>)` with the parameters the ABI declares
    /// ([`crate::abi`]). Pointer arguments do not alias; those whose role is not in `writes`
    /// are read-only.
    pub fn kernel(
        ctx: &'ctx Context,
        module: &'a Module<'ctx>,
        spec: &'a dyn TargetSpec,
        name: &str,
        args: &'a [KernelArg],
        writes: &[ArgRole],
    ) -> Self {
        let gptr = ctx.ptr_type(spec.global_as());
        let mut params: Vec<inkwell::types::BasicMetadataTypeEnum> = args
            .iter()
            .map(|a| match a.kind {
                ArgKind::DevicePtr => gptr.into(),
                // A pointer to the 128 bytes; the target makes it a by-value grid constant.
                ArgKind::TensorMap(_) => ctx.ptr_type(AddressSpace::default()).into(),
            })
            .collect();
        for _ in 0..spec.extra_params() {
            params.push(ctx.ptr_type(AddressSpace::default()).into());
        }
        let func = module.add_function(name, ctx.void_type().fn_type(&params, false), None);
        spec.declare_kernel(ctx, func);
        let ir = Ir::new(ctx, module, func);
        for (i, arg) in args.iter().enumerate() {
            if let ArgKind::TensorMap(_) = arg.kind {
                planned(spec.bulk_tensor_copy(), "a tensor-map parameter")
                    .declare_map_param(&ir, i as u32);
                continue;
            }
            // Named after the role: AMD code objects carry the name in their argument
            // metadata (NVPTX names `.param`s after the function whatever the IR says).
            if let Some(p) = func.get_nth_param(i as u32) {
                p.set_name(arg.role.name());
            }
            let ro = !writes.contains(&arg.role);
            let loc = inkwell::attributes::AttributeLoc::Param(i as u32);
            for (attr, on) in [("noalias", true), ("nocapture", true), ("readonly", ro)] {
                if on {
                    let kind = inkwell::attributes::Attribute::get_named_enum_kind_id(attr);
                    func.add_attribute(loc, ctx.create_enum_attribute(kind, 0));
                }
            }
        }
        Kb {
            ir,
            spec,
            args,
            scope: Cell::new(None),
            walk_unit: Cell::new(None),
            redirect: Cell::new([None; 3]),
        }
    }

    /// Ends the kernel (`ret void`).
    pub fn finish(&self) {
        ok(self.raw().build_return(None));
    }

    /// The pointer argument of `role`.
    pub fn arg(&self, role: ArgRole) -> PointerValue<'ctx> {
        role.position(self.args)
            .and_then(|i| self.func.get_nth_param(i as u32))
            .unwrap_or_else(|| panic!("kernel has no `{role}` argument"))
            .into_pointer_value()
    }
    /// Thread 0 prefetches every tensor-map parameter (`prefetch.tensormap`) before the
    /// kernel's work starts: the producer's first TMA copy then finds the map in the descriptor
    /// cache instead of fetching it while the pipeline is empty (CUTLASS's sm90 kernels do
    /// the same). Nothing when the kernel has no maps.
    pub fn prefetch_maps(&self) {
        let maps = self
            .args
            .iter()
            .filter(|a| matches!(a.kind, ArgKind::TensorMap(_)))
            .count();
        if maps == 0 {
            return;
        }
        let tma = planned(self.spec.bulk_tensor_copy(), "a tensor-map parameter");
        self.if_then(self.eq(self.thread_idx(), self.c(0)), |kb| {
            for n in 0..maps {
                tma.prefetch_map(&kb.ir, kb.map_arg(n));
            }
        });
    }
    /// The `n`-th tensor-map argument (in parameter order).
    pub fn map_arg(&self, n: usize) -> PointerValue<'ctx> {
        self.args
            .iter()
            .enumerate()
            .filter(|(_, a)| matches!(a.kind, ArgKind::TensorMap(_)))
            .nth(n)
            .and_then(|(i, _)| self.func.get_nth_param(i as u32))
            .unwrap_or_else(|| panic!("kernel has no tensor map {n}"))
            .into_pointer_value()
    }
    /// The memory of tensor `t`: its argument, or the workspace bytes it was redirected to.
    pub fn tensor(&self, t: Tensor) -> PointerValue<'ctx> {
        match self.redirect.get()[t as usize] {
            Some(at) => self.gep_bytes(self.arg(ArgRole::Workspace), at as i64),
            None => self.arg(ArgRole::of(t)),
        }
    }
    /// Makes [`Kb::tensor`] of `t` the workspace at byte `at`: the kernel reads (or writes)
    /// the layout transform's copy of `t` there.
    pub fn redirect(&self, t: Tensor, at: u64) {
        let mut r = self.redirect.get();
        r[t as usize] = Some(at);
        self.redirect.set(r);
    }

    /// Keeps `v` computed here (see [`TargetSpec::pin`]).
    pub fn pin(&self, v: IntValue<'ctx>) {
        self.spec.pin(&self.ir, v)
    }
    /// Whether bounds checks compare parts instead of summing them
    /// ([`TargetSpec::split_bound_checks`]).
    pub fn split_bound_checks(&self) -> bool {
        self.spec.split_bound_checks()
    }
    /// Records the block size so the backend can budget registers for it.
    pub fn set_block_size(&self, threads: u32) {
        self.spec.set_block_size(&self.ir, threads)
    }

    // ---- conversions ----

    /// One stored element (i16 bits or f32) as f32.
    pub fn widen(&self, v: BasicValueEnum<'ctx>, dt: DType) -> FloatValue<'ctx> {
        match dt {
            DType::F32 => v.into_float_value(),
            _ => self.spec.half_to_f32(&self.ir, v.into_int_value(), dt),
        }
    }
    /// f32 rounded to the storage type of `dt`.
    pub fn narrow(&self, v: FloatValue<'ctx>, dt: DType) -> BasicValueEnum<'ctx> {
        match dt {
            DType::F32 => v.into(),
            _ => self.spec.f32_to_half(&self.ir, v, dt).into(),
        }
    }

    // ---- memory ----

    /// `ptr`, checked by the target for an access of `bytes` with `align` (the emulator).
    fn guard(
        &self,
        mem: Mem,
        ptr: PointerValue<'ctx>,
        bytes: u32,
        align: u32,
        store: bool,
    ) -> PointerValue<'ctx> {
        self.spec.guard(&self.ir, mem, ptr, bytes, align, store)
    }
    /// Loads `ty` from `ptr` in `mem` with the given alignment (bytes).
    pub fn load(
        &self,
        mem: Mem,
        ty: inkwell::types::BasicTypeEnum<'ctx>,
        ptr: PointerValue<'ctx>,
        align: u32,
    ) -> BasicValueEnum<'ctx> {
        let ptr = self.guard(mem, ptr, type_bytes(ty), align, false);
        let v = ok(self.raw().build_load(ty, ptr, ""));
        if let Some(inst) = v.as_instruction_value() {
            // Alignment is a power of two ≤ 16 by construction; an error is a bug.
            inst.set_alignment(align)
                .unwrap_or_else(|e| panic!("load alignment {align}: {e}"));
        }
        v
    }
    /// Stores `v` at `ptr` in `mem` with the given alignment (bytes).
    pub fn store(&self, mem: Mem, ptr: PointerValue<'ctx>, v: BasicValueEnum<'ctx>, align: u32) {
        let ptr = self.guard(mem, ptr, type_bytes(v.get_type()), align, true);
        let inst = ok(self.raw().build_store(ptr, v));
        inst.set_alignment(align)
            .unwrap_or_else(|e| panic!("store alignment {align}: {e}"));
    }
    /// Atomically adds an f32 to global memory (split-K reduction), through the prelude's
    /// `convtune_atomic_fadd` (relaxed, device scope; see [`TargetSpec::prelude_ir`]).
    pub fn atomic_add_f32(&self, ptr: PointerValue<'ctx>, v: FloatValue<'ctx>) {
        let ptr = self.guard(Mem::Global, ptr, 4, 4, true);
        self.call(
            self.prelude_fn("convtune_atomic_fadd"),
            &[ptr.into(), v.into()],
        );
    }

    /// Adds 1 to the u32 counter at `ptr` (acquire-release, device scope) and returns the value
    /// before: the split-K fix-up's arrival ([`super::fixup`]), through the prelude's
    /// `convtune_arrive`.
    pub fn arrive(&self, ptr: PointerValue<'ctx>) -> IntValue<'ctx> {
        let ptr = self.guard(Mem::Global, ptr, 4, 4, true);
        self.call(self.prelude_fn("convtune_arrive"), &[ptr.into()])
            .unwrap_or_else(|| panic!("convtune_arrive returns no value"))
            .into_int_value()
    }
    /// Device-scope acquire-release fence, through the prelude's `convtune_fence_device`; it
    /// takes the memory it orders (`ptr`), so the optimizer keeps accesses to it on their side.
    pub fn fence_device(&self, ptr: PointerValue<'ctx>) {
        self.call(self.prelude_fn("convtune_fence_device"), &[ptr.into()]);
    }

    // ---- GPU ----

    /// Thread index within the block (blocks are one-dimensional).
    pub fn thread_idx(&self) -> IntValue<'ctx> {
        self.spec.thread_idx(&self.ir)
    }
    /// Block index along `dim` (0 = x, 2 = z).
    pub fn block_idx(&self, dim: u32) -> IntValue<'ctx> {
        self.spec.block_idx(&self.ir, dim)
    }
    /// Block-wide barrier that also orders shared-memory accesses; inside a barrier scope
    /// ([`Kb::set_barrier_scope`]) the scope's named barrier instead.
    pub fn barrier(&self) {
        match self.scope.get() {
            None => self.spec.barrier(&self.ir),
            Some((id, threads)) => self.barriers().named_barrier(&self.ir, id, threads),
        }
    }
    /// Makes [`Kb::barrier`] synchronise only named barrier `id` over `threads` threads (a
    /// warp-specialised kernel's consumers, while its producer has gone ahead or finished),
    /// or the whole block again (`None`). Code emitted in the scope (epilogues, the fix-up)
    /// stays as it is.
    pub fn set_barrier_scope(&self, scope: Option<(u32, u32)>) {
        self.scope.set(scope)
    }
    /// Makes the code emitted next belong to work unit `unit` of a persistent walk (`None`:
    /// to the block again): the position a shared phase body
    /// ([`super::phase_consts::SharedPhases`]) finds its phase from.
    pub fn set_walk_unit(&self, unit: Option<IntValue<'ctx>>) {
        self.walk_unit.set(unit)
    }
    /// The walk's work unit being emitted, if any ([`Kb::set_walk_unit`]).
    pub fn walk_unit(&self) -> Option<IntValue<'ctx>> {
        self.walk_unit.get()
    }
    /// The block's dynamic shared memory.
    pub fn shared_base(&self) -> PointerValue<'ctx> {
        self.spec.shared_base(&self.ir)
    }

    // ---- async copies ----

    fn async_copy(&self) -> &'a dyn AsyncCopy {
        planned(self.spec.async_copy(), "cp.async")
    }
    /// Asynchronous global→shared copy of `bytes` (4, 8 or 16) that reads `src_bytes` (a
    /// runtime value, `bytes` or 0) and zero-fills the rest.
    pub fn cp_async(
        &self,
        dst: PointerValue<'ctx>,
        src: PointerValue<'ctx>,
        bytes: u32,
        src_bytes: IntValue<'ctx>,
    ) {
        self.async_copy()
            .cp_async(&self.ir, dst, src, bytes, src_bytes)
    }
    /// Closes the current group of async copies.
    pub fn cp_async_commit(&self) {
        self.async_copy().commit(&self.ir)
    }
    /// Waits until at most `n` groups of async copies are pending.
    pub fn cp_async_wait(&self, n: u32) {
        self.async_copy().wait(&self.ir, n)
    }

    // ---- matrix units ----

    fn warp_mma(&self) -> &'a dyn WarpMma {
        planned(self.spec.warp_mma(), "mma.sync")
    }
    /// `ldmatrix.x4[.trans]` of the four 8×8 matrices whose rows this warp's lanes address.
    pub fn ldmatrix_x4(&self, ptr: PointerValue<'ctx>, trans: bool) -> [IntValue<'ctx>; 4] {
        let ptr = self.guard(Mem::Shared, ptr, 16, 16, false);
        self.warp_mma().ldmatrix_x4(&self.ir, ptr, trans)
    }
    /// `mma.sync m16n8k16`: f32 `c` += `a` · `b` (fragments as packed i32 pairs).
    pub fn mma(
        &self,
        dt: DType,
        a: [IntValue<'ctx>; 4],
        b: [IntValue<'ctx>; 2],
        c: [FloatValue<'ctx>; 4],
    ) -> [FloatValue<'ctx>; 4] {
        self.warp_mma().mma_16816(&self.ir, dt, a, b, c)
    }
    /// `v_mfma_f32_{m}x{m}x{k}`: `c` += `a` · `b` for this lane's elements.
    pub fn mfma(
        &self,
        dt: DType,
        shape: (u32, u32),
        a: BasicValueEnum<'ctx>,
        b: BasicValueEnum<'ctx>,
        c: VectorValue<'ctx>,
    ) -> VectorValue<'ctx> {
        let (m, k) = shape;
        let unit: &dyn Mfma = planned(self.spec.mfma(), "MFMA");
        unit.mfma(&self.ir, dt, m, k, a, b, c)
    }

    // ---- warpgroup MMA ----

    fn wgmma_unit(&self) -> &'a dyn WarpgroupMma {
        planned(self.spec.warpgroup_mma(), "wgmma")
    }
    /// The 32-bit shared-window address of `ptr` (what `wgmma` descriptors encode).
    pub fn smem_addr(&self, ptr: PointerValue<'ctx>) -> IntValue<'ctx> {
        self.wgmma_unit().smem_addr(&self.ir, ptr)
    }
    /// `wgmma.fence`: orders earlier register and shared accesses before the next `wgmma`.
    pub fn wgmma_fence(&self) {
        self.wgmma_unit().fence(&self.ir)
    }
    /// `wgmma.mma_async m64n{n}k16` from descriptors `da`, `db`; returns the accumulators.
    pub fn wgmma(
        &self,
        dt: DType,
        n: u32,
        trans: [bool; 2],
        da: IntValue<'ctx>,
        db: IntValue<'ctx>,
        acc: &[FloatValue<'ctx>],
    ) -> Vec<FloatValue<'ctx>> {
        self.wgmma_unit().mma(&self.ir, dt, n, trans, da, db, acc)
    }
    /// `wgmma.commit_group`.
    pub fn wgmma_commit(&self) {
        self.wgmma_unit().commit(&self.ir)
    }
    /// `wgmma.wait_group n`, the accumulators passed through it.
    pub fn wgmma_wait(&self, n: u32, acc: &[FloatValue<'ctx>]) -> Vec<FloatValue<'ctx>> {
        self.wgmma_unit().wait(&self.ir, n, acc)
    }

    // ---- async proxy ----

    /// `fence.proxy.async.shared::cta`: earlier shared-memory writes of this thread become
    /// visible to async-proxy readers once a barrier follows.
    pub fn fence_proxy_async(&self) {
        let b: &dyn Barriers = planned(self.spec.barriers(), "fence.proxy.async");
        b.fence_proxy_async(&self.ir)
    }

    // ---- mbarriers and TMA ----

    fn barriers(&self) -> &'a dyn Barriers {
        planned(self.spec.barriers(), "mbarrier")
    }
    /// `mbarrier.init` of `bar` with `count` arrivals per phase.
    pub fn mbarrier_init(&self, bar: PointerValue<'ctx>, count: u32) {
        self.barriers().mbarrier_init(&self.ir, bar, count)
    }
    /// Makes the initialised `mbarrier`s visible to the async proxy.
    pub fn mbarrier_init_fence(&self) {
        self.barriers().mbarrier_init_fence(&self.ir)
    }
    /// One arrival on `bar`, and `bytes` more its phase waits for.
    pub fn mbarrier_arrive_expect_tx(&self, bar: PointerValue<'ctx>, bytes: u32) {
        self.barriers()
            .mbarrier_arrive_expect_tx(&self.ir, bar, bytes)
    }
    /// Waits until `bar`'s phase of parity `parity` (i32 0/1) has completed.
    pub fn mbarrier_wait(&self, bar: PointerValue<'ctx>, parity: IntValue<'ctx>) {
        self.barriers().mbarrier_wait(&self.ir, bar, parity)
    }
    /// One plain arrival on `bar`.
    pub fn mbarrier_arrive(&self, bar: PointerValue<'ctx>) {
        self.barriers().mbarrier_arrive(&self.ir, bar)
    }
    /// One arrival on `bar` once this thread's earlier `cp.async` copies landed (`.noinc`).
    pub fn cp_async_arrive(&self, bar: PointerValue<'ctx>) {
        self.barriers().cp_async_arrive(&self.ir, bar)
    }
    /// The block's rank in its cluster.
    pub fn cluster_rank(&self) -> IntValue<'ctx> {
        self.barriers().cluster_rank(&self.ir)
    }
    /// The cluster barrier (every thread of every block of the cluster).
    pub fn cluster_sync(&self) {
        self.barriers().cluster_sync(&self.ir)
    }
    /// One arrival on the `mbarrier` at `bar`'s offset in cluster block `rank`.
    pub fn mbarrier_arrive_cluster(&self, bar: PointerValue<'ctx>, rank: IntValue<'ctx>) {
        self.barriers().mbarrier_arrive_cluster(&self.ir, bar, rank)
    }

    // ---- register reallocation ----

    fn realloc(&self) -> &'a dyn RegisterRealloc {
        planned(self.spec.register_realloc(), "setmaxnreg")
    }
    /// Declares the kernel's register count at entry (`.maxnreg`).
    pub fn cap_registers(&self, regs: u32) {
        self.realloc().cap_registers(&self.ir, regs)
    }
    /// `setmaxnreg.{inc,dec}` to `regs` for this warpgroup.
    pub fn setmaxnreg(&self, inc: bool, regs: u32) {
        self.realloc().setmaxnreg(&self.ir, inc, regs)
    }

    /// TMA copy of the box at `coords` of tensor map `map` into `dst`, completing on `bar`.
    pub fn tma_load(
        &self,
        dst: PointerValue<'ctx>,
        map: PointerValue<'ctx>,
        coords: &[IntValue<'ctx>],
        bar: PointerValue<'ctx>,
    ) {
        let unit: &dyn BulkTensorCopy = planned(self.spec.bulk_tensor_copy(), "TMA");
        unit.load_tile(&self.ir, dst, map, coords, bar, None)
    }
    /// TMA store of the box at `coords` of tensor map `map` from shared memory at `src`, in
    /// this thread's open bulk group (see [`BulkTensorCopy::store_tile`]).
    pub fn tma_store(
        &self,
        src: PointerValue<'ctx>,
        map: PointerValue<'ctx>,
        coords: &[IntValue<'ctx>],
    ) {
        let unit: &dyn BulkTensorCopy = planned(self.spec.bulk_tensor_copy(), "TMA");
        unit.store_tile(&self.ir, src, map, coords)
    }
    /// `cp.async.bulk.commit_group`.
    pub fn bulk_commit(&self) {
        let unit: &dyn BulkTensorCopy = planned(self.spec.bulk_tensor_copy(), "TMA");
        unit.commit_bulk(&self.ir)
    }
    /// `cp.async.bulk.wait_group[.read] pending` (see [`BulkTensorCopy::wait_bulk`]).
    pub fn bulk_wait(&self, pending: u32, read: bool) {
        let unit: &dyn BulkTensorCopy = planned(self.spec.bulk_tensor_copy(), "TMA");
        unit.wait_bulk(&self.ir, pending, read)
    }
    /// [`Self::tma_load`] into the blocks of the cluster in `mask` ([`Self::tma_load_im2col`]
    /// when `offsets` is some): the box lands at `dst`'s offset and completes on `bar`'s
    /// offset in each.
    pub fn tma_load_multicast(
        &self,
        dst: PointerValue<'ctx>,
        map: PointerValue<'ctx>,
        coords: &[IntValue<'ctx>],
        offsets: Option<&[IntValue<'ctx>]>,
        bar: PointerValue<'ctx>,
        mask: u16,
    ) {
        let unit: &dyn BulkTensorCopy = planned(self.spec.bulk_tensor_copy(), "TMA");
        match offsets {
            Some(o) => unit.load_im2col(&self.ir, dst, map, coords, o, bar, Some(mask)),
            None => unit.load_tile(&self.ir, dst, map, coords, bar, Some(mask)),
        }
    }
    /// TMA im2col copy from im2col tensor map `map`: first pixel at `coords`, filter-tap
    /// `offsets`, into `dst`, completing on `bar`.
    pub fn tma_load_im2col(
        &self,
        dst: PointerValue<'ctx>,
        map: PointerValue<'ctx>,
        coords: &[IntValue<'ctx>],
        offsets: &[IntValue<'ctx>],
        bar: PointerValue<'ctx>,
    ) {
        let unit: &dyn BulkTensorCopy = planned(self.spec.bulk_tensor_copy(), "TMA");
        unit.load_im2col(&self.ir, dst, map, coords, offsets, bar, None)
    }

    // ---- control flow ----

    /// `if cond { body }`.
    pub fn if_then(&self, cond: IntValue<'ctx>, body: impl FnOnce(&Self)) {
        let then_bb = self.ctx.append_basic_block(self.func, "then");
        let done = self.ctx.append_basic_block(self.func, "endif");
        ok(self.raw().build_conditional_branch(cond, then_bb, done));
        self.raw().position_at_end(then_bb);
        body(self);
        ok(self.raw().build_unconditional_branch(done));
        self.raw().position_at_end(done);
    }

    /// `for i in lo..hi { body(i) }` as a runtime loop (i32, step 1). For loops with constant
    /// bounds that should be unrolled, kernel code uses a Rust loop instead.
    pub fn for_range(
        &self,
        lo: IntValue<'ctx>,
        hi: IntValue<'ctx>,
        body: impl FnOnce(&Self, IntValue<'ctx>),
    ) {
        let pre = self.current_block();
        let head = self.ctx.append_basic_block(self.func, "loop");
        let body_bb = self.ctx.append_basic_block(self.func, "body");
        let done = self.ctx.append_basic_block(self.func, "endloop");
        ok(self.raw().build_unconditional_branch(head));
        self.raw().position_at_end(head);
        let i = ok(self.raw().build_phi(self.i32t(), "i"));
        i.add_incoming(&[(&lo, pre)]);
        let iv = i.as_basic_value().into_int_value();
        let go = self.slt(iv, hi);
        ok(self.raw().build_conditional_branch(go, body_bb, done));
        self.raw().position_at_end(body_bb);
        body(self, iv);
        let next = self.addc(iv, 1);
        let latch = self.current_block();
        ok(self.raw().build_unconditional_branch(head));
        i.add_incoming(&[(&next, latch)]);
        self.raw().position_at_end(done);
    }
}
