//! [`TunedDb`]: one architecture's tuned entries in memory, indexed for lookups, read from and
//! written to the TOML file format described in `tuned-db/README.md`.

use super::entry::{toml_string, Entry, Fingerprint};
use super::error::{line_col, DbError};
use super::key::parse_key;
use crate::problem::{ConvProblem, DType, Direction, Layout, Tensor};
use serde::Deserialize;
use std::collections::HashMap;
use std::path::Path;

/// The file format version this build reads and writes. Adding an optional field does not
/// change it (old readers ignore unknown keys, new readers default missing ones); only a change
/// that old readers would misread does.
pub const FORMAT: u32 = 1;

/// The problems whose configs can stand in for each other in a nearest-neighbour search: a
/// config for another direction, type or layout is tuned for different memory access, so only
/// problems sharing all of these are compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Bucket {
    direction: Direction,
    dtype: DType,
    layouts: [Layout; 3],
}

impl Bucket {
    pub(crate) fn of(p: &ConvProblem) -> Bucket {
        Bucket {
            direction: p.direction(),
            dtype: p.dtype(),
            layouts: Tensor::ALL.map(|t| p.layout(t)),
        }
    }
}

/// The tuned database of one architecture.
///
/// Entries keep the order they were read or inserted in (so a loaded file is not re-sorted until
/// it is written), and are indexed by problem (for exact hits) and by [`Bucket`] (for nearest
/// searches). Keys are parsed once, when an entry enters the database; an entry whose key does
/// not parse is kept (and written back) so no data is lost, but lookups never return it and
/// [`super::check`] reports it.
#[derive(Debug, Clone)]
pub struct TunedDb {
    arch: String,
    entries: Vec<Entry>,
    problems: Vec<Option<ConvProblem>>,
    exact: HashMap<ConvProblem, Vec<u32>>,
    buckets: HashMap<Bucket, Vec<u32>>,
    unparsed: Vec<(u32, String)>,
    /// Bumped by every change, so writers can skip rewriting an unchanged file.
    revision: u64,
}

/// What [`TunedDb::insert`] did with an entry.
#[derive(Debug, Clone, PartialEq)]
pub enum Inserted {
    /// No entry for this problem and fingerprint existed.
    Added,
    /// The new entry was faster and took the place of this one.
    Replaced {
        /// The slower entry that was dropped.
        previous: Entry,
    },
    /// An entry at least as fast was already there; the new one was dropped.
    Kept {
        /// The time of the entry that stayed.
        existing_time_us: f64,
    },
}

#[derive(Deserialize)]
struct FileRepr {
    header: Header,
    #[serde(default)]
    entry: Vec<Entry>,
}

#[derive(Deserialize)]
struct Header {
    format: u32,
    arch: String,
}

impl TunedDb {
    /// An empty database for `arch` (`sm_90`, `gfx90a`, …).
    pub fn new(arch: &str) -> TunedDb {
        TunedDb {
            arch: arch.to_string(),
            entries: Vec::new(),
            problems: Vec::new(),
            exact: HashMap::new(),
            buckets: HashMap::new(),
            unparsed: Vec::new(),
            revision: 0,
        }
    }

    /// A counter that changes whenever the entries do.
    pub(crate) fn revision(&self) -> u64 {
        self.revision
    }

    /// The architecture the entries were tuned for; configs do not carry over between arches.
    pub fn arch(&self) -> &str {
        &self.arch
    }

    /// Number of entries, including ones whose key does not parse.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there are no entries.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// All entries in read/insert order (see [`Self::sorted`] for file order).
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// All entries in the order the file is written in: by problem key, then fingerprint, then
    /// time, then config, so that output is identical whatever order entries arrived in.
    pub fn sorted(&self) -> Vec<&Entry> {
        let mut v: Vec<&Entry> = self.entries.iter().collect();
        v.sort_by(|a, b| {
            a.problem
                .cmp(&b.problem)
                .then_with(|| a.fingerprint.cmp(&b.fingerprint))
                .then_with(|| a.time_us.total_cmp(&b.time_us))
                .then_with(|| a.config.cmp(&b.config))
        });
        v
    }

    /// Entries tuned for exactly this problem (any fingerprint): a hash-map hit.
    pub fn get(&self, problem: &ConvProblem) -> impl Iterator<Item = &Entry> + '_ {
        self.exact
            .get(problem)
            .into_iter()
            .flatten()
            .map(|&i| &self.entries[i as usize])
    }

    /// Entries whose key is `key` or names the same problem. A key that does not parse matches
    /// only entries spelled exactly the same.
    pub fn get_key(&self, key: &str) -> Vec<&Entry> {
        match parse_key(key) {
            Ok(p) => self.get(&p).collect(),
            Err(_) => self
                .unparsed
                .iter()
                .map(|&(i, _)| &self.entries[i as usize])
                .filter(|e| e.problem == key)
                .collect(),
        }
    }

    /// Entries whose key did not parse, with the parser's reason.
    pub fn unparsed(&self) -> impl Iterator<Item = (&Entry, &str)> + '_ {
        self.unparsed
            .iter()
            .map(|(i, why)| (&self.entries[*i as usize], why.as_str()))
    }

    /// The parsed problem of entry `i` (an index into [`Self::entries`]).
    pub(crate) fn problem_at(&self, i: usize) -> Option<&ConvProblem> {
        self.problems.get(i).and_then(Option::as_ref)
    }

    /// Indices of the entries in the same bucket as `problem`.
    pub(crate) fn bucket(&self, problem: &ConvProblem) -> &[u32] {
        self.buckets
            .get(&Bucket::of(problem))
            .map_or(&[], Vec::as_slice)
    }

    /// The entry for this problem measured on exactly this fingerprint, if any.
    pub fn find(&self, problem_key: &str, fingerprint: &Fingerprint) -> Option<&Entry> {
        self.find_index(problem_key, fingerprint)
            .map(|i| &self.entries[i])
    }

    fn find_index(&self, problem_key: &str, fingerprint: &Fingerprint) -> Option<usize> {
        let same = |i: usize| self.entries[i].fingerprint == *fingerprint;
        match parse_key(problem_key) {
            Ok(p) => self
                .exact
                .get(&p)?
                .iter()
                .map(|&i| i as usize)
                .find(|&i| same(i)),
            Err(_) => self
                .unparsed
                .iter()
                .map(|&(i, _)| i as usize)
                .find(|&i| self.entries[i].problem == problem_key && same(i)),
        }
    }

    /// Adds a measurement, keeping only the faster one when this problem already has an entry
    /// measured on the same fingerprint (the slower one is then noise or an older code
    /// generator). Entries that break [`Entry::validate`] are refused.
    pub fn insert(&mut self, entry: Entry) -> Result<Inserted, DbError> {
        entry.validate().map_err(|why| DbError::BadEntry {
            key: entry.problem.clone(),
            why,
        })?;
        match self.find_index(&entry.problem, &entry.fingerprint) {
            Some(i) if entry.time_us < self.entries[i].time_us => {
                // Same problem and fingerprint, so the index stays valid.
                let previous = std::mem::replace(&mut self.entries[i], entry);
                self.revision += 1;
                Ok(Inserted::Replaced { previous })
            }
            Some(i) => Ok(Inserted::Kept {
                existing_time_us: self.entries[i].time_us,
            }),
            None => {
                self.push(entry);
                Ok(Inserted::Added)
            }
        }
    }

    /// Appends without deduplication (loading keeps duplicates so `check` can report them).
    fn push(&mut self, entry: Entry) {
        self.revision += 1;
        let i = self.entries.len() as u32;
        match parse_key(&entry.problem) {
            Ok(p) => {
                self.exact.entry(p).or_default().push(i);
                self.buckets.entry(Bucket::of(&p)).or_default().push(i);
                self.problems.push(Some(p));
            }
            Err(why) => {
                self.unparsed.push((i, why));
                self.problems.push(None);
            }
        }
        self.entries.push(entry);
    }

    /// Parses database text. `origin` names the text in errors (a path, or `<system sm_90>`).
    pub fn parse(text: &str, origin: &str) -> Result<TunedDb, DbError> {
        let repr: FileRepr = toml::from_str(text).map_err(|e| {
            let (line, column) = e.span().map_or((1, 1), |s| line_col(text, s.start));
            DbError::Syntax {
                origin: origin.to_string(),
                line,
                column,
                message: e.message().trim().to_string(),
            }
        })?;
        if repr.header.format != FORMAT {
            return Err(DbError::Invalid {
                origin: origin.to_string(),
                what: format!(
                    "format {} is not supported (this build reads format {FORMAT}); \
                     a newer convtune wrote this file",
                    repr.header.format
                ),
            });
        }
        let mut db = TunedDb::new(&repr.header.arch);
        db.entries.reserve(repr.entry.len());
        db.problems.reserve(repr.entry.len());
        db.exact.reserve(repr.entry.len());
        let mut lines: Option<Vec<usize>> = None;
        for (n, e) in repr.entry.into_iter().enumerate() {
            if let Err(why) = e.validate() {
                let lines = lines.get_or_insert_with(|| entry_lines(text));
                let at = lines
                    .get(n)
                    .map_or(String::new(), |l| format!(" (line {l})"));
                return Err(DbError::Invalid {
                    origin: origin.to_string(),
                    what: format!("entry #{}{at} '{}': {why}", n + 1, e.problem),
                });
            }
            db.push(e);
        }
        Ok(db)
    }

    /// Reads a database file.
    pub fn load(path: &Path) -> Result<TunedDb, DbError> {
        let text = std::fs::read_to_string(path).map_err(|e| DbError::io("reading", path, e))?;
        TunedDb::parse(&text, &path.display().to_string())
    }

    /// Reads a database file for `arch`, or starts an empty one when the file does not exist.
    pub fn load_or_new(path: &Path, arch: &str) -> Result<TunedDb, DbError> {
        let db = match std::fs::read_to_string(path) {
            Ok(text) => TunedDb::parse(&text, &path.display().to_string())?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(TunedDb::new(arch)),
            Err(e) => return Err(DbError::io("reading", path, e)),
        };
        if db.arch != arch {
            return Err(DbError::ArchMismatch {
                origin: path.display().to_string(),
                expected: arch.to_string(),
                found: db.arch,
            });
        }
        Ok(db)
    }

    /// The file text: header, then entries in [`Self::sorted`] order, in a fixed layout, so the
    /// same database always gives the same bytes and version control diffs stay small.
    pub fn to_toml_string(&self) -> String {
        let mut out = String::with_capacity(64 + self.entries.len() * 480);
        out.push_str(
            "# convtune tuned performance database; schema in tuned-db/README.md.\n\
             # Entries are sorted by problem key. Written by convtune: keep the layout when editing.\n\n",
        );
        out.push_str("[header]\n");
        out.push_str(&format!("format = {FORMAT}\narch = "));
        toml_string(&mut out, &self.arch);
        out.push('\n');
        for e in self.sorted() {
            out.push('\n');
            e.write_toml(&mut out);
        }
        out
    }
}

/// 1-based line numbers of the `[[entry]]` headers, to point at an entry that fails a rule after
/// TOML parsing (serde does not keep positions). Best effort: a file that spells entries another
/// way just gets no line numbers.
fn entry_lines(text: &str) -> Vec<usize> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| {
            let l = l.trim_start();
            l.strip_prefix("[[entry]]")
                .is_some_and(|rest| rest.trim().is_empty() || rest.trim().starts_with('#'))
        })
        .map(|(i, _)| i + 1)
        .collect()
}
