//! Operand addressing in the kernels: a GEMM index along one dimension → its axes (constant
//! div/mod) → the affine tensor coordinates → bounds checks → element offset, all constants
//! baked in from the lowering. It is [`Operand::offset`] emitted as IR, split per GEMM
//! dimension so that the part that does not change inside the K loop is computed once.
//!
//! Offsets are i32 and wrap: every in-bounds offset is below 2^31, so modular arithmetic gives
//! it exactly whatever the intermediate values; an out-of-bounds offset is replaced by 0 (a
//! valid address) before anyone dereferences it.

use super::builder::Kb;
use super::phase_consts::Phases;
use super::plan::GemmPlan;
use crate::lowering::{Dim, Gemm, GemmDim, Operand};
use crate::problem::ConvProblem;
use inkwell::values::IntValue;

/// How one operand (A, B or C) of one GEMM is addressed; of the phases of a one-launch
/// kernel's shared body, the same operand of every phase's GEMM, whose axes and terms agree
/// and whose lengths and offsets are picked at run time ([`Phases`]).
pub(crate) struct Addressing<'l, 'ctx> {
    /// The operand, one per phase.
    ops: Vec<&'l Operand>,
    /// Its GEMM's dimensions, one per phase.
    dims: Vec<&'l [GemmDim; 4]>,
    phases: Phases<'ctx>,
    extent: [u32; 5],
    stride: [i64; 5],
    /// Logical dimensions whose coordinate can leave the tensor (padding) in some phase:
    /// checked.
    check: [bool; 5],
}

/// What one GEMM dimension's index contributes to an operand's address.
pub(crate) struct Part<'ctx> {
    /// Σ stride · coordinate contribution.
    lin: IntValue<'ctx>,
    /// Raw coordinate contribution of each checked logical dimension.
    raw: [Option<IntValue<'ctx>>; 5],
    /// `index < length`, when the index can run past the GEMM edge.
    in_range: Option<IntValue<'ctx>>,
}

impl<'l, 'ctx> Addressing<'l, 'ctx> {
    /// The addressing of `op`, an operand of `gemm` in problem `p` (a kernel of one phase).
    pub fn new(p: &ConvProblem, gemm: &'l Gemm, op: &'l Operand) -> Self {
        Self::phased(p, vec![(gemm, op)], Phases::one())
    }

    /// The addressing of `op`, an operand of `plan.gemm`, in the block being emitted: of that
    /// operand in every phase when the plan is a shared phase body.
    pub fn of(kb: &Kb<'_, 'ctx>, plan: &GemmPlan<'l>, op: &Operand) -> Self {
        let which = [&plan.gemm.a, &plan.gemm.b, &plan.gemm.c]
            .iter()
            .position(|o| std::ptr::eq(*o, op))
            .unwrap_or_else(|| panic!("an operand of another GEMM"));
        let of = |g: &'l Gemm| (g, [&g.a, &g.b, &g.c][which]);
        match &plan.shared {
            None => Self::new(plan.problem, plan.gemm, of(plan.gemm).1),
            Some(shared) => Self::phased(
                plan.problem,
                shared.gemms.iter().map(|&g| of(g)).collect(),
                shared.phases(kb),
            ),
        }
    }

    /// The addressing of one operand over phases: `(gemm, operand)` per phase, alike but for
    /// axis lengths and offsets.
    pub fn phased(
        p: &ConvProblem,
        ops: Vec<(&'l Gemm, &'l Operand)>,
        phases: Phases<'ctx>,
    ) -> Self {
        assert_eq!(ops.len(), phases.count(), "one operand per phase");
        let tensor = ops[0].1.tensor;
        let extent = p.logical_dims(tensor);
        let stride = p.strides(tensor).map(|s| s as i64);
        let check = std::array::from_fn(|t| {
            ops.iter()
                .any(|(g, op)| op.coords[t].may_leave(extent[t], &g.dims))
        });
        Addressing {
            dims: ops.iter().map(|(g, _)| &g.dims).collect(),
            ops: ops.into_iter().map(|(_, op)| op).collect(),
            phases,
            extent,
            stride,
            check,
        }
    }

    /// The operand of the first phase: terms and coefficients, the same in every phase.
    fn op(&self) -> &'l Operand {
        self.ops[0]
    }

    /// One value per phase.
    fn per_phase<T>(&self, f: impl Fn(usize) -> T) -> Vec<T> {
        (0..self.ops.len()).map(f).collect()
    }

    /// The contribution of index `idx` along GEMM dimension `d`. `edge` says that `idx` may be
    /// ≥ the dimension's length (a partial tile): then the part carries that check too, and the
    /// axes decomposed from such an index are never used unchecked.
    pub fn part(&self, kb: &Kb<'_, 'ctx>, d: Dim, idx: IntValue<'ctx>, edge: bool) -> Part<'ctx> {
        let n = self.dims[0][d as usize].axes.len();
        let len = |ph: usize, pos: usize| self.dims[ph][d as usize].axes[pos].len;
        let uses = |t: usize, pos: usize| {
            self.op().coords[t]
                .terms
                .iter()
                .any(|(r, _)| r.dim == d && r.pos == pos)
        };
        // inner[phase][pos]: product of the lengths of the axes inside `pos`.
        let inner: Vec<Vec<u32>> = self.per_phase(|ph| {
            let mut inner = vec![1u32; n];
            for pos in (0..n.saturating_sub(1)).rev() {
                inner[pos] = inner[pos + 1].saturating_mul(len(ph, pos + 1));
            }
            inner
        });
        let ph = &self.phases;
        // Axes p..=q read as one number: idx / inner[q] % Π len[p..=q] (the outermost needs no
        // modulo: idx < len, or the part is invalid).
        let digits = |p: usize, q: usize| {
            let r = ph.udiv(kb, idx, &self.per_phase(|i| inner[i][q]));
            if p == 0 {
                r
            } else {
                let span = self.per_phase(|i| (p..=q).map(|pos| len(i, pos)).product());
                ph.urem(kb, r, &span)
            }
        };
        // Only the axes a bounds check reads are emitted one by one.
        let value: Vec<Option<IntValue<'ctx>>> = (0..n)
            .map(|pos| ((0..5).any(|t| self.check[t] && uses(t, pos))).then(|| digits(pos, pos)))
            .collect();
        // Linear offset: Σ_axis w_axis · axis, w = Σ_t coef · stride_t. A run of axes whose
        // weights nest (w_outer = w_inner · len_inner, as n, ho, wo do in an unpadded NHWC
        // pixel index) in every phase contributes w_inner · ((idx / inner) % Π len): one
        // division for the run instead of one per axis.
        let w: Vec<i64> = (0..n)
            .map(|pos| {
                (0..5)
                    .map(|t| {
                        self.op().coords[t]
                            .terms
                            .iter()
                            .filter(|(r, _)| r.dim == d && r.pos == pos)
                            .map(|(_, c)| c * self.stride[t])
                            .sum::<i64>()
                    })
                    .sum()
            })
            .collect();
        let mut lin = kb.c(0);
        let mut q = n;
        while q > 0 {
            q -= 1;
            if w[q] == 0 {
                continue;
            }
            // Extend the run outwards from q while the weights nest.
            let mut p = q;
            let mut span = self.per_phase(|i| len(i, q) as i64);
            while p > 0 && span.iter().all(|&s| w[p - 1] == w[q].saturating_mul(s)) {
                p -= 1;
                for (i, s) in span.iter_mut().enumerate() {
                    *s = s.saturating_mul(len(i, p) as i64);
                }
            }
            let v = match value[q] {
                Some(v) if p == q => v,
                _ => digits(p, q),
            };
            lin = kb.add(lin, kb.mulc(v, w[q]));
            q = p;
        }
        let raw = std::array::from_fn(|t| {
            if !self.check[t] {
                return None;
            }
            let mut acc: Option<IntValue<'ctx>> = None;
            for (r, c) in &self.op().coords[t].terms {
                if r.dim != d {
                    continue;
                }
                let v =
                    value[r.pos].unwrap_or_else(|| panic!("axis {} of {d} not decomposed", r.pos));
                let term = kb.mulc(v, *c);
                acc = Some(match acc {
                    None => term,
                    Some(a) => kb.add(a, term),
                });
            }
            acc
        });
        let in_range =
            edge.then(|| ph.ult(kb, idx, &self.per_phase(|i| self.dims[i][d as usize].len())));
        Part { lin, raw, in_range }
    }

    /// Combines the parts of every GEMM dimension the operand uses into `(valid, offset)`:
    /// `valid` is i1 (in the tensor and inside the GEMM), `offset` the element offset, 0 when
    /// not valid.
    pub fn resolve(
        &self,
        kb: &Kb<'_, 'ctx>,
        parts: &[&Part<'ctx>],
    ) -> (IntValue<'ctx>, IntValue<'ctx>) {
        let base = self.per_phase(|i| {
            let b: i64 = (0..5)
                .map(|t| self.ops[i].coords[t].offset * self.stride[t])
                .sum();
            // i32 wrapping is exact for in-bounds results (module doc); keep the low 32 bits.
            b as i32 as i64
        });
        let mut off = self.phases.pick(kb, &base);
        for p in parts {
            off = kb.add(off, p.lin);
        }
        let mut conds: Vec<IntValue<'ctx>> = parts.iter().filter_map(|p| p.in_range).collect();
        for t in 0..5 {
            if !self.check[t] {
                continue;
            }
            let offset = self
                .phases
                .pick(kb, &self.per_phase(|i| self.ops[i].coords[t].offset));
            let raws: Vec<IntValue<'ctx>> = parts.iter().filter_map(|p| p.raw[t]).collect();
            let extent = kb.c(self.extent[t] as i64);
            match raws.split_last() {
                Some((&last, rest)) if !rest.is_empty() && kb.split_bound_checks() => {
                    // offset + Σ rest + last ∈ [0, extent) as `-s ≤ last < extent - s` with
                    // s = offset + Σ rest (see `TargetSpec::split_bound_checks`). Coordinates
                    // are far from 2^31, so the signed bounds are exact.
                    let s = rest.iter().fold(offset, |a, &r| kb.add(a, r));
                    conds.push(kb.sle(kb.sub(kb.c(0), s), last));
                    conds.push(kb.slt(last, kb.sub(extent, s)));
                }
                _ => {
                    let c = raws.iter().fold(offset, |a, &r| kb.add(a, r));
                    conds.push(kb.ult(c, extent));
                }
            }
        }
        let valid = kb.all(&conds);
        if conds.is_empty() {
            return (valid, off);
        }
        (valid, kb.seli(valid, off, kb.c(0)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::{ArgRole, CONV_ARGS};
    use crate::codegen::builder::Kb;
    use crate::codegen::phase_consts::Phases;
    use crate::codegen::{emu::spec::HostEmu, machine, Target};
    use crate::lowering::lower;
    use inkwell::{context::Context, OptimizationLevel};

    /// JIT `(phase, g, i0, i1) → (valid, offset)` of operand `which` (A, B, C) addressed over
    /// `gemms` (one per phase; one GEMM: a kernel of one phase) for the host, and compare it
    /// with each phase's [`Operand::offset`] at every coordinate of that phase, including
    /// indices one past its GEMM edge (which must be invalid).
    fn addressing_agrees(p: &ConvProblem, gemms: &[&Gemm], which: usize) {
        let spec = HostEmu::new(Target::of(crate::arch::Arch::SM_90));
        let tm = machine::machine(&spec).unwrap();
        let [d0, d1] = gemms[0].operands()[which].1;
        let ctx = Context::create();
        let m = machine::new_module(&ctx, &spec, &tm, "index").unwrap();
        // Argument 0: the count, then i32 (phase, g, i0, i1) quads; argument 2: (valid,
        // offset) pairs.
        let kb = Kb::kernel(&ctx, &m, &spec, "addr", CONV_ARGS, &[ArgRole::Output]);
        let i32t = kb.i32t().into();
        fn arg<'c>(kb: &Kb<'_, 'c>, i: IntValue<'c>, j: i64) -> IntValue<'c> {
            let i32t = kb.i32t().into();
            let at = kb.gep(i32t, kb.arg(ArgRole::Input), kb.addc(kb.mulc(i, 4), j));
            kb.get(at, i32t).into_int_value()
        }
        let count = arg(&kb, kb.c(0), 0);
        kb.for_range(kb.c(1), count, |kb, i| {
            let phases = Phases::new(arg(kb, i, 0), gemms.len());
            let ops = gemms.iter().map(|&g| (g, g.operands()[which].0)).collect();
            let a = Addressing::phased(p, ops, phases);
            let pg = a.part(kb, Dim::G, arg(kb, i, 1), false);
            let p0 = a.part(kb, d0, arg(kb, i, 2), true);
            let p1 = a.part(kb, d1, arg(kb, i, 3), true);
            let (valid, off) = a.resolve(kb, &[&pg, &p0, &p1]);
            let valid = kb.zext(valid, kb.i32t());
            for (j, v) in [(0, valid), (1, off)] {
                kb.set(
                    kb.gep(i32t, kb.arg(ArgRole::Output), kb.addc(kb.mulc(i, 2), j)),
                    v.into(),
                );
            }
        });
        kb.finish();
        machine::optimize(&m, &tm).unwrap();
        let ee = m
            .create_jit_execution_engine(OptimizationLevel::None)
            .unwrap();
        type F = unsafe extern "C" fn(*mut u8, *mut u8, *mut u8, *mut u8, *const u8);
        // SAFETY: `addr` was emitted above with this signature.
        let f =
            unsafe { std::mem::transmute::<usize, F>(ee.get_function_address("addr").unwrap()) };
        let mut input = vec![0i32; 4];
        for (ph, gemm) in gemms.iter().enumerate() {
            for g in 0..gemm.g_len() {
                for i0 in 0..=gemm.len(d0) {
                    for i1 in 0..=gemm.len(d1) {
                        input.extend([ph as i32, g as i32, i0 as i32, i1 as i32]);
                    }
                }
            }
        }
        input[0] = (input.len() / 4) as i32;
        let mut output = vec![0i32; input.len() / 2];
        let null = std::ptr::null_mut();
        // SAFETY: buffers sized for every entry, as the function reads and writes.
        unsafe {
            f(
                input.as_mut_ptr() as *mut u8,
                null,
                output.as_mut_ptr() as *mut u8,
                null,
                null,
            )
        };
        let mut coords: [Vec<u32>; 4] = Default::default();
        for (n, t) in input.chunks(4).enumerate().skip(1) {
            let gemm = gemms[t[0] as usize];
            let op = gemm.operands()[which].0;
            let idx = [(Dim::G, t[1] as u32), (d0, t[2] as u32), (d1, t[3] as u32)];
            let inside = idx.iter().all(|&(d, v)| v < gemm.len(d));
            let want = inside
                .then(|| {
                    for &(d, v) in &idx {
                        gemm.dims[d as usize].decompose(v, &mut coords[d as usize]);
                    }
                    op.offset(p, &coords)
                })
                .flatten();
            let got = (output[2 * n] != 0).then_some(output[2 * n + 1] as u64);
            assert_eq!(
                got, want,
                "{p}: GEMM {} {:?} at {idx:?}",
                gemm.id, op.tensor
            );
            if got.is_none() {
                assert_eq!(output[2 * n + 1], 0, "invalid offsets are replaced by 0");
            }
        }
    }

    /// Every operand of every sub-GEMM of `p`, each GEMM alone.
    fn agrees_with_offset(p: &ConvProblem) {
        for gemm in &lower(p).gemms {
            for which in 0..3 {
                addressing_agrees(p, &[gemm], which);
            }
        }
    }

    /// Every operand of a strided bwd-data lowering, addressed over all its sub-GEMMs with the
    /// phase read at run time.
    fn shared_agrees_with_every_phase(p: &ConvProblem) {
        let l = lower(p);
        assert!(l.gemms.len() > 1, "{p}: one phase");
        let gemms: Vec<&Gemm> = l.gemms.iter().collect();
        for which in 0..3 {
            addressing_agrees(p, &gemms, which);
        }
    }

    #[test]
    fn shared_addressing_matches_every_phase() {
        for line in [
            "conv -n 2 -c 6 -H 9 -W 8 -k 4 -y 3 -x 3 -p 1 -q 1 -u 2 -v 2 -F 2",
            "conv -n 1 -c 4 -H 11 -W 10 -k 3 -y 5 -x 5 -p 2 -q 2 -u 3 -v 3 -F 2",
            "convbfp16 -n 1 -c 8 -H 10 -W 7 -k 8 -y 3 -x 2 -p 1 -q 0 -u 2 -v 3 -l 1 -j 2 -F 2 --layout NHWC",
            "conv -n 1 -c 6 -H 7 -W 7 -k 4 -y 3 -x 3 -p 1 -q 1 -u 2 -v 2 -g 2 -F 2 --layout NHWC",
        ] {
            shared_agrees_with_every_phase(&line.parse().unwrap());
        }
    }

    #[test]
    fn jitted_addressing_matches_operand_offset() {
        for line in [
            "conv -n 2 -c 6 -H 7 -W 5 -k 4 -y 3 -x 2 -p 1 -q 2 -u 2 -v 1 -l 1 -j 2 -g 2 -F 1",
            "conv -n 2 -c 6 -H 7 -W 5 -k 4 -y 3 -x 2 -p 1 -q 2 -u 2 -v 1 -l 1 -j 2 -g 2 -F 2",
            "conv -n 2 -c 6 -H 7 -W 5 -k 4 -y 3 -x 2 -p 1 -q 2 -u 2 -v 1 -l 1 -j 2 -g 2 -F 4",
            "convbfp16 -n 1 -c 4 -H 6 -W 6 -k 4 -y 3 -x 3 -p 2 -q 2 -u 3 -v 2 -l 2 -j 1 -F 2 --layout NHWC",
            "convfp16 -n 2 -c 4 -H 5 -W 9 -k 6 -y 1 -x 3 -q 1 -v 2 -F 4 --layout NHWC",
            "conv -n 1 -c 2 -H 7 -W 5 -k 2 -y 2 -x 1 -u 3 -v 1 -F 2",
            // Unpadded 1x1: n, ho, wo nest into one pixel index (merged runs of axes).
            "convbfp16 -n 3 -c 8 -H 5 -W 7 -k 4 -y 1 -x 1 -F 1 --layout NHWC",
            "convbfp16 -n 3 -c 8 -H 5 -W 7 -k 4 -y 1 -x 1 -F 2 --layout NHWC",
            "convbfp16 -n 3 -c 8 -H 5 -W 7 -k 4 -y 1 -x 1 -F 4 --layout NHWC",
            "conv -n 2 -c 6 -H 3 -W 4 -k 5 -y 1 -x 1 -F 4",
        ] {
            agrees_with_offset(&line.parse().unwrap());
        }
    }
}
