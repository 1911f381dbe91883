//! Why a campaign could not start or stopped, and which of those are the request's fault.

use super::report_file::ReportFileError;
use super::PlanError;
use crate::arch::UnknownArch;
use crate::db::DbError;
use crate::runtime::RuntimeError;
use crate::search;
use crate::space::SpaceError;
use std::path::PathBuf;

/// Why a campaign could not run, or stopped.
#[derive(Debug, thiserror::Error)]
pub enum CampaignError {
    /// The strategy name is not one of [`search::STRATEGIES`].
    #[error("unknown --strategy '{name}': known are {known}")]
    UnknownStrategy {
        /// The name given.
        name: String,
        /// The known names.
        known: String,
    },
    /// A dry run needs an arch, and there is no GPU to take it from.
    #[error("no --arch given and no GPU detected to default to")]
    NoArch,
    /// The arch is not in the table.
    #[error(transparent)]
    UnknownArch(#[from] UnknownArch),
    /// The search-space file cannot be used.
    #[error("search space {}: {source}", path.display())]
    Space {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        source: SpaceError,
    },
    /// No backend measures on this vendor's GPUs in this build.
    #[error("no usable GPU: this build cannot measure on {vendor} GPUs ({arch}); use --dry-run to compile for it")]
    NoBackend {
        /// The vendor asked for.
        vendor: &'static str,
        /// The arch asked for.
        arch: &'static str,
    },
    /// The backend found no driver (or it failed).
    #[error("no usable GPU: looked for {looked_for}: {cause}")]
    NoGpu {
        /// What discovery looked for.
        looked_for: &'static str,
        /// What it found.
        cause: RuntimeError,
    },
    /// A device ordinal beyond those present.
    #[error("--device {ordinal}: only {present} {backend} device(s) present")]
    NoSuchDevice {
        /// What was asked for.
        ordinal: usize,
        /// How many there are.
        present: usize,
        /// The backend's name.
        backend: &'static str,
    },
    /// `--arch` names another arch than the GPU's.
    #[error(
        "--arch {arch} does not match the GPU: device {ordinal} is {gpu} ({detected}); \
         use --dry-run to compile for another arch"
    )]
    ArchMismatch {
        /// The arch asked for.
        arch: &'static str,
        /// The device.
        ordinal: usize,
        /// Its name.
        gpu: String,
        /// Its arch.
        detected: String,
    },
    /// One of several devices is another arch.
    #[error("--devices: GPU {ordinal} is {found}, not {arch}")]
    MixedDevices {
        /// The device.
        ordinal: usize,
        /// Its arch.
        found: String,
        /// The campaign's arch.
        arch: &'static str,
    },
    /// A `--devices` ordinal beyond those present.
    #[error("--devices: '{ordinal}' is not a GPU (0..{present})")]
    BadDevice {
        /// The ordinal given.
        ordinal: usize,
        /// How many there are.
        present: usize,
    },
    /// A database entry that `retune` should tune names no problem.
    #[error("{}: entry '{problem}': {message}", path.display())]
    StaleEntry {
        /// The database.
        path: PathBuf,
        /// The entry's key.
        problem: String,
        /// The parser's complaint.
        message: String,
    },
    /// The database `retune` reads cannot be loaded.
    #[error(transparent)]
    StaleDb(DbError),
    /// Reading or writing the database or the journal failed.
    #[error(transparent)]
    Db(#[from] DbError),
    /// The journal's directory cannot be created.
    #[error("creating {}: {source}", path.display())]
    JournalDir {
        /// The directory.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// Appending to the journal failed: results would be lost, so the run stops.
    #[error("journal {}: {message}", path.display())]
    JournalWrite {
        /// The journal.
        path: PathBuf,
        /// The cause.
        message: String,
    },
    /// The reference kernel, which every candidate is checked against, does not compile.
    #[error("reference kernel: {0}")]
    Reference(PlanError),
    /// A device could not be opened, or failed outside a candidate.
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
    /// The device did not set up a problem.
    #[error("setting up {problem}: {source}")]
    SetProblem {
        /// The problem.
        problem: String,
        /// The cause.
        source: RuntimeError,
    },
    /// The device stopped answering in the middle of a problem.
    #[error("GPU {device} worker failed: {message}")]
    DeviceLost {
        /// The device.
        device: usize,
        /// The cause.
        message: String,
    },
    /// The report file could not be written.
    #[error(transparent)]
    Report(#[from] ReportFileError),
    /// A device thread panicked (a bug).
    #[error("a device thread panicked")]
    Panicked,
}

impl CampaignError {
    /// Whether the request itself is at fault (flags, files, or a machine without the GPU asked
    /// for) rather than something that broke during the run: the CLI exits 2 for these.
    pub fn is_input_error(&self) -> bool {
        use CampaignError::*;
        matches!(
            self,
            UnknownStrategy { .. }
                | NoArch
                | UnknownArch(_)
                | Space { .. }
                | NoBackend { .. }
                | NoGpu { .. }
                | NoSuchDevice { .. }
                | ArchMismatch { .. }
                | MixedDevices { .. }
                | BadDevice { .. }
                | StaleEntry { .. }
                | StaleDb(_)
        )
    }

    pub(super) fn unknown_strategy(name: &str) -> Self {
        CampaignError::UnknownStrategy {
            name: name.to_string(),
            known: search::STRATEGIES.join(", "),
        }
    }
}
