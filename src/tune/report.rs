//! What a campaign tells its caller: typed, serializable, and printable as the CLI prints it.
//!
//! Every value here is both data (serde, for `--json` and the `--report` file) and text
//! (`Display`, the lines the CLI shows), so the two never drift apart.

use super::TuneReport;
use crate::runtime::Fingerprint;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

/// Everything a campaign produced.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "mode", rename_all = "snake_case")]
pub enum CampaignReport {
    /// Candidates measured on GPUs; winners written to the database.
    Tuned(TunedReport),
    /// Candidates only enumerated, checked and compiled.
    DryRun(DryRunReport),
}

/// How a tuning campaign was set up: announced before the first problem starts.
#[derive(Debug, Clone, Serialize)]
pub struct TuneSetup {
    /// Problems to tune (after sharding).
    pub problems: usize,
    /// The arch tuned for.
    pub arch: String,
    /// The device the database entries are attributed to.
    pub fingerprint: Fingerprint,
    /// Device ordinals, one worker each.
    pub devices: Vec<usize>,
    /// Where the search space came from.
    pub space: String,
    /// Search strategy.
    pub strategy: String,
    /// The database the winners go to.
    pub database: PathBuf,
    /// The journal (one per device, with a `.gpuN` suffix, when several devices tune).
    pub journal: PathBuf,
}

impl fmt::Display for TuneSetup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "convtune: {} problem(s) on {} × {}, space {}, strategy {}, database {}, journal {}",
            self.problems,
            self.devices.len(),
            self.fingerprint,
            self.space,
            self.strategy,
            self.database.display(),
            self.journal.display()
        )
    }
}

/// A finished tuning campaign.
#[derive(Debug, Clone, Serialize)]
pub struct TunedReport {
    /// How it was set up.
    pub setup: TuneSetup,
    /// One summary per problem, in the order they finished.
    pub problems: Vec<ProblemSummary>,
}

/// One verified candidate and its time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ranked {
    /// The perf config string.
    pub config: String,
    /// Median kernel time, µs.
    pub time_us: f64,
    /// Throughput at that time.
    pub tflops: f64,
}

/// A candidate that produced no timing, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Failure {
    /// The perf config string.
    pub config: String,
    /// The outcome, in words.
    pub reason: String,
}

/// How many fastest candidates a summary keeps.
const FASTEST: usize = 5;

/// The result of tuning one problem on one device.
#[derive(Debug, Clone, Serialize)]
pub struct ProblemSummary {
    /// Canonical problem key.
    pub problem: String,
    /// Device ordinal it was tuned on.
    pub device: usize,
    /// Legal candidates.
    pub legal: usize,
    /// Candidates evaluated, resumed ones included.
    pub evaluated: usize,
    /// Of those, taken from the journal.
    pub resumed: usize,
    /// Of those, without a verified timing.
    pub failed: usize,
    /// Wall time, seconds.
    pub seconds: f64,
    /// The fastest verified candidates, fastest first; the first is the winner.
    pub fastest: Vec<Ranked>,
    /// Failed candidates per outcome kind.
    pub failures: BTreeMap<String, usize>,
    /// The first failed candidate, to show what went wrong.
    pub first_failure: Option<Failure>,
}

impl ProblemSummary {
    /// Summarises one problem's tuning run.
    pub fn new(problem: String, device: usize, r: &TuneReport) -> ProblemSummary {
        let mut failures = BTreeMap::new();
        for t in r.trials.iter().filter(|t| t.outcome.timing().is_none()) {
            *failures.entry(t.outcome.kind().to_string()).or_default() += 1;
        }
        ProblemSummary {
            problem,
            device,
            legal: r.legal,
            evaluated: r.trials.len(),
            resumed: r.trials.iter().filter(|t| t.resumed).count(),
            failed: r.failed(),
            seconds: r.elapsed.as_secs_f64(),
            fastest: r
                .ranked()
                .into_iter()
                .take(FASTEST)
                .map(|(c, t)| Ranked {
                    config: c.to_string(),
                    time_us: t.median_us,
                    tflops: t.tflops,
                })
                .collect(),
            failures,
            first_failure: r
                .trials
                .iter()
                .find(|t| t.outcome.timing().is_none())
                .map(|t| Failure {
                    config: t.config.to_string(),
                    reason: t.outcome.to_string(),
                }),
        }
    }

    /// The fastest verified candidate: what goes into the database.
    pub fn winner(&self) -> Option<&Ranked> {
        self.fastest.first()
    }

    /// The problem's row in the `--report` file, if a candidate verified.
    pub fn report_row(&self) -> Option<ReportRow> {
        let w = self.winner()?;
        Some(ReportRow {
            problem: self.problem.clone(),
            config: w.config.clone(),
            time_us: w.time_us,
            tflops: w.tflops,
            tried: self.evaluated,
            failed: self.failed,
            legal: self.legal,
            seconds: self.seconds,
            device: self.device,
        })
    }
}

impl fmt::Display for ProblemSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {} evaluated ({} resumed, {} failed) of {} legal in {:.1} s",
            self.problem, self.evaluated, self.resumed, self.failed, self.legal, self.seconds
        )?;
        write!(f, "\n  {:>10} {:>9}  config", "time us", "TFLOP/s")?;
        for r in &self.fastest {
            write!(f, "\n  {:>10.2} {:>9.1}  {}", r.time_us, r.tflops, r.config)?;
        }
        if !self.failures.is_empty() {
            let s: Vec<String> = self
                .failures
                .iter()
                .map(|(k, n)| format!("{n} {k}"))
                .collect();
            write!(f, "\n  failed: {}", s.join(", "))?;
        }
        if let Some(x) = &self.first_failure {
            write!(f, "\n  first failure: {} → {}", x.config, x.reason)?;
        }
        Ok(())
    }
}

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
    let mut all: Vec<serde_json::Value> = match std::fs::read_to_string(path) {
        Ok(text) => serde_json::from_str(&text).map_err(|source| ReportFileError::NotAnArray {
            path: path.to_path_buf(),
            source,
        })?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(io("reading", e)),
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

/// How a dry run was set up.
#[derive(Debug, Clone, Serialize)]
pub struct DryRunSetup {
    /// The arch compiled for.
    pub arch: String,
    /// The product its numbers describe.
    pub product: String,
    /// Where the search space came from.
    pub space: String,
}

impl fmt::Display for DryRunSetup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "dry run for {} ({}), space {}",
            self.arch, self.product, self.space
        )
    }
}

/// One problem of a dry run: counts of candidates enumerated, legal and compiled.
#[derive(Debug, Clone, Serialize)]
pub struct CompiledProblem {
    /// Canonical problem key.
    pub problem: String,
    /// Points in the raw search space.
    pub raw: u64,
    /// Legal candidates.
    pub legal: usize,
    /// Compiled without error.
    pub compiled: usize,
    /// Failed to compile.
    pub failed: usize,
    /// The first candidate that failed to compile.
    pub first_failure: Option<Failure>,
    /// One line on the compiled code objects' resources (AMD), if any.
    pub resources: Option<String>,
}

impl fmt::Display for CompiledProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}\n  raw {}, legal {}, compiled {} ok, {} failed",
            self.problem, self.raw, self.legal, self.compiled, self.failed
        )?;
        if let Some(x) = &self.first_failure {
            write!(f, "\n  first failure: {}: {}", x.config, x.reason)?;
        }
        if let Some(r) = &self.resources {
            write!(f, "\n  {r}")?;
        }
        Ok(())
    }
}

/// A finished dry run.
#[derive(Debug, Clone, Serialize)]
pub struct DryRunReport {
    /// How it was set up.
    pub setup: DryRunSetup,
    /// One entry per problem, in list order.
    pub problems: Vec<CompiledProblem>,
}

impl DryRunReport {
    /// Candidates that failed to compile, over all problems.
    pub fn failed(&self) -> usize {
        self.problems.iter().map(|p| p.failed).sum()
    }
}

/// What a campaign announces while it runs, in the order it happens (from several device
/// threads at once when several devices tune).
#[derive(Debug, Clone, Copy)]
pub enum Event<'a> {
    /// A tuning campaign starts.
    Tuning(&'a TuneSetup),
    /// A device starts a problem.
    ProblemStarted {
        /// Device ordinal.
        device: usize,
        /// Canonical problem key.
        problem: &'a str,
        /// Legal candidates.
        legal: usize,
        /// Raw candidates.
        raw: u64,
        /// The reference kernel's time, µs.
        reference_us: f64,
    },
    /// A problem is tuned (its winner, if any, is about to be written).
    ProblemDone(&'a ProblemSummary),
    /// A dry run starts.
    DryRun(&'a DryRunSetup),
    /// A dry run has compiled one problem's candidates.
    Compiled(&'a CompiledProblem),
}

impl fmt::Display for Event<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Event::Tuning(s) => s.fmt(f),
            Event::ProblemStarted {
                device,
                problem,
                legal,
                raw,
                reference_us,
            } => write!(
                f,
                "[gpu {device}] {problem}: {legal} legal of {raw} raw candidates; \
                 reference kernel {reference_us:.1} us"
            ),
            Event::ProblemDone(s) => s.fmt(f),
            Event::DryRun(s) => s.fmt(f),
            Event::Compiled(c) => c.fmt(f),
        }
    }
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
