//! The warp tile: accumulators, one K tile of multiply-adds from shared memory, and where each
//! accumulator sits in the block tile (for the epilogue). Three ways to compute it: scalar FMA,
//! NVIDIA `mma.sync` m16n8k16 fed by `ldmatrix`, AMD MFMA 32×32.
//!
//! Fragment layouts (PTX ISA "Matrix Fragments for mma.m16n8k16"; AMD matrix instruction
//! calculator for `v_mfma_f32_32x32x8`), with `l` the lane:
//! - mma A (16×16, row): register r holds row `l/4 + 8·(r%2)`, columns `2·(l%4) + 8·(r/2)` +0,+1.
//! - mma B (16×8, col): register r holds column `l/4`, rows `2·(l%4) + 8·r` +0,+1.
//! - mma C (16×8): element r at row `l/4 + 8·(r/2)`, column `2·(l%4) + r%2`.
//! - `ldmatrix.x4`: lanes 8q..8q+7 give the row addresses of matrix q; lane l receives, from each
//!   matrix q, row `l/4`, elements `2·(l%4)` +0,+1 in register q (`.trans`: column `l/4`,
//!   rows `2·(l%4)` +0,+1).
//! - MFMA m×m×k (m = 32 or 16, wave64, one block; g = 64/m lane groups, kpl = k/g): lane l
//!   holds A row `l%m`, k `kpl·(l/m)` + 0..kpl; B likewise with column `l%m`; C element r
//!   (of m·m/64) at row `4g·(r/4) + 4·(l/m) + r%4`, column `l%m`.

use super::builder::{Kb, Mem};
use super::loader::{smem_align, smem_elem};
use super::plan::{GemmPlan, Math, SmemTile};
use super::target::MatrixUnit;
use inkwell::types::BasicTypeEnum;
use inkwell::values::{BasicValueEnum, FloatValue, IntValue, PointerValue, VectorValue};

/// Where the accumulators sit in the block tile: `items[i] = (row, col)` indexes `rows` and
/// `cols`, which are block-local and lane dependent.
pub(crate) struct AccLayout<'ctx> {
    /// Distinct rows this thread owns.
    pub rows: Vec<IntValue<'ctx>>,
    /// Distinct columns this thread owns.
    pub cols: Vec<IntValue<'ctx>>,
    /// (row index, column index) of each accumulator value.
    pub items: Vec<(usize, usize)>,
}

/// One thread's share of the warp tile.
pub(crate) struct WarpMath<'p, 'ctx> {
    plan: &'p GemmPlan<'p>,
    lane: IntValue<'ctx>,
    /// Warp tile origin in the block tile (with `wgmma`: this warp's 16-row slice of its
    /// warpgroup's tile).
    m0: IntValue<'ctx>,
    n0: IntValue<'ctx>,
    /// With `wgmma`: the warpgroup tile's first row (the A descriptor's first line).
    g_m0: IntValue<'ctx>,
    acc_ty: BasicTypeEnum<'ctx>,
    acc: Vec<PointerValue<'ctx>>,
}

impl<'p, 'ctx> WarpMath<'p, 'ctx> {
    /// Zeroed accumulators of thread `tid`.
    pub fn new(kb: &Kb<'_, 'ctx>, plan: &'p GemmPlan<'p>, tid: IntValue<'ctx>) -> Self {
        let c = &plan.cfg;
        let warp = kb.udivc(tid, plan.warp);
        let lane = kb.uremc(tid, plan.warp);
        let warps_n = c.block_n / c.warp_n;
        // With wgmma a tile belongs to a warpgroup of 4 consecutive warps; warp w%4 of it
        // holds rows 16·(w%4) .. +16 of the accumulators.
        let (tile, slice) = match plan.math {
            Math::Wgmma { .. } => (kb.udivc(warp, 4), kb.mulc(kb.uremc(warp, 4), 16)),
            _ => (warp, kb.c(0)),
        };
        let g_m0 = kb.mulc(kb.udivc(tile, warps_n), c.warp_m as i64);
        let m0 = kb.add(g_m0, slice);
        let n0 = kb.mulc(kb.uremc(tile, warps_n), c.warp_n as i64);
        let (acc_ty, count): (BasicTypeEnum, u32) = match plan.math {
            Math::Wgmma { n, .. } => (kb.f32t().into(), wgmma_row_blocks(c) * n / 2),
            Math::Fma {
                lanes_m, lanes_n, ..
            } => (
                kb.f32t().into(),
                (c.warp_m / lanes_m) * (c.warp_n / lanes_n),
            ),
            Math::Matrix(MatrixUnit::Mma16816) => {
                (kb.f32t().into(), (c.warp_m / 16) * (c.warp_n / 8) * 4)
            }
            Math::Matrix(MatrixUnit::Mfma { m, .. }) => (
                kb.f32t().vec_type(m * m / 64).into(),
                (c.warp_m / m) * (c.warp_n / m),
            ),
        };
        let acc = (0..count).map(|_| kb.var(kb.zero(acc_ty))).collect();
        WarpMath {
            plan,
            lane,
            m0,
            n0,
            g_m0,
            acc_ty,
            acc,
        }
    }

    /// Multiplies one K tile: A and B from the shared-memory stage bases given.
    pub fn step(&self, kb: &Kb<'_, 'ctx>, a: PointerValue<'ctx>, b: PointerValue<'ctx>) {
        match self.plan.math {
            Math::Fma {
                lanes_m,
                lanes_n,
                kvec,
            } => self.step_fma(kb, a, b, lanes_m, lanes_n, kvec),
            Math::Matrix(MatrixUnit::Mma16816) => self.step_mma(kb, a, b),
            Math::Matrix(MatrixUnit::Mfma { m, k }) => self.step_mfma(kb, a, b, m, k),
            Math::Wgmma { n, in_flight } => self.step_wgmma(kb, a, b, n, in_flight),
        }
    }

    /// After the last K tile: waits for a `wgmma` group still in flight, so the accumulators
    /// hold their final values.
    pub fn drain(&self, kb: &Kb<'_, 'ctx>) {
        if let Math::Wgmma {
            in_flight: true, ..
        } = self.plan.math
        {
            let acc = self.load_floats(kb);
            let acc = kb.wgmma_wait(0, &acc);
            self.store_acc(kb, acc);
        }
    }

    /// One K tile with `wgmma`: `bk/16` instructions of m64nNk16 from shared memory, stage
    /// bases 1024-byte aligned. Descriptor (PTX ISA "Matrix Descriptor Format"): bits 0-13
    /// start address / 16, 16-29 leading-dimension byte offset / 16, 32-45 stride byte offset
    /// / 16, 49-51 base offset (0: the swizzle pattern starts aligned), 62-63 layout type (1 =
    /// 128-byte swizzle, 2 = 64-byte, 3 = 32-byte). The hardware applies the XOR to the
    /// address bits, so descriptors hold unswizzled addresses.
    /// - K-major (`[row][k]`, lines of 64 k, 128-byte swizzle: 16-byte chunk c of line r at
    ///   c ^ r%8): 8-line groups of rows 1024 bytes apart (stride offset); the leading offset
    ///   is unused (16 bytes, as CUTLASS sets it); the k-th k16 step starts 32·k bytes into
    ///   the line.
    /// - MN-major (`[k][row]`, transposed mode): blocks of one swizzle atom's rows (S/2 rows
    ///   of S bytes, S = 128, 64 or 32 as `fit::wgmma_mn_swizzle` chose), each `bk` lines of S
    ///   bytes (one per k); 8-line groups of k 8·S bytes apart (stride offset), blocks `bk`·S
    ///   bytes apart (leading offset, as CUTLASS's canonical MN-major layouts have it). The
    ///   k-th k16 step starts 16 lines (16·S bytes) further.
    ///
    /// With `in_flight` the step returns with its own group still running (`wait_group 1`
    /// retires the previous tile's), so the tensor cores work through the next tile's barrier
    /// and copies; the accumulators pass through each wait (see `WarpgroupMma::wait`).
    fn step_wgmma(
        &self,
        kb: &Kb<'_, 'ctx>,
        a: PointerValue<'ctx>,
        b: PointerValue<'ctx>,
        n: u32,
        in_flight: bool,
    ) {
        let c = &self.plan.cfg;
        let eb = self.plan.dt.bytes() as i64;
        let (ta, tb) = (&self.plan.smem.a, &self.plan.smem.b);
        // Start of the warpgroup's rows: a line each (K-major), or whole atom blocks
        // (MN-major: the warpgroup origin is a multiple of the atom's rows, the stride).
        let origin = |t: &SmemTile, base: PointerValue<'ctx>, row0: IntValue<'ctx>| {
            let off = match t.row_blocks {
                None => kb.mulc(row0, 128),
                Some(block) => kb.mulc(kb.udivc(row0, t.stride), block as i64 * eb),
            };
            kb.add(kb.smem_addr(base), off)
        };
        // One instruction per 64-row block of the warpgroup tile, each on its own
        // accumulators (`n / 2` a thread), all on the same B.
        let blocks = wgmma_row_blocks(c);
        let a_addrs: Vec<_> = (0..blocks)
            .map(|r| origin(ta, a, kb.addc(self.g_m0, WGMMA_M as i64 * r as i64)))
            .collect();
        let b_addr = origin(tb, b, self.n0);
        let i64t = kb.ctx.i64_type();
        // Bytes of one swizzled line: 128 (K-major), the atom's span (MN-major).
        let span = |t: &SmemTile| t.stride as u64 * eb as u64;
        let fixed = |t: &SmemTile| {
            let lbo: u64 = match t.row_blocks {
                None => 16,
                Some(block) => block as u64 * eb as u64,
            };
            let layout: u64 = match span(t) {
                128 => 1,
                64 => 2,
                32 => 3,
                s => unreachable!("the planner lays out 32-, 64- or 128-byte lines, not {s}"),
            };
            ((lbo >> 4) << 16) | (((8 * span(t)) >> 4) << 32) | (layout << 62)
        };
        let desc = |t: &SmemTile, addr: IntValue<'ctx>| -> IntValue<'ctx> {
            let a = kb.and(kb.zext(addr, i64t), kb.c64(0x3FFFF));
            kb.or(kb.lshr(a, kb.c64(4)), kb.c64(fixed(t)))
        };
        let step = |t: &SmemTile, kk: u32| -> i64 {
            if t.kmajor {
                kk as i64 * 16 * eb
            } else {
                kk as i64 * 16 * span(t) as i64
            }
        };
        let mut acc = self.load_floats(kb);
        let per = (n / 2) as usize;
        kb.wgmma_fence();
        for kk in 0..c.block_k / 16 {
            let das: Vec<_> = a_addrs
                .iter()
                .map(|&a_addr| desc(ta, kb.addc(a_addr, step(ta, kk))))
                .collect();
            let db = desc(tb, kb.addc(b_addr, step(tb, kk)));
            let trans = [!ta.kmajor, !tb.kmajor];
            for (r, &da) in das.iter().enumerate() {
                let part = r * per..(r + 1) * per;
                let out = kb.wgmma(self.plan.dt, n, trans, da, db, &acc[part.clone()]);
                acc.splice(part, out);
            }
        }
        kb.wgmma_commit();
        let acc = kb.wgmma_wait(u32::from(in_flight), &acc);
        self.store_acc(kb, acc);
    }

    fn load_acc(&self, kb: &Kb<'_, 'ctx>) -> Vec<inkwell::values::BasicValueEnum<'ctx>> {
        self.acc.iter().map(|&v| kb.get(v, self.acc_ty)).collect()
    }

    fn load_floats(&self, kb: &Kb<'_, 'ctx>) -> Vec<FloatValue<'ctx>> {
        self.load_acc(kb)
            .into_iter()
            .map(|v| v.into_float_value())
            .collect()
    }

    fn store_acc<V: Into<BasicValueEnum<'ctx>>>(&self, kb: &Kb<'_, 'ctx>, vals: Vec<V>) {
        for (&var, v) in self.acc.iter().zip(vals) {
            kb.set(var, v.into());
        }
    }

    /// `n` elements of tile row `row`, reduction indices `k0..k0+n`, as f32: one vector load
    /// from a `[row][k]` tile, `n` scalar loads from a `[k][row]` tile.
    fn read_k(
        &self,
        kb: &Kb<'_, 'ctx>,
        base: PointerValue<'ctx>,
        t: &SmemTile,
        row: IntValue<'ctx>,
        k0: u32,
        n: u32,
    ) -> Vec<FloatValue<'ctx>> {
        let dt = self.plan.dt;
        let et = kb.elem_ty(dt);
        if t.kmajor {
            let at = kb.gep(et, base, smem_elem(kb, t, row, kb.c(k0 as i64)));
            let v = kb.load(
                Mem::Shared,
                kb.vec_ty(dt, n),
                at,
                smem_align(t, dt, n * dt.bytes()),
            );
            kb.scatter(v).into_iter().map(|x| kb.widen(x, dt)).collect()
        } else {
            (k0..k0 + n)
                .map(|k| {
                    let at = kb.gep(et, base, smem_elem(kb, t, row, kb.c(k as i64)));
                    kb.widen(kb.load(Mem::Shared, et, at, dt.bytes()), dt)
                })
                .collect()
        }
    }

    fn step_fma(
        &self,
        kb: &Kb<'_, 'ctx>,
        a: PointerValue<'ctx>,
        b: PointerValue<'ctx>,
        lanes_m: u32,
        lanes_n: u32,
        kvec: u32,
    ) {
        let c = &self.plan.cfg;
        let (tm, tn) = (c.warp_m / lanes_m, c.warp_n / lanes_n);
        let lm = kb.udivc(self.lane, lanes_n);
        let ln = kb.uremc(self.lane, lanes_n);
        let rows: Vec<_> = (0..tm)
            .map(|i| kb.addc(kb.add(self.m0, lm), (i * lanes_m) as i64))
            .collect();
        let cols: Vec<_> = (0..tn)
            .map(|j| kb.addc(kb.add(self.n0, ln), (j * lanes_n) as i64))
            .collect();
        let mut acc = self.load_floats(kb);
        let (ta, tb) = (&self.plan.smem.a, &self.plan.smem.b);
        for kk in (0..c.block_k).step_by(kvec as usize) {
            let av: Vec<_> = rows
                .iter()
                .map(|&r| self.read_k(kb, a, ta, r, kk, kvec))
                .collect();
            let bv: Vec<_> = cols
                .iter()
                .map(|&r| self.read_k(kb, b, tb, r, kk, kvec))
                .collect();
            for e in 0..kvec as usize {
                for i in 0..tm as usize {
                    for j in 0..tn as usize {
                        let x = &mut acc[i * tn as usize + j];
                        *x = kb.fma(av[i][e], bv[j][e], *x);
                    }
                }
            }
        }
        self.store_acc(kb, acc);
    }

    fn step_mma(&self, kb: &Kb<'_, 'ctx>, a: PointerValue<'ctx>, b: PointerValue<'ctx>) {
        let c = &self.plan.cfg;
        let dt = self.plan.dt;
        let (ta, tb) = (&self.plan.smem.a, &self.plan.smem.b);
        let (fm, fnn) = (c.warp_m / 16, c.warp_n / 8);
        let l = self.lane;
        // ldmatrix.x4 row addresses (module doc): lane l addresses line l%8 of matrix q = l/8.
        // A's matrices are (m+0,k+0), (m+8,k+0), (m+0,k+8), (m+8,k+8); B's (n+0,k+0),
        // (n+0,k+8), (n+8,k+0), (n+8,k+8). In a [row][k] tile a matrix line is a row (8 k's);
        // in a [k][row] tile it is a k (8 rows) and `.trans` transposes it back.
        let q = kb.udivc(l, 8);
        let r8 = kb.uremc(l, 8);
        let (q_lo, q_hi) = (kb.mulc(kb.uremc(q, 2), 8), kb.mulc(kb.udivc(q, 2), 8));
        // (row offset, k offset) of this lane's line within a 16x16 block.
        let a_at = if ta.kmajor {
            (kb.add(r8, q_lo), q_hi)
        } else {
            (q_lo, kb.add(r8, q_hi))
        };
        let b_at = if tb.kmajor {
            (kb.add(r8, q_hi), q_lo)
        } else {
            (q_hi, kb.add(r8, q_lo))
        };
        let a_row = kb.add(self.m0, a_at.0);
        let b_row = kb.add(self.n0, b_at.0);
        let mut acc = self.load_floats(kb);
        let ld = |base, t: &SmemTile, row, k| {
            let at = kb.gep(kb.elem_ty(dt), base, smem_elem(kb, t, row, k));
            kb.ldmatrix_x4(at, !t.kmajor)
        };
        for kk in (0..c.block_k).step_by(16) {
            let af: Vec<[IntValue; 4]> = (0..fm)
                .map(|i| {
                    ld(
                        a,
                        ta,
                        kb.addc(a_row, (16 * i) as i64),
                        kb.addc(a_at.1, kk as i64),
                    )
                })
                .collect();
            let bf: Vec<[IntValue; 4]> = (0..fnn / 2)
                .map(|j| {
                    ld(
                        b,
                        tb,
                        kb.addc(b_row, (16 * j) as i64),
                        kb.addc(b_at.1, kk as i64),
                    )
                })
                .collect();
            for (i, a) in af.iter().enumerate() {
                for j in 0..fnn as usize {
                    let q = &bf[j / 2];
                    let bj = [q[2 * (j % 2)], q[2 * (j % 2) + 1]];
                    let at = (i * fnn as usize + j) * 4;
                    let cin: [FloatValue; 4] = std::array::from_fn(|r| acc[at + r]);
                    let d = kb.mma(dt, *a, bj, cin);
                    acc[at..at + 4].copy_from_slice(&d);
                }
            }
        }
        self.store_acc(kb, acc);
    }

    fn step_mfma(
        &self,
        kb: &Kb<'_, 'ctx>,
        a: PointerValue<'ctx>,
        b: PointerValue<'ctx>,
        m: u32,
        k: u32,
    ) {
        let c = &self.plan.cfg;
        let dt = self.plan.dt;
        let kpl = MatrixUnit::Mfma { m, k }.per_lane();
        let (fm, fnn) = (c.warp_m / m, c.warp_n / m);
        // Lane l holds row (column) l%m of A (B), reduction indices kpl·(l/m) + 0..kpl.
        let row = kb.uremc(self.lane, m);
        let col = kb.mulc(kb.udivc(self.lane, m), kpl as i64);
        let ty = kb.vec_ty(dt, kpl);
        // kpl consecutive k of one row: a vector from a [row][k] tile, gathered from a [k][row] one.
        let ld = |base, t: &SmemTile, r0: IntValue<'ctx>, kk: u32| -> BasicValueEnum<'ctx> {
            let r = kb.add(r0, row);
            let k = kb.addc(col, kk as i64);
            if t.kmajor {
                let at = kb.gep(kb.elem_ty(dt), base, smem_elem(kb, t, r, k));
                kb.load(Mem::Shared, ty, at, smem_align(t, dt, kpl * dt.bytes()))
            } else {
                let elems: Vec<_> = (0..kpl)
                    .map(|e| {
                        let at = kb.gep(
                            kb.elem_ty(dt),
                            base,
                            smem_elem(kb, t, r, kb.addc(k, e as i64)),
                        );
                        kb.load(Mem::Shared, kb.elem_ty(dt), at, dt.bytes())
                    })
                    .collect();
                kb.gather(ty, &elems)
            }
        };
        let (ta, tb) = (&self.plan.smem.a, &self.plan.smem.b);
        let mut acc: Vec<VectorValue> = self
            .load_acc(kb)
            .into_iter()
            .map(|v| v.into_vector_value())
            .collect();
        for kk in (0..c.block_k).step_by(k as usize) {
            let af: Vec<_> = (0..fm)
                .map(|i| ld(a, ta, kb.addc(self.m0, (m * i) as i64), kk))
                .collect();
            let bf: Vec<_> = (0..fnn)
                .map(|j| ld(b, tb, kb.addc(self.n0, (m * j) as i64), kk))
                .collect();
            for (i, a) in af.iter().enumerate() {
                for (j, b) in bf.iter().enumerate() {
                    let x = &mut acc[i * fnn as usize + j];
                    *x = kb.mfma(dt, (m, k), *a, *b, *x);
                }
            }
        }
        self.store_acc(kb, acc);
    }

    /// The accumulator values as f32, in the order of [`Self::layout`]'s items.
    pub fn values(&self, kb: &Kb<'_, 'ctx>) -> Vec<FloatValue<'ctx>> {
        let vals = self.load_acc(kb);
        match self.plan.math {
            Math::Matrix(MatrixUnit::Mfma { .. }) => vals
                .into_iter()
                .flat_map(|v| kb.scatter(v))
                .map(|x| x.into_float_value())
                .collect(),
            _ => vals.into_iter().map(|v| v.into_float_value()).collect(),
        }
    }

    /// Where each accumulator value sits in the block tile.
    pub fn layout(&self, kb: &Kb<'_, 'ctx>) -> AccLayout<'ctx> {
        let c = &self.plan.cfg;
        let l = self.lane;
        let mut items = Vec::new();
        let (rows, cols) = match self.plan.math {
            Math::Fma {
                lanes_m, lanes_n, ..
            } => {
                let (tm, tn) = (c.warp_m / lanes_m, c.warp_n / lanes_n);
                let lm = kb.add(self.m0, kb.udivc(l, lanes_n));
                let ln = kb.add(self.n0, kb.uremc(l, lanes_n));
                for i in 0..tm as usize {
                    for j in 0..tn as usize {
                        items.push((i, j));
                    }
                }
                (
                    (0..tm).map(|i| kb.addc(lm, (i * lanes_m) as i64)).collect(),
                    (0..tn).map(|j| kb.addc(ln, (j * lanes_n) as i64)).collect(),
                )
            }
            Math::Matrix(MatrixUnit::Mma16816) | Math::Wgmma { .. } => {
                // wgmma m64nN f32 D (PTX ISA "Register Fragments" for wgmma): warp w%4 of the
                // warpgroup holds rows 16·(w%4) + [0, 16) (folded into m0), and each thread
                // holds the m16n8 C fragment of mma.sync for each of the N/8 column blocks:
                // d[4j + r] at row l/4 + 8·(r/2), column 8j + 2·(l%4) + r%2. A 128-row
                // warpgroup tile is two such blocks 64 rows apart, the second's values after
                // the first's. mma.sync: warp_m/16 fragments 16 rows apart.
                let (fm, pitch) = match self.plan.math {
                    Math::Wgmma { .. } => (wgmma_row_blocks(c), WGMMA_M),
                    _ => (c.warp_m / 16, 16),
                };
                let fnn = c.warp_n / 8;
                let r0 = kb.add(self.m0, kb.udivc(l, 4));
                let c0 = kb.add(self.n0, kb.mulc(kb.uremc(l, 4), 2));
                // rows[2i + h] = r0 + 16i + 8h; cols[2j + e] = c0 + 8j + e.
                for i in 0..fm as usize {
                    for j in 0..fnn as usize {
                        for r in 0..4 {
                            items.push((2 * i + r / 2, 2 * j + r % 2));
                        }
                    }
                }
                (
                    (0..2 * fm)
                        .map(|x| kb.addc(r0, (pitch * (x / 2) + 8 * (x % 2)) as i64))
                        .collect(),
                    (0..2 * fnn)
                        .map(|x| kb.addc(c0, (8 * (x / 2) + x % 2) as i64))
                        .collect(),
                )
            }
            Math::Matrix(MatrixUnit::Mfma { m, .. }) => {
                let (fm, fnn) = (c.warp_m / m, c.warp_n / m);
                let per = m * m / 64;
                let groups = 64 / m;
                let r0 = kb.add(self.m0, kb.mulc(kb.udivc(l, m), 4));
                let c0 = kb.add(self.n0, kb.uremc(l, m));
                // Element r of lane l: row 4·groups·(r/4) + 4·(l/m) + r%4, column l%m.
                // rows[per·i + r] = r0 + m·i + 4·groups·(r/4) + r%4; cols[j] = c0 + m·j.
                for i in 0..fm as usize {
                    for j in 0..fnn as usize {
                        for r in 0..per as usize {
                            items.push((per as usize * i + r, j));
                        }
                    }
                }
                (
                    (0..per * fm)
                        .map(|x| {
                            let (i, r) = (x / per, x % per);
                            kb.addc(r0, (m * i + 4 * groups * (r / 4) + r % 4) as i64)
                        })
                        .collect(),
                    (0..fnn).map(|j| kb.addc(c0, (m * j) as i64)).collect(),
                )
            }
        };
        AccLayout { rows, cols, items }
    }
}

/// Rows of one `wgmma` instruction (m64nNk16).
const WGMMA_M: u32 = 64;

/// The `wgmma` instructions per k step of a warpgroup tile: one per 64 rows of `wm` (the fit
/// rule allows 64 and 128).
fn wgmma_row_blocks(c: &crate::config::PerfConfig) -> u32 {
    (c.warp_m / WGMMA_M).max(1)
}
