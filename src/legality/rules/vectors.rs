//! The vector rules (`va`, `vb`, `vc`): how wide each operand of each sub-GEMM may be loaded or
//! stored. The widths come from the width analysis through the lowering's index maps
//! ([`vector_dim`]), computed once per (lowering, arch) into [`OperandVector`]s; a config's
//! width must also fit the arch's widest access and divide the block tile it walks.

use super::Checker;
use crate::config::{Field, PerfConfig};
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

    /// `vc` where the kernel does not read it ([`PerfConfig::reads_vec_c`]: the epilogue
    /// stages C only when it stores C itself and split-K slices do not add by atomics) is
    /// enumerated only at the space's smallest value (under pruning), so that one kernel is
    /// not timed under several names. Judged at the epilogue's rule (`ep` is the innermost
    /// loop). (The operands' widths under TMA are not pruned: on `ld=tma` and on grouped
    /// problems a TMA-loaded operand's width still changes the PTX.)
    pub(super) fn unread_vec_c(&self, cfg: &PerfConfig) -> Result<(), Rejection> {
        let Some(pr) = &self.pruning else {
            return Ok(());
        };
        let smallest = pr.smallest[Field::VecC];
        if cfg.vec_c == smallest || cfg.reads_vec_c(self.problem.direction()) {
            return Ok(());
        }
        Err(Rejection::WidthUnread {
            param: Field::VecC.key(),
            smallest,
            why: "the epilogue does not stage C",
        })
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
