//! Tests of the database as a whole: files, locking, lookups and operations.

use super::*;
use crate::problem::{ConvProblem, ConvSizes, DType, Direction, Layout};

fn problem(n: u32, c: u32, k: u32, hw: u32, yx: u32) -> ConvProblem {
    ConvProblem::new(
        ConvSizes {
            n,
            c,
            k,
            h: hw,
            w: hw,
            y: yx,
            x: yx,
            ..Default::default()
        },
        Direction::Fwd,
        DType::BF16,
        Layout::NHWGC,
        Layout::GKYXC,
        Layout::NHWGC,
    )
    .unwrap()
}

fn h200() -> Fingerprint {
    Fingerprint {
        gpu: "NVIDIA H200".into(),
        compute_units: 132,
        driver: "580.65".into(),
        clock_mhz: Some(1980),
    }
}

fn entry(p: &ConvProblem, config: &str, time_us: f64) -> Entry {
    Entry {
        problem: p.key(),
        config: config.into(),
        time_us,
        tflops: p.flops() / time_us / 1e6,
        candidates_tried: 100,
        fingerprint: h200(),
        convtune_version: "0.1.0".into(),
        date: "2026-11-30".into(),
        checksum: String::new(),
    }
    .sealed()
}

fn legal(_: &ConvProblem, _: &str, _: &str) -> Result<(), String> {
    Ok(())
}

#[test]
fn round_trip_is_exact_and_deterministic() {
    let mut db = TunedDb::new("sm_90");
    let (p1, p2) = (problem(16, 64, 64, 56, 3), problem(1, 3, 8, 7, 1));
    assert_eq!(
        db.insert(entry(&p1, "v1:a", 10.0)).unwrap(),
        Inserted::Added
    );
    let mut e = entry(&p2, "v1:b \"quoted\"", 1.0 / 3.0);
    e.fingerprint.clock_mhz = None;
    db.insert(e.clone()).unwrap();
    // Same problem, other GPU: a second entry, not a replacement.
    let mut other = entry(&p1, "v1:c", 7.0);
    other.fingerprint.gpu = "NVIDIA H100".into();
    db.insert(other).unwrap();
    assert_eq!(db.len(), 3);

    let text = db.to_toml_string();
    let back = TunedDb::parse(&text, "test").unwrap();
    assert_eq!(back.arch(), "sm_90");
    assert_eq!(back.to_toml_string(), text);
    let sorted: Vec<Entry> = db.sorted().into_iter().cloned().collect();
    assert_eq!(back.entries(), sorted.as_slice());
    assert!(back.get(&p2).any(|x| *x == e && x.time_us == 1.0 / 3.0));

    // Insertion order does not change the bytes.
    let mut rev = TunedDb::new("sm_90");
    for e in db.entries().iter().rev() {
        rev.insert(e.clone()).unwrap();
    }
    assert_eq!(rev.to_toml_string(), text);

    // Through a file, with `save`.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sub/sm_90.toml");
    db.save(&path).unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
    assert_eq!(TunedDb::load(&path).unwrap().len(), 3);
    assert!(lock_path(&path).exists());
}

#[test]
fn insert_keeps_the_faster_measurement() {
    let p = problem(2, 8, 8, 8, 3);
    let mut db = TunedDb::new("sm_90");
    db.insert(entry(&p, "v1:slow", 5.0)).unwrap();
    let r = db.insert(entry(&p, "v1:fast", 4.0)).unwrap();
    assert!(matches!(r, Inserted::Replaced { previous } if previous.config == "v1:slow"));
    let r = db.insert(entry(&p, "v1:slower", 4.5)).unwrap();
    assert_eq!(
        r,
        Inserted::Kept {
            existing_time_us: 4.0
        }
    );
    assert_eq!(db.len(), 1);
    assert_eq!(db.get(&p).next().unwrap().config, "v1:fast");
    assert!(db.insert(entry(&p, "v1:x", -1.0)).is_err());
}

#[test]
fn old_files_without_optional_fields_still_load() {
    let p = problem(1, 4, 4, 4, 1);
    let text = format!(
        "[header]\nformat = 1\narch = \"gfx90a\"\n\n[[entry]]\nproblem = \"{}\"\nconfig = \"v1:x\"\ntime_us = 3\nsome_future_field = [1, 2]\n",
        p.key()
    );
    let db = TunedDb::parse(&text, "old.toml").unwrap();
    let e = db.get(&p).next().unwrap();
    assert_eq!((e.time_us, e.tflops, e.candidates_tried), (3.0, 0.0, 0));
    assert_eq!(e.fingerprint, Fingerprint::default());
}

#[test]
fn corrupt_file_reports_its_line_and_is_never_overwritten() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sm_90.toml");
    let mut db = TunedDb::new("sm_90");
    db.insert(entry(&problem(1, 8, 8, 8, 1), "v1:a", 2.0))
        .unwrap();
    db.insert(entry(&problem(2, 8, 8, 8, 1), "v1:b", 2.0))
        .unwrap();
    let good = db.to_toml_string();
    // Break the second entry's time (a hand edit gone wrong).
    let lines: Vec<&str> = good.lines().collect();
    let bad_line = lines
        .iter()
        .rposition(|l| l.starts_with("time_us"))
        .unwrap();
    let broken: String = lines
        .iter()
        .enumerate()
        .map(|(i, l)| {
            if i == bad_line {
                "time_us = 2.0.0\n".to_string()
            } else {
                format!("{l}\n")
            }
        })
        .collect();
    std::fs::write(&path, &broken).unwrap();

    match TunedDb::load(&path) {
        Err(DbError::Syntax { origin, line, .. }) => {
            assert_eq!(line, bad_line + 1);
            assert!(origin.ends_with("sm_90.toml"));
        }
        other => panic!("expected a syntax error, got {other:?}"),
    }
    let err = TunedDb::update_file(&path, "sm_90", |db| {
        db.insert(entry(&problem(3, 8, 8, 8, 1), "v1:c", 1.0))
    })
    .unwrap_err();
    assert!(matches!(err, DbError::RefuseOverwrite { .. }), "{err}");
    assert!(
        err.to_string().contains(&format!(":{}:", bad_line + 1)),
        "{err}"
    );
    assert!(matches!(
        db.save(&path),
        Err(DbError::RefuseOverwrite { .. })
    ));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), broken);

    // A schema error (wrong type) also carries its line.
    let wrong = good.replacen("candidates_tried = 100", "candidates_tried = \"many\"", 1);
    let line = wrong.lines().position(|l| l.contains("many")).unwrap() + 1;
    match TunedDb::parse(&wrong, "w") {
        Err(DbError::Syntax { line: l, .. }) => assert_eq!(l, line),
        other => panic!("expected a syntax error, got {other:?}"),
    }
    // A rule broken after parsing names the entry and its line.
    let neg = good.replacen("time_us = 2.0", "time_us = -2.0", 1);
    let err = TunedDb::parse(&neg, "n").unwrap_err().to_string();
    let line = neg.lines().position(|l| l == "[[entry]]").unwrap() + 1;
    assert!(err.contains(&format!("entry #1 (line {line})")), "{err}");
}

#[test]
fn other_arch_and_newer_format_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.toml");
    TunedDb::new("gfx90a").save(&path).unwrap();
    let before = std::fs::read_to_string(&path).unwrap();
    assert!(matches!(
        TunedDb::update_file(&path, "sm_90", |_| ()),
        Err(DbError::ArchMismatch { .. })
    ));
    assert!(TunedDb::new("sm_90").save(&path).is_err());
    assert_eq!(std::fs::read_to_string(&path).unwrap(), before);
    let newer = before.replace("format = 1", "format = 2");
    assert!(matches!(
        TunedDb::parse(&newer, "n"),
        Err(DbError::Invalid { .. })
    ));
}

#[test]
fn concurrent_updates_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sm_90.toml");
    let per_thread = 25;
    std::thread::scope(|s| {
        for t in 0..3u32 {
            let path = &path;
            s.spawn(move || {
                for i in 0..per_thread {
                    let p = problem(1 + t, 8 * (i + 1), 8, 8, 1);
                    TunedDb::update_file(path, "sm_90", |db| {
                        db.insert(entry(&p, &format!("v1:t{t}i{i}"), 1.0 + i as f64))
                    })
                    .unwrap()
                    .unwrap();
                }
            });
        }
    });
    let db = TunedDb::load(&path).unwrap();
    assert_eq!(db.len(), 3 * per_thread as usize);
    for t in 0..3u32 {
        for i in 0..per_thread {
            let p = problem(1 + t, 8 * (i + 1), 8, 8, 1);
            assert_eq!(db.get(&p).next().unwrap().config, format!("v1:t{t}i{i}"));
        }
    }
    // No temporary files left behind.
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
}

#[test]
fn merge_keeps_faster_and_reports_conflicts() {
    let (p1, p2, p3) = (
        problem(1, 8, 8, 8, 1),
        problem(2, 8, 8, 8, 1),
        problem(4, 8, 8, 8, 1),
    );
    let mut a = TunedDb::new("sm_90");
    a.insert(entry(&p1, "v1:a1", 5.0)).unwrap();
    a.insert(entry(&p2, "v1:same", 5.0)).unwrap();
    let mut b = TunedDb::new("sm_90");
    b.insert(entry(&p1, "v1:b1", 4.0)).unwrap();
    b.insert(entry(&p2, "v1:same", 6.0)).unwrap();
    b.insert(entry(&p3, "v1:b3", 1.0)).unwrap();
    let (m, conflicts) = merge(&a, &b).unwrap();
    assert_eq!(m.len(), 3);
    assert_eq!(m.get(&p1).next().unwrap().config, "v1:b1");
    assert_eq!(m.get(&p2).next().unwrap().time_us, 5.0);
    assert_eq!(conflicts.len(), 1);
    assert_eq!(conflicts[0].kept.config, "v1:b1");
    assert_eq!(conflicts[0].dropped.config, "v1:a1");
    // Merging is symmetric in content.
    let (m2, _) = merge(&b, &a).unwrap();
    assert_eq!(m2.to_toml_string(), m.to_toml_string());
    assert!(merge(&a, &TunedDb::new("gfx90a")).is_err());

    let d = diff(&a, &m);
    assert_eq!(d.len(), 2, "{d:?}");
    assert!(d
        .iter()
        .any(|l| matches!(l, DiffLine::ConfigChanged { new, .. } if new.config == "v1:b1")));
    assert!(d
        .iter()
        .any(|l| matches!(l, DiffLine::Added(e) if e.config == "v1:b3")));
    assert!(!d.iter().any(|l| matches!(l, DiffLine::TimeChanged { .. })));
    let d = diff(&b, &a);
    assert!(d
        .iter()
        .any(|l| matches!(l, DiffLine::Removed(e) if e.config == "v1:b3")));
    assert!(d.iter().any(|l| matches!(l, DiffLine::TimeChanged { old, new } if old.time_us == 6.0 && new.time_us == 5.0)));
}

#[test]
fn stale_entries_are_those_without_a_fresh_measurement_here() {
    let (p1, p2, p3) = (
        problem(1, 8, 8, 8, 1),
        problem(2, 8, 8, 8, 1),
        problem(4, 8, 8, 8, 1),
    );
    let mut db = TunedDb::new("sm_90");
    db.insert(entry(&p1, "v1:fresh", 1.0)).unwrap();
    let mut old_driver = entry(&p2, "v1:old-driver", 1.0);
    old_driver.fingerprint.driver = "550.0".into();
    db.insert(old_driver).unwrap();
    let mut old_version = entry(&p3, "v1:old-version", 1.0);
    old_version.convtune_version = "0.0.9".into();
    db.insert(old_version).unwrap();
    // p1 also has an entry from another GPU; the fresh one covers the problem.
    let mut h100 = entry(&p1, "v1:h100", 1.0);
    h100.fingerprint.gpu = "NVIDIA H100".into();
    db.insert(h100).unwrap();

    let s = stale(&db, &h200(), "0.1.0");
    let mut configs: Vec<&str> = s.iter().map(|e| e.config.as_str()).collect();
    configs.sort();
    assert_eq!(configs, ["v1:old-driver", "v1:old-version"]);
    assert_eq!(stale(&db, &h200(), "0.2.0").len(), 4);
}

#[test]
fn check_finds_what_makes_entries_untrustworthy() {
    let p = problem(1, 8, 8, 8, 1);
    let q = problem(2, 8, 8, 8, 1);
    let good = TunedDb::parse(
        &{
            let mut db = TunedDb::new("sm_90");
            db.insert(entry(&p, "v1:ok", 1.0)).unwrap();
            db.insert(entry(&q, "v1:bad", 1.0)).unwrap();
            db.to_toml_string()
        },
        "t",
    )
    .unwrap();
    let only_ok = |_: &ConvProblem, _: &str, c: &str| -> Result<(), String> {
        if c == "v1:ok" {
            Ok(())
        } else {
            Err("too much LDS".into())
        }
    };
    let issues = check(&good, "sm_90", &only_ok);
    assert_eq!(issues.len(), 1, "{issues:?}");
    assert!(matches!(&issues[0], Issue::IllegalConfig { why, .. } if why == "too much LDS"));
    assert_eq!(check(&good, "gfx90a", &legal).len(), 1);

    // A hand-merged file: a duplicate, an edited config, a key that is not a problem.
    let mut text = good.to_toml_string();
    let first = text.find("[[entry]]").unwrap();
    let end = text[first + 1..].find("[[entry]]").unwrap() + first + 1;
    let block = text[first..end].to_string();
    text.push('\n');
    text.push_str(&block.replace("v1:ok", "v1:edited"));
    text.push_str("\n[[entry]]\nproblem = \"conv -n\"\nconfig = \"v1:x\"\ntime_us = 1.0\n");
    let db = TunedDb::parse(&text, "hand").unwrap();
    assert_eq!(db.len(), 4);
    let issues = check(&db, "sm_90", &legal);
    let kinds: Vec<&str> = issues
        .iter()
        .map(|i| match i {
            Issue::Duplicate { count: 2, .. } => "dup",
            Issue::ChecksumMismatch { .. } => "sum",
            Issue::UnparsableKey { .. } => "key",
            Issue::EntryCount {
                declared: 2,
                found: 4,
            } => "count",
            _ => "other",
        })
        .collect();
    // Two blocks appended by hand to a file whose header lists two entries.
    assert_eq!(
        kinds.iter().filter(|k| **k == "count").count(),
        1,
        "{issues:?}"
    );
    assert_eq!(
        kinds.iter().filter(|k| **k == "dup").count(),
        1,
        "{issues:?}"
    );
    // The edited entry and the entry with no checksum at all.
    assert_eq!(
        kinds.iter().filter(|k| **k == "sum").count(),
        2,
        "{issues:?}"
    );
    assert_eq!(
        kinds.iter().filter(|k| **k == "key").count(),
        1,
        "{issues:?}"
    );
    assert!(!kinds.contains(&"other"), "{issues:?}");
    // The bad key is kept and written back, not silently dropped.
    assert!(db.to_toml_string().contains("problem = \"conv -n\""));
}

#[test]
fn lookup_prefers_user_exact_then_nearest_legal() {
    let target = problem(16, 64, 64, 56, 3);
    let mut system = TunedDb::new("sm_90");
    system.insert(entry(&target, "v1:system", 2.0)).unwrap();
    let mut user = TunedDb::new("sm_90");
    user.insert(entry(&target, "v1:user", 3.0)).unwrap();
    let layered = Layered {
        system: Some(&system),
        user: Some(&user),
    };
    let r = layered.lookup(&target, "sm_90", Some(&h200()), &legal);
    assert_eq!(r.source, Source::Exact);
    assert_eq!(r.config.as_deref(), Some("v1:user"));
    assert!(r.reason.contains("user"), "{}", r.reason);

    // User entry illegal here: the system one is used, and the reason says why.
    let no_user = |_: &ConvProblem, _: &str, c: &str| -> Result<(), String> {
        if c == "v1:user" {
            Err("vector load too wide".into())
        } else {
            Ok(())
        }
    };
    let r = layered.lookup(&target, "sm_90", None, &no_user);
    assert_eq!(r.config.as_deref(), Some("v1:system"));
    assert!(r.reason.contains("vector load too wide"), "{}", r.reason);

    // Another GPU's entries are not exact hits for this one: the problem's winner there
    // comes as a distance-0 neighbour that names the GPU (the user layer's first), and where
    // it is illegal here, nothing.
    let h100 = Fingerprint {
        gpu: "NVIDIA H100 80GB HBM3".into(),
        compute_units: 132,
        ..Default::default()
    };
    let r = layered.lookup(&target, "sm_90", Some(&h100), &legal);
    assert_eq!(
        r.source,
        Source::Nearest {
            key: target.key(),
            distance: 0.0
        }
    );
    assert_eq!(r.config.as_deref(), Some("v1:user"));
    assert!(
        r.reason.contains("tuned on another GPU (NVIDIA H200"),
        "{}",
        r.reason
    );
    let r = layered.lookup(&target, "sm_90", Some(&h100), &no_user);
    assert_eq!(r.config.as_deref(), Some("v1:system"));
    let nothing = |_: &ConvProblem, _: &str, _: &str| -> Result<(), String> { Err("no".into()) };
    let r = layered.lookup(&target, "sm_90", Some(&h100), &nothing);
    assert_eq!(r.source, Source::None);
    assert!(r.reason.contains("another GPU"), "{}", r.reason);
    // A database of another arch is ignored, and says so.
    let r = layered.lookup(&target, "gfx90a", None, &legal);
    assert_eq!(r.source, Source::None);
    assert!(r.reason.contains("ignored"), "{}", r.reason);
}

#[test]
fn nearest_lookup_picks_the_closest_legal_entry() {
    let mut db = TunedDb::new("sm_90");
    let closest = problem(16, 64, 64, 28, 3); // H, W halved: distance 2
    let next = problem(16, 64, 128, 28, 3); // and K doubled: distance 3
    let far = problem(16, 64, 64, 56, 1); // filter 1x1: distance 20
    db.insert(entry(&closest, "v1:closest-illegal", 1.0))
        .unwrap();
    db.insert(entry(&next, "v1:next", 1.0)).unwrap();
    db.insert(entry(&far, "v1:far", 1.0)).unwrap();
    // Same sizes but another direction and type: a different bucket, never a neighbour.
    let target = problem(16, 64, 64, 56, 3);
    let other = target
        .with_direction(Direction::BwdWeight)
        .with_dtype(DType::F32);
    db.insert(entry(&other, "v1:other-bucket", 0.5)).unwrap();

    let check = |_: &ConvProblem, _: &str, c: &str| -> Result<(), String> {
        if c.contains("illegal") {
            Err("no".into())
        } else {
            Ok(())
        }
    };
    let layered = Layered {
        system: Some(&db),
        user: None,
    };
    let r = layered.lookup(&target, "sm_90", Some(&h200()), &check);
    assert_eq!(r.config.as_deref(), Some("v1:next"), "{}", r.reason);
    match &r.source {
        Source::Nearest { key, distance } => {
            assert_eq!(key, &next.key());
            assert!((distance - 3.0).abs() < 1e-9, "{distance}");
        }
        s => panic!("expected nearest, got {s:?}"),
    }
    assert!(r.reason.contains("illegal"), "{}", r.reason);
    assert_eq!(
        distance(target.sizes(), far.sizes()),
        2.0 * STRUCTURE_PENALTY
    );

    // Nothing legal at all: no config, and no guess from another bucket.
    let r = layered.lookup(
        &target,
        "sm_90",
        None,
        &|_: &ConvProblem, _: &str, _: &str| Err("never".to_string()),
    );
    assert_eq!((r.config, r.source), (None, Source::None));
}

#[test]
fn embedded_system_databases_parse() {
    for arch in system_archs() {
        let db = system(arch).unwrap().unwrap();
        assert_eq!(db.arch(), arch);
        assert!(check(db, arch, &legal)
            .iter()
            .all(|i| !matches!(i, Issue::UnparsableKey { .. } | Issue::Duplicate { .. })));
    }
    assert!(system("no_such_arch").unwrap().is_none());
    assert!(parse_system("sm_90", &TunedDb::new("gfx90a").to_toml_string()).is_err());
    assert!(parse_system("sm_90", &TunedDb::new("sm_90").to_toml_string()).is_ok());
}

#[test]
fn user_db_path_order() {
    let no_home = || None;
    let env = |vars: &'static [(&'static str, &'static str)]| {
        move |k: &str| {
            vars.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| OsString::from(v))
        }
    };
    let p = user_db_path_with(
        Some(Path::new("/x/my.toml")),
        "sm_90",
        env(&[("CONVTUNE_DB", "/env.toml")]),
        no_home,
    )
    .unwrap();
    assert_eq!(p, Path::new("/x/my.toml"));
    let p =
        user_db_path_with(None, "sm_90", env(&[("CONVTUNE_DB", "/env.toml")]), no_home).unwrap();
    assert_eq!(p, Path::new("/env.toml"));
    let p = user_db_path_with(None, "sm_90", env(&[("CONVTUNE_DB", "/dbs/")]), no_home).unwrap();
    assert_eq!(p, Path::new("/dbs/sm_90.toml"));
    let p = user_db_path_with(
        None,
        "gfx90a",
        env(&[("XDG_DATA_HOME", "/data"), ("HOME", "/home/u")]),
        no_home,
    )
    .unwrap();
    assert_eq!(p, Path::new("/data/convtune/gfx90a.toml"));
    let p = user_db_path_with(
        None,
        "sm_90",
        env(&[("XDG_DATA_HOME", "relative"), ("HOME", "/home/u")]),
        no_home,
    )
    .unwrap();
    assert_eq!(p, Path::new("/home/u/.local/share/convtune/sm_90.toml"));
    // Issue 18 item 10: with HOME and XDG_DATA_HOME unset the path was relative to the
    // working directory. Now the account's home, else a clear error.
    let p = user_db_path_with(None, "sm_90", env(&[]), || Some("/home/acct".into())).unwrap();
    assert_eq!(p, Path::new("/home/acct/.local/share/convtune/sm_90.toml"));
    let e = user_db_path_with(None, "sm_90", env(&[("HOME", "rel")]), no_home).unwrap_err();
    assert!(matches!(e, DbError::NoUserDbPath), "{e}");
    assert!(e.to_string().contains("--db"), "{e}");
}

#[test]
fn a_lookup_without_a_gpu_serves_the_home_device_and_one_with_a_gpu_its_own() {
    // Two problems tuned on the H200 (the home device), one of them also, later, on an H100.
    let (p1, p2) = (problem(16, 64, 64, 56, 3), problem(1, 3, 8, 7, 1));
    let mut db = TunedDb::new("sm_90");
    db.insert(entry(&p1, "v1:h200", 10.0)).unwrap();
    db.insert(entry(&p2, "v1:h200-p2", 10.0)).unwrap();
    let h100 = Fingerprint {
        gpu: "NVIDIA H100 80GB HBM3".into(),
        compute_units: 132,
        ..Default::default()
    };
    let mut e = entry(&p1, "v1:h100", 5.0);
    e.fingerprint = h100.clone();
    e.date = "2026-12-05".into();
    db.insert(e.sealed()).unwrap();
    let layered = Layered {
        system: Some(&db),
        user: None,
    };
    // Newer and faster, but measured on the other GPU: a lookup that knows no GPU keeps the
    // home device's answer, so adding a GPU's entries changes nothing for the others.
    let r = layered.lookup(&p1, "sm_90", None, &legal);
    assert_eq!(
        (r.source, r.config.as_deref()),
        (Source::Exact, Some("v1:h200"))
    );
    let r = layered.lookup(&p1, "sm_90", Some(&h100), &legal);
    assert_eq!(
        (r.source, r.config.as_deref()),
        (Source::Exact, Some("v1:h100"))
    );
    let r = layered.lookup(&p1, "sm_90", Some(&h200()), &legal);
    assert_eq!(r.config.as_deref(), Some("v1:h200"));
    // Where the H100 entries outnumber the H200's, they are the home device's.
    for (i, c) in [8, 16, 24].into_iter().enumerate() {
        let mut e = entry(&problem(1, c, 8, 7, 1), &format!("v1:h100-{i}"), 1.0);
        e.fingerprint = h100.clone();
        db.insert(e.sealed()).unwrap();
    }
    let layered = Layered {
        system: Some(&db),
        user: None,
    };
    let r = layered.lookup(&p1, "sm_90", None, &legal);
    assert_eq!(r.config.as_deref(), Some("v1:h100"));
    // A problem tuned nowhere: without a GPU, the home device's neighbours (though an H200
    // entry is nearer); an H200's are the H200's; a GPU nothing was tuned on gets every GPU's
    // (and is told so).
    let new = problem(2, 3, 8, 7, 1);
    let r = layered.lookup(&new, "sm_90", None, &legal);
    assert!(
        r.config
            .as_deref()
            .is_some_and(|c| c.starts_with("v1:h100-")),
        "{:?}: {}",
        r.config,
        r.reason
    );
    let r = layered.lookup(&new, "sm_90", Some(&h200()), &legal);
    assert_eq!(r.config.as_deref(), Some("v1:h200-p2"));
    let fresh = Fingerprint {
        gpu: "NVIDIA H20".into(),
        compute_units: 78,
        ..Default::default()
    };
    let r = layered.lookup(&new, "sm_90", Some(&fresh), &legal);
    assert!(matches!(r.source, Source::Nearest { .. }), "{}", r.reason);
    assert!(r.reason.contains("tuned on other GPUs"), "{}", r.reason);
}
