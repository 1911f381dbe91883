//! Finding the config to use for a problem: an exact tuned entry if one is legal here, else the
//! nearest tuned problem's config if legal, else nothing (the caller falls back to its quick
//! list or heuristic). Every answer says where it came from and why.
//!
//! Legality is re-checked at lookup because a cached winner can be illegal for the problem at
//! hand (another tuner's known failure: a config legal for the tuned problem is served to a
//! nearest neighbour, or the legality rules changed since it was tuned).

use super::distance::{distance_parts, shape, size_logs};
use super::entry::{Entry, Fingerprint};
use super::file::TunedDb;
use crate::problem::ConvProblem;
use std::fmt;

/// Decides whether a config may run a problem on an arch. The database does not know the
/// config's fields; the caller supplies the legality rules (resources, vector loads, every
/// sub-GEMM) so a served config is never one that would fail at launch.
pub trait ConfigCheck {
    /// `Ok` when `config` can run `problem` on `arch`; otherwise why not.
    fn check(&self, problem: &ConvProblem, arch: &str, config: &str) -> Result<(), String>;
}

impl<F> ConfigCheck for F
where
    F: Fn(&ConvProblem, &str, &str) -> Result<(), String>,
{
    fn check(&self, problem: &ConvProblem, arch: &str, config: &str) -> Result<(), String> {
        self(problem, arch, config)
    }
}

/// Where a config came from, so users and logs can tell a tuned answer from a guess.
#[derive(Debug, Clone, PartialEq)]
pub enum Source {
    /// An entry tuned for exactly this problem.
    Exact,
    /// The config of a tuned problem of the same direction, type and layouts.
    Nearest {
        /// The tuned problem whose config is reused.
        key: String,
        /// Its [`distance`] from the problem asked for.
        distance: f64,
    },
    /// The caller's quick list of generally good configs (set by the caller, never by the db).
    QuickList,
    /// The caller's heuristic (set by the caller, never by the db).
    Heuristic,
    /// Nothing found.
    None,
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Exact => f.write_str("exact"),
            Source::Nearest { key, distance } => {
                write!(f, "nearest (distance {distance:.2}: {key})")
            }
            Source::QuickList => f.write_str("quick list"),
            Source::Heuristic => f.write_str("heuristic"),
            Source::None => f.write_str("none"),
        }
    }
}

/// The answer to a lookup.
#[derive(Debug, Clone, PartialEq)]
pub struct Lookup {
    /// The config to use, if any was found and passed the check.
    pub config: Option<String>,
    /// Where it came from.
    pub source: Source,
    /// A sentence for the user: which database, which entry, what was rejected and why.
    pub reason: String,
    /// What was skipped on the way (other arches' layers, entries failing their checksum,
    /// illegal neighbours), also at the end of `reason`: a fallback that replaces the reason
    /// keeps these.
    pub notes: Vec<String>,
}

impl Lookup {
    /// `e`'s config as the answer at `distance` from the problem (0: the problem itself, tuned
    /// on another GPU), `reason` followed by the notes.
    fn nearest(e: &Entry, distance: f64, mut reason: String, notes: Vec<String>) -> Lookup {
        append_notes(&mut reason, &notes);
        Lookup {
            notes,
            config: Some(e.config.clone()),
            source: Source::Nearest {
                key: e.problem.clone(),
                distance,
            },
            reason,
        }
    }
}

/// The system database (shipped in the binary) with the user's database on top: user entries
/// win, because they were measured on the user's own machine.
#[derive(Debug, Clone, Copy, Default)]
pub struct Layered<'a> {
    /// Compiled in; see [`super::system`].
    pub system: Option<&'a TunedDb>,
    /// On disk; see [`super::user_db_path`].
    pub user: Option<&'a TunedDb>,
}

/// Nearest candidates checked for legality before giving up (bounds the cost of a lookup when
/// the check is expensive and many neighbours are illegal).
pub const MAX_NEAREST_TRIES: usize = 64;

impl<'a> Layered<'a> {
    /// User then system, skipping layers of another arch (noted in `notes`).
    fn layers(
        &self,
        arch: &str,
        notes: &mut Vec<String>,
    ) -> [Option<(&'static str, &'a TunedDb)>; 2] {
        [("user", self.user), ("system", self.system)].map(|(name, db)| {
            let db = db?;
            if db.arch() == arch {
                Some((name, db))
            } else {
                notes.push(format!(
                    "{name} database is for {}, not {arch}; ignored",
                    db.arch()
                ));
                None
            }
        })
    }

    /// Finds the config for `problem` on `arch`. With a `fingerprint`, exact entries tuned on
    /// a compatible device (same GPU name and compute units) come first, one tuned on exactly
    /// this fingerprint before the others; then, as [`Source::Nearest`] at distance 0 with the
    /// GPU named in the reason, the problem's entries tuned on another GPU of the arch (a
    /// sibling's winner is a better start than a neighbour's: on an H100, the H200's shipped
    /// winners ran 1.15x cuDNN's speed, BENCHMARKS session 34); then the nearest problems
    /// tuned on a compatible device, or where there are none, on any device. Without one, an
    /// exact entry of the layer's home device (the GPU most of its entries were tuned on) comes
    /// first, so that adding another GPU's entries to a database does not change what a
    /// GPU-less lookup serves; then the newest, then the fastest; its neighbours too are the
    /// home device's where it has any. Every candidate config passes `check` before it is returned.
    pub fn lookup(
        &self,
        problem: &ConvProblem,
        arch: &str,
        fingerprint: Option<&Fingerprint>,
        check: &dyn ConfigCheck,
    ) -> Lookup {
        let mut notes = Vec::new();
        let layers = self.layers(arch, &mut notes);
        let usable = |e: &Entry| fingerprint.is_none_or(|f| e.fingerprint.compatible(f));

        // Entries failing their checksum were edited or damaged: never served, always said.
        let mut broken = [0usize; 2];
        for (name, db) in layers.iter().flatten() {
            if let Some((declared, found)) = db.count_mismatch() {
                notes.push(format!(
                    "the {name} database's header lists {declared} entries but it holds \
                     {found}: cut short?"
                ));
            }
        }
        let mut tried_exact = false;
        // This problem's entries tuned on other GPUs (with a fingerprint only), in layer order.
        let mut elsewhere: Vec<(&'static str, &Entry)> = Vec::new();
        for (rank, &(name, db)) in layers
            .iter()
            .enumerate()
            .filter_map(|(r, l)| l.as_ref().map(|l| (r, l)))
        {
            let exact: Vec<&Entry> = db
                .indices_of(problem)
                .filter(|&i| {
                    let ok = db.seal_at(i).trusted();
                    broken[rank] += usize::from(!ok);
                    ok
                })
                .map(|i| &db.entries()[i])
                .collect();
            let all = exact.len();
            let home = db.home_device();
            let at_home = |e: &Entry| home.is_some() && db.device_id(&e.fingerprint) == home;
            let preferred = |a: &&Entry, b: &&Entry| {
                at_home(b)
                    .cmp(&at_home(a))
                    .then_with(|| b.date.cmp(&a.date))
                    .then_with(|| a.time_us.total_cmp(&b.time_us))
            };
            let (mut exact, mut other): (Vec<&Entry>, Vec<&Entry>) =
                exact.into_iter().partition(|e| usable(e));
            other.sort_by(preferred);
            elsewhere.extend(other.into_iter().map(|e| (name, e)));
            if exact.len() < all {
                notes.push(format!(
                    "{} {name} entr{} for this problem tuned on another GPU",
                    all - exact.len(),
                    if all - exact.len() == 1 { "y" } else { "ies" }
                ));
            }
            if exact.len() > 1 {
                let same = |e: &Entry| Some(&e.fingerprint) == fingerprint;
                exact.sort_by(|a, b| same(b).cmp(&same(a)).then_with(|| preferred(a, b)));
            }
            for e in exact {
                tried_exact = true;
                match check.check(problem, arch, &e.config) {
                    Ok(()) => {
                        // Built by hand: this is the hot path of a compiler's lookups, and
                        // formatting numbers would cost more than the lookup itself.
                        let mut reason = String::with_capacity(64 + e.fingerprint.gpu.len());
                        reason.push_str("exact match in the ");
                        reason.push_str(name);
                        reason.push_str(" database (tuned on ");
                        reason.push_str(&e.fingerprint.gpu);
                        if !e.date.is_empty() {
                            reason.push_str(", ");
                            reason.push_str(&e.date);
                        }
                        reason.push(')');
                        append_notes(&mut reason, &notes);
                        return Lookup {
                            notes,
                            config: Some(e.config.clone()),
                            source: Source::Exact,
                            reason,
                        };
                    }
                    Err(why) => notes.push(format!(
                        "{name} entry for this problem has config {} that is illegal here: {why}",
                        e.config
                    )),
                }
            }
        }

        // The problem tuned on another GPU of the arch: its winner, legal here, before any
        // neighbour's (which cannot be exact on this GPU either).
        for (name, e) in elsewhere {
            match check.check(problem, arch, &e.config) {
                Ok(()) => {
                    let reason = format!(
                        "no entry tuned on this GPU; using this problem's entry in the {name} \
                         database tuned on another GPU ({}, {}, {:.1} µs there)",
                        e.fingerprint.gpu, e.date, e.time_us
                    );
                    return Lookup::nearest(e, 0.0, reason, notes);
                }
                Err(why) => notes.push(format!(
                    "{name} entry for this problem tuned on {} has config {} that is illegal \
                     here: {why}",
                    e.fingerprint.gpu, e.config
                )),
            }
        }

        // Nearest: only the same (direction, dtype, layouts) bucket, closest first; ties go to
        // the user layer, then to the faster entry, then by key so the answer is deterministic.
        // Distance 0 in one bucket is the problem itself, already tried above.
        let (logs, shp) = (size_logs(problem.sizes()), shape(problem.sizes()));
        // With a fingerprint, neighbours tuned on that device; without, those of each
        // database's home device (as the exact entries above); where it has none (a GPU nothing
        // near was tuned on yet), those of every device of the arch.
        let (mut near, mut elsewhere): (Vec<Near>, Vec<Near>) = (Vec::new(), Vec::new());
        for (rank, layer) in layers.iter().enumerate() {
            let Some((_, db)) = layer else { continue };
            let device = db.device_for(fingerprint);
            for item in db.near_items(problem) {
                let d = distance_parts(&logs, &shp, &item.logs, &item.shape);
                // Distance 0 is the problem itself, counted by the exact search above.
                if d > 0.0 && !db.seal_at(item.idx as usize).trusted() {
                    broken[rank] += 1;
                    continue;
                }
                if d > 0.0 {
                    let here = device == Some(item.device);
                    let n = Near {
                        distance: d,
                        rank,
                        time_us: item.time_us,
                        idx: item.idx,
                    };
                    if here { &mut near } else { &mut elsewhere }.push(n);
                }
            }
        }
        if near.is_empty() && !elsewhere.is_empty() {
            if let Some(fp) = fingerprint {
                notes.push(format!(
                    "no neighbour tuned on {}: those tuned on other GPUs",
                    fp.gpu
                ));
            }
            near = elsewhere;
        }
        for (rank, &n) in broken.iter().enumerate() {
            if n > 0 {
                let name = ["user", "system"][rank];
                notes.push(format!(
                    "{n} {name} entr{} failing {} checksum skipped (see `convtune db check`)",
                    if n == 1 { "y" } else { "ies" },
                    if n == 1 { "its" } else { "their" }
                ));
            }
        }
        let total_near = near.len();
        let order = |a: &Near, b: &Near| {
            a.distance
                .total_cmp(&b.distance)
                .then_with(|| a.rank.cmp(&b.rank))
                .then_with(|| a.time_us.total_cmp(&b.time_us))
                .then_with(|| {
                    let key = |n: &Near| {
                        layers[n.rank].map(|(_, db)| &db.entries()[n.idx as usize].problem)
                    };
                    key(a).cmp(&key(b))
                })
        };
        if near.len() > MAX_NEAREST_TRIES {
            near.select_nth_unstable_by(MAX_NEAREST_TRIES - 1, order);
            near.truncate(MAX_NEAREST_TRIES);
        }
        near.sort_by(order);
        let mut illegal = 0;
        // Neighbours often share a config; check each distinct config once.
        let mut rejected: Vec<&str> = Vec::new();
        for n in &near {
            let Some((name, db)) = layers[n.rank] else {
                continue;
            };
            let e = &db.entries()[n.idx as usize];
            if rejected.contains(&e.config.as_str())
                || check.check(problem, arch, &e.config).is_err()
            {
                rejected.push(&e.config);
                illegal += 1;
                continue;
            }
            if illegal > 0 {
                notes.push(format!("{illegal} closer neighbour(s) had illegal configs"));
            }
            let reason = format!(
                "{}; using the config of the nearest tuned problem in the {name} database \
                 (distance {:.2}, {:.1} µs there): {}",
                if tried_exact {
                    "no legal exact entry"
                } else {
                    "no exact entry"
                },
                n.distance,
                e.time_us,
                e.problem
            );
            return Lookup::nearest(e, n.distance, reason, notes);
        }
        if illegal > 0 {
            notes.push(format!(
                "{illegal} nearest neighbour(s) checked, all illegal here{}",
                if total_near > MAX_NEAREST_TRIES {
                    format!(" ({} more not checked)", total_near - MAX_NEAREST_TRIES)
                } else {
                    String::new()
                }
            ));
        }
        let mut reason = if layers.iter().all(Option::is_none) {
            format!("no tuned database for {arch}")
        } else {
            "no tuned entry for this problem or a problem of the same direction, type and \
             layouts"
                .to_string()
        };
        append_notes(&mut reason, &notes);
        Lookup {
            notes,
            config: None,
            source: Source::None,
            reason,
        }
    }
}

/// A nearest-search candidate.
struct Near {
    distance: f64,
    rank: usize,
    time_us: f64,
    idx: u32,
}

/// Appends `notes` to `reason` as ` [a; b]`.
pub(crate) fn append_notes(reason: &mut String, notes: &[String]) {
    if !notes.is_empty() {
        reason.push_str(" [");
        reason.push_str(&notes.join("; "));
        reason.push(']');
    }
}
