//! Why a config cannot run a problem: one variant per rule, with the numbers that decided it.

use crate::lowering::Dim;
use serde::Serialize;
use std::fmt;

/// The rule a rejection comes from, without its numbers: the key of the rejection statistics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum RejectReasonKind {
    /// A field is zero (only hand-built configs; parsing and space files refuse zeros).
    Malformed,
    /// Warp tile does not divide the block tile.
    WarpTile,
    /// Too many threads per block for the arch.
    Threads,
    /// Outside the search space's own constraints (threads, warps).
    Space,
    /// Block tile (or K step) larger than the problem needs.
    Oversized,
    /// Warp tile or K step not a whole number of matrix instructions.
    MmaShape,
    /// Register estimate above the per-thread limit.
    Registers,
    /// Shared memory (LDS) above the per-block limit.
    SharedMemory,
    /// Split-K where it does not apply or leaves too little K per split.
    SplitK,
    /// Rasterisation group no different from a smaller one.
    Raster,
    /// Vector width of A.
    VectorA,
    /// Vector width of B.
    VectorB,
    /// Vector width of C.
    VectorC,
    /// TMA loads (`ld=tma`) where a tensor map cannot describe the tiles.
    Tma,
    /// The persistent grid (`pk=1`) where it is not built or does not fit.
    Persistent,
    /// A layout transform (`xf`) that would move nothing.
    Transform,
    /// A thread-block cluster (`cl`) that is not built for the config or does not pair.
    Cluster,
    /// A TMA-store epilogue (`ep=tma`) that is not built for the config or the output.
    Epilogue,
}

impl fmt::Display for RejectReasonKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RejectReasonKind::Malformed => "malformed",
            RejectReasonKind::WarpTile => "warp tile",
            RejectReasonKind::Threads => "threads",
            RejectReasonKind::Space => "space constraint",
            RejectReasonKind::Oversized => "oversized tile",
            RejectReasonKind::MmaShape => "mma shape",
            RejectReasonKind::Registers => "registers",
            RejectReasonKind::SharedMemory => "shared memory",
            RejectReasonKind::SplitK => "split-k",
            RejectReasonKind::Raster => "raster",
            RejectReasonKind::VectorA => "vector A",
            RejectReasonKind::VectorB => "vector B",
            RejectReasonKind::VectorC => "vector C",
            RejectReasonKind::Tma => "tma",
            RejectReasonKind::Persistent => "persistent",
            RejectReasonKind::Transform => "layout transform",
            RejectReasonKind::Cluster => "cluster",
            RejectReasonKind::Epilogue => "epilogue",
        })
    }
}

/// A config that cannot run a problem on an arch, with the rule and the numbers.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Rejection {
    /// A zero field: no kernel has an empty tile.
    #[error("field {param} is 0; every field must be at least 1")]
    ZeroField {
        /// The field's name in the config string.
        param: &'static str,
    },
    /// A block is tiled by whole warps.
    #[error("warp tile {warp_param}={warp} does not divide block tile {block_param}={block}")]
    WarpTile {
        /// `wm` or `wn`.
        warp_param: &'static str,
        /// Warp tile extent.
        warp: u32,
        /// `bm` or `bn`.
        block_param: &'static str,
        /// Block tile extent.
        block: u32,
    },
    /// Threads per block over the arch limit.
    #[error("{threads} threads per block ({warps} warps of {warp_size}) exceed the limit of {max} on {arch}")]
    Threads {
        /// Warps per block.
        warps: u32,
        /// Threads per warp.
        warp_size: u32,
        /// Warps × warp size.
        threads: u32,
        /// The arch limit.
        max: u32,
        /// Arch name.
        arch: &'static str,
    },
    /// The search space's own limit.
    #[error("{what} = {value} is outside the search space's limit {constraint} = {limit}")]
    Space {
        /// The quantity (`threads`, `warps`).
        what: &'static str,
        /// Its value for this config.
        value: u32,
        /// The constraint's key in the space file.
        constraint: &'static str,
        /// The constraint's value.
        limit: u32,
    },
    /// A tile far larger than the GEMM: it only adds wasted work.
    #[error("block tile {param}={block} is larger than needed: {dim} is at most {len} (a tile of {limit} covers it)")]
    Oversized {
        /// `bm`, `bn` or `bk`.
        param: &'static str,
        /// The tile.
        block: u32,
        /// The GEMM dimension.
        dim: Dim,
        /// Its largest length over the sub-GEMMs.
        len: u32,
        /// The largest tile kept.
        limit: u32,
    },
    /// No matrix instruction tiles the warp tile.
    #[error("warp tile {warp_m}x{warp_n} with bk={block_k} is not a whole number of any {dtype} instruction on {arch}: {shapes}")]
    MmaShape {
        /// Warp tile rows.
        warp_m: u32,
        /// Warp tile columns.
        warp_n: u32,
        /// K step.
        block_k: u32,
        /// Element type name.
        dtype: &'static str,
        /// Arch name.
        arch: &'static str,
        /// The shapes available, in words.
        shapes: String,
    },
    /// Register estimate over the limit.
    #[error("register estimate {estimate} per thread exceeds {max}: {acc} accumulators + {frag} fragments + {staging} load staging + {overhead} addressing")]
    Registers {
        /// The total.
        estimate: u32,
        /// Per-thread limit.
        max: u32,
        /// f32 accumulators per thread.
        acc: u32,
        /// Operand fragments per thread.
        frag: u32,
        /// Global-to-shared staging registers per thread.
        staging: u32,
        /// Fixed addressing and loop overhead.
        overhead: u32,
    },
    /// Shared memory over the per-block limit.
    #[error("shared memory {bytes} bytes (stages × (bm + bn) × bk × elem + padding {padding}) exceeds {max} bytes per block")]
    SharedMemory {
        /// Bytes needed.
        bytes: u32,
        /// Of which row padding.
        padding: u32,
        /// Per-block limit.
        max: u32,
    },
    /// The Hopper `wgmma` path (`mma=wg` or `wg1`) does not apply: arch, type or tile shape.
    #[error(
        "the wgmma path (mma=wg|wg1: warpgroup m64nNk16, f16/bf16) cannot run this config: {why}"
    )]
    Wgmma {
        /// What does not fit, in words.
        why: String,
    },
    /// TMA loads (`ld=tma|ws`) do not apply: path, arch, or tiles a tiled tensor map cannot
    /// describe (padding, NCHW, unaligned channels, boxes); with `ws` also what the
    /// warp-specialised block cannot do (one stage, threads, registers).
    #[error("ld={ld} cannot load this config's tiles{}: {why}", gemm.map(|g| format!(" (sub-GEMM {g})")).unwrap_or_default())]
    Tma {
        /// The load path (`tma` or `ws`).
        ld: &'static str,
        /// Why, in words.
        why: String,
        /// The sub-GEMM, when one is at fault.
        gemm: Option<u32>,
    },
    /// The persistent grid (`pk`): `pk=1` only on `ld=ws`, where stream-K needs it, and its
    /// epilogue's own shared-memory region must fit.
    #[error("pk (persistent grid): {why}")]
    Persistent {
        /// Why, in words.
        why: String,
    },
    /// The thread-block cluster (`cl`): built on `ld=ws` with `pk=1`, its tiles must pair
    /// and its shared operand be a TMA tile.
    #[error("cl (thread-block cluster): {why}")]
    Cluster {
        /// Why, in words.
        why: String,
    },
    /// The TMA-store epilogue (`ep=tma`): on the persistent ws walk, whole tiles, C a tiled
    /// tensor map, the staging tile within shared memory.
    #[error("ep (epilogue store path): {why}{}", gemm.map(|g| format!(" (sub-GEMM {g})")).unwrap_or_default())]
    Epilogue {
        /// Why, in words.
        why: String,
        /// The sub-GEMM, when one is at fault.
        gemm: Option<u32>,
    },
    /// The depthwise path (`mma=dw`) cannot run this problem or this tile.
    #[error("the depthwise path (mma=dw) cannot run this: {why}")]
    Depthwise {
        /// What does not fit, with the numbers.
        why: String,
    },
    /// A field the depthwise kernel does not read, at a value other than the smallest the
    /// search space lists: the same kernel under another name (enumeration only).
    #[error("mma=dw does not read {param}: only its smallest value in the space ({smallest}) is enumerated")]
    DepthwiseIgnores {
        /// The field's key.
        param: &'static str,
        /// The space's smallest value (code) of it.
        smallest: u32,
    },
    /// A vector width the kernel does not read (of an operand TMA loads in every sub-GEMM, or
    /// `vc` where the epilogue does not stage C), at a value other than the smallest the
    /// search space lists: the same kernel under another name (enumeration only).
    #[error("{param} is not read here ({why}): only its smallest value in the space ({smallest}) is enumerated")]
    WidthUnread {
        /// The field's key.
        param: &'static str,
        /// The space's smallest value of it.
        smallest: u32,
        /// Why the kernel does not read it.
        why: &'static str,
    },
    /// The layout transform does not apply to the problem.
    #[error("xf={xf} does not apply: {why}")]
    Transform {
        /// The transform (`nhwc` or `nhwc_out`).
        xf: &'static str,
        /// Why, in words.
        why: String,
    },
    /// A swizzled layout needs whole, power-of-two counts of 16-byte chunks per row.
    #[error("lds=swz needs shared-memory rows ({line} × elem = {row_bytes} bytes) of a power-of-two number of 16-byte chunks")]
    SwizzleRow {
        /// The config field a row is as long as: `bk` for a tile stored along K, `bm` or `bn`
        /// for an operand contiguous along its rows (stored `[k][row]`).
        line: &'static str,
        /// Bytes per row of a tile.
        row_bytes: u32,
    },
    /// Split-K in a direction without a long reduction.
    #[error("split_k = {split_k} applies only to bwd-weight, not {direction}")]
    SplitKDirection {
        /// The factor.
        split_k: u32,
        /// The problem's direction name.
        direction: &'static str,
    },
    /// Split-K that leaves less than one K step per split.
    #[error("split_k = {split_k} leaves {per_split} of K = {k_len} per split, less than bk = {block_k} (sub-GEMM {gemm})")]
    SplitKTooShort {
        /// The factor.
        split_k: u32,
        /// K length.
        k_len: u32,
        /// K per split (rounded down).
        per_split: u32,
        /// K step.
        block_k: u32,
        /// Sub-GEMM id.
        gemm: u32,
    },
    /// A split-K reduction mode without split-K.
    #[error("red = {red} adds up split-K slices, but split_k = 1 (use red = atomic)")]
    ReductionWithoutSplit {
        /// The mode's name.
        red: &'static str,
    },
    /// More split-K partials than the fix-up's i32 indices reach.
    #[error("red = fixup/stream keeps {partials} f32 partials, more than {max} (sub-GEMM {gemm}): fewer slices or smaller tiles")]
    FixupWorkspace {
        /// Partials (output tiles × slices × tile elements).
        partials: u64,
        /// The limit.
        max: u64,
        /// Sub-GEMM id.
        gemm: u32,
    },
    /// Stream-K where it does not apply.
    #[error("red = stream: {why}")]
    StreamK {
        /// Why not.
        why: String,
    },
    /// A raster group no different from a smaller one.
    #[error("raster {raster} is no different from a smaller group: the grid has only {grid_m} block rows")]
    Raster {
        /// The group size.
        raster: u32,
        /// Block rows of the largest sub-GEMM.
        grid_m: u32,
    },
    /// A vector wider than one access can be.
    #[error("vector width of {operand} is {width} ({bytes} bytes) but one access moves at most {max} bytes")]
    VectorBytes {
        /// `A`, `B` or `C`.
        operand: char,
        /// Elements.
        width: u32,
        /// Bytes.
        bytes: u32,
        /// Arch limit, bytes.
        max: u32,
    },
    /// A vector along a dimension that is not contiguous in memory.
    #[error(
        "vector width of {operand} is {width} but at most 1 is legal: {why} (sub-GEMM {gemm})"
    )]
    VectorNotContiguous {
        /// `A`, `B` or `C`.
        operand: char,
        /// Elements.
        width: u32,
        /// Tensor name.
        tensor: &'static str,
        /// Its innermost dimension.
        tensor_dim: char,
        /// What breaks contiguity, in words.
        why: String,
        /// Sub-GEMM id.
        gemm: u32,
    },
    /// A vector that does not divide the block tile it is loaded into.
    #[error("vector width of {operand} is {width} but does not divide the block tile along {dim} ({block_param} = {block})")]
    VectorTile {
        /// `A`, `B` or `C`.
        operand: char,
        /// Elements.
        width: u32,
        /// The vectorized dimension.
        dim: Dim,
        /// `bm`, `bn` or `bk`.
        block_param: &'static str,
        /// The tile.
        block: u32,
    },
    /// Wider than the index maps allow.
    #[error(
        "vector width of {operand} is {width} but at most {max} is legal: {why} (sub-GEMM {gemm})"
    )]
    VectorWidth {
        /// `A`, `B` or `C`.
        operand: char,
        /// Elements.
        width: u32,
        /// Largest legal width.
        max: u32,
        /// What caps it.
        why: String,
        /// Sub-GEMM id.
        gemm: u32,
    },
}

impl Rejection {
    /// The rule, for statistics.
    pub fn kind(&self) -> RejectReasonKind {
        use RejectReasonKind as K;
        match self {
            Rejection::ZeroField { .. } => K::Malformed,
            Rejection::WarpTile { .. } => K::WarpTile,
            Rejection::Threads { .. } => K::Threads,
            Rejection::Space { .. } => K::Space,
            Rejection::Oversized { .. } => K::Oversized,
            Rejection::MmaShape { .. } | Rejection::Wgmma { .. } | Rejection::Depthwise { .. } => {
                K::MmaShape
            }
            Rejection::DepthwiseIgnores { .. } | Rejection::WidthUnread { .. } => K::Space,
            Rejection::Registers { .. } => K::Registers,
            Rejection::SharedMemory { .. } | Rejection::SwizzleRow { .. } => K::SharedMemory,
            Rejection::SplitKDirection { .. }
            | Rejection::SplitKTooShort { .. }
            | Rejection::ReductionWithoutSplit { .. }
            | Rejection::FixupWorkspace { .. }
            | Rejection::StreamK { .. } => K::SplitK,
            Rejection::Raster { .. } => K::Raster,
            Rejection::Tma { .. } => K::Tma,
            Rejection::Persistent { .. } => K::Persistent,
            Rejection::Cluster { .. } => K::Cluster,
            Rejection::Epilogue { .. } => K::Epilogue,
            Rejection::Transform { .. } => K::Transform,
            Rejection::VectorBytes { operand, .. }
            | Rejection::VectorNotContiguous { operand, .. }
            | Rejection::VectorTile { operand, .. }
            | Rejection::VectorWidth { operand, .. } => match operand {
                'A' => K::VectorA,
                'B' => K::VectorB,
                _ => K::VectorC,
            },
        }
    }
}
