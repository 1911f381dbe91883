//! Writing database files safely: an exclusive lock around every read-modify-write so two tuners
//! on one host lose none of each other's entries, and atomic replacement (temporary file in the
//! same directory, then rename) so a crash never leaves half a file.

use super::error::DbError;
use super::file::TunedDb;
use fs2::FileExt;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Holds `<file>.lock` exclusively until dropped.
///
/// The lock is on a separate file because the database file itself is replaced by rename: a
/// lock on the old inode would not stop a second writer that opens the new one. The lock file is
/// never deleted (deleting it would let two processes lock two different inodes).
#[derive(Debug)]
pub struct DbLock {
    file: File,
    path: PathBuf,
}

impl DbLock {
    /// Blocks until this process holds the lock for database file `path`, creating the parent
    /// directory and the lock file when needed.
    pub fn acquire(path: &Path) -> Result<DbLock, DbError> {
        let lock_path = lock_path(path);
        if let Some(dir) = lock_path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| DbError::io("creating directory", dir, e))?;
        }
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&lock_path)
            .map_err(|e| DbError::io("opening lock file", &lock_path, e))?;
        FileExt::lock_exclusive(&file).map_err(|e| DbError::io("locking", &lock_path, e))?;
        Ok(DbLock {
            file,
            path: lock_path,
        })
    }

    /// The lock file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for DbLock {
    fn drop(&mut self) {
        // Closing the descriptor releases the lock too; unlocking first makes it immediate.
        let _ = FileExt::unlock(&self.file);
    }
}

/// `<file>.lock`, next to the database file.
pub fn lock_path(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(".lock");
    PathBuf::from(s)
}

/// Replaces `path` with `text` atomically: readers see the old file or the new one, never a mix.
/// Keeps the permissions of the file it replaces.
pub(crate) fn write_atomic(path: &Path, text: &str) -> Result<(), DbError> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&dir).map_err(|e| DbError::io("creating directory", &dir, e))?;
    let mut tmp = tempfile::Builder::new()
        .prefix(".convtune-db-")
        .suffix(".tmp")
        .tempfile_in(&dir)
        .map_err(|e| DbError::io("creating a temporary file in", &dir, e))?;
    tmp.write_all(text.as_bytes())
        .and_then(|()| tmp.as_file().sync_all())
        .map_err(|e| DbError::io("writing", tmp.path().to_path_buf(), e))?;
    let perms = match std::fs::metadata(path) {
        Ok(m) => Some(m.permissions()),
        Err(_) => default_permissions(),
    };
    if let Some(p) = perms {
        std::fs::set_permissions(tmp.path(), p)
            .map_err(|e| DbError::io("setting permissions of", tmp.path().to_path_buf(), e))?;
    }
    tmp.persist(path)
        .map_err(|e| DbError::io("renaming into", path, e.error))?;
    // Make the rename itself durable; some platforms cannot open a directory, which only costs
    // durability on power loss, not correctness.
    if let Ok(d) = File::open(&dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

#[cfg(unix)]
fn default_permissions() -> Option<std::fs::Permissions> {
    use std::os::unix::fs::PermissionsExt;
    // tempfile creates 0600; a database is meant to be shared like any other data file.
    Some(std::fs::Permissions::from_mode(0o644))
}

#[cfg(not(unix))]
fn default_permissions() -> Option<std::fs::Permissions> {
    None
}

/// Fails unless `path` is absent or holds a database for `arch`; under the lock, this is what
/// keeps a write from destroying a file that a person broke by hand.
fn check_replaceable(path: &Path, arch: &str) -> Result<(), DbError> {
    match TunedDb::load_or_new(path, arch) {
        Ok(_) => Ok(()),
        Err(e @ DbError::Io { .. }) => Err(e),
        Err(e @ DbError::ArchMismatch { .. }) => Err(e),
        Err(cause) => Err(DbError::RefuseOverwrite {
            path: path.to_path_buf(),
            cause: Box::new(cause),
        }),
    }
}

impl TunedDb {
    /// Writes the database to `path`, replacing what is there, under the file's lock. Refuses
    /// to replace a file that does not parse or belongs to another arch. To add entries to a
    /// file that others may be writing too, use [`TunedDb::update_file`] instead.
    pub fn save(&self, path: &Path) -> Result<(), DbError> {
        let _lock = DbLock::acquire(path)?;
        check_replaceable(path, self.arch())?;
        write_atomic(path, &self.to_toml_string())
    }

    /// Read-modify-write under the lock: re-reads `path` (an absent file is an empty database
    /// for `arch`), lets `f` change it, and writes it back atomically, so concurrent updaters
    /// on one host each see the others' entries. A file that does not parse is left untouched
    /// and reported as [`DbError::RefuseOverwrite`]; nothing is written when `f` changes
    /// nothing.
    pub fn update_file<R>(
        path: &Path,
        arch: &str,
        f: impl FnOnce(&mut TunedDb) -> R,
    ) -> Result<R, DbError> {
        let _lock = DbLock::acquire(path)?;
        let mut db = match TunedDb::load_or_new(path, arch) {
            Ok(db) => db,
            Err(e @ (DbError::Io { .. } | DbError::ArchMismatch { .. })) => return Err(e),
            Err(cause) => {
                return Err(DbError::RefuseOverwrite {
                    path: path.to_path_buf(),
                    cause: Box::new(cause),
                })
            }
        };
        let before = db.revision();
        let r = f(&mut db);
        if db.revision() != before {
            write_atomic(path, &db.to_toml_string())?;
        }
        Ok(r)
    }
}
