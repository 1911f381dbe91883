//! Tensor layouts as permutations of logical dimensions.
//!
//! A layout is the memory order (outermost first) of a tensor's five logical dimensions. Writing
//! layouts this way, rather than as an enum of names, lets every layout that MIOpen and rocMLIR
//! spell (`NCHW`, `NHWC`, `ngchw`, `gkyxc`, …) flow through the same stride computation, and the
//! lowering never special-cases a layout name.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Logical dimensions of an activation tensor (input or output), canonical order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ActDim {
    /// Batch.
    N = 0,
    /// Group.
    G = 1,
    /// Channel within a group.
    C = 2,
    /// Height.
    H = 3,
    /// Width.
    W = 4,
}

/// Logical dimensions of a filter tensor, canonical order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FilDim {
    /// Group.
    G = 0,
    /// Output channel within a group.
    K = 1,
    /// Input channel within a group.
    C = 2,
    /// Filter height.
    Y = 3,
    /// Filter width.
    X = 4,
}

/// Whether a layout orders activation dimensions or filter dimensions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum LayoutKind {
    /// n, g, c, h, w.
    Activation,
    /// g, k, c, y, x.
    Filter,
}

const ACT_LETTERS: [char; 5] = ['N', 'G', 'C', 'H', 'W'];
const FIL_LETTERS: [char; 5] = ['G', 'K', 'C', 'Y', 'X'];

/// A memory order of the five logical dimensions, outermost first.
///
/// Deserialising validates the order (a permutation of the five dimensions), so a layout read
/// from a file or another process indexes no dimension that does not exist.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "LayoutRepr")]
pub struct Layout {
    kind: LayoutKind,
    /// `order[i]` is the logical dimension stored at memory position i (0 = outermost).
    order: [u8; 5],
}

/// [`Layout`] as it is serialised, before the order is checked.
#[derive(Deserialize)]
struct LayoutRepr {
    kind: LayoutKind,
    order: [u8; 5],
}

impl TryFrom<LayoutRepr> for Layout {
    type Error = String;
    fn try_from(r: LayoutRepr) -> Result<Layout, String> {
        let mut seen = [false; 5];
        for &d in &r.order {
            match seen.get_mut(d as usize) {
                Some(s) if !*s => *s = true,
                _ => {
                    return Err(format!(
                        "layout order {:?} is not a permutation of 0..5",
                        r.order
                    ))
                }
            }
        }
        Ok(Layout {
            kind: r.kind,
            order: r.order,
        })
    }
}

/// A layout string that names no valid layout.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {kind} layout '{text}': {why}")]
pub struct LayoutError {
    kind: &'static str,
    text: String,
    why: &'static str,
}

impl Layout {
    /// Activations, channels-first.
    pub const NGCHW: Layout = Layout {
        kind: LayoutKind::Activation,
        order: [0, 1, 2, 3, 4],
    };
    /// Activations, channels-last.
    pub const NHWGC: Layout = Layout {
        kind: LayoutKind::Activation,
        order: [0, 3, 4, 1, 2],
    };
    /// Filter, channels-first.
    pub const GKCYX: Layout = Layout {
        kind: LayoutKind::Filter,
        order: [0, 1, 2, 3, 4],
    };
    /// Filter, channels-last.
    pub const GKYXC: Layout = Layout {
        kind: LayoutKind::Filter,
        order: [0, 1, 3, 4, 2],
    };

    /// Activation or filter.
    pub fn kind(&self) -> LayoutKind {
        self.kind
    }

    /// Memory order, outermost first, as logical dimension indices.
    pub fn order(&self) -> [u8; 5] {
        self.order
    }

    /// Element strides for logical dimensions with the given extents (canonical order).
    pub fn strides(&self, dims: [u32; 5]) -> [u64; 5] {
        let mut strides = [0u64; 5];
        let mut acc = 1u64;
        for &d in self.order.iter().rev() {
            strides[d as usize] = acc;
            acc *= dims[d as usize] as u64;
        }
        strides
    }

    /// The logical dimension that is contiguous in memory.
    pub fn innermost(&self) -> usize {
        self.order[4] as usize
    }

    /// Parses an activation layout: `NCHW`, `NHWC` (groups outside channels) or any five-letter
    /// permutation of `NGCHW`, in either case.
    pub fn parse_activation(text: &str) -> Result<Layout, LayoutError> {
        Self::parse(text, LayoutKind::Activation)
    }

    /// Parses a filter layout: `KCYX`, `KYXC`, any permutation of `GKCYX`, or MIOpen's habit of
    /// naming filter layouts with activation letters (`NCHW` = `KCYX`, `NHWC` = `KYXC`).
    pub fn parse_filter(text: &str) -> Result<Layout, LayoutError> {
        let up = text.to_ascii_uppercase();
        let translated: String = if up.contains('N') || up.contains('H') || up.contains('W') {
            // In activation letters G sits beside C (the channels it splits); a filter's groups
            // split K, the translated N, so G moves to just outside it: NHWGC = GKYXC.
            up.chars()
                .filter(|&c| c != 'G')
                .flat_map(|c| match c {
                    'N' if up.contains('G') => vec!['G', 'K'],
                    'N' => vec!['K'],
                    'H' => vec!['Y'],
                    'W' => vec!['X'],
                    other => vec![other],
                })
                .collect()
        } else {
            up
        };
        Self::parse(&translated, LayoutKind::Filter).map_err(|e| LayoutError {
            text: crate::input::excerpt(text, 64),
            ..e
        })
    }

    fn parse(text: &str, kind: LayoutKind) -> Result<Layout, LayoutError> {
        let (letters, kind_name) = match kind {
            LayoutKind::Activation => (ACT_LETTERS, "activation"),
            LayoutKind::Filter => (FIL_LETTERS, "filter"),
        };
        let err = |why| LayoutError {
            kind: kind_name,
            text: crate::input::excerpt(text, 64),
            why,
        };
        let mut chars: Vec<char> = text.to_ascii_uppercase().chars().collect();
        if chars.len() == 4 && !chars.contains(&'G') {
            // Groups sit just outside the channel dimension that groups split: C for
            // activations (MIOpen's convention), K for filters.
            let split = if kind == LayoutKind::Activation {
                'C'
            } else {
                'K'
            };
            let at = chars
                .iter()
                .position(|&c| c == split)
                .ok_or_else(|| err("missing a channel letter"))?;
            chars.insert(at, 'G');
        }
        if chars.len() != 5 {
            return Err(err("expected 4 letters (without G) or 5"));
        }
        let mut order = [0u8; 5];
        let mut seen = [false; 5];
        for (i, c) in chars.iter().enumerate() {
            let d = letters
                .iter()
                .position(|l| l == c)
                .ok_or_else(|| err("unknown dimension letter"))?;
            if seen[d] {
                return Err(err("a dimension letter repeats"));
            }
            seen[d] = true;
            order[i] = d as u8;
        }
        Ok(Layout { kind, order })
    }
}

impl fmt::Display for Layout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let letters = match self.kind {
            LayoutKind::Activation => ACT_LETTERS,
            LayoutKind::Filter => FIL_LETTERS,
        };
        for &d in &self.order {
            write!(f, "{}", letters[d as usize])?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_map_to_permutations() {
        assert_eq!(Layout::parse_activation("NCHW").unwrap(), Layout::NGCHW);
        assert_eq!(Layout::parse_activation("nhwc").unwrap(), Layout::NHWGC);
        assert_eq!(Layout::parse_activation("ngchw").unwrap(), Layout::NGCHW);
        assert_eq!(Layout::parse_filter("KYXC").unwrap(), Layout::GKYXC);
        assert_eq!(Layout::parse_filter("NHWC").unwrap(), Layout::GKYXC);
        // Grouped activation letters name the grouped filter layout, groups outermost.
        assert_eq!(Layout::parse_filter("NHWGC").unwrap(), Layout::GKYXC);
        assert_eq!(Layout::parse_filter("ngchw").unwrap(), Layout::GKCYX);
        assert_eq!(Layout::parse_filter("gkcyx").unwrap(), Layout::GKCYX);
        assert!(Layout::parse_activation("NCHH").is_err());
        assert!(Layout::parse_filter("KCY").is_err());
    }

    #[test]
    fn strides_follow_order() {
        // N=2, G=1, C=3, H=4, W=5 in NHWC: c contiguous, w stride C, h stride W*C.
        let s = Layout::NHWGC.strides([2, 1, 3, 4, 5]);
        assert_eq!(s, [60, 3, 1, 15, 3]);
    }
}
