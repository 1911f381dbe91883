//! Errors of the tuned database: each names the file (or embedded database) and, where the text
//! is at fault, the line, so a user can open the file at the spot and fix it.

use std::path::PathBuf;

/// Why a database (or journal) could not be read, written or updated.
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    /// The text is not valid TOML, or not a database of the expected shape.
    #[error("{origin}:{line}:{column}: {message}")]
    Syntax {
        /// File path, or `<system sm_90>` for an embedded database.
        origin: String,
        /// 1-based line of the offending text.
        line: usize,
        /// 1-based column (in characters) of the offending text.
        column: usize,
        /// What the parser objected to.
        message: String,
    },
    /// Well-formed TOML whose content breaks a rule of the schema (a negative time, a wrong
    /// format version).
    #[error("{origin}: {what}")]
    Invalid {
        /// File path or embedded-database name.
        origin: String,
        /// The broken rule, naming the entry.
        what: String,
    },
    /// The file holds a database for another architecture than the one asked for.
    #[error("{origin}: database is for arch '{found}', expected '{expected}'")]
    ArchMismatch {
        /// File path or embedded-database name.
        origin: String,
        /// The arch the caller works with.
        expected: String,
        /// The arch in the file's header.
        found: String,
    },
    /// A file exists at the destination but is not a readable database: writing would destroy
    /// what may be someone's hand edits, so the write is refused.
    #[error("refusing to overwrite {path}, which does not parse as a tuned database: {cause}")]
    RefuseOverwrite {
        /// The file left untouched.
        path: PathBuf,
        /// Why it failed to parse.
        cause: Box<DbError>,
    },
    /// The file could not be read as text (absent, not a regular file, too large, not UTF-8).
    #[error(transparent)]
    Read(#[from] crate::input::ReadError),
    /// An operating-system error on a file (the OS error is the source, not repeated here).
    #[error("{what} {path}")]
    Io {
        /// The operation that failed (`reading`, `locking`, `renaming into`, …).
        what: &'static str,
        /// The file it failed on.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// A journal line in the middle of the file does not parse (a truncated last line is
    /// tolerated; anything else means the file was damaged or is not a journal).
    #[error("{path}:{line}: bad journal record: {message}")]
    Journal {
        /// The journal file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What was wrong.
        message: String,
    },
    /// No absolute directory to keep the user database in: `HOME` and `XDG_DATA_HOME` are unset
    /// (or relative) and the account has no home directory.
    #[error(
        "no place for the user database: HOME and XDG_DATA_HOME are unset or relative and the \
         account has no home directory; give --db FILE or set CONVTUNE_DB"
    )]
    NoUserDbPath,
    /// An entry or value handed to the database by a caller breaks a rule of the schema.
    #[error("invalid entry for '{key}': {why}")]
    BadEntry {
        /// The entry's problem key.
        key: String,
        /// The rule it breaks.
        why: String,
    },
}

impl DbError {
    /// Shorthand for an [`DbError::Io`] error.
    pub(crate) fn io(what: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        DbError::Io {
            what,
            path: path.into(),
            source,
        }
    }
}

/// Converts a byte offset into a 1-based (line, column) pair; columns count characters so that
/// editors land on the right spot with non-ASCII text.
pub(crate) fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    // Step back to a char boundary so slicing cannot panic on a span inside a character.
    let mut at = offset;
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    let before = &text[..at];
    let line = before.bytes().filter(|&b| b == b'\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before[line_start..].chars().count() + 1;
    (line, column)
}

#[cfg(test)]
mod tests {
    use super::line_col;

    #[test]
    fn offsets_map_to_lines_and_columns() {
        let t = "a = 1\nbé = 2\nc";
        assert_eq!(line_col(t, 0), (1, 1));
        assert_eq!(line_col(t, 6), (2, 1));
        // 'é' is two bytes; the '=' after it is the 4th character of line 2.
        let eq = t.find("= 2").unwrap();
        assert_eq!(line_col(t, eq), (2, 4));
        assert_eq!(line_col(t, t.len() + 10), (3, 2));
        // An offset inside a multi-byte character does not panic.
        assert_eq!(line_col(t, 8), (2, 2));
    }
}
