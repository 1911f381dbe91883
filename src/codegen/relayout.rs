//! The transpose launch of a layout transform (`xf=nhwc|nhwc_out`,
//! [`crate::lowering::relayout`]): `[batch][rows][cols]` with `cols` contiguous becomes
//! `[batch][cols][rows]`, through a 32×32 shared-memory tile per block so that both the reads
//! (along `cols`) and the writes (along `rows`) are coalesced. Memory-bound and plain, like the
//! other kernels around the GEMMs; the tile's rows are padded by one element against bank
//! conflicts.

use super::builder::{Kb, Mem};
use crate::problem::{DType, Tensor};

/// Tile edge, elements.
pub(crate) const TILE: u32 = 32;
/// Threads per block: `TILE` wide, `TILE / ROWS_PER_THREAD` tall.
pub(crate) const THREADS: u32 = 256;
const ROWS_PER_THREAD: u32 = TILE * TILE / THREADS;

/// Where one side of a transpose lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Place {
    /// The tensor's own argument.
    Tensor(Tensor),
    /// The workspace, from this byte.
    Workspace(u64),
}

/// One transpose launch: what it moves, from where to where.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Transpose {
    /// Element type.
    pub dt: DType,
    /// Outer extent.
    pub batch: u32,
    /// Rows of the source (its slower dimension of the two).
    pub rows: u32,
    /// Columns of the source (contiguous there; the rows are contiguous in the destination).
    pub cols: u32,
    /// The source.
    pub src: Place,
    /// The destination.
    pub dst: Place,
}

impl Transpose {
    /// Blocks of the launch (one a tile).
    pub fn blocks(&self) -> u64 {
        self.batch as u64 * self.rows.div_ceil(TILE) as u64 * self.cols.div_ceil(TILE) as u64
    }

    /// Dynamic shared memory: one padded tile.
    pub fn shared_bytes(&self) -> u32 {
        TILE * (TILE + 1) * self.dt.bytes()
    }
}

/// Emits the transpose.
pub(crate) fn emit_transpose<'ctx>(kb: &Kb<'_, 'ctx>, t: &Transpose) {
    kb.set_block_size(THREADS);
    let ty = kb.elem_ty(t.dt);
    let eb = t.dt.bytes();
    let base = |p: Place| match p {
        Place::Tensor(x) => kb.tensor(x),
        Place::Workspace(at) => kb.gep_bytes(kb.arg(crate::abi::ArgRole::Workspace), at as i64),
    };
    let (src, dst) = (base(t.src), base(t.dst));
    let smem = kb.shared_base();
    let (tiles_r, tiles_c) = (t.rows.div_ceil(TILE), t.cols.div_ceil(TILE));
    let b = kb.block_idx(0);
    let c0 = kb.mulc(kb.uremc(b, tiles_c), TILE as i64);
    let b = kb.udivc(b, tiles_c);
    let r0 = kb.mulc(kb.uremc(b, tiles_r), TILE as i64);
    let bat = kb.udivc(b, tiles_r);
    let tid = kb.thread_idx();
    let (tx, ty_) = (kb.uremc(tid, TILE), kb.udivc(tid, TILE));
    let plane = kb.mulc(bat, t.rows as i64 * t.cols as i64);
    let rows_c = kb.c(t.rows as i64);
    let cols_c = kb.c(t.cols as i64);
    // Read: row r0 + ty + 8i, column c0 + tx (consecutive threads, consecutive addresses).
    for i in 0..ROWS_PER_THREAD {
        let lr = kb.addc(ty_, (i * (THREADS / TILE)) as i64);
        let (r, c) = (kb.add(r0, lr), kb.add(c0, tx));
        kb.if_then(kb.all(&[kb.ult(r, rows_c), kb.ult(c, cols_c)]), |kb| {
            let at = kb.add(plane, kb.add(kb.mulc(r, t.cols as i64), c));
            let v = kb.load(Mem::Global, ty, kb.gep(ty, src, at), eb);
            let s = kb.add(kb.mulc(lr, (TILE + 1) as i64), tx);
            kb.store(Mem::Shared, kb.gep(ty, smem, s), v, eb);
        });
    }
    kb.barrier();
    // Write: column c0 + ty + 8i, row r0 + tx (rows contiguous in the destination).
    for i in 0..ROWS_PER_THREAD {
        let lc = kb.addc(ty_, (i * (THREADS / TILE)) as i64);
        let (r, c) = (kb.add(r0, tx), kb.add(c0, lc));
        kb.if_then(kb.all(&[kb.ult(r, rows_c), kb.ult(c, cols_c)]), |kb| {
            let s = kb.add(kb.mulc(tx, (TILE + 1) as i64), lc);
            let v = kb.load(Mem::Shared, ty, kb.gep(ty, smem, s), eb);
            let at = kb.add(plane, kb.add(kb.mulc(c, t.rows as i64), r));
            kb.store(Mem::Global, kb.gep(ty, dst, at), v, eb);
        });
    }
}
