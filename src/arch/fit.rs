//! Does a warp (or warpgroup) tile fit the arch's matrix unit? One rule, read by legality (to
//! reject with a reason), by the code generator's planner (to choose the instruction) and by
//! the cost model (to know which peak applies), so that the three cannot drift apart.
//!
//! The rules combine the instruction shapes of the table with how the kernels use them: the
//! `mma.sync` path reads B fragments with `ldmatrix.x4` (two n8 tiles at once), and the
//! `wgmma` path's descriptors describe 128-byte-swizzled lines of K.

use super::{Arch, MathInstr, MathKind, WarpgroupMma};
use crate::abi::MapSwizzle;
use crate::problem::DType;

/// Bytes of K in one shared-memory line of the `wgmma` path: its descriptors use the 128-byte
/// swizzle, so `block_k` is exactly one such line.
pub const WGMMA_LINE_BYTES: u32 = 128;

/// Stages the `wgmma` path needs to keep one group in flight (`mma = wg1`): the copies refill
/// the buffer two tiles back, which every warpgroup must have finished reading.
pub const WGMMA_IN_FLIGHT_STAGES: u32 = 3;

/// Most instruction row blocks (m64) in one warpgroup tile: `wm` is 64 or 128. The
/// accumulator registers (`wm × wn / 128` a thread) bound the tile further, in legality.
pub const WGMMA_ROW_BLOCKS_MAX: u32 = 2;

/// Why a tile does not fit the warpgroup MMA.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WgmmaMisfit {
    /// The arch has no `wgmma`.
    #[error("{arch} has no wgmma")]
    NoUnit {
        /// The arch.
        arch: &'static str,
    },
    /// Not an element type the kernels use `wgmma` for.
    #[error("{dtype} is not {types}")]
    DType {
        /// The problem's element type.
        dtype: &'static str,
        /// The types that fit, "f16 or bf16".
        types: String,
    },
    /// The warpgroup tile's rows are not one or two of the instruction's row blocks.
    #[error("wm = {warp_m} (the warpgroup tile has {m} or {} rows)", 2 * m)]
    Rows {
        /// wm.
        warp_m: u32,
        /// The instruction's M.
        m: u32,
    },
    /// The warpgroup tile's columns are no instruction N.
    #[error("wn = {warp_n} (a multiple of {step} up to {max})")]
    Columns {
        /// wn.
        warp_n: u32,
        /// N step.
        step: u32,
        /// Largest N.
        max: u32,
    },
    /// `block_k` is not one swizzle line.
    #[error("bk = {block_k} ({bytes} bytes; the {WGMMA_LINE_BYTES}-byte swizzle needs {WGMMA_LINE_BYTES})")]
    Depth {
        /// bk.
        block_k: u32,
        /// bk in bytes.
        bytes: u32,
    },
    /// A group in flight with too few stages.
    #[error(
        "mma = wg1 with st = {stages}: a group in flight while the copies refill the buffer two \
         tiles back needs {WGMMA_IN_FLIGHT_STAGES} stages or more"
    )]
    InFlight {
        /// st.
        stages: u32,
    },
}

/// The `wgmma` shape of a warpgroup tile, m × n × k: instructions of 64 × n × k, one per 64
/// rows (m = 64 or 128) for each k step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WgmmaShape {
    /// Rows (the warpgroup tile's wm).
    pub m: u32,
    /// Columns (the warpgroup tile's wn).
    pub n: u32,
    /// Depth in elements.
    pub k: u32,
}

/// The arch's `wgmma` for `dtype`, or why there is none.
pub fn wgmma_unit(arch: &Arch, dtype: DType) -> Result<WarpgroupMma, WgmmaMisfit> {
    let unit = arch
        .features
        .wgmma
        .ok_or(WgmmaMisfit::NoUnit { arch: arch.name })?;
    if !unit.dtypes.contains(&dtype) {
        let types: Vec<&str> = unit.dtypes.iter().map(|d| d.name()).collect();
        return Err(WgmmaMisfit::DType {
            dtype: dtype.name(),
            types: types.join(" or "),
        });
    }
    Ok(unit)
}

/// The `wgmma` shape of a warpgroup tile `warp_m × warp_n` with depth `block_k`, or why it does
/// not fit (the parts of the rule that the tile fixes; [`wgmma_pipeline`] is the rest).
pub fn wgmma_tile(
    arch: &Arch,
    dtype: DType,
    warp_m: u32,
    warp_n: u32,
    block_k: u32,
) -> Result<WgmmaShape, WgmmaMisfit> {
    let unit = wgmma_unit(arch, dtype)?;
    // One instruction row block, or two (the warpgroup issues two m64 instructions per k
    // step on the same B: a 128-row tile, a ping-pong consumer's whole block tile).
    if warp_m != unit.m && warp_m != WGMMA_ROW_BLOCKS_MAX * unit.m {
        return Err(WgmmaMisfit::Rows { warp_m, m: unit.m });
    }
    if !warp_n.is_multiple_of(unit.n_step) || warp_n > unit.n_max {
        return Err(WgmmaMisfit::Columns {
            warp_n,
            step: unit.n_step,
            max: unit.n_max,
        });
    }
    let bytes = block_k * dtype.bytes();
    if bytes != WGMMA_LINE_BYTES {
        return Err(WgmmaMisfit::Depth { block_k, bytes });
    }
    Ok(WgmmaShape {
        m: warp_m,
        n: warp_n,
        k: unit.k_bytes / dtype.bytes(),
    })
}

/// The shared-memory swizzle of a `wgmma` operand tile stored MN-major (`[k][row]`, the
/// transposed mode for an operand contiguous along its rows), or `None` when no mode fits.
///
/// An MN-major swizzle atom (PTX ISA "Shared Memory Matrix Layout", CUTLASS's canonical
/// `Layout_MN_SW{32,64,128}_Atom`) is `span` bytes of rows by 8 k: 16, 32 or 64 rows of a
/// 16-bit type. The tile is blocks of one atom's rows, each `bk` lines of `span` bytes (one per
/// k); the descriptor's leading byte offset steps from block to block, its stride byte offset
/// from one 8-line group of k to the next. A warpgroup tile must start on a block and cover
/// whole blocks, so the atom's rows divide both the block tile's `rows` and the warpgroup
/// tile's `extent`; the widest such mode is taken (fewest blocks, fewest bank conflicts).
/// The planner, legality, the TMA box and tensor map, the `cp.async` stores and the
/// descriptors all read it from here.
pub fn wgmma_mn_swizzle(dtype: DType, rows: u32, extent: u32) -> Option<MapSwizzle> {
    MapSwizzle::SWIZZLED.into_iter().find(|s| {
        let atom = s.span_bytes() / dtype.bytes();
        rows.is_multiple_of(atom) && extent.is_multiple_of(atom) && extent > 0
    })
}

/// Rows of one MN-major swizzle atom of `dtype` (see [`wgmma_mn_swizzle`]).
pub fn mn_atom_rows(dtype: DType, swizzle: MapSwizzle) -> u32 {
    swizzle.span_bytes() / dtype.bytes()
}

/// Whether the pipeline depth allows a group in flight (`mma = wg1`).
pub fn wgmma_pipeline(in_flight: bool, stages: u32) -> Result<(), WgmmaMisfit> {
    if in_flight && stages < WGMMA_IN_FLIGHT_STAGES {
        return Err(WgmmaMisfit::InFlight { stages });
    }
    Ok(())
}

/// The whole `wgmma` rule: [`wgmma_tile`], then [`wgmma_pipeline`].
pub fn wgmma_fit(
    arch: &Arch,
    dtype: DType,
    (warp_m, warp_n, block_k): (u32, u32, u32),
    stages: u32,
    in_flight: bool,
) -> Result<WgmmaShape, WgmmaMisfit> {
    let shape = wgmma_tile(arch, dtype, warp_m, warp_n, block_k)?;
    wgmma_pipeline(in_flight, stages)?;
    Ok(shape)
}

/// What a warp tile and `block_k` must be multiples of for `instr` (rows, columns, depth): the
/// instruction's shape, except that the `mma.sync` path steps two n8 tiles at a time (its B
/// fragments come from one `ldmatrix.x4`). FMA has no depth granule.
pub fn warp_step(instr: &MathInstr) -> (u32, u32, u32) {
    match instr.kind {
        MathKind::Fma => (instr.m, instr.n, 1),
        MathKind::MmaSync => (instr.m, 2 * instr.n, instr.k),
        MathKind::Mfma => (instr.m, instr.n, instr.k),
    }
}

/// Whether a `warp_m × warp_n` warp tile with depth `block_k` is a whole number of `instr`
/// steps; FMA also needs the warp's lanes to tile it (`warp_m · warp_n` a multiple of them).
pub fn warp_fits(arch: &Arch, instr: &MathInstr, warp_m: u32, warp_n: u32, block_k: u32) -> bool {
    let (m, n, k) = warp_step(instr);
    let lanes = instr.kind != MathKind::Fma || (warp_m * warp_n).is_multiple_of(arch.warp_size);
    warp_m.is_multiple_of(m) && warp_n.is_multiple_of(n) && block_k.is_multiple_of(k) && lanes
}

/// The first (preferred) instruction of `arch` for `dtype` that the warp tile fits, if any.
pub fn warp_instr(
    arch: &Arch,
    dtype: DType,
    warp_m: u32,
    warp_n: u32,
    block_k: u32,
) -> Option<MathInstr> {
    arch.math(dtype)
        .iter()
        .copied()
        .find(|i| warp_fits(arch, i, warp_m, warp_n, block_k))
}

/// The rule of [`warp_instr`] in words, for rejection messages.
pub fn warp_rule_text(arch: &Arch, dtype: DType) -> String {
    arch.math(dtype)
        .iter()
        .map(|i| {
            let (m, n, k) = warp_step(i);
            match i.kind {
                MathKind::Fma => format!(
                    "{}: wm % {m} = 0, wn % {n} = 0, wm·wn % {} = 0",
                    i.mnemonic, arch.warp_size
                ),
                _ => format!("{}: wm % {m} = 0, wn % {n} = 0, bk % {k} = 0", i.mnemonic),
            }
        })
        .collect::<Vec<_>>()
        .join("; or ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wgmma_rule() {
        let h = Arch::SM_90;
        let s = wgmma_fit(&h, DType::BF16, (64, 128, 64), 2, false).unwrap();
        assert_eq!((s.m, s.n, s.k), (64, 128, 16));
        assert_eq!(
            wgmma_tile(&Arch::SM_80, DType::BF16, 64, 128, 64),
            Err(WgmmaMisfit::NoUnit { arch: "sm_80" })
        );
        assert_eq!(
            wgmma_tile(&h, DType::F32, 64, 128, 32)
                .unwrap_err()
                .to_string(),
            "f32 is not f16 or bf16"
        );
        assert!(matches!(
            wgmma_tile(&h, DType::F16, 32, 128, 64),
            Err(WgmmaMisfit::Rows { .. })
        ));
        assert!(matches!(
            wgmma_tile(&h, DType::F16, 192, 128, 64),
            Err(WgmmaMisfit::Rows { .. })
        ));
        let s = wgmma_tile(&h, DType::BF16, 128, 128, 64).unwrap();
        assert_eq!((s.m, s.n), (128, 128));
        assert!(matches!(
            wgmma_tile(&h, DType::F16, 64, 264, 64),
            Err(WgmmaMisfit::Columns { .. })
        ));
        assert!(matches!(
            wgmma_tile(&h, DType::F16, 64, 12, 64),
            Err(WgmmaMisfit::Columns { .. })
        ));
        assert!(matches!(
            wgmma_tile(&h, DType::F16, 64, 64, 32),
            Err(WgmmaMisfit::Depth { bytes: 64, .. })
        ));
        assert!(matches!(
            wgmma_fit(&h, DType::F16, (64, 64, 64), 2, true),
            Err(WgmmaMisfit::InFlight { stages: 2 })
        ));
        assert!(wgmma_fit(&h, DType::F16, (64, 64, 64), 3, true).is_ok());
    }

    #[test]
    fn warp_rule() {
        let h = Arch::SM_90;
        // mma.sync steps 16 columns (two n8 tiles per ldmatrix.x4).
        assert!(warp_instr(&h, DType::BF16, 16, 16, 16).is_some());
        assert!(warp_instr(&h, DType::BF16, 16, 8, 16).is_none());
        assert!(warp_instr(&h, DType::BF16, 16, 16, 8).is_none());
        // FMA: 4×4 granules and whole warps.
        assert!(warp_instr(&h, DType::F32, 4, 8, 1).is_some());
        assert!(warp_instr(&h, DType::F32, 4, 4, 1).is_none());
        // MFMA: the first shape that fits is preferred.
        let m = Arch::GFX90A;
        assert_eq!(warp_instr(&m, DType::F16, 32, 32, 8).unwrap().m, 32);
        assert_eq!(warp_instr(&m, DType::F16, 16, 48, 16).unwrap().m, 16);
        assert!(warp_instr(&m, DType::F16, 16, 16, 8).is_none());
        assert_eq!(
            warp_instr(&Arch::GFX908, DType::BF16, 32, 32, 4).unwrap().k,
            4
        );
    }
}
