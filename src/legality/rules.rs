//! The rules, one at a time, over facts computed once per (lowering, arch): the enumerator
//! evaluates each rule as soon as the loop that fixes its parameters is entered, `check` runs
//! them all in the same order, so both attribute a rejection to the same rule.

use super::rejection::Rejection;
use super::width::{dim_letters, vector_dim, VectorWidth};
use crate::arch::{fit, Arch, MathInstr};
use crate::config::DwTile;
use crate::config::{Field, LdsLayout, MmaPath, PerField, PerfConfig, Transform};
use crate::lowering::depthwise::DwShape;
use crate::lowering::{Dim, Gemm, Lowering};
use crate::problem::{ConvProblem, Direction};

mod cluster;
mod depthwise;
mod epilogue;
mod persistent;
mod reduction;
mod resources;
mod tma;

/// Widest vector the width analysis considers, elements; the byte limit of the arch caps it
/// further (16 elements is 16 bytes of the narrowest type we could ever add).
const ANALYSIS_CAP: u32 = 16;
/// Registers every kernel spends on addresses, loop counters and bounds (estimate).
const OVERHEAD_REGS: u32 = 40;
/// The same on AMD (see [`Checker::overhead_regs`]).
const AMD_OVERHEAD_REGS: u32 = 88;

/// One rule. Rules run in the order of [`Rule::ALL`]; [`Rule::innermost`] says which parameters
/// they read (see [`Field::level`]), and a rule reads no parameter of a later level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Rule {
    /// No zero field (a hand-built config).
    NonZero,
    /// Warp tile divides block tile.
    WarpTile,
    /// Threads per block within the arch limit.
    Threads,
    /// The search space's thread and warp limits (enumeration only).
    Space,
    /// bm, bn not larger than needed (enumeration only).
    OversizedMN,
    /// bk not larger than needed (enumeration only).
    OversizedK,
    /// Warp tile and bk a whole number of matrix instructions.
    MmaShape,
    /// Register estimate.
    Registers,
    /// Shared memory per block.
    SharedMemory,
    /// Split-K.
    SplitK,
    /// How split-K slices are added up (`red`).
    Reduction,
    /// Rasterisation group useful (enumeration only).
    Raster,
    /// Vector width of A.
    VectorA,
    /// Vector width of B.
    VectorB,
    /// Vector width of C.
    VectorC,
    /// TMA loads: a tensor map describes the tiles (`ld=tma`).
    Tma,
    /// The persistent grid (`pk=1`): built for `ld=ws|wspp`, its epilogue region fits.
    Persistent,
    /// The layout transform applies (`xf`): some tensor changes.
    Transform,
    /// The thread-block cluster (`cl`): on `ld=ws` with `pk=1`, tiles that pair, a
    /// multicast operand on a tensor map.
    Cluster,
    /// The epilogue's store path (`ep`): `ep=tma` on the persistent ws walk, C a tiled
    /// tensor map, the staging tile fits.
    Epilogue,
}

impl Rule {
    /// All rules in evaluation order.
    pub const ALL: [Rule; 20] = [
        Rule::NonZero,
        Rule::WarpTile,
        Rule::Threads,
        Rule::Space,
        Rule::Transform,
        Rule::OversizedMN,
        Rule::OversizedK,
        Rule::MmaShape,
        Rule::Registers,
        Rule::SharedMemory,
        Rule::Tma,
        Rule::SplitK,
        Rule::Reduction,
        Rule::Raster,
        Rule::VectorA,
        Rule::VectorB,
        Rule::VectorC,
        Rule::Persistent,
        Rule::Cluster,
        Rule::Epilogue,
    ];

    /// The parameter of the innermost enumeration loop that the rule reads: enumeration
    /// evaluates the rule as soon as that loop fixes it.
    pub fn innermost(self) -> Field {
        match self {
            Rule::WarpTile | Rule::OversizedMN => Field::WarpN,
            Rule::Threads | Rule::Space => Field::Mma,
            Rule::OversizedK | Rule::MmaShape | Rule::Registers => Field::BlockK,
            Rule::SharedMemory => Field::Lds,
            Rule::Tma => Field::Ld,
            Rule::Transform => Field::Xf,
            Rule::SplitK => Field::SplitK,
            Rule::Reduction => Field::Red,
            Rule::Raster => Field::Raster,
            Rule::VectorA => Field::VecA,
            Rule::VectorB => Field::VecB,
            Rule::VectorC => Field::VecC,
            Rule::Persistent => Field::Persistent,
            Rule::Cluster => Field::Cluster,
            Rule::Epilogue => Field::Ep,
            // Reads every field, but only ever fails on hand-built configs.
            Rule::NonZero => Field::BlockM,
        }
    }

    /// The loop level ([`Field::level`]) of [`Rule::innermost`].
    pub fn level(self) -> usize {
        self.innermost().level()
    }

    /// Short name for explanations.
    pub fn name(self) -> &'static str {
        match self {
            Rule::NonZero => "non-zero fields",
            Rule::WarpTile => "warp tile divides block tile",
            Rule::Threads => "threads per block",
            Rule::Space => "search-space limits",
            Rule::OversizedMN => "block tile M/N not oversized",
            Rule::OversizedK => "block tile K not oversized",
            Rule::MmaShape => "matrix instruction shape",
            Rule::Registers => "register estimate",
            Rule::SharedMemory => "shared memory",
            Rule::SplitK => "split-k",
            Rule::Reduction => "split-k reduction",
            Rule::Raster => "raster group",
            Rule::VectorA => "vector width A",
            Rule::VectorB => "vector width B",
            Rule::VectorC => "vector width C",
            Rule::Tma => "tma loads",
            Rule::Persistent => "persistent grid",
            Rule::Transform => "layout transform",
            Rule::Cluster => "thread-block cluster",
            Rule::Epilogue => "epilogue store path",
        }
    }
}

/// Limits a search space adds on top of legality: they cut candidates that could run but are
/// not worth timing, so a tuned config is never rejected for them at lookup.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pruning {
    /// Most threads per block.
    pub max_threads: u32,
    /// Fewest warps per block.
    pub min_warps: u32,
    /// Most warps per block.
    pub max_warps: u32,
    /// Smallest value (code) of each field in the space: a tile (bm, bn, bk) or raster group
    /// is oversized only above max(next power of two of the GEMM length, this).
    pub smallest: PerField<u32>,
}

/// How one operand of one sub-GEMM may be vectorized.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OperandVector {
    /// The GEMM dimension it is vectorized along ([`super::vector_dim`]); `None` when none
    /// walks its contiguous memory.
    pub dim: Option<Dim>,
    /// Tensor name.
    pub tensor: &'static str,
    /// The tensor's innermost dimension.
    pub tensor_dim: char,
    /// Largest legal width along `dim` (1 when `dim` is `None`).
    pub max: VectorWidth,
}

/// What a legal config uses, for occupancy and for the code generator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Resources {
    /// Warps (waves) per block.
    pub warps: u32,
    /// Threads per block.
    pub threads: u32,
    /// The instruction the warp tile is built from.
    pub instr: MathInstr,
    /// Shared memory per block, bytes.
    pub lds_bytes: u32,
    /// Estimated registers per thread.
    pub registers: u32,
    /// Blocks that fit on one SM (CU) by shared memory and registers.
    pub blocks_per_cu: u32,
    /// Largest legal vector width of A, B, C over all sub-GEMMs (byte limit included).
    pub max_vector: [u32; 3],
}

/// The facts about one (lowering, arch) that every rule reads, computed once.
#[derive(Debug, Clone)]
pub struct Checker {
    pub(super) problem: ConvProblem,
    pub(super) arch: Arch,
    pub(super) elem_bytes: u32,
    /// Longest M, N, K over the sub-GEMMs, indexed by [`Dim`].
    pub(super) max_len: [u32; 4],
    pub(super) k_lens: Vec<u32>,
    /// Per sub-GEMM, its G, M and N lengths (the output tiles a split-K fix-up keeps partials
    /// of).
    pub(super) gmn: Vec<[u32; 3]>,
    /// Per sub-GEMM, per operand (A, B, C).
    pub(super) vectors: Vec<[OperandVector; 3]>,
    pub(super) pruning: Option<Pruning>,
    /// Whether some sub-GEMM's A (index 0) or B (1) tile is MN-major: the code generator
    /// stores a tile `[k][row]` when its operand is contiguous along the rows, and `wgmma`
    /// reads such a tile (transposed mode) in blocks of a swizzle atom's rows.
    pub(super) mn_major: [bool; 2],
    /// The sub-GEMMs, for the TMA rule (whether a tensor map describes a tile depends on the
    /// tile's size).
    pub(super) gemms: Vec<Gemm>,
    /// The checkers of the layout transforms' twin lowerings (`xf=nhwc`, `nhwc_out`), or why
    /// the transform does not apply: a config with `xf` set is judged by its twin, whose
    /// GEMMs are the ones that run.
    pub(super) twins: [Result<Box<Checker>, String>; 2],
    /// The transform whose twin lowering this checker judges (`None` for the problem as
    /// given): such a checker judges configs of that transform itself.
    pub(super) transform: Transform,
    /// The problem as the depthwise kernel (`mma=dw`) sees it, or why that kernel does not
    /// run it.
    pub(super) depthwise: Result<DwShape, String>,
}

/// Most f32 partials a split-K fix-up may keep: the kernels index the workspace in i32.
pub(crate) const MAX_FIXUP_PARTIALS: u64 = i32::MAX as u64;

fn round_up_pow2(x: u32) -> u64 {
    (x.max(1) as u64).next_power_of_two()
}

impl Checker {
    /// The search space's pruning limits on a block of `threads` threads in `warps` warps
    /// (none without pruning): the `Space` rule of the GEMM paths and of `mma=dw` alike.
    pub(super) fn space_limits(&self, threads: u32, warps: u32) -> Result<(), Rejection> {
        let Some(pr) = &self.pruning else {
            return Ok(());
        };
        let space = |what, value, constraint, limit| {
            Err(Rejection::Space {
                what,
                value,
                constraint,
                limit,
            })
        };
        if threads > pr.max_threads {
            return space("threads", threads, "max_threads", pr.max_threads);
        }
        if warps < pr.min_warps {
            return space("warps", warps, "min_warps", pr.min_warps);
        }
        if warps > pr.max_warps {
            return space("warps", warps, "max_warps", pr.max_warps);
        }
        Ok(())
    }

    /// Computes the per-problem facts (vector widths through the index maps, GEMM lengths).
    pub fn new(lowering: &Lowering, arch: &Arch) -> Checker {
        let p = lowering.problem;
        let mut max_len = [0u32; 4];
        let mut vectors = Vec::with_capacity(lowering.gemms.len());
        for g in &lowering.gemms {
            for d in Dim::ALL {
                max_len[d as usize] = max_len[d as usize].max(g.len(d));
            }
            vectors.push(g.operands().map(|(op, dims)| {
                let (dim, max) = vector_dim(&p, g, op, dims, ANALYSIS_CAP);
                OperandVector {
                    dim,
                    tensor: op.tensor.name(),
                    tensor_dim: dim_letters(op.tensor)[p.layout(op.tensor).innermost()],
                    max,
                }
            }));
        }
        let mut mn_major = [false; 2];
        for g in &lowering.gemms {
            for (i, (op, row)) in [(&g.a, Dim::M), (&g.b, Dim::N)].into_iter().enumerate() {
                let d = op.contiguity(&p, g, [row, Dim::K]).dim;
                mn_major[i] |= d.is_some_and(|d| d != Dim::K);
            }
        }
        let p0 = lowering.problem;
        let twins =
            [Transform::Nhwc, Transform::NhwcOut].map(|xf| match lowering.for_transform(xf) {
                Some(l) if lowering.transform == Transform::None => {
                    Ok(Box::new(Checker::new(l, arch)))
                }
                _ => Err(crate::lowering::relayout::why_not(&p0, xf)
                    .unwrap_or_else(|| "a twin lowering has no transforms of its own".into())),
            });
        Checker {
            twins,
            depthwise: DwShape::of(&p),
            transform: lowering.transform,
            mn_major,
            gemms: lowering.gemms.clone(),
            problem: p,
            arch: *arch,
            elem_bytes: p.dtype().bytes(),
            max_len,
            k_lens: lowering.gemms.iter().map(|g| g.k_len()).collect(),
            gmn: lowering
                .gemms
                .iter()
                .map(|g| [g.g_len(), g.m_len(), g.n_len()])
                .collect(),
            vectors,
            pruning: None,
        }
    }

    /// Adds a search space's pruning rules.
    pub fn with_pruning(mut self, pruning: Pruning) -> Checker {
        self.pruning = Some(pruning);
        for t in self.twins.iter_mut().flatten() {
            t.pruning = Some(pruning);
        }
        self
    }

    /// The checker that judges `cfg`: this one, or the twin of its layout transform.
    pub(super) fn judge(&self, cfg: &PerfConfig) -> Result<&Checker, Rejection> {
        if cfg.xf == self.transform {
            return Ok(self);
        }
        if self.transform != Transform::None || cfg.xf == Transform::None {
            return Err(Rejection::Transform {
                xf: cfg.xf.name(),
                why: format!("this lowering is the twin of xf={}", self.transform.name()),
            });
        }
        match &self.twins[cfg.xf as usize - 1] {
            Ok(t) => Ok(t),
            Err(why) => Err(Rejection::Transform {
                xf: cfg.xf.name(),
                why: why.clone(),
            }),
        }
    }

    /// Per sub-GEMM, per operand (A, B, C): the vector facts.
    pub fn vectors(&self) -> &[[OperandVector; 3]] {
        &self.vectors
    }

    /// The arch checked against.
    pub fn arch(&self) -> &Arch {
        &self.arch
    }

    /// The matrix instruction that tiles the warp tile, if any (the rule the code generator
    /// chooses its instruction by: [`fit::warp_instr`]).
    pub fn instr(&self, cfg: &PerfConfig) -> Option<MathInstr> {
        fit::warp_instr(
            &self.arch,
            self.problem.dtype(),
            cfg.warp_m,
            cfg.warp_n,
            cfg.block_k,
        )
    }

    /// Evaluates one rule (for a config with a layout transform, on the transform's GEMMs).
    pub fn rule(&self, rule: Rule, cfg: &PerfConfig) -> Result<(), Rejection> {
        let judge = self.judge(cfg);
        match (rule, judge) {
            (Rule::Transform, j) => j.map(|_| ()),
            // Judged by `Rule::Transform` in its place: an unavailable transform is no reason
            // for earlier rules to fail.
            (_, Err(_)) => Ok(()),
            (_, Ok(j)) if !std::ptr::eq(j, self) => j.rule_here(rule, cfg),
            _ => self.rule_here(rule, cfg),
        }
    }

    fn rule_here(&self, rule: Rule, cfg: &PerfConfig) -> Result<(), Rejection> {
        if cfg.mma == MmaPath::Depthwise {
            return self.depthwise_rule(rule, cfg);
        }
        let arch = &self.arch;
        match rule {
            Rule::NonZero => match cfg.zero_field() {
                Some(f) => Err(Rejection::ZeroField { param: f.key() }),
                None => Ok(()),
            },
            Rule::WarpTile => {
                for (wp, w, bp, b) in [
                    (
                        Field::WarpM.key(),
                        cfg.warp_m,
                        Field::BlockM.key(),
                        cfg.block_m,
                    ),
                    (
                        Field::WarpN.key(),
                        cfg.warp_n,
                        Field::BlockN.key(),
                        cfg.block_n,
                    ),
                ] {
                    if w == 0 || b % w != 0 {
                        return Err(Rejection::WarpTile {
                            warp_param: wp,
                            warp: w,
                            block_param: bp,
                            block: b,
                        });
                    }
                }
                Ok(())
            }
            Rule::Threads => {
                let warps = Self::warps(cfg);
                let threads = warps * arch.warp_size as u64;
                if threads > arch.max_threads_per_block as u64 {
                    return Err(Rejection::Threads {
                        warps: Self::sat(warps),
                        warp_size: arch.warp_size,
                        threads: Self::sat(threads),
                        max: arch.max_threads_per_block,
                        arch: arch.name,
                    });
                }
                Ok(())
            }
            Rule::Space => {
                let warps = Self::sat(Self::warps(cfg));
                self.space_limits(Self::sat(warps as u64 * arch.warp_size as u64), warps)
            }
            Rule::OversizedMN | Rule::OversizedK => {
                let Some(pr) = &self.pruning else {
                    return Ok(());
                };
                let checks: &[(Field, u32, Dim)] = if rule == Rule::OversizedMN {
                    &[
                        (Field::BlockM, cfg.block_m, Dim::M),
                        (Field::BlockN, cfg.block_n, Dim::N),
                    ]
                } else {
                    &[(Field::BlockK, cfg.block_k, Dim::K)]
                };
                for &(field, block, dim) in checks {
                    let (param, smallest) = (field.key(), pr.smallest[field]);
                    let len = self.max_len[dim as usize];
                    let limit = round_up_pow2(len).max(smallest as u64);
                    if block as u64 > limit {
                        return Err(Rejection::Oversized {
                            param,
                            block,
                            dim,
                            len,
                            limit: Self::sat(limit),
                        });
                    }
                }
                Ok(())
            }
            Rule::MmaShape if cfg.mma.is_wgmma() => match self.wgmma_misfit(cfg) {
                Some(why) => Err(Rejection::Wgmma { why }),
                None => Ok(()),
            },
            Rule::MmaShape => match self.instr(cfg) {
                Some(_) => Ok(()),
                None => Err(Rejection::MmaShape {
                    warp_m: cfg.warp_m,
                    warp_n: cfg.warp_n,
                    block_k: cfg.block_k,
                    dtype: self.problem.dtype().name(),
                    arch: arch.name,
                    shapes: self.shapes_text(),
                }),
            },
            Rule::Registers => {
                let Some(instr) = self.instr(cfg) else {
                    return Ok(());
                };
                let (acc, frag, staging) = self.register_parts(cfg, &instr);
                let overhead = self.overhead_regs();
                let total = acc + frag + staging + overhead as u64;
                if total > arch.max_regs_per_thread as u64 {
                    return Err(Rejection::Registers {
                        estimate: Self::sat(total),
                        max: arch.max_regs_per_thread,
                        acc: Self::sat(acc),
                        frag: Self::sat(frag),
                        staging: Self::sat(staging),
                        overhead,
                    });
                }
                Ok(())
            }
            Rule::SharedMemory => {
                if cfg.mma.is_wgmma() && cfg.lds != LdsLayout::Swizzled {
                    return Err(Rejection::Wgmma {
                        why: "lds = pad (the descriptors describe the 128-byte swizzle: lds = swz)"
                            .into(),
                    });
                }
                let in_flight = cfg.mma == MmaPath::WgmmaInFlight;
                if let Err(why) = fit::wgmma_pipeline(in_flight, cfg.stages) {
                    return Err(Rejection::Wgmma {
                        why: why.to_string(),
                    });
                }
                if cfg.lds == LdsLayout::Swizzled {
                    // The XOR swizzle permutes 16-byte chunks within a row.
                    let row_bytes = cfg.block_k as u64 * self.elem_bytes as u64;
                    if !row_bytes.is_multiple_of(16) || !(row_bytes / 16).is_power_of_two() {
                        return Err(Rejection::SwizzleRow {
                            row_bytes: Self::sat(row_bytes),
                        });
                    }
                }
                let (bytes, padding) = self.lds_bytes(cfg);
                if bytes > arch.smem_per_block as u64 {
                    return Err(Rejection::SharedMemory {
                        bytes: Self::sat(bytes),
                        padding: Self::sat(padding),
                        max: arch.smem_per_block,
                    });
                }
                Ok(())
            }
            Rule::SplitK => {
                if cfg.split_k <= 1 {
                    return Ok(());
                }
                let direction = self.problem.direction();
                if direction != Direction::BwdWeight {
                    return Err(Rejection::SplitKDirection {
                        split_k: cfg.split_k,
                        direction: direction.name(),
                    });
                }
                for (gemm, &k_len) in self.k_lens.iter().enumerate() {
                    let per_split = k_len / cfg.split_k;
                    if per_split < cfg.block_k {
                        return Err(Rejection::SplitKTooShort {
                            split_k: cfg.split_k,
                            k_len,
                            per_split,
                            block_k: cfg.block_k,
                            gemm: gemm as u32,
                        });
                    }
                }
                Ok(())
            }
            Rule::Reduction => self.reduction(cfg),
            Rule::Raster => {
                let Some(pr) = &self.pruning else {
                    return Ok(());
                };
                let grid_m = self.max_len[Dim::M as usize].div_ceil(cfg.block_m.max(1));
                let limit = round_up_pow2(grid_m).max(pr.smallest[Field::Raster] as u64);
                if cfg.raster as u64 > limit {
                    return Err(Rejection::Raster {
                        raster: cfg.raster,
                        grid_m,
                    });
                }
                Ok(())
            }
            Rule::Tma => self.tma(cfg, [true, true]).map(|_| ()),
            Rule::Transform => Ok(()),
            Rule::VectorA => {
                self.vector(cfg, 0)?;
                self.tma_cp_width(cfg, 0)
            }
            Rule::VectorB => {
                self.vector(cfg, 1)?;
                self.tma_cp_width(cfg, 1)
            }
            Rule::VectorC => self.vector(cfg, 2),
            Rule::Persistent => self.persistent(cfg),
            Rule::Cluster => self.cluster(cfg),
            Rule::Epilogue => self.epilogue(cfg),
        }
    }

    /// [`Self::resources`] of a config of `mma=dw` (no matrix instruction: `instr` is the
    /// arch's first, for reports only).
    fn depthwise_resources(&self, cfg: &PerfConfig, shape: &DwShape) -> Resources {
        let arch = &self.arch;
        let tile = DwTile::of(cfg);
        let threads = tile.threads();
        let registers = shape.registers(tile.vec, tile.rows, tile.cols);
        let lds = shape.filter_bytes(tile.channels);
        let by_lds = (arch.smem_per_sm as u64)
            .checked_div(lds)
            .unwrap_or(u64::MAX);
        let by_regs = arch.regs_per_sm as u64 / (registers as u64 * threads as u64).max(1);
        let widest = shape.widest_vec(arch.max_vector_bytes);
        Resources {
            warps: threads.div_ceil(arch.warp_size),
            threads,
            instr: arch.math(self.problem.dtype())[0],
            lds_bytes: Self::sat(lds),
            registers,
            blocks_per_cu: Self::sat(by_lds.min(by_regs)),
            max_vector: [widest, 1, widest],
        }
    }

    fn shapes_text(&self) -> String {
        fit::warp_rule_text(&self.arch, self.problem.dtype())
    }

    fn block_along(cfg: &PerfConfig, d: Dim) -> (&'static str, u32) {
        match d {
            Dim::M => (Field::BlockM.key(), cfg.block_m),
            Dim::N => (Field::BlockN.key(), cfg.block_n),
            Dim::K => (Field::BlockK.key(), cfg.block_k),
            Dim::G => ("g", 1),
        }
    }

    /// Vector width of operand `i` (0 = A, 1 = B, 2 = C).
    fn vector(&self, cfg: &PerfConfig, i: usize) -> Result<(), Rejection> {
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

    /// Runs every rule in order; the first failure is the answer.
    pub fn check(&self, cfg: &PerfConfig) -> Result<Resources, Rejection> {
        for rule in Rule::ALL {
            self.rule(rule, cfg)?;
        }
        Ok(self.resources(cfg))
    }

    /// The resources of a config (meaningful once it passed the rules).
    pub fn resources(&self, cfg: &PerfConfig) -> Resources {
        match self.judge(cfg) {
            Ok(j) if !std::ptr::eq(j, self) => j.resources(cfg),
            _ => self.resources_here(cfg),
        }
    }

    fn resources_here(&self, cfg: &PerfConfig) -> Resources {
        let arch = &self.arch;
        if let (MmaPath::Depthwise, Ok(shape)) = (cfg.mma, &self.depthwise) {
            return self.depthwise_resources(cfg, shape);
        }
        let warps = Self::warps(cfg);
        let threads = warps * arch.warp_size as u64;
        let instr = self
            .instr(cfg)
            .unwrap_or(arch.math(self.problem.dtype())[0]);
        let (acc, frag, staging) = self.register_parts(cfg, &instr);
        let registers = acc + frag + staging + self.overhead_regs() as u64;
        // ld=ws: the producer warpgroup too, and the whole pool at entry (one block an SM).
        let (threads, registers) = match self.ws_block(cfg) {
            Some(w) => (w.threads() as u64, w.entry_regs as u64),
            None => (threads, registers),
        };
        let (lds, _) = self.lds_bytes(cfg);
        let by_lds = (arch.smem_per_sm as u64)
            .checked_div(lds)
            .unwrap_or(u64::MAX);
        let by_regs = arch.regs_per_sm as u64 / (registers * threads).max(1);
        let byte_cap = arch.max_vector_bytes / self.elem_bytes;
        let max_vector = std::array::from_fn(|i| {
            self.vectors
                .iter()
                .map(|ops| ops[i].max.width)
                .min()
                .unwrap_or(1)
                .min(byte_cap)
        });
        Resources {
            warps: Self::sat(warps),
            threads: Self::sat(threads),
            instr,
            lds_bytes: Self::sat(lds),
            registers: Self::sat(registers),
            blocks_per_cu: Self::sat(by_lds.min(by_regs)),
            max_vector,
        }
    }
}
