//! The command line as the CLI test binaries (`tests/cli.rs`, `tests/cli_consumers.rs`) run it:
//! the binary with a clean environment, its output as text or JSON, one-entry databases.
#![allow(dead_code)]

use std::process::{Command, Output};

pub fn convtune(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_convtune"))
        .args(args)
        .env_remove("CONVTUNE_DB")
        .output()
        .expect("runs")
}

/// `convtune lookup` of a problem on sm_90 with a user database.
pub fn lookup(problem: &str, db: &str, extra: &[&str]) -> Output {
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

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub const SEED_003: &str = "convbfp16 -n 16 -c 2048 -H 1 -W 512 -k 2048 -y 1 -x 2 -p 0 -q 0 -u 1 -v 2 -l 1 -j 1 -g 1 -F 2 --layout NHWC";

pub const ENTRY: &str = r#"[header]
format = 1
arch = "sm_90"

[[entry]]
problem = "conv -F 2 -n 32 -c 32 -H 14 -W 14 -k 32 -y 3 -x 3 -p 1 -q 1 -u 1 -v 1 -l 1 -j 1 -g 1 -I NGCHW -f GKCYX -O NGCHW"
config = "CONFIG"
time_us = TIME
checksum = "SUM"
fingerprint = { gpu = "NVIDIA H200", compute_units = 132, driver = "13.0" }
"#;

pub fn db_file(dir: &std::path::Path, name: &str, config: &str, time: f64) -> String {
    let path = dir.join(name);
    let key = "conv -F 2 -n 32 -c 32 -H 14 -W 14 -k 32 -y 3 -x 3 -p 1 -q 1 -u 1 -v 1 -l 1 -j 1 -g 1 -I NGCHW -f GKCYX -O NGCHW";
    let text = ENTRY
        .replace("SUM", &convtune::db::Entry::checksum_for(key, config, ""))
        .replace("CONFIG", config)
        .replace("TIME", &format!("{time:.1}"));
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_string()
}

pub const GOOD: &str = "v1:bm=32,bn=64,bk=32,wm=16,wn=32,st=2,va=1,vb=1,vc=1,lds=pad,sk=1,rs=1";
pub const OTHER: &str = "v1:bm=64,bn=64,bk=32,wm=32,wn=32,st=2,va=1,vb=1,vc=1,lds=pad,sk=1,rs=1";

/// `convtune` with extra environment variables.
pub fn convtune_env(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_convtune"));
    c.args(args).env_remove("CONVTUNE_DB");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("runs")
}

pub fn json_of(o: &Output) -> serde_json::Value {
    serde_json::from_str(&stdout(o))
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}{}", stdout(o), stderr(o)))
}

/// The f32 NCHW problem that `db_file` writes an entry for.
pub const DB_PROBLEM: &str = "conv -n 32 -c 32 -H 14 -W 14 -k 32 -y 3 -x 3 -p 1 -q 1 -F 2";
pub const BF16_NHWC: &str =
    "convbfp16 -n 4 -c 64 -H 8 -W 8 -k 64 -y 3 -x 3 -p 1 -q 1 -F 1 --layout NHWC";
pub const WGMMA: &str =
    "v2:bm=64,bn=64,bk=64,wm=64,wn=64,st=2,va=8,vb=8,vc=8,lds=swz,sk=1,rs=1,mma=wg";
