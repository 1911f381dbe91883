//! Reading files the user points at, with limits: only regular files (a FIFO would block
//! forever, `/dev/zero` never ends), at most a given size, UTF-8 with the first bad byte located
//! by line, and a leading byte-order mark dropped. Every loader of user input (problem lists,
//! databases, search spaces) reads through [`read_text`], so none of them can hang or exhaust
//! memory on a wrong path.
//!
//! ```
//! use convtune::input::{read_text, ReadError};
//! let e = read_text(std::path::Path::new("/dev/zero"), 1 << 20, "examples").unwrap_err();
//! assert!(matches!(e, ReadError::NotAFile { .. }));
//! ```

use std::io::Read;
use std::path::{Path, PathBuf};

/// Why a user file could not be read as text.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// An operating-system error (absent, no permission, …).
    #[error("cannot read {path}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// A directory, FIFO, socket or device: reading it could block or never end.
    #[error("{path} is a {kind}, not a regular file")]
    NotAFile {
        /// The path.
        path: PathBuf,
        /// What it is instead.
        kind: &'static str,
    },
    /// Larger than the limit for this kind of file.
    #[error("{path} is larger than {limit} bytes, the limit for {what}")]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// The limit in bytes.
        limit: u64,
        /// What the file was read as.
        what: &'static str,
    },
    /// Not UTF-8 text.
    #[error("{path}:{line}:{column}: not UTF-8 text (byte 0x{byte:02x})")]
    NotUtf8 {
        /// The file.
        path: PathBuf,
        /// 1-based line of the first invalid byte.
        line: usize,
        /// 1-based column (in characters) of the first invalid byte.
        column: usize,
        /// The byte.
        byte: u8,
    },
}

/// Problem lists: a million lines of MIOpenDriver commands is about 200 MB; 64 MiB is far
/// beyond any real list and far below memory trouble. Config lists (`--try`) are read with
/// the same limit.
pub const PROBLEM_FILE_LIMIT: u64 = 64 << 20;
/// Database files: about 480 bytes per entry, so 256 MiB is over half a million entries.
pub const DB_FILE_LIMIT: u64 = 256 << 20;
/// Search-space files are a screenful of lists.
pub const SPACE_FILE_LIMIT: u64 = 1 << 20;

/// Recordings (every candidate of an exhaustive run, ~40 KB each today) and JSON reports.
pub const RECORDING_LIMIT: u64 = 64 << 20;

/// Tuning journals: one JSON line (about 200 bytes) per measured candidate, so 512 MiB is over
/// two million measurements.
pub const JOURNAL_LIMIT: u64 = 512 << 20;

/// The lines of a list file (problems, `--try` configs) that hold something, each with its
/// 1-based number: a leading byte-order mark dropped, `#` comments (whole-line or trailing)
/// cut off, blank lines skipped.
pub fn list_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.strip_prefix('\u{feff}')
        .unwrap_or(text)
        .lines()
        .enumerate()
        .map(|(i, raw)| (i + 1, raw.split('#').next().unwrap_or("").trim()))
        .filter(|(_, line)| !line.is_empty())
}

/// Reads `path` as UTF-8 text of at most `limit` bytes; `what` names the kind of file in the
/// size error. A leading byte-order mark is dropped (editors on Windows write one).
pub fn read_text(path: &Path, limit: u64, what: &'static str) -> Result<String, ReadError> {
    text_from_bytes(read_bytes(path, limit, what)?, path)
}

/// Reads `path` as bytes, with the checks of [`read_text`] but no encoding check (a journal's
/// last line may be cut mid-character by a killed writer).
pub fn read_bytes(path: &Path, limit: u64, what: &'static str) -> Result<Vec<u8>, ReadError> {
    let io = |source| ReadError::Io {
        path: path.to_path_buf(),
        source,
    };
    let refuse = |kind| ReadError::NotAFile {
        path: path.to_path_buf(),
        kind,
    };
    // Checked before opening (opening a FIFO blocks until a writer comes), and again on the
    // opened file, so a swap between the two cannot slip a device in.
    if let Some(kind) = not_regular(&std::fs::metadata(path).map_err(io)?) {
        return Err(refuse(kind));
    }
    let file = std::fs::File::open(path).map_err(io)?;
    let meta = file.metadata().map_err(io)?;
    if let Some(kind) = not_regular(&meta) {
        return Err(refuse(kind));
    }
    let too_large = || ReadError::TooLarge {
        path: path.to_path_buf(),
        limit,
        what,
    };
    if meta.len() > limit {
        return Err(too_large());
    }
    // The file may grow after the size check: read one byte past the limit to notice.
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(limit + 1).read_to_end(&mut bytes).map_err(io)?;
    if bytes.len() as u64 > limit {
        return Err(too_large());
    }
    Ok(bytes)
}

/// UTF-8 text from `bytes`, BOM dropped; the error locates the first invalid byte.
pub fn text_from_bytes(mut bytes: Vec<u8>, path: &Path) -> Result<String, ReadError> {
    if bytes.starts_with(b"\xEF\xBB\xBF") {
        bytes.drain(..3);
    }
    String::from_utf8(bytes).map_err(|e| {
        let bytes = e.as_bytes();
        let at = e.utf8_error().valid_up_to();
        // Everything before `at` is valid, so this slice is text.
        let before = std::str::from_utf8(&bytes[..at]).unwrap_or_default();
        let line = before.matches('\n').count() + 1;
        let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        ReadError::NotUtf8 {
            path: path.to_path_buf(),
            line,
            column,
            byte: bytes[at],
        }
    })
}

/// What a non-regular file is, for the error; `None` for a regular file.
fn not_regular(meta: &std::fs::Metadata) -> Option<&'static str> {
    let t = meta.file_type();
    if t.is_file() {
        return None;
    }
    if t.is_dir() {
        return Some("directory");
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return Some("FIFO");
        }
        if t.is_socket() {
            return Some("socket");
        }
        if t.is_char_device() || t.is_block_device() {
            return Some("device");
        }
    }
    Some("special file")
}

/// `s` cut to at most `max` characters for an error message, with how much was cut: a 1 MB
/// token echoed whole would bury the message.
pub fn excerpt(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        None => s.to_string(),
        Some((at, _)) => format!("{}… ({} bytes in all)", &s[..at], s.len()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_fifos_devices_and_directories() {
        // Issue 18 item 8: /dev/zero read ~4 GB, /dev/urandom grew past 2 GB, a FIFO blocked.
        for (p, kind) in [
            ("/dev/zero", "device"),
            ("/dev/urandom", "device"),
            ("/", "directory"),
        ] {
            match read_text(Path::new(p), 1 << 20, "test") {
                Err(ReadError::NotAFile { kind: k, .. }) => assert_eq!(k, kind, "{p}"),
                other => panic!("{p}: {other:?}"),
            }
        }
        #[cfg(unix)]
        {
            let dir = tempfile::tempdir().unwrap();
            let fifo = dir.path().join("fifo");
            let ok = std::process::Command::new("mkfifo").arg(&fifo).status();
            if ok.is_ok_and(|s| s.success()) {
                let e = read_text(&fifo, 1 << 20, "test").unwrap_err();
                assert!(matches!(e, ReadError::NotAFile { kind: "FIFO", .. }), "{e}");
            }
        }
    }

    #[test]
    fn limits_size_strips_bom_and_locates_bad_utf8() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.txt");
        std::fs::write(&p, b"\xEF\xBB\xBFab\ncd").unwrap();
        assert_eq!(read_text(&p, 100, "test").unwrap(), "ab\ncd");
        let e = read_text(&p, 4, "test lists").unwrap_err();
        assert!(e.to_string().contains("the limit for test lists"), "{e}");
        std::fs::write(&p, b"ok\nline two \xff here\n").unwrap();
        let e = read_text(&p, 100, "test").unwrap_err();
        assert!(
            e.to_string()
                .ends_with("t.txt:2:10: not UTF-8 text (byte 0xff)"),
            "{e}"
        );
    }

    #[test]
    fn excerpts_cut_long_tokens() {
        assert_eq!(excerpt("short", 10), "short");
        let long = "x".repeat(1 << 20);
        let e = excerpt(&long, 16);
        assert!(e.len() < 64 && e.contains("1048576 bytes"), "{e}");
        assert_eq!(excerpt("ééé", 2), "éé… (6 bytes in all)");
    }
}
