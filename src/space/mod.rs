//! The search space: the values each tuning parameter takes per arch family
//! (`search-spaces/*.toml`), and enumeration of the legal candidates of a problem.

mod builtin;
mod enumerate;
mod listing;
mod pinned;
mod space_file;

/// Re-exported from [`crate::config`], where they now live, so that code written against the
/// old paths still builds while parallel branches merge; new code imports `crate::config`.
pub use crate::config::{ConfigParseError, LdsLayout, MmaPath, PerfConfig};
pub use builtin::{
    builtin_origin, enumerate_builtin, enumerate_search, extra_spaces, hopper, search_spaces,
};
pub use enumerate::{enumerate_legal, enumerate_lowered, sample_legal, Enumeration};
pub use listing::Listing;
pub use pinned::pinned_space;
pub use space_file::{Constraints, RawIter, SearchSpace, SpaceError, MAX_RAW_POINTS};
