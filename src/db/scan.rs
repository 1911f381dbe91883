//! Scanning primitives of the fast database reader: TOML strings and numbers in the forms the
//! writer produces, and a word-at-a-time byte search. Each either returns exactly what the
//! `toml` crate would read or gives up (`None`), never something different.

/// `0` or a digit string without a leading zero, sign or underscore (TOML's plain decimal).
pub(crate) fn plain_uint(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty() && b.iter().all(u8::is_ascii_digit) && (b[0] != b'0' || b.len() == 1)
}

/// A plain non-negative TOML integer; TOML integers are 64-bit signed, so larger ones are
/// errors the full parser must report.
pub(crate) fn toml_uint(s: &str) -> Option<u64> {
    if !plain_uint(s) {
        return None;
    }
    s.parse::<i64>().ok().map(|v| v as u64)
}

/// A TOML float or integer in the forms the writer uses:
/// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`. Rust's parser rounds the same way the
/// TOML crate does (it uses it), so the value is bit-identical.
pub(crate) fn float(s: &str) -> Option<f64> {
    let b = s.as_bytes();
    let mut i = usize::from(b.first() == Some(&b'-'));
    let int_start = i;
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
    }
    let int_len = i - int_start;
    if int_len == 0 || (b[int_start] == b'0' && int_len > 1) {
        return None;
    }
    if i < b.len() && b[i] == b'.' {
        i += 1;
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == start {
            return None;
        }
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        i += 1;
        if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
            i += 1;
        }
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == start {
            return None;
        }
    }
    if i != b.len() {
        return None;
    }
    s.parse().ok()
}

/// A basic string that makes up the whole value.
pub(crate) fn whole_string(value: &str) -> Option<String> {
    // Fast path: `"body"` filling the value, the body free of quotes, backslashes and control
    // characters. One branch-free pass the compiler vectorises, then a copy.
    if let Some(body) = value.strip_prefix('"').and_then(|v| v.strip_suffix('"')) {
        if !has_special(body.as_bytes(), true) {
            return Some(body.to_string());
        }
    }
    match string(value)? {
        (s, "") => Some(s),
        _ => None,
    }
}

/// Whether `bytes` holds a backslash, a control character TOML forbids in strings, or (with
/// `quotes`) a double quote. No early exit, so it compiles to vector compares.
fn has_special(bytes: &[u8], quotes: bool) -> bool {
    let q = if quotes { b'"' } else { b'\\' };
    bytes.iter().fold(false, |acc, &b| {
        acc | (b == b'\\') | (b == q) | ((b < 0x20) & (b != b'\t')) | (b == 0x7f)
    })
}

/// The first `needle` in `hay`, eight bytes a step (the classic zero-byte test on a word):
/// lines and keys are scanned this way because the per-call setup of the standard searchers
/// dominated on such short strings.
pub(crate) fn find_byte(hay: &[u8], needle: u8) -> Option<usize> {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    let pattern = LO.wrapping_mul(u64::from(needle));
    let mut chunks = hay.chunks_exact(8);
    let mut base = 0;
    for c in &mut chunks {
        let mut w = [0u8; 8];
        w.copy_from_slice(c);
        let x = u64::from_le_bytes(w) ^ pattern;
        let found = x.wrapping_sub(LO) & !x & HI;
        if found != 0 {
            // The lowest flagged byte is always a true match (false flags only follow one).
            return Some(base + (found.trailing_zeros() / 8) as usize);
        }
        base += 8;
    }
    chunks
        .remainder()
        .iter()
        .position(|&b| b == needle)
        .map(|i| base + i)
}

/// A TOML basic string at the start of `s`: its value and the text after the closing quote.
pub(crate) fn string(s: &str) -> Option<(String, &str)> {
    let rest = s.strip_prefix('"')?;
    let bytes = rest.as_bytes();
    // Fast path: up to the first quote there is no backslash and no control character. The
    // check runs over the whole slice without early exit so the compiler can vectorise it.
    if let Some(q) = find_byte(bytes, b'"') {
        if !has_special(&bytes[..q], false) {
            return Some((rest[..q].to_string(), &rest[q + 1..]));
        }
    }
    let mut out = String::with_capacity(rest.len());
    let mut chars = rest.char_indices();
    while let Some((at, c)) = chars.next() {
        match c {
            '"' => return Some((out, &rest[at + 1..])),
            '\\' => {
                let (_, e) = chars.next()?;
                let hex = |n: usize, chars: &mut std::str::CharIndices| -> Option<char> {
                    let mut v = 0u32;
                    for _ in 0..n {
                        v = v * 16 + chars.next()?.1.to_digit(16)?;
                    }
                    char::from_u32(v)
                };
                out.push(match e {
                    'b' => '\u{8}',
                    't' => '\t',
                    'n' => '\n',
                    'f' => '\u{c}',
                    'r' => '\r',
                    '"' => '"',
                    '\\' => '\\',
                    'u' => hex(4, &mut chars)?,
                    'U' => hex(8, &mut chars)?,
                    _ => return None,
                });
            }
            c if (c < '\u{20}' && c != '\t') || c == '\u{7f}' => return None,
            c => out.push(c),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_follow_toml_grammar() {
        for ok in ["0", "1", "-0.5", "102.5", "1e-7", "1.5E+20", "3"] {
            assert_eq!(float(ok), ok.parse().ok(), "{ok}");
        }
        for bad in [
            "", "01", "1.", ".5", "+1", "1_0", "nan", "inf", "1e", "1.5 ", "0x10",
        ] {
            assert_eq!(float(bad), None, "{bad}");
        }
        assert!(plain_uint("0") && plain_uint("132"));
        assert!(!plain_uint("01") && !plain_uint("+1") && !plain_uint("1_000"));
        assert_eq!(toml_uint("9223372036854775807"), Some(i64::MAX as u64));
        assert_eq!(toml_uint("9223372036854775808"), None);
    }

    #[test]
    fn find_byte_finds_the_first() {
        let hay = b"abcdefgh\nijklmnop\nq";
        for needle in [b'a', b'h', b'\n', b'q', b'z', 0x80, 0xff] {
            for start in 0..hay.len() {
                let expect = hay[start..].iter().position(|&b| b == needle);
                assert_eq!(
                    find_byte(&hay[start..], needle),
                    expect,
                    "{needle} from {start}"
                );
            }
        }
        // Bytes just above the needle must not be confused with it.
        assert_eq!(
            find_byte(
                &[0x0b, 0x0b, 0x0a, 0x0a, 0x0b, 0x0b, 0x0b, 0x0b, 0x0a],
                0x0a
            ),
            Some(2)
        );
        assert_eq!(
            find_byte(&[0x01, 0x00, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01], 0x01),
            Some(0)
        );
        assert_eq!(find_byte(&[0x00; 8], 0x01), None);
        assert_eq!(find_byte(&[0x81; 8], 0x01), None);
    }

    #[test]
    fn strings_and_escapes() {
        assert_eq!(
            string(r#""a\"b\\c\u00e9\U0001F600" tail"#),
            Some(("a\"b\\cé😀".to_string(), " tail"))
        );
        assert_eq!(string("\"tab\there\""), Some(("tab\there".to_string(), "")));
        assert_eq!(string(r#""\x41""#), None);
        assert_eq!(string("\"unterminated"), None);
        assert_eq!(string("\"nul\u{0}\""), None);
        assert_eq!(string(r#""\uD800""#), None);
    }
}
