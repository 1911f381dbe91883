//! Parsers for MIOpenDriver lines and rocMLIR driver flags, and for problem files.
//!
//! Problem lists come from other tools (MIOpen's tuning lists, rocMLIR's test scripts, shell
//! history), so both spellings are accepted as they are written there, program path and
//! driver-only flags included. Everything else is an error that names the flag and the value:
//! a typo must never silently tune a different problem.

pub use super::parse_error::ParseError;
use super::{ConvProblem, ConvSizes, DType, Direction, Layout, ProblemError};

/// The most characters of one token an error echoes (see [`crate::input::excerpt`]).
const MAX_TOKEN: usize = 64;

/// A token as an error shows it: cut to [`MAX_TOKEN`] characters.
fn cut(s: &str) -> String {
    crate::input::excerpt(s, MAX_TOKEN)
}

/// Which setting a flag writes; aliases of one setting share a key so contradictions are caught.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Key {
    N,
    C,
    H,
    W,
    K,
    Y,
    X,
    PadH,
    PadW,
    PadHL,
    PadHR,
    PadWL,
    PadWR,
    StrideH,
    StrideW,
    DilH,
    DilW,
    Groups,
    Forw,
    Operation,
    DType,
    InLayout,
    FilLayout,
    OutLayout,
    AllLayouts,
    Mode,
    /// A driver-only flag with a value, dropped.
    IgnoreValue,
    /// A driver-only switch (no value, or an inline `=value`), dropped.
    IgnoreSwitch,
}

/// The flags MIOpenDriver's conv commands take that describe the problem (or are harmless).
fn miopen_key(dashes: usize, name: &str) -> Option<Key> {
    use Key::*;
    let short = match name {
        "n" => Some(N),
        "c" => Some(C),
        "H" => Some(H),
        "W" => Some(W),
        "k" => Some(K),
        "y" => Some(Y),
        "x" => Some(X),
        "p" => Some(PadH),
        "q" => Some(PadW),
        "u" => Some(StrideH),
        "v" => Some(StrideW),
        "l" => Some(DilH),
        "j" => Some(DilW),
        "g" => Some(Groups),
        "F" => Some(Forw),
        "I" => Some(InLayout),
        "f" => Some(FilLayout),
        "O" => Some(OutLayout),
        "m" => Some(Mode),
        "t" | "V" | "i" | "s" | "b" => Some(IgnoreValue),
        _ => None,
    };
    if dashes == 1 && short.is_some() {
        return short;
    }
    match name {
        "batchsize" => Some(N),
        "in_channels" => Some(C),
        "in_h" => Some(H),
        "in_w" => Some(W),
        "out_channels" => Some(K),
        "fil_h" => Some(Y),
        "fil_w" => Some(X),
        "pad_h" => Some(PadH),
        "pad_w" => Some(PadW),
        "conv_stride_h" => Some(StrideH),
        "conv_stride_w" => Some(StrideW),
        "dilation_h" => Some(DilH),
        "dilation_w" => Some(DilW),
        "group_count" => Some(Groups),
        "forw" => Some(Forw),
        "in_layout" => Some(InLayout),
        "fil_layout" => Some(FilLayout),
        "out_layout" => Some(OutLayout),
        "layout" => Some(AllLayouts),
        "mode" => Some(Mode),
        "time" | "verify" | "iter" | "search" | "bias" => Some(IgnoreValue),
        _ => None,
    }
}

/// The flags of rocMLIR's driver (`rocmlir-gen`, formerly `mlir-miopen-driver`); one or two dashes.
fn rocmlir_key(name: &str) -> Option<Key> {
    use Key::*;
    Some(match name {
        "operation" => Operation,
        "batchsize" => N,
        "in_channels" => C,
        "in_h" => H,
        "in_w" => W,
        "out_channels" => K,
        "fil_h" => Y,
        "fil_w" => X,
        "padding_h" => PadH,
        "padding_w" => PadW,
        "padding_h_l" => PadHL,
        "padding_h_r" => PadHR,
        "padding_w_l" => PadWL,
        "padding_w_r" => PadWR,
        "conv_stride_h" => StrideH,
        "conv_stride_w" => StrideW,
        "dilation_h" => DilH,
        "dilation_w" => DilW,
        "groupsize" | "g" => Groups,
        "t" => DType,
        "in_layout" => InLayout,
        "fil_layout" => FilLayout,
        "out_layout" => OutLayout,
        "rand" | "rand_type" | "arch" | "num_cu" => IgnoreValue,
        "p" | "pv" | "c" | "x2" => IgnoreSwitch,
        _ => return None,
    })
}

/// A flag token: starts with one or two dashes and is not a negative number.
fn is_flag(tok: &str) -> bool {
    let rest = tok.trim_start_matches('-');
    tok.starts_with('-')
        && !rest.is_empty()
        && !rest.starts_with(|c: char| c.is_ascii_digit() || c == '.')
}

/// One flag occurrence: the setting, the flag as written, its value.
struct Setting<'a> {
    key: Key,
    flag: &'a str,
    value: &'a str,
}

/// Splits tokens into settings, checking every flag against `lookup(dashes, name)` and keeping
/// the last-seen value per key only if all occurrences agree.
fn collect<'a>(
    toks: &[&'a str],
    form: &'static str,
    lookup: impl Fn(usize, &str) -> Option<Key>,
) -> Result<Vec<Setting<'a>>, ParseError> {
    let mut out: Vec<Setting<'a>> = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        let tok = toks[i];
        i += 1;
        if !is_flag(tok) {
            return Err(ParseError::UnexpectedToken { token: cut(tok) });
        }
        let body = tok.trim_start_matches('-');
        let dashes = tok.len() - body.len();
        let (name, inline) = match body.split_once('=') {
            Some((n, v)) => (n, Some(v)),
            None => (body, None),
        };
        let flag = &tok[..dashes + name.len()];
        let unknown = || ParseError::UnknownFlag {
            flag: cut(flag),
            form,
        };
        if dashes > 2 {
            return Err(unknown());
        }
        let key = lookup(dashes, name).ok_or_else(unknown)?;
        let value = match (key, inline) {
            (Key::IgnoreSwitch, None) => continue,
            // LLVM's boolean options take `=true` and the like; anything else is a value the
            // user meant for something (`-p=7` reads like padding), never silently dropped.
            (Key::IgnoreSwitch, Some("true" | "false" | "1" | "0")) => continue,
            (Key::IgnoreSwitch, Some(v)) => {
                return Err(ParseError::BadValue {
                    flag: cut(flag),
                    value: cut(v),
                    why: "is a switch of the driver (true or false), not a problem size; \
                          padding is -padding_h / -padding_w"
                        .into(),
                })
            }
            (_, Some(v)) if !v.is_empty() => v,
            (_, Some(_)) => return Err(ParseError::MissingValue { flag: cut(flag) }),
            (_, None) => match toks.get(i) {
                Some(v) if !is_flag(v) => {
                    i += 1;
                    v
                }
                _ => return Err(ParseError::MissingValue { flag: cut(flag) }),
            },
        };
        if key == Key::IgnoreValue {
            continue;
        }
        if let Some(prev) = out.iter().find(|s| s.key == key) {
            if prev.value != value {
                return Err(ParseError::Conflict {
                    first_flag: cut(prev.flag),
                    first: cut(prev.value),
                    flag: cut(flag),
                    second: cut(value),
                });
            }
            continue;
        }
        out.push(Setting { key, flag, value });
    }
    Ok(out)
}

/// Lookups over the collected settings of one line.
struct Settings<'a>(Vec<Setting<'a>>);

impl<'a> Settings<'a> {
    fn get(&self, key: Key) -> Option<&Setting<'a>> {
        self.0.iter().find(|s| s.key == key)
    }

    fn num(&self, key: Key) -> Result<Option<u32>, ParseError> {
        self.get(key)
            .map(|s| parse_u32(s.flag, s.value))
            .transpose()
    }

    fn required(
        &self,
        key: Key,
        flag: &'static str,
        what: &'static str,
    ) -> Result<u32, ParseError> {
        self.num(key)?.ok_or(ParseError::MissingFlag { flag, what })
    }

    fn num_or(&self, key: Key, default: u32) -> Result<u32, ParseError> {
        Ok(self.num(key)?.unwrap_or(default))
    }

    /// The layout set by `key`, else by `fallback` (`--layout`), else channels-first.
    fn layout(
        &self,
        key: Key,
        fallback: Option<&Setting<'a>>,
        act: bool,
    ) -> Result<Layout, ParseError> {
        match self.get(key).or(fallback) {
            Some(s) => parse_layout(s.flag, s.value, act),
            None if act => Ok(Layout::NGCHW),
            None => Ok(Layout::GKCYX),
        }
    }
}

fn parse_layout(flag: &str, value: &str, act: bool) -> Result<Layout, ParseError> {
    let parsed = if act {
        Layout::parse_activation(value)
    } else {
        Layout::parse_filter(value)
    };
    parsed.map_err(|source| ParseError::Layout {
        flag: cut(flag),
        source,
    })
}

fn parse_u32(flag: &str, value: &str) -> Result<u32, ParseError> {
    value.parse::<u32>().map_err(|_| {
        let digits = value.strip_prefix('-').unwrap_or(value);
        let why = if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
            if value.starts_with('-') {
                "must not be negative"
            } else {
                "is too large"
            }
        } else {
            "is not a non-negative integer"
        };
        ParseError::BadValue {
            flag: cut(flag),
            value: cut(value),
            why: why.into(),
        }
    })
}

/// Parses one problem line in either accepted form: a MIOpenDriver command
/// (`conv|convfp16|convbfp16 -n … -F 1|2|4`, optionally after the program path) or rocMLIR
/// driver flags with `--operation=conv2d|conv2d_bwd_data|conv2d_bwd_weight`. Anything after a
/// `|` is ignored, so a copied shell pipeline parses as is.
pub fn parse_problem(line: &str) -> Result<ConvProblem, ParseError> {
    let line = line.split('|').next().unwrap_or("");
    let toks: Vec<&str> = line.split_whitespace().collect();
    let first = *toks.first().ok_or(ParseError::Empty)?;
    let is_rocmlir = toks.iter().any(|t| {
        is_flag(t) && {
            let body = t.trim_start_matches('-');
            body.split('=').next() == Some("operation")
        }
    });
    if is_rocmlir {
        let start = usize::from(!is_flag(first));
        return parse_rocmlir(&toks[start..]);
    }
    let conv_like = |t: &str| t.to_ascii_lowercase().starts_with("conv");
    let at = if conv_like(first) {
        0
    } else if !is_flag(first) && toks.get(1).is_some_and(|t| conv_like(t)) {
        1
    } else {
        return Err(ParseError::UnknownForm { token: cut(first) });
    };
    parse_miopen(toks[at], &toks[at + 1..])
}

fn parse_miopen(command: &str, toks: &[&str]) -> Result<ConvProblem, ParseError> {
    let dtype = match command {
        "conv" => DType::F32,
        "convfp16" => DType::F16,
        "convbfp16" => DType::BF16,
        _ => {
            return Err(ParseError::UnsupportedCommand {
                command: cut(command),
            })
        }
    };
    let s = Settings(collect(toks, "MIOpenDriver", miopen_key)?);
    if let Some(m) = s.get(Key::Mode) {
        if m.value != "conv" {
            return Err(bad(m, "only convolution mode 'conv' is supported"));
        }
    }
    let direction = match s.get(Key::Forw) {
        None => {
            return Err(ParseError::MissingFlag {
                flag: "-F",
                what: "direction: 1 fwd, 2 bwd-data, 4 bwd-weight",
            })
        }
        Some(f) => match f.value {
            "1" => Direction::Fwd,
            "2" => Direction::BwdData,
            "4" => Direction::BwdWeight,
            _ => {
                return Err(bad(
                    f,
                    "expected 1 (fwd), 2 (bwd-data) or 4 (bwd-weight); one problem a line",
                ))
            }
        },
    };
    let sizes = ConvSizes {
        n: s.required(Key::N, "-n", "batch size")?,
        c: s.required(Key::C, "-c", "input channels")?,
        h: s.required(Key::H, "-H", "input height")?,
        w: s.required(Key::W, "-W", "input width")?,
        k: s.required(Key::K, "-k", "output channels")?,
        y: s.required(Key::Y, "-y", "filter height")?,
        x: s.required(Key::X, "-x", "filter width")?,
        pad: [s.num_or(Key::PadH, 0)?, s.num_or(Key::PadW, 0)?],
        stride: [s.num_or(Key::StrideH, 1)?, s.num_or(Key::StrideW, 1)?],
        dilation: [s.num_or(Key::DilH, 1)?, s.num_or(Key::DilW, 1)?],
        groups: s.num_or(Key::Groups, 1)?,
    };
    let all = s.get(Key::AllLayouts);
    let layouts = [
        s.layout(Key::InLayout, all, true)?,
        s.layout(Key::FilLayout, all, false)?,
        s.layout(Key::OutLayout, all, true)?,
    ];
    // `--layout` sets all three; a per-tensor flag that says otherwise is a contradiction, not
    // an override (which of the two the user meant is a guess).
    if let Some(all) = all {
        for (key, act, layout) in [
            (Key::InLayout, true, layouts[0]),
            (Key::FilLayout, false, layouts[1]),
            (Key::OutLayout, true, layouts[2]),
        ] {
            if let Some(one) = s.get(key) {
                if parse_layout(all.flag, all.value, act)? != layout {
                    return Err(ParseError::Conflict {
                        first_flag: cut(all.flag),
                        first: cut(all.value),
                        flag: cut(one.flag),
                        second: cut(one.value),
                    });
                }
            }
        }
    }
    build(sizes, direction, dtype, layouts)
}

fn parse_rocmlir(toks: &[&str]) -> Result<ConvProblem, ParseError> {
    let s = Settings(collect(toks, "rocMLIR", |_, name| rocmlir_key(name))?);
    let direction = match s.get(Key::Operation) {
        Some(op) => match op.value {
            "conv2d" | "conv" => Direction::Fwd,
            "conv2d_bwd_data" | "conv_bwd_data" => Direction::BwdData,
            "conv2d_bwd_weight" | "conv_bwd_weight" => Direction::BwdWeight,
            _ => {
                return Err(bad(
                    op,
                    "expected conv2d, conv2d_bwd_data or conv2d_bwd_weight",
                ))
            }
        },
        None => {
            return Err(ParseError::MissingFlag {
                flag: "--operation",
                what: "conv2d, conv2d_bwd_data or conv2d_bwd_weight",
            })
        }
    };
    let dtype = match s.get(Key::DType) {
        None => DType::F32,
        Some(t) => match t.value {
            "f32" | "fp32" => DType::F32,
            "f16" | "fp16" => DType::F16,
            "bf16" => DType::BF16,
            _ => return Err(bad(t, "expected f32, f16 or bf16")),
        },
    };
    let sizes = ConvSizes {
        n: s.required(Key::N, "-batchsize", "batch size")?,
        c: s.required(Key::C, "-in_channels", "input channels")?,
        h: s.required(Key::H, "-in_h", "input height")?,
        w: s.required(Key::W, "-in_w", "input width")?,
        k: s.required(Key::K, "-out_channels", "output channels")?,
        y: s.required(Key::Y, "-fil_h", "filter height")?,
        x: s.required(Key::X, "-fil_w", "filter width")?,
        pad: [
            symmetric_pad(&s, Key::PadH, Key::PadHL, Key::PadHR)?,
            symmetric_pad(&s, Key::PadW, Key::PadWL, Key::PadWR)?,
        ],
        stride: [s.num_or(Key::StrideH, 1)?, s.num_or(Key::StrideW, 1)?],
        dilation: [s.num_or(Key::DilH, 1)?, s.num_or(Key::DilW, 1)?],
        groups: s.num_or(Key::Groups, 1)?,
    };
    // rocMLIR names output channels K (`ngkhw`); our activation layouts call every channel C.
    let out = match s.get(Key::OutLayout) {
        Some(o) => parse_layout(o.flag, &o.value.replace(['k', 'K'], "C"), true)?,
        None => Layout::NGCHW,
    };
    let layouts = [
        s.layout(Key::InLayout, None, true)?,
        s.layout(Key::FilLayout, None, false)?,
        out,
    ];
    build(sizes, direction, dtype, layouts)
}

/// `padding_h` sets both sides; `padding_h_l/_r` set one each. Only symmetric padding is tuned.
fn symmetric_pad(s: &Settings, both: Key, left: Key, right: Key) -> Result<u32, ParseError> {
    let b = s.num(both)?;
    let l = s.num(left)?.or(b).unwrap_or(0);
    let r = s.num(right)?.or(b).unwrap_or(0);
    for side in [left, right] {
        if let (Some(b), Some(set)) = (b, s.get(side)) {
            if parse_u32(set.flag, set.value)? != b {
                let first = s.get(both).map_or(String::new(), |x| x.flag.to_string());
                return Err(ParseError::Conflict {
                    first_flag: first,
                    first: b.to_string(),
                    flag: cut(set.flag),
                    second: cut(set.value),
                });
            }
        }
    }
    if l != r {
        let flag = s.get(left).or(s.get(right)).map_or("padding", |x| x.flag);
        return Err(ParseError::BadValue {
            flag: cut(flag),
            value: format!("{l} left, {r} right"),
            why: "asymmetric padding is not supported".into(),
        });
    }
    Ok(l)
}

fn bad(s: &Setting, why: &str) -> ParseError {
    ParseError::BadValue {
        flag: cut(s.flag),
        value: cut(s.value),
        why: why.into(),
    }
}

/// Validates through [`ConvProblem::new`], first rejecting sizes whose element counts or padded
/// extents overflow the integer types `ConvProblem`'s accessors compute them in.
fn build(
    sizes: ConvSizes,
    direction: Direction,
    dtype: DType,
    [input, filter, output]: [Layout; 3],
) -> Result<ConvProblem, ParseError> {
    let s = &sizes;
    let mut out = [0u64; 2];
    for (d, (input, f)) in [(s.h, s.y), (s.w, s.x)].into_iter().enumerate() {
        let padded = input as u64 + 2 * s.pad[d] as u64;
        if padded > u32::MAX as u64 {
            return Err(ParseError::BadValue {
                flag: ["-p", "-q"][d].into(),
                value: s.pad[d].to_string(),
                why: "the padded extent overflows 32 bits".into(),
            });
        }
        let dilated = (f as u64).saturating_sub(1) * s.dilation[d] as u64 + 1;
        if padded >= dilated {
            out[d] = (padded - dilated) / s.stride[d].max(1) as u64 + 1;
        }
    }
    let (n, c, k) = (s.n as u128, s.c as u128, s.k as u128);
    let per_group = |v: u128| v / s.groups.max(1) as u128;
    let counts = [
        ("input", n * c * s.h as u128 * s.w as u128),
        ("filter", k * per_group(c) * s.y as u128 * s.x as u128),
        ("output", n * k * out[0] as u128 * out[1] as u128),
    ];
    for (what, elems) in counts {
        if elems >= i32::MAX as u128 {
            let elems = elems.min(u64::MAX as u128) as u64;
            return Err(ProblemError::TooLarge { what, elems }.into());
        }
    }
    Ok(ConvProblem::new(
        sizes, direction, dtype, input, filter, output,
    )?)
}

/// Parses a problem file: one problem a line; `#` starts a comment (whole-line or trailing);
/// blank lines are skipped. The first bad line is reported with its 1-based number.
pub fn parse_problem_file(text: &str) -> Result<Vec<ConvProblem>, ParseError> {
    crate::input::list_lines(text)
        .map(|(line, text)| {
            parse_problem(text).map_err(|e| ParseError::Line {
                line,
                source: Box::new(e),
            })
        })
        .collect()
}
