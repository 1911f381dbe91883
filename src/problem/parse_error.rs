//! What can be wrong with a problem line or a problem file: one variant per mistake, each
//! naming the flag, the value and (in a file) the line.

use super::{LayoutError, ProblemError};

/// Why a problem line (or a line of a problem file) names no problem.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// Nothing but whitespace (or a pipe) on the line.
    #[error("empty problem line")]
    Empty,
    /// The line is neither a MIOpenDriver command nor rocMLIR flags.
    #[error("'{token}' starts no problem: expected a MIOpenDriver command (conv, convfp16, convbfp16) or rocMLIR flags with --operation=")]
    UnknownForm {
        /// The first token of the line.
        token: String,
    },
    /// A MIOpenDriver command for a type or operation that convtune does not tune.
    #[error("unsupported MIOpenDriver command '{command}': expected conv, convfp16 or convbfp16")]
    UnsupportedCommand {
        /// The command word.
        command: String,
    },
    /// A flag that the form does not know.
    #[error("unknown flag '{flag}' in a {form} line")]
    UnknownFlag {
        /// The flag as written.
        flag: String,
        /// `MIOpenDriver` or `rocMLIR`.
        form: &'static str,
    },
    /// A word where a flag was expected.
    #[error("unexpected '{token}': expected a flag")]
    UnexpectedToken {
        /// The stray word.
        token: String,
    },
    /// A flag that takes a value ends the line or is followed by another flag.
    #[error("{flag} needs a value")]
    MissingValue {
        /// The flag as written.
        flag: String,
    },
    /// A flag that the problem cannot do without is absent.
    #[error("missing {flag} ({what})")]
    MissingFlag {
        /// The flag's name.
        flag: &'static str,
        /// What it sets.
        what: &'static str,
    },
    /// A value that the flag does not accept.
    #[error("{flag} '{value}': {why}")]
    BadValue {
        /// The flag as written.
        flag: String,
        /// The value as written.
        value: String,
        /// What was expected instead.
        why: String,
    },
    /// A layout string that names no layout.
    #[error("{flag}: {source}")]
    Layout {
        /// The flag as written.
        flag: String,
        /// What is wrong with the layout.
        source: LayoutError,
    },
    /// One setting given twice with different values (directly or through an alias).
    #[error("{flag} '{second}' contradicts the earlier {first_flag} '{first}'")]
    Conflict {
        /// The earlier flag as written.
        first_flag: String,
        /// The earlier value.
        first: String,
        /// The later flag as written.
        flag: String,
        /// The later value.
        second: String,
    },
    /// The line parses but the sizes are no runnable convolution.
    #[error("invalid problem: {0}")]
    Invalid(#[from] ProblemError),
    /// An error in a problem file, with its 1-based line number.
    #[error("line {line}: {source}")]
    Line {
        /// 1-based line number.
        line: usize,
        /// The error on that line.
        source: Box<ParseError>,
    },
}
