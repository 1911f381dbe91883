//! Reading problem keys back into problems, fast.
//!
//! A database of 100,000 entries must load in well under 100 ms, so keys in the canonical form
//! that [`ConvProblem::key`] writes are decoded by a strict fixed-order reader here; anything else
//! (a hand-written key, or a key written by a future version with another flag order) falls back
//! to the full problem parser, which stays the authority on what a problem line means.

use crate::problem::{ConvProblem, ConvSizes, DType, Direction, Layout};

/// Parses a key; `Err` carries the parser's reason.
pub(crate) fn parse_key(text: &str) -> Result<ConvProblem, String> {
    if let Some(p) = decode_canonical(text) {
        return Ok(p);
    }
    text.parse::<ConvProblem>().map_err(|e| e.to_string())
}

/// Decodes exactly the canonical form, or returns `None` for anything else.
fn decode_canonical(text: &str) -> Option<ConvProblem> {
    let mut t = text.split_ascii_whitespace();
    let dtype = match t.next()? {
        "conv" => DType::F32,
        "convfp16" => DType::F16,
        "convbfp16" => DType::BF16,
        _ => return None,
    };
    let mut num = |flag: &str| -> Option<u32> {
        if t.next()? != flag {
            return None;
        }
        t.next()?.parse().ok()
    };
    let direction = match num("-F")? {
        1 => Direction::Fwd,
        2 => Direction::BwdData,
        4 => Direction::BwdWeight,
        _ => return None,
    };
    let sizes = ConvSizes {
        n: num("-n")?,
        c: num("-c")?,
        h: num("-H")?,
        w: num("-W")?,
        k: num("-k")?,
        y: num("-y")?,
        x: num("-x")?,
        pad: [num("-p")?, num("-q")?],
        stride: [num("-u")?, num("-v")?],
        dilation: [num("-l")?, num("-j")?],
        groups: num("-g")?,
    };
    let mut layout = |flag: &str, filter: bool| -> Option<Layout> {
        if t.next()? != flag {
            return None;
        }
        let s = t.next()?;
        // The canonical form spells all five dimensions; shorter forms go to the full parser.
        if s.len() != 5 {
            return None;
        }
        if filter {
            Layout::parse_filter(s).ok()
        } else {
            Layout::parse_activation(s).ok()
        }
    };
    let input = layout("-I", false)?;
    let filter = layout("-f", true)?;
    let output = layout("-O", false)?;
    if t.next().is_some() {
        return None;
    }
    ConvProblem::new(sizes, direction, dtype, input, filter, output).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problem(direction: Direction, dtype: DType, sizes: ConvSizes, nhwc: bool) -> ConvProblem {
        let (a, f) = if nhwc {
            (Layout::NHWGC, Layout::GKYXC)
        } else {
            (Layout::NGCHW, Layout::GKCYX)
        };
        ConvProblem::new(sizes, direction, dtype, a, f, a).unwrap()
    }

    #[test]
    fn canonical_keys_decode_to_the_same_problem() {
        let sizes = [
            ConvSizes::default(),
            ConvSizes {
                n: 16,
                c: 2048,
                h: 1,
                w: 512,
                k: 2048,
                y: 1,
                x: 2,
                stride: [1, 2],
                ..Default::default()
            },
            ConvSizes {
                n: 3,
                c: 12,
                h: 17,
                w: 9,
                k: 6,
                y: 3,
                x: 5,
                pad: [4, 1],
                stride: [2, 3],
                dilation: [2, 1],
                groups: 3,
            },
        ];
        for s in sizes {
            for d in [Direction::Fwd, Direction::BwdData, Direction::BwdWeight] {
                for t in [DType::F32, DType::F16, DType::BF16] {
                    for nhwc in [false, true] {
                        let p = problem(d, t, s, nhwc);
                        let key = p.key();
                        assert_eq!(decode_canonical(&key), Some(p), "{key}");
                        assert_eq!(parse_key(&key), Ok(p));
                    }
                }
            }
        }
    }

    #[test]
    fn non_canonical_text_is_not_decoded_here() {
        let p = problem(Direction::Fwd, DType::F32, ConvSizes::default(), false);
        let key = p.key();
        assert!(decode_canonical(&format!("{key} -t 1")).is_none());
        assert!(decode_canonical(&key.replace("-n 1 -c 1", "-c 1 -n 1")).is_none());
        assert!(decode_canonical(&key.replace("-F 1", "-F 3")).is_none());
        assert!(decode_canonical(&key.replace("-n 1", "-n 0")).is_none());
        assert!(decode_canonical("").is_none());
    }
}
