//! A fast reader for database files in exactly the layout [`super::TunedDb::to_toml_string`]
//! writes, so a 100,000-entry database loads in tens of milliseconds instead of the seconds a
//! general TOML parser takes.
//!
//! It accepts a strict subset of TOML and gives up (`None`) on anything else — other spacing,
//! comments after values, unknown or repeated keys, missing required fields, escapes it does not
//! know, numbers in forms we do not write. The caller then parses with the `toml` crate, which
//! stays the authority: a file the fast reader accepts means to TOML exactly what it read, and a
//! file it refuses is read (or rejected, with a line number) by the full parser.

use super::entry::{Entry, Fingerprint};
use super::scan::{find_byte, float, plain_uint, string, toml_uint, whole_string};

use rayon::prelude::*;

/// What the fast reader extracts: the header and the entries in file order.
pub(crate) struct Parsed {
    pub(crate) format: u32,
    pub(crate) arch: String,
    /// The header's entry count, if it has one.
    pub(crate) declared: Option<usize>,
    pub(crate) entries: Vec<Entry>,
}

/// One piece of the file: the header if the piece holds it, and its entries.
struct Part {
    format: Option<u32>,
    arch: Option<String>,
    declared: Option<usize>,
    entries: Vec<Entry>,
}

/// Files larger than this are read in pieces of about this size on all cores.
const PIECE: usize = 1 << 20;

/// Reads `text` if it is in the canonical layout; `None` sends it to the full parser.
///
/// Large files are cut at `[[entry]]` lines into pieces read in parallel. That reads the same
/// as one pass: the grammar is line by line (strings cannot span lines), each piece after the
/// first starts at an entry header, and a `[header]` anywhere but the start is refused either way.
pub(crate) fn parse(text: &str) -> Option<Parsed> {
    parse_in_pieces(text, PIECE)
}

fn parse_in_pieces(text: &str, piece: usize) -> Option<Parsed> {
    let bounds = piece_bounds(text, piece);
    let parts: Vec<Option<Part>> = if bounds.len() <= 2 {
        vec![parse_part(text, true)]
    } else {
        (0..bounds.len() - 1)
            .into_par_iter()
            .map(|k| parse_part(&text[bounds[k]..bounds[k + 1]], k == 0))
            .collect()
    };
    let parts: Vec<Part> = parts.into_iter().collect::<Option<_>>()?;
    let mut parts = parts.into_iter();
    let first = parts.next()?;
    let mut entries = first.entries;
    let more: usize = parts.as_slice().iter().map(|p| p.entries.len()).sum();
    entries.reserve_exact(more);
    for mut p in parts {
        entries.append(&mut p.entries);
    }
    Some(Parsed {
        format: first.format?,
        arch: first.arch?,
        declared: first.declared,
        entries,
    })
}

/// Start offsets of the pieces (the first is 0) and the text length at the end. Every start
/// after the first is the beginning of a `[[entry]]` line.
fn piece_bounds(text: &str, piece: usize) -> Vec<usize> {
    let mut bounds = vec![0];
    let mut target = piece;
    while target < text.len() {
        let mut at = target;
        while !text.is_char_boundary(at) {
            at += 1;
        }
        match text[at..].find("\n[[entry]]") {
            Some(off) => {
                let start = at + off + 1;
                bounds.push(start);
                target = start.saturating_add(piece);
            }
            None => break,
        }
    }
    bounds.push(text.len());
    bounds
}

#[derive(PartialEq)]
enum Section {
    /// Start of the file: only `[header]` may come.
    Root,
    /// Start of a later piece: only `[[entry]]` may come.
    Continue,
    Header,
    Entry,
}

#[derive(Default)]
struct Partial {
    problem: Option<String>,
    config: Option<String>,
    time_us: Option<f64>,
    tflops: Option<f64>,
    candidates_tried: Option<u64>,
    fingerprint: Option<Fingerprint>,
    convtune_version: Option<String>,
    date: Option<String>,
    checksum: Option<String>,
}

/// Sets a field once; a second assignment is a TOML error, which the full parser must report.
fn once<T>(slot: &mut Option<T>, value: T) -> Option<()> {
    if slot.is_some() {
        return None;
    }
    *slot = Some(value);
    Some(())
}

impl Partial {
    fn set(&mut self, key: &str, value: &str) -> Option<()> {
        match key {
            "problem" => once(&mut self.problem, whole_string(value)?),
            "config" => once(&mut self.config, whole_string(value)?),
            "time_us" => once(&mut self.time_us, float(value)?),
            "tflops" => once(&mut self.tflops, float(value)?),
            "candidates_tried" => once(&mut self.candidates_tried, toml_uint(value)?),
            "fingerprint" => once(&mut self.fingerprint, inline_fingerprint(value)?),
            "convtune_version" => once(&mut self.convtune_version, whole_string(value)?),
            "date" => once(&mut self.date, whole_string(value)?),
            "checksum" => once(&mut self.checksum, whole_string(value)?),
            _ => None,
        }
    }

    fn finish(self) -> Option<Entry> {
        Some(Entry {
            problem: self.problem?,
            config: self.config?,
            time_us: self.time_us?,
            tflops: self.tflops.unwrap_or_default(),
            candidates_tried: self.candidates_tried.unwrap_or_default(),
            fingerprint: self.fingerprint.unwrap_or_default(),
            convtune_version: self.convtune_version.unwrap_or_default(),
            date: self.date.unwrap_or_default(),
            checksum: self.checksum.unwrap_or_default(),
        })
    }
}

/// Reads one piece; `first` says whether it is the start of the file (which may hold the
/// header) or a continuation that starts at an `[[entry]]` line.
fn parse_part(text: &str, first: bool) -> Option<Part> {
    let mut format = None;
    let mut arch = None;
    let mut declared = None;
    let mut entries = Vec::with_capacity(text.len() / 400);
    let mut section = if first {
        Section::Root
    } else {
        Section::Continue
    };
    let mut seen_header = false;
    let mut current: Option<Partial> = None;
    for line in lines(text) {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.is_empty() {
            continue;
        }
        if line.starts_with('#') {
            // TOML forbids control characters other than tab in comments.
            if line.bytes().any(|b| (b < 0x20 && b != b'\t') || b == 0x7f) {
                return None;
            }
            continue;
        }
        if line == "[[entry]]" {
            if section == Section::Root {
                return None;
            }
            if let Some(p) = current.take() {
                entries.push(p.finish()?);
            }
            current = Some(Partial::default());
            section = Section::Entry;
            continue;
        }
        if line == "[header]" {
            if seen_header || section != Section::Root {
                return None;
            }
            seen_header = true;
            section = Section::Header;
            continue;
        }
        let (key, value) = key_value(line)?;
        match section {
            Section::Root | Section::Continue => return None,
            Section::Header => match key {
                "format" => once(&mut format, u32::try_from(toml_uint(value)?).ok()?)?,
                "arch" => once(&mut arch, whole_string(value)?)?,
                "entries" => once(&mut declared, usize::try_from(toml_uint(value)?).ok()?)?,
                _ => return None,
            },
            Section::Entry => current.as_mut()?.set(key, value)?,
        }
    }
    if let Some(p) = current.take() {
        entries.push(p.finish()?);
    }
    Some(Part {
        format,
        arch,
        declared,
        entries,
    })
}

/// The lines of `text` without their `\n`.
fn lines(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let (line, next) = match find_byte(rest.as_bytes(), b'\n') {
            Some(e) => (&rest[..e], &rest[e + 1..]),
            None => (rest, ""),
        };
        rest = next;
        Some(line)
    })
}

/// Splits `key = value` at the first space, which must start ` = ` (keys are bare words).
fn key_value(line: &str) -> Option<(&str, &str)> {
    let sp = find_byte(line.as_bytes(), b' ')?;
    Some((&line[..sp], line[sp..].strip_prefix(" = ")?))
}

/// `{ gpu = "…", compute_units = N, driver = "…"[, clock_mhz = N] }` with the writer's spacing.
fn inline_fingerprint(value: &str) -> Option<Fingerprint> {
    let mut rest = value.strip_prefix("{ ")?;
    let (mut gpu, mut cus, mut driver, mut clock) = (None, None, None, None);
    loop {
        let (key, after) = key_value(rest)?;
        rest = match key {
            "gpu" | "driver" => {
                let (s, r) = string(after)?;
                once(if key == "gpu" { &mut gpu } else { &mut driver }, s)?;
                r
            }
            "compute_units" | "clock_mhz" => {
                let end = after
                    .bytes()
                    .position(|b| b == b',' || b == b' ')
                    .unwrap_or(after.len());
                let digits = &after[..end];
                if !plain_uint(digits) {
                    return None;
                }
                let v: u32 = digits.parse().ok()?;
                once(
                    if key == "compute_units" {
                        &mut cus
                    } else {
                        &mut clock
                    },
                    v,
                )?;
                &after[end..]
            }
            _ => return None,
        };
        if let Some(r) = rest.strip_prefix(", ") {
            rest = r;
        } else if rest == " }" {
            break;
        } else {
            return None;
        }
    }
    Some(Fingerprint {
        gpu: gpu.unwrap_or_default(),
        compute_units: cus.unwrap_or_default(),
        driver: driver.unwrap_or_default(),
        clock_mhz: clock,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_tables() {
        let fp = inline_fingerprint(
            r#"{ gpu = "H, 200", compute_units = 132, driver = "580", clock_mhz = 1980 }"#,
        )
        .unwrap();
        assert_eq!(
            (fp.gpu.as_str(), fp.compute_units, fp.clock_mhz),
            ("H, 200", 132, Some(1980))
        );
        assert!(inline_fingerprint(r#"{ gpu = "a", gpu = "b" }"#).is_none());
        assert!(inline_fingerprint(r#"{ gpu = "a", extra = 1 }"#).is_none());
        assert!(inline_fingerprint(r#"{ gpu = "a", compute_units = 99999999999 }"#).is_none());
        assert!(inline_fingerprint(r#"{gpu = "a"}"#).is_none());
    }

    #[test]
    fn gives_up_on_anything_unusual() {
        let base = "[header]\nformat = 1\narch = \"sm_90\"\n\n[[entry]]\nproblem = \"p\"\nconfig = \"c\"\ntime_us = 1.0\n";
        assert!(parse(base).is_some());
        for bad in [
            base.replace("time_us = 1.0", "time_us = 1.0 # fast"),
            base.replace("time_us = 1.0", "time_us=1.0"),
            base.replace("config = \"c\"\n", ""),
            format!("{base}config = \"again\"\n"),
            format!("{base}future = 1\n"),
            format!("x = 1\n{base}"),
            base.replace("[header]", "[header] # h"),
            format!("{base}[header]\n"),
            base.replace("format = 1", "format = -1"),
        ] {
            assert!(parse(&bad).is_none(), "{bad}");
        }
    }
}

#[cfg(test)]
mod agreement {
    //! The fast reader must read the writer's output exactly as the TOML crate does.
    use super::*;
    use crate::db::TunedDb;
    use proptest::prelude::*;

    #[derive(serde::Deserialize)]
    struct Reference {
        entry: Vec<Entry>,
    }

    fn text_strategy() -> impl Strategy<Value = String> {
        // Mostly awkward characters: quotes, backslashes, controls, ` = `, `#`, braces, unicode.
        proptest::collection::vec(
            prop_oneof![
                Just('"'),
                Just('\\'),
                Just('\n'),
                Just('\t'),
                Just('\u{1}'),
                Just('\u{7f}'),
                Just('='),
                Just('#'),
                Just('{'),
                Just('}'),
                Just(','),
                Just(' '),
                Just('é'),
                Just('😀'),
                any::<char>(),
                proptest::char::range('a', 'z'),
            ],
            0..12,
        )
        .prop_map(|v| v.into_iter().collect())
    }

    proptest! {
        #[test]
        fn writer_output_reads_back_identically(
            config in text_strategy(),
            gpu in text_strategy(),
            driver in text_strategy(),
            version in text_strategy(),
            time in 1e-9f64..1e12,
            tflops in 0f64..1e4,
            tried in any::<u32>(),
            cus in any::<u32>(),
            clock in proptest::option::of(any::<u32>()),
        ) {
            let mut db = TunedDb::new("sm_90");
            let e = Entry {
                problem: "conv -n 1".into(),
                config: format!("v1:{config}"),
                time_us: time,
                tflops,
                candidates_tried: tried as u64,
                fingerprint: Fingerprint { gpu, compute_units: cus, driver, clock_mhz: clock },
                convtune_version: version,
                date: "2026-01-31".into(),
                checksum: String::new(),
            }
            .sealed();
            db.insert(e.clone()).unwrap();
            let text = db.to_toml_string();
            let fast = parse(&text).expect("the fast reader accepts the writer's output");
            let reference: Reference = toml::from_str(&text).unwrap();
            prop_assert_eq!(&fast.entries, &reference.entry);
            prop_assert_eq!(&fast.entries[0], &e);
        }
    }

    #[test]
    fn reading_in_pieces_is_reading_in_one_pass() {
        let mut db = TunedDb::new("gfx90a");
        for i in 0..300u32 {
            let p = crate::problem::ConvProblem::new(
                crate::problem::ConvSizes {
                    c: i + 1,
                    ..Default::default()
                },
                crate::problem::Direction::Fwd,
                crate::problem::DType::F32,
                crate::problem::Layout::NGCHW,
                crate::problem::Layout::GKCYX,
                crate::problem::Layout::NGCHW,
            )
            .unwrap();
            let e = Entry {
                problem: p.key(),
                config: format!("v1:é{i}"),
                time_us: 1.0 + f64::from(i),
                tflops: 0.5,
                candidates_tried: 3,
                fingerprint: Fingerprint::default(),
                convtune_version: "0.1.0".into(),
                date: "2026-01-31".into(),
                checksum: String::new(),
            };
            db.insert(e.sealed()).unwrap();
        }
        let text = db.to_toml_string();
        let whole = parse_in_pieces(&text, usize::MAX).unwrap();
        for piece in [1, 7, 500, 4096] {
            assert!(piece_bounds(&text, piece).len() > 2);
            let p = parse_in_pieces(&text, piece).unwrap();
            assert_eq!(p.entries, whole.entries, "piece {piece}");
            assert_eq!((p.format, p.arch.as_str()), (1, "gfx90a"));
        }
        assert_eq!(whole.entries.len(), 300);
        // A header repeated late in the file is refused whichever piece it lands in.
        let late = format!("{text}\n[header]\nformat = 1\narch = \"x\"\n");
        assert!(parse_in_pieces(&late, 500).is_none());
        assert!(parse_in_pieces(&late, usize::MAX).is_none());
    }
}
