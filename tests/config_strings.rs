//! Every perf-config string that ships (the tuned databases, the quick lists, the recordings)
//! parses, and prints back as written: the string form derived from the field declaration is
//! the one these files were written in.

use convtune::config::PerfConfig;
use std::path::{Path, PathBuf};

/// The `.toml` and `.json` files under `dir`, recursively.
fn data_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            data_files(&path, out);
        } else if matches!(
            path.extension().and_then(|e| e.to_str()),
            Some("toml" | "json")
        ) {
            out.push(path);
        }
    }
}

/// Every quoted string that starts with a version prefix `vN:` followed by `key=value` fields
/// (a database checksum, `"v2:d28b408e4b4a168d"`, has the prefix but no fields).
fn config_strings(text: &str) -> Vec<&str> {
    text.split('"')
        .skip(1)
        .step_by(2)
        .filter(|s| {
            s.strip_prefix('v')
                .and_then(|r| r.split_once(':'))
                .is_some_and(|(n, body)| {
                    !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) && body.contains('=')
                })
        })
        .collect()
}

#[test]
fn shipped_config_strings_round_trip() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in ["tuned-db", "recordings"] {
        data_files(&root.join(dir), &mut files);
    }
    assert!(files
        .iter()
        .any(|f| f.ends_with("tuned-db/quick/sm_90.toml")));
    let (mut total, mut v2) = (0, 0);
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        for s in config_strings(&text) {
            let cfg: PerfConfig = s
                .parse()
                .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            // `v2:` with `mma=sync` is the one string that prints otherwise: as `v1:`.
            let expected = match s.strip_suffix(",mma=sync") {
                Some(body) if s.starts_with("v2:") => format!("v1:{}", &body[3..]),
                _ => s.to_string(),
            };
            assert_eq!(cfg.to_string(), expected, "{}", file.display());
            assert_eq!(expected.parse::<PerfConfig>().unwrap(), cfg);
            total += 1;
            v2 += usize::from(s.starts_with("v2:"));
        }
    }
    // The shipped files hold both versions (the counts only grow as files are added).
    assert!(total >= 2000 && v2 > 0, "{total} strings, {v2} of them v2");
}

#[test]
fn config_string_scan_finds_only_versioned_strings() {
    let text =
        r#"{"config":"v1:bm=1","x":"v:1","y":"vb=2","z":"v12:a=1","checksum":"v2:d28b408e"}"#;
    assert_eq!(config_strings(text), ["v1:bm=1", "v12:a=1"]);
}
