//! Quick lists as shipped files: `tuned-db/quick/<arch>.toml`, written by `convtune replay
//! --write-quick` from recordings and compiled into the binary like the system database. A
//! quick list is the fallback for a problem nobody tuned: the few configs that were within 0.93
//! of the best on most recorded problems of the same direction and type.

use crate::problem::{DType, Direction};
use crate::search::QuickList;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::OnceLock;

include!(concat!(env!("OUT_DIR"), "/quick_lists.rs"));

/// One (direction, dtype) list of a quick-list file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QuickEntry {
    /// `fwd`, `bwd-data` or `bwd-weight`.
    pub direction: String,
    /// `f32`, `f16` or `bf16`.
    pub dtype: String,
    /// Recorded problems the list was built from.
    pub problems: usize,
    /// Configs in pick order.
    pub configs: Vec<String>,
    /// Cumulative fraction of those problems covered after each config.
    pub coverage: Vec<f64>,
}

/// A quick-list file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct QuickFile {
    /// The lists.
    #[serde(default)]
    pub list: Vec<QuickEntry>,
}

impl QuickFile {
    /// The file for quick lists built from recordings of one arch.
    pub fn from_lists(lists: &[QuickList]) -> QuickFile {
        QuickFile {
            list: lists
                .iter()
                .map(|l| QuickEntry {
                    direction: l.direction.name().to_string(),
                    dtype: l.dtype.name().to_string(),
                    problems: l.problems,
                    configs: l.picks.iter().map(|(c, _)| c.to_string()).collect(),
                    coverage: l.picks.iter().map(|(_, f)| *f).collect(),
                })
                .collect(),
        }
    }

    /// The configs listed for a direction and type, best cover first.
    pub fn configs(&self, direction: Direction, dtype: DType) -> &[String] {
        self.list
            .iter()
            .find(|e| e.direction == direction.name() && e.dtype == dtype.name())
            .map_or(&[], |e| e.configs.as_slice())
    }
}

/// The compiled-in quick list of an arch (empty when none ships). A shipped file that does not
/// parse is a build defect; it reads as empty and the lookup falls through to the heuristic.
pub fn shipped(arch: &str) -> &'static QuickFile {
    static PARSED: OnceLock<HashMap<&'static str, QuickFile>> = OnceLock::new();
    static EMPTY: QuickFile = QuickFile { list: Vec::new() };
    PARSED
        .get_or_init(|| {
            QUICK_LISTS
                .iter()
                .filter_map(|(a, text)| Some((*a, toml::from_str(text).ok()?)))
                .collect()
        })
        .get(arch)
        .unwrap_or(&EMPTY)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shipped_files_parse() {
        for (arch, text) in QUICK_LISTS.iter() {
            let f: QuickFile = toml::from_str(text).unwrap_or_else(|e| panic!("{arch}: {e}"));
            for e in &f.list {
                assert_eq!(e.configs.len(), e.coverage.len());
                for c in &e.configs {
                    c.parse::<crate::config::PerfConfig>().unwrap();
                }
            }
        }
    }
}
