//! The command line end to end: exit codes, the lowering of seed 003, dry runs for AMD, the
//! database commands on real files. No GPU needed.

use std::process::{Command, Output};

fn convtune(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_convtune"))
        .args(args)
        .env_remove("CONVTUNE_DB")
        .output()
        .expect("runs")
}

/// `convtune lookup` of a problem on sm_90 with a user database.
fn lookup(problem: &str, db: &str, extra: &[&str]) -> Output {
    let mut args = vec![
        "lookup",
        "--problem",
        problem,
        "--arch",
        "sm_90",
        "--db",
        db,
    ];
    args.extend_from_slice(extra);
    convtune(&args)
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

const SEED_003: &str = "convbfp16 -n 16 -c 2048 -H 1 -W 512 -k 2048 -y 1 -x 2 -p 0 -q 0 -u 1 -v 2 -l 1 -j 1 -g 1 -F 2 --layout NHWC";

#[test]
fn lower_json_of_seed_003_is_one_dense_gemm() {
    let o = convtune(&["lower", "--json", "--problem", SEED_003]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let gemms = v["gemms"].as_array().unwrap();
    assert_eq!(gemms.len(), 1);
    for (i, g) in gemms.iter().enumerate() {
        assert_eq!(g["kernel_id"], i);
        assert_eq!(
            (g["m"].as_u64(), g["n"].as_u64(), g["k"].as_u64()),
            (Some(2 * 2048), Some(16 * 257), Some(2048))
        );
    }
    assert_eq!(v["zero_init"], false);
}

#[test]
fn malformed_problems_exit_2_with_one_line() {
    for bad in [
        "conv -n 1 -c 1 -H 1 -W 1 -k 1 -y 1 -x 1 -F 3",
        "conv -n -4 -c 1 -H 1 -W 1 -k 1 -y 1 -x 1 -F 1",
        "conv -z 1",
        "conv -n",
        "garbage",
        "conv -n 1 -c 3 -H 4 -W 4 -k 4 -y 1 -x 1 -g 2 -F 1",
        "conv -n 1 -c 1 -H 2 -W 2 -k 1 -y 5 -x 1 -F 1",
    ] {
        let o = convtune(&["lower", "--problem", bad]);
        assert_eq!(o.status.code(), Some(2), "{bad}: {}", stderr(&o));
        let err = stderr(&o);
        assert_eq!(err.trim().lines().count(), 1, "{bad}: {err}");
        assert!(err.contains(bad), "the error names the problem: {err}");
    }
}

#[test]
fn unknown_flag_and_missing_gpu_are_errors() {
    let o = convtune(&["--bogus"]);
    assert_eq!(o.status.code(), Some(2));
    // No CUDA driver on CI machines: a clear message and exit code 2 (skip where a GPU exists).
    let o = convtune(&["--problem", "conv -n 1 -c 4 -H 5 -W 5 -k 4 -y 3 -x 3 -F 1"]);
    if stderr(&o).contains("no usable GPU") {
        assert_eq!(o.status.code(), Some(2));
    } else {
        eprintln!("skipping the no-GPU check: a GPU is present");
    }
}

#[test]
fn dry_run_for_gfx90a_compiles_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.toml");
    let o = convtune(&[
        "--problem",
        "conv -n 32 -c 32 -H 14 -W 14 -k 32 -y 3 -x 3 -p 1 -q 1 -F 2",
        "--arch",
        "gfx90a",
        "--dry-run",
        "--budget",
        "6",
        "--quiet",
        "--db",
        db.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("compiled 6 ok, 0 failed"), "{out}");
    assert!(
        out.contains("vgpr"),
        "resource use from the code objects: {out}"
    );
    assert!(!db.exists());
}

#[test]
fn space_reports_vector_rejections_for_seed_000() {
    let o = convtune(&[
        "space",
        "--problem",
        "conv -n 32 -c 32 -H 15 -W 15 -k 32 -y 1 -x 1 -p 1 -q 1 -F 2",
        "--arch",
        "sm_90",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("legal"), "{out}");
    assert!(out.contains("vector B"), "{out}");
    let o = convtune(&[
        "space",
        "--problem",
        "conv -n 32 -c 32 -H 15 -W 15 -k 32 -y 1 -x 1 -p 1 -q 1 -F 2",
        "--arch",
        "sm_90",
        "--explain",
        "v1:bm=64,bn=64,bk=32,wm=32,wn=32,st=2,va=1,vb=4,vc=1,lds=pad,sk=1,rs=1",
    ]);
    assert!(stdout(&o).contains("ILLEGAL"), "{}", stdout(&o));
}

#[test]
fn compile_writes_ptx_with_mma() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("k.ptx");
    let o = convtune(&[
        "compile",
        "--problem",
        "convbfp16 -n 4 -c 64 -H 8 -W 8 -k 64 -y 3 -x 3 -p 1 -q 1 -F 1 --layout NHWC",
        "--arch",
        "sm_90",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let ptx = std::fs::read_to_string(&out).unwrap();
    // The config comes from the shipped database (or the heuristic): a tensor-core kernel.
    assert!(ptx.contains("mma.sync") || ptx.contains("wgmma.mma_async"));
    for (config, instr, target) in [
        (
            "v1:bm=64,bn=64,bk=32,wm=32,wn=32,st=2,va=8,vb=8,vc=8,lds=swz,sk=1,rs=1",
            "mma.sync",
            ".target sm_90\n",
        ),
        (
            "v2:bm=64,bn=64,bk=64,wm=64,wn=64,st=2,va=8,vb=8,vc=8,lds=swz,sk=1,rs=1,mma=wg",
            "wgmma.mma_async",
            ".target sm_90a",
        ),
    ] {
        let o = convtune(&[
            "compile",
            "--problem",
            "convbfp16 -n 4 -c 64 -H 8 -W 8 -k 64 -y 3 -x 3 -p 1 -q 1 -F 1 --layout NHWC",
            "--arch",
            "sm_90",
            "--config",
            config,
            "-o",
            out.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{config}: {}", stderr(&o));
        let ptx = std::fs::read_to_string(&out).unwrap();
        assert!(ptx.contains(instr) && ptx.contains(target), "{config}");
    }
}

const ENTRY: &str = r#"[header]
format = 1
arch = "sm_90"

[[entry]]
problem = "conv -F 2 -n 32 -c 32 -H 14 -W 14 -k 32 -y 3 -x 3 -p 1 -q 1 -u 1 -v 1 -l 1 -j 1 -g 1 -I NGCHW -f GKCYX -O NGCHW"
config = "CONFIG"
time_us = TIME
checksum = "SUM"
fingerprint = { gpu = "NVIDIA H200", compute_units = 132, driver = "13.0" }
"#;

fn db_file(dir: &std::path::Path, name: &str, config: &str, time: f64) -> String {
    let path = dir.join(name);
    let key = "conv -F 2 -n 32 -c 32 -H 14 -W 14 -k 32 -y 3 -x 3 -p 1 -q 1 -u 1 -v 1 -l 1 -j 1 -g 1 -I NGCHW -f GKCYX -O NGCHW";
    let text = ENTRY
        .replace("SUM", &convtune::db::Entry::checksum_for(key, config, ""))
        .replace("CONFIG", config)
        .replace("TIME", &format!("{time:.1}"));
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_string()
}

const GOOD: &str = "v1:bm=32,bn=64,bk=32,wm=16,wn=32,st=2,va=1,vb=1,vc=1,lds=pad,sk=1,rs=1";
const OTHER: &str = "v1:bm=64,bn=64,bk=32,wm=32,wn=32,st=2,va=1,vb=1,vc=1,lds=pad,sk=1,rs=1";

#[test]
fn db_merge_check_diff_lookup() {
    let dir = tempfile::tempdir().unwrap();
    let a = db_file(dir.path(), "a.toml", GOOD, 20.0);
    let b = db_file(dir.path(), "b.toml", OTHER, 10.0);
    let c = dir.path().join("c.toml");
    let o = convtune(&["db", "merge", &a, &b, "-o", c.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("conflict"), "{}", stdout(&o));
    let merged = std::fs::read_to_string(&c).unwrap();
    assert!(
        merged.contains(OTHER) && !merged.contains(GOOD),
        "the faster wins: {merged}"
    );
    let o = convtune(&["db", "diff", &a, c.to_str().unwrap()]);
    assert!(o.status.success() && !stdout(&o).contains("no differences"));
    let o = convtune(&["db", "check", c.to_str().unwrap()]);
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    let o = lookup(
        "conv -n 32 -c 32 -H 14 -W 14 -k 32 -y 3 -x 3 -p 1 -q 1 -F 2",
        c.to_str().unwrap(),
        &[],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).starts_with(OTHER), "{}", stdout(&o));
    assert!(stdout(&o).contains("exact"), "{}", stdout(&o));
    // A problem one size off gets the nearest tuned problem's config, re-checked for legality.
    let o = lookup(
        "conv -n 16 -c 32 -H 14 -W 14 -k 32 -y 3 -x 3 -p 1 -q 1 -F 2",
        c.to_str().unwrap(),
        &[],
    );
    assert!(stdout(&o).contains("nearest"), "{}", stdout(&o));
}

#[test]
fn corrupt_or_illegal_database_is_reported_and_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.toml");
    std::fs::write(
        &bad,
        "[header]\nformat = 1\narch = \"sm_90\"\n[[entry]\nproblem = 3\n",
    )
    .unwrap();
    let before = std::fs::read(&bad).unwrap();
    let good = db_file(dir.path(), "good.toml", GOOD, 20.0);
    let o = convtune(&[
        "db",
        "merge",
        bad.to_str().unwrap(),
        &good,
        "-o",
        bad.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("bad.toml:4:"),
        "file and line: {}",
        stderr(&o)
    );
    assert_eq!(
        std::fs::read(&bad).unwrap(),
        before,
        "a corrupt file is never overwritten"
    );
    // An entry whose config is illegal for its problem (vector width 4 on a strided operand).
    let illegal = db_file(
        dir.path(),
        "illegal.toml",
        "v1:bm=32,bn=64,bk=32,wm=16,wn=32,st=2,va=1,vb=4,vc=1,lds=pad,sk=1,rs=1",
        20.0,
    );
    let o = convtune(&["db", "check", &illegal]);
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
}

#[test]
fn untuned_problem_falls_back_to_quick_list_then_heuristic() {
    let dir = tempfile::tempdir().unwrap();
    let none = dir.path().join("none.toml");
    let o = lookup(
        "convbfp16 -n 16 -c 64 -H 30 -W 30 -k 64 -y 3 -x 3 -p 1 -q 1 -F 1 --layout NHWC",
        none.to_str().unwrap(),
        &["--no-system-db"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("source: quick list"), "{}", stdout(&o));
    // With the shipped database, the nearest tuned problem of the same kind serves it. (At
    // n = 8 the GEMM's 57 blocks of 64 × 128 fill under half a wave, and the model prefers the
    // quick list's 128 × 64 with twice the blocks.)
    let o = lookup(
        "convbfp16 -n 16 -c 64 -H 30 -W 30 -k 64 -y 3 -x 3 -p 1 -q 1 -F 1 --layout NHWC",
        none.to_str().unwrap(),
        &[],
    );
    assert!(stdout(&o).contains("source: nearest"), "{}", stdout(&o));
    // No quick list ships for f32 backward weight: the cost model's pick, legal for the problem.
    let o = lookup(
        "conv -n 8 -c 16 -H 12 -W 12 -k 16 -y 3 -x 3 -p 1 -q 1 -F 4",
        none.to_str().unwrap(),
        &[],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("source: heuristic"), "{}", stdout(&o));
}

// ---- issue 17/18: consumers of the CLI (lookup = compile, manifest, --json, closed stdout) ----

/// `convtune` with extra environment variables.
fn convtune_env(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_convtune"));
    c.args(args).env_remove("CONVTUNE_DB");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("runs")
}

fn json_of(o: &Output) -> serde_json::Value {
    serde_json::from_str(&stdout(o))
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}{}", stdout(o), stderr(o)))
}

/// The f32 NCHW problem that `db_file` writes an entry for.
const DB_PROBLEM: &str = "conv -n 32 -c 32 -H 14 -W 14 -k 32 -y 3 -x 3 -p 1 -q 1 -F 2";
const BF16_NHWC: &str =
    "convbfp16 -n 4 -c 64 -H 8 -W 8 -k 64 -y 3 -x 3 -p 1 -q 1 -F 1 --layout NHWC";
const WGMMA: &str = "v2:bm=64,bn=64,bk=64,wm=64,wn=64,st=2,va=8,vb=8,vc=8,lds=swz,sk=1,rs=1,mma=wg";

#[test]
fn compile_ignored_the_user_database_that_lookup_used() {
    let dir = tempfile::tempdir().unwrap();
    let user = db_file(dir.path(), "user.toml", GOOD, 20.0);
    let out = dir.path().join("k.ptx");
    let manifest = dir.path().join("k.json");
    let (out, manifest) = (out.to_str().unwrap(), manifest.to_str().unwrap());
    // Through the environment, as a compiler's build would set it.
    let env = [("CONVTUNE_DB", user.as_str())];
    let o = convtune_env(
        &["lookup", "--problem", DB_PROBLEM, "--arch", "sm_90"],
        &env,
    );
    assert!(stdout(&o).starts_with(GOOD), "{}", stdout(&o));
    let o = convtune_env(
        &[
            "compile",
            "--problem",
            DB_PROBLEM,
            "--arch",
            "sm_90",
            "-o",
            out,
            "--manifest",
            manifest,
        ],
        &env,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(manifest).unwrap()).unwrap();
    assert_eq!(m["config"]["text"], GOOD);
    assert_eq!(m["config"]["source"]["kind"], "exact");
    // And through --db, which compile used to refuse.
    let o = convtune(&[
        "compile",
        "--problem",
        DB_PROBLEM,
        "--arch",
        "sm_90",
        "-o",
        out,
        "--db",
        &user,
        "--no-system-db",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).starts_with(GOOD), "{}", stdout(&o));
}

#[test]
fn space_flag_was_silently_ignored_by_lookup_and_compile() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("k.ptx");
    for cmd in ["lookup", "compile"] {
        let o = convtune(
            &[
                cmd,
                "--problem",
                DB_PROBLEM,
                "--arch",
                "sm_90",
                "--space",
                "/nonexistent/space.toml",
                "-o",
                out.to_str().unwrap(),
            ][..if cmd == "lookup" { 7 } else { 9 }],
        );
        assert_eq!(o.status.code(), Some(2), "{cmd}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("/nonexistent/space.toml"),
            "{cmd}: {}",
            stderr(&o)
        );
    }
    // A space without bm=32: the user database's bm=32 config is passed over, and the answer
    // comes from inside the space.
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/search-spaces/nvidia.toml"
    ))
    .unwrap()
    .replace("block_m = [16, 32, 64, 128, 256]", "block_m = [64, 128]");
    assert!(text.contains("block_m = [64, 128]"));
    let space = dir.path().join("space.toml");
    std::fs::write(&space, text).unwrap();
    let user = db_file(dir.path(), "user.toml", GOOD, 20.0);
    let o = lookup(
        DB_PROBLEM,
        &user,
        &[
            "--no-system-db",
            "--json",
            "--space",
            space.to_str().unwrap(),
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let v = json_of(&o);
    let cfg = v["config"].as_str().unwrap();
    assert_ne!(cfg, GOOD);
    assert!(cfg.contains("bm=64,") || cfg.contains("bm=128,"), "{cfg}");
    assert!(
        v["reason"]
            .as_str()
            .unwrap()
            .contains("outside the given search space"),
        "{v}"
    );
    // compile --config outside the space is refused, not silently compiled.
    let o = convtune(&[
        "compile",
        "--problem",
        DB_PROBLEM,
        "--arch",
        "sm_90",
        "--config",
        GOOD,
        "--space",
        space.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("outside the search space"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn compile_manifest_describes_the_launch() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("k.ptx");
    let manifest = dir.path().join("k.json");
    let o = convtune(&[
        "compile",
        "--problem",
        BF16_NHWC,
        "--arch",
        "sm_90",
        "--config",
        WGMMA,
        "-o",
        out.to_str().unwrap(),
        "--manifest",
        manifest.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&manifest).unwrap()).unwrap();
    assert_eq!(m["manifest_version"], 1);
    assert_eq!(m["module"]["kind"], "ptx");
    assert_eq!(m["module"]["path"], out.to_str().unwrap());
    assert_eq!(m["module"]["target"], "sm_90a");
    assert_eq!(
        m["module"]["bytes"].as_u64().unwrap(),
        std::fs::metadata(&out).unwrap().len()
    );
    assert_eq!(m["config"]["text"], WGMMA);
    assert_eq!(m["config"]["source"]["kind"], "given");
    let names: Vec<&str> = m["arguments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["x", "w", "y", "workspace"]);
    let x = &m["arguments"][0]["tensor"];
    assert_eq!(x["layout"], "NHWGC");
    assert_eq!(x["shape"], serde_json::json!([4, 1, 64, 8, 8]));
    assert_eq!(x["strides"], serde_json::json!([4096, 64, 1, 512, 64]));
    assert_eq!(m["arguments"][2]["access"], "write");
    assert_eq!(m["workspace"]["must_be_zeroed"], false);
    let ptx = std::fs::read_to_string(&out).unwrap();
    for k in m["kernels"].as_array().unwrap() {
        let name = k["name"].as_str().unwrap();
        assert!(
            ptx.contains(&format!(".entry {name}")),
            "{name} is in the module"
        );
        let shared = k["dynamic_shared_bytes"].as_u64().unwrap();
        assert_eq!(k["needs_shared_opt_in"], shared > 48 * 1024, "{k}");
    }
    // Split-K bf16 backward weight: zero the f32 workspace, GEMM, finish — in that order.
    let o = convtune(&[
        "compile",
        "--problem",
        "convbfp16 -n 4 -c 64 -H 8 -W 8 -k 64 -y 3 -x 3 -p 1 -q 1 -F 4 --layout NHWC",
        "--arch",
        "sm_90",
        "--config",
        "v1:bm=64,bn=64,bk=32,wm=32,wn=32,st=4,va=8,vb=8,vc=8,lds=swz,sk=4,rs=1",
        "-o",
        out.to_str().unwrap(),
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let m = &json_of(&o)["manifest"];
    assert_eq!(m["workspace"]["bytes"], 64 * 64 * 9 * 4);
    let kernels: Vec<&str> = m["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        kernels,
        ["convtune_zero", "convtune_gemm0", "convtune_splitk_finish"]
    );
    assert_eq!(m["arguments"][1]["meaning"], "dw");
}

#[test]
fn compile_summary_did_not_count_wgmma() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("k.ptx");
    let o = convtune(&[
        "compile",
        "--problem",
        BF16_NHWC,
        "--arch",
        "sm_90",
        "--config",
        WGMMA,
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let want = std::fs::read_to_string(&out)
        .unwrap()
        .matches("wgmma.mma_async")
        .count();
    assert!(want > 0);
    assert!(
        stdout(&o).contains(&format!("wgmma {want},")),
        "{}",
        stdout(&o)
    );
    let o = convtune(&[
        "compile",
        "--problem",
        BF16_NHWC,
        "--arch",
        "sm_90",
        "--config",
        WGMMA,
        "-o",
        out.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(json_of(&o)["ptx"]["wgmma"], want);
}

#[test]
fn json_on_lookup_space_and_db_commands() {
    let dir = tempfile::tempdir().unwrap();
    let a = db_file(dir.path(), "a.toml", GOOD, 20.0);
    let b = db_file(dir.path(), "b.toml", OTHER, 10.0);
    let v = json_of(&lookup(DB_PROBLEM, &a, &["--json"]));
    assert_eq!(v["config"], GOOD);
    assert_eq!(v["source"]["kind"], "exact");
    assert_eq!(v["user_db_read"], true);
    let o = convtune(&[
        "space",
        "--problem",
        DB_PROBLEM,
        "--arch",
        "sm_90",
        "--json",
        "--list",
    ]);
    let v = json_of(&o);
    let legal = v["legal"].as_u64().unwrap();
    assert!(legal > 0 && v["raw"].as_u64().unwrap() > legal, "{v}");
    assert_eq!(v["configs"].as_array().unwrap().len() as u64, legal);
    assert!(v["rejected"]
        .as_array()
        .unwrap()
        .iter()
        .all(|r| r["count"].as_u64() > Some(0)));
    let o = convtune(&[
        "space",
        "--problem",
        DB_PROBLEM,
        "--arch",
        "sm_90",
        "--json",
        "--explain",
        "v1:bm=64,bn=64,bk=32,wm=32,wn=32,st=2,va=1,vb=4,vc=1,lds=pad,sk=1,rs=1",
    ]);
    let v = json_of(&o);
    assert_eq!(v["legal"], false);
    assert!(v["rejected_by"].is_string(), "{v}");
    let v = json_of(&convtune(&["db", "check", &a, "--json"]));
    assert_eq!(
        (v["valid"].as_bool(), v["entries"].as_u64()),
        (Some(true), Some(1))
    );
    let v = json_of(&convtune(&["db", "diff", &a, &b, "--json"]));
    let changes = v["changes"].as_array().unwrap();
    assert_eq!(changes.len(), 1, "{v}");
    assert_eq!(changes[0]["change"], "config");
    assert_eq!(changes[0]["old"]["config"], GOOD);
    assert_eq!(changes[0]["new"]["config"], OTHER);
    // An illegal entry: JSON on stdout and still exit code 2.
    let illegal = db_file(
        dir.path(),
        "illegal.toml",
        "v1:bm=32,bn=64,bk=32,wm=16,wn=32,st=2,va=1,vb=4,vc=1,lds=pad,sk=1,rs=1",
        20.0,
    );
    let o = convtune(&["db", "check", &illegal, "--json"]);
    assert_eq!(o.status.code(), Some(2));
    let v = json_of(&o);
    assert_eq!(v["valid"], false);
    assert_eq!(v["issues"].as_array().unwrap().len(), 1, "{v}");
    // db stale needs a GPU; here the flag must at least be accepted.
    let o = convtune(&["db", "stale", &a, "--json"]);
    if stderr(&o).contains("no usable GPU") {
        assert!(!stderr(&o).contains("unexpected argument"));
    } else {
        assert!(json_of(&o)["stale"].is_array());
    }
}

/// Runs `args` with stdout a pipe whose reading end is closed at once: every write fails with
/// EPIPE.
fn with_closed_stdout(args: &[&str]) -> Output {
    use std::process::Stdio;
    let mut child = Command::new(env!("CARGO_BIN_EXE_convtune"))
        .args(args)
        .env_remove("CONVTUNE_DB")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("runs");
    drop(child.stdout.take());
    child.wait_with_output().expect("waits")
}

#[test]
fn closed_stdout_panicked_with_exit_101() {
    let dir = tempfile::tempdir().unwrap();
    let a = db_file(dir.path(), "a.toml", GOOD, 20.0);
    let b = db_file(dir.path(), "b.toml", OTHER, 10.0);
    for args in [
        &[
            "space",
            "--problem",
            DB_PROBLEM,
            "--arch",
            "sm_90",
            "--list",
        ][..],
        &["lower", "--problem", SEED_003],
        &["lookup", "--problem", DB_PROBLEM, "--arch", "sm_90"],
        &["db", "export", &a],
        &["db", "diff", &a, &b],
    ] {
        let o = with_closed_stdout(args);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
        assert!(!stderr(&o).contains("panicked"), "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).is_empty() || args[0] == "space",
            "{args:?}: {}",
            stderr(&o)
        );
    }
}

#[test]
fn full_stdout_panicked_instead_of_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let a = db_file(dir.path(), "a.toml", GOOD, 20.0);
    for args in [
        &["lookup", "--problem", DB_PROBLEM, "--arch", "sm_90"][..],
        &["lower", "--problem", SEED_003],
        &["db", "export", &a],
    ] {
        let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") else {
            eprintln!("skipping: no /dev/full");
            return;
        };
        let o = Command::new(env!("CARGO_BIN_EXE_convtune"))
            .args(args)
            .env_remove("CONVTUNE_DB")
            .stdout(full)
            .output()
            .expect("runs");
        assert_eq!(o.status.code(), Some(1), "{args:?}: {}", stderr(&o));
        let err = stderr(&o);
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert!(err.contains("writing to stdout"), "{args:?}: {err}");
    }
}

#[test]
fn space_list_mixed_header_lines_into_the_configs() {
    let o = convtune(&[
        "space",
        "--problem",
        DB_PROBLEM,
        "--arch",
        "sm_90",
        "--list",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.lines().count() > 1);
    for line in out.lines() {
        line.parse::<convtune::config::PerfConfig>()
            .unwrap_or_else(|e| panic!("not a config on stdout: '{line}': {e}"));
    }
    assert!(stderr(&o).contains("legal"), "the counts go to stderr");
}

#[test]
fn no_gpu_message_said_nothing_of_dry_run() {
    let o = convtune(&["--problem", "conv -n 1 -c 4 -H 5 -W 5 -k 4 -y 3 -x 3 -F 1"]);
    let err = stderr(&o);
    if !err.contains("no usable GPU") {
        eprintln!("skipping the no-GPU check: a GPU is present");
        return;
    }
    assert_eq!(o.status.code(), Some(2));
    assert!(err.contains("libcuda.so.1"), "{err}");
    assert!(err.contains("--dry-run --arch"), "{err}");
    assert!(err.contains("gfx90a") && err.contains("sm_90"), "{err}");
}

#[test]
fn db_export_wrote_only_to_stdout() {
    let dir = tempfile::tempdir().unwrap();
    let a = db_file(dir.path(), "a.toml", GOOD, 20.0);
    for (format, check) in [("json", "\"entries\""), ("c", "#")] {
        let path = dir.path().join(format!("out.{format}"));
        let o = convtune(&[
            "db",
            "export",
            &a,
            "--format",
            format,
            "-o",
            path.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(stdout(&o).is_empty(), "{}", stdout(&o));
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains(check) && text.contains(GOOD), "{text}");
        let piped = convtune(&["db", "export", &a, "--format", format]);
        assert_eq!(stdout(&piped), text, "the same bytes as on stdout");
    }
}

#[test]
fn dry_run_summary_had_no_json() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.toml");
    let o = convtune(&[
        "--problem",
        "conv -n 32 -c 32 -H 14 -W 14 -k 32 -y 3 -x 3 -p 1 -q 1 -F 2",
        "--arch",
        "gfx90a",
        "--dry-run",
        "--budget",
        "3",
        "--quiet",
        "--json",
        "--db",
        db.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v = json_of(&o);
    assert_eq!(v["mode"], "dry_run", "{v}");
    assert_eq!(v["setup"]["arch"], "gfx90a");
    let p = &v["problems"][0];
    assert_eq!(
        (p["compiled"].as_u64(), p["failed"].as_u64()),
        (Some(3), Some(0))
    );
    assert!(p["legal"].as_u64() >= Some(3) && p["raw"].as_u64() >= p["legal"].as_u64());
    assert!(
        stderr(&o).contains("compiled 3 ok"),
        "the per-problem lines go to stderr: {}",
        stderr(&o)
    );
    assert!(!db.exists());
    // And with stdout closed under it: quiet, exit 0.
    let o = with_closed_stdout(&[
        "--problem",
        "conv -n 32 -c 32 -H 14 -W 14 -k 32 -y 3 -x 3 -p 1 -q 1 -F 2",
        "--arch",
        "gfx90a",
        "--dry-run",
        "--budget",
        "1",
        "--quiet",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(!stderr(&o).contains("panicked"), "{}", stderr(&o));
}
