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
/// whose configs differ. Inputs with an entry that fails its checksum, or fewer entries than
/// their header lists, are refused ([`TunedDb::require_trusted`]): a merge would seal them.
pub fn merge(a: &TunedDb, b: &TunedDb) -> Result<(TunedDb, Vec<Conflict>), DbError> {
    a.require_trusted("first merge input")?;
    b.require_trusted("second merge input")?;
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
    /// The header's arch is not spelt as convtune names it (`SM_90`, `sm_90 `): lookups, which
    /// compare names exactly, would ignore the file.
    ArchSpelling {
        /// The header's arch.
        found: String,
        /// The canonical name, if the header names a known arch at all.
        canonical: Option<String>,
    },
    /// The header lists more (or fewer) entries than the file holds: cut short at an entry
    /// boundary, or edited by hand.
    EntryCount {
        /// What the header says.
        declared: usize,
        /// What the file holds.
        found: usize,
    },
    /// The checksum does not match the entry: a field was edited without a new measurement
    /// (or the entry came from a tool that does not fill the checksum). Lookups skip it.
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
            Issue::ArchSpelling {
                found,
                canonical: Some(c),
            } => write!(f, "header arch '{found}' is not spelt canonically: '{c}'"),
            Issue::ArchSpelling {
                found,
                canonical: None,
            } => write!(f, "header arch '{found}' names no known arch"),
            Issue::EntryCount { declared, found } => write!(
                f,
                "header lists {declared} entries, the file holds {found} (cut short or edited)"
            ),
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
    if let Some((declared, found)) = db.count_mismatch() {
        issues.push(Issue::EntryCount { declared, found });
    }
    let mut groups: HashMap<(crate::problem::ConvProblem, &Fingerprint), (usize, &str)> =
        HashMap::new();
    for (i, e) in db.entries().iter().enumerate() {
        if !db.seal_at(i).trusted() {
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

/// The header arch's spelling, and the file name against it: a file named after an arch
/// (`gfx90a.toml`) must hold that arch's entries, spelt as convtune spells it, or a lookup for
/// the arch will ignore it (or use it for the wrong one). A name that is no arch (`merged.toml`)
/// is not compared. Used by `db check` and by lookups of a user database alike.
pub fn arch_issues(db: &TunedDb, path: &std::path::Path) -> Vec<Issue> {
    let mut issues = Vec::new();
    let canonical = crate::arch::Arch::from_name(db.arch()).ok().map(|a| a.name);
    if canonical != Some(db.arch()) {
        issues.push(Issue::ArchSpelling {
            found: db.arch().to_string(),
            canonical: canonical.map(str::to_string),
        });
    }
    let named = path
        .file_stem()
        .and_then(|s| s.to_str())
        .and_then(|s| crate::arch::Arch::from_name(s).ok());
    if let Some(named) = named {
        if named.name != db.arch() {
            issues.push(Issue::ArchMismatch {
                expected: named.name.to_string(),
                found: db.arch().to_string(),
            });
        }
    }
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
