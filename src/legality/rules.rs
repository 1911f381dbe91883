//! The rules, one at a time, over facts computed once per (lowering, arch): the enumerator
//! evaluates each rule as soon as the loop that fixes its parameters is entered, `check` runs
//! them all in the same order, so both attribute a rejection to the same rule.

use super::rejection::Rejection;
use crate::arch::{fit, Arch, MathInstr};
use crate::config::{Field, MmaPath, PerfConfig, Transform};
use crate::lowering::depthwise::DwShape;
use crate::lowering::{Dim, Gemm, Lowering};
use crate::problem::ConvProblem;

mod cluster;
mod depthwise;
mod epilogue;
mod persistent;
mod reduction;
mod resources;
mod shape;
mod space;
mod tma;
mod vectors;

pub use resources::Resources;
pub use space::Pruning;
pub use vectors::OperandVector;

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
    /// Stream-K's cut (`cut`): `cut=aligned` with `red=stream` only, where it changes the
    /// schedule.
    Cut,
}

impl Rule {
    /// All rules in evaluation order.
    pub const ALL: [Rule; 21] = [
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
        Rule::Cut,
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
            Rule::Cut => Field::Cut,
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
            Rule::Cut => "stream-K cut",
        }
    }
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

impl Checker {
    /// Computes the per-problem facts (vector widths through the index maps, GEMM lengths).
    pub fn new(lowering: &Lowering, arch: &Arch) -> Checker {
        let p = lowering.problem;
        let mut max_len = [0u32; 4];
        let mut vectors = Vec::with_capacity(lowering.gemms.len());
        for g in &lowering.gemms {
            for d in Dim::ALL {
                max_len[d as usize] = max_len[d as usize].max(g.len(d));
            }
            vectors.push(
                g.operands()
                    .map(|(op, dims)| OperandVector::of(&p, g, op, dims)),
            );
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

    /// Rule `rule` on this checker's own sub-GEMMs. Each rule's body lives with the idea it
    /// checks (the submodules of this one); this match is only the dispatch.
    fn rule_here(&self, rule: Rule, cfg: &PerfConfig) -> Result<(), Rejection> {
        if cfg.mma == MmaPath::Depthwise {
            return self.depthwise_rule(rule, cfg);
        }
        match rule {
            Rule::NonZero => match cfg.zero_field() {
                Some(f) => Err(Rejection::ZeroField { param: f.key() }),
                None => Ok(()),
            },
            Rule::WarpTile => Self::warp_tile(cfg),
            Rule::Threads => self.threads(cfg),
            Rule::Space => self.space(cfg),
            Rule::OversizedMN => self.oversized(cfg, true),
            Rule::OversizedK => self.oversized(cfg, false),
            Rule::MmaShape => self.mma_shape(cfg),
            Rule::Registers => self.registers(cfg),
            Rule::SharedMemory => self.shared_memory(cfg),
            Rule::SplitK => self.split_k(cfg),
            Rule::Reduction => self.reduction(cfg),
            Rule::Raster => self.raster(cfg),
            Rule::Tma => self.tma(cfg, [true, true]).map(|_| ()),
            Rule::Transform => Ok(()),
            Rule::VectorA => {
                self.vector(cfg, 0)?;
                self.tma_cp_width(cfg, 0)?;
                self.unread_width(cfg, 0)
            }
            Rule::VectorB => {
                self.vector(cfg, 1)?;
                self.tma_cp_width(cfg, 1)?;
                self.unread_width(cfg, 1)
            }
            Rule::VectorC => self.vector(cfg, 2),
            Rule::Persistent => self.persistent(cfg),
            Rule::Cluster => self.cluster(cfg),
            // `vc` is read or not by the epilogue (`ep`, the innermost loop): judged here.
            Rule::Epilogue => {
                self.epilogue(cfg)?;
                self.unread_width(cfg, 2)
            }
            Rule::Cut => self.cut(cfg),
        }
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
}
