//! The command line as its consumers use it (issues 17/18): `lookup` and `compile` agreeing on
//! a user database, the launch manifest, `--json` on every command, a closed or full stdout.
//! No GPU needed.

#[path = "common/cli.rs"]
mod cli;
use cli::*;
use std::process::{Command, Output};

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

#[test]
fn lookup_deterministic_passes_over_an_entry_with_atomics() {
    // The shipped entry of this grouped bwd-weight problem splits K 16 ways by atomics.
    let p = "convbfp16 -n 32 -c 160 -H 56 -W 56 -k 160 -y 3 -x 3 -p 1 -q 1 -g 5 -F 4 \
             --layout NHWC";
    let dir = tempfile::tempdir().unwrap();
    let none = dir.path().join("none.toml");
    let none = none.to_str().unwrap();
    let plain = json_of(&lookup(p, none, &["--json"]));
    assert_eq!(plain["source"]["kind"], "exact", "{plain}");
    assert_eq!(plain["deterministic"], false);
    let det = json_of(&lookup(
        p,
        none,
        &["--json", "--deterministic", "--candidates", "3"],
    ));
    assert_eq!(det["deterministic"], true);
    assert_ne!(det["source"]["kind"], "exact", "{det}");
    assert!(det["reason"].as_str().unwrap().contains("atomics"), "{det}");
    for c in det["candidates"].as_array().unwrap() {
        let c = c["config"].as_str().unwrap();
        assert!(c.contains("sk=1,") || !c.contains("red=atomic"), "{c}");
    }
}

/// `lookup --measured`: the second round from a first use's times (new configs, none of the
/// measured, the count `--next` asks for); a file that does not parse is bad input naming the
/// line.
#[test]
fn lookup_measured_proposes_a_second_round() {
    let p = "conv -n 3 -c 24 -H 17 -W 9 -k 40 -y 3 -x 3 -p 1 -q 1 -F 1";
    let dir = tempfile::tempdir().unwrap();
    let none = dir.path().join("none.toml");
    let none = none.to_str().unwrap();
    let first = json_of(&lookup(p, none, &["--json", "--candidates", "4"]));
    let first: Vec<String> = first["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["config"].as_str().unwrap().to_string())
        .collect();
    let times = dir.path().join("times.txt");
    let mut text = String::from("# config µs\n");
    for (i, c) in first.iter().enumerate() {
        let t = if i == 1 {
            "failed".to_string()
        } else {
            format!("{}", 10 + i)
        };
        text.push_str(&format!("{c} {t}\n"));
    }
    std::fs::write(&times, text).unwrap();
    let times = times.to_str().unwrap();
    let next = json_of(&lookup(
        p,
        none,
        &["--json", "--measured", times, "--next", "5"],
    ));
    let next: Vec<&str> = next["next"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    assert_eq!(next.len(), 5, "{next:?}");
    assert!(
        next.iter().all(|c| !first.iter().any(|f| f == c)),
        "{next:?}"
    );
    let plain = lookup(p, none, &["--measured", times, "--next", "5"]);
    assert_eq!(stdout(&plain).lines().collect::<Vec<_>>(), next);
    let failed = dir.path().join("failed.txt");
    std::fs::write(&failed, format!("{} failed\n", first[0])).unwrap();
    let o = lookup(p, none, &["--measured", failed.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).is_empty() && stderr(&o).contains("no winner"),
        "{}",
        stderr(&o)
    );
    let bad = dir.path().join("bad.txt");
    std::fs::write(&bad, format!("{} 10\n{} fast\n", first[0], first[1])).unwrap();
    let o = lookup(p, none, &["--measured", bad.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("bad.txt:2"), "{}", stderr(&o));
}

/// `--gpu`/`--compute-units` (`lookup` and `compile`): the entry tuned on that GPU is exact; on
/// another GPU of the arch the problem's winner comes as a distance-0 neighbour naming where it
/// was tuned; the two flags go together.
#[test]
fn lookup_for_a_named_gpu() {
    let dir = tempfile::tempdir().unwrap();
    let user = db_file(dir.path(), "user.toml", GOOD, 20.0);
    let ask = |gpu: &str, units: &str| lookup_in(&user, &["--gpu", gpu, "--compute-units", units]);
    let v = ask("NVIDIA H200", "132");
    assert_eq!(v["source"]["kind"], "exact", "{v}");
    let v = ask("NVIDIA H100 80GB HBM3", "132");
    assert_eq!(v["config"], GOOD, "{v}");
    assert_eq!(v["source"]["kind"], "nearest", "{v}");
    assert_eq!(v["source"]["distance"], 0.0, "{v}");
    assert!(v["reason"].as_str().unwrap().contains("NVIDIA H200"), "{v}");
    let o = convtune(&[
        "lookup",
        "--problem",
        DB_PROBLEM,
        "--arch",
        "sm_90",
        "--gpu",
        "NVIDIA H200",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--compute-units"), "{}", stderr(&o));
}

/// A database tuned on two GPUs: `db check` names both and the home device (what a lookup that
/// names no GPU serves), and each GPU's lookup gets its own entry.
#[test]
fn a_database_of_two_gpus() {
    use convtune::db::{Entry, Fingerprint, TunedDb};
    let dir = tempfile::tempdir().unwrap();
    let key: convtune::problem::ConvProblem = DB_PROBLEM.parse().unwrap();
    let mut d = TunedDb::new("sm_90");
    let gpu = |name: &str| Fingerprint {
        gpu: name.into(),
        compute_units: 132,
        driver: "13.0".into(),
        clock_mhz: None,
    };
    let entry = |problem: &str, config: &str, on: &str| {
        Entry {
            problem: problem.into(),
            config: config.into(),
            time_us: 20.0,
            tflops: 1.0,
            candidates_tried: 10,
            fingerprint: gpu(on),
            convtune_version: "0.1.0".into(),
            date: "2026-12-05".into(),
            checksum: String::new(),
        }
        .sealed()
    };
    d.insert(entry(&key.key(), GOOD, "NVIDIA H200")).unwrap();
    d.insert(entry(&key.key(), OTHER, "NVIDIA H100 80GB HBM3"))
        .unwrap();
    let other_problem: convtune::problem::ConvProblem =
        "conv -n 16 -c 32 -H 14 -W 14 -k 32 -y 3 -x 3 -p 1 -q 1 -F 2"
            .parse()
            .unwrap();
    d.insert(entry(&other_problem.key(), GOOD, "NVIDIA H200"))
        .unwrap();
    let path = dir.path().join("two.toml");
    std::fs::write(&path, d.to_toml_string()).unwrap();
    let path = path.to_str().unwrap();

    let o = convtune(&["db", "check", path]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(
        text.contains("tuned on NVIDIA H200 (132 CUs): 2 entries (home device)"),
        "{text}"
    );
    assert!(
        text.contains("tuned on NVIDIA H100 80GB HBM3 (132 CUs): 1 entries"),
        "{text}"
    );
    let v = json_of(&convtune(&["db", "check", path, "--json"]));
    assert_eq!(v["devices"][0]["gpu"], "NVIDIA H200", "{v}");
    assert_eq!(v["devices"][0]["home"], true, "{v}");
    assert_eq!(v["devices"][1]["entries"], 1, "{v}");

    assert_eq!(lookup_in(path, &[])["config"], GOOD);
    let h100 = lookup_in(
        path,
        &["--gpu", "NVIDIA H100 80GB HBM3", "--compute-units", "132"],
    );
    assert_eq!(
        (h100["config"].as_str(), h100["source"]["kind"].as_str()),
        (Some(OTHER), Some("exact"))
    );
}

/// `convtune lookup --json` of [`DB_PROBLEM`] in the database `db` alone, with `extra` flags.
fn lookup_in(db: &str, extra: &[&str]) -> serde_json::Value {
    let mut args = vec![
        "lookup",
        "--problem",
        DB_PROBLEM,
        "--arch",
        "sm_90",
        "--db",
        db,
        "--no-system-db",
        "--json",
    ];
    args.extend_from_slice(extra);
    json_of(&convtune(&args))
}
