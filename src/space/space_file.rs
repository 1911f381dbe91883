//! Search-space files: the values each tuning parameter takes and the space's own limits, as
//! TOML that a user can copy and narrow (`--space FILE`). The defaults for each vendor are
//! embedded in the binary from `search-spaces/`.

use crate::arch::{Arch, Vendor};
use crate::config::{Domain, Field, FieldLists, PerField, PerfConfig};
use crate::legality::Pruning;
use serde::de::{self, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};
use toml::Spanned;

const NVIDIA_TOML: &str = include_str!("../../search-spaces/nvidia.toml");
const AMD_TOML: &str = include_str!("../../search-spaces/amd.toml");

/// The largest value any numeric parameter may take; keeps every product in the rules far from
/// overflow and catches typos (`block_m = [1280000]`).
const MAX_VALUE: u32 = 4096;

/// The most raw points (the product of the list lengths) a space may have: enumeration walks
/// them (pruned level by level) and keeps the legal ones in memory, so this bounds its time and
/// memory. The built-in NVIDIA space has about 5·10^8 since stream-K's `cut` doubled it
/// (2^28 before); its rule prunes `cut=aligned` at `red`'s loop level, before the inner loops,
/// so that cost no enumeration time (0.30 s for a bwd-weight 3×3 over both built-in spaces,
/// before and after).
pub const MAX_RAW_POINTS: u64 = 1 << 29;

/// A search-space file that cannot be used, with where the problem is.
#[derive(Debug, thiserror::Error)]
pub enum SpaceError {
    /// Not readable (the OS error is the source).
    #[error("cannot read search space {path}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// A space written for the other vendor: its tiles and paths are not this arch's.
    #[error("search space {origin} is for {vendor} GPUs, not {arch} ({arch_vendor})")]
    WrongVendor {
        /// File name.
        origin: String,
        /// The vendor the file names.
        vendor: &'static str,
        /// The target arch.
        arch: &'static str,
        /// Its vendor.
        arch_vendor: &'static str,
    },
    /// Not a regular file, too large, or not UTF-8 text.
    #[error(transparent)]
    Read(crate::input::ReadError),
    /// Not valid TOML, or a key missing, unknown or of the wrong type.
    #[error("{origin}:{line}:{column}: {message}")]
    Toml {
        /// File name (or `<nvidia default>`).
        origin: String,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// The parser's message (names the key).
        message: String,
    },
    /// Well-formed but a value makes no sense.
    #[error("{origin}:{line}: key '{key}': {why}")]
    Invalid {
        /// File name.
        origin: String,
        /// The key.
        key: &'static str,
        /// 1-based line of its value.
        line: usize,
        /// What is wrong.
        why: String,
    },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileRepr {
    name: String,
    #[serde(default)]
    vendor: Option<Spanned<String>>,
    params: ParamsRepr,
    #[serde(default)]
    constraints: ConstraintsRepr,
}

/// The `[params]` table: one list per field, under the field's [`Field::name`]; integers or
/// names as the field's [`Domain`] says. Read like a derived struct with unknown keys denied,
/// so errors name the key the way serde's would.
struct ParamsRepr(PerField<Option<(Range<usize>, ListRepr)>>);

/// One field's list as written.
enum ListRepr {
    Numbers(Vec<u32>),
    Names(Vec<String>),
}

/// A `[params]` key: a field's name.
struct ParamKey(Field);

impl<'de> Deserialize<'de> for ParamKey {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl Visitor<'_> for KeyVisitor {
            type Value = ParamKey;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a tuning parameter name")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<ParamKey, E> {
                Field::from_name(v)
                    .map(ParamKey)
                    .ok_or_else(|| E::unknown_field(v, &Field::NAMES))
            }
        }
        d.deserialize_identifier(KeyVisitor)
    }
}

impl<'de> Deserialize<'de> for ParamsRepr {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct TableVisitor;
        impl<'de> Visitor<'de> for TableVisitor {
            type Value = ParamsRepr;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a table of tuning parameter lists")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ParamsRepr, A::Error> {
                let mut lists: PerField<Option<(Range<usize>, ListRepr)>> = PerField::default();
                while let Some(ParamKey(f)) = map.next_key()? {
                    if lists[f].is_some() {
                        return Err(de::Error::duplicate_field(f.name()));
                    }
                    lists[f] = Some(if f.domain().is_number() {
                        let v: Spanned<Vec<u32>> = map.next_value()?;
                        (v.span(), ListRepr::Numbers(v.into_inner()))
                    } else {
                        let v: Spanned<Vec<String>> = map.next_value()?;
                        (v.span(), ListRepr::Names(v.into_inner()))
                    });
                }
                // A field that a later version added may be missing: older files stand for
                // its default.
                match Field::ALL
                    .into_iter()
                    .find(|&f| lists[f].is_none() && f.default_code().is_none())
                {
                    Some(f) => Err(de::Error::missing_field(f.name())),
                    None => Ok(ParamsRepr(lists)),
                }
            }
        }
        d.deserialize_struct("ParamsRepr", &Field::NAMES, TableVisitor)
    }
}

/// The codes of a field's list as written, or why the list is unusable.
fn check_list(domain: Domain, list: &ListRepr) -> Result<Vec<u32>, String> {
    let mut codes = Vec::new();
    match (domain, list) {
        (Domain::Named(names), ListRepr::Names(written)) => {
            for name in written {
                let code = names
                    .iter()
                    .position(|n| n == name)
                    .ok_or_else(|| format!("'{name}' is not {}", alternatives(names)))?
                    as u32;
                if codes.contains(&code) {
                    return Err(format!("'{name}' is listed twice"));
                }
                codes.push(code);
            }
        }
        (_, ListRepr::Numbers(values)) => {
            for &x in values {
                if x == 0 || x > MAX_VALUE {
                    return Err(format!("value {x} is outside 1..={MAX_VALUE}"));
                }
                if domain == Domain::PowerOfTwo && !x.is_power_of_two() {
                    return Err(format!("value {x} is not a power of two"));
                }
                if codes.contains(&x) {
                    return Err(format!("value {x} is listed twice"));
                }
                codes.push(x);
            }
        }
        (_, ListRepr::Names(_)) => return Err("expected a list of integers".into()),
    }
    if codes.is_empty() {
        return Err("the list is empty".into());
    }
    Ok(codes)
}

/// `'a', 'b' or 'c'`.
fn alternatives(names: &[&str]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("'{n}'")).collect();
    match quoted.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => String::new(),
    }
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct ConstraintsRepr {
    max_threads: Option<Spanned<u32>>,
    min_warps: Option<Spanned<u32>>,
    max_warps: Option<Spanned<u32>>,
}

/// The space's own limits on top of legality.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Constraints {
    /// Most threads per block (the arch limit applies too).
    pub max_threads: u32,
    /// Fewest warps (waves) per block.
    pub min_warps: u32,
    /// Most warps (waves) per block.
    pub max_warps: u32,
}

impl Default for Constraints {
    fn default() -> Self {
        Constraints {
            max_threads: 1024,
            min_warps: 1,
            max_warps: 32,
        }
    }
}

/// The candidate values of every [`PerfConfig`] field, and the space's limits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchSpace {
    /// Name, for reports.
    pub name: String,
    /// The vendor the space was written for, if it says.
    pub vendor: Option<Vendor>,
    /// The candidate values of every field (`mma = ["sync"]` when the file has no key).
    pub params: FieldLists,
    /// Limits.
    pub constraints: Constraints,
}

/// 1-based (line, column) of a byte offset.
fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

impl SearchSpace {
    /// The embedded default space for an arch's vendor.
    pub fn default_for(arch: &Arch) -> SearchSpace {
        let (text, origin) = match arch.vendor {
            Vendor::Nvidia => (NVIDIA_TOML, "<embedded search-spaces/nvidia.toml>"),
            Vendor::Amd => (AMD_TOML, "<embedded search-spaces/amd.toml>"),
        };
        // The embedded files are checked by this module's tests; failing here is a build bug.
        SearchSpace::from_toml(text, origin)
            .unwrap_or_else(|e| panic!("embedded search space is invalid: {e}"))
    }

    /// Reads a space file (`--space FILE`).
    pub fn load(path: &Path) -> Result<SearchSpace, SpaceError> {
        use crate::input::{read_text, ReadError, SPACE_FILE_LIMIT};
        let text = read_text(path, SPACE_FILE_LIMIT, "search spaces").map_err(|e| match e {
            ReadError::Io { path, source } => SpaceError::Io { path, source },
            e => SpaceError::Read(e),
        })?;
        SearchSpace::from_toml(&text, &path.display().to_string())
    }

    /// Parses and validates a space; `origin` names the text in errors.
    pub fn from_toml(text: &str, origin: &str) -> Result<SearchSpace, SpaceError> {
        let repr: FileRepr = toml::from_str(text).map_err(|e| {
            let (line, column) = line_col(text, e.span().map_or(0, |s| s.start));
            SpaceError::Toml {
                origin: origin.to_string(),
                line,
                column,
                message: e.message().trim().to_string(),
            }
        })?;
        let invalid =
            |key: &'static str, span: std::ops::Range<usize>, why: String| SpaceError::Invalid {
                origin: origin.to_string(),
                key,
                line: line_col(text, span.start).0,
                why,
            };
        let vendor = match &repr.vendor {
            None => None,
            Some(v) => Some(match v.get_ref().as_str() {
                "nvidia" => Vendor::Nvidia,
                "amd" => Vendor::Amd,
                other => {
                    return Err(invalid(
                        "vendor",
                        v.span(),
                        format!("'{other}' is not 'nvidia' or 'amd'"),
                    ))
                }
            }),
        };
        let mut params = FieldLists::default();
        for (f, list) in repr.params.0.iter() {
            let (span, codes) = match list {
                Some((span, list)) => (
                    span.clone(),
                    check_list(f.domain(), list)
                        .map_err(|why| invalid(f.name(), span.clone(), why))?,
                ),
                // Absent: a field a later version added (see ParamsRepr).
                None => (0..0, f.default_code().into_iter().collect()),
            };
            if !params.set_codes(f, &codes) {
                return Err(invalid(
                    f.name(),
                    span,
                    "a value outside the field's domain".into(),
                ));
            }
        }
        let c = &repr.constraints;
        let defaults = Constraints::default();
        let value =
            |v: &Option<Spanned<u32>>, default: u32| v.as_ref().map_or(default, |v| *v.get_ref());
        let constraints = Constraints {
            max_threads: value(&c.max_threads, defaults.max_threads),
            min_warps: value(&c.min_warps, defaults.min_warps),
            max_warps: value(&c.max_warps, defaults.max_warps),
        };
        for (key, v) in [
            ("max_threads", &c.max_threads),
            ("min_warps", &c.min_warps),
            ("max_warps", &c.max_warps),
        ] {
            if let Some(v) = v {
                if *v.get_ref() == 0 {
                    return Err(invalid(key, v.span(), "must be at least 1".into()));
                }
            }
        }
        if constraints.min_warps > constraints.max_warps {
            let (key, span) = match (&c.min_warps, &c.max_warps) {
                (Some(v), _) => ("min_warps", v.span()),
                (None, Some(v)) => ("max_warps", v.span()),
                (None, None) => ("min_warps", 0..0),
            };
            return Err(invalid(
                key,
                span,
                format!(
                    "min_warps {} is above max_warps {}",
                    constraints.min_warps, constraints.max_warps
                ),
            ));
        }
        let space = SearchSpace {
            name: repr.name.clone(),
            vendor,
            params,
            constraints,
        };
        // Each list is capped, their product is not: bound it before anything enumerates it.
        let raw = space.raw_size();
        if raw > MAX_RAW_POINTS {
            let shown = if raw == u64::MAX {
                "more than 2^64".to_string()
            } else {
                raw.to_string()
            };
            return Err(invalid(
                "params",
                repr.params
                    .0
                    .iter()
                    .find_map(|(_, l)| l.as_ref().map(|(span, _)| span.clone()))
                    .unwrap_or(0..0),
                format!("the lists multiply to {shown} raw points; at most {MAX_RAW_POINTS}"),
            ));
        }
        Ok(space)
    }

    /// Fails when the space names a vendor other than `arch`'s; `origin` names the file.
    pub fn check_vendor(&self, arch: &Arch, origin: &str) -> Result<(), SpaceError> {
        match self.vendor {
            Some(v) if v != arch.vendor => Err(SpaceError::WrongVendor {
                origin: origin.to_string(),
                vendor: v.name(),
                arch: arch.name,
                arch_vendor: arch.vendor.name(),
            }),
            _ => Ok(()),
        }
    }

    /// Candidates before legality: the product of the list lengths (`u64::MAX` if it does not
    /// fit; a loaded space has at most [`MAX_RAW_POINTS`]).
    pub fn raw_size(&self) -> u64 {
        self.lengths()
            .as_array()
            .iter()
            .try_fold(1u64, |acc, &l| acc.checked_mul(l as u64))
            .unwrap_or(u64::MAX)
    }

    /// List length of every field.
    pub(super) fn lengths(&self) -> PerField<usize> {
        PerField::from_fn(|f| self.params.len(f))
    }

    /// Every point of the raw product, in the order [`super::enumerate_legal`] lists legal ones.
    pub fn iter_raw(&self) -> RawIter<'_> {
        RawIter {
            space: self,
            ix: PerField::default(),
            lens: self.lengths(),
            done: self.raw_size() == 0,
        }
    }

    /// Whether every field of `cfg` is one of this space's values.
    pub fn contains(&self, cfg: &PerfConfig) -> bool {
        self.params.contains(cfg)
    }

    /// The pruning rules this space adds to legality.
    pub fn pruning(&self) -> Pruning {
        Pruning {
            max_threads: self.constraints.max_threads,
            min_warps: self.constraints.min_warps,
            max_warps: self.constraints.max_warps,
            smallest: PerField::from_fn(|f| self.params.codes(f).into_iter().min().unwrap_or(1)),
        }
    }
}

/// Iterates the raw product in [`Field::ENUMERATION`] order, the last field (`vc`) fastest.
pub struct RawIter<'a> {
    space: &'a SearchSpace,
    ix: PerField<usize>,
    lens: PerField<usize>,
    done: bool,
}

impl Iterator for RawIter<'_> {
    type Item = PerfConfig;
    fn next(&mut self) -> Option<PerfConfig> {
        if self.done {
            return None;
        }
        let cfg = self.space.params.pick(&self.ix);
        self.done = true;
        for f in Field::ENUMERATION.into_iter().rev() {
            self.ix[f] += 1;
            if self.ix[f] < self.lens[f] {
                self.done = false;
                break;
            }
            self.ix[f] = 0;
        }
        Some(cfg)
    }
}

#[cfg(test)]
mod tests;
