//! The kernels around the GEMMs (zero-init, split-K finish) and the direct-convolution
//! reference that the GPU verifier trusts. One thread per element, 256 threads per block:
//! these are memory-bound or oracles, so plainness beats speed.

use super::builder::{Kb, Mem};
use crate::abi::ArgRole;
use crate::lowering::depthwise::SlotSum;
use crate::problem::{ConvProblem, DType, Direction, Tensor};
use inkwell::values::IntValue;

/// Threads per block of the element-wise kernels.
pub(crate) const THREADS: u32 = 256;

/// Global index of this thread, `block · 256 + thread` (u32: never wraps for grids that fit).
fn global_id<'ctx>(kb: &Kb<'_, 'ctx>) -> IntValue<'ctx> {
    kb.add(kb.mulc(kb.block_idx(0), THREADS as i64), kb.thread_idx())
}

/// Widest vector (elements) of `dt` that divides `elems` and fits 16 bytes.
pub(crate) fn fill_width(elems: u64, bytes: u32) -> u32 {
    let mut v = 16 / bytes;
    while !elems.is_multiple_of(v as u64) {
        v /= 2;
    }
    v
}

/// Blocks needed to cover `elems` elements with `per_thread` each.
pub(crate) fn blocks(elems: u64, per_thread: u32) -> u64 {
    elems.div_ceil(THREADS as u64 * per_thread as u64)
}

/// Writes zeros to `elems` elements of type `dt` at kernel argument `role`.
pub(crate) fn emit_zero<'ctx>(kb: &Kb<'_, 'ctx>, role: ArgRole, dt: DType, elems: u64) {
    kb.set_block_size(THREADS);
    let v = fill_width(elems, dt.bytes());
    let first = kb.mulc(global_id(kb), v as i64);
    kb.if_then(kb.ultc(first, elems as u32), |kb| {
        let ty = kb.vec_ty(dt, v);
        let base = role.tensor().map_or_else(|| kb.arg(role), |t| kb.tensor(t));
        let at = kb.gep(kb.elem_ty(dt), base, first);
        kb.store(Mem::Global, at, kb.zero(ty), v * dt.bytes());
    });
}

/// Writes the written tensor from the f32 workspace: element `i` the sum of `slots` runs of
/// `elems` sums (`ws[s · elems + i]`), converted to its type. One slot (split-K with f16/bf16)
/// is a conversion, a thread an element; more (depthwise backward weight's partials, one a
/// block) go to [`emit_slot_sum`].
pub(crate) fn emit_finish<'ctx>(
    kb: &Kb<'_, 'ctx>,
    written: Tensor,
    dt: DType,
    elems: u64,
    slots: u32,
) {
    if slots > 1 {
        return emit_slot_sum(kb, written, dt, elems, slots);
    }
    kb.set_block_size(THREADS);
    let i = global_id(kb);
    kb.if_then(kb.ultc(i, elems as u32), |kb| {
        let src = kb.gep(kb.f32t().into(), kb.arg(ArgRole::Workspace), i);
        let v = kb
            .load(Mem::Global, kb.f32t().into(), src, 4)
            .into_float_value();
        let dst = kb.gep(kb.elem_ty(dt), kb.tensor(written), i);
        kb.store(Mem::Global, dst, kb.narrow(v, dt), dt.bytes());
    });
}

/// The sum of many slots, in an order fixed by the code alone (the same bits every run): an
/// element's [`SlotSum::lanes`] threads each add every `lanes`-th slot along
/// [`SlotSum::CHAINS`] chains (consecutive threads reading consecutive elements of one slot),
/// combine their chains in order, and the first lane adds the lanes' sums from shared memory
/// in lane order.
fn emit_slot_sum<'ctx>(kb: &Kb<'_, 'ctx>, written: Tensor, dt: DType, elems: u64, slots: u32) {
    kb.set_block_size(THREADS);
    let plan = SlotSum::of(slots);
    let (lanes, per_block) = (plan.lanes, plan.per_block(THREADS));
    let tid = kb.thread_idx();
    let (e, lane) = (kb.uremc(tid, per_block), kb.udivc(tid, per_block));
    let i = kb.add(kb.mulc(kb.block_idx(0), i64::from(per_block)), e);
    let live = kb.ultc(i, elems as u32);
    let f32t = kb.f32t();
    let ws = kb.arg(ArgRole::Workspace);
    let chains: Vec<_> = (0..SlotSum::CHAINS)
        .map(|_| kb.var(kb.cf(0.0).into()))
        .collect();
    let stride = lanes * SlotSum::CHAINS;
    kb.if_then(live, |kb| {
        kb.for_range(kb.c(0), kb.c(i64::from(plan.rounds())), |kb, j| {
            for (k, &chain) in chains.iter().enumerate() {
                let s = kb.add(kb.mulc(j, i64::from(stride)), lane);
                let s = kb.addc(s, (k as u32 * lanes).into());
                kb.if_then(kb.ultc(s, slots), |kb| {
                    let at = kb.add(kb.mulc(s, elems as i64), i);
                    let v = kb.load(Mem::Global, f32t.into(), kb.gep(f32t.into(), ws, at), 4);
                    let acc = kb.get(chain, f32t.into()).into_float_value();
                    kb.set(chain, kb.fadd(acc, v.into_float_value()).into());
                });
            }
        });
    });
    let mut v = kb.get(chains[0], f32t.into()).into_float_value();
    for &chain in &chains[1..] {
        v = kb.fadd(v, kb.get(chain, f32t.into()).into_float_value());
    }
    let smem = kb.shared_base();
    kb.store(Mem::Shared, kb.gep(f32t.into(), smem, tid), v.into(), 4);
    kb.barrier();
    kb.if_then(kb.all(&[live, kb.eq(lane, kb.c(0))]), |kb| {
        let mut total = kb.cf(0.0);
        for l in 0..lanes {
            let at = kb.addc(e, i64::from(l * per_block));
            let x = kb.load(Mem::Shared, f32t.into(), kb.gep(f32t.into(), smem, at), 4);
            total = kb.fadd(total, x.into_float_value());
        }
        let dst = kb.gep(kb.elem_ty(dt), kb.tensor(written), i);
        kb.store(Mem::Global, dst, kb.narrow(total, dt), dt.bytes());
    });
}

/// Element offset of logical coordinates `idx` of tensor `t`.
fn offset<'ctx>(
    kb: &Kb<'_, 'ctx>,
    p: &ConvProblem,
    t: Tensor,
    idx: [IntValue<'ctx>; 5],
) -> IntValue<'ctx> {
    let strides = p.strides(t);
    idx.iter()
        .zip(strides)
        .fold(kb.c(0), |acc, (&i, s)| kb.add(acc, kb.mulc(i, s as i64)))
}

/// Reads element `off` of tensor `t` as f32.
fn read<'ctx>(
    kb: &Kb<'_, 'ctx>,
    p: &ConvProblem,
    t: Tensor,
    off: IntValue<'ctx>,
) -> inkwell::values::FloatValue<'ctx> {
    let dt = p.dtype();
    let at = kb.gep(kb.elem_ty(dt), kb.tensor(t), off);
    kb.widen(kb.load(Mem::Global, kb.elem_ty(dt), at, dt.bytes()), dt)
}

/// The direct convolution, one thread per element of the written tensor, f32 accumulation,
/// every tap bounds-checked: the textbook loop nest of [`crate::reference::direct_conv`].
pub(crate) fn emit_reference<'ctx>(kb: &Kb<'_, 'ctx>, p: &ConvProblem) {
    kb.set_block_size(THREADS);
    let dir = p.direction();
    let written = dir.written();
    let dims = p.logical_dims(written);
    let elems = p.tensor_elems(written);
    let s = *p.sizes();
    let [ho_len, wo_len] = p.out_size();
    let e = global_id(kb);
    kb.if_then(kb.ultc(e, elems as u32), |kb| {
        // Canonical row-major decomposition of the element number (any bijection would do).
        let mut idx = [kb.c(0); 5];
        let mut rest = e;
        for d in (0..5).rev() {
            idx[d] = if d == 0 {
                rest
            } else {
                kb.uremc(rest, dims[d])
            };
            rest = kb.udivc(rest, dims[d]);
        }
        let acc = kb.var(kb.cf(0.0).into());
        let f32t = kb.f32t().into();
        let add = |kb: &Kb<'_, 'ctx>, x: IntValue<'ctx>, y: IntValue<'ctx>, ok: IntValue<'ctx>| {
            // x, y: offsets into the two tensors read; ok: tap inside both.
            kb.if_then(ok, |kb| {
                let (tx, ty) = match dir {
                    Direction::Fwd => (Tensor::Input, Tensor::Filter),
                    Direction::BwdData => (Tensor::Output, Tensor::Filter),
                    Direction::BwdWeight => (Tensor::Input, Tensor::Output),
                };
                let prod_acc = kb.fma(
                    read(kb, p, tx, x),
                    read(kb, p, ty, y),
                    kb.get(acc, f32t).into_float_value(),
                );
                kb.set(acc, prod_acc.into());
            });
        };
        let range = |n: u32| (kb.c(0), kb.c(n as i64));
        match dir {
            Direction::Fwd => {
                let [n, g, k, ho, wo] = idx;
                let (lo, hi) = range(p.c_per_group());
                kb.for_range(lo, hi, |kb, c| {
                    kb.for_range(kb.c(0), kb.c(s.y as i64), |kb, y| {
                        kb.for_range(kb.c(0), kb.c(s.x as i64), |kb, x| {
                            let hi_ = input_coord(kb, ho, y, s.stride[0], s.dilation[0], s.pad[0]);
                            let wi_ = input_coord(kb, wo, x, s.stride[1], s.dilation[1], s.pad[1]);
                            let ok = kb.all(&[kb.ultc(hi_, s.h), kb.ultc(wi_, s.w)]);
                            let (hi_, wi_) = (kb.seli(ok, hi_, kb.c(0)), kb.seli(ok, wi_, kb.c(0)));
                            let xo = offset(kb, p, Tensor::Input, [n, g, c, hi_, wi_]);
                            let fo = offset(kb, p, Tensor::Filter, [g, k, c, y, x]);
                            add(kb, xo, fo, ok);
                        });
                    });
                });
            }
            Direction::BwdData => {
                let [n, g, c, hi_, wi_] = idx;
                let (lo, hi) = range(p.k_per_group());
                kb.for_range(lo, hi, |kb, k| {
                    kb.for_range(kb.c(0), kb.c(s.y as i64), |kb, y| {
                        kb.for_range(kb.c(0), kb.c(s.x as i64), |kb, x| {
                            // hi + pad − y·dil = ho·stride: the tap exists when divisible and in range.
                            let (ho, ok_h) = output_coord(
                                kb,
                                hi_,
                                y,
                                s.stride[0],
                                s.dilation[0],
                                s.pad[0],
                                ho_len,
                            );
                            let (wo, ok_w) = output_coord(
                                kb,
                                wi_,
                                x,
                                s.stride[1],
                                s.dilation[1],
                                s.pad[1],
                                wo_len,
                            );
                            let ok = kb.all(&[ok_h, ok_w]);
                            let (ho, wo) = (kb.seli(ok, ho, kb.c(0)), kb.seli(ok, wo, kb.c(0)));
                            let yo = offset(kb, p, Tensor::Output, [n, g, k, ho, wo]);
                            let fo = offset(kb, p, Tensor::Filter, [g, k, c, y, x]);
                            add(kb, yo, fo, ok);
                        });
                    });
                });
            }
            Direction::BwdWeight => {
                let [g, k, c, y, x] = idx;
                let (lo, hi) = range(s.n);
                kb.for_range(lo, hi, |kb, n| {
                    kb.for_range(kb.c(0), kb.c(ho_len as i64), |kb, ho| {
                        kb.for_range(kb.c(0), kb.c(wo_len as i64), |kb, wo| {
                            let hi_ = input_coord(kb, ho, y, s.stride[0], s.dilation[0], s.pad[0]);
                            let wi_ = input_coord(kb, wo, x, s.stride[1], s.dilation[1], s.pad[1]);
                            let ok = kb.all(&[kb.ultc(hi_, s.h), kb.ultc(wi_, s.w)]);
                            let (hi_, wi_) = (kb.seli(ok, hi_, kb.c(0)), kb.seli(ok, wi_, kb.c(0)));
                            let xo = offset(kb, p, Tensor::Input, [n, g, c, hi_, wi_]);
                            let yo = offset(kb, p, Tensor::Output, [n, g, k, ho, wo]);
                            add(kb, xo, yo, ok);
                        });
                    });
                });
            }
        }
        let out = kb.gep(
            kb.elem_ty(p.dtype()),
            kb.tensor(written),
            offset(kb, p, written, idx),
        );
        let v = kb.get(acc, f32t).into_float_value();
        kb.store(Mem::Global, out, kb.narrow(v, p.dtype()), p.dtype().bytes());
    });
}

/// `o·stride + f·dilation − pad` (negative wraps to a huge u32: one unsigned compare checks it).
fn input_coord<'ctx>(
    kb: &Kb<'_, 'ctx>,
    o: IntValue<'ctx>,
    f: IntValue<'ctx>,
    stride: u32,
    dil: u32,
    pad: u32,
) -> IntValue<'ctx> {
    kb.addc(
        kb.add(kb.mulc(o, stride as i64), kb.mulc(f, dil as i64)),
        -(pad as i64),
    )
}

/// The output coordinate `(i + pad − f·dilation) / stride` of input coordinate `i` and its
/// validity (non-negative, divisible, below `len`).
fn output_coord<'ctx>(
    kb: &Kb<'_, 'ctx>,
    i: IntValue<'ctx>,
    f: IntValue<'ctx>,
    stride: u32,
    dil: u32,
    pad: u32,
    len: u32,
) -> (IntValue<'ctx>, IntValue<'ctx>) {
    let t = kb.sub(kb.addc(i, pad as i64), kb.mulc(f, dil as i64));
    // t ∈ [0, stride·len) as unsigned also rejects negative t.
    let in_range = kb.ultc(t, stride.saturating_mul(len));
    let divisible = kb.eq(kb.uremc(t, stride), kb.c(0));
    (kb.udivc(t, stride), kb.all(&[in_range, divisible]))
}
