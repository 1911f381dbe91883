//! Shared-memory layouts of a GEMM kernel, as [`super::plan::GemmPlan`] decides them: each
//! operand's tile (lines, padding or swizzle, stages), the block's pipeline buffers and
//! `mbarrier`s, and the C tile staged for vector stores. Kept apart from the plan so the
//! layout rules (what `lds=pad|swz` and `vec_c` mean in bytes) read in one place.

use crate::config::{LdsLayout, PerfConfig};
use crate::lowering::{Dim, Gemm};
use crate::problem::ConvProblem;

/// Bytes in one shared-memory chunk: the unit of padding and swizzling, and of `ldmatrix` rows.
pub(crate) const CHUNK: u32 = 16;

/// Shared-memory layout of one operand's tile. A tile is stored as lines of contiguous
/// elements: `[row][k]` ("k-major", K contiguous) when its global vectors run along K, else
/// `[k][row]` (rows contiguous), so global vectors land contiguously either way and `cp.async`
/// serves both; fragments of a `[k][row]` tile are read with `ldmatrix.trans`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SmemTile {
    /// `[row][k]` (true) or `[k][row]` (false).
    pub kmajor: bool,
    /// Elements from one line to the next.
    pub stride: u32,
    /// Chunks per line when swizzled (a power of two), else `None`.
    pub swizzle: Option<u32>,
    /// Elements per 16-byte chunk.
    pub chunk_elems: u32,
    /// Elements of one stage.
    pub stage: u32,
    /// First element of this operand's region (its stages follow each other).
    pub region: u32,
    /// `wgmma`'s MN-major layout of a `[k][row]` tile: the rows split into blocks of one
    /// swizzle atom's rows (`stride` of them: one line per k each, 16, 32 or 64 rows of a
    /// 16-bit type), a block being `bk` lines and the next block this many elements further;
    /// `None`: plain lines of all rows.
    pub row_blocks: Option<u32>,
}

impl SmemTile {
    /// Lines that share one swizzle phase: the XOR pattern repeats every `8 / chunks` lines so
    /// that 8 consecutive lines (one `ldmatrix` phase) hit 8 distinct 16-byte bank groups.
    pub fn swizzle_line_div(&self) -> u32 {
        match self.swizzle {
            Some(chunks) => (8 / chunks).max(1),
            None => 1,
        }
    }

    /// A tile of `lines` lines of `line` elements. `lds=pad` pads each line by one chunk only
    /// when that costs no more than one chunk per tile row (what legality budgets: a `[k][row]`
    /// tile has `block_k` lines); otherwise the lines are swizzled instead (no extra memory), or
    /// left plain when they are not a power-of-two number of chunks.
    pub(super) fn new(
        kmajor: bool,
        line: u32,
        lines: u32,
        rows: u32,
        lds: LdsLayout,
        bytes: u32,
    ) -> Result<Self, String> {
        let chunk_elems = CHUNK / bytes;
        let line_bytes = line * bytes;
        let chunks = line_bytes / CHUNK;
        let swizzles = line_bytes.is_multiple_of(CHUNK) && chunks.is_power_of_two();
        let (stride, swizzle) = match lds {
            LdsLayout::Padded if lines <= rows => (line + chunk_elems, None),
            LdsLayout::Padded if swizzles => (line, Some(chunks)),
            LdsLayout::Padded => (line, None),
            LdsLayout::Swizzled if swizzles => (line, Some(chunks)),
            LdsLayout::Swizzled => {
                return Err(format!(
                    "lds=swz needs shared-memory lines of a power-of-two number of 16-byte chunks; \
                     this operand's lines are {line_bytes} bytes ({})",
                    if kmajor { "block_k elements" } else { "block_m or block_n elements" }
                ))
            }
        };
        Ok(SmemTile {
            kmajor,
            stride,
            swizzle,
            chunk_elems,
            stage: lines * stride,
            region: 0,
            row_blocks: None,
        })
    }
}

/// Shared memory of the GEMM kernel: `stages` buffers of A, then `stages` of B.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Smem {
    /// A's tile.
    pub a: SmemTile,
    /// B's tile.
    pub b: SmemTile,
    /// Pipeline buffers.
    pub stages: u32,
    /// Total bytes (what the launcher passes as dynamic shared memory).
    pub bytes: u32,
    /// Byte offset of the 8-byte `mbarrier`s after the tiles (`ld=tma|ws` only):
    /// [`crate::config::LoadPath::mbarriers`] of them (`ws`: the full ones, then the empty
    /// ones; `wspp`: then one order barrier per consumer warpgroup).
    pub barriers: Option<u32>,
    /// `pk=1`: byte offset of the fix-up's verdict words, in the epilogue's own region after
    /// the pipeline (the producer refills stages while the consumers run the epilogue);
    /// `None`: at 0, reusing the pipeline's (dead) stages.
    pub epilogue: Option<u32>,
    /// `pk=1`: byte offset of the staged C tile in that region; `None`: at 0.
    pub c_at: Option<u32>,
    /// `pk=1`: bytes of one epilogue region (verdict words and staged C); `ld=wspp` has one
    /// per consumer warpgroup, consumer `c`'s at `c × region` past the first.
    pub region: u32,
}

impl Smem {
    /// The layout consumer warpgroup `c` of a ping-pong block sees: its own epilogue region.
    pub fn for_consumer(&self, c: u32) -> Smem {
        let shift = |at: Option<u32>| at.map(|a| a + c * self.region);
        Smem {
            epilogue: shift(self.epilogue),
            c_at: shift(self.c_at),
            ..*self
        }
    }
}

/// The C tile staged in shared memory (output type) so that threads store whole vectors along
/// C's contiguous dimension: lines run along that dimension, padded by one 16-byte chunk. It
/// reuses the pipeline's shared memory and never needs more: when the tile does not fit, it
/// goes through in passes of `lines_per_pass` lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CStage {
    /// Lines run along N (C contiguous along N), else along M.
    pub along_n: bool,
    /// Vector width.
    pub vec: u32,
    /// Elements per line.
    pub line: u32,
    /// Lines.
    pub lines: u32,
    /// Elements from one line to the next.
    pub stride: u32,
    /// Lines staged per pass.
    pub lines_per_pass: u32,
}

impl CStage {
    /// Passes through shared memory.
    pub fn passes(&self) -> u32 {
        self.lines.div_ceil(self.lines_per_pass)
    }
}

/// The staged epilogue of `c` for C of `gemm`, within `budget` bytes of the pipeline's shared
/// memory, or why `vec_c` cannot be staged.
pub(super) fn c_stage(
    p: &ConvProblem,
    gemm: &Gemm,
    c: &PerfConfig,
    budget: u64,
) -> Result<CStage, String> {
    let bytes = p.dtype().bytes();
    let vec = c.vec_c;
    if !vec.is_power_of_two() || vec * bytes > CHUNK {
        return Err(format!(
            "width {vec} is not a power of two of at most 16 bytes"
        ));
    }
    let along_n = match gemm.c.contiguity(p, gemm, [Dim::M, Dim::N]).dim {
        Some(d) => d == Dim::N,
        None => {
            return Err(format!(
                "width {vec} but C is contiguous along neither M nor N"
            ))
        }
    };
    let (line, lines, len) = if along_n {
        (c.block_n, c.block_m, gemm.n_len())
    } else {
        (c.block_m, c.block_n, gemm.m_len())
    };
    if !line.is_multiple_of(vec) || !len.is_multiple_of(vec) {
        return Err(format!("width {vec} does not divide the tile ({line}) and GEMM ({len}) along C's contiguous dimension"));
    }
    let stride = line + CHUNK / bytes;
    let fit = budget / (stride as u64 * bytes as u64);
    if fit == 0 {
        return Err(format!(
            "one staged line ({} bytes) exceeds the pipeline's shared memory",
            stride * bytes
        ));
    }
    Ok(CStage {
        along_n,
        vec,
        line,
        lines,
        stride,
        lines_per_pass: fit.min(lines as u64) as u32,
    })
}
