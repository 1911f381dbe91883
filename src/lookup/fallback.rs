//! The untuned fallback (issue 16 item 5): for a problem with no exact entry, the configs of
//! the tuned problems nearest to it by the features that predict speed, plus the shipped quick
//! list, all re-checked for legality and ranked by the cost model *for the problem at hand*.
//!
//! The database's own nearest search compares raw sizes (n, c, k, H, W); two problems with the
//! same GEMM can differ a lot there (a batch of 32 at 14×14 is one of 8 at 28×28). Here the
//! distance is over what the kernel sees: the largest GEMM's M, N and K, the filter, the
//! stride, the channels per group, the layouts and how many GEMMs the lowering makes. A
//! neighbour's winner carries measured evidence, a quick-list config only the model's say-so,
//! so a quick-list config must be predicted [`QUICK_MARGIN`] faster to be preferred.
//!
//! A neighbour's tile fits *its* GEMM: a bwd-weight 3×3 c64 winner tiles N = 576 with
//! `bn=192` (three full tiles); on a 1×1 c256 problem (N = 256) the same tile leaves its second
//! column of blocks two-thirds empty. So each neighbour's config is also re-tiled, its block
//! and warp tile and stages taken from the search space and every other field kept, and a
//! re-tiled config replaces the neighbour's own when the model predicts it [`RETILE_MARGIN`]
//! faster: what the neighbour measured (load path, reduction, widths) stays, the tile is
//! fitted to this GEMM.

use crate::arch::Arch;
use crate::config::{Field, PerfConfig};
use crate::db::{Fingerprint, Layered};
use crate::legality;
use crate::lowering::{lower, Lowering};
use crate::problem::{ConvProblem, Tensor};
use crate::search::{CostArch, CostModel};
use crate::space::SearchSpace;

/// How many nearest tuned problems contribute their configs.
pub const NEIGHBOURS: usize = 8;
/// A quick-list config replaces the best neighbour config only when the cost model predicts
/// it at least this much faster (time ratio).
pub const QUICK_MARGIN: f64 = 0.85;
/// A neighbour's config re-tiled for this problem replaces the config as tuned only when the
/// cost model predicts it at least this much faster (time ratio): the tuned tile carries a
/// measurement, the re-tiled one the model's say-so.
pub const RETILE_MARGIN: f64 = 0.85;
/// How far a re-tiling may move a tile side from the neighbour's: at most this factor either way.
pub const RETILE_REACH: u32 = 4;
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
        d
    }
}

/// One tuned problem near the one asked for.
#[derive(Debug, Clone)]
pub struct Neighbour {
    /// Its key.
    pub key: String,
    /// Its winning config.
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
    /// A quick-list config, with the model's time for it.
    Quick(PerfConfig, f64),
}

/// The vector widths a config may take on a problem of `elem`-byte elements: powers of two up
/// to `max_bytes` (the arch's widest vector access, [`Arch::max_vector_bytes`]).
fn widths(elem: u32, max_bytes: u32) -> impl Iterator<Item = u32> + Clone {
    let most = (max_bytes / elem.max(1)).max(1);
    std::iter::successors(Some(1u32), |w| w.checked_mul(2)).take_while(move |&w| w <= most)
}

/// `c` with every combination of vector widths (A, B, C), `c` itself first. A neighbour's
/// widths are what *its* tensors allowed (a channel count, a padding, an alignment): the
/// same tile on this problem may load wider, or need narrower loads to be legal at all.
/// Session 7's holdout: a fwd 1×1 c256→64 56×56 problem took the `va=4` of a 3×3 c64 winner
/// and ran at 0.58× of its tuned config, which loads A 8 wide.
pub fn width_variants(c: &PerfConfig, elem: u32, max_bytes: u32) -> Vec<PerfConfig> {
    let mut out = vec![*c];
    for vec_a in widths(elem, max_bytes) {
        for vec_b in widths(elem, max_bytes) {
            for vec_c in widths(elem, max_bytes) {
                let v = PerfConfig {
                    vec_a,
                    vec_b,
                    vec_c,
                    ..*c
                };
                if v != *c {
                    out.push(v);
                }
            }
        }
    }
    out
}

/// The values a re-tiling may give each of [`TILE_FIELDS`]: every value of the field in any of
/// `spaces` (the search spaces a tuning of the problem would enumerate).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TileValues([Vec<u32>; TILE_FIELDS.len()]);

impl TileValues {
    /// The union of the spaces' lists, each sorted and without repeats.
    pub fn of(spaces: &[&SearchSpace]) -> TileValues {
        TileValues(TILE_FIELDS.map(|f| {
            let mut v: Vec<u32> = spaces.iter().flat_map(|s| s.params.codes(f)).collect();
            v.sort_unstable();
            v.dedup();
            v
        }))
    }

    /// No re-tiling: only the neighbours' own tiles.
    pub fn none() -> TileValues {
        TileValues(Default::default())
    }

    /// `c` with every combination of tile values near its own, `c` itself excluded: each block
    /// and warp tile side within a factor [`RETILE_REACH`] of `c`'s (the neighbour measured
    /// tiles of about that size; the model alone is not trusted across scales: on leave-one-out
    /// over the shipped database, unbounded re-tiling took a 64×16 tile for a 1×1 layer whose
    /// neighbour ran 128×192), any stages. Combinations that are no config (a code outside a
    /// field's domain) are skipped. Legality is the caller's.
    pub fn variants(&self, c: &PerfConfig) -> Vec<PerfConfig> {
        let mut out = Vec::new();
        let mut codes = c.codes();
        let lists: Vec<Vec<u32>> = TILE_FIELDS
            .iter()
            .zip(&self.0)
            .map(|(&f, values)| {
                let own = c.code(f);
                values
                    .iter()
                    .copied()
                    .filter(|&v| {
                        f == Field::Stages
                            || (v <= own.saturating_mul(RETILE_REACH) && own <= v * RETILE_REACH)
                    })
                    .collect()
            })
            .collect();
        let lens: Vec<usize> = lists.iter().map(Vec::len).collect();
        if lens.contains(&0) {
            return out;
        }
        let mut ix = [0usize; TILE_FIELDS.len()];
        loop {
            for (k, f) in TILE_FIELDS.iter().enumerate() {
                codes[*f] = lists[k][ix[k]];
            }
            if let Some(v) = PerfConfig::from_codes(&codes) {
                if v != *c {
                    out.push(v);
                }
            }
            // Odometer over the lists, the last field fastest.
            let mut k = TILE_FIELDS.len();
            loop {
                if k == 0 {
                    return out;
                }
                k -= 1;
                ix[k] += 1;
                if ix[k] < lens[k] {
                    break;
                }
                ix[k] = 0;
            }
        }
    }
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
/// only; with a fingerprint, only those tuned on a compatible device), nearest first.
pub fn neighbours(
    problem: &ConvProblem,
    arch: &str,
    layers: &Layered<'_>,
    fingerprint: Option<&Fingerprint>,
) -> Vec<Neighbour> {
    let me = Features::of(&lower(problem));
    let mut found: Vec<Neighbour> = Vec::new();
    for db in [layers.user, layers.system].into_iter().flatten() {
        if db.arch() != arch {
            continue;
        }
        for (i, e) in db.entries().iter().enumerate() {
            if !db.seal_at(i).trusted() || fingerprint.is_some_and(|f| !e.fingerprint.compatible(f))
            {
                continue;
            }
            let Ok(other) = e.problem.parse::<ConvProblem>() else {
                continue;
            };
            if other.direction() != problem.direction()
                || other.dtype() != problem.dtype()
                || other.key() == problem.key()
            {
                continue;
            }
            let Ok(config) = e.config.parse::<PerfConfig>() else {
                continue;
            };
            found.push(Neighbour {
                key: e.problem.clone(),
                config,
                distance: me.distance(&Features::of(&lower(&other))),
            });
        }
    }
    found.sort_by(|a, b| {
        a.distance
            .total_cmp(&b.distance)
            .then_with(|| a.key.cmp(&b.key))
    });
    found.truncate(NEIGHBOURS);
    found
}

/// The fastest by `score` of (neighbour, config) pairs given nearest neighbour first, each
/// config followed by its width variants: ties go to the nearer problem, then to the wider
/// vectors (a neighbour's narrow widths are often ones its TMA-loaded operand never used; here
/// that operand may be copied with them: session 9's holdout took a stride-1 neighbour's
/// `va=2` for a strided bwd-data problem, whose phases copy the filter with `cp.async`, and ran
/// 2.8× slower than tuned; the model, which hides a producer's copies behind the math, had the
/// two widths level), then to the config as given.
fn fastest<'n>(
    pairs: impl Iterator<Item = (&'n Neighbour, PerfConfig)>,
    elem: u32,
    max_bytes: u32,
    score: &dyn Fn(&PerfConfig) -> Option<f64>,
) -> Option<(&'n Neighbour, PerfConfig, f64)> {
    let wider =
        |a: &PerfConfig, b: &PerfConfig| b.vec_a + b.vec_b + b.vec_c > a.vec_a + a.vec_b + a.vec_c;
    pairs
        .flat_map(|(n, c)| {
            width_variants(&c, elem, max_bytes)
                .into_iter()
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

/// Ranks the neighbours' configs (each with its [`width_variants`], and re-tiled along
/// `tiles`) and the quick list's by the cost model for `problem`, keeping only configs that are
/// legal here and pass `keep` (e.g. inside a search space).
pub fn rank(
    problem: &ConvProblem,
    arch: &Arch,
    near: &[Neighbour],
    quick: &[PerfConfig],
    tiles: &TileValues,
    keep: &dyn Fn(&PerfConfig) -> bool,
) -> Option<Pick> {
    let l = lower(problem);
    let model = CostModel::new(&l, CostArch::from_arch(arch, problem.dtype()));
    let usable = |c: &PerfConfig| keep(c) && legality::check(&l, c, arch).is_ok();
    let time = |c: &PerfConfig| model.estimate(c).time_us;
    let elem = problem.dtype().bytes();
    // A config's predicted time, if it may run here.
    let score = |c: &PerfConfig| Some(time(c)).filter(|t| usable(c) && t.is_finite());
    let max_bytes = arch.max_vector_bytes;
    let as_tuned = fastest(near.iter().map(|n| (n, n.config)), elem, max_bytes, &score);
    // Re-tiled: the model's fastest tile for each neighbour's config (its widths as tuned, so
    // that the walk stays one tile product per neighbour), then that tile's width variants.
    let retiled = near
        .iter()
        .flat_map(|n| tiles.variants(&n.config).into_iter().map(move |c| (n, c)))
        .filter_map(|(n, c)| score(&c).map(|t| (n, c, t)))
        .reduce(|a, b| if b.2 < a.2 { b } else { a })
        .and_then(|(n, c, _)| fastest(std::iter::once((n, c)), elem, max_bytes, &score));
    let best_near = match (as_tuned, retiled) {
        (Some(a), Some(r)) if r.2 < RETILE_MARGIN * a.2 => Some(r),
        (None, r) => r,
        (a, _) => a,
    };
    let best_quick = quick
        .iter()
        .filter_map(|c| score(c).map(|t| (*c, t)))
        .min_by(|a, b| a.1.total_cmp(&b.1));
    match (best_near, best_quick) {
        (Some((_, _, tn)), Some((q, tq))) if tq < QUICK_MARGIN * tn => Some(Pick::Quick(q, tq)),
        (Some((n, c, tn)), _) => Some(Pick::Neighbour {
            from: n.clone(),
            config: c,
            us: tn,
        }),
        (None, Some((q, tq))) => Some(Pick::Quick(q, tq)),
        (None, None) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shipped database without `p`'s entry, and that entry's config.
    fn shipped_without(p: &ConvProblem, arch: &Arch) -> (crate::db::TunedDb, Option<PerfConfig>) {
        let shipped = crate::db::system(arch.name).unwrap().unwrap();
        let mut rest = crate::db::TunedDb::new(arch.name);
        let mut tuned = None;
        for e in shipped.entries() {
            if e.problem == p.key() {
                tuned = Some(e.config.parse::<PerfConfig>().unwrap());
            } else {
                rest.insert(e.clone()).unwrap();
            }
        }
        (rest, tuned)
    }

    fn features(p: &str) -> Features {
        Features::of(&lower(&p.parse().unwrap()))
    }

    #[test]
    fn the_same_gemm_is_near_whatever_the_batch_and_image_split() {
        // n·H·W is the same (32·14·14 = 8·28·28): the GEMM is the same, the raw sizes are not.
        let a = features("conv -n 32 -c 64 -H 14 -W 14 -k 64 -y 1 -x 1 -F 1");
        let b = features("conv -n 8 -c 64 -H 28 -W 28 -k 64 -y 1 -x 1 -F 1");
        let c = features("conv -n 32 -c 64 -H 14 -W 14 -k 64 -y 3 -x 3 -p 1 -q 1 -F 1");
        assert_eq!(a.distance(&b), 0.0);
        assert!(a.distance(&c) >= 2.0 * STRUCTURE, "{}", a.distance(&c));
        let d = features("conv -n 32 -c 128 -H 14 -W 14 -k 64 -y 1 -x 1 -F 1");
        assert!(a.distance(&d) > 0.0 && a.distance(&d) < a.distance(&c));
    }

    #[test]
    fn a_neighbour_wins_unless_the_quick_list_is_clearly_faster() {
        let p: ConvProblem = "conv -n 16 -c 64 -H 14 -W 14 -k 64 -y 3 -x 3 -p 1 -q 1 -F 1"
            .parse()
            .unwrap();
        let arch = Arch::SM_90;
        let l = lower(&p);
        let space = crate::space::SearchSpace::default_for(&arch);
        let legal = crate::space::enumerate_lowered(&l, &arch, &space).legal;
        let model = CostModel::new(&l, CostArch::from_arch(&arch, p.dtype()));
        let mut by_time: Vec<(PerfConfig, f64)> = legal
            .iter()
            .map(|c| (*c, model.estimate(c).time_us))
            .filter(|(_, t)| t.is_finite())
            .collect();
        by_time.sort_by(|a, b| a.1.total_cmp(&b.1));
        let (fast, slow) = (by_time[0].0, by_time[by_time.len() - 1].0);
        let near = [Neighbour {
            key: "k".into(),
            config: slow,
            distance: 1.0,
        }];
        assert!(
            matches!(rank(&p, &arch, &near, &[fast], &TileValues::none(), &|_| true), Some(Pick::Quick(c, _)) if c == fast)
        );
        let near = [Neighbour {
            config: fast,
            ..near[0].clone()
        }];
        assert!(
            matches!(rank(&p, &arch, &near, &[slow], &TileValues::none(), &|_| true), Some(Pick::Neighbour { config, .. }) if config == fast)
        );
        assert!(rank(&p, &arch, &[], &[], &TileValues::none(), &|_| true).is_none());
    }

    /// Regression (session 7's holdout, BENCHMARKS "Session 7, final pass C"): with the
    /// shipped database minus its fwd 1×1 c256→64 56×56 entry, the fallback answered with the
    /// `va=4` winner of the nearest 3×3 c64 problem as is, which ran at 0.58× of the tuned
    /// config (`va=8`). Its widths are now fitted to the problem: another config, legal here,
    /// loading A as wide as the tuned one does.
    #[test]
    fn holdout_strided_bwd_data_keeps_wide_vectors_where_the_model_ties() {
        // Session 9's holdout: the nearest tuned problem of a strided bwd-data one is stride-1
        // (tuned with va=2, the filter on TMA there); its phases copy the filter with
        // cp.async, and the model, which hides a producer's copies, had va=2 and va=8 level.
        // The tie goes to the wider vectors (va=2 ran 2.8x slower than tuned on the H200).
        use crate::db::Layered;
        let arch = Arch::SM_90;
        let p: ConvProblem = "convbfp16 -n 32 -c 256 -H 28 -W 28 -k 256 -y 3 -x 3 -p 1 -q 1 -u 2 \
                              -v 2 -F 2 --layout NHWC"
            .parse()
            .unwrap();
        let (rest, _) = shipped_without(&p, &arch);
        let layers = Layered {
            system: None,
            user: Some(&rest),
        };
        let found = crate::lookup::find_config_in(&p, &arch, layers, None).unwrap();
        legality::check(&lower(&p), &found.config, &arch).unwrap();
        let widest = PerfConfig {
            vec_a: 8,
            vec_b: 8,
            vec_c: 8,
            ..found.config
        };
        if legality::check(&lower(&p), &widest, &arch).is_ok() {
            let l = lower(&p);
            let model = CostModel::new(&l, CostArch::from_arch(&arch, p.dtype()));
            let (t, w) = (model.estimate(&found.config), model.estimate(&widest));
            assert!(
                found.config == widest || t.time_us < w.time_us,
                "{}: {:?} picked over the level {:?}",
                found.reason,
                found.config,
                widest
            );
        }
        assert!(found.config.vec_a >= 8, "{}", found.reason);
    }

    #[test]
    fn holdout_1x1_c256_takes_a_neighbour_config_with_its_own_widths() {
        use crate::db::{Layered, Source};
        let arch = Arch::SM_90;
        let p: ConvProblem =
            "convbfp16 -n 64 -c 256 -H 56 -W 56 -k 64 -y 1 -x 1 -F 1 --layout NHWC"
                .parse()
                .unwrap();
        let (rest, tuned) = shipped_without(&p, &arch);
        let tuned = tuned.expect("the shipped database has the held-out entry");
        let layers = Layered {
            system: None,
            user: Some(&rest),
        };
        let found = crate::lookup::find_config_in(&p, &arch, layers, None).unwrap();
        let Source::Nearest { key, .. } = &found.source else {
            panic!("{:?}: {}", found.source, found.reason);
        };
        let nearest: PerfConfig = rest.get_key(key)[0].config.parse().unwrap();
        assert_ne!(found.config, nearest, "{}", found.reason);
        legality::check(&lower(&p), &found.config, &arch).unwrap();
        // At least the tuned width (where A is a TMA box the width is free, and ties go wide).
        assert!(found.config.vec_a >= tuned.vec_a, "{}", found.reason);
        assert!(
            found.reason.contains("fitted to this problem (v"),
            "{}",
            found.reason
        );
        // Only the widths changed: the tile is still the neighbour's measured winner.
        let same_tile = PerfConfig {
            vec_a: nearest.vec_a,
            vec_b: nearest.vec_b,
            vec_c: nearest.vec_c,
            ..found.config
        };
        assert_eq!(same_tile, nearest);
    }

    /// Session 14's holdout (BENCHMARKS "Session 14, a clean cold L2"): without its own entry,
    /// bwd-weight 1×1 c256→64 56×56 took the `bn=192` winner of the nearest bwd-weight 3×3 c64
    /// problem (N = 576, three full tiles) as it was; on N = 256 its second column of blocks is
    /// two-thirds empty, and it ran at 0.77× of the tuned config. Re-tiled, the neighbour's
    /// config keeps its load path and split-K and takes a tile that divides N.
    #[test]
    fn holdout_bwd_weight_1x1_re_tiles_a_neighbour_whose_tile_does_not_fit() {
        use crate::db::{Layered, Source};
        let arch = Arch::SM_90;
        let p: ConvProblem =
            "convbfp16 -n 64 -c 256 -H 56 -W 56 -k 64 -y 1 -x 1 -F 4 --layout NHWC"
                .parse()
                .unwrap();
        let (rest, _) = shipped_without(&p, &arch);
        let layers = Layered {
            system: None,
            user: Some(&rest),
        };
        let found = crate::lookup::find_config_in(&p, &arch, layers, None).unwrap();
        let Source::Nearest { key, .. } = &found.source else {
            panic!("{:?}: {}", found.source, found.reason);
        };
        let nearest: PerfConfig = rest.get_key(key)[0].config.parse().unwrap();
        let n = lower(&p).gemms[0].n_len();
        assert_ne!(
            n % nearest.block_n,
            0,
            "the premise: {nearest} does not tile N = {n}"
        );
        assert_eq!(n % found.config.block_n, 0, "{}", found.reason);
        assert!(found.reason.contains("bn="), "{}", found.reason);
        // What the neighbour measured beyond the tile stays.
        assert_eq!(
            (found.config.split_k, found.config.ld, found.config.mma),
            (nearest.split_k, nearest.ld, nearest.mma),
            "{}",
            found.reason
        );
    }

    #[test]
    fn tile_variants_walk_the_spaces_tile_lists_and_nothing_else() {
        let arch = Arch::SM_90;
        let space = crate::space::SearchSpace::default_for(&arch);
        let tiles = TileValues::of(&[&space]);
        let c: PerfConfig =
            "v1:bm=64,bn=64,bk=32,wm=32,wn=32,st=2,va=4,vb=8,vc=2,lds=swz,sk=1,rs=1"
                .parse()
                .unwrap();
        let v = tiles.variants(&c);
        let near = |f: Field, v: u32| {
            f == Field::Stages || (v <= RETILE_REACH * c.code(f) && c.code(f) <= RETILE_REACH * v)
        };
        let product: usize = TILE_FIELDS
            .iter()
            .map(|&f| {
                space
                    .params
                    .codes(f)
                    .into_iter()
                    .filter(|&v| near(f, v))
                    .count()
            })
            .product();
        assert_eq!(
            v.len(),
            product - 1,
            "every near combination but the config itself"
        );
        assert!(!v.contains(&c));
        let big = PerfConfig {
            block_m: 256,
            warp_m: 64,
            ..c
        };
        let from_big = tiles.variants(&big);
        assert!(from_big.iter().any(|x| x.block_m == 64));
        assert!(
            !from_big.iter().any(|x| x.block_m < 64),
            "at most a factor 4 down"
        );
        for x in &v {
            let mut back = *x;
            for f in TILE_FIELDS {
                assert!(space.params.codes(f).contains(&x.code(f)));
                assert!(near(f, x.code(f)), "{x}");
                back = PerfConfig::from_codes(&{
                    let mut k = back.codes();
                    k[f] = c.code(f);
                    k
                })
                .unwrap();
            }
            assert_eq!(back, c, "only the tile fields differ");
        }
        assert!(TileValues::none().variants(&c).is_empty());
    }

    #[test]
    fn width_variants_cover_every_legal_width_once_starting_with_the_config() {
        let c: PerfConfig =
            "v1:bm=64,bn=64,bk=32,wm=32,wn=32,st=2,va=4,vb=8,vc=2,lds=swz,sk=1,rs=1"
                .parse()
                .unwrap();
        let max = Arch::SM_90.max_vector_bytes;
        let bf16 = width_variants(&c, 2, max);
        assert_eq!(bf16[0], c);
        assert_eq!(bf16.len(), 4 * 4 * 4, "1, 2, 4, 8 elements each");
        let mut dedup = bf16.clone();
        dedup.sort();
        dedup.dedup();
        assert_eq!(dedup.len(), bf16.len());
        // f32: at most 4 elements (16 bytes); the config itself stays first as it is.
        let f32 = width_variants(&c, 4, max);
        assert_eq!(f32.len(), 1 + 3 * 3 * 3);
        assert!(f32[1..].iter().all(|v| v.vec_a <= 4 && v.vec_b <= 4));
        assert!(bf16.iter().all(|v| PerfConfig {
            vec_a: 4,
            vec_b: 8,
            vec_c: 2,
            ..*v
        } == c));
    }
}
