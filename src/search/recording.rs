//! Recordings of exhaustive runs: every candidate's measured time for one problem on one GPU,
//! kept as JSON so that any strategy can be scored against them later with no GPU.
//!
//! ```json
//! {"problem": "convbfp16 -F 1 -n 64 …", "arch": "sm_90", "device": "NVIDIA H200 …",
//!  "candidates": [{"config": "v1:bm=128,…", "time_us": 812.5},
//!                 {"config": "v1:bm=256,…", "time_us": null}]}
//! ```
//!
//! `time_us` is `null` for a candidate that failed (compile, launch, fault, wrong result).
//! A recording made by [`synthetic`](super::synthetic) rather than measured says so in
//! `synthetic: true`; reports and the CI test keep the two apart.

use crate::arch::Arch;
use crate::config::PerfConfig;
use crate::lowering::{lower, Lowering};
use crate::problem::ConvProblem;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// One candidate of a recording.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordedCandidate {
    /// The perf config, in its `v1:` string form (stable across versions of this crate).
    pub config: String,
    /// Median time in µs; `None` (JSON `null`) when the candidate failed.
    pub time_us: Option<f64>,
}

/// Every candidate's outcome of one exhaustive run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Recording {
    /// The problem line (any accepted form; the canonical key is best).
    pub problem: String,
    /// Arch name (`sm_90`, `gfx90a`, …).
    pub arch: String,
    /// The device it was measured on, as the fingerprint names it.
    pub device: String,
    /// True when the times come from a model, not a GPU: such a recording tests the machinery
    /// of replay, never the strategies' real efficiency.
    #[serde(default)]
    pub synthetic: bool,
    /// Every candidate, in the exhaustive run's order.
    pub candidates: Vec<RecordedCandidate>,
}

/// A recording that cannot be read or replayed.
#[derive(Debug, thiserror::Error)]
pub enum RecordingError {
    /// The file cannot be read.
    #[error("recording {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file cannot be read as text (absent, not a regular file, too large, not UTF-8).
    #[error(transparent)]
    Read(#[from] crate::input::ReadError),
    /// The file is not a recording.
    #[error("recording {path}: invalid JSON: {source}")]
    Json {
        /// The file.
        path: PathBuf,
        /// Why.
        source: serde_json::Error,
    },
    /// The problem line does not parse.
    #[error("recording of '{problem}': bad problem line: {reason}")]
    Problem {
        /// The line.
        problem: String,
        /// The parser's message.
        reason: String,
    },
    /// The arch is unknown.
    #[error("recording of '{problem}': {source}")]
    Arch {
        /// The problem line.
        problem: String,
        /// The lookup error.
        source: crate::arch::UnknownArch,
    },
    /// A candidate's config does not parse.
    #[error("recording of '{problem}', candidate {index}: {source}")]
    Config {
        /// The problem line.
        problem: String,
        /// 0-based position in `candidates`.
        index: usize,
        /// The parse error.
        source: crate::config::ConfigParseError,
    },
    /// The same config appears twice.
    #[error("recording of '{problem}': config {config} appears twice")]
    Duplicate {
        /// The problem line.
        problem: String,
        /// The repeated config.
        config: String,
    },
    /// A time is negative, zero or not finite.
    #[error("recording of '{problem}', candidate {index}: time {time} is not a positive number")]
    Time {
        /// The problem line.
        problem: String,
        /// 0-based position.
        index: usize,
        /// The value.
        time: f64,
    },
    /// No candidate has a time: there is nothing to score against.
    #[error("recording of '{0}': no candidate succeeded")]
    NoSuccess(String),
}

/// A recording parsed and checked, ready to replay: the lowered problem, the configs and times.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// The problem, lowered (strategies rank with it).
    pub lowering: Lowering,
    /// The arch.
    pub arch: Arch,
    /// The candidates, in recorded order.
    pub configs: Vec<PerfConfig>,
    /// Their times (µs), `None` for failures.
    pub times: Vec<Option<f64>>,
    /// The fastest time: what exhaustive search finds.
    pub best_us: f64,
    /// Copied from the recording.
    pub synthetic: bool,
}

impl Recording {
    /// Reads one recording file.
    pub fn load(path: &Path) -> Result<Recording, RecordingError> {
        let text = crate::input::read_text(path, crate::input::RECORDING_LIMIT, "a recording")?;
        serde_json::from_str(&text).map_err(|source| RecordingError::Json {
            path: path.to_path_buf(),
            source,
        })
    }

    /// Reads every `*.json` in a folder, sorted by file name; a missing folder is empty.
    pub fn load_dir(dir: &Path) -> Result<Vec<(PathBuf, Recording)>, RecordingError> {
        let entries = match std::fs::read_dir(dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(source) => {
                return Err(RecordingError::Io {
                    path: dir.to_path_buf(),
                    source,
                })
            }
        };
        let mut paths = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|source| RecordingError::Io {
                path: dir.to_path_buf(),
                source,
            })?;
            let path = entry.path();
            if path.extension().is_some_and(|e| e == "json") {
                paths.push(path);
            }
        }
        paths.sort();
        paths
            .into_iter()
            .map(|p| Recording::load(&p).map(|r| (p, r)))
            .collect()
    }

    /// JSON text of the recording, one candidate a line (diffs stay readable).
    pub fn to_json(&self) -> String {
        let head = serde_json::json!({
            "problem": self.problem,
            "arch": self.arch,
            "device": self.device,
            "synthetic": self.synthetic,
        });
        let mut out = head.to_string();
        out.pop(); // the closing brace
        out.push_str(",\"candidates\":[\n");
        let lines: Vec<String> = self
            .candidates
            .iter()
            .map(|c| serde_json::to_string(c).unwrap_or_default())
            .collect();
        out.push_str(&lines.join(",\n"));
        out.push_str("\n]}\n");
        out
    }

    /// Parses and checks everything replay needs.
    pub fn prepare(&self) -> Result<Prepared, RecordingError> {
        let problem: ConvProblem =
            self.problem
                .parse()
                .map_err(|e: crate::problem::ParseError| RecordingError::Problem {
                    problem: self.problem.clone(),
                    reason: e.to_string(),
                })?;
        let arch = Arch::from_name(&self.arch).map_err(|source| RecordingError::Arch {
            problem: self.problem.clone(),
            source,
        })?;
        let mut configs = Vec::with_capacity(self.candidates.len());
        let mut times = Vec::with_capacity(self.candidates.len());
        let mut seen = std::collections::HashSet::new();
        for (index, c) in self.candidates.iter().enumerate() {
            let config: PerfConfig = c.config.parse().map_err(|source| RecordingError::Config {
                problem: self.problem.clone(),
                index,
                source,
            })?;
            if !seen.insert(config) {
                return Err(RecordingError::Duplicate {
                    problem: self.problem.clone(),
                    config: c.config.clone(),
                });
            }
            if let Some(t) = c.time_us {
                if !(t.is_finite() && t > 0.0) {
                    return Err(RecordingError::Time {
                        problem: self.problem.clone(),
                        index,
                        time: t,
                    });
                }
            }
            configs.push(config);
            times.push(c.time_us);
        }
        let best_us = times
            .iter()
            .flatten()
            .copied()
            .fold(f64::INFINITY, f64::min);
        if !best_us.is_finite() {
            return Err(RecordingError::NoSuccess(self.problem.clone()));
        }
        Ok(Prepared {
            lowering: lower(&problem),
            arch,
            configs,
            times,
            best_us,
            synthetic: self.synthetic,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LINE: &str = "convbfp16 -n 1 -c 64 -H 8 -W 8 -k 64 -y 1 -x 1 -F 1 --layout NHWC";
    const CFG: &str = "v1:bm=64,bn=64,bk=32,wm=32,wn=32,st=2,va=8,vb=8,vc=8,lds=swz,sk=1,rs=1";

    fn rec(cands: Vec<(&str, Option<f64>)>) -> Recording {
        Recording {
            problem: LINE.into(),
            arch: "sm_90".into(),
            device: "test".into(),
            synthetic: true,
            candidates: cands
                .into_iter()
                .map(|(c, t)| RecordedCandidate {
                    config: c.into(),
                    time_us: t,
                })
                .collect(),
        }
    }

    #[test]
    fn json_round_trip_and_null_is_failure() {
        let other = CFG.replace("st=2", "st=3");
        let r = rec(vec![(CFG, Some(12.5)), (&other, None)]);
        let text = r.to_json();
        assert!(text.contains("\"time_us\":null"), "{text}");
        let back: Recording = serde_json::from_str(&text).unwrap();
        assert_eq!(back, r);
        let p = back.prepare().unwrap();
        assert_eq!(p.times, vec![Some(12.5), None]);
        assert_eq!(p.best_us, 12.5);
        // `synthetic` defaults to false when absent.
        let plain: Recording = serde_json::from_str(&format!(
            r#"{{"problem":"{LINE}","arch":"sm_90","device":"H200","candidates":[{{"config":"{CFG}","time_us":3.0}}]}}"#
        ))
        .unwrap();
        assert!(!plain.synthetic);
    }

    #[test]
    fn bad_recordings_are_errors_that_say_where() {
        let e = rec(vec![(CFG, Some(1.0)), ("v1:bm=x", Some(2.0))])
            .prepare()
            .unwrap_err();
        assert!(matches!(e, RecordingError::Config { index: 1, .. }), "{e}");
        let e = rec(vec![(CFG, Some(1.0)), (CFG, Some(2.0))])
            .prepare()
            .unwrap_err();
        assert!(e.to_string().contains("appears twice"), "{e}");
        let e = rec(vec![(CFG, None)]).prepare().unwrap_err();
        assert!(matches!(e, RecordingError::NoSuccess(_)));
        let e = rec(vec![(CFG, Some(-1.0))]).prepare().unwrap_err();
        assert!(matches!(e, RecordingError::Time { index: 0, .. }));
        let mut r = rec(vec![(CFG, Some(1.0))]);
        r.arch = "sm_75".into();
        assert!(r
            .prepare()
            .unwrap_err()
            .to_string()
            .contains("unknown arch 'sm_75'"));
        r.problem = "conv -n 0".into();
        assert!(matches!(r.prepare(), Err(RecordingError::Problem { .. })));
        let dir = tempfile::tempdir().unwrap();
        assert!(Recording::load_dir(&dir.path().join("missing"))
            .unwrap()
            .is_empty());
        std::fs::write(dir.path().join("a.json"), "{").unwrap();
        assert!(matches!(
            Recording::load_dir(dir.path()),
            Err(RecordingError::Json { .. })
        ));
    }
}
