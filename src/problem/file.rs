//! Problem lists on disk (`--problems FILE`): read with the limits of [`crate::input`], parsed
//! line by line, and an empty list refused (a tuning run over nothing is a wrong path, not a
//! success).

use super::parse::{parse_problem_file, ParseError};
use super::ConvProblem;
use crate::input::{read_text, ReadError, PROBLEM_FILE_LIMIT};
use std::path::{Path, PathBuf};

/// Why a problem list could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ProblemFileError {
    /// Not readable as text (absent, not a regular file, too large, not UTF-8).
    #[error(transparent)]
    Read(#[from] ReadError),
    /// A line that names no problem.
    #[error("{path}: {source}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// The error, with its line number.
        source: ParseError,
    },
    /// Nothing but blank lines and comments.
    #[error("{path}: no problems in the file (only blank lines and comments)")]
    Empty {
        /// The file.
        path: PathBuf,
    },
}

/// Reads and parses a problem list: at least one problem, every line valid.
pub fn read_problem_file(path: &Path) -> Result<Vec<ConvProblem>, ProblemFileError> {
    let text = read_text(path, PROBLEM_FILE_LIMIT, "problem lists")?;
    let problems = parse_problem_file(&text).map_err(|source| ProblemFileError::Parse {
        path: path.to_path_buf(),
        source,
    })?;
    if problems.is_empty() {
        return Err(ProblemFileError::Empty {
            path: path.to_path_buf(),
        });
    }
    Ok(problems)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_lists_bad_utf8_and_bom() {
        // Issue 18 item 11: an empty list exited 0, invalid UTF-8 had no line, a BOM broke line 1.
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("list.txt");
        std::fs::write(&p, "# only a comment\n\n").unwrap();
        let e = read_problem_file(&p).unwrap_err();
        assert!(matches!(e, ProblemFileError::Empty { .. }), "{e}");
        std::fs::write(
            &p,
            b"\xEF\xBB\xBFconv -n 1 -c 1 -H 1 -W 1 -k 1 -y 1 -x 1 -F 1\nconv -n \xc3\x28\n",
        )
        .unwrap();
        let e = read_problem_file(&p).unwrap_err();
        assert!(e.to_string().contains("list.txt:2:9: not UTF-8"), "{e}");
        std::fs::write(&p, "\u{feff}conv -n 1 -c 1 -H 1 -W 1 -k 1 -y 1 -x 1 -F 1\n").unwrap();
        assert_eq!(read_problem_file(&p).unwrap().len(), 1);
        std::fs::write(
            &p,
            "conv -n 1 -c 1 -H 1 -W 1 -k 1 -y 1 -x 1 -F 1\nconv -n\n",
        )
        .unwrap();
        let e = read_problem_file(&p).unwrap_err();
        assert!(
            e.to_string().contains("list.txt: line 2: -n needs a value"),
            "{e}"
        );
    }
}
