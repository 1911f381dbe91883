//! The search space: tuning parameters, their values per arch family, and enumeration.

mod config;

pub use config::{ConfigParseError, LdsLayout, PerfConfig, FIELDS};
