//! The tuning journal: every measured (or failed) candidate is appended as one JSON line and
//! forced to disk before the next, so a tuner that is killed — or whose GPU worker faults —
//! loses nothing already measured, and a rerun skips what the journal already holds.

use super::error::DbError;
use fs2::FileExt;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// One line of the journal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JournalRecord {
    /// Canonical problem key.
    pub problem_key: String,
    /// The candidate perf config.
    pub config: String,
    /// What happened (timed, failed to compile, wrong result, fault, …), in the tuner's own
    /// shape: the journal only stores it.
    pub outcome: serde_json::Value,
    /// Measured time when the candidate ran correctly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_us: Option<f64>,
    /// Seconds from the start of the problem's run (enumeration included) to this record:
    /// the journal then shows the fixed cost before the first candidate and the steady-state
    /// rate after it (issue 16). Absent in journals written before session 9.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_s: Option<f64>,
}

/// An open journal, held exclusively by this process (two tuners appending to one journal
/// would interleave their work, so the second is refused).
#[derive(Debug)]
pub struct Journal {
    file: File,
    path: PathBuf,
}

impl Journal {
    /// Opens (or creates) the journal at `path` for appending. A truncated last line left by a
    /// killed writer is cut off first, so new records start on a line of their own.
    pub fn open(path: &Path) -> Result<Journal, DbError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| DbError::io("creating directory", dir, e))?;
        }
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(|e| DbError::io("opening journal", path, e))?;
        FileExt::try_lock_exclusive(&file)
            .map_err(|e| DbError::io("locking journal (is another tuner using it?)", path, e))?;
        let mut text = Vec::new();
        file.read_to_end(&mut text)
            .map_err(|e| DbError::io("reading journal", path, e))?;
        if text.last().is_some_and(|&b| b != b'\n') {
            let keep = text.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
            file.set_len(keep as u64)
                .and_then(|()| file.sync_all())
                .map_err(|e| DbError::io("truncating partial last line of", path, e))?;
        }
        file.seek(SeekFrom::End(0))
            .map_err(|e| DbError::io("seeking in journal", path, e))?;
        Ok(Journal {
            file,
            path: path.to_path_buf(),
        })
    }

    /// Appends one record and waits until it is on disk.
    pub fn append(&mut self, record: &JournalRecord) -> Result<(), DbError> {
        let mut line = serde_json::to_string(record).map_err(|e| DbError::Journal {
            path: self.path.clone(),
            line: 0,
            message: format!("cannot encode record: {e}"),
        })?;
        line.push('\n');
        // One write call per record: a kill leaves at most this one line partial.
        self.file
            .write_all(line.as_bytes())
            .and_then(|()| self.file.sync_data())
            .map_err(|e| DbError::io("appending to journal", &self.path, e))
    }

    /// Shorthand for [`Self::append`], with no time stamp.
    pub fn record(
        &mut self,
        problem_key: &str,
        config: &str,
        outcome: serde_json::Value,
        time_us: Option<f64>,
    ) -> Result<(), DbError> {
        self.record_at(problem_key, config, outcome, time_us, None)
    }

    /// [`Self::record`] stamped with the seconds since the problem's run started.
    pub fn record_at(
        &mut self,
        problem_key: &str,
        config: &str,
        outcome: serde_json::Value,
        time_us: Option<f64>,
        at_s: Option<f64>,
    ) -> Result<(), DbError> {
        self.append(&JournalRecord {
            problem_key: problem_key.to_string(),
            config: config.to_string(),
            outcome,
            time_us,
            at_s,
        })
    }

    /// The journal's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Reads a journal: the last record for each (problem key, config). A missing file is an
    /// empty journal; an unparsable last line without its newline is a killed writer's partial
    /// record and is skipped; any other bad line is an error naming its line.
    pub fn load(path: &Path) -> Result<HashMap<(String, String), JournalRecord>, DbError> {
        use crate::input::{read_bytes, ReadError, JOURNAL_LIMIT};
        let text = match read_bytes(path, JOURNAL_LIMIT, "journals") {
            Ok(t) => t,
            Err(ReadError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                return Ok(HashMap::new())
            }
            Err(e) => return Err(e.into()),
        };
        let complete = text.last() == Some(&b'\n');
        let lines: Vec<&[u8]> = text.split(|&b| b == b'\n').collect();
        let mut out = HashMap::new();
        for (i, raw) in lines.iter().enumerate() {
            if raw.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let last = i + 1 == lines.len();
            match serde_json::from_slice::<JournalRecord>(raw) {
                Ok(r) => {
                    out.insert((r.problem_key.clone(), r.config.clone()), r);
                }
                Err(_) if last && !complete => {}
                Err(e) => {
                    return Err(DbError::Journal {
                        path: path.to_path_buf(),
                        line: i + 1,
                        message: e.to_string(),
                    })
                }
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn survives_a_truncated_last_line_and_resumes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("j.jsonl");
        {
            let mut j = Journal::open(&path).unwrap();
            j.record("p1", "v1:a", json!({"ok": true}), Some(12.5))
                .unwrap();
            j.record("p1", "v1:b", json!("compile error"), None)
                .unwrap();
        }
        // A writer killed mid-record.
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(br#"{"problem_key":"p1","config":"v1:c","outc"#)
            .unwrap();
        drop(f);
        let got = Journal::load(&path).unwrap();
        assert_eq!(got.len(), 2);
        let a = &got[&("p1".to_string(), "v1:a".to_string())];
        assert_eq!(a.time_us, Some(12.5));
        assert_eq!(a.outcome, json!({"ok": true}));
        assert_eq!(
            got[&("p1".to_string(), "v1:b".to_string())].outcome,
            json!("compile error")
        );

        // Resuming cuts the partial line, and later records win over earlier ones.
        {
            let mut j = Journal::open(&path).unwrap();
            j.record("p1", "v1:b", json!({"ok": true}), Some(3.0))
                .unwrap();
        }
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 3, "{text}");
        assert!(!text.contains("outc\""));
        let got = Journal::load(&path).unwrap();
        assert_eq!(
            got[&("p1".to_string(), "v1:b".to_string())].time_us,
            Some(3.0)
        );
    }

    #[test]
    fn damage_in_the_middle_is_an_error_with_its_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("j.jsonl");
        std::fs::write(
            &path,
            "{\"problem_key\":\"p\",\"config\":\"c\",\"outcome\":1}\nnot json\n\
             {\"problem_key\":\"p\",\"config\":\"d\",\"outcome\":2}\n",
        )
        .unwrap();
        match Journal::load(&path) {
            Err(DbError::Journal { line, .. }) => assert_eq!(line, 2),
            other => panic!("expected a journal error, got {other:?}"),
        }
        // A complete (newline-terminated) bad last line is damage too, not a partial write.
        std::fs::write(&path, "not json\n").unwrap();
        assert!(Journal::load(&path).is_err());
        assert!(Journal::load(&dir.path().join("missing"))
            .unwrap()
            .is_empty());
    }

    #[test]
    fn second_writer_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("j.jsonl");
        let _first = Journal::open(&path).unwrap();
        assert!(Journal::open(&path).is_err());
    }
}
