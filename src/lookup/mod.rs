//! What a compiler calls: the config to build a problem's kernels with, and where it came from.
//!
//! Order: the tuned database (user layer over the system layer compiled into the binary) for
//! the exact key; else the [`fallback`]: the configs of the nearest tuned problems (by the
//! features that predict speed), of the shipped quick list and the heuristic's (the cost
//! model's best legal candidate), ranked by the cost model for the problem at hand, each step
//! down in evidence needing a clearly faster prediction. Legality is re-checked for the
//! problem at hand at every step, so a cached config that would be illegal here is never
//! returned.
//!
//! ```no_run
//! use convtune::{arch::Arch, lookup::find_config, problem::ConvProblem};
//! let p: ConvProblem = "conv -n 32 -c 32 -H 14 -W 14 -k 32 -y 3 -x 3 -p 1 -q 1 -F 2".parse().unwrap();
//! let arch = Arch::from_name("sm_90").unwrap();
//! let found = find_config(&p, &arch, None, None).unwrap();
//! println!("{} ({})", found.config, found.source);
//! ```

pub mod fallback;
mod limits;
mod quick;
mod second;

use fallback::{Guess, Pick, TileValues};
pub use limits::{enumeration_without_atomics, without_atomics, Limits};
pub use quick::{shipped as shipped_quick_list, QuickEntry, QuickFile};
pub use second::{second_round, SECOND_ROUND_CANDIDATES};

use crate::arch::Arch;
use crate::config::PerfConfig;
use crate::db::{self, ConfigCheck, DbError, Fingerprint, Layered, Source, TunedDb};
use crate::legality;
use crate::lowering::{lower, Lowering};
use crate::problem::ConvProblem;
use crate::search::{self, SearchContext};
use crate::space::{enumerate_lowered, enumerate_search, SearchSpace};

/// Re-checks a stored config against today's legality rules for the problem at hand.
pub struct LegalityCheck;

impl ConfigCheck for LegalityCheck {
    fn check(&self, problem: &ConvProblem, arch: &str, config: &str) -> Result<(), String> {
        let cfg: PerfConfig = config.parse().map_err(|e| format!("{e}"))?;
        let arch = Arch::from_name(arch).map_err(|e| e.to_string())?;
        legality::check(&lower(problem), &cfg, &arch)
            .map(|_| ())
            .map_err(|e| e.to_string())
    }
}

/// A config and the reason it was chosen.
#[derive(Debug, Clone)]
pub struct Found {
    /// The config to compile with.
    pub config: PerfConfig,
    /// Exact, nearest, or heuristic.
    pub source: Source,
    /// A sentence on how it was found (which database, what was skipped).
    pub reason: String,
}

/// Errors of a lookup: only a broken system database or a problem with no legal config at all.
#[derive(Debug, thiserror::Error)]
pub enum LookupError {
    /// The compiled-in database does not parse (a build from a corrupt `tuned-db/`).
    #[error(transparent)]
    Db(#[from] DbError),
    /// Not even the heuristic found a legal config.
    #[error("no legal config exists for {problem} on {arch} in the default search space")]
    NoLegalConfig {
        /// The problem key.
        problem: String,
        /// The arch.
        arch: String,
    },
}

/// Finds the config for a problem: database layers (the user's over the compiled-in system
/// database), then the ranked fallback (nearest tuned problems, quick list, heuristic).
pub fn find_config(
    problem: &ConvProblem,
    arch: &Arch,
    user: Option<&TunedDb>,
    fingerprint: Option<&Fingerprint>,
) -> Result<Found, LookupError> {
    let layers = Layered {
        system: db::system(arch.name)?,
        user,
    };
    find_config_in(problem, arch, layers, fingerprint)
}

/// [`find_config`] with the user database a compiler names: `user_db` (else `$CONVTUNE_DB`,
/// else the XDG path, see [`db::user_db_path`]) over the system database unless
/// `use_system` is false. A user database that does not exist is no layer; one that exists
/// but does not load is an error, so a typo'd entry is not silently ignored. This is what
/// `convtune lookup`, the C API and the Python package answer with. With `deterministic`,
/// only configs without atomics ([`Limits::deterministic`]). `gpu`: the device the kernels
/// will run on, where the caller knows it (the Python package does): exact entries are then
/// that GPU's, and a problem tuned only on another GPU of the arch comes as a distance-0
/// neighbour ([`Layered::lookup`]), so a first-use benchmark times it against the fallback.
pub fn find_config_with_user_db(
    problem: &ConvProblem,
    arch: &Arch,
    user_db: Option<&std::path::Path>,
    use_system: bool,
    deterministic: bool,
    gpu: Option<&Fingerprint>,
) -> Result<Found, LookupError> {
    let mut found =
        find_candidates_with_user_db(problem, arch, user_db, use_system, 1, deterministic, gpu)?;
    Ok(found.swap_remove(0))
}

/// [`find_config_with_user_db`], then up to `most - 1` more of the fallback's configs
/// ([`find_candidates_in_space`]): what the Python package's first-use benchmark times. With
/// `deterministic`, only configs without atomics ([`Limits::deterministic`]).
pub fn find_candidates_with_user_db(
    problem: &ConvProblem,
    arch: &Arch,
    user_db: Option<&std::path::Path>,
    use_system: bool,
    most: usize,
    deterministic: bool,
    gpu: Option<&Fingerprint>,
) -> Result<Vec<Found>, LookupError> {
    // No place for a user database (no home, no path given) is no layer, like a missing file.
    let user = match db::user_db_path(user_db, arch.name) {
        Ok(path) if path.exists() => Some(TunedDb::load(&path)?),
        _ => None,
    };
    let system = if use_system {
        db::system(arch.name)?
    } else {
        None
    };
    let layers = Layered {
        system,
        user: user.as_ref(),
    };
    let limits = Limits {
        space: None,
        deterministic,
    };
    find_candidates_in_space(problem, arch, layers, gpu, limits, most)
}

/// [`find_config`] over explicit database layers (e.g. without the system database).
pub fn find_config_in(
    problem: &ConvProblem,
    arch: &Arch,
    layers: Layered<'_>,
    fingerprint: Option<&Fingerprint>,
) -> Result<Found, LookupError> {
    find_config_in_space(problem, arch, layers, fingerprint, Limits::default())
}

/// [`find_config_in`] within `limits` (a search space, `--space FILE`; deterministic results):
/// a database or quick-list config outside them is passed over like an illegal one (the
/// reason says so), and the heuristic picks among the space's candidates inside them.
pub fn find_config_in_space(
    problem: &ConvProblem,
    arch: &Arch,
    layers: Layered<'_>,
    fingerprint: Option<&Fingerprint>,
    limits: Limits<'_>,
) -> Result<Found, LookupError> {
    let mut found = find_candidates_in_space(problem, arch, layers, fingerprint, limits, 1)?;
    // Never empty: the last resort is the heuristic's config or an error.
    Ok(found.swap_remove(0))
}

/// How many of the fallback's configs a first-use benchmark times (`convtune.torch` with
/// `benchmark = True`, `CONVTUNE_FIRST_USE_CANDIDATES` in C) and a tuning measures first (the
/// first is the lookup's own answer), so that its report says what timing them on first use
/// would pick ([`find_candidates_in_space`]). With each shipped entry held out (session 37, one
/// H100 run) the fastest of sixteen ran at 0.986 of tuned speed, of eight at 0.960, the
/// number below 0.8 falling from 12 to 7 of 184. The price, once per problem and process:
/// LLVM for the candidates 0.92 s median on 2 cores against 0.41 s for eight
/// (`scripts/first-call-cpu.py`), the driver's JIT and the timing runs on top.
pub const FIRST_USE_CANDIDATES: usize = 16;

/// The most candidates a caller may ask [`find_candidates_in_space`] for (`lookup
/// --candidates`, the Python package): one per source, so a few tens at most differ.
pub const MAX_CANDIDATES: usize = 64;

/// The lookup's answer first ([`find_config_in_space`]), then up to `most - 1` other configs
/// the fallback ranks next ([`fallback::ranked`]): a consumer that can afford to time a few
/// configs on first use (as cuDNN's find does, or Triton's autotune) picks the fastest of
/// these. After an exact database entry come the fallback's picks as if there were none.
pub fn find_candidates_in_space(
    problem: &ConvProblem,
    arch: &Arch,
    layers: Layered<'_>,
    fingerprint: Option<&Fingerprint>,
    limits: Limits<'_>,
    most: usize,
) -> Result<Vec<Found>, LookupError> {
    let heuristic = |n| heuristic_within(problem, arch, limits, n);
    find_candidates_with(problem, arch, layers, fingerprint, limits, most, heuristic)
}

/// [`find_candidates_in_space`] with the heuristic's picks (the cost model's first picks among
/// the legal configs of the limits' space, else the default space, inside the limits, its
/// first pick first) from `heuristic(n)`, called once when the databases have been read: the
/// tuner enumerates that space anyway and hands the picks over from its own enumeration
/// ([`heuristic_picks`]) instead of enumerating it twice.
pub fn find_candidates_with(
    problem: &ConvProblem,
    arch: &Arch,
    layers: Layered<'_>,
    fingerprint: Option<&Fingerprint>,
    limits: Limits<'_>,
    most: usize,
    heuristic: impl FnOnce(usize) -> ModelPicks,
) -> Result<Vec<Found>, LookupError> {
    Read::databases(problem, arch, layers, fingerprint, limits).candidates(most, heuristic)
}

/// A lookup with its databases read and not yet ranked: the exact entry, when there is one,
/// is known here ([`Read::exact`]), before the fallback enumerates and ranks anything, so the
/// tuner starts compiling it at once; [`Read::candidates`] goes on from the same read.
pub struct Read<'a> {
    problem: &'a ConvProblem,
    arch: &'a Arch,
    layers: Layered<'a>,
    fingerprint: Option<&'a Fingerprint>,
    limits: Limits<'a>,
    hit: db::Lookup,
}

impl<'a> Read<'a> {
    /// Reads the problem's entry from `layers` (the user's over the system's, see
    /// [`Layered`]), checked for legality here and against `limits`.
    pub fn databases(
        problem: &'a ConvProblem,
        arch: &'a Arch,
        layers: Layered<'a>,
        fingerprint: Option<&'a Fingerprint>,
        limits: Limits<'a>,
    ) -> Read<'a> {
        let hit = layers.lookup(problem, arch.name, fingerprint, &limits);
        Read {
            problem,
            arch,
            layers,
            fingerprint,
            limits,
            hit,
        }
    }

    /// The exact entry's config, when there is one that may run here: the lookup's answer.
    pub fn exact(&self) -> Option<PerfConfig> {
        (self.hit.source == Source::Exact)
            .then(|| self.hit.config.as_deref()?.parse().ok())
            .flatten()
    }

    /// The lookup's answer when it is this problem's entry tuned on another GPU (a lookup with
    /// a fingerprint that no entry of the problem matches): the first candidate, not exact.
    fn sibling(&self) -> Option<PerfConfig> {
        matches!(self.hit.source, Source::Nearest { distance, .. } if distance == 0.0)
            .then(|| self.hit.config.as_deref()?.parse().ok())
            .flatten()
    }

    /// The exact entry's config first, then up to `most` of the fallback's ranked configs
    /// ([`find_candidates_with`]; `heuristic(n)`: the model's first `n` picks).
    pub fn candidates(
        self,
        most: usize,
        heuristic: impl FnOnce(usize) -> ModelPicks,
    ) -> Result<Vec<Found>, LookupError> {
        let exact = self.exact();
        let first = exact.or_else(|| self.sibling());
        let Read {
            problem,
            arch,
            layers,
            fingerprint,
            limits,
            hit,
        } = self;
        let mut out = Vec::new();
        if let Some(cfg) = first {
            out.push(Found {
                config: cfg,
                source: hit.source.clone(),
                reason: hit.reason.clone(),
            });
            if most <= 1 {
                return Ok(out);
            }
        }
        // No exact entry: the nearest tuned problems' configs and the quick list, ranked by
        // the cost model for this problem.
        let why = if hit.source == Source::None {
            hit.reason.clone()
        } else if hit.source == Source::Exact {
            "besides the exact entry".to_string()
        } else {
            let mut why = "no exact entry".to_string();
            crate::db::append_notes(&mut why, &hit.notes);
            why
        };
        let in_limits = |c: &PerfConfig| limits.admit(problem, c);
        let mut near = fallback::neighbours(problem, arch, &layers, fingerprint);
        // The winners as stored, for the reasons' "tuned there" (a deterministic lookup
        // starts from their twins without atomics).
        let stored: std::collections::HashMap<String, PerfConfig> =
            near.iter().map(|n| (n.key.clone(), n.config)).collect();
        if limits.deterministic {
            // A neighbour's measured tile and widths stay; its atomics become the fix-up
            // (or, on the depthwise kernel, partials), as the tuner's `--deterministic` does.
            for n in &mut near {
                n.config = n.config.without_atomics(problem.direction());
            }
        }
        let default_space = SearchSpace::default_for(arch);
        let mut guesses: Vec<(PerfConfig, Guess)> = shipped_quick_list(arch.name)
            .configs(problem.direction(), problem.dtype())
            .iter()
            .filter_map(|t| Some((t.parse().ok()?, Guess::QuickList)))
            .collect();
        // The heuristic enumerates the whole search: once, as a guess and as the last resort
        // (its first pick), its next picks for a list that its other sources leave short, and
        // its first among the vendor space alone.
        let ModelPicks { whole, vendor } = heuristic(most.max(1));
        let model_pick = whole.first().copied();
        guesses.extend(model_pick.map(|c| (c, Guess::Model)));
        guesses.extend(whole.iter().skip(1).map(|&c| (c, Guess::ModelNext)));
        guesses.extend(vendor.map(|c| (c, Guess::ModelVendor)));
        let within = limits.words();
        let tiles = TileValues::of(&limits.spaces(&default_space, &lower(problem), arch));
        let picks = fallback::ranked(problem, arch, &near, &guesses, &tiles, &in_limits, most);
        for (rank, pick) in picks.into_iter().enumerate() {
            let found = found_of(pick, &why, within, near.len(), rank, &stored);
            if out.len() < most && out.iter().all(|f| f.config != found.config) {
                out.push(found);
            }
        }
        if !out.is_empty() {
            return Ok(out);
        }
        // Nothing ranked (the model gave no finite time): the heuristic's pick as it is.
        let config = model_pick.ok_or_else(|| LookupError::NoLegalConfig {
            problem: problem.key(),
            arch: arch.name.to_string(),
        })?;
        Ok(vec![Found {
            config,
            source: Source::Heuristic,
            reason: format!("{}; using the cost model's best legal config", hit.reason),
        }])
    }
}

/// The answer for one of the fallback's ranked picks (`rank` 0 is its first choice);
/// `stored`: each neighbour's winner as its database holds it.
fn found_of(
    pick: Pick,
    why: &str,
    within: &str,
    near: usize,
    rank: usize,
    stored: &std::collections::HashMap<String, PerfConfig>,
) -> Found {
    let ranks = if rank == 0 {
        "first".to_string()
    } else {
        ordinal(rank + 1)
    };
    match pick {
        Pick::Neighbour {
            from: n,
            config,
            us,
        } => {
            let tuned = stored.get(&n.key).unwrap_or(&n.config);
            let (now, was) = fallback::differences(tuned, &config);
            let adapted = if now.is_empty() {
                String::new()
            } else {
                format!(", fitted to this problem ({now}; tuned there: {was})")
            };
            Found {
                config,
                reason: format!(
                    "{why}; of the legal configs{within} of the {near} nearest tuned problems (by \
                     GEMM shape, filter, stride, channels per group, layouts; with their \
                     vector widths and split-K varied, and re-tiled) and the quick list, the cost \
                     model ranks {ranks} \
                     ({us:.1} µs predicted) the one of {} (distance {:.2}){adapted}",
                    n.key, n.distance
                ),
                source: Source::Nearest {
                    key: n.key,
                    distance: n.distance,
                },
            }
        }
        Pick::Guess { config, us, from } => {
            let (source, which) = match from {
                Guess::QuickList => (Source::QuickList, "this quick-list one"),
                Guess::Model => (Source::Heuristic, "its own best legal config"),
                Guess::ModelNext => (Source::Heuristic, "one of its own next legal configs"),
                Guess::ModelVendor => (
                    Source::Heuristic,
                    "its own best legal config among the vendor space's kernels",
                ),
            };
            Found {
                config,
                source,
                reason: format!(
                    "{why}; of the legal configs{within} of the shipped quick list, the {near} \
                     nearest tuned problems and its own best, the cost model ranks {which} \
                     {ranks} ({us:.1} µs predicted)"
                ),
            }
        }
    }
}

/// "2nd", "3rd", "4th", … for a rank from 2 on.
fn ordinal(n: usize) -> String {
    let suffix = match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

/// The cost model's first pick among the legal configs of the default space.
pub fn heuristic(problem: &ConvProblem, arch: &Arch) -> Option<PerfConfig> {
    heuristic_in(problem, arch, &SearchSpace::default_for(arch))
}

/// The cost model's first pick among the legal configs of `space`.
pub fn heuristic_in(problem: &ConvProblem, arch: &Arch, space: &SearchSpace) -> Option<PerfConfig> {
    let l = lower(problem);
    heuristic_among(&l, arch, &enumerate_lowered(&l, arch, space).legal)
}

/// The cost model's picks among the legal configs of `limits`' space (else the whole built-in
/// search) inside the limits ([`model_picks`]).
pub fn heuristic_within(
    problem: &ConvProblem,
    arch: &Arch,
    limits: Limits<'_>,
    n: usize,
) -> ModelPicks {
    let l = lower(problem);
    let e = legal_within(problem, &l, arch, limits);
    let vendor = limits.space.is_none().then(|| &e.legal[..e.first]);
    model_picks(&l, arch, &e.legal, vendor, n)
}

/// The legal configs inside `limits` (`l` is `problem` lowered): of the limits' space, else of
/// the whole built-in search, with the vendor space's own still the prefix
/// ([`first`](crate::space::Enumeration::first) counts those admitted).
fn legal_within(
    problem: &ConvProblem,
    l: &Lowering,
    arch: &Arch,
    limits: Limits<'_>,
) -> crate::space::Enumeration {
    let mut e = match limits.space {
        Some(s) => enumerate_lowered(l, arch, s),
        None => enumerate_search(l, arch, &SearchSpace::default_for(arch), false),
    };
    if limits.deterministic {
        enumeration_without_atomics(l, arch, &mut e);
    }
    let admit = |c: &PerfConfig| limits.admit(problem, c);
    // The vendor space's configs stay the prefix: count those admitted before dropping the rest.
    e.first = e.legal[..e.first].iter().filter(|c| admit(c)).count();
    e.legal.retain(admit);
    e
}

/// What the cost model offers the fallback: the first picks of a guided search over the legal
/// configs of the whole search, and its first pick among the vendor space's alone.
#[derive(Debug, Clone, Default)]
pub struct ModelPicks {
    /// The first `n` picks over the whole search, its first pick first.
    pub whole: Vec<PerfConfig>,
    /// The first pick among those the vendor space holds (none when the search is a space the
    /// user gave: there is no other).
    pub vendor: Option<PerfConfig>,
}

/// [`ModelPicks`] over `legal` (a search's enumeration for `lowering`), `vendor` the vendor
/// space's own legal configs where the search is the built-in one (the enumeration's
/// [`first`](crate::space::Enumeration::first) ones).
pub fn model_picks(
    lowering: &Lowering,
    arch: &Arch,
    legal: &[PerfConfig],
    vendor: Option<&[PerfConfig]>,
    n: usize,
) -> ModelPicks {
    let vendor = vendor.and_then(|own| heuristic_among(lowering, arch, own));
    ModelPicks {
        whole: heuristic_picks(lowering, arch, legal, n),
        vendor,
    }
}

/// The cost model's first pick among `legal` (a space's enumeration for `lowering`).
pub fn heuristic_among(
    lowering: &Lowering,
    arch: &Arch,
    legal: &[PerfConfig],
) -> Option<PerfConfig> {
    heuristic_picks(lowering, arch, legal, 1).first().copied()
}

/// The first `n` configs a guided search over `legal` proposes, [`heuristic_among`]'s first.
pub fn heuristic_picks(
    lowering: &Lowering,
    arch: &Arch,
    legal: &[PerfConfig],
    n: usize,
) -> Vec<PerfConfig> {
    let ctx = SearchContext {
        lowering,
        arch,
        candidates: legal,
    };
    search::Guided::new(0)
        .first_picks(&ctx, n)
        .into_iter()
        .map(|i| legal[i])
        .collect()
}
