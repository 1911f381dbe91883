//! Generated hostile inputs and the oracle each must satisfy: the library's parsers for problem
//! lines, databases and search spaces answer with a clean error or a valid result, in bounded
//! time. Shared by the property tests (`tests/robustness.rs`, a few hundred cases in CI) and the
//! long run (`examples/fuzz.rs` through `scripts/fuzz.sh`, a million and more).
#![allow(dead_code)]

use convtune::db::{self, Entry, Fingerprint, Layered, TunedDb};
use convtune::lowering::lower;
use convtune::problem::parse::parse_problem;
use convtune::problem::{parse_problem_file, ConvProblem, MAX_RESIDUE_CLASSES};
use convtune::space::{SearchSpace, MAX_RAW_POINTS};
use rand::seq::SliceRandom;
use rand::Rng;
use std::time::{Duration, Instant};

/// The slowest any one input may be.
pub const TIME_LIMIT: Duration = Duration::from_secs(2);

/// Which parser an input is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// A problem line (either form).
    Problem,
    /// Database text.
    Db,
    /// Search-space text.
    Space,
}

const COMMANDS: &[&str] = &[
    "conv",
    "convfp16",
    "convbfp16",
    "./MIOpenDriver conv",
    "--operation=conv2d",
    "--operation=conv2d_bwd_data",
    "--operation=conv2d_bwd_weight",
    "rocmlir-gen --operation=conv2d",
    "convint8",
    "",
];
const FLAGS: &[&str] = &[
    "-n",
    "-c",
    "-H",
    "-W",
    "-k",
    "-y",
    "-x",
    "-p",
    "-q",
    "-u",
    "-v",
    "-l",
    "-j",
    "-g",
    "-F",
    "-I",
    "-f",
    "-O",
    "--layout",
    "-m",
    "-t",
    "-V",
    "-i",
    "--batchsize",
    "--in_channels",
    "-in_h",
    "-in_w",
    "-out_channels",
    "-fil_h",
    "-fil_w",
    "-padding_h",
    "-padding_w",
    "-padding_h_l",
    "-padding_w_r",
    "-conv_stride_h",
    "-conv_stride_w",
    "-dilation_h",
    "-dilation_w",
    "-groupsize",
    "-t",
    "-in_layout",
    "-fil_layout",
    "-out_layout",
    "-p",
    "-pv",
    "-x2",
    "--arch",
    "-z",
    "---n",
    "-",
    "--",
];
const WORDS: &[&str] = &[
    "NCHW", "NHWC", "NGCHW", "NHWGC", "GKCYX", "GKYXC", "nhwgk", "ngkhw", "KCYX", "f32", "bf16",
    "f16", "conv", "true", "7", "=", "|", "#", "é", "\u{feff}", "\t", "1.5", "-4", "+3", "0x10",
];

/// A number a fuzzer should try: small, edge, or huge.
fn number<R: Rng>(rng: &mut R) -> String {
    match rng.gen_range(0..10) {
        0..=4 => rng.gen_range(0..8u32).to_string(),
        5 => rng.gen_range(0..100_000u32).to_string(),
        6 => [
            0u64, 1, 2, 65535, 65536, 2147483647, 2147483648, 4294967295, 4294967296,
        ]
        .choose(rng)
        .unwrap()
        .to_string(),
        7 => rng.gen::<u32>().to_string(),
        8 => "9".repeat(rng.gen_range(1..40)),
        _ => format!("-{}", rng.gen_range(0..10u32)),
    }
}

/// A problem line: half of them every required flag with edge-case values (so many parse and
/// reach the lowering: huge strides, pads, dilations), half a soup of flags and words.
pub fn problem_line<R: Rng>(rng: &mut R) -> String {
    if rng.gen_bool(0.5) {
        let cmd = ["conv", "convfp16", "convbfp16"].choose(rng).unwrap();
        let dir = ["1", "2", "4"].choose(rng).unwrap();
        let mut s = format!("{cmd} -F {dir}");
        let size = |rng: &mut R| {
            if rng.gen_bool(0.7) {
                rng.gen_range(1..20u32).to_string()
            } else {
                number(rng)
            }
        };
        for f in ["-n", "-c", "-H", "-W", "-k", "-y", "-x"] {
            s.push_str(&format!(" {f} {}", size(rng)));
        }
        for f in ["-p", "-q", "-u", "-v", "-l", "-j", "-g"] {
            if rng.gen_bool(0.5) {
                s.push_str(&format!(" {f} {}", size(rng)));
            }
        }
        if rng.gen_bool(0.3) {
            s.push_str(&format!(
                " --layout {}",
                ["NHWC", "NCHW", "NGCHW"].choose(rng).unwrap()
            ));
        }
        let edits = rng.gen_range(0..2);
        return mutate(rng, &s, edits);
    }
    let mut s = COMMANDS.choose(rng).unwrap().to_string();
    for _ in 0..rng.gen_range(0..24) {
        let flag = FLAGS.choose(rng).unwrap();
        let value = if rng.gen_bool(0.8) {
            number(rng)
        } else {
            WORDS.choose(rng).unwrap().to_string()
        };
        match rng.gen_range(0..10) {
            0 => s.push_str(&format!(" {flag}")),
            1 => s.push_str(&format!(" {flag}={value}")),
            2 => s.push_str(&format!(" {value}")),
            _ => s.push_str(&format!(" {flag} {value}")),
        }
    }
    if rng.gen_bool(0.3) {
        let base = "conv -n 2 -c 8 -H 9 -W 9 -k 8 -y 3 -x 3 -p 1 -q 1 -u 2 -v 2 -F 2";
        s = format!("{base} {s}");
    }
    mutate(rng, &s, 2)
}

/// A valid database of a few entries (some with huge sizes, some sealed the older way), as text.
pub fn db_text<R: Rng>(rng: &mut R) -> String {
    let archs = ["sm_90", "gfx90a", "sm_80"];
    let mut d = TunedDb::new(archs.choose(rng).unwrap());
    for _ in 0..rng.gen_range(0..6) {
        let key = loop {
            let line = problem_line(rng);
            if let Ok(p) = parse_problem(&line) {
                break p.key();
            }
            if rng.gen_bool(0.2) {
                break line;
            }
        };
        let e = Entry {
            problem: key,
            config: "v1:bm=64,bn=64,bk=32,wm=32,wn=32,st=2,va=1,vb=1,vc=1,lds=pad,sk=1,rs=1".into(),
            time_us: rng.gen_range(0.5..1000.0),
            tflops: rng.gen_range(0.0..100.0),
            candidates_tried: rng.gen_range(0..1000),
            fingerprint: Fingerprint {
                gpu: "NVIDIA H200".into(),
                compute_units: 132,
                driver: "13.0".into(),
                clock_mhz: rng.gen_bool(0.5).then_some(1980),
            },
            convtune_version: "0.1.0".into(),
            date: "2026-11-30".into(),
            checksum: String::new(),
        };
        let e = if rng.gen_bool(0.2) {
            let c = Entry::checksum_for(&e.problem, &e.config, &e.convtune_version);
            Entry { checksum: c, ..e }
        } else {
            e.sealed()
        };
        let _ = d.insert(e);
    }
    let text = d.to_toml_string();
    let edits = rng.gen_range(0..4);
    mutate(rng, &text, edits)
}

/// A search space: the built-in text with lists replaced (long ones, zeros, duplicates) and
/// mutations on top.
pub fn space_text<R: Rng>(rng: &mut R) -> String {
    let nv = include_str!("../../search-spaces/nvidia.toml");
    let amd = include_str!("../../search-spaces/amd.toml");
    let mut text = if rng.gen_bool(0.5) { nv } else { amd }.to_string();
    let keys = [
        "block_m",
        "block_n",
        "block_k",
        "warp_m",
        "warp_n",
        "stages",
        "vec_a",
        "vec_b",
        "vec_c",
        "split_k",
        "raster",
        "max_threads",
        "min_warps",
        "max_warps",
    ];
    for _ in 0..rng.gen_range(0..4) {
        let key = keys.choose(rng).unwrap();
        let Some(line) = text
            .lines()
            .find(|l| l.starts_with(key))
            .map(str::to_string)
        else {
            continue;
        };
        let list = match rng.gen_range(0..4) {
            0 => format!("{:?}", (1..=rng.gen_range(1..=4096u32)).collect::<Vec<_>>()),
            1 => format!(
                "{:?}",
                (0..rng.gen_range(0..8))
                    .map(|_| rng.gen_range(0..5000u32))
                    .collect::<Vec<_>>()
            ),
            2 => number(rng),
            _ => "[]".into(),
        };
        text = text.replace(&line, &format!("{key} = {list}"));
    }
    let edits = rng.gen_range(0..3);
    mutate(rng, &text, edits)
}

/// `edits` random byte-level edits: flips, deletions, duplications, insertions of hostile
/// snippets, truncation. Always returns valid UTF-8 (the readers check encoding before parsing;
/// that is tested in `convtune::input`).
pub fn mutate<R: Rng>(rng: &mut R, text: &str, edits: usize) -> String {
    let mut b = text.as_bytes().to_vec();
    for _ in 0..edits {
        let at = if b.is_empty() {
            0
        } else {
            rng.gen_range(0..b.len())
        };
        match rng.gen_range(0..7) {
            0 if !b.is_empty() => b[at] ^= 1 << rng.gen_range(0..7),
            1 if !b.is_empty() => {
                let end = (at + rng.gen_range(1..64)).min(b.len());
                b.drain(at..end);
            }
            2 if !b.is_empty() => {
                let end = (at + rng.gen_range(1..400)).min(b.len());
                let dup = b[at..end].to_vec();
                b.splice(at..at, dup);
            }
            3 => b.truncate(at),
            4 => {
                let junk = [
                    "[[Entry]]\n",
                    "[[entry]]\n",
                    "\n[header]\n",
                    "entries = 99\n",
                    "format = 0\n",
                    "\"",
                    "=",
                    "\n",
                    "# c\n",
                    "[",
                    "]",
                    "{",
                    "}",
                    "1e999",
                    "nan",
                    "-0",
                    "\u{feff}",
                    "\\u0000",
                    "\\",
                    "arch = \"SM_90\"\n",
                ];
                let j = junk.choose(rng).unwrap().as_bytes();
                b.splice(at..at, j.iter().copied());
            }
            5 => {
                let n = number(rng);
                b.splice(at..at, n.bytes());
            }
            _ => {}
        }
    }
    String::from_utf8_lossy(&b).into_owned()
}

/// Runs one input through its parser and checks the answer. Returns whether it was accepted;
/// panics (the caller counts it) when an accepted input is not valid.
pub fn check(target: Target, input: &str) -> bool {
    match target {
        Target::Problem => check_problem(input),
        Target::Db => check_db(input),
        Target::Space => check_space(input),
    }
}

fn check_problem(line: &str) -> bool {
    let _ = parse_problem_file(line);
    let Ok(p) = parse_problem(line) else {
        return false;
    };
    assert_eq!(parse_problem(&p.key()), Ok(p), "key round trip of {line}");
    let [h, w] = p.residue_classes();
    assert!(h as u64 * w as u64 <= MAX_RESIDUE_CLASSES);
    let l = lower(&p);
    assert!(l.gemms.len() as u64 <= MAX_RESIDUE_CLASSES);
    assert!(!l.gemms.is_empty() || l.zero_init, "{line}");
    true
}

fn check_db(text: &str) -> bool {
    let Ok(d) = TunedDb::parse(text, "fuzz") else {
        return false;
    };
    // What is accepted writes and reads back to the same database.
    let again = d.to_toml_string();
    let back = TunedDb::parse(&again, "again").expect("a written database reads back");
    assert_eq!(back.len(), d.len());
    assert_eq!(back.to_toml_string(), again);
    let trusted = |x: &TunedDb| (0..x.len()).filter(|&i| x.seal_at(i).trusted()).count();
    assert_eq!(trusted(&back), trusted(&d));
    let any = |_: &ConvProblem, _: &str, _: &str| -> Result<(), String> { Ok(()) };
    let _ = db::check(&d, d.arch(), &any);
    // Lookups serve only entries whose checksum holds.
    let layers = Layered {
        system: None,
        user: Some(&d),
    };
    for (i, e) in d.entries().iter().enumerate().take(4) {
        let Ok(p) = parse_problem(&e.problem) else {
            continue;
        };
        let r = layers.lookup(&p, d.arch(), None, &any);
        if let Some(c) = &r.config {
            assert!(
                d.entries()
                    .iter()
                    .enumerate()
                    .any(|(j, x)| &x.config == c && d.seal_at(j).trusted()),
                "served an untrusted entry (#{i})"
            );
        }
    }
    true
}

fn check_space(text: &str) -> bool {
    let Ok(s) = SearchSpace::from_toml(text, "fuzz") else {
        return false;
    };
    let raw = s.raw_size();
    assert!(raw > 0 && raw <= MAX_RAW_POINTS, "raw {raw}");
    assert_eq!(s.iter_raw().take(3).count(), raw.min(3) as usize);
    true
}

/// Generates one input for `target`.
pub fn generate<R: Rng>(rng: &mut R, target: Target) -> String {
    match target {
        Target::Problem => problem_line(rng),
        Target::Db => db_text(rng),
        Target::Space => space_text(rng),
    }
}

/// Runs `input` and returns (accepted, elapsed), asserting the time limit.
pub fn timed(target: Target, input: &str) -> (bool, Duration) {
    let start = Instant::now();
    let ok = check(target, input);
    (ok, start.elapsed())
}
