//! Parsers for MIOpenDriver lines and rocMLIR driver flags, and for problem files.

use super::ConvProblem;

/// A problem line that could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ParseError(pub String);

/// Parses one problem line in either accepted form.
pub fn parse_problem(line: &str) -> Result<ConvProblem, ParseError> {
    Err(ParseError(format!("not yet implemented: {line}")))
}

/// Parses a problem file: one problem a line, `#` comments; errors carry the line number.
pub fn parse_problem_file(text: &str) -> Result<Vec<ConvProblem>, ParseError> {
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
        .map(parse_problem)
        .collect()
}
