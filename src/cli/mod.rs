//! Argument parsing and dispatch; each subcommand lives in its own file. Everything written to
//! stdout goes through [`out`] (no `println!`), so a closed pipe or a full disk is an error value
//! and never a panic.

#[macro_use]
mod out;

mod compile;
mod db;
mod lower;
mod replay;
mod selfcheck;
mod space;
mod tune;

use anyhow::{anyhow, Context as _};
use clap::{Parser, Subcommand};
use convtune::arch::Arch;
use convtune::db::{Layered, TunedDb};
use convtune::lookup::{find_candidates_in_space, Found, Limits};
use convtune::problem::ConvProblem;
use convtune::space::SearchSpace;
use std::path::PathBuf;

/// Auto-tuner for implicit-GEMM convolution kernels.
#[derive(Parser)]
#[command(
    name = "convtune",
    version,
    about,
    args_conflicts_with_subcommands = true,
    after_help = EXIT_CODES
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    tune: tune::TuneArgs,
}

#[derive(Subcommand)]
enum Command {
    /// Print the implicit GEMMs a problem lowers to.
    Lower(lower::LowerArgs),
    /// Compile one candidate to PTX or an AMDGPU code object and print its resource use.
    Compile(compile::CompileArgs),
    /// Tune again the database entries that are stale on this GPU (takes the tuning flags).
    Retune(tune::TuneArgs),
    /// The config a compiler would use for a problem, and where it came from.
    Lookup(db::LookupArgs),
    /// Tuned database tools: merge, diff, check, stale, export.
    #[command(subcommand)]
    Db(db::DbCommand),
    /// Score the search strategies against recorded exhaustive runs (no GPU): efficiency
    /// table, convergence plots, quick list.
    Replay(replay::ReplayArgs),
    /// Verify every generated kernel of a sweep on this machine's GPU, and fault isolation.
    Selfcheck(selfcheck::SelfcheckArgs),
    /// Count a problem's candidates on an arch: raw, legal, rejected per reason.
    Space(space::SpaceArgs),
    /// The GPU side of tuning, run as a child process by the tuner (fault isolation).
    #[command(hide = true)]
    Worker {
        /// Device ordinal.
        #[arg(long, default_value_t = 0)]
        device: usize,
        /// GPU runtime: `cuda`, or `hip` for AMD GPUs.
        #[arg(long, default_value = "cuda")]
        runtime: String,
    },
}

/// A problem given on the command line.
#[derive(clap::Args)]
pub struct ProblemArg {
    /// The problem: a MIOpenDriver line (`convbfp16 -n 16 … -F 2`) or rocMLIR driver flags.
    #[arg(long, allow_hyphen_values = true)]
    problem: String,
}

impl ProblemArg {
    /// Parses the problem, naming it in the error.
    pub fn parse(&self) -> anyhow::Result<ConvProblem> {
        self.problem.parse().map_err(|e| {
            let line = convtune::input::excerpt(&self.problem, 200);
            anyhow::anyhow!("problem '{line}': {e}")
        })
    }
}

/// The target architecture and its search space.
#[derive(clap::Args)]
pub struct ArchArg {
    /// Target: sm_80, sm_90, gfx908, gfx90a, gfx942. Defaults to the detected GPU.
    #[arg(long)]
    arch: Option<String>,
    /// Search-space file (TOML) instead of the built-in one for the arch family.
    #[arg(long, value_name = "FILE")]
    space: Option<PathBuf>,
}

impl ArchArg {
    /// The arch named, else the one `detected` (from the GPU), else an error.
    pub fn arch(&self, detected: Option<&str>) -> anyhow::Result<Arch> {
        let name = match (&self.arch, detected) {
            (Some(a), _) => a.as_str(),
            (None, Some(d)) => d,
            (None, None) => {
                return Err(bad_input(anyhow::anyhow!(
                    "no --arch given and no GPU detected to default to"
                )))
            }
        };
        Arch::from_name(name).map_err(bad_input)
    }

    /// The search space and where it came from.
    pub fn space(&self, arch: &Arch) -> anyhow::Result<(SearchSpace, String)> {
        match &self.space {
            Some(path) => {
                let s = SearchSpace::load(path).map_err(bad_input)?;
                // A space written for the other vendor names tiles and paths this arch cannot run.
                s.check_vendor(arch, &path.display().to_string())
                    .map_err(bad_input)?;
                Ok((s, path.display().to_string()))
            }
            None => Ok((
                SearchSpace::default_for(arch),
                convtune::space::builtin_origin(arch),
            )),
        }
    }

    /// The `--space` file as given, for reports (`None`: the built-in space).
    pub fn space_origin(&self) -> Option<String> {
        self.space.as_ref().map(|p| p.display().to_string())
    }

    /// The `--space` file, loaded (a missing or invalid file is bad input), or `None` when
    /// none was given: lookups then use the built-in space only for their heuristic.
    pub fn space_file(&self, arch: &Arch) -> anyhow::Result<Option<SearchSpace>> {
        match self.space {
            Some(_) => Ok(Some(self.space(arch)?.0)),
            None => Ok(None),
        }
    }
}

/// Where a lookup reads tuned configs: the same flags for `lookup` and `compile`, so both
/// answer a problem with the same config.
#[derive(clap::Args)]
pub struct DbArgs {
    /// User database (default: $CONVTUNE_DB, else $XDG_DATA_HOME/convtune/<arch>.toml).
    #[arg(long, value_name = "FILE")]
    db: Option<PathBuf>,
    /// Ignore the system database compiled into this binary.
    #[arg(long)]
    no_system_db: bool,
    /// The GPU the kernels will run on, as the driver names it (`NVIDIA H100 80GB HBM3`; with
    /// `--compute-units`): exact entries are then that GPU's, and a problem tuned only on
    /// another GPU of the arch comes as a distance-0 neighbour. Without it, where a problem was
    /// tuned on several GPUs, the entry of the GPU most of the database was tuned on.
    #[arg(long, value_name = "NAME", requires = "compute_units")]
    gpu: Option<String>,
    /// The SM (or compute unit) count of `--gpu`.
    #[arg(long, value_name = "N", requires = "gpu",
          value_parser = clap::value_parser!(u32).range(1..))]
    compute_units: Option<u32>,
}

/// A lookup's answer and the user database it consulted.
pub struct Looked {
    /// The config and its provenance.
    pub found: Found,
    /// The fallback's next configs after it, when more than one was asked for.
    pub more: Vec<Found>,
    /// The user database path (it may not exist), or none when it has no place (no home).
    pub user_db: Option<PathBuf>,
    /// Whether that file existed, was read and is for this arch.
    pub user_db_read: bool,
    /// Which user database was read, or why none was: named in lookup's "why".
    pub user_note: String,
}

impl DbArgs {
    /// The config a compiler would use: user database over the system one (unless
    /// `--no-system-db`), then the ranked fallback (nearest tuned problems, quick list, heuristic),
    /// all within `limits` (a space, deterministic results); with `most` > 1, also the
    /// fallback's next configs.
    pub fn find(
        &self,
        p: &ConvProblem,
        arch: &Arch,
        limits: Limits<'_>,
        most: usize,
    ) -> anyhow::Result<Looked> {
        // The note names the user database, or why there is none: a lookup that silently read
        // some other file (or none) is what users cannot debug.
        let path = convtune::db::user_db_path(self.db.as_deref(), arch.name);
        let (user, user_note) = match &path {
            Err(e) => (None, format!("no user database: {e}")),
            Ok(path) if path.exists() => {
                let d = TunedDb::load(path)
                    .with_context(|| format!("user database {}", path.display()))
                    .map_err(bad_input)?;
                let issues = convtune::db::arch_issues(&d, path);
                if issues.is_empty() {
                    (Some(d), format!("user database {}", path.display()))
                } else {
                    let why: Vec<String> = issues.iter().map(ToString::to_string).collect();
                    let note = format!(
                        "user database {} ignored: {}",
                        path.display(),
                        why.join("; ")
                    );
                    (None, note)
                }
            }
            Ok(path) => (
                None,
                format!("user database {} (not found)", path.display()),
            ),
        };
        let system = if self.no_system_db {
            None
        } else {
            convtune::db::system(arch.name)?
        };
        let layers = Layered {
            system,
            user: user.as_ref(),
        };
        let gpu = self
            .gpu
            .as_ref()
            .zip(self.compute_units)
            .map(|(gpu, units)| convtune::db::Fingerprint {
                gpu: gpu.clone(),
                compute_units: units,
                ..Default::default()
            });
        let mut more =
            find_candidates_in_space(p, arch, layers, gpu.as_ref(), limits, most.max(1))?;
        let found = more.remove(0);
        Ok(Looked {
            found,
            more,
            user_db_read: user.is_some(),
            user_db: path.ok(),
            user_note,
        })
    }
}

/// How to work without a GPU: the main command's `--dry-run`, with the arches it takes.
pub fn dry_run_hint() -> String {
    let archs: Vec<&str> = Arch::ALL.iter().map(|a| a.name).collect();
    format!(
        "without a GPU, add `--dry-run --arch ARCH` ({}) to enumerate, check and compile the \
         candidates (nothing is measured or written)",
        archs.join(", ")
    )
}

/// The error of a command that needs a GPU when none can be used: what was looked for.
pub fn no_gpu(e: impl std::fmt::Display) -> anyhow::Error {
    bad_input(anyhow!(
        "no usable GPU: looked for NVIDIA GPUs through the CUDA driver (libcuda.so.1): {e}"
    ))
}

/// The exit codes, as `--help` lists them (and the README's "Exit codes" section).
const EXIT_CODES: &str = "Exit codes: 0 done; 1 failed while running; 2 bad input (flags, \
problem lines, files: what and where) or no usable GPU; 3 and 4 only from the internal worker \
(device not opened; context lost to a fault).";

/// Marks an error as the user's input being wrong (exit code 2).
#[derive(Debug, thiserror::Error)]
#[error("{0:#}")]
pub struct BadInput(anyhow::Error);

/// Wraps an error as bad input.
pub fn bad_input(e: impl Into<anyhow::Error>) -> anyhow::Error {
    BadInput(e.into()).into()
}

/// Runs the CLI and returns the process exit code: 0 (also when stdout was closed by its
/// reader), 2 for bad input or no usable GPU, 1 for anything else (README, "Exit codes").
pub fn run() -> i32 {
    let cli = Cli::parse();
    convtune::db::on_lock_wait(|lock, pid| match pid {
        Some(pid) => eprintln!(
            "convtune: waiting for lock {} held by pid {pid}",
            lock.display()
        ),
        None => eprintln!("convtune: waiting for lock {}", lock.display()),
    });
    let result = match cli.command {
        Some(Command::Lower(a)) => lower::run(a),
        Some(Command::Space(a)) => space::run(a),
        Some(Command::Selfcheck(a)) => selfcheck::run(a),
        Some(Command::Replay(a)) => replay::run(a),
        Some(Command::Lookup(a)) => db::lookup(a),
        Some(Command::Retune(a)) => tune::retune(a),
        Some(Command::Compile(a)) => compile::run(a),
        Some(Command::Db(c)) => db::run(c),
        Some(Command::Worker { device, runtime }) => {
            return match runtime.as_str() {
                "hip" => convtune::runtime::hip_worker_main(device),
                _ => convtune::runtime::worker_main(device),
            }
        }
        None if cli.tune.wants_tuning() => tune::run(cli.tune),
        None => {
            errln!("convtune: nothing to do: give --problem or --problems (see --help)");
            return 2;
        }
    };
    match result {
        Ok(()) => 0,
        // The reader of stdout has what it wanted (`| head`): not an error, nothing to say.
        Err(e) if out::is_closed(&e) => 0,
        Err(e) => {
            errln!("convtune: error: {e:#}");
            if e.downcast_ref::<BadInput>().is_some() {
                2
            } else {
                1
            }
        }
    }
}
