//! Reading problem keys back into problems, fast.
//!
//! A database of 100,000 entries must load in well under 100 ms, so keys in the canonical form
//! that [`ConvProblem::key`] writes are decoded by a strict fixed-order reader here; anything else
//! (a hand-written key, or a key written by a future version with another flag order) falls back
//! to the full problem parser, which stays the authority on what a problem line means.

use crate::problem::{ConvProblem, ConvSizes, DType, Direction, Layout};

/// Parses a key; `Err` carries the parser's reason.
pub(crate) fn parse_key(text: &str) -> Result<ConvProblem, String> {
    KeyParser::default().parse(text)
}

/// Parses many keys, remembering the few layout spellings a database uses so that each is
/// parsed once rather than once per key.
#[derive(Default)]
pub(crate) struct KeyParser {
    layouts: Vec<(String, bool, Layout)>,
}

impl KeyParser {
    /// Parses a key; `Err` carries the parser's reason.
    pub(crate) fn parse(&mut self, text: &str) -> Result<ConvProblem, String> {
        if let Some(p) = self.decode_canonical(text) {
            return Ok(p);
        }
        text.parse::<ConvProblem>().map_err(|e| e.to_string())
    }

    fn layout(&mut self, s: &str, filter: bool) -> Option<Layout> {
        if let Some((_, _, l)) = self.layouts.iter().find(|(t, f, _)| *f == filter && t == s) {
            return Some(*l);
        }
        let l = if filter {
            Layout::parse_filter(s).ok()?
        } else {
            Layout::parse_activation(s).ok()?
        };
        if self.layouts.len() < 32 {
            self.layouts.push((s.to_string(), filter, l));
        }
        Some(l)
    }

    /// Decodes exactly the canonical form, or returns `None` for anything else. One pass over
    /// the bytes: loading a large database parses a key per entry.
    fn decode_canonical(&mut self, text: &str) -> Option<ConvProblem> {
        let mut c = Cursor {
            b: text.as_bytes(),
            i: 0,
        };
        let dtype = if c.eat(b"convbfp16") {
            DType::BF16
        } else if c.eat(b"convfp16") {
            DType::F16
        } else if c.eat(b"conv") {
            DType::F32
        } else {
            return None;
        };
        let direction = match c.flag_num(b" -F ")? {
            1 => Direction::Fwd,
            2 => Direction::BwdData,
            4 => Direction::BwdWeight,
            _ => return None,
        };
        let sizes = ConvSizes {
            n: c.flag_num(b" -n ")?,
            c: c.flag_num(b" -c ")?,
            h: c.flag_num(b" -H ")?,
            w: c.flag_num(b" -W ")?,
            k: c.flag_num(b" -k ")?,
            y: c.flag_num(b" -y ")?,
            x: c.flag_num(b" -x ")?,
            pad: [c.flag_num(b" -p ")?, c.flag_num(b" -q ")?],
            stride: [c.flag_num(b" -u ")?, c.flag_num(b" -v ")?],
            dilation: [c.flag_num(b" -l ")?, c.flag_num(b" -j ")?],
            groups: c.flag_num(b" -g ")?,
        };
        let mut layouts = [Layout::NGCHW; 3];
        for (i, (flag, filter)) in [(b" -I ", false), (b" -f ", true), (b" -O ", false)]
            .into_iter()
            .enumerate()
        {
            if !c.eat(flag) {
                return None;
            }
            // The canonical form spells all five dimensions; shorter forms go to the full parser.
            let s = text.get(c.i..c.i + 5)?;
            c.i += 5;
            layouts[i] = self.layout(s, filter)?;
        }
        if c.i != text.len() {
            return None;
        }
        let [input, filter, output] = layouts;
        ConvProblem::new(sizes, direction, dtype, input, filter, output).ok()
    }
}

/// A position in a key being decoded.
struct Cursor<'a> {
    b: &'a [u8],
    i: usize,
}

impl Cursor<'_> {
    /// Consumes `lit` if the text continues with it.
    #[inline]
    fn eat(&mut self, lit: &[u8]) -> bool {
        let ok = self.b.len() - self.i >= lit.len()
            && self.b[self.i..self.i + lit.len()]
                .iter()
                .zip(lit)
                .all(|(a, b)| a == b);
        if ok {
            self.i += lit.len();
        }
        ok
    }

    /// Consumes `flag` and the decimal `u32` after it (digits only, at most ten).
    #[inline]
    fn flag_num(&mut self, flag: &[u8]) -> Option<u32> {
        if !self.eat(flag) {
            return None;
        }
        let start = self.i;
        let mut v = 0u64;
        while self.i < self.b.len() && self.b[self.i].is_ascii_digit() && self.i - start < 10 {
            v = v * 10 + u64::from(self.b[self.i] - b'0');
            self.i += 1;
        }
        if self.i == start {
            return None;
        }
        u32::try_from(v).ok()
    }
}

#[cfg(test)]
fn decode_canonical(text: &str) -> Option<ConvProblem> {
    KeyParser::default().decode_canonical(text)
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
        assert!(decode_canonical(&key.replace("-c 1", "-c  1")).is_none());
        // A trailing space is left to the full parser (`check` flags the spelling).
        assert!(decode_canonical(&format!("{key} ")).is_none());
        assert_eq!(parse_key(&format!("{key} ")), Ok(p));
        assert!(decode_canonical(&key.replace("-n 1", "-n 12345678901")).is_none());
        assert!(decode_canonical(&key.replace("-c 1", "-c 4294967296")).is_none());
        assert!(decode_canonical(&key.replace("-c 1", "-c +1")).is_none());
    }
}
