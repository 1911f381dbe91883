//! One tuned result: the winning config for one problem on one device, with the evidence (time,
//! how much was searched, on what, by which version) that lets a reader trust or retune it.

use serde::{Deserialize, Serialize};
use std::fmt::{self, Write as _};

/// The device a measurement was taken on. Times only compare within one fingerprint, and a
/// config tuned on one GPU model is not reused on another without saying so.
///
/// Fill it with stable facts (the maximum clock, not the current one): two runs on the same
/// machine must give equal fingerprints, or their entries will not replace each other.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Fingerprint {
    /// GPU model name as the driver reports it (`NVIDIA H200`).
    #[serde(default)]
    pub gpu: String,
    /// Streaming multiprocessors or compute units: GPUs of one name can ship cut down.
    #[serde(default)]
    pub compute_units: u32,
    /// Driver version; a change can change code generation and timings.
    #[serde(default)]
    pub driver: String,
    /// Maximum SM/shader clock, when it could be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_mhz: Option<u32>,
}

impl Fingerprint {
    /// Whether a config tuned on `self` may be served on `other` without retuning: same GPU
    /// model and unit count. Driver and clock differences make an entry stale, not unusable.
    pub fn compatible(&self, other: &Fingerprint) -> bool {
        self.gpu == other.gpu && self.compute_units == other.compute_units
    }
}

impl fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} ({} CUs, driver {}",
            self.gpu, self.compute_units, self.driver
        )?;
        if let Some(mhz) = self.clock_mhz {
            write!(f, ", {mhz} MHz")?;
        }
        f.write_str(")")
    }
}

/// One `[[entry]]` of a database file.
///
/// Every field but `problem`, `config` and `time_us` defaults when absent, so files written by
/// older versions still load after fields are added.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    /// Canonical problem key ([`crate::problem::ConvProblem::key`]).
    pub problem: String,
    /// The winning perf config (`v1:…`), opaque to the database.
    pub config: String,
    /// Measured kernel time in microseconds (median), the number lookups and merges compare.
    pub time_us: f64,
    /// Achieved throughput, so a reader can judge the entry without recomputing FLOPs.
    #[serde(default)]
    pub tflops: f64,
    /// How many candidates the search measured: a winner of 3 tries deserves less trust.
    #[serde(default)]
    pub candidates_tried: u64,
    /// The device it was measured on.
    #[serde(default)]
    pub fingerprint: Fingerprint,
    /// convtune version whose code generator produced the kernel.
    #[serde(default)]
    pub convtune_version: String,
    /// Day of the measurement, `YYYY-MM-DD` (UTC).
    #[serde(default)]
    pub date: String,
    /// `v2:` and FNV-1a 64 (hex) of every other field: detects hand edits and damage that no
    /// measurement backs. See [`Entry::expected_checksum`]; files of format 1 may still carry the
    /// older 16-digit form ([`Entry::checksum_for`]).
    #[serde(default)]
    pub checksum: String,
}

/// What an entry's checksum says about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seal {
    /// The checksum covers every field and matches.
    Whole,
    /// The older checksum (problem, config and version only) matches: written before the
    /// checksum covered every field; rewritten as [`Seal::Whole`] on the next write.
    Legacy,
    /// No checksum, or one that matches neither form: the entry was edited or damaged.
    Broken,
}

impl Seal {
    /// Whether the entry may be served and merged.
    pub fn trusted(self) -> bool {
        self != Seal::Broken
    }
}

/// Prefix of the whole-entry checksum, which tells it apart from the older 16-digit form.
const CHECKSUM_V2: &str = "v2:";

impl Entry {
    /// The older checksum: FNV-1a 64 over the problem key, a NUL, the config, a NUL and the
    /// convtune version, as 16 lowercase hex digits. Still accepted on read ([`Seal::Legacy`]),
    /// never written.
    pub fn checksum_for(problem: &str, config: &str, convtune_version: &str) -> String {
        let mut h = Fnv1a64::new();
        h.write(problem.as_bytes());
        h.write(&[0]);
        h.write(config.as_bytes());
        h.write(&[0]);
        h.write(convtune_version.as_bytes());
        format!("{:016x}", h.finish())
    }

    /// The checksum this entry should carry given its other fields: `v2:` and FNV-1a 64 over
    /// every field in file order, each followed by a NUL (numbers as the file writes them, an
    /// absent clock as nothing), so any edit of a time, fingerprint or date shows.
    pub fn expected_checksum(&self) -> String {
        let mut h = Fnv1a64::new();
        let fp = &self.fingerprint;
        let clock = fp.clock_mhz.map_or(String::new(), |c| c.to_string());
        for field in [
            self.problem.as_str(),
            self.config.as_str(),
            &toml_float(self.time_us),
            &toml_float(self.tflops),
            &self.candidates_tried.to_string(),
            &fp.gpu,
            &fp.compute_units.to_string(),
            &fp.driver,
            &clock,
            &self.convtune_version,
            &self.date,
        ] {
            h.write(field.as_bytes());
            h.write(&[0]);
        }
        format!("{CHECKSUM_V2}{:016x}", h.finish())
    }

    /// Which checksum, if any, this entry's fields match.
    pub fn seal(&self) -> Seal {
        if self.checksum.starts_with(CHECKSUM_V2) {
            if self.checksum == self.expected_checksum() {
                return Seal::Whole;
            }
        } else if !self.checksum.is_empty()
            && self.checksum
                == Self::checksum_for(&self.problem, &self.config, &self.convtune_version)
        {
            return Seal::Legacy;
        }
        Seal::Broken
    }

    /// Sets `checksum` from the other fields; call after filling a new entry.
    pub fn sealed(mut self) -> Self {
        self.checksum = self.expected_checksum();
        self
    }

    /// Rules every stored entry keeps; breaking one would make comparisons or the file itself
    /// meaningless (a NaN time cannot be ordered, and TOML cannot spell it portably).
    pub fn validate(&self) -> Result<(), String> {
        if self.problem.trim().is_empty() {
            return Err("empty problem key".into());
        }
        if self.config.trim().is_empty() {
            return Err("empty config".into());
        }
        if !(self.time_us.is_finite() && self.time_us > 0.0) {
            return Err(format!(
                "time_us must be a positive number, got {}",
                self.time_us
            ));
        }
        if !(self.tflops.is_finite() && self.tflops >= 0.0) {
            return Err(format!(
                "tflops must be a non-negative number, got {}",
                self.tflops
            ));
        }
        if !self.date.is_empty() && !is_iso_date(&self.date) {
            return Err(format!("date '{}' is not YYYY-MM-DD", self.date));
        }
        Ok(())
    }

    /// Appends this entry as one `[[entry]]` block in the stable layout the files use, with
    /// `checksum` (the entry's own, or a fresh one for a trusted entry being rewritten).
    pub(crate) fn write_toml(&self, out: &mut String, checksum: &str) {
        out.push_str("[[entry]]\n");
        kv_str(out, "problem", &self.problem);
        kv_str(out, "config", &self.config);
        let _ = writeln!(out, "time_us = {}", toml_float(self.time_us));
        let _ = writeln!(out, "tflops = {}", toml_float(self.tflops));
        let _ = writeln!(out, "candidates_tried = {}", self.candidates_tried);
        let fp = &self.fingerprint;
        out.push_str("fingerprint = { gpu = ");
        toml_string(out, &fp.gpu);
        let _ = write!(out, ", compute_units = {}, driver = ", fp.compute_units);
        toml_string(out, &fp.driver);
        if let Some(mhz) = fp.clock_mhz {
            let _ = write!(out, ", clock_mhz = {mhz}");
        }
        out.push_str(" }\n");
        kv_str(out, "convtune_version", &self.convtune_version);
        kv_str(out, "date", &self.date);
        kv_str(out, "checksum", checksum);
    }
}

/// The 64-bit FNV-1a hash: tiny, stable across platforms and Rust versions (unlike `std`'s
/// hasher), which is what a checksum stored in a file needs.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Fnv1a64(u64);

impl Fnv1a64 {
    pub(crate) fn new() -> Self {
        Fnv1a64(0xcbf2_9ce4_8422_2325)
    }
    pub(crate) fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= b as u64;
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    pub(crate) fn finish(&self) -> u64 {
        self.0
    }
}

/// Today's date in UTC as `YYYY-MM-DD`, for [`Entry::date`].
pub fn today_utc() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (y, m, d) = civil_from_days((secs / 86_400) as i64);
    format!("{y:04}-{m:02}-{d:02}")
}

/// Days since 1970-01-01 to a proleptic Gregorian (year, month, day) (H. Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

fn is_iso_date(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return false;
    }
    let digits = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_digit);
    if !(digits(0..4) && digits(5..7) && digits(8..10)) {
        return false;
    }
    let month: u32 = s[5..7].parse().unwrap_or(0);
    let day: u32 = s[8..10].parse().unwrap_or(0);
    (1..=12).contains(&month) && (1..=31).contains(&day)
}

fn kv_str(out: &mut String, key: &str, value: &str) {
    out.push_str(key);
    out.push_str(" = ");
    toml_string(out, value);
    out.push('\n');
}

/// Writes a TOML basic string, escaping what TOML requires.
pub(crate) fn toml_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                let _ = write!(out, "\\u{:04X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// A float in the shortest text that reads back to the same bits and that TOML reads as a
/// float (`100.0`, never `100`). Callers validate finiteness first.
fn toml_float(v: f64) -> String {
    if v.is_finite() {
        format!("{v:?}")
    } else {
        // Unreachable for validated entries; TOML's spelling keeps the file parseable anyway.
        (if v.is_nan() {
            "nan"
        } else if v > 0.0 {
            "inf"
        } else {
            "-inf"
        })
        .to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a_matches_reference_vectors() {
        // Reference values of FNV-1a 64 from the FNV specification's test suite.
        let h = |s: &str| {
            let mut f = Fnv1a64::new();
            f.write(s.as_bytes());
            f.finish()
        };
        assert_eq!(h(""), 0xcbf29ce484222325);
        assert_eq!(h("a"), 0xaf63dc4c8601ec8c);
        assert_eq!(h("foobar"), 0x85944171f73967e8);
    }

    #[test]
    fn whole_entry_checksum_covers_every_field() {
        // Issue 18 item 7: edits of times, fingerprints and dates passed the old checksum.
        let e = Entry {
            problem: "p".into(),
            config: "v1:x".into(),
            time_us: 1.5,
            tflops: 2.0,
            candidates_tried: 3,
            fingerprint: Fingerprint {
                gpu: "G".into(),
                compute_units: 4,
                driver: "d".into(),
                clock_mhz: Some(5),
            },
            convtune_version: "0.1.0".into(),
            date: "2026-01-02".into(),
            checksum: String::new(),
        }
        .sealed();
        assert!(e.checksum.starts_with("v2:") && e.checksum.len() == 19);
        assert_eq!(e.seal(), Seal::Whole);
        let edits: [fn(&mut Entry); 11] = [
            |e| e.problem.push(' '),
            |e| e.config.push('1'),
            |e| e.time_us = 1.25,
            |e| e.tflops = 9.0,
            |e| e.candidates_tried = 30,
            |e| e.fingerprint.gpu.push('X'),
            |e| e.fingerprint.compute_units = 5,
            |e| e.fingerprint.driver.push('9'),
            |e| e.fingerprint.clock_mhz = None,
            |e| e.convtune_version.push('1'),
            |e| e.date = "2026-01-03".into(),
        ];
        for (i, edit) in edits.iter().enumerate() {
            let mut x = e.clone();
            edit(&mut x);
            assert_eq!(x.seal(), Seal::Broken, "edit {i}");
        }
        // The older form still verifies what it covered; an empty checksum never does.
        let legacy = Entry {
            checksum: Entry::checksum_for("p", "v1:x", "0.1.0"),
            ..e.clone()
        };
        assert_eq!(legacy.seal(), Seal::Legacy);
        assert_eq!(
            Entry {
                checksum: String::new(),
                ..e
            }
            .seal(),
            Seal::Broken
        );
    }

    #[test]
    fn checksum_separates_fields() {
        let a = Entry::checksum_for("ab", "c", "1");
        let b = Entry::checksum_for("a", "bc", "1");
        assert_ne!(a, b);
        assert_eq!(a.len(), 16);
    }

    #[test]
    fn civil_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(19_723), (2024, 1, 1));
        assert_eq!(civil_from_days(19_782), (2024, 2, 29));
        assert!(is_iso_date(&today_utc()));
        assert!(!is_iso_date("2024-13-01"));
        assert!(!is_iso_date("2024-1-01"));
    }

    #[test]
    fn validation_rejects_unorderable_times() {
        let e = Entry {
            problem: "p".into(),
            config: "v1:x".into(),
            time_us: f64::NAN,
            tflops: 0.0,
            candidates_tried: 0,
            fingerprint: Fingerprint::default(),
            convtune_version: String::new(),
            date: String::new(),
            checksum: String::new(),
        };
        assert!(e.validate().unwrap_err().contains("time_us"));
        let ok = Entry {
            time_us: 1.5,
            ..e.clone()
        };
        assert!(ok.validate().is_ok());
        let bad_date = Entry {
            date: "yesterday".into(),
            ..ok
        };
        assert!(bad_date.validate().is_err());
    }

    #[test]
    fn strings_escape_control_characters() {
        let mut s = String::new();
        toml_string(&mut s, "a\"b\\c\nd\u{1}");
        assert_eq!(s, r#""a\"b\\c\nd\u0001""#);
        let back: toml::Value = toml::from_str(&format!("k = {s}")).unwrap();
        assert_eq!(back["k"].as_str(), Some("a\"b\\c\nd\u{1}"));
    }
}
