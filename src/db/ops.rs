//! Whole-database operations behind `convtune db merge|diff|check|stale`: what a maintainer needs
//! to combine databases from several machines, review a change, and trust what ships.

use super::entry::{Entry, Fingerprint};
use super::error::DbError;
use super::file::TunedDb;
use super::lookup::ConfigCheck;
use std::collections::{BTreeMap, HashMap};
use std::fmt;

/// Two entries for one problem and fingerprint with different configs: the faster was kept,
/// but a human may want to know that two runs disagreed (noise, or a search that missed).
#[derive(Debug, Clone, PartialEq)]
pub struct Conflict {
    /// The entry that stays (the faster).
    pub kept: Entry,
    /// The entry that was dropped.
    pub dropped: Entry,
}

impl fmt::Display for Conflict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} on {}: kept {} ({} µs) over {} ({} µs)",
            self.kept.problem,
            self.kept.fingerprint,
            self.kept.config,
            self.kept.time_us,
            self.dropped.config,
            self.dropped.time_us
        )
    }
}

/// Combines two databases of one arch: the union of their entries, and for one problem and
/// fingerprint in both, the faster measurement (a tie keeps `a`'s). Conflicts list the pairs
/// whose configs differ.
pub fn merge(a: &TunedDb, b: &TunedDb) -> Result<(TunedDb, Vec<Conflict>), DbError> {
    if a.arch() != b.arch() {
        return Err(DbError::ArchMismatch {
            origin: "merge".into(),
            expected: a.arch().to_string(),
            found: b.arch().to_string(),
        });
    }
    let mut out = a.clone();
    let mut conflicts = Vec::new();
    for e in b.sorted() {
        let existing = out.find(&e.problem, &e.fingerprint).cloned();
        // Entries of a loaded database already passed validation, so insert cannot refuse them.
        out.insert(e.clone())?;
        if let Some(old) = existing {
            if old.config != e.config {
                let (kept, dropped) = if e.time_us < old.time_us {
                    (e.clone(), old)
                } else {
                    (old, e.clone())
                };
                conflicts.push(Conflict { kept, dropped });
            }
        }
    }
    Ok((out, conflicts))
}

/// One difference between two databases, matched by problem key and fingerprint.
#[derive(Debug, Clone, PartialEq)]
pub enum DiffLine {
    /// Only in the new database.
    Added(Entry),
    /// Only in the old database.
    Removed(Entry),
    /// Another config won (the time usually changed with it).
    ConfigChanged {
        /// The old entry.
        old: Entry,
        /// The new entry.
        new: Entry,
    },
    /// Same config, another measured time (a re-measurement).
    TimeChanged {
        /// The old entry.
        old: Entry,
        /// The new entry.
        new: Entry,
    },
}

impl fmt::Display for DiffLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DiffLine::Added(e) => write!(
                f,
                "+ {} [{}] {} {} µs",
                e.problem, e.fingerprint, e.config, e.time_us
            ),
            DiffLine::Removed(e) => write!(
                f,
                "- {} [{}] {} {} µs",
                e.problem, e.fingerprint, e.config, e.time_us
            ),
            DiffLine::ConfigChanged { old, new } => write!(
                f,
                "~ {} [{}] config {} -> {} ({} -> {} µs)",
                new.problem, new.fingerprint, old.config, new.config, old.time_us, new.time_us
            ),
            DiffLine::TimeChanged { old, new } => write!(
                f,
                "~ {} [{}] time {} -> {} µs",
                new.problem, new.fingerprint, old.time_us, new.time_us
            ),
        }
    }
}

/// The differences from `a` (old) to `b` (new), in key order. Entries are matched by their key
/// text and fingerprint, so a key that was rewritten shows as removed plus added.
pub fn diff(a: &TunedDb, b: &TunedDb) -> Vec<DiffLine> {
    let index = |db: &TunedDb| -> BTreeMap<(String, Fingerprint), Entry> {
        db.sorted()
            .into_iter()
            .map(|e| ((e.problem.clone(), e.fingerprint.clone()), e.clone()))
            .collect()
    };
    let (old, mut new) = (index(a), index(b));
    let mut out = Vec::new();
    for (k, o) in old {
        match new.remove(&k) {
            None => out.push(DiffLine::Removed(o)),
            Some(n) if n.config != o.config => out.push(DiffLine::ConfigChanged { old: o, new: n }),
            Some(n) if n.time_us != o.time_us => out.push(DiffLine::TimeChanged { old: o, new: n }),
            Some(_) => {}
        }
    }
    out.extend(new.into_values().map(DiffLine::Added));
    let key = |d: &DiffLine| match d {
        DiffLine::Added(e) | DiffLine::Removed(e) => e.problem.clone(),
        DiffLine::ConfigChanged { new, .. } | DiffLine::TimeChanged { new, .. } => {
            new.problem.clone()
        }
    };
    out.sort_by_key(key);
    out
}

/// Something `check` found wrong with a database.
#[derive(Debug, Clone, PartialEq)]
pub enum Issue {
    /// The header names another arch than expected (e.g. a file renamed by hand).
    ArchMismatch {
        /// The arch expected (from the file name or the caller).
        expected: String,
        /// The arch in the header.
        found: String,
    },
    /// Several entries for one problem and fingerprint (insert never creates this; a hand
    /// merge does). Lookups use the fastest.
    Duplicate {
        /// The key of the first of them.
        key: String,
        /// The fingerprint they share.
        fingerprint: Fingerprint,
        /// How many there are.
        count: usize,
    },
    /// The key does not parse as a problem: the entry is dead weight.
    UnparsableKey {
        /// The key text.
        key: String,
        /// The parser's reason.
        why: String,
    },
    /// The key parses but is not written canonically, so tools that match key text miss it.
    NonCanonicalKey {
        /// The key as written.
        key: String,
        /// How it should be written.
        canonical: String,
    },
    /// The config fails the legality check for its own problem.
    IllegalConfig {
        /// The problem key.
        key: String,
        /// The config.
        config: String,
        /// Why the check refused it.
        why: String,
    },
    /// The checksum does not match the entry: the config or key was edited without a new
    /// measurement (or the entry came from a tool that does not fill the checksum).
    ChecksumMismatch {
        /// The problem key.
        key: String,
        /// What the entry carries.
        found: String,
        /// What its fields hash to.
        expected: String,
    },
}

impl fmt::Display for Issue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Issue::ArchMismatch { expected, found } => {
                write!(f, "header arch is '{found}', expected '{expected}'")
            }
            Issue::Duplicate {
                key,
                fingerprint,
                count,
            } => write!(f, "{count} entries for {key} on {fingerprint}"),
            Issue::UnparsableKey { key, why } => write!(f, "key does not parse: {key}: {why}"),
            Issue::NonCanonicalKey { key, canonical } => {
                write!(f, "key not canonical: {key} (canonical: {canonical})")
            }
            Issue::IllegalConfig { key, config, why } => {
                write!(f, "illegal config {config} for {key}: {why}")
            }
            Issue::ChecksumMismatch {
                key,
                found,
                expected,
            } => write!(
                f,
                "checksum of {key} is '{found}', its fields give {expected}"
            ),
        }
    }
}

/// Audits a database for `expected_arch`: everything that makes an entry useless or
/// untrustworthy. An empty result means every entry can be served.
pub fn check(db: &TunedDb, expected_arch: &str, config_check: &dyn ConfigCheck) -> Vec<Issue> {
    let mut issues = Vec::new();
    if db.arch() != expected_arch {
        issues.push(Issue::ArchMismatch {
            expected: expected_arch.to_string(),
            found: db.arch().to_string(),
        });
    }
    let mut groups: HashMap<(crate::problem::ConvProblem, &Fingerprint), (usize, &str)> =
        HashMap::new();
    for (i, e) in db.entries().iter().enumerate() {
        if e.checksum != e.expected_checksum() {
            issues.push(Issue::ChecksumMismatch {
                key: e.problem.clone(),
                found: e.checksum.clone(),
                expected: e.expected_checksum(),
            });
        }
        let Some(p) = db.problem_at(i) else { continue };
        let g = groups
            .entry((*p, &e.fingerprint))
            .or_insert((0, e.problem.as_str()));
        g.0 += 1;
        let canonical = p.key();
        if canonical != e.problem {
            issues.push(Issue::NonCanonicalKey {
                key: e.problem.clone(),
                canonical,
            });
        }
        if let Err(why) = config_check.check(p, db.arch(), &e.config) {
            issues.push(Issue::IllegalConfig {
                key: e.problem.clone(),
                config: e.config.clone(),
                why,
            });
        }
    }
    for (e, why) in db.unparsed() {
        issues.push(Issue::UnparsableKey {
            key: e.problem.clone(),
            why: why.to_string(),
        });
    }
    let mut dups: Vec<Issue> = groups
        .into_iter()
        .filter(|(_, (n, _))| *n > 1)
        .map(|((_, fp), (count, key))| Issue::Duplicate {
            key: key.to_string(),
            fingerprint: fp.clone(),
            count,
        })
        .collect();
    dups.sort_by(|a, b| format!("{a}").cmp(&format!("{b}")));
    issues.extend(dups);
    issues
}

/// Entries that should be retuned on the machine with `fingerprint` running convtune `version`:
/// every entry of each problem that has no *fresh* entry (one measured on exactly this
/// fingerprint by this version). This covers a driver or clock change, a new convtune, and
/// problems tuned only on other GPUs. Returned in file order.
pub fn stale<'a>(db: &'a TunedDb, fingerprint: &Fingerprint, version: &str) -> Vec<&'a Entry> {
    let fresh = |e: &Entry| e.fingerprint == *fingerprint && e.convtune_version == version;
    let sorted = db.sorted();
    let mut out = Vec::new();
    // Sorted by key, so one problem's entries are adjacent (non-canonical spellings of one
    // problem are not merged here; `check` reports those).
    for group in sorted.chunk_by(|a, b| a.problem == b.problem) {
        if !group.iter().any(|e| fresh(e)) {
            out.extend(group.iter().copied());
        }
    }
    out
}
