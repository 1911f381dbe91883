//! The AMD path without an AMD GPU. What this proves, and what it does not:
//!
//! - A host-memory stand-in for the HIP runtime ([`FakeHip`], implementing
//!   [`HipApi`]) drives the real [`HipMeasurer`] through a whole tuning campaign for gfx90a:
//!   real code objects are compiled and read back, every launch's arguments are checked against
//!   the buffers the measurer allocated, launch order, poisoning and the timing loop are
//!   recorded, a faulting candidate kills the "process" and the run goes on in a fresh one, and
//!   the journal and the database entry (with the AMD fingerprint) are written. The stand-in
//!   computes each launch's result with the CPU reference, so it checks the plumbing, not the
//!   kernels' arithmetic (the emulator tests in tests/codegen.rs do that).
//! - Nothing here runs machine code on an AMD GPU: `scripts/amd-tests.sh` is that check.
//! - Without ROCm, `convtune --arch gfx90a` exits 2 naming the HIP runtime.

use convtune::arch::{Arch, Vendor};
use convtune::problem::ConvProblem;
use convtune::runtime::hip::HipMeasurer;
use convtune::runtime::{DeviceBackend, Fingerprint, MeasureDevice, Outcome, RuntimeError};
use convtune::tune::{Campaign, CampaignOptions, CampaignReport, TuneOptions};
use std::sync::{Arc, Mutex};

#[path = "common/fake_hip.rs"]
mod fake_hip;
use fake_hip::{Call, FakeAmdBackend, FakeHip, World};

const PROBLEM: &str = "conv -n 1 -c 8 -H 6 -W 6 -k 8 -y 3 -x 3 -p 1 -q 1 -F 1";

#[test]
fn a_gfx90a_campaign_runs_end_to_end_on_the_hip_measurer() {
    let dir = tempfile::tempdir().unwrap();
    // Load 1 is the reference, 2 the first candidate, 3 the second: it faults.
    let world = Arc::new(Mutex::new(World {
        fault_load: 3,
        ..World::default()
    }));
    let backend = FakeAmdBackend {
        world: world.clone(),
    };
    let options = CampaignOptions {
        arch: Some(Arch::GFX90A),
        strategy: "exhaustive".into(),
        tune: TuneOptions {
            budget: Some(4),
            batch: 2,
            progress: false,
            ..TuneOptions::default()
        },
        db: Some(dir.path().join("db.toml")),
        journal: Some(dir.path().join("journal.jsonl")),
        ..CampaignOptions::default()
    };
    let problem: ConvProblem = PROBLEM.parse().unwrap();
    let report = Campaign::new(options)
        .unwrap()
        .run_on(&backend, vec![problem], &|_| {})
        .unwrap();
    let CampaignReport::Tuned(t) = report else {
        panic!("not a dry run")
    };
    let s = &t.problems[0];
    assert_eq!((s.evaluated, s.failed), (4, 1), "{s}");
    assert_eq!(s.failures.get("fault"), Some(&1), "{s}");
    assert!(s.winner().is_some(), "{s}");

    let w = world.lock().unwrap();
    // discovery + first measurer + the one started after the fault
    assert_eq!(w.processes, 3, "one restart after the fault");
    // 1 reference + 4 candidates + the reference again in the restarted process
    assert_eq!(w.loads, 6);

    // Every candidate run: the output poisoned, then the plan's launches in order; every timed
    // run: a cache flush, an event, the launches, an event.
    let launches = w
        .calls
        .iter()
        .filter(|c| matches!(c, Call::Launch { .. }))
        .count();
    let records = w.calls.iter().filter(|c| **c == Call::Record).count();
    assert!(
        records >= 2 * 5 * 4,
        "timed runs of the reference and 3 candidates"
    );
    let poison = w
        .calls
        .iter()
        .filter(|c| matches!(c, Call::Memset { value: 0xFF, .. }))
        .count();
    assert!(
        poison >= 5,
        "each checked run starts from a poisoned output"
    );
    for (i, c) in w.calls.iter().enumerate() {
        if *c == Call::Record && i + 1 < w.calls.len() {
            // a start event is preceded by a flush of at least twice the 8 MiB L2
            if let Some(Call::Memset { bytes, .. }) = i.checked_sub(1).map(|j| &w.calls[j]) {
                if *bytes >= 16 << 20 {
                    assert!(matches!(w.calls[i + 1], Call::Launch { .. }));
                }
            }
        }
    }
    assert!(launches > records / 2);
    drop(w);

    let journal = std::fs::read_to_string(dir.path().join("journal.jsonl")).unwrap();
    let outcomes = journal.lines().filter(|l| !l.contains("\"@stages\""));
    assert_eq!(outcomes.count(), 4, "every outcome journalled");
    assert!(journal.contains("\"@stages\""), "and where the time went");
    let db = convtune::db::TunedDb::load(&dir.path().join("db.toml")).unwrap();
    let entry = &db.get_key(&problem.key())[0];
    assert_eq!(
        entry.fingerprint.gpu,
        "AMD Instinct MI250X (gfx90a:sramecc+:xnack-)"
    );
    assert_eq!(entry.fingerprint.driver, "HIP 6.2.41133, driver 6.2.41133");
    assert_eq!(entry.fingerprint.compute_units, 110);
    assert_eq!(entry.config, s.winner().unwrap().config);
}

/// A gfx942 device refuses a campaign for gfx90a, saying why.
#[test]
fn arch_must_agree_with_the_device() {
    struct Mi300;
    impl DeviceBackend for Mi300 {
        fn name(&self) -> &'static str {
            "fake HIP"
        }
        fn vendor(&self) -> Vendor {
            Vendor::Amd
        }
        fn looked_for(&self) -> &'static str {
            "a fake MI300X"
        }
        fn discover(&self) -> Result<Vec<Fingerprint>, RuntimeError> {
            Ok(vec![Fingerprint {
                gpu: "AMD Instinct MI300X (gfx942:sramecc+:xnack-)".into(),
                arch: "gfx942".into(),
                compute_units: 304,
                driver: "HIP 6.2.0, driver 6.2.0".into(),
                clock_mhz: None,
                memory_mhz: None,
            }])
        }
        fn open(&self, _: usize) -> Result<Box<dyn MeasureDevice>, RuntimeError> {
            unreachable!("refused before opening")
        }
    }
    let o = CampaignOptions {
        arch: Some(Arch::GFX90A),
        ..CampaignOptions::default()
    };
    let e = Campaign::new(o)
        .unwrap()
        .run_on(&Mi300, vec![PROBLEM.parse().unwrap()], &|_| {})
        .unwrap_err();
    let text = e.to_string();
    assert!(
        e.is_input_error() && text.contains("gfx90a") && text.contains("gfx942"),
        "{text}"
    );
}

/// The measurer refuses, as the candidate's failure, a plan whose launch ABI the code object
/// does not declare, and LDS beyond the device's limit.
#[test]
fn metadata_is_checked_before_launching() {
    let world = Arc::new(Mutex::new(World::default()));
    let p: ConvProblem = PROBLEM.parse().unwrap();
    world.lock().unwrap().problem = Some(p);
    let arch = Arch::GFX90A;
    let reference = convtune::tune::reference_plan(&p, &arch).unwrap();
    let mut m = HipMeasurer::new(FakeHip::new(world.clone()), 0).unwrap();
    m.set_problem(&p, &reference, 7).unwrap();
    assert!(m.reference_cpu_error().unwrap() < 1e-6);

    let mut swapped = reference.clone();
    swapped.launches[0].args.swap(0, 3);
    swapped.launches[0].args.pop();
    match m.measure(&swapped).unwrap() {
        Outcome::LoadFailed(why) => assert!(why.contains("explicit argument"), "{why}"),
        o => panic!("{o}"),
    }
    let mut reordered = reference.clone();
    reordered.launches[0].args.swap(0, 1);
    match m.measure(&reordered).unwrap() {
        Outcome::LoadFailed(why) => assert!(why.contains("the ABI needs `w`"), "{why}"),
        o => panic!("{o}"),
    }
    let mut big = reference.clone();
    big.launches[0].shared_bytes = (64 << 10) + 16;
    match m.measure(&big).unwrap() {
        Outcome::LaunchFailed(why) => assert!(why.contains("LDS"), "{why}"),
        o => panic!("{o}"),
    }
    let mut ptx = reference.clone();
    ptx.module = convtune::abi::Module::Ptx(String::new());
    assert!(matches!(m.measure(&ptx).unwrap(), Outcome::LoadFailed(_)));
    match m.measure(&reference).unwrap() {
        Outcome::Ok(t) => {
            assert!(t.runs >= 5 && t.median_us > 0.0, "{t:?}");
            assert!(!t.resources.is_empty() && t.resources[0].registers > 0);
        }
        o => panic!("{o}"),
    }
}

/// On this machine (no ROCm), asking for gfx90a names the HIP runtime and exits 2.
#[test]
fn gfx90a_without_rocm_exits_2_naming_the_hip_runtime() {
    if convtune::runtime::hip::hip_devices().is_ok_and(|d| !d.is_empty()) {
        return; // an AMD GPU is here: scripts/amd-tests.sh covers it
    }
    let seed003 = "convbfp16 -n 16 -c 2048 -H 1 -W 512 -k 2048 -y 1 -x 2 -p 0 -q 0 -u 1 -v 2 \
                   -l 1 -j 1 -g 1 -F 2 --layout NHWC";
    let dir = tempfile::tempdir().unwrap();
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_convtune"))
        .args(["--problem", seed003, "--arch", "gfx90a"])
        .env("CONVTUNE_DB", dir.path().join("db.toml"))
        .env("HOME", dir.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("HIP runtime") && err.contains("libamdhip64"),
        "{err}"
    );
    assert!(!err.contains("CUDA"), "{err}");
    assert!(err.contains("--dry-run --arch"), "{err}");
}
