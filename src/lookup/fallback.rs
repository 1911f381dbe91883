//! The untuned fallback (issue 16 item 5): for a problem with no exact entry, the configs of
//! the tuned problems nearest to it by the features that predict speed, plus the shipped quick
//! list, all re-checked for legality and ranked by the cost model *for the problem at hand*.
//!
//! The database's own nearest search compares raw sizes (n, c, k, H, W); two problems with the
//! same GEMM can differ a lot there (a batch of 32 at 14×14 is one of 8 at 28×28). Here the
//! distance is over what the kernel sees: the largest GEMM's M, N and K, the filter, the
//! stride, the channels per group, the layouts and how many GEMMs the lowering makes. A
//! neighbour's winner carries measured evidence, a quick-list config or the model's own pick
//! only the model's say-so, so such a guess must be predicted [`GUESS_MARGIN`] faster to be
//! preferred. (Scaling a neighbour's predictions by the model's error on its winner, and a
//! correction of the model learned from tuning journals, were both measured and made the
//! fallback worse: BENCHMARKS.md, sessions 19 and 20.)
//!
//! A neighbour's tile fits *its* GEMM: a bwd-weight 3×3 c64 winner tiles N = 576 with
//! `bn=192` (three full tiles); on a 1×1 c256 problem (N = 256) the same tile leaves its second
//! column of blocks two-thirds empty. So each neighbour's config is also re-tiled, its block
//! and warp tile and stages taken from the search space and every other field kept, and a
//! re-tiled config replaces the neighbour's own when the model predicts it [`RETILE_MARGIN`]
//! faster: what the neighbour measured (load path, reduction, widths) stays, the tile is
//! fitted to this GEMM. Only the nearest neighbours are re-tiled ([`RETILE_BAND`]).
//!
//! f16 and bf16 problems lend each other configs (one [`STRUCTURE`] step apart): the element
//! size and the MMA shapes are the same. The cost model's own pick competes too, as the guess
//! with the least evidence: the only source of a kernel kind no neighbour was tuned with.

use crate::arch::Arch;
use crate::config::{Field, PerfConfig};
use crate::db::{Fingerprint, Layered};
use crate::legality;
use crate::lowering::{lower, Lowering};
use crate::problem::{ConvProblem, DType, Tensor};
use crate::search::{CostArch, CostModel};

mod variants;
pub use variants::{field_values, split_variants, width_variants, TileValues};

/// How many nearest tuned problems contribute their configs.
pub const NEIGHBOURS: usize = 8;
/// A guess replaces a pick with more evidence behind it (a neighbour's config, a quick-list
/// one over the model's own pick) only when the cost model predicts it at least this much
/// faster (time ratio).
pub const GUESS_MARGIN: f64 = 0.85;
/// A neighbour's config re-tiled for this problem replaces the config as tuned only when the
/// cost model predicts it at least this much faster (time ratio): the tuned tile carries a
/// measurement, the re-tiled one the model's say-so.
pub const RETILE_MARGIN: f64 = 0.85;
/// How far a re-tiling may move a tile side from the neighbour's: at most this factor either way.
pub const RETILE_REACH: u32 = 4;
/// Only the neighbours at most this much farther than the nearest are re-tiled: a re-tiled
/// config keeps its neighbour's load path, reduction and pipeline, which a problem of another
/// filter or stride measured for itself, not for this one. (Session 18's holdout: a 3×3 layer
/// took a 1×1 neighbour's `cp.async` config re-tiled to 256×192 and ran at 0.78× of tuned;
/// session 19's leave-one-out over the shipped database: 0.820 → 0.827 geomean, the 8-entry
/// holdout's minimum 0.789 → 0.822.)
pub const RETILE_BAND: f64 = STRUCTURE;
/// The fields a re-tiling changes: the block tile, the warp tile (which must divide it) and the
/// pipeline depth (which the tile's shared memory bounds).
pub const TILE_FIELDS: [Field; 5] = [
    Field::BlockM,
    Field::BlockN,
    Field::WarpM,
    Field::WarpN,
    Field::Stages,
];
/// Penalty per differing structural feature (filter y/x, stride h/w, GEMM count): a different
/// structure changes the access pattern more than a factor 2 in one GEMM size.
const STRUCTURE: f64 = 2.0;
/// Penalty for different tensor layouts (vector widths and strides change).
const LAYOUT: f64 = 4.0;

/// The features of a problem that predict which configs are fast for it.
#[derive(Debug, Clone, PartialEq)]
pub struct Features {
    /// log2 of the largest GEMM's M, N, K.
    gemm: [f64; 3],
    /// log2 of input and output channels per group.
    per_group: [f64; 2],
    /// Filter y, x; stride h, w; number of GEMMs.
    structure: [u32; 5],
    /// The three tensors' layouts, as text (compared for equality).
    layouts: [String; 3],
    /// The element type (f16 and bf16 problems borrow each other's configs).
    dtype: DType,
}

impl Features {
    /// The features of a lowered problem.
    pub fn of(l: &Lowering) -> Features {
        let p = &l.problem;
        let big = l.gemms.iter().max_by(|a, b| {
            let f = |g: &crate::lowering::Gemm| {
                f64::from(g.m_len()) * f64::from(g.n_len()) * f64::from(g.k_len())
            };
            f(a).total_cmp(&f(b))
        });
        let log = |v: u32| f64::from(v.max(1)).log2();
        let gemm = big.map_or([0.0; 3], |g| {
            [log(g.m_len()), log(g.n_len()), log(g.k_len())]
        });
        let s = p.sizes();
        Features {
            gemm,
            per_group: [log(p.c_per_group()), log(p.k_per_group())],
            structure: [s.y, s.x, s.stride[0], s.stride[1], l.gemms.len() as u32],
            layouts: Tensor::ALL.map(|t| format!("{:?}", p.layout(t))),
            dtype: p.dtype(),
        }
    }

    /// How far apart two problems are for choosing configs: a factor 2 in one GEMM size costs 1,
    /// in channels per group 0.5; each differing structure feature [`STRUCTURE`], layouts
    /// [`LAYOUT`].
    pub fn distance(&self, other: &Features) -> f64 {
        let mut d = 0.0;
        for i in 0..3 {
            d += (self.gemm[i] - other.gemm[i]).abs();
        }
        for i in 0..2 {
            d += 0.5 * (self.per_group[i] - other.per_group[i]).abs();
        }
        for i in 0..5 {
            d += STRUCTURE * f64::from(u8::from(self.structure[i] != other.structure[i]));
        }
        if self.layouts != other.layouts {
            d += LAYOUT;
        }
        if self.dtype != other.dtype {
            d += STRUCTURE;
        }
        d
    }
}

/// One tuned problem near the one asked for.
#[derive(Debug, Clone)]
pub struct Neighbour {
    /// Its key.
    pub key: String,
    /// Its winning config (for a deterministic lookup without atomics:
    /// [`PerfConfig::without_atomics`]).
    pub config: PerfConfig,
    /// [`Features::distance`] from the problem asked for.
    pub distance: f64,
}

/// The fallback's pick and where it came from.
#[derive(Debug, Clone)]
pub enum Pick {
    /// A neighbour's config, its vector widths possibly adapted to this problem
    /// ([`width_variants`]) and its tile re-fitted ([`TileValues`]), with the model's time.
    Neighbour {
        /// The tuned problem it comes from (with its winner as stored).
        from: Neighbour,
        /// The config picked: the winner, or a variant of it with other widths or tile.
        config: PerfConfig,
        /// The model's time for it, µs.
        us: f64,
    },
    /// A config no measurement stands behind, with the model's time for it.
    Guess {
        /// The config.
        config: PerfConfig,
        /// The model's time for it, µs.
        us: f64,
        /// Where it comes from.
        from: Guess,
    },
}

impl Pick {
    /// The config picked.
    pub fn config(&self) -> &PerfConfig {
        match self {
            Pick::Neighbour { config, .. } | Pick::Guess { config, .. } => config,
        }
    }

    /// The model's time for the pick, µs (for a neighbour's, calibrated by it).
    pub fn us(&self) -> f64 {
        match self {
            Pick::Neighbour { us, .. } | Pick::Guess { us, .. } => *us,
        }
    }
}

/// Where a config without a measurement behind it comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Guess {
    /// The shipped quick list.
    QuickList,
    /// The cost model's own first pick in the search space ([`super::heuristic_in`]): the
    /// only source of a kernel kind no neighbour was tuned with (a depthwise problem among
    /// grouped ones borrows their dense-MMA configs and ran 2.6× slower than its `mma=dw`
    /// winner).
    Model,
    /// The cost model's next picks after its first ([`super::heuristic_picks`]): never the
    /// pick nor a source's one config, only what fills a list the other sources leave short.
    ModelNext,
    /// The cost model's first pick among the vendor space's kernels alone ([`super::ModelPicks`]):
    /// always in a list of two or more, last where the list is full. The model ranks the Hopper
    /// paths less surely than the portable ones (session 36, H100: an `ld=ws` pick predicted at
    /// 26 µs ran 179), and over 109 held-out problems keeping this pick beside the whole
    /// search's raised the fastest of eight from 0.960 to 0.968 of tuned, its minimum from
    /// 0.61 to 0.70, those below 0.8 from 7 to 5 (BENCHMARKS, session 36).
    ModelVendor,
}

/// The fields where `picked` differs from `tuned`, as `key=value` for each (`"bn=64 st=8"`,
/// `"bn=192 st=7"`); both empty when they are the same config.
pub fn differences(tuned: &PerfConfig, picked: &PerfConfig) -> (String, String) {
    let changed: Vec<Field> = Field::ALL
        .into_iter()
        .filter(|&f| tuned.code(f) != picked.code(f))
        .collect();
    let text = |c: &PerfConfig| {
        changed
            .iter()
            .map(|&f| format!("{}={}", f.key(), f.value_text(c.code(f))))
            .collect::<Vec<_>>()
            .join(" ")
    };
    (text(picked), text(tuned))
}

/// The [`NEIGHBOURS`] nearest tuned problems of the same direction and type (trusted entries
/// only; those tuned on the fingerprint's device, else each database's home device, where
/// there are any, else every device's, as [`Layered::lookup`] takes them), nearest first.
pub fn neighbours(
    problem: &ConvProblem,
    arch: &Arch,
    layers: &Layered<'_>,
    fingerprint: Option<&Fingerprint>,
) -> Vec<Neighbour> {
    let me = Features::of(&lower(problem));
    // This GPU's (or the home device's) neighbours, and (where it has none) every other GPU's.
    let (mut found, mut elsewhere): (Vec<Neighbour>, Vec<Neighbour>) = (Vec::new(), Vec::new());
    for db in [layers.user, layers.system].into_iter().flatten() {
        if db.arch() != arch.name {
            continue;
        }
        let device = db.device_for(fingerprint);
        for (i, e) in db.entries().iter().enumerate() {
            if !db.seal_at(i).trusted() {
                continue;
            }
            let Ok(other) = e.problem.parse::<ConvProblem>() else {
                continue;
            };
            if other.direction() != problem.direction()
                || other.dtype().bytes() != problem.dtype().bytes()
                || other.key() == problem.key()
            {
                continue;
            }
            let Ok(config) = e.config.parse::<PerfConfig>() else {
                continue;
            };
            let here = db.device_id(&e.fingerprint) == device;
            let n = Neighbour {
                key: e.problem.clone(),
                config,
                distance: me.distance(&Features::of(&lower(&other))),
            };
            if here { &mut found } else { &mut elsewhere }.push(n);
        }
    }
    if found.is_empty() {
        found = elsewhere;
    }
    found.sort_by(|a, b| {
        a.distance
            .total_cmp(&b.distance)
            .then_with(|| a.key.cmp(&b.key))
    });
    found.truncate(NEIGHBOURS);
    found
}

/// What a neighbour's config is fitted to the problem with: its element size and the arch's
/// widest access (the [`width_variants`]), the split-K values (the [`split_variants`]).
#[derive(Debug, Clone, Copy)]
struct Fit<'a> {
    elem: u32,
    max_bytes: u32,
    splits: &'a [u32],
    /// A backward-weight problem, where an `mma=dw` neighbour keeps the widths it was
    /// tuned with wherever they are legal. In session 26's call 4 the model preferred `va=8`
    /// where every winner used 1 or 2, its first pick among the measured dw configs running at
    /// 0.58–0.97 of the fastest. Session 27's recalibration (contended atomics, coalescing by
    /// the block's channels) brought its width choice within a tile from 0.81 to 0.95 of the
    /// fastest on the same timings; whether it now matches the neighbours' measured widths
    /// has not been timed, so they are still kept. Such a neighbour's tile is offered with its
    /// sums as partials too (`red=fixup`, [`PerfConfig::without_atomics`]): on the H200 the
    /// partials ran 1.23× faster than the atomics on the same 30 tiles (session 28, call 1),
    /// and the model ranks the two.
    bwd_weight: bool,
}

impl Fit<'_> {
    /// `c` with the widths it may be fitted with ([`width_variants`], or only its own, then as
    /// partials).
    fn widths(&self, c: &PerfConfig, legal: bool) -> Vec<PerfConfig> {
        if self.bwd_weight && legal && c.mma == crate::config::MmaPath::Depthwise {
            let partials = c.without_atomics(crate::problem::Direction::BwdWeight);
            let mut v = vec![*c];
            v.extend((partials != *c).then_some(partials));
            v
        } else {
            width_variants(c, self.elem, self.max_bytes)
        }
    }
}

/// The fastest by `score` of (neighbour, config) pairs given nearest neighbour first, each
/// config followed by its width and split variants: ties go to the nearer problem, then to the
/// wider vectors (a neighbour's narrow widths are often ones its TMA-loaded operand never used;
/// here that operand may be copied with them: session 9's holdout took a stride-1 neighbour's
/// `va=2` for a strided bwd-data problem, whose phases copy the filter with `cp.async`, and ran
/// 2.8× slower than tuned; the model, which hides a producer's copies behind the math, had the
/// two widths level), then to the config as given.
fn fastest<'n>(
    pairs: impl Iterator<Item = (&'n Neighbour, PerfConfig)>,
    fit: Fit<'_>,
    score: &dyn Fn(&PerfConfig) -> Option<f64>,
) -> Option<(&'n Neighbour, PerfConfig, f64)> {
    let wider =
        |a: &PerfConfig, b: &PerfConfig| b.vec_a + b.vec_b + b.vec_c > a.vec_a + a.vec_b + a.vec_c;
    pairs
        .flat_map(|(n, c)| {
            fit.widths(&c, score(&c).is_some())
                .into_iter()
                .flat_map(|w| split_variants(&w, fit.splits))
                .map(move |c| (n, c))
        })
        .filter_map(|(n, c)| score(&c).map(|t| (n, c, t)))
        .reduce(|a, b| {
            let same_neighbour = std::ptr::eq(a.0, b.0);
            if b.2 < a.2 || (b.2 == a.2 && same_neighbour && wider(&a.1, &b.1)) {
                b
            } else {
                a
            }
        })
}

/// The model's fastest tile for `n`'s config ([`TileValues::variants`]; its widths as tuned,
/// so that the walk stays one tile product per neighbour) that may run here, with its time:
/// what re-tiling starts from, before the tile's widths are fitted.
fn best_tile<'n>(
    n: &'n Neighbour,
    tiles: &TileValues,
    score: &dyn Fn(&PerfConfig) -> Option<f64>,
) -> Option<(&'n Neighbour, PerfConfig, f64)> {
    tiles
        .variants(&n.config)
        .into_iter()
        .filter_map(|c| score(&c).map(|t| (n, c, t)))
        .reduce(|a, b| if b.2 < a.2 { b } else { a })
}

/// The fallback's `most` best configs for `problem`, best first: the neighbours' configs (each
/// with its [`width_variants`], and re-tiled along `tiles`) and the guesses ranked by the cost
/// model, keeping only configs that are legal here and pass `keep` (e.g. inside a search
/// space). First the pick (see the module doc: measured evidence before guesses, a re-tile or
/// a guess preferred only by a margin), then one config from each other source (each
/// neighbour's winner with its widths fitted, the re-tiled one, the best quick-list config,
/// the model's own), by the model's time, a guess's divided by [`GUESS_MARGIN`]; where those
/// are fewer than `most`, the rest of the quick list and each neighbour's re-tile, then the
/// model's next picks ([`Guess::ModelNext`]). The list is
/// what a consumer times on first use to pick among (as cuDNN's find does among its
/// heuristics' algorithms) and what a tuning measures first: with each shipped entry held
/// out, the fastest of the first sixteen ran at 0.986 of tuned speed, of eight 0.960
/// ([`super::FIRST_USE_CANDIDATES`]; BENCHMARKS, session 37).
pub fn ranked(
    problem: &ConvProblem,
    arch: &Arch,
    near: &[Neighbour],
    guesses: &[(PerfConfig, Guess)],
    tiles: &TileValues,
    keep: &dyn Fn(&PerfConfig) -> bool,
    most: usize,
) -> Vec<Pick> {
    let l = lower(problem);
    let model = CostModel::new(&l, CostArch::from_arch(arch, problem.dtype()));
    // One checker for every config scored here: building one runs the width analysis.
    let checker = legality::Checker::new(&l, arch);
    let usable = |c: &PerfConfig| keep(c) && checker.check(c).is_ok();
    let time = |c: &PerfConfig| model.estimate(c).time_us;
    let elem = problem.dtype().bytes();
    // A config's predicted time, if it may run here.
    let score = |c: &PerfConfig| Some(time(c)).filter(|t| usable(c) && t.is_finite());
    let fit = Fit {
        elem,
        max_bytes: arch.max_vector_bytes,
        splits: &tiles.splits,
        bwd_weight: problem.direction() == crate::problem::Direction::BwdWeight,
    };
    let d_min = near
        .iter()
        .map(|n| n.distance)
        .fold(f64::INFINITY, f64::min);
    // Each neighbour's winner as tuned, its widths fitted (nearest first): a source of its own
    // in the list, and the fastest of them is the config as tuned (ties to the nearer problem,
    // as `fastest` over all of them would break them).
    let own: Vec<_> = near
        .iter()
        .filter_map(|n| fastest(std::iter::once((n, n.config)), fit, &score))
        .collect();
    let as_tuned = own
        .iter()
        .copied()
        .reduce(|a, b| if b.2 < a.2 { b } else { a });
    // Re-tiled: the model's fastest tile among the nearest neighbours' ([`best_tile`]), then
    // that tile's width variants.
    let retiled = near
        .iter()
        .filter(|n| n.distance <= d_min + RETILE_BAND)
        .filter_map(|n| best_tile(n, tiles, &score))
        .reduce(|a, b| if b.2 < a.2 { b } else { a })
        .and_then(|(n, c, _)| fastest(std::iter::once((n, c)), fit, &score));
    let best_near = match (as_tuned, retiled) {
        (Some(a), Some(r)) if r.2 < RETILE_MARGIN * a.2 => Some(r),
        (None, r) => r,
        (a, _) => a,
    };
    let neighbour = |(n, c, us): (&Neighbour, PerfConfig, f64)| Pick::Neighbour {
        from: n.clone(),
        config: c,
        us,
    };
    // Less evidence, a larger predicted gain to be preferred: a neighbour's winner was
    // measured on a problem like this one, a quick-list config on a set of recorded problems,
    // the model's own pick nowhere.
    let mut pick = best_near.map(neighbour);
    // The guesses of some tiers that may run here, with the model's times, in their order.
    let guessed = |tiers: &[Guess]| -> Vec<Pick> {
        guesses
            .iter()
            .filter(|g| tiers.contains(&g.1))
            .filter_map(|&(c, from)| {
                score(&c).map(|us| Pick::Guess {
                    config: c,
                    us,
                    from,
                })
            })
            .collect()
    };
    let mut best_guesses = Vec::new();
    for tier in [Guess::QuickList, Guess::Model] {
        let best = guessed(&[tier])
            .into_iter()
            .min_by(|a, b| a.us().total_cmp(&b.us()));
        best_guesses.extend(best.clone());
        pick = match (pick, best) {
            (Some(p), Some(g)) if g.us() < GUESS_MARGIN * p.us() => Some(g),
            (None, g) => g,
            (p, _) => p,
        };
    }
    let Some(pick) = pick.filter(|_| most > 0) else {
        return Vec::new();
    };
    if most == 1 {
        return vec![pick];
    }
    // The other sources, one config each, by the model's time with a guess's handicap.
    let mut others: Vec<Pick> = own
        .into_iter()
        .chain(retiled)
        .map(neighbour)
        .chain(best_guesses)
        .collect();
    let handicapped = |p: &Pick| match p {
        Pick::Neighbour { us, .. } => *us,
        Pick::Guess { us, .. } => us / GUESS_MARGIN,
    };
    others.sort_by(|a, b| handicapped(a).total_cmp(&handicapped(b)));
    // One kernel once: configs that differ only in widths it does not read are one.
    let mut out = vec![pick];
    let offer = |out: &mut Vec<Pick>, ps: Vec<Pick>| {
        for p in ps {
            if out.len() >= most {
                break;
            }
            if !out
                .iter()
                .any(|q| checker.same_kernel(q.config(), p.config()))
            {
                out.push(p);
            }
        }
    };
    offer(&mut out, others);
    // Fewer sources than `most` (few neighbours, a short quick list): the rest of the quick
    // list and each neighbour's own fastest re-tile, by the same handicapped time, then the
    // model's next picks ([`Guess::ModelNext`]). A consumer
    // times the fastest of the list, so more configs only add choices: on the H200's
    // leave-one-out (session 32) the fastest of a full list of eight reached 0.981 of tuned,
    // of a list cut to three to seven by too few sources 0.73-0.93.
    if out.len() < most {
        let retiles = near
            .iter()
            .filter_map(|n| best_tile(n, tiles, &score))
            .filter_map(|(n, c, _)| fastest(std::iter::once((n, c)), fit, &score));
        let mut more: Vec<Pick> = retiles
            .map(neighbour)
            .chain(guessed(&[Guess::QuickList, Guess::Model]))
            .collect();
        more.sort_by(|a, b| handicapped(a).total_cmp(&handicapped(b)));
        offer(&mut out, more);
        // Last, with nothing measured behind them, the model's next picks in its own order.
        offer(&mut out, guessed(&[Guess::ModelNext]));
    }
    // The vendor space's own first pick, in the last place where the list has no room.
    if let Some(v) = guessed(&[Guess::ModelVendor]).into_iter().next() {
        if !out
            .iter()
            .any(|q| checker.same_kernel(q.config(), v.config()))
        {
            if out.len() >= most {
                out.pop();
            }
            out.push(v);
        }
    }
    out
}

#[cfg(test)]
mod tests;
