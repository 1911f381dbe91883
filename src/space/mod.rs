//! The search space: tuning parameters, their values per arch family (`search-spaces/*.toml`),
//! and enumeration of the legal candidates of a problem.

mod config;
mod enumerate;
mod space_file;

pub use config::{ConfigParseError, LdsLayout, MmaPath, PerfConfig, FIELDS};
pub use enumerate::{enumerate_legal, enumerate_lowered, sample_legal, Enumeration};
pub use space_file::{Constraints, RawIter, SearchSpace, SpaceError, MAX_RAW_POINTS};
