//! Golden codegen hashes: the PTX and AMD code objects generated for a fixed sample of
//! (arch, problem, config) over every arch and kernel kind (fwd, bwd-data with zero-init and
//! several sub-GEMMs, bwd-weight with split-K and its finish pass, wgmma paths, the reference
//! kernel, the faulting test kernel) must stay byte-identical through refactors.
//!
//! The sample lives in `tests/golden/codegen.tsv`, one line per module:
//! `arch<TAB>kind<TAB>problem<TAB>config<TAB>fnv1a-64 of the module`. Reading it back needs only
//! the problem and config string forms, so it also proves that every stored config still parses.
//! `CONVTUNE_BLESS=1 cargo test --release --test golden` re-hashes the recorded sample and
//! rewrites the file (`CONVTUNE_BLESS=redraw` draws a new sample): do that only in a commit of
//! its own that shows what changed and says why.

use convtune::arch::Arch;
use convtune::codegen::{compile_conv, compile_faulting, compile_reference, Compiled, Target};
use convtune::config::PerfConfig;
use convtune::lowering::lower;
use convtune::problem::ConvProblem;
use convtune::space::{sample_legal, SearchSpace};
use rayon::prelude::*;
use std::path::PathBuf;

mod common;
use common::{cfg, problem};

const ARCHS: [&str; 5] = ["sm_80", "sm_90", "gfx908", "gfx90a", "gfx942"];

/// Every direction, dtype and both layout families; strided bwd-data (several sub-GEMMs and a
/// zero-init), a long bwd-weight reduction (split-K), groups.
const PROBLEMS: [&str; 8] = [
    "conv -n 2 -c 16 -H 9 -W 7 -k 24 -y 3 -x 3 -p 1 -q 1 -F 1 --layout NHWC",
    "convbfp16 -n 4 -c 64 -H 14 -W 14 -k 64 -y 3 -x 3 -p 1 -q 1 -F 1 --layout NHWC",
    "convfp16 -n 2 -c 32 -H 9 -W 9 -k 64 -y 3 -x 3 -p 1 -q 1 -g 4 -F 1 --layout NCHW",
    "conv -n 1 -c 8 -H 9 -W 7 -k 8 -y 3 -x 2 -p 2 -q 1 -u 2 -v 2 -l 2 -j 1 -g 2 -F 2 --layout NCHW",
    "convbfp16 -n 2 -c 64 -H 1 -W 64 -k 64 -y 1 -x 2 -u 1 -v 2 -F 2 --layout NHWC",
    "convfp16 -n 2 -c 32 -H 15 -W 15 -k 32 -y 3 -x 3 -p 1 -q 1 -u 2 -v 2 -F 2 --layout NHWC",
    "convbfp16 -n 8 -c 64 -H 7 -W 7 -k 128 -y 1 -x 1 -F 4 --layout NHWC",
    "conv -n 2 -c 24 -H 13 -W 11 -k 40 -y 2 -x 1 -p 3 -q 2 -u 3 -v 2 -F 4 --layout NCHW",
];

/// Configs per (arch, problem) when a sample is drawn.
const PER_PROBLEM: usize = 3;

fn golden_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden/codegen.tsv")
}

/// FNV-1a, 64 bits: stable across Rust versions (unlike `DefaultHasher`).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    })
}

fn module_bytes(c: &Compiled) -> Vec<u8> {
    match (&c.ptx, &c.code_object) {
        (Some(ptx), _) => ptx.as_bytes().to_vec(),
        (None, Some(co)) => co.clone(),
        (None, None) => panic!("a compiled module with neither PTX nor a code object"),
    }
}

/// One module of the sample.
#[derive(Clone)]
struct Case {
    arch: String,
    kind: String,
    problem: String,
    config: String,
}

impl Case {
    fn compile(&self) -> u64 {
        let arch = Arch::from_name(&self.arch).unwrap();
        let target = Target::parse(arch.name).unwrap();
        let p: ConvProblem = problem(&self.problem);
        let compiled = match self.kind.as_str() {
            "reference" => compile_reference(&p, target),
            "conv" => compile_conv(&lower(&p), &cfg(&self.config), target),
            "faulting" => compile_faulting(&lower(&p), &cfg(&self.config), target),
            k => panic!("unknown kind {k}"),
        }
        .unwrap_or_else(|e| panic!("{} {} {} {}: {e}", self.arch, self.kind, p, self.config));
        fnv1a(&module_bytes(&compiled))
    }
}

/// Draws the sample: per arch and problem, a few legal configs of the shipped space (sorted by
/// their string so the draw is stable), the wgmma paths where legal, the reference kernel, and
/// one faulting kernel per arch.
fn draw() -> Vec<Case> {
    let mut cases = Vec::new();
    for a in ARCHS {
        let arch = Arch::from_name(a).unwrap();
        let space = SearchSpace::default_for(&arch);
        for (i, line) in PROBLEMS.iter().enumerate() {
            let p: ConvProblem = problem(line);
            let key = p.to_string();
            cases.push(Case {
                arch: a.into(),
                kind: "reference".into(),
                problem: key.clone(),
                config: "-".into(),
            });
            let mut picked: Vec<PerfConfig> = sample_legal(&p, &arch, &space, PER_PROBLEM, 17);
            // Add one config of each wgmma path when the space has them for this problem.
            let legal = sample_legal(&p, &arch, &space, 4096, 23);
            for mma in ["mma=wg", "mma=wg1"] {
                if let Some(c) = legal.iter().find(|c| c.to_string().ends_with(mma)) {
                    picked.push(*c);
                }
            }
            // One split-K config where the space allows it.
            if let Some(c) = legal.iter().find(|c| c.split_k > 1) {
                picked.push(*c);
            }
            picked.sort_by_key(|c| c.to_string());
            picked.dedup();
            for c in &picked {
                cases.push(Case {
                    arch: a.into(),
                    kind: "conv".into(),
                    problem: key.clone(),
                    config: c.to_string(),
                });
            }
            if i == 0 {
                if let Some(c) = picked.first() {
                    cases.push(Case {
                        arch: a.into(),
                        kind: "faulting".into(),
                        problem: key.clone(),
                        config: c.to_string(),
                    });
                }
            }
        }
    }
    cases
}

fn read() -> Vec<(Case, u64)> {
    let text = std::fs::read_to_string(golden_path())
        .expect("tests/golden/codegen.tsv is missing: run with CONVTUNE_BLESS=1 to draw it");
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            assert_eq!(f.len(), 5, "bad golden line: {l}");
            let hash = u64::from_str_radix(f[4], 16).expect("hash");
            (
                Case {
                    arch: f[0].into(),
                    kind: f[1].into(),
                    problem: f[2].into(),
                    config: f[3].into(),
                },
                hash,
            )
        })
        .collect()
}

#[test]
fn generated_modules_match_the_golden_hashes() {
    if let Some(mode) = std::env::var_os("CONVTUNE_BLESS") {
        // Re-hash the recorded sample; `CONVTUNE_BLESS=redraw` (or no file yet) draws a new one.
        let cases = match golden_path().exists() && mode != "redraw" {
            true => read().into_iter().map(|(c, _)| c).collect(),
            false => draw(),
        };
        let hashes: Vec<u64> = cases.par_iter().map(Case::compile).collect();
        let mut out = String::from(
            "# arch\tkind\tproblem\tconfig\tfnv1a-64 of the PTX / code object (tests/golden.rs)\n",
        );
        for (c, h) in cases.iter().zip(&hashes) {
            out += &format!(
                "{}\t{}\t{}\t{}\t{h:016x}\n",
                c.arch, c.kind, c.problem, c.config
            );
        }
        std::fs::create_dir_all(golden_path().parent().unwrap()).unwrap();
        std::fs::write(golden_path(), out).unwrap();
        eprintln!("blessed {} modules", cases.len());
        return;
    }
    let golden = read();
    assert!(golden.len() > 100, "the sample shrank: {}", golden.len());
    for kind in ["reference", "conv", "faulting"] {
        for a in ARCHS {
            assert!(
                golden.iter().any(|(c, _)| c.kind == kind && c.arch == a),
                "no {kind} module for {a} in the sample"
            );
        }
    }
    let changed: Vec<String> = golden
        .par_iter()
        .filter_map(|(c, want)| {
            let got = c.compile();
            (got != *want).then(|| {
                format!(
                    "{} {} {} {}: {want:016x} -> {got:016x}",
                    c.arch, c.kind, c.problem, c.config
                )
            })
        })
        .collect();
    assert!(
        changed.is_empty(),
        "{} of {} generated modules changed:\n{}",
        changed.len(),
        golden.len(),
        changed.join("\n")
    );
}
