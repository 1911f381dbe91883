//! The main job: `convtune --problem … --arch …` tunes on the GPU into the database.

use super::{bad_input, ArchArg};
use anyhow::{anyhow, Context as _};
use convtune::arch::Arch;
use convtune::db::{self, Entry, Journal, TunedDb};
use convtune::lowering::lower;
use convtune::problem::{read_problem_file, ConvProblem};
use convtune::runtime::{cuda_devices, LaunchPlan, Outcome, Worker};
use convtune::search::{self, SearchContext};
use convtune::space::SearchSpace;
use convtune::space::{enumerate_lowered, PerfConfig};
use convtune::tune::{self, compile_plan, reference_plan, Evaluate, Record, TuneOptions};
use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

/// Arguments of the tuning run (the bare `convtune` form).
#[derive(clap::Args)]
pub struct TuneArgs {
    /// One problem (MIOpenDriver line or rocMLIR driver flags).
    #[arg(long, allow_hyphen_values = true, conflicts_with = "problems")]
    pub problem: Option<String>,
    /// A file of problems, one a line, `#` comments.
    #[arg(long, value_name = "FILE")]
    pub problems: Option<PathBuf>,
    #[command(flatten)]
    pub arch: ArchArg,
    /// Evaluate at most this many candidates per problem (default: all legal ones).
    #[arg(long)]
    pub budget: Option<usize>,
    /// Stop proposing candidates for a problem after this many seconds.
    #[arg(long, value_name = "SECS")]
    pub time: Option<f64>,
    /// Search strategy.
    #[arg(long, default_value = "guided")]
    pub strategy: String,
    /// Seed for random inputs and randomised strategies.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// GPU ordinal.
    #[arg(long, default_value_t = 0)]
    pub device: usize,
    /// Tune on several GPUs of this host, one worker each: `all` or a list `0,1`.
    #[arg(long, value_name = "all|LIST")]
    pub devices: Option<String>,
    /// Database file to write (default: the user database, see `convtune lookup --help`).
    #[arg(long, value_name = "FILE")]
    pub db: Option<PathBuf>,
    /// Journal of every measured candidate, for resuming (default: beside the database).
    #[arg(long, value_name = "FILE")]
    pub journal: Option<PathBuf>,
    /// Append a JSON report of the winners here (read by scripts/compare-cudnn.py).
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,
    /// Tune only problems i, i+n, i+2n, … of the list (`i/n`, 0-based): split a list across hosts.
    #[arg(long, value_name = "I/N")]
    pub shard: Option<String>,
    /// Enumerate, check and compile every candidate, report counts; no GPU, writes nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Candidates compiled per batch.
    #[arg(long, default_value_t = 32)]
    pub batch: usize,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
    /// Test only: make this many of the first candidates write out of bounds (fault isolation).
    #[arg(long, hide = true, default_value_t = 0)]
    pub inject_faults: usize,
}

impl TuneArgs {
    /// Whether a problem was given: the bare `convtune` form tunes only then, and otherwise
    /// prints what is missing instead of starting a GPU worker.
    pub fn wants_tuning(&self) -> bool {
        self.problem.is_some() || self.problems.is_some()
    }
}

fn problems(args: &TuneArgs) -> anyhow::Result<Vec<ConvProblem>> {
    let mut list = match (&args.problem, &args.problems) {
        (Some(p), _) => vec![p.parse().map_err(|e| {
            bad_input(anyhow!(
                "problem '{}': {e}",
                convtune::input::excerpt(p, 200)
            ))
        })?],
        (None, Some(path)) => read_problem_file(path).map_err(bad_input)?,
        (None, None) => return Err(bad_input(anyhow!("give --problem or --problems"))),
    };
    if let Some(shard) = &args.shard {
        let (i, n) = shard
            .split_once('/')
            .and_then(|(i, n)| Some((i.parse::<usize>().ok()?, n.parse::<usize>().ok()?)))
            .filter(|&(i, n)| n > 0 && i < n)
            .ok_or_else(|| bad_input(anyhow!("--shard '{shard}': expected I/N with I < N")))?;
        list = list.into_iter().skip(i).step_by(n).collect();
    }
    Ok(list)
}

/// Measures through the worker process; a worker that cannot start at all ends the run.
struct WorkerEval<'a> {
    worker: &'a mut Worker,
    fatal: Option<String>,
}

impl Evaluate for WorkerEval<'_> {
    fn measure(&mut self, plan: &LaunchPlan) -> Outcome {
        match self.worker.measure(plan) {
            Ok(o) => o,
            Err(e) => {
                self.fatal = Some(e.to_string());
                Outcome::Fault(e.to_string())
            }
        }
    }
    fn fatal(&self) -> Option<&str> {
        self.fatal.as_deref()
    }
}

/// The journal: earlier outcomes of this problem, and new ones appended as they come.
struct JournalRecord<'a> {
    key: String,
    earlier: &'a HashMap<(String, String), db::JournalRecord>,
    journal: &'a mut Journal,
    error: Option<String>,
}

impl Record for JournalRecord<'_> {
    fn earlier(&self, config: &PerfConfig) -> Option<Outcome> {
        let r = self.earlier.get(&(self.key.clone(), config.to_string()))?;
        serde_json::from_value(r.outcome.clone()).ok()
    }
    fn record(&mut self, config: &PerfConfig, outcome: &Outcome) {
        let value = serde_json::to_value(outcome).unwrap_or_default();
        let time = outcome.timing().map(|t| t.median_us);
        if let Err(e) = self
            .journal
            .record(&self.key, &config.to_string(), value, time)
        {
            self.error.get_or_insert(e.to_string());
        }
    }
}

fn strategy(args: &TuneArgs) -> anyhow::Result<Box<dyn search::Strategy>> {
    search::by_name(&args.strategy, args.seed).ok_or_else(|| {
        bad_input(anyhow!(
            "unknown --strategy '{}': known are {}",
            args.strategy,
            search::STRATEGIES.join(", ")
        ))
    })
}

fn options(args: &TuneArgs) -> TuneOptions {
    TuneOptions {
        budget: args.budget,
        time_limit: args.time.map(Duration::from_secs_f64),
        batch: args.batch.max(1),
        progress: !args.quiet,
    }
}

/// Runs the tuner; returns the exit code's error, if any.
pub fn run(args: TuneArgs) -> anyhow::Result<()> {
    let list = problems(&args)?;
    run_list(args, list)
}

/// `convtune retune`: tunes again the entries of the database that are stale here (another GPU,
/// driver or convtune version than the present ones).
pub fn retune(args: TuneArgs) -> anyhow::Result<()> {
    let devices = cuda_devices().map_err(|e| bad_input(anyhow!("no usable GPU: {e}")))?;
    let dev = devices
        .get(args.device)
        .ok_or_else(|| bad_input(anyhow!("--device {}: no such GPU", args.device)))?;
    let fp = dev.fingerprint();
    let arch = args.arch.arch(Some(&fp.arch))?;
    let path = db::user_db_path(args.db.as_deref(), arch.name).map_err(bad_input)?;
    let d = TunedDb::load(&path).map_err(bad_input)?;
    let stale = db::stale(&d, &db::Fingerprint::from(&fp), env!("CARGO_PKG_VERSION"));
    let mut list = Vec::new();
    for e in &stale {
        let p: ConvProblem = e.problem.parse().map_err(|err| {
            bad_input(anyhow!("{}: entry '{}': {err}", path.display(), e.problem))
        })?;
        list.push(p);
    }
    eprintln!(
        "{} of {} entries in {} are stale",
        list.len(),
        d.len(),
        path.display()
    );
    if list.is_empty() {
        return Ok(());
    }
    run_list(args, list)
}

fn run_list(args: TuneArgs, list: Vec<ConvProblem>) -> anyhow::Result<()> {
    if args.dry_run {
        let arch = args.arch.arch(None)?;
        return dry_run(&args, &arch, &list);
    }
    let devices = cuda_devices().map_err(|e| bad_input(anyhow!("no usable GPU: {e}")))?;
    let dev = devices.get(args.device).ok_or_else(|| {
        bad_input(anyhow!(
            "--device {}: only {} CUDA device(s) present",
            args.device,
            devices.len()
        ))
    })?;
    let detected = dev.fingerprint().arch.clone();
    let arch = args.arch.arch(Some(&detected))?;
    if arch.name != detected {
        return Err(bad_input(anyhow!(
            "--arch {} does not match the GPU: device {} is {} ({detected}); \
             use --dry-run to compile for another arch",
            arch.name,
            args.device,
            dev.name
        )));
    }
    let (space, origin) = args.arch.space(&arch)?;
    let ordinals = device_list(&args, devices.len())?;
    for &d in &ordinals {
        let a = devices[d].fingerprint().arch;
        if a != arch.name {
            return Err(bad_input(anyhow!(
                "--devices: GPU {d} is {a}, not {}",
                arch.name
            )));
        }
    }
    let fp = dev.fingerprint();
    let db_fp = db::Fingerprint::from(&fp);
    let db_path = db::user_db_path(args.db.as_deref(), arch.name).map_err(bad_input)?;
    let journal_base = args
        .journal
        .clone()
        .unwrap_or_else(|| db_path.with_extension("journal.jsonl"));
    if let Some(dir) = journal_base.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    // One journal per device (a journal has one writer); a rerun resumes from all of them.
    let journals: Vec<PathBuf> = ordinals
        .iter()
        .map(|&d| journal_for(&journal_base, d, ordinals.len()))
        .collect();
    let mut earlier = HashMap::new();
    for j in journals.iter().chain(std::iter::once(&journal_base)) {
        earlier.extend(Journal::load(j).unwrap_or_default());
    }
    eprintln!(
        "convtune: {} problem(s) on {} × {fp}, space {origin}, strategy {}, database {}, journal {}",
        list.len(),
        ordinals.len(),
        args.strategy,
        db_path.display(),
        journal_base.display()
    );
    let setup = Setup {
        arch,
        space,
        db_fp,
        db_path,
        earlier,
        progress: ordinals.len() == 1 && !args.quiet,
    };
    let queue = Mutex::new(list.into_iter().collect::<VecDeque<_>>());
    let reports = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        let handles: Vec<_> = ordinals
            .iter()
            .zip(&journals)
            .map(|(&d, j)| {
                let (setup, queue, reports, args) = (&setup, &queue, &reports, &args);
                scope.spawn(move || tune_device(args, setup, d, j, queue, reports))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(anyhow!("a device thread panicked")))
            })
            .collect::<anyhow::Result<Vec<()>>>()
    })?;
    Ok(())
}

/// What every device thread shares.
struct Setup {
    arch: Arch,
    space: SearchSpace,
    db_fp: db::Fingerprint,
    db_path: PathBuf,
    earlier: HashMap<(String, String), db::JournalRecord>,
    progress: bool,
}

/// `--devices all|0,1,…`, else `--device`.
fn device_list(args: &TuneArgs, present: usize) -> anyhow::Result<Vec<usize>> {
    let Some(spec) = &args.devices else {
        return Ok(vec![args.device]);
    };
    if spec == "all" {
        return Ok((0..present).collect());
    }
    spec.split(',')
        .map(|t| {
            t.trim()
                .parse::<usize>()
                .ok()
                .filter(|&d| d < present)
                .ok_or_else(|| {
                    bad_input(anyhow!(
                        "--devices '{spec}': '{t}' is not a GPU (0..{present})"
                    ))
                })
        })
        .collect()
}

fn journal_for(base: &Path, device: usize, devices: usize) -> PathBuf {
    if devices == 1 {
        return base.to_path_buf();
    }
    let mut name = base.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".gpu{device}"));
    base.with_file_name(name)
}

/// One device's worker: takes problems from the shared queue until it is empty.
fn tune_device(
    args: &TuneArgs,
    setup: &Setup,
    device: usize,
    journal_path: &Path,
    queue: &Mutex<VecDeque<ConvProblem>>,
    reports: &Mutex<Vec<serde_json::Value>>,
) -> anyhow::Result<()> {
    let arch = &setup.arch;
    let mut journal = Journal::open(journal_path)?;
    let mut worker = Worker::spawn(device)?;
    loop {
        let Some(p) = queue
            .lock()
            .map_err(|_| anyhow!("queue poisoned"))?
            .pop_front()
        else {
            return Ok(());
        };
        let l = lower(&p);
        let e = enumerate_lowered(&l, arch, &setup.space);
        let reference = reference_plan(&p, arch).map_err(|e| anyhow!("reference kernel: {e}"))?;
        let ref_us = worker
            .set_problem(&p, &reference, args.seed)
            .with_context(|| format!("setting up {p}"))?;
        eprintln!(
            "[gpu {device}] {}: {} legal of {} raw candidates; reference kernel {ref_us:.1} us",
            p.key(),
            e.legal.len(),
            e.raw
        );
        let ctx = SearchContext {
            lowering: &l,
            arch,
            candidates: &e.legal,
        };
        let mut strat = strategy(args)?;
        let mut eval = WorkerEval {
            worker: &mut worker,
            fatal: None,
        };
        let mut rec = JournalRecord {
            key: p.key(),
            earlier: &setup.earlier,
            journal: &mut journal,
            error: None,
        };
        let inject = args.inject_faults;
        let compile = |c: &PerfConfig| {
            let faulty = inject > 0
                && e.legal
                    .iter()
                    .position(|x| x == c)
                    .is_some_and(|i| i < inject);
            compile_plan(&l, c, arch, faulty).map_err(|e| e.to_string())
        };
        let mut opts = options(args);
        opts.progress = setup.progress;
        let report = tune::tune(&ctx, strat.as_mut(), compile, &mut eval, &mut rec, &opts);
        if let Some(err) = eval.fatal {
            return Err(anyhow!("GPU {device} worker failed: {err}"));
        }
        if let Some(err) = rec.error {
            return Err(anyhow!("journal {}: {err}", journal_path.display()));
        }
        print_top(&p, &report);
        let Some((cfg, t)) = report.best() else {
            eprintln!("  no candidate verified: nothing written for this problem");
            continue;
        };
        let entry = Entry {
            problem: p.key(),
            config: cfg.to_string(),
            time_us: t.median_us,
            tflops: t.tflops,
            candidates_tried: report.trials.len() as u64,
            fingerprint: setup.db_fp.clone(),
            convtune_version: env!("CARGO_PKG_VERSION").to_string(),
            date: db::today_utc(),
            checksum: String::new(),
        }
        .sealed();
        TunedDb::update_file(&setup.db_path, arch.name, |db| db.insert(entry))??;
        let mut all = reports.lock().map_err(|_| anyhow!("reports poisoned"))?;
        all.push(serde_json::json!({
            "problem": p.key(), "config": cfg.to_string(), "time_us": t.median_us,
            "tflops": t.tflops, "tried": report.trials.len(), "failed": report.failed(),
            "legal": report.legal, "seconds": report.elapsed.as_secs_f64(), "device": device,
        }));
        if let Some(path) = &args.report {
            write_report(path, &all)?;
        }
    }
}

/// Appends `reports` to the JSON array at `path`: entries of other problems already there stay
/// (several runs can share one report), an entry of a problem tuned again is replaced. A file
/// that is not such an array is an error and is left as it is. Written atomically.
fn write_report(path: &Path, reports: &[serde_json::Value]) -> anyhow::Result<()> {
    let key = |v: &serde_json::Value| v.get("problem").cloned();
    let mut all: Vec<serde_json::Value> = match std::fs::read_to_string(path) {
        Ok(text) => serde_json::from_str(&text).with_context(|| {
            format!(
                "report {} exists but is not a JSON array of results; not overwriting it",
                path.display()
            )
        })?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    let fresh: std::collections::HashSet<_> = reports.iter().filter_map(key).collect();
    all.retain(|v| key(v).is_none_or(|k| !fresh.contains(&k)));
    all.extend(reports.iter().cloned());
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut tmp = tempfile::NamedTempFile::new_in(dir)
        .with_context(|| format!("writing {}", path.display()))?;
    serde_json::to_writer_pretty(&mut tmp, &all)?;
    tmp.persist(path)
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

fn print_top(p: &ConvProblem, r: &tune::TuneReport) {
    let ranked = r.ranked();
    println!(
        "{}: {} evaluated ({} resumed, {} failed) of {} legal in {:.1} s",
        p.key(),
        r.trials.len(),
        r.trials.iter().filter(|t| t.resumed).count(),
        r.failed(),
        r.legal,
        r.elapsed.as_secs_f64()
    );
    println!("  {:>10} {:>9}  config", "time us", "TFLOP/s");
    for (cfg, t) in ranked.iter().take(5) {
        println!("  {:>10.2} {:>9.1}  {cfg}", t.median_us, t.tflops);
    }
    let mut fails: HashMap<&str, usize> = HashMap::new();
    for t in &r.trials {
        if t.outcome.timing().is_none() {
            *fails.entry(t.outcome.kind()).or_default() += 1;
        }
    }
    if !fails.is_empty() {
        let mut v: Vec<_> = fails.into_iter().collect();
        v.sort();
        let s: Vec<String> = v.iter().map(|(k, n)| format!("{n} {k}")).collect();
        println!("  failed: {}", s.join(", "));
        if let Some(t) = r.trials.iter().find(|t| t.outcome.timing().is_none()) {
            println!("  first failure: {} → {}", t.config, t.outcome);
        }
    }
}

/// Compiles every candidate (up to the budget) for the arch and reports counts; no GPU.
fn dry_run(args: &TuneArgs, arch: &Arch, list: &[ConvProblem]) -> anyhow::Result<()> {
    let (space, origin) = args.arch.space(arch)?;
    println!(
        "dry run for {} ({}), space {origin}",
        arch.name, arch.product
    );
    let mut total_failed = 0;
    for p in list {
        let l = lower(p);
        let e = enumerate_lowered(&l, arch, &space);
        let ctx = SearchContext {
            lowering: &l,
            arch,
            candidates: &e.legal,
        };
        let mut strat = strategy(args)?;
        let compiled = tune::compile_only(&ctx, strat.as_mut(), arch, &options(args));
        let failed = compiled.iter().filter(|c| c.1.is_err()).count();
        total_failed += failed;
        println!(
            "{}\n  raw {}, legal {}, compiled {} ok, {} failed",
            p.key(),
            e.raw,
            e.legal.len(),
            compiled.len() - failed,
            failed
        );
        if let Some((cfg, Err(err))) = compiled.iter().find(|c| c.1.is_err()) {
            println!("  first failure: {cfg}: {err}");
        }
        if let Some(summary) = tune::resource_summary(&compiled) {
            println!("  {summary}");
        }
    }
    if total_failed > 0 {
        return Err(anyhow!("{total_failed} candidate(s) failed to compile"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::write_report;
    use serde_json::json;

    #[test]
    fn report_appends_replaces_and_refuses_a_corrupt_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.json");
        write_report(&path, &[json!({"problem": "a", "time_us": 2.0})]).unwrap();
        write_report(
            &path,
            &[
                json!({"problem": "b", "time_us": 3.0}),
                json!({"problem": "a", "time_us": 1.0}),
            ],
        )
        .unwrap();
        let all: Vec<serde_json::Value> =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(all.len(), 2, "{all:?}");
        let a = all.iter().find(|v| v["problem"] == "a").unwrap();
        assert_eq!(
            a["time_us"], 1.0,
            "a problem tuned again replaces its entry"
        );
        std::fs::write(&path, "not json").unwrap();
        let err = write_report(&path, &[json!({"problem": "c"})]).unwrap_err();
        assert!(format!("{err:#}").contains("not overwriting"), "{err:#}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "not json");
    }
}
