//! NVPTX synchronisation as inline PTX (sm_90): `mbarrier` init/arrive/wait (the TMA and
//! warp-specialised pipelines' stage barriers), `fence.proxy.async`, named barriers and the
//! cluster verbs (`%cluster_ctarank`, `barrier.cluster`, remote arrivals through `mapa`),
//! behind [`Barriers`]. LLVM 19 has no intrinsics for most of them, hence the inline asm.

use super::ir::{ok, Ir};
use super::nvptx::Nvptx;
use super::spec::Barriers;
use inkwell::values::{IntValue, PointerValue};

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
