//! Finding the config to use for a problem: an exact tuned entry if one is legal here, else the
//! nearest tuned problem's config if legal, else nothing (the caller falls back to its quick
//! list or heuristic). Every answer says where it came from and why.
//!
//! Legality is re-checked at lookup because a cached winner can be illegal for the problem at
//! hand (another tuner's known failure: a config legal for the tuned problem is served to a
//! nearest neighbour, or the legality rules changed since it was tuned).

use super::entry::{Entry, Fingerprint};
use super::file::TunedDb;
use crate::problem::{ConvProblem, ConvSizes};
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

/// Penalty for each differing filter size, stride, dilation or group count: these change the
/// GEMM's shape and the access pattern, so such a neighbour ranks behind one that differs by
/// 2^10 in a single size.
pub const STRUCTURE_PENALTY: f64 = 10.0;
/// Penalty for each differing padding: it mostly decides vector-load legality, which the
/// config check verifies anyway.
pub const PAD_PENALTY: f64 = 2.0;
/// Nearest candidates checked for legality before giving up (bounds the cost of a lookup when
/// the check is expensive and many neighbours are illegal).
pub const MAX_NEAREST_TRIES: usize = 64;

/// How far a tuned problem is from the one asked for: Σ |log2(a/b)| over n, c, k, H, W (a
/// factor 2 in one size costs 1), plus [`STRUCTURE_PENALTY`] for each of y, x, stride h/w,
/// dilation h/w and groups that differ, plus [`PAD_PENALTY`] for each differing padding.
/// Only problems of one direction, type and layouts are compared at all.
pub fn distance(a: &ConvSizes, b: &ConvSizes) -> f64 {
    let log_ratio = |x: u32, y: u32| ((x as f64) / (y as f64)).log2().abs();
    let sizes = log_ratio(a.n, b.n)
        + log_ratio(a.c, b.c)
        + log_ratio(a.k, b.k)
        + log_ratio(a.h, b.h)
        + log_ratio(a.w, b.w);
    let differ = |x: u32, y: u32| f64::from(u8::from(x != y));
    let structure = differ(a.y, b.y)
        + differ(a.x, b.x)
        + differ(a.stride[0], b.stride[0])
        + differ(a.stride[1], b.stride[1])
        + differ(a.dilation[0], b.dilation[0])
        + differ(a.dilation[1], b.dilation[1])
        + differ(a.groups, b.groups);
    let pad = differ(a.pad[0], b.pad[0]) + differ(a.pad[1], b.pad[1]);
    sizes + STRUCTURE_PENALTY * structure + PAD_PENALTY * pad
}

impl<'a> Layered<'a> {
    /// User then system, skipping layers of another arch (noted in `notes`).
    fn layers(&self, arch: &str, notes: &mut Vec<String>) -> Vec<(&'static str, &'a TunedDb)> {
        [("user", self.user), ("system", self.system)]
            .into_iter()
            .filter_map(|(name, db)| {
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
            .collect()
    }

    /// Finds the config for `problem` on `arch`. With a `fingerprint`, only entries tuned on a
    /// compatible device (same GPU name and compute units) are used; among several exact
    /// entries, one tuned on exactly this fingerprint comes first, then the newest, then the
    /// fastest. Every candidate config passes `check` before it is returned.
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

        for &(name, db) in &layers {
            let mut exact: Vec<&Entry> = db.get(problem).collect();
            let all = exact.len();
            exact.retain(|e| usable(e));
            if exact.len() < all {
                notes.push(format!(
                    "{} {name} entr{} for this problem tuned on another GPU",
                    all - exact.len(),
                    if all - exact.len() == 1 { "y" } else { "ies" }
                ));
            }
            if exact.len() > 1 {
                exact.sort_by(|a, b| {
                    let same = |e: &Entry| Some(&e.fingerprint) == fingerprint;
                    same(b)
                        .cmp(&same(a))
                        .then_with(|| b.date.cmp(&a.date))
                        .then_with(|| a.time_us.total_cmp(&b.time_us))
                });
            }
            for e in exact {
                match check.check(problem, arch, &e.config) {
                    Ok(()) => {
                        let mut reason = format!(
                            "exact match in the {name} database ({:.1} µs on {}, {})",
                            e.time_us, e.fingerprint, e.date
                        );
                        append_notes(&mut reason, &notes);
                        return Lookup {
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

        // Nearest: only the same (direction, dtype, layouts) bucket, closest first; ties go to
        // the user layer, then to the faster entry, then by key so the answer is deterministic.
        let mut near: Vec<(f64, usize, &Entry, &'static str)> = Vec::new();
        for (rank, &(name, db)) in layers.iter().enumerate() {
            for &i in db.bucket(problem) {
                let i = i as usize;
                let (Some(p), e) = (db.problem_at(i), &db.entries()[i]) else {
                    continue;
                };
                if p != problem && usable(e) {
                    near.push((distance(problem.sizes(), p.sizes()), rank, e, name));
                }
            }
        }
        near.sort_by(|a, b| {
            a.0.total_cmp(&b.0)
                .then_with(|| a.1.cmp(&b.1))
                .then_with(|| a.2.time_us.total_cmp(&b.2.time_us))
                .then_with(|| a.2.problem.cmp(&b.2.problem))
        });
        let mut illegal = 0;
        for &(d, _, e, name) in near.iter().take(MAX_NEAREST_TRIES) {
            if check.check(problem, arch, &e.config).is_err() {
                illegal += 1;
                continue;
            }
            if illegal > 0 {
                notes.push(format!("{illegal} closer neighbour(s) had illegal configs"));
            }
            let mut reason = format!(
                "no legal exact entry; using the config of the nearest tuned problem in the \
                 {name} database (distance {d:.2}, {:.1} µs there): {}",
                e.time_us, e.problem
            );
            append_notes(&mut reason, &notes);
            return Lookup {
                config: Some(e.config.clone()),
                source: Source::Nearest {
                    key: e.problem.clone(),
                    distance: d,
                },
                reason,
            };
        }
        if illegal > 0 {
            notes.push(format!(
                "{illegal} nearest neighbour(s) checked, all illegal here{}",
                if near.len() > MAX_NEAREST_TRIES {
                    format!(" ({} more not checked)", near.len() - MAX_NEAREST_TRIES)
                } else {
                    String::new()
                }
            ));
        }
        let mut reason = if layers.is_empty() {
            format!("no tuned database for {arch}")
        } else {
            "no tuned entry for this problem or a problem of the same direction, type and \
             layouts"
                .to_string()
        };
        append_notes(&mut reason, &notes);
        Lookup {
            config: None,
            source: Source::None,
            reason,
        }
    }
}

fn append_notes(reason: &mut String, notes: &[String]) {
    if !notes.is_empty() {
        reason.push_str(" [");
        reason.push_str(&notes.join("; "));
        reason.push(']');
    }
}
