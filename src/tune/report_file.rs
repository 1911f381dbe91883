//! The `--report` file: a JSON array of winners that several runs (shards, hosts) add to.

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// One element of the `--report` JSON array (read by `scripts/compare-cudnn.py` and
/// `scripts/db-vs-cudnn.sh`: keep the field names).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReportRow {
    /// Canonical problem key.
    pub problem: String,
    /// The winning perf config.
    pub config: String,
    /// Its median time, µs.
    pub time_us: f64,
    /// Its throughput.
    pub tflops: f64,
    /// Candidates evaluated.
    pub tried: usize,
    /// Of those, failed.
    pub failed: usize,
    /// Legal candidates.
    pub legal: usize,
    /// Wall time of the problem, seconds.
    pub seconds: f64,
    /// Device ordinal.
    pub device: usize,
    /// The time, in the same run, of the config used before it (the database entry or the
    /// untuned fallback that the winner replaces); absent when that one was not timed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before_us: Option<f64>,
    /// The fastest in the same run of the configs `convtune lookup --candidates` answered
    /// before (the lookup's own among them): what timing them on first use would pick.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lookup_best_us: Option<f64>,
}

/// Why the report file was not written.
#[derive(Debug, thiserror::Error)]
pub enum ReportFileError {
    /// The file exists but is not a JSON array; it is left alone.
    #[error("report {} exists but is not a JSON array of results; not overwriting it: {source}", path.display())]
    NotAnArray {
        /// The report file.
        path: PathBuf,
        /// The parser's complaint.
        source: serde_json::Error,
    },
    /// The existing report cannot be read (not a regular file, too large, not UTF-8, …).
    #[error(transparent)]
    Read(crate::input::ReadError),
    /// Reading or writing failed.
    #[error("{what} {}: {source}", path.display())]
    Io {
        /// `reading` or `writing`.
        what: &'static str,
        /// The report file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
}

/// Adds `rows` to the JSON array at `path`: entries of other problems already there stay (several
/// runs can share one report, and entries are kept as they are, whatever fields they have), an
/// entry of a problem tuned again is replaced. A file that is not such an array is an error and
/// is left as it is. Written atomically.
pub fn write_report_file(path: &Path, rows: &[ReportRow]) -> Result<(), ReportFileError> {
    let io = |what, source| ReportFileError::Io {
        what,
        path: path.to_path_buf(),
        source,
    };
    let read = crate::input::read_text(path, crate::input::RECORDING_LIMIT, "a JSON report");
    let mut all: Vec<serde_json::Value> = match read {
        Ok(text) => serde_json::from_str(&text).map_err(|source| ReportFileError::NotAnArray {
            path: path.to_path_buf(),
            source,
        })?,
        Err(crate::input::ReadError::Io { source, .. })
            if source.kind() == std::io::ErrorKind::NotFound =>
        {
            Vec::new()
        }
        Err(e) => return Err(ReportFileError::Read(e)),
    };
    all.retain(|v| {
        v.get("problem")
            .and_then(|p| p.as_str())
            .is_none_or(|p| rows.iter().all(|r| r.problem != p))
    });
    for r in rows {
        all.push(serde_json::to_value(r).map_err(|e| io("writing", e.into()))?);
    }
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(|e| io("writing", e))?;
    serde_json::to_writer_pretty(&mut tmp, &all).map_err(|e| io("writing", e.into()))?;
    tmp.persist(path).map_err(|e| io("writing", e.error))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(problem: &str, time_us: f64) -> ReportRow {
        ReportRow {
            problem: problem.into(),
            config: "v1:x".into(),
            time_us,
            tflops: 1.0,
            tried: 1,
            failed: 0,
            legal: 1,
            seconds: 0.1,
            device: 0,
            before_us: None,
            lookup_best_us: None,
        }
    }

    #[test]
    fn report_appends_replaces_and_refuses_a_corrupt_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.json");
        write_report_file(&path, &[row("a", 2.0)]).unwrap();
        write_report_file(&path, &[row("b", 3.0), row("a", 1.0)]).unwrap();
        let all: Vec<serde_json::Value> =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(all.len(), 2, "{all:?}");
        let a = all.iter().find(|v| v["problem"] == "a").unwrap();
        assert_eq!(
            a["time_us"], 1.0,
            "a problem tuned again replaces its entry"
        );
        for field in [
            "config", "tflops", "tried", "failed", "legal", "seconds", "device",
        ] {
            assert!(a.get(field).is_some(), "the scripts read '{field}': {a}");
        }
        std::fs::write(&path, "not json").unwrap();
        let err = write_report_file(&path, &[row("c", 1.0)]).unwrap_err();
        assert!(err.to_string().contains("not overwriting"), "{err}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "not json");
    }

    #[test]
    fn entries_of_other_runs_keep_their_fields() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.json");
        std::fs::write(&path, r#"[{"problem": "old", "note": "kept"}]"#).unwrap();
        write_report_file(&path, &[row("new", 1.0)]).unwrap();
        let all: Vec<serde_json::Value> =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(all[0]["note"], "kept");
        assert_eq!(all[1]["problem"], "new");
    }
}
