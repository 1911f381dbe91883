//! The one way the CLI writes: every command's stdout goes through [`outln!`] and [`json`],
//! every note to stderr through [`errln!`].
//!
//! `println!` panics when stdout cannot be written (exit 101 with a backtrace): `convtune space
//! --list | head -1` closes the pipe under it, `> /dev/full` fails the write. Here a failed write
//! is an error value, [`OutputError`], that ends the command like any other error: a closed
//! pipe (`EPIPE`) is the reader saying it has enough, so [`super::run`] exits 0 without a word;
//! any other write failure is reported and exits 1 (see the README's exit codes). Notes on
//! stderr are best-effort: there is nowhere left to report a failure to write them.

use serde::Serialize;
use std::fmt;
use std::io::{self, Write};
use std::path::Path;

/// Writing to stdout failed.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    /// The reader went away (`EPIPE`): not a failure of this program.
    #[error("stdout was closed")]
    Closed,
    /// Anything else (`ENOSPC` on /dev/full, a dead terminal…).
    #[error("writing to stdout: {0}")]
    Write(io::Error),
}

impl From<io::Error> for OutputError {
    fn from(e: io::Error) -> Self {
        if e.kind() == io::ErrorKind::BrokenPipe {
            OutputError::Closed
        } else {
            OutputError::Write(e)
        }
    }
}

/// Whether `e` is (or wraps) a closed stdout: the program then ends quietly.
pub fn is_closed(e: &anyhow::Error) -> bool {
    e.chain()
        .any(|c| matches!(c.downcast_ref(), Some(OutputError::Closed)))
}

/// Writes one line to stdout and flushes it, so a failure surfaces at the line that caused it.
pub fn line(args: fmt::Arguments<'_>) -> Result<(), OutputError> {
    let mut out = io::stdout().lock();
    out.write_fmt(args)?;
    out.write_all(b"\n")?;
    out.flush()?;
    Ok(())
}

/// Writes `value` as pretty JSON and a newline: the form of every `--json` output.
pub fn json<T: Serialize + ?Sized>(value: &T) -> anyhow::Result<()> {
    let text = serde_json::to_string_pretty(value)?;
    line(format_args!("{text}"))?;
    Ok(())
}

/// Writes a note to stderr, ignoring failure (see the module docs).
pub fn note(args: fmt::Arguments<'_>) {
    let _ = writeln!(io::stderr().lock(), "{args}");
}

/// `println!` that returns an [`OutputError`] from the enclosing function instead of panicking.
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::cli::out::line(format_args!($($arg)*))?
    };
}

/// `eprintln!` that never panics.
macro_rules! errln {
    ($($arg:tt)*) => {
        $crate::cli::out::note(format_args!($($arg)*))
    };
}

/// Writes `bytes` to the output file `path` through a temporary file in the same folder, so a
/// reader never sees half a file. A path that cannot be written (no such folder, no permission,
/// a folder in the way) is the user's to fix: bad input, exit 2. A write that fails on the way
/// (`ENOSPC`) is the machine's: exit 1.
pub fn write_file(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let context = || format!("writing {}", path.display());
    let classify = |e: io::Error| -> anyhow::Error {
        let users = matches!(
            e.kind(),
            io::ErrorKind::NotFound
                | io::ErrorKind::PermissionDenied
                | io::ErrorKind::IsADirectory
                | io::ErrorKind::NotADirectory
                | io::ErrorKind::ReadOnlyFilesystem
        );
        let e = anyhow::Error::new(e).context(context());
        if users {
            super::bad_input(e)
        } else {
            e
        }
    };
    // Through a symlink to the file it names; a device or FIFO (`/dev/full`, `/dev/stdout`) is
    // written in place, never replaced by a renamed regular file.
    let resolved;
    let path = match std::fs::metadata(path) {
        Ok(m) if m.is_dir() => return Err(classify(io::Error::from(io::ErrorKind::IsADirectory))),
        Ok(m) if !m.is_file() => {
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .open(path)
                .map_err(classify)?;
            return f
                .write_all(bytes)
                .and_then(|()| f.flush())
                .map_err(classify);
        }
        Ok(_) => {
            resolved = std::fs::canonicalize(path).map_err(classify)?;
            resolved.as_path()
        }
        Err(_) => path,
    };
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(classify)?;
    tmp.write_all(bytes).map_err(classify)?;
    tmp.persist(path).map_err(|e| classify(e.error))?;
    Ok(())
}

/// Creates the output folder `dir` (and its parents), with [`write_file`]'s exit codes.
pub fn create_dir(dir: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| {
        let users = matches!(
            e.kind(),
            io::ErrorKind::PermissionDenied
                | io::ErrorKind::NotADirectory
                | io::ErrorKind::AlreadyExists
        );
        let e = anyhow::Error::new(e).context(format!("creating {}", dir.display()));
        if users {
            super::bad_input(e)
        } else {
            e
        }
    })
}
