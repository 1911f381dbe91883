//! Global → shared tile loads of A and B: each thread moves a fixed set of vectors ("slots")
//! per K tile, either through registers or with `cp.async`. What a slot covers is decided once,
//! before the K loop (the row part of the address too); each K tile adds only the K part.
//!
//! A tile is stored `[row][k]` when its vectors run along K and `[k][row]` when they run along
//! the rows (see [`SmemTile`]), so every vector lands contiguously in shared memory.

use super::builder::{Kb, Mem};
use super::index::{Addressing, Part};
use super::plan::{GemmPlan, SmemTile, TileLoad};
use crate::lowering::{Dim, Operand};
use crate::problem::DType;
use inkwell::values::{IntValue, PointerValue};

/// Element offset of tile row `row`, reduction index `k` inside one stage of a tile.
pub(crate) fn smem_elem<'ctx>(
    kb: &Kb<'_, 'ctx>,
    t: &SmemTile,
    row: IntValue<'ctx>,
    k: IntValue<'ctx>,
) -> IntValue<'ctx> {
    let (line, pos) = if t.kmajor { (row, k) } else { (k, row) };
    let (base, pos) = match t.row_blocks {
        // wgmma's MN-major blocks: one swizzle atom's rows a line (the stride), `bk` lines a
        // block.
        Some(block) => (
            kb.add(
                kb.mulc(kb.udivc(row, t.stride), block as i64),
                kb.mulc(k, t.stride as i64),
            ),
            kb.uremc(row, t.stride),
        ),
        None => (kb.mulc(line, t.stride as i64), pos),
    };
    match t.swizzle {
        None => kb.add(base, pos),
        Some(chunks) => {
            let phase = kb.uremc(kb.udivc(line, t.swizzle_line_div()), chunks);
            let chunk = kb.xor(kb.udivc(pos, t.chunk_elems), phase);
            let within = kb.uremc(pos, t.chunk_elems);
            kb.add(base, kb.add(kb.mulc(chunk, t.chunk_elems as i64), within))
        }
    }
}

/// Base of tile `t` (elements of `dt`) in stage `stage`, as an element pointer into shared
/// memory.
pub(crate) fn stage_base<'ctx>(
    kb: &Kb<'_, 'ctx>,
    t: &SmemTile,
    dt: DType,
    stage: IntValue<'ctx>,
) -> PointerValue<'ctx> {
    let first = kb.addc(kb.mulc(stage, t.stage as i64), t.region as i64);
    kb.gep(kb.elem_ty(dt), kb.shared_base(), first)
}

/// The alignment (bytes) of a shared access of `bytes` contiguous bytes that starts at a
/// multiple of `bytes` within a line: lines start at multiples of the stride, so both must
/// allow it.
pub(crate) fn smem_align(t: &SmemTile, dt: DType, bytes: u32) -> u32 {
    let line_bytes = t.stride * dt.bytes();
    let mut a = bytes.min(16);
    while !line_bytes.is_multiple_of(a) {
        a /= 2;
    }
    a
}

struct Slot<'ctx> {
    /// `vector id < vectors`, when some threads have no vector in this slot.
    active: Option<IntValue<'ctx>>,
    /// Tile row of the first element.
    row: IntValue<'ctx>,
    /// Tile column (k) of the first element.
    kc: IntValue<'ctx>,
    /// The G and row parts of the global address.
    parts: [Part<'ctx>; 2],
    /// Staging registers (register path only).
    reg: Option<PointerValue<'ctx>>,
}

/// The loads of one operand's tile.
pub(crate) struct Loader<'a, 'ctx> {
    /// The decisions of the plan.
    pub load: TileLoad,
    addr: Addressing<'a, 'ctx>,
    tensor: PointerValue<'ctx>,
    dt: DType,
    /// This operand's shared-memory tile.
    pub tile: SmemTile,
    block_k: u32,
    edge_k: bool,
    slots: Vec<Slot<'ctx>>,
    /// The tile's first row (its block's M or N origin) and group: a TMA copy's coordinates.
    pub origin: (IntValue<'ctx>, IntValue<'ctx>),
}

impl<'a, 'ctx> Loader<'a, 'ctx> {
    /// The loader of operand `op` (the GEMM's A or B), for the tile whose first row is `row0`
    /// in group `g`; `tid` counts from 0 over the load's threads ([`TileLoad::threads`]).
    pub fn new(
        kb: &Kb<'_, 'ctx>,
        plan: &'a GemmPlan<'a>,
        op: &'a Operand,
        tid: IntValue<'ctx>,
        g: IntValue<'ctx>,
        row0: IntValue<'ctx>,
    ) -> Self {
        let is_a = std::ptr::eq(op, &plan.gemm.a);
        let load = if is_a { plan.a } else { plan.b };
        let addr = Addressing::of(kb, plan, op);
        let edge_rows = plan.edge[if is_a { 0 } else { 1 }];
        let bk = plan.cfg.block_k;
        // An operand TMA loads has no per-thread copies: no slots (their address math would
        // be dead code whose width still reorders the kernel's instructions, so that configs
        // differing only in this unread width compiled to different PTX).
        let tma = plan.tma[if is_a { 0 } else { 1 }].is_some();
        let mut slots = Vec::new();
        for s in 0..if tma { 0 } else { load.slots } {
            let vid = kb.addc(tid, (s * load.threads) as i64);
            let active = (load.partial && (s + 1) * load.threads > load.vectors)
                .then(|| kb.ultc(vid, load.vectors));
            let (row, kc) = if load.along_k {
                let per_row = bk / load.vec;
                (
                    kb.udivc(vid, per_row),
                    kb.mulc(kb.uremc(vid, per_row), load.vec as i64),
                )
            } else {
                let per_col = load.rows / load.vec;
                (
                    kb.mulc(kb.uremc(vid, per_col), load.vec as i64),
                    kb.udivc(vid, per_col),
                )
            };
            let gpart = addr.part(kb, Dim::G, g, false);
            let rpart = addr.part(kb, load.row_dim, kb.add(row0, row), edge_rows);
            let reg = (!load.async_copy).then(|| kb.var(kb.zero(kb.vec_ty(plan.dt, load.vec))));
            slots.push(Slot {
                active,
                row,
                kc,
                parts: [gpart, rpart],
                reg,
            });
        }
        Loader {
            load,
            addr,
            tensor: kb.tensor(op.tensor),
            dt: plan.dt,
            tile: if is_a { plan.smem.a } else { plan.smem.b },
            block_k: bk,
            edge_k: plan.edge[2],
            slots,
            origin: (row0, g),
        }
    }

    /// Base of this operand's tile in stage `stage`, as an element pointer into shared memory.
    pub fn stage_base(&self, kb: &Kb<'_, 'ctx>, stage: IntValue<'ctx>) -> PointerValue<'ctx> {
        stage_base(kb, &self.tile, self.dt, stage)
    }

    /// Runs `body` for every slot, under its `active` guard.
    fn each_slot(&self, kb: &Kb<'_, 'ctx>, mut body: impl FnMut(&Kb<'_, 'ctx>, &Slot<'ctx>)) {
        for slot in &self.slots {
            match slot.active {
                Some(a) => kb.if_then(a, |kb| body(kb, slot)),
                None => body(kb, slot),
            }
        }
    }

    /// `(valid, element pointer)` of a slot's first element in K tile `kt`; the pointer is the
    /// tensor base where not valid.
    fn global(
        &self,
        kb: &Kb<'_, 'ctx>,
        slot: &Slot<'ctx>,
        kt: IntValue<'ctx>,
    ) -> (IntValue<'ctx>, PointerValue<'ctx>) {
        let k = kb.add(kb.mulc(kt, self.block_k as i64), slot.kc);
        let kpart = self.addr.part(kb, Dim::K, k, self.edge_k);
        let (valid, off) = self
            .addr
            .resolve(kb, &[&slot.parts[0], &slot.parts[1], &kpart]);
        (valid, kb.gep(kb.elem_ty(self.dt), self.tensor, off))
    }

    /// Issues the `cp.async` copies of K tile `kt` into `stage` (zero-filling padding).
    pub fn issue_async(&self, kb: &Kb<'_, 'ctx>, kt: IntValue<'ctx>, stage: IntValue<'ctx>) {
        let bytes = self.load.vec * self.dt.bytes();
        let base = self.stage_base(kb, stage);
        self.each_slot(kb, |kb, slot| {
            let (valid, src) = self.global(kb, slot, kt);
            let dst = kb.gep(
                kb.elem_ty(self.dt),
                base,
                smem_elem(kb, &self.tile, slot.row, slot.kc),
            );
            let src_bytes = kb.seli(valid, kb.c(bytes as i64), kb.c(0));
            kb.cp_async(dst, src, bytes, src_bytes);
        });
    }

    /// Loads K tile `kt` into the staging registers (zeros where padding).
    pub fn load_regs(&self, kb: &Kb<'_, 'ctx>, kt: IntValue<'ctx>) {
        let ty = kb.vec_ty(self.dt, self.load.vec);
        let align = self.load.vec * self.dt.bytes();
        self.each_slot(kb, |kb, slot| {
            let (valid, src) = self.global(kb, slot, kt);
            let v = kb.load(Mem::Global, ty, src, align);
            let v = kb.select(valid, v, kb.zero(ty));
            if let Some(reg) = slot.reg {
                kb.set(reg, v);
            }
        });
    }

    /// Stores the staging registers into `stage`.
    pub fn store_regs(&self, kb: &Kb<'_, 'ctx>, stage: IntValue<'ctx>) {
        let ty = kb.vec_ty(self.dt, self.load.vec);
        let eb = self.dt.bytes();
        let base = self.stage_base(kb, stage);
        self.each_slot(kb, |kb, slot| {
            let Some(reg) = slot.reg else { return };
            let v = kb.get(reg, ty);
            // Contiguous in both layouts: along K in [row][k], along the rows in [k][row].
            let at = kb.gep(
                kb.elem_ty(self.dt),
                base,
                smem_elem(kb, &self.tile, slot.row, slot.kc),
            );
            let align = smem_align(&self.tile, self.dt, self.load.vec * eb);
            kb.store(Mem::Shared, at, v, align);
        });
    }
}
