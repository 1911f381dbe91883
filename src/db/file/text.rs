//! The database file's text: parsing it (a fast path for the layout convtune writes, the full
//! TOML parser for anything else, both checked the same way) and writing it in that layout.

use super::{Keyed, TunedDb, FORMAT};
use crate::db::entry::{toml_string, Entry, Seal};
use crate::db::error::{line_col, DbError};
use crate::db::fast;
use crate::db::key::KeyParser;
use crate::input::{read_text, ReadError, DB_FILE_LIMIT};
use rayon::prelude::*;
use serde::Deserialize;
use std::path::Path;

/// The file as the TOML parser reads it. Unknown top-level tables are errors: a misspelt
/// `[[Entry]]` would otherwise drop its entry silently (and a merge would then delete it).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileRepr {
    header: Header,
    #[serde(default)]
    entry: Vec<Entry>,
}

#[derive(Deserialize)]
struct Header {
    format: u32,
    arch: String,
    /// How many entries the writer wrote: a file cut at an entry boundary still parses, and
    /// only this count tells.
    #[serde(default)]
    entries: Option<usize>,
}

impl TunedDb {
    /// Parses database text. `origin` names the text in errors (a path, or `<system sm_90>`).
    /// Files in the layout convtune writes take a fast path; anything else goes through the full
    /// TOML parser, whose errors carry line and column.
    pub fn parse(text: &str, origin: &str) -> Result<TunedDb, DbError> {
        let (format, arch, declared, entries) = match fast::parse(text) {
            Some(p) => (p.format, p.arch, p.declared, p.entries),
            None => {
                let repr: FileRepr = toml::from_str(text).map_err(|e| {
                    let (line, column) = e.span().map_or((1, 1), |s| line_col(text, s.start));
                    DbError::Syntax {
                        origin: origin.to_string(),
                        line,
                        column,
                        message: e.message().trim().to_string(),
                    }
                })?;
                (
                    repr.header.format,
                    repr.header.arch,
                    repr.header.entries,
                    repr.entry,
                )
            }
        };
        if format != FORMAT {
            let who = if format > FORMAT {
                "a newer convtune wrote this file"
            } else {
                "no convtune ever wrote it (formats start at 1)"
            };
            return Err(DbError::Invalid {
                origin: origin.to_string(),
                what: format!(
                    "format {format} is not supported (this build reads format {FORMAT}); {who}"
                ),
            });
        }
        // Validation and key parsing are per entry and run on all cores; indexing is sequential.
        if let Some(k) = entries.par_iter().position_first(|e| e.validate().is_err()) {
            let e = &entries[k];
            let why = e.validate().err().unwrap_or_default();
            let at = entry_lines(text)
                .get(k)
                .map_or(String::new(), |l| format!(" (line {l})"));
            return Err(DbError::Invalid {
                origin: origin.to_string(),
                what: format!("entry #{}{at} '{}': {why}", k + 1, e.problem),
            });
        }
        let keys: Vec<(Result<Keyed, String>, Seal)> = entries
            .par_iter()
            .with_min_len(4096)
            .map_init(KeyParser::default, |kp, e| {
                (kp.parse(&e.problem).map(Keyed::new), e.seal())
            })
            .collect();
        let mut db = TunedDb::new(&arch);
        db.declared = declared;
        let n = entries.len();
        db.entries = entries;
        db.seals.reserve(n);
        db.problems.reserve(n);
        db.next_same.reserve(n);
        db.near_pos.reserve(n);
        db.exact.reserve(n);
        for (i, (key, seal)) in keys.into_iter().enumerate() {
            db.index(i, key, seal);
        }
        Ok(db)
    }

    /// Reads a database file (a regular file of at most [`DB_FILE_LIMIT`] bytes).
    pub fn load(path: &Path) -> Result<TunedDb, DbError> {
        let text = read_text(path, DB_FILE_LIMIT, "databases")?;
        TunedDb::parse(&text, &path.display().to_string())
    }

    /// Reads a database file for `arch`, or starts an empty one when the file does not exist.
    pub fn load_or_new(path: &Path, arch: &str) -> Result<TunedDb, DbError> {
        let db = match read_text(path, DB_FILE_LIMIT, "databases") {
            Ok(text) => TunedDb::parse(&text, &path.display().to_string())?,
            Err(ReadError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                return Ok(TunedDb::new(arch))
            }
            Err(e) => return Err(e.into()),
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
        out.push_str(&format!("\nentries = {}\n", self.entries.len()));
        // Trusted entries get the whole-entry checksum (upgrading older ones); an entry that
        // fails its checksum keeps it, so the damage stays visible.
        for i in self.sorted_indices() {
            let e = &self.entries[i];
            out.push('\n');
            if self.seal_at(i).trusted() {
                e.write_toml(&mut out, &e.expected_checksum());
            } else {
                e.write_toml(&mut out, &e.checksum);
            }
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
