//! The direct depthwise kernel (`mma=dw`): no GEMM, memory-bound; one launch (backward weight:
//! with the zeroing and conversion around it, or the summing of its partials after it).
//!
//! The formula and which problems it runs are [`crate::lowering::depthwise`]'s; what the
//! config fields mean is [`DwTile`]'s. A block is `bm / va` channel vectors (the fastest
//! threads, so that a warp's loads and stores are consecutive 16-byte vectors along the
//! channels of one pixel) × `bn / (vb · vc)` pixel tiles. It first copies the filter taps of
//! its `bm` channels to shared memory as f32 (`[tap][channel]`, so that a thread's taps are
//! one or two 16-byte shared loads); then each thread walks the `src` rows and columns its
//! `vc × vb` tile spans, loading each `src` vector once and adding it, widened to f32, into
//! every accumulator whose tap lands on it — the input reuse across the tile is in registers,
//! the reuse between threads in L1. Taps in the padding read nothing (the address is clamped
//! and the value replaced by zero: one check per vector, since a pixel's channels are all in
//! or all out). The whole body is unrolled at compile time; nothing in it branches but the
//! edges of the image.

use super::builder::{Kb, Mem};
use super::CodegenError;
use crate::arch::Arch;
use crate::config::{DwSums, DwTile, PerfConfig};
use crate::lowering::depthwise::DwShape;
use crate::problem::{ConvProblem, DType, Tensor};
use inkwell::values::{BasicValueEnum, FloatValue, IntValue};

/// Every constant of one depthwise kernel.
#[derive(Debug, Clone)]
pub(crate) struct DwPlan {
    /// The problem in the kernel's terms.
    pub shape: DwShape,
    /// The config's tile.
    pub tile: DwTile,
    /// Pixel tiles along (H, W) of `dst`.
    pub tiles_hw: [u32; 2],
    /// Pixel tiles of all images.
    pub tiles: u32,
    /// Blocks along (pixels, channels).
    pub grid: [u64; 3],
    /// Dynamic shared memory (the filter; backward weight: the block's sums).
    pub shared_bytes: u32,
    /// Pixel tiles each block takes ([`DwShape::pixel_blocks`]; backward weight: the one
    /// contiguous run its threads walk).
    pub run: u32,
}

impl DwPlan {
    /// Plans `cfg` for `p` on `arch`, or says why it cannot run.
    pub fn new(p: &ConvProblem, cfg: &PerfConfig, arch: &Arch) -> Result<Self, CodegenError> {
        let fail = |reason: String| CodegenError::Config {
            config: cfg.to_string(),
            gemm: 0,
            reason: format!("mma=dw: {reason}"),
        };
        let shape = DwShape::of(p).map_err(fail)?;
        let tile = DwTile::of(cfg);
        if let Some(why) = shape.tile_refusal(&tile, arch) {
            return Err(fail(why));
        }
        let tiles_hw = shape.tiles_hw(tile.rows, tile.cols);
        let tiles = shape.tiles(tile.rows, tile.cols);
        let channel_blocks = u64::from(shape.channels.div_ceil(tile.channels));
        let (grid_x, run) = shape.pixel_blocks(&tile, arch);
        Ok(DwPlan {
            shape,
            tile,
            tiles_hw,
            tiles: tiles as u32,
            grid: [grid_x, channel_blocks, 1],
            shared_bytes: shape.filter_bytes(tile.channels) as u32,
            run,
        })
    }

    /// Threads per block.
    pub fn threads(&self) -> u32 {
        self.tile.threads()
    }
}

/// Emits the kernel of `pl`.
pub(crate) fn emit_depthwise<'ctx>(kb: &Kb<'_, 'ctx>, pl: &DwPlan) {
    if pl.shape.reduce {
        return emit_weight_grad(kb, pl);
    }
    let (s, t) = (&pl.shape, &pl.tile);
    let threads = pl.threads();
    kb.set_block_size(threads);
    let tid = kb.thread_idx();
    let ch_block = kb.mulc(kb.block_idx(1), i64::from(t.channels));
    fill_filter(kb, pl, tid, ch_block);
    kb.barrier();

    let cvecs = t.channel_vectors();
    let cv = kb.uremc(tid, cvecs);
    let ch0 = kb.add(ch_block, kb.mulc(cv, i64::from(t.vec)));
    let tile = kb.add(
        kb.mulc(kb.block_idx(0), i64::from(t.tiles())),
        kb.udivc(tid, cvecs),
    );
    let live = kb.all(&[kb.ultc(tile, pl.tiles), kb.ultc(ch0, s.channels)]);
    kb.if_then(live, |kb| {
        let (n, origin) = tile_origin(kb, pl, tile);
        let acc = accumulate(kb, pl, n, origin, cv, ch0);
        store(kb, pl, n, origin, ch0, &acc);
    });
}

/// Backward weight: each thread sums `src · dst` per tap for its `va` channels over the `dst`
/// pixel tiles it takes from its block's run ([`DwPlan::run`]: tile `start + k·lanes + lane`),
/// `dst`'s tile held in registers while the `src` span is walked as in the forward kernel. The
/// block then adds its threads' sums lane by lane into shared memory (`[tap][channel]`,
/// ordered by barriers, so the result does not depend on timing), and adds those into the f32
/// filter gradient with one atomic per channel and tap, or stores them to its own slot of
/// partials for the summing kernel ([`DwSums`]).
fn emit_weight_grad<'ctx>(kb: &Kb<'_, 'ctx>, pl: &DwPlan) {
    let (s, t) = (&pl.shape, &pl.tile);
    let threads = pl.threads();
    kb.set_block_size(threads);
    let tid = kb.thread_idx();
    let taps = s.taps[0] * s.taps[1];
    let va = t.vec;
    let cvecs = t.channel_vectors();
    let cv = kb.uremc(tid, cvecs);
    let lane = kb.udivc(tid, cvecs);
    let lanes = t.tiles();
    let ch_block = kb.mulc(kb.block_idx(1), i64::from(t.channels));
    let ch0 = kb.add(ch_block, kb.mulc(cv, i64::from(va)));
    let ch_ok = kb.ultc(ch0, s.channels);
    let f32t = kb.f32t();
    let smem = kb.shared_base();
    let elems = t.channels * taps;
    // The block's sums, zeroed.
    block_strided(kb, threads, elems, tid, |kb, i| {
        kb.store(
            Mem::Shared,
            kb.gep(f32t.into(), smem, i),
            kb.cf(0.0).into(),
            4,
        );
    });
    kb.barrier();
    let sums: Vec<_> = (0..taps * va).map(|_| kb.var(kb.cf(0.0).into())).collect();
    let start = kb.mulc(kb.block_idx(0), i64::from(pl.run));
    kb.for_range(
        kb.c(0),
        kb.c(i64::from(pl.run.div_ceil(lanes))),
        |kb, it| {
            let k = kb.add(kb.mulc(it, i64::from(lanes)), lane);
            let tile = kb.add(start, k);
            let live = kb.all(&[ch_ok, kb.ultc(k, pl.run), kb.ultc(tile, pl.tiles)]);
            kb.if_then(live, |kb| {
                let (n, origin) = tile_origin(kb, pl, tile);
                let dst = load_dst_tile(kb, pl, n, origin, ch0);
                let mut acc: Vec<FloatValue> = sums
                    .iter()
                    .map(|&v| kb.get(v, f32t.into()).into_float_value())
                    .collect();
                walk_src(kb, pl, n, origin, ch0, |kb, i, j, tap, x| {
                    let d = ((i * t.cols + j) * va) as usize;
                    for e in 0..va as usize {
                        let a = tap as usize * va as usize + e;
                        acc[a] = kb.fma(x(e), dst[d + e], acc[a]);
                    }
                });
                for (&v, a) in sums.iter().zip(acc) {
                    kb.set(v, a.into());
                }
            });
        },
    );
    // Lane by lane into shared memory, `[tap][channel]`.
    kb.for_range(kb.c(0), kb.c(i64::from(lanes)), |kb, l| {
        kb.if_then(kb.all(&[kb.eq(lane, l), ch_ok]), |kb| {
            for tap in 0..taps {
                for e in 0..va {
                    let i = kb.addc(kb.mulc(cv, i64::from(va)), i64::from(tap * t.channels + e));
                    let at = kb.gep(f32t.into(), smem, i);
                    let old = kb.load(Mem::Shared, f32t.into(), at, 4).into_float_value();
                    let mine = kb.get(sums[(tap * va + e) as usize], f32t.into());
                    kb.store(
                        Mem::Shared,
                        at,
                        kb.fadd(old, mine.into_float_value()).into(),
                        4,
                    );
                }
            }
        });
        kb.barrier();
    });
    // The block's sums into the filter gradient: by atomics into it (its f32 copy in the
    // workspace), or stored to the block's own slot of partials (`DwSums::Partials`).
    let partials = t.sums == Some(DwSums::Partials);
    let (base, role_elems) = if s.sums_in_workspace(t) {
        (kb.arg(crate::abi::ArgRole::Workspace), DType::F32)
    } else {
        (kb.tensor(Tensor::Filter), s.dtype)
    };
    let slot = kb.mulc(kb.block_idx(0), s.filter_elems() as i64);
    block_strided(kb, threads, elems, tid, |kb, i| {
        let tap = kb.udivc(i, t.channels);
        let ch = kb.add(ch_block, kb.uremc(i, t.channels));
        kb.if_then(kb.ultc(ch, s.channels), |kb| {
            let off = filter_offset(kb, s, ch, tap);
            let v = kb.load(Mem::Shared, f32t.into(), kb.gep(f32t.into(), smem, i), 4);
            if partials {
                let at = kb.gep(f32t.into(), base, kb.add(slot, off));
                kb.store(Mem::Global, at, v, 4);
            } else {
                kb.atomic_add_f32(
                    kb.gep(kb.elem_ty(role_elems), base, off),
                    v.into_float_value(),
                );
            }
        });
    });
}

/// The image of pixel tile `tile` (numbered along W, then H, then images) and its first
/// `dst` pixel (row, column).
fn tile_origin<'ctx>(
    kb: &Kb<'_, 'ctx>,
    pl: &DwPlan,
    tile: IntValue<'ctx>,
) -> (IntValue<'ctx>, [IntValue<'ctx>; 2]) {
    let [tiles_h, tiles_w] = pl.tiles_hw;
    let wt = kb.uremc(tile, tiles_w);
    let rest = kb.udivc(tile, tiles_w);
    let (ht, n) = (kb.uremc(rest, tiles_h), kb.udivc(rest, tiles_h));
    let origin = [
        kb.mulc(ht, i64::from(pl.tile.rows)),
        kb.mulc(wt, i64::from(pl.tile.cols)),
    ];
    (n, origin)
}

/// `body(i)` for every `i < elems`, the block's `threads` threads taking consecutive ones.
fn block_strided<'ctx>(
    kb: &Kb<'_, 'ctx>,
    threads: u32,
    elems: u32,
    tid: IntValue<'ctx>,
    body: impl Fn(&Kb<'_, 'ctx>, IntValue<'ctx>),
) {
    kb.for_range(
        kb.c(0),
        kb.c(i64::from(elems.div_ceil(threads))),
        |kb, r| {
            let i = kb.add(kb.mulc(r, i64::from(threads)), tid);
            kb.if_then(kb.ultc(i, elems), |kb| body(kb, i));
        },
    );
}

/// Backward weight: the `dst` values of a thread's tile as f32, `[row][col][channel]`, zero
/// for pixels past the image.
fn load_dst_tile<'ctx>(
    kb: &Kb<'_, 'ctx>,
    pl: &DwPlan,
    n: IntValue<'ctx>,
    origin: [IntValue<'ctx>; 2],
    ch0: IntValue<'ctx>,
) -> Vec<FloatValue<'ctx>> {
    let (s, t) = (&pl.shape, &pl.tile);
    let dt = s.dtype;
    let ty = kb.vec_ty(dt, t.vec);
    let dst = kb.tensor(s.dst);
    let base = kb.add(kb.mulc(n, s.dst_strides[0] as i64), ch0);
    let mut out = Vec::with_capacity((t.rows * t.cols * t.vec) as usize);
    for i in 0..t.rows {
        let h = kb.addc(origin[0], i64::from(i));
        let h_ok = kb.ultc(h, s.dst_hw[0]);
        let h = kb.seli(h_ok, h, kb.c(0));
        for j in 0..t.cols {
            let w = kb.addc(origin[1], i64::from(j));
            let ok = kb.all(&[h_ok, kb.ultc(w, s.dst_hw[1])]);
            let w = kb.seli(ok, w, kb.c(0));
            let off = kb.add(
                base,
                kb.add(
                    kb.mulc(h, s.dst_strides[1] as i64),
                    kb.mulc(w, s.dst_strides[2] as i64),
                ),
            );
            let at = kb.gep(kb.elem_ty(dt), dst, off);
            let v = kb.load(Mem::Global, ty, at, t.vec * dt.bytes());
            let v = kb.select(ok, v, kb.zero(ty));
            out.extend(kb.scatter(v).into_iter().map(|e| kb.widen(e, dt)));
        }
    }
    out
}

/// Copies the filter taps of the block's channels to shared memory as f32, `[tap][channel]`
/// (channels past the last are zero); consecutive threads take consecutive channels.
fn fill_filter<'ctx>(
    kb: &Kb<'_, 'ctx>,
    pl: &DwPlan,
    tid: IntValue<'ctx>,
    ch_block: IntValue<'ctx>,
) {
    let (s, t) = (&pl.shape, &pl.tile);
    let dt = s.dtype;
    let threads = pl.threads();
    let [ty, tx] = s.taps;
    let elems = t.channels * ty * tx;
    let smem = kb.shared_base();
    let f32t = kb.f32t();
    block_strided(kb, threads, elems, tid, |kb, i| {
        let tap = kb.udivc(i, t.channels);
        let ch = kb.add(ch_block, kb.uremc(i, t.channels));
        let ok = kb.ultc(ch, s.channels);
        let ch = kb.seli(ok, ch, kb.c(0));
        let at = kb.gep(
            kb.elem_ty(dt),
            kb.tensor(Tensor::Filter),
            filter_offset(kb, s, ch, tap),
        );
        let v = kb.widen(kb.load(Mem::Global, kb.elem_ty(dt), at, dt.bytes()), dt);
        let v = kb.select(ok, v.into(), kb.cf(0.0).into());
        kb.store(Mem::Shared, kb.gep(f32t.into(), smem, i), v, 4);
    });
}

/// Element offset in the filter of channel `ch` (of `dst`) and tap `tap` (row-major).
fn filter_offset<'ctx>(
    kb: &Kb<'_, 'ctx>,
    s: &DwShape,
    ch: IntValue<'ctx>,
    tap: IntValue<'ctx>,
) -> IntValue<'ctx> {
    let (m, fs) = (s.multiplier, s.filter_strides);
    let (g, k) = (kb.udivc(ch, m), kb.uremc(ch, m));
    let (y, x) = (kb.udivc(tap, s.taps[1]), kb.uremc(tap, s.taps[1]));
    [(g, fs[0]), (k, fs[1]), (y, fs[2]), (x, fs[3])]
        .into_iter()
        .fold(kb.c(0), |acc, (v, st)| kb.add(acc, kb.mulc(v, st as i64)))
}

/// The f32 filter taps of filter element `tap` (row-major `y · X + x`) for the thread's
/// `va` channels (channel vector `cv` of the block), in 16-byte shared loads where aligned.
fn taps_of<'ctx>(
    kb: &Kb<'_, 'ctx>,
    pl: &DwPlan,
    tap: u32,
    cv: IntValue<'ctx>,
) -> Vec<FloatValue<'ctx>> {
    let t = &pl.tile;
    let chunk = t.vec.min(4);
    let f32t = kb.f32t();
    let ty = if chunk == 1 {
        f32t.into()
    } else {
        f32t.vec_type(chunk).into()
    };
    let first = kb.addc(kb.mulc(cv, i64::from(t.vec)), i64::from(tap * t.channels));
    (0..t.vec / chunk)
        .flat_map(|c| {
            let at = kb.gep(
                f32t.into(),
                kb.shared_base(),
                kb.addc(first, i64::from(c * chunk)),
            );
            let v = kb.load(Mem::Shared, ty, at, 4 * chunk);
            kb.scatter(v)
        })
        .map(|v| v.into_float_value())
        .collect()
}

/// Walks the `src` rows and columns the thread's tile spans and returns its accumulators,
/// `[row][col][channel]` flattened.
fn accumulate<'ctx>(
    kb: &Kb<'_, 'ctx>,
    pl: &DwPlan,
    n: IntValue<'ctx>,
    origin: [IntValue<'ctx>; 2],
    cv: IntValue<'ctx>,
    ch0: IntValue<'ctx>,
) -> Vec<FloatValue<'ctx>> {
    let (s, t) = (&pl.shape, &pl.tile);
    let va = t.vec;
    let mut acc = vec![kb.cf(0.0); (t.rows * t.cols * va) as usize];
    let mut filter: Vec<Option<Vec<FloatValue<'ctx>>>> =
        vec![None; (s.taps[0] * s.taps[1]) as usize];
    walk_src(kb, pl, n, origin, ch0, |kb, i, j, tap, x| {
        let f = filter[tap as usize]
            .get_or_insert_with(|| taps_of(kb, pl, tap, cv))
            .clone();
        let a = ((i * t.cols + j) * va) as usize;
        for e in 0..va as usize {
            acc[a + e] = kb.fma(x(e), f[e], acc[a + e]);
        }
    });
    acc
}

/// Walks the `src` rows and columns a thread's tile of `dst` pixels at `origin` spans, loading
/// each `src` vector once (zero in the padding), and calls `visit(kb, i, j, tap, x)` for every
/// tile pixel `(i, j)` and filter element `tap` (row-major, flipped for backward data) that
/// reads it; `x(e)` is the `src` value `dst` channel `ch0 + e` multiplies.
fn walk_src<'ctx>(
    kb: &Kb<'_, 'ctx>,
    pl: &DwPlan,
    n: IntValue<'ctx>,
    origin: [IntValue<'ctx>; 2],
    ch0: IntValue<'ctx>,
    mut visit: impl FnMut(&Kb<'_, 'ctx>, u32, u32, u32, &dyn Fn(usize) -> FloatValue<'ctx>),
) {
    let (s, t) = (&pl.shape, &pl.tile);
    let dt = s.dtype;
    let (va, rv) = (t.vec, s.src_vec(t.vec));
    let m = s.multiplier;
    // src coordinates of the tile's first pixel at tap 0 (negative in the padding).
    let first: [IntValue; 2] =
        std::array::from_fn(|d| kb.addc(kb.mulc(origin[d], i64::from(s.stride[d])), s.offset[d]));
    let src = kb.tensor(s.src);
    let base = kb.add(kb.mulc(n, s.src_strides[0] as i64), kb.udivc(ch0, m));
    let vty = kb.vec_ty(dt, rv);
    let span = s.span(t.rows, t.cols);
    // (output index, tap) pairs that read src offset `o` along dimension `d`.
    let users = |d: usize, o: u32, outs: u32| -> Vec<(u32, u32)> {
        (0..outs)
            .flat_map(|i| (0..s.taps[d]).map(move |f| (i, f)))
            .filter(|&(i, f)| i * s.stride[d] + f * s.dilation[d] == o)
            .collect()
    };
    for rr in 0..span[0] {
        let rows = users(0, rr, t.rows);
        if rows.is_empty() {
            continue;
        }
        let h = kb.addc(first[0], i64::from(rr));
        let row_ok = kb.ultc(h, s.src_hw[0]);
        let h = kb.seli(row_ok, h, kb.c(0));
        let row = kb.add(base, kb.mulc(h, s.src_strides[1] as i64));
        for cc in 0..span[1] {
            let cols = users(1, cc, t.cols);
            if cols.is_empty() {
                continue;
            }
            let w = kb.addc(first[1], i64::from(cc));
            let ok = kb.all(&[row_ok, kb.ultc(w, s.src_hw[1])]);
            let w = kb.seli(ok, w, kb.c(0));
            let at = kb.gep(
                kb.elem_ty(dt),
                src,
                kb.add(row, kb.mulc(w, s.src_strides[2] as i64)),
            );
            let v = kb.load(Mem::Global, vty, at, rv * dt.bytes());
            let v = kb.select(ok, v, kb.zero(vty));
            let x: Vec<FloatValue> = kb.scatter(v).into_iter().map(|e| kb.widen(e, dt)).collect();
            // dst channel ch0 + e reads src channel (ch0 + e) / m: element e / m of the
            // vector (0 when va divides m).
            let x_of = |e: usize| x[if va >= m { e / m as usize } else { 0 }];
            for &(i, fy) in &rows {
                for &(j, fx) in &cols {
                    let (fy, fx) = if s.flip {
                        (s.taps[0] - 1 - fy, s.taps[1] - 1 - fx)
                    } else {
                        (fy, fx)
                    };
                    visit(kb, i, j, fy * s.taps[1] + fx, &x_of);
                }
            }
        }
    }
}

/// Stores the thread's accumulators as `va`-wide vectors, skipping pixels past the image.
fn store<'ctx>(
    kb: &Kb<'_, 'ctx>,
    pl: &DwPlan,
    n: IntValue<'ctx>,
    origin: [IntValue<'ctx>; 2],
    ch0: IntValue<'ctx>,
    acc: &[FloatValue<'ctx>],
) {
    let (s, t) = (&pl.shape, &pl.tile);
    let dt: DType = s.dtype;
    let va = t.vec;
    let ty = kb.vec_ty(dt, va);
    let dst = kb.tensor(s.dst);
    let base = kb.add(kb.mulc(n, s.dst_strides[0] as i64), ch0);
    let ragged = [
        !s.dst_hw[0].is_multiple_of(t.rows),
        !s.dst_hw[1].is_multiple_of(t.cols),
    ];
    for i in 0..t.rows {
        for j in 0..t.cols {
            let h = kb.addc(origin[0], i64::from(i));
            let w = kb.addc(origin[1], i64::from(j));
            let mut inside = Vec::new();
            if ragged[0] && i > 0 {
                inside.push(kb.ultc(h, s.dst_hw[0]));
            }
            if ragged[1] && j > 0 {
                inside.push(kb.ultc(w, s.dst_hw[1]));
            }
            let a = ((i * t.cols + j) * va) as usize;
            let elems: Vec<BasicValueEnum> = acc[a..a + va as usize]
                .iter()
                .map(|&v| kb.narrow(v, dt))
                .collect();
            let off = kb.add(
                base,
                kb.add(
                    kb.mulc(h, s.dst_strides[1] as i64),
                    kb.mulc(w, s.dst_strides[2] as i64),
                ),
            );
            kb.if_then(kb.all(&inside), |kb| {
                let at = kb.gep(kb.elem_ty(dt), dst, off);
                kb.store(Mem::Global, at, kb.gather(ty, &elems), va * dt.bytes());
            });
        }
    }
}
