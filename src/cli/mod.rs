//! Argument parsing and dispatch; each subcommand lives in its own file.

mod lower;

use clap::{Parser, Subcommand};
use convtune::problem::ConvProblem;

/// Auto-tuner for implicit-GEMM convolution kernels.
#[derive(Parser)]
#[command(name = "convtune", version, about, args_conflicts_with_subcommands = true)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Print the implicit GEMMs a problem lowers to.
    Lower(lower::LowerArgs),
    /// The GPU side of tuning, run as a child process by the tuner (fault isolation).
    #[command(hide = true)]
    Worker {
        /// Device ordinal.
        #[arg(long, default_value_t = 0)]
        device: usize,
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
        self.problem
            .parse()
            .map_err(|e| anyhow::anyhow!("problem '{}': {e}", self.problem))
    }
}

/// Marks an error as the user's input being wrong (exit code 2).
#[derive(Debug, thiserror::Error)]
#[error("{0:#}")]
pub struct BadInput(anyhow::Error);

/// Wraps an error as bad input.
pub fn bad_input(e: impl Into<anyhow::Error>) -> anyhow::Error {
    BadInput(e.into()).into()
}

/// Runs the CLI and returns the process exit code (2 for bad input or no usable GPU).
pub fn run() -> i32 {
    let cli = Cli::parse();
    let result = match cli.command {
        Some(Command::Lower(a)) => lower::run(a),
        Some(Command::Worker { device }) => return convtune::runtime::worker_main(device),
        None => {
            eprintln!("convtune: nothing to do (see --help)");
            return 2;
        }
    };
    match result {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("convtune: error: {e:#}");
            if e.downcast_ref::<BadInput>().is_some() {
                2
            } else {
                1
            }
        }
    }
}
