//! The vector rules (`va`, `vb`, `vc`): how wide each operand of each sub-GEMM may be loaded or
//! stored. The widths come from the width analysis through the lowering's index maps
//! ([`vector_dim`]), computed once per (lowering, arch) into [`OperandVector`]s; a config's
//! width must also fit the arch's widest access and divide the block tile it walks.

use super::Checker;
use crate::config::{Field, LoadPath, PerfConfig};
use crate::legality::rejection::Rejection;
use crate::legality::width::{dim_letters, vector_dim, VectorWidth};
use crate::lowering::{Dim, Gemm, Operand};
use crate::problem::ConvProblem;

/// Widest vector the width analysis considers, elements; the byte limit of the arch caps it
/// further (16 elements is 16 bytes of the narrowest type we could ever add).
const ANALYSIS_CAP: u32 = 16;

/// How one operand of one sub-GEMM may be vectorized.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OperandVector {
    /// The GEMM dimension it is vectorized along ([`crate::legality::vector_dim`]); `None`
    /// when none walks its contiguous memory.
    pub dim: Option<Dim>,
    /// Tensor name.
    pub tensor: &'static str,
    /// The tensor's innermost dimension.
    pub tensor_dim: char,
    /// Largest legal width along `dim` (1 when `dim` is `None`).
    pub max: VectorWidth,
}

impl OperandVector {
    /// The vector facts of operand `op` of `g`, whose GEMM dimensions are `dims`.
    pub(super) fn of(p: &ConvProblem, g: &Gemm, op: &Operand, dims: [Dim; 2]) -> OperandVector {
        let (dim, max) = vector_dim(p, g, op, dims, ANALYSIS_CAP);
        OperandVector {
            dim,
            tensor: op.tensor.name(),
            tensor_dim: dim_letters(op.tensor)[p.layout(op.tensor).innermost()],
            max,
        }
    }
}

impl Checker {
    /// Vector width of operand `i` (0 = A, 1 = B, 2 = C).
    pub(super) fn vector(&self, cfg: &PerfConfig, i: usize) -> Result<(), Rejection> {
        let operand = ['A', 'B', 'C'][i];
        let width = [cfg.vec_a, cfg.vec_b, cfg.vec_c][i];
        if width <= 1 {
            return Ok(());
        }
        let bytes = width as u64 * self.elem_bytes as u64;
        if bytes > self.arch.max_vector_bytes as u64 {
            return Err(Rejection::VectorBytes {
                operand,
                width,
                bytes: Self::sat(bytes),
                max: self.arch.max_vector_bytes,
            });
        }
        for (gemm, ops) in self.vectors.iter().enumerate() {
            let v = &ops[i];
            let Some(dim) = v.dim else {
                return Err(Rejection::VectorNotContiguous {
                    operand,
                    width,
                    tensor: v.tensor,
                    tensor_dim: v.tensor_dim,
                    why: v.max.limit.clone(),
                    gemm: gemm as u32,
                });
            };
            let (block_param, block) = Self::block_along(cfg, dim);
            if block % width != 0 {
                return Err(Rejection::VectorTile {
                    operand,
                    width,
                    dim,
                    block_param,
                    block,
                });
            }
            if v.max.width % width != 0 {
                return Err(Rejection::VectorWidth {
                    operand,
                    width,
                    max: v.max.width,
                    why: v.max.limit.clone(),
                    gemm: gemm as u32,
                });
            }
        }
        Ok(())
    }

    /// A width the kernel does not read is enumerated only at the space's smallest value
    /// (under pruning), so that one kernel is not timed under several names: operand `i`'s
    /// (0 = A, 1 = B) where TMA loads it in every sub-GEMM (its width only shapes `cp.async`
    /// copies: `codegen::loader` gives such an operand no per-thread copies), and `vc`
    /// (`i` = 2) where the epilogue does not stage C ([`PerfConfig::reads_vec_c`]; judged at
    /// the epilogue's rule, `ep` being the innermost loop). About a fifth of the configs the
    /// 2026-12-03 re-tune timed were such twins.
    pub(super) fn unread_width(&self, cfg: &PerfConfig, i: usize) -> Result<(), Rejection> {
        let field = [Field::VecA, Field::VecB, Field::VecC][i];
        match self.off_smallest(cfg, field) {
            Some(smallest) if !self.reads_width(cfg, i) => Err(Rejection::WidthUnread {
                param: field.key(),
                smallest,
                why: match i {
                    2 => "the epilogue does not stage C",
                    _ => "TMA loads this operand",
                },
            }),
            _ => Ok(()),
        }
    }

    /// Whether `cfg`'s kernel reads vector width `i` (0 = A, 1 = B, 2 = C): not that of an
    /// operand TMA loads in every sub-GEMM, nor `vc` where the epilogue does not stage C.
    pub fn reads_width(&self, cfg: &PerfConfig, i: usize) -> bool {
        if i == 2 {
            return cfg.reads_vec_c(self.problem.direction());
        }
        let judge = self.judge(cfg).unwrap_or(self);
        !(cfg.ld != LoadPath::Cp
            && judge
                .tma(cfg, [true, true])
                .is_ok_and(|t| !t.is_empty() && t.iter().all(|ops| ops[i].is_some())))
    }

    /// Whether `a` and `b` compile to the same kernel: equal but for vector widths neither
    /// reads ([`Self::reads_width`]), so that a list of candidates holds one of them.
    pub fn same_kernel(&self, a: &PerfConfig, b: &PerfConfig) -> bool {
        let unread: [bool; 3] =
            std::array::from_fn(|i| !self.reads_width(a, i) && !self.reads_width(b, i));
        let canonical = |c: &PerfConfig| {
            let mut c = *c;
            for (w, unread) in [&mut c.vec_a, &mut c.vec_b, &mut c.vec_c]
                .into_iter()
                .zip(unread)
            {
                if unread {
                    *w = 0;
                }
            }
            c
        };
        canonical(a) == canonical(b)
    }

    fn block_along(cfg: &PerfConfig, d: Dim) -> (&'static str, u32) {
        match d {
            Dim::M => (Field::BlockM.key(), cfg.block_m),
            Dim::N => (Field::BlockN.key(), cfg.block_n),
            Dim::K => (Field::BlockK.key(), cfg.block_k),
            Dim::G => ("g", 1),
        }
    }
}
