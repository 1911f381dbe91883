//! Argument parsing and dispatch; each subcommand lives in its own file.

use clap::{Parser, Subcommand};

/// Auto-tuner for implicit-GEMM convolution kernels.
#[derive(Parser)]
#[command(name = "convtune", version, about, args_conflicts_with_subcommands = true)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
}

/// Runs the CLI and returns the process exit code (2 for bad input or no usable GPU).
pub fn run() -> i32 {
    let cli = Cli::parse();
    match cli.command {
        None => 0,
    }
}
